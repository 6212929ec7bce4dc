//! The command line every fake binary shares:
//!
//! ```text
//! fake-<protocol> --script <file.json> --side <socket> --run <id>
//! fake-<protocol> --grandchild --side <socket> --run <id> [--trap-sigterm] [--setsid] [--daemon]
//!     [--unregistered] [--anonymous [--clear-env]] [--linger-ms <ms>]
//! ```
//!
//! Errors (bad arguments, unreadable or invalid script) go to stderr and, when the side
//! channel is reachable, as a `Fault`; the exit code is then 2.

use std::sync::Arc;

use conform_protocol::script::Script;
use conform_protocol::side::{FakeEvent, Role, ToFake};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::codec::Codec;
use crate::engine::{self, Engine, SideAddr};
use crate::error::{FAULT_EXIT, FakeError, ScriptError};
use crate::process;
use crate::side::Side;
use crate::signals::{SignalPolicy, Signals};

#[derive(Debug, Default, PartialEq, clap::Parser)]
#[command(
    name = "fake",
    no_binary_name = true,
    disable_help_flag = true,
    disable_version_flag = true
)]
pub struct Args {
    /// The script to run (JSON).
    #[arg(long)]
    pub script: Option<String>,
    /// The harness's side-channel socket.
    #[arg(long)]
    pub side: Option<String>,
    /// The run id to register under.
    #[arg(long)]
    pub run: Option<String>,
    /// Run as a grandchild: register, then live until killed.
    #[arg(long)]
    pub grandchild: bool,
    #[arg(long)]
    pub trap_sigterm: bool,
    #[arg(long)]
    pub setsid: bool,
    /// Grandchild: start the real grandchild (these arguments without `--daemon`) and exit.
    #[arg(long)]
    pub daemon: bool,
    /// Grandchild: never register with the harness.
    #[arg(long)]
    pub unregistered: bool,
    /// Grandchild: never register, and exec `sleep` (arguments without the run's id).
    #[arg(long)]
    pub anonymous: bool,
    /// Grandchild, with `--anonymous`: exec with an empty environment.
    #[arg(long)]
    pub clear_env: bool,
    /// Grandchild: never register; once stdin reads EOF (the runtime is gone), wait this
    /// many ms and exit 0.
    #[arg(long)]
    pub linger_ms: Option<u64>,
    /// Grandchild: the fd to write one byte to once registered.
    #[arg(long)]
    pub ready_fd: Option<i32>,
    /// The runtime's own command line, after `--` (the flags a provider appends for its
    /// product: Claude Code's `--output-format stream-json …`).
    #[arg(last = true)]
    pub runtime_args: Vec<String>,
    /// The problem met while parsing, if any: it is reported on the side channel, so `--side`
    /// is still looked for in arguments clap rejected.
    #[arg(skip)]
    pub error: Option<String>,
}

impl Args {
    pub fn parse(args: impl IntoIterator<Item = String>) -> Args {
        use clap::Parser;
        let args: Vec<String> = args.into_iter().collect();
        match Args::try_parse_from(&args) {
            Ok(a) => a,
            Err(e) => {
                let side = args
                    .iter()
                    .position(|a| a == "--side")
                    .and_then(|i| args.get(i + 1))
                    .cloned();
                let why = e.to_string();
                let first = why.lines().next().unwrap_or_default();
                Args {
                    side,
                    error: Some(first.trim_start_matches("error: ").to_owned()),
                    ..Args::default()
                }
            }
        }
    }

    /// Whether the arguments are complete and known (`--side` is checked first, by the caller).
    pub fn check(&self) -> Result<(), FakeError> {
        if let Some(e) = &self.error {
            return Err(FakeError::Usage(e.clone()));
        }
        if self.run.is_none() {
            return Err(FakeError::Usage("--run <id> is required".into()));
        }
        Ok(())
    }
}

pub fn load_script(path: &str, codec: &mut dyn Codec) -> Result<Script, FakeError> {
    let text = std::fs::read_to_string(path).map_err(|source| FakeError::ScriptRead {
        path: path.into(),
        source,
    })?;
    let script: Script = serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
        what: path.into(),
        source,
    })?;
    prepare_script(script, codec)
}

/// A script the harness handed over in its acknowledgement.
pub fn offered_script(
    script: serde_json::Value,
    codec: &mut dyn Codec,
) -> Result<Script, FakeError> {
    let script: Script = serde_json::from_value(script).map_err(|source| ScriptError::Parse {
        what: "the script the harness sent".into(),
        source,
    })?;
    prepare_script(script, codec)
}

