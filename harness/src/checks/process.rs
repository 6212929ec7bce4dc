//! `process.*`: the child's process tree settled before the subject said so — judged from the
//! kernel's view at the claim (`settled`, or a start rejection): every process of the run
//! exited, none left unreaped by the subject, no pipe of the runtime held — and nothing of the
//! run still running once the run is over.

use super::{Check, Finding};
use crate::proc::settle::State;
use crate::run::Observed;
use crate::scenario::Scenario;

pub fn judge(_scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    if let Some(claim) = &obs.claim {
        let rejected = claim.what == "start_rejected";
        let running: Vec<String> = claim
            .members
            .iter()
            .filter(|m| m.state == State::Running)
            .map(|m| format!("pid {} ({}; {})", m.pid, m.command, m.how.as_str()))
            .collect();
        // The kernel's word: a populated cgroup the scan could not name is still a process
        // of the run that runs.
        let cgroup_only = claim
            .cgroup
            .as_ref()
            .filter(|c| c.populated && running.is_empty())
            .map(|c| format!("the run's cgroup {} is still populated", c.dir));
        let running: Vec<String> = running.into_iter().chain(cgroup_only).collect();
        if !running.is_empty() {
            let (check, what) = if rejected {
                (
                    Check::ProcessRollback,
                    "start was rejected while the child was still running (it must be settled first)",
                )
            } else {
                (
                    Check::ProcessSettleClaim,
                    "`settled` came while processes of the run still ran",
                )
            };
            f.push(Finding::new(
                check,
                format!("{what}: {}", running.join(", ")),
            ));
        }
        let unreaped: Vec<String> = claim
            .members
            .iter()
            .filter(|m| m.state == State::Zombie && m.subject_must_reap)
            .map(|m| {
                format!(
                    "pid {} ({}) had exited but was not reaped by {}",
                    m.pid,
                    m.command,
                    m.reaper.as_deref().unwrap_or("its parent")
                )
            })
            .collect();
        if !unreaped.is_empty() {
            f.push(Finding::new(
                Check::ProcessReaped,
                format!(
                    "at `{}`, zombies the subject must reap: {}",
                    claim.what,
                    unreaped.join(", ")
                ),
            ));
        }
        if !claim.holders.is_empty() {
            let held: Vec<String> = claim
                .holders
                .iter()
                .map(|h| format!("pid {} ({}) holds {}", h.pid, h.command, h.pipe))
                .collect();
            f.push(Finding::new(
                Check::ProcessPipes,
                format!(
                    "at `{}`, the runtime's stdio pipes are still held: {}",
                    claim.what,
                    held.join(", ")
                ),
            ));
        }
    }
    if !obs.leftovers.is_empty() {
        let check = if obs.start_rejected.is_some() {
            Check::ProcessRollback
        } else {
            Check::ProcessSettled
        };
        f.push(Finding::new(
            check,
            format!(
                "still running after the subject said the run was over (killed by the harness): {}",
                obs.leftovers.join(", ")
            ),
        ));
    }
}
