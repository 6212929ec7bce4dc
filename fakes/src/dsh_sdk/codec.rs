//! The DSH SDK codec: JSON-RPC 2.0 framing plus the DSH SDK sugar steps.

use std::collections::HashMap;

use conform_protocol::script::{RpcError, Step};
use conform_protocol::vocab::Provider;
use serde_json::{Value, json};

use super::{event, method};
use crate::codec::{Codec, Sugar, string_leaves};

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

    /// A `session.event` for `session`; `seq` and `time` are filled in when absent (every event
    /// takes the session's next `seq`, used or not), and so are a session-log receipt's
    /// `sessionId` and `throughSeq` (the event before it) and a job's `owner` (the session). A
    /// non-object event is sent as written.
    fn event(&mut self, session: &str, mut ev: Value) -> Sugar {
        self.follow_numbering(&ev);
        let seq = self.seq.entry(session.to_owned()).or_insert(0);
        if let Value::Object(m) = &mut ev {
            m.entry("seq").or_insert_with(|| (*seq).into());
            m.entry("time").or_insert_with(|| 0.into());
            let ty = m
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            if let Some(Value::Object(data)) = m.get_mut("data") {
                if ty == event::LOG_DELIVERY_ACCEPTED {
                    data.entry("sessionId").or_insert_with(|| session.into());
                    data.entry("throughSeq")
                        .or_insert_with(|| seq.saturating_sub(1).into());
                } else if ty.starts_with("job/") {
                    // A job is owned by the session whose turn started it.
                    data.entry("owner").or_insert_with(|| session.into());
                }
            }
        }
        *seq += 1;
        Sugar::Notify {
            method: method::SESSION_EVENT.into(),
            params: Some(json!({ "sessionId": session, "event": ev })),
        }
    }

    /// Takes the turn and step a scripted `turn/start` or `step/start` names.
    fn follow_numbering(&mut self, ev: &Value) {
        let number = |key: &str| ev["data"].get(key).and_then(Value::as_u64);
        match ev.get("type").and_then(Value::as_str) {
            Some("turn/start") => {
                self.turn_step = (number("turn").unwrap_or(self.turn_step.0), 1);
            }
            Some("step/start") => {
                self.turn_step = (
                    number("turn").unwrap_or(self.turn_step.0),
                    number("step").unwrap_or(self.turn_step.1),
                );
            }
            _ => {}
        }
    }

    fn typed_event(&mut self, session: &str, kind: &str, data: Value) -> Sugar {
        self.event(session, json!({ "type": kind, "data": data }))
    }

    /// An `assistant/message` or `assistant/attempt` event for `session` — speaking 0.1.1
    /// (`chunks`), after the text deltas of its recorded stream, each as an `assistant/chunk`
    /// event of its own, as that release streamed the model's text before recording it.
    fn model_event(&mut self, session: &str, ev: Value, chunks: bool) -> Sugar {
        let deltas = if chunks { text_deltas(&ev) } else { Vec::new() };
        if deltas.is_empty() {
            return self.event(session, ev);
        }
        let mut frames: Vec<Sugar> = deltas
            .into_iter()
            .map(|data| self.typed_event(session, event::ASSISTANT_CHUNK, data))
            .collect();
        frames.push(self.event(session, ev));
        Sugar::Notifications(
            frames
                .into_iter()
                .map(|s| match s {
                    Sugar::Notify { method, params } => (method, params),
                    other => unreachable!("an event is a notification, not {other:?}"),
                })
                .collect(),
        )
    }
}

