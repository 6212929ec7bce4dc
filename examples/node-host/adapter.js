#!/usr/bin/env node
'use strict';
// The subject adapter: speaks conform's `conform-subject/1` on stdin/stdout (one JSON object per
// line) and plays the host — the parent agent's subagent tool — around one provider run per
// `start`. See conform's docs/subject-protocol.md.
//
// For each run it does what a host's subagent tool does:
//   foreground: start() → (dispatch receipt) → await result → dispose() → the tool result;
//   background: the tool returns `started background subagent job subagent-N` at once, the run
//               goes on as a one-shot job, and its end is delivered as a completion notice (or as
//               the answer to a `job_output` call that was already waiting for it).
// and reports each step to the harness as it happens. stderr is free-form logging.
//
// Several runs are in flight at once in one process: everything about a run lives in its own
// HostedRun; the only state shared between runs is the job counter.

const readline = require('node:readline');
const { randomUUID } = require('node:crypto');
const { createAcpProvider } = require('./acp-provider');
const text = require('./presentation');

const PROTOCOL = 'conform-subject/1';
const SUBJECT = { name: 'node-host-example', version: '0.1.0' };

/**
 * The providers this host runs, by the name `start.provider` uses. Each entry builds one provider
 * instance for one run from `{ runtime, config, log }`. This is where a host plugs in its own.
 */
const PROVIDERS = {
  acp: createAcpProvider,
};

/** The harness keeps 2000 bytes of each host_log line, and no line may pass 1 MiB: clip raw text. */
const LOG_BYTES = 2000;

let stdoutBroken = false;

/** One message to the harness: one line of JSON. (Writes to a pipe are synchronous on Linux.) */
function send(message) {
  if (!stdoutBroken) process.stdout.write(`${JSON.stringify(message)}\n`);
}

/** One run: the tool call, its provider run, and — in background — its job. */
class HostedRun {
  constructor(start, job) {
    this.start = start;
    this.id = start.run;
    this.job = job; // `subagent-N` in background, null in foreground
    this.controller = new AbortController(); // the tool call's signal
    // A cancel that came before the start (`aborted: true`): the signal is already aborted when
    // the provider's start() is called, which checks it before it spawns anything.
    if (start.aborted === true) this.controller.abort();
    this.cancelRequested = false; // a local cancel (foreground abort, background job_kill)
    this.shuttingDown = false;
    this.handle = null; // the provider's run handle, once published
    this.waiters = 0; // `job_output wait:true` calls waiting for the job to end
    this.outcome = null; // background: the job's terminal outcome, once it has one
    this.over = false; // the tool result (foreground) or the job's delivery (background) is done
    this.done = this.run().catch((e) => {
      console.error(`node-host: run ${this.id} failed inside the host: ${e && e.stack}`);
      this.log(`host error: ${e && e.message}`);
    });
  }

  /** Host-only text (raw errors, the provider's log): never shown to the model. */
  log(line) {
    const bytes = Buffer.from(line, 'utf8');
    const clipped = bytes.length <= LOG_BYTES ? line : `${bytes.subarray(0, LOG_BYTES).toString('utf8')}… (${bytes.length} bytes)`;
    send({ type: 'host_log', run: this.id, text: clipped });
  }

  async run() {
    const s = this.start;
    if (this.job !== null) {
      send({ type: 'tool_result', run: this.id, isError: false, text: text.backgroundStarted(this.job) });
    }

    const createProvider = PROVIDERS[s.provider];
    let run;
    try {
      if (!createProvider) throw new Error(`no provider named ${s.provider} in this host`);
      const provider = createProvider({ runtime: s.runtime, config: s.config || {}, log: (l) => this.log(l) });
      run = await provider.start({ prompt: s.task, signal: this.controller.signal });
    } catch (error) {
      this.startRejected(error);
      return;
    }
    this.handle = run;

    // Published: the dispatch receipt. The key is ours for the child, never its own session id.
    send({
      type: 'dispatched',
      run: this.id,
      childSessionKey: randomUUID(),
      dispatchAt: new Date().toISOString(),
      expectedBy: s.expectedBy,
    });

    const result = await run.result; // never rejects
    const reported = { type: 'result', run: this.id, stopReason: result.stopReason, output: result.output };
    if (result.diagnostic !== undefined) reported.diagnostic = result.diagnostic;
    send(reported);

    // The result is shown only once the child is disposed.
    let disposeError = null;
    try {
      await run.dispose();
      send({ type: 'settled', run: this.id });
    } catch (error) {
      // The tree is not released: no `settled` claim.
      disposeError = error;
      this.log(`dispose rejected: ${error.name}: ${error.message}`);
    }

    if (this.job === null) {
      const { isError, text: shown } = text.foregroundText(result, disposeError);
      this.over = true;
      send({ type: 'tool_result', run: this.id, isError, text: shown });
    } else {
      const outcome = text.jobOutcome(result);
      this.deliver(disposeError ? text.withDisposeFailure(outcome, disposeError) : outcome);
    }
  }

