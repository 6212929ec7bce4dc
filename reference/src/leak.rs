//! Seeded redaction defects that leak a secret in a form other than its own: what a careless
//! provider does when it serialises, URL-encodes, packs or sanitises a child's text before
//! showing it. Defect-only: the reference proper never shows untrusted text at all.

use std::sync::atomic::{AtomicUsize, Ordering};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::cli::Defects;

/// How many forms `leak-encoded` takes turns with.
pub const FORMS: usize = 9;

/// Which form the next leak takes: each run in turn, so a handful of runs shows every form.
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// The `leak-encoded` defect: `diagnostic` with `secret` appended in the next form in turn
/// (JSON-escaped, percent-encoded, inside base64 or base64url, with zero-width spaces between
/// its characters, split between the diagnostic and the output, cut to 24 characters,
/// form-encoded or HTML-escaped), and the text to append to the output (the split's tail;
/// empty otherwise).
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
        6 => chars.iter().take(24).collect(),
        7 => form_encoded(secret),
        _ => html_escaped(secret),
    };
    (format!("{diagnostic} {shown}"), String::new())
}

/// The seeded defects that leak an ACP `session/prompt` error response's `message`: the
/// diagnostic as they bend it; what they put in the output goes into `output`. As it is with
/// every defect off.
pub fn prompt_error_leaks(
    defects: &Defects,
    mut diagnostic: String,
    message: &str,
    output: &mut String,
) -> String {
    // The error message leaked in another form each run.
    if defects.leak_encoded {
        let (leaked, tail) = leak_encoded(&diagnostic, message);
        diagnostic = leaked;
        output.push_str(&tail);
    }
    if defects.leak_form_encoded {
        diagnostic = leak_form_encoded(&diagnostic, message);
    }
    if defects.leak_html_escaped {
        diagnostic = leak_html_escaped(&diagnostic, message);
    }
    if defects.wrap_error_into_output {
        let (leaked, tail) = wrap_into_output(&diagnostic, message);
        diagnostic = leaked;
        // The rest of the message begins the output, on a line of its own.
        *output = if output.is_empty() {
            tail
        } else {
            format!("{tail}\n{output}")
        };
    }
    diagnostic
}

/// `text` as a form body carries it (`application/x-www-form-urlencoded`): a space as `+`,
/// letters, digits and `*-._` as they are, every other byte as `%XX`. A text of words holds no
/// `%` at all.
pub fn form_encoded(text: &str) -> String {
    const FORM: &AsciiSet = &NON_ALPHANUMERIC
        .remove(b'*')
        .remove(b'-')
        .remove(b'.')
        .remove(b'_');
    text.split(' ')
        .map(|word| utf8_percent_encode(word, FORM).to_string())
        .collect::<Vec<_>>()
        .join("+")
}

/// `text` as an HTML page shows it: `<`, `>`, `&`, `"` and `'` as character references.
pub fn html_escaped(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '<' => "&lt;".to_owned(),
            '>' => "&gt;".to_owned(),
            '&' => "&amp;".to_owned(),
            '"' => "&quot;".to_owned(),
            '\'' => "&#39;".to_owned(),
            c => c.to_string(),
        })
        .collect()
}

/// The `leak-form-encoded` defect: `diagnostic` with `secret` appended form-encoded, as a
/// retry URL's query carries it.
pub fn leak_form_encoded(diagnostic: &str, secret: &str) -> String {
    format!(
        "{diagnostic} (retry: https://api.invalid/v1/retry?error={})",
        form_encoded(secret)
    )
}

/// The `leak-html-escaped` defect: `diagnostic` with `secret` appended HTML-escaped, as an
/// error page shows it.
pub fn leak_html_escaped(diagnostic: &str, secret: &str) -> String {
    format!("{diagnostic} <pre>{}</pre>", html_escaped(secret))
}

/// The `wrap-error-into-output` defect: `secret` word-wrapped over the diagnostic and the
/// output, broken at the separator (a space, a tab, a line break, a control character) nearest
/// its middle, which is dropped — at the middle itself when it holds none. Returns the
/// diagnostic with the head appended, and the tail the output begins with.
pub fn wrap_into_output(diagnostic: &str, secret: &str) -> (String, String) {
    let chars: Vec<char> = secret.chars().collect();
    let middle = chars.len() / 2;
    let at = (0..chars.len())
        .filter(|i| chars[*i].is_whitespace() || chars[*i].is_control())
        .min_by_key(|i| i.abs_diff(middle));
    let (head, tail) = match at {
        Some(at) => (&chars[..at], &chars[at + 1..]),
        None => chars.split_at(middle),
    };
    (
        format!("{diagnostic} {}", head.iter().collect::<String>()),
        tail.iter().collect(),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_body_and_an_html_page_write_a_message_their_way() {
        assert_eq!(form_encoded("Internal error"), "Internal+error");
        assert_eq!(form_encoded("a/b é*"), "a%2Fb+%C3%A9*");
        assert_eq!(
            html_escaped(r#"<a href="x">it's & co</a>"#),
            "&lt;a href=&quot;x&quot;&gt;it&#39;s &amp; co&lt;/a&gt;"
        );
    }

    #[test]
    fn a_message_is_wrapped_at_the_separator_nearest_its_middle() {
        let wrap = |m| wrap_into_output("D", m);
        assert_eq!(
            wrap("Internal error"),
            ("D Internal".into(), "error".into())
        );
        assert_eq!(
            wrap("Authentication required now"),
            ("D Authentication".into(), "required now".into())
        );
        assert_eq!(wrap("ab\ncd"), ("D ab".into(), "cd".into()));
        assert_eq!(wrap("abcd"), ("D ab".into(), "cd".into()));
    }
}
