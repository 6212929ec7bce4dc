use std::ffi::OsStr;

use super::*;

#[test]
fn the_default_folder_is_under_cargos_target_folder() {
    assert_eq!(default_dir(None), Path::new("target/conform/pending"));
    // Empty is unset, as cargo reads it.
    assert_eq!(
        default_dir(Some(OsStr::new(""))),
        Path::new("target/conform/pending")
    );
    assert_eq!(
        default_dir(Some(OsStr::new("/tmp/t"))),
        Path::new("/tmp/t/conform/pending")
    );
    assert_eq!(
        default_dir(Some(OsStr::new("build/t"))),
        Path::new("build/t/conform/pending")
    );
}

#[test]
fn each_snapshots_folder_has_a_folder_of_its_own_whatever_it_is_called() {
    let root = tempfile::tempdir().unwrap();
    let (a, b) = (
        root.path().join("a/snapshots"),
        root.path().join("b/snapshots"),
    );
    std::fs::create_dir_all(&a).unwrap();
    let dir = PendingDir::new(root.path().join("pending"));
    let name = "x@foreground.snap";
    let file = dir.file_for(&a, name);
    assert_ne!(file, dir.file_for(&b, name));
    // The same folder by another spelling (relative, through `..`) is the same folder.
    let again = root.path().join("a/../a/./snapshots");
    assert_eq!(file, dir.file_for(&again, name));
    assert_eq!(file.file_name().unwrap(), "x@foreground.snap.new");
    let folder = file
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap();
    assert!(folder.starts_with("snapshots-"), "{folder}");
    assert!(dir.keeps(&a));
    let never = dir.never_for(&again);
    assert!(!never.keeps(&a) && never.keeps(&b));
}

const HEADER: &str = "---\nsource: a.toml\nexpression: a (foreground)\n---\n";

fn manifest(snapshots: &Path, stored: Option<&str>) -> Manifest {
    Manifest {
        snapshots: identity(snapshots),
        scenario: "acp/a \"quoted\"".to_owned(),
        stored: stored.map(str::to_owned),
    }
}

#[test]
fn a_written_pending_file_reads_back_with_its_manifest() {
    let root = tempfile::tempdir().unwrap();
    let snapshots = root.path().join("snap: shots #1");
    let dir = PendingDir::new(root.path().join("pending"));
    let sha = "ab".repeat(32);
    let m = manifest(&snapshots, Some(&sha));
    let path = dir
        .write("a@foreground.snap", HEADER, "line␍\n", &m)
        .unwrap();
    assert_eq!(dir.written(), 1);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with(HEADER.strip_suffix("---\n").unwrap()));
    assert!(text.contains("\ninfo:\n  snapshots: \""), "{text}");
    let read = read(&path).unwrap();
    assert_eq!(read.manifest, m);
    assert_eq!(read.name, "a@foreground.snap");
    assert_eq!(read.mode(), "foreground");
    assert_eq!(read.text, "line\r\n");
    // What accepting writes is the snapshot as `--accept` writes it: no `info`.
    assert_eq!(read.snapshot, format!("{HEADER}line␍\n"));
    assert_eq!(
        read.destination(),
        identity(&snapshots).join("a@foreground.snap")
    );
    // Missing: recorded as such.
    let none = manifest(&snapshots, None);
    let path = dir
        .write("b@foreground.snap", HEADER, "x\n", &none)
        .unwrap();
    assert_eq!(super::read(&path).unwrap().manifest.stored, None);
}

