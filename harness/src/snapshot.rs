//! Exact model-visible texts pinned as insta snapshots in `snapshots/`, one per scenario × mode.
//! Files are insta's own format (its header, judged by insta), their body the texts in a visible
//! form that keeps every byte ([`visible`]); the comparison is exact, not insta's normalised one.
//! A mismatch writes `<name>.snap.new` beside the old one, so `cargo insta review` (or `conform
//! run --accept`) updates them after a human read the diff. Files are untrusted input
//! ([`file`]): links, FIFOs, devices and oversized files are refused, never followed or read.

use std::path::{Path, PathBuf};

use conform_protocol::subject::Mode;
use insta::Snapshot;
use insta::internals::SnapshotContents;

use crate::run::Observed;
use crate::scenario::Scenario;

mod file;
mod visible;

pub use file::MAX_SNAPSHOT_BYTES;

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

/// The loopback model endpoint's port (a real peer may name its gateway in what it says) is
/// the run's, not the text's.
pub fn mask_loopback_ports(text: &str) -> String {
    static PORT: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\b127\.0\.0\.1:[0-9]{1,5}\b").expect("a valid pattern")
    });
    PORT.replace_all(text, "127.0.0.1:[port]").into_owned()
}

/// The model-visible texts of a run, in a stable layout.
pub fn render(obs: &Observed) -> String {
    let mut out = String::new();
    let mut block = |title: String, body: &str| {
        out.push_str(&format!(
            "── {title} ──\n{}\n",
            mask_loopback_ports(&mask_job_ids(body))
        ));
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
    /// failed or was refused — a link or non-file there, a text over the size bound: then `note`
    /// names the file and why).
    Missing {
        new: Option<PathBuf>,
        note: Option<String>,
    },
    /// Differs; unified diff from the stored to the actual text, `.snap.new` written (unless
    /// pending snapshots are off: `INSTA_UPDATE=no`, or CI). If writing the `.snap.new`
    /// failed or was refused, the diff ends with a note naming the file and why, and `new` is
    /// `None`. Both sides are in their visible form ([`visible`]).
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

/// Reads a stored snapshot's exact text: `Ok(None)` when there is none, an error naming the
/// file and why when a file is there but is not one conform reads — a link, a FIFO or anything
/// but a regular file, a file over [`file::MAX_SNAPSHOT_BYTES`], or not a text snapshot in the
/// form conform writes (the harness's input is broken; that is never the subject's failure,
/// and `--accept` must not paper over it).
fn read_stored(path: &Path) -> std::io::Result<Option<String>> {
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
    let Some(bytes) = file::read(path).map_err(corrupt)? else {
        return Ok(None);
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| corrupt(format!("not an insta snapshot (not UTF-8: {e})")))?;
    // insta reads a file without a `---` header as its legacy format and a header without
    // its closing `---` as an empty snapshot; conform writes neither, so both are corruption.
    let mut lines = text.split_inclusive('\n');
    let mut header_len = match lines.next() {
        Some(first) if first.trim_end() == "---" => first.len(),
        _ => {
            return Err(corrupt(
                "not an insta snapshot (it does not start with a `---` header line)".into(),
            ));
        }
    };
    let mut closed = false;
    for line in lines {
        header_len += line.len();
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
    }
    if !closed {
        return Err(corrupt(
            "its header is not closed (no second `---` line; truncated?)".into(),
        ));
    }
    let (header, body) = text.split_at(header_len);
    text_header(header).map_err(corrupt)?;
    // The file's last newline ends the body's last line (an editor may have dropped it).
    let body = body.strip_suffix('\n').unwrap_or(body);
    visible::decode(body).map(Some).map_err(corrupt)
}

/// Checks that `header` (both `---` lines included) is an insta header of a text snapshot.
/// insta's own parser judges the YAML, but only after conform made sure the header does not
/// name a binary snapshot: for one, insta would open a file the header names (and panics on an
/// extension holding a `/`). Its keys must be plain, unindented `key: value` lines, so no
/// quoting or escape can spell `snapshot_kind` past this check.
fn text_header(header: &str) -> Result<(), String> {
    let yaml: Vec<&str> = header.lines().collect();
    let yaml = &yaml[1..yaml.len() - 1];
    for (n, line) in yaml.iter().enumerate() {
        if n > 0 && (line.is_empty() || line.starts_with(' ')) {
            continue; // a nested value (insta's `info`)
        }
        let plain = line
            .split_once(':')
            .filter(|(key, _)| !key.is_empty())
            .filter(|(key, _)| key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'));
        let Some((key, value)) = plain else {
            return Err(format!(
                "its header cannot be parsed (line {} is not a plain `key: value`)",
                n + 2
            ));
        };
        if key == "extension" || (key == "snapshot_kind" && value.trim() != "text") {
            return Err("it is a binary snapshot; conform's snapshots are text".into());
        }
    }
    // insta parses only from a path: a private copy of the header, so nothing is opened twice.
    let parse = || -> Result<Snapshot, Box<dyn std::error::Error>> {
        let mut copy = tempfile::Builder::new().suffix(".snap").tempfile()?;
        std::io::Write::write_all(&mut copy, header.as_bytes())?;
        Snapshot::from_file(copy.path())
    };
    match parse() {
        Ok(snapshot) if matches!(snapshot.contents(), SnapshotContents::Text(_)) => Ok(()),
        Ok(_) => Err("it is a binary snapshot; conform's snapshots are text".into()),
        Err(e) => Err(format!("its header cannot be parsed ({e})")),
    }
}

/// The visible form of a text, as its snapshot holds it and a diff shows it (see [`visible`]).
pub fn visible(text: &str) -> String {
    visible::encode(text)
}

/// Compares `actual` with the stored snapshot, exactly; with `accept`, writes it as the new
/// snapshot.
///
/// An error is the harness's: a stored file that cannot be read (never overwritten, even with
/// `accept`), or an accepted snapshot that cannot be written. Failing to write a pending
/// `.snap.new` (a read-only folder, or a link or other non-file there, which is refused rather
/// than written through) is not an error: the difference is still the outcome, with a note.
pub fn check(
    dir: &Path,
    scenario: &Scenario,
    mode: Mode,
    actual: &str,
    accept: bool,
    pending: bool,
) -> std::io::Result<Outcome> {
    let header = format!(
        "---\nsource: {}\nexpression: {} ({mode})\n---\n",
        scenario.path.display(),
        scenario.id,
    );
    let update = |missing| {
        if accept {
            return Ok(Update::InPlace);
        }
        Ok(match update_from_env(missing)? {
            Update::Pending if !pending => Update::Nothing,
            rule => rule,
        })
    };
    check_file(
        &dir.join(file_name(scenario, mode)),
        &header,
        actual,
        update,
    )
}

/// [`check`] against the snapshot file `path`: `header` heads a written file, and `update`
/// says, given whether the snapshot is missing, what becomes of a difference.
fn check_file(
    path: &Path,
    header: &str,
    actual: &str,
    update: impl FnOnce(bool) -> std::io::Result<Update>,
) -> std::io::Result<Outcome> {
    let new_path = path.with_extension("snap.new");
    let stored_text = read_stored(path)?;
    if stored_text.as_deref() == Some(actual) {
        file::remove_stale(&new_path);
        return Ok(Outcome::Matches);
    }
    let body = format!("{header}{}\n", visible::encode(actual));
    let update = update(stored_text.is_none())?;
    // A text too big to pin is not written: the difference stays the subject's.
    let (update, mut note) = if body.len() as u64 > MAX_SNAPSHOT_BYTES && update != Update::Nothing
    {
        let why = format!(
            "note: not written as a snapshot: it is {} bytes, over the {MAX_SNAPSHOT_BYTES}-byte \
             bound of a snapshot file",
            body.len()
        );
        (Update::Nothing, Some(why))
    } else {
        (update, None)
    };
    if update == Update::InPlace {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        file::write(path, body.as_bytes()).map_err(|why| {
            std::io::Error::other(format!("cannot write {}: {why}", path.display()))
        })?;
        file::remove_stale(&new_path);
        return Ok(Outcome::Accepted);
    }
    let mut new = None;
    if update == Update::Pending {
        match file::write(&new_path, body.as_bytes()) {
            Ok(()) => new = Some(new_path.clone()),
            Err(why) => {
                note = Some(format!(
                    "note: could not write the pending snapshot {}: {why}",
                    new_path.display()
                ));
            }
        }
    }
    Ok(match stored_text {
        None => Outcome::Missing { new, note },
        Some(old) => Outcome::Differs {
            diff: diff(&old, actual, note),
            new,
        },
    })
}

/// A unified diff from the stored to the actual text, both in their visible form (so a carriage
/// return or a trailing space shows), with `note` at its end.
fn diff(old: &str, actual: &str, note: Option<String>) -> String {
    let (old, actual) = (visible::encode(old) + "\n", visible::encode(actual) + "\n");
    let mut diff = similar::TextDiff::from_lines(&old, &actual)
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
    diff
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopback_port_is_masked_and_nothing_else() {
        assert_eq!(
            mask_loopback_ports("through 127.0.0.1:36875, which; 127.0.0.1:1/v1 and 10.0.0.1:80"),
            "through 127.0.0.1:[port], which; 127.0.0.1:[port]/v1 and 10.0.0.1:80"
        );
    }

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
        assert_eq!(stored(Some(good)).unwrap().unwrap(), "line 1\nline 2\n");
        // An editor may drop the file's last newline: the text is the same.
        let no_newline = &good[..good.len() - 1];
        assert_eq!(
            stored(Some(no_newline)).unwrap().unwrap(),
            "line 1\nline 2\n"
        );
    }

    #[test]
    fn a_file_changed_by_an_editor_or_git_is_an_error_not_a_difference() {
        for (contents, why) in [
            (
                &b"---\r\nsource: a.toml\r\n---\r\nline 1\r\n"[..],
                "raw carriage return",
            ),
            (b"---\nsource: a.toml\n---\nline 1  \n", "raw whitespace"),
            (
                b"---\nsource: a.toml\n---\nline 1\n\n",
                "blank line at the end",
            ),
            (b"---\nsource: a.toml\n---\nC:\\x\n", "not an escape"),
        ] {
            let err = stored(Some(contents)).unwrap_err().to_string();
            assert!(err.contains("case@foreground.snap cannot be read"), "{err}");
            assert!(err.contains(why), "{contents:?}: {err}");
        }
    }

    #[test]
    fn a_binary_header_is_refused_before_insta_opens_what_it_names() {
        // insta would read `<file>.snap.<extension>`, and panics on an extension with a `/`.
        for header in [
            "snapshot_kind: binary\nextension: x/../../dev/zero",
            "extension: txt\nsnapshot_kind: binary",
            "\"snapshot\\x5fkind\": binary\n\"extension\": \"a\\x2fb\"",
            "  snapshot_kind: binary\n  extension: a/b",
        ] {
            let file = format!("---\n{header}\n---\nbody\n");
            let err = stored(Some(file.as_bytes())).unwrap_err().to_string();
            assert!(
                err.contains("binary snapshot") || err.contains("not a plain `key: value`"),
                "{header}: {err}"
            );
        }
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

    /// A snapshot folder with `case@foreground.snap` holding `stored` (if any).
    fn folder(stored: Option<&str>) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case@foreground.snap");
        if let Some(text) = stored {
            let file = format!("{HEADER}{}\n", visible::encode(text));
            std::fs::write(&path, file).unwrap();
        }
        (dir, path)
    }

    const HEADER: &str = "---\nsource: case.toml\nexpression: case (foreground)\n---\n";

    fn check_with(path: &Path, actual: &str, update: Update) -> std::io::Result<Outcome> {
        check_file(path, HEADER, actual, |_| Ok(update))
    }

    fn differs(outcome: Outcome) -> (String, Option<PathBuf>) {
        match outcome {
            Outcome::Differs { diff, new } => (diff, new),
            _ => panic!("expected a difference"),
        }
    }

    #[test]
    fn texts_are_compared_exactly_and_the_diff_shows_what_is_invisible() {
        let stored = "── job_output ──\nDone.\n[status: completed]\n";
        let (_dir, path) = folder(Some(stored));
        let same = check_with(&path, stored, Update::Nothing).unwrap();
        assert!(matches!(same, Outcome::Matches));
        // Line ends a subject wrote as CRLF, which insta's comparison took for LF.
        let crlf = stored.replace('\n', "\r\n");
        let (diff, _) = differs(check_with(&path, &crlf, Update::Nothing).unwrap());
        assert!(
            diff.contains("\n-Done.\n") && diff.contains("\n+Done.␍\n"),
            "{diff}"
        );
        // Trailing whitespace, and a newline the last text ends with, which insta trimmed.
        let spaces = stored.replace("Done.", "Done.  ");
        let (diff, _) = differs(check_with(&path, &spaces, Update::Nothing).unwrap());
        assert!(diff.contains("\n-Done.\n+Done.··\n"), "{diff}");
        let newline = format!("{stored}\n");
        let (diff, _) = differs(check_with(&path, &newline, Update::Nothing).unwrap());
        assert!(diff.contains("+[status: completed]\\n\n"), "{diff}");
    }

    #[test]
    fn an_accepted_text_reads_back_exactly() {
        let (_dir, path) = folder(None);
        let text = "── tool result ──\r\nA  \\ ␍ ·\t\n\u{1b}[0m\n\n";
        let accepted = check_with(&path, text, Update::InPlace).unwrap();
        assert!(matches!(accepted, Outcome::Accepted));
        assert_eq!(read_stored(&path).unwrap().unwrap(), text);
        let again = check_with(&path, text, Update::Nothing).unwrap();
        assert!(matches!(again, Outcome::Matches));
    }

    #[test]
    fn a_planted_pending_link_is_not_written_through() {
        let (dir, path) = folder(Some("old\n"));
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep me").unwrap();
        let new_path = path.with_extension("snap.new");
        std::os::unix::fs::symlink(&target, &new_path).unwrap();
        let (diff, new) = differs(check_with(&path, "new\n", Update::Pending).unwrap());
        assert_eq!(new, None);
        let note = format!(
            "could not write the pending snapshot {}: it is a symbolic link",
            new_path.display()
        );
        assert!(diff.contains(&note), "{diff}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
        assert!(new_path.is_symlink());
        // A match leaves someone else's link alone too.
        assert!(matches!(
            check_with(&path, "old\n", Update::Pending).unwrap(),
            Outcome::Matches
        ));
        assert!(new_path.is_symlink());
    }

    #[test]
    fn a_linked_snapshot_is_refused_even_when_accepting() {
        let (dir, path) = folder(None);
        let target = dir.path().join("victim");
        std::fs::write(&target, format!("{HEADER}old\n")).unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let err = check_with(&path, "new\n", Update::InPlace)
            .err()
            .expect("a link is refused")
            .to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            format!("{HEADER}old\n")
        );
        // Written by name, a link is refused rather than written through or replaced.
        let why = file::write(&path, b"x").unwrap_err();
        assert!(why.contains("symbolic link"), "{why}");
        assert!(path.is_symlink());
    }

    #[test]
    fn a_fifo_a_device_or_a_huge_file_is_refused_without_reading_it() {
        // Each would hang the run or read until memory runs out if it were read; the FIFO has
        // no writer, so a blocking open would never return (cargo test reports the hang).
        let (dir, path) = folder(None);
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).unwrap();
        let err = stored_at(&path);
        assert!(err.contains("it is a FIFO, not a regular file"), "{err}");

        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        let err = stored_at(&path);
        assert!(err.contains("it is a symbolic link"), "{err}");

        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        assert!(stored_at(&path).contains("it is a directory"));

        let big = dir.path().join("big@foreground.snap");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_SNAPSHOT_BYTES + 1).unwrap();
        let err = stored_at(&big);
        assert!(err.contains("-byte bound of a snapshot file"), "{err}");
        // Exactly the bound is read (and then judged as a snapshot).
        file.set_len(MAX_SNAPSHOT_BYTES).unwrap();
        assert!(!stored_at(&big).contains("-byte bound"));
    }

    fn stored_at(path: &Path) -> String {
        let err = read_stored(path).expect_err("refused").to_string();
        assert!(err.contains(&path.display().to_string()), "{err}");
        assert!(err.contains("delete the file to re-record it"), "{err}");
        err
    }

    #[test]
    fn a_text_too_big_to_pin_is_still_the_subjects_difference() {
        let (_dir, path) = folder(None);
        let huge = "x".repeat(MAX_SNAPSHOT_BYTES as usize) + "\n";
        match check_with(&path, &huge, Update::InPlace).unwrap() {
            Outcome::Missing { new: None, note } => {
                assert!(note.unwrap().contains("not written as a snapshot"));
            }
            _ => panic!("expected a missing snapshot, not written"),
        }
        assert!(!path.exists());
    }
}
