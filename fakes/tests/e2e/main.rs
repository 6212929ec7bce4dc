//! The fakes driven over their stdio like the clients they stand in for, one file a protocol,
//! in one test binary (one link; the files' tests share the cores).

mod common;

mod acp;
mod claude_code;
mod codex;
mod dsh_sdk;
mod free_text_channels;
mod verify;
