//! The frames each DSH SDK sugar step writes: `session.event`s numbered and stamped as the
//! real runtime numbers them, and the model streams it records (the text block's chunks, the
//! 0.1.1 `assistant/chunk` deltas).

use super::*;

impl DshSdkCodec {
    /// A `session.event` for `session`; `seq` and `time` are filled in when absent (every event
    /// takes the session's next `seq`, used or not), and so are a session-log receipt's
    /// `sessionId` and `throughSeq` (the event before it) and a job's `owner` (the session). A
    /// non-object event is sent as written.
    pub(super) fn event(&mut self, session: &str, mut ev: Value) -> Sugar {
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
    pub(super) fn follow_numbering(&mut self, ev: &Value) {
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

    pub(super) fn typed_event(&mut self, session: &str, kind: &str, data: Value) -> Sugar {
        self.event(session, json!({ "type": kind, "data": data }))
    }

    /// An `assistant/message` or `assistant/attempt` event for `session` — speaking 0.1.1
    /// (`chunks`), after the text deltas of its recorded stream, each as an `assistant/chunk`
    /// event of its own, as that release streamed the model's text before recording it.
    pub(super) fn model_event(&mut self, session: &str, ev: Value, chunks: bool) -> Sugar {
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
pub(super) fn text_deltas(ev: &Value) -> Vec<Value> {
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
pub(super) fn replay_state() -> Value {
    json!({"response": {"kind": "deepseek-messages", "version": 1, "model": "deepseek-v4-flash"},
        "blocks": [{"type": "text"}]})
}

pub(super) fn usage() -> Value {
    json!({"inputTokens": 1, "outputTokens": 2, "totalTokens": 3})
}

/// A model stream as the real runtime records it on `assistant/message` (`complete`: the
/// block ends, usage, `finish` stop) and on a failed `assistant/attempt` (the block is cut off,
/// `finish` with the failure): the text block's chunks, none for `""`.
pub(super) fn stream(text: &str, complete: bool, reason: Value) -> Value {
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
