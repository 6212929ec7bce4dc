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
    read_stored(&path).map(|t| t.map(|t| t.text))
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

fn check_with(path: &Path, actual: &str, update: Update) -> std::io::Result<SnapshotOutcome> {
    check_pending(path, actual, update, None)
}

/// [`check_file`] on the snapshot `path`, its difference left in `pending`.
fn check_pending(
    path: &Path,
    actual: &str,
    update: Update,
    pending: Option<&PendingDir>,
) -> std::io::Result<SnapshotOutcome> {
    let case = Case {
        snapshots: path.parent().unwrap(),
        name: path.file_name().unwrap().to_str().unwrap().to_owned(),
        scenario: "case",
        header: HEADER.to_owned(),
    };
    check_file(&case, actual, |_| Ok(update), pending)
}

fn differs(outcome: SnapshotOutcome) -> (String, Option<PathBuf>) {
    match outcome {
        SnapshotOutcome::Differs { diff, new } => (diff, new),
        _ => panic!("expected a difference"),
    }
}

#[test]
fn texts_are_compared_exactly_and_the_diff_shows_what_is_invisible() {
    let stored = "── job_output ──\nDone.\n[status: completed]\n";
    let (_dir, path) = folder(Some(stored));
    let same = check_with(&path, stored, Update::Nothing).unwrap();
    assert!(matches!(same, SnapshotOutcome::Matches));
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
    assert!(matches!(accepted, SnapshotOutcome::Accepted));
    assert_eq!(read_stored(&path).unwrap().unwrap().text, text);
    let again = check_with(&path, text, Update::Nothing).unwrap();
    assert!(matches!(again, SnapshotOutcome::Matches));
}

#[test]
fn a_planted_pending_link_is_not_written_through() {
    let (dir, path) = folder(Some("old\n"));
    let pending = PendingDir::new(dir.path().join("pending"));
    let target = dir.path().join("victim");
    std::fs::write(&target, "keep me").unwrap();
    let new_path = pending.file_for(dir.path(), "case@foreground.snap");
    std::fs::create_dir_all(new_path.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&target, &new_path).unwrap();
    let check = |actual| check_pending(&path, actual, Update::Pending, Some(&pending));
    let (diff, new) = differs(check("new\n").unwrap());
    assert_eq!(new, None);
    let note = format!(
        "could not write the pending snapshot {}: it is a symbolic link",
        new_path.display()
    );
    assert!(diff.contains(&note), "{diff}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    assert!(new_path.is_symlink());
    // A match leaves someone else's link alone too.
    assert!(matches!(check("old\n").unwrap(), SnapshotOutcome::Matches));
    assert!(new_path.is_symlink());
    // So is a link planted where the folder of that snapshots folder's pending files goes.
    let folder = new_path.parent().unwrap();
    std::fs::remove_dir_all(folder).unwrap();
    std::os::unix::fs::symlink(dir.path(), folder).unwrap();
    let (diff, new) = differs(check("new\n").unwrap());
    assert_eq!(new, None);
    assert!(diff.contains("is not a folder conform made"), "{diff}");
    assert!(!dir.path().join("case@foreground.snap.new").exists());
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
        SnapshotOutcome::Missing { new: None, note } => {
            assert!(note.unwrap().contains("not written as a snapshot"));
        }
        _ => panic!("expected a missing snapshot, not written"),
    }
    assert!(!path.exists());
}

#[test]
fn a_difference_is_left_pending_outside_the_snapshots_folder_and_accepts_as_accept_writes() {
    let (dir, path) = folder(Some("old\n"));
    let root = tempfile::tempdir().unwrap();
    let pending = PendingDir::new(root.path().join("pending"));
    let (_, new) = differs(check_pending(&path, "new\n", Update::Pending, Some(&pending)).unwrap());
    let new = new.expect("written");
    assert!(new.starts_with(pending.root()), "{}", new.display());
    let beside: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(
        beside,
        ["case@foreground.snap"],
        "nothing beside the snapshot"
    );
    // Nothing pending without a pending folder, or where insta's rules say nothing.
    for (update, folder) in [(Update::Pending, None), (Update::Nothing, Some(&pending))] {
        let (_, none) = differs(check_pending(&path, "other\n", update, folder).unwrap());
        assert_eq!(none, None);
    }
    // What review accepts is what `--accept` writes.
    let accepted = pending::read(&new).unwrap().accept().unwrap();
    let by_review = std::fs::read(&accepted).unwrap();
    std::fs::write(&path, format!("{HEADER}old\n")).unwrap();
    check_pending(&path, "new\n", Update::InPlace, Some(&pending)).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), by_review);
    // A match (or an accept) removes what is pending for that snapshot.
    std::fs::write(&path, format!("{HEADER}old\n")).unwrap();
    check_pending(&path, "new\n", Update::Pending, Some(&pending)).unwrap();
    assert!(new.exists());
    check_pending(&path, "old\n", Update::Pending, Some(&pending)).unwrap();
    assert!(!new.exists());
}
