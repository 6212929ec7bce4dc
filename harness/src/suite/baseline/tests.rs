use super::*;

fn parse(text: &str) -> Result<Baseline, BaselineError> {
    Baseline::parse(Path::new("known.toml"), text)
}

#[test]
fn every_form_of_id_is_read() {
    let b = parse(
        r#"
[[known]]
id = "acp/stop/refusal"
reason = "a"

[[known]]
id = "acp/stop/refusal@background"
reason = "b"

[[known]]
id = "acp/stop/refusal:expect.diagnostic"
reason = "c"

[[known]]
id = "acp/stop/refusal@foreground:snapshot"
reason = "d"
"#,
    )
    .unwrap();
    let got: Vec<(Option<Mode>, Option<Check>, usize)> = b
        .entries
        .iter()
        .map(|e| (e.mode, e.check, e.line))
        .collect();
    assert_eq!(
        got,
        vec![
            (None, None, 3),
            (Some(Mode::Background), None, 7),
            (None, Some(Check::ExpectDiagnostic), 11),
            (Some(Mode::Foreground), Some(Check::Snapshot), 15),
        ]
    );
}

#[test]
fn the_catalog_written_against_is_read_and_a_file_without_it_is_accepted() {
    let b =
        parse("catalog = \"0123456789ab\"\n\n[[known]]\nid = \"a/b\"\nreason = \"r\"\n").unwrap();
    assert_eq!(b.catalog.as_deref(), Some("0123456789ab"));
    let outcome = |catalog: Option<&str>| BaselineOutcome {
        path: PathBuf::from("known.toml"),
        catalog: catalog.map(str::to_owned),
        entries: Vec::new(),
    };
    assert_eq!(
        outcome(Some("0123456789ab")).catalog_warning("0123456789ab"),
        None
    );
    assert_eq!(
        outcome(Some("0123456789ab"))
            .catalog_warning("ba9876543210")
            .as_deref(),
        Some(
            "warning: baseline known.toml was written against catalog 0123456789ab, this suite ran catalog ba9876543210: review its entries"
        )
    );
    let old = parse("[[known]]\nid = \"a/b\"\nreason = \"r\"\n").unwrap();
    assert_eq!(old.catalog, None);
    assert_eq!(outcome(None).catalog_warning("ba9876543210"), None);
}

#[test]
fn a_bad_entry_is_named_at_its_line_and_column() {
    let e = parse("[[known]]\nid = \"acp/x@sideways\"\nreason = \"r\"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "known.toml:2:6: `sideways` is not a mode (foreground or background)"
    );
    let e = parse("[[known]]\nid = \"acp/x:expect.nope\"\nreason = \"r\"\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("known.toml:2:6: `expect.nope` is not a check id"),
        "{e}"
    );
    let e = parse("[[known]]\nid = \"acp/x\"\nreason = \" \"\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "known.toml:3:10: a known failure needs its reason"
    );
    let e = parse("[[known]]\nid = \"acp/x\"\nreason = \"r\"\nwhy = 1\n").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("known.toml:4:1: unknown field `why`"),
        "{e}"
    );
    let twice =
        "[[known]]\nid = \"a/b\"\nreason = \"r\"\n[[known]]\nid = \"a/b\"\nreason = \"s\"\n";
    assert_eq!(
        parse(twice).unwrap_err().to_string(),
        "known.toml:5:6: `a/b` is listed twice"
    );
}

const PIN_A: &str = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
const PIN_B: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";

