'use strict';
// A tiny ACP provider: one child runtime per run, spoken to over its stdio.
//
//   const provider = createAcpProvider({ runtime, config, log });
//   const run = await provider.start({ prompt, signal });  // rejects: the start failed
//   const result = await run.result;                        // never rejects
//   await run.dispose();                                    // rejects: the teardown failed
//
// start() reads the configuration, checks the workspace, spawns the runtime, runs the ACP
// handshake (initialize, session/new) and sends the task in session/prompt. It resolves only once
// the handshake completed (the run is *published*); a start that fails after the spawn is rolled
// back — the child's whole tree settled — before it rejects. `run.result` is the SubagentResult:
// `{ stopReason, output, diagnostic? }`. `run.dispose()` tells the runtime (session/cancel), closes
// its stdin and walks the teardown ladder.
//
// Every fact lives in one run's own object: nothing diagnostic is shared between runs.

const fs = require('node:fs');
const path = require('node:path');
const { JsonRpcConnection } = require('./json-rpc');
const { spawnRuntime } = require('./runtime-process');
const { failureLine, toolKind, withPermission, permissionLine, limitDiagnostic } = require('./diagnostic');

const PREFIX = 'subagent-acp: ';
const ABORTED_BEFORE_START = 'subagent request was aborted before the ACP child started';
/** How long what a dead child wrote gets to be read before its wire counts as lost (a helper
 * that inherited its stdout may keep the socket open long after the child is gone). */
const EXIT_DRAIN_MS = 250;
const MAX_TIMER_MS = 2147483647; // setTimeout's limit

/** A start or teardown failure; its message is model-visible, so it is only ever a safe line. */
class AcpRunFailure extends Error {
  constructor(line) {
    super(`${PREFIX}${line}`);
    this.name = 'AcpRunFailure';
  }
}

/** The rejection of a start cancelled before its child could be published (a plain Error). */
function abortedBeforeStart() {
  return new Error(ABORTED_BEFORE_START);
}

// ---------------------------------------------------------------------------------------------
// Configuration, with the host's own key names. Why a value is invalid goes to the host log only.

function durationMs(config, key, defaultMs) {
  const value = config[key];
  if (value === undefined || value === null) return defaultMs;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS) {
    throw new Error(`${key} must be a positive number of ms`);
  }
  return value;
}

/** The provider's own working directory over the parent's, if set: a non-blank string. */
function ownCwd(config) {
  const value = config.cwd;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value.trim() === '') throw new Error('cwd must be a non-empty path');
  return value;
}

function readConfig(config) {
  let permission = 'reject';
  if (config.permission !== undefined && config.permission !== null) {
    if (config.permission !== 'allow' && config.permission !== 'reject') {
      throw new Error('permission must be allow or reject');
    }
    permission = config.permission;
  }
  return {
    permission,
    cwd: ownCwd(config),
    disposeEofGraceMs: durationMs(config, 'disposeEofGraceMs', 6000),
    disposeGraceMs: durationMs(config, 'disposeGraceMs', 3000),
  };
}

// ---------------------------------------------------------------------------------------------
// The mapping of seed 000.

/** `session/prompt`'s stopReason → `[stopReason, diagnostic]`; `permission` is the latest fact. */
function mapStopReason(raw, permission) {
  const alone = permission ? permissionLine(permission) : undefined;
  switch (raw) {
    case 'end_turn':
      return ['completed', undefined];
    case 'max_tokens':
      return ['max-tokens', alone];
    case 'refusal':
      return ['refusal', alone];
    case 'cancelled':
      return ['aborted', alone];
    case 'max_turn_requests':
      return [
        'error',
        withPermission(failureLine('prompt', 'remote-limit', { stopReason: 'max_turn_requests' }), permission),
      ];
    default:
      // Unknown, missing or not a string: never copied.
      return ['error', withPermission(failureLine('prompt', 'unknown'), permission)];
  }
}

/** The unattended answer to session/request_permission: `{ answer, allowed }`. */
function answerPermission(policy, params) {
  if (policy === 'allow') {
    const options = Array.isArray(params.options) ? params.options : [];
    const option = options.find(
      (o) => o && (o.kind === 'allow_once' || o.kind === 'allow_always') && typeof o.optionId === 'string',
    );
    if (option) return { answer: { outcome: { outcome: 'selected', optionId: option.optionId } }, allowed: true };
  }
  return { answer: { outcome: { outcome: 'cancelled' } }, allowed: false };
}

/** The result's output: one text block, or none at all for no text (never an empty block). */
function textOutput(text) {
  return text === '' ? [] : [{ type: 'text', text }];
}

/** Settles to `{ cancelled: true }`, `{ value }` or `{ error }`, whichever comes first. */
function raceAbort(promise, signal) {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve({ cancelled: true });
      return;
    }
    const onAbort = () => resolve({ cancelled: true });
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => resolve({ value }),
      (error) => resolve({ error }),
    ).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

