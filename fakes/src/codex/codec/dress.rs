//! A later version's frames from a script written in 0.147.0's shape: the fields 0.169.0's
//! real server writes on threads, turns, items and its replies (`Codec::dress`).

use super::*;

impl CodexCodec {
    /// 0.169.0's thread fields beyond 0.147.0's (observed on the real server; its generated
    /// schema lists only some). A field the script wrote is kept.
    pub(super) fn dress_thread(&self, thread: &mut Value, model: Option<&Value>) {
        let Value::Object(thread) = thread else {
            return;
        };
        let cwd = thread.get("cwd").cloned().unwrap_or_else(|| json!("/"));
        let model = model
            .or(self.model.as_ref())
            .cloned()
            .unwrap_or(Value::Null);
        let originator = self.client_name.as_deref().unwrap_or("codex_cli_rs");
        let added = json!({
            "environments": [{"environmentId": "local", "cwd": cwd,
                "runtimeWorkspaceRoots": [cwd]}],
            "attachedToThreadId": null, "projectId": null, "model": model,
            "reasoningEffort": null, "originator": originator, "daybreakEnabled": null});
        if let Value::Object(added) = added {
            for (k, v) in added {
                thread.entry(k).or_insert(v);
            }
        }
        thread.insert("cliVersion".into(), self.version.into());
        // 0.169.0 pages a thread's history (observed on every thread; 0.147.0 says `legacy`).
        thread.insert("historyMode".into(), "paginated".into());
    }

    /// 0.169.0's item fields: every item carries its own start and end time (as its
    /// notification does; on the item itself outside the generated schema, observed on
    /// userMessage and agentMessage items), an agent message its delivery, moderation and
    /// questions.
    pub(super) fn dress_item(item: &mut Value, started: &Value, completed: &Value) {
        let Value::Object(item) = item else { return };
        item.entry("startedAtMs").or_insert_with(|| started.clone());
        item.entry("completedAtMs")
            .or_insert_with(|| completed.clone());
        if item.get("type").and_then(Value::as_str) == Some("agentMessage") {
            for k in ["moderation", "delivery", "questions"] {
                item.entry(k).or_insert(Value::Null);
            }
        }
    }

    /// A root turn names itself (0.169.0; 0.147.0 has no such field).
    pub(super) fn dress_turn(turn: &mut Value) {
        if let Value::Object(t) = turn
            && let Some(id) = t.get("id").cloned()
        {
            t.entry("rootTurnId").or_insert(id);
        }
    }

    /// 0.169.0's fields on the fake's reply to `thread/start` or `turn/start`.
    pub(super) fn dress_reply(&self, m: &str, frame: &mut Value) {
        let Some(result) = frame.get_mut("result") else {
            return;
        };
        if m == method::THREAD_START {
            let model = result.get("model").cloned();
            if let Some(thread) = result.get_mut("thread") {
                self.dress_thread(thread, model.as_ref());
            }
            if let Value::Object(r) = result {
                r.entry("disabledPluginIds").or_insert(json!([]));
            }
        } else if m == method::TURN_START
            && let Some(turn) = result.get_mut("turn")
        {
            Self::dress_turn(turn);
        }
    }

    /// 0.169.0's fields on a notification's thread, turn or item.
    pub(super) fn dress_notification(&self, frame: &mut Value) {
        let m = frame
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        let Some(params) = frame.get_mut("params") else {
            return;
        };
        match m.as_str() {
            method::THREAD_STARTED => {
                if let Some(thread) = params.get_mut("thread") {
                    self.dress_thread(thread, None);
                }
            }
            method::TURN_STARTED | method::TURN_COMPLETED => {
                if let Some(turn) = params.get_mut("turn") {
                    Self::dress_turn_and_items(turn);
                }
            }
            method::ITEM_STARTED => {
                let at = params.get("startedAtMs").cloned().unwrap_or(Value::Null);
                if let Some(item) = params.get_mut("item") {
                    Self::dress_item(item, &at, &Value::Null);
                }
            }
            method::ITEM_COMPLETED => {
                let at = params.get("completedAtMs").cloned().unwrap_or(Value::Null);
                if let Some(item) = params.get_mut("item") {
                    Self::dress_item(item, &at, &at);
                }
                if let Value::Object(p) = params {
                    p.entry("contentTokenCount").or_insert(Value::Null);
                }
            }
            crate::codex::ambient::RATE_LIMITS => {
                if let Some(Value::Object(limits)) = params.get_mut("rateLimits") {
                    limits.entry("normalModelSlug").or_insert(Value::Null);
                }
            }
            _ => {}
        }
    }

    /// A turn a notification carries, and its items, which started and ended when it did.
    pub(super) fn dress_turn_and_items(turn: &mut Value) {
        Self::dress_turn(turn);
        // The turn's `completedAt` is in seconds; an item's times are in milliseconds.
        let at = turn
            .get("completedAt")
            .and_then(Value::as_u64)
            .map(|s| s * 1000);
        let at = at.map_or(Value::Null, Value::from);
        if let Some(Value::Array(items)) = turn.get_mut("items") {
            for item in items {
                Self::dress_item(item, &at, &at);
            }
        }
    }
}
