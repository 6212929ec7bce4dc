//! `conform peers install`: each peer of the manifest into the cache, one folder per registry,
//! package and version (`<cache>/npm/@openai/codex@0.147.0/`,
//! `<cache>/pypi/deepseek-harness-runtime-bin@0.2.1rc2/`), then `<cache>/peers.json` for every
//! peer installed there.
//!
//! npm: `npm install --prefix <folder> --no-audit --no-fund --loglevel=error <package>@<version>`.
//! PyPI: `python3 -m pip download --no-deps --pre -d <downloads> <package>==<version>`, the wheel
//! unzipped (`python3 -m zipfile -e`) into the folder, the binary made executable. A folder
//! counts as installed once its marker (`.conform-installed`, written last) names the package
//! and version and its binary resolves: an install cut short is started afresh. A peer that
//! cannot be installed (registry or tool out of reach) is skipped, said loudly; the others
//! still install.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::PeerEntry;
use super::manifest::{PeerManifest, PeerSpec, Registry, UnknownPeer, ValueError, resolve_binary};

/// Written last into an install folder: `<registry> <package>@<version>`.
pub const MARKER: &str = ".conform-installed";

/// The environment variable naming the cache, and its default under `$HOME`.
pub const CACHE_ENV: &str = "CONFORM_PEERS_DIR";
pub const CACHE_DEFAULT: &str = ".cache/conform/peers";

/// What to install.
#[derive(Clone, Debug)]
pub struct Request {
    /// Only these peers (empty: all of the manifest's).
    pub only: Vec<String>,
    /// Another package version than the manifest's, per peer.
    pub versions: BTreeMap<String, String>,
}

/// What became of one selected peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InstallOutcome {
    /// Already in the cache.
    Cached,
    /// Installed now, in this long.
    Installed(Duration),
    /// Not installed: why.
    Skipped(String),
}

/// What an install did.
#[derive(Debug)]
pub struct Installed {
    /// Each selected peer, in the manifest's order.
    pub outcomes: Vec<(String, InstallOutcome)>,
    /// What `peers.json` now says (every peer installed in the cache, selected or not).
    pub entries: BTreeMap<String, PeerEntry>,
    /// `peers.json`, or `None` when no peer is installed (any old one is removed).
    pub peers_json: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    UnknownPeer(#[from] UnknownPeer),
    #[error("--version {name}={version}: {why}")]
    Version {
        name: String,
        version: String,
        why: ValueError,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The cache folder: `$CONFORM_PEERS_DIR`, else `~/.cache/conform/peers`.
pub fn default_cache() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(CACHE_ENV).filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(CACHE_DEFAULT))
}

/// The folder `spec` at package `version` is installed in.
pub fn install_dir(cache: &Path, spec: &PeerSpec, version: &str) -> PathBuf {
    cache
        .join(spec.registry.dir_name())
        .join(format!("{}@{version}", spec.package))
}

fn marker_text(spec: &PeerSpec, version: &str) -> String {
    format!("{} {}@{version}\n", spec.registry.dir_name(), spec.package)
}

/// The binary of `spec` installed in `dir`, if the install is complete.
pub fn installed_binary(dir: &Path, spec: &PeerSpec, version: &str) -> Option<PathBuf> {
    let marker = std::fs::read_to_string(dir.join(MARKER)).ok()?;
    if marker != marker_text(spec, version) {
        return None;
    }
    resolve_binary(dir, &spec.binary).ok()
}

/// The package version of `name`: the request's, else the manifest's.
pub fn version_of<'a>(name: &str, spec: &'a PeerSpec, req: &'a Request) -> &'a str {
    req.versions.get(name).map_or(&spec.version, String::as_str)
}

/// Checks the request against the manifest: every name it gives is a peer, every version a
/// folder name.
pub fn check_request(manifest: &PeerManifest, req: &Request) -> Result<(), InstallError> {
    for name in req.only.iter().chain(req.versions.keys()) {
        manifest.get(name)?;
    }
    for (name, version) in &req.versions {
        super::manifest::check_version(version).map_err(|why| InstallError::Version {
            name: name.clone(),
            version: version.clone(),
            why,
        })?;
    }
    Ok(())
}

/// Installs the selected peers into `cache` (an absolute folder), then writes its `peers.json`.
/// Progress, and each peer skipped, goes to `log`.
pub fn install(
    manifest: &PeerManifest,
    cache: &Path,
    req: &Request,
    log: &mut dyn Write,
) -> Result<Installed, InstallError> {
    check_request(manifest, req)?;
    let mut outcomes = Vec::new();
    for (name, spec) in &manifest.peers {
        if !req.only.is_empty() && !req.only.contains(name) {
            continue;
        }
        let version = version_of(name, spec, req);
        let outcome = install_one(cache, spec, version, log);
        if let InstallOutcome::Skipped(why) = &outcome {
            let _ = writeln!(log, "SKIPPED: {why}");
        }
        outcomes.push((name.clone(), outcome));
    }
    let entries = entries(manifest, cache, req, log);
    let path = cache.join(super::MANIFEST);
    let written = |source| InstallError::Write {
        path: path.clone(),
        source,
    };
    let peers_json = if entries.is_empty() {
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(written(e)),
            _ => None,
        }
    } else {
        write_peers_json(cache, &entries).map_err(written)?;
        Some(path)
    };
    Ok(Installed {
        outcomes,
        entries,
        peers_json,
    })
}

