//! Loading scenario files: what loads, and every error at its line and column.
use super::load::walk;
use super::*;

fn load_text(text: &str) -> Result<Scenario, ScenarioError> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("preludes")).unwrap();
    std::fs::write(
        root.join("preludes/hs.toml"),
        "[[steps]]\nexpect = \"initialize\"\n[[steps]]\nreply = { protocolVersion = 1 }\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("acp")).unwrap();
    let path = root.join("acp/case.toml");
    std::fs::write(&path, text).unwrap();
    load(root, &path)
}

const OK: &str = "title = \"t\"\nprovider = \"acp\"\n[[fake.steps]]\ninclude = \"hs\"\n[[fake.steps]]\nchunk = \"hi\"\n[expect]\nstop_reason = \"completed\"\n";

#[test]
fn the_committed_editor_schema_is_current() {
    let committed: Value = serde_json::from_str(include_str!("../../../docs/scenario.schema.json"))
        .expect("docs/scenario.schema.json is JSON");
    assert_eq!(
        committed,
        json_schema(),
        "docs/scenario.schema.json is stale: `conform schema scenario > docs/scenario.schema.json`"
    );
}

#[test]
fn every_committed_scenario_validates_against_the_editor_schema() {
    // The schema an editor uses must accept what the loader accepts.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let validator = jsonschema::validator_for(&json_schema()).unwrap();
    let mut files = Vec::new();
    walk(&root, &root, &mut files, &mut Vec::new());
    assert!(files.len() > 100);
    for f in files {
        let value: Value = toml::from_str(&std::fs::read_to_string(&f).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", f.display());
    }
}

#[test]
fn expands_preludes_and_derives_the_id() {
    let s = load_text(OK).unwrap();
    assert_eq!(s.id, "acp/case");
    let actions: Vec<_> = s
        .script
        .steps()
        .iter()
        .map(|s| s.check().unwrap())
        .collect();
    assert_eq!(actions, ["expect", "reply", "chunk"]);
    assert_eq!(s.file.modes, Mode::ALL);
}

#[test]
fn a_step_with_two_actions_names_its_line_and_column() {
    let text = OK.replace("chunk = \"hi\"", "chunk = \"hi\"\nstop = \"end_turn\"");
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("case.toml:5:1: a step sets several actions (chunk, stop)"),
        "{err}"
    );
}

#[test]
fn an_unknown_key_names_its_line_and_column() {
    let text = OK.replace("chunk = \"hi\"", "chunks = \"hi\"");
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("case.toml:6:1: unknown field `chunks`"),
        "{err}"
    );
}

#[test]
fn bad_toml_names_its_line_and_column() {
    let text = OK.replace("title = \"t\"", "title = \"t");
    let err = load_text(&text).unwrap_err().to_string();
    assert!(err.contains("case.toml:1:"), "{err}");
}

#[test]
fn an_unknown_stop_reason_is_rejected() {
    let text = OK.replace("\"completed\"", "\"done\"");
    let err = load_text(&text).unwrap_err().to_string();
    // Pointed at the value, with the whole closed set.
    assert!(
        err.contains("case.toml:8:15: unknown variant `done`, expected one of `completed`, `max-tokens`, `refusal`, `aborted`, `error`"),
        "{err}"
    );
    let text = OK.replace("\"acp\"", "\"claude\"");
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains(
            "case.toml:2:12: unknown variant `claude`, expected one of `acp`, `dsh-sdk`, `codex`"
        ),
        "{err}"
    );
}

#[test]
fn a_peek_at_an_undeclared_checkpoint_is_rejected_at_its_value() {
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "[job]\npeek_at = \"runing\"\n[[fake.steps]]\ncheckpoint = \"running\"\n[[fake.steps]]\ninclude",
    );
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("case.toml:4:11: `[job] peek_at` names checkpoint `runing`, which no step declares (declared checkpoints: `running`)"),
        "{err}"
    );
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "[job]\npeek_at = \"running\"\n[fake.release]\nx = \"peeked\"\n[[fake.steps]]\ncheckpoint = \"running\"\n[[fake.steps]]\nawait = \"x\"\n[[fake.steps]]\ninclude",
    );
    let s = load_text(&text).unwrap();
    assert_eq!(s.file.job.peek_at.as_deref(), Some("running"));
    assert_eq!(s.file.fake.release["x"], Trigger::Peeked);
}

