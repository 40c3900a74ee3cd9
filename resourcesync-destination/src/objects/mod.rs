//! A bucket's prefix kept in step with a Source (feature `object-store`): the
//! [`Destination`] of a sync into object storage, S3 and the other stores of the
//! [`object_store`] crate (the Arrow project's, used by the data tools that read buckets),
//! through their own HTTP clients and credentials.
//!
//! Its promises, in the terms of objects:
//! - **Nothing outside the prefix.** Every key is the prefix and a path the client's
//!   mapper made (plain names, no `..`, no empty segment); what is kept between runs is
//!   under `PREFIX/.resourcesync/`, a name no Source's path can take.
//! - **Only what a sync stored is replaced or deleted.** Each object stored carries what
//!   was stored, its length and digests, in its metadata (`resourcesync-held`): a PUT
//!   replaces an object's metadata whole, so an object someone else wrote since has
//!   none, or another. An object replaced or deleted must still carry what the
//!   inventory says the sync stored for that URI (its mark), or, without a mark (an
//!   object adopted as it was), hold those bytes when read; a replacement is a
//!   conditional PUT on the ETag just
//!   read (`If-Match`), a new object a conditional create (`If-None-Match: *`), so that
//!   one written by someone else in between is never overwritten. An object at a path
//!   that no sync stored is a conflict, left as it is, unless it holds the listed bytes
//!   (adopted). A deletion has no condition in the S3 API this crate speaks: between
//!   the check and the DELETE (one round trip) an object replaced by someone else would
//!   be deleted.
//! - **Nothing half-written.** A body is held in memory as it arrives (up to
//!   [`ObjectDestination::MEMORY`] for all bodies together; past that, in a local
//!   temporary file), hashed, and PUT only once its digests matched; a PUT is atomic (an object is the
//!   old bytes or the new, never a part). Bodies over [`ObjectDestination::WHOLE_PUT`]
//!   go up as a multipart upload, which is atomic too, but unconditional: the path is
//!   checked just before.
//! - **Resumes.** The state and the inventory are saved under `.resourcesync/` every few
//!   seconds and at the end (the state last). A run writes `.resourcesync/unfinished`
//!   before its first write and removes it once everything it wrote is saved; the next
//!   run that finds it records the objects written since whose mark names their own key's
//!   URI (a run that saves then removes it), as a directory's journal would.
//! - **One sync at a time.** A lease (`.resourcesync/lock`), made with a conditional
//!   create, renewed while the sync runs, and taken over once it expired (a killed run's);
//!   a run whose renewals fail for two thirds of the lease writes no more;
//!   a store that ignores the conditions (some S3-compatible servers do; found by trying
//!   at open) gets a plain read-then-write of it, which two syncs starting in the same
//!   moment could both pass, and plain PUTs for the objects: said in
//!   [`ObjectDestination::conditional`]. The lease is read back
//!   ([`resourcesync_objects::SETTLE`] after its write) before anything else under the
//!   prefix is written (the store's probe, a random key written and deleted at open,
//!   comes before the lease): the run reads the Source meanwhile, and a run that finds
//!   another's lease then ends with [`DestinationError::Busy`], having written nothing.
//! - **A dry run or an audit writes nothing**, no probe and no lease: it reads the lease
//!   and is refused ([`DestinationError::Busy`]) while another run's is live, so that it
//!   does not read a prefix half written, and credentials that may only read the prefix
//!   can audit it. (A run that starts after it opened is not kept out: the audit then
//!   reads the prefix as it was at some moment of that run, and says what differed.)
//!
//! Uploads run on a runtime of the destination's own, [`MAX_UPLOADS`] at once, while the
//! driver goes on receiving; each is confirmed to the client when it ends.

use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use futures::StreamExt as _;
use object_store::path::Path as Key;
use object_store::{
    Attribute, AttributeValue, Attributes, GetOptions, ObjectStore, PutMode, PutOptions,
    PutPayload, UpdateVersion,
};
use resourcesync_client::local_path::{FileSystem, PathMapper};
use resourcesync_client::{
    Client, Config, Decision, Event, Held, Mode, Request, RequestId, Shard, State,
};
use resourcesync_model::{Measure, Measured};
use resourcesync_package::Package;

