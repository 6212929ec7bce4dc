//! `ci/peers.toml`: which real runtimes there are, from which package at which version, and how
//! each is started (the file's own comments say it for people). Read with `deny_unknown_fields`;
//! whatever is wrong with it is said at its file, line and column.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use conform_protocol::vocab::Provider;
use serde::Deserialize;
use toml::Spanned;

use crate::input::InputError;

/// A manifest is a few kilobytes; anything past this is not one.
const MAX_BYTES: u64 = 1 << 20;

/// A loaded manifest: its path and its peers by name.
#[derive(Clone, Debug)]
pub struct PeerManifest {
    pub path: PathBuf,
    pub peers: BTreeMap<String, PeerSpec>,
}

/// Where a peer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Registry {
    Npm,
    Pypi,
}

impl Registry {
    /// The folder of the cache its installs live under.
    pub fn dir_name(self) -> &'static str {
        match self {
            Registry::Npm => "npm",
            Registry::Pypi => "pypi",
        }
    }
}

impl std::fmt::Display for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Registry::Npm => "npm",
            Registry::Pypi => "PyPI",
        })
    }
}

/// Where an installed package says its product version: a top-level key of a JSON file.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VersionSource {
    /// Relative to the install folder.
    pub file: String,
    pub key: String,
}

/// One `[peer.<name>]` table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeerSpec {
    pub product: Provider,
    pub registry: Registry,
    pub package: String,
    pub version: String,
    /// The product version that runs, when it is not the package version.
    pub product_version: Option<String>,
    pub product_version_from: Option<VersionSource>,
    /// Relative to the install folder; `*` matches within one segment.
    pub binary: String,
    pub launcher: Vec<String>,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub files: BTreeMap<String, String>,
    pub deadline_ms: Option<u64>,
    /// Id prefixes of the peer scenarios that run this peer.
    pub scenarios: Vec<String>,
}

