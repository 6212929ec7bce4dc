//! A case's line on stderr as it ends (`FAIL [ 1.2s] acp/stop/refusal (background)
//! [expect.diagnostic] …`), the failure count in the progress line, and with
//! `--failure-output immediate` the failure's detail under its line.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::report::style::{FailureOutput, Paint, StatusLevel};
use crate::report::terminal::escape_controls;
use crate::suite::{CaseObserver, CaseReport, Verdict};

/// What `conform run`'s flags ask of the live lines.
#[derive(Clone, Copy, Debug)]
pub struct LiveOptions {
    pub status_level: StatusLevel,
    pub failure_output: FailureOutput,
    pub paint: Paint,
}

/// `conform run`'s reporter of cases as they end: the lines printed above the progress bar,
/// and the failure count in it.
pub struct Live {
    opts: LiveOptions,
    failed: AtomicUsize,
}

/// A status line's message is cut here (the report holds the rest).
const LINE_MESSAGE: usize = 160;

impl Live {
    pub fn new(opts: LiveOptions) -> Live {
        Live {
            opts,
            failed: AtomicUsize::new(0),
        }
    }
}

impl CaseObserver for Live {
    /// A case has its verdict: count it, and print its line (and detail) if asked.
    fn ended(&self, case: &CaseReport, bar: &indicatif::ProgressBar) {
        if matches!(case.verdict, Verdict::Fail) {
            let n = self.failed.fetch_add(1, Ordering::Relaxed) + 1;
            bar.set_prefix(format!("{n} failed"));
        }
        let Some(line) = status_line(case, self.opts) else {
            return;
        };
        print(bar, &line);
        if matches!(case.verdict, Verdict::Fail) && self.opts.failure_output.immediate() {
            let detail = crate::report::detail::folded_detail(case);
            let shown = self.opts.paint.report(&escape_controls(&detail));
            print(bar, shown.trim_end_matches('\n'));
        }
    }
}

/// Above the bar on a terminal; a plain line on stderr otherwise (a hidden bar prints
/// nothing).
fn print(bar: &indicatif::ProgressBar, text: &str) {
    if bar.is_hidden() {
        eprintln!("{text}");
    } else {
        bar.println(text);
    }
}

/// `FAIL [ 1.2s] id (mode) [check] first line`, if `--status-level` shows this verdict.
pub fn status_line(case: &CaseReport, opts: LiveOptions) -> Option<String> {
    let p = opts.paint;
    let (word, level) = match &case.verdict {
        Verdict::Fail | Verdict::Known(_) => (p.fail("FAIL"), StatusLevel::Fail),
        Verdict::Interrupted(_) => (p.warn("INTR"), StatusLevel::Fail),
        Verdict::Pass => (p.pass("PASS"), StatusLevel::Pass),
        Verdict::Skip(_) => (p.warn("SKIP"), StatusLevel::All),
    };
    if opts.status_level < level {
        return None;
    }
    let secs = case
        .obs
        .as_ref()
        .map(|o| format!("[{:>5.1}s]", o.elapsed.as_secs_f64()))
        .unwrap_or_else(|| "[     ]".to_owned());
    let why = match &case.verdict {
        Verdict::Skip(why) | Verdict::Interrupted(why) => format!(" {why}"),
        _ => case
            .findings
            .first()
            .map(|f| {
                let first = f.message.lines().next().unwrap_or_default();
                format!(
                    " [{}] {}",
                    f.check,
                    crate::report::detail::folded(first, Some(LINE_MESSAGE))
                )
            })
            .unwrap_or_default(),
    };
    // The scenario's own texts and the subject's messages are escaped on their way out (the
    // word's own colour is not theirs).
    let rest = escape_controls(&format!("{} ({}){why}", case.scenario.id, case.mode));
    Some(format!("{word} {secs} {rest}"))
}
