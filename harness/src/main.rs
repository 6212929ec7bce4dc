use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use conform::cli::{Cli, Command, default_dir};
use conform::{report, scenario, suite};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::FakeAcp { args } => conform_fakes::cli::main_with_args(
            Box::new(conform_fakes::acp::AcpCodec::new()),
            args,
            vec!["fake-acp".to_owned()],
        ),
        Command::Reference { args } => {
            ExitCode::from(conform_reference::main_with_args(args) as u8)
        }
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
            let opts = suite::Options {
                scenarios: args
                    .select
                    .scenarios
                    .unwrap_or_else(|| default_dir("scenarios")),
                filters: args.select.filter,
                subject: args.subject,
                snapshots: args.snapshots.unwrap_or_else(|| default_dir("snapshots")),
                accept: args.accept,
                jobs: args.jobs,
                deadline: Duration::from_millis(args.deadline_ms),
                progress: std::io::stderr().is_terminal(),
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
