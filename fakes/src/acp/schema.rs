//! Checks frames the fake (the agent) sends against the vendored ACP v1 JSON Schema — the
//! proof that a fake is valid by default. Two checks: the envelope against the schema's
//! `Agent` message shape, then the payload against the definition its method names.

use crate::bundle::{self, Lookup, Pieces, check, closure_in};
use crate::link::{self, Linker};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, OnceLock};

use jsonschema::Validator;
use serde_json::Value;

use crate::codec::{Msg, classify_jsonrpc};
use crate::error::InvalidFrame;

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

/// Client → agent requests and notifications: method → the params' definition.
const INCOMING: &[(&str, &str)] = &[
    ("initialize", "InitializeRequest"),
    ("authenticate", "AuthenticateRequest"),
    ("logout", "LogoutRequest"),
    ("session/new", "NewSessionRequest"),
    ("session/load", "LoadSessionRequest"),
    ("session/list", "ListSessionsRequest"),
    ("session/delete", "DeleteSessionRequest"),
    ("session/resume", "ResumeSessionRequest"),
    ("session/close", "CloseSessionRequest"),
    ("session/set_mode", "SetSessionModeRequest"),
    ("session/set_config_option", "SetSessionConfigOptionRequest"),
    ("session/prompt", "PromptRequest"),
    ("session/cancel", "CancelNotification"),
    ("$/cancel_request", "CancelRequestNotification"),
];

/// Agent → client requests the client answers: method → the result's definition.
const CLIENT_RESULTS: &[(&str, &str)] = &[
    ("session/request_permission", "RequestPermissionResponse"),
    ("fs/read_text_file", "ReadTextFileResponse"),
    ("fs/write_text_file", "WriteTextFileResponse"),
    ("terminal/create", "CreateTerminalResponse"),
    ("terminal/output", "TerminalOutputResponse"),
    ("terminal/release", "ReleaseTerminalResponse"),
    ("terminal/wait_for_exit", "WaitForTerminalExitResponse"),
    ("terminal/kill", "KillTerminalResponse"),
    ("elicitation/create", "CreateElicitationResponse"),
];

/// The schema (`schemas/acp-v1.schema.json`, digested: each definition parsed when first
/// needed), and each subschema compiled the first time a frame needs it, with only the
/// definitions it refers to: a fake checks the few frames of one run, and compiling every
/// definition with the whole file took 0.4 s of a debug fake's handshake.
struct Validators {
    root: Pieces,
    compiled: Mutex<HashMap<String, Arc<Validator>>>,
    /// The message shapes' titles, in `anyOf` order (read once: every frame asks).
    shapes: OnceLock<Vec<String>>,
}

impl Validators {
    /// The validator of the subschema at `pointer` (`#/$defs/PromptRequest`, `#/anyOf/1`).
    fn at(&'static self, pointer: &str) -> Arc<Validator> {
        // Compiled under the lock: runs judged at once asked for the same shape together and
        // each compiled its megabytes.
        let mut compiled = self.compiled.lock().expect("compiled");
        if let Some(v) = compiled.get(pointer) {
            return v.clone();
        }
        let mut doc = closure_in(&self.root, pointer, "$defs", &[], true)
            .unwrap_or_else(|| panic!("the ACP schema has no subschema {pointer}"));
        doc["$schema"] = self
            .root
            .lookup("/$schema")
            .map_or(Value::Null, |s| s.into_owned());
        let v = Arc::new(
            link::build(jsonschema::draft202012::options(), &doc, self)
                .unwrap_or_else(|e| panic!("ACP subschema {pointer} does not compile: {e}")),
        );
        compiled.insert(pointer.to_owned(), v.clone());
        v
    }

    /// The message shape titled `title` (`Agent`, `Client`).
    fn shape(&'static self, title: &str) -> Arc<Validator> {
        let shapes = self.shapes.get_or_init(|| {
            let all = self.root.lookup("/anyOf");
            let all = all.as_deref().and_then(Value::as_array);
            all.into_iter()
                .flatten()
                .map(|s| s["title"].as_str().unwrap_or_default().to_owned())
                .collect()
        });
        let i = shapes
            .iter()
            .position(|t| t == title)
            .unwrap_or_else(|| panic!("ACP schema has a `{title}` message shape"));
        self.at(&format!("#/anyOf/{i}"))
    }

    fn def(&'static self, def: &str) -> Arc<Validator> {
        self.at(&format!("#/$defs/{def}"))
    }
}

impl Linker for Validators {
    fn linked(&'static self, pointer: &str) -> Result<Arc<Validator>, String> {
        Ok(self.at(pointer))
    }
}

