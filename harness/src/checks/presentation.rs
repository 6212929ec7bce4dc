//! `presentation.*`: the same result shown the same way — the foreground tool result's error
//! flag and diagnostic, the background start line, one status line in notice and job_output.

use conform_protocol::subject::Mode;

use super::{Check, Finding, show};
use crate::run::Observed;

pub fn foreground(mode: Mode, obs: &Observed, f: &mut Vec<Finding>) {
    if mode != Mode::Foreground {
        return;
    }
    let (Some((is_error, text)), Some(r)) = (&obs.tool_result, &obs.result) else {
        return;
    };
    if *is_error == (r.stop_reason == "completed") && obs.settled {
        f.push(Finding::new(
            Check::PresentationIsError,
            format!("isError is {is_error} for stop reason `{}`", r.stop_reason),
        ));
    }
    if let Some(d) = &r.diagnostic
        && !text.contains(d.as_str())
    {
        f.push(Finding::new(
            Check::PresentationSameDiagnostic,
            "the tool result does not show the result's diagnostic",
        ));
    }
}

/// The job id a background start line names; `None` (and a finding) when the line is not one.
pub fn background_start<'a>(started: &'a str, f: &mut Vec<Finding>) -> Option<&'a str> {
    let job = started.strip_prefix("started background subagent job ");
    if job.is_none() {
        f.push(Finding::new(
            Check::PresentationBackgroundStart,
            format!("the background tool result is {}", show(Some(started))),
        ));
    }
    job
}

/// The notice and job_output must show one status line.
pub fn same_status(notice: &str, job_output: Option<&str>, f: &mut Vec<Finding>) {
    if let Some(out) = job_output
        && let (Some(a), Some(b)) = (status_line(notice), job_status_text(out))
        && a != b
    {
        f.push(Finding::new(
            Check::PresentationSameStatus,
            format!("the notice says {a} but job_output says {b}"),
        ));
    }
}

/// `[status: failed, …]` from a notice.
fn status_line(notice: &str) -> Option<&str> {
    let start = notice.find(" finished [status: ")? + " finished ".len();
    let end = notice.rfind("]. Read its output with job_output.")? + 1;
    notice.get(start..end)
}

/// The status line of a job_output (`[status: …]` to the end; a diagnostic in it may span
/// several lines).
fn job_status_text(job_output: &str) -> Option<&str> {
    if job_output.starts_with("[status: ") {
        return Some(job_output);
    }
    job_output.find("\n[status: ").map(|i| &job_output[i + 1..])
}

/// `failed` from a job_output's last line `[status: failed, …]`.
pub fn job_status(job_output: &str) -> Option<String> {
    let rest = &job_status_text(job_output)?["[status: ".len()..];
    let end = rest.find([',', ']'])?;
    Some(rest[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_status_reads_the_status_line() {
        assert_eq!(
            job_status("(no new output)\n[status: killed]").as_deref(),
            Some("killed")
        );
        assert_eq!(
            job_status("(no new output)\n[status: failed, error; diagnostic: x]").as_deref(),
            Some("failed")
        );
        assert_eq!(job_status("answer").as_deref(), None);
        let multi = "(no new output)\n[status: failed, error; diagnostic: A\nB (policy: x)]";
        assert_eq!(
            job_status_text(multi),
            Some("[status: failed, error; diagnostic: A\nB (policy: x)]")
        );
    }

    #[test]
    fn status_line_is_cut_from_a_notice() {
        let n = "background job subagent-2 (subagent: a) finished [status: failed, error; diagnostic: X (a; b)]. Read its output with job_output.";
        assert_eq!(
            status_line(n),
            Some("[status: failed, error; diagnostic: X (a; b)]")
        );
    }
}
