//! A whole suite: load and select scenarios, start the side channel and the subject, run
//! every case (several in flight in one subject), judge, and sweep what is left.

pub mod admit;
pub mod baseline;
pub mod judge;
mod order;
pub mod outcome;
pub mod partition;
pub mod recording;
pub mod rerun;
pub mod schedule;
pub mod skew;
pub mod sweep;

use std::path::PathBuf;
use std::sync::Arc;

use crate::scenario::{self, Scenario};
use crate::settings::Settings;

pub use outcome::{CaseReport, CgroupMode, ExitFacts, PeakRss, SuiteReport, Verdict, exit};
pub use schedule::run_scenarios;

/// What a suite runs and how: the folders and selection, the [`Settings`] from the command
/// line, and what only the harness's own commands set.
pub struct Options {
    pub scenarios: PathBuf,
    /// A host's own folders added beside the catalog (`--add DIR`): each holds `scenarios/`
    /// and `snapshots/`.
    pub added: Vec<PathBuf>,
    pub filters: Vec<String>,
    pub snapshots: PathBuf,
    /// Run one shard of the selection (`--partition`).
    pub partition: Option<partition::Partition>,
    pub settings: Settings,
    pub progress: bool,
    /// Told of each case as it ends, with the progress bar to print above (`conform run`'s
    /// status lines); none for the harness's other commands.
    pub observer: Option<Arc<dyn CaseObserver>>,
    /// Where a differing snapshot may be left pending (insta's rules decide): `conform run`'s
    /// `--pending`. `None` for the harness's own suites (generated variants of a scenario must
    /// match its stored snapshot as they are; a candidate version writes nothing).
    pub pending: Option<crate::snapshot::PendingDir>,
    /// Stops the suite in order when it says a signal came (`conform run` listens; others
    /// never are).
    pub interrupt: crate::proc::interrupt::Interrupted,
    /// Keep each run's runtime ledger parsed after judging (the peer differential reads it);
    /// otherwise it is kept as text only ([`crate::run::Observed::compact`]).
    pub keep_ledgers: bool,
    /// Run each scenario in this mode only (where it has it): the differential reads
    /// foreground wires alone.
    pub only_mode: Option<conform_protocol::subject::Mode>,
    /// Try each output failure again under the fake's other product versions, for the hint
    /// ([`skew`]). It never changes a verdict, so a suite that reads verdicts alone (the
    /// self-test's kill matrix) is spared the serial reruns.
    pub version_hints: bool,
}

impl Options {
    /// A suite over these folders with the settings of `conform run` without flags, leaving no
    /// pending snapshot.
    pub fn new(scenarios: PathBuf, snapshots: PathBuf) -> Options {
        Options {
            scenarios,
            added: Vec::new(),
            filters: Vec::new(),
            snapshots,
            partition: None,
            settings: Settings::default(),
            progress: false,
            observer: None,
            pending: None,
            interrupt: crate::proc::interrupt::never(),
            keep_ledgers: false,
            only_mode: None,
            version_hints: true,
        }
    }
}

/// What hears of each case as it ends: the suite runs and judges, a reporter says so (the
/// executor reports, the dispatcher owns state).
pub trait CaseObserver: Send + Sync {
    /// `case` has its verdict; `bar` is the suite's progress bar (hidden off a terminal).
    fn ended(&self, case: &CaseReport, bar: &indicatif::ProgressBar);
}

