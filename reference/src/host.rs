//! The host side, as pure functions: how one `SubagentResult` (or a start/dispose failure)
//! becomes the foreground tool text, a background Job outcome, its status line, the completion
//! notice and the `job_output` text (the texts `snapshots/` pins; `docs/subject-protocol.md`).

use conform_protocol::subject::StartError;
use serde_json::{Value, json};

/// The shared result of one published run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentResult {
    /// `completed`, `max-tokens`, `refusal`, `aborted` or `error`.
    pub stop_reason: String,
    /// The output content blocks, as the provider selected them.
    pub output: Vec<Value>,
    pub diagnostic: Option<String>,
}

impl SubagentResult {
    /// Concatenated text of the output's text blocks (what the host shows).
    pub fn output_text(&self) -> String {
        output_text(&self.output)
    }
}

/// One text block of `text`, or `[]` when it is empty.
pub fn text_output(text: &str) -> Vec<Value> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

/// Concatenated text of the text blocks of an output (non-text blocks ignored).
pub fn output_text(output: &[Value]) -> String {
    output
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect()
}

pub fn headline(stop_reason: &str) -> String {
    match stop_reason {
        "aborted" => "subagent run was cancelled".into(),
        "error" => "subagent run failed".into(),
        "max-tokens" => "subagent run hit its token limit before finishing".into(),
        "refusal" => "subagent declined the task".into(),
        other => format!("subagent run ended abnormally ({other})"),
    }
}

/// The message of the error the foreground tool throws for a non-completed result
/// (headline, diagnostic, partial output). `None` for `completed`.
pub fn failure_message(result: &SubagentResult) -> Option<String> {
    if result.stop_reason == "completed" {
        return None;
    }
    let mut text = headline(&result.stop_reason);
    if let Some(d) = &result.diagnostic {
        text.push_str("\nDiagnostic: ");
        text.push_str(d);
    }
    let partial = result.output_text();
    if !partial.is_empty() {
        text.push_str("\nPartial output before the run ended:\n");
        text.push_str(&partial);
    }
    Some(text)
}

/// Foreground tool result `(isError, text)` of a published run, given the dispose outcome.
pub fn foreground_text(
    result: &SubagentResult,
    dispose: Result<(), &StartError>,
) -> (bool, String) {
    match (failure_message(result), dispose) {
        (None, Ok(())) => (false, result.output_text()),
        (Some(msg), Ok(())) => (true, format!("Error: {msg}")),
        (None, Err(e)) => (true, format!("Error: {}", e.message)),
        (Some(msg), Err(e)) => (
            true,
            format!(
                "Error: subagent run failed: Error: {msg}; dispose failed: {}: {}",
                e.name, e.message
            ),
        ),
    }
}

/// Foreground tool result of a rejected start.
pub fn foreground_start_rejected(error: &StartError) -> (bool, String) {
    (true, format!("Error: {}", error.message))
}

pub fn background_started(job: &str) -> String {
    format!("started background subagent job {job}")
}

/// Terminal outcome of a one-shot background Job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobOutcome {
    Completed { output: String },
    Failed { detail: String },
    Killed,
}

pub fn job_outcome(result: &SubagentResult) -> JobOutcome {
    match (result.stop_reason.as_str(), &result.diagnostic) {
        ("completed", _) => JobOutcome::Completed {
            output: result.output_text(),
        },
        ("aborted", None) => JobOutcome::Killed,
        (reason, None) => JobOutcome::Failed {
            detail: reason.to_owned(),
        },
        (reason, Some(d)) => JobOutcome::Failed {
            detail: format!("{reason}; diagnostic: {d}"),
        },
    }
}

/// A rejected start: `failed` with `<ErrorName>: <message>`, except a cancelled start whose error
/// is not an `AggregateError` → `killed`.
pub fn job_outcome_start_rejected(error: &StartError, cancelled: bool) -> JobOutcome {
    if cancelled && error.name != "AggregateError" {
        JobOutcome::Killed
    } else {
        JobOutcome::Failed {
            detail: format!("{}: {}", error.name, error.message),
        }
    }
}

