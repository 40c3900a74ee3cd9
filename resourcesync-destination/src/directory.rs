//! A directory kept in step with a Source: what a driver of the sans-IO client does on
//! disk once the client has decided, written once for every driver, blocking or async.
//!
//! A driver makes the requests the client asks for and hands the responses over; a
//! resource's or a package's body also goes to a temporary file
//! ([`DirectoryDestination::keeps_body`], [`Bodies::create`]: the client verifies the
//! bytes as they pass, the file keeps them). Each event the client then polls out goes to
//! [`DirectoryDestination::apply`], which stores, extracts, deletes or saves, and
//! confirms to the client what it did (or that it failed). What is kept beside the
//! resources, the state and the inventory, lives in `DIR/.resourcesync/` ([`KEPT`]), a
//! name the client's path mapper keeps out of every Source's reach
//! ([`DirectoryDestination::paths`]).
//!
//! Its promises, whatever the Source lists and whatever links DIR holds:
//! - Nothing is written, renamed or deleted outside DIR. Every file operation goes
//!   through a handle on DIR ([`cap_std::fs::Dir`]), which resolves each path beneath it
//!   and refuses one that leads out (a `..`, an absolute link, a link swapped in while the
//!   run goes), where a check of the path before the operation would race with the
//!   change of a link. On top of that, no resource is written or deleted through a
//!   directory that is a symbolic link at all, even one that points inside DIR (it could
//!   lead into `.resourcesync/`).
//! - Nothing is overwritten or deleted that a sync did not store. A file at the path of
//!   a resource the inventory does not hold is a conflict ([`Client::declined`]), left as
//!   it is, unless its bytes are the listed ones (then it is adopted: a run stopped before
//!   it saved its inventory leaves such files) or the caller asked to replace such files
//!   ([`DirectoryDestination::with_replace_foreign`]). A deletion removes a file, and an
//!   update replaces it, only if it still holds the bytes the inventory says were stored
//!   (an edited file is a conflict, kept); a baseline, which reads the files first
//!   ([`DirectoryDestination::verify`]), repairs them.
//!
//! ```no_run
//! use resourcesync_destination::DirectoryDestination;
//! use resourcesync_client::{Client, Config, Mode};
//!
//! let mut dest = DirectoryDestination::open("mirror")?;
//! let (state, inventory) = dest.load()?;
//! let config = Config::new(
//!     "https://example.com/".parse()?,
//!     Mode::Baseline { prefer_dump: false },
//! )?;
//! let config = config.clone().with_paths(dest.paths(&config));
//! let mut client = Client::new(config, state, inventory);
//! // ... make the requests, writing a body to `dest.bodies().create(request.id)` when
//! // `dest.keeps_body(&request)` ...
//! while let Some(event) = client.poll_event() {
//!     dest.apply(&mut client, &event)?;
//! }
//! dest.save(&client)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use cap_fs_ext::DirExt as _;
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use http::{HeaderMap, StatusCode};
use resourcesync_client::local_path::{FileSystem, LocalPath, PathMapper};
use resourcesync_client::{
    Client, Config, Decision, Event, Held, Inventory, MemoryInventory, Misuse, Mode, Purpose,
    Request, RequestId, Shard, State,
};
use resourcesync_model::{Algorithms, Fixity, Measure, Measured};
use resourcesync_package::Package;
use xxhash_rust::xxh3::xxh3_128;

use crate::inventory::{DiskInventory, KeptInventory};
use crate::options::SyncOptions;

mod files;
mod kept;

use files::*;
pub(crate) use files::{copy_bitstream, holds, temp_name};
pub use kept::JOURNAL;
use kept::*;
#[cfg(feature = "object-store")]
pub(crate) use kept::{INVENTORY, STATE, STATE_MAX};

/// The name under the directory that a [`DirectoryDestination`] keeps for itself: the
/// state, the inventory and the temporary files.
pub const KEPT: &str = ".resourcesync";

/// Under [`KEPT`]: each shard's own files, in `K-of-N/`.
pub(crate) const SHARDS: &str = "shards";

/// Under [`SHARDS`]: the lock a shard holds while it checks the split and makes its
/// directory.
const SPLIT_LOCK: &str = "split.lock";

/// A shard's directory under [`SHARDS`]: `K-of-N`.
pub(crate) fn shard_name(shard: Shard) -> String {
    format!("{}-of-{}", shard.index(), shard.count())
}

/// The shard a directory under [`SHARDS`] is named for: exactly as
/// [`shard_name`] writes it (`0-of-4`; not `00-of-4` nor `+0-of-4`).
pub(crate) fn parse_shard(name: &str) -> Option<Shard> {
    let (k, n) = name.split_once("-of-")?;
    let shard = Shard::new(k.parse().ok()?, n.parse().ok()?)?;
    (shard_name(shard) == name).then_some(shard)
}

