//! Seed 000's DSH SDK mapping, as pure functions: the child's final turn end reason and the SDK
//! client's typed error classes become the shared stop reason and a safe failure line.
//!
//! Only closed-set values are read; the child's error message, unknown kinds and every error
//! message stay out of the line by construction.

use serde_json::Value;

use crate::diagnostic::{Category, FailureLine, Stage};
use crate::jsonrpc::RpcError;

pub const ERROR_NAME: &str = "DshSdkRunFailure";
pub const PREFIX: &str = "subagent-dsh-sdk: ";
pub const ABORTED_BEFORE_START: &str = "subagent request was aborted before the SDK child started";

/// The SDK client's exported error classes (classified by class only, never by message).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SdkError {
    /// `SdkProtocolError`: a response or notification of the wrong shape.
    Protocol,
    /// `JsonRpcResponseError`: the runtime answered with a JSON-RPC error object.
    JsonRpcResponse,
    /// `TransportClosedError`: stdout EOF, a failed write, the runtime exited or failed to start.
    TransportClosed,
    /// Anything else. No path of this client raises an untyped error today (every wire failure
    /// is one of the classes above); kept so the seed's mapping is complete and tested.
    #[allow(dead_code)]
    Other,
}

impl SdkError {
    pub fn category(self) -> Category {
        match self {
            SdkError::Protocol | SdkError::JsonRpcResponse => Category::Protocol,
            SdkError::TransportClosed => Category::Transport,
            SdkError::Other => Category::Unknown,
        }
    }

    /// The failure line of this error at `stage`.
    pub fn line(self, stage: Stage) -> FailureLine {
        FailureLine::dsh(stage, self.category())
    }
}

impl From<&RpcError> for SdkError {
    fn from(e: &RpcError) -> Self {
        match e {
            RpcError::Remote { .. } => SdkError::JsonRpcResponse,
            RpcError::WireLost(_) => SdkError::TransportClosed,
        }
    }
}

/// The line of a rejected or failed `shutdown` / a failed process release.
pub fn shutdown_line() -> FailureLine {
    FailureLine::dsh(Stage::Shutdown, Category::Unknown)
}

/// The `initialize` result carries the runtime's identity (`serverInfo.name`/`.version`
/// strings); anything else is an `SdkProtocolError`.
pub fn valid_server_info(result: &Value) -> bool {
    let info = &result["serverInfo"];
    info["name"].is_string() && info["version"].is_string()
}

/// The `session/prompt` result's `messageId` (absent or not a string: an `SdkProtocolError`).
pub fn message_id(result: &Value) -> Option<&str> {
    result.get("messageId").and_then(Value::as_str)
}

/// Map the last collected `turn/end` (its `data.reason`; `None` when the run went idle without
/// any) to the shared stop reason and the failure line, if any.
///
/// `blocked_as_error` is the `blocked-as-error` defect.
pub fn map_turn_end(
    reason: Option<&Value>,
    blocked_as_error: bool,
) -> (&'static str, Option<FailureLine>) {
    let line = |category| Some(FailureLine::dsh(Stage::SessionRun, category));
    let Some(reason) = reason else {
        return ("error", line(Category::MissingTerminal));
    };
    match reason.get("kind").and_then(Value::as_str) {
        Some("completed") => ("completed", None),
        Some("max-tokens") => ("max-tokens", None),
        Some("aborted") if aborted_by_dispose(reason.get("reason")) => {
            ("aborted", line(Category::ChildDisposed))
        }
        Some("aborted") => ("aborted", None),
        Some("blocked") if blocked_as_error => ("error", line(Category::ChildError)),
        Some("blocked") => ("refusal", None),
        Some("error") => ("error", line(Category::ChildError)),
        // Only persisted-session repair produces it; a fresh session shows a plain error.
        Some("interrupted") => ("error", None),
        _ => ("error", line(Category::ChildUnknown)),
    }
}

