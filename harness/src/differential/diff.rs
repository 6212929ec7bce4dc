//! `conform peers diff`: the real side (recorded now from installed peers, or the committed
//! fixtures) against each analog scenario's fake, every difference explained or failed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use conform_protocol::side::{Direction, FakeEvent, FakeLine};
use conform_protocol::vocab::Provider;
use serde::Deserialize;
use serde_json::Value;

use super::{Explained, ExplainedEntry, compare, normalise, schema_rejections};

/// What `conform peers diff` needs.
pub struct DiffOptions {
    pub scenarios: std::path::PathBuf,
    pub snapshots: std::path::PathBuf,
    /// The fixtures folder (`fakes/peers/`): recorded real wires and `differences.toml`.
    pub fixtures: std::path::PathBuf,
    /// Record the real wires afresh from these installed peers (else: the fixtures).
    pub peers: Option<std::path::PathBuf>,
    /// Write what was recorded over the fixtures.
    pub update: bool,
    /// Only the peer scenarios whose id contains one of these (empty: all).
    pub filters: Vec<String>,
    /// Per-run deadline unless a scenario sets its own (`None`: `conform run`'s default).
    pub deadline: Option<std::time::Duration>,
    /// Runs in flight at once (`None`: `conform run`'s default).
    pub jobs: Option<usize>,
}

/// One recorded frame in a fixture: the frame, and the method a response answers.
#[derive(Debug, serde::Serialize, Deserialize)]
pub(super) struct Recorded {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    answers: Option<String>,
    frame: Value,
}

/// The frames the runtime (real or fake) sent, in order, from a run's ledger.
fn recorded(ledger: &[FakeLine]) -> Vec<Recorded> {
    ledger
        .iter()
        .filter_map(|l| match &l.event {
            FakeEvent::Frame {
                dir: Direction::Sent,
                frame,
                answers,
                ..
            } => Some(Recorded {
                answers: answers.clone(),
                frame: frame.clone(),
            }),
            _ => None,
        })
        .collect()
}

/// A run's frames as a fixture holds them: normalised ([`normalise`]).
pub(super) fn normalised(ledger: &[FakeLine], run_dir: &str) -> Vec<Recorded> {
    recorded(ledger)
        .into_iter()
        .map(|r| Recorded {
            frame: normalise(&r.frame, run_dir),
            ..r
        })
        .collect()
}

pub(super) fn kinds_of(provider: Provider, records: Vec<Recorded>) -> Vec<(String, Value)> {
    let codec = conform_fakes::codec::for_provider(provider);
    records
        .into_iter()
        .map(|r| (codec.frame_kind(&r.frame, r.answers.as_deref()), r.frame))
        .collect()
}

pub(super) fn fixture_path(dir: &Path, peer: &str, id: &str) -> std::path::PathBuf {
    dir.join(peer)
        .join(format!("{}.jsonl", id.rsplit('/').next().unwrap_or(id)))
}

pub(super) fn read_fixture(
    provider: Provider,
    path: &Path,
) -> Result<Vec<(String, Value)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let records = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("{}: {e}", path.display())))
        .collect::<Result<Vec<Recorded>, String>>()?;
    // Read as recorded now: the normalising rules may have grown since it was written.
    let records = records
        .into_iter()
        .map(|r| Recorded {
            frame: normalise(&r.frame, ""),
            ..r
        })
        .collect();
    Ok(kinds_of(provider, records))
}

/// A run's ledger, its scratch folder, when each ledger line arrived (ms), its deadline (ms)
/// and whether the deadline cut it off.
pub(super) struct Ledger {
    pub(super) lines: Vec<FakeLine>,
    pub(super) run_dir: String,
    at_ms: Vec<u64>,
    deadline_ms: u64,
    pub(super) cut_off: bool,
    /// The case's verdict against the reference: `pass`, or `fail: <check>: <message>`.
    pub(super) outcome: String,
}

