//! `fake-dsh-sdk` driven like the DSH SDK client, with the side channel as the ledger.

use crate::common;

use common::{Fake, fake_for, fake_versioned, notification, request, result};
use conform_protocol::side::{Direction, FakeEvent};
use serde_json::{Value, json};

const SESSION: &str = "session-3c0ffee0000000000000000000000001";

fn fake(steps: Value) -> Fake {
    fake_for("dsh-sdk", steps)
}

/// A client request id the way the real client makes them: `req_<32 hex>`.
fn rid(n: u8) -> String {
    format!("req_{n:032x}")
}

fn server_info() -> Value {
    json!({"serverInfo": {"name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}})
}

fn init_params() -> Value {
    json!({"cwd": "/abs/ws", "provider": "deepseek-official", "model": "deepseek-v4-flash",
        "maxTokens": 4096})
}

fn blocks() -> Value {
    json!([{"type": "text", "text": "do X"}])
}

/// Script steps: initialize, then the prompt for [`SESSION`].
fn handshake_steps() -> Vec<Value> {
    vec![
        json!({"expect": "initialize",
            "params": {"provider": "deepseek-official", "model": "deepseek-v4-flash"}}),
        json!({"reply": server_info()}),
        json!({"expect": "session/prompt", "params": {"sessionId": SESSION}}),
    ]
}

fn steps(parts: &[Vec<Value>]) -> Value {
    Value::Array(parts.concat())
}

/// The client side: initialize (asserting the exact answer), then the prompt.
fn client_handshake(f: &mut Fake) {
    f.send(request(rid(1), "initialize", init_params()));
    assert_eq!(f.recv(), result(rid(1), server_info()));
    f.send(request(
        rid(2),
        "session/prompt",
        json!({"sessionId": SESSION, "contentBlocks": blocks()}),
    ));
}

fn event(session: &str, ev: Value) -> Value {
    notification("session.event", json!({"sessionId": session, "event": ev}))
}

fn status(session: &str, status: &str) -> Value {
    notification(
        "session.status",
        json!({"sessionId": session, "status": status}),
    )
}

fn is_exit_code(e: &FakeEvent, code: i32) -> bool {
    matches!(e, FakeEvent::Exit { code: Some(c), signal: None, .. } if *c == code)
}

/// The runtime's own actions, without what its stdin reader reports concurrently.
fn engine_events(f: &Fake) -> Vec<FakeEvent> {
    f.runtime_events()
        .into_iter()
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
        .collect()
}

/// Indexes (in `engine_events`) of the `Terminal` events, each with the frame sent just before.
fn terminals(f: &Fake) -> Vec<Value> {
    let events = engine_events(f);
    events
        .iter()
        .enumerate()
        .filter(|(_, e)| **e == FakeEvent::Terminal)
        .map(|(i, _)| match &events[i - 1] {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                ..
            } => frame.clone(),
            other => panic!("Terminal follows {other:?}, not a sent frame"),
        })
        .collect()
}

fn error(id: impl Into<Value>, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "error": {"code": code, "message": message}})
}

