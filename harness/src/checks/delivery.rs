//! `delivery.*`: a background job's completion reaches the parent exactly once, names its job,
//! and never follows a kill; and the delivery watchdog's status (seed 003's runbook, as
//! `docs/subject-protocol.md` states it) for the report.

use conform_protocol::side::FakeEvent;
use conform_protocol::subject::Mode;
use conform_protocol::vocab::WatchdogStatus;

use super::{Check, Finding, presentation, show};
use crate::run::Observed;
use crate::scenario::Scenario;

pub fn background(scenario: &Scenario, mode: Mode, obs: &Observed, f: &mut Vec<Finding>) {
    if mode != Mode::Background {
        return;
    }
    let Some((_, started)) = &obs.tool_result else {
        return;
    };
    let Some(job) = presentation::background_start(started, f) else {
        return;
    };
    let killed = obs.cancel_sent;
    let expected = scenario
        .file
        .expect
        .watchdog
        .unwrap_or(WatchdogStatus::Completed);
    let last = obs.watchdog.last().map(|c| c.status);
    if last != Some(expected) {
        f.push(Finding::new(
            Check::DeliveryCompletion,
            format!(
                "the delivery watchdog ended {}, expected {expected}{}: {}",
                last.map_or("without a status", WatchdogStatus::as_str),
                match (&obs.completion_receipt, last) {
                    (None, Some(WatchdogStatus::DoneButNotForwarded)) =>
                        " (the child finished, but no completion reached the parent)",
                    (None, _) => " (no completion reached the parent)",
                    (Some(r), _) => match r.result_source {
                        "job_output_wait" => " (the completion came only when the parent fetched it with job_output after expectedBy)",
                        _ => "",
                    },
                },
                timeline(obs)
            ),
        ));
    }
    match (obs.notices.as_slice(), killed) {
        ([(j, text)], _) => {
            if j != job || !text.starts_with(&format!("background job {job} ")) {
                f.push(Finding::new(
                    Check::DeliveryJobId,
                    format!(
                        "the notice names job {}, the tool result named {}",
                        show(Some(j)),
                        show(Some(job))
                    ),
                ));
            }
            if killed {
                f.push(Finding::new(
                    Check::DeliveryNoNoticeAfterKill,
                    "a job killed through job_kill still sent a completion notice",
                ));
            }
            presentation::same_status(text, obs.job_output.as_deref(), f);
        }
        (many, _) if many.len() > 1 => f.push(Finding::new(
            Check::DeliverySingleNotice,
            format!("{} completion notices for one job", many.len()),
        )),
        _ => {}
    }
    if obs.job_output.is_none() {
        f.push(Finding::new(
            Check::DeliveryJobOutput,
            "job_output never answered",
        ));
    }
}

/// The watchdog's statuses with when each began (`active 0 ms → suspect_delivery_failure
/// 301 ms → …`).
pub fn timeline(obs: &Observed) -> String {
    let steps: Vec<String> = obs
        .watchdog
        .iter()
        .map(|c| format!("{} at {} ms", c.status, c.at_ms))
        .collect();
    if steps.is_empty() {
        "no status".to_owned()
    } else {
        steps.join(" → ")
    }
}

/// A background run that settled but whose completion never reached the parent by its
/// deadline: a blackhole, not a hang.
pub fn blackhole(mode: Mode, obs: &Observed) -> bool {
    mode == Mode::Background
        && obs.settled
        && obs.notices.is_empty()
        && !obs.cancel_sent
        && obs.start_rejected.is_none()
}

/// The delivery watchdog's status now (seed 003's runbook), from the receipts, whether
/// `expectedBy` passed, whether the run is `over`, and the status before (`None`: the job does
/// not exist yet). "Done" is the child's own record that it sent its terminal message, or the
/// subject's result or start rejection. A job killed through `job_kill` is closed by the kill.
pub fn watchdog_status(
    prev: Option<WatchdogStatus>,
    obs: &Observed,
    past_expected: bool,
    over: bool,
) -> Option<WatchdogStatus> {
    use WatchdogStatus::*;
    let was_suspect = matches!(
        prev,
        Some(SuspectDeliveryFailure | DoneButNotForwarded | Recovered)
    );
    if obs.completion_receipt.is_some() {
        return Some(if was_suspect { Recovered } else { Completed });
    }
    if obs.cancel_sent && !was_suspect {
        return Some(Completed);
    }
    if obs.subject_gone.is_some() {
        return Some(Blocked);
    }
    if obs.dispatch_receipt.is_none() && obs.start_rejected.is_none() {
        return over.then_some(Blocked);
    }
    let done = obs.result.is_some()
        || obs.start_rejected.is_some()
        || obs
            .fake
            .iter()
            .any(|l| matches!(l.event, FakeEvent::Terminal));
    Some(match (done, past_expected || over) {
        (true, true) => DoneButNotForwarded,
        (false, true) if over => Blocked,
        (false, true) => SuspectDeliveryFailure,
        (_, false) => Active,
    })
}
