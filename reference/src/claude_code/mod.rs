//! The Claude Code provider (`claude-code`): one CLI per run, driven the way the Claude Agent
//! SDK 0.3.220 drives it — spawned with the SDK's flags and variables, the `initialize` control
//! handshake, publication, the task as one `user` message, unattended answers to the CLI's
//! control requests (a denied tool, a declined MCP elicitation, a cancelled dialog), one
//! `result`, then the end of the stream (stdin closed, stdout to EOF). Dispose is the SDK's
//! `close()` then terminate at once: stdin EOF, SIGTERM to the group, SIGKILL after
//! `disposeGraceMs`.
//!
//! Completion only for a `success` result with `is_error: false` and non-blank text on a stream
//! that then ends normally; the failure output is always empty; stop reasons are only
//! `completed`, `error` and `aborted`. Every fact is local to one run ([`ClaudeCodeRun`]).

mod config;
mod mapping;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use conform_protocol::subject::{Runtime, StartError};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, watch};

use crate::cli::Defects;
use crate::diagnostic::{ExitFacts, ProductLine, limit_diagnostic};
use crate::driver::{Driver, StartFailure};
use crate::host::{SubagentResult, text_output};
use crate::jsonrpc::{ErrorObject, Framing, Handler, IdStyle, JsonRpc, Reading, Reply, RpcError};
use crate::process::{ManagedChild, SpawnError, Spawned};
use crate::product::{Rejections, diagnostic};
use crate::provider::{
    Log, ProviderEvent, RunSpec, StderrTail, Step, cancelled, close_and_settle, forward_stderr,
    race, request_until_exit,
};

use config::{ClaudeCodeConfig, PermissionMode, SDK_VERSION};
use mapping::{
    ABORTED_BEFORE_STARTUP, EMPTY_TASK, ERROR_NAME, Ending, MappingDefects, NO_WORKING_DIRECTORY,
    PREFIX, PermissionFact, Stage, answer, denied_before_prompt, map_ending, unknown_line,
};

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

/// What the run has seen of its turn, in wire order.
#[derive(Default)]
struct TurnState {
    /// The first `result` of the turn (the CLI sends exactly one).
    result: Option<Value>,
    /// The latest permission fact of the turn.
    fact: Option<PermissionFact>,
    /// No longer the run's: facts after the result was mapped are dropped.
    frozen: bool,
}

struct ClaudeHandler {
    mode: PermissionMode,
    /// Seeded defect `init-resets-facts`.
    init_resets_facts: bool,
    state: Arc<Mutex<TurnState>>,
    changed: Arc<Notify>,
    log: Log,
}

impl Handler for ClaudeHandler {
    fn on_request(&self, _id: &Value, subtype: &str, request: Value) -> Reply {
        let (reply, fact) = answer(self.mode, subtype, &request);
        {
            let mut st = self.state.lock().expect("turn state");
            if let Some(f) = fact
                && !st.frozen
            {
                st.fact = Some(f);
            }
        }
        self.changed.notify_one();
        match reply {
            Ok(v) => Reply::Result(v),
            Err(message) => {
                (self.log)(format!(
                    "Claude Code control request {subtype} refused: {message}"
                ));
                Reply::Error(ErrorObject {
                    code: 0,
                    message,
                    data: None,
                })
            }
        }
    }

    fn on_notification(&self, ty: &str, message: Value) {
        let mut st = self.state.lock().expect("turn state");
        match (ty, message.get("subtype").and_then(Value::as_str)) {
            ("result", _) if st.result.is_none() && !st.frozen => st.result = Some(message),
            ("system", Some("permission_denied")) if !st.frozen => {
                st.fact = Some(denied_before_prompt(self.mode));
            }
            ("system", Some("init")) if self.init_resets_facts => st.fact = None,
            _ => {}
        }
        drop(st);
        self.changed.notify_one();
    }

    fn on_garbage(&self, line: &str) {
        (self.log)(format!(
            "Claude Code wrote a line that is not stream-json: {line}"
        ));
    }
}

/// One live CLI and its facts.
pub(crate) struct ClaudeCodeRun {
    config: ClaudeCodeConfig,
    defects: Defects,
    log: Log,
    child: ManagedChild,
    rpc: JsonRpc,
    state: Arc<Mutex<TurnState>>,
    changed: Arc<Notify>,
    stderr: Arc<StderrTail>,
}

/// How the wait for the turn ended.
enum Waited {
    Ended(Ending),
    Cancelled,
}

impl Driver for ClaudeCodeRun {
    const CHILD: &'static str = "Claude Code CLI";
    const CHILD_SHORT: &'static str = "CLI";
    type Config = ClaudeCodeConfig;
    type Session = ();
    type Failure = ProductLine;

    fn bad_config() -> StartError {
        failure(&unknown_line(Stage::QueryStart, None))
    }