use crate::destination::Destination;
use crate::directory::{
    Bodies, DestinationError, INVENTORY, InMemory, KEPT, Outcome, STATE, STATE_MAX, Verified,
    copy_bitstream, holds, temp_name,
};
use crate::directory::{SHARDS, shard_name};
use crate::inventory::{DiskInventory, KeptInventory};
use crate::options::SyncOptions;

mod audit;
mod lease;
mod placing;
mod shards;

use audit::listing;
use lease::*;
pub use placing::HELD_KEY;
use placing::*;
use resourcesync_objects::{Bucket, Lease, ObjectsError, Runner, block, random};

/// The bytes of bodies held in memory now, by every destination of the process
/// ([`ObjectDestination::MEMORY`] at most).
static BODIES_IN_MEMORY: std::sync::LazyLock<Arc<std::sync::atomic::AtomicU64>> =
    std::sync::LazyLock::new(Default::default);

/// Uploads (and deletions) under way at once; more wait for one to end.
pub const MAX_UPLOADS: usize = 16;

/// Uploads (and deletions) started, under way or waiting for their turn among
/// [`MAX_UPLOADS`]: past this the driver waits for one to end before it takes more, so
/// that no more bodies wait on the local disk than this. Above [`MAX_UPLOADS`] so that
/// the driver goes on receiving while the uploads run.
const MAX_STARTED: usize = 4 * MAX_UPLOADS;

/// The object under `.resourcesync/` a run writes before its first write and removes once
/// everything it wrote is in a saved inventory: found at open, it says a run was killed
/// (or could not save), and since when to look for what it stored.
const UNFINISHED: &str = "unfinished";

/// How a run holds the prefix it opened.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Hold {
    /// It takes the lease (after the probe of the store's conditions). `settle`: the
    /// open returns once the lease was read back as this run's; without, the read back
    /// overlaps what the run does before its first write, which waits for it.
    Writes { settle: bool },
    /// It writes nothing there (a dry run, an audit): it reads the lease, and is
    /// refused while another run's is live.
    Reads,
}

impl Hold {
    /// How a run of `options` holds the prefix. A run that writes waits for its lease's
    /// read back at its first write: the read back (`resourcesync_objects::SETTLE`)
    /// overlaps the documents' fetching. An audit or a dry run writes nothing at all.
    fn of(options: &SyncOptions) -> Hold {
        match options.audit || options.dry_run {
            true => Hold::Reads,
            false => Hold::Writes { settle: false },
        }
    }
}

/// An upload or a deletion that ended: the change, and what became of it.
struct Ended {
    change: Decision,
    outcome: Result<Option<Held>, Outcome>,
}

