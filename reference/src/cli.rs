//! Command line: `conform-reference [--defect <NAME>]...` (clap; `--help` lists the defects).

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

/// A deliberate misbehaviour the harness's self-tests seed (each must be caught by a check).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Defect {
    /// Exit with code 70 right after sending the first `dispatched`, abandoning all children.
    CrashAfterDispatch,
    /// After the first `dispatched`, never send anything else for that run (no result, settled, tool_result, notice or job_output); its child is still cleaned up silently.
    HangAfterDispatch,
    /// Make dispose() send `settled` at once without session/cancel, stdin EOF or signals, leaving the child running.
    SkipTeardown,
    /// Append the child's raw stderr tail to every non-completed diagnostic and start rejection message (a redaction defect).
    LeakRawError,
    /// Map the ACP stop reason `max_tokens` to `error` instead of `max-tokens`.
    MaxTokensAsError,
    /// Map the DSH SDK child turn end `blocked` to `error` + child-error instead of `refusal`.
    BlockedAsError,
    /// Append the child's stderr tail to DSH SDK start rejection messages (as today's real host does).
    StderrInStartError,
    /// Map the Codex error info `cyberPolicy` to the stop reason `refusal` instead of `error`.
    CyberPolicyAsRefusal,
    /// Show the Codex `HTTP status` also when `httpStatusCode` is a numeric string ("503").
    HttpStatusFromString,
    /// Never deliver a background completion notice into the parent conversation (a blackhole).
    DropNotice,
    /// Teardown goes from the stdin-EOF grace straight to SIGKILL, skipping the SIGTERM rung.
    SkipSigterm,
    /// Give completed results a diagnostic too.
    DiagnosticOnSuccess,
    /// Append 5000 bytes to every diagnostic after the 4096-byte bound was applied.
    UnboundedDiagnostic,
    /// Drop the partial assistant output of every non-completed result.
    DropPartialOutput,
    /// Send the completion notice even for a job killed through job_kill.
    NoticeAfterKill,
    /// Name job subagent-999 in completion notices instead of the run's job.
    WrongNoticeJob,
    /// Leave the Diagnostic line out of the foreground tool result.
    HideDiagnosticInToolResult,
    /// Send ACP session/new without the required `mcpServers` (a wire violation).
    OmitMcpServers,
    /// Reject an ACP start before the child is rolled back (the rollback runs behind the rejection).
    RejectBeforeRollback,
    /// DSH SDK: read partial output only from `assistant/chunk` text-deltas, never from a failed `assistant/attempt`'s stream (where the real runtime carries it).
    PartialFromChunksOnly,
    /// After the child's tree has settled, wait out the dispose grace anyway before saying so (every verdict still passes; only time shows it).
    NeedlessGrace,
    /// DSH SDK: a runtime lost after `turn/end` but before `idle` reports that turn's reason instead of a transport failure (the run ends at idle).
    TurnEndEndsTheRun,
    /// Codex: facts of requests answered before the turn/start answer are applied when the result is taken, after newer facts, instead of at the commit in wire order.
    EarlyFactsLast,
    /// ACP: a child that exits right after answering the prompt is reported as a process exit, though the terminal answer came first.
    ExitBeatsTerminal,
    /// Codex: initialize asks for the experimental API (`capabilities.experimentalApi: true`; schema-valid, not what the records send).
    CodexExperimentalApi,
    /// ACP: initialize offers a file-system capability (`clientCapabilities.fs.readTextFile: true`; schema-valid, not what the records send).
    AcpFsCapability,
    /// DSH SDK: initialize names the subject's own working directory instead of the runtime's.
    DshSubjectCwd,
    /// Codex: never send turn/interrupt, neither on a local cancel nor when disposing an open turn.
    SkipTurnInterrupt,
    /// Codex: leave an unsupported server request unanswered (the run still fails on it).
    UnansweredRequest,
    /// Answer no output as one empty text block (`[{"type":"text","text":""}]`) instead of `[]`.
    EmptyTextBlock,
    /// ACP: copy an unknown stop reason into the diagnostic (`(stop reason: <raw>)`).
    CopyUnknownStopReason,
    /// ACP: copy a `session/prompt` error response's `data` into the diagnostic.
    ErrorDataInDiagnostic,
    /// ACP: name the tool call's title in the permission line.
    TitleInPermissionLine,
    /// Append the task text to every start rejection message that is not a cancellation.
    TaskInStartError,
    /// Codex: append a failed turn's error message to the diagnostic.
    LeakTurnError,
    /// Give every background job the same id (`subagent-1`).
    ReuseJobId,
    /// Hand the child the whole parent environment, credential-shaped and `DSH_*` names included.
    InheritWholeEnv,
    /// ACP: keep the latest permission fact per provider instead of per run (a run reports the decision another run got last).
    PermissionFactPerProvider,
    /// One diagnostic buffer for all runs, never reset: each failure's diagnostic carries the earlier failures' lines.
    SharedDiagnosticBuilder,
    /// Count job ids per provider, so jobs of two providers in one subject get the same id.
    JobIdPerProvider,
    /// Deliver a cancel to every run in flight, not only to the one it names.
    CancelEveryRun,
    /// A job_output read consumes the job's output: a second read shows `(no new output)`.
    ConsumingJobOutput,
    /// job_kill on a job that already finished sends its completion notice again.
    RenoticeOnLateKill,
    /// Mark every foreground tool result as an error (`isError: true`), a completed run's too.
    SuccessAsError,
    /// Show a failed job's status in job_output without its detail (`[status: failed]`), unlike its notice.
    JobOutputStatusWithoutDetail,
    /// Answer a background start with `started background job <id>` (the word `subagent` left out).
    BackgroundStartWording,
    /// Never answer `job_output` (the parent model's call waits forever).
    NoJobOutputAnswer,
    /// Report every finished background job as `completed` (in its notice and job_output), failed ones too.
    JobStatusCompletedAlways,
    /// Codex: show a `codexErrorInfo` the pinned vocabulary does not know as the catch-all `other` instead of `unknown`.
    UnknownCodeAsOther,
    /// Echo the dispatch time as the dispatch receipt's `expectedBy` instead of the one `start` gave.
    WrongExpectedBy,
    /// Answer every `job_output` twice (the second answer comes after the run is over).
    JobOutputTwice,
    /// Teardown signals only the runtime's process group: a descendant that left it (`setsid`, a double fork) is never killed.
    ProcessGroupOnlyKill,
    /// Send `settled` as soon as the teardown ladder has signalled the tree, without waiting for it to be gone.
    SettledEarly,
    /// The teardown ladder ends at SIGTERM: a tree that survives it is never sent SIGKILL.
    NoSigkillRung,
    /// Reap orphaned descendants (reparented to the subject, a child subreaper) only when the subject exits, so they stay zombies after `settled`.
    ReapOrphansLate,
    /// Report every result twice.
    ResultTwice,
    /// Answer every run with an empty completed result without spawning its runtime (a stub left in).
    StubResult,
    /// When the child has already exited, wait two seconds before reporting the result.
    LateResultAfterExit,
    /// Claude Code: count a `success` result as completed whatever its text (blank included).
    BlankSuccessCompleted,
    /// Claude Code: map the result subtype `error_max_turns` to the shared `max-tokens`.
    MaxTurnsAsMaxTokens,
    /// Claude Code: leave the unattended permission decision out of the diagnostic.
    ClaudePermissionFactDropped,
    /// Claude Code: start the CLI without `--permission-prompt-tool stdio` while installing the
    /// permission callback (the CLI would never ask).
    NoPermissionPromptTool,
    /// Codex, DSH SDK, Claude Code: take an `initialize` answer that is not an object (`null`)
    /// as a completed handshake.
    NullHandshakeAccepted,
    /// Claude Code: a CLI that dies by a signal after its result is reported as a process exit,
    /// the result disregarded.
    SignalBeatsResult,
    /// Claude Code: a local cancel waits (up to `disposeGraceMs`) for the CLI's result and
    /// reports it instead of `aborted`.
    ResultAfterCancel,
    /// Claude Code: the CLI's `system` `init` clears the permission facts seen before it.
    InitResetsFacts,
}

