//! Each crate's modules are layered (`harness/src/lib.rs`, `docs/architecture.md`): each
//! imports only from layers below its own, so no import runs back up and no circle closes
//! between them. This reads every source file's `crate::…` paths and holds them to the crate's
//! table — the harness's, the fakes' and the reference's, each written below — and no source
//! file past 600 lines; in the harness, only the provider row names a provider.

use std::path::{Path, PathBuf};

/// A crate's layers, bottom to top. A module may use its own items and anything of a lower layer.
type Layers = &'static [&'static [&'static str]];

/// The harness.
const LAYERS: Layers = &[
    // Files a person writes (how what is wrong with one is said), and what the harness knows
    // of each provider (`provider`: the one place that matches on it).
    &["input", "provider"],
    // Plumbing (processes, pipes, the side channel, signals, the real peers' installs) and the
    // resolved flags, the embedded catalog.
    &["proc", "settings", "catalog"],
    &["scenario"],
    &["run"],
    &["checks", "snapshot"],
    &["suite"],
    &["report", "differential"],
    &["cli"],
    &["cmd"],
];

/// The fakes (`conform-fakes`).
const FAKES_LAYERS: Layers = &[
    // The fake's own failures, and the status it exits with on one.
    &["error"],
    // The side channel: everything a fake sees and does is reported to the harness there.
    &["side"],
    // The fake's own process (identity, death, the grandchild) and its stdin from the subject.
    &["process", "wire"],
    // What acts on the subject's stdio in its own time: termination signals, writes to stdout.
    &["signals", "stdout"],
    // A reference between a bundle's definitions, compiled once for all who refer to it.
    &["link"],
    // JSON no protocol owns: the digested schema bundles, how `expect` compares params, long payloads.
    &["bundle", "params", "payload"],
    // The seam every protocol's codec is written against (frames, sugar, validation).
    &["codec"],
    // One codec per protocol, each with its schema.
    &["acp", "claude_code", "codex", "dsh_sdk"],
    // Which codec speaks each provider's protocol: the one place that knows them all.
    &["protocols"],
    // How a fake judges what the subject sent, as pure functions of codec and frame.
    &["judge"],
    // The script run live; the recorded wire judged again; the ledger held to its schema.
    &["engine", "verify", "schema"],
    // Entry points: a fake binary's command line, `conform peer-proxy`, `conform mock-model`.
    &["cli", "peer", "model"],
];

/// The reference subject (`conform-reference`).
const REFERENCE_LAYERS: Layers = &[
    // The seeded defects (one table) and the command line that switches them on: read everywhere.
    &["cli"],
    // Pure facts: ids and times, the fixed diagnostic lines, the host's texts, the stdout writer.
    &["util", "diagnostic", "host", "writer"],
    // A runtime child: its process (spawn, teardown ladder), its JSON-RPC stdio; leak defects.
    &["process", "jsonrpc", "leak"],
    // What every out-of-process provider shares with the host side.
    &["provider"],
    // The one skeleton every provider follows.
    &["driver"],
    // What the product providers (Codex, Claude Code) share.
    &["product"],
    // One provider per protocol.
    &["acp", "claude_code", "codex", "dsh_sdk"],
    // One run on the host side, tying control messages to a provider's events.
    &["run"],
];

/// `(source dir, layers)` of every crate held to the rules.
fn crates() -> [(PathBuf, Layers); 3] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        (root.join("src"), LAYERS),
        (root.join("../fakes/src"), FAKES_LAYERS),
        (root.join("../reference/src"), REFERENCE_LAYERS),
    ]
}

fn layer(layers: Layers, module: &str) -> Option<usize> {
    layers.iter().position(|l| l.contains(&module))
}

/// The top-level module a file under a crate's `src` belongs to (`run/drive.rs` → `run`); the
/// crate root and the binaries (`bin/`, which see the crate from outside) belong to none.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!["lib", "main", "bin"].contains(&name)).then(|| name.to_owned())
}

/// Every `crate::<module>` a text names, with its line: each head of a group too
/// (`crate::{a, b::{c, d}}` names `a` and `b`), over as many lines as the group spans.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let code: String = text
        .lines()
        .map(|line| line.split("//").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("crate::").map(|i| from + i) {
        let after = &code[i + "crate::".len()..];
        from = i + "crate::".len();
        // `conform_crate::` or `some_crate::` are not this crate.
        if code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let line = code[..i].matches('\n').count() + 1;
        let names = match after.strip_prefix('{') {
            Some(group) => group_heads(group),
            None => vec![ident(after)],
        };
        out.extend(
            names
                .into_iter()
                .filter(|m| !m.is_empty())
                .map(|m| (line, m)),
        );
    }
    out
}

/// The identifier `s` starts with (after blanks).
fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The first segment of each item of a `use` group, `group` being what follows its `{`.
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = vec![String::new()];
    let mut depth = 0;
    for c in group.chars() {
        match c {
            '}' if depth == 0 => break,
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(String::new()),
            _ if depth == 0 => heads.last_mut().expect("one").push(c),
            _ => {}
        }
    }
    heads.iter().map(|h| ident(h)).collect()
}

