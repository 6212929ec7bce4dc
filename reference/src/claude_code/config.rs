//! The Claude Code provider's configuration (`permissionMode`, `disposeGraceMs`) and what it
//! makes of the CLI's command line: the flags the Agent SDK 0.3.220 passes for the options the
//! host sets (observed by spawning a recording CLI from the real SDK).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::product::{ProductMode, permission_mode};
use crate::provider::{ConfigError, ProviderConfig, duration_ms};

/// The Agent SDK version the host pins; the SDK names itself to the CLI with it.
pub const SDK_VERSION: &str = "0.3.220";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionMode {
    DontAsk,
    AcceptEdits,
    Auto,
    Plan,
    BypassPermissions,
}

impl ProductMode for PermissionMode {
    const PRODUCT: &'static str = super::mapping::PRODUCT;
    const ALL: &'static [PermissionMode] = &[
        PermissionMode::DontAsk,
        PermissionMode::AcceptEdits,
        PermissionMode::Auto,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
    ];
    const DEFAULT: PermissionMode = PermissionMode::DontAsk;

    fn as_str(self) -> &'static str {
        PermissionMode::as_str(self)
    }
}

impl PermissionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::Auto => "auto",
            PermissionMode::Plan => "plan",
            PermissionMode::BypassPermissions => "bypassPermissions",
        }
    }

    /// Whether the host installs its permission callback (every mode but bypass): the SDK then
    /// starts the CLI with `--permission-prompt-tool stdio`.
    pub fn asks_over_stdio(self) -> bool {
        self != PermissionMode::BypassPermissions
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ClaudeCodeConfig {
    pub permission_mode: PermissionMode,
    pub dispose_grace: Duration,
}

impl ProviderConfig for ClaudeCodeConfig {
    const PROVIDER: &'static str = "Claude Code";

    fn from_map(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        Ok(ClaudeCodeConfig {
            permission_mode: permission_mode(config)?,
            dispose_grace: duration_ms(config, "disposeGraceMs", 3000)?,
        })
    }
}

impl ClaudeCodeConfig {
    /// The CLI's flags, in the SDK's order: stream-json both ways, the permission prompt over
    /// stdio unless bypassing, `AskUserQuestion` (and in plan mode `ExitPlanMode`) disallowed,
    /// the mode, and no session persistence.
    pub fn cli_args(&self, drop_prompt_tool: bool) -> Vec<String> {
        let mut args = vec![
            "--output-format",
            "stream-json",
            "--verbose",
            "--input-format",
            "stream-json",
        ];
        if self.permission_mode.asks_over_stdio() && !drop_prompt_tool {
            args.extend(["--permission-prompt-tool", "stdio"]);
        }
        let disallowed = match self.permission_mode {
            PermissionMode::Plan => "AskUserQuestion,ExitPlanMode",
            _ => "AskUserQuestion",
        };
        args.extend(["--disallowedTools", disallowed]);
        args.extend(["--permission-mode", self.permission_mode.as_str()]);
        if self.permission_mode == PermissionMode::BypassPermissions {
            args.push("--allow-dangerously-skip-permissions");
        }
        args.push("--no-session-persistence");
        args.into_iter().map(str::to_owned).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_and_their_command_lines() {
        let c = ClaudeCodeConfig::from_map(&Map::new()).unwrap();
        assert_eq!(c.permission_mode, PermissionMode::DontAsk);
        // As the real SDK 0.3.220 spawned its CLI for the host's dontAsk options.
        assert_eq!(
            c.cli_args(false).join(" "),
            "--output-format stream-json --verbose --input-format stream-json \
             --permission-prompt-tool stdio --disallowedTools AskUserQuestion \
             --permission-mode dontAsk --no-session-persistence"
        );
        let m = json!({"permissionMode": "bypassPermissions"});
        let c = ClaudeCodeConfig::from_map(m.as_object().unwrap()).unwrap();
        assert_eq!(
            c.cli_args(false).join(" "),
            "--output-format stream-json --verbose --input-format stream-json \
             --disallowedTools AskUserQuestion --permission-mode bypassPermissions \
             --allow-dangerously-skip-permissions --no-session-persistence"
        );
        let bad = json!({"permissionMode": "default"});
        assert_eq!(
            ClaudeCodeConfig::from_map(bad.as_object().unwrap()).map_err(|e| e.to_string()),
            Err(
                "permissionMode must be dontAsk, acceptEdits, auto, plan or bypassPermissions"
                    .into()
            )
        );
    }
}
