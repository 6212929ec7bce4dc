//! `conform peers diff`: the real side (recorded now from installed peers, or the committed
//! fixtures) against each analog scenario's fake, every difference explained or failed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use conform_protocol::vocab::Provider;

use super::error::{DifferentialError, FixtureError};
use super::wire::{
    Ledger, PeerCase, Wire, fixture_of, fixture_path, kept, ledgers, peer_cases, read_fixture,
    refusal, run_analogs, timing, wire_of,
};
use super::{Difference, Explained, ExplainedEntry, compare, schema_rejections};

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
    /// Run every peer again rather than reuse the wire `conform run --peers` kept
    /// ([`crate::suite::recording`]).
    pub rerun: bool,
    /// Only the peer scenarios whose id contains one of these (empty: all).
    pub filters: Vec<String>,
    /// Per-run deadline unless a scenario sets its own (`None`: `conform run`'s default).
    pub deadline: Option<std::time::Duration>,
    /// Runs in flight at once (`None`: `conform run`'s default).
    pub jobs: Option<usize>,
}

/// Something `conform peers diff` (or `peers record`) finds while it works, told as it happens:
/// a run can take minutes, and what it found so far is said before the next.
#[derive(Debug)]
pub enum DiffProgress {
    /// A peer whose analogs' fakes must speak a version this build does not know yet
    /// ([`unspoken`]): not compared.
    Unbuilt {
        peer: String,
        provider: Provider,
        version: String,
        scenarios: usize,
    },
    /// The wire `conform run --peers` kept, reused rather than run again (recorded this long
    /// ago).
    Reused { id: String, age_s: u64 },
    /// No run of the scenario (is the peer installed?).
    NotInstalled { id: String },
    /// When the run's lines arrived ([`super::wire::timing`]).
    Timing { id: String, timing: String },
    /// The run cannot stand as the real wire ([`refusal`]): not recorded.
    Refused { id: String, why: String },
    /// `--update`: the recorded wire written over its fixture.
    FixtureWritten { id: String, path: PathBuf },
    /// No fixture to tell the wire recorded now from.
    NoFixtureYet { id: String, path: PathBuf },
    /// How the real wire recorded now differs from its reviewed fixture.
    ChangedSinceFixture {
        id: String,
        path: PathBuf,
        changes: Vec<String>,
    },
}

/// What `conform peers diff` found, once every case is judged.
#[derive(Debug)]
pub struct DiffReport {
    /// Each compared peer scenario, in order.
    pub cases: Vec<CaseDiff>,
    /// The explanations no difference used ([`stale`]).
    pub stale: Vec<ExplainedEntry>,
    /// Explanations written by `conform peers record` that await review.
    pub drafts: usize,
    /// How many peers were not compared ([`DiffProgress::Unbuilt`]).
    pub unbuilt: usize,
    /// The real side was recorded now (`--peers`), not read from the fixtures.
    pub recorded: bool,
}

/// One peer scenario's real wire against its analog's fake.
#[derive(Debug)]
pub enum CaseDiff {
    /// Its run was not recorded: why.
    NotRecorded {
        id: String,
        why: String,
    },
    /// No real wire to compare: neither recorded now nor a fixture.
    NoRealWire {
        id: String,
        error: FixtureError,
    },
    AnalogDidNotRun {
        id: String,
        analog: String,
    },
    /// Compared: each difference with the reason an explanation keeps it, if one does.
    Judged {
        id: String,
        peer: String,
        analog: String,
        differences: Vec<(Difference, Option<String>)>,
    },
}

impl CaseDiff {
    /// How many of its differences nothing explains (a case not compared counts one).
    pub fn unexplained(&self) -> usize {
        match self {
            CaseDiff::Judged { differences, .. } => {
                differences.iter().filter(|(_, r)| r.is_none()).count()
            }
            _ => 1,
        }
    }
}

impl DiffReport {
    /// The differences nothing explains (and the cases not compared).
    pub fn unexplained(&self) -> usize {
        self.cases.iter().map(CaseDiff::unexplained).sum()
    }

    /// 0: every difference explained and no explanation stale; 1: not. A fresh recording may
    /// miss what a real runtime does only sometimes (a log receipt that races the answer):
    /// staleness is judged against the reviewed fixtures, offline.
    pub fn exit_code(&self) -> i32 {
        let stale_fails = !self.recorded && !self.stale.is_empty();
        i32::from(self.unexplained() + self.drafts > 0 || stale_fails || self.unbuilt > 0)
    }
}

