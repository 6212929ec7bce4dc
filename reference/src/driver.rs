//! The one skeleton every out-of-process provider follows, written once: read the
//! configuration, check the start, spawn the runtime in its working directory, handshake,
//! publish, run the task, dispose — reporting each step to the host as a [`ProviderEvent`].
//! A provider implements [`Driver`]: what each step means for its protocol and how each
//! failure is shown.

use std::path::{Path, PathBuf};

use conform_protocol::subject::{Runtime, StartError};
use tokio::sync::{mpsc, watch};

use crate::cli::Defects;
use crate::host::SubagentResult;
use std::sync::Arc;

use crate::jsonrpc::{Handler, IdStyle, JsonRpc, Reading};
use crate::process::{ManagedChild, SpawnError, Spawned};
use crate::provider::{
    Log, ProviderConfig, ProviderEvent, RunSpec, StderrTail, forward_stderr, reject, spawn_runtime,
};
use crate::util::{fresh_uuid, rfc3339_now};

/// How a handshake did not reach a published run.
pub(crate) enum StartFailure<F> {
    /// Local cancellation arrived first.
    Cancelled,
    /// The runtime failed it; `F` says how, in the provider's own terms.
    Failed(F),
}

/// One provider's part of the skeleton. Only the crate implements it: its futures stay `Send`
/// because every implementation is concrete where it is spawned.
#[allow(async_fn_in_trait)]
pub(crate) trait Driver: Sized + Send {
    /// How the host's logs name the child (`ACP child`, `Codex app-server`).
    const CHILD: &'static str;
    /// How the host log names the child in passing (`child`, `app-server`).
    const CHILD_SHORT: &'static str;
    type Config: ProviderConfig + Send;
    /// Whether the provider has a working directory key of its own (`cwd`), over the parent's.
    const OWN_CWD: bool = false;
    /// What the handshake hands to the task (a session or thread id).
    type Session: Send;
    type Failure: Send;

    /// The rejection of a configuration that cannot be used.
    fn bad_config() -> StartError;

    /// Reads the provider's configuration; an invalid one is logged and rejected.
    fn configure(spec: &RunSpec, log: &Log, defects: &Defects) -> Result<Self::Config, StartError> {
        let mut config = if defects.durations_unchecked {
            // Seeded defect: an invalid duration read as if it were not set.
            std::borrow::Cow::Owned(crate::provider::without_invalid_durations(&spec.config))
        } else {
            std::borrow::Cow::Borrowed(&spec.config)
        };
        if defects.own_cwd_ignored {
            // Seeded defect: the provider's own working directory is never read.
            config.to_mut().remove("cwd");
        }
        // Seeded defect: a key at its bound itself refused, as if the bound were exclusive.
        let exclusive = defects
            .bounds_exclusive
            .then(|| crate::provider::at_a_bound(&config))
            .flatten();
        let valid = match exclusive {
            Some(why) => Err(why.into()),
            None => Self::Config::from_map(&config),
        }
        .map_err(|why| {
            log(format!(
                "invalid {} provider configuration: {why}",
                Self::Config::PROVIDER
            ));
            Self::bad_config()
        })?;
        if defects.graces_not_applied {
            // Seeded defect: the durations validated, then the defaults used.
            let defaults = crate::provider::without_durations(&spec.config);
            return Ok(Self::Config::from_map(&defaults).expect("valid without its durations"));
        }
        Ok(valid)
    }

    /// Checks the start before anything is spawned (Codex: a blank task).
    fn precheck(_spec: &RunSpec) -> Result<(), StartError> {
        Ok(())
    }

    /// What the provider adds to the runtime's command line and environment (Claude Code: the
    /// flags and variables the Agent SDK passes its CLI).
    fn extend_runtime(_config: &Self::Config, _defects: &Defects, _runtime: &mut Runtime) {}

    /// The rejection of a start cancelled before the child was spawned.
    fn aborted_before_start() -> StartError;

    /// The rejection of a working directory that is not an absolute existing directory.
    fn bad_cwd(cwd: &str) -> StartError;

    /// The rejection of a runtime that could not be spawned (logged here).
    fn spawn_failed(error: &SpawnError, log: &Log) -> StartError;

    /// Wires the spawned child to the provider's protocol.
    fn connect(config: Self::Config, defects: Defects, log: Log, spawned: Spawned) -> Self;

