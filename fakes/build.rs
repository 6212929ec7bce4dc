//! The accepted product versions (`profiles/<product>.toml`) as code: each version with the
//! built-in version it dresses as and its schema bundle, included in the binary.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
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
        println!("cargo::rerun-if-changed={}", schema.display());
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
            "    Profile {{ version: {version:?}, dress_as: {dress_as:?}, schema: include_str!({:?}), adds: &[{adds}] }},",
            schema.display().to_string()
        )
        .expect("a string");
    }
    out.push_str("];\n");
    let dest = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("codex_profiles.rs");
    std::fs::write(dest, out).expect("writes OUT_DIR");
}
