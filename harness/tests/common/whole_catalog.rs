//! The whole catalog against the clean reference, run once for every test that reads it: each
//! such run costs half a minute of both cores in a debug build, and the tests that judge it
//! (it passes as a host runs it, it leaves nothing behind) ask different questions of one run.

use std::process::Command;
use std::sync::OnceLock;

use super::{Slot, marked, stderr, stdout, workspace};

/// What the one run showed.
pub struct WholeCatalog {
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
    /// The catalog's digest, as the workspace's files give it.
    pub digest: String,
    /// The embedded catalog was extracted into the run's own cache, under its digest.
    pub extracted: bool,
    /// The JSON report's `stragglers`: what needed the end-of-suite sweep.
    pub stragglers: serde_json::Value,
    /// Processes still carrying the run's mark once it exited.
    pub left_running: Vec<String>,
}

/// Run as a host would have it: a `conform` copied alone to another folder, started outside
/// the workspace with no `--scenarios` or `--snapshots`, judging by the catalog it carries
/// (extracted into a cache of its own) — the very files of the workspace, by digest — with a
/// mark in its environment that every process it starts inherits.
pub fn whole_catalog() -> &'static WholeCatalog {
    static RUN: OnceLock<WholeCatalog> = OnceLock::new();
    RUN.get_or_init(|| {
        let bin = tempfile::tempdir().unwrap();
        let exe = bin.path().join("conform");
        std::fs::copy(assert_cmd::cargo::cargo_bin("conform"), &exe).unwrap();
        let (cwd, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let ws = workspace();
        let digest =
            conform::catalog::digest_of(&ws.join("scenarios"), &ws.join("snapshots")).unwrap();
        let mark = format!("whole-catalog-{}", std::process::id());
        let json = cwd.path().join("report.json");
        let out = {
            let _slot = Slot::take();
            Command::new(&exe)
                .args(["run", "-j", "4", "--json"])
                .arg(&json)
                .current_dir(cwd.path())
                .env("XDG_CACHE_HOME", cache.path())
                .env("INSTA_UPDATE", "no")
                .env("CONFORM_INTERRUPT_MARK", &mark)
                .output()
                .unwrap()
        };
        let left_running = marked(&mark);
        let report: serde_json::Value = std::fs::read(&json)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
        WholeCatalog {
            code: out.status.code(),
            out: stdout(&out),
            err: stderr(&out),
            extracted: cache
                .path()
                .join(format!("conform/catalog-{digest}"))
                .is_dir(),
            digest,
            stragglers: report["stragglers"].clone(),
            left_running,
        }
    })
}
