"""The ACP provider's safe diagnostic lines (seed 000) and the shared 4096-byte bound.

Only closed-set values, the current call site (stage) and observed process outcomes (exit code,
signal) ever reach these lines. Raw text from the child — error messages, stderr, titles, tool
input, unknown enum values — never does: it goes to the host log and nowhere else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_DIAGNOSTIC_BYTES = 4096
TRUNCATION_SUFFIX = "\n[diagnostic truncated]"  # 23 bytes


@dataclass(frozen=True)
class Exit:
    """How the child ended, as the records write it: an exit code or a signal *name*."""

    code: int | None
    signal: str | None  # "SIGABRT"


@dataclass(frozen=True)
class PermissionFact:
    """The latest permission request of a prompt: the policy, its closed-set kind, the decision."""

    policy: str
    request: str
    allowed: bool


def failure_line(
    stage: str, category: str, *, stop_reason: str | None = None, exit: Exit | None = None
) -> str:
    """The failure line, on one line:

        Subagent failure (provider: ACP; stage: …; category: …[; stop reason: …]
                          [; exit code: …][; signal: …])

    Fields in this fixed order; a field that was not observed is left out. Exit code and signal
    are independent facts.
    """
    fields = ["provider: ACP", f"stage: {stage}", f"category: {category}"]
    if stop_reason is not None:
        fields.append(f"stop reason: {stop_reason}")
    if exit is not None and exit.code is not None:
        fields.append(f"exit code: {exit.code}")
    if exit is not None and exit.signal:
        fields.append(f"signal: {exit.signal}")
    return f"Subagent failure ({'; '.join(fields)})"


# ACP `ToolKind` values; anything else (absent, not a string, unknown) is shown as `unknown`.
ACP_TOOL_KINDS = frozenset(
    [
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "switch_mode",
        "other",
    ]
)


def tool_kind(raw: Any) -> str:
    return raw if isinstance(raw, str) and raw in ACP_TOOL_KINDS else "unknown"


def permission_line(fact: PermissionFact) -> str:
    """The permission fact — nothing else about the request (no title, raw input, locations,
    option names)."""
    decision = "allowed" if fact.allowed else "denied"
    return (
        f"ACP unattended decision (policy: {fact.policy}; request: {fact.request}; "
        f"decision: {decision})"
    )


def with_permission(line: str, fact: PermissionFact | None) -> str:
    """The failure line, then the permission line when a permission request took part."""
    return f"{line}\n{permission_line(fact)}" if fact is not None else line


def limit_diagnostic(text: str) -> str:
    """Bounds a diagnostic to 4096 UTF-8 bytes.

    Kept as it is when it fits (exactly 4096 included), otherwise cut at the last character
    boundary at or before byte 4073 and suffixed.
    """
    data = text.encode("utf-8", errors="replace")
    if len(data) <= MAX_DIAGNOSTIC_BYTES:
        return text
    cut = MAX_DIAGNOSTIC_BYTES - len(TRUNCATION_SUFFIX.encode("utf-8"))
    # A byte 0b10xxxxxx continues a multi-byte character: never cut before one.
    while cut > 0 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut].decode("utf-8") + TRUNCATION_SUFFIX
