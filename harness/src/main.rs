use std::fs::File;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use conform::cli::DriftArgs;
use conform::cli::{Cli, Command, default_dir};
use conform::cmd::drift;
use conform::report::terminal;
use conform::suite::exit;
use conform::{report, scenario, suite};

/// Writes `text` to stdout. A reader that went away (`conform list | head -1`) is not an
/// error: the rest of the output is simply not wanted. Any other failure is exit 2.
fn out(text: &str) -> Result<(), ExitCode> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            Err(code(exit::ERROR))
        }
    }
}

/// A report file opened before the run, so that an unwritable path is found before anything
/// runs. It is only truncated when the report is written; if the run ends without a report,
/// a file the open created is removed again.
struct ReportFile {
    path: PathBuf,
    file: File,
    created: bool,
}

impl ReportFile {
    fn open(path: &Path) -> Result<Self, ExitCode> {
        let existed = path.symlink_metadata().is_ok();
        match File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
        {
            Ok(file) => Ok(Self {
                path: path.to_owned(),
                file,
                created: !existed,
            }),
            Err(e) => {
                eprintln!("error: cannot write {}: {e}", path.display());
                Err(code(exit::ERROR))
            }
        }
    }

    fn write(mut self, contents: &[u8]) -> Result<(), ExitCode> {
        // Not for `/dev/stdout` or a pipe, which cannot be truncated.
        let regular = self.file.metadata().is_ok_and(|m| m.is_file());
        let written = (if regular {
            self.file.set_len(0)
        } else {
            Ok(())
        })
        .and_then(|()| self.file.write_all(contents))
        .and_then(|()| self.file.flush());
        written.map_err(|e| {
            eprintln!("error: cannot write {}: {e}", self.path.display());
            code(exit::ERROR)
        })
    }

