//! The wires the differential compares: the scenarios that pair a real peer with a fake, their
//! runs (each run's ledger, when its lines arrived, whether its deadline cut it off), and the
//! recorded frames as fixtures keep them (normalised, each with its kind).

use std::collections::BTreeMap;
use std::path::Path;

use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde::Deserialize;
use serde_json::Value;

use super::DiffOptions;
use super::diff::DiffProgress;
use super::error::{DifferentialError, FixtureError};
use super::lifecycle::{END, Ending};
use super::normalise;

/// One recorded frame in a fixture: the frame, and the method a response answers.
#[derive(Debug, serde::Serialize, Deserialize)]
pub(super) struct RecordedFrame {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answers: Option<String>,
    frame: Value,
}

/// The frames the runtime (real or fake) sent, in order, from a run's ledger.
pub(super) fn recorded(ledger: &[FakeLine]) -> Vec<RecordedFrame> {
    ledger
        .iter()
        .filter_map(|l| match &l.event {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                answers,
                ..
            } => Some(RecordedFrame {
                answers: answers.clone(),
                frame: frame.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// A run's frames as a fixture holds them: normalised ([`normalise`]), one id table for the
/// run.
pub(super) fn normalised(ledger: &[FakeLine], run_dir: &str) -> Vec<RecordedFrame> {
    let mut ids = super::Ids::default();
    recorded(ledger)
        .into_iter()
        .map(|r| RecordedFrame {
            frame: normalise(&r.frame, run_dir, &mut ids),
            ..r
        })
        .collect()
}

/// A run's frames as a fixture file holds them: one normalised [`RecordedFrame`] per line, then
/// how the runtime ended (`{"end": …}`, [`Ending`]).
pub(super) fn fixture_text(records: &[RecordedFrame], end: Option<&Ending>) -> String {
    let mut text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("serialises") + "\n")
        .collect();
    if let Some(end) = end {
        text += &(serde_json::json!({ "end": end }).to_string() + "\n");
    }
    text
}

/// A run's wire as the differential compares it: its normalised frames with their kinds, then
/// its ending as a pseudo-frame ([`END`]).
pub(super) fn wire_of(provider: Provider, run: &Ledger) -> Wire {
    let mut wire = kinds_of(provider, normalised(&run.lines, &run.run_dir));
    wire.extend(run.ending().map(|e| (END.to_owned(), e.frame())));
    wire
}

/// A run as its fixture file holds it ([`fixture_text`]).
pub(super) fn fixture_of(run: &Ledger) -> String {
    fixture_text(&normalised(&run.lines, &run.run_dir), run.ending().as_ref())
}

pub(super) fn kinds_of(provider: Provider, records: Vec<RecordedFrame>) -> Vec<(String, Value)> {
    let codec = conform_fakes::protocols::codec_for(provider);
    records
        .into_iter()
        .map(|r| (codec.frame_kind(&r.frame, r.answers.as_deref()), r.frame))
        .collect()
}

pub(super) fn fixture_path(dir: &Path, peer: &str, id: &str) -> std::path::PathBuf {
    dir.join(peer)
        .join(format!("{}.jsonl", id.rsplit('/').next().unwrap_or(id)))
}

pub(super) fn read_fixture(provider: Provider, path: &Path) -> Result<Wire, FixtureError> {
    let text = std::fs::read_to_string(path).map_err(|source| FixtureError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut end = None;
    let mut records = Vec::new();
    for l in text.lines().filter(|l| !l.trim().is_empty()) {
        let bad = |source| FixtureError::Json {
            path: path.to_owned(),
            source,
        };
        let v: Value = serde_json::from_str(l).map_err(bad)?;
        match v.get("end") {
            Some(e) => end = Some(e.clone()),
            None => records.push(serde_json::from_value::<RecordedFrame>(v).map_err(bad)?),
        }
    }
    // Read as recorded now: the normalising rules may have grown since it was written.
    let mut ids = super::Ids::default();
    let records = records
        .into_iter()
        .map(|r| RecordedFrame {
            frame: normalise(&r.frame, "", &mut ids),
            ..r
        })
        .collect();
    let mut wire = kinds_of(provider, records);
    // A fixture recorded before endings were kept says nothing of its end.
    wire.extend(end.map(|e| (END.to_owned(), e)));
    Ok(wire)
}

/// A run's ledger, its scratch folder, when each ledger line arrived (ms), its deadline (ms)
/// and how far it was put off, and whether the deadline cut it off.
pub(super) struct Ledger {
    pub(super) lines: Vec<FakeLine>,
    pub(super) run_dir: String,
    at_ms: Vec<u64>,
    deadline_ms: u64,
    put_off_ms: u64,
    pub(super) cut_off: bool,
    /// The case's verdict against the reference: `pass`, or `fail: <check>: <message>`.
    pub(super) outcome: String,
}

impl Ledger {
    /// How the runtime ended ([`Ending::of`]).
    pub(super) fn ending(&self) -> Option<Ending> {
        Ending::of(&self.lines, &self.at_ms)
    }
}

impl From<crate::suite::recording::Recording> for Ledger {
    fn from(r: crate::suite::recording::Recording) -> Ledger {
        Ledger {
            lines: r.lines,
            run_dir: r.run_dir,
            at_ms: r.at_ms,
            deadline_ms: r.deadline_ms,
            put_off_ms: r.deadline_put_off_ms,
            cut_off: r.cut_off,
            outcome: r.outcome,
        }
    }
}

/// The wires `conform run --peers` kept for these cases that can stand for a run now
/// ([`crate::suite::recording::reusable`]), by id; none with `--rerun`. Each one reused is told
/// to `progress`.
pub(super) fn kept(
    opts: &DiffOptions,
    cases: &[PeerCase],
    dir: &Path,
    progress: &mut dyn FnMut(DiffProgress),
) -> BTreeMap<String, Ledger> {
    use crate::suite::recording;
    let peers = match crate::proc::peers::Peers::load(dir) {
        Ok(p) if !opts.rerun => p,
        _ => return BTreeMap::new(),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut out = BTreeMap::new();
    for case in cases {
        let Some(entry) = peers.entries.get(&case.peer) else {
            continue;
        };
        let path = opts.scenarios.join(format!("{}.toml", case.id));
        let Some(stamp) = recording::stamp(entry, &path) else {
            continue;
        };
        if let Some(r) = recording::reusable(dir, &case.id, &stamp) {
            progress(DiffProgress::Reused {
                id: case.id.clone(),
                age_s: now.saturating_sub(r.recorded_at),
            });
            out.insert(case.id.clone(), Ledger::from(r));
        }
    }
    out
}

/// A suite run for its wires: every selected case in foreground, its ledger kept parsed,
/// skips allowed. A text that differs is in the case's verdict, and nothing is left pending (a
/// candidate version must write nothing).
pub(super) fn wire_suite(
    scenarios: &Path,
    snapshots: &Path,
    settings: crate::settings::Settings,
) -> crate::suite::Options {
    crate::suite::Options {
        settings: crate::settings::Settings {
            allow_skips: true,
            ..settings
        },
        keep_ledgers: true,
        only_mode: Some(conform_protocol::subject::Mode::Foreground),
        ..crate::suite::Options::new(scenarios.to_owned(), snapshots.to_owned())
    }
}

/// Runs the scenarios with these exact ids in foreground and returns each one's ledger.
pub(super) async fn ledgers(
    opts: &DiffOptions,
    ids: &[String],
    peers: Option<std::path::PathBuf>,
    product_versions: BTreeMap<Provider, String>,
) -> Result<BTreeMap<String, Ledger>, crate::suite::SuiteError> {
    let defaults = crate::settings::Settings::default();
    let settings = crate::settings::Settings {
        product_versions: product_versions.into_iter().collect(),
        peers,
        deadline: opts.deadline.unwrap_or(defaults.deadline),
        jobs: opts
            .jobs
            .map_or(defaults.jobs, crate::settings::Jobs::Fixed),
        ..defaults
    };
    let report = crate::suite::run(crate::suite::Options {
        filters: ids.to_vec(),
        ..wire_suite(&opts.scenarios, &opts.snapshots, settings)
    })
    .await?;
    let mut out = BTreeMap::new();
    for c in report.cases {
        if c.mode != conform_protocol::subject::Mode::Foreground || !ids.contains(&c.scenario.id) {
            continue;
        }
        if let Some(obs) = c.obs {
            // As the run had it: the scenario's, else its peer's, else the suite's.
            let deadline_ms = obs.deadline.as_millis() as u64;
            out.insert(
                c.scenario.id.clone(),
                Ledger {
                    outcome: crate::suite::recording::outcome(&c.verdict, &c.findings),
                    cut_off: obs.sent.timed_out.is_some(),
                    lines: obs.fake,
                    run_dir: obs.run_dir,
                    at_ms: obs.fake_at_ms,
                    deadline_ms,
                    put_off_ms: obs.deadline_put_off.as_millis() as u64,
                },
            );
        }
    }
    Ok(out)
}

/// Timing that matters, from when the ledger lines arrived: the `initialize` answer, the
/// terminal frame (the turn's end), and the share of the run's deadline it took.
pub(super) fn timing(run: &Ledger) -> String {
    let at = |pred: &dyn Fn(&FakeEvent) -> bool| {
        run.lines
            .iter()
            .zip(&run.at_ms)
            .find(|(l, _)| pred(&l.event))
            .map(|(_, ms)| *ms)
    };
    let init = at(
        &|e| matches!(e, FakeEvent::Frame { dir: Direction::Sent, answers: Some(m), .. } if m == "initialize"),
    );
    let end = at(&|e| matches!(e, FakeEvent::Terminal));
    let show = |ms: Option<u64>| ms.map_or("never".to_owned(), |ms| format!("{ms} ms"));
    let mut out = format!(
        "timing: initialize answered at {}, turn ended at {} (deadline {})",
        show(init),
        show(end),
        deadline(run)
    );
    if end.is_some_and(|ms| ms * 2 > run.deadline_ms) {
        out.push_str(" — over half the deadline: a loaded machine may miss it");
    } else if end.is_some_and(|ms| ms > default_deadline_ms()) {
        out.push_str(" — past the default 20 s deadline: the scenario needs its own");
    }
    out
}

/// The deadline the run had: as set, and how far a loaded machine put it off (a turn that
/// ended past the deadline as set and passed had the longer one).
fn deadline(run: &Ledger) -> String {
    if run.put_off_ms == 0 {
        return format!("{} ms", run.deadline_ms);
    }
    format!(
        "{} ms: {} ms put off by {} ms while the run's processes waited for a CPU",
        run.deadline_ms + run.put_off_ms,
        run.deadline_ms,
        run.put_off_ms
    )
}

/// The default per-run deadline (ms): a real run past it needs a deadline of its own.
fn default_deadline_ms() -> u64 {
    crate::settings::Settings::default().deadline.as_millis() as u64
}

/// A peer scenario: its id, the real peer it runs, and the analog scenario whose fake it is
/// compared with, with the provider and product version that fake speaks.
pub(super) struct PeerCase {
    pub(super) id: String,
    pub(super) peer: String,
    pub(super) analog: String,
    pub(super) provider: Provider,
    pub(super) version: Option<String>,
}

/// A wire as kinds and frames, in order.
pub(super) type Wire = Vec<(String, Value)>;

/// Every peer scenario that names an analog.
pub(super) fn peer_cases(scenarios: &Path) -> Result<Vec<PeerCase>, DifferentialError> {
    let all = crate::scenario::discover(scenarios).map_err(DifferentialError::Scenarios)?;
    let cases: Vec<PeerCase> = all
        .iter()
        .filter_map(|s| {
            let p = s.file.peer.as_ref()?;
            Some(PeerCase {
                id: s.id.clone(),
                peer: p.name.clone(),
                analog: p.analog.clone()?,
                provider: s.file.provider,
                // The product version the analog's fake speaks (`[peer] product_version`).
                version: p.product_version.clone(),
            })
        })
        .collect();
    if cases.is_empty() {
        return Err(DifferentialError::NoAnalog);
    }
    Ok(cases)
}

/// "The real run did not finish": its deadline, and the last frame it sent (when).
pub(super) fn unfinished(run: &Ledger, provider: Provider) -> String {
    let codec = conform_fakes::protocols::codec_for(provider);
    let last = run
        .lines
        .iter()
        .zip(&run.at_ms)
        .rev()
        .find_map(|(l, ms)| match &l.event {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                answers,
                ..
            } => Some((codec.frame_kind(frame, answers.as_deref()), *ms)),
            _ => None,
        });
    let last = last.map_or("it sent no frame".to_owned(), |(kind, ms)| {
        format!("its last frame `{kind}` at {ms} ms")
    });
    format!(
        "the real run did not finish (deadline {}, {last})",
        deadline(run)
    )
}

/// Why a run cannot stand as the real peer's wire, if it cannot: it was cut off, its verdict
/// did not pass (its check and message), or the mock model answered a model call with 404 —
/// the runtime called an endpoint the mock does not serve, so what it sent is the wire of a
/// broken setup, whatever the verdict. A failed run recorded as the real wire would teach the
/// fakes its failure.
pub(super) fn refusal(run: &Ledger, provider: Provider) -> Option<String> {
    if run.cut_off {
        return Some(unfinished(run, provider));
    }
    if run.outcome != "pass" {
        return Some(format!("the run did not pass ({})", run.outcome));
    }
    // The mock model's 404 body, as a runtime passes it on.
    use conform_fakes::model::NOT_SERVED;
    let mut echoed = None;
    for frame in recorded(&run.lines) {
        let mut texts = Vec::new();
        conform_fakes::codec::string_leaves(&frame.frame, &mut texts);
        echoed = echoed.or(texts.into_iter().find(|t| t.contains(NOT_SERVED)));
    }
    echoed.map(|text| {
        format!(
            "the mock model answered a model call with 404: {}",
            conform_protocol::lines::excerpt(&text, 200)
        )
    })
}

/// The analogs' fakes, run once per product version they must speak: each ledger by analog
/// and version.
pub(super) async fn run_analogs(
    opts: &DiffOptions,
    cases: &[PeerCase],
) -> Result<BTreeMap<(String, Option<String>), Ledger>, crate::suite::SuiteError> {
    let mut by_version: BTreeMap<(Provider, Option<String>), Vec<String>> = BTreeMap::new();
    for case in cases {
        by_version
            .entry((case.provider, case.version.clone()))
            .or_default()
            .push(case.analog.clone());
    }
    let mut fakes = BTreeMap::new();
    for ((provider, version), analogs) in by_version {
        let versions = version.iter().map(|v| (provider, v.clone())).collect();
        for (analog, ledger) in ledgers(opts, &analogs, None, versions).await? {
            fakes.insert((analog, version.clone()), ledger);
        }
    }
    Ok(fakes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(outcome: &str, cut_off: bool, frames: &[Value]) -> Ledger {
        Ledger {
            lines: frames
                .iter()
                .map(|f| FakeLine {
                    seq: None,
                    run: "r1".into(),
                    pid: 1,
                    event: FakeEvent::Frame {
                        dir: Direction::Sent,
                        frame: f.clone(),
                        violation: None,
                        answers: None,
                    },
                })
                .collect(),
            run_dir: String::new(),
            at_ms: vec![5; frames.len()],
            deadline_ms: 20_000,
            put_off_ms: 0,
            cut_off,
            outcome: outcome.into(),
        }
    }

    #[test]
    fn a_failed_run_is_refused_as_a_recording_naming_its_failure() {
        let answer = json!({"type": "assistant", "message": {"content": [{"type": "text", "text": "Hello, world."}]}});
        assert_eq!(
            refusal(
                &run("pass", false, std::slice::from_ref(&answer)),
                Provider::ClaudeCode
            ),
            None
        );
        assert_eq!(
            refusal(
                &run(
                    "fail: stop_reason: expected complete, got error",
                    false,
                    std::slice::from_ref(&answer)
                ),
                Provider::ClaudeCode
            )
            .as_deref(),
            Some("the run did not pass (fail: stop_reason: expected complete, got error)")
        );
        // An agent whose model calls got the mock's 404, whatever its verdict.
        let not_found = json!({"type": "assistant", "error": "unknown",
            "message": {"content": [{"type": "text", "text": "API Error: 404 {\"error\":{\"message\":\"no such endpoint: POST /success/v1/v1/messages\"}}"}]}});
        let why = refusal(&run("pass", false, &[not_found]), Provider::ClaudeCode).unwrap();
        assert!(
            why.starts_with("the mock model answered a model call with 404: API Error: 404"),
            "{why}"
        );
        let why = refusal(&run("pass", true, &[answer]), Provider::ClaudeCode).unwrap();
        assert!(why.starts_with("the real run did not finish"), "{why}");
    }

    #[test]
    fn the_timing_line_shows_the_deadline_the_run_had() {
        let terminal = || FakeLine {
            seq: None,
            run: "r1".into(),
            pid: 1,
            event: FakeEvent::Terminal,
        };
        let mut late = run("pass", false, &[]);
        late.lines.push(terminal());
        late.at_ms.push(25_000);
        late.put_off_ms = 9_000;
        // The turn ended after the deadline as set, and passed: the deadline had been put off.
        assert_eq!(
            timing(&late),
            "timing: initialize answered at never, turn ended at 25000 ms (deadline 29000 ms: \
             20000 ms put off by 9000 ms while the run's processes waited for a CPU) — over half \
             the deadline: a loaded machine may miss it"
        );
        late.put_off_ms = 0;
        assert!(timing(&late).contains("(deadline 20000 ms)"));
    }
}
