//! The DSH SDK provider (`dsh-sdk`): one SDK runtime per run; `initialize`, one
//! `session/prompt` on a fresh session, the seed-000 turn-end and error-class mapping, start
//! rollback and the bounded `shutdown` + process ladder on dispose.
//!
//! Where today's real host differs (no diagnostic at all, stderr tail in start errors, signals
//! to the direct child only), this follows seed 000. Every fact is local to one run
//! ([`DshRun`]); nothing is shared between runs.

mod config;
mod mapping;
mod session;

use std::sync::{Arc, Mutex};

use conform_protocol::subject::StartError;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::timeout;

use crate::cli::Defects;
use crate::diagnostic::{Category, FailureLine, Stage, limit_diagnostic};
use crate::driver::{Driver, StartFailure, Wired, wire, with_rollback};
use crate::host::SubagentResult;
use crate::jsonrpc::{ErrorObject, Handler, IdStyle, JsonRpc, Reading, Reply, RpcError};
use crate::process::{ManagedChild, SpawnError, Spawned};
use crate::provider::{
    ABORT_ERROR_NAME, Log, ProviderEvent, RunSpec, StderrTail, Step, TurnWait, Woke,
    close_and_settle, race, request_until_exit,
};
use crate::util::fresh_hex32;

use config::DshConfig;
use mapping::{
    ABORTED_BEFORE_START, ERROR_NAME, PREFIX, SdkError, map_turn_end, message_id, shutdown_line,
    valid_server_info,
};
use session::{Collector, Phase};

fn failure(line: &FailureLine) -> StartError {
    StartError {
        name: ERROR_NAME.into(),
        message: format!("{PREFIX}{line}"),
    }
}

fn aborted_error() -> StartError {
    StartError {
        name: ABORT_ERROR_NAME.into(),
        message: ABORTED_BEFORE_START.into(),
    }
}

/// The runtime's notifications go to the current prompt's collector (none outside a prompt:
/// the subscription starts when the prompt is sent).
struct DshHandler {
    collector: Arc<Mutex<Option<Collector>>>,
    changed: Arc<Notify>,
    log: Log,
}

impl Handler for DshHandler {
    fn on_request(&self, _id: &Value, method: &str, _params: Value) -> Reply {
        (self.log)(format!("DSH SDK runtime sent unsupported request {method}"));
        Reply::Error(ErrorObject {
            code: -32601,
            message: format!("method not found: {method}"),
            data: None,
        })
    }

    fn on_notification(&self, method: &str, params: Value) {
        if let Some(c) = self.collector.lock().expect("collector").as_mut() {
            c.push(method, params);
            self.changed.notify_one();
        }
    }

    fn on_garbage(&self, line: &str) {
        (self.log)(format!("DSH SDK runtime wrote a non-JSON-RPC line: {line}"));
    }
}

/// How the prompt ended, before mapping.
enum Outcome {
    Idle,
    Violation(String),
    Failed(SdkError),
    Cancelled,
}

/// One live SDK runtime and its facts.
pub(crate) struct DshRun {
    config: DshConfig,
    defects: Defects,
    log: Log,
    child: ManagedChild,
    rpc: JsonRpc,
    collector: Arc<Mutex<Option<Collector>>>,
    changed: Arc<Notify>,
    stderr: Arc<StderrTail>,
}

impl Driver for DshRun {
    const CHILD: &'static str = "DSH SDK runtime";
    const CHILD_SHORT: &'static str = "runtime";
    type Config = DshConfig;
    const OWN_CWD: bool = true;
    type Session = ();
    type Failure = SdkError;

    fn bad_config() -> StartError {
        configuration()
    }

    fn aborted_before_start() -> StartError {
        aborted_error()
    }

    fn bad_cwd(_cwd: &str) -> StartError {
        configuration()
    }

    fn spawn_failed(error: &SpawnError, log: &Log) -> StartError {
        // The SDK client's TransportClosedError "runtime failed to start".
        log(format!("DSH SDK runtime failed to start: {error}"));
        failure(&SdkError::TransportClosed.line(Stage::Initialize))
    }

    fn connect(config: DshConfig, defects: Defects, log: Log, spawned: Spawned) -> DshRun {
        let collector = Arc::new(Mutex::new(None));
        let changed = Arc::new(Notify::new());
        let handler = Arc::new(DshHandler {
            collector: collector.clone(),
            changed: changed.clone(),
            log: log.clone(),
        });
        let Wired { child, rpc, stderr } = wire(
            spawned,
            handler,
            (IdStyle::Prefixed("req_"), Reading::of(&defects)),
            &log,
        );
        DshRun {
            config,
            defects,
            log,
            child,
            rpc,
            collector,
            changed,
            stderr,
        }
    }

