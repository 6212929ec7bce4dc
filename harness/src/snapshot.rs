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
    for text in &obs.job_output_repeats {
        block("job_output (again)".into(), text);
    }
    out
}

pub fn file_name(scenario: &Scenario, mode: Mode) -> String {
    format!("{}@{}.snap", scenario.id.replace('/', "__"), mode)
}

pub enum Outcome {
    Matches,
    /// No snapshot yet; `.snap.new` written (unless pending snapshots are off, or the write
    /// failed: then `note` names the file and the error).
    Missing {
        new: Option<PathBuf>,
        note: Option<String>,
    },
    /// Differs; unified diff from the stored to the actual text, `.snap.new` written (unless
    /// pending snapshots are off: `INSTA_UPDATE=no`, or CI). If writing the `.snap.new`
    /// failed, the diff ends with a note naming the file and the OS error, and `new` is `None`.
    Differs {
        diff: String,
        new: Option<PathBuf>,
    },
    Accepted,
}

/// What becomes of a differing or missing snapshot when `--accept` was not given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Update {
    /// Written as the stored snapshot (accepted).
    InPlace,
    /// Left beside it as a pending `.snap.new`, for `cargo insta review`.
    Pending,
    /// Nothing is written.
    Nothing,
}

/// insta's own rules (insta 1.49 `snapshot_update_behavior` and `is_ci`), so `conform` and
/// `cargo insta` agree: `INSTA_UPDATE` is `auto` (the default: pending, but nothing on CI),
/// `always`/`1`/`force` (accept), `unseen` (accept a new snapshot, pending for a changed
/// one), `new` (pending) or `no`; `CI` counts unless it is empty, `0` or `false` (unset: Azure's
/// `TF_BUILD` counts).
fn update_rule(
    insta_update: Option<&str>,
    ci: Option<&str>,
    tf_build: bool,
    missing: bool,
) -> Result<Update, String> {
    let is_ci = match ci {
        Some("false" | "0" | "") => false,
        None => tf_build,
        Some(_) => true,
    };
    Ok(match insta_update.unwrap_or("auto") {
        "auto" | "" if is_ci => Update::Nothing,
        "auto" | "" => Update::Pending,
        "always" | "1" | "force" => Update::InPlace,
        "unseen" if missing => Update::InPlace,
        "unseen" | "new" => Update::Pending,
        "no" => Update::Nothing,
        other => {
            return Err(format!(
                "INSTA_UPDATE={other:?} is not one of auto, always, unseen, new, no, force"
            ));
        }
    })
}

/// [`update_rule`] for this process's environment.
fn update_from_env(missing: bool) -> std::io::Result<Update> {
    let insta_update = std::env::var("INSTA_UPDATE").ok();
    let ci = std::env::var("CI").ok();
    update_rule(
        insta_update.as_deref(),
        ci.as_deref(),
        std::env::var_os("TF_BUILD").is_some(),
        missing,
    )
    .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
}

/// Reads a stored snapshot: `Ok(None)` when there is none, an error naming the file and why
/// when a file is there but is not a text snapshot insta can read (the harness's input is
/// broken; that is never the subject's failure, and `--accept` must not paper over it).
fn read_stored(path: &Path) -> std::io::Result<Option<TextSnapshotContents>> {
    let corrupt = |why: String| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the snapshot file {} cannot be read: {why}; it is not overwritten by --accept: \
                 delete the file to re-record it",
                path.display()
            ),
        )
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(std::io::Error::new(
                e.kind(),
                format!("cannot read the snapshot file {}: {e}", path.display()),
            ));
        }
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| corrupt(format!("not an insta snapshot (not UTF-8: {e})")))?;
    // insta reads a file without a `---` header as its legacy format and a header without
    // its closing `---` as an empty snapshot; conform writes neither, so both are corruption.
    let mut lines = text.split_inclusive('\n');
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(corrupt(
            "not an insta snapshot (it does not start with a `---` header line)".into(),
        ));
    }
    if !lines.any(|l| l.trim_end() == "---") {
        return Err(corrupt(
            "its header is not closed (no second `---` line; truncated?)".into(),
        ));
    }
    let snapshot = match Snapshot::from_file(path) {
        Ok(s) => s,
        Err(e) => {
            let not_found = e
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound);
            if not_found {
                // Removed between the two reads.
                return Ok(None);
            }
            return Err(corrupt(format!("its header cannot be parsed ({e})")));
        }
    };
    match snapshot.contents() {
        SnapshotContents::Text(t) => Ok(Some(t.clone())),
        SnapshotContents::Binary(_) => Err(corrupt(
            "it is a binary snapshot; conform's snapshots are text".into(),
        )),
    }
}

