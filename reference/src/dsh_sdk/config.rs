//! DSH SDK provider configuration (`start.config`, the host's own key names).

use std::time::Duration;

use serde_json::{Map, Value};

use crate::provider::{ConfigError, MAX_SAFE_INTEGER, ProviderConfig, duration_ms, path};

#[derive(Clone, Debug, PartialEq)]
pub struct DshConfig {
    /// The runtime's model provider (`initialize.provider`).
    pub provider: String,
    /// `initialize.model`.
    pub model: String,
    /// `initialize.maxTokens`, sent only when configured.
    pub max_tokens: Option<u64>,
    /// Bound of the `shutdown` request.
    pub shutdown_timeout: Duration,
    pub dispose_eof_grace: Duration,
    pub dispose_grace: Duration,
}

fn name(config: &Map<String, Value>, key: &str, default: &str) -> Result<String, ConfigError> {
    match config.get(key) {
        None | Some(Value::Null) => Ok(default.to_owned()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(_) => Err(format!("{key} must be a non-empty string").into()),
    }
}

fn max_tokens(config: &Map<String, Value>) -> Result<Option<u64>, ConfigError> {
    let bad = || ConfigError::Invalid("maxTokens must be a positive safe integer".into());
    match config.get("maxTokens") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = match v.as_u64() {
                Some(n) => n,
                // `4096.0` is the integer 4096 in JSON's number model.
                None => match v.as_f64() {
                    Some(f) if f.fract() == 0.0 && f >= 1.0 && f <= MAX_SAFE_INTEGER as f64 => {
                        f as u64
                    }
                    _ => return Err(bad()),
                },
            };
            if (1..=MAX_SAFE_INTEGER).contains(&n) {
                Ok(Some(n))
            } else {
                Err(bad())
            }
        }
    }
}

impl ProviderConfig for DshConfig {
    const PROVIDER: &'static str = "DSH SDK";

    /// Unknown keys (another provider's `permission`, …) are ignored.
    fn from_map(config: &Map<String, Value>) -> Result<Self, ConfigError> {
        let ms = |key, default| duration_ms(config, key, default);
        // Its own working directory is taken where the run starts (`driver::drive`).
        path(config, "cwd")?;
        Ok(DshConfig {
            provider: name(config, "provider", "deepseek-official")?,
            model: name(config, "model", "deepseek-v4-flash")?,
            max_tokens: max_tokens(config)?,
            shutdown_timeout: ms("shutdownTimeoutMs", 1000)?,
            dispose_eof_grace: ms("disposeEofGraceMs", 6000)?,
            dispose_grace: ms("disposeGraceMs", 3000)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn defaults() {
        let c = DshConfig::from_map(&map(json!({"permission": "allow"}))).unwrap();
        assert_eq!(
            c,
            DshConfig {
                provider: "deepseek-official".into(),
                model: "deepseek-v4-flash".into(),
                max_tokens: None,
                shutdown_timeout: Duration::from_millis(1000),
                dispose_eof_grace: Duration::from_millis(6000),
                dispose_grace: Duration::from_millis(3000),
            }
        );
    }

    #[test]
    fn explicit_values() {
        let c = DshConfig::from_map(&map(json!({
            "provider": "fake", "model": "m", "maxTokens": 4096,
            "shutdownTimeoutMs": 200, "disposeEofGraceMs": 100, "disposeGraceMs": 50
        })))
        .unwrap();
        assert_eq!(c.provider, "fake");
        assert_eq!(c.model, "m");
        assert_eq!(c.max_tokens, Some(4096));
        assert_eq!(c.shutdown_timeout, Duration::from_millis(200));
        assert_eq!(c.dispose_eof_grace, Duration::from_millis(100));
        assert_eq!(c.dispose_grace, Duration::from_millis(50));
        let c = DshConfig::from_map(&map(json!({"maxTokens": 7.0}))).unwrap();
        assert_eq!(c.max_tokens, Some(7));
    }

    #[test]
    fn invalid_values() {
        for bad in [
            json!({"provider": ""}),
            json!({"provider": 3}),
            json!({"model": ["x"]}),
            json!({"maxTokens": 0}),
            json!({"maxTokens": -4}),
            json!({"maxTokens": 1.5}),
            json!({"maxTokens": "4096"}),
            json!({"maxTokens": 9007199254740992u64}),
            json!({"shutdownTimeoutMs": 0}),
            json!({"disposeEofGraceMs": "6000"}),
            json!({"disposeGraceMs": -1}),
        ] {
            assert!(DshConfig::from_map(&map(bad.clone())).is_err(), "{bad}");
        }
    }
}
