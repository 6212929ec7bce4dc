//! The Claude Code fake accepts every order the real Agent SDK writes in: given a string
//! prompt, SDK 0.3.220 writes the task's `user` message right after its `initialize` request,
//! without awaiting the answer — so a handshake that never completes (a cancel while
//! `initialize` is in flight, a null or error answer) still sees that `user` message.

use crate::common;

use common::{Fake, claude_fake};
use serde_json::{Value, json};

fn initialize() -> Value {
    json!({"type": "control_request", "request_id": "req_1",
        "request": {"subtype": "initialize", "systemPrompt": [""]}})
}

/// The smallest answer the SDK's types accept.
fn initialize_answer() -> Value {
    json!({"commands": [], "agents": [], "output_style": "default",
        "available_output_styles": ["default"], "models": [],
        "account": {"tokenSource": "none", "apiKeySource": "ANTHROPIC_API_KEY", "apiProvider": "firstParty"},
        "pid": 4242})
}

fn user() -> Value {
    json!({"type": "user", "session_id": "", "parent_tool_use_id": null,
        "message": {"role": "user", "content": [{"type": "text", "text": "the task"}]}})
}

/// Sends `frames`, closes stdin and waits for the fake: its violations.
fn violations_after(mut f: Fake, frames: &[Value]) -> Vec<String> {
    for frame in frames {
        f.send(frame.clone());
    }
    f.close_stdin();
    f.wait();
    f.finish();
    f.violations()
}

#[test]
fn a_user_message_racing_a_null_initialize_answer_is_accepted() {
    let f = claude_fake(json!([
        {"expect": "initialize"},
        {"reply": null, "violation": "a null answer on purpose"},
        {"wait_eof": true},
    ]));
    assert_eq!(
        violations_after(f, &[initialize(), user()]),
        Vec::<String>::new()
    );
}

#[test]
fn a_user_message_while_initialize_is_in_flight_is_accepted() {
    let mut f = claude_fake(json!([
        {"expect": "initialize"},
        {"checkpoint": "in-flight"},
        {"await": "gate"},
        {"wait_eof": true},
    ]));
    f.send(initialize());
    f.send(user());
    f.until_event("the checkpoint", |e| {
        matches!(e, conform_protocol::side::FakeEvent::Checkpoint { .. })
    });
    f.release("gate");
    assert_eq!(violations_after(f, &[]), Vec::<String>::new());
}

#[test]
fn a_user_message_before_initialize_or_after_a_completed_handshake_is_not() {
    // Before any `initialize`: no SDK writes that.
    let f = claude_fake(json!([{"expect": "initialize"}, {"wait_eof": true}]));
    let v = violations_after(f, &[user(), initialize()]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].contains("`user`"), "{v:?}");
    // After the handshake completed, a `user` the script does not expect is the subject's.
    let f = claude_fake(json!([
        {"expect": "initialize"},
        {"reply": initialize_answer()},
        {"wait_eof": true},
    ]));
    let v = violations_after(f, &[initialize(), user()]);
    assert_eq!(v.len(), 1, "{v:?}");
}
