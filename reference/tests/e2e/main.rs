//! The reference subject driven end to end, one file a concern, in one test binary (one link;
//! the files' tests share the cores).

mod common;

mod codex;
mod dsh_sdk;
mod subject;
