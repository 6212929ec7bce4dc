//! Real peers: the real runtimes run in place of a fake behind `conform peer-proxy`, each
//! pointed at the loopback model endpoint (`conform mock-model`, served in-process here). Two
//! files say what they are:
//!
//! - **`ci/peers.toml`**, the manifest in the repository ([`manifest`]): per peer, its product,
//!   registry, package and version, the program inside the package, its arguments, environment
//!   and files, and the peer scenarios it runs. The one place a version is written.
//! - **`<cache>/peers.json`**, what `conform peers install` ([`install`]) writes after installing
//!   the manifest's peers into the cache (`$CONFORM_PEERS_DIR`, default
//!   `~/.cache/conform/peers`), and what `conform run --peers <cache>` and `conform peers diff`
//!   read ([`Peers::load`]): each installed peer's product version and whole command line, with
//!   absolute paths:
//!
//! ```json
//! {"dsh-sdk": {"version": "0.2.1rc2",
//!              "command": ["/abs/runtime", "--profile", "sdk"],
//!              "env": {"DSH_HOME": "{run_dir}/dsh-home", "DEEPSEEK_BASE_URL": "{model}"},
//!              "files": {"{run_dir}/dsh-home/.keep": ""}}}
//! ```
//!
//! `{run_dir}` is the run's scratch folder, `{model}` the model endpoint's base URL with the
//! scenario's behaviour (`http://127.0.0.1:PORT/mid-stream`), `{peers}` the peers folder,
//! `{unpacked}` where the runtime unpacks what it unpacks on first use, shared by its runs once
//! filled ([`unpacked`]); they are filled in per run ([`prepare`]). An optional `deadline_ms` is the per-run deadline of the
//! peer's runs whose scenario sets none.

pub mod install;
pub mod manifest;
pub mod unpacked;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const MANIFEST: &str = "peers.json";

#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PeerEntry {
    /// The installed product version (for reports and fixtures); absent when unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The real runtime's argv.
    pub command: Vec<String>,
    /// Its whole environment (providers clear theirs): templates allowed.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Files to write before the run (path → text): templates allowed in both.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// The per-run deadline of this peer's runs whose scenario sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<u64>,
}

#[derive(Debug)]
pub struct Peers {
    pub dir: PathBuf,
    pub entries: BTreeMap<String, PeerEntry>,
}

#[derive(Debug, thiserror::Error)]
pub enum PeersError {
    #[error("cannot read {path}: {source} (`conform peers install` writes it)")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a peers manifest: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

impl Peers {
    pub fn load(dir: &Path) -> Result<Peers, PeersError> {
        let path = dir.join(MANIFEST);
        let text = std::fs::read_to_string(&path).map_err(|source| PeersError::Read {
            path: path.clone(),
            source,
        })?;
        let entries =
            serde_json::from_str(&text).map_err(|source| PeersError::Parse { path, source })?;
        Ok(Peers {
            dir: dir.to_owned(),
            entries,
        })
    }
}

/// The argv and environment of one run of `entry` (the peer `name`), with its files written.
pub fn prepare(
    entry: &PeerEntry,
    name: &str,
    peers_dir: &Path,
    run_dir: &Path,
    model: &str,
) -> std::io::Result<(Vec<String>, BTreeMap<String, String>)> {
    let unpacked = unpacked::for_run(peers_dir, name, entry, run_dir);
    let expand = |s: &str| {
        s.replace("{run_dir}", &run_dir.to_string_lossy())
            .replace("{peers}", &peers_dir.to_string_lossy())
            .replace(unpacked::PLACEHOLDER, &unpacked.to_string_lossy())
            .replace("{model}", model)
    };
    for (path, text) in &entry.files {
        let path = PathBuf::from(expand(path));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, expand(text))?;
    }
    let argv = entry.command.iter().map(|a| expand(a)).collect();
    let env = entry
        .env
        .iter()
        .map(|(k, v)| (k.clone(), expand(v)))
        .collect();
    Ok((argv, env))
}

/// Serves the scripted model endpoint on loopback for the rest of the suite; returns its base
/// URL (`http://127.0.0.1:PORT`).
pub async fn start_model() -> std::io::Result<String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(conform_fakes::model::serve(listener));
    Ok(format!("http://{addr}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_expand_in_argv_env_and_files() {
        let dir = tempfile::tempdir().unwrap();
        let entry: PeerEntry = serde_json::from_str(
            r#"{"command": ["{peers}/bin", "--x"], "env": {"URL": "{model}/v1"},
                "files": {"{run_dir}/home/config.toml": "base_url = \"{model}\""}}"#,
        )
        .unwrap();
        let (argv, env) = prepare(
            &entry,
            "p",
            Path::new("/p"),
            dir.path(),
            "http://127.0.0.1:9/success",
        )
        .unwrap();
        assert_eq!(argv, vec!["/p/bin", "--x"]);
        assert_eq!(env["URL"], "http://127.0.0.1:9/success/v1");
        let file = std::fs::read_to_string(dir.path().join("home/config.toml")).unwrap();
        assert_eq!(file, "base_url = \"http://127.0.0.1:9/success\"");
    }
}
