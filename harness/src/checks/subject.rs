//! `subject.*` and `wire.*`: the subject as a process and a speaker of the adapter protocol, and
//! the provider as a speaker of its runtime's protocol.

use conform_protocol::side::FakeEvent;
use conform_protocol::subject::{FromSubject, Mode};

use super::{Check, Finding};
use crate::proc::router::{Late, RunEvent};
use crate::run::Observed;
use crate::scenario::{RuntimeKind, Scenario};

/// The runtime the subject was given must have run.
pub fn runtime(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    if !obs
        .fake
        .iter()
        .any(|l| matches!(l.event, FakeEvent::Register { .. }))
        && scenario.file.subject.runtime == RuntimeKind::Fake
        && obs.start_rejected.is_none()
        && obs.refused.is_none()
        && obs.subject_gone.is_none()
        && obs.sent.timed_out.is_none()
    {
        // The subject claims a run whose runtime never ran: the fake registers before it reads
        // a byte, so the subject did not spawn what it was given (or the fake could not start,
        // which its stderr line in the subject's tail would show).
        f.push(
            Finding::new(
                Check::SubjectRuntime,
                "the subject reported the run, but the runtime it was given never started (no process registered on the side channel)",
            )
            .blocking(),
        );
    }
}

/// The subject stayed up, finished in time, and sent only valid lines; the runtime saw no
/// protocol violation. A background run that missed its deadline waiting for its delivery (its
/// notice, or the answer to `job_output`) fails that delivery check instead of the deadline.
pub fn liveness_and_protocol(mode: Mode, obs: &Observed, f: &mut Vec<Finding>) {
    if let Some(detail) = &obs.subject_gone {
        f.push(Finding::new(Check::SubjectAlive, detail.clone()).blocking());
    }
    if let Some(d) = obs.sent.timed_out {
        if super::delivery::blackhole(mode, obs) {
            // A background run that settled but whose completion never reached the parent is
            // a blackhole, not a hang: say which watchdog status it ended in.
            f.push(Finding::new(
                Check::DeliveryCompletion,
                format!(
                    "the run settled but no completion reached the parent within its deadline ({} ms{}): {}",
                    d.as_millis(),
                    obs.deadline_note(),
                    super::delivery::timeline(obs)
                ),
            ));
        } else if super::delivery::job_output_unanswered(mode, obs) {
            f.push(
                Finding::new(
                    Check::DeliveryJobOutput,
                    format!(
                        "job_output was asked for and never answered within the run's deadline ({} ms{})",
                        d.as_millis(),
                        obs.deadline_note()
                    ),
                )
                .blocking(),
            );
        } else {
            f.push(
                Finding::new(
                    Check::SubjectDeadline,
                    format!(
                        "the run did not finish within {} ms{}; {}",
                        d.as_millis(),
                        obs.deadline_note(),
                        still_awaited(mode, obs)
                    ),
                )
                .blocking(),
            );
        }
    }
    for (line, error) in &obs.subject_invalid {
        // A message after the run's end that came before the harness closed the run: the same
        // fault as one that came later (`judge_late`), whichever way the race went.
        let check = if crate::run::lifecycle::after_end(error) {
            Check::SubjectAfterEnd
        } else {
            Check::SubjectProtocol
        };
        f.push(Finding::new(check, format!("{error}\n  line: {line}")));
    }
    for line in &obs.fake {
        if let FakeEvent::Violation { detail } = &line.event {
            f.push(Finding::new(
                Check::WireViolation,
                format!("the runtime saw a protocol violation: {detail}"),
            ));
        }
    }
}

/// Findings for subject messages that arrived after the run was judged over (collected until
/// the subject shut down). Host logs are harmless; a notice is judged as delivery; a line that
/// is not valid is a protocol failure like any other; anything else is `subject.after-end`.
pub fn judge_late(obs: &Observed, late: &Late) -> Vec<Finding> {
    let mut f = Vec::new();
    if obs.sent.timed_out.is_some() || obs.subject_gone.is_some() {
        // That run already failed, and whatever trickles in after a hang proves nothing more.
        return f;
    }
    for event in &late.events {
        let msg = match event {
            RunEvent::Subject(msg) => msg,
            RunEvent::SubjectInvalid { line, error } => {
                f.push(Finding::new(
                    Check::SubjectProtocol,
                    format!("{error} (after the run was over)\n  line: {line}"),
                ));
                continue;
            }
            _ => continue,
        };
        match msg {
            FromSubject::HostLog { .. } => {}
            FromSubject::Notice { job, .. } if obs.sent.cancel => f.push(Finding::new(
                Check::DeliveryNoNoticeAfterKill,
                format!("a job killed through job_kill still sent a completion notice (job `{job}`, after the run was over)"),
            )),
            FromSubject::Notice { job, .. } => f.push(Finding::new(
                Check::DeliverySingleNotice,
                format!("another completion notice for job `{job}` arrived after the run was over"),
            )),
            other => f.push(Finding::new(
                Check::SubjectAfterEnd,
                format!(
                    "out of order: `{}` after the run was over\n  line: {}",
                    crate::run::lifecycle::kind(other),
                    crate::proc::subject_process::shown(other)
                ),
            )),
        }
    }
    let kept = late.events.len() as u64;
    if late.count > kept {
        f.push(Finding::new(
            Check::SubjectAfterEnd,
            format!(
                "{} more message(s) arrived after the run was over (not kept)",
                late.count - kept
            ),
        ));
    }
    f
}

