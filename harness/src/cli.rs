//! Every command-line flag, in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use conform_protocol::vocab::Provider;

#[derive(Debug, Parser)]
#[command(
    name = "conform",
    // Which catalog this binary carries (`harness/build.rs`) is part of what it is.
    version = concat!(env!("CARGO_PKG_VERSION"), " (catalog ", env!("CONFORM_CATALOG_DIGEST"), ")"),
    about = "Conformance harness for out-of-process subagent providers",
    long_about = "Runs scenario files against a subject (the reference provider by default, or a \
                  real host through the conform-subject/1 adapter protocol) and judges exact \
                  texts, the diagnostic bound, redaction, delivery and process settling.\n\n\
                  Exit codes: 0 every case that ran passed (and one did), 1 a conformance failure, \
                  2 usage or harness error, or nothing tested (every case skipped)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run scenarios against a subject and report.
    Run(Box<RunArgs>),
    /// The redaction property: generated secrets in every untrusted channel of the selected
    /// scenarios; no model-visible text may show one, and every text must equal its snapshot.
    /// Exit 0: no case failed; 1: a case failed (shrunk counterexample shown); 2: could not run.
    Redaction(RedactionArgs),
    /// The catalog against every seeded defect of the reference, as a kill matrix (defect ×
    /// check id). Exit 0: the clean reference passes, every defect is caught and every check
    /// catches one; 1: not; 2: could not run.
    #[command(name = "self-test")]
    SelfTest(SelfTestArgs),
    /// List the scenarios that would run (or, with --checks, every check).
    List(ListArgs),
    /// Compare a real product's protocol vocabulary with the one conform is pinned to.
    /// Exit 0: no drift; 1: drift; 2: could not read the product.
    Drift(DriftArgs),
    /// Real peers: `conform peers install` installs the runtimes `ci/peers.toml` names into the
    /// cache and writes its `peers.json`; `conform peers path NAME` prints where one is
    /// installed; `conform peers diff` compares the real runtimes' recorded wire with the
    /// fakes'.
    #[command(subcommand)]
    Peers(PeersCommand),
    /// Re-validate a product upgrade: install a candidate version of a real peer beside the
    /// pinned one, run every peer scenario of that peer against both, and report what changed
    /// between the two, ranked by whether it can change what a provider reports (verdicts,
    /// values, counts, order, kinds and fields; for Codex the generated protocol schemas), and
    /// how the fakes fare against the candidate. A candidate older than the pinned version is
    /// named a downgrade. Never writes over the pinned version's fixtures. Exit 0:
    /// no verdict changed and every difference of the fakes is explained; 1: not; 2: could not
    /// run.
    Upgrade(UpgradeArgs),
    /// Review the snapshots `conform run` left pending: print each one's diff from its stored
    /// snapshot; `--accept` writes them into their snapshots folder, `--reject` drops them.
    /// Exit 0: done (also when nothing is pending); 2: a pending file could not be read,
    /// accepted or removed (one whose stored snapshot changed since its run is not accepted),
    /// or usage error.
    Review(ReviewArgs),
    /// Reports: `conform report merge SHARD.json…` joins the JSON reports of the shards of one
    /// catalog (`--partition k/n`) into one report, one JUnit file and one exit code; `conform
    /// report html REPORT.json… -o DIR` draws the page. `--compare PREV.json` compares either
    /// with a previous report.
    Report(ReportArgs),
    /// Start conform in a host's repository: copy an example host (Node.js or Python) into a
    /// folder as the host's adapter, with `scenarios/` and `snapshots/` for its own cases, and
    /// print the commands that come next. Writes over nothing.
    Init(InitArgs),
    /// Print a JSON Schema: `scenario` (for editors) or `subject` (the adapter protocol).
    Schema {
        #[arg(value_parser = ["scenario", "subject"])]
        which: String,
    },
    /// Run the scripted fake runtime of a provider (used by the harness itself).
    #[command(hide = true, disable_help_flag = true)]
    Fake {
        provider: Provider,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Put a real runtime where a fake would be, recording its wire (used by the harness).
    #[command(name = "peer-proxy", hide = true, disable_help_flag = true)]
    PeerProxy {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Serve a scripted model endpoint on loopback for the real runtimes (`ci/peers`).
    #[command(name = "mock-model", hide = true, disable_help_flag = true)]
    MockModel {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Measure what the harness costs on this machine (`ci/bench` prints it).
    #[command(hide = true)]
    Bench(BenchArgs),
    /// Join a cgroup, then exec the command (used by the harness in `--cgroup` mode).
    #[command(name = "cgroup-exec", hide = true)]
    CgroupExec {
        dir: PathBuf,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Run the subject below a keeper that ends its tree when the harness dies (used by the
    /// harness for every subject it starts).
    #[command(hide = true)]
    Keep {
        harness: i32,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// Run the reference subject (the default `--subject`).
    #[command(name = "reference", hide = true, disable_help_flag = true)]
    Reference {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Debug, Args)]
pub struct SelfTestArgs {
    /// Runs in flight at once in each suite; at least 1.
    #[arg(long, short = 'j', default_value_t = 16,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: usize,
    /// Only the defects and probes whose name contains this (repeatable). The check-id rule
    /// then applies to what ran.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
    /// Folder of scenario files [default: `scenarios/` of this workspace].
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// Folder of snapshots [default: `snapshots/` of this workspace].
    #[arg(long)]
    pub snapshots: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// `--jobs` values the catalog's wall time is measured at (`auto`, the default, first: its
    /// report gives the per-provider and wait figures).
    #[arg(long, value_delimiter = ',', default_value = "auto,1,4,16",
          value_parser = clap::builder::ValueParser::new(|s: &str| s.parse::<crate::settings::Jobs>()))]
    pub jobs: Vec<crate::settings::Jobs>,
    /// Repetitions of the floor and of the simplest run.
    #[arg(long, default_value_t = 50)]
    pub repeat: usize,
    /// Cases of the redaction property (against the reference, then a leaking host).
    #[arg(long, default_value_t = 2000)]
    pub redaction_cases: usize,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// `merge`: join shards' JSON reports; `html`: the HTML report of a JSON report (or of
    /// shards' reports, merged) into `-o DIR`.
    #[arg(value_parser = ["merge", "html"])]
    pub action: String,
    /// The JSON reports: one run's, or the shards' (`conform run --partition k/n --json …`),
    /// all n of them.
    #[arg(required = true, value_name = "REPORT.json")]
    pub reports: Vec<PathBuf>,
    /// `html`: the folder to write `index.html` into.
    #[arg(
        long,
        short = 'o',
        value_name = "DIR",
        required_if_eq("action", "html")
    )]
    pub out: Option<PathBuf>,
    /// Write the merged JSON report here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the merged JUnit XML report here.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Compare with a previous JSON report, as `conform run --compare` does. `merge`: once;
    /// `html`: repeatable, oldest first — the page then also shows a small history, one row
    /// per report.
    #[arg(long, value_name = "PREV.json")]
    pub compare: Vec<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum PeersCommand {
    /// The wire differential: the real runtimes' wire against the fakes' (exit 0: every
    /// difference explained; 1: not; 2: could not run).
    Diff(PeersArgs),
    /// Install the real runtimes the manifest names into the cache (each package version once,
    /// cached after), then write the cache's `peers.json` for `conform run --peers DIR`. A peer
    /// whose registry or tool (npm, python3) cannot be reached is skipped, said on stderr
    /// (`SKIPPED: …`); the others still install. Exit 0 unless the manifest or the command line
    /// is wrong (2).
    Install(PeersInstallArgs),
    /// Record a peer's scenarios from its installed runtime over its fixtures, and draft an
    /// explanation (for review) for each kind of frame whose differences from the fakes nothing
    /// explains yet, into `fakes/peers/<peer>/differences.toml`: how a new agent is added (a
    /// manifest entry, its peer scenarios, then this). A failed run (a verdict that did not
    /// pass, a run cut off, the mock model's 404) is no recording: nothing is written or
    /// drafted, and each is named. Exit 0: recorded, nothing to draft; 1: drafts written
    /// (review them); 2: could not run or record.
    Record(PeersRecordArgs),
    /// Does the catalog exercise what the real runtimes send? Runs the whole catalog against
    /// the reference and lists each kind of frame the real fixtures hold that no fake sent,
    /// unless `[[unsent]]` in `differences.toml` says why no provider can act on it (exit 0:
    /// none; 1: some, or a listing is stale; 2: could not run).
    Coverage(PeersCoverageArgs),
    /// Print the folder a peer is installed in (or, with --binary, its program). Exit 0:
    /// installed; 1: not installed; 2: no such peer or a wrong manifest.
    Path(PeersPathArgs),
}

/// The manifest, the cache and the versions of `conform peers install` and `path`.
#[derive(Debug, Args)]
pub struct PeersCacheArgs {
    /// The peers manifest [default: `ci/peers.toml` of this workspace].
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The cache the peers are installed in [default: `$CONFORM_PEERS_DIR`, else
    /// `~/.cache/conform/peers`].
    #[arg(long, value_name = "DIR")]
    pub peers: Option<PathBuf>,
    /// This package version of a peer instead of the manifest's, e.g.
    /// `codex-0.147.0=0.171.0` (repeatable). Its product version is then read from the
    /// package where the manifest says where, is the package version where the manifest says
    /// they are the same, and is unknown otherwise.
    #[arg(long = "version", value_name = "NAME=VERSION", value_parser = name_version)]
    pub versions: Vec<(String, String)>,
}

#[derive(Debug, Args)]
pub struct PeersInstallArgs {
    #[command(flatten)]
    pub cache: PeersCacheArgs,
    /// Install only this peer (repeatable; default: every peer of the manifest). `peers.json`
    /// still names every peer installed in the cache.
    #[arg(long, value_name = "NAME")]
    pub only: Vec<String>,
}

#[derive(Debug, Args)]
pub struct PeersRecordArgs {
    /// The peer's name in the manifest (`claude-agent-acp`).
    pub name: String,
    /// The installed peers [default: `$CONFORM_PEERS_DIR`, else `~/.cache/conform/peers`].
    #[arg(long, value_name = "DIR")]
    pub peers: Option<PathBuf>,
    /// The fixtures folder [default: `fakes/peers/` of this workspace].
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct PeersPathArgs {
    /// The peer's name in the manifest (`codex-0.147.0`).
    pub name: String,
    #[command(flatten)]
    pub cache: PeersCacheArgs,
    /// Print the installed program (absolute, its glob resolved) instead of the folder.
    #[arg(long)]
    pub binary: bool,
}

#[derive(Debug, Args)]
pub struct UpgradeArgs {
    /// The peer and the package version to try: a manifest name (`codex-0.147.0@0.171.0`,
    /// `claude-code@0.3.334`, `acp-example@1.9.0`) or a product (`codex@0.171.0`: its peer
    /// whose version the fakes speak by default).
    #[arg(value_name = "PEER@VERSION", value_parser = peer_at_version)]
    pub target: (String, String),
    /// The peers manifest [default: `ci/peers.toml` of this workspace].
    #[arg(long, value_name = "FILE")]
    pub manifest: Option<PathBuf>,
    /// The cache the peers are installed in [default: `$CONFORM_PEERS_DIR`, else
    /// `~/.cache/conform/peers`]. The report goes to `<cache>/upgrade/<peer>@<version>/`.
    #[arg(long, value_name = "DIR")]
    pub peers: Option<PathBuf>,
    /// Also write the report (`upgrade.md`, `upgrade.json`) into this folder.
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Codex: when the report is clean (no verdict changed, every difference of the fakes
    /// explained), accept the version — its generated schema bundle into
    /// `fakes/schemas/codex/` and an entry into `fakes/profiles/codex.toml` — so the fakes
    /// speak it (`--product-version codex=<version>`) after a rebuild. Review the diff. Another
    /// product is refused before anything is installed or run.
    #[arg(long)]
    pub accept: bool,
    #[command(flatten)]
    pub runs: PeerRunArgs,
}

fn peer_at_version(s: &str) -> Result<(String, String), String> {
    match s.rsplit_once('@') {
        Some((peer, version)) if !peer.is_empty() && !version.is_empty() => {
            Ok((peer.to_owned(), version.to_owned()))
        }
        _ => Err(format!("`{s}`: expected PEER@VERSION, e.g. codex@0.171.0")),
    }
}

fn name_version(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((name, version)) if !name.is_empty() && !version.is_empty() => {
            Ok((name.to_owned(), version.to_owned()))
        }
        _ => Err(format!(
            "`{s}`: expected NAME=VERSION, e.g. codex-0.147.0=0.171.0"
        )),
    }
}

#[derive(Debug, Args)]
pub struct PeersArgs {
    /// Record the real wires afresh from the peers installed here (`ci/peers`); without it the
    /// committed fixtures are the real side.
    #[arg(long, value_name = "DIR")]
    pub peers: Option<PathBuf>,
    /// Write the freshly recorded wires over the fixtures (read the differences first).
    #[arg(long, requires = "peers")]
    pub update: bool,
    /// Run every real peer again, even one whose wire `conform run --peers` just kept (by
    /// default such a wire is reused while the peer, the scenario and conform are unchanged).
    #[arg(long, requires = "peers")]
    pub rerun: bool,
    /// The fixtures folder [default: `fakes/peers/` of this workspace].
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    #[command(flatten)]
    pub runs: PeerRunArgs,
}

#[derive(Debug, Args)]
pub struct PeersCoverageArgs {
    /// The fixtures folder [default: `fakes/peers/` of this workspace].
    #[arg(long, value_name = "DIR")]
    pub fixtures: Option<PathBuf>,
    /// Runs in flight at once (default: `conform run`'s).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
}

/// Which peer scenarios run, and how (`conform peers diff`, `conform upgrade`).
#[derive(Debug, Args)]
pub struct PeerRunArgs {
    /// Only the peer scenarios whose id contains this text (repeatable: any match).
    #[arg(long, short = 'f', value_name = "TEXT")]
    pub filter: Vec<String>,
    /// Per-run deadline in milliseconds for the real runs and the fakes' (unless a scenario
    /// or the peer sets its own); a real run cut off by it is said to be, never read as
    /// missing frames.
    #[arg(long = "deadline-ms", value_name = "DEADLINE_MS",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub deadline_ms: Option<u64>,
    /// Runs in flight at once (default: `conform run`'s).
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u64).range(1..))]
    pub jobs: Option<u64>,
}

#[derive(Debug, Args)]
pub struct DriftArgs {
    /// The product: `codex`.
    #[arg(value_parser = ["codex"])]
    pub product: String,
    /// The product binary (its `app-server generate-json-schema` is run).
    #[arg(long, required_unless_present = "schema", conflicts_with = "schema")]
    pub bin: Option<PathBuf>,
    /// A schema bundle already generated (`codex_app_server_protocol.v2.schemas.json`).
    #[arg(long)]
    pub schema: Option<PathBuf>,
    /// Compare against this known version instead of the pinned one.
    #[arg(long)]
    pub against: Option<String>,
}

#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Folder of scenario files [default: `scenarios/` of this workspace].
    #[arg(long)]
    pub scenarios: Option<PathBuf>,
    /// A host's own folder to add beside the catalog (repeatable): its `scenarios/` (whose
    /// includes may name the catalog's preludes) and its `snapshots/`.
    #[arg(long = "add", value_name = "DIR")]
    pub added: Vec<PathBuf>,
    /// Run only scenarios whose id contains this text (repeatable: any match).
    #[arg(long, short = 'f')]
    pub filter: Vec<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The example to start from.
    #[arg(long, value_enum, default_value_t = InitLang::Node)]
    pub lang: InitLang,
    /// The folder to write (created; it must not hold the example's files yet).
    #[arg(default_value = "conform")]
    pub dir: PathBuf,
}

