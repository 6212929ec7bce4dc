//! The ACP provider: one child per run; handshake, prompt, unattended permissions, the
//! stop-reason/failure mapping of seed 000, start rollback and dispose.
//!
//! Every fact is local to one run ([`AcpRun`]); nothing diagnostic is shared between runs.

mod config;
mod mapping;

use std::sync::{Arc, Mutex};

use conform_protocol::subject::StartError;
use serde_json::{Value, json};
use tokio::sync::{mpsc, watch};

use crate::cli::Defects;
use crate::diagnostic::{
    Category, FailureLine, PermissionFact, Policy, Stage, limit_diagnostic, tool_kind,
    with_permission,
};
use crate::driver::{Driver, StartFailure, Wired, wire, with_rollback};
use crate::host::{SubagentResult, text_output};
use crate::jsonrpc::{ErrorObject, Handler, IdStyle, JsonRpc, Reading, Reply, RpcError};
use crate::process::{ManagedChild, SpawnError, Spawned};
use crate::provider::{
    ABORT_ERROR_NAME, Log, ProviderEvent, RunSpec, StderrTail, Step, close_and_settle, race, reject,
};

pub use config::AcpConfig;
pub use mapping::{answer_permission, map_stop_reason};

pub const ERROR_NAME: &str = "AcpRunFailure";
pub const PREFIX: &str = "subagent-acp: ";
pub const ABORTED_BEFORE_START: &str = "subagent request was aborted before the ACP child started";

#[derive(Default)]
struct RunState {
    session_id: Option<String>,
    prompting: bool,
    /// The result was settled: later permission requests are answered `cancelled`, later chunks
    /// are no longer part of the output.
    settled: bool,
    output: String,
    permission: Option<PermissionFact>,
    /// The title of the tool call the latest permission fact is about (only the
    /// `title-in-permission-line` defect ever shows it).
    permission_title: Option<String>,
}

struct AcpHandler {
    state: Arc<Mutex<RunState>>,
    policy: Policy,
    log: Log,
    /// The `permission-fact-per-provider` defect.
    shared_fact: bool,
}

/// The `permission-fact-per-provider` defect's store: one fact for every ACP run.
static PROVIDER_FACT: Mutex<Option<PermissionFact>> = Mutex::new(None);

/// What a prompt's result is made of, taken as the prompt settles.
struct Facts {
    output: String,
    permission: Option<PermissionFact>,
    /// The latest permission request's tool title (only a seeded defect shows it).
    title: Option<String>,
}

impl Handler for AcpHandler {
    fn on_request(&self, _id: &Value, method: &str, params: Value) -> Reply {
        if method != "session/request_permission" {
            (self.log)(format!("ACP child sent unsupported request {method}"));
            return Reply::Error(ErrorObject::method_not_found(method));
        }
        let mut st = self.state.lock().expect("run state");
        if st.settled {
            return Reply::Result(json!({"outcome": {"outcome": "cancelled"}}));
        }
        let (answer, allowed) = answer_permission(self.policy, &params);
        if st.prompting {
            st.permission = Some(PermissionFact {
                policy: self.policy,
                request: tool_kind(params.get("toolCall").and_then(|t| t.get("kind"))),
                allowed,
            });
            if self.shared_fact {
                *PROVIDER_FACT.lock().expect("provider fact") = st.permission;
            }
            st.permission_title = params
                .pointer("/toolCall/title")
                .and_then(Value::as_str)
                .map(str::to_owned);
        }
        Reply::Result(answer)
    }

    fn on_notification(&self, method: &str, params: Value) {
        if method != "session/update" {
            return;
        }
        let mut st = self.state.lock().expect("run state");
        if st.settled {
            return;
        }
        if let (Some(ours), Some(theirs)) = (
            st.session_id.as_deref(),
            params.get("sessionId").and_then(Value::as_str),
        ) && ours != theirs
        {
            return;
        }
        let update = &params["update"];
        if update["sessionUpdate"] == "agent_message_chunk"
            && update["content"]["type"] == "text"
            && let Some(text) = update["content"]["text"].as_str()
        {
            st.output.push_str(text);
        }
    }

