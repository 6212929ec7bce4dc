//! What the harness itself decided and did during a run: the drive's part of the record.

use std::time::Duration;

/// What the harness decided and did during one run, as the host it plays: written only by the
/// drive ([`crate::run::drive::Drive`]), which keeps it while the run is in flight and hands it
/// to the record when it stops ([`crate::run::observed::Recorder::join`]), before the teardown reads it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// The local cancel (`cancel`: abort / `job_kill`), sent or carried by the `start`.
    pub cancel: bool,
    /// The host's own `dispose` of the run (`[cancel] by = "dispose"`).
    pub dispose: bool,
    /// `job_kill` after the completion notice (`[job] kill_after_notice`).
    pub killed_after_notice: bool,
    /// The run was cut off at its deadline (this long).
    pub timed_out: Option<Duration>,
    /// The suite was interrupted by this signal while the run was in flight.
    pub interrupted: Option<i32>,
}

impl Sent {
    /// The host cancelled the run: its local cancel or its own dispose.
    pub fn host_cancelled(&self) -> bool {
        self.cancel || self.dispose
    }
}
