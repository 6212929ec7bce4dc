//! Managed child processes: spawn in an own process group, exit observation, what a run owns
//! (its group, its descendants, and the orphans that come back to this child subreaper with
//! the run's marker), and the teardown ladder over all of it (stdin EOF → SIGTERM → SIGKILL,
//! each bounded).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::watch;
use tokio::time::{Instant, timeout_at};

use crate::diagnostic::ExitFacts;

/// Environment variable names never inherited by a child (`scrubbedParentEnv`).
pub fn is_scrubbed(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["KEY", "PASSWORD", "SECRET", "TOKEN"]
        .iter()
        .any(|w| upper.contains(w))
        || upper.starts_with("DSH_")
}

/// Parent env minus credential-shaped and `DSH_*` names, then `overrides` (a string sets, `null`
/// removes; other JSON values are ignored and reported back).
pub fn child_env(
    parent: impl Iterator<Item = (String, String)>,
    overrides: &serde_json::Map<String, serde_json::Value>,
) -> (HashMap<String, String>, Vec<String>) {
    let mut env: HashMap<String, String> = parent.filter(|(k, _)| !is_scrubbed(k)).collect();
    let mut ignored = Vec::new();
    for (k, v) in overrides {
        match v {
            serde_json::Value::String(s) => {
                env.insert(k.clone(), s.clone());
            }
            serde_json::Value::Null => {
                env.remove(k);
            }
            _ => ignored.push(k.clone()),
        }
    }
    (env, ignored)
}

