//! What the collection holds: the directory walk (on every core), the list of URI and
//! file pairs, and the hashing of the files that changed.

use super::*;
use std::ffi::OsStr;

/// A file found in the collection.
#[derive(Debug)]
pub(super) struct Found {
    /// Its key: its path in the collection, or with a list, its URI.
    pub(super) path: String,
    /// With a list: its file.
    pub(super) file: Option<PathBuf>,
    /// Its URI; `None` for a plain name, whose URI is the base's prefix and its path
    /// ([`Uris::of_found`]), made only when needed: an unchanged resource's entry is
    /// copied, not made.
    pub(super) uri: Option<Uri>,
    pub(super) length: u64,
    /// Its modification time: seconds and nanoseconds since the epoch (see [`epoch_time`]).
    pub(super) mtime: (i64, u32),
    /// Its [`Resource::stamp`].
    pub(super) stamp: u64,
}

impl Found {
    /// Its file's path in the collection.
    pub(super) fn relative<'a>(&'a self, collection: &Collection) -> &'a Path {
        match &self.file {
            Some(file) => file.strip_prefix(collection.path()).unwrap_or(file),
            None => Path::new(&self.path),
        }
    }
}

/// How long after a file's change time a change of the same size and modification time
/// may still leave the change time as it was: the granularity of the file system's
/// clock. Linux stamps files from a clock that moves once per timer tick (1 to 10 ms)
/// unless the file system asks for finer; 20 ms is twice the coarsest.
const RACY: Duration = Duration::from_millis(20);

/// [`RACY`] where the file system keeps times in whole seconds (ext4 with 128-byte
/// inodes, ext3, HFS+, some network file systems) or in two (FAT): a change time with no
/// nanoseconds is taken as such a file system's (one that keeps nanoseconds gives 0 once
/// in a billion changes: that file is read again, no more).
const RACY_COARSE: Duration = Duration::from_secs(2);

/// When a file's change time stops telling changes apart: a file changed (its change
/// time) within [`RACY`] of the run's start may change again within the same tick of
/// the file system's clock after the run read it, its size, times and inode unchanged,
/// and the next run would take it as unchanged. Such a file gets stamp 0, which has the
/// next run read it again (git's "racily clean" entries, the same cure).
///
/// The time is the system's clock, not the run's `now`: it is compared with the file
/// system's times, which come from that clock.
#[derive(Debug, Clone, Copy)]
pub(super) struct Racy {
    /// Change times at or after this, seconds and nanoseconds since the epoch, are racy.
    from: (i64, u32),
    /// The same for change times in whole seconds ([`RACY_COARSE`]).
    coarse_from: (i64, u32),
}

impl Racy {
    /// For a run that starts now.
    pub(super) fn now() -> Racy {
        let now = SystemTime::now();
        let before = |window| epoch_time(now.checked_sub(window).unwrap_or(now));
        Racy {
            from: before(RACY),
            coarse_from: before(RACY_COARSE),
        }
    }

    /// The [`Resource::stamp`] of a file changed at `changed` (its change time) with
    /// inode number `inode`: a mix of the two (FNV-1a over their bytes: stable from build
    /// to build, as the state keeps it), never 0; 0 when the change is racy.
    pub(super) fn stamp(self, changed: (i64, u32), inode: u64) -> u64 {
        let from = if changed.1 == 0 {
            self.coarse_from
        } else {
            self.from
        };
        if changed >= from {
            return 0;
        }
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        let bytes = changed
            .0
            .to_le_bytes()
            .into_iter()
            .chain(changed.1.to_le_bytes())
            .chain(inode.to_le_bytes());
        for byte in bytes {
            hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
        }
        hash.max(1)
    }

    /// The stamp of a file as `meta` describes it.
    pub(super) fn stamp_of(self, meta: &fs::Metadata) -> u64 {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let nanos = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
            self.stamp((meta.ctime(), nanos), meta.ino())
        }
        // No change time to trust: the size and modification time alone, as before.
        #[cfg(not(unix))]
        {
            let _ = meta;
            1
        }
    }
}

