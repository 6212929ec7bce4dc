//! Judging one run: every check has a stable id (`expect.diagnostic`, `contract.bound`, …) so a
//! failure names the requirement it broke. Checks read only what the run observed; snapshots are
//! judged by the caller.

use conform_protocol::side::{FakeEvent, Role};
use conform_protocol::subject::{FromSubject, Mode};
use serde_json::Value;

use crate::events::{Late, RunEvent};
use crate::run::Observed;
use crate::scenario::Scenario;

/// The shared diagnostic bound, in UTF-8 bytes.
pub const MAX_DIAGNOSTIC_BYTES: usize = 4096;

/// Who is to blame for a failed check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Blame {
    /// The subject broke the contract.
    Subject,
    /// The harness or a fake failed; the run proves nothing about the subject.
    Harness,
}

#[derive(Clone, Debug)]
pub struct Finding {
    pub check: &'static str,
    pub blame: Blame,
    pub message: String,
}

fn subject(check: &'static str, message: String) -> Finding {
    Finding {
        check,
        blame: Blame::Subject,
        message,
    }
}

/// Every model-visible text of the run, with where it came from.
pub fn model_visible(obs: &Observed) -> Vec<(&'static str, &str)> {
    let mut texts = Vec::new();
    if let Some(e) = &obs.start_rejected {
        texts.push(("start rejection", e.message.as_str()));
    }
    if let Some(d) = obs.result.as_ref().and_then(|r| r.diagnostic.as_deref()) {
        texts.push(("diagnostic", d));
    }
    if let Some((_, t)) = &obs.tool_result {
        texts.push(("tool result", t.as_str()));
    }
    for (_, t) in &obs.notices {
        texts.push(("notice", t.as_str()));
    }
    if let Some(t) = &obs.job_output {
        texts.push(("job_output", t.as_str()));
    }
    texts
}

/// The closed set of DSH SDK turn-end kinds and abort causes (shown values, not secrets).
const TURN_END_VOCABULARY: &[&str] = &[
    "completed",
    "aborted",
    "blocked",
    "error",
    "max-tokens",
    "interrupted",
    "user",
    "parent",
    "hook",
    "disposed",
    "legacy",
];

/// The closed ACP values a `session/update` carries besides free text.
const ACP_UPDATE_VOCABULARY: &[&str] = &[
    "pending",
    "in_progress",
    "completed",
    "failed",
    "tool_call",
    "tool_call_update",
    "agent_message_chunk",
    "agent_thought_chunk",
    "user_message_chunk",
    "plan",
];

/// Untrusted strings of a scenario that must never reach model-visible text: what the fake
/// writes outside assistant output (stderr, thoughts, tool titles and inputs, raw lines, error
/// payloads, unknown enum values), the task, and the scenario's declared secrets. Short strings
/// are skipped: they collide with the fixed vocabulary (`edit`, `read`).
pub fn untrusted_strings(scenario: &Scenario) -> Vec<String> {
    const KNOWN_STOPS: &[&str] = &[
        "end_turn",
        "max_tokens",
        "max_turn_requests",
        "refusal",
        "cancelled",
    ];
    let mut out: Vec<String> = scenario.file.secrets.clone();
    out.push(scenario.file.task.clone());
    for step in &scenario.script.steps {
        out.extend(step.stderr.clone());
        out.extend(step.thought.clone());
        out.extend(step.raw.clone());
        if let Some(stop) = &step.stop
            && !KNOWN_STOPS.contains(&stop.as_str())
        {
            out.push(stop.clone());
        }
        if let Some(p) = &step.permission {
            out.extend(p.title.clone());
            if let Some(raw) = &p.raw_input {
                leaves(raw, &mut out);
            }
        }
        if let Some(u) = &step.update {
            // Closed ACP values (statuses, update kinds) are vocabulary, shown by design.
            let mut all = Vec::new();
            leaves(u, &mut all);
            out.extend(
                all.into_iter()
                    .filter(|s| !ACP_UPDATE_VOCABULARY.contains(&s.as_str())),
            );
        }
        if let Some(e) = &step.error {
            out.push(e.message.clone());
            if let Some(d) = &e.data {
                leaves(d, &mut out);
            }
        }
        // DSH SDK: raw events and turn-end payloads are child text (error messages, unknown
        // kinds); assistant text addressed to another session is not this run's output.
        if let Some(e) = &step.event {
            leaves(e, &mut out);
        }
        if let Some(t) = &step.turn_end {
            let mut all = Vec::new();
            leaves(t, &mut all);
            out.extend(
                all.into_iter()
                    .filter(|s| !TURN_END_VOCABULARY.contains(&s.as_str())),
            );
        }
        if step.session.is_some() {
            out.extend(step.message.clone());
            out.extend(step.delta.clone());
            out.extend(step.attempt.clone());
        }
        if step.attempt.is_some() {
            out.push(conform_fakes::dsh_sdk::codec::ATTEMPT_FAILURE.to_owned());
        }
        if let Some(r) = &step.reply {
            // Reply payloads are protocol data; only free text inside them is a secret.
            leaves(r, &mut out);
        }
    }
    out.retain(|s| s.chars().count() >= 8);
    out.sort();
    out.dedup();
    out
}