    fn precheck(spec: &RunSpec) -> Result<(), StartError> {
        if spec.task.trim().is_empty() {
            return Err(plain_error(EMPTY_TASK));
        }
        Ok(())
    }

    fn extend_runtime(config: &ClaudeCodeConfig, defects: &Defects, runtime: &mut Runtime) {
        // The flags and variables the SDK adds (a seeded defect drops the prompt tool).
        runtime
            .args
            .extend(config.cli_args(defects.no_permission_prompt_tool));
        runtime
            .env
            .insert("CLAUDE_CODE_ENTRYPOINT".into(), "sdk-ts".into());
        runtime
            .env
            .insert("CLAUDE_AGENT_SDK_VERSION".into(), SDK_VERSION.into());
    }

    fn aborted_before_start() -> StartError {
        plain_error(ABORTED_BEFORE_STARTUP)
    }

    /// As for Codex: the host's own message is for a parent session without a working
    /// directory; a path the CLI cannot start in fails at query-start (docs/requirements.md).
    fn bad_cwd(cwd: &str) -> StartError {
        if cwd.is_empty() {
            plain_error(NO_WORKING_DIRECTORY)
        } else {
            failure(&unknown_line(Stage::QueryStart, None))
        }
    }

    fn spawn_failed(error: &SpawnError, log: &Log) -> StartError {
        log(format!("Claude Code CLI {error}"));
        failure(&unknown_line(Stage::QueryStart, None))
    }

    fn connect(
        config: ClaudeCodeConfig,
        defects: Defects,
        log: Log,
        spawned: Spawned,
    ) -> ClaudeCodeRun {
        let state = Arc::new(Mutex::new(TurnState::default()));
        let changed = Arc::new(Notify::new());
        let handler = Arc::new(ClaudeHandler {
            mode: config.permission_mode,
            init_resets_facts: defects.init_resets_facts,
            state: state.clone(),
            changed: changed.clone(),
            log: log.clone(),
        });
        let stderr = forward_stderr(spawned.stderr, log.clone());
        let rpc = JsonRpc::framed(
            spawned.stdout,
            spawned.stdin,
            handler,
            IdStyle::Prefixed(""),
            (Framing::StreamJson, Reading::of(&defects)),
        );
        ClaudeCodeRun {
            config,
            defects,
            log,
            child: spawned.child,
            rpc,
            state,
            changed,
            stderr,
        }
    }

