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
//!   `lastmod` (the file's modification time when its bytes last changed: a file touched,
//!   its bytes the same, keeps the one listed), `length`, md5 and sha-256, and a media type
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
//!   (`--change-dump`); a dump with no package (an empty collection, no change yet) is
//!   left out, and not in the Capability List, where the empty Resource List and an open
//!   Change List with no entry stay (`dumps::change_dump` says why);
//! - `.resourcesync/state.json` and `.resourcesync/resources.postcard`: what this run
//!   published (the Change Lists and the open one's size; each file's size, modification
//!   time, stamp and digests), read by the next run. A file whose size, modification time
//!   and stamp (its change time and inode, which a rewrite that keeps size and time still
//!   changes: `cp -p`, `rsync -t`) are unchanged is not read again, and its Resource List
//!   entry is copied from the last run's; one changed within 20 ms of a run's start is read
//!   again by the next (the file system clock's granularity); the open Change List is
//!   extended from the document the last run wrote;
//! - a symbolic link per top-level entry of the collection (per entry of a directory
//!   that holds something not published, down to it, so that it is not served), so that
//!   the resources are served from the collection itself without being copied: the documents describe the
//!   collection as the run found it, and a Destination checks what it fetches against
//!   them (the resources themselves are served live, as any web server serves them).
//!
//! With `--list FILE`, the resources are the URI and file pairs the list gives instead
//! (URIs anywhere, served by whoever serves them; nothing is linked into the publication).
//!
//! Every file and directory of the collection is opened beneath it through no symbolic
//! link at any level, walked or listed (name by name from a cap-std handle on the
//! collection, each name opened without following a link): a link swapped in after the
//! walk, or named by a list, reaches nothing outside. Each generation is marked as the publisher's
//! (`<number>.made` beside it), and only marked generations are removed.
//!
//! Hidden files (a name starting with `.`), symbolic links inside the collection, names
//! that are not UTF-8, and the top-level names the publication uses (`.well-known`,
//! `resourcesync`) are not published; each is reported as skipped. So is a file or
//! directory that cannot be read (its permissions, an I/O error), with the system's error
//! ([`Skipped::error`]): the run publishes the rest, rather than nothing; a resource the
//! last run listed and this one cannot read is listed as deleted, so that the Change Lists
//! agree with the Resource List.
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use resourcesync_source::collection::{Options, build};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = tempfile::tempdir()?;
//! let collection = root.path().join("collection");
//! std::fs::create_dir(&collection)?;
//! std::fs::write(collection.join("a.txt"), "first")?;
//! let publish = root.path().join("publish");
//! let options = Options::new("http://example.com/".parse()?);
//!
//! let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
//! let first = build(&collection, &publish, &options, start, &())?;
//! assert_eq!((first.generation, first.created), (1, 1));
//!
//! std::fs::write(collection.join("b.txt"), "second")?;
//! let later = start + Duration::from_secs(60);
//! let second = build(&collection, &publish, &options, later, &())?;
//! assert_eq!((second.generation, second.created, second.resources), (2, 1, 2));
//! assert_eq!(second.at.to_string(), "2023-11-14T22:14:20Z");
//! assert!(publish.join("resourcesync/changelist.xml").is_file());
//! # Ok(())
//! # }
//! ```

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use crate::{Directory, DirectoryError, Shown};
use resourcesync_model::BitstreamPath;
use resourcesync_model::{
    Capability, Change, DocumentHead, DocumentKind, Entry, Fixity, Hashes, Link, MAX_BYTES,
    MAX_ENTRIES, MediaType, Relation, Uri, W3cDateTime,
};
use resourcesync_package::Bitstream;
use resourcesync_xml::{SetLimits, SetOptions, SetWriter, WrittenDocument};
use serde::{Deserialize, Serialize};

use crate::engine::dumps::{GenerationParts, package_path};
use crate::engine::notification::{OUTBOX, TOPIC};
use crate::engine::state::State;
use crate::engine::{
    CAPABILITY_LIST, DOCS, Limits, PublishError, Run, SOURCE_DESCRIPTION, STATE, STATE_VERSION,
};
use crate::generations::symlink;
use crate::store::StoreError;
use crate::store::{GenerationStore, Store};

