//! conform's harness: runs scenarios against a subject and judges what it did.
//!
//! Data flows one way: [`scenario`] → fake script + subject `start` ([`run`]) → subject events
//! and side-channel ledger ([`proc`]) → [`checks`] and [`snapshot`] → [`suite`] → [`report`].
//! The modules are layered; each imports only from its own layer or below (a test holds it):
//! [`input`], [`provider`] < [`proc`], [`catalog`] (plumbing), [`settings`] < [`scenario`] < [`run`] < [`checks`],
//! [`snapshot`] < [`suite`] < [`report`], [`differential`] < [`cmd`], [`cli`].

pub mod catalog;
pub mod checks;
pub mod cli;
pub mod cmd;
pub mod differential;
pub mod input;
pub mod proc;
pub mod provider;
pub mod report;
pub mod run;
pub mod scenario;
pub mod settings;
pub mod snapshot;
pub mod suite;
