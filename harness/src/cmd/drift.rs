//! Upgrade drift: what a real Codex binary's error-info vocabulary says compared with the one
//! conform's fakes and reference are pinned to. The vocabulary is read from the binary's own
//! `app-server generate-json-schema` output, from the *named* variants of `CodexErrorInfo` —
//! never from a catch-all (0.169 added an open `{"type":["string","object"]}` variant that would
//! make any code "valid").

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use conform_protocol::codex::ErrorInfoVocabulary;
use serde_json::Value;

use std::process::ExitCode;

use crate::cli::DriftArgs;
use crate::cmd::output::out;
use crate::cmd::{Error as CmdError, verdict};

/// A vocabulary read from a schema (owned, unlike the pinned constants).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchemaVocabulary {
    pub strings: BTreeSet<String>,
    /// Object variant → field → type.
    pub objects: BTreeMap<String, BTreeMap<String, String>>,
    /// The schema also accepts any string or object (an open catch-all variant).
    pub open: bool,
}

impl From<&ErrorInfoVocabulary> for SchemaVocabulary {
    fn from(v: &ErrorInfoVocabulary) -> Self {
        SchemaVocabulary {
            strings: v.strings.iter().map(|s| s.to_string()).collect(),
            objects: v
                .objects
                .iter()
                .map(|o| {
                    let fields = o
                        .fields
                        .iter()
                        .map(|(f, t)| (f.to_string(), t.to_string()))
                        .collect();
                    (o.name.to_string(), fields)
                })
                .collect(),
            open: false,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DriftError {
    #[error(transparent)]
    Generate(#[from] crate::differential::vocabulary::GenerateError),
    #[error("{0}")]
    Schema(String),
}

/// Runs `<bin> app-server generate-json-schema --out <dir>` and reads the vocabulary.
pub fn from_binary(bin: &Path, work: &Path) -> Result<SchemaVocabulary, DriftError> {
    from_schema(&crate::differential::vocabulary::codex_schema(bin, work)?)
}

/// Reads the `CodexErrorInfo` vocabulary from a generated schema document.
pub fn from_schema(schema: &Value) -> Result<SchemaVocabulary, DriftError> {
    let def = find_definition(schema, "CodexErrorInfo").ok_or_else(|| {
        DriftError::Schema("the schema has no `CodexErrorInfo` definition".into())
    })?;
    let variants = def
        .get("oneOf")
        .or_else(|| def.get("anyOf"))
        .and_then(Value::as_array)
        .ok_or_else(|| {
            DriftError::Schema("`CodexErrorInfo` is not a union (no oneOf/anyOf)".into())
        })?;
    let mut vocab = SchemaVocabulary::default();
    for v in variants {
        if let Some(values) = v.get("enum").and_then(Value::as_array) {
            vocab
                .strings
                .extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
        } else if let Some(c) = v.get("const").and_then(Value::as_str) {
            vocab.strings.insert(c.to_owned());
        } else if let Some([key]) = v
            .get("required")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            && let Some(name) = key.as_str()
        {
            let payload = v.pointer(&format!("/properties/{name}/properties"));
            let fields = payload
                .and_then(Value::as_object)
                .map(|props| {
                    props
                        .iter()
                        .map(|(field, schema)| (field.clone(), type_of(schema)))
                        .collect()
                })
                .unwrap_or_default();
            vocab.objects.insert(name.to_owned(), fields);
        } else if v.get("enum").is_none() && v.get("properties").is_none() {
            // A bare `{"type": …}` variant accepts values by shape, not by name.
            vocab.open = true;
        }
    }
    Ok(vocab)
}

/// The first union definition named `name`, wherever the bundle nests it (`definitions/X`,
/// `definitions/v2/X`, `$defs/X`).
fn find_definition<'a>(schema: &'a Value, name: &str) -> Option<&'a Value> {
    match schema {
        Value::Object(map) => {
            if let Some(found) = map.get(name)
                && (found.get("oneOf").is_some() || found.get("anyOf").is_some())
            {
                return Some(found);
            }
            map.values().find_map(|v| find_definition(v, name))
        }
        Value::Array(items) => items.iter().find_map(|v| find_definition(v, name)),
        _ => None,
    }
}

fn type_of(schema: &Value) -> String {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or(r).to_owned();
    }
    let nullable = match schema.get("type") {
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => false,
    };
    let base = schema
        .get("format")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| match schema.get("type") {
            Some(Value::String(t)) => Some(t.clone()),
            Some(Value::Array(types)) => Some(
                types
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|t| *t != "null")
                    .collect::<Vec<_>>()
                    .join("|"),
            ),
            _ => None,
        })
        .unwrap_or_else(|| "any".to_owned());
    if nullable {
        format!("{base}|null")
    } else {
        base
    }
}

