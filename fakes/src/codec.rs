//! The per-protocol seam. The engine knows steps, not protocols: a codec builds envelopes,
//! classifies what the subject sent, says what the real runtime tolerates and how it answers
//! an unknown method, and expands the protocol's sugar steps into plain wire actions.
//! The default methods implement JSON-RPC 2.0 framing, which every supported protocol shares
//! (with or without the `jsonrpc` member).

use conform_protocol::script::{RpcError, Step, sugar_owner};
use conform_protocol::vocab::Provider;
use serde_json::{Map, Value, json};

use crate::error::{InvalidFrame, RefusedArgs, StepError, VersionError};

/// One incoming frame, classified.
#[derive(Debug, PartialEq)]
pub enum Msg<'a> {
    Request {
        id: &'a Value,
        method: &'a str,
        params: Option<&'a Value>,
    },
    Notification {
        method: &'a str,
        params: Option<&'a Value>,
    },
    Response {
        id: &'a Value,
        /// `Ok(result)` or `Err(error object)`.
        outcome: Result<&'a Value, &'a Value>,
    },
    /// Not a message of this protocol (not JSON, not an object, no method/result/error).
    Malformed(String),
}

/// A sugar step expanded into a plain wire action.
#[derive(Debug, Clone, PartialEq)]
pub enum Sugar {
    Notify {
        method: String,
        params: Option<Value>,
    },
    Request {
        method: String,
        params: Option<Value>,
        answer: Option<Value>,
    },
    /// Answer the open request with this method (`to`, else the latest open one).
    Reply { to: Option<String>, result: Value },
    /// Several notifications the real runtime writes back to back for one event (a failed Codex
    /// turn: the thread goes idle, `error`, then `turn/completed`; a DSH SDK 0.1.1 model text:
    /// its `assistant/chunk` deltas, then the `assistant/message` that records it).
    Notifications(Vec<(String, Option<Value>)>),
}

pub trait Codec: Send {
    /// The provider whose protocol this codec speaks (a script must name it).
    fn provider(&self) -> Provider;

