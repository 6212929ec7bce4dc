#!/usr/bin/env python3
"""The subject adapter: speaks conform's `conform-subject/1` on stdin/stdout (one JSON object per
line) and plays the host — the parent agent's subagent tool — around one provider run per
`start`. See conform's docs/subject-protocol.md.

For each run it does what a host's subagent tool does:
  foreground: start() → (dispatch receipt) → await result → dispose() → the tool result;
  background: the tool returns `started background subagent job subagent-N` at once, the run goes
              on as a one-shot job, and its end is delivered as a completion notice (or as the
              answer to a `job_output` call that was already waiting for it).
and reports each step to the harness as it happens. stderr is free-form logging.

Several runs are in flight at once in one process, one asyncio task each: everything about a run
lives in its own HostedRun; the only state shared between runs is the job counter.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import select
import signal
import sys
import threading
import traceback
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any, Protocol

import ndjson
import presentation as text
from abort import AbortSignal
from acp_provider import create_acp_provider
from presentation import JobOutcome, ShownError

PROTOCOL = "conform-subject/1"
SUBJECT = {"name": "python-host-example", "version": "0.1.0"}


class ProviderRun(Protocol):
    """A published run, as the host uses it."""

    @property
    def result(self) -> Awaitable[text.Result]: ...  # never raises

    def dispose(self) -> Awaitable[None]: ...  # idempotent; raises when the tree is not gone


class Provider(Protocol):
    async def start(self, *, prompt: str, signal: AbortSignal) -> ProviderRun: ...


ProviderFactory = Callable[..., Provider]  # (runtime=…, config=…, log=…) -> Provider

# The providers this host runs, by the name `start.provider` uses. Each entry builds one provider
# instance for one run from `runtime`, `config` and `log`. This is where a host plugs in its own.
PROVIDERS: dict[str, ProviderFactory] = {
    "acp": create_acp_provider,
}

# The harness keeps 2000 bytes of each host_log line, and no line may pass 1 MiB: clip raw text.
LOG_BYTES = 2000


class HostError(Exception):
    """A failure of the host itself, shown as the records' plain `Error`."""

    name = "Error"


def shown(error: BaseException) -> ShownError:
    """An exception as the parent sees it: its `name` (else its class) and its `message` (else
    its str)."""
    name = getattr(error, "name", None)
    message = getattr(error, "message", None)
    return ShownError(
        name if isinstance(name, str) and name else type(error).__name__,
        message if isinstance(message, str) else str(error),
    )


def write_all(fd: int, data: bytes) -> None:
    """Writes all of `data` to `fd`, blocking — also when the descriptor was made non-blocking
    (asyncio makes stdin non-blocking; in a terminal stdin, stdout and stderr are one file)."""
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:
            select.select([], [fd], [])


def warn(line: str) -> None:
    """A line on stderr: free-form, never the harness's business unless a run failed."""
    with contextlib.suppress(OSError):
        write_all(2, f"python-host: {line}\n".encode("utf-8", errors="replace"))


