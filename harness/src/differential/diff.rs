//! `conform peers diff`: the real side (recorded now from installed peers, or the committed
//! fixtures) against each analog scenario's fake, every difference explained or failed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use conform_protocol::vocab::Provider;

use super::wire::{
    Ledger, PeerCase, Wire, fixture_of, fixture_path, kept, ledgers, peer_cases, read_fixture,
    refusal, run_analogs, timing, wire_of,
};
use super::{Explained, ExplainedEntry, compare, schema_rejections};

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
    // A peer whose analogs' fakes must speak a version this build does not know yet is not
    // compared: its fakes would send nothing, and every real frame would read as one the fake
    // never sends. One line says so, and the run is not green.
    let unbuilt = unspoken(&cases);
    for (peer, (provider, version, n)) in &unbuilt {
        println!("{}", rebuild_first(peer, *provider, version, *n));
    }
    let cases: Vec<PeerCase> = cases
        .into_iter()
        .filter(|c| !unbuilt.contains_key(&c.peer))
        .collect();
    // The real side: recorded now from installed peers, or the committed fixtures.
    let explained = Explained::load_all(&opts.fixtures)?;
    let (mut fresh, not_recorded) = match &opts.peers {
        Some(dir) => record(&opts, &cases, dir, &explained).await?,
        None => Default::default(),
    };
    let fakes = run_analogs(&opts, &cases).await?;
    let mut used = BTreeSet::new();
    let mut unexplained = 0;
    for case in &cases {
        if let Some(why) = not_recorded.get(&case.id) {
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
        let fake = wire_of(case.provider, fake);
        unexplained += judge(case, &real, &fake, &explained, &mut used);
    }
    // A selection uses only some explanations: staleness is judged over the whole catalog.
    let stale = if opts.filters.is_empty() {
        stale(&explained, &used, &unbuilt)
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
    if !unbuilt.is_empty() {
        println!("{} peer(s) not compared (above)", unbuilt.len());
    }
    Ok(i32::from(
        unexplained > 0 || stale_fails || !unbuilt.is_empty(),
    ))
}

/// The one line for a peer [`unspoken`] finds.
pub(super) fn rebuild_first(peer: &str, provider: Provider, version: &str, n: usize) -> String {
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
pub(super) type Recorded = (BTreeMap<String, Wire>, BTreeMap<String, String>);

/// Runs every peer scenario against its installed real runtime and records its wire
/// (normalised); writes it over the fixture with `--update`, never a failed run's
/// ([`refusal`]). Returns the wires, and why each case that was not recorded was not.
pub(super) async fn record(
    opts: &DiffOptions,
    cases: &[PeerCase],
    dir: &Path,
    explained: &Explained,
) -> Result<Recorded, String> {
    let runs = run_peers(opts, cases, dir).await?;
    keep_wires(opts, cases, &runs, explained)
}

/// Each peer scenario's run against its installed real runtime: the wire `conform run
/// --peers` kept, else a run now.
pub(super) async fn run_peers(
    opts: &DiffOptions,
    cases: &[PeerCase],
    dir: &Path,
) -> Result<BTreeMap<String, Ledger>, String> {
    let mut runs = kept(opts, cases, dir);
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
) -> Result<Recorded, String> {
    let mut fresh = BTreeMap::new();
    let mut not_recorded = BTreeMap::new();
    for case in cases {
        let id = &case.id;
        let Some(run) = runs.get(id) else {
            println!("{id}: not recorded (the peer is not installed?)");
            continue;
        };
        println!("{id}: {}", timing(run));
        // What a cut-off run did not send says nothing of the protocol; a failed run's wire is
        // not the real one to keep.
        let refused = match refusal(run, case.provider) {
            Some(why) if run.cut_off || opts.update => Some(why),
            _ => None,
        };
        if let Some(why) = refused {
            println!("{id}: {why}; its wire is not recorded");
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
                    .map_err(|e| e.to_string())?;
                std::fs::write(&path, &text).map_err(|e| e.to_string())?;
                println!("{id}: fixture written ({})", path.display());
            } else {
                changed_since_fixture(case, &wire, &path, explained);
            }
        }
        fresh.insert(id.clone(), wire);
    }
    Ok((fresh, not_recorded))
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
    let mut diffs = compare(case.provider, real, fake, &explained.leave(peer));
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
/// sometimes, and those of a peer not compared); how many.
fn stale<T>(
    explained: &Explained,
    used: &BTreeSet<usize>,
    not_compared: &BTreeMap<String, T>,
) -> usize {
    let compared = |e: &ExplainedEntry| {
        !not_compared
            .keys()
            .any(|peer| crate::input::wildcard(&e.peer, peer))
    };
    let stale: Vec<&ExplainedEntry> = explained
        .difference
        .iter()
        .enumerate()
        .filter(|(i, e)| !used.contains(i) && !e.sometimes && !e.draft && compared(e))
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
