//! `contract.*`: what every run must respect whatever the scenario says — the 4096-byte bound,
//! no diagnostic where the records forbid one, no empty output block, and no untrusted text in
//! anything the model sees.

use conform_fakes::codec::string_leaves;
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

/// Untrusted strings of a scenario that must never reach model-visible text: what the fake
/// writes outside assistant output (stderr, thoughts, tool titles and inputs, raw lines, error
/// payloads, unknown enum values), the task, and the scenario's declared secrets. Short strings
/// are skipped: they collide with the fixed vocabulary (`edit`, `read`).
pub fn untrusted_strings(scenario: &Scenario) -> Vec<String> {
    let codec = conform_fakes::codec::for_provider(scenario.file.provider);
    let mut out: Vec<String> = scenario.file.secrets.clone();
    out.push(scenario.file.task.clone());
    for step in &scenario.script.steps {
        out.extend(step.stderr.clone());
        out.extend(step.raw.clone());
        if let Some(e) = &step.error {
            out.push(e.message.clone());
            if let Some(d) = &e.data {
                string_leaves(d, &mut out);
            }
        }
        if let Some(r) = &step.reply {
            // Reply payloads are protocol data; only free text inside them is a secret.
            string_leaves(r, &mut out);
        }
        codec.untrusted_text(step, &mut out);
    }
    out.retain(|s| s.chars().count() >= 8);
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn untrusted_of(id: &str) -> Vec<String> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let s = crate::scenario::load(&root, &root.join(format!("{id}.toml"))).unwrap();
        untrusted_strings(&s)
    }

    #[test]
    fn each_codec_names_its_protocols_untrusted_text() {
        // ACP: a thought, a tool call's title, location and raw input; never its closed values.
        let acp = untrusted_of("acp/redaction/untrusted-channels");
        for s in [
            "THOUGHT: the password is hunter2-SECRET",
            "Read /home/alice/.ssh/id_ed25519",
        ] {
            assert!(acp.contains(&s.to_owned()), "{s} in {acp:?}");
        }
        assert!(!acp.iter().any(|s| s == "tool_call" || s == "pending"));
        // DSH SDK: a raw event's and a turn end's error text; never the turn-end kind.
        let dsh = untrusted_of("dsh-sdk/redaction/untrusted-channels");
        for s in [
            "upstream 401 for key sk-SECRET-attempt",
            "401 Unauthorized: sk-SECRET-turn-error",
        ] {
            assert!(dsh.contains(&s.to_owned()), "{s} in {dsh:?}");
        }
        assert!(!dsh.iter().any(|s| s == "error"));
    }
}
