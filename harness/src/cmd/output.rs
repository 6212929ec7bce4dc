//! Where commands write: stdout (a reader that went away is no error) and report files opened
//! before anything runs.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
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

/// A report file checked before the run, so that an unwritable path is found before anything
/// runs, and written whole or not at all: to a temporary file beside it, renamed over the path
/// once complete. Nothing is created at the path before then, so a harness killed mid-suite
/// (SIGKILL runs no cleanup) leaves no empty or partial report. A path that is not a regular
/// file (`/dev/stdout`, a FIFO) cannot be renamed over: it is opened at once and written in
/// place.
pub struct ReportFile {
    path: PathBuf,
    target: Target,
}

enum Target {
    /// A regular file (or none yet): written by rename.
    Replace,
    /// Not a regular file: written in place.
    InPlace(File),
}

impl ReportFile {
    pub fn open(path: &Path) -> Result<Self, Error> {
        let fail = |source| Error::Write {
            path: path.to_owned(),
            source,
        };
        let special = std::fs::metadata(path).is_ok_and(|m| !m.is_file());
        let target = if special {
            Target::InPlace(File::options().write(true).open(path).map_err(fail)?)
        } else {
            // Proves the folder takes the temporary file; it is removed again at once.
            temporary_beside(&real_path(path)).map_err(fail)?;
            Target::Replace
        };
        Ok(Self {
            path: path.to_owned(),
            target,
        })
    }

    /// Opens each path given (`None` stays `None`).
    pub fn open_all<const N: usize>(
        paths: [Option<&Path>; N],
    ) -> Result<[Option<ReportFile>; N], Error> {
        let mut files: [Option<ReportFile>; N] = std::array::from_fn(|_| None);
        for (slot, path) in files.iter_mut().zip(paths) {
            *slot = path.map(ReportFile::open).transpose()?;
        }
        Ok(files)
    }

    pub fn write(self, contents: &[u8]) -> Result<(), Error> {
        self.write_with(|out| out.write_all(contents))
    }

    /// Writes what `fill` writes, through a buffer: a large report is written as it is made,
    /// never held whole as one text beside the value it is made from.
    pub fn write_with(
        self,
        fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<(), Error> {
        let written = match self.target {
            Target::InPlace(file) => buffered(file, fill).map(drop),
            Target::Replace => replace(&real_path(&self.path), fill),
        };
        written.map_err(|source| Error::Write {
            path: self.path.clone(),
            source,
        })
    }
}

/// `fill` written to `file` through a buffer, flushed; the file back.
fn buffered<F: Write>(
    file: F,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<F> {
    let mut out = std::io::BufWriter::new(file);
    fill(&mut out)?;
    out.into_inner()
        .map_err(std::io::IntoInnerError::into_error)
}

/// Where a report at `path` really goes: through a symlink to its target (a rename would
/// replace the link itself).
fn real_path(path: &Path) -> PathBuf {
    let link = path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    match link.then(|| std::fs::canonicalize(path)) {
        Some(Ok(target)) => target,
        _ => path.to_owned(),
    }
}

/// A new temporary file in `path`'s folder, named after it.
fn temporary_beside(path: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    // A report replacing a file keeps its mode; a new one gets what a plain create would
    // (0666 less the umask, which the kernel applies), not a temporary file's 0600.
    let mode = std::fs::metadata(path).map_or(0o666, |m| m.permissions().mode() & 0o7777);
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)
}

/// Writes what `fill` writes to a temporary file beside `path`, then renames it over `path`.
fn replace(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = buffered(temporary_beside(path)?, fill)?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_appears_only_whole_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        let file = ReportFile::open(&path).unwrap();
        assert!(
            !path.exists(),
            "nothing at the path before the report is written"
        );
        file.write(b"{}").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }

    #[test]
    fn an_old_report_stays_until_the_new_one_is_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(&path, "old").unwrap();
        let file = ReportFile::open(&path).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        file.write(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
    }

    #[test]
    fn a_report_gets_the_mode_a_plain_create_would() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("plain");
        File::create(&plain).unwrap();
        let path = dir.path().join("report.json");
        ReportFile::open(&path).unwrap().write(b"{}").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain));
        // A report replacing a file keeps that file's mode.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        ReportFile::open(&path).unwrap().write(b"{}").unwrap();
        assert_eq!(mode(&path), 0o640);
    }

    #[test]
    fn an_unwritable_folder_is_found_at_open() {
        let missing = Path::new("/nonexistent-conform-folder/report.json");
        assert!(ReportFile::open(missing).is_err());
    }
}
