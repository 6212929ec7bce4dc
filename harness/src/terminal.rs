//! Text from outside (the subject, the fakes, scenario files) on its way to a terminal.

use std::fmt::Write as _;

/// `text` with every control character except `\n` and `\t` made visible, so that what a
/// subject says cannot drive the terminal that shows it: no colours, cursor moves, screen
/// clears, OSC 8 hyperlinks or window titles, no NUL, no carriage return overwriting a line.
///
/// C0 controls and DEL become `\xNN` (ESC is `\x1b`, NUL `\x00`, BEL `\x07`), except CR,
/// which becomes `\r`; C1 controls (U+0080–U+009F, which some terminals also obey) become
/// `\u{NN}`. Backslashes are kept as they are, so a literal `\x1b` in the text reads the same
/// as an escaped ESC: the escaping is for safety, not for a lossless round trip (the JSON and
/// JUnit reports stay exact).
pub fn escape_controls(text: &str) -> String {
    if !text.chars().any(needs_escape) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if needs_escape(c) && (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

fn needs_escape(c: char) -> bool {
    c.is_control() && c != '\n' && c != '\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_newlines_and_tabs_are_kept() {
        let text = "a line\n\tindented — ünïcødé ✓\n";
        assert_eq!(escape_controls(text), text);
    }

    #[test]
    fn sgr_colours_are_escaped() {
        assert_eq!(
            escape_controls("\x1b[31mred\x1b[0m"),
            "\\x1b[31mred\\x1b[0m"
        );
    }

    #[test]
    fn osc_8_hyperlinks_are_escaped() {
        assert_eq!(
            escape_controls("\x1b]8;;https://evil.invalid\x07click\x1b]8;;\x07"),
            "\\x1b]8;;https://evil.invalid\\x07click\\x1b]8;;\\x07"
        );
        // The ST-terminated form too.
        assert_eq!(
            escape_controls("\x1b]0;title\x1b\\"),
            "\\x1b]0;title\\x1b\\"
        );
    }

    #[test]
    fn nul_cr_del_and_other_c0_are_escaped() {
        assert_eq!(escape_controls("a\0b"), "a\\x00b");
        assert_eq!(escape_controls("ok\rFAIL"), "ok\\rFAIL");
        assert_eq!(escape_controls("\x08\x0b\x0c\x7f"), "\\x08\\x0b\\x0c\\x7f");
    }

    #[test]
    fn c1_controls_are_escaped() {
        assert_eq!(escape_controls("\u{9b}2J"), "\\u{9b}2J");
        assert_eq!(escape_controls("\u{80}\u{9f}"), "\\u{80}\\u{9f}");
        // U+00A0 (no-break space) is not a control.
        assert_eq!(escape_controls("\u{a0}"), "\u{a0}");
    }

    #[test]
    fn nothing_raw_survives() {
        let all: String = (0u32..0x100).filter_map(char::from_u32).collect();
        let out = escape_controls(&all);
        assert!(
            out.chars()
                .all(|c| !c.is_control() || c == '\n' || c == '\t'),
            "{out:?}"
        );
    }
}