#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("{} scenario file(s) could not be loaded:\n{}", .0.len(), .0.iter().map(|e| format!("  {e}")).collect::<Vec<_>>().join("\n"))]
    Scenarios(Vec<scenario::ScenarioError>),
    #[error("no scenario matches the filter")]
    NothingSelected,
    #[error("harness setup failed: {0}")]
    Setup(#[from] std::io::Error),
    #[error("{0}")]
    Peers(#[from] crate::proc::peers::PeersError),
    /// The subject's hello names a product version no fake speaks.
    #[error("the subject's hello: {0}")]
    SubjectVersions(String),
}

/// Loads and filters scenarios.
pub fn select(dir: &std::path::Path, filters: &[String]) -> Result<Vec<Scenario>, SuiteError> {
    select_with(dir, &[], filters)
}

/// Loads the catalog in `dir` and each host folder `added` beside it, and filters them.
pub fn select_with(
    dir: &std::path::Path,
    added: &[PathBuf],
    filters: &[String],
) -> Result<Vec<Scenario>, SuiteError> {
    select_from(load_with_added(dir, added, filters)?.scenarios, filters)
}

/// Does a scenario id match the filters (none: every id does)?
fn matches(filters: &[String], id: &str) -> bool {
    filters.is_empty() || filters.iter().any(|f| id.contains(f.as_str()))
}

/// The catalog, then each host folder added beside it (`--add DIR`): the scenarios of its
/// `scenarios/`, whose includes are found there first and then among the catalog's preludes,
/// with their snapshots kept in its `snapshots/`. An id the catalog (or an earlier folder)
/// already has is refused, naming the file. Only what `filters` selects is loaded (with the
/// rest of its folders, [`scenario::discover_wanted`]); every file's id is in the catalog.
fn load_with_added(
    dir: &std::path::Path,
    added: &[PathBuf],
    filters: &[String],
) -> Result<scenario::Found, SuiteError> {
    let wanted = |id: &str| matches(filters, id);
    let wanted: Option<&dyn Fn(&str) -> bool> = (!filters.is_empty()).then_some(&wanted);
    let mut all = load(dir, wanted)?;
    for host in added {
        let root = host.join("scenarios");
        let roots = scenario::Roots {
            own: &root,
            shared: Some(dir),
        };
        let found = scenario::discover_wanted(roots, wanted).map_err(SuiteError::Scenarios)?;
        let mut errors: Vec<scenario::ScenarioError> =
            found.scenarios.iter().filter_map(unknown_check).collect();
        for (id, path) in &found.files {
            if let Some((_, same)) = all.files.iter().find(|(taken, _)| taken == id) {
                errors.push(scenario::ScenarioError::invalid(
                    path,
                    "",
                    None,
                    format!("the id `{id}` is taken by {}", same.display()),
                ));
            }
        }
        if !errors.is_empty() {
            return Err(SuiteError::Scenarios(errors));
        }
        all.files.extend(found.files);
        all.scenarios
            .extend(found.scenarios.into_iter().map(|mut s| {
                s.snapshots = Some(host.join("snapshots"));
                s
            }));
    }
    Ok(all)
}

/// The scenarios under `dir` that `wanted` keeps (every one: `None`), each `[requirement]`
/// naming checks that exist.
fn load(
    dir: &std::path::Path,
    wanted: Option<&dyn Fn(&str) -> bool>,
) -> Result<scenario::Found, SuiteError> {
    let roots = scenario::Roots {
        own: dir,
        shared: None,
    };
    let all = scenario::discover_wanted(roots, wanted).map_err(SuiteError::Scenarios)?;
    let errors: Vec<scenario::ScenarioError> =
        all.scenarios.iter().filter_map(unknown_check).collect();
    if errors.is_empty() {
        Ok(all)
    } else {
        Err(SuiteError::Scenarios(errors))
    }
}

/// A `[requirement] checks` entry that is no check id, at its line and column.
fn unknown_check(s: &Scenario) -> Option<scenario::ScenarioError> {
    let r = s.file.requirement.as_ref()?;
    let bad = r
        .checks
        .iter()
        .find(|id| crate::checks::Check::from_id(id).is_none())?;
    let text = std::fs::read_to_string(&s.path).unwrap_or_default();
    let at = text
        .find(&format!("\"{bad}\""))
        .map(|i| i..i + bad.len() + 2);
    Some(crate::input::InputError::invalid(
        &s.path,
        &text,
        at,
        format!("`{bad}` is no check id (`conform list --checks` lists them)"),
    ))
}

/// Filters loaded scenarios (an isolation group's members come along with any one of them).
fn select_from(all: Vec<Scenario>, filters: &[String]) -> Result<Vec<Scenario>, SuiteError> {
    let chosen = crate::scenario::group::complete(all, |s| matches(filters, &s.id));
    if chosen.is_empty() {
        return Err(SuiteError::NothingSelected);
    }
    Ok(chosen)
}

/// Loads, selects and shards the scenarios, then runs them.
pub async fn run(opts: Options) -> Result<SuiteReport, SuiteError> {
    let all = load_with_added(&opts.scenarios, &opts.added, &opts.filters)?;
    let catalog = all.files.into_iter().map(|(id, _)| id).collect();
    // Named before any run: `--accept` may change the snapshots the suite is judged by. A
    // host's added folders are named too: `<catalog>+<added>…`.
    let mut catalog_digest = crate::catalog::digest_of(&opts.scenarios, &opts.snapshots)?;
    for host in &opts.added {
        let added = crate::catalog::digest_of(&host.join("scenarios"), &host.join("snapshots"))?;
        catalog_digest = format!("{catalog_digest}+{added}");
    }
    let mut chosen = select_from(all.scenarios, &opts.filters)?;
    let positions = chosen
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.clone(), i))
        .collect();
    if let Some(p) = &opts.partition {
        chosen = p.shard(chosen);
    }
    if let Some(only) = opts.only_mode {
        for s in &mut chosen {
            s.file.modes.retain(|m| *m == only);
        }
    }
    let scenarios: Vec<Arc<Scenario>> = chosen.into_iter().map(Arc::new).collect();
    let mut report = run_scenarios(&opts, scenarios).await?;
    report.partition = opts.partition;
    report.positions = positions;
    report.catalog = catalog;
    report.catalog_digest = catalog_digest;
    Ok(report)
}
