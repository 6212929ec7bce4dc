//! Versions in order, semver-ish: dot-separated numbers compared as numbers (`0.3.99` before
//! `0.3.220`), and a pre-release — after a `-` (`1.2.0-rc.1`) or glued on as PyPI writes it
//! (`0.2.1rc2`) — before its release. Build metadata (`+…`) and a leading `v` are ignored.

use std::cmp::Ordering;

/// Whether `candidate` is older than `pinned`: trying it is a downgrade.
pub fn is_downgrade(pinned: &str, candidate: &str) -> bool {
    compare(candidate, pinned) == Ordering::Less
}

pub fn compare(a: &str, b: &str) -> Ordering {
    let (a, b) = (Parsed::of(a), Parsed::of(b));
    let width = a.release.len().max(b.release.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    (0..width)
        .map(|i| at(&a.release, i).cmp(&at(&b.release, i)))
        .find(|o| o.is_ne())
        .unwrap_or_else(|| match (&a.pre, &b.pre) {
            (None, None) => Ordering::Equal,
            // A release comes after its pre-releases.
            (None, Some(_)) => Ordering::Greater,
            (Some(_), None) => Ordering::Less,
            (Some(x), Some(y)) => x.cmp(y),
        })
}

struct Parsed {
    release: Vec<u64>,
    pre: Option<Vec<Piece>>,
}

/// A run of a pre-release's digits or of its other characters; numbers before words (as
/// semver ranks numeric identifiers below alphanumeric ones), numbers by value.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Piece {
    Number(u64),
    Word(String),
}

impl Parsed {
    fn of(v: &str) -> Parsed {
        let v = v.trim().trim_start_matches('v');
        let v = v.split_once('+').map_or(v, |(v, _build)| v);
        let split = v
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(v.len());
        let (release, pre) = v.split_at(split);
        let release = release
            .split('.')
            .filter(|p| !p.is_empty())
            .map(|p| p.parse().unwrap_or(u64::MAX))
            .collect();
        let pre = pre.trim_start_matches(['-', '.', '_']);
        Parsed {
            release,
            pre: (!pre.is_empty()).then(|| pieces(pre)),
        }
    }
}

fn pieces(pre: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut rest = pre;
    while let Some(c) = rest.chars().next() {
        if ".-_".contains(c) {
            rest = &rest[1..];
            continue;
        }
        let digits = c.is_ascii_digit();
        let end = rest
            .find(|x: char| x.is_ascii_digit() != digits || ".-_".contains(x))
            .unwrap_or(rest.len());
        let (run, after) = rest.split_at(end);
        out.push(if digits {
            Piece::Number(run.parse().unwrap_or(u64::MAX))
        } else {
            Piece::Word(run.to_ascii_lowercase())
        });
        rest = after;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_numbers_with_pre_releases_first() {
        let ordered = [
            "0.2.1a1",
            "0.2.1rc1",
            "0.2.1rc2",
            "0.2.1",
            "0.3.99",
            "0.3.220",
            "0.3.336",
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "1.0.1",
            "1.10.0",
        ];
        for pair in ordered.windows(2) {
            assert_eq!(compare(pair[0], pair[1]), Ordering::Less, "{pair:?}");
            assert_eq!(compare(pair[1], pair[0]), Ordering::Greater, "{pair:?}");
        }
        assert_eq!(compare("1.2", "1.2.0"), Ordering::Equal);
        assert_eq!(compare("v1.2.0+build.7", "1.2.0"), Ordering::Equal);
        // By text, 0.3.99 would come after 0.3.220.
        assert!(is_downgrade("0.3.220", "0.3.99"));
        assert!(is_downgrade("2.1.220", "2.1.220-rc.1"));
        assert!(!is_downgrade("0.3.220", "0.3.336"));
        assert!(!is_downgrade("0.2.1rc2", "0.2.1"));
    }
}
