//! One run on the host side: ties the harness's control messages (`cancel`, `dispose`,
//! `job_output`, shutdown) and the provider's events to the subject messages, in the host's order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use conform_protocol::subject::{FromSubject, Mode, Runtime, StartError};
use conform_protocol::vocab::Provider;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, watch};

use crate::cli::Defects;
use crate::driver::drive;
use crate::host::{self, JobOutcome, SubagentResult};
use crate::provider::{self, ProviderEvent, RunSpec};
use crate::writer::Out;
use crate::{acp, claude_code, codex, dsh_sdk};

#[derive(Debug)]
pub enum Control {
    /// Local cancellation (foreground abort / `job_kill`).
    Cancel,
    /// The host's own dispose of the run handle (not through the tool call's signal).
    Dispose,
    JobOutput {
        wait: bool,
    },
    /// Subject shutdown: cancel, dispose, deliver nothing more than the run's own events.
    Shutdown,
}

pub struct StartParams {
    pub run: String,
    pub provider: Provider,
    pub mode: Mode,
    pub label: String,
    pub task: String,
    pub runtime: Runtime,
    pub config: Map<String, Value>,
    pub expected_by: String,
    /// The tool call's signal is already aborted when `start()` is called.
    pub aborted: bool,
    /// The job id (background only).
    pub job: Option<String>,
}

struct Host {
    run: String,
    out: Out,
    /// `hang-after-dispatch` is active for this run: say nothing more.
    hung: bool,
    defects: Defects,
}

impl Host {
    fn emit(&self, msg: FromSubject) {
        if !self.hung {
            self.out.send(msg);
        }
    }

    fn log(&self, text: String) {
        self.emit(FromSubject::HostLog {
            run: self.run.clone(),
            text,
        });
    }

    fn tool_result(&self, (is_error, text): (bool, String)) {
        self.emit(FromSubject::ToolResult {
            run: self.run.clone(),
            is_error,
            text,
        });
    }

    fn job_output(&self, outcome: Option<&JobOutcome>) {
        if self.defects.no_job_output_answer {
            return;
        }
        let mut text = host::job_output_text(outcome);
        if self.defects.job_output_status_without_detail
            && let Some(JobOutcome::Failed { .. }) = outcome
        {
            text = "(no new output)\n[status: failed]".into();
        }
        if self.defects.crlf_output
            && let Some(JobOutcome::Completed { .. }) = outcome
        {
            text = text.replace('\n', "\r\n");
        }
        let answer = FromSubject::JobOutput {
            run: self.run.clone(),
            text,
        };
        if self.defects.job_output_twice {
            self.emit(answer.clone());
        }
        self.emit(answer);
    }
}

/// Drive one run until its provider finished and (for jobs) until shutdown: start the provider,
/// follow it to its end, then deliver the job and answer its later reads.
pub async fn host_run(
    p: StartParams,
    control: mpsc::UnboundedReceiver<Control>,
    cancel_tx: Arc<watch::Sender<bool>>,
    out: Out,
    defects: Defects,
    first_dispatch: Arc<AtomicBool>,
) {
    let hung_flag = Arc::new(AtomicBool::new(false));
    let log = host_log(&out, &p.run, &hung_flag);
    let events = start_provider(&p, defects, log, cancel_tx.subscribe());
    let mut run = HostedRun {
        host: Host {
            run: p.run.clone(),
            out,
            hung: false,
            defects,
        },
        p,
        defects,
        control,
        control_open: true,
        cancel_tx,
        first_dispatch,
        hung_flag,
        cancel_requested: false,
        shutdown: false,
        waiters: 0,
        result: None,
        outcome: None,
    };
    run.announce_job();
    run.follow(events).await;
    run.finish_job().await;
}

/// The provider's host log: `host_log` lines of this run, silent once the run hangs.
fn host_log(out: &Out, run: &str, hung: &Arc<AtomicBool>) -> provider::Log {
    let out = out.clone();
    let run = run.to_owned();
    let hung = hung.clone();
    Arc::new(move |text| {
        if !hung.load(Ordering::SeqCst) {
            out.send(FromSubject::HostLog {
                run: run.clone(),
                text,
            });
        }
    })
}

