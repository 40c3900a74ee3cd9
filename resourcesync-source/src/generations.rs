//! A publish directory's generations: each run writes a whole new one beside it, and one
//! rename of a symbolic link, the publish directory itself, switches to it; a failed or
//! killed run leaves the last one published.
//!
//! Everything the publisher makes beside the publish directory (its generations'
//! directory, the lock, each generation's directory, the link it stages and renames) is
//! reached through directory handles, one name at a time, and never through a symbolic
//! link it did not make (`O_NOFOLLOW`, `AT_SYMLINK_NOFOLLOW`): a link planted at the lock's
//! path, at the generations' directory or at a generation's number is refused with an
//! error naming it, not followed, and nothing is truncated or removed that the publisher
//! did not make. Writes inside a generation go by path, under the handle's directory,
//! which is checked to be the same directory before the generation begins and again
//! before the switch publishes it (a swap in between is refused).
//!
//! The handles are cap-std's [`Dir`](cap_std::fs::Dir), the workspace's one sandbox (the
//! collection's, the Destination's and `serve`'s too). A path of several names would be
//! resolved by cap-std through a link that stays inside its directory (our lock's path
//! pointing at our own state file would be opened), so every call here names one entry of
//! the handle's directory, and that entry is never followed (`FollowSymlinks::No`, which
//! is `O_NOFOLLOW`; `open_dir_nofollow`; `symlink_metadata`).

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use crate::store::StoreError;

/// Where a publish directory's generations, lock and links live, and handles on the two
/// directories the publisher writes in beside it.
#[derive(Debug)]
pub(crate) struct Layout {
    /// The publish directory (a symbolic link once published).
    pub(crate) publish: PathBuf,
    /// `.<name>.resourcesync/` beside it.
    pub(crate) generations: PathBuf,
    /// The publish directory's name.
    name: String,
    /// The directory that holds the publish directory, as the caller named it.
    parent: at::Handle,
    /// `generations`, opened without following a link.
    store: at::Handle,
}

