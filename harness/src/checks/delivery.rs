//! `delivery.*`: a background job's completion reaches the parent exactly once, names its job,
//! and never follows a kill; and the delivery watchdog's status (seed 003's runbook, as
//! `docs/subject-protocol.md` states it) for the report.

use conform_protocol::side::FakeEvent;
use conform_protocol::subject::Mode;

use super::{Check, Finding, presentation, show};
use crate::run::Observed;

pub fn background(mode: Mode, obs: &Observed, f: &mut Vec<Finding>) {
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
    match (obs.notices.as_slice(), killed) {
        ([], false) => f.push(Finding::new(
            Check::DeliveryCompletion,
            format!(
                "{}: no completion notice reached the parent{}",
                watchdog_status(obs),
                if watchdog_status(obs) == "done_but_not_forwarded" {
                    " although the child finished"
                } else {
                    ""
                }
            ),
        )),
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
}

/// A background run whose completion reached the parent (or that was killed through
/// `job_kill`), so the harness asked `job_output` (`run_case` asks exactly then), but whose
/// answer never came by the deadline: the parent model's call hangs. Only a missed deadline
/// shows it, since the harness waits for that answer to end the run.
pub fn job_output_unanswered(mode: Mode, obs: &Observed) -> bool {
    mode == Mode::Background
        && obs.tool_result.is_some()
        && (!obs.notices.is_empty() || obs.cancel_sent)
        && obs.job_output.is_none()
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

/// The delivery watchdog's status for a background run, from the receipts and the fake's
/// own record that it finished. A job killed through `job_kill` is closed by
/// the kill (no completion is pushed), so it counts as delivered.
pub fn watchdog_status(obs: &Observed) -> &'static str {
    let child_done = obs
        .fake
        .iter()
        .any(|l| matches!(l.event, FakeEvent::Terminal));
    match (&obs.dispatch_receipt, &obs.completion_receipt) {
        (_, Some(_)) => "completed",
        _ if obs.cancel_sent => "completed",
        _ if child_done && obs.settled => "done_but_not_forwarded",
        (Some(_), None) if obs.timed_out.is_some() => "suspect_delivery_failure",
        (Some(_), None) => "active",
        (None, _) => "blocked",
    }
}