/// A bucket's prefix kept in step with a Source (see the [module](self)).
pub struct ObjectDestination {
    /// The store's URL, for messages (`s3://bucket/prefix`).
    shown: PathBuf,
    store: Arc<dyn ObjectStore>,
    /// The resources' root.
    prefix: Key,
    /// `PREFIX/.resourcesync/`.
    top: Key,
    /// What this destination keeps: `top`, or a shard's `top/shards/K-of-N/`.
    kept: Key,
    /// The shard this destination keeps, if one.
    shard: Option<Shard>,
    /// For a shard's audit: what the other shards stored (not this one's extras).
    elsewhere: Vec<resourcesync_model::Uri>,
    /// The runtime every request to the store runs on: the destination's own, so that it
    /// is used alike from a blocking caller and from inside another runtime.
    runner: Runner,
    /// Local: the bodies while they arrive (`tmp/`), the inventory's working copy.
    work: tempfile::TempDir,
    bodies: Bodies,
    /// Whether the store honours `If-None-Match` and `If-Match` on a PUT.
    conditional: bool,
    /// Whether the run writes (and holds the lease) or only reads.
    hold: Hold,
    /// The prefix's lease, once taken (given back on drop).
    lease: Option<Lease>,
    lease_time: Duration,
    /// When a run that did not end cleanly (killed, or its last save failed) began
    /// writing: its `unfinished` object's time (the store's clock). What it stored after
    /// its last save is looked for ([`Destination::replay`]).
    recovering: Option<chrono::DateTime<chrono::Utc>>,
    /// The write of this run's `unfinished` object, begun before its first other write
    /// (so `Some` once the run has written anything), done once the lease was read back
    /// as this run's: every upload and deletion waits for it, while the driver goes on
    /// receiving.
    first_write:
        Option<futures::future::Shared<futures::future::BoxFuture<'static, Result<(), String>>>>,
    /// Everything this run wrote is in a saved inventory: its last save came after its
    /// last write ended.
    clean: bool,
    replace_foreign: bool,
    repair: bool,
    packages: HashMap<RequestId, Package<io::BufReader<std::fs::File>>>,
    /// Uploads and deletions under way.
    pending: usize,
    ended_tx: mpsc::Sender<Ended>,
    ended: mpsc::Receiver<Ended>,
    /// Turns among [`MAX_UPLOADS`]: a started upload waits for one.
    turns: Arc<tokio::sync::Semaphore>,
    wake: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for ObjectDestination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectDestination")
            .field("store", &self.shown)
            .field("conditional", &self.conditional)
            .field("pending", &self.pending)
            .finish_non_exhaustive()
    }
}

/// The shared crate's error as the destination's: a lease held is [`DestinationError::Busy`].
fn objects_error(shown: &str, e: ObjectsError) -> DestinationError {
    match e {
        ObjectsError::Busy { key } => DestinationError::Busy {
            dir: PathBuf::from(shown),
            lock: PathBuf::from(key),
        },
        ObjectsError::Store { key, source } => DestinationError::Store {
            key,
            source: Box::new(source),
        },
        // Named once: the setting's error names the store itself.
        ObjectsError::Setting { store, reason } => DestinationError::Store {
            key: store,
            source: reason.into(),
        },
        other => DestinationError::Store {
            key: shown.to_owned(),
            source: Box::new(other),
        },
    }
}

/// A store's error, with the key it met.
fn store_error(key: &Key, e: object_store::Error) -> DestinationError {
    DestinationError::Store {
        key: key.to_string(),
        source: Box::new(resourcesync_objects::StoreFailure::from(e)),
    }
}

impl ObjectDestination {
    /// Bodies up to this length go up in one PUT (held in memory while they do, at most
    /// [`MAX_UPLOADS`] of them); longer ones as a multipart upload.
    pub const WHOLE_PUT: u64 = 16 << 20;

    /// The most bytes of resources' bodies held in memory at once, all together (every
    /// destination of the process: a harvest's runs share it), between their arrival and
    /// their PUT (each up to [`WHOLE_PUT`](Self::WHOLE_PUT)): a body
    /// that does not fit is written to a temporary file and read back for its upload. A
    /// body in memory is written and read once less, and no temporary file of it meets
    /// the local disk.
    pub const MEMORY: u64 = 64 << 20;

    /// How long a lease lasts unless renewed: a killed sync keeps others out this long.
    pub const LEASE: Duration = Duration::from_secs(60);

    /// Opens the store at `url` (`s3://bucket/prefix`, `memory:///prefix`, any URL the
    /// [`object_store`] crate parses) with `options` (its configuration keys, such as
    /// `aws_endpoint` or `aws_allow_http`). An `s3://` store also reads the `AWS_*`
    /// variables of the environment (`AWS_ENDPOINT`, `AWS_ACCESS_KEY_ID`, ...), as the
    /// AWS tools do; `options` take precedence. Takes the prefix's lease for
    /// `lease` ([`LEASE`](Self::LEASE) by default in the command).
    pub fn open(
        url: &url::Url,
        options: impl IntoIterator<Item = (String, String)>,
        lease: Duration,
    ) -> Result<ObjectDestination, DestinationError> {
        let (store, prefix, shown) = ObjectDestination::store(url, options)?;
        ObjectDestination::open_store(store, prefix, shown, lease)
    }

