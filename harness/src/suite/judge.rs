//! Judging: one case's record against the checks and its snapshot, then what only several
//! cases show together (an isolation group's members, job ids a subject gave twice).

use std::sync::Arc;

use conform_protocol::subject::Mode;

use crate::checks::{self, Blame, Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;
use crate::snapshot::{self, Outcome};
use crate::suite::outcome::{CaseReport, Verdict};

pub fn interrupted(scenario: Arc<Scenario>, mode: Mode, signo: i32) -> CaseReport {
    CaseReport {
        scenario,
        mode,
        verdict: Verdict::Interrupted(format!(
            "interrupted by {}",
            crate::proc::interrupt::name(signo)
        )),
        findings: vec![],
        snapshot: None,
        obs: None,
    }
}

pub fn skipped(scenario: Arc<Scenario>, mode: Mode, reason: String) -> CaseReport {
    CaseReport {
        scenario,
        mode,
        verdict: Verdict::Skip(reason),
        findings: vec![],
        snapshot: None,
        obs: None,
    }
}

/// The checks that look across the members of an isolation group run together.
pub fn isolation(members: &mut [(usize, CaseReport)]) {
    let found = {
        let runs: Vec<(&Scenario, &Observed)> = members
            .iter()
            .filter_map(|(_, r)| r.obs.as_ref().map(|o| (&*r.scenario, o)))
            .collect();
        if runs.len() != members.len() {
            return;
        }
        checks::isolation::judge(&runs)
    };
    for ((_, report), findings) in members.iter_mut().zip(found) {
        if !findings.is_empty() {
            report.findings.extend(findings);
            report.verdict = Verdict::Fail;
        }
    }
}

/// A job id the same subject process gave to two background runs fails the later one: its
/// notices and job_output would be routed to the other job.
pub fn unique_job_ids(reports: &mut [(usize, CaseReport)]) {
    let mut seen: std::collections::HashMap<(i32, String), String> = Default::default();
    for (_, report) in reports.iter_mut() {
        let Some(obs) = &report.obs else { continue };
        let Some(job) = obs
            .tool_result
            .as_ref()
            .filter(|_| report.mode == Mode::Background)
            .and_then(|(_, t)| t.strip_prefix("started background subagent job "))
        else {
            continue;
        };
        let key = (obs.subject_pgid, job.to_owned());
        match seen.get(&key) {
            Some(first) => {
                report.findings.push(Finding::new(
                    Check::DeliveryUniqueJobId,
                    format!("job id `{job}` was already given to {first} by the same subject"),
                ));
                report.verdict = Verdict::Fail;
            }
            None => {
                seen.insert(key, format!("{} ({})", report.scenario.id, report.mode));
            }
        }
    }
}

pub fn judge(
    s: &Arc<Scenario>,
    mode: Mode,
    obs: Observed,
    snapshots: &std::path::Path,
    accept: bool,
    pending: bool,
) -> CaseReport {
    if let Some(signo) = obs.interrupted {
        // Its processes were killed; what it did so far proves nothing either way.
        return interrupted(s.clone(), mode, signo);
    }
    if let Some(reason) = &obs.not_run {
        // The subject could not be started: the suite says why, once.
        return CaseReport {
            scenario: s.clone(),
            mode,
            verdict: Verdict::Skip(format!(
                "not run: the subject could not be started ({})",
                reason.lines().next().unwrap_or_default()
            )),
            findings: vec![],
            snapshot: None,
            obs: None,
        };
    }
    let mut findings = checks::judge(s, mode, &obs);
    let mut snapshot_note = None;
    let ran_to_end = obs.subject_gone.is_none() && obs.timed_out.is_none();
    let harness_fault = findings.iter().any(|f| f.blame() == Blame::Harness);
    // A snapshot never blesses a leak: texts that fail redaction are neither compared, nor
    // accepted, nor left pending (the finding already shows where the leak is).
    let leaked = findings.iter().any(|f| f.check == Check::ContractRedaction);
    if leaked && accept {
        snapshot_note = Some("not recorded: the texts leak untrusted text".to_owned());
    }
    if ran_to_end && !harness_fault && !leaked {
        let actual = snapshot::render(&obs);
        match snapshot::check(snapshots, s, mode, &actual, accept, pending) {
            Ok(Outcome::Matches) => {}
            Ok(Outcome::Accepted) => {
                snapshot_note = Some(format!("accepted new snapshot:\n{actual}"));
            }
            Ok(Outcome::Missing { new, note }) => findings.push(Finding::new(
                Check::Snapshot,
                format!(
                    "no stored snapshot{} (read them, then `cargo insta review` or `conform run --accept`):\n{actual}{}",
                    pending_note(new.as_deref()),
                    note.map(|n| format!("\n{n}")).unwrap_or_default()
                ),
            )),
            Ok(Outcome::Differs { diff, new }) => findings.push(Finding::new(
                Check::Snapshot,
                format!(
                    "the model-visible texts differ from the snapshot{}:\n{diff}",
                    pending_note(new.as_deref())
                ),
            )),
            Err(e) => findings.push(Finding::new(
                Check::HarnessSnapshot,
                format!("could not read or write the snapshot: {e}"),
            )),
        }
    }
    let verdict = if findings.is_empty() {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    CaseReport {
        scenario: s.clone(),
        mode,
        verdict,
        findings,
        snapshot: snapshot_note,
        obs: Some(obs),
    }
}

fn pending_note(new: Option<&std::path::Path>) -> String {
    new.map_or_else(String::new, |p| {
        format!(" (this run's texts are in {})", p.display())
    })
}