/// Writes `dir/peers.json` naming these entries, whole or not at all (a reader never sees half
/// of one).
pub fn write_peers_json(dir: &Path, entries: &BTreeMap<String, PeerEntry>) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(entries).expect("entries are JSON");
    text.push('\n');
    let tmp = dir.join(format!("{}.tmp", super::MANIFEST));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, dir.join(super::MANIFEST))
}

/// One peer into its folder, unless it is there already.
pub fn install_one(
    cache: &Path,
    spec: &PeerSpec,
    version: &str,
    log: &mut dyn Write,
) -> InstallOutcome {
    let dir = install_dir(cache, spec, version);
    if installed_binary(&dir, spec, version).is_some() {
        return InstallOutcome::Cached;
    }
    let what = match spec.registry {
        Registry::Npm => format!("{}@{version}", spec.package),
        Registry::Pypi => format!("{}=={version}", spec.package),
    };
    let skipped = |why: String| {
        InstallOutcome::Skipped(format!(
            "could not install {what} from {}: {why}",
            spec.registry
        ))
    };
    let _ = writeln!(
        log,
        "== installing {what} from {} into {}",
        spec.registry,
        dir.display()
    );
    let started = Instant::now();
    // Whatever an earlier install left half-done goes: this one starts afresh.
    if dir.exists()
        && let Err(e) = std::fs::remove_dir_all(&dir)
    {
        return skipped(format!(
            "cannot remove the unfinished {}: {e}",
            dir.display()
        ));
    }
    if let Err(e) = std::fs::create_dir_all(&dir) {
        return skipped(format!("cannot create {}: {e}", dir.display()));
    }
    let fetched = match spec.registry {
        Registry::Npm => run(Command::new("npm")
            .args(["install", "--prefix"])
            .arg(&dir)
            .args(["--no-audit", "--no-fund", "--loglevel=error"])
            .arg(format!("{}@{version}", spec.package))
            .current_dir(&dir)),
        Registry::Pypi => install_wheel(cache, spec, version, &dir),
    };
    if let Err(why) = fetched {
        let _ = std::fs::remove_dir_all(&dir);
        return skipped(why.to_string());
    }
    let binary = match resolve_binary(&dir, &spec.binary) {
        Ok(b) => b,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&dir);
            return skipped(format!("installed, but its binary: {e}"));
        }
    };
    if spec.launcher.is_empty()
        && let Err(e) = make_executable(&binary)
    {
        return skipped(format!("cannot make {} executable: {e}", binary.display()));
    }
    if let Err(e) = std::fs::write(dir.join(MARKER), marker_text(spec, version)) {
        return skipped(format!("cannot write {}: {e}", dir.join(MARKER).display()));
    }
    let took = started.elapsed();
    let _ = writeln!(log, "   installed {what} in {:.1} s", took.as_secs_f64());
    InstallOutcome::Installed(took)
}

/// Why a package could not be fetched into its folder.
#[derive(Debug, thiserror::Error)]
enum FetchError {
    #[error("`{program}` is not installed (not on PATH)")]
    NotOnPath { program: String },
    #[error("cannot run `{program}`: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    /// The tool ran and failed: its exit, and the gist of what it said ([`gist`]).
    #[error("`{program}` {status}{}", if .said.is_empty() { String::new() } else { format!(": {}", .said) })]
    Failed {
        program: String,
        status: std::process::ExitStatus,
        said: String,
    },
    #[error("cannot create {path}: {source}")]
    Create {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("expected one wheel in {dir}, found {found}")]
    Wheels { dir: PathBuf, found: usize },
}

