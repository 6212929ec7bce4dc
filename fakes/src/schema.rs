//! Which frames of a fake's ledger break their protocol's schema.

use conform_protocol::side::{Direction, FakeEvent, FakeLine};

use crate::bundle::Lookup;
use conform_protocol::vocab::Provider;
use jsonschema::Validator;
use serde_json::Value;

/// Validates `value`, naming `what` and the first few errors (with where they are).
pub(crate) fn check(validator: &Validator, value: &Value, what: &str) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {}", errors.join("; ")))
    }
}

/// Frames a fake sent that are invalid for `protocol` at `product_version` (`None`: the
/// protocol's default; Codex has a schema per version, the DSH SDK one schema for both its
/// versions, the others ignore it) and carry no `violation` mark, with the reason. `None` when conform has no schema for that protocol or version (so
/// callers can say so instead of passing silently).
pub fn unmarked_invalid_frames<'a>(
    provider: Provider,
    product_version: Option<&str>,
    lines: &'a [FakeLine],
) -> Option<Vec<(&'a FakeLine, String)>> {
    let mut codec = crate::codec::for_provider(provider);
    codec.set_product_version(product_version).ok()?;
    let validate = |frame: &Value, answers: Option<&str>| codec.validate_frame(frame, answers);
    Some(
        lines
            .iter()
            .filter_map(|line| match &line.event {
                FakeEvent::Frame {
                    dir: Direction::Sent,
                    frame,
                    violation: None,
                    answers,
                } => validate(frame, answers.as_deref()).err().map(|e| (line, e)),
                _ => None,
            })
            .collect(),
    )
}

/// The subschema at `pointer` as a document of its own: the subschema at the root, and under
/// `definitions` every definition it refers to, directly or not, at the path it has in the
/// bundle (so each `#/definitions/…` reference resolves as before). `groups`: definitions that
/// hold definitions of their own (Codex's `v2`). Compiling a subschema with the whole bundle
/// keeps a copy of all of it per validator.
pub(crate) fn closure(root: &impl Lookup, pointer: &str, groups: &[&str]) -> Option<Value> {
    closure_in(root, pointer, "definitions", groups)
}

/// [`closure`] for a bundle whose definitions sit under `key` (`$defs` in draft 2020-12).
pub(crate) fn closure_in(
    root: &impl Lookup,
    pointer: &str,
    key: &str,
    groups: &[&str],
) -> Option<Value> {
    let prefix = format!("#/{key}/");
    let mut doc = root.lookup(pointer.strip_prefix('#')?)?.clone();
    let mut definitions = serde_json::Map::new();
    let mut pending = vec![doc.clone()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(schema) = pending.pop() {
        for r in refs(&schema) {
            // A reference names a definition, or a place inside one: the definition whole.
            let Some(path) = r.strip_prefix(prefix.as_str()) else {
                continue;
            };
            let mut segments: Vec<&str> = path.split('/').collect();
            let depth = if segments.first().is_some_and(|g| groups.contains(g)) {
                2
            } else {
                1
            };
            segments.truncate(depth);
            let entry = segments.join("/");
            if !seen.insert(entry.clone()) {
                continue;
            }
            let Some(def) = root.lookup(&format!("/{key}/{entry}")) else {
                continue;
            };
            pending.push(def.clone());
            let slot = if depth == 2 {
                definitions
                    .entry("v2")
                    .or_insert_with(|| Value::Object(Default::default()))
                    .as_object_mut()?
                    .entry(segments[1])
                    .or_insert(Value::Null)
            } else {
                definitions.entry(segments[0]).or_insert(Value::Null)
            };
            *slot = def.clone();
        }
    }
    let obj = doc.as_object_mut()?;
    obj.insert(key.into(), Value::Object(definitions));
    Some(doc)
}

/// Every `$ref` string inside `schema`.
fn refs(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    out.push(r.clone());
                }
                stack.extend(m.values());
            }
            Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    out
}