    fn on_garbage(&self, line: &str) {
        (self.log)(format!("ACP child wrote a non-JSON-RPC line: {line}"));
    }
}

/// One live ACP child and its facts.
pub(crate) struct AcpRun {
    config: AcpConfig,
    defects: Defects,
    log: Log,
    child: ManagedChild,
    rpc: JsonRpc,
    state: Arc<Mutex<RunState>>,
    stderr: Arc<StderrTail>,
    cancel_sent: bool,
}

fn failure(message: String) -> StartError {
    StartError {
        name: ERROR_NAME.into(),
        message,
    }
}

fn teardown_line() -> FailureLine {
    FailureLine::acp(Stage::Teardown, Category::Unknown)
}

impl Driver for AcpRun {
    const CHILD: &'static str = "ACP child";
    const CHILD_SHORT: &'static str = "child";
    type Config = AcpConfig;
    const OWN_CWD: bool = true;
    type Session = String;
    type Failure = FailureLine;

    fn bad_config() -> StartError {
        start_line(Stage::Initialize, Category::Configuration)
    }

    fn aborted_before_start() -> StartError {
        aborted_error()
    }

    fn bad_cwd(_cwd: &str) -> StartError {
        start_line(Stage::Initialize, Category::Configuration)
    }

    fn spawn_failed(error: &SpawnError, log: &Log) -> StartError {
        log(format!("ACP child {error}"));
        start_line(Stage::Process, Category::ProcessStart)
    }

    fn connect(config: AcpConfig, defects: Defects, log: Log, spawned: Spawned) -> AcpRun {
        let state = Arc::new(Mutex::new(RunState::default()));
        let handler = Arc::new(AcpHandler {
            state: state.clone(),
            policy: config.permission,
            log: log.clone(),
            shared_fact: defects.permission_fact_per_provider,
        });
        let Wired { child, rpc, stderr } = wire(
            spawned,
            handler,
            (IdStyle::Counter, Reading::of(&defects)),
            &log,
        );
        AcpRun {
            config,
            defects,
            log,
            child,
            rpc,
            state,
            stderr,
            cancel_sent: false,
        }
    }

