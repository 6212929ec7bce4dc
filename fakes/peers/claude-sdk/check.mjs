#!/usr/bin/env node
// Does the real Claude Agent SDK accept every frame conform's fake Claude Code CLI sends — and
// does the real SDK write what conform's reference provider wrote? For each foreground
// claude-code case of a `conform run --json … --verbose` report, the fake's recorded wire is
// replayed (replay-cli.mjs) to the real SDK's `query()`, configured as the host configures it
// (deepseek-harness subagent-claude-code: the permission mode the fake's `system/init` names,
// persistSession false, AskUserQuestion disallowed, a denying canUseTool unless bypassing, MCP
// elicitations declined, dialogs cancelled). Judged per case:
//   accepted  every message the fake sent (system, assistant, stream_event, result, …) came out
//             of the SDK's iterator, unchanged and in order;
//   same      every frame the real SDK wrote equals the reference's (control request ids and
//             what only a live SDK can know aside), and so do the CLI flags and variables.
// Exit 1 when a case fails either; the table names what differs.
//   node check.mjs <report.json> <sdk.mjs> <work dir>
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const [reportPath, sdkPath, work] = process.argv.slice(2);
const { query } = await import(sdkPath);
const here = path.dirname(fileURLToPath(import.meta.url));
const report = JSON.parse(fs.readFileSync(reportPath, 'utf8'));
const DENY = 'This unattended Claude Code subagent cannot request human approval.';

