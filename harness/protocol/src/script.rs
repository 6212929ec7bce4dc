//! The fake script: what a scripted runtime does, step by step.
//!
//! A script is written inside a scenario file (`[[fake.steps]]`), expanded by the harness
//! (preludes included) and handed to a fake as JSON. One engine in `fakes/` runs every step;
//! a thin codec per protocol turns the protocol sugar (`chunk`, `permission`, `stop`, …) into
//! frames. Each step sets exactly one *action* key; `params`, `answer`, `to` and `violation`
//! modify the action they sit beside.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vocab::Provider;

/// A whole script, as the harness hands it to a fake (`--script <file.json>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Must match the fake binary.
    pub protocol: Provider,
    /// The product version the fake speaks (Codex: `0.147.0` by default, or `0.169.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_version: Option<String>,
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// A JSON-RPC error object to answer with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// ACP `session/request_permission` sugar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Permission {
    /// The tool kind, sent as is (absent: no `kind` field; an unknown value needs `violation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Tool title (untrusted text; must never reach the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Raw tool input (untrusted; must never reach the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// Offered options in order. Default: `allow`/`allow_once`, then `reject`/`reject_once`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<PermissionOption>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionOption {
    pub id: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A process the script spawns (a grandchild of the subject).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Grandchild {
    /// Inherit the runtime's stdout (so the subject sees no EOF while it lives).
    #[serde(default)]
    pub hold_stdout: bool,
    /// Ignore SIGTERM (needs SIGKILL).
    #[serde(default)]
    pub trap_sigterm: bool,
    /// Leave the runtime's process group and session (`setsid`).
    #[serde(default)]
    pub setsid: bool,
}

/// One step. Exactly one action key is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Step {
    // ---- scenario-level (expanded by the harness; never reaches a fake) ----
    /// Splice the steps of `scenarios/preludes/<name>.toml` here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include: Option<String>,

    // ---- wire actions (every protocol) ----
    /// Wait for a request or notification with this method from the subject. Anything else
    /// the subject sends meanwhile is its protocol violation (requests get a JSON-RPC error),
    /// except what the protocol tolerates (ACP `session/cancel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expect: Option<String>,
    /// Answer the latest open request (or the one named by `to`) with this result (`null`
    /// included: `{ "$json" = "null" }`).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub reply: Option<Value>,
    /// Answer the latest open request (or the one named by `to`) with this error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RpcError>,
    /// Send a notification with this method (`params` beside it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
    /// Send a request with this method (`params` beside it) and wait for the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
    /// Write this line to stdout verbatim (a newline is added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<String>,

    // ---- ACP sugar ----
    /// `session/update` `agent_message_chunk` with this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunk: Option<String>,
    /// `session/update` `agent_thought_chunk` with this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    /// `session/update` with this `update` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update: Option<Value>,
    /// `session/request_permission`; waits for the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<Permission>,
    /// Answer the open `session/prompt` with this stop reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<String>,

    // ---- DSH SDK sugar (addressed to the prompt's session, or to `session`) ----
    /// `session.event` `agent/inbox/spliced`: the prompt receipt inserting a user message with
    /// this id (the `messageId` the `session/prompt` reply must carry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    /// `session.status` with this status (`running` or `idle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// `session.event` `assistant/chunk` with a `text-delta` of this text (a frame the real
    /// runtime 0.2.1rc2 never sends; kept for clients of other builds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<String>,
    /// `session.event` `assistant/attempt`: a model attempt that failed after streaming this
    /// text (`""`: before any text), as the real runtime reports a failure mid-stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<String>,
    /// `session.event` `assistant/message` whose content is one text block with this text,
    /// with the stream it came from as the real runtime records it (an empty string sends
    /// empty, usage-only content).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `session.event` `turn/end` with this reason: a kind (`"completed"`) or a whole reason
    /// object (`{ kind = "aborted", reason = "disposed" }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_end: Option<Value>,
    /// `session.event` with this event object, sent as written (`type`, `data`; `seq` and
    /// `time` are filled in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Value>,

    // ---- Codex app-server sugar (addressed to the thread and turn of the fake's own
    // `thread/start` and `turn/start` replies, or to `thread` / `turn`) ----
    /// `turn/started` for the turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_started: Option<bool>,
    /// `item/completed` with an `agentMessage` item: `{ text = "…", phase = "final_answer" }`
    /// (no `phase` key: `phase: null`). Values are sent as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_message: Option<Value>,
    /// `turn/completed`: `{ status = "failed", error = { message = "…", codexErrorInfo = … } }`
    /// (no `error`: `error: null`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_completed: Option<Value>,
    /// A server request with this method (approvals, user input, elicitation); `params` are
    /// merged over `{threadId, turnId, itemId}`; waits for the answer (`answer` checks it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ask: Option<String>,

    // ---- process behaviour ----
    /// Write this text to stderr (a newline is added).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// Report a named checkpoint to the harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<String>,
    /// Block until the harness releases this name.
    #[serde(rename = "await", default, skip_serializing_if = "Option::is_none")]
    pub await_: Option<String>,
    /// Block until stdin reaches EOF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_eof: Option<bool>,
    /// Sleep. Only for what is genuinely about time (a grace period expiring).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Close stdout (the process stays alive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_stdout: Option<bool>,
    /// Exit now with this code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// Die by this signal, raised on itself (`SIGABRT`, `SIGKILL`, …; core dumps disabled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// From now on, ignore SIGTERM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_sigterm: Option<bool>,
    /// From now on, do not exit at stdin EOF.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eof: Option<bool>,
    /// Spawn a grandchild with its own behaviour.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn: Option<Grandchild>,

    // ---- modifiers ----
    /// With `expect`: a subset the received params must contain. With `notify`/`request`: the
    /// params to send.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub params: Option<Value>,
    /// With `expect`: the received params must be exactly `params` (no member the script does
    /// not name, at any depth; no `params` at all when the step names none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exact: Option<bool>,
    /// With `request` or `permission`: the result the subject must answer (exact).
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub answer: Option<Value>,
    /// With `reply`, `error` or `stop`: the method of the open request to answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// With DSH SDK sugar: the session id to address instead of the prompt's session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// With Codex sugar: the thread id to address instead of the fake's own thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// With Codex sugar: the turn id to address instead of the fake's own turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// This step sends something invalid on purpose; says why. Frames it sends are exempt from
    /// the protocol schema test and marked in the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub violation: Option<String>,
}

