//! Checks frames the fake (the app-server) sends against the real app-server's generated JSON
//! Schema bundle of the product version it speaks (`schemas/codex/<version>.schemas.json`,
//! draft-07, everything under `definitions`, v2 types under `definitions/v2`).
//!
//! - notifications: the `ServerNotification` branch their method names (the union is keyed by
//!   `method`; checking the one branch gives sharper messages than the whole `oneOf`), plus a
//!   top-level integer `emittedAtMs`, which the real server puts on every notification;
//! - requests: the `ServerRequest` branch of their method;
//! - results: the `JSONRPCResponse` envelope, then the response definition of the answered
//!   method (`initialize`, `thread/start`, `turn/start`, `turn/interrupt`);
//! - errors: the `JSONRPCError` envelope (its `error` is a `JSONRPCErrorError`).
//!
//! The real server never sends `jsonrpc`, so a frame carrying it fails too.

use crate::bundle::{self, Digest, Lookup, Pieces, check, closure};
use crate::link::{self, Linker};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::{Draft, Validator};
use serde_json::Value;

use super::method;
use crate::codec::{Msg, classify_jsonrpc};
use crate::error::InvalidFrame;

/// Client → server requests the fake answers: method → the response definition (pointer).
const RESULTS: &[(&str, &str)] = &[
    (method::INITIALIZE, "#/definitions/InitializeResponse"),
    (method::THREAD_START, "#/definitions/v2/ThreadStartResponse"),
    (method::TURN_START, "#/definitions/v2/TurnStartResponse"),
    (
        method::TURN_INTERRUPT,
        "#/definitions/v2/TurnInterruptResponse",
    ),
];

/// Server → client requests the client answers: method → the response definition.
const CLIENT_RESULTS: &[(&str, &str)] = &[
    (
        "item/commandExecution/requestApproval",
        "#/definitions/CommandExecutionRequestApprovalResponse",
    ),
    (
        "item/fileChange/requestApproval",
        "#/definitions/FileChangeRequestApprovalResponse",
    ),
    (
        "item/tool/requestUserInput",
        "#/definitions/ToolRequestUserInputResponse",
    ),
    (
        "mcpServer/elicitation/request",
        "#/definitions/McpServerElicitationRequestResponse",
    ),
    (
        "item/permissions/requestApproval",
        "#/definitions/PermissionsRequestApprovalResponse",
    ),
    ("item/tool/call", "#/definitions/DynamicToolCallResponse"),
    (
        "applyPatchApproval",
        "#/definitions/ApplyPatchApprovalResponse",
    ),
    (
        "execCommandApproval",
        "#/definitions/ExecCommandApprovalResponse",
    ),
];

/// One version's bundle (digested: each definition parsed when first needed) and where the
/// unions' branches are; each subschema is compiled the first time a frame needs it, with only
/// the definitions it refers to (the whole bundle compiled at once held some 70 MiB in the
/// harness, which checks every fake frame).
struct Bundle {
    root: Pieces,
    version: &'static str,
    compiled: Mutex<HashMap<String, Arc<Validator>>>,
    /// `ServerNotification` branch pointer by method.
    notifications: HashMap<String, String>,
    /// `ServerRequest` branch pointer by method.
    requests: HashMap<String, String>,
    /// `ClientRequest` and `ClientNotification` branch pointers by method.
    client: HashMap<String, String>,
}

impl Bundle {
    fn build(digest: Digest, version: &'static str) -> Bundle {
        let root = Pieces::new(digest, Pieces::unpatched);
        let branches = |union: &str| -> HashMap<String, String> {
            let all = root
                .lookup(&format!("/definitions/{union}/oneOf"))
                .unwrap_or_else(|| panic!("Codex {version} `{union}` is not a oneOf"));
            let all = all
                .as_array()
                .unwrap_or_else(|| panic!("Codex {version} `{union}` is not a oneOf"));
            all.iter()
                .enumerate()
                .map(|(i, branch)| {
                    let method = branch["properties"]["method"]["enum"][0]
                        .as_str()
                        .unwrap_or_else(|| panic!("Codex {version} `{union}` branch {i}"));
                    (
                        method.to_owned(),
                        format!("#/definitions/{union}/oneOf/{i}"),
                    )
                })
                .collect()
        };
        let mut client = branches("ClientRequest");
        client.extend(branches("ClientNotification"));
        Bundle {
            client,
            notifications: branches("ServerNotification"),
            requests: branches("ServerRequest"),
            root,
            version,
            compiled: Mutex::new(HashMap::new()),
        }
    }

