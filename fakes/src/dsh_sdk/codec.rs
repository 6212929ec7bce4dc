//! The DSH SDK codec: JSON-RPC 2.0 framing plus the DSH SDK sugar steps.

use std::collections::HashMap;

use conform_protocol::script::{RpcError, Step};
use conform_protocol::vocab::Provider;
use serde_json::{Value, json};

use super::{event, method};
use crate::codec::{Codec, Sugar, string_leaves};
use crate::error::{InvalidFrame, StepError, VersionError};

mod frames;

pub use frames::ATTEMPT_FAILURE;
use frames::{replay_state, stream, usage};

/// The runtime's state as far as the sugar needs it.
#[derive(Debug)]
pub struct DshSdkCodec {
    /// The runtime release the fake speaks (one of [`super::PRODUCT_VERSIONS`]).
    version: &'static str,
    /// The session of the latest `session/prompt` an `expect` step matched.
    prompt_session: Option<String>,
    /// Each prompted session's `contentBlocks` (echoed by `receipt`).
    prompts: HashMap<String, Value>,
    /// The next `seq` of each session's events.
    seq: HashMap<String, u64>,
    /// `assistant/message` ids handed out so far (`m1`, `m2`, …).
    messages: u64,
    /// The turn and step the latest `turn/start` or `step/start` event named: the sugar's
    /// events carry them (the real runtime numbers both from 1).
    turn_step: (u64, u64),
}

impl Default for DshSdkCodec {
    fn default() -> Self {
        DshSdkCodec {
            version: super::RUNTIME_VERSION,
            prompt_session: None,
            prompts: HashMap::new(),
            seq: HashMap::new(),
            messages: 0,
            turn_step: (1, 1),
        }
    }
}

impl DshSdkCodec {
    pub fn new() -> Self {
        Self::default()
    }

    /// The runtime release the fake speaks.
    pub fn product_version(&self) -> &'static str {
        self.version
    }

    /// Whether the model's text also streams as `assistant/chunk` text-deltas (0.1.1).
    fn streams_chunks(&self) -> bool {
        self.version == super::CHUNK_STREAM_VERSION
    }

    /// The session sugar steps address when they set no `session`.
    pub fn prompt_session(&self) -> Option<&str> {
        self.prompt_session.as_deref()
    }
}

/// The step's DSH SDK sugar key, if any.
fn sugar_action(step: &Step) -> Option<&'static str> {
    [
        ("receipt", step.receipt.is_some()),
        ("status", step.status.is_some()),
        ("delta", step.delta.is_some()),
        ("attempt", step.attempt.is_some()),
        ("message", step.message.is_some()),
        ("turn_end", step.turn_end.is_some()),
        ("event", step.event.is_some()),
    ]
    .into_iter()
    .find_map(|(k, on)| on.then_some(k))
}

