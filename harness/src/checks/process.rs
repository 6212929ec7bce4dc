//! `process.*`: the child's process tree settled before the subject said so — judged from the
//! kernel's view at the claim (`settled`, or a start rejection): every process of the run
//! exited, none left unreaped by the subject, no pipe of the runtime held — and nothing of the
//! run still running once the run is over.

use std::collections::BTreeMap;

use conform_protocol::side::{FakeEvent, Role};

use super::{Check, Finding};
use crate::proc::settle::State;
use crate::run::Observed;
use crate::scenario::Scenario;

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    nothing_spawned(scenario, obs, f);
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

/// A start whose signal was already aborted (`[cancel] at = "before-start"`), or whose
/// configuration the provider refuses (`[expect] spawns = false`): the provider rejects it
/// before it spawns anything, so no process of the run may ever have run — not the runtime it
/// was given (its fake registers on the side channel before it reads a byte), nor anything the
/// ground-truth scans attributed to the run.
fn nothing_spawned(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    if !scenario.spawns_nothing() {
        return;
    }
    let mut ran: BTreeMap<i32, String> = BTreeMap::new();
    for line in &obs.fake {
        if let FakeEvent::Register { role, .. } = &line.event {
            ran.entry(line.pid).or_insert_with(|| {
                let role = match role {
                    Role::Runtime => "the runtime",
                    Role::Grandchild => "a grandchild",
                };
                format!(
                    "pid {} (registered on the side channel as {role})",
                    line.pid
                )
            });
        }
    }
    let claimed = obs.claim.iter().flat_map(|c| &c.members);
    for m in claimed {
        ran.insert(
            m.pid,
            format!("pid {} ({}; {})", m.pid, m.command, m.how.as_str()),
        );
    }
    for m in &obs.unregistered {
        ran.entry(m.pid).or_insert_with(|| m.describe());
    }
    let mut ran: Vec<String> = ran.into_values().collect();
    if ran.is_empty() {
        ran.clone_from(&obs.leftovers);
    }
    if ran.is_empty() {
        return;
    }
    f.push(Finding::new(
        Check::ProcessNothingSpawned,
        if scenario.aborted_before_start() {
            format!(
                "the start said the request's signal was already aborted (`aborted: true`), yet the run spawned: {} — the signal is checked before anything is spawned",
                ran.join(", ")
            )
        } else {
            format!(
                "the start was rejected for its configuration, yet the run spawned: {} — the configuration is checked before anything is spawned",
                ran.join(", ")
            )
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proc::settle::{AtClaim, Claim, How};
    use conform_protocol::side::FakeLine;

    fn scenario(cancel: &str) -> Scenario {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acp/case.toml");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let text = format!(
            "title = \"t\"\nprovider = \"acp\"\nmodes = [\"foreground\"]\n{cancel}[expect]\nstart_error = \"aborted\"\n"
        );
        std::fs::write(&path, text).unwrap();
        crate::scenario::load(dir.path(), &path).unwrap()
    }

    fn spawned(s: &Scenario, obs: &Observed) -> Vec<String> {
        let mut f = Vec::new();
        nothing_spawned(s, obs, &mut f);
        assert!(f.iter().all(|f| f.check == Check::ProcessNothingSpawned));
        f.into_iter().map(|f| f.message.to_string()).collect()
    }

    #[test]
    fn a_start_aborted_before_it_ran_may_leave_no_process_of_the_run_at_all() {
        let before = scenario("[cancel]\nat = \"before-start\"\n");
        let mut obs = Observed::default();
        assert!(spawned(&before, &obs).is_empty());
        // A process the claim's scan found (it never registered: not the fake it was given).
        obs.claim = Some(Claim {
            what: "start_rejected",
            at_ms: 5,
            members: vec![AtClaim {
                pid: 41,
                how: How::Environment,
                command: "my-runtime --serve".into(),
                state: State::Gone,
                reaper: None,
                subject_must_reap: false,
            }],
            holders: vec![],
            cgroup: None,
        });
        let found = spawned(&before, &obs);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("yet the run spawned: pid 41 (my-runtime --serve; the run's mark in its environment)"),
            "{found:?}"
        );
        // The runtime it was given registered, and was gone by the claim.
        let mut obs = Observed::default();
        obs.fake.push(FakeLine {
            seq: None,
            run: "r1".into(),
            pid: 7,
            event: FakeEvent::Register {
                role: Role::Runtime,
                ppid: 1,
                pgid: 7,
                sid: 7,
                start_time: 1,
                stdio: vec![],
                args: vec![],
                cwd: String::new(),
            },
        });
        let found = spawned(&before, &obs);
        assert!(
            found[0].contains("pid 7 (registered on the side channel as the runtime)"),
            "{found:?}"
        );
        // Any other case spawns its runtime, as it should.
        assert!(spawned(&scenario(""), &obs).is_empty());
    }
}
