//! A directory kept in step with a Source: what a driver of the sans-IO client does on
//! disk once the client has decided, written once for every driver, blocking or async.
//!
//! A driver makes the requests the client asks for and hands the responses over; a
//! resource's or a package's body also goes to the temporary file
//! [`DirectoryDestination::body_path`] names (the client verifies the bytes as they pass,
//! the file keeps them). Each event the client then polls out goes to
//! [`DirectoryDestination::apply`], which stores, extracts, deletes or saves, and
//! confirms to the client what it did (or that it failed). What is kept beside the
//! resources, the state and the inventory, lives in `DIR/.resourcesync/` ([`KEPT`]), a
//! name the client's path mapper keeps out of every Source's reach
//! ([`DirectoryDestination::paths`]).
//!
//! ```no_run
//! use resourcesync_cli::destination::DirectoryDestination;
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
//! // ... make the requests, writing bodies to `dest.body_path(&request)` ...
//! while let Some(event) = client.poll_event() {
//!     dest.apply(&mut client, &event)?;
//! }
//! dest.save(&client)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use http::{HeaderMap, StatusCode};
use resourcesync_client::local_path::PathMapper;
use resourcesync_client::{
    Client, Config, Event, Held, Inventory, MemoryInventory, Misuse, Purpose, Request, RequestId,
    State,
};
use resourcesync_model::{Digests, Fixity};
use resourcesync_package::Package;

/// The name under the directory that a [`DirectoryDestination`] keeps for itself: the
/// state, the inventory and the temporary files.
pub const KEPT: &str = ".resourcesync";

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
    /// The client refused a confirmation: a bug of the driver's (the client changed
    /// nothing).
    #[error(transparent)]
    Misuse(#[from] Misuse),
}

/// A directory kept in step with a Source, and its `.resourcesync/` (see the
/// [module](self)).
pub struct DirectoryDestination {
    /// The directory the resources go to.
    dir: PathBuf,
    /// `dir/.resourcesync`.
    kept: PathBuf,
    /// Directories this run made or found, so that each is made once: per resource, a
    /// `create_dir_all` is a system call or more for every level.
    made: HashSet<PathBuf>,
    /// The packages open for extraction, by the request they came in.
    packages: HashMap<RequestId, Package<io::BufReader<std::fs::File>>>,
}

impl fmt::Debug for DirectoryDestination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DirectoryDestination")
            .field("dir", &self.dir)
            .field("packages", &self.packages.len())
            .finish_non_exhaustive()
    }
}

impl DirectoryDestination {
    /// Opens `dir` (made if missing) and its `.resourcesync/tmp/`, and removes the
    /// temporary files a run that was stopped left there: they are of no use to the next.
    pub fn open(dir: impl Into<PathBuf>) -> Result<DirectoryDestination, DestinationError> {
        let dir = dir.into();
        let kept = dir.join(KEPT);
        let tmp = kept.join("tmp");
        std::fs::create_dir_all(&tmp).map_err(|source| DestinationError::Io {
            path: dir.clone(),
            source,
        })?;
        let entries = std::fs::read_dir(&tmp).map_err(|source| DestinationError::Io {
            path: tmp.clone(),
            source,
        })?;
        for entry in entries.flatten() {
            let _ = std::fs::remove_file(entry.path());
        }
        Ok(DirectoryDestination {
            dir,
            kept,
            made: HashSet::new(),
            packages: HashMap::new(),
        })
    }

    /// The directory the resources go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The state and the inventory the last run saved, or new ones for a first run.
    pub fn load(&self) -> Result<(State, MemoryInventory), DestinationError> {
        Ok((load(&self.state_path())?, load(&self.inventory_path())?))
    }

    /// The config's path mapper with [`KEPT`] kept out of every Source's reach: give it to
    /// [`Config::with_paths`].
    pub fn paths(&self, config: &Config) -> PathMapper {
        config.paths.clone().with_kept_name(KEPT)
    }

    /// Where the body of `request` goes while it arrives, if it is a resource or a
    /// package (which [`apply`](Self::apply) renames into place or opens); a document's
    /// body is the client's alone. Write it only for a response with a success status.
    pub fn body_path(&self, request: &Request) -> Option<PathBuf> {
        match request.purpose {
            Purpose::Resource { .. } | Purpose::Package => Some(self.temp(request.id)),
            _ => None,
        }
    }