    /// `Some("2.0")` when every frame carries `"jsonrpc":"2.0"`; `None` when the real runtime
    /// leaves it out (codex app-server).
    fn jsonrpc_version(&self) -> Option<&'static str> {
        Some("2.0")
    }

    /// The product and version this fake speaks at `version` (`None`: the protocol's default),
    /// as reports name what a subject was judged against (`Codex app-server 0.147.0`).
    fn speaks(&self, version: Option<&str>) -> String;

    /// Every product version the fake speaks, the default first (empty: it speaks one).
    fn product_versions(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// The product version the fake speaks when a script names none, for a provider whose fake
    /// speaks several (`None`: it speaks one, named by [`Codec::speaks`]).
    fn default_product_version(&self) -> Option<&'static str> {
        None
    }

    /// Takes the script's product version (`None`: the protocol's default) before anything
    /// runs; an unknown version is a script error, naming the known ones.
    fn set_product_version(&mut self, version: Option<&str>) -> Result<(), VersionError> {
        match version {
            Some(v) => Err(VersionError::NoneBut {
                provider: self.provider(),
                speaks: self.speaks(None),
                want: v.to_owned(),
            }),
            None => Ok(()),
        }
    }

    /// Rejects sugar this protocol does not have (checked before the script runs).
    fn check_step(&self, action: &str) -> Result<(), StepError> {
        if sugar_owner(action).is_some_and(|owner| owner != self.provider()) {
            return Err(StepError::OtherProtocol {
                action: action.to_owned(),
                provider: self.provider(),
            });
        }
        Ok(())
    }

    /// Whether the runtime takes its own command line after the fake's (`-- <args>`): the
    /// provider appends the product's flags (Claude Code's `--output-format stream-json …`).
    fn takes_runtime_args(&self) -> bool {
        false
    }

    /// Reads the runtime's own command line as the real product would; the error is what the
    /// product refuses (the subject's violation).
    fn runtime_args(&mut self, args: &[String]) -> Result<(), RefusedArgs> {
        match args {
            [] => Ok(()),
            _ => Err(RefusedArgs(format!(
                "this runtime takes no arguments of its own, got {args:?}"
            ))),
        }
    }

    /// The status the runtime exits with when its stdin reaches EOF after the script (Claude
    /// Code: 1 once it sent an `is_error` result, as the real CLI does).
    fn exit_code_at_eof(&self) -> i32 {
        0
    }

    /// A mistake of the subject that expanding a sugar step uncovered (the engine reports it).
    fn take_violation(&mut self) -> Option<String> {
        None
    }

    /// Whether `frame`, sent by the fake, is valid for this protocol (at the product version
    /// set by [`Codec::set_product_version`]); `answers`: the request a response answers. The
    /// error says what is wrong and where.
    fn validate_frame(&self, frame: &Value, answers: Option<&str>) -> Result<(), InvalidFrame>;

    /// Validates a frame the subject sent against the client side of the product's schema
    /// (`answers`: the method of the runtime's request a response answers). Providers whose
    /// schema describes only the runtime's side (DSH SDK, Claude Code) check nothing here.
    fn validate_received(
        &self,
        _frame: &Value,
        _answers: Option<&str>,
    ) -> Result<(), InvalidFrame> {
        Ok(())
    }

    /// Expands a sugar step; `Ok(None)` when the step is not sugar.
    fn sugar(&mut self, step: &Step) -> Result<Option<Sugar>, StepError>;

    /// Frames real hosts send unasked, recorded but never a violation (ACP `session/cancel`).
    fn tolerated(&self, method: &str, is_request: bool) -> bool;

    /// How the real runtime answers a tolerated request (codex `turn/interrupt`).
    fn tolerated_reply(&self, _method: &str) -> Result<Value, RpcError> {
        Ok(json!({}))
    }

    /// The error the real runtime answers an unknown request with.
    fn unknown_method_error(&self, method: &str) -> RpcError {
        RpcError {
            code: -32601,
            message: "Method not found".into(),
            data: Some(json!({ "method": method })),
        }
    }

    /// Whether answering this method ends the subject's main request (→ `Terminal`).
    fn is_terminal(&self, method: &str) -> bool;

    /// Adds to a frame the script wrote (in the protocol's default product version's shape)
    /// what the script's product version writes besides (Codex 0.169.0's thread and item
    /// fields), so one script serves every pinned version. `answers`: the request a response
    /// answers. Frames broken on purpose and `raw` lines are written as scripted.
    fn dress(&self, _answers: Option<&str>, _frame: &mut Value) {}

    /// What the real runtime sends unasked right after this (dressed) frame in every run —
    /// Codex's configuration warning after `initialize`, its token and rate-limit bookkeeping
    /// after each model answer — as notifications `(method, params)`, so every scenario
    /// exercises what every real run sends. A script turns it off with `ambient = false`.
    fn ambient(&mut self, _frame: &Value, _answers: Option<&str>) -> Vec<(String, Option<Value>)> {
        Vec::new()
    }

    /// The untrusted text a sugar step of this protocol puts on the wire besides assistant
    /// output (thoughts, tool titles and inputs, unknown enum values, text addressed to
    /// another session): it must never reach model-visible text. Closed protocol vocabulary
    /// (statuses, update kinds) is left out: it is shown by design. The protocol-neutral
    /// channels (stderr, raw lines, error payloads, reply payloads) are the harness's.
    fn untrusted_text(&self, _step: &Step, _out: &mut Vec<String>) {}

    /// The untrusted text of a notification or request a script writes as it is (`notify` or
    /// `request` with `params`): every string of its params — error texts, warnings, tool
    /// payloads, ids — but the assistant output the records let the model see and the closed
    /// vocabulary a diagnostic names, as each protocol knows them ([`Codec::is_shown_param`]).
    fn untrusted_params(&self, method: &str, params: &Value, out: &mut Vec<String>) {
        let mut leaves = Vec::new();
        string_leaves_at(params, &mut String::new(), &mut leaves);
        out.extend(
            leaves
                .into_iter()
                .filter(|(pointer, s)| !self.is_shown_param(method, params, pointer, s))
                .map(|(_, s)| s),
        );
    }

    /// Whether the string at `pointer` in a written frame's params is shown by design: the
    /// run's assistant output, or a closed value a diagnostic may name. Default: a member
    /// every protocol uses for a closed value ([`closed_member`]).
    fn is_shown_param(&self, _method: &str, _params: &Value, pointer: &str, _s: &str) -> bool {
        closed_member(pointer)
    }

    /// Visits every free-text channel of a sugar step of this protocol, mutably, with the
    /// channel's name: the places where a runtime writes untrusted text that can change
    /// without changing what the step means (the redaction property writes secrets there).
    fn free_text(&self, _step: &mut Step, _visit: &mut dyn FnMut(&'static str, &mut String)) {}

    /// Learns from an answer the fake sent (e.g. the session id it handed out).
    fn answered(&mut self, _method: &str, _outcome: &Result<Value, RpcError>) {}

    /// Learns from a frame an `expect` step matched (e.g. the session a prompt addressed).
    fn received(&mut self, _method: &str, _params: Option<&Value>) {}

    /// What kind of notification a frame is — a checkpoint's name for a real peer, the key of
    /// the wire differential: its method, unless the protocol names it finer (a DSH SDK
    /// `session.event` by its event type, an ACP `session/update` by its update kind).
    fn notification_kind<'a>(&self, frame: &'a Value) -> Option<&'a str> {
        frame.get("method").and_then(Value::as_str)
    }

    /// A frame's kind for the wire differential: `request:<method>`, a notification's
    /// [`Codec::notification_kind`] after its method (`session.event:turn/end`), and
    /// `response:<method>` / `error:<method>` for an answer to a request of that method.
    fn frame_kind(&self, frame: &Value, answers: Option<&str>) -> String {
        if let Some(method) = frame.get("method").and_then(Value::as_str) {
            let prefix = if frame.get("id").is_some() {
                "request:"
            } else {
                ""
            };
            return match self.notification_kind(frame) {
                Some(sub) if sub != method => format!("{prefix}{method}:{sub}"),
                _ => format!("{prefix}{method}"),
            };
        }
        let what = if frame.get("error").is_some() {
            "error"
        } else {
            "response"
        };
        format!("{what}:{}", answers.unwrap_or("?"))
    }

    /// The frames a provider's verdict rests on besides the answers to its requests (which
    /// always do), for the wire differential's verdict order: a kind as [`Codec::frame_kind`]
    /// names it (`*` for any run of characters) and the pointer to the closed value that tells
    /// its frames apart (`None`: the kind alone) — statuses, terminals, errors, answers.
    fn verdict_points(&self) -> &'static [(&'static str, Option<&'static str>)] {
        &[]
    }

    /// Whether sending this notification ends the subject's main request (→ `Terminal`), for
    /// protocols whose turn ends with a notification rather than an answer (DSH SDK `turn/end`).
    fn is_terminal_notification(&self, _method: &str, _params: Option<&Value>) -> bool {
        false
    }

    /// Once the script has ended: the result the real runtime answers this request with before
    /// exiting 0 by itself (DSH SDK `shutdown` → `{}`). `None`: the request is unexpected.
    fn shutdown_reply(&self, _method: &str) -> Option<Value> {
        None
    }

    /// Id of the `n`th request the fake sends (from 0).
    fn request_id(&self, n: u64) -> Value {
        Value::from(n)
    }

    /// A problem with the envelope the subject sent (reported, but the frame is still used).
    fn envelope_problem(&self, frame: &Value) -> Option<String> {
        let want = self.jsonrpc_version()?;
        // Non-objects are reported as malformed frames instead.
        frame.as_object()?;
        match frame.get("jsonrpc") {
            Some(Value::String(v)) if v == want => None,
            Some(other) => Some(format!("`jsonrpc` is {other}, not \"{want}\"")),
            None => Some(format!("`jsonrpc: \"{want}\"` is missing")),
        }
    }

    fn classify<'a>(&self, frame: &'a Value) -> Msg<'a> {
        classify_jsonrpc(frame)
    }

    fn request(&self, id: Value, method: &str, params: Option<Value>) -> Value {
        let mut m = self.envelope();
        m.insert("id".into(), id);
        m.insert("method".into(), method.into());
        if let Some(p) = params {
            m.insert("params".into(), p);
        }
        Value::Object(m)
    }

    fn notification(&self, method: &str, params: Option<Value>) -> Value {
        let mut m = self.envelope();
        m.insert("method".into(), method.into());
        if let Some(p) = params {
            m.insert("params".into(), p);
        }
        Value::Object(m)
    }

    fn response(&self, id: Value, outcome: Result<Value, RpcError>) -> Value {
        let mut m = self.envelope();
        m.insert("id".into(), id);
        match outcome {
            Ok(result) => m.insert("result".into(), result),
            Err(error) => m.insert(
                "error".into(),
                serde_json::to_value(error).expect("RpcError serializes"),
            ),
        };
        Value::Object(m)
    }

    fn envelope(&self) -> Map<String, Value> {
        let mut m = Map::new();
        if let Some(v) = self.jsonrpc_version() {
            m.insert("jsonrpc".into(), v.into());
        }
        m
    }
}