impl Layout {
    /// The layout of `publish`, its generations' directory made if need be and both
    /// directories opened; a link (or anything but a directory) where the generations'
    /// directory belongs is refused.
    pub(crate) fn open(publish: &Path) -> Result<Layout, StoreError> {
        // `pub/` names the link's target, not the link: drop the trailing slash (and any
        // `.` segments), as a shell's completion adds it.
        let publish: PathBuf = publish.components().collect();
        let not_ours = |reason| StoreError::NotOurs {
            path: publish.clone(),
            reason,
        };
        let name = publish
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| not_ours("the publish directory needs a UTF-8 name"))?
            .to_owned();
        let parent_path = match publish.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Io { path, source }
        };
        // The caller's own path to the publish directory's parent is followed as given.
        std::fs::create_dir_all(&parent_path).map_err(io(&parent_path))?;
        let parent = at::open_dir(&parent_path).map_err(io(&parent_path))?;
        let generations_name = format!(".{name}.resourcesync");
        let generations = parent_path.join(&generations_name);
        match at::make_dir(&parent, &generations_name) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => {
                return Err(io(&generations)(e));
            }
            _ => {}
        }
        let store = at::open_dir_nofollow(&parent, &generations_name).map_err(|e| {
            if at::is_not_followed(&e) {
                StoreError::NotOurs {
                    path: generations.clone(),
                    reason: "a symbolic link, or no directory, where the publisher keeps its \
                         generations: it follows no link it did not make; remove it",
                }
            } else {
                io(&generations)(e)
            }
        })?;
        Ok(Layout {
            publish: publish.clone(),
            generations,
            name,
            parent,
            store,
        })
    }

    /// Takes the lock of the publish directory, held until the returned file is dropped
    /// (the system releases it if the process dies): one publisher at a time. The lock file
    /// is created if need be, never truncated, and never opened through a link.
    pub(crate) fn lock(&self) -> Result<File, StoreError> {
        let path = self.generations.join("lock");
        let lock = at::open_lock(&self.store, "lock").map_err(|e| {
            if at::is_not_followed(&e) {
                StoreError::NotOurs {
                    path: path.clone(),
                    reason: "a symbolic link, or no regular file, where the publisher keeps \
                         its lock: it follows and truncates no file it did not make; remove it",
                }
            } else {
                StoreError::Io {
                    path: path.clone(),
                    source: e,
                }
            }
        })?;
        if lock.try_lock().is_err() {
            return Err(StoreError::Busy {
                publish: self.publish.clone(),
                lock: path,
            });
        }
        Ok(lock)
    }

    pub(crate) fn generation(&self, number: u64) -> PathBuf {
        self.generations.join(generation_name(number))
    }

    /// The record `name` kept beside the generations (`beside-<name>`), or `None`: a
    /// regular file, never read through a link, at most [`MAX_BESIDE`] bytes.
    pub(crate) fn read_beside(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let file = format!("beside-{name}");
        match at::read_bounded(&self.store, &file, MAX_BESIDE) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io {
                path: self.generations.join(file),
                source,
            }),
        }
    }

    /// Replaces the record `name` beside the generations, durably: a new file written,
    /// synced and renamed over the old one, the directory synced.
    pub(crate) fn write_beside(&self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        let file = format!("beside-{name}");
        at::write_replacing(&self.store, &file, bytes).map_err(|source| StoreError::Io {
            path: self.generations.join(file),
            source,
        })
    }

    /// The link's target for generation `number`, relative to the link's directory so
    /// that the whole tree can be moved.
    pub(crate) fn target(&self, number: u64) -> PathBuf {
        let dir = self.generations.file_name().unwrap_or_default();
        Path::new(dir).join(generation_name(number))
    }

    /// The generation a link pointing at `target` publishes, if this publisher made it.
    fn generation_of(&self, target: &Path) -> Option<u64> {
        target
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| target == self.target(*n))
    }

    /// The generation the publish directory links to now, if any; an error when it is
    /// something else than a publisher made (or an empty directory, which is taken).
    pub(crate) fn current(&self) -> Result<Option<u64>, StoreError> {
        let not_ours = |reason| StoreError::NotOurs {
            path: self.publish.clone(),
            reason,
        };
        let io = |source| StoreError::Io {
            path: self.publish.clone(),
            source,
        };
        match at::kind(&self.parent, &self.name).map_err(io)? {
            None => Ok(None),
            Some(at::Kind::Directory) => {
                if at::is_empty_dir(&self.parent, &self.name).unwrap_or(false) {
                    Ok(None)
                } else {
                    Err(not_ours(
                        "a directory with files that this publisher did not publish; give a new path",
                    ))
                }
            }
            Some(at::Kind::Link) => {
                let target = at::read_link(&self.parent, &self.name).map_err(io)?;
                self.generation_of(&target)
                    .map(Some)
                    .ok_or_else(|| not_ours("a symbolic link that this publisher did not make"))
            }
            Some(at::Kind::Other) => Err(not_ours("not a directory this publisher publishes to")),
        }
    }

    /// Makes the directory of generation `number`, empty: one a killed run left under that
    /// number is removed first (a directory this publisher made only: anything else there
    /// is refused, not removed). Checks first that the generations' directory is still
    /// the one opened, since the generation is then written by path.
    ///
    /// The generation's mark ([`mark_name`]) is made before its directory, so that a
    /// directory of that name is the publisher's from the moment it exists.
    pub(crate) fn make_generation(&self, number: u64) -> Result<PathBuf, StoreError> {
        self.confirm()?;
        self.remove_generation(number)?;
        let path = self.generation(number);
        let io = |path: PathBuf| move |source| StoreError::Io { path, source };
        let mark = mark_name(number);
        at::open_lock(&self.store, &mark).map_err(|e| {
            if at::is_not_followed(&e) {
                StoreError::NotOurs {
                    path: self.generations.join(&mark),
                    reason: "a link, or no regular file, where the publisher marks the \
                         generations it makes: it follows no link it did not make; remove it",
                }
            } else {
                io(self.generations.join(&mark))(e)
            }
        })?;
        at::make_dir(&self.store, &generation_name(number)).map_err(io(path.clone()))?;
        Ok(path)
    }

    /// Whether the directory of generation `number` is one this publisher made: it has
    /// its mark beside it, a regular file.
    fn made(&self, number: u64) -> bool {
        at::is_file(&self.store, &mark_name(number))
    }

    /// Marks the generation `number`, published now by a link this publisher made, as
    /// made by it: generations made before marks were, so that it is removed in its turn
    /// (sealed now: what is added to it from now on keeps it).
    pub(crate) fn adopt(&self, number: u64) {
        if !self.made(number) && at::open_lock(&self.store, &mark_name(number)).is_ok() {
            self.seal(number);
        }
    }

    /// Records in generation `number`'s mark the latest change of its directories, once
    /// the publisher has written it whole: a file the user puts into the publication
    /// afterwards (through the publish directory's link) changes a directory of the
    /// generation, and the cleanup then leaves the generation rather than remove what the
    /// publisher did not write. Best effort: a mark left unsealed is removed as before.
    pub(crate) fn seal(&self, number: u64) {
        let Ok((latest, entries)) = at::latest_dir_change(&self.store, &generation_name(number))
        else {
            return;
        };
        if let Ok(mut mark) = at::open_lock(&self.store, &mark_name(number)) {
            use std::io::Write;
            let _ = mark
                .set_len(0)
                .and_then(|()| write!(mark, "{} {} {entries}", latest.0, latest.1));
        }
    }

    /// Whether generation `number` holds what its publisher did not write: a directory
    /// of it changed after the seal its mark records.
    fn added_to(&self, number: u64) -> bool {
        let text = at::read_small(&self.store, &mark_name(number)).unwrap_or_default();
        at::latest_dir_change(&self.store, &generation_name(number))
            .map_or(true, |now| changed_since_seal(&text, now))
    }

    /// Removes the directory of generation `number` and its mark, if there is one; what
    /// is there and is no directory the publisher made (a link, a file, or a directory
    /// without the mark: the user's) is refused and left.
    pub(crate) fn remove_generation(&self, number: u64) -> Result<(), StoreError> {
        let name = generation_name(number);
        let path = self.generation(number);
        let io = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let mark = mark_name(number);
        match at::kind(&self.store, &name).map_err(io)? {
            None => {}
            Some(at::Kind::Directory) if self.made(number) => {
                at::remove_tree(&self.store, &name).map_err(io)?;
            }
            Some(at::Kind::Directory) => {
                return Err(StoreError::NotOurs {
                    path: path.clone(),
                    reason: "a directory named like a generation that this publisher did not \
                         make (it has no mark beside it): the publisher removes nothing it \
                         did not make; move it away",
                });
            }
            Some(_) => {
                return Err(StoreError::NotOurs {
                    path: path.clone(),
                    reason: "not a generation's directory: the publisher removes nothing it \
                         did not make; remove it",
                });
            }
        }
        // The mark last: a run killed in between leaves a mark and no directory, which
        // the next run's generation of that number takes over.
        if self.made(number) {
            at::unlink(&self.store, &mark).map_err(|source| StoreError::Io {
                path: self.generations.join(&mark),
                source,
            })?;
        }
        Ok(())
    }

    /// Refuses a generations' directory that is no longer the one opened (replaced, by a
    /// link or another directory, since): what was written by path went elsewhere.
    pub(crate) fn confirm(&self) -> Result<(), StoreError> {
        let same =
            at::same_dir(&self.parent, self.generations_name(), &self.store).map_err(|source| {
                StoreError::Io {
                    path: self.generations.clone(),
                    source,
                }
            })?;
        if same {
            Ok(())
        } else {
            Err(StoreError::NotOurs {
                path: self.generations.clone(),
                reason: "replaced while the publisher wrote into it; nothing is published",
            })
        }
    }

    fn generations_name(&self) -> &str {
        self.generations
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }

    /// Points the publish directory at generation `number`: a new link beside it, renamed
    /// over it, which is atomic. An empty directory in its place is removed first.
    pub(crate) fn switch(&self, number: u64) -> Result<(), StoreError> {
        self.confirm()?;
        // Made beside the publish directory, since its target is relative to that
        // directory's parent, and a rename is atomic only within one file system.
        let staged = format!(".{}.link", self.name);
        let staged_path = self.publish.with_file_name(&staged);
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| StoreError::Io { path, source }
        };
        let target = self.target(number);
        if let Err(e) = at::symlink(&target, &self.parent, &staged) {
            if e.kind() != io::ErrorKind::AlreadyExists {
                return Err(io(&staged_path)(e));
            }
            // A link a killed run left is removed; anything else is the user's.
            let left = matches!(at::kind(&self.parent, &staged), Ok(Some(at::Kind::Link)))
                && at::read_link(&self.parent, &staged)
                    .is_ok_and(|t| self.generation_of(&t).is_some());
            if !left {
                return Err(StoreError::NotOurs {
                    path: staged_path,
                    reason: "in the way of the link the publisher stages there, and not one \
                         it made: it removes nothing it did not make; move it away",
                });
            }
            at::unlink(&self.parent, &staged).map_err(io(&staged_path))?;
            at::symlink(&target, &self.parent, &staged).map_err(io(&staged_path))?;
        }
        if matches!(
            at::kind(&self.parent, &self.name),
            Ok(Some(at::Kind::Directory))
        ) {
            // Checked empty by `Layout::current`; rmdir removes nothing but an empty one.
            at::remove_empty_dir(&self.parent, &self.name).map_err(|e| {
                let _ = at::unlink(&self.parent, &staged);
                io(&self.publish)(e)
            })?;
        }
        at::rename(&self.parent, &staged, &self.name).map_err(|e| {
            let _ = at::unlink(&self.parent, &staged);
            io(&self.publish)(e)
        })?;
        // Durable once the directory holding the link is synced.
        let _ = at::sync(&self.parent);
        Ok(())
    }

    /// Removes every generation but `keep` and the one before it, and leftovers of runs
    /// that never switched; entries that are no generation's directory are left, and so
    /// is a generation the user added files to after it was published ([`Layout::seal`]).
    pub(crate) fn remove_old_generations(&self, keep: u64, before: Option<u64>) {
        let Ok(names) = at::names(&self.store) else {
            return;
        };
        for name in names {
            let Some(n) = name
                .parse::<u64>()
                .ok()
                .filter(|n| generation_name(*n) == name)
            else {
                continue;
            };
            if n != keep && Some(n) != before && !self.added_to(n) {
                let _ = self.remove_generation(n);
            }
        }
    }
}

