//! Exact model-visible texts pinned as insta snapshots in `snapshots/`, one per scenario × mode.
//! Files are insta's own format (its header, judged by insta), their body the texts in a visible
//! form that keeps every byte ([`visible`]); the comparison is exact, not insta's normalised one.
//! A mismatch leaves `<name>.snap.new` in a pending folder of its own ([`pending`]; never in the
//! snapshots folder, a checkout), so `conform review --accept` (or `conform run --accept`)
//! updates them after a human read the diff. Files are untrusted input ([`file`]): links,
//! FIFOs, devices and oversized files are refused, never followed or read.

use std::path::{Path, PathBuf};

use conform_protocol::subject::Mode;
use insta::Snapshot;
use insta::internals::SnapshotContents;

use crate::run::Observed;
use crate::scenario::Scenario;

mod file;
pub mod pending;
mod visible;

pub use file::MAX_SNAPSHOT_BYTES;
pub use pending::PendingDir;

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
    // A call the host refused before any job existed: never compared with a snapshot (the
    // case does not run), but what a baseline pins of it and what the JSON report shows.
    if let Some(e) = &obs.refused {
        block(format!("refused ({})", e.name), &e.message);
    }
    if let Some((is_error, text)) = &obs.tool_result {
        block(format!("tool result (isError: {is_error})"), text);
    }
    if let Some(text) = &obs.peeked {
        block("job_output (without wait, while the job runs)".into(), text);
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

pub enum SnapshotOutcome {
    Matches,
    /// No snapshot yet; a pending `.snap.new` written (unless pending snapshots are off, or the write
    /// failed or was refused — a link or non-file there, a text over the size bound: then `note`
    /// names the file and why).
    Missing {
        new: Option<PathBuf>,
        note: Option<String>,
    },
    /// Differs; unified diff from the stored to the actual text, a pending `.snap.new` written
    /// (unless pending snapshots are off: `INSTA_UPDATE=no`, or CI). If writing the `.snap.new`
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
    /// Left as a pending `.snap.new` in the pending folder, for `conform review`.
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

/// A stored snapshot: its texts, and the SHA-256 (hex) of its file (what a pending snapshot
/// records it was compared with).
#[derive(Debug)]
struct Stored {
    text: String,
    sha256: String,
}

/// Reads a stored snapshot: `Ok(None)` when there is none, an error naming the file and why
/// when a file is there but is not one conform reads — a link, a FIFO or anything but a regular
/// file, a file over [`file::MAX_SNAPSHOT_BYTES`], or not a text snapshot in the form conform
/// writes (the harness's input is broken; that is never the subject's failure, and `--accept`
/// must not paper over it).
fn read_stored(path: &Path) -> std::io::Result<Option<Stored>> {
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
    let sha256 = {
        use sha2::Digest as _;
        let sum = sha2::Sha256::digest(&bytes);
        sum.iter().map(|b| format!("{b:02x}")).collect()
    };
    let text = std::str::from_utf8(&bytes)
        .map_err(|e| corrupt(format!("not an insta snapshot (not UTF-8: {e})")))?;
    let text = parse(text).map_err(corrupt)?;
    Ok(Some(Stored { text, sha256 }))
}

/// The exact texts a snapshot file holds, or why it is not one conform reads (the reason
/// alone).
fn parse(text: &str) -> Result<String, String> {
    // insta reads a file without a `---` header as its legacy format and a header without
    // its closing `---` as an empty snapshot; conform writes neither, so both are corruption.
    let mut lines = text.split_inclusive('\n');
    let mut header_len = match lines.next() {
        Some(first) if first.trim_end() == "---" => first.len(),
        _ => {
            return Err(
                "not an insta snapshot (it does not start with a `---` header line)".into(),
            );
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
        return Err("its header is not closed (no second `---` line; truncated?)".into());
    }
    let (header, body) = text.split_at(header_len);
    text_header(header)?;
    // The file's last newline ends the body's last line (an editor may have dropped it).
    let body = body.strip_suffix('\n').unwrap_or(body);
    visible::decode(body)
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
/// snapshot. A difference is left in `pending` where insta's rules say so (never in `dir`).
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
    pending: Option<&PendingDir>,
) -> std::io::Result<SnapshotOutcome> {
    let case = Case {
        snapshots: dir,
        name: file_name(scenario, mode),
        scenario: &scenario.id,
        header: format!(
            "---\nsource: {}\nexpression: {} ({mode})\n---\n",
            scenario.path.display(),
            scenario.id,
        ),
    };
    let pending = pending.filter(|p| p.keeps(dir));
    let update = |missing| {
        if accept {
            return Ok(Update::InPlace);
        }
        Ok(match update_from_env(missing)? {
            Update::Pending if pending.is_none() => Update::Nothing,
            rule => rule,
        })
    };
    check_file(&case, actual, update, pending)
}

/// One snapshot: its folder and file name, its scenario, and the header a written file has.
struct Case<'a> {
    snapshots: &'a Path,
    name: String,
    scenario: &'a str,
    /// Both `---` lines included.
    header: String,
}

/// [`check`] against the snapshot `case`: `update` says, given whether the snapshot is
/// missing, what becomes of a difference; a pending one goes into `pending`.
fn check_file(
    case: &Case,
    actual: &str,
    update: impl FnOnce(bool) -> std::io::Result<Update>,
    pending: Option<&PendingDir>,
) -> std::io::Result<SnapshotOutcome> {
    let path = case.snapshots.join(&case.name);
    let stored = read_stored(&path)?;
    let remove_stale = || {
        if let Some(p) = pending {
            p.remove_stale(case.snapshots, &case.name);
        }
    };
    if stored.as_ref().is_some_and(|s| s.text == actual) {
        remove_stale();
        return Ok(SnapshotOutcome::Matches);
    }
    let visible = format!("{}\n", visible::encode(actual));
    let body = format!("{}{visible}", case.header);
    let update = update(stored.is_none())?;
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
        std::fs::create_dir_all(case.snapshots)?;
        file::write(&path, body.as_bytes()).map_err(|why| {
            std::io::Error::other(format!("cannot write {}: {why}", path.display()))
        })?;
        remove_stale();
        return Ok(SnapshotOutcome::Accepted);
    }
    let mut new = None;
    if let (Update::Pending, Some(pending)) = (update, pending) {
        let manifest = pending::Manifest {
            snapshots: pending::identity(case.snapshots),
            scenario: case.scenario.to_owned(),
            stored: stored.as_ref().map(|s| s.sha256.clone()),
        };
        match pending.write(&case.name, &case.header, &visible, &manifest) {
            Ok(path) => new = Some(path),
            Err((path, why)) => {
                note = Some(format!(
                    "note: could not write the pending snapshot {}: {why}",
                    path.display()
                ));
            }
        }
    }
    Ok(match stored {
        None => SnapshotOutcome::Missing { new, note },
        Some(old) => SnapshotOutcome::Differs {
            diff: diff(&old.text, actual, note),
            new,
        },
    })
}

/// A unified diff from the stored to the actual text, both in their visible form (so a carriage
/// return or a trailing space shows), with `note` at its end.
pub fn diff(old: &str, actual: &str, note: Option<String>) -> String {
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
mod tests;
