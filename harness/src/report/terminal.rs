//! Text from outside (the subject, the fakes, scenario files) on its way to a terminal.

/// The one rule for making control characters visible lives with the line reader (it also
/// shows bad lines in reports); the human report applies it to everything it prints.
pub use conform_protocol::lines::escape_controls;

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
