use super::environment::handed_secrets;
use super::*;
use std::path::Path;

/// What `text` (alone, as a diagnostic) shows of `secret`, if anything.
fn leak(secret: &str, text: &str, shown: &impl Fn(&str) -> bool) -> Option<String> {
    let seen = Seen::new(
        &[("diagnostic", text.to_owned())],
        &Observed::default(),
        &[],
    );
    seen.leak(&needles::of(secret, false), shown)
        .map(|h| h.piece)
}

fn untrusted_of(id: &str) -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let s = crate::scenario::load(&root, &root.join(format!("{id}.toml"))).unwrap();
    untrusted_strings(&s)
}

#[test]
fn a_leak_is_found_whole_by_line_or_cut() {
    let none = |_: &str| false;
    let secret = "sk-live-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c";
    // Whole.
    assert_eq!(
        leak(secret, &format!("x {secret} y"), &none),
        Some(secret.into())
    );
    // Cut by a bound: only the head shows, still a leak.
    let cut = format!("Diagnostic: boom {}", &secret[..30]);
    assert!(leak(secret, &cut, &none).is_some());
    // A CR or LF inside the secret is where a provider may split it.
    let multi = "first line of the traceback\r\nKeyError: SECRET_VALUE_IN_LINE_2";
    assert_eq!(
        leak(multi, "… KeyError: SECRET_VALUE_IN_LINE_2 …", &none),
        Some("KeyError: SECRET_VALUE_IN_LINE_2".into())
    );
    // A secret dressed as a diagnostic shares windows with the real one: not a leak; shown
    // whole, it is.
    let alike = "Subagent failure (provider: DSH SDK; stage: --a; category: and)·q2361k0z";
    let real = "Error: subagent run failed\nDiagnostic: Subagent failure (provider: DSH SDK; stage: shutdown; category: unknown)";
    assert_eq!(leak(alike, real, &none), None);
    assert!(leak(alike, &format!("{real}\n{alike}"), &none).is_some());
    // Nothing shown, nothing found.
    assert_eq!(
        leak(secret, "Subagent failure (provider: ACP)", &none),
        None
    );
    // What the contract shows by itself is never a leak.
    let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
    assert_eq!(
        leak(
            "Error: subagent run failed",
            "Error: subagent run failed\nDiagnostic: x",
            &fixed
        ),
        None
    );
}

#[test]
fn the_hosts_status_line_is_never_a_leak() {
    // A string that is part of the host's own status line proves nothing when a failed
    // job's notice shows it (the one false alarm the reference raised).
    let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
    let notice = "background job subagent-1 finished [status: failed, error; diagnostic: Subagent failure (provider: ACP; stage: prompt; category: unknown)]. Read its output with job_output.";
    assert_eq!(leak("[status: failed", notice, &fixed), None);
    assert_eq!(leak("[status: failed, error", notice, &fixed), None);
}

#[test]
fn what_the_runtime_is_handed_is_a_secret_when_it_looks_like_one() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut s =
        crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
    for (k, v) in [
        (
            "DATABASE_URL",
            "postgres://app:hunter2pw@db.internal:5432/app",
        ),
        ("GITHUB_TOKEN", "ghp_0123456789abcdef"),
        ("UPSTREAM", "sk-live-0123456789"),
        ("PASSED_TO_CHILD", "yes"),
        ("EDITOR_THEME", "solarized-dark"),
    ] {
        s.file.subject.env.insert(k.into(), v.into());
    }
    let got = runtime_secrets(&s);
    for want in [
        "hunter2pw",
        "postgres://app:hunter2pw@db.internal:5432/app",
        "ghp_0123456789abcdef",
        "sk-live-0123456789",
        // The harness's own parent token, in every subject's environment.
        "parent-token-never-for-a-child",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} in {got:?}");
    }
    for not in ["yes", "solarized-dark", "inherited"] {
        assert!(!got.contains(&not.to_owned()), "{not} in {got:?}");
    }
    // Shown percent-encoded in a diagnostic, the password is found.
    let obs = Observed {
        result: Some(crate::run::observed::RunResult {
            stop_reason: "error".into(),
            output: vec![],
            diagnostic: Some(
                "Subagent failure (provider: ACP) dsn=postgres%3A%2F%2Fapp%3Ahunter2pw%40db".into(),
            ),
        }),
        ..Observed::default()
    };
    let mut f = Vec::new();
    judge(&s, &obs, &mut f);
    assert!(
        f.iter()
            .any(|f| f.message.contains("untrusted text \"hunter2pw\"")),
        "{f:?}"
    );
    assert!(
        f.iter().any(|f| f.message.contains(
            "\"postgres://app:hunter2pw@db.internal:5432/app\" in its percent-encoded form"
        )),
        "{f:?}"
    );
}

