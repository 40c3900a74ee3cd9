//! The Resource Dump and the Change Dump, with their packages.

use super::*;

/// Writes the Resource Dump: every resource, read again into packages. Returns its URI.
#[allow(clippy::too_many_arguments)]
pub(super) fn resource_dump(
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
    let mut dump = DumpBuilder::in_store(head, directory, &name, limits, PackageOptions::default())
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
    let uri = info.written.ok_or_else(|| {
        package_error(PackageError::Io(io::Error::other(
            "the dump document was not written",
        )))
    })?;
    let file = directory.path(&uri)?;
    // Published under the one name the Capability List gives.
    let published = file.with_file_name("resourcedump.xml");
    fs::rename(&file, &published).map_err(|source| BuildError::Write {
        path: published,
        source,
    })
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

/// Adds this run's changes to the Change Dump as packages of their own, and writes the
/// Change Dump that lists every run's packages. Returns its URI and the number of
/// documents and packages written.
#[allow(clippy::too_many_arguments)]
pub(super) fn change_dump(
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
            DumpBuilder::in_store(head, directory, &name, limits, PackageOptions::default())
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
        if let Some(file) = info
            .written
            .as_ref()
            .and_then(|uri| directory.path(uri).ok())
        {
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
        sink: directory,
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
