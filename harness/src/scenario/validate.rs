//! What a scenario file must say beyond its schema: exactly one action per step, a mode, an
//! expectation, and `[cancel] at` / `[fake.release]` naming what some step declares (or `at =
//! "before-start"`, only where a cancel before the start means something) — each error at the
//! line and column it is about.

use std::ops::Range;
use std::path::Path;

use std::collections::BTreeMap;

use conform_protocol::script::Step;
use serde::Deserialize;
use toml::Spanned;

use conform_protocol::vocab::Mode;

use super::{BEFORE_START, CancelBy, ScenarioError, ScenarioFile, invalid};

pub(super) fn check_file(
    path: &Path,
    text: &str,
    file: &ScenarioFile,
) -> Result<(), ScenarioError> {
    let at_key = |key: &str| find_key(text, key);
    if file.modes.is_empty() {
        return Err(invalid(
            path,
            text,
            at_key("modes"),
            "`modes` is empty".into(),
        ));
    }
    if file.job.job_output_calls == 0 {
        return Err(invalid(
            path,
            text,
            at_key("job_output_calls"),
            "`job_output_calls` is 0: the parent reads a finished job at least once".into(),
        ));
    }
    if file.expect.start_error.is_some() && file.expect.stop_reason.is_some() {
        return Err(invalid(
            path,
            text,
            at_key("start_error"),
            "`start_error` and `stop_reason` exclude each other: a rejected start has no result"
                .into(),
        ));
    }
    if file.expect.spawns == Some(false) && file.expect.start_error.is_none() {
        return Err(invalid(
            path,
            text,
            at_key("spawns"),
            "`spawns = false` is a start rejected before anything runs: `[expect]` needs `start_error`"
                .into(),
        ));
    }
    if file.expect.start_error.is_none() && file.expect.stop_reason.is_none() {
        return Err(invalid(
            path,
            text,
            find_key(text, "[expect]"),
            "`[expect]` needs `stop_reason` (a published run) or `start_error` (a rejected start)"
                .into(),
        ));
    }
    check_before_start(path, text, file)
}

/// `[waits]` names waits the file (or a prelude it includes) sets, each with a reason.
pub(super) fn check_waits(
    path: &Path,
    text: &str,
    file: &ScenarioFile,
    steps: &[Step],
) -> Result<(), ScenarioError> {
    let Some((key, why)) = super::waits::table_error(file, steps) else {
        return Ok(());
    };
    let table = find_key(text, "[waits]").map_or(0, |s| s.end);
    let span = find_key(&text[table..], &key).map(|s| s.start + table..s.end + table);
    Err(invalid(
        path,
        text,
        span.or_else(|| find_key(text, "[waits]")),
        why,
    ))
}

/// `[cancel] at = "before-start"`: the signal is aborted before `start()` runs, so the start
/// is rejected and no runtime ever runs — in the foreground, where the tool call's signal is
/// the provider's. A background job's signal is the job's own, fresh when its `start()` is
/// called (the parent can kill the job only once it has its id).
fn check_before_start(path: &Path, text: &str, file: &ScenarioFile) -> Result<(), ScenarioError> {
    let Some(cancel) = file.cancel.as_ref().filter(|c| c.before_start()) else {
        return Ok(());
    };
    let at = || find_key(text, "at");
    let refuse = |span, why: &str| {
        Err(invalid(
            path,
            text,
            span,
            format!("`[cancel] at = \"{BEFORE_START}\"`: {why}"),
        ))
    };
    if cancel.by == CancelBy::Dispose {
        return refuse(
            find_key(text, "by").or_else(at),
            "the host's own dispose needs a published run; a cancel before the start is the tool call's signal (`by = \"signal\"`)",
        );
    }
    if file.modes.contains(&Mode::Background) {
        return refuse(
            find_key(text, "modes").or_else(at),
            "foreground only (`modes = [\"foreground\"]`): a background job's signal is the job's own, not yet aborted when its start() runs",
        );
    }
    if let Some(step) = file.fake.steps.first() {
        return refuse(
            Some(step.span()),
            "no runtime may run, so the script has no steps",
        );
    }
    if file.expect.start_error.is_none() {
        return refuse(
            find_key(text, "stop_reason").or_else(at),
            "the start is rejected: `[expect]` needs `start_error`, the provider's message",
        );
    }
    Ok(())
}

