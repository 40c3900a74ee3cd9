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
//! On Linux (5.6 and later) one `openat2` from a handle on the collection, with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, refuses a link at any level in the kernel;
//! where `openat2` is missing (an older kernel, a seccomp filter that refuses it), and on
//! other Unix systems, the path is opened one name at a time with `O_NOFOLLOW`. Either
//! way, a link on the way is [`io::ErrorKind::NotFound`] with [`LINKED`] as its message:
//! to the walk and the hashing, as if the file had been deleted (it is no file of the
//! collection any more); to a list, an error naming the entry.

use super::*;
#[cfg(unix)]
use rustix::fd::OwnedFd;

/// The message of the error a link on the way is.
pub(super) const LINKED: &str =
    "a symbolic link on the way: only the collection's own files are published";

/// The collection, opened once: its own path is followed as the caller gave it (a
/// collection that is itself a link is the caller's choice); below it, nothing is.
#[derive(Debug)]
pub(super) struct Collection {
    path: PathBuf,
    #[cfg(unix)]
    handle: OwnedFd,
}

impl Collection {
    /// Opens the collection at `path`.
    pub(super) fn open(path: &Path) -> io::Result<Collection> {
        #[cfg(unix)]
        {
            use rustix::fs::{Mode, OFlags};
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let handle = rustix::fs::open(path, flags, Mode::empty())?;
            Ok(Collection {
                path: path.to_owned(),
                handle,
            })
        }
        #[cfg(not(unix))]
        {
            if !fs::metadata(path)?.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::NotADirectory,
                    "not a directory",
                ));
            }
            Ok(Collection {
                path: path.to_owned(),
            })
        }
    }

    /// The collection's path, as given.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// The directory `relative` of the collection (empty: the collection), for listing.
    #[cfg(unix)]
    pub(super) fn open_dir(&self, relative: &Path) -> io::Result<OwnedFd> {
        use rustix::fs::OFlags;
        self.open_beneath(relative, OFlags::RDONLY | OFlags::DIRECTORY)
    }

    /// The file `relative` of the collection, for reading, if it is a regular file now
    /// (anything else is `NotFound`: as if it had been deleted). Opened without waiting
    /// (`O_NONBLOCK`, which changes nothing for a regular file's reads): a FIFO put in
    /// its place would wait for a writer for ever.
    pub(super) fn open_file(&self, relative: &Path) -> io::Result<File> {
        #[cfg(unix)]
        let file = {
            use rustix::fs::OFlags;
            // Nor, a terminal, made the controlling one.
            let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY;
            File::from(self.open_beneath(relative, flags)?)
        };
        #[cfg(not(unix))]
        let file = {
            // No handle-relative opening here: the path is checked for links first, which
            // leaves the moment between the check and the open.
            let mut path = self.path.clone();
            for part in relative.components() {
                path.push(part);
                if fs::symlink_metadata(&path)?.file_type().is_symlink() {
                    return Err(io::Error::new(io::ErrorKind::NotFound, LINKED));
                }
            }
            File::open(&path)?
        };
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "no longer a regular file",
            ));
        }
        Ok(file)
    }

    /// Opens `relative` with `flags`, refusing a link at any level and any name that
    /// leaves the collection (`..`, a root).
    #[cfg(unix)]
    fn open_beneath(&self, relative: &Path, flags: rustix::fs::OFlags) -> io::Result<OwnedFd> {
        use rustix::fs::{Mode, OFlags};
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
        let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let Some((last, parents)) = names.split_last() else {
            return rustix::fs::openat(&self.handle, ".", flags, Mode::empty()).map_err(linked);
        };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            use rustix::fs::ResolveFlags;
            let resolve =
                ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
            match rustix::fs::openat2(&self.handle, relative, flags, Mode::empty(), resolve) {
                Ok(fd) => return Ok(fd),
                // Not there to use: name by name below.
                Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {}
                // `EAGAIN`: a rename elsewhere on the file system raced the lookup;
                // `ENOTDIR`: a link or a file where a directory was asked for, which the
                // names one by one tell apart.
                Err(rustix::io::Errno::AGAIN | rustix::io::Errno::NOTDIR) => {}
                Err(e) => return Err(linked(e)),
            }
        }
        self.open_by_names(parents, last, flags)
    }

    /// [`open_beneath`](Collection::open_beneath) one name at a time, each opened with
    /// `O_NOFOLLOW` from the directory before it.
    #[cfg(unix)]
    fn open_by_names(
        &self,
        parents: &[&std::ffi::OsStr],
        last: &std::ffi::OsStr,
        flags: rustix::fs::OFlags,
    ) -> io::Result<OwnedFd> {
        use rustix::fs::{Mode, OFlags};
        let mut dir: Option<OwnedFd> = None;
        for name in parents {
            let at = dir.as_ref().unwrap_or(&self.handle);
            let next = rustix::fs::openat(
                at,
                *name,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .map_err(|e| {
                // A link opened with `O_DIRECTORY | O_NOFOLLOW` is `ENOTDIR` on some
                // systems: told apart by looking at it.
                if e == rustix::io::Errno::NOTDIR && is_link(at, name) {
                    io::Error::new(io::ErrorKind::NotFound, LINKED)
                } else {
                    linked(e)
                }
            })?;
            dir = Some(next);
        }
        let at = dir.as_ref().unwrap_or(&self.handle);
        rustix::fs::openat(at, last, flags, Mode::empty()).map_err(|e| {
            if e == rustix::io::Errno::NOTDIR && is_link(at, last) {
                io::Error::new(io::ErrorKind::NotFound, LINKED)
            } else {
                linked(e)
            }
        })
    }
}