/// The example hosts `conform init` can start from.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum InitLang {
    /// `examples/node-host`: Node.js 20, no dependencies.
    Node,
    /// `examples/python-host`: Python 3.11, the standard library only.
    Python,
}

#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// List every check instead: its id, the requirement it holds a subject to, and where that
    /// requirement comes from.
    #[arg(long, conflicts_with_all = ["scenarios", "filter"])]
    pub checks: bool,
    /// List each scenario's expectations by the kind of requirement they stand for — records
    /// first, each with the clause it rests on — instead of the scenarios.
    #[arg(long, conflicts_with = "checks")]
    pub levels: bool,
    /// List the waits each scenario sets over 200 ms, with why each is as long as it is (its
    /// `[waits]`); exits 1 if one says nothing (the lint: a wait that is not a case's point
    /// stays short).
    #[arg(long, conflicts_with_all = ["checks", "levels"])]
    pub waits: bool,
}

#[derive(Debug, Args)]
pub struct RedactionArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// The subject command line (run with `sh -c`). Default: the reference subject.
    #[arg(long)]
    pub subject: Option<String>,
    /// How many generated cases (each one run of one scenario in one mode).
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub cases: usize,
    /// The seed of the generator: the same seed replays the same cases.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Stop once this many counterexamples are kept [default: go through every case, keeping
    /// the first per provider × channel].
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_failures: Option<usize>,
    /// Start no more cases or shrink rounds after this many seconds; what was found by then is
    /// reported.
    #[arg(long, value_name = "SECONDS")]
    pub time_budget: Option<u64>,
    /// Runs in flight at once; at least 1. Eight times `conform run`'s default: a case spends
    /// most of its time waiting (handshakes, teardown graces), and the search's runs are judged
    /// only for leaks, never for timing (measured on two cores: 32 beats 16 by about a tenth;
    /// beyond, the tree scans cost more than the waits they fill).
    #[arg(long, short = 'j', default_value_t = 32,
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub jobs: usize,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub select: SelectArgs,
    /// Folder of snapshot files [default: `snapshots/` of this workspace]. It must exist,
    /// except with `--accept`, which creates it. Only `--accept` (or `INSTA_UPDATE=always`)
    /// writes into it.
    #[arg(long)]
    pub snapshots: Option<PathBuf>,
    #[command(flatten)]
    pub pending: PendingArgs,
    #[command(flatten)]
    pub settings: crate::settings::Settings,
    /// Known failures (TOML: `[[known]]` entries with `id` and `reason`): a listed failure is
    /// reported as known and passes; an unlisted one fails; an entry that no longer matches a
    /// failure fails as stale. An entry's `texts` pins what its case says: a known case whose
    /// texts changed fails (`baseline.changed`); `[[refused]]` pins a refused call.
    #[arg(long, value_name = "FILE")]
    pub baseline: Option<PathBuf>,
    /// Write today's failures here as a baseline to review, each pinning what its case says
    /// (keeping the reasons of the `--baseline` in use for what it still covers, with its pins
    /// refreshed, dropping its stale entries).
    #[arg(long, value_name = "FILE")]
    pub write_baseline: Option<PathBuf>,
    /// Run one shard of the selection: `k/n` or `count:k/n` (round-robin over the sorted
    /// scenarios), `hash:k/n` (by a hash of each id). An isolation group stays in one shard.
    /// `conform report merge` joins the shards' JSON reports.
    #[arg(long, value_name = "SPEC")]
    pub partition: Option<crate::suite::partition::Partition>,
    /// Write a JUnit XML report here (for CI systems). Opened before anything runs.
    #[arg(long)]
    pub junit: Option<PathBuf>,
    /// Write a JSON report here. Opened before anything runs.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the HTML report into this folder (`index.html`: one self-contained page, no
    /// server, no network).
    #[arg(long, value_name = "DIR")]
    pub html: Option<PathBuf>,
    /// Which cases get a line on stderr as they end (`FAIL [ 1.2s] id (mode) [check] …`):
    /// `none`, `fail`, `pass` (passes too) or `all` (skips too).
    #[arg(long, value_enum, default_value_t, value_name = "LEVEL")]
    pub status_level: crate::report::style::StatusLevel,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Compare with a previous run's JSON report (`--json`): the terminal adds what failed
    /// since, what was fixed and the causes that are new, gone, grew or shrank, and the JSON
    /// and HTML reports carry it (`comparedWith`). Read before anything runs.
    #[arg(long, value_name = "PREV.json")]
    pub compare: Option<PathBuf>,
}

