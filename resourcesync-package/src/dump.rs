//! Building a Resource Dump or Change Dump: bitstreams split into as many packages as the
//! limits require, and the dump document that lists them.

use std::io::{self, Read, Write};

use resourcesync_model::{
    ChangeOrder, Document, DocumentHead, DocumentKind, Entry, Link, MAX_ENTRIES, Relation, Uri,
    UriError, W3cDateTime,
};

use crate::writer::{Bitstream, PackageInfo, PackageOptions, PackageWriter};
use crate::{Misuse, PackageError};

/// Limits of one package.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpLimits {
    /// Bytes of bitstream content per package; a package closes before a bitstream whose
    /// length hint would take it past this, or right after one without a hint that did.
    /// 1 GiB by default.
    pub max_bytes: u64,
    /// Bitstreams (and deletions) per package, at most the 50,000 a manifest may list.
    pub max_entries: usize,
}

impl Default for DumpLimits {
    fn default() -> Self {
        DumpLimits {
            max_bytes: 1 << 30,
            max_entries: MAX_ENTRIES as usize,
        }
    }
}

impl DumpLimits {
    /// Limits of `max_bytes` bytes and `max_entries` entries per package.
    pub fn new(max_bytes: u64, max_entries: usize) -> DumpLimits {
        DumpLimits {
            max_bytes,
            max_entries: max_entries.clamp(1, MAX_ENTRIES as usize),
        }
    }
}

/// Stores a copy of package `n`'s manifest and returns its URI.
type StoreManifest = dyn FnMut(usize, &Uri, &[u8]) -> io::Result<Uri>;

/// The package being filled.
struct Open<W: Write> {
    writer: PackageWriter<W>,
    uri: Uri,
    content: u64,
    from: Option<W3cDateTime>,
}

/// Builds a Resource Dump or a Change Dump: bitstreams go into ZIP packages, a new one
/// whenever the [`DumpLimits`] require, and [`finish`](DumpBuilder::finish) returns the
/// dump document that lists every package with `type="application/zip"`, its length, md5
/// and sha-256, and its times.
///
/// Give it the dump's head (a Resource Dump with `at` and maybe `completed`, or a Change
/// Dump with `from` and maybe `until`, and the `up` link), a scheme naming the packages, a
/// sink that opens a writer for a package's URI, and options. With
/// [`with_manifest_copies`](DumpBuilder::with_manifest_copies) each entry also gets a
/// `contents` link to a copy of its package's manifest, stored through a second sink.
///
/// Packages of a Resource Dump carry the dump's `at` and `completed`. Packages of a Change
/// Dump cover contiguous intervals like the parts of a Change List: the first starts at the
/// dump's `from`, each later one at the `datetime` of its first change; each ends where the
/// next starts, the last at the dump's `until` or open. Changes must come in forward
/// chronological order.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation, Uri};
/// use resourcesync_package::{Bitstream, DumpBuilder, DumpLimits, PackageOptions};
///
/// let mut head = DocumentHead::of_kind(DocumentKind::ResourceDump);
/// head.md.at = Some("2013-01-03T09:00:00Z".parse()?);
/// head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut packages = BTreeMap::new();
/// let mut dump = DumpBuilder::new(
///     head,
///     |n| format!("http://example.com/resourcedump-part{n}.zip").parse(),
///     |_uri: &Uri| Ok(Vec::new()),
///     |uri: &Uri, zip: Vec<u8>| { packages.insert(uri.to_string(), zip); Ok(()) },
///     DumpLimits::new(u64::MAX, 2),
///     PackageOptions::default(),
/// )?;
/// for i in 0..5 {
///     let b = Bitstream::new(format!("http://example.com/res{i}").parse()?, format!("/res{i}").into());
///     dump.add(b, &b"content"[..])?;
/// }
/// let document = dump.finish()?;
/// assert_eq!(document.head.kind(), DocumentKind::ResourceDump);
/// assert_eq!(document.entries.len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the dump document is returned only by `finish`, which also closes the last package"]
pub struct DumpBuilder<N, O, C, W: Write> {
    head: DocumentHead,
    package_uri: N,
    open_package: O,
    close_package: C,
    manifests: Option<Box<StoreManifest>>,
    limits: DumpLimits,
    options: PackageOptions,
    intervals: bool,
    current: Option<Open<W>>,
    document: Document,
    /// The `from` of the next package of a Change Dump.
    next_from: Option<W3cDateTime>,
    /// The changes of a Change Dump, across its packages.
    order: ChangeOrder,
}

