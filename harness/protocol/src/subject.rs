//! The subject adapter protocol (`conform-subject/1`): harness ⇄ subject, one JSON object per
//! line on the subject's stdin/stdout. Documented for adapter authors in
//! `docs/subject-protocol.md`; every line a subject sends is validated against
//! `docs/subject-protocol.schema.json` before it is parsed into these types.

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
    },
    /// Local cancellation: abort the foreground call, or `job_kill` the background job.
    Cancel {
        run: String,
    },
    JobOutput {
        run: String,
        #[serde(default)]
        wait: bool,
    },
    Shutdown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubjectInfo {
    pub name: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StartError {
    /// Error class name, e.g. `AcpRunFailure`.
    pub name: String,
    /// Model-visible message.
    pub message: String,
}

/// Subject → harness.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromSubject {
    Hello {
        protocol: String,
        subject: SubjectInfo,
        providers: Vec<String>,
        modes: Vec<Mode>,
    },
    /// The dispatch receipt: the run was published (handshake done).
    Dispatched {
        run: String,
        #[serde(rename = "childSessionKey")]
        child_session_key: String,
        #[serde(rename = "dispatchAt")]
        dispatch_at: String,
        #[serde(rename = "expectedBy")]
        expected_by: String,
    },
    StartRejected {
        run: String,
        error: StartError,
    },
    /// The raw `SubagentResult`.
    Result {
        run: String,
        #[serde(rename = "stopReason")]
        stop_reason: String,
        output: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        diagnostic: Option<String>,
    },
    ToolResult {
        run: String,
        #[serde(rename = "isError")]
        is_error: bool,
        text: String,
    },
    /// A background completion notice: the completion receipt.
    Notice {
        run: String,
        job: String,
        text: String,
    },
    JobOutput {
        run: String,
        text: String,
    },
    /// `dispose()` finished: the provider claims the child's process tree is released.
    Settled {
        run: String,
    },
    HostLog {
        run: String,
        text: String,
    },
}

impl FromSubject {
    /// The run a message belongs to (`None` for `hello`).
    pub fn run(&self) -> Option<&str> {
        match self {
            FromSubject::Hello { .. } => None,
            FromSubject::Dispatched { run, .. }
            | FromSubject::StartRejected { run, .. }
            | FromSubject::Result { run, .. }
            | FromSubject::ToolResult { run, .. }
            | FromSubject::Notice { run, .. }
            | FromSubject::JobOutput { run, .. }
            | FromSubject::Settled { run }
            | FromSubject::HostLog { run, .. } => Some(run),
        }
    }
}
