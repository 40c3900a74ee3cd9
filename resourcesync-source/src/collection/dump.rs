//! The Resource Dump and the Change Dump, with their packages.

use super::*;
use crate::engine::dumps::Packaged;

/// A published resource as a dump packages it: its file opened, its bitstream at its path
/// in the collection (or, for a listed resource, its URI's host and path); `None` when
/// the file is gone since the run hashed it (deleted, or replaced by a link or what is
/// not a file) or is of another size now: left out of the dump rather than failing the
/// run, as the walk and the hashing treat a file that vanishes (the next run lists the
/// change). What is packaged is checked against what the Resource List lists
/// ([`Checked`]): a dump never holds bytes its own Resource List contradicts.
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
    let resource = published.resource;
    if content.metadata().map(|m| m.len()).ok() != Some(resource.length) {
        return Ok(None);
    }
    let bitstream = bitstream(uri, &published.path, resource, media_types);
    let checked = Checked {
        content: content.take(resource.length),
        fixity: Fixity::new(),
        listed: *resource,
        file: published.file(collection.path()),
        ended: false,
    };
    Ok(Some(Packaged::Resource(
        Box::new(bitstream),
        Box::new(checked),
        Some(resource.length),
    )))
}

/// A file's bytes as a dump packages them, checked against what the run listed: no more
/// than the listed length, and at the end its length and digests those listed. A file
/// rewritten in place between the hashing and the packaging fails the run (an error
/// naming it; the publication before is kept) rather than publish a package whose bytes
/// its Resource List contradicts.
struct Checked {
    content: io::Take<File>,
    fixity: Fixity,
    listed: Resource,
    file: PathBuf,
    /// The end was reached and checked: a reader may ask again past it.
    ended: bool,
}

impl Read for Checked {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.content.read(buf)?;
        if n > 0 {
            self.fixity.update(&buf[..n]);
            return Ok(n);
        }
        if self.ended {
            return Ok(0);
        }
        self.ended = true;
        let read = std::mem::take(&mut self.fixity).finish();
        if read.length != self.listed.length
            || read.md5.0 != self.listed.md5
            || read.sha256.0 != self.listed.sha256
        {
            return Err(io::Error::other(format!(
                "{}: changed while the run packaged it, after it was hashed; run again",
                Shown(&self.file)
            )));
        }
        Ok(0)
    }
}

/// Writes the Resource Dump: every resource, read again into packages; none when there
/// is no resource (see [`crate::engine::dumps::resource_dump`]). Returns whether it was written.
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
    crate::engine::dumps::resource_dump(
        directory,
        directory,
        items,
        now,
        up,
        &options.limits(),
        generation,
    )
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
/// package (see [`crate::engine::dumps::change_dump`]).
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
    crate::engine::dumps::change_dump(
        directory,
        directory,
        state,
        items,
        number,
        last_at,
        now,
        up,
        &options.limits(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a dump packages is what the run listed: the listed bytes pass; bytes of the
    /// same length rewritten since the hashing fail the read (and the run), naming the
    /// file; bytes past the listed length are not read.
    #[test]
    fn packaged_bytes_are_checked_against_the_listing() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a.txt");
        let mut fixity = Fixity::new();
        fixity.update(b"listed bytes");
        let digests = fixity.finish();
        let listed = Resource {
            length: digests.length,
            md5: digests.md5.0,
            sha256: digests.sha256.0,
            ..Resource::default()
        };
        let read = |content: &[u8]| {
            fs::write(&file, content).unwrap();
            let mut checked = Checked {
                content: File::open(&file).unwrap().take(listed.length),
                fixity: Fixity::new(),
                listed,
                file: file.clone(),
                ended: false,
            };
            let mut out = Vec::new();
            checked.read_to_end(&mut out)?;
            // Asked again past the end, as a reader may: still the end, no error.
            assert_eq!(checked.read(&mut [0; 8])?, 0);
            Ok::<_, io::Error>(out)
        };
        assert_eq!(read(b"listed bytes").unwrap(), b"listed bytes");
        let e = read(b"LISTED BYTES").unwrap_err();
        assert!(e.to_string().contains("a.txt: changed while"), "{e}");
        assert_eq!(read(b"listed bytes and more").unwrap(), b"listed bytes");
    }
}
