// Which order the real Claude Agent SDK writes its first frames in: given a string prompt, does
// it write the task's `user` message before the CLI answered its `initialize` request? The
// Claude Code fake must accept whichever the SDK does (fakes/tests/e2e/claude_code.rs shows both);
// this says which the pinned SDK does. The CLI here is a stub that answers `initialize` late
// and records every line, with whether the answer had gone out when it came.
//
//   node order.mjs <sdk.mjs> <work folder>   → prints `user-before-answer` or `user-after-answer`
import fs from 'node:fs';
import path from 'node:path';
import { probe } from './probe.mjs';

const [sdkPath, work] = process.argv.slice(2);
fs.mkdirSync(work, { recursive: true });
const seen = path.join(work, 'seen.jsonl');
const stub = path.join(work, 'stub-cli.mjs');
fs.writeFileSync(stub, `
import fs from 'node:fs';
import readline from 'node:readline';
let answered = false;
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let msg; try { msg = JSON.parse(line); } catch { return; }
  fs.appendFileSync(process.env.ORDER_SEEN, JSON.stringify({ type: msg.type, subtype: msg.request?.subtype, answered }) + '\\n');
  if (msg.type === 'control_request' && msg.request?.subtype === 'initialize') {
    // Late, so a frame the SDK writes without awaiting the answer comes first.
    setTimeout(() => {
      answered = true;
      process.stdout.write(JSON.stringify({ type: 'control_response', response: { subtype: 'success',
        request_id: msg.request_id, response: { commands: [], agents: [], output_style: 'default',
        available_output_styles: ['default'], models: [], account: {}, pid: process.pid } } }) + '\\n');
    }, 500);
  }
});
rl.on('close', () => process.exit(0));
`);
fs.writeFileSync(seen, '');
// Nothing is answered but initialize: the order is all that matters.
await probe(sdkPath, stub, { ORDER_SEEN: seen }, {}, 2500);
const lines = fs.readFileSync(seen, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
const user = lines.find((l) => l.type === 'user');
if (!lines.some((l) => l.subtype === 'initialize') || !user) {
  console.log(`no-user-seen ${JSON.stringify(lines)}`);
  process.exit(1);
}
console.log(user.answered ? 'user-after-answer' : 'user-before-answer');
