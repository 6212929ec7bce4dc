//! The subject adapter protocol (`conform-subject/1`): harness ⇄ subject, one JSON object per
//! line on the subject's stdin/stdout. Documented for adapter authors in
//! `docs/subject-protocol.md`; every line a subject sends is validated against
//! `docs/subject-protocol.schema.json` before it is parsed into these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use crate::vocab::Mode;
use crate::vocab::Provider;

/// What the provider must spawn instead of its default child runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Runtime {
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    #[serde(default)]
    pub env: Map<String, Value>,
    pub cwd: String,
}

/// Harness → subject.
// `Start` is much larger than the rest; these are short-lived messages, boxing buys nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToSubject {
    Hello {
        protocol: String,
    },
    Start {
        run: String,
        provider: Provider,
        mode: Mode,
        label: String,
        task: String,
        runtime: Runtime,
        /// Provider configuration, camelCase keys as the host spells them
        /// (`permission`, `disposeEofGraceMs`, `disposeGraceMs`, …).
        #[serde(default)]
        config: Map<String, Value>,
        #[serde(rename = "expectedBy")]
        expected_by: String,
        /// The tool call's signal is already aborted when `start()` is called (a local cancel
        /// that came before the start: `[cancel] at = "before-start"`). Foreground only; sent
        /// only when true, so a subject that predates it reads the `start` it always did.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        aborted: bool,
    },
    /// Local cancellation: abort the foreground call, or `job_kill` the background job.
    Cancel {
        run: String,
    },
    /// The host disposes the run directly, as its own teardown does (not through the tool
    /// call's signal): call the run handle's `dispose()` while the run may still be going.
    /// Sent only to a subject whose hello lists the [`RunControl::Dispose`] control.
    Dispose {
        run: String,
    },
    JobOutput {
        run: String,
        #[serde(default)]
        wait: bool,
    },
    Shutdown,
}

/// A run control a subject may take beyond `cancel` and `job_output`, named in its hello.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunControl {
    /// `{"type":"dispose","run":…}`: the host's own dispose of a run in flight.
    Dispose,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubjectInfo {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StartError {
    /// Error class name, e.g. AcpRunFailure.
    #[schemars(length(min = 1))]
    pub name: String,
    /// Model-visible message.
    pub message: String,
}

// Subject → harness.
/// Every line a subject writes on stdout must be one JSON object valid against this schema.
/// Unknown message types and unknown fields are rejected so that typos fail loudly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
#[schemars(title = "conform-subject/1: a line from the subject to the harness")]
pub enum FromSubject {
    Hello {
        #[schemars(extend("const" = "conform-subject/1"))]
        protocol: String,
        subject: SubjectInfo,
        /// The providers the subject hosts: conform's, or a name the protocol reserves for a
        /// provider to come (the harness runs no case for it).
        #[schemars(schema_with = "provider_names")]
        providers: Vec<String>,
        #[schemars(extend("uniqueItems" = true))]
        modes: Vec<Mode>,
        /// The run controls the subject takes beyond `cancel` and `job_output` (absent: none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        #[schemars(extend("uniqueItems" = true))]
        controls: Vec<RunControl>,
        /// The product version each provider is built against (`{"dsh-sdk": "0.1.1"}`): the
        /// fakes speak those (`conform run --product-version` overrides). Absent: the defaults.
        #[serde(
            default,
            rename = "productVersions",
            skip_serializing_if = "std::collections::BTreeMap::is_empty"
        )]
        product_versions: std::collections::BTreeMap<String, String>,
    },
    /// The dispatch receipt: the run was published after the provider's handshake.
    Dispatched {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        #[serde(rename = "childSessionKey")]
        #[schemars(length(min = 1))]
        child_session_key: String,
        /// RFC 3339 time.
        #[serde(rename = "dispatchAt")]
        #[schemars(extend("format" = "date-time"))]
        dispatch_at: String,
        /// RFC 3339 time.
        #[serde(rename = "expectedBy")]
        #[schemars(extend("format" = "date-time"))]
        expected_by: String,
    },
    StartRejected {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        error: StartError,
    },
    /// The raw SubagentResult.
    Result {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        #[serde(rename = "stopReason")]
        #[schemars(length(min = 1))]
        stop_reason: String,
        #[schemars(with = "Vec<OutputBlock>")]
        output: Vec<Value>,
        /// Absent when the result carries none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(with = "String")]
        diagnostic: Option<String>,
    },
    ToolResult {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        #[serde(rename = "isError")]
        is_error: bool,
        text: String,
    },
    /// A background completion notice delivered into the parent conversation: the completion
    /// receipt.
    Notice {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        #[schemars(length(min = 1))]
        job: String,
        text: String,
    },
    JobOutput {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        text: String,
    },
    /// dispose() finished: the provider claims the child's process tree is released.
    Settled {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
    },
    /// The host refused the call before any job or provider run existed (e.g. a configuration
    /// it validates when its plugin loads): no start, no job. Followed by the `tool_result` the
    /// parent model got; nothing else follows.
    Refused {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        /// What the host refused with (its error class and message).
        error: StartError,
    },
    /// Host-only text; raw errors may appear here and only here.
    HostLog {
        /// The run id the harness chose in `start`.
        #[schemars(length(min = 1))]
        run: String,
        text: String,
    },
}