/// What a [`DirectoryDestination`] could not do that is not a resource's failure (those
/// are confirmed to the client with [`Client::failed`] and the run goes on).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DestinationError {
    /// A file or directory of the destination's own could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The saved state or inventory is not what this program saved.
    #[error("{} is unreadable: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: serde_json::Error,
    },
    /// The inventory file cannot be read or written.
    #[error("{}: {source}", path.display())]
    Inventory {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The destination's own directory is a symbolic link (or not a directory): it is not
    /// used, as what is kept there could then be written elsewhere.
    #[error("{} is not a directory of its own (a symbolic link, or a file)", path.display())]
    NotOwnDirectory {
        /// The path.
        path: PathBuf,
    },
    /// Another process (a sync, an audit) has the directory open: two at once would
    /// remove each other's temporary files and race on the same paths.
    #[error("another sync is using {} (it holds {})", dir.display(), lock.display())]
    Busy {
        /// The directory.
        dir: PathBuf,
        /// The lock file held.
        lock: PathBuf,
    },
    /// A sync without `--shard` keeps the directory: a shard would not know its files.
    #[error("{} was synced without --shard: its files are that sync's inventory's; sync it without --shard, or shard a new directory", dir.display())]
    Unsharded {
        /// The directory.
        dir: PathBuf,
    },
    /// Shards keep the directory, and this run is not one of them: an unsharded sync
    /// (the shards' files are not its inventory's; an audit of the whole is allowed), or
    /// a shard of another split.
    #[error("{} is kept by shards ({found} in .resourcesync/shards/): {}", dir.display(),
        if asked == "all" { "sync it with --shard K/N, or audit it whole".to_owned() }
        else { format!("{asked} is not of that split") })]
    Shards {
        /// The directory.
        dir: PathBuf,
        /// A shard found there (`K-of-N`).
        found: String,
        /// The shard asked for (`K-of-N`), or `all`.
        asked: String,
    },
    /// The object store refused, or could not be reached (a bucket's destination,
    /// feature `object-store`): the key it met, and why.
    #[error("{key}: {source}")]
    Store {
        /// The object's key, or the store's URL.
        key: String,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The client refused a confirmation: a bug of the driver's (the client changed
    /// nothing).
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

/// The temporary directory the bodies of resources and packages go to while they
/// arrive, by a handle: cheap to clone, for the tasks of an async driver. A destination
/// that sends bodies on rather than renaming files into place (a bucket's) may also take
/// them in memory, within a budget ([`reserve`](Bodies::reserve),
/// [`keep`](Bodies::keep)): a body that does not fit goes to its file.
#[derive(Clone, Debug)]
pub struct Bodies {
    tmp: Arc<Dir>,
    /// Its path, for the errors.
    shown: Arc<PathBuf>,
    /// The bodies held in memory, if the destination takes any.
    memory: Option<Arc<Memory>>,
}

/// Bodies held in memory, and the budget they share.
#[derive(Debug)]
struct Memory {
    /// The most bytes held at once, all bodies together.
    budget: u64,
    /// The most bytes of one body.
    each: u64,
    /// Bytes reserved now, shared by every [`Bodies`] made with the same budget.
    used: Arc<std::sync::atomic::AtomicU64>,
    /// The whole bodies, by request, until the destination takes them; and the requests
    /// cancelled before their body was kept.
    held: std::sync::Mutex<HashMap<RequestId, Slot>>,
}

/// A request's place in [`Memory::held`].
#[derive(Debug)]
enum Slot {
    /// Its whole body, until the destination takes it.
    Body(InMemory),
    /// Cancelled before its body came: the body, if its task still keeps one (it was
    /// past its last await when aborted), is dropped then.
    Cancelled,
}

/// A whole body held in memory; its bytes go back to the budget when it is dropped.
#[derive(Debug)]
pub struct InMemory {
    chunks: Vec<bytes::Bytes>,
    reserved: u64,
    memory: Arc<Memory>,
}

impl InMemory {
    /// The body's chunks, in order.
    pub fn chunks(&self) -> &[bytes::Bytes] {
        &self.chunks
    }
}

impl Drop for InMemory {
    fn drop(&mut self) {
        self.memory
            .used
            .fetch_sub(self.reserved, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Bodies {
    /// The bodies' directory `tmp`, shown as `shown` in errors.
    #[cfg(feature = "object-store")]
    pub(crate) fn new(tmp: Dir, shown: PathBuf) -> Bodies {
        Bodies {
            tmp: Arc::new(tmp),
            shown: Arc::new(shown),
            memory: None,
        }
    }

    /// Takes bodies of up to `each` bytes in memory while all of them together, with
    /// those of every other [`Bodies`] that shares `used`, hold at most `budget` bytes.
    #[cfg(feature = "object-store")]
    pub(crate) fn with_memory(
        mut self,
        budget: u64,
        each: u64,
        used: Arc<std::sync::atomic::AtomicU64>,
    ) -> Bodies {
        self.memory = Some(Arc::new(Memory {
            budget,
            each,
            used,
            held: std::sync::Mutex::new(HashMap::new()),
        }));
        self
    }

    /// Whether a body that has `so_far` bytes may take `more` in memory: true when they
    /// were reserved (give them back with [`release`](Bodies::release) if the body goes
    /// to its file after all). False with no memory, past a body's most, or past the
    /// budget.
    pub fn reserve(&self, so_far: u64, more: u64) -> bool {
        use std::sync::atomic::Ordering;
        let Some(memory) = &self.memory else {
            return false;
        };
        if so_far + more > memory.each {
            return false;
        }
        memory
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                (used + more <= memory.budget).then_some(used + more)
            })
            .is_ok()
    }

    /// Gives back `reserved` bytes of the budget.
    pub fn release(&self, reserved: u64) {
        if let Some(memory) = &self.memory
            && reserved > 0
        {
            memory
                .used
                .fetch_sub(reserved, std::sync::atomic::Ordering::AcqRel);
        }
    }

    /// Holds `request`'s whole body, `chunks`, for which `reserved` bytes were
    /// [reserved](Bodies::reserve), until the destination takes it.
    pub fn keep(&self, request: RequestId, chunks: Vec<bytes::Bytes>, reserved: u64) {
        let Some(memory) = &self.memory else {
            return;
        };
        let body = InMemory {
            chunks,
            reserved,
            memory: memory.clone(),
        };
        let mut held = memory.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(Slot::Cancelled) = held.remove(&request) {
            // Dropped here, its bytes back in the budget: no one will take it.
            return;
        }
        held.insert(request, Slot::Body(body));
    }

    /// `request`'s body, if it is held in memory (taken: the next call finds none).
    pub fn take(&self, request: RequestId) -> Option<InMemory> {
        let memory = self.memory.as_ref()?;
        let mut held = memory.held.lock().unwrap_or_else(|p| p.into_inner());
        match held.remove(&request)? {
            Slot::Body(body) => Some(body),
            // Still cancelled: the body may yet come.
            Slot::Cancelled => {
                held.insert(request, Slot::Cancelled);
                None
            }
        }
    }

    /// Drops `request`'s body, now or, if its task has not kept it yet, when it does: a
    /// cancelled request's task is aborted, but one already past its last await still
    /// keeps its body, which would otherwise hold its bytes of the budget to the run's
    /// end. The mark left for a body not kept yet stays as long as these bodies (a
    /// destination's, one run): an id for each request cancelled.
    pub fn cancel(&self, request: RequestId) {
        let Some(memory) = &self.memory else {
            return;
        };
        let mut held = memory.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.remove(&request).is_none() {
            held.insert(request, Slot::Cancelled);
        }
    }

    /// The directory's handle.
    #[cfg(feature = "object-store")]
    pub(crate) fn dir(&self) -> &Dir {
        &self.tmp
    }

    /// Creates (or truncates) the temporary file of `request`'s body. Write it only for
    /// a response with a success status, and only when
    /// [`DirectoryDestination::keeps_body`] said so.
    /// An error names the file (a full disk, say, is told with the path it met).
    pub fn create(&self, request: RequestId) -> io::Result<std::fs::File> {
        let name = temp_name(request);
        match self.tmp.create(&name) {
            Ok(file) => Ok(file.into_std()),
            Err(e) => Err(io::Error::new(
                e.kind(),
                format!("{}: {e}", self.shown.join(name).display()),
            )),
        }
    }

    /// The error `e` met writing the body of `request`, with the file's path.
    pub fn error(&self, request: RequestId, e: &io::Error) -> String {
        format!("{}: {e}", self.shown.join(temp_name(request)).display())
    }
}

/// A directory kept in step with a Source, and its `.resourcesync/` (see the
/// [module](self)).
pub struct DirectoryDestination {
    /// The directory the resources go to, as named (for messages).
    dir: PathBuf,
    /// A handle on it: every operation on a resource goes through it.
    root: Dir,
    /// `.resourcesync/` (a shard's: `.resourcesync/shards/K-of-N/`).
    kept: Dir,
    /// Its path, for messages.
    kept_path: PathBuf,
    /// `.resourcesync/tmp/`.
    bodies: Bodies,
    /// Directories this run made or checked (no symbolic link on the way), each with a
    /// handle on it, so that each is checked and opened once: per resource, a
    /// `create_dir_all` is a system call or more for every level, and a path beneath the
    /// root is opened level by level for every call (`openat2` and `close` for each of
    /// a placement's `stat` and `rename`). A file is placed through its directory's
    /// handle, by its name alone. The handle is on the directory the run checked: a
    /// link put in its place later is never followed (as a path resolved beneath the
    /// root would refuse it); a directory renamed away from under DIR by someone else
    /// during the run takes the files placed through its handle along, as DIR itself and
    /// `.resourcesync/tmp/`, also held by handles, would.
    made: HashMap<PathBuf, Arc<Dir>>,
    /// The packages open for extraction, by the request they came in.
    packages: HashMap<RequestId, Package<io::BufReader<std::fs::File>>>,
    /// Replace a file at a resource's path that no sync stored.
    replace_foreign: bool,
    /// `.resourcesync/placed.jsonl`, open for appending once something is placed.
    journal: Option<std::fs::File>,
    /// The rules of names of DIR's file system, found by trying.
    file_system: FileSystem,
    /// For a shard's audit: what the other shards stored (see
    /// [`know_other_shards`](Self::know_other_shards)).
    elsewhere: Vec<resourcesync_model::Uri>,
    /// `.resourcesync/lock` (and a shard's own), locked for as long as this destination
    /// is open.
    _locks: Vec<std::fs::File>,
    /// A baseline's [`verify`](Self::verify) has files changed since stored fetched
    /// again (see [`with_repair`](Self::with_repair)).
    repair: bool,
}

impl fmt::Debug for DirectoryDestination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectoryDestination")
            .field("dir", &self.dir)
            .field("packages", &self.packages.len())
            .field("replace_foreign", &self.replace_foreign)
            .finish_non_exhaustive()
    }
}

