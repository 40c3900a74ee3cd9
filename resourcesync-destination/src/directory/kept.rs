//! What DIR keeps of its own in `.resourcesync/`: the lock, the state, the inventory and
//! the journal of what was placed since the last save; loading, replaying and saving them.

use super::*;

impl DirectoryDestination {
    /// The state and the inventory the last run saved, or new ones for a first run;
    /// with what a run stopped since its last save had placed (see [`JOURNAL`]). An
    /// inventory an earlier version saved whole (`inventory.json`) is carried over into
    /// the inventory file ([`DiskInventory`]) and removed.
    ///
    /// The files of `.resourcesync/` are this program's: one that is a symbolic link, a
    /// FIFO, a device or a directory is not read (an error naming it), never waited on. A
    /// state file left empty (a power failure after its rename, on a file system that
    /// does not order the two) is taken as no state: the next run is a baseline, which
    /// compares every listed resource with the inventory.
    pub fn load(&self) -> Result<(State, DiskInventory), DestinationError> {
        let state = self.load_state()?;
        let mut inventory = self.open_inventory()?;
        self.replay(&mut inventory);
        Ok((state, inventory))
    }

    /// Opens the inventory file (`inventory.redb` in [`KEPT`]), carrying over an
    /// `inventory.json` of an earlier version; without the journal's replay, which
    /// [`load`](Self::load) adds.
    pub fn open_inventory(&self) -> Result<DiskInventory, DestinationError> {
        let path = self.kept_path.clone().join(INVENTORY);
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true).write(true).create(true);
        let file = own_file(&self.kept, INVENTORY, &mut options).map_err(|source| {
            DestinationError::Io {
                path: path.clone(),
                source,
            }
        })?;
        let damaged = |source: crate::inventory::InventoryError| DestinationError::Inventory {
            path: path.clone(),
            source: source.into(),
        };
        let mut inventory = DiskInventory::open(file).map_err(damaged)?;
        let old = self.kept_path.clone().join(OLD_INVENTORY);
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        match own_file(&self.kept, OLD_INVENTORY, &mut options) {
            Ok(file) => {
                let records: MemoryInventory = serde_json::from_reader(io::BufReader::new(file))
                    .map_err(|source| DestinationError::Unreadable {
                        path: old.clone(),
                        source,
                    })?;
                // Once committed, the old file is only in the way: a run stopped between
                // the two finds both and carries the same records over again.
                inventory
                    .import(records.iter().map(|(uri, held)| (uri.clone(), *held)))
                    .map_err(damaged)?;
                self.kept
                    .remove_file(OLD_INVENTORY)
                    .map_err(|source| DestinationError::Io { path: old, source })?;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(source) => return Err(DestinationError::Io { path: old, source }),
        }
        Ok(inventory)
    }

    /// What every shard keeping this directory stored (each shard's inventory with its
    /// journal replayed), for an audit of the whole ([`open_whole`](Self::open_whole)):
    /// each shard is opened, and so locked, in turn, so that a shard still running is
    /// [`DestinationError::Busy`]. None when no shard keeps it. Held in memory, every
    /// record (an audit of the whole of millions of resources takes hundreds of bytes
    /// each); a shard's own runs keep theirs on disk.
    pub fn shard_records(&self) -> Result<Vec<(resourcesync_model::Uri, Held)>, DestinationError> {
        self.shard_records_but(None)
    }

