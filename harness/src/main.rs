use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use conform::cli::DriftArgs;
use conform::cli::{Cli, Command, default_dir};
use conform::{drift, report, scenario, suite};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::FakeAcp { args } => conform_fakes::cli::main_with_args(
            Box::new(conform_fakes::acp::AcpCodec::new()),
            args,
            vec!["fake-acp".to_owned()],
        ),
        Command::FakeDshSdk { args } => conform_fakes::cli::main_with_args(
            Box::new(conform_fakes::dsh_sdk::DshSdkCodec::new()),
            args,
            vec!["fake-dsh-sdk".to_owned()],
        ),
        Command::FakeCodex { args } => conform_fakes::cli::main_with_args(
            Box::new(conform_fakes::codex::CodexCodec::new()),
            args,
            vec!["fake-codex".to_owned()],
        ),
        Command::Reference { args } => {
            ExitCode::from(conform_reference::main_with_args(args) as u8)
        }
        Command::Drift(args) => drift(args),
        Command::Schema { which } => {
            let schema = if which == "scenario" {
                scenario::json_schema()
            } else {
                serde_json::from_str(conform::subject::SCHEMA_TEXT).expect("schema is JSON")
            };
            println!(
                "{}",
                serde_json::to_string_pretty(&schema).expect("serialises")
            );
            ExitCode::SUCCESS
        }
        Command::List(sel) => {
            let dir = sel.scenarios.unwrap_or_else(|| default_dir("scenarios"));
            match suite::select(&dir, &sel.filter) {
                Ok(list) => {
                    for s in list {
                        let modes: Vec<_> = s.file.modes.iter().map(|m| m.as_str()).collect();
                        println!("{}  [{}]  {}", s.id, modes.join(", "), s.file.title);
                    }
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
            }
        }
        Command::Run(args) => {
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("error: cannot start the async runtime: {e}");
                    return ExitCode::from(2);
                }
            };
            let mut product_versions = std::collections::BTreeMap::new();
            for pv in &args.product_version {
                match pv.split_once('=') {
                    Some((p, v)) if !p.is_empty() && !v.is_empty() => {
                        product_versions.insert(p.to_owned(), v.to_owned());
                    }
                    _ => {
                        eprintln!("error: --product-version takes PROVIDER=VERSION, got `{pv}`");
                        return ExitCode::from(2);
                    }
                }
            }
            let snapshots = args.snapshots.unwrap_or_else(|| default_dir("snapshots"));
            // `--accept` creates the folder when it records the first snapshot.
            if !args.accept && !snapshots.is_dir() {
                let why = if snapshots.exists() {
                    "is not a folder"
                } else {
                    "does not exist (`--accept` creates it)"
                };
                eprintln!("error: the snapshot folder {} {why}", snapshots.display());
                return ExitCode::from(2);
            }
            let opts = suite::Options {
                scenarios: args
                    .select
                    .scenarios
                    .unwrap_or_else(|| default_dir("scenarios")),
                filters: args.select.filter,
                subject: args.subject,
                snapshots,
                accept: args.accept,
                jobs: args.jobs,
                deadline: Duration::from_millis(args.deadline_ms),
                progress: std::io::stderr().is_terminal(),
                product_versions,
            };
            match runtime.block_on(suite::run(opts)) {
                Ok(report) => {
                    print!("{}", report::human(&report, args.verbose));
                    if let Some(path) = &args.json
                        && let Err(e) = std::fs::write(
                            path,
                            serde_json::to_string_pretty(&report::json(&report)).expect("json"),
                        )
                    {
                        eprintln!("error: cannot write {}: {e}", path.display());
                        return ExitCode::from(2);
                    }
                    if let Some(path) = &args.junit {
                        let xml = match report::junit(&report) {
                            Ok(x) => x,
                            Err(e) => {
                                eprintln!("error: cannot render the JUnit report: {e}");
                                return ExitCode::from(2);
                            }
                        };
                        if let Err(e) = std::fs::write(path, xml) {
                            eprintln!("error: cannot write {}: {e}", path.display());
                            return ExitCode::from(2);
                        }
                    }
                    ExitCode::from(report.exit_code() as u8)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    ExitCode::from(2)
                }
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
                return ExitCode::from(2);
            }
        },
    };
    let (label, actual) = match (&args.bin, &args.schema) {
        (Some(bin), _) => {
            let work = match tempfile::tempdir() {
                Ok(w) => w,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
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
            print!("{}", drift::render(pinned.version, &label, &actual, &d));
            ExitCode::from(u8::from(!d.is_empty()))
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
