//! Ground truth of a run's process tree, read from the kernel rather than from the fakes'
//! registrations alone: which processes are the run's, and — at the moment the subject claims
//! the tree is gone (`settled`, or a start rejection) — whether each still runs, has exited
//! but is not reaped (and whose duty reaping is), or is gone; and who still holds the
//! runtime's stdio pipes.
//!
//! A process is the run's when it registered, when its arguments carry the run's id (every
//! fake process, also one that double-forked and never registered), when it descends from one
//! of those, or when it is a launcher: an ancestor between the subject and a member whose
//! every child is the run's (a `sh -c` in front of the runtime; never a process several runs
//! share).

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::proc::pids::{self, Stat};

/// The environment variable every runtime is started with (in `start.runtime.env`): the
/// suite's side socket and the run's id. Whatever the runtime starts inherits it, also a
/// program conform did not write whose arguments say nothing of the run.
pub const ENV_MARK: &str = "CONFORM_RUN";

/// Why a process counts as the run's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum How {
    Registered,
    /// Its arguments carry `--run <run>`.
    Marked,
    /// Its environment carries the run's [`ENV_MARK`].
    Environment,
    /// It is in the run's cgroup (`--cgroup`).
    Cgroup,
    /// It holds one of the runtime's stdio pipes (inherited, not a close-on-exec copy).
    Pipe,
    Descendant,
    Launcher,
}

impl How {
    pub fn as_str(self) -> &'static str {
        match self {
            How::Registered => "registered",
            How::Marked => "marked with the run's id",
            How::Environment => "the run's mark in its environment",
            How::Cgroup => "in the run's cgroup",
            How::Pipe => "holds the runtime's stdio",
            How::Descendant => "a descendant",
            How::Launcher => "a launcher",
        }
    }
}

/// One process of the run.
#[derive(Clone, Debug)]
pub struct Member {
    pub pid: i32,
    pub start_time: u64,
    pub how: How,
    pub command: String,
}

impl Member {
    pub fn describe(&self) -> String {
        format!("pid {} ({}; {})", self.pid, self.command, self.how.as_str())
    }
}

/// A member's state when the subject made its claim.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum State {
    Running,
    /// Exited, not yet reaped by its parent.
    Zombie,
    /// Exited and reaped.
    Gone,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AtClaim {
    pub pid: i32,
    pub how: How,
    pub command: String,
    pub state: State,
    /// For a zombie: who must reap it (its parent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reaper: Option<String>,
    /// The zombie's parent is the subject: reaping it is the subject's duty.
    #[serde(skip)]
    pub subject_must_reap: bool,
}

/// A process other than the subject and the harness holding one of the runtime's stdio pipes.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Holder {
    pub pid: i32,
    pub command: String,
    pub pipe: String,
}

/// The tree as it stood when the subject claimed it was gone.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    /// `settled` or `start_rejected`.
    pub what: &'static str,
    pub at_ms: u64,
    pub members: Vec<AtClaim>,
    pub holders: Vec<Holder>,
    /// The run's cgroup then (`--cgroup`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<CgroupAtClaim>,
}

/// The run's cgroup at the claim: `populated` is the kernel's own word on whether anything of
/// the run still lives.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CgroupAtClaim {
    pub dir: String,
    pub populated: bool,
    pub pids: Vec<i32>,
}

/// The harness's own process tree: every process of a run is in it.
struct Table {
    all: BTreeMap<i32, Stat>,
}

impl Table {
    fn read() -> Table {
        Table {
            all: crate::proc::own_tree::read().into_iter().collect(),
        }
    }

    /// Every process below `root` (not `root` itself).
    fn descendants_of(&self, root: i32) -> std::collections::HashSet<i32> {
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for (&pid, st) in &self.all {
            children.entry(st.ppid).or_default().push(pid);
        }
        let mut out = std::collections::HashSet::new();
        let mut frontier = vec![root];
        while let Some(p) = frontier.pop() {
            for &c in children.get(&p).into_iter().flatten() {
                if out.insert(c) {
                    frontier.push(c);
                }
            }
        }
        out
    }

    fn is(&self, pid: i32, start_time: u64) -> Option<&Stat> {
        self.all.get(&pid).filter(|s| s.start_time == start_time)
    }
}

