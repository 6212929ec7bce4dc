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

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}