impl DirectoryDestination {
    /// Opens `dir` (made if missing, not its parents) and its `.resourcesync/tmp/`, and removes the
    /// temporary files a run that was stopped left there: they are of no use to the next.
    /// The directory is locked while the destination is open: another open of it, by this
    /// process or another, is [`DestinationError::Busy`].
    /// `.resourcesync/` and `tmp/` must be directories, not symbolic links.
    pub fn open(dir: impl Into<PathBuf>) -> Result<DirectoryDestination, DestinationError> {
        DirectoryDestination::open_shard(dir, None)
    }

    /// [`open`](Self::open) for one shard of the Source's resources (`None`: all of
    /// them): the shard's state, inventory, journal, lock and temporary files are its own,
    /// in `.resourcesync/shards/K-of-N/`, so that N runs, one per shard, each in a process
    /// or on a machine of its own, fill one directory together. The resources' files are
    /// DIR's, whichever shard stored them (the shards' URIs, and so their paths, are
    /// apart).
    pub fn open_shard(
        dir: impl Into<PathBuf>,
        shard: Option<Shard>,
    ) -> Result<DirectoryDestination, DestinationError> {
        DirectoryDestination::open_inner(dir.into(), shard, false, false)
    }

    /// [`open`](Self::open) for an audit of the whole of a directory that shards keep
    /// ([`open_shard`](Self::open_shard)): its own `.resourcesync/` (an unsharded run
    /// elsewhere is refused, as the shards' files are not its inventory's), and the
    /// shards' inventories to read with [`shard_records`](Self::shard_records).
    pub fn open_whole(dir: impl Into<PathBuf>) -> Result<DirectoryDestination, DestinationError> {
        DirectoryDestination::open_inner(dir.into(), None, true, false)
    }

