use std::time::Duration;

use serde_json::Map;

use super::*;
use crate::provider::ProviderConfig;

const PERM: PermissionFact = PermissionFact {
    policy: Policy::Reject,
    request: "execute",
    allowed: false,
};
const PERM_LINE: &str =
    "ACP unattended decision (policy: reject; request: execute; decision: denied)";

#[test]
fn stop_reasons() {
    let m = |raw: Value, p: Option<&PermissionFact>| map_stop_reason(Some(&raw), p, false);
    assert_eq!(m(json!("end_turn"), None), ("completed", None));
    assert_eq!(m(json!("end_turn"), Some(&PERM)), ("completed", None));
    assert_eq!(m(json!("max_tokens"), None), ("max-tokens", None));
    assert_eq!(m(json!("refusal"), None), ("refusal", None));
    assert_eq!(m(json!("cancelled"), None), ("aborted", None));
    assert_eq!(
        m(json!("cancelled"), Some(&PERM)),
        ("aborted", Some(PERM_LINE.to_string()))
    );
    assert_eq!(
        m(json!("max_tokens"), Some(&PERM)),
        ("max-tokens", Some(PERM_LINE.to_string()))
    );
    assert_eq!(
        m(json!("max_turn_requests"), None),
        (
            "error",
            Some("Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)".into())
        )
    );
    assert_eq!(
        m(json!("max_turn_requests"), Some(&PERM)).1.unwrap(),
        format!(
            "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)\n{PERM_LINE}"
        )
    );
    for raw in [json!("SECRET_TOKEN"), json!(7), Value::Null] {
        let (stop, diag) = m(raw, None);
        assert_eq!(stop, "error");
        assert_eq!(
            diag.unwrap(),
            "Subagent failure (provider: ACP; stage: prompt; category: unknown)"
        );
    }
    assert_eq!(map_stop_reason(None, None, false).0, "error");
    assert_eq!(
        map_stop_reason(Some(&json!("max_tokens")), None, true),
        ("error", None)
    );
}

#[test]
fn permission_answers() {
    let params = json!({"toolCall": {"kind": "edit"}, "options": [
        {"optionId": "no", "kind": "reject_once"},
        {"optionId": "always", "kind": "allow_always"},
        {"optionId": "once", "kind": "allow_once"}]});
    assert_eq!(
        answer_permission(Policy::Allow, &params),
        (
            json!({"outcome": {"outcome": "selected", "optionId": "always"}}),
            true
        )
    );
    assert_eq!(
        answer_permission(Policy::Reject, &params),
        (json!({"outcome": {"outcome": "cancelled"}}), false)
    );
    let no_allow = json!({"options": [{"optionId": "no", "kind": "reject_once"}]});
    assert_eq!(
        answer_permission(Policy::Allow, &no_allow),
        (json!({"outcome": {"outcome": "cancelled"}}), false)
    );
}

#[test]
fn config_defaults_and_errors() {
    let c = AcpConfig::from_map(&Map::new()).unwrap();
    assert_eq!(c.permission, Policy::Reject);
    assert_eq!(c.dispose_eof_grace, Duration::from_millis(6000));
    assert_eq!(c.dispose_grace, Duration::from_millis(3000));
    let mut m = Map::new();
    m.insert("permission".into(), "allow".into());
    m.insert("disposeGraceMs".into(), 150.into());
    let c = AcpConfig::from_map(&m).unwrap();
    assert_eq!(c.permission, Policy::Allow);
    assert_eq!(c.dispose_grace, Duration::from_millis(150));
    m.insert("disposeEofGraceMs".into(), (-1).into());
    assert!(AcpConfig::from_map(&m).is_err());
    let mut m = Map::new();
    m.insert("permission".into(), "ask".into());
    assert!(AcpConfig::from_map(&m).is_err());
}
