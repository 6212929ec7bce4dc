//! The harness's modules are layered (`harness/src/lib.rs`, `docs/architecture.md`): each
//! imports only from layers below its own, so no import runs back up and no circle closes
//! between them. This reads every source file's `crate::…` paths and holds them to the table.

use std::path::{Path, PathBuf};

/// Bottom to top. A module may use its own items and anything of a lower layer.
const LAYERS: &[&[&str]] = &[
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

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The top-level module a file under `harness/src` belongs to (`run/drive.rs` → `run`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_owned())
}

/// Every `crate::<module>` a text names, with its line.
fn crate_paths(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or_default();
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            let after = &rest[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            // `conform_crate::` or `some_crate::` are not this crate.
            let before = rest[..i].chars().next_back();
            if !name.is_empty() && !before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                out.push((n + 1, name));
            }
            rest = after;
        }
    }
    out
}

/// The imports that run up the table or sideways into another module of the same layer.
fn violations(src: &Path, files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (file, text) in files {
        let Some(from) = module_of(src, file) else {
            continue;
        };
        let from_layer = layer(&from).unwrap_or_else(|| {
            panic!(
                "{}: module `{from}` is in no layer of LAYERS",
                file.display()
            )
        });
        for (line, to) in crate_paths(text) {
            if to == from {
                continue;
            }
            let to_layer = layer(&to).unwrap_or_else(|| {
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
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(files.len() > 40, "read {} files", files.len());
    let found = violations(&src, &files);
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
    ];
    assert_eq!(
        violations(src, &files),
        [
            "/src/proc/side.rs:2: `proc` (layer 1) imports `crate::run` (layer 3)",
            "/src/checks/mod.rs:2: `checks` (layer 4) imports `crate::snapshot` (layer 4)",
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
fn no_harness_source_file_runs_past_600_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
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
