//! Every check conform makes, as data: its id (what a failure names), the one-line requirement
//! it holds a subject to, and where that requirement comes from. `conform list --checks` prints
//! this table; the self-test proves each id able to fail.

use serde::{Serialize, Serializer};

/// Who is to blame for a failed check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Blame {
    /// The subject broke the contract.
    Subject,
    /// The harness or a fake failed; the run proves nothing about the subject.
    Harness,
}

/// Declares the checks from one table, so an id, its requirement and its source cannot drift
/// apart and every id is listed.
macro_rules! checks {
    ($($variant:ident = $id:literal, $source:literal, $requirement:literal;)+) => {
        /// One check. Its id's first segment is its family (`contract.bound` → `contract`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Check {
            $($variant,)+
        }

        impl Check {
            /// Every check, in the order `conform list --checks` shows them.
            pub const ALL: &'static [Check] = &[$(Check::$variant,)+];

            /// The stable id a failure names.
            pub const fn id(self) -> &'static str {
                match self {
                    $(Check::$variant => $id,)+
                }
            }

            /// What the check holds a subject (or the harness itself) to, in one line.
            pub const fn requirement(self) -> &'static str {
                match self {
                    $(Check::$variant => $requirement,)+
                }
            }

            /// Where the requirement comes from: a decision record (`seed 000`: ACP and DSH
            /// SDK providers, `seed 001`: product providers, `seed 003`: background delivery)
            /// or a document of this repository.
            pub const fn source(self) -> &'static str {
                match self {
                    $(Check::$variant => $source,)+
                }
            }
        }
    };
}

checks! {
    HarnessFake = "harness.fake", "docs/scenarios.md",
        "Every fake ran its script without a fault of its own.";
    HarnessFakeSchema = "harness.fake-schema", "fakes/schemas, docs/scenarios.md",
        "Every frame a fake sends is valid for its protocol, unless its step marks a violation.";
    HarnessSnapshot = "harness.snapshot", "docs/scenarios.md",
        "The stored snapshot could be read (and, with --accept, written).";
    SubjectHello = "subject.hello", "docs/subject-protocol.md",
        "The subject starts and answers `hello` with the protocol version and what it hosts.";
    SubjectProtocol = "subject.protocol", "docs/subject-protocol.md",
        "Every line the subject sends is valid, comes in order and names a run the harness started.";
    SubjectAfterEnd = "subject.after-end", "docs/subject-protocol.md",
        "Nothing but `host_log` arrives for a run after it is over.";
    SubjectAlive = "subject.alive", "docs/subject-protocol.md",
        "The subject stays up for the whole suite.";
    SubjectDeadline = "subject.deadline", "docs/subject-protocol.md",
        "Every run ends within the scenario's deadline.";
    SubjectRuntime = "subject.runtime", "docs/subject-protocol.md",
        "The provider spawns the runtime it is given.";
    WireViolation = "wire.violation", "seed 000, seed 001",
        "The provider speaks the runtime's protocol: the frames the script expects, in order, well-formed.";
    ExpectStartError = "expect.start-error", "seed 000, seed 001",
        "start() rejects exactly when the records say, with exactly their message.";
    ExpectStopReason = "expect.stop-reason", "seed 000, seed 001",
        "The result's stop reason is the one the records map this runtime outcome to.";
    ExpectDiagnostic = "expect.diagnostic", "seed 000, seed 001",
        "The diagnostic is exactly the records' line for this outcome, or absent where they give none.";
    ExpectUpstreamCode = "expect.upstream-code", "seed 001",
        "An upstream code newer than the subject's pin shows as itself or as `unknown`.";
    ExpectOutput = "expect.output", "seed 000, seed 001",
        "The output keeps the assistant text the records say it keeps.";
    ExpectJobStatus = "expect.job-status", "seed 000, seed 003",
        "A background job ends in the status the records map its result to.";
    ExpectTeardown = "expect.teardown", "seed 000, seed 001",
        "The runtime is ended at the rung of the dispose ladder the records specify.";
    ContractBound = "contract.bound", "seed 000, seed 001",
        "A diagnostic or start rejection message is at most 4096 UTF-8 bytes.";
    ContractNoDiagnostic = "contract.no-diagnostic", "seed 000",
        "A completed result and a locally cancelled one carry no diagnostic.";
    ContractOutput = "contract.output", "seed 000",
        "No output is `[]`, never an empty text block.";
    ContractRedaction = "contract.redaction", "seed 000, seed 001",
        "No untrusted text (task, stderr, error payloads, tool titles and inputs, secrets) reaches model-visible text.";
    PresentationIsError = "presentation.is-error", "seed 000",
        "The foreground tool result is an error exactly when the run did not complete.";
    PresentationSameDiagnostic = "presentation.same-diagnostic", "seed 000",
        "The foreground tool result shows the result's diagnostic.";
    PresentationBackgroundStart = "presentation.background-start", "seed 000",
        "A background start answers `started background subagent job <id>`.";
    PresentationSameStatus = "presentation.same-status", "seed 000",
        "The completion notice and job_output show the same status line.";
    DeliveryDispatchReceipt = "delivery.dispatch-receipt", "seed 003",
        "A published run's dispatch receipt names its child session, when it was dispatched (RFC 3339, not later than received) and the `expectedBy` it was given.";
    DeliveryCompletion = "delivery.completion", "seed 003",
        "A background job's completion reaches the parent (a notice or a waiting job_output).";
    DeliveryJobId = "delivery.job-id", "seed 003",
        "The completion notice names the job the start named.";
    DeliverySingleNotice = "delivery.single-notice", "seed 003",
        "A job sends one completion notice, never more.";
    DeliveryNoNoticeAfterKill = "delivery.no-notice-after-kill", "seed 000",
        "A job killed through job_kill sends no completion notice.";
    DeliveryJobOutput = "delivery.job-output", "seed 000",
        "job_output answers every call for a background job, the same each time once the job is terminal.";
    DeliveryUniqueJobId = "delivery.unique-job-id", "seed 003",
        "Every background job a subject starts has its own id (notices and job_output are routed by it).";
    IsolationCrossTalk = "isolation.cross-talk", "seed 000, seed 003",
        "No model-visible text of a run holds what identifies another run in flight with it (its task, untrusted text, markers, label).";
    IsolationCancelTarget = "isolation.cancel-target", "seed 000, seed 003",
        "A cancel reaches only the run it names: a run in flight beside it never ends as locally cancelled.";
    ProcessRollback = "process.rollback", "seed 000, seed 001",
        "A rejected start is reported only after the child's process tree settled.";
    ProcessSettled = "process.settled", "seed 000, seed 001",
        "Nothing the run started is still running once the subject says the run is over.";
    ProcessSettleClaim = "process.settle-claim", "seed 000, seed 001",
        "`settled` comes only after every process of the run exited, registered or not (launchers, double-forked daemons, escaped descendants).";
    ProcessReaped = "process.reaped", "seed 000, seed 001",
        "When the subject says the tree is gone, no process of the run is left a zombie the subject must reap.";
    ProcessPipes = "process.pipes", "seed 000, seed 001",
        "When the subject says the tree is gone, no process outside the subject still holds the runtime's stdio pipes.";
    TimingResult = "timing.result", "seed 000, seed 001",
        "The result comes promptly once the run's last process is gone (no needless grace).";
    TimingSettled = "timing.settled", "seed 000, seed 001",
        "`settled` comes promptly once the run's last process is gone.";
    Snapshot = "snapshot", "seed 000, seed 001, docs/scenarios.md",
        "Every model-visible text equals its reviewed snapshot, byte for byte.";
}

