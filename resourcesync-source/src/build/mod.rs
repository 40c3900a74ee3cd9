//! Publishes a directory (or a list of files) as a ResourceSync Source: what
//! `resourcesync build` does.
//!
//! A file at `docs/a.txt` of the collection is the resource `<BASE>docs/a.txt`, and the
//! publish directory is what a web server serves at `<BASE>`. Each run writes a complete
//! new *generation* of the publication beside the publish directory, in
//! `.<name>.resourcesync/<generation>/`, and switches to it by renaming one symbolic link,
//! the publish directory itself, over the old one: a web server (or `resourcesync serve`)
//! that resolves the publish directory per request serves the old generation or the new
//! one, never a mix, and a run that fails or is killed leaves the previous generation
//! published and untouched. The generation before the current one is kept, for readers in
//! the middle of a request when the switch happens; older ones are removed.
//!
//! A generation holds:
//! - `.well-known/resourcesync`: the Source Description (section 6.3.2), pointing at the
//!   Capability List;
//! - `resourcesync/capabilitylist.xml`: the Capability List, pointing at the current
//!   documents below;
//! - `resourcesync/resourcelist.xml`: the Resource List, or its index over parts
//!   `resourcelist-g<generation>-00001.xml`, … when the entry or byte limits require
//!   (named after the generation, so that a reader that read the index before a switch
//!   finds its parts after it; the last generation's are kept one run); every entry with
//!   `lastmod` (the file's modification time), `length`, md5 and sha-256, and a media type
//!   guessed from the file name (`mime_guess`);
//! - `resourcesync/changelist.xml`: the Change List Index over `changelist-00001.xml`, …,
//!   whose `from`/`until` are contiguous; the last one is open (no `until`) and receives
//!   the next run's changes until a limit or `--changelist-period` closes it. When the
//!   index is full (`--max-entries`), its oldest lists move to the Change List Archive
//!   (`resourcesync/changelist-archive.xml`, an archive index over parts when the limits
//!   require; Archives, section 5), still published, so that a Destination far behind
//!   finds every change;
//! - on request, `resourcesync/resourcedump.xml` with its ZIP packages (`--resource-dump`;
//!   later runs keep it, since the Change Lists cover from its `at`, unless
//!   `--new-resource-dump` packages the collection again) and `resourcesync/changedump.xml` with one package set per run that found changes
//!   (`--change-dump`);
//! - `.resourcesync/state.json` and `.resourcesync/resources.postcard`: what this run
//!   published (the Change Lists and the open one's size; each file's size, modification
//!   time and digests), read by the next run. A file whose size and modification time are
//!   unchanged is not read again, and its Resource List entry is copied from the last
//!   run's; the open Change List is extended from the document the last run wrote;
//! - a symbolic link per top-level entry of the collection (per entry of a directory
//!   that holds something not published, down to it, so that it is not served), so that
//!   the resources are served from the collection itself without being copied: the documents describe the
//!   collection as the run found it, and a Destination checks what it fetches against
//!   them (the resources themselves are served live, as any web server serves them).
//!
//! With `--list FILE`, the resources are the URI and file pairs the list gives instead
//! (URIs anywhere, served by whoever serves them; nothing is linked into the publication).
//!
//! Hidden files (a name starting with `.`), symbolic links inside the collection, names
//! that are not UTF-8, and the top-level names the publication uses (`.well-known`,
//! `resourcesync`) are not published; each is reported as skipped.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use resourcesync_model::BitstreamPath;
use resourcesync_model::{
    Capability, Change, Document, DocumentHead, DocumentKind, Entry, Fixity, Hashes, Link,
    MAX_BYTES, MAX_ENTRIES, Md, MediaType, Relation, Uri, W3cDateTime,
};
use resourcesync_package::{Bitstream, DumpBuilder, DumpLimits, PackageError, PackageOptions};
use resourcesync_xml::{
    Directory, DirectoryError, SetLimits, SetOptions, SetStore, SetWriter, WriteError,
    WriteOptions, Writer, write_document_with, written_entries,
};
use serde::{Deserialize, Serialize};

/// What a [`build`] tells while it runs, from the threads that do the work: a progress
/// bar, a log, or nothing (`&()`).
pub trait Progress: Sync {
    /// `files` files are about to be read and hashed (those new, or of another size or
    /// modification time than the last run found).
    fn hashing(&self, files: u64) {
        let _ = files;
    }

    /// One more of them was hashed.
    fn hashed(&self) {}
}

/// Tells nothing.
impl Progress for () {}

/// What a [`build`] publishes, and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Options {
    /// The URL the publish directory is served at.
    pub base_url: Uri,
    /// Whether to write a Resource Dump.
    pub resource_dump: bool,
    /// Whether to package the collection again when a Resource Dump is published.
    pub new_resource_dump: bool,
    /// Whether to write a Change Dump.
    pub change_dump: bool,
    /// Entries per document, at most 50,000.
    pub max_entries: usize,
    /// Bytes per document, at most 50 MiB.
    pub max_bytes: u64,
    /// Bytes of content per dump package.
    pub max_package_bytes: u64,
    /// How long a Change List stays open.
    pub changelist_period: Option<Duration>,
    /// A file of URI and file pairs to publish instead of the collection's files
    /// ([`listed`](crate::build) resources: a line per resource, its URI and its file
    /// relative to the collection; `#` comments and empty lines left out).
    pub list: Option<PathBuf>,
    /// The Source Description's `describedby` link.
    pub describedby: Option<Uri>,
}

impl Options {
    /// The standard's limits, no dumps, Change Lists closed only by the limits.
    pub fn new(base_url: Uri) -> Options {
        Options {
            base_url,
            resource_dump: false,
            new_resource_dump: false,
            change_dump: false,
            max_entries: MAX_ENTRIES as usize,
            max_bytes: MAX_BYTES,
            max_package_bytes: 1 << 30,
            changelist_period: None,
            list: None,
            describedby: None,
        }
    }

    /// With a Resource Dump (`true`) or without.
    pub fn with_resource_dump(mut self, on: bool) -> Options {
        self.resource_dump = on;
        self
    }

    /// With a Change Dump (`true`) or without.
    pub fn with_change_dump(mut self, on: bool) -> Options {
        self.change_dump = on;
        self
    }

    /// At most `entries` entries per document.
    pub fn with_max_entries(mut self, entries: usize) -> Options {
        self.max_entries = entries.clamp(1, MAX_ENTRIES as usize);
        self
    }

    /// A Change List stays open for `period` at most.
    pub fn with_changelist_period(mut self, period: Duration) -> Options {
        self.changelist_period = Some(period);
        self
    }
}

/// Why nothing was published. The previous publication is unchanged in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The collection or a file of it cannot be read.
    #[error("{}: {source}", path.display())]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file of the publication cannot be written.
    #[error("{}: {source}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The publish directory is something this command did not make.
    #[error("{}: {reason}", path.display())]
    NotOurs {
        /// The publish directory.
        path: PathBuf,
        /// What it is.
        reason: &'static str,
    },
    /// Another `build` is publishing to the same directory.
    #[error("{}: another build is publishing here (it holds {})", publish.display(), lock.display())]
    Busy {
        /// The publish directory.
        publish: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// The base URL cannot be a directory's base, or a name makes no URI under it.
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// A document could not be written, or would break a rule of the standard.
    #[error("{document}: {source}")]
    Document {
        /// The document's name in the publication.
        document: String,
        /// Why.
        source: WriteError,
    },
    /// A dump package could not be written.
    #[error("{document}: {source}")]
    Package {
        /// The dump's name in the publication.
        document: String,
        /// Why.
        source: PackageError,
    },
    /// A line of the list of URI and file pairs is wrong.
    #[error("{}, line {line}: {reason}", list.display())]
    List {
        /// The list.
        list: PathBuf,
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The state the last run left cannot be read.
    #[error("{}: unreadable state of the last run: {reason}", path.display())]
    State {
        /// The state file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// A file of the collection that was not published, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Skipped {
    /// Its path, relative to the collection.
    pub path: PathBuf,
    /// Why it was not published.
    pub reason: &'static str,
}

/// What one run published.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct BuildReport {
    /// The generation published, counted from 1.
    pub generation: u64,
    /// When: the Resource List's `at`.
    pub at: W3cDateTime,
    /// Resources published.
    pub resources: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Resources new since the last run (all of them in the first).
    pub created: u64,
    /// Resources whose content changed.
    pub updated: u64,
    /// Resources gone.
    pub deleted: u64,
    /// Files read and hashed (new, or of another size or modification time).
    pub hashed_files: u64,
    /// Their bytes.
    pub hashed_bytes: u64,
    /// Files not published.
    pub skipped: Vec<Skipped>,
    /// The Source Description's URI.
    pub source_description: Uri,
    /// The Capability List's URI.
    pub capability_list: Uri,
    /// Documents and packages written in this generation.
    pub documents: u64,
    /// The generation's directory, which the publish directory now links to.
    pub directory: PathBuf,
}

/// The state a run leaves in its generation, for the next run.
#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    /// The format: [`STATE_VERSION`]; another is refused.
    version: u32,
    /// The base URL published at: another one starts afresh.
    base_url: String,
    generation: u64,
    /// When the last run published.
    at: Option<W3cDateTime>,
    /// The Change Lists of the Change List Index, in order; the last one is open (no
    /// `until`).
    change_lists: Vec<ChangeListRecord>,
    /// The Change Lists before them, moved to the Change List Archive, in order.
    #[serde(default)]
    archived: Vec<ChangeListRecord>,
    /// The open Change List, whose entries are in its document: each run copies their
    /// bytes and adds its own, rather than keeping them here as entries to read back and
    /// write again.
    #[serde(default)]
    open: OpenList,
    /// The Change Dump's start and its package entries, in order.
    change_dump_from: Option<W3cDateTime>,
    change_dump: Vec<Entry>,
    /// The generation that wrote the Resource Dump published, if one is: its packages are
    /// named after it, and the next run carries them over.
    #[serde(default)]
    resource_dump: Option<u64>,
}

/// What a run knows of a file.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Resource {
    length: u64,
    /// Modification time: seconds and nanoseconds since the epoch.
    mtime: (i64, u32),
    /// The digests as bytes: read back without parsing hex.
    md5: [u8; 16],
    sha256: [u8; 32],
    /// Its place in the run's [`MediaTypes`].
    media_type: MediaTypeId,
}

/// A media type's place in a run's [`MediaTypes`], from 1; 0 is none.
type MediaTypeId = u16;

/// The media types of a run's resources, each once: a resource names its own by its
/// place here, so that the state keeps a short number per resource rather than a media
/// type to parse again.
#[derive(Debug, Default)]
struct MediaTypes {
    types: Vec<MediaType>,
    places: std::collections::HashMap<String, MediaTypeId>,
}

