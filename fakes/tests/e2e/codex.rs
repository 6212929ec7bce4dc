//! `fake-codex` driven like deepseek-harness's Codex provider drives the real app-server
//! (`"jsonrpc":"2.0"` and `req_…` string ids on its frames, `turn/interrupt` on every dispose),
//! with the side channel as the ledger.

use crate::common;

use common::{Fake, fake_for, fake_versioned, notification, request};
use conform_fakes::codex::EMITTED_AT_BASE_MS as BASE;
use conform_protocol::side::{Direction, FakeEvent};
use serde_json::{Value, json};

const THREAD: &str = "01a2286d-2c77-7350-b611-d5dab2b5852b";
const TURN: &str = "01a2286d-2caa-7551-991f-3b5ccec11e4c";
const VERSIONS: [&str; 2] = ["0.147.0", "0.169.0"];

fn fake(version: &'static str, steps: Value) -> Fake {
    fake_versioned("codex", Some(version), steps)
}

fn rid(n: u8) -> String {
    format!("req_{n}")
}

/// A response as the real server writes it: no `jsonrpc`.
fn reply(id: impl Into<Value>, result: Value) -> Value {
    json!({"id": id.into(), "result": result})
}

fn init_result() -> Value {
    json!({"userAgent": "codex_cli_rs/0.147.0", "codexHome": "/home/u/.codex",
        "platformFamily": "unix", "platformOs": "linux"})
}

fn thread_result() -> Value {
    json!({"thread": {"id": THREAD, "sessionId": THREAD, "preview": "", "ephemeral": true,
        "projectId": null, "modelProvider": "openai", "createdAt": 1795974573,
        "updatedAt": 1795974573, "status": {"type": "idle"}, "path": null, "cwd": "/ws",
        "cliVersion": "0.147.0", "source": "vscode", "gitInfo": null, "name": null, "turns": []},
        "model": "gpt-5", "modelProvider": "openai", "cwd": "/ws", "approvalPolicy": "never",
        "approvalsReviewer": "user", "sandbox": {"type": "readOnly", "networkAccess": false}})
}

/// The `thread/start` answer as the fake of `version` writes it for [`thread_result`]:
/// 0.169.0 adds its thread fields (`originator`: the client's name) and `disabledPluginIds`.
fn thread_answer(version: &str, originator: &str) -> Value {
    let mut r = thread_result();
    if version == "0.169.0" {
        let t = &mut r["thread"];
        t["environments"] =
            json!([{"environmentId": "local", "cwd": "/ws", "runtimeWorkspaceRoots": ["/ws"]}]);
        t["attachedToThreadId"] = Value::Null;
        t["model"] = "gpt-5".into();
        t["reasoningEffort"] = Value::Null;
        t["originator"] = originator.into();
        t["daybreakEnabled"] = Value::Null;
        t["cliVersion"] = "0.169.0".into();
        t["historyMode"] = "paginated".into();
        r["disabledPluginIds"] = json!([]);
    }
    r
}

/// `Turn` of the `turn/start` reply and the sugar, for `version`.
fn turn(version: &str, id: &str, status: &str, error: Value) -> Value {
    let mut t = json!({"id": id, "items": [], "itemsView": "notLoaded", "status": status,
        "error": error, "startedAt": null, "completedAt": null, "durationMs": null});
    if version == "0.169.0" {
        t["rootTurnId"] = id.into();
    }
    t
}

/// Script steps: initialize, `initialized`, thread/start → [`THREAD`], turn/start → [`TURN`].
/// The handshake's steps; `ambient`: the fake also sends what the real server sends unasked
/// (else the script turns it off first).
fn handshake_steps(version: &str, ambient: bool) -> Vec<Value> {
    let first = (!ambient).then(|| json!({"ambient": false}));
    first
        .into_iter()
        .chain([
            json!({"expect": "initialize", "params": {"clientInfo": {"name": "deepseek-harness"}}}),
            json!({"reply": init_result()}),
            json!({"expect": "initialized"}),
            json!({"expect": "thread/start", "params": {"cwd": "/ws", "ephemeral": true}}),
            json!({"reply": thread_result()}),
            json!({"expect": "turn/start", "params": {"threadId": THREAD}}),
            json!({"reply": {"turn": turn(version, TURN, "inProgress", Value::Null)}}),
        ])
        .collect()
}

