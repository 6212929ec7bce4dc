//! The drive's run-time rules, one event at a time, without processes.
use std::time::Instant;

use conform_protocol::side::FakeLine;
use conform_protocol::vocab::WatchdogStatus;

use super::*;
use crate::proc::run_id::RunId;
use crate::run::board::Board;
use crate::run::observed::Observed;
use crate::run::sent::Sent;

const RUN: &str = "r1";
const FAKE: i32 = 4242;

/// A scenario of provider `acp` from the text of its file (steps need no handshake here:
/// the drive never reads them).
fn scenario(text: &str) -> Scenario {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("acp/case.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let text = format!(
        "title = \"t\"\nprovider = \"acp\"\n{text}\n[expect]\nstop_reason = \"completed\"\n"
    );
    std::fs::write(&path, text).unwrap();
    crate::scenario::load(dir.path(), &path).unwrap()
}

const AWAIT_LATE: &str = "[[fake.steps]]\nawait = \"late\"\n[[fake.steps]]\nstop = \"end_turn\"\n";

struct Case<'a> {
    drive: Drive<'a>,
    rec: Recorder,
}

impl<'a> Case<'a> {
    fn new(s: &'a Scenario, mode: Mode, group: Option<&'a Membership>) -> Case<'a> {
        let obs = Observed {
            run: RunId::from(RUN),
            ..Observed::default()
        };
        Case {
            drive: Drive::new(
                s,
                mode,
                group,
                &RunId::from(RUN),
                Duration::from_secs(20),
                Duration::from_millis(300),
                false,
            ),
            rec: Recorder::new(obs, mode, Instant::now()),
        }
    }

    fn on(&mut self, input: Input) -> Vec<Move> {
        self.drive.on(&mut self.rec, input)
    }

    fn subject(&mut self, msg: FromSubject) -> Vec<Move> {
        self.on(Input::Event(RunEvent::Subject(msg)))
    }

    fn fake(&mut self, event: FakeEvent) -> Vec<Move> {
        self.on(Input::Event(RunEvent::Fake(FakeLine {
            seq: None,
            run: RUN.to_owned(),
            pid: FAKE,
            event,
        })))
    }

    fn obs(&self) -> &Observed {
        self.rec.obs()
    }

    fn sent(&self) -> &Sent {
        self.drive.sent()
    }

    /// How the completion reached the parent (`None`: it did not).
    fn receipt_source(&self) -> Option<&'static str> {
        self.obs()
            .completion_receipt
            .as_ref()
            .map(|r| r.result_source)
    }
}

fn dispatched() -> FromSubject {
    FromSubject::Dispatched {
        run: RUN.into(),
        child_session_key: "k".into(),
        dispatch_at: "2026-12-02T00:00:00.000Z".into(),
        expected_by: "2026-12-02T00:00:00.300Z".into(),
    }
}

fn result() -> FromSubject {
    FromSubject::Result {
        run: RUN.into(),
        stop_reason: "completed".into(),
        output: vec![],
        diagnostic: None,
    }
}

fn settled() -> FromSubject {
    FromSubject::Settled { run: RUN.into() }
}

/// The harness's reading of a `settled` claim over an empty tree.
fn settled_claim() -> crate::proc::settle::Claim {
    crate::proc::settle::Claim {
        what: "settled",
        at_ms: 0,
        members: vec![],
        holders: vec![],
        cgroup: None,
    }
}

fn tool_result(text: &str) -> FromSubject {
    FromSubject::ToolResult {
        run: RUN.into(),
        is_error: false,
        text: text.into(),
    }
}

fn notice() -> FromSubject {
    FromSubject::Notice {
        run: RUN.into(),
        job: "subagent-1".into(),
        text: "done".into(),
    }
}

fn job_output() -> FromSubject {
    FromSubject::JobOutput {
        run: RUN.into(),
        text: "[status: completed]".into(),
    }
}

fn ask_job_output() -> ToSubject {
    ToSubject::JobOutput {
        run: RUN.into(),
        wait: true,
    }
}

fn cancel() -> ToSubject {
    ToSubject::Cancel { run: RUN.into() }
}

fn started_job() -> FromSubject {
    tool_result("started background subagent job subagent-1")
}

