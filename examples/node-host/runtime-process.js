'use strict';
// The child runtime as a process: its environment, the spawn, its exit, and the teardown ladder
// that ends its whole tree (stdin EOF → wait → SIGTERM → wait → SIGKILL → wait).
//
// Spawned as Node hosts spawn: `stdio: ['pipe', 'pipe', 'inherit']` (libuv makes the two pipes
// socketpairs; the runtime's stderr is the host's own stderr) and `detached: true`, so the runtime
// leads a process group of its own that the host can signal as one: `process.kill(-pgid, sig)`.

const { spawn } = require('node:child_process');
const { ProcessTree } = require('./process-tree');

/** How often the ladder looks whether the tree is gone (Node has no pidfd to wait on). */
const POLL_MS = 20;

/** The variable that marks every process of one run (see process-tree.js). */
const RUN_MARKER = 'NODE_HOST_SUBAGENT_RUN';
let nextMarker = 1;

/** Credential-shaped and `DSH_*` names are never inherited by a child. */
function isScrubbed(name) {
  const upper = name.toUpperCase();
  return ['KEY', 'PASSWORD', 'SECRET', 'TOKEN'].some((w) => upper.includes(w)) || upper.startsWith('DSH_');
}

/**
 * The child's environment: the host's minus scrubbed names, then the run's own `env` on top (a
 * string sets a name — also a scrubbed one, that is an explicit opt-in; `null` unsets it, also an
 * inherited one). Returns `{ env, ignored }`: names whose value was neither, left out.
 */
function childEnv(parentEnv, overrides) {
  const env = {};
  for (const [name, value] of Object.entries(parentEnv)) {
    if (!isScrubbed(name)) env[name] = value;
  }
  const ignored = [];
  for (const [name, value] of Object.entries(overrides || {})) {
    if (typeof value === 'string') env[name] = value;
    else if (value === null) delete env[name];
    else ignored.push(name);
  }
  return { env, ignored };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

class RuntimeProcess {
  constructor(child, marker) {
    this.child = child;
    this.stdin = child.stdin;
    this.stdout = child.stdout;
    this.pid = child.pid;
    this.pgid = child.pid; // detached: the runtime leads its own group
    this.exit = null; // { code, signal } once it exited (and Node reaped it)
    this.stdoutClosed = false;
    this.exitWaiters = [];
    this.tree = new ProcessTree({ pid: child.pid, marker });
    child.on('exit', (code, signal) => {
      this.exit = { code, signal };
      for (const wake of this.exitWaiters.splice(0)) wake();
    });
    child.stdout.once('close', () => {
      this.stdoutClosed = true;
    });
  }

  /** Calls `callback` once the runtime has exited. */
  onExit(callback) {
    if (this.exit !== null) callback();
    else this.exitWaiters.push(callback);
  }

  /** The exit facts, waiting up to `ms` for the exit; null if it still runs then. */
  async waitExit(ms) {
    if (this.exit === null) {
      await new Promise((resolve) => {
        // setImmediate: an exit that arrived while the timer was late is read first.
        const timer = setTimeout(() => setImmediate(resolve), ms);
        this.exitWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.exit;
  }

  /** The whole tree is gone: the runtime exited, its stdout closed, its group and helpers are gone. */
  treeGone() {
    if (this.exit === null || !this.stdoutClosed || this.tree.groupAlive()) return false;
    if (this.tree.alive().length > 0) return false;
    // Everything we knew of is gone: look once more for what we did not know yet.
    this.tree.scan();
    return this.tree.alive().length === 0;
  }

  /**
   * A timer that fires late (a loaded machine) runs before the I/O that arrived meanwhile: the
   * child's exit and its stdout's close would be read only after the deadline was judged. A
   * setImmediate callback runs after that I/O poll, so the last look sees what already happened.
   */
  async treeGoneOnceIoIsRead() {
    await new Promise((resolve) => setImmediate(resolve));
    return this.treeGone();
  }

  async waitTreeGone(ms) {
    const deadline = Date.now() + ms;
    for (;;) {
      if (this.treeGone()) return true;
      const left = deadline - Date.now();
      if (left <= 0) return this.treeGoneOnceIoIsRead();
      await sleep(Math.min(POLL_MS, left));
    }
  }

  /**
   * The teardown ladder. The caller has closed stdin (the EOF that asks the runtime to exit).
   * True once the whole tree is gone; false when even SIGKILL's grace did not end it (something
   * outside our reach holds its stdout, or a process survives SIGKILL).
   */
  async settle({ eofGraceMs, graceMs }) {
    // Look at the tree while the runtime surely lives: a helper known only by descent is found now.
    this.tree.scan();
    if (await this.waitTreeGone(eofGraceMs)) return true;
    this.tree.signal('SIGTERM');
    if (await this.waitTreeGone(graceMs)) return true;
    this.tree.signal('SIGKILL');
    return this.waitTreeGone(graceMs);
  }
}

/**
 * Spawns the runtime in `cwd` with the scrubbed environment plus `runtime.env` and the run's
 * marker. Resolves once it runs; rejects with the spawn error (ENOENT, EACCES, …).
 */
async function spawnRuntime({ command, args, cwd, env: overrides }, log) {
  const { env, ignored } = childEnv(process.env, overrides);
  if (ignored.length > 0) log(`ignored non-string runtime env entries: ${ignored.join(', ')}`);
  const marker = `${process.pid}-${nextMarker++}`;
  env[RUN_MARKER] = marker;

  const child = spawn(command, args, {
    cwd,
    env,
    stdio: ['pipe', 'pipe', 'inherit'],
    detached: true,
  });
  // A failed spawn is reported asynchronously, as 'error' instead of 'spawn'.
  await new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  child.removeAllListeners('error');
  child.on('error', (e) => log(`runtime process error: ${e.message}`));
  return new RuntimeProcess(child, `${RUN_MARKER}=${marker}`);
}

module.exports = { spawnRuntime, childEnv };