    /// `top_locked`: DIR's lock is held already by the caller (an audit reading the
    /// shards' inventories, [`shard_records`](Self::shard_records)).
    pub(crate) fn open_inner(
        dir: PathBuf,
        shard: Option<Shard>,
        whole: bool,
        top_locked: bool,
    ) -> Result<DirectoryDestination, DestinationError> {
        let io_at = |path: &Path| {
            let path = path.to_owned();
            move |source| DestinationError::Io { path, source }
        };
        // DIR itself is made, not its parents (as `mkdir`, not `mkdir -p`): a mistyped
        // path is an error naming it, not a new tree.
        match std::fs::create_dir(&dir) {
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(io_at(&dir)(e)),
            _ => {}
        }
        let root = Dir::open_ambient_dir(&dir, ambient_authority()).map_err(io_at(&dir))?;
        let top = own_dir(&root, Path::new(KEPT), &dir)?;
        let top_path = dir.join(KEPT);
        let shards_path = top_path.join(SHARDS);
        // Before anything else is touched (the temporary files removed below could be
        // another run's): DIR's lock, held by one unsharded run, or shared by the shards
        // of one split, each of which then holds its own as well.
        let mut locks = Vec::new();
        let (kept, kept_path) = match shard {
            Some(shard) => {
                if !top_locked {
                    locks.extend(kept::lock_as(
                        &top,
                        &dir,
                        &top_path,
                        kept::LOCK,
                        kept::Hold::Shared,
                    )?);
                }
                // A directory a sync without --shard keeps is that sync's: its files
                // are in its inventory, which no shard reads.
                if top.exists(kept::STATE) {
                    return Err(DestinationError::Unsharded { dir });
                }
                let name = shard_name(shard);
                let all = own_dir(&top, Path::new(SHARDS), &top_path)?;
                // One split at a time: the check and the shard's directory made under a
                // lock of their own, so that shards of two splits starting together
                // cannot both pass it.
                let _split =
                    kept::lock_as(&all, &dir, &shards_path, SPLIT_LOCK, kept::Hold::Waiting)?;
                let entries = all.entries().map_err(io_at(&shards_path))?;
                for entry in entries.flatten() {
                    let other = entry.file_name().to_string_lossy().into_owned();
                    if other == SPLIT_LOCK {
                        continue;
                    }
                    if parse_shard(&other).is_none_or(|o| o.count() != shard.count()) {
                        return Err(DestinationError::Shards {
                            dir: dir.clone(),
                            found: other,
                            asked: name,
                        });
                    }
                }
                let kept = own_dir(&all, Path::new(&name), &shards_path)?;
                (kept, shards_path.join(&name))
            }
            None => {
                locks.extend(lock(&top, &dir, &top_path)?);
                // Looked at under the lock: no shard starts while it is held.
                let found = match top.read_dir(SHARDS) {
                    Ok(entries) => entries
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .find(|n| n != SPLIT_LOCK),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                    Err(e) => return Err(io_at(&shards_path)(e)),
                };
                if let (Some(found), false) = (found, whole) {
                    // The inventories are the shards'; this run's would not know their
                    // files.
                    return Err(DestinationError::Shards {
                        dir: dir.clone(),
                        found,
                        asked: "all".into(),
                    });
                }
                (top, top_path)
            }
        };
        if shard.is_some() {
            locks.extend(lock(&kept, &dir, &kept_path)?);
        }
        let tmp = own_dir(&kept, Path::new("tmp"), &kept_path)?;
        let entries = tmp.entries().map_err(io_at(&kept_path.join("tmp")))?;
        for entry in entries.flatten() {
            let _ = tmp.remove_file(entry.file_name());
        }
        let file_system = probe(&tmp).map_err(io_at(&kept_path.join("tmp")))?;
        let shown = Arc::new(kept_path.join("tmp"));
        Ok(DirectoryDestination {
            dir,
            root,
            kept,
            kept_path,
            elsewhere: Vec::new(),
            bodies: Bodies {
                tmp: Arc::new(tmp),
                shown,
                memory: None,
            },
            made: HashMap::new(),
            packages: HashMap::new(),
            replace_foreign: false,
            journal: None,
            file_system,
            _locks: locks,
            repair: true,
        })
    }

    /// The directory of `options` opened for a run of them: one shard's
    /// ([`open_shard`](Self::open_shard)), or the whole for an audit without a shard
    /// ([`open_whole`](Self::open_whole): it reads the shards' inventories); replacing
    /// files no sync stored and repairing as they say.
    pub fn open_for(options: &SyncOptions) -> Result<DirectoryDestination, DestinationError> {
        let dest = match options.audit && options.shard.is_none() {
            true => DirectoryDestination::open_whole(&options.dir)?,
            false => DirectoryDestination::open_shard(&options.dir, options.shard)?,
        };
        Ok(dest
            .with_replace_foreign(options.replace_foreign)
            .with_repair(options.repair))
    }

    /// This destination replacing a file at a resource's path that no sync stored (by
    /// default such a file is a conflict, left as it is, unless it holds the listed
    /// bytes).
    #[must_use]
    pub fn with_replace_foreign(mut self, replace: bool) -> DirectoryDestination {
        self.replace_foreign = replace;
        self
    }

    /// Whether a baseline fetches again the files changed in DIR since the sync stored
    /// them (`true`, the default: a baseline asked for to repair DIR), or keeps them as
    /// they are, an update of one then a conflict as in an incremental run (`false`: a
    /// baseline the user did not ask for, such as one in place of Change Lists that no
    /// longer carry DIR forward). A missing file is fetched again either way.
    #[must_use]
    pub fn with_repair(mut self, repair: bool) -> DirectoryDestination {
        self.repair = repair;
        self
    }

    /// The directory the resources go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The config's path mapper with [`KEPT`] kept out of every Source's reach, for
    /// the rules of names of DIR's file system ([`file_system`](Self::file_system)): give
    /// it to [`Config::with_paths`].
    pub fn paths(&self, config: &Config) -> PathMapper {
        config
            .paths
            .clone()
            .with_kept_name(KEPT)
            .with_file_system(self.file_system)
    }

    /// The rules of names of DIR's file system, found when it was opened by trying:
    /// whether two names that differ in case, or in Unicode normalization, are one
    /// file; Windows's rules on Windows. The sync stores every name the file system can
    /// hold, and refuses (as a problem, the run incomplete) only what it cannot.
    pub fn file_system(&self) -> FileSystem {
        self.file_system
    }

