//! Seed 000's ACP mappings: a prompt's `stopReason` to the shared stop reason and its
//! diagnostic, and the unattended answer to a permission request.

use serde_json::{Value, json};

use crate::diagnostic::{Category, FailureLine, PermissionFact, Policy, Stage, with_permission};

/// Map a `session/prompt` result's `stopReason` to the shared stop reason and diagnostic.
pub fn map_stop_reason(
    raw: Option<&Value>,
    permission: Option<&PermissionFact>,
    max_tokens_as_error: bool,
) -> (&'static str, Option<String>) {
    let alone = permission.map(ToString::to_string);
    match raw.and_then(Value::as_str) {
        Some("end_turn") => ("completed", None),
        Some("max_tokens") if max_tokens_as_error => ("error", alone),
        Some("max_tokens") => ("max-tokens", alone),
        Some("refusal") => ("refusal", alone),
        Some("cancelled") => ("aborted", alone),
        Some("max_turn_requests") => (
            "error",
            Some(with_permission(
                &FailureLine::acp(Stage::Prompt, Category::RemoteLimit)
                    .with_stop_reason("max_turn_requests"),
                permission,
            )),
        ),
        _ => (
            "error",
            Some(with_permission(
                &FailureLine::acp(Stage::Prompt, Category::Unknown),
                permission,
            )),
        ),
    }
}

/// The unattended permission answer: `(response, allowed)`.
pub fn answer_permission(policy: Policy, params: &Value) -> (Value, bool) {
    if policy == Policy::Allow {
        let chosen = params
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|o| {
                matches!(
                    o.get("kind").and_then(Value::as_str),
                    Some("allow_once" | "allow_always")
                ) && o.get("optionId").is_some_and(Value::is_string)
            });
        if let Some(option) = chosen {
            return (
                json!({"outcome": {"outcome": "selected", "optionId": option["optionId"]}}),
                true,
            );
        }
    }
    (json!({"outcome": {"outcome": "cancelled"}}), false)
}
