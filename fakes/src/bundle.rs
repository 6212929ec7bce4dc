//! A vendored schema bundle as `build.rs` digested it: cut into pieces (each top-level member
//! of the file, and each definition), each a compact JSON text parsed only when a closure
//! ([`closure`]) needs it, and not kept: a closure owns what it parsed. A fake checks the few
//! frames of one run: parsing the whole bundle (0.25–0.8 MB) at its first frame was most of
//! what a Codex fake cost; and the harness, which compiles a subschema for each kind of frame
//! of the whole catalog, held every piece it had parsed beside what it compiled (3.3 MiB of
//! the Claude Code bundle alone). What every protocol's schema does with a bundle is here too:
//! a subschema's closure, a value checked.

use std::borrow::Cow;

use jsonschema::Validator;
use serde_json::Value;

use crate::error::InvalidFrame;

/// What [`closure`] reads a bundle through: the value at a JSON pointer (a piece is parsed
/// for its caller, who owns it).
pub(crate) trait Lookup {
    fn lookup(&self, pointer: &str) -> Option<Cow<'_, Value>>;
}

impl Lookup for Value {
    fn lookup(&self, pointer: &str) -> Option<Cow<'_, Value>> {
        self.pointer(pointer).map(Cow::Borrowed)
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

/// One bundle's pieces, each parsed when it is looked up.
pub(crate) struct Pieces {
    digest: Digest,
    /// Applied to each piece as it is parsed (the Claude Code schema's widened definitions).
    patch: fn(&str, &mut Value),
}

impl Pieces {
    pub(crate) const fn new(digest: Digest, patch: fn(&str, &mut Value)) -> Pieces {
        Pieces { digest, patch }
    }

    fn index(&self, pointer: &str) -> Option<usize> {
        let table = self.digest.table;
        table.binary_search_by(|(p, _, _)| (*p).cmp(pointer)).ok()
    }

    /// Whether the bundle has a piece at exactly `pointer` (nothing is parsed).
    pub(crate) fn has(&self, pointer: &str) -> bool {
        self.index(pointer).is_some()
    }

    /// The piece at exactly `pointer` (`/definitions/Foo`), parsed.
    fn piece(&self, pointer: &str) -> Option<Value> {
        let (p, start, end) = self.digest.table[self.index(pointer)?];
        let text = &self.digest.text[start as usize..end as usize];
        let mut v: Value = serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("the digested schema's {p} is not JSON: {e}"));
        (self.patch)(p, &mut v);
        Some(v)
    }

    /// A patch that changes nothing.
    pub(crate) fn unpatched(_: &str, _: &mut Value) {}
}

impl Lookup for Pieces {
    /// The value at `pointer`: inside the piece it starts with (a container of pieces, such as
    /// `/definitions` whole, is no value here).
    fn lookup(&self, pointer: &str) -> Option<Cow<'_, Value>> {
        let ends = pointer
            .match_indices('/')
            .map(|(i, _)| i)
            .skip(1)
            .chain([pointer.len()]);
        for end in ends {
            if let Some(mut piece) = self.piece(&pointer[..end]) {
                return piece
                    .pointer_mut(&pointer[end..])
                    .map(|v| Cow::Owned(v.take()));
            }
        }
        None
    }
}

