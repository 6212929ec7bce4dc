//! Anthropic Messages (`…/v1/messages`): the DSH SDK runtime, Claude Code and
//! claude-agent-acp call it.

use serde_json::{Value, json};

use super::{Behaviour, SHELL_COMMAND, SHELL_DESCRIPTION, TEXT_CHUNKS, ev};

/// The shell tool's name among the tools a request offers: Claude Code's `Bash`, else `bash`
/// (the DSH SDK runtime's).
fn shell_tool(body: &Value) -> &'static str {
    let offered = body["tools"].as_array().into_iter().flatten();
    if offered.into_iter().any(|t| t["name"] == "Bash") {
        "Bash"
    } else {
        "bash"
    }
}

/// The shell call's input: a marker printed for the DSH SDK runtime; for Claude Code a file
/// written in the workspace, which no permission mode but bypass allows unasked (an `echo` it
/// runs without asking).
fn shell_input(shell: &str) -> String {
    if shell == "Bash" {
        "{\"command\": \"touch mock-tool-marker\", \"description\": \"Write a marker file\"}"
            .to_owned()
    } else {
        // Spaced as the DSH SDK runtime's recorded wire has it.
        format!("{{\"command\": \"{SHELL_COMMAND}\", \"description\": \"{SHELL_DESCRIPTION}\"}}")
    }
}

/// Whether the conversation already holds a tool's result (a `tool_result` block).
pub(super) fn carries_tool_result(body: &Value) -> bool {
    super::any_typed(body, "tool_result")
}

/// The event that carries the first text.
pub(super) const TEXT_EVENT: &str = "content_block_delta";

pub(super) fn error(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

/// A stream: the message, one content block (the text, or the shell call), its stop.
pub(super) fn events(behaviour: Behaviour, turn: u64, body: &Value) -> Vec<(String, Value)> {
    let shell = shell_tool(body);
    let id = format!("msg_mock_{turn}");
    let mut out = vec![ev(
        "message_start",
        json!({"type": "message_start", "message": {"id": id, "type": "message", "role": "assistant", "model": "mock-model", "content": [], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
    )];
    let stop = if behaviour == Behaviour::Tool {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("toolu_mock_{turn}"), "name": shell, "input": {}}}),
        ));
        out.push(ev(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": shell_input(shell)}}),
        ));
        "tool_use"
    } else {
        out.push(ev(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ));
        for chunk in TEXT_CHUNKS {
            out.push(ev(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}}),
            ));
        }
        "end_turn"
    };
    out.push(ev(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    out.push(ev(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 2}}),
    ));
    out.push(ev("message_stop", json!({"type": "message_stop"})));
    out
}

/// A non-streamed answer: the whole message at once.
pub(super) fn whole(turn: u64) -> Value {
    json!({"id": format!("msg_mock_{turn}"), "type": "message", "role": "assistant", "model": "mock-model", "content": [{"type": "text", "text": TEXT_CHUNKS.concat()}], "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 2}})
}
