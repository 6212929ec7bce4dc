//! Checks frames the fake (the CLI) sends against a JSON Schema derived from the Claude Agent
//! SDK's published types (`schemas/claude-code/<sdk version>.schema.json`, generated from
//! `sdk.d.ts` by `ci/claude-schema`): each frame against the SDK type its `type` (and
//! `subtype`) names, a control request also against the request type of its subtype, and the
//! answer to the SDK's `initialize` against `SDKControlInitializeResponse`.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use jsonschema::Validator;
use serde_json::Value;

use super::kind;
use crate::bundle::{self, Lookup, Pieces, check, closure};
use crate::error::InvalidFrame;
use crate::link::{self, Linker};

/// The vendored file as generated, which the tests read whole.
#[cfg(test)]
const SCHEMA: &str = include_str!("../../schemas/claude-code/0.3.220.schema.json");

/// The definitions (the file digested, with the observed deviations widened), each parsed and
/// compiled the first time a frame needs it, with only the definitions it refers to.
struct Defs {
    root: Pieces,
    compiled: Mutex<HashMap<String, Arc<Validator>>>,
}

/// Where the real CLI 2.1.220 writes what the SDK 0.3.220's published types do not allow,
/// observed on its wire (`fakes/peers/claude-code/`): the schema is widened there, and only
/// there, so the fake can speak like the real CLI and still be held to the types elsewhere.
enum Deviation {
    /// The definition's enum also holds this value.
    Value(&'static str, &'static str),
    /// The definition's member may be left out.
    Optional(&'static str, &'static str),
}

const OBSERVED_DEVIATIONS: &[Deviation] = &[
    // `system/init` and the initialize answer's `account` say `ANTHROPIC_API_KEY` for a key
    // taken from that variable.
    Deviation::Value("ApiKeySource", "ANTHROPIC_API_KEY"),
    // The synthetic assistant message of an API error carries a text block without `citations`.
    Deviation::Optional("BetaTextBlock", "citations"),
];

/// Widens the definition at `pointer` (a piece of the digested file) where a deviation names it.
fn widen(pointer: &str, definition: &mut Value) {
    let Some(name) = pointer.strip_prefix("/definitions/") else {
        return;
    };
    for deviation in OBSERVED_DEVIATIONS {
        match *deviation {
            Deviation::Value(def, value) if def == name => {
                if let Some(Value::Array(allowed)) = definition.get_mut("enum") {
                    allowed.push(Value::from(value));
                }
            }
            Deviation::Optional(def, member) if def == name => {
                if let Some(Value::Array(required)) = definition.get_mut("required") {
                    required.retain(|r| r != member);
                }
            }
            _ => {}
        }
    }
}

static DEFS: LazyLock<Defs> = LazyLock::new(|| Defs {
    root: Pieces::new(bundle::CLAUDE_CODE_0_3_220, widen),
    compiled: Mutex::new(HashMap::new()),
});

impl Defs {
    fn get(&'static self, def: &str) -> Result<Arc<Validator>, InvalidFrame> {
        Ok(self.at(&format!("/definitions/{def}"))?)
    }

    /// The validator of the definition at `pointer` (`/definitions/Foo`), compiled once with
    /// the definitions it refers to linked.
    fn at(&'static self, pointer: &str) -> Result<Arc<Validator>, String> {
        let def = pointer.strip_prefix("/definitions/").unwrap_or(pointer);
        if !self.root.has(pointer) {
            return Err(format!("the Claude Agent SDK schema has no `{def}`"));
        }
        let mut compiled = self.compiled.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = compiled.get(pointer) {
            return Ok(v.clone());
        }
        // Only the definitions it refers to: the whole file per validator held megabytes.
        let mut sub = closure(&self.root, &format!("#{pointer}"), &[], true)
            .ok_or_else(|| format!("the Claude Agent SDK's `{def}` cannot be resolved"))?;
        if let Some(s) = self.root.lookup("/$schema") {
            sub["$schema"] = s.into_owned();
        }
        let v = Arc::new(
            link::build(jsonschema::options(), &sub, self)
                .map_err(|e| format!("the Claude Agent SDK's `{def}` does not compile: {e}"))?,
        );
        compiled.insert(pointer.to_owned(), v.clone());
        Ok(v)
    }

    fn check(&'static self, def: &'static str, value: &Value) -> Result<(), InvalidFrame> {
        check(&*self.get(def)?, value, def)
    }
}

impl Linker for Defs {
    fn linked(&'static self, pointer: &str) -> Result<Arc<Validator>, String> {
        self.at(pointer.strip_prefix('#').unwrap_or(pointer))
    }
}

/// The SDK type of a control request the CLI sends, by subtype.
fn request_def(subtype: &str) -> Option<&'static str> {
    Some(match subtype {
        kind::CAN_USE_TOOL => "SDKControlPermissionRequest",
        kind::ELICITATION => "SDKControlElicitationRequest",
        kind::USER_DIALOG => "SDKControlRequestUserDialogRequest",
        _ => return None,
    })
}

/// The SDK type of the answer to a control request the SDK sends, by subtype.
fn answer_def(subtype: &str) -> Option<&'static str> {
    Some(match subtype {
        kind::INITIALIZE => "SDKControlInitializeResponse",
        _ => return None,
    })
}

