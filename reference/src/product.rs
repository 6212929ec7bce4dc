//! What the product providers (Codex, Claude Code) share: how a failure line becomes a start
//! rejection (a failed cleanup aggregated beside it), the diagnostic with its latest unattended
//! decision, and that decision's fixed line. Each provider names its product, error and prefix.

use std::fmt;

use conform_protocol::subject::StartError;

use crate::diagnostic::{ProductLine, limit_diagnostic};
use crate::provider::ABORT_ERROR_NAME;

/// A product provider's names for its rejections.
#[derive(Clone, Copy, Debug)]
pub struct Rejections {
    /// The error class of a failure (`CodexRunFailure`).
    pub error_name: &'static str,
    /// Before every message (`subagent-codex: `).
    pub prefix: &'static str,
}

impl Rejections {
    /// The rejection showing `line`.
    pub fn failure(&self, line: &ProductLine) -> StartError {
        StartError {
            name: self.error_name.into(),
            message: format!("{}{line}", self.prefix),
        }
    }

    /// A plain `Error` with a fixed message (an abort, a precondition).
    pub fn plain(message: &str) -> StartError {
        StartError {
            name: ABORT_ERROR_NAME.into(),
            message: message.into(),
        }
    }

    /// A failed start's rejection, `message` being its own: alone when the cleanup settled,
    /// else an `AggregateError` keeping both the start line and the teardown line.
    pub fn failed_start(&self, message: String, cleanup: Result<(), ProductLine>) -> StartError {
        match cleanup {
            Ok(()) => StartError {
                name: self.error_name.into(),
                message,
            },
            Err(teardown) => StartError {
                name: "AggregateError".into(),
                message: format!("{message}; {}{teardown}", self.prefix),
            },
        }
    }
}

/// `line` + `\n` + the latest unattended decision, bounded.
pub fn diagnostic(line: &ProductLine, fact: Option<&dyn fmt::Display>) -> String {
    limit_diagnostic(&match fact {
        Some(f) => format!("{line}\n{f}"),
        None => line.to_string(),
    })
}

/// `<product> unattended decision (mode: …; request: …; decision: …): <reason>` — only the
/// configured mode, a closed-set request, the decision and a fixed reason.
pub fn write_decision(
    f: &mut fmt::Formatter<'_>,
    product: &str,
    mode: &str,
    request: &str,
    decision: &str,
    reason: &str,
) -> fmt::Result {
    write!(
        f,
        "{product} unattended decision (mode: {mode}; request: {request}; decision: {decision}): {reason}"
    )
}
