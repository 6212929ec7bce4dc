//! The forms a secret takes on its way into a text, and the views of a text that undo them.
//!
//! A provider rarely leaks a secret byte for byte: it serialises an error payload (JSON
//! escapes), builds a URL or a form body (percent-encoding, `+` for a space), packs a blob
//! (base64), writes HTML (character references), normalises or sanitises text (NFKC, format
//! characters dropped), or its bound cuts the leak short. Each form is matched here, so
//! `contract.redaction` and `--accept` see what a leak looks like, not only what the secret
//! looked like.
//!
//! Two directions, whichever is exact: a secret is *encoded* into the forms a text may hold
//! (JSON, base64 — a text cannot be decoded without knowing where the encoded part starts),
//! and a text is *decoded* into the views a secret may show in (percent-decoding undoes every
//! escape set and either hex case; form-decoding reads a `+` as the space it stands for, with
//! or without escapes beside it; HTML-decoding undoes every spelling of a character reference,
//! `&#39;`, `&#x27;` and `&apos;` alike, each ending at its `;`; normalisation undoes
//! compatibility forms and invisible characters).

use std::collections::HashMap;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
use unicode_normalization::UnicodeNormalization as _;

/// How a secret was written where it was found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Form {
    Raw,
    Json,
    Percent,
    FormEncoded,
    Html,
    Base64,
    Base64Url,
    Normalized,
}

impl Form {
    /// Every form, the plainest first (a hit is reported in the plainest form it shows in).
    pub const ALL: [Form; 8] = [
        Form::Raw,
        Form::Json,
        Form::Percent,
        Form::FormEncoded,
        Form::Html,
        Form::Base64,
        Form::Base64Url,
        Form::Normalized,
    ];

    /// How a report names it.
    pub fn name(self) -> &'static str {
        match self {
            Form::Raw => "raw",
            Form::Json => "JSON-escaped",
            Form::Percent => "percent-encoded",
            Form::FormEncoded => "form-encoded",
            Form::Html => "HTML-escaped",
            Form::Base64 => "base64",
            Form::Base64Url => "base64url",
            Form::Normalized => "Unicode-normalised (NFKC, format characters removed)",
        }
    }
}

impl std::fmt::Display for Form {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A leak cut short still shows a window this long (in characters) of a secret's form: every
/// window is looked for, so any 24-character fragment is found.
pub const WINDOW_CHARS: usize = 24;

/// The needles of a secret: the texts a leak of it would contain, each with its form.
pub fn encoded(secret: &str) -> Vec<(Form, String)> {
    let mut out = vec![(Form::Raw, secret.to_owned())];
    out.extend(json_forms(secret).into_iter().map(|j| (Form::Json, j)));
    out.push((Form::Percent, percent(secret)));
    for (form, engine) in [
        (Form::Base64, &STANDARD_NO_PAD),
        (Form::Base64Url, &URL_SAFE_NO_PAD),
    ] {
        out.extend(base64_forms(secret, engine).into_iter().map(|b| (form, b)));
    }
    out.push((Form::Normalized, normalized(secret)));
    out.retain(|(_, t)| !t.is_empty());
    let mut seen = std::collections::HashSet::new();
    out.retain(|(_, t)| seen.insert(t.clone()));
    out
}

/// A secret inside a JSON string: serde_json's escapes, and the ASCII-only escapes other
/// serialisers write (`\u00e9`, surrogate pairs).
fn json_forms(secret: &str) -> Vec<String> {
    let quoted = serde_json::to_string(secret).unwrap_or_default();
    let plain = quoted
        .strip_prefix('"')
        .and_then(|q| q.strip_suffix('"'))
        .unwrap_or_default()
        .to_owned();
    // Serialisers differ in the case of their hex digits (Python lower, others upper).
    let ascii = |upper: bool| -> String {
        plain
            .chars()
            .map(|c| {
                if c.is_ascii() {
                    return c.to_string();
                }
                let mut units = [0u16; 2];
                c.encode_utf16(&mut units)
                    .iter()
                    .map(|u| {
                        if upper {
                            format!("\\u{u:04X}")
                        } else {
                            format!("\\u{u:04x}")
                        }
                    })
                    .collect()
            })
            .collect()
    };
    vec![plain.clone(), ascii(false), ascii(true)]
}

/// The secret as a URL component (RFC 3986 unreserved characters kept). Texts are also
/// percent-decoded before matching ([`views`]), which catches every other escape set.
pub fn percent(secret: &str) -> String {
    const COMPONENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(secret, COMPONENT).to_string()
}

/// The secret's base64 wherever it starts in the encoded blob: at each of the three byte
/// offsets, the characters that depend only on the secret's own bytes (the caller decides how
/// short a core is still worth matching).
fn base64_forms(secret: &str, engine: &base64::engine::GeneralPurpose) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut out = Vec::new();
    for offset in 0..3usize {
        let mut padded = vec![0u8; offset];
        padded.extend_from_slice(bytes);
        let text = engine.encode(&padded);
        // Characters mixing the offset's bytes with the secret's, and the last one when the
        // secret ends inside a group (what follows it fills that character).
        let skip = [0, 2, 3][offset];
        let drop_last = usize::from(padded.len() % 3 != 0);
        let Some(core) = text.get(skip..text.len().saturating_sub(drop_last)) else {
            continue;
        };
        if !core.is_empty() {
            out.push(core.to_owned());
        }
    }
    out
}