    fn discard(self) {
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn main() -> ExitCode {
    // One malloc arena per core rather than glibc's eight: the harness, the reference and the
    // fakes are all this binary, and their threads' arenas kept freed memory resident (the
    // harness's peak RSS over the catalog went from 56 to 46 MiB; docs/performance.md).
    // SAFETY: mallopt only sets an allocator parameter, before any thread is started.
    unsafe {
        nix::libc::mallopt(nix::libc::M_ARENA_MAX, 2);
    }
    let cli = Cli::parse();
    match cli.command {
        Command::Fake { provider, args } => conform_fakes::cli::main_with_args(
            conform_fakes::codec::for_provider(provider),
            args,
            vec!["fake".to_owned(), provider.to_string()],
        ),
        Command::PeerProxy { args } => conform_fakes::peer::main_with_args(args),
        Command::MockModel { args } => conform_fakes::model::main_with_args(args),
        Command::Reference { args } => code(conform_reference::main_with_args(args)),
        Command::CgroupExec { dir, command } => {
            code(conform::proc::cgroup::join_and_exec(&dir, &command))
        }
        Command::Drift(args) => drift(args),
        Command::Report(args) => merge_reports(args),
        Command::SelfTest(args) => self_test(args),
        Command::Bench(args) => bench(args),
        Command::Redaction(args) => redaction(args),
        Command::Peers(args) => {
            let opts = conform::differential::DiffOptions {
                scenarios: default_dir("scenarios"),
                snapshots: default_dir("snapshots"),
                fixtures: args
                    .fixtures
                    .unwrap_or_else(|| default_dir("fakes").join("peers")),
                peers: args.peers,
                update: args.update,
            };
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return code(exit::ERROR);
                }
            };
            match runtime.block_on(conform::differential::diff(opts)) {
                Ok(c) => code(c),
                Err(e) => {
                    eprintln!("error: {e}");
                    code(exit::ERROR)
                }
            }
        }
        Command::Schema { which } => {
            let schema = if which == "scenario" {
                scenario::json_schema()
            } else {
                conform_protocol::subject::json_schema()
            };
            let text = serde_json::to_string_pretty(&schema).expect("serialises");
            match out(&format!("{text}\n")) {
                Ok(()) => ExitCode::SUCCESS,
                Err(code) => code,
            }
        }
        Command::List(args) if args.checks => match out(&checks_table()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(code) => code,
        },
        Command::List(args) => {
            let sel = args.select;
            let dir = sel.scenarios.unwrap_or_else(|| default_dir("scenarios"));
            match suite::select(&dir, &sel.filter) {
                Ok(list) => {
                    let mut text = String::new();
                    for s in list {
                        let modes: Vec<_> = s.file.modes.iter().map(|m| m.as_str()).collect();
                        text.push_str(&format!(
                            "{}  [{}]  {}\n",
                            s.id,
                            modes.join(", "),
                            s.file.title
                        ));
                    }
                    match out(&text) {
                        Ok(()) => ExitCode::SUCCESS,
                        Err(code) => code,
                    }
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    code(exit::ERROR)
                }
            }
        }
        Command::Run(args) => {
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return code(exit::ERROR);
                }
            };
            let mut product_versions = std::collections::BTreeMap::new();
            for pv in &args.product_version {
                match pv.split_once('=') {
                    Some((p, v)) if !v.is_empty() => match p.parse() {
                        Ok(provider) => {
                            product_versions.insert(provider, v.to_owned());
                        }
                        Err(e) => {
                            eprintln!("error: --product-version {pv}: {e}");
                            return code(exit::ERROR);
                        }
                    },
                    _ => {
                        eprintln!("error: --product-version takes PROVIDER=VERSION, got `{pv}`");
                        return code(exit::ERROR);
                    }
                }
            }
            // From here on a signal stops the suite in order (a report of what finished).
            let interrupt = {
                let _in_runtime = runtime.enter();
                match conform::proc::interrupt::listen() {
                    Ok(i) => i,
                    Err(e) => {
                        eprintln!("error: cannot listen for signals: {e}");
                        return code(exit::ERROR);
                    }
                }
            };
            let baseline = match args
                .baseline
                .as_deref()
                .map(conform::report::baseline::Baseline::load)
            {
                None => None,
                Some(Ok(b)) => Some(b),
                Some(Err(e)) => {
                    eprintln!("error: {e}");
                    return code(exit::ERROR);
                }
            };
            let snapshots = args.snapshots.unwrap_or_else(|| default_dir("snapshots"));
            // `--accept` creates the folder when it records the first snapshot.
            if !args.accept && !snapshots.is_dir() {
                let why = if snapshots.exists() {
                    "is not a folder"
                } else {
                    "does not exist (`--accept` creates it)"
                };
                eprintln!("error: the snapshot folder {} {why}", snapshots.display());
                return code(exit::ERROR);
            }
            let json_file = match args.json.as_deref().map(ReportFile::open).transpose() {
                Ok(f) => f,
                Err(code) => return code,
            };
            let junit_file = match args.junit.as_deref().map(ReportFile::open).transpose() {
                Ok(f) => f,
                Err(code) => {
                    if let Some(f) = json_file {
                        f.discard();
                    }
                    return code;
                }
            };
            let baseline_file = match args
                .write_baseline
                .as_deref()
                .map(ReportFile::open)
                .transpose()
            {
                Ok(f) => f,
                Err(code) => {
                    for f in [json_file, junit_file].into_iter().flatten() {
                        f.discard();
                    }
                    return code;
                }
            };
            let opts = suite::Options {
                filters: args.select.filter,
                subject: args.subject,
                accept: args.accept,
                jobs: args.jobs,
                deadline: Duration::from_millis(args.deadline_ms),
                expected_by: args.expected_by_ms.map(Duration::from_millis),
                progress: std::io::stderr().is_terminal(),
                product_versions,
                hello_timeout: Duration::from_millis(args.hello_timeout_ms),
                allow_skips: args.allow_skips,
                peers: args.peers,
                interrupt,
                keep_passing_ledgers: args.verbose,
                cgroup: args.cgroup,
                cgroup_parent: args.cgroup_parent,
                baseline,
                partition: args.partition,
                ..suite::Options::new(
                    args.select
                        .scenarios
                        .unwrap_or_else(|| default_dir("scenarios")),
                    snapshots,
                )
            };
            let report = match runtime.block_on(suite::run(opts)) {
                Ok(report) => report,
                Err(e) => {
                    for f in [json_file, junit_file, baseline_file].into_iter().flatten() {
                        f.discard();
                    }
                    eprintln!("error: {e}");
                    return code(exit::ERROR);
                }
            };
            if let Some(file) = baseline_file
                && let Err(code) = file.write(conform::report::baseline::write(&report).as_bytes())
            {
                return code;
            }
            // Subject text is shown on a terminal: escaped. The JSON and JUnit reports are exact.
            let shown = out(&terminal::escape_controls(&report::human(
                &report,
                args.verbose,
            )));
            if let Some(file) = json_file {
                let json = serde_json::to_string_pretty(&report::json(&report)).expect("json");
                if let Err(code) = file.write(json.as_bytes()) {
                    return code;
                }
            }
            if let Some(file) = junit_file {
                let xml = match report::junit(&report) {
                    Ok(x) => x,
                    Err(e) => {
                        eprintln!("error: cannot render the JUnit report: {e}");
                        return code(exit::ERROR);
                    }
                };
                if let Err(code) = file.write(xml.as_bytes()) {
                    return code;
                }
            }
            match shown {
                Ok(()) => code(report.exit_code()),
                Err(code) => code,
            }
        }
    }
}

