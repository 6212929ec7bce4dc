//! The hidden commands the harness runs itself: a fake runtime (the others are one call each,
//! in [`super::exec`]), and [`plain`], which reads the two started hundreds of times per
//! catalog without clap.

use std::process::ExitCode;

use conform_protocol::vocab::Provider;

use crate::cli::Command;
use crate::cmd::Error;

/// `conform fake <provider> …`: the scripted runtime of a provider (never returns).
pub fn fake(provider: Provider, args: Vec<String>) -> Result<ExitCode, Error> {
    conform_fakes::cli::main_with_args(
        conform_fakes::protocols::codec_for(provider),
        args,
        vec!["fake".to_owned(), provider.to_string()],
    )
}

/// `fake <provider> …` and `reference …` (the arguments after the program name) as clap reads
/// them, without building clap's whole command tree: every fake of a run and the reference
/// subject is this binary started afresh, and the tree was some 3 % of a fake's CPU. `None`
/// for anything else, and for the forms this does not read as clap does (a `--` first, which
/// clap takes as the end of its options): clap parses those as before.
pub fn plain(args: &[String]) -> Option<Command> {
    match args {
        [cmd, provider, rest @ ..] if cmd == "fake" && !starts_with_escape(rest) => {
            Some(Command::Fake {
                provider: provider.parse().ok()?,
                args: rest.to_vec(),
            })
        }
        [cmd, rest @ ..] if cmd == "reference" && !starts_with_escape(rest) => {
            Some(Command::Reference {
                args: rest.to_vec(),
            })
        }
        _ => None,
    }
}

fn starts_with_escape(rest: &[String]) -> bool {
    rest.first().is_some_and(|a| a == "--")
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::Cli;

    /// What [`plain`] reads is what clap reads, for the command lines the harness writes and
    /// the odd ones around them.
    #[test]
    fn plain_reads_as_clap_does() {
        let lines: &[&[&str]] = &[
            &["fake", "acp", "--side", "/s", "--run", "r1"],
            &[
                "fake", "codex", "--script", "s.json", "--side", "/s", "--run", "r",
            ],
            &[
                "fake",
                "claude-code",
                "--side",
                "/s",
                "--run",
                "r",
                "--",
                "--print",
                "-v",
            ],
            &[
                "fake",
                "dsh-sdk",
                "--grandchild",
                "--side",
                "/s",
                "--run",
                "r",
                "--setsid",
            ],
            &["fake", "acp"],
            &["fake", "acp", "--help"],
            &["fake", "acp", "-h", "x"],
            &["fake", "acp", "plain", "--", "x"],
            &["fake", "acp", "--version"],
            &["reference"],
            &["reference", "--defects", "leak-raw-error,reuse-job-id"],
            &["reference", "--help"],
            &["reference", "x", "--", "y"],
        ];
        for line in lines {
            let args: Vec<String> = line.iter().map(|a| a.to_string()).collect();
            let by_clap =
                Cli::try_parse_from(std::iter::once("conform".to_owned()).chain(args.clone()))
                    .unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let plain = plain(&args).unwrap_or_else(|| panic!("{line:?} is read plainly"));
            assert_eq!(
                format!("{plain:?}"),
                format!("{:?}", by_clap.command),
                "{line:?}"
            );
        }
        // Left to clap: what it reads otherwise, or refuses.
        let left: &[&[&str]] = &[
            &["fake", "acp", "--", "--side"],
            &["reference", "--", "x"],
            &["fake", "bogus", "--side", "/s"],
            &["fake"],
            &["run", "--json", "x"],
            &["--version"],
            &[],
        ];
        for line in left {
            let args: Vec<String> = line.iter().map(|a| a.to_string()).collect();
            assert!(plain(&args).is_none(), "{line:?}");
        }
    }
}