/// Deliberate misbehaviours for the harness's self-tests. All off by default.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Defects {
    pub crash_after_dispatch: bool,
    pub hang_after_dispatch: bool,
    pub skip_teardown: bool,
    pub leak_raw_error: bool,
    pub max_tokens_as_error: bool,
    pub blocked_as_error: bool,
    pub stderr_in_start_error: bool,
    pub cyber_policy_as_refusal: bool,
    pub http_status_from_string: bool,
    pub drop_notice: bool,
    pub skip_sigterm: bool,
    pub diagnostic_on_success: bool,
    pub unbounded_diagnostic: bool,
    pub drop_partial_output: bool,
    pub notice_after_kill: bool,
    pub wrong_notice_job: bool,
    pub hide_diagnostic_in_tool_result: bool,
    pub omit_mcp_servers: bool,
    pub reject_before_rollback: bool,
    pub partial_from_chunks_only: bool,
    pub needless_grace: bool,
    pub turn_end_ends_the_run: bool,
    pub early_facts_last: bool,
    pub exit_beats_terminal: bool,
    pub codex_experimental_api: bool,
    pub acp_fs_capability: bool,
    pub dsh_subject_cwd: bool,
    pub skip_turn_interrupt: bool,
    pub unanswered_request: bool,
    pub empty_text_block: bool,
    pub copy_unknown_stop_reason: bool,
    pub error_data_in_diagnostic: bool,
    pub title_in_permission_line: bool,
    pub task_in_start_error: bool,
    pub leak_turn_error: bool,
    pub reuse_job_id: bool,
    pub inherit_whole_env: bool,
    pub permission_fact_per_provider: bool,
    pub shared_diagnostic_builder: bool,
    pub job_id_per_provider: bool,
    pub cancel_every_run: bool,
    pub consuming_job_output: bool,
    pub renotice_on_late_kill: bool,
    pub success_as_error: bool,
    pub job_output_status_without_detail: bool,
    pub background_start_wording: bool,
    pub no_job_output_answer: bool,
    pub job_status_completed_always: bool,
    pub unknown_code_as_other: bool,
    pub wrong_expected_by: bool,
    pub job_output_twice: bool,
    pub process_group_only_kill: bool,
    pub settled_early: bool,
    pub no_sigkill_rung: bool,
    pub reap_orphans_late: bool,
    pub result_twice: bool,
    pub stub_result: bool,
    pub late_result_after_exit: bool,
    pub blank_success_completed: bool,
    pub max_turns_as_max_tokens: bool,
    pub claude_permission_fact_dropped: bool,
    pub no_permission_prompt_tool: bool,
    pub null_handshake_accepted: bool,
    pub signal_beats_result: bool,
    pub result_after_cancel: bool,
    pub init_resets_facts: bool,
}

