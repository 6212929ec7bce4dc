//! What a suite found: a verdict per case, the suite's own findings, and the exit code they
//! decide.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use conform_protocol::subject::Mode;

use crate::checks::{Blame, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

#[derive(Debug)]
pub enum Verdict {
    Pass,
    Fail,
    /// Failed as the baseline in use says it does (its reasons): not a failure of the suite.
    Known(String),
    Skip(String),
    /// The suite was interrupted (a signal) before this case could finish or start.
    Interrupted(String),
}

#[derive(Debug)]
pub struct CaseReport {
    pub scenario: Arc<Scenario>,
    pub mode: Mode,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    /// What failed of requirements past `--strictness`: reported, not failing.
    pub advisories: Vec<Finding>,
    pub snapshot: Option<String>,
    /// The case was run again alone at the end of the suite (a timing finding the load in
    /// flight could explain), and what that showed ([`super::rerun`]).
    pub rerun: Option<String>,
    pub obs: Option<Box<Observed>>,
}

/// A real runtime a suite ran in place of a fake.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RealPeer {
    pub provider: conform_protocol::vocab::Provider,
    /// As the peers manifest gives it (`None`: it gives none).
    pub version: Option<String>,
}

pub struct SuiteReport {
    pub subject: String,
    /// What each provider's fake spoke in this suite (`Codex app-server 0.147.0`), by provider.
    pub fakes_speak: std::collections::BTreeMap<conform_protocol::vocab::Provider, String>,
    /// The real peers this suite ran (`--peers`), by name: the provider whose protocol each
    /// speaks and the version its manifest gives.
    pub real_peers: std::collections::BTreeMap<String, RealPeer>,
    /// Which requirements failed a case (`--strictness`).
    pub strictness: crate::settings::Strictness,
    /// Runs in flight at once (`-j`).
    pub jobs: usize,
    pub cases: Vec<CaseReport>,
    /// Failures of the suite as a whole, not of one case: a subject that cannot be started,
    /// messages for runs the harness never started, broken lines that name no run.
    pub findings: Vec<Finding>,
    /// Processes found alive after the suite (then killed).
    pub stragglers: Vec<String>,
    /// `--allow-skips`: a suite that skipped every case may still exit 0.
    pub allow_skips: bool,
    pub elapsed: Duration,
    /// The signal that interrupted the suite, if one did (exit 128 + n).
    pub interrupted: Option<i32>,
    /// The strong settling mode, as asked for and as had.
    pub cgroup: CgroupMode,
    /// The known-failure baseline, as applied (`--baseline`).
    pub baseline: Option<crate::suite::baseline::BaselineOutcome>,
    /// The shard of the catalog this suite ran (`--partition`).
    pub partition: Option<crate::suite::partition::Partition>,
    /// Each scenario's place in the whole selection, before any partition.
    pub positions: std::collections::BTreeMap<String, usize>,
    /// Every scenario id of the catalog, selected or not (a baseline entry for none is stale).
    pub catalog: std::collections::BTreeSet<String>,
    /// The digest of the catalog that judged the suite: the scenario and snapshot folders it
    /// read, as they were when it started ([`crate::catalog::digest_of`]; empty where not
    /// known).
    pub catalog_digest: String,
    /// Peak resident sets (KiB): the harness, the subject, the largest fake.
    pub peak_rss_kib: PeakRss,
}

#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PeakRss {
    pub harness: Option<u64>,
    pub subject: Option<u64>,
    pub fake: Option<u64>,
}

/// `--cgroup`: not asked for, on (the suite's cgroup), or asked for and not to be had here.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum CgroupMode {
    #[default]
    Off,
    On(PathBuf),
    Unavailable(String),
}

/// The exit codes, in one place (`docs/subject-protocol.md` and the README show this table).
pub mod exit {
    /// Every case that ran passed, and at least one ran (or `--allow-skips`).
    pub const PASS: i32 = 0;
    /// A conformance failure: a case failed, the suite found a subject fault (no `hello`,
    /// messages for unknown runs, lines that name no run), or processes were left behind.
    pub const FAIL: i32 = 1;
    /// Usage or harness error, or nothing was tested: bad arguments or scenario files, a harness
    /// fault (a fake or snapshot it could not use), or every selected case skipped.
    pub const ERROR: i32 = 2;
    // Interrupted by signal n: 128 + n (`SuiteReport::exit_code`).
}

/// What decides a suite's exit code; a merged report (`conform report merge`) has the same.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExitFacts {
    pub interrupted: Option<i32>,
    /// A finding the harness is to blame for, anywhere.
    pub harness_fault: bool,
    /// A failed case, a suite finding, a straggler, or a stale baseline entry.
    pub failed: bool,
    pub nothing_tested: bool,
    pub allow_skips: bool,
}

impl ExitFacts {
    pub fn exit_code(self) -> i32 {
        if let Some(signo) = self.interrupted {
            128 + signo
        } else if self.harness_fault {
            exit::ERROR
        } else if self.failed {
            exit::FAIL
        } else if self.nothing_tested && !self.allow_skips {
            exit::ERROR
        } else {
            exit::PASS
        }
    }
}

impl SuiteReport {
    pub fn exit_facts(&self) -> ExitFacts {
        let mut findings = self
            .findings
            .iter()
            .chain(self.cases.iter().flat_map(|c| &c.findings));
        ExitFacts {
            interrupted: self.interrupted,
            harness_fault: findings.any(|f| f.blame() == Blame::Harness),
            failed: !self.stragglers.is_empty()
                || !self.findings.is_empty()
                || self
                    .cases
                    .iter()
                    .any(|c| matches!(c.verdict, Verdict::Fail))
                || self
                    .baseline
                    .as_ref()
                    .is_some_and(|b| b.stale().next().is_some()),
            nothing_tested: self.nothing_tested().is_some(),
            allow_skips: self.allow_skips,
        }
    }

    pub fn exit_code(&self) -> i32 {
        self.exit_facts().exit_code()
    }

    /// Why nothing was tested, when every case was skipped.
    pub fn nothing_tested(&self) -> Option<String> {
        if self
            .cases
            .iter()
            .any(|c| !matches!(c.verdict, Verdict::Skip(_) | Verdict::Interrupted(_)))
        {
            return None;
        }
        let mut reasons: Vec<&str> = self
            .cases
            .iter()
            .filter_map(|c| match &c.verdict {
                Verdict::Skip(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        reasons.sort_unstable();
        reasons.dedup();
        Some(format!(
            "nothing was tested: all {} selected case(s) were skipped ({}); `--allow-skips` accepts that",
            self.cases.len(),
            reasons.join("; ")
        ))
    }
}
