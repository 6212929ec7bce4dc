//! Safe diagnostic lines (seed 000) and the shared 4096-byte bound.
//!
//! Only closed-set values, the current call site and observed process outcomes ever reach these
//! lines; every field is an enum or a number, so raw text cannot slip in by construction (the
//! `stop reason` field only ever holds the closed-set wire value `max_turn_requests`).

use std::fmt;

/// Upper bound of a diagnostic, in UTF-8 bytes.
pub const MAX_DIAGNOSTIC_BYTES: usize = 4096;
/// Appended to a cut diagnostic (23 bytes).
pub const TRUNCATION_SUFFIX: &str = "\n[diagnostic truncated]";

/// Bound a diagnostic to [`MAX_DIAGNOSTIC_BYTES`]: unchanged when it fits (exactly 4096 bytes is
/// kept); otherwise cut at the last character boundary at or before byte 4073 and suffixed with
/// [`TRUNCATION_SUFFIX`].
pub fn limit_diagnostic(text: &str) -> String {
    if text.len() <= MAX_DIAGNOSTIC_BYTES {
        return text.to_owned();
    }
    let mut cut = MAX_DIAGNOSTIC_BYTES - TRUNCATION_SUFFIX.len();
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut out = String::with_capacity(cut + TRUNCATION_SUFFIX.len());
    out.push_str(&text[..cut]);
    out.push_str(TRUNCATION_SUFFIX);
    out
}

/// The operation a failure belongs to (the ACP and DSH SDK tables of seed 000).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Initialize,
    NewSession,
    Prompt,
    Process,
    Teardown,
    /// DSH SDK: prompt acceptance, session notifications, the final child turn reason.
    SessionRun,
    /// DSH SDK: bounded SDK shutdown and runtime process release.
    Shutdown,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Initialize => "initialize",
            Stage::NewSession => "new-session",
            Stage::Prompt => "prompt",
            Stage::Process => "process",
            Stage::Teardown => "teardown",
            Stage::SessionRun => "session-run",
            Stage::Shutdown => "shutdown",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Category {
    Configuration,
    Transport,
    ProcessExit,
    ProcessStart,
    Protocol,
    RemoteLimit,
    Unknown,
    ChildError,
    ChildDisposed,
    ChildUnknown,
    MissingTerminal,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Configuration => "configuration",
            Category::Transport => "transport",
            Category::ProcessExit => "process-exit",
            Category::ProcessStart => "process-start",
            Category::Protocol => "protocol",
            Category::RemoteLimit => "remote-limit",
            Category::Unknown => "unknown",
            Category::ChildError => "child-error",
            Category::ChildDisposed => "child-disposed",
            Category::ChildUnknown => "child-unknown",
            Category::MissingTerminal => "missing-terminal",
        }
    }
}

/// How a managed child ended, as observed by the process handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ExitFacts {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

/// `SIGTERM`, `SIGKILL`, … (falls back to `SIG<n>` for numbers without a name).
pub fn signal_name(signal: i32) -> String {
    match nix::sys::signal::Signal::try_from(signal) {
        Ok(sig) => sig.as_str().to_owned(),
        Err(_) => format!("SIG{signal}"),
    }
}

/// `Subagent failure (provider: ACP|DSH SDK; stage: …; category: …[; stop reason: …][; exit code: …][; signal: …])`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailureLine {
    pub provider: &'static str,
    pub stage: Stage,
    pub category: Category,
    /// Closed-set wire stop reason (only `max_turn_requests` today).
    pub stop_reason: Option<&'static str>,
    pub exit: ExitFacts,
}

impl FailureLine {
    pub fn acp(stage: Stage, category: Category) -> Self {
        FailureLine {
            provider: "ACP",
            stage,
            category,
            stop_reason: None,
            exit: ExitFacts::default(),
        }
    }

    /// A DSH SDK line: never an exit code or signal (the SDK client exposes none as a fact).
    pub fn dsh(stage: Stage, category: Category) -> Self {
        FailureLine {
            provider: "DSH SDK",
            ..FailureLine::acp(stage, category)
        }
    }

    pub fn with_stop_reason(mut self, reason: &'static str) -> Self {
        self.stop_reason = Some(reason);
        self
    }

    pub fn with_exit(mut self, exit: ExitFacts) -> Self {
        self.exit = exit;
        self
    }
}