/// A run's id as its processes carry it: `--side <socket> … --run <run>` (the socket is this
/// suite's own, so another conform on the machine with the same run ids is never confused
/// with this one).
#[derive(Clone, Debug)]
pub struct Mark {
    pub side: String,
    pub run: crate::proc::run_id::RunId,
}

impl Mark {
    /// The value of [`ENV_MARK`] for this run.
    pub fn env_value(&self) -> String {
        format!("{} {}", self.side, self.run)
    }
}

/// Does `pid`'s initial environment carry `mark`?
fn marked_in_env(pid: i32, mark: &Mark) -> bool {
    let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let want = format!("{ENV_MARK}={}", mark.env_value());
    env.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
}

/// Does `pid`'s command line carry `mark`?
fn marked(pid: i32, mark: &Mark) -> bool {
    let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let args: Vec<&[u8]> = raw.split(|&b| b == 0).collect();
    let has = |flag: &[u8], value: &str| {
        args.windows(2)
            .any(|w| w[0] == flag && w[1] == value.as_bytes())
    };
    has(b"--run", &mark.run) && has(b"--side", &mark.side)
}

/// Every process known to be the run's so far, found by scans at the moments that matter (a
/// registration, a spawn, the claim, the run's end): a process that is the run's only while
/// it lives (a launcher, an unregistered daemon) must be seen alive once to be known at all.
pub struct Tracker {
    mark: Mark,
    subject_pgid: i32,
    /// The run's cgroup (`--cgroup`): its members are the run's whatever else they say.
    cgroup: Option<crate::proc::cgroup::RunGroup>,
    known: Vec<Tracked>,
}

pub struct Tracked {
    pub member: Member,
    /// Unregistered members only (registrations bring their own).
    pub pidfd: Option<std::sync::Arc<std::os::fd::OwnedFd>>,
}

impl Tracker {
    pub fn new(
        mark: Mark,
        subject_pgid: i32,
        cgroup: Option<crate::proc::cgroup::RunGroup>,
    ) -> Tracker {
        Tracker {
            mark,
            subject_pgid,
            cgroup,
            known: Vec::new(),
        }
    }

    pub fn cgroup(&self) -> Option<&crate::proc::cgroup::RunGroup> {
        self.cgroup.as_ref()
    }

    /// Scans `/proc` for the run's processes; a new unregistered one gets a pidfd and an exit
    /// watch that tells the run when it is gone ([`RunEvent::ProcessGone`]).
    /// `registered`: pid, start time and role of each registration.
    /// `pipes`: the runtime's stdio (`pipe:[inode]`), as its registration names them.
    pub fn scan(
        &mut self,
        registrations: &Registrations,
        pipes: &[String],
        router: &std::sync::Arc<crate::proc::router::Router>,
    ) {
        let registered = &registrations.own;
        let ids: Vec<(i32, u64)> = registered.iter().map(|r| (r.0, r.1)).collect();
        let in_cgroup = self
            .cgroup
            .as_ref()
            .map(crate::proc::cgroup::RunGroup::procs)
            .unwrap_or_default();
        let table = Table::read();
        let claimed = Claimed {
            own: &ids,
            elsewhere: &registrations.elsewhere,
            in_cgroup: &in_cgroup,
        };
        for mut m in members_in(&table, &self.mark, &claimed, pipes, self.subject_pgid) {
            if let Some(k) = self
                .known
                .iter_mut()
                .find(|k| k.member.pid == m.pid && k.member.start_time == m.start_time)
            {
                // Known already: it is described as it is now (a helper seen before it exec'd
                // is what it exec'd into), while it still runs.
                if m.command != "[]" && k.member.how != How::Registered {
                    k.member.command = m.command;
                    k.member.how = m.how;
                }
                continue;
            }
            if m.command == "[]" {
                // Gone before this scan: its registration still names its role.
                if let Some(r) = registered.iter().find(|r| r.0 == m.pid) {
                    m.command = r.2.to_owned();
                }
            }
            let pidfd = (m.how != How::Registered)
                .then(|| pids::pidfd_open(m.pid).ok())
                .flatten()
                .filter(|_| pids::alive(m.pid, m.start_time))
                .map(std::sync::Arc::new);
            if let Some(fd) = &pidfd {
                let (fd, router, run, pid) =
                    (fd.clone(), router.clone(), self.mark.run.clone(), m.pid);
                tokio::spawn(async move {
                    // Bounded only so a task cannot outlive an unkillable stray forever.
                    if pids::wait_exit(&fd, std::time::Duration::from_secs(24 * 3600)).await {
                        router.send(&run, crate::proc::router::RunEvent::ProcessGone { pid });
                    }
                });
            }
            self.known.push(Tracked { member: m, pidfd });
        }
    }