impl MediaTypes {
    /// The place of the media type `name`, added if new; 0 for a name that is no media
    /// type (or one too many, which no guess makes).
    fn of(&mut self, name: &str) -> MediaTypeId {
        if let Some(&id) = self.places.get(name) {
            return id;
        }
        let Ok(media_type) = name.parse::<MediaType>() else {
            return 0;
        };
        let Ok(id) = MediaTypeId::try_from(self.types.len() + 1) else {
            return 0;
        };
        self.types.push(media_type);
        self.places.insert(name.to_owned(), id);
        id
    }

    /// The media type at `id`.
    fn get(&self, id: MediaTypeId) -> Option<&MediaType> {
        usize::from(id)
            .checked_sub(1)
            .and_then(|i| self.types.get(i))
    }
}

/// The state's resources as a file: their media types once each, their paths one after
/// another, their digests (md5 and sha-256) one after another, and the rest as numbers.
/// Read back borrowing the paths and digests, with only the few media types to parse.
#[derive(Serialize, Deserialize)]
struct ResourcesFile<'a> {
    #[serde(borrow)]
    media_types: Vec<&'a str>,
    paths: &'a str,
    #[serde(borrow, with = "serde_bytes")]
    digests: &'a [u8],
    records: Vec<Record>,
}

/// A resource in [`ResourcesFile`], but for its path and digests.
#[derive(Serialize, Deserialize)]
struct Record {
    /// Its path's length in bytes.
    path: u32,
    length: u64,
    mtime: (i64, u32),
    media_type: MediaTypeId,
}

/// Bytes of one resource's digests in [`ResourcesFile::digests`]: md5, then sha-256.
const DIGESTS: usize = 16 + 32;

/// What a run needs to know of the open Change List's entries, which are in its document.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct OpenList {
    /// How many.
    entries: usize,
    /// Their estimated size (see [`estimated_bytes`]).
    bytes: u64,
    /// The last one's `datetime`, where the list closes when it is full.
    last: Option<W3cDateTime>,
}

/// One Change List of the set.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct ChangeListRecord {
    number: u32,
    from: W3cDateTime,
    until: Option<W3cDateTime>,
}

/// A change a run found: when it happened, the resource's path, and what it is: the
/// resource's index among those published and the change, or `None` for a deletion.
type ChangeAt = (W3cDateTime, String, Option<(usize, Change)>);

/// A file found in the collection.
#[derive(Debug)]
struct Found {
    /// Its key: its path in the collection, or with a list, its URI.
    path: String,
    /// With a list: its file.
    file: Option<PathBuf>,
    /// Its URI; `None` for a plain name, whose URI is the base's prefix and its path
    /// ([`Uris::of_found`]), made only when needed: an unchanged resource's entry is
    /// copied, not made.
    uri: Option<Uri>,
    length: u64,
    mtime: (i64, u32),
    modified: SystemTime,
}

/// The seconds since the epoch a `lastmod` can say: 0000-01-01 to 9999-12-31.
const W3C_YEARS: std::ops::Range<i64> = -62_167_219_200..253_402_300_800;

/// The name of the state file in a generation.
const STATE: &str = ".resourcesync/state.json";
/// The state's resources, beside it: every resource published by its path in the
/// collection, in path order (each path once), with what the run knew of it. A compact
/// binary file (postcard), read and written in a fraction of the time JSON takes for
/// 100,000 of them, and read while the walk runs.
const RESOURCES: &str = ".resourcesync/resources.postcard";
/// The state's format.
const STATE_VERSION: u32 = 4;
/// What a damaged open Change List leaves to do.
const LOST_OPEN_LIST: &str = "the state's open Change List is lost: publish into a new directory";
/// Where the documents go, under the base.
const DOCS: &str = "resourcesync";

/// Where a publish directory's generations, lock and links live.
struct Layout {
    /// The publish directory (a symbolic link once published).
    publish: PathBuf,
    /// `.<name>.resourcesync/` beside it.
    generations: PathBuf,
}

impl Layout {
    fn new(publish: &Path) -> Result<Layout, BuildError> {
        // `pub/` names the link's target, not the link: drop the trailing slash (and any
        // `.` segments), as a shell's completion adds it.
        let publish: PathBuf = publish.components().collect();
        let publish = publish.as_path();
        let not_ours = |reason| BuildError::NotOurs {
            path: publish.to_owned(),
            reason,
        };
        let name = publish
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| not_ours("the publish directory needs a UTF-8 name"))?;
        let parent = match publish.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        Ok(Layout {
            publish: publish.to_owned(),
            generations: parent.join(format!(".{name}.resourcesync")),
        })
    }

    fn generation(&self, number: u64) -> PathBuf {
        self.generations.join(format!("{number:05}"))
    }

    /// The link's target for generation `number`, relative to the link's directory so
    /// that the whole tree can be moved.
    fn target(&self, number: u64) -> PathBuf {
        let dir = self.generations.file_name().unwrap_or_default();
        Path::new(dir).join(format!("{number:05}"))
    }

    /// The generation the publish directory links to now, if any; an error when it is
    /// something else than this command made (or an empty directory, which is taken).
    fn current(&self) -> Result<Option<u64>, BuildError> {
        let not_ours = |reason| BuildError::NotOurs {
            path: self.publish.clone(),
            reason,
        };
        let meta = match fs::symlink_metadata(&self.publish) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(BuildError::Read {
                    path: self.publish.clone(),
                    source,
                });
            }
        };
        if meta.is_dir() {
            let empty = fs::read_dir(&self.publish)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            return if empty {
                Ok(None)
            } else {
                Err(not_ours(
                    "a directory with files that build did not publish; give a new path",
                ))
            };
        }
        if !meta.file_type().is_symlink() {
            return Err(not_ours("not a directory build publishes to"));
        }
        let target = fs::read_link(&self.publish).map_err(|source| BuildError::Read {
            path: self.publish.clone(),
            source,
        })?;
        let number = target
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u64>().ok())
            .filter(|n| target == self.target(*n))
            .ok_or_else(|| not_ours("a symbolic link that build did not make"))?;
        Ok(Some(number))
    }
}

/// Publishes `collection` into `publish` as `options` say, and reports what it did.
///
/// Everything is written into a new generation first; the publish directory is switched
/// to it last, by one rename. On any error the new generation is removed and the
/// publication is as it was. `now` is the time the snapshot starts, read by the caller
/// before the call (the engine reads no clock): the Resource List's `at`, the end of the
/// open Change List's period; a `now` before the last run's is taken as the last run's.
/// `progress` counts the files hashed.
pub fn build(
    collection: &Path,
    publish: &Path,
    options: &Options,
    now: SystemTime,
    progress: &dyn Progress,
) -> Result<BuildReport, BuildError> {
    let layout = Layout::new(publish)?;
    let collection = fs::canonicalize(collection).map_err(|source| BuildError::Read {
        path: collection.to_owned(),
        source,
    })?;
    if !collection.is_dir() {
        return Err(BuildError::Read {
            path: collection,
            source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    // Checked before anything is written.
    Directory::new(&collection, options.base_url.clone())?;
    fs::create_dir_all(&layout.generations).map_err(|source| BuildError::Write {
        path: layout.generations.clone(),
        source,
    })?;
    let lock_path = layout.generations.join("lock");
    let lock = File::create(&lock_path).map_err(|source| BuildError::Write {
        path: lock_path.clone(),
        source,
    })?;
    // Held until the end of the run; the system releases it if the process dies.
    if lock.try_lock().is_err() {
        return Err(BuildError::Busy {
            publish: layout.publish.clone(),
            lock: lock_path,
        });
    }
    let current = layout.current()?;
    let previous = match current {
        Some(n) => read_state(&layout.generation(n))?,
        None => State::default(),
    };
    // Another base URL names other resources: start afresh rather than list changes of
    // resources the Destinations never saw.
    // Nothing of the old publication is carried over then.
    let (previous, previous_dir) = if previous.base_url == options.base_url.as_str() {
        (previous, current.map(|n| layout.generation(n)))
    } else {
        (State::default(), None)
    };
    // The last run's resources are read on a thread of their own while the walk runs.
    let known = previous_dir.as_deref().map(read_resources);
    let number = current.unwrap_or(0).max(previous.generation) + 1;
    let generation = layout.generation(number);
    // A run killed before its switch may have left this generation half-written.
    remove_dir(&generation)?;
    let previous = Previous {
        dir: previous_dir,
        state: previous,
        resources: known,
    };
    let result = publish_generation(
        &collection,
        &generation,
        previous,
        number,
        options,
        now,
        progress,
    );
    let report = match result {
        Ok(report) => report,
        Err(e) => {
            let _ = fs::remove_dir_all(&generation);
            return Err(e);
        }
    };
    if let Err(e) = switch(&layout, number) {
        let _ = fs::remove_dir_all(&generation);
        return Err(e);
    }
    // Keep the generation before, for requests under way when the switch happened.
    remove_old_generations(&layout, number, current);
    drop(lock);
    Ok(report)
}

/// Reads the state a run left, or refuses to go on without it.
fn read_state(generation: &Path) -> Result<State, BuildError> {
    let unreadable = |path: &Path| {
        let path = path.to_owned();
        move |reason: String| BuildError::State { path, reason }
    };
    let path = generation.join(STATE);
    let bytes = fs::read(&path).map_err(|e| unreadable(&path)(e.to_string()))?;
    let state: State =
        serde_json::from_slice(&bytes).map_err(|e| unreadable(&path)(e.to_string()))?;
    if state.version != STATE_VERSION {
        return Err(unreadable(&path)(format!(
            "format {} is not this version's ({STATE_VERSION}); publish into a new directory",
            state.version
        )));
    }
    Ok(state)
}

/// What a run builds on: the last run's generation, its state, and its resources being
/// read; none of it for a first run.
struct Previous {
    dir: Option<PathBuf>,
    state: State,
    resources: Option<Known>,
}

/// The last run's resources, being read by [`read_resources`].
struct Known {
    /// The file read.
    path: PathBuf,
    reading: std::thread::JoinHandle<Result<LastRun, BuildError>>,
}

impl Known {
    /// The resources, once read.
    fn resources(self) -> Result<LastRun, BuildError> {
        self.reading.join().unwrap_or_else(|_| {
            Err(BuildError::State {
                path: self.path,
                reason: "the thread reading it panicked".into(),
            })
        })
    }
}

/// The resources the last run published, in path order, each path once.
#[derive(Debug, Default)]
struct LastRun {
    /// Their paths, one after another.
    paths: String,
    /// Where each path ends in `paths`.
    ends: Vec<usize>,
    resources: Vec<Resource>,
    /// The media types they name; this run's, with any it adds.
    media_types: MediaTypes,
}

impl LastRun {
    fn len(&self) -> usize {
        self.resources.len()
    }

    /// The path of resource `j`.
    fn path(&self, j: usize) -> &str {
        let start = j.checked_sub(1).map_or(0, |i| self.ends[i]);
        &self.paths[start..self.ends[j]]
    }

    /// Reads a [`ResourcesFile`], or says what is wrong with it.
    fn from_file(bytes: &[u8]) -> Result<LastRun, String> {
        let file: ResourcesFile<'_> = postcard::from_bytes(bytes).map_err(|e| e.to_string())?;
        let mut media_types = MediaTypes::default();
        for (i, name) in file.media_types.iter().enumerate() {
            if usize::from(media_types.of(name)) != i + 1 {
                return Err(format!("media type {} is {name:?}: none, or twice", i + 1));
            }
        }
        let n = file.records.len();
        if file.digests.len() != n * DIGESTS {
            return Err(format!(
                "{} bytes of digests for {n} resources",
                file.digests.len()
            ));
        }
        let mut run = LastRun {
            paths: file.paths.to_owned(),
            ends: Vec::with_capacity(n),
            resources: Vec::with_capacity(n),
            media_types,
        };
        let mut end = 0usize;
        for (record, digests) in file.records.iter().zip(file.digests.chunks_exact(DIGESTS)) {
            let start = end;
            end += record.path as usize;
            let Some(path) = run.paths.get(start..end) else {
                return Err(format!(
                    "resource {}'s path ends inside a character or past the paths",
                    run.ends.len() + 1
                ));
            };
            if run.ends.last().is_some() && *run.path(run.ends.len() - 1) >= *path {
                return Err("the resources are not in path order, each once".into());
            }
            if usize::from(record.media_type) > run.media_types.types.len() {
                return Err(format!("no media type {}", record.media_type));
            }
            let (md5, sha256) = digests.split_at(16);
            run.ends.push(end);
            run.resources.push(Resource {
                length: record.length,
                mtime: record.mtime,
                md5: md5.try_into().unwrap_or_default(),
                sha256: sha256.try_into().unwrap_or_default(),
                media_type: record.media_type,
            });
        }
        if end != run.paths.len() {
            return Err("paths beyond the last resource".into());
        }
        Ok(run)
    }
}

/// Writes the resources a run publishes, and the media types they name, as a
/// [`ResourcesFile`].
fn resources_file(resources: &[Published], media_types: &MediaTypes) -> Result<Vec<u8>, String> {
    let mut paths = String::with_capacity(resources.iter().map(|p| p.path.len()).sum());
    let mut digests = Vec::with_capacity(resources.len() * DIGESTS);
    let mut records = Vec::with_capacity(resources.len());
    for published in resources {
        let r = &published.resource;
        paths.push_str(&published.path);
        digests.extend_from_slice(&r.md5);
        digests.extend_from_slice(&r.sha256);
        records.push(Record {
            path: u32::try_from(published.path.len()).map_err(|e| e.to_string())?,
            length: r.length,
            mtime: r.mtime,
            media_type: r.media_type,
        });
    }
    let file = ResourcesFile {
        media_types: media_types.types.iter().map(MediaType::as_str).collect(),
        paths: &paths,
        digests: &digests,
        records,
    };
    postcard::to_stdvec(&file).map_err(|e| e.to_string())
}

/// Reads the resources a run left in `generation`, on a thread of its own.
fn read_resources(generation: &Path) -> Known {
    let path = generation.join(RESOURCES);
    let file = path.clone();
    let reading = std::thread::spawn(move || {
        let unreadable = |reason: String| BuildError::State {
            path: path.clone(),
            reason,
        };
        let bytes = fs::read(&path).map_err(|e| unreadable(e.to_string()))?;
        LastRun::from_file(&bytes).map_err(unreadable)
    });
    Known {
        path: file,
        reading,
    }
}

fn remove_dir(path: &Path) -> Result<(), BuildError> {
    match fs::remove_dir_all(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(BuildError::Write {
            path: path.to_owned(),
            source: e,
        }),
        _ => Ok(()),
    }
}

/// Points the publish directory at generation `number`: a new link beside it, renamed
/// over it, which is atomic. An empty directory in its place is removed first.
fn switch(layout: &Layout, number: u64) -> Result<(), BuildError> {
    let write = |path: &Path| {
        let path = path.to_owned();
        move |source| BuildError::Write { path, source }
    };
    // Made beside the publish directory, since its target is relative to that
    // directory's parent, and a rename is atomic only within one file system.
    let staged = layout.publish.with_file_name(format!(
        ".{}.link",
        layout
            .publish
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("publish")
    ));
    // A link a killed run left.
    let _ = fs::remove_file(&staged);
    symlink(&layout.target(number), &staged).map_err(write(&staged))?;
    if fs::symlink_metadata(&layout.publish).is_ok_and(|m| m.is_dir()) {
        // Checked empty by `Layout::current`.
        fs::remove_dir(&layout.publish).map_err(write(&layout.publish))?;
    }
    fs::rename(&staged, &layout.publish).map_err(|e| {
        let _ = fs::remove_file(&staged);
        BuildError::Write {
            path: layout.publish.clone(),
            source: e,
        }
    })?;
    // Durable once the directory holding the link is synced.
    if let Some(parent) = layout
        .publish
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
    {
        let _ = File::open(parent).and_then(|d| d.sync_all());
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(unix))]
fn symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "publishing switches generations by symbolic links, which need a Unix system",
    ))
}

