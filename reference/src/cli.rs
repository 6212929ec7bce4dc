//! Command line: `conform-reference [--defect <NAME>]...` (clap; `--help` lists the defects),
//! and the seeded defects, each declared once in [`defects!`]: its name, its help, the switch
//! the code reads (`defects.skip_teardown`) and the checks expected to catch it.

use clap::builder::PossibleValue;
use clap::{Parser, ValueEnum};

/// The reference subject of conform.
///
/// Speaks the subject protocol (conform-subject/1) on stdin/stdout, one JSON object per line,
/// and hosts one provider run per `start` (providers `acp`, `dsh-sdk`, `codex` and `claude-code`).
#[derive(Debug, Parser)]
#[command(name = "conform-reference", version)]
pub struct Cli {
    /// Enable a deliberate defect, for the harness's self-tests (repeatable; all off by
    /// default).
    #[arg(long = "defect", value_name = "NAME")]
    pub defects: Vec<Defect>,
}

/// One seeded defect: a deliberate misbehaviour the harness's self-tests seed, which the
/// catalog must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DefectInfo {
    /// Its `--defect` name.
    pub name: &'static str,
    /// Its one line of help (`conform-reference --help`).
    pub help: &'static str,
    /// The check ids (`conform list --checks`) expected to catch it: its row of the kill
    /// matrix (`conform self-test`), the checks that fail every time the catalog runs against
    /// it (a kill that comes and goes with the machine's load — a process check a slow runtime
    /// trips, a status a race decides — is left out: the self-test holds a defect to its line).
    pub catches: &'static [&'static str],
}

/// Declares every seeded defect from one line each (`switch = "name": "help", catches [..];`):
/// the `--defect` values ([`Defect`]), the switches the code reads ([`Defects`]) and the list
/// the self-test iterates ([`DEFECTS`]), all in this order.
macro_rules! defects {
    ($($switch:ident = $name:literal: $help:literal, catches [$($check:literal),* $(,)?];)+) => {
        /// A `--defect` value: one seeded defect (its [`DefectInfo`] in [`DEFECTS`]).
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Defect {
            $($switch,)+
        }

        /// Every seeded defect, in declaration order (`conform self-test` runs the catalog
        /// against each).
        pub const DEFECTS: &[DefectInfo] = &[
            $(DefectInfo { name: $name, help: $help, catches: &[$($check),*] },)+
        ];

        /// Deliberate misbehaviours for the harness's self-tests: one switch per defect, all
        /// off by default.
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct Defects {
            $(pub $switch: bool,)+
        }

        impl Defects {
            fn turn_on(&mut self, defect: Defect) {
                match defect {
                    $(Defect::$switch => self.$switch = true,)+
                }
            }

            /// The switches that are on, by their field names.
            #[cfg(test)]
            fn switches_on(&self) -> Vec<&'static str> {
                [$((stringify!($switch), self.$switch),)+]
                    .into_iter()
                    .filter_map(|(switch, on)| on.then_some(switch))
                    .collect()
            }
        }

        impl ValueEnum for Defect {
            fn value_variants<'a>() -> &'a [Self] {
                &[$(Defect::$switch,)+]
            }

            fn to_possible_value(&self) -> Option<PossibleValue> {
                let info = self.info();
                Some(PossibleValue::new(info.name).help(info.help))
            }
        }
    };
}

impl Defect {
    /// Its name, help and the checks expected to catch it.
    pub fn info(self) -> &'static DefectInfo {
        &DEFECTS[self as usize]
    }
}

impl Defects {
    pub fn from_list(list: &[Defect]) -> Defects {
        let mut d = Defects::default();
        for defect in list {
            d.turn_on(*defect);
        }
        d
    }
}

