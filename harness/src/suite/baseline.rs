//! Known-failure baselines (`conform run --baseline FILE`): a reviewed list of failures a host
//! has today, each with its reason, so that CI fails only on new ones. A listed failure is
//! reported as known; an unlisted one fails; an entry that no longer matches a failure fails as
//! **stale**, so the file shrinks as the host improves.
//!
//! An entry of one case in one mode may also pin what the case says ([`pin`]): the digest of its
//! model-visible texts, start error, refusal and stop reason (`texts`) and their first lines
//! (`excerpt`). A known case whose texts are no longer the pinned ones fails
//! (`baseline.changed`: "known failure changed", with the diff of the excerpts), so a host gates
//! on regressions inside failures it has not fixed yet. A call the host refuses before any job
//! exists, in a case that does not apply to it, is pinned the same way (`[[refused]]`). An entry
//! without `texts` pins nothing (files written before pins read as they did).
//!
//! ```toml
//! catalog = "3f2a9c0d41be"   # the catalog it was written against (optional)
//!
//! [[known]]
//! id = "acp/stop/refusal@background:expect.diagnostic"   # scenario[@mode][:check-id]
//! reason = "the host predates the ACP diagnostics decision (HOST-123)"
//! texts = "sha256:…"        # optional, with a mode: what the case says
//! excerpt = "── tool result (isError: false) ──\n…"   # optional: its first lines
//!
//! [[refused]]
//! id = "acp/stage/dispose-grace-zero@foreground"        # scenario@mode
//! texts = "sha256:…"
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use conform_protocol::subject::Mode;
use serde::Deserialize;
use toml::Spanned;

use crate::checks::{Blame, Check, Finding};
use crate::suite::{CaseReport, SuiteReport, Verdict};

mod file;
pub mod pin;
mod write;

pub use file::{Baseline, BaselineError};
pub use pin::Pin;
pub use write::write;

/// What an entry lists: a failure (`[[known]]`) or a refused call (`[[refused]]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum EntryKind {
    Known,
    Refused,
}

impl EntryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Known => "known",
            EntryKind::Refused => "refused",
        }
    }
}

/// One entry: a known failure (a scenario, optionally one mode, optionally one check), or a
/// call the host refuses in a case that does not apply to it (one scenario in one mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub kind: EntryKind,
    /// As written: `scenario`, `scenario@mode`, `scenario:check` or `scenario@mode:check`.
    pub id: String,
    pub scenario: String,
    pub mode: Option<Mode>,
    pub check: Option<Check>,
    /// Why the failure is acceptable for now (a refused call's entry may leave it empty).
    pub reason: String,
    /// What the case says, where the entry pins it (only with a mode).
    pub pin: Option<Pin>,
    /// Where it is written (1-based), for the report.
    pub line: usize,
}

impl Entry {
    fn covers(&self, scenario: &str, mode: Mode, finding: &Finding) -> bool {
        self.kind == EntryKind::Known
            && self.scenario == scenario
            && self.mode.is_none_or(|m| m == mode)
            && self.check.is_none_or(|c| c == finding.check)
    }

    /// Does this entry name the case `scenario` in `mode`?
    fn names(&self, scenario: &str, mode: Mode) -> bool {
        self.scenario == scenario && self.mode.is_none_or(|m| m == mode)
    }

    /// Does this entry pin what the case `scenario` in `mode` says?
    fn pins(&self, scenario: &str, mode: Mode) -> bool {
        self.pin.is_some() && self.scenario == scenario && self.mode == Some(mode)
    }
}

/// What became of one entry in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// It covered this many failed checks (and its case says what it pins, if it pins).
    Matched(usize),
    /// It covered failed checks of its case (or its case's call was refused), but the case's
    /// texts are no longer the pinned ones: this run's digest. The case fails.
    Changed(String),
    /// Its case's call was refused, saying what the entry pins.
    Refused,
    /// Its case ran and did not fail (or was not refused) as it says: the entry must go.
    Stale(String),
    /// Its case did not run here (filtered, another shard, skipped): nothing can be said.
    NotRun,
}

impl Status {
    pub fn as_str(&self) -> &'static str {
        match self {
            Status::Matched(_) => "matched",
            Status::Changed(_) => "changed",
            Status::Refused => "refused",
            Status::Stale(_) => "stale",
            Status::NotRun => "not-run",
        }
    }
}

/// The baseline as applied to a suite.
#[derive(Clone, Debug)]
pub struct BaselineOutcome {
    pub path: PathBuf,
    /// The catalog the file was written against, where it says.
    pub catalog: Option<String>,
    pub entries: Vec<(Entry, Status)>,
}

