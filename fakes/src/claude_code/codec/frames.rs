//! The frames each Claude Code sugar step writes, built as the real CLI builds them: its
//! messages (`system` init, `assistant`, partial `stream_event`s, the `result`) and its control
//! requests, each with the ids and bookkeeping the CLI keeps.

use super::*;

impl ClaudeCodeCodec {
    pub(super) fn uuid(&mut self) -> String {
        self.uuids += 1;
        format!("00000000-0000-4000-8000-{:012x}", self.uuids)
    }

    pub(super) fn tool_use_id(&mut self) -> String {
        self.tool_uses += 1;
        format!("toolu_{:024}", self.tool_uses)
    }

    pub(super) fn message(&mut self, ty: &str, mut body: Map<String, Value>) -> Sugar {
        body.entry("uuid").or_insert_with(|| self.uuid().into());
        body.entry("session_id")
            .or_insert_with(|| self.session_id.clone().into());
        Sugar::Notify {
            method: ty.into(),
            params: Some(Value::Object(body)),
        }
    }

    pub(super) fn init(&mut self, session: &str) -> Sugar {
        if !session.is_empty() {
            self.session_id = session.to_owned();
        }
        let cwd = std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mode = self.args.permission_mode.as_deref().unwrap_or("default");
        let tools: Vec<&str> = ["Bash", "Edit", "Read", "Write", "Glob", "Grep"]
            .into_iter()
            .filter(|t| !self.args.disallowed_tools.iter().any(|d| d == t))
            .collect();
        let body = json!({
            "subtype": "init",
            "cwd": cwd.clone(),
            "tools": tools,
            "mcp_servers": [],
            "model": MODEL,
            "permissionMode": mode,
            "slash_commands": ["review"],
            // What the real CLI 2.1.220 reports for a key in ANTHROPIC_API_KEY (outside the
            // SDK's published `ApiKeySource`; see schema.rs).
            "apiKeySource": "ANTHROPIC_API_KEY",
            "claude_code_version": CLI_VERSION,
            "output_style": "default",
            "agents": ["general-purpose"],
            "skills": ["review"],
            "plugins": [],
            "capabilities": ["interrupt_receipt_v1", "interrupt_cancel_queued_v1", "msg_lifecycle_v1"],
            "analytics_disabled": true,
            "product_feedback_disabled": true,
            "memory_paths": {"auto": format!("{cwd}/.claude/memory")},
            "fast_mode_state": "off",
            "fast_mode_disabled_reason": "sdk_opt_in_required",
        });
        self.message(kind::SYSTEM, into_map(body))
    }

    pub(super) fn assistant(&mut self, text: &str) -> Sugar {
        let id = format!("msg_{:024}", self.uuids + 1);
        let body = json!({
            "message": {
                "id": id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [{"type": "text", "text": text, "citations": null}],
                "stop_reason": null,
                "stop_sequence": null,
                "stop_details": null,
                "container": null,
                "context_management": null,
                "usage": usage(),
            },
            "parent_tool_use_id": null,
            "timestamp": TIMESTAMP,
        });
        self.message(kind::ASSISTANT, into_map(body))
    }