/// The envelopes' payload members: each is the union of every method's payload and of the
/// extension payload, which the schema lets be anything (`ExtRequest`, `ExtResponse`,
/// `ExtNotification` assert nothing), so each accepts every value and never yields an error.
/// Left as they are, they made each message shape (`Agent`, `Client`) compile the whole
/// protocol — some 4 MB, for a check that cannot fail; the payload is held to its method's own
/// definition after the envelope (`validate_frame`). A test holds that each still accepts
/// everything in the vendored file.
const OPEN_PAYLOADS: &[(&str, &str)] = &[
    ("/$defs/AgentRequest", "/properties/params"),
    ("/$defs/AgentNotification", "/properties/params"),
    ("/$defs/ClientRequest", "/properties/params"),
    ("/$defs/ClientNotification", "/properties/params"),
    ("/$defs/AgentResponse", "/anyOf/0/properties/result"),
    ("/$defs/ClientResponse", "/anyOf/0/properties/result"),
];

/// The patch that drops [`OPEN_PAYLOADS`] (an empty schema accepts what they accepted).
fn open_payloads(pointer: &str, definition: &mut Value) {
    for (def, member) in OPEN_PAYLOADS {
        if pointer == *def
            && let Some(m) = definition.pointer_mut(member)
        {
            *m = Value::Object(serde_json::Map::new());
        }
    }
}

static VALIDATORS: LazyLock<Validators> = LazyLock::new(|| Validators {
    root: Pieces::new(bundle::ACP_V1, open_payloads),
    compiled: Mutex::new(HashMap::new()),
    shapes: OnceLock::new(),
});

/// Validates one frame the client (the subject) sent: its envelope, a known method's params,
/// and the result of a request the agent sent (`answers`: that request's method). A method
/// the schema does not name is left to the script (the runtime answers it "method not found").
pub fn validate_received(frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
    let v = &*VALIDATORS;
    check(&v.shape("Client"), frame, "envelope")?;
    let (def, payload) = match classify_jsonrpc(frame) {
        Msg::Request { method, params, .. } | Msg::Notification { method, params } => {
            match lookup(INCOMING, method) {
                Some(def) => (def, params.unwrap_or(&Value::Null)),
                None => return Ok(()),
            }
        }
        Msg::Response {
            outcome: Err(error),
            ..
        } => ("Error", error),
        Msg::Response {
            outcome: Ok(result),
            ..
        } => match answers.and_then(|m| lookup(CLIENT_RESULTS, m)) {
            Some(def) => (def, result),
            None => return Ok(()),
        },
        Msg::Malformed(why) => return Err(InvalidFrame::Protocol(why)),
    };
    check(&v.def(def), payload, def)
}

/// Validates one frame the agent sent. `answers` is the method of the request a response
/// answers (the `answers` field of the side-channel `Frame`).
pub fn validate_frame(frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
    let v = &*VALIDATORS;
    check(&v.shape("Agent"), frame, "envelope")?;
    let (def, payload) = match classify_jsonrpc(frame) {
        Msg::Request { method, params, .. } | Msg::Notification { method, params } => {
            let def = lookup(OUTGOING, method);
            match def {
                Some(def) => (def, params.unwrap_or(&Value::Null)),
                // `_`-prefixed methods are extensions: any params.
                None if method.starts_with('_') => return Ok(()),
                None => return Err(format!("`{method}` is not an agent→client ACP method").into()),
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
                return Err(InvalidFrame::UnknownAnswer);
            };
            match lookup(RESULTS, method) {
                Some(def) => (def, result),
                None if method.starts_with('_') => return Ok(()),
                None => return Err(format!("`{method}` is not a client→agent ACP request").into()),
            }
        }
        Msg::Malformed(why) => return Err(InvalidFrame::Protocol(why)),
    };
    check(&v.def(def), payload, def)
}

