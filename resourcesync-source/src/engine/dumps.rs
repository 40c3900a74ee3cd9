//! The [`Publisher`](crate::Publisher)'s dumps: the Resource Dump over the Resource List it
//! wrote, and the Change Dump over every run's changes, each resource read from the
//! application's [`Content`] when it is packaged.

use std::cell::RefCell;
use std::io::{self, Read, Write};

use resourcesync_model::{
    BitstreamPath, Change, DocumentHead, DocumentKind, Entry, Link, Uri, W3cDateTime,
};
use resourcesync_package::{
    Bitstream, DumpBuilder, DumpLimits, DumpStore, PackageError, PackageOptions,
};
use resourcesync_xml::{SetLimits, SetOptions, SetStore, SetWriter, WriteError};

use super::sink::Sink;
use super::state::State;
use super::{DOCS, Limits, PublishError};

/// The resources' content, for the dumps: what the application serves at their URIs, read
/// when a resource is packaged.
///
/// A closure `Fn(&Entry) -> io::Result<Box<dyn Read>>` is one.
pub trait Content {
    /// The bytes of `resource`, as its entry lists it (URI, length, hashes): the package
    /// checks them against the entry.
    fn open(&self, resource: &Entry) -> io::Result<Box<dyn Read + '_>>;
}

impl<F> Content for F
where
    F: Fn(&Entry) -> io::Result<Box<dyn Read>>,
{
    fn open(&self, resource: &Entry) -> io::Result<Box<dyn Read + '_>> {
        self(resource)
    }
}

/// A dump's files as documents of a [`Sink`], each package held in memory until it is
/// whole; the names written are kept.
struct SinkDumps<'a> {
    sink: &'a dyn Sink,
    written: &'a RefCell<Vec<String>>,
}

impl SinkDumps<'_> {
    fn name(&self, uri: &Uri) -> Result<String, PackageError> {
        self.sink
            .name(uri)
            .map(str::to_owned)
            .ok_or_else(|| PackageError::store(format!("{uri} is not under the base")))
    }
}

impl DumpStore for SinkDumps<'_> {
    type Package = Vec<u8>;

    fn uri(&self, name: &str) -> Result<Uri, PackageError> {
        self.sink.uri(name).map_err(PackageError::store)
    }

    fn create_package(&mut self, uri: &Uri) -> Result<Vec<u8>, PackageError> {
        if self
            .sink
            .exists(&self.name(uri)?)
            .map_err(PackageError::store)?
        {
            return Err(PackageError::store(format!(
                "{uri} exists: a package is never replaced"
            )));
        }
        Ok(Vec::new())
    }

    fn persist_package(&mut self, uri: &Uri, package: Vec<u8>) -> Result<(), PackageError> {
        let name = self.name(uri)?;
        if self.sink.exists(&name).map_err(PackageError::store)? {
            return Err(PackageError::store(format!(
                "{uri} exists: a package is never replaced"
            )));
        }
        self.sink
            .write(&name, &[&package])
            .map_err(PackageError::store)?;
        self.written.borrow_mut().push(name);
        Ok(())
    }

    fn store_document(&mut self, uri: &Uri, document: &[u8]) -> Result<(), PackageError> {
        let name = self.name(uri)?;
        self.sink
            .write(&name, &[document])
            .map_err(PackageError::store)?;
        self.written.borrow_mut().push(name);
        Ok(())
    }
}

/// A resource as a bitstream, named in the package by its URI's host and path.
fn bitstream(entry: &Entry) -> Bitstream {
    let path = BitstreamPath::new(package_path(entry.loc.as_str()));
    let mut bitstream = Bitstream::new(entry.loc.clone(), path);
    if let Some(lastmod) = entry.lastmod {
        bitstream = bitstream.with_lastmod(lastmod);
    }
    if let Some(media_type) = entry.md.as_ref().and_then(|md| md.media_type.clone()) {
        bitstream = bitstream.with_media_type(media_type);
    }
    bitstream
}