/// The largest record kept beside the generations.
pub(crate) const MAX_BESIDE: u64 = 1 << 16;

/// A generation's directory name: its number in five digits or more.
fn generation_name(number: u64) -> String {
    format!("{number:05}")
}

/// Whether a generation whose tree is now `(latest change time, entries)` changed since
/// the seal its mark's `text` records (`secs nanos entries`; `false` for a mark never
/// sealed). The entries too (a mark written before they were recorded has none): an
/// entry added in the same tick of the file system's clock as the seal leaves the change
/// times as they were.
fn changed_since_seal(text: &str, (latest, entries): ((i64, i64), u64)) -> bool {
    let mut fields = text.split_ascii_whitespace().map(str::parse::<i64>);
    let (Some(Ok(secs)), Some(Ok(nanos))) = (fields.next(), fields.next()) else {
        return false;
    };
    let sealed_entries = fields.next().and_then(Result::ok);
    latest > (secs, nanos) || sealed_entries.is_some_and(|n| i64::try_from(entries) != Ok(n))
}

/// The name of a generation's mark: an empty file beside its directory that says this
/// publisher made it (`00007.made`). A directory with a generation's name and no mark is
/// someone else's, and is never removed. Beside the directory, not in it: what is in a
/// generation is served.
fn mark_name(number: u64) -> String {
    format!("{number:05}.made")
}

