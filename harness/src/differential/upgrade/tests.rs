use super::*;

fn report(changes: Vec<UpgradeChange>, against_fake: Vec<AgainstFake>) -> UpgradeReport {
    UpgradeReport {
        peer: "codex-0.147.0".into(),
        product: Provider::Codex,
        pinned_version: "0.147.0".into(),
        candidate_version: "0.171.0".into(),
        downgrade: false,
        scenarios: vec!["peers/codex/success".into(), "peers/codex/http-401".into()],
        fakes_speak: Some("0.147.0".into()),
        vocabulary: Ok(vec![vocabulary::DefinitionChange {
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

fn change(rank: Rank, scenario: &str, text: &str) -> UpgradeChange {
    UpgradeChange {
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

#[test]
fn a_downgrade_is_named_as_such() {
    let mut r = report(vec![], vec![]);
    (r.pinned_version, r.candidate_version) = ("0.3.220".into(), "0.3.99".into());
    r.downgrade = version::is_downgrade(&r.pinned_version, &r.candidate_version);
    assert!(
        markdown(&r).starts_with(
            "# Downgrade: `codex-0.147.0` 0.3.220 → 0.3.99 (the candidate is older than the pinned version)\n"
        ),
        "{}",
        markdown(&r)
    );
}

#[test]
fn a_schema_rejection_both_versions_share_is_no_change() {
    let case = PeerCase {
        id: "peers/claude-code/success".into(),
        peer: "claude-code".into(),
        analog: "a".into(),
        provider: Provider::ClaudeCode,
        version: None,
    };
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fakes/peers/claude-code/success.jsonl");
    let pinned = wire::read_fixture(Provider::ClaudeCode, &fixture).unwrap();
    let rejected = schema_rejections(Provider::ClaudeCode, None, &pinned);
    assert!(
        rejected
            .iter()
            .any(|d| matches!(d, Difference::Schema { kind, .. } if kind == "assistant")),
        "the pinned wire's assistant frames are rejected already: {rejected:?}"
    );
    assert_eq!(new_rejections(&case, &pinned, &pinned), vec![]);
    // A rejection the pinned version does not have is one.
    let mut candidate = pinned.clone();
    for (kind, frame) in &mut candidate {
        if kind == "system:init" {
            frame["permissionMode"] = serde_json::json!(42);
        }
    }
    let new = new_rejections(&case, &candidate, &pinned);
    assert!(
        matches!(&new[..], [Difference::Schema { kind, .. }] if kind == "system:init"),
        "{new:?}"
    );
}

#[test]
fn a_part_not_compared_is_kept_in_the_json_as_its_message() {
    // `upgrade.json` keeps why, as it did when the reason was a string.
    let mut r = report(Vec::new(), Vec::new());
    r.vocabulary = Err(SchemaChangesError::NoSchema(Provider::ClaudeCode));
    r.sdk_flags = Some(Err(PeerBinaryError::EmptyCommand("x".into()).into()));
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(
        json["vocabulary"],
        serde_json::json!({"Err": "claude-code publishes no protocol schema to compare"})
    );
    assert_eq!(
        json["sdkFlags"],
        serde_json::json!({"Err": "the peer `x` has an empty command"})
    );
}
