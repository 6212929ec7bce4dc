//! The fake script: what a scripted runtime does, step by step.
//!
//! A script is written inside a scenario file (`[[fake.steps]]`), expanded by the harness
//! (preludes included) and handed to a fake as JSON. One engine in `fakes/` runs every step;
//! a thin codec per protocol turns the protocol sugar (`chunk`, `permission`, `stop`, …) into
//! frames. Each step sets exactly one *action* key; `params`, `answer`, `to` and `violation`
//! modify the action they sit beside.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::vocab::Provider;

/// A whole script, as the harness hands it to a fake (`--script <file.json>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Must match the fake binary.
    pub protocol: Provider,
    /// The product version the fake speaks (Codex: `0.147.0` by default, or `0.169.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_version: Option<String>,
    #[serde(default)]
    pub steps: Vec<Step>,
}

/// A JSON-RPC error object to answer with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// ACP `session/request_permission` sugar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Permission {
    /// The tool kind, sent as is (absent: no `kind` field; an unknown value needs `violation`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Tool title (untrusted text; must never reach the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Raw tool input (untrusted; must never reach the model).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// Offered options in order. Default: `allow`/`allow_once`, then `reject`/`reject_once`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<PermissionOption>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionOption {
    pub id: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A process the script spawns (a grandchild of the subject).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Grandchild {
    /// Inherit the runtime's stdout (so the subject sees no EOF while it lives).
    #[serde(default)]
    pub hold_stdout: bool,
    /// Ignore SIGTERM (needs SIGKILL).
    #[serde(default)]
    pub trap_sigterm: bool,
    /// Leave the runtime's process group and session (`setsid`).
    #[serde(default)]
    pub setsid: bool,
    /// Double-fork: the spawned process starts the real one and exits at once, so the daemon
    /// is an orphan from its first instant (reparented to the nearest child subreaper).
    #[serde(default)]
    pub daemon: bool,
    /// Never register with the harness: only the ground truth (`/proc`) can find it.
    #[serde(default)]
    pub unregistered: bool,
    /// Never register, and become a program conform did not write (`sleep`): its arguments
    /// carry no run id, so only what it inherited (its environment, its cgroup) says whose it
    /// is — as for a helper a real runtime starts.
    #[serde(default)]
    pub anonymous: bool,
    /// With `anonymous`: exec with an empty environment, so not even what it inherited names
    /// the run — only the runtime's pipes it holds (`hold_stdout`) or its cgroup do.
    #[serde(default)]
    pub clear_env: bool,
    /// Its stderr goes to `/dev/null`, not the runtime's stderr (stdin always does, stdout
    /// unless `hold_stdout`): then it holds none of the runtime's pipes, and only the process
    /// tree — while the runtime lives — or its cgroup say whose it is.
    #[serde(default)]
    pub null_stderr: bool,
    /// A helper the harness is never told of (no registration, no `spawned` line: only `/proc`
    /// finds it, as for a helper a real runtime's SDK starts) that ends on its own this many ms
    /// after the runtime is gone (its stdin, a pipe the runtime holds, reads EOF) — as the
    /// Claude Code CLI outlives claude-agent-acp's node by about two seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linger_ms: Option<u64>,
}