/// Makes the symbolic link `link` pointing at `target`, by path (inside a generation).
#[cfg(unix)]
pub(crate) fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

/// Symbolic links need a Unix system here.
#[cfg(not(unix))]
pub(crate) fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(at::unsupported())
}

/// The directory operations, on cap-std handles ([`cap_std::fs::Dir`]), one name at a
/// time, never following a link: each call names one entry of the handle's directory, so
/// cap-std's resolution has no directory on the way to follow, and the last name is never
/// followed (`open_dir_nofollow`, `FollowSymlinks::No`, `symlink_metadata`, and the
/// `*at` calls behind removing, renaming and linking, which act on the name itself).
#[cfg(unix)]
mod at {
    use std::ffi::OsStr;
    use std::fs::File;
    use std::io;
    use std::path::{Path, PathBuf};

    use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
    use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};

    /// An open directory.
    pub(super) type Handle = Dir;

    /// What a name is, not following a link.
    pub(super) enum Kind {
        Directory,
        Link,
        Other,
    }

    /// Opens a directory by the caller's path, following it as given.
    pub(super) fn open_dir(path: &Path) -> io::Result<Handle> {
        Dir::open_ambient_dir(path, cap_std::ambient_authority())
    }

    /// Opens the directory `name` of `dir`; a link there is refused (`ELOOP`, or
    /// `ENOTDIR` as a link opened as a directory is here).
    pub(super) fn open_dir_nofollow(dir: &Handle, name: &str) -> io::Result<Handle> {
        dir.open_dir_nofollow(name)
    }

    /// Whether an open failed because a link, or something else than was asked for, is
    /// at the name.
    pub(super) fn is_not_followed(e: &io::Error) -> bool {
        let code = e.raw_os_error();
        code == Some(libc::ELOOP)
            || code == Some(libc::ENOTDIR)
            || code == Some(libc::ENXIO)
            || e.kind() == io::ErrorKind::InvalidData
    }

    pub(super) fn make_dir(dir: &Handle, name: &str) -> io::Result<()> {
        dir.create_dir(name)
    }

    /// Opens `name` of `dir` with `options`, never following a link there (`ELOOP`) and
    /// never waiting (`O_NONBLOCK`: a FIFO without a reader is `ENXIO` at once, rather
    /// than waited on); anything but a regular file is `InvalidData`.
    fn open_regular(dir: &Handle, name: &str, options: &mut OpenOptions) -> io::Result<File> {
        options
            .follow(FollowSymlinks::No)
            .custom_flags(libc::O_NONBLOCK);
        let file = dir.open_with(name, options)?.into_std();
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a regular file",
            ));
        }
        Ok(file)
    }

    /// Opens (creating, never truncating) the regular file `name` of `dir` for writing: a
    /// link is refused (`ELOOP`), a FIFO without reader is refused at once (`ENXIO`)
    /// rather than waited on, and anything but a regular file is `InvalidData`.
    pub(super) fn open_lock(dir: &Handle, name: &str) -> io::Result<File> {
        open_regular(dir, name, OpenOptions::new().write(true).create(true))
    }

    /// Whether `name` of `dir` is a regular file, not following a link.
    pub(super) fn is_file(dir: &Handle, name: &str) -> bool {
        dir.symlink_metadata(name).is_ok_and(|m| m.is_file())
    }

    /// The bytes of the regular file `name` of `dir`, not following a link; one longer
    /// than `max` bytes is `InvalidData`.
    pub(super) fn read_bounded(dir: &Handle, name: &str, max: u64) -> io::Result<Vec<u8>> {
        use std::io::Read;
        let file = open_regular(dir, name, OpenOptions::new().read(true))?;
        let mut bytes = Vec::new();
        file.take(max + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("longer than {max} bytes"),
            ));
        }
        Ok(bytes)
    }

    /// Replaces the regular file `name` of `dir` with `bytes`, durably: written to
    /// `name.new` (never through a link), synced, renamed over `name`, and the directory
    /// synced.
    pub(super) fn write_replacing(dir: &Handle, name: &str, bytes: &[u8]) -> io::Result<()> {
        use std::io::Write;
        let staged = format!("{name}.new");
        let mut file = open_regular(
            dir,
            &staged,
            OpenOptions::new().write(true).create(true).truncate(true),
        )?;
        file.write_all(bytes)?;
        file.sync_all()?;
        dir.rename(&staged, dir, name)?;
        sync(dir)
    }

    /// The text of the small regular file `name` of `dir` (its first 64 bytes), not
    /// following a link.
    pub(super) fn read_small(dir: &Handle, name: &str) -> io::Result<String> {
        use std::io::Read;
        let file = open_regular(dir, name, OpenOptions::new().read(true))?;
        let mut text = String::new();
        file.take(64).read_to_string(&mut text)?;
        Ok(text)
    }

    /// What `name` of `dir` is, not following a link; `None` if nothing.
    pub(super) fn kind(dir: &Handle, name: &str) -> io::Result<Option<Kind>> {
        match dir.symlink_metadata(name) {
            Ok(meta) => Ok(Some(if meta.is_dir() {
                Kind::Directory
            } else if meta.file_type().is_symlink() {
                Kind::Link
            } else {
                Kind::Other
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Whether `name` of `dir` is the directory `handle` is open on.
    pub(super) fn same_dir(dir: &Handle, name: &str, handle: &Handle) -> io::Result<bool> {
        let named = match dir.symlink_metadata(name) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let open = handle.dir_metadata()?;
        Ok(named.is_dir() && (named.dev(), named.ino()) == (open.dev(), open.ino()))
    }

    /// The target of the link `name` of `dir`, as written (an absolute one too: it is
    /// read, to be told apart from the publisher's own, never followed).
    pub(super) fn read_link(dir: &Handle, name: &str) -> io::Result<PathBuf> {
        dir.read_link_contents(name)
    }

    /// Whether the directory `name` of `dir` holds nothing.
    pub(super) fn is_empty_dir(dir: &Handle, name: &str) -> io::Result<bool> {
        Ok(open_dir_nofollow(dir, name)?.entries()?.next().is_none())
    }

    /// The names in `dir` that are UTF-8.
    pub(super) fn names(dir: &Handle) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in dir.entries()? {
            if let Ok(name) = entry?.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    /// The latest change time (seconds, nanoseconds) of the directory `name` of `dir` and
    /// of every directory under it, entering no link: an entry added, removed or renamed
    /// in any of them moves it (unless within the same tick of the file system's clock);
    /// and the number of entries in them all, which an entry added or removed changes
    /// whenever it is.
    pub(super) fn latest_dir_change(dir: &Handle, name: &str) -> io::Result<((i64, i64), u64)> {
        latest_dir_change_at(dir, name.as_ref())
    }

    fn latest_dir_change_at(dir: &Handle, name: &OsStr) -> io::Result<((i64, i64), u64)> {
        let sub = dir.open_dir_nofollow(name)?;
        let meta = sub.dir_metadata()?;
        let mut latest = (meta.ctime(), meta.ctime_nsec());
        let mut entries = 0;
        for entry in sub.entries()? {
            let entry = entry?;
            entries += 1;
            if entry.file_type()?.is_dir() {
                let (changed, under) = latest_dir_change_at(&sub, &entry.file_name())?;
                latest = latest.max(changed);
                entries += under;
            }
        }
        Ok((latest, entries))
    }

    /// Removes the directory `name` of `dir` and everything in it, entering no link (a
    /// link inside is removed as a link, its target untouched); a link at `name` itself
    /// is refused, not removed (as cap-std's `remove_dir_all` would remove it).
    pub(super) fn remove_tree(dir: &Handle, name: &str) -> io::Result<()> {
        remove_tree_at(dir, name.as_ref())
    }

    fn remove_tree_at(dir: &Handle, name: &OsStr) -> io::Result<()> {
        let sub = dir.open_dir_nofollow(name)?;
        // The names first: removing entries while reading the directory may skip some.
        let mut entries = Vec::new();
        for entry in sub.entries()? {
            let entry = entry?;
            entries.push((entry.file_name(), entry.file_type()?.is_dir()));
        }
        for (entry, is_dir) in entries {
            if is_dir {
                remove_tree_at(&sub, &entry)?;
            } else {
                sub.remove_file(&entry)?;
            }
        }
        dir.remove_dir(name)
    }

    /// Makes the link `name` of `dir` pointing at `target` (relative: the publisher's
    /// links point at its generations beside them).
    pub(super) fn symlink(target: &Path, dir: &Handle, name: &str) -> io::Result<()> {
        dir.symlink(target, name)
    }

    /// Removes the file or link `name` of `dir` (never a directory, never a link's target).
    pub(super) fn unlink(dir: &Handle, name: &str) -> io::Result<()> {
        dir.remove_file(name)
    }

    /// Removes the directory `name` of `dir` if it is empty.
    pub(super) fn remove_empty_dir(dir: &Handle, name: &str) -> io::Result<()> {
        dir.remove_dir(name)
    }

    /// Renames `from` over `to`, both names of `dir`; a link renamed is the link.
    pub(super) fn rename(dir: &Handle, from: &str, to: &str) -> io::Result<()> {
        dir.rename(from, dir, to)
    }

    /// Makes the directory's entries durable: `fsync` on the directory, opened for it
    /// (cap-std's `Dir` has no call for it, and its handle is `O_PATH` on Linux, which
    /// `fsync` refuses).
    pub(super) fn sync(dir: &Handle) -> io::Result<()> {
        dir.open(".")?.sync_all()
    }
}

/// Elsewhere, the store needs symbolic links, which need a Unix system: every call fails.
#[cfg(not(unix))]
mod at {
    use std::fs::File;
    use std::io;
    use std::path::{Path, PathBuf};

    /// No directory is ever open.
    #[derive(Debug)]
    pub(super) struct Handle;

    /// What a name is.
    pub(super) enum Kind {
        Directory,
        Link,
        Other,
    }

    pub(super) fn unsupported() -> io::Error {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "publishing switches generations by symbolic links, which need a Unix system",
        )
    }

    pub(super) fn open_dir(_: &Path) -> io::Result<Handle> {
        Err(unsupported())
    }
    pub(super) fn open_dir_nofollow(_: &Handle, _: &str) -> io::Result<Handle> {
        Err(unsupported())
    }
    pub(super) fn is_not_followed(_: &io::Error) -> bool {
        false
    }
    pub(super) fn make_dir(_: &Handle, _: &str) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn open_lock(_: &Handle, _: &str) -> io::Result<File> {
        Err(unsupported())
    }
    pub(super) fn kind(_: &Handle, _: &str) -> io::Result<Option<Kind>> {
        Err(unsupported())
    }
    pub(super) fn is_file(_: &Handle, _: &str) -> bool {
        false
    }
    pub(super) fn read_bounded(_: &Handle, _: &str, _: u64) -> io::Result<Vec<u8>> {
        Err(unsupported())
    }
    pub(super) fn write_replacing(_: &Handle, _: &str, _: &[u8]) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn same_dir(_: &Handle, _: &str, _: &Handle) -> io::Result<bool> {
        Err(unsupported())
    }
    pub(super) fn read_link(_: &Handle, _: &str) -> io::Result<PathBuf> {
        Err(unsupported())
    }
    pub(super) fn is_empty_dir(_: &Handle, _: &str) -> io::Result<bool> {
        Err(unsupported())
    }
    pub(super) fn names(_: &Handle) -> io::Result<Vec<String>> {
        Err(unsupported())
    }
    pub(super) fn remove_tree(_: &Handle, _: &str) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn latest_dir_change(_: &Handle, _: &str) -> io::Result<((i64, i64), u64)> {
        Err(unsupported())
    }
    pub(super) fn read_small(_: &Handle, _: &str) -> io::Result<String> {
        Err(unsupported())
    }
    pub(super) fn symlink(_: &Path, _: &Handle, _: &str) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn unlink(_: &Handle, _: &str) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn remove_empty_dir(_: &Handle, _: &str) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn rename(_: &Handle, _: &str, _: &str) -> io::Result<()> {
        Err(unsupported())
    }
    pub(super) fn sync(_: &Handle) -> io::Result<()> {
        Err(unsupported())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::{at, changed_since_seal};

    /// A generation changed since its seal when a directory's change time is later, or
    /// (in the same tick of the clock) when it holds another number of entries; a mark
    /// of the earlier format (no count) is judged by the time alone, one never sealed
    /// never.
    #[test]
    fn an_entry_added_in_the_seal_s_clock_tick_is_a_change() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("00001/resourcesync")).unwrap();
        std::fs::write(root.path().join("00001/a.txt"), "a").unwrap();
        let store = at::open_dir(root.path()).unwrap();
        let (sealed, entries) = at::latest_dir_change(&store, "00001").unwrap();
        assert_eq!(entries, 2);
        let mark = format!("{} {} {entries}", sealed.0, sealed.1);
        assert!(!changed_since_seal(&mark, (sealed, entries)));
        // The user's directory, its change time as sealed (the same tick).
        std::fs::create_dir(root.path().join("00001/resourcesync/notes")).unwrap();
        let (_, now) = at::latest_dir_change(&store, "00001").unwrap();
        assert_eq!(now, 3);
        assert!(changed_since_seal(&mark, (sealed, now)));
        assert!(changed_since_seal(&mark, ((sealed.0 + 1, 0), entries)));
        let old_format = format!("{} {}", sealed.0, sealed.1);
        assert!(!changed_since_seal(&old_format, (sealed, now)));
        assert!(!changed_since_seal("", (sealed, now)));
    }

    /// The directory holding the switched link is synced: cap-std's handles are `O_PATH`
    /// on Linux, which `fsync` refuses, and the switch ignores the error.
    #[test]
    fn a_directory_handle_is_synced() {
        let root = tempfile::tempdir().unwrap();
        let parent = at::open_dir(root.path()).unwrap();
        at::sync(&parent).unwrap();
        at::make_dir(&parent, "sub").unwrap();
        at::sync(&at::open_dir_nofollow(&parent, "sub").unwrap()).unwrap();
    }

    /// A tree is removed without entering a link inside it, and a link at its own name is
    /// refused, not removed.
    #[test]
    fn a_tree_is_removed_through_no_link() {
        let root = tempfile::tempdir().unwrap();
        let (store, outside) = (root.path().join("store"), root.path().join("outside"));
        std::fs::create_dir_all(store.join("00001/dir")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("kept"), "kept").unwrap();
        std::os::unix::fs::symlink(&outside, store.join("00001/dir/out")).unwrap();
        std::os::unix::fs::symlink(&outside, store.join("00002")).unwrap();
        let handle = at::open_dir(&store).unwrap();
        let e = at::remove_tree(&handle, "00002").unwrap_err();
        assert!(at::is_not_followed(&e), "{e}");
        assert!(store.join("00002").symlink_metadata().is_ok());
        at::remove_tree(&handle, "00001").unwrap();
        assert!(!store.join("00001").exists());
        assert!(outside.join("kept").exists());
    }
}
