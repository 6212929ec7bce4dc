//! The fake's own failures (reported as `Fault`: a harness problem, never the subject's).

use thiserror::Error;

/// The exit status of a fake that failed its own job (bad arguments, an invalid script, a lost
/// side channel): the one status the fake binaries and their side-channel client both exit with.
pub const FAULT_EXIT: i32 = 2;

#[derive(Debug, Error)]
pub enum FakeError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("cannot read script {path}: {source}")]
    ScriptRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid script: {0}")]
    Script(String),
    #[error("side channel: {0}")]
    Side(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}
