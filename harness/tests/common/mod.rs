//! Helpers shared by the end-to-end tests of `conform`.
#![allow(dead_code)] // each test file uses its own part

pub mod cdp;
pub mod whole_catalog;

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `conform` run from the workspace, leaving no pending snapshots there whatever the
/// environment says.
pub fn conform() -> Command {
    let mut cmd = Command::cargo_bin("conform").unwrap();
    cmd.current_dir(workspace());
    cmd.env("INSTA_UPDATE", "no");
    cmd
}

/// The reference with `defects` seeded, as a subject command line.
pub fn defective(defects: &[&str]) -> String {
    let exe = assert_cmd::cargo::cargo_bin("conform");
    let mut cmd = format!("'{}' reference", exe.display());
    for d in defects {
        cmd.push_str(&format!(" --defect {d}"));
    }
    cmd
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Whole `conform run`s in flight at once within one test binary. Every test of a binary runs
/// in parallel; two dozen suites at once on a two-core machine starve the subjects so much that
/// the timing checks (`timing.*`, bounds of 1.5 s) would judge the machine instead of them.
/// Four keep two cores busy (a small run mostly waits: on its subject's start, its teardown
/// graces), and a lateness the load explains is judged again alone by the suite itself.
const RUNS_AT_ONCE: usize = 4;

static IN_FLIGHT: std::sync::Mutex<usize> = std::sync::Mutex::new(0);
static FREED: std::sync::Condvar = std::sync::Condvar::new();

/// Places among the [`RUNS_AT_ONCE`] runs in flight, held until dropped.
pub struct Slot(usize);

impl Slot {
    pub fn take() -> Slot {
        let mut n = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
        while *n >= RUNS_AT_ONCE {
            n = FREED.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n += 1;
        Slot(1)
    }

    /// Every place: nothing else runs until dropped. For a workflow whose host keeps budgets of
    /// its own (the README's CI: a Node host's dispose budget), which a loaded machine breaks
    /// where the suite cannot tell load from fault.
    pub fn alone() -> Slot {
        let mut n = IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner());
        while *n > 0 {
            n = FREED.wait(n).unwrap_or_else(|e| e.into_inner());
        }
        *n = RUNS_AT_ONCE;
        Slot(RUNS_AT_ONCE)
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        *IN_FLIGHT.lock().unwrap_or_else(|e| e.into_inner()) -= self.0;
        FREED.notify_all();
    }
}

/// `conform run <args>`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let _slot = Slot::take();
    let out = conform().arg("run").args(args).output().unwrap();
    (out.status.code(), stdout(&out), stderr(&out))
}

/// Processes whose environment holds `CONFORM_INTERRUPT_MARK=<mark>`: started by a suite run
/// with that variable set, directly or not (every process inherits it).
pub fn marked(mark: &str) -> Vec<String> {
    let needle = format!("CONFORM_INTERRUPT_MARK={mark}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(env) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if env.split(|b| *b == 0).any(|v| v == needle.as_bytes()) {
            let cmd = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(format!(
                "{} {}",
                entry.file_name().to_string_lossy(),
                String::from_utf8_lossy(&cmd).replace('\0', " ")
            ));
        }
    }
    found
}
