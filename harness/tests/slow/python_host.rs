//! A foreign subject written the way real hosts are: the Python example host
//! (`examples/python-host/`, asyncio, standard library only), whose runtimes use pipe stdio and
//! inherit the host's stderr. Against it the harness must judge only the host — no run's finding
//! may come from another run's runtime sharing that stderr, and a pipe stdout must be holdable.
//! Skipped, saying why, where `python3` is not installed.

use crate::common;
use common::{Slot, conform, workspace};

fn python3() -> bool {
    match std::process::Command::new("python3")
        .arg("--version")
        .output()
    {
        Ok(o) if o.status.success() => true,
        _ => {
            eprintln!("SKIPPED: `python3` is not installed; the Python example host was not run");
            false
        }
    }
}

#[test]
fn the_python_example_host_passes_the_acp_catalog_with_nothing_misjudged() {
    if !python3() {
        return;
    }
    let _slot = Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let adapter = workspace().join("examples/python-host/adapter.py");
    let out = conform()
        .args([
            "run",
            "-j",
            "8",
            "--filter",
            "acp/",
            "--filter",
            "isolation/",
        ])
        .arg("--subject")
        .arg(format!("python3 '{}'", adapter.display()))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let text = common::stdout(&out);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let findings: Vec<String> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["findings"].as_array().unwrap().iter())
        .chain(report["findings"].as_array().unwrap())
        .map(|f| format!("{}: {}", f["check"], f["message"]))
        .collect();
    assert!(findings.is_empty(), "{}\n{text}", findings.join("\n"));
    assert_eq!(out.status.code(), Some(0), "{text}");
    // The cases that hold a runtime's stdout from outside ran (a pipe stdout is holdable too).
    let held = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"].as_str().unwrap().contains("stdout-held-outside"))
        .filter(|c| c["verdict"] == "pass")
        .count();
    assert!(held >= 2, "{text}");
    // Its hello lists the `dispose` control: the host's own dispose mid-prompt ran, both modes.
    let disposed = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| {
            c["id"]
                .as_str()
                .unwrap()
                .starts_with("acp/cancel/host-dispose-")
        })
        .filter(|c| c["verdict"] == "pass")
        .count();
    assert_eq!(disposed, 4, "{text}");
    // A start whose signal is already aborted (`aborted: true`) ran, and nothing was spawned.
    let before_start = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["id"] == "acp/cancel/before-start" && c["verdict"] == "pass")
        .count();
    assert_eq!(before_start, 1, "{text}");
}
