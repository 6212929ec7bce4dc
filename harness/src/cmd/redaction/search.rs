//! The property's search, at CI speed. Cases run in batches, each batch one suite. A failing
//! case is laid at the channel whose secret its findings name (no run needed), else found by
//! runs of one channel at a time — all such cases of a batch in one suite. Only the first
//! counterexample per provider × channel is kept (proptest stops at its first failure; a leaking
//! host leaks the same way thousands of times), and the kept ones are shrunk together, one
//! suite per round. The search stops early at `--max-failures`, at `--time-budget`, or on
//! SIGINT/SIGTERM — and what was found by then is the outcome.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use conform_protocol::subject::Mode;
use conform_protocol::vocab::Provider;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use super::{Planted, inject, secret_body};
use crate::checks::{Check, Finding};
use crate::proc::interrupt::Interrupted;
use crate::scenario::Scenario;
use crate::suite::{self, CaseReport, Options, SuiteError, Verdict};

/// What `conform redaction` was asked.
pub struct SearchPlan {
    pub cases: usize,
    pub seed: u64,
    /// Stop once this many counterexamples are kept (`None`: go through every case).
    pub max_failures: Option<usize>,
    /// Start no batch or shrink round after this long.
    pub time_budget: Option<Duration>,
    /// Say how far the search got after each batch (stderr).
    pub progress: bool,
}

/// Cases in one suite: enough to keep every job busy, few enough to stop soon after enough
/// failures are found.
const BATCH: usize = 250;
/// Shrink rounds per counterexample (each round is one suite for all of them).
const SHRINK_ROUNDS: usize = 12;

/// One failing case, narrowed and shrunk.
#[derive(Debug)]
pub struct Counterexample {
    pub scenario: String,
    pub mode: Mode,
    pub channel: &'static str,
    pub secret: String,
    pub findings: Vec<Finding>,
}

pub struct SearchOutcome {
    /// Cases run (fewer than asked when the search stopped early).
    pub cases: usize,
    pub scenarios: usize,
    /// Cases that failed, whether or not they were kept.
    pub failing_cases: usize,
    /// Failing cases by the channel a finding named (`None`: no finding named a secret).
    pub by_channel: std::collections::BTreeMap<Option<&'static str>, usize>,
    /// The first counterexample per provider × channel, shrunk.
    pub failures: Vec<Counterexample>,
    /// Why the search ended before every case ran, if it did.
    pub stopped: Option<String>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
}

/// A deterministic source of secrets: case `i`'s `k`-th secret depends only on the seed.
struct Secrets {
    runner: TestRunner,
}

type Tree = Box<dyn ValueTree<Value = String>>;

impl Secrets {
    fn new(seed: u64) -> Secrets {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Secrets {
            runner: TestRunner::new_with_rng(
                Config::default(),
                TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
            ),
        }
    }

    fn tree(&mut self) -> Tree {
        Box::new(
            secret_body()
                .new_tree(&mut self.runner)
                .expect("the secret strategy always generates"),
        )
    }
}

/// Whether a finding fails the property: any but timing (how long a run took says nothing
/// about what it showed, and thousands of runs in flight load the machine).
fn counts(f: &Finding) -> bool {
    f.check.family() != "timing"
}

/// Whether a case failed the property (one a signal cut short did not).
fn failed(c: &CaseReport) -> bool {
    matches!(c.verdict, Verdict::Fail) && c.findings.iter().any(counts)
}

/// A secret unique to its case and channel: a generated body and a nonce no fixed text holds.
fn unique(body: &str, case: usize, k: usize) -> String {
    format!("{body}·q{case:x}k{k:x}z")
}

/// One generated case: a scenario in one mode with a secret in each channel.
struct Case {
    variant: Arc<Scenario>,
    planted: Vec<Planted>,
    trees: Vec<Tree>,
    base: Arc<Scenario>,
    mode: Mode,
    number: usize,
}

impl Case {
    /// The case with only channel `only` carrying `secret`; the others as in the base.
    fn with_only(&self, only: usize, secret: &str) -> Arc<Scenario> {
        let mut k = 0;
        let (mut v, _) = inject(&self.base, &mut |_, original| {
            let s = if k == only {
                secret.to_owned()
            } else {
                original.to_owned()
            };
            k += 1;
            s
        });
        v.file.modes = vec![self.mode];
        Arc::new(v)
    }
}