/// The action keys, in the order they are documented.
pub const ACTION_KEYS: &[&str] = &[
    "include",
    "expect",
    "reply",
    "error",
    "notify",
    "request",
    "raw",
    "chunk",
    "thought",
    "update",
    "permission",
    "stop",
    "receipt",
    "status",
    "delta",
    "attempt",
    "message",
    "turn_end",
    "event",
    "turn_started",
    "agent_message",
    "turn_completed",
    "ask",
    "stderr",
    "checkpoint",
    "await",
    "wait_eof",
    "delay_ms",
    "close_stdout",
    "exit",
    "signal",
    "ignore_sigterm",
    "ignore_eof",
    "spawn",
];

/// The protocol sugar action keys, by protocol (each fake codec expands only its own).
pub const ACP_SUGAR: &[&str] = &["chunk", "thought", "update", "permission", "stop"];
pub const DSH_SDK_SUGAR: &[&str] = &[
    "receipt", "status", "delta", "attempt", "message", "turn_end", "event",
];
pub const CODEX_SUGAR: &[&str] = &["turn_started", "agent_message", "turn_completed", "ask"];

impl Step {
    /// The action keys this step sets (a valid step sets exactly one).
    pub fn actions(&self) -> Vec<&'static str> {
        let set = [
            self.include.is_some(),
            self.expect.is_some(),
            self.reply.is_some(),
            self.error.is_some(),
            self.notify.is_some(),
            self.request.is_some(),
            self.raw.is_some(),
            self.chunk.is_some(),
            self.thought.is_some(),
            self.update.is_some(),
            self.permission.is_some(),
            self.stop.is_some(),
            self.receipt.is_some(),
            self.status.is_some(),
            self.delta.is_some(),
            self.attempt.is_some(),
            self.message.is_some(),
            self.turn_end.is_some(),
            self.event.is_some(),
            self.turn_started.is_some(),
            self.agent_message.is_some(),
            self.turn_completed.is_some(),
            self.ask.is_some(),
            self.stderr.is_some(),
            self.checkpoint.is_some(),
            self.await_.is_some(),
            self.wait_eof.is_some(),
            self.delay_ms.is_some(),
            self.close_stdout.is_some(),
            self.exit.is_some(),
            self.signal.is_some(),
            self.ignore_sigterm.is_some(),
            self.ignore_eof.is_some(),
            self.spawn.is_some(),
        ];
        ACTION_KEYS
            .iter()
            .zip(set)
            .filter_map(|(k, on)| on.then_some(*k))
            .collect()
    }

    /// Checks the step's shape: one action, and modifiers only where they mean something.
    pub fn check(&self) -> Result<&'static str, String> {
        let actions = self.actions();
        let action = match actions.as_slice() {
            [one] => *one,
            [] => {
                return Err(format!(
                    "a step needs exactly one action key (one of: {})",
                    ACTION_KEYS.join(", ")
                ));
            }
            many => {
                return Err(format!(
                    "a step sets several actions ({}); split it into one step per action",
                    many.join(", ")
                ));
            }
        };
        if self.params.is_some() && !matches!(action, "expect" | "notify" | "request" | "ask") {
            return Err(format!("`params` does not apply to `{action}`"));
        }
        if self.exact.is_some() && action != "expect" {
            return Err(format!("`exact` does not apply to `{action}`"));
        }
        if self.answer.is_some() && !matches!(action, "request" | "permission" | "ask") {
            return Err(format!("`answer` does not apply to `{action}`"));
        }
        if self.to.is_some() && !matches!(action, "reply" | "error" | "stop") {
            return Err(format!("`to` does not apply to `{action}`"));
        }
        if self.session.is_some()
            && !matches!(
                action,
                "receipt" | "status" | "delta" | "attempt" | "message" | "turn_end" | "event"
            )
        {
            return Err(format!("`session` does not apply to `{action}`"));
        }
        let codex = matches!(
            action,
            "turn_started" | "agent_message" | "turn_completed" | "ask"
        );
        if (self.thread.is_some() || self.turn.is_some()) && !codex {
            return Err(format!("`thread` and `turn` do not apply to `{action}`"));
        }
        Ok(action)
    }
}