/// Checks a script against the codec and sets the product version it speaks.
fn prepare_script(script: Script, codec: &mut dyn Codec) -> Result<Script, FakeError> {
    engine::validate(&script, codec)?;
    codec
        .set_product_version(script.product_version.as_deref())
        .map_err(ScriptError::ProductVersion)?;
    Ok(script)
}

/// Entry point of a fake binary.
pub fn main(codec: Box<dyn Codec>) -> ! {
    main_with_args(codec, std::env::args().skip(1).collect(), Vec::new())
}

/// Entry point with explicit arguments; `self_args` are the leading arguments that make the
/// current executable this fake again (for grandchildren of a multi-call binary).
pub fn main_with_args(codec: Box<dyn Codec>, args: Vec<String>, self_args: Vec<String>) -> ! {
    let _ = process::SELF_ARGS.set(self_args);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| {
            eprintln!("fake: cannot start the runtime: {e}");
            std::process::exit(FAULT_EXIT)
        });
    runtime.block_on(run(args, codec));
    unreachable!("the fake never returns from its script")
}

/// The one-line usage, after any argument error.
const USAGE: &str = "usage: --side <socket> --run <id> [--script <file.json>] \
                 | --grandchild --side <socket> --run <id> [--trap-sigterm] [--setsid] [--daemon] [--unregistered] [--anonymous [--clear-env]] [--linger-ms <ms>]";

/// A fake's life: the grandchild forms that never register end first; every other fake
/// registers, waits for the harness's ack (which carries a runtime's script), then runs the
/// script (a registered grandchild lives until killed).
async fn run(argv: Vec<String>, mut codec: Box<dyn Codec>) {
    let args = Args::parse(argv);
    let Some(side_path) = args.side.clone() else {
        let why = args
            .error
            .as_deref()
            .unwrap_or("--side <socket> is required");
        eprintln!("fake: {why}\n{USAGE}");
        std::process::exit(FAULT_EXIT);
    };
    if args.grandchild {
        run_unregistered(&args).await;
        leave_group_by_hand(&args);
    }
    // Handlers first so no termination signal is lost; reported once `Register` is out.
    let signals = Signals::install().unwrap_or_else(|e| {
        eprintln!("fake: cannot install signal handlers: {e}");
        std::process::exit(FAULT_EXIT)
    });
    let (side, control, role) = register(&side_path, &args);
    // Nothing is said between the registration and the acknowledgement: every later line is
    // sealed with its key. A signal meanwhile waits in its stream, reported once sealed.
    let (control, offered) = crate::side::wait_for_ack(&side, role, control).await;
    if let Err(e) = args.check() {
        fail(&side, &format!("{e}\n{USAGE}"));
    }
    let policy = Arc::new(SignalPolicy::default());
    policy.set_ignore_sigterm(args.trap_sigterm);
    signals.spawn(side.clone(), policy.clone());
    let script = (!args.grandchild).then(|| runtime_script(&side, &args, offered, codec.as_mut()));

    if let Some(fd) = args.ready_fd {
        process::signal_ready(fd);
    }
    let Some(script) = script else {
        // A grandchild lives until something kills it.
        engine::park().await;
        unreachable!()
    };
    let incoming = crate::wire::spawn_stdin_reader(side.clone());
    let addr = SideAddr {
        path: side_path,
        run: args.run.unwrap_or_default(),
    };
    let engine = Engine::new(codec, side, addr, policy, incoming, control);
    engine.run(script.steps).await;
}

/// The grandchild forms that never tell the harness about themselves end here (by exec, exit,
/// or a signal while parked); returns for a grandchild that registers.
async fn run_unregistered(args: &Args) {
    if args.daemon {
        daemonize();
    }
    if args.anonymous {
        exec_anonymous(args);
    }
    if let Some(ms) = args.linger_ms {
        linger(args, ms);
    }
    if args.unregistered {
        // Nothing tells the harness about this one: it lives until killed.
        if let Some(fd) = args.ready_fd {
            process::signal_ready(fd);
        }
        engine::park().await;
        unreachable!()
    }
}

/// `--daemon`: the double fork, by exec (forking a process with threads would keep only one):
/// the real grandchild (these arguments without `--daemon`) inherits stdio, the ready fd and
/// the signal dispositions, and is an orphan once this one exits.
fn daemonize() -> ! {
    let argv: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--daemon")
        .collect();
    if let Err(e) = std::process::Command::new("/proc/self/exe")
        .args(argv)
        .spawn()
    {
        eprintln!("fake: the daemon could not be started: {e}");
        std::process::exit(FAULT_EXIT);
    }
    std::process::exit(0);
}

