//! What the harness knows of each provider is in one row (`harness/src/provider.rs`), the only
//! place that matches on `Provider`: a module that names a provider's variant decides by
//! provider where the compiler would not point a new provider.

use std::path::{Path, PathBuf};

const VARIANTS: &[&str] = &["Acp", "DshSdk", "Codex", "ClaudeCode"];

/// The code of a file before its test module (`#[cfg(test)]`), line by line, comments cut.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .enumerate()
        .map(|(n, l)| (n + 1, l.split("//").next().unwrap_or_default()))
}

/// Every `Provider::<Variant>` in the non-test code of `files`, as `file:line`.
fn provider_variants_named(files: &[(PathBuf, String)]) -> Vec<String> {
    let mut out = Vec::new();
    for (path, text) in files {
        for (n, code) in code_lines(text) {
            let named = VARIANTS
                .iter()
                .any(|v| code.contains(&format!("Provider::{v}")));
            if named {
                out.push(format!("{}:{n}: {}", path.display(), code.trim()));
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
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            let text = std::fs::read_to_string(&path).unwrap();
            out.push((path, text));
        }
    }
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
    let files = vec![(
        PathBuf::from("/src/checks/x.rs"),
        "// Provider::Codex in a comment\nif p == Provider::Codex {}\nfor p in Provider::ALL {}\n#[cfg(test)]\nmod tests { Provider::Acp }\n"
            .to_owned(),
    )];
    assert_eq!(
        provider_variants_named(&files),
        ["/src/checks/x.rs:2: if p == Provider::Codex {}"]
    );
}