    /// Whether the body of `request` is kept in a temporary file while it arrives
    /// ([`Bodies::create`]): a resource's or a package's, which [`apply`](Self::apply)
    /// renames into place or opens; a document's body is the client's alone.
    pub fn keeps_body(&self, request: &Request) -> bool {
        matches!(request.purpose, Purpose::Resource { .. } | Purpose::Package)
    }

    /// The temporary directory of the bodies, for the tasks that write them.
    pub fn bodies(&self) -> Bodies {
        self.bodies.clone()
    }

    /// For a blocking driver: hands a response to the client, its head and then its body
    /// as it is read from `body`, and writes the body to its temporary file as well when
    /// `keep` (the request's [`keeps_body`](Self::keeps_body)) and its status is a
    /// success. A body that cannot be read to its end is the request's failure, handed to
    /// the client; a temporary file that cannot be written is an error (the destination
    /// is unusable).
    pub fn receive<I: Inventory>(
        &self,
        client: &mut Client<I>,
        id: RequestId,
        keep: bool,
        status: StatusCode,
        headers: &HeaderMap,
        mut body: impl Read,
    ) -> Result<(), DestinationError> {
        client.handle_response(id, status, headers, Instant::now())?;
        let path = || self.kept_path.join("tmp").join(temp_name(id));
        let mut file = match keep && status.is_success() {
            true => Some(
                self.bodies
                    .create(id)
                    .map_err(|source| DestinationError::Io {
                        path: path(),
                        source,
                    })?,
            ),
            false => None,
        };
        // Read no more than the client takes: one byte past a resource's bound (the
        // client then fails it), and nothing once the client ended the request (a
        // document past its bound, an error status), so that a body without end ends.
        let limit = client.body_limit(id).map(|l| l.saturating_add(1));
        let mut read = 0u64;
        let mut buf = vec![0; 64 * 1024];
        loop {
            if !client.in_flight(id) {
                // Ended by the client: the end is taken and ignored.
                break;
            }
            let want = limit.map_or(buf.len() as u64, |l| (l - read).min(buf.len() as u64));
            if want == 0 {
                break;
            }
            match body.read(&mut buf[..want as usize]) {
                Ok(0) => break,
                Ok(n) => {
                    read += n as u64;
                    if let Some(file) = &mut file {
                        file.write_all(&buf[..n])
                            .map_err(|source| DestinationError::Io {
                                path: path(),
                                source,
                            })?;
                    }
                    client.handle_body(id, &buf[..n], Instant::now())?;
                }
                Err(e) => return Ok(client.handle_failure(id, e.to_string(), Instant::now())?),
            }
        }
        Ok(client.handle_end(id, Instant::now())?)
    }

