//! What `conform peers diff`, `record` and `coverage` found, in the words they print (stdout).

use std::fmt::Write as _;

use crate::differential::{
    CaseDiff, CoverageReport, DiffProgress, DiffReport, UnsentKind, rebuild_first,
};

/// What the differential found on the way, as its line(s), said when it is found.
pub(super) fn progress(found: &DiffProgress) -> String {
    match found {
        DiffProgress::Unbuilt {
            peer,
            provider,
            version,
            scenarios,
        } => rebuild_first(peer, *provider, version, *scenarios),
        DiffProgress::Reused { id, age_s } => format!(
            "{id}: the wire `conform run --peers` kept {age_s} s ago (same peer, scenario and conform; --rerun runs it again)"
        ),
        DiffProgress::NotInstalled { id } => {
            format!("{id}: not recorded (the peer is not installed?)")
        }
        DiffProgress::Timing { id, timing } => format!("{id}: {timing}"),
        DiffProgress::Refused { id, why } => format!("{id}: {why}; its wire is not recorded"),
        DiffProgress::FixtureWritten { id, path } => {
            format!("{id}: fixture written ({})", path.display())
        }
        DiffProgress::NoFixtureYet { id, path } => format!(
            "{id}: no fixture yet at {} (--update writes it)",
            path.display()
        ),
        DiffProgress::ChangedSinceFixture { id, path, changes } => {
            let mut out = format!(
                "{id}: the real wire changed since its fixture {} (review; --update keeps it):",
                path.display()
            );
            for c in changes {
                let _ = write!(out, "\n  {c}");
            }
            out
        }
    }
}

/// `conform peers diff`'s verdict: each case's differences, kept (with the explanation) or
/// not, the stale explanations, and the counts.
pub(super) fn diff(r: &DiffReport) -> String {
    let mut out = String::new();
    for case in &r.cases {
        match case {
            CaseDiff::NotRecorded { id, why } => {
                let _ = writeln!(out, "\n{id}: {why}; not compared");
            }
            CaseDiff::NoRealWire { id, error } => {
                let _ = writeln!(
                    out,
                    "\n{id}: no recorded real wire ({error}); run `ci/peers`"
                );
            }
            CaseDiff::AnalogDidNotRun { id, analog } => {
                let _ = writeln!(out, "\n{id}: the analog `{analog}` did not run");
            }
            CaseDiff::Judged {
                id,
                peer,
                analog,
                differences,
            } => {
                let _ = writeln!(out, "\n{id} (real `{peer}`) vs {analog} (fake):");
                if differences.is_empty() {
                    out.push_str("  no difference\n");
                }
                for (d, reason) in differences {
                    let _ = match reason {
                        Some(reason) => writeln!(out, "  kept: {d}\n        ({reason})"),
                        None => writeln!(out, "  ✗ {d}"),
                    };
                }
            }
        }
    }
    for e in &r.stale {
        let field = e
            .field
            .as_ref()
            .map(|f| format!(", field `{f}`"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "\nstale explanation (no such difference any more; remove it): peer `{}`, kind `{}`{field}",
            e.peer, e.kind,
        );
    }
    let _ = writeln!(
        out,
        "\n{} unexplained difference(s), {} stale explanation(s)",
        r.unexplained(),
        r.stale.len()
    );
    if r.drafts > 0 {
        let _ = writeln!(
            out,
            "{} draft explanation(s) await review (write the reason, then remove `draft = true`)",
            r.drafts
        );
    }
    if r.recorded && !r.stale.is_empty() {
        out.push_str(
            "(stale explanations are judged against the committed fixtures: `conform peers diff`)\n",
        );
    }
    if r.unbuilt > 0 {
        let _ = writeln!(out, "{} peer(s) not compared (above)", r.unbuilt);
    }
    out
}

/// `conform peers coverage`'s verdict: each kind no fake sent, kept (with its reason) or not,
/// the stale listings, and what the catalog sends per provider.
pub(super) fn coverage(r: &CoverageReport) -> String {
    let mut out = String::new();
    for UnsentKind {
        provider,
        kind,
        peers,
        reason,
    } in &r.unsent
    {
        let peers = peers.join(", ");
        let _ = match reason {
            Some(reason) => writeln!(
                out,
                "kept: {provider} `{kind}` (real: {peers}) is sent by no scenario\n      ({reason})"
            ),
            None => writeln!(
                out,
                "✗ {provider}: the real runtimes send `{kind}` ({peers}); no scenario makes a fake send it"
            ),
        };
    }
    for u in &r.stale {
        let _ = writeln!(
            out,
            "✗ stale: `[[unsent]]` {} `{}` lists a kind the catalog sends now, or no fixture holds (remove it)",
            u.provider, u.kind
        );
    }
    for p in &r.providers {
        let _ = writeln!(
            out,
            "{}: the catalog sends {} of the {} kinds of frame the real fixtures hold",
            p.provider, p.sent, p.all
        );
    }
    let _ = writeln!(
        out,
        "{} kind(s) unsent and unexplained or listed stale",
        r.failed()
    );
    out
}
