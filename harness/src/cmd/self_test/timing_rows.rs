//! The self-test's rows for a timing defect beyond the kill matrix: the scenarios its catalog
//! row caught by timing, run again at `-j 2` and at `-j 32` beside CPU hogs, each by a `conform
//! run` of its own — a verdict that depends on the machine's load is no verdict.

use std::collections::BTreeSet;
use std::time::Instant;

use super::{Catalog, DEADLINE, SelfTestRow};
use crate::checks::Check;

impl Catalog<'_> {
    /// A timing defect again, on (up to [`LOADED_JOBS`] of) the scenarios its catalog row
    /// caught by timing: at `-j 2` on its own, then all in flight at once (`-j`
    /// [`LOADED_JOBS`]) beside [`HOGS`] busy processes — caught by its timing checks both ways,
    /// since a lateness the load might explain is judged again alone
    /// ([`crate::suite::rerun`]): the verdict does not depend on the machine. Each a `conform
    /// run` of its own, so the hogs are not below the suite (its sweep would take them for the
    /// subject's leftovers). No rows for a defect no timing check catches.
    pub(super) fn timing_rows(
        &self,
        defect: &conform_reference::DefectInfo,
        late: &BTreeSet<String>,
    ) -> Vec<SelfTestRow> {
        let timing: Vec<&'static str> = defect
            .catches
            .iter()
            .copied()
            .filter(|c| c.starts_with("timing."))
            .collect();
        if timing.is_empty() {
            return Vec::new();
        }
        let cases: Vec<&String> = late.iter().take(LOADED_JOBS).collect();
        [(2, 0), (LOADED_JOBS, HOGS)]
            .into_iter()
            .map(|(jobs, hogs)| {
                let t = Instant::now();
                let ran = Hogs::start(hogs).and_then(|_hogs| self.run_apart(defect, &cases, jobs));
                let (killed, error) = match ran {
                    Ok(killed) => (killed, None),
                    Err(e) => (BTreeSet::new(), Some(e.to_string())),
                };
                let name = match hogs {
                    0 => format!("{} (-j {jobs})", defect.name),
                    n => format!("{} (-j {jobs}, {n} CPU hogs)", defect.name),
                };
                SelfTestRow {
                    name,
                    help: defect.help.to_owned(),
                    killed,
                    expected: timing.clone(),
                    elapsed: t.elapsed(),
                    error,
                }
            })
            .collect()
    }

    /// `conform run` of `cases` against the defect at `-j jobs`: the check ids its JSON report
    /// names in failed cases and suite findings.
    fn run_apart(
        &self,
        defect: &conform_reference::DefectInfo,
        cases: &[&String],
        jobs: usize,
    ) -> std::io::Result<BTreeSet<&'static str>> {
        let work = tempfile::tempdir()?;
        let json = work.path().join("report.json");
        let mut cmd = std::process::Command::new(&self.exe);
        cmd.arg("run")
            .arg("--subject")
            .arg(self.reference(&format!(" --defect {}", defect.name)))
            .args(["-j", &jobs.to_string()])
            .args(["--deadline-ms", &DEADLINE.as_millis().to_string()])
            .arg("--scenarios")
            .arg(&self.plan.scenarios)
            .arg("--snapshots")
            .arg(&self.plan.snapshots)
            .arg("--json")
            .arg(&json)
            .env("INSTA_UPDATE", "no")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        for case in cases {
            cmd.args(["--filter", case]);
        }
        cmd.status()?;
        let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json)?)?;
        Ok(killed_in_json(&report))
    }
}

/// Runs in flight for a timing defect's loaded row.
pub const LOADED_JOBS: usize = 32;
/// Busy processes beside it: a two-core machine's worth.
pub const HOGS: usize = 2;

/// Processes that only burn CPU, killed and reaped when dropped.
struct Hogs(Vec<std::process::Child>);

impl Hogs {
    fn start(n: usize) -> std::io::Result<Hogs> {
        let mut hogs = Hogs(Vec::new());
        for _ in 0..n {
            hogs.0.push(
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdin(std::process::Stdio::null())
                    .spawn()?,
            );
        }
        Ok(hogs)
    }
}

impl Drop for Hogs {
    fn drop(&mut self) {
        for hog in &mut self.0 {
            let _ = hog.kill();
            let _ = hog.wait();
        }
    }
}

/// The check ids a JSON report (`conform run --json`) names in failed cases and suite findings
/// ([`killed`], read back).
fn killed_in_json(report: &serde_json::Value) -> BTreeSet<&'static str> {
    let checks = |fs: &serde_json::Value| -> Vec<&'static str> {
        fs.as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| Check::from_id(f["check"].as_str()?))
            .map(Check::id)
            .collect()
    };
    let mut out: BTreeSet<&'static str> = report["cases"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["verdict"] == "fail")
        .flat_map(|c| checks(&c["findings"]))
        .chain(checks(&report["findings"]))
        .collect();
    if report["stragglers"]
        .as_array()
        .is_some_and(|s| !s.is_empty())
    {
        out.insert(Check::ProcessSettled.id());
    }
    out
}
