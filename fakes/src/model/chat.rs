//! OpenAI chat completions (`…/chat/completions`): qwen-code calls it (its default
//! OpenAI-compatible mode), as do most agents that speak to "an OpenAI-compatible endpoint". A
//! stream is server-sent events with data lines only, each a `chat.completion.chunk` whose
//! `choices[0].delta` carries the next piece (the first one the `assistant` role); the last
//! chunk with a choice carries `finish_reason`, a usage chunk with no choices follows when
//! `stream_options.include_usage` asks for it, and `data: [DONE]` ends the stream.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::{Behaviour, TEXT_CHUNKS};

/// The shell tool's name among the function tools a request offers: qwen-code's (and
/// gemini-cli's) `run_shell_command`, else one named `shell` or `bash`, else that name.
fn shell_tool(body: &Value) -> &'static str {
    let offered: Vec<&str> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    ["run_shell_command", "shell", "bash"]
        .into_iter()
        .find(|n| offered.contains(n))
        .unwrap_or("run_shell_command")
}

/// Whether the conversation already holds a tool's result (a message of role `tool`).
pub(super) fn carries_tool_result(body: &Value) -> bool {
    let messages = body["messages"].as_array().into_iter().flatten();
    messages.into_iter().any(|m| m["role"] == "tool")
}

/// The error body: `type` and `code` as the API gives them for each status.
pub(super) fn error(status: u16, message: &str) -> Value {
    let (kind, code) = match status {
        401 => ("invalid_request_error", json!("invalid_api_key")),
        429 => ("requests", json!("rate_limit_exceeded")),
        _ => ("server_error", Value::Null),
    };
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// Seconds since the epoch: every chunk of one completion carries the same `created`.
fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn usage() -> Value {
    json!({"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3})
}

/// A stream: the role, then the text in its chunks or the shell call (its arguments in two
/// pieces, as a model streams them), the chunk that finishes, the usage if asked for, `[DONE]`.
/// Data lines only: the event names are empty, and `[DONE]` (not JSON) is a string, written as
/// it is.
pub(super) fn events(behaviour: Behaviour, turn: u64, body: &Value) -> Vec<(String, Value)> {
    let include_usage = body["stream_options"]["include_usage"] == true;
    let created = now();
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut c = json!({
            "id": format!("chatcmpl-mock-{turn}"),
            "object": "chat.completion.chunk",
            "created": created,
            "model": "mock-model",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage {
            c["usage"] = Value::Null;
        }
        (String::new(), c)
    };
    let mut out = Vec::new();
    let finish = if behaviour == Behaviour::Tool {
        let shell = shell_tool(body);
        let arguments = super::shell_args().to_string();
        let (head, tail) = arguments.split_at(arguments.len() / 2);
        out.push(chunk(
            json!({"role": "assistant", "content": null, "tool_calls": [{"index": 0, "id": format!("call_mock_{turn}"), "type": "function", "function": {"name": shell, "arguments": ""}}]}),
            None,
        ));
        for piece in [head, tail] {
            out.push(chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                None,
            ));
        }
        "tool_calls"
    } else {
        out.push(chunk(json!({"role": "assistant", "content": ""}), None));
        for text in TEXT_CHUNKS {
            out.push(chunk(json!({"content": text}), None));
        }
        "stop"
    };
    out.push(chunk(json!({}), Some(finish)));
    if include_usage {
        let (_, mut last) = chunk(json!({}), None);
        last["choices"] = json!([]);
        last["usage"] = usage();
        out.push((String::new(), last));
    }
    out.push((String::new(), json!("[DONE]")));
    out
}

/// Whether the event at `index` is the first that carries text (the role comes before it,
/// with empty content).
pub(super) fn is_first_text(index: usize, events: &[(String, Value)]) -> bool {
    let carries = |(_, data): &(String, Value)| {
        data["choices"][0]["delta"]["content"]
            .as_str()
            .is_some_and(|t| !t.is_empty())
    };
    events.iter().position(carries) == Some(index)
}

/// A non-streamed answer: the whole completion at once.
pub(super) fn whole(turn: u64) -> Value {
    json!({
        "id": format!("chatcmpl-mock-{turn}"),
        "object": "chat.completion",
        "created": now(),
        "model": "mock-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT_CHUNKS.concat(), "refusal": null}, "logprobs": null, "finish_reason": "stop"}],
        "usage": usage(),
    })
}
