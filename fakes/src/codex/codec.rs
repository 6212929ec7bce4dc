//! The Codex app-server codec: JSON-RPC framing without `jsonrpc`, `emittedAtMs` on every
//! notification, and the Codex sugar steps.

use std::cell::Cell;

use conform_protocol::script::{RpcError, Step};
use conform_protocol::vocab::Provider;
use serde_json::{Map, Value, json};

use super::{DEFAULT_PRODUCT_VERSION, method};
use crate::codec::{Codec, Sugar, string_at, string_leaves, string_leaves_mut};
use crate::error::{InvalidFrame, StepError, VersionError};

/// `emittedAtMs` of the first notification the fake sends; each further one is 1 ms later
/// (deterministic, and a plausible Unix time in milliseconds: 2025-11-29T08:00:00Z).
pub const EMITTED_AT_BASE_MS: u64 = 1_764_403_200_000;

/// Where the app-server's replies to `thread/start` and `turn/start` name the thread and the
/// turn it chose (which every later frame names).
const THREAD_ID: &str = "/thread/id";
const TURN_ID: &str = "/turn/id";

mod dress;
mod frames;

use frames::{is_request_payload, table};

/// The app-server's state as far as the sugar needs it.
#[derive(Debug)]
pub struct CodexCodec {
    version: &'static str,
    /// `result.thread.id` of the fake's own reply to `thread/start`.
    thread_id: Option<String>,
    /// `result.turn.id` of the fake's own reply to `turn/start`.
    turn_id: Option<String>,
    /// `cwd` of the `thread/start` an `expect` step matched.
    cwd: Option<String>,
    /// Item ids handed out so far (`item-1`, `item-2`, …).
    items: u64,
    /// Notifications sent so far (their `emittedAtMs` clock).
    notifications: Cell<u64>,
    /// `input` of the `turn/start` an `expect` step matched (echoed as the userMessage item).
    input: Option<Value>,
    /// Agent messages completed in this turn (a completed turn lists them).
    answers: Vec<Value>,
    /// `clientInfo.name` of the `initialize` an `expect` step matched (0.169.0 echoes it as
    /// the thread's `originator`).
    client_name: Option<String>,
    /// `result.model` of the fake's own reply to `thread/start` (0.169.0 repeats it on the
    /// thread).
    model: Option<Value>,
    /// What it sends unasked ([`super::ambient`]).
    ambient: super::ambient::Ambient,
}

impl Default for CodexCodec {
    fn default() -> Self {
        CodexCodec {
            version: DEFAULT_PRODUCT_VERSION,
            thread_id: None,
            turn_id: None,
            cwd: None,
            input: None,
            answers: Vec::new(),
            client_name: None,
            model: None,
            items: 0,
            ambient: Default::default(),
            notifications: Cell::new(0),
        }
    }
}

/// The step's Codex sugar key, if any.
fn sugar_action(step: &Step) -> Option<&'static str> {
    [
        ("turn_started", step.turn_started.is_some()),
        ("agent_message", step.agent_message.is_some()),
        ("turn_completed", step.turn_completed.is_some()),
        ("ask", step.ask.is_some()),
    ]
    .into_iter()
    .find_map(|(k, on)| on.then_some(k))
}

impl CodexCodec {
    pub fn new() -> Self {
        Self::default()
    }

    /// The product version the fake speaks.
    pub fn product_version(&self) -> &'static str {
        self.version
    }

    /// The thread sugar steps address when they set no `thread`.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// The turn sugar steps address when they set no `turn`.
    pub fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    /// The `emittedAtMs` the next notification gets (also the sugar's `completedAtMs` and
    /// `startedAtMs`).
    fn now_ms(&self) -> u64 {
        EMITTED_AT_BASE_MS + self.notifications.get()
    }

    fn next_item(&mut self) -> String {
        self.items += 1;
        format!("item-{}", self.items)
    }

    fn v0_169(&self) -> bool {
        super::profile::dressing(self.version) == "0.169.0"
    }

    /// A `Turn` with this id and status, in 0.147.0's shape (`dress` adds a later version's
    /// fields).
    fn turn_object(&self, id: &str, status: Value) -> Map<String, Value> {
        let turn = json!({"id": id, "items": [], "itemsView": "notLoaded", "status": status,
            "error": null, "startedAt": null, "completedAt": null, "durationMs": null});
        match turn {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }
}