/// A kept counterexample and how its secret is shrunk.
struct Kept {
    case: Case,
    /// The channel's index among the case's planted secrets.
    channel: usize,
    /// The redaction check named the secret: a candidate must be named too. Otherwise the
    /// channel was found by a run of it alone, and any failure counts.
    named: bool,
    best: Counterexample,
    shrinking: bool,
}

/// The index of the planted secret a redaction finding shows (in any form the check tries).
fn named_channel(planted: &[Planted], findings: &[Finding]) -> Option<usize> {
    planted
        .iter()
        .position(|p| findings.iter().any(|f| names(f, &p.secret)))
}

fn names(f: &Finding, secret: &str) -> bool {
    // The check names the secret itself, whatever form it found it in.
    f.check == Check::ContractRedaction && f.message.contains(&format!("{secret:?}"))
}

/// When to stop early.
struct Stop {
    started: Instant,
    budget: Option<Duration>,
    interrupt: Interrupted,
}

impl Stop {
    fn why(&self) -> Option<(String, Option<i32>)> {
        if let Some(signo) = *self.interrupt.borrow() {
            let name = crate::proc::interrupt::name(signo);
            return Some((format!("interrupted by {name}"), Some(signo)));
        }
        let budget = self.budget?;
        (self.started.elapsed() >= budget).then(|| {
            (
                format!("the time budget of {} s ran out", budget.as_secs()),
                None,
            )
        })
    }
}

/// Runs up to `plan.cases` variants over the selected scenarios (round robin, both modes)
/// against the subject in `opts`; keeps and shrinks the first counterexample per provider ×
/// channel.
pub async fn run(opts: &Options, plan: &SearchPlan) -> Result<SearchOutcome, SuiteError> {
    let (slots, scenarios) = slots(opts, plan.seed)?;
    let stop = Stop {
        started: Instant::now(),
        budget: plan.time_budget,
        interrupt: opts.interrupt.clone(),
    };
    let mut secrets = Secrets::new(plan.seed);
    let mut kept: Vec<Kept> = Vec::new();
    let mut keys: BTreeSet<(Provider, &'static str)> = BTreeSet::new();
    let (mut done, mut failing_cases, mut stopped) = (0, 0, None);
    let mut by_channel = std::collections::BTreeMap::new();
    // How long each slot's last case took: the next batch starts its slowest cases first.
    let mut took: std::collections::HashMap<usize, Duration> = Default::default();
    while done < plan.cases {
        // A budget lets the first batch run: a search that ran nothing proves nothing.
        if let Some(why) = stop
            .why()
            .filter(|(_, signal)| done > 0 || signal.is_some())
        {
            stopped = Some(why);
            break;
        }
        let n = BATCH.min(plan.cases - done);
        let mut batch: Vec<Case> = (done..done + n)
            .map(|number| generate(&slots, number, &mut secrets))
            .collect();
        longest_first(&mut batch, &took, slots.len());
        let report =
            suite::run_scenarios(opts, batch.iter().map(|c| c.variant.clone()).collect()).await?;
        done += n;
        let mut ran: Vec<(Case, &CaseReport)> = batch.into_iter().zip(&report.cases).collect();
        ran.sort_by_key(|(case, _)| case.number);
        for (case, c) in &ran {
            if let Some(o) = &c.obs {
                took.insert(case.number % slots.len(), o.elapsed);
            }
        }
        let failing: Vec<(Case, Vec<Finding>)> = ran
            .into_iter()
            .filter(|(_, c)| failed(c))
            .map(|(case, c)| (case, c.findings.clone()))
            .collect();
        failing_cases += failing.len();
        for (case, findings) in &failing {
            let k = named_channel(&case.planted, findings);
            *by_channel
                .entry(k.map(|k| case.planted[k].channel))
                .or_default() += 1;
        }
        let fresh = attribute(opts, failing, &keys).await;
        for k in fresh {
            if keys.insert((k.case.base.file.provider, k.best.channel)) {
                kept.push(k);
            }
        }
        if plan.progress {
            // A closed stderr (a CI step that stopped reading) must not end the search.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "[{:>4} s] {done}/{} cases, {failing_cases} failing, {} kept",
                stop.started.elapsed().as_secs(),
                plan.cases,
                kept.len()
            );
        }
        if let Some(max) = plan.max_failures.filter(|max| kept.len() >= *max) {
            stopped = Some((format!("{max} counterexample(s) found"), None));
            break;
        }
    }
    if let Some(max) = plan.max_failures {
        kept.truncate(max);
    }
    if stopped.as_ref().is_none_or(|(_, signal)| signal.is_none()) {
        shrink(opts, &mut kept, &stop).await;
    }
    let signal = stop.why().and_then(|(_, s)| s);
    Ok(SearchOutcome {
        cases: done,
        scenarios,
        failing_cases,
        by_channel,
        failures: kept.into_iter().map(|k| k.best).collect(),
        stopped: stopped.map(|(why, _)| why),
        signal,
    })
}