fn steps(parts: &[Vec<Value>]) -> Value {
    Value::Array(parts.concat())
}

/// The client side of the handshake, as the dsh host sends it, asserting the exact answers
/// (and, with `ambient`, what the real server sends unasked after `initialize`).
fn client_handshake(f: &mut Fake, version: &str, ambient: bool) {
    f.send(request(
        rid(1),
        "initialize",
        json!({"clientInfo": {"name": "deepseek-harness", "title": "DeepSeek Harness",
            "version": "0.0.1"}, "capabilities": {"experimentalApi": false,
            "requestAttestation": false}}),
    ));
    assert_eq!(f.recv(), reply(rid(1), init_result()));
    if ambient {
        assert_eq!(f.recv()["method"], "configWarning");
        assert_eq!(
            f.recv(),
            note(
                "remoteControl/status/changed",
                json!({"status": "disabled", "serverName": "conform-fake",
                    "installationId": "00000000-0000-4000-8000-00000000c0de",
                    "environmentId": null}),
                1
            )
        );
    }
    f.send_line(r#"{"jsonrpc":"2.0","method":"initialized"}"#);
    f.send(request(
        rid(2),
        "thread/start",
        json!({"cwd": "/ws", "ephemeral": true, "approvalPolicy": "never"}),
    ));
    assert_eq!(
        f.recv(),
        reply(rid(2), thread_answer(version, "deepseek-harness"))
    );
    f.send(request(
        rid(3),
        "turn/start",
        json!({"threadId": THREAD, "input": [{"type": "text", "text": "do X",
            "text_elements": []}]}),
    ));
    assert_eq!(
        f.recv(),
        reply(
            rid(3),
            json!({"turn": turn(version, TURN, "inProgress", Value::Null)})
        )
    );
}

fn interrupt(f: &mut Fake, id: String) {
    f.send(request(
        id.clone(),
        "turn/interrupt",
        json!({"threadId": THREAD, "turnId": TURN}),
    ));
    assert_eq!(f.recv(), reply(id, json!({})));
}

fn note(method: &str, params: Value, n: u64) -> Value {
    json!({"method": method, "params": params, "emittedAtMs": BASE + n})
}

/// A turn as the sugar writes it once started (or ended): its times in seconds, here all in
/// the first second of the fake's clock.
fn timed_turn(version: &str, id: &str, status: &str, error: Value, ended: bool) -> Value {
    let mut t = turn(version, id, status, error);
    t["startedAt"] = (BASE / 1000).into();
    if ended {
        t["completedAt"] = (BASE / 1000).into();
        t["durationMs"] = 0.into();
    }
    t
}

/// The next frame with this method (the real server's bookkeeping frames around it skipped).
fn recv_method(f: &mut Fake, method: &str) -> Value {
    loop {
        let frame = f.recv();
        if frame.get("method").and_then(Value::as_str) == Some(method) {
            return frame;
        }
    }
}

fn is_exit_code(e: &FakeEvent, code: i32) -> bool {
    matches!(e, FakeEvent::Exit { code: Some(c), signal: None, .. } if *c == code)
}

/// Every frame the runtime sent, with its `answers`.
fn sent(f: &Fake) -> Vec<(Value, Option<String>, Option<String>)> {
    f.runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                violation,
                answers,
            } => Some((frame, answers, violation)),
            _ => None,
        })
        .collect()
}

/// The frames sent right before each `Terminal` event.
fn terminals(f: &Fake) -> Vec<Value> {
    let events: Vec<FakeEvent> = f
        .runtime_events()
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
        .collect();
    (0..events.len())
        .filter(|i| events[*i] == FakeEvent::Terminal)
        .map(|i| match &events[i - 1] {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                ..
            } => frame.clone(),
            other => panic!("Terminal follows {other:?}, not a sent frame"),
        })
        .collect()
}

fn faults(f: &Fake) -> Vec<String> {
    f.runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Fault { detail } => Some(detail),
            _ => None,
        })
        .collect()
}

/// No `jsonrpc` on anything sent; `emittedAtMs` (an integer) on every notification and on
/// nothing else.
fn assert_wire_shape(f: &Fake) {
    for (frame, _, _) in sent(f) {
        assert!(frame.get("jsonrpc").is_none(), "{frame}");
        let is_notification = frame.get("method").is_some() && frame.get("id").is_none();
        assert_eq!(
            frame.get("emittedAtMs").is_some_and(Value::is_u64),
            is_notification,
            "{frame}"
        );
    }
}