/// One output block of a result: an object with a string `type` (other members as the provider
/// writes them).
#[derive(JsonSchema)]
#[allow(dead_code)] // a schema shape only
struct OutputBlock {
    r#type: String,
}

/// The provider names a `hello` may offer: conform's providers and the names the protocol
/// reserves for providers to come, each once.
fn provider_names(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut names: Vec<&str> = crate::vocab::Provider::ALL
        .iter()
        .map(|p| p.as_str())
        .collect();
    names.extend(
        RESERVED_PROVIDERS
            .iter()
            .filter(|r| !names.contains(r))
            .collect::<Vec<_>>(),
    );
    schemars::json_schema!({
        "type": "array",
        "items": { "enum": names },
        "uniqueItems": true
    })
}

/// Provider names a subject may offer before conform has cases for them (none now: seed 001's
/// second product provider, `claude-code`, has its own).
pub const RESERVED_PROVIDERS: &[&str] = &[];

/// The JSON Schema of every line a subject sends (`docs/subject-protocol.schema.json`).
pub fn json_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(FromSubject)).expect("schema serialises")
}

impl FromSubject {
    /// The run a message belongs to (`None` for `hello`).
    pub fn run(&self) -> Option<&str> {
        match self {
            FromSubject::Hello { .. } => None,
            FromSubject::Dispatched { run, .. }
            | FromSubject::StartRejected { run, .. }
            | FromSubject::Refused { run, .. }
            | FromSubject::Result { run, .. }
            | FromSubject::ToolResult { run, .. }
            | FromSubject::Notice { run, .. }
            | FromSubject::JobOutput { run, .. }
            | FromSubject::Settled { run }
            | FromSubject::HostLog { run, .. } => Some(run),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_committed_subject_schema_is_current() {
        let committed: serde_json::Value =
            serde_json::from_str(include_str!("../../../docs/subject-protocol.schema.json"))
                .expect("docs/subject-protocol.schema.json is JSON");
        assert_eq!(
            committed,
            super::json_schema(),
            "docs/subject-protocol.schema.json is stale: `conform schema subject > docs/subject-protocol.schema.json`"
        );
    }

    /// `aborted` is additive: a `start` without it is the `start` it always was, and the
    /// harness writes it only when it is true.
    #[test]
    fn start_says_aborted_only_when_it_is() {
        use super::ToSubject;
        let line = r#"{"type":"start","run":"r1","provider":"acp","mode":"foreground","label":"l","task":"t","runtime":{"command":"c","cwd":"/"},"expectedBy":"2026-01-01T00:00:00.000Z"}"#;
        let start: ToSubject = serde_json::from_str(line).unwrap();
        let ToSubject::Start { aborted, .. } = &start else {
            panic!("{start:?}")
        };
        assert!(!aborted);
        assert!(!serde_json::to_string(&start).unwrap().contains("aborted"));
        let mut aborted_start = start.clone();
        if let ToSubject::Start { aborted, .. } = &mut aborted_start {
            *aborted = true;
        }
        let written = serde_json::to_string(&aborted_start).unwrap();
        assert!(written.contains(r#""aborted":true"#), "{written}");
        assert_eq!(
            serde_json::from_str::<ToSubject>(&written).unwrap(),
            aborted_start
        );
    }
}
