//! Files a person writes (scenarios, baselines): what is wrong with one is said at its file,
//! line and column.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// A file that cannot be read, or says something it may not, at the place it says it.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {size} bytes, over the limit of {limit} bytes for {what}")]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
        what: &'static str,
    },
    #[error("{path}:{line}:{column}: {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

impl InputError {
    /// `path` could not be read.
    pub fn io(path: &Path, source: std::io::Error) -> InputError {
        InputError::Io {
            path: path.to_owned(),
            source,
        }
    }

    /// `text` (of `path`) is wrong at the start of `span` (its first character without one).
    pub fn invalid(path: &Path, text: &str, span: Option<Range<usize>>, message: String) -> Self {
        let (line, column) = span.map_or((1, 1), |s| line_col(text, s.start));
        InputError::Invalid {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    }
}

/// The text of `path`, refused unread past `limit` bytes: a person's file is small, and one
/// that is not must cost neither the memory nor the time of parsing it.
pub fn read_bounded(path: &Path, limit: u64, what: &'static str) -> Result<String, InputError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| InputError::io(path, e))?;
    let too_large = |size| InputError::TooLarge {
        path: path.to_owned(),
        size,
        limit,
        what,
    };
    // The size a file says it has, and what reading it gives (a FIFO says 0), both bounded.
    let said = file.metadata().map_err(|e| InputError::io(path, e))?.len();
    if said > limit {
        return Err(too_large(said));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| {
        InputError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
        )
    })
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
/// Does `name` match `pattern`, where `*` stands for any run of characters (none included)?
/// How a person writes a class of names in a file: a peer's program in the manifest
/// (`vendor/*/bin/codex`), a class of differences in an explanation (`codex-*`, `*Ms`).
pub fn wildcard(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty(); // no `*` at all
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_matches_any_run_of_characters() {
        assert!(wildcard("*", ""));
        assert!(wildcard("*", "abc"));
        assert!(wildcard("a*c", "abbbc"));
        assert!(wildcard("a*c", "ac"));
        assert!(!wildcard("a*c", "abcd"));
        assert!(wildcard("*-linux-*", "codex-linux-x64"));
        assert!(!wildcard("ab*ba", "aba"));
        assert!(!wildcard("abc", "abcd"));
        assert!(wildcard("abc", "abc"));
        // Classes of differences (`differences.toml`).
        assert!(wildcard("codex-*", "codex-0.171.0"));
        assert!(wildcard("*Ms", "emittedAtMs"));
        assert!(wildcard(".*error*=", ".api_error_status="));
        assert!(!wildcard("*Ms", "emittedAtMsX"));
        assert!(!wildcard("codex-*", "codex"));
    }
}