#[test]
fn a_cancel_at_an_undeclared_checkpoint_is_rejected_at_its_value() {
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "[cancel]\nat = \"mid-run\"\n[[fake.steps]]\ncheckpoint = \"mid-rnu\"\n[[fake.steps]]\ninclude",
    );
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("case.toml:4:6: `[cancel] at` names checkpoint `mid-run`, which no step declares (declared checkpoints: `mid-rnu`)"),
        "{err}"
    );
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "[cancel]\nat = \"x\"\n[[fake.steps]]\ninclude",
    );
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("`x`, which no step declares (the script declares no checkpoints)"),
        "{err}"
    );
    // Also written inline.
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "cancel = { at = \"x\" }\n[[fake.steps]]\ninclude",
    );
    let err = load_text(&text).unwrap_err().to_string();
    assert!(err.contains("case.toml:3:17: `[cancel] at`"), "{err}");
}

const BEFORE: &str = "title = \"t\"\nprovider = \"acp\"\nmodes = [\"foreground\"]\n[cancel]\nat = \"before-start\"\n[expect]\nstart_error = \"aborted\"\n";

#[test]
fn a_cancel_before_the_start_names_no_checkpoint_and_has_no_script() {
    let s = load_text(BEFORE).unwrap();
    assert!(s.aborted_before_start());
    assert!(s.script.steps().is_empty());
    assert!(!load_text(OK).unwrap().aborted_before_start());
    // A name one letter off is a checkpoint like any other, and none is declared.
    let err = load_text(&BEFORE.replace("before-start", "before-stat"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("case.toml:5:6: `[cancel] at` names checkpoint `before-stat`, which no step declares (the script declares no checkpoints)"),
        "{err}"
    );
}

#[test]
fn a_cancel_before_the_start_is_refused_where_it_cannot_mean_that() {
    let err = |text: &str| load_text(text).unwrap_err().to_string();
    // Both modes (the default): a background job's signal is its own.
    let e = err(&BEFORE.replace("modes = [\"foreground\"]\n", ""));
    assert!(
        e.contains("case.toml:4:1: `[cancel] at = \"before-start\"`: foreground only"),
        "{e}"
    );
    let e = err(&BEFORE.replace("[\"foreground\"]", "[\"foreground\", \"background\"]"));
    assert!(
        e.contains("case.toml:3:1: `[cancel] at = \"before-start\"`: foreground only"),
        "{e}"
    );
    let e = err(&BEFORE.replace("before-start\"\n", "before-start\"\nby = \"dispose\"\n"));
    assert!(
        e.contains("case.toml:6:1: `[cancel] at = \"before-start\"`: the host's own dispose needs a published run"),
        "{e}"
    );
    let e = err(&format!("{BEFORE}[[fake.steps]]\ninclude = \"hs\"\n"));
    assert!(
        e.contains("case.toml:8:1: `[cancel] at = \"before-start\"`: no runtime may run, so the script has no steps"),
        "{e}"
    );
    let e = err(&BEFORE.replace("start_error = \"aborted\"", "stop_reason = \"aborted\""));
    assert!(
        e.contains("case.toml:7:1: `[cancel] at = \"before-start\"`: the start is rejected: `[expect]` needs `start_error`"),
        "{e}"
    );
}

#[test]
fn a_release_of_an_undeclared_await_is_rejected_at_its_key() {
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "[fake.release]\ngate = \"result\"\n\"gaet\" = \"cancel\"\n[[fake.steps]]\nawait = \"gate\"\n[[fake.steps]]\ninclude",
    );
    let err = load_text(&text).unwrap_err().to_string();
    assert!(
        err.contains("case.toml:5:1: `[fake.release]` names await `gaet`, which no step declares (declared awaits: `gate`)"),
        "{err}"
    );
}

