//! A vendored schema bundle as `build.rs` digested it: cut into pieces (each top-level member
//! of the file, and each definition), each a compact JSON text parsed only when a closure
//! ([`crate::schema::closure`]) first needs it. A fake checks the few frames of one run: parsing
//! the whole bundle (0.25–0.8 MB) at its first frame was most of what a Codex fake cost.

use std::sync::OnceLock;

use serde_json::Value;

/// What [`crate::schema::closure`] reads a bundle through: the value at a JSON pointer.
pub(crate) trait Lookup {
    fn lookup(&self, pointer: &str) -> Option<&Value>;
}

impl Lookup for Value {
    fn lookup(&self, pointer: &str) -> Option<&Value> {
        self.pointer(pointer)
    }
}

/// A bundle as `build.rs` wrote it: each piece's JSON pointer in the bundle (sorted) and
/// where its text lies in `text`.
#[derive(Clone, Copy)]
pub struct Digest {
    pub table: &'static [(&'static str, u32, u32)],
    pub text: &'static str,
}

include!(concat!(env!("OUT_DIR"), "/digests.rs"));

/// One bundle's pieces, each parsed the first time it is looked up.
pub(crate) struct Pieces {
    digest: Digest,
    /// Applied to each piece as it is parsed (the Claude Code schema's widened definitions).
    patch: fn(&str, &mut Value),
    parsed: OnceLock<Box<[OnceLock<Value>]>>,
}

impl Pieces {
    pub(crate) const fn new(digest: Digest, patch: fn(&str, &mut Value)) -> Pieces {
        Pieces {
            digest,
            patch,
            parsed: OnceLock::new(),
        }
    }

    /// The piece at exactly `pointer` (`/definitions/Foo`), parsed on first use.
    fn piece(&self, pointer: &str) -> Option<&Value> {
        let table = self.digest.table;
        let i = table.binary_search_by(|(p, _, _)| (*p).cmp(pointer)).ok()?;
        let slots = self
            .parsed
            .get_or_init(|| table.iter().map(|_| OnceLock::new()).collect());
        Some(slots[i].get_or_init(|| {
            let (p, start, end) = table[i];
            let text = &self.digest.text[start as usize..end as usize];
            let mut v: Value = serde_json::from_str(text)
                .unwrap_or_else(|e| panic!("the digested schema's {p} is not JSON: {e}"));
            (self.patch)(p, &mut v);
            v
        }))
    }

    /// A patch that changes nothing.
    pub(crate) fn unpatched(_: &str, _: &mut Value) {}
}

impl Lookup for Pieces {
    /// The value at `pointer`: inside the piece it starts with (a container of pieces, such as
    /// `/definitions` whole, is no value here).
    fn lookup(&self, pointer: &str) -> Option<&Value> {
        let ends = pointer
            .match_indices('/')
            .map(|(i, _)| i)
            .skip(1)
            .chain([pointer.len()]);
        for end in ends {
            if let Some(piece) = self.piece(&pointer[..end]) {
                return piece.pointer(&pointer[end..]);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::closure_in;

    /// Each digest beside the file it was cut from, where its definitions sit, and its groups.
    fn bundles() -> Vec<(Digest, &'static str, &'static str, &'static [&'static str])> {
        let mut all: Vec<(Digest, &str, &str, &[&str])> = vec![
            (
                ACP_V1,
                include_str!("../schemas/acp-v1.schema.json"),
                "$defs",
                &[],
            ),
            (
                CODEX_0_147_0,
                include_str!("../schemas/codex/0.147.0.schemas.json"),
                "definitions",
                &["v2"],
            ),
            (
                CODEX_0_169_0,
                include_str!("../schemas/codex/0.169.0.schemas.json"),
                "definitions",
                &["v2"],
            ),
            (
                CLAUDE_CODE_0_3_220,
                include_str!("../schemas/claude-code/0.3.220.schema.json"),
                "definitions",
                &[],
            ),
        ];
        for p in crate::codex::profile::PROFILES {
            let path = format!(
                "{}/schemas/codex/{}.schemas.json",
                env!("CARGO_MANIFEST_DIR"),
                p.version
            );
            let text = std::fs::read_to_string(path).expect("the profile's bundle");
            all.push((p.schema, text.leak(), "definitions", &["v2"]));
        }
        all
    }

    /// What a check compiles from a digest is what it compiled from the whole file: every
    /// piece, and the closure of every definition, in the file's own member order (compared as
    /// text: a map's equality ignores its order).
    #[test]
    fn a_digest_reads_as_the_file_it_was_cut_from() {
        for (digest, text, key, groups) in bundles() {
            let whole: Value = serde_json::from_str(text).expect("JSON");
            let pieces = Pieces::new(digest, Pieces::unpatched);
            assert!(!digest.table.is_empty());
            for (pointer, _, _) in digest.table {
                let piece = pieces.lookup(pointer).expect("a piece");
                assert_eq!(
                    serde_json::to_string(piece).unwrap(),
                    serde_json::to_string(&whole.pointer(pointer).unwrap()).unwrap(),
                    "{pointer}"
                );
                // Inside a piece too.
                if let Some((member, inner)) = piece.as_object().and_then(|m| m.iter().next()) {
                    let at = format!("{pointer}/{}", member.replace('~', "~0").replace('/', "~1"));
                    assert_eq!(pieces.lookup(&at), Some(inner), "{at}");
                }
                if pointer.starts_with(&format!("/{key}/")) {
                    let at = format!("#{pointer}");
                    let from_pieces = closure_in(&pieces, &at, key, groups);
                    let from_whole = closure_in(&whole, &at, key, groups);
                    assert_eq!(
                        from_pieces.map(|v| serde_json::to_string(&v).unwrap()),
                        from_whole.map(|v| serde_json::to_string(&v).unwrap()),
                        "{at}"
                    );
                }
            }
            // A container of pieces is no value of its own; what the file lacks is absent.
            assert_eq!(pieces.lookup(&format!("/{key}")), None);
            assert_eq!(pieces.lookup("/no/such/thing"), None);
        }
    }
}
