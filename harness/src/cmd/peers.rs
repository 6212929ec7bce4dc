//! `conform peers`: `install` (the manifest's real runtimes into the cache, then its
//! `peers.json`: [`crate::proc::peers::install`]), `path` (where one is installed) and `diff`
//! (the real runtimes' wire against the fakes': [`crate::differential`]).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{
    PeersArgs, PeersCacheArgs, PeersCommand, PeersCoverageArgs, PeersInstallArgs, PeersPathArgs,
    PeersRecordArgs,
};
use crate::cmd::{Error, block_on, code};
use crate::proc::peers::install::{self, InstallError, InstallOutcome, Request};
use crate::proc::peers::manifest::PeerManifest;
use crate::settings::default_dir;
use crate::suite::exit;

mod render;

pub fn exec(command: PeersCommand) -> Result<ExitCode, Error> {
    match command {
        PeersCommand::Diff(args) => diff(args),
        PeersCommand::Install(args) => install(args),
        PeersCommand::Path(args) => path(args),
        PeersCommand::Record(args) => record(args),
        PeersCommand::Coverage(args) => coverage(args),
    }
}

fn diff(args: PeersArgs) -> Result<ExitCode, Error> {
    let opts = crate::differential::DiffOptions {
        scenarios: crate::catalog::default_dir("scenarios")?,
        snapshots: crate::catalog::default_dir("snapshots")?,
        fixtures: args
            .fixtures
            .unwrap_or_else(|| default_dir("fakes").join("peers")),
        peers: args.peers,
        update: args.update,
        rerun: args.rerun,
        filters: args.runs.filter,
        deadline: args.runs.deadline_ms.map(std::time::Duration::from_millis),
        jobs: args.runs.jobs.map(|j| j as usize),
    };
    // What the recording finds is said as it is found: a recording takes minutes.
    let report = block_on(crate::differential::diff(opts, &mut |found| {
        println!("{}", render::progress(&found))
    }))??;
    print!("{}", render::diff(&report));
    Ok(code(report.exit_code()))
}

fn coverage(args: PeersCoverageArgs) -> Result<ExitCode, Error> {
    let opts = crate::differential::CoverageOptions {
        scenarios: crate::catalog::default_dir("scenarios")?,
        snapshots: crate::catalog::default_dir("snapshots")?,
        fixtures: args
            .fixtures
            .unwrap_or_else(|| default_dir("fakes").join("peers")),
        jobs: args.jobs.map(|j| j as usize),
    };
    let report = block_on(crate::differential::coverage(opts))??;
    print!("{}", render::coverage(&report));
    Ok(code(report.exit_code()))
}

fn record(args: PeersRecordArgs) -> Result<ExitCode, Error> {
    let peers = args.peers.or_else(install::default_cache).ok_or_else(|| {
        Error::Usage(format!(
            "no peers folder: give --peers DIR, or set ${}",
            install::CACHE_ENV
        ))
    })?;
    let fixtures = args
        .fixtures
        .unwrap_or_else(|| default_dir("fakes").join("peers"));
    let opts = crate::differential::DiffOptions {
        scenarios: crate::catalog::default_dir("scenarios")?,
        snapshots: crate::catalog::default_dir("snapshots")?,
        fixtures: fixtures.clone(),
        peers: Some(peers),
        update: true,
        // Recording a peer is running it.
        rerun: true,
        filters: Vec::new(),
        deadline: None,
        jobs: None,
    };
    let drafts = block_on(crate::differential::record_peer(
        opts,
        &args.name,
        &mut |found| println!("{}", render::progress(&found)),
    ))??;
    if drafts == 0 {
        println!("recorded; every difference from the fakes is explained");
        return Ok(code(exit::PASS));
    }
    println!(
        "recorded; {drafts} draft explanation(s) written to {} — review each (write its reason or close the difference in the fakes), then remove `draft = true`",
        fixtures.join(&args.name).join("differences.toml").display()
    );
    Ok(code(exit::FAIL))
}

/// The manifest, the cache folder (created, absolute) and the request's versions.
pub(crate) fn open(
    args: PeersCacheArgs,
    only: Vec<String>,
) -> Result<(PeerManifest, PathBuf, Request), Error> {
    let path = args
        .manifest
        .unwrap_or_else(|| default_dir("ci").join("peers.toml"));
    let manifest = PeerManifest::load(&path)?;
    let cache = args.peers.or_else(install::default_cache).ok_or_else(|| {
        Error::Usage(format!(
            "no cache folder: give --peers DIR, or set ${} or $HOME",
            install::CACHE_ENV
        ))
    })?;
    std::fs::create_dir_all(&cache).map_err(|source| Error::Write {
        path: cache.clone(),
        source,
    })?;
    let cache = std::path::absolute(&cache).map_err(|source| Error::Write {
        path: cache.clone(),
        source,
    })?;
    let mut versions = BTreeMap::new();
    for (name, version) in args.versions {
        if let Some(before) = versions.insert(name.clone(), version.clone())
            && before != version
        {
            return Err(Error::Usage(format!(
                "--version {name}=… given twice ({before}, {version})"
            )));
        }
    }
    let req = Request { only, versions };
    install::check_request(&manifest, &req).map_err(|e| Error::Usage(e.to_string()))?;
    Ok((manifest, cache, req))
}

fn install(args: PeersInstallArgs) -> Result<ExitCode, Error> {
    let (manifest, cache, req) = open(args.cache, args.only)?;
    println!("== peers cache: {}", cache.display());
    let done =
        install::install(&manifest, &cache, &req, &mut std::io::stderr()).map_err(|e| match e {
            InstallError::Write { path, source } => Error::Write { path, source },
            bad_request => Error::Usage(bad_request.to_string()),
        })?;
    let skipped = done
        .outcomes
        .iter()
        .filter(|(_, o)| matches!(o, InstallOutcome::Skipped(_)))
        .count();
    let mut err = std::io::stderr();
    match &done.peers_json {
        None => {
            let _ = writeln!(
                err,
                "SKIPPED: no real peer could be installed; nothing to run"
            );
        }
        Some(path) => {
            let names: Vec<String> = done
                .entries
                .iter()
                .map(|(name, e)| match &e.version {
                    Some(v) => format!("{name} ({v})"),
                    None => format!("{name} (product version unknown)"),
                })
                .collect();
            println!("== installed: {}", names.join(", "));
            println!("== wrote {}", path.display());
            if skipped > 0 {
                let _ = writeln!(
                    err,
                    "SKIPPED: {skipped} peer(s) could not be installed (above)"
                );
            }
        }
    }
    Ok(code(exit::PASS))
}

fn path(args: PeersPathArgs) -> Result<ExitCode, Error> {
    let (manifest, cache, req) = open(args.cache, vec![args.name.clone()])?;
    let spec = manifest.get(&args.name)?;
    let version = install::version_of(&args.name, spec, &req);
    let dir = install::install_dir(&cache, spec, version);
    let Some(binary) = install::installed_binary(&dir, spec, version) else {
        let also = if version == spec.version {
            String::new()
        } else {
            format!(" --version {}={version}", args.name)
        };
        eprintln!(
            "peer `{name}` ({}@{version}) is not installed in {} (`conform peers install --only \
             {name}{also}`)",
            spec.package,
            cache.display(),
            name = args.name,
        );
        return Ok(code(exit::FAIL));
    };
    let shown = if args.binary { binary } else { dir };
    println!("{}", shown.display());
    Ok(code(exit::PASS))
}