/// NFKC with format characters removed: what survives a sanitiser, a copy through a rich
/// text field, or a provider that normalises.
pub fn normalized(text: &str) -> String {
    // Format characters go first: one between a letter and its combining mark would keep
    // NFKC from composing them.
    let visible: String = text.chars().filter(|c| !is_format(*c)).collect();
    visible.nfkc().filter(|c| !is_format(*c)).collect()
}

/// Invisible characters a text can carry or lose without changing what a reader sees: soft
/// hyphen, zero-width and joiner characters, direction marks and isolates, word joiner and
/// invisible operators, the byte-order mark, variation selectors, and the rest of Unicode's
/// format (Cf) characters that occur in text.
pub fn is_format(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{180E}'
        | '\u{200B}'..='\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}'
        | '\u{2066}'..='\u{206F}'
        | '\u{FE00}'..='\u{FE0F}'
        | '\u{FEFF}'
        | '\u{E0001}' | '\u{E0020}'..='\u{E007F}')
}

/// What a text may be read as besides itself: percent-decoded when it holds an escape,
/// form-decoded when it holds a `+`, HTML-decoded when it holds a character reference, and
/// normalised. Each view carries the form it undoes.
pub fn views(text: &str) -> Vec<(Form, String)> {
    let mut out = vec![(Form::Raw, text.to_owned())];
    if text.contains('%') {
        out.push((Form::Percent, percent_decoded(text)));
    }
    // A form body writes a space as `+` and needs no escape for letters and digits:
    // `my+secret+value` holds no `%` at all.
    if text.contains('+') {
        out.push((Form::FormEncoded, percent_decoded(&text.replace('+', " "))));
    }
    if text.contains('&') {
        let html = html_decoded(text);
        if html != text {
            out.push((Form::Html, html));
        }
    }
    let n = normalized(text);
    if n != text {
        out.push((Form::Normalized, n));
    }
    out
}

/// `text` with every percent escape decoded (bytes that are not UTF-8 read as U+FFFD).
fn percent_decoded(text: &str) -> String {
    percent_encoding::percent_decode_str(text)
        .decode_utf8_lossy()
        .into_owned()
}

/// Where a character reference must end, `&` and `;` included: `&#x10FFFF;` takes ten bytes,
/// and room is left for zeros an escaper pads numbers with (`&#x0027;`).
const MAX_REFERENCE_BYTES: usize = 32;