    /// The store at `url` with `options` (see [`open`](Self::open)), the prefix, and the
    /// URL as messages show it.
    #[allow(clippy::type_complexity)]
    pub fn store(
        url: &url::Url,
        options: impl IntoIterator<Item = (String, String)>,
    ) -> Result<(Arc<dyn ObjectStore>, Key, String), DestinationError> {
        let bucket = Bucket::open(url, options).map_err(|e| objects_error(url.as_str(), e))?;
        Ok((bucket.store, bucket.prefix, bucket.shown))
    }

    /// Opens `prefix` of a store of the caller's (`shown` names it in messages).
    pub fn open_store(
        store: Arc<dyn ObjectStore>,
        prefix: Key,
        shown: impl Into<PathBuf>,
        lease: Duration,
    ) -> Result<ObjectDestination, DestinationError> {
        ObjectDestination::open_shard(store, prefix, shown, lease, None)
    }

    /// [`open_store`](Self::open_store) for one shard of the Source's resources (`None`:
    /// all of them), as
    /// [`DirectoryDestination::open_shard`](crate::DirectoryDestination::open_shard)
    /// does for a directory: the shard's state, inventory and lease are its own, under
    /// `PREFIX/.resourcesync/shards/K-of-N/`, so that N runs on N machines fill one
    /// prefix together; the objects are the prefix's, whichever shard stored them.
    pub fn open_shard(
        store: Arc<dyn ObjectStore>,
        prefix: Key,
        shown: impl Into<PathBuf>,
        lease: Duration,
        shard: Option<Shard>,
    ) -> Result<ObjectDestination, DestinationError> {
        let hold = Hold::Writes { settle: true };
        ObjectDestination::open_inner(store, prefix, shown.into(), lease, shard, false, hold)
    }

    /// [`open_store`](Self::open_store) for an audit of the whole of a prefix that shards
    /// keep: refused while a shard runs ([`DestinationError::Busy`]); the shards'
    /// inventories are read into the audit's. It writes nothing in the store (the
    /// leases are read, none is taken), so that credentials that may only read the
    /// prefix audit it.
    pub fn open_whole(
        store: Arc<dyn ObjectStore>,
        prefix: Key,
        shown: impl Into<PathBuf>,
        lease: Duration,
    ) -> Result<ObjectDestination, DestinationError> {
        ObjectDestination::open_inner(store, prefix, shown.into(), lease, None, true, Hold::Reads)
    }

    fn open_inner(
        store: Arc<dyn ObjectStore>,
        prefix: Key,
        shown: PathBuf,
        lease: Duration,
        shard: Option<Shard>,
        whole: bool,
        hold: Hold,
    ) -> Result<ObjectDestination, DestinationError> {
        let runner =
            Runner::new("resourcesync-objects").map_err(|source| DestinationError::Io {
                path: shown.clone(),
                source,
            })?;
        let work = tempfile::Builder::new()
            .prefix("resourcesync-objects-")
            .tempdir()
            .map_err(|source| DestinationError::Io {
                path: std::env::temp_dir(),
                source,
            })?;
        let tmp_path = work.path().join("tmp");
        let io_at = |path: &Path| {
            let path = path.to_owned();
            move |source| DestinationError::Io { path, source }
        };
        std::fs::create_dir(&tmp_path).map_err(io_at(&tmp_path))?;
        let tmp =
            Dir::open_ambient_dir(&tmp_path, ambient_authority()).map_err(io_at(&tmp_path))?;
        let top = child(&prefix, KEPT);
        let kept = match shard {
            Some(shard) => child(&child(&top, SHARDS), &shard_name(shard)),
            None => top.clone(),
        };
        let (ended_tx, ended) = mpsc::channel();
        let mut dest = ObjectDestination {
            bodies: Bodies::new(tmp, tmp_path).with_memory(
                ObjectDestination::MEMORY,
                ObjectDestination::WHOLE_PUT,
                BODIES_IN_MEMORY.clone(),
            ),
            shown,
            store,
            prefix,
            top,
            kept,
            shard,
            elsewhere: Vec::new(),
            runner,
            work,
            conditional: true,
            hold,
            lease: None,
            lease_time: lease.max(Duration::from_secs(1)),
            recovering: None,
            first_write: None,
            clean: false,
            replace_foreign: false,
            repair: true,
            packages: HashMap::new(),
            pending: 0,
            ended_tx,
            ended,
            turns: Arc::new(tokio::sync::Semaphore::new(MAX_UPLOADS)),
            wake: None,
        };
        // A prefix `resourcesync build` publishes to (its Source's state in
        // `.resourcesync/`) is refused before anything is written there, as a directory
        // is: the sync would take its state for its own and write over it.
        let state = child(&dest.top, STATE);
        if let Some(bytes) = dest.read(state.clone(), STATE_MAX)?
            && crate::directory::is_a_sources_state(&bytes)
        {
            return Err(DestinationError::Publication {
                dir: dest.shown.clone(),
                state: PathBuf::from(state.to_string()),
            });
        }
        match hold {
            Hold::Writes { settle } => {
                dest.conditional = dest.probe()?;
                dest.take_lease(settle)?;
            }
            // What a run that writes would refuse at its lease: another's, live.
            Hold::Reads => {
                dest.conditional = false;
                dest.leased_elsewhere()?;
            }
        }
        // After the lease is taken (written, then the others read) or read: of a shard
        // and an unsharded run starting together, at least one sees the other.
        dest.check_split(whole)?;
        // Left by a run that did not end cleanly: it began writing at that time.
        let store = dest.store.clone();
        let marker = child(&dest.kept, UNFINISHED);
        dest.recovering = dest.wait(async move {
            match store.head(&marker).await {
                Ok(meta) => Ok(Some(meta.last_modified)),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(store_error(&marker, e)),
            }
        })?;
        Ok(dest)
    }