fn lookup(table: &[(&str, &'static str)], method: &str) -> Option<&'static str> {
    table.iter().find(|(m, _)| *m == method).map(|(_, d)| *d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    /// Linked ([`crate::link`]) or compiled in place with every definition it reaches, an ACP
    /// subschema (draft 2020-12, where a reference's siblings count too) says the same of a
    /// value: the same verdict, the same errors at the same places.
    #[test]
    fn a_linked_subschema_says_what_one_compiled_in_place_says() {
        let payloads = [
            (
                "SessionNotification",
                json!({"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1",
                    "title":"Read","kind":"read","status":"pending",
                    "content":[{"type":"content","content":{"type":"text","text":"x"}}],
                    "locations":[{"path":"/a","line":1}]}}),
            ),
            (
                "RequestPermissionRequest",
                json!({"sessionId":"s","toolCall":{"toolCallId":"t1","title":"Write"},
                    "options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}),
            ),
            (
                "PromptRequest",
                json!({"sessionId":"s","prompt":[{"type":"text","text":"hi"},
                    {"type":"resource_link","uri":"file:///a","name":"a"}]}),
            ),
        ];
        let v = &*VALIDATORS;
        let (mut compared, mut failing) = (0, 0);
        for (def, payload) in payloads {
            let pointer = format!("#/$defs/{def}");
            let mut doc = closure_in(&v.root, &pointer, "$defs", &[], false).unwrap();
            doc["$schema"] = v.root.lookup("/$schema").unwrap().into_owned();
            let in_place = jsonschema::draft202012::new(&doc).unwrap();
            let linked = v.def(def);
            assert_eq!(check(&linked, &payload, def), Ok(()), "{def}");
            for variant in bundle::variants(&payload) {
                let said = check(&linked, &variant, def);
                assert_eq!(said, check(&in_place, &variant, def), "{variant}");
                compared += 1;
                failing += usize::from(said.is_err());
            }
        }
        assert!(
            failing > 20 && compared > failing + 10,
            "{failing} of {compared}"
        );
    }

    #[test]
    fn client_frames_are_checked_against_the_client_side() {
        let prompt = json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}});
        assert_eq!(validate_received(&prompt, None), Ok(()));
        let allow = json!({"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}});
        assert_eq!(
            validate_received(&allow, Some("session/request_permission")),
            Ok(())
        );
        let cancel = json!({"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}});
        assert_eq!(validate_received(&cancel, None), Ok(()));
        // A prompt as a bare string, a permission answered with no outcome, a cancel with no
        // session: each breaks the client side of the schema.
        let bare = json!({"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":"hi"}});
        assert!(validate_received(&bare, None).is_err());
        let no_outcome = json!({"jsonrpc":"2.0","id":0,"result":{}});
        assert!(validate_received(&no_outcome, Some("session/request_permission")).is_err());
        let no_session = json!({"jsonrpc":"2.0","method":"session/cancel","params":{}});
        assert!(validate_received(&no_session, None).is_err());
        let no_version =
            json!({"id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}});
        assert!(validate_received(&no_version, None).is_err());
    }

    /// Whether `schema` accepts every value: `true`, annotations only, or an `allOf` whose
    /// members all do, an `anyOf` one of whose branches does, or a `$ref` to one that does.
    fn accepts_anything(root: &Value, schema: &Value) -> bool {
        const ANNOTATIONS: &[&str] = &["description", "title", "$comment", "examples", "default"];
        let Some(map) = schema.as_object() else {
            return schema == &Value::Bool(true);
        };
        map.iter().all(|(key, value)| match key.as_str() {
            k if ANNOTATIONS.contains(&k) => true,
            "allOf" => value
                .as_array()
                .is_some_and(|all| all.iter().all(|s| accepts_anything(root, s))),
            "anyOf" => value
                .as_array()
                .is_some_and(|any| any.iter().any(|s| accepts_anything(root, s))),
            "$ref" => value
                .as_str()
                .and_then(|r| r.strip_prefix('#'))
                .and_then(|p| root.pointer(p))
                .is_some_and(|target| accepts_anything(root, target)),
            _ => false,
        })
    }

    #[test]
    fn the_payload_members_dropped_from_the_envelopes_accept_anything() {
        let text = include_str!("../../schemas/acp-v1.schema.json");
        let root: Value = serde_json::from_str(text).unwrap();
        for (def, member) in OPEN_PAYLOADS {
            let schema = root.pointer(&format!("{def}{member}")).unwrap();
            assert!(schema.get("anyOf").is_some(), "{def}{member} is a union");
            assert!(
                accepts_anything(&root, schema),
                "{def}{member} can reject a value"
            );
        }
        // The test can tell: a method's own payload does not accept anything.
        assert!(!accepts_anything(&root, &root["$defs"]["PromptRequest"]));
        let result = &root["$defs"]["AgentResponse"]["anyOf"][0];
        assert_eq!(result["title"], "Result");
        // And the patch is applied: a message shape no longer pulls in any method's payload.
        for shape in ["#/anyOf/0", "#/anyOf/1"] {
            let doc = closure_in(&VALIDATORS.root, shape, "$defs", &[], false).unwrap();
            let defs = doc["$defs"].as_object().unwrap();
            let payloads = [OUTGOING, RESULTS, INCOMING, CLIENT_RESULTS].concat();
            let pulled: Vec<&str> = payloads
                .iter()
                .map(|(_, def)| *def)
                .filter(|def| defs.contains_key(*def))
                .collect();
            assert!(pulled.is_empty(), "{shape} still pulls in {pulled:?}");
        }
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
