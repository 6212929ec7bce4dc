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
