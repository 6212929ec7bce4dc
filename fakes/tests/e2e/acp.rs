//! `fake-acp` driven like an ACP client, with the side channel as the ledger.

use crate::common;

use std::os::unix::process::ExitStatusExt;

use common::{Fake, fake, fake_with_args, notification, request, result};
use conform_protocol::side::{Direction, FakeEvent, Role};
use serde_json::{Value, json};

fn init_result() -> Value {
    json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": false}})
}

/// Script steps for initialize + session/new (session `sess-42`) + an expected prompt.
fn handshake_steps() -> Vec<Value> {
    vec![
        json!({"expect": "initialize"}),
        json!({"reply": init_result()}),
        json!({"expect": "session/new", "params": {"mcpServers": []}}),
        json!({"reply": {"sessionId": "sess-42"}}),
        json!({"expect": "session/prompt", "params": {"sessionId": "sess-42"}}),
    ]
}

fn steps(parts: &[Vec<Value>]) -> Value {
    Value::Array(parts.concat())
}

/// The client side of the handshake, asserting the fake's exact answers.
fn client_handshake(f: &mut common::Fake) {
    f.send(request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    ));
    assert_eq!(f.recv(), result(0, init_result()));
    f.send(request(
        1,
        "session/new",
        json!({"cwd": "/tmp", "mcpServers": []}),
    ));
    assert_eq!(f.recv(), result(1, json!({"sessionId": "sess-42"})));
    f.send(request(
        2,
        "session/prompt",
        json!({"sessionId": "sess-42", "prompt": [{"type": "text", "text": "hi"}]}),
    ));
}

fn is_exit_code(e: &FakeEvent, code: i32) -> bool {
    matches!(e, FakeEvent::Exit { code: Some(c), signal: None, .. } if *c == code)
}

#[test]
fn handshake_prompt_chunk_stop() {
    let mut f = fake(steps(&[
        handshake_steps(),
        vec![json!({"chunk": "Hello"}), json!({"stop": "end_turn"})],
    ]));
    client_handshake(&mut f);
    assert_eq!(
        f.recv(),
        notification(
            "session/update",
            json!({"sessionId": "sess-42", "update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "Hello"}}})
        )
    );
    assert_eq!(f.recv(), result(2, json!({"stopReason": "end_turn"})));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    let events = f.runtime_events();
    assert!(matches!(
        events[0],
        FakeEvent::Register {
            role: Role::Runtime,
            ..
        }
    ));
    if let FakeEvent::Register {
        ppid,
        stdio,
        start_time,
        ..
    } = &events[0]
    {
        assert_eq!(*ppid, std::process::id() as i32);
        assert!(stdio[0].starts_with("pipe:") && stdio[1].starts_with("pipe:"));
        assert!(*start_time > 0);
    }
    assert_eq!(f.violations(), Vec::<String>::new());
    // `Terminal` right after the prompt response. Only what the stdin reader reports
    // concurrently (received frames, EOF) may sit between them.
    let engine: Vec<&FakeEvent> = events
        .iter()
        .filter(|e| {
            !matches!(
                e,
                FakeEvent::Eof
                    | FakeEvent::Frame {
                        dir: Direction::Recv,
                        ..
                    }
            )
        })
        .collect();
    let at = engine
        .iter()
        .position(|e| matches!(e, FakeEvent::Terminal))
        .expect("Terminal reported");
    assert!(
        matches!(engine[at - 1], FakeEvent::Frame { dir: Direction::Sent, answers: Some(m), .. } if m == "session/prompt")
    );
    // EOF, then a clean exit, last.
    let eof = events
        .iter()
        .position(|e| *e == FakeEvent::Eof)
        .expect("Eof");
    assert!(eof > events.iter().position(|e| matches!(e, FakeEvent::Frame { frame, .. } if frame["id"] == 2 && frame.get("result").is_some())).unwrap());
    assert!(is_exit_code(events.last().unwrap(), 0));
    // Every frame both ways is on the ledger: 3 requests received, 4 frames sent.
    let count = |d: Direction| {
        events
            .iter()
            .filter(|e| matches!(e, FakeEvent::Frame { dir, .. } if *dir == d))
            .count()
    };
    assert_eq!((count(Direction::Recv), count(Direction::Sent)), (3, 4));
}

#[test]
fn unexpected_request_gets_method_not_found_and_a_violation() {
    let mut f = fake(json!([{"expect": "initialize"}, {"reply": init_result()}]));
    f.send(request(7, "foo/bar", json!({})));
    assert_eq!(
        f.recv(),
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32601, "message": "Method not found",
            "data": {"method": "foo/bar"}}})
    );
    let v = f.until_event("violation", |e| matches!(e, FakeEvent::Violation { .. }));
    assert!(format!("{v:?}").contains("foo/bar"), "{v:?}");
    // The run goes on.
    f.send(request(
        0,
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities": {}}),
    ));
    assert_eq!(f.recv(), result(0, init_result()));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    assert_eq!(f.violations().len(), 1);
}