  startRejected(error) {
    const rejected = { name: error.name || 'Error', message: String(error.message) };
    send({ type: 'start_rejected', run: this.id, error: rejected });
    if (this.job === null) {
      const { isError, text: shown } = text.foregroundStartRejected(rejected);
      this.over = true;
      send({ type: 'tool_result', run: this.id, isError, text: shown });
    } else {
      // A start the host itself aborted (job_kill) is a killed job.
      this.deliver(text.jobOutcomeStartRejected(rejected, this.controller.signal.aborted));
    }
  }

  /**
   * The job is terminal. A `job_output` already waiting for it is its delivery; otherwise the
   * completion notice — except after job_kill (the parent knows) or at shutdown.
   */
  deliver(outcome) {
    this.outcome = outcome;
    this.over = true;
    const waited = this.waiters > 0;
    for (let i = 0; i < this.waiters; i++) this.answerJobOutput();
    this.waiters = 0;
    if (!waited && !this.cancelRequested && !this.shuttingDown) {
      send({ type: 'notice', run: this.id, job: this.job, text: text.noticeText(this.job, this.start.label, outcome) });
    }
  }

  answerJobOutput() {
    send({ type: 'job_output', run: this.id, text: text.jobOutputText(this.outcome) });
  }

  /** `cancel`: the foreground tool call's abort, or `job_kill` in background. */
  cancel() {
    // job_kill on a job that already finished changes nothing.
    if (this.over) return;
    this.cancelRequested = true;
    this.controller.abort();
  }

  /**
   * `dispose`: the host disposes the run handle itself, as its own teardown does — not the tool
   * call's signal. The result settles as the provider makes it; the job is not killed by the
   * parent, so its completion is still delivered.
   */
  dispose() {
    if (this.handle === null) {
      this.log('dispose before the run was published: no handle yet');
      return;
    }
    // A rejection is the run's own dispose's to report, when the tool disposes it again.
    this.handle.dispose().catch(() => {});
  }

  /** `job_output`: answered at once, or — with `wait` — once the job is terminal. */
  jobOutput(wait) {
    if (this.job === null) {
      this.log('job_output for a foreground run: no job');
    } else if (this.over) {
      this.answerJobOutput();
    } else if (wait) {
      this.waiters += 1;
    } else {
      this.answerJobOutput(); // `[status: running]`
    }
  }

  /** Subject shutdown: abort the run, let it dispose; resolves when it is done. */
  shutdown() {
    this.shuttingDown = true;
    this.controller.abort();
    return this.done;
  }
}

// ---------------------------------------------------------------------------------------------
// The subject: one message from the harness at a time.

const runs = new Map();
let nextJob = 1;
let shuttingDown = false;

function onMessage(msg) {
  switch (msg.type) {
    case 'hello':
      if (msg.protocol !== PROTOCOL) console.error(`node-host: harness speaks ${msg.protocol}, we speak ${PROTOCOL}`);
      send({
        type: 'hello',
        protocol: PROTOCOL,
        subject: SUBJECT,
        providers: Object.keys(PROVIDERS),
        modes: ['foreground', 'background'],
        controls: ['dispose'],
      });
      return;
    case 'start': {
      if (runs.has(msg.run)) {
        send({ type: 'start_rejected', run: msg.run, error: { name: 'SubjectError', message: 'run id already in use' } });
        return;
      }
      const job = msg.mode === 'background' ? `subagent-${nextJob++}` : null;
      runs.set(msg.run, new HostedRun(msg, job));
      return;
    }
    case 'cancel':
    case 'dispose':
    case 'job_output': {
      const run = runs.get(msg.run);
      if (!run) send({ type: 'host_log', run: msg.run, text: `no run with this id (${msg.type} ignored)` });
      else if (msg.type === 'cancel') run.cancel();
      else if (msg.type === 'dispose') run.dispose();
      else run.jobOutput(msg.wait === true);
      return;
    }
    case 'shutdown':
      shutdown();
      return;
    default:
      console.error(`node-host: ignoring a message of type ${msg.type}`);
  }
}

/** `shutdown` or stdin EOF: dispose everything still running, wait for it, exit 0. */
async function shutdown() {
  if (shuttingDown) return;
  shuttingDown = true;
  await Promise.all([...runs.values()].map((run) => run.shutdown()));
  process.stdout.write('', () => process.exit(0));
}

process.stdout.on('error', (e) => {
  // The harness went away: nobody reads us any more, but the runtimes must still be ended.
  console.error(`node-host: stdout failed (${e.code}); shutting down`);
  stdoutBroken = true;
  shutdown();
});

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
lines.on('line', (line) => {
  if (line.trim() === '') return;
  let msg;
  try {
    msg = JSON.parse(line);
  } catch (e) {
    console.error(`node-host: ignoring a malformed line (${e.message}): ${line}`);
    return;
  }
  onMessage(msg);
});
lines.on('close', shutdown);