/// The `assistant/chunk` data (`{turn, step, chunk: {type: "text-delta", index, text}}`, the
/// shape of the 0.1.1-rc.2 example exchange) for each text delta recorded in the stream of an
/// `assistant/message` or `assistant/attempt` event: each text of a `text-chunks` run, and each
/// raw `text-delta` chunk, in order. Nothing for other events, or for a stream without text.
/// Other chunk kinds (reasoning, tool calls, block bounds, usage, finish) are not streamed: the
/// research shows text-deltas only.
fn text_deltas(ev: &Value) -> Vec<Value> {
    let kind = ev.get("type").and_then(Value::as_str);
    if !matches!(
        kind,
        Some(event::ASSISTANT_MESSAGE | event::ASSISTANT_ATTEMPT)
    ) {
        return Vec::new();
    }
    let data = &ev["data"];
    let at = |key: &str| data.get(key).filter(|v| v.is_u64()).cloned();
    let (turn, step) = (
        at("turn").unwrap_or(0.into()),
        at("step").unwrap_or(0.into()),
    );
    let mut chunks = Vec::new();
    for entry in data["stream"].as_array().into_iter().flatten() {
        match entry.get("type").and_then(Value::as_str) {
            Some("text-chunks") => {
                let index = entry.get("index").cloned().unwrap_or(0.into());
                for text in entry["texts"].as_array().into_iter().flatten() {
                    chunks.push(json!({"type": "text-delta", "index": index, "text": text}));
                }
            }
            Some("chunk") if entry["chunk"]["type"] == "text-delta" => {
                chunks.push(entry["chunk"].clone());
            }
            _ => {}
        }
    }
    chunks
        .into_iter()
        .map(|chunk| json!({"turn": turn, "step": step, "chunk": chunk}))
        .collect()
}

/// The failure a scripted `attempt` ends with: the real runtime's message for a model stream
/// cut off mid-way (child text: it must never reach the model).
pub const ATTEMPT_FAILURE: &str = "DeepSeek Messages stream ended before message_stop";

/// What the real runtime records of the model response it replays (`replayState`).
fn replay_state() -> Value {
    json!({"response": {"kind": "deepseek-messages", "version": 1, "model": "deepseek-v4-flash"},
        "blocks": [{"type": "text"}]})
}

fn usage() -> Value {
    json!({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3})
}

