//! The fake's own failures (reported as `Fault`: a harness problem, never the subject's).

use thiserror::Error;

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