impl Check {
    /// The family: the id's first segment (`snapshot` is its own).
    pub fn family(self) -> &'static str {
        self.id().split('.').next().unwrap_or_default()
    }

    /// A failed `harness.*` check is the harness's fault; every other is the subject's.
    pub fn blame(self) -> Blame {
        if self.family() == "harness" {
            Blame::Harness
        } else {
            Blame::Subject
        }
    }

    /// The check with this id.
    pub fn from_id(id: &str) -> Option<Check> {
        Check::ALL.iter().copied().find(|c| c.id() == id)
    }
}

impl std::fmt::Display for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Check {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// A failed check: which one, and what the run showed.
#[derive(Clone, Debug)]
pub struct Finding {
    pub check: Check,
    pub message: String,
}

impl Finding {
    pub fn new(check: Check, message: impl Into<String>) -> Finding {
        Finding {
            check,
            message: message.into(),
        }
    }

    pub fn blame(&self) -> Blame {
        self.check.blame()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_well_formed() {
        let mut ids: Vec<&str> = Check::ALL.iter().map(|c| c.id()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), Check::ALL.len());
        for c in Check::ALL {
            assert_eq!(Check::from_id(c.id()), Some(*c));
            assert!(
                c.id()
                    .chars()
                    .all(|ch| ch.is_ascii_lowercase() || ch == '.' || ch == '-'),
                "{c}"
            );
            assert!(!c.requirement().is_empty() && !c.source().is_empty());
        }
        assert_eq!(Check::HarnessFakeSchema.blame(), Blame::Harness);
        assert_eq!(Check::Snapshot.blame(), Blame::Subject);
        assert_eq!(Check::TimingResult.family(), "timing");
    }
}
