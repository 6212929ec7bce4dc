//! The Codex provider (`codex`): one app-server per run; `initialize` / `initialized`, an
//! ephemeral `thread/start` in the configured permission mode, publication, one `turn/start`,
//! unattended answers to the app-server's requests, seed 001's error-info and stage mapping,
//! start rollback and the dispose ladder (stdin EOF, at once SIGTERM to the group, SIGKILL after
//! `disposeGraceMs`).
//!
//! Where today's real host and seed 001 differ, this follows the seed: the child's stderr goes
//! to the host log only (no stderr classifier), and the shared 4096-byte bound applies to every
//! diagnostic. Every fact is local to one run ([`CodexRun`]).

mod config;
mod mapping;
mod requests;
mod turn;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use conform_protocol::subject::StartError;
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};

use crate::cli::Defects;
use crate::diagnostic::{ExitFacts, ProductLine, limit_diagnostic};
use crate::driver::{Driver, StartFailure, Wired, wire};
use crate::host::SubagentResult;
use crate::jsonrpc::{ErrorObject, Handler, IdStyle, JsonRpc, Reading, Reply, RpcError};
use crate::process::{ManagedChild, SpawnError, Spawned};
use crate::product::{Rejections, diagnostic};
use crate::provider::{
    Log, ProviderEvent, RunSpec, StderrTail, Step, TurnWait, Woke, close_and_settle, race,
    request_until_exit,
};

use config::CodexConfig;
use mapping::{
    ABORTED_BEFORE_PUBLICATION, ABORTED_BEFORE_STARTUP, EMPTY_TASK, ERROR_NAME, MappingDefects,
    NO_WORKING_DIRECTORY, PREFIX, Stage, map_terminal, process_exit_line, unknown_line,
};
use requests::SANDBOX_FAILURE;
use turn::{Settled, TurnState};

const REJECTIONS: Rejections = Rejections {
    error_name: ERROR_NAME,
    prefix: PREFIX,
};

fn failure(line: &ProductLine) -> StartError {
    REJECTIONS.failure(line)
}

fn plain_error(message: &str) -> StartError {
    Rejections::plain(message)
}

/// Inbound traffic goes to the run's state in wire order; requests are answered at once.
struct CodexHandler {
    state: Arc<Mutex<TurnState>>,
    changed: Arc<Notify>,
    log: Log,
    /// Seeded defect: unsupported requests get no answer.
    unanswered: bool,
}

impl Handler for CodexHandler {
    fn on_request(&self, _id: &Value, method: &str, params: Value) -> Reply {
        let answer = self
            .state
            .lock()
            .expect("turn state")
            .on_request(method, &params);
        self.changed.notify_one();
        match answer {
            Ok(v) => Reply::Result(v),
            Err(_) if self.unanswered => Reply::Unanswered,
            Err(message) => {
                (self.log)(format!(
                    "Codex app-server request {method} refused: {message}"
                ));
                Reply::Error(ErrorObject {
                    code: -32603,
                    message,
                    data: None,
                })
            }
        }
    }

    fn on_notification(&self, method: &str, params: Value) {
        self.state
            .lock()
            .expect("turn state")
            .on_notification(method, &params);
        self.changed.notify_one();
    }

    fn on_response(&self, method: &str, outcome: &Result<Value, RpcError>) {
        // Commit the turn id in wire order: a notification right behind the response must
        // already see the committed turn.
        if method == "turn/start"
            && let Ok(v) = outcome
            && let Some(id) = v["turn"].get("id").and_then(Value::as_str)
            && !id.is_empty()
        {
            self.state.lock().expect("turn state").commit(id);
            self.changed.notify_one();
        }
    }

    fn on_garbage(&self, line: &str) {
        (self.log)(format!(
            "Codex app-server wrote a non-JSON-RPC line: {line}"
        ));
    }
}

/// How the turn ended, before mapping.
enum Outcome {
    Settled(Settled),
    /// The app-server exited before a terminal.
    Exited(ExitFacts),
    /// No terminal and no exit facts: `stage` / unknown.
    Unknown(Stage),
    Cancelled,
}

/// One live app-server and its facts.
pub(crate) struct CodexRun {
    config: CodexConfig,
    defects: Defects,
    log: Log,
    child: ManagedChild,
    rpc: JsonRpc,
    state: Arc<Mutex<TurnState>>,
    changed: Arc<Notify>,
    stderr: Arc<StderrTail>,
    interrupt_sent: bool,
}

impl Driver for CodexRun {
    const CHILD: &'static str = "Codex app-server";
    const CHILD_SHORT: &'static str = "app-server";
    type Config = CodexConfig;
    /// The thread id.
    type Session = String;
    type Failure = ProductLine;

