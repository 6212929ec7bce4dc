// The command line the real Claude Agent SDK gives the Claude Code CLI for one `query()` with
// the options a host passes (a string prompt, a permission mode, no persisted session): the CLI
// here is a stub that writes its argv and exits. `conform upgrade claude-code@<v>` compares two
// SDK versions' lines (how a flag is written, which flags, which values).
//
//   node argv.mjs <sdk.mjs> <work folder>   → prints the argv as one JSON array
import fs from 'node:fs';
import path from 'node:path';
import { probe } from './probe.mjs';

const [sdkPath, work] = process.argv.slice(2);
fs.mkdirSync(work, { recursive: true });
const out = path.join(work, 'argv.json');
const stub = path.join(work, 'stub-cli.mjs');
fs.writeFileSync(stub, `
import fs from 'node:fs';
fs.writeFileSync(process.env.ARGV_OUT, JSON.stringify(process.argv.slice(2)));
process.exit(0);
`);
await probe(sdkPath, stub, { ARGV_OUT: out }, {
  permissionMode: 'default',
  canUseTool: async () => ({ behavior: 'deny', message: 'no' }),
  allowedTools: ['Read'],
  maxTurns: 3,
  model: 'mock-model',
}, 5000);
if (!fs.existsSync(out)) {
  console.error('the SDK never started the CLI');
  process.exit(1);
}
console.log(fs.readFileSync(out, 'utf8'));