/// `resource`'s content, or an error naming it.
fn open<'c>(
    content: &'c dyn Content,
    resource: &Entry,
) -> Result<Box<dyn Read + 'c>, PublishError> {
    content
        .open(resource)
        .map_err(|source| PublishError::Content {
            uri: resource.loc.clone(),
            source,
        })
}

/// What a dump packages: a resource (its bitstream, its content and its length), or a
/// deletion (a Change Dump's manifest lists it, with no bitstream).
pub(crate) enum Packaged<'c> {
    /// A resource: its bitstream (boxed: a deletion is small), its content, its length.
    Resource(Box<Bitstream>, Box<dyn Read + 'c>, Option<u64>),
    /// A deleted resource, and when.
    Deleted(Uri, Option<W3cDateTime>),
}

impl Packaged<'_> {
    /// A resource as a change of a Change Dump: with the change and its datetime.
    pub(crate) fn changed(self, change: Change, datetime: Option<W3cDateTime>) -> Self {
        match self {
            Packaged::Resource(bitstream, content, length) => {
                let mut bitstream = bitstream.with_change(change);
                if let Some(datetime) = datetime {
                    bitstream = bitstream.with_datetime(datetime);
                }
                Packaged::Resource(Box::new(bitstream), content, length)
            }
            deleted => deleted,
        }
    }
}

/// Packages `items` into `store` as the dump of `head`: packages `{name}-00001.zip`, …
/// (with their manifest copies) and the dump document `{name}.xml`.
fn package<'c, W: Write, E: From<PublishError>>(
    store: impl DumpStore<Package = W> + 'c,
    head: DocumentHead,
    name: &str,
    items: impl Iterator<Item = Result<Packaged<'c>, E>>,
    options: &Limits,
) -> Result<resourcesync_package::DumpInfo, E> {
    let package_error = |source| {
        E::from(PublishError::Package {
            document: format!("{name}.xml"),
            source,
        })
    };
    let limits = DumpLimits::new(options.max_package_bytes, options.max_entries);
    let mut dump = DumpBuilder::in_store(head, store, name, limits, PackageOptions::default())
        .map_err(package_error)?;
    for item in items {
        match item? {
            Packaged::Resource(bitstream, content, length) => {
                dump.add_sized(*bitstream, content, length)
                    .map_err(package_error)?;
            }
            Packaged::Deleted(uri, datetime) => {
                dump.add_deleted(uri, datetime).map_err(package_error)?;
            }
        }
    }
    dump.finish().map_err(package_error)
}

/// Writes the Resource Dump of `items` into `store`, its packages named after the
/// generation, its document published as `resourcedump.xml`; returns whether it was.
///
/// No item, no Resource Dump: one "points at one or more packages" (section 5.1), and
/// the Sitemap schema wants at least one `<url>`. The capability is optional (section
/// 9), so the Source omits the document (and, the caller, its Capability List entry);
/// one published before is removed. (The Resource List stays, empty: section 7 allows
/// "zero or more" `<url>`, and it is how a Destination learns that the set is empty.)
pub(crate) fn resource_dump<'c, W: Write, E: From<PublishError>>(
    sink: &dyn Sink,
    store: impl DumpStore<Package = W> + 'c,
    items: impl Iterator<Item = Result<Packaged<'c>, E>>,
    now: W3cDateTime,
    up: &Link,
    options: &Limits,
    generation: u64,
) -> Result<bool, E> {
    let name = format!("{DOCS}/resourcedump-g{generation}");
    let head = DocumentHead::of_kind(DocumentKind::ResourceDump)
        .with_at(now)
        .with_link(up.clone());
    let info = package(store, head, &name, items, options)?;
    let document = format!("{name}.xml");
    let published = format!("{DOCS}/resourcedump.xml");
    if info.document.entries.is_empty() {
        sink.remove(&document)?;
        sink.remove(&published)?;
        return Ok(false);
    }
    // Published under the one name the Capability List gives.
    let bytes = sink.read(&document)?.ok_or_else(|| PublishError::Package {
        document: document.clone(),
        source: PackageError::store("the dump document was not written"),
    })?;
    sink.write(&published, &[&bytes])?;
    sink.remove(&document)?;
    Ok(true)
}