/// What a run that missed its deadline was still waiting for: the subject's next message, and
/// where its runtime stood (its last step, whether it closed its stdout, saw EOF or exited).
pub fn still_awaited(mode: Mode, obs: &Observed) -> String {
    let background = mode == Mode::Background;
    let subject = if background && obs.tool_result.is_none() {
        "the background `tool_result` (started …)"
    } else if !obs.dispatched && obs.start_rejected.is_none() {
        "`dispatched` or `start_rejected`: the provider's start never resolved"
    } else if obs.dispatched && obs.result.is_none() {
        "the `result`"
    } else if !background && obs.tool_result.is_none() {
        "`settled` and the `tool_result` (dispose had not finished)"
    } else if obs.notices.is_empty() && !obs.sent.cancel {
        "the completion `notice`"
    } else {
        "the answer to `job_output`"
    };
    let last = obs
        .last_subject_at_ms
        .map_or("no message for the run".to_owned(), |ms| {
            format!("its last message at {ms} ms")
        });
    format!(
        "the subject still owed {subject} ({last}); {}",
        runtime_stood(obs)
    )
}

/// Where the run's runtime stood when the run was given up.
fn runtime_stood(obs: &Observed) -> String {
    use conform_protocol::side::Direction;
    let Some(first) = obs
        .fake
        .iter()
        .find(|l| matches!(l.event, FakeEvent::Register { .. }))
    else {
        return "its runtime never registered (was it spawned?)".to_owned();
    };
    let runtime = first.pid;
    let mine = || obs.fake.iter().filter(move |l| l.pid == runtime);
    let has = |pred: &dyn Fn(&FakeEvent) -> bool| mine().any(|l| pred(&l.event));
    let mut facts = Vec::new();
    if let Some(l) = mine().rev().find(|l| {
        matches!(
            l.event,
            FakeEvent::Frame { .. } | FakeEvent::Checkpoint { .. } | FakeEvent::Awaiting { .. }
        )
    }) {
        facts.push(match &l.event {
            FakeEvent::Frame { dir, frame, .. } => format!(
                "its last frame {} ({})",
                match dir {
                    Direction::Recv => "came from the subject",
                    Direction::Sent => "went to the subject",
                },
                super::shown(&frame.to_string())
            ),
            FakeEvent::Checkpoint { name } => format!("its script last passed checkpoint `{name}`"),
            FakeEvent::Awaiting { name } => format!("its script waits at `await = \"{name}\"`"),
            _ => unreachable!("filtered"),
        });
    }
    if has(&|e| matches!(e, FakeEvent::StdoutClosed)) {
        facts.push("it closed its stdout".into());
    }
    facts.push(if has(&|e| matches!(e, FakeEvent::Eof)) {
        "it saw stdin EOF".into()
    } else {
        "it never saw stdin EOF".into()
    });
    if let Some(exit) = mine().find_map(|l| match &l.event {
        FakeEvent::Exit { code, signal, .. } => Some(match (code, signal) {
            (_, Some(s)) => format!("it died by {s}"),
            (Some(c), None) => format!("it exited {c}"),
            (None, None) => "it exited".to_owned(),
        }),
        _ => None,
    }) {
        facts.push(exit);
    } else {
        facts.push("it was still running".into());
    }
    format!("the runtime (pid {runtime}): {}", facts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn late(msgs: Vec<FromSubject>, count: u64) -> Vec<(Check, String)> {
        let late = Late {
            events: msgs.into_iter().map(RunEvent::Subject).collect(),
            count,
        };
        judge_late(&Observed::default(), &late)
            .into_iter()
            .map(|f| (f.check, f.message))
            .collect()
    }

    #[test]
    fn a_missed_deadline_is_the_job_outputs_only_once_the_harness_asked_it() {
        // Cut off by its deadline, the run's runtime killed: the subject's notice about it came
        // after, and the harness never asked job_output — the deadline is what it missed.
        let mut obs = Observed {
            sent: crate::run::sent::Sent {
                timed_out: Some(std::time::Duration::from_millis(1200)),
                ..Default::default()
            },
            tool_result: Some((false, "started background subagent job subagent-1".into())),
            notices: vec![("subagent-1".into(), "finished".into())],
            ..Observed::default()
        };
        let checks = |obs: &Observed| {
            let mut f = Vec::new();
            liveness_and_protocol(Mode::Background, obs, &mut f);
            f.into_iter().map(|f| f.check).collect::<Vec<_>>()
        };
        assert_eq!(checks(&obs), [Check::SubjectDeadline]);
        obs.job_output_asked = true;
        assert_eq!(checks(&obs), [Check::DeliveryJobOutput]);
    }

    #[test]
    fn late_messages_are_after_end_but_notices_are_delivery() {
        let run = || "r1".to_owned();
        let got = late(
            vec![
                FromSubject::HostLog {
                    run: run(),
                    text: "harmless".into(),
                },
                FromSubject::Settled { run: run() },
                FromSubject::Notice {
                    run: run(),
                    job: "subagent-1".into(),
                    text: "again".into(),
                },
            ],
            5,
        );
        let checks: Vec<Check> = got.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            checks,
            [
                Check::SubjectAfterEnd,
                Check::DeliverySingleNotice,
                Check::SubjectAfterEnd
            ]
        );
        assert!(
            got[0]
                .1
                .starts_with("out of order: `settled` after the run was over")
        );
        assert_eq!(
            got[2].1,
            "2 more message(s) arrived after the run was over (not kept)"
        );
    }
}