/// A modification time as seconds and nanoseconds since the epoch (the nanoseconds
/// counting forward, also before it).
pub(super) fn epoch_time(time: SystemTime) -> (i64, u32) {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            d.subsec_nanos(),
        ),
        Err(e) => {
            let d = e.duration();
            let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
            match d.subsec_nanos() {
                0 => (-secs, 0),
                n => (-secs - 1, 1_000_000_000 - n),
            }
        }
    }
}

/// The time of seconds and nanoseconds since the epoch, as [`epoch_time`] gives them.
pub(super) fn time_of((secs, nanos): (i64, u32)) -> SystemTime {
    if secs >= 0 {
        SystemTime::UNIX_EPOCH + Duration::new(secs.unsigned_abs(), nanos)
    } else {
        SystemTime::UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
            + Duration::from_nanos(u64::from(nanos))
    }
}

/// What the walk learns of one file, on the walk's threads.
pub(super) enum Probe {
    /// A file to publish.
    File(Found),
    /// Not published, and why.
    Skipped(&'static str),
    /// Deleted since its directory was read: as if it had not been there.
    Gone,
}

/// What the walk's threads found, gathered a directory at a time.
#[derive(Default)]
pub(super) struct Walked {
    /// The files of each directory that has any, in path order.
    pub(super) found: Vec<Vec<Found>>,
    pub(super) skipped: Vec<Skipped>,
    pub(super) not_portable: Vec<NotPortable>,
    pub(super) error: Option<BuildError>,
}

/// Every file of the collection that is published, with its size and time, in path
/// order; what is not published goes to `skipped`.
///
/// Directories are read, and their files' metadata taken, on as many threads as the
/// machine has cores: an incremental run reads no file it did not change, so noticing
/// what changed, a `stat` per file, is most of its work. Each directory is a task of a
/// rayon scope, and each file's metadata is taken relative to its directory (`fstatat`,
/// as `std::fs::DirEntry::metadata` does), not by its full path. (jwalk, measured first,
/// took as long on two cores as this on one: its ordered results are awaited by a
/// thread that spins, and it takes metadata by full path.)
pub(super) fn walk(
    collection: &Collection,
    directory: &Directory,
    racy: Racy,
    skipped: &mut Vec<Skipped>,
    not_portable: &mut Vec<NotPortable>,
) -> Result<Vec<Found>, BuildError> {
    let uris = Uris::new(directory);
    // On rayon's global pool (a thread per core unless `RAYON_NUM_THREADS` says
    // otherwise), made once per process: a pool of its own each run took 1-4 ms to start
    // its threads while the last run's state was being read beside it.
    let walked = std::sync::Mutex::new(Walked::default());
    let top = Within {
        path: PathBuf::new(),
        text: Some(String::new()),
        depth: 1,
        plain: true,
    };
    rayon::scope(|scope| walk_directory(scope, &walked, &uris, collection, top, racy));
    let walked = walked.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(error) = walked.error {
        return Err(error);
    }
    skipped.extend(walked.skipped);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
    not_portable.extend(walked.not_portable);
    not_portable.sort_by(|a, b| a.path.cmp(&b.path));
    // In path order. Each directory's files came sorted: in the order of their first
    // paths, the directories' runs are one sorted run unless a directory holds files
    // and subdirectories whose paths interleave, which a sort of the whole then merges
    // (on the walk's threads; a stable sort finds runs). A collection of directories that
    // hold files or directories, not both interleaved, is joined in one pass instead of
    // moved through a merge sort.
    let mut runs = walked.found;
    runs.sort_unstable_by(|a, b| a[0].path.cmp(&b[0].path));
    let apart = runs
        .windows(2)
        .all(|pair| pair[0][pair[0].len() - 1].path < pair[1][0].path);
    let mut found = Vec::with_capacity(runs.iter().map(Vec::len).sum());
    for run in runs {
        found.extend(run);
    }
    if !apart {
        rayon::slice::ParallelSliceMut::par_sort_by(found.as_mut_slice(), |a, b| {
            a.path.cmp(&b.path)
        });
    }
    Ok(found)
}

/// A directory of the collection to walk.
pub(super) struct Within {
    /// Its path in the collection.
    pub(super) path: PathBuf,
    /// The same as text, `/`-separated, ending in `/` (empty at the top); `None` when not
    /// UTF-8, and no file in it is published.
    pub(super) text: Option<String>,
    /// Of its entries: 1 at the top.
    pub(super) depth: usize,
    /// Whether each segment of `text` is plain ([`plain`]): then a file in it has a plain
    /// path when its name is.
    pub(super) plain: bool,
}

/// Reads the directory `within` of the collection into `walked`, its files sorted by
/// name and its subdirectories as tasks of their own.
pub(super) fn walk_directory<'s>(
    scope: &rayon::Scope<'s>,
    walked: &'s std::sync::Mutex<Walked>,
    uris: &'s Uris<'s>,
    collection: &'s Collection,
    within: Within,
    racy: Racy,
) {
    // After an error the run fails: the directories not read yet are not.
    if walked.lock().map_or(true, |w| w.error.is_some()) {
        return;
    }
    let dir = collection.path().join(&within.path);
    let mut skipped = Vec::new();
    let mut files: Vec<Found> = Vec::new();
    // The names of the directories walked from here, for the portability check once all
    // are read (with those of the files, the ends of their paths).
    let mut directories: Vec<String> = Vec::new();
    let result = (|| -> Result<(), BuildError> {
        let read = |source| BuildError::Read {
            path: dir.clone(),
            source,
        };
        let listing = match Listing::open(collection, &within.path) {
            Ok(listing) => listing,
            // The collection itself must be read; below it, a directory removed since its
            // parent was read is as if it had not been there, one replaced by a link is
            // a link (not walked into), and one that cannot be read is reported and left
            // out, the rest published.
            Err(e) if within.depth == 1 => return Err(read(e)),
            Err(e) if is_linked(&e) => {
                skipped.push(Skipped::because(
                    &within.path,
                    "a symbolic link: only the collection's own files are published",
                ));
                return Ok(());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => {
                skipped.push(Skipped::unreadable(&within.path, &e));
                return Ok(());
            }
        };
        let each = |name: &OsStr, kind: io::Result<Kind>, stat: &dyn Fn() -> io::Result<Stat>| {
            let kind = match kind {
                Ok(kind) => kind,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(e) => {
                    skipped.push(Skipped::unreadable(within.path.join(name), &e));
                    return;
                }
            };
            // Hidden names are not served, and the publication's own top-level names
            // would hide the collection's: neither is published nor, a directory,
            // walked into.
            if let Some(reason) = unpublished_name(name.as_encoded_bytes(), within.depth) {
                skipped.push(Skipped::because(within.path.join(name), reason));
                return;
            }
            if kind == Kind::Directory {
                let utf8 = name.to_str();
                let text = within
                    .text
                    .as_ref()
                    .zip(utf8)
                    .map(|(text, name)| [text, name, "/"].concat());
                let sub = Within {
                    path: within.path.join(name),
                    text,
                    depth: within.depth + 1,
                    plain: within.plain && utf8.is_some_and(plain),
                };
                directories.extend(utf8.map(str::to_owned));
                scope.spawn(move |scope| {
                    walk_directory(scope, walked, uris, collection, sub, racy);
                });
                return;
            }
            match probe(kind, stat, &within, name, uris, racy) {
                Ok(Probe::File(file)) => files.push(file),
                Ok(Probe::Skipped(reason)) => {
                    skipped.push(Skipped::because(within.path.join(name), reason));
                }
                Ok(Probe::Gone) => {}
                Err(e) => skipped.push(Skipped::unreadable(within.path.join(name), &e)),
            }
        };
        listing.for_each(each).map_err(read)?;
        Ok(())
    })();
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    // Put in name order by the check when names may fold alike, so that of two such the
    // same one is reported whatever order the directory lists them in. A file's name is
    // the end of its path, after the directory's.
    let start = within.text.as_ref().map_or(0, String::len);
    let mut texts: Vec<&str> = files
        .iter()
        .filter_map(|file| file.path.get(start..))
        .chain(directories.iter().map(String::as_str))
        .collect();
    let mut not_portable: Vec<NotPortable> = super::portable::not_portable(&mut texts)
        .into_iter()
        .map(|(i, reason)| NotPortable {
            path: within.path.join(texts[i]),
            reason,
        })
        .collect();
    let mut walked = walked.lock().unwrap_or_else(|e| e.into_inner());
    match result {
        Err(error) => {
            walked.error.get_or_insert(error);
        }
        Ok(()) => {
            if !files.is_empty() {
                walked.found.push(files);
            }
            walked.skipped.append(&mut skipped);
            walked.not_portable.append(&mut not_portable);
        }
    }
}

/// What the entry `name` of the directory `within`, not a directory itself, is to the
/// publication, `stat` taking its size and time; its URI is made here only when its name
/// is not plain (see [`Uris`]).
pub(super) fn probe(
    kind: Kind,
    stat: &dyn Fn() -> io::Result<Stat>,
    within: &Within,
    name: &OsStr,
    uris: &Uris<'_>,
    racy: Racy,
) -> io::Result<Probe> {
    if kind == Kind::Symlink {
        return Ok(Probe::Skipped(
            "a symbolic link: only the collection's own files are published",
        ));
    }
    if kind != Kind::File {
        return Ok(Probe::Skipped("not a regular file"));
    }
    let (Some(text), Some(name)) = (&within.text, name.to_str()) else {
        return Ok(Probe::Skipped("a name that is not UTF-8 makes no URI"));
    };
    let path = [text, name].concat();
    let stat = match stat() {
        Ok(stat) => stat,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Gone),
        Err(e) => return Err(e),
    };
    // A W3C Datetime has a four-digit year.
    if !W3C_YEARS.contains(&stat.mtime.0) {
        return Ok(Probe::Skipped(
            "a modification time outside the years 0000 to 9999",
        ));
    }
    // The directory's part was checked once for all its files.
    let uri = if uris.prefix.is_some() && within.plain && plain(name) {
        None
    } else {
        match uris.of(&path, &within.path.join(name)) {
            Ok(uri) => Some(uri),
            Err(reason) => return Ok(Probe::Skipped(reason)),
        }
    };
    Ok(Probe::File(Found {
        path,
        file: None,
        uri,
        length: stat.length,
        mtime: stat.mtime,
        stamp: racy.stamp(stat.changed, stat.inode),
    }))
}

