//! A protocol's closed vocabulary as its generated JSON Schema states it: for each definition,
//! every string it can take as a constant — the methods of a notification or request union, the
//! values of an enum, the tags of a tagged union. Two versions' vocabularies side by side show
//! what an upgrade added or removed (a notification, a request, an error code) before any wire
//! shows it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;

/// Definition name → the string constants it holds (its own, not those of what it refers to).
pub type DefinitionConstants = BTreeMap<String, BTreeSet<String>>;

/// The vocabulary of a schema document with `definitions` (or `$defs`). A definition that is
/// a namespace of definitions (Codex's bundle keeps its v2 types under `v2`) is read as its
/// members, named `v2.Member`.
pub fn of_schema(schema: &Value) -> DefinitionConstants {
    let mut out = DefinitionConstants::new();
    if let Some(defs) = schema
        .get("definitions")
        .or_else(|| schema.get("$defs"))
        .and_then(Value::as_object)
    {
        definitions(defs, "", &mut out);
    }
    out
}

fn definitions(defs: &serde_json::Map<String, Value>, prefix: &str, out: &mut DefinitionConstants) {
    for (name, def) in defs {
        let name = format!("{prefix}{name}");
        match def.as_object().filter(|o| is_namespace(o)) {
            Some(members) => definitions(members, &format!("{name}."), out),
            None => {
                let mut values = BTreeSet::new();
                constants(def, &mut values);
                out.insert(name, values);
            }
        }
    }
}

/// An object of definitions rather than a schema: no schema keyword, every member an object.
fn is_namespace(o: &serde_json::Map<String, Value>) -> bool {
    const KEYWORDS: &[&str] = &[
        "type",
        "properties",
        "oneOf",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "$ref",
        "items",
        "description",
        "title",
        "required",
        "additionalProperties",
        "format",
        "$schema",
    ];
    !o.is_empty()
        && o.keys().all(|k| !KEYWORDS.contains(&k.as_str()))
        && o.values().all(Value::is_object)
}

/// Every `enum` string and `const` string inside `v` (a `$ref` is another definition's).
fn constants(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(o) => {
            for (k, x) in o {
                match (k.as_str(), x) {
                    ("enum", Value::Array(values)) => {
                        out.extend(values.iter().filter_map(Value::as_str).map(str::to_owned));
                    }
                    ("const", Value::String(s)) => {
                        out.insert(s.clone());
                    }
                    // Prose and defaults name no vocabulary.
                    ("description" | "title" | "default" | "examples", _) => {}
                    _ => constants(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| constants(x, out)),
        _ => {}
    }
}

#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("could not run `{command}`: {source}")]
    Run {
        command: String,
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}); stderr:\n{stderr}")]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("{path}: {source}")]
    ReadSchema {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    ParseSchema {
        path: std::path::PathBuf,
        source: serde_json::Error,
    },
}

/// The v2 protocol schema a Codex binary generates (`<bin> app-server generate-json-schema
/// --out <work>`), in a home of its own under `work`.
pub fn codex_schema(bin: &Path, work: &Path) -> Result<Value, GenerateError> {
    let command = format!(
        "{} app-server generate-json-schema --out {}",
        bin.display(),
        work.display()
    );
    let home = work.join("codex-home");
    std::fs::create_dir_all(&home).map_err(|source| GenerateError::Run {
        command: command.clone(),
        source,
    })?;
    let out = std::process::Command::new(bin)
        .args(["app-server", "generate-json-schema", "--out"])
        .arg(work)
        // An isolated home: the generator must not read or write the user's Codex state.
        .env("CODEX_HOME", &home)
        .output()
        .map_err(|source| GenerateError::Run {
            command: command.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(GenerateError::Failed {
            command,
            status: out.status.to_string(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        });
    }
    let bundle = work.join("codex_app_server_protocol.v2.schemas.json");
    let text = std::fs::read_to_string(&bundle).map_err(|source| GenerateError::ReadSchema {
        path: bundle.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| GenerateError::ParseSchema {
        path: bundle,
        source,
    })
}

/// One definition's change from one version to the next.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub struct DefinitionChange {
    pub definition: String,
    /// The definition is new (or gone) as a whole.
    pub whole: Option<Whole>,
    pub added: BTreeSet<String>,
    pub removed: BTreeSet<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Whole {
    Added,
    Removed,
}

impl std::fmt::Display for DefinitionChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let list = |s: &BTreeSet<String>| {
            s.iter()
                .map(|v| format!("`{v}`"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match self.whole {
            Some(Whole::Added) => write!(f, "new definition `{}`", self.definition)?,
            Some(Whole::Removed) => write!(f, "definition `{}` is gone", self.definition)?,
            None => write!(f, "`{}`", self.definition)?,
        }
        if !self.added.is_empty() {
            write!(f, "; adds {}", list(&self.added))?;
        }
        if !self.removed.is_empty() {
            write!(f, "; removes {}", list(&self.removed))?;
        }
        Ok(())
    }
}

/// What changed from `old` to `new`: definitions added or removed, and the constants each
/// common definition gained or lost. A new definition without constants is listed too (a new
/// payload type).
pub fn changes(old: &DefinitionConstants, new: &DefinitionConstants) -> Vec<DefinitionChange> {
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let empty = BTreeSet::new();
            let (o, n) = (old.get(name), new.get(name));
            let whole = match (o, n) {
                (None, Some(_)) => Some(Whole::Added),
                (Some(_), None) => Some(Whole::Removed),
                _ => None,
            };
            let (o, n) = (o.unwrap_or(&empty), n.unwrap_or(&empty));
            let added: BTreeSet<String> = n.difference(o).cloned().collect();
            let removed: BTreeSet<String> = o.difference(n).cloned().collect();
            (whole.is_some() || !added.is_empty() || !removed.is_empty()).then(|| {
                DefinitionChange {
                    definition: name.clone(),
                    whole,
                    added,
                    removed,
                }
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn added_methods_enum_values_and_definitions_are_found() {
        let old = json!({"definitions": {
            "ServerNotification": {"oneOf": [
                {"properties": {"method": {"enum": ["turn/started"]}, "params": {"$ref": "#/definitions/X"}}},
                {"properties": {"method": {"const": "turn/completed"}}}]},
            "CodexErrorInfo": {"oneOf": [{"enum": ["unauthorized", "other"]}],
                "description": "not a `value`", "default": "other"},
            "Gone": {"type": "object"},
            "v2": {"Status": {"enum": ["idle", "active"]}}}});
        let new = json!({"definitions": {
            "ServerNotification": {"oneOf": [
                {"properties": {"method": {"enum": ["turn/started"]}}},
                {"properties": {"method": {"const": "turn/completed"}}},
                {"properties": {"method": {"const": "thread/search/partial"}}}]},
            "CodexErrorInfo": {"oneOf": [{"enum": ["unauthorized", "other", "bioPolicy"]}]},
            "SearchPartial": {"type": "object"},
            "v2": {"Status": {"enum": ["idle", "active", "systemError"]}}}});
        let c = changes(&of_schema(&old), &of_schema(&new));
        let shown: Vec<String> = c.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "`CodexErrorInfo`; adds `bioPolicy`",
                "definition `Gone` is gone",
                "new definition `SearchPartial`",
                "`ServerNotification`; adds `thread/search/partial`",
                "`v2.Status`; adds `systemError`",
            ]
        );
        assert!(changes(&of_schema(&old), &of_schema(&old)).is_empty());
    }
}
