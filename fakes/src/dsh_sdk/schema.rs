//! Checks frames the fake (the runtime) sends against conform's DSH SDK schema
//! (`schemas/dsh-sdk.schema.json`): notifications by their whole shape, responses by the
//! envelope and then the result definition of the method they answer.

use crate::bundle::check;
use std::collections::HashMap;
use std::sync::LazyLock;

use jsonschema::Validator;
use serde_json::{Value, json};

use super::method;
use crate::codec::{Msg, classify_jsonrpc};
use crate::error::InvalidFrame;

const SCHEMA: &str = include_str!("../../schemas/dsh-sdk.schema.json");

/// Client → runtime requests: method → the result definition of the runtime's answer.
const RESULTS: &[(&str, &str)] = &[
    (method::INITIALIZE, "InitializeResult"),
    (method::SESSION_PROMPT, "PromptResult"),
    (method::SHUTDOWN, "ShutdownResult"),
];

/// The definitions `validate_frame` checks by (sharper messages than the whole schema's
/// `anyOf`, which is for editors and other tools).
struct Validators {
    defs: HashMap<&'static str, Validator>,
}

static VALIDATORS: LazyLock<Validators> = LazyLock::new(|| {
    let root: Value = serde_json::from_str(SCHEMA).expect("DSH SDK schema is JSON");
    // A sub-schema compiled on its own still resolves `#/$defs/…` against the whole file.
    let compile = |mut sub: Value| {
        sub["$defs"] = root["$defs"].clone();
        sub["$schema"] = root["$schema"].clone();
        jsonschema::draft202012::new(&sub).expect("DSH SDK schema compiles")
    };
    let names = RESULTS.iter().map(|(_, def)| *def);
    let defs = names
        .chain(["Notification", "Response"])
        .map(|def| (def, compile(json!({ "$ref": format!("#/$defs/{def}") }))))
        .collect();
    Validators { defs }
});

/// Validates one frame the runtime sent. `answers` is the method of the request a response
/// answers (the `answers` field of the side-channel `Frame`).
pub fn validate_frame(frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
    let v = &*VALIDATORS;
    match classify_jsonrpc(frame) {
        Msg::Notification { .. } => check(&v.defs["Notification"], frame, "notification"),
        Msg::Request { method, .. } => {
            Err(format!("`{method}`: a DSH SDK runtime sends no requests").into())
        }
        Msg::Response {
            outcome: Err(_), ..
        } => check(&v.defs["Response"], frame, "error response"),
        Msg::Response {
            outcome: Ok(result),
            ..
        } => {
            check(&v.defs["Response"], frame, "response")?;
            let Some(method) = answers else {
                return Err(InvalidFrame::UnknownAnswer);
            };
            match lookup(method) {
                Some(def) => check(&v.defs[def], result, def),
                None => Err(format!("`{method}` is not a client→runtime DSH SDK request").into()),
            }
        }
        Msg::Malformed(why) => Err(InvalidFrame::Protocol(why)),
    }
}

