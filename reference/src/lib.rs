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
mod leak;
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
use conform_protocol::subject::{
    FromSubject, Mode, RunControl, StartError, SubjectInfo, ToSubject,
};
use conform_protocol::vocab::Provider;
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::cli::Defects;
use crate::run::{Control, StartParams};
use crate::writer::Out;

pub use crate::cli::{DEFECTS, DefectInfo};

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

/// The subject: one message from the harness at a time, until `shutdown` or stdin EOF; then
/// every run still going is shut down and awaited.
async fn serve(defects: Defects) -> anyhow::Result<i32> {
    process::become_reaper(defects.reap_orphans_late);
    let mut subject = Subject {
        out: writer::start(defects.crash_after_dispatch),
        defects,
        first_dispatch: Arc::new(AtomicBool::new(false)),
        runs: HashMap::new(),
        next_job: 1,
        next_job_of: HashMap::new(),
    };
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    while let Some(msg) = next_message(&mut lines).await {
        if subject.on_message(msg) == Flow::Stop {
            break;
        }
    }
    subject.shut_down().await;
    Ok(0)
}

/// The next message from the harness (blank and malformed lines skipped, noted on stderr);
/// `None` at stdin EOF or a failed read.
async fn next_message(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
) -> Option<ToSubject> {
    loop {
        let line = match lines.next_line().await {
            Ok(Some(line)) => line,
            Ok(None) => return None,
            Err(e) => {
                eprintln!("conform-reference: stdin read failed: {e}");
                return None;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(&line) {
            Ok(m) => return Some(m),
            Err(e) => {
                eprintln!("conform-reference: ignoring malformed line ({e}): {line}");
            }
        }
    }
}

#[derive(PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

/// The subject's dispatcher: it owns the runs and the job numbering; each run's host task
/// reports on stdout itself.
struct Subject {
    out: Out,
    defects: Defects,
    first_dispatch: Arc<AtomicBool>,
    runs: HashMap<String, RunEntry>,
    next_job: u64,
    /// Only the `job-id-per-provider` defect counts per provider.
    next_job_of: HashMap<Provider, u64>,
}

impl Subject {
    /// One message from the harness; [`Flow::Stop`] at `shutdown`.
    fn on_message(&mut self, msg: ToSubject) -> Flow {
        let defects = self.defects;
        match msg {
            ToSubject::Hello { protocol } => self.hello(&protocol),
            ToSubject::Start {
                run,
                provider,
                mode,
                label,
                task,
                runtime,
                config,
                expected_by,
                aborted,
            } => self.start(StartParams {
                run,
                provider,
                mode,
                label,
                task,
                runtime,
                config,
                expected_by,
                aborted,
                job: None,
            }),
            ToSubject::Cancel { run } if defects.cancel_every_run => {
                // The other runs' signals are raised here, before the named run even hears of
                // its cancel: a run the cancel leaks into cannot finish first by scheduling luck.
                for (id, entry) in &self.runs {
                    if *id != run {
                        entry.cancel.send_replace(true);
                    }
                }
                self.forward(run, Control::Cancel);
            }
            ToSubject::Cancel { run } => self.forward(run, Control::Cancel),
            ToSubject::Dispose { run } => self.forward(run, Control::Dispose),
            ToSubject::JobOutput { run, wait } => self.forward(run, Control::JobOutput { wait }),
            ToSubject::Shutdown => return Flow::Stop,
        }
        Flow::Continue
    }

    /// The answer to `hello`: our protocol, name and version, providers and modes.
    fn hello(&self, protocol: &str) {
        if protocol != SUBJECT_PROTOCOL {
            eprintln!("conform-reference: harness speaks {protocol}, we speak {SUBJECT_PROTOCOL}");
        }
        self.out.send(FromSubject::Hello {
            protocol: SUBJECT_PROTOCOL.into(),
            subject: SubjectInfo {
                name: "conform-reference".into(),
                version: env!("CARGO_PKG_VERSION").into(),
            },
            providers: run::PROVIDERS.iter().map(|p| p.to_string()).collect(),
            modes: Mode::ALL.to_vec(),
            controls: vec![RunControl::Dispose],
            // The reference is built against no one version: it follows what the fakes speak.
            product_versions: Default::default(),
        });
    }

    /// The next background job's id (`subagent-<n>`).
    fn job_id(&mut self, provider: Provider) -> String {
        if self.defects.job_id_per_provider {
            let n = self.next_job_of.entry(provider).or_insert(1);
            *n += 1;
            return format!("subagent-{}", *n - 1);
        }
        let id = format!("subagent-{}", self.next_job);
        if !self.defects.reuse_job_id {
            self.next_job += 1;
        }
        id
    }

    /// A `start`: its run's host task (a background one numbered as the next job), unless the
    /// run id is taken.
    fn start(&mut self, mut params: StartParams) {
        if self.runs.contains_key(&params.run) {
            self.out.send(FromSubject::StartRejected {
                run: params.run,
                error: StartError {
                    name: "SubjectError".into(),
                    message: "run id already in use".into(),
                },
            });
            return;
        }
        params.job = (params.mode == Mode::Background).then(|| self.job_id(params.provider));
        let run = params.run.clone();
        let (tx, rx) = mpsc::unbounded_channel();
        // The tool call's signal: already aborted when the start says so (a cancel that came
        // before it), which the provider reads before it spawns anything.
        let cancel = Arc::new(tokio::sync::watch::Sender::new(params.aborted));
        let task = tokio::spawn(run::host_run(
            params,
            rx,
            cancel.clone(),
            self.out.clone(),
            self.defects,
            self.first_dispatch.clone(),
        ));
        self.runs.insert(
            run,
            RunEntry {
                control: tx,
                cancel,
                task,
            },
        );
    }

    fn forward(&self, run: String, control: Control) {
        match self.runs.get(&run) {
            Some(entry) => {
                let _ = entry.control.send(control);
            }
            None => self.out.send(FromSubject::HostLog {
                text: format!("no run with this id ({control:?} ignored)"),
                run,
            }),
        }
    }

    /// Shutdown or stdin EOF: cancel and dispose everything still running, wait for it.
    async fn shut_down(mut self) {
        for entry in self.runs.values() {
            let _ = entry.control.send(Control::Shutdown);
        }
        for (_, entry) in self.runs.drain() {
            let _ = entry.task.await;
        }
        self.out.flush().await;
    }
}