/// Adds this run's changes to the Change Dump as packages of their own (`items`, one per
/// change, into `store`), and writes the Change Dump over every run's packages (an index
/// over parts named after the generation when the limits require; the parts before
/// retired). Returns its URI and the documents and packages written; `None` while no run
/// has packaged a change: a Change Dump "points at one or more packages" (section 5.1),
/// the capability is optional (section 9), and the Sitemap schema wants at least one
/// `<url>`, so the Source omits it, and the caller its Capability List entry, until the
/// first package (whose interval starts where the Change Dump's does). (An empty Change
/// List stays: the Change Lists' `from` and `until` are contiguous, sections 12.1 and
/// 12.2, and an open one with no entry is how a Destination learns that nothing changed.)
#[allow(clippy::too_many_arguments)]
pub(crate) fn change_dump<'c, W: Write, E: From<PublishError>>(
    sink: &dyn Sink,
    store: impl DumpStore<Package = W> + 'c,
    state: &mut State,
    items: Option<impl Iterator<Item = Result<Packaged<'c>, E>>>,
    generation: u64,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
    options: &Limits,
) -> Result<Option<(Uri, u64)>, E> {
    let from = *state.change_dump_from.get_or_insert(last_at);
    let mut count = 0;
    if let Some(items) = items {
        // Where the last package ended, so that the packages stay contiguous.
        let start = state
            .change_dump
            .last()
            .and_then(|e| e.md.as_ref().and_then(|md| md.until))
            .unwrap_or(from);
        let name = format!("{DOCS}/changedump-{generation:05}");
        let head = DocumentHead::of_kind(DocumentKind::ChangeDump)
            .with_from(start)
            .with_until(now)
            .with_link(up.clone());
        let info = package(store, head, &name, items, options)?;
        // This run's own dump document: its packages join the one Change Dump instead.
        sink.remove(&format!("{name}.xml"))?;
        // Each package and its manifest copy.
        count += info.document.entries.len() as u64 * 2;
        state.change_dump.extend(info.document.entries);
    }
    let own = format!("{DOCS}/changedump.xml");
    if state.change_dump.is_empty() {
        sink.remove(&own)?;
        state.replace_set("changedump", Vec::new());
        return Ok(None);
    }
    let uri = sink.uri(&own)?;
    let document_error = |source| {
        E::from(PublishError::Document {
            document: uri.to_string(),
            source,
        })
    };
    let head = DocumentHead::of_kind(DocumentKind::ChangeDump)
        .with_from(from)
        .with_link(up.clone());
    let store = GenerationParts {
        sink,
        stem: format!("{DOCS}/changedump-g{generation}"),
    };
    let limits = SetLimits::new(options.max_entries as u64, options.max_bytes);
    let set_options = SetOptions::default().with_limits(limits);
    let mut set =
        SetWriter::with_store(head, uri.clone(), store, set_options).map_err(document_error)?;
    for entry in &state.change_dump {
        set.write_entry(entry).map_err(document_error)?;
    }
    let summary = set.finish().map_err(document_error)?.output;
    count += summary.documents.len() as u64;
    let parts = summary
        .documents
        .iter()
        .filter_map(|uri| sink.name(uri).map(str::to_owned))
        .filter(|name| *name != own)
        .collect();
    state.replace_set("changedump", parts);
    Ok(Some((uri, count)))
}

