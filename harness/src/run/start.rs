//! The subject's `start` for one run: the runtime it is to spawn (the fake with its script, or
//! a real peer behind its proxy), how that command is wrapped (a launcher, the run's cgroup),
//! the working directory, the provider's configuration and the runtime's environment.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use conform_protocol::subject::{Mode, Runtime, ToSubject};
use serde_json::{Map, Value, json};

use crate::proc::run_id::RunId;
use crate::proc::settle::{ENV_MARK, Mark};
use crate::run::Ctx;
use crate::run::observed::rfc3339_ms;
use crate::scenario::{CwdKind, RuntimeKind, Scenario};

/// Writes what the run's runtime reads into the run's folder and builds its `start`.
pub fn start_message(
    ctx: &Ctx,
    scenario: &Scenario,
    mode: Mode,
    run: &RunId,
    expected_in: Duration,
    cgroup: Option<&Path>,
) -> std::io::Result<ToSubject> {
    let dir = ctx.work.join(run.as_str());
    std::fs::create_dir_all(&dir)?;
    let (argv, peer_env) = runtime_argv(ctx, scenario, run, &dir)?;
    // The fake that registers with exactly these arguments is handed the script (a peer's
    // proxy runs none); nothing the subject can write stands in for it.
    let script = scenario.file.peer.is_none().then(|| script(ctx, scenario));
    ctx.side.issue(run, argv[1..].to_vec(), script);
    let argv = wrapped(ctx, scenario, argv, &dir, cgroup);
    let subject = &scenario.file.subject;
    Ok(ToSubject::Start {
        run: run.to_string(),
        provider: scenario.file.provider,
        mode,
        label: scenario.label().to_owned(),
        task: scenario.file.task.clone(),
        runtime: Runtime {
            command: argv[0].clone(),
            args: argv[1..].to_vec(),
            env: environment(ctx, scenario, run, peer_env),
            cwd: working_directory(subject.cwd, &dir)?,
        },
        config: scenario.file.subject.provider_config(),
        expected_by: rfc3339_ms(SystemTime::now() + expected_in),
        aborted: scenario.aborted_before_start(),
    })
}

/// The runtime's command line before any wrapper, and the environment a real peer needs:
/// the fake, or the peer proxy in front of a real runtime.
fn runtime_argv(
    ctx: &Ctx,
    scenario: &Scenario,
    run: &RunId,
    dir: &Path,
) -> std::io::Result<(Vec<String>, BTreeMap<String, String>)> {
    let provider = &scenario.file.provider;
    let mut argv = ctx.fake_argv.clone();
    if let (Some(peer), Some((peers, model))) = (&scenario.file.peer, &ctx.peers) {
        let entry = peers.entries.get(&peer.name).ok_or_else(|| {
            std::io::Error::other(format!("peer `{}` is not installed", peer.name))
        })?;
        let url = match &peer.model {
            Some(behaviour) => format!("{model}/{behaviour}"),
            None => model.clone(),
        };
        let (peer_argv, env) =
            crate::proc::peers::prepare(entry, &peer.name, &peers.dir, dir, &url)?;
        argv.extend([
            "peer-proxy".into(),
            "--side".into(),
            path_str(ctx.side.path()),
            "--run".into(),
            run.to_string(),
            "--protocol".into(),
            provider.to_string(),
            "--".into(),
        ]);
        argv.extend(peer_argv);
        return Ok((argv, env));
    }
    argv.extend(["fake".to_owned(), provider.to_string()]);
    argv.extend([
        "--side".into(),
        path_str(ctx.side.path()),
        "--run".into(),
        run.to_string(),
    ]);
    // The provider appends the product's own flags after these (Claude Code's CLI).
    if conform_fakes::protocols::codec_for(*provider).takes_runtime_args() {
        argv.push("--".into());
    }
    Ok((argv, BTreeMap::new()))
}

/// The fake's script, in the product version the suite asked its fake to speak.
fn script(ctx: &Ctx, scenario: &Scenario) -> Value {
    let mut script = scenario.script.script();
    if let Some(v) = ctx.settings.product_version(scenario.file.provider) {
        script.product_version = Some(v.clone());
    }
    serde_json::to_value(&script).expect("a script is JSON")
}

/// The command as the scenario's runtime kind has it (missing, behind a launcher), then, in
/// the strong mode, behind `conform cgroup-exec`.
fn wrapped(
    ctx: &Ctx,
    scenario: &Scenario,
    mut argv: Vec<String>,
    dir: &Path,
    cgroup: Option<&Path>,
) -> Vec<String> {
    let runtime = scenario.file.subject.runtime;
    match runtime {
        RuntimeKind::Fake => {}
        RuntimeKind::MissingBinary => {
            argv[0] = path_str(&dir.join("no-such-dir").join("missing-runtime"));
        }
        RuntimeKind::Launched => {
            // `; exit $?` keeps the shell from exec'ing the fake in its place.
            let launcher = ["/bin/sh", "-c", "\"$@\"; exit $?", "sh"];
            argv.splice(0..0, launcher.map(str::to_owned));
        }
    }
    // In the strong mode the runtime joins its cgroup first, then becomes what it would have
    // been (one exec, same pid). A command that does not exist stays one: its spawn failure
    // is the case.
    if let Some(dir) = cgroup
        && runtime != RuntimeKind::MissingBinary
    {
        let wrapper = [
            ctx.exe.clone(),
            "cgroup-exec".into(),
            path_str(dir),
            "--".into(),
        ];
        argv.splice(0..0, wrapper);
    }
    argv
}

/// The working directory the scenario gives the runtime (made when it is to exist).
fn working_directory(kind: CwdKind, dir: &Path) -> std::io::Result<String> {
    Ok(match kind {
        CwdKind::Workspace => {
            let ws = dir.join("workspace");
            std::fs::create_dir_all(&ws)?;
            path_str(&ws)
        }
        CwdKind::Missing => path_str(&dir.join("missing-workspace")),
        CwdKind::Relative => "relative/workspace".to_owned(),
        CwdKind::File => {
            let f = dir.join("not-a-directory");
            std::fs::write(&f, b"")?;
            path_str(&f)
        }
    })
}

/// The runtime's environment: a peer's, the scenario's, and the run's mark — inherited by
/// everything the runtime starts, whatever its arguments (`settle::Mark`); `null` unsets.
fn environment(
    ctx: &Ctx,
    scenario: &Scenario,
    run: &RunId,
    peer_env: BTreeMap<String, String>,
) -> Map<String, Value> {
    let subject = &scenario.file.subject;
    let mark = Mark {
        side: path_str(ctx.side.path()),
        run: run.clone(),
    };
    peer_env
        .iter()
        .chain(subject.env.iter())
        .map(|(k, v)| (k.clone(), json!(v)))
        .chain(std::iter::once((
            ENV_MARK.to_owned(),
            json!(mark.env_value()),
        )))
        .chain(subject.env_unset.iter().map(|k| (k.clone(), Value::Null)))
        .collect::<BTreeMap<_, _>>()
        .into_iter()
        .collect()
}

pub fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