/// The scenario × mode slots cases go round, in an order the seed fixes; and how many
/// scenarios they come from.
/// A scenario in one mode: where a case's secrets are written.
type Slot = (Arc<Scenario>, Mode);

fn slots(opts: &Options, seed: u64) -> Result<(Vec<Slot>, usize), SuiteError> {
    let bases: Vec<Arc<Scenario>> = suite::select(&opts.scenarios, &opts.filters)?
        .into_iter()
        // Peer cases run a real runtime, and a scenario pinned to a product version needs it.
        // An isolation group's member runs only beside the others (its channels are the
        // standalone cases' channels).
        .filter(|s| {
            s.file.peer.is_none() && s.file.product_version.is_none() && s.file.group.is_none()
        })
        .map(Arc::new)
        .collect();
    // Every provider and mode early in any run, in an order the seed fixes.
    let mut order = Secrets::new(seed ^ 0x5eed);
    let mut keyed: Vec<(u64, Slot)> = bases
        .iter()
        .flat_map(|s| s.file.modes.iter().map(move |m| (s.clone(), *m)))
        .map(|slot| {
            let key = proptest::prelude::any::<u64>()
                .new_tree(&mut order.runner)
                .map_or(0, |t| t.current());
            (key, slot)
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    if keyed.is_empty() {
        return Err(SuiteError::NothingSelected);
    }
    Ok((keyed.into_iter().map(|(_, s)| s).collect(), bases.len()))
}

/// Case `number`: the next slot, a fresh secret in each of its channels.
fn generate(slots: &[Slot], number: usize, secrets: &mut Secrets) -> Case {
    let (base, mode) = &slots[number % slots.len()];
    let mut k = 0;
    let mut trees = Vec::new();
    let (mut v, planted) = inject(base, &mut |_, _| {
        let tree = secrets.tree();
        let s = unique(&tree.current(), number, k);
        trees.push(tree);
        k += 1;
        s
    });
    v.file.modes = vec![*mode];
    Case {
        variant: Arc::new(v),
        planted,
        trees,
        base: base.clone(),
        mode: *mode,
        number,
    }
}

/// Orders a batch so its slowest cases start first: a batch ends with its last case, and a
/// case that waits out teardown graces, started last, would keep all but one job idle for a
/// second or two. The slot's last duration where known, else the graces its scenario sets
/// (which are there because the scenario waits them out). Only the order of starting changes:
/// results are taken back in case order.
fn longest_first(
    batch: &mut [Case],
    took: &std::collections::HashMap<usize, Duration>,
    slots: usize,
) {
    let guess = |c: &Case| {
        took.get(&(c.number % slots)).copied().unwrap_or_else(|| {
            let s = &c.base.file.subject;
            let graces = s.dispose_eof_grace_ms.unwrap_or(0) + s.dispose_grace_ms.unwrap_or(0);
            Duration::from_millis(graces)
        })
    };
    batch.sort_by_key(|c| std::cmp::Reverse(guess(c)));
}

/// Lays each failing case at a channel: the one whose secret a finding names, else the one
/// whose secret alone makes it fail (one suite for every such case and channel, with the
/// scenario as written beside them). Cases of a provider × channel already kept are passed
/// over where that is known without a run.
async fn attribute(
    opts: &Options,
    failing: Vec<(Case, Vec<Finding>)>,
    keys: &BTreeSet<(Provider, &'static str)>,
) -> Vec<Kept> {
    let mut kept = Vec::new();
    let mut unnamed = Vec::new();
    for (case, findings) in failing {
        match named_channel(&case.planted, &findings) {
            Some(k) => {
                let key = (case.base.file.provider, case.planted[k].channel);
                if !keys.contains(&key) && !kept.iter().any(|x: &Kept| same_key(x, key)) {
                    kept.push(keep(case, k, true, findings));
                }
            }
            None => unnamed.push((case, findings)),
        }
    }
    kept.extend(by_single_channels(opts, unnamed).await);
    kept
}

fn same_key(k: &Kept, key: (Provider, &'static str)) -> bool {
    (k.case.base.file.provider, k.best.channel) == key
}

fn keep(case: Case, channel: usize, named: bool, findings: Vec<Finding>) -> Kept {
    let best = Counterexample {
        scenario: case.base.id.clone(),
        mode: case.mode,
        channel: case.planted.get(channel).map_or("task", |p| p.channel),
        secret: case
            .planted
            .get(channel)
            .map(|p| p.secret.clone())
            .unwrap_or_default(),
        findings,
    };
    Kept {
        case,
        channel,
        named,
        best,
        shrinking: true,
    }
}

/// Failing cases no finding explains by name: each channel's secret alone, and the scenario as
/// written, all in one suite. A case that fails as written is the scenario's failure, not a
/// secret's; one no single channel fails is kept as "several channels together".
async fn by_single_channels(opts: &Options, unnamed: Vec<(Case, Vec<Finding>)>) -> Vec<Kept> {
    if unnamed.is_empty() {
        return Vec::new();
    }
    let mut variants = Vec::new();
    for (case, _) in &unnamed {
        variants.push(case.with_only(usize::MAX, ""));
        for (k, p) in case.planted.iter().enumerate() {
            variants.push(case.with_only(k, &p.secret));
        }
    }
    let Ok(report) = suite::run_scenarios(opts, variants).await else {
        return Vec::new();
    };
    let mut results = report.cases.iter();
    let mut kept = Vec::new();
    for (case, findings) in unnamed {
        let as_written = results.next().is_some_and(failed);
        let alone: Vec<bool> = case
            .planted
            .iter()
            .map(|_| results.next().is_some_and(failed))
            .collect();
        let k = match alone.iter().position(|f| *f) {
            Some(k) if !as_written => k,
            _ => {
                let mut k = keep(case, 0, false, findings);
                k.best.channel = if as_written {
                    "none: the scenario fails as written"
                } else {
                    "several channels together"
                };
                k.shrinking = false;
                kept.push(k);
                continue;
            }
        };
        kept.push(keep(case, k, false, findings));
    }
    kept
}

/// Shrinks every kept secret together: each round simplifies each secret once (or
/// complicates it back after a candidate that passed) and runs all candidates in one suite.
async fn shrink(opts: &Options, kept: &mut [Kept], stop: &Stop) {
    for _ in 0..SHRINK_ROUNDS {
        if stop.why().is_some() {
            return;
        }
        let mut trying: Vec<(usize, String)> = Vec::new();
        for (i, k) in kept.iter_mut().enumerate() {
            if !k.shrinking {
                continue;
            }
            let tree = &mut k.case.trees[k.channel];
            if !tree.simplify() {
                k.shrinking = false;
                continue;
            }
            trying.push((i, unique(&tree.current(), k.case.number, k.channel)));
        }
        if trying.is_empty() {
            return;
        }
        let variants = trying
            .iter()
            .map(|(i, secret)| kept[*i].case.with_only(kept[*i].channel, secret))
            .collect();
        let Ok(report) = suite::run_scenarios(opts, variants).await else {
            return;
        };
        for ((i, secret), c) in trying.into_iter().zip(&report.cases) {
            let k = &mut kept[i];
            if matches!(c.verdict, Verdict::Fail) && fails(k, &c.findings, &secret) {
                k.best.secret = secret;
                k.best.findings = c.findings.clone();
            } else if !k.case.trees[k.channel].complicate() {
                k.shrinking = false;
            }
        }
    }
}

/// Whether a candidate's run still fails the way the kept counterexample did.
fn fails(k: &Kept, findings: &[Finding], secret: &str) -> bool {
    if k.named {
        findings.iter().any(|f| names(f, secret))
    } else {
        findings.iter().any(counts)
    }
}
