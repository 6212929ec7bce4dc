use super::*;
use serde_json::json;

const TH: &str = "thread-1";

fn state() -> TurnState {
    let mut s = TurnState::new(PermissionMode::Never);
    s.set_thread(TH);
    s.turn_sent();
    s
}
fn started(turn: &str) -> (&'static str, Value) {
    (
        "turn/started",
        json!({"threadId": TH, "turn": {"id": turn, "status": "inProgress"}}),
    )
}
fn item(turn: &str, item: Value) -> (&'static str, Value) {
    (
        "item/completed",
        json!({"threadId": TH, "turnId": turn, "item": item}),
    )
}
fn answer(turn: &str, phase: Value, text: &str) -> (&'static str, Value) {
    item(
        turn,
        json!({"type": "agentMessage", "id": "i", "text": text, "phase": phase}),
    )
}
fn completed(turn: &str, status: &str) -> (&'static str, Value) {
    (
        "turn/completed",
        json!({"threadId": TH, "turn": {"id": turn, "status": status}}),
    )
}
fn approval(turn: &str) -> Value {
    json!({"threadId": TH, "turnId": turn, "itemId": "x", "command": "SECRET",
           "availableDecisions": ["accept", "decline", "cancel"]})
}
fn text(t: &str) -> Vec<Value> {
    vec![json!({"type": "text", "text": t})]
}
fn feed(s: &mut TurnState, frames: &[(&'static str, Value)]) {
    for (m, p) in frames {
        s.on_notification(m, p);
    }
}
fn failed_with(s: &TurnState) -> Option<Failure> {
    match s.settled() {
        Some(Settled::Failed(f)) => Some(*f),
        _ => None,
    }
}

/// The same frames give the same outcome whether the response comes first, in the middle or
/// last.
#[test]
fn early_frames_are_buffered_and_replayed() {
    let frames = [
        started("tu"),
        answer("tu", json!("commentary"), "SECRET commentary"),
        answer("tu", Value::Null, "draft"),
        answer("tu", json!("final_answer"), "the answer"),
        completed("tu", "completed"),
    ];
    for at in 0..=frames.len() {
        let mut s = state();
        feed(&mut s, &frames[..at]);
        if at > 0 {
            assert_eq!(s.settled(), None, "nothing decides before the commit");
            assert_eq!(s.selection(), Vec::<Value>::new());
        }
        s.commit("tu");
        feed(&mut s, &frames[at..]);
        assert!(matches!(s.settled(), Some(Settled::Terminal(t)) if t["status"] == "completed"));
        assert_eq!(s.selection(), text("the answer"), "response at {at}");
        assert_eq!(s.open_turn(), None);
    }
}

#[test]
fn conflicting_ids_fail_the_run() {
    let mut s = state();
    feed(&mut s, &[started("a"), answer("b", Value::Null, "x")]);
    assert_eq!(
        failed_with(&s),
        Some(Failure {
            stage: Stage::TurnStart,
            why: "referenced conflicting turns"
        })
    );
    let mut s = state();
    feed(&mut s, &[started("a")]);
    s.commit("b");
    assert_eq!(
        failed_with(&s),
        Some(Failure {
            stage: Stage::TurnStart,
            why: "turn/start response did not match the active turn"
        })
    );
}

#[test]
fn other_threads_and_other_turns_after_commit_are_ignored() {
    let mut s = state();
    s.commit("tu");
    let other_thread = |m: &str, p: Value| {
        let mut p = p;
        p["threadId"] = json!("thread-other");
        (m.to_owned(), p)
    };
    let own = |(m, p): (&str, Value)| (m.to_owned(), p);
    for (m, p) in [
        other_thread(
            "item/completed",
            answer("tu", json!("final_answer"), "SECRET other").1,
        ),
        other_thread("turn/completed", completed("tu", "failed").1),
        own(answer(
            "other-turn",
            json!("final_answer"),
            "SECRET other turn",
        )),
        own(completed("other-turn", "failed")),
        own((
            "error",
            json!({"threadId": TH, "turnId": "tu", "error": {"message": "SECRET"}}),
        )),
    ] {
        s.on_notification(&m, &p);
    }
    assert_eq!(s.settled(), None);
    assert_eq!(s.selection(), Vec::<Value>::new());
    // A non-agent item of the run is fine; a malformed agent message fails it.
    feed(
        &mut s,
        &[item("tu", json!({"type": "reasoning", "text": 3}))],
    );
    assert_eq!(s.settled(), None);
    feed(&mut s, &[answer("tu", json!("partial_answer"), "x")]);
    assert_eq!(
        failed_with(&s),
        Some(Failure {
            stage: Stage::Turn,
            why: "unknown agent message phase"
        })
    );
    // Nothing counts after the run failed.
    feed(&mut s, &[completed("tu", "completed")]);
    assert!(matches!(s.settled(), Some(Settled::Failed(_))));
}

#[test]
fn nothing_before_turn_start_or_without_a_thread() {
    let mut s = TurnState::new(PermissionMode::Never);
    s.on_notification(
        completed("tu", "completed").0,
        &completed("tu", "completed").1,
    );
    s.set_thread(TH);
    s.on_notification(
        completed("tu", "completed").0,
        &completed("tu", "completed").1,
    );
    assert_eq!(s.settled(), None);
    assert_eq!(
        s.on_request("item/commandExecution/requestApproval", &approval("tu")),
        Ok(json!({"decision": "cancel"}))
    );
    assert_eq!(
        failed_with(&s).map(|f| f.why),
        Some("referenced a turn before turn/start")
    );
}

#[test]
fn requests_are_answered_at_once_and_their_facts_wait_for_the_commit() {
    let mut s = state();
    feed(&mut s, &[started("tu")]);
    assert_eq!(
        s.on_request("item/commandExecution/requestApproval", &approval("tu")),
        Ok(json!({"decision": "cancel"}))
    );
    assert_eq!(s.permission(), None);
    feed(
        &mut s,
        &[item(
            "tu",
            json!({"type": "fileChange", "status": "declined", "changes": "SECRET"}),
        )],
    );
    assert_eq!(
        s.on_request(
            "item/tool/requestUserInput",
            &json!({"threadId": TH, "turnId": "tu"})
        ),
        Ok(json!({"answers": {}}))
    );
    s.commit("tu");
    // The latest in original order wins.
    assert_eq!(s.permission().unwrap().request, "user input");
    // MCP elicitation may name no turn.
    assert_eq!(
        s.on_request(
            "mcpServer/elicitation/request",
            &json!({"threadId": TH, "turnId": null})
        ),
        Ok(json!({"action": "decline", "content": null, "_meta": null}))
    );
    assert_eq!(s.permission().unwrap().request, "MCP elicitation");
    feed(
        &mut s,
        &[item(
            "tu",
            json!({"type": "commandExecution", "status": "declined"}),
        )],
    );
    assert_eq!(s.permission().unwrap().request, "command execution");
    assert_eq!(s.settled(), None);
    assert_eq!(s.open_turn(), Some((TH.into(), "tu".into())));
}

#[test]
fn early_facts_are_dropped_without_a_commit() {
    let mut s = state();
    let _ = s.on_request(
        "item/permissions/requestApproval",
        &json!({"threadId": TH, "turnId": "tu"}),
    );
    assert_eq!(s.permission(), None);
    assert_eq!(s.open_turn(), Some((TH.into(), "tu".into())));
}

#[test]
fn requests_that_fail_the_run() {
    let mut s = state();
    s.commit("tu");
    assert_eq!(
        s.on_request("item/tool/call", &json!({"threadId": TH, "turnId": "tu"})),
        Err("subagent-codex: unsupported app-server request \"item/tool/call\"".into())
    );
    assert_eq!(
        failed_with(&s),
        Some(Failure {
            stage: Stage::Turn,
            why: "unsupported app-server request"
        })
    );

    let mut s = state();
    s.commit("tu");
    let mut p = approval("tu");
    p["availableDecisions"] = json!(["accept"]);
    assert!(s.on_request("item/fileChange/requestApproval", &p).is_err());
    assert_eq!(
        failed_with(&s).map(|f| f.why),
        Some("app-server offered no unattended approval decision")
    );

    for params in [
        approval("other-turn"),
        json!({"threadId": "thread-other", "turnId": "tu"}),
        json!({"threadId": TH}),
    ] {
        let mut s = state();
        s.commit("tu");
        let _ = s.on_request("item/commandExecution/requestApproval", &params);
        assert_eq!(
            failed_with(&s).map(|f| f.stage),
            Some(Stage::Turn),
            "{params}"
        );
        assert_eq!(s.permission(), None);
    }
    // Before the commit, a request for another turn conflicts with the provisional id.
    let mut s = state();
    feed(&mut s, &[started("a")]);
    let _ = s.on_request("item/commandExecution/requestApproval", &approval("b"));
    assert_eq!(
        failed_with(&s),
        Some(Failure {
            stage: Stage::TurnStart,
            why: "referenced conflicting turns"
        })
    );
}

#[test]
fn an_unsupported_request_beats_an_early_terminal() {
    let mut s = state();
    feed(&mut s, &[started("tu"), completed("tu", "completed")]);
    let _ = s.on_request("item/tool/call", &json!({"threadId": TH, "turnId": "tu"}));
    s.commit("tu");
    assert!(matches!(s.settled(), Some(Settled::Failed(_))));
}

#[test]
fn frozen_state_answers_but_records_nothing() {
    let mut s = state();
    s.commit("tu");
    feed(&mut s, &[answer("tu", Value::Null, "kept")]);
    s.freeze();
    feed(
        &mut s,
        &[
            answer("tu", Value::Null, "SECRET late"),
            completed("tu", "failed"),
        ],
    );
    assert_eq!(
        s.on_request("item/commandExecution/requestApproval", &approval("tu")),
        Ok(json!({"decision": "cancel"}))
    );
    assert!(s.on_request("item/tool/call", &json!({})).is_err());
    assert_eq!(s.selection(), text("kept"));
    assert_eq!(s.settled(), None);
    assert_eq!(s.permission(), None);
}

#[test]
fn malformed_frames_of_the_run_fail_it() {
    let mut s = state();
    s.commit("tu");
    s.on_notification("item/completed", &json!({"threadId": TH, "item": {}}));
    assert_eq!(failed_with(&s).map(|f| f.why), Some("malformed turn frame"));
}