impl fmt::Display for FailureLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut fields = vec![
            format!("provider: {}", self.provider),
            format!("stage: {}", self.stage.as_str()),
            format!("category: {}", self.category.as_str()),
        ];
        if let Some(reason) = self.stop_reason {
            fields.push(format!("stop reason: {reason}"));
        }
        if let Some(code) = self.exit.code {
            fields.push(format!("exit code: {code}"));
        }
        if let Some(signal) = self.exit.signal {
            fields.push(format!("signal: {}", signal_name(signal)));
        }
        write!(f, "Subagent failure ({})", fields.join("; "))
    }
}

/// `Product subagent failure (product: …; stage: …; category: …[; HTTP status: …][; exit code: …][; signal: …])`
/// (seed 001, product providers). Every field is a closed-set value or a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProductLine {
    pub product: &'static str,
    pub stage: &'static str,
    pub category: &'static str,
    pub http_status: Option<u16>,
    pub exit: ExitFacts,
}

impl ProductLine {
    pub fn new(product: &'static str, stage: &'static str, category: &'static str) -> Self {
        ProductLine {
            product,
            stage,
            category,
            http_status: None,
            exit: ExitFacts::default(),
        }
    }

    pub fn with_http_status(mut self, status: Option<u16>) -> Self {
        self.http_status = status;
        self
    }

    pub fn with_exit(mut self, exit: ExitFacts) -> Self {
        self.exit = exit;
        self
    }
}

impl fmt::Display for ProductLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut fields = vec![
            format!("product: {}", self.product),
            format!("stage: {}", self.stage),
            format!("category: {}", self.category),
        ];
        if let Some(status) = self.http_status {
            fields.push(format!("HTTP status: {status}"));
        }
        if let Some(code) = self.exit.code {
            fields.push(format!("exit code: {code}"));
        }
        if let Some(signal) = self.exit.signal {
            fields.push(format!("signal: {}", signal_name(signal)));
        }
        write!(f, "Product subagent failure ({})", fields.join("; "))
    }
}

/// Configured unattended permission policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Allow,
    Reject,
}

impl Policy {
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::Allow => "allow",
            Policy::Reject => "reject",
        }
    }
}

/// ACP `ToolKind` values; anything else (absent, non-string, unknown) is shown as `unknown`.
pub const ACP_TOOL_KINDS: [&str; 10] = [
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
];

/// The closed-set request kind for a raw `toolCall.kind` value.
pub fn tool_kind(raw: Option<&serde_json::Value>) -> &'static str {
    raw.and_then(|v| v.as_str())
        .and_then(|s| ACP_TOOL_KINDS.iter().find(|k| **k == s).copied())
        .unwrap_or("unknown")
}

/// The latest permission fact of the current prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PermissionFact {
    pub policy: Policy,
    /// One of [`ACP_TOOL_KINDS`] or `unknown`.
    pub request: &'static str,
    pub allowed: bool,
}

impl fmt::Display for PermissionFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ACP unattended decision (policy: {}; request: {}; decision: {})",
            self.policy.as_str(),
            self.request,
            if self.allowed { "allowed" } else { "denied" }
        )
    }
}