#[test]
fn the_folder_conform_creates_ignores_itself_and_a_given_one_is_left_as_it_is() {
    let root = tempfile::tempdir().unwrap();
    let m = manifest(root.path(), None);
    let made = PendingDir::new(root.path().join("target/conform/pending"));
    made.write("a@foreground.snap", HEADER, "x\n", &m).unwrap();
    let ignore = made.root().join(".gitignore");
    assert_eq!(std::fs::read_to_string(ignore).unwrap(), GITIGNORE);
    // No temporary folder is left beside it.
    let beside: Vec<_> = std::fs::read_dir(root.path().join("target/conform"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(beside, ["pending"]);
    let given = PendingDir::new(root.path().join("mine"));
    std::fs::create_dir(given.root()).unwrap();
    given.write("a@foreground.snap", HEADER, "x\n", &m).unwrap();
    assert!(!given.root().join(".gitignore").exists());
}

#[test]
fn a_file_that_is_not_a_pending_snapshot_conform_wrote_is_refused_naming_why() {
    let good = "---\nsource: a.toml\ninfo:\n  snapshots: \"/s\"\n  scenario: \"a\"\n  stored: \"none\"\n---\nx\n"
        .to_owned();
    assert!(split_info(&good).is_ok());
    for (text, why) in [
        ("---\nsource: a.toml\n---\nx\n".to_owned(), "no `info`"),
        (good.replace("---\nx", "x"), "not closed"),
        (good.replace("  stored: \"none\"\n", ""), "2 lines"),
        (good.replace("\"/s\"", "\"s\""), "not an absolute path"),
        (good.replace("\"/s\"", "/s"), "not a quoted string"),
        (good.replace("\"none\"", "\"sha256:xyz\""), "not `none` or"),
        (good.replace("scenario:", "case:"), "no `scenario`"),
    ] {
        let err = split_info(&text).unwrap_err();
        assert!(err.contains(why), "{text:?}: {err}");
    }
    // The snapshot it holds is judged as a stored one is.
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("a@foreground.snap.new");
    std::fs::write(&path, good.replace("---\nx\n", "---\nx  \n")).unwrap();
    let err = read(&path).unwrap_err().to_string();
    assert!(
        err.contains("a@foreground.snap.new cannot be read"),
        "{err}"
    );
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
    let err = read(&path).unwrap_err().to_string();
    assert!(err.contains("symbolic link"), "{err}");
}

/// A snapshots folder holding `a@foreground.snap` (if `stored`), and a pending folder with a
/// run's `new` text for it, compared with that stored file.
fn pending_against(stored: Option<&str>, new: &str) -> (tempfile::TempDir, PendingDir, Pending) {
    let root = tempfile::tempdir().unwrap();
    let snapshots = root.path().join("snapshots");
    std::fs::create_dir(&snapshots).unwrap();
    let sha = stored.map(|text| {
        let file = format!("{HEADER}{text}\n");
        std::fs::write(snapshots.join("a@foreground.snap"), &file).unwrap();
        use sha2::Digest as _;
        let sum = sha2::Sha256::digest(file.as_bytes());
        sum.iter().map(|b| format!("{b:02x}")).collect::<String>()
    });
    let dir = PendingDir::new(root.path().join("pending"));
    let m = manifest(&snapshots, sha.as_deref());
    dir.write("a@foreground.snap", HEADER, &format!("{new}\n"), &m)
        .unwrap();
    let mut all = dir.list().unwrap();
    assert_eq!(all.len(), 1);
    let pending = all.pop().unwrap().unwrap();
    (root, dir, pending)
}

#[test]
fn accepting_writes_the_snapshot_and_empties_the_pending_folder() {
    let (root, dir, pending) = pending_against(Some("old"), "new");
    let (now, unchanged) = pending.stored_now().unwrap();
    assert_eq!((now.as_deref(), unchanged), (Some("old\n"), true));
    let written = pending.accept().unwrap();
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        format!("{HEADER}new\n")
    );
    assert_eq!(
        written,
        identity(&root.path().join("snapshots/a@foreground.snap"))
    );
    assert!(dir.list().unwrap().is_empty());
    // Its emptied folder goes with it; the pending folder and its .gitignore stay.
    let left: Vec<_> = std::fs::read_dir(dir.root())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".gitignore"]);
}

#[test]
fn accepting_refuses_once_the_stored_snapshot_changed_since_the_run() {
    let (root, dir, pending) = pending_against(Some("old"), "new");
    let stored = root.path().join("snapshots/a@foreground.snap");
    std::fs::write(&stored, format!("{HEADER}edited by hand\n")).unwrap();
    assert!(!pending.stored_now().unwrap().1);
    let err = pending.accept().unwrap_err().to_string();
    assert!(err.contains("changed since the run"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&stored).unwrap(),
        format!("{HEADER}edited by hand\n")
    );
    assert_eq!(dir.list().unwrap().len(), 1, "still pending");
    // A snapshot that was missing and now is there has changed too.
    let (root, _dir, pending) = pending_against(None, "new");
    let stored = root.path().join("snapshots/a@foreground.snap");
    std::fs::write(&stored, format!("{HEADER}someone's\n")).unwrap();
    assert!(matches!(
        pending.accept(),
        Err(PendingError::StoredChanged { .. })
    ));
    // …and one that is gone since.
    let (root, _dir, pending) = pending_against(Some("old"), "new");
    std::fs::remove_file(root.path().join("snapshots/a@foreground.snap")).unwrap();
    assert!(matches!(
        pending.accept(),
        Err(PendingError::StoredChanged { .. })
    ));
}

#[test]
fn rejecting_removes_it_and_leaves_the_snapshot() {
    let (root, dir, pending) = pending_against(Some("old"), "new");
    pending.reject().unwrap();
    assert!(dir.list().unwrap().is_empty());
    assert_eq!(
        std::fs::read_to_string(root.path().join("snapshots/a@foreground.snap")).unwrap(),
        format!("{HEADER}old\n")
    );
}

#[test]
fn listing_reads_only_pending_files_and_names_the_bad_ones() {
    let (_root, dir, pending) = pending_against(Some("old"), "new");
    let folder = pending.file.parent().unwrap();
    // A write cut off leaves a temporary file; the .gitignore is no pending file.
    std::fs::write(folder.join(".a@background.snap.new.x.tmp"), "partial").unwrap();
    nix::unistd::mkfifo(
        &folder.join("b@foreground.snap.new"),
        nix::sys::stat::Mode::S_IRWXU,
    )
    .unwrap();
    let all = dir.list().unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[0].is_ok());
    let err = all[1].as_ref().unwrap_err().to_string();
    assert!(
        err.contains("b@foreground.snap.new cannot be read: it is a FIFO"),
        "{err}"
    );
    // A folder that does not exist holds none.
    assert!(
        PendingDir::new(dir.root().join("nowhere"))
            .list()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn the_review_command_names_a_folder_only_where_it_is_not_the_default() {
    let default = default_dir(std::env::var_os("CARGO_TARGET_DIR").as_deref());
    assert_eq!(PendingDir::new(default).review_command(), "conform review");
    assert_eq!(
        PendingDir::new("/tmp/p".into()).review_command(),
        "conform review --pending /tmp/p"
    );
    assert_eq!(
        PendingDir::new("/tmp/it's here".into()).review_command(),
        r"conform review --pending '/tmp/it'\''s here'"
    );
}
