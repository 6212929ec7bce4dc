//! Helpers shared by the end-to-end tests of `conform`.
#![allow(dead_code)] // each test file uses its own part

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

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// `conform run <args>`: exit code, stdout, stderr.
pub fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = conform().arg("run").args(args).output().unwrap();
    (out.status.code(), stdout(&out), stderr(&out))
}
