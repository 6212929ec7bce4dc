//! After the run: whatever remains of its processes gets a short budget to be gone after a
//! clean end (none after a hang, a subject crash or an interruption), then is killed and
//! named; the run's cgroup is the last word; orphans that came back to the harness are reaped.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use crate::proc::pids;
use crate::proc::router::Router;
use crate::proc::settle::Tracker;
use crate::proc::side::Registered;
use crate::run::observed::Observed;

/// How long processes get to be gone after the subject said the run was settled.
pub const SETTLE_BUDGET: Duration = Duration::from_millis(500);

/// How long a process killed by the harness may take to be gone.
const KILL_BUDGET: Duration = Duration::from_secs(5);

/// One process the teardown waits for.
struct Watched<'a> {
    described: String,
    pid: i32,
    start_time: u64,
    pidfd: Option<&'a OwnedFd>,
}

/// What the side channel says of the run at its end.
pub struct Found<'a> {
    /// The run's registered processes.
    pub ledger: &'a [Arc<Registered>],
    /// Its registrations and every other run's.
    pub registrations: &'a crate::proc::settle::Registrations,
    /// Its runtime's own stdio links.
    pub stdio: &'a [String],
}

/// Ends what is left of the run's processes and records it in `obs` (`leftovers`,
/// `unregistered`).
pub async fn tear_down(
    tree: &mut Tracker,
    found: Found<'_>,
    router: &Arc<Router>,
    obs: &mut Observed,
) {
    let Found {
        ledger,
        registrations,
        stdio,
    } = found;
    let clean = obs.sent.timed_out.is_none()
        && obs.subject_gone.is_none()
        && obs.sent.interrupted.is_none();
    let budget = if clean { SETTLE_BUDGET } else { Duration::ZERO };
    // What never registered is found by the ground-truth scans (a double-forked daemon, a
    // launcher, a helper of a real runtime).
    tree.scan(registrations, stdio, router);
    obs.unregistered = tree.unregistered().map(|t| t.member.clone()).collect();
    let watched = watched(tree, ledger);
    for w in &watched {
        let Some(fd) = w.pidfd else {
            continue;
        };
        let gone = !pids::alive(w.pid, w.start_time) || pids::wait_exit(fd, budget).await;
        if !gone {
            obs.leftovers.push(w.described.clone());
            pids::kill(fd);
            pids::wait_exit(fd, KILL_BUDGET).await;
        }
    }
    sweep_cgroup(tree, budget, obs).await;
    // Orphans of the run that came back to the harness (it is a child subreaper) are reaped
    // here, now: the harness owes its children what it asks of the subject.
    pids::reap_children_among(&watched.iter().map(|w| w.pid).collect::<Vec<_>>());
}

/// The registered processes, then the ones only the scans found.
fn watched<'a>(tree: &'a Tracker, ledger: &'a [Arc<Registered>]) -> Vec<Watched<'a>> {
    let registered = ledger.iter().map(|p| Watched {
        described: format!("pid {} ({})", p.pid, super::role_name(p.role)),
        pid: p.pid,
        start_time: p.start_time,
        pidfd: p.pidfd.as_ref(),
    });
    let found = tree.unregistered().map(|t| Watched {
        described: t.member.describe(),
        pid: t.member.pid,
        start_time: t.member.start_time,
        pidfd: t.pidfd.as_deref(),
    });
    registered.chain(found).collect()
}

/// The cgroup is the last word: whatever is still in it and below the harness was the run's
/// (started after the last scan, or never seen by one) and is killed. What is in it from
/// outside the harness's tree was written into its `cgroup.procs` by someone (the subject):
/// never the run's, never signalled — the subject's failure, named.
async fn sweep_cgroup(tree: &Tracker, budget: Duration, obs: &mut Observed) {
    let Some(group) = tree.cgroup() else { return };
    if group.populated() && !group.wait_empty(budget).await {
        let named: Vec<(i32, String)> = group
            .procs()
            .into_iter()
            .map(|(pid, _)| (pid, format!("pid {pid} ({})", pids::command_line(pid))))
            .collect();
        let (killed, outsiders) = group.end_ours();
        for (pid, described) in named {
            if outsiders.contains(&pid) {
                obs.subject_invalid.push((
                    format!("{described}, in the run's cgroup"),
                    "a process from outside the run was put into its cgroup (it does not descend from the harness, so it is not the run's): not signalled, moved back out".to_owned(),
                ));
            } else {
                obs.leftovers
                    .push(format!("{described}; in the run's cgroup"));
            }
        }
        for fd in &killed {
            pids::wait_exit(fd, KILL_BUDGET).await;
        }
    }
    group.remove();
}