/// `text` with its HTML character references decoded: the named ones an escaper writes
/// (`&lt;` `&gt;` `&amp;` `&quot;` `&apos;`, in either case) and every numeric one, decimal or
/// hex (`&#39;`, `&#x27;`, `&#X27;`). One level, as one escaper writes it; anything else after
/// a `&` is left as it is.
pub fn html_decoded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match html_reference(rest) {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character the reference at the start of `text` (at its `&`) stands for, and the
/// reference's length in bytes.
fn html_reference(text: &str) -> Option<(char, usize)> {
    let end = text
        .bytes()
        .take(MAX_REFERENCE_BYTES)
        .position(|b| b == b';')?;
    let body = &text[1..end];
    let c = match body.strip_prefix('#') {
        Some(number) => {
            let (digits, radix) = match number.strip_prefix(['x', 'X']) {
                Some(hex) => (hex, 16),
                None => (number, 10),
            };
            // `from_str_radix` takes a sign too; a reference never has one.
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            char::from_u32(u32::from_str_radix(digits, radix).ok()?)?
        }
        None => match body {
            "lt" | "LT" => '<',
            "gt" | "GT" => '>',
            "amp" | "AMP" => '&',
            "quot" | "QUOT" => '"',
            "apos" => '\'',
            _ => return None,
        },
    };
    Some((c, end + 1))
}

/// Every window of [`WINDOW_CHARS`] characters of `text`, in order.
pub fn windows(text: &str) -> impl Iterator<Item = &str> {
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    (0..bounds.len().saturating_sub(WINDOW_CHARS))
        .map(move |i| &text[bounds[i]..bounds[i + WINDOW_CHARS]])
}

/// The windows of a set of texts, for matching many needles at once: a window's hash → the
/// first text holding a window with that hash (a hit is confirmed against that text, so the
/// index owns nothing of the texts).
#[derive(Default)]
pub struct WindowIndex {
    map: HashMap<u64, Vec<usize>, fnv::FnvBuildHasher>,
}

fn hash(window: &str) -> u64 {
    use std::hash::Hasher as _;
    let mut h = fnv::FnvHasher::default();
    h.write(window.as_bytes());
    h.finish()
}

impl WindowIndex {
    pub fn add(&mut self, text: &str, index: usize) {
        for w in windows(text) {
            let at = self.map.entry(hash(w)).or_default();
            if at.last() != Some(&index) {
                at.push(index);
            }
        }
    }

    /// The first window of `needle` some text holds (and which text, by `holds`), skipping
    /// those `skip` says prove nothing.
    pub fn find<'n>(
        &self,
        needle: &'n str,
        skip: &impl Fn(&str) -> bool,
        holds: &impl Fn(usize, &str) -> bool,
    ) -> Option<(&'n str, usize)> {
        self.find_hashed(needle, &window_hashes(needle), skip, holds)
    }

    /// [`WindowIndex::find`], `hashes` being [`window_hashes`] of `needle` (a needle looked
    /// for in many texts is hashed once).
    pub fn find_hashed<'n>(
        &self,
        needle: &'n str,
        hashes: &[u64],
        skip: &impl Fn(&str) -> bool,
        holds: &impl Fn(usize, &str) -> bool,
    ) -> Option<(&'n str, usize)> {
        // The windows themselves only where a hash is in the index.
        let mut windows: Option<Vec<&str>> = None;
        hashes.iter().enumerate().find_map(|(k, h)| {
            let at = self.map.get(h)?;
            let w = windows.get_or_insert_with(|| self::windows(needle).collect())[k];
            let i = at.iter().copied().find(|i| holds(*i, w))?;
            (!skip(w)).then_some((w, i))
        })
    }
}

/// The hash of each window of `text` ([`windows`]), in order.
pub fn window_hashes(text: &str) -> Vec<u64> {
    windows(text).map(hash).collect()
}

/// `text` with every whitespace and format character removed: a secret split across two
/// fields shows whole once the separators between them are gone.
pub fn compact(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace() && !is_format(*c))
        .collect()
}