#[test]
fn param_subset_mismatch_is_a_violation_but_accepted() {
    let mut f = fake(json!([
        {"expect": "session/new", "params": {"cwd": "/ws", "mcpServers": []}},
        {"reply": {"sessionId": "s"}}
    ]));
    f.send(request(
        1,
        "session/new",
        json!({"cwd": "/other", "mcpServers": []}),
    ));
    assert_eq!(f.recv(), result(1, json!({"sessionId": "s"})));
    f.close_stdin();
    f.finish();
    let v = f.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("params.cwd"), "{v:?}");
}

#[test]
fn session_cancel_is_tolerated() {
    let mut f = fake(steps(&[
        handshake_steps(),
        vec![json!({"stop": "cancelled"})],
    ]));
    client_handshake(&mut f);
    assert_eq!(f.recv(), result(2, json!({"stopReason": "cancelled"})));
    // Real hosts send this on every dispose, even after the turn.
    f.send(notification(
        "session/cancel",
        json!({"sessionId": "sess-42"}),
    ));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    assert!(f.runtime_events().iter().any(|e| matches!(e,
        FakeEvent::Frame { dir: Direction::Recv, frame, .. } if frame["method"] == "session/cancel")));
}

#[test]
fn a_stray_notification_is_a_violation() {
    let mut f = fake(json!([{"expect": "initialize"}]));
    f.send(notification("session/bogus", json!({})));
    let v = f.until_event("violation", |e| matches!(e, FakeEvent::Violation { .. }));
    assert!(format!("{v:?}").contains("session/bogus"));
    f.close_stdin();
    f.finish();
}

#[test]
fn permission_answers_are_recorded_and_checked() {
    let allow = json!({"outcome": {"outcome": "selected", "optionId": "allow"}});
    let mut f = fake(json!([
        {"expect": "session/prompt"},
        {"permission": {"kind": "edit", "title": "Edit config", "raw_input": {"path": "/ws/c"}},
         "answer": allow},
        {"permission": {"kind": "read"}, "answer": allow},
        {"stop": "end_turn"}
    ]));
    f.send(request(
        5,
        "session/prompt",
        json!({"sessionId": "sess-1", "prompt": [{"type": "text", "text": "go"}]}),
    ));
    let ask = f.recv();
    assert_eq!(
        ask,
        request(
            0,
            "session/request_permission",
            json!({"sessionId": "sess-1",
                "toolCall": {"toolCallId": "call_1", "kind": "edit", "status": "pending",
                    "title": "Edit config", "rawInput": {"path": "/ws/c"}},
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]})
        )
    );
    f.send(result(0, allow.clone()));
    let second = f.recv();
    assert_eq!(second["id"], 1);
    assert_eq!(second["params"]["toolCall"]["kind"], "read");
    let reject = json!({"outcome": {"outcome": "selected", "optionId": "reject"}});
    f.send(result(1, reject.clone()));
    assert_eq!(f.recv(), result(5, json!({"stopReason": "end_turn"})));
    f.close_stdin();
    f.finish();
    let answers: Vec<Value> = f
        .runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Answer { method, answer } => {
                assert_eq!(method, "session/request_permission");
                Some(answer)
            }
            _ => None,
        })
        .collect();
    assert_eq!(answers, vec![allow, reject]);
    let v = f.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("session/request_permission"), "{v:?}");
}