impl Codec for DshSdkCodec {
    fn notification_kind<'a>(&self, frame: &'a Value) -> Option<&'a str> {
        let method = frame.get("method").and_then(Value::as_str)?;
        match method {
            "session.event" => frame.pointer("/params/event/type").and_then(Value::as_str),
            _ => Some(method),
        }
    }

    fn default_product_version(&self) -> Option<&'static str> {
        Some(super::RUNTIME_VERSION)
    }

    fn speaks(&self, version: Option<&str>) -> String {
        format!(
            "DSH SDK runtime {}",
            version.unwrap_or(super::RUNTIME_VERSION)
        )
    }

    fn set_product_version(&mut self, version: Option<&str>) -> Result<(), VersionError> {
        self.version = super::product_version(version)?;
        Ok(())
    }

    fn product_versions(&self) -> Vec<&'static str> {
        super::PRODUCT_VERSIONS.to_vec()
    }

    fn provider(&self) -> Provider {
        Provider::DshSdk
    }

    fn sugar(&mut self, step: &Step) -> Result<Option<Sugar>, StepError> {
        let Some(action) = sugar_action(step) else {
            return Ok(None);
        };
        let session = step
            .session
            .clone()
            .or_else(|| self.prompt_session.clone())
            .ok_or_else(|| {
                format!(
                    "`{action}` needs a session: no `session/prompt` was expected yet and the \
                     step sets no `session`"
                )
            })?;
        // Speaking 0.1.1, the model's text streams as `assistant/chunk` events first; a step
        // broken on purpose is sent as written.
        let chunks = self.streams_chunks() && step.violation.is_none();
        let (turn, step_no) = self.turn_step;
        let turn_step = |mut data: Value| {
            data["turn"] = turn.into();
            data["step"] = step_no.into();
            data
        };
        Ok(Some(if let Some(id) = &step.receipt {
            let content = self.prompts.get(&session).cloned().unwrap_or(json!([]));
            let data = json!({"target": "next-turn", "start": 0, "inserted": [
                {"id": id, "role": "user", "content": content, "source": {"kind": "user"}}]});
            self.typed_event(&session, event::INBOX_SPLICED, data)
        } else if let Some(status) = &step.status {
            Sugar::Notify {
                method: method::SESSION_STATUS.into(),
                params: Some(json!({ "sessionId": session, "status": status })),
            }
        } else if let Some(text) = &step.delta {
            let chunk = json!({"type": "text-delta", "index": 0, "text": text});
            let data = turn_step(json!({ "chunk": chunk }));
            self.typed_event(&session, event::ASSISTANT_CHUNK, data)
        } else if let Some(text) = &step.attempt {
            let failure = json!({"kind": "error", "failure": {
                "message": ATTEMPT_FAILURE, "code": "STREAM_CLOSED"}});
            let data = turn_step(json!({ "stream": stream(text, false, failure) }));
            let ev = json!({"type": event::ASSISTANT_ATTEMPT, "data": data});
            self.model_event(&session, ev, chunks)
        } else if let Some(text) = &step.message {
            self.messages += 1;
            let content = if text.is_empty() {
                json!([])
            } else {
                json!([{"type": "text", "text": text}])
            };
            let message = json!({"id": format!("m{}", self.messages), "role": "assistant",
                "content": content, "source": {"kind": "model", "provider": "deepseek-official",
                "model": "deepseek-v4-flash",
                "replayState": replay_state()}});
            let stream = stream(text, true, json!({"kind": "stop"}));
            let data = turn_step(json!({ "message": message, "usage": usage(), "stream": stream }));
            let ev = json!({"type": event::ASSISTANT_MESSAGE, "data": data, "surfaceOp": "append"});
            self.model_event(&session, ev, chunks)
        } else if let Some(reason) = &step.turn_end {
            let reason = match reason {
                Value::String(kind) => json!({ "kind": kind }),
                Value::Object(_) => reason.clone(),
                other => {
                    return Err(format!(
                        "`turn_end` is a kind (\"completed\") or a reason object, not {other}"
                    )
                    .into());
                }
            };
            let data = json!({"turn": turn, "reason": reason});
            self.typed_event(&session, event::TURN_END, data)
        } else if let Some(ev) = &step.event {
            self.model_event(&session, ev.clone(), chunks)
        } else {
            unreachable!("sugar_action found a DSH SDK key")
        }))
    }

    fn validate_frame(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
        super::validate_frame(frame, answers)
    }

    fn untrusted_text(&self, step: &Step, out: &mut Vec<String>) {
        /// The closed set of turn-end kinds and abort causes (shown values, not secrets).
        const TURN_END_VOCABULARY: &[&str] = &[
            "completed",
            "aborted",
            "blocked",
            "error",
            "max-tokens",
            "interrupted",
            "user",
            "parent",
            "hook",
            "disposed",
            "legacy",
        ];
        // Raw events and turn-end payloads are child text (error messages, unknown kinds);
        // assistant text addressed to another session is not this run's output.
        if let Some(e) = &step.event {
            let mut leaves = Vec::new();
            crate::codec::string_leaves_at(e, &mut String::new(), &mut leaves);
            let kind = e.get("type").and_then(Value::as_str);
            out.extend(
                leaves
                    .into_iter()
                    .filter(|(pointer, _)| !offered_tool_name(kind, pointer))
                    .map(|(_, s)| s),
            );
        }
        if let Some(t) = &step.turn_end {
            let mut all = Vec::new();
            string_leaves(t, &mut all);
            out.extend(
                all.into_iter()
                    .filter(|s| !TURN_END_VOCABULARY.contains(&s.as_str())),
            );
        }
        if step.session.is_some() {
            out.extend(step.message.clone());
            out.extend(step.delta.clone());
            out.extend(step.attempt.clone());
        }
        if step.attempt.is_some() {
            out.push(ATTEMPT_FAILURE.to_owned());
        }
    }

    fn is_shown_param(&self, method: &str, params: &Value, pointer: &str, _s: &str) -> bool {
        // The text of an assistant message, chunk or attempt is output the records keep.
        let kind = params.pointer("/event/type").and_then(Value::as_str);
        let assistant = matches!(
            kind,
            Some(event::ASSISTANT_MESSAGE | event::ASSISTANT_ATTEMPT | event::ASSISTANT_CHUNK)
        );
        crate::codec::closed_member(pointer)
            || offered_tool_name(kind, pointer)
            || (method == "session.event" && assistant && pointer.ends_with("/text"))
    }

    fn free_text(&self, step: &mut Step, visit: &mut dyn FnMut(&'static str, &mut String)) {
        // Failure messages, wherever a raw event or a turn end carries one.
        fn messages(
            v: &mut Value,
            channel: &'static str,
            visit: &mut dyn FnMut(&'static str, &mut String),
        ) {
            match v {
                Value::Object(o) => {
                    for (k, x) in o.iter_mut() {
                        match x {
                            Value::String(s) if k == "message" => visit(channel, s),
                            _ => messages(x, channel, visit),
                        }
                    }
                }
                Value::Array(a) => a.iter_mut().for_each(|x| messages(x, channel, visit)),
                _ => {}
            }
        }
        if let Some(e) = &mut step.event {
            messages(e, "dsh-sdk event failure message", visit);
        }
        if let Some(t) = &mut step.turn_end {
            messages(t, "dsh-sdk turn-end error message", visit);
        }
        // Assistant text addressed to another session is not this run's output.
        if step.session.is_some() {
            for t in [&mut step.message, &mut step.delta, &mut step.attempt]
                .into_iter()
                .flatten()
            {
                visit("dsh-sdk text for another session", t);
            }
        }
    }

    fn tolerated(&self, method: &str, is_request: bool) -> bool {
        // `shutdown` is the protocol's own close and legal at any time: the real runtime
        // (0.2.1rc2, observed) answers `{}` even before or during `initialize`, then exits 0. A
        // client that always sends a best-effort `shutdown` while closing breaks nothing. The
        // fake answers it and goes on with its script, whose own steps decide how it ends (a
        // deliberate simplification: the real one exits). Nothing else is sent unasked.
        is_request && method == method::SHUTDOWN
    }

    fn unknown_method_error(&self, method: &str) -> RpcError {
        RpcError {
            code: -32603,
            message: format!("unknown DeepSeek Harness SDK runtime method: {method}"),
            data: None,
        }
    }

    fn is_terminal(&self, _method: &str) -> bool {
        // The `session/prompt` answer is only an enqueue receipt; the turn ends with `turn/end`.
        false
    }

    fn received(&mut self, m: &str, params: Option<&Value>) {
        if m != method::SESSION_PROMPT {
            return;
        }
        let params = params.unwrap_or(&Value::Null);
        if let Some(session) = params.get("sessionId").and_then(Value::as_str) {
            let blocks = params.get("contentBlocks").cloned().unwrap_or(json!([]));
            self.prompts.insert(session.to_owned(), blocks);
            self.prompt_session = Some(session.to_owned());
        }
    }

    fn verdict_points(&self) -> &'static [(&'static str, Option<&'static str>)] {
        &[
            ("session.status", Some("/params/status")),
            ("session.event:assistant/*", None),
            ("session.event:llm/retry", None),
            (
                "session.event:turn/end",
                Some("/params/event/data/reason/kind"),
            ),
        ]
    }

    fn is_terminal_notification(&self, m: &str, params: Option<&Value>) -> bool {
        let Some(params) = params else { return false };
        m == method::SESSION_EVENT
            && self.prompt_session.is_some()
            && params.get("sessionId").and_then(Value::as_str) == self.prompt_session.as_deref()
            && params.pointer("/event/type").and_then(Value::as_str) == Some(event::TURN_END)
    }

    fn shutdown_reply(&self, m: &str) -> Option<Value> {
        (m == method::SHUTDOWN).then(|| json!({}))
    }

    fn request_id(&self, n: u64) -> Value {
        format!("req_{n}").into()
    }
}

/// The name of a tool a request header lists: named as the host names its own tools
/// (`job_output`), vocabulary a notice may show, not text of this run.
fn offered_tool_name(kind: Option<&str>, pointer: &str) -> bool {
    kind == Some(event::REQUEST_HEADER) && pointer.ends_with("/name")
}

#[cfg(test)]
mod tests;