#[test]
fn happy_exchange_then_shutdown() {
    let mut f = fake(steps(&[
        handshake_steps(),
        vec![
            json!({"receipt": "msg-1"}),
            json!({"status": "running"}),
            json!({"delta": "hi"}),
            json!({"message": "hi"}),
            json!({"turn_end": "completed"}),
            json!({"status": "idle"}),
            json!({"reply": {"messageId": "msg-1"}}),
        ],
    ]));
    client_handshake(&mut f);
    assert_eq!(
        f.recv(),
        event(
            SESSION,
            json!({"type": "agent/inbox/spliced", "seq": 0, "time": 0, "data": {
                "target": "next-turn", "start": 0, "inserted": [{"id": "msg-1", "role": "user",
                "content": blocks(), "source": {"kind": "user"}}]}})
        )
    );
    assert_eq!(f.recv(), status(SESSION, "running"));
    assert_eq!(
        f.recv(),
        event(
            SESSION,
            json!({"type": "assistant/chunk", "seq": 1, "time": 0, "data": {"turn": 1, "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}})
        )
    );
    assert_eq!(
        f.recv(),
        event(
            SESSION,
            json!({"type": "assistant/message", "seq": 2, "time": 0, "surfaceOp": "append", "data": {"turn": 1,
            "step": 1, "message": {"id": "m1", "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "source": {"kind": "model", "provider": "deepseek-official",
            "model": "deepseek-v4-flash", "replayState": replay()}},
            "usage": usage(),
            // The stream the text came from, recorded as the real runtime does.
            "stream": [
                {"type": "chunk", "time": 0, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}},
                {"type": "text-chunks", "time0": 0, "index": 0, "dt": [], "texts": ["hi"]},
                {"type": "chunk", "time": 0, "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": "hi"}}},
                {"type": "chunk", "time": 0, "chunk": {"type": "usage", "usage": usage()}},
                {"type": "chunk", "time": 0, "chunk": {"type": "finish", "reason": {"kind": "stop"}, "replayState": replay()}}
            ]}})
        )
    );
    let turn_end = event(
        SESSION,
        json!({"type": "turn/end", "seq": 3, "time": 0,
            "data": {"turn": 1, "reason": {"kind": "completed"}}}),
    );
    assert_eq!(f.recv(), turn_end);
    assert_eq!(f.recv(), status(SESSION, "idle"));
    assert_eq!(f.recv(), result(rid(2), json!({"messageId": "msg-1"})));
    // The script is over: `shutdown` is answered and the runtime exits 0 by itself, stdin open.
    f.send(request(rid(3), "shutdown", json!({})));
    assert_eq!(f.recv(), result(rid(3), json!({})));
    // Awaited on the side channel first: a fake that stays alive fails here, within the deadline.
    f.until_event("exit", |e| matches!(e, FakeEvent::Exit { .. }));
    assert_eq!(f.wait().code(), Some(0));
    assert!(f.stdout_eof());
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    // `Terminal` once, right after the `turn/end` event.
    assert_eq!(terminals(&f), vec![turn_end]);
    let events = f.runtime_events();
    assert!(!events.contains(&FakeEvent::Eof), "{events:?}");
    assert!(is_exit_code(events.last().unwrap(), 0));
    let shutdown_answer = events.iter().find_map(|e| match e {
        FakeEvent::Frame {
            dir: Direction::Sent,
            frame,
            answers,
            ..
        } if frame["id"] == rid(3) => answers.clone(),
        _ => None,
    });
    assert_eq!(shutdown_answer.as_deref(), Some("shutdown"));
}

#[test]
fn stdin_eof_after_the_script_exits_0() {
    let mut f = fake(json!([{"expect": "initialize"}, {"reply": server_info()}]));
    f.send(request(rid(1), "initialize", init_params()));
    assert_eq!(f.recv(), result(rid(1), server_info()));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    let events = f.runtime_events();
    assert!(events.contains(&FakeEvent::Eof));
    assert!(is_exit_code(events.last().unwrap(), 0));
    assert_eq!(f.violations(), Vec::<String>::new());
}

#[test]
fn session_modifier_addresses_another_session() {
    let mut f = fake(steps(&[
        handshake_steps(),
        vec![
            json!({"status": "running", "session": "child-1"}),
            json!({"delta": "sub", "session": "child-1"}),
            json!({"message": "", "session": "child-1"}),
            json!({"turn_end": "completed", "session": "child-1"}),
            json!({"checkpoint": "child-done"}),
            json!({"delta": "main"}),
            json!({"turn_end": {"kind": "aborted", "reason": "disposed"}}),
        ],
    ]));
    client_handshake(&mut f);
    assert_eq!(f.recv(), status("child-1", "running"));
    // The child session counts its own `seq` from 0.
    let chunk = f.recv();
    assert_eq!(chunk["params"]["sessionId"], "child-1");
    assert_eq!(chunk["params"]["event"]["seq"], 0);
    assert_eq!(chunk["params"]["event"]["data"]["chunk"]["text"], "sub");
    // An empty message is usage-only: no content blocks.
    assert_eq!(
        f.recv(),
        event(
            "child-1",
            json!({"type": "assistant/message", "seq": 1, "time": 0, "surfaceOp": "append", "data": {"turn": 1,
            "step": 1, "message": {"id": "m1", "role": "assistant", "content": [],
            "source": {"kind": "model", "provider": "deepseek-official",
            "model": "deepseek-v4-flash", "replayState": replay()}},
            "usage": usage(),
            "stream": [
                {"type": "chunk", "time": 0, "chunk": {"type": "usage", "usage": usage()}},
                {"type": "chunk", "time": 0, "chunk": {"type": "finish", "reason": {"kind": "stop"}, "replayState": replay()}}
            ]}})
        )
    );
    let child_end = f.recv();
    assert_eq!(child_end["params"]["sessionId"], "child-1");
    assert_eq!(child_end["params"]["event"]["type"], "turn/end");
    let main = f.recv();
    assert_eq!(main["params"]["sessionId"], SESSION);
    assert_eq!(main["params"]["event"]["seq"], 0);
    let main_end = event(
        SESSION,
        json!({"type": "turn/end", "seq": 1, "time": 0,
            "data": {"turn": 1, "reason": {"kind": "aborted", "reason": "disposed"}}}),
    );
    assert_eq!(f.recv(), main_end);
    f.until_event("terminal", |e| *e == FakeEvent::Terminal);
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    // The child's `turn/end` is not the prompt's: only the second one is terminal.
    assert_eq!(terminals(&f), vec![main_end]);
    // The prompt's open request is simply left unanswered; no violation either way.
    assert_eq!(f.violations(), Vec::<String>::new());
}

