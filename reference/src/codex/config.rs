//! Codex provider configuration (`start.config`, the host's own key names).

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::product::{ProductMode, permission_mode};
use crate::provider::{ConfigError, ProviderConfig, duration_ms};

/// The deployment's unattended permission mode (`permissionMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionMode {
    Never,
    ApproveForMe,
    DangerouslyBypass,
}

impl ProductMode for PermissionMode {
    const PRODUCT: &'static str = "Codex";
    const ALL: &'static [PermissionMode] = &[
        PermissionMode::Never,
        PermissionMode::ApproveForMe,
        PermissionMode::DangerouslyBypass,
    ];
    const DEFAULT: PermissionMode = PermissionMode::Never;

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

impl ProviderConfig for CodexConfig {
    const PROVIDER: &'static str = "Codex";

    /// Unknown keys (another provider's `permission`, `disposeEofGraceMs`, …) are ignored.
    fn from_map(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        Ok(CodexConfig {
            permission_mode: permission_mode(config)?,
            dispose_grace: duration_ms(config, "disposeGraceMs", 3000)?,
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
        assert_eq!(
            CodexConfig::from_map(&map(json!({"permissionMode": "ask"})))
                .map_err(|e| e.to_string()),
            Err("permissionMode must be never, approve-for-me or \
                 dangerously-bypass-approvals-and-sandbox"
                .into())
        );
        assert_eq!(
            CodexConfig::from_map(&map(json!({"permissionMode": 1}))).map_err(|e| e.to_string()),
            Err("permissionMode must be a string".into())
        );
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
