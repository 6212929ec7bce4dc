//! What every out-of-process provider shares with the host side: the events it reports, the
//! run spec it receives, local cancellation, config durations and the child's stderr tail.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use conform_protocol::subject::{Runtime, StartError};
use serde_json::{Map, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::ChildStderr;
use tokio::sync::{Notify, mpsc, watch};
use tokio::time::{Instant, sleep_until};

use crate::host::SubagentResult;

/// Host-only log sink (becomes `host_log` for this run).
pub type Log = Arc<dyn Fn(String) + Send + Sync>;

/// Lines of the child's stderr kept for the defects that leak it.
const STDERR_TAIL_LINES: usize = 50;

/// Name of the error for a start rejected by local cancellation (the real host throws a plain
/// `Error`).
pub const ABORT_ERROR_NAME: &str = "Error";

/// What the host side hears from the provider.
#[derive(Debug)]
pub enum ProviderEvent {
    Published {
        child_session_key: String,
        dispatch_at: String,
    },
    Rejected {
        error: StartError,
        cancelled: bool,
    },
    Result(SubagentResult),
    Disposed(Result<(), StartError>),
}

/// What one `start` asks the provider to run.
pub struct RunSpec {
    pub task: String,
    pub runtime: Runtime,
    pub config: Map<String, Value>,
}

pub fn reject(events: &mpsc::UnboundedSender<ProviderEvent>, error: StartError, cancelled: bool) {
    let _ = events.send(ProviderEvent::Rejected { error, cancelled });
}

/// A provider's configuration, read from `start.config` (the host's own key names; keys of
/// other providers are ignored). Why a configuration is invalid goes to the host log only.
pub trait ProviderConfig: Sized {
    /// How the host log names the provider (`invalid <PROVIDER> provider configuration: …`).
    const PROVIDER: &'static str;

    /// The configuration, or why `config` is not one.
    fn from_map(config: &Map<String, Value>) -> Result<Self, ConfigError>;
}

/// Why a provider configuration is invalid, in the host log's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{key} must be a positive number of ms")]
    Duration { key: String },
    #[error("{key} must be a non-empty path")]
    Path { key: String },
    /// A key's own rule (a name, a mode, a bound), as that key says it.
    #[error("{0}")]
    Invalid(String),
}

impl From<String> for ConfigError {
    fn from(why: String) -> ConfigError {
        ConfigError::Invalid(why)
    }
}

/// The largest delay a JavaScript timer takes (`MAX_TIMER_DELAY_MS`, 2^31 − 1 ms): a duration
/// may be this, not more.
pub const MAX_TIMER_MS: u64 = 2_147_483_647;

/// Largest integer a JavaScript number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A positive millisecond duration from `config[key]` (absent or `null`: `default_ms`).
pub fn duration_ms(
    config: &Map<String, Value>,
    key: &str,
    default_ms: u64,
) -> Result<Duration, ConfigError> {
    match config.get(key) {
        None | Some(Value::Null) => Ok(Duration::from_millis(default_ms)),
        Some(v) => match v.as_f64() {
            Some(ms) if ms.is_finite() && ms > 0.0 && ms <= MAX_TIMER_MS as f64 => {
                Ok(Duration::from_secs_f64(ms / 1000.0))
            }
            _ => Err(ConfigError::Duration { key: key.into() }),
        },
    }
}

/// A provider's own working directory key (`cwd`: ACP and the DSH SDK have one), if set: a
/// non-blank string. Where it points is checked at spawn, as the parent's is.
pub fn path(config: &Map<String, Value>, key: &str) -> Result<Option<String>, ConfigError> {
    match config.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(ConfigError::Path { key: key.into() }),
    }
}

