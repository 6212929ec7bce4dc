//! A flood of failures: most of the Codex catalog failed by one defect, and how the report
//! reads then (causes first, a line per run). A catalog's worth of runs: the slow tier.

use crate::common;
use common::{defective, run};

#[test]
fn hundreds_of_failures_read_as_causes_then_a_line_each() {
    // A host that throws on a method it has no handler for fails most of the Codex catalog:
    // the report opens on the causes, each with its requirement and its first run in full,
    // then names every failed run in one line; each failure's own line came on stderr as it
    // happened.
    let subject = defective(&["codex-strict-notifications"]);
    let (code, out, err) = run(&["--filter", "codex/", "--subject", &subject]);
    assert_eq!(code, Some(1), "{out}\n{err}");
    let failed: usize = out
        .lines()
        .last()
        .and_then(|l| l.split(" passed, ").nth(1)?.split(' ').next()?.parse().ok())
        .expect(&out);
    assert!(failed > 200, "{out}");
    let opening = out.lines().next().unwrap_or_default();
    let (causes, rest) = opening.split_once(' ').expect(&out);
    assert!(causes.parse::<usize>().is_ok(), "{out}");
    assert_eq!(
        rest,
        format!("cause(s) of {failed} failed run(s), largest first (a run can fail for several):")
    );
    assert_eq!(
        err.lines().filter(|l| l.starts_with("FAIL [")).count(),
        failed,
        "{err}"
    );
    // The largest cause's first run, in full, under it; no other run's transcript.
    let first_run = out
        .find("     its first run:\n       ━━ codex/")
        .expect(&out);
    assert!(first_run < out.find("subject: ").expect(&out), "{out}");
    assert!(out.contains("       requirement ("), "{out}");
    let pointer = out
        .find(" failed run(s): each cause above shows its first run in full")
        .expect(&out);
    let named = out
        .find(&format!("\n{failed} case(s) failed:\n"))
        .expect(&out);
    assert!(pointer < named, "{out}");
    assert!(
        out.contains("\n  ✗ codex/success/final-answer (foreground) [wire.violation]\n"),
        "{out}"
    );
    // On both streams together: two lines a failure (its status line, its name), at most 50 a
    // cause (patterns, requirements, runs, its first run cut at 40 lines), and the header,
    // matrix and counts.
    let causes: usize = causes.parse().unwrap();
    let lines = out.lines().count() + err.lines().count();
    assert!(
        lines < 2 * failed + 50 * causes + 100,
        "{lines} lines for {failed} failures of {causes} causes"
    );
}
