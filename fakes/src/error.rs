//! The fakes' failures, each said once: the fake's own (reported as `Fault`: a harness
//! problem, never the subject's), a script it cannot play, a product version it does not speak,
//! a frame that breaks its protocol's schema, and a runtime command line the product refuses.
//! Their texts reach the side channel and the snapshots as they are written here.

use conform_protocol::vocab::Provider;
use thiserror::Error;

/// The exit status of a fake that failed its own job (bad arguments, an invalid script, a lost
/// side channel): the one status the fake binaries and their side-channel client both exit with.
pub const FAULT_EXIT: i32 = 2;

#[derive(Debug, Error)]
pub enum FakeError {
    #[error("usage: {0}")]
    Usage(String),
    #[error("cannot read script {path}: {source}")]
    ScriptRead {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid script: {0}")]
    Script(#[from] ScriptError),
    #[error("side channel: {0}")]
    Side(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// A script the fake cannot play: what is wrong, and where.
#[derive(Debug, Error)]
pub enum ScriptError {
    /// It is no script (`what`: its file, or the harness's acknowledgement that carried it).
    #[error("{what}: {source}")]
    Parse {
        what: String,
        source: serde_json::Error,
    },
    #[error("script is for protocol `{script}`, this fake speaks `{fake}`")]
    OtherProtocol { script: Provider, fake: Provider },
    /// A step it cannot play (`index`: 0-based).
    #[error("steps[{index}]: {error}")]
    Step { index: usize, error: StepError },
    #[error("product_version: {0}")]
    ProductVersion(VersionError),
}

/// A step the fake cannot play as written: the script's mistake.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum StepError {
    /// Sugar of another protocol.
    #[error("`{action}` is not available for protocol {provider}")]
    OtherProtocol { action: String, provider: Provider },
    #[error("unknown signal {0:?}")]
    UnknownSignal(String),
    /// Any other mistake, in the words of the check or the sugar that found it.
    #[error("{0}")]
    Invalid(String),
}

/// A product version the fake does not speak.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VersionError {
    /// `what`: the product's name for its versions ("Codex product version").
    #[error("unknown {what} {want:?} (known: {})", .known.join(", "))]
    Unknown {
        what: &'static str,
        want: String,
        known: &'static [&'static str],
    },
    #[error("the {provider} fake has no product versions (it speaks {speaks}), got {want:?}")]
    NoneBut {
        provider: Provider,
        speaks: String,
        want: String,
    },
}

/// What is wrong with a frame for its protocol's schema, and where.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum InvalidFrame {
    /// The schema's first few errors, each with where it is (`what`: the definition checked).
    #[error("{what}: {}", .errors.join("; "))]
    Schema { what: String, errors: Vec<String> },
    /// A response whose request's method is not known: nothing to check it against.
    #[error("a result needs the method it answers to be checked")]
    UnknownAnswer,
    /// Not a frame of the protocol's side (a method it never sends, a member it never writes),
    /// or not a message at all ([`crate::codec::Msg::Malformed`]): in the protocol's words.
    #[error("{0}")]
    Protocol(String),
}

/// The runtime's own command line, refused as the real product refuses it: the subject's
/// mistake, in the product's words.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{0}")]
pub struct RefusedArgs(pub String);

/// A failure said in its finder's own words is the catch-all variant of its type: the checks
/// and the sugar write `Err(format!(…).into())`.
macro_rules! in_own_words {
    ($($ty:ty => $variant:path),* $(,)?) => {$(
        impl From<String> for $ty {
            fn from(what: String) -> $ty {
                $variant(what)
            }
        }

        impl From<&str> for $ty {
            fn from(what: &str) -> $ty {
                $variant(what.to_owned())
            }
        }
    )*};
}

in_own_words!(
    StepError => StepError::Invalid,
    InvalidFrame => InvalidFrame::Protocol,
    RefusedArgs => RefusedArgs,
);