impl BaselineOutcome {
    /// One line when the file was written against another catalog than `used` (the suite's):
    /// its entries may name cases that have changed since. A warning, never a failure; a file
    /// that names no catalog is taken as it is.
    pub fn catalog_warning(&self, used: &str) -> Option<String> {
        let written = self.catalog.as_deref()?;
        (written != used && !used.is_empty()).then(|| {
            format!(
                "warning: baseline {} was written against catalog {written}, this suite ran catalog {used}: review its entries",
                self.path.display()
            )
        })
    }

    pub fn stale(&self) -> impl Iterator<Item = &(Entry, Status)> {
        self.entries
            .iter()
            .filter(|(_, s)| matches!(s, Status::Stale(_)))
    }
}

/// Is the case's record one a pin may be judged or taken from: it ran (or was refused) and the
/// harness is not to blame for it (a harness fault proves nothing about what the subject says)?
fn pinnable(case: &CaseReport) -> bool {
    case.obs.is_some() && !case.findings.iter().any(|f| f.blame() == Blame::Harness)
}

/// A case skipped because its call was refused before any job existed (it does not apply).
fn refused_skip(case: &CaseReport) -> bool {
    matches!(case.verdict, Verdict::Skip(_))
        && case.obs.as_ref().is_some_and(|o| o.refused.is_some())
}

/// Applies `baseline` to the report: a failed case whose every finding an entry covers becomes
/// [`Verdict::Known`]; a failed, known or refused case whose pinned texts changed fails
/// (`baseline.changed`); entries are matched, changed, refused, stale or not run (an entry for no
/// scenario of the catalog is stale). A harness fault is never known: it proves nothing about the
/// subject.
pub fn apply(report: &mut SuiteReport, baseline: &Baseline) {
    let catalog = std::mem::take(&mut report.catalog);
    let strictness = report.strictness;
    let mut matched = vec![0usize; baseline.entries.len()];
    // This run's digest, for each pinning entry whose case says something else now.
    let mut changed: Vec<Option<String>> = vec![None; baseline.entries.len()];
    let mut refused_as_pinned = vec![false; baseline.entries.len()];
    for case in &mut report.cases {
        if matches!(case.verdict, Verdict::Fail) {
            cover(case, baseline, &mut matched);
        }
        judge_pins(
            case,
            baseline,
            strictness,
            &mut changed,
            &mut refused_as_pinned,
        );
    }
    let entries = baseline
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let status = match (e.kind, &changed[i]) {
                (EntryKind::Known, Some(now)) if matched[i] > 0 => Status::Changed(now.clone()),
                (EntryKind::Refused, Some(now)) => Status::Changed(now.clone()),
                (EntryKind::Known, _) if matched[i] > 0 => Status::Matched(matched[i]),
                (EntryKind::Refused, None) if refused_as_pinned[i] => Status::Refused,
                _ => unmatched(e, report, &catalog),
            };
            (e.clone(), status)
        })
        .collect();
    report.baseline = Some(BaselineOutcome {
        path: baseline.path.clone(),
        catalog: baseline.catalog.clone(),
        entries,
    });
    report.catalog = catalog;
}

/// A failed case against the known-failure entries: known when every finding is covered.
fn cover(case: &mut CaseReport, baseline: &Baseline, matched: &mut [usize]) {
    let (id, mode) = (case.scenario.id.as_str(), case.mode);
    let mut reasons: Vec<&str> = Vec::new();
    let mut all_covered = !case.findings.is_empty();
    for f in &case.findings {
        let covering: Vec<usize> = baseline
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| f.blame() == Blame::Subject && e.covers(id, mode, f))
            .map(|(i, _)| i)
            .collect();
        if covering.is_empty() {
            all_covered = false;
        }
        for i in covering {
            matched[i] += 1;
            let reason = baseline.entries[i].reason.as_str();
            if !reasons.contains(&reason) {
                reasons.push(reason);
            }
        }
    }
    if all_covered {
        case.verdict = Verdict::Known(reasons.join("; "));
    }
}

