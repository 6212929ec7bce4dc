//! What a Claude Code run's facts mean, as pure functions: the result message and how the
//! stream ended → stop reason and the safe line; the permission facts. Only closed-set values
//! reach a line: a result's `errors[]`, `result` text, denials and tool inputs never do.

use serde_json::Value;

use super::config::PermissionMode;
use crate::diagnostic::{ExitFacts, ProductLine};

pub const ERROR_NAME: &str = "ClaudeCodeRunFailure";
pub const PREFIX: &str = "subagent-claude-code: ";
pub const ABORTED_BEFORE_STARTUP: &str =
    "subagent-claude-code: request was aborted before SDK startup";
pub const NO_WORKING_DIRECTORY: &str = "subagent-claude-code: no working directory for the child — delegate from a parent session that has one";
pub const EMPTY_TASK: &str = "subagent-claude-code: the one-shot task must not be empty";
/// What the host's permission callback answers (the model sees it in the tool result).
pub const DENY_MESSAGE: &str =
    "This unattended Claude Code subagent cannot request human approval.";

pub(super) const PRODUCT: &str = "Claude Code";
pub const UNKNOWN: &str = "unknown";
const INVALID_SUCCESS: &str = "invalid-success";
const MISSING_RESULT: &str = "missing-result";
const PROCESS_EXIT: &str = "process-exit";
/// The SDK's error result subtypes, each its own category.
const ERROR_SUBTYPES: &[&str] = &[
    "error_during_execution",
    "error_max_turns",
    "error_max_budget_usd",
    "error_max_structured_output_retries",
];

/// The operation a Claude Code failure belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Spawn and the SDK's `initialize` handshake.
    QueryStart,
    /// The turn: the task, the messages, the result and the end of the stream.
    QueryRun,
    /// The CLI exited before any result.
    Process,
    /// `close()`, terminate, the process tree's release.
    Teardown,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::QueryStart => "query-start",
            Stage::QueryRun => "query-run",
            Stage::Process => "process",
            Stage::Teardown => "teardown",
        }
    }
}

pub fn line(stage: Stage, category: &'static str, exit: Option<ExitFacts>) -> ProductLine {
    ProductLine::new(PRODUCT, stage.as_str(), category).with_exit(exit.unwrap_or_default())
}

pub fn unknown_line(stage: Stage, exit: Option<ExitFacts>) -> ProductLine {
    line(stage, UNKNOWN, exit)
}

/// Seeded defects of the mapping.
#[derive(Clone, Copy, Debug, Default)]
pub struct MappingDefects {
    /// `blank-success-completed`: a success result counts whatever its text.
    pub blank_success_completed: bool,
    /// `max-turns-as-max-tokens`: `error_max_turns` is shown as the shared `max-tokens`.
    pub max_turns_as_max_tokens: bool,
}

/// How the turn ended, before mapping.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// A `result` arrived; `stream_ok`: the stream then ended normally (stdout EOF, and the CLI
    /// did not die by a signal or exit non-zero).
    Result { result: Value, stream_ok: bool },
    /// The stream ended without a result and the CLI exited: with these facts.
    Exited(ExitFacts),
    /// The stream ended without a result while the CLI lived on (or exited 0).
    NoResult,
}

/// The mapped outcome: stop reason, the completed answer, the failure line.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapped {
    pub stop_reason: &'static str,
    pub answer: Option<String>,
    pub line: Option<ProductLine>,
}

fn failed(line: ProductLine) -> Mapped {
    Mapped {
        stop_reason: "error",
        answer: None,
        line: Some(line),
    }
}

/// Maps how the turn ended; `exit`: the CLI's exit facts if it already exited (appended to
/// every line).
pub fn map_ending(ending: &Ending, exit: Option<ExitFacts>, d: MappingDefects) -> Mapped {
    match ending {
        Ending::Exited(facts) => failed(line(Stage::Process, PROCESS_EXIT, Some(*facts))),
        Ending::NoResult => failed(line(Stage::QueryRun, MISSING_RESULT, exit)),
        Ending::Result { result, stream_ok } => {
            let subtype = result.get("subtype").and_then(Value::as_str);
            if subtype == Some("success") {
                let text = result.get("result").and_then(Value::as_str);
                let valid = result.get("is_error") == Some(&Value::Bool(false))
                    && text.is_some_and(|t| d.blank_success_completed || !t.trim().is_empty());
                if !valid {
                    return failed(line(Stage::QueryRun, INVALID_SUCCESS, exit));
                }
                if !stream_ok {
                    // The iterator threw after the result.
                    return failed(unknown_line(Stage::QueryRun, exit));
                }
                return Mapped {
                    stop_reason: "completed",
                    answer: text.map(str::to_owned),
                    line: None,
                };
            }
            let category = subtype
                .and_then(|s| ERROR_SUBTYPES.iter().find(|k| **k == s))
                .copied()
                .unwrap_or(UNKNOWN);
            if d.max_turns_as_max_tokens && category == "error_max_turns" {
                return Mapped {
                    stop_reason: "max-tokens",
                    answer: None,
                    line: None,
                };
            }
            failed(line(Stage::QueryRun, category, exit))
        }
    }
}

