//! How the Claude Agent SDK starts the Claude Code CLI, pinned against candidate: the command
//! line each SDK version writes for the same `query()` (`fakes/peers/claude-sdk/argv.mjs`, a
//! stub CLI that records its argv), compared flag by flag — which flags, which values, and how a
//! value is written (`--flag value` or `--flag=value`). The CLI's wire says nothing of this: it
//! is the SDK's side of the seam, which the Claude Code fake reads as strictly as the real CLI.

use std::path::{Path, PathBuf};

use super::error::SdkFlagsError;

/// One flag as written: its name, its value, and whether the value was inline (`--flag=value`).
#[derive(Debug, PartialEq, Eq)]
struct Flag {
    name: String,
    value: Option<String>,
    inline: bool,
}

/// The flags of a CLI command line, in order. A word after a flag is its value unless it is a
/// flag itself.
fn flags(argv: &[String]) -> Vec<Flag> {
    let mut out = Vec::new();
    let mut words = argv.iter().peekable();
    while let Some(word) = words.next() {
        if !word.starts_with("--") {
            continue;
        }
        if let Some((name, value)) = word.split_once('=') {
            out.push(Flag {
                name: name.to_owned(),
                value: Some(value.to_owned()),
                inline: true,
            });
            continue;
        }
        let value = words.next_if(|w| !w.starts_with("--")).cloned();
        out.push(Flag {
            name: word.clone(),
            value,
            inline: false,
        });
    }
    out
}

/// What changed from the pinned SDK's command line to the candidate's, one line per kind of
/// change.
pub fn changes(pinned: &[String], candidate: &[String]) -> Vec<String> {
    let (p, c) = (flags(pinned), flags(candidate));
    let find = |list: &[Flag], name: &str| list.iter().position(|f| f.name == name);
    let mut out = Vec::new();
    let names = |list: Vec<&Flag>| {
        list.iter()
            .map(|f| format!("`{}`", f.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let now_inline: Vec<&Flag> = c
        .iter()
        .filter(|f| f.inline && find(&p, &f.name).is_some_and(|i| !p[i].inline))
        .collect();
    if !now_inline.is_empty() {
        out.push(format!(
            "writes {} as `--flag=value` (the pinned SDK: `--flag value`)",
            names(now_inline)
        ));
    }
    let now_apart: Vec<&Flag> = c
        .iter()
        .filter(|f| !f.inline && f.value.is_some())
        .filter(|f| find(&p, &f.name).is_some_and(|i| p[i].inline))
        .collect();
    if !now_apart.is_empty() {
        out.push(format!(
            "writes {} as `--flag value` (the pinned SDK: `--flag=value`)",
            names(now_apart)
        ));
    }
    let show = |f: &Flag| match &f.value {
        Some(v) => format!("`{} {v}`", f.name),
        None => format!("`{}`", f.name),
    };
    for f in c.iter().filter(|f| find(&p, &f.name).is_none()) {
        out.push(format!("passes a new flag {}", show(f)));
    }
    for f in p.iter().filter(|f| find(&c, &f.name).is_none()) {
        out.push(format!("no longer passes {}", show(f)));
    }
    for f in &c {
        if let Some(i) = find(&p, &f.name)
            && p[i].value != f.value
        {
            out.push(format!(
                "passes {} where the pinned SDK passed {}",
                show(f),
                show(&p[i])
            ));
        }
    }
    if p.iter().map(|f| &f.name).ne(c.iter().map(|f| &f.name)) && out.is_empty() {
        out.push("passes the same flags in another order".into());
    }
    out
}

/// The Agent SDK's module beside an installed CLI binary (`…/node_modules/@anthropic-ai/…`).
pub fn sdk_of(cli: &Path) -> Option<PathBuf> {
    let modules = cli.ancestors().find(|a| a.ends_with("node_modules"))?;
    let sdk = modules.join("@anthropic-ai/claude-agent-sdk/sdk.mjs");
    sdk.is_file().then_some(sdk)
}

/// The command line this SDK writes for the probe's `query()` (run with `node`).
pub fn argv(sdk: &Path) -> Result<Vec<String>, SdkFlagsError> {
    let probe = crate::settings::default_dir("fakes").join("peers/claude-sdk/argv.mjs");
    let work = tempfile::tempdir().map_err(SdkFlagsError::TempDir)?;
    let out = std::process::Command::new("node")
        .arg(&probe)
        .arg(sdk)
        .arg(work.path())
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|source| SdkFlagsError::Run {
            probe: probe.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(SdkFlagsError::Failed {
            probe,
            status: out.status,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(SdkFlagsError::NoArgv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn the_0_3_334_inline_values_are_one_line_naming_the_flags() {
        // As the SDK 0.3.220 and 0.3.334 write them (fakes/peers/claude-sdk/argv.mjs).
        let pinned = words(
            "--output-format stream-json --verbose --max-turns 3 --permission-mode default --no-session-persistence",
        );
        let candidate = words(
            "--output-format stream-json --verbose --max-turns=3 --permission-mode=default --no-session-persistence",
        );
        assert_eq!(
            changes(&pinned, &candidate),
            [
                "writes `--max-turns`, `--permission-mode` as `--flag=value` (the pinned SDK: `--flag value`)"
            ]
        );
        assert!(changes(&pinned, &pinned).is_empty());
    }

    #[test]
    fn flags_added_gone_and_changed_are_each_said() {
        let pinned = words("--verbose --model a --max-turns 3");
        let candidate = words("--verbose --model=b --effort high");
        assert_eq!(
            changes(&pinned, &candidate),
            [
                "writes `--model` as `--flag=value` (the pinned SDK: `--flag value`)",
                "passes a new flag `--effort high`",
                "no longer passes `--max-turns 3`",
                "passes `--model b` where the pinned SDK passed `--model a`",
            ]
        );
        assert_eq!(
            changes(&words("--a --b"), &words("--b --a")),
            ["passes the same flags in another order"]
        );
    }
}