/// The child's working directory: the provider's own `cwd` when set — a relative one taken from
/// the parent's — else the parent's, resolved as Node's `path.resolve` does (`.` and `..` by
/// their names, no link followed).
pub fn working_dir(parent: &str, own: Option<&str>) -> String {
    let Some(own) = own else {
        return parent.to_owned();
    };
    let joined = std::path::Path::new(parent).join(own);
    if !joined.is_absolute() {
        return own.to_owned();
    }
    let mut out = std::path::PathBuf::from("/");
    for part in joined.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::Normal(name) => out.push(name),
            _ => {}
        }
    }
    out.to_string_lossy().into_owned()
}

/// The durations the providers read, for the seeded defect that takes an invalid one as unset.
const DURATIONS: [&str; 3] = ["disposeGraceMs", "disposeEofGraceMs", "shutdownTimeoutMs"];

/// `config` without its invalid durations (what a provider that reads a duration without
/// validating it falls back from: its default).
pub fn without_invalid_durations(config: &Map<String, Value>) -> Map<String, Value> {
    let mut out = config.clone();
    for key in DURATIONS {
        if duration_ms(config, key, 1).is_err() {
            out.remove(key);
        }
    }
    out
}

/// A bounded key set to its bound itself, if one is (what a provider reading the bounds as
/// exclusive refuses: the seeded defect `bounds-exclusive`).
pub fn at_a_bound(config: &Map<String, Value>) -> Option<String> {
    let at = |key: &str, bound: u64| config.get(key).and_then(Value::as_f64) == Some(bound as f64);
    DURATIONS
        .iter()
        .find(|key| at(key, MAX_TIMER_MS))
        .map(|key| format!("{key} must be below the timer limit"))
        .or_else(|| {
            at("maxTokens", MAX_SAFE_INTEGER).then(|| "maxTokens must be below 2^53 − 1".to_owned())
        })
}

/// `config` without any of its durations (a provider that ignores them walks its defaults).
pub fn without_durations(config: &Map<String, Value>) -> Map<String, Value> {
    let mut out = config.clone();
    for key in DURATIONS {
        out.remove(key);
    }
    out
}

/// Resolves when local cancellation was requested (never, if the sender is gone).
pub async fn cancelled(cancel: &mut watch::Receiver<bool>) {
    if cancel.wait_for(|c| *c).await.is_err() {
        std::future::pending::<()>().await;
    }
}

pub enum Step<T> {
    Done(T),
    Cancelled,
}

/// `fut`, unless local cancellation comes first.
pub async fn race<T>(fut: impl Future<Output = T>, cancel: &mut watch::Receiver<bool>) -> Step<T> {
    tokio::select! {
        biased;
        _ = cancelled(cancel) => Step::Cancelled,
        v = fut => Step::Done(v),
    }
}

/// The child's stderr: every line goes to the host log; the last lines are kept for the
/// defects that leak them.
pub struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    done: watch::Sender<bool>,
}

pub fn forward_stderr(stderr: ChildStderr, log: Log) -> Arc<StderrTail> {
    let (done, _) = watch::channel(false);
    let tail = Arc::new(StderrTail {
        lines: Mutex::new(VecDeque::new()),
        done,
    });
    let t = tail.clone();
    tokio::spawn(async move {
        let mut reader = BufReader::new(stderr);
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            let line = crate::util::decode(&buf)
                .trim_end_matches(['\n', '\r'])
                .to_owned();
            log(format!("child stderr: {line}"));
            let mut lines = t.lines.lock().expect("stderr tail");
            lines.push_back(line);
            if lines.len() > STDERR_TAIL_LINES {
                lines.pop_front();
            }
        }
        t.done.send_replace(true);
    });
    tail
}

impl StderrTail {
    /// The kept lines, after waiting (bounded) for stderr to reach EOF.
    pub async fn lines(&self) -> Vec<String> {
        let mut done = self.done.subscribe();
        let _ = tokio::time::timeout(Duration::from_millis(500), done.wait_for(|d| *d)).await;
        self.lines
            .lock()
            .expect("stderr tail")
            .iter()
            .cloned()
            .collect()
    }