/// What an entry of a directory is, as the walk tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Directory,
    File,
    Symlink,
    Other,
}

/// A file's size and modification time, as [`Found`] keeps them.
pub(super) struct Stat {
    pub(super) length: u64,
    pub(super) mtime: (i64, u32),
    /// Its change time, as [`epoch_time`] gives a time.
    pub(super) changed: (i64, u32),
    /// Its inode number (0 where there is none).
    pub(super) inode: u64,
}

/// A directory being listed: on Linux through its handle, its entries read with
/// `getdents64` into one buffer (`RawDir`) and each file's metadata taken relative to
/// the handle (`fstatat`), with no allocation per entry; std's `ReadDir` allocates each
/// name twice (its `CString`, then `file_name`) and moves a `statx` result of 256 bytes
/// through three types, a sixth of the walk's CPU besides its system calls (perf). The
/// system calls are the same. Elsewhere, std's `ReadDir`.
///
/// rustix is here for speed, not confinement: the handle is opened by
/// [`Collection::open_dir`] (cap-std, through no link), and every name is read and stat'ed
/// relative to it without following a link.
#[cfg(target_os = "linux")]
pub(super) struct Listing(rustix::fd::OwnedFd);

#[cfg(target_os = "linux")]
impl Listing {
    /// The directory `relative` of the collection, opened through no link.
    pub(super) fn open(collection: &Collection, relative: &Path) -> io::Result<Listing> {
        collection.open_dir(relative).map(Listing)
    }