    /// [`shard_records`](Self::shard_records) of every shard but `own` (this one's,
    /// whose lock this destination holds).
    fn shard_records_but(
        &self,
        own: Option<Shard>,
    ) -> Result<Vec<(resourcesync_model::Uri, Held)>, DestinationError> {
        // From DIR's own `.resourcesync/`, whichever this destination keeps; none (a dry
        // run or an audit of a directory no sync keeps yet) is no shard, and is not made.
        if matches!(self.root.symlink_metadata(KEPT), Err(e) if e.kind() == io::ErrorKind::NotFound)
        {
            return Ok(Vec::new());
        }
        let top = own_dir(&self.root, Path::new(KEPT), &self.dir)?;
        let shards_path = self.dir.join(KEPT).join(super::SHARDS);
        let all = match top.open_dir(super::SHARDS) {
            Ok(all) => all,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(DestinationError::Io {
                    path: shards_path,
                    source,
                });
            }
        };
        let entries = all.entries().map_err(|source| DestinationError::Io {
            path: shards_path.clone(),
            source,
        })?;
        let mut records = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == super::SPLIT_LOCK {
                continue;
            }
            let Some(shard) = super::parse_shard(&name) else {
                return Err(DestinationError::Shards {
                    dir: self.dir.clone(),
                    found: name,
                    asked: "all".into(),
                });
            };
            if Some(shard) == own {
                continue;
            }
            // DIR's lock is this destination's already (shared with other readers, an
            // audit's): the shard's own is taken as well, as a reader's, so that one
            // still running is Busy; what it saved is read from a copy.
            let dest = DirectoryDestination::open_inner(
                self.dir.clone(),
                Some(shard),
                false,
                true,
                super::Access::Reads,
            )?;
            let mut inventory = dest.open_inventory()?;
            dest.replay(&mut inventory);
            inventory.for_each(&mut |uri, held| records.push((uri.clone(), *held)));
        }
        Ok(records)
    }

    /// For an audit of one shard: the files the other shards stored are theirs, not
    /// extras of this one's ([`verify`](Self::verify) leaves them out).
    pub fn know_other_shards(&mut self, own: Shard) -> Result<(), DestinationError> {
        self.elsewhere = self
            .shard_records_but(Some(own))?
            .into_iter()
            .map(|(uri, _)| uri)
            .collect();
        Ok(())
    }

    /// Reads the state the last run saved, or a new one (none saved, or an empty file):
    /// with [`replay`](Self::replay), what [`load`](Self::load) does for an inventory of
    /// the caller's ([`KeptInventory`]).
    pub fn load_state(&self) -> Result<State, DestinationError> {
        let path = self.kept_path.clone().join(STATE);
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        let file = match own_file(&self.kept, STATE, &mut options) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(State::default()),
            Err(source) => return Err(DestinationError::Io { path, source }),
        };
        let mut bytes = Vec::new();
        // A state holds a checkpoint per set of resources: megabytes would be a file that
        // is not this program's.
        io::Read::take(file, STATE_MAX)
            .read_to_end(&mut bytes)
            .map_err(|source| DestinationError::Io {
                path: path.clone(),
                source,
            })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(State::default());
        }
        serde_json::from_slice(&bytes)
            .map_err(|source| DestinationError::Unreadable { path, source })
    }

    /// Records in `inventory` what the journal says was placed since the last save, each
    /// only if its file still holds those bytes. A line a stopped run left half written
    /// (cut anywhere, inside a character too) is skipped, and only it.
    pub fn replay(&self, inventory: &mut impl KeptInventory) {
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        let Ok(file) = own_file(&self.kept, JOURNAL, &mut options) else {
            return;
        };
        let mut text = Vec::new();
        if io::Read::take(file, JOURNAL_MAX)
            .read_to_end(&mut text)
            .is_err()
        {
            return;
        }
        for line in text.split(|&b| b == b'\n') {
            let Ok(placed) = serde_json::from_slice::<Placed>(line) else {
                continue;
            };
            let path = Path::new(&placed.path);
            let safe = path.components().all(|c| matches!(c, Component::Normal(_)));
            if safe
                && self.checked(path.parent().unwrap_or(Path::new(""))).is_ok()
                && self.root.symlink_metadata(path).is_ok_and(|m| m.is_file())
                && holds_file(&self.root, path, &placed.held).is_ok_and(|holds| holds)
            {
                inventory.record(placed.uri, placed.held);
            }
        }
    }

    /// Saves the client's state and inventory, each atomically: a temporary file
    /// beside it, synced, then renamed over it. The files placed since the last save are
    /// flushed to the disk first (one `syncfs` of DIR's file system on Linux, a `sync`
    /// on other Unix systems), so that the inventory never records bytes a power failure
    /// could take back.
    ///
    /// The inventory's save ([`KeptInventory::save`]; [`DiskInventory`] writes only the
    /// records changed since the last save); what [`verify`](Self::verify) found on disk is never
    /// saved: the inventory records what the sync stored, never what someone else wrote
    /// (a deletion checks against it).
    pub fn save<I: KeptInventory>(&mut self, client: &Client<I>) -> Result<(), DestinationError> {
        // Lines in the journal: files placed since the last save, by this run or by one
        // stopped before it saved (replayed by `load` into the inventory), whose bytes
        // may be in the page cache only.
        let journaled = self.kept.metadata(JOURNAL).is_ok_and(|m| m.len() > 0);
        if journaled {
            self.flush_placed()?;
        }
        client
            .inventory()
            .save()
            .map_err(|source| DestinationError::Inventory {
                path: self.kept_path.clone().join(INVENTORY),
                source,
            })?;
        self.save_json(STATE, client.state())?;
        // What the journal held is in the inventory now; the lines written ahead of
        // their placements go with it.
        self.journaled.clear();
        let emptied = match &self.journal {
            Some(journal) => journal.set_len(0),
            None if journaled => {
                let mut options = cap_std::fs::OpenOptions::new();
                options.write(true).truncate(true);
                own_file(&self.kept, JOURNAL, &mut options).map(drop)
            }
            None => Ok(()),
        };
        emptied.map_err(|source| DestinationError::Io {
            path: self.kept_path.clone().join(JOURNAL),
            source,
        })?;
        Ok(())
    }

    /// Flushes to the disk what was placed since the last save: one `syncfs` of DIR's
    /// file system (on other Unix systems, a `sync` of all), not an `fsync` per file
    /// before its rename. A file is written and renamed into place without waiting for
    /// the disk, which keeps it whole against a stopped or killed run (the rename is
    /// atomic) but not against a power failure, after which a file renamed but not yet
    /// written back can be empty; the inventory that records it is saved only after this
    /// flush, so after a power failure it holds only files that are whole on the disk
    /// (the journal's lines are checked against the files' bytes when replayed). One call
    /// per save, at most every few seconds, against one per file: a sync of many small
    /// files would spend more time waiting for the disk than receiving.
    pub(super) fn flush_placed(&self) -> Result<(), DestinationError> {
        // Through a descriptor opened for reading: cap-std's own may be `O_PATH`, which
        // `syncfs` refuses (EBADF).
        #[cfg(target_os = "linux")]
        let flushed = self
            .root
            .open(".")
            .and_then(|dir| rustix::fs::syncfs(&dir).map_err(io::Error::from));
        #[cfg(all(unix, not(target_os = "linux")))]
        let flushed: io::Result<()> = {
            rustix::fs::sync();
            Ok(())
        };
        // Windows has no call that flushes a volume without administrator rights; the
        // files are flushed by the system's lazy writer.
        #[cfg(not(unix))]
        let flushed: io::Result<()> = Ok(());
        flushed.map_err(|source| DestinationError::Io {
            path: self.dir.clone(),
            source,
        })
    }

    /// Appends to the journal that `change` is placed with `digests`, before it is: a
    /// run stopped between the rename and the confirmation leaves a file the inventory
    /// does not hold, which the next [`load`](Self::load) then records instead of
    /// leaving it to look like a file no sync stored. One write per line, unbuffered:
    /// what a killed process wrote stays in the page cache; it begins with a newline, so
    /// that a line an earlier write left cut short costs only itself ([`JOURNAL`]).
    pub(super) fn journal(&mut self, change: &Decision, digests: &Measured) -> io::Result<()> {
        let mut line = Vec::with_capacity(256);
        line.push(b'\n');
        journal_line(&mut line, change, digests)?;
        self.journal_file()?.write_all(&line)
    }

    /// Appends to the journal, in one write, the lines of the placements among `events`
    /// (those before the first [`Event::Checkpoint`], whose save empties the journal),
    /// and remembers their requests: [`apply`](Self::apply) then places each without a
    /// write of its own. A line still comes before its file's rename; a line whose file
    /// is never placed is harmless, as for a conflict (a replay records a line only if
    /// its file holds the listed bytes). A [`save`](Self::save) forgets them all: the
    /// lines it empties are written again by their placements. A write that fails here
    /// is left to each placement to try, and to fail as its own.
    pub(super) fn journal_ahead(&mut self, events: &[Event]) {
        let stores = || {
            events
                .iter()
                .take_while(|event| !matches!(event, Event::Checkpoint))
                .filter_map(|event| match event {
                    Event::Store(store) => Some(store),
                    _ => None,
                })
        };
        // One line alone (most batches): its placement writes it, as it would have.
        if stores().nth(1).is_none() {
            return;
        }
        let mut lines = vec![b'\n'];
        let mut requests = Vec::new();
        for store in stores() {
            if journal_line(&mut lines, &store.change, &store.digests).is_err() {
                return;
            }
            requests.push(store.request);
        }
        if let Ok(journal) = self.journal_file()
            && journal.write_all(&lines).is_ok()
        {
            self.journaled.extend(requests);
        }
    }

    /// The journal, opened for appending at its first use.
    fn journal_file(&mut self) -> io::Result<&mut std::fs::File> {
        let journal = match self.journal.take() {
            Some(journal) => journal,
            None => {
                let mut options = cap_std::fs::OpenOptions::new();
                options.append(true).create(true);
                own_file(&self.kept, JOURNAL, &mut options)?
            }
        };
        Ok(self.journal.insert(journal))
    }

    /// Writes `value` as JSON to `name` in [`KEPT`] atomically: a temporary file beside
    /// it, synced, then renamed over it, so that a run stopped at any point leaves the
    /// old file or the new one.
    pub(super) fn save_json(
        &self,
        name: &str,
        value: &impl serde::Serialize,
    ) -> Result<(), DestinationError> {
        let temp = format!("{name}.tmp");
        let write = || -> io::Result<()> {
            // Buffered: serde_json writes a token at a time, a system call each
            // unbuffered (which took half of a 10,000-resource sync to save its
            // inventory).
            // A new file: whatever was left at the temporary name (a link, a FIFO
            // planted there) is removed, not opened.
            match self.kept.remove_file(&temp) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            let mut options = cap_std::fs::OpenOptions::new();
            options.write(true).create_new(true);
            let mut out = io::BufWriter::new(own_file(&self.kept, &temp, &mut options)?);
            serde_json::to_writer(&mut out, value)?;
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            self.kept.rename(&temp, &self.kept, name)
        };
        write().map_err(|source| DestinationError::Io {
            path: self.kept_path.clone().join(name),
            source,
        })
    }
}