/// What changed from `pinned` to `actual`.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Drift {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<String>,
}

impl Drift {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

pub fn compare(pinned: &SchemaVocabulary, actual: &SchemaVocabulary) -> Drift {
    let mut d = Drift::default();
    for s in actual.strings.difference(&pinned.strings) {
        d.added.push(format!("\"{s}\""));
    }
    for s in pinned.strings.difference(&actual.strings) {
        d.removed.push(format!("\"{s}\""));
    }
    for (name, fields) in &actual.objects {
        match pinned.objects.get(name) {
            None => d.added.push(format!("{{{name}: {}}}", show_fields(fields))),
            Some(old) if old != fields => d.changed.push(format!(
                "{{{name}}}: {} → {}",
                show_fields(old),
                show_fields(fields)
            )),
            Some(_) => {}
        }
    }
    for (name, fields) in &pinned.objects {
        if !actual.objects.contains_key(name) {
            d.removed
                .push(format!("{{{name}: {}}}", show_fields(fields)));
        }
    }
    d
}

fn show_fields(fields: &BTreeMap<String, String>) -> String {
    let inner: Vec<String> = fields.iter().map(|(f, t)| format!("{f}: {t}")).collect();
    format!("{{{}}}", inner.join(", "))
}

/// The human report of one comparison.
pub fn render(
    pinned_version: &str,
    actual_label: &str,
    actual: &SchemaVocabulary,
    drift: &Drift,
) -> String {
    let mut out = format!(
        "CodexErrorInfo: pinned {pinned_version} vs {actual_label}: {} strings, {} objects{}\n",
        actual.strings.len(),
        actual.objects.len(),
        if actual.open {
            " (plus an open catch-all: unknown codes are schema-valid, so only named variants count)"
        } else {
            ""
        }
    );
    if drift.is_empty() {
        out.push_str("no drift\n");
        return out;
    }
    for (label, items) in [
        ("added", &drift.added),
        ("removed", &drift.removed),
        ("changed", &drift.changed),
    ] {
        if !items.is_empty() {
            out.push_str(&format!("{label} ({}):\n", items.len()));
            for i in items {
                out.push_str(&format!("  {i}\n"));
            }
        }
    }
    out
}

/// `conform drift codex`: the product's vocabulary against the pinned one.
pub fn exec(args: DriftArgs) -> Result<ExitCode, CmdError> {
    let pinned = match args.against.as_deref() {
        None => conform_protocol::codex::PINNED,
        Some(v) => conform_protocol::codex::by_version(v).ok_or_else(|| {
            CmdError::Usage(format!("conform knows no Codex vocabulary for version {v}"))
        })?,
    };
    let (label, actual) = match (&args.bin, &args.schema) {
        (Some(bin), _) => {
            let work = tempfile::tempdir().map_err(|e| CmdError::Usage(e.to_string()))?;
            (bin.display().to_string(), from_binary(bin, work.path()))
        }
        (None, Some(path)) => (path.display().to_string(), from_schema_file(path)),
        (None, None) => unreachable!("clap requires --bin or --schema"),
    };
    let actual = actual.map_err(|e| CmdError::Usage(e.to_string()))?;
    let d = compare(&pinned.into(), &actual);
    out(&render(pinned.version, &label, &actual, &d))?;
    Ok(verdict(d.is_empty()))
}

/// A schema bundle already generated, read from its file.
fn from_schema_file(path: &Path) -> Result<SchemaVocabulary, DriftError> {
    std::fs::read_to_string(path)
        .map_err(|e| DriftError::Schema(format!("{}: {e}", path.display())))
        .and_then(|t| {
            serde_json::from_str(&t)
                .map_err(|e| DriftError::Schema(format!("{}: {e}", path.display())))
        })
        .and_then(|v| from_schema(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use conform_protocol::codex::{PINNED, V0_169_0};
    use serde_json::json;

    fn schema_0_169_shape() -> Value {
        json!({"definitions": {"CodexErrorInfo": {"anyOf": [
            {"enum": ["contextWindowExceeded", "other", "rateLimitExceeded"], "type": "string"},
            {"enum": ["inferenceHookDenied"], "type": "string", "description": "…"},
            {"required": ["httpConnectionFailed"], "type": "object", "additionalProperties": false,
             "properties": {"httpConnectionFailed": {"type": "object", "properties": {
                "httpStatusCode": {"format": "uint16", "minimum": 0.0, "type": ["integer", "null"]}}}}},
            {"required": ["activeTurnNotSteerable"], "type": "object",
             "properties": {"activeTurnNotSteerable": {"type": "object", "required": ["turnKind"], "properties": {
                "turnKind": {"$ref": "#/definitions/NonSteerableTurnKind"}}}}},
            {"type": ["string", "object"]}
        ]}}})
    }

    #[test]
    fn named_variants_are_read_and_the_catch_all_is_only_noted() {
        let v = from_schema(&schema_0_169_shape()).unwrap();
        assert_eq!(
            v.strings.iter().map(String::as_str).collect::<Vec<_>>(),
            [
                "contextWindowExceeded",
                "inferenceHookDenied",
                "other",
                "rateLimitExceeded"
            ]
        );
        assert_eq!(
            v.objects["httpConnectionFailed"]["httpStatusCode"],
            "uint16|null"
        );
        assert_eq!(
            v.objects["activeTurnNotSteerable"]["turnKind"],
            "NonSteerableTurnKind"
        );
        assert!(v.open);
    }

    #[test]
    fn the_pinned_versions_differ_by_exactly_the_seven_new_codes() {
        let d = compare(&PINNED.into(), &(&V0_169_0).into());
        assert_eq!(
            d.added,
            [
                "\"flexUnavailable\"",
                "\"inferenceHookDenied\"",
                "\"misalignmentPolicyViolation\"",
                "\"modelNotFound\"",
                "\"policyCapacityUnavailable\"",
                "\"rateLimitExceeded\"",
                "\"tooManyDenials\""
            ]
        );
        assert!(d.removed.is_empty() && d.changed.is_empty());
        assert!(compare(&PINNED.into(), &PINNED.into()).is_empty());
    }

    #[test]
    fn removed_and_changed_variants_are_reported() {
        let mut actual: SchemaVocabulary = PINNED.into();
        actual.strings.remove("cyberPolicy");
        actual
            .objects
            .get_mut("httpConnectionFailed")
            .unwrap()
            .insert("httpStatusCode".into(), "string".into());
        let d = compare(&PINNED.into(), &actual);
        assert_eq!(d.removed, ["\"cyberPolicy\""]);
        assert_eq!(
            d.changed,
            ["{httpConnectionFailed}: {httpStatusCode: uint16|null} → {httpStatusCode: string}"]
        );
    }

    #[test]
    fn a_schema_without_the_definition_is_an_error() {
        assert!(from_schema(&json!({"definitions": {}})).is_err());
    }
}
