//! One module per subcommand. [`exec`] dispatches; each command returns its exit code or an
//! [`Error`], which `main` prints once.

pub mod bench;
pub mod drift;
pub mod init;
pub mod internal;
pub mod list;
pub mod output;
pub mod peers;
pub mod redaction;
pub mod report;
pub mod review;
pub mod run;
pub mod self_test;
pub mod upgrade;

use std::process::ExitCode;

use crate::cli::{Cli, Command};
use crate::suite::exit;

/// Why a command could not do its work (exit 2). Each says what went wrong; `main` prints
/// it as `error: …`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot listen for signals: {0}")]
    Signals(std::io::Error),
    #[error("cannot write to stdout: {0}")]
    Stdout(std::io::Error),
    #[error("cannot write {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error("cannot render the JUnit report: {0}")]
    Junit(#[from] quick_junit::SerializeError),
    #[error(transparent)]
    Suite(#[from] crate::suite::SuiteError),
    #[error(transparent)]
    Input(#[from] crate::input::InputError),
    #[error(transparent)]
    Catalog(#[from] crate::catalog::ExtractError),
    #[error(transparent)]
    Compare(#[from] crate::report::compare::CompareError),
    #[error(transparent)]
    Pending(#[from] crate::snapshot::pending::PendingError),
    #[error(transparent)]
    Differential(#[from] crate::differential::error::DifferentialError),
    #[error(transparent)]
    UnknownPeer(#[from] crate::proc::peers::manifest::UnknownPeer),
    /// Bad input or a failure that already says all there is to say.
    #[error("{0}")]
    Usage(String),
}

/// Runs the command the command line names.
pub fn exec(cli: Cli) -> Result<ExitCode, Error> {
    match cli.command {
        Command::Run(args) => run::exec(*args),
        Command::List(args) => list::exec(args),
        Command::Init(args) => init::exec(args),
        Command::Schema { which } => list::schema(&which),
        Command::Redaction(args) => redaction::exec(args),
        Command::SelfTest(args) => self_test::exec(args),
        Command::Bench(args) => bench::exec(args),
        Command::Drift(args) => drift::exec(args),
        Command::Peers(args) => peers::exec(args),
        Command::Report(args) => report::exec(args),
        Command::Review(args) => review::exec(args),
        Command::Upgrade(args) => upgrade::exec(args),
        Command::Fake { provider, args } => internal::fake(provider, args),
        Command::PeerProxy { args } => Ok(conform_fakes::peer::main_with_args(args)),
        Command::MockModel { args } => Ok(conform_fakes::model::main_with_args(args)),
        Command::Reference { args } => Ok(code(conform_reference::main_with_args(args))),
        Command::Keep { harness, command } => {
            Ok(code(crate::proc::keeper::keep(harness, &command)))
        }
        Command::CgroupExec { dir, command } => {
            Ok(code(crate::proc::cgroup::join_and_exec(&dir, &command)))
        }
    }
}

/// Runs a future to its end on a runtime of its own (each command that needs one).
pub fn block_on<F: std::future::Future>(fut: F) -> Result<F::Output, Error> {
    let runtime = tokio::runtime::Runtime::new().map_err(Error::Runtime)?;
    Ok(runtime.block_on(fut))
}

/// A process exit code from one of conform's named codes (`suite::exit`).
pub fn code(c: i32) -> ExitCode {
    ExitCode::from(u8::try_from(c).unwrap_or(u8::MAX))
}

/// The exit code of a command whose verdict is pass or fail.
pub fn verdict(passed: bool) -> ExitCode {
    code(if passed { exit::PASS } else { exit::FAIL })
}