#[test]
fn the_subjects_claim_is_read_against_the_tree_once() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.subject(dispatched()), vec![]);
    assert_eq!(c.subject(result()), vec![]);
    assert_eq!(c.subject(settled()), vec![Move::Claim("settled")]);
    assert!(c.obs().settled, "the message itself is taken too");
    c.rec.take_claim(settled_claim());
    // A second claim (refused by the lifecycle) is not read again.
    assert_eq!(c.subject(settled()), vec![]);
    assert_eq!(c.obs().subject_invalid.len(), 1);
}

#[test]
fn a_start_rejection_is_a_claim_too() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Foreground, None);
    let rejected = FromSubject::StartRejected {
        run: RUN.into(),
        error: conform_protocol::subject::StartError {
            name: "AcpRunFailure".into(),
            message: "no".into(),
        },
    };
    assert_eq!(c.subject(rejected), vec![Move::Claim("start_rejected")]);
}

#[test]
fn the_cancel_goes_out_once_at_its_checkpoint() {
    let s = scenario(
        "[[fake.steps]]\ncheckpoint = \"mid\"\n[[fake.steps]]\ncheckpoint = \"other\"\n[[fake.steps]]\nstop = \"cancelled\"\n[cancel]\nat = \"mid\"\n",
    );
    let mut c = Case::new(&s, Mode::Foreground, None);
    let at = |name: &str| FakeEvent::Checkpoint { name: name.into() };
    assert_eq!(c.fake(at("other")), vec![]);
    assert!(!c.sent().cancel);
    assert_eq!(c.fake(at("mid")), vec![Move::Send(cancel())]);
    assert!(c.sent().cancel);
    assert_eq!(c.fake(at("mid")), vec![], "one cancel per run");
}

#[test]
fn the_hosts_dispose_waits_for_the_publication_and_goes_out_once() {
    let s = scenario(
        "[[fake.steps]]\ncheckpoint = \"early\"\n[[fake.steps]]\nstop = \"cancelled\"\n[cancel]\nat = \"early\"\nby = \"dispose\"\n",
    );
    let mut c = Case::new(&s, Mode::Foreground, None);
    let early = || FakeEvent::Checkpoint {
        name: "early".into(),
    };
    // Due before the run is published: the host has no handle yet.
    assert_eq!(c.fake(early()), vec![]);
    assert!(!c.sent().host_cancelled());
    let dispose = ToSubject::Dispose { run: RUN.into() };
    assert_eq!(c.subject(dispatched()), vec![Move::Send(dispose.clone())]);
    assert!(c.sent().dispose && !c.sent().cancel);
    assert_eq!(c.fake(early()), vec![], "one dispose per run");
    assert_eq!(c.subject(result()), vec![]);
    // Due after the publication: at once.
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.subject(dispatched()), vec![]);
    assert_eq!(c.fake(early()), vec![Move::Send(dispose)]);
}

#[test]
fn a_new_process_has_its_tree_scanned() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Foreground, None);
    let register = FakeEvent::Register {
        role: conform_protocol::side::Role::Runtime,
        ppid: 1,
        pgid: 1,
        sid: 1,
        start_time: 1,
        stdio: vec![],
        args: vec![],
        cwd: String::new(),
    };
    assert_eq!(c.fake(register), vec![Move::Scan]);
    assert_eq!(c.fake(FakeEvent::Spawned { child: 7 }), vec![Move::Scan]);
    assert_eq!(c.obs().fake.len(), 2, "both lines are in the record");
}

#[test]
fn a_real_runtime_is_killed_at_its_checkpoint() {
    let s = scenario(
        "[peer]\nname = \"acp-sdk\"\nkill_at = \"turn\"\n[[fake.steps]]\ncheckpoint = \"turn\"\n[[fake.steps]]\nstop = \"end_turn\"\n",
    );
    let mut c = Case::new(&s, Mode::Foreground, None);
    let at_turn = || FakeEvent::Checkpoint {
        name: "turn".into(),
    };
    assert_eq!(c.fake(at_turn()), vec![], "nothing spawned yet");
    c.fake(FakeEvent::Spawned { child: 77 });
    assert_eq!(c.fake(at_turn()), vec![Move::KillRuntime { pid: 77 }]);
}

