//! The ACP codec: JSON-RPC 2.0 framing plus the ACP sugar steps.

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, PermissionOption as AcpOption, PermissionOptionKind,
    PromptResponse, RequestPermissionRequest, SessionNotification, SessionUpdate, StopReason,
    TextContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};
use conform_protocol::script::{Permission, PermissionOption, RpcError, Step};
use conform_protocol::vocab::Provider;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::method;
use crate::codec::{Codec, Sugar, string_at, string_leaves, string_leaves_mut};
use crate::error::{InvalidFrame, StepError};

/// The stop reasons ACP defines (an unknown one is the agent's own text).
const KNOWN_STOPS: &[&str] = &[
    "end_turn",
    "max_tokens",
    "max_turn_requests",
    "refusal",
    "cancelled",
];

/// Session id used before (or without) a `reply` to `session/new`.
pub const DEFAULT_SESSION_ID: &str = "sess-1";

#[derive(Debug)]
pub struct AcpCodec {
    session_id: String,
    tool_calls: u64,
}

impl Default for AcpCodec {
    fn default() -> Self {
        AcpCodec {
            session_id: DEFAULT_SESSION_ID.into(),
            tool_calls: 0,
        }
    }
}

impl AcpCodec {
    pub fn new() -> Self {
        Self::default()
    }

    /// The session id sugar steps use (the one the fake handed out in `session/new`).
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    fn session_update(&self, update: SessionUpdate) -> Sugar {
        Sugar::Notify {
            method: method::SESSION_UPDATE.into(),
            params: Some(to_json(&SessionNotification::new(
                self.session_id.clone(),
                update,
            ))),
        }
    }

    fn permission(&mut self, p: &Permission, answer: Option<Value>) -> Sugar {
        self.tool_calls += 1;
        let title = p.title.clone().unwrap_or_else(|| "Tool call".into());
        let mut fields = ToolCallUpdateFields::new()
            .title(title)
            .status(ToolCallStatus::Pending);
        let typed_kind = p.kind.as_deref().map(strict::<ToolKind>);
        if let Some(Some(kind)) = typed_kind {
            fields = fields.kind(kind);
        }
        if let Some(raw) = &p.raw_input {
            fields = fields.raw_input(raw.clone());
        }
        let tool_call = ToolCallUpdate::new(format!("call_{}", self.tool_calls), fields);
        let default_options = [
            PermissionOption {
                id: "allow".into(),
                kind: "allow_once".into(),
                name: None,
            },
            PermissionOption {
                id: "reject".into(),
                kind: "reject_once".into(),
                name: None,
            },
        ];
        let options = p.options.as_deref().unwrap_or(&default_options);
        // Unknown option kinds get a typed placeholder now and their raw text below.
        let typed_options = options
            .iter()
            .map(|o| {
                let kind = strict(&o.kind).unwrap_or(PermissionOptionKind::AllowOnce);
                AcpOption::new(o.id.clone(), option_name(o), kind)
            })
            .collect();
        let request =
            RequestPermissionRequest::new(self.session_id.clone(), tool_call, typed_options);
        let mut params = to_json(&request);
        if let (Some(kind), Some(None)) = (&p.kind, typed_kind) {
            params["toolCall"]["kind"] = kind.as_str().into();
        }
        for (i, o) in options.iter().enumerate() {
            params["options"][i]["kind"] = o.kind.as_str().into();
        }
        Sugar::Request {
            method: method::REQUEST_PERMISSION.into(),
            params: Some(params),
            answer,
        }
    }
}

