//! `contract.redaction`: no untrusted text reaches anything the model sees. The untrusted
//! strings of a scenario are matched against every model-visible text whole, line by line (a
//! CR or LF inside a secret may be where a provider splits it), and by overlapping windows (a
//! leak the 4096-byte bound cut shows only in part). What the contract itself shows — the
//! scenario's expected texts, the fixed presentation phrases, the run's label — never counts
//! as a leak, even when an untrusted string happens to equal it.

use conform_fakes::codec::string_leaves;

use super::{Check, Finding};
use crate::run::Observed;
use crate::scenario::Scenario;

/// Derived untrusted strings shorter than this are not matched (they are vocabulary).
pub const MIN_DERIVED_CHARS: usize = 8;

/// A leak cut short still shows a window this long (in characters) of the secret.
const WINDOW_CHARS: usize = 24;

/// Text every provider shows by contract (the foreground and background presentation): an
/// untrusted string that is part of it proves nothing when it appears.
const FIXED_PHRASES: &[&str] = &[
    "Error: subagent run failed",
    "Diagnostic: ",
    "Partial output before the run ended:",
    "started background subagent job ",
    "background job ",
    " finished [status: ",
    "]. Read its output with job_output.",
    "(no new output)",
    "Subagent failure (provider: ",
    "Product subagent failure (product: ",
];

pub fn judge(scenario: &Scenario, obs: &Observed, f: &mut Vec<Finding>) {
    let expected = expected_texts(scenario);
    let shown_by_contract = |s: &str| {
        expected.iter().any(|e| e.contains(s)) || FIXED_PHRASES.iter().any(|p| p.contains(s))
    };
    // The label is the harness's own text, shown in notices by design.
    let label = format!("(subagent: {})", scenario.label());
    let texts: Vec<(&str, String)> = model_visible(obs)
        .into_iter()
        .map(|(what, text)| (what, text.replace(&label, "")))
        .collect();
    let mut reported = std::collections::BTreeSet::new();
    let mut secrets = untrusted_strings(scenario);
    // The run's folder (the runtime's working directory is in it): a runtime may echo it, and
    // it is the user's machine, never the model's business.
    if !obs.run_dir.is_empty() {
        secrets.push(obs.run_dir.clone());
    }
    for secret in secrets {
        for (what, text) in &texts {
            if let Some(hit) = leak(&secret, text, &shown_by_contract)
                && reported.insert((*what, secret.clone()))
            {
                f.push(Finding::new(
                    Check::ContractRedaction,
                    if hit == secret {
                        format!("the {what} contains untrusted text {secret:?}")
                    } else {
                        format!("the {what} contains {hit:?}, part of untrusted text {secret:?}")
                    },
                ));
            }
        }
    }
}

/// The part of `secret` that `text` shows, if any: the whole, one of its lines, or a window of
/// either.
fn leak(secret: &str, text: &str, shown_by_contract: &impl Fn(&str) -> bool) -> Option<String> {
    let found = |piece: &str| text.contains(piece) && !shown_by_contract(piece);
    if found(secret) {
        return Some(secret.to_owned());
    }
    let lines: Vec<&str> = secret
        .split(['\r', '\n'])
        .filter(|p| p.chars().count() >= MIN_DERIVED_CHARS)
        .collect();
    if let Some(line) = lines.iter().find(|l| found(l)) {
        return Some((*line).to_owned());
    }
    // Windows are looked for outside the contract's own structured lines: a secret dressed as a
    // diagnostic shares windows with the real one (whole and line matches above still see
    // everything).
    let unstructured = STRUCTURED_LINE.replace_all(text, "\u{0}");
    let found = |piece: &str| unstructured.contains(piece) && !shown_by_contract(piece);
    for piece in lines {
        // A window at every half-window: any part of the piece at least one and a half windows
        // long holds a whole one.
        let chars: Vec<char> = piece.chars().collect();
        if chars.len() <= WINDOW_CHARS {
            continue;
        }
        for start in (0..=chars.len() - WINDOW_CHARS).step_by(WINDOW_CHARS / 2) {
            let window: String = chars[start..start + WINDOW_CHARS].iter().collect();
            if found(&window) {
                return Some(window);
            }
        }
    }
    None
}

/// The shape of every fixed line the contract composes from closed values — `Subagent failure
/// (provider: ACP; stage: prompt; …)`, `ACP unattended decision (policy: allow; …)`: capitalised
/// words, then `(key: value; key: value…)`.
static STRUCTURED_LINE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"[A-Z][A-Za-z ]* \([a-z ]+: [^;()\n]+(?:; [a-z ]+: [^;()\n]+)*\)")
        .expect("a valid pattern")
});