/// An item as the fake of `version` writes it: 0.169.0 stamps the item itself with its start
/// and end (`None`: not ended) and gives an agent message its delivery, moderation and
/// questions.
fn item_at(version: &str, item: &Value, started: u64, completed: Option<u64>) -> Value {
    let mut item = item.clone();
    if version == "0.169.0" {
        item["startedAtMs"] = started.into();
        item["completedAtMs"] = completed.map_or(Value::Null, Value::from);
        if item["type"] == "agentMessage" {
            for k in ["moderation", "delivery", "questions"] {
                item[k] = Value::Null;
            }
        }
    }
    item
}

/// The `item/started` notification (the `n`th) of `item`, started at `at`.
fn item_started(version: &str, item: &Value, at: u64, n: u64) -> Value {
    let params = json!({"item": item_at(version, item, at, None), "threadId": THREAD,
        "turnId": TURN, "startedAtMs": at});
    note("item/started", params, n)
}

/// The `item/completed` notification (the `n`th) of `item`, started and completed at `at`;
/// 0.169.0 adds `contentTokenCount`.
fn item_completed(version: &str, item: &Value, at: u64, n: u64) -> Value {
    let mut params = json!({"item": item_at(version, item, at, Some(at)), "threadId": THREAD,
        "turnId": TURN, "completedAtMs": at});
    if version == "0.169.0" {
        params["contentTokenCount"] = Value::Null;
    }
    note("item/completed", params, n)
}

fn whole_exchange(version: &'static str) {
    let mut f = fake(
        version,
        steps(&[
            handshake_steps(version, true),
            vec![
                json!({"notify": "thread/status/changed",
                    "params": {"threadId": THREAD, "status": {"type": "active", "activeFlags": []}}}),
                json!({"turn_started": true}),
                json!({"agent_message": {"text": "Looking.", "phase": "commentary"}}),
                json!({"agent_message": {"text": "Done: X.", "phase": "final_answer"}}),
                json!({"turn_completed": {"status": "completed"}}),
            ],
        ]),
    );
    client_handshake(&mut f, version, true);
    assert_eq!(
        f.recv(),
        note(
            "thread/status/changed",
            json!({"threadId": THREAD, "status": {"type": "active", "activeFlags": []}}),
            2
        )
    );
    assert_eq!(
        f.recv(),
        note(
            "turn/started",
            json!({"threadId": THREAD,
                "turn": timed_turn(version, TURN, "inProgress", Value::Null, false)}),
            3
        )
    );
    // The task echoed as a userMessage item, started and completed, as the real server does.
    // (The times of one sugar step's frames are read when the step runs: its first frame's.)
    let user = json!({"type": "userMessage", "id": "item-1", "clientId": null,
        "content": [{"type": "text", "text": "do X", "text_elements": []}]});
    assert_eq!(f.recv(), item_started(version, &user, BASE + 3, 4));
    assert_eq!(f.recv(), item_completed(version, &user, BASE + 3, 5));
    // Each agent message: started empty, its text as one delta, completed, then the model
    // call's token usage and rate limits.
    let mut n = 6;
    let mut answers = Vec::new();
    for (id, text, phase) in [
        ("item-2", "Looking.", "commentary"),
        ("item-3", "Done: X.", "final_answer"),
    ] {
        let item = json!({"type": "agentMessage", "id": id, "text": text, "phase": phase,
            "memoryCitation": null});
        let mut started = item.clone();
        started["text"] = json!("");
        assert_eq!(f.recv(), item_started(version, &started, BASE + n, n));
        assert_eq!(
            f.recv(),
            note(
                "item/agentMessage/delta",
                json!({"threadId": THREAD, "turnId": TURN, "itemId": id, "delta": text}),
                n + 1
            )
        );
        assert_eq!(f.recv(), item_completed(version, &item, BASE + n, n + 2));
        let usage = f.recv();
        assert_eq!(
            (&usage["method"], &usage["params"]["turnId"]),
            (&json!("thread/tokenUsage/updated"), &json!(TURN))
        );
        let limits = f.recv();
        assert_eq!(limits["method"], "account/rateLimits/updated");
        assert_eq!(
            limits["params"]["rateLimits"]
                .get("normalModelSlug")
                .is_some(),
            version == "0.169.0"
        );
        answers.push(item);
        n += 5;
    }
    // The thread goes idle, then the turn completes listing its messages.
    assert_eq!(
        f.recv(),
        note(
            "thread/status/changed",
            json!({"threadId": THREAD, "status": {"type": "idle"}}),
            n
        )
    );
    let mut done = timed_turn(version, TURN, "completed", Value::Null, true);
    // A completed turn's items carry the turn's end as both times (whole seconds).
    let end = BASE / 1000 * 1000;
    done["items"] = answers
        .iter()
        .map(|a| item_at(version, a, end, Some(end)))
        .collect();
    done["itemsView"] = "summary".into();
    let completed = note(
        "turn/completed",
        json!({"threadId": THREAD, "turn": done}),
        n + 1,
    );
    assert_eq!(f.recv(), completed);
    // Dispose: the host interrupts even a completed turn, then closes stdin.
    f.until_event("terminal", |e| *e == FakeEvent::Terminal);
    interrupt(&mut f, rid(4));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    assert!(f.stdout_eof());
    f.finish();
    assert_eq!(f.violations(), Vec::<String>::new());
    assert_eq!(terminals(&f), vec![completed]);
    assert_wire_shape(&f);
    let answered: Vec<Option<String>> = sent(&f).into_iter().map(|(_, a, _)| a).collect();
    assert_eq!(
        answered.iter().flatten().collect::<Vec<_>>(),
        ["initialize", "thread/start", "turn/start", "turn/interrupt"]
    );
    assert!(is_exit_code(f.runtime_events().last().unwrap(), 0));
}