class Subject:
    """The subject: one message from the harness at a time, the runs it started, the shutdown."""

    def __init__(self) -> None:
        self.runs: dict[str, HostedRun] = {}
        self.next_job = 1
        self.stdout_broken = False
        self.shutting_down = False
        self.finished = asyncio.Event()

    def send(self, message: dict[str, Any]) -> None:
        """One message to the harness: one line of JSON, in one write, before anything else runs."""
        if self.stdout_broken:
            return
        try:
            write_all(1, ndjson.encode(message))
        except OSError as e:
            # The harness went away: nobody reads us any more, but the runtimes must still be ended.
            warn(f"stdout failed ({e!r}); shutting down")
            self.stdout_broken = True
            asyncio.get_running_loop().call_soon(self.shutdown)

    def on_message(self, msg: Any) -> None:
        kind = msg.get("type") if isinstance(msg, dict) else None
        match kind:
            case "hello":
                if msg.get("protocol") != PROTOCOL:
                    warn(f"harness speaks {msg.get('protocol')}, we speak {PROTOCOL}")
                self.send(
                    {
                        "type": "hello",
                        "protocol": PROTOCOL,
                        "subject": SUBJECT,
                        "providers": list(PROVIDERS),
                        "modes": ["foreground", "background"],
                        "controls": ["dispose"],
                    }
                )
            case "start":
                run_id = msg.get("run")
                if run_id in self.runs:
                    self.send(
                        {
                            "type": "start_rejected",
                            "run": run_id,
                            "error": {"name": "SubjectError", "message": "run id already in use"},
                        }
                    )
                    return
                job = None
                if msg.get("mode") == "background":
                    job = f"subagent-{self.next_job}"
                    self.next_job += 1
                self.runs[run_id] = HostedRun(msg, job, self.send)
            case "cancel" | "dispose" | "job_output":
                run = self.runs.get(msg.get("run"))
                if run is None:
                    self.send(
                        {
                            "type": "host_log",
                            "run": msg.get("run"),
                            "text": f"no run with this id ({kind} ignored)",
                        }
                    )
                elif kind == "cancel":
                    run.cancel()
                elif kind == "dispose":
                    run.dispose()
                else:
                    run.job_output(msg.get("wait") is True)
            case "shutdown":
                self.shutdown()
            case _:
                warn(f"ignoring a message of type {kind}")

    def shutdown(self) -> None:
        """`shutdown`, stdin EOF, SIGTERM or SIGINT: dispose everything still running, wait for
        it, then the host exits 0."""
        if self.shutting_down:
            return
        self.shutting_down = True
        asyncio.get_running_loop().create_task(self._shutdown())

    async def _shutdown(self) -> None:
        await asyncio.gather(*(run.shutdown() for run in list(self.runs.values())))
        self.finished.set()

    async def read_harness(self) -> None:
        """The harness's lines, read by the event loop as they come; EOF is a shutdown."""
        try:
            reader = await open_stdin()
            async for line in ndjson.read_lines(reader):
                if isinstance(line, ndjson.LineTooLong):
                    warn(f"ignoring a line of {line.size} bytes")
                    continue
                if line.strip() == "":
                    continue
                try:
                    msg = ndjson.decode(line)
                except ValueError as e:
                    warn(f"ignoring a malformed line ({e}): {line}")
                    continue
                try:
                    self.on_message(msg)
                except Exception:
                    warn(f"a message the host could not handle: {line}\n{traceback.format_exc()}")
        except OSError as e:
            warn(f"stdin failed ({e!r}); shutting down")
        finally:
            self.shutdown()


