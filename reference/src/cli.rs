//! Command line: `conform-reference [--defect <name>]... [--help] [--version]`.

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
    pub empty_text_block: bool,
}

pub const DEFECTS: [(&str, &str); 29] = [
    (
        "crash-after-dispatch",
        "exit with code 70 right after sending the first `dispatched`, abandoning all children",
    ),
    (
        "hang-after-dispatch",
        "after the first `dispatched`, never send anything else for that run (no result, settled, tool_result, notice or job_output); its child is still cleaned up silently",
    ),
    (
        "skip-teardown",
        "dispose() sends `settled` at once without session/cancel, stdin EOF or signals, leaving the child running",
    ),
    (
        "leak-raw-error",
        "append the child's raw stderr tail to every non-completed diagnostic and start rejection message (a redaction defect)",
    ),
    (
        "max-tokens-as-error",
        "map the ACP stop reason `max_tokens` to `error` instead of `max-tokens`",
    ),
    (
        "blocked-as-error",
        "map the DSH SDK child turn end `blocked` to `error` + child-error instead of `refusal`",
    ),
    (
        "stderr-in-start-error",
        "append the child's stderr tail to DSH SDK start rejection messages (as today's real host does)",
    ),
    (
        "cyber-policy-as-refusal",
        "map the Codex error info `cyberPolicy` to the stop reason `refusal` instead of `error`",
    ),
    (
        "http-status-from-string",
        "show the Codex `HTTP status` also when `httpStatusCode` is a numeric string (\"503\")",
    ),
    (
        "drop-notice",
        "never deliver a background completion notice into the parent conversation (a blackhole)",
    ),
    (
        "skip-sigterm",
        "teardown goes from the stdin-EOF grace straight to SIGKILL, skipping the SIGTERM rung",
    ),
    (
        "diagnostic-on-success",
        "give completed results a diagnostic too",
    ),
    (
        "unbounded-diagnostic",
        "append 5000 bytes to every diagnostic after the 4096-byte bound was applied",
    ),
    (
        "drop-partial-output",
        "drop the partial assistant output of every non-completed result",
    ),
    (
        "notice-after-kill",
        "send the completion notice even for a job killed through job_kill",
    ),
    (
        "wrong-notice-job",
        "name job subagent-999 in completion notices instead of the run's job",
    ),
    (
        "hide-diagnostic-in-tool-result",
        "leave the Diagnostic line out of the foreground tool result",
    ),
    (
        "omit-mcp-servers",
        "send ACP session/new without the required `mcpServers` (a wire violation)",
    ),
    (
        "reject-before-rollback",
        "reject an ACP start before the child is rolled back (the rollback runs behind the rejection)",
    ),
    (
        "partial-from-chunks-only",
        "DSH SDK: read partial output only from `assistant/chunk` text-deltas, never from a failed `assistant/attempt`'s stream (where the real runtime carries it)",
    ),
    (
        "needless-grace",
        "after the child's tree has settled, wait out the dispose grace anyway before saying so (every verdict still passes; only time shows it)",
    ),
    (
        "turn-end-ends-the-run",
        "DSH SDK: a runtime lost after `turn/end` but before `idle` reports that turn's reason instead of a transport failure (the run ends at idle)",
    ),
    (
        "early-facts-last",
        "Codex: facts of requests answered before the turn/start answer are applied when the result is taken, after newer facts, instead of at the commit in wire order",
    ),
    (
        "exit-beats-terminal",
        "ACP: a child that exits right after answering the prompt is reported as a process exit, though the terminal answer came first",
    ),
    (
        "codex-experimental-api",
        "Codex: initialize asks for the experimental API (`capabilities.experimentalApi: true`; schema-valid, not what the records send)",
    ),
    (
        "acp-fs-capability",
        "ACP: initialize offers a file-system capability (`clientCapabilities.fs.readTextFile: true`; schema-valid, not what the records send)",
    ),
    (
        "dsh-subject-cwd",
        "DSH SDK: initialize names the subject's own working directory instead of the runtime's",
    ),
    (
        "skip-turn-interrupt",
        "Codex: never send turn/interrupt, neither on a local cancel nor when disposing an open turn",
    ),
    (
        "empty-text-block",
        "answer no output as one empty text block (`[{\"type\":\"text\",\"text\":\"\"}]`) instead of `[]`",
    ),
];