#[test]
fn a_foreground_await_at_expected_by_is_released_when_it_passes() {
    let s = scenario(&format!(
        "{AWAIT_LATE}[fake.release]\nlate = \"expected-by\"\n"
    ));
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert!(c.drive.awaits_expected_by());
    assert_eq!(
        c.fake(FakeEvent::Awaiting {
            name: "late".into()
        }),
        vec![]
    );
    let release = Move::Release {
        pid: FAKE,
        name: "late".into(),
    };
    assert_eq!(c.on(Input::ExpectedByPassed), vec![release]);
    assert!(!c.drive.awaits_expected_by());
    assert_eq!(c.on(Input::OthersMoved), vec![], "released once");
}

#[test]
fn a_background_child_late_past_expected_by_waits_for_the_watchers_job_output() {
    let s = scenario(&format!(
        "{AWAIT_LATE}[fake.release]\nlate = \"expected-by\"\n"
    ));
    let mut c = Case::new(&s, Mode::Background, None);
    c.subject(started_job());
    c.subject(dispatched());
    c.fake(FakeEvent::Awaiting {
        name: "late".into(),
    });
    assert_eq!(
        c.obs().watchdog.last().map(|w| w.status),
        Some(WatchdogStatus::Active)
    );
    // expectedBy passes with nothing delivered: the watchdog turns suspect and the
    // watcher fetches the status with a waiting job_output — before the child goes on.
    let moves = c.on(Input::ExpectedByPassed);
    assert_eq!(moves, vec![Move::SendAndAwaitRead(ask_job_output())]);
    assert_eq!(
        c.obs().watchdog.last().map(|w| w.status),
        Some(WatchdogStatus::SuspectDeliveryFailure)
    );
    // Once the subject has read it, the child is released.
    let release = Move::Release {
        pid: FAKE,
        name: "late".into(),
    };
    assert_eq!(c.on(Input::JobOutputRead), vec![release]);
    // Its answer ends the run, recovered: the completion fetched back by the waiting read.
    assert_eq!(c.subject(job_output()), vec![Move::Finish]);
    assert_eq!(c.receipt_source(), Some("job_output_wait"));
    assert_eq!(
        c.obs().watchdog.last().map(|w| w.status),
        Some(WatchdogStatus::Recovered)
    );
}

#[test]
fn a_notice_is_followed_by_job_output_then_the_run_ends() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Background, None);
    assert_eq!(c.subject(started_job()), vec![]);
    c.subject(dispatched());
    c.subject(result());
    c.subject(settled());
    assert_eq!(
        c.subject(notice()),
        vec![Move::SendAndAwaitRead(ask_job_output())]
    );
    assert_eq!(c.on(Input::OthersMoved), vec![], "asked once");
    assert_eq!(c.subject(job_output()), vec![Move::Finish]);
    assert_eq!(
        c.receipt_source(),
        Some("completion_push"),
        "pushed, not fetched"
    );
}

#[test]
fn repeated_job_output_calls_wait_for_each_answer() {
    let s = scenario(&format!("{AWAIT_LATE}[job]\njob_output_calls = 3\n"));
    let mut c = Case::new(&s, Mode::Background, None);
    c.subject(started_job());
    c.subject(dispatched());
    c.subject(result());
    c.subject(settled());
    assert_eq!(
        c.subject(notice()),
        vec![Move::SendAndAwaitRead(ask_job_output())]
    );
    assert_eq!(c.subject(job_output()), vec![Move::Send(ask_job_output())]);
    assert_eq!(
        c.on(Input::OthersMoved),
        vec![],
        "the second answer is not in"
    );
    assert_eq!(c.subject(job_output()), vec![Move::Send(ask_job_output())]);
    assert_eq!(c.subject(job_output()), vec![Move::Finish]);
    assert_eq!(c.obs().job_output_repeats.len(), 2);
}

#[test]
fn job_kill_after_the_notice_goes_out_once() {
    let s = scenario(&format!("{AWAIT_LATE}[job]\nkill_after_notice = true\n"));
    let mut c = Case::new(&s, Mode::Background, None);
    c.subject(started_job());
    c.subject(dispatched());
    c.subject(result());
    c.subject(settled());
    assert_eq!(
        c.subject(notice()),
        vec![
            Move::Send(cancel()),
            Move::SendAndAwaitRead(ask_job_output())
        ]
    );
    assert!(c.sent().killed_after_notice);
    assert_eq!(c.on(Input::OthersMoved), vec![]);
}

