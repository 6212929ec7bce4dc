//! Unattended answers to the app-server's requests and the permission facts they leave, as
//! pure functions (pinned by `scenarios/codex/approval/`). Facts carry only the mode, a closed-set request
//! name, the decision and a fixed reason: never the command, paths, tool input or MCP payload.

use serde_json::{Value, json};

use super::config::PermissionMode;

/// One safe permission fact.
pub type PermissionFact = crate::product::Decision<PermissionMode>;

/// A fact without its mode (the run adds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fact {
    pub request: &'static str,
    pub decision: &'static str,
    pub reason: &'static str,
}

impl Fact {
    pub fn in_mode(self, mode: PermissionMode) -> PermissionFact {
        PermissionFact {
            mode,
            request: self.request,
            decision: self.decision,
            reason: self.reason,
        }
    }
}

const NO_APPROVAL: &str = "the provider does not grant interactive approval";

/// `sandboxError` in a failed terminal turn.
pub const SANDBOX_FAILURE: Fact = Fact {
    request: "sandbox execution",
    decision: "failed",
    reason: "Codex reported a sandbox failure",
};

/// A completed `commandExecution` / `fileChange` item with `status: "declined"`.
pub fn declined_item(item: &Value) -> Option<Fact> {
    if item.get("status").and_then(Value::as_str) != Some("declined") {
        return None;
    }
    match item.get("type").and_then(Value::as_str)? {
        "commandExecution" => Some(Fact {
            request: "command execution",
            decision: "declined",
            reason: "Codex declined the command under the selected permission mode",
        }),
        "fileChange" => Some(Fact {
            request: "file change",
            decision: "declined",
            reason: "Codex declined the file change under the selected permission mode",
        }),
        _ => None,
    }
}

/// How a server request must be associated with the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnRef {
    /// `turnId` must be the run's turn.
    Required,
    /// `turnId` may be `null` (MCP elicitation); a non-null one must be the run's turn.
    Nullable,
}

/// The unattended answer to a known request.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer {
    /// Answer with this result and record this fact.
    Reply(Value, Fact),
    /// The run fails; the request is answered with a JSON-RPC error carrying this fixed text.
    Fail(&'static str),
}

pub const NO_UNATTENDED_DECISION: &str = "app-server offered no unattended approval decision";

/// `{decision: cancel}` when offered, else `{decision: decline}` (also when the list is absent
/// or `null`); a list offering neither, or a non-array, fails the run.
fn approval(params: &Value, request: &'static str) -> Answer {
    let decision = match params.get("availableDecisions") {
        None | Some(Value::Null) => "decline",
        Some(Value::Array(list)) => {
            let offers = |d: &str| list.iter().any(|v| v.as_str() == Some(d));
            if offers("cancel") {
                "cancel"
            } else if offers("decline") {
                "decline"
            } else {
                return Answer::Fail(NO_UNATTENDED_DECISION);
            }
        }
        Some(_) => return Answer::Fail(NO_UNATTENDED_DECISION),
    };
    let recorded = if decision == "cancel" {
        "cancelled"
    } else {
        "declined"
    };
    Answer::Reply(
        json!({"decision": decision}),
        Fact {
            request,
            decision: recorded,
            reason: NO_APPROVAL,
        },
    )
}

/// The known server requests: their association rule and answer. `None`: unsupported.
pub fn answer(method: &str, params: &Value) -> Option<(TurnRef, Answer)> {
    let reply = |v, request, decision, reason| {
        Answer::Reply(
            v,
            Fact {
                request,
                decision,
                reason,
            },
        )
    };
    Some(match method {
        "item/commandExecution/requestApproval" => {
            (TurnRef::Required, approval(params, "command approval"))
        }
        "item/fileChange/requestApproval" => (TurnRef::Required, approval(params, "file approval")),
        "item/permissions/requestApproval" => (
            TurnRef::Required,
            reply(
                json!({"permissions": {}, "scope": "turn"}),
                "permission grant",
                "denied",
                "the provider grants no additional turn permissions",
            ),
        ),
        "item/tool/requestUserInput" => (
            TurnRef::Required,
            reply(
                json!({"answers": {}}),
                "user input",
                "empty response",
                "the provider does not collect interactive answers",
            ),
        ),
        "mcpServer/elicitation/request" => (
            TurnRef::Nullable,
            reply(
                json!({"action": "decline", "content": null, "_meta": null}),
                "MCP elicitation",
                "declined",
                "the provider does not collect interactive MCP input",
            ),
        ),
        _ => return None,
    })
}

