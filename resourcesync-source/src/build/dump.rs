//! The Resource Dump and the Change Dump, with their packages.

use super::*;
use crate::dumps::Packaged;

/// A published resource as a dump packages it: its file opened, its bitstream at its path
/// in the collection (or, for a listed resource, its URI's host and path); `None` when
/// the file is gone since the run hashed it (deleted, or replaced by a link or what is
/// not a file): left out of the dump rather than failing the run, as the walk and the
/// hashing treat a file that vanishes (the next run lists it as deleted).
fn packaged<'c>(
    collection: &Collection,
    uri: &Uri,
    published: &Published<'_>,
    media_types: &MediaTypes,
) -> Result<Option<Packaged<'c>>, BuildError> {
    // Through no link, as the hashing read it: a link swapped in since packs nothing.
    let content = match collection.open_file(published.relative(collection)) {
        Ok(content) => content,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(BuildError::Read {
                path: published.file(collection.path()),
                source,
            });
        }
    };
    let bitstream = bitstream(uri, &published.path, published.resource, media_types);
    Ok(Some(Packaged::Resource(
        Box::new(bitstream),
        Box::new(content),
        Some(published.resource.length),
    )))
}

/// Writes the Resource Dump: every resource, read again into packages; none when there
/// is no resource (see [`crate::dumps::resource_dump`]). Returns whether it was written.
#[allow(clippy::too_many_arguments)]
pub(super) fn resource_dump(
    collection: &Collection,
    directory: &Directory,
    resources: &[Published<'_>],
    media_types: &MediaTypes,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
    generation: u64,
) -> Result<bool, BuildError> {
    let uris = Uris::new(directory);
    let items = resources
        .iter()
        .map(|published| packaged(collection, &published.uri(&uris)?, published, media_types))
        .filter_map(Result::transpose);
    crate::dumps::resource_dump(directory, directory, items, now, up, options, generation)
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

/// A resource as a bitstream of a package, at its path in the collection; a name a
/// package may not hold (a colon, a backslash: unsafe to extract on some systems) is
/// percent-encoded, as it is in the resource's URI.
pub(super) fn bitstream(
    uri: &Uri,
    path: &str,
    resource: &Resource,
    media_types: &MediaTypes,
) -> Bitstream {
    let name = package_path(path);
    let mut bitstream =
        Bitstream::new(uri.clone(), BitstreamPath::new(name)).with_lastmod(resource.lastmod());
    if let Some(media_type) = media_types.get(resource.media_type) {
        bitstream = bitstream.with_media_type(media_type.clone());
    }
    bitstream
}

/// Adds this run's changes to the Change Dump as packages of their own (each resource's
/// file read again), and writes the Change Dump that lists every run's packages. Returns
/// its URI and the number of documents and packages written; `None` while it has no
/// package (see [`crate::dumps::change_dump`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn change_dump(
    collection: &Collection,
    directory: &Directory,
    state: &mut State,
    changes: &[Entry],
    resources: &[Published<'_>],
    media_types: &MediaTypes,
    changed: &[Option<usize>],
    number: u64,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
) -> Result<Option<(Uri, u64)>, BuildError> {
    let items = changes.iter().zip(changed).filter_map(|(entry, changed)| {
        let datetime = entry.datetime();
        match (entry.change(), changed) {
            (Some(change), Some(i)) if change != Change::Deleted => {
                // The change's entry names the resource by its URI.
                let packaged = packaged(collection, &entry.loc, &resources[*i], media_types);
                packaged
                    .map(|p| p.map(|p| p.changed(change, datetime)))
                    .transpose()
            }
            _ => Some(Ok(Packaged::Deleted(entry.loc.clone(), datetime))),
        }
    });
    let items = (!changes.is_empty()).then_some(items);
    crate::dumps::change_dump(
        directory, directory, state, items, number, last_at, now, up, options,
    )
}