#[test]
fn a_foreground_run_ends_with_its_tool_result() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Foreground, None);
    c.subject(dispatched());
    c.subject(result());
    c.subject(settled());
    assert_eq!(c.subject(tool_result("done")), vec![Move::Finish]);
}

#[test]
fn an_await_on_another_member_is_released_when_its_milestone_is_on_the_board() {
    let s = scenario(
        "modes = [\"foreground\"]\n[group]\nname = \"g\"\n[[fake.steps]]\nawait = \"go\"\n[[fake.steps]]\nstop = \"end_turn\"\n[fake.release]\ngo = \"b:result\"\n",
    );
    let board = Board::new();
    let me = Membership {
        board: board.clone(),
        member: "a".into(),
    };
    let mut c = Case::new(&s, Mode::Foreground, Some(&me));
    assert_eq!(c.fake(FakeEvent::Awaiting { name: "go".into() }), vec![]);
    assert!(
        board.has("a", "awaiting:go"),
        "the member publishes its own milestones"
    );
    board.reach("b", "result");
    let release = Move::Release {
        pid: FAKE,
        name: "go".into(),
    };
    assert_eq!(c.on(Input::OthersMoved), vec![release]);
}

#[test]
fn what_ends_the_run_from_outside_is_recorded_and_finishes_it() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.on(Input::Deadline), vec![Move::Finish]);
    assert_eq!(c.sent().timed_out, Some(Duration::from_secs(20)));
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.on(Input::Interrupted(15)), vec![Move::Finish]);
    assert_eq!(c.sent().interrupted, Some(15));
    let mut c = Case::new(&s, Mode::Foreground, None);
    let gone = RunEvent::SubjectGone {
        detail: "exit 70".into(),
    };
    assert_eq!(c.on(Input::Event(gone)), vec![Move::Finish]);
    assert_eq!(c.obs().subject_gone.as_deref(), Some("exit 70"));
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.on(Input::RouteClosed), vec![Move::Finish]);
}

#[test]
fn expected_by_at_or_past_the_deadline_is_never_awaited() {
    let s = scenario(AWAIT_LATE);
    let d = Drive::new(
        &s,
        Mode::Background,
        None,
        &RunId::from(RUN),
        Duration::from_secs(1),
        Duration::from_secs(1),
        false,
    );
    assert!(!d.awaits_expected_by());
}

#[test]
fn a_process_gone_is_reaped_if_it_came_back_to_the_harness_and_its_orphans_are_looked_for() {
    let s = scenario(AWAIT_LATE);
    let mut c = Case::new(&s, Mode::Foreground, None);
    let moves = c.on(Input::Event(RunEvent::ProcessGone { pid: 77 }));
    assert_eq!(moves, vec![Move::Reap { pid: 77 }, Move::Scan]);
    assert!(c.obs().gone_at_ms.contains_key(&77));
    // Once the claim is read the tree is recorded: a later exit is only reaped.
    c.rec.take_claim(settled_claim());
    let moves = c.on(Input::Event(RunEvent::ProcessGone { pid: 78 }));
    assert_eq!(moves, vec![Move::Reap { pid: 78 }]);
}

/// A checkpoint `mid`, then an `await` released by `trigger`; `more`: the rest of the file.
fn awaited(trigger: &str, more: &str) -> Scenario {
    scenario(&format!(
        "[[fake.steps]]\ncheckpoint = \"mid\"\n{AWAIT_LATE}[fake.release]\nlate = \"{trigger}\"\n{more}"
    ))
}

const CANCEL_AT_MID: &str = "[cancel]\nat = \"mid\"\n";

fn awaiting() -> FakeEvent {
    FakeEvent::Awaiting {
        name: "late".into(),
    }
}

fn released() -> Move {
    Move::Release {
        pid: FAKE,
        name: "late".into(),
    }
}