    /// For a blocking driver: hands a response to the client, its head and then its body
    /// as it is read from `body`, and writes the body to `keep` as well (the request's
    /// [`body_path`](Self::body_path)) when its status is a success. A body that cannot
    /// be read to its end is the request's failure, handed to the client; a temporary
    /// file that cannot be written is an error (the destination is unusable).
    pub fn receive<I: Inventory>(
        &self,
        client: &mut Client<I>,
        id: RequestId,
        keep: Option<PathBuf>,
        status: StatusCode,
        headers: &HeaderMap,
        mut body: impl Read,
    ) -> Result<(), DestinationError> {
        client.handle_response(id, status, headers, Instant::now())?;
        let mut file = match keep.filter(|_| status.is_success()) {
            Some(path) => Some(Kept::create(path)?),
            None => None,
        };
        let mut buf = vec![0; 64 * 1024];
        loop {
            match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(file) = &mut file {
                        file.write(&buf[..n])?;
                    }
                    client.handle_body(id, &buf[..n], Instant::now())?;
                }
                Err(e) => return Ok(client.handle_failure(id, e.to_string(), Instant::now())?),
            }
        }
        Ok(client.handle_end(id, Instant::now())?)
    }

    /// Saves the client's state and inventory, each atomically: a temporary file
    /// beside it, synced, then renamed over it.
    pub fn save(&self, client: &Client<MemoryInventory>) -> Result<(), DestinationError> {
        let io = |path: PathBuf| move |source| DestinationError::Io { path, source };
        let inventory = self.inventory_path();
        save_json(&inventory, client.inventory()).map_err(io(inventory))?;
        let state = self.state_path();
        save_json(&state, client.state()).map_err(io(state))
    }

    /// Carries out what the client decided in `event`, and confirms it to the client:
    /// a [`Store`](Event::Store) renames the body's temporary file into place, a
    /// [`Delete`](Event::Delete) removes the file (and the directories it leaves empty), a
    /// [`Package`](Event::Package) is opened and its manifest handed over, an
    /// [`Extract`](Event::Extract) copies a bitstream through the package's verified
    /// reader and renames it into place, [`Release`](Event::Release),
    /// [`Discard`](Event::Discard) and [`Cancel`](Event::Cancel) remove what the request
    /// left, and a [`Checkpoint`](Event::Checkpoint) saves. Other events are the driver's
    /// to report. A resource that cannot be written is a failure confirmed to the client,
    /// not an error: the run goes on. The errors are a checkpoint that could not be saved
    /// and the client's [`Misuse`].
    pub fn apply(
        &mut self,
        client: &mut Client<MemoryInventory>,
        event: &Event,
    ) -> Result<(), DestinationError> {
        match event {
            Event::Store(store) => {
                let target = self.target(&store.change.path);
                match self.place(&self.temp(store.request), &target) {
                    // The client records the digests it verified in the inventory.
                    Ok(()) => client.applied(store.change.id, None, Instant::now())?,
                    Err(e) => {
                        let reason = format!("{}: {e}", target.display());
                        client.failed(store.change.id, reason, Instant::now())?
                    }
                }
            }
            Event::Delete(change) => {
                let target = self.target(&change.path);
                match std::fs::remove_file(&target) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        let reason = format!("{}: {e}", target.display());
                        client.failed(change.id, reason, Instant::now())?
                    }
                    _ => {
                        self.remove_empty_parents(&target);
                        client.applied(change.id, None, Instant::now())?
                    }
                }
            }
            Event::Package { request } => match Package::open(self.temp(*request)) {
                Ok(package) => {
                    client.handle_package(*request, package.manifest(), Instant::now())?;
                    self.packages.insert(*request, package);
                }
                Err(e) => client.handle_failure(*request, e.to_string(), Instant::now())?,
            },
            Event::Extract(extract) => {
                let target = self.target(&extract.change.path);
                let temp = self
                    .kept
                    .join("tmp")
                    .join(format!("extract-{}", extract.change.id).replace(' ', "-"));
                let copied = match self.packages.get_mut(&extract.package) {
                    Some(package) => copy_bitstream(package, extract.bitstream, &temp),
                    None => Err(io::Error::other("the package is not open")),
                };
                match copied.and_then(|digests| self.place(&temp, &target).map(|()| digests)) {
                    Ok(digests) => {
                        let held = Held::of(&digests, extract.change.lastmod);
                        client.applied(extract.change.id, Some(held), Instant::now())?;
                    }
                    Err(e) => {
                        let _ = std::fs::remove_file(&temp);
                        let reason = format!("{}: {e}", target.display());
                        client.failed(extract.change.id, reason, Instant::now())?
                    }
                }
            }
            Event::Release { request }
            | Event::Discard { request, .. }
            | Event::Cancel { request } => {
                self.packages.remove(request);
                let _ = std::fs::remove_file(self.temp(*request));
            }
            Event::Checkpoint => self.save(client)?,
            _ => {}
        }
        Ok(())
    }

    fn state_path(&self) -> PathBuf {
        self.kept.join("state.json")
    }

    fn inventory_path(&self) -> PathBuf {
        self.kept.join("inventory.json")
    }

    /// The temporary file of a request's body.
    fn temp(&self, id: RequestId) -> PathBuf {
        self.kept.join("tmp").join(id.to_string().replace(' ', "-"))
    }

    /// Where a resource's local path is under the directory.
    fn target(&self, path: &resourcesync_client::local_path::LocalPath) -> PathBuf {
        self.dir.join(path.to_path_buf())
    }

    /// Moves a finished temporary file to `target`, making its directories (once: `made`
    /// remembers which this run made or found).
    fn place(&mut self, temp: &Path, target: &Path) -> io::Result<()> {
        if let Some(parent) = target.parent()
            && !self.made.contains(parent)
        {
            std::fs::create_dir_all(parent)?;
            self.made.insert(parent.to_owned());
        }
        match std::fs::rename(temp, target) {
            // A directory this run made was removed since (an emptied directory after a
            // deletion): make it again.
            Err(e)
                if e.kind() == io::ErrorKind::NotFound
                    && target.parent().is_some_and(|p| !p.exists()) =>
            {
                if let Some(parent) = target.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::rename(temp, target)
            }
            other => other,
        }
    }

    /// Removes the directories a deletion left empty, up to (not including) the
    /// directory itself.
    fn remove_empty_parents(&self, file: &Path) {
        let mut dir = file.parent();
        while let Some(d) = dir {
            if d == self.dir || std::fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
}

/// A temporary file being written, with its path for the errors.
struct Kept {
    path: PathBuf,
    file: std::fs::File,
}

impl Kept {
    fn create(path: PathBuf) -> Result<Kept, DestinationError> {
        match std::fs::File::create(&path) {
            Ok(file) => Ok(Kept { path, file }),
            Err(source) => Err(DestinationError::Io { path, source }),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), DestinationError> {
        self.file
            .write_all(bytes)
            .map_err(|source| DestinationError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// Reads a JSON file this program saved, or the default when there is none.
fn load<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T, DestinationError> {
    match std::fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|source| DestinationError::Unreadable {
                path: path.to_owned(),
                source,
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(T::default()),
        Err(source) => Err(DestinationError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes `value` as JSON to `path` atomically: a temporary file beside it, synced, then
/// renamed over it, so that a run stopped at any point leaves the old file or the new one.
fn save_json(path: &Path, value: &impl serde::Serialize) -> io::Result<()> {
    let temp = path.with_extension("json.tmp");
    // Buffered: serde_json writes a token at a time, a system call each unbuffered
    // (which took half of a 10,000-resource sync to save its inventory).
    let mut out = io::BufWriter::new(std::fs::File::create(&temp)?);
    serde_json::to_writer(&mut out, value)?;
    let file = out.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    std::fs::rename(&temp, path)
}

/// Copies bitstream `i` of `package` to `temp`, verified as it is read.
fn copy_bitstream(
    package: &mut Package<io::BufReader<std::fs::File>>,
    i: usize,
    temp: &Path,
) -> io::Result<Digests> {
    let mut reader = package.bitstream(i).map_err(io::Error::other)?;
    let mut file = std::fs::File::create(temp)?;
    let mut fixity = Fixity::new();
    let mut buf = vec![0; 64 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        fixity.update(&buf[..n]);
        file.write_all(&buf[..n])?;
    }
    file.sync_all()?;
    Ok(fixity.finish())
}