pub fn help_text() -> String {
    let mut s = String::from(
        "conform-reference: the reference subject of conform.\n\n\
         Speaks the subject protocol (conform-subject/1) on stdin/stdout, one JSON object per\n\
         line, and hosts one provider run per `start` (providers `acp`, `dsh-sdk` and `codex`).\n\n\
         USAGE:\n    conform-reference [--defect <NAME>]...\n\n\
         OPTIONS:\n    --defect <NAME>   enable a deliberate defect (repeatable; all off by default)\n    \
         -h, --help        print this help\n    -V, --version     print the version\n\n\
         DEFECTS:\n",
    );
    for (name, what) in DEFECTS {
        s.push_str(&format!("    {name:<24}{what}\n"));
    }
    s
}

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Run(Defects),
    Help,
    Version,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CliError {
    #[error("unknown defect `{0}` (see --help)")]
    UnknownDefect(String),
    #[error("--defect needs a value")]
    MissingValue,
    #[error("unexpected argument `{0}` (see --help)")]
    Unexpected(String),
}

pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Command, CliError> {
    let mut defects = Defects::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = match arg.as_str() {
            "-h" | "--help" => return Ok(Command::Help),
            "-V" | "--version" => return Ok(Command::Version),
            "--defect" => args.next().ok_or(CliError::MissingValue)?,
            other => match other.strip_prefix("--defect=") {
                Some(v) => v.to_owned(),
                None => return Err(CliError::Unexpected(other.to_owned())),
            },
        };
        match value.as_str() {
            "crash-after-dispatch" => defects.crash_after_dispatch = true,
            "hang-after-dispatch" => defects.hang_after_dispatch = true,
            "skip-teardown" => defects.skip_teardown = true,
            "leak-raw-error" => defects.leak_raw_error = true,
            "max-tokens-as-error" => defects.max_tokens_as_error = true,
            "blocked-as-error" => defects.blocked_as_error = true,
            "stderr-in-start-error" => defects.stderr_in_start_error = true,
            "cyber-policy-as-refusal" => defects.cyber_policy_as_refusal = true,
            "http-status-from-string" => defects.http_status_from_string = true,
            "drop-notice" => defects.drop_notice = true,
            "skip-sigterm" => defects.skip_sigterm = true,
            "diagnostic-on-success" => defects.diagnostic_on_success = true,
            "unbounded-diagnostic" => defects.unbounded_diagnostic = true,
            "drop-partial-output" => defects.drop_partial_output = true,
            "partial-from-chunks-only" => defects.partial_from_chunks_only = true,
            "needless-grace" => defects.needless_grace = true,
            "turn-end-ends-the-run" => defects.turn_end_ends_the_run = true,
            "early-facts-last" => defects.early_facts_last = true,
            "exit-beats-terminal" => defects.exit_beats_terminal = true,
            "codex-experimental-api" => defects.codex_experimental_api = true,
            "acp-fs-capability" => defects.acp_fs_capability = true,
            "dsh-subject-cwd" => defects.dsh_subject_cwd = true,
            "skip-turn-interrupt" => defects.skip_turn_interrupt = true,
            "empty-text-block" => defects.empty_text_block = true,
            "notice-after-kill" => defects.notice_after_kill = true,
            "wrong-notice-job" => defects.wrong_notice_job = true,
            "hide-diagnostic-in-tool-result" => defects.hide_diagnostic_in_tool_result = true,
            "omit-mcp-servers" => defects.omit_mcp_servers = true,
            "reject-before-rollback" => defects.reject_before_rollback = true,
            _ => return Err(CliError::UnknownDefect(value)),
        }
    }
    Ok(Command::Run(defects))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Result<Command, CliError> {
        parse(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_defects() {
        assert_eq!(p(&[]), Ok(Command::Run(Defects::default())));
        assert_eq!(
            p(&["--defect", "skip-teardown", "--defect=leak-raw-error"]),
            Ok(Command::Run(Defects {
                skip_teardown: true,
                leak_raw_error: true,
                ..Defects::default()
            }))
        );
        assert_eq!(
            p(&["--defect", "nope"]),
            Err(CliError::UnknownDefect("nope".into()))
        );
        assert_eq!(p(&["--defect"]), Err(CliError::MissingValue));
        assert_eq!(p(&["--help"]), Ok(Command::Help));
        for (name, _) in DEFECTS {
            assert!(help_text().contains(name));
            assert!(matches!(p(&["--defect", name]), Ok(Command::Run(_))));
        }
    }
}
