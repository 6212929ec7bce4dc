//! Which frames of a fake's ledger break their protocol's schema: the harness's question, asked
//! of every protocol's codec ([`crate::protocols`]).

use conform_protocol::side::{Direction, FakeEvent, FakeLine};

use conform_protocol::vocab::Provider;
use serde_json::Value;

/// Frames a fake sent that are invalid for `protocol` at `product_version` (`None`: the
/// protocol's default; Codex has a schema per version, the DSH SDK one schema for both its
/// versions, the others ignore it) and carry no `violation` mark, with the reason. `None` when conform has no schema for that protocol or version (so
/// callers can say so instead of passing silently).
pub fn unmarked_invalid_frames<'a>(
    provider: Provider,
    product_version: Option<&str>,
    lines: &'a [FakeLine],
) -> Option<Vec<(&'a FakeLine, String)>> {
    let mut codec = crate::protocols::codec_for(provider);
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
                } => validate(frame, answers.as_deref())
                    .err()
                    .map(|e| (line, e.to_string())),
                _ => None,
            })
            .collect(),
    )
}
