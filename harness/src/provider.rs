//! What the harness knows of each provider beyond its protocol (which the provider's codec in
//! `conform-fakes` answers): one row per provider, and the only `match` on `Provider` in the
//! harness, so the compiler asks a new provider for its facts here and nowhere else.

use conform_protocol::vocab::Provider;

/// One provider's row.
#[derive(Debug)]
pub struct Facts {
    /// The waits its dispose ladder walks, each with its configuration key and the records'
    /// default.
    pub ladder: Ladder,
    /// The source under which this provider's outcome and snapshot checks at record level are
    /// judged as practice instead (`None`: as the records say).
    pub records_as_practice: Option<&'static str>,
    /// Whether the product generates its own protocol schema, which `conform upgrade` compares
    /// between versions (Codex's app-server).
    pub publishes_schema: bool,
    /// Whether its fake keeps version profiles that `conform upgrade --accept` can add to.
    pub fake_profiles: bool,
    /// Whether the product is driven by its SDK's own command-line flags, which `conform
    /// upgrade` compares between versions (Claude Code).
    pub sdk_flags: bool,
}

/// The teardown ladder's waits.
#[derive(Debug)]
pub struct Ladder {
    /// From closing the runtime's stdin to its SIGTERM.
    pub eof: EofWait,
    /// From a SIGTERM the runtime ignores to the SIGKILL.
    pub sigterm: Grace,
    /// From a shutdown request the runtime leaves unanswered to closing its stdin (`None`: the
    /// provider sends none).
    pub shutdown: Option<Shutdown>,
}

/// A shutdown request the provider sends before it closes the runtime's stdin, and how long it
/// waits for the answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shutdown {
    /// The request's method on the wire.
    pub method: &'static str,
    pub grace: Grace,
}

/// A wait the provider's configuration sets: its key and the records' default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Grace {
    pub key: &'static str,
    pub default_ms: u64,
}

/// How a provider waits between stdin EOF and SIGTERM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EofWait {
    /// For a configured grace.
    Grace(Grace),
    /// Not at all: the records give it no grace (SIGTERM follows EOF at once).
    None,
    /// The runtime's input is ended by its SDK itself, after the result: no wait of the
    /// provider's is timed from there.
    EndedBySdk,
}

/// SIGTERM → SIGKILL, the same key and default for every provider (seed 002).
pub const DISPOSE_GRACE: Grace = Grace {
    key: "disposeGraceMs",
    default_ms: 3000,
};

/// stdin EOF → SIGTERM, for the providers the records give that grace.
pub const DISPOSE_EOF_GRACE: Grace = Grace {
    key: "disposeEofGraceMs",
    default_ms: 6000,
};

/// The DSH SDK's bound on its `shutdown` request.
pub const SHUTDOWN_TIMEOUT: Grace = Grace {
    key: "shutdownTimeoutMs",
    default_ms: 1000,
};

/// Where what the Claude Code cases expect of results and texts comes from.
pub const CLAUDE_CODE_SOURCE: &str = "conform, after the real host: seed 001 gives Claude Code's categories, stages and checks to a later record that is not among the seeds";

/// `provider`'s row.
pub fn facts(provider: Provider) -> &'static Facts {
    match provider {
        Provider::Acp => &ACP,
        Provider::DshSdk => &DSH_SDK,
        Provider::Codex => &CODEX,
        Provider::ClaudeCode => &CLAUDE_CODE,
    }
}

static ACP: Facts = Facts {
    ladder: Ladder {
        eof: EofWait::Grace(DISPOSE_EOF_GRACE),
        sigterm: DISPOSE_GRACE,
        shutdown: None,
    },
    records_as_practice: None,
    publishes_schema: false,
    fake_profiles: false,
    sdk_flags: false,
};

static DSH_SDK: Facts = Facts {
    ladder: Ladder {
        eof: EofWait::Grace(DISPOSE_EOF_GRACE),
        sigterm: DISPOSE_GRACE,
        shutdown: Some(Shutdown {
            method: "shutdown",
            grace: SHUTDOWN_TIMEOUT,
        }),
    },
    records_as_practice: None,
    publishes_schema: false,
    fake_profiles: false,
    sdk_flags: false,
};

static CODEX: Facts = Facts {
    ladder: Ladder {
        eof: EofWait::None,
        sigterm: DISPOSE_GRACE,
        shutdown: None,
    },
    records_as_practice: None,
    publishes_schema: true,
    fake_profiles: true,
    sdk_flags: false,
};

static CLAUDE_CODE: Facts = Facts {
    ladder: Ladder {
        eof: EofWait::EndedBySdk,
        sigterm: DISPOSE_GRACE,
        shutdown: None,
    },
    records_as_practice: Some(CLAUDE_CODE_SOURCE),
    publishes_schema: false,
    fake_profiles: false,
    sdk_flags: true,
};
