//! End-to-end tests of what `conform` is given: broken or unwritable snapshot folders, corrupted
//! snapshot files, nonsense flags, closed pipes, unwritable report paths, subject text carrying
//! terminal control sequences, and scenario references to names the script never declares.
//! None of them may fool, hang or flood the harness.

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn conform() -> Command {
    let mut cmd = Command::cargo_bin("conform").unwrap();
    cmd.current_dir(workspace());
    // No pending snapshots in the workspace, whatever the environment says.
    cmd.env("INSTA_UPDATE", "no");
    cmd
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = conform().arg("run").args(args).output().unwrap();
    (out.status.code(), stdout(&out), stderr(&out))
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

// ---- command line ----

#[test]
fn zero_jobs_zero_deadlines_and_zero_hello_timeouts_are_rejected() {
    for args in [
        ["-j", "0"],
        ["--deadline-ms", "0"],
        ["--hello-timeout-ms", "0"],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {out}\n{err}");
        assert!(err.contains("invalid value '0'"), "{args:?}: {err}");
        assert!(err.contains("0 is not in"), "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
    }
}

#[test]
fn run_help_says_each_thing_once_and_shows_the_new_flags() {
    let out = conform().args(["run", "--help"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let help = stdout(&out);
    assert_eq!(
        help.matches("Folder of scenario files").count(),
        1,
        "{help}"
    );
    assert_eq!(
        help.matches("Folder of snapshot files").count(),
        1,
        "{help}"
    );
    let lines: Vec<&str> = help.lines().map(str::trim).collect();
    for pair in lines.windows(2) {
        assert!(
            pair[0].is_empty() || pair[0] != pair[1],
            "repeated line {:?}",
            pair[0]
        );
    }
    assert!(help.contains("--allow-skips"), "{help}");
    assert!(help.contains("--hello-timeout-ms"), "{help}");
    assert!(help.contains("[default: 20000]"), "{help}");
}

// ---- scenario references ----

/// A scenarios folder with one `acp/bad.toml` holding `text`; runs it and returns stderr.
fn scenario_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("acp")).unwrap();
    std::fs::write(dir.path().join("acp/bad.toml"), text).unwrap();
    let (code, out, err) = run(&["--scenarios", path_str(dir.path())]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(out.is_empty(), "{out}");
    err
}

#[test]
fn a_cancel_at_a_checkpoint_no_step_declares_is_rejected_at_load() {
    let err = scenario_error(
        "title = \"t\"\nprovider = \"acp\"\n\n[cancel]\nat = \"prompt-in-flite\"\n\n[[fake.steps]]\ncheckpoint = \"prompt-in-flight\"\n\n[[fake.steps]]\nstop = \"cancelled\"\n\n[expect]\nstop_reason = \"aborted\"\n",
    );
    assert!(
        err.contains("acp/bad.toml:5:6: `[cancel] at` names checkpoint `prompt-in-flite`, which no step declares (declared checkpoints: `prompt-in-flight`)"),
        "{err}"
    );
}

#[test]
fn a_release_for_an_await_no_step_declares_is_rejected_at_load() {
    let err = scenario_error(
        "title = \"t\"\nprovider = \"acp\"\n\n[fake.release]\ngate = \"dispatched\"\ngaet = \"result\"\n\n[[fake.steps]]\nawait = \"gate\"\n\n[[fake.steps]]\nstop = \"end_turn\"\n\n[expect]\nstop_reason = \"completed\"\n",
    );
    assert!(
        err.contains("acp/bad.toml:6:1: `[fake.release]` names await `gaet`, which no step declares (declared awaits: `gate`)"),
        "{err}"
    );
}
