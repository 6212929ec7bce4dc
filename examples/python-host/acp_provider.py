"""A tiny ACP provider: one child runtime per run, spoken to over its stdio.

    provider = create_acp_provider(runtime=…, config=…, log=…)
    run = await provider.start(prompt=…, signal=…)  # raises: the start failed
    result = await run.result                       # never raises
    await run.dispose()                             # raises: the teardown failed

start() reads the configuration, checks the workspace, spawns the runtime, runs the ACP handshake
(initialize, session/new) and sends the task in session/prompt. It returns only once the
handshake completed (the run is *published*); a start that fails after the spawn is rolled back —
the child's whole tree settled — before it raises. `run.result` is the SubagentResult:
`stop_reason`, `output`, `diagnostic` (None when there is none). `run.dispose()` tells the
runtime (session/cancel), closes its stdin and walks the teardown ladder.

Every fact lives in one run's own object: nothing diagnostic is shared between runs.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from abort import AbortSignal
from diagnostic import (
    PermissionFact,
    failure_line,
    limit_diagnostic,
    permission_line,
    tool_kind,
    with_permission,
)
from json_rpc import JsonRpcConnection, Reply, RpcError
from runtime_process import RuntimeProcess, spawn_runtime

PREFIX = "subagent-acp: "
ABORTED_BEFORE_START = "subagent request was aborted before the ACP child started"
# How long what a dead child wrote gets to be read before its wire counts as lost (a helper that
# inherited its stdout may keep the pipe open long after the child is gone).
EXIT_DRAIN_S = 0.250
MAX_TIMER_MS = 2147483647  # the records' timer limit (JavaScript's setTimeout)

Log = Callable[[str], None]


class ProviderError(Exception):
    """A failure whose `name` and `message` the host shows (the records' Error classes)."""

    name = "Error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AcpRunFailure(ProviderError):
    """A start or teardown failure; its message is model-visible, so it is only ever a safe line."""

    name = "AcpRunFailure"

    def __init__(self, line: str) -> None:
        super().__init__(f"{PREFIX}{line}")


class StartAborted(ProviderError):
    """The rejection of a start cancelled before its child could be published (a plain `Error`)."""

    def __init__(self) -> None:
        super().__init__(ABORTED_BEFORE_START)


class AggregateError(ProviderError):
    """A start that failed and whose rollback failed too: `<start message>; <teardown message>`."""

    name = "AggregateError"

    def __init__(self, errors: list[ProviderError]) -> None:
        super().__init__("; ".join(e.message for e in errors))
        self.errors = errors


@dataclass
class SubagentResult:
    stop_reason: str  # completed | max-tokens | refusal | aborted | error
    output: list[dict[str, Any]]
    diagnostic: str | None = None


# ---------------------------------------------------------------------------------------------
# Configuration, with the host's own key names. Why a value is invalid goes to the host log only.


@dataclass(frozen=True)
class Settings:
    permission: str
    # The provider's own working directory over the parent's (`None`: the parent's).
    cwd: str | None
    dispose_eof_grace_ms: float
    dispose_grace_ms: float


class ConfigError(ValueError):
    pass


def _duration_ms(config: dict[str, Any], key: str, default_ms: float) -> float:
    value = config.get(key)
    if value is None:
        return default_ms
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
        or value > MAX_TIMER_MS
    ):
        raise ConfigError(f"{key} must be a positive number of ms")
    return value


def _own_cwd(config: dict[str, Any]) -> str | None:
    """The provider's own working directory over the parent's, if set: a non-blank string."""
    value = config.get("cwd")
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError("cwd must be a non-empty path")
    return value


def read_config(config: dict[str, Any]) -> Settings:
    permission = config.get("permission")
    if permission is None:
        permission = "reject"
    elif permission not in ("allow", "reject"):
        raise ConfigError("permission must be allow or reject")
    return Settings(
        permission=permission,
        cwd=_own_cwd(config),
        dispose_eof_grace_ms=_duration_ms(config, "disposeEofGraceMs", 6000),
        dispose_grace_ms=_duration_ms(config, "disposeGraceMs", 3000),
    )


# ---------------------------------------------------------------------------------------------
# The mapping of seed 000.