    async fn handshake(
        &mut self,
        spec: &RunSpec,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<String, StartFailure<FailureLine>> {
        let session_id = self.open_session(spec, cancel).await?;
        self.state.lock().expect("run state").session_id = Some(session_id.clone());
        Ok(session_id)
    }

    async fn failed_start(
        &mut self,
        line: FailureLine,
        events: &mpsc::UnboundedSender<ProviderEvent>,
    ) -> Option<StartError> {
        let mut message = format!("{PREFIX}{line}");
        if self.defects.leak_raw_error {
            message = self.leak(message).await;
        }
        if self.defects.reject_before_rollback {
            // Seeded defect: reject first, leave the rollback to run behind the rejection.
            reject(events, failure(message), false);
            let _ = self.teardown().await;
            return None;
        }
        let rollback = self.teardown().await;
        Some(with_rollback(failure(message), rollback))
    }

    async fn run_task(
        &mut self,
        spec: &RunSpec,
        session_id: &String,
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult {
        self.prompt(spec, session_id, cancel).await
    }

    async fn dispose(&mut self) -> Result<(), StartError> {
        self.send_cancel().await;
        self.teardown().await
    }

    /// Close stdin and walk the ladder. Raw failure goes to the host log only.
    async fn teardown(&mut self) -> Result<(), StartError> {
        let settled = close_and_settle(
            &self.rpc,
            &self.child,
            self.config.dispose_eof_grace,
            self.config.dispose_grace,
            &self.defects,
            "ACP child",
            &self.log,
        )
        .await;
        if settled {
            Ok(())
        } else {
            Err(failure(format!("{PREFIX}{}", teardown_line())))
        }
    }
}

fn start_line(stage: Stage, category: Category) -> StartError {
    failure(format!("{PREFIX}{}", FailureLine::acp(stage, category)))
}

fn aborted_error() -> StartError {
    StartError {
        name: ABORT_ERROR_NAME.into(),
        message: ABORTED_BEFORE_START.into(),
    }
}

impl AcpRun {
    async fn open_session(
        &mut self,
        spec: &RunSpec,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<String, StartFailure<FailureLine>> {
        let init = self.rpc.request(
            "initialize",
            if self.defects.acp_fs_capability {
                json!({"protocolVersion": 1,
                    "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}}})
            } else {
                json!({"protocolVersion": 1, "clientCapabilities": {}})
            },
        );
        match race(init, cancel).await {
            Step::Cancelled => return Err(StartFailure::Cancelled),
            Step::Done(Ok(_)) => {}
            Step::Done(Err(RpcError::Remote { code, message, .. })) => {
                (self.log)(format!("initialize error response {code}: {message}"));
                return Err(StartFailure::Failed(FailureLine::acp(
                    Stage::Initialize,
                    Category::Transport,
                )));
            }
            Step::Done(Err(e)) => {
                (self.log)(format!("initialize failed: {e}"));
                return Err(StartFailure::Failed(
                    self.wire_lost(Stage::Initialize, Stage::Initialize).await,
                ));
            }
        }
        let params = if self.defects.omit_mcp_servers {
            json!({"cwd": spec.runtime.cwd})
        } else {
            json!({"cwd": spec.runtime.cwd, "mcpServers": []})
        };
        let new = self.rpc.request("session/new", params);
        match race(new, cancel).await {
            Step::Cancelled => Err(StartFailure::Cancelled),
            // Any string is a session id, the empty one included (the host checks the type only).
            Step::Done(Ok(v)) => match v.get("sessionId").and_then(Value::as_str) {
                Some(id) => Ok(id.to_owned()),
                _ => {
                    (self.log)("ACP child published without a session id".into());
                    Err(StartFailure::Failed(FailureLine::acp(
                        Stage::NewSession,
                        Category::Protocol,
                    )))
                }
            },
            Step::Done(Err(RpcError::Remote { code, message, .. })) => {
                (self.log)(format!("session/new error response {code}: {message}"));
                Err(StartFailure::Failed(FailureLine::acp(
                    Stage::NewSession,
                    Category::Protocol,
                )))
            }
            Step::Done(Err(e)) => {
                (self.log)(format!("session/new failed: {e}"));
                Err(StartFailure::Failed(
                    self.wire_lost(Stage::NewSession, Stage::NewSession).await,
                ))
            }
        }
    }

    /// Classify a lost wire: if the child exits within `disposeGraceMs`, its exit facts at
    /// `exit_stage`; otherwise `transport` at `transport_stage`.
    async fn wire_lost(&self, exit_stage: Stage, transport_stage: Stage) -> FailureLine {
        match self.child.wait_exit(self.config.dispose_grace).await {
            Some(exit) => FailureLine::acp(exit_stage, Category::ProcessExit).with_exit(exit),
            None => FailureLine::acp(transport_stage, Category::Transport),
        }
    }

    /// Sends the task and settles its one result: the facts as they stand when the prompt
    /// settles (or is cancelled), the answer mapped, the seeded defects that bend it applied.
    async fn prompt(
        &mut self,
        spec: &RunSpec,
        session_id: &str,
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult {
        self.state.lock().expect("run state").prompting = true;
        // A handle of its own: the prompt stays borrowed past a cancel (seeded defect below).
        let rpc = self.rpc.clone();
        let prompt = rpc.request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": spec.task}]}),
        );
        tokio::pin!(prompt);
        let step = race(&mut prompt, cancel).await;
        let Facts {
            mut output,
            permission,
            title,
        } = self.settle_facts();
        let answer = match step {
            Step::Cancelled => {
                // Local cancel: aborted at once, no diagnostic; then tell the child.
                self.send_cancel().await;
                if self.defects.await_cancelled_answer {
                    let _ = prompt.await;
                }
                return SubagentResult {
                    stop_reason: "aborted".into(),
                    output: text_output(&output),
                    diagnostic: None,
                };
            }
            Step::Done(answer) => answer,
        };
        let (stop_reason, diagnostic) = self
            .answered(answer, permission.as_ref(), &mut output)
            .await;
        let diagnostic = self.bent(stop_reason, diagnostic, title).await;
        SubagentResult {
            stop_reason: stop_reason.into(),
            output: text_output(&output),
            diagnostic: diagnostic.map(|d| limit_diagnostic(&d)),
        }
    }

    /// The run's facts at the moment its prompt settles: later chunks and permissions do not
    /// count.
    fn settle_facts(&self) -> Facts {
        let mut st = self.state.lock().expect("run state");
        st.settled = true;
        let permission = if self.defects.permission_fact_per_provider {
            *PROVIDER_FACT.lock().expect("provider fact")
        } else {
            st.permission
        };
        Facts {
            output: std::mem::take(&mut st.output),
            permission,
            title: st.permission_title.take(),
        }
    }

    /// The stop reason and diagnostic of the prompt's answer (a stop reason, an error response,
    /// or the wire lost).
    async fn answered(
        &mut self,
        answer: Result<Value, RpcError>,
        permission: Option<&PermissionFact>,
        output: &mut String,
    ) -> (&'static str, Option<String>) {
        match answer {
            Ok(_)
                if self.defects.exit_beats_terminal
                    && self
                        .child
                        .wait_exit(std::time::Duration::from_millis(500))
                        .await
                        .is_some() =>
            {
                let line = self.wire_lost(Stage::Process, Stage::Prompt).await;
                ("error", Some(with_permission(&line, permission)))
            }
            Ok(v) => {
                let (stop, diagnostic) = map_stop_reason(
                    v.get("stopReason"),
                    permission,
                    self.defects.max_tokens_as_error,
                );
                // Seeded defect: an unknown stop reason copied into the diagnostic.
                match v.get("stopReason").and_then(Value::as_str) {
                    Some(raw) if self.defects.copy_unknown_stop_reason && stop == "error" => (
                        stop,
                        diagnostic.map(|d| format!("{d} (stop reason: {raw})")),
                    ),
                    _ => (stop, diagnostic),
                }
            }
            Err(RpcError::Remote {
                code,
                message,
                data,
            }) => {
                (self.log)(format!("session/prompt error response {code}: {message}"));
                let line = FailureLine::acp(Stage::Prompt, Category::Unknown);
                let mut d = with_permission(&line, permission);
                // Seeded defect: the error payload's `data` copied into the diagnostic.
                if self.defects.error_data_in_diagnostic
                    && let Some(data) = data
                {
                    d = format!("{d} {data}");
                }
                let d = crate::leak::prompt_error_leaks(&self.defects, d, &message, output);
                ("error", Some(d))
            }
            Err(e) => {
                (self.log)(format!("session/prompt failed: {e}"));
                let line = self.wire_lost(Stage::Process, Stage::Prompt).await;
                ("error", Some(with_permission(&line, permission)))
            }
        }
    }

    /// The diagnostic as the seeded defects that leak into it bend it (the permission request's
    /// title, the raw stderr tail); as it is with every defect off.
    async fn bent(
        &self,
        stop_reason: &str,
        mut diagnostic: Option<String>,
        title: Option<String>,
    ) -> Option<String> {
        // Seeded defect: the tool call's title placed in the permission line.
        if self.defects.title_in_permission_line
            && let Some(title) = title
        {
            diagnostic = diagnostic
                .map(|d| d.replace("; decision: ", &format!("; tool: {title}; decision: ")));
        }
        if self.defects.leak_raw_error && stop_reason != "completed" {
            diagnostic = Some(match diagnostic {
                Some(d) => self.leak(d).await,
                None => self.leak(String::new()).await,
            });
        }
        diagnostic
    }

    /// The `leak-raw-error` defect: append the raw stderr tail.
    async fn leak(&self, text: String) -> String {
        self.stderr.leak(text).await
    }

    /// `session/cancel`, once per run, only while the session is known and the wire is open.
    async fn send_cancel(&mut self) {
        if self.cancel_sent || !self.rpc.is_open() || self.defects.skip_session_cancel {
            return;
        }
        let Some(session_id) = self.state.lock().expect("run state").session_id.clone() else {
            return;
        };
        self.cancel_sent = true;
        let member = if self.defects.cancel_misspelled_session {
            "session"
        } else {
            "sessionId"
        };
        if let Err(e) = self
            .rpc
            .notify("session/cancel", json!({ member: session_id }))
            .await
        {
            (self.log)(format!("session/cancel not delivered: {e}"));
        }
    }
}

#[cfg(test)]
mod tests;