// ---------------------------------------------------------------------------------------------

/** One live ACP child and its facts. */
class AcpRun {
  constructor(child, settings, log) {
    this.child = child;
    this.settings = settings;
    this.log = log;
    this.sessionId = null;
    this.prompting = false;
    this.decided = false; // the result is decided: later chunks and permissions no longer count
    this.output = '';
    this.permission = null; // the latest permission fact of the prompt
    this.cancelSent = false;
    this.disposing = new AbortController(); // dispose() cancels the prompt in flight
    this.disposal = null; // dispose() runs once: later calls get the same promise
    this.rpc = new JsonRpcConnection({
      input: child.stdout,
      output: child.stdin,
      onRequest: (method, params) => this.onRequest(method, params),
      onNotification: (method, params) => this.onNotification(method, params),
      onGarbage: (line) => log(`ACP child wrote a non-JSON-RPC line: ${line}`),
    });
    // The child exited: what it wrote before gets EXIT_DRAIN_MS, then its wire is lost even if a
    // helper still holds the stdout socket open (no EOF would ever come).
    child.onExit(() => {
      setTimeout(() => this.rpc.loseWire('the child exited'), EXIT_DRAIN_MS).unref();
    });
  }

  onRequest(method, params) {
    if (method !== 'session/request_permission') {
      this.log(`ACP child sent unsupported request ${method}`);
      // As the ACP SDK answers a method it has no handler for.
      return { error: { code: -32601, message: `"Method not found": ${method}`, data: { method } } };
    }
    if (this.decided) return { result: { outcome: { outcome: 'cancelled' } } };
    const { answer, allowed } = answerPermission(this.settings.permission, params);
    if (this.prompting) {
      const call = params.toolCall && typeof params.toolCall === 'object' ? params.toolCall : {};
      this.permission = { policy: this.settings.permission, request: toolKind(call.kind), allowed };
    }
    return { result: answer };
  }

  onNotification(method, params) {
    if (method !== 'session/update' || this.decided) return;
    // Only our own session's updates (an update naming no session is taken as ours).
    if (this.sessionId !== null && typeof params.sessionId === 'string' && params.sessionId !== this.sessionId) {
      return;
    }
    const update = params.update || {};
    // Only the assistant's message is output; thoughts, tool calls, plans are never shown.
    if (
      update.sessionUpdate === 'agent_message_chunk' &&
      update.content &&
      update.content.type === 'text' &&
      typeof update.content.text === 'string'
    ) {
      this.output += update.content.text;
    }
  }

  /** A lost wire is the child's exit if it exits within disposeGraceMs, else a transport failure. */
  async wireLost(exitStage, transportStage) {
    const exit = await this.child.waitExit(this.settings.disposeGraceMs);
    return exit ? failureLine(exitStage, 'process-exit', { exit }) : failureLine(transportStage, 'transport');
  }

  /**
   * initialize, then session/new. Returns `{ sessionId }`, `{ cancelled: true }` when the signal
   * won, or `{ line }`: the failure line of the stage that failed.
   */
  async openSession(cwd, signal) {
    const init = await raceAbort(this.rpc.request('initialize', { protocolVersion: 1, clientCapabilities: {} }), signal);
    if (init.cancelled) return { cancelled: true };
    if (init.error) {
      this.log(`initialize failed: ${init.error.message}`);
      if (init.error.kind === 'remote') return { line: failureLine('initialize', 'transport') };
      return { line: await this.wireLost('initialize', 'initialize') };
    }

    const created = await raceAbort(this.rpc.request('session/new', { cwd, mcpServers: [] }), signal);
    if (created.cancelled) return { cancelled: true };
    if (created.error) {
      this.log(`session/new failed: ${created.error.message}`);
      if (created.error.kind === 'remote') return { line: failureLine('new-session', 'protocol') };
      return { line: await this.wireLost('new-session', 'new-session') };
    }
    // Any string is a session id, the empty one included: only the type is checked.
    const sessionId = created.value && created.value.sessionId;
    if (typeof sessionId !== 'string') {
      this.log('session/new answered without a string session id');
      return { line: failureLine('new-session', 'protocol') };
    }
    return { sessionId };
  }

