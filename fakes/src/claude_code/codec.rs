//! The Claude Code codec: stream-json framing (objects with a `type`; control requests and
//! responses carry their own ids) and the Claude Code sugar steps.

use conform_protocol::script::{RpcError, Step};
use conform_protocol::vocab::Provider;
use serde_json::{Map, Value, json};

use super::args::CliArgs;
use super::{CLI_VERSION, kind};
use crate::codec::{Codec, Msg, Sugar, string_at, string_leaves, string_leaves_mut};
use crate::error::{InvalidFrame, RefusedArgs, StepError};

/// The session the fake's messages name before (or without) an `init` that names one.
pub const DEFAULT_SESSION_ID: &str = "c1a0de00-5e55-4000-8000-000000000001";
/// The model the fake claims to run: the real CLI 2.1.220's default.
const MODEL: &str = "claude-opus-5[1m]";

static NULL: Value = Value::Null;

mod frames;

#[derive(Debug)]
pub struct ClaudeCodeCodec {
    session_id: String,
    args: CliArgs,
    /// Message uuids and tool-use ids handed out so far.
    uuids: u64,
    tool_uses: u64,
    /// The subject's mistake a sugar step uncovered, for the engine to report.
    violation: Option<String>,
    /// An `is_error` result was sent: the real CLI then exits 1 when its input ends.
    error_result: bool,
    /// Where the SDK's handshake stands: the `initialize` request arrived, and whether it was
    /// answered with the object that completes it.
    initialize_received: bool,
    initialize_completed: bool,
}

impl Default for ClaudeCodeCodec {
    fn default() -> Self {
        ClaudeCodeCodec {
            session_id: DEFAULT_SESSION_ID.into(),
            args: CliArgs::default(),
            uuids: 0,
            tool_uses: 0,
            violation: None,
            error_result: false,
            initialize_received: false,
            initialize_completed: false,
        }
    }
}

impl ClaudeCodeCodec {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn session_id(&self) -> &str {
        &self.session_id
    }
}

