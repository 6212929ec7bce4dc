//! One run on the host side: ties the harness's control messages (`cancel`, `job_output`,
//! shutdown) and the provider's events to the subject messages, in the host's order.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use conform_protocol::subject::{FromSubject, Mode, Runtime};
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

/// Drive one run until its provider finished and (for jobs) until shutdown.
pub async fn host_run(
    p: StartParams,
    mut control: mpsc::UnboundedReceiver<Control>,
    cancel_tx: Arc<watch::Sender<bool>>,
    out: Out,
    defects: Defects,
    first_dispatch: Arc<AtomicBool>,
) {
    let cancel_rx = cancel_tx.subscribe();
    let (ev_tx, mut events) = mpsc::unbounded_channel();
    let hung_flag = Arc::new(AtomicBool::new(false));
    let log: provider::Log = {
        let out = out.clone();
        let run = p.run.clone();
        let hung = hung_flag.clone();
        Arc::new(move |text| {
            if !hung.load(Ordering::SeqCst) {
                out.send(FromSubject::HostLog {
                    run: run.clone(),
                    text,
                });
            }
        })
    };
    let mut host = Host {
        run: p.run.clone(),
        out,
        hung: false,
        defects,
    };
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
    if let Some(job) = &p.job {
        let started = if defects.background_start_wording {
            format!("started background job {job}")
        } else {
            host::background_started(job)
        };
        host.tool_result((false, started));
    }

    let mut cancel_requested = false;
    let mut shutdown = false;
    let mut waiters = 0usize;
    let mut result: Option<SubagentResult> = None;
    let mut outcome: Option<JobOutcome> = None;
    let mut events_open = true;
    let mut control_open = true;

    while events_open {
        tokio::select! {
            // The host's calls first: a `job_output wait:true` that came before the run ended
            // is the delivery, however the two channels' readiness falls in one poll.
            biased;
            c = control.recv(), if control_open => match c {
                None | Some(Control::Shutdown) => {
                    control_open = c.is_some();
                    shutdown = true;
                    let _ = cancel_tx.send(true);
                }
                Some(Control::Cancel) => {
                    cancel_requested = true;
                    let _ = cancel_tx.send(true);
                }
                Some(Control::JobOutput { wait }) => match p.mode {
                    Mode::Foreground => host.log("job_output for a foreground run: no job".into()),
                    Mode::Background if wait => waiters += 1,
                    Mode::Background => host.job_output(None),
                },
            },
            ev = events.recv() => match ev {
                None => events_open = false,
                Some(ProviderEvent::Published { child_session_key, dispatch_at }) => {
                    let expected_by = if defects.wrong_expected_by {
                        dispatch_at.clone()
                    } else {
                        p.expected_by.clone()
                    };
                    host.emit(FromSubject::Dispatched {
                        run: p.run.clone(),
                        child_session_key,
                        dispatch_at,
                        expected_by,
                    });
                    if defects.hang_after_dispatch && !first_dispatch.swap(true, Ordering::SeqCst) {
                        host.hung = true;
                        hung_flag.store(true, Ordering::SeqCst);
                    }
                }
                Some(ProviderEvent::Rejected { error, cancelled }) => {
                    host.emit(FromSubject::StartRejected { run: p.run.clone(), error: error.clone() });
                    match p.mode {
                        Mode::Foreground => host.tool_result(host::foreground_start_rejected(&error)),
                        Mode::Background => {
                            outcome = Some(host::job_outcome_start_rejected(&error, cancelled));
                        }
                    }
                }
                Some(ProviderEvent::Result(mut r)) => {
                    apply_result_defects(&defects, &mut r);
                    let message = FromSubject::Result {
                        run: p.run.clone(),
                        stop_reason: r.stop_reason.clone(),
                        output: r.output.clone(),
                        diagnostic: r.diagnostic.clone(),
                    };
                    if defects.result_twice {
                        host.emit(message.clone());
                    }
                    host.emit(message);
                    result = Some(r);
                }
                Some(ProviderEvent::Disposed(disposed)) => {
                    match &disposed {
                        Ok(()) => host.emit(FromSubject::Settled { run: p.run.clone() }),
                        // Teardown failed: the tree is not released, so no `settled` claim.
                        Err(e) => host.log(format!("dispose rejected: {}: {}", e.name, e.message)),
                    }
                    let Some(r) = result.as_ref() else { continue };
                    match p.mode {
                        Mode::Foreground => {
                            let mut shown = r.clone();
                            if defects.hide_diagnostic_in_tool_result {
                                shown.diagnostic = None;
                            }
                            let mut text = host::foreground_text(&shown, disposed.as_ref().map(|_| ()));
                            if defects.success_as_error {
                                text.0 = true;
                            }
                            host.tool_result(text);
                        }
                        Mode::Background => {
                            let mut o = host::job_outcome(r);
                            if defects.job_status_completed_always {
                                o = JobOutcome::Completed { output: r.output_text() };
                            }
                            if let Err(e) = &disposed {
                                o = host::with_dispose_failure(o, e);
                            }
                            outcome = Some(o);
                        }
                    }
                }
            },
        }
    }

    if p.mode == Mode::Foreground {
        return;
    }
    let Some(job) = p.job.clone() else { return };
    let outcome = outcome.unwrap_or(JobOutcome::Killed);
    // Delivery: a pending `job_output wait:true` is the delivery; a killed (job_kill) or
    // torn-down job is already reported; otherwise the completion notice.
    for _ in 0..waiters {
        host.job_output(Some(&outcome));
    }
    let notify = if defects.notice_after_kill && cancel_requested {
        true
    } else {
        waiters == 0 && !cancel_requested
    };
    if notify && !shutdown && !defects.drop_notice {
        let named = if defects.wrong_notice_job {
            "subagent-999".to_owned()
        } else {
            job.clone()
        };
        host.emit(FromSubject::Notice {
            run: p.run.clone(),
            job: named.clone(),
            text: host::notice_text(&named, &p.label, &outcome),
        });
    }
    if shutdown {
        return;
    }
    let mut reads = waiters;
    while let Some(c) = control.recv().await {
        match c {
            Control::JobOutput { .. } => {
                reads += 1;
                if defects.consuming_job_output && reads > 1 {
                    // Seeded defect: the first read took the output.
                    let consumed = match &outcome {
                        JobOutcome::Completed { .. } => JobOutcome::Completed {
                            output: String::new(),
                        },
                        other => other.clone(),
                    };
                    host.job_output(Some(&consumed));
                } else {
                    host.job_output(Some(&outcome));
                }
            }
            // job_kill on a finished job: it had already finished; nothing changes.
            Control::Cancel if defects.renotice_on_late_kill && notify => {
                host.emit(FromSubject::Notice {
                    run: p.run.clone(),
                    job: job.clone(),
                    text: host::notice_text(&job, &p.label, &outcome),
                });
            }
            Control::Cancel => {}
            Control::Shutdown => return,
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