/// The key of a table that stands for a JSON value TOML cannot write (`null`, mostly):
/// A member that is present is `Some`, even when it is `null`. serde's default reads `null` as
/// absent: `reply = null` became a step without an action, and — worse, silently — an
/// `answer = null` (the subject must answer `null`) became no check of the answer at all.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    use serde::Deserialize;
    Value::deserialize(d).map(Some)
}

/// `{ "$json" = "null" }` becomes `null`, `{ "$json" = '{"a":null}' }` becomes that object.
pub const JSON_LITERAL_KEY: &str = "$json";

/// Replaces every `{ "$json" = "…" }` table inside the step's JSON payloads by the value it
/// spells. Scenario files are TOML, which has no `null`; wire payloads need it.
pub fn resolve_json_literals(step: &mut Step) -> Result<(), String> {
    let payloads = [
        step.reply.as_mut(),
        step.params.as_mut(),
        step.answer.as_mut(),
        step.update.as_mut(),
        step.event.as_mut(),
        step.turn_end.as_mut(),
        step.agent_message.as_mut(),
        step.turn_completed.as_mut(),
        step.error.as_mut().and_then(|e| e.data.as_mut()),
        step.permission.as_mut().and_then(|p| p.raw_input.as_mut()),
    ];
    for value in payloads.into_iter().flatten() {
        resolve(value)?;
    }
    Ok(())
}

fn resolve(value: &mut Value) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(text)) = map.get(JSON_LITERAL_KEY)
            {
                *value = serde_json::from_str(text)
                    .map_err(|e| format!("`{JSON_LITERAL_KEY} = {text:?}` is not JSON: {e}"))?;
                return Ok(());
            }
            map.values_mut().try_for_each(resolve)
        }
        Value::Array(items) => items.iter_mut().try_for_each(resolve),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_null_payload_stays_a_payload_on_its_way_to_the_fake() {
        // The fake reads the step back from JSON: `null` must not turn into "absent".
        for key in ["reply", "answer", "params"] {
            let step: Step = serde_json::from_value(json!({ key: null })).unwrap();
            let back = serde_json::to_value(&step).unwrap();
            assert_eq!(back, json!({ key: null }), "{key}");
        }
        let none: Step = serde_json::from_value(json!({})).unwrap();
        assert!(none.reply.is_none() && none.answer.is_none() && none.params.is_none());
    }

    #[test]
    fn json_literals_become_their_values() {
        let mut step = Step {
            turn_completed: Some(json!({"status": "failed", "error": {"message": "m",
                "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": {"$json": "null"}}}}})),
            ..Step::default()
        };
        resolve_json_literals(&mut step).unwrap();
        assert_eq!(
            step.turn_completed.unwrap()["error"]["codexErrorInfo"],
            json!({"httpConnectionFailed": {"httpStatusCode": null}})
        );
        let mut bad = Step {
            reply: Some(json!({"x": {"$json": "nul"}})),
            ..Step::default()
        };
        assert!(
            resolve_json_literals(&mut bad)
                .unwrap_err()
                .contains("is not JSON")
        );
    }
}