/// Runs the scenarios with these exact ids in foreground and returns each one's ledger.
pub(super) async fn ledgers(
    opts: &DiffOptions,
    ids: &[String],
    peers: Option<std::path::PathBuf>,
    product_versions: BTreeMap<Provider, String>,
) -> Result<BTreeMap<String, Ledger>, String> {
    let defaults = crate::settings::Settings::default();
    let report = crate::suite::run(crate::suite::Options {
        filters: ids.to_vec(),
        settings: crate::settings::Settings {
            product_versions: product_versions.into_iter().collect(),
            allow_skips: true,
            peers,
            deadline: opts.deadline.unwrap_or(defaults.deadline),
            jobs: opts.jobs.unwrap_or(defaults.jobs),
            ..defaults
        },
        keep_ledgers: true,
        // The differential reads wires: a text that differs is in the case's verdict, and no
        // `.snap.new` is left in the repository (a candidate version must write nothing there).
        pending_snapshots: false,
        ..crate::suite::Options::new(opts.scenarios.clone(), opts.snapshots.clone())
    })
    .await
    .map_err(|e| e.to_string())?;
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
                    outcome: outcome(&c.verdict, &c.findings),
                    cut_off: obs.timed_out.is_some(),
                    lines: obs.fake,
                    run_dir: obs.run_dir,
                    at_ms: obs.fake_at_ms,
                    deadline_ms,
                },
            );
        }
    }
    Ok(out)
}

/// A case's verdict in one line: `pass`, or the first failed check and its message.
fn outcome(verdict: &crate::suite::Verdict, findings: &[crate::checks::Finding]) -> String {
    use crate::suite::Verdict;
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

/// Timing that matters, from when the ledger lines arrived: the `initialize` answer, the
/// terminal frame (the turn's end), and the share of the run's deadline it took.
fn timing(run: &Ledger) -> String {
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
        "timing: initialize answered at {}, turn ended at {} (deadline {} ms)",
        show(init),
        show(end),
        run.deadline_ms
    );
    if end.is_some_and(|ms| ms * 2 > run.deadline_ms) {
        out.push_str(" — over half the deadline: a loaded machine may miss it");
    } else if end.is_some_and(|ms| ms > default_deadline_ms()) {
        out.push_str(" — past the default 20 s deadline: the scenario needs its own");
    }
    out
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

/// `conform peers diff`: prints the differential; returns the exit code (0: every difference
/// explained and no explanation stale; 1: not; 2: could not run).
pub async fn diff(opts: DiffOptions) -> Result<i32, String> {
    let cases: Vec<PeerCase> = peer_cases(&opts.scenarios)?
        .into_iter()
        .filter(|c| opts.filters.is_empty() || opts.filters.iter().any(|f| c.id.contains(f)))
        .collect();
    if cases.is_empty() {
        return Err(format!("no peer scenario matches {:?}", opts.filters));
    }
    // The real side: recorded now from installed peers, or the committed fixtures.
    let explained = Explained::load_all(&opts.fixtures)?;
    let (mut fresh, cut_off) = match &opts.peers {
        Some(dir) => record(&opts, &cases, dir, &explained).await?,
        None => Default::default(),
    };
    let fakes = run_analogs(&opts, &cases).await?;
    let mut used = BTreeSet::new();
    let mut unexplained = 0;
    for case in &cases {
        if let Some(why) = cut_off.get(&case.id) {
            // What a cut-off run did not send says nothing about the protocol.
            println!("\n{}: {why}; not compared", case.id);
            unexplained += 1;
            continue;
        }
        let path = fixture_path(&opts.fixtures, &case.peer, &case.id);
        let real = match fresh
            .remove(&case.id)
            .map(Ok)
            .unwrap_or_else(|| read_fixture(case.provider, &path))
        {
            Ok(r) => r,
            Err(e) => {
                println!("\n{}: no recorded real wire ({e}); run `ci/peers`", case.id);
                unexplained += 1;
                continue;
            }
        };
        let Some(fake) = fakes.get(&(case.analog.clone(), case.version.clone())) else {
            println!("\n{}: the analog `{}` did not run", case.id, case.analog);
            unexplained += 1;
            continue;
        };
        // Masked as the real side's fixture is: the same rules on both sides.
        let fake = kinds_of(case.provider, normalised(&fake.lines, &fake.run_dir));
        unexplained += judge(case, &real, &fake, &explained, &mut used);
    }
    // A selection uses only some explanations: staleness is judged over the whole catalog.
    let stale = if opts.filters.is_empty() {
        stale(&explained, &used)
    } else {
        0
    };
    let drafts = explained.difference.iter().filter(|e| e.draft).count();
    println!(
        "\n{unexplained} unexplained difference(s), {} stale explanation(s)",
        stale
    );
    if drafts > 0 {
        println!(
            "{drafts} draft explanation(s) await review (write the reason, then remove `draft = true`)"
        );
        unexplained += drafts;
    }
    // A fresh recording may miss what a real runtime does only sometimes (a log receipt that
    // races the answer): staleness is judged against the reviewed fixtures, offline.
    let stale_fails = opts.peers.is_none() && stale > 0;
    if opts.peers.is_some() && stale > 0 {
        println!(
            "(stale explanations are judged against the committed fixtures: `conform peers diff`)"
        );
    }
    Ok(i32::from(unexplained > 0 || stale_fails))
}

/// Every peer scenario that names an analog.
pub(super) fn peer_cases(scenarios: &Path) -> Result<Vec<PeerCase>, String> {
    let all = crate::scenario::discover(scenarios).map_err(|errs| {
        errs.iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    })?;
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
        return Err("no peer scenario names an analog".into());
    }
    Ok(cases)
}

