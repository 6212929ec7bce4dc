//! The CLI's command line as the SDK builds it (`--output-format stream-json --verbose
//! --input-format stream-json`, then `--permission-prompt-tool stdio` when the host installs a
//! permission callback, `--permission-mode`, …), read as strictly as the real CLI reads it: an
//! unknown flag, a flag without its value or a value outside its set is an error, as are the
//! stream-json flags missing (the SDK can only talk to a CLI that has all three).

use crate::error::RefusedArgs;

/// Flags that take a value, with the values the CLI accepts (`None`: free).
const VALUED: &[(&str, Option<&[&str]>)] = &[
    ("--output-format", Some(&["text", "json", "stream-json"])),
    ("--input-format", Some(&["text", "stream-json"])),
    ("--permission-prompt-tool", None),
    (
        "--permission-mode",
        Some(&[
            "default",
            "acceptEdits",
            "bypassPermissions",
            "plan",
            "dontAsk",
            "auto",
        ]),
    ),
    ("--disallowedTools", None),
    ("--allowedTools", None),
    ("--tools", None),
    ("--max-turns", None),
    ("--max-budget-usd", None),
    ("--max-thinking-tokens", None),
    ("--model", None),
    ("--fallback-model", None),
    ("--mcp-config", None),
    ("--json-schema", None),
    ("--resume", None),
    ("--session-id", None),
    ("--setting-sources", None),
    ("--settings", None),
    ("--system-prompt", None),
    ("--append-system-prompt", None),
    ("--add-dir", None),
    ("--agents", None),
    ("--plugin-dir", None),
];

/// Flags without a value.
const SWITCHES: &[&str] = &[
    "--verbose",
    "--no-session-persistence",
    "--allow-dangerously-skip-permissions",
    "--dangerously-skip-permissions",
    "--include-partial-messages",
    "--continue",
    "--fork-session",
    "--strict-mcp-config",
    "--await-initialize",
];

/// What the fake learns from its command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CliArgs {
    /// `--permission-mode` (`None`: the CLI's `default`).
    pub permission_mode: Option<String>,
    /// `--permission-prompt-tool stdio`: permission prompts go to the SDK as `can_use_tool`.
    pub prompts_over_stdio: bool,
    /// `--disallowedTools`, split at commas.
    pub disallowed_tools: Vec<String>,
    pub include_partial_messages: bool,
    pub no_session_persistence: bool,
    pub allow_dangerously_skip_permissions: bool,
}

/// Reads the CLI's flags; the error is what the real CLI would refuse.
pub fn check_args(args: &[String]) -> Result<CliArgs, RefusedArgs> {
    let mut out = CliArgs::default();
    let (mut output, mut input, mut verbose) = (None, None, false);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let (name, inline) = match flag.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_owned())),
            _ => (flag.as_str(), None),
        };
        if SWITCHES.contains(&name) {
            if inline.is_some() {
                return Err(format!("option '{name}' takes no value").into());
            }
            match name {
                "--verbose" => verbose = true,
                "--include-partial-messages" => out.include_partial_messages = true,
                "--no-session-persistence" => out.no_session_persistence = true,
                "--allow-dangerously-skip-permissions" => {
                    out.allow_dangerously_skip_permissions = true;
                }
                _ => {}
            }
            continue;
        }
        let Some((_, allowed)) = VALUED.iter().find(|(n, _)| *n == name) else {
            return Err(if name.starts_with('-') {
                format!("unknown option '{name}'").into()
            } else {
                format!("unexpected argument '{name}' (the prompt comes over stdin in stream-json)")
                    .into()
            });
        };
        let value = match inline.or_else(|| it.next().cloned()) {
            Some(v) => v,
            None => return Err(format!("option '{name} <value>' argument missing").into()),
        };
        if let Some(allowed) = allowed
            && !allowed.contains(&value.as_str())
        {
            return Err(format!(
                "option '{name}' argument '{value}' is invalid. Allowed choices are {}.",
                allowed.join(", ")
            )
            .into());
        }
        match name {
            "--output-format" => output = Some(value),
            "--input-format" => input = Some(value),
            "--permission-mode" => out.permission_mode = Some(value),
            "--permission-prompt-tool" => out.prompts_over_stdio = value == "stdio",
            "--disallowedTools" => out
                .disallowed_tools
                .extend(value.split(',').map(|t| t.trim().to_owned())),
            _ => {}
        }
    }
    if output.as_deref() != Some("stream-json") || input.as_deref() != Some("stream-json") {
        return Err(
            "the SDK's CLI needs --output-format stream-json and --input-format stream-json".into(),
        );
    }
    if !verbose {
        return Err("--output-format=stream-json requires --verbose".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn the_sdks_own_command_line_is_read() {
        // As the real SDK 0.3.220 spawned a recording CLI with canUseTool and dontAsk.
        let a = check_args(&args(
            "--output-format stream-json --verbose --input-format stream-json \
             --permission-prompt-tool stdio --disallowedTools AskUserQuestion \
             --permission-mode dontAsk --no-session-persistence",
        ))
        .unwrap();
        assert_eq!(a.permission_mode.as_deref(), Some("dontAsk"));
        assert!(a.prompts_over_stdio && a.no_session_persistence);
        assert_eq!(a.disallowed_tools, ["AskUserQuestion"]);
    }

    #[test]
    fn what_the_real_cli_refuses_is_refused() {
        let base = "--output-format stream-json --verbose --input-format stream-json";
        for (extra, why) in [
            ("--bogus", "unknown option"),
            ("--permission-mode", "argument missing"),
            ("--permission-mode never", "Allowed choices"),
            ("task-text", "unexpected argument"),
        ] {
            let e = check_args(&args(&format!("{base} {extra}"))).unwrap_err();
            assert!(e.to_string().contains(why), "{extra}: {e}");
        }
        assert!(
            check_args(&args(
                "--output-format stream-json --input-format stream-json"
            ))
            .is_err()
        );
        assert!(check_args(&args("--verbose --input-format stream-json")).is_err());
    }
}