fn drift(args: DriftArgs) -> ExitCode {
    let pinned = match args.against.as_deref() {
        None => conform_protocol::codex::PINNED,
        Some(v) => match conform_protocol::codex::by_version(v) {
            Some(p) => p,
            None => {
                eprintln!("error: conform knows no Codex vocabulary for version {v}");
                return code(exit::ERROR);
            }
        },
    };
    let (label, actual) = match (&args.bin, &args.schema) {
        (Some(bin), _) => {
            let work = match tempfile::tempdir() {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("error: {e}");
                    return code(exit::ERROR);
                }
            };
            (
                bin.display().to_string(),
                drift::from_binary(bin, work.path()),
            )
        }
        (None, Some(path)) => (
            path.display().to_string(),
            std::fs::read_to_string(path)
                .map_err(|e| drift::DriftError::Schema(format!("{}: {e}", path.display())))
                .and_then(|t| {
                    serde_json::from_str(&t)
                        .map_err(|e| drift::DriftError::Schema(format!("{}: {e}", path.display())))
                })
                .and_then(|v| drift::from_schema(&v)),
        ),
        (None, None) => unreachable!("clap requires --bin or --schema"),
    };
    match actual {
        Ok(actual) => {
            let d = drift::compare(&pinned.into(), &actual);
            match out(&drift::render(pinned.version, &label, &actual, &d)) {
                Ok(()) => code(if d.is_empty() { exit::PASS } else { exit::FAIL }),
                Err(code) => code,
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            code(exit::ERROR)
        }
    }
}

/// `conform list --checks`: one line per check — id, requirement, source.
fn checks_table() -> String {
    use conform::checks::Check;
    let width = Check::ALL.iter().map(|c| c.id().len()).max().unwrap_or(0);
    Check::ALL
        .iter()
        .map(|c| {
            format!(
                "{:<width$}  {}  [{}]\n",
                c.id(),
                c.requirement(),
                c.source()
            )
        })
        .collect()
}

