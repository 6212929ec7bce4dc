//! Checks frames the fake (the agent) sends against the vendored ACP v1 JSON Schema — the
//! proof that a fake is valid by default. Two checks: the envelope against the schema's
//! `Agent` message shape, then the payload against the definition its method names.

use crate::schema::check;
use std::collections::HashMap;
use std::sync::LazyLock;

use jsonschema::Validator;
use serde_json::{Value, json};

use crate::codec::{Msg, classify_jsonrpc};

const SCHEMA: &str = include_str!("../../schemas/acp-v1.schema.json");

/// Agent → client requests and notifications: method → params definition.
const OUTGOING: &[(&str, &str)] = &[
    ("session/update", "SessionNotification"),
    ("session/request_permission", "RequestPermissionRequest"),
    ("fs/read_text_file", "ReadTextFileRequest"),
    ("fs/write_text_file", "WriteTextFileRequest"),
    ("terminal/create", "CreateTerminalRequest"),
    ("terminal/output", "TerminalOutputRequest"),
    ("terminal/release", "ReleaseTerminalRequest"),
    ("terminal/wait_for_exit", "WaitForTerminalExitRequest"),
    ("terminal/kill", "KillTerminalRequest"),
    ("elicitation/create", "CreateElicitationRequest"),
    ("elicitation/complete", "CompleteElicitationNotification"),
];

/// Client → agent requests: method → the result definition of the agent's answer.
const RESULTS: &[(&str, &str)] = &[
    ("initialize", "InitializeResponse"),
    ("authenticate", "AuthenticateResponse"),
    ("logout", "LogoutResponse"),
    ("session/new", "NewSessionResponse"),
    ("session/load", "LoadSessionResponse"),
    ("session/list", "ListSessionsResponse"),
    ("session/delete", "DeleteSessionResponse"),
    ("session/resume", "ResumeSessionResponse"),
    ("session/close", "CloseSessionResponse"),
    ("session/set_mode", "SetSessionModeResponse"),
    (
        "session/set_config_option",
        "SetSessionConfigOptionResponse",
    ),
    ("session/prompt", "PromptResponse"),
];

struct Validators {
    envelope: Validator,
    defs: HashMap<&'static str, Validator>,
}

static VALIDATORS: LazyLock<Validators> = LazyLock::new(|| {
    let root: Value = serde_json::from_str(SCHEMA).expect("vendored ACP schema is JSON");
    // A sub-schema compiled on its own still resolves `#/$defs/…` against the whole file.
    let compile = |mut sub: Value| {
        sub["$defs"] = root["$defs"].clone();
        sub["$schema"] = root["$schema"].clone();
        jsonschema::draft202012::new(&sub).expect("vendored ACP schema compiles")
    };
    let agent = root["anyOf"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["title"] == "Agent"))
        .expect("ACP schema has an `Agent` message shape")
        .clone();
    let names = OUTGOING.iter().chain(RESULTS).map(|(_, def)| *def);
    let defs = names
        .chain(["Error"])
        .map(|def| (def, compile(json!({ "$ref": format!("#/$defs/{def}") }))))
        .collect();
    Validators {
        envelope: compile(agent),
        defs,
    }
});

/// Validates one frame the agent sent. `answers` is the method of the request a response
/// answers (the `answers` field of the side-channel `Frame`).
pub fn validate_frame(frame: &Value, answers: Option<&str>) -> Result<(), String> {
    let v = &*VALIDATORS;
    check(&v.envelope, frame, "envelope")?;
    let (def, payload) = match classify_jsonrpc(frame) {
        Msg::Request { method, params, .. } | Msg::Notification { method, params } => {
            let def = lookup(OUTGOING, method);
            match def {
                Some(def) => (def, params.unwrap_or(&Value::Null)),
                // `_`-prefixed methods are extensions: any params.
                None if method.starts_with('_') => return Ok(()),
                None => return Err(format!("`{method}` is not an agent→client ACP method")),
            }
        }
        Msg::Response {
            outcome: Err(error),
            ..
        } => ("Error", error),
        Msg::Response {
            outcome: Ok(result),
            ..
        } => {
            let Some(method) = answers else {
                return Err("a result needs the method it answers to be checked".into());
            };
            match lookup(RESULTS, method) {
                Some(def) => (def, result),
                None if method.starts_with('_') => return Ok(()),
                None => return Err(format!("`{method}` is not a client→agent ACP request")),
            }
        }
        Msg::Malformed(why) => return Err(why),
    };
    check(&v.defs[def], payload, def)
}

fn lookup(table: &[(&str, &'static str)], method: &str) -> Option<&'static str> {
    table.iter().find(|(m, _)| *m == method).map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_agent_frames_pass() {
        let chunk = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hello"}}}});
        assert_eq!(validate_frame(&chunk, None), Ok(()));
        let stop = json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}});
        assert_eq!(validate_frame(&stop, Some("session/prompt")), Ok(()));
        let init = json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":false}}});
        assert_eq!(validate_frame(&init, Some("initialize")), Ok(()));
        let err = json!({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found","data":{"method":"x/y"}}});
        assert_eq!(validate_frame(&err, Some("x/y")), Ok(()));
    }

    #[test]
    fn invalid_frames_fail() {
        let stop = json!({"jsonrpc":"2.0","id":2,"result":{"stopReason":"bogus"}});
        assert!(validate_frame(&stop, Some("session/prompt")).is_err());
        let no_version = json!({"id":2,"result":{"stopReason":"end_turn"}});
        assert!(validate_frame(&no_version, Some("session/prompt")).is_err());
        let no_session = json!({"jsonrpc":"2.0","id":0,"result":{}});
        assert!(validate_frame(&no_session, Some("session/new")).is_err());
        let version_string = json!({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"1"}});
        assert!(validate_frame(&version_string, Some("initialize")).is_err());
        let unknown_update = json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"nope"}}});
        assert!(validate_frame(&unknown_update, None).is_err());
    }
}
