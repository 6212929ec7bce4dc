//! The delivery watchdog of a background run (seed 003's runbook): its status as time passes,
//! from the receipts and whether `expectedBy` passed. The run records each change; the
//! delivery checks judge the record.

use std::time::SystemTime;

use conform_protocol::side::FakeEvent;
use conform_protocol::vocab::WatchdogStatus;

use crate::run::observed::{Observed, WatchdogChange, rfc3339_ms};
use crate::run::sent::Sent;

/// Records the watchdog's status if it changed (`over`: the run ended, nothing more will
/// arrive).
pub fn watch(obs: &mut Observed, sent: &Sent, past_expected: bool, over: bool, at_ms: u64) {
    let prev = obs.watchdog.last().map(|c| c.status);
    if let Some(status) = status(prev, obs, sent, past_expected, over)
        && Some(status) != prev
    {
        obs.watchdog.push(WatchdogChange {
            status,
            at_ms,
            at: rfc3339_ms(SystemTime::now()),
        });
    }
}

/// The delivery watchdog's status now (seed 003's runbook), from the receipts, whether
/// `expectedBy` passed, whether the run is `over`, and the status before (`None`: the job does
/// not exist yet). "Done" is the child's own record that it sent its terminal message, or the
/// subject's result or start rejection. A job killed through `job_kill` is closed by the kill.
pub fn status(
    prev: Option<WatchdogStatus>,
    obs: &Observed,
    sent: &Sent,
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
    if sent.cancel && !was_suspect {
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
