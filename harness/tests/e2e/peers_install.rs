//! The real peers' manifest (`ci/peers.toml`) and `conform peers install`, offline: the
//! manifest covers every peer scenario and carries today's command lines; installs run against
//! stub `npm` and `python3` programs placed alone on `PATH` (each records its argv and lays out
//! what the real tool would), so what conform asks of them, what it caches and the `peers.json`
//! it writes are pinned exactly, and a tool that fails or is missing skips its peer loudly.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use conform::proc::peers::install::{MARKER, install_dir};
use conform::proc::peers::manifest::PeerManifest;
use serde_json::{Value, json};

use crate::common;
use common::{conform, stderr, stdout, workspace};

fn manifest() -> PeerManifest {
    PeerManifest::load(&workspace().join("ci/peers.toml")).unwrap()
}

#[test]
fn the_manifest_names_every_peer_a_scenario_runs_and_no_other() {
    let manifest = manifest();
    let scenarios = conform::scenario::discover(&workspace().join("scenarios")).unwrap();
    // name → the ids of the scenarios that run it.
    let mut named: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for s in &scenarios {
        let Some(peer) = &s.file.peer else { continue };
        let spec = manifest
            .peers
            .get(&peer.name)
            .unwrap_or_else(|| panic!("{}: peer `{}` is not in ci/peers.toml", s.id, peer.name));
        assert_eq!(spec.product, s.file.provider, "{}: `{}`", s.id, peer.name);
        assert!(
            spec.scenarios.iter().any(|p| s.id.starts_with(p.as_str())),
            "{}: none of `{}`'s scenarios prefixes {:?} covers it",
            s.id,
            peer.name,
            spec.scenarios
        );
        named
            .entry(peer.name.clone())
            .or_default()
            .push(s.id.clone());
    }
    assert_eq!(
        named.keys().collect::<Vec<_>>(),
        manifest.peers.keys().collect::<Vec<_>>(),
        "the manifest's peers and the ones scenarios name"
    );
    for (name, spec) in &manifest.peers {
        for prefix in &spec.scenarios {
            assert!(
                named[name].iter().any(|id| id.starts_with(prefix.as_str())),
                "`{name}`: its prefix `{prefix}` matches none of its scenarios {:?}",
                named[name]
            );
        }
    }
    let counts: Vec<(&str, usize)> = named
        .iter()
        .map(|(n, ids)| (n.as_str(), ids.len()))
        .collect();
    assert_eq!(
        counts,
        [
            ("acp-example", 4),
            ("claude-agent-acp", 2),
            ("claude-code", 5),
            ("codex-0.147.0", 9),
            ("codex-0.169.0", 4),
            ("codex-0.171.0", 4),
            ("codex-acp", 2),
            ("dsh-sdk", 7),
            ("gemini-cli", 2),
            ("qwen-code", 2),
        ]
    );
}

/// Programs alone on `PATH` for conform's installs: `npm` and `python3` stand-ins (logging each
/// call to `calls.log`) and a `node` that is never run.
struct Stubs {
    dir: tempfile::TempDir,
}

