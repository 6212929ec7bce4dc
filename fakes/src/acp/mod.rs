//! ACP (Agent Client Protocol, v1): the fake plays the *agent*, the subject is the client.
//!
//! Valid frames are built with the official `agent-client-protocol-schema` types; a value the
//! scenario sends invalid on purpose (unknown stop reason, tool kind, option kind) is written
//! as raw JSON instead — the crate's lenient parsing must never decide what goes on the wire.

mod codec;
mod schema;

pub use codec::AcpCodec;
pub use schema::{validate_frame, validate_received};

/// The ACP method names the fake and the schema check need.
pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const SESSION_NEW: &str = "session/new";
    pub const SESSION_PROMPT: &str = "session/prompt";
    pub const SESSION_CANCEL: &str = "session/cancel";
    pub const SESSION_UPDATE: &str = "session/update";
    pub const REQUEST_PERMISSION: &str = "session/request_permission";
}