/// Runs every peer scenario against its installed real runtime and records its wire
/// (normalised); writes it over the fixture with `--update`.
async fn record(
    opts: &DiffOptions,
    cases: &[PeerCase],
    dir: &Path,
    explained: &Explained,
) -> Result<(BTreeMap<String, Wire>, BTreeMap<String, String>), String> {
    let ids: Vec<String> = cases.iter().map(|c| c.id.clone()).collect();
    let runs = ledgers(opts, &ids, Some(dir.to_owned()), BTreeMap::new()).await?;
    let mut fresh = BTreeMap::new();
    let mut cut_off = BTreeMap::new();
    for case in cases {
        let id = &case.id;
        let Some(run) = runs.get(id) else {
            println!("{id}: not recorded (the peer is not installed?)");
            continue;
        };
        println!("{id}: {}", timing(run));
        if run.cut_off {
            let why = unfinished(run, case.provider);
            println!("{id}: {why}; its wire is not recorded");
            cut_off.insert(id.clone(), why);
            continue;
        }
        let records = normalised(&run.lines, &run.run_dir);
        let text = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("serialises") + "\n")
            .collect::<String>();
        let wire = kinds_of(case.provider, records);
        let path = fixture_path(&opts.fixtures, &case.peer, id);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != text {
            if opts.update {
                std::fs::create_dir_all(path.parent().expect("has a parent"))
                    .map_err(|e| e.to_string())?;
                std::fs::write(&path, &text).map_err(|e| e.to_string())?;
                println!("{id}: fixture written ({})", path.display());
            } else {
                changed_since_fixture(case, &wire, &path, explained);
            }
        }
        fresh.insert(id.clone(), wire);
    }
    Ok((fresh, cut_off))
}

/// Says how the real wire recorded now differs from its reviewed fixture, judged as the fake's
/// wire is (shapes and closed values, the same volatile fields left aside), leaving out what
/// the peer does only sometimes: text alone (a message, an id) never differs here.
fn changed_since_fixture(case: &PeerCase, now: &Wire, path: &Path, explained: &Explained) {
    let Ok(fixture) = read_fixture(case.provider, path) else {
        println!(
            "{}: no fixture yet at {} (--update writes it)",
            case.id,
            path.display()
        );
        return;
    };
    let changes: Vec<String> = compare(now, &fixture, &explained.leave(&case.peer))
        .into_iter()
        .filter(|d| {
            !explained
                .reason(&case.peer, &case.id, d)
                .is_some_and(|(i, _)| explained.difference[i].sometimes)
        })
        .map(|d| {
            d.to_string()
                .replace("the real runtime", "now it")
                .replace("the fake", "the fixture")
        })
        .collect();
    if !changes.is_empty() {
        println!(
            "{}: the real wire changed since its fixture {} (review; --update keeps it):",
            case.id,
            path.display()
        );
        for c in changes {
            println!("  {c}");
        }
    }
}

/// "The real run did not finish": its deadline, and the last frame it sent (when).
pub(super) fn unfinished(run: &Ledger, provider: Provider) -> String {
    let codec = conform_fakes::codec::for_provider(provider);
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
        "the real run did not finish (deadline {} ms, {last})",
        run.deadline_ms
    )
}

