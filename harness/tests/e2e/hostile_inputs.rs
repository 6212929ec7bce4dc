//! End-to-end tests of what `conform` is given: broken or unwritable snapshot folders, corrupted
//! snapshot files, FIFOs and links where snapshots go, nonsense flags, closed pipes, unwritable report paths, subject text carrying
//! terminal control sequences, and scenario references to names the script never declares.
//! None of them may fool, hang or flood the harness.

use std::path::Path;
use std::process::{Output, Stdio};

use crate::common;
use common::{conform, run, stderr, stdout, workspace};

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// A temp snapshot folder holding the stored snapshots of `id` (both modes) from the workspace.
fn snapshot_copy(id: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["foreground", "background"] {
        let name = format!("{}@{mode}.snap", id.replace('/', "__"));
        std::fs::copy(
            workspace().join("snapshots").join(&name),
            dir.path().join(&name),
        )
        .unwrap();
    }
    dir
}

// ---- snapshots ----

#[test]
fn a_snapshot_difference_is_reported_even_when_its_pending_file_cannot_be_written() {
    let dir = snapshot_copy("acp/stop/max-turn-requests");
    let name = "acp__stop__max-turn-requests@foreground.snap";
    let path = dir.path().join(name);
    let stored = std::fs::read_to_string(&path).unwrap();
    let wrong = stored.replace("category: remote-limit", "category: remote-limits");
    assert_ne!(stored, wrong);
    std::fs::write(&path, wrong).unwrap();
    // A directory where the pending `.snap.new` goes: the write fails even as root (a
    // read-only folder does not stop root).
    let folder = tempfile::tempdir().unwrap();
    let pending =
        conform::snapshot::PendingDir::new(folder.path().to_owned()).file_for(dir.path(), name);
    std::fs::create_dir_all(&pending).unwrap();
    let out = conform()
        .env("INSTA_UPDATE", "new")
        .env_remove("CI")
        .args(["run", "--filter", "acp/stop/max-turn-requests"])
        .args(["--snapshots", path_str(dir.path())])
        .args(["--pending", path_str(folder.path())])
        .output()
        .unwrap();
    let (code, text) = (out.status.code(), stdout(&out));
    // The subject's failure, with the diff: not a harness fault.
    assert_eq!(code, Some(1), "{text}\n{}", stderr(&out));
    assert!(
        text.contains("[snapshot] the model-visible texts differ"),
        "{text}"
    );
    assert!(
        text.contains(
            "-Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limits;"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "+Diagnostic: Subagent failure (provider: ACP; stage: prompt; category: remote-limit;"
        ),
        "{text}"
    );
    // …plus a note naming the pending file and the OS error.
    assert!(
        text.contains(&format!(
            "could not write the pending snapshot {}",
            pending.display()
        )),
        "{text}"
    );
    assert!(
        text.contains(
            "it is a directory, not a regular file; conform neither writes through nor replaces it"
        ),
        "{text}"
    );
    assert!(!text.contains("[harness.snapshot]"), "{text}");
}

/// Runs `acp/stop/max-turn-requests` against a foreground snapshot holding `corrupt`; asserts a
/// harness-side input error naming the file, and that the file is left as it was.
fn corrupted_snapshot_case(corrupt: &[u8], accept: bool, reason: &str) -> String {
    let dir = snapshot_copy("acp/stop/max-turn-requests");
    let path = dir
        .path()
        .join("acp__stop__max-turn-requests@foreground.snap");
    std::fs::write(&path, corrupt).unwrap();
    let mut cmd = conform();
    cmd.args(["run", "--filter", "acp/stop/max-turn-requests"])
        .args(["--snapshots", path_str(dir.path())]);
    if accept {
        cmd.arg("--accept");
    }
    let out = cmd.output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}\n{}", stderr(&out));
    assert!(text.contains("[harness.snapshot]"), "{text}");
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(reason), "{text}");
    assert!(!text.contains("no stored snapshot"), "{text}");
    assert_eq!(std::fs::read(&path).unwrap(), corrupt, "the file is kept");
    text
}