impl<N, O, C, W: Write> std::fmt::Debug for DumpBuilder<N, O, C, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DumpBuilder")
            .field("kind", &self.head.kind())
            .field("packages", &self.document.entries.len())
            .field("open", &self.current.as_ref().map(|open| &open.writer))
            .field("limits", &self.limits)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<N, O, C, W> DumpBuilder<N, O, C, W>
where
    N: FnMut(usize) -> Result<Uri, UriError>,
    O: FnMut(&Uri) -> io::Result<W>,
    C: FnMut(&Uri, W) -> io::Result<()>,
    W: Write,
{
    /// Starts a dump. `package_uri(n)` names the `n`th package (from 1); `open_package`
    /// gives the writer a package is streamed into and `close_package` takes it back when
    /// the package is complete. Fails unless the head is a Resource Dump or Change Dump.
    pub fn new(
        head: DocumentHead,
        package_uri: N,
        open_package: O,
        close_package: C,
        limits: DumpLimits,
        options: PackageOptions,
    ) -> Result<DumpBuilder<N, O, C, W>, PackageError> {
        let intervals = match head.kind() {
            DocumentKind::ResourceDump => false,
            DocumentKind::ChangeDump => true,
            other => {
                return Err(Misuse::DumpKind { kind: other }.into());
            }
        };
        Ok(DumpBuilder {
            next_from: head.md.from,
            document: Document::new(head.clone()),
            head,
            package_uri,
            open_package,
            close_package,
            manifests: None,
            limits,
            options,
            intervals,
            current: None,
            order: ChangeOrder::new(),
        })
    }

    /// Stores a copy of each package's manifest through `store(n, package_uri, xml)`,
    /// which returns the copy's URI, and links it from the package's entry with
    /// `rel="contents"`.
    pub fn with_manifest_copies(
        mut self,
        store: impl FnMut(usize, &Uri, &[u8]) -> io::Result<Uri> + 'static,
    ) -> Self {
        self.manifests = Some(Box::new(store));
        self
    }

    /// The head of the manifest of a package: the dump's `up` link and times.
    fn manifest_head(&self, from: Option<W3cDateTime>) -> DocumentHead {
        let kind = if self.intervals {
            DocumentKind::ChangeDumpManifest
        } else {
            DocumentKind::ResourceDumpManifest
        };
        let mut head = DocumentHead::of_kind(kind);
        head.links = self
            .head
            .links
            .iter()
            .filter(|l| l.rel == Relation::Up)
            .cloned()
            .collect();
        if self.intervals {
            head.md.from = from;
        } else {
            head.md.at = self.head.md.at;
            head.md.completed = self.head.md.completed;
        }
        head
    }

    /// Starts the next package.
    fn open(&mut self) -> Result<Open<W>, PackageError> {
        let n = self.document.entries.len() + 1;
        let uri =
            (self.package_uri)(n).map_err(|reason| Misuse::PackageUri { number: n, reason })?;
        let from = self.next_from;
        let sink = (self.open_package)(&uri)?;
        let writer = PackageWriter::new(sink, self.manifest_head(from), self.options)?;
        Ok(Open {
            writer,
            uri,
            content: 0,
            from,
        })
    }

    /// Closes the current package, its interval ending at `until`.
    fn close(&mut self, until: Option<W3cDateTime>) -> Result<(), PackageError> {
        let Some(mut open) = self.current.take() else {
            return Ok(());
        };
        if self.intervals {
            open.writer.set_until(until);
        }
        let (sink, info) = open.writer.finish()?;
        (self.close_package)(&open.uri, sink)?;
        let n = self.document.entries.len() + 1;
        let entry = self.entry(n, &open.uri, &info, open.from, until)?;
        self.document.entries.push(entry);
        Ok(())
    }

    fn entry(
        &mut self,
        n: usize,
        uri: &Uri,
        info: &PackageInfo,
        from: Option<W3cDateTime>,
        until: Option<W3cDateTime>,
    ) -> Result<Entry, PackageError> {
        let mut entry = Entry::new(uri.clone());
        let md = entry.md_mut();
        // A valid media type: parsing cannot fail.
        md.media_type = "application/zip".parse().ok();
        md.length = Some(info.digests.length);
        md.hash = Some(info.digests.hashes());
        if self.intervals {
            (md.from, md.until) = (from, until);
        } else {
            (md.at, md.completed) = (self.head.md.at, self.head.md.completed);
        }
        if let Some(store) = &mut self.manifests {
            let xml = resourcesync_xml::write_document(Vec::new(), &info.manifest)
                .map_err(PackageError::ManifestWrite)?
                .output;
            let href = store(n, uri, &xml)?;
            let mut link = Link::new(Relation::Contents, href);
            link.media_type = "application/xml".parse().ok();
            entry.links.push(link);
        }
        Ok(entry)
    }

    /// Adds a bitstream, starting a new package first if this one would go over a limit,
    /// and returns its length.
    /// `length_hint`, if known, lets the package close before the bitstream rather than
    /// after it.
    pub fn add(&mut self, bitstream: Bitstream, content: impl Read) -> Result<u64, PackageError> {
        self.add_sized(bitstream, content, None)
    }

    /// [`add`](Self::add) with the content's length known beforehand.
    pub fn add_sized(
        &mut self,
        bitstream: Bitstream,
        content: impl Read,
        length_hint: Option<u64>,
    ) -> Result<u64, PackageError> {
        let time = bitstream.datetime;
        let open = self.before(time.as_ref(), length_hint.unwrap_or(0))?;
        let length = open.writer.add(bitstream, content)?;
        open.content += length;
        self.after(time);
        Ok(length)
    }

    /// Adds a deletion to a Change Dump (no bitstream).
    pub fn add_deleted(
        &mut self,
        loc: Uri,
        datetime: Option<W3cDateTime>,
    ) -> Result<Entry, PackageError> {
        let open = self.before(datetime.as_ref(), 0)?;
        let entry = open.writer.add_deleted(loc, datetime)?;
        self.after(datetime);
        Ok(entry)
    }

    /// Checks order, and closes and opens packages as the limits require; returns the
    /// package the next entry goes into.
    fn before(
        &mut self,
        time: Option<&W3cDateTime>,
        hint: u64,
    ) -> Result<&mut Open<W>, PackageError> {
        if self.intervals {
            self.order.check(time)?;
        }
        let full = self.current.as_ref().is_some_and(|open| {
            open.writer.entries() >= self.limits.max_entries
                || (open.writer.entries() > 0
                    && open.content.saturating_add(hint) > self.limits.max_bytes)
                || open.content >= self.limits.max_bytes
        });
        if full {
            let until = if self.intervals {
                time.or(self.order.last()).cloned()
            } else {
                None
            };
            self.next_from = until;
            self.close(until)?;
        }
        let open = match self.current.take() {
            Some(open) => open,
            None => self.open()?,
        };
        Ok(self.current.insert(open))
    }

    fn after(&mut self, time: Option<W3cDateTime>) {
        self.order.record(time.as_ref());
    }

    /// Closes the last package and returns the dump document listing every package.
    pub fn finish(mut self) -> Result<Document, PackageError> {
        let until = self.head.md.until;
        self.close(until)?;
        Ok(self.document)
    }
}