impl Defects {
    pub fn from_list(list: &[Defect]) -> Defects {
        let mut d = Defects::default();
        for defect in list {
            match defect {
                Defect::CrashAfterDispatch => d.crash_after_dispatch = true,
                Defect::HangAfterDispatch => d.hang_after_dispatch = true,
                Defect::SkipTeardown => d.skip_teardown = true,
                Defect::LeakRawError => d.leak_raw_error = true,
                Defect::MaxTokensAsError => d.max_tokens_as_error = true,
                Defect::BlockedAsError => d.blocked_as_error = true,
                Defect::StderrInStartError => d.stderr_in_start_error = true,
                Defect::CyberPolicyAsRefusal => d.cyber_policy_as_refusal = true,
                Defect::HttpStatusFromString => d.http_status_from_string = true,
                Defect::DropNotice => d.drop_notice = true,
                Defect::SkipSigterm => d.skip_sigterm = true,
                Defect::DiagnosticOnSuccess => d.diagnostic_on_success = true,
                Defect::UnboundedDiagnostic => d.unbounded_diagnostic = true,
                Defect::DropPartialOutput => d.drop_partial_output = true,
                Defect::NoticeAfterKill => d.notice_after_kill = true,
                Defect::WrongNoticeJob => d.wrong_notice_job = true,
                Defect::HideDiagnosticInToolResult => d.hide_diagnostic_in_tool_result = true,
                Defect::OmitMcpServers => d.omit_mcp_servers = true,
                Defect::RejectBeforeRollback => d.reject_before_rollback = true,
                Defect::PartialFromChunksOnly => d.partial_from_chunks_only = true,
                Defect::NeedlessGrace => d.needless_grace = true,
                Defect::TurnEndEndsTheRun => d.turn_end_ends_the_run = true,
                Defect::EarlyFactsLast => d.early_facts_last = true,
                Defect::ExitBeatsTerminal => d.exit_beats_terminal = true,
                Defect::CodexExperimentalApi => d.codex_experimental_api = true,
                Defect::AcpFsCapability => d.acp_fs_capability = true,
                Defect::DshSubjectCwd => d.dsh_subject_cwd = true,
                Defect::SkipTurnInterrupt => d.skip_turn_interrupt = true,
                Defect::UnansweredRequest => d.unanswered_request = true,
                Defect::EmptyTextBlock => d.empty_text_block = true,
                Defect::CopyUnknownStopReason => d.copy_unknown_stop_reason = true,
                Defect::ErrorDataInDiagnostic => d.error_data_in_diagnostic = true,
                Defect::TitleInPermissionLine => d.title_in_permission_line = true,
                Defect::TaskInStartError => d.task_in_start_error = true,
                Defect::LeakTurnError => d.leak_turn_error = true,
                Defect::ReuseJobId => d.reuse_job_id = true,
                Defect::InheritWholeEnv => d.inherit_whole_env = true,
                Defect::PermissionFactPerProvider => d.permission_fact_per_provider = true,
                Defect::SharedDiagnosticBuilder => d.shared_diagnostic_builder = true,
                Defect::JobIdPerProvider => d.job_id_per_provider = true,
                Defect::CancelEveryRun => d.cancel_every_run = true,
                Defect::ConsumingJobOutput => d.consuming_job_output = true,
                Defect::RenoticeOnLateKill => d.renotice_on_late_kill = true,
                Defect::SuccessAsError => d.success_as_error = true,
                Defect::JobOutputStatusWithoutDetail => d.job_output_status_without_detail = true,
                Defect::BackgroundStartWording => d.background_start_wording = true,
                Defect::NoJobOutputAnswer => d.no_job_output_answer = true,
                Defect::JobStatusCompletedAlways => d.job_status_completed_always = true,
                Defect::UnknownCodeAsOther => d.unknown_code_as_other = true,
                Defect::WrongExpectedBy => d.wrong_expected_by = true,
                Defect::JobOutputTwice => d.job_output_twice = true,
                Defect::ProcessGroupOnlyKill => d.process_group_only_kill = true,
                Defect::SettledEarly => d.settled_early = true,
                Defect::NoSigkillRung => d.no_sigkill_rung = true,
                Defect::ReapOrphansLate => d.reap_orphans_late = true,
                Defect::ResultTwice => d.result_twice = true,
                Defect::StubResult => d.stub_result = true,
                Defect::LateResultAfterExit => d.late_result_after_exit = true,
                Defect::BlankSuccessCompleted => d.blank_success_completed = true,
                Defect::MaxTurnsAsMaxTokens => d.max_turns_as_max_tokens = true,
                Defect::ClaudePermissionFactDropped => d.claude_permission_fact_dropped = true,
                Defect::NoPermissionPromptTool => d.no_permission_prompt_tool = true,
                Defect::NullHandshakeAccepted => d.null_handshake_accepted = true,
                Defect::SignalBeatsResult => d.signal_beats_result = true,
                Defect::ResultAfterCancel => d.result_after_cancel = true,
                Defect::InitResetsFacts => d.init_resets_facts = true,
            }
        }
        d
    }
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
        // Every defect has a name, a line of help, and turns exactly one switch on.
        for d in Defect::value_variants() {
            let name = d.to_possible_value().unwrap();
            assert!(name.get_help().is_some(), "{}", name.get_name());
            let on = p(&["--defect", name.get_name()]).unwrap();
            assert_ne!(on, Defects::default(), "{}", name.get_name());
        }
    }
}