/// How a lock is held.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Hold {
    /// By one run alone; another is refused at once ([`DestinationError::Busy`]).
    Exclusive,
    /// By any number of runs of one kind (the shards of a split), none of the other kind
    /// (unsharded); refused at once as well.
    Shared,
    /// By one at a time, the others waiting for it (held for a moment only).
    Waiting,
    /// By any number of runs that write nothing (dry runs, audits), none that writes;
    /// through a descriptor opened for reading, so that a read-only DIR can be read. No
    /// lock file is no lock: none is made.
    Reading,
    /// As [`Reading`](Hold::Reading), by one run alone: an audit of the whole of a
    /// directory that shards keep, which no shard may start storing in while it reads.
    ReadingAlone,
}

/// Takes the lock `name` of the destination whose own files are at `kept_path` (opened
/// through `kept`, its handle), held as `hold`: a `flock`, released when the file is
/// closed, by the process's end too, so that a killed run leaves no stale lock. `None`
/// where there is no `flock` (not Unix, a file system without locks).
pub(super) fn lock_as(
    kept: &Dir,
    dir: &Path,
    kept_path: &Path,
    name: &str,
    hold: Hold,
) -> Result<Option<std::fs::File>, DestinationError> {
    let path = kept_path.join(name);
    #[cfg(unix)]
    {
        use rustix::fs::{FlockOperation, flock};
        let mut options = cap_std::fs::OpenOptions::new();
        let reading = matches!(hold, Hold::Reading | Hold::ReadingAlone);
        options.read(true);
        if !reading {
            options.write(true).create(true);
        }
        let file = match own_file(kept, name, &mut options) {
            Ok(file) => file,
            Err(e) if reading && e.kind() == io::ErrorKind::NotFound => {
                return Ok(None);
            }
            Err(source) => return Err(DestinationError::Io { path, source }),
        };
        let operation = match hold {
            Hold::Exclusive | Hold::ReadingAlone => FlockOperation::NonBlockingLockExclusive,
            Hold::Shared | Hold::Reading => FlockOperation::NonBlockingLockShared,
            Hold::Waiting => FlockOperation::LockExclusive,
        };
        match flock(&file, operation) {
            Ok(()) => Ok(Some(file)),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(DestinationError::Busy {
                dir: dir.to_owned(),
                lock: path,
            }),
            // A file system without locks (some NFS, FUSE and SMB mounts): used unlocked,
            // as before there was a lock, rather than not at all.
            Err(
                rustix::io::Errno::NOLCK
                | rustix::io::Errno::OPNOTSUPP
                | rustix::io::Errno::NOSYS
                | rustix::io::Errno::INVAL,
            ) => Ok(None),
            Err(e) => Err(DestinationError::Io {
                path,
                source: e.into(),
            }),
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (kept, dir, path, hold);
        Ok(None)
    }
}

/// Copies into `to` (at `to_path`) what a run loads from `kept` (at `kept_path`): the state, the
/// inventory, an earlier version's inventory and the journal, those that are there, each
/// read as [`load`](DirectoryDestination::load) reads it (a regular file of this
/// program's, no more of the state and the journal than a load reads). For a run that
/// writes nothing in `kept` ([`super::Access::Reads`]), held under its lock. The copy
/// needs room for the inventory in the system's temporary directory (`TMPDIR`).
pub(super) fn copy_kept(
    kept: &Dir,
    kept_path: &Path,
    to: &Dir,
    to_path: &Path,
) -> Result<(), DestinationError> {
    for (name, most) in [
        (STATE, STATE_MAX),
        (INVENTORY, u64::MAX),
        (OLD_INVENTORY, u64::MAX),
        (JOURNAL, JOURNAL_MAX),
    ] {
        let io_at = |source| DestinationError::Io {
            path: kept_path.join(name),
            source,
        };
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true);
        let file = match own_file(kept, name, &mut options) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(source) => return Err(io_at(source)),
        };
        let to_at = |source| DestinationError::Io {
            path: to_path.join(name),
            source,
        };
        let mut options = cap_std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        let mut copy = to.open_with(name, &options).map_err(to_at)?.into_std();
        // A read's failure is DIR's file's, a write's the copy's (a full temporary
        // directory): each named as what it is.
        let mut from = io::Read::take(file, most);
        let mut buf = vec![0; 256 << 10];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(io_at(source)),
            };
            copy.write_all(&buf[..n]).map_err(to_at)?;
        }
    }
    Ok(())
}

