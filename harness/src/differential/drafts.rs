//! `conform peers record <peer>`: a peer's wires recorded over its fixtures, and a draft
//! explanation for each kind of frame whose differences nothing explains yet.

use std::collections::BTreeMap;
use std::path::Path;

use super::diff::{DiffOptions, DiffProgress, keep_wires, run_peers};
use super::error::DifferentialError;
use super::wire::{PeerCase, peer_cases, refusal, run_analogs, wire_of};
use super::{Explained, compare, schema_rejections};

/// `conform peers record <peer>`: the peer's scenarios recorded from its installed runtime over
/// its fixtures, then a draft explanation for each kind of frame whose differences from the
/// fakes nothing explains yet, appended to `<fixtures>/<peer>/differences.toml` for a person to
/// review (a draft explains nothing until then). Returns how many drafts were written; what
/// the recording finds on the way is told to `progress`.
pub async fn record_peer(
    opts: DiffOptions,
    peer: &str,
    progress: &mut dyn FnMut(DiffProgress),
) -> Result<usize, DifferentialError> {
    let dir = opts.peers.clone().ok_or(DifferentialError::NoPeersDir)?;
    let cases: Vec<PeerCase> = peer_cases(&opts.scenarios)?
        .into_iter()
        .filter(|c| c.peer == peer)
        .collect();
    if cases.is_empty() {
        return Err(DifferentialError::NothingToRecord(peer.to_owned()));
    }
    let explained = Explained::load_all(&opts.fixtures)?;
    let opts = DiffOptions {
        update: true,
        rerun: true,
        ..opts
    };
    // A failed run is no recording of the real wire: nothing is written or drafted from any
    // run until every one of them stands.
    let runs = run_peers(&opts, &cases, &dir, progress).await?;
    let refused: Vec<String> = cases
        .iter()
        .filter_map(|c| {
            Some(format!(
                "{}: {}",
                c.id,
                refusal(runs.get(&c.id)?, c.provider)?
            ))
        })
        .collect();
    if !refused.is_empty() {
        return Err(DifferentialError::Refused {
            peer: peer.to_owned(),
            refused,
        });
    }
    let (fresh, _) = keep_wires(&opts, &cases, &runs, &explained, progress)?;
    let fakes = run_analogs(&opts, &cases).await?;
    let mut open: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for case in &cases {
        let (Some(real), Some(fake)) = (
            fresh.get(&case.id),
            fakes.get(&(case.analog.clone(), case.version.clone())),
        ) else {
            continue;
        };
        let fake = wire_of(case.provider, fake);
        let mut diffs = compare(case.provider, real, &fake, &explained.leave(peer));
        diffs.extend(schema_rejections(
            case.provider,
            case.version.as_deref(),
            real,
        ));
        for d in diffs
            .into_iter()
            .filter(|d| explained.reason(peer, &case.id, d).is_none())
        {
            open.entry(d.key().0)
                .or_default()
                .push(format!("{}: {d}", case.id));
        }
    }
    write_drafts(&opts.fixtures.join(peer).join(super::FILE), peer, open)
}

/// Appends one draft entry per kind to a peer's explanations file.
fn write_drafts(
    path: &Path,
    peer: &str,
    open: BTreeMap<String, Vec<String>>,
) -> Result<usize, DifferentialError> {
    #[derive(serde::Serialize)]
    struct Draft<'a> {
        peer: &'a str,
        kind: String,
        draft: bool,
        reason: String,
    }
    #[derive(serde::Serialize)]
    struct File<'a> {
        difference: Vec<Draft<'a>>,
    }
    let drafts: Vec<Draft> = open
        .into_iter()
        .map(|(kind, seen)| Draft {
            peer,
            kind,
            draft: true,
            reason: format!(
                "TO REVIEW — why the fake may differ here, or close it in the fakes. Seen: {}",
                seen.join(" | ")
            ),
        })
        .collect();
    let n = drafts.len();
    if n == 0 {
        return Ok(0);
    }
    let text = toml::to_string(&File { difference: drafts })?;
    let head = if path.is_file() {
        String::new()
    } else {
        format!(
            "# Differences between the real `{peer}` and the fakes, kept on purpose (see\n# ../differences.toml for the format). Drafts from `conform peers record {peer}`.\n\n"
        )
    };
    std::fs::create_dir_all(path.parent().expect("a peer folder"))
        .map_err(DifferentialError::Write)?;
    let written = |source| DifferentialError::WriteDrafts {
        path: path.to_owned(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(written)?;
    std::io::Write::write_all(&mut f, format!("{head}{text}").as_bytes()).map_err(written)?;
    Ok(n)
}
