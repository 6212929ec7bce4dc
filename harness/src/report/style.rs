//! How the terminal is written to: whether in colour (`--color`, `NO_COLOR`), which cases get a
//! status line as they end (`--status-level`), when a failure's detail is printed
//! (`--failure-output`) and what the report's closing list names (`--final-status-level`) —
//! nextest's options, read once.

use anstyle::{AnsiColor, Style};

/// `--color`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set to something or `TERM` is `dumb`.
    #[default]
    Auto,
    Always,
    Never,
}

/// `--status-level`: which cases get a line on stderr as they end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum StatusLevel {
    None,
    /// Failures (and interrupted runs).
    #[default]
    Fail,
    /// Passes too.
    Pass,
    /// Skips too.
    All,
}

/// `--failure-output`: when a failure's detail is printed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum FailureOutput {
    /// On stderr, as the case fails.
    Immediate,
    /// In the report at the end.
    #[default]
    Final,
    ImmediateFinal,
    /// Not at all: the causes and the names say what failed; `--json`/`--html` keep the rest.
    Never,
}

impl FailureOutput {
    pub fn immediate(self) -> bool {
        matches!(self, Self::Immediate | Self::ImmediateFinal)
    }
    pub fn at_the_end(self) -> bool {
        matches!(self, Self::Final | Self::ImmediateFinal)
    }
}

/// `--final-status-level`: what the report's closing list names.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, clap::ValueEnum)]
pub enum FinalStatusLevel {
    None,
    /// The failed and known cases.
    Fail,
    /// And why cases were skipped.
    #[default]
    Skip,
    /// Every case, one row each.
    All,
}

/// Whether text for a stream is coloured, as `choice`, whether the stream is a terminal, and
/// the environment say.
pub fn colour_for(choice: ColorChoice, terminal: bool) -> bool {
    colour_with(
        choice,
        terminal,
        std::env::var_os("NO_COLOR").as_deref(),
        std::env::var_os("TERM").as_deref(),
    )
}

/// no-color.org: `NO_COLOR` set to anything but the empty string turns colour off by default;
/// an explicit `--color always` still wins (it is the user's own word).
fn colour_with(
    choice: ColorChoice,
    terminal: bool,
    no_color: Option<&std::ffi::OsStr>,
    term: Option<&std::ffi::OsStr>,
) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            terminal && no_color.is_none_or(|v| v.is_empty()) && term.is_none_or(|t| t != "dumb")
        }
    }
}

/// Styles, or none: every text goes through one of these so `--color never` is plain.
#[derive(Clone, Copy, Debug, Default)]
pub struct Paint {
    pub on: bool,
}

const RED: Style = AnsiColor::Red.on_default().bold();
const GREEN: Style = AnsiColor::Green.on_default().bold();
const YELLOW: Style = AnsiColor::Yellow.on_default().bold();
const DIM: Style = Style::new().dimmed();
const BOLD: Style = Style::new().bold();
const ADDED: Style = AnsiColor::Green.on_default();
const REMOVED: Style = AnsiColor::Red.on_default();

impl Paint {
    fn with(self, style: Style, text: &str) -> String {
        if self.on {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }
    pub fn fail(self, text: &str) -> String {
        self.with(RED, text)
    }
    pub fn pass(self, text: &str) -> String {
        self.with(GREEN, text)
    }
    pub fn warn(self, text: &str) -> String {
        self.with(YELLOW, text)
    }
    pub fn dim(self, text: &str) -> String {
        self.with(DIM, text)
    }
    pub fn bold(self, text: &str) -> String {
        self.with(BOLD, text)
    }

    /// The human report, already escaped (no escape sequence of the subject's is left in it),
    /// coloured by the shape of its lines: failure headers and marks red, known and advisory
    /// marks yellow, requirements dim, diff lines green and red, cause headers and the counts
    /// bold.
    pub fn report(self, escaped: &str) -> String {
        if !self.on {
            return escaped.to_owned();
        }
        let mut out = String::with_capacity(escaped.len() + escaped.len() / 8);
        for line in escaped.split_inclusive('\n') {
            let (body, end) = match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            };
            out.push_str(&self.line(body));
            out.push_str(end);
        }
        out
    }