    pub fn members(&self) -> Vec<Member> {
        self.known.iter().map(|k| k.member.clone()).collect()
    }

    /// The members that never registered.
    pub fn unregistered(&self) -> impl Iterator<Item = &Tracked> {
        self.known
            .iter()
            .filter(|k| k.member.how != How::Registered)
    }
}

/// What the side channel says at a scan.
pub struct Registrations {
    /// The run's own registrations: pid, start time and role.
    pub own: Vec<(i32, u64, &'static str)>,
    /// Every other run's (pid, start time): those processes are another run's, whatever they
    /// hold — a host that leaks one run's pipe into another run's runtime must not make that
    /// runtime this run's (to be signalled at its teardown). The claim still names such a
    /// holder of this run's stdio.
    pub elsewhere: std::collections::HashSet<(i32, u64)>,
}

/// Who is known to be whose before a scan looks at marks and pipes.
struct Claimed<'a> {
    /// Registered for this run.
    own: &'a [(i32, u64)],
    /// Registered for another run.
    elsewhere: &'a std::collections::HashSet<(i32, u64)>,
    /// In the run's cgroup.
    in_cgroup: &'a [(i32, u64)],
}

/// Whether a process the run's cgroup holds may be the run's: below the harness, and not
/// another run's registered process.
fn cgroup_member(
    below_me: &std::collections::HashSet<i32>,
    claimed: &Claimed,
    pid: i32,
    start_time: u64,
) -> bool {
    below_me.contains(&pid) && !claimed.elsewhere.contains(&(pid, start_time))
}

fn members_in(
    table: &Table,
    mark: &Mark,
    claimed: &Claimed,
    pipes: &[String],
    subject_pgid: i32,
) -> Vec<Member> {
    let me = std::process::id() as i32;
    let mut out: BTreeMap<i32, (u64, How)> = BTreeMap::new();
    for &(pid, start_time) in claimed.own {
        out.insert(pid, (start_time, How::Registered));
    }
    // Every process of a run descends from the harness: it is a child subreaper, so an orphan
    // comes back to it (or to a subreaper below it). Marks are read only there — cheaper on a
    // busy machine, and never another suite's processes. Nor is a process the cgroup holds
    // that is not below the harness the run's: a same-user process can be written into the
    // run's `cgroup.procs` (by the subject), and only the run's own may ever be signalled.
    let below_me = table.descendants_of(me);
    for &(pid, start_time) in claimed.in_cgroup {
        if cgroup_member(&below_me, claimed, pid, start_time) {
            out.entry(pid).or_insert((start_time, How::Cgroup));
        }
    }
    for (&pid, st) in &table.all {
        if !below_me.contains(&pid)
            || st.pgrp == subject_pgid
            || out.contains_key(&pid)
            || claimed.elsewhere.contains(&(pid, st.start_time))
        {
            continue;
        }
        if marked(pid, mark) {
            out.insert(pid, (st.start_time, How::Marked));
        } else if marked_in_env(pid, mark) {
            out.insert(pid, (st.start_time, How::Environment));
        } else if holds_pipe(pid, pipes).is_some() {
            out.insert(pid, (st.start_time, How::Pipe));
        }
    }
    let live = |out: &BTreeMap<i32, (u64, How)>, pid: i32| {
        out.get(&pid)
            .is_some_and(|(start, _)| table.is(pid, *start).is_some())
    };
    // Descendants, to a fixed point (a table is a few hundred lines).
    loop {
        let found: Vec<(i32, u64)> = table
            .all
            .iter()
            .filter(|(pid, st)| **pid != me && !out.contains_key(pid) && live(&out, st.ppid))
            .map(|(pid, st)| (*pid, st.start_time))
            .collect();
        if found.is_empty() {
            break;
        }
        for (pid, start) in found {
            out.insert(pid, (start, How::Descendant));
        }
    }
    // Launchers: walk up from each member while the parent is outside the subject's group and
    // has no child that is not the run's.
    let children = |parent: i32| -> Vec<i32> {
        table
            .all
            .iter()
            .filter(|(_, st)| st.ppid == parent)
            .map(|(pid, _)| *pid)
            .collect()
    };
    let starts: Vec<i32> = out.keys().copied().filter(|pid| live(&out, *pid)).collect();
    for pid in starts {
        let mut at = pid;
        while let Some(st) = table.all.get(&at) {
            let parent = st.ppid;
            let Some(pst) = table.all.get(&parent) else {
                break;
            };
            if parent <= 1 || parent == me || pst.pgrp == subject_pgid || out.contains_key(&parent)
            {
                break;
            }
            if !children(parent).iter().all(|c| out.contains_key(c)) {
                break;
            }
            out.insert(parent, (pst.start_time, How::Launcher));
            at = parent;
        }
    }
    out.into_iter()
        .map(|(pid, (start_time, how))| Member {
            pid,
            start_time,
            how,
            command: pids::command_line(pid),
        })
        .collect()
}

