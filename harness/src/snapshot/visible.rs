//! The exact form of a snapshot's text: every byte of the model-visible texts kept and visible.
//!
//! Texts are exact byte for byte (`presentation.md`), but insta's file format normalises what
//! it reads (a carriage return before a newline is dropped, the end of the text is trimmed), and
//! editors and git strip trailing whitespace and convert line ends. So a snapshot body holds the
//! text in a visible form that is the text itself for ordinary lines (every snapshot written
//! before this form reads the same) and round-trips exactly:
//!
//! - a carriage return is `␍`, wherever it is;
//! - whitespace at the end of a line is `·` for a space, `\t` for a tab, `\u{…}` for any other;
//! - the text's last newline ends the body's last line; newlines it ends with beyond that one
//!   are `\n` (a blank line at the end would be trimmed), and a text that does not end in a
//!   newline ends in a lone `\`;
//! - control characters and invisible format characters (zero-width, bidi) are `\u{…}`;
//! - a `\` is `\\`, a `␍` is `\␍`, and a `·` at the end of a line (where it would read as a
//!   space) is `\·`.
//!
//! The diff of a differing snapshot is taken between the two visible forms, so a text that
//! differs only in line ends or trailing spaces shows where.

use std::fmt::Write as _;

/// The visible form of `text`: [`decode`] gives `text` back.
pub fn encode(text: &str) -> String {
    let (body, ends_in_newline) = match text.strip_suffix('\n') {
        Some(body) => (body, true),
        None => (text, false),
    };
    let kept = body.trim_end_matches('\n');
    let mut out = String::with_capacity(text.len() + 8);
    for (i, line) in kept.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        encode_line(line, &mut out);
    }
    for _ in kept.len()..body.len() {
        out.push_str("\\n");
    }
    if !ends_in_newline {
        out.push('\\');
    }
    out
}

/// Characters that would not show in a diff: controls (a tab shows as space, but only inside
/// a line) and zero-width or direction-changing format characters.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}' | '\u{feff}')
}

fn encode_line(line: &str, out: &mut String) {
    // The run at the end of the line that an editor could strip or a reader could not see:
    // whitespace, and any literal `·` next to it (which must not read as a space).
    let trail = line
        .trim_end_matches(|c: char| c.is_whitespace() || c == '·')
        .len();
    for (i, c) in line.char_indices() {
        let trailing = i >= trail;
        match c {
            '\\' => out.push_str("\\\\"),
            '\r' => out.push('␍'),
            '␍' => out.push_str("\\␍"),
            ' ' if trailing => out.push('·'),
            '·' if trailing => out.push_str("\\·"),
            '\t' if trailing => out.push_str("\\t"),
            c if hidden(c) || (trailing && c.is_whitespace()) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// One unit of a visible line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// A character as written; `·` and `␍` mean a space and a carriage return where they may.
    Plain(char),
    /// A character written with `\`: always itself.
    Escaped(char),
    /// A lone `\` ending the last line: the text does not end in a newline.
    NoNewline,
}

impl Token {
    /// Whether the token can be part of a line's trailing run (see [`encode_line`]).
    fn trailing(self) -> bool {
        match self {
            Token::Plain(c) => c == '·' || c == '␍',
            Token::Escaped(c) => c.is_whitespace() || c == '·',
            Token::NoNewline => true,
        }
    }
}

fn tokens(line: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(Token::Plain(c));
            continue;
        }
        out.push(match chars.next() {
            None => Token::NoNewline,
            Some(e @ ('\\' | '␍' | '·')) => Token::Escaped(e),
            Some('t') => Token::Escaped('\t'),
            Some('n') => Token::Escaped('\n'),
            Some('u') => Token::Escaped(unicode_escape(&mut chars)?),
            Some(other) => return Err(format!("`\\{other}` is not an escape conform writes")),
        });
    }
    Ok(out)
}

/// The rest of a `\u{…}` escape, after the `u`.
fn unicode_escape(chars: &mut std::str::Chars) -> Result<char, String> {
    let rest = chars.as_str();
    let bad = || {
        format!(
            "`\\u{}` is not a `\\u{{hex}}` escape",
            rest.chars().take(8).collect::<String>()
        )
    };
    let hex = rest
        .strip_prefix('{')
        .and_then(|r| r.split_once('}'))
        .map(|(hex, _)| hex)
        .ok_or_else(bad)?;
    let c = u32::from_str_radix(hex, 16)
        .ok()
        .and_then(char::from_u32)
        .ok_or_else(bad)?;
    for _ in 0..hex.len() + 2 {
        chars.next();
    }
    Ok(c)
}