/// `conform peers diff`: the differential, what it finds on the way told to `progress`.
pub async fn diff(
    opts: DiffOptions,
    progress: &mut dyn FnMut(DiffProgress),
) -> Result<DiffReport, DifferentialError> {
    let cases: Vec<PeerCase> = peer_cases(&opts.scenarios)?
        .into_iter()
        .filter(|c| opts.filters.is_empty() || opts.filters.iter().any(|f| c.id.contains(f)))
        .collect();
    if cases.is_empty() {
        return Err(DifferentialError::NoMatch(opts.filters.clone()));
    }
    // A peer whose analogs' fakes must speak a version this build does not know yet is not
    // compared: its fakes would send nothing, and every real frame would read as one the fake
    // never sends. One line says so, and the run is not green.
    let unbuilt = unspoken(&cases);
    for (peer, (provider, version, n)) in &unbuilt {
        progress(DiffProgress::Unbuilt {
            peer: peer.clone(),
            provider: *provider,
            version: version.clone(),
            scenarios: *n,
        });
    }
    let cases: Vec<PeerCase> = cases
        .into_iter()
        .filter(|c| !unbuilt.contains_key(&c.peer))
        .collect();
    // The real side: recorded now from installed peers, or the committed fixtures.
    let explained = Explained::load_all(&opts.fixtures)?;
    let (mut fresh, not_recorded) = match &opts.peers {
        Some(dir) => record(&opts, &cases, dir, &explained, progress).await?,
        None => Default::default(),
    };
    let fakes = run_analogs(&opts, &cases).await?;
    let mut used = BTreeSet::new();
    let mut judged = Vec::new();
    for case in &cases {
        let id = case.id.clone();
        if let Some(why) = not_recorded.get(&case.id) {
            judged.push(CaseDiff::NotRecorded {
                id,
                why: why.clone(),
            });
            continue;
        }
        let path = fixture_path(&opts.fixtures, &case.peer, &case.id);
        let real = match fresh
            .remove(&case.id)
            .map(Ok)
            .unwrap_or_else(|| read_fixture(case.provider, &path))
        {
            Ok(r) => r,
            Err(error) => {
                judged.push(CaseDiff::NoRealWire { id, error });
                continue;
            }
        };
        let Some(fake) = fakes.get(&(case.analog.clone(), case.version.clone())) else {
            judged.push(CaseDiff::AnalogDidNotRun {
                id,
                analog: case.analog.clone(),
            });
            continue;
        };
        // Masked as the real side's fixture is: the same rules on both sides.
        let fake = wire_of(case.provider, fake);
        judged.push(judge(case, &real, &fake, &explained, &mut used));
    }
    // A selection uses only some explanations: staleness is judged over the whole catalog.
    let stale = if opts.filters.is_empty() {
        stale(&explained, &used, &unbuilt)
    } else {
        Vec::new()
    };
    Ok(DiffReport {
        cases: judged,
        stale,
        drafts: explained.difference.iter().filter(|e| e.draft).count(),
        unbuilt: unbuilt.len(),
        recorded: opts.peers.is_some(),
    })
}

/// The one line for a peer [`unspoken`] finds.
pub fn rebuild_first(peer: &str, provider: Provider, version: &str, n: usize) -> String {
    format!(
        "`{peer}`: this build's fakes do not speak {provider} {version} yet (accepted into \
         fakes/profiles/, not built in): rebuild first, then run again; its {n} peer scenario(s) \
         not compared"
    )
}

/// The peers whose scenarios need their analogs' fakes to speak a product version this build
/// does not (one accepted by `conform upgrade --accept` into `fakes/profiles/`, which the fakes
/// learn when built): by peer, the provider, the version and how many of its scenarios.
pub(super) fn unspoken(cases: &[PeerCase]) -> BTreeMap<String, (Provider, String, usize)> {
    let mut out: BTreeMap<String, (Provider, String, usize)> = BTreeMap::new();
    for case in cases {
        let Some(version) = &case.version else {
            continue;
        };
        let known = conform_fakes::protocols::codec_for(case.provider).product_versions();
        if known.is_empty() || known.contains(&version.as_str()) {
            continue;
        }
        out.entry(case.peer.clone())
            .or_insert_with(|| (case.provider, version.clone(), 0))
            .2 += 1;
    }
    out
}

/// The recorded wires by peer scenario, and why each case that was not recorded was not.
pub(super) type RecordedWires = (BTreeMap<String, Wire>, BTreeMap<String, String>);

/// Runs every peer scenario against its installed real runtime and records its wire
/// (normalised); writes it over the fixture with `--update`, never a failed run's
/// ([`refusal`]). Returns the wires, and why each case that was not recorded was not.
pub(super) async fn record(
    opts: &DiffOptions,
    cases: &[PeerCase],
    dir: &Path,
    explained: &Explained,
    progress: &mut dyn FnMut(DiffProgress),
) -> Result<RecordedWires, DifferentialError> {
    let runs = run_peers(opts, cases, dir, progress).await?;
    keep_wires(opts, cases, &runs, explained, progress)
}

