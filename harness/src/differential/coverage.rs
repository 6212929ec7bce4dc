//! `conform peers coverage`: does the catalog exercise what the real runtimes send? Every kind
//! of frame the committed real fixtures hold must be sent by some fake in a run of the whole
//! catalog against the reference, or be listed (`[[unsent]]` in `differences.toml`) with why no
//! provider can act on it. Explaining a difference between one real wire and one fake wire
//! does not stand in for it: a host that chokes on a frame every real run sends must fail
//! somewhere in the catalog.

use std::collections::{BTreeMap, BTreeSet};

use conform_protocol::vocab::Provider;

use super::error::{DifferentialError, FixtureError};
use super::explained::{Explained, Unsent};
use super::wire::{
    PeerCase, fixture_path, kinds_of, peer_cases, read_fixture, recorded, wire_suite,
};
use crate::input::wildcard;

/// What `conform peers coverage` needs.
pub struct CoverageOptions {
    pub scenarios: std::path::PathBuf,
    pub snapshots: std::path::PathBuf,
    /// The fixtures folder (`fakes/peers/`).
    pub fixtures: std::path::PathBuf,
    /// Runs in flight at once (`None`: `conform run`'s default).
    pub jobs: Option<usize>,
}

/// A kind of frame of one provider.
type Kind = (Provider, String);

/// Every kind of frame the committed fixtures hold, with the peers that sent it.
fn real_kinds(
    fixtures: &std::path::Path,
    cases: &[PeerCase],
) -> Result<BTreeMap<Kind, BTreeSet<String>>, FixtureError> {
    let mut out: BTreeMap<Kind, BTreeSet<String>> = BTreeMap::new();
    for case in cases {
        let path = fixture_path(fixtures, &case.peer, &case.id);
        if !path.is_file() {
            continue;
        }
        // A wire's ending is no frame (`conform peers diff` compares it).
        let frames = read_fixture(case.provider, &path)?;
        for (kind, _) in frames
            .into_iter()
            .filter(|(k, _)| k != super::lifecycle::END)
        {
            out.entry((case.provider, kind))
                .or_default()
                .insert(case.peer.clone());
        }
    }
    Ok(out)
}

/// Every kind of frame a fake sent in a run of the whole catalog (foreground).
async fn fake_kinds(opts: &CoverageOptions) -> Result<BTreeSet<Kind>, crate::suite::SuiteError> {
    let defaults = crate::settings::Settings::default();
    let settings = crate::settings::Settings {
        jobs: opts
            .jobs
            .map_or(defaults.jobs, crate::settings::Jobs::Fixed),
        ..defaults
    };
    let report = crate::suite::run(wire_suite(&opts.scenarios, &opts.snapshots, settings)).await?;
    let mut out = BTreeSet::new();
    for case in report.cases {
        let provider = case.scenario.file.provider;
        let ledger = case.obs.map(|o| o.fake).unwrap_or_default();
        for (kind, _) in kinds_of(provider, recorded(&ledger)) {
            out.insert((provider, kind));
        }
    }
    Ok(out)
}

/// The kinds the real runtimes send that no fake sent, each with its `[[unsent]]` entry (by
/// index) if one explains it.
pub(super) fn unsent<'a>(
    real: &'a BTreeMap<Kind, BTreeSet<String>>,
    sent: &BTreeSet<Kind>,
    listed: &[Unsent],
) -> Vec<(&'a Kind, &'a BTreeSet<String>, Option<usize>)> {
    real.iter()
        .filter(|(k, _)| !sent.contains(*k))
        .map(|(k, peers)| {
            let entry = listed
                .iter()
                .position(|u| u.provider == k.0.as_str() && wildcard(&u.kind, &k.1));
            (k, peers, entry)
        })
        .collect()
}

/// What `conform peers coverage` found.
#[derive(Debug)]
pub struct CoverageReport {
    /// Each kind the real runtimes send that no fake sent, in order.
    pub unsent: Vec<UnsentKind>,
    /// The `[[unsent]]` entries no unsent kind used: the catalog sends it now, or no fixture
    /// holds it.
    pub stale: Vec<Unsent>,
    /// Per provider the fixtures hold, in order.
    pub providers: Vec<ProviderCoverage>,
}

/// A kind of frame the real runtimes send and no fake sent.
#[derive(Debug)]
pub struct UnsentKind {
    pub provider: Provider,
    pub kind: String,
    /// The peers whose fixtures hold it.
    pub peers: Vec<String>,
    /// Why no provider can act on it (its `[[unsent]]` entry), if listed.
    pub reason: Option<String>,
}

/// How many of the kinds one provider's fixtures hold the catalog sends, of how many.
#[derive(Debug)]
pub struct ProviderCoverage {
    pub provider: Provider,
    pub sent: usize,
    pub all: usize,
}

impl CoverageReport {
    /// The kinds unsent and unexplained, and the listings stale.
    pub fn failed(&self) -> usize {
        self.unsent.iter().filter(|u| u.reason.is_none()).count() + self.stale.len()
    }

    /// 0: every real kind sent or listed with its reason, and no listing stale; 1: not.
    pub fn exit_code(&self) -> i32 {
        i32::from(self.failed() > 0)
    }
}

/// `conform peers coverage`: what the catalog does not send.
pub async fn coverage(opts: CoverageOptions) -> Result<CoverageReport, DifferentialError> {
    let cases = peer_cases(&opts.scenarios)?;
    let explained = Explained::load_all(&opts.fixtures)?;
    let real = real_kinds(&opts.fixtures, &cases)?;
    let sent = fake_kinds(&opts).await?;
    let mut used = BTreeSet::new();
    let unsent_kinds = unsent(&real, &sent, &explained.unsent)
        .into_iter()
        .map(|((provider, kind), peers, entry)| {
            used.extend(entry);
            UnsentKind {
                provider: *provider,
                kind: kind.clone(),
                peers: peers.iter().cloned().collect(),
                reason: entry.map(|i| explained.unsent[i].reason.clone()),
            }
        })
        .collect();
    let stale = (explained.unsent.iter().enumerate())
        .filter(|(i, _)| !used.contains(i))
        .map(|(_, u)| u.clone())
        .collect();
    let providers: BTreeSet<Provider> = real.keys().map(|(p, _)| *p).collect();
    let providers = providers
        .into_iter()
        .map(|p| {
            let of = |k: &&Kind| k.0 == p;
            ProviderCoverage {
                provider: p,
                all: real.keys().filter(of).count(),
                sent: real.keys().filter(of).filter(|k| sent.contains(*k)).count(),
            }
        })
        .collect();
    Ok(CoverageReport {
        unsent: unsent_kinds,
        stale,
        providers,
    })
}
