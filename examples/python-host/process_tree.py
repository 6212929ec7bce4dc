"""Which processes belong to one runtime, beyond its process group.

Linux only (it reads /proc); elsewhere it finds nothing and the teardown ladder works on the
process group alone.

Why a host needs this at all: a runtime may start helpers that leave its process group (`setsid`,
a double fork). `os.killpg(pgid, …)` never reaches them, and this host is not a child subreaper,
so an orphaned helper is reparented to whoever is above us. They are still the run's (conform's
docs/settling.md), and there are three ways to know them:

  - descent: it descends from the runtime's pid — only while the runtime lives, so the teardown
    looks before it signals;
  - marker: it inherited the run's marker variable, which the host puts in the runtime's
    environment (see runtime_process.py) — survives orphaning, unless the helper cleared its env;
  - stdio: it holds (not close-on-exec) the pipe the runtime got as stdin or stdout.

A process found once stays known (by pid and start time, so a reused pid is never taken for it)
until it is gone. Zombies count as gone: whoever inherited them reaps them.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal as signals
import sys
from dataclasses import dataclass

SUPPORTED = sys.platform.startswith("linux") and os.path.exists("/proc/self/stat")
_STDIO_LINK = re.compile(r"(socket|pipe):\[\d+\]")
_FLAGS = re.compile(rb"^flags:\s*([0-7]+)", re.MULTILINE)


@dataclass(frozen=True)
class Stat:
    pid: int
    state: str
    ppid: int
    pgrp: int
    start_time: str

    @property
    def gone(self) -> bool:
        return self.state in ("Z", "X")


def read_stat(pid: int) -> Stat | None:
    """/proc/<pid>/stat, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("latin-1")
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: read after the last ')'.
    # fields[0] is field 3 (state); field n is fields[n - 3]; the start time is field 22.
    fields = text[text.rfind(")") + 2 :].split(" ")
    try:
        return Stat(pid, fields[0], int(fields[1]), int(fields[2]), fields[19])
    except (IndexError, ValueError):
        return None


def process_table() -> list[Stat]:
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    return [s for s in (read_stat(int(n)) for n in names if n.isdigit()) if s is not None]


def _descends(parent_of: dict[int, int], pid: int, ancestor: int) -> bool:
    """Is `ancestor` on `pid`'s chain of parents? (Bounded: a table read while processes come and
    go may loop.)"""
    p = pid
    for _ in range(len(parent_of)):
        pp = parent_of.get(p)
        if pp is None or pp <= 1:
            return False
        if pp == ancestor:
            return True
        p = pp
    return False


def _has_env_entry(pid: int, entry: bytes) -> bool:
    """Does `pid`'s environment hold `entry` (`NAME=value`)? Unreadable (another user's): no."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return entry in f.read().split(b"\0")
    except OSError:
        return False


def _holds_any(pid: int, links: list[str]) -> bool:
    """Does `pid` hold one of `links` (`pipe:[inode]`) on a descriptor that survives exec?"""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") not in links:
                continue
            # A close-on-exec copy is not holding: a process between fork and exec has one for a
            # moment.
            with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as f:
                flags = _FLAGS.search(f.read())
            if flags is not None and int(flags.group(1), 8) & os.O_CLOEXEC == 0:
                return True
        except OSError:
            continue
    return False


def _stdio_link(pid: int, fd: int) -> str | None:
    """What /proc/<pid>/fd/<fd> points at, when it is a socket or a pipe (None otherwise)."""
    try:
        link = os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None
    return link if _STDIO_LINK.fullmatch(link) else None


class ProcessTree:
    def __init__(self, pid: int, marker: str) -> None:
        """`pid`: the runtime (also its process group: it leads a session of its own);
        `marker`: the `NAME=value` environment entry the runtime was given."""
        self.pid = pid
        self.pgid = pid
        self._marker = marker.encode()
        self._group_gone = False
        self._known: dict[int, str] = {}  # pid → start time
        root = read_stat(pid) if SUPPORTED else None
        self._root_start_time = root.start_time if root is not None else None
        # Read now, while the runtime surely still has them as its stdin and stdout.
        links = [_stdio_link(pid, 0), _stdio_link(pid, 1)] if SUPPORTED else []
        self._stdio = [link for link in links if link is not None]

    def group_alive(self) -> bool:
        """Is any process of the runtime's process group still running?"""
        if self._group_gone:
            return False
        try:
            os.killpg(self.pgid, 0)
        except PermissionError:
            return True
        except OSError:
            # Once empty, the group id is never ours again (a new group could reuse the number).
            self._group_gone = True
            return False
        # kill() also reaches zombies. A member orphaned when the runtime exited is reaped by
        # whoever inherited it — init, a subreaper, or never (a PID 1 that does not reap): it has
        # ended all the same, so only a member that is not a zombie keeps the group alive.
        if not SUPPORTED:
            return True
        return any(p.pgrp == self.pgid and not p.gone for p in process_table())

    def alive(self) -> list[int]:
        """The known processes that still run (pids)."""
        living = []
        for pid, start_time in list(self._known.items()):
            stat = read_stat(pid)
            if stat is None or stat.gone or stat.start_time != start_time:
                del self._known[pid]
            else:
                living.append(pid)
        return living

    def scan(self) -> None:
        """Reads /proc and adds every process of the run it finds to the known ones."""
        if not SUPPORTED:
            return
        table = process_table()
        parent_of = {p.pid: p.ppid for p in table}
        root_lives = any(p.pid == self.pid and p.start_time == self._root_start_time for p in table)
        me = os.getpid()
        for p in table:
            if p.pid == me or p.gone or p.pid in self._known:
                continue
            ours = (
                (root_lives and (p.pid == self.pid or _descends(parent_of, p.pid, self.pid)))
                or _has_env_entry(p.pid, self._marker)
                or (bool(self._stdio) and _holds_any(p.pid, self._stdio))
            )
            if ours:
                self._known[p.pid] = p.start_time

    def signal(self, sig: signals.Signals) -> None:
        """Sends `sig` to the process group and to every other known process.

        Scans first: a helper known only by descent must be found before the group's signal ends
        the runtime.
        """
        self.scan()
        if self.group_alive():
            with contextlib.suppress(OSError):  # ESRCH: the group emptied meanwhile
                os.killpg(self.pgid, sig)
        for pid in self.alive():
            with contextlib.suppress(OSError):  # ESRCH: gone since alive() looked
                os.kill(pid, sig)
