//! What the product providers (Codex, Claude Code) share: how a failure line becomes a start
//! rejection (a failed cleanup aggregated beside it, a cancelled start's cleanup fact), the
//! diagnostic with its latest unattended decision, and that decision's fixed line. Each
//! provider names its product, error and prefix.

use std::fmt;

use conform_protocol::subject::StartError;
use serde_json::{Map, Value};

use crate::diagnostic::{ProductLine, limit_diagnostic};
use crate::driver::with_rollback;
use crate::provider::{ABORT_ERROR_NAME, ConfigError, StderrTail};

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

    /// A start that failed with `line`: its rejection (the stderr tail leaked into it by the
    /// seeded defect `leak-raw-error`), with the teardown awaited after the line is taken.
    pub async fn start_failed(
        &self,
        line: &ProductLine,
        leak: Option<&StderrTail>,
        teardown: impl Future<Output = Result<(), StartError>>,
    ) -> StartError {
        let mut message = format!("{}{line}", self.prefix);
        if let Some(stderr) = leak {
            message = stderr.leak(message).await;
        }
        let error = StartError {
            name: self.error_name.into(),
            message,
        };
        with_rollback(error, teardown.await)
    }
}

/// `line` + `\n` + the latest unattended decision, bounded.
pub fn diagnostic(line: &ProductLine, fact: Option<&dyn fmt::Display>) -> String {
    limit_diagnostic(&match fact {
        Some(f) => format!("{line}\n{f}"),
        None => line.to_string(),
    })
}

/// A product's permission mode (`permissionMode`), as its configuration and its decision line
/// name it.
pub trait ProductMode: Copy + fmt::Debug + PartialEq + Eq + 'static {
    /// The product the line names (`Codex`, `Claude Code`).
    const PRODUCT: &'static str;
    /// Every mode, in the order the configuration error lists them.
    const ALL: &'static [Self];
    /// The mode of a configuration that names none.
    const DEFAULT: Self;

    fn as_str(self) -> &'static str;

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.as_str() == s)
    }
}

/// `permissionMode` from `start.config` (absent or `null`: the product's default mode).
pub fn permission_mode<M: ProductMode>(config: &Map<String, Value>) -> Result<M, ConfigError> {
    match config.get("permissionMode") {
        None | Some(Value::Null) => Ok(M::DEFAULT),
        Some(Value::String(s)) => M::parse(s).ok_or_else(|| {
            let names: Vec<&str> = M::ALL.iter().map(|m| m.as_str()).collect();
            let (last, rest) = names.split_last().expect("a product has modes");
            format!("permissionMode must be {} or {last}", rest.join(", ")).into()
        }),
        Some(_) => Err(ConfigError::Invalid(
            "permissionMode must be a string".into(),
        )),
    }
}

/// One safe unattended decision: the configured mode, a closed-set request, the decision and a
/// fixed reason — nothing the runtime sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision<M> {
    pub mode: M,
    pub request: &'static str,
    pub decision: &'static str,
    pub reason: &'static str,
}

impl<M: ProductMode> fmt::Display for Decision<M> {
    /// `<product> unattended decision (mode: …; request: …; decision: …): <reason>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} unattended decision (mode: {}; request: {}; decision: {}): {}",
            M::PRODUCT,
            self.mode.as_str(),
            self.request,
            self.decision,
            self.reason
        )
    }
}