/// Validates one frame the CLI sent; `answers`: the subtype of the control request a
/// `control_response` answers.
pub fn validate_frame(frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
    let defs = &*DEFS;
    let ty = frame
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let subtype = frame.get("subtype").and_then(Value::as_str);
    match ty {
        kind::SYSTEM => match subtype {
            Some("init") => defs.check("SDKSystemMessage", frame),
            Some("permission_denied") => defs.check("SDKPermissionDeniedMessage", frame),
            _ => defs.check("SDKMessage", frame),
        },
        kind::ASSISTANT => defs.check("SDKAssistantMessage", frame),
        kind::USER => defs.check("SDKUserMessage", frame),
        kind::STREAM_EVENT => defs.check("SDKPartialAssistantMessage", frame),
        kind::RESULT => match subtype {
            Some("success") => defs.check("SDKResultSuccess", frame),
            _ => defs.check("SDKResultError", frame),
        },
        kind::CONTROL_REQUEST => {
            defs.check("SDKControlRequest", frame)?;
            let subtype = frame.pointer("/request/subtype").and_then(Value::as_str);
            match subtype.and_then(request_def) {
                Some(def) => defs.check(def, &frame["request"]),
                None => {
                    Err(format!("the CLI sends no control request {subtype:?} to the SDK").into())
                }
            }
        }
        kind::CONTROL_RESPONSE => {
            defs.check("SDKControlResponse", frame)?;
            let response = &frame["response"];
            match (response["subtype"].as_str(), answers.and_then(answer_def)) {
                (Some("success"), Some(def)) => defs.check(def, &response["response"]),
                _ => Ok(()),
            }
        }
        kind::CONTROL_CANCEL => defs.check("SDKControlCancelRequest", frame),
        _ => defs.check("SDKMessage", frame),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator(root: &Value, def: &str) -> Validator {
        let mut sub = json!({ "$ref": format!("#/definitions/{def}") });
        sub["definitions"] = root["definitions"].clone();
        sub["$schema"] = root["$schema"].clone();
        jsonschema::validator_for(&sub).expect("compiles")
    }

    /// The samples `ci/claude-schema` checks (`<Definition>.<case>.(valid|invalid).json`), here
    /// against the vendored file as generated and against the schema the fake is held to.
    #[test]
    fn the_samples_validate_as_named_and_only_the_observed_deviations_are_widened() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/schemas/claude-code/samples");
        let raw: Value = serde_json::from_str(SCHEMA).unwrap();
        let mut n = 0;
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let parts: Vec<&str> = name.split('.').collect();
            let [def, case, verdict, "json"] = parts[..] else {
                panic!("sample name {name}");
            };
            // The compiled-definition cache is keyed by the schema's own (static) names.
            let def: &'static str = Box::leak(def.to_owned().into_boxed_str());
            let sample: Value =
                serde_json::from_str(&std::fs::read_to_string(entry.path()).unwrap()).unwrap();
            let valid = verdict == "valid";
            assert_eq!(
                validator(&raw, def).is_valid(&sample),
                valid,
                "{name} (generated)"
            );
            // The one sample a deviation turns valid: the real CLI's text block without
            // `citations` (an API error's synthetic message).
            let widened = valid || case == "missing_citations";
            assert_eq!(
                DEFS.get(def).unwrap().is_valid(&sample),
                widened,
                "{name} (with the observed deviations)"
            );
            n += 1;
        }
        assert!(n >= 70, "{n} samples");
    }

    fn sample(name: &str) -> Value {
        let path = format!(
            "{}/schemas/claude-code/samples/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// A control response's pending requests are judged as control requests, whichever
    /// request the SDK's union allows (reached through a linked reference, [`crate::link`]).
    #[test]
    fn a_control_responses_pending_requests_are_judged_as_requests() {
        let valid = sample("SDKControlRequest.can_use_tool.valid");
        let invalid = sample("SDKControlRequest.can_use_tool_missing_tool_use_id.invalid");
        let mut answer = sample("SDKControlResponse.initialize.valid");
        assert_eq!(validate_frame(&answer, None), Ok(()));
        answer["response"]["pending_permission_requests"] = json!([valid]);
        assert_eq!(validate_frame(&answer, None), Ok(()));
        answer["response"]["pending_permission_requests"] = json!([invalid]);
        assert!(validate_frame(&answer, None).is_err());
        let mut error = sample("SDKControlResponse.error.valid");
        let mut interrupt = valid.clone();
        interrupt["request"] = json!({ "subtype": "interrupt" });
        error["response"]["pending_user_dialog_requests"] = json!([interrupt]);
        assert_eq!(validate_frame(&error, None), Ok(()));
        interrupt["request"] = json!({ "subtype": "no_such_request" });
        error["response"]["pending_user_dialog_requests"] = json!([interrupt]);
        assert!(validate_frame(&error, None).is_err());
    }

    #[test]
    fn a_frame_of_every_kind_the_fake_sends_is_judged_by_its_own_type() {
        let bad_result = json!({"type": "result", "subtype": "success", "is_error": "no"});
        assert!(
            validate_frame(&bad_result, None)
                .unwrap_err()
                .to_string()
                .contains("SDKResultSuccess")
        );
        let stray = json!({"type": "control_request", "request_id": "r",
            "request": {"subtype": "initialize"}});
        assert!(
            validate_frame(&stray, None)
                .unwrap_err()
                .to_string()
                .contains("no control request")
        );
        let init_answer = json!({"type": "control_response",
            "response": {"subtype": "success", "request_id": "r", "response": {}}});
        assert!(
            validate_frame(&init_answer, Some("initialize"))
                .unwrap_err()
                .to_string()
                .contains("SDKControlInitializeResponse")
        );
    }
}