/// Apply a rejected `dispose()` to the outcome of the result.
pub fn with_dispose_failure(outcome: JobOutcome, error: &StartError) -> JobOutcome {
    let failure = format!("dispose failed: {}: {}", error.name, error.message);
    match outcome {
        JobOutcome::Failed { detail } => JobOutcome::Failed {
            detail: format!("{detail}; {failure}"),
        },
        _ => JobOutcome::Failed { detail: failure },
    }
}

pub fn status_line(outcome: Option<&JobOutcome>) -> String {
    match outcome {
        None => "[status: running]".into(),
        Some(JobOutcome::Completed { .. }) => "[status: completed]".into(),
        Some(JobOutcome::Killed) => "[status: killed]".into(),
        Some(JobOutcome::Failed { detail }) => format!("[status: failed, {detail}]"),
    }
}

pub fn notice_text(job: &str, label: &str, outcome: &JobOutcome) -> String {
    format!(
        "background job {job} (subagent: {label}) finished {}. Read its output with job_output.",
        status_line(Some(outcome))
    )
}

/// `job_output` text; `None` outcome = still running.
pub fn job_output_text(outcome: Option<&JobOutcome>) -> String {
    let body = match outcome {
        Some(JobOutcome::Completed { output }) if !output.is_empty() => output.as_str(),
        _ => "(no new output)",
    };
    let sep = if body.ends_with('\n') { "" } else { "\n" };
    format!("{body}{sep}{}", status_line(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(stop: &str, out: &str, diag: Option<&str>) -> SubagentResult {
        SubagentResult {
            stop_reason: stop.into(),
            output: text_output(out),
            diagnostic: diag.map(Into::into),
        }
    }

    const MTR: &str = "Subagent failure (provider: ACP; stage: prompt; category: remote-limit; stop reason: max_turn_requests)";
    const PERM: &str =
        "ACP unattended decision (policy: reject; request: execute; decision: denied)";

    #[test]
    fn foreground_texts() {
        assert_eq!(
            foreground_text(&res("completed", "answer", None), Ok(())),
            (false, "answer".into())
        );
        assert_eq!(
            foreground_text(&res("error", "partial one", Some(MTR)), Ok(())),
            (
                true,
                format!(
                    "Error: subagent run failed\nDiagnostic: {MTR}\nPartial output before the run ended:\npartial one"
                )
            )
        );
        assert_eq!(
            foreground_text(&res("max-tokens", "partial one", None), Ok(())).1,
            "Error: subagent run hit its token limit before finishing\nPartial output before the run ended:\npartial one"
        );
        assert_eq!(
            foreground_text(&res("aborted", "", Some(PERM)), Ok(())).1,
            format!("Error: subagent run was cancelled\nDiagnostic: {PERM}")
        );
        assert_eq!(
            foreground_text(&res("refusal", "", None), Ok(())).1,
            "Error: subagent declined the task"
        );
        assert_eq!(headline("odd"), "subagent run ended abnormally (odd)");
        let teardown = StartError {
            name: "AcpRunFailure".into(),
            message:
                "subagent-acp: Subagent failure (provider: ACP; stage: teardown; category: unknown)"
                    .into(),
        };
        assert_eq!(
            foreground_text(&res("completed", "ok", None), Err(&teardown)).1,
            "Error: subagent-acp: Subagent failure (provider: ACP; stage: teardown; category: unknown)"
        );
        assert_eq!(
            foreground_text(&res("error", "p", Some(MTR)), Err(&teardown)).1,
            format!(
                "Error: subagent run failed: Error: subagent run failed\nDiagnostic: {MTR}\nPartial output before the run ended:\np; dispose failed: AcpRunFailure: subagent-acp: Subagent failure (provider: ACP; stage: teardown; category: unknown)"
            )
        );
        let start = StartError {
            name: "AcpRunFailure".into(),
            message: "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)".into(),
        };
        assert_eq!(
            foreground_start_rejected(&start),
            (
                true,
                "Error: subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)".into()
            )
        );
    }

    #[test]
    fn background_texts() {
        let failed = job_outcome(&res("error", "partial", Some(MTR)));
        assert_eq!(
            notice_text("subagent-2", "Observe", &failed),
            format!(
                "background job subagent-2 (subagent: Observe) finished [status: failed, error; diagnostic: {MTR}]. Read its output with job_output."
            )
        );
        assert_eq!(
            job_output_text(Some(&failed)),
            format!("(no new output)\n[status: failed, error; diagnostic: {MTR}]")
        );
        let done = job_outcome(&res("completed", "background answer", None));
        assert_eq!(
            job_output_text(Some(&done)),
            "background answer\n[status: completed]"
        );
        assert_eq!(
            job_output_text(Some(&job_outcome(&res("completed", "", None)))),
            "(no new output)\n[status: completed]"
        );
        assert_eq!(
            job_output_text(Some(&job_outcome(&res("aborted", "x", None)))),
            "(no new output)\n[status: killed]"
        );
        assert_eq!(
            status_line(Some(&job_outcome(&res("aborted", "", Some(PERM))))),
            format!("[status: failed, aborted; diagnostic: {PERM}]")
        );
        assert_eq!(
            status_line(Some(&job_outcome(&res("max-tokens", "x", None)))),
            "[status: failed, max-tokens]"
        );
        assert_eq!(job_output_text(None), "(no new output)\n[status: running]");
        let start = StartError {
            name: "AcpRunFailure".into(),
            message: "subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)".into(),
        };
        assert_eq!(
            status_line(Some(&job_outcome_start_rejected(&start, false))),
            "[status: failed, AcpRunFailure: subagent-acp: Subagent failure (provider: ACP; stage: process; category: process-start)]"
        );
        assert_eq!(job_outcome_start_rejected(&start, true), JobOutcome::Killed);
        let agg = StartError {
            name: "AggregateError".into(),
            message: "m".into(),
        };
        assert_eq!(
            status_line(Some(&job_outcome_start_rejected(&agg, true))),
            "[status: failed, AggregateError: m]"
        );
        let teardown = StartError {
            name: "AcpRunFailure".into(),
            message: "t".into(),
        };
        assert_eq!(
            status_line(Some(&with_dispose_failure(done, &teardown))),
            "[status: failed, dispose failed: AcpRunFailure: t]"
        );
        assert_eq!(
            status_line(Some(&with_dispose_failure(failed, &teardown))),
            format!("[status: failed, error; diagnostic: {MTR}; dispose failed: AcpRunFailure: t]")
        );
        assert_eq!(
            background_started("subagent-1"),
            "started background subagent job subagent-1"
        );
    }

    #[test]
    fn output_blocks() {
        assert_eq!(res("completed", "", None).output, Vec::<Value>::new());
        let blocks = res("completed", "ab", None).output;
        assert_eq!(blocks, vec![json!({"type": "text", "text": "ab"})]);
        assert_eq!(output_text(&blocks), "ab");
        // Several blocks: text blocks concatenated, others ignored.
        let r = SubagentResult {
            stop_reason: "completed".into(),
            output: vec![
                json!({"type": "text", "text": "a"}),
                json!({"type": "image", "data": "SECRET"}),
                json!({"type": "text", "text": "b"}),
            ],
            diagnostic: None,
        };
        assert_eq!(foreground_text(&r, Ok(())), (false, "ab".into()));
        assert_eq!(
            job_output_text(Some(&job_outcome(&r))),
            "ab\n[status: completed]"
        );
    }
}