    /// Calls `each` with every entry but `.` and `..`: its name, its kind (or why it
    /// could not be told), and what takes its metadata, not following a link.
    pub(super) fn for_each(
        self,
        mut each: impl FnMut(&OsStr, io::Result<Kind>, &dyn Fn() -> io::Result<Stat>),
    ) -> io::Result<()> {
        use rustix::fs::{AtFlags, FileType, RawDir};
        use std::os::unix::ffi::OsStrExt;
        let kind = |file_type: FileType| match file_type {
            FileType::Directory => Kind::Directory,
            FileType::RegularFile => Kind::File,
            FileType::Symlink => Kind::Symlink,
            _ => Kind::Other,
        };
        // `st_mtime` is an `i64` here, an `i32` on 32-bit targets.
        #[allow(clippy::useless_conversion)]
        let stat = |name: &std::ffi::CStr| -> io::Result<(Kind, Stat)> {
            let stat = rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW)?;
            let nanos = u32::try_from(stat.st_mtime_nsec).unwrap_or(0);
            let changed_nanos = u32::try_from(stat.st_ctime_nsec).unwrap_or(0);
            Ok((
                kind(FileType::from_raw_mode(stat.st_mode)),
                Stat {
                    length: u64::try_from(stat.st_size).unwrap_or(0),
                    mtime: (i64::from(stat.st_mtime), nanos),
                    changed: (i64::from(stat.st_ctime), changed_nanos),
                    inode: u64::from(stat.st_ino),
                },
            ))
        };
        let mut buffer = vec![std::mem::MaybeUninit::uninit(); 64 * 1024];
        let mut entries = RawDir::new(&self.0, &mut buffer);
        while let Some(entry) = entries.next() {
            let entry = entry?;
            let name = entry.file_name();
            if matches!(name.to_bytes(), b"." | b"..") {
                continue;
            }
            // A file system that gives no type in the listing: the entry's own.
            let found = match entry.file_type() {
                FileType::Unknown => stat(name).map(|(kind, _)| kind),
                file_type => Ok(kind(file_type)),
            };
            each(OsStr::from_bytes(name.to_bytes()), found, &|| {
                stat(name).map(|(_, stat)| stat)
            });
        }
        Ok(())
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) struct Listing(fs::ReadDir);

