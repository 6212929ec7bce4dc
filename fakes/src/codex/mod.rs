//! Codex app-server (`codex app-server --stdio`): the fake plays the *app-server*, the subject
//! is its client. Newline-delimited JSON-RPC **without** the `jsonrpc` member on anything the
//! server sends (incoming `jsonrpc` is tolerated); every server notification carries a
//! top-level `emittedAtMs`; every error the real server returns uses code -32600.
//!
//! Frames are validated against the real binary's generated schema bundle of the product
//! version the script speaks (`Script.product_version`: `0.147.0` by default, `0.169.0`, or a
//! version accepted from an upgrade report: [`profile`]).

mod ambient;
mod codec;
pub mod profile;
mod schema;

pub use codec::{CodexCodec, EMITTED_AT_BASE_MS};
pub use schema::{validate_frame, validate_received};

/// Product versions conform has a vendored schema for, the default first: the built-in ones,
/// then those accepted from upgrade reports ([`profile`]).
pub static PRODUCT_VERSIONS: std::sync::LazyLock<Vec<&'static str>> =
    std::sync::LazyLock::new(|| {
        let mut all = vec![DEFAULT_PRODUCT_VERSION, "0.169.0"];
        all.extend(profile::PROFILES.iter().map(|p| p.version));
        all
    });

/// The version a script speaks when it names none (the version deepseek-harness pins).
pub const DEFAULT_PRODUCT_VERSION: &str = "0.147.0";

/// The product version a script's `product_version` selects (`None`: the default), or an
/// error naming the known ones.
pub fn product_version(version: Option<&str>) -> Result<&'static str, crate::error::VersionError> {
    crate::codec::known_version("Codex product version", &PRODUCT_VERSIONS, version)
}

/// The Codex app-server method names the fake and the schema check need.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const INITIALIZED: &str = "initialized";
    pub const THREAD_START: &str = "thread/start";
    pub const TURN_START: &str = "turn/start";
    pub const TURN_INTERRUPT: &str = "turn/interrupt";
    pub const THREAD_STARTED: &str = "thread/started";
    pub const TURN_STARTED: &str = "turn/started";
    pub const TURN_COMPLETED: &str = "turn/completed";
    pub const THREAD_STATUS_CHANGED: &str = "thread/status/changed";
    pub const ERROR: &str = "error";
    pub const ITEM_COMPLETED: &str = "item/completed";
    pub const ITEM_STARTED: &str = "item/started";
    pub const AGENT_MESSAGE_DELTA: &str = "item/agentMessage/delta";
    pub const COMMAND_APPROVAL: &str = "item/commandExecution/requestApproval";
    pub const FILE_CHANGE_APPROVAL: &str = "item/fileChange/requestApproval";
    pub const PERMISSIONS_APPROVAL: &str = "item/permissions/requestApproval";
    pub const REQUEST_USER_INPUT: &str = "item/tool/requestUserInput";
    pub const MCP_ELICITATION: &str = "mcpServer/elicitation/request";
}