/// The text a visible form stands for; an error says which line is not in the form
/// [`encode`] writes (conform reads back only what it would write, so a file an editor or git
/// changed is noticed, not compared).
pub fn decode(visible: &str) -> Result<String, String> {
    let lines: Vec<&str> = visible.split('\n').collect();
    let mut out = String::with_capacity(visible.len());
    let mut ends_in_newline = true;
    for (n, line) in lines.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let at = |why: String| format!("line {} of the text: {why}", n + 1);
        let tokens = tokens(line).map_err(at)?;
        // `·` is a space only in the trailing run: nothing but trailing tokens after it.
        let run = tokens
            .iter()
            .rposition(|t| !t.trailing())
            .map_or(0, |i| i + 1);
        for (i, token) in tokens.into_iter().enumerate() {
            match token {
                Token::Plain('·') if i >= run => out.push(' '),
                Token::Plain('␍') => out.push('\r'),
                Token::Plain(c) | Token::Escaped(c) => out.push(c),
                Token::NoNewline if n + 1 == lines.len() => ends_in_newline = false,
                Token::NoNewline => {
                    return Err(at("a lone `\\` ends a line that is not the last".into()));
                }
            }
        }
    }
    if ends_in_newline {
        out.push('\n');
    }
    let again = encode(&out);
    if again != visible {
        return Err(not_canonical(visible, &again));
    }
    Ok(out)
}

/// Why `visible` is not what conform writes for its text, naming the line.
fn not_canonical(visible: &str, canonical: &str) -> String {
    let lines: Vec<&str> = visible.split('\n').collect();
    let find = |bad: &dyn Fn(&str) -> bool| lines.iter().position(|l| bad(l));
    let (n, why) = if let Some(n) = find(&|l| l.contains('\r')) {
        let why = "it holds a raw carriage return, which conform writes as `␍` (were the line \
                   ends converted to CRLF?)";
        (n, why)
    } else if let Some(n) = find(&|l| l.ends_with(char::is_whitespace)) {
        (
            n,
            "it ends in raw whitespace, which conform writes visibly (`·` for a space)",
        )
    } else if visible.ends_with('\n') {
        let why = "it is a blank line at the end, which conform writes as `\\n` on the line \
                   before";
        (lines.len() - 1, why)
    } else {
        let n = lines
            .iter()
            .zip(canonical.split('\n'))
            .position(|(a, b)| *a != b)
            .unwrap_or(0);
        (n, "it is not written the way conform writes its text")
    };
    let shown = canonical.split('\n').nth(n).unwrap_or_default();
    format!(
        "line {} of the text: {why} (read {:?}, conform writes {shown:?})",
        n + 1,
        lines[n]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinary_text_is_its_own_visible_form() {
        let text = "── job_output ──\nDone. a · b\t c\n[status: completed]\n";
        assert_eq!(encode(text), text.trim_end_matches('\n'));
        assert_eq!(decode(&encode(text)).unwrap(), text);
    }

    #[test]
    fn invisible_and_trimmed_characters_are_shown() {
        for (text, visible) in [
            ("a\r\nb\r\n", "a␍\nb␍"),
            ("a  \nb\t\n", "a··\nb\\t"),
            ("a\n\n\n", "a\\n\\n"),
            ("a", "a\\"),
            ("", "\\"),
            ("\n", ""),
            ("x·\n", "x\\·"),
            ("x· \n", "x\\··"),
            ("x·y\n", "x·y"),
            ("a\\b ␍\n", "a\\\\b \\␍"),
            ("a\\b \r\n", "a\\\\b·␍"),
            ("\u{1b}[31m\u{200b}\n", "\\u{1b}[31m\\u{200b}"),
            ("x\u{a0}\n", "x\\u{a0}"),
            (" \n\n", "·\\n"),
        ] {
            assert_eq!(encode(text), visible, "{text:?}");
            assert_eq!(decode(visible).unwrap(), text, "{visible:?}");
        }
    }

    #[test]
    fn only_the_form_conform_writes_is_read() {
        for (visible, why) in [
            ("a\r", "raw carriage return"),
            ("a  ", "raw whitespace"),
            ("a\n", "blank line at the end"),
            ("a\\\nb", "lone `\\`"),
            ("a\\q", "`\\q` is not an escape"),
            ("a\\u{zz}", "not a `\\u{hex}` escape"),
            ("a\\u{d800}", "not a `\\u{hex}` escape"),
            ("\\u{41}", "not written the way"),
        ] {
            let err = decode(visible).unwrap_err();
            assert!(err.contains(why), "{visible:?}: {err}");
        }
    }

    proptest::proptest! {
        #[test]
        fn every_text_round_trips_and_survives_insta(text in "[ a·␍\\\\\t\r\n\u{a0}\u{1}]{0,24}") {
            let visible = encode(&text);
            proptest::prop_assert_eq!(decode(&visible).unwrap(), text);
            // Nothing insta, an editor or git trims: no CR, no whitespace ending a line.
            proptest::prop_assert!(!visible.contains('\r'));
            proptest::prop_assert!(visible.split('\n').all(|l| !l.ends_with(char::is_whitespace)));
            proptest::prop_assert!(!visible.ends_with('\n'));
        }
    }
}
