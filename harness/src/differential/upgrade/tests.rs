use super::*;

fn report(changes: Vec<Change>, against_fake: Vec<AgainstFake>) -> UpgradeReport {
    UpgradeReport {
        peer: "codex-0.147.0".into(),
        product: Provider::Codex,
        pinned_version: "0.147.0".into(),
        candidate_version: "0.171.0".into(),
        scenarios: vec!["peers/codex/success".into(), "peers/codex/http-401".into()],
        fakes_speak: Some("0.147.0".into()),
        vocabulary: Ok(vec![vocabulary::Change {
            definition: "CodexErrorInfo".into(),
            whole: None,
            added: ["bioPolicy".to_owned()].into(),
            removed: BTreeSet::new(),
        }]),
        sdk_flags: None,
        learned: Vec::new(),
        kept: Default::default(),
        changes,
        against_fake,
    }
}

fn change(rank: Rank, scenario: &str, text: &str) -> Change {
    Change {
        rank,
        scenario: scenario.into(),
        text: text.into(),
    }
}

#[test]
fn the_report_ranks_changes_groups_their_scenarios_and_fails_on_what_a_provider_reports() {
    let values = "`error` `.error.codexErrorInfo`: 0.171.0 (candidate) sends \"httpConnectionFailed\"; codex-0.147.0 0.147.0 (pinned) sends \"unauthorized\"";
    let r = report(
        vec![
            change(Rank::Meaning, "peers/codex/http-401", values),
            change(Rank::Additive, "peers/codex/success", "new field"),
            change(Rank::Additive, "peers/codex/http-401", "new field"),
        ],
        vec![AgainstFake {
            scenario: "peers/codex/success".into(),
            text: "t".into(),
            explained: Some("why".into()),
            learnable: false,
        }],
    );
    assert_eq!(
        r.exit_code(),
        0,
        "values and additions alone, all explained"
    );
    let md = markdown(&r);
    assert!(
        md.starts_with("# Upgrade: `codex-0.147.0` 0.147.0 → 0.171.0\n"),
        "{md}"
    );
    assert!(
        md.contains("## Changes what a provider reports (0)\n\nNothing.\n"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "## Can change what a provider reports (1)\n\n- {values} — shown by peers/codex/http-401\n"
        )),
        "{md}"
    );
    assert!(
        md.contains("- new field — shown by peers/codex/http-401, peers/codex/success\n"),
        "{md}"
    );
    assert!(
        md.contains("- `CodexErrorInfo`; adds `bioPolicy`\n"),
        "{md}"
    );
    assert!(
        md.contains("1 difference(s) kept by `fakes/peers/differences.toml` (as for the pinned version), 0 unexplained"),
        "{md}"
    );

    let verdict = report(
        vec![change(
            Rank::Reports,
            "peers/codex/http-401",
            "the verdict changed: pass → fail: …",
        )],
        vec![],
    );
    assert_eq!(verdict.exit_code(), 1);
    let unexplained = report(
        vec![],
        vec![AgainstFake {
            scenario: "peers/codex/success".into(),
            text: "the real runtime sends `thread/search/partial`; the fake never does".into(),
            explained: None,
            learnable: false,
        }],
    );
    assert_eq!(unexplained.exit_code(), 1);
    assert!(markdown(&unexplained).contains(
        "- ✗ the real runtime sends `thread/search/partial`; the fake never does — shown by peers/codex/success\n"
    ));
}