/// Removes every generation but `keep` and the one before it, and leftovers of runs that
/// never switched.
fn remove_old_generations(layout: &Layout, keep: u64, before: Option<u64>) {
    let Ok(entries) = fs::read_dir(&layout.generations) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(n) = name.to_str().and_then(|n| n.parse::<u64>().ok()) else {
            continue;
        };
        if n != keep && Some(n) != before {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Writes generation `number` into `dir`: everything but the switch.
fn publish_generation(
    collection: &Path,
    dir: &Path,
    previous: Previous,
    number: u64,
    options: &Options,
    now: SystemTime,
    progress: &dyn Progress,
) -> Result<BuildReport, BuildError> {
    let write = |path: &Path| {
        let path = path.to_owned();
        move |source| BuildError::Write { path, source }
    };
    let Previous {
        dir: previous_dir,
        mut state,
        resources: known,
    } = previous;
    fs::create_dir_all(dir.join(DOCS)).map_err(write(dir))?;
    let directory = Directory::new(dir, options.base_url.clone())?;
    let uris = Uris::new(&directory);
    let mut skipped = Vec::new();
    // `at` is when the snapshot starts (section 7): the caller's clock read before the
    // walk. The clock may have gone back since the last run: never publish before it.
    let now = W3cDateTime::from(now);
    let now = match state.at {
        Some(last) if !last.precedes(&now) => last,
        _ => now,
    };
    let mut found = match &options.list {
        Some(list) => listed(collection, list)?,
        None => walk(collection, &directory, &mut skipped)?,
    };
    // In path order, as the state is, so that one pass pairs each file with what the last
    // run knew of it. The walk sorts what it found; a list is in the order it was written.
    if !found.is_sorted_by(|a, b| a.path < b.path) {
        found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    let mut previous = match known {
        None => LastRun::default(),
        Some(known) => known.resources()?,
    };
    let mut media_types = std::mem::take(&mut previous.media_types);

    // Each file paired with the last run's resource at its path, by its place among them
    // (which is its entry's in the Resource List the last run wrote), in one pass over
    // both: each in path order. `listed` marks what the last run listed and is still
    // here; the rest is gone.
    let mut listed = vec![false; previous.len()];
    let mut pairs = Vec::with_capacity(found.len());
    let mut j = 0;
    for f in &found {
        while j < previous.len() && previous.path(j) < f.path.as_str() {
            j += 1;
        }
        let paired = j < previous.len() && previous.path(j) == f.path;
        pairs.push(paired.then_some(j));
        if paired {
            listed[j] = true;
            j += 1;
        }
    }
    // What changed: a file of another size or modification time is read again.
    let todo: Vec<usize> = (0..found.len())
        .filter(|&i| {
            let f = &found[i];
            pairs[i].is_none_or(|j| {
                let r = &previous.resources[j];
                r.length != f.length || r.mtime != f.mtime
            })
        })
        .collect();
    progress.hashing(todo.len() as u64);
    let hashed = hash_files(collection, &found, &todo, progress)?;
    let hashed_bytes = hashed.iter().flat_map(|(_, d)| d).map(|d| d.length).sum();

    let first_run = state.at.is_none();
    let last_at = state.at.unwrap_or(now);

    let mut changes: Vec<ChangeAt> = Vec::new();
    let mut resources: Vec<Published> = Vec::with_capacity(found.len());
    let mut gone = Vec::new();
    let mut hashed = hashed.into_iter().peekable();
    let listed_before = previous.len();
    for (i, (f, paired)) in found.into_iter().zip(pairs).enumerate() {
        let old = paired.map(|j| (j, previous.resources[j]));
        let mut written = None;
        let resource = match hashed.next_if(|(j, _)| *j == i) {
            Some((_, None)) => {
                // Gone while the run read it: deleted, if the last run listed it.
                if let Some(j) = paired {
                    listed[j] = false;
                }
                skipped.push(Skipped {
                    path: PathBuf::from(&f.path),
                    reason: "deleted while the run read it",
                });
                continue;
            }
            Some((_, Some(digests))) => {
                let resource = Resource {
                    length: digests.length,
                    mtime: f.mtime,
                    md5: digests.md5.0,
                    sha256: digests.sha256.0,
                    media_type: media_types.of(match &f.file {
                        Some(file) => media_type(file),
                        None => media_type(Path::new(&f.path)),
                    }),
                };
                let change = match &old {
                    None => Some(Change::Created),
                    Some((_, old))
                        if old.md5 != resource.md5
                            || old.sha256 != resource.sha256
                            || old.length != resource.length =>
                    {
                        Some(Change::Updated)
                    }
                    // Touched, not changed: only the time is new.
                    Some(_) => None,
                };
                if let Some(change) = change.filter(|_| !first_run) {
                    // When it changed, as far as the file says, within this run's span.
                    let modified = W3cDateTime::from(f.modified);
                    let datetime = if last_at.precedes(&modified) && !now.precedes(&modified) {
                        modified
                    } else {
                        now
                    };
                    changes.push((datetime, f.path.clone(), Some((resources.len(), change))));
                }
                resource
            }
            // Same size and time: unchanged, and not read.
            None => {
                let (j, resource) = old.expect("a file not hashed is one the last run knew");
                written = Some(j);
                resource
            }
        };
        resources.push(Published {
            path: f.path,
            file: f.file,
            uri: f.uri,
            resource,
            written,
        });
    }
    gone.extend(
        (0..previous.len())
            .filter(|&j| !listed[j])
            .map(|j| previous.path(j).to_owned()),
    );
    drop(previous);
    let count = |kind| {
        changes
            .iter()
            .filter(|c| c.2.map(|c| c.1) == Some(kind))
            .count() as u64
    };
    let created = if first_run {
        resources.len() as u64
    } else {
        count(Change::Created)
    };
    let updated = count(Change::Updated);
    // What the last run listed and is gone now.
    let deleted = gone.len() as u64;
    changes.extend(gone.into_iter().map(|path| (now, path, None)));
    changes.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut change_entries = Vec::with_capacity(changes.len());
    for (datetime, path, change) in &changes {
        let entry = match change {
            Some((i, change)) => {
                let published = &resources[*i];
                resource_entry(&published.uri(&uris)?, &published.resource, &media_types)
                    .with_change(*change)
            }
            // A listed resource's key is its URI.
            None if options.list.is_some() => {
                Entry::new(path.parse().map_err(|e: resourcesync_model::UriError| {
                    BuildError::State {
                        path: dir.join(STATE),
                        reason: format!("{path} is no URI: {e}"),
                    }
                })?)
                .with_change(Change::Deleted)
            }
            None => {
                let uri = resource_uri(&directory, path).map_err(|reason| BuildError::State {
                    path: dir.join(STATE),
                    reason: format!("{path} makes no URI: {reason}"),
                })?;
                Entry::new(uri).with_change(Change::Deleted)
            }
        };
        change_entries.push(entry.with_datetime(*datetime));
    }
    let changed: Vec<Option<usize>> = changes.iter().map(|c| c.2.map(|c| c.0)).collect();

    let sd_uri = directory.uri(".well-known/resourcesync")?;
    let cl_uri = directory.uri(&format!("{DOCS}/capabilitylist.xml"))?;
    let up = Link::new(Relation::Up, cl_uri.clone());
    let mut documents = 0u64;

    // The Resource List, as one document or an index over parts.
    let rl_uri = directory.uri(&format!("{DOCS}/resourcelist.xml"))?;
    let previous_generation = previous_dir.as_ref().map(|_| state.generation);
    let bytes = resources.iter().map(|p| p.resource.length).sum();
    let resource_list = ResourceListRun {
        directory: &directory,
        uris: &uris,
        resources: &resources,
        media_types: &media_types,
        last: previous_dir.as_deref().zip(previous_generation),
        listed_before,
        generation: number,
    };
    documents += write_resource_list(&resource_list, rl_uri.clone(), now, &up, options)?;
    let mut capabilities = vec![(rl_uri, Capability::ResourceList)];

    // The Resource Dump: every resource again, packaged; or the one published before,
    // whose `at` the Change Lists cover from, so that a Destination baselines from it
    // and goes on from there. Packaging the whole collection again is on request.
    // Its packages are named after the generation that wrote them, as the Resource List's
    // parts are; those of the dump published last are carried over.
    if options.resource_dump {
        let published = previous_dir.as_ref().zip(state.resource_dump);
        if let Some((previous, g)) = published {
            let prefix = format!("resourcedump-g{g}-");
            let keep_document = !options.new_resource_dump;
            carry_over(&previous.join(DOCS), &dir.join(DOCS), |name| {
                name.starts_with(&prefix) || keep_document && name == "resourcedump.xml"
            })?;
        }
        if published.is_none() || options.new_resource_dump {
            resource_dump(
                collection,
                &directory,
                &resources,
                &media_types,
                now,
                &up,
                options,
                number,
            )?;
            state.resource_dump = Some(number);
            documents += 1;
        }
        capabilities.push((
            directory.uri(&format!("{DOCS}/resourcedump.xml"))?,
            Capability::ResourceDump,
        ));
    } else {
        state.resource_dump = None;
    }

    // The Change Lists and the Change Dump's packages are carried over from the last
    // generation unchanged; of the archive and the Change Dump's parts, which each run
    // writes again, the last generation's parts only, for readers of its index.
    if let Some(previous) = &previous_dir {
        let archive_parts = format!("changelist-archive-g{}-", state.generation);
        let dump_parts = format!("changedump-g{}-", state.generation);
        carry_over(&previous.join(DOCS), &dir.join(DOCS), |name| {
            name.starts_with("changelist-") && !name.starts_with("changelist-archive")
                || name.starts_with(&archive_parts)
                || name.starts_with("changedump-") && !name.starts_with("changedump-g")
                || name.starts_with(&dump_parts)
        })?;
    }
    documents += change_lists(
        &directory,
        &mut state,
        change_entries.clone(),
        last_at,
        now,
        &up,
        options,
    )?;
    capabilities.push((
        directory.uri(&format!("{DOCS}/changelist.xml"))?,
        Capability::ChangeList,
    ));
    if let Some((uri, written)) = change_list_archive(&directory, &state, number, &up, options)? {
        documents += written;
        capabilities.push((uri, Capability::ChangeListArchive));
    }

    // The Change Dump: this run's changes as packages, added to the earlier runs'.
    if options.change_dump {
        let (uri, written) = change_dump(
            collection,
            &directory,
            &mut state,
            &change_entries,
            &resources,
            &media_types,
            &changed,
            number,
            last_at,
            now,
            &up,
            options,
        )?;
        documents += written;
        capabilities.push((uri, Capability::ChangeDump));
    } else {
        // A Change Dump must hold every change of its interval: one that was off for a
        // run starts afresh when it is on again.
        state.change_dump_from = None;
        state.change_dump.clear();
    }

    // What the Source Description and Capability List are `describedby`: the page the
    // caller names, or one written here.
    let about = match &options.describedby {
        Some(about) => about.clone(),
        None => {
            let uri = directory.uri(&format!("{DOCS}/about.html"))?;
            let page = about_page(&options.base_url, &cl_uri, resources.len());
            directory.write(&uri, page.as_bytes())?;
            documents += 1;
            uri
        }
    };
    let described = Link::new(Relation::DescribedBy, about);

    // The Capability List, and the Source Description that points at it.
    let mut cl = Document::new(
        DocumentHead::of_kind(DocumentKind::CapabilityList)
            .with_link(described.clone())
            .with_link(Link::new(Relation::Up, sd_uri.clone())),
    );
    for (uri, capability) in capabilities {
        cl.entries.push(Entry::new(uri).with_capability(capability));
    }
    write_small(&directory, &cl_uri, &cl)?;
    let mut sd = Document::new(
        DocumentHead::of_kind(DocumentKind::SourceDescription).with_link(described.clone()),
    );
    sd.entries.push(
        Entry::new(cl_uri.clone())
            .with_capability(Capability::CapabilityList)
            .with_link(described),
    );
    write_small(&directory, &sd_uri, &sd)?;
    documents += 2;

    // The resources, served from the collection through one link per top-level entry.
    if options.list.is_none() {
        link_collection(collection, dir, &resources, &skipped)?;
    }

    state.version = STATE_VERSION;
    state.base_url = options.base_url.to_string();
    state.generation = number;
    state.at = Some(now);
    let state_path = dir.join(STATE);
    if let Some(parent) = state_path.parent() {
        fs::create_dir_all(parent).map_err(write(parent))?;
    }
    let json = serde_json::to_vec(&state).map_err(|e| BuildError::State {
        path: state_path.clone(),
        reason: e.to_string(),
    })?;
    let resources_path = dir.join(RESOURCES);
    let records = resources_file(&resources, &media_types).map_err(|reason| BuildError::State {
        path: resources_path.clone(),
        reason,
    })?;
    // Durable before the switch: a publication whose state is lost cannot be built on.
    for (path, bytes) in [(&state_path, &json), (&resources_path, &records)] {
        File::create(path)
            .and_then(|mut file| {
                io::Write::write_all(&mut file, bytes)?;
                file.sync_all()
            })
            .map_err(write(path))?;
    }
    for written in [
        dir.join(".resourcesync"),
        dir.join(DOCS),
        dir.join(".well-known"),
        dir.to_owned(),
    ] {
        File::open(&written)
            .and_then(|d| d.sync_all())
            .map_err(write(&written))?;
    }

    Ok(BuildReport {
        generation: number,
        at: now,
        resources: resources.len() as u64,
        bytes,
        created,
        updated,
        deleted,
        hashed_files: todo.len() as u64,
        hashed_bytes,
        skipped,
        source_description: sd_uri,
        capability_list: cl_uri,
        documents,
        directory: dir.to_owned(),
    })
}

impl Resource {
    /// The `hash` value: md5 and sha-256.
    fn hashes(&self) -> Hashes {
        Hashes::md5_sha256(self.md5, self.sha256)
    }

    /// The modification time, as `lastmod`.
    fn lastmod(&self) -> W3cDateTime {
        let (secs, nanos) = self.mtime;
        let time = if secs >= 0 {
            SystemTime::UNIX_EPOCH + Duration::new(secs.unsigned_abs(), nanos)
        } else {
            SystemTime::UNIX_EPOCH - Duration::from_secs(secs.unsigned_abs())
                + Duration::from_nanos(u64::from(nanos))
        };
        W3cDateTime::from(time)
    }
}

/// A modification time as seconds and nanoseconds since the epoch (the nanoseconds
/// counting forward, also before it).
fn epoch_time(time: SystemTime) -> (i64, u32) {
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

/// The media type of a file, guessed from its name.
fn media_type(path: &Path) -> &'static str {
    // What web servers serve a name they do not know as.
    mime_guess::from_path(path)
        .first_raw()
        .unwrap_or("application/octet-stream")
}

/// The URI of the resource at `path` (relative, `/`-separated): its segments
/// percent-encoded under the base.
fn resource_uri(directory: &Directory, path: &str) -> Result<Uri, String> {
    let mut url = url::Url::parse(directory.base().as_str()).map_err(|e| e.to_string())?;
    url.path_segments_mut()
        .map_err(|()| "the base URL cannot have a path".to_string())?
        .pop_if_empty()
        .extend(path.split('/'));
    url.as_str()
        .parse()
        .map_err(|e: resourcesync_model::UriError| e.to_string())
}

/// The URIs of the collection's files under the base.
struct Uris<'a> {
    directory: &'a Directory,
    /// What [`resource_uri`] makes of a plain name is this prefix (the base as `url` writes
    /// it, ending in `/`) followed by the name as it stands.
    prefix: Option<String>,
}

impl Uris<'_> {
    fn new(directory: &Directory) -> Uris<'_> {
        let prefix = resource_uri(directory, "a")
            .ok()
            .and_then(|uri| uri.as_str().strip_suffix('a').map(str::to_owned))
            .filter(|prefix| prefix.ends_with('/'));
        Uris { directory, prefix }
    }

    /// The URI of the file at `path` (`relative` as the walk found it), or why it has none
    /// a web server would serve.
    ///
    /// A plain name is the prefix and the name, with nothing to encode or check: the same
    /// URI [`resource_uri`] makes, which `Directory::path` maps back to the same file. Any
    /// other name goes the long way, through `url` and back.
    fn of(&self, path: &str, relative: &Path) -> Result<Uri, &'static str> {
        if self.is_plain(path) {
            return self
                .of_found(None, path)
                .map_err(|_| "a name that makes no URI");
        }
        let uri = resource_uri(self.directory, path)
            .map_err(|_| "a name that makes no URI under the base")?;
        // The URI must name this file again where a web server looks it up.
        if self.directory.path(&uri).ok().as_deref() != Some(&self.directory.root().join(relative))
        {
            return Err("a name a web server would not serve as written");
        }
        Ok(uri)
    }

    /// Whether the file at `path` has a plain name, whose URI is the prefix and the path.
    fn is_plain(&self, path: &str) -> bool {
        self.prefix.is_some() && plain(path)
    }

    /// The URI of a resource found: the one the walk or the list made (`uri`), or else
    /// its plain name's, made now.
    fn of_found(&self, uri: Option<&Uri>, path: &str) -> Result<Uri, BuildError> {
        if let Some(uri) = uri {
            return Ok(uri.clone());
        }
        let made = match &self.prefix {
            Some(prefix) => Uri::parse(&[prefix, path].concat()).map_err(|e| e.to_string()),
            None => Err("no plain name without a prefix".to_owned()),
        };
        made.map_err(|reason| BuildError::Read {
            path: PathBuf::from(path),
            source: io::Error::new(io::ErrorKind::InvalidData, reason),
        })
    }

    /// Whether an entry written before is that of the resource at `path` (`uri` as in
    /// [`of_found`](Uris::of_found)): its `<loc>` is the URI as written. One with a
    /// character escaped in XML text is made again instead.
    fn names(&self, entry: &[u8], uri: Option<&Uri>, path: &str) -> bool {
        let (head, tail) = match (uri, &self.prefix) {
            (Some(uri), _) => (uri.as_str(), ""),
            (None, Some(prefix)) => (prefix.as_str(), path),
            (None, None) => return false,
        };
        let plain = |s: &str| !s.bytes().any(|b| matches!(b, b'&' | b'<' | b'>'));
        plain(head)
            && plain(tail)
            && entry
                .strip_prefix(b"<url><loc>")
                .and_then(|rest| rest.strip_prefix(head.as_bytes()))
                .and_then(|rest| rest.strip_prefix(tail.as_bytes()))
                .is_some_and(|rest| rest.starts_with(b"</loc>"))
    }
}