/// Spawns the run's provider (its driver task); the events it reports.
fn start_provider(
    p: &StartParams,
    defects: Defects,
    log: provider::Log,
    cancel_rx: watch::Receiver<bool>,
) -> mpsc::UnboundedReceiver<ProviderEvent> {
    let (ev_tx, events) = mpsc::unbounded_channel();
    let spec = RunSpec {
        task: p.task.clone(),
        runtime: p.runtime.clone(),
        config: p.config.clone(),
    };
    match p.provider {
        Provider::Acp => tokio::spawn(drive::<acp::AcpRun>(spec, defects, log, cancel_rx, ev_tx)),
        Provider::DshSdk => tokio::spawn(drive::<dsh_sdk::DshRun>(
            spec, defects, log, cancel_rx, ev_tx,
        )),
        Provider::Codex => tokio::spawn(drive::<codex::CodexRun>(
            spec, defects, log, cancel_rx, ev_tx,
        )),
        Provider::ClaudeCode => tokio::spawn(drive::<claude_code::ClaudeCodeRun>(
            spec, defects, log, cancel_rx, ev_tx,
        )),
    };
    events
}

/// One run on the host side: it owns what the host has heard so far; the provider task only
/// reports events, and the harness's control messages arrive beside them.
struct HostedRun {
    p: StartParams,
    host: Host,
    defects: Defects,
    control: mpsc::UnboundedReceiver<Control>,
    /// The harness can still send control messages (its channel is not closed).
    control_open: bool,
    cancel_tx: Arc<watch::Sender<bool>>,
    first_dispatch: Arc<AtomicBool>,
    /// The provider's log falls silent with the host (`hang-after-dispatch`).
    hung_flag: Arc<AtomicBool>,
    /// A local cancel (`job_kill`) was asked for.
    cancel_requested: bool,
    /// Subject shutdown (or the harness went away).
    shutdown: bool,
    /// `job_output wait:true` calls waiting for the run to end.
    waiters: usize,
    result: Option<SubagentResult>,
    outcome: Option<JobOutcome>,
}

impl HostedRun {
    /// A background start answers at once with the job's id.
    fn announce_job(&self) {
        if let Some(job) = &self.p.job {
            let started = if self.defects.background_start_wording {
                format!("started background job {job}")
            } else {
                host::background_started(job)
            };
            self.host.tool_result((false, started));
        }
    }

    /// Until the provider is done (its event channel closed): each control message and each
    /// provider event, in the order they come.
    async fn follow(&mut self, mut events: mpsc::UnboundedReceiver<ProviderEvent>) {
        loop {
            tokio::select! {
                // The host's calls first: a `job_output wait:true` that came before the run
                // ended is the delivery, however the two channels' readiness falls in one poll.
                biased;
                c = self.control.recv(), if self.control_open => self.on_control(c),
                ev = events.recv() => match ev {
                    None => return,
                    Some(ev) => self.on_event(ev),
                },
            }
        }
    }

    /// A control message while the provider runs (`None`: the harness went away).
    fn on_control(&mut self, c: Option<Control>) {
        match c {
            None | Some(Control::Shutdown) => {
                self.control_open = c.is_some();
                self.shutdown = true;
                let _ = self.cancel_tx.send(true);
            }
            Some(Control::Cancel) => {
                self.cancel_requested = true;
                let _ = self.cancel_tx.send(true);
            }
            // Seeded defect: the turn in flight is left to end on its own; dispose waits.
            Some(Control::Dispose) if self.defects.dispose_ignores_turn => {}
            Some(Control::Dispose) => {
                // dispose() cancels what is in flight (as the signal would) and tears down;
                // the parent did not kill the job, so its completion is still delivered.
                let _ = self.cancel_tx.send(true);
            }
            Some(Control::JobOutput { wait }) => match self.p.mode {
                Mode::Foreground => self
                    .host
                    .log("job_output for a foreground run: no job".into()),
                Mode::Background if wait => self.waiters += 1,
                Mode::Background => self.host.job_output(None),
            },
        }
    }

