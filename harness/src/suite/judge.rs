//! Judging: one case's record against the checks and its snapshot, then what only several
//! cases show together (an isolation group's members, job ids a subject gave twice).

use std::sync::Arc;

use conform_protocol::subject::Mode;

use crate::checks::{self, Blame, Check, Finding, Level};
use crate::run::Observed;
use crate::scenario::Scenario;
use crate::settings::Strictness;
use crate::snapshot::{self, SnapshotOutcome};
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
        advisories: vec![],
        snapshot: None,
        rerun: None,
        obs: None,
    }
}

pub fn skipped(scenario: Arc<Scenario>, mode: Mode, reason: String) -> CaseReport {
    CaseReport {
        scenario,
        mode,
        verdict: Verdict::Skip(reason),
        findings: vec![],
        advisories: vec![],
        snapshot: None,
        rerun: None,
        obs: None,
    }
}

/// The checks that look across the members of an isolation group run together.
pub fn isolation(members: &mut [(usize, CaseReport)], strictness: Strictness) {
    let found = {
        let runs: Vec<(&Scenario, &Observed)> = members
            .iter()
            .filter_map(|(_, r)| r.obs.as_deref().map(|o| (&*r.scenario, o)))
            .collect();
        if runs.len() != members.len() {
            return;
        }
        checks::isolation::judge(&runs)
    };
    for ((_, report), findings) in members.iter_mut().zip(found) {
        report.add(findings, strictness);
    }
}

/// A job id the same subject process gave to two background runs fails the later one: its
/// notices and job_output would be routed to the other job.
pub fn unique_job_ids(reports: &mut [(usize, CaseReport)], strictness: Strictness) {
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
                let reused = Finding::new(
                    Check::DeliveryUniqueJobId,
                    format!("job id `{job}` was already given to {first} by the same subject"),
                );
                report.add(vec![reused], strictness);
            }
            None => {
                seen.insert(key, format!("{} ({})", report.scenario.id, report.mode));
            }
        }
    }
}

/// How a suite judges and keeps its cases.
pub struct Judging {
    pub snapshots: std::path::PathBuf,
    pub accept: bool,
    /// Where a differing snapshot may be left pending (insta's rules decide); `None`: nowhere.
    pub pending: Option<snapshot::PendingDir>,
    /// Which requirements fail a case; the rest are advisories.
    pub strictness: Strictness,
    /// Keep each run's ledger parsed (the differential reads it).
    pub keep_ledgers: bool,
    /// Keep the ledger text of runs that passed too (`--verbose`).
    pub keep_passing: bool,
}

/// One case's record against the checks and its snapshot, then `--strictness`.
pub fn judge(s: &Arc<Scenario>, mode: Mode, obs: Observed, how: &Judging) -> CaseReport {
    let accept = how.accept;
    if let Some(signo) = obs.sent.interrupted {
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
            advisories: vec![],
            snapshot: None,
            rerun: None,
            obs: None,
        };
    }
    if let Some(error) = obs.refused.clone() {
        return refused(s, mode, obs, &error, how.strictness);
    }
    let mut findings = checks::judge(s, mode, &obs);
    let mut snapshot_note = None;
    let ran_to_end = obs.subject_gone.is_none() && obs.sent.timed_out.is_none();
    let harness_fault = findings.iter().any(|f| f.blame() == Blame::Harness);
    // A snapshot never blesses a leak: texts that fail redaction are neither compared, nor
    // accepted, nor left pending (the finding already shows where the leak is).
    let leaked = findings.iter().any(|f| f.check == Check::ContractRedaction);
    if leaked && accept {
        snapshot_note = Some("not recorded: the texts leak untrusted text".to_owned());
    }
    if ran_to_end && !harness_fault && !leaked {
        let (finding, note) = compare_snapshot(s, mode, &obs, how);
        findings.extend(finding);
        snapshot_note = note.or(snapshot_note);
    }
    checks::as_the_scenario_says(s, mode, &mut findings);
    let (findings, advisories) = admitted(findings, how.strictness);
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
        advisories,
        snapshot: snapshot_note,
        rerun: None,
        obs: Some(Box::new(obs)),
    }
}

impl CaseReport {
    /// Findings a case shows beside its own judging (across a group, across the suite): the
    /// scenario's sources, then `strictness`; any admitted one fails the case.
    pub fn add(&mut self, mut findings: Vec<Finding>, strictness: Strictness) {
        checks::as_the_scenario_says(&self.scenario, self.mode, &mut findings);
        let (failing, advisories) = admitted(findings, strictness);
        if !failing.is_empty() {
            self.verdict = Verdict::Fail;
        }
        self.findings.extend(failing);
        self.advisories.extend(advisories);
    }
}