/// The first of `pipes` (`pipe:[inode]`) that `pid` holds. A close-on-exec copy is no hold: a
/// child between fork and exec copies every fd of its parent for a moment.
fn holds_pipe(pid: i32, pipes: &[String]) -> Option<String> {
    if pipes.is_empty() {
        return None;
    }
    pids::fd_link_among(pid, pipes, |fd| !pids::close_on_exec(pid, fd)).cloned()
}

/// The members' states now, and the holders of `pipes` (`pipe:[inode]`) other than the
/// subject's group and the harness.
pub fn claim(
    what: &'static str,
    at_ms: u64,
    members: &[Member],
    pipes: &[String],
    subject_pgid: i32,
    cgroup: Option<&crate::proc::cgroup::RunGroup>,
) -> Claim {
    // The cgroup first: what it lists was in it when the claim was read.
    let cgroup = cgroup.map(|g| CgroupAtClaim {
        dir: g.dir().to_string_lossy().into_owned(),
        populated: g.populated(),
        pids: g.procs().into_iter().map(|(pid, _)| pid).collect(),
    });
    let table = Table::read();
    let me = std::process::id() as i32;
    let by_pid: HashMap<i32, &Member> = members.iter().map(|m| (m.pid, m)).collect();
    let states = members
        .iter()
        .map(|m| {
            let (state, reaper, subject_must_reap) = match table.is(m.pid, m.start_time) {
                None => (State::Gone, None, false),
                Some(st) if st.state == 'Z' || st.state == 'X' => {
                    let parent = st.ppid;
                    // The subject's group is led by its keeper, which reaps what comes to it
                    // as the harness would: that duty is the harness's, not the subject's.
                    let keeper = parent == subject_pgid;
                    let in_subject = !keeper
                        && table
                            .all
                            .get(&parent)
                            .is_some_and(|p| p.pgrp == subject_pgid);
                    let who = if parent == me {
                        "the harness".to_owned()
                    } else if keeper {
                        "the harness (the subject's keeper)".to_owned()
                    } else if in_subject {
                        format!("the subject (pid {parent})")
                    } else if let Some(p) = by_pid.get(&parent) {
                        format!("its parent in the run, pid {}", p.pid)
                    } else {
                        format!("pid {parent} ({})", pids::command_line(parent))
                    };
                    (State::Zombie, Some(who), in_subject)
                }
                Some(_) => (State::Running, None, false),
            };
            // What it runs now: a process first seen before its exec runs something else.
            let command = if state == State::Gone {
                m.command.clone()
            } else {
                pids::command_line(m.pid)
            };
            AtClaim {
                pid: m.pid,
                how: m.how,
                command,
                state,
                reaper,
                subject_must_reap,
            }
        })
        .collect();
    let mut holders = Vec::new();
    if !pipes.is_empty() {
        // Only what descends from the harness can hold them: it is a child subreaper, and
        // nothing outside its tree was ever handed the runtime's stdio.
        let below_me = table.descendants_of(me);
        for (&pid, st) in &table.all {
            if !below_me.contains(&pid) || st.pgrp == subject_pgid {
                continue;
            }
            if let Some(pipe) = holds_pipe(pid, pipes) {
                holders.push(Holder {
                    pid,
                    command: pids::command_line(pid),
                    pipe,
                });
            }
        }
    }
    Claim {
        what,
        at_ms,
        members: states,
        holders,
        cgroup,
    }
}

#[cfg(test)]
mod tests;