#[test]
fn unexpected_requests_get_the_runtime_error_and_a_violation() {
    let mut f = fake(json!([{"expect": "initialize"}, {"reply": server_info()}]));
    f.send(request(
        rid(7),
        "session/close",
        json!({"sessionId": SESSION}),
    ));
    assert_eq!(
        f.recv(),
        error(
            rid(7),
            -32603,
            "unknown DeepSeek Harness SDK runtime method: session/close"
        )
    );
    // `shutdown` is legal at any time, as on the real runtime: answered, no violation.
    f.send(request(rid(8), "shutdown", json!({})));
    assert_eq!(f.recv(), result(rid(8), json!({})));
    f.send(request(rid(1), "initialize", init_params()));
    assert_eq!(f.recv(), result(rid(1), server_info()));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    let v = f.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("session/close"), "{v:?}");
}

#[test]
fn sugar_without_a_session_is_a_fault() {
    let mut f = fake(json!([{"delta": "early"}, {"checkpoint": "after"}]));
    f.until_event("checkpoint", |e| matches!(e, FakeEvent::Checkpoint { .. }));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    let faults: Vec<String> = f
        .runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Fault { detail } => Some(detail),
            _ => None,
        })
        .collect();
    assert_eq!(faults.len(), 1, "{faults:?}");
    assert!(
        faults[0].contains("steps[0]") && faults[0].contains("needs a session"),
        "{faults:?}"
    );
    // Nothing was sent.
    assert!(!f.runtime_events().iter().any(|e| matches!(
        e,
        FakeEvent::Frame {
            dir: Direction::Sent,
            ..
        }
    )));
}

#[test]
fn other_protocols_sugar_is_rejected() {
    for (protocol, step, key) in [
        ("dsh-sdk", json!({"chunk": "x"}), "chunk"),
        ("acp", json!({"receipt": "msg-1"}), "receipt"),
    ] {
        let mut f = fake_for(protocol, json!([step]));
        assert_eq!(f.wait().code(), Some(2));
        f.finish();
        let fault = f
            .runtime_events()
            .into_iter()
            .find_map(|e| match e {
                FakeEvent::Fault { detail } => Some(detail),
                _ => None,
            })
            .expect("a Fault");
        assert!(
            fault.contains(&format!("`{key}` is not available for protocol {protocol}")),
            "{fault}"
        );
    }
}

#[test]
fn requests_the_fake_sends_use_string_ids() {
    let mut f = fake(json!([
        {"request": "host/ask", "params": {"q": 1}, "answer": {"ok": true},
         "violation": "the runtime sends no requests"},
        {"request": "host/ask", "params": {"q": 2}, "violation": "the runtime sends no requests"}
    ]));
    assert_eq!(f.recv(), request("req_0", "host/ask", json!({"q": 1})));
    f.send(result("req_0", json!({"ok": true})));
    assert_eq!(f.recv(), request("req_1", "host/ask", json!({"q": 2})));
    f.send(result("req_1", json!({})));
    f.until_event(
        "answer",
        |e| matches!(e, FakeEvent::Answer { answer, .. } if *answer == json!({})),
    );
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
}