    /// The `leak-raw-error` defect: `text`, a newline and the raw tail (just the tail when
    /// `text` is empty).
    pub async fn leak(&self, text: String) -> String {
        let tail = self.lines().await;
        if tail.is_empty() {
            return text;
        }
        if text.is_empty() {
            tail.join("\n")
        } else {
            format!("{text}\n{}", tail.join("\n"))
        }
    }
}

/// How long a child that exited gets for the frames it wrote before exiting to be read (its
/// stdout EOF normally arrives at once; a grandchild holding the pipe must not stall us).
pub const EXIT_DRAIN: Duration = Duration::from_millis(250);

/// A request that also fails when the child exits, after [`EXIT_DRAIN`] for what it wrote
/// before exiting; `gone` names the loss in the error (host-only).
pub async fn request_until_exit(
    rpc: &crate::jsonrpc::JsonRpc,
    child: &crate::process::ManagedChild,
    method: &str,
    params: Value,
    gone: &str,
) -> Result<Value, crate::jsonrpc::RpcError> {
    let req = rpc.request(method, params);
    tokio::pin!(req);
    let mut exit = child.exit_watch();
    tokio::select! {
        r = &mut req => return r,
        _ = exit.wait_for(Option::is_some) => {}
    }
    match tokio::time::timeout(EXIT_DRAIN, req).await {
        Ok(r) => r,
        Err(_) => Err(crate::jsonrpc::RpcError::WireLost(gone.to_owned())),
    }
}

/// What woke a turn's wait ([`TurnWait::next`]).
pub enum Woke<T> {
    /// Local cancellation.
    Cancelled,
    /// The turn's request (`turn/start`, `session/prompt`) was answered.
    Answered(T),
    /// The run's state changed (an inbound frame was handled).
    Changed,
    /// The child closed its stdout (once).
    Eof,
    /// The child exited: what it wrote before gets [`EXIT_DRAIN`] to be read (once).
    Exited,
    /// The exit's drain is over.
    Drained,
}

/// The wait of a turn whose request is in flight: for local cancellation, the request's answer,
/// a change of the run's state, the child's stdout EOF, its exit and the drain after it, in that
/// order. The provider reads its state between two waits.
pub struct TurnWait {
    changed: Arc<Notify>,
    eof: watch::Receiver<bool>,
    eof_seen: bool,
    exit: watch::Receiver<Option<crate::diagnostic::ExitFacts>>,
    exit_deadline: Option<Instant>,
}

impl TurnWait {
    pub fn new(
        rpc: &crate::jsonrpc::JsonRpc,
        child: &crate::process::ManagedChild,
        changed: Arc<Notify>,
    ) -> TurnWait {
        TurnWait {
            changed,
            eof: rpc.eof_watch(),
            eof_seen: false,
            exit: child.exit_watch(),
            exit_deadline: None,
        }
    }

    /// The child's stdout reached EOF.
    pub fn eof_seen(&self) -> bool {
        self.eof_seen
    }

    /// The child exited and the drain after its exit is over.
    pub fn drained(&self) -> bool {
        self.exit_deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Waits for the next of these; `request` only while `pending`.
    pub async fn next<F: Future>(
        &mut self,
        cancel: &mut watch::Receiver<bool>,
        request: Pin<&mut F>,
        pending: bool,
    ) -> Woke<F::Output> {
        let deadline = self.exit_deadline;
        tokio::select! {
            biased;
            _ = cancelled(cancel) => Woke::Cancelled,
            r = request, if pending => Woke::Answered(r),
            _ = self.changed.notified() => Woke::Changed,
            _ = self.eof.wait_for(|e| *e), if !self.eof_seen => {
                self.eof_seen = true;
                Woke::Eof
            }
            _ = self.exit.wait_for(Option::is_some), if deadline.is_none() => {
                self.exit_deadline = Some(Instant::now() + EXIT_DRAIN);
                Woke::Exited
            }
            _ = sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                Woke::Drained
            }
        }
    }
}

