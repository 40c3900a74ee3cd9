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
//!   (an edited file is a conflict, kept, in a baseline too); a baseline, which reads the
//!   files first ([`DirectoryDestination::verify`]), fetches the missing ones again, and
//!   replaces the edited ones only with [`DirectoryDestination::with_replace_foreign`].
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

mod bodies;
mod files;
mod kept;
mod placing;

pub use bodies::{Bodies, InMemory};
use files::*;
pub(crate) use files::{copy_bitstream, holds, temp_name};
pub use kept::JOURNAL;
use kept::*;
#[cfg(feature = "object-store")]
pub(crate) use kept::{INVENTORY, STATE, STATE_MAX, is_a_sources_state};

/// The name under the directory that a [`DirectoryDestination`] keeps for itself: the
/// state, the inventory and the temporary files.
pub const KEPT: &str = ".resourcesync";

/// Under [`KEPT`]: each shard's own files, in `K-of-N/`.
pub(crate) const SHARDS: &str = "shards";

/// Under [`SHARDS`]: the lock a shard holds while it checks the split and makes its
/// directory.
const SPLIT_LOCK: &str = "split.lock";

/// Whether a run writes in DIR's `.resourcesync/` or only reads it (a dry run, an audit:
/// [`DirectoryDestination::open_for`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Access {
    /// Makes what is missing, holds its lock as a writer, removes stale temporary files.
    Writes,
    /// Makes and removes nothing there, shares its lock with other readers, and keeps
    /// what it loads in a scratch directory ([`scratch_kept`]).
    Reads,
}