fn leaves(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| leaves(x, out)),
        Value::Object(o) => o.values().for_each(|x| leaves(x, out)),
        _ => {}
    }
}

/// Which rung of the teardown ladder ended the runtime process, from its own ledger.
pub fn teardown_rung(obs: &Observed) -> Option<&'static str> {
    let runtime_pid = obs.fake.iter().find_map(|l| match &l.event {
        FakeEvent::Register {
            role: Role::Runtime,
            ..
        } => Some(l.pid),
        _ => None,
    })?;
    let mine = || obs.fake.iter().filter(move |l| l.pid == runtime_pid);
    let term = mine().find_map(|l| match &l.event {
        FakeEvent::Signal { signal, action } if signal == "SIGTERM" => Some(action.clone()),
        _ => None,
    });
    let exited = mine().any(|l| matches!(l.event, FakeEvent::Exit { .. }));
    Some(match term.as_deref() {
        Some("exit") => "sigterm",
        _ if exited => "eof",
        _ => "sigkill",
    })
}

pub fn judge(scenario: &Scenario, mode: Mode, obs: &Observed) -> Vec<Finding> {
    let mut f = Vec::new();
    let expect = &scenario.file.expect;

    // --- the harness's own health ---
    for line in &obs.fake {
        if let FakeEvent::Fault { detail } = &line.event {
            f.push(Finding {
                check: "harness.fake",
                blame: Blame::Harness,
                message: format!("fake pid {}: {detail}", line.pid),
            });
        }
    }
    // Every frame a fake sends must be valid for its protocol unless the scenario marked it.
    // A real peer's frames are the runtime's own: `conform peers diff` holds them to the same
    // schema (a rejection there means the schema, not the runtime, is wrong).
    let checked = if scenario.file.peer.is_some() {
        Some(vec![])
    } else {
        conform_fakes::schema::unmarked_invalid_frames(
            scenario.file.provider,
            obs.product_version.as_deref(),
            &obs.fake,
        )
    };
    match checked {
        Some(invalid) => {
            for (line, e) in invalid {
                let frame = match &line.event {
                    FakeEvent::Frame { frame, .. } => frame.to_string(),
                    other => format!("{other:?}"),
                };
                f.push(Finding {
                    check: "harness.fake-schema",
                    blame: Blame::Harness,
                    message: format!(
                        "the fake sent a frame that is not valid {} without a `violation` mark: {e}\n  frame: {frame}",
                        scenario.file.provider
                    ),
                });
            }
        }
        None => f.push(Finding {
            check: "harness.fake-schema",
            blame: Blame::Harness,
            message: format!(
                "conform has no wire schema for `{}`",
                scenario.file.provider
            ),
        }),
    }
    if !obs
        .fake
        .iter()
        .any(|l| matches!(l.event, FakeEvent::Register { .. }))
        && scenario.file.subject.runtime == crate::scenario::RuntimeKind::Fake
        && obs.start_rejected.is_none()
        && obs.subject_gone.is_none()
        && obs.timed_out.is_none()
    {
        // The subject claims a run whose runtime never ran: the fake registers before it reads
        // a byte, so the subject did not spawn what it was given (or the fake could not start,
        // which its stderr line in the subject's tail would show).
        f.push(subject(
            "subject.runtime",
            "the subject reported the run, but the runtime it was given never started (no process registered on the side channel)".into(),
        ));
    }

    // --- the subject as a process ---
    if let Some(detail) = &obs.subject_gone {
        f.push(subject("subject.alive", detail.clone()));
    }
    if let Some(d) = obs.timed_out {
        // A background run that settled but whose completion never reached the parent is a
        // blackhole, not a hang: say which watchdog status it ended in.
        let blackhole = mode == Mode::Background
            && obs.settled
            && obs.notices.is_empty()
            && !obs.cancel_sent
            && obs.start_rejected.is_none();
        if blackhole {
            f.push(subject(
                "delivery.completion",
                format!(
                    "{}: the run settled but no completion notice reached the parent by expectedBy ({} ms)",
                    obs.watchdog_status(),
                    d.as_millis()
                ),
            ));
        } else {
            f.push(subject(
                "subject.deadline",
                format!("the run did not finish within {} ms", d.as_millis()),
            ));
        }
    }
    for (line, error) in &obs.subject_invalid {
        f.push(subject(
            "subject.protocol",
            format!("{error}\n  line: {line}"),
        ));
    }
    for line in &obs.fake {
        if let FakeEvent::Violation { detail } = &line.event {
            f.push(subject(
                "wire.violation",
                format!("the runtime saw a protocol violation: {detail}"),
            ));
        }
    }
    if obs.subject_gone.is_some() || obs.timed_out.is_some() {
        return f;
    }

    // --- expectations from the scenario ---
    match (&expect.start_error, &obs.start_rejected) {
        (Some(want), Some(got)) if &got.message != want => f.push(subject(
            "expect.start-error",
            format!(
                "start rejected with {}, expected `{want}`",
                show(Some(&got.message))
            ),
        )),
        (Some(want), None) => f.push(subject(
            "expect.start-error",
            format!("start was not rejected, expected `{want}`"),
        )),
        (None, Some(got)) => f.push(subject(
            "expect.start-error",
            format!(
                "start was rejected unexpectedly: {}: {}",
                show(Some(&got.name)),
                show(Some(&got.message))
            ),
        )),
        _ => {}
    }
    if let Some(want) = &expect.stop_reason {
        match &obs.result {
            None => f.push(subject(
                "expect.stop-reason",
                "no result was reported".into(),
            )),
            Some(r) => {
                if r.stop_reason != want.as_str() {
                    f.push(subject(
                        "expect.stop-reason",
                        format!("stop reason `{}`, expected `{want}`", r.stop_reason),
                    ));
                }
                if let Some(code) = &expect.upstream_code {
                    let mapped = upstream_mapping(r.diagnostic.as_deref());
                    if mapped.as_deref() != Some(code.as_str())
                        && mapped.as_deref() != Some("unknown")
                    {
                        f.push(subject(
                            "expect.upstream-code",
                            format!(
                                "upstream code `{code}` shows as {}, expected `{code}` or `unknown`",
                                show(mapped.as_deref())
                            ),
                        ));
                    }
                } else if r.diagnostic != expect.diagnostic {
                    f.push(subject(
                        "expect.diagnostic",
                        format!(
                            "diagnostic {}, expected {}",
                            show(r.diagnostic.as_deref()),
                            show(expect.diagnostic.as_deref())
                        ),
                    ));
                }
                if let Some(want) = &expect.output
                    && &r.output_text() != want
                {
                    f.push(subject(
                        "expect.output",
                        format!("output {:?}, expected {want:?}", r.output_text()),
                    ));
                }
            }
        }
    }
    if mode == Mode::Background
        && let Some(want) = &expect.job_status
    {
        let got = obs.job_output.as_deref().and_then(job_status);
        if got.as_deref() != Some(want.as_str()) {
            f.push(subject(
                "expect.job-status",
                format!("job status {}, expected `{want}`", show(got.as_deref())),
            ));
        }
    }
    if let Some(want) = &expect.teardown {
        let got = teardown_rung(obs);
        if got != Some(want.as_str()) {
            f.push(subject(
                "expect.teardown",
                format!(
                    "the runtime ended at teardown rung {}, expected `{want}`",
                    show(got)
                ),
            ));
        }
    }
    // --- the contract, whatever the scenario says ---
    if let Some(e) = &obs.start_rejected
        && e.message.len() > MAX_DIAGNOSTIC_BYTES
    {
        f.push(subject(
            "contract.bound",
            format!(
                "the start rejection message is {} bytes, over {MAX_DIAGNOSTIC_BYTES}",
                e.message.len()
            ),
        ));
    }
    // No output is `[]`: a text block without text is output that is not there (the records
    // keep a text only when it is non-empty).
    if let Some(r) = &obs.result
        && r.output.iter().any(|b| {
            b.get("type").and_then(Value::as_str) == Some("text")
                && b.get("text").and_then(Value::as_str) == Some("")
        })
    {
        f.push(subject(
            "contract.output",
            "the output holds an empty text block; no output is `[]`".into(),
        ));
    }
    if let Some(r) = &obs.result
        && let Some(d) = &r.diagnostic
    {
        if d.len() > MAX_DIAGNOSTIC_BYTES {
            f.push(subject(
                "contract.bound",
                format!(
                    "the diagnostic is {} bytes, over {MAX_DIAGNOSTIC_BYTES}",
                    d.len()
                ),
            ));
        }
        if r.stop_reason == "completed" {
            f.push(subject(
                "contract.no-diagnostic",
                "a completed result carries a diagnostic".into(),
            ));
        }
        if r.stop_reason == "aborted" && obs.cancel_sent {
            f.push(subject(
                "contract.no-diagnostic",
                "a locally cancelled result carries a diagnostic".into(),
            ));
        }
    }
    for secret in untrusted_strings(scenario) {
        for (what, text) in model_visible(obs) {
            // The label (the scenario id) is the harness's own text, shown in notices by design.
            if text.replace(&scenario.id, "").contains(&secret) {
                f.push(subject(
                    "contract.redaction",
                    format!("the {what} contains untrusted text {secret:?}"),
                ));
            }
        }
    }
    if mode == Mode::Foreground
        && let (Some((is_error, text)), Some(r)) = (&obs.tool_result, &obs.result)
    {
        if *is_error == (r.stop_reason == "completed") && obs.settled {
            f.push(subject(
                "presentation.is-error",
                format!("isError is {is_error} for stop reason `{}`", r.stop_reason),
            ));
        }
        if let Some(d) = &r.diagnostic
            && !text.contains(d.as_str())
        {
            f.push(subject(
                "presentation.same-diagnostic",
                "the tool result does not show the result's diagnostic".into(),
            ));
        }
    }
    if mode == Mode::Background {
        check_background(obs, &mut f);
    }

    // --- processes ---
    let escaped_ok = |n: usize| n == expect.escapes;
    if !obs.alive_at_rejection.is_empty() && !escaped_ok(obs.alive_at_rejection.len()) {
        f.push(subject(
            "process.rollback",
            format!(
                "start was rejected while the child was still running (it must be settled first): {}",
                obs.alive_at_rejection.join(", ")
            ),
        ));
    }
    if obs.leftovers.len() != expect.escapes {
        let check = if obs.start_rejected.is_some() {
            "process.rollback"
        } else {
            "process.settled"
        };
        f.push(subject(
            check,
            if expect.escapes == 0 {
                format!(
                    "still running after the subject said the run was over (killed by the harness): {}",
                    obs.leftovers.join(", ")
                )
            } else {
                format!(
                    "{} process(es) left running, the scenario makes exactly {} escape: {}",
                    obs.leftovers.len(),
                    expect.escapes,
                    obs.leftovers.join(", ")
                )
            },
        ));
    }
    f.extend(crate::timing::judge(scenario, obs));
    f
}

