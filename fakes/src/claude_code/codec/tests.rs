use super::*;

const STREAM_JSON: [&str; 5] = [
    "--output-format",
    "stream-json",
    "--input-format",
    "stream-json",
    "--verbose",
];

fn started_with(extra: &[&str]) -> ClaudeCodeCodec {
    let mut c = ClaudeCodeCodec::new();
    let args: Vec<String> = STREAM_JSON
        .iter()
        .chain(extra)
        .map(|a| a.to_string())
        .collect();
    c.runtime_args(&args).expect("flags the real CLI takes");
    c
}

#[test]
fn a_partial_message_needs_the_flag_and_is_a_valid_stream_event() {
    // No catalog case sends one (the host never asks for partial messages): shown here.
    let step = Step {
        partial: Some("half an answer".into()),
        ..Step::default()
    };
    let refused = started_with(&[]).sugar(&step).unwrap_err();
    assert!(
        refused.to_string().contains("--include-partial-messages"),
        "{refused}"
    );
    let mut c = started_with(&["--include-partial-messages"]);
    let Ok(Some(Sugar::Notify { method, params })) = c.sugar(&step) else {
        panic!("a notification");
    };
    let frame = c.notification(&method, params);
    assert_eq!(frame["type"], "stream_event");
    assert_eq!(frame["event"]["delta"]["text"], "half an answer");
    c.validate_frame(&frame, None)
        .expect("valid for the SDK's schema");
}

#[test]
fn only_the_sdks_unasked_frames_are_tolerated() {
    let c = started_with(&[]);
    assert!(c.tolerated(kind::INTERRUPT, true));
    assert!(c.tolerated("keep_alive", false));
    assert!(!c.tolerated(kind::INTERRUPT, false));
    assert!(!c.tolerated("keep_alive", true));
    assert!(!c.tolerated("can_use_tool", true));
    assert!(!c.tolerated("user", false));
}

#[test]
fn control_frames_classify_by_their_own_ids() {
    let c = ClaudeCodeCodec::new();
    let init = json!({"request_id": "r1", "type": "control_request",
        "request": {"subtype": "initialize", "systemPrompt": [""]}});
    assert!(matches!(
        c.classify(&init),
        Msg::Request {
            method: "initialize",
            ..
        }
    ));
    let deny = json!({"type": "control_response", "response": {"subtype": "success",
        "request_id": "r2", "response": {"behavior": "deny", "message": "m"}}});
    assert!(matches!(
        c.classify(&deny),
        Msg::Response { outcome: Ok(_), .. }
    ));
    let err = json!({"type": "control_response", "response": {"subtype": "error",
        "request_id": "r2", "error": "canUseTool callback is not provided."}});
    assert!(matches!(
        c.classify(&err),
        Msg::Response {
            outcome: Err(_),
            ..
        }
    ));
    let user = json!({"type": "user", "message": {"role": "user", "content": "t"}});
    assert!(matches!(
        c.classify(&user),
        Msg::Notification { method: "user", .. }
    ));
    assert!(matches!(c.classify(&json!({"x": 1})), Msg::Malformed(_)));
    // What the fake builds is what it reads back.
    let req = c.request(
        c.request_id(0),
        "can_use_tool",
        Some(json!({"tool_name": "Bash"})),
    );
    assert!(matches!(
        c.classify(&req),
        Msg::Request {
            method: "can_use_tool",
            ..
        }
    ));
    let resp = c.response(json!("r1"), Ok(json!({"commands": []})));
    assert!(matches!(
        c.classify(&resp),
        Msg::Response { outcome: Ok(_), .. }
    ));
}