impl Codec for ClaudeCodeCodec {
    /// A stream-json message by its `type`, a `system` one by its subtype, a control request by
    /// its request's subtype.
    fn notification_kind<'a>(&self, frame: &'a Value) -> Option<&'a str> {
        let ty = frame.get("type")?.as_str()?;
        let sub = match ty {
            "system" => frame.get("subtype"),
            "control_request" => frame.pointer("/request/subtype"),
            _ => None,
        };
        sub.and_then(Value::as_str).or(Some(ty))
    }

    /// A control request by its subtype, a control response as a response to its request, any
    /// other message by its `type` and `subtype` (`system:init`, `result:success`).
    fn frame_kind(&self, frame: &Value, answers: Option<&str>) -> String {
        let sub = |pointer: &str| frame.pointer(pointer).and_then(Value::as_str);
        let ty = sub("/type").unwrap_or("?");
        match ty {
            "control_request" => format!("request:{}", sub("/request/subtype").unwrap_or("?")),
            "control_response" => {
                let what = match sub("/response/subtype") {
                    Some("error") => "error",
                    _ => "response",
                };
                format!("{what}:{}", answers.unwrap_or("?"))
            }
            _ => match sub("/subtype") {
                Some(s) => format!("{ty}:{s}"),
                None => ty.to_owned(),
            },
        }
    }

    fn speaks(&self, _version: Option<&str>) -> String {
        format!(
            "Claude Code CLI {} (as Agent SDK {} drives it)",
            super::CLI_VERSION,
            super::SDK_VERSION
        )
    }

    fn provider(&self) -> Provider {
        Provider::ClaudeCode
    }

    fn jsonrpc_version(&self) -> Option<&'static str> {
        None
    }

    fn takes_runtime_args(&self) -> bool {
        true
    }

    fn runtime_args(&mut self, args: &[String]) -> Result<(), RefusedArgs> {
        self.args = super::check_args(args)?;
        Ok(())
    }

    fn exit_code_at_eof(&self) -> i32 {
        // Observed on the real CLI 2.1.220: exit 1 after an API error's `is_error` success
        // result and after `error_max_turns`.
        i32::from(self.error_result)
    }

    fn take_violation(&mut self) -> Option<String> {
        self.violation.take()
    }

    fn validate_frame(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
        super::validate_frame(frame, answers)
    }

    fn sugar(&mut self, step: &Step) -> Result<Option<Sugar>, StepError> {
        let mut sugar = if let Some(session) = &step.init {
            self.init(session)
        } else if let Some(text) = &step.assistant {
            self.assistant(text)
        } else if let Some(text) = &step.partial {
            if !self.args.include_partial_messages {
                return Err("the CLI sends `stream_event` only when started with \
                     `--include-partial-messages`"
                    .into());
            }
            self.partial(text)
        } else if let Some(over) = &step.result {
            self.result(over)?
        } else if let Some(over) = &step.denied {
            self.denied(over)?
        } else if let Some(subtype) = &step.control {
            self.control(subtype, step.params.as_ref())?
        } else {
            return Ok(None);
        };
        if let Sugar::Request { answer, .. } = &mut sugar {
            *answer = step.answer.clone();
        }
        Ok(Some(sugar))
    }

    fn tolerated(&self, method: &str, is_request: bool) -> bool {
        // The SDK interrupts a turn and keeps the wire alive unasked. Given a string prompt,
        // it writes the task's `user` message right after its `initialize` request, without
        // awaiting the answer (0.3.220, observed): a script whose handshake never completes
        // (a cancel while `initialize` is in flight, an error or null answer) sees it anyway.
        (is_request && method == kind::INTERRUPT)
            || (!is_request && method == "keep_alive")
            || (!is_request
                && method == kind::USER
                && self.initialize_received
                && !self.initialize_completed)
    }

    fn received(&mut self, method: &str, _params: Option<&Value>) {
        if method == kind::INITIALIZE {
            self.initialize_received = true;
        }
    }

    fn answered(&mut self, method: &str, outcome: &Result<Value, RpcError>) {
        if method == kind::INITIALIZE {
            self.initialize_completed = matches!(outcome, Ok(Value::Object(_)));
        }
    }

    fn unknown_method_error(&self, method: &str) -> RpcError {
        RpcError {
            code: 0,
            message: format!("Unsupported control request subtype: {method}"),
            data: None,
        }
    }

    fn is_terminal(&self, _method: &str) -> bool {
        false
    }

    fn verdict_points(&self) -> &'static [(&'static str, Option<&'static str>)] {
        &[
            ("assistant", None),
            ("result:*", None),
            ("system:permission_denied", None),
        ]
    }

    fn is_terminal_notification(&self, method: &str, _params: Option<&Value>) -> bool {
        method == kind::RESULT
    }

    fn untrusted_text(&self, step: &Step, out: &mut Vec<String>) {
        if let Some(over) = &step.result {
            for key in ["errors", "permission_denials", "terminal_reason"] {
                if let Some(v) = over.get(key) {
                    string_leaves(v, out);
                }
            }
            // A failed result's `result` is never the answer.
            if over
                .get("subtype")
                .and_then(Value::as_str)
                .unwrap_or("success")
                != "success"
                && let Some(Value::String(t)) = over.get("result")
            {
                out.push(t.clone());
            }
        }
        if let Some(over) = &step.denied {
            string_leaves(over, out);
        }
        if step.control.is_some()
            && let Some(p) = &step.params
        {
            string_leaves(p, out);
        }
    }

    fn is_shown_param(&self, method: &str, params: &Value, pointer: &str, _s: &str) -> bool {
        // An assistant message's text blocks and streamed text deltas are model output; an
        // API error dressed as an assistant message is the upstream's text, not output.
        let api_error = params.get("is_api_error_message") == Some(&Value::Bool(true))
            || params.get("error").is_some_and(|e| !e.is_null());
        // Only a top-level block's own text: what a block nests (a server tool's result) is not.
        let text_block = pointer
            .strip_prefix("/message/content/")
            .and_then(|rest| rest.strip_suffix("/text"))
            .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
        crate::codec::closed_member(pointer)
            || (method == "assistant" && text_block && !api_error)
            || (method == "stream_event" && pointer == "/event/delta/text")
    }

    fn free_text(&self, step: &mut Step, visit: &mut dyn FnMut(&'static str, &mut String)) {
        if let Some(over) = &mut step.result {
            if let Some(errors) = over.get_mut("errors") {
                string_leaves_mut(errors, &mut |t| visit("errors[]", t));
            }
            // A denial's tool input is the untrusted part (its id pairs it with the request).
            if let Some(Value::Array(denials)) = over.get_mut("permission_denials") {
                for input in denials.iter_mut().filter_map(|d| d.get_mut("tool_input")) {
                    string_leaves_mut(input, &mut |t| visit("permission_denials", t));
                }
            }
        }
        if let Some(over) = &mut step.denied {
            for (pointer, channel) in [
                ("/message", "permission_denied message"),
                ("/decision_reason", "decision_reason"),
            ] {
                if let Some(t) = string_at(over, pointer) {
                    visit(channel, t);
                }
            }
        }
        if step.control.is_some()
            && let Some(p) = &mut step.params
        {
            for (pointer, channel) in [
                ("/input", "tool input"),
                ("/decision_reason", "decision_reason"),
                ("/blocked_path", "blocked_path"),
                ("/title", "tool title"),
                ("/message", "elicitation message"),
            ] {
                if let Some(v) = p.pointer_mut(pointer) {
                    string_leaves_mut(v, &mut |t| visit(channel, t));
                }
            }
        }
    }

    fn request_id(&self, n: u64) -> Value {
        Value::from(format!("cli-{:08x}-{n}", 0xc1a0de))
    }

    fn classify<'a>(&self, frame: &'a Value) -> Msg<'a> {
        let Value::Object(m) = frame else {
            return match frame {
                Value::String(raw) => Msg::Malformed(format!("not JSON: {raw:?}")),
                other => Msg::Malformed(format!("not a JSON object: {other}")),
            };
        };
        match m.get("type") {
            Some(Value::String(t)) if t == kind::CONTROL_REQUEST => {
                let Some(id) = m.get("request_id") else {
                    return Msg::Malformed("a control_request needs a `request_id`".into());
                };
                match frame.pointer("/request/subtype") {
                    Some(Value::String(subtype)) => Msg::Request {
                        id,
                        method: subtype,
                        params: m.get("request"),
                    },
                    _ => Msg::Malformed("a control_request needs `request.subtype`".into()),
                }
            }
            Some(Value::String(t)) if t == kind::CONTROL_RESPONSE => {
                let response = &frame["response"];
                let Some(id) = response.get("request_id") else {
                    return Msg::Malformed("a control_response needs `response.request_id`".into());
                };
                match response.get("subtype").and_then(Value::as_str) {
                    Some("success") => Msg::Response {
                        id,
                        outcome: Ok(response.get("response").unwrap_or(&NULL)),
                    },
                    Some("error") => Msg::Response {
                        id,
                        outcome: Err(response.get("error").unwrap_or(&NULL)),
                    },
                    _ => Msg::Malformed(
                        "a control_response's `response.subtype` is `success` or `error`".into(),
                    ),
                }
            }
            Some(Value::String(t)) => Msg::Notification {
                method: t,
                params: Some(frame),
            },
            Some(other) => Msg::Malformed(format!("`type` is not a string: {other}")),
            None => Msg::Malformed("no `type`".into()),
        }
    }

    fn request(&self, id: Value, method: &str, params: Option<Value>) -> Value {
        let mut request = Map::new();
        request.insert("subtype".into(), method.into());
        if let Some(Value::Object(p)) = params {
            request.extend(p);
        }
        json!({"type": kind::CONTROL_REQUEST, "request_id": id, "request": request})
    }

    fn notification(&self, method: &str, params: Option<Value>) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), method.into());
        if let Some(Value::Object(p)) = params {
            m.extend(p.into_iter().filter(|(k, _)| k != "type"));
        }
        Value::Object(m)
    }

    fn response(&self, id: Value, outcome: Result<Value, RpcError>) -> Value {
        let response = match outcome {
            Ok(result) => json!({"subtype": "success", "request_id": id, "response": result}),
            Err(error) => json!({"subtype": "error", "request_id": id, "error": error.message}),
        };
        json!({"type": kind::CONTROL_RESPONSE, "response": response})
    }
}

#[cfg(test)]
mod tests;
