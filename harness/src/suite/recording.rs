//! The wires of real peer runs, kept beside the installed peers (`<peers>/wires/`): a suite
//! run with `--peers` writes each foreground peer case's runtime ledger there as it judges it,
//! so `conform peers diff` compares what `conform run --peers` just ran instead of running the
//! real runtimes a second time. A wire is reused only while everything that made it is the
//! same — the peer's installed command line and environment, the scenario's file, this conform
//! binary — and only when its run finished: a run cut off by its deadline is run again.

use std::path::{Path, PathBuf};

use conform_protocol::side::FakeLine;
use conform_protocol::subject::Mode;
use serde::{Deserialize, Serialize};

use super::outcome::{CaseReport, Verdict};
use crate::checks::Finding;
use crate::proc::peers::PeerEntry;

/// The folder under the peers' folder.
const DIR: &str = "wires";

/// What made a wire: a wire is reused only while all of it is unchanged.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The peer as `peers.json` gives it (command line, environment, files, version).
    pub peer: PeerEntry,
    /// The scenario file's text.
    pub scenario: String,
    /// This conform binary (its version, size and modification time): a rebuilt conform may
    /// script the model or normalise differently.
    pub conform: String,
}

/// One real run's wire and how it went.
#[derive(Debug, Serialize, Deserialize)]
pub struct Recording {
    pub stamp: Stamp,
    /// The runtime ledger, in order.
    pub lines: Vec<FakeLine>,
    /// When each ledger line arrived (ms since the run's start).
    pub at_ms: Vec<u64>,
    /// The run's scratch folder (normalising masks it).
    pub run_dir: String,
    /// The run's deadline (ms), as set.
    pub deadline_ms: u64,
    /// How far it was put off (ms): the run's own processes waited that long for a CPU.
    #[serde(default)]
    pub deadline_put_off_ms: u64,
    /// Whether the deadline cut the run off.
    pub cut_off: bool,
    /// The case's verdict against the subject, in one line ([`outcome`]).
    pub outcome: String,
    /// When it was recorded (seconds since the epoch).
    pub recorded_at: u64,
}

/// What makes `scenario`'s wire with this peer, or `None` when the scenario file cannot be read.
pub fn stamp(peer: &PeerEntry, scenario_path: &Path) -> Option<Stamp> {
    Some(Stamp {
        peer: peer.clone(),
        scenario: std::fs::read_to_string(scenario_path).ok()?,
        conform: this_binary(),
    })
}

fn this_binary() -> String {
    let meta = std::env::current_exe().and_then(std::fs::metadata);
    let (size, modified) = meta.map_or((0, None), |m| (m.len(), m.modified().ok()));
    let modified = modified
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("{} {size} {modified}", env!("CARGO_PKG_VERSION"))
}

fn path(peers: &Path, id: &str) -> PathBuf {
    peers
        .join(DIR)
        .join(format!("{}.json", id.replace('/', "__")))
}

/// Keeps a judged foreground peer case's wire (written whole or not at all). Other cases, and
/// cases with no ledger, keep nothing.
pub fn keep(peers: &Path, entry: &PeerEntry, case: &CaseReport) -> std::io::Result<()> {
    let (Some(obs), Mode::Foreground) = (&case.obs, case.mode) else {
        return Ok(());
    };
    let Some(stamp) = stamp(entry, &case.scenario.path) else {
        return Ok(());
    };
    let recording = Recording {
        stamp,
        lines: obs.fake.clone(),
        at_ms: obs.fake_at_ms.clone(),
        run_dir: obs.run_dir.clone(),
        deadline_ms: obs.deadline.as_millis() as u64,
        deadline_put_off_ms: obs.deadline_put_off.as_millis() as u64,
        cut_off: obs.sent.timed_out.is_some(),
        outcome: outcome(&case.verdict, &case.findings),
        recorded_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
    };
    let file = path(peers, &case.scenario.id);
    std::fs::create_dir_all(file.parent().expect("a folder"))?;
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec(&recording).expect("serialises"))?;
    std::fs::rename(tmp, file)
}

/// The kept wire of scenario `id`, if it was made exactly as `stamp` says and its run finished.
pub fn reusable(peers: &Path, id: &str, stamp: &Stamp) -> Option<Recording> {
    let text = std::fs::read(path(peers, id)).ok()?;
    let recording: Recording = serde_json::from_slice(&text).ok()?;
    (recording.stamp == *stamp && !recording.cut_off).then_some(recording)
}

/// A case's verdict in one line: `pass`, or the first failed check and its message.
pub fn outcome(verdict: &Verdict, findings: &[Finding]) -> String {
    match verdict {
        Verdict::Pass => "pass".into(),
        Verdict::Fail | Verdict::Known(_) => findings.first().map_or("fail".into(), |f| {
            format!(
                "fail: {}: {}",
                f.check.id(),
                conform_protocol::lines::excerpt(&f.message, 300)
            )
        }),
        Verdict::Skip(why) => format!("skip: {why}"),
        Verdict::Interrupted(why) => format!("interrupted: {why}"),
    }
}