#[test]
fn whole_exchange_0_147_0() {
    whole_exchange("0.147.0");
}

#[test]
fn whole_exchange_0_169_0() {
    whole_exchange("0.169.0");
}

#[test]
fn the_default_product_version_is_0_147_0() {
    let mut f = fake_for(
        "codex",
        json!([{"turn_started": true, "thread": "t", "turn": "u"}]),
    );
    assert_eq!(
        f.recv(),
        note(
            "turn/started",
            json!({"threadId": "t",
                "turn": timed_turn("0.147.0", "u", "inProgress", Value::Null, false)}),
            0
        )
    );
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
}

#[test]
fn failed_turns_carry_the_error_as_written_with_the_versions_null_fields() {
    for version in VERSIONS {
        let info = json!({"httpConnectionFailed": {"httpStatusCode": 503}});
        let mut f = fake(
            version,
            steps(&[
                handshake_steps(version, false),
                vec![
                    json!({"turn_completed": {"status": "failed",
                        "error": {"message": "boom", "codexErrorInfo": info}}}),
                    json!({"turn_completed": {"status": "failed", "error": {"message": "m",
                        "codexErrorInfo": "other", "additionalDetails": "more",
                        "misalignment": null}}, "turn": "other-turn"}),
                ],
            ]),
        );
        client_handshake(&mut f, version, false);
        let mut error = json!({"message": "boom", "codexErrorInfo": info,
            "additionalDetails": null});
        if version == "0.169.0" {
            error["misalignment"] = Value::Null;
        }
        // As the real server: the thread's status is `systemError` (observed after failed
        // turns), the error is announced (not retried), then the turn completes failed with
        // the same error.
        assert_eq!(
            f.recv(),
            note(
                "thread/status/changed",
                json!({"threadId": THREAD, "status": {"type": "systemError"}}),
                0
            )
        );
        assert_eq!(
            f.recv(),
            note(
                "error",
                json!({"error": error, "willRetry": false, "threadId": THREAD, "turnId": TURN}),
                1
            )
        );
        let completed = note(
            "turn/completed",
            json!({"threadId": THREAD,
                "turn": timed_turn(version, TURN, "failed", error, true)}),
            2,
        );
        assert_eq!(f.recv(), completed);
        // Keys the step writes stay as written (even `misalignment` under 0.147.0).
        let other = recv_method(&mut f, "turn/completed");
        assert_eq!(
            other["params"]["turn"]["error"],
            json!({"message": "m", "codexErrorInfo": "other", "additionalDetails": "more",
                "misalignment": null}),
            "{version}"
        );
        f.close_stdin();
        assert_eq!(f.wait().code(), Some(0));
        f.finish();
        assert_eq!(terminals(&f), vec![completed], "{version}");
    }
}

