//! One run's view of the app-server's traffic (as the host reads it; pinned by `scenarios/codex/`),
//! as a pure state machine fed in
//! wire order by the JSON-RPC reader.
//!
//! Before `turn/start` is answered, frames of the run's thread that name a turn are held: the
//! first turn id seen becomes provisional, a different one fails the run, `item/completed` and
//! `turn/completed` are buffered. Server requests are answered at once; their permission facts
//! wait with the buffered frames. The `turn/start` response commits the id and replays the
//! buffer in its original order. After the commit, frames of another turn are ignored, and a
//! server request for another thread or turn fails the run. Frames of other threads are always
//! ignored. The first terminal (`turn/completed`) or failure decides; nothing after counts.

use serde_json::Value;

use super::config::PermissionMode;
use super::mapping::{AgentMessage, Answers, Stage, agent_message};
use super::requests::{self, Answer, Fact, PermissionFact, TurnRef};

/// Why the run failed before a usable terminal: the stage and a host-only explanation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Failure {
    pub stage: Stage,
    pub why: &'static str,
}

#[derive(Clone, Debug, PartialEq)]
enum Early {
    Item(Value),
    Completed(Value),
    Fact(Fact),
}

/// How the run's wire settled, once it did.
#[derive(Clone, Debug, PartialEq)]
pub enum Settled {
    /// The terminal turn object of the run's `turn/completed`.
    Terminal(Value),
    Failed(Failure),
}

pub struct TurnState {
    mode: PermissionMode,
    thread_id: Option<String>,
    turn_sent: bool,
    provisional: Option<String>,
    committed: Option<String>,
    early: Vec<Early>,
    answers: Answers,
    fact: Option<Fact>,
    settled: Option<Settled>,
    /// The run's result was taken: the state no longer changes.
    frozen: bool,
    /// Seeded defect `early-facts-last`: early facts are held here at the commit and applied
    /// when the result is taken, over any newer fact.
    pub early_facts_last: bool,
    held_facts: Vec<Fact>,
    /// Seeded defect `codex-strict-notifications`: a notification outside [`HANDLED`] fails
    /// the turn.
    pub strict_notifications: bool,
}

/// The notifications a strict host handles (defect `codex-strict-notifications`).
const HANDLED: &[&str] = &[
    "thread/started",
    "thread/status/changed",
    "turn/started",
    "turn/completed",
    "item/started",
    "item/completed",
    "item/agentMessage/delta",
    "error",
];

/// A JSON-RPC error answer (fixed text, wire only).
pub type RequestError = String;

impl TurnState {
    pub fn new(mode: PermissionMode) -> Self {
        TurnState {
            mode,
            thread_id: None,
            turn_sent: false,
            provisional: None,
            committed: None,
            early: Vec::new(),
            answers: Answers::default(),
            fact: None,
            settled: None,
            frozen: false,
            early_facts_last: false,
            held_facts: Vec::new(),
            strict_notifications: false,
        }
    }

    pub fn set_thread(&mut self, id: &str) {
        self.thread_id = Some(id.to_owned());
    }

    /// `turn/start` is about to be written.
    pub fn turn_sent(&mut self) {
        self.turn_sent = true;
    }

    pub fn settled(&self) -> Option<&Settled> {
        self.settled.as_ref()
    }

    /// The output selected so far.
    pub fn selection(&self) -> Vec<Value> {
        self.answers.selection()
    }

    /// The latest permission fact of the run (committed frames only).
    pub fn permission(&self) -> Option<PermissionFact> {
        self.fact.map(|f| f.in_mode(self.mode))
    }

    /// Record a fact after settlement (`sandboxError` of the terminal turn).
    pub fn record_terminal_fact(&mut self, fact: Fact) {
        self.fact = Some(fact);
    }

    /// Take the result: nothing changes the state from here on.
    pub fn freeze(&mut self) {
        if let Some(f) = self.held_facts.pop() {
            self.fact = Some(f);
        }
        self.frozen = true;
    }

    /// `(threadId, turnId)` of a turn that is still open (no terminal seen), for
    /// `turn/interrupt`: the committed id, else the provisional one.
    pub fn open_turn(&self) -> Option<(String, String)> {
        if matches!(self.settled, Some(Settled::Terminal(_))) {
            return None;
        }
        let turn = self
            .committed
            .clone()
            .or_else(|| self.provisional.clone())?;
        Some((self.thread_id.clone()?, turn))
    }

    fn fail(&mut self, stage: Stage, why: &'static str) {
        if self.settled.is_none() && !self.frozen {
            self.settled = Some(Settled::Failed(Failure { stage, why }));
        }
    }

    fn live(&self) -> bool {
        self.settled.is_none() && !self.frozen
    }

