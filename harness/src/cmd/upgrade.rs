//! `conform upgrade <peer>@<version>`: installs the candidate beside the pinned version (both
//! cached), gives each a peers folder of its own under `<cache>/upgrade/` (the cache's
//! `peers.json` stays as it was), runs the comparison ([`crate::differential::upgrade`]) and
//! writes its report.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{PeersCacheArgs, UpgradeArgs};
use crate::cmd::{Error, block_on, code};
use crate::differential::upgrade::{self, Side, UpgradeOptions};
use crate::proc::peers::install::{self, Outcome, Request};
use crate::proc::peers::manifest::Manifest;
use crate::settings::default_dir;

pub fn exec(args: UpgradeArgs) -> Result<ExitCode, Error> {
    let (asked, version) = args.target;
    let cache_args = PeersCacheArgs {
        manifest: args.manifest,
        peers: args.peers,
        versions: Vec::new(),
    };
    let (manifest, cache, _) = crate::cmd::peers::open(cache_args, Vec::new())?;
    let peer = resolve(&manifest, &asked)?;
    crate::proc::peers::manifest::check_version(&version)
        .map_err(|why| Error::Usage(format!("{asked}@{version}: {why}")))?;
    let spec = manifest.get(&peer).map_err(Error::Usage)?;
    if version == spec.version {
        return Err(Error::Usage(format!(
            "{version} is the version `{peer}` is pinned to (ci/peers.toml): name another"
        )));
    }
    let work = cache.join("upgrade").join(format!("{peer}@{version}"));
    println!("== upgrade `{peer}`: {} → {version}", spec.version);
    let pinned = side(
        &manifest,
        &cache,
        &peer,
        &spec.version,
        &work.join("pinned"),
    )?;
    let candidate = side(&manifest, &cache, &peer, &version, &work.join("candidate"))?;
    let opts = UpgradeOptions {
        diff: crate::differential::DiffOptions {
            scenarios: default_dir("scenarios"),
            snapshots: default_dir("snapshots"),
            fixtures: default_dir("fakes").join("peers"),
            peers: None,
            update: false,
            filters: args.filter,
            deadline: args.deadline_ms.map(std::time::Duration::from_millis),
            jobs: args.jobs.map(|j| j as usize),
        },
        peer,
        pinned,
        candidate,
    };
    let report = block_on(upgrade::upgrade(&opts))?.map_err(Error::Usage)?;
    let text = upgrade::markdown(&report);
    println!("\n{text}");
    for dir in std::iter::once(&work).chain(args.out.as_ref()) {
        write_report(dir, &text, &report)?;
        println!("report: {}", dir.join("upgrade.md").display());
    }
    Ok(code(report.exit_code()))
}

/// The manifest's peer for `asked`: its own name, else the one peer of that product (or
/// package) — of several, the one whose version the fakes speak by default.
fn resolve(manifest: &Manifest, asked: &str) -> Result<String, Error> {
    if manifest.peers.contains_key(asked) {
        return Ok(asked.to_owned());
    }
    let of: Vec<(&String, _)> = manifest
        .peers
        .iter()
        .filter(|(_, s)| s.product.as_str() == asked || s.package == asked)
        .collect();
    let by_default = || {
        of.iter().find(|(_, s)| {
            crate::suite::schedule::speaks(s.product, None).ends_with(s.pinned_product_version())
        })
    };
    match of.as_slice() {
        [(name, _)] => Ok((*name).clone()),
        [_, _, ..] if by_default().is_some() => Ok(by_default().expect("found").0.clone()),
        _ => Err(Error::Usage(format!(
            "`{asked}` is no peer of the manifest (peers: {})",
            manifest
                .peers
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// One side: `peer` at package `version` installed (cached), and a peers folder whose
/// `peers.json` names it alone.
fn side(
    manifest: &Manifest,
    cache: &Path,
    peer: &str,
    version: &str,
    dir: &Path,
) -> Result<Side, Error> {
    let spec = manifest.get(peer).map_err(Error::Usage)?;
    let mut log = std::io::stderr();
    if let Outcome::Skipped(why) = install::install_one(cache, spec, version, &mut log) {
        return Err(Error::Usage(format!("SKIPPED: {why}")));
    }
    let req = Request {
        only: vec![peer.to_owned()],
        versions: [(peer.to_owned(), version.to_owned())].into(),
    };
    let entry = install::entries(manifest, cache, &req, &mut log)
        .remove(peer)
        .ok_or_else(|| Error::Usage(format!("`{peer}` {version} did not install (above)")))?;
    let product_version = entry.version.clone().unwrap_or_else(|| version.to_owned());
    let written = |source| Error::Write {
        path: dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(written)?;
    let json = serde_json::to_string_pretty(&std::collections::BTreeMap::from([(peer, &entry)]))
        .expect("an entry is JSON");
    std::fs::write(dir.join(crate::proc::peers::MANIFEST), json + "\n").map_err(written)?;
    let _ = writeln!(log, "== {peer} {version}: {}", entry.command.join(" "));
    Ok(Side {
        dir: dir.to_owned(),
        version: product_version,
    })
}

fn write_report(dir: &PathBuf, text: &str, report: &upgrade::UpgradeReport) -> Result<(), Error> {
    let written = |source| Error::Write {
        path: dir.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(written)?;
    std::fs::write(dir.join("upgrade.md"), text).map_err(written)?;
    let json = serde_json::to_string_pretty(report).expect("a report is JSON");
    std::fs::write(dir.join("upgrade.json"), json + "\n").map_err(written)?;
    Ok(())
}