fn check_background(obs: &Observed, f: &mut Vec<Finding>) {
    let Some((_, started)) = &obs.tool_result else {
        return;
    };
    let Some(job) = started.strip_prefix("started background subagent job ") else {
        f.push(subject(
            "presentation.background-start",
            format!("the background tool result is {}", show(Some(started))),
        ));
        return;
    };
    let killed = obs.cancel_sent;
    match (obs.notices.as_slice(), killed) {
        ([], false) => f.push(subject(
            "delivery.completion",
            format!(
                "{}: no completion notice reached the parent{}",
                obs.watchdog_status(),
                if obs.watchdog_status() == "done_but_not_forwarded" {
                    " although the child finished"
                } else {
                    ""
                }
            ),
        )),
        ([(j, text)], _) => {
            if j != job || !text.starts_with(&format!("background job {job} ")) {
                f.push(subject(
                    "delivery.job-id",
                    format!(
                        "the notice names job {}, the tool result named {}",
                        show(Some(j)),
                        show(Some(job))
                    ),
                ));
            }
            if killed {
                f.push(subject(
                    "delivery.no-notice-after-kill",
                    "a job killed through job_kill still sent a completion notice".into(),
                ));
            }
            if let Some(out) = &obs.job_output
                && let (Some(a), Some(b)) = (status_line(text), job_status_text(out))
                && a != b
            {
                f.push(subject(
                    "presentation.same-status",
                    format!("the notice says {a} but job_output says {b}"),
                ));
            }
        }
        (many, _) if many.len() > 1 => f.push(subject(
            "delivery.single-notice",
            format!("{} completion notices for one job", many.len()),
        )),
        _ => {}
    }
    if obs.job_output.is_none() {
        f.push(subject(
            "delivery.job-output",
            "job_output never answered".into(),
        ));
    }
}

