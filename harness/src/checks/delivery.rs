//! `delivery.*`: a published run's dispatch receipt is well-formed; a background job's
//! completion reaches the parent exactly once, names its job, and never follows a kill; and the
//! delivery watchdog's status (seed 003's runbook, as `docs/subject-protocol.md` states it) for
//! the report.

use conform_protocol::subject::Mode;
use conform_protocol::vocab::WatchdogStatus;
use jiff::Timestamp;

use super::{Check, Finding, presentation, show};
use crate::run::Observed;
use crate::scenario::Scenario;

/// How far `dispatchAt` may be ahead of the harness's own clock when it received the receipt:
/// the subject runs on the same machine, so only rounding and scheduling.
const DISPATCH_AT_SKEW_MS: i64 = 1000;

/// The dispatch receipt of a published run: its child session key is not blank, `dispatchAt`
/// is an RFC 3339 time no later than when the harness received it, and `expectedBy` is the one
/// the harness sent in `start`.
pub fn dispatch_receipt(obs: &Observed, f: &mut Vec<Finding>) {
    let Some(r) = &obs.dispatch_receipt else {
        return;
    };
    let mut wrong = |message: String| f.push(Finding::new(Check::DeliveryDispatchReceipt, message));
    if r.child_session_key.trim().is_empty() {
        wrong(format!(
            "childSessionKey {} is blank",
            show(Some(&r.child_session_key))
        ));
    }
    match (rfc3339(&r.dispatch_at), Timestamp::try_from(r.received_at)) {
        (None, _) => wrong(format!(
            "dispatchAt {} is not an RFC 3339 time",
            show(Some(&r.dispatch_at))
        )),
        (Some(at), Ok(received)) => {
            let ahead = at.as_millisecond() - received.as_millisecond();
            if ahead > DISPATCH_AT_SKEW_MS {
                wrong(format!(
                    "dispatchAt {} is {ahead} ms after the harness received the receipt ({received:.3})",
                    show(Some(&r.dispatch_at))
                ));
            }
        }
        // A harness clock outside jiff's range (year 10000): nothing to compare against.
        (Some(_), Err(_)) => {}
    }
    if obs.expected_by.as_ref() != Some(&r.expected_by) {
        wrong(format!(
            "expectedBy {} is not the one the harness sent in `start` ({})",
            show(Some(&r.expected_by)),
            show(obs.expected_by.as_deref())
        ));
    }
}

/// An RFC 3339 date-time (`2026-11-29T18:20:00.123Z`, `…T18:20:00+01:00`): its shape checked
/// here, since jiff alone also reads forms RFC 3339 does not allow (no seconds, no colons).
fn rfc3339(s: &str) -> Option<Timestamp> {
    let b = s.as_bytes();
    let digits = |from: usize, to: usize| {
        b.get(from..to)
            .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
    };
    let at = |i: usize, c: &[u8]| b.get(i).is_some_and(|x| c.contains(x));
    let date_time = digits(0, 4)
        && at(4, b"-")
        && digits(5, 7)
        && at(7, b"-")
        && digits(8, 10)
        && at(10, b"Tt")
        && digits(11, 13)
        && at(13, b":")
        && digits(14, 16)
        && at(16, b":")
        && digits(17, 19);
    if !date_time {
        return None;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        rest = &frac[n..];
    }
    let r = rest.as_bytes();
    let offset = matches!(rest, "Z" | "z")
        || (r.len() == 6
            && matches!(r[0], b'+' | b'-')
            && r[1..3].iter().all(u8::is_ascii_digit)
            && r[3] == b':'
            && r[4..6].iter().all(u8::is_ascii_digit));
    if !offset {
        return None;
    }
    // jiff checks the calendar and the ranges (no February 30th, no hour 24).
    s.to_ascii_uppercase().parse().ok()
}

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
    let killed = obs.sent.cancel;
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
}

/// Every answer of a job's repeated `job_output` calls is the first one: reads are idempotent.
pub fn idempotent_reads(obs: &Observed, f: &mut Vec<Finding>) {
    let Some(first) = &obs.job_output else { return };
    if let Some((i, other)) = obs
        .job_output_repeats
        .iter()
        .enumerate()
        .find(|(_, t)| *t != first)
    {
        f.push(Finding::new(
            Check::DeliveryJobOutput,
            format!(
                "job_output answered call {} differently from the first: {} instead of {}",
                i + 2,
                show(Some(other)),
                show(Some(first))
            ),
        ));
    }
}