    fn on_event(&mut self, ev: ProviderEvent) {
        match ev {
            ProviderEvent::Published {
                child_session_key,
                dispatch_at,
            } => self.on_published(child_session_key, dispatch_at),
            ProviderEvent::Rejected { error, cancelled } => self.on_rejected(error, cancelled),
            ProviderEvent::Result(r) => self.on_result(r),
            ProviderEvent::Disposed(disposed) => self.on_disposed(disposed),
        }
    }

    /// The run is published: the dispatch receipt.
    fn on_published(&mut self, child_session_key: String, dispatch_at: String) {
        let defects = self.defects;
        let expected_by = if defects.wrong_expected_by {
            dispatch_at.clone()
        } else {
            self.p.expected_by.clone()
        };
        self.host.emit(FromSubject::Dispatched {
            run: self.p.run.clone(),
            child_session_key,
            dispatch_at,
            expected_by,
        });
        if defects.hang_after_dispatch && !self.first_dispatch.swap(true, Ordering::SeqCst) {
            self.host.hung = true;
            self.hung_flag.store(true, Ordering::SeqCst);
        }
    }

    /// The start was rejected: said to the harness, then shown as the tool result or kept as
    /// the job's outcome.
    fn on_rejected(&mut self, error: StartError, cancelled: bool) {
        self.host.emit(FromSubject::StartRejected {
            run: self.p.run.clone(),
            error: error.clone(),
        });
        match self.p.mode {
            Mode::Foreground => self
                .host
                .tool_result(host::foreground_start_rejected(&error)),
            Mode::Background => {
                self.outcome = Some(host::job_outcome_start_rejected(&error, cancelled));
            }
        }
    }

    /// The provider's one result, reported as it is (shown only once the child is disposed).
    fn on_result(&mut self, mut r: SubagentResult) {
        apply_result_defects(&self.defects, &mut r);
        let message = FromSubject::Result {
            run: self.p.run.clone(),
            stop_reason: r.stop_reason.clone(),
            output: r.output.clone(),
            diagnostic: r.diagnostic.clone(),
        };
        if self.defects.result_twice {
            self.host.emit(message.clone());
        }
        self.host.emit(message);
        self.result = Some(r);
    }

    /// The child is disposed: `settled` (unless its teardown failed), then the result shown as
    /// the tool result or kept as the job's outcome.
    fn on_disposed(&mut self, disposed: Result<(), StartError>) {
        match &disposed {
            Ok(()) => self.host.emit(FromSubject::Settled {
                run: self.p.run.clone(),
            }),
            // Teardown failed: the tree is not released, so no `settled` claim.
            Err(e) => self
                .host
                .log(format!("dispose rejected: {}: {}", e.name, e.message)),
        }
        let Some(r) = self.result.as_ref() else {
            return;
        };
        let defects = self.defects;
        match self.p.mode {
            Mode::Foreground => {
                let mut shown = r.clone();
                if defects.hide_diagnostic_in_tool_result {
                    shown.diagnostic = None;
                }
                let mut text = host::foreground_text(&shown, disposed.as_ref().map(|_| ()));
                if defects.success_as_error {
                    text.0 = true;
                }
                self.host.tool_result(text);
            }
            Mode::Background => {
                let mut o = host::job_outcome(r);
                if defects.job_status_completed_always {
                    o = JobOutcome::Completed {
                        output: r.output_text(),
                    };
                }
                if let Err(e) = &disposed {
                    o = host::with_dispose_failure(o, e);
                }
                self.outcome = Some(o);
            }
        }
    }