    fn line(self, l: &str) -> String {
        let trimmed = l.trim_start();
        let indent = l.len() - trimmed.len();
        if l.starts_with("━━ ") {
            if l.ends_with("— passed, with advisories") {
                return self.warn(l);
            }
            return self.fail(l);
        }
        if trimmed.starts_with("✗ ") {
            return format!("{}{}", &l[..indent], self.fail(trimmed));
        }
        if trimmed.starts_with("~ ") || trimmed.starts_with("⚠ ") {
            return format!("{}{}", &l[..indent], self.warn(trimmed));
        }
        if trimmed.starts_with("requirement (") {
            return self.dim(l);
        }
        if indent >= 4 && trimmed.starts_with('+') && !trimmed.starts_with("+++") {
            return self.with(ADDED, l);
        }
        if indent >= 4 && trimmed.starts_with('-') && !trimmed.starts_with("---") {
            return self.with(REMOVED, l);
        }
        if is_cause_header(trimmed) || is_closing_count(l) {
            return self.bold(l);
        }
        l.to_owned()
    }
}

/// `  1. 249 run(s) · …`: a cause's first line.
fn is_cause_header(trimmed: &str) -> bool {
    trimmed
        .split_once(". ")
        .is_some_and(|(n, rest)| n.parse::<usize>().is_ok() && rest.contains(" run(s) · "))
}

/// `12 passed, 3 failed, … skipped in 4.2 s`: the report's last line.
fn is_closing_count(l: &str) -> bool {
    l.split_once(" passed, ")
        .is_some_and(|(n, rest)| n.parse::<usize>().is_ok() && rest.contains(" skipped in "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn auto_colours_a_terminal_unless_no_color_or_dumb() {
        let auto = ColorChoice::Auto;
        assert!(colour_with(auto, true, None, Some(OsStr::new("xterm"))));
        assert!(!colour_with(auto, false, None, None));
        assert!(!colour_with(auto, true, Some(OsStr::new("1")), None));
        // An empty NO_COLOR is as if unset (no-color.org).
        assert!(colour_with(auto, true, Some(OsStr::new("")), None));
        assert!(!colour_with(auto, true, None, Some(OsStr::new("dumb"))));
        assert!(colour_with(
            ColorChoice::Always,
            false,
            Some(OsStr::new("1")),
            None
        ));
        assert!(!colour_with(ColorChoice::Never, true, None, None));
    }

    #[test]
    fn the_report_is_coloured_by_the_shape_of_its_lines() {
        let p = Paint { on: true };
        let text = "━━ a/b (foreground) — t\n  ✗ [snapshot] differs\n    -old\n    +new\n    requirement (must): x\n  1. 3 run(s) · acp · stop\n1 passed, 1 failed, 0 skipped in 1.0 s\nplain\n";
        let out = p.report(text);
        assert!(out.contains(&p.fail("━━ a/b (foreground) — t")), "{out:?}");
        assert!(out.contains(&format!("  {}", p.fail("✗ [snapshot] differs"))));
        assert!(out.contains(&p.with(REMOVED, "    -old")));
        assert!(out.contains(&p.with(ADDED, "    +new")));
        assert!(out.contains(&p.dim("    requirement (must): x")));
        assert!(out.contains(&p.bold("  1. 3 run(s) · acp · stop")));
        assert!(out.contains(&p.bold("1 passed, 1 failed, 0 skipped in 1.0 s")));
        assert!(out.ends_with("\nplain\n"));
        // Off, the text is as it was.
        assert_eq!(Paint { on: false }.report(text), text);
    }
}
