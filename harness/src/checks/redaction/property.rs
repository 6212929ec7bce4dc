//! The matcher's property: whatever form a subject leaks a secret in — declared, generated or
//! handed to the runtime — the check finds it. The subject here is a function that writes the
//! secret into a diagnostic (and, split, into the output) the way a careless provider would.

use super::*;
use crate::run::observed::RunResult;
use base64::Engine as _;
use proptest::prelude::*;

/// How the subject writes the secret.
#[derive(Clone, Copy, Debug)]
enum How {
    Raw,
    /// Inside a serialised JSON string, serde's escapes or ASCII-only ones.
    Json {
        ascii: bool,
    },
    /// As a URL component: every non-alphanumeric byte escaped, hex in either case, or a
    /// form body (`+` for a space).
    Percent {
        lower: bool,
        form: bool,
    },
    /// HTML-escaped: `<>&"'` as named references or as numbers (decimal or hex), and with
    /// `ascii` every other non-ASCII character as a number too.
    Html {
        numeric: bool,
        hex: bool,
        ascii: bool,
    },
    /// Inside a base64 blob, after `offset` bytes of something else.
    Base64 {
        url: bool,
        offset: usize,
    },
    /// NFKC-normalised and format characters stripped (a sanitiser).
    Normalized,
    /// With a zero-width space, a soft hyphen or a word joiner between characters.
    Decorated {
        every: usize,
    },
    /// ASCII as fullwidth forms.
    Fullwidth,
    /// The head at the end of the diagnostic, the rest at the start of the output.
    Split {
        at: usize,
    },
    /// A window cut by a bound: `len` characters from `start`.
    Cut {
        start: usize,
        len: usize,
    },
}

fn how() -> impl Strategy<Value = How> {
    prop_oneof![
        Just(How::Raw),
        any::<bool>().prop_map(|ascii| How::Json { ascii }),
        (any::<bool>(), any::<bool>()).prop_map(|(lower, form)| How::Percent { lower, form }),
        (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(numeric, hex, ascii)| How::Html {
            numeric,
            hex,
            ascii
        }),
        (any::<bool>(), 0usize..3).prop_map(|(url, offset)| How::Base64 { url, offset }),
        Just(How::Normalized),
        (1usize..4).prop_map(|every| How::Decorated { every }),
        Just(How::Fullwidth),
        (1usize..1000).prop_map(|at| How::Split { at }),
        (0usize..6000, 24usize..36).prop_map(|(start, len)| How::Cut { start, len }),
    ]
}

/// Declared and generated secrets (the property command's kinds), and values a runtime is
/// handed: a database URL with its password, a parent token.
fn secret() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => secret_material(),
        1 => "postgres://app:[A-Za-z0-9]{8,16}@db\\.internal:5432/app",
        1 => "parent-token-[a-z0-9]{8,16}",
    ]
    .prop_map(|body| format!("{body}·q7k0z"))
}

