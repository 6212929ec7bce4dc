//! What a real Codex app-server sends unasked in every run (0.147.0–0.171.0, observed in every
//! recorded run: `fakes/peers/codex-*/`): after its `initialize` answer, a configuration
//! warning and the remote-control status; after each model call (an agent message or a
//! command the model asked for completed), the thread's token usage — a running total — and
//! the account's rate limits. No provider acts on
//! them, but a host must read past them — so every scenario sends them unless it says
//! `ambient = false`.

use serde_json::{Value, json};

use super::method;

pub const CONFIG_WARNING: &str = "configWarning";
pub const REMOTE_CONTROL_STATUS: &str = "remoteControl/status/changed";
pub const TOKEN_USAGE: &str = "thread/tokenUsage/updated";
pub const RATE_LIMITS: &str = "account/rateLimits/updated";

/// What the fake has sent unasked so far: how many model calls its token usage counts.
#[derive(Debug, Default)]
pub struct Ambient {
    model_calls: u64,
}

impl Ambient {
    /// The notifications that follow `frame` (a response when `answers` names its request).
    pub fn after(&mut self, frame: &Value, answers: Option<&str>) -> Vec<(String, Option<Value>)> {
        match answers {
            Some(method::INITIALIZE) if frame.get("result").is_some() => after_initialize(),
            None if ends_a_model_call(frame) => {
                self.model_calls += 1;
                let params = &frame["params"];
                let (thread, turn) = (&params["threadId"], &params["turnId"]);
                after_model_call(thread, turn, self.model_calls)
            }
            _ => Vec::new(),
        }
    }
}

/// An agent message, or a command the model asked for, completed.
fn ends_a_model_call(frame: &Value) -> bool {
    frame.get("method").and_then(Value::as_str) == Some(method::ITEM_COMPLETED)
        && matches!(
            frame.pointer("/params/item/type").and_then(Value::as_str),
            Some("agentMessage" | "commandExecution")
        )
}

fn after_initialize() -> Vec<(String, Option<Value>)> {
    vec![
        (
            CONFIG_WARNING.into(),
            // The real server's warning names what this machine lacks (bubblewrap on PATH):
            // text from the runtime, never the run's output.
            Some(json!({
                "summary": "The fake Codex found no sandbox helper on PATH and uses its own in \
                            the meantime (a configuration warning, as the real server sends).",
                "details": null,
            })),
        ),
        (
            REMOTE_CONTROL_STATUS.into(),
            Some(json!({
                "status": "disabled",
                "serverName": "conform-fake",
                "installationId": "00000000-0000-4000-8000-00000000c0de",
                "environmentId": null,
            })),
        ),
    ]
}

/// The `calls`-th model call's bookkeeping: each call 1 token in and 2 out (as the loopback
/// model reports), the total counting every call so far. (0.169.0's dressing adds its rate
/// limits' `normalModelSlug`.)
fn after_model_call(thread: &Value, turn: &Value, calls: u64) -> Vec<(String, Option<Value>)> {
    let tokens = |n: u64| {
        json!({"totalTokens": 3 * n, "inputTokens": n, "cachedInputTokens": 0,
            "cacheWriteInputTokens": 0, "outputTokens": 2 * n, "reasoningOutputTokens": 0})
    };
    let limits = json!({"limitId": "codex", "limitName": null, "primary": null,
        "secondary": null, "credits": null, "individualLimit": null,
        "spendControlReached": null, "planType": null, "rateLimitReachedType": null});
    vec![
        (
            TOKEN_USAGE.into(),
            Some(json!({"threadId": thread, "turnId": turn, "tokenUsage": {
                "total": tokens(calls), "last": tokens(1), "modelContextWindow": 258400}})),
        ),
        (RATE_LIMITS.into(), Some(json!({ "rateLimits": limits }))),
    ]
}
