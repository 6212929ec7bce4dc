//! The frames each Codex sugar step writes: the thread and turn it addresses, the turn's start
//! and end, the agent's message, the server's requests with the fields the schema requires.

use super::*;

impl CodexCodec {
    /// Fields the schema requires for an `ask` method beyond `threadId`/`turnId`/`itemId`, so
    /// the default frame is valid.
    pub(super) fn ask_defaults(&self, m: &str, params: &mut Map<String, Value>) {
        let now = self.now_ms();
        let defaults = match m {
            method::COMMAND_APPROVAL | method::FILE_CHANGE_APPROVAL => {
                json!({ "startedAtMs": now })
            }
            method::PERMISSIONS_APPROVAL => json!({"startedAtMs": now,
                "cwd": self.cwd.as_deref().unwrap_or("/"), "permissions": {}}),
            method::REQUEST_USER_INPUT => json!({"isBlocking": true, "questions": []}),
            method::MCP_ELICITATION => {
                // An elicitation is about no item.
                params.remove("itemId");
                json!({"serverName": "fake-mcp", "mode": "form", "message": "Input needed",
                    "requestedSchema": {"type": "object", "properties": {}}})
            }
            _ => json!({}),
        };
        if let Value::Object(d) = defaults {
            params.extend(d);
        }
    }

    /// The thread and turn a sugar step's frames name: the step's own, else the ones the fake
    /// handed out in its replies to `thread/start` and `turn/start`.
    pub(super) fn address(&self, step: &Step, action: &str) -> Result<Address, StepError> {
        // `what`: `thread` or `turn`, the step's key, the request that starts one, its id's field.
        let id = |own: &Option<String>, handed_out: &Option<String>, what: &str| {
            own.clone().or_else(|| handed_out.clone()).ok_or_else(|| {
                format!(
                    "`{action}` needs a {what} id: the fake has not replied to `{what}/start` \
                     with a `{what}.id` yet and the step sets no `{what}`"
                )
            })
        };
        let thread = id(&step.thread, &self.thread_id, "thread")?;
        let turn = id(&step.turn, &self.turn_id, "turn")?;
        Ok(Address { thread, turn })
    }

    /// `turn_started = true`, as the real server starts a turn: `turn/started`, then the task
    /// as a userMessage item, started and completed.
    pub(super) fn turn_started(&mut self, at: &Address) -> Sugar {
        let Address { thread, turn } = at;
        let mut turn_obj = self.turn_object(turn, "inProgress".into());
        turn_obj.insert("startedAt".into(), (self.now_ms() / 1000).into());
        let user = json!({"type": "userMessage", "id": self.next_item(), "clientId": null,
            "content": self.input.clone().unwrap_or(json!([]))});
        Sugar::Notifications(vec![
            (
                method::TURN_STARTED.into(),
                Some(json!({ "threadId": thread, "turn": turn_obj })),
            ),
            (
                method::ITEM_STARTED.into(),
                Some(json!({"item": user, "threadId": thread, "turnId": turn,
                    "startedAtMs": self.now_ms()})),
            ),
            (
                method::ITEM_COMPLETED.into(),
                Some(json!({"item": user, "threadId": thread, "turnId": turn,
                    "completedAtMs": self.now_ms()})),
            ),
        ])
    }

    /// `agent_message = { … }`, as the real server streams an agent message: started empty,
    /// the text as a delta, then completed. `broken`: the step is a violation on purpose.
    pub(super) fn agent_message(
        &mut self,
        at: &Address,
        fields: Map<String, Value>,
        broken: bool,
    ) -> Sugar {
        let Address { thread, turn } = at;
        let id = self.next_item();
        let mut item =
            json!({"type": "agentMessage", "id": id, "phase": null, "memoryCitation": null});
        if let Value::Object(m) = &mut item {
            m.extend(fields);
        }
        let text = item.get("text").cloned().unwrap_or(json!(""));
        let mut started = item.clone();
        started["text"] = json!("");
        let mut all = vec![(
            method::ITEM_STARTED.to_owned(),
            Some(json!({"item": started, "threadId": thread, "turnId": turn,
                "startedAtMs": self.now_ms()})),
        )];
        if text.as_str().is_some_and(|t| !t.is_empty()) {
            all.push((
                method::AGENT_MESSAGE_DELTA.to_owned(),
                Some(json!({"threadId": thread, "turnId": turn, "itemId": id,
                    "delta": text})),
            ));
        }
        // A message broken on purpose stays out of the turn's summary: only its own frame
        // carries the `violation` mark.
        if !broken {
            self.answers.push(item.clone());
        }
        all.push((
            method::ITEM_COMPLETED.to_owned(),
            Some(json!({"threadId": thread, "turnId": turn, "item": item,
                "completedAtMs": self.now_ms()})),
        ));
        Sugar::Notifications(all)
    }