    /// Carries out what the client decided in `event`, and confirms it to the client:
    /// a [`Event::Store`] renames the body's temporary file into place, a
    /// [`Event::Delete`] removes the file (and the directories it leaves empty), a
    /// [`Event::Package`] is opened and its manifest handed over, an
    /// [`Event::Extract`] copies a bitstream through the package's verified
    /// reader and renames it into place, [`Event::Release`],
    /// [`Event::Discard`] and [`Event::Cancel`] remove what the request
    /// left, and a [`Event::Checkpoint`] saves. Other events are the driver's
    /// to report.
    ///
    /// A resource that cannot be written is a failure confirmed to the client
    /// ([`Client::failed`]), and a path that holds what no sync stored a conflict
    /// ([`Client::declined`]; see the [module](self)): not errors, the run goes on. The
    /// errors are a checkpoint that could not be saved and the client's [`Misuse`].
    pub fn apply<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        event: &Event,
    ) -> Result<(), DestinationError> {
        let now = Instant::now;
        match event {
            Event::Store(store) => {
                let temp = temp_name(store.request);
                let held = client.inventory().get(&store.change.uri);
                let placed = self.place(&temp, &store.change, &store.digests, held);
                if placed.is_err() {
                    // Not placed (a conflict, a failure): nothing will ask for it again.
                    let _ = self.bodies.tmp.remove_file(&temp);
                }
                self.confirm(client, &store.change, placed.map(|()| None))?;
            }
            Event::Delete(change) => {
                // What the sync stored, not what verify found there.
                let held = client.inventory().stored(&change.uri);
                let outcome = self.delete(&change.path, held);
                self.confirm(client, change, outcome.map(|()| None))?;
            }
            Event::Package { request } => match self.open_package(*request) {
                Ok(package) => {
                    client.handle_package(*request, package.manifest(), now())?;
                    self.packages.insert(*request, package);
                }
                Err(e) => client.handle_failure(*request, e, now())?,
            },
            Event::Extract(extract) => {
                let temp = format!("extract-{}", extract.change.id).replace(' ', "-");
                let copied = match self.packages.get_mut(&extract.package) {
                    Some(package) => {
                        copy_bitstream(package, extract.bitstream, &self.bodies, &temp)
                    }
                    None => Err(io::Error::other("the package is not open")),
                };
                let held = client.inventory().get(&extract.change.uri);
                let outcome = match copied {
                    Ok(digests) => self
                        .place(&temp, &extract.change, &digests, held)
                        .map(|()| Some(Held::of(&digests, extract.change.lastmod))),
                    Err(e) => Err(Outcome::Failed(e)),
                };
                if outcome.is_err() {
                    let _ = self.bodies.tmp.remove_file(&temp);
                }
                self.confirm(client, &extract.change, outcome)?;
            }
            Event::Release { request }
            | Event::Discard { request, .. }
            | Event::Cancel { request } => {
                self.packages.remove(request);
                let _ = self.bodies.tmp.remove_file(temp_name(*request));
            }
            Event::Checkpoint => self.save(client)?,
            _ => {}
        }
        Ok(())
    }

    /// Checks what the inventory says the sync stored against the bytes on disk, for a
    /// run that compares the whole listing with the inventory (an audit, a baseline): a
    /// file missing is taken out of `inventory`, a file whose bytes changed (or that is
    /// no longer a plain file) is recorded with what it holds now, so that the audit
    /// reports them and the baseline fetches them again; the files under DIR that no
    /// record names are the extras. Nothing is done for other runs. Every held file is
    /// read: an audit is only as true as the bytes it reads. A baseline without
    /// [`with_repair`](Self::with_repair) leaves a changed file's record as it was: the
    /// file is kept, not fetched again.
    pub fn verify(
        &mut self,
        config: &Config,
        inventory: &mut impl KeptInventory,
    ) -> Result<Verified, DestinationError> {
        let mut verified = Verified::default();
        if !matches!(config.mode, Mode::Audit | Mode::Baseline { .. }) {
            return Ok(verified);
        }
        // The paths the inventory names, as 128-bit hashes: 16 bytes a held resource
        // rather than its path, for the walk below that finds the files none names.
        let mut named = HashSet::new();
        let path_hash = |path: &Path| xxh3_128(path.as_os_str().as_encoded_bytes());
        let mut replaced = Vec::new();
        let reads = config.mode == Mode::Audit || self.repair;
        inventory.for_each(&mut |uri, held| {
            let Ok(path) = config.paths.local_path(uri) else {
                return;
            };
            let target = path.to_path_buf();
            named.insert(path_hash(&target));
            let parent = target.parent().unwrap_or(Path::new(""));
            let found = match self.checked(parent) {
                Ok(()) => match self.root.symlink_metadata(&target) {
                    // A baseline that does not repair keeps the file whatever it holds:
                    // only a missing one matters, and the metadata says so unread.
                    Ok(meta) if meta.is_file() && !reads => return,
                    Ok(meta) if meta.is_file() => {
                        Some(digest_file(&self.root, &target, held.algorithms()))
                    }
                    Ok(_) => None,
                    Err(e) => Some(Err(e)),
                },
                Err(e) => Some(Err(e)),
            };
            let standing = match found {
                Some(Ok(found)) if holds(held, &found) => return,
                Some(Ok(found)) => Some(Held::of(&found, None)),
                Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => None,
                // Not a plain file, or unreadable: what it holds is not what was stored.
                _ => Some(Held::new().with_length(u64::MAX)),
            };
            match standing {
                // Kept as the user left it: compared with what the sync stored.
                Some(_) if !reads => return,
                Some(_) => verified.changed.push(target),
                None => verified.missing.push(target),
            }
            replaced.push((uri.clone(), standing));
        });
        // Another shard's files are not this one's extras.
        for uri in &self.elsewhere {
            if let Ok(path) = config.paths.local_path(uri) {
                named.insert(path_hash(&path.to_path_buf()));
            }
        }
        // Compared with for the rest of the run, never saved: what the sync stored stays
        // the record.
        for (uri, now) in replaced {
            inventory.substitute(uri, now);
        }
        let walk = walkdir::WalkDir::new(&self.dir).min_depth(1).into_iter();
        for entry in walk.filter_entry(|e| e.depth() != 1 || e.file_name() != KEPT) {
            let Ok(entry) = entry else { continue };
            if entry.file_type().is_dir() {
                continue;
            }
            if let Ok(relative) = entry.path().strip_prefix(&self.dir)
                && !named.contains(&path_hash(relative))
            {
                verified.extra.push(relative.to_owned());
            }
        }
        verified.extra.sort();
        Ok(verified)
    }

    /// Tells the client what became of `change`.
    fn confirm<I: KeptInventory>(
        &self,
        client: &mut Client<I>,
        change: &Decision,
        outcome: Result<Option<Held>, Outcome>,
    ) -> Result<(), Misuse> {
        let now = Instant::now();
        let at = || self.dir.join(change.path.to_path_buf());
        match outcome {
            Ok(held) => client.applied(change.id, held, now),
            Err(Outcome::Failed(e)) => {
                client.failed(change.id, format!("{}: {e}", at().display()), now)
            }
            Err(Outcome::Conflict(why)) => {
                client.declined(change.id, format!("{}: {why}", at().display()), now)
            }
        }
    }

    /// Moves the finished temporary file `temp` to the change's path, unless that path
    /// holds what no sync stored (see the [module](self)).
    fn place(
        &mut self,
        temp: &str,
        change: &Decision,
        digests: &Measured,
        held: Option<Held>,
    ) -> Result<(), Outcome> {
        let target = change.path.to_path_buf();
        let Some(name) = target.file_name() else {
            return Err(Outcome::Failed(io::Error::other("a path without a name")));
        };
        let mut journaled = false;
        let mut again = true;
        loop {
            let parent = self.parent_of(&target).map_err(Outcome::Failed)?;
            let placed = self.place_in(temp, change, digests, held, &parent, name, &mut journaled);
            match placed {
                // A directory this run made was removed since (emptied by a deletion, or
                // by someone else, who may have put it back with files of theirs): made
                // or found again, and everything decided again there, where what the
                // handle on the old one said no longer holds.
                Err(Outcome::Failed(e)) if e.kind() == io::ErrorKind::NotFound && again => {
                    again = false;
                    if let Some((parent, _)) = &parent {
                        self.made.remove(parent);
                    }
                }
                other => return other,
            }
        }
    }

    /// [`place`](Self::place) in the directory `parent` (DIR itself for `None`); the
    /// journal's line written once, `journaled` says whether it was.
    #[allow(clippy::too_many_arguments)]
    fn place_in(
        &mut self,
        temp: &str,
        change: &Decision,
        digests: &Measured,
        held: Option<Held>,
        parent: &Option<(PathBuf, Arc<Dir>)>,
        name: &std::ffi::OsStr,
        journaled: &mut bool,
    ) -> Result<(), Outcome> {
        // A new file: moved into place only if nothing is there, in one step, so a file
        // someone else makes at its name meanwhile is never replaced (and no `stat`
        // first). The journal's line comes first, as for every placement; where the
        // move finds something there, the checks below decide, and a line left for a
        // file that is not the sync's is harmless: a replay records it only if the
        // file holds the listed bytes, which is what adoption does.
        if held.is_none() && !self.replace_foreign {
            if !*journaled {
                self.journal(change, digests).map_err(Outcome::Failed)?;
                *journaled = true;
            }
            let dir = parent.as_ref().map_or(&self.root, |(_, dir)| &**dir);
            match rename_new(&self.bodies.tmp, temp, dir, name) {
                Ok(true) => return Ok(()),
                // Something there, the directory removed since, or a file system that
                // cannot (or a name it refuses): as below.
                Ok(false) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound
                    ) => {}
                Err(e) => return Err(Outcome::Failed(e)),
            }
        }
        let dir = parent.as_ref().map_or(&self.root, |(_, dir)| &**dir);
        let target = change.path.to_path_buf();
        // Nothing at the path: the move must not replace what someone makes there
        // before it.
        let absent = match dir.symlink_metadata(name) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(Outcome::Failed(e)),
            Ok(_) if self.replace_foreign => false,
            // Held: the sync's own file, replaced if it still holds what the inventory
            // records (what the sync stored; in a baseline after `verify`, what is there
            // now, which the baseline repairs). Edited since: kept, as a deletion would
            // keep it. The length first, which the metadata has: an edit mostly changes it.
            Ok(meta) if meta.is_file() && held.is_some() => {
                if let Some(held) = held
                    && !self.unchanged(&target, meta.len(), &held)?
                {
                    // Already the new bytes (placed by a run whose journal line was
                    // lost, or copied in by hand): taken as they are, as adoption does.
                    if meta.len() == digests.length
                        && digest_file(&self.root, &target, digests.algorithms())
                            .is_ok_and(|f| f == *digests)
                    {
                        let _ = self.bodies.tmp.remove_file(temp);
                        if !*journaled {
                            self.journal(change, digests).map_err(Outcome::Failed)?;
                        }
                        return Ok(());
                    }
                    return Err(Outcome::Conflict(
                        "changed since the sync stored it: kept, not replaced".into(),
                    ));
                }
                false
            }
            Ok(meta) if meta.is_file() => {
                match digest_file(&self.root, &target, digests.algorithms()) {
                    // The listed bytes already: adopted as they are (the line is written:
                    // only a new file comes here).
                    Ok(found) if found == *digests => {
                        let _ = self.bodies.tmp.remove_file(temp);
                        if !*journaled {
                            self.journal(change, digests).map_err(Outcome::Failed)?;
                        }
                        return Ok(());
                    }
                    Ok(_) => {
                        return Err(Outcome::Conflict(
                            "a file no sync stored, with other bytes: left as it is".into(),
                        ));
                    }
                    Err(e) => return Err(Outcome::Failed(e)),
                }
            }
            Ok(meta) => {
                let what = if meta.is_symlink() {
                    "a symbolic link"
                } else if meta.is_dir() {
                    "a directory"
                } else {
                    "a special file"
                };
                return Err(Outcome::Conflict(format!(
                    "{what} no sync made: left as it is"
                )));
            }
        };
        if !*journaled {
            self.journal(change, digests).map_err(Outcome::Failed)?;
            *journaled = true;
        }
        let new = absent && !self.replace_foreign;
        let dir = parent.as_ref().map_or(&self.root, |(_, dir)| &**dir);
        move_into(&self.bodies.tmp, temp, dir, name, new).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists if new => Outcome::Conflict(
                "a file appeared at its path while it was placed: left as it is".into(),
            ),
            _ => Outcome::Failed(e),
        })
    }

    /// Removes the file at `path` if it holds what the sync stored there (`held`), and
    /// the directories it leaves empty.
    fn delete(&mut self, path: &LocalPath, held: Option<Held>) -> Result<(), Outcome> {
        let target = path.to_path_buf();
        if let Some(parent) = target.parent()
            && let Err(e) = self.checked(parent)
        {
            // A directory on the way is missing: so is the file.
            return match e.kind() {
                io::ErrorKind::NotFound => Ok(()),
                _ => Err(Outcome::Failed(e)),
            };
        }
        let len = match self.root.symlink_metadata(&target) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Outcome::Failed(e)),
            Ok(meta) if !meta.is_file() => {
                return Err(Outcome::Conflict(
                    "not the file the sync stored (a link, a directory): kept".into(),
                ));
            }
            Ok(meta) => meta.len(),
        };
        // No record of what the sync stored (a lookup that failed, an inventory of the
        // caller's that lost it): nothing proves the file is the sync's to delete.
        let Some(held) = held else {
            return Err(Outcome::Conflict(
                "no record of what the sync stored there: kept".into(),
            ));
        };
        if !self.unchanged(&target, len, &held)? {
            return Err(Outcome::Conflict(
                "changed since the sync stored it: kept, no longer the sync's".into(),
            ));
        }
        match self.root.remove_file(&target) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(Outcome::Failed(e)),
            _ => {}
        }
        let mut dir = target.parent();
        while let Some(d) = dir {
            if d.as_os_str().is_empty() || self.root.remove_dir(d).is_err() {
                break;
            }
            self.made.remove(d);
            dir = d.parent();
        }
        Ok(())
    }

    /// Whether the file at `target`, `len` bytes long, still holds what `held` records:
    /// the length first (no read when it differs, as after most edits), then the digests.
    fn unchanged(&self, target: &Path, len: u64, held: &Held) -> Result<bool, Outcome> {
        if held.length.is_some_and(|l| l != len) {
            return Ok(false);
        }
        holds_file(&self.root, target, held).map_err(Outcome::Failed)
    }

    /// Makes the directory of `target` (relative to the root), checking that none on the
    /// way is a symbolic link; once per directory and run. Returns it and a handle on
    /// it; `None` for a file at the root.
    fn parent_of(&mut self, target: &Path) -> io::Result<Option<(PathBuf, Arc<Dir>)>> {
        let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) else {
            return Ok(None);
        };
        if let Some(dir) = self.made.get(parent) {
            return Ok(Some((parent.to_owned(), dir.clone())));
        }
        match self.checked(parent) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.root.create_dir_all(parent)?;
                self.checked(parent)?;
            }
            other => other?,
        }
        // Every level was just checked to be a directory, not a link; the last is opened
        // without following one, should it have been swapped in since.
        let dir = Arc::new(self.root.open_dir_nofollow(parent)?);
        self.made.insert(parent.to_owned(), dir.clone());
        Ok(Some((parent.to_owned(), dir)))
    }

    /// Checks that every directory of `dir` (relative to the root) is one, not a link.
    fn checked(&self, dir: &Path) -> io::Result<()> {
        let mut at = PathBuf::new();
        for component in dir.components() {
            let Component::Normal(name) = component else {
                return Err(io::Error::other("not a plain relative path"));
            };
            at.push(name);
            let meta = self.root.symlink_metadata(&at)?;
            if !meta.is_dir() {
                return Err(io::Error::other(format!(
                    "{} is {}, not a directory of DIR's own",
                    at.display(),
                    if meta.is_symlink() {
                        "a symbolic link"
                    } else {
                        "a file"
                    }
                )));
            }
        }
        Ok(())
    }

    /// Opens the package received for `request`.
    fn open_package(
        &self,
        request: RequestId,
    ) -> Result<Package<io::BufReader<std::fs::File>>, String> {
        let file = self
            .bodies
            .tmp
            .open(temp_name(request))
            .map_err(|e| e.to_string())?;
        Package::new(io::BufReader::new(file.into_std())).map_err(|e| e.to_string())
    }
}