/// Failure line followed by the permission line (generic `error` path).
pub fn with_permission(line: &FailureLine, permission: Option<&PermissionFact>) -> String {
    match permission {
        Some(p) => format!("{line}\n{p}"),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_fields_in_fixed_order() {
        let line = FailureLine::acp(Stage::Prompt, Category::RemoteLimit)
            .with_stop_reason("max_turn_requests");
        assert_eq!(
            line.to_string(),
            "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)"
        );
        let line = FailureLine::acp(Stage::Prompt, Category::Transport).with_exit(ExitFacts {
            code: Some(1),
            signal: Some(libc::SIGTERM),
        });
        assert_eq!(
            line.to_string(),
            "Subagent failure (provider: ACP; stage: prompt; category: transport; exit code: 1; signal: SIGTERM)"
        );
        let line = FailureLine::acp(Stage::Process, Category::ProcessExit).with_exit(ExitFacts {
            code: None,
            signal: Some(libc::SIGKILL),
        });
        assert_eq!(
            line.to_string(),
            "Subagent failure (provider: ACP; stage: process; category: process-exit; signal: SIGKILL)"
        );
        assert_eq!(
            FailureLine::acp(Stage::Process, Category::ProcessStart).to_string(),
            "Subagent failure (provider: ACP; stage: process; category: process-start)"
        );
        assert_eq!(signal_name(libc::SIGABRT), "SIGABRT");
        assert_eq!(
            FailureLine::dsh(Stage::SessionRun, Category::ChildError).to_string(),
            "Subagent failure (provider: DSH SDK; stage: session-run; category: child-error)"
        );
        assert_eq!(
            FailureLine::dsh(Stage::Shutdown, Category::Unknown).to_string(),
            "Subagent failure (provider: DSH SDK; stage: shutdown; category: unknown)"
        );
    }

    #[test]
    fn product_lines() {
        let line =
            ProductLine::new("Codex", "turn", "httpConnectionFailed").with_http_status(Some(503));
        assert_eq!(
            line.to_string(),
            "Product subagent failure (product: Codex; stage: turn; category: httpConnectionFailed; HTTP status: 503)"
        );
        let line = ProductLine::new("Codex", "initialize", "unknown")
            .with_http_status(Some(429))
            .with_exit(ExitFacts {
                code: Some(0),
                signal: Some(libc::SIGABRT),
            });
        assert_eq!(
            line.to_string(),
            "Product subagent failure (product: Codex; stage: initialize; category: unknown; HTTP status: 429; exit code: 0; signal: SIGABRT)"
        );
    }

    #[test]
    fn permission_lines() {
        let fact = PermissionFact {
            policy: Policy::Reject,
            request: "execute",
            allowed: false,
        };
        assert_eq!(
            fact.to_string(),
            "ACP unattended decision (policy: reject; request: execute; decision: denied)"
        );
        let line = FailureLine::acp(Stage::Prompt, Category::Unknown);
        assert_eq!(
            with_permission(&line, Some(&fact)),
            "Subagent failure (provider: ACP; stage: prompt; category: unknown)\nACP unattended decision (policy: reject; request: execute; decision: denied)"
        );
        assert_eq!(tool_kind(Some(&serde_json::json!("edit"))), "edit");
        assert_eq!(
            tool_kind(Some(&serde_json::json!("switch_mode"))),
            "switch_mode"
        );
        assert_eq!(tool_kind(Some(&serde_json::json!("nuke"))), "unknown");
        assert_eq!(tool_kind(Some(&serde_json::json!(3))), "unknown");
        assert_eq!(tool_kind(None), "unknown");
    }

    #[test]
    fn bound_keeps_short_and_exact() {
        assert_eq!(limit_diagnostic("short"), "short");
        let exact = "a".repeat(4096);
        assert_eq!(limit_diagnostic(&exact), exact);
        let exact_multibyte = format!("{}{}", "权".repeat(1365), "a");
        assert_eq!(exact_multibyte.len(), 4096);
        assert_eq!(limit_diagnostic(&exact_multibyte), exact_multibyte);
    }

    #[test]
    fn bound_cuts_4097() {
        let long = "a".repeat(4097);
        let out = limit_diagnostic(&long);
        assert_eq!(out.len(), 4096);
        assert_eq!(&out[..4073], &long[..4073]);
        assert!(out.ends_with("\n[diagnostic truncated]"));
    }

    #[test]
    fn bound_never_splits_multibyte() {
        let long = "权限".repeat(4096);
        let out = limit_diagnostic(&long);
        assert_eq!(out.len(), 4094);
        assert_eq!(out.len() - TRUNCATION_SUFFIX.len(), 4071);
        assert_eq!(
            out.trim_end_matches(TRUNCATION_SUFFIX).chars().count(),
            1357
        );
        assert!(!out.contains('\u{FFFD}'));
        // A 4-byte character straddling byte 4073.
        let emoji = format!("{}{}", "a".repeat(4071), "😀".repeat(10));
        let out = limit_diagnostic(&emoji);
        assert_eq!(out.len(), 4071 + TRUNCATION_SUFFIX.len());
    }

    proptest::proptest! {
        #[test]
        fn bound_properties(s in "\\PC{0,1500}", repeat in 1usize..6) {
            let input = s.repeat(repeat);
            let out = limit_diagnostic(&input);
            proptest::prop_assert!(out.len() <= MAX_DIAGNOSTIC_BYTES);
            if input.len() <= MAX_DIAGNOSTIC_BYTES {
                proptest::prop_assert_eq!(&out, &input);
            } else {
                proptest::prop_assert!(out.ends_with(TRUNCATION_SUFFIX));
                let prefix = &out[..out.len() - TRUNCATION_SUFFIX.len()];
                proptest::prop_assert!(input.starts_with(prefix));
                proptest::prop_assert!(prefix.len() > MAX_DIAGNOSTIC_BYTES - TRUNCATION_SUFFIX.len() - 4);
            }
        }
    }
}