/// Whether every segment of a `/`-separated path is unreserved characters only (RFC 3986:
/// ASCII letters and digits, `-._~`), which no URI encodes, and none is empty, `.`, `..` or
/// longer than a file's name may be.
fn plain(path: &str) -> bool {
    // Bytes, not `split('/')`: this runs for every file of every walk.
    let unreserved = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~');
    path.as_bytes().split(|&b| b == b'/').all(|segment| {
        !segment.is_empty()
            && segment != b"."
            && segment != b".."
            && segment.len() <= resourcesync_xml::MAX_SEGMENT_LEN
            && segment.iter().all(|&b| unreserved(b))
    })
}

/// The Resource List entry of a resource.
fn resource_entry(uri: &Uri, resource: &Resource, media_types: &MediaTypes) -> Entry {
    let mut entry = Entry::new(uri.clone())
        .with_lastmod(resource.lastmod())
        .with_length(resource.length)
        .with_hash(resource.hashes());
    if let Some(media_type) = media_types.get(resource.media_type) {
        entry = entry.with_media_type(media_type.clone());
    }
    entry
}

/// What the walk learns of one file, on the walk's threads.
enum Probe {
    /// A file to publish.
    File(Found),
    /// Not published, and why.
    Skipped(&'static str),
    /// Deleted since its directory was read: as if it had not been there.
    Gone,
}

/// What the walk's threads found, gathered a directory at a time.
#[derive(Default)]
struct Walked {
    /// The files of each directory that has any, in path order.
    found: Vec<Vec<Found>>,
    skipped: Vec<Skipped>,
    error: Option<BuildError>,
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
fn walk(
    collection: &Path,
    directory: &Directory,
    skipped: &mut Vec<Skipped>,
) -> Result<Vec<Found>, BuildError> {
    let uris = Uris::new(directory);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| BuildError::Read {
            path: collection.to_owned(),
            source: io::Error::other(e),
        })?;
    let walked = std::sync::Mutex::new(Walked::default());
    let top = Within {
        path: PathBuf::new(),
        text: Some(String::new()),
        depth: 1,
    };
    pool.scope(|scope| walk_directory(scope, &walked, &uris, collection, top));
    let walked = walked.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(error) = walked.error {
        return Err(error);
    }
    skipped.extend(walked.skipped);
    skipped.sort_by(|a, b| a.path.cmp(&b.path));
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
        pool.install(|| {
            rayon::slice::ParallelSliceMut::par_sort_by(found.as_mut_slice(), |a, b| {
                a.path.cmp(&b.path)
            });
        });
    }
    Ok(found)
}