    /// Runs the protocol's handshake up to the point where the run can be published.
    async fn handshake(
        &mut self,
        spec: &RunSpec,
        cancel: &mut watch::Receiver<bool>,
    ) -> Result<Self::Session, StartFailure<Self::Failure>>;

    /// The rejection of a start cancelled during the handshake once its child is gone (the
    /// same as before the start, unless the provider says otherwise).
    fn aborted_during_start() -> StartError {
        Self::aborted_before_start()
    }

    /// Rolls back a start cancelled during the handshake; the rejection to report: the abort,
    /// or only the cleanup fact when the teardown failed.
    async fn cancelled_start(&mut self) -> StartError {
        match self.teardown().await {
            Ok(()) => Self::aborted_during_start(),
            Err(cleanup) => cleanup,
        }
    }

    /// Rolls back a failed handshake; the rejection to report (`None` when it was already
    /// reported, as a seeded defect does).
    async fn failed_start(
        &mut self,
        failure: Self::Failure,
        events: &mpsc::UnboundedSender<ProviderEvent>,
    ) -> Option<StartError>;

    /// Runs the task on the published session to its one result.
    async fn run_task(
        &mut self,
        spec: &RunSpec,
        session: &Self::Session,
        cancel: &mut watch::Receiver<bool>,
    ) -> SubagentResult;

    /// Ends the child after the result: its teardown ladder (ACP and Codex tell the runtime
    /// first).
    async fn dispose(&mut self) -> Result<(), StartError> {
        self.teardown().await
    }

    /// The child's teardown ladder (dispose's, a start's rollback): the rejection of a
    /// teardown that failed.
    async fn teardown(&mut self) -> Result<(), StartError>;
}

/// A failed start's rejection: `error` alone when the rollback settled, else an
/// `AggregateError` keeping both the start's message and the teardown's.
pub(crate) fn with_rollback(error: StartError, rollback: Result<(), StartError>) -> StartError {
    match rollback {
        Ok(()) => error,
        Err(teardown) => StartError {
            name: "AggregateError".into(),
            message: format!("{}; {}", error.message, teardown.message),
        },
    }
}

/// Seeded defect `validate-after-spawn`: the child is started before the configuration is
/// read, and let go (its stdin closed) when it proves invalid — the rejection is the same, but
/// something ran.
fn spawn_and_drop(runtime: &Runtime, log: &Log, defects: &Defects) {
    let cwd = Path::new(&runtime.cwd);
    if cwd.is_dir() {
        drop(spawn_runtime(runtime, cwd, log, defects));
    }
}

/// Drives one run of provider `D` from its configuration to a settled dispose: launch the
/// child, open its session, publish, run the task, dispose.
pub(crate) async fn drive<D: Driver>(
    mut spec: RunSpec,
    defects: Defects,
    log: Log,
    mut cancel: watch::Receiver<bool>,
    events: mpsc::UnboundedSender<ProviderEvent>,
) {
    if D::OWN_CWD && !defects.own_cwd_ignored {
        // The provider's own `cwd`, when set, is where its child runs and what its wire names
        // (a relative one taken from the parent's); an invalid one is refused with the rest of
        // the configuration.
        if let Ok(Some(own)) = crate::provider::path(&spec.config, "cwd") {
            spec.runtime.cwd = crate::provider::working_dir(&spec.runtime.cwd, Some(&own));
        }
    }
    let start = Start {
        spec: &spec,
        defects,
        events: &events,
    };
    let Some((mut run, child)) = start.launch::<D>(&log, &cancel) else {
        return;
    };
    let Some(session) = start.open(&mut run, &mut cancel).await else {
        return;
    };
    let _ = events.send(ProviderEvent::Published {
        child_session_key: fresh_uuid(),
        dispatch_at: rfc3339_now(),
    });
    let result = run.run_task(&spec, &session, &mut cancel).await;
    if defects.late_result_after_exit && child.exited().is_some() {
        // Seeded defect `late-result-after-exit`: nothing is left to wait for.
        tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    }
    let _ = events.send(ProviderEvent::Result(result));
    let disposed = if defects.skip_teardown {
        // Seeded defect: `settled` at once, without cancel, stdin EOF or signals.
        log(format!(
            "skip-teardown defect: dispose leaves the {} running",
            D::CHILD_SHORT
        ));
        Ok(())
    } else {
        run.dispose().await
    };
    let _ = events.send(ProviderEvent::Disposed(disposed));
}

/// A run's start, up to publication: what every start phase reads and how it rejects.
struct Start<'a> {
    spec: &'a RunSpec,
    defects: Defects,
    events: &'a mpsc::UnboundedSender<ProviderEvent>,
}

