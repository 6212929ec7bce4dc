//! The `params` subset rule of `expect`: every key the script names must be present with an
//! equal value (recursively for objects); arrays and scalars compare exactly.

use serde_json::Value;

/// Returns a description of the first difference, or `None` when `expected ⊆ actual`.
/// `path` names the root in the description (e.g. `params`).
pub fn subset_mismatch(expected: &Value, actual: &Value, path: &str) -> Option<String> {
    match expected {
        Value::Object(want) => {
            // Absent params read as `{}` (ACP leaves the key out when there are none).
            let empty = serde_json::Map::new();
            let have = match actual {
                Value::Object(have) => have,
                Value::Null => &empty,
                other => return Some(format!("{path}: expected an object, got {other}")),
            };
            want.iter().find_map(|(key, want)| {
                let sub = format!("{path}.{key}");
                match have.get(key) {
                    None => Some(format!("{sub}: missing (expected {want})")),
                    Some(got) => subset_mismatch(want, got, &sub),
                }
            })
        }
        _ if expected == actual => None,
        _ => Some(format!("{path}: expected {expected}, got {actual}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