/// The analogs' fakes, run once per product version they must speak: each ledger by analog
/// and version.
pub(super) async fn run_analogs(
    opts: &DiffOptions,
    cases: &[PeerCase],
) -> Result<BTreeMap<(String, Option<String>), Ledger>, String> {
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

/// Prints one peer case's differences, each kept (with its explanation) or not; how many
/// were not.
fn judge(
    case: &PeerCase,
    real: &Wire,
    fake: &Wire,
    explained: &Explained,
    used: &mut BTreeSet<usize>,
) -> usize {
    let (id, peer) = (&case.id, &case.peer);
    println!("\n{id} (real `{peer}`) vs {} (fake):", case.analog);
    let mut diffs = compare(real, fake, &explained.leave(peer));
    diffs.extend(schema_rejections(
        case.provider,
        case.version.as_deref(),
        real,
    ));
    if diffs.is_empty() {
        println!("  no difference");
    }
    let mut unexplained = 0;
    for d in diffs {
        match explained.reason(peer, id, &d) {
            Some((entry, reason)) => {
                used.insert(entry);
                println!("  kept: {d}\n        ({reason})");
            }
            None => {
                unexplained += 1;
                println!("  ✗ {d}");
            }
        }
    }
    unexplained
}

/// Prints every explanation no difference used (bar those for what happens only
/// sometimes); how many.
fn stale(explained: &Explained, used: &BTreeSet<usize>) -> usize {
    let stale: Vec<&ExplainedEntry> = explained
        .difference
        .iter()
        .enumerate()
        .filter(|(i, e)| !used.contains(i) && !e.sometimes && !e.draft)
        .map(|(_, e)| e)
        .collect();
    for e in &stale {
        println!(
            "\nstale explanation (no such difference any more; remove it): peer `{}`, kind `{}`{}",
            e.peer,
            e.kind,
            e.field
                .as_ref()
                .map(|f| format!(", field `{f}`"))
                .unwrap_or_default()
        );
    }
    stale.len()
}

/// `conform peers record <peer>`: the peer's scenarios recorded from its installed runtime over
/// its fixtures, then a draft explanation for each kind of frame whose differences from the
/// fakes nothing explains yet, appended to `<fixtures>/<peer>/differences.toml` for a person to
/// review (a draft explains nothing until then). Returns how many drafts were written.
pub async fn record_peer(opts: DiffOptions, peer: &str) -> Result<usize, String> {
    let dir = opts
        .peers
        .clone()
        .ok_or("recording needs the installed peers (--peers DIR)")?;
    let cases: Vec<PeerCase> = peer_cases(&opts.scenarios)?
        .into_iter()
        .filter(|c| c.peer == peer)
        .collect();
    if cases.is_empty() {
        return Err(format!(
            "no peer scenario names `{peer}` (write scenarios/peers/{peer}/*.toml with `[peer] name = \"{peer}\"` and an `analog`)"
        ));
    }
    let explained = Explained::load_all(&opts.fixtures)?;
    let opts = DiffOptions {
        update: true,
        ..opts
    };
    let (fresh, cut_off) = record(&opts, &cases, &dir, &explained).await?;
    if let Some((id, why)) = cut_off.iter().next() {
        return Err(format!("{id}: {why}; nothing drafted"));
    }
    let fakes = run_analogs(&opts, &cases).await?;
    let mut open: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for case in &cases {
        let (Some(real), Some(fake)) = (
            fresh.get(&case.id),
            fakes.get(&(case.analog.clone(), case.version.clone())),
        ) else {
            continue;
        };
        let fake = kinds_of(case.provider, normalised(&fake.lines, &fake.run_dir));
        let mut diffs = compare(real, &fake, &explained.leave(peer));
        diffs.extend(schema_rejections(
            case.provider,
            case.version.as_deref(),
            real,
        ));
        for d in diffs
            .into_iter()
            .filter(|d| explained.reason(peer, &case.id, d).is_none())
        {
            open.entry(d.key().0)
                .or_default()
                .push(format!("{}: {d}", case.id));
        }
    }
    write_drafts(&opts.fixtures.join(peer).join(super::FILE), peer, open)
}

/// Appends one draft entry per kind to a peer's explanations file.
fn write_drafts(
    path: &Path,
    peer: &str,
    open: BTreeMap<String, Vec<String>>,
) -> Result<usize, String> {
    #[derive(serde::Serialize)]
    struct Draft<'a> {
        peer: &'a str,
        kind: String,
        draft: bool,
        reason: String,
    }
    #[derive(serde::Serialize)]
    struct File<'a> {
        difference: Vec<Draft<'a>>,
    }
    let drafts: Vec<Draft> = open
        .into_iter()
        .map(|(kind, seen)| Draft {
            peer,
            kind,
            draft: true,
            reason: format!(
                "TO REVIEW — why the fake may differ here, or close it in the fakes. Seen: {}",
                seen.join(" | ")
            ),
        })
        .collect();
    let n = drafts.len();
    if n == 0 {
        return Ok(0);
    }
    let text = toml::to_string(&File { difference: drafts }).map_err(|e| e.to_string())?;
    let head = if path.is_file() {
        String::new()
    } else {
        format!(
            "# Differences between the real `{peer}` and the fakes, kept on purpose (see\n# ../differences.toml for the format). Drafts from `conform peers record {peer}`.\n\n"
        )
    };
    std::fs::create_dir_all(path.parent().expect("a peer folder")).map_err(|e| e.to_string())?;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    std::io::Write::write_all(&mut f, format!("{head}{text}").as_bytes())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(n)
}
