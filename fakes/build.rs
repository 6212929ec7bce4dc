//! Two things compiled into the fakes from their data files:
//! - the accepted product versions (`profiles/<product>.toml`) as code: each version with the
//!   built-in version it dresses as and its schema bundle;
//! - every vendored schema bundle digested ([`digest`]): cut into its definitions, so a fake
//!   parses only the few its run's frames are checked against (`src/bundle.rs`).

use std::fmt::Write as _;
use std::path::Path;

/// The bundles checked by name (`src/*/schema.rs`): the constant, the file, where the
/// definitions sit and which definitions hold definitions of their own.
const BUNDLES: &[(&str, &str, &str, &[&str])] = &[
    ("ACP_V1", "schemas/acp-v1.schema.json", "$defs", &[]),
    (
        "CODEX_0_147_0",
        "schemas/codex/0.147.0.schemas.json",
        "definitions",
        &["v2"],
    ),
    (
        "CODEX_0_169_0",
        "schemas/codex/0.169.0.schemas.json",
        "definitions",
        &["v2"],
    ),
    (
        "CLAUDE_CODE_0_3_220",
        "schemas/claude-code/0.3.220.schema.json",
        "definitions",
        &[],
    ),
];

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    let out_dir = Path::new(&out_dir);
    let mut digests = String::new();
    for (name, file, key, groups) in BUNDLES {
        let digest = digest(&dir.join(file), name, key, groups, out_dir);
        writeln!(digests, "pub(crate) const {name}: Digest = {digest};").expect("a string");
    }
    std::fs::write(out_dir.join("digests.rs"), digests).expect("writes OUT_DIR");

    let profiles = dir.join("profiles/codex.toml");
    println!("cargo::rerun-if-changed={}", profiles.display());
    let text = std::fs::read_to_string(&profiles).expect("profiles/codex.toml");
    let table: toml::Table = text.parse().expect("profiles/codex.toml is TOML");
    let mut out = String::from("pub const PROFILES: &[Profile] = &[\n");
    let versions = table.get("version").and_then(|v| v.as_array()).cloned();
    for entry in versions.unwrap_or_default() {
        let field = |k: &str| {
            entry
                .get(k)
                .and_then(|v| v.as_str())
                .unwrap_or_else(|| panic!("profiles/codex.toml: a [[version]] without `{k}`"))
                .to_owned()
        };
        let (version, dress_as) = (field("version"), field("dress_as"));
        let schema = dir.join(format!("schemas/codex/{version}.schemas.json"));
        assert!(schema.is_file(), "{} is missing", schema.display());
        let name = format!("CODEX_{}", version.replace(['.', '-'], "_"));
        let schema = digest(&schema, &name, "definitions", &["v2"], out_dir);
        let mut adds = String::new();
        let learned = entry.get("add").and_then(|v| v.as_array()).cloned();
        for add in learned.unwrap_or_default() {
            let key = |k: &str| {
                add.get(k)
                    .and_then(|v| v.as_str())
                    .unwrap_or_else(|| {
                        panic!("profiles/codex.toml: a [[version.add]] without `{k}`")
                    })
                    .to_owned()
            };
            let value = key("value");
            serde_json::from_str::<serde_json::Value>(&value).unwrap_or_else(|e| {
                panic!("profiles/codex.toml: {version}: `value = {value:?}` is not JSON: {e}")
            });
            write!(
                adds,
                "Add {{ kind: {:?}, field: {:?}, value: {value:?} }}, ",
                key("kind"),
                key("field")
            )
            .expect("a string");
        }
        writeln!(
            out,
            "    Profile {{ version: {version:?}, dress_as: {dress_as:?}, schema: {schema}, adds: &[{adds}] }},"
        )
        .expect("a string");
    }
    out.push_str("];\n");
    std::fs::write(out_dir.join("codex_profiles.rs"), out).expect("writes OUT_DIR");
}

/// Cuts the bundle `file` into pieces — each member of its root but `key`, each definition
/// under `key` (each one under a definition named in `groups`) — written one after another,
/// as compact JSON in the file's own key order, to `OUT_DIR/<name>.pieces`. Returns the
/// `Digest` expression that finds them again: each piece's JSON pointer (sorted) and where its
/// text lies.
fn digest(file: &Path, name: &str, key: &str, groups: &[&str], out_dir: &Path) -> String {
    println!("cargo::rerun-if-changed={}", file.display());
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let root: serde_json::Value = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", file.display()));
    let root = root
        .as_object()
        .unwrap_or_else(|| panic!("{} is not an object", file.display()));
    let mut pieces: Vec<(String, String)> = Vec::new();
    let piece = |pointer: String, value: &serde_json::Value| {
        (pointer, serde_json::to_string(value).expect("a value"))
    };
    for (member, value) in root {
        if member != key {
            pieces.push(piece(format!("/{}", escape(member)), value));
            continue;
        }
        let definitions = value
            .as_object()
            .unwrap_or_else(|| panic!("{}: `{key}` is not an object", file.display()));
        for (def, schema) in definitions {
            let at = format!("/{}/{}", escape(key), escape(def));
            match schema.as_object() {
                Some(group) if groups.contains(&def.as_str()) => {
                    for (inner, schema) in group {
                        pieces.push(piece(format!("{at}/{}", escape(inner)), schema));
                    }
                }
                _ => pieces.push(piece(at, schema)),
            }
        }
    }
    pieces.sort();
    let mut all = String::new();
    let mut table = String::new();
    for (pointer, json) in &pieces {
        let start = all.len();
        all.push_str(json);
        write!(table, "({pointer:?}, {start}, {}), ", all.len()).expect("a string");
    }
    assert!(
        u32::try_from(all.len()).is_ok(),
        "{} is too big",
        file.display()
    );
    let path = out_dir.join(format!("{name}.pieces"));
    std::fs::write(&path, all).expect("writes OUT_DIR");
    format!(
        "Digest {{ table: &[{table}], text: include_str!({:?}) }}",
        path.display().to_string()
    )
}

/// A member name as a JSON pointer segment (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