#[test]
fn exit_code_is_reported_then_used() {
    let mut f = fake(json!([{"checkpoint": "c"}, {"exit": 3}]));
    assert_eq!(f.wait().code(), Some(3));
    f.finish();
    let events = f.runtime_events();
    assert_eq!(events[1], FakeEvent::Checkpoint { name: "c".into() });
    assert!(is_exit_code(events.last().unwrap(), 3), "{events:?}");
}

#[test]
fn signal_step_really_dies_by_the_signal() {
    let mut f = fake(json!([{"signal": "SIGABRT"}]));
    let status = f.wait();
    assert_eq!(status.signal(), Some(libc::SIGABRT), "{status:?}");
    assert!(!status.core_dumped());
    f.finish();
    assert!(
        matches!(
            f.runtime_events().last(),
            Some(FakeEvent::Exit { code: None, signal: Some(s), peak_rss_kib: Some(rss) })
                if s == "SIGABRT" && *rss > 0
        ),
        "{:?}",
        f.runtime_events().last()
    );
}

#[test]
fn ignore_sigterm_survives_sigterm() {
    let mut f = fake(json!([{"ignore_sigterm": true}, {"await": "go"}, {"exit": 4}]));
    f.until_event("awaiting", |e| matches!(e, FakeEvent::Awaiting { .. }));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(f.pid(), libc::SIGTERM) };
    let s = f.until_event("signal", |e| matches!(e, FakeEvent::Signal { .. }));
    assert_eq!(
        s,
        FakeEvent::Signal {
            signal: "SIGTERM".into(),
            action: "ignored".into()
        }
    );
    // Still alive and still running its script.
    f.release("go");
    assert_eq!(f.wait().code(), Some(4));
    f.finish();
}

#[test]
fn sigterm_by_default_kills_after_recording() {
    let mut f = fake(json!([{"await": "never"}]));
    f.until_event("awaiting", |e| matches!(e, FakeEvent::Awaiting { .. }));
    // SAFETY: signalling our own child.
    unsafe { libc::kill(f.pid(), libc::SIGTERM) };
    assert_eq!(f.wait().signal(), Some(libc::SIGTERM));
    f.finish();
    let events = f.runtime_events();
    assert_eq!(
        events[events.len() - 2..],
        [
            FakeEvent::Signal {
                signal: "SIGTERM".into(),
                action: "exit".into()
            },
            FakeEvent::Exit {
                code: None,
                signal: Some("SIGTERM".into()),
                peak_rss_kib: events.last().and_then(|e| match e {
                    FakeEvent::Exit { peak_rss_kib, .. } => *peak_rss_kib,
                    _ => None,
                }),
            }
        ]
    );
}

#[test]
fn ignore_eof_stays_alive_until_sigterm() {
    let mut f = fake(json!([{"ignore_eof": true}]));
    f.close_stdin();
    f.until_event("eof", |e| *e == FakeEvent::Eof);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(f.pid(), libc::SIGTERM) };
    // Had it exited at EOF, the next event would be `Exit{code:0}`.
    let next = f.next_line().event;
    assert_eq!(
        next,
        FakeEvent::Signal {
            signal: "SIGTERM".into(),
            action: "exit".into()
        }
    );
    assert_eq!(f.wait().signal(), Some(libc::SIGTERM));
    f.finish();
}

