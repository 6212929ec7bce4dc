//! The subject's stderr: free-form, always drained (so it never blocks the subject's logging),
//! its last lines kept with when each came, so a failed run can be shown its own lines — those
//! that name it, else those of its time window.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use conform_protocol::lines::{self, Piece};

use crate::proc::run_id::RunId;
use crate::proc::subject_process::ByteLines;

/// Lines shown, lines kept, bytes kept of each, and the longest line held while reading
/// (longer ones keep their head).
const TAIL_LINES: usize = 40;
const KEPT_LINES: usize = 400;
const LINE_BYTES: usize = 1000;
const MAX_LINE: usize = 64 * 1024;

#[derive(Clone, Default)]
pub struct StderrLog {
    lines: Arc<Mutex<VecDeque<(Instant, String)>>>,
}

impl StderrLog {
    /// Reads the subject's stderr to its end.
    pub async fn drain(self, stderr: tokio::process::ChildStderr) {
        let mut lines = ByteLines::new(stderr, MAX_LINE);
        while let Some(piece) = lines.next().await {
            let shown = match piece {
                Piece::Line(bytes) => lines::show_bytes(&bytes, LINE_BYTES),
                Piece::TooLong { head, size } => format!(
                    "{}… ({size} bytes in all)",
                    lines::show_bytes(&head, LINE_BYTES)
                ),
            };
            let mut t = self.lines.lock().unwrap();
            if t.len() == KEPT_LINES {
                t.pop_front();
            }
            t.push_back((Instant::now(), shown));
        }
    }

    /// The last lines.
    pub fn last_lines(&self) -> Vec<String> {
        let t = self.lines.lock().unwrap();
        let skip = t.len().saturating_sub(TAIL_LINES);
        t.iter().skip(skip).map(|(_, l)| l.clone()).collect()
    }

    /// The last lines as one text (`(empty)` when there are none).
    pub fn tail(&self) -> String {
        let lines = self.last_lines();
        if lines.is_empty() {
            "(empty)".to_owned()
        } else {
            lines.join("\n")
        }
    }

    /// The stderr as far as it is `run`'s: the lines that name the run, when some do;
    /// otherwise every line written since `since`, said to be the whole subject's (other runs
    /// in flight write there too). The last 40 either way; empty when there are none.
    pub fn of_run(&self, run: &RunId, since: Instant) -> String {
        let t = self.lines.lock().unwrap();
        let window: Vec<&String> = t
            .iter()
            .filter(|(at, _)| *at >= since)
            .map(|(_, l)| l)
            .collect();
        let naming: Vec<&String> = window
            .iter()
            .copied()
            .filter(|l| names_run(l, run))
            .collect();
        let (lines, header) = if naming.is_empty() {
            (
                window,
                format!(
                    "the whole subject's stderr while run {run} was in flight (other runs' lines may be among them)"
                ),
            )
        } else {
            (
                naming,
                format!("the subject's stderr lines that name run {run}"),
            )
        };
        if lines.is_empty() {
            return String::new();
        }
        let skip = lines.len().saturating_sub(TAIL_LINES);
        let shown: Vec<&str> = lines.iter().skip(skip).map(|l| l.as_str()).collect();
        format!("{header}:\n{}", shown.join("\n"))
    }
}

/// Whether a line names `run` as a word of its own (`r7`, not `r70`).
fn names_run(line: &str, run: &str) -> bool {
    line.match_indices(run).any(|(i, _)| {
        let before = line[..i].chars().next_back();
        let after = line[i + run.len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_names_a_run_only_as_a_word_of_its_own() {
        assert!(names_run("[r7] spawned the ACP child", "r7"));
        assert!(names_run("run=r7 done", "r7"));
        assert!(names_run("r7", "r7"));
        assert!(!names_run("[r70] spawned", "r7"));
        assert!(!names_run("worker7 started", "r7"));
        assert!(!names_run("err7", "r7"));
    }

    #[test]
    fn a_runs_lines_are_those_naming_it_else_its_window() {
        let log = StderrLog::default();
        let before = Instant::now();
        log.lines
            .lock()
            .unwrap()
            .push_back((before, "early".into()));
        let since = Instant::now();
        log.lines
            .lock()
            .unwrap()
            .push_back((Instant::now(), "r7: spawned".into()));
        log.lines
            .lock()
            .unwrap()
            .push_back((Instant::now(), "r8: spawned".into()));
        let r7 = RunId::from("r7");
        assert_eq!(
            log.of_run(&r7, since),
            "the subject's stderr lines that name run r7:\nr7: spawned"
        );
        let r9 = RunId::from("r9");
        assert!(log.of_run(&r9, since).ends_with(
            "in flight (other runs' lines may be among them):\nr7: spawned\nr8: spawned"
        ));
        assert_eq!(log.tail(), "early\nr7: spawned\nr8: spawned");
    }
}
