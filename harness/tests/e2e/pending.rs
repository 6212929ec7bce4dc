//! End-to-end tests of pending snapshots: a red run leaves the checkout holding the snapshots as
//! `git status` had it, its differences pending under `target/conform/pending` (a folder that
//! ignores itself), and `conform review` shows, accepts or rejects them from there.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use common::{defective, stderr, stdout, workspace};

/// A scenario whose background `job_output` the seeded defect `crlf-output` changes.
const CASE: &str = "acp/success/end-turn";
const SNAPSHOT: &str = "acp__success__end-turn@background.snap";

/// A git repository holding, committed, the stored snapshots of [`CASE`] in `snapshots/` — and
/// no `.gitignore`: nothing in it ignores `target/`.
fn checkout() -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    let snapshots = repo.path().join("snapshots");
    std::fs::create_dir(&snapshots).unwrap();
    for mode in ["foreground", "background"] {
        let name = format!("{}@{mode}.snap", CASE.replace('/', "__"));
        std::fs::copy(
            workspace().join("snapshots").join(&name),
            snapshots.join(&name),
        )
        .unwrap();
    }
    git(repo.path(), &["init", "-q"]);
    git(repo.path(), &["add", "."]);
    git(
        repo.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "snapshots",
        ],
    );
    repo
}

fn git(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(args)
        .current_dir(repo)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    stdout(&out)
}

fn status(repo: &Path) -> String {
    git(repo, &["status", "--porcelain", "--untracked-files=all"])
}

/// `conform <args>` in `repo`, as a developer runs it there: no CI, no `INSTA_UPDATE`, no
/// `CARGO_TARGET_DIR` (the default pending folder is `target/conform/pending` of `repo`).
fn conform_in(repo: &Path, args: &[&str], ci: bool) -> Output {
    let mut cmd = assert_cmd::Command::cargo_bin("conform").unwrap();
    cmd.current_dir(repo)
        .args(args)
        .env_remove("INSTA_UPDATE")
        .env_remove("CI")
        .env_remove("TF_BUILD")
        .env_remove("CARGO_TARGET_DIR");
    if ci {
        cmd.env("CI", "true");
    }
    cmd.output().unwrap()
}

/// A red run of [`CASE`] against the snapshots of `repo`, with the defect that changes one.
fn red_run(repo: &Path, ci: bool) -> Output {
    let _slot = common::Slot::take();
    let scenarios = workspace().join("scenarios");
    let subject = defective(&["crlf-output"]);
    let args = [
        "run",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--snapshots",
        "snapshots",
        "--filter",
        CASE,
        "--subject",
        &subject,
    ];
    let out = conform_in(repo, &args, ci);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    out
}

/// Every pending file under `repo/target`.
fn pending_files(repo: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.to_string_lossy().ends_with(".snap.new") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repo.join("target"), &mut out);
    out
}

#[test]
fn a_red_run_leaves_git_status_clean_and_review_accepts_from_pending() {
    let repo = checkout();
    let run = red_run(repo.path(), false);
    assert_eq!(status(repo.path()), "", "the checkout is as committed");
    let files = pending_files(repo.path());
    let pending_root = repo.path().join("target/conform/pending");
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0].starts_with(&pending_root),
        "{}",
        files[0].display()
    );
    assert!(files[0].ends_with(format!("{SNAPSHOT}.new")));
    // The report names the new place and the command that reviews it.
    let report = stdout(&run);
    assert!(
        report.contains("this run's texts are pending in target/conform/pending/"),
        "{report}"
    );
    assert!(
        report.contains("with `conform review`, then accept with `conform review --accept`"),
        "{report}"
    );

    let review = conform_in(repo.path(), &["review"], false);
    let shown = stdout(&review);
    assert_eq!(
        review.status.code(),
        Some(0),
        "{shown}\n{}",
        stderr(&review)
    );
    assert!(
        shown.contains(&format!("── {CASE} (background) ──")),
        "{shown}"
    );
    assert!(
        shown.contains("\n-Hello, world.\n+Hello, world.␍\n"),
        "{shown}"
    );
    assert!(
        shown.contains("1 pending snapshot(s) in target/conform/pending"),
        "{shown}"
    );

    let accept = conform_in(repo.path(), &["review", "--accept"], false);
    assert_eq!(accept.status.code(), Some(0), "{}", stderr(&accept));
    assert!(stdout(&accept).contains("1 pending snapshot(s) accepted"));
    assert_eq!(status(repo.path()), format!(" M snapshots/{SNAPSHOT}\n"));
    assert_eq!(pending_files(repo.path()), Vec::<PathBuf>::new());
    let accepted = std::fs::read_to_string(repo.path().join("snapshots").join(SNAPSHOT)).unwrap();
    assert!(accepted.contains("\nHello, world.␍\n"), "{accepted}");
    assert!(!accepted.contains("info:"), "{accepted}");
    // The accepted snapshot is what the defective subject shows: the same run now passes.
    let _slot = common::Slot::take();
    let scenarios = workspace().join("scenarios");
    let subject = defective(&["crlf-output"]);
    let again = conform_in(
        repo.path(),
        &[
            "run",
            "--scenarios",
            scenarios.to_str().unwrap(),
            "--snapshots",
            "snapshots",
        ]
        .into_iter()
        .chain(["--filter", CASE, "--subject", &subject])
        .collect::<Vec<_>>(),
        false,
    );
    assert_eq!(again.status.code(), Some(0), "{}", stdout(&again));
}

#[test]
fn rejecting_drops_what_is_pending_and_leaves_the_snapshot() {
    let repo = checkout();
    red_run(repo.path(), false);
    assert_eq!(pending_files(repo.path()).len(), 1);
    let reject = conform_in(repo.path(), &["review", "--reject"], false);
    assert_eq!(reject.status.code(), Some(0), "{}", stderr(&reject));
    assert!(stdout(&reject).contains("1 pending snapshot(s) rejected"));
    assert_eq!(pending_files(repo.path()), Vec::<PathBuf>::new());
    assert_eq!(status(repo.path()), "");
    let review = conform_in(repo.path(), &["review"], false);
    assert_eq!(review.status.code(), Some(0));
    assert!(stdout(&review).contains("no pending snapshots in target/conform/pending"));
}

#[test]
fn accepting_after_the_stored_snapshot_changed_by_hand_is_refused() {
    let repo = checkout();
    red_run(repo.path(), false);
    let stored = repo.path().join("snapshots").join(SNAPSHOT);
    let edited = std::fs::read_to_string(&stored)
        .unwrap()
        .replace("Hello, world.", "Hello, edited world.");
    std::fs::write(&stored, &edited).unwrap();
    let review = conform_in(repo.path(), &["review"], false);
    assert!(stdout(&review).contains("note: the stored snapshot changed since the run"));
    let accept = conform_in(repo.path(), &["review", "--accept"], false);
    let err = stderr(&accept);
    assert_eq!(accept.status.code(), Some(2), "{}\n{err}", stdout(&accept));
    assert!(
        err.contains(&format!("{SNAPSHOT} changed since the run that left")),
        "{err}"
    );
    assert!(err.contains("not accepted"), "{err}");
    assert_eq!(std::fs::read_to_string(&stored).unwrap(), edited);
    assert_eq!(pending_files(repo.path()).len(), 1, "still pending");
}

#[test]
fn on_ci_a_red_run_leaves_nothing_pending() {
    let repo = checkout();
    let run = red_run(repo.path(), true);
    assert!(stdout(&run).contains("[snapshot] the model-visible texts differ"));
    assert!(!repo.path().join("target").exists());
    assert_eq!(status(repo.path()), "");
}
