//! Seed 001's Codex mapping, as pure functions: the pinned `CodexErrorInfo` vocabulary
//! (`conform_protocol::codex::PINNED`), the terminal `turn/completed` status, the answer
//! selection and the current operation become the shared stop reason and one safe line.
//!
//! Only closed-set values (the pinned vocabulary's own `&'static str`s), the stage and numbers
//! reach a line; unknown strings, `turnKind`, error messages and payloads never do.

use conform_protocol::codex::{ErrorInfoVocabulary, PINNED};
use serde_json::{Value, json};

use crate::diagnostic::{ExitFacts, ProductLine};

pub const ERROR_NAME: &str = "CodexRunFailure";
pub const PREFIX: &str = "subagent-codex: ";
pub const ABORTED_BEFORE_STARTUP: &str =
    "subagent-codex: request was aborted before app-server startup";
pub const ABORTED_BEFORE_PUBLICATION: &str =
    "subagent-codex: request was aborted before run publication";
pub const NO_WORKING_DIRECTORY: &str = "subagent-codex: no working directory for the child — delegate from a parent session that has one";
pub const EMPTY_TASK: &str = "subagent-codex: the one-shot task must not be empty";

const PRODUCT: &str = "Codex";
pub const UNKNOWN: &str = "unknown";
pub const PROCESS_EXIT: &str = "process-exit";
pub const CONTEXT_WINDOW_EXCEEDED: &str = "contextWindowExceeded";
pub const CYBER_POLICY: &str = "cyberPolicy";
pub const SANDBOX_ERROR: &str = "sandboxError";
/// The pinned vocabulary's catch-all (only the `unknown-code-as-other` defect names it itself).
const OTHER: &str = "other";

/// The operation a Codex failure belongs to (seed 001's six stages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Initialize,
    ThreadStart,
    TurnStart,
    Turn,
    Process,
    Teardown,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Initialize => "initialize",
            Stage::ThreadStart => "thread-start",
            Stage::TurnStart => "turn-start",
            Stage::Turn => "turn",
            Stage::Process => "process",
            Stage::Teardown => "teardown",
        }
    }
}

/// The Codex line of `stage` and `category`.
pub fn line(stage: Stage, category: &'static str) -> ProductLine {
    ProductLine::new(PRODUCT, stage.as_str(), category)
}

/// `… stage: <stage>; category: unknown[; exit code…]` (startup, teardown, fallbacks).
pub fn unknown_line(stage: Stage, exit: Option<ExitFacts>) -> ProductLine {
    line(stage, UNKNOWN).with_exit(exit.unwrap_or_default())
}

/// The managed app-server exited before a terminal notification.
pub fn process_exit_line(exit: ExitFacts) -> ProductLine {
    line(Stage::Process, PROCESS_EXIT).with_exit(exit)
}

/// `httpStatusCode` as a fact: an integer 0..=65535 (`503` or `503.0`); `null`, absent, other
/// numbers and strings are omitted. `from_string` is the `http-status-from-string` defect.
pub fn http_status(raw: Option<&Value>, from_string: bool) -> Option<u16> {
    match raw? {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u16::try_from(u).ok()
            } else {
                let f = n.as_f64()?;
                (f.fract() == 0.0 && (0.0..=65535.0).contains(&f)).then_some(f as u16)
            }
        }
        Value::String(s) if from_string => s.trim().parse().ok(),
        _ => None,
    }
}

/// Category and optional HTTP status of a `codexErrorInfo` value against `vocab`: a known
/// string; an object with exactly one known key whose value is an object; everything else is
/// `unknown`.
pub fn error_info_in(
    vocab: &ErrorInfoVocabulary,
    info: Option<&Value>,
    from_string: bool,
) -> (&'static str, Option<u16>) {
    match info {
        Some(Value::String(s)) => match vocab.strings.iter().find(|k| **k == s.as_str()) {
            Some(known) => (known, None),
            None => (UNKNOWN, None),
        },
        Some(Value::Object(o)) if o.len() == 1 => {
            let (key, detail) = o.iter().next().expect("one entry");
            match (vocab.object(key), detail) {
                (Some(variant), Value::Object(detail)) => {
                    let status = if variant.fields.iter().any(|(f, _)| *f == "httpStatusCode") {
                        http_status(detail.get("httpStatusCode"), from_string)
                    } else {
                        None
                    };
                    (variant.name, status)
                }
                _ => (UNKNOWN, None),
            }
        }
        _ => (UNKNOWN, None),
    }
}

/// [`error_info_in`] the pinned vocabulary.
pub fn error_info(info: Option<&Value>, from_string: bool) -> (&'static str, Option<u16>) {
    error_info_in(PINNED, info, from_string)
}