pub(crate) mod beneath;
pub(crate) mod changes;
pub(crate) mod dump;
pub(crate) mod generation;
mod outbox;
pub(crate) mod portable;
pub(crate) mod publish;
pub(crate) mod resource_list;
pub(crate) mod state;
#[cfg(feature = "object-store")]
mod upload;
pub(crate) mod uris;
pub(crate) mod walk;

use beneath::*;
use changes::*;
use dump::*;
use generation::*;
use publish::*;
use resource_list::*;
use state::*;
use uris::*;
use walk::*;

pub use outbox::DirectoryOutbox;
#[cfg(feature = "object-store")]
pub use upload::{UploadReport, upload};

/// What a [`build`] tells while it runs, from the threads that do the work: a progress
/// bar, a log, or nothing (`&()`).
pub trait BuildProgress: Sync {
    /// `files` files are about to be read and hashed (those new, or of another size or
    /// modification time than the last run found).
    fn hashing(&self, files: u64) {
        let _ = files;
    }

    /// One more of them was hashed.
    fn hashed(&self) {}
}

/// Tells nothing.
impl BuildProgress for () {}

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
    /// ([`listed`](crate::collection) resources: a line per resource, its URI and its file
    /// relative to the collection; `#` comments and empty lines left out).
    pub list: Option<PathBuf>,
    /// The Source Description's `describedby` link.
    pub describedby: Option<Uri>,
    /// Publish a collection that holds nothing over a publication that lists resources
    /// (every resource then listed as deleted); refused by default
    /// ([`BuildError::Emptied`]).
    pub allow_empty: bool,
    /// The WebSub hub of the publication's Change Notification channel (Change
    /// Notification 1.0.1): with one, the Capability List advertises the channel and each
    /// run that publishes changes writes them as notifications into an outbox in the
    /// publication, which [`DirectoryOutbox`] hands to the delivery.
    pub hub: Option<Uri>,
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
            allow_empty: false,
            hub: None,
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

    /// With a Change Notification channel relayed by the WebSub hub at `hub`.
    pub fn with_hub(mut self, hub: Uri) -> Options {
        self.hub = Some(hub);
        self
    }

    /// What the engine takes of them.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            base_url: self.base_url.clone(),
            max_entries: self.max_entries,
            max_bytes: self.max_bytes,
            max_package_bytes: self.max_package_bytes,
            changelist_period: self.changelist_period,
            describedby: self.describedby.clone(),
            hub: self.hub.clone(),
        }
    }
}

/// Why nothing was published. The previous publication is unchanged in every case.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The collection or a file of it cannot be read.
    #[error("{}: {source}", Shown(path))]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file of the publication cannot be written.
    #[error("{}: {source}", Shown(path))]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The engine could not publish: a document, a package, the store, a resource's
    /// content, or what the last run left.
    #[error(transparent)]
    Publish(Box<PublishError>),
    /// A line of the list of URI and file pairs is wrong.
    #[error("{}, line {line}: {}", Shown(list), crate::shown::escaped(reason))]
    List {
        /// The list.
        list: PathBuf,
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The collection holds nothing to publish where the last run published resources:
    /// most likely a wrong directory or a disk not mounted, and published it would tell
    /// every Destination that each resource was deleted. [`Options::allow_empty`]
    /// publishes it all the same.
    #[error(
        "{}: nothing to publish, where the publication lists {listed} resources: a wrong \
         path, or a disk not mounted? (to publish them all as deleted: --allow-empty)",
        Shown(collection)
    )]
    Emptied {
        /// The collection, or with [`Options::list`] the list.
        collection: PathBuf,
        /// Resources the publication lists.
        listed: u64,
    },
    /// The bucket's publication is not the work directory's to go on from
    /// (`upload`, feature `object-store`): another work
    /// directory made it, or it is newer.
    #[error("{store}: {reason}")]
    Diverged {
        /// The bucket's prefix.
        store: String,
        /// Why.
        reason: String,
    },
    /// The state the last run left cannot be read.
    #[error("{}: unreadable state of the last run: {reason}", Shown(path))]
    State {
        /// The state file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

// Boxed: the engine's errors are large, and a `BuildError` is returned by every step of
// the walk and the hashing.
impl From<PublishError> for BuildError {
    fn from(error: PublishError) -> BuildError {
        BuildError::Publish(Box::new(error))
    }
}

impl From<StoreError> for BuildError {
    fn from(error: StoreError) -> BuildError {
        PublishError::from(error).into()
    }
}

impl From<DirectoryError> for BuildError {
    fn from(error: DirectoryError) -> BuildError {
        PublishError::from(error).into()
    }
}

/// A file (or directory) of the collection that was not published, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Skipped {
    /// Its path, relative to the collection (with a list, the file); serialized
    /// as text, a byte that is not UTF-8 as U+FFFD (such a name is one reason a file is
    /// skipped).
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// Why it was not published.
    pub reason: &'static str,
    /// The system's error when it could not be read ([`Skipped::UNREADABLE`]); `None` for
    /// what is left out on purpose (a hidden name, a link, ...).
    pub error: Option<String>,
}