#[cfg(not(target_os = "linux"))]
impl Listing {
    /// The directory `relative` of the collection, checked not to be a link first (a
    /// moment is left between the check and the listing here).
    pub(super) fn open(collection: &Collection, relative: &Path) -> io::Result<Listing> {
        let dir = collection.path().join(relative);
        if !relative.as_os_str().is_empty() && fs::symlink_metadata(&dir)?.is_symlink() {
            return Err(io::Error::new(io::ErrorKind::NotFound, LINKED));
        }
        fs::read_dir(dir).map(Listing)
    }

    /// Calls `each` with every entry: its name, its kind (or why it could not be told),
    /// and what takes its metadata, not following a link.
    pub(super) fn for_each(
        self,
        mut each: impl FnMut(&OsStr, io::Result<Kind>, &dyn Fn() -> io::Result<Stat>),
    ) -> io::Result<()> {
        for entry in self.0 {
            let entry = entry?;
            let kind = entry.file_type().map(|file_type| {
                if file_type.is_dir() {
                    Kind::Directory
                } else if file_type.is_symlink() {
                    Kind::Symlink
                } else if file_type.is_file() {
                    Kind::File
                } else {
                    Kind::Other
                }
            });
            let stat = || {
                let meta = entry.metadata()?;
                #[cfg(unix)]
                let (changed, inode) = {
                    use std::os::unix::fs::MetadataExt;
                    let nanos = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
                    ((meta.ctime(), nanos), meta.ino())
                };
                // No change time: every stamp the same (see `Racy::stamp_of`).
                #[cfg(not(unix))]
                let (changed, inode) = ((i64::MIN, 0), 0);
                Ok(Stat {
                    length: meta.len(),
                    mtime: epoch_time(meta.modified()?),
                    changed,
                    inode,
                })
            };
            each(&entry.file_name(), kind, &stat);
        }
        Ok(())
    }
}