impl Stubs {
    fn new() -> Stubs {
        Stubs {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn add(&self, name: &str, script: &str) {
        let p = self.path().join(name);
        // Its own PATH: the one conform runs it with holds the stubs alone.
        let script = script.replace("$LOG", &self.path().join("calls.log").display().to_string());
        std::fs::write(&p, format!("#!/bin/sh\nPATH=/usr/bin:/bin\n{script}")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    /// An `npm install --prefix DIR … SPEC` that lays out `node_modules/<package>/bin/tool` and
    /// the package's `package.json` (its version, and a `productVersion` of `9.<version>`).
    fn npm_that_installs(&self) {
        self.add(
            "npm",
            r#"echo "npm $*" >> "$LOG"
prefix=$3; spec=$7
pkg=${spec%@*}; version=${spec##*@}
mkdir -p "$prefix/node_modules/$pkg/bin"
echo '#!/bin/sh' > "$prefix/node_modules/$pkg/bin/tool"
chmod +x "$prefix/node_modules/$pkg/bin/tool"
printf '{"version": "%s", "productVersion": "9.%s"}\n' "$version" "$version" \
  > "$prefix/node_modules/$pkg/package.json"
echo "added 1 package"
"#,
        );
    }

    fn npm_that_fails(&self) {
        self.add(
            "npm",
            r#"echo "npm $*" >> "$LOG"
echo "npm error code ECONNREFUSED" >&2
echo "npm error FetchError: request to https://registry.npmjs.org/x failed" >&2
exit 1
"#,
        );
    }

    /// `python3 -m pip download … -d DIR SPEC` writes `DIR/<name>-<version>-py3-none-any.whl`;
    /// `python3 -m zipfile -e WHEEL DIR` lays out `rt/bin/runtime` (not executable, as a wheel
    /// unzipped by zipfile has it).
    fn python(&self) {
        self.add(
            "python3",
            r#"echo "python3 $*" >> "$LOG"
case "$2" in
  pip) spec=$9; echo wheel > "$8/${spec%%==*}-${spec##*==}-py3-none-any.whl" ;;
  zipfile) mkdir -p "$5/rt/bin"; cp "$4" "$5/rt/bin/runtime"; chmod 644 "$5/rt/bin/runtime" ;;
  *) exit 3 ;;
esac
"#,
        );
    }

    fn node(&self) {
        self.add("node", "exit 0\n");
    }

    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path().join("calls.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

const MANIFEST: &str = r#"
[peer.tool]
product = "codex"
registry = "npm"
package = "@scope/tool"
version = "1.2.3"
binary = "node_modules/@scope/*/bin/tool"
args = ["app-server"]
env = { HOME = "{run_dir}/home" }
files = { "{run_dir}/home/.keep" = "" }
scenarios = ["peers/codex/"]

[peer.script]
product = "acp"
registry = "npm"
package = "script"
version = "0.1.0"
product_version = "7.0.0"
product_version_from = { file = "node_modules/script/package.json", key = "productVersion" }
launcher = ["node"]
binary = "node_modules/script/bin/tool"
deadline_ms = 60000
scenarios = ["peers/acp/"]

[peer.runtime]
product = "dsh-sdk"
registry = "pypi"
package = "rt-bin"
version = "0.2.1rc2"
binary = "rt/bin/runtime"
args = ["--profile", "sdk"]
scenarios = ["peers/dsh-sdk/"]
"#;

/// A manifest file and an empty cache.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("peers.toml");
    std::fs::write(&manifest, MANIFEST).unwrap();
    let cache = dir.path().join("cache");
    (dir, manifest, cache)
}

fn peers(stubs: &Stubs, manifest: &Path, cache: &Path, args: &[&str]) -> std::process::Output {
    conform()
        .env("PATH", stubs.path())
        .args(["peers"])
        .args(args)
        .arg("--manifest")
        .arg(manifest)
        .arg("--peers")
        .arg(cache)
        .output()
        .unwrap()
}

fn peers_json(cache: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(cache.join("peers.json")).unwrap()).unwrap()
}

#[test]
fn install_runs_the_registry_tools_once_and_writes_peers_json() {
    let (_dir, manifest, cache) = setup();
    let stubs = Stubs::new();
    stubs.npm_that_installs();
    stubs.python();
    stubs.node();
    let out = peers(&stubs, &manifest, &cache, &["install"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let c = cache.display().to_string();
    assert_eq!(
        stubs.calls(),
        [
            format!(
                "python3 -m pip download --quiet --no-deps --pre -d {c}/downloads/rt-bin@0.2.1rc2 \
                 rt-bin==0.2.1rc2"
            ),
            format!(
                "python3 -m zipfile -e \
                 {c}/downloads/rt-bin@0.2.1rc2/rt-bin-0.2.1rc2-py3-none-any.whl \
                 {c}/pypi/rt-bin@0.2.1rc2"
            ),
            format!(
                "npm install --prefix {c}/npm/script@0.1.0 --no-audit --no-fund --loglevel=error \
                 script@0.1.0"
            ),
            format!(
                "npm install --prefix {c}/npm/@scope/tool@1.2.3 --no-audit --no-fund \
                 --loglevel=error @scope/tool@1.2.3"
            ),
        ]
    );
    assert_eq!(
        peers_json(&cache),
        json!({
            "tool": {
                "version": "1.2.3",
                "command": [format!("{c}/npm/@scope/tool@1.2.3/node_modules/@scope/tool/bin/tool"),
                            "app-server"],
                "env": {"HOME": "{run_dir}/home"},
                "files": {"{run_dir}/home/.keep": ""},
            },
            "script": {
                // The package says 9.0.1.0, the manifest 7.0.0: the installed package wins, and
                // the disagreement is said.
                "version": "9.0.1.0",
                "command": ["node", format!("{c}/npm/script@0.1.0/node_modules/script/bin/tool")],
                "env": {},
                "files": {},
                "deadline_ms": 60000,
            },
            "runtime": {
                "version": "0.2.1rc2",
                "command": [format!("{c}/pypi/rt-bin@0.2.1rc2/rt/bin/runtime"), "--profile", "sdk"],
                "env": {},
                "files": {},
            },
        })
    );
    assert!(
        stderr(&out).contains(
            "WARNING: script: the manifest says product version 7.0.0, the installed package says \
             9.0.1.0; peers.json gives 9.0.1.0"
        ),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        stdout(&out),
        format!(
            "== peers cache: {c}\n== installed: runtime (0.2.1rc2), script (9.0.1.0), tool \
             (1.2.3)\n== wrote {c}/peers.json\n"
        )
    );
    // The wheel's binary made executable, its download gone, each folder marked.
    let runtime = cache.join("pypi/rt-bin@0.2.1rc2/rt/bin/runtime");
    assert_eq!(
        std::fs::metadata(&runtime).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert!(!cache.join("downloads/rt-bin@0.2.1rc2").exists());
    assert_eq!(
        std::fs::read_to_string(cache.join("npm/@scope/tool@1.2.3").join(MARKER)).unwrap(),
        "npm @scope/tool@1.2.3\n"
    );

    // Again: everything is cached, no tool runs, the same peers.json.
    let before = peers_json(&cache);
    let out = peers(&stubs, &manifest, &cache, &["install"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stubs.calls().len(), 4);
    assert_eq!(peers_json(&cache), before);

    // `peers path`: the folder, the binary.
    let out = peers(&stubs, &manifest, &cache, &["path", "tool", "--binary"]);
    assert_eq!(
        stdout(&out),
        format!("{c}/npm/@scope/tool@1.2.3/node_modules/@scope/tool/bin/tool\n")
    );
    let out = peers(&stubs, &manifest, &cache, &["path", "runtime"]);
    assert_eq!(stdout(&out), format!("{c}/pypi/rt-bin@0.2.1rc2\n"));
}

#[test]
fn another_version_installs_beside_the_pinned_one() {
    let (_dir, manifest, cache) = setup();
    let stubs = Stubs::new();
    stubs.npm_that_installs();
    stubs.node();
    let c = cache.display().to_string();
    let out = peers(
        &stubs,
        &manifest,
        &cache,
        &["path", "tool", "--version", "tool=2.0.0"],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        format!(
            "peer `tool` (@scope/tool@2.0.0) is not installed in {c} (`conform peers install \
             --only tool --version tool=2.0.0`)\n"
        )
    );
    let out = peers(
        &stubs,
        &manifest,
        &cache,
        &[
            "install",
            "--only",
            "tool",
            "--only",
            "script",
            "--version",
            "tool=2.0.0",
            "--version",
            "script=0.2.0",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stubs.calls(),
        [
            format!(
                "npm install --prefix {c}/npm/script@0.2.0 --no-audit --no-fund --loglevel=error \
                 script@0.2.0"
            ),
            format!(
                "npm install --prefix {c}/npm/@scope/tool@2.0.0 --no-audit --no-fund \
                 --loglevel=error @scope/tool@2.0.0"
            ),
        ]
    );
    let json = peers_json(&cache);
    // tool's product version is its package version; script's is read from its package.
    assert_eq!(json["tool"]["version"], "2.0.0");
    assert_eq!(
        json["tool"]["command"][0],
        format!("{c}/npm/@scope/tool@2.0.0/node_modules/@scope/tool/bin/tool")
    );
    assert_eq!(json["script"]["version"], "9.0.2.0");
    assert_eq!(json.as_object().unwrap().len(), 2, "{json}");
    let out = peers(
        &stubs,
        &manifest,
        &cache,
        &["path", "tool", "--version", "tool=2.0.0"],
    );
    assert_eq!(stdout(&out), format!("{c}/npm/@scope/tool@2.0.0\n"));
    // The pinned version is not installed by that.
    let out = peers(&stubs, &manifest, &cache, &["path", "tool"]);
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn a_peer_that_cannot_be_installed_is_skipped_loudly_and_the_others_install() {
    let (_dir, manifest, cache) = setup();
    let stubs = Stubs::new();
    stubs.npm_that_fails();
    stubs.python();
    // No `node`: even an installed script peer could not run.
    let out = peers(&stubs, &manifest, &cache, &["install"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    for peer in ["script@0.1.0", "@scope/tool@1.2.3"] {
        let line = format!(
            "SKIPPED: could not install {peer} from npm: `npm` exit status: 1: code ECONNREFUSED | \
             FetchError: request to https://registry.npmjs.org/x failed\n"
        );
        assert!(err.contains(&line), "{line}\nnot in:\n{err}");
    }
    assert!(
        err.ends_with("SKIPPED: 2 peer(s) could not be installed (above)\n"),
        "{err}"
    );
    let json = peers_json(&cache);
    assert_eq!(
        json.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["runtime"]
    );
    // Nothing is left of the failed installs.
    assert!(!cache.join("npm/@scope/tool@1.2.3").exists());
    assert!(!cache.join("npm/script@0.1.0").exists());
}

#[test]
fn with_no_peer_installed_there_is_no_peers_json_and_the_exit_is_still_0() {
    let (_dir, manifest, cache) = setup();
    let stubs = Stubs::new(); // neither npm nor python3
    std::fs::create_dir_all(&cache).unwrap();
    std::fs::write(cache.join("peers.json"), "{}").unwrap(); // an old one
    let out = peers(&stubs, &manifest, &cache, &["install"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(
            "SKIPPED: could not install rt-bin==0.2.1rc2 from PyPI: `python3` is not installed \
             (not on PATH)\n"
        ),
        "{err}"
    );
    assert!(
        err.contains(
            "SKIPPED: could not install @scope/tool@1.2.3 from npm: `npm` is not installed (not \
             on PATH)\n"
        ),
        "{err}"
    );
    assert!(
        err.ends_with("SKIPPED: no real peer could be installed; nothing to run\n"),
        "{err}"
    );
    assert!(!cache.join("peers.json").exists());
}

#[test]
fn a_malformed_manifest_or_an_unknown_peer_is_a_usage_error_at_its_place() {
    let (_dir, manifest, cache) = setup();
    let stubs = Stubs::new();
    std::fs::write(
        &manifest,
        MANIFEST.replace("registry = \"pypi\"", "registry = \"conda\""),
    )
    .unwrap();
    let out = peers(&stubs, &manifest, &cache, &["install"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}:27:12: unknown variant `conda`, expected `npm` or `pypi`\n",
            manifest.display()
        )
    );
    std::fs::write(&manifest, MANIFEST).unwrap();
    let out = peers(&stubs, &manifest, &cache, &["install", "--only", "nope"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {} names no peer `nope` (it names: runtime, script, tool)\n",
            manifest.display()
        )
    );
    assert!(stubs.calls().is_empty());
}

/// Today's command lines (what `ci/peers` wrote before the manifest), from `ci/peers.toml` and
/// install folders laid out by hand: nothing is installed, every peer is found cached.
#[test]
fn the_manifest_gives_todays_peers_json() {
    let manifest = manifest();
    let cache = tempfile::tempdir().unwrap();
    let c = cache.path();
    let binaries = [
        (
            "dsh-sdk",
            "deepseek_harness_runtime/runtime/deepseek-harness-sdk-runtime-linux-x64",
        ),
        (
            "acp-example",
            "node_modules/@agentclientprotocol/sdk/dist/examples/agent.js",
        ),
        (
            "codex-0.147.0",
            "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        ),
        (
            "codex-0.169.0",
            "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        ),
        (
            "codex-0.171.0",
            "node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex",
        ),
        (
            "gemini-cli",
            "node_modules/@google/gemini-cli/bundle/gemini.js",
        ),
        ("qwen-code", "node_modules/@qwen-code/qwen-code/cli.js"),
        (
            "codex-acp",
            "node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp",
        ),
        (
            "claude-code",
            "node_modules/@anthropic-ai/claude-agent-sdk-linux-x64/claude",
        ),
        (
            "claude-agent-acp",
            "node_modules/@agentclientprotocol/claude-agent-acp/dist/index.js",
        ),
    ];
    let mut bin = BTreeMap::new();
    for (name, rel) in binaries {
        let spec = &manifest.peers[name];
        let dir = install_dir(c, spec, &spec.version);
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        std::fs::write(
            dir.join(MARKER),
            format!(
                "{} {}@{}\n",
                spec.registry.dir_name(),
                spec.package,
                spec.version
            ),
        )
        .unwrap();
        bin.insert(name, path.display().to_string());
    }
    let sdk = install_dir(c, &manifest.peers["claude-code"], "0.3.220")
        .join("node_modules/@anthropic-ai/claude-agent-sdk");
    std::fs::create_dir_all(&sdk).unwrap();
    std::fs::write(
        sdk.join("package.json"),
        r#"{"claudeCodeVersion": "2.1.220"}"#,
    )
    .unwrap();

    let stubs = Stubs::new();
    stubs.node();
    let out = conform()
        .env("PATH", stubs.path())
        .args(["peers", "install", "--peers"])
        .arg(c)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "nothing to install, nothing to warn of");
    for d in [
        "npm/@agentclientprotocol/sdk@0.25.1",
        "npm/@agentclientprotocol/claude-agent-acp@0.101.0",
        "npm/@anthropic-ai/claude-agent-sdk@0.3.220",
        "npm/@openai/codex@0.147.0",
        "npm/@openai/codex@0.169.0",
        "npm/@openai/codex@0.171.0",
        "npm/@google/gemini-cli@0.61.0",
        "npm/@qwen-code/qwen-code@0.24.4",
        "npm/@zed-industries/codex-acp@0.16.0",
        "pypi/deepseek-harness-runtime-bin@0.2.1rc2",
    ] {
        assert!(c.join(d).is_dir(), "{d}: not the layout the manifest gives");
    }
    let config = "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\n\n[model_providers.mock]\n\
                  name = \"mock\"\nbase_url = \"{model}/v1\"\nwire_api = \"responses\"\n\
                  env_key = \"MOCK_MODEL_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n";
    let codex = |name: &str, version: &str| {
        json!({
            "version": version,
            "command": [bin[name], "app-server"],
            "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
                    "CODEX_HOME": "{run_dir}/codex-home", "MOCK_MODEL_KEY": "mock-model-key"},
            "files": {"{run_dir}/home/.keep": "", "{run_dir}/codex-home/config.toml": config},
        })
    };
    assert_eq!(
        peers_json(c),
        json!({
            "dsh-sdk": {
                "version": "0.2.1rc2",
                "command": [bin["dsh-sdk"], "--profile", "sdk"],
                "env": {"DSH_HOME": "{run_dir}/dsh-home", "HOME": "{run_dir}/home",
                        "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "DEEPSEEK_BASE_URL": "{model}", "DEEPSEEK_API_KEY": "mock-model-key",
                        "PKG_NATIVE_CACHE_PATH": "{unpacked}"},
                "files": {"{run_dir}/dsh-home/.keep": "", "{run_dir}/home/.keep": ""},
            },
            "acp-example": {
                "version": "0.25.1",
                "command": ["node", bin["acp-example"]],
                "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin"},
                "files": {"{run_dir}/home/.keep": ""},
            },
            "codex-0.147.0": codex("codex-0.147.0", "0.147.0"),
            "codex-0.169.0": codex("codex-0.169.0", "0.169.0"),
            "codex-0.171.0": codex("codex-0.171.0", "0.171.0"),
            "codex-acp": {
                "version": "0.16.0",
                "command": [bin["codex-acp"]],
                "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "CODEX_HOME": "{run_dir}/codex-home", "MOCK_MODEL_KEY": "mock-model-key"},
                "files": {"{run_dir}/home/.keep": "", "{run_dir}/codex-home/config.toml": config},
            },
            "claude-code": {
                "version": "2.1.220",
                "command": [bin["claude-code"]],
                "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "ANTHROPIC_BASE_URL": "{model}", "ANTHROPIC_API_KEY": "mock-model-key",
                        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "0"},
                "files": {"{run_dir}/home/.keep": ""},
            },
            "claude-agent-acp": {
                "version": "0.101.0",
                "command": ["node", bin["claude-agent-acp"]],
                "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "IS_SANDBOX": "1",
                        "ANTHROPIC_BASE_URL": "{model}", "ANTHROPIC_API_KEY": "mock-model-key",
                        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1",
                        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                        "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "0"},
                "files": {"{run_dir}/home/.keep": ""},
            },
            "gemini-cli": {
                "version": "0.61.0",
                "command": ["node", bin["gemini-cli"], "--acp", "--model", "gemini-2.5-pro"],
                "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "GEMINI_API_KEY": "mock-model-key", "GOOGLE_GEMINI_BASE_URL": "{model}"},
                "files": {"{run_dir}/home/.gemini/settings.json":
                    "{\"privacy\": {\"usageStatisticsEnabled\": false}, \"general\": {\"enableAutoUpdate\": false}}\n"},
            },
            "qwen-code": {
                "version": "0.24.4",
                "command": ["node", bin["qwen-code"], "--acp"],
                "env": {"HOME": "{run_dir}/home", "PATH": "/usr/local/bin:/usr/bin:/bin",
                        "QWEN_CODE_NO_RELAUNCH": "true", "OPENAI_API_KEY": "mock-model-key",
                        "OPENAI_BASE_URL": "{model}/v1", "OPENAI_MODEL": "qwen3-coder-plus"},
                "files": {"{run_dir}/home/.qwen/settings.json":
                    "{\"privacy\": {\"usageStatisticsEnabled\": false}, \"general\": {\"enableAutoUpdate\": false}, \"memory\": {\"enableManagedAutoMemory\": false, \"enableManagedAutoDream\": false}}\n"},
            },
        })
    );
}

/// A peer's `deadline_ms` (from the manifest, through `peers.json`) is the deadline of its runs
/// whose scenario sets none: here 1200 ms instead of the suite's 20 s, for a "runtime" that
/// never answers.
#[test]
fn a_peers_deadline_cuts_its_runs_off() {
    let peers = tempfile::tempdir().unwrap();
    std::fs::write(
        peers.path().join("peers.json"),
        r#"{"dsh-sdk": {"version": "x", "command": ["/bin/sleep", "600"], "deadline_ms": 1200}}"#,
    )
    .unwrap();
    let report = peers.path().join("r.json");
    let out = {
        let _slot = common::Slot::take();
        conform()
            .args(["run", "--filter", "peers/dsh-sdk/success", "--peers"])
            .arg(peers.path())
            .arg("--json")
            .arg(&report)
            .output()
            .unwrap()
    };
    // Which deadline cut the run off is read from the detail, never from a clock: the suite's
    // 20 s would name 20000 ms.
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let cases = report["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for case in cases {
        let detail = case["detail"].as_str().unwrap();
        // In background, a run cut off while the parent's job_output waits is that delivery's
        // failure (checks::subject): which one depends on whether the wait had begun.
        assert!(
            detail.contains("[subject.deadline] the run did not finish within 1200 ms")
                || (case["mode"] == "background"
                    && detail.contains(
                        "job_output was asked for and never answered within the run's deadline (1200 ms"
                    )),
            "{detail}"
        );
    }
}