/// The Publisher's Resource Dump over `resources` (the Resource List this run wrote), from
/// the application's `content`; the files of the one before are retired. Returns the
/// documents and packages written.
#[allow(clippy::too_many_arguments)]
pub(crate) fn publisher_resource_dump(
    sink: &dyn Sink,
    state: &mut State,
    resources: impl Iterator<Item = Result<Entry, PublishError>>,
    content: &dyn Content,
    now: W3cDateTime,
    up: &Link,
    options: &Limits,
    generation: u64,
) -> Result<u64, PublishError> {
    let written = RefCell::new(Vec::new());
    let store = SinkDumps {
        sink,
        written: &written,
    };
    let items = resources.map(|resource| {
        let resource = resource?;
        let reader = open(content, &resource)?;
        Ok::<_, PublishError>(Packaged::Resource(
            Box::new(bitstream(&resource)),
            reader,
            resource.length(),
        ))
    });
    let dumped = resource_dump(sink, store, items, now, up, options, generation)?;
    let document = format!("{DOCS}/resourcedump-g{generation}.xml");
    let mut files = written.into_inner();
    files.retain(|file| *file != document);
    let count = if dumped { files.len() as u64 + 1 } else { 0 };
    state.replace_set("resourcedump", files);
    state.resource_dump = dumped.then_some(generation);
    Ok(count)
}

/// The Publisher's Change Dump: this run's `changes` (Change List entries) packaged from
/// the application's `content`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn publisher_change_dump(
    sink: &dyn Sink,
    state: &mut State,
    changes: &[Entry],
    content: &dyn Content,
    generation: u64,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
    options: &Limits,
) -> Result<Option<(Uri, u64)>, PublishError> {
    let written = RefCell::new(Vec::new());
    let store = SinkDumps {
        sink,
        written: &written,
    };
    let items = changes.iter().map(|entry| {
        let datetime = entry.datetime();
        Ok(match entry.change() {
            Some(change) if change != Change::Deleted => {
                let packaged = Packaged::Resource(
                    Box::new(bitstream(entry)),
                    open(content, entry)?,
                    entry.length(),
                );
                packaged.changed(change, datetime)
            }
            _ => Packaged::Deleted(entry.loc.clone(), datetime),
        })
    });
    let items = (!changes.is_empty()).then_some(items);
    change_dump(
        sink, store, state, items, generation, last_at, now, up, options,
    )
}

/// Where a Resource List's parts go: files of the generation named after it,
/// `<stem>-00001.xml`, … .
pub(crate) struct GenerationParts<'a> {
    pub(crate) sink: &'a dyn Sink,
    pub(crate) stem: String,
}

impl SetStore for GenerationParts<'_> {
    fn part_uri(&mut self, number: usize) -> Result<Uri, WriteError> {
        self.sink
            .uri(&format!("{}-{number:05}.xml", self.stem))
            .map_err(|e| WriteError::Store(Box::new(e)))
    }

    fn store(&mut self, uri: &Uri, document: &[u8]) -> Result<(), WriteError> {
        self.store_pieces(uri, &[document])
    }

    fn store_pieces(&mut self, uri: &Uri, pieces: &[&[u8]]) -> Result<(), WriteError> {
        let name = self.sink.name(uri).ok_or_else(|| {
            WriteError::Io(io::Error::other(format!("{uri} is not under the base")))
        })?;
        self.sink
            .write(name, pieces)
            .map_err(|e| WriteError::Store(Box::new(e)))
    }
}

/// The path a resource has in a package: its path in the collection, or for a resource
/// named by its URI, the URI's host and path. A name a package may not hold (a colon, a
/// backslash: unsafe to extract on some systems) is percent-encoded, as it is in a URI.
pub(crate) fn package_path(path: &str) -> String {
    const KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'.')
        .remove(b'-')
        .remove(b'_')
        .remove(b' ');
    let path = path.split_once("://").map_or(path, |(_, rest)| rest);
    if resourcesync_package::safe_path(path).is_ok() {
        format!("/{path}")
    } else {
        path.split('/')
            .map(|s| percent_encoding::utf8_percent_encode(s, KEPT).to_string())
            .fold(String::new(), |name, s| name + "/" + &s)
    }
}
