//! Where a [`Publisher`](crate::Publisher) keeps a publication: a [`Store`] of named files,
//! switched from one whole publication to the next at once. [`MemoryStore`] keeps them in
//! memory (tests, a server that serves from memory); [`GenerationStore`] in a directory a
//! web server serves, one generation per run behind one symbolic link.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::directory::write_file;
use crate::generations::Layout;

/// Why a store could not read, write or switch. Whatever the error, the publication last
/// committed is as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A file or directory could not be read or written.
    #[error("{}: {source}", crate::Shown(path))]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The publish directory is something no publisher made.
    #[error("{}: {reason}", crate::Shown(path))]
    NotOurs {
        /// The publish directory.
        path: PathBuf,
        /// What it is.
        reason: &'static str,
    },
    /// Another publisher is publishing to the same directory.
    #[error(
        "{}: another build is publishing here (it holds {})",
        crate::Shown(publish),
        crate::Shown(lock)
    )]
    Busy {
        /// The publish directory.
        publish: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// A name that no file of a publication may have: empty, absolute, with an empty, `.`
    /// or `..` segment, a backslash or a control character.
    #[error("{name:?}: not a name in a publication: {reason}")]
    Name {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// An object store refused a request or could not be reached (a `BucketStore`'s,
    /// feature `object-store`).
    #[error("{key}: {source}")]
    Object {
        /// The object's key (or the store's URL).
        key: String,
        /// Why.
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A write, removal or commit without a [`Store::begin`] first: the caller's mistake.
    #[error("no publication is being written: begin one first")]
    NotBegun,
}

/// A publication's files by name (`resourcesync/changelist.xml`, relative to the root the
/// base URI serves), written a whole publication at a time.
///
/// A run calls [`begin`](Store::begin), which starts a new publication holding what the
/// last one held (carried over, not copied where the store can share it); then
/// [`write`](Store::write) and [`remove`](Store::remove); then [`commit`](Store::commit),
/// which publishes it at once, or [`abort`](Store::abort), which drops it. Readers of the
/// publication see the last one committed or this one, never a mix; a run that fails or
/// is killed before its commit leaves the last one published.
pub trait Store {
    /// The bytes of `name`: in the publication being written if one is begun (what was
    /// carried over, or written since), else in the one published; `None` if it has none.
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Whether `name` is there, as [`read`](Store::read) would find it. A store that
    /// cannot tell (an object store that does not answer) says so with an error rather
    /// than an answer: what asks decides what not knowing means.
    fn exists(&self, name: &str) -> Result<bool, StoreError>;

    /// Starts a new publication that holds what the published one holds. A publication
    /// begun and not committed is dropped first.
    fn begin(&mut self) -> Result<(), StoreError>;

    /// Writes `name` whole into the publication being written, its bytes given in
    /// `pieces` one after the other, replacing what it held.
    fn write(&mut self, name: &str, pieces: &[&[u8]]) -> Result<(), StoreError>;

    /// Removes `name` from the publication being written, if it is there.
    fn remove(&mut self, name: &str) -> Result<(), StoreError>;

    /// Publishes the publication being written, at once, in place of the last one.
    fn commit(&mut self) -> Result<(), StoreError>;

    /// Drops the publication being written; the last one stays published.
    fn abort(&mut self);

    /// The number of the publication being written, where the store numbers them (a
    /// [`GenerationStore`]'s generation): the run is that generation, in its report and
    /// in the names of the parts it writes, so that one number means one thing. `None`,
    /// the default, where the store does not: the run counts its own.
    fn writing_generation(&self) -> Option<u64> {
        None
    }

    /// The small record `name` kept beside the publications, not in any of them (so never
    /// served, and not carried from run to run), or `None` if there is none. A
    /// [`Publisher`](crate::Publisher) keeps there what changes between runs: which
    /// notifications the hub took.
    fn read_beside(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError>;

    /// Replaces the record `name` beside the publications, at once and durably, whether
    /// or not a publication is being written. `name` is a few lower-case letters, digits
    /// and `-`; the bytes are at most 64 KiB.
    fn write_beside(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError>;
}

/// Refuses a record name beside the publications other than a few lower-case letters,
/// digits and `-`, or bytes over 64 KiB.
pub(crate) fn check_beside(name: &str, bytes: Option<&[u8]>) -> Result<(), StoreError> {
    let refuse = |reason| {
        Err(StoreError::Name {
            name: name.to_owned(),
            reason,
        })
    };
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-';
    if name.is_empty() || name.len() > 64 || !name.chars().all(allowed) {
        return refuse("a record beside the publications is named by 1 to 64 of a-z, 0-9 and -");
    }
    if bytes.is_some_and(|b| b.len() as u64 > crate::generations::MAX_BESIDE) {
        return refuse("a record beside the publications holds at most 64 KiB");
    }
    Ok(())
}

/// Refuses a name no file of a publication may have.
pub(crate) fn check_name(name: &str) -> Result<(), StoreError> {
    let refuse = |reason| {
        Err(StoreError::Name {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return refuse("empty");
    }
    if name.starts_with('/') {
        return refuse("absolute");
    }
    if name.contains('\\') {
        return refuse("a backslash");
    }
    if name.chars().any(char::is_control) {
        return refuse("a control character");
    }
    if name
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return refuse("an empty, . or .. segment");
    }
    Ok(())
}

/// A publication kept in memory: each run's files shared with the last run's where they
/// did not change.
///
/// ```
/// use resourcesync_source::{MemoryStore, Store};
///
/// let mut store = MemoryStore::new();
/// store.begin()?;
/// store.write("resourcesync/a.xml", &[b"<urlset>", b"</urlset>"])?;
/// assert!(store.get("resourcesync/a.xml").is_none(), "not published before the commit");
/// store.commit()?;
/// assert_eq!(store.get("resourcesync/a.xml"), Some(&b"<urlset></urlset>"[..]));
/// # Ok::<(), resourcesync_source::StoreError>(())
/// ```
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    published: BTreeMap<String, Arc<[u8]>>,
    pending: Option<BTreeMap<String, Arc<[u8]>>>,
    beside: BTreeMap<String, Vec<u8>>,
}

impl MemoryStore {
    /// An empty store: nothing published.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    /// The bytes of `name` in the publication, as last committed.
    pub fn get(&self, name: &str) -> Option<&[u8]> {
        self.published.get(name).map(|bytes| &bytes[..])
    }

    /// The names of the publication's files, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.published.keys().map(String::as_str)
    }

    fn view(&self) -> &BTreeMap<String, Arc<[u8]>> {
        self.pending.as_ref().unwrap_or(&self.published)
    }
}

impl Store for MemoryStore {
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_name(name)?;
        Ok(self.view().get(name).map(|bytes| bytes.to_vec()))
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        check_name(name)?;
        Ok(self.view().contains_key(name))
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.pending = Some(self.published.clone());
        Ok(())
    }

    fn write(&mut self, name: &str, pieces: &[&[u8]]) -> Result<(), StoreError> {
        check_name(name)?;
        let pending = self.pending.as_mut().ok_or(StoreError::NotBegun)?;
        pending.insert(name.to_owned(), pieces.concat().into());
        Ok(())
    }

    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        check_name(name)?;
        let pending = self.pending.as_mut().ok_or(StoreError::NotBegun)?;
        pending.remove(name);
        Ok(())
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        self.published = self.pending.take().ok_or(StoreError::NotBegun)?;
        Ok(())
    }

    fn abort(&mut self) {
        self.pending = None;
    }

    fn read_beside(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_beside(name, None)?;
        Ok(self.beside.get(name).cloned())
    }

    fn write_beside(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        check_beside(name, Some(bytes))?;
        self.beside.insert(name.to_owned(), bytes.to_vec());
        Ok(())
    }
}

/// A publication in a directory a web server serves, as `resourcesync build` publishes:
/// the publish directory is a symbolic link to the current generation, in
/// `.<name>.resourcesync/<number>/` beside it. [`begin`](Store::begin) makes the next
/// generation holding the current one's files as hard links (no byte is copied: a run
/// writes what it changes); [`write`](Store::write) replaces a file by a new one renamed
/// into place, so the last generation's file is never changed; [`commit`](Store::commit)
/// syncs the new generation and switches the link to it by one rename. The generation
/// before is kept, for readers in the middle of a request; older ones are removed.
///
/// The publish directory is locked while the store is open: one publisher at a time.
/// What the store keeps beside the publish directory (the generations' directory, the
/// lock, the link it stages) is opened by directory handle and never through a symbolic
/// link it did not make: a link or a file of someone else's there is refused as
/// [`StoreError::NotOurs`], naming it, and left as it is.
#[derive(Debug)]
pub struct GenerationStore {
    layout: Layout,
    _lock: File,
    current: Option<u64>,
    /// The generation being written: its number and directory.
    next: Option<(u64, PathBuf)>,
}

impl GenerationStore {
    /// Opens the publication at `publish`: a path that does not exist yet, an empty
    /// directory, or the link an earlier publisher made there. Refused, as
    /// [`StoreError::Busy`], while another publisher holds it.
    pub fn open(publish: impl AsRef<Path>) -> Result<GenerationStore, StoreError> {
        let layout = Layout::open(publish.as_ref())?;
        let lock = layout.lock()?;
        let current = layout.current()?;
        if let Some(number) = current {
            layout.adopt(number);
        }
        Ok(GenerationStore {
            layout,
            _lock: lock,
            current,
            next: None,
        })
    }

    /// The directory of the generation published now, if any.
    pub fn published(&self) -> Option<PathBuf> {
        self.current.map(|n| self.layout.generation(n))
    }

    /// The number of the generation published now (from 1), if any.
    pub fn generation(&self) -> Option<u64> {
        self.current
    }

    /// The directory of the generation being written, between [`begin`](Store::begin)
    /// (or [`begin_empty`](GenerationStore::begin_empty)) and the commit. After
    /// `begin_empty` files may be written into it directly (`resourcesync build` links the
    /// collection's files there); after `begin` its files are hard links to the published
    /// generation's, which a write in place would change: replace them by a rename, as
    /// [`Store::write`] does.
    pub fn writing(&self) -> Option<&Path> {
        self.next.as_ref().map(|(_, dir)| dir.as_path())
    }

    /// Starts a new generation that holds nothing: the caller carries over what it keeps
    /// of the published one ([`published`](GenerationStore::published)) itself.
    pub fn begin_empty(&mut self) -> Result<(), StoreError> {
        self.start(false)
    }

    fn start(&mut self, carry: bool) -> Result<(), StoreError> {
        self.abort();
        // After the generation published; one a killed run left under that number is
        // removed first.
        let number = self.current.unwrap_or(0) + 1;
        let dir = self.layout.make_generation(number)?;
        // Recorded first, so that an error below removes the generation.
        self.next = Some((number, dir.clone()));
        if let Some(current) = self.published().filter(|_| carry) {
            link_tree(&current, &dir)?;
        }
        Ok(())
    }

    fn path(&self, name: &str) -> Result<PathBuf, StoreError> {
        check_name(name)?;
        let dir = match &self.next {
            Some((_, dir)) => dir.clone(),
            None => match self.published() {
                Some(dir) => dir,
                None => return Ok(PathBuf::new()),
            },
        };
        Ok(dir.join(name))
    }
}

/// Hard-links every file under `from` into `to`, recreating its directories and its
/// symbolic links as they are.
fn link_tree(from: &Path, to: &Path) -> Result<(), StoreError> {
    let io = |path: &Path| {
        let path = path.to_owned();
        move |source| StoreError::Io { path, source }
    };
    fs::create_dir_all(to).map_err(io(to))?;
    for entry in fs::read_dir(from).map_err(io(from))? {
        let entry = entry.map_err(io(from))?;
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type().map_err(io(&source))?;
        if kind.is_dir() {
            link_tree(&source, &target)?;
        } else if kind.is_symlink() {
            let points = fs::read_link(&source).map_err(io(&source))?;
            crate::generations::symlink(&points, &target).map_err(io(&target))?;
        } else {
            fs::hard_link(&source, &target).map_err(io(&target))?;
        }
    }
    Ok(())
}

/// Syncs every directory under `dir` and `dir` itself: the names written are durable.
fn sync_dirs(dir: &Path) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: dir.to_owned(),
        source,
    };
    for entry in fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_type().map_err(io)?.is_dir() {
            sync_dirs(&entry.path())?;
        }
    }
    File::open(dir).and_then(|d| d.sync_all()).map_err(io)
}

