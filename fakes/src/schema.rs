//! Which frames of a fake's ledger break their protocol's schema.

use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use jsonschema::Validator;
use serde_json::Value;

/// Validates `value`, naming `what` and the first few errors (with where they are).
pub(crate) fn check(validator: &Validator, value: &Value, what: &str) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| format!("{e} (at {})", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("{what}: {}", errors.join("; ")))
    }
}

/// Frames a fake sent that are invalid for `protocol` at `product_version` (`None`: the
/// protocol's default; only Codex has versions, the others ignore it) and carry no `violation`
/// mark, with the reason. `None` when conform has no schema for that protocol or version (so
/// callers can say so instead of passing silently).
pub fn unmarked_invalid_frames<'a>(
    provider: Provider,
    product_version: Option<&str>,
    lines: &'a [FakeLine],
) -> Option<Vec<(&'a FakeLine, String)>> {
    let mut codec = crate::codec::for_provider(provider);
    codec.set_product_version(product_version).ok()?;
    let validate = |frame: &Value, answers: Option<&str>| codec.validate_frame(frame, answers);
    Some(
        lines
            .iter()
            .filter_map(|line| match &line.event {
                FakeEvent::Frame {
                    dir: Direction::Sent,
                    frame,
                    violation: None,
                    answers,
                } => validate(frame, answers.as_deref()).err().map(|e| (line, e)),
                _ => None,
            })
            .collect(),
    )
}