#[test]
fn a_snapshot_holding_a_secret_is_refused_with_its_form_and_block() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let s = crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
    // The harness's parent token, base64 inside a diagnostic.
    let leaked = "── tool result (isError: true) ──\nError: subagent run failed\nDiagnostic: x cGFyZW50LXRva2VuLW5ldmVyLWZvci1hLWNoaWxk\n";
    let why = secret_in_snapshot(&s, leaked).expect("refused");
    assert!(why.contains("base64"), "{why}");
    assert!(why.contains("parent-token-never-for-a-child"), "{why}");
    assert!(
        why.contains("in the block ── tool result (isError: true) ──"),
        "{why}"
    );
    let clean = "── tool result (isError: true) ──\nError: subagent run failed\n";
    assert_eq!(secret_in_snapshot(&s, clean), None);
}

#[test]
fn a_codex_error_notification_and_written_params_are_untrusted() {
    let codex = untrusted_of("codex/redaction/untrusted-channels");
    for s in [
        "Reconnecting... SECRET-retry",
        "stream disconnected: SECRET-details",
    ] {
        assert!(codex.contains(&s.to_owned()), "{s} in {codex:?}");
    }
    // A guardian warning written as it is; an API error dressed as an assistant message.
    let guardian = untrusted_of("codex/approval/auto-review-denied");
    assert!(
        guardian
            .iter()
            .any(|s| s.contains("SECRET-guardian-rationale")),
        "{guardian:?}"
    );
    let claude = untrusted_of("claude-code/success/is-error-success");
    assert!(
        claude
            .contains(&"Failed to authenticate. API Error: 401 SECRET-upstream message".to_owned()),
        "{claude:?}"
    );
}

#[test]
fn a_secret_holding_the_scenario_id_is_still_matched() {
    // Only the label `(subagent: <id>)` is the harness's own text.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut s =
        crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
    s.file.secrets = vec![format!("token-for-{}", s.id)];
    let mut obs = Observed {
        notices: vec![(
            "j".into(),
            format!(
                "background job j (subagent: {}) finished [status: failed, token-for-{}]",
                s.id, s.id
            ),
        )],
        ..Observed::default()
    };
    let mut f = Vec::new();
    judge(&s, &obs, &mut f);
    assert_eq!(f.len(), 1, "{f:?}");
    obs.notices[0].1 = format!("background job j (subagent: {}) finished", s.id);
    let mut f = Vec::new();
    judge(&s, &obs, &mut f);
    assert!(f.is_empty(), "{f:?}");
}

#[test]
fn each_codec_names_its_protocols_untrusted_text() {
    // ACP: a thought, a tool call's title, location and raw input; never its closed values.
    let acp = untrusted_of("acp/redaction/untrusted-channels");
    for s in [
        "THOUGHT: the password is hunter2-SECRET",
        "Read /home/alice/.ssh/id_ed25519",
    ] {
        assert!(acp.contains(&s.to_owned()), "{s} in {acp:?}");
    }
    assert!(!acp.iter().any(|s| s == "tool_call" || s == "pending"));
    // DSH SDK: a raw event's and a turn end's error text; never the turn-end kind.
    let dsh = untrusted_of("dsh-sdk/redaction/untrusted-channels");
    for s in [
        "upstream 401 for key sk-SECRET-attempt",
        "401 Unauthorized: sk-SECRET-turn-error",
    ] {
        assert!(dsh.contains(&s.to_owned()), "{s} in {dsh:?}");
    }
    assert!(!dsh.iter().any(|s| s == "error"));
    // Codex: a failed turn's message, a server request's payload; a short declared secret.
    let codex = untrusted_of("codex/redaction/untrusted-channels");
    for s in ["SECRET", "401 for sk-SECRET-turn", "SECRET-additional"] {
        assert!(codex.contains(&s.to_owned()), "{s} in {codex:?}");
    }
    assert!(
        !codex.iter().any(|s| s == "unauthorized"),
        "known codes are vocabulary"
    );
}

#[test]
fn a_form_body_without_escapes_is_found() {
    // `application/x-www-form-urlencoded`: letters and spaces need no `%`.
    let none = |_: &str| false;
    let text = "Subagent failure (provider: ACP) (retry: https://api.invalid/v1?q=my+secret+value)";
    assert_eq!(
        leak("my secret value", text, &none),
        Some("my secret value".into())
    );
    let seen = Seen::new(&[("diagnostic", text.into())], &Observed::default(), &[]);
    let hit = seen
        .leak(&needles::of("my secret value", false), &none)
        .expect("found");
    assert_eq!(
        hit.describe("my secret value"),
        "the diagnostic contains untrusted text \"my secret value\" in its form-encoded form"
    );
}

