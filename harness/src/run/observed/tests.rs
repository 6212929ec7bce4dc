use std::time::Duration;

use super::*;

#[test]
fn a_closed_side_connection_is_remembered_and_a_gone_subject_is_left_to_the_caller() {
    let mut rec = Recorder::new(Observed::default(), Mode::Foreground, Instant::now());
    assert!(!rec.side_closed(7));
    assert_eq!(
        rec.fold(RunEvent::SideClosed { pid: 7 }),
        Folded::SideClosed(7)
    );
    assert!(rec.side_closed(7));
    let gone = RunEvent::SubjectGone {
        detail: "exit 1".into(),
    };
    assert_eq!(rec.fold(gone), Folded::SubjectGone("exit 1".into()));
    assert_eq!(
        rec.obs().subject_gone,
        None,
        "the drive records it, the drain does not"
    );
    assert_eq!(rec.fold(RunEvent::ProcessGone { pid: 9 }), Folded::Recorded);
    assert!(rec.obs().gone_at_ms.contains_key(&9));
}

#[test]
fn a_job_output_answer_after_the_deadline_is_not_an_answer_within_it() {
    // The deadline's teardown kills the runtime, which can end the job at last: its
    // answer, drained afterwards, must not make the hang look answered.
    let mut rec = Recorder::new(Observed::default(), Mode::Background, Instant::now());
    rec.asked_job_output();
    // The drive stopped at the deadline and joined its part.
    rec.join(crate::run::sent::Sent {
        timed_out: Some(Duration::from_secs(5)),
        ..Default::default()
    });
    let answer = FromSubject::JobOutput {
        run: String::new(),
        text: "(no new output)\n[status: failed]".into(),
    };
    rec.fold(RunEvent::Subject(answer.clone()));
    assert_eq!(rec.obs().job_output, None);
    assert!(
        rec.obs().job_output_asked,
        "asked, and unanswered within the deadline"
    );
    // In time, it is the answer.
    let mut rec = Recorder::new(Observed::default(), Mode::Background, Instant::now());
    rec.asked_job_output();
    rec.fold(RunEvent::Subject(answer));
    assert!(rec.obs().job_output.is_some());
}

#[test]
fn rfc3339_formats_known_instants() {
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_000_000);
    assert_eq!(
        rfc3339_ms(SystemTime::UNIX_EPOCH),
        "1970-01-01T00:00:00.000Z"
    );
    let leap = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400);
    assert_eq!(rfc3339_ms(leap), "2000-02-29T00:00:00.000Z");
    let quarter = SystemTime::UNIX_EPOCH + Duration::from_millis(1_796_000_000_250);
    assert_eq!(rfc3339_ms(quarter), "2026-11-30T00:53:20.250Z");
    assert_eq!(rfc3339_ms(t), "2026-11-30T00:53:20.000Z");
}

#[test]
fn steps_played_one_after_another_print_as_one_line() {
    let line = |pid, event| FakeLine {
        seq: None,
        run: "r1".into(),
        pid,
        event,
    };
    let ledger = [
        line(7, FakeEvent::Step { at: 0 }),
        line(7, FakeEvent::Step { at: 1 }),
        line(7, FakeEvent::Eof),
        line(7, FakeEvent::Step { at: 2 }),
        line(8, FakeEvent::Step { at: 3 }),
    ];
    assert_eq!(
        ledger_lines(&ledger),
        [
            "[7] steps[0..1] played",
            "[7] {\"ev\":\"eof\"}",
            "[7] steps[2] played",
            "[8] steps[3] played"
        ]
    );
}