/// The lock's name in [`KEPT`].
pub(super) const LOCK: &str = "lock";

/// Whether `kept` holds a Source's state under [`STATE`]: what `resourcesync build` (the
/// publishing engine of `resourcesync-source`) keeps in a publication's `.resourcesync/`,
/// known by its `version` and `base_url`, which a Destination's state never has. A sync
/// would otherwise read its `sets` as its own and write over it, and the publication
/// could not be built again.
pub(super) fn holds_a_sources_state(kept: &Dir) -> bool {
    let mut options = cap_std::fs::OpenOptions::new();
    options.read(true);
    let Ok(file) = own_file(kept, STATE, &mut options) else {
        return false;
    };
    let mut bytes = Vec::new();
    io::Read::take(file, STATE_MAX)
        .read_to_end(&mut bytes)
        .is_ok()
        && is_a_sources_state(&bytes)
}

/// Whether `bytes`, read from a [`STATE`], are a Source's state (see
/// [`holds_a_sources_state`]): a bucket's prefix is asked the same of its object.
pub(crate) fn is_a_sources_state(bytes: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct SourceState {
        #[serde(rename = "version")]
        _version: serde::de::IgnoredAny,
        #[serde(rename = "base_url")]
        _base_url: serde::de::IgnoredAny,
    }
    serde_json::from_slice::<SourceState>(bytes).is_ok()
}