#[test]
fn close_stdout_gives_eof_while_alive() {
    let mut f = fake(json!([{"close_stdout": true}, {"await": "never"}]));
    assert!(f.stdout_eof());
    f.until_event("awaiting", |e| matches!(e, FakeEvent::Awaiting { .. }));
    assert!(
        f.child.try_wait().unwrap().is_none(),
        "the fake must still run"
    );
    f.kill();
    f.finish();
}

#[test]
fn spawned_grandchild_holds_stdout_after_the_runtime_exits() {
    let mut f = fake(json!([{"spawn": {"hold_stdout": true}}, {"await": "go"}, {"exit": 0}]));
    let runtime = f.pid();
    let FakeEvent::Spawned { child } =
        f.until_event("spawned", |e| matches!(e, FakeEvent::Spawned { .. }))
    else {
        unreachable!()
    };
    let reg = f.seen_or_until("grandchild registration", |l| {
        l.pid == child && matches!(l.event, FakeEvent::Register { .. })
    });
    let FakeEvent::Register {
        role, ppid, stdio, ..
    } = reg.event
    else {
        unreachable!()
    };
    assert_eq!((role, ppid), (Role::Grandchild, runtime));
    let FakeEvent::Register {
        stdio: runtime_stdio,
        ..
    } = &f.runtime_events()[0]
    else {
        panic!("runtime registered first")
    };
    assert_eq!(stdio[1], runtime_stdio[1], "same stdout pipe");
    assert_eq!(stdio[0], "/dev/null");
    f.release("go");
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    // The runtime is gone (its fds closed before `wait` returned), the pipe is still held.
    assert!(!f.stdout_hung_up());
    // SAFETY: the pid the grandchild registered with; it is alive (it holds the pipe).
    unsafe { libc::kill(child, libc::SIGKILL) };
    assert!(f.stdout_eof());
}

#[test]
fn grandchild_records_trapped_sigterm() {
    let mut f =
        fake(json!([{"spawn": {"trap_sigterm": true, "setsid": true}}, {"await": "never"}]));
    let FakeEvent::Spawned { child } =
        f.until_event("spawned", |e| matches!(e, FakeEvent::Spawned { .. }))
    else {
        unreachable!()
    };
    let reg = f.seen_or_until("grandchild registration", |l| {
        l.pid == child && matches!(l.event, FakeEvent::Register { .. })
    });
    let FakeEvent::Register { sid, pgid, .. } = reg.event else {
        unreachable!()
    };
    assert_eq!((sid, pgid), (child, child), "setsid");
    // SAFETY: the registered grandchild.
    unsafe { libc::kill(child, libc::SIGTERM) };
    let s = f.until("grandchild signal", |l| {
        l.pid == child && matches!(l.event, FakeEvent::Signal { .. })
    });
    assert_eq!(
        s.event,
        FakeEvent::Signal {
            signal: "SIGTERM".into(),
            action: "ignored".into()
        }
    );
    f.kill();
    f.finish();
}

#[test]
fn await_blocks_until_released() {
    let mut f = fake(json!([{"await": "go"}, {"chunk": "after"}]));
    assert_eq!(
        f.until_event("awaiting", |e| matches!(e, FakeEvent::Awaiting { .. })),
        FakeEvent::Awaiting { name: "go".into() }
    );
    f.release("other");
    f.assert_stdout_quiet(300);
    f.release("go");
    assert_eq!(f.recv()["params"]["update"]["content"]["text"], "after");
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
}

#[test]
fn marked_invalid_frames_are_sent_verbatim_and_fail_the_schema() {
    let mut f = fake(json!([
        {"expect": "session/prompt"},
        {"permission": {"kind": "teleport"}, "violation": "unknown tool kind"},
        {"stop": "bogus", "violation": "unknown stop reason"}
    ]));
    f.send(request(
        2,
        "session/prompt",
        json!({"sessionId": "sess-1", "prompt": []}),
    ));
    let ask = f.recv();
    assert_eq!(ask["params"]["toolCall"]["kind"], "teleport");
    f.send(result(0, json!({"outcome": {"outcome": "cancelled"}})));
    assert_eq!(f.recv(), result(2, json!({"stopReason": "bogus"})));
    f.close_stdin();
    f.finish(); // unmarked frames: valid
    let marked: Vec<(Value, Option<String>)> = f
        .runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                violation: Some(_),
                answers,
            } => Some((frame, answers)),
            _ => None,
        })
        .collect();
    assert_eq!(marked.len(), 2);
    for (frame, answers) in marked {
        assert!(
            conform_fakes::acp::validate_frame(&frame, answers.as_deref()).is_err(),
            "{frame} must fail the schema"
        );
    }
}