impl Skipped {
    /// The reason of a file or directory that could not be read.
    pub const UNREADABLE: &'static str = "cannot be read";

    /// Left out on purpose, for `reason`.
    pub(crate) fn because(path: impl Into<PathBuf>, reason: &'static str) -> Skipped {
        Skipped {
            path: path.into(),
            reason,
            error: None,
        }
    }

    /// Left out because reading it failed with `error`: one file that cannot be read
    /// (permissions, an I/O error) is reported, and the rest is published.
    pub(crate) fn unreadable(path: impl Into<PathBuf>, error: &io::Error) -> Skipped {
        Skipped {
            path: path.into(),
            reason: Skipped::UNREADABLE,
            error: Some(error.to_string()),
        }
    }

    /// Whether it could not be read, rather than being left out on purpose.
    pub fn is_unreadable(&self) -> bool {
        self.error.is_some()
    }
}

impl std::fmt::Display for Skipped {
    /// `PATH: REASON` (and `: ERROR` when it could not be read), the path [`Shown`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", Shown(&self.path), self.reason)?;
        match &self.error {
            Some(error) => write!(f, ": {error}"),
            None => Ok(()),
        }
    }
}

/// A file or directory published under a name some file systems cannot hold (Windows's
/// device names, a trailing dot, `:`, names of one directory that differ only in case or
/// normalization): a Destination on such a file system cannot store it as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NotPortable {
    /// Its path, relative to the collection.
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    /// Which rule it breaks.
    pub reason: &'static str,
}

impl std::fmt::Display for NotPortable {
    /// `PATH: REASON`, the path [`Shown`].
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", Shown(&self.path), self.reason)
    }
}

/// A path as text, whatever its bytes: serde's own refuses one that is not UTF-8.
fn lossy_path<S: serde::Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&path.to_string_lossy())
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
    /// Of them, files and directories that could not be read ([`Skipped::is_unreadable`]):
    /// published without them, which `resourcesync build` reports by its exit status.
    pub unreadable: u64,
    /// Published under names some file systems cannot hold (found by the walk; a list
    /// given with `--list` is not checked).
    pub not_portable: Vec<NotPortable>,
    /// The Source Description's URI.
    pub source_description: Uri,
    /// The Capability List's URI.
    pub capability_list: Uri,
    /// Documents and packages written in this generation.
    pub documents: u64,
    /// The generation's directory, which the publish directory now links to (serialized
    /// as text, a byte that is not UTF-8 as U+FFFD).
    #[serde(serialize_with = "lossy_path")]
    pub directory: PathBuf,
    /// The sequence numbers of the notifications this run wrote into the outbox (none
    /// without a hub, or without changes).
    pub notifications: Vec<u64>,
    /// The base URL of the publication this run replaced, when it was another: another
    /// base URL names other resources, so nothing of that publication was carried over
    /// (every resource created anew, the Change Lists begun again), and a Destination of
    /// the old URL starts over with a baseline.
    pub replaced_base_url: Option<String>,
}

