//! Seeded redaction defects that leak a secret in a form other than its own: what a careless
//! provider does when it serialises, URL-encodes, packs or sanitises a child's text before
//! showing it. Defect-only: the reference proper never shows untrusted text at all.

use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};

/// How many forms `leak-encoded` takes turns with.
pub const FORMS: usize = 7;

/// Which form the next leak takes: each run in turn, so a handful of runs shows every form.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The `leak-encoded` defect: `diagnostic` with `secret` appended in the next form in turn
/// (JSON-escaped, percent-encoded, inside base64 or base64url, with zero-width spaces between
/// its characters, split between the diagnostic and the output, or cut to 24 characters), and
/// the text to append to the output (the split's tail; empty otherwise).
pub fn leak_encoded(diagnostic: &str, secret: &str) -> (String, String) {
    let chars: Vec<char> = secret.chars().collect();
    let shown = match NEXT.fetch_add(1, Ordering::Relaxed) % FORMS {
        0 => serde_json::to_string(secret).unwrap_or_default(),
        1 => utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string(),
        2 => STANDARD.encode(format!("error={secret}")),
        3 => URL_SAFE_NO_PAD.encode(format!("{{\"m\":\"{secret}\"}}")),
        4 => chars
            .iter()
            .map(char::to_string)
            .collect::<Vec<_>>()
            .join("\u{200B}"),
        5 => {
            let (head, tail) = chars.split_at(chars.len() / 2);
            let head: String = head.iter().collect();
            return (format!("{diagnostic} {head}"), tail.iter().collect());
        }
        _ => chars.iter().take(24).collect(),
    };
    (format!("{diagnostic} {shown}"), String::new())
}

/// The `leak-parent-token` defect: `diagnostic` with the host's own credential (the parent
/// token in its environment) appended, percent-encoded as a URL query would carry it.
pub fn leak_parent_token(diagnostic: &str) -> String {
    match std::env::var("CONFORM_PARENT_API_TOKEN") {
        Ok(token) => format!(
            "{diagnostic} (retry: https://api.invalid/v1?token={})",
            utf8_percent_encode(&token, NON_ALPHANUMERIC)
        ),
        Err(_) => diagnostic.to_owned(),
    }
}
