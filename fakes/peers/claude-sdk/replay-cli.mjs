#!/usr/bin/env node
// A Claude Code CLI that replays one run of conform's fake, recorded in the runtime ledger:
// it writes what the fake wrote and reads what the subject wrote, in the recorded order, so the
// real Claude Agent SDK (which spawns this as `pathToClaudeCodeExecutable`) meets exactly the
// fake's frames. Control request ids are mapped from the recording to the live SDK's. Every
// frame the SDK writes is appended to $REPLAY_OUT with the argv, for check.mjs to compare.
//   REPLAY_STEPS=<steps.json> REPLAY_OUT=<seen.jsonl> replay-cli.mjs <the SDK's CLI flags>
import fs from 'node:fs';
import net from 'node:net';
import readline from 'node:readline';

const steps = JSON.parse(fs.readFileSync(process.env.REPLAY_STEPS, 'utf8'));
const out = fs.openSync(process.env.REPLAY_OUT, 'a');
const note = (o) => fs.writeSync(out, JSON.stringify(o) + '\n');
note({ argv: process.argv.slice(2), env: {
  CLAUDE_CODE_ENTRYPOINT: process.env.CLAUDE_CODE_ENTRYPOINT ?? null,
  CLAUDE_AGENT_SDK_VERSION: process.env.CLAUDE_AGENT_SDK_VERSION ?? null,
} });

const lines = readline.createInterface({ input: process.stdin });
const queue = [];
let eof = false;
let wake = null;
lines.on('line', (l) => { if (l.trim()) { queue.push(l); wake?.(); } });
lines.on('close', () => { eof = true; wake?.(); });
const next = async () => {
  while (queue.length === 0 && !eof) await new Promise((r) => { wake = r; });
  wake = null;
  return queue.shift() ?? null;
};

const ids = new Map(); // recorded request id → the live SDK's
let resultWritten = false;
for (const step of steps) {
  if (step.read) {
    const line = await next();
    if (line === null) { note({ early_eof: step.read }); break; }
    const frame = JSON.parse(line);
    note({ read: frame, recorded: step.read });
    if (frame.type === 'control_request' && step.read.type === 'control_request') {
      ids.set(step.read.request_id, frame.request_id);
    }
  } else if (step.write) {
    const frame = structuredClone(step.write);
    if (frame?.type === 'control_response' && ids.has(frame.response?.request_id)) {
      frame.response.request_id = ids.get(frame.response.request_id);
    }
    // A raw line the fake wrote (not JSON) was recorded as a JSON string.
    process.stdout.write((typeof frame === 'string' ? frame : JSON.stringify(frame)) + '\n');
    if (frame?.type === 'result') resultWritten = true;
  } else if (step.eof) {
    // The subject ended its input with the turn still open (a local cancel, a failed start):
    // the driver aborts the real SDK's query there, as the host's cancel would.
    if (!resultWritten && process.env.REPLAY_SIGNAL) {
      const c = net.connect(process.env.REPLAY_SIGNAL);
      c.on('error', () => {});
      c.end('abort\n');
    }
    while ((await next()) !== null) { /* what the subject writes until EOF was recorded */ }
  } else if ('exit' in step) {
    process.exit(step.exit);
  } else if (step.signal) {
    process.kill(process.pid, step.signal);
  }
}
// As the real CLI: after the turn, serve until the SDK ends the input, then exit 0.
for (let l = await next(); l !== null; l = await next()) note({ read: JSON.parse(l), recorded: null });
process.exit(0);
