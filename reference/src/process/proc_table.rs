//! The process table as `/proc` shows it to this process: the processes a run may own, what
//! each one's environment, descriptors and `stat` line say.

use super::*;

/// One line of the process table.
pub(super) struct Proc {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
    pub(super) state: char,
    pub(super) start_time: u64,
}

/// Whether this process is a child subreaper (then every process a run starts stays below it).
pub(super) static SUBREAPER: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Processes seen outside this one's tree, each held by a pidfd until it exits.
pub(super) static OUTSIDE: std::sync::Mutex<BTreeMap<i32, std::os::fd::OwnedFd>> =
    std::sync::Mutex::new(BTreeMap::new());

/// The processes a run of ours may own, from `/proc` (empty without it): every process, or —
/// once this process is a subreaper — this one and everything below it. A process outside
/// never comes in (reparenting moves a process up, to the nearest subreaper), so one seen
/// outside is held by a pidfd and not read again until it exits: most of a machine's processes
/// are outside, and the table is read several times a run.
pub(super) fn table() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let subreaper = SUBREAPER.load(std::sync::atomic::Ordering::Relaxed);
    let mut outside = OUTSIDE.lock().unwrap_or_else(|e| e.into_inner());
    if subreaper {
        outside.retain(|_, fd| !exited(fd));
    }
    let procs: Vec<Proc> = dir
        .flatten()
        .filter_map(|entry| {
            let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
            if outside.contains_key(&pid) {
                return None;
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (state, ppid, pgrp, start_time) = parse_stat_full(&stat)?;
            Some(Proc {
                pid,
                ppid,
                pgrp,
                state,
                start_time,
            })
        })
        .collect();
    if !subreaper {
        return procs;
    }
    let me = std::process::id() as i32;
    let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
    let mut mine = Vec::new();
    for p in procs {
        match side_of(&parent, &outside, p.pid, me) {
            Some(true) => mine.push(p),
            Some(false) => {
                if let Some(fd) = pidfd_of(p.pid, p.start_time) {
                    outside.insert(p.pid, fd);
                }
            }
            // Its chain breaks at a parent that exited between two reads: looked at again next
            // time.
            None => {}
        }
    }
    mine
}

/// Whether `pid` is `me` or below it (`Some(true)`), certainly outside (its chain of parents
/// reaches the top, pid 0, or a process known outside), or undecided.
pub(super) fn side_of(
    parent: &HashMap<i32, i32>,
    outside: &BTreeMap<i32, std::os::fd::OwnedFd>,
    pid: i32,
    me: i32,
) -> Option<bool> {
    let mut at = pid;
    for _ in 0..=parent.len() {
        if at == me {
            return Some(true);
        }
        if at == 0 || outside.contains_key(&at) {
            return Some(false);
        }
        at = *parent.get(&at)?;
    }
    None
}

/// Has the process behind `pidfd` exited (the pidfd is readable)?
pub(super) fn exited(pidfd: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
}

/// Is `pid` between two programs or on its way out: no command line and no environment to
/// read (the kernel sets both only once `execve` has built the new image, and drops them with
/// the memory at exit; a process already gone reads as neither). A program exec'd with an
/// empty environment still has its command line.
pub(super) fn in_transition(pid: i32) -> bool {
    // Without its memory (exiting, or a zombie), reading the environment fails (ESRCH).
    let empty =
        |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).map_or(true, |b| b.is_empty());
    empty("cmdline") && empty("environ")
}

/// Does `pid`'s initial environment hold `RUN_MARKER=marker`?
pub(super) fn has_marker(pid: i32, marker: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{RUN_MARKER}={marker}");
    env.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
}

/// Does `pid` hold an open fd on one of these (`pipe:[inode]`) that survives exec? A
/// close-on-exec copy is not holding: a child of this process between fork and exec has a copy
/// of every run's pipe ends (all close-on-exec), and would otherwise be taken for every run's.
pub(super) fn holds_any(pid: i32, pipes: &[String]) -> bool {
    holds_any_kept(pid, pipes, |fd| !close_on_exec(pid, fd))
}

/// [`holds_any`], with `kept` telling whether a descriptor survives exec. The link is read
/// again once `kept` has answered: a child read between fork and exec and asked of after its
/// exec (this thread preempted in between) has another file under that number, which `kept`
/// judged — another run's runtime was taken for this run's and sent its SIGTERM.
pub(super) fn holds_any_kept(pid: i32, pipes: &[String], kept: impl Fn(&str) -> bool) -> bool {
    use nix::fcntl::{OFlag, readlinkat};
    // One handle on the folder, each link read relative to it: not a walk of `/proc` per fd.
    let Ok(mut dir) = nix::dir::Dir::open(
        format!("/proc/{pid}/fd").as_str(),
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    ) else {
        return false;
    };
    let fds: Vec<std::ffi::CString> = dir
        .iter()
        .flatten()
        .map(|e| e.file_name().to_owned())
        .collect();
    let link = |fd: &std::ffi::CStr| {
        readlinkat(&dir, fd).ok().and_then(|target| {
            pipes
                .iter()
                .find(|p| target.as_os_str() == p.as_str())
                .cloned()
        })
    };
    fds.iter().any(|fd| {
        link(fd.as_c_str()).is_some_and(|pipe| {
            kept(&fd.to_string_lossy()) && link(fd.as_c_str()).as_ref() == Some(&pipe)
        })
    })
}

/// Is `pid`'s descriptor `fd` close-on-exec (`O_CLOEXEC` in `/proc/<pid>/fdinfo/<fd>`), or
/// already closed?
pub(super) fn close_on_exec(pid: i32, fd: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}"))
        .ok()
        .and_then(|info| {
            let flags = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
            u32::from_str_radix(flags.trim(), 8).ok()
        })
        // Unreadable: the fd was closed after it was listed (an exec closed it), so it is
        // not held either.
        .is_none_or(|flags| flags & libc::O_CLOEXEC as u32 != 0)
}

/// Is any non-zombie process in process group `pgid`? (zombies count as gone: pid 1 in a
/// container may never reap them).
#[cfg(test)]
pub(super) fn group_alive(pgid: i32) -> bool {
    table()
        .iter()
        .any(|p| p.pgrp == pgid && p.state != 'Z' && p.state != 'X')
}

/// `(state, ppid, pgrp, start time)` from a `/proc/<pid>/stat` line (the command name may
/// contain spaces and parentheses, so fields are read after the last `)`); the start time (field 22, clock ticks since boot) tells a
/// process from a later one that reuses its pid.
pub(super) fn parse_stat_full(stat: &str) -> Option<(char, i32, i32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let start_time = fields.nth(22 - 6)?.parse().ok()?;
    Some((state, ppid, pgrp, start_time))
}