impl std::fmt::Display for BuildReport {
    /// One line: the generation and its time, the resources and their bytes, the
    /// changes, the files hashed, skipped and unreadable, the documents written and the
    /// Source Description's URI.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "published generation {} at {}: {} resources ({} bytes), {} created, {} updated, \
             {} deleted, {} files hashed ({} bytes), {} skipped ({} unreadable), {} documents; \
             Source Description {}",
            self.generation,
            self.at,
            self.resources,
            self.bytes,
            self.created,
            self.updated,
            self.deleted,
            self.hashed_files,
            self.hashed_bytes,
            self.skipped.len(),
            self.unreadable,
            self.documents,
            self.source_description
        )
    }
}

/// The seconds since the epoch a `lastmod` can say: 0000-01-01 to 9999-12-31.
const W3C_YEARS: std::ops::Range<i64> = -62_167_219_200..253_402_300_800;

/// The state's resources, beside it: every resource published by its path in the
/// collection, in path order (each path once), with what the run knew of it. A compact
/// binary file (postcard), read and written in a fraction of the time JSON takes for
/// 100,000 of them, and read while the walk runs. Its second format, which keeps each
/// file's [`Resource::stamp`] after the records.
const RESOURCES: &str = ".resourcesync/resources.2.postcard";

/// The resources file of the runs before stamps (no stamp: the first run after them reads
/// every file again once), read when a generation has no [`RESOURCES`].
const RESOURCES_UNSTAMPED: &str = ".resourcesync/resources.postcard";

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
    progress: &dyn BuildProgress,
) -> Result<BuildReport, BuildError> {
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
    // Locked until the store is dropped, at the end of the run.
    let mut store = GenerationStore::open(publish)?;
    let delivered = crate::outbox::delivered_mark(&store)?;
    let current = store.published();
    let previous = match &current {
        Some(dir) => read_state(dir)?,
        None => State::default(),
    };
    // Another base URL names other resources: start afresh rather than list changes of
    // resources the Destinations never saw.
    // Nothing of the old publication is carried over then.
    let (previous, previous_dir, replaced) = if previous.base_url == options.base_url.as_str() {
        (previous, current, None)
    } else {
        let replaced = current.is_some().then(|| previous.base_url.clone());
        (
            State::default(),
            None,
            replaced.filter(|url| !url.is_empty()),
        )
    };
    // The last run's resources are read on a thread of their own while the walk runs, then
    // its Resource List's documents, whose unchanged entries this run's takes.
    let prefix = Uris::new(&Directory::new(&collection, options.base_url.clone())?)
        .prefix
        .filter(|prefix| uris::unescaped(prefix));
    let known = previous_dir
        .as_deref()
        .map(|dir| read_resources(dir, previous.generation, prefix));
    // What the run keeps of the last generation it carries over itself, file by file.
    store.begin_empty()?;
    let (Some(generation), Some(number)) = (store.writing(), store.writing_generation()) else {
        return Err(StoreError::NotBegun.into());
    };
    let generation = generation.to_owned();
    let previous = Previous {
        dir: previous_dir,
        state: previous,
        resources: known,
    };
    // On an error the store, dropped, removes the generation begun.
    let mut report = publish_generation(
        &collection,
        &generation,
        previous,
        number,
        options,
        now,
        delivered,
        progress,
        || store.commit(),
    )?;
    report.replaced_base_url = replaced;
    Ok(report)
}

/// What a run builds on: the last run's generation, its state, and its resources being
/// read; none of it for a first run.
struct Previous {
    dir: Option<PathBuf>,
    state: State,
    resources: Option<Known>,
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::beneath::Collection;
    use crate::Directory;

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
        let resource = |path: &str, media_type| Resource {
            length: path.len() as u64,
            mtime: (-5, 7),
            lastmod: (-9, 3),
            stamp: path.len() as u64 * 0x0101_0101_0101,
            md5: [path.len() as u8; 16],
            sha256: [path.len() as u8 + 1; 32],
            media_type,
        };
        let known = [resource("a/b.txt", text), resource("a/bé", 0)];
        let published = |path: &str, resource| Published {
            path: path.to_owned(),
            file: None,
            uri: None,
            resource,
            written: None,
        };
        let resources = [
            published("a/b.txt", &known[0]),
            published("a/bé", &known[1]),
        ];
        let written = resources_file(&resources, &media_types).unwrap();
        let run = LastRun::from_file(&written, true).unwrap();
        assert_eq!(
            (run.len(), run.path(0), run.path(1)),
            (2, "a/b.txt", "a/bé")
        );
        assert_eq!(run.resources, known);
        assert_eq!(
            run.media_types.get(1).map(|m| m.as_str()),
            Some("text/plain")
        );
        assert_eq!(run.media_types.get(0), None);