#[test]
fn checkpoints_and_awaits_declared_in_a_prelude_count() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("preludes")).unwrap();
    std::fs::write(
        root.join("preludes/gate.toml"),
        "[[steps]]\ncheckpoint = \"in-flight\"\n[[steps]]\nawait = \"gate\"\n",
    )
    .unwrap();
    std::fs::write(
        root.join("preludes/outer.toml"),
        "[[steps]]\ninclude = \"gate\"\n",
    )
    .unwrap();
    let path = root.join("case.toml");
    std::fs::write(
        &path,
        "title = \"t\"\nprovider = \"acp\"\n[cancel]\nat = \"in-flight\"\n[fake.release]\ngate = \"cancel\"\n[[fake.steps]]\ninclude = \"outer\"\n[expect]\nstop_reason = \"aborted\"\n",
    )
    .unwrap();
    let s = load(root, &path).unwrap();
    assert_eq!(s.file.cancel.unwrap().at, "in-flight");
}

#[test]
fn a_missing_prelude_is_rejected_at_the_include() {
    let text = OK.replace("\"hs\"", "\"nope\"");
    let err = load_text(&text).unwrap_err().to_string();
    assert!(err.contains("case.toml:3:1: prelude `nope`"), "{err}");
}

#[test]
fn a_scenario_file_over_the_size_bound_is_refused_unparsed_naming_it() {
    let padding = "# padding\n".repeat(load::MAX_FILE_BYTES as usize / 10 + 1);
    let err = load_text(&format!("{OK}{padding}"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("case.toml: ")
            && err.contains(&format!(
                "bytes, over the limit of {} bytes for a scenario file",
                load::MAX_FILE_BYTES
            )),
        "{err}"
    );
}

/// The loading error of a scenario that includes the prelude `body` `times` times.
fn error_including(body: &str, times: usize) -> String {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("preludes")).unwrap();
    std::fs::write(root.join("preludes/p.toml"), body).unwrap();
    std::fs::create_dir_all(root.join("acp")).unwrap();
    let path = root.join("acp/case.toml");
    let includes = "[[fake.steps]]\ninclude = \"p\"\n".repeat(times);
    std::fs::write(
        &path,
        format!(
            "title = \"t\"\nprovider = \"acp\"\n{includes}[expect]\nstop_reason = \"completed\"\n"
        ),
    )
    .unwrap();
    load(root, &path).unwrap_err().to_string()
}

#[test]
fn includes_that_expand_past_the_step_bound_are_refused_at_the_include() {
    // Each include is small; together they splice in more steps than the bound.
    let err = error_including(&"[[steps]]\nchunk = \"x\"\n".repeat(load::MAX_STEPS / 3), 4);
    // The fourth include (line 9) is the one that breaks it, in the scenario file.
    let at = format!(
        "case.toml:9:1: the script has more than {} steps",
        load::MAX_STEPS
    );
    assert!(err.contains(&at), "{err}");
}

#[test]
fn a_script_over_the_byte_bound_is_refused_at_its_step() {
    // Few steps, each large: 16 chunks of 100 KiB from one 100 KiB prelude.
    let err = error_including(
        &format!("[[steps]]\nchunk = \"{}\"\n", "x".repeat(100 * 1024)),
        16,
    );
    let at = format!(
        "case.toml:23:1: the script is over {} bytes",
        load::MAX_SCRIPT_BYTES
    );
    assert!(err.contains(&at), "{err}");
}

/// A wait over 200 ms is long: without a reason in `[waits]` the lint names it; with one it
/// does not. A wait at 200 ms or under needs none.
#[test]
fn a_long_wait_without_a_reason_is_named_by_the_lint() {
    let with = |subject: &str, waits: &str| {
        let text = OK.replace(
            "[[fake.steps]]\ninclude",
            &format!("{subject}[[fake.steps]]\ninclude"),
        );
        let s = load_text(&format!("{text}{waits}")).unwrap();
        waits::undeclared(&s.file, &s.script.steps())
            .into_iter()
            .map(|w| format!("{}={}", w.key, w.ms))
            .collect::<Vec<_>>()
    };
    let long = "[subject]\ndispose_grace_ms = 1000\ndispose_eof_grace_ms = 200\n";
    assert_eq!(with(long, ""), ["dispose_grace_ms=1000"]);
    assert!(
        with(
            long,
            "[waits]\ndispose_grace_ms = \"not walked: a margin\"\n"
        )
        .is_empty()
    );
    // A step's delay counts as well, and so does a grace written as its configuration key.
    let text = OK.replace(
        "chunk = \"hi\"",
        "delay_ms = 300\n[[fake.steps]]\nchunk = \"hi\"",
    );
    let s = load_text(&text).unwrap();
    assert_eq!(
        s.set_waits(),
        [waits::SetWait {
            key: "delay_ms",
            ms: 300
        }]
    );
    assert_eq!(
        with("[subject]\nconfig = { shutdownTimeoutMs = 5000 }\n", ""),
        ["shutdown_timeout_ms=5000"]
    );
}