/// What [`DirectoryDestination::verify`] found on disk, as paths under DIR.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Verified {
    /// Held, and the file holds other bytes (or is no longer a plain file).
    pub changed: Vec<PathBuf>,
    /// Held, and no file is there.
    pub missing: Vec<PathBuf>,
    /// Files (and links) under DIR that no record of the inventory names: no sync
    /// stored them.
    pub extra: Vec<PathBuf>,
}

impl Verified {
    /// An audit's report with the extra files counted: DIR is not the Source's copy
    /// while files no sync stored are in it.
    pub fn count_extras(&self, report: &mut resourcesync_client::Report) {
        report.extra += self.extra.len() as u64;
        if !self.extra.is_empty() && report.in_sync.is_some() {
            report.in_sync = Some(false);
        }
    }
}

/// Why a change was not applied.
pub(crate) enum Outcome {
    /// It could not be.
    Failed(io::Error),
    /// The path holds what the sync did not store.
    Conflict(String),
}

#[cfg(all(test, feature = "object-store"))]
mod memory_tests {
    use super::*;

    use test_support::bodies;

    /// A request's id, from a client's first request (ids have no constructor).
    fn request_id() -> RequestId {
        test_support::first_request("http://example.com/").id
    }

    #[test]
    fn bodies_in_memory_keep_within_their_budget_and_give_it_back() {
        let (_dir, bodies) = bodies(10, 6);
        // One body's most, then the budget of all.
        assert!(bodies.reserve(0, 6));
        assert!(!bodies.reserve(6, 1), "past a body's most");
        assert!(bodies.reserve(0, 4));
        assert!(!bodies.reserve(0, 1), "past the budget");
        // Given back by a body that went to its file.
        bodies.release(4);
        assert!(bodies.reserve(0, 3));
        bodies.release(3);
        // A whole body held: taken once, and its bytes back in the budget when dropped.
        let id = request_id();
        bodies.keep(
            id,
            vec![
                bytes::Bytes::from_static(b"abc"),
                bytes::Bytes::from_static(b"def"),
            ],
            6,
        );
        assert!(!bodies.reserve(0, 5));
        let body = bodies.take(id).unwrap();
        assert_eq!(body.chunks().concat(), b"abcdef");
        assert!(bodies.take(id).is_none());
        drop(body);
        assert!(bodies.reserve(0, 6));
        assert!(bodies.reserve(0, 4));
    }