    async fn handshake(
        &mut self,
        spec: &RunSpec,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<(), StartFailure<SdkError>> {
        self.initialize(&spec.runtime.cwd, cancel).await
    }

    async fn failed_start(
        &mut self,
        class: SdkError,
        _events: &mpsc::UnboundedSender<ProviderEvent>,
    ) -> Option<StartError> {
        let cleanup = self.teardown().await;
        let mut message = format!("{PREFIX}{}", class.line(Stage::Initialize));
        if self.defects.stderr_in_start_error {
            let tail = self.stderr.lines().await;
            if !tail.is_empty() {
                message = format!("{message}\nstderr tail:\n{}", tail.join("\n"));
            }
        } else if self.defects.leak_raw_error {
            message = self.stderr.leak(message).await;
        }
        let error = StartError {
            name: ERROR_NAME.into(),
            message,
        };
        Some(with_rollback(error, cleanup))
    }

    async fn run_task(
        &mut self,
        spec: &RunSpec,
        _session: &(),
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult {
        self.prompt(&spec.task, cancel).await
    }

    /// `shutdown` (bounded), stdin EOF, then the process ladder over the whole group. A
    /// protocol shutdown failure — an error answer, no answer within the bound — stays in the
    /// host's diagnostics (seed 000, the shutdown row; the real client's `close()` only appends
    /// it to the stderr tail) and the ladder goes on: only a process release that fails
    /// rejects, `shutdown/unknown`. Raw causes go to the host log only.
    async fn teardown(&mut self) -> Result<(), StartError> {
        if self.rpc.is_open() {
            match timeout(
                self.config.shutdown_timeout,
                self.request("shutdown", json!({})),
            )
            .await
            {
                Ok(Ok(_)) => (self.log)("DSH SDK runtime acknowledged shutdown".into()),
                Ok(Err(e @ RpcError::Remote { .. })) => {
                    (self.log)(format!("shutdown rejected: {e}"))
                }
                // The wire is already gone: nothing to ask; the ladder decides.
                Ok(Err(e)) => (self.log)(format!("shutdown not delivered: {e}")),
                Err(_) => (self.log)(format!(
                    "shutdown not answered within {} ms",
                    self.config.shutdown_timeout.as_millis()
                )),
            }
        } else {
            (self.log)("wire already closed: no shutdown request".into());
        }
        let settled = close_and_settle(
            &self.rpc,
            &self.child,
            self.config.dispose_eof_grace,
            self.config.dispose_grace,
            &self.defects,
            "DSH SDK runtime",
            &self.log,
        )
        .await;
        if settled {
            Ok(())
        } else {
            Err(failure(&shutdown_line()))
        }
    }
}

fn configuration() -> StartError {
    failure(&FailureLine::dsh(
        Stage::Initialize,
        Category::Configuration,
    ))
}

impl DshRun {
    /// A request that also fails when the runtime exits (after a short drain of what it wrote
    /// before exiting), like the SDK client's TransportClosedError "runtime exited".
    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        request_until_exit(&self.rpc, &self.child, method, params, "runtime exited").await
    }

    async fn initialize(
        &mut self,
        cwd: &str,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<(), StartFailure<SdkError>> {
        // Seeded defect `dsh-subject-cwd`: the subject's own directory, not the runtime's.
        let own = std::env::current_dir().map(|d| d.to_string_lossy().into_owned());
        let cwd = match own {
            Ok(own) if self.defects.dsh_subject_cwd => own,
            _ => cwd.to_owned(),
        };
        let mut params = json!({
            "cwd": cwd,
            "provider": self.config.provider,
            "model": self.config.model,
        });
        if let Some(max) = self.config.max_tokens {
            params["maxTokens"] = json!(max);
        }
        let request = self.request("initialize", params);
        // Seeded defect `dsh-initialize-patience`: a deadline the records do not give.
        let patience = async {
            if self.defects.dsh_initialize_patience {
                tokio::time::timeout(std::time::Duration::from_secs(1), request)
                    .await
                    .unwrap_or_else(|_| Err(RpcError::WireLost("initialize timed out".into())))
            } else {
                request.await
            }
        };
        match race(patience, cancel).await {
            Step::Cancelled => Err(StartFailure::Cancelled),
            Step::Done(Ok(v)) if valid_server_info(&v) => Ok(()),
            Step::Done(Ok(_)) if self.defects.null_handshake_accepted => Ok(()),
            Step::Done(Ok(v)) => {
                (self.log)(format!("initialize returned no server identity: {v}"));
                Err(StartFailure::Failed(SdkError::Protocol))
            }
            Step::Done(Err(e)) => {
                (self.log)(format!("initialize failed: {e}"));
                Err(StartFailure::Failed(SdkError::from(&e)))
            }
        }
    }

    /// The current prompt's phase as an outcome, once it is final.
    fn final_phase(&self) -> Option<Outcome> {
        match self.collector.lock().expect("collector").as_ref()?.phase() {
            Phase::Running => None,
            Phase::Idle => Some(Outcome::Idle),
            Phase::Violation(why) => Some(Outcome::Violation(why.clone())),
        }
    }

    async fn await_turn(&mut self, task: &str, cancel: &mut watch::Receiver<bool>) -> Outcome {
        let session_id = format!("session-{}", fresh_hex32());
        // Subscribe before sending: every notification from here on is the prompt's.
        *self.collector.lock().expect("collector") = Some(Collector::new(
            session_id.clone(),
            self.defects.partial_from_chunks_only,
        ));
        let params = json!({
            "sessionId": session_id,
            "contentBlocks": [{"type": "text", "text": task}],
        });
        let rpc = self.rpc.clone();
        let prompt = async move { rpc.request("session/prompt", params).await };
        tokio::pin!(prompt);
        let mut prompt_done = false;
        let mut wait = TurnWait::new(&self.rpc, &self.child, self.changed.clone());
        loop {
            if let Some(outcome) = self.final_phase() {
                return outcome;
            }
            if wait.eof_seen() && prompt_done {
                (self.log)("DSH SDK runtime closed its stdout before the turn went idle".into());
                return Outcome::Failed(SdkError::TransportClosed);
            }
            match wait.next(cancel, prompt.as_mut(), !prompt_done).await {
                Woke::Cancelled => return Outcome::Cancelled,
                Woke::Answered(r) => {
                    prompt_done = true;
                    match r {
                        Ok(v) => match message_id(&v) {
                            Some(id) => {
                                if let Some(c) = self.collector.lock().expect("collector").as_mut()
                                {
                                    c.accept(id);
                                }
                            }
                            None => {
                                (self.log)(format!("session/prompt returned no message id: {v}"));
                                return Outcome::Failed(SdkError::Protocol);
                            }
                        },
                        Err(e) => {
                            (self.log)(format!("session/prompt failed: {e}"));
                            return Outcome::Failed(SdkError::from(&e));
                        }
                    }
                }
                Woke::Drained => {
                    (self.log)("DSH SDK runtime exited before the turn went idle".into());
                    return Outcome::Failed(SdkError::TransportClosed);
                }
                Woke::Changed | Woke::Eof | Woke::Exited => {}
            }
        }
    }

    async fn prompt(&mut self, task: &str, cancel: &mut watch::Receiver<bool>) -> SubagentResult {
        let outcome = self.await_turn(task, cancel).await;
        // Settle the facts here: later notifications are no longer the run's.
        let collector = self
            .collector
            .lock()
            .expect("collector")
            .take()
            .expect("the prompt's collector");
        let output = collector.output();
        let (stop_reason, line) = match outcome {
            Outcome::Cancelled => {
                // Purely local: no wire cancel exists.
                (self.log)("local cancel: settling aborted".into());
                return SubagentResult {
                    stop_reason: "aborted".into(),
                    output,
                    diagnostic: None,
                };
            }
            Outcome::Idle => map_turn_end(collector.last_turn_end(), self.defects.blocked_as_error),
            Outcome::Violation(why) => {
                (self.log)(format!("SdkProtocolError: {why}"));
                ("error", Some(SdkError::Protocol.line(Stage::SessionRun)))
            }
            Outcome::Failed(SdkError::TransportClosed)
                if self.defects.turn_end_ends_the_run && collector.any_turn_end().is_some() =>
            {
                map_turn_end(
                    collector.any_turn_end().as_ref(),
                    self.defects.blocked_as_error,
                )
            }
            Outcome::Failed(class) => ("error", Some(class.line(Stage::SessionRun))),
        };
        let mut diagnostic = line.map(|l| l.to_string());
        if self.defects.leak_raw_error && stop_reason != "completed" {
            diagnostic = Some(self.stderr.leak(diagnostic.unwrap_or_default()).await);
        }
        SubagentResult {
            stop_reason: stop_reason.into(),
            output,
            diagnostic: diagnostic.map(|d| limit_diagnostic(&d)),
        }
    }
}