def map_stop_reason(raw: Any, permission: PermissionFact | None) -> tuple[str, str | None]:
    """`session/prompt`'s stopReason → (stop reason, diagnostic).

    `permission` is the latest permission fact of the prompt.
    """
    alone = permission_line(permission) if permission is not None else None
    match raw:
        case "end_turn":
            return "completed", None
        case "max_tokens":
            return "max-tokens", alone
        case "refusal":
            return "refusal", alone
        case "cancelled":
            return "aborted", alone
        case "max_turn_requests":
            line = failure_line("prompt", "remote-limit", stop_reason="max_turn_requests")
            return "error", with_permission(line, permission)
        case _:
            # Unknown, missing or not a string: never copied.
            return "error", with_permission(failure_line("prompt", "unknown"), permission)


def answer_permission(policy: str, params: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The unattended answer to session/request_permission, and whether it allowed."""
    if policy == "allow":
        options = params.get("options")
        for option in options if isinstance(options, list) else []:
            if (
                isinstance(option, dict)
                and option.get("kind") in ("allow_once", "allow_always")
                and isinstance(option.get("optionId"), str)
            ):
                return {"outcome": {"outcome": "selected", "optionId": option["optionId"]}}, True
    return {"outcome": {"outcome": "cancelled"}}, False


def text_output(text: str) -> list[dict[str, Any]]:
    """The result's output: one text block, or none at all for no text (never an empty block)."""
    return [] if text == "" else [{"type": "text", "text": text}]


@dataclass(frozen=True)
class Raced:
    """How a request ended against the aborts: cancelled, its value, or its RpcError."""

    cancelled: bool = False
    value: Any = None
    error: RpcError | None = None


async def race_abort(answer: asyncio.Future[Any], *signals: AbortSignal) -> Raced:
    """Whichever comes first: one of the signals, or the answer. The answer is always consumed."""
    winner: asyncio.Future[Raced] = asyncio.get_running_loop().create_future()

    def on_answer(f: asyncio.Future[Any]) -> None:
        error = f.exception()  # also marks it retrieved when the abort won
        if winner.done():
            return
        if error is None:
            winner.set_result(Raced(value=f.result()))
        elif isinstance(error, RpcError):
            winner.set_result(Raced(error=error))
        else:
            winner.set_exception(error)

    def on_abort() -> None:
        if not winner.done():
            winner.set_result(Raced(cancelled=True))

    if any(s.aborted for s in signals):
        on_abort()
    removers = [s.add_callback(on_abort) for s in signals]
    answer.add_done_callback(on_answer)
    try:
        return await winner
    finally:
        for remove in removers:
            remove()


@dataclass(frozen=True)
class Opened:
    """openSession's outcome: the session id, a cancel that won, or the failure line of a stage."""

    session_id: str | None = None
    cancelled: bool = False
    line: str | None = None


# ---------------------------------------------------------------------------------------------


class AcpRun:
    """One live ACP child and its facts."""

    def __init__(self, child: RuntimeProcess, settings: Settings, log: Log) -> None:
        self.child = child
        self.settings = settings
        self.log = log
        self.session_id: str | None = None
        self.prompting = False
        self.decided = False  # the result is decided: later chunks and permissions no longer count
        self.output = ""
        self.permission: PermissionFact | None = None  # the latest permission fact of the prompt
        self.cancel_sent = False
        self.disposing = AbortSignal()  # dispose() cancels the prompt in flight
        self.disposal: asyncio.Task[None] | None = None  # dispose() runs once
        self.rpc = JsonRpcConnection(
            input=child.stdout,
            output=child.stdin,
            on_request=self.on_request,
            on_notification=self.on_notification,
            on_garbage=lambda line: log(f"ACP child wrote a non-JSON-RPC line: {line}"),
        )
        child.on_stdin_failed(lambda e: self.rpc.lose_wire(f"write failed: {e!r}"))
        # The child exited: what it wrote before gets EXIT_DRAIN_S, then its wire is lost even if
        # a helper still holds the stdout pipe open (no EOF would ever come).
        child.on_exit(self._on_child_exit)

    def _on_child_exit(self) -> None:
        asyncio.get_running_loop().call_later(EXIT_DRAIN_S, self.rpc.lose_wire, "the child exited")

    def on_request(self, method: str, params: dict[str, Any]) -> Reply:
        if method != "session/request_permission":
            self.log(f"ACP child sent unsupported request {method}")
            # As the ACP SDK answers a method it has no handler for.
            return {
                "error": {
                    "code": -32601,
                    "message": f'"Method not found": {method}',
                    "data": {"method": method},
                }
            }
        if self.decided:
            return {"result": {"outcome": {"outcome": "cancelled"}}}
        answer, allowed = answer_permission(self.settings.permission, params)
        if self.prompting:
            call = params.get("toolCall")
            kind = call.get("kind") if isinstance(call, dict) else None
            self.permission = PermissionFact(self.settings.permission, tool_kind(kind), allowed)
        return {"result": answer}

    def on_notification(self, method: str, params: dict[str, Any]) -> None:
        if method != "session/update" or self.decided:
            return
        # Only our own session's updates (an update naming no session is taken as ours).
        session = params.get("sessionId")
        if self.session_id is not None and isinstance(session, str) and session != self.session_id:
            return
        update = params.get("update")
        # Only the assistant's message is output; thoughts, tool calls, plans are never shown.
        if isinstance(update, dict) and update.get("sessionUpdate") == "agent_message_chunk":
            content = update.get("content")
            if (
                isinstance(content, dict)
                and content.get("type") == "text"
                and isinstance(content.get("text"), str)
            ):
                self.output += content["text"]

    async def wire_lost(self, exit_stage: str, transport_stage: str) -> str:
        """A lost wire is the child's exit if it exits within disposeGraceMs, else a transport
        failure."""
        exit = await self.child.wait_exit(self.settings.dispose_grace_ms / 1000)
        if exit is not None:
            return failure_line(exit_stage, "process-exit", exit=exit)
        return failure_line(transport_stage, "transport")

    async def open_session(self, cwd: str, signal: AbortSignal) -> Opened:
        """initialize, then session/new."""
        init = await race_abort(
            self.rpc.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}), signal
        )
        if init.cancelled:
            return Opened(cancelled=True)
        if init.error is not None:
            self.log(f"initialize failed: {init.error.message}")
            if init.error.kind == "remote":
                return Opened(line=failure_line("initialize", "transport"))
            return Opened(line=await self.wire_lost("initialize", "initialize"))

        created = await race_abort(
            self.rpc.request("session/new", {"cwd": cwd, "mcpServers": []}), signal
        )
        if created.cancelled:
            return Opened(cancelled=True)
        if created.error is not None:
            self.log(f"session/new failed: {created.error.message}")
            if created.error.kind == "remote":
                return Opened(line=failure_line("new-session", "protocol"))
            return Opened(line=await self.wire_lost("new-session", "new-session"))
        # Any string is a session id, the empty one included: only the type is checked.
        value = created.value
        session_id = value.get("sessionId") if isinstance(value, dict) else None
        if not isinstance(session_id, str):
            self.log("session/new answered without a string session id")
            return Opened(line=failure_line("new-session", "protocol"))
        return Opened(session_id=session_id)

    def prompt(self, task: str, signal: AbortSignal) -> asyncio.Task[SubagentResult]:
        """Sends the task now; the task of the run's one result."""
        self.prompting = True
        # A cancel that landed before the task was sent: the task is never sent.
        answer = None
        if not signal.aborted:
            answer = self.rpc.request(
                "session/prompt",
                {"sessionId": self.session_id, "prompt": [{"type": "text", "text": task}]},
            )
        return asyncio.create_task(self._prompt_result(answer, signal))

    async def _prompt_result(
        self, answer: asyncio.Future[Any] | None, signal: AbortSignal
    ) -> SubagentResult:
        if answer is None:
            answered = Raced(cancelled=True)
        else:
            answered = await race_abort(answer, signal, self.disposing)
        # The facts are decided here: later chunks and permission requests do not count.
        self.decided = True
        output = text_output(self.output)
        permission = self.permission

        if answered.cancelled:
            # Local cancel: aborted at once, no diagnostic; then tell the child.
            self.send_cancel()
            return SubagentResult("aborted", output)
        if answered.error is None:
            raw = answered.value.get("stopReason") if isinstance(answered.value, dict) else None
            stop_reason, diagnostic = map_stop_reason(raw, permission)
        elif answered.error.kind == "remote":
            self.log(
                f"session/prompt error response {answered.error.code}: {answered.error.message}"
            )
            stop_reason = "error"
            diagnostic = with_permission(failure_line("prompt", "unknown"), permission)
        else:
            self.log(f"session/prompt failed: {answered.error.message}")
            stop_reason = "error"
            diagnostic = with_permission(await self.wire_lost("process", "prompt"), permission)
        if diagnostic is None:
            return SubagentResult(stop_reason, output)
        return SubagentResult(stop_reason, output, limit_diagnostic(diagnostic))

    def send_cancel(self) -> None:
        """session/cancel, once per run, only while the session is known and the wire is open."""
        if self.cancel_sent or self.session_id is None or not self.rpc.is_open():
            return
        self.cancel_sent = True
        self.rpc.notify("session/cancel", {"sessionId": self.session_id})

    async def teardown(self) -> bool:
        """Closes stdin and walks the ladder; True when the whole tree settled.

        Raw facts go to the host log only.
        """
        self.rpc.close_stdin()
        settled = await self.child.settle(
            eof_grace_ms=self.settings.dispose_eof_grace_ms,
            grace_ms=self.settings.dispose_grace_ms,
        )
        exit = self.child.exit
        if settled:
            code, sig = (exit.code, exit.signal) if exit is not None else (None, None)
            self.log(f"ACP child settled (exit code {code}, signal {sig})")
        else:
            self.log(
                f"ACP child teardown failed: process group {self.child.pgid} not gone after "
                f"SIGKILL and {self.settings.dispose_grace_ms} ms"
            )
        return settled

    def dispose(self) -> asyncio.Task[None]:
        """Settles a prompt in flight as aborted, tells the runtime, then ends its tree.

        The task raises when the tree did not settle. Idempotent: the host may dispose a run
        itself while the tool call still awaits it, and the tool disposes it again once its
        result is in — both get the same task.
        """
        if self.disposal is None:
            self.disposing.abort()
            self.send_cancel()
            self.disposal = asyncio.create_task(self._dispose())
        return self.disposal

    async def _dispose(self) -> None:
        if not await self.teardown():
            raise AcpRunFailure(failure_line("teardown", "unknown"))


