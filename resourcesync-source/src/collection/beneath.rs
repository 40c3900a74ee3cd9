//! The collection's files and directories opened beneath it, through no symbolic link at
//! any level: what the walk, a list, the hashing and the Resource Dump read.
//!
//! A path the walk found, or a list names, is text; between the moment it was found and
//! the moment it is opened, any directory on it may have been replaced by a link to
//! elsewhere, and a list may name a link (or a path through a linked directory) in the
//! first place. Opened by path, the link is followed and the bytes it reaches are hashed,
//! listed and packed into the published Resource Dump: a disclosure of whatever the
//! publisher's user can read. The walk publishes no link; nothing else may either.
//!
//! The collection is a [`cap_std::fs::Dir`], the one sandbox of the workspace (the
//! Destination's directory, `serve`'s publication and the publish directory's generations
//! are too). cap-std alone resolves a path beneath its directory but follows a link that
//! stays inside it (`RESOLVE_BENEATH` without `RESOLVE_NO_SYMLINKS`, and `FollowSymlinks::No`
//! is for the last name only), so the path is opened one name at a time: each directory
//! with [`DirExt::open_dir_nofollow`] from the one before it, the last name with
//! `FollowSymlinks::No`. Each of those is one `openat2` (`RESOLVE_BENEATH`, `O_NOFOLLOW`)
//! where the kernel has it, cap-std's own name-by-name resolution where it does not. A link
//! on the way is [`io::ErrorKind::NotFound`] with [`LINKED`] as its message: to the walk
//! and the hashing, as if the file had been deleted (it is no file of the collection any
//! more); to a list, an error naming the entry.

use super::*;
use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};

/// The message of the error a link on the way is.
pub(super) const LINKED: &str =
    "a symbolic link on the way: only the collection's own files are published";

/// The collection, opened once: its own path is followed as the caller gave it (a
/// collection that is itself a link is the caller's choice); below it, nothing is.
#[derive(Debug)]
pub(super) struct Collection {
    path: PathBuf,
    dir: Dir,
}

impl Collection {
    /// Opens the collection at `path`.
    pub(super) fn open(path: &Path) -> io::Result<Collection> {
        // The caller's own path: ambient authority, as given.
        let dir = Dir::open_ambient_dir(path, cap_std::ambient_authority())?;
        Ok(Collection {
            path: path.to_owned(),
            dir,
        })
    }

    /// The collection's path, as given.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `relative` of the collection (empty: the collection), for listing:
    /// readable, where [`DirExt::open_dir_nofollow`]'s handle (`O_PATH`) is only a place
    /// to open from.
    #[cfg(unix)]
    pub(super) fn open_dir(&self, relative: &Path) -> io::Result<std::os::fd::OwnedFd> {
        use cap_std::fs::OpenOptionsExt;
        let mut options = OpenOptions::new();
        options.read(true).custom_flags(libc::O_DIRECTORY);
        let dir = self.open_beneath(relative, &mut options)?;
        Ok(dir.into_std().into())
    }

    /// The file `relative` of the collection, for reading, if it is a regular file now
    /// (anything else is `NotFound`: as if it had been deleted). Opened without waiting
    /// (`O_NONBLOCK`, which changes nothing for a regular file's reads): a FIFO put in
    /// its place would wait for a writer for ever.
    pub(super) fn open_file(&self, relative: &Path) -> io::Result<File> {
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        {
            use cap_std::fs::OpenOptionsExt;
            // Nor, a terminal, made the controlling one.
            options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let file = self.open_beneath(relative, &mut options)?.into_std();
        let file_type = file.metadata()?.file_type();
        if file_type.is_symlink() {
            // Opened as itself where the system opens a link that way (Windows).
            return Err(io::Error::new(io::ErrorKind::NotFound, LINKED));
        }
        if !file_type.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no longer a regular file",
            ));
        }
        Ok(file)
    }

    /// Opens `relative` with `options`, refusing a link at any level and any name that
    /// leaves the collection (`..`, a root).
    fn open_beneath(
        &self,
        relative: &Path,
        options: &mut OpenOptions,
    ) -> io::Result<cap_std::fs::File> {
        use std::path::Component;
        let mut names = Vec::new();
        for part in relative.components() {
            match part {
                Component::Normal(name) => names.push(name),
                Component::CurDir => {}
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::NotFound,
                        "a name outside the collection",
                    ));
                }
            }
        }
        options.follow(FollowSymlinks::No);
        let Some((last, parents)) = names.split_last() else {
            return self.dir.open_with(".", options);
        };
        let mut dir: Option<Dir> = None;
        for name in parents {
            let at = dir.as_ref().unwrap_or(&self.dir);
            let next = at
                .open_dir_nofollow(name)
                .map_err(|e| not_followed(at, name, e))?;
            dir = Some(next);
        }
        let at = dir.as_ref().unwrap_or(&self.dir);
        at.open_with(last, options)
            .map_err(|e| not_followed(at, last, e))
    }
}