#[test]
fn a_corrupted_snapshot_is_a_harness_input_error_not_a_missing_one() {
    corrupted_snapshot_case(
        b"\x00\xffnot a snapshot at all\n",
        false,
        "not an insta snapshot",
    );
    // A header cut off before its closing `---`.
    corrupted_snapshot_case(
        b"---\nsource: scenarios/acp/stop/max-turn-requests.toml\nexpr",
        false,
        "header is not closed",
    );
    // A header that is not YAML.
    corrupted_snapshot_case(b"---\n: : [\n---\nbody\n", false, "cannot be parsed");
}

#[test]
fn accept_refuses_to_overwrite_a_corrupted_snapshot() {
    let text = corrupted_snapshot_case(
        b"garbage\n",
        true,
        "not overwritten by --accept: delete the file to re-record it",
    );
    // The other mode's snapshot was fine and is still accepted (or matched).
    assert!(!text.contains("(background) — "), "{text}");
}

#[test]
fn a_fifo_or_a_linked_snapshot_is_a_harness_input_error_that_never_hangs() {
    // A FIFO with no writer would block a plain open for ever; a link to /dev/zero would be
    // read until memory runs out. Neither is read, replaced or written through.
    let dir = snapshot_copy("acp/stop/max-turn-requests");
    let name = |mode: &str| {
        dir.path()
            .join(format!("acp__stop__max-turn-requests@{mode}.snap"))
    };
    let (fifo, link) = (name("foreground"), name("background"));
    std::fs::remove_file(&fifo).unwrap();
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    let out = conform()
        .args(["run", "--accept", "--filter", "acp/stop/max-turn-requests"])
        .args(["--snapshots", path_str(dir.path())])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(2), "{text}\n{}", stderr(&out));
    for (path, why) in [(&fifo, "it is a FIFO"), (&link, "it is a symbolic link")] {
        let named = format!("the snapshot file {} cannot be read: {why}", path.display());
        assert!(text.contains(&named), "{text}");
    }
    assert!(!text.contains("[snapshot]"), "{text}");
    assert!(!text.contains("accepted new snapshot"), "{text}");
    use std::os::unix::fs::FileTypeExt;
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("/dev/zero"));
}