/// Compares `actual` with the stored snapshot; with `accept`, writes it as the new snapshot.
///
/// An error is the harness's: a stored file that cannot be read (never overwritten, even with
/// `accept`), or an accepted snapshot that cannot be written. Failing to write a pending
/// `.snap.new` is not an error: the difference is still the outcome, with a note.
pub fn check(
    dir: &Path,
    scenario: &Scenario,
    mode: Mode,
    actual: &str,
    accept: bool,
    pending: bool,
) -> std::io::Result<Outcome> {
    let path = dir.join(file_name(scenario, mode));
    let new_path = path.with_extension("snap.new");
    let actual_contents = TextSnapshotContents::new(actual.to_owned(), TextSnapshotKind::File);
    let stored_text = read_stored(&path)?;
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
    let update = if accept {
        Update::InPlace
    } else {
        match update_from_env(stored_text.is_none())? {
            Update::Pending if !pending => Update::Nothing,
            rule => rule,
        }
    };
    if update == Update::InPlace {
        std::fs::create_dir_all(dir)?;
        std::fs::write(&path, body).map_err(|e| {
            std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
        })?;
        let _ = std::fs::remove_file(&new_path);
        return Ok(Outcome::Accepted);
    }
    let (new, write_error) = if update == Update::Pending {
        match std::fs::write(&new_path, body) {
            Ok(()) => (Some(new_path.clone()), None),
            Err(e) => (None, Some(e)),
        }
    } else {
        (None, None)
    };
    let note = write_error.map(|e| {
        format!(
            "note: could not write the pending snapshot {}: {e}",
            new_path.display()
        )
    });
    Ok(match stored_text {
        None => Outcome::Missing { new, note },
        Some(old) => {
            let old = old.to_string();
            let mut diff = similar::TextDiff::from_lines(old.trim_end(), actual.trim_end())
                .unified_diff()
                .context_radius(3)
                .header("stored snapshot", "this run")
                .to_string();
            if let Some(note) = note {
                if !diff.ends_with('\n') {
                    diff.push('\n');
                }
                diff.push_str(&note);
            }
            Outcome::Differs { diff, new }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_and_accepted_snapshots_follow_insta() {
        use Update::*;
        let rule = |u, ci, tf, missing| update_rule(u, ci, tf, missing).unwrap();
        assert_eq!(rule(None, None, false, false), Pending);
        assert_eq!(rule(None, Some("true"), false, false), Nothing);
        // `CI=false` and `CI=0` are not CI; Azure's TF_BUILD is.
        assert_eq!(rule(None, Some("false"), false, false), Pending);
        assert_eq!(rule(Some("auto"), Some("0"), true, false), Pending);
        assert_eq!(rule(None, None, true, false), Nothing);
        // `always` accepts, even on CI; `unseen` accepts only a new snapshot.
        assert_eq!(rule(Some("always"), Some("1"), false, false), InPlace);
        assert_eq!(rule(Some("force"), None, false, true), InPlace);
        assert_eq!(rule(Some("unseen"), None, false, true), InPlace);
        assert_eq!(rule(Some("unseen"), None, false, false), Pending);
        assert_eq!(rule(Some("new"), Some("true"), false, false), Pending);
        assert_eq!(rule(Some("no"), None, false, true), Nothing);
        assert!(update_rule(Some("yes"), None, false, false).is_err());
    }

    fn stored(contents: Option<&[u8]>) -> std::io::Result<Option<String>> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case@foreground.snap");
        if let Some(c) = contents {
            std::fs::write(&path, c).unwrap();
        }
        read_stored(&path).map(|t| t.map(|t| t.to_string()))
    }

    #[test]
    fn a_missing_snapshot_is_none_and_a_good_one_is_read() {
        assert!(stored(None).unwrap().is_none());
        let good = b"---\nsource: a.toml\nexpression: a (foreground)\n---\nline 1\nline 2\n";
        assert_eq!(stored(Some(good)).unwrap().unwrap(), "line 1\nline 2");
    }

    #[test]
    fn a_corrupted_snapshot_is_an_error_naming_the_file_and_why() {
        for (contents, why) in [
            (
                &b"garbage\nmore garbage\n"[..],
                "does not start with a `---` header",
            ),
            (b"", "does not start with a `---` header"),
            (b"\xff\xfe---\n", "not UTF-8"),
            (b"---\nsource: a.toml\nexpr", "header is not closed"),
            (b"---\n: : [\n---\nbody\n", "header cannot be parsed"),
        ] {
            let err = stored(Some(contents)).unwrap_err().to_string();
            assert!(err.contains("case@foreground.snap cannot be read"), "{err}");
            assert!(err.contains(why), "{contents:?}: {err}");
            assert!(err.contains("delete the file to re-record it"), "{err}");
        }
    }

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