#[test]
fn a_waits_table_naming_no_wait_of_the_file_is_refused_at_its_key() {
    let err = |waits: &str| {
        load_text(&format!("{OK}[waits]\n{waits}"))
            .unwrap_err()
            .to_string()
    };
    let e = err("grace = \"why\"\n");
    assert!(
        e.contains("case.toml:10:1: `[waits]` names `grace`, which is no wait"),
        "{e}"
    );
    let e = err("delay_ms = \"the answer is late\"\n");
    assert!(
        e.contains(
            "case.toml:10:1: `[waits]` says why `delay_ms` is long, but a step does not set it"
        ),
        "{e}"
    );
    let text = OK.replace(
        "[[fake.steps]]\ninclude",
        "[subject]\ndispose_grace_ms = 900\n[[fake.steps]]\ninclude",
    );
    let e = load_text(&format!("{text}[waits]\ndispose_grace_ms = \" \"\n"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("say why this wait is as long as it is"), "{e}");
}

/// The catalog's own lint: every wait over 200 ms says why (`conform list --waits`).
#[test]
fn every_long_wait_of_the_catalog_says_why() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut files = Vec::new();
    walk(&root, &root, &mut files, &mut Vec::new());
    let mut undeclared = Vec::new();
    for f in files {
        let s = load(&root, &f).unwrap();
        for w in waits::undeclared(&s.file, &s.script.steps()) {
            undeclared.push(format!("{} {} = {}", s.id, w.key, w.ms));
        }
    }
    assert!(
        undeclared.is_empty(),
        "long waits without a reason: {undeclared:#?}"
    );
}

/// A catalog of `acp/a/ok`, `acp/a/twin` and `acp/b/broken` (a malformed file).
fn catalog_with_a_broken_folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("preludes")).unwrap();
    std::fs::write(
        root.join("preludes/hs.toml"),
        "[[steps]]\nexpect = \"initialize\"\n[[steps]]\nreply = { protocolVersion = 1 }\n",
    )
    .unwrap();
    for folder in ["acp/a", "acp/b"] {
        std::fs::create_dir_all(root.join(folder)).unwrap();
    }
    std::fs::write(root.join("acp/a/ok.toml"), OK).unwrap();
    std::fs::write(root.join("acp/a/twin.toml"), OK).unwrap();
    std::fs::write(root.join("acp/b/broken.toml"), "title = \n").unwrap();
    dir
}

#[test]
fn a_wanted_scenario_loads_with_its_folder_and_every_file_keeps_its_id() {
    let dir = catalog_with_a_broken_folder();
    let roots = Roots {
        own: dir.path(),
        shared: None,
    };
    let wanted = |id: &str| id == "acp/a/ok";
    let found = discover_wanted(roots, Some(&wanted)).unwrap_or_else(|e| panic!("{e:?}"));
    let loaded: Vec<&str> = found.scenarios.iter().map(|s| s.id.as_str()).collect();
    // The twin shares the folder (a group's members would); the broken file is not read.
    assert_eq!(loaded, ["acp/a/ok", "acp/a/twin"]);
    let ids: Vec<&str> = found.files.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["acp/a/ok", "acp/a/twin", "acp/b/broken"]);
    assert_eq!(found.files[2].1, dir.path().join("acp/b/broken.toml"));
}

#[test]
fn a_malformed_file_fails_every_load_that_reads_it_at_its_line_and_column() {
    let dir = catalog_with_a_broken_folder();
    let roots = Roots {
        own: dir.path(),
        shared: None,
    };
    let its_own = |id: &str| id.starts_with("acp/b/");
    for wanted in [None, Some(&its_own as &dyn Fn(&str) -> bool)] {
        let errors = match discover_wanted(roots, wanted) {
            Ok(found) => panic!("loaded {} scenarios", found.scenarios.len()),
            Err(errors) => errors,
        };
        assert_eq!(errors.len(), 1, "{errors:?}");
        let said = errors[0].to_string();
        assert!(said.contains("acp/b/broken.toml:1:"), "{said}");
    }
}
