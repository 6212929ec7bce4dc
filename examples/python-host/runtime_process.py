"""The child runtime as a process: its environment, the spawn, its exit, and the teardown ladder
that ends its whole tree (stdin EOF → wait → SIGTERM → wait → SIGKILL → wait).

Spawned as asyncio hosts spawn: stdin and stdout are pipes the event loop reads and writes, the
runtime's stderr is the host's own stderr (inherited), and `start_new_session=True`, so the
runtime leads a process group of its own that the host can signal as one: `os.killpg(pgid, sig)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any

from diagnostic import Exit
from process_tree import ProcessTree

# How often the ladder looks whether the tree is gone (what is gone is read from /proc).
POLL_S = 0.020

# The variable that marks every process of one run (see process_tree.py).
RUN_MARKER = "PYTHON_HOST_SUBAGENT_RUN"
_markers = itertools.count(1)

# The child's stdout is read in chunks (ndjson.read_lines), never with readline(), so this limit
# bounds no line: it is how much the StreamReader buffers before it pauses the pipe (twice this),
# i.e. how far a child may write ahead of the host. Set explicitly: asyncio's default (64 KiB) is
# also the readline() limit a host would fall over.
STREAM_LIMIT = 1024 * 1024

Log = Callable[[str], None]


def is_scrubbed(name: str) -> bool:
    """Credential-shaped and `DSH_*` names are never inherited by a child."""
    upper = name.upper()
    return any(w in upper for w in ("KEY", "PASSWORD", "SECRET", "TOKEN")) or upper.startswith(
        "DSH_"
    )


def child_env(
    parent_env: Mapping[str, str], overrides: Mapping[str, Any] | None
) -> tuple[dict[str, str], list[str]]:
    """The child's environment: the host's minus scrubbed names, then the run's own `env` on top.

    A string sets a name — also a scrubbed one, that is an explicit opt-in; None (JSON `null`)
    unsets it, also an inherited one. Returns the environment and the names whose value was
    neither, left out.
    """
    env = {name: value for name, value in parent_env.items() if not is_scrubbed(name)}
    ignored = []
    for name, value in (overrides or {}).items():
        if isinstance(value, str):
            env[name] = value
        elif value is None:
            env.pop(name, None)
        else:
            ignored.append(name)
    return env, ignored


def exit_of(returncode: int) -> Exit:
    """asyncio's returncode (negative: the signal's number) as the exit facts."""
    if returncode >= 0:
        return Exit(code=returncode, signal=None)
    try:
        name = signal.Signals(-returncode).name
    except ValueError:
        name = f"signal {-returncode}"
    return Exit(code=None, signal=name)


class _RuntimeProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The protocol `asyncio.create_subprocess_exec` uses, plus the two facts it does not expose.

    - The exit, *when it happens*. `Process.wait()` resolves only once the process exited
      **and** every pipe closed: a helper that inherited the runtime's stdout keeps it pending
      forever, and a host that awaits it to learn of the exit hangs. (Python 3.11's
      base_subprocess: the exit waiters are woken in `_call_connection_lost`.)
    - A pipe's end: stdout's EOF (nobody holds it any more), and a write to stdin that failed.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop, runtime: RuntimeProcess):
        super().__init__(limit=limit, loop=loop)
        self._runtime = runtime
        self._runtime_transport: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        assert isinstance(transport, asyncio.SubprocessTransport)
        self._runtime_transport = transport

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        self._runtime._pipe_closed(fd, exc)

    def process_exited(self) -> None:
        super().process_exited()
        assert self._runtime_transport is not None
        returncode = self._runtime_transport.get_returncode()
        assert returncode is not None
        self._runtime._exited(exit_of(returncode))


class RuntimeProcess:
    """One spawned runtime: its pipes, its exit facts and its teardown ladder."""

    def __init__(self) -> None:
        self.process: asyncio.subprocess.Process | None = None
        self.pid = 0
        self.pgid = 0
        self.exit: Exit | None = None  # once it exited (and the child watcher reaped it)
        self.stdout_closed = False
        self._exited_event = asyncio.Event()
        self._exit_callbacks: list[Callable[[], None]] = []
        self._stdin_failed_callbacks: list[Callable[[BaseException], None]] = []
        self.tree: ProcessTree | None = None

    @property
    def stdin(self) -> asyncio.StreamWriter:
        assert self.process is not None and self.process.stdin is not None
        return self.process.stdin

    @property
    def stdout(self) -> asyncio.StreamReader:
        assert self.process is not None and self.process.stdout is not None
        return self.process.stdout

    def _exited(self, exit: Exit) -> None:
        self.exit = exit
        self._exited_event.set()
        callbacks, self._exit_callbacks = self._exit_callbacks, []
        for callback in callbacks:
            callback()

    def _pipe_closed(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.stdout_closed = True
        elif fd == 0 and exc is not None:
            for callback in self._stdin_failed_callbacks:
                callback(exc)

    def on_exit(self, callback: Callable[[], None]) -> None:
        """Calls `callback` once the runtime has exited."""
        if self.exit is not None:
            callback()
        else:
            self._exit_callbacks.append(callback)

    def on_stdin_failed(self, callback: Callable[[BaseException], None]) -> None:
        """Calls `callback` when a write to the runtime's stdin failed (EPIPE: its end is gone)."""
        self._stdin_failed_callbacks.append(callback)

    async def wait_exit(self, seconds: float) -> Exit | None:
        """The exit facts, waiting up to `seconds` for the exit; None if it still runs then."""
        if self.exit is None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._exited_event.wait(), seconds)
        return self.exit

    def tree_gone(self) -> bool:
        """The runtime exited, its stdout closed, its group and helpers are gone."""
        assert self.tree is not None
        if self.exit is None or not self.stdout_closed or self.tree.group_alive():
            return False
        if self.tree.alive():
            return False
        # Everything we knew of is gone: look once more for what we did not know yet.
        self.tree.scan()
        return not self.tree.alive()

    async def wait_tree_gone(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            if self.tree_gone():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            await asyncio.sleep(min(POLL_S, left))

    async def settle(self, *, eof_grace_ms: float, grace_ms: float) -> bool:
        """The teardown ladder. The caller has closed stdin (the EOF that asks the runtime to exit).

        True once the whole tree is gone; False when even SIGKILL's grace did not end it
        (something outside our reach holds its stdout, or a process survives SIGKILL).
        """
        assert self.tree is not None
        # Look at the tree while the runtime surely lives: a helper known only by descent is
        # found now.
        self.tree.scan()
        if await self.wait_tree_gone(eof_grace_ms / 1000):
            return True
        self.tree.signal(signal.SIGTERM)
        if await self.wait_tree_gone(grace_ms / 1000):
            return True
        self.tree.signal(signal.SIGKILL)
        return await self.wait_tree_gone(grace_ms / 1000)


async def spawn_runtime(*, command: Any, args: Any, cwd: str, env: Any, log: Log) -> RuntimeProcess:
    """Spawns the runtime in `cwd` with the scrubbed environment plus `env` and the run's marker.

    Returns once it runs (Popen waits for the exec); raises the spawn error (FileNotFoundError,
    PermissionError, a TypeError for a command that is not a string, …).
    """
    environment, ignored = child_env(os.environ, env if isinstance(env, dict) else None)
    if ignored:
        log(f"ignored non-string runtime env entries: {', '.join(ignored)}")
    marker = f"{os.getpid()}-{next(_markers)}"
    environment[RUN_MARKER] = marker

    loop = asyncio.get_running_loop()
    runtime = RuntimeProcess()
    # What asyncio.create_subprocess_exec does, with the protocol above in place of its own.
    transport, protocol = await loop.subprocess_exec(
        lambda: _RuntimeProtocol(STREAM_LIMIT, loop, runtime),
        command,
        *args,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=None,  # inherited: the runtime writes straight into the host's stderr
        cwd=cwd,
        env=environment,
        start_new_session=True,
    )
    runtime.process = asyncio.subprocess.Process(transport, protocol, loop)
    runtime.pid = runtime.pgid = runtime.process.pid  # a new session: it leads its own group
    runtime.tree = ProcessTree(runtime.pid, f"{RUN_MARKER}={marker}")
    return runtime