/// Where the names that must refer to the script are written (read leniently: the file has
/// already been parsed strictly).
#[derive(Deserialize)]
struct ReferenceSpans {
    #[serde(default)]
    cancel: Option<CancelSpans>,
    #[serde(default)]
    fake: Option<FakeSpans>,
    #[serde(default)]
    job: Option<JobSpans>,
}

#[derive(Deserialize)]
struct JobSpans {
    peek_at: Option<Spanned<String>>,
}

#[derive(Deserialize)]
struct CancelSpans {
    at: Option<Spanned<String>>,
}

#[derive(Deserialize)]
struct FakeSpans {
    #[serde(default)]
    release: BTreeMap<Spanned<String>, toml::Value>,
}

/// `[cancel] at` must name a checkpoint, and every `[fake.release]` key an await, that some
/// step of the expanded script (preludes included) declares: a misspelt name would otherwise
/// never fire, and the case would pass without testing what it says.
pub(super) fn check_references(
    path: &Path,
    text: &str,
    file: &ScenarioFile,
    steps: &[Step],
) -> Result<(), ScenarioError> {
    fn declared<'a>(names: impl Iterator<Item = &'a String>) -> Vec<&'a str> {
        let mut out: Vec<&str> = Vec::new();
        for n in names {
            if !out.contains(&n.as_str()) {
                out.push(n);
            }
        }
        out
    }
    fn listing(kind: &str, names: &[&str]) -> String {
        if names.is_empty() {
            format!("the script declares no {kind}")
        } else {
            let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
            format!("declared {kind}: {}", quoted.join(", "))
        }
    }
    let spans: Option<ReferenceSpans> = toml::from_str(text).ok();
    let checkpoints = declared(steps.iter().filter_map(|s| s.checkpoint.as_ref()));
    // A checkpoint named where none is declared, at its value (else its key).
    let undeclared = |what: &str, name: &str, span: Option<&Spanned<String>>, key: &str| {
        invalid(
            path,
            text,
            span.map(Spanned::span).or_else(|| find_key(text, key)),
            format!(
                "`{what}` names checkpoint `{name}`, which no step declares ({})",
                listing("checkpoints", &checkpoints)
            ),
        )
    };
    // A real peer's checkpoints are the kinds of notification it sends (`turn/start`), known
    // only when it runs.
    if let Some(cancel) = &file.cancel
        && file.peer.is_none()
        && !cancel.before_start()
        && !checkpoints.contains(&cancel.at.as_str())
    {
        let span = spans.as_ref().and_then(|s| s.cancel.as_ref()?.at.as_ref());
        return Err(undeclared("[cancel] at", &cancel.at, span, "at"));
    }
    if let Some(peek) = &file.job.peek_at
        && !checkpoints.contains(&peek.as_str())
    {
        let span = spans
            .as_ref()
            .and_then(|s| s.job.as_ref()?.peek_at.as_ref());
        return Err(undeclared("[job] peek_at", peek, span, "peek_at"));
    }
    let awaits = declared(steps.iter().filter_map(|s| s.await_.as_ref()));
    let mut released: Vec<(Option<Range<usize>>, &str)> =
        match spans.as_ref().and_then(|s| s.fake.as_ref()) {
            Some(f) => f
                .release
                .keys()
                .map(|k| (Some(k.span()), k.get_ref().as_str()))
                .collect(),
            None => file
                .fake
                .release
                .keys()
                .map(|k| (None, k.as_str()))
                .collect(),
        };
    released.sort_by_key(|(span, _)| span.as_ref().map(|s| s.start));
    if let Some((span, name)) = released.into_iter().find(|(_, n)| !awaits.contains(n)) {
        return Err(invalid(
            path,
            text,
            span,
            format!(
                "`[fake.release]` names await `{name}`, which no step declares ({})",
                listing("awaits", &awaits)
            ),
        ));
    }
    Ok(())
}

/// Byte span of the first line that starts with `key` (for pointing at semantic errors).
fn find_key(text: &str, key: &str) -> Option<Range<usize>> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if trimmed.starts_with(key) {
            let start = offset + (line.len() - trimmed.len());
            return Some(start..start + key.len());
        }
        offset += line.len();
    }
    None
}