    fn bad_config() -> StartError {
        failure(&unknown_line(Stage::Initialize, None))
    }

    fn precheck(spec: &RunSpec) -> Result<(), StartError> {
        if spec.task.trim().is_empty() {
            return Err(plain_error(EMPTY_TASK));
        }
        Ok(())
    }

    fn aborted_before_start() -> StartError {
        plain_error(ABORTED_BEFORE_STARTUP)
    }

    /// The host's own message is for a parent session without a working directory; a path
    /// the app-server cannot start in fails its spawn, which seed 001 gives the initialize
    /// stage (docs/requirements.md, missing-cwd).
    fn bad_cwd(cwd: &str) -> StartError {
        if cwd.is_empty() {
            plain_error(NO_WORKING_DIRECTORY)
        } else {
            failure(&unknown_line(Stage::Initialize, None))
        }
    }

    fn spawn_failed(error: &SpawnError, log: &Log) -> StartError {
        // Spawn belongs to the initialize stage; no process, so no exit facts.
        log(format!("Codex app-server {error}"));
        failure(&unknown_line(Stage::Initialize, None))
    }

    fn connect(config: CodexConfig, defects: Defects, log: Log, spawned: Spawned) -> CodexRun {
        let mut turn_state = TurnState::new(config.permission_mode);
        turn_state.early_facts_last = defects.early_facts_last;
        turn_state.strict_notifications = defects.codex_strict_notifications;
        let state = Arc::new(Mutex::new(turn_state));
        let changed = Arc::new(Notify::new());
        let handler = Arc::new(CodexHandler {
            state: state.clone(),
            changed: changed.clone(),
            log: log.clone(),
            unanswered: defects.unanswered_request,
        });
        let Wired { child, rpc, stderr } = wire(
            spawned,
            handler,
            (IdStyle::Prefixed("req_"), Reading::of(&defects)),
            &log,
        );
        CodexRun {
            config,
            defects,
            log,
            child,
            rpc,
            state,
            changed,
            stderr,
            interrupt_sent: false,
        }
    }