/// Spawns the run's runtime in its own process group with the scrubbed environment plus
/// `runtime.env` (entries that are not strings are logged and ignored).
pub fn spawn_runtime(
    runtime: &Runtime,
    cwd: &std::path::Path,
    log: &Log,
    defects: &crate::cli::Defects,
) -> Result<crate::process::Spawned, crate::process::SpawnError> {
    let (mut env, ignored) = crate::process::child_env(std::env::vars(), &runtime.env);
    if defects.inherit_whole_env {
        // Seeded defect: the parent's credentials reach the child.
        env.extend(std::env::vars().filter(|(k, _)| !runtime.env.contains_key(k)));
    }
    if !ignored.is_empty() {
        log(format!(
            "ignored non-string runtime env entries: {ignored:?}"
        ));
    }
    let spawned = crate::process::spawn(&runtime.command, &runtime.args, cwd, &env)?;
    if defects.kill_runtime_after_spawn {
        // Seeded defect: the runtime never plays its script (its pid leads its own group).
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(spawned.child.pgid()),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    Ok(spawned)
}

/// Closes the child's stdin and walks the teardown ladder (EOF grace, SIGTERM to the tree the
/// run owns, SIGKILL), logging the outcome for the host as `<what> settled …` or `<what> teardown
/// failed: …`. True when the whole tree settled.
pub async fn close_and_settle(
    rpc: &crate::jsonrpc::JsonRpc,
    child: &crate::process::ManagedChild,
    eof_grace: Duration,
    grace: Duration,
    defects: &crate::cli::Defects,
    what: &str,
    log: &Log,
) -> bool {
    rpc.close_stdin().await;
    let eof = rpc.eof_watch();
    match child
        .settle(
            &eof,
            eof_grace,
            grace,
            crate::process::Ladder {
                skip_sigterm: defects.skip_sigterm,
                no_sigkill: defects.no_sigkill_rung,
                group_only: defects.process_group_only_kill,
                settled_early: defects.settled_early,
            },
        )
        .await
    {
        Ok(()) => {
            if defects.needless_grace {
                tokio::time::sleep(grace).await;
            }
            let exit = child.exited().unwrap_or_default();
            log(format!(
                "{what} settled (exit code {:?}, signal {:?})",
                exit.code, exit.signal
            ));
            true
        }
        Err(e) => {
            log(format!("{what} teardown failed: {e}"));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_own_working_directory_is_taken_from_the_parents_as_path_resolve_does() {
        assert_eq!(working_dir("/w/r7/workspace", None), "/w/r7/workspace");
        assert_eq!(working_dir("/w/r7/workspace", Some("..")), "/w/r7");
        assert_eq!(
            working_dir("/w/r7/workspace", Some("./a/../b")),
            "/w/r7/workspace/b"
        );
        assert_eq!(
            working_dir("/w/r7/workspace", Some("/elsewhere/")),
            "/elsewhere"
        );
        // A relative parent leaves a relative own one relative: refused at spawn, as before.
        assert_eq!(working_dir("rel", Some("x")), "x");
        let config = |v: Value| v.as_object().unwrap().clone();
        assert_eq!(path(&config(serde_json::json!({})), "cwd"), Ok(None));
        assert!(path(&config(serde_json::json!({"cwd": " "})), "cwd").is_err());
        assert!(path(&config(serde_json::json!({"cwd": 42})), "cwd").is_err());
    }

    #[test]
    fn durations() {
        let mut m = Map::new();
        assert_eq!(duration_ms(&m, "x", 7), Ok(Duration::from_millis(7)));
        m.insert("x".into(), Value::Null);
        assert_eq!(duration_ms(&m, "x", 7), Ok(Duration::from_millis(7)));
        m.insert("x".into(), 150.into());
        assert_eq!(duration_ms(&m, "x", 7), Ok(Duration::from_millis(150)));
        for bad in [
            serde_json::json!(0),
            serde_json::json!(-1),
            serde_json::json!("5"),
        ] {
            m.insert("x".into(), bad);
            assert!(duration_ms(&m, "x", 7).is_err());
        }
    }
}