/// `--linger-ms`: lives while the runtime does (its stdin is a pipe only the runtime holds),
/// then takes `ms` to shut down, and exits 0 — a helper's own slow exit, which the provider
/// must wait out.
fn linger(args: &Args, ms: u64) -> ! {
    if let Some(fd) = args.ready_fd {
        process::signal_ready(fd);
    }
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    // The scripted length of the helper's shutdown, not a wait for anything.
    std::thread::sleep(std::time::Duration::from_millis(ms));
    std::process::exit(0);
}

/// `--anonymous`: becomes `sleep`, which carries nothing of the run (with `--clear-env`, not
/// even its environment).
fn exec_anonymous(args: &Args) -> ! {
    // Ready first: after the exec nothing of the fake is left to say so.
    if let Some(fd) = args.ready_fd {
        process::signal_ready(fd);
    }
    use std::os::unix::process::CommandExt;
    // Found before the environment (and its PATH) goes.
    let sleep = std::env::var_os("PATH")
        .and_then(|path| {
            std::env::split_paths(&path)
                .map(|d| d.join("sleep"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| "/bin/sleep".into());
    let mut cmd = std::process::Command::new(sleep);
    cmd.arg("86400");
    if args.clear_env {
        cmd.env_clear();
    }
    let e = cmd.exec();
    eprintln!("fake: the anonymous grandchild could not exec sleep: {e}");
    std::process::exit(FAULT_EXIT);
}

/// `--setsid` on a grandchild started by hand. One spawned by a fake already left its group
/// before exec (it has a ready fd); one started by hand does it here, before registering, so
/// `Register` shows the new session and group.
fn leave_group_by_hand(args: &Args) {
    if args.setsid
        && args.ready_fd.is_none()
        && let Err(e) = process::setsid()
    {
        eprintln!("fake: setsid failed: {e}");
    }
}

/// Connects to the side channel and sends `Register`, before anything else is said there.
fn register(side_path: &str, args: &Args) -> (Arc<Side>, UnboundedReceiver<ToFake>, Role) {
    let run_id = args.run.clone().unwrap_or_default();
    let (side, control) = match Side::connect(side_path, &run_id) {
        Ok(ok) => ok,
        Err(e) => {
            eprintln!("fake: {e}");
            std::process::exit(FAULT_EXIT);
        }
    };
    let side = Arc::new(side);
    let role = if args.grandchild {
        Role::Grandchild
    } else {
        Role::Runtime
    };
    side.send(process::register_event(role, &args.runtime_args));
    (side, control, role)
}

/// The script a runtime runs: the one the harness's ack carried, else (a fake started by
/// hand) `--script`. A bad script is a fault that ends the fake; a runtime command line the
/// product would refuse is the subject's violation.
fn runtime_script(
    side: &Side,
    args: &Args,
    offered: Option<serde_json::Value>,
    codec: &mut dyn Codec,
) -> Script {
    let script = match (offered, &args.script) {
        (Some(offered), _) => offered_script(offered, codec),
        (None, Some(path)) => load_script(path, codec),
        (None, None) => Err(FakeError::Usage(
            "no script: the harness's acknowledgement carried none and no --script was given"
                .into(),
        )),
    };
    let script = script.unwrap_or_else(|e| fail(side, &e.to_string()));
    if let Err(e) = codec.runtime_args(&args.runtime_args) {
        side.send(FakeEvent::Violation {
            detail: format!("the runtime's command line: {e}"),
        });
    }
    script
}

fn fail(side: &Side, detail: &str) -> ! {
    eprintln!("fake: {detail}");
    side.send(FakeEvent::Fault {
        detail: detail.into(),
    });
    process::exit(side, FAULT_EXIT)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Args {
        Args::parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn arguments() {
        let a = parse(&["--script", "s.json", "--side", "/s", "--run", "r1"]);
        assert_eq!(a.script.as_deref(), Some("s.json"));
        assert!(a.check().is_ok());
        let g = parse(&["--grandchild", "--side", "/s", "--run", "r", "--setsid"]);
        assert!(g.grandchild && g.setsid && !g.trap_sigterm);
        assert!(g.check().is_ok());
        assert!(parse(&["--script"]).check().is_err());
        let bogus = parse(&["--bogus", "--side", "/s"]);
        assert_eq!(bogus.side.as_deref(), Some("/s"));
        assert!(bogus.check().is_err());
        // The script may come in the harness's acknowledgement; the run may not be left out.
        assert!(parse(&["--side", "/s", "--run", "r"]).check().is_ok());
        assert!(parse(&["--side", "/s"]).check().is_err());
    }
}