/// The abort cause is the closed-set value `disposed` (as a string, or as `{kind}`).
fn aborted_by_dispose(cause: Option<&Value>) -> bool {
    let kind = match cause {
        Some(Value::String(s)) => Some(s.as_str()),
        Some(v) => v.get("kind").and_then(Value::as_str),
        None => None,
    };
    kind == Some("disposed")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(reason: Value) -> (&'static str, Option<String>) {
        let (stop, line) = map_turn_end(Some(&reason), false);
        (stop, line.map(|l| l.to_string()))
    }

    fn line(category: &str) -> Option<String> {
        Some(format!(
            "Subagent failure (provider: DSH SDK; stage: session-run; category: {category})"
        ))
    }

    #[test]
    fn turn_end_kinds() {
        assert_eq!(m(json!({"kind": "completed"})), ("completed", None));
        assert_eq!(m(json!({"kind": "max-tokens"})), ("max-tokens", None));
        assert_eq!(m(json!({"kind": "blocked"})), ("refusal", None));
        assert_eq!(
            m(json!({"kind": "error", "error": {"message": "SECRET_TOKEN", "code": "x"}})),
            ("error", line("child-error"))
        );
        assert_eq!(m(json!({"kind": "interrupted"})), ("error", None));
        for unknown in [
            json!({"kind": "SECRET_KIND"}),
            json!({"kind": "none"}),
            json!({"kind": 3}),
            json!({}),
            Value::Null,
            json!("completed"),
        ] {
            let (stop, l) = m(unknown.clone());
            assert_eq!(
                (stop, l.clone()),
                ("error", line("child-unknown")),
                "{unknown}"
            );
            assert!(!l.unwrap().contains("SECRET"));
        }
        assert_eq!(
            map_turn_end(None, false).1.unwrap().to_string(),
            line("missing-terminal").unwrap()
        );
        assert_eq!(map_turn_end(None, false).0, "error");
    }

    #[test]
    fn aborted_causes() {
        for plain in [
            json!({"kind": "aborted"}),
            json!({"kind": "aborted", "reason": "user"}),
            json!({"kind": "aborted", "reason": "parent"}),
            json!({"kind": "aborted", "reason": "hook"}),
            json!({"kind": "aborted", "reason": "legacy"}),
            json!({"kind": "aborted", "reason": {"kind": "user"}}),
            json!({"kind": "aborted", "reason": "SECRET_CAUSE"}),
        ] {
            assert_eq!(m(plain.clone()), ("aborted", None), "{plain}");
        }
        assert_eq!(
            m(json!({"kind": "aborted", "reason": "disposed"})),
            ("aborted", line("child-disposed"))
        );
        assert_eq!(
            m(json!({"kind": "aborted", "reason": {"kind": "disposed"}})),
            ("aborted", line("child-disposed"))
        );
    }

    #[test]
    fn blocked_as_error_defect() {
        let (stop, l) = map_turn_end(Some(&json!({"kind": "blocked"})), true);
        assert_eq!(
            (stop, l.map(|l| l.to_string())),
            ("error", line("child-error"))
        );
        assert_eq!(
            map_turn_end(Some(&json!({"kind": "completed"})), true).0,
            "completed"
        );
    }

    #[test]
    fn error_classes() {
        let at = |e: SdkError, s| e.line(s).to_string();
        assert_eq!(
            at(SdkError::Protocol, Stage::Initialize),
            "Subagent failure (provider: DSH SDK; stage: initialize; category: protocol)"
        );
        assert_eq!(
            at(SdkError::JsonRpcResponse, Stage::SessionRun),
            "Subagent failure (provider: DSH SDK; stage: session-run; category: protocol)"
        );
        assert_eq!(
            at(SdkError::TransportClosed, Stage::SessionRun),
            "Subagent failure (provider: DSH SDK; stage: session-run; category: transport)"
        );
        assert_eq!(
            at(SdkError::Other, Stage::Initialize),
            "Subagent failure (provider: DSH SDK; stage: initialize; category: unknown)"
        );
        let remote = RpcError::Remote {
            code: 7,
            message: "SECRET".into(),
            data: None,
        };
        assert_eq!(SdkError::from(&remote), SdkError::JsonRpcResponse);
        assert_eq!(
            SdkError::from(&RpcError::WireLost("eof".into())),
            SdkError::TransportClosed
        );
        assert_eq!(
            shutdown_line().to_string(),
            "Subagent failure (provider: DSH SDK; stage: shutdown; category: unknown)"
        );
    }

    #[test]
    fn response_shapes() {
        assert!(valid_server_info(&json!({"serverInfo": {
            "name": "deepseek-harness-sdk-runtime", "version": "0.0.1"}})));
        for bad in [
            json!({}),
            json!(null),
            json!({"serverInfo": {"name": "x"}}),
            json!({"serverInfo": {"name": "x", "version": 1}}),
            json!({"serverInfo": "x"}),
        ] {
            assert!(!valid_server_info(&bad), "{bad}");
        }
        assert_eq!(message_id(&json!({"messageId": "m1"})), Some("m1"));
        assert_eq!(message_id(&json!({"messageId": 1})), None);
        assert_eq!(message_id(&json!(null)), None);
    }
}
