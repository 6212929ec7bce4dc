//! One prompt's view of the runtime's notifications (the SDK client's `HarnessSession.run()`),
//! as a pure state machine.
//!
//! The collector exists from the moment the prompt is sent. Until the prompt's `messageId` is
//! known every notification is queued (the response may come before or after them). Then, in
//! wire order: everything is skipped until the receipt (`agent/inbox/spliced` inserting the
//! message), and from the receipt on the run's own session events are validated and folded
//! until `session.status` `idle`. Notifications of other sessions are ignored entirely.

use serde_json::{Value, json};

/// Where the prompt stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Still waiting for the receipt or for `idle`.
    Running,
    /// `session.status` `idle` after the receipt: the turn is over.
    Idle,
    /// A collected event was malformed (an `SdkProtocolError`); host-only explanation.
    Violation(String),
}

/// The output selection rule (`AssistantOutputFold`): the last non-empty `assistant/message`
/// content, else the streamed `text-delta` text as one block, else nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OutputFold {
    message: Option<Vec<Value>>,
    /// Streamed text: the latest non-empty failed attempt's, or the legacy `text-delta`s since.
    partial: String,
    /// An `assistant/attempt` closed the text in `partial`: the next delta starts a new attempt.
    attempt_closed: bool,
    /// Seeded defect `partial-from-chunks-only`: failed attempts are not read.
    ignore_attempts: bool,
}

impl OutputFold {
    /// A failed model attempt's streamed text. The runtime retries some failures, each a new
    /// attempt whose stream starts over, so the latest non-empty attempt is the partial text
    /// (the same "last non-empty" rule as for messages); it replaces, never appends.
    pub fn attempt(&mut self, text: &str) {
        if self.ignore_attempts {
            return;
        }
        if !text.is_empty() {
            self.partial = text.to_owned();
        }
        self.attempt_closed = true;
    }

    /// A message's content; empty (usage-only) content never replaces earlier output.
    pub fn message(&mut self, content: &[Value]) {
        if !content.is_empty() {
            self.message = Some(content.to_vec());
        }
    }

    pub fn delta(&mut self, text: &str) {
        if std::mem::take(&mut self.attempt_closed) {
            self.partial.clear();
        }
        self.partial.push_str(text);
    }

    pub fn collect(&self) -> Vec<Value> {
        match &self.message {
            Some(content) => content.clone(),
            None if self.partial.is_empty() => Vec::new(),
            None => vec![json!({"type": "text", "text": self.partial})],
        }
    }
}

pub struct Collector {
    session_id: String,
    message_id: Option<String>,
    /// Notifications seen before the `messageId` was known, in wire order.
    queue: Vec<(String, Value)>,
    receipt_seen: bool,
    fold: OutputFold,
    /// `data.reason` of the last collected `turn/end` (`Null` when it had none).
    last_turn_end: Option<Value>,
    phase: Phase,
}