    #[test]
    fn a_body_kept_after_its_request_was_cancelled_gives_its_bytes_back() {
        let (_dir, bodies) = bodies(10, 10);
        // Cancelled with its body held: dropped at once.
        let id = request_id();
        assert!(bodies.reserve(0, 4));
        bodies.keep(id, vec![bytes::Bytes::from_static(b"abcd")], 4);
        bodies.cancel(id);
        assert!(bodies.take(id).is_none());
        assert!(bodies.reserve(0, 10), "the budget whole again");
        bodies.release(10);
        // Cancelled before its task kept it (the task past its last await): dropped
        // when kept, not held to the run's end.
        bodies.cancel(id);
        assert!(bodies.reserve(0, 4));
        bodies.keep(id, vec![bytes::Bytes::from_static(b"efgh")], 4);
        assert!(bodies.take(id).is_none());
        assert!(bodies.reserve(0, 10), "the late body's bytes given back");
    }

    #[test]
    fn bodies_without_memory_take_none() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let bodies = Bodies::new(tmp, dir.path().to_owned());
        assert!(!bodies.reserve(0, 1));
        let id = request_id();
        bodies.keep(id, vec![bytes::Bytes::from_static(b"x")], 1);
        assert!(bodies.take(id).is_none());
    }
}
/// What the tests of the bodies in memory share (here and in `asynchronous`).
#[cfg(all(test, feature = "object-store"))]
pub(crate) mod test_support {
    use super::*;

    /// Bodies in a temporary directory, with `budget` bytes of memory for all and `each`
    /// for one.
    pub(crate) fn bodies(budget: u64, each: u64) -> (tempfile::TempDir, Bodies) {
        let dir = tempfile::tempdir().unwrap();
        let tmp = Dir::open_ambient_dir(dir.path(), cap_std::ambient_authority()).unwrap();
        let bodies =
            Bodies::new(tmp, dir.path().to_owned()).with_memory(budget, each, Default::default());
        (dir, bodies)
    }

    /// The first request (the Source Description's) of a baseline's client of the Source
    /// at `base`.
    pub(crate) fn first_request(base: &str) -> resourcesync_client::Request {
        let config = resourcesync_client::Config::new(
            base.parse().unwrap(),
            resourcesync_client::Mode::Baseline { prefer_dump: false },
        )
        .unwrap();
        let mut client = resourcesync_client::Client::new(
            config,
            State::default(),
            resourcesync_client::MemoryInventory::default(),
        );
        client.poll_request(std::time::Instant::now()).unwrap()
    }
}
