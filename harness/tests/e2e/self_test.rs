//! `conform self-test` holds the catalog to its own rule — every seeded defect is caught, every
//! check id catches one — and fails when either is broken. The whole matrix takes minutes
//! (`ci/self-test`); these cases run it on a catalog cut down so that each rule breaks.

use crate::common;
use common::{Slot, conform, stdout, workspace};

/// A catalog of one ACP case (and the preludes), with its snapshots.
fn one_case_catalog() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (scenarios, snapshots) = (dir.path().join("scenarios"), dir.path().join("snapshots"));
    std::fs::create_dir_all(scenarios.join("acp/success")).unwrap();
    std::fs::create_dir_all(scenarios.join("preludes")).unwrap();
    std::fs::create_dir_all(&snapshots).unwrap();
    for p in std::fs::read_dir(workspace().join("scenarios/preludes"))
        .unwrap()
        .flatten()
    {
        std::fs::copy(p.path(), scenarios.join("preludes").join(p.file_name())).unwrap();
    }
    std::fs::copy(
        workspace().join("scenarios/acp/success/end-turn.toml"),
        scenarios.join("acp/success/end-turn.toml"),
    )
    .unwrap();
    for mode in ["foreground", "background"] {
        let name = format!("acp__success__end-turn@{mode}.snap");
        std::fs::copy(
            workspace().join("snapshots").join(&name),
            snapshots.join(&name),
        )
        .unwrap();
    }
    dir
}

fn self_test(dir: &std::path::Path, only: &[&str]) -> (Option<i32>, String) {
    let _slot = Slot::take();
    let mut cmd = conform();
    cmd.arg("self-test")
        .arg("--scenarios")
        .arg(dir.join("scenarios"))
        .arg("--snapshots")
        .arg(dir.join("snapshots"));
    for o in only {
        cmd.args(["--only", o]);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), stdout(&out))
}

#[test]
fn a_defect_no_case_of_the_catalog_reaches_survives_and_fails_the_self_test() {
    let dir = one_case_catalog();
    // A Codex mapping defect: an ACP-only catalog cannot see it.
    let (code, out) = self_test(dir.path(), &["unknown-code-as-other", "success-as-error"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("unknown-code-as-other") && out.contains("✗ SURVIVED"),
        "{out}"
    );
    assert!(
        out.contains("success-as-error") && out.contains("killed by presentation.is-error"),
        "{out}"
    );
    assert!(out.contains("  survived: unknown-code-as-other\n"), "{out}");
}

#[test]
fn a_check_that_kills_nothing_fails_the_self_test() {
    let dir = one_case_catalog();
    let (code, out) = self_test(dir.path(), &["success-as-error"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("  expect.diagnostic ")
            && l.ends_with("✗ kills nothing: a check that cannot fail")),
        "{out}"
    );
    assert!(
        out.contains("self-test FAILED: 1 of 1 defects and probes killed, "),
        "{out}"
    );
}

#[test]
fn a_defect_caught_otherwise_than_declared_fails_the_self_test() {
    let dir = one_case_catalog();
    // The stub is declared caught by the Codex upstream-code check too, which an ACP-only
    // catalog cannot reach: the matrix is not the one accepted.
    let (code, out) = self_test(dir.path(), &["stub-result"]);
    assert_eq!(code, Some(1), "{out}");
    let row = out
        .lines()
        .find(|l| l.starts_with("stub-result "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains("killed by "), "{row}");
    assert!(
        row.contains("✗ no longer caught by ") && row.contains("expect.upstream-code"),
        "{row}"
    );
    assert!(
        out.contains(
            "  caught otherwise than declared (`conform_reference::DEFECTS`): stub-result\n"
        ),
        "{out}"
    );
}

#[test]
fn a_known_failure_whose_texts_changed_is_killed_by_the_baseline_probe() {
    // A baseline written against one defect, used with a second that changes what one of its
    // known failures says and fails no other check: only the pin sees it.
    let dir = one_case_catalog();
    let (_, out) = self_test(dir.path(), &["probe:known-failure-changed"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("probe:known-failure-changed ")
                && l.ends_with("killed by baseline.changed")),
        "{out}"
    );
}
