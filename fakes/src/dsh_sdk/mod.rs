//! DSH SDK (the DeepSeek Harness SDK runtime protocol): the fake plays the *runtime*, the
//! subject is the SDK client. Newline-delimited JSON-RPC 2.0 with `"jsonrpc":"2.0"` on every
//! frame; the client sends `initialize`, `session/prompt` and `shutdown`, the runtime streams
//! `session.event` and `session.status` notifications.
//!
//! There is no official schema for this wire: `schemas/dsh-sdk.schema.json` is conform's own,
//! written from the SDK's transport, types and server code.

pub mod codec;
mod schema;

pub use codec::DshSdkCodec;
pub use schema::validate_frame;

/// The runtime release whose frames the fake sends by default (PyPI
/// `deepseek-harness-runtime-bin`, observed by `ci/peers`).
pub const RUNTIME_VERSION: &str = "0.2.1rc2";

/// The older release line the fake can speak instead (`--product-version dsh-sdk=0.1.1`): as
/// the deepseek-harness 0.1.1-rc.2 snapshot's SDK server and example exchange have it, the
/// model's text also streams as `assistant/chunk` `text-delta` events before the
/// `assistant/message` (or failed `assistant/attempt`) that records it.
pub const CHUNK_STREAM_VERSION: &str = "0.1.1";

/// Runtime releases whose frames the fake can speak, the default first.
pub const PRODUCT_VERSIONS: &[&str] = &[RUNTIME_VERSION, CHUNK_STREAM_VERSION];

/// The runtime release a script's `product_version` selects (`None`: [`RUNTIME_VERSION`]), or
/// an error naming the known ones.
pub fn product_version(version: Option<&str>) -> Result<&'static str, crate::error::VersionError> {
    crate::codec::known_version("DSH SDK runtime version", PRODUCT_VERSIONS, version)
}

/// The DSH SDK method and event names the fake and the schema check need.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const SESSION_PROMPT: &str = "session/prompt";
    pub const SHUTDOWN: &str = "shutdown";
    pub const SESSION_EVENT: &str = "session.event";
    pub const SESSION_STATUS: &str = "session.status";
}

/// `session.event` event types the sugar builds.
pub mod event {
    pub const INBOX_SPLICED: &str = "agent/inbox/spliced";
    pub const ASSISTANT_CHUNK: &str = "assistant/chunk";
    pub const ASSISTANT_ATTEMPT: &str = "assistant/attempt";
    pub const ASSISTANT_MESSAGE: &str = "assistant/message";
    pub const TURN_END: &str = "turn/end";
    /// The runtime's echo of a model request's header (its config and every offered tool).
    pub const REQUEST_HEADER: &str = "request/header";
    /// The session log's receipt for the events written so far.
    pub const LOG_DELIVERY_ACCEPTED: &str = "session-log-deepseek/delivery-accepted";
}
