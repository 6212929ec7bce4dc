//! The Gemini API (`…/models/<model>:streamGenerateContent?alt=sse` and `:generateContent`):
//! gemini-cli calls it (through `GOOGLE_GEMINI_BASE_URL`). A stream is server-sent events
//! with data lines only (no event names), each a whole `GenerateContentResponse` with the next
//! part; the last one carries `finishReason`.

use serde_json::{Value, json};

use super::{Behaviour, TEXT_CHUNKS};

/// Whether the conversation already holds a tool's result (a `functionResponse` part).
pub(super) fn carries_tool_result(body: &Value) -> bool {
    fn any(v: &Value) -> bool {
        match v {
            Value::Object(o) => o.contains_key("functionResponse") || o.values().any(any),
            Value::Array(a) => a.iter().any(any),
            _ => false,
        }
    }
    any(body)
}

/// The Gemini error body: the HTTP status, its canonical status name, the message.
pub(super) fn error(status: u16, message: &str) -> Value {
    let name = match status {
        401 => "UNAUTHENTICATED",
        429 => "RESOURCE_EXHAUSTED",
        _ => "INTERNAL",
    };
    json!({"error": {"code": status, "message": message, "status": name}})
}

/// One response chunk: its parts, and `finishReason` on the last.
fn chunk(turn: u64, parts: Value, last: bool, output_tokens: u64) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if last {
        candidate["finishReason"] = json!("STOP");
    }
    json!({
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": output_tokens, "totalTokenCount": 1 + output_tokens},
        "modelVersion": "mock-model",
        "responseId": format!("gem_mock_{turn}"),
    })
}

/// The shell call gemini-cli's shell tool takes.
fn shell_call() -> Value {
    json!([{"functionCall": {"name": "run_shell_command", "args": super::shell_args()}}])
}

/// A stream: the text in its chunks (the last one finishing), or one shell call. Data lines
/// only: the event names are empty.
pub(super) fn events(behaviour: Behaviour, turn: u64) -> Vec<(String, Value)> {
    if behaviour == Behaviour::Tool {
        return vec![(String::new(), chunk(turn, shell_call(), true, 1))];
    }
    let n = TEXT_CHUNKS.len();
    TEXT_CHUNKS
        .iter()
        .enumerate()
        .map(|(i, text)| {
            let data = chunk(turn, json!([{"text": text}]), i + 1 == n, i as u64 + 1);
            (String::new(), data)
        })
        .collect()
}

/// A non-streamed answer: the whole text in one response.
pub(super) fn whole(turn: u64) -> Value {
    chunk(turn, json!([{"text": TEXT_CHUNKS.concat()}]), true, 2)
}