    /// The `turn/start` response named `turn_id`: commit it and replay the buffer.
    pub fn commit(&mut self, turn_id: &str) {
        if !self.live() || self.committed.as_deref() == Some(turn_id) {
            return;
        }
        if self.provisional.as_deref().is_some_and(|p| p != turn_id) {
            return self.fail(
                Stage::TurnStart,
                "turn/start response did not match the active turn",
            );
        }
        self.committed = Some(turn_id.to_owned());
        for early in std::mem::take(&mut self.early) {
            if !self.live() {
                break;
            }
            match early {
                Early::Item(item) => self.apply_item(&item),
                Early::Completed(turn) => self.apply_completed(turn),
                Early::Fact(f) if self.early_facts_last => self.held_facts.push(f),
                Early::Fact(f) => self.fact = Some(f),
            }
        }
    }

    /// Check a turn id named by a frame before the commit: the first becomes provisional.
    fn provisional_ok(&mut self, id: &str) -> bool {
        match &self.provisional {
            Some(p) if p != id => {
                self.fail(Stage::TurnStart, "referenced conflicting turns");
                false
            }
            Some(_) => true,
            None => {
                self.provisional = Some(id.to_owned());
                true
            }
        }
    }

    fn ours(&self, params: &Value) -> bool {
        self.thread_id.is_some()
            && params.get("threadId").and_then(Value::as_str) == self.thread_id.as_deref()
    }

    pub fn on_notification(&mut self, method: &str, params: &Value) {
        if self.strict_notifications && !HANDLED.contains(&method) {
            return self.fail(Stage::Turn, "unhandled notification");
        }
        if !self.live() || !self.turn_sent || !self.ours(params) {
            return;
        }
        let (id, body) = match method {
            "turn/started" | "turn/completed" => {
                (params["turn"].get("id"), params.get("turn").cloned())
            }
            "item/completed" => (params.get("turnId"), params.get("item").cloned()),
            _ => return,
        };
        let (Some(id), Some(body)) = (id.and_then(Value::as_str), body) else {
            return self.fail(Stage::Turn, "malformed turn frame");
        };
        match self.committed.clone() {
            None => {
                if !self.provisional_ok(id) {
                    return;
                }
                match method {
                    "item/completed" => self.early.push(Early::Item(body)),
                    "turn/completed" => self.early.push(Early::Completed(body)),
                    _ => {}
                }
            }
            Some(c) if c != id => {}
            Some(_) => match method {
                "item/completed" => self.apply_item(&body),
                "turn/completed" => self.apply_completed(body),
                _ => {}
            },
        }
    }

    fn apply_item(&mut self, item: &Value) {
        if item.get("type").and_then(Value::as_str) == Some("agentMessage") {
            match agent_message(item) {
                AgentMessage::Invalid(why) => return self.fail(Stage::Turn, why),
                m => self.answers.record(m),
            }
        }
        if let Some(f) = requests::declined_item(item) {
            self.fact = Some(f);
        }
    }

    fn apply_completed(&mut self, turn: Value) {
        if !turn.is_object() {
            return self.fail(Stage::Turn, "malformed turn/completed");
        }
        self.settled = Some(Settled::Terminal(turn));
    }

    /// Does a server request belong to the run? Records the provisional id or the failure.
    fn associate(&mut self, params: &Value, rule: TurnRef) -> bool {
        let stage = if self.committed.is_some() {
            Stage::Turn
        } else {
            Stage::TurnStart
        };
        if !self.ours(params) {
            self.fail(stage, "app-server request for another thread");
            return false;
        }
        let id = match params.get("turnId") {
            None | Some(Value::Null) if rule == TurnRef::Nullable => return true,
            Some(Value::String(id)) => id.as_str(),
            _ => {
                self.fail(stage, "app-server request named no turn");
                return false;
            }
        };
        if !self.turn_sent {
            self.fail(stage, "referenced a turn before turn/start");
            return false;
        }
        match self.committed.as_deref() {
            Some(c) if c == id => true,
            Some(_) => {
                self.fail(stage, "app-server request for another turn");
                false
            }
            None => self.provisional_ok(id),
        }
    }

    /// Answer a server request at once (`Err`: a JSON-RPC -32603 error with this fixed text).
    pub fn on_request(&mut self, method: &str, params: &Value) -> Result<Value, RequestError> {
        let Some((rule, answer)) = requests::answer(method, params) else {
            self.fail(Stage::Turn, "unsupported app-server request");
            return Err(requests::unsupported_message(method));
        };
        if !self.live() {
            // The run is over: still refuse safely, record nothing.
            return match answer {
                Answer::Reply(v, _) => Ok(v),
                Answer::Fail(why) => Err(format!("subagent-codex: {why}")),
            };
        }
        let belongs = self.associate(params, rule);
        match answer {
            Answer::Fail(why) => {
                self.fail(Stage::Turn, why);
                Err(format!("subagent-codex: {why}"))
            }
            Answer::Reply(v, fact) => {
                if belongs {
                    if self.committed.is_some() {
                        self.fact = Some(fact);
                    } else {
                        self.early.push(Early::Fact(fact));
                    }
                }
                Ok(v)
            }
        }
    }
}

#[cfg(test)]
mod tests;