    async fn handshake(
        &mut self,
        spec: &RunSpec,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<String, StartFailure<ProductLine>> {
        self.startup(&spec.runtime.cwd, cancel).await
    }

    fn aborted_during_start() -> StartError {
        plain_error(ABORTED_BEFORE_PUBLICATION)
    }

    async fn failed_start(
        &mut self,
        line: ProductLine,
        _events: &mpsc::UnboundedSender<ProviderEvent>,
    ) -> Option<StartError> {
        let stderr = self.stderr.clone();
        let leak = self.defects.leak_raw_error.then_some(stderr.as_ref());
        Some(REJECTIONS.start_failed(&line, leak, self.teardown()).await)
    }

    async fn run_task(
        &mut self,
        spec: &RunSpec,
        thread_id: &String,
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult {
        self.turn(thread_id, &spec.task, cancel).await
    }

    async fn dispose(&mut self) -> Result<(), StartError> {
        self.interrupt().await;
        self.teardown().await
    }

    /// Close the wire (stdin EOF), at once SIGTERM to the group, SIGKILL after `disposeGraceMs`,
    /// then wait (bounded) for the whole tree. The teardown line on failure.
    async fn teardown(&mut self) -> Result<(), StartError> {
        // No EOF grace: the real host terminates right after closing stdin.
        if close_and_settle(
            &self.rpc,
            &self.child,
            Duration::ZERO,
            self.config.dispose_grace,
            &self.defects,
            "Codex app-server",
            &self.log,
        )
        .await
        {
            Ok(())
        } else {
            Err(failure(&unknown_line(Stage::Teardown, self.child.exited())))
        }
    }
}

impl CodexRun {
    /// A request that also fails when the app-server exits (after a short drain of what it
    /// wrote before exiting).
    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        request_until_exit(&self.rpc, &self.child, method, params, "app-server exited").await
    }

    /// Exit facts once the wire is lost: wait up to `disposeGraceMs` for them.
    async fn exit_after_loss(&self) -> Option<ExitFacts> {
        self.child.wait_exit(self.config.dispose_grace).await
    }

    /// A startup failure at `stage`: `unknown` plus any observed exit facts.
    async fn startup_failure(
        &self,
        stage: Stage,
        error: Option<RpcError>,
    ) -> StartFailure<ProductLine> {
        let exit = match error {
            Some(RpcError::WireLost(_)) => self.exit_after_loss().await,
            _ => self.child.exited(),
        };
        StartFailure::Failed(unknown_line(stage, exit))
    }

    /// `initialize` → `initialized` → ephemeral `thread/start`; the thread id.
    async fn startup(
        &mut self,
        cwd: &str,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<String, StartFailure<ProductLine>> {
        let params = json!({
            "clientInfo": {"name": "deepseek-harness", "title": "DeepSeek Harness", "version": "0.0.1"},
            "capabilities": {
                "experimentalApi": self.defects.codex_experimental_api,
                "requestAttestation": false,
            },
        });
        match race(self.request("initialize", params), cancel).await {
            Step::Cancelled => return Err(StartFailure::Cancelled),
            Step::Done(Ok(Value::Object(_))) => {}
            Step::Done(Ok(_)) if self.defects.null_handshake_accepted => {}
            Step::Done(Ok(v)) => {
                (self.log)(format!("invalid initialize response: {v}"));
                return Err(self.startup_failure(Stage::Initialize, None).await);
            }
            Step::Done(Err(e)) => {
                (self.log)(format!("initialize failed: {e}"));
                return Err(self.startup_failure(Stage::Initialize, Some(e)).await);
            }
        }
        if let Err(e) = self.rpc.notify_bare("initialized").await {
            (self.log)(format!("initialized not delivered: {e}"));
            return Err(self.startup_failure(Stage::Initialize, Some(e)).await);
        }
        let mut params = json!({"cwd": cwd, "ephemeral": true});
        if let (Some(p), Value::Object(fields)) = (
            params.as_object_mut(),
            self.config.permission_mode.thread_start_fields(),
        ) {
            p.extend(fields);
        }
        let thread_id = match race(self.request("thread/start", params), cancel).await {
            Step::Cancelled => return Err(StartFailure::Cancelled),
            Step::Done(Ok(v)) => {
                let thread = &v["thread"];
                match thread.get("id").and_then(Value::as_str) {
                    Some(id) if !id.is_empty() && thread["ephemeral"] == json!(true) => {
                        id.to_owned()
                    }
                    _ => {
                        (self.log)(format!(
                            "app-server did not create an ephemeral thread: {v}"
                        ));
                        return Err(self.startup_failure(Stage::ThreadStart, None).await);
                    }
                }
            }
            Step::Done(Err(e)) => {
                (self.log)(format!("thread/start failed: {e}"));
                return Err(self.startup_failure(Stage::ThreadStart, Some(e)).await);
            }
        };
        // A server request before the turn fails the start at the thread stage.
        let early_failure = {
            let mut st = self.state.lock().expect("turn state");
            st.set_thread(&thread_id);
            match st.settled() {
                Some(Settled::Failed(f)) => Some(f.why),
                _ => None,
            }
        };
        if let Some(why) = early_failure {
            (self.log)(format!("app-server traffic before the turn: {why}"));
            return Err(self.startup_failure(Stage::ThreadStart, None).await);
        }
        Ok(thread_id)
    }

    fn settled(&self) -> Option<Settled> {
        self.state.lock().expect("turn state").settled().cloned()
    }

    /// `turn/start`, then wait for the terminal, a failure, the app-server's exit or a local
    /// cancel.
    async fn await_turn(
        &mut self,
        thread_id: &str,
        task: &str,
        cancel: &mut watch::Receiver<bool>,
    ) -> Outcome {
        self.state.lock().expect("turn state").turn_sent();
        let params = json!({
            "threadId": thread_id,
            "input": [{"type": "text", "text": task, "text_elements": []}],
        });
        let rpc = self.rpc.clone();
        let turn_start = async move { rpc.request("turn/start", params).await };
        tokio::pin!(turn_start);
        let mut started = false;
        let mut start_lost = false;
        let mut wait = TurnWait::new(&self.rpc, &self.child, self.changed.clone());
        loop {
            if let Some(s) = self.settled() {
                return Outcome::Settled(s);
            }
            if start_lost {
                return match self.exit_after_loss().await {
                    Some(facts) => Outcome::Exited(facts),
                    None => Outcome::Unknown(Stage::TurnStart),
                };
            }
            if let Some(facts) = self.child.exited()
                && (wait.eof_seen() || wait.drained())
            {
                // Frames written before the exit were handled before EOF was flagged.
                (self.log)("Codex app-server exited before a terminal turn".into());
                return Outcome::Exited(facts);
            }
            if wait.eof_seen() && self.child.exited().is_none() {
                (self.log)("Codex app-server closed its stdout before a terminal turn".into());
                return match self.exit_after_loss().await {
                    Some(facts) => Outcome::Exited(facts),
                    None => Outcome::Unknown(Stage::Turn),
                };
            }
            match wait.next(cancel, turn_start.as_mut(), !started).await {
                Woke::Cancelled => return Outcome::Cancelled,
                Woke::Answered(r) => {
                    started = true;
                    match r {
                        Ok(v) => match v["turn"].get("id").and_then(Value::as_str) {
                            Some(id) if !id.is_empty() => {
                                self.state.lock().expect("turn state").commit(id);
                            }
                            _ => {
                                (self.log)(format!("turn/start returned no turn id: {v}"));
                                return Outcome::Unknown(Stage::TurnStart);
                            }
                        },
                        Err(e @ RpcError::Remote { .. }) => {
                            (self.log)(format!("turn/start failed: {e}"));
                            return Outcome::Unknown(Stage::TurnStart);
                        }
                        Err(e) => {
                            (self.log)(format!("turn/start failed: {e}"));
                            start_lost = true;
                        }
                    }
                }
                Woke::Changed | Woke::Eof | Woke::Exited | Woke::Drained => {}
            }
        }
    }

    async fn turn(
        &mut self,
        thread_id: &str,
        task: &str,
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult {
        let mut outcome = self.await_turn(thread_id, task, cancel).await;
        // A local cancel that is already requested wins over a simultaneous settlement.
        if *cancel.borrow() {
            outcome = Outcome::Cancelled;
        }
        let exited = self.child.exited();
        let mapping_defects = MappingDefects {
            cyber_policy_as_refusal: self.defects.cyber_policy_as_refusal,
            http_status_from_string: self.defects.http_status_from_string,
            unknown_code_as_other: self.defects.unknown_code_as_other,
        };
        // Settle the facts here: later frames are no longer the run's.
        let (output, stop_reason, line, fact) = {
            let mut st = self.state.lock().expect("turn state");
            st.freeze();
            let output = st.selection();
            let (stop, line) = match &outcome {
                Outcome::Cancelled => ("aborted", None),
                Outcome::Settled(Settled::Terminal(t)) => {
                    let m = map_terminal(t, !output.is_empty(), mapping_defects);
                    if m.sandbox_failure {
                        st.record_terminal_fact(SANDBOX_FAILURE);
                    }
                    // Exit facts of an app-server that already exited (`withProcessOutcome`).
                    (
                        m.stop_reason,
                        m.line.map(|l| l.with_exit(exited.unwrap_or_default())),
                    )
                }
                Outcome::Settled(Settled::Failed(f)) => {
                    (self.log)(format!("Codex run failed: {}", f.why));
                    ("error", Some(unknown_line(f.stage, exited)))
                }
                Outcome::Exited(facts) => ("error", Some(process_exit_line(*facts))),
                Outcome::Unknown(stage) => ("error", Some(unknown_line(*stage, exited))),
            };
            (output, stop, line, st.permission())
        };
        if matches!(outcome, Outcome::Cancelled) {
            // Local cancel: aborted at once, no diagnostic; then interrupt the open turn.
            (self.log)("local cancel: settling aborted".into());
            self.interrupt().await;
            return SubagentResult {
                stop_reason: "aborted".into(),
                output,
                diagnostic: None,
            };
        }
        let mut diagnostic =
            line.map(|l| diagnostic(&l, fact.as_ref().map(|f| f as &dyn std::fmt::Display)));
        // Seeded defect: the failed turn's own error message appended to the diagnostic.
        if self.defects.leak_turn_error
            && let Outcome::Settled(Settled::Terminal(t)) = &outcome
            && let Some(message) = t.pointer("/error/message").and_then(Value::as_str)
        {
            diagnostic = diagnostic.map(|d| format!("{d}: {message}"));
        }
        if self.defects.leak_raw_error && stop_reason != "completed" {
            diagnostic = Some(limit_diagnostic(
                &self.stderr.leak(diagnostic.unwrap_or_default()).await,
            ));
        }
        if let Some(d) = &diagnostic {
            (self.log)(format!(
                "subagent-codex \"codex\": child run failed ({stop_reason}): {d}"
            ));
        }
        SubagentResult {
            stop_reason: stop_reason.into(),
            output,
            diagnostic,
        }
    }

    /// `turn/interrupt` for a turn that is still open while the wire is up; best effort, the
    /// response is never awaited. At most once per run.
    async fn interrupt(&mut self) {
        if self.interrupt_sent || !self.rpc.is_open() || self.defects.skip_turn_interrupt {
            return;
        }
        let Some((thread_id, turn_id)) = self.state.lock().expect("turn state").open_turn() else {
            return;
        };
        self.interrupt_sent = true;
        if let Err(e) = self
            .rpc
            .request_detached(
                "turn/interrupt",
                json!({"threadId": thread_id, "turnId": turn_id}),
            )
            .await
        {
            (self.log)(format!("turn/interrupt not delivered: {e}"));
        }
    }
}