/// A model stream as the real runtime records it on `assistant/message` (`complete`: the
/// block ends, usage, `finish` stop) and on a failed `assistant/attempt` (the block is cut off,
/// `finish` with the failure): the text block's chunks, none for `""`.
fn stream(text: &str, complete: bool, reason: Value) -> Value {
    let mut entries = Vec::new();
    if !text.is_empty() {
        entries.push(json!({"type": "chunk", "time": 0,
            "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}));
        entries.push(
            json!({"type": "text-chunks", "time0": 0, "index": 0, "dt": [], "texts": [text]}),
        );
        if complete {
            entries.push(json!({"type": "chunk", "time": 0,
                "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}}}));
        }
    }
    let mut finish = json!({"type": "finish", "reason": reason});
    if complete {
        entries.push(
            json!({"type": "chunk", "time": 0, "chunk": {"type": "usage", "usage": usage()}}),
        );
        finish["replayState"] = replay_state();
    }
    entries.push(json!({"type": "chunk", "time": 0, "chunk": finish}));
    Value::Array(entries)
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

    fn set_product_version(&mut self, version: Option<&str>) -> Result<(), String> {
        self.version = super::product_version(version)?;
        Ok(())
    }

    fn product_versions(&self) -> Vec<&'static str> {
        super::PRODUCT_VERSIONS.to_vec()
    }

    fn provider(&self) -> Provider {
        Provider::DshSdk
    }

    fn sugar(&mut self, step: &Step) -> Result<Option<Sugar>, String> {
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
                    ));
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

    fn validate_frame(&self, frame: &Value, answers: Option<&str>) -> Result<(), String> {
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
mod tests {
    use super::*;

    fn step(json: Value) -> Step {
        serde_json::from_value(json).unwrap()
    }

    fn sugar(c: &mut DshSdkCodec, s: Value) -> Value {
        match c.sugar(&step(s)).unwrap().unwrap() {
            Sugar::Notify { method, params } => json!({"method": method, "params": params}),
            other => panic!("{other:?}"),
        }
    }

    fn prompted() -> DshSdkCodec {
        let mut c = DshSdkCodec::new();
        c.received(
            "session/prompt",
            Some(&json!({"sessionId": "s-1", "contentBlocks": [{"type": "text", "text": "go"}]})),
        );
        c
    }

    #[test]
    fn sugar_before_a_prompt_needs_a_session() {
        let mut c = DshSdkCodec::new();
        let e = c.sugar(&step(json!({"delta": "x"}))).unwrap_err();
        assert!(e.contains("`delta` needs a session"), "{e}");
        let s = sugar(&mut c, json!({"status": "running", "session": "other"}));
        assert_eq!(s["params"]["sessionId"], "other");
        assert_eq!(c.sugar(&step(json!({"expect": "x"}))).unwrap(), None);
    }

    #[test]
    fn seq_counts_per_session_and_explicit_fields_stay() {
        let mut c = prompted();
        let a = sugar(&mut c, json!({"receipt": "msg-1"}));
        assert_eq!(
            a["params"]["event"],
            json!({"type": "agent/inbox/spliced", "seq": 0, "time": 0, "data": {
                "target": "next-turn", "start": 0, "inserted": [{"id": "msg-1", "role": "user",
                "content": [{"type": "text", "text": "go"}], "source": {"kind": "user"}}]}})
        );
        let other = sugar(&mut c, json!({"delta": "x", "session": "child"}));
        assert_eq!(other["params"]["event"]["seq"], 0);
        let b = sugar(
            &mut c,
            json!({"event": {"type": "x/y", "seq": 9, "data": {}}}),
        );
        assert_eq!(
            b["params"]["event"],
            json!({"type": "x/y", "seq": 9, "time": 0, "data": {}})
        );
        let d = sugar(&mut c, json!({"message": ""}));
        assert_eq!(d["params"]["event"]["seq"], 2);
        assert_eq!(
            d["params"]["event"]["data"]["message"]["content"],
            json!([])
        );
        assert_eq!(d["params"]["event"]["data"]["message"]["id"], "m1");
        let raw = sugar(&mut c, json!({"event": "not an object"}));
        assert_eq!(raw["params"]["event"], "not an object");
    }

    /// Every frame one sugar step writes, as `{method, params}`.
    fn frames(c: &mut DshSdkCodec, s: Value) -> Vec<Value> {
        match c.sugar(&step(s)).unwrap().unwrap() {
            Sugar::Notify { method, params } => vec![json!({"method": method, "params": params})],
            Sugar::Notifications(all) => all
                .into_iter()
                .map(|(method, params)| json!({"method": method, "params": params}))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    fn kinds(frames: &[Value]) -> Vec<String> {
        frames
            .iter()
            .map(|f| f["params"]["event"]["type"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn product_versions_are_the_default_and_0_1_1() {
        let mut c = DshSdkCodec::new();
        assert_eq!(c.product_version(), "0.2.1rc2");
        c.set_product_version(Some("0.1.1")).unwrap();
        assert_eq!(c.product_version(), "0.1.1");
        c.set_product_version(None).unwrap();
        assert_eq!(c.product_version(), "0.2.1rc2");
        assert_eq!(
            c.set_product_version(Some("0.1.0")),
            Err("unknown DSH SDK runtime version \"0.1.0\" (known: 0.2.1rc2, 0.1.1)".into())
        );
        assert_eq!(c.speaks(None), "DSH SDK runtime 0.2.1rc2");
        assert_eq!(c.speaks(Some("0.1.1")), "DSH SDK runtime 0.1.1");
    }

    #[test]
    fn at_0_1_1_the_models_text_streams_as_chunks_before_it_is_recorded() {
        let mut c = prompted();
        c.set_product_version(Some("0.1.1")).unwrap();
        let m = frames(&mut c, json!({"message": "hi"}));
        assert_eq!(kinds(&m), ["assistant/chunk", "assistant/message"]);
        assert_eq!(
            m[0]["params"],
            json!({"sessionId": "s-1", "event": {"type": "assistant/chunk", "seq": 0, "time": 0,
                "data": {"turn": 1, "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": "hi"}}}})
        );
        assert_eq!(m[1]["params"]["event"]["seq"], 1);
        // The message itself is the default version's, seq apart.
        let mut d = prompted();
        let mut plain = frames(&mut d, json!({"message": "hi"})).remove(0);
        plain["params"]["event"]["seq"] = 1.into();
        assert_eq!(m[1], plain);
        // A failed attempt streamed its text too; empty text streamed nothing.
        let a = frames(&mut c, json!({"attempt": "part"}));
        assert_eq!(kinds(&a), ["assistant/chunk", "assistant/attempt"]);
        assert_eq!(a[0]["params"]["event"]["data"]["chunk"]["text"], "part");
        assert_eq!(
            kinds(&frames(&mut c, json!({"message": ""}))),
            ["assistant/message"]
        );
        assert_eq!(
            kinds(&frames(&mut c, json!({"attempt": ""}))),
            ["assistant/attempt"]
        );
        // Another session's text streams to that session.
        let o = frames(&mut c, json!({"message": "x", "session": "child"}));
        assert_eq!(o[0]["params"]["sessionId"], "child");
        assert_eq!(o[0]["params"]["event"]["seq"], 0);
    }

    #[test]
    fn at_0_1_1_a_written_events_recorded_text_deltas_stream_first() {
        let mut c = prompted();
        c.set_product_version(Some("0.1.1")).unwrap();
        let ev = json!({"event": {"type": "assistant/attempt", "data": {"turn": 1, "step": 2,
            "stream": [
                {"type": "chunk", "time": 0, "chunk": {"type": "reasoning-delta", "index": 0, "text": "think"}},
                {"type": "chunk", "time": 0, "chunk": {"type": "text-delta", "index": 1, "text": "a"}},
                {"type": "text-chunks", "time0": 0, "index": 1, "dt": [0], "texts": ["b", "c"]},
                {"type": "chunk", "time": 0, "chunk": {"type": "finish", "reason": {"kind": "error"}}}]}}});
        let f = frames(&mut c, ev);
        assert_eq!(kinds(&f)[..3], ["assistant/chunk"; 3]);
        let chunks: Vec<Value> = f[..3]
            .iter()
            .map(|f| f["params"]["event"]["data"].clone())
            .collect();
        assert_eq!(
            chunks,
            ["a", "b", "c"].map(|t| json!({"turn": 1, "step": 2,
                "chunk": {"type": "text-delta", "index": 1, "text": t}}))
        );
        assert_eq!(f[3]["params"]["event"]["type"], "assistant/attempt");
        // No text, another event, a step broken on purpose: as written, alone.
        let tool = json!({"event": {"type": "assistant/message", "data": {"message": {"content": []},
            "stream": [{"type": "tool-call-chunks", "time0": 0, "index": 0, "dt": [], "args": ["{}"]}]}}});
        assert_eq!(frames(&mut c, tool).len(), 1);
        assert_eq!(
            frames(&mut c, json!({"event": {"type": "step/end", "data": {}}})).len(),
            1
        );
        let broken = json!({"message": "x", "violation": "on purpose"});
        assert_eq!(kinds(&frames(&mut c, broken)), ["assistant/message"]);
        // `delta` is a chunk as written, at every version.
        assert_eq!(
            kinds(&frames(&mut c, json!({"delta": "d"}))),
            ["assistant/chunk"]
        );
    }

    #[test]
    fn at_the_default_version_no_chunk_is_added() {
        let mut c = prompted();
        for s in [
            json!({"message": "hi"}),
            json!({"attempt": "part"}),
            json!({"event": {"type": "assistant/attempt", "data": {"stream": [
                {"type": "chunk", "time": 0, "chunk": {"type": "text-delta", "index": 0, "text": "a"}}]}}}),
        ] {
            assert_eq!(frames(&mut c, s).len(), 1);
        }
    }

    #[test]
    fn turn_end_and_terminal() {
        let mut c = prompted();
        let t = sugar(
            &mut c,
            json!({"turn_end": {"kind": "aborted", "reason": "disposed"}}),
        );
        assert_eq!(
            t["params"]["event"]["data"],
            json!({"turn": 1, "reason": {"kind": "aborted", "reason": "disposed"}})
        );
        assert!(c.is_terminal_notification("session.event", Some(&t["params"])));
        let child = sugar(&mut c, json!({"turn_end": "completed", "session": "child"}));
        assert!(!c.is_terminal_notification("session.event", Some(&child["params"])));
        assert!(c.sugar(&step(json!({"turn_end": 3}))).is_err());
    }
}