    /// The store of `options.dir` (a URL written as the directory) opened for a run of
    /// them, as [`DirectoryDestination::open_for`](crate::DirectoryDestination::open_for)
    /// does for a directory: one shard's, or the whole for an audit without a shard.
    pub fn open_for(
        url: &url::Url,
        store_options: &[(String, String)],
        lease: Duration,
        options: &SyncOptions,
    ) -> Result<ObjectDestination, DestinationError> {
        let (store, prefix, shown) = ObjectDestination::store(url, store_options.iter().cloned())?;
        let whole = options.audit && options.shard.is_none();
        let dest = ObjectDestination::open_inner(
            store,
            prefix,
            shown.into(),
            lease,
            options.shard,
            whole,
            Hold::of(options),
        )?;
        Ok(dest
            .with_replace_foreign(options.replace_foreign)
            .with_repair(options.repair))
    }

    /// See [`DirectoryDestination::with_replace_foreign`](crate::DirectoryDestination::with_replace_foreign).
    #[must_use]
    pub fn with_replace_foreign(mut self, replace: bool) -> ObjectDestination {
        self.replace_foreign = replace;
        self
    }

    /// See [`DirectoryDestination::with_repair`](crate::DirectoryDestination::with_repair).
    #[must_use]
    pub fn with_repair(mut self, repair: bool) -> ObjectDestination {
        self.repair = repair;
        self
    }

    /// Whether the store honours the conditions of a PUT (`If-None-Match: *`,
    /// `If-Match`), found at open by creating one object twice. Without them an object
    /// written by someone else between the check and the PUT (one round trip) is
    /// overwritten, and two syncs starting at the same moment could both take the lease.
    /// False, not asked, for a destination opened to write nothing (a dry run's, an
    /// audit's).
    pub fn conditional(&self) -> bool {
        self.conditional
    }