impl Collector {
    pub fn new(session_id: String, partial_from_chunks_only: bool) -> Self {
        Collector {
            session_id,
            message_id: None,
            queue: Vec::new(),
            receipt_seen: false,
            fold: OutputFold {
                ignore_attempts: partial_from_chunks_only,
                ..OutputFold::default()
            },
            last_turn_end: None,
            phase: Phase::Running,
        }
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// The output selected so far (partial output on failure or cancel).
    pub fn output(&self) -> Vec<Value> {
        self.fold.collect()
    }

    pub fn last_turn_end(&self) -> Option<&Value> {
        self.last_turn_end.as_ref()
    }

    /// Seeded defect `turn-end-ends-the-run`: the reason of the last `turn/end` of this session
    /// on the wire, consumed or still queued behind the prompt's response.
    pub fn any_turn_end(&self) -> Option<Value> {
        let queued = self.queue.iter().rev().find_map(|(m, p)| {
            let event = p.get("event")?;
            (m == "session.event"
                && p.get("sessionId").and_then(Value::as_str) == Some(self.session_id.as_str())
                && event.get("type").and_then(Value::as_str) == Some("turn/end"))
            .then(|| event["data"].get("reason").cloned().unwrap_or(Value::Null))
        });
        queued.or_else(|| self.last_turn_end.clone())
    }

    /// One inbound notification.
    pub fn push(&mut self, method: &str, params: Value) {
        if self.message_id.is_none() {
            self.queue.push((method.to_owned(), params));
        } else {
            self.consume(method, &params);
        }
    }

    /// The prompt's response arrived: replay the queue, then consume as things arrive.
    pub fn accept(&mut self, message_id: &str) {
        self.message_id = Some(message_id.to_owned());
        for (method, params) in std::mem::take(&mut self.queue) {
            self.consume(&method, &params);
        }
    }

    fn consume(&mut self, method: &str, params: &Value) {
        if self.phase != Phase::Running {
            return;
        }
        if params.get("sessionId").and_then(Value::as_str) != Some(self.session_id.as_str()) {
            return;
        }
        match method {
            "session.event" if !self.receipt_seen => {
                self.receipt_seen = self.is_receipt(params.get("event"));
            }
            "session.event" => self.collect(params.get("event")),
            "session.status"
                if self.receipt_seen
                    && params.get("status").and_then(Value::as_str) == Some("idle") =>
            {
                self.phase = Phase::Idle;
            }
            _ => {}
        }
    }

    fn is_receipt(&self, event: Option<&Value>) -> bool {
        let Some(event) = event else { return false };
        let Some(id) = self.message_id.as_deref() else {
            return false;
        };
        event.get("type").and_then(Value::as_str) == Some("agent/inbox/spliced")
            && event["data"]["inserted"].as_array().is_some_and(|ins| {
                ins.iter()
                    .any(|m| m.get("id").and_then(Value::as_str) == Some(id))
            })
    }

    fn collect(&mut self, event: Option<&Value>) {
        let Some(kind) = event
            .filter(|e| e.is_object())
            .and_then(|e| e.get("type"))
            .and_then(Value::as_str)
        else {
            self.phase = Phase::Violation("session.event carried no event envelope".into());
            return;
        };
        let event = event.expect("checked above");
        match kind {
            "assistant/message" => match valid_content(&event["data"]["message"]["content"]) {
                // An empty (usage-only) message's own stream is streamed text like a failed
                // attempt's: it never replaces a message, and is kept when none comes.
                Some([]) => self.fold.attempt(&stream_text(&event["data"]["stream"])),
                Some(content) => self.fold.message(content),
                None => {
                    self.phase =
                        Phase::Violation("assistant/message event carried malformed content".into())
                }
            },
            "assistant/attempt" => self.fold.attempt(&stream_text(&event["data"]["stream"])),
            "assistant/chunk" => {
                let chunk = &event["data"]["chunk"];
                if chunk["type"] == "text-delta"
                    && let Some(text) = chunk["text"].as_str()
                {
                    self.fold.delta(text);
                }
            }
            "turn/end" => {
                self.last_turn_end =
                    Some(event["data"].get("reason").cloned().unwrap_or(Value::Null));
            }
            _ => {}
        }
    }
}

/// The assistant text of a recorded model stream (`data.stream` of `assistant/attempt` and
/// `assistant/message`): its `text-chunks` runs and any raw `text-delta` chunks, in order.
fn stream_text(stream: &Value) -> String {
    let mut text = String::new();
    for entry in stream.as_array().into_iter().flatten() {
        match entry.get("type").and_then(Value::as_str) {
            Some("text-chunks") => entry["texts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .for_each(|t| text.push_str(t)),
            Some("chunk") if entry["chunk"]["type"] == "text-delta" => {
                text.push_str(entry["chunk"]["text"].as_str().unwrap_or_default());
            }
            _ => {}
        }
    }
    text
}

/// `content` as an array of objects that each carry a string `type`.
fn valid_content(content: &Value) -> Option<&[Value]> {
    let blocks = content.as_array()?;
    blocks
        .iter()
        .all(|b| b.get("type").is_some_and(Value::is_string))
        .then_some(blocks.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SID: &str = "session-0123456789abcdef0123456789abcdef";

    fn ev(event: Value) -> (String, Value) {
        (
            "session.event".into(),
            json!({"sessionId": SID, "event": event}),
        )
    }
    fn ev_for(sid: &str, event: Value) -> (String, Value) {
        (
            "session.event".into(),
            json!({"sessionId": sid, "event": event}),
        )
    }
    fn status(s: &str) -> (String, Value) {
        (
            "session.status".into(),
            json!({"sessionId": SID, "status": s}),
        )
    }
    fn receipt(id: &str) -> (String, Value) {
        ev(json!({"type": "agent/inbox/spliced", "seq": 0, "time": 0,
            "data": {"target": "next-turn", "start": 0,
                     "inserted": [{"id": id, "role": "user", "content": [], "source": {"kind": "user"}}]}}))
    }
    fn delta(text: &str) -> (String, Value) {
        ev(
            json!({"type": "assistant/chunk", "data": {"turn": 0, "step": 0,
            "chunk": {"type": "text-delta", "index": 0, "text": text}}}),
        )
    }
    fn message(content: Value) -> (String, Value) {
        ev(
            json!({"type": "assistant/message", "data": {"turn": 0, "step": 0,
            "message": {"id": "m", "role": "assistant", "content": content}}}),
        )
    }
    fn text(t: &str) -> Value {
        json!({"type": "text", "text": t})
    }
    fn turn_end(reason: Value) -> (String, Value) {
        ev(json!({"type": "turn/end", "data": {"turn": 0, "reason": reason}}))
    }

    /// Feed `notes`, with the response (`messageId` "m1") after the first `response_at` of them.
    fn run(notes: &[(String, Value)], response_at: usize) -> Collector {
        let mut c = Collector::new(SID.into(), false);
        for (i, (m, p)) in notes.iter().enumerate() {
            if i == response_at {
                c.accept("m1");
            }
            c.push(m, p.clone());
        }
        if response_at >= notes.len() {
            c.accept("m1");
        }
        c
    }

    /// The same notifications give the same outcome whether the response comes first, in the
    /// middle or last.
    fn every_order(notes: &[(String, Value)]) -> Collector {
        let last = run(notes, notes.len());
        for at in 0..notes.len() {
            let c = run(notes, at);
            assert_eq!(c.phase(), last.phase(), "response at {at}");
            assert_eq!(c.output(), last.output(), "response at {at}");
            assert_eq!(c.last_turn_end(), last.last_turn_end(), "response at {at}");
        }
        last
    }

    #[test]
    fn completed_turn() {
        let c = every_order(&[
            receipt("m1"),
            status("running"),
            delta("hi"),
            message(json!([text("hi")])),
            turn_end(json!({"kind": "completed"})),
            status("idle"),
        ]);
        assert_eq!(c.phase(), &Phase::Idle);
        assert_eq!(c.output(), vec![text("hi")]);
        assert_eq!(c.last_turn_end(), Some(&json!({"kind": "completed"})));
    }

    #[test]
    fn text_before_the_receipt_is_ignored() {
        let c = every_order(&[
            status("idle"),
            delta("SECRET early"),
            message(json!([text("SECRET early message")])),
            turn_end(json!({"kind": "error"})),
            receipt("other-message"),
            receipt("m1"),
            delta("late"),
            status("idle"),
        ]);
        assert_eq!(c.phase(), &Phase::Idle);
        assert_eq!(c.output(), vec![text("late")]);
        assert_eq!(c.last_turn_end(), None);
    }

    #[test]
    fn other_sessions_are_ignored_entirely() {
        let other = "session-child";
        let c = every_order(&[
            ev_for(
                other,
                json!({"type": "agent/inbox/spliced",
                "data": {"inserted": [{"id": "m1"}]}}),
            ),
            receipt("m1"),
            ev_for(
                other,
                json!({"type": "assistant/message",
                "data": {"message": {"content": [text("SECRET child answer")]}}}),
            ),
            ev_for(other, json!("not an envelope")),
            ev_for(
                other,
                json!({"type": "turn/end", "data": {"reason": {"kind": "error"}}}),
            ),
            (
                "session.status".into(),
                json!({"sessionId": other, "status": "idle"}),
            ),
            (
                "subagent.started".into(),
                json!({"parentSessionId": SID, "childSessionId": other}),
            ),
            (
                "session.event".into(),
                json!({"event": {"type": "assistant/message"}}),
            ),
            delta("root"),
            turn_end(json!({"kind": "max-tokens"})),
            status("idle"),
        ]);
        assert_eq!(c.phase(), &Phase::Idle);
        assert_eq!(c.output(), vec![text("root")]);
        assert_eq!(c.last_turn_end(), Some(&json!({"kind": "max-tokens"})));
    }

    #[test]
    fn output_selection() {
        // The last non-empty message wins over streamed text and earlier messages; its blocks
        // are kept as they are.
        let c = every_order(&[
            receipt("m1"),
            delta("streamed"),
            message(json!([text("first")])),
            message(json!([text("a"), {"type": "text", "text": "b"}])),
            status("idle"),
        ]);
        assert_eq!(c.output(), vec![text("a"), text("b")]);
        // An empty, usage-only message does not replace the streamed text.
        let c = every_order(&[
            receipt("m1"),
            delta("partial "),
            delta("text"),
            message(json!([])),
            turn_end(json!({"kind": "max-tokens"})),
            status("idle"),
        ]);
        assert_eq!(c.output(), vec![text("partial text")]);
        // … nor an earlier non-empty message.
        let c = every_order(&[
            receipt("m1"),
            message(json!([text("kept")])),
            message(json!([])),
            status("idle"),
        ]);
        assert_eq!(c.output(), vec![text("kept")]);
        // Nothing at all: [].
        let c = every_order(&[receipt("m1"), status("idle")]);
        assert_eq!(c.output(), Vec::<Value>::new());
        // Non-text-delta chunks contribute nothing.
        let c = every_order(&[
            receipt("m1"),
            ev(
                json!({"type": "assistant/chunk", "data": {"chunk": {"type": "reasoning-delta", "text": "SECRET"}}}),
            ),
            status("idle"),
        ]);
        assert_eq!(c.output(), Vec::<Value>::new());
    }

    #[test]
    fn last_turn_end_wins() {
        let c = every_order(&[
            receipt("m1"),
            turn_end(json!({"kind": "error"})),
            turn_end(json!({"kind": "completed"})),
            ev(json!({"type": "turn/end", "data": {}})),
            status("idle"),
        ]);
        assert_eq!(c.last_turn_end(), Some(&Value::Null));
    }

    #[test]
    fn malformed_events_are_protocol_violations() {
        for bad in [
            json!("x"),
            json!({"data": {}}),
            json!({"type": 3}),
            Value::Null,
        ] {
            let c = every_order(&[
                receipt("m1"),
                delta("kept"),
                ev(bad.clone()),
                status("idle"),
            ]);
            assert_eq!(
                c.phase(),
                &Phase::Violation("session.event carried no event envelope".into()),
                "{bad}"
            );
            // Partial output before the violation is kept.
            assert_eq!(c.output(), vec![text("kept")]);
        }
        let missing = ("session.event".to_string(), json!({"sessionId": SID}));
        let c = every_order(&[receipt("m1"), missing, status("idle")]);
        assert!(matches!(c.phase(), Phase::Violation(_)));
        for bad in [
            json!("text"),
            json!([{"text": "no type"}]),
            json!(["x"]),
            json!([{"type": 1}]),
        ] {
            let c = every_order(&[receipt("m1"), message(bad.clone()), status("idle")]);
            assert_eq!(
                c.phase(),
                &Phase::Violation("assistant/message event carried malformed content".into()),
                "{bad}"
            );
        }
        let no_data = ev(json!({"type": "assistant/message"}));
        let c = every_order(&[receipt("m1"), no_data, status("idle")]);
        assert!(matches!(c.phase(), Phase::Violation(_)));
        // Before the receipt nothing is validated.
        let c = every_order(&[
            ev(json!("x")),
            message(json!("bad")),
            receipt("m1"),
            status("idle"),
        ]);
        assert_eq!(c.phase(), &Phase::Idle);
    }

    #[test]
    fn nothing_after_idle_counts() {
        let c = every_order(&[
            receipt("m1"),
            delta("a"),
            status("idle"),
            delta("SECRET after"),
            ev(json!("broken")),
            turn_end(json!({"kind": "error"})),
        ]);
        assert_eq!(c.phase(), &Phase::Idle);
        assert_eq!(c.output(), vec![text("a")]);
        assert_eq!(c.last_turn_end(), None);
    }

    #[test]
    fn no_response_no_attribution() {
        let mut c = Collector::new(SID.into(), false);
        for (m, p) in [receipt("m1"), delta("x"), status("idle")] {
            c.push(&m, p);
        }
        assert_eq!(c.phase(), &Phase::Running);
        assert_eq!(c.output(), Vec::<Value>::new());
    }
}