impl Codec for AcpCodec {
    fn notification_kind<'a>(&self, frame: &'a Value) -> Option<&'a str> {
        let method = frame.get("method").and_then(Value::as_str)?;
        match method {
            "session/update" => frame
                .pointer("/params/update/sessionUpdate")
                .and_then(Value::as_str),
            _ => Some(method),
        }
    }

    fn speaks(&self, _version: Option<&str>) -> String {
        "an ACP agent (protocol version 1, agent-client-protocol-schema 1.20)".into()
    }

    fn provider(&self) -> Provider {
        Provider::Acp
    }

    fn sugar(&mut self, step: &Step) -> Result<Option<Sugar>, StepError> {
        let text_chunk = |t: &str| ContentChunk::new(ContentBlock::Text(TextContent::new(t)));
        Ok(Some(if let Some(text) = &step.chunk {
            self.session_update(SessionUpdate::AgentMessageChunk(text_chunk(text)))
        } else if let Some(text) = &step.thought {
            self.session_update(SessionUpdate::AgentThoughtChunk(text_chunk(text)))
        } else if let Some(update) = &step.update {
            // Sent as written: a typed round trip could silently repair a deliberate mistake.
            Sugar::Notify {
                method: method::SESSION_UPDATE.into(),
                params: Some(json!({ "sessionId": self.session_id, "update": update })),
            }
        } else if let Some(p) = &step.permission {
            self.permission(p, step.answer.clone())
        } else if let Some(reason) = &step.stop {
            let result = match strict::<StopReason>(reason) {
                Some(r) => to_json(&PromptResponse::new(r)),
                None => json!({ "stopReason": reason }),
            };
            Sugar::Reply {
                to: Some(method::SESSION_PROMPT.into()),
                result,
            }
        } else {
            return Ok(None);
        }))
    }

    fn validate_frame(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
        super::validate_frame(frame, answers)
    }

    fn validate_received(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
        super::validate_received(frame, answers)
    }

    fn untrusted_text(&self, step: &Step, out: &mut Vec<String>) {
        /// The closed values a `session/update` carries besides free text.
        const UPDATE_VOCABULARY: &[&str] = &[
            "pending",
            "in_progress",
            "completed",
            "failed",
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
            "agent_thought_chunk",
            "user_message_chunk",
            "plan",
        ];
        out.extend(step.thought.clone());
        if let Some(stop) = &step.stop
            && !KNOWN_STOPS.contains(&stop.as_str())
        {
            out.push(stop.clone());
        }
        if let Some(p) = &step.permission {
            out.extend(p.title.clone());
            if let Some(raw) = &p.raw_input {
                string_leaves(raw, out);
            }
        }
        if let Some(u) = &step.update {
            let mut all = Vec::new();
            string_leaves(u, &mut all);
            out.extend(
                all.into_iter()
                    .filter(|s| !UPDATE_VOCABULARY.contains(&s.as_str())),
            );
        }
    }

    fn is_shown_param(&self, method: &str, params: &Value, pointer: &str, _s: &str) -> bool {
        // An agent message chunk's text is the run's output.
        let chunk = params
            .pointer("/update/sessionUpdate")
            .and_then(Value::as_str)
            == Some("agent_message_chunk");
        crate::codec::closed_member(pointer)
            || (method == "session/update" && chunk && pointer == "/update/content/text")
    }

    fn free_text(&self, step: &mut Step, visit: &mut dyn FnMut(&'static str, &mut String)) {
        // The session id the agent chose (every later frame names it).
        if let Some(r) = &mut step.reply
            && let Some(id) = string_at(r, "/sessionId")
        {
            visit("acp session id", id);
        }
        if let Some(t) = &mut step.thought {
            visit("acp thought", t);
        }
        if let Some(stop) = &mut step.stop
            && !KNOWN_STOPS.contains(&stop.as_str())
        {
            visit("acp unknown stop reason", stop);
        }
        if let Some(p) = &mut step.permission {
            if let Some(t) = &mut p.title {
                visit("acp permission title", t);
            }
            if let Some(raw) = &mut p.raw_input {
                string_leaves_mut(raw, &mut |s| visit("acp permission raw input", s));
            }
            for o in p.options.iter_mut().flatten() {
                if let Some(n) = &mut o.name {
                    visit("acp permission option name", n);
                }
            }
        }
        if let Some(u) = &mut step.update {
            for (pointer, channel) in [
                ("/title", "acp tool call title"),
                ("/content/text", "acp update text"),
            ] {
                // An agent message chunk's text is output, not untrusted.
                let is_output =
                    u.get("sessionUpdate").and_then(Value::as_str) == Some("agent_message_chunk");
                if !is_output && let Some(s) = string_at(u, pointer) {
                    visit(channel, s);
                }
            }
            if let Some(raw) = u.get_mut("rawInput") {
                string_leaves_mut(raw, &mut |s| visit("acp tool call raw input", s));
            }
            // Extension data: whatever an agent puts there is its own.
            if let Some(meta) = u.get_mut("_meta") {
                string_leaves_mut(meta, &mut |s| visit("acp _meta", s));
            }
            if let Some(Value::Array(locations)) = u.get_mut("locations") {
                for l in locations {
                    if let Some(p) = string_at(l, "/path") {
                        visit("acp tool call location", p);
                    }
                }
            }
        }
    }

    fn tolerated(&self, m: &str, is_request: bool) -> bool {
        // Real hosts send `session/cancel` on every dispose, even after the turn ended.
        !is_request && m == method::SESSION_CANCEL
    }

    fn verdict_points(&self) -> &'static [(&'static str, Option<&'static str>)] {
        &[
            ("session/update:agent_message_chunk", None),
            ("request:session/request_permission", None),
        ]
    }

    fn is_terminal(&self, m: &str) -> bool {
        m == method::SESSION_PROMPT
    }

    fn answered(&mut self, m: &str, outcome: &Result<Value, RpcError>) {
        if m == method::SESSION_NEW
            && let Ok(result) = outcome
            && let Some(id) = result.get("sessionId").and_then(Value::as_str)
        {
            self.session_id = id.into();
        }
    }
}

