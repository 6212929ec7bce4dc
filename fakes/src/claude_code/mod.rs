//! Claude Code (`claude` as the Claude Agent SDK spawns it): the fake plays the *CLI*, the
//! subject is the SDK's side. Newline-delimited JSON objects with a `type` (`system`,
//! `assistant`, `user`, `stream_event`, `result`, …), no JSON-RPC: requests in either direction
//! are `control_request` `{request_id, request: {subtype, …}}`, answered by `control_response`
//! `{response: {subtype: "success" | "error", request_id, response | error}}`. The SDK speaks
//! first (`initialize`), then writes the task as a `user` message; the CLI answers one turn with
//! exactly one `result`, and exits 0 when its stdin closes.
//!
//! Frames are validated against a JSON Schema derived from the SDK's published types
//! (`fakes/schemas/claude-code/<version>.schema.json`, from `sdk.d.ts`; `ci/claude-schema`).

mod args;
mod codec;
mod schema;

pub use args::{CliArgs, check_args};
pub use codec::{ClaudeCodeCodec, DEFAULT_SESSION_ID};
pub use schema::validate_frame;

/// The SDK version the host pins (deepseek-harness `subagent-claude-code`), whose types the
/// schema is derived from, and the CLI version it bundles.
pub const SDK_VERSION: &str = "0.3.220";
pub const CLI_VERSION: &str = "2.1.220";

/// Frame types and control subtypes the fake and the schema check need.
pub mod kind {
    pub const CONTROL_REQUEST: &str = "control_request";
    pub const CONTROL_RESPONSE: &str = "control_response";
    pub const CONTROL_CANCEL: &str = "control_cancel_request";
    pub const SYSTEM: &str = "system";
    pub const ASSISTANT: &str = "assistant";
    pub const USER: &str = "user";
    pub const STREAM_EVENT: &str = "stream_event";
    pub const RESULT: &str = "result";
    pub const INITIALIZE: &str = "initialize";
    pub const INTERRUPT: &str = "interrupt";
    pub const CAN_USE_TOOL: &str = "can_use_tool";
    pub const ELICITATION: &str = "elicitation";
    pub const USER_DIALOG: &str = "request_user_dialog";
}