#[test]
fn a_missing_snapshots_folder_is_a_usage_error_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-snapshots");
    let marker = dir.path().join("subject-started");
    // A subject that only leaves a mark: it must never be started.
    let subject = format!("touch {}", marker.display());
    let (code, out, err) = run(&[
        "--filter",
        "acp/success/end-turn",
        "--subject",
        &subject,
        "--snapshots",
        path_str(&missing),
    ]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(err.contains(&missing.display().to_string()), "{err}");
    assert!(err.contains("does not exist"), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(!marker.exists(), "the subject was started");
    assert!(!missing.exists());

    // With --accept the folder is created and the snapshots recorded there.
    let (code, out, err) = run(&[
        "--filter",
        "acp/success/end-turn",
        "--snapshots",
        path_str(&missing),
        "--accept",
    ]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        missing
            .join("acp__success__end-turn@foreground.snap")
            .is_file()
    );
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
        let why = if args[0] == "-j" {
            "at least 1"
        } else {
            "0 is not in"
        };
        assert!(err.contains(why), "{args:?}: {err}");
        assert!(out.is_empty(), "{out}");
    }
    // `auto` is a value of `--jobs`, and the only word it takes.
    let (code, _, err) = run(&["-j", "many"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("takes `auto` or a number of runs"), "{err}");
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

/// Runs `conform <args>` with stdout a pipe whose reading end is already closed, so every
/// write fails with EPIPE (deterministically, unlike reading a line and then closing).
fn with_closed_stdout(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("conform"))
        .current_dir(workspace())
        .env("INSTA_UPDATE", "no")
        .args(args)
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_is_a_quiet_exit_with_the_usual_status() {
    let vendored = workspace().join("fakes/schemas/codex/0.169.0.schemas.json");
    let drift = ["drift", "codex", "--schema", path_str(&vendored)];
    let cases: [(&[&str], i32); 4] = [
        (&["list"], 0),
        (&["schema", "scenario"], 0),
        // The run's own status is kept: it passed.
        (&["run", "--filter", "acp/success/end-turn"], 0),
        // Drift found (exit 1) is still reported by the status.
        (&drift, 1),
    ];
    for (args, want) in cases {
        let out = with_closed_stdout(args);
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_eq!(out.status.code(), Some(want), "{args:?}: {err}");
        assert!(!err.contains("Broken pipe"), "{args:?}: {err}");
    }
}

#[test]
fn an_unwritable_report_path_fails_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("subject-started");
    let subject = format!("touch {}", marker.display());
    for flag in ["--json", "--junit"] {
        let report = dir.path().join("no-such-dir").join("report.out");
        let (code, out, err) = run(&[
            "--filter",
            "acp/success/end-turn",
            "--subject",
            &subject,
            flag,
            path_str(&report),
        ]);
        assert_eq!(code, Some(2), "{flag}: {out}\n{err}");
        assert!(
            err.contains(&format!("cannot write {}", report.display())),
            "{flag}: {err}"
        );
        assert!(err.contains("No such file or directory"), "{flag}: {err}");
        assert!(out.is_empty(), "{flag}: {out}");
        assert!(!marker.exists(), "{flag}: the subject was started");
    }
}

// ---- subject text on the terminal ----

#[test]
fn control_sequences_from_the_subject_are_escaped_in_the_human_report() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("subject.sh");
    // Answers hello, then rejects every start with a message full of terminal controls:
    // colour, an OSC 8 hyperlink, NUL, a carriage return and a C1 CSI.
    std::fs::write(
        &script,
        r#"read -r hello
printf '%s\n' '{"type":"hello","protocol":"conform-subject/1","subject":{"name":"evil\u001b[2J","version":"0"},"providers":["acp"],"modes":["foreground"]}'
msg='evil \u001b[31mred\u001b[0m \u001b]8;;https://example.invalid\u0007click\u001b]8;;\u0007 nul\u0000 cr\rover \u009b2J'
while read -r line; do
  case "$line" in
    *'"type":"start"'*)
      run=$(printf '%s' "$line" | sed -n 's/.*"run":"\([^"]*\)".*/\1/p')
      printf '%s\n' "{\"type\":\"start_rejected\",\"run\":\"$run\",\"error\":{\"name\":\"AcpRunFailure\",\"message\":\"$msg\"}}"
      printf '%s\n' "{\"type\":\"tool_result\",\"run\":\"$run\",\"isError\":true,\"text\":\"Error: $msg\"}"
      ;;
    *shutdown*) exit 0;;
  esac
done
"#,
    )
    .unwrap();
    let snapshots = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let subject = format!("sh {}", script.display());
    let out = conform()
        .args([
            "run",
            "--filter",
            "acp/success/end-turn",
            "--subject",
            &subject,
        ])
        .args(["--snapshots", path_str(snapshots.path())])
        .args(["--json", path_str(&json)])
        .output()
        .unwrap();
    // The run is the subject's failure; what matters here is what reached stdout.
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = stdout(&out);
    for raw in [0x1b_u8, 0x00, 0x07, b'\r'] {
        assert!(
            !out.stdout.contains(&raw),
            "raw byte {raw:#04x} reached the terminal:\n{text}"
        );
    }
    assert!(!text.contains('\u{9b}'), "raw C1 CSI:\n{text}");
    // The texts a missing snapshot would hold are shown in its visible form, as the file
    // would hold them (controls as `\u{…}`, a carriage return as `␍`).
    assert!(
        text.contains(r"── start rejected (AcpRunFailure) ──
    evil \u{1b}[31mred\u{1b}[0m \u{1b}]8;;https://example.invalid\u{7}click\u{1b}]8;;\u{7} nul\u{0} cr␍over \u{9b}2J"),
        "{text}"
    );
    assert!(text.contains(r"subject: evil\x1b[2J 0"), "{text}");
    // The JSON report stays exact.
    let report = std::fs::read_to_string(&json).unwrap();
    assert!(report.contains(r"evil \u001b[31mred"), "{report}");
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