/// The texts the scenario says the model sees: its expected start error, diagnostic and output.
fn expected_texts(scenario: &Scenario) -> Vec<&str> {
    let e = &scenario.file.expect;
    [&e.start_error, &e.diagnostic, &e.output]
        .into_iter()
        .filter_map(|t| t.as_deref())
        .collect()
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
    for t in &obs.job_output_repeats {
        texts.push(("job_output", t.as_str()));
    }
    if let Some(t) = &obs.job_output {
        texts.push(("job_output", t.as_str()));
    }
    texts
}

/// Untrusted strings of a scenario that must never reach model-visible text: what the fake
/// writes outside assistant output (stderr, thoughts, tool titles and inputs, raw lines, error
/// payloads, unknown enum values, as each codec names them), the task, and the scenario's
/// declared secrets. Derived strings shorter than [`MIN_DERIVED_CHARS`] are skipped (they
/// collide with the fixed vocabulary: `edit`, `read`); declared secrets count at any length.
pub fn untrusted_strings(scenario: &Scenario) -> Vec<String> {
    let codec = conform_fakes::codec::for_provider(scenario.file.provider);
    let mut out: Vec<String> = vec![scenario.file.task.clone()];
    for step in &scenario.script.steps() {
        out.extend(step.stderr.clone());
        out.extend(step.stderr_part.clone());
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
    out.retain(|s| s.chars().count() >= MIN_DERIVED_CHARS);
    out.extend(
        scenario
            .file
            .secrets
            .iter()
            .filter(|s| !s.is_empty())
            .cloned(),
    );
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
    fn a_leak_is_found_whole_by_line_or_cut() {
        let none = |_: &str| false;
        let secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
        // Whole.
        assert_eq!(
            leak(secret, &format!("x {secret} y"), &none),
            Some(secret.into())
        );
        // Cut by a bound: only the head shows, still a leak.
        let cut = format!("Diagnostic: boom {}", &secret[..30]);
        assert!(leak(secret, &cut, &none).is_some());
        // A CR or LF inside the secret is where a provider may split it.
        let multi = "first line of the traceback\r\nKeyError: SECRET_VALUE_IN_LINE_2";
        assert_eq!(
            leak(multi, "… KeyError: SECRET_VALUE_IN_LINE_2 …", &none),
            Some("KeyError: SECRET_VALUE_IN_LINE_2".into())
        );
        // A secret dressed as a diagnostic shares windows with the real one: not a leak; shown
        // whole, it is.
        let alike = "Subagent failure (provider: DSH SDK; stage: --a; category: and)·q2361k0z";
        let real = "Error: subagent run failed\nDiagnostic: Subagent failure (provider: DSH SDK; stage: shutdown; category: unknown)";
        assert_eq!(leak(alike, real, &none), None);
        assert!(leak(alike, &format!("{real}\n{alike}"), &none).is_some());
        // Nothing shown, nothing found.
        assert_eq!(
            leak(secret, "Subagent failure (provider: ACP)", &none),
            None
        );
        // What the contract shows by itself is never a leak.
        let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
        assert_eq!(
            leak(
                "Error: subagent run failed",
                "Error: subagent run failed\nDiagnostic: x",
                &fixed
            ),
            None
        );
    }

    #[test]
    fn a_secret_holding_the_scenario_id_is_still_matched() {
        // Only the label `(subagent: <id>)` is the harness's own text.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let mut s =
            crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
        s.file.secrets = vec![format!("token-for-{}", s.id)];
        let mut obs = Observed {
            notices: vec![(
                "j".into(),
                format!(
                    "background job j (subagent: {}) finished [status: failed, token-for-{}]",
                    s.id, s.id
                ),
            )],
            ..Observed::default()
        };
        let mut f = Vec::new();
        judge(&s, &obs, &mut f);
        assert_eq!(f.len(), 1, "{f:?}");
        obs.notices[0].1 = format!("background job j (subagent: {}) finished", s.id);
        let mut f = Vec::new();
        judge(&s, &obs, &mut f);
        assert!(f.is_empty(), "{f:?}");
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
        // Codex: a failed turn's message, a server request's payload; a short declared secret.
        let codex = untrusted_of("codex/redaction/untrusted-channels");
        for s in ["SECRET", "401 for sk-SECRET-turn", "SECRET-additional"] {
            assert!(codex.contains(&s.to_owned()), "{s} in {codex:?}");
        }
        assert!(
            !codex.iter().any(|s| s == "unauthorized"),
            "known codes are vocabulary"
        );
    }
}
