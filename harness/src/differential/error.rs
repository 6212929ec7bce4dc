//! Why the differential could not do its work. Each message is what the command prints after
//! `error: ` (or, for a report's part that was not compared, in the report).

use std::path::PathBuf;

use conform_protocol::vocab::Provider;

/// Why `conform peers diff`, `record`, `coverage` or `upgrade` could not run.
#[derive(Debug, thiserror::Error)]
pub enum DifferentialError {
    /// The catalog's scenarios did not load: each scenario's error, one a line.
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Scenarios(Vec<crate::scenario::ScenarioError>),
    #[error("no peer scenario names an analog")]
    NoAnalog,
    #[error("no peer scenario matches {0:?}")]
    NoMatch(Vec<String>),
    #[error("no peer scenario names the peer `{0}` (scenarios/peers/ `[peer] name`)")]
    NoScenarioOfPeer(String),
    #[error(
        "no peer scenario names `{0}` (write scenarios/peers/{0}/*.toml with `[peer] name = \"{0}\"` and an `analog`)"
    )]
    NothingToRecord(String),
    #[error("recording needs the installed peers (--peers DIR)")]
    NoPeersDir,
    /// Runs that cannot stand as the peer's real wire: `<scenario>: <why>` each.
    #[error(
        "`{peer}` not recorded: a failed run is not its real wire (fix the run, then record \
         again); nothing written or drafted:\n  {}",
        .refused.join("\n  ")
    )]
    Refused { peer: String, refused: Vec<String> },
    #[error(transparent)]
    Explained(#[from] ExplainedError),
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    #[error(transparent)]
    Suite(#[from] crate::suite::SuiteError),
    /// Writing a fixture or the drafts' folder: said as the I/O error alone, as it always was.
    #[error("{0}")]
    Write(std::io::Error),
    #[error("{path}: {source}")]
    WriteDrafts {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    DraftsToml(#[from] toml::ser::Error),
}

/// Why a recorded real wire (a fixture) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum FixtureError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
}

/// Why an explanations file (`differences.toml`) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ExplainedError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Toml {
        path: PathBuf,
        source: toml::de::Error,
    },
}

/// Why the program a peers folder runs for a peer is not known.
#[derive(Debug, thiserror::Error)]
pub enum PeerBinaryError {
    #[error(transparent)]
    Peers(#[from] crate::proc::peers::PeersError),
    #[error("{dir} names no peer `{peer}`")]
    NoPeer { dir: PathBuf, peer: String },
    #[error("the peer `{0}` has an empty command")]
    EmptyCommand(String),
}

/// Why two versions' generated protocol schemas were not compared (`conform upgrade`).
#[derive(Debug, thiserror::Error)]
pub enum SchemaChangesError {
    #[error("{0} publishes no protocol schema to compare")]
    NoSchema(Provider),
    #[error(transparent)]
    Binary(#[from] PeerBinaryError),
    #[error("{0}")]
    TempDir(std::io::Error),
    #[error(transparent)]
    Generate(#[from] super::vocabulary::GenerateError),
}

/// Why two versions' Agent SDK command lines were not compared (`conform upgrade`).
#[derive(Debug, thiserror::Error)]
pub enum SdkFlagsError {
    #[error(transparent)]
    Binary(#[from] PeerBinaryError),
    #[error("no Agent SDK installed beside {0}")]
    NoSdk(PathBuf),
    #[error("{0}")]
    TempDir(std::io::Error),
    #[error("could not run `node {probe}`: {source}")]
    Run {
        probe: PathBuf,
        source: std::io::Error,
    },
    #[error("`node {probe}` failed ({status}): {stderr}")]
    Failed {
        probe: PathBuf,
        status: std::process::ExitStatus,
        stderr: String,
    },
    #[error("the probe printed no argv: {0}")]
    NoArgv(serde_json::Error),
}

/// The upgrade report (`upgrade.json`) keeps why a part was not compared as its message.
macro_rules! serialize_as_message {
    ($($error:ty),*) => {$(
        impl serde::Serialize for $error {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    )*};
}
serialize_as_message!(SchemaChangesError, SdkFlagsError);