/// The category a diagnostic's first line shows (`category: <x>;` or `…)`).
pub fn upstream_mapping(diagnostic: Option<&str>) -> Option<String> {
    let first = diagnostic?.lines().next()?;
    let rest = &first[first.find("category: ")? + "category: ".len()..];
    let end = rest.find([';', ')']).unwrap_or(rest.len());
    Some(rest[..end].to_owned())
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

/// A value for a finding: quoted, and cut after 300 characters so a runaway text stays readable.
fn show(s: Option<&str>) -> String {
    const KEEP: usize = 300;
    match s {
        None => "none".to_owned(),
        Some(s) if s.chars().count() > KEEP => {
            let head: String = s.chars().take(KEEP).collect();
            format!("{head:?}… ({} bytes in all)", s.len())
        }
        Some(s) => format!("{s:?}"),
    }
}

/// Findings for subject messages that arrived after the run was judged over (collected until
/// the subject shut down). Host logs are harmless; anything model-visible or lifecycle is a
/// protocol failure, and a notice is judged as delivery.
pub fn judge_late(obs: &Observed, late: &Late) -> Vec<Finding> {
    let mut f = Vec::new();
    if obs.timed_out.is_some() || obs.subject_gone.is_some() {
        // That run already failed, and whatever trickles in after a hang proves nothing more.
        return f;
    }
    for event in &late.events {
        let msg = match event {
            RunEvent::Subject(msg) => msg,
            RunEvent::SubjectInvalid { line, error } => {
                f.push(subject(
                    "subject.protocol",
                    format!("{error} (after the run was over)\n  line: {line}"),
                ));
                continue;
            }
            _ => continue,
        };
        match msg {
            FromSubject::HostLog { .. } => {}
            FromSubject::Notice { job, .. } if obs.cancel_sent => f.push(subject(
                "delivery.no-notice-after-kill",
                format!("a job killed through job_kill still sent a completion notice (job `{job}`, after the run was over)"),
            )),
            FromSubject::Notice { job, .. } => f.push(subject(
                "delivery.single-notice",
                format!("another completion notice for job `{job}` arrived after the run was over"),
            )),
            other => f.push(subject(
                "subject.protocol",
                format!(
                    "out of order: `{}` after the run was over\n  line: {}",
                    crate::lifecycle::kind(other),
                    crate::subject::shown(other)
                ),
            )),
        }
    }
    let kept = late.events.len() as u64;
    if late.count > kept {
        f.push(subject(
            "subject.protocol",
            format!(
                "{} more message(s) arrived after the run was over (not kept)",
                late.count - kept
            ),
        ));
    }
    f
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