#[test]
fn thread_and_turn_address_other_threads_and_turns() {
    let version = "0.169.0";
    let mut f = fake(
        version,
        json!([
            // Before any `thread/start` reply: both ids come from the step.
            {"turn_started": true, "thread": "t-early", "turn": "u-early"},
            {"expect": "thread/start"},
            {"reply": thread_result()},
            // The thread is known now, the turn is not.
            {"agent_message": {"text": "early"}, "turn": "u-early"},
            {"expect": "turn/start"},
            {"reply": {"turn": turn(version, TURN, "inProgress", Value::Null)}},
            {"turn_completed": {"status": "completed"}, "turn": "other-turn"},
            {"turn_completed": {"status": "completed"}, "thread": "other-thread"},
            {"turn_completed": {"status": "interrupted"}}
        ]),
    );
    let started = f.recv();
    assert_eq!(started["method"], "turn/started");
    assert_eq!(started["params"]["threadId"], "t-early");
    assert_eq!(started["params"]["turn"]["id"], "u-early");
    // The userMessage echo of the early turn, started and completed.
    assert_eq!(f.recv()["params"]["turnId"], "u-early");
    assert_eq!(f.recv()["params"]["turnId"], "u-early");
    f.send(request(rid(2), "thread/start", json!({"cwd": "/ws"})));
    assert_eq!(
        f.recv(),
        reply(rid(2), thread_answer(version, "codex_cli_rs"))
    );
    let message = recv_method(&mut f, "item/completed");
    assert_eq!(message["params"]["threadId"], THREAD);
    assert_eq!(message["params"]["turnId"], "u-early");
    assert_eq!(message["params"]["item"]["text"], "early");
    f.send(request(
        rid(3),
        "turn/start",
        json!({"threadId": THREAD, "input": []}),
    ));
    f.recv();
    let other_turn = recv_method(&mut f, "turn/completed");
    assert_eq!(other_turn["params"]["threadId"], THREAD);
    assert_eq!(other_turn["params"]["turn"]["id"], "other-turn");
    let other_thread = recv_method(&mut f, "turn/completed");
    assert_eq!(other_thread["params"]["threadId"], "other-thread");
    assert_eq!(other_thread["params"]["turn"]["id"], TURN);
    let own = recv_method(&mut f, "turn/completed");
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    // Only the `turn/completed` of the fake's own thread and turn is terminal.
    assert_eq!(terminals(&f), vec![own]);
    assert_eq!(f.violations(), Vec::<String>::new());
}

#[test]
fn sugar_without_ids_is_a_fault() {
    for (step, missing) in [
        (json!({"turn_started": true}), "needs a thread id"),
        (
            json!({"ask": "item/fileChange/requestApproval", "thread": "t"}),
            "needs a turn id",
        ),
    ] {
        let mut f = fake("0.147.0", json!([step, {"checkpoint": "after"}]));
        f.until_event("checkpoint", |e| matches!(e, FakeEvent::Checkpoint { .. }));
        f.close_stdin();
        assert_eq!(f.wait().code(), Some(0));
        f.finish();
        let faults = faults(&f);
        assert_eq!(faults.len(), 1, "{faults:?}");
        assert!(
            faults[0].contains("steps[0]") && faults[0].contains(missing),
            "{faults:?}"
        );
        assert!(sent(&f).is_empty());
    }
}

