//! Codex provider configuration (`start.config`, the host's own key names).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::provider::duration_ms;

/// The deployment's unattended permission mode (`permissionMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionMode {
    Never,
    ApproveForMe,
    DangerouslyBypass,
}

impl crate::product::ProductMode for PermissionMode {
    const PRODUCT: &'static str = "Codex";

    fn as_str(self) -> &'static str {
        PermissionMode::as_str(self)
    }
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Never => "never",
            PermissionMode::ApproveForMe => "approve-for-me",
            PermissionMode::DangerouslyBypass => "dangerously-bypass-approvals-and-sandbox",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [
            PermissionMode::Never,
            PermissionMode::ApproveForMe,
            PermissionMode::DangerouslyBypass,
        ]
        .into_iter()
        .find(|m| m.as_str() == s)
    }

    /// The `thread/start` fields this mode adds to `{cwd, ephemeral}`.
    pub fn thread_start_fields(self) -> Value {
        match self {
            PermissionMode::Never => json!({"approvalPolicy": "never"}),
            PermissionMode::ApproveForMe => json!({
                "approvalPolicy": "on-request",
                "approvalsReviewer": "auto_review",
                "sandbox": "workspace-write",
            }),
            PermissionMode::DangerouslyBypass => json!({
                "approvalPolicy": "never",
                "sandbox": "danger-full-access",
            }),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct CodexConfig {
    pub permission_mode: PermissionMode,
    /// SIGTERM → SIGKILL grace, and the bound of every wait for exit facts.
    pub dispose_grace: Duration,
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[error("invalid Codex provider configuration: {0}")]
pub struct ConfigError(String);

impl CodexConfig {
    /// Unknown keys (another provider's `permission`, `disposeEofGraceMs`, …) are ignored.
    pub fn from_map(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        let permission_mode = match config.get("permissionMode") {
            None | Some(Value::Null) => PermissionMode::Never,
            Some(Value::String(s)) => PermissionMode::parse(s).ok_or_else(|| {
                ConfigError(
                    "permissionMode must be never, approve-for-me or \
                     dangerously-bypass-approvals-and-sandbox"
                        .into(),
                )
            })?,
            Some(_) => return Err(ConfigError("permissionMode must be a string".into())),
        };
        Ok(CodexConfig {
            permission_mode,
            dispose_grace: duration_ms(config, "disposeGraceMs", 3000).map_err(ConfigError)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults_and_values() {
        let c = CodexConfig::from_map(&map(json!({"permission": "allow", "disposeEofGraceMs": 5})))
            .unwrap();
        assert_eq!(
            c,
            CodexConfig {
                permission_mode: PermissionMode::Never,
                dispose_grace: Duration::from_millis(3000),
            }
        );
        let c = CodexConfig::from_map(&map(json!({
            "permissionMode": "approve-for-me", "disposeGraceMs": 250
        })))
        .unwrap();
        assert_eq!(c.permission_mode, PermissionMode::ApproveForMe);
        assert_eq!(c.dispose_grace, Duration::from_millis(250));
        let c = CodexConfig::from_map(&map(json!({
            "permissionMode": "dangerously-bypass-approvals-and-sandbox"
        })))
        .unwrap();
        assert_eq!(c.permission_mode, PermissionMode::DangerouslyBypass);
    }

    #[test]
    fn invalid_values() {
        for bad in [
            json!({"permissionMode": "ask"}),
            json!({"permissionMode": "Never"}),
            json!({"permissionMode": 1}),
            json!({"disposeGraceMs": 0}),
            json!({"disposeGraceMs": "3000"}),
        ] {
            assert!(CodexConfig::from_map(&map(bad.clone())).is_err(), "{bad}");
        }
    }

    #[test]
    fn thread_start_fields() {
        assert_eq!(
            PermissionMode::Never.thread_start_fields(),
            json!({"approvalPolicy": "never"})
        );
        assert_eq!(
            PermissionMode::ApproveForMe.thread_start_fields(),
            json!({"approvalPolicy": "on-request", "approvalsReviewer": "auto_review",
                   "sandbox": "workspace-write"})
        );
        assert_eq!(
            PermissionMode::DangerouslyBypass.thread_start_fields(),
            json!({"approvalPolicy": "never", "sandbox": "danger-full-access"})
        );
    }
}