/// Parses an enum value only if it round-trips exactly (no lenient `other` fallback).
fn strict<T: DeserializeOwned + Serialize>(text: &str) -> Option<T> {
    let raw = Value::String(text.into());
    let typed: T = serde_json::from_value(raw.clone()).ok()?;
    (serde_json::to_value(&typed).ok()? == raw).then_some(typed)
}

fn option_name(o: &PermissionOption) -> String {
    if let Some(name) = &o.name {
        return name.clone();
    }
    match o.kind.as_str() {
        "allow_once" => "Allow once",
        "allow_always" => "Always allow",
        "reject_once" => "Reject",
        "reject_always" => "Always reject",
        _ => &o.id,
    }
    .into()
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("ACP schema types serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(json: Value) -> Step {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn chunk_uses_the_session_from_session_new() {
        let mut c = AcpCodec::new();
        c.answered("session/new", &Ok(json!({"sessionId": "s-9"})));
        let s = c.sugar(&step(json!({"chunk": "Hi"}))).unwrap().unwrap();
        assert_eq!(
            s,
            Sugar::Notify {
                method: "session/update".into(),
                params: Some(json!({"sessionId": "s-9", "update": {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "Hi"}}})),
            }
        );
    }

    #[test]
    fn permission_defaults_and_raw_kinds() {
        let mut c = AcpCodec::new();
        let s = c
            .sugar(&step(
                json!({"permission": {"kind": "edit", "title": "Edit a"}}),
            ))
            .unwrap()
            .unwrap();
        let Sugar::Request { params, .. } = s else {
            panic!()
        };
        assert_eq!(
            params.unwrap(),
            json!({"sessionId": "sess-1",
                "toolCall": {"toolCallId": "call_1", "kind": "edit", "status": "pending", "title": "Edit a"},
                "options": [
                    {"optionId": "allow", "name": "Allow once", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]})
        );
        let s = c
            .sugar(&step(json!({"permission": {"kind": "teleport",
                "options": [{"id": "x", "kind": "maybe"}]}})))
            .unwrap()
            .unwrap();
        let Sugar::Request { params, .. } = s else {
            panic!()
        };
        let params = params.unwrap();
        assert_eq!(params["toolCall"]["kind"], "teleport");
        assert_eq!(params["options"][0]["kind"], "maybe");
    }

    #[test]
    fn unknown_stop_reason_is_sent_raw() {
        let mut c = AcpCodec::new();
        let s = c.sugar(&step(json!({"stop": "bogus"}))).unwrap().unwrap();
        assert_eq!(
            s,
            Sugar::Reply {
                to: Some("session/prompt".into()),
                result: json!({"stopReason": "bogus"})
            }
        );
    }
}
