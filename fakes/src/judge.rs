//! How a fake judges what the subject sent it, as pure functions of the codec and the frame:
//! the engine applies them live ([`crate::engine`]), and the harness applies them again to the
//! recorded wire ([`crate::verify`]) — one set of rules, so a fake silenced from inside cannot
//! make a violation disappear, and no rule is written twice.

use conform_protocol::script::RpcError;
use serde_json::{Value, json};

use crate::codec::{Codec, Msg};
use crate::params::{Rule, mismatch};

/// What a frame that is not the awaited one is.
pub struct Stray {
    /// The subject's violation, if the real runtime would not take the frame.
    pub violation: Option<String>,
    /// What the runtime answers it with (a request always gets an answer).
    pub reply: Option<(Value, Result<Value, RpcError>, String)>,
}

/// A frame that is not what the step waits for (`during`: what it waits for): tolerated, or the
/// subject's violation; a request gets the answer the real runtime would send (its id, the
/// outcome, its method).
pub fn stray(codec: &dyn Codec, frame: &Value, during: &str) -> Stray {
    let (violation, reply) = match codec.classify(frame) {
        Msg::Notification { method, .. } if codec.tolerated(method, false) => (None, None),
        Msg::Request { id, method, .. } if codec.tolerated(method, true) => {
            let answer = codec.tolerated_reply(method);
            (None, Some((id.clone(), answer, method.to_owned())))
        }
        Msg::Notification { method, .. } => (
            Some(format!("unexpected notification `{method}` {during}")),
            None,
        ),
        Msg::Request { id, method, .. } => {
            let error = codec.unknown_method_error(method);
            (
                Some(format!("unexpected request `{method}` {during}")),
                Some((id.clone(), Err(error), method.to_owned())),
            )
        }
        Msg::Response { id, .. } => (
            Some(format!(
                "unexpected response to id {id} {during} (no such request is pending)"
            )),
            None,
        ),
        Msg::Malformed(why) => (Some(format!("malformed frame {during}: {why}")), None),
    };
    Stray { violation, reply }
}

/// What an `expect` step waits for `during`.
pub fn expecting(method: &str) -> String {
    format!("expecting `{method}`")
}

/// What a request step waits for `during`.
pub fn awaiting_answer(method: &str) -> String {
    format!("waiting for the answer to `{method}`")
}

/// What `wait_eof` waits for `during`.
pub const AWAITING_EOF: &str = "waiting for stdin EOF";
/// What the served frames after the last step are `during`.
pub const AFTER_THE_SCRIPT: &str = "after the script ended";

/// The frame an `expect` step met.
pub struct Met<'a> {
    /// Its params differ from the script's.
    pub violation: Option<String>,
    pub params: Option<&'a Value>,
    /// A request's id: it is open until a step answers it.
    pub open: Option<Value>,
}

/// Whether `frame` is the request or notification an `expect` step waits for (`None`: a
/// stray), and how its params compare with the script's. `cwd`: the runtime's working
/// directory (what `$cwd` stands for).
pub fn expected<'a>(
    codec: &dyn Codec,
    frame: &'a Value,
    method: &str,
    want: Option<&Value>,
    exact: bool,
    cwd: &str,
) -> Option<Met<'a>> {
    let (params, open) = match codec.classify(frame) {
        Msg::Request {
            id,
            method: m,
            params,
        } if m == method => (params, Some(id.clone())),
        Msg::Notification { method: m, params } if m == method => (params, None),
        _ => return None,
    };
    let rule = Rule { exact, cwd };
    let diff = match (want, params) {
        (Some(want), got) => mismatch(want, got.unwrap_or(&Value::Null), "params", &rule),
        (None, Some(got)) if exact => Some(format!("params: not expected (sent {got})")),
        (None, _) => None,
    };
    Some(Met {
        violation: diff.map(|d| format!("`{method}` params differ from the script: {d}")),
        params,
        open,
    })
}

/// The answer to a request the fake sent, if `frame` is it: what it answered (the result, or
/// `{"error": …}`) and, when the script expects another answer, the violation.
pub fn answer(
    codec: &dyn Codec,
    frame: &Value,
    id: &Value,
    method: &str,
    want: Option<&Value>,
) -> Option<(Value, Option<String>)> {
    let Msg::Response {
        id: got_id,
        outcome,
    } = codec.classify(frame)
    else {
        return None;
    };
    if got_id != id {
        return None;
    }
    // An error answer is judged like any other: against the `{"error": …}` the script
    // expects, if it expects one.
    let got = match outcome {
        Ok(result) => result.clone(),
        Err(error) => json!({ "error": error }),
    };
    let violation = want
        .filter(|want| **want != got)
        .map(|want| format!("`{method}` was answered {got}, the script expects {want}"))
        .or_else(|| schema(codec, frame, Some(method)));
    Some((got, violation))
}

/// What is wrong with the envelope of a frame the subject sent (reported; the frame is still
/// used).
pub fn envelope(codec: &dyn Codec, frame: &Value) -> Option<String> {
    if let Some(problem) = codec.envelope_problem(frame) {
        return Some(format!("malformed envelope ({problem}) in {frame}"));
    }
    // A response is checked where the request it answers is known ([`answer`]); a frame that
    // is no message at all is a stray's violation.
    match codec.classify(frame) {
        Msg::Request { .. } | Msg::Notification { .. } => schema(codec, frame, None),
        Msg::Response { .. } | Msg::Malformed(_) => None,
    }
}

/// What the client side of the product's schema says is wrong with a frame the subject sent
/// (`answers`: the method of the runtime's request a response answers).
fn schema(codec: &dyn Codec, frame: &Value, answers: Option<&str>) -> Option<String> {
    codec
        .validate_received(frame, answers)
        .err()
        .map(|why| format!("breaks the client side of the schema ({why}) in {frame}"))
}