#[derive(Debug, thiserror::Error)]
#[error("spawn failed: {0}")]
pub struct SpawnError(#[from] std::io::Error);

#[derive(Debug, thiserror::Error)]
#[error("process group {pgid} still alive after SIGKILL and {grace_ms} ms")]
pub struct TeardownError {
    pub pgid: i32,
    pub grace_ms: u128,
}

/// Every runtime's environment carries this name with a value unique to its run, so a
/// descendant that left the runtime's process group and lost its parent (`setsid`, a double
/// fork) is still known as the run's: the environment is inherited through fork and exec.
pub const RUN_MARKER: &str = "CONFORM_REFERENCE_RUN";

/// Pids of the children tokio spawned and awaits (the runtimes). The orphan reaper must never
/// reap one of them, or tokio would lose its exit status; spawning holds the lock until the
/// pid is in the set, so the reaper cannot see a runtime that is not yet listed.
static MANAGED: std::sync::Mutex<std::collections::BTreeSet<i32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// The process groups of the runs this process manages (group id, and the start time of the
/// runtime that leads it), while any handle on each run lives: a process in another run's
/// group is that run's, so a scan for one run reads neither its environment nor its
/// descriptors (at many runs at once they are most of the tree).
static GROUPS: std::sync::Mutex<std::collections::BTreeSet<(i32, u64)>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

/// Lists a run's group in [`GROUPS`] until the last handle on the run is dropped.
struct GroupListed((i32, u64));

impl GroupListed {
    fn new(pgid: i32, leader_start: u64) -> GroupListed {
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
fn other_runs_groups(table: &[Proc], own: i32) -> std::collections::BTreeSet<i32> {
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
static REAPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Reaps every exited child of this process that tokio does not await (an orphan reparented
/// here). Only those pids: `waitpid(-1)` would steal a runtime's exit status from tokio.
/// Returns the ones that could not be reaped yet (a zombie thread-group leader whose other
/// threads are still exiting).
fn reap_orphans() -> Vec<(i32, u64)> {
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
async fn any_exit(procs: &[(i32, u64)]) {
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
fn pidfd_of(pid: i32, start_time: u64) -> Option<std::os::fd::OwnedFd> {
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
fn signal_same(pid: i32, start_time: u64, signal: Signal) {
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

fn start_time_of(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat_full(&stat).map(|(.., t)| t)
}

/// How the teardown ladder runs; every flag but none is a seeded defect.
#[derive(Clone, Copy, Debug, Default)]
pub struct Ladder {
    pub skip_sigterm: bool,
    pub no_sigkill: bool,
    pub group_only: bool,
    pub settled_early: bool,
}

/// A spawned child that leads its own process group.
#[derive(Clone)]
pub struct ManagedChild {
    pid: i32,
    /// The runtime's start time: with pid_max at 32768 a busy machine reuses pids within a
    /// suite, and a dead runtime's pid (and group id) may name another run's process.
    start_time: u64,
    pgid: i32,
    /// This run's value of [`RUN_MARKER`].
    marker: String,
    /// `pipe:[inode]` of the child's stdin, stdout and stderr.
    pipes: Vec<String>,
    exit_rx: watch::Receiver<Option<ExitFacts>>,
    /// What the scans found the run owns (pid, start time), until each is gone.
    known: std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<(i32, u64)>>>,
    /// Its group in [`GROUPS`] while a handle lives.
    _listed: std::sync::Arc<GroupListed>,
}

pub struct Spawned {
    pub child: ManagedChild,
    pub stdin: ChildStdin,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
}

fn facts(status: ExitStatus) -> ExitFacts {
    use std::os::unix::process::ExitStatusExt;
    ExitFacts {
        code: status.code(),
        signal: status.signal(),
    }
}

fn pipe_name(fd: &impl std::os::fd::AsFd) -> Option<String> {
    let st = nix::sys::stat::fstat(fd.as_fd()).ok()?;
    Some(format!("pipe:[{}]", st.st_ino))
}

pub fn spawn(
    command: &str,
    args: &[String],
    cwd: &Path,
    env: &HashMap<String, String>,
) -> Result<Spawned, SpawnError> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let marker = format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let mut cmd = Command::new(command);
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .env(RUN_MARKER, &marker)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = {
        let mut managed = MANAGED.lock().expect("managed pids");
        let child = cmd.spawn()?;
        managed.insert(child.id().expect("a freshly spawned child has a pid") as i32);
        child
    };
    let pid = child.id().expect("a freshly spawned child has a pid") as i32;
    // Not reaped before its waiter below runs, so its stat line is there (a zombie's too).
    let start_time = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| parse_stat_full(&s))
        .map_or(0, |(.., t)| t);
    let stdin = child.stdin.take().expect("piped stdin");
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    let pipes = [pipe_name(&stdin), pipe_name(&stdout), pipe_name(&stderr)]
        .into_iter()
        .flatten()
        .collect();
    let (exit_tx, exit_rx) = watch::channel(None);
    tokio::spawn(async move {
        let observed = match child.wait().await {
            Ok(status) => facts(status),
            Err(_) => ExitFacts::default(),
        };
        MANAGED.lock().expect("managed pids").remove(&pid);
        exit_tx.send_replace(Some(observed));
    });
    Ok(Spawned {
        child: ManagedChild {
            pid,
            start_time,
            pgid: pid,
            marker,
            pipes,
            exit_rx,
            known: Default::default(),
            _listed: std::sync::Arc::new(GroupListed::new(pid, start_time)),
        },
        stdin,
        stdout,
        stderr,
    })
}

impl ManagedChild {
    pub fn pgid(&self) -> i32 {
        self.pgid
    }

    /// The direct child's exit facts once it has exited (and been reaped).
    pub fn exited(&self) -> Option<ExitFacts> {
        *self.exit_rx.borrow()
    }

    /// Watch of the direct child's exit facts (`Some` once it exited and was reaped).
    pub fn exit_watch(&self) -> watch::Receiver<Option<ExitFacts>> {
        self.exit_rx.clone()
    }

    /// Wait up to `bound` for the direct child to exit.
    pub async fn wait_exit(&self, bound: Duration) -> Option<ExitFacts> {
        let mut rx = self.exit_rx.clone();
        let deadline = Instant::now() + bound;
        match timeout_at(deadline, rx.wait_for(|s| s.is_some())).await {
            Ok(Ok(v)) => *v,
            _ => self.exited(),
        }
    }

    /// The live processes this run owns: its process group, every descendant of the runtime,
    /// and every descendant of this process (orphans come here: it is a child subreaper) that
    /// carries the run's [`RUN_MARKER`] or holds one of the runtime's stdio pipes. With
    /// `group_only` (the seeded defect `process-group-only-kill`), the group alone.
    ///
    /// Once found, a process stays the run's until it is gone: a process on its way out has
    /// lost its memory (no environment to read) and then its descriptors before it is a
    /// zombie, and it is not gone before that.
    pub fn owned(&self, group_only: bool) -> Vec<(i32, u64)> {
        self.owned_or_unread(group_only).0
    }

    /// [`Self::owned`], and whether a process that may be the run's could not be read: one
    /// below this process, in no other run's group, between two programs or on its way out
    /// ([`in_transition`]) — its environment reads empty for that instant, so its marker says
    /// nothing yet.
    fn owned_or_unread(&self, group_only: bool) -> (Vec<(i32, u64)>, bool) {
        let table = table();
        let unread = !group_only && self.unread(&table);
        let mut known = self.known.lock().expect("known processes");
        known.retain(|(pid, start)| {
            table.iter().any(|p| {
                p.pid == *pid && p.start_time == *start && p.state != 'Z' && p.state != 'X'
            })
        });
        known.extend(self.found(&table, group_only));
        (known.iter().copied().collect(), unread)
    }

    /// Whether `table` holds a process below this one, in no other run's group, that cannot
    /// be read yet ([`in_transition`]).
    fn unread(&self, table: &[Proc]) -> bool {
        let me = std::process::id() as i32;
        let parent: HashMap<i32, i32> = table.iter().map(|p| (p.pid, p.ppid)).collect();
        let others = other_runs_groups(table, self.pgid);
        table.iter().any(|p| {
            p.pid != me
                && p.state != 'Z'
                && p.state != 'X'
                && !others.contains(&p.pgrp)
                && descends_in(&parent, table.len(), p.pid, me)
                && in_transition(p.pid)
        })
    }

    /// The live processes the scan's criteria find in `table`.
    fn found(&self, table: &[Proc], group_only: bool) -> Vec<(i32, u64)> {
        let me = std::process::id() as i32;
        // Our runtime's pid, and its group id, name ours only while no later process took
        // the number: a group id is free for reuse only once the group is empty.
        let reused = table
            .iter()
            .any(|p| p.pid == self.pid && p.start_time != self.start_time);
        if reused {
            return self.owned_orphans(table, me, group_only);
        }
        let parent: HashMap<i32, i32> = table.iter().map(|p| (p.pid, p.ppid)).collect();
        let descends = |pid: i32, ancestor: i32| descends_in(&parent, table.len(), pid, ancestor);
        let others = other_runs_groups(table, self.pgid);
        table
            .iter()
            .filter(|p| p.pid != me && p.state != 'Z' && p.state != 'X')
            .filter(|p| {
                p.pgrp == self.pgid
                    || (!group_only
                        && (p.pid == self.pid
                            || descends(p.pid, self.pid)
                            || (descends(p.pid, me)
                                && !others.contains(&p.pgrp)
                                && (has_marker(p.pid, &self.marker)
                                    || holds_any(p.pid, &self.pipes)))))
            })
            .map(|p| (p.pid, p.start_time))
            .collect()
    }

    /// What the run owns once its runtime's pid names another process: only the orphans that
    /// came back here with the run's marker or pipes (the group and the runtime's descendants
    /// are gone with it).
    fn owned_orphans(&self, table: &[Proc], me: i32, group_only: bool) -> Vec<(i32, u64)> {
        if group_only {
            return Vec::new();
        }
        let parent: HashMap<i32, i32> = table.iter().map(|p| (p.pid, p.ppid)).collect();
        table
            .iter()
            .filter(|p| p.pid != me && p.state != 'Z' && p.state != 'X')
            .filter(|p| {
                descends_in(&parent, table.len(), p.pid, me)
                    && (has_marker(p.pid, &self.marker) || holds_any(p.pid, &self.pipes))
            })
            .map(|p| (p.pid, p.start_time))
            .collect()
    }

    /// Whole tree gone by `deadline`: the direct child exited, its stdout reached EOF (every
    /// holder of the pipe is gone), no owned process lives and the orphans among them are
    /// reaped.
    pub async fn wait_tree(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        deadline: Instant,
        group_only: bool,
    ) -> bool {
        let mut exit_rx = self.exit_rx.clone();
        let mut eof_rx = stdout_eof.clone();
        timeout_at(deadline, async move {
            let _ = exit_rx.wait_for(|s| s.is_some()).await;
            let _ = eof_rx.wait_for(|e| *e).await;
            // Scan, then await the exit of what the scan found (a pidfd per process) and
            // scan again: what one of them forked meanwhile is found by the next scan.
            loop {
                let (mut pending, unread) = self.owned_or_unread(group_only);
                if pending.is_empty() && unread {
                    // A process mid-exec (or mid-exit) cannot say whose it is for an instant,
                    // and nothing signals when it can: look again at once.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                if pending.is_empty() {
                    // Nothing of the run runs: what exited before the scan is a zombie now,
                    // reaped here before anyone is told the tree is gone. A zombie leader whose
                    // other threads still exit cannot be reaped yet: await it too.
                    pending = reap_orphans();
                    if pending.is_empty() {
                        break;
                    }
                }
                any_exit(&pending).await;
            }
        })
        .await
        .is_ok()
    }

    /// Sends `signal` to the group and to every other process the run owns. By pid, just
    /// after the scan that found it alive (a pid reused in between would need the whole pid
    /// space to wrap around in that window). The scan comes first: a helper that left the group
    /// and holds nothing of the run is the run's only by descent, and only while the runtime
    /// lives — which the group's signal may end before a later scan.
    pub fn signal_tree(&self, signal: Signal, group_only: bool) {
        let owned = self.owned(group_only);
        let leader = std::fs::read_to_string(format!("/proc/{}/stat", self.pgid))
            .ok()
            .and_then(|s| parse_stat_full(&s));
        if leader.is_none_or(|(.., t)| t == self.start_time) {
            // ESRCH (already gone) is fine.
            let _ = killpg(Pid::from_raw(self.pgid), signal);
        }
        for (pid, start_time) in owned {
            signal_same(pid, start_time, signal);
        }
    }

    /// The ladder: stdin must already be closed by the caller. Wait `eof_grace` for the whole
    /// tree, then SIGTERM it and wait `grace`, then SIGKILL and wait `grace`.
    pub async fn settle(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        eof_grace: Duration,
        grace: Duration,
        ladder: Ladder,
    ) -> Result<(), TeardownError> {
        if ladder.settled_early {
            // Seeded defect: the ladder goes on behind the claim, which waits only for the
            // direct child.
            let this = self.clone();
            let eof = stdout_eof.clone();
            tokio::spawn(async move { this.ladder(&eof, eof_grace, grace, ladder).await });
            let _ = self.wait_exit(eof_grace + grace + grace).await;
            return Ok(());
        }
        self.ladder(stdout_eof, eof_grace, grace, ladder).await
    }

    async fn ladder(
        &self,
        stdout_eof: &watch::Receiver<bool>,
        eof_grace: Duration,
        grace: Duration,
        ladder: Ladder,
    ) -> Result<(), TeardownError> {
        let group_only = ladder.group_only;
        if self
            .wait_tree(stdout_eof, Instant::now() + eof_grace, group_only)
            .await
        {
            return Ok(());
        }
        // `skip_sigterm` is the seeded defect `skip-sigterm` (straight to SIGKILL).
        if !ladder.skip_sigterm {
            self.signal_tree(Signal::SIGTERM, group_only);
            if self
                .wait_tree(stdout_eof, Instant::now() + grace, group_only)
                .await
            {
                return Ok(());
            }
        }
        // `no_sigkill` is the seeded defect `no-sigkill-rung`.
        if !ladder.no_sigkill {
            self.signal_tree(Signal::SIGKILL, group_only);
            if self
                .wait_tree(stdout_eof, Instant::now() + grace, group_only)
                .await
            {
                return Ok(());
            }
        }
        Err(TeardownError {
            pgid: self.pgid,
            grace_ms: grace.as_millis(),
        })
    }
}

/// Is `ancestor` on `pid`'s chain of parents?
fn descends_in(parent: &HashMap<i32, i32>, bound: usize, pid: i32, ancestor: i32) -> bool {
    let mut p = pid;
    // Bounded: a table read while processes come and go could hold a cycle.
    for _ in 0..bound {
        match parent.get(&p) {
            Some(&pp) if pp == ancestor => return true,
            Some(&pp) if pp > 1 => p = pp,
            _ => return false,
        }
    }
    false
}

/// One line of the process table.
struct Proc {
    pid: i32,
    ppid: i32,
    pgrp: i32,
    state: char,
    start_time: u64,
}

/// Whether this process is a child subreaper (then every process a run starts stays below it).
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Processes seen outside this one's tree, each held by a pidfd until it exits.
static OUTSIDE: std::sync::Mutex<BTreeMap<i32, std::os::fd::OwnedFd>> =
    std::sync::Mutex::new(BTreeMap::new());

/// The processes a run of ours may own, from `/proc` (empty without it): every process, or —
/// once this process is a subreaper — this one and everything below it. A process outside
/// never comes in (reparenting moves a process up, to the nearest subreaper), so one seen
/// outside is held by a pidfd and not read again until it exits: most of a machine's processes
/// are outside, and the table is read several times a run.
fn table() -> Vec<Proc> {
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
fn side_of(
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
fn exited(pidfd: &std::os::fd::OwnedFd) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    use std::os::fd::AsFd;
    let mut fds = [PollFd::new(pidfd.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::ZERO).is_ok_and(|n| n > 0)
}

/// Is `pid` between two programs or on its way out: no command line and no environment to
/// read (the kernel sets both only once `execve` has built the new image, and drops them with
/// the memory at exit; a process already gone reads as neither). A program exec'd with an
/// empty environment still has its command line.
fn in_transition(pid: i32) -> bool {
    // Without its memory (exiting, or a zombie), reading the environment fails (ESRCH).
    let empty =
        |what: &str| std::fs::read(format!("/proc/{pid}/{what}")).map_or(true, |b| b.is_empty());
    empty("cmdline") && empty("environ")
}

/// Does `pid`'s initial environment hold `RUN_MARKER=marker`?
fn has_marker(pid: i32, marker: &str) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{RUN_MARKER}={marker}");
    env.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
}

/// Does `pid` hold an open fd on one of these (`pipe:[inode]`) that survives exec? A
/// close-on-exec copy is not holding: a child of this process between fork and exec has a copy
/// of every run's pipe ends (all close-on-exec), and would otherwise be taken for every run's.
fn holds_any(pid: i32, pipes: &[String]) -> bool {
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
    fds.iter().any(|fd| {
        readlinkat(&dir, fd.as_c_str())
            .is_ok_and(|target| pipes.iter().any(|p| target.as_os_str() == p.as_str()))
            && !close_on_exec(pid, &fd.to_string_lossy())
    })
}

/// Is `pid`'s descriptor `fd` close-on-exec (`O_CLOEXEC` in `/proc/<pid>/fdinfo/<fd>`), or
/// already closed?
fn close_on_exec(pid: i32, fd: &str) -> bool {
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
fn group_alive(pgid: i32) -> bool {
    table()
        .iter()
        .any(|p| p.pgrp == pgid && p.state != 'Z' && p.state != 'X')
}

/// `(state, ppid, pgrp, start time)` from a `/proc/<pid>/stat` line (the command name may
/// contain spaces and parentheses, so fields are read after the last `)`); the start time (field 22, clock ticks since boot) tells a
/// process from a later one that reuses its pid.
fn parse_stat_full(stat: &str) -> Option<(char, i32, i32, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    let start_time = fields.nth(22 - 6)?.parse().ok()?;
    Some((state, ppid, pgrp, start_time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrub_rules() {
        for name in [
            "API_KEY",
            "my_password",
            "Secret",
            "GH_TOKEN",
            "dsh_home",
            "DSH_X",
        ] {
            assert!(is_scrubbed(name), "{name}");
        }
        for name in ["PATH", "HOME", "XDSH_A", "LANG"] {
            assert!(!is_scrubbed(name), "{name}");
        }
        let mut o = serde_json::Map::new();
        o.insert("DSH_OK".into(), "1".into());
        o.insert("PATH".into(), serde_json::Value::Null);
        o.insert("N".into(), 3.into());
        let (env, ignored) = child_env(
            vec![
                ("PATH".to_string(), "/bin".to_string()),
                ("API_KEY".to_string(), "x".to_string()),
                ("HOME".to_string(), "/h".to_string()),
            ]
            .into_iter(),
            &o,
        );
        assert_eq!(env.get("DSH_OK").map(String::as_str), Some("1"));
        assert!(!env.contains_key("PATH"));
        assert!(!env.contains_key("API_KEY"));
        assert_eq!(env.get("HOME").map(String::as_str), Some("/h"));
        assert_eq!(ignored, vec!["N".to_string()]);
    }

    #[test]
    fn a_process_without_its_memory_is_in_transition_and_a_cleared_environment_is_not() {
        // A program started with an empty environment still has its command line.
        let mut cleared = std::process::Command::new("sleep")
            .arg("30")
            .env_clear()
            .spawn()
            .unwrap();
        let pid = cleared.id() as i32;
        // Until its exec is done the child is a copy of this one: wait for `sleep` to show.
        while std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|c| !c.starts_with("sleep"))
        {
            std::thread::yield_now();
        }
        assert!(!in_transition(pid));
        assert!(!in_transition(std::process::id() as i32));
        // Exited, not yet reaped (awaited without reaping): no memory, so neither command line
        // nor environment.
        cleared.kill().unwrap();
        use nix::sys::wait::{Id, WaitPidFlag, waitid};
        waitid(
            Id::Pid(Pid::from_raw(pid)),
            WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
        )
        .unwrap();
        assert!(in_transition(pid));
        cleared.wait().unwrap();
    }

    #[test]
    fn a_process_is_ours_outside_or_undecided_by_its_chain_of_parents() {
        // 1 → 10 → 20 (us) → 30; 40 hangs under 35, known outside; 50's parent is gone.
        let parent: HashMap<i32, i32> =
            [(1, 0), (10, 1), (20, 10), (30, 20), (40, 35), (50, 45)].into();
        let (_r, w) = std::io::pipe().unwrap();
        let outside: BTreeMap<i32, std::os::fd::OwnedFd> = [(35, w.into())].into();
        let side = |pid| side_of(&parent, &outside, pid, 20);
        assert_eq!(side(30), Some(true));
        assert_eq!(side(20), Some(true));
        assert_eq!(side(10), Some(false));
        assert_eq!(side(40), Some(false));
        assert_eq!(side(50), None);
    }

    #[test]
    fn stat_parsing() {
        let tail = " 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 4242 0";
        assert_eq!(
            parse_stat_full(&format!("123 (a (b) c) S 1 77 77{tail}")),
            Some(('S', 1, 77, 4242))
        );
        assert_eq!(
            parse_stat_full(&format!("9 (z) Z 1 9 9{tail}")),
            Some(('Z', 1, 9, 4242))
        );
        let own = std::fs::read_to_string("/proc/self/stat").unwrap();
        assert!(parse_stat_full(&own).is_some_and(|(.., t)| t > 0));
    }

    #[test]
    fn another_runs_group_counts_only_while_its_runtime_leads_it() {
        let p = |pid, start_time, state| Proc {
            pid,
            ppid: 1,
            pgrp: pid,
            state,
            start_time,
        };
        // Pids far from any this test process could hold, listed as other runs' groups.
        let _live = GroupListed::new(4_000_001, 7);
        let _reused = GroupListed::new(4_000_002, 7);
        let _exited = GroupListed::new(4_000_003, 7);
        let _own = GroupListed::new(4_000_004, 7);
        let table = [
            p(4_000_001, 7, 'S'),
            // The id came round: a new session leader took it.
            p(4_000_002, 9, 'S'),
            p(4_000_003, 7, 'Z'),
            p(4_000_004, 7, 'S'),
        ];
        let groups = other_runs_groups(&table, 4_000_004);
        assert!(groups.contains(&4_000_001));
        for pgid in [4_000_002, 4_000_003, 4_000_004] {
            assert!(!groups.contains(&pgid), "{pgid}");
        }
    }

    #[tokio::test]
    async fn ladder_kills_term_trapping_tree() {
        let env: HashMap<String, String> = std::env::vars().collect();
        // The shell traps TERM and its background child ignores it too.
        let script = "trap '' TERM; (trap '' TERM; sleep 30) & sleep 30; wait";
        let sp = spawn(
            "/bin/sh",
            &["-c".into(), script.into()],
            Path::new("/"),
            &env,
        )
        .unwrap();
        let (eof_tx, eof_rx) = watch::channel(false);
        let stdout = sp.stdout;
        tokio::spawn(async move {
            let mut s = stdout;
            let mut buf = Vec::new();
            let _ = tokio::io::AsyncReadExt::read_to_end(&mut s, &mut buf).await;
            eof_tx.send_replace(true);
        });
        drop(sp.stdin);
        let pgid = sp.child.pgid();
        let started = Instant::now();
        sp.child
            .settle(
                &eof_rx,
                Duration::from_millis(100),
                Duration::from_millis(300),
                Ladder::default(),
            )
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_secs(3));
        assert!(!group_alive(pgid));
        assert_eq!(sp.child.exited().unwrap().signal, Some(libc::SIGKILL));
    }
}