// "[pid] runtime→subject {…}" / "[pid] subject→runtime {…}" / "[pid] {"ev":…}", the runtime's
// (first) pid only: grandchildren do not speak the wire.
function steps(ledger) {
  const out = [];
  let runtime = null;
  for (let line of ledger) {
    // A frame sent invalid on purpose is replayed as written, but not judged.
    const mark = line.lastIndexOf('   (violation on purpose: ');
    const violation = mark >= 0;
    if (violation) line = line.slice(0, mark);
    const m = /^\[(\d+)\] (?:(runtime→subject|subject→runtime) )?([{"].*)$/.exec(line);
    if (!m) continue;
    runtime ??= m[1];
    if (m[1] !== runtime) continue;
    const v = JSON.parse(m[3]);
    if (m[2] === 'runtime→subject') out.push(violation ? { write: v, violation } : { write: v });
    else if (m[2] === 'subject→runtime') out.push({ read: v });
    else if (v.ev === 'eof') out.push({ eof: true });
    else if (v.ev === 'exit' && v.signal) out.push({ signal: v.signal });
    else if (v.ev === 'exit' && v.code !== null && v.code !== undefined) out.push({ exit: v.code });
  }
  return out;
}

// What only a live SDK can choose: its request ids.
function comparable(frame) {
  const f = structuredClone(frame);
  if (f?.type === 'control_request') delete f.request_id;
  if (f?.type === 'control_response') delete f.response.request_id;
  return JSON.stringify(f);
}

async function replay(c) {
  const s = steps(c.ledger);
  const init = s.find((x) => x.write?.type === 'system' && x.write.subtype === 'init');
  const mode = init?.write.permissionMode ?? 'dontAsk';
  const dir = path.join(work, c.id.replaceAll('/', '__'));
  fs.mkdirSync(dir, { recursive: true });
  const stepsFile = path.join(dir, 'steps.json');
  const seenFile = path.join(dir, 'seen.jsonl');
  fs.writeFileSync(stepsFile, JSON.stringify(s));
  fs.writeFileSync(seenFile, '');
  // The replay says over a socket where the subject cancelled; the query is aborted there.
  const signal = path.join(dir, 'signal.sock');
  const abort = new AbortController();
  const heard = net.createServer((c) => c.on('data', () => abort.abort()));
  await new Promise((r) => heard.listen(signal, r));
  const bypass = mode === 'bypassPermissions';
  const options = {
    pathToClaudeCodeExecutable: path.join(here, 'replay-cli.mjs'),
    cwd: dir,
    env: { ...process.env, REPLAY_STEPS: stepsFile, REPLAY_OUT: seenFile, REPLAY_SIGNAL: signal },
    abortController: abort,
    persistSession: false,
    disallowedTools: mode === 'plan' ? ['AskUserQuestion', 'ExitPlanMode'] : ['AskUserQuestion'],
    permissionMode: mode,
    onElicitation: async () => ({ action: 'decline' }),
    onUserDialog: async () => ({ behavior: 'cancelled' }),
    supportedDialogKinds: ['refusal_fallback_prompt'],
    stderr: () => {},
  };
  if (bypass) options.allowDangerouslySkipPermissions = true;
  else options.canUseTool = async () => ({ behavior: 'deny', message: DENY });
  const got = [];
  const problems0 = [];
  let threw = null;
  // A deadline, not a wait: a replay the SDK never finishes is this case's failure.
  const deadline = setTimeout(() => abort.abort(new Error('deadline: the SDK did not finish in 30 s')), 30000);
  try {
    for await (const m of query({ prompt: 'Carry out the scripted task.', options })) got.push(m);
  } catch (e) {
    threw = String(e?.message ?? e).split('\n')[0];
  }
  clearTimeout(deadline);
  heard.close();
  if (String(abort.signal.reason ?? '').includes('deadline')) problems0.push('the real SDK did not finish in 30 s');
  const sent = s.filter((x) => x.write && !x.violation && typeof x.write === 'object'
    && !x.write.type?.startsWith('control_')).map((x) => x.write);
  const marked = s.filter((x) => x.violation).length;
  const problems = problems0;
  // accepted: the fake's messages, in order, as the SDK yields them.
  let at = 0;
  for (const m of sent) {
    const i = got.findIndex((g, k) => k >= at && JSON.stringify(g) === JSON.stringify(m));
    if (i < 0) problems.push(`dropped or changed by the SDK: ${m.type}${m.subtype ? '/' + m.subtype : ''}`);
    else at = i + 1;
  }
  // same: the real SDK's frames against the reference's, and its flags.
  const seen = fs.readFileSync(seenFile, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  for (const x of seen) {
    if (x.early_eof) problems.push(`the real SDK ended its input where the reference wrote ${x.early_eof.type}`);
    if (x.read && x.recorded && comparable(x.read) !== comparable(x.recorded)) {
      problems.push(`the real SDK wrote ${JSON.stringify(x.read)}, the reference ${JSON.stringify(x.recorded)}`);
    }
    if (x.read && !x.recorded) problems.push(`the real SDK also wrote ${JSON.stringify(x.read)}`);
  }
  // The reference's CLI flags (the fake's registration records them) against the real SDK's.
  const reg = c.ledger.map((l) => /^\[\d+\] (\{"ev":"register".*\})$/.exec(l)).find(Boolean);
  const refArgs = reg ? JSON.parse(reg[1]).args ?? [] : null;
  const sdkArgs = seen[0]?.argv ?? null;
  // By meaning: `--flag=value` (SDK 0.3.334) is `--flag value` (0.3.220) to the CLI, which
  // reads both, as the fake does.
  const meaning = (argv) => argv.flatMap((w) => (w.startsWith('--') && w.includes('=')
    ? [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)] : [w])).join(' ');
  if (refArgs && sdkArgs && meaning(refArgs) !== meaning(sdkArgs)) {
    problems.push(`CLI flags: the real SDK passes \`${sdkArgs.join(' ')}\`, the reference \`${refArgs.join(' ')}\``);
  }
  return { id: c.id, mode, sent: sent.length, marked, problems, threw, argv: sdkArgs, env: seen[0]?.env };
}

const cases = report.cases.filter((c) => c.provider === 'claude-code' && c.mode === 'foreground'
  && Array.isArray(c.ledger) && c.ledger.some((l) => l.includes('→')));
let failed = 0;
const flags = new Map();
for (const c of cases) {
  const r = await replay(c);
  if (r.argv) flags.set(r.mode, { argv: r.argv.join(' '), env: r.env });
  const ok = r.problems.length === 0;
  if (!ok) failed++;
  console.log(`${ok ? '✓' : '✗'} ${r.id} (${r.mode}): ${r.sent} message(s) sent${r.marked ? ` (+${r.marked} invalid on purpose, not judged)` : ''}${r.threw ? `; the SDK threw: ${r.threw}` : ''}`);
  for (const p of r.problems) console.log(`    ${p}`);
}
console.log(`\n${cases.length - failed} of ${cases.length} cases: the real SDK accepted the fake's frames and wrote what the reference wrote`);
for (const [mode, f] of flags) console.log(`  real SDK flags (${mode}): ${f.argv}  env ${JSON.stringify(f.env)}`);
process.exit(failed === 0 && cases.length > 0 ? 0 : 1);