    /// Runs `fut` on the destination's runtime and waits for it: from a plain thread, or
    /// from a task of another runtime (whose worker is handed over while it waits).
    fn wait<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = Result<T, DestinationError>> + Send + 'static,
    ) -> Result<T, DestinationError> {
        self.runner.run(fut).unwrap_or_else(|| Err(self.stopped()))
    }

    /// The runtime is gone, or the work panicked.
    fn stopped(&self) -> DestinationError {
        DestinationError::Store {
            key: self.shown.display().to_string(),
            source: "the destination's runtime stopped".into(),
        }
    }

    /// Whether the store refuses a second create of one key.
    fn probe(&self) -> Result<bool, DestinationError> {
        let store = self.store.clone();
        let key = child(&self.kept, &format!("probe-{:032x}", random()));
        let shown = self.shown.display().to_string();
        self.wait(async move {
            resourcesync_objects::conditional(&*store, &key)
                .await
                .map_err(|e| objects_error(&shown, e))
        })
    }

    /// The key of a resource's path under the prefix.
    fn key_of(&self, path: &str) -> Result<Key, object_store::path::Error> {
        match self.prefix.as_ref().is_empty() {
            true => Key::parse(path),
            false => Key::parse(format!("{}/{path}", self.prefix)),
        }
    }

    /// Reads `name` of `.resourcesync/`, at most `max` bytes; `None` if missing.
    fn read_kept(&self, name: &str, max: u64) -> Result<Option<Vec<u8>>, DestinationError> {
        self.read(child(&self.kept, name), max)
    }

    /// Reads the object at `key`, at most `max` bytes; `None` if missing.
    fn read(&self, key: Key, max: u64) -> Result<Option<Vec<u8>>, DestinationError> {
        let store = self.store.clone();
        self.wait(async move {
            match store.get(&key).await {
                Ok(found) if found.meta.size > max => Err(DestinationError::Store {
                    key: key.to_string(),
                    source: format!("{} bytes: more than this program writes", found.meta.size)
                        .into(),
                }),
                Ok(found) => Ok(Some(
                    found
                        .bytes()
                        .await
                        .map_err(|e| store_error(&key, e))?
                        .to_vec(),
                )),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(store_error(&key, e)),
            }
        })
    }

    /// Writes `name` of `.resourcesync/` (a PUT: whole or not at all).
    fn write_kept(&self, name: &str, bytes: Vec<u8>) -> Result<(), DestinationError> {
        self.refused()?;
        if let Some(lost) = self.lost() {
            return Err(DestinationError::Store {
                key: child(&self.kept, name).to_string(),
                source: lost.into(),
            });
        }
        let store = self.store.clone();
        let key = child(&self.kept, name);
        let settled = self.settled();
        self.wait(async move {
            settled.await?;
            store
                .put(&key, PutPayload::from(bytes))
                .await
                .map(drop)
                .map_err(|e| store_error(&key, e))
        })
    }

    fn open_package(
        &self,
        request: RequestId,
    ) -> Result<Package<io::BufReader<std::fs::File>>, String> {
        let file = self
            .bodies
            .dir()
            .open(temp_name(request))
            .map_err(|e| e.to_string())?;
        Package::new(io::BufReader::new(file.into_std())).map_err(|e| e.to_string())
    }
}

impl Drop for ObjectDestination {
    fn drop(&mut self) {
        // The lease let go, if still this run's: the next sync need not wait for it to
        // expire.
        // Every write of this run (and of the killed one before it, recorded by the
        // replay) is in the saved inventory: no next run need look for them.
        if self.clean && (self.first_write.is_some() || self.recovering.is_some()) {
            let store = self.store.clone();
            let marker = child(&self.kept, UNFINISHED);
            let _ = self.wait(async move {
                let _ = store.delete(&marker).await;
                Ok(())
            });
        }
        if let Some(lease) = self.lease.take() {
            let _ = self.wait(async move {
                lease.release().await;
                Ok(())
            });
        }
    }
}
impl Destination for ObjectDestination {
    fn location(&self) -> &Path {
        &self.shown
    }

    fn paths(&self, config: &Config) -> PathMapper {
        // Keys are names of bytes: case and normalization kept, any name a path may have
        // (S3 allows 1,024 bytes a key, the prefix's among them).
        let room = 1024usize.saturating_sub(self.prefix.as_ref().len() + 1);
        config
            .paths
            .clone()
            .with_kept_name(KEPT)
            .with_file_system(FileSystem::POSIX)
            .with_max_path_bytes(room)
    }