    pub(super) fn partial(&mut self, text: &str) -> Sugar {
        let body = json!({
            "event": {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            "parent_tool_use_id": null,
        });
        self.message(kind::STREAM_EVENT, into_map(body))
    }

    pub(super) fn result(&mut self, over: &Value) -> Result<Sugar, StepError> {
        let Value::Object(over) = over else {
            return Err(
                "`result` needs a table (`{ subtype = \"success\", result = \"…\" }`)".into(),
            );
        };
        let subtype = over
            .get("subtype")
            .and_then(Value::as_str)
            .unwrap_or("success")
            .to_owned();
        let success = subtype == "success";
        let mut body = into_map(json!({
            "subtype": subtype,
            "is_error": !success,
            "duration_ms": 1200,
            "duration_api_ms": 1000,
            "num_turns": 1,
            "stop_reason": if success { json!("end_turn") } else { Value::Null },
            "total_cost_usd": 0.0012,
            "usage": usage(),
            "modelUsage": {MODEL: {
                "inputTokens": 12, "outputTokens": 8, "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0, "webSearchRequests": 0, "costUSD": 0.0012,
                "contextWindow": 1000000, "maxOutputTokens": 64000,
                "canonicalModel": "claude-opus-5", "provider": "firstParty",
            }},
            "permission_denials": [],
            // As the real CLI 2.1.220 ends a turn (`terminal_reason` by how it ended).
            "terminal_reason": terminal_reason(&subtype),
            "fast_mode_state": "off",
            "fast_mode_disabled_reason": "sdk_opt_in_required",
            "api_error_status": null,
            "ttft_ms": 400,
            "ttft_stream_ms": 398,
            "time_to_request_ms": 380,
        }));
        if !success {
            body.insert("errors".into(), json!([]));
        }
        if success && over.get("is_error") == Some(&Value::Bool(true)) {
            // How the real CLI reports an API error: a success result flagged is_error, ended
            // by the API error, without the model's timings (it never answered).
            body.insert("terminal_reason".into(), "api_error".into());
            for timing in ["ttft_ms", "ttft_stream_ms", "time_to_request_ms"] {
                body.remove(timing);
            }
            body.insert("modelUsage".into(), json!({}));
            body.insert("total_cost_usd".into(), json!(0));
            body.insert("duration_api_ms".into(), json!(0));
            body.insert("stop_reason".into(), "stop_sequence".into());
        }
        body.extend(over.clone());
        self.error_result |= body.get("is_error") == Some(&Value::Bool(true));
        Ok(self.message(kind::RESULT, body))
    }

    pub(super) fn denied(&mut self, over: &Value) -> Result<Sugar, StepError> {
        let Value::Object(over) = over else {
            return Err("`denied` needs a table (`{ tool_name = \"Bash\" }`)".into());
        };
        let tool_use_id = self.tool_use_id();
        let mut body = into_map(json!({
            "subtype": "permission_denied",
            "tool_name": "Bash",
            "tool_use_id": tool_use_id,
            "message": "Permission to use Bash has been denied.",
        }));
        body.extend(over.clone());
        Ok(self.message(kind::SYSTEM, body))
    }

    pub(super) fn control(
        &mut self,
        subtype: &str,
        params: Option<&Value>,
    ) -> Result<Sugar, StepError> {
        let mut request = match subtype {
            kind::CAN_USE_TOOL => {
                if !self.args.prompts_over_stdio {
                    // Not the script's mistake: the real CLI started without the flag never
                    // asks over stdio (it decides alone), so the subject skipped it.
                    self.violation = Some(
                        "the script asks `can_use_tool`, but the CLI was started without \
                         `--permission-prompt-tool stdio`: the real CLI would never ask"
                            .into(),
                    );
                }
                json!({
                    "tool_name": "Bash",
                    "input": {"command": "ls"},
                    "tool_use_id": self.tool_use_id(),
                })
            }
            kind::ELICITATION => json!({
                "mcp_server_name": "workspace",
                "message": "Which environment?",
            }),
            kind::USER_DIALOG => json!({
                "dialog_kind": "refusal_fallback_prompt",
                "payload": {},
            }),
            _ => json!({}),
        };
        match params {
            Some(Value::Object(p)) => {
                if let Value::Object(r) = &mut request {
                    r.extend(p.clone());
                }
            }
            Some(other) => {
                return Err(format!("`params` of `control` must be a table, not {other}").into());
            }
            None => {}
        }
        Ok(Sugar::Request {
            method: subtype.into(),
            params: Some(request),
            answer: None,
        })
    }
}

/// When the fake's messages say they were made.
pub(super) const TIMESTAMP: &str = "2026-01-01T00:00:00.000Z";

/// The `terminal_reason` the real CLI gives a result of this subtype.
pub(super) fn terminal_reason(subtype: &str) -> &'static str {
    match subtype {
        "success" => "completed",
        "error_max_turns" => "max_turns",
        "error_max_budget_usd" => "budget_exhausted",
        "error_max_structured_output_retries" => "structured_output_retry_exhausted",
        _ => "model_error",
    }
}

pub(super) fn into_map(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Token usage as the SDK types it (`NonNullableUsage`, which `BetaUsage` accepts too).
pub(super) fn usage() -> Value {
    json!({
        "input_tokens": 12,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "output_tokens": 8,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "inference_geo": "",
        "iterations": [],
        "speed": "standard",
    })
}
