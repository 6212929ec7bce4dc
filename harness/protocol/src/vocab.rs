//! The closed vocabularies every part of conform shares: which provider, which mode, which stop
//! reason, job status, teardown rung and permission policy. Each is written once, here, as a
//! serde enum: a scenario file, a fake script or the reference that names a value outside the set
//! is rejected where it is read (with the file's line and column), and the JSON Schemas in
//! `docs/` are generated from these types.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a closed vocabulary: the enum, its wire spelling (`as_str`, serde, the schema), the
/// whole set in order (`ALL`), `Display` and `FromStr` — from one list, so they cannot disagree.
macro_rules! vocabulary {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every value, in the documented order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// The value as written on the wire and in scenario files.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = UnknownValue;

            fn from_str(s: &str) -> Result<Self, UnknownValue> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| UnknownValue {
                    what: stringify!($name),
                    value: s.to_owned(),
                    expected: $name::ALL.iter().map(|v| v.as_str()).collect(),
                })
            }
        }
    };
}

/// A value outside a closed vocabulary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownValue {
    pub what: &'static str,
    pub value: String,
    pub expected: Vec<&'static str>,
}

impl std::fmt::Display for UnknownValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown {} `{}`, expected one of: {}",
            self.what,
            self.value,
            self.expected.join(", ")
        )
    }
}

impl std::error::Error for UnknownValue {}

vocabulary! {
    /// The out-of-process provider a scenario exercises: the protocol its fake speaks.
    Provider {
        /// Agent Client Protocol (JSON-RPC over stdio).
        Acp = "acp",
        /// The DeepSeek harness runtime's SDK protocol.
        DshSdk = "dsh-sdk",
        /// The Codex app-server.
        Codex = "codex",
        /// The Claude Code CLI as the Claude Agent SDK drives it (stream-json over stdio).
        ClaudeCode = "claude-code",
    }
}

vocabulary! {
    /// Foreground tool call or one-shot background Job.
    Mode {
        Foreground = "foreground",
        Background = "background",
    }
}

vocabulary! {
    /// The shared stop reason of a provider's result.
    StopReason {
        Completed = "completed",
        MaxTokens = "max-tokens",
        Refusal = "refusal",
        Aborted = "aborted",
        Error = "error",
    }
}

vocabulary! {
    /// A background job's status as `job_output` shows it.
    JobStatus {
        Completed = "completed",
        Failed = "failed",
        Killed = "killed",
    }
}

vocabulary! {
    /// The rung of the dispose ladder that ended the runtime process.
    TeardownRung {
        /// It exited after its stdin reached EOF.
        Eof = "eof",
        /// It exited on SIGTERM.
        Sigterm = "sigterm",
        /// It had to be killed.
        Sigkill = "sigkill",
    }
}

vocabulary! {
    /// The delivery watchdog's status of a background run (seed 003's runbook).
    WatchdogStatus {
        /// Dispatched, `expectedBy` not yet passed, no completion: keep waiting.
        Active = "active",
        /// `expectedBy` passed with no completion: neither success nor failure can be proven.
        SuspectDeliveryFailure = "suspect_delivery_failure",
        /// The child's own record shows it finished, but no completion reached the parent.
        DoneButNotForwarded = "done_but_not_forwarded",
        /// The completion reached the parent: closed normally.
        Completed = "completed",
        /// Was suspect or done-but-not-forwarded, then a completion reached the parent.
        Recovered = "recovered",
        /// Waiting cannot explain the state any more (the subject died or stopped answering).
        Blocked = "blocked",
    }
}

vocabulary! {
    /// The provider's permission policy: what it answers a runtime's permission request with.
    PermissionPolicy {
        Allow = "allow",
        Reject = "reject",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wire_spelling_is_the_same_everywhere() {
        for p in Provider::ALL {
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
            assert_eq!(p.as_str().parse::<Provider>(), Ok(*p));
        }
        assert_eq!(
            serde_json::from_str::<StopReason>("\"max-tokens\"").unwrap(),
            StopReason::MaxTokens
        );
        let err = "done".parse::<StopReason>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown StopReason `done`, expected one of: completed, max-tokens, refusal, aborted, error"
        );
    }
}