#[test]
fn marked_malformed_frames_are_sent_as_written_and_fail_the_schema() {
    let mut f = fake(json!([
        {"expect": "initialize"},
        {"reply": {}, "violation": "initialize result without serverInfo"},
        {"expect": "session/prompt"},
        {"event": {"data": {}}, "violation": "event without type"},
        {"event": {"type": "assistant/message", "seq": 7, "time": 1.5,
            "data": {"turn": 0, "step": 0, "message": {"id": "m9", "content": "hi"}}},
         "violation": "message content is not an array"},
        {"turn_end": "none", "violation": "unknown turn-end kind"},
        {"status": "busy", "violation": "unknown status"},
        {"reply": {"messageId": "msg-1"}}
    ]));
    f.send(request(rid(1), "initialize", init_params()));
    assert_eq!(f.recv(), result(rid(1), json!({})));
    f.send(request(
        rid(2),
        "session/prompt",
        json!({"sessionId": SESSION, "contentBlocks": blocks()}),
    ));
    // Filled in only where absent: `seq` and `time`.
    assert_eq!(
        f.recv(),
        event(SESSION, json!({"seq": 0, "time": 0, "data": {}}))
    );
    assert_eq!(
        f.recv(),
        event(
            SESSION,
            json!({"type": "assistant/message", "seq": 7, "time": 1.5,
                "data": {"turn": 0, "step": 0, "message": {"id": "m9", "content": "hi"}}})
        )
    );
    let unknown_end = f.recv();
    assert_eq!(
        unknown_end["params"]["event"]["data"]["reason"],
        json!({"kind": "none"})
    );
    assert_eq!(unknown_end["params"]["event"]["seq"], 2);
    assert_eq!(f.recv(), status(SESSION, "busy"));
    assert_eq!(f.recv(), result(rid(2), json!({"messageId": "msg-1"})));
    f.close_stdin();
    f.finish(); // the unmarked frames are valid
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
    assert_eq!(marked.len(), 5);
    for (frame, answers) in marked {
        let verdict = conform_fakes::dsh_sdk::validate_frame(&frame, answers.as_deref());
        assert!(verdict.is_err(), "{frame} must fail the schema");
    }
    // The unknown kind still ends the prompt's turn on the child's side.
    assert_eq!(terminals(&f).len(), 1);
}

#[test]
fn unmarked_invalid_frames_are_caught() {
    // Without the mark, the same frame is a harness fault (`finish` would panic on it).
    let mut f = fake(json!([{"status": "busy", "session": "s"}]));
    assert_eq!(f.recv(), status("s", "busy"));
    f.close_stdin();
    let log = f.drain();
    let invalid = conform_fakes::schema::unmarked_invalid_frames(
        conform_protocol::vocab::Provider::DshSdk,
        None,
        &log,
    )
    .expect("conform has the DSH SDK schema");
    assert_eq!(invalid.len(), 1, "{invalid:?}");
    assert!(invalid[0].1.contains("busy"), "{}", invalid[0].1);
}