    /// A background job after its provider is done: delivered, then its later reads answered
    /// until shutdown.
    async fn finish_job(&mut self) {
        if self.p.mode == Mode::Foreground {
            return;
        }
        let Some(job) = self.p.job.clone() else {
            return;
        };
        let outcome = self.outcome.take().unwrap_or(JobOutcome::Killed);
        let notify = self.deliver(&job, &outcome);
        if self.shutdown {
            return;
        }
        self.answer_later_reads(&job, &outcome, notify).await;
    }

    /// Delivery: a pending `job_output wait:true` is the delivery; a killed (job_kill) or
    /// torn-down job is already reported; otherwise the completion notice. Whether the job
    /// called for a notice.
    fn deliver(&self, job: &str, outcome: &JobOutcome) -> bool {
        let defects = self.defects;
        for _ in 0..self.waiters {
            self.host.job_output(Some(outcome));
        }
        let notify = if defects.notice_after_kill && self.cancel_requested {
            true
        } else {
            self.waiters == 0 && !self.cancel_requested
        };
        if notify && !self.shutdown && !defects.drop_notice {
            let named = if defects.wrong_notice_job {
                "subagent-999".to_owned()
            } else {
                job.to_owned()
            };
            self.host.emit(FromSubject::Notice {
                run: self.p.run.clone(),
                job: named.clone(),
                text: host::notice_text(&named, &self.p.label, outcome),
            });
        }
        notify
    }

    /// A finished job's reads (`job_output`) and kills (`job_kill`) until shutdown.
    async fn answer_later_reads(&mut self, job: &str, outcome: &JobOutcome, notify: bool) {
        let defects = self.defects;
        let mut reads = self.waiters;
        while let Some(c) = self.control.recv().await {
            match c {
                Control::JobOutput { .. } => {
                    reads += 1;
                    if defects.consuming_job_output && reads > 1 {
                        // Seeded defect: the first read took the output.
                        let consumed = match outcome {
                            JobOutcome::Completed { .. } => JobOutcome::Completed {
                                output: String::new(),
                            },
                            other => other.clone(),
                        };
                        self.host.job_output(Some(&consumed));
                    } else {
                        self.host.job_output(Some(outcome));
                    }
                }
                // job_kill on a finished job: it had already finished; nothing changes.
                Control::Cancel if defects.renotice_on_late_kill && notify => {
                    self.host.emit(FromSubject::Notice {
                        run: self.p.run.clone(),
                        job: job.to_owned(),
                        text: host::notice_text(job, &self.p.label, outcome),
                    });
                }
                // dispose() is idempotent: the run is already disposed.
                Control::Cancel | Control::Dispose => {}
                Control::Shutdown => return,
            }
        }
    }
}

/// The seeded defects that bend a provider's result before the host sees it.
fn apply_result_defects(defects: &Defects, r: &mut SubagentResult) {
    if defects.shared_diagnostic_builder
        && let Some(d) = r.diagnostic.as_mut()
    {
        static SHARED: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
        let mut shared = SHARED.lock().expect("shared diagnostic");
        if !shared.is_empty() {
            shared.push('\n');
        }
        shared.push_str(d);
        *d = shared.clone();
    }
    if defects.leak_parent_token
        && let Some(d) = r.diagnostic.as_mut()
    {
        *d = crate::leak::leak_parent_token(d);
    }
    if defects.diagnostic_on_success && r.stop_reason == "completed" {
        r.diagnostic =
            Some("Subagent failure (provider: reference; stage: prompt; category: unknown)".into());
    }
    if defects.unbounded_diagnostic
        && let Some(d) = r.diagnostic.as_mut()
    {
        d.push('\n');
        d.push_str(&"x".repeat(5000));
    }
    if defects.drop_partial_output && r.stop_reason != "completed" {
        r.output.clear();
    }
    if defects.empty_text_block && r.output.is_empty() {
        r.output
            .push(serde_json::json!({"type": "text", "text": ""}));
    }
}

/// The providers this subject hosts (the hello's `providers`): all of them.
pub const PROVIDERS: &[Provider] = Provider::ALL;