    fn validator(&'static self, pointer: &str) -> Arc<Validator> {
        // Compiled under the lock: runs judged at once asked for the same subschema together
        // and each compiled it.
        let mut compiled = self.compiled.lock().expect("compiled");
        if let Some(v) = compiled.get(pointer) {
            return v.clone();
        }
        let doc = closure(&self.root, pointer, &["v2"], true)
            .unwrap_or_else(|| panic!("the Codex bundle has no subschema {pointer}"));
        let v = Arc::new(
            link::build(jsonschema::options().with_draft(Draft::Draft7), &doc, self)
                .unwrap_or_else(|e| {
                    panic!(
                        "Codex {} subschema {pointer} does not compile: {e}",
                        self.version
                    )
                }),
        );
        compiled.insert(pointer.to_owned(), v.clone());
        v
    }

    fn check(&'static self, pointer: &str, value: &Value, what: &str) -> Result<(), InvalidFrame> {
        check(&self.validator(pointer), value, what)
    }
}

impl Linker for Bundle {
    fn linked(&'static self, pointer: &str) -> Result<Arc<Validator>, String> {
        Ok(self.validator(pointer))
    }
}

static BUNDLE_0_147_0: LazyLock<Bundle> =
    LazyLock::new(|| Bundle::build(bundle::CODEX_0_147_0, "0.147.0"));
static BUNDLE_0_169_0: LazyLock<Bundle> =
    LazyLock::new(|| Bundle::build(bundle::CODEX_0_169_0, "0.169.0"));

/// The accepted versions' bundles ([`super::profile`]), built on first use.
static PROFILE_BUNDLES: LazyLock<Vec<(&'static str, Bundle)>> = LazyLock::new(|| {
    super::profile::PROFILES
        .iter()
        .map(|p| (p.version, Bundle::build(p.schema, p.version)))
        .collect()
});

fn bundle(version: &str) -> Option<&'static Bundle> {
    match version {
        "0.147.0" => Some(&BUNDLE_0_147_0),
        "0.169.0" => Some(&BUNDLE_0_169_0),
        _ => PROFILE_BUNDLES
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, b)| b),
    }
}

