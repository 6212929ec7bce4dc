'use strict';
// Newline-delimited JSON-RPC 2.0 over a child's stdin/stdout: what an ACP client needs, no more.
//
// Inbound frames are handled in wire order, one line at a time: a notification that precedes a
// response is always handled before the response's promise settles. Requests the child sends us
// are answered synchronously, so an answer is always written before anything the host does next
// (a session/cancel, closing stdin).

const readline = require('node:readline');

/** Why a request got no result: the peer answered an error, or the wire was lost. */
class RpcError extends Error {
  constructor(kind, message, { code, data } = {}) {
    super(message);
    this.name = 'RpcError';
    this.kind = kind; // 'remote' | 'wire-lost'
    this.code = code;
    this.data = data;
  }
}

class JsonRpcConnection {
  /**
   * @param {object} o
   * @param {import('node:stream').Readable} o.input   the child's stdout
   * @param {import('node:stream').Writable} o.output  the child's stdin
   * @param {(method: string, params: any) => ({result: any} | {error: {code, message, data?}})} o.onRequest
   * @param {(method: string, params: any) => void} o.onNotification
   * @param {(line: string) => void} o.onGarbage  a line that is not a JSON-RPC message (host log)
   */
  constructor({ input, output, onRequest, onNotification, onGarbage }) {
    this.output = output;
    this.onRequest = onRequest;
    this.onNotification = onNotification;
    this.onGarbage = onGarbage;
    this.nextId = 0; // ids 0, 1, 2, … as the ACP SDK numbers them
    this.pending = new Map(); // JSON text of the id → { resolve, reject }
    this.lost = null; // why the wire is lost, once it is
    this.inputEnded = false;
    this.stdinClosed = false;

    const lines = readline.createInterface({ input, crlfDelay: Infinity });
    lines.on('line', (line) => this.dispatch(line));
    lines.on('close', () => this.loseWire('stdout reached EOF'));
    input.on('error', (e) => this.loseWire(`stdout read failed: ${e.message}`));
    // Writing to a child that is gone fails asynchronously (EPIPE): that loses the wire too.
    output.on('error', (e) => this.loseWire(`write failed: ${e.message}`));
  }

  /** Both directions still usable. */
  isOpen() {
    return this.lost === null && !this.stdinClosed;
  }

  request(method, params) {
    if (!this.isOpen()) {
      return Promise.reject(new RpcError('wire-lost', this.lost || 'stdin closed'));
    }
    const id = this.nextId++;
    const answer = new Promise((resolve, reject) => {
      this.pending.set(JSON.stringify(id), { resolve, reject });
    });
    this.write({ jsonrpc: '2.0', id, method, params });
    return answer;
  }

  /** A notification; false when the wire is no longer usable. */
  notify(method, params) {
    if (!this.isOpen()) return false;
    this.write({ jsonrpc: '2.0', method, params });
    return true;
  }

  /** Closes the child's stdin: the EOF that asks it to exit. Idempotent. */
  closeStdin() {
    if (this.stdinClosed) return;
    this.stdinClosed = true;
    this.output.end();
  }

  /** Fails every pending request: stdout reached EOF, a write failed, or the child is gone. */
  loseWire(reason) {
    if (this.lost !== null) return;
    this.lost = reason;
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const { reject } of pending) reject(new RpcError('wire-lost', reason));
  }

  write(frame) {
    this.output.write(`${JSON.stringify(frame)}\n`);
  }

  dispatch(line) {
    if (line.trim() === '') return;
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.onGarbage(line);
      return;
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg)) {
      this.onGarbage(line);
      return;
    }
    const method = typeof msg.method === 'string' ? msg.method : null;
    const hasId = msg.id !== undefined && msg.id !== null;
    const params = msg.params !== null && typeof msg.params === 'object' ? msg.params : {};

    if (method !== null && hasId) {
      const reply = this.onRequest(method, params);
      // An answer to a child that is already gone is dropped; the run sees the loss elsewhere.
      if (!this.stdinClosed) this.write({ jsonrpc: '2.0', id: msg.id, ...reply });
    } else if (method !== null) {
      this.onNotification(method, params);
    } else if (hasId && this.pending.has(JSON.stringify(msg.id))) {
      const { resolve, reject } = this.pending.get(JSON.stringify(msg.id));
      this.pending.delete(JSON.stringify(msg.id));
      if (msg.error !== undefined) {
        const e = msg.error || {};
        reject(
          new RpcError('remote', typeof e.message === 'string' ? e.message : 'JSON-RPC error', {
            code: e.code,
            data: e.data,
          }),
        );
      } else {
        resolve(msg.result === undefined ? null : msg.result);
      }
    } else {
      this.onGarbage(line);
    }
  }
}

module.exports = { JsonRpcConnection, RpcError };
