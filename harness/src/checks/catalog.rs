//! Every check conform makes, as data: its id (what a failure names), the one-line requirement
//! it holds a subject to, and where that requirement comes from. `conform list --checks` prints
//! this table; the self-test proves each id able to fail.

use serde::{Serialize, Serializer};

/// What kind of source a requirement has, in the order `--strictness` admits them: the
/// decision records first, then the wire and adapter protocols, then conform's own practice.
/// The harness's own health is no requirement of the subject and is always judged.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Harness,
    Record,
    Protocol,
    Practice,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Harness => "harness",
            Level::Record => "record",
            Level::Protocol => "protocol",
            Level::Practice => "practice",
        }
    }
}

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
    ($($variant:ident = $id:literal, $level:ident, $source:literal, $requirement:literal;)+) => {
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
            /// and its clause, the wire or adapter protocol, or conform's own practice.
            pub const fn source(self) -> &'static str {
                match self {
                    $(Check::$variant => $source,)+
                }
            }

            /// What kind of source that is ([`Level`]); a scenario may say otherwise for its
            /// own findings (`[requirement]`).
            pub const fn level(self) -> Level {
                match self {
                    $(Check::$variant => Level::$level,)+
                }
            }
        }
    };
}

checks! {
    HarnessFake = "harness.fake", Harness, "conform: the fakes (docs/scenarios.md)",
        "Every fake ran its script without a fault of its own.";
    HarnessFakeSchema = "harness.fake-schema", Harness, "conform: the fakes are held to their protocol's schema (fakes/schemas, docs/scenarios.md)",
        "Every frame a fake sends is valid for its protocol, unless its step marks a violation.";
    HarnessSnapshot = "harness.snapshot", Harness, "conform: snapshot files (docs/scenarios.md)",
        "The stored snapshot could be read (and, with --accept, written).";
    SubjectHello = "subject.hello", Protocol, "the adapter protocol: lifecycle (docs/subject-protocol.md)",
        "The subject starts and answers `hello` with the protocol version and what it hosts.";
    SubjectProtocol = "subject.protocol", Protocol, "the adapter protocol: messages and their order (docs/subject-protocol.md)",
        "Every line the subject sends is valid, comes in order and names a run the harness started.";
    SubjectAfterEnd = "subject.after-end", Protocol, "the adapter protocol: the per-run order (docs/subject-protocol.md)",
        "Nothing but `host_log` arrives for a run after it is over.";
    SubjectAlive = "subject.alive", Protocol, "the adapter protocol: lifecycle (docs/subject-protocol.md)",
        "The subject stays up for the whole suite.";
    SubjectDeadline = "subject.deadline", Protocol, "the adapter protocol: every run has a deadline (docs/subject-protocol.md)",
        "Every run ends within the scenario's deadline.";
    SubjectRuntime = "subject.runtime", Protocol, "the adapter protocol: `start`'s `runtime` (docs/subject-protocol.md)",
        "The provider spawns the runtime it is given.";
    WireScript = "wire.script", Protocol, "conform: a verdict needs its evidence — the runtime's own report that the scenario's conversation took place (docs/subject-protocol.md, what is judged)",
        "The provider drove the runtime's script to its end: every step played, none cut off by a kill or a stdin EOF the script does not allow.";
    WireViolation = "wire.violation", Protocol, "the runtime's wire protocol (ACP, JSON-RPC 2.0, the Codex app-server schema, stream-json), with the handshake the records send (seed 000, seed 001)",
        "The provider speaks the runtime's protocol: the frames the script expects, in order, well-formed.";
    ExpectStartError = "expect.start-error", Record, "seed 000 and seed 001: start publishes only after the handshake; failures are the fixed safe lines",
        "start() rejects exactly when the records say, with exactly their message.";
    ExpectStopReason = "expect.stop-reason", Record, "seed 000 (ACP stop reasons, DSH child turn ends), seed 001 (Codex error info)",
        "The result's stop reason is the one the records map this runtime outcome to.";
    ExpectDiagnostic = "expect.diagnostic", Record, "seed 000 and seed 001: the safe failure line, its fixed field order, the permission line",
        "The diagnostic is exactly the records' line for this outcome, or absent where they give none.";
    ExpectUpstreamCode = "expect.upstream-code", Record, "seed 001: codes outside the pinned vocabulary are `unknown`",
        "An upstream code newer than the subject's pin shows as itself or as `unknown`.";
    ExpectOutput = "expect.output", Record, "seed 000 and seed 001: partial assistant output kept beside the diagnostic",
        "The output keeps the assistant text the records say it keeps.";
    ExpectJobStatus = "expect.job-status", Record, "seed 000: the one-shot Job's status (failed, killed, completed); seed 003",
        "A background job ends in the status the records map its result to.";
    ExpectTeardown = "expect.teardown", Record, "seed 000 and seed 001: dispose walks the cleanup ladder (EOF, terminate, kill)",
        "The runtime is ended at the rung of the dispose ladder the records specify.";
    ContractBound = "contract.bound", Record, "seed 000 and seed 001: the shared settlement boundary bounds a diagnostic to 4096 UTF-8 bytes",
        "A diagnostic, start rejection or refusal message is at most 4096 UTF-8 bytes.";
    ContractNoDiagnostic = "contract.no-diagnostic", Record, "seed 000: a successful result and a local cancellation carry no failure diagnostic",
        "A completed result and a locally cancelled one carry no diagnostic.";
    ContractOutput = "contract.output", Practice, "conform, after the real host: a text block is kept only when it is non-empty",
        "No output is `[]`, never an empty text block.";
    ContractRedaction = "contract.redaction", Record, "seed 000 and seed 001: no exception, stderr, task, tool input, path, environment value, credential or payload in model-visible text",
        "No untrusted text (task, stderr, error payloads, tool titles and inputs, secrets) reaches model-visible text.";
    PresentationIsError = "presentation.is-error", Record, "seed 000 Verification: the exact foreground text, pinned; the real host's tool result",
        "The foreground tool result is an error exactly when the run did not complete.";
    PresentationSameDiagnostic = "presentation.same-diagnostic", Record, "seed 000: foreground and background show the same bounded text, separate from output",
        "The foreground tool result shows the result's diagnostic.";
    PresentationBackgroundStart = "presentation.background-start", Record, "seed 000 Verification: the exact one-shot background text, pinned; the real host's Job runtime",
        "A background start answers `started background subagent job <id>`.";
    PresentationSameStatus = "presentation.same-status", Record, "seed 000: foreground and background show the same bounded text",
        "The completion notice and job_output show the same status line.";
    DeliveryDispatchReceipt = "delivery.dispatch-receipt", Record, "seed 003: the dispatch receipt (runId, childSessionKey, dispatchAt, expectedBy)",
        "A published run's dispatch receipt names its child session, when it was dispatched (RFC 3339, not later than received) and the `expectedBy` it was given.";
    DeliveryCompletion = "delivery.completion", Record, "seed 003: a completion reaches the main conversation (no blackhole)",
        "A background job's completion reaches the parent (a notice or a waiting job_output).";
    DeliveryJobId = "delivery.job-id", Record, "seed 003: the receipts tie dispatch, status and report to one run",
        "The completion notice names the job the start named.";
    DeliverySingleNotice = "delivery.single-notice", Practice, "conform, after the real host's Job runtime: one completion notice per job",
        "A job sends one completion notice, never more.";
    DeliveryNoNoticeAfterKill = "delivery.no-notice-after-kill", Practice, "conform, after the real host's Job runtime: no notice for a job ended by job_kill",
        "A job killed through job_kill sends no completion notice.";
    DeliveryJobOutput = "delivery.job-output", Practice, "conform, after the real host's Job runtime: job_output answers every call, the same once terminal",
        "job_output answers every call for a background job, the same each time once the job is terminal.";
    DeliveryUniqueJobId = "delivery.unique-job-id", Practice, "conform: notices and job_output are routed by job id, so each job needs its own",
        "Every background job a subject starts has its own id (notices and job_output are routed by it).";
    IsolationCrossTalk = "isolation.cross-talk", Record, "seed 000 and seed 001: concurrent runs share no diagnostic state",
        "No model-visible text of a run holds what identifies another run in flight with it (its task, untrusted text, markers, label).";
    IsolationCancelTarget = "isolation.cancel-target", Record, "seed 000 Verification: concurrent-run isolation",
        "A cancel reaches only the run it names: a run in flight beside it never ends as locally cancelled.";
    ProcessRollback = "process.rollback", Record, "seed 000 and seed 001: a failed start is rolled back to fully settled before it rejects",
        "A rejected start is reported only after the child's process tree settled.";
    ProcessSettled = "process.settled", Record, "seed 000 and seed 001: dispose terminates the managed process tree",
        "Nothing the run started is still running once the subject says the run is over.";
    ProcessSettleClaim = "process.settle-claim", Record, "seed 000 Verification: the process tree fully settled",
        "`settled` comes only after every process of the run exited, registered or not (launchers, double-forked daemons, escaped descendants).";
    ProcessReaped = "process.reaped", Practice, "conform: a zombie its parent must still reap has not settled",
        "When the subject says the tree is gone, no process of the run is left a zombie the subject must reap.";
    ProcessPipes = "process.pipes", Practice, "conform: a process still holding the runtime's stdio has not settled",
        "When the subject says the tree is gone, no process outside the subject still holds the runtime's stdio pipes.";
    ProcessNothingSpawned = "process.nothing-spawned", Practice, "conform, after the real host: a request whose signal is already aborted, or a configuration the provider refuses (`[expect] spawns = false`), is rejected before anything is spawned (dsh-facts §4.1–4.2, §5.4: the pre-abort check and the configuration's validation come before the spawn)",
        "A start whose signal is already aborted spawns nothing: no runtime, no process of the run, ever runs.";
    TimingResult = "timing.result", Practice, "conform: no needless wait once the run's processes are gone",
        "The result comes promptly once the run's last process is gone (no needless grace).";
    TimingSettled = "timing.settled", Practice, "conform: no needless wait once the run's processes are gone",
        "`settled` comes promptly once the run's last process is gone.";
    TimingGrace = "timing.grace", Record, "seed 000: dispose keeps the host's process cleanup ladder (stdin EOF, SIGTERM, SIGKILL) with its configured waits",
        "Dispose waits out each configured grace before the next rung of the ladder, and not much longer: a configured grace is the one applied.";
    Snapshot = "snapshot", Record, "seed 000 Verification: exact foreground and background texts pinned by snapshots",
        "Every model-visible text equals its reviewed snapshot, byte for byte.";
    BaselineChanged = "baseline.changed", Practice, "conform: a host's baseline (`--baseline`) pins what each failure it knows says (README, In a host's CI); a finding takes the level of the failure it pins",
        "A case the baseline knows still says what the baseline pins of it: the same model-visible texts, start error, refusal and stop reason.";
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

/// A failed check: which one, what the run showed, and where the requirement it broke comes
/// from (the check's own source, unless the scenario says otherwise).
#[derive(Clone, Debug)]
pub struct Finding {
    pub check: Check,
    pub message: String,
    pub level: Level,
    pub source: std::borrow::Cow<'static, str>,
    /// Found while the machine was starved of CPU, by a check that reads the clock: shown as
    /// an advisory, never a failure ([`crate::proc::cpu_load`]).
    pub load_suspect: bool,
    /// The run never got to its end (a hang, a dead subject, a script not played): what it
    /// kept from being judged is judged as this finding, which takes the strictest level among
    /// those ([`super::blocked`]).
    pub blocking: bool,
}

impl Finding {
    pub fn new(check: Check, message: impl Into<String>) -> Finding {
        Finding {
            check,
            message: message.into(),
            level: check.level(),
            source: check.source().into(),
            load_suspect: false,
            blocking: false,
        }
    }

    /// This finding as one that kept the run's other expectations from being judged.
    pub fn blocking(mut self) -> Finding {
        self.blocking = true;
        self
    }

    /// This finding as one the machine's load may explain.
    pub fn load_suspect(mut self) -> Finding {
        self.load_suspect = true;
        self
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
