//! `conform init` from an installed binary: a host's repository gets a starting adapter (one of
//! the example hosts, carried in the binary) that passes the catalog's first cases as written,
//! and nothing already there is written over. Each language is skipped, saying why, where its
//! interpreter is not installed.

use crate::common;
use common::{Slot, stdout};

use std::path::Path;
use std::process::Command;

fn has(interpreter: &str) -> bool {
    let found = Command::new(interpreter)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        eprintln!("SKIPPED: `{interpreter}` is not installed; its example was not started");
    }
    found
}

/// `conform init --lang <lang>` in a fresh repository outside the workspace, with a copied
/// binary, then the first command it prints.
fn started(lang: &str, interpreter: &str) {
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join("conform");
    std::fs::copy(assert_cmd::cargo::cargo_bin("conform"), &exe).unwrap();
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let conform = |args: &[&str]| {
        Command::new(&exe)
            .current_dir(repo.path())
            .env("XDG_CACHE_HOME", cache.path())
            .env("INSTA_UPDATE", "no")
            .args(args)
            .output()
            .unwrap()
    };
    let out = conform(&["init", "--lang", lang]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = stdout(&out);
    assert!(Path::new(&repo.path().join("conform/scenarios")).is_dir());
    assert!(Path::new(&repo.path().join("conform/snapshots")).is_dir());
    // The next step as printed, run as printed.
    let first = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("conform run --subject '"))
        .unwrap_or_else(|| panic!("no next command in {text}"));
    let (subject, rest) = first.split_once("' ").unwrap();
    assert!(subject.starts_with(interpreter), "{subject}");
    assert_eq!(rest, "--filter acp/success");
    let _slot = Slot::take();
    let out = conform(&["run", "--subject", subject, "--filter", "acp/success"]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    // A second init writes over nothing.
    let out = conform(&["init", "--lang", lang]);
    assert_eq!(out.status.code(), Some(2));
    assert!(common::stderr(&out).contains("is there already"), "{out:?}");
}

#[test]
fn init_starts_a_node_host_that_passes_its_first_cases() {
    if has("node") {
        started("node", "node");
    }
}

#[test]
fn init_starts_a_python_host_that_passes_its_first_cases() {
    if has("python3") {
        started("python", "python3");
    }
}