/// Each peer scenario's run against its installed real runtime: the wire `conform run
/// --peers` kept, else a run now.
pub(super) async fn run_peers(
    opts: &DiffOptions,
    cases: &[PeerCase],
    dir: &Path,
    progress: &mut dyn FnMut(DiffProgress),
) -> Result<BTreeMap<String, Ledger>, crate::suite::SuiteError> {
    let mut runs = kept(opts, cases, dir, progress);
    let ids: Vec<String> = cases
        .iter()
        .map(|c| c.id.clone())
        .filter(|id| !runs.contains_key(id))
        .collect();
    if !ids.is_empty() {
        runs.extend(ledgers(opts, &ids, Some(dir.to_owned()), BTreeMap::new()).await?);
    }
    Ok(runs)
}

/// The runs' wires (normalised), each written over its fixture with `--update` unless the run
/// cannot stand as the real wire; and why each case that was not recorded was not.
pub(super) fn keep_wires(
    opts: &DiffOptions,
    cases: &[PeerCase],
    runs: &BTreeMap<String, Ledger>,
    explained: &Explained,
    progress: &mut dyn FnMut(DiffProgress),
) -> Result<RecordedWires, DifferentialError> {
    let mut fresh = BTreeMap::new();
    let mut not_recorded = BTreeMap::new();
    for case in cases {
        let id = &case.id;
        let Some(run) = runs.get(id) else {
            progress(DiffProgress::NotInstalled { id: id.clone() });
            continue;
        };
        progress(DiffProgress::Timing {
            id: id.clone(),
            timing: timing(run),
        });
        // What a cut-off run did not send says nothing of the protocol; a failed run's wire is
        // not the real one to keep.
        let refused = match refusal(run, case.provider) {
            Some(why) if run.cut_off || opts.update => Some(why),
            _ => None,
        };
        if let Some(why) = refused {
            progress(DiffProgress::Refused {
                id: id.clone(),
                why: why.clone(),
            });
            not_recorded.insert(id.clone(), why);
            continue;
        }
        let text = fixture_of(run);
        let wire = wire_of(case.provider, run);
        let path = fixture_path(&opts.fixtures, &case.peer, id);
        let old = std::fs::read_to_string(&path).unwrap_or_default();
        if old != text {
            if opts.update {
                std::fs::create_dir_all(path.parent().expect("has a parent"))
                    .map_err(DifferentialError::Write)?;
                std::fs::write(&path, &text).map_err(DifferentialError::Write)?;
                progress(DiffProgress::FixtureWritten {
                    id: id.clone(),
                    path,
                });
            } else if let Some(found) = changed_since_fixture(case, &wire, path, explained) {
                progress(found);
            }
        }
        fresh.insert(id.clone(), wire);
    }
    Ok((fresh, not_recorded))
}

/// Says how the real wire recorded now differs from its reviewed fixture, judged as the fake's
/// wire is (shapes and closed values, the same volatile fields left aside), leaving out what
/// the peer does only sometimes: text alone (a message, an id) never differs here. `None`:
/// it does not.
fn changed_since_fixture(
    case: &PeerCase,
    now: &Wire,
    path: PathBuf,
    explained: &Explained,
) -> Option<DiffProgress> {
    let id = case.id.clone();
    let Ok(fixture) = read_fixture(case.provider, &path) else {
        return Some(DiffProgress::NoFixtureYet { id, path });
    };
    let changes: Vec<String> = compare(case.provider, now, &fixture, &explained.leave(&case.peer))
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
    (!changes.is_empty()).then_some(DiffProgress::ChangedSinceFixture { id, path, changes })
}

/// One peer case's differences, each with the explanation that keeps it (its entry marked
/// `used`), if one does.
fn judge(
    case: &PeerCase,
    real: &Wire,
    fake: &Wire,
    explained: &Explained,
    used: &mut BTreeSet<usize>,
) -> CaseDiff {
    let (id, peer) = (&case.id, &case.peer);
    let mut diffs = compare(case.provider, real, fake, &explained.leave(peer));
    diffs.extend(schema_rejections(
        case.provider,
        case.version.as_deref(),
        real,
    ));
    let differences = diffs
        .into_iter()
        .map(|d| {
            let reason = explained.reason(peer, id, &d).map(|(entry, reason)| {
                used.insert(entry);
                reason.to_owned()
            });
            (d, reason)
        })
        .collect();
    CaseDiff::Judged {
        id: id.clone(),
        peer: peer.clone(),
        analog: case.analog.clone(),
        differences,
    }
}

/// Every explanation no difference used (bar those for what happens only sometimes, and those
/// of a peer not compared).
fn stale<T>(
    explained: &Explained,
    used: &BTreeSet<usize>,
    not_compared: &BTreeMap<String, T>,
) -> Vec<ExplainedEntry> {
    let compared = |e: &ExplainedEntry| {
        !not_compared
            .keys()
            .any(|peer| crate::input::wildcard(&e.peer, peer))
    };
    explained
        .difference
        .iter()
        .enumerate()
        .filter(|(i, e)| !used.contains(i) && !e.sometimes && !e.draft && compared(e))
        .map(|(_, e)| e.clone())
        .collect()
}
