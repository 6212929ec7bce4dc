//! What a leak of a secret may look like, derived once per secret: every run matches the same
//! secrets (a scenario's untrusted strings, the parent token, the harness's own credentials)
//! against its texts twice (the redaction check, then the snapshot's guard), and deriving
//! their forms — encodings, NFKC, separators folded — cost more than matching them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{FIXED_PHRASES, MIN_COMPACT_CHARS, MIN_DERIVED_CHARS};
use crate::checks::forms::{self, Form};

/// A form of a secret to look for, and what the matching reads of it.
#[derive(Debug)]
pub(super) struct Needle {
    pub form: Form,
    pub text: String,
    /// Looks for `text` in a text (as `str::contains` does, its searcher built once).
    finder: memchr::memmem::Finder<'static>,
    /// It is the whole secret (not one of its lines).
    pub whole: bool,
    /// Part of a phrase every provider shows by contract: it proves nothing when it appears.
    pub fixed: bool,
    /// Its separators folded ([`forms::fold_separators`]), when it holds one and what is left
    /// is long enough to be looked for across the diagnostic and the output.
    pub folded: Option<String>,
    /// Compacted and normalised, when long enough to be looked for with the separators between
    /// texts gone.
    pub compact: Option<String>,
    /// The hash of each of its windows ([`forms::window_hashes`]), for a needle short enough to
    /// keep them (a long one is hashed where it is looked for).
    pub window_hashes: Option<Vec<u64>>,
}

impl Needle {
    fn new(form: Form, text: String, whole: bool) -> Needle {
        let folded = text
            .chars()
            .any(forms::is_separator)
            .then(|| forms::fold_separators(&text))
            .filter(|f| f.trim().chars().count() >= MIN_DERIVED_CHARS);
        let compact = Some(forms::normalized(&forms::compact(&text)))
            .filter(|c| c.chars().count() >= MIN_COMPACT_CHARS);
        let window_hashes = (text.len() <= MAX_HASHED_BYTES).then(|| forms::window_hashes(&text));
        Needle {
            finder: memchr::memmem::Finder::new(text.as_bytes()).into_owned(),
            window_hashes,
            fixed: FIXED_PHRASES.iter().any(|p| p.contains(text.as_str())),
            form,
            text,
            whole,
            folded,
            compact,
        }
    }

    /// Is the needle in `text`?
    pub fn in_text(&self, text: &str) -> bool {
        self.finder.find(text.as_bytes()).is_some()
    }

    fn bytes(&self) -> usize {
        // The finder keeps a copy of the text, and its tables.
        2 * self.text.len()
            + 256
            + self.folded.as_ref().map_or(0, String::len)
            + self.compact.as_ref().map_or(0, String::len)
            + self.window_hashes.as_ref().map_or(0, |h| h.len() * 8)
    }
}

/// The needles of `secret`, the same on every call: each of its forms whole, then each line of
/// it. A secret of the catalog or the environment is derived once (`cache`); the run's own
/// folder, new every run, is not kept.
pub(super) fn of(secret: &str, cache: bool) -> Arc<[Needle]> {
    if !cache {
        return derive(secret).into();
    }
    if let Some(n) = CACHE.lock().unwrap_or_else(|e| e.into_inner()).get(secret) {
        return n.clone();
    }
    let needles: Arc<[Needle]> = derive(secret).into();
    let mut c = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    c.put(secret, &needles);
    needles
}

/// What a leak of `secret` may look like: each of its forms whole, then each line of it (a CR
/// or LF inside a secret may be where a provider splits it). Encoded forms shorter than the
/// secret's own floor are left out (a short encoding meets other text by chance).
fn derive(secret: &str) -> Vec<Needle> {
    let floor = secret
        .chars()
        .count()
        .min(MIN_DERIVED_CHARS)
        .min(forms::normalized(secret).chars().count());
    let mut out: Vec<Needle> = forms::encoded(secret)
        .into_iter()
        .filter(|(form, t)| *form == Form::Raw || t.chars().count() >= floor)
        .map(|(form, t)| Needle::new(form, t, true))
        .collect();
    if secret.contains(['\r', '\n']) {
        for line in secret.split(['\r', '\n']) {
            if line.chars().count() >= MIN_DERIVED_CHARS {
                out.extend(
                    forms::encoded(line)
                        .into_iter()
                        .filter(|(_, t)| t.chars().count() >= MIN_DERIVED_CHARS)
                        .map(|(form, t)| Needle::new(form, t, false)),
                );
            }
        }
    }
    out
}

/// The needles derived so far, bounded: a run asks for each of its secrets twice, and most of
/// them are other runs' too (the parent token, the harness's own environment, a prelude's
/// strings); past the bound the cache starts over.
static CACHE: Mutex<Cache> = Mutex::new(Cache {
    map: None,
    bytes: 0,
});

/// What the cache holds at most, in bytes of needle text and window hashes.
const CACHE_BYTES: usize = 1 << 20;

/// The longest needle whose window hashes are kept.
const MAX_HASHED_BYTES: usize = 512;

struct Cache {
    map: Option<HashMap<String, Arc<[Needle]>, fnv::FnvBuildHasher>>,
    bytes: usize,
}

impl Cache {
    fn get(&self, secret: &str) -> Option<&Arc<[Needle]>> {
        self.map.as_ref()?.get(secret)
    }

    fn put(&mut self, secret: &str, needles: &Arc<[Needle]>) {
        let size = secret.len() + needles.iter().map(Needle::bytes).sum::<usize>();
        if self.bytes + size > CACHE_BYTES {
            self.map = None;
            self.bytes = 0;
        }
        if size > CACHE_BYTES {
            return;
        }
        self.bytes += size;
        self.map
            .get_or_insert_with(HashMap::default)
            .insert(secret.to_owned(), needles.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cached_secret_has_the_needles_derived_afresh() {
        for secret in [
            "sk-live-4f9a8b7c6d5e",
            "two words\r\nthen a line of its own",
            "ｓｋ-li\u{200B}ve-and-more-than-sixteen",
            "short",
        ] {
            let fresh = derive(secret);
            let cached = of(secret, true);
            let again = of(secret, true);
            assert!(Arc::ptr_eq(&cached, &again), "derived once");
            assert_eq!(format!("{fresh:?}"), format!("{cached:?}"));
        }
    }
}