/// The wheel of `spec` at `version`, downloaded and unzipped into `dir`; the download is
/// removed once unzipped.
fn install_wheel(
    cache: &Path,
    spec: &PeerSpec,
    version: &str,
    dir: &Path,
) -> Result<(), FetchError> {
    let downloads = cache
        .join("downloads")
        .join(format!("{}@{version}", spec.package));
    std::fs::create_dir_all(&downloads).map_err(|source| FetchError::Create {
        path: downloads.clone(),
        source,
    })?;
    run(Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--pre",
            "-d",
        ])
        .arg(&downloads)
        .arg(format!("{}=={version}", spec.package)))?;
    let wheels: Vec<PathBuf> = std::fs::read_dir(&downloads)
        .map_err(|source| FetchError::Read {
            path: downloads.clone(),
            source,
        })?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = wheels.as_slice() else {
        return Err(FetchError::Wheels {
            dir: downloads.clone(),
            found: wheels.len(),
        });
    };
    run(Command::new("python3")
        .args(["-m", "zipfile", "-e"])
        .arg(wheel)
        .arg(dir))?;
    let _ = std::fs::remove_dir_all(&downloads);
    Ok(())
}

/// Runs a tool to its end; why it failed, from its exit and the end of what it said.
fn run(cmd: &mut Command) -> Result<(), FetchError> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = match cmd.stdin(Stdio::null()).output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(FetchError::NotOnPath { program });
        }
        Err(source) => return Err(FetchError::Start { program, source }),
    };
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let said = if said.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout)
    } else {
        said
    };
    Err(FetchError::Failed {
        program,
        status: out.status,
        said: gist(&said),
    })
}

/// The first few lines of what a tool said on failure that say why: without npm's `npm error `
/// prefix, stack frames and the fields of a dumped error object.
fn gist(said: &str) -> String {
    const LINES: usize = 4;
    const WIDTH: usize = 300;
    let lines: Vec<String> = said
        .lines()
        .map(|l| l.trim())
        .map(|l| l.strip_prefix("npm error").map_or(l, str::trim))
        .filter(|l| {
            let frame = l.starts_with("at ");
            let brace = matches!(*l, "{" | "}");
            // `code: 'ECONNREFUSED',`: a field of a dumped error object.
            let field =
                l.ends_with(',') && l.split_once(": ").is_some_and(|(k, _)| !k.contains(' '));
            !(l.is_empty() || frame || brace || field)
        })
        .map(|l| conform_protocol::lines::excerpt(l, WIDTH))
        .collect();
    let mut out = lines[..lines.len().min(LINES)].join(" | ");
    if lines.len() > LINES {
        out.push_str(" | …");
    }
    out
}

fn make_executable(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut perms = std::fs::metadata(path)?.permissions();
    let mode = perms.mode();
    if mode & 0o111 != 0o111 {
        perms.set_mode(mode | 0o755);
        std::fs::set_permissions(path, perms)?;
    }
    Ok(())
}

/// Is `program` a path to a file, or found on `PATH`?
fn on_path(program: &str) -> bool {
    if program.contains('/') {
        return Path::new(program).is_file();
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths)
            .any(|d| !d.as_os_str().is_empty() && d.join(program).is_file())
    })
}

/// `peers.json`'s entries: every peer of the manifest installed in `cache` at the version the
/// request asks for (its launcher, if any, on `PATH`).
pub fn entries(
    manifest: &PeerManifest,
    cache: &Path,
    req: &Request,
    log: &mut dyn Write,
) -> BTreeMap<String, PeerEntry> {
    let mut out = BTreeMap::new();
    for (name, spec) in &manifest.peers {
        let version = version_of(name, spec, req);
        let dir = install_dir(cache, spec, version);
        let Some(binary) = installed_binary(&dir, spec, version) else {
            continue;
        };
        if let Some(launcher) = spec.launcher.first()
            && !on_path(launcher)
        {
            let _ = writeln!(
                log,
                "SKIPPED: {name} is installed, but its launcher `{launcher}` is not on PATH"
            );
            continue;
        }
        let product_version = product_version(spec, &dir, version, name, log);
        out.insert(name.clone(), entry(spec, &binary, product_version));
    }
    out
}