#[test]
fn ask_waits_for_the_answer_and_checks_it() {
    let version = "0.147.0";
    let decline = json!({"decision": "decline"});
    let mut f = fake(
        version,
        steps(&[
            handshake_steps(version, false),
            vec![
                json!({"ask": "item/commandExecution/requestApproval",
                    "params": {"command": "rm -rf /", "availableDecisions": ["accept", "decline"]},
                    "answer": decline}),
                json!({"ask": "item/fileChange/requestApproval", "answer": decline}),
                json!({"ask": "mcpServer/elicitation/request", "params": {"turnId": null}}),
                json!({"ask": "item/permissions/requestApproval"}),
                json!({"ask": "item/tool/requestUserInput"}),
            ],
        ]),
    );
    client_handshake(&mut f, version, false);
    assert_eq!(
        f.recv(),
        json!({"id": 0, "method": "item/commandExecution/requestApproval", "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": "item-1", "startedAtMs": BASE,
            "command": "rm -rf /", "availableDecisions": ["accept", "decline"]}})
    );
    // Disposing while the approval is open: tolerated and answered, the ask still waits.
    interrupt(&mut f, rid(4));
    f.send(json!({"jsonrpc": "2.0", "id": 0, "result": decline}));
    assert_eq!(
        f.recv(),
        json!({"id": 1, "method": "item/fileChange/requestApproval", "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": "item-2", "startedAtMs": BASE}})
    );
    f.send(json!({"id": 1, "result": {"decision": "accept"}}));
    assert_eq!(
        f.recv(),
        json!({"id": 2, "method": "mcpServer/elicitation/request", "params": {
            "threadId": THREAD, "turnId": null, "serverName": "fake-mcp", "mode": "form",
            "message": "Input needed", "requestedSchema": {"type": "object", "properties": {}}}})
    );
    f.send(json!({"id": 2, "result": {"action": "decline", "content": null, "_meta": null}}));
    assert_eq!(
        f.recv(),
        json!({"id": 3, "method": "item/permissions/requestApproval", "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": "item-4", "startedAtMs": BASE,
            "cwd": "/ws", "permissions": {}}})
    );
    f.send(json!({"id": 3, "result": {"permissions": {}, "scope": "turn"}}));
    assert_eq!(
        f.recv(),
        json!({"id": 4, "method": "item/tool/requestUserInput", "params": {
            "threadId": THREAD, "turnId": TURN, "itemId": "item-5", "isBlocking": true,
            "questions": []}})
    );
    f.send(json!({"id": 4, "result": {"answers": {}}}));
    f.until_event(
        "last answer",
        |e| matches!(e, FakeEvent::Answer { method, .. } if method == "item/tool/requestUserInput"),
    );
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    let answers: Vec<(String, Value)> = f
        .runtime_events()
        .into_iter()
        .filter_map(|e| match e {
            FakeEvent::Answer { method, answer } => Some((method, answer)),
            _ => None,
        })
        .collect();
    assert_eq!(answers.len(), 5);
    assert_eq!(
        answers[0],
        (
            "item/commandExecution/requestApproval".into(),
            decline.clone()
        )
    );
    assert_eq!(answers[1].1, json!({"decision": "accept"}));
    // Only the wrong answer is the subject's violation; the interrupt is not.
    let v = f.violations();
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(
        v[0].contains("item/fileChange/requestApproval") && v[0].contains("accept"),
        "{v:?}"
    );
    assert_wire_shape(&f);
}

#[test]
fn unknown_requests_get_minus_32600_and_a_violation() {
    let mut f = fake(
        "0.169.0",
        json!([{"ambient": false}, {"expect": "initialize"}, {"reply": init_result()}]),
    );
    f.send(request(rid(7), "thread/list", json!({})));
    assert_eq!(
        f.recv(),
        json!({"id": rid(7), "error": {"code": -32600,
            "message": "Invalid request: unknown variant `thread/list`"}})
    );
    // A stray notification is a violation too (and gets no answer).
    f.send(notification("initialized", json!({})));
    f.send(request(
        rid(1),
        "initialize",
        json!({"clientInfo": {"name": "c", "version": "1"}}),
    ));
    assert_eq!(f.recv(), reply(rid(1), init_result()));
    // After the script: still an error, `turn/interrupt` still tolerated.
    // (Its params valid, so the only word on it is that this server does not take it.)
    let steer = json!({"threadId": "t", "expectedTurnId": "u", "input": []});
    f.send(request(rid(8), "turn/steer", steer));
    assert_eq!(
        f.recv(),
        json!({"id": rid(8), "error": {"code": -32600,
            "message": "Invalid request: unknown variant `turn/steer`"}})
    );
    interrupt(&mut f, rid(9));
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish();
    let v = f.violations();
    assert_eq!(v.len(), 3, "{v:?}");
    assert!(v[0].contains("thread/list"), "{v:?}");
    assert!(v[1].contains("initialized"), "{v:?}");
    assert!(v[2].contains("turn/steer"), "{v:?}");
    assert_wire_shape(&f);
}

/// Runs one unmarked sugar step addressed by `thread`/`turn` and returns what
/// `unmarked_invalid_frames` says about the ledger.
fn unmarked_verdict(version: &'static str, step: Value) -> Vec<String> {
    let mut f = fake(version, json!([step]));
    f.recv();
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    let log = f.drain();
    conform_fakes::schema::unmarked_invalid_frames(
        conform_protocol::vocab::Provider::Codex,
        Some(version),
        &log,
    )
    .expect("conform has the Codex schema")
    .into_iter()
    .map(|(_, e)| e)
    .collect()
}

