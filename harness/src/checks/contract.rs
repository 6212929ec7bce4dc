//! `contract.*`: what every run must respect whatever the scenario says — the 4096-byte bound,
//! no diagnostic where the records forbid one, no empty output block (and, in `redaction.rs`, no
//! untrusted text in anything the model sees).

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
    if let Some(e) = &obs.refused
        && e.message.len() > MAX_DIAGNOSTIC_BYTES
    {
        f.push(Finding::new(
            Check::ContractBound,
            format!(
                "the refusal message is {} bytes, over {MAX_DIAGNOSTIC_BYTES}",
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
        if r.stop_reason == "aborted" && obs.sent.host_cancelled() {
            f.push(Finding::new(
                Check::ContractNoDiagnostic,
                if obs.sent.cancel {
                    "a locally cancelled result carries a diagnostic"
                } else {
                    "a result the host's dispose cancelled carries a diagnostic"
                },
            ));
        }
    }
    super::redaction::judge(scenario, obs, f);
}