/// Where a provider may break a secret across two lines: a space, a line break, a tab, any
/// other whitespace or control character.
pub fn is_separator(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// `text` with every run of separators ([`is_separator`]) made one space: a secret broken at
/// its own separator and shown on two lines reads the same as the two lines do, whichever
/// separator each used and whether the secret's own was kept or dropped.
pub fn fold_separators(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_run = false;
    for c in text.chars() {
        if is_separator(c) {
            if !in_run {
                out.push(' ');
            }
            in_run = true;
        } else {
            out.push(c);
            in_run = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn has(forms: &[(Form, String)], form: Form, text: &str) -> bool {
        forms.iter().any(|(f, t)| *f == form && t == text)
    }

    #[test]
    fn a_secret_is_encoded_in_every_form_a_text_may_hold() {
        let f = encoded("pa\"ss é");
        assert!(has(&f, Form::Json, "pa\\\"ss é"), "{f:?}");
        assert!(has(&f, Form::Json, "pa\\\"ss \\u00e9"), "{f:?}");
        assert!(has(&f, Form::Percent, "pa%22ss%20%C3%A9"), "{f:?}");
        let f = encoded("sk-live-4f9a8b7c6d5e");
        let blob = STANDARD_NO_PAD.encode("user:sk-live-4f9a8b7c6d5e@host");
        assert!(
            f.iter()
                .any(|(form, t)| *form == Form::Base64 && blob.contains(t.as_str())),
            "{blob} {f:?}"
        );
        // Where the two alphabets agree, one needle serves both.
        let url = URL_SAFE_NO_PAD.encode("??>sk-live-4f9a8b7c6d5e");
        assert!(
            f.iter()
                .any(|(form, t)| matches!(form, Form::Base64 | Form::Base64Url)
                    && url.contains(t.as_str())),
            "{url} {f:?}"
        );
        let f = encoded("key>>>?>>>?");
        assert!(has(&f, Form::Base64Url, "a2V5Pj4-Pz4-Pj"), "{f:?}");
    }

    #[test]
    fn a_text_is_read_decoded_and_normalised() {
        let v = views("token=sk%2dlive%2Fx+y");
        assert!(
            v.iter()
                .any(|(f, t)| *f == Form::Percent && t == "token=sk-live/x+y")
        );
        assert!(
            v.iter()
                .any(|(f, t)| *f == Form::FormEncoded && t == "token=sk-live/x y")
        );
        // Fullwidth letters and a zero-width space come back to the plain secret.
        let v = views("ｓｋ-li\u{200B}ve");
        assert!(
            v.iter()
                .any(|(f, t)| *f == Form::Normalized && t == "sk-live")
        );
    }

    #[test]
    fn a_form_body_is_read_with_its_spaces_though_it_holds_no_escape() {
        // `application/x-www-form-urlencoded` needs no `%` for letters, digits and spaces.
        let v = views("retry?q=my+secret+value");
        assert!(
            v.iter()
                .any(|(f, t)| *f == Form::FormEncoded && t == "retry?q=my secret value"),
            "{v:?}"
        );
        // A text without a `+` or a `%` has no decoded view.
        assert_eq!(views("my secret value").len(), 1);
    }

    #[test]
    fn a_text_is_read_with_its_character_references_decoded() {
        // Each escaper's spelling of the same characters, named and numeric, either case.
        let text =
            "&lt;a href=&quot;x&quot;&gt;it&#39;s &amp; it&#x27;s &#X27;&#60;&apos;&#x00e9;&LT;";
        let v = views(text);
        assert!(
            v.iter()
                .any(|(f, t)| *f == Form::Html && t == "<a href=\"x\">it's & it's '<'é<"),
            "{v:?}"
        );
        // Only one level is undone; what is no reference stays as it is.
        assert_eq!(html_decoded("&amp;lt;"), "&lt;");
        for kept in [
            "a & b",
            "&nope;",
            "&#;",
            "&#x;",
            "&#+39;",
            "&#xZZ;",
            "&#1114112;",
            "&lt",
        ] {
            assert_eq!(html_decoded(kept), kept);
        }
        // A plain text has no HTML view.
        assert!(views("a & b").iter().all(|(f, _)| *f != Form::Html));
    }

    #[test]
    fn every_window_of_a_text_is_indexed() {
        let text = "x".repeat(3) + "abcdefghijklmnopqrstuvwxyz" + "yyy";
        let mut index = WindowIndex::default();
        index.add(&text, 7);
        let never = |_: &str| false;
        let holds = |i: usize, w: &str| i == 7 && text.contains(w);
        assert_eq!(
            index.find("0123abcdefghijklmnopqrstuvwx9", &never, &holds),
            Some(("abcdefghijklmnopqrstuvwx", 7))
        );
        assert_eq!(index.find("abcdefghijklmnopqrstuvw", &never, &holds), None);
        assert_eq!(compact("a b\n\u{200D}c"), "abc");
        assert_eq!(fold_separators("a\t\r\n b\u{7}c "), "a b c ");
    }
}
