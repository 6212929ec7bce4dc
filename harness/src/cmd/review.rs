//! `conform review`: the snapshots `conform run` left pending, each shown with its diff from
//! the stored snapshot, then accepted into its snapshots folder (`--accept`) or dropped
//! (`--reject`).

use std::fmt::Write as _;
use std::process::ExitCode;

use crate::cli::ReviewArgs;
use crate::cmd::output::out;
use crate::cmd::{Error, code};
use crate::report::terminal;
use crate::snapshot::{self, pending::Pending};
use crate::suite::exit;

pub fn exec(args: ReviewArgs) -> Result<ExitCode, Error> {
    let dir = args.pending.dir();
    let folder = args.snapshots.as_deref().map(snapshot::pending::identity);
    let chosen = |p: &Pending| {
        folder.as_ref().is_none_or(|f| *f == p.manifest.snapshots)
            && (args.filter.is_empty()
                || args
                    .filter
                    .iter()
                    .any(|f| p.manifest.scenario.contains(f.as_str())))
    };
    let mut text = String::new();
    let (mut done, mut failed) = (0, 0);
    for entry in dir.list()? {
        let outcome = entry.and_then(|p| {
            if !chosen(&p) {
                return Ok(false);
            }
            let case = format!("{} ({})", p.manifest.scenario, p.mode());
            if args.accept {
                let written = p.accept()?;
                let _ = writeln!(text, "accepted {case}: {}", written.display());
            } else if args.reject {
                let file = p.file.clone();
                p.reject()?;
                let _ = writeln!(text, "rejected {case}: removed {}", file.display());
            } else {
                text.push_str(&shown(&p, &case)?);
            }
            Ok(true)
        });
        match outcome {
            Ok(true) => done += 1,
            Ok(false) => {}
            Err(e) => {
                failed += 1;
                eprintln!("error: {e}");
            }
        }
    }
    text.push_str(&summary(&args, &dir, done, failed));
    // Subject text is shown on a terminal: escaped (the visible form already shows control
    // characters; a path may hold any).
    out(&terminal::escape_controls(&text))?;
    Ok(code(if failed > 0 { exit::ERROR } else { exit::PASS }))
}

/// One pending snapshot: where it is and would go, and its diff from the stored snapshot as the
/// run printed it (or its texts, when none is stored).
fn shown(p: &Pending, case: &str) -> Result<String, snapshot::pending::PendingError> {
    let (stored, unchanged) = p.stored_now()?;
    let mut text = format!(
        "── {case} ──\npending:  {}\nsnapshot: {}\n",
        p.file.display(),
        p.destination().display()
    );
    match stored {
        Some(old) => text.push_str(&snapshot::diff(&old, &p.text, None)),
        None => {
            let _ = write!(
                text,
                "no stored snapshot; this run's texts:\n{}",
                snapshot::visible(&p.text)
            );
        }
    }
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if !unchanged {
        text.push_str(
            "note: the stored snapshot changed since the run that left this one: `--accept` \
             refuses it (run `conform run` again)\n",
        );
    }
    text.push('\n');
    Ok(text)
}

fn summary(args: &ReviewArgs, dir: &snapshot::PendingDir, done: usize, failed: usize) -> String {
    let root = dir.root().display();
    let failed = if failed > 0 {
        format!(", {failed} failed (said above on stderr)")
    } else {
        String::new()
    };
    if args.accept {
        format!("{done} pending snapshot(s) accepted{failed}\n")
    } else if args.reject {
        format!("{done} pending snapshot(s) rejected{failed}\n")
    } else if done == 0 && failed.is_empty() {
        format!("no pending snapshots in {root}\n")
    } else {
        let review = dir.review_command();
        format!(
            "{done} pending snapshot(s) in {root}{failed}: accept them with `{review} --accept`, \
             or drop them with `{review} --reject` (`--filter TEXT` for some)\n"
        )
    }
}