/// Validates `value`, naming `what` and the first few errors (with where they are).
pub(crate) fn check(validator: &Validator, value: &Value, what: &str) -> Result<(), InvalidFrame> {
    let errors: Vec<String> = validator
        .iter_errors(value)
        .take(3)
        .map(|e| {
            let (at, what) = crate::link::where_and_what(&e);
            format!("{what} (at {at})")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(InvalidFrame::Schema {
            what: what.to_owned(),
            errors,
        })
    }
}

/// The subschema at `pointer` as a document of its own: the subschema at the root, and under
/// `definitions` every definition it refers to, directly or not, at the path it has in the
/// bundle (so each `#/definitions/…` reference resolves as before). `groups`: definitions that
/// hold definitions of their own (Codex's `v2`). Compiling a subschema with the whole bundle
/// keeps a copy of all of it per validator. With `link`, a reference that is no union's branch
/// is linked instead ([`crate::link`]): its definition is compiled once, on its own.
pub(crate) fn closure(
    root: &impl Lookup,
    pointer: &str,
    groups: &[&str],
    link: bool,
) -> Option<Value> {
    closure_in(root, pointer, "definitions", groups, link)
}

/// [`closure`] for a bundle whose definitions sit under `key` (`$defs` in draft 2020-12).
pub(crate) fn closure_in(
    root: &impl Lookup,
    pointer: &str,
    key: &str,
    groups: &[&str],
    link: bool,
) -> Option<Value> {
    let prefix = format!("#/{key}/");
    let mut doc = root.lookup(pointer.strip_prefix('#')?)?.into_owned();
    let mut definitions = serde_json::Map::new();
    let refs = |schema: &mut Value| take_refs(schema, &prefix, link);
    // The references of each schema taken in, the last taken in first.
    let mut pending = vec![refs(&mut doc)];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(schema_refs) = pending.pop() {
        for r in schema_refs {
            // A reference names a definition, or a place inside one: the definition whole.
            let Some(path) = r.strip_prefix(prefix.as_str()) else {
                continue;
            };
            let mut segments: Vec<&str> = path.split('/').collect();
            let depth = if segments.first().is_some_and(|g| groups.contains(g)) {
                2
            } else {
                1
            };
            segments.truncate(depth);
            let entry = segments.join("/");
            if !seen.insert(entry.clone()) {
                continue;
            }
            let Some(def) = root.lookup(&format!("/{key}/{entry}")) else {
                continue;
            };
            let mut def = def.into_owned();
            pending.push(refs(&mut def));
            let slot = if depth == 2 {
                definitions
                    .entry("v2")
                    .or_insert_with(|| Value::Object(Default::default()))
                    .as_object_mut()?
                    .entry(segments[1])
                    .or_insert(Value::Null)
            } else {
                definitions.entry(segments[0]).or_insert(Value::Null)
            };
            *slot = def;
        }
    }
    let obj = doc.as_object_mut()?;
    obj.insert(key.into(), Value::Object(definitions));
    Some(doc)
}

/// Every `$ref` string inside `schema` the closure takes the definition of. With `link`, one to
/// a definition (starting with `prefix`) is written as a linked reference instead and not
/// taken, unless it is a branch of a union (`anyOf`, `oneOf`, `allOf`).
fn take_refs(schema: &mut Value, prefix: &str, link: bool) -> Vec<String> {
    const UNIONS: [&str; 3] = ["anyOf", "oneOf", "allOf"];
    let mut out = Vec::new();
    let mut stack = vec![(schema, false)];
    while let Some((v, branch)) = stack.pop() {
        match v {
            Value::Object(m) => {
                if let Some(Value::String(r)) = m.get("$ref") {
                    if link && !branch && r.starts_with(prefix) {
                        let r = m.remove("$ref").expect("just read");
                        m.insert(crate::link::KEYWORD.to_owned(), r);
                    } else {
                        out.push(r.clone());
                    }
                }
                for (k, child) in m.iter_mut() {
                    match (UNIONS.contains(&k.as_str()), child) {
                        (true, Value::Array(branches)) => {
                            stack.extend(branches.iter_mut().map(|b| (b, true)));
                        }
                        (_, child) => stack.push((child, false)),
                    }
                }
            }
            Value::Array(a) => stack.extend(a.iter_mut().map(|x| (x, false))),
            _ => {}
        }
    }
    out
}

/// Holds a digest to the file it was cut from: every piece, and the closure of every
/// definition, in the file's own member order (compared as text: a map's equality ignores its
/// order).
#[cfg(test)]
pub(crate) fn assert_reads_as_its_file(digest: Digest, text: &str, key: &str, groups: &[&str]) {
    let whole: Value = serde_json::from_str(text).expect("JSON");
    let pieces = Pieces::new(digest, Pieces::unpatched);
    assert!(!digest.table.is_empty());
    for (pointer, _, _) in digest.table {
        let piece = pieces.lookup(pointer).expect("a piece");
        assert!(pieces.has(pointer), "{pointer}");
        assert_eq!(
            serde_json::to_string(&piece).unwrap(),
            serde_json::to_string(&whole.pointer(pointer).unwrap()).unwrap(),
            "{pointer}"
        );
        // Inside a piece too.
        if let Some((member, inner)) = piece.as_object().and_then(|m| m.iter().next()) {
            let at = format!("{pointer}/{}", member.replace('~', "~0").replace('/', "~1"));
            assert_eq!(pieces.lookup(&at).as_deref(), Some(inner), "{at}");
        }
        if pointer.starts_with(&format!("/{key}/")) {
            let at = format!("#{pointer}");
            for link in [false, true] {
                let from_pieces = closure_in(&pieces, &at, key, groups, link);
                let from_whole = closure_in(&whole, &at, key, groups, link);
                assert_eq!(
                    from_pieces.map(|v| serde_json::to_string(&v).unwrap()),
                    from_whole.map(|v| serde_json::to_string(&v).unwrap()),
                    "{at}"
                );
            }
        }
    }
    // A container of pieces is no value of its own; what the file lacks is absent.
    assert_eq!(pieces.lookup(&format!("/{key}")), None);
    assert!(!pieces.has(&format!("/{key}")));
    assert_eq!(pieces.lookup("/no/such/thing"), None);
}

/// Each value `v` with one member or item anywhere in it replaced by a number, or a
/// member taken out.
#[cfg(test)]
pub(crate) fn variants(v: &Value) -> Vec<Value> {
    let mut out = vec![v.clone()];
    let mut at = |path: &str, change: &dyn Fn(&mut Value, &str)| {
        let mut changed = v.clone();
        let (parent, last) = path.rsplit_once('/').expect("a path");
        if let Some(p) = changed.pointer_mut(parent) {
            change(p, last);
            out.push(changed);
        }
    };
    let mut paths = Vec::new();
    let mut stack = vec![(String::new(), v)];
    while let Some((path, v)) = stack.pop() {
        match v {
            Value::Object(m) => stack.extend(m.iter().map(|(k, v)| (format!("{path}/{k}"), v))),
            Value::Array(a) => {
                stack.extend(
                    a.iter()
                        .enumerate()
                        .map(|(i, v)| (format!("{path}/{i}"), v)),
                );
            }
            _ => {}
        }
        if !path.is_empty() {
            paths.push(path);
        }
    }
    for path in &paths {
        at(path, &|p, last| match p {
            Value::Object(m) => {
                m.insert(last.to_owned(), serde_json::json!(42));
            }
            Value::Array(a) => a[last.parse::<usize>().unwrap()] = serde_json::json!(42),
            _ => {}
        });
        at(path, &|p, last| {
            if let Value::Object(m) = p {
                m.remove(last);
            }
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each built-in digest beside the file it was cut from, where its definitions sit, and its
    /// groups (the accepted Codex versions' digests are held to theirs in `codex::profile`).
    fn bundles() -> [(Digest, &'static str, &'static str, &'static [&'static str]); 4] {
        [
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
        ]
    }

    /// What a check compiles from a digest is what it compiled from the whole file.
    #[test]
    fn a_digest_reads_as_the_file_it_was_cut_from() {
        for (digest, text, key, groups) in bundles() {
            assert_reads_as_its_file(digest, text, key, groups);
        }
    }
}
