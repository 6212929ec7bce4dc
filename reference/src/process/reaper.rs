//! This process as the reaper of its runs' orphans, and the pidfd-safe ways it names one
//! process: the managed children tokio awaits, the runs' groups, waiting on and signalling a
//! process seen at a start time (never a later one that took its pid).

use super::*;

/// Pids of the children tokio spawned and awaits (the runtimes). The orphan reaper must never
/// reap one of them, or tokio would lose its exit status; spawning holds the lock until the
/// pid is in the set, so the reaper cannot see a runtime that is not yet listed.
pub(super) static MANAGED: std::sync::Mutex<std::collections::BTreeSet<i32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// The process groups of the runs this process manages (group id, and the start time of the
/// runtime that leads it), while any handle on each run lives: a process in another run's
/// group is that run's, so a scan for one run reads neither its environment nor its
/// descriptors (at many runs at once they are most of the tree).
pub(super) static GROUPS: std::sync::Mutex<std::collections::BTreeSet<(i32, u64)>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Lists a run's group in [`GROUPS`] until the last handle on the run is dropped.
pub(super) struct GroupListed((i32, u64));

impl GroupListed {
    pub(super) fn new(pgid: i32, leader_start: u64) -> GroupListed {
        GROUPS
            .lock()
            .expect("run groups")
            .insert((pgid, leader_start));
        GroupListed((pgid, leader_start))
    }
}

impl Drop for GroupListed {
    fn drop(&mut self) {
        GROUPS.lock().expect("run groups").remove(&self.0);
    }
}

/// The other runs' groups that are still theirs in `table`: led by the runtime that started
/// them. A group whose leader is gone may have emptied and its id been taken by a new session
/// (pids come round within a suite: pid_max is often 32768), so it proves nothing.
pub(super) fn other_runs_groups(table: &[Proc], own: i32) -> std::collections::BTreeSet<i32> {
    let listed = GROUPS.lock().expect("run groups").clone();
    listed
        .into_iter()
        .filter(|&(pgid, start)| {
            pgid != own
                && table.iter().any(|p| {
                    p.pid == pgid && p.start_time == start && p.state != 'Z' && p.state != 'X'
                })
        })
        .map(|(pgid, _)| pgid)
        .collect()
}

/// Makes this process the reaper of its descendants' orphans (`PR_SET_CHILD_SUBREAPER`), so a
/// runtime's descendant that escaped its process group comes back here instead of to init:
/// it stays a descendant (findable, killable) and is reaped here. Reaps orphans as they exit,
/// unless `reap_late` (the seeded defect `reap-orphans-late`).
pub fn become_reaper(reap_late: bool) {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER only sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return;
    }
    SUBREAPER.store(true, std::sync::atomic::Ordering::Relaxed);
    if reap_late {
        // Seeded defect `reap-orphans-late`: orphans stay zombies until the subject exits.
        return;
    }
    let Ok(mut sigchld) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())
    else {
        return;
    };
    REAPING.store(true, std::sync::atomic::Ordering::Relaxed);
    tokio::spawn(async move {
        while sigchld.recv().await.is_some() {
            reap_orphans();
        }
    });
}

/// Orphans are reaped here (not left to the seeded defect `reap-orphans-late`).
pub(super) static REAPING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Reaps every exited child of this process that tokio does not await (an orphan reparented
/// here). Only those pids: `waitpid(-1)` would steal a runtime's exit status from tokio.
/// Returns the ones that could not be reaped yet (a zombie thread-group leader whose other
/// threads are still exiting).
pub(super) fn reap_orphans() -> Vec<(i32, u64)> {
    if !REAPING.load(std::sync::atomic::Ordering::Relaxed) {
        return Vec::new();
    }
    let me = std::process::id() as i32;
    let managed = MANAGED.lock().expect("managed pids");
    let mut unreaped = Vec::new();
    for p in table() {
        if p.ppid == me && p.state == 'Z' && !managed.contains(&p.pid) {
            let reaped = nix::sys::wait::waitpid(
                Pid::from_raw(p.pid),
                Some(nix::sys::wait::WaitPidFlag::WNOHANG),
            );
            if matches!(reaped, Ok(nix::sys::wait::WaitStatus::StillAlive)) {
                unreaped.push((p.pid, p.start_time));
            }
        }
    }
    unreaped
}

/// Returns once one of `procs` (pid, start time) has exited, or at once when one is already
/// gone. A pidfd becomes readable when its process exits, so nothing is polled.
pub(super) async fn any_exit(procs: &[(i32, u64)]) {
    let mut waits = tokio::task::JoinSet::new();
    for &(pid, start_time) in procs {
        let Some(fd) = pidfd_of(pid, start_time) else {
            return;
        };
        // SAFETY: the AsyncFd owns the pidfd, so it stays open while registered and is
        // deregistered before it is closed.
        let Ok(afd) = (unsafe {
            tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE)
        }) else {
            return;
        };
        waits.spawn(async move {
            let _ = afd.readable().await;
        });
    }
    let _ = waits.join_next().await;
}

/// A pidfd of the process `pid` names now, if that is still the one seen at `start_time`: opened
/// first, then checked, so a pid reused after the check cannot be behind it.
pub(super) fn pidfd_of(pid: i32, start_time: u64) -> Option<std::os::fd::OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the fd was just returned by pidfd_open and is owned by nothing else.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd as i32) };
    (start_time_of(pid) == Some(start_time)).then_some(fd)
}

/// Sends `signal` to the process seen at (`pid`, `start_time`) — never to a later process that
/// took the pid (on a busy machine with a small pid space, a pid comes round again in seconds).
pub(super) fn signal_same(pid: i32, start_time: u64, signal: Signal) {
    use std::os::fd::AsRawFd;
    let Some(fd) = pidfd_of(pid, start_time) else {
        return;
    };
    // SAFETY: a valid pidfd, a signal number, no siginfo, no flags. ESRCH (gone) is fine.
    unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal as i32,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        );
    }
}

pub(super) fn start_time_of(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_full(&stat).map(|(.., t)| t)
}
