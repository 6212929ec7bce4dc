//! The slow end-to-end checks of `conform`: each costs a catalog's worth of runs or more — the
//! whole catalog as a host runs it (the reference, the Node.js and Python example hosts), floods of hostile subjects, property searches of hundreds
//! of cases, the real-peer differential on the recorded fixtures, the README's CI as written.
//! `cargo test --workspace` leaves them out to stay within minutes; `cargo test -p conform
//! --test slow` runs them, and so does `.ci/run` (docs/performance.md, "The tests").

#[path = "../common/mod.rs"]
mod common;

mod catalog;
mod floods;
mod hostile_subject;
mod node_host;
mod peers;
mod python_host;
mod readme_ci;
mod redaction;