#[test]
fn unknown_error_info_codes_are_invalid_only_under_0_147_0() {
    let step = json!({"turn_completed": {"status": "failed",
        "error": {"message": "m", "codexErrorInfo": "modelNotFound"}},
        "thread": "t", "turn": "u"});
    let old = unmarked_verdict("0.147.0", step.clone());
    // Both frames that carry the error: the `error` announcement and `turn/completed`.
    assert_eq!(old.len(), 2, "{old:?}");
    assert!(old.iter().any(|e| e.contains("turn/completed")), "{old:?}");
    assert_eq!(unmarked_verdict("0.169.0", step), Vec::<String>::new());
}

#[test]
fn a_non_string_text_is_invalid_under_both_versions() {
    for version in VERSIONS {
        let step = json!({"agent_message": {"text": 42, "phase": "final_answer"},
            "thread": "t", "turn": "u"});
        let invalid = unmarked_verdict(version, step);
        assert_eq!(invalid.len(), 1, "{version}: {invalid:?}");
        let fine = json!({"agent_message": {"text": "42", "phase": "final_answer"},
            "thread": "t", "turn": "u"});
        assert_eq!(unmarked_verdict(version, fine), Vec::<String>::new());
    }
    // `partial_answer` is a 0.169.0 phase.
    let partial = json!({"agent_message": {"text": "x", "phase": "partial_answer"},
        "thread": "t", "turn": "u"});
    // Both frames that carry the phase: item/started and item/completed.
    assert_eq!(unmarked_verdict("0.147.0", partial.clone()).len(), 2);
    assert_eq!(unmarked_verdict("0.169.0", partial), Vec::<String>::new());
}

#[test]
fn marked_violations_are_sent_as_written() {
    let mut f = fake(
        "0.147.0",
        json!([
            {"agent_message": {"text": 42, "phase": "draft"}, "thread": "t", "turn": "u",
             "violation": "non-string text and an unknown phase"},
            {"turn_completed": {"status": "done", "error": "boom"}, "thread": "t", "turn": "u",
             "violation": "unknown status, string error"}
        ]),
    );
    let msg = recv_method(&mut f, "item/completed");
    assert_eq!(
        msg["params"]["item"],
        json!({"type": "agentMessage", "id": "item-1", "text": 42, "phase": "draft",
            "memoryCitation": null})
    );
    let done = recv_method(&mut f, "turn/completed");
    assert_eq!(done["params"]["turn"]["status"], "done");
    assert_eq!(done["params"]["turn"]["error"], "boom");
    f.close_stdin();
    assert_eq!(f.wait().code(), Some(0));
    f.finish(); // marked frames are exempt
    // Every frame of a marked step carries the mark (a step is one event on the wire); the
    // ones holding the broken values are invalid.
    for (frame, answers, violation) in sent(&f) {
        assert!(violation.is_some(), "{frame}");
        let broken = frame["method"] == "item/completed" || frame["method"] == "turn/completed";
        if broken {
            assert!(
                conform_fakes::codex::validate_frame(&frame, answers.as_deref(), "0.147.0")
                    .is_err(),
                "{frame}"
            );
        }
    }
}

#[test]
fn unknown_product_versions_and_foreign_sugar_are_faults_at_load() {
    for (f, want) in [
        (
            fake("0.150.0", json!([])),
            "product_version: unknown Codex product version \"0.150.0\"",
        ),
        (
            fake("0.147.0", json!([{"chunk": "x"}])),
            "`chunk` is not available for protocol codex",
        ),
        (
            fake_for("acp", json!([{"ask": "item/tool/requestUserInput"}])),
            "`ask` is not available for protocol acp",
        ),
        (
            fake_for("dsh-sdk", json!([{"turn_started": true}])),
            "`turn_started` is not available for protocol dsh-sdk",
        ),
    ] {
        let mut f = f;
        assert_eq!(f.wait().code(), Some(2));
        f.drain();
        let faults = faults(&f);
        assert!(
            faults.iter().any(|d| d.contains(want)),
            "{want}: {faults:?}"
        );
    }
}