/// Defects that change the terminal mapping.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MappingDefects {
    pub cyber_policy_as_refusal: bool,
    pub http_status_from_string: bool,
    pub unknown_code_as_other: bool,
}

/// The `unknown-code-as-other` defect: a code the pinned vocabulary does not know is taken for
/// its catch-all `other`.
fn unknown_as_other(category: &'static str) -> &'static str {
    if category == UNKNOWN { OTHER } else { category }
}

/// How a terminal `turn/completed` maps (before the exit facts and the permission fact).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TerminalMapping {
    pub stop_reason: &'static str,
    pub line: Option<ProductLine>,
    /// `sandboxError`: Codex reported a sandbox failure (a permission fact).
    pub sandbox_failure: bool,
}

/// Map the terminal turn object, given whether the answer selection is usable.
pub fn map_terminal(turn: &Value, has_answer: bool, defects: MappingDefects) -> TerminalMapping {
    let fail = |stop_reason, line| TerminalMapping {
        stop_reason,
        line: Some(line),
        sandbox_failure: false,
    };
    match turn.get("status").and_then(Value::as_str) {
        Some("completed") if has_answer => TerminalMapping {
            stop_reason: "completed",
            line: None,
            sandbox_failure: false,
        },
        // Completed without a usable answer, a remote interrupt, an invalid status.
        Some("completed") | Some("interrupted") => fail("error", line(Stage::Turn, UNKNOWN)),
        Some("failed") => {
            let info = turn.get("error").and_then(|e| e.get("codexErrorInfo"));
            let (mut category, status) = error_info(info, defects.http_status_from_string);
            if defects.unknown_code_as_other {
                category = unknown_as_other(category);
            }
            let stop_reason = match category {
                CONTEXT_WINDOW_EXCEEDED => "max-tokens",
                CYBER_POLICY if defects.cyber_policy_as_refusal => "refusal",
                _ => "error",
            };
            TerminalMapping {
                stop_reason,
                line: Some(line(Stage::Turn, category).with_http_status(status)),
                sandbox_failure: category == SANDBOX_ERROR,
            }
        }
        _ => fail("error", line(Stage::Turn, UNKNOWN)),
    }
}

/// The answer selection: the latest `final_answer` message, else the latest un-phased one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Answers {
    final_answer: Option<String>,
    unphased: Option<String>,
}

/// What one `agentMessage` item means for the selection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentMessage {
    Final(String),
    Unphased(String),
    Commentary,
    /// Another phase or a non-string text: the run fails.
    Invalid(&'static str),
}

/// Classify an `agentMessage` item (`phase` absent counts as `null`).
pub fn agent_message(item: &Value) -> AgentMessage {
    let Some(text) = item.get("text").and_then(Value::as_str) else {
        return AgentMessage::Invalid("agent message text is not a string");
    };
    match item.get("phase") {
        None | Some(Value::Null) => AgentMessage::Unphased(text.to_owned()),
        Some(Value::String(p)) if p == "final_answer" => AgentMessage::Final(text.to_owned()),
        Some(Value::String(p)) if p == "commentary" => AgentMessage::Commentary,
        Some(_) => AgentMessage::Invalid("unknown agent message phase"),
    }
}

impl Answers {
    pub fn record(&mut self, message: AgentMessage) {
        match message {
            AgentMessage::Final(t) => self.final_answer = Some(t),
            AgentMessage::Unphased(t) => self.unphased = Some(t),
            AgentMessage::Commentary | AgentMessage::Invalid(_) => {}
        }
    }

