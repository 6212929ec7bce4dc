//! Where commands write: stdout (a reader that went away is no error) and report files opened
//! before anything runs.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cmd::Error;

/// Writes `text` to stdout. A reader that went away (`conform list | head -1`) is not an
/// error: the rest of the output is simply not wanted.
pub fn out(text: &str) -> Result<(), Error> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Stdout(e)),
    }
}

/// A report file opened before the run, so that an unwritable path is found before anything
/// runs. It is only truncated when the report is written; if the run ends without a report,
/// a file the open created is removed again (on drop).
pub struct ReportFile {
    path: PathBuf,
    file: Option<File>,
    created: bool,
}

impl ReportFile {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let existed = path.symlink_metadata().is_ok();
        match File::options()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
        {
            Ok(file) => Ok(Self {
                path: path.to_owned(),
                file: Some(file),
                created: !existed,
            }),
            Err(source) => Err(Error::Write {
                path: path.to_owned(),
                source,
            }),
        }
    }

    /// Opens each path given (`None` stays `None`); one that cannot be opened discards the
    /// ones opened before it.
    pub fn open_all<const N: usize>(
        paths: [Option<&Path>; N],
    ) -> Result<[Option<ReportFile>; N], Error> {
        let mut files: [Option<ReportFile>; N] = std::array::from_fn(|_| None);
        for (slot, path) in files.iter_mut().zip(paths) {
            *slot = path.map(ReportFile::open).transpose()?;
        }
        Ok(files)
    }

    pub fn write(mut self, contents: &[u8]) -> Result<(), Error> {
        let mut file = self.file.take().expect("written once");
        // Not for `/dev/stdout` or a pipe, which cannot be truncated.
        let regular = file.metadata().is_ok_and(|m| m.is_file());
        let written = (if regular { file.set_len(0) } else { Ok(()) })
            .and_then(|()| file.write_all(contents))
            .and_then(|()| file.flush());
        written.map_err(|source| Error::Write {
            path: self.path.clone(),
            source,
        })
    }
}

impl Drop for ReportFile {
    /// A report never written leaves no file the open created.
    fn drop(&mut self) {
        if self.file.is_some() && self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
