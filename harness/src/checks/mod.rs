//! Judging one run. Every check is an item of [`Check`] with a stable id (`expect.diagnostic`,
//! `contract.bound`, …), a one-line requirement and its source, so a failure names the
//! requirement it broke and `conform list --checks` lists them all. One module per family;
//! checks read only what the run observed, and snapshots are judged by the caller.

mod catalog;
mod contract;
mod delivery;
mod expect;
mod health;
pub mod isolation;
mod presentation;
mod process;
mod redaction;
mod script;
mod subject;
pub mod timing;

pub use catalog::{Blame, Check, Finding, Level};
/// The redaction check's matcher is a crate of its own (`harness/forms`) so that it can be
/// optimised in debug builds too: matching every form of every secret is most of what the
/// redaction property costs, and `cargo test` runs it by the thousand.
pub use conform_forms as forms;
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
    if obs.subject_gone.is_none() && obs.sent.timed_out.is_none() {
        script::judge(scenario, obs, &mut f);
    }
    script::recorded_wire(scenario, obs, &mut f);
    if obs.subject_gone.is_some() || obs.sent.timed_out.is_some() {
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
/// what its cases expect of them is conform's practice. A blocking finding (the run never got
/// to its end) then takes the strictest level of what it kept from being judged.
pub fn as_the_scenario_says(scenario: &Scenario, mode: Mode, findings: &mut [Finding]) {
    for f in findings.iter_mut().filter(|f| f.level != Level::Harness) {
        if let Some((level, source)) = stated(scenario, f.check, f.level) {
            f.level = level;
            f.source = source;
        }
        if f.blocking
            && let Some((check, level, source)) = strictest_blocked(scenario, mode)
            && level < f.level
        {
            f.level = level;
            f.source = format!(
                "{}; it kept `{check}` from being judged, which is {} ({source})",
                f.source,
                level.as_str()
            )
            .into();
        }
    }
}

/// The level and source a scenario or its provider gives findings of `check` (whose own
/// level is `level`), if they are not the check's own.
fn stated(
    scenario: &Scenario,
    check: Check,
    level: Level,
) -> Option<(Level, std::borrow::Cow<'static, str>)> {
    use crate::scenario::RequirementLevel;
    match &scenario.file.requirement {
        Some(r) if r.checks.is_empty() || r.checks.iter().any(|c| c == check.id()) => {
            let level = match r.level {
                RequirementLevel::Record => Level::Record,
                RequirementLevel::Protocol => Level::Protocol,
                RequirementLevel::Practice => Level::Practice,
            };
            Some((level, r.source.clone().into()))
        }
        _ if matches!(check.family(), "expect" | "snapshot") && level == Level::Record => {
            crate::provider::facts(scenario.file.provider)
                .records_as_practice
                .map(|source| (Level::Practice, source.into()))
        }
        _ => None,
    }
}

/// What a run that never got to its end kept from being judged: in background the completion's
/// delivery first (seed 003), then the outcome its scenario expects (start rejection, stop
/// reason, diagnostic, output, job status, teardown rung) and its model-visible texts.
pub fn blocked(scenario: &Scenario, mode: Mode) -> Vec<Check> {
    let e = &scenario.file.expect;
    let background = mode == Mode::Background;
    [
        (Check::DeliveryCompletion, background),
        (Check::ExpectStartError, e.start_error.is_some()),
        (Check::ExpectStopReason, e.stop_reason.is_some()),
        (Check::ExpectDiagnostic, e.stop_reason.is_some()),
        (Check::ExpectOutput, e.output.is_some()),
        (Check::ExpectJobStatus, background && e.job_status.is_some()),
        (Check::ExpectTeardown, e.teardown.is_some()),
        (Check::Snapshot, true),
    ]
    .into_iter()
    .filter_map(|(check, expected)| expected.then_some(check))
    .collect()
}

/// Each expectation a scenario holds a subject to — its outcome and texts, and the background
/// delivery — at the level and source the scenario gives it (`conform list --levels`).
pub fn expectation_levels(
    scenario: &Scenario,
) -> Vec<(Check, Level, std::borrow::Cow<'static, str>)> {
    blocked(scenario, Mode::Background)
        .into_iter()
        .map(|check| {
            let (level, source) = stated(scenario, check, check.level())
                .unwrap_or((check.level(), check.source().into()));
            (check, level, source)
        })
        .collect()
}

/// The strictest of what [`blocked`] names, at the level and source the scenario gives it.
fn strictest_blocked(
    scenario: &Scenario,
    mode: Mode,
) -> Option<(Check, Level, std::borrow::Cow<'static, str>)> {
    blocked(scenario, mode)
        .into_iter()
        .map(|check| {
            let (level, source) = stated(scenario, check, check.level())
                .unwrap_or((check.level(), check.source().into()));
            (check, level, source)
        })
        .min_by_key(|(_, level, _)| *level)
}

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