#[test]
fn pins_are_read_for_known_failures_and_refused_calls() {
    let b = parse(&format!(
        r#"[[known]]
id = "acp/stop/refusal@foreground:expect.diagnostic"
reason = "a"
texts = "{PIN_A}"
excerpt = "── tool result (isError: true) ──\nError: subagent run failed"

[[known]]
id = "acp/stop/refusal@foreground:snapshot"
reason = "b"
texts = "{PIN_A}"

[[known]]
id = "acp/stop/refusal:expect.stop-reason"
reason = "c"

[[refused]]
id = "acp/stage/dispose-grace-zero@background"
texts = "{PIN_B}"
"#
    ))
    .unwrap();
    let got: Vec<(EntryKind, Option<&str>, Option<&str>, usize)> = b
        .entries
        .iter()
        .map(|e| {
            (
                e.kind,
                e.pin.as_ref().map(|p| p.texts.as_str()),
                e.pin.as_ref().and_then(|p| p.excerpt.as_deref()),
                e.line,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                EntryKind::Known,
                Some(PIN_A),
                Some("── tool result (isError: true) ──\nError: subagent run failed"),
                2
            ),
            (EntryKind::Known, Some(PIN_A), None, 8),
            (EntryKind::Known, None, None, 13),
            (EntryKind::Refused, Some(PIN_B), None, 17),
        ]
    );
    let refused = &b.entries[3];
    assert_eq!(
        (refused.mode, refused.check, refused.reason.as_str()),
        (Some(Mode::Background), None, "")
    );
}

#[test]
fn a_file_written_before_pins_is_read_as_it_was_and_pins_nothing() {
    let b = parse(
        "catalog = \"0123456789ab\"\n\n[[known]]\nid = \"acp/stop/refusal@foreground:expect.diagnostic\"\nreason = \"r\"\n",
    )
    .unwrap();
    assert_eq!(b.entries.len(), 1);
    assert_eq!(b.entries[0].kind, EntryKind::Known);
    assert_eq!(b.entries[0].pin, None);
}

#[test]
fn a_malformed_pin_is_named_at_its_line_and_column() {
    let err = |text: String| parse(&text).unwrap_err().to_string();
    let known =
        |id: &str, extra: &str| format!("[[known]]\nid = \"{id}\"\nreason = \"r\"\n{extra}");
    assert_eq!(
        err(known("a/b@foreground", "texts = \"sha256:abc\"\n")),
        "known.toml:4:9: `sha256:abc` is not a digest: `sha256:` and 64 lowercase hex digits, as `--write-baseline` writes it"
    );
    assert_eq!(
        err(known("a/b:snapshot", &format!("texts = \"{PIN_A}\"\n"))),
        "known.toml:4:9: a pin is of one case in one mode: write the id as scenario@mode or scenario@mode:check-id"
    );
    assert_eq!(
        err(known("a/b@foreground", "excerpt = \"x\"\n")),
        "known.toml:4:11: an `excerpt` shows the texts a `texts` digest pins: give `texts` too"
    );
    assert!(
        err(known("a/b@foreground", "texts = 7\n")).starts_with("known.toml:4:9: invalid type"),
        "{}",
        err(known("a/b@foreground", "texts = 7\n"))
    );
    let two = format!(
        "{}\n{}",
        known("a/b@foreground:snapshot", &format!("texts = \"{PIN_A}\"\n")),
        known(
            "a/b@foreground:expect.output",
            &format!("texts = \"{PIN_B}\"\n")
        )
    );
    assert_eq!(
        err(two),
        "known.toml:9:9: `a/b@foreground:expect.output` pins other texts than the entry at line 2 for the same case (one case, one pin)"
    );
    let refused = |id: &str, extra: &str| format!("[[refused]]\nid = \"{id}\"\n{extra}");
    assert_eq!(
        err(refused("a/b", &format!("texts = \"{PIN_A}\"\n"))),
        "known.toml:2:6: `a/b`: a refused call is one scenario in one mode: write scenario@mode"
    );
    assert_eq!(
        err(refused(
            "a/b@background:snapshot",
            &format!("texts = \"{PIN_A}\"\n")
        )),
        "known.toml:2:6: `a/b@background:snapshot`: a refused call is one scenario in one mode: write scenario@mode"
    );
    assert_eq!(
        err(refused("a/b@background", "")),
        "known.toml:2:6: `a/b@background`: a refused call's entry pins what it says: give its `texts` (`--write-baseline` writes them)"
    );
    assert!(
        err(refused("a/b@background", "why = 1\n"))
            .starts_with("known.toml:3:1: unknown field `why`"),
        "{}",
        err(refused("a/b@background", "why = 1\n"))
    );
}
