//! Judging one run. Every check is an item of [`Check`] with a stable id (`expect.diagnostic`,
//! `contract.bound`, …), a one-line requirement and its source, so a failure names the
//! requirement it broke and `conform list --checks` lists them all. One module per family;
//! checks read only what the run observed, and snapshots are judged by the caller.

mod catalog;
mod contract;
mod delivery;
mod expect;
pub mod forms;
mod health;
pub mod isolation;
mod presentation;
mod process;
mod redaction;
mod subject;
pub mod timing;

pub use catalog::{Blame, Check, Finding, Level};
pub use contract::MAX_DIAGNOSTIC_BYTES;
pub use delivery::timeline;
pub use expect::{teardown_rung, upstream_mapping};
pub use presentation::job_status;
pub use redaction::{
    model_visible, runtime_secrets, secret_in_snapshot, secret_material, untrusted_strings,
};
pub use subject::judge_late;

use conform_protocol::subject::Mode;

use crate::run::Observed;
use crate::scenario::Scenario;

/// Every finding of one run, in a fixed order: the harness's health, the subject as a process
/// and a speaker, then (if the run reached its end) the scenario's expectations, the contract,
/// presentation and delivery, processes and timing.
pub fn judge(scenario: &Scenario, mode: Mode, obs: &Observed) -> Vec<Finding> {
    let mut f = Vec::new();
    health::judge(scenario, obs, &mut f);
    subject::runtime(scenario, obs, &mut f);
    subject::liveness_and_protocol(mode, obs, &mut f);
    if obs.subject_gone.is_some() || obs.timed_out.is_some() {
        return f;
    }
    expect::judge(scenario, mode, obs, &mut f);
    contract::judge(scenario, obs, &mut f);
    presentation::foreground(mode, obs, &mut f);
    delivery::dispatch_receipt(obs, &mut f);
    delivery::background(scenario, mode, obs, &mut f);
    delivery::idempotent_reads(obs, &mut f);
    process::judge(scenario, obs, &mut f);
    f.extend(timing::judge(scenario, obs));
    f
}

/// The source and level a scenario gives its findings (`[requirement]`), and the default of
/// its provider: Claude Code's categories belong to a record that is not among the seeds, so
/// what its cases expect of them is conform's practice.
pub fn as_the_scenario_says(scenario: &Scenario, findings: &mut [Finding]) {
    use crate::scenario::RequirementLevel;
    for f in findings.iter_mut().filter(|f| f.level != Level::Harness) {
        match &scenario.file.requirement {
            Some(r) if r.checks.is_empty() || r.checks.iter().any(|c| c == f.check.id()) => {
                f.level = match r.level {
                    RequirementLevel::Record => Level::Record,
                    RequirementLevel::Protocol => Level::Protocol,
                    RequirementLevel::Practice => Level::Practice,
                };
                f.source = r.source.clone().into();
            }
            _ if scenario.file.provider == conform_protocol::vocab::Provider::ClaudeCode
                && matches!(f.check.family(), "expect" | "snapshot")
                && f.level == Level::Record =>
            {
                f.level = Level::Practice;
                f.source = CLAUDE_CODE_SOURCE.into();
            }
            _ => {}
        }
    }
}

/// Where what the Claude Code cases expect of results and texts comes from.
pub const CLAUDE_CODE_SOURCE: &str = "conform, after the real host: seed 001 gives Claude Code's categories, stages and checks to a later record that is not among the seeds";

/// `text` cut after `keep` characters, saying how long it was.
pub fn cut(text: &str, keep: usize) -> String {
    if text.chars().count() <= keep {
        return text.to_owned();
    }
    let head: String = text.chars().take(keep).collect();
    format!("{head}… ({} bytes in all)", text.len())
}

/// A text for a report: quoted, and cut after 300 characters.
pub fn shown(s: &str) -> String {
    show(Some(s))
}

/// A value for a finding: quoted, and cut after 300 characters so a runaway text stays readable.
fn show(s: Option<&str>) -> String {
    const KEEP: usize = 300;
    match s {
        None => "none".to_owned(),
        Some(s) if s.chars().count() > KEEP => {
            let head: String = s.chars().take(KEEP).collect();
            format!("{head:?}… ({} bytes in all)", s.len())
        }
        Some(s) => format!("{s:?}"),
    }
}