/// A system error as the opening reports it: `ELOOP` (a link where `O_NOFOLLOW` or
/// `RESOLVE_NO_SYMLINKS` met one) and `EXDEV` (a name that `RESOLVE_BENEATH` found leaving
/// the collection) are [`LINKED`].
#[cfg(unix)]
fn linked(e: rustix::io::Errno) -> io::Error {
    if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::XDEV {
        io::Error::new(io::ErrorKind::NotFound, LINKED)
    } else {
        io::Error::from(e)
    }
}

/// Whether `name` in `dir` is a symbolic link.
#[cfg(unix)]
fn is_link(dir: &OwnedFd, name: &std::ffi::OsStr) -> bool {
    rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|s| {
        rustix::fs::FileType::from_raw_mode(s.st_mode) == rustix::fs::FileType::Symlink
    })
}

/// Whether `error` is a link met on the way ([`LINKED`]).
pub(super) fn is_linked(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::NotFound
        && error.get_ref().is_some_and(|e| e.to_string() == LINKED)
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// Every way out through a link is refused, name by name as through `openat2`.
    #[test]
    fn no_link_is_followed_at_any_level() {
        let root = tempfile::tempdir().unwrap();
        let (coll, outside) = (root.path().join("coll"), root.path().join("outside"));
        fs::create_dir_all(coll.join("dir")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("secret"), "secret").unwrap();
        fs::write(coll.join("dir/own"), "own").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), coll.join("file-link")).unwrap();
        std::os::unix::fs::symlink(&outside, coll.join("dir-link")).unwrap();
        std::os::unix::fs::symlink("own", coll.join("dir/inner-link")).unwrap();
        std::os::unix::fs::symlink("dir", coll.join("inner-dir-link")).unwrap();
        let collection = Collection::open(&coll).unwrap();
        let mut own = String::new();
        collection
            .open_file(Path::new("dir/own"))
            .unwrap()
            .read_to_string(&mut own)
            .unwrap();
        assert_eq!(own, "own");
        for path in [
            "file-link",
            "dir-link/secret",
            "dir/inner-link",
            "inner-dir-link/own",
        ] {
            let e = collection.open_file(Path::new(path)).unwrap_err();
            assert!(is_linked(&e), "{path}: {e}");
        }
        assert!(is_linked(
            &collection.open_dir(Path::new("dir-link")).unwrap_err()
        ));
        // The same without `openat2`, as on an older kernel.
        let flags = rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::NOFOLLOW;
        let names = |path: &'static str| -> Vec<&'static std::ffi::OsStr> {
            path.split('/').map(std::ffi::OsStr::new).collect()
        };
        assert!(
            collection
                .open_by_names(&names("dir"), "own".as_ref(), flags)
                .is_ok()
        );
        for path in ["dir-link/secret", "inner-dir-link/own", "dir/inner-link"] {
            let all = names(path);
            let (last, parents) = all.split_last().unwrap();
            let e = collection.open_by_names(parents, last, flags).unwrap_err();
            assert!(is_linked(&e), "{path}: {e}");
        }
        let e = collection
            .open_by_names(&[], "file-link".as_ref(), flags)
            .unwrap_err();
        assert!(is_linked(&e), "{e}");
        let e = collection
            .open_file(Path::new("../outside/secret"))
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