    fn load_state(&self) -> Result<State, DestinationError> {
        let Some(bytes) = self.read_kept(STATE, STATE_MAX)? else {
            return Ok(State::default());
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(State::default());
        }
        serde_json::from_slice(&bytes).map_err(|source| DestinationError::Unreadable {
            path: PathBuf::from(child(&self.kept, STATE).to_string()),
            source,
        })
    }

    /// After a run that did not end cleanly (killed, or its last save failed: its
    /// `unfinished` object is there): the objects written since it began writing whose
    /// metadata says a sync stored them there, and which still hold that length, recorded
    /// as the sync's, as a directory's journal would have them. One listing of the prefix
    /// and a HEAD for each such object; nothing after a run that ended cleanly.
    fn replay<I: KeptInventory>(&self, config: &Config, inventory: &mut I) {
        let Some(since) = self.recovering else {
            return;
        };
        let store = self.store.clone();
        // Everything under `.resourcesync/` is this program's (every shard's too).
        let (prefix, kept) = (self.prefix.clone(), self.top.clone());
        let found = self.wait(async move {
            // The marker was written before the run's first write, by the same store's
            // clock; a minute's margin for a store whose times are rounded.
            let since = since - chrono::TimeDelta::minutes(1);
            // What a listing that failed half way gave is recovered still.
            let (listed, _) = listing(&*store, &prefix, &kept).await;
            // Each entry by its own time and size (an old object's new folder marker
            // does not make it new); one HEAD a key.
            let keys = listed.into_iter().filter_map(|(key, objects)| {
                let sizes: Vec<u64> = objects
                    .iter()
                    .filter(|object| object.modified >= since)
                    .map(|object| object.size)
                    .collect();
                (!sizes.is_empty()).then_some((key, sizes))
            });
            let found: Vec<(Key, resourcesync_model::Uri, Held)> = futures::stream::iter(keys)
                .map(|(key, sizes)| {
                    let store = store.clone();
                    async move {
                        let found = head(&*store, &key).await.ok()?;
                        let mark = mark(&found.attributes)?;
                        let uri = mark.uri?;
                        let length = mark.held.length?;
                        sizes.contains(&length).then_some((key, uri, mark.held))
                    }
                })
                .buffer_unordered(MAX_UPLOADS)
                .filter_map(|found| async move { found })
                .collect()
                .await;
            Ok(found)
        });
        // Only a mark at its URI's own key (not one copied elsewhere with its
        // metadata), and only this shard's (another's are that shard's to record).
        for (key, uri, held) in found.unwrap_or_default() {
            let at_home = config
                .paths
                .local_path(&uri)
                .ok()
                .and_then(|path| self.key_of(path.as_str()).ok())
                .is_some_and(|home| home == key);
            if at_home && config.in_shard(&uri) {
                inventory.record(uri, held);
            }
        }
    }

    fn join_shards<I: KeptInventory>(
        &mut self,
        options: &SyncOptions,
        inventory: &mut I,
    ) -> Result<(), DestinationError> {
        self.join(options, inventory)
    }