/// Why an entry named `name` (its bytes, whether UTF-8 or not) at `depth` (1 at the top)
/// is not published, if it is not.
pub(super) fn unpublished_name(name: &[u8], depth: usize) -> Option<&'static str> {
    let top = depth == 1;
    if top && (name == DOCS.as_bytes() || name == b".well-known") {
        Some("a name the publication uses for its own documents")
    } else if name.starts_with(b".") {
        Some("a hidden name is not published")
    } else {
        None
    }
}

/// What reading a file came to.
#[derive(Debug)]
pub(super) enum Hashed {
    /// Its length and digests.
    Digests(resourcesync_model::Digests),
    /// Deleted (or replaced by what is not a file) since the walk found it.
    Gone,
    /// It could not be read: skipped, with the error, and the rest published.
    Unreadable(io::Error),
}

impl Hashed {
    /// The digests, if the file was read.
    pub(super) fn digests(&self) -> Option<&resourcesync_model::Digests> {
        match self {
            Hashed::Digests(d) => Some(d),
            _ => None,
        }
    }
}

/// Reads and hashes the files `todo` names (indexes into `found`), on as many threads as
/// the machine has cores, and returns what each came to, in `todo`'s order. A file that
/// cannot be read is one result among the others, not the run's error.
pub(super) fn hash_files(
    collection: &Collection,
    found: &[Found],
    todo: &[usize],
    progress: &dyn BuildProgress,
) -> Result<Vec<(usize, Hashed)>, BuildError> {
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(todo.len())
        .max(1);
    let work = || {
        let mut buffer = vec![0; 256 * 1024];
        let mut digests = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = todo.get(k) else {
                return digests;
            };
            let relative = found[i].relative(collection);
            digests.push(match hash_file(collection, relative, &mut buffer) {
                Ok(d) => (i, Hashed::Digests(d)),
                // Deleted since the walk found it: as if the walk had not.
                Err(e) if e.kind() == io::ErrorKind::NotFound => (i, Hashed::Gone),
                Err(e) => (i, Hashed::Unreadable(e)),
            });
            progress.hashed();
        }
    };
    let mut all = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(work)).collect();
        let mut all = Vec::with_capacity(todo.len());
        for handle in handles {
            match handle.join() {
                Ok(digests) => all.extend(digests),
                Err(_) => {
                    return Err(BuildError::Read {
                        path: collection.path().to_owned(),
                        source: io::Error::other("a hashing thread panicked"),
                    });
                }
            }
        }
        Ok(all)
    })?;
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all)
}

