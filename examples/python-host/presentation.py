"""The host side, as pure functions: how one SubagentResult (or a start/dispose failure) becomes
the text the parent model sees — the foreground tool result, a background job's status line, its
completion notice and what job_output returns.

These texts are pinned byte for byte by conform's snapshots (`snapshots/`); the rules are in the
spec's presentation.md. Nothing here knows which provider ran: a host keeps this file as it is
when it plugs in its own provider.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol


class Result(Protocol):
    """What the host reads of a provider's SubagentResult."""

    stop_reason: str
    output: list[dict[str, Any]]
    diagnostic: str | None


@dataclass(frozen=True)
class ShownError:
    """An error as the parent sees it: its class name and its message."""

    name: str
    message: str


@dataclass(frozen=True)
class ToolText:
    is_error: bool
    text: str


@dataclass(frozen=True)
class JobOutcome:
    """A background job's terminal outcome: completed (with its output), failed (with what it
    was about) or killed."""

    status: Literal["completed", "failed", "killed"]
    output: str = ""
    detail: str = ""


def output_text(output: list[dict[str, Any]]) -> str:
    """Concatenated text of the output's text blocks (other block types are not shown)."""
    return "".join(
        block["text"]
        for block in output
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )


def _headline(stop_reason: str) -> str:
    match stop_reason:
        case "aborted":
            return "subagent run was cancelled"
        case "error":
            return "subagent run failed"
        case "max-tokens":
            return "subagent run hit its token limit before finishing"
        case "refusal":
            return "subagent declined the task"
        case _:
            return f"subagent run ended abnormally ({stop_reason})"


def failure_message(result: Result) -> str | None:
    """The message of the error the foreground tool raises for a non-completed result: headline,
    diagnostic, partial output. None for a completed result."""
    if result.stop_reason == "completed":
        return None
    text = _headline(result.stop_reason)
    if result.diagnostic is not None:
        text += f"\nDiagnostic: {result.diagnostic}"
    partial = output_text(result.output)
    if partial != "":
        text += f"\nPartial output before the run ended:\n{partial}"
    return text


def foreground_text(result: Result, dispose_error: ShownError | None) -> ToolText:
    """The foreground tool result of a published run, given how dispose() ended (None: it did
    not fail)."""
    failure = failure_message(result)
    if dispose_error is None:
        if failure is None:
            return ToolText(False, output_text(result.output))
        return ToolText(True, f"Error: {failure}")
    if failure is None:
        return ToolText(True, f"Error: {dispose_error.message}")
    return ToolText(
        True,
        f"Error: subagent run failed: Error: {failure}; dispose failed: "
        f"{dispose_error.name}: {dispose_error.message}",
    )


def foreground_start_rejected(error: ShownError) -> ToolText:
    """The foreground tool result when start() rejected."""
    return ToolText(True, f"Error: {error.message}")


def background_started(job: str) -> str:
    """What the tool returns at once for `run_in_background: true`."""
    return f"started background subagent job {job}"


def job_outcome(result: Result) -> JobOutcome:
    if result.stop_reason == "completed":
        return JobOutcome("completed", output=output_text(result.output))
    # A local cancel carries no diagnostic: the job was killed. A remote `aborted` that explains a
    # permission decision has one, so it is a failed job like every other non-completed result.
    if result.stop_reason == "aborted" and result.diagnostic is None:
        return JobOutcome("killed")
    if result.diagnostic is None:
        return JobOutcome("failed", detail=result.stop_reason)
    return JobOutcome("failed", detail=f"{result.stop_reason}; diagnostic: {result.diagnostic}")


def job_outcome_start_rejected(error: ShownError, cancelled: bool) -> JobOutcome:
    """A rejected start: `failed` with `<ErrorName>: <message>` — except a start the host cancelled
    itself, which is `killed` (unless its cleanup failed too: an AggregateError stays `failed`)."""
    if cancelled and error.name != "AggregateError":
        return JobOutcome("killed")
    return JobOutcome("failed", detail=f"{error.name}: {error.message}")


def with_dispose_failure(outcome: JobOutcome, error: ShownError) -> JobOutcome:
    """A failed dispose() makes any outcome `failed`, keeping what it was about."""
    failure = f"dispose failed: {error.name}: {error.message}"
    if outcome.status == "failed":
        return JobOutcome("failed", detail=f"{outcome.detail}; {failure}")
    return JobOutcome("failed", detail=failure)


def status_line(outcome: JobOutcome | None) -> str:
    """`[status: …]`; `outcome` None means the job is still running."""
    if outcome is None:
        return "[status: running]"
    if outcome.status == "failed":
        return f"[status: failed, {outcome.detail}]"
    return f"[status: {outcome.status}]"


def notice_text(job: str, label: str, outcome: JobOutcome) -> str:
    return (
        f"background job {job} (subagent: {label}) finished {status_line(outcome)}. "
        "Read its output with job_output."
    )


def job_output_text(outcome: JobOutcome | None) -> str:
    """What job_output returns (partial output is never shown in background)."""
    if outcome is not None and outcome.status == "completed" and outcome.output != "":
        body = outcome.output
    else:
        body = "(no new output)"
    separator = "" if body.endswith("\n") else "\n"
    return f"{body}{separator}{status_line(outcome)}"