/// The imports that run up the table or sideways into another module of the same layer.
fn violations(src: &Path, layers: Layers, files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in files {
        let Some(from) = module_of(src, file) else {
            continue;
        };
        let from_layer = layer(layers, &from)
            .unwrap_or_else(|| panic!("{}: module `{from}` is in no layer", file.display()));
        for (line, to) in crate_paths(text) {
            if to == from {
                continue;
            }
            let to_layer = layer(layers, &to).unwrap_or_else(|| {
                panic!("{}:{line}: `crate::{to}` is in no layer", file.display())
            });
            if to_layer >= from_layer {
                out.push(format!(
                    "{}:{line}: `{from}` (layer {from_layer}) imports `crate::{to}` (layer {to_layer})",
                    file.display()
                ));
            }
        }
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<(PathBuf, String)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
}

#[test]
fn no_import_runs_up_the_layers() {
    let mut found = Vec::new();
    for (src, layers) in crates() {
        let mut files = Vec::new();
        sources(&src, &mut files);
        // A wrong path reads nothing; the smallest crate has some 40 files.
        assert!(
            files.len() > 20,
            "read {} files in {}",
            files.len(),
            src.display()
        );
        found.extend(violations(&src, layers, &files));
    }
    assert!(
        found.is_empty(),
        "imports against the layers:\n{}",
        found.join("\n")
    );
}

#[test]
fn an_import_up_or_sideways_is_named_with_its_file_and_line() {
    let src = Path::new("/src");
    let files = vec![
        (
            src.join("proc/side.rs"),
            "use crate::proc::pids;\nuse crate::run::Observed; // up\n".to_owned(),
        ),
        (
            src.join("checks/mod.rs"),
            "// crate::suite in a comment is not an import\nfn f() { crate::snapshot::render(); }\n"
                .to_owned(),
        ),
        (src.join("run/mod.rs"), "use conform_crate::x;\nuse crate::scenario::S;\n".to_owned()),
        (
            src.join("scenario.rs"),
            "use crate::{input, proc::{pids, side},\n    run::{self, Observed}};\n".to_owned(),
        ),
        (src.join("bin/tool.rs"), "use crate::cmd;\n".to_owned()),
    ];
    assert_eq!(
        violations(src, LAYERS, &files),
        [
            "/src/proc/side.rs:2: `proc` (layer 1) imports `crate::run` (layer 3)",
            "/src/checks/mod.rs:2: `checks` (layer 4) imports `crate::snapshot` (layer 4)",
            "/src/scenario.rs:1: `scenario` (layer 2) imports `crate::run` (layer 3)",
        ]
    );
}

/// A file past this many lines holds more than one concern (the run wing's rule): its tests
/// go to a `tests.rs` beside it, or a concern to a module of its own.
const MOST_LINES: usize = 600;

fn too_long(files: &[(PathBuf, String)]) -> Vec<String> {
    files
        .iter()
        .map(|(path, text)| (path, text.lines().count()))
        .filter(|(_, n)| *n > MOST_LINES)
        .map(|(path, n)| format!("{}: {n} lines", path.display()))
        .collect()
}

#[test]
fn no_source_file_runs_past_600_lines() {
    let mut files = Vec::new();
    for (src, _) in crates() {
        sources(&src, &mut files);
    }
    let found = too_long(&files);
    assert!(
        found.is_empty(),
        "over {MOST_LINES} lines:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_file_past_600_lines_is_named() {
    let files = vec![
        (PathBuf::from("/src/a.rs"), "x\n".repeat(600)),
        (PathBuf::from("/src/b.rs"), "x\n".repeat(601)),
    ];
    assert_eq!(too_long(&files), ["/src/b.rs: 601 lines"]);
}

/// What the harness knows of each provider is one row (`harness/src/provider.rs`), the only
/// place that matches on `Provider`: a module that names a provider's variant decides by
/// provider where the compiler would not point a new provider.
const PROVIDER_VARIANTS: &[&str] = &["Acp", "DshSdk", "Codex", "ClaudeCode"];

/// Every `Provider::<Variant>` in the code of `files` before their test module
/// (`#[cfg(test)]`; a `tests.rs` is all test), comments cut, as `file:line: code`.
fn provider_variants_named(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        if path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let code = text.lines().take_while(|l| l.trim() != "#[cfg(test)]");
        for (n, line) in code.enumerate() {
            let line = line.split("//").next().unwrap_or_default();
            if PROVIDER_VARIANTS
                .iter()
                .any(|v| line.contains(&format!("Provider::{v}")))
            {
                out.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn only_the_provider_row_names_a_provider() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.retain(|(p, _)| p != &src.join("provider.rs"));
    assert!(files.len() > 40, "read {} files", files.len());
    let found = provider_variants_named(&files);
    assert!(
        found.is_empty(),
        "decided by provider outside harness/src/provider.rs:\n{}",
        found.join("\n")
    );
}

#[test]
fn a_provider_named_in_code_is_found_and_one_in_a_comment_or_a_test_is_not() {
    let files = vec![
        (
            PathBuf::from("/src/checks/x.rs"),
            "// Provider::Codex in a comment\nif p == Provider::Codex {}\nfor p in Provider::ALL {}\n#[cfg(test)]\nmod tests { Provider::Acp }\n"
                .to_owned(),
        ),
        (PathBuf::from("/src/run/tests.rs"), "Provider::Acp\n".to_owned()),
    ];
    assert_eq!(
        provider_variants_named(&files),
        ["/src/checks/x.rs:2: if p == Provider::Codex {}"]
    );
}