/// How the terminal shows a report, in nextest's spirit: the causes of failure first, then
/// each failure's detail (when `--failure-output` says), the closing list and the counts.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Colour: `auto` (on a terminal, unless NO_COLOR is set to something or TERM is dumb),
    /// `always` or `never`.
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    pub color: crate::report::style::ColorChoice,
    /// When a failure's detail is printed: `final` (in the report at the end), `immediate`
    /// (`conform run`: on stderr under its status line), `immediate-final` or `never` (the
    /// causes and the names say what failed; --json and --html keep every detail).
    #[arg(long, value_enum, default_value_t, value_name = "WHEN")]
    pub failure_output: crate::report::style::FailureOutput,
    /// What the report's closing list names: `none`, `fail` (the failed and known cases),
    /// `skip` (and why cases were skipped) or `all` (every case, one row each).
    #[arg(long, value_enum, default_value_t, value_name = "LEVEL")]
    pub final_status_level: crate::report::style::FinalStatusLevel,
}

/// Where pending snapshots are kept (`conform run` writes them, `conform review` reads them).
#[derive(Debug, Args)]
pub struct PendingArgs {
    /// The folder of pending snapshots: a run leaves each differing or missing snapshot there
    /// as `.snap.new` (unless `CI` is set or `INSTA_UPDATE` says otherwise), never in the
    /// snapshots folder; a folder conform creates ignores itself in git [default:
    /// `$CARGO_TARGET_DIR/conform/pending` if that is set, else `target/conform/pending`].
    #[arg(long, value_name = "DIR")]
    pub pending: Option<PathBuf>,
}

impl PendingArgs {
    /// The folder, resolved once for both commands.
    pub fn dir(&self) -> crate::snapshot::PendingDir {
        let root = self.pending.clone().unwrap_or_else(|| {
            crate::snapshot::pending::default_dir(std::env::var_os("CARGO_TARGET_DIR").as_deref())
        });
        crate::snapshot::PendingDir::new(root)
    }
}

#[derive(Debug, Args)]
pub struct ReviewArgs {
    #[command(flatten)]
    pub pending: PendingArgs,
    /// Only the pending snapshots of this snapshots folder [default: every folder a pending
    /// snapshot names].
    #[arg(long, value_name = "DIR")]
    pub snapshots: Option<PathBuf>,
    /// Only the pending snapshots whose scenario id contains this text (repeatable: any match),
    /// as `conform run --filter` selects.
    #[arg(long, short = 'f', value_name = "TEXT")]
    pub filter: Vec<String>,
    /// Write each as the stored snapshot (by rename, never through a link) and remove it from
    /// the pending folder; one whose stored snapshot changed since its run is refused.
    #[arg(long, conflicts_with = "reject")]
    pub accept: bool,
    /// Remove each from the pending folder.
    #[arg(long)]
    pub reject: bool,
}
