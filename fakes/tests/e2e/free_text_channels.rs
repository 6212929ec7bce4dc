//! Every free-text field a fake can send in a notification or request, as its protocol's
//! schema defines them, is collected as untrusted text (`Codec::untrusted_params`), unless the
//! codec declares it the run's output or it is a closed member by name. A field a protocol adds
//! that no one collects — or an exemption drawn too wide — fails here, naming the method and
//! the field.

use std::collections::BTreeSet;

use conform_fakes::codec::closed_member;
use conform_fakes::protocols::codec_for;
use conform_protocol::vocab::Provider;
use serde_json::{Map, Value};

const SENTINEL: &str = "FREE-TEXT-NO-ONE-COLLECTS";

/// Fields that are the run's output by design, whatever else the frame says (the codec
/// exempts them unconditionally): method, pointer.
const OUTPUT: &[(&str, &str)] = &[
    ("item/agentMessage/delta", "/delta"),
    ("assistant", "/message/content/0/text"),
    ("stream_event", "/event/delta/text"),
];

/// How deep into a params schema fields are enumerated (recursive item types end here).
const MAX_DEPTH: usize = 9;

/// The JSON pointers of every free-text string (a `string` with no `enum` or `const`) under
/// `schema`, arrays as their first element.
fn free_text_paths(
    root: &Value,
    schema: &Value,
    at: &str,
    depth: usize,
    refs: &mut Vec<String>,
    out: &mut BTreeSet<String>,
) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        if refs.iter().any(|seen| seen == r) {
            return;
        }
        let Some(target) = root.pointer(r.trim_start_matches('#')) else {
            panic!("unresolved $ref {r}");
        };
        refs.push(r.to_owned());
        free_text_paths(root, target, at, depth, refs, out);
        refs.pop();
    }
    for union in ["oneOf", "anyOf", "allOf"] {
        for branch in schema
            .get(union)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            free_text_paths(root, branch, at, depth, refs, out);
        }
    }
    if let Some(then) = schema.get("then") {
        free_text_paths(root, then, at, depth, refs, out);
    }
    let is_string = match schema.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    };
    let closed = schema.get("enum").is_some() || schema.get("const").is_some();
    if is_string && !closed && !at.is_empty() {
        out.insert(at.to_owned());
    }
    if let Some(Value::Object(props)) = schema.get("properties") {
        for (k, sub) in props {
            let key = k.replace('~', "~0").replace('/', "~1");
            free_text_paths(root, sub, &format!("{at}/{key}"), depth + 1, refs, out);
        }
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        free_text_paths(root, items, &format!("{at}/0"), depth + 1, refs, out);
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|i| i.is_object()) {
        free_text_paths(root, extra, &format!("{at}/key"), depth + 1, refs, out);
    }
}

/// Params holding only the sentinel, at `pointer`.
fn sample(pointer: &str) -> Value {
    let mut keys: Vec<&str> = pointer.split('/').skip(1).collect();
    let last = keys.pop().unwrap_or_default();
    let mut v = Value::String(SENTINEL.to_owned());
    let wrap = |key: &str, inner: Value| {
        if key == "0" {
            Value::Array(vec![inner])
        } else {
            let mut m = Map::new();
            m.insert(key.replace("~1", "/").replace("~0", "~"), inner);
            Value::Object(m)
        }
    };
    v = wrap(last, v);
    for key in keys.into_iter().rev() {
        v = wrap(key, v);
    }
    v
}

/// The fields of `method`'s params no one collects.
fn uncollected(provider: Provider, method: &str, root: &Value, params: &Value) -> Vec<String> {
    let codec = codec_for(provider);
    let mut paths = BTreeSet::new();
    free_text_paths(root, params, "", 0, &mut Vec::new(), &mut paths);
    paths
        .into_iter()
        .filter(|p| !closed_member(p) && !OUTPUT.contains(&(method, p.as_str())))
        .filter(|p| {
            let mut out = Vec::new();
            codec.untrusted_params(method, &sample(p), &mut out);
            !out.iter().any(|s| s == SENTINEL)
        })
        .map(|p| format!("{provider:?} {method} {p}"))
        .collect()
}

fn load(text: &str) -> Value {
    serde_json::from_str(text).expect("a vendored schema is JSON")
}

#[test]
fn every_codex_notification_and_request_field_is_collected() {
    let root = load(include_str!("../../schemas/codex/0.169.0.schemas.json"));
    let mut missing = Vec::new();
    let mut fields = 0;
    for union in ["ServerNotification", "ServerRequest"] {
        for branch in root["definitions"][union]["oneOf"].as_array().unwrap() {
            let method = branch["properties"]["method"]["enum"][0].as_str().unwrap();
            let params = &branch["properties"]["params"];
            let mut paths = BTreeSet::new();
            free_text_paths(&root, params, "", 0, &mut Vec::new(), &mut paths);
            fields += paths.len();
            missing.extend(uncollected(Provider::Codex, method, &root, params));
        }
    }
    // The `error` notification (a retry mid-turn) is one of them: its text is the upstream's.
    assert!(fields > 100, "the walk found only {fields} fields");
    all_collected(&missing);
}

#[test]
fn every_acp_agent_notification_and_request_field_is_collected() {
    let root = load(include_str!("../../schemas/acp-v1.schema.json"));
    let by_method = [
        ("session/update", "SessionNotification"),
        ("session/request_permission", "RequestPermissionRequest"),
        ("fs/read_text_file", "ReadTextFileRequest"),
        ("fs/write_text_file", "WriteTextFileRequest"),
        ("terminal/create", "CreateTerminalRequest"),
        ("elicitation/create", "CreateElicitationRequest"),
    ];
    all_collected(&uncollected_defs(
        Provider::Acp,
        &root,
        "#/$defs",
        &by_method,
    ));
}

#[test]
fn every_dsh_sdk_notification_field_is_collected() {
    let root = load(include_str!("../../schemas/dsh-sdk.schema.json"));
    let mut missing = Vec::new();
    for rule in root["$defs"]["Notification"]["allOf"].as_array().unwrap() {
        let method = rule["if"]["properties"]["method"]["const"]
            .as_str()
            .unwrap();
        let params = &rule["then"]["properties"]["params"];
        missing.extend(uncollected(Provider::DshSdk, method, &root, params));
    }
    all_collected(&missing);
}

#[test]
fn every_claude_code_message_field_is_collected() {
    let root = load(include_str!(
        "../../schemas/claude-code/0.3.220.schema.json"
    ));
    let by_kind = [
        ("assistant", "SDKAssistantMessage"),
        ("user", "SDKUserMessage"),
        ("stream_event", "SDKPartialAssistantMessage"),
        ("system", "SDKSystemMessage"),
    ];
    all_collected(&uncollected_defs(
        Provider::ClaudeCode,
        &root,
        "#/definitions",
        &by_kind,
    ));
}

/// What [`uncollected`] finds for each method (or message kind) whose params are the schema
/// definition named beside it (under `defs`, e.g. `#/$defs`).
fn uncollected_defs(
    provider: Provider,
    root: &Value,
    defs: &str,
    by_method: &[(&str, &str)],
) -> Vec<String> {
    by_method
        .iter()
        .flat_map(|(method, def)| {
            let params = serde_json::json!({ "$ref": format!("{defs}/{def}") });
            uncollected(provider, method, root, &params)
        })
        .collect()
}

/// Fails naming every field of free text no codec collects.
fn all_collected(missing: &[String]) {
    assert!(
        missing.is_empty(),
        "free text no one collects:\n{}",
        missing.join("\n")
    );
}