/// The JSON-RPC error message for an unsupported request (wire only, never model-visible).
pub fn unsupported_message(method: &str) -> String {
    format!("subagent-codex: unsupported app-server request \"{method}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(method: &str, params: Value) -> (Value, String) {
        match answer(method, &params).unwrap().1 {
            Answer::Reply(v, f) => (v, f.in_mode(PermissionMode::Never).to_string()),
            Answer::Fail(why) => panic!("{method} failed: {why}"),
        }
    }

    #[test]
    fn approvals() {
        for (method, request) in [
            ("item/commandExecution/requestApproval", "command approval"),
            ("item/fileChange/requestApproval", "file approval"),
        ] {
            let cancelled = format!(
                "Codex unattended decision (mode: never; request: {request}; decision: cancelled): the provider does not grant interactive approval"
            );
            let declined = cancelled.replace("cancelled", "declined");
            let with = |list: Value| json!({"threadId": "th", "turnId": "tu", "command": "SECRET", "availableDecisions": list});
            assert_eq!(
                reply(method, with(json!(["accept", "decline", "cancel"]))),
                (json!({"decision": "cancel"}), cancelled.clone())
            );
            assert_eq!(
                reply(method, with(json!(["accept", "decline"]))),
                (json!({"decision": "decline"}), declined.clone())
            );
            assert_eq!(
                reply(method, with(Value::Null)),
                (json!({"decision": "decline"}), declined.clone())
            );
            assert_eq!(
                reply(method, json!({"threadId": "th", "turnId": "tu"})),
                (json!({"decision": "decline"}), declined.clone())
            );
            for bad in [
                json!(["accept", "acceptForSession"]),
                json!([]),
                json!("cancel"),
                json!({"cancel": true}),
            ] {
                assert_eq!(
                    answer(method, &with(bad.clone())).unwrap(),
                    (TurnRef::Required, Answer::Fail(NO_UNATTENDED_DECISION)),
                    "{bad}"
                );
            }
        }
    }

    #[test]
    fn other_requests() {
        assert_eq!(
            reply("item/permissions/requestApproval", json!({})),
            (
                json!({"permissions": {}, "scope": "turn"}),
                "Codex unattended decision (mode: never; request: permission grant; decision: denied): the provider grants no additional turn permissions".into()
            )
        );
        assert_eq!(
            reply("item/tool/requestUserInput", json!({})),
            (
                json!({"answers": {}}),
                "Codex unattended decision (mode: never; request: user input; decision: empty response): the provider does not collect interactive answers".into()
            )
        );
        assert_eq!(
            reply("mcpServer/elicitation/request", json!({})),
            (
                json!({"action": "decline", "content": null, "_meta": null}),
                "Codex unattended decision (mode: never; request: MCP elicitation; decision: declined): the provider does not collect interactive MCP input".into()
            )
        );
        assert_eq!(
            answer("mcpServer/elicitation/request", &json!({}))
                .unwrap()
                .0,
            TurnRef::Nullable
        );
        for m in [
            "item/tool/call",
            "applyPatchApproval",
            "execCommandApproval",
            "x",
        ] {
            assert!(answer(m, &json!({})).is_none(), "{m}");
        }
        assert_eq!(
            unsupported_message("item/tool/call"),
            "subagent-codex: unsupported app-server request \"item/tool/call\""
        );
    }

    #[test]
    fn facts_in_every_mode() {
        let f = SANDBOX_FAILURE.in_mode(PermissionMode::DangerouslyBypass);
        assert_eq!(
            f.to_string(),
            "Codex unattended decision (mode: dangerously-bypass-approvals-and-sandbox; request: sandbox execution; decision: failed): Codex reported a sandbox failure"
        );
        let item = json!({"type": "commandExecution", "status": "declined", "command": "SECRET"});
        assert_eq!(
            declined_item(&item)
                .unwrap()
                .in_mode(PermissionMode::ApproveForMe)
                .to_string(),
            "Codex unattended decision (mode: approve-for-me; request: command execution; decision: declined): Codex declined the command under the selected permission mode"
        );
        let item = json!({"type": "fileChange", "status": "declined"});
        assert_eq!(
            declined_item(&item).unwrap().to_string_in_never(),
            "Codex unattended decision (mode: never; request: file change; decision: declined): Codex declined the file change under the selected permission mode"
        );
        assert!(declined_item(&json!({"type": "fileChange", "status": "completed"})).is_none());
        assert!(declined_item(&json!({"type": "agentMessage", "status": "declined"})).is_none());
    }

    impl Fact {
        fn to_string_in_never(self) -> String {
            self.in_mode(PermissionMode::Never).to_string()
        }
    }
}