/// A call the host refused before any job existed (`refused`): a case about start()'s
/// rejection does not apply to a host that never lets such a call reach a provider; any other
/// case was refused a run it should have had. Either way the refusal and the tool result are
/// model-visible texts like any other: the redaction and the bound judge them (a case that does
/// not apply still fails on them), and the run's record is kept (a baseline pins its texts).
fn refused(
    s: &Arc<Scenario>,
    mode: Mode,
    obs: Observed,
    error: &conform_protocol::subject::StartError,
    strictness: Strictness,
) -> CaseReport {
    let refusal = format!("{}: {}", error.name, error.message);
    let texts_judged =
        |f: &Finding| matches!(f.check, Check::ContractRedaction | Check::ContractBound);
    let judged = checks::judge(s, mode, &obs);
    let mut report = CaseReport {
        scenario: s.clone(),
        mode,
        verdict: Verdict::Pass,
        findings: vec![],
        advisories: vec![],
        snapshot: None,
        rerun: None,
        obs: None,
    };
    if s.file.expect.start_error.is_some() {
        report.verdict = Verdict::Skip(format!(
            "not applicable to this subject: it refused the call before any job existed ({}), and this case is about start()'s rejection",
            checks::shown(&refusal)
        ));
        report.add(
            judged.into_iter().filter(texts_judged).collect(),
            strictness,
        );
        report.obs = Some(Box::new(obs));
        return report;
    }
    let mut findings: Vec<Finding> = judged
        .into_iter()
        .filter(|f| matches!(f.check.family(), "subject" | "harness") || texts_judged(f))
        .collect();
    findings.push(Finding::new(
        Check::ExpectStartError,
        format!(
            "the host refused the call before any job existed ({}), where the scenario expects a run",
            checks::shown(&refusal)
        ),
    ));
    report.add(findings, strictness);
    report.obs = Some(Box::new(obs));
    report
}

/// The findings `strictness` judges, and the rest (advisories). The harness's own findings are
/// always judged.
pub fn admitted(findings: Vec<Finding>, strictness: Strictness) -> (Vec<Finding>, Vec<Finding>) {
    let admits = |level: Level| match strictness {
        Strictness::All => true,
        Strictness::Protocol => level <= Level::Protocol,
        Strictness::Records => level <= Level::Record,
    };
    findings
        .into_iter()
        .partition(|f| admits(f.level) && !f.load_suspect)
}

/// The run's texts against the stored snapshot (written by `--accept` or left pending, unless
/// they hold a known secret in any form): a finding if they differ, and a note for the report.
fn compare_snapshot(
    s: &Arc<Scenario>,
    mode: Mode,
    obs: &Observed,
    how: &Judging,
) -> (Option<Finding>, Option<String>) {
    let snapshots = s.snapshots.as_deref().unwrap_or(how.snapshots.as_path());
    let (accept, pending) = (how.accept, how.pending.as_ref());
    let actual = snapshot::render(obs);
    // Nor a secret in any form it takes: the render holds more than the redaction check reads
    // (the start rejection's error name). A refused text is compared, never written. Asked
    // only when something may be written (`--accept`, or a pending `.snap.new`).
    let refused = (accept || pending.is_some())
        .then(|| checks::secret_in_snapshot(s, &actual))
        .flatten();
    let mut note = refused
        .as_ref()
        .filter(|_| accept)
        .map(|why| format!("not recorded: --accept refused: {why}"));
    let (accept, pending) = match refused {
        Some(_) => (false, None),
        None => (accept, pending),
    };
    let finding = match snapshot::check(snapshots, s, mode, &actual, accept, pending) {
        Ok(SnapshotOutcome::Matches) => None,
        Ok(SnapshotOutcome::Accepted) => {
            let shown = snapshot::visible(&actual);
            note = Some(format!("accepted new snapshot:\n{shown}"));
            None
        }
        Ok(SnapshotOutcome::Missing { new, note: why }) => Some(Finding::new(
            Check::Snapshot,
            format!(
                "no stored snapshot ({}):\n{}{}",
                new.as_deref().zip(pending).map_or_else(
                    || "read them, then accept with `conform run --accept`".to_owned(),
                    |(file, dir)| pending_note(file, dir, "read them")
                ),
                snapshot::visible(&actual),
                why.map(|n| format!("\n{n}")).unwrap_or_default()
            ),
        )),
        Ok(SnapshotOutcome::Differs { diff, new }) => Some(Finding::new(
            Check::Snapshot,
            format!(
                "the model-visible texts differ from the snapshot{}:\n{diff}",
                new.as_deref()
                    .zip(pending)
                    .map(|(file, dir)| format!(" ({})", pending_note(file, dir, "read the diff")))
                    .unwrap_or_default()
            ),
        )),
        Err(e) => Some(Finding::new(
            Check::HarnessSnapshot,
            format!("could not read or write the snapshot: {e}"),
        )),
    };
    (finding, note)
}

/// Where this run's texts were left pending, and how to accept them after `read`ing them.
fn pending_note(file: &std::path::Path, dir: &snapshot::PendingDir, read: &str) -> String {
    let review = dir.review_command();
    format!(
        "this run's texts are pending in {}: {read} with `{review}`, then accept with \
         `{review} --accept` or `conform run --accept`",
        file.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_load_suspect_finding_is_an_advisory_at_every_strictness() {
        let late = || Finding::new(Check::TimingResult, "late");
        for strictness in [Strictness::All, Strictness::Protocol, Strictness::Records] {
            let (failing, advisories) = admitted(vec![late().load_suspect()], strictness);
            assert!(
                failing.is_empty() && advisories.len() == 1,
                "{strictness:?}"
            );
        }
        let (failing, _) = admitted(vec![late()], Strictness::All);
        assert_eq!(
            failing.len(),
            1,
            "the same finding on an idle machine fails"
        );
    }
}