#[test]
fn raw_and_non_json_frames() {
    let mut f = fake(
        json!([{"raw": "not json at all", "violation": "garbage line"}, {"expect": "initialize"}]),
    );
    assert_eq!(f.recv(), Value::String("not json at all".into()));
    f.send_line("{oops");
    let v = f.until_event("violation", |e| matches!(e, FakeEvent::Violation { .. }));
    assert!(format!("{v:?}").contains("not JSON"), "{v:?}");
    f.close_stdin();
    f.finish();
    assert!(f.runtime_events().iter().any(|e| matches!(e,
        FakeEvent::Frame { dir: Direction::Recv, frame: Value::String(s), .. } if s == "{oops")));
}

#[test]
fn invalid_scripts_are_faults() {
    for (steps, needle) in [
        (
            json!([{"checkpoint": "a"}, {"chunk": "x", "stop": "end_turn"}]),
            "steps[1]",
        ),
        (json!([{"include": "handshake"}]), "include"),
        (json!([{"signal": "SIGNOPE"}]), "SIGNOPE"),
    ] {
        let mut f = fake(steps);
        assert_eq!(f.wait().code(), Some(2));
        f.finish();
        let events = f.runtime_events();
        let fault = events
            .iter()
            .find_map(|e| match e {
                FakeEvent::Fault { detail } => Some(detail.clone()),
                _ => None,
            })
            .expect("a Fault");
        assert!(fault.contains(needle), "{fault}");
        assert!(is_exit_code(events.last().unwrap(), 2));
    }
}

#[test]
fn bad_arguments_are_faults() {
    let mut f = fake_with_args(json!([]), |cmd, _| {
        cmd.arg("--bogus");
    });
    assert_eq!(f.wait().code(), Some(2));
    f.finish();
    assert!(
        f.runtime_events()
            .iter()
            .any(|e| matches!(e, FakeEvent::Fault { detail } if detail.contains("--bogus")))
    );
}

#[test]
fn nothing_happens_before_the_ack() {
    let mut f = common::fake_unacked(json!([{"chunk": "first"}]));
    let reg = f.next_line();
    assert!(matches!(reg.event, FakeEvent::Register { .. }));
    assert_eq!(reg.run, "run-1");
    f.assert_stdout_quiet(300);
    f.ack();
    assert_eq!(f.recv()["params"]["update"]["content"]["text"], "first");
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
}

#[test]
fn notify_request_and_wait_eof() {
    let mut f = fake(json!([
        {"notify": "session/update", "params": {"sessionId": "sess-1",
            "update": {"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}}}},
        {"request": "fs/read_text_file", "params": {"sessionId": "sess-1", "path": "/ws/a"},
         "answer": {"content": "A"}},
        {"wait_eof": true},
        {"exit": 7}
    ]));
    assert_eq!(
        f.recv()["params"]["update"]["sessionUpdate"],
        "agent_thought_chunk"
    );
    let ask = f.recv();
    assert_eq!(
        ask,
        request(
            0,
            "fs/read_text_file",
            json!({"sessionId": "sess-1", "path": "/ws/a"})
        )
    );
    // A tolerated frame while waiting for the answer, then the answer.
    f.send(notification(
        "session/cancel",
        json!({"sessionId": "sess-1"}),
    ));
    f.send(result(0, json!({"content": "A"})));
    f.until_event("answer", |e| matches!(e, FakeEvent::Answer { .. }));
    f.close_stdin();
    // `wait_eof` goes on with the script instead of exiting 0.
    assert_eq!(f.wait().code(), Some(7));
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    assert!(f.log.iter().all(|l| l.run == "run-1"));
}

#[test]
fn error_to_the_prompt_is_terminal() {
    let mut f = fake(json!([
        {"expect": "session/prompt"},
        {"error": {"code": -32603, "message": "Internal error"}, "to": "session/prompt"}
    ]));
    f.send(request(
        3,
        "session/prompt",
        json!({"sessionId": "sess-1", "prompt": []}),
    ));
    assert_eq!(
        f.recv(),
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32603, "message": "Internal error"}})
    );
    f.until_event("terminal", |e| *e == FakeEvent::Terminal);
    f.close_stdin();
    f.finish();
}