/// A directory of the collection to walk.
struct Within {
    /// Its path in the collection.
    path: PathBuf,
    /// The same as text, `/`-separated, ending in `/` (empty at the top); `None` when not
    /// UTF-8, and no file in it is published.
    text: Option<String>,
    /// Of its entries: 1 at the top.
    depth: usize,
}

/// Reads the directory `within` of the collection into `walked`, its files sorted by
/// name and its subdirectories as tasks of their own.
fn walk_directory<'s>(
    scope: &rayon::Scope<'s>,
    walked: &'s std::sync::Mutex<Walked>,
    uris: &'s Uris<'s>,
    collection: &'s Path,
    within: Within,
) {
    // After an error the run fails: the directories not read yet are not.
    if walked.lock().map_or(true, |w| w.error.is_some()) {
        return;
    }
    let dir = collection.join(&within.path);
    let mut skipped = Vec::new();
    let mut files = Vec::new();
    let result = (|| -> Result<(), BuildError> {
        let read = |source| BuildError::Read {
            path: dir.clone(),
            source,
        };
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            // Removed since its parent was read: as if it had not been there.
            Err(e) if e.kind() == io::ErrorKind::NotFound && within.depth > 1 => return Ok(()),
            Err(e) => return Err(read(e)),
        };
        for entry in entries {
            let entry = entry.map_err(read)?;
            let name = entry.file_name();
            let file_type = entry.file_type().map_err(|source| BuildError::Read {
                path: entry.path(),
                source,
            })?;
            // Hidden names are not served, and the publication's own top-level names
            // would hide the collection's: neither is published nor, a directory,
            // walked into.
            if let Some(reason) = unpublished_name(&name.to_string_lossy(), within.depth) {
                skipped.push(Skipped {
                    path: within.path.join(&name),
                    reason,
                });
                continue;
            }
            if file_type.is_dir() {
                let text = within
                    .text
                    .as_ref()
                    .zip(name.to_str())
                    .map(|(text, name)| [text, name, "/"].concat());
                let sub = Within {
                    path: within.path.join(&name),
                    text,
                    depth: within.depth + 1,
                };
                scope.spawn(move |scope| walk_directory(scope, walked, uris, collection, sub));
                continue;
            }
            match probe(&entry, &within, &name, file_type, uris) {
                Ok(Probe::File(file)) => files.push(file),
                Ok(Probe::Skipped(reason)) => skipped.push(Skipped {
                    path: within.path.join(&name),
                    reason,
                }),
                Ok(Probe::Gone) => {}
                Err(source) => {
                    return Err(BuildError::Read {
                        path: entry.path(),
                        source,
                    });
                }
            }
        }
        Ok(())
    })();
    files.sort_unstable_by(|a, b| a.path.cmp(&b.path));
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
        }
    }
}

/// What the entry `name` of the directory `within`, not a directory itself, is to the
/// publication; its URI is made here only when its name is not plain (see [`Uris`]).
fn probe(
    entry: &fs::DirEntry,
    within: &Within,
    name: &std::ffi::OsStr,
    file_type: fs::FileType,
    uris: &Uris<'_>,
) -> io::Result<Probe> {
    if file_type.is_symlink() {
        return Ok(Probe::Skipped(
            "a symbolic link: only the collection's own files are published",
        ));
    }
    if !file_type.is_file() {
        return Ok(Probe::Skipped("not a regular file"));
    }
    let (Some(text), Some(name)) = (&within.text, name.to_str()) else {
        return Ok(Probe::Skipped("a name that is not UTF-8 makes no URI"));
    };
    let path = [text, name].concat();
    let meta = match entry.metadata() {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Probe::Gone),
        Err(e) => return Err(e),
    };
    let modified = meta.modified()?;
    let mtime = epoch_time(modified);
    // A W3C Datetime has a four-digit year.
    if !W3C_YEARS.contains(&mtime.0) {
        return Ok(Probe::Skipped(
            "a modification time outside the years 0000 to 9999",
        ));
    }
    let uri = if uris.is_plain(&path) {
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
        length: meta.len(),
        mtime,
        modified,
    }))
}

/// Why an entry named `name` at `depth` (1 at the top) is not published, if it is not.
fn unpublished_name(name: &str, depth: usize) -> Option<&'static str> {
    let top = depth == 1;
    if top && (name == DOCS || name == ".well-known") {
        Some("a name the publication uses for its own documents")
    } else if name.starts_with('.') {
        Some("a hidden name is not published")
    } else {
        None
    }
}

