//! Scripted stdio runtimes for the conformance harness.
//!
//! One protocol-neutral [`engine`] runs a [`conform_protocol::script::Script`]; a thin
//! [`codec::Codec`] per protocol builds and classifies frames and expands the protocol sugar.
//! Everything the fake sees and does is reported to the harness over the [`side`] channel.
//! Each fake binary is a one-line call into [`cli::main`] with its codec.

pub mod acp;
pub mod bundle;
pub mod claude_code;
pub mod cli;
pub mod codec;
pub mod codex;
pub mod dsh_sdk;
pub mod engine;
pub mod error;
pub mod judge;
pub(crate) mod link;
pub mod model;
pub mod params;
pub mod payload;
pub mod peer;
pub mod process;
pub mod protocols;
pub mod schema;
pub mod side;
pub mod signals;
pub mod stdout;
pub mod verify;
pub mod wire;