/// One safe permission fact: the mode, the closed-set request, the decision, a fixed reason.
pub type PermissionFact = crate::product::Decision<PermissionMode>;

/// The host's answer to a control request of the CLI and the fact it leaves (`None`: no fact).
pub fn answer(
    mode: PermissionMode,
    subtype: &str,
    request: &Value,
) -> (Result<Value, String>, Option<PermissionFact>) {
    let fact = |request, decision, reason| PermissionFact {
        mode,
        request,
        decision,
        reason,
    };
    match subtype {
        // With bypass the host installs no callback: the SDK answers as it does without one.
        "can_use_tool" if !mode.asks_over_stdio() => {
            (Err("canUseTool callback is not provided.".into()), None)
        }
        "can_use_tool" => {
            let mut deny = serde_json::json!({"behavior": "deny", "message": DENY_MESSAGE});
            if let Some(id) = request.get("tool_use_id").and_then(Value::as_str) {
                deny["toolUseID"] = id.into();
            }
            (
                Ok(deny),
                Some(fact(
                    "tool permission",
                    "denied",
                    "the provider does not request human approval",
                )),
            )
        }
        "elicitation" => (
            Ok(serde_json::json!({"action": "decline"})),
            Some(fact(
                "MCP elicitation",
                "declined",
                "the provider does not collect interactive MCP input",
            )),
        ),
        "request_user_dialog" => (
            Ok(serde_json::json!({"behavior": "cancelled"})),
            Some(fact(
                "user dialog",
                "cancelled",
                "the provider does not render blocking dialogs",
            )),
        ),
        other => (
            Err(format!("Unsupported control request subtype: {other}")),
            None,
        ),
    }
}

/// The fact a `system` `permission_denied` message leaves.
pub fn denied_before_prompt(mode: PermissionMode) -> PermissionFact {
    PermissionFact {
        mode,
        request: "tool permission",
        decision: "denied",
        reason: "Claude Code denied the request before an interactive prompt",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn result(v: Value) -> Ending {
        Ending::Result {
            result: v,
            stream_ok: true,
        }
    }

    #[test]
    fn only_a_success_with_text_on_a_clean_stream_completes() {
        let d = MappingDefects::default();
        let ok = map_ending(
            &result(json!({"subtype": "success", "is_error": false, "result": "done"})),
            None,
            d,
        );
        assert_eq!(
            (ok.stop_reason, ok.answer.as_deref()),
            ("completed", Some("done"))
        );
        for bad in [
            json!({"subtype": "success", "is_error": false, "result": "  "}),
            json!({"subtype": "success", "is_error": false}),
            json!({"subtype": "success", "is_error": true, "result": "done"}),
        ] {
            let m = map_ending(&result(bad), None, d);
            assert_eq!(m.line.unwrap().category, INVALID_SUCCESS);
        }
        let threw = Ending::Result {
            result: json!({"subtype": "success", "is_error": false, "result": "done"}),
            stream_ok: false,
        };
        let exit = ExitFacts {
            code: Some(1),
            signal: None,
        };
        assert_eq!(
            map_ending(&threw, Some(exit), d).line.unwrap().to_string(),
            "Product subagent failure (product: Claude Code; stage: query-run; category: unknown; exit code: 1)"
        );
    }

    #[test]
    fn error_subtypes_are_categories_and_anything_else_is_unknown() {
        let d = MappingDefects::default();
        for s in ERROR_SUBTYPES {
            let m = map_ending(&result(json!({"subtype": s, "is_error": true})), None, d);
            assert_eq!((m.stop_reason, m.line.unwrap().category), ("error", *s));
        }
        let m = map_ending(&result(json!({"subtype": "error_new"})), None, d);
        assert_eq!(m.line.unwrap().category, UNKNOWN);
    }
}