        let record = |path: u32, media_type| Record {
            path,
            length: 1,
            mtime: (0, 0),
            lastmod: None,
            media_type,
        };
        let file = |media_types: Vec<&'static str>, paths, digests, records| {
            let file = ResourcesFile {
                media_types,
                paths,
                digests,
                records,
                stamps: &[],
            };
            LastRun::from_file(&postcard::to_stdvec(&file).unwrap(), true).unwrap_err()
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
        // Times no walk takes (a damaged file): refused, not made dates that overflow.
        for (mtime, lastmod) in [
            ((i64::MAX, 0), None),
            ((0, 1_000_000_000), None),
            ((0, 0), Some((i64::MIN, 0))),
        ] {
            let timed = Record {
                mtime,
                lastmod,
                ..record(1, 0)
            };
            let error = file(vec![], "a", &two[..DIGESTS], vec![timed]);
            assert!(
                error.contains("resource 1: a time outside the years 0000 to 9999"),
                "{error}"
            );
        }
        let error = file(vec![], "é", &two[..DIGESTS], vec![record(1, 0)]);
        assert!(
            error.contains("resource 1's path ends inside a character"),
            "{error}"
        );
        let error = file(vec![], "a", &two, vec![record(1, 0), record(1, 0)]);
        assert!(error.contains("resource 2's path ends"), "{error}");
        assert!(LastRun::from_file(b"\xff\xff", true).is_err());
    }

    /// The bytes of `n` as a LEB128 varint.
    fn varint_len(mut n: usize) -> usize {
        let mut len = 1;
        while n >= 0x80 {
            n >>= 7;
            len += 1;
        }
        len
    }

    #[test]
    fn the_resources_file_is_what_postcard_writes() {
        let mut media_types = MediaTypes::default();
        media_types.of("text/plain");
        media_types.of("application/vnd.example+json; charset=utf-8");
        let known: Vec<Resource> = (0..300u32)
            .map(|i| {
                let i64 = i64::from(i);
                Resource {
                    length: u64::from(i).pow(5) + u64::from(i % 3) * (u64::MAX / 3),
                    mtime: (i64 * 7_919_993 - 1_000_000_000 * (i64 % 2), i * 3_333_331),
                    lastmod: if i % 4 == 0 {
                        (-62_000_000_000 + i64, 999_999_999 - i)
                    } else {
                        (i64 * 7_919_993 - 1_000_000_000 * (i64 % 2), i * 3_333_331)
                    },
                    stamp: u64::from(i).wrapping_mul(0x9e37_79b9_7f4a_7c15),
                    md5: [i as u8; 16],
                    sha256: [(i * 7) as u8; 32],
                    media_type: (i % 3) as u16,
                }
            })
            .collect();
        // In path order, each once, of many lengths.
        let paths: Vec<String> = (0..300)
            .map(|i| format!("d{:03}/{i:03}{}é", i / 50, "f".repeat(i % 200)))
            .collect();
        let resources: Vec<Published<'_>> = paths
            .iter()
            .zip(&known)
            .map(|(path, resource)| Published {
                path: path.clone(),
                file: None,
                uri: None,
                resource,
                written: None,
            })
            .collect();
        let mut digests = Vec::new();
        let records = known
            .iter()
            .zip(&paths)
            .map(|(r, path)| {
                digests.extend_from_slice(&r.md5);
                digests.extend_from_slice(&r.sha256);
                Record {
                    path: path.len() as u32,
                    length: r.length,
                    mtime: r.mtime,
                    lastmod: (r.lastmod != r.mtime).then_some(r.lastmod),
                    media_type: r.media_type,
                }
            })
            .collect();
        let stamps: Vec<u8> = known.iter().flat_map(|r| r.stamp.to_le_bytes()).collect();
        let file = ResourcesFile {
            media_types: media_types.types.iter().map(|m| m.as_str()).collect(),
            paths: &paths.concat(),
            digests: &digests,
            records,
            stamps: &stamps,
        };
        let written = resources_file(&resources, &media_types).unwrap();
        assert_eq!(written, postcard::to_stdvec(&file).unwrap());
        let run = LastRun::from_file(&written, true).unwrap();
        assert_eq!(run.resources, known);
        // Cut anywhere, it is refused, not misread; so is a byte more.
        for cut in (0..written.len()).step_by(97) {
            assert!(LastRun::from_file(&written[..cut], true).is_err(), "{cut}");
        }
        let mut longer = written.clone();
        longer.push(0);
        assert!(LastRun::from_file(&longer, true).is_err());
        // The file of the format before stamps: the same without them, each stamp 0 (the
        // file read again).
        let before = &written[..written.len() - stamps.len() - varint_len(stamps.len())];
        let run = LastRun::from_file(before, false).unwrap();
        assert!(run.resources.iter().all(|r| r.stamp == 0));
        assert_eq!(run.len(), known.len());
    }

    /// A change time within 20 ms of a run's start, or within 2 s where the file system
    /// keeps whole seconds (no nanoseconds), is racy: stamp 0, read again next time.
    #[test]
    fn change_times_near_the_start_are_racy_for_the_file_systems_granularity() {
        use std::time::{Duration, SystemTime};
        let racy = super::walk::Racy::now();
        let at = |ago: Duration| super::walk::epoch_time(SystemTime::now() - ago);
        let (second_ago, _) = at(Duration::from_secs(1));
        assert_eq!(racy.stamp((second_ago, 0), 7), 0);
        assert_ne!(racy.stamp((second_ago, 5), 7), 0);
        let (ten_ago, _) = at(Duration::from_secs(10));
        assert_ne!(racy.stamp((ten_ago, 0), 7), 0);
        let (secs, nanos) = at(Duration::ZERO);
        assert_eq!(racy.stamp((secs, nanos.max(1)), 7), 0);
        // Another inode, another stamp.
        assert_ne!(racy.stamp((ten_ago, 0), 7), racy.stamp((ten_ago, 0), 8));
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
        let collection = Collection::open(&collection).unwrap();
        let racy = super::walk::Racy::now();
        let found = walk(&collection, &directory, racy, &mut skipped, &mut Vec::new()).unwrap();
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

    /// Files the walk found, of 4 bytes each.
    fn found<const N: usize>(names: &[&str; N]) -> [Found; N] {
        names.map(|name| Found {
            path: name.to_string(),
            file: None,
            uri: None,
            length: 4,
            mtime: (0, 0),
            stamp: 1,
        })
    }

    #[test]
    fn a_file_deleted_since_the_walk_is_no_error() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("here.txt"), b"here").unwrap();
        let found = found(&["here.txt", "gone.txt"]);
        let collection = Collection::open(root.path()).unwrap();
        let hashed = hash_files(&collection, &found, &[0, 1], &()).unwrap();
        assert_eq!(hashed.len(), 2);
        assert_eq!(hashed[0].1.digests().map(|d| d.length), Some(4));
        assert!(matches!(hashed[1].1, super::Hashed::Gone));
    }

    /// A file swapped for a FIFO between the walk and the hashing: the build goes on (it
    /// waited for a writer for ever, holding the publication's lock: issue 22).
    #[cfg(unix)]
    #[test]
    fn a_file_swapped_for_a_fifo_is_skipped_not_waited_for() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("here.txt"), b"here").unwrap();
        let fifo = root.path().join("fifo.txt");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo");
        let found = found(&["here.txt", "fifo.txt"]);
        let root_path = root.path().to_owned();
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let collection = Collection::open(&root_path).unwrap();
            let hashed = hash_files(&collection, &found, &[0, 1], &()).map(|h| {
                h.into_iter()
                    .map(|(_, d)| d.digests().map(|d| d.length))
                    .collect::<Vec<_>>()
            });
            let _ = send.send(hashed.map_err(|e| e.to_string()));
        });
        let hashed = receive
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("hashing a FIFO returned")
            .unwrap();
        assert_eq!(hashed, [Some(4), None]);
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