/// Reads and hashes the files `todo` names (indexes into `found`), on as many threads as
/// the machine has cores, and returns their digests in `todo`'s order (`None` for a
/// file deleted since the walk).
fn hash_files(
    root: &Path,
    found: &[Found],
    todo: &[usize],
    progress: &dyn Progress,
) -> Result<Vec<(usize, Option<resourcesync_model::Digests>)>, BuildError> {
    let next = AtomicUsize::new(0);
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(todo.len())
        .max(1);
    let work = || -> Result<Vec<_>, BuildError> {
        let mut buffer = vec![0; 256 * 1024];
        let mut digests = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = todo.get(k) else {
                return Ok(digests);
            };
            let path = found[i]
                .file
                .clone()
                .unwrap_or_else(|| root.join(&found[i].path));
            match hash_file(&path, &mut buffer) {
                Ok(d) => digests.push((i, Some(d))),
                // Deleted since the walk found it: as if the walk had not.
                Err(e) if e.kind() == io::ErrorKind::NotFound => digests.push((i, None)),
                Err(source) => {
                    // The others stop at their next file.
                    next.store(todo.len(), Ordering::Relaxed);
                    return Err(BuildError::Read { path, source });
                }
            }
            progress.hashed();
        }
    };
    let mut all = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers).map(|_| scope.spawn(work)).collect();
        let mut all = Vec::with_capacity(todo.len());
        for handle in handles {
            match handle.join() {
                Ok(digests) => all.extend(digests?),
                Err(_) => {
                    return Err(BuildError::Read {
                        path: root.to_owned(),
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

/// Length, md5 and sha-256 of a file, in one pass.
fn hash_file(path: &Path, buffer: &mut [u8]) -> io::Result<resourcesync_model::Digests> {
    let mut file = File::open(path)?;
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

/// Writes a small document whole, refusing what breaks a rule, atomically.
fn write_small(directory: &Directory, uri: &Uri, document: &Document) -> Result<(), BuildError> {
    let options = WriteOptions::default().with_refuse_errors(true);
    let written = write_document_with(Vec::new(), document, options).map_err(|source| {
        BuildError::Document {
            document: uri.to_string(),
            source,
        }
    })?;
    directory.write(uri, &written.output)?;
    Ok(())
}

/// Hard-links (or copies, across file systems) the files of `from` that `keep` names into
/// `to`: documents and packages of earlier runs that do not change.
fn carry_over(from: &Path, to: &Path, keep: impl Fn(&str) -> bool) -> Result<(), BuildError> {
    let entries = match fs::read_dir(from) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(BuildError::Read {
                path: from.to_owned(),
                source,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(|source| BuildError::Read {
            path: from.to_owned(),
            source,
        })?;
        let name = entry.file_name();
        if !name.to_str().is_some_and(&keep) {
            continue;
        }
        let target = to.join(&name);
        if fs::hard_link(entry.path(), &target).is_err() {
            fs::copy(entry.path(), &target).map_err(|source| BuildError::Write {
                path: target.clone(),
                source,
            })?;
        }
    }
    Ok(())
}

/// Links the collection's published files into the generation, so that a web server
/// serves them where the documents say: a whole directory by one link when nothing under
/// it was skipped (usually one link per top-level entry, whatever the collection's size),
/// else a real directory whose entries are linked in the same way, so that nothing skipped
/// (a hidden file, a symbolic link, …) is served through a link to its directory.
fn link_collection(
    collection: &Path,
    dir: &Path,
    resources: &[Published],
    skipped: &[Skipped],
) -> Result<(), BuildError> {
    // In path order, each once.
    let files: Vec<&str> = resources.iter().map(|p| p.path.as_str()).collect();
    // The directories holding something skipped, and theirs up to the top.
    let mut split = HashSet::new();
    for skipped in skipped {
        let mut ancestor = skipped.path.parent();
        while let Some(a) = ancestor.filter(|a| !a.as_os_str().is_empty()) {
            split.insert(a.to_string_lossy().replace(std::path::MAIN_SEPARATOR, "/"));
            ancestor = a.parent();
        }
    }
    link_level(collection, dir, "", &files, &split)
}

/// Links the entries of the directory `prefix` (`""` for the top) that hold published
/// files; see [`link_collection`].
fn link_level(
    collection: &Path,
    dir: &Path,
    prefix: &str,
    files: &[&str],
    split: &HashSet<String>,
) -> Result<(), BuildError> {
    let start = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    // The files under `prefix` sort together, after `start`; so do those under each
    // child (or the child itself, a file), which are passed over at once.
    let mut files = &files[files.partition_point(|file| *file < start.as_str())..];
    while let Some(rest) = files
        .first()
        .and_then(|file| file.strip_prefix(start.as_str()))
    {
        let child = rest.split('/').next().unwrap_or(rest);
        let relative = format!("{start}{child}");
        let under = format!("{relative}/");
        let (its, others) =
            files.split_at(files.partition_point(|f| *f == relative || f.starts_with(&under)));
        files = others;
        let target = dir.join(&relative);
        let made = if split.contains(&relative) {
            fs::create_dir(&target)
        } else {
            symlink(&collection.join(&relative), &target)
        };
        made.map_err(|source| BuildError::Write {
            path: target.clone(),
            source,
        })?;
        if split.contains(&relative) {
            link_level(collection, dir, &relative, its, split)?;
        }
    }
    Ok(())
}

/// A Change List's estimated size of one entry, for the byte limit: its URI as written
/// at worst (every character escaped, `&` as `&amp;`) and the longest its metadata can be.
fn estimated_bytes(entry: &Entry) -> u64 {
    entry.loc.as_str().len() as u64 * 5 + 400
}

/// Adds this run's changes to the open Change List, closing it (and opening the next)
/// where the limits or the period say, and writes every Change List that changed and the
/// Change List Index. Returns the number of documents written.
fn change_lists(
    directory: &Directory,
    state: &mut State,
    changes: Vec<Entry>,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
) -> Result<u64, BuildError> {
    if state.change_lists.is_empty() {
        // The first run: the changes are published from now on.
        state.change_lists.push(ChangeListRecord {
            number: 1,
            from: now,
            until: None,
        });
        state.open = OpenList::default();
    }
    let index_uri = directory.uri(&format!("{DOCS}/changelist.xml"))?;
    let head = |record: &ChangeListRecord| {
        let mut head = DocumentHead::of_kind(DocumentKind::ChangeList)
            .with_from(record.from)
            .with_link(up.clone())
            .with_link(Link::new(Relation::Index, index_uri.clone()));
        if let Some(until) = record.until {
            head = head.with_until(until);
        }
        head
    };
    // Whether the period closes the open list, where the last run left it (so that the
    // intervals stay contiguous).
    let period_closes = options.changelist_period.is_some_and(|period| {
        let from = state.change_lists.last().expect("an open Change List").from;
        let age = (now.to_utc() - from.to_utc()).to_std().unwrap_or_default();
        age >= period && from.precedes(&last_at)
    });
    // The open list's entries as the last run wrote them, in its document (carried over
    // into this generation), then this run's; read only when the list is written again.
    let open = state.change_lists.last().expect("an open Change List");
    let carried = if state.open.entries > 0 && (period_closes || !changes.is_empty()) {
        let path = directory.path(&change_list_uri(directory, open.number)?)?;
        let document = fs::read(&path).map_err(|e| BuildError::State {
            path: path.clone(),
            reason: format!("{e}; {LOST_OPEN_LIST}"),
        })?;
        Some((path, document))
    } else {
        None
    };
    let mut entries: Vec<Listed<'_>> = match &carried {
        None => Vec::new(),
        Some((path, document)) => {
            let damaged = |reason: String| BuildError::State {
                path: path.clone(),
                reason: format!("{reason}; {LOST_OPEN_LIST}"),
            };
            let written = written_entries(document)
                .ok_or_else(|| damaged("not a Change List this command wrote".into()))?;
            if written.len() != state.open.entries {
                return Err(damaged(format!(
                    "{} entries where the state says {}",
                    written.len(),
                    state.open.entries
                )));
            }
            written.into_iter().map(Listed::Written).collect()
        }
    };
    let mut added = false;
    let mut closed = Vec::new();
    if period_closes {
        close_open_list(state, &mut entries, &mut closed, last_at);
    }
    for entry in changes {
        let size = estimated_bytes(&entry);
        let open = &state.open;
        if open.entries > 0
            && (open.entries >= options.max_entries || open.bytes + size + 2048 > options.max_bytes)
        {
            let until = open.last.unwrap_or(last_at);
            close_open_list(state, &mut entries, &mut closed, until);
        }
        state.open.entries += 1;
        state.open.bytes += size;
        state.open.last = entry.datetime().or(state.open.last);
        entries.push(Listed::New(Box::new(entry)));
        added = true;
    }
    let open = state
        .change_lists
        .last()
        .expect("an open Change List")
        .clone();
    let open_uri = change_list_uri(directory, open.number)?;
    // An open list this run neither added to nor closed is the one carried over.
    let unchanged = closed.is_empty() && !added && directory.path(&open_uri)?.exists();
    let mut written = 0;
    let open = [(open, entries)];
    let lists = closed.iter().chain(open.iter());
    for (record, entries) in lists.take(closed.len() + usize::from(!unchanged)) {
        let uri = change_list_uri(directory, record.number)?;
        write_list(directory, &uri, &head(record), entries, options)?;
        written += 1;
    }
    // A full index: its oldest lists move to the archive (they stay published).
    let over = state.change_lists.len().saturating_sub(options.max_entries);
    state.archived.extend(state.change_lists.drain(..over));
    let first = state.change_lists.first().expect("a Change List").from;
    let mut index = Document::new(
        DocumentHead::of_kind(DocumentKind::ChangeListIndex)
            .with_from(first)
            .with_link(up.clone()),
    );
    for record in &state.change_lists {
        let mut entry =
            Entry::new(change_list_uri(directory, record.number)?).with_from(record.from);
        if let Some(until) = record.until {
            entry = entry.with_until(until);
        }
        index.entries.push(entry);
    }
    write_small(directory, &index_uri, &index)?;
    Ok(written + 1)
}

/// What [`write_resource_list`] writes from: the run's resources, and the last run's
/// Resource List (the generation's directory and number) to copy unchanged entries from.
struct ResourceListRun<'a> {
    directory: &'a Directory,
    uris: &'a Uris<'a>,
    resources: &'a [Published],
    media_types: &'a MediaTypes,
    last: Option<(&'a Path, u64)>,
    /// How many resources the last run listed.
    listed_before: usize,
    /// This run's generation, which names the parts.
    generation: u64,
}

/// Writes the Resource List at `uri`, as one document or an index over parts, and
/// returns how many documents that took.
fn write_resource_list(
    run: &ResourceListRun<'_>,
    uri: Uri,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
) -> Result<u64, BuildError> {
    let ResourceListRun {
        directory,
        uris,
        resources,
        media_types,
        last,
        listed_before,
        generation,
    } = *run;
    let head = DocumentHead::of_kind(DocumentKind::ResourceList)
        .with_at(now)
        .with_link(up.clone());
    let name = uri.to_string();
    let document_error = |source| BuildError::Document {
        document: name.clone(),
        source,
    };
    let set_options = SetOptions::default().with_limits(SetLimits::new(
        options.max_entries as u64,
        options.max_bytes,
    ));
    // Parts are named after the generation: a reader that read the index before a switch
    // reads that index's parts after it, never another generation's parts under the same
    // names. The last generation's parts are carried over for such readers.
    let docs = directory.root().join(DOCS);
    if let Some((previous, g)) = last {
        let prefix = format!("resourcelist-g{g}-");
        carry_over(&previous.join(DOCS), &docs, |name| {
            name.starts_with(&prefix)
        })?;
    }
    let store = GenerationParts {
        directory,
        stem: format!("{DOCS}/resourcelist-g{generation}"),
    };
    let mut rl = SetWriter::with_store(head, uri, store, set_options).map_err(document_error)?;
    // An unchanged resource's entry is the same bytes as last time: copied from the
    // Resource List the last run wrote, not made and checked again.
    let last_list = last
        .map(|(previous, g)| last_resource_list(&previous.join(DOCS), g))
        .unwrap_or_default();
    let before = entries_before(&last_list, listed_before);
    for published in resources {
        let before = published
            .written
            .zip(before.as_ref())
            .map(|(j, before)| before[j])
            .filter(|entry| uris.names(entry, published.uri.as_ref(), &published.path));
        match before {
            Some(entry) => rl.write_written(entry, None),
            None => rl.write_entry(&resource_entry(
                &published.uri(uris)?,
                &published.resource,
                media_types,
            )),
        }
        .map_err(document_error)?;
    }
    let written = rl.finish().map_err(document_error)?;
    Ok(written.output.documents.len() as u64)
}

/// The documents of the Resource List generation `generation` wrote into `docs`: its
/// parts in order, or the one document; none when they cannot be read.
fn last_resource_list(docs: &Path, generation: u64) -> Vec<Vec<u8>> {
    let prefix = format!("resourcelist-g{generation}-");
    let Ok(names) = fs::read_dir(docs) else {
        return Vec::new();
    };
    let mut parts: Vec<(u64, PathBuf)> = names
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name();
            let number = name.to_str()?.strip_prefix(&prefix)?.strip_suffix(".xml")?;
            Some((number.parse().ok()?, entry.path()))
        })
        .collect();
    parts.sort();
    if parts.is_empty() {
        parts.push((0, docs.join("resourcelist.xml")));
    }
    parts
        .into_iter()
        .map(|(_, part)| fs::read(part))
        .collect::<io::Result<_>>()
        .unwrap_or_default()
}

/// The entries of `documents` as they were written, if there are `count`, one per
/// resource the last run listed; else `None`, and every entry is made again.
fn entries_before(documents: &[Vec<u8>], count: usize) -> Option<Vec<&[u8]>> {
    let mut entries = Vec::with_capacity(count);
    for document in documents {
        entries.extend(written_entries(document)?);
    }
    (entries.len() == count).then_some(entries)
}

/// Closes the open Change List at `until`, with `entries`, into `closed`, and opens the
/// next one from there.
fn close_open_list<'a>(
    state: &mut State,
    entries: &mut Vec<Listed<'a>>,
    closed: &mut Vec<(ChangeListRecord, Vec<Listed<'a>>)>,
    until: W3cDateTime,
) {
    let open = state.change_lists.last_mut().expect("an open Change List");
    open.until = Some(until);
    let record = open.clone();
    closed.push((record.clone(), std::mem::take(entries)));
    state.change_lists.push(ChangeListRecord {
        number: record.number + 1,
        from: until,
        until: None,
    });
    state.open = OpenList::default();
}

/// An entry of a Change List being written: as the last run wrote it (the open list's,
/// carried over), or one of this run's changes.
enum Listed<'a> {
    Written(&'a [u8]),
    /// Boxed: the entries carried over, as many as a list holds, are a slice each.
    New(Box<Entry>),
}

/// Writes the Change List of `head` and `entries` whole, atomically. This run's entries
/// are checked against the head and refused if they break a rule; those written before
/// were checked then, against the head of the same list (whose `until` is only ever set
/// at or after them). The limits, which their sum can break, are checked here.
fn write_list(
    directory: &Directory,
    uri: &Uri,
    head: &DocumentHead,
    entries: &[Listed<'_>],
    options: &Options,
) -> Result<(), BuildError> {
    let refused = |source| BuildError::Document {
        document: uri.to_string(),
        source,
    };
    let refuse = WriteOptions::default().with_refuse_errors(true);
    // Room for it all at once: an open list carried over is megabytes, and a buffer grown
    // by doubling copies them again at each step.
    let size = entries
        .iter()
        .map(|entry| match entry {
            Listed::Written(bytes) => bytes.len(),
            Listed::New(entry) => estimated_bytes(entry) as usize,
        })
        .sum::<usize>();
    let buffer = Vec::with_capacity(size + 4096);
    let mut writer = Writer::with_options(buffer, head, refuse).map_err(refused)?;
    for entry in entries {
        match entry {
            Listed::Written(bytes) => writer.write_written(bytes),
            Listed::New(entry) => writer.write_entry(entry),
        }
        .map_err(refused)?;
    }
    // The limits bind what this run adds. A list of carried entries only is one an
    // earlier run wrote within its limits, closed now (its head gains an `until`, for
    // which closing leaves room): a lower limit since must not refuse it, or every later
    // run with changes would fail on it.
    let adds = entries.iter().any(|entry| matches!(entry, Listed::New(_)));
    if adds && writer.entries_written() > options.max_entries as u64 {
        return Err(refused(WriteError::Limit {
            what: "entries",
            limit: options.max_entries as u64,
        }));
    }
    let document = writer.finish().map_err(refused)?.output;
    if adds && document.len() as u64 > options.max_bytes {
        return Err(refused(WriteError::Limit {
            what: "bytes",
            limit: options.max_bytes,
        }));
    }
    directory.write(uri, &document)?;
    Ok(())
}

/// Writes the Change List Archive over the lists the index no longer holds, if there are
/// any, as one document or an archive index over parts named after the generation; returns
/// its URI and how many documents it took.
fn change_list_archive(
    directory: &Directory,
    state: &State,
    generation: u64,
    up: &Link,
    options: &Options,
) -> Result<Option<(Uri, u64)>, BuildError> {
    if state.archived.is_empty() {
        return Ok(None);
    }
    let uri = directory.uri(&format!("{DOCS}/changelist-archive.xml"))?;
    let document_error = |source| BuildError::Document {
        document: uri.to_string(),
        source,
    };
    let head = DocumentHead::of_kind(DocumentKind::ChangeListArchive).with_link(up.clone());
    let store = GenerationParts {
        directory,
        stem: format!("{DOCS}/changelist-archive-g{generation}"),
    };
    let limits = SetLimits::new(options.max_entries as u64, options.max_bytes);
    let set_options = SetOptions::default().with_limits(limits);
    let mut archive =
        SetWriter::with_store(head, uri.clone(), store, set_options).map_err(document_error)?;
    for record in &state.archived {
        let mut md = Md::new().with_from(record.from);
        if let Some(until) = record.until {
            md = md.with_until(until);
        }
        let entry = Entry::new(change_list_uri(directory, record.number)?).with_md(md);
        archive.write_entry(&entry).map_err(document_error)?;
    }
    let written = archive.finish().map_err(document_error)?;
    Ok(Some((uri, written.output.documents.len() as u64)))
}

fn change_list_uri(directory: &Directory, number: u32) -> Result<Uri, BuildError> {
    Ok(directory.uri(&format!("{DOCS}/changelist-{number:05}.xml"))?)
}

/// A resource this run publishes.
struct Published {
    /// Its key: its path in the collection, or with a list, its URI.
    path: String,
    /// With a list: its file.
    file: Option<PathBuf>,
    /// As [`Found::uri`].
    uri: Option<Uri>,
    resource: Resource,
    /// Unchanged since the last run, which listed it at this place: its Resource List
    /// entry is the bytes written then.
    written: Option<usize>,
}

impl Published {
    /// Its URI (see [`Uris::of_found`]).
    fn uri(&self, uris: &Uris<'_>) -> Result<Uri, BuildError> {
        uris.of_found(self.uri.as_ref(), &self.path)
    }

    /// Its file: under the collection by its path, or where the list says.
    fn file(&self, collection: &Path) -> PathBuf {
        match &self.file {
            Some(file) => file.clone(),
            None => collection.join(&self.path),
        }
    }
}

/// The resources a list of URI and file pairs names, each file with its size and time.
fn listed(collection: &Path, list: &Path) -> Result<Vec<Found>, BuildError> {
    let read = |source| BuildError::Read {
        path: list.to_owned(),
        source,
    };
    let text = fs::read_to_string(list).map_err(read)?;
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
        let file = collection.join(file.trim());
        let meta = fs::metadata(&file).map_err(|e| wrong(format!("{}: {e}", file.display())))?;
        if !meta.is_file() {
            return Err(wrong(format!("{} is not a file", file.display())));
        }
        let modified = meta
            .modified()
            .map_err(|e| wrong(format!("{}: {e}", file.display())))?;
        if !W3C_YEARS.contains(&epoch_time(modified).0) {
            return Err(wrong(format!(
                "{}: a modification time outside the years 0000 to 9999",
                file.display()
            )));
        }
        found.push(Found {
            path: uri.as_str().to_owned(),
            file: Some(file),
            uri: Some(uri),
            length: meta.len(),
            mtime: epoch_time(modified),
            modified,
        });
    }
    Ok(found)
}

/// Writes the Resource Dump: every resource, read again into packages. Returns its URI.
#[allow(clippy::too_many_arguments)]
fn resource_dump(
    collection: &Path,
    directory: &Directory,
    resources: &[Published],
    media_types: &MediaTypes,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
    generation: u64,
) -> Result<(), BuildError> {
    let name = format!("{DOCS}/resourcedump-g{generation}");
    let uris = Uris::new(directory);
    let package_error = |source| BuildError::Package {
        document: format!("{name}.xml"),
        source,
    };
    let head = DocumentHead::of_kind(DocumentKind::ResourceDump)
        .with_at(now)
        .with_link(up.clone());
    let limits = DumpLimits::new(options.max_package_bytes, options.max_entries);
    let mut dump =
        DumpBuilder::in_directory(head, directory, &name, limits, PackageOptions::default())
            .map_err(package_error)?;
    for published in resources {
        let file = published.file(collection);
        let content =
            File::open(&file).map_err(|source| BuildError::Read { path: file, source })?;
        dump.add_sized(
            bitstream(
                &published.uri(&uris)?,
                &published.path,
                &published.resource,
                media_types,
            ),
            content,
            Some(published.resource.length),
        )
        .map_err(package_error)?;
    }
    let info = dump.finish().map_err(package_error)?;
    let (_, file) = info.written.ok_or_else(|| {
        package_error(PackageError::Io(io::Error::other(
            "the dump document was not written",
        )))
    })?;
    // Published under the one name the Capability List gives.
    let published = file.with_file_name("resourcedump.xml");
    fs::rename(&file, &published).map_err(|source| BuildError::Write {
        path: published,
        source,
    })
}

/// Where a Resource List's parts go: files of the generation named after it,
/// `<stem>-00001.xml`, … .
struct GenerationParts<'a> {
    directory: &'a Directory,
    stem: String,
}

impl SetStore for GenerationParts<'_> {
    fn part_uri(&mut self, number: usize) -> Result<Uri, WriteError> {
        Ok(self
            .directory
            .uri(&format!("{}-{number:05}.xml", self.stem))?)
    }

    fn store(&mut self, uri: &Uri, document: &[u8]) -> Result<(), WriteError> {
        self.directory.write(uri, document)?;
        Ok(())
    }

    fn store_pieces(&mut self, uri: &Uri, pieces: &[&[u8]]) -> Result<(), WriteError> {
        self.directory.write_pieces(uri, pieces)?;
        Ok(())
    }
}

/// A resource as a bitstream of a package, at its path in the collection; a name a
/// package may not hold (a colon, a backslash: unsafe to extract on some systems) is
/// percent-encoded, as it is in the resource's URI.
fn bitstream(uri: &Uri, path: &str, resource: &Resource, media_types: &MediaTypes) -> Bitstream {
    const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'.')
        .remove(b'-')
        .remove(b'_')
        .remove(b' ');
    // A listed resource's key is its URI: its host and path name it in the package.
    let path = path.split_once("://").map_or(path, |(_, rest)| rest);
    let name = if resourcesync_package::safe_path(path).is_ok() {
        format!("/{path}")
    } else {
        path.split('/')
            .map(|s| percent_encoding::utf8_percent_encode(s, KEPT).to_string())
            .fold(String::new(), |name, s| name + "/" + &s)
    };
    let mut bitstream =
        Bitstream::new(uri.clone(), BitstreamPath::new(name)).with_lastmod(resource.lastmod());
    if let Some(media_type) = media_types.get(resource.media_type) {
        bitstream = bitstream.with_media_type(media_type.clone());
    }
    bitstream
}

/// Adds this run's changes to the Change Dump as packages of their own, and writes the
/// Change Dump that lists every run's packages. Returns its URI and the number of
/// documents and packages written.
#[allow(clippy::too_many_arguments)]
fn change_dump(
    collection: &Path,
    directory: &Directory,
    state: &mut State,
    changes: &[Entry],
    resources: &[Published],
    media_types: &MediaTypes,
    changed: &[Option<usize>],
    number: u64,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
) -> Result<(Uri, u64), BuildError> {
    let from = *state.change_dump_from.get_or_insert(last_at);
    let mut written = 0;
    if !changes.is_empty() {
        // Where the last package ended, so that the packages stay contiguous.
        let start = state
            .change_dump
            .last()
            .and_then(|e| e.md.as_ref().and_then(|md| md.until))
            .unwrap_or(from);
        let name = format!("{DOCS}/changedump-{number:05}");
        let package_error = |source| BuildError::Package {
            document: format!("{name}.xml"),
            source,
        };
        let head = DocumentHead::of_kind(DocumentKind::ChangeDump)
            .with_from(start)
            .with_until(now)
            .with_link(up.clone());
        let limits = DumpLimits::new(options.max_package_bytes, options.max_entries);
        let mut dump =
            DumpBuilder::in_directory(head, directory, &name, limits, PackageOptions::default())
                .map_err(package_error)?;
        for (entry, changed) in changes.iter().zip(changed) {
            let datetime = entry.datetime();
            match (entry.change(), changed) {
                (Some(change), Some(i)) if change != Change::Deleted => {
                    let published = &resources[*i];
                    // The change's entry names the resource by its URI.
                    let mut b = bitstream(
                        &entry.loc,
                        &published.path,
                        &published.resource,
                        media_types,
                    )
                    .with_change(change);
                    if let Some(datetime) = datetime {
                        b = b.with_datetime(datetime);
                    }
                    let file = published.file(collection);
                    let content = File::open(&file)
                        .map_err(|source| BuildError::Read { path: file, source })?;
                    dump.add_sized(b, content, Some(published.resource.length))
                        .map_err(package_error)?;
                }
                _ => {
                    dump.add_deleted(entry.loc.clone(), datetime)
                        .map_err(package_error)?;
                }
            }
        }
        let info = dump.finish().map_err(package_error)?;
        // This run's own dump document: its packages join the one Change Dump instead.
        if let Some((_, file)) = &info.written {
            let _ = fs::remove_file(file);
        }
        written += info.document.entries.len() as u64 * 2;
        state.change_dump.extend(info.document.entries);
    }
    // One document, or an index over parts named after the generation when the limits
    // require: every run adds packages.
    let uri = directory.uri(&format!("{DOCS}/changedump.xml"))?;
    let document_error = |source| BuildError::Document {
        document: uri.to_string(),
        source,
    };
    let head = DocumentHead::of_kind(DocumentKind::ChangeDump)
        .with_from(from)
        .with_link(up.clone());
    let store = GenerationParts {
        directory,
        stem: format!("{DOCS}/changedump-g{number}"),
    };
    let limits = SetLimits::new(options.max_entries as u64, options.max_bytes);
    let mut set = SetWriter::with_store(
        head,
        uri.clone(),
        store,
        SetOptions::default().with_limits(limits),
    )
    .map_err(document_error)?;
    for entry in &state.change_dump {
        set.write_entry(entry).map_err(document_error)?;
    }
    let documents = set.finish().map_err(document_error)?.output.documents.len() as u64;
    Ok((uri, written + documents))
}

/// The page the Source's documents are `describedby` when the caller names none: what the
/// Source is, and a `resourcesync` link to its Capability List (section 6.3.3).
fn about_page(base: &Uri, capability_list: &Uri, resources: usize) -> String {
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    let (base, cl) = (escape(base.as_str()), escape(capability_list.as_str()));
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>ResourceSync Source at {base}</title>\n\
         <link rel=\"resourcesync\" href=\"{cl}\">\n</head>\n<body>\n\
         <h1>ResourceSync Source at {base}</h1>\n\
         <p>{resources} resources, published with resourcesync-rs \
         (ANSI/NISO Z39.99-2017). Start at the <a href=\"{cl}\">Capability List</a>.</p>\n\
         </body>\n</html>\n"
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use resourcesync_xml::Directory;

    use super::{
        DIGESTS, Found, LastRun, MediaTypes, Published, Record, Resource, ResourcesFile, Uris,
        hash_files, plain, resource_uri, resources_file, walk,
    };

    #[test]
    fn the_resources_file_reads_back_and_refuses_what_is_wrong() {
        let mut media_types = MediaTypes::default();
        let text = media_types.of("text/plain");
        assert_eq!((text, media_types.of("text/plain")), (1, 1));
        assert_eq!(media_types.of("no media type"), 0);
        let published = |path: &str, media_type| Published {
            path: path.to_owned(),
            file: None,
            uri: None,
            resource: Resource {
                length: path.len() as u64,
                mtime: (-5, 7),
                md5: [path.len() as u8; 16],
                sha256: [path.len() as u8 + 1; 32],
                media_type,
            },
            written: None,
        };
        let resources = [published("a/b.txt", text), published("a/bé", 0)];
        let run = LastRun::from_file(&resources_file(&resources, &media_types).unwrap()).unwrap();
        assert_eq!(
            (run.len(), run.path(0), run.path(1)),
            (2, "a/b.txt", "a/bé")
        );
        assert_eq!(
            run.resources,
            [resources[0].resource, resources[1].resource]
        );
        assert_eq!(
            run.media_types.get(1).map(|m| m.as_str()),
            Some("text/plain")
        );
        assert_eq!(run.media_types.get(0), None);

        let record = |path: u32, media_type| Record {
            path,
            length: 1,
            mtime: (0, 0),
            media_type,
        };
        let file = |media_types: Vec<&'static str>, paths, digests, records| {
            let file = ResourcesFile {
                media_types,
                paths,
                digests,
                records,
            };
            LastRun::from_file(&postcard::to_stdvec(&file).unwrap()).unwrap_err()
        };
        let two = [0; 2 * DIGESTS];
        for (error, expected) in [
            (
                file(vec![], "ba", &two, vec![record(1, 0), record(1, 0)]),
                "not in path order",
            ),
            (
                file(vec![], "aa", &two, vec![record(1, 0), record(1, 0)]),
                "not in path order",
            ),
            (
                file(vec![], "ab", &two, vec![record(1, 0), record(2, 0)]),
                "past the paths",
            ),
            (
                file(vec![], "abc", &two, vec![record(1, 0), record(1, 0)]),
                "beyond the last",
            ),
            (
                file(vec![], "ab", &two[1..], vec![record(1, 0), record(1, 0)]),
                "of digests",
            ),
            (
                file(vec![], "ab", &two, vec![record(1, 0), record(1, 1)]),
                "no media type 1",
            ),
            (file(vec!["x", "x"], "ab", &two, vec![]), "none, or twice"),
            (
                file(vec!["text/plain", "text/plain"], "", &[], vec![]),
                "none, or twice",
            ),
        ] {
            assert!(error.contains(expected), "{error} (expected {expected})");
        }
        let error = file(vec![], "é", &two[..DIGESTS], vec![record(1, 0)]);
        assert!(
            error.contains("resource 1's path ends inside a character"),
            "{error}"
        );
        let error = file(vec![], "a", &two, vec![record(1, 0), record(1, 0)]);
        assert!(error.contains("resource 2's path ends"), "{error}");
        assert!(LastRun::from_file(b"\xff\xff").is_err());
    }

    #[test]
    fn the_walk_finds_files_in_path_order_whatever_the_directories_hold() {
        let root = tempfile::tempdir().unwrap();
        let collection = root.path().join("c");
        // Files beside subdirectories whose paths sort between them, and names that sort
        // before `/` (`-`, `.`): the directories' runs interleave.
        let mut paths = vec![
            "a.txt",
            "a/b.txt",
            "a/c/x.txt",
            "a/c/y/z",
            "a/d.txt",
            "a-b/y",
            "a0",
            "b",
            "b/a",
            "d000/f1",
            "d000/f2",
            "d001/f0",
        ];
        paths.retain(|p| *p != "b"); // `b` is a directory
        for path in &paths {
            let file = collection.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(&file, path.as_bytes()).unwrap();
        }
        let publish = root.path().join("p");
        let directory = Directory::new(&publish, "http://example.com/".parse().unwrap()).unwrap();
        let mut skipped = Vec::new();
        let found = walk(&collection, &directory, &mut skipped).unwrap();
        let walked: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        paths.sort_unstable();
        assert_eq!(walked, paths);
        assert!(skipped.is_empty());
        assert!(
            found
                .iter()
                .all(|f| f.uri.is_none() && f.length == f.path.len() as u64)
        );
    }

    #[test]
    fn a_file_deleted_since_the_walk_is_no_error() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("here.txt"), b"here").unwrap();
        let found = ["here.txt", "gone.txt"].map(|name| Found {
            path: name.to_string(),
            file: None,
            uri: None,
            length: 4,
            mtime: (0, 0),
            modified: std::time::SystemTime::UNIX_EPOCH,
        });
        let hashed = hash_files(root.path(), &found, &[0, 1], &()).unwrap();
        assert_eq!(hashed.len(), 2);
        assert_eq!(hashed[0].1.map(|d| d.length), Some(4));
        assert!(hashed[1].1.is_none());
    }

    #[test]
    fn plain_names_make_the_uri_the_long_way_makes() {
        for base in [
            "http://example.com/",
            "HTTP://Example.COM:80/a/b~c/",
            "https://example.org/x%7Ey/z/",
        ] {
            let directory = Directory::new("/srv/collection", base.parse().unwrap()).unwrap();
            let uris = Uris::new(&directory);
            assert!(uris.prefix.is_some(), "{base}");
            for path in [
                "a.txt",
                "d000/f000001.txt",
                "A-Z_0.9~x/y",
                "a..b/c-",
                "x/..y",
            ] {
                assert!(plain(path), "{path}");
                let long = resource_uri(&directory, path).unwrap();
                assert_eq!(
                    uris.of(path, Path::new(path)).unwrap(),
                    long,
                    "{base} {path}"
                );
                assert_eq!(
                    directory.path(&long).unwrap(),
                    directory.root().join(path),
                    "{base} {path}"
                );
                // An entry written before names it by the URI made now, or by none.
                let entry = format!("<url><loc>{long}</loc><lastmod>…</url>\n");
                assert!(uris.names(entry.as_bytes(), None, path), "{entry}");
                assert!(uris.names(entry.as_bytes(), Some(&long), "other"));
                assert!(!uris.names(entry.as_bytes(), None, "a.tx"));
                assert!(!uris.names(entry.as_bytes(), None, &format!("{path}x")));
            }
            let amp: resourcesync_model::Uri = "http://example.com/a&b".parse().unwrap();
            let escaped = b"<url><loc>http://example.com/a&amp;b</loc></url>\n";
            assert!(!uris.names(escaped, Some(&amp), "a&b"));
            for path in ["a b", "a%20b", "é", "a:b", "./a", "a//b", "a/..", "a\\b"] {
                assert!(!plain(path), "{path}");
            }
        }
    }
}
