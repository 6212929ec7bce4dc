//! `conform upgrade`, offline: what it refuses before installing or running anything.

use crate::common;
use common::{conform, stderr, stdout};

#[test]
fn accept_for_a_product_without_version_profiles_is_refused_before_anything_runs() {
    // Claude Code's fake has no version profiles: the refusal comes first, not after an
    // install and two runs of every peer scenario.
    let peers = tempfile::tempdir().unwrap();
    let out = conform()
        .args(["upgrade", "claude-code@0.3.336", "--accept", "--peers"])
        .arg(peers.path())
        .output()
        .unwrap();
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(2), "{text}\n{err}");
    assert!(
        err.contains(
            "--accept: only Codex versions are accepted as fake profiles so far (`claude-code` is claude-code"
        ),
        "{err}"
    );
    assert!(!text.contains("== upgrade"), "{text}");
    assert!(!err.contains("installing"), "{err}");
    // Nothing was installed.
    assert!(!peers.path().join("npm").exists());
}