impl PeerSpec {
    /// The product version at the manifest's package version.
    pub fn pinned_product_version(&self) -> &str {
        self.product_version.as_deref().unwrap_or(&self.version)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    peer: BTreeMap<Spanned<String>, RawPeer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPeer {
    product: Provider,
    registry: Registry,
    package: Spanned<String>,
    version: Spanned<String>,
    product_version: Option<Spanned<String>>,
    product_version_from: Option<Spanned<VersionSource>>,
    binary: Spanned<String>,
    launcher: Option<Spanned<Vec<String>>>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    files: BTreeMap<String, String>,
    deadline_ms: Option<Spanned<u64>>,
    scenarios: Spanned<Vec<String>>,
}

impl PeerManifest {
    pub fn load(path: &Path) -> Result<PeerManifest, InputError> {
        let text = crate::input::read_bounded(path, MAX_BYTES, "a peers manifest")?;
        PeerManifest::parse(path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<PeerManifest, InputError> {
        let invalid = |span: Option<Range<usize>>, message: String| {
            InputError::invalid(path, text, span, message)
        };
        let raw: RawFile =
            toml::from_str(text).map_err(|e| invalid(e.span(), e.message().trim().to_owned()))?;
        if raw.peer.is_empty() {
            return Err(invalid(None, "no `[peer.<name>]` table".to_owned()));
        }
        let mut peers = BTreeMap::new();
        for (name, r) in raw.peer {
            if !valid_name(name.get_ref()) {
                return Err(invalid(
                    Some(name.span()),
                    format!(
                        "peer name `{}`: letters, digits, `.`, `_` and `-` only",
                        name.get_ref()
                    ),
                ));
            }
            check_package(r.registry, r.package.get_ref())
                .map_err(|why| invalid(Some(r.package.span()), why.to_string()))?;
            check_version(r.version.get_ref())
                .map_err(|why| invalid(Some(r.version.span()), why.to_string()))?;
            if let Some(v) = &r.product_version
                && v.get_ref().trim().is_empty()
            {
                return Err(invalid(
                    Some(v.span()),
                    "an empty product_version".to_owned(),
                ));
            }
            if let Some(from) = &r.product_version_from {
                check_relative(&from.get_ref().file, false).map_err(|why| {
                    invalid(Some(from.span()), format!("product_version_from: {why}"))
                })?;
            }
            check_relative(r.binary.get_ref(), true)
                .map_err(|why| invalid(Some(r.binary.span()), format!("binary: {why}")))?;
            if let Some(l) = &r.launcher
                && (l.get_ref().is_empty() || l.get_ref().iter().any(String::is_empty))
            {
                return Err(invalid(
                    Some(l.span()),
                    "launcher: a program (and its arguments), none empty".to_owned(),
                ));
            }
            if let Some(d) = &r.deadline_ms
                && *d.get_ref() == 0
            {
                return Err(invalid(
                    Some(d.span()),
                    "deadline_ms is at least 1".to_owned(),
                ));
            }
            if r.scenarios.get_ref().is_empty()
                || r.scenarios.get_ref().iter().any(|s| s.trim().is_empty())
            {
                return Err(invalid(
                    Some(r.scenarios.span()),
                    "scenarios: at least one id prefix, none empty".to_owned(),
                ));
            }
            peers.insert(
                name.into_inner(),
                PeerSpec {
                    product: r.product,
                    registry: r.registry,
                    package: r.package.into_inner(),
                    version: r.version.into_inner(),
                    product_version: r.product_version.map(Spanned::into_inner),
                    product_version_from: r.product_version_from.map(Spanned::into_inner),
                    binary: r.binary.into_inner(),
                    launcher: r.launcher.map(Spanned::into_inner).unwrap_or_default(),
                    args: r.args,
                    env: r.env,
                    files: r.files,
                    deadline_ms: r.deadline_ms.map(Spanned::into_inner),
                    scenarios: r.scenarios.into_inner(),
                },
            );
        }
        Ok(PeerManifest {
            path: path.to_owned(),
            peers,
        })
    }

    /// The peer named `name`, or an error listing the ones there are.
    pub fn get(&self, name: &str) -> Result<&PeerSpec, UnknownPeer> {
        self.peers.get(name).ok_or_else(|| UnknownPeer {
            manifest: self.path.clone(),
            name: name.to_owned(),
            known: self.peers.keys().cloned().collect(),
        })
    }
}

/// A peer name the manifest does not hold.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{manifest} names no peer `{name}` (it names: {})", .known.join(", "))]
pub struct UnknownPeer {
    pub manifest: PathBuf,
    pub name: String,
    pub known: Vec<String>,
}

/// What is wrong with one value of a manifest (said at its place in the file).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValueError {
    #[error("version `{0}`: not empty, no `/`, `\\` or spaces, not starting with `.`")]
    Version(String),
    #[error("`{package}` is not a {registry} package name")]
    Package { registry: Registry, package: String },
    #[error("`{0}` must be a path relative to the install folder")]
    NotRelative(String),
    #[error("`{0}`: no empty, `.` or `..` segment")]
    Segment(String),
    #[error("`{0}`: no `*` here")]
    Glob(String),
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A version becomes a folder name: no separators, nothing hidden.
pub fn check_version(version: &str) -> Result<(), ValueError> {
    if version.is_empty()
        || version.starts_with('.')
        || version
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_whitespace() || c.is_control())
    {
        return Err(ValueError::Version(version.to_owned()));
    }
    Ok(())
}

/// A package name becomes a folder under the registry's: npm's `@scope/name` or `name`, PyPI's
/// letters, digits, `.`, `_` and `-`.
fn check_package(registry: Registry, package: &str) -> Result<(), ValueError> {
    let segment_ok = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '~'))
    };
    let ok = match registry {
        Registry::Npm => match package.strip_prefix('@') {
            Some(scoped) => scoped
                .split_once('/')
                .is_some_and(|(scope, name)| segment_ok(scope) && segment_ok(name)),
            None => segment_ok(package),
        },
        Registry::Pypi => segment_ok(package),
    };
    if ok {
        Ok(())
    } else {
        Err(ValueError::Package {
            registry,
            package: package.to_owned(),
        })
    }
}

/// A path inside the install folder: relative, no `..`, no empty segment; `*` only where
/// `glob` allows it.
fn check_relative(path: &str, glob: bool) -> Result<(), ValueError> {
    if path.is_empty() || path.starts_with('/') {
        return Err(ValueError::NotRelative(path.to_owned()));
    }
    for segment in path.split('/') {
        if segment.is_empty() || segment == "." || segment == ".." {
            return Err(ValueError::Segment(path.to_owned()));
        }
        if !glob && segment.contains('*') {
            return Err(ValueError::Glob(path.to_owned()));
        }
    }
    Ok(())
}

/// Why a `binary` pattern does not name exactly one file.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("`{pattern}` matches nothing in {dir}")]
    NoMatch { pattern: String, dir: PathBuf },
    #[error("`{pattern}` matches {} files in {dir}: {}", .matches.len(),
            .matches.iter().map(|m| m.display().to_string()).collect::<Vec<_>>().join(", "))]
    Ambiguous {
        pattern: String,
        dir: PathBuf,
        matches: Vec<PathBuf>,
    },
}