impl Codec for CodexCodec {
    fn default_product_version(&self) -> Option<&'static str> {
        Some(super::DEFAULT_PRODUCT_VERSION)
    }

    fn speaks(&self, version: Option<&str>) -> String {
        format!(
            "Codex app-server {}",
            version.unwrap_or(super::DEFAULT_PRODUCT_VERSION)
        )
    }

    fn provider(&self) -> Provider {
        Provider::Codex
    }

    fn jsonrpc_version(&self) -> Option<&'static str> {
        None
    }

    fn set_product_version(&mut self, version: Option<&str>) -> Result<(), VersionError> {
        self.version = super::product_version(version)?;
        Ok(())
    }

    fn product_versions(&self) -> Vec<&'static str> {
        super::PRODUCT_VERSIONS.clone()
    }

    fn validate_frame(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
        super::validate_frame(frame, answers, self.version)
    }

    fn validate_received(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame> {
        super::validate_received(frame, answers, self.version)
    }

    fn sugar(&mut self, step: &Step) -> Result<Option<Sugar>, StepError> {
        let Some(action) = sugar_action(step) else {
            return Ok(None);
        };
        let at = self.address(step, action)?;
        Ok(Some(if let Some(on) = step.turn_started {
            if !on {
                return Err("`turn_started = false` sends nothing; leave the step out".into());
            }
            self.turn_started(&at)
        } else if let Some(fields) = &step.agent_message {
            let fields = table(action, fields, "{ text = \"…\", phase = \"…\" }")?;
            self.agent_message(&at, fields, step.violation.is_some())
        } else if let Some(fields) = &step.turn_completed {
            let fields = table(action, fields, "{ status = \"…\", error = { … } }")?;
            self.turn_completed(&at, fields)?
        } else if let Some(m) = &step.ask {
            self.ask(&at, m, step, action)?
        } else {
            unreachable!("sugar_action found a Codex key")
        }))
    }

    fn untrusted_text(&self, step: &Step, out: &mut Vec<String>) {
        // A failed turn's error: its message and details are the upstream's own text; an
        // error-info code or key no known product version defines is too (known ones are the
        // vocabulary a diagnostic names).
        if let Some(error) = step.turn_completed.as_ref().and_then(|t| t.get("error")) {
            for key in ["message", "additionalDetails"] {
                if let Some(v) = error.get(key) {
                    string_leaves(v, out);
                }
            }
            let known = |s: &str| {
                conform_protocol::codex::KNOWN
                    .iter()
                    .any(|v| v.has_string(s) || v.object(s).is_some())
            };
            match error.get("codexErrorInfo") {
                Some(Value::String(code)) if !known(code) => out.push(code.clone()),
                Some(Value::Object(o)) => {
                    out.extend(o.keys().filter(|k| !known(k)).cloned());
                }
                _ => {}
            }
        }
        // A server request's payload is the runtime's.
        if step.ask.is_some()
            && let Some(Value::Object(params)) = &step.params
        {
            for (k, v) in params {
                if is_request_payload(k) {
                    string_leaves(v, out);
                }
            }
        }
    }

    fn is_shown_param(&self, method: &str, params: &Value, pointer: &str, s: &str) -> bool {
        // The answer streams as agent-message deltas and items (commentary is not the answer);
        // an error-info code a pinned version defines is the vocabulary a diagnostic names.
        let item = |p: &str| params.pointer(p).and_then(Value::as_str);
        let answer_item =
            item("/item/type") == Some("agentMessage") && item("/item/phase") != Some("commentary");
        let known = conform_protocol::codex::KNOWN
            .iter()
            .any(|v| v.has_string(s));
        crate::codec::closed_member(pointer)
            || known
            || (method == "item/agentMessage/delta" && pointer == "/delta")
            || (matches!(method, "item/started" | "item/completed")
                && answer_item
                && pointer == "/item/text")
    }

    fn free_text(&self, step: &mut Step, visit: &mut dyn FnMut(&'static str, &mut String)) {
        // The thread and turn ids the app-server chose (every later frame names them).
        if let Some(r) = &mut step.reply {
            for (pointer, channel) in [(THREAD_ID, "codex thread id"), (TURN_ID, "codex turn id")] {
                if let Some(id) = string_at(r, pointer) {
                    visit(channel, id);
                }
            }
        }
        if let Some(t) = &mut step.turn_completed {
            for (pointer, channel) in [
                ("/error/message", "codex turn error message"),
                ("/error/additionalDetails", "codex turn error details"),
            ] {
                if let Some(s) = string_at(t, pointer) {
                    visit(channel, s);
                }
            }
        }
        // The `error` notification (a retry the app-server reports mid-turn): its message and
        // details are the upstream's text, like a failed turn's.
        if step.notify.as_deref() == Some("error")
            && let Some(params) = &mut step.params
        {
            for (pointer, channel) in [
                ("/error/message", "codex error notification message"),
                (
                    "/error/additionalDetails",
                    "codex error notification details",
                ),
            ] {
                if let Some(s) = string_at(params, pointer) {
                    visit(channel, s);
                }
            }
        }
        if step.ask.is_some()
            && let Some(Value::Object(params)) = &mut step.params
        {
            for (k, v) in params.iter_mut() {
                if is_request_payload(k) {
                    string_leaves_mut(v, &mut |s| visit("codex server request payload", s));
                }
            }
        }
        // Commentary is not this run's answer. (A message with `thread` or `turn` may address the
        // run's own turn before its id is known, so only commentary is a channel here.)
        if let Some(m) = &mut step.agent_message {
            let not_the_answer = m.get("phase").and_then(Value::as_str) == Some("commentary");
            if not_the_answer && let Some(s) = string_at(m, "/text") {
                visit("codex agent message that is not the answer", s);
            }
        }
    }

    fn tolerated(&self, m: &str, is_request: bool) -> bool {
        // Real hosts interrupt on every dispose, even after the turn completed.
        is_request && m == method::TURN_INTERRUPT
    }

    fn unknown_method_error(&self, m: &str) -> RpcError {
        // The real server answers every error with -32600, unknown methods included.
        RpcError {
            code: -32600,
            message: format!("Invalid request: unknown variant `{m}`"),
            data: None,
        }
    }

    fn is_terminal(&self, _method: &str) -> bool {
        // The `turn/start` answer only accepts the turn; `turn/completed` ends it.
        false
    }

    fn dress(&self, answers: Option<&str>, frame: &mut Value) {
        if self.v0_169() {
            match answers {
                Some(m) => self.dress_reply(m, frame),
                None => self.dress_notification(frame),
            }
        }
        // What an accepted version's recording taught beyond its dressing.
        let adds = super::profile::adds(self.version);
        if !adds.is_empty() {
            let kind = self.frame_kind(frame, answers);
            super::profile::apply(adds, &kind, frame);
        }
    }

    fn ambient(&mut self, frame: &Value, answers: Option<&str>) -> Vec<(String, Option<Value>)> {
        self.ambient.after(frame, answers)
    }

    fn answered(&mut self, m: &str, outcome: &Result<Value, RpcError>) {
        let Ok(result) = outcome else { return };
        let id = |pointer: &str| result.pointer(pointer).and_then(Value::as_str);
        if m == method::THREAD_START
            && let Some(thread) = id(THREAD_ID)
        {
            self.thread_id = Some(thread.into());
            self.model = result.get("model").cloned();
        } else if m == method::TURN_START
            && let Some(turn) = id(TURN_ID)
        {
            self.turn_id = Some(turn.into());
        }
    }

    fn received(&mut self, m: &str, params: Option<&Value>) {
        if m == method::INITIALIZE
            && let Some(name) = params
                .and_then(|p| p.pointer("/clientInfo/name"))
                .and_then(Value::as_str)
        {
            self.client_name = Some(name.into());
        }
        if m == method::TURN_START {
            self.input = params.and_then(|p| p.get("input")).cloned();
        }
        if m == method::THREAD_START
            && let Some(cwd) = params.and_then(|p| p.get("cwd")).and_then(Value::as_str)
        {
            self.cwd = Some(cwd.into());
        }
    }

    fn verdict_points(&self) -> &'static [(&'static str, Option<&'static str>)] {
        &[
            (method::THREAD_STATUS_CHANGED, Some("/params/status/type")),
            (method::ITEM_COMPLETED, Some("/params/item/type")),
            (method::ERROR, None),
            (method::TURN_COMPLETED, Some("/params/turn/status")),
        ]
    }

    fn is_terminal_notification(&self, m: &str, params: Option<&Value>) -> bool {
        let (Some(params), Some(thread), Some(turn)) = (params, &self.thread_id, &self.turn_id)
        else {
            return false;
        };
        m == method::TURN_COMPLETED
            && params.get("threadId").and_then(Value::as_str) == Some(thread.as_str())
            && params.pointer("/turn/id").and_then(Value::as_str) == Some(turn.as_str())
    }

    /// `{"method", "params"?, "emittedAtMs"}`: the real server stamps every notification.
    fn notification(&self, method: &str, params: Option<Value>) -> Value {
        let mut m = Map::new();
        m.insert("method".into(), method.into());
        if let Some(p) = params {
            m.insert("params".into(), p);
        }
        m.insert("emittedAtMs".into(), self.now_ms().into());
        self.notifications.set(self.notifications.get() + 1);
        Value::Object(m)
    }
}