#[test]
fn an_attempt_carries_its_partial_text_and_failure_like_the_real_runtime() {
    let mut f = fake(steps(&[
        handshake_steps(),
        vec![json!({"attempt": "Hello, "}), json!({"turn_end": "error"})],
    ]));
    client_handshake(&mut f);
    let attempt = f.recv();
    assert_eq!(attempt["params"]["event"]["type"], "assistant/attempt");
    let stream = attempt["params"]["event"]["data"]["stream"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(stream[1]["type"], "text-chunks");
    assert_eq!(stream[1]["texts"], json!(["Hello, "]));
    let finish = &stream.last().unwrap()["chunk"];
    assert_eq!(finish["type"], "finish");
    assert_eq!(finish["reason"]["kind"], "error");
    assert_eq!(
        finish["reason"]["failure"]["message"],
        "DeepSeek Messages stream ended before message_stop"
    );
}

#[test]
fn a_best_effort_shutdown_after_stdout_closed_is_no_violation() {
    // `dsh-sdk/stage/initialize-stdout-closed` with a client that always sends `shutdown`
    // while closing: the fake cannot answer (its stdout is closed) and that is no one's fault.
    let mut f = fake(json!([{"expect": "initialize"}, {"close_stdout": true}, {"wait_eof": true}]));
    f.send(request(rid(1), "initialize", init_params()));
    assert!(f.stdout_eof());
    f.send(request(rid(2), "shutdown", json!({})));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    let lines = f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    assert!(
        !lines
            .iter()
            .any(|l| matches!(l.event, FakeEvent::Fault { .. })),
        "{lines:?}"
    );
}

#[test]
fn at_0_1_1_the_text_streams_as_chunks_before_the_message_as_in_the_example_exchange() {
    // `--product-version dsh-sdk=0.1.1`: the order of dsh-facts.md §5.4's example exchange
    // (deepseek-harness 0.1.1-rc.2): receipt, running, an `assistant/chunk` text-delta, the
    // `assistant/message` with the same text, `turn/end`, idle, then the `{messageId}` reply.
    let mut f = fake_versioned(
        "dsh-sdk",
        Some("0.1.1"),
        steps(&[
            handshake_steps(),
            vec![
                json!({"receipt": "msg-1"}),
                json!({"status": "running"}),
                json!({"attempt": "cut "}),
                json!({"message": "hi"}),
                json!({"message": ""}),
                json!({"turn_end": "completed"}),
                json!({"status": "idle"}),
                json!({"reply": {"messageId": "msg-1"}}),
            ],
        ]),
    );
    client_handshake(&mut f);
    assert_eq!(f.recv()["params"]["event"]["type"], "agent/inbox/spliced");
    assert_eq!(f.recv(), status(SESSION, "running"));
    let chunk = |seq: u64, text: &str| {
        event(
            SESSION,
            json!({"type": "assistant/chunk", "seq": seq, "time": 0, "data": {"turn": 1,
                "step": 1, "chunk": {"type": "text-delta", "index": 0, "text": text}}}),
        )
    };
    // A failed attempt streamed its text before it failed.
    assert_eq!(f.recv(), chunk(1, "cut "));
    let attempt = f.recv();
    assert_eq!(attempt["params"]["event"]["type"], "assistant/attempt");
    assert_eq!(attempt["params"]["event"]["seq"], 2);
    assert_eq!(f.recv(), chunk(3, "hi"));
    let message = f.recv();
    assert_eq!(message["params"]["event"]["type"], "assistant/message");
    assert_eq!(message["params"]["event"]["seq"], 4);
    assert_eq!(
        message["params"]["event"]["data"]["message"]["content"],
        json!([{"type": "text", "text": "hi"}])
    );
    // An empty (usage-only) message streamed no text: no chunk before it.
    let empty = f.recv();
    assert_eq!(empty["params"]["event"]["type"], "assistant/message");
    assert_eq!(empty["params"]["event"]["seq"], 5);
    let turn_end = f.recv();
    assert_eq!(turn_end["params"]["event"]["type"], "turn/end");
    assert_eq!(f.recv(), status(SESSION, "idle"));
    assert_eq!(f.recv(), result(rid(2), json!({"messageId": "msg-1"})));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    // Every frame valid against the DSH SDK schema (`finish` checks at 0.1.1), no violation.
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    assert_eq!(terminals(&f), vec![turn_end]);
}

#[test]
fn at_the_default_version_the_text_is_only_on_the_message() {
    // 0.2.1rc2 (no `product_version`, or named): no chunk before a message or an attempt.
    for version in [None, Some("0.2.1rc2")] {
        let mut f = fake_versioned(
            "dsh-sdk",
            version,
            steps(&[
                handshake_steps(),
                vec![json!({"attempt": "cut "}), json!({"message": "hi"})],
            ]),
        );
        client_handshake(&mut f);
        assert_eq!(f.recv()["params"]["event"]["type"], "assistant/attempt");
        assert_eq!(f.recv()["params"]["event"]["type"], "assistant/message");
        f.close_stdin();
        assert_eq!(f.wait().code(), Some(0));
        f.finish();
    }
}

#[test]
fn an_unknown_runtime_version_is_a_fault_naming_the_known_ones() {
    let mut f = fake_versioned("dsh-sdk", Some("0.1.0"), json!([]));
    assert_eq!(f.wait().code(), Some(2));
    f.drain();
    let faults: Vec<String> = f
        .runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Fault { detail } => Some(detail),
            _ => None,
        })
        .collect();
    assert!(
        faults.iter().any(|d| d.contains(
            "product_version: unknown DSH SDK runtime version \"0.1.0\" (known: 0.2.1rc2, 0.1.1)"
        )),
        "{faults:?}"
    );
}

/// The real runtime's record of the model response (`replayState`), as the fake sends it.
fn replay() -> Value {
    json!({"response": {"kind": "deepseek-messages", "version": 1, "model": "deepseek-v4-flash"},
        "blocks": [{"type": "text"}]})
}

fn usage() -> Value {
    json!({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3})
}