/// Makes `dir` unless it is there, not its parents (as `mkdir`, not `mkdir -p`): a
/// mistyped path is an error naming it ([`DestinationError::NoParent`]), not a new tree.
fn make_dir(dir: &Path) -> Result<(), DestinationError> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let parent = match dir.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
                _ => PathBuf::from("."),
            };
            Err(DestinationError::NoParent {
                dir: dir.to_owned(),
                parent,
            })
        }
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(DestinationError::Io {
            path: dir.to_owned(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// A scratch directory of the system's (removed when dropped) for a run that writes
/// nothing in DIR, with a `.resourcesync/` in it and that one's `tmp/`.
fn scratch_kept() -> Result<(tempfile::TempDir, Dir, Dir), DestinationError> {
    let scratch = tempfile::Builder::new()
        .prefix("resourcesync-")
        .tempdir()
        .map_err(|source| DestinationError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let outside = Dir::open_ambient_dir(scratch.path(), ambient_authority()).map_err(|source| {
        DestinationError::Io {
            path: scratch.path().to_owned(),
            source,
        }
    })?;
    let kept = own_dir(&outside, Path::new(KEPT), scratch.path())?;
    let kept_path = scratch.path().join(KEPT);
    let tmp = own_dir(&kept, Path::new("tmp"), &kept_path)?;
    Ok((scratch, kept, tmp))
}

/// What the client is told of a package it asked to open: its manifest, the manifest's
/// findings and the entries its reader skipped.
pub(crate) fn manifest_of<R: Read + io::Seek>(
    package: &Package<R>,
) -> resourcesync_client::PackageManifest<'_> {
    resourcesync_client::PackageManifest::new(
        package.manifest(),
        package.findings(),
        package.skipped(),
    )
}

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
    /// DIR is not there and neither is its parent: a sync makes DIR, not its parents
    /// (`mkdir`, not `mkdir -p`), so that a mistyped path is an error, not a new tree.
    #[error("{} is not there, nor is its parent {}: a sync makes its directory, not the directories above it", dir.display(), parent.display())]
    NoParent {
        /// The directory.
        dir: PathBuf,
        /// Its parent, not there.
        parent: PathBuf,
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
    /// The directory is a publication: its `.resourcesync/` holds a Source's state
    /// (`resourcesync build`'s), which a sync would take for its own and write over.
    /// Refused before anything is written there.
    #[error("{} is a publication ({} is a Source's state, as `resourcesync build` keeps it): sync into a directory of its own", dir.display(), state.display())]
    Publication {
        /// The directory.
        dir: PathBuf,
        /// The Source's state found.
        state: PathBuf,
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
    made: HashMap<PathBuf, Arc<Dir>, crate::SourceHash>,
    /// The packages open for extraction, by the request they came in.
    packages: HashMap<RequestId, Package<io::BufReader<std::fs::File>>, crate::IdHash>,
    /// Replace a file at a resource's path that no sync stored.
    replace_foreign: bool,
    /// `.resourcesync/placed.jsonl`, open for appending once something is placed.
    journal: Option<std::fs::File>,
    /// The requests whose bodies' journal lines [`prepare`](Self::prepare) wrote ahead
    /// of their placements, since the last save.
    journaled: HashSet<RequestId, crate::IdHash>,
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
    /// Where `kept` is when DIR has no `.resourcesync/` and this run writes nothing
    /// there (a dry run, an audit: [`open_for`](Self::open_for)); removed with the
    /// destination.
    _scratch: Option<tempfile::TempDir>,
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

/// Refuses `shard` in `dir` when the shards' directories (`names`, in
/// `.resourcesync/shards/`) are another split's: the count differs, or a name is no
/// shard's.
fn one_split(
    names: impl Iterator<Item = std::ffi::OsString>,
    dir: &Path,
    shard: Shard,
) -> Result<(), DestinationError> {
    for name in names {
        let other = name.to_string_lossy().into_owned();
        if other != SPLIT_LOCK && parse_shard(&other).is_none_or(|o| o.count() != shard.count()) {
            return Err(DestinationError::Shards {
                dir: dir.to_owned(),
                found: other,
                asked: shard_name(shard),
            });
        }
    }
    Ok(())
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
        DirectoryDestination::open_inner(dir.into(), shard, false, false, Access::Writes)
    }

    /// [`open`](Self::open) for an audit of the whole of a directory that shards keep
    /// ([`open_shard`](Self::open_shard)): its own `.resourcesync/` (an unsharded run
    /// elsewhere is refused, as the shards' files are not its inventory's), and the
    /// shards' inventories to read with [`shard_records`](Self::shard_records).
    pub fn open_whole(dir: impl Into<PathBuf>) -> Result<DirectoryDestination, DestinationError> {
        DirectoryDestination::open_inner(dir.into(), None, true, false, Access::Writes)
    }

    /// `top_locked`: DIR's lock is held already by the caller (an audit reading the
    /// shards' inventories, [`shard_records`](Self::shard_records)). `access`: whether
    /// the run writes in DIR's `.resourcesync/` or only reads it ([`Access`]).
    pub(crate) fn open_inner(
        dir: PathBuf,
        shard: Option<Shard>,
        whole: bool,
        top_locked: bool,
        access: Access,
    ) -> Result<DirectoryDestination, DestinationError> {
        let io_at = |path: &Path| {
            let path = path.to_owned();
            move |source| DestinationError::Io { path, source }
        };
        let writes = access == Access::Writes;
        if writes {
            make_dir(&dir)?;
        }
        // A run that only reads makes none of its own directories: one missing is an
        // error (`open_for` reads in a scratch directory where DIR's is not there).
        let own = |parent: &Dir, name: &Path, shown: &Path| match access {
            Access::Writes => own_dir(parent, name, shown),
            Access::Reads => existing_own_dir(parent, name, shown),
        };
        // Held while the run goes: one that writes holds DIR's alone (an unsharded run)
        // or shares it with the other shards of its split; one that only reads shares
        // it with other readers, through a descriptor opened for reading (DIR may be
        // read-only to it), so that a run writing there is Busy to it and it to that run.
        // An audit of the whole, which reads the shards' inventories one by one, holds
        // DIR's alone, so that no shard starts storing while it reads.
        let hold = |writer: Hold| match (writes, whole) {
            (true, _) => writer,
            (false, false) => Hold::Reading,
            (false, true) => Hold::ReadingAlone,
        };
        let root = Dir::open_ambient_dir(&dir, ambient_authority()).map_err(io_at(&dir))?;
        let top = own(&root, Path::new(KEPT), &dir)?;
        let top_path = dir.join(KEPT);
        if kept::holds_a_sources_state(&top) {
            return Err(DestinationError::Publication {
                state: top_path.join(kept::STATE),
                dir,
            });
        }
        let shards_path = top_path.join(SHARDS);
        // Before anything else is touched (the temporary files removed below could be
        // another run's): DIR's lock, held by one unsharded run, or shared by the shards
        // of one split, each of which then holds its own as well.
        let mut locks = Vec::new();
        if !top_locked {
            let writer = match shard {
                Some(_) => kept::Hold::Shared,
                None => kept::Hold::Exclusive,
            };
            locks.extend(kept::lock_as(
                &top,
                &dir,
                &top_path,
                kept::LOCK,
                hold(writer),
            )?);
        }
        let (kept, kept_path) = match shard {
            Some(shard) => {
                // A directory a sync without --shard keeps is that sync's: its files
                // are in its inventory, which no shard reads.
                if top.exists(kept::STATE) {
                    return Err(DestinationError::Unsharded { dir });
                }
                let name = shard_name(shard);
                let all = own(&top, Path::new(SHARDS), &top_path)?;
                // One split at a time: the check and the shard's directory made under a
                // lock of their own, so that shards of two splits starting together
                // cannot both pass it. (A run that only reads makes nothing.)
                let _split = match access {
                    Access::Writes => {
                        kept::lock_as(&all, &dir, &shards_path, SPLIT_LOCK, kept::Hold::Waiting)?
                    }
                    Access::Reads => None,
                };
                let entries = all.entries().map_err(io_at(&shards_path))?;
                one_split(entries.flatten().map(|e| e.file_name()), &dir, shard)?;
                let kept = own(&all, Path::new(&name), &shards_path)?;
                (kept, shards_path.join(&name))
            }
            None => {
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
            locks.extend(kept::lock_as(
                &kept,
                &dir,
                &kept_path,
                kept::LOCK,
                hold(kept::Hold::Exclusive),
            )?);
        }
        if access == Access::Reads {
            // What the run loads, copied (under the lock) to a scratch directory of the
            // system's, where it may change them as a run does and leave them: DIR's
            // `.resourcesync/` is not written (its inventory's file was rewritten by every
            // open), nor its temporary files removed, which another run may yet need.
            let (scratch, copy, tmp) = scratch_kept()?;
            let copy_path = scratch.path().join(KEPT);
            kept::copy_kept(&kept, &kept_path, &copy, &copy_path)?;
            let shown = copy_path.join("tmp");
            let scratch = Some(scratch);
            let mut dest = DirectoryDestination::assemble(
                dir, root, copy, kept_path, tmp, shown, locks, scratch,
            )?;
            // The names' rules were tried in the scratch directory, on the system temp's
            // file system: whether DIR's ignores case is read there without writing (its
            // own `.resourcesync/` found under another case). Normalization stays the
            // scratch's, which no name DIR is known to hold can tell.
            dest.file_system.case_insensitive =
                dest.root.symlink_metadata(KEPT.to_uppercase()).is_ok();
            return Ok(dest);
        }
        let tmp = own_dir(&kept, Path::new("tmp"), &kept_path)?;
        let entries = tmp.entries().map_err(io_at(&kept_path.join("tmp")))?;
        for entry in entries.flatten() {
            let _ = tmp.remove_file(entry.file_name());
        }
        let shown = kept_path.join("tmp");
        DirectoryDestination::assemble(dir, root, kept, kept_path, tmp, shown, locks, None)
    }

    /// The destination of DIR (`root`) keeping its files in `kept` (named `kept_path` in
    /// errors), its bodies in `tmp` (named `shown`), once opened, checked and locked: the
    /// rules of names found by trying in `tmp`.
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        dir: PathBuf,
        root: Dir,
        kept: Dir,
        kept_path: PathBuf,
        tmp: Dir,
        shown: PathBuf,
        locks: Vec<std::fs::File>,
        scratch: Option<tempfile::TempDir>,
    ) -> Result<DirectoryDestination, DestinationError> {
        let file_system = probe(&tmp).map_err(|source| DestinationError::Io {
            path: shown.clone(),
            source,
        })?;
        Ok(DirectoryDestination {
            dir,
            root,
            kept,
            kept_path,
            elsewhere: Vec::new(),
            bodies: Bodies::new(tmp, shown),
            made: HashMap::default(),
            packages: HashMap::default(),
            replace_foreign: false,
            journal: None,
            journaled: HashSet::default(),
            file_system,
            _locks: locks,
            repair: true,
            _scratch: scratch,
        })
    }

    /// For a run of `shard` that writes nothing while the shard has no directory in
    /// `dir`: the refusals [`open_shard`](Self::open_shard) would make, read without
    /// making, locking or writing anything. A publication, a directory an unsharded sync
    /// keeps, and one another split's shards keep are refused alike.
    fn may_shard(dir: &Path, shard: Shard) -> Result<(), DestinationError> {
        let top_path = dir.join(KEPT);
        match std::fs::symlink_metadata(&top_path) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => return Err(DestinationError::NotOwnDirectory { path: top_path }),
            // Nothing of a sync's there.
            Err(_) => return Ok(()),
        }
        let top = Dir::open_ambient_dir(&top_path, ambient_authority()).map_err(|source| {
            DestinationError::Io {
                path: top_path.clone(),
                source,
            }
        })?;
        if kept::holds_a_sources_state(&top) {
            return Err(DestinationError::Publication {
                state: top_path.join(kept::STATE),
                dir: dir.to_owned(),
            });
        }
        if top.exists(kept::STATE) {
            return Err(DestinationError::Unsharded {
                dir: dir.to_owned(),
            });
        }
        match top.read_dir(SHARDS) {
            Ok(entries) => one_split(entries.flatten().map(|e| e.file_name()), dir, shard),
            Err(_) => Ok(()),
        }
    }

    /// `dir` for a run that writes nothing (a dry run, an audit) while no sync keeps it
    /// (it has no `.resourcesync/`, or is not there at all): its resources read where
    /// they are, if anywhere, and what a run keeps (state, inventory, temporary files)
    /// in a scratch directory of the system's, removed when the destination is
    /// dropped. Nothing is made in `dir` or beside it, and nothing is locked, as there
    /// is nothing of a sync's there to keep consistent. Names are held to the rules of
    /// the scratch directory's file system, which is DIR's own unless the two differ in
    /// case or normalization.
    fn open_scratch(dir: PathBuf) -> Result<DirectoryDestination, DestinationError> {
        let (scratch, kept, tmp) = scratch_kept()?;
        let root = match Dir::open_ambient_dir(&dir, ambient_authority()) {
            Ok(root) => root,
            // Nothing there: the run finds nothing, as in an empty directory.
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                own_dir(&kept, Path::new("empty"), &scratch.path().join(KEPT))?
            }
            Err(source) => return Err(DestinationError::Io { path: dir, source }),
        };
        let kept_path = scratch.path().join(KEPT);
        let shown = kept_path.join("tmp");
        let scratch = Some(scratch);
        DirectoryDestination::assemble(dir, root, kept, kept_path, tmp, shown, Vec::new(), scratch)
    }

    /// The directory of `options` opened for a run of them: one shard's
    /// ([`open_shard`](Self::open_shard)), or for an audit without a shard the whole
    /// (as [`open_whole`](Self::open_whole), but read as below: it reads the shards'
    /// inventories); replacing files no sync stored and repairing as they say.
    ///
    /// A dry run or an audit writes nothing in DIR. Of a directory that no sync keeps
    /// yet (no `.resourcesync/` in it, or no directory at all; for a shard, no directory
    /// of that shard's in it) it makes nothing there, not even the directory: what a run
    /// keeps goes to a scratch directory, removed when the destination is dropped.
    /// (Opened as a run's, it was made with its `.resourcesync/`, a lock and an
    /// inventory of a mebibyte.) Of one that a sync keeps, what the last run saved (its
    /// state, inventory and journal) is copied to such a scratch directory under a lock
    /// shared with other readers, taken through a descriptor opened for reading: a run
    /// storing there meanwhile is [`DestinationError::Busy`], DIR may be read-only, and
    /// its temporary files and inventory are left as they are (opened as a run's, the
    /// inventory's file was rewritten and the temporary files removed). The copy costs
    /// a read of the inventory, which is smaller than the files it describes, and room
    /// for it in the system's temporary directory (`TMPDIR`). An audit of the whole
    /// holds DIR's lock alone, so that no shard starts storing while it reads theirs.
    pub fn open_for(options: &SyncOptions) -> Result<DirectoryDestination, DestinationError> {
        let writes_nothing = options.dry_run || options.audit;
        // What the run would keep: DIR's `.resourcesync/`, or its shard's directory in it.
        let kept = match options.shard {
            Some(shard) => options.dir.join(KEPT).join(SHARDS).join(shard_name(shard)),
            None => options.dir.join(KEPT),
        };
        let dest = match std::fs::symlink_metadata(&kept) {
            Err(e) if writes_nothing && e.kind() == io::ErrorKind::NotFound => {
                if let Some(shard) = options.shard {
                    DirectoryDestination::may_shard(&options.dir, shard)?;
                }
                DirectoryDestination::open_scratch(options.dir.clone())?
            }
            _ if writes_nothing => DirectoryDestination::open_inner(
                options.dir.clone(),
                options.shard,
                options.audit && options.shard.is_none(),
                false,
                Access::Reads,
            )?,
            _ => DirectoryDestination::open_shard(&options.dir, options.shard)?,
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

    /// Whether a baseline reads every file in DIR the sync stored (`true`, the default: a
    /// baseline asked for, to repair DIR): one changed since is fetched again and, as in
    /// any run, left as the user made it, a conflict, unless the run replaces such files
    /// ([`with_replace_foreign`](Self::with_replace_foreign)); nothing the sync did not
    /// store is overwritten. Or only finds the missing ones (`false`: a baseline the user
    /// did not ask for, such as one in place of Change Lists that no longer carry DIR
    /// forward), a changed file then met only when the Source changes it. A missing file
    /// is fetched again either way.
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
        let path = || self.bodies.path(id);
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

    /// Told of `events`, polled from the client and about to be given to
    /// [`apply`](Self::apply) in this order: the journal's lines of the bodies among
    /// them to place are written in one write, ahead of their placements, rather than
    /// one write each (a system call a file, on the path every file takes). Optional:
    /// an event applied without it is carried out the same.
    pub fn prepare(&mut self, events: &[Event]) {
        self.journal_ahead(events);
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
                let journaled = self.journaled.remove(&store.request);
                let placed = self.place(&temp, &store.change, &store.digests, held, journaled);
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
                    client.handle_package(*request, manifest_of(&package), now())?;
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
                        .place(&temp, &extract.change, &digests, held, false)
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
    /// no longer a plain file) is recorded as changed (an audit: with what it holds now),
    /// so that the audit reports them and the baseline fetches them again (and, its
    /// placement finding what the sync did not store there, says a conflict unless it
    /// replaces such files); the files under DIR that no record names are the extras. Nothing is done for other runs. Every held file is
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
                // An audit says how it differs.
                Some(Ok(found)) if config.mode == Mode::Audit => Some(Held::of(&found, None)),
                // A baseline fetches it again, and its placement finds the file holds
                // nothing the sync stored: a conflict, the user's edit kept, unless the
                // run replaces such files.
                Some(Ok(_)) => Some(Held::changed()),
                Some(Err(e)) if e.kind() == io::ErrorKind::NotFound => None,
                // Not a plain file, or unreadable: what it holds is not what was stored.
                _ => Some(Held::changed()),
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
        confirm(client, change, outcome, || {
            self.dir
                .join(change.path.to_path_buf())
                .display()
                .to_string()
        })
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

/// Tells the client what became of `change` (applied, holding `held`; failed; declined),
/// a failure or a conflict named by `at`, where its file or object is: each Destination's
/// `confirm`.
pub(crate) fn confirm<I: KeptInventory>(
    client: &mut Client<I>,
    change: &Decision,
    outcome: Result<Option<Held>, Outcome>,
    at: impl FnOnce() -> String,
) -> Result<(), Misuse> {
    let now = Instant::now();
    match outcome {
        Ok(held) => client.applied(change.id, held, now),
        Err(Outcome::Failed(e)) => client.failed(change.id, format!("{}: {e}", at()), now),
        Err(Outcome::Conflict(why)) => client.declined(change.id, format!("{}: {why}", at()), now),
    }
}

/// What the directory's tests share (here, in `files` and in `asynchronous`).
#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// Bodies in a temporary directory, with `budget` bytes of memory for all and `each`
    /// for one.
    #[cfg(feature = "object-store")]
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
