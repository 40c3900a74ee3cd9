//! Files written whole or not at all: the one way the package writer and a Source's
//! directory put a file in place.
//!
//! The bytes go to a temporary file beside the target (a rename is atomic only within one
//! file system), which is synced to disk and then renamed to the target: a reader sees the
//! old file or the new one, never part of one, and a crash leaves no half-written target.
//! Until then the temporary file is removed if the [`AtomicFile`] is dropped or fails.
//!
//! ```
//! use std::io::Write;
//! use resourcesync_package::atomic::{AtomicFile, DirectorySync};
//!
//! let dir = tempfile::tempdir()?;
//! let target = dir.path().join("a.xml");
//! let mut file = AtomicFile::beside(&target)?;
//! file.write_all(b"<urlset/>")?;
//! assert!(!target.exists());
//! file.replace(DirectorySync::Now)?;
//! assert_eq!(std::fs::read(&target)?, b"<urlset/>");
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// When the directory that holds the target is synced, which makes the rename itself
/// durable (the file's bytes are synced before the rename either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DirectorySync {
    /// Before the call returns: the file is there after a crash.
    Now,
    /// By the caller, who syncs the directories of many renames at once.
    ByCaller,
}

/// A file being written to a temporary file beside its target, and put in place whole by
/// [`replace`](AtomicFile::replace) or [`persist_new`](AtomicFile::persist_new). See the
/// [module](self).
///
/// The file is readable as any file the program creates (mode 0666 less the umask on
/// Unix), not owner-only as tempfile makes its files: what is written is published, and
/// a web server often runs as another user.
pub struct AtomicFile {
    temp: tempfile::NamedTempFile,
    target: PathBuf,
}

impl std::fmt::Debug for AtomicFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AtomicFile")
            .field("target", &self.target)
            .field("temp", &self.temp.path())
            .finish()
    }
}

impl AtomicFile {
    /// A temporary file in `target`'s directory (which must exist), named
    /// `.resourcesync-*.tmp`: hidden, so that neither `serve` nor a walk of the directory
    /// takes it for a resource.
    pub fn beside(target: &Path) -> io::Result<AtomicFile> {
        let mut builder = tempfile::Builder::new();
        // tempfile creates its files owner-only (0600), and a rename keeps that mode;
        // asking for 0666 lets the process's umask decide, as it would for any file the
        // program creates (0644 under the usual 022).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(fs::Permissions::from_mode(0o666));
        }
        let temp = builder
            .prefix(".resourcesync-")
            .suffix(".tmp")
            .tempfile_in(directory_of(target))?;
        Ok(AtomicFile {
            temp,
            target: target.to_path_buf(),
        })
    }

    /// The path the file goes to.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// The temporary file, to write to.
    pub fn as_file_mut(&mut self) -> &mut fs::File {
        self.temp.as_file_mut()
    }

    /// Syncs the file and renames it over the target, replacing whatever is there (never
    /// changing it in place: it may be a hard link another generation shares). Returns
    /// the target.
    pub fn replace(self, sync: DirectorySync) -> io::Result<PathBuf> {
        self.temp.as_file().sync_all()?;
        self.temp.persist(&self.target).map_err(|e| e.error)?;
        sync_directory(&self.target, sync)?;
        Ok(self.target)
    }

    /// Syncs the file and renames it to the target, which must not exist: an error of
    /// kind [`AlreadyExists`](io::ErrorKind::AlreadyExists) if it does, and nothing
    /// replaced. Returns the target.
    pub fn persist_new(self, sync: DirectorySync) -> io::Result<PathBuf> {
        self.temp.as_file().sync_all()?;
        self.temp
            .persist_noclobber(&self.target)
            .map_err(|e| e.error)?;
        sync_directory(&self.target, sync)?;
        Ok(self.target)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.temp.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.temp.as_file_mut().write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.temp.flush()
    }
}

/// The directory that holds `target`: its parent, or the current directory for a bare
/// name.
fn directory_of(target: &Path) -> &Path {
    target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Makes a rename to `target` durable by syncing its directory, when asked. Windows cannot
/// open a directory as a file, and does not need to.
fn sync_directory(target: &Path, sync: DirectorySync) -> io::Result<()> {
    #[cfg(unix)]
    if sync == DirectorySync::Now {
        fs::File::open(directory_of(target))?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = (target, sync);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn replace_overwrites_and_persist_new_refuses_an_existing_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("a");
        fs::write(&target, "old").unwrap();
        let mut file = AtomicFile::beside(&target).unwrap();
        file.write_all(b"new").unwrap();
        let e = file.persist_new(DirectorySync::Now).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read(&target).unwrap(), b"old");
        assert_eq!(names(dir.path()), ["a"]);
        let mut file = AtomicFile::beside(&target).unwrap();
        file.write_all(b"new").unwrap();
        assert_eq!(file.replace(DirectorySync::ByCaller).unwrap(), target);
        assert_eq!(fs::read(&target).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["a"]);
    }

    #[test]
    fn a_dropped_file_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut file = AtomicFile::beside(&dir.path().join("a")).unwrap();
        file.write_all(b"x").unwrap();
        drop(file);
        assert!(names(dir.path()).is_empty());
    }
}