defects! {
    crash_after_dispatch = "crash-after-dispatch":
        "Exit with code 70 right after sending the first `dispatched`, abandoning all children",
        catches ["subject.alive", "wire.violation"];
    hang_after_dispatch = "hang-after-dispatch":
        "After the first `dispatched`, never send anything else for that run (no result, \
         settled, tool_result, notice or job_output); its child is still cleaned up silently",
        catches ["subject.deadline"];
    skip_teardown = "skip-teardown":
        "Make dispose() send `settled` at once without session/cancel, stdin EOF or signals, \
         leaving the child running",
        catches ["expect.job-status", "expect.teardown", "process.pipes", "process.settle-claim",
            "process.settled", "snapshot", "subject.deadline"];
    leak_raw_error = "leak-raw-error":
        "Append the child's raw stderr tail to every non-completed diagnostic and start \
         rejection message (a redaction defect)",
        catches ["contract.redaction", "expect.diagnostic", "expect.job-status",
            "expect.start-error", "snapshot"];
    max_tokens_as_error = "max-tokens-as-error":
        "Map the ACP stop reason `max_tokens` to `error` instead of `max-tokens`",
        catches ["expect.stop-reason", "snapshot"];
    blocked_as_error = "blocked-as-error":
        "Map the DSH SDK child turn end `blocked` to `error` + child-error instead of `refusal`",
        catches ["expect.diagnostic", "expect.stop-reason", "snapshot"];
    stderr_in_start_error = "stderr-in-start-error":
        "Append the child's stderr tail to DSH SDK start rejection messages (as today's real \
         host does)",
        catches ["contract.redaction", "expect.start-error"];
    cyber_policy_as_refusal = "cyber-policy-as-refusal":
        "Map the Codex error info `cyberPolicy` to the stop reason `refusal` instead of `error`",
        catches ["expect.stop-reason", "snapshot"];
    http_status_from_string = "http-status-from-string":
        "Show the Codex `HTTP status` also when `httpStatusCode` is a numeric string (\"503\")",
        catches ["expect.diagnostic", "snapshot"];
    drop_notice = "drop-notice":
        "Never deliver a background completion notice into the parent conversation (a blackhole)",
        catches ["delivery.completion", "subject.deadline"];
    skip_sigterm = "skip-sigterm":
        "Teardown goes from the stdin-EOF grace straight to SIGKILL, skipping the SIGTERM rung",
        catches ["expect.start-error", "expect.teardown", "snapshot"];
    diagnostic_on_success = "diagnostic-on-success":
        "Give completed results a diagnostic too",
        catches ["contract.no-diagnostic", "expect.diagnostic", "presentation.same-diagnostic"];
    unbounded_diagnostic = "unbounded-diagnostic":
        "Append 5000 bytes to every diagnostic after the 4096-byte bound was applied",
        catches ["contract.bound", "expect.diagnostic", "snapshot"];
    drop_partial_output = "drop-partial-output":
        "Drop the partial assistant output of every non-completed result",
        catches ["expect.output", "snapshot"];
    notice_after_kill = "notice-after-kill":
        "Send the completion notice even for a job killed through job_kill",
        catches ["delivery.no-notice-after-kill", "snapshot"];
    wrong_notice_job = "wrong-notice-job":
        "Name job subagent-999 in completion notices instead of the run's job",
        catches ["delivery.job-id"];
    hide_diagnostic_in_tool_result = "hide-diagnostic-in-tool-result":
        "Leave the Diagnostic line out of the foreground tool result",
        catches ["presentation.same-diagnostic", "snapshot"];
    omit_mcp_servers = "omit-mcp-servers":
        "Send ACP session/new without the required `mcpServers` (a wire violation)",
        catches ["wire.violation"];
    reject_before_rollback = "reject-before-rollback":
        "Reject an ACP start before the child is rolled back (the rollback runs behind the \
         rejection)",
        catches ["expect.start-error", "process.pipes", "process.rollback", "snapshot"];
    partial_from_chunks_only = "partial-from-chunks-only":
        "DSH SDK: read partial output only from `assistant/chunk` text-deltas, never from a \
         failed `assistant/attempt`'s stream (where the real runtime carries it)",
        catches ["expect.output", "snapshot"];
    durations_unchecked = "durations-unchecked":
        "Read an invalid duration (a dispose grace, the DSH SDK shutdown timeout: zero, \
         negative, past the timer limit, a string) as unset, its default, instead of refusing \
         the configuration (the child is spawned, with no script to play)",
        catches ["expect.start-error", "snapshot", "wire.violation"];
    validate_after_spawn = "validate-after-spawn":
        "Start the child before reading the configuration, and let it go (stdin closed) when \
         the configuration proves invalid: the rejection is the same, but something ran",
        catches ["process.nothing-spawned"];
    own_cwd_ignored = "own-cwd-ignored":
        "ACP, DSH SDK: never read the provider's own `cwd` key: the child runs in the parent's \
         working directory, and an invalid one is not refused",
        catches ["expect.start-error", "wire.violation", "snapshot"];
    bounds_exclusive = "bounds-exclusive":
        "Refuse a bounded key set to its bound itself (a duration of 2^31 − 1 ms, maxTokens of \
         2^53 − 1) as if the bound were exclusive",
        catches ["expect.start-error", "expect.stop-reason", "snapshot"];
    dispose_ignores_turn = "dispose-ignores-turn":
        "The host's own dispose of a run whose prompt or turn is in flight cancels nothing: \
         the provider waits for the turn to end on its own, and only then tears down",
        catches ["subject.deadline"];
    graces_not_applied = "graces-not-applied":
        "Validate the dispose graces and the DSH SDK shutdown timeout, then walk the ladder \
         with the records' defaults instead of the configured values",
        catches ["timing.grace"];
    needless_grace = "needless-grace":
        "After the child's tree has settled, wait out the dispose grace anyway before saying so \
         (every verdict still passes; only time shows it)",
        catches ["subject.deadline", "timing.settled"];
    turn_end_ends_the_run = "turn-end-ends-the-run":
        "DSH SDK: a runtime lost after `turn/end` but before `idle` reports that turn's reason \
         instead of a transport failure (the run ends at idle)",
        catches ["expect.diagnostic", "expect.job-status", "expect.stop-reason", "snapshot"];
    early_facts_last = "early-facts-last":
        "Codex: facts of requests answered before the turn/start answer are applied when the \
         result is taken, after newer facts, instead of at the commit in wire order",
        catches ["expect.diagnostic", "snapshot"];
    exit_beats_terminal = "exit-beats-terminal":
        "ACP: a child that exits right after answering the prompt is reported as a process exit, \
         though the terminal answer came first",
        catches ["expect.diagnostic", "expect.job-status", "expect.stop-reason", "snapshot"];
    codex_experimental_api = "codex-experimental-api":
        "Codex: initialize asks for the experimental API (`capabilities.experimentalApi: true`; \
         schema-valid, not what the records send)",
        catches ["wire.violation"];
    acp_fs_capability = "acp-fs-capability":
        "ACP: initialize offers a file-system capability (`clientCapabilities.fs.readTextFile: \
         true`; schema-valid, not what the records send)",
        catches ["wire.violation"];
    dsh_initialize_patience = "dsh-initialize-patience":
        "DSH SDK: give up on initialize after 1 s (a deadline the records do not give; the real \
         runtime answers in about 0.9 s idle and 2.4 s under load)",
        catches ["expect.start-error", "snapshot"];
    dsh_subject_cwd = "dsh-subject-cwd":
        "DSH SDK: initialize names the subject's own working directory instead of the runtime's",
        catches ["wire.violation"];
    skip_session_cancel = "skip-session-cancel":
        "ACP: never send session/cancel, neither on a local cancel nor at dispose (disposal \
         while the prompt runs goes straight to stdin EOF)",
        catches ["wire.violation"];
    cancel_misspelled_session = "cancel-misspelled-session":
        "ACP: send session/cancel as `{\"session\": …}` (the member misspelled; the schema \
         requires `sessionId`), which a lenient agent ignores",
        catches ["wire.violation"];
    codex_strict_notifications = "codex-strict-notifications":
        "Codex: a notification the provider has no handler for fails the turn, as a host that \
         throws on an unhandled method does (it knows thread/started, thread/status/changed, \
         turn/started, turn/completed, item/started, item/completed, item/agentMessage/delta \
         and error: what the fakes sent before they sent what every real run sends unasked)",
        catches ["expect.start-error", "snapshot"];
    skip_turn_interrupt = "skip-turn-interrupt":
        "Codex: never send turn/interrupt, neither on a local cancel nor when disposing an open \
         turn",
        catches ["wire.violation"];
    await_cancelled_answer = "await-cancelled-answer":
        "ACP: after a local cancel, wait for the agent to answer the cancelled prompt before \
         the result (an agent that exits at EOF without answering it, as the ACP SDK 1.9.0 \
         example agent does, leaves the run waiting)",
        catches ["delivery.job-output", "subject.deadline"];
    unanswered_request = "unanswered-request":
        "Codex: leave an unsupported server request unanswered (the run still fails on it)",
        catches ["wire.violation"];
    empty_text_block = "empty-text-block":
        "Answer no output as one empty text block (`[{\"type\":\"text\",\"text\":\"\"}]`) \
         instead of `[]`",
        catches ["contract.output"];
    copy_unknown_stop_reason = "copy-unknown-stop-reason":
        "ACP: copy an unknown stop reason into the diagnostic (`(stop reason: <raw>)`)",
        catches ["contract.redaction", "expect.diagnostic", "snapshot"];
    error_data_in_diagnostic = "error-data-in-diagnostic":
        "ACP: copy a `session/prompt` error response's `data` into the diagnostic",
        catches ["contract.redaction", "expect.diagnostic"];
    leak_encoded = "leak-encoded":
        "ACP: append a `session/prompt` error response's message to the diagnostic in another \
         form each run (JSON-escaped, percent-encoded, in base64, in base64url, with zero-width \
         spaces, split between the diagnostic and the output, cut to 24 characters, \
         form-encoded, HTML-escaped)",
        catches ["contract.redaction", "expect.diagnostic"];
    leak_form_encoded = "leak-form-encoded":
        "ACP: append a `session/prompt` error response's message to the diagnostic form-encoded \
         (`+` for a space: `Internal+error`, no `%` in it), in a retry URL's query",
        catches ["contract.redaction", "expect.diagnostic"];
    leak_html_escaped = "leak-html-escaped":
        "ACP: append a `session/prompt` error response's message to the diagnostic HTML-escaped \
         (`&quot;`, `&lt;`, `&#39;`, …), as an error page shows it",
        catches ["contract.redaction", "expect.diagnostic"];
    wrap_error_into_output = "wrap-error-into-output":
        "ACP: word-wrap a `session/prompt` error response's message over the result: its words \
         up to the space (or other separator) nearest its middle end the diagnostic, the rest \
         begins the output on a line of its own (that separator dropped)",
        catches ["contract.redaction", "expect.diagnostic", "expect.output"];
    leak_parent_token = "leak-parent-token":
        "Append the host's own parent credential (`CONFORM_PARENT_API_TOKEN`), percent-encoded \
         in a retry URL, to every diagnostic",
        catches ["contract.redaction", "expect.diagnostic"];
    title_in_permission_line = "title-in-permission-line":
        "ACP: name the tool call's title in the permission line",
        catches ["contract.redaction", "expect.diagnostic"];
    task_in_start_error = "task-in-start-error":
        "Append the task text to every start rejection message that is not a cancellation",
        catches ["contract.redaction", "expect.start-error", "snapshot"];
    leak_turn_error = "leak-turn-error":
        "Codex: append a failed turn's error message to the diagnostic",
        catches ["contract.redaction", "expect.diagnostic", "snapshot"];
    reuse_job_id = "reuse-job-id":
        "Give every background job the same id (`subagent-1`)",
        catches ["delivery.unique-job-id"];
    inherit_whole_env = "inherit-whole-env":
        "Hand the child the whole parent environment, credential-shaped and `DSH_*` names \
         included",
        catches ["wire.violation"];
    permission_fact_per_provider = "permission-fact-per-provider":
        "ACP: keep the latest permission fact per provider instead of per run (a run reports the \
         decision another run got last)",
        catches ["expect.diagnostic", "snapshot"];
    shared_diagnostic_builder = "shared-diagnostic-builder":
        "One diagnostic buffer for all runs, never reset: each failure's diagnostic carries the \
         earlier failures' lines",
        catches ["contract.bound", "expect.diagnostic", "isolation.cross-talk", "snapshot"];
    job_id_per_provider = "job-id-per-provider":
        "Count job ids per provider, so jobs of two providers in one subject get the same id",
        catches ["delivery.unique-job-id"];
    cancel_every_run = "cancel-every-run":
        "Deliver a cancel to every run in flight, not only to the one it names",
        catches ["expect.diagnostic", "expect.job-status", "expect.output", "expect.start-error",
            "expect.stop-reason", "isolation.cancel-target", "snapshot", "wire.violation"];
    consuming_job_output = "consuming-job-output":
        "A job_output read consumes the job's output: a second read shows `(no new output)`",
        catches ["delivery.job-output", "snapshot"];
    renotice_on_late_kill = "renotice-on-late-kill":
        "job_kill on a job that already finished sends its completion notice again",
        catches ["delivery.single-notice", "snapshot"];
    success_as_error = "success-as-error":
        "Mark every foreground tool result as an error (`isError: true`), a completed run's too",
        catches ["presentation.is-error", "snapshot"];
    job_output_status_without_detail = "job-output-status-without-detail":
        "Show a failed job's status in job_output without its detail (`[status: failed]`), \
         unlike its notice",
        catches ["presentation.same-status", "snapshot"];
    background_start_wording = "background-start-wording":
        "Answer a background start with `started background job <id>` (the word `subagent` left \
         out)",
        catches ["presentation.background-start", "snapshot"];
    no_job_output_answer = "no-job-output-answer":
        "Never answer `job_output` (the parent model's call waits forever)",
        catches ["delivery.completion", "delivery.job-output"];
    job_status_completed_always = "job-status-completed-always":
        "Report every finished background job as `completed` (in its notice and job_output), \
         failed ones too",
        catches ["expect.job-status", "snapshot"];
    unknown_code_as_other = "unknown-code-as-other":
        "Codex: show a `codexErrorInfo` the pinned vocabulary does not know as the catch-all \
         `other` instead of `unknown`",
        catches ["expect.diagnostic", "expect.upstream-code", "snapshot"];
    wrong_expected_by = "wrong-expected-by":
        "Echo the dispatch time as the dispatch receipt's `expectedBy` instead of the one \
         `start` gave",
        catches ["delivery.dispatch-receipt"];
    crlf_output = "crlf-output":
        "Write a completed job's `job_output` answer with `\\r\\n` line ends (not the exact \
         text, though it reads the same)",
        catches ["snapshot"];
    job_output_twice = "job-output-twice":
        "Answer every `job_output` twice (the second answer comes after the run is over)",
        catches ["subject.after-end"];
    process_group_only_kill = "process-group-only-kill":
        "Teardown signals only the runtime's process group: a descendant that left it (`setsid`, \
         a double fork) is never killed",
        catches ["expect.job-status", "expect.start-error", "process.pipes", "process.rollback",
            "process.settle-claim", "process.settled", "snapshot"];
    settled_early = "settled-early":
        "Send `settled` as soon as the teardown ladder has signalled the tree, without waiting \
         for it to be gone",
        catches ["expect.job-status", "expect.start-error", "process.pipes", "process.rollback",
            "process.settle-claim", "snapshot"];
    no_sigkill_rung = "no-sigkill-rung":
        "The teardown ladder ends at SIGTERM: a tree that survives it is never sent SIGKILL",
        catches ["expect.job-status", "process.settled", "snapshot"];
    reap_orphans_late = "reap-orphans-late":
        "Reap orphaned descendants (reparented to the subject, a child subreaper) only when the \
         subject exits, so they stay zombies after `settled`",
        catches ["process.reaped"];
    result_twice = "result-twice":
        "Report every result twice",
        catches ["subject.protocol"];
    stub_result = "stub-result":
        "Answer every run with an empty completed result without spawning its runtime (a stub \
         left in)",
        catches ["delivery.completion", "expect.diagnostic", "expect.job-status", "expect.output",
            "expect.start-error", "expect.stop-reason", "expect.teardown", "expect.upstream-code",
            "snapshot", "subject.runtime"];
    decode_per_read = "decode-per-read":
        "Decode each read of the runtime's stdout on its own (Node's `chunk.toString()` per \
         `data` event): a character split across two reads turns into U+FFFD",
        catches ["expect.output", "snapshot"];
    parse_per_read = "parse-per-read":
        "Parse each read of the runtime's stdout as one frame (`JSON.parse` per `data` event): \
         a frame split across two reads is two pieces of garbage, and so are two frames read at \
         once",
        catches ["expect.output", "snapshot", "subject.deadline"];
    line_limit_64k = "line-limit-64k":
        "Read the runtime's stdout with a 64 KiB line limit (Python asyncio's default \
         `readline`): at a longer frame the reader raises and its task is gone, unnoticed",
        catches ["subject.deadline"];
    kill_runtime_after_spawn = "kill-runtime-after-spawn":
        "SIGKILL the runtime the moment it is spawned, before it says a word (as a stub that \
         answers from the expected texts would), then go on as if nothing happened",
        catches ["wire.script"];
    late_result_after_exit = "late-result-after-exit":
        "When the child has already exited, wait two seconds before reporting the result",
        catches ["timing.result", "timing.settled"];
    blank_success_completed = "blank-success-completed":
        "Claude Code: count a `success` result as completed whatever its text (blank included)",
        catches ["expect.diagnostic", "expect.job-status", "expect.output", "expect.stop-reason",
            "snapshot"];
    max_turns_as_max_tokens = "max-turns-as-max-tokens":
        "Claude Code: map the result subtype `error_max_turns` to the shared `max-tokens`",
        catches ["expect.diagnostic", "expect.stop-reason", "snapshot"];
    claude_permission_fact_dropped = "claude-permission-fact-dropped":
        "Claude Code: leave the unattended permission decision out of the diagnostic",
        catches ["expect.diagnostic", "snapshot"];
    no_permission_prompt_tool = "no-permission-prompt-tool":
        "Claude Code: start the CLI without `--permission-prompt-tool stdio` while installing \
         the permission callback (the CLI would never ask)",
        catches ["wire.violation"];
    null_handshake_accepted = "null-handshake-accepted":
        "Codex, DSH SDK, Claude Code: take an `initialize` answer that is not an object (`null`) \
         as a completed handshake",
        catches ["expect.start-error", "snapshot", "subject.deadline", "wire.violation"];
    signal_beats_result = "signal-beats-result":
        "Claude Code: a CLI that dies by a signal after its result is reported as a process \
         exit, the result disregarded",
        catches ["expect.diagnostic", "snapshot"];
    result_after_cancel = "result-after-cancel":
        "Claude Code: a local cancel waits (up to `disposeGraceMs`) for the CLI's result and \
         reports it instead of `aborted`",
        catches ["expect.job-status", "expect.output", "expect.stop-reason", "snapshot"];
    init_resets_facts = "init-resets-facts":
        "Claude Code: the CLI's `system` `init` clears the permission facts seen before it",
        catches ["expect.diagnostic", "snapshot"];
    spawns_when_aborted = "spawns-when-aborted":
        "Skip the check of a signal already aborted when start() is called: the runtime is \
         spawned anyway, and the handshake's own race with the signal rolls it back and rejects \
         (with the message for a cancel during startup, the same one but for Codex's)",
        catches ["expect.start-error", "process.nothing-spawned", "snapshot"];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Defects, clap::Error> {
        Cli::try_parse_from(std::iter::once("conform-reference").chain(args.iter().copied()))
            .map(|c| Defects::from_list(&c.defects))
    }

    #[test]
    fn parses_defects() {
        assert_eq!(p(&[]).unwrap(), Defects::default());
        assert_eq!(
            p(&["--defect", "skip-teardown", "--defect=leak-raw-error"]).unwrap(),
            Defects {
                skip_teardown: true,
                leak_raw_error: true,
                ..Defects::default()
            }
        );
        assert!(p(&["--defect", "nope"]).is_err());
        assert!(p(&["--defect"]).is_err());
    }

    /// Every defect has a name, a line of help and at least one check expected to catch it,
    /// and turns exactly one switch on: its own (named like it).
    #[test]
    fn every_defect_declared_whole() {
        assert_eq!(Defect::value_variants().len(), DEFECTS.len());
        for (d, info) in Defect::value_variants().iter().zip(DEFECTS) {
            assert_eq!(d.info(), info);
            let name = info.name;
            assert!(!name.is_empty() && !info.help.is_empty(), "{name}");
            assert!(!info.catches.is_empty(), "{name}: no check catches it");
            for check in info.catches {
                assert!(
                    check.split('.').all(|part| !part.is_empty()
                        && part.chars().all(|c| c.is_ascii_lowercase() || c == '-')),
                    "{name}: {check:?} is not a check id"
                );
            }
            let value = d.to_possible_value().unwrap();
            assert_eq!(value.get_name(), name);
            assert_eq!(
                value.get_help().map(|h| h.to_string()).as_deref(),
                Some(info.help)
            );
            let on = p(&["--defect", name]).unwrap();
            assert_eq!(on.switches_on(), [name.replace('-', "_")], "{name}");
        }
        let mut names: Vec<_> = DEFECTS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), DEFECTS.len(), "two defects share a name");
    }
}
