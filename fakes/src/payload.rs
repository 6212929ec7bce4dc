//! Frames of any size: a script asks for a long string with `{ "$repeat" = "x", bytes = N }`
//! (so a scenario stays small and a 16 MiB frame is written, not stored), and what the fake
//! reports of a frame that long is cut, so its ledger line stays within the side channel's
//! bound — the subject is sent every byte.

use serde_json::Value;

/// The key of a table that stands for a long string: `{ "$repeat" = "x", bytes = N }`.
pub const REPEAT_KEY: &str = "$repeat";

/// Frames up to this many bytes are reported whole.
const REPORTED_WHOLE: usize = 256 * 1024;
/// A string of a frame reported cut keeps this many characters.
const KEPT_CHARS: usize = 64;

/// Replaces every `{ "$repeat": unit, "bytes": N }` inside `frame` by `unit` repeated to N bytes
/// (cut on a character boundary).
pub fn expand_repeats(frame: &mut Value) {
    match frame {
        Value::Object(map) => {
            if let (2, Some(Value::String(unit)), Some(bytes)) = (
                map.len(),
                map.get(REPEAT_KEY),
                map.get("bytes").and_then(Value::as_u64),
            ) && !unit.is_empty()
            {
                *frame = Value::String(repeated(unit, bytes as usize));
                return;
            }
            map.values_mut().for_each(expand_repeats);
        }
        Value::Array(items) => items.iter_mut().for_each(expand_repeats),
        _ => {}
    }
}

fn repeated(unit: &str, bytes: usize) -> String {
    let mut s = unit.repeat(bytes / unit.len() + 1);
    let mut end = bytes.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
    s
}

/// What the ledger holds of a frame whose line is `len` bytes: the frame, or — past
/// [`REPORTED_WHOLE`] — the frame with each long string cut, saying how long it was.
pub fn reported(frame: Value, len: usize) -> Value {
    if len <= REPORTED_WHOLE {
        return frame;
    }
    let mut frame = frame;
    cut_strings(&mut frame);
    frame
}

fn cut_strings(value: &mut Value) {
    match value {
        Value::String(s) if s.len() > KEPT_CHARS * 4 => {
            let head: String = s.chars().take(KEPT_CHARS).collect();
            *s = format!("{head}… ({} bytes in all; cut in the ledger)", s.len());
        }
        Value::Object(map) => map.values_mut().for_each(cut_strings),
        Value::Array(items) => items.iter_mut().for_each(cut_strings),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_repeat_is_a_string_of_so_many_bytes_and_a_long_frame_is_reported_cut() {
        let mut frame = json!({"params": {"text": {"$repeat": "é·", "bytes": 1001}}});
        expand_repeats(&mut frame);
        let text = frame["params"]["text"].as_str().unwrap();
        assert!(text.len() <= 1001 && text.len() >= 998, "{}", text.len());
        let line = frame.to_string();
        assert_eq!(reported(frame.clone(), line.len()), frame, "short: whole");
        let cut = reported(frame, 1 << 20);
        assert!(
            cut["params"]["text"]
                .as_str()
                .unwrap()
                .ends_with("bytes in all; cut in the ledger)")
        );
    }
}