/// The `peers.json` entry of `spec` installed with `binary`.
pub fn entry(spec: &PeerSpec, binary: &Path, product_version: Option<String>) -> PeerEntry {
    let mut command = spec.launcher.clone();
    command.push(binary.to_string_lossy().into_owned());
    command.extend(spec.args.iter().cloned());
    PeerEntry {
        version: product_version,
        command,
        env: spec.env.clone(),
        files: spec.files.clone(),
        deadline_ms: spec.deadline_ms,
    }
}

/// The product version installed in `dir`: the manifest's at its own package version (checked
/// against what the package says, where the manifest says where that is); at another package
/// version, what the package says, else the package version when the manifest says the two are
/// the same, else unknown.
fn product_version(
    spec: &PeerSpec,
    dir: &Path,
    version: &str,
    name: &str,
    log: &mut dyn Write,
) -> Option<String> {
    let overridden = version != spec.version;
    let said = spec
        .product_version_from
        .as_ref()
        .map(|from| read_version(&dir.join(&from.file), &from.key));
    match (said, overridden) {
        (Some(Ok(v)), false) if v != spec.pinned_product_version() => {
            let _ = writeln!(
                log,
                "WARNING: {name}: the manifest says product version {}, the installed package \
                 says {v}; peers.json gives {v}",
                spec.pinned_product_version()
            );
            Some(v)
        }
        (Some(Ok(v)), _) => Some(v),
        (Some(Err(why)), false) => {
            let _ = writeln!(log, "WARNING: {name}: {why}");
            Some(spec.pinned_product_version().to_owned())
        }
        (None, false) => Some(spec.pinned_product_version().to_owned()),
        (None, true) if spec.product_version.is_none() => Some(version.to_owned()),
        (Some(Err(why)), true) => {
            let _ = writeln!(log, "WARNING: {name}: product version unknown ({why})");
            None
        }
        (None, true) => {
            let _ = writeln!(
                log,
                "WARNING: {name}: product version unknown (its product version is not its \
                 package version, and the manifest says nowhere to read it)"
            );
            None
        }
    }
}

/// Why an installed package's product version could not be read.
#[derive(Debug, thiserror::Error)]
enum VersionFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not JSON: {source}")]
    NotJson {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path} has no string `{key}`")]
    NoKey { path: PathBuf, key: String },
}

/// A top-level string `key` of the JSON file at `path`.
fn read_version(path: &Path, key: &str) -> Result<String, VersionFileError> {
    let text = std::fs::read_to_string(path).map_err(|source| VersionFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|source| VersionFileError::NotJson {
            path: path.to_owned(),
            source,
        })?;
    value
        .get(key)
        .and_then(|v| v.as_str())
        .map(str::to_owned)
        .ok_or_else(|| VersionFileError::NoKey {
            path: path.to_owned(),
            key: key.to_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_tool_is_said_with_its_exit_then_the_gist_if_any() {
        use std::os::unix::process::ExitStatusExt;
        let failed = |said: &str| FetchError::Failed {
            program: "npm".into(),
            status: std::process::ExitStatus::from_raw(256),
            said: said.into(),
        };
        assert_eq!(failed("").to_string(), "`npm` exit status: 1");
        assert_eq!(failed("E404").to_string(), "`npm` exit status: 1: E404");
    }

    #[test]
    fn a_failure_is_said_in_the_lines_that_say_why() {
        let npm = "npm error code ECONNREFUSED\nnpm error syscall connect\nnpm error errno \
                   ECONNREFUSED\nnpm error FetchError: request to http://127.0.0.1:9/x failed\n\
                   npm error     at ClientRequest.<anonymous> (index.js:130:14)\nnpm error {\n\
                   npm error   code: 'ECONNREFUSED',\nnpm error }\nnpm error\nnpm error A \
                   complete log of this run can be found in: /x.log\n";
        assert_eq!(
            gist(npm),
            "code ECONNREFUSED | syscall connect | errno ECONNREFUSED | FetchError: request to \
             http://127.0.0.1:9/x failed | …"
        );
        let pip = "ERROR: Could not find a version that satisfies the requirement x==1 (from \
                   versions: none)\nERROR: No matching distribution found for x==1\n";
        assert_eq!(
            gist(pip),
            "ERROR: Could not find a version that satisfies the requirement x==1 (from versions: \
             none) | ERROR: No matching distribution found for x==1"
        );
    }
}