/// `conform bench`: the figures of `ci/bench`.
fn bench(args: conform::cli::BenchArgs) -> ExitCode {
    let plan = conform::cmd::bench::Plan {
        scenarios: default_dir("scenarios"),
        snapshots: default_dir("snapshots"),
        jobs: args.jobs,
        repeat: args.repeat.max(1),
        redaction_cases: args.redaction_cases.max(1),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return code(exit::ERROR);
        }
    };
    let started = std::time::Instant::now();
    let progress = |what: &str| eprintln!("[{:>4.0} s] {what}", started.elapsed().as_secs_f64());
    match runtime.block_on(conform::cmd::bench::run(&plan, progress)) {
        Ok(table) => match out(&table) {
            Ok(()) => ExitCode::SUCCESS,
            Err(c) => c,
        },
        Err(e) => {
            eprintln!("error: {e}");
            code(exit::ERROR)
        }
    }
}

/// `conform self-test`: the kill matrix of the reference's seeded defects.
fn self_test(args: conform::cli::SelfTestArgs) -> ExitCode {
    let plan = conform::cmd::self_test::Plan {
        scenarios: args.scenarios.unwrap_or_else(|| default_dir("scenarios")),
        snapshots: args.snapshots.unwrap_or_else(|| default_dir("snapshots")),
        jobs: args.jobs,
        only: args.only,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return code(exit::ERROR);
        }
    };
    let started = std::time::Instant::now();
    let progress = |name: &str| eprintln!("[{:>4.0} s] {name}", started.elapsed().as_secs_f64());
    match runtime.block_on(conform::cmd::self_test::run(&plan, progress)) {
        Ok(m) => match out(&conform::cmd::self_test::render(&m)) {
            Ok(()) => code(if m.passed() { exit::PASS } else { exit::FAIL }),
            Err(c) => c,
        },
        Err(e) => {
            eprintln!("error: {e}");
            code(exit::ERROR)
        }
    }
}

/// `conform report merge`: one report, one JUnit file and one exit code from the shards'.
fn merge_reports(args: conform::cli::ReportArgs) -> ExitCode {
    let merged = match conform::report::merge::merge_files(&args.reports) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {e}");
            return code(exit::ERROR);
        }
    };
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&merged).expect("json");
        if let Err(c) = ReportFile::open(path).and_then(|f| f.write(json.as_bytes())) {
            return c;
        }
    }
    if let Some(path) = &args.junit {
        let xml = match report::junit_from_json(&merged) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: cannot render the JUnit report: {e}");
                return code(exit::ERROR);
            }
        };
        if let Err(c) = ReportFile::open(path).and_then(|f| f.write(xml.as_bytes())) {
            return c;
        }
    }
    match out(&terminal::escape_controls(&report::summary_from_json(
        &merged,
    ))) {
        Ok(()) => code(merged["exitCode"].as_i64().unwrap_or(exit::ERROR as i64) as i32),
        Err(c) => c,
    }
}

/// A process exit code from one of conform's named codes (`suite::exit`).
fn code(c: i32) -> ExitCode {
    ExitCode::from(u8::try_from(c).unwrap_or(u8::MAX))
}

/// `conform redaction`: the redaction property against a subject.
fn redaction(args: conform::cli::RedactionArgs) -> ExitCode {
    let opts = suite::Options {
        filters: args.select.filter,
        subject: args.subject,
        jobs: args.jobs,
        progress: std::io::stderr().is_terminal(),
        // Generated variants must match the stored snapshots as they are.
        pending_snapshots: false,
        ..suite::Options::new(
            args.select
                .scenarios
                .unwrap_or_else(|| default_dir("scenarios")),
            default_dir("snapshots"),
        )
    };
    let plan = conform::cmd::redaction::Plan {
        cases: args.cases,
        seed: args.seed,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return code(exit::ERROR);
        }
    };
    let started = std::time::Instant::now();
    match runtime.block_on(conform::cmd::redaction::run(&opts, &plan)) {
        Ok(outcome) => {
            let text = conform::cmd::redaction::render(&outcome, &plan, started.elapsed());
            match out(&text) {
                Ok(()) if outcome.failures.is_empty() => code(exit::PASS),
                Ok(()) => code(exit::FAIL),
                Err(c) => c,
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            code(exit::ERROR)
        }
    }
}
