//! What a baseline pins of a case it knows (`texts = "sha256:…"`, `excerpt = "…"`): the digest
//! of the run's model-visible texts — as its snapshot renders them, the start rejection and a
//! refusal with their error names — and the result's stop reason, with the first lines of them
//! to read and to diff against when they change.

use std::fmt::Write as _;

use crate::run::Observed;
use crate::scenario::Scenario;

/// Lines of the texts an excerpt keeps, and characters of each.
const EXCERPT_LINES: usize = 12;
const EXCERPT_LINE_CHARS: usize = 120;

/// What stands in an excerpt for a line that holds untrusted text (a baseline file is committed:
/// it must not carry what the redaction check looks for), or for all of them.
const WITHHELD_LINE: &str = "[withheld: this line holds untrusted text]";
const WITHHELD_ALL: &str = "[withheld: the texts hold untrusted text]";

/// What a baseline pins of one case (one scenario in one mode).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pin {
    /// `sha256:` and the 64 hex digits of the pinned texts ([`texts`]).
    pub texts: String,
    /// Their first lines in visible form ([`excerpt`]); a file may leave it out.
    pub excerpt: Option<String>,
}

impl Pin {
    /// The pin of a run of `scenario`.
    pub fn of(scenario: &Scenario, obs: &Observed) -> Pin {
        let texts = texts(obs);
        Pin {
            texts: digest(&texts),
            excerpt: Some(excerpt(scenario, &obs.run_dir, &texts)),
        }
    }
}

/// What is pinned of a run: its model-visible texts as the snapshot renders them (job ids and
/// loopback ports masked), then the result's stop reason.
pub fn texts(obs: &Observed) -> String {
    let mut out = crate::snapshot::render(obs);
    if let Some(r) = &obs.result {
        let _ = writeln!(out, "── stop reason ──\n{}", r.stop_reason);
    }
    out
}

/// `sha256:<hex>` of `text`.
pub fn digest(text: &str) -> String {
    use sha2::Digest as _;
    let sum = sha2::Sha256::digest(text.as_bytes());
    let mut out = String::from("sha256:");
    for b in sum {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// Is `s` a digest as [`digest`] writes it?
pub fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The first [`EXCERPT_LINES`] lines of `texts` in their visible form (a carriage return or a
/// control character shows), each cut after [`EXCERPT_LINE_CHARS`] characters, `…` on a line of
/// its own where more follow. A line holding untrusted text of the scenario, a secret-like value
/// its runtime is handed or the run's folder is withheld.
pub fn excerpt(scenario: &Scenario, run_dir: &str, texts: &str) -> String {
    let holds_secret = |t: &str| {
        (!run_dir.is_empty() && t.contains(run_dir))
            || crate::checks::secret_in_snapshot(scenario, t).is_some()
    };
    let raw: Vec<&str> = texts
        .strip_suffix('\n')
        .unwrap_or(texts)
        .split('\n')
        .collect();
    let kept = &raw[..raw.len().min(EXCERPT_LINES)];
    let shown: Vec<String> = kept
        .iter()
        .map(|line| crate::snapshot::visible(&format!("{line}\n")))
        .collect();
    // Line by line only where the lines together hold a secret (the matching is not cheap).
    let together = holds_secret(&format!("{}\n{}", kept.join("\n"), shown.join("\n")));
    let mut lines: Vec<String> = kept
        .iter()
        .zip(&shown)
        .map(|(line, shown)| {
            if together && (holds_secret(line) || holds_secret(shown)) {
                WITHHELD_LINE.to_owned()
            } else {
                cut(shown)
            }
        })
        .collect();
    // A secret the lines hold only together (split over two of them), or once cut.
    if together && holds_secret(&lines.join("\n")) {
        return WITHHELD_ALL.to_owned();
    }
    if raw.len() > EXCERPT_LINES {
        lines.push("…".to_owned());
    }
    lines.join("\n")
}

fn cut(line: &str) -> String {
    if line.chars().count() <= EXCERPT_LINE_CHARS {
        return line.to_owned();
    }
    let mut out: String = line.chars().take(EXCERPT_LINE_CHARS).collect();
    out.push('…');
    out
}

/// A unified diff from the pinned excerpt to this run's.
pub fn diff(pinned: &str, now: &str) -> String {
    similar::TextDiff::from_lines(&format!("{pinned}\n"), &format!("{now}\n"))
        .unified_diff()
        .context_radius(3)
        .header("pinned excerpt", "this run")
        .to_string()
}

/// `s` as a TOML basic string on one line: `"`, `\` and every control character escaped.
pub fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_reason_alone_changes_the_pin() {
        // The same model-visible texts from two stop reasons (a host mapping `max_tokens` to
        // `error` with the same tool result) are two pins.
        let obs = |stop: &str| crate::run::Observed {
            tool_result: Some((true, "Error: subagent run failed".to_owned())),
            result: Some(crate::run::observed::RunResult {
                stop_reason: stop.to_owned(),
                output: vec![],
                diagnostic: None,
            }),
            ..crate::run::Observed::default()
        };
        let (error, limit) = (texts(&obs("error")), texts(&obs("max-tokens")));
        assert_eq!(
            crate::snapshot::render(&obs("error")),
            crate::snapshot::render(&obs("max-tokens"))
        );
        assert_ne!(digest(&error), digest(&limit));
    }

    #[test]
    fn a_digest_is_sha256_in_hex_and_is_told_from_anything_else() {
        let d = digest("");
        assert_eq!(
            d,
            "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(is_digest(&d));
        for bad in [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
            "sha256:E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855",
            "sha256:e3b0",
            "md5:d41d8cd98f00b204e9800998ecf8427e",
        ] {
            assert!(!is_digest(bad), "{bad}");
        }
    }

    #[test]
    fn an_excerpt_shows_the_first_lines_visibly_and_withholds_untrusted_text() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let s = crate::scenario::load(&root, &root.join("acp/stage/prompt-error-response.toml"))
            .unwrap();
        let long = "x".repeat(200);
        let texts = format!(
            "── tool result (isError: true) ──\nError: subagent run failed\r\nDiagnostic: upstream said SECRET_UPSTREAM_DETAIL\n{long}\nin /tmp/run-7/work\n"
        );
        let e = excerpt(&s, "/tmp/run-7", &texts);
        assert_eq!(
            e,
            format!(
                "── tool result (isError: true) ──\nError: subagent run failed␍\n{WITHHELD_LINE}\n{}…\n{WITHHELD_LINE}",
                "x".repeat(EXCERPT_LINE_CHARS)
            )
        );
        // Past the lines it keeps, it says more follow.
        let many: String = (0..20).map(|i| format!("line {i}\n")).collect();
        let e = excerpt(&s, "", &many);
        assert_eq!(e.lines().count(), EXCERPT_LINES + 1);
        assert!(
            e.starts_with("line 0\nline 1\n") && e.ends_with("line 11\n…"),
            "{e}"
        );
        // A secret split over two lines is withheld whole.
        let split = "upstream said SEC\nRET_UPSTREAM_DETAIL\n";
        assert_eq!(excerpt(&s, "", split), WITHHELD_ALL);
    }

    #[test]
    fn a_toml_string_reads_back_as_written() {
        for s in [
            "plain",
            "a \"quote\" and a \\",
            "two\nlines\r\n",
            "\u{1b}[31mred\u{7f}",
        ] {
            let text = format!("x = {}\n", toml_string(s));
            assert_eq!(text.lines().count(), 1, "{text}");
            let v: toml::Table = toml::from_str(&text).unwrap();
            assert_eq!(v["x"].as_str(), Some(s));
        }
    }
}
