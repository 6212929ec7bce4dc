//! The README's "In a host's CI" is the CI this test runs: in a fresh repository outside the
//! workspace, with a `conform` copied alone onto the PATH, `conform init` and the baseline
//! command it prints, then every `conform` line of the README's workflow as written — each
//! shard, the merge, the HTML report. Skipped, saying why, where `node` is not installed.

use crate::common;
use common::{Slot, stdout, workspace};

use std::process::Command;

/// The `run:` lines of the README's workflow that call conform, as written.
fn workflow_lines() -> Vec<String> {
    let readme = std::fs::read_to_string(workspace().join("README.md")).unwrap();
    let section = readme.split("## In a host's CI").nth(1).unwrap();
    let yaml = section
        .split("```yaml")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    yaml.lines()
        .filter_map(|l| l.trim().strip_prefix("- run: "))
        .filter(|l| l.starts_with("conform "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_readmes_ci_runs_as_written_in_a_hosts_repository() {
    if !Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        eprintln!("SKIPPED: `node` is not installed; the README's CI was not run");
        return;
    }
    let lines = workflow_lines();
    assert_eq!(lines.len(), 3, "{lines:?}");
    let bin = tempfile::tempdir().unwrap();
    std::fs::copy(
        assert_cmd::cargo::cargo_bin("conform"),
        bin.path().join("conform"),
    )
    .unwrap();
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |line: &str| {
        let out = Command::new("sh")
            .arg("-c")
            .arg(line)
            .current_dir(repo.path())
            .env("PATH", &path)
            .env("XDG_CACHE_HOME", cache.path())
            .env("INSTA_UPDATE", "no")
            .output()
            .unwrap();
        (out.status.code(), stdout(&out), common::stderr(&out))
    };
    let _slot = Slot::alone();
    // `conform init`, then the baseline command it prints (the example host fails nothing).
    let (code, text, _) = sh("conform init");
    assert_eq!(code, Some(0), "{text}");
    let baseline = text
        .lines()
        .map(str::trim)
        .find(|l| l.contains("--write-baseline"))
        .and_then(|l| l.split("   #").next())
        .unwrap()
        .to_owned();
    let (code, text, err) = sh(&baseline);
    assert_eq!(code, Some(0), "{baseline}\n{text}\n{err}");
    // Each shard of the matrix, then the report job, as the workflow has them.
    for shard in 1..=3 {
        let line = lines[0].replace("${{ matrix.shard }}", &shard.to_string());
        let (code, text, err) = sh(&line);
        assert_eq!(code, Some(0), "{line}\n{text}\n{err}");
    }
    for line in &lines[1..] {
        let (code, text, err) = sh(line);
        assert_eq!(code, Some(0), "{line}\n{text}\n{err}");
    }
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(repo.path().join("conform.json")).unwrap()).unwrap();
    assert!(
        merged["catalog"].as_str().is_some_and(|c| c.contains('+')),
        "the catalog and the host's own folder: {}",
        merged["catalog"]
    );
    assert!(repo.path().join("conform.xml").is_file());
    assert!(repo.path().join("conform-report/index.html").is_file());
}
