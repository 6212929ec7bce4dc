//! Exact model-visible texts pinned as insta snapshots in `snapshots/`, one per scenario × mode.
//! Files are insta's own format, read with insta; a mismatch writes `<name>.snap.new` beside the
//! old one, so `cargo insta review` (or `conform run --accept`) updates them after a human read
//! the diff.

use std::path::{Path, PathBuf};

use conform_protocol::subject::Mode;
use insta::internals::{SnapshotContents, TextSnapshotContents};
use insta::{Snapshot, TextSnapshotKind};

use crate::run::Observed;
use crate::scenario::Scenario;

/// Job ids depend on how many jobs the subject ran before; they are masked (their agreement
/// between texts is checked separately).
pub fn mask_job_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("subagent-") {
        let after = &rest[i + "subagent-".len()..];
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        out.push_str(&rest[..i]);
        if digits > 0 {
            out.push_str("subagent-[job]");
        } else {
            out.push_str("subagent-");
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// The model-visible texts of a run, in a stable layout.
pub fn render(obs: &Observed) -> String {
    let mut out = String::new();
    let mut block = |title: String, body: &str| {
        out.push_str(&format!("── {title} ──\n{}\n", mask_job_ids(body)));
    };
    if let Some(e) = &obs.start_rejected {
        block(format!("start rejected ({})", e.name), &e.message);
    }
    if let Some((is_error, text)) = &obs.tool_result {
        block(format!("tool result (isError: {is_error})"), text);
    }
    for (job, text) in &obs.notices {
        block(format!("notice ({})", mask_job_ids(job)), text);
    }
    if let Some(text) = &obs.job_output {
        block("job_output".into(), text);
    }
    out
}

pub fn file_name(scenario: &Scenario, mode: Mode) -> String {
    format!("{}@{}.snap", scenario.id.replace('/', "__"), mode)
}

pub enum Outcome {
    Matches,
    /// No snapshot yet; `.snap.new` written (unless pending snapshots are off).
    Missing {
        new: Option<PathBuf>,
    },
    /// Differs; unified diff from the stored to the actual text, `.snap.new` written (unless
    /// pending snapshots are off: `INSTA_UPDATE=no`, or CI).
    Differs {
        diff: String,
        new: Option<PathBuf>,
    },
    Accepted,
}

/// Whether a differing or missing snapshot leaves a `.snap.new` beside it, following insta's
/// convention: not with `INSTA_UPDATE=no`, nor on CI unless `INSTA_UPDATE` asks for it.
fn writes_pending() -> bool {
    match std::env::var("INSTA_UPDATE").as_deref() {
        Ok("no") => false,
        Ok(_) => true,
        Err(_) => std::env::var_os("CI").is_none(),
    }
}

/// Compares `actual` with the stored snapshot; with `accept`, writes it as the new snapshot.
pub fn check(
    dir: &Path,
    scenario: &Scenario,
    mode: Mode,
    actual: &str,
    accept: bool,
) -> std::io::Result<Outcome> {
    let path = dir.join(file_name(scenario, mode));
    let new_path = path.with_extension("snap.new");
    let actual_contents = TextSnapshotContents::new(actual.to_owned(), TextSnapshotKind::File);
    let stored = Snapshot::from_file(&path).ok();
    let stored_text = stored.as_ref().and_then(|s| match s.contents() {
        SnapshotContents::Text(t) => Some(t.clone()),
        SnapshotContents::Binary(_) => None,
    });
    if let Some(old) = &stored_text
        && old.matches_latest(&actual_contents)
    {
        let _ = std::fs::remove_file(&new_path);
        return Ok(Outcome::Matches);
    }
    let header = format!(
        "---\nsource: {}\nexpression: {} ({mode})\n---\n",
        scenario.path.display(),
        scenario.id
    );
    let body = format!("{header}{}\n", actual.trim_end());
    if accept {
        std::fs::create_dir_all(dir)?;
        std::fs::write(&path, body)?;
        let _ = std::fs::remove_file(&new_path);
        return Ok(Outcome::Accepted);
    }
    let new_path = if writes_pending() {
        std::fs::create_dir_all(dir)?;
        std::fs::write(&new_path, body)?;
        Some(new_path)
    } else {
        None
    };
    Ok(match stored_text {
        None => Outcome::Missing { new: new_path },
        Some(old) => {
            let old = old.to_string();
            let diff = similar::TextDiff::from_lines(old.trim_end(), actual.trim_end())
                .unified_diff()
                .context_radius(3)
                .header("stored snapshot", "this run")
                .to_string();
            Outcome::Differs {
                diff,
                new: new_path,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_ids_are_masked_but_other_text_is_kept() {
        assert_eq!(
            mask_job_ids("started background subagent job subagent-12"),
            "started background subagent job subagent-[job]"
        );
        assert_eq!(mask_job_ids("subagent-acp: x"), "subagent-acp: x");
        assert_eq!(
            mask_job_ids("job subagent-3 (subagent: a)"),
            "job subagent-[job] (subagent: a)"
        );
    }
}
