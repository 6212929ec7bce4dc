//! A foreign subject written the way real hosts are: the Node.js example host
//! (`examples/node-host/`), whose runtimes use socketpair stdio and inherit the host's stderr.
//! Against it the harness must judge only the host — no run's finding may come from another
//! run's runtime sharing that stderr, and a socket stdout must be holdable. Skipped, saying
//! why, where `node` is not installed.

use crate::common;
use common::{Slot, conform, workspace};

fn node() -> bool {
    match std::process::Command::new("node").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            eprintln!("SKIPPED: `node` is not installed; the Node.js example host was not run");
            false
        }
    }
}

#[test]
fn the_node_example_host_passes_the_acp_catalog_with_nothing_misjudged() {
    if !node() {
        return;
    }
    let _slot = Slot::take();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("report.json");
    let adapter = workspace().join("examples/node-host/adapter.js");
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
        .arg(format!("node '{}'", adapter.display()))
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
    // The cases that hold a runtime's stdout from outside ran (a socket stdout is holdable).
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