/// Declares [`Step`] from one table: every action (its key and, for protocol sugar, the
/// provider whose codec expands it) and every modifier. The step's fields, [`ACTION_KEYS`],
/// [`Step::actions`] and [`sugar_owner`] all come from it, so none can fall out of step with
/// another.
macro_rules! step {
    (
        actions {$(
            $(#[$ameta:meta])* $action:ident = $key:literal for $owner:expr => $aty:ty,
        )+}
        modifiers {$(
            $(#[$mmeta:meta])* $modifier:ident: $mty:ty,
        )+}
    ) => {
        /// One step. Exactly one action key is set.
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct Step {
            $(
                $(#[$ameta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $action: Option<$aty>,
            )+
            $(
                $(#[$mmeta])*
                #[serde(default, skip_serializing_if = "Option::is_none")]
                pub $modifier: Option<$mty>,
            )+
        }

        /// Every action key with the provider whose sugar it is (`None`: every protocol's),
        /// in the order they are documented.
        pub const ACTIONS: &[(&str, Option<Provider>)] = &[$(($key, $owner),)+];

        impl Step {
            /// The action keys this step sets (a valid step sets exactly one).
            pub fn actions(&self) -> Vec<&'static str> {
                let mut set = Vec::new();
                $(
                    if self.$action.is_some() {
                        set.push($key);
                    }
                )+
                set
            }
        }
    };
}

step! {
    actions {
        /// Splice the steps of `scenarios/preludes/<name>.toml` here.
        include = "include" for None => String,
        /// Wait for a request or notification with this method from the subject. Anything else
        /// the subject sends meanwhile is its protocol violation (requests get a JSON-RPC error),
        /// except what the protocol tolerates (ACP `session/cancel`).
        expect = "expect" for None => String,
        /// Answer the latest open request (or the one named by `to`) with this result (`null`
        /// included: `{ "$json" = "null" }`).
        #[serde(deserialize_with = "present")]
        reply = "reply" for None => Value,
        /// Answer the latest open request (or the one named by `to`) with this error.
        error = "error" for None => RpcError,
        /// Send a notification with this method (`params` beside it).
        notify = "notify" for None => String,
        /// Send a request with this method (`params` beside it) and wait for the answer.
        request = "request" for None => String,
        /// Write this line to stdout verbatim (a newline is added).
        raw = "raw" for None => String,
        /// `session/update` `agent_message_chunk` with this text.
        chunk = "chunk" for Some(Provider::Acp) => String,
        /// `session/update` `agent_thought_chunk` with this text.
        thought = "thought" for Some(Provider::Acp) => String,
        /// `session/update` with this `update` object.
        update = "update" for Some(Provider::Acp) => Value,
        /// `session/request_permission`; waits for the answer.
        permission = "permission" for Some(Provider::Acp) => Permission,
        /// Answer the open `session/prompt` with this stop reason.
        stop = "stop" for Some(Provider::Acp) => String,
        /// `session.event` `agent/inbox/spliced`: the prompt receipt inserting a user message with
        /// this id (the `messageId` the `session/prompt` reply must carry).
        receipt = "receipt" for Some(Provider::DshSdk) => String,
        /// `session.status` with this status (`running` or `idle`).
        status = "status" for Some(Provider::DshSdk) => String,
        /// `session.event` `assistant/chunk` with a `text-delta` of this text (a frame the real
        /// runtime 0.2.1rc2 never sends; kept for clients of other builds).
        delta = "delta" for Some(Provider::DshSdk) => String,
        /// `session.event` `assistant/attempt`: a model attempt that failed after streaming this
        /// text (`""`: before any text), as the real runtime reports a failure mid-stream.
        attempt = "attempt" for Some(Provider::DshSdk) => String,
        /// `session.event` `assistant/message` whose content is one text block with this text,
        /// with the stream it came from as the real runtime records it (an empty string sends
        /// empty, usage-only content).
        message = "message" for Some(Provider::DshSdk) => String,
        /// `session.event` `turn/end` with this reason: a kind (`"completed"`) or a whole reason
        /// object (`{ kind = "aborted", reason = "disposed" }`).
        turn_end = "turn_end" for Some(Provider::DshSdk) => Value,
        /// `session.event` with this event object, sent as written (`type`, `data`; `seq` and
        /// `time` are filled in when absent).
        event = "event" for Some(Provider::DshSdk) => Value,
        /// `turn/started` for the turn.
        turn_started = "turn_started" for Some(Provider::Codex) => bool,
        /// `item/completed` with an `agentMessage` item: `{ text = "…", phase = "final_answer" }`
        /// (no `phase` key: `phase: null`). Values are sent as written.
        agent_message = "agent_message" for Some(Provider::Codex) => Value,
        /// `turn/completed`: `{ status = "failed", error = { message = "…", codexErrorInfo = … } }`
        /// (no `error`: `error: null`).
        turn_completed = "turn_completed" for Some(Provider::Codex) => Value,
        /// A server request with this method (approvals, user input, elicitation); `params` are
        /// merged over `{threadId, turnId, itemId}`; waits for the answer (`answer` checks it).
        ask = "ask" for Some(Provider::Codex) => String,
        /// `system` `init` opening the turn, with this session id (`""`: the fake's default); the
        /// session every later Claude Code message names.
        init = "init" for Some(Provider::ClaudeCode) => String,
        /// An `assistant` message whose content is one text block with this text.
        assistant = "assistant" for Some(Provider::ClaudeCode) => String,
        /// A `stream_event` carrying a `text_delta` of this text (`--include-partial-messages`).
        partial = "partial" for Some(Provider::ClaudeCode) => String,
        /// The turn's `result`: `{ subtype = "success", result = "…" }` or an error subtype with
        /// `errors = […]`; members are written over the SDK's required defaults (`is_error`,
        /// durations, usage, `permission_denials`, the session).
        result = "result" for Some(Provider::ClaudeCode) => Value,
        /// A `control_request` with this subtype (`can_use_tool`, `elicitation`,
        /// `request_user_dialog`); `params` are written over the subtype's defaults; waits for the
        /// `control_response` (`answer` checks it).
        control = "control" for Some(Provider::ClaudeCode) => String,
        /// `system` `permission_denied`: the CLI denied a tool before any prompt; members are
        /// written over `{tool_name = "Bash", message = …}`.
        denied = "denied" for Some(Provider::ClaudeCode) => Value,
        /// Write this text to stderr (a newline is added).
        stderr = "stderr" for None => String,
        /// Write this text to stderr as one write, without a newline (a line split across
        /// writes, or a last line the process never ends).
        stderr_part = "stderr_part" for None => String,
        /// Write what the subject passed in to stderr as a line: `cwd` (the runtime's working
        /// directory) or `env:NAME` (that environment variable's value).
        echo_to_stderr = "echo_to_stderr" for None => String,
        /// Report a named checkpoint to the harness.
        checkpoint = "checkpoint" for None => String,
        /// Block until the harness releases this name.
        #[serde(rename = "await")]
        await_ = "await" for None => String,
        /// Block until stdin reaches EOF.
        wait_eof = "wait_eof" for None => bool,
        /// Check this process's environment: each name must have the given value, or be absent
        /// where the value is `null` (`{ "$json" = "null" }`); a mismatch is the subject's
        /// protocol violation.
        expect_env = "expect_env" for None => serde_json::Map<String, Value>,
        /// Check the runtime's own command line (what the provider put after `--`, e.g. Claude
        /// Code's CLI flags): it must be exactly these arguments, in this order; a mismatch is the
        /// subject's protocol violation.
        expect_args = "expect_args" for None => Vec<String>,
        /// Sleep. Only for what is genuinely about time (a grace period expiring).
        delay_ms = "delay_ms" for None => u64,
        /// Close stdout (the process stays alive).
        close_stdout = "close_stdout" for None => bool,
        /// Exit now with this code.
        exit = "exit" for None => i32,
        /// Die by this signal, raised on itself (`SIGABRT`, `SIGKILL`, …; core dumps disabled).
        signal = "signal" for None => String,
        /// From now on, ignore SIGTERM.
        ignore_sigterm = "ignore_sigterm" for None => bool,
        /// From now on, do not exit at stdin EOF.
        ignore_eof = "ignore_eof" for None => bool,
        /// From now on (`false`), send none of what the real runtime sends unasked in every run
        /// (Codex: `configWarning` and `remoteControl/status/changed` after `initialize`,
        /// `thread/tokenUsage/updated` and `account/rateLimits/updated` after each model
        /// answer); `true` sends it again. On by default.
        ambient = "ambient" for Some(Provider::Codex) => bool,
        /// Spawn a grandchild with its own behaviour.
        spawn = "spawn" for None => Grandchild,
        /// Hand stdout to a process outside the subject's tree: the harness holds it open until
        /// the run is over, so the subject sees no EOF and has nothing it may kill.
        lend_stdout = "lend_stdout" for None => bool,
        /// Write the frames of the next N steps to stdout in one write (several frames in one
        /// read, as a busy runtime's output arrives).
        coalesce = "coalesce" for None => u32,
        /// Write the last answer the runtime gave again (a duplicate response).
        resend = "resend" for None => bool,
    }
    modifiers {
        /// With `expect`: a subset the received params must contain. With `notify`/`request`: the
        /// params to send.
        #[serde(deserialize_with = "present")]
        params: Value,
        /// With `expect`: the received params must be exactly `params` (no member the script does
        /// not name, at any depth; no `params` at all when the step names none).
        exact: bool,
        /// With `request` or `permission`: the result the subject must answer (exact).
        #[serde(deserialize_with = "present")]
        answer: Value,
        /// With `reply`, `error` or `stop`: the method of the open request to answer.
        to: String,
        /// With DSH SDK sugar: the session id to address instead of the prompt's session.
        session: String,
        /// With Codex sugar: the thread id to address instead of the fake's own thread.
        thread: String,
        /// With Codex sugar: the turn id to address instead of the fake's own turn.
        turn: String,
        /// This step sends something invalid on purpose; says why. Frames it sends are exempt from
        /// the protocol schema test and marked in the transcript.
        violation: String,
        /// The provider may end the runtime before this step is played — its teardown rightly
        /// does not wait for what follows (a late answer, a turn the run already failed); says
        /// why. From here on the script need not be played to its end (`wire.script`).
        may_cut: String,
        /// Write this step's frame in two writes, cut `key` (inside its first member's name),
        /// `string` (inside its first string value), `utf8` (inside its first multi-byte
        /// character) or `newline` (before the line's end) — the second write only once the
        /// subject has read the first, so the two arrive in two reads.
        split: String,
        /// End this step's frame with CRLF instead of LF.
        crlf: bool,
    }
}

/// Where `split` may cut a frame.
pub const SPLITS: &[&str] = &["key", "string", "utf8", "newline"];

/// Every action key, in the order they are documented.
pub const ACTION_KEYS: &[&str] = &{
    let mut keys = [""; ACTIONS.len()];
    let mut i = 0;
    while i < ACTIONS.len() {
        keys[i] = ACTIONS[i].0;
        i += 1;
    }
    keys
};

/// The provider whose codec expands this sugar action (`None`: not sugar, or not an action).
pub fn sugar_owner(action: &str) -> Option<Provider> {
    ACTIONS
        .iter()
        .find(|(k, _)| *k == action)
        .and_then(|(_, p)| *p)
}

impl Step {
    /// Checks the step's shape: one action, and modifiers only where they mean something.
    pub fn check(&self) -> Result<&'static str, String> {
        let actions = self.actions();
        let action = match actions.as_slice() {
            [one] => *one,
            [] => {
                return Err(format!(
                    "a step needs exactly one action key (one of: {})",
                    ACTION_KEYS.join(", ")
                ));
            }
            many => {
                return Err(format!(
                    "a step sets several actions ({}); split it into one step per action",
                    many.join(", ")
                ));
            }
        };
        if self.params.is_some()
            && !matches!(action, "expect" | "notify" | "request" | "ask" | "control")
        {
            return Err(format!("`params` does not apply to `{action}`"));
        }
        if self.exact.is_some() && action != "expect" {
            return Err(format!("`exact` does not apply to `{action}`"));
        }
        if self.answer.is_some() && !matches!(action, "request" | "permission" | "ask" | "control")
        {
            return Err(format!("`answer` does not apply to `{action}`"));
        }
        if self.to.is_some() && !matches!(action, "reply" | "error" | "stop") {
            return Err(format!("`to` does not apply to `{action}`"));
        }
        if let Some(cut) = &self.split
            && !SPLITS.contains(&cut.as_str())
        {
            return Err(format!(
                "`split` is one of {}, not {cut:?}",
                SPLITS.join(", ")
            ));
        }
        // Sugar modifiers go with their protocol's sugar: `session` with the DSH SDK's,
        // `thread` and `turn` with Codex's.
        let owner = sugar_owner(action);
        if self.session.is_some() && owner != Some(Provider::DshSdk) {
            return Err(format!("`session` does not apply to `{action}`"));
        }
        if (self.thread.is_some() || self.turn.is_some()) && owner != Some(Provider::Codex) {
            return Err(format!("`thread` and `turn` do not apply to `{action}`"));
        }
        Ok(action)
    }
}

/// The key of a table that stands for a JSON value TOML cannot write (`null`, mostly):
/// A member that is present is `Some`, even when it is `null`. serde's default reads `null` as
/// absent: `reply = null` became a step without an action, and — worse, silently — an
/// `answer = null` (the subject must answer `null`) became no check of the answer at all.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    use serde::Deserialize;
    Value::deserialize(d).map(Some)
}

/// `{ "$json" = "null" }` becomes `null`, `{ "$json" = '{"a":null}' }` becomes that object.
pub const JSON_LITERAL_KEY: &str = "$json";

/// Replaces every `{ "$json" = "…" }` table inside the step's JSON payloads by the value it
/// spells. Scenario files are TOML, which has no `null`; wire payloads need it.
pub fn resolve_json_literals(step: &mut Step) -> Result<(), String> {
    // Over the whole step, so no payload (a new sugar's included) can be missed: only JSON
    // payloads can hold a table, so only they can hold a literal.
    let mut value = serde_json::to_value(&*step).map_err(|e| e.to_string())?;
    resolve(&mut value)?;
    *step = serde_json::from_value(value).map_err(|e| e.to_string())?;
    Ok(())
}

fn resolve(value: &mut Value) -> Result<(), String> {
    match value {
        Value::Object(map) => {
            if map.len() == 1
                && let Some(Value::String(text)) = map.get(JSON_LITERAL_KEY)
            {
                *value = serde_json::from_str(text)
                    .map_err(|e| format!("`{JSON_LITERAL_KEY} = {text:?}` is not JSON: {e}"))?;
                return Ok(());
            }
            map.values_mut().try_for_each(resolve)
        }
        Value::Array(items) => items.iter_mut().try_for_each(resolve),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_null_payload_stays_a_payload_on_its_way_to_the_fake() {
        // The fake reads the step back from JSON: `null` must not turn into "absent".
        for key in ["reply", "answer", "params"] {
            let step: Step = serde_json::from_value(json!({ key: null })).unwrap();
            let back = serde_json::to_value(&step).unwrap();
            assert_eq!(back, json!({ key: null }), "{key}");
        }
        let none: Step = serde_json::from_value(json!({})).unwrap();
        assert!(none.reply.is_none() && none.answer.is_none() && none.params.is_none());
    }

    #[test]
    fn every_action_key_is_the_field_serde_reads() {
        // The key each row of the table declares must be the one a scenario writes.
        let samples = [
            json!("x"),
            json!(true),
            json!(1),
            json!({}),
            json!({"code": 1, "message": "m"}),
            json!(["x"]),
        ];
        for (key, _) in ACTIONS {
            let step = samples
                .iter()
                .find_map(|v| serde_json::from_value::<Step>(json!({ *key: v })).ok())
                .unwrap_or_else(|| panic!("no sample value deserializes as `{key}`"));
            assert_eq!(step.actions(), [*key]);
            assert_eq!(step.check(), Ok(*key));
        }
        assert_eq!(ACTION_KEYS.len(), ACTIONS.len());
        assert_eq!(sugar_owner("chunk"), Some(Provider::Acp));
        assert_eq!(sugar_owner("expect"), None);
    }

    #[test]
    fn sugar_modifiers_go_with_their_protocols_sugar() {
        let codex = Step {
            ask: Some("item/tool/requestUserInput".into()),
            session: Some("s".into()),
            ..Step::default()
        };
        assert_eq!(
            codex.check(),
            Err("`session` does not apply to `ask`".into())
        );
        let dsh = Step {
            message: Some("m".into()),
            turn: Some("t".into()),
            ..Step::default()
        };
        assert!(
            dsh.check()
                .unwrap_err()
                .contains("do not apply to `message`")
        );
        let ok = Step {
            message: Some("m".into()),
            session: Some("other".into()),
            ..Step::default()
        };
        assert_eq!(ok.check(), Ok("message"));
    }

    #[test]
    fn json_literals_become_their_values() {
        let mut step = Step {
            turn_completed: Some(json!({"status": "failed", "error": {"message": "m",
                "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": {"$json": "null"}}}}})),
            ..Step::default()
        };
        resolve_json_literals(&mut step).unwrap();
        assert_eq!(
            step.turn_completed.unwrap()["error"]["codexErrorInfo"],
            json!({"httpConnectionFailed": {"httpStatusCode": null}})
        );
        let mut bad = Step {
            reply: Some(json!({"x": {"$json": "nul"}})),
            ..Step::default()
        };
        assert!(
            resolve_json_literals(&mut bad)
                .unwrap_err()
                .contains("is not JSON")
        );
    }
}