/// The case's texts against what the entries naming it pin: a failed or known case against its
/// known-failure entries, a refused call against its refused entries. Texts that changed fail
/// the case (`baseline.changed`), at the level of what the pin stands for.
fn judge_pins(
    case: &mut CaseReport,
    baseline: &Baseline,
    strictness: crate::settings::Strictness,
    changed: &mut [Option<String>],
    refused_as_pinned: &mut [bool],
) {
    if !pinnable(case) {
        return;
    }
    let Some(obs) = &case.obs else { return };
    let failed = matches!(case.verdict, Verdict::Fail | Verdict::Known(_));
    let refused = obs.refused.is_some();
    let pinning: Vec<usize> = baseline
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.pins(&case.scenario.id, case.mode))
        .filter(|(_, e)| match e.kind {
            EntryKind::Known => failed,
            EntryKind::Refused => refused,
        })
        .map(|(i, _)| i)
        .collect();
    let Some(pin) = pinning
        .first()
        .and_then(|i| baseline.entries[*i].pin.as_ref())
    else {
        return;
    };
    let texts = pin::texts(obs);
    let now = pin::digest(&texts);
    if now == pin.texts {
        for i in pinning {
            refused_as_pinned[i] = baseline.entries[i].kind == EntryKind::Refused;
        }
        return;
    }
    for &i in &pinning {
        changed[i] = Some(now.clone());
    }
    let excerpt = pin::excerpt(&case.scenario, &obs.run_dir, &texts);
    let what = if failed {
        "known failure changed"
    } else {
        "known refusal changed"
    };
    let lines: Vec<String> = pinning
        .iter()
        .map(|i| baseline.entries[*i].line.to_string())
        .collect();
    let mut message = format!(
        "{what}: the texts pinned at {}:{} are {}, this run's are {}",
        baseline.path.display(),
        lines.join(","),
        pin.texts,
        now
    );
    match &pin.excerpt {
        Some(pinned) if *pinned != excerpt => {
            let _ = write!(message, ":\n{}", pin::diff(pinned, &excerpt));
        }
        Some(_) => {
            message.push_str(" (their excerpts agree: what changed is past them, or withheld)")
        }
        None => {
            let _ = write!(
                message,
                " (the baseline keeps no excerpt to compare; this run's):\n{excerpt}"
            );
        }
    }
    let finding = at_level_of_what_it_pins(case, Finding::new(Check::BaselineChanged, message));
    let known = matches!(case.verdict, Verdict::Known(_));
    let (mut failing, advisories) = crate::suite::judge::admitted(vec![finding], strictness);
    case.advisories.extend(advisories);
    if failing.is_empty() {
        return;
    }
    case.verdict = Verdict::Fail;
    if known {
        // What fails the case now comes first: the rest is what the baseline knows.
        failing.append(&mut case.findings);
        case.findings = failing;
    } else {
        case.findings.append(&mut failing);
    }
}

/// `finding` at the strictest level of what its pin stands for: the failures of the case (each
/// at the level its scenario gives it), or for a refused call the start rejection the scenario
/// expects. A strictness that judges those judges this.
fn at_level_of_what_it_pins(case: &CaseReport, mut finding: Finding) -> Finding {
    let stood_for = case
        .findings
        .iter()
        .filter(|f| f.blame() == Blame::Subject)
        .map(|f| (f.check, f.level, f.source.clone()))
        .min_by_key(|(_, level, _)| *level)
        .or_else(|| {
            crate::checks::expectation_levels(&case.scenario)
                .into_iter()
                .find(|(c, _, _)| *c == Check::ExpectStartError)
        });
    if let Some((check, level, source)) = stood_for {
        finding.level = level;
        finding.source = format!(
            "{}; it pins what `{check}` showed, which is {} ({source})",
            finding.source,
            level.as_str()
        )
        .into();
    }
    finding
}

/// The status of an entry that matched nothing (and whose case did not change).
fn unmatched(e: &Entry, report: &SuiteReport, catalog: &BTreeSet<String>) -> Status {
    if !catalog.contains(&e.scenario) {
        return Status::Stale("no scenario has this id".to_owned());
    }
    let named = || {
        report
            .cases
            .iter()
            .filter(|c| e.names(&c.scenario.id, c.mode))
    };
    if e.kind == EntryKind::Refused {
        if named().any(|c| c.obs.as_ref().is_some_and(|o| o.refused.is_some())) {
            // Refused, with a record the harness is to blame for: nothing can be said.
            return Status::NotRun;
        }
        let ran = named().any(|c| !matches!(c.verdict, Verdict::Skip(_) | Verdict::Interrupted(_)));
        return if ran {
            Status::Stale("the call is no longer refused".to_owned())
        } else {
            Status::NotRun
        };
    }
    let ran: Vec<&CaseReport> = named()
        .filter(|c| !matches!(c.verdict, Verdict::Skip(_) | Verdict::Interrupted(_)))
        .collect();
    if ran.is_empty() {
        Status::NotRun
    } else if ran.iter().all(|c| matches!(c.verdict, Verdict::Pass)) {
        Status::Stale("the case passes now".to_owned())
    } else {
        Status::Stale(match e.check {
            Some(c) => format!("the case no longer fails {c}"),
            None => "the case no longer fails for the subject".to_owned(),
        })
    }
}

#[cfg(test)]
mod tests;