  /** Sends the task; the run's one result. */
  async prompt(task, signal) {
    this.prompting = true;
    // A cancel that landed before the task was sent: the task is never sent.
    const answered = signal.aborted
      ? { cancelled: true }
      : await raceAbort(
          this.rpc.request('session/prompt', { sessionId: this.sessionId, prompt: [{ type: 'text', text: task }] }),
          AbortSignal.any([signal, this.disposing.signal]),
        );
    // The facts are decided here: later chunks and permission requests do not count.
    this.decided = true;
    const output = textOutput(this.output);
    const permission = this.permission;

    if (answered.cancelled) {
      // Local cancel: aborted at once, no diagnostic; then tell the child.
      this.sendCancel();
      return { stopReason: 'aborted', output };
    }
    let stopReason;
    let diagnostic;
    if (!answered.error) {
      const raw = answered.value ? answered.value.stopReason : undefined;
      [stopReason, diagnostic] = mapStopReason(raw, permission);
    } else if (answered.error.kind === 'remote') {
      this.log(`session/prompt error response ${answered.error.code}: ${answered.error.message}`);
      stopReason = 'error';
      diagnostic = withPermission(failureLine('prompt', 'unknown'), permission);
    } else {
      this.log(`session/prompt failed: ${answered.error.message}`);
      stopReason = 'error';
      diagnostic = withPermission(await this.wireLost('process', 'prompt'), permission);
    }
    const result = { stopReason, output };
    if (diagnostic !== undefined) result.diagnostic = limitDiagnostic(diagnostic);
    return result;
  }

  /** session/cancel, once per run, only while the session is known and the wire is open. */
  sendCancel() {
    if (this.cancelSent || this.sessionId === null || !this.rpc.isOpen()) return;
    this.cancelSent = true;
    this.rpc.notify('session/cancel', { sessionId: this.sessionId });
  }

  /** Closes stdin and walks the ladder; true when the whole tree settled. Raw facts: host log only. */
  async teardown() {
    this.rpc.closeStdin();
    const settled = await this.child.settle({
      eofGraceMs: this.settings.disposeEofGraceMs,
      graceMs: this.settings.disposeGraceMs,
    });
    const exit = this.child.exit || {};
    this.log(
      settled
        ? `ACP child settled (exit code ${exit.code}, signal ${exit.signal})`
        : `ACP child teardown failed: process group ${this.child.pgid} not gone after SIGKILL and ${this.settings.disposeGraceMs} ms`,
    );
    return settled;
  }

  /**
   * dispose(): settle a prompt in flight as aborted, tell the runtime, then end its tree;
   * rejects when the tree did not settle. Idempotent: the host may dispose a run itself while
   * the tool call still awaits it, and the tool disposes it again once its result is in.
   */
  dispose() {
    if (this.disposal === null) {
      this.disposing.abort();
      this.sendCancel();
      this.disposal = this.teardown().then((settled) => {
        if (!settled) throw new AcpRunFailure(failureLine('teardown', 'unknown'));
      });
    }
    return this.disposal;
  }
}

// ---------------------------------------------------------------------------------------------

/**
 * One provider instance per run: `runtime` is the child command (`{ command, args, env, cwd }`),
 * `config` the provider configuration, `log` the host log (never model-visible).
 */
function createAcpProvider({ runtime, config, log }) {
  return {
    async start({ prompt, signal }) {
      let settings;
      try {
        settings = readConfig(config || {});
      } catch (e) {
        log(`invalid ACP provider configuration: ${e.message}`);
        throw new AcpRunFailure(failureLine('initialize', 'configuration'));
      }
      if (signal.aborted) throw abortedBeforeStart();

      // The provider's own `cwd` over the parent's; a relative one is taken from the parent's.
      const cwd = settings.cwd === undefined ? runtime.cwd : path.resolve(runtime.cwd, settings.cwd);
      if (typeof cwd !== 'string' || !path.isAbsolute(cwd) || !isDirectory(cwd)) {
        log(`ACP child cwd is not an absolute existing directory: ${JSON.stringify(cwd)}`);
        throw new AcpRunFailure(failureLine('initialize', 'configuration'));
      }

      let child;
      try {
        child = await spawnRuntime({ command: runtime.command, args: runtime.args || [], cwd, env: runtime.env }, log);
      } catch (e) {
        log(`ACP child spawn failed: ${e.message}`);
        throw new AcpRunFailure(failureLine('process', 'process-start'));
      }
      log(`ACP child spawned, process group ${child.pgid}`);

      const run = new AcpRun(child, settings, log);
      const opened = await run.openSession(cwd, signal);
      if (opened.sessionId === undefined) {
        // Roll the child back to a settled tree before rejecting.
        const rolledBack = await run.teardown();
        const cleanup = new AcpRunFailure(failureLine('teardown', 'unknown'));
        if (opened.cancelled) {
          // After a cancel only the cleanup fact is kept, if there is one.
          throw rolledBack ? abortedBeforeStart() : cleanup;
        }
        const startError = new AcpRunFailure(opened.line);
        if (rolledBack) throw startError;
        throw new AggregateError([startError, cleanup], `${startError.message}; ${cleanup.message}`);
      }
      run.sessionId = opened.sessionId;

      // Published: the task is sent now; the host sends its dispatch receipt.
      return {
        result: run.prompt(prompt, signal),
        dispose: () => run.dispose(),
      };
    },
  };
}

function isDirectory(p) {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

module.exports = { createAcpProvider, AcpRunFailure };