/// JSON-RPC classification by members: `method` (+`id` → request), or `id` with
/// `result`/`error` → response.
pub fn classify_jsonrpc(frame: &Value) -> Msg<'_> {
    let Value::Object(m) = frame else {
        return match frame {
            Value::String(raw) => Msg::Malformed(format!("not JSON: {raw:?}")),
            other => Msg::Malformed(format!("not a JSON object: {other}")),
        };
    };
    let params = m.get("params").filter(|p| !p.is_null());
    match (m.get("method"), m.get("id")) {
        (Some(Value::String(method)), Some(id)) => Msg::Request { id, method, params },
        (Some(Value::String(method)), None) => Msg::Notification { method, params },
        (Some(other), _) => Msg::Malformed(format!("`method` is not a string: {other}")),
        (None, Some(id)) => match (m.get("result"), m.get("error")) {
            (Some(result), None) => Msg::Response {
                id,
                outcome: Ok(result),
            },
            (None, Some(error)) => Msg::Response {
                id,
                outcome: Err(error),
            },
            _ => Msg::Malformed("a response needs exactly one of `result` and `error`".into()),
        },
        (None, None) => Msg::Malformed("neither `method` nor `id`".into()),
    }
}

/// Every string inside a JSON value (object keys excluded).
pub fn string_leaves(v: &Value, out: &mut Vec<String>) {
    let mut at = Vec::new();
    string_leaves_at(v, &mut String::new(), &mut at);
    out.extend(at.into_iter().map(|(_, s)| s));
}

