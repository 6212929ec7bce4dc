//! Wire types shared by the three parts of conform.
//!
//! Data flows one way: a scenario becomes a fake [`script::Script`] plus a subject
//! [`subject::ToSubject::Start`]; the subject answers with [`subject::FromSubject`] events; the
//! fakes report what really happened on the [`side`] channel. Keeping the types here (and only
//! here) means no rule about these seams is written twice.

pub mod codex;
pub mod lines;
pub mod script;
pub mod side;
pub mod subject;
pub mod vocab;

/// Version string of the subject adapter protocol, sent in both `hello` messages.
pub const SUBJECT_PROTOCOL: &str = "conform-subject/1";