/// Validates one frame the app-server sent, for product `version` (`0.147.0` or `0.169.0`).
/// `answers` is the method of the request a response answers (the `answers` field of the
/// side-channel `Frame`).
pub fn validate_frame(
    frame: &Value,
    answers: Option<&str>,
    version: &str,
) -> Result<(), InvalidFrame> {
    let Some(b) = bundle(version) else {
        return Err(format!("conform has no Codex schema for product version {version:?}").into());
    };
    if frame.get("jsonrpc").is_some() {
        return Err("the Codex app-server never sends `jsonrpc`".into());
    }
    match classify_jsonrpc(frame) {
        Msg::Notification { method, .. } => {
            let Some(pointer) = b.notifications.get(method) else {
                return Err(
                    format!("`{method}` is not a Codex {version} server notification").into(),
                );
            };
            match frame.get("emittedAtMs") {
                Some(ms) if ms.is_u64() => {}
                Some(other) => {
                    return Err(format!("`emittedAtMs` is {other}, not an integer").into());
                }
                None => return Err("`emittedAtMs` is missing".into()),
            }
            b.check(pointer, frame, method)
        }
        Msg::Request { method, .. } => {
            let Some(pointer) = b.requests.get(method) else {
                return Err(format!("`{method}` is not a Codex {version} server request").into());
            };
            b.check(pointer, frame, method)
        }
        Msg::Response {
            outcome: Err(_), ..
        } => b.check("#/definitions/JSONRPCError", frame, "error response"),
        Msg::Response {
            outcome: Ok(result),
            ..
        } => {
            b.check("#/definitions/JSONRPCResponse", frame, "response")?;
            let Some(method) = answers else {
                return Err(InvalidFrame::UnknownAnswer);
            };
            let Some((_, pointer)) = RESULTS.iter().find(|(m, _)| *m == method) else {
                return Err(format!(
                    "conform checks no result of `{method}` (only {})",
                    RESULTS
                        .iter()
                        .map(|(m, _)| *m)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
                .into());
            };
            let def = pointer.rsplit('/').next().unwrap_or(pointer);
            b.check(pointer, result, def)
        }
        Msg::Malformed(why) => Err(InvalidFrame::Protocol(why)),
    }
}

/// Validates one frame the client (the subject) sent, for product `version`: a request or
/// notification against its `ClientRequest`/`ClientNotification` branch, a response against
/// the envelope and, for a request the server sent (`answers`), its response definition. A
/// method the bundle does not name is left to the script (the server answers it an error).
pub fn validate_received(
    frame: &Value,
    answers: Option<&str>,
    version: &str,
) -> Result<(), InvalidFrame> {
    let Some(b) = bundle(version) else {
        return Err(format!("conform has no Codex schema for product version {version:?}").into());
    };
    match classify_jsonrpc(frame) {
        Msg::Notification { method, .. } | Msg::Request { method, .. } => {
            match b.client.get(method) {
                Some(pointer) => b.check(pointer, frame, method),
                None => Ok(()),
            }
        }
        Msg::Response {
            outcome: Err(_), ..
        } => b.check("#/definitions/JSONRPCError", frame, "error response"),
        Msg::Response {
            outcome: Ok(result),
            ..
        } => {
            b.check("#/definitions/JSONRPCResponse", frame, "response")?;
            match answers.and_then(|m| CLIENT_RESULTS.iter().find(|(r, _)| *r == m)) {
                Some((_, pointer)) => {
                    let def = pointer.rsplit('/').next().unwrap_or(pointer);
                    b.check(pointer, result, def)
                }
                None => Ok(()),
            }
        }
        Msg::Malformed(why) => Err(InvalidFrame::Protocol(why)),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const VERSIONS: [&str; 2] = ["0.147.0", "0.169.0"];

    /// Frames of the real 0.169.0 binary (`codex-0.169.0-offline-turn-interrupt.jsonl`), the
    /// long thread objects cut to the required fields plus a few extras.
    fn real_frames() -> Vec<(Value, Option<&'static str>)> {
        let thread = "01a2286d-2c77-7350-b611-d5dab2b5852b";
        let turn_id = "01a2286d-2caa-7551-991f-3b5ccec11e4c";
        let thread_obj = json!({"id": thread, "sessionId": thread, "extra": null,
            "preview": "", "ephemeral": false, "projectId": null, "historyMode": "paginated",
            "modelProvider": "openai", "model": "gpt-6.1-sol", "createdAt": 1795974573,
            "updatedAt": 1795974573, "status": {"type": "idle"}, "path": null,
            "cwd": "/ws/codex-run", "cliVersion": "0.169.0", "source": "vscode", "turns": []});
        let turn = |status: &str| {
            json!({"id": turn_id, "rootTurnId": turn_id, "items": [], "itemsView": "notLoaded",
                "status": status, "error": null, "startedAt": 1795974573, "completedAt": null,
                "durationMs": null})
        };
        vec![
            (
                json!({"id": 0, "result": {"userAgent": "probe/0.169.0", "codexHome": "/ws/codex-home",
                    "platformFamily": "unix", "platformOs": "linux"}}),
                Some("initialize"),
            ),
            (
                json!({"id": 1, "result": {"thread": thread_obj, "model": "gpt-6.1-sol",
                    "modelProvider": "openai", "serviceTier": null, "cwd": "/ws/codex-run",
                    "approvalPolicy": "on-request", "approvalsReviewer": "user",
                    "sandbox": {"type": "readOnly", "networkAccess": false},
                    "reasoningEffort": null}}),
                Some("thread/start"),
            ),
            (
                json!({"id": "str-id", "result": {"turn": turn("inProgress")}}),
                Some("turn/start"),
            ),
            (json!({"id": 4, "result": {}}), Some("turn/interrupt")),
            (
                json!({"error": {"code": -32600, "message": "Invalid request: unknown variant `no/such`"}, "id": 6}),
                Some("no/such"),
            ),
            (
                json!({"method": "thread/started", "params": {"thread": thread_obj},
                    "emittedAtMs": 1795974573220u64}),
                None,
            ),
            (
                json!({"method": "turn/started", "params": {"threadId": thread, "turn": turn("inProgress")},
                    "emittedAtMs": 1795974573276u64}),
                None,
            ),
            (
                json!({"method": "item/completed", "params": {"item": {"type": "userMessage",
                    "id": "01a2286d-2ceb-79c3-a9d1-0767ee2cfffc", "clientId": null,
                    "content": [{"type": "text", "text": "hello", "text_elements": []}]},
                    "threadId": thread, "turnId": turn_id, "completedAtMs": 1795974573294u64},
                    "emittedAtMs": 1795974573300u64}),
                None,
            ),
            (
                json!({"method": "error", "params": {"error": {"message": "Reconnecting... 2/5",
                    "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": null}},
                    "additionalDetails": "stream disconnected before completion"},
                    "willRetry": true, "threadId": thread, "turnId": turn_id},
                    "emittedAtMs": 1795974573541u64}),
                None,
            ),
            (
                json!({"method": "turn/completed", "params": {"threadId": thread,
                    "turn": turn("interrupted")}, "emittedAtMs": 1795974577264u64}),
                None,
            ),
        ]
    }

    /// Linked ([`crate::link`]) or compiled in place with every definition it reaches, a
    /// subschema says the same of a value: the same verdict, the same errors at the same places.
    #[test]
    fn a_linked_subschema_says_what_one_compiled_in_place_says() {
        let b = bundle("0.169.0").unwrap();
        let (mut compared, mut failing) = (0, 0);
        for (frame, _) in real_frames() {
            let Some(method) = frame["method"].as_str() else {
                continue;
            };
            let pointer = &b.notifications[method];
            let doc = closure(&b.root, pointer, &["v2"], false).unwrap();
            let in_place = jsonschema::options()
                .with_draft(Draft::Draft7)
                .build(&doc)
                .unwrap();
            let linked = b.validator(pointer);
            for variant in bundle::variants(&frame) {
                let said = check(&linked, &variant, method);
                assert_eq!(said, check(&in_place, &variant, method), "{variant}");
                compared += 1;
                failing += usize::from(said.is_err());
            }
        }
        // Errors found inside linked definitions, not only at the frames' tops.
        assert!(
            failing > 40 && compared > failing + 20,
            "{failing} of {compared}"
        );
    }

    #[test]
    fn real_server_frames_pass_both_versions() {
        for version in VERSIONS {
            for (frame, answers) in real_frames() {
                assert_eq!(
                    validate_frame(&frame, answers, version),
                    Ok(()),
                    "{version} {frame}"
                );
            }
        }
    }

    #[test]
    fn what_the_real_server_never_sends_fails() {
        for version in VERSIONS {
            let bad = |frame: Value, answers: Option<&str>| {
                let r = validate_frame(&frame, answers, version);
                assert!(r.is_err(), "{version}: {frame} must fail");
                r.unwrap_err()
            };
            let e = bad(
                json!({"jsonrpc": "2.0", "id": 4, "result": {}}),
                Some("turn/interrupt"),
            );
            assert!(e.to_string().contains("jsonrpc"), "{e}");
            let e = bad(
                json!({"method": "turn/started", "params": {"threadId": "t",
                    "turn": {"id": "u", "items": [], "status": "inProgress"}}}),
                None,
            );
            assert!(e.to_string().contains("emittedAtMs"), "{e}");
            bad(
                json!({"method": "turn/started", "params": {"threadId": "t",
                    "turn": {"id": "u", "items": [], "status": "running"}}, "emittedAtMs": 1}),
                None,
            );
            bad(
                json!({"method": "no/such", "params": {}, "emittedAtMs": 1}),
                None,
            );
            bad(json!({"id": 1, "method": "no/such", "params": {}}), None);
            bad(json!({"id": 1, "result": {"turn": {}}}), Some("turn/start"));
            bad(json!({"id": 1, "result": {}}), Some("thread/start"));
            bad(json!({"id": 1, "result": []}), Some("turn/interrupt"));
            bad(
                json!({"id": 1, "error": {"code": "x", "message": "m"}}),
                None,
            );
            bad(json!({"id": 1, "result": {}}), None);
            let agent_text = |text: Value| {
                json!({"method": "item/completed", "params": {"threadId": "t", "turnId": "u",
                    "item": {"type": "agentMessage", "id": "i", "text": text, "phase": null},
                    "completedAtMs": 1}, "emittedAtMs": 1})
            };
            assert_eq!(
                validate_frame(&agent_text("hi".into()), None, version),
                Ok(())
            );
            bad(agent_text(json!(42)), None);
        }
        assert!(
            validate_frame(
                &json!({"id": 1, "result": {}}),
                Some("turn/interrupt"),
                "0.150.0"
            )
            .is_err()
        );
    }

    #[test]
    fn unknown_error_info_codes_fail_only_under_0_147_0() {
        let completed = |info: Value| {
            json!({"method": "turn/completed", "params": {"threadId": "t", "turn": {"id": "u",
                "items": [], "status": "failed", "error": {"message": "m",
                "codexErrorInfo": info, "additionalDetails": null}}}, "emittedAtMs": 1})
        };
        for known in [
            json!("contextWindowExceeded"),
            json!({"httpConnectionFailed": {"httpStatusCode": 503}}),
        ] {
            assert_eq!(
                validate_frame(&completed(known.clone()), None, "0.147.0"),
                Ok(())
            );
            assert_eq!(validate_frame(&completed(known), None, "0.169.0"), Ok(()));
        }
        for new_or_unknown in [
            json!("modelNotFound"),
            json!("totallyMadeUp"),
            json!({"madeUp": {}}),
        ] {
            assert!(validate_frame(&completed(new_or_unknown.clone()), None, "0.147.0").is_err());
            assert_eq!(
                validate_frame(&completed(new_or_unknown), None, "0.169.0"),
                Ok(())
            );
        }
    }
}
