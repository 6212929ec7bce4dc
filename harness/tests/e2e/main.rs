//! The end-to-end tests of `conform` that `cargo test` runs, one file a concern, in one test
//! binary: one link instead of two dozen, and every file's tests share the machine's cores
//! instead of each binary running alone after the last. The slowest — whole catalogs, floods,
//! property searches, the real-peer differential, the README's CI — are the `slow` binary
//! beside it (docs/performance.md, "The tests").

#[path = "../common/mod.rs"]
mod common;

mod bounds;
mod ci_grade;
mod compare;
mod config_surface;
mod embedded_catalog;
mod harness_killed;
mod hostile_inputs;
mod html_report;
mod init;
mod interruption;
mod layers;
mod peers_install;
mod pending;
mod requirements;
mod self_test;
mod settling;
mod suite;
mod terminal;
mod upgrade;
