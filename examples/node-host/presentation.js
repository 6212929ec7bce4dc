'use strict';
// The host side, as pure functions: how one SubagentResult (or a start/dispose failure) becomes
// the text the parent model sees — the foreground tool result, a background job's status line,
// its completion notice and what job_output returns.
//
// These texts are pinned byte for byte by conform's snapshots (`snapshots/`); the rules are in
// the spec's presentation.md. Nothing here knows which provider ran: a host keeps this file as it
// is when it plugs in its own provider.

/** Concatenated text of the output's text blocks (other block types are not shown). */
function outputText(output) {
  return output
    .filter((block) => block && block.type === 'text' && typeof block.text === 'string')
    .map((block) => block.text)
    .join('');
}

function headline(stopReason) {
  switch (stopReason) {
    case 'aborted':
      return 'subagent run was cancelled';
    case 'error':
      return 'subagent run failed';
    case 'max-tokens':
      return 'subagent run hit its token limit before finishing';
    case 'refusal':
      return 'subagent declined the task';
    default:
      return `subagent run ended abnormally (${stopReason})`;
  }
}

/**
 * The message of the error the foreground tool throws for a non-completed result: headline,
 * diagnostic, partial output. `null` for a completed result.
 */
function failureMessage(result) {
  if (result.stopReason === 'completed') return null;
  let text = headline(result.stopReason);
  if (result.diagnostic !== undefined) text += `\nDiagnostic: ${result.diagnostic}`;
  const partial = outputText(result.output);
  if (partial !== '') text += `\nPartial output before the run ended:\n${partial}`;
  return text;
}

/**
 * The foreground tool result of a published run, given how dispose() ended (`disposeError` is
 * null when it resolved). Returns `{ isError, text }`.
 */
function foregroundText(result, disposeError) {
  const failure = failureMessage(result);
  if (!disposeError) {
    return failure === null
      ? { isError: false, text: outputText(result.output) }
      : { isError: true, text: `Error: ${failure}` };
  }
  if (failure === null) return { isError: true, text: `Error: ${disposeError.message}` };
  return {
    isError: true,
    text: `Error: subagent run failed: Error: ${failure}; dispose failed: ${disposeError.name}: ${disposeError.message}`,
  };
}

/** The foreground tool result when start() rejected. */
function foregroundStartRejected(error) {
  return { isError: true, text: `Error: ${error.message}` };
}

/** What the tool returns at once for `run_in_background: true`. */
function backgroundStarted(job) {
  return `started background subagent job ${job}`;
}

// A background job's terminal outcome: { status: 'completed', output } |
// { status: 'failed', detail } | { status: 'killed' }.

function jobOutcome(result) {
  if (result.stopReason === 'completed') {
    return { status: 'completed', output: outputText(result.output) };
  }
  // A local cancel carries no diagnostic: the job was killed. A remote `aborted` that explains a
  // permission decision has one, so it is a failed job like every other non-completed result.
  if (result.stopReason === 'aborted' && result.diagnostic === undefined) return { status: 'killed' };
  const detail =
    result.diagnostic === undefined
      ? result.stopReason
      : `${result.stopReason}; diagnostic: ${result.diagnostic}`;
  return { status: 'failed', detail };
}

/**
 * A rejected start: `failed` with `<ErrorName>: <message>` — except a start the host cancelled
 * itself, which is `killed` (unless its cleanup failed too: an AggregateError stays `failed`).
 */
function jobOutcomeStartRejected(error, cancelled) {
  if (cancelled && error.name !== 'AggregateError') return { status: 'killed' };
  return { status: 'failed', detail: `${error.name}: ${error.message}` };
}

/** A rejected dispose() makes any outcome `failed`, keeping what it was about. */
function withDisposeFailure(outcome, error) {
  const failure = `dispose failed: ${error.name}: ${error.message}`;
  if (outcome.status === 'failed') return { status: 'failed', detail: `${outcome.detail}; ${failure}` };
  return { status: 'failed', detail: failure };
}

/** `[status: …]`; `outcome` null means the job is still running. */
function statusLine(outcome) {
  if (outcome === null) return '[status: running]';
  if (outcome.status === 'failed') return `[status: failed, ${outcome.detail}]`;
  return `[status: ${outcome.status}]`;
}

function noticeText(job, label, outcome) {
  return `background job ${job} (subagent: ${label}) finished ${statusLine(outcome)}. Read its output with job_output.`;
}

/** What job_output returns (partial output is never shown in background). */
function jobOutputText(outcome) {
  const body =
    outcome !== null && outcome.status === 'completed' && outcome.output !== ''
      ? outcome.output
      : '(no new output)';
  const separator = body.endsWith('\n') ? '' : '\n';
  return `${body}${separator}${statusLine(outcome)}`;
}

module.exports = {
  outputText,
  foregroundText,
  foregroundStartRejected,
  backgroundStarted,
  jobOutcome,
  jobOutcomeStartRejected,
  withDisposeFailure,
  noticeText,
  jobOutputText,
};