/// The version `want` names among `known` (the default first; `None`: the default), or an
/// error naming the known ones: `what` is the product's name for its versions ("Codex product
/// version").
pub fn known_version(
    what: &'static str,
    known: &'static [&'static str],
    want: Option<&str>,
) -> Result<&'static str, VersionError> {
    let want = want.unwrap_or(known[0]);
    known
        .iter()
        .copied()
        .find(|v| *v == want)
        .ok_or_else(|| VersionError::Unknown {
            what,
            want: want.to_owned(),
            known,
        })
}

/// Whether a member at `pointer` holds a closed value in every protocol (a discriminator, a
/// status, a role): never free text.
pub fn closed_member(pointer: &str) -> bool {
    let key = pointer.rsplit('/').next().unwrap_or_default();
    matches!(
        key,
        "type" | "subtype" | "kind" | "status" | "phase" | "role" | "source" | "sessionUpdate"
    )
}

/// Every string inside a JSON value with its JSON pointer (object keys excluded).
pub fn string_leaves_at(v: &Value, at: &mut String, out: &mut Vec<(String, String)>) {
    let len = at.len();
    match v {
        Value::String(s) => out.push((at.clone(), s.clone())),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                at.push_str(&format!("/{i}"));
                string_leaves_at(x, at, out);
                at.truncate(len);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                at.push('/');
                at.push_str(&k.replace('~', "~0").replace('/', "~1"));
                string_leaves_at(x, at, out);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

/// Every string inside a JSON value, mutably (object keys excluded).
pub fn string_leaves_mut(v: &mut Value, visit: &mut dyn FnMut(&mut String)) {
    match v {
        Value::String(s) => visit(s),
        Value::Array(a) => a.iter_mut().for_each(|x| string_leaves_mut(x, visit)),
        Value::Object(o) => o.values_mut().for_each(|x| string_leaves_mut(x, visit)),
        _ => {}
    }
}

/// The string at `pointer` inside `v`, if it is one.
pub fn string_at<'a>(v: &'a mut Value, pointer: &str) -> Option<&'a mut String> {
    match v.pointer_mut(pointer)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}
