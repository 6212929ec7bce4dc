//! Which frames of a fake's ledger break their protocol's schema.

use conform_protocol::side::{Direction, FakeEvent, FakeLine};

/// Frames a fake sent that are invalid for `protocol` and carry no `violation` mark, with the
/// reason. `None` when conform has no schema for that protocol (so callers can say so instead
/// of passing silently).
pub fn unmarked_invalid_frames<'a>(
    protocol: &str,
    lines: &'a [FakeLine],
) -> Option<Vec<(&'a FakeLine, String)>> {
    let validate = match protocol {
        "acp" => crate::acp::validate_frame,
        "dsh-sdk" => crate::dsh_sdk::validate_frame,
        _ => return None,
    };
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