fn percent(secret: &str, lower: bool, form: bool) -> String {
    let mut out = String::new();
    for b in secret.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => out.push(b as char),
            b' ' if form => out.push('+'),
            _ if lower => out.push_str(&format!("%{b:02x}")),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn html(secret: &str, numeric: bool, hex: bool, ascii: bool) -> String {
    let number = |c: char| {
        if hex {
            format!("&#x{:x};", c as u32)
        } else {
            format!("&#{};", c as u32)
        }
    };
    secret
        .chars()
        .map(|c| match c {
            '<' | '>' | '&' | '"' | '\'' if numeric => number(c),
            '<' => "&lt;".into(),
            '>' => "&gt;".into(),
            '&' => "&amp;".into(),
            '"' => "&quot;".into(),
            '\'' => "&#39;".into(),
            c if ascii && !c.is_ascii() => number(c),
            c => c.to_string(),
        })
        .collect()
}

/// The diagnostic and output a subject leaking `secret` this way reports.
fn leaked(secret: &str, how: How) -> (String, String) {
    let chars: Vec<char> = secret.chars().collect();
    let text = match how {
        How::Raw => secret.to_owned(),
        How::Json { ascii } => {
            let v = serde_json::json!({ "error": secret }).to_string();
            if ascii {
                v.chars()
                    .map(|c| {
                        if c.is_ascii() {
                            c.to_string()
                        } else {
                            let mut u = [0u16; 2];
                            c.encode_utf16(&mut u)
                                .iter()
                                .map(|x| format!("\\u{x:04X}"))
                                .collect()
                        }
                    })
                    .collect()
            } else {
                v
            }
        }
        How::Percent { lower, form } => format!("?q={}&x=1", percent(secret, lower, form)),
        How::Html {
            numeric,
            hex,
            ascii,
        } => format!("<pre>{}</pre>", html(secret, numeric, hex, ascii)),
        How::Base64 { url, offset } => {
            let blob = format!("{}{secret}!", &"ab"[..offset.min(2)]);
            if url {
                base64::engine::general_purpose::URL_SAFE.encode(blob)
            } else {
                base64::engine::general_purpose::STANDARD.encode(blob)
            }
        }
        How::Normalized => forms::normalized(secret),
        How::Decorated { every } => chars
            .chunks(every)
            .map(|c| c.iter().collect::<String>())
            .collect::<Vec<_>>()
            .join(["\u{200B}", "\u{00AD}", "\u{2060}"][every % 3]),
        How::Fullwidth => chars
            .iter()
            .map(|&c| match c {
                '!'..='~' => char::from_u32(c as u32 - 0x21 + 0xFF01).unwrap_or(c),
                _ => c,
            })
            .collect(),
        How::Split { at } => {
            let at = 1 + at % chars.len().saturating_sub(1).max(1);
            let head: String = chars[..at.min(chars.len())].iter().collect();
            let tail: String = chars[at.min(chars.len())..].iter().collect();
            // The tail after the real output, as a provider appending to it writes it.
            return (
                format!("{DIAGNOSTIC} {head}"),
                format!("partial answer{tail}"),
            );
        }
        How::Cut { start, len } => {
            let len = len.min(chars.len());
            let start = start % (chars.len() - len + 1);
            chars[start..start + len].iter().collect()
        }
    };
    (format!("{DIAGNOSTIC} {text}"), "partial answer".to_owned())
}

const DIAGNOSTIC: &str = "Subagent failure (provider: ACP; stage: prompt; category: unknown)";

fn observed(diagnostic: &str, output: &str) -> Observed {
    Observed {
        result: Some(RunResult {
            stop_reason: "error".into(),
            output: vec![serde_json::json!({ "type": "text", "text": output })],
            diagnostic: Some(diagnostic.to_owned()),
        }),
        tool_result: Some((
            true,
            format!(
                "Error: subagent run failed\nDiagnostic: {diagnostic}\n\nPartial output before the run ended:\n{output}"
            ),
        )),
        ..Observed::default()
    }
}

fn found(secret: &str, obs: &Observed) -> Option<Hit> {
    let texts: Vec<(&'static str, String)> = model_visible(obs)
        .into_iter()
        .map(|(w, t)| (w, t.to_owned()))
        .collect();
    // What the scenario behind these texts expects: the diagnostic and the real output.
    let seen = Seen::new(&texts, obs, &[DIAGNOSTIC, "partial answer"]);
    let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
    seen.leak(&needles::of(secret, false), &fixed)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(10_000),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_form_of_every_secret_is_found(secret in secret(), how in how()) {
        let (diagnostic, output) = leaked(&secret, how);
        // A cut that only shows the contract's own words proves nothing.
        if let How::Cut { .. } = how {
            let shown = diagnostic.trim_start_matches(DIAGNOSTIC).trim_start();
            prop_assume!(!FIXED_PHRASES.iter().any(|p| p.contains(shown)));
        }
        let obs = observed(&diagnostic, &output);
        prop_assert!(found(&secret, &obs).is_some(), "{how:?} missed: {diagnostic:?} / {output:?}");
    }

    #[test]
    fn a_secret_broken_at_a_separator_over_two_lines_is_found(
        secret in secret(),
        separator in prop::sample::select(vec![' ', '\t', '\n', '\r', '\u{7}', '\u{1b}']),
        at in any::<prop::sample::Index>(),
        kept in any::<bool>(),
    ) {
        // The secret holds a separator inside it; the provider breaks it there, the head
        // ending the diagnostic (the separator kept or dropped), the rest beginning the output.
        let mut chars: Vec<char> = secret.chars().collect();
        let at = 1 + at.index(chars.len() - 1);
        chars.insert(at, separator);
        let secret: String = chars.iter().collect();
        let head: String = chars[..at + usize::from(kept)].iter().collect();
        let tail: String = chars[at + 1..].iter().collect();
        let diagnostic = format!("{DIAGNOSTIC} {head}");
        let output = format!("{tail}\npartial answer");
        let obs = observed(&diagnostic, &output);
        prop_assert!(found(&secret, &obs).is_some(), "missed: {diagnostic:?} / {output:?}");
    }

}

proptest! {
    // No false alarm: the texts without the secret never show it (a tenth as many cases:
    // each scans every window of every form, where a hit usually stops early).
    #![proptest_config(ProptestConfig {
        cases: 1_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn what_is_not_leaked_is_not_found(secret in secret()) {
        let obs = observed(DIAGNOSTIC, "partial answer");
        prop_assert_eq!(found(&secret, &obs), None);
    }
}