# ---------------------------------------------------------------------------------------------


@dataclass
class AcpRunHandle:
    """A published run: its result (never raises) and its idempotent dispose."""

    result: Awaitable[SubagentResult]
    dispose: Callable[[], Awaitable[None]] = field(repr=False)


class AcpProvider:
    """One provider instance per run: `runtime` is the child command (`command`, `args`, `env`,
    `cwd`), `config` the provider configuration, `log` the host log (never model-visible)."""

    def __init__(self, *, runtime: dict[str, Any], config: dict[str, Any], log: Log) -> None:
        self.runtime = runtime
        self.config = config
        self.log = log

    async def start(self, *, prompt: str, signal: AbortSignal) -> AcpRunHandle:
        log = self.log
        try:
            settings = read_config(self.config)
        except ConfigError as e:
            log(f"invalid ACP provider configuration: {e}")
            raise AcpRunFailure(failure_line("initialize", "configuration")) from e
        if signal.aborted:
            raise StartAborted()

        cwd = self.runtime.get("cwd")
        if settings.cwd is not None and isinstance(cwd, str):
            # The provider's own `cwd`; a relative one is taken from the parent's.
            cwd = os.path.normpath(os.path.join(cwd, settings.cwd))
        if not isinstance(cwd, str) or not os.path.isabs(cwd) or not os.path.isdir(cwd):
            log(f"ACP child cwd is not an absolute existing directory: {json.dumps(cwd)}")
            raise AcpRunFailure(failure_line("initialize", "configuration"))

        try:
            child = await spawn_runtime(
                command=self.runtime.get("command"),
                args=self.runtime.get("args") or [],
                cwd=cwd,
                env=self.runtime.get("env"),
                log=log,
            )
        except Exception as e:
            log(f"ACP child spawn failed: {e!r}")
            raise AcpRunFailure(failure_line("process", "process-start")) from e
        log(f"ACP child spawned, process group {child.pgid}")

        run = AcpRun(child, settings, log)
        opened = await run.open_session(cwd, signal)
        if opened.session_id is None:
            # Roll the child back to a settled tree before raising.
            rolled_back = await run.teardown()
            cleanup = AcpRunFailure(failure_line("teardown", "unknown"))
            if opened.cancelled:
                # After a cancel only the cleanup fact is kept, if there is one.
                raise StartAborted() if rolled_back else cleanup
            assert opened.line is not None
            start_error = AcpRunFailure(opened.line)
            if rolled_back:
                raise start_error
            raise AggregateError([start_error, cleanup])
        run.session_id = opened.session_id

        # Published: the task is sent now; the host sends its dispatch receipt.
        return AcpRunHandle(result=run.prompt(prompt, signal), dispose=run.dispose)


def create_acp_provider(
    *, runtime: dict[str, Any], config: dict[str, Any], log: Log
) -> AcpProvider:
    return AcpProvider(runtime=runtime, config=config, log=log)
