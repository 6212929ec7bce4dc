'use strict';
// The ACP provider's safe diagnostic lines (seed 000) and the shared 4096-byte bound.
//
// Only closed-set values, the current call site (stage) and observed process outcomes (exit code,
// signal) ever reach these lines. Raw text from the child — error messages, stderr, titles, tool
// input, unknown enum values — never does: it goes to the host log and nowhere else.

const MAX_DIAGNOSTIC_BYTES = 4096;
const TRUNCATION_SUFFIX = '\n[diagnostic truncated]'; // 23 bytes

/**
 * `Subagent failure (provider: ACP; stage: …; category: …[; stop reason: …][; exit code: …][; signal: …])`.
 * Fields in this fixed order; a field that was not observed is left out. Exit code and signal are
 * independent facts (`exit` is what the child's 'exit' event reported: `{ code, signal }`).
 */
function failureLine(stage, category, { stopReason, exit } = {}) {
  const fields = ['provider: ACP', `stage: ${stage}`, `category: ${category}`];
  if (stopReason !== undefined) fields.push(`stop reason: ${stopReason}`);
  if (exit && exit.code !== null && exit.code !== undefined) fields.push(`exit code: ${exit.code}`);
  if (exit && exit.signal) fields.push(`signal: ${exit.signal}`); // Node names it: 'SIGABRT'
  return `Subagent failure (${fields.join('; ')})`;
}

/** ACP `ToolKind` values; anything else (absent, not a string, unknown) is shown as `unknown`. */
const ACP_TOOL_KINDS = [
  'read', 'edit', 'delete', 'move', 'search', 'execute', 'think', 'fetch', 'switch_mode', 'other',
];

function toolKind(raw) {
  return typeof raw === 'string' && ACP_TOOL_KINDS.includes(raw) ? raw : 'unknown';
}

/**
 * The permission fact: the configured policy, the closed-set tool kind and the decision —
 * nothing else about the request (no title, raw input, locations, option names).
 */
function permissionLine(fact) {
  const decision = fact.allowed ? 'allowed' : 'denied';
  return `ACP unattended decision (policy: ${fact.policy}; request: ${fact.request}; decision: ${decision})`;
}

/** The failure line, then the permission line when a permission request took part. */
function withPermission(line, fact) {
  return fact ? `${line}\n${permissionLine(fact)}` : line;
}

/**
 * Bounds a diagnostic to 4096 UTF-8 bytes: kept as it is when it fits (exactly 4096 included),
 * otherwise cut at the last character boundary at or before byte 4073 and suffixed.
 */
function limitDiagnostic(text) {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= MAX_DIAGNOSTIC_BYTES) return text;
  let cut = MAX_DIAGNOSTIC_BYTES - Buffer.byteLength(TRUNCATION_SUFFIX);
  // A byte 0b10xxxxxx continues a multi-byte character: never cut before one.
  while (cut > 0 && (bytes[cut] & 0xc0) === 0x80) cut -= 1;
  return bytes.subarray(0, cut).toString('utf8') + TRUNCATION_SUFFIX;
}

module.exports = { failureLine, toolKind, permissionLine, withPermission, limitDiagnostic };