/// Length, md5 and sha-256 of the collection's file `relative`, in one pass.
pub(super) fn hash_file(
    collection: &Collection,
    relative: &Path,
    buffer: &mut [u8],
) -> io::Result<resourcesync_model::Digests> {
    let mut file = collection.open_file(relative)?;
    let mut fixity = Fixity::new();
    loop {
        match file.read(buffer) {
            Ok(0) => return Ok(fixity.finish()),
            Ok(n) => fixity.update(&buffer[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// The resources a list of URI and file pairs names, each file with its size and time;
/// `base` is the publication's, whose own documents no listed URI may name.
pub(super) fn listed(
    collection: &Collection,
    list: &Path,
    base: &Uri,
    racy: Racy,
) -> Result<Vec<Found>, BuildError> {
    let read = |source| BuildError::Read {
        path: list.to_owned(),
        source,
    };
    // The caller's own path, followed as given; but only a regular file, no more than
    // its size: a FIFO or a device named as the list is refused, not waited on or read
    // without end.
    let bytes = crate::directory::read_file(list, false).map_err(read)?;
    let text = String::from_utf8(bytes)
        .map_err(|e| read(io::Error::new(io::ErrorKind::InvalidData, e.utf8_error())))?;
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    for (n, line) in text.lines().enumerate() {
        let wrong = |reason: String| BuildError::List {
            list: list.to_owned(),
            line: n + 1,
            reason,
        };
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (uri, file) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| wrong("expected a URI and a file".into()))?;
        let uri: Uri = uri.parse().map_err(|e| wrong(format!("{e}")))?;
        if !(uri.as_str().starts_with("http://") || uri.as_str().starts_with("https://")) {
            return Err(wrong(format!("{uri} is not an http or https URI")));
        }
        if !seen.insert(uri.as_str().to_owned()) {
            return Err(wrong(format!("{uri} is listed twice")));
        }
        // The publication's own documents are not resources: a list naming one would
        // publish another file's digests at the Capability List's URI.
        if let Some(rest) = uri.as_str().strip_prefix(base.as_str()) {
            let top = rest.split(['/', '?', '#']).next().unwrap_or(rest);
            if top == DOCS || top == ".well-known" {
                return Err(wrong(format!(
                    "{uri} is where the publication's own documents are"
                )));
            }
        }
        // Relative to the collection, and inside it: no root, no `..`; a file, named as
        // the walk would find it (no trailing `/`, no hidden name on the way).
        let file = file.trim();
        if file.ends_with('/') {
            return Err(wrong(format!(
                "{}: a file is named without a trailing /",
                Shown(Path::new(file))
            )));
        }
        let relative = Path::new(file);
        let inside = relative.components().all(|c| {
            matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        });
        if !inside {
            return Err(wrong(format!(
                "{}: a file is named relative to the collection, inside it (no root, no ..)",
                Shown(relative)
            )));
        }
        if relative.components().any(|c| {
            matches!(c, std::path::Component::Normal(name) if name.as_encoded_bytes().starts_with(b"."))
        }) {
            return Err(wrong(format!(
                "{}: a hidden name is not published, listed or walked",
                Shown(relative)
            )));
        }
        // Opened as the hashing opens it: through no link at any level, so that a list
        // reaches no further than the walk (a link, or a path through a linked directory,
        // would publish whatever it leads to).
        let file = collection.path().join(relative);
        let shown = Shown(&file);
        let meta = match collection.open_file(relative).and_then(|f| f.metadata()) {
            Ok(meta) => meta,
            Err(e) if is_linked(&e) => return Err(wrong(format!("{shown}: {LINKED}"))),
            Err(e) if e.kind() == io::ErrorKind::NotFound && e.get_ref().is_some() => {
                return Err(wrong(format!("{shown} is not a file")));
            }
            Err(e) => return Err(wrong(format!("{shown}: {e}"))),
        };
        let modified = meta
            .modified()
            .map_err(|e| wrong(format!("{shown}: {e}")))?;
        if !W3C_YEARS.contains(&epoch_time(modified).0) {
            return Err(wrong(format!(
                "{shown}: a modification time outside the years 0000 to 9999"
            )));
        }
        found.push(Found {
            path: uri.as_str().to_owned(),
            file: Some(file),
            uri: Some(uri),
            length: meta.len(),
            mtime: epoch_time(modified),
            stamp: racy.stamp_of(&meta),
        });
    }
    Ok(found)
}