/// The one file `pattern` (segments separated by `/`, `*` matching any run of characters within
/// a segment) names under `dir`, as an absolute path when `dir` is one.
pub fn resolve_binary(dir: &Path, pattern: &str) -> Result<PathBuf, GlobError> {
    let mut found = vec![dir.to_owned()];
    let segments: Vec<&str> = pattern.split('/').collect();
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let mut next = Vec::new();
        for base in &found {
            if !segment.contains('*') {
                let p = base.join(segment);
                if (last && p.is_file()) || (!last && p.is_dir()) {
                    next.push(p);
                }
                continue;
            }
            let Ok(entries) = std::fs::read_dir(base) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else { continue };
                let p = entry.path();
                if crate::input::wildcard(segment, name)
                    && ((last && p.is_file()) || (!last && p.is_dir()))
                {
                    next.push(p);
                }
            }
        }
        next.sort();
        found = next;
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(GlobError::NoMatch {
            pattern: pattern.to_owned(),
            dir: dir.to_owned(),
        }),
        _ => Err(GlobError::Ambiguous {
            pattern: pattern.to_owned(),
            dir: dir.to_owned(),
            matches: found,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: &str = r#"
[peer.x]
product = "codex"
registry = "npm"
package = "@openai/codex"
version = "1.2.3"
binary = "node_modules/*/bin/x"
scenarios = ["peers/x/"]
"#;

    #[test]
    fn a_minimal_peer_parses_with_its_defaults() {
        let m = PeerManifest::parse(Path::new("m.toml"), ONE).unwrap();
        let x = &m.peers["x"];
        assert_eq!(x.product, Provider::Codex);
        assert_eq!(x.registry, Registry::Npm);
        assert_eq!(x.package, "@openai/codex");
        assert_eq!(x.pinned_product_version(), "1.2.3");
        assert_eq!(x.launcher, Vec::<String>::new());
        assert_eq!(x.deadline_ms, None);
        assert_eq!(x.scenarios, ["peers/x/"]);
    }

    fn error(text: &str) -> String {
        PeerManifest::parse(Path::new("ci/peers.toml"), text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn what_is_wrong_is_said_at_its_line_and_column() {
        // An unknown key.
        let text = ONE.replace("scenarios =", "colour = \"red\"\nscenarios =");
        assert_eq!(
            error(&text),
            "ci/peers.toml:8:1: unknown field `colour`, expected one of `product`, `registry`, \
             `package`, `version`, `product_version`, `product_version_from`, `binary`, \
             `launcher`, `args`, `env`, `files`, `deadline_ms`, `scenarios`"
        );
        // A product outside the vocabulary.
        let text = ONE.replace("\"codex\"", "\"gemini\"");
        assert!(
            error(&text).starts_with("ci/peers.toml:3:11: unknown variant `gemini`"),
            "{}",
            error(&text)
        );
        // A binary outside the install folder.
        let text = ONE.replace("node_modules/*/bin/x", "../x");
        assert_eq!(
            error(&text),
            "ci/peers.toml:7:10: binary: `../x`: no empty, `.` or `..` segment"
        );
        // A registry it does not know.
        let text = ONE.replace("\"npm\"", "\"cargo\"");
        assert_eq!(
            error(&text),
            "ci/peers.toml:4:12: unknown variant `cargo`, expected `npm` or `pypi`"
        );
        // No scenarios.
        let text = ONE.replace("[\"peers/x/\"]", "[]");
        assert_eq!(
            error(&text),
            "ci/peers.toml:8:13: scenarios: at least one id prefix, none empty"
        );
        // Not TOML.
        assert_eq!(
            error("[peer.x\nproduct = 1"),
            "ci/peers.toml:1:8: unclosed table, expected `]`"
        );
    }

    #[test]
    fn package_names_and_versions_become_folders_safely() {
        assert_eq!(
            error(&ONE.replace("@openai/codex", "@openai/../codex")),
            "ci/peers.toml:5:11: `@openai/../codex` is not a npm package name"
        );
        assert_eq!(
            error(&ONE.replace("1.2.3", "1/2")),
            "ci/peers.toml:6:11: version `1/2`: not empty, no `/`, `\\` or spaces, not starting \
             with `.`"
        );
    }

    #[test]
    fn the_binary_glob_resolves_to_exactly_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let bin =
            d.join("node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("codex"), "").unwrap();
        std::fs::write(bin.join("codex-code-mode-host"), "").unwrap();
        let pattern = "node_modules/@openai/codex-linux-x64/vendor/*/bin/codex";
        assert_eq!(resolve_binary(d, pattern), Ok(bin.join("codex")));
        // A second triple makes it ambiguous; a folder where the file should be matches nothing.
        let other = d.join("node_modules/@openai/codex-linux-x64/vendor/aarch64/bin");
        std::fs::create_dir_all(other.join("codex")).unwrap();
        assert_eq!(resolve_binary(d, pattern), Ok(bin.join("codex")));
        std::fs::remove_dir(other.join("codex")).unwrap();
        std::fs::write(other.join("codex"), "").unwrap();
        assert_eq!(
            resolve_binary(d, pattern),
            Err(GlobError::Ambiguous {
                pattern: pattern.to_owned(),
                dir: d.to_owned(),
                matches: vec![other.join("codex"), bin.join("codex")],
            })
        );
        assert_eq!(
            resolve_binary(d, "node_modules/*/nothing"),
            Err(GlobError::NoMatch {
                pattern: "node_modules/*/nothing".to_owned(),
                dir: d.to_owned(),
            })
        );
    }
}