impl Start<'_> {
    /// A rejected start (not a cancellation): it shows only the provider's own fixed text.
    fn refuse(&self, mut error: StartError) {
        if self.defects.task_in_start_error {
            // Seeded defect: the task echoed into the start error.
            error.message = format!("{}: {}", error.message, self.spec.task);
        }
        reject(self.events, error, false)
    }

    /// Configures, checks the start and spawns the runtime in its working directory: the run
    /// wired to its child, and the child. `None` when the start was rejected (or stubbed).
    fn launch<D: Driver>(
        &self,
        log: &Log,
        cancel: &watch::Receiver<bool>,
    ) -> Option<(D, ManagedChild)> {
        let (spec, defects) = (self.spec, self.defects);
        let config = match D::configure(spec, log, &defects) {
            Ok(c) => c,
            Err(e) => {
                if defects.validate_after_spawn {
                    spawn_and_drop(&spec.runtime, log, &defects);
                }
                self.refuse(e);
                return None;
            }
        };
        if let Err(e) = D::precheck(spec) {
            self.refuse(e);
            return None;
        }
        // A signal already aborted: rejected before anything is spawned (dsh-facts §4.2 step 1)
        // — unless the seeded defect spawns anyway and leaves it to the handshake's race.
        if *cancel.borrow() && !defects.spawns_when_aborted {
            reject(self.events, D::aborted_before_start(), true);
            return None;
        }
        if defects.stub_result {
            stub_result(self.events);
            return None;
        }
        let cwd = PathBuf::from(&spec.runtime.cwd);
        if !cwd.is_absolute() || !cwd.is_dir() {
            log(format!(
                "{} cwd is not an absolute existing directory: {cwd:?}",
                D::CHILD
            ));
            self.refuse(D::bad_cwd(&spec.runtime.cwd));
            return None;
        }
        let mut runtime = spec.runtime.clone();
        D::extend_runtime(&config, &defects, &mut runtime);
        let spawned = match spawn_runtime(&runtime, Path::new(&cwd), log, &defects) {
            Ok(s) => s,
            Err(e) => {
                self.refuse(D::spawn_failed(&e, log));
                return None;
            }
        };
        log(format!(
            "{} spawned, process group {}",
            D::CHILD,
            spawned.child.pgid()
        ));
        let child = spawned.child.clone();
        Some((D::connect(config, defects, log.clone(), spawned), child))
    }

    /// The handshake: the session to publish, or `None` once a cancelled or failed start is
    /// rolled back and rejected.
    async fn open<D: Driver>(
        &self,
        run: &mut D,
        cancel: &mut watch::Receiver<bool>,
    ) -> Option<D::Session> {
        match run.handshake(self.spec, cancel).await {
            Ok(s) => Some(s),
            Err(StartFailure::Cancelled) => {
                let error = run.cancelled_start().await;
                reject(self.events, error, true);
                None
            }
            Err(StartFailure::Failed(failure)) => {
                if let Some(error) = run.failed_start(failure, self.events).await {
                    self.refuse(error);
                }
                None
            }
        }
    }
}

/// Seeded defect `stub-result`: a published run that completes empty, nothing spawned.
fn stub_result(events: &mpsc::UnboundedSender<ProviderEvent>) {
    let _ = events.send(ProviderEvent::Published {
        child_session_key: fresh_uuid(),
        dispatch_at: rfc3339_now(),
    });
    let _ = events.send(ProviderEvent::Result(SubagentResult {
        stop_reason: "completed".into(),
        output: Vec::new(),
        diagnostic: None,
    }));
    let _ = events.send(ProviderEvent::Disposed(Ok(())));
}

/// A spawned child wired up: its stderr forwarded to the host log (and kept as a tail), JSON-RPC
/// over its stdio with `handler` answering what the child sends.
pub(crate) struct Wired {
    pub child: ManagedChild,
    pub rpc: JsonRpc,
    pub stderr: Arc<StderrTail>,
}

pub(crate) fn wire(
    spawned: Spawned,
    handler: Arc<dyn Handler>,
    (ids, reading): (IdStyle, Reading),
    log: &Log,
) -> Wired {
    let stderr = forward_stderr(spawned.stderr, log.clone());
    let rpc = JsonRpc::with_ids(spawned.stdout, spawned.stdin, handler, ids, reading);
    Wired {
        child: spawned.child,
        rpc,
        stderr,
    }
}
