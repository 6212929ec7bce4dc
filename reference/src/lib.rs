//! `conform-reference`: the reference subject. Speaks `conform-subject/1` on stdin/stdout and
//! hosts one provider run (ACP, DSH SDK, Codex or Claude Code) per `start` (see `conform-reference --help`).

mod acp;
mod claude_code;
mod cli;
mod codex;
mod diagnostic;
mod driver;
mod dsh_sdk;
mod host;
mod jsonrpc;
mod process;
mod product;
mod provider;
mod run;
mod util;
mod writer;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Context;
use conform_protocol::SUBJECT_PROTOCOL;
use conform_protocol::subject::{FromSubject, Mode, StartError, SubjectInfo, ToSubject};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cli::Defects;
use crate::run::{Control, StartParams};
use crate::writer::Out;

/// Every seeded defect: its `--defect` name and its one line of help, in declaration order
/// (`conform self-test` runs the catalog against each).
pub fn defects() -> Vec<(String, String)> {
    use clap::ValueEnum;
    cli::Defect::value_variants()
        .iter()
        .filter_map(|d| d.to_possible_value())
        .map(|v| {
            let help = v.get_help().map(|h| h.to_string()).unwrap_or_default();
            (v.get_name().to_owned(), help)
        })
        .collect()
}

/// Runs the reference subject with these arguments (without the program name) and returns
/// the process exit code. Shared by the `conform-reference` binary and `conform reference`.
pub fn main_with_args(args: Vec<String>) -> i32 {
    use clap::Parser;
    let cli =
        match cli::Cli::try_parse_from(std::iter::once("conform-reference".to_owned()).chain(args))
        {
            Ok(c) => c,
            Err(e) => {
                // --help and --version land here too (exit 0); usage errors exit 2.
                let _ = e.print();
                return e.exit_code();
            }
        };
    let defects = cli::Defects::from_list(&cli.defects);
    let code = match tokio::runtime::Runtime::new()
        .context("starting the tokio runtime")
        .and_then(|rt| rt.block_on(serve(defects)))
    {
        Ok(code) => code,
        Err(e) => {
            eprintln!("conform-reference: {e:#}");
            1
        }
    };
    // Exit without dropping the runtime: the blocking stdin reader thread may still be parked
    // in read(2), and every run has already been disposed.
    std::process::exit(code);
}

struct RunEntry {
    control: mpsc::UnboundedSender<Control>,
    /// The run's local-cancel signal (set by its host task on `Control::Cancel`).
    cancel: Arc<tokio::sync::watch::Sender<bool>>,
    task: JoinHandle<()>,
}

async fn serve(defects: Defects) -> anyhow::Result<i32> {
    process::become_reaper(defects.reap_orphans_late);
    let out = writer::start(defects.crash_after_dispatch);
    let first_dispatch = Arc::new(AtomicBool::new(false));
    let mut runs: HashMap<String, RunEntry> = HashMap::new();
    let mut next_job = 1u64;
    // Only the `job-id-per-provider` defect counts per provider.
    let mut next_job_of: HashMap<conform_protocol::vocab::Provider, u64> = HashMap::new();
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();

    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(e) => {
                eprintln!("conform-reference: stdin read failed: {e}");
                break;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let msg: ToSubject = match serde_json::from_str(&line) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("conform-reference: ignoring malformed line ({e}): {line}");
                continue;
            }
        };
        match msg {
            ToSubject::Hello { protocol } => {
                if protocol != SUBJECT_PROTOCOL {
                    eprintln!(
                        "conform-reference: harness speaks {protocol}, we speak {SUBJECT_PROTOCOL}"
                    );
                }
                out.send(FromSubject::Hello {
                    protocol: SUBJECT_PROTOCOL.into(),
                    subject: SubjectInfo {
                        name: "conform-reference".into(),
                        version: env!("CARGO_PKG_VERSION").into(),
                    },
                    providers: run::PROVIDERS.iter().map(|p| p.to_string()).collect(),
                    modes: Mode::ALL.to_vec(),
                });
            }
            ToSubject::Start {
                run,
                provider,
                mode,
                label,
                task,
                runtime,
                config,
                expected_by,
            } => {
                if runs.contains_key(&run) {
                    out.send(FromSubject::StartRejected {
                        run,
                        error: StartError {
                            name: "SubjectError".into(),
                            message: "run id already in use".into(),
                        },
                    });
                    continue;
                }
                let job = (mode == Mode::Background).then(|| {
                    if defects.job_id_per_provider {
                        let n = next_job_of.entry(provider).or_insert(1);
                        *n += 1;
                        return format!("subagent-{}", *n - 1);
                    }
                    let id = format!("subagent-{next_job}");
                    if !defects.reuse_job_id {
                        next_job += 1;
                    }
                    id
                });
                let (tx, rx) = mpsc::unbounded_channel();
                let cancel = Arc::new(tokio::sync::watch::Sender::new(false));
                let params = StartParams {
                    run: run.clone(),
                    provider,
                    mode,
                    label,
                    task,
                    runtime,
                    config,
                    expected_by,
                    job,
                };
                let task = tokio::spawn(run::host_run(
                    params,
                    rx,
                    cancel.clone(),
                    out.clone(),
                    defects,
                    first_dispatch.clone(),
                ));
                runs.insert(
                    run,
                    RunEntry {
                        control: tx,
                        cancel,
                        task,
                    },
                );
            }
            ToSubject::Cancel { run } if defects.cancel_every_run => {
                // The other runs' signals are raised here, before the named run even hears of
                // its cancel: a run the cancel leaks into cannot finish first by scheduling luck.
                for (id, entry) in &runs {
                    if *id != run {
                        entry.cancel.send_replace(true);
                    }
                }
                forward(&runs, &out, run, Control::Cancel);
            }
            ToSubject::Cancel { run } => forward(&runs, &out, run, Control::Cancel),
            ToSubject::JobOutput { run, wait } => {
                forward(&runs, &out, run, Control::JobOutput { wait })
            }
            ToSubject::Shutdown => break,
        }
    }

    // Shutdown or stdin EOF: cancel and dispose everything still running, wait for it.
    for entry in runs.values() {
        let _ = entry.control.send(Control::Shutdown);
    }
    for (_, entry) in runs.drain() {
        let _ = entry.task.await;
    }
    out.flush().await;
    Ok(0)
}

fn forward(runs: &HashMap<String, RunEntry>, out: &Out, run: String, control: Control) {
    match runs.get(&run) {
        Some(entry) => {
            let _ = entry.control.send(control);
        }
        None => out.send(FromSubject::HostLog {
            text: format!("no run with this id ({control:?} ignored)"),
            run,
        }),
    }
}
