'use strict';
// Which processes belong to one runtime, beyond its process group. Linux only (it reads /proc);
// elsewhere it finds nothing and the teardown ladder works on the process group alone.
//
// Why a host needs this at all: a runtime may start helpers that leave its process group
// (`setsid`, a double fork). `process.kill(-pgid, …)` never reaches them, and Node cannot make
// the host a child subreaper, so an orphaned helper is reparented to whoever is above us. They
// are still the run's (conform's docs/settling.md), and there are three ways to know them:
//
//   - descent: it descends from the runtime's pid — only while the runtime lives, so the
//     teardown looks before it signals;
//   - marker: it inherited the run's marker variable, which the host puts in the runtime's
//     environment (see runtime-process.js) — survives orphaning, unless the helper cleared its env;
//   - stdio: it holds (not close-on-exec) the socket the runtime got as stdin or stdout.
//
// A process found once stays known (by pid and start time, so a reused pid is never taken for
// it) until it is gone. Zombies count as gone: whoever inherited them reaps them.

const fs = require('node:fs');

const O_CLOEXEC = 0o2000000;
const SUPPORTED = process.platform === 'linux' && fs.existsSync('/proc/self/stat');

/** `{ pid, state, ppid, pgrp, startTime }` from /proc/<pid>/stat, or null once it is gone. */
function readStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return null;
  }
  // The command name (field 2) may hold spaces and parentheses: read after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); field n is fields[n - 3]; the start time is field 22.
  return {
    pid,
    state: fields[0],
    ppid: Number(fields[1]),
    pgrp: Number(fields[2]),
    startTime: fields[19],
  };
}

function processTable() {
  let names;
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  return names.filter((n) => /^\d+$/.test(n)).map((n) => readStat(Number(n))).filter(Boolean);
}

function isGone(stat) {
  return stat === null || stat.state === 'Z' || stat.state === 'X';
}

/** Is `ancestor` on `pid`'s chain of parents? (bounded: a table read while processes come and go may loop) */
function descends(parentOf, pid, ancestor) {
  let p = pid;
  for (let i = 0; i < parentOf.size; i++) {
    const pp = parentOf.get(p);
    if (pp === undefined || pp <= 1) return false;
    if (pp === ancestor) return true;
    p = pp;
  }
  return false;
}

/** Does `pid`'s environment hold `entry` (`NAME=value`)? Unreadable (another user's): no. */
function hasEnvEntry(pid, entry) {
  try {
    return fs.readFileSync(`/proc/${pid}/environ`, 'latin1').split('\0').includes(entry);
  } catch {
    return false;
  }
}

/** Does `pid` hold one of `links` (`socket:[inode]`) on a descriptor that survives exec? */
function holdsAny(pid, links) {
  let fds;
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false;
  }
  return fds.some((fd) => {
    try {
      if (!links.includes(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) return false;
      // A close-on-exec copy is not holding: a process between fork and exec has one for a moment.
      const info = fs.readFileSync(`/proc/${pid}/fdinfo/${fd}`, 'latin1');
      const flags = parseInt(/^flags:\s*([0-7]+)/m.exec(info)[1], 8);
      return (flags & O_CLOEXEC) === 0;
    } catch {
      return false;
    }
  });
}

/** What /proc/<pid>/fd/<fd> points at, when it is a socket or a pipe (null otherwise). */
function stdioLink(pid, fd) {
  try {
    const link = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
    return /^(socket|pipe):\[\d+\]$/.test(link) ? link : null;
  } catch {
    return null;
  }
}

class ProcessTree {
  /**
   * @param {object} o
   * @param {number} o.pid     the runtime's pid (also its process group: it was spawned detached)
   * @param {string} o.marker  the `NAME=value` environment entry the runtime was given
   */
  constructor({ pid, marker }) {
    this.pid = pid;
    this.pgid = pid;
    this.marker = marker;
    this.groupGone = false;
    this.known = new Map(); // pid → start time
    const root = SUPPORTED ? readStat(pid) : null;
    this.rootStartTime = root ? root.startTime : null;
    // Read now, while the runtime surely still has them as its stdin and stdout.
    this.stdio = SUPPORTED ? [stdioLink(pid, 0), stdioLink(pid, 1)].filter(Boolean) : [];
  }

  /** Is any process of the runtime's process group still running? */
  groupAlive() {
    if (this.groupGone) return false;
    try {
      process.kill(-this.pgid, 0);
    } catch (e) {
      if (e.code === 'EPERM') return true;
      // Once empty, the group id is never ours again (a new group could reuse the number).
      this.groupGone = true;
      return false;
    }
    // kill() also reaches zombies. A member orphaned when the runtime exited is reaped by
    // whoever inherited it — init, a subreaper, or never (a PID 1 that does not reap): it has
    // ended all the same, so only a member that is not a zombie keeps the group alive.
    if (!SUPPORTED) return true;
    return processTable().some((p) => p.pgrp === this.pgid && !isGone(p));
  }

  /** The known processes that still run (pids). */
  alive() {
    const living = [];
    for (const [pid, startTime] of this.known) {
      const stat = readStat(pid);
      if (isGone(stat) || stat.startTime !== startTime) this.known.delete(pid);
      else living.push(pid);
    }
    return living;
  }

  /** Reads /proc and adds every process of the run it finds to the known ones. */
  scan() {
    if (!SUPPORTED) return;
    const table = processTable();
    const parentOf = new Map(table.map((p) => [p.pid, p.ppid]));
    const rootLives = table.some((p) => p.pid === this.pid && p.startTime === this.rootStartTime);
    for (const p of table) {
      if (p.pid === process.pid || isGone(p) || this.known.has(p.pid)) continue;
      const ours =
        (rootLives && (p.pid === this.pid || descends(parentOf, p.pid, this.pid))) ||
        hasEnvEntry(p.pid, this.marker) ||
        (this.stdio.length > 0 && holdsAny(p.pid, this.stdio));
      if (ours) this.known.set(p.pid, p.startTime);
    }
  }

  /**
   * Sends `signal` to the process group and to every other known process. Scans first: a helper
   * known only by descent must be found before the group's signal ends the runtime.
   */
  signal(signal) {
    this.scan();
    if (this.groupAlive()) {
      try {
        process.kill(-this.pgid, signal);
      } catch {
        // ESRCH: the group emptied meanwhile.
      }
    }
    for (const pid of this.alive()) {
      try {
        process.kill(pid, signal);
      } catch {
        // Gone since alive() looked.
      }
    }
  }
}

module.exports = { ProcessTree };