    /// `turn_completed = { status, … }`, as the real server ends a turn (0.147.0 and 0.169.0,
    /// observed): the thread goes idle (`systemError` after a failed turn), a failed turn's
    /// error is announced on its own (`error`, not retried), then `turn/completed`.
    pub(super) fn turn_completed(
        &self,
        at: &Address,
        fields: Map<String, Value>,
    ) -> Result<Sugar, StepError> {
        let Address { thread, turn } = at;
        if !fields.contains_key("status") {
            return Err("`turn_completed` needs a `status`".into());
        }
        let turn_obj = self.completed_turn(turn, fields);
        let failed = turn_obj.get("status").and_then(Value::as_str) == Some("failed");
        let status = if failed { "systemError" } else { "idle" };
        let mut all = vec![(
            method::THREAD_STATUS_CHANGED.to_owned(),
            Some(json!({ "threadId": thread, "status": { "type": status } })),
        )];
        if failed && let Some(error @ Value::Object(_)) = turn_obj.get("error") {
            all.push((
                method::ERROR.to_owned(),
                Some(json!({ "error": error, "willRetry": false,
                    "threadId": thread, "turnId": turn })),
            ));
        }
        all.push((
            method::TURN_COMPLETED.to_owned(),
            Some(json!({ "threadId": thread, "turn": turn_obj })),
        ));
        Ok(Sugar::Notifications(all))
    }

    /// The `Turn` a `turn/completed` carries: the script's fields over a zero-length turn that
    /// ends now, a completed one listing the turn's agent messages.
    pub(super) fn completed_turn(
        &self,
        turn: &str,
        fields: Map<String, Value>,
    ) -> Map<String, Value> {
        let mut turn_obj = self.turn_object(turn, Value::Null);
        // Times as the real server writes them (seconds; a turn of zero length here).
        let now = self.now_ms() / 1000;
        turn_obj.insert("startedAt".into(), now.into());
        turn_obj.insert("completedAt".into(), now.into());
        turn_obj.insert("durationMs".into(), 0.into());
        if fields.get("status").and_then(Value::as_str) == Some("completed") {
            turn_obj.insert("items".into(), Value::Array(self.answers.clone()));
            turn_obj.insert("itemsView".into(), "summary".into());
        }
        turn_obj.extend(fields);
        if let Some(Value::Object(error)) = turn_obj.get_mut("error") {
            error.entry("additionalDetails").or_insert(Value::Null);
            if self.v0_169() {
                error.entry("misalignment").or_insert(Value::Null);
            }
        }
        turn_obj
    }

    /// `ask = "<method>"`: a server request about a new item of the turn, valid by default;
    /// the step's `params` override.
    pub(super) fn ask(
        &mut self,
        at: &Address,
        m: &str,
        step: &Step,
        action: &str,
    ) -> Result<Sugar, StepError> {
        let mut params = Map::new();
        params.insert("threadId".into(), at.thread.clone().into());
        params.insert("turnId".into(), at.turn.clone().into());
        params.insert("itemId".into(), self.next_item().into());
        self.ask_defaults(m, &mut params);
        if let Some(over) = &step.params {
            params.extend(table(action, over, "of params")?);
        }
        Ok(Sugar::Request {
            method: m.to_owned(),
            params: Some(Value::Object(params)),
            answer: step.answer.clone(),
        })
    }
}

/// Whether a server request's param is the runtime's own payload (commands, tool names and
/// arguments, MCP servers and messages, questions): all but the decisions it offers and the ids
/// that address it.
pub(super) fn is_request_payload(key: &str) -> bool {
    !matches!(key, "availableDecisions" | "threadId" | "turnId" | "itemId")
}

/// The thread and turn a sugar step's frames name.
pub(super) struct Address {
    thread: String,
    turn: String,
}

/// A sugar key's value as the table it must be (`shape` says which, in the error).
pub(super) fn table(action: &str, v: &Value, shape: &str) -> Result<Map<String, Value>, StepError> {
    match v {
        Value::Object(m) => Ok(m.clone()),
        other => Err(format!("`{action}` is a table {shape}, not {other}").into()),
    }
}