/// Every release trigger but `expected-by` and another member's milestone (each has its own
/// test above): the `await` stays blocked until its moment, then is released once.
#[test]
fn each_release_trigger_releases_at_its_moment_and_once() {
    let s = awaited("immediately", "");
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.fake(awaiting()), vec![released()]);
    assert_eq!(c.on(Input::OthersMoved), vec![]);

    let s = awaited("dispatched", "");
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.fake(awaiting()), vec![]);
    assert_eq!(c.subject(dispatched()), vec![released()]);
    assert_eq!(c.subject(result()), vec![]);

    let s = awaited("result", "");
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.fake(awaiting()), vec![]);
    assert_eq!(c.subject(dispatched()), vec![]);
    assert_eq!(c.subject(result()), vec![released()]);

    let s = awaited("cancel", CANCEL_AT_MID);
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.fake(awaiting()), vec![]);
    assert_eq!(c.subject(dispatched()), vec![]);
    let mid = FakeEvent::Checkpoint { name: "mid".into() };
    assert_eq!(c.fake(mid), vec![Move::Send(cancel()), released()]);

    let s = awaited("peeked", "[job]\npeek_at = \"mid\"\n");
    let mut c = Case::new(&s, Mode::Background, None);
    c.subject(started_job());
    c.subject(dispatched());
    assert_eq!(c.fake(awaiting()), vec![]);
    let peek = ToSubject::JobOutput {
        run: RUN.into(),
        wait: false,
    };
    let mid = FakeEvent::Checkpoint { name: "mid".into() };
    assert_eq!(c.fake(mid), vec![Move::Send(peek)]);
    let answer = FromSubject::JobOutput {
        run: RUN.into(),
        text: "[status: running]".into(),
    };
    assert!(c.subject(answer).contains(&released()));
    assert_eq!(c.obs().peeked.as_deref(), Some("[status: running]"));
}

/// The host's own dispose releases a `cancel` await as its local cancel does: "the host
/// cancelled" is one fact.
#[test]
fn a_dispose_releases_what_waits_for_the_cancel() {
    let s = scenario(
        "[[fake.steps]]\ncheckpoint = \"mid\"\n[[fake.steps]]\nawait = \"late\"\n[[fake.steps]]\nstop = \"cancelled\"\n[fake.release]\nlate = \"cancel\"\n[cancel]\nat = \"mid\"\nby = \"dispose\"\n",
    );
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.fake(awaiting()), vec![]);
    assert_eq!(c.fake(FakeEvent::Checkpoint { name: "mid".into() }), vec![]);
    let dispose = ToSubject::Dispose { run: RUN.into() };
    assert_eq!(
        c.subject(dispatched()),
        vec![Move::Send(dispose), released()]
    );
    assert!(c.sent().host_cancelled() && !c.sent().cancel);
}

/// A cancel carried by the `start` (`aborted`) is sent already: a `cancel` await is released
/// at once, and the checkpoint sends no second one.
#[test]
fn a_cancel_carried_by_the_start_is_already_sent() {
    let s = awaited("cancel", CANCEL_AT_MID);
    let mut c = Case::new(&s, Mode::Foreground, None);
    c.drive = Drive::new(
        &s,
        Mode::Foreground,
        None,
        &RunId::from(RUN),
        Duration::from_secs(20),
        Duration::from_millis(300),
        true,
    );
    assert!(c.sent().cancel);
    assert_eq!(c.fake(awaiting()), vec![released()]);
    assert_eq!(c.fake(FakeEvent::Checkpoint { name: "mid".into() }), vec![]);
}

/// `[job] peek_at`: a background run asks `job_output` without wait at the checkpoint, once;
/// a foreground run has no job to ask about.
#[test]
fn the_peek_goes_out_once_at_its_checkpoint_and_only_in_background() {
    let s = awaited("immediately", "[job]\npeek_at = \"mid\"\n");
    let peek = ToSubject::JobOutput {
        run: RUN.into(),
        wait: false,
    };
    let mid = || FakeEvent::Checkpoint { name: "mid".into() };
    let mut c = Case::new(&s, Mode::Background, None);
    c.subject(started_job());
    c.subject(dispatched());
    assert_eq!(c.fake(mid()), vec![Move::Send(peek)]);
    assert!(c.obs().peek_asked);
    assert_eq!(c.fake(mid()), vec![], "one peek per run");
    let mut c = Case::new(&s, Mode::Foreground, None);
    assert_eq!(c.fake(mid()), vec![]);
    assert!(!c.obs().peek_asked);
}