/// A fake in its script, about to run `steps` after the checkpoint `in`.
fn fake_past_checkpoint(steps: Value) -> Fake {
    let mut all = vec![json!({"checkpoint": "in"})];
    all.extend(steps.as_array().expect("steps").iter().cloned());
    let mut f = fake(Value::Array(all));
    f.until_event("checkpoint", |e| matches!(e, FakeEvent::Checkpoint { .. }));
    f
}

fn sigterm(f: &Fake) {
    // SAFETY: signalling our own child.
    unsafe { libc::kill(f.pid(), libc::SIGTERM) };
}

#[test]
fn a_frame_written_before_sigterm_is_read_before_the_fake_dies() {
    // The signal and the frame reach the fake by two paths; the frame was first.
    let mut f = fake_past_checkpoint(json!([{"expect": "initialize"}, {"await": "never"}]));
    f.send(request(0, "initialize", json!({"protocolVersion": 1})));
    sigterm(&f);
    assert_eq!(f.wait().signal(), Some(libc::SIGTERM));
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    assert!(
        f.runtime_events().iter().any(|e| matches!(
            e,
            FakeEvent::Frame {
                dir: Direction::Recv,
                ..
            }
        )),
        "the frame was read: {:?}",
        f.runtime_events()
    );
}

#[test]
fn sigterm_instead_of_the_expected_frame_is_the_subjects_violation() {
    let mut f = fake_past_checkpoint(json!([{"expect": "session/cancel"}]));
    sigterm(&f);
    assert_eq!(f.wait().signal(), Some(libc::SIGTERM));
    f.finish();
    assert_eq!(
        f.violations(),
        ["SIGTERM arrived while the script expected `session/cancel`"]
    );
}

#[test]
fn stdin_closed_and_sigterm_at_once_is_a_closed_stdin() {
    let mut f = fake_past_checkpoint(json!([{"expect": "session/cancel"}]));
    f.close_stdin();
    sigterm(&f);
    // It may exit at EOF before the signal arrives, as a real runtime may.
    let status = f.wait();
    assert!(
        status.code() == Some(0) || status.signal() == Some(libc::SIGTERM),
        "{status:?}"
    );
    f.finish();
    assert_eq!(
        f.violations(),
        ["stdin closed while the script expected `session/cancel`"]
    );
}

#[test]
fn a_request_left_unanswered_at_eof_is_the_subjects_violation() {
    let mut f = fake(json!([
        {"request": "fs/read_text_file", "params": {"sessionId": "s", "path": "/ws/a"}}
    ]));
    assert_eq!(f.recv()["method"], "fs/read_text_file");
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    assert_eq!(
        f.violations(),
        ["stdin closed while `fs/read_text_file` was unanswered"]
    );
}

#[test]
fn sigterm_during_a_delay_kills_at_once() {
    // Nothing is read from the subject during a delay: the fake dies as a real runtime does.
    let mut f = fake_past_checkpoint(json!([{"delay_ms": 600000}, {"exit": 3}]));
    sigterm(&f);
    assert_eq!(f.wait().signal(), Some(libc::SIGTERM));
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
}