fn lookup(method: &str) -> Option<&'static str> {
    RESULTS.iter().find(|(m, _)| *m == method).map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole schema, as an editor would use it.
    static ROOT: LazyLock<Validator> = LazyLock::new(|| {
        let root: Value = serde_json::from_str(SCHEMA).unwrap();
        jsonschema::draft202012::new(&root).unwrap()
    });

    fn event(ev: Value) -> Value {
        json!({"jsonrpc": "2.0", "method": "session.event",
            "params": {"sessionId": "session-1", "event": ev}})
    }

    /// Passes `validate_frame` and the whole schema.
    fn ok(frame: &Value, answers: Option<&str>) {
        assert_eq!(validate_frame(frame, answers), Ok(()), "{frame}");
        assert!(ROOT.is_valid(frame), "{frame}");
    }

    #[test]
    fn real_runtime_frames_pass() {
        let init = json!({"jsonrpc":"2.0","id":"req_9f","result":{"serverInfo":{"name":"deepseek-harness-sdk-runtime","version":"0.0.1"}}});
        ok(&init, Some("initialize"));
        let prompt = json!({"jsonrpc":"2.0","id":"req_a1","result":{"messageId":"msg-1"}});
        ok(&prompt, Some("session/prompt"));
        let shutdown = json!({"jsonrpc":"2.0","id":"req_b7","result":{}});
        ok(&shutdown, Some("shutdown"));
        let err = json!({"jsonrpc":"2.0","id":"req_c","error":{"code":-32603,"message":"unknown DeepSeek Harness SDK runtime method: x"}});
        ok(&err, Some("x"));
        let status = json!({"jsonrpc":"2.0","method":"session.status","params":{"sessionId":"s","status":"running"}});
        ok(&status, None);
        let error_end = event(
            json!({"type":"turn/end","seq":40,"time":1764403200123u64,"data":{"turn":0,"reason":{"kind":"error","error":{"message":"llm-deepseek: no API key"}}}}),
        );
        ok(&error_end, None);
        let other = event(json!({"type":"permission/preset","seq":0,"time":1.5,"data":{}}));
        ok(&other, None);
        let started = json!({"jsonrpc":"2.0","method":"subagent.started","params":{"parentSessionId":"a","childSessionId":"b"}});
        ok(&started, None);
        // `aborted` names its cause when it has one (not required).
        for reason in [
            json!({"kind": "aborted", "reason": "disposed"}),
            json!({"kind": "aborted"}),
        ] {
            let end = event(json!({"type": "turn/end", "seq": 1, "time": 0,
                "data": {"turn": 0, "reason": reason}}));
            ok(&end, None);
        }
    }

    #[test]
    fn invalid_frames_fail() {
        let bad = |frame: &Value, answers: Option<&str>| {
            let r = validate_frame(frame, answers);
            assert!(r.is_err(), "{frame} must fail");
            assert!(!ROOT.is_valid(frame) || answers.is_some(), "{frame}");
        };
        bad(
            &json!({"id":"r","result":{"messageId":"m"}}),
            Some("session/prompt"),
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","result":{}}),
            Some("session/prompt"),
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","result":{"messageId":1}}),
            Some("session/prompt"),
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","result":{"serverInfo":{"name":"n"}}}),
            Some("initialize"),
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","result":[]}),
            Some("shutdown"),
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","result":{}}),
            Some("session/new"),
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","error":{"code":"x","message":"m"}}),
            None,
        );
        bad(
            &json!({"jsonrpc":"2.0","id":"r","method":"x","params":{}}),
            None,
        );
        bad(
            &json!({"jsonrpc":"2.0","method":"session.update","params":{}}),
            None,
        );
        bad(
            &json!({"jsonrpc":"2.0","method":"session.status","params":{"sessionId":"s","status":"busy"}}),
            None,
        );
        bad(&event(json!({"seq":0,"time":0,"data":{}})), None);
        bad(
            &event(json!({"type":"x","seq":-1,"time":0,"data":{}})),
            None,
        );
        bad(&event(json!({"type":"x","seq":0,"time":0})), None);
        bad(&event(json!("not an object")), None);
        bad(
            &event(
                json!({"type":"assistant/message","seq":0,"time":0,"data":{"message":{"content":"hi"}}}),
            ),
            None,
        );
        bad(
            &event(
                json!({"type":"assistant/message","seq":0,"time":0,"data":{"message":{"content":[{"text":"hi"}]}}}),
            ),
            None,
        );
        bad(
            &event(json!({"type":"turn/end","seq":0,"time":0,"data":{"reason":{"kind":"none"}}})),
            None,
        );
        bad(
            &event(
                json!({"type":"turn/end","seq":0,"time":0,"data":{"reason":{"kind":"aborted","reason":"bored"}}}),
            ),
            None,
        );
    }
}