    /// `[{type:text, text}]` of `final ?? unphased` when that text is not blank, else `[]`
    /// (exact bytes kept).
    pub fn selection(&self) -> Vec<Value> {
        match self.final_answer.as_ref().or(self.unphased.as_ref()) {
            Some(t) if !t.trim().is_empty() => vec![json!({"type": "text", "text": t})],
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HTTP_VARIANTS: [&str; 4] = [
        "httpConnectionFailed",
        "responseStreamConnectionFailed",
        "responseStreamDisconnected",
        "responseTooManyFailedAttempts",
    ];

    fn failed(info: Value) -> Value {
        json!({"id": "t", "status": "failed",
               "error": {"message": "SECRET_TOKEN /private/secret.txt", "codexErrorInfo": info}})
    }

    fn mapped(turn: &Value, has_answer: bool) -> (&'static str, Option<String>) {
        let m = map_terminal(turn, has_answer, MappingDefects::default());
        (m.stop_reason, m.line.map(|l| l.to_string()))
    }

    fn turn_line(rest: &str) -> Option<String> {
        Some(format!(
            "Product subagent failure (product: Codex; stage: turn; category: {rest})"
        ))
    }

    #[test]
    fn the_pinned_vocabulary_is_the_protocol_crate_s() {
        assert_eq!(PINNED.version, "0.147.0");
        assert_eq!(PINNED.strings.len() + PINNED.objects.len(), 16);
    }

    #[test]
    fn every_string_variant() {
        for s in PINNED.strings {
            let (stop, l) = mapped(&failed(json!(s)), true);
            let expected_stop = if *s == "contextWindowExceeded" {
                "max-tokens"
            } else {
                "error"
            };
            assert_eq!(stop, expected_stop, "{s}");
            assert_eq!(l, turn_line(s), "{s}");
        }
        assert_eq!(PINNED.strings.len(), 11);
        // cyberPolicy never becomes refusal.
        assert_eq!(mapped(&failed(json!("cyberPolicy")), true).0, "error");
    }

    #[test]
    fn every_object_variant_with_http_status_present_absent_null_string() {
        for name in HTTP_VARIANTS {
            let cases = [
                (
                    json!({"httpStatusCode": 503}),
                    format!("{name}; HTTP status: 503"),
                ),
                (
                    json!({"httpStatusCode": 0}),
                    format!("{name}; HTTP status: 0"),
                ),
                (
                    json!({"httpStatusCode": 65535}),
                    format!("{name}; HTTP status: 65535"),
                ),
                (
                    json!({"httpStatusCode": 503.0}),
                    format!("{name}; HTTP status: 503"),
                ),
                (json!({}), name.to_string()),
                (json!({"httpStatusCode": null}), name.to_string()),
                (json!({"httpStatusCode": "503"}), name.to_string()),
                (json!({"httpStatusCode": 65536}), name.to_string()),
                (json!({"httpStatusCode": -1}), name.to_string()),
                (json!({"httpStatusCode": 50.5}), name.to_string()),
                (json!({"httpStatusCode": true}), name.to_string()),
            ];
            for (detail, rest) in cases {
                let info = json!({ name: detail });
                let (stop, l) = mapped(&failed(info.clone()), false);
                assert_eq!(stop, "error", "{info}");
                assert_eq!(l, turn_line(&rest), "{info}");
            }
        }
        for detail in [
            json!({"turnKind": "review"}),
            json!({"turnKind": "SECRET_KIND", "httpStatusCode": 503}),
            json!({}),
        ] {
            let info = json!({ "activeTurnNotSteerable": detail });
            let (stop, l) = mapped(&failed(info.clone()), true);
            assert_eq!(stop, "error");
            assert_eq!(l, turn_line("activeTurnNotSteerable"), "{info}");
        }
        assert_eq!(PINNED.objects.len(), 5);
    }

    #[test]
    fn unknown_fallbacks() {
        for info in [
            json!("SECRET_TOKEN"),
            json!("rateLimitExceeded"),
            json!("ContextWindowExceeded"),
            json!({"httpConnectionFailed": {"httpStatusCode": 503}, "other": {}}),
            json!({"httpConnectionFailed": null}),
            json!({"httpConnectionFailed": 503}),
            json!({"httpConnectionFailed": "x"}),
            json!({"SECRET_VARIANT": {}}),
            json!({"other": {}}),
            json!({}),
            json!(["other"]),
            json!(7),
            Value::Null,
        ] {
            let (stop, l) = mapped(&failed(info.clone()), true);
            assert_eq!((stop, l), ("error", turn_line("unknown")), "{info}");
        }
        // Missing codexErrorInfo, a string error, no error at all.
        for turn in [
            json!({"status": "failed", "error": {"message": "SECRET"}}),
            json!({"status": "failed", "error": "SECRET"}),
            json!({"status": "failed"}),
        ] {
            assert_eq!(mapped(&turn, true), ("error", turn_line("unknown")));
        }
    }

    #[test]
    fn statuses() {
        let c = json!({"status": "completed", "error": null});
        assert_eq!(mapped(&c, true), ("completed", None));
        assert_eq!(mapped(&c, false), ("error", turn_line("unknown")));
        for s in ["interrupted", "inProgress", "SECRET", ""] {
            let t = json!({"status": s});
            assert_eq!(mapped(&t, true), ("error", turn_line("unknown")), "{s}");
        }
        assert_eq!(mapped(&json!({}), true), ("error", turn_line("unknown")));
        // The error info only counts on `failed`.
        let t =
            json!({"status": "interrupted", "error": {"codexErrorInfo": "contextWindowExceeded"}});
        assert_eq!(mapped(&t, true), ("error", turn_line("unknown")));
    }

    #[test]
    fn sandbox_error_is_a_permission_fact() {
        let m = map_terminal(
            &failed(json!("sandboxError")),
            true,
            MappingDefects::default(),
        );
        assert!(m.sandbox_failure);
        let m = map_terminal(&failed(json!("other")), true, MappingDefects::default());
        assert!(!m.sandbox_failure);
    }

    #[test]
    fn defects() {
        let d = MappingDefects {
            cyber_policy_as_refusal: true,
            ..MappingDefects::default()
        };
        let m = map_terminal(&failed(json!("cyberPolicy")), true, d);
        assert_eq!(m.stop_reason, "refusal");
        assert_eq!(
            m.line.unwrap().to_string(),
            turn_line("cyberPolicy").unwrap()
        );
        let d = MappingDefects {
            http_status_from_string: true,
            ..MappingDefects::default()
        };
        let info = json!({"httpConnectionFailed": {"httpStatusCode": "503"}});
        let m = map_terminal(&failed(info), true, d);
        assert_eq!(
            m.line.unwrap().to_string(),
            turn_line("httpConnectionFailed; HTTP status: 503").unwrap()
        );
        assert_eq!(http_status(Some(&json!("abc")), true), None);
        let d = MappingDefects {
            unknown_code_as_other: true,
            ..MappingDefects::default()
        };
        let m = map_terminal(&failed(json!("rateLimitExceeded")), true, d);
        assert_eq!(m.line.unwrap().to_string(), turn_line("other").unwrap());
    }

    #[test]
    fn other_lines() {
        assert_eq!(
            unknown_line(
                Stage::ThreadStart,
                Some(ExitFacts {
                    code: None,
                    signal: Some(libc::SIGABRT)
                })
            )
            .to_string(),
            "Product subagent failure (product: Codex; stage: thread-start; category: unknown; signal: SIGABRT)"
        );
        assert_eq!(
            unknown_line(
                Stage::Teardown,
                Some(ExitFacts {
                    code: Some(0),
                    signal: None
                })
            )
            .to_string(),
            "Product subagent failure (product: Codex; stage: teardown; category: unknown; exit code: 0)"
        );
        assert_eq!(
            unknown_line(Stage::TurnStart, None).to_string(),
            "Product subagent failure (product: Codex; stage: turn-start; category: unknown)"
        );
        assert_eq!(
            process_exit_line(ExitFacts {
                code: Some(9),
                signal: None
            })
            .to_string(),
            "Product subagent failure (product: Codex; stage: process; category: process-exit; exit code: 9)"
        );
        assert_eq!(Stage::Initialize.as_str(), "initialize");
        assert_eq!(Stage::Turn.as_str(), "turn");
    }

    fn text(t: &str) -> Vec<Value> {
        vec![json!({"type": "text", "text": t})]
    }

    #[test]
    fn answer_selection() {
        let msg = |phase: Value, t: &str| json!({"type": "agentMessage", "id": "i", "text": t, "phase": phase});
        let mut a = Answers::default();
        assert_eq!(a.selection(), Vec::<Value>::new());
        for item in [
            msg(Value::Null, "unphased one"),
            msg(json!("commentary"), "SECRET commentary"),
        ] {
            a.record(agent_message(&item));
        }
        assert_eq!(a.selection(), text("unphased one"));
        a.record(agent_message(
            &json!({"type": "agentMessage", "text": "no phase"}),
        ));
        assert_eq!(a.selection(), text("no phase"));
        a.record(agent_message(&msg(json!("final_answer"), "  final\n")));
        a.record(agent_message(&msg(Value::Null, "later unphased")));
        assert_eq!(a.selection(), text("  final\n"));
        a.record(agent_message(&msg(json!("final_answer"), "final two")));
        assert_eq!(a.selection(), text("final two"));
        // A blank latest final answer selects nothing (`final ?? unphased`, then non-blank).
        a.record(agent_message(&msg(json!("final_answer"), " \n")));
        assert_eq!(a.selection(), Vec::<Value>::new());
        let mut b = Answers::default();
        b.record(agent_message(&msg(Value::Null, "   ")));
        assert_eq!(b.selection(), Vec::<Value>::new());
    }

    #[test]
    fn agent_message_classes() {
        assert_eq!(
            agent_message(&json!({"text": "x", "phase": "partial_answer"})),
            AgentMessage::Invalid("unknown agent message phase")
        );
        assert_eq!(
            agent_message(&json!({"text": "x", "phase": 3})),
            AgentMessage::Invalid("unknown agent message phase")
        );
        assert_eq!(
            agent_message(&json!({"text": 3, "phase": "final_answer"})),
            AgentMessage::Invalid("agent message text is not a string")
        );
        assert_eq!(
            agent_message(&json!({"phase": "final_answer"})),
            AgentMessage::Invalid("agent message text is not a string")
        );
        assert_eq!(
            agent_message(&json!({"text": "c", "phase": "commentary"})),
            AgentMessage::Commentary
        );
    }
}