    fn open_inventory(&self) -> Result<DiskInventory, DestinationError> {
        let path = self.work.path().join(INVENTORY);
        let io_at = |source| DestinationError::Io {
            path: path.clone(),
            source,
        };
        // The working copy: fetched whole, written back whole at each save.
        if let Some(bytes) = self.read_kept(INVENTORY, u64::MAX)? {
            std::fs::write(&path, bytes).map_err(io_at)?;
        }
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_at)?;
        DiskInventory::open(file).map_err(|source| DestinationError::Inventory {
            path: PathBuf::from(child(&self.kept, INVENTORY).to_string()),
            source: source.into(),
        })
    }

    fn verify<I: KeptInventory>(
        &mut self,
        config: &Config,
        inventory: &mut I,
    ) -> Result<Verified, DestinationError> {
        self.audit(config, inventory)
    }

    fn apply<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        event: &Event,
    ) -> Result<(), DestinationError> {
        let now = Instant::now;
        match event {
            Event::Store(store) => {
                let held = client.inventory().get(&store.change.uri);
                let body = match self.bodies.take(store.request) {
                    Some(body) => Body::Memory(body),
                    None => Body::File(temp_name(store.request)),
                };
                self.start_place(client, body, &store.change, store.digests, held, None)?;
            }
            Event::Delete(change) => {
                let held = client.inventory().stored(&change.uri);
                let key = self.key_of(change.path.as_str());
                let store = self.store.clone();
                let uri = change.uri.clone();
                self.start(client, change.clone(), async move {
                    let key = key.map_err(|e| Outcome::Failed(io::Error::other(e)))?;
                    delete(&*store, &key, &uri, held).await.map(|()| None)
                })?;
            }
            Event::Package { request } => match self.open_package(*request) {
                Ok(package) => {
                    client.handle_package(
                        *request,
                        crate::directory::manifest_of(&package),
                        now(),
                    )?;
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
                match copied {
                    Ok(digests) => {
                        // An extraction is confirmed with what it holds (the client
                        // verified no fetch of it).
                        let stored = Held::of(&digests, extract.change.lastmod);
                        self.start_place(
                            client,
                            Body::File(temp),
                            &extract.change,
                            digests,
                            held,
                            Some(stored),
                        )?;
                    }
                    Err(e) => {
                        let _ = self.bodies.dir().remove_file(&temp);
                        self.confirm(client, &extract.change, Err(Outcome::Failed(e)))?;
                    }
                }
            }
            Event::Release { request } | Event::Discard { request, .. } => {
                self.packages.remove(request);
                self.bodies.take(*request);
                let _ = self.bodies.dir().remove_file(temp_name(*request));
            }
            Event::Cancel { request } => {
                self.packages.remove(request);
                // Its task is aborted, but may keep its body yet.
                self.bodies.cancel(*request);
                let _ = self.bodies.dir().remove_file(temp_name(*request));
            }
            Event::Checkpoint => {
                self.settle_all(client)?;
                self.save(client)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn settle<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
    ) -> Result<bool, DestinationError> {
        let mut any = false;
        while let Ok(ended) = self.ended.try_recv() {
            any = true;
            self.ended_one(client, Ok(ended))?;
        }
        Ok(any)
    }

    fn settle_all<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
    ) -> Result<bool, DestinationError> {
        let any = self.pending > 0;
        while self.pending > 0 {
            let ended = block(|| self.ended.recv());
            self.ended_one(client, ended)?;
        }
        Ok(any)
    }

    fn on_settled(&mut self, wake: Arc<dyn Fn() + Send + Sync>) {
        self.wake = Some(wake);
    }

    fn save<I: KeptInventory>(&mut self, client: &Client<I>) -> Result<(), DestinationError> {
        let path = self.work.path().join(INVENTORY);
        client
            .inventory()
            .save()
            .map_err(|source| DestinationError::Inventory {
                path: path.clone(),
                source,
            })?;
        let bytes = std::fs::read(&path).map_err(|source| DestinationError::Io {
            path: path.clone(),
            source,
        })?;
        // The inventory first, the state last: a state never names a checkpoint whose
        // resources the saved inventory does not hold.
        let settled = self.pending == 0;
        self.write_kept(INVENTORY, bytes)?;
        let state =
            serde_json::to_vec(client.state()).map_err(|source| DestinationError::Unreadable {
                path: PathBuf::from(child(&self.kept, STATE).to_string()),
                source,
            })?;
        self.write_kept(STATE, state)?;
        // Nothing under way was left out of this save.
        self.clean = settled;
        Ok(())
    }

    fn keeps_body(&self, request: &Request) -> bool {
        matches!(
            request.purpose,
            resourcesync_client::Purpose::Resource { .. } | resourcesync_client::Purpose::Package
        )
    }

    fn bodies(&self) -> Bodies {
        self.bodies.clone()
    }

    fn keeps_in_memory(&self, request: &Request) -> bool {
        matches!(
            request.purpose,
            resourcesync_client::Purpose::Resource { .. }
        )
    }
}
/// `parent/name` (a name of this program's: no character a key part encodes).
fn child(parent: &Key, name: &str) -> Key {
    parent.child(name)
}

#[cfg(test)]
mod tests;
