//! conform's harness: runs scenarios against a subject and judges what it did.
//!
//! Data flows one way: [`scenario`] → fake script + subject `start` ([`run`]) → subject events
//! and side-channel ledger ([`subject`], [`side`]) → checks ([`verdict`], [`timing`], [`snapshot`]) →
//! [`report`].

pub mod baseline;
pub mod bench;
pub mod cgroup;
pub mod checks;
pub mod cli;
pub mod differential;
pub mod drift;
pub mod events;
pub mod group;
pub mod interrupt;
pub mod lifecycle;
pub mod merge;
pub mod partition;
pub mod peers;
pub mod pool;
pub mod procs;
pub mod redaction;
pub mod report;
pub mod run;
pub mod scenario;
pub mod selftest;
pub mod settle;
pub mod side;
pub mod snapshot;
pub mod subject;
pub mod suite;
pub mod terminal;