/// The saved state's name in [`KEPT`], and the most bytes it is read to.
pub(crate) const STATE: &str = "state.json";
pub(crate) const STATE_MAX: u64 = 64 << 20;

/// The inventory's name in [`KEPT`] ([`DiskInventory`]), and the one of the inventory
/// an earlier version wrote whole, carried over at the first open.
pub(crate) const INVENTORY: &str = "inventory.redb";
pub(super) const OLD_INVENTORY: &str = "inventory.json";

/// The most bytes of the journal replayed: lines of the files placed in the seconds
/// between two saves; a larger file is not this program's.
pub(super) const JOURNAL_MAX: u64 = 1 << 30;

/// The journal of what was placed since the last save, in [`KEPT`]: a line of JSON per
/// file placed, with its URI, its path and what the inventory is to record of it. Each
/// write begins with a newline (empty lines are skipped): a write cut short (a full
/// disk, a run killed in an earlier write) leaves a line with no end, which would
/// otherwise run into the next write's first line and make it unreadable too.
pub const JOURNAL: &str = "placed.jsonl";

/// A line of the [`JOURNAL`].
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Placed<U = resourcesync_model::Uri, P = String> {
    uri: U,
    path: P,
    held: Held,
}

/// Appends to `out` the [`JOURNAL`]'s line that `change` is placed with `digests`.
fn journal_line(out: &mut Vec<u8>, change: &Decision, digests: &Measured) -> io::Result<()> {
    let placed = Placed {
        uri: &change.uri,
        path: change.path.as_str(),
        held: Held::of(digests, change.lastmod),
    };
    serde_json::to_writer(&mut *out, &placed)?;
    out.push(b'\n');
    Ok(())
}