/// A background run whose completion reached the parent (or that was killed through
/// `job_kill`), so the harness asked `job_output` (`run_case` asks exactly then), but whose
/// answer never came by the deadline: the parent model's call hangs. Only a missed deadline
/// shows it, since the harness waits for that answer to end the run.
pub fn job_output_unanswered(mode: Mode, obs: &Observed) -> bool {
    // Asked by the harness, not merely due: a notice the subject sent only after the deadline
    // cut the run off (the runtime killed, the start rejected) was never asked about.
    mode == Mode::Background && obs.job_output_asked && obs.job_output.is_none()
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
        && !obs.sent.cancel
        && obs.start_rejected.is_none()
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::run::DispatchReceipt;

    #[test]
    fn rfc3339_takes_only_rfc3339_times() {
        for ok in [
            "2026-11-29T18:20:00Z",
            "2026-11-29T18:20:00.123Z",
            "2026-11-29t18:20:00.5z",
            "2026-11-29T19:20:00+01:00",
            "2000-02-29T00:00:00-00:00",
        ] {
            assert!(rfc3339(ok).is_some(), "{ok}");
        }
        assert_eq!(
            rfc3339("2026-11-29T19:20:00+01:00"),
            rfc3339("2026-11-29T18:20:00Z")
        );
        for bad in [
            "",
            "yesterday",
            "2026-11-29",
            "2026-11-29T18:20Z",
            "2026-11-29T18:20:00",
            "2026-11-29 18:20:00Z",
            "2026-11-29T18:20:00.Z",
            "2026-11-29T18:20:00+0100",
            "20261129T182000Z",
            "2026-02-30T18:20:00Z",
            "2026-11-29T24:20:00Z",
            "2026-11-29T18:20:00Z[Europe/Paris]",
        ] {
            assert!(rfc3339(bad).is_none(), "{bad}");
        }
    }

    fn judged(
        key: &str,
        dispatch_at: &str,
        expected_by: &str,
        received: SystemTime,
    ) -> Vec<String> {
        let obs = Observed {
            expected_by: Some("2026-11-29T18:40:00Z".into()),
            dispatch_receipt: Some(DispatchReceipt {
                run_id: "r1".into(),
                child_session_key: key.into(),
                dispatch_at: dispatch_at.into(),
                expected_by: expected_by.into(),
                received_at: received,
            }),
            ..Observed::default()
        };
        let mut f = Vec::new();
        dispatch_receipt(&obs, &mut f);
        assert!(f.iter().all(|f| f.check == Check::DeliveryDispatchReceipt));
        f.into_iter().map(|f| f.message).collect()
    }

    #[test]
    fn a_dispatch_receipt_is_judged_field_by_field() {
        let at = |s: &str| {
            let ms = s.parse::<Timestamp>().unwrap().as_millisecond();
            SystemTime::UNIX_EPOCH + Duration::from_millis(ms as u64)
        };
        let received = at("2026-11-29T18:20:00.500Z");
        let sent = "2026-11-29T18:40:00Z";
        assert!(judged("k", "2026-11-29T18:20:00.123Z", sent, received).is_empty());
        // Up to a second ahead of the harness's clock is rounding and scheduling.
        assert!(judged("k", "2026-11-29T18:20:01.500Z", sent, received).is_empty());
        assert_eq!(
            judged("k", "2026-11-29T18:20:01.501Z", sent, received),
            [
                "dispatchAt \"2026-11-29T18:20:01.501Z\" is 1001 ms after the harness received the receipt (2026-11-29T18:20:00.500Z)"
            ]
        );
        assert_eq!(
            judged(" ", "soon", "2026-11-29T18:20:00.123Z", received),
            [
                "childSessionKey \" \" is blank",
                "dispatchAt \"soon\" is not an RFC 3339 time",
                "expectedBy \"2026-11-29T18:20:00.123Z\" is not the one the harness sent in `start` (\"2026-11-29T18:40:00Z\")",
            ]
        );
        // No receipt (an unpublished run): nothing to judge.
        let mut f = Vec::new();
        dispatch_receipt(&Observed::default(), &mut f);
        assert!(f.is_empty());
    }
}