    async fn handshake(
        &mut self,
        _spec: &RunSpec,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<(), StartFailure<ProductLine>> {
        let params = json!({
            "systemPrompt": [""],
            "supportedDialogKinds": ["refusal_fallback_prompt"],
        });
        let initialize = request_until_exit(
            &self.rpc,
            &self.child,
            "initialize",
            params,
            "Claude Code CLI exited",
        );
        match race(initialize, cancel).await {
            Step::Cancelled => Err(StartFailure::Cancelled),
            Step::Done(Ok(Value::Object(_))) => Ok(()),
            Step::Done(Ok(_)) if self.defects.null_handshake_accepted => Ok(()),
            Step::Done(Ok(v)) => {
                (self.log)(format!("invalid initialize response: {v}"));
                Err(self.startup_failure(None).await)
            }
            Step::Done(Err(e)) => {
                (self.log)(format!("initialize failed: {e}"));
                Err(self.startup_failure(Some(e)).await)
            }
        }
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
        _session: &(),
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult {
        let mut waited = self.await_turn(&spec.task, cancel).await;
        if let (Waited::Cancelled, true) = (&waited, self.defects.result_after_cancel)
            && let Some(late) = self.late_result().await
        {
            waited = Waited::Ended(late);
        }
        let ending = match waited {
            Waited::Cancelled => {
                (self.log)("local cancel: settling aborted".into());
                self.state.lock().expect("turn state").frozen = true;
                return SubagentResult {
                    stop_reason: "aborted".into(),
                    output: Vec::new(),
                    diagnostic: None,
                };
            }
            Waited::Ended(e) => e,
        };
        let fact = {
            let mut st = self.state.lock().expect("turn state");
            st.frozen = true;
            st.fact
        };
        let exit = self.child.exited();
        let ending = match (ending, exit) {
            (Ending::Result { .. }, Some(facts))
                if self.defects.signal_beats_result && facts.signal.is_some() =>
            {
                Ending::Exited(facts)
            }
            (ending, _) => ending,
        };
        let mapped = map_ending(
            &ending,
            exit,
            MappingDefects {
                blank_success_completed: self.defects.blank_success_completed,
                max_turns_as_max_tokens: self.defects.max_turns_as_max_tokens,
            },
        );
        let fact = fact.filter(|_| !self.defects.claude_permission_fact_dropped);
        let mut diagnostic = mapped
            .line
            .map(|l| diagnostic(&l, fact.as_ref().map(|f| f as &dyn std::fmt::Display)));
        if self.defects.leak_raw_error && mapped.stop_reason != "completed" {
            diagnostic = Some(limit_diagnostic(
                &self.stderr.leak(diagnostic.unwrap_or_default()).await,
            ));
        }
        if let Some(d) = &diagnostic {
            (self.log)(format!(
                "subagent-claude-code \"claude-code\": child run failed ({}): {d}",
                mapped.stop_reason
            ));
        }
        SubagentResult {
            stop_reason: mapped.stop_reason.into(),
            output: mapped
                .answer
                .map(|text| text_output(&text))
                .unwrap_or_default(),
            diagnostic,
        }
    }

    /// `close()` (stdin EOF), at once SIGTERM to the group, SIGKILL after `disposeGraceMs`, then
    /// the whole tree awaited. The teardown line on failure.
    async fn teardown(&mut self) -> Result<(), StartError> {
        if close_and_settle(
            &self.rpc,
            &self.child,
            Duration::ZERO,
            self.config.dispose_grace,
            &self.defects,
            "Claude Code CLI",
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

/// After a result: a CLI still running is ended by dispose; a non-zero exit or a signal is the
/// iterator's error.
fn ended_normally(exit: Option<ExitFacts>) -> bool {
    exit.is_none_or(|f| f.code == Some(0) && f.signal.is_none())
}

impl ClaudeCodeRun {
    /// A startup failure: `query-start` / unknown plus the exit facts observed (waiting up to
    /// `disposeGraceMs` for them once the wire is lost).
    async fn startup_failure(&self, error: Option<RpcError>) -> StartFailure<ProductLine> {
        let exit = match error {
            Some(RpcError::WireLost(_)) => self.child.wait_exit(self.config.dispose_grace).await,
            _ => self.child.exited(),
        };
        StartFailure::Failed(unknown_line(Stage::QueryStart, exit))
    }

    fn result(&self) -> Option<Value> {
        self.state.lock().expect("turn state").result.clone()
    }

    /// Sends the task and waits for the result and the end of the stream, or a local cancel.
    async fn await_turn(&mut self, task: &str, cancel: &mut watch::Receiver<bool>) -> Waited {
        let user = json!({
            "session_id": "",
            "message": {"role": "user", "content": [{"type": "text", "text": task}]},
            "parent_tool_use_id": null,
        });
        if let Err(e) = self.rpc.notify("user", user).await {
            (self.log)(format!("the task was not delivered: {e}"));
        }
        let mut eof = self.rpc.eof_watch();
        let changed = self.changed.clone();
        // Until the result: the stream's end without one is the failure.
        loop {
            if self.result().is_some() {
                break;
            }
            if *eof.borrow() {
                // Frames before EOF were handled before it was flagged.
                if self.result().is_some() {
                    break;
                }
                let exit = self.child.wait_exit(self.config.dispose_grace).await;
                return Waited::Ended(match exit {
                    Some(facts) if facts.code != Some(0) => {
                        (self.log)("Claude Code CLI exited before a result".into());
                        Ending::Exited(facts)
                    }
                    _ => {
                        (self.log)("Claude Code stream ended without a result".into());
                        Ending::NoResult
                    }
                });
            }
            tokio::select! {
                biased;
                _ = cancelled(cancel) => return Waited::Cancelled,
                _ = changed.notified() => {}
                _ = eof.wait_for(|e| *e) => {}
            }
        }
        // A one-shot query ends its input after the result; the stream then ends with the CLI.
        let result = self.result().unwrap_or_default();
        let exit = tokio::select! {
            biased;
            _ = cancelled(cancel) => return Waited::Cancelled,
            exit = self.end_input() => exit,
        };
        Waited::Ended(Ending::Result {
            result,
            stream_ok: ended_normally(exit),
        })
    }

    /// Ends the CLI's input and waits, up to `disposeGraceMs`, for the stream's end and the
    /// CLI's exit facts (none when it lives on: dispose ends it).
    async fn end_input(&self) -> Option<ExitFacts> {
        self.rpc.close_stdin().await;
        let mut eof = self.rpc.eof_watch();
        let ended = async {
            let _ = eof.wait_for(|e| *e).await;
            self.child.wait_exit(self.config.dispose_grace).await
        };
        tokio::time::timeout(self.config.dispose_grace, ended)
            .await
            .ok()
            .flatten()
    }

    /// Seeded defect `result-after-cancel`: after a cancel, the input is ended and a result the
    /// CLI still writes (within `disposeGraceMs`) is taken as the turn's.
    async fn late_result(&mut self) -> Option<Ending> {
        let exit = self.end_input().await;
        Some(Ending::Result {
            result: self.result()?,
            stream_ok: ended_normally(exit),
        })
    }
}
