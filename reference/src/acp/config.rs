//! ACP provider configuration (`start.config`, the host's own key names).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::diagnostic::Policy;
use crate::provider::{ConfigError, ProviderConfig, duration_ms, path};

#[derive(Clone, Debug, PartialEq)]
pub struct AcpConfig {
    pub permission: Policy,
    pub dispose_eof_grace: Duration,
    pub dispose_grace: Duration,
}

impl ProviderConfig for AcpConfig {
    const PROVIDER: &'static str = "ACP";

    fn from_map(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        let permission = match config.get("permission") {
            None | Some(Value::Null) => Policy::Reject,
            Some(Value::String(s)) if s == "reject" => Policy::Reject,
            Some(Value::String(s)) if s == "allow" => Policy::Allow,
            Some(_) => {
                return Err(ConfigError::Invalid(
                    "permission must be allow or reject".into(),
                ));
            }
        };
        // Its own working directory is taken where the run starts (`driver::drive`).
        path(config, "cwd")?;
        Ok(AcpConfig {
            permission,
            dispose_eof_grace: duration_ms(config, "disposeEofGraceMs", 6000)?,
            dispose_grace: duration_ms(config, "disposeGraceMs", 3000)?,
        })
    }
}