/// The error of opening `name` of `dir` without following it, as the opening reports it:
/// [`LINKED`] if a link is there (`ELOOP`; or `ENOTDIR`, which a link opened as a
/// directory is on some systems, told apart by looking at it).
fn not_followed(dir: &Dir, name: &std::ffi::OsStr, e: io::Error) -> io::Error {
    #[cfg(unix)]
    if e.raw_os_error() == Some(libc::ELOOP) {
        return io::Error::new(io::ErrorKind::NotFound, LINKED);
    }
    if e.kind() != io::ErrorKind::NotFound
        && dir
            .symlink_metadata(name)
            .is_ok_and(|m| m.file_type().is_symlink())
    {
        return io::Error::new(io::ErrorKind::NotFound, LINKED);
    }
    e
}

/// Whether `error` is a link met on the way ([`LINKED`]).
pub(super) fn is_linked(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound
        && error.get_ref().is_some_and(|e| e.to_string() == LINKED)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Every way out through a link is refused, at the last name as at a directory on
    /// the way, for a file as for a listing.
    #[test]
    fn no_link_is_followed_at_any_level() {
        let root = tempfile::tempdir().unwrap();
        let (coll, outside) = (root.path().join("coll"), root.path().join("outside"));
        fs::create_dir_all(coll.join("dir/sub")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), "secret").unwrap();
        fs::write(coll.join("dir/own"), "own").unwrap();
        fs::write(coll.join("dir/sub/deep"), "deep").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), coll.join("file-link")).unwrap();
        std::os::unix::fs::symlink(&outside, coll.join("dir-link")).unwrap();
        std::os::unix::fs::symlink("own", coll.join("dir/inner-link")).unwrap();
        std::os::unix::fs::symlink("dir", coll.join("inner-dir-link")).unwrap();
        std::os::unix::fs::symlink("sub", coll.join("dir/inner-sub-link")).unwrap();
        let collection = Collection::open(&coll).unwrap();
        for (path, expected) in [("dir/own", "own"), ("./dir/sub/deep", "deep")] {
            let mut text = String::new();
            collection
                .open_file(Path::new(path))
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, expected);
        }
        for path in [
            "file-link",
            "dir-link/secret",
            "dir/inner-link",
            "inner-dir-link/own",
            "dir/inner-sub-link/deep",
            "inner-dir-link/sub/deep",
        ] {
            let e = collection.open_file(Path::new(path)).unwrap_err();
            assert!(is_linked(&e), "{path}: {e}");
        }
        for path in ["dir-link", "inner-dir-link", "dir/inner-sub-link"] {
            let e = collection.open_dir(Path::new(path)).unwrap_err();
            assert!(is_linked(&e), "{path}: {e}");
        }
        for path in ["", "dir", "dir/sub"] {
            assert!(collection.open_dir(Path::new(path)).is_ok(), "{path}");
        }
        for path in [
            "../outside/secret",
            "/etc/passwd",
            "dir/../../outside/secret",
        ] {
            let e = collection.open_file(Path::new(path)).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::NotFound, "{path}: {e}");
            assert!(!is_linked(&e), "{path}: {e}");
        }
        // A directory is no file; a name that is not there is not a link.
        let e = collection.open_file(Path::new("dir")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let e = collection.open_file(Path::new("dir/none")).unwrap_err();
        assert!(e.kind() == io::ErrorKind::NotFound && !is_linked(&e), "{e}");
    }
}