#[test]
fn a_secret_html_escaped_is_found_in_every_spelling() {
    let none = |_: &str| false;
    let secret = "<b>\"tok\" & 'en'</b>";
    for text in [
        "&lt;b&gt;&quot;tok&quot; &amp; &#39;en&#39;&lt;/b&gt;",
        "&lt;b&gt;&#34;tok&#34; &amp; &#x27;en&apos;&#x3C;/b&#x3e;",
    ] {
        let seen = Seen::new(
            &[("diagnostic", format!("<pre>{text}</pre>"))],
            &Observed::default(),
            &[],
        );
        let hit = seen
            .leak(&needles::of(secret, false), &none)
            .map(|h| h.describe(secret));
        assert_eq!(
            hit.as_deref(),
            Some(
                r#"the diagnostic contains untrusted text "<b>\"tok\" & 'en'</b>" in its HTML-escaped form"#
            ),
            "{text}"
        );
    }
}

/// A result whose diagnostic ends with `head` and whose output begins with `tail`, as the
/// foreground tool result shows them: on lines of their own.
fn split_result(head: &str, tail: &str) -> Observed {
    let diagnostic =
        format!("Subagent failure (provider: ACP; stage: prompt; category: unknown) {head}");
    let output = format!("{tail}\npartial answer");
    Observed {
        result: Some(crate::run::observed::RunResult {
            stop_reason: "error".into(),
            output: vec![serde_json::json!({ "type": "text", "text": output })],
            diagnostic: Some(diagnostic.clone()),
        }),
        tool_result: Some((
            true,
            format!(
                "Error: subagent run failed\nDiagnostic: {diagnostic}\n\nPartial output before the run ended:\n{output}"
            ),
        )),
        ..Observed::default()
    }
}

#[test]
fn a_secret_broken_at_its_own_separator_over_the_diagnostic_and_output_lines_is_found() {
    let fixed = |s: &str| FIXED_PHRASES.iter().any(|p| p.contains(s));
    // Broken at a space, a newline (lines too short to be matched alone), a tab, a control
    // character; the secret's own separator dropped or kept at the end of the diagnostic.
    for (secret, head, tail) in [
        ("my secret value", "my secret", "value"),
        ("my secret value", "my secret ", "value"),
        ("pass\nword-xy", "pass", "word-xy"),
        ("tab\tsep\tvalue", "tab\tsep", "value"),
        ("bell\u{7}secret", "bell", "secret"),
    ] {
        let obs = split_result(head, tail);
        let texts: Vec<(&'static str, String)> = model_visible(&obs)
            .into_iter()
            .map(|(w, t)| (w, t.to_owned()))
            .collect();
        let seen = Seen::new(&texts, &obs, &["partial answer"]);
        let hit = seen.leak(&needles::of(secret, false), &fixed);
        assert!(hit.is_some(), "{secret:?} split as {head:?} / {tail:?}");
    }
    // The contract's own texts, split the same way, are no leak.
    let obs = split_result("", "");
    let texts: Vec<(&'static str, String)> = model_visible(&obs)
        .into_iter()
        .map(|(w, t)| (w, t.to_owned()))
        .collect();
    let seen = Seen::new(&texts, &obs, &["partial answer"]);
    assert_eq!(
        seen.leak(&needles::of("my secret value", false), &fixed),
        None
    );
}

#[test]
fn the_harness_own_environment_and_what_the_runtime_echoes_are_secrets() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut s =
        crate::scenario::load(&root, &root.join("acp/stop/max-turn-requests.toml")).unwrap();
    // What a CI starts conform with: its own credentials beside harmless settings.
    let own: Vec<(String, String)> = [
        ("CI_DEPLOY_TOKEN", "ci-deploy-token-0123456789"),
        ("OPENAI_API_KEY", "proj-key-abcdef012345"),
        ("UPSTREAM_FOR_TESTS", "sk-ci-0123456789abcdef"),
        ("CI_PLAIN_SETTING", "ci-plain-setting-value"),
        ("HOME", "/home/runner"),
        ("LANG", "C.UTF-8"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    let got = handed_secrets(&s, &own);
    for want in [
        "ci-deploy-token-0123456789",
        "proj-key-abcdef012345",
        "sk-ci-0123456789abcdef",
        "parent-token-never-for-a-child",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} in {got:?}");
    }
    for not in [
        "ci-plain-setting-value",
        "/home/runner",
        "parent-setting-never-for-a-child",
    ] {
        assert!(!got.contains(&not.to_owned()), "{not} in {got:?}");
    }
    // Echoed on stderr by the runtime, a value is untrusted whatever it looks like.
    let mut steps = s.script.steps();
    for name in ["CI_PLAIN_SETTING", "DSH_PARENT_SETTING", "HOME"] {
        steps.insert(
            0,
            conform_protocol::script::Step {
                echo_to_stderr: Some(format!("env:{name}")),
                ..Default::default()
            },
        );
    }
    s.script.set_steps(steps);
    let got = handed_secrets(&s, &own);
    for want in [
        "ci-plain-setting-value",
        "parent-setting-never-for-a-child",
        "/home/runner",
    ] {
        assert!(got.contains(&want.to_owned()), "{want} in {got:?}");
    }
}
