//! `contract.*`: what every run must respect whatever the scenario says — the 4096-byte bound,
//! no diagnostic where the records forbid one, no empty output block, and no untrusted text in
//! anything the model sees.

use serde_json::Value;

use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

/// The shared diagnostic bound, in UTF-8 bytes.
pub const MAX_DIAGNOSTIC_BYTES: usize = 4096;

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    if let Some(e) = &obs.start_rejected
        && e.message.len() > MAX_DIAGNOSTIC_BYTES
    {
        f.push(Finding::new(
            Check::ContractBound,
            format!(
                "the start rejection message is {} bytes, over {MAX_DIAGNOSTIC_BYTES}",
                e.message.len()
            ),
        ));
    }
    // No output is `[]`: a text block without text is output that is not there (the records
    // keep a text only when it is non-empty).
    if let Some(r) = &obs.result
        && r.output.iter().any(|b| {
            b.get("type").and_then(Value::as_str) == Some("text")
                && b.get("text").and_then(Value::as_str) == Some("")
        })
    {
        f.push(Finding::new(
            Check::ContractOutput,
            "the output holds an empty text block; no output is `[]`",
        ));
    }
    if let Some(r) = &obs.result
        && let Some(d) = &r.diagnostic
    {
        if d.len() > MAX_DIAGNOSTIC_BYTES {
            f.push(Finding::new(
                Check::ContractBound,
                format!(
                    "the diagnostic is {} bytes, over {MAX_DIAGNOSTIC_BYTES}",
                    d.len()
                ),
            ));
        }
        if r.stop_reason == "completed" {
            f.push(Finding::new(
                Check::ContractNoDiagnostic,
                "a completed result carries a diagnostic",
            ));
        }
        if r.stop_reason == "aborted" && obs.cancel_sent {
            f.push(Finding::new(
                Check::ContractNoDiagnostic,
                "a locally cancelled result carries a diagnostic",
            ));
        }
    }
    for secret in untrusted_strings(scenario) {
        for (what, text) in model_visible(obs) {
            // The label (the scenario id) is the harness's own text, shown in notices by design.
            if text.replace(&scenario.id, "").contains(&secret) {
                f.push(Finding::new(
                    Check::ContractRedaction,
                    format!("the {what} contains untrusted text {secret:?}"),
                ));
            }
        }
    }
}

/// Every model-visible text of the run, with where it came from.
pub fn model_visible(obs: &Observed) -> Vec<(&'static str, &str)> {
    let mut texts = Vec::new();
    if let Some(e) = &obs.start_rejected {
        texts.push(("start rejection", e.message.as_str()));
    }
    if let Some(d) = obs.result.as_ref().and_then(|r| r.diagnostic.as_deref()) {
        texts.push(("diagnostic", d));
    }
    if let Some((_, t)) = &obs.tool_result {
        texts.push(("tool result", t.as_str()));
    }
    for (_, t) in &obs.notices {
        texts.push(("notice", t.as_str()));
    }
    if let Some(t) = &obs.job_output {
        texts.push(("job_output", t.as_str()));
    }
    texts
}

/// The closed set of DSH SDK turn-end kinds and abort causes (shown values, not secrets).
const TURN_END_VOCABULARY: &[&str] = &[
    "completed",
    "aborted",
    "blocked",
    "error",
    "max-tokens",
    "interrupted",
    "user",
    "parent",
    "hook",
    "disposed",
    "legacy",
];

/// The closed ACP values a `session/update` carries besides free text.
const ACP_UPDATE_VOCABULARY: &[&str] = &[
    "pending",
    "in_progress",
    "completed",
    "failed",
    "tool_call",
    "tool_call_update",
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "plan",
];

/// Untrusted strings of a scenario that must never reach model-visible text: what the fake
/// writes outside assistant output (stderr, thoughts, tool titles and inputs, raw lines, error
/// payloads, unknown enum values), the task, and the scenario's declared secrets. Short strings
/// are skipped: they collide with the fixed vocabulary (`edit`, `read`).
pub fn untrusted_strings(scenario: &Scenario) -> Vec<String> {
    const KNOWN_STOPS: &[&str] = &[
        "end_turn",
        "max_tokens",
        "max_turn_requests",
        "refusal",
        "cancelled",
    ];
    let mut out: Vec<String> = scenario.file.secrets.clone();
    out.push(scenario.file.task.clone());
    for step in &scenario.script.steps {
        out.extend(step.stderr.clone());
        out.extend(step.thought.clone());
        out.extend(step.raw.clone());
        if let Some(stop) = &step.stop
            && !KNOWN_STOPS.contains(&stop.as_str())
        {
            out.push(stop.clone());
        }
        if let Some(p) = &step.permission {
            out.extend(p.title.clone());
            if let Some(raw) = &p.raw_input {
                leaves(raw, &mut out);
            }
        }
        if let Some(u) = &step.update {
            // Closed ACP values (statuses, update kinds) are vocabulary, shown by design.
            let mut all = Vec::new();
            leaves(u, &mut all);
            out.extend(
                all.into_iter()
                    .filter(|s| !ACP_UPDATE_VOCABULARY.contains(&s.as_str())),
            );
        }
        if let Some(e) = &step.error {
            out.push(e.message.clone());
            if let Some(d) = &e.data {
                leaves(d, &mut out);
            }
        }
        // DSH SDK: raw events and turn-end payloads are child text (error messages, unknown
        // kinds); assistant text addressed to another session is not this run's output.
        if let Some(e) = &step.event {
            leaves(e, &mut out);
        }
        if let Some(t) = &step.turn_end {
            let mut all = Vec::new();
            leaves(t, &mut all);
            out.extend(
                all.into_iter()
                    .filter(|s| !TURN_END_VOCABULARY.contains(&s.as_str())),
            );
        }
        if step.session.is_some() {
            out.extend(step.message.clone());
            out.extend(step.delta.clone());
            out.extend(step.attempt.clone());
        }
        if step.attempt.is_some() {
            out.push(conform_fakes::dsh_sdk::codec::ATTEMPT_FAILURE.to_owned());
        }
        if let Some(r) = &step.reply {
            // Reply payloads are protocol data; only free text inside them is a secret.
            leaves(r, &mut out);
        }
    }
    out.retain(|s| s.chars().count() >= 8);
    out.sort();
    out.dedup();
    out
}

fn leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        Value::Object(o) => o.values().for_each(|x| leaves(x, out)),
        _ => {}
    }
}
