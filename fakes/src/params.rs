//! How `expect` compares the params it received with the script's: as a subset (every member
//! the script names must be there, equal, recursively for objects; arrays and scalars compare
//! exactly), or whole (`exact`: no other member either, at any depth). Two placeholders stand
//! for values a script cannot know: `{ "$cwd" = true }` is the fake's own working directory
//! (where the subject started it), `{ "$re" = "…" }` any string matching that regex.

use serde_json::Value;

/// The comparison of one `expect` step.
pub struct Rule<'a> {
    pub exact: bool,
    /// The fake's working directory (what `$cwd` stands for).
    pub cwd: &'a str,
}

/// Returns a description of the first difference, or `None` when `actual` matches `expected`.
/// `path` names the root in the description (e.g. `params`).
pub fn mismatch(expected: &Value, actual: &Value, path: &str, rule: &Rule) -> Option<String> {
    if let Some(placeholder) = placeholder(expected) {
        return placeholder.mismatch(actual, path, rule);
    }
    match expected {
        Value::Object(want) => {
            // Absent params read as `{}` (ACP leaves the key out when there are none).
            let empty = serde_json::Map::new();
            let have = match actual {
                Value::Object(have) => have,
                Value::Null => &empty,
                other => return Some(format!("{path}: expected an object, got {other}")),
            };
            let missing_or_different = want.iter().find_map(|(key, want)| {
                let sub = format!("{path}.{key}");
                match have.get(key) {
                    None => Some(format!("{sub}: missing (expected {want})")),
                    Some(got) => mismatch(want, got, &sub, rule),
                }
            });
            missing_or_different.or_else(|| {
                let extra = have.keys().find(|k| rule.exact && !want.contains_key(*k))?;
                Some(format!(
                    "{path}.{extra}: not expected (sent {})",
                    have[extra]
                ))
            })
        }
        Value::Array(want) if rule.exact || want.iter().any(placeholder_inside) => {
            let Value::Array(have) = actual else {
                return Some(format!("{path}: expected an array, got {actual}"));
            };
            if want.len() != have.len() {
                return Some(format!("{path}: expected {expected}, got {actual}"));
            }
            want.iter()
                .zip(have)
                .enumerate()
                .find_map(|(i, (w, h))| mismatch(w, h, &format!("{path}[{i}]"), rule))
        }
        _ if expected == actual => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

enum Placeholder<'a> {
    Cwd,
    Re(&'a str),
}

impl Placeholder<'_> {
    fn mismatch(&self, actual: &Value, path: &str, rule: &Rule) -> Option<String> {
        match self {
            Placeholder::Cwd if actual.as_str() == Some(rule.cwd) => None,
            Placeholder::Cwd => Some(format!(
                "{path}: expected the runtime's working directory {:?}, got {actual}",
                rule.cwd
            )),
            Placeholder::Re(re) => {
                let ok = match regex::Regex::new(re) {
                    Ok(r) => actual.as_str().is_some_and(|s| r.is_match(s)),
                    Err(e) => return Some(format!("{path}: the script's `$re` is invalid: {e}")),
                };
                (!ok).then(|| format!("{path}: expected a string matching {re:?}, got {actual}"))
            }
        }
    }
}

/// `{ "$cwd" = true }` or `{ "$re" = "…" }`.
fn placeholder(v: &Value) -> Option<Placeholder<'_>> {
    let Value::Object(m) = v else { return None };
    if m.len() != 1 {
        return None;
    }
    match (m.get("$cwd"), m.get("$re")) {
        (Some(Value::Bool(true)), _) => Some(Placeholder::Cwd),
        (_, Some(Value::String(re))) => Some(Placeholder::Re(re)),
        _ => None,
    }
}

fn placeholder_inside(v: &Value) -> bool {
    placeholder(v).is_some()
        || match v {
            Value::Object(m) => m.values().any(placeholder_inside),
            Value::Array(a) => a.iter().any(placeholder_inside),
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SUBSET: Rule = Rule {
        exact: false,
        cwd: "/ws",
    };
    const EXACT: Rule = Rule {
        exact: true,
        cwd: "/ws",
    };

    fn subset_mismatch(expected: &Value, actual: &Value, path: &str) -> Option<String> {
        mismatch(expected, actual, path, &SUBSET)
    }

    #[test]
    fn exact_rules_and_placeholders() {
        let actual = json!({"cwd": "/ws", "id": "session-0a", "list": [{"a": 1, "b": 2}]});
        let want = json!({"cwd": {"$cwd": true}, "id": {"$re": "^session-[0-9a-f]+$"},
            "list": [{"a": 1, "b": 2}]});
        assert_eq!(mismatch(&want, &actual, "params", &EXACT), None);
        assert_eq!(
            mismatch(&json!({"cwd": {"$cwd": true}}), &actual, "params", &EXACT).as_deref(),
            Some("params.id: not expected (sent \"session-0a\")")
        );
        assert_eq!(
            mismatch(&json!({"list": [{"a": 1}]}), &actual, "params", &SUBSET),
            Some("params.list: expected [{\"a\":1}], got [{\"a\":1,\"b\":2}]".into())
        );
        let deep = json!({"cwd": "/ws", "id": "session-0a", "list": [{"a": 1}]});
        assert_eq!(
            mismatch(&deep, &actual, "params", &EXACT).as_deref(),
            Some("params.list[0].b: not expected (sent 2)")
        );
        assert_eq!(
            mismatch(
                &json!({"cwd": {"$cwd": true}}),
                &json!({"cwd": "/elsewhere"}),
                "params",
                &SUBSET
            )
            .as_deref(),
            Some(
                "params.cwd: expected the runtime's working directory \"/ws\", got \"/elsewhere\""
            )
        );
        assert!(
            mismatch(
                &json!({"id": {"$re": "^x$"}}),
                &json!({"id": 7}),
                "params",
                &SUBSET
            )
            .is_some()
        );
    }

    #[test]
    fn subset_rules() {
        let actual = json!({"a": 1, "b": {"c": [1, 2], "d": "x"}});
        assert_eq!(subset_mismatch(&json!({}), &actual, "params"), None);
        assert_eq!(
            subset_mismatch(&json!({"b": {"d": "x"}}), &actual, "params"),
            None
        );
        assert_eq!(
            subset_mismatch(&json!({"b": {"c": [1]}}), &actual, "params").as_deref(),
            Some("params.b.c: expected [1], got [1,2]")
        );
        assert_eq!(
            subset_mismatch(&json!({"z": 1}), &actual, "params").as_deref(),
            Some("params.z: missing (expected 1)")
        );
        assert_eq!(subset_mismatch(&json!({}), &Value::Null, "params"), None);
        assert!(subset_mismatch(&json!({"a": 1}), &Value::Null, "params").is_some());
    }
}