async def open_stdin() -> asyncio.StreamReader:
    """stdin as a StreamReader the event loop fills without blocking.

    Its limit bounds no line (ndjson.read_lines splits lines itself); it is how much is buffered
    before the pipe is paused. A stdin the loop cannot watch (a regular file, /dev/null) is read by
    a daemon thread instead, which never keeps the process from exiting.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1024 * 1024, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    except (ValueError, OSError):

        def pump() -> None:
            while True:
                try:
                    chunk = os.read(0, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    loop.call_soon_threadsafe(reader.feed_eof)
                    return
                loop.call_soon_threadsafe(reader.feed_data, chunk)

        threading.Thread(target=pump, name="stdin", daemon=True).start()
    return reader


class HostedRun:
    """One run: the tool call, its provider run, and — in background — its job."""

    def __init__(
        self, start: dict[str, Any], job: str | None, send: Callable[[dict[str, Any]], None]
    ):
        self.start = start
        self.id = start.get("run")
        self.job = job  # `subagent-N` in background, None in foreground
        self.send = send
        self.signal = AbortSignal()  # the tool call's signal
        if start.get("aborted") is True:
            # A cancel that came before the start: the signal is already aborted when the
            # provider's start() is called, which checks it before it spawns anything.
            self.signal.abort()
        self.cancel_requested = False  # a local cancel (foreground abort, background job_kill)
        self.shutting_down = False
        self.handle: ProviderRun | None = None  # the provider's run handle, once published
        self.waiters = 0  # `job_output wait:true` calls waiting for the job to end
        self.outcome: JobOutcome | None = None  # background: the job's terminal outcome
        self.over = False  # the tool result (foreground) or the job's delivery (background) is done
        self.done = asyncio.get_running_loop().create_task(self._guarded())

    def log(self, line: str) -> None:
        """Host-only text (raw errors, the provider's log): never shown to the model."""
        data = line.encode("utf-8", errors="surrogatepass")
        if len(data) > LOG_BYTES:
            line = f"{data[:LOG_BYTES].decode('utf-8', errors='replace')}… ({len(data)} bytes)"
        self.send({"type": "host_log", "run": self.id, "text": line})

    async def _guarded(self) -> None:
        try:
            await self.run()
        except Exception as e:
            warn(f"run {self.id} failed inside the host: {''.join(traceback.format_exception(e))}")
            self.log(f"host error: {e!r}")

    async def run(self) -> None:
        s = self.start
        if self.job is not None:
            self.send(
                {
                    "type": "tool_result",
                    "run": self.id,
                    "isError": False,
                    "text": text.background_started(self.job),
                }
            )

        try:
            create_provider = PROVIDERS.get(s["provider"])
            if create_provider is None:
                raise HostError(f"no provider named {s['provider']} in this host")
            config = s.get("config")
            provider = create_provider(
                runtime=s.get("runtime") or {},
                config=config if isinstance(config, dict) else {},
                log=self.log,
            )
            run = await provider.start(prompt=s["task"], signal=self.signal)
        except Exception as error:
            self.start_rejected(shown(error))
            return
        self.handle = run

        # Published: the dispatch receipt. The key is ours for the child, never its own session id.
        self.send(
            {
                "type": "dispatched",
                "run": self.id,
                "childSessionKey": str(uuid.uuid4()),
                "dispatchAt": datetime.now(UTC)
                .isoformat(timespec="milliseconds")
                .replace("+00:00", "Z"),
                "expectedBy": s.get("expectedBy"),
            }
        )

        result = await run.result  # never raises
        reported = {
            "type": "result",
            "run": self.id,
            "stopReason": result.stop_reason,
            "output": result.output,
        }
        if result.diagnostic is not None:
            reported["diagnostic"] = result.diagnostic
        self.send(reported)

        # The result is shown only once the child is disposed.
        dispose_error: ShownError | None = None
        try:
            await run.dispose()
            self.send({"type": "settled", "run": self.id})
        except Exception as error:
            # The tree is not released: no `settled` claim.
            dispose_error = shown(error)
            self.log(f"dispose rejected: {dispose_error.name}: {dispose_error.message}")

        if self.job is None:
            shown_text = text.foreground_text(result, dispose_error)
            self.over = True
            self.send(
                {
                    "type": "tool_result",
                    "run": self.id,
                    "isError": shown_text.is_error,
                    "text": shown_text.text,
                }
            )
        else:
            outcome = text.job_outcome(result)
            if dispose_error is not None:
                outcome = text.with_dispose_failure(outcome, dispose_error)
            self.deliver(outcome)

    def start_rejected(self, error: ShownError) -> None:
        self.send(
            {
                "type": "start_rejected",
                "run": self.id,
                "error": {"name": error.name, "message": error.message},
            }
        )
        if self.job is None:
            shown_text = text.foreground_start_rejected(error)
            self.over = True
            self.send(
                {
                    "type": "tool_result",
                    "run": self.id,
                    "isError": shown_text.is_error,
                    "text": shown_text.text,
                }
            )
        else:
            # A start the host itself aborted (job_kill) is a killed job.
            self.deliver(text.job_outcome_start_rejected(error, self.signal.aborted))

    def deliver(self, outcome: JobOutcome) -> None:
        """The job is terminal. A `job_output` already waiting for it is its delivery; otherwise
        the completion notice — except after job_kill (the parent knows) or at shutdown."""
        assert self.job is not None
        self.outcome = outcome
        self.over = True
        waited = self.waiters > 0
        for _ in range(self.waiters):
            self.answer_job_output()
        self.waiters = 0
        if not waited and not self.cancel_requested and not self.shutting_down:
            self.send(
                {
                    "type": "notice",
                    "run": self.id,
                    "job": self.job,
                    "text": text.notice_text(self.job, str(self.start.get("label")), outcome),
                }
            )

    def answer_job_output(self) -> None:
        self.send(
            {"type": "job_output", "run": self.id, "text": text.job_output_text(self.outcome)}
        )

    def cancel(self) -> None:
        """`cancel`: the foreground tool call's abort, or `job_kill` in background."""
        # job_kill on a job that already finished changes nothing.
        if self.over:
            return
        self.cancel_requested = True
        self.signal.abort()

    def dispose(self) -> None:
        """`dispose`: the host disposes the run handle itself, as its own teardown does — not the
        tool call's signal. The result settles as the provider makes it; the job is not killed by
        the parent, so its completion is still delivered."""
        if self.handle is None:
            self.log("dispose before the run was published: no handle yet")
            return
        disposal = asyncio.ensure_future(self.handle.dispose())
        # A failure is the run's own dispose's to report, when the tool disposes it again.
        disposal.add_done_callback(lambda f: f.cancelled() or f.exception())

    def job_output(self, wait: bool) -> None:
        """`job_output`: answered at once, or — with `wait` — once the job is terminal."""
        if self.job is None:
            self.log("job_output for a foreground run: no job")
        elif self.over:
            self.answer_job_output()
        elif wait:
            self.waiters += 1
        else:
            self.answer_job_output()  # `[status: running]`

    def shutdown(self) -> Awaitable[None]:
        """Subject shutdown: abort the run, let it dispose; done when it is."""
        self.shutting_down = True
        self.signal.abort()
        return self.done


async def main() -> int:
    subject = Subject()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, subject.shutdown)
    reading = loop.create_task(subject.read_harness())
    await subject.finished.wait()
    reading.cancel()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