impl Store for GenerationStore {
    fn read(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(name)?;
        if path.as_os_str().is_empty() {
            return Ok(None);
        }
        match crate::directory::read_file(&path, true) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(StoreError::Io { path, source }),
        }
    }

    fn exists(&self, name: &str) -> Result<bool, StoreError> {
        let path = self.path(name)?;
        if path.as_os_str().is_empty() {
            return Ok(false);
        }
        // As `read` finds it: a link is not followed, and is an error naming it.
        crate::directory::file_exists(&path).map_err(|source| StoreError::Io { path, source })
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        self.start(true)
    }

    fn write(&mut self, name: &str, pieces: &[&[u8]]) -> Result<(), StoreError> {
        if self.next.is_none() {
            return Err(StoreError::NotBegun);
        }
        let path = self.path(name)?;
        // A new file renamed over the old name: the old one may be a hard link to the last
        // generation's file, which must not change. The commit syncs the directories.
        write_file(&path, pieces, false).map_err(|source| StoreError::Io { path, source })
    }

    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        if self.next.is_none() {
            return Err(StoreError::NotBegun);
        }
        let path = self.path(name)?;
        match fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(StoreError::Io { path, source: e })
            }
            _ => Ok(()),
        }
    }

    fn commit(&mut self) -> Result<(), StoreError> {
        let (number, dir) = self.next.take().ok_or(StoreError::NotBegun)?;
        let switched = sync_dirs(&dir).and_then(|()| self.layout.switch(number));
        if let Err(e) = switched {
            let _ = self.layout.remove_generation(number);
            return Err(e);
        }
        self.layout.seal(number);
        // The generation before is kept, for requests under way when the switch happened.
        self.layout.remove_old_generations(number, self.current);
        self.current = Some(number);
        Ok(())
    }

    fn abort(&mut self) {
        if let Some((number, _)) = self.next.take() {
            let _ = self.layout.remove_generation(number);
        }
    }

    fn writing_generation(&self) -> Option<u64> {
        self.next.as_ref().map(|(number, _)| *number)
    }

    fn read_beside(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        check_beside(name, None)?;
        self.layout.read_beside(name)
    }

    fn write_beside(&mut self, name: &str, bytes: &[u8]) -> Result<(), StoreError> {
        check_beside(name, Some(bytes))?;
        self.layout.write_beside(name, bytes)
    }
}

impl Drop for GenerationStore {
    /// A generation begun and never committed is removed; the published one stays.
    fn drop(&mut self) {
        self.abort();
    }
}
