//! OpenAI Responses (`…/responses`): Codex and codex-acp call it.

use serde_json::{Value, json};

use super::{Behaviour, SHELL_COMMAND, SHELL_DESCRIPTION, ev, text_of};

/// Whether the conversation already holds a tool's result (a `function_call_output` item).
pub(super) fn carries_tool_result(body: &Value) -> bool {
    super::any_typed(body, "function_call_output")
}

/// The event that carries the first text.
pub(super) const TEXT_EVENT: &str = "response.output_text.delta";

pub(super) fn error(kind: &str, message: &str) -> Value {
    json!({"error": {"type": kind, "code": kind, "message": message}})
}

/// A stream: the response, one output item (the text, or the command call), its completion.
pub(super) fn events(behaviour: Behaviour, turn: u64) -> Vec<(String, Value)> {
    let id = format!("resp_mock_{turn}");
    let item_id = format!("msg_mock_{turn}");
    let usage = json!({"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 2, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 3});
    let mut out = vec![ev(
        "response.created",
        json!({"type": "response.created", "response": {"id": id, "object": "response", "status": "in_progress", "output": []}}),
    )];
    if behaviour == Behaviour::Tool {
        // Codex's `exec_command`, asking to leave the sandbox (so an approval is asked for).
        let arguments = format!(
            "{{\"cmd\":\"{SHELL_COMMAND}\",\"sandbox_permissions\":\"require_escalated\",\"justification\":\"{SHELL_DESCRIPTION} outside the sandbox\"}}"
        );
        let call = json!({"type": "function_call", "id": format!("fc_mock_{turn}"), "call_id": format!("call_mock_{turn}"), "name": "exec_command", "arguments": arguments, "status": "completed"});
        out.push(ev(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": call}),
        ));
        out.push(ev(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": call}),
        ));
    } else {
        out.push(ev(
            "response.output_item.added",
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress", "content": []}}),
        ));
        out.push(ev(
            "response.content_part.added",
            json!({"type": "response.content_part.added", "item_id": item_id, "output_index": 0, "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}}),
        ));
        for chunk in text_of(behaviour) {
            out.push(ev(
                "response.output_text.delta",
                json!({"type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": chunk}),
            ));
        }
        out.push(ev(
            "response.output_item.done",
            json!({"type": "response.output_item.done", "output_index": 0, "item": {"type": "message", "id": item_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text_of(behaviour).concat(), "annotations": []}]}}),
        ));
    }
    out.push(ev(
        "response.completed",
        json!({"type": "response.completed", "response": {"id": id, "object": "response", "status": "completed", "output": [], "usage": usage}}),
    ));
    out
}

/// A non-streamed answer: the whole response at once.
pub(super) fn whole(turn: u64, behaviour: Behaviour) -> Value {
    json!({"id": format!("resp_mock_{turn}"), "object": "response", "status": "completed", "output": [{"type": "message", "id": format!("msg_mock_{turn}"), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text_of(behaviour).concat(), "annotations": []}]}], "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}})
}
