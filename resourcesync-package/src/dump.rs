//! Building a Resource Dump or Change Dump: bitstreams split into as many packages as the
//! limits require, and the dump document that lists them.

use std::io::{self, Read, Write};

use resourcesync_model::{
    Checker, Document, DocumentHead, DocumentKind, Entry, Finding, Link, MAX_ENTRIES, Relation,
    Uri, UriError, W3cDateTime,
};

use crate::writer::{
    Bitstream, PackageInfo, PackageOptions, PackageWriter, check_first_entry, check_next_entry,
    deleted_entry, refused,
};
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
type StoreManifest<'a> = dyn FnMut(usize, &Uri, &[u8]) -> io::Result<Uri> + 'a;

/// Where a dump built by [`DumpBuilder::in_store`] puts its files: its packages, the
/// copies of their manifests and the dump document, each at a URI the store makes of a
/// name relative to itself. A Source publishing into a directory served at a base URI
/// implements it (`resourcesync_source::Directory`, which maps each URI to its file and
/// writes it atomically); this crate names no file system.
///
/// The builder relies on what each method promises: a client that read an earlier dump
/// document must never find a package its entry does not describe, nor half a document.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation, Uri};
/// use resourcesync_package::{
///     Bitstream, DumpBuilder, DumpLimits, DumpStore, Misuse, PackageError, PackageOptions,
/// };
///
/// /// Files in memory, under `http://example.com/`.
/// #[derive(Default)]
/// struct Memory(BTreeMap<String, Vec<u8>>);
///
/// impl DumpStore for &mut Memory {
///     type Package = Vec<u8>;
///     fn uri(&self, name: &str) -> Result<Uri, PackageError> {
///         format!("http://example.com/{name}").parse().map_err(PackageError::store)
///     }
///     fn create_package(&mut self, uri: &Uri) -> Result<Vec<u8>, PackageError> {
///         match self.0.contains_key(uri.as_str()) {
///             true => Err(Misuse::TargetExists(uri.as_str().into()).into()),
///             false => Ok(Vec::new()),
///         }
///     }
///     fn persist_package(&mut self, uri: &Uri, zip: Vec<u8>) -> Result<(), PackageError> {
///         self.store_document(uri, &zip)
///     }
///     fn store_document(&mut self, uri: &Uri, bytes: &[u8]) -> Result<(), PackageError> {
///         self.0.insert(uri.to_string(), bytes.to_vec());
///         Ok(())
///     }
/// }
///
/// let head = DocumentHead::of_kind(DocumentKind::ResourceDump)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut files = Memory::default();
/// let mut dump = DumpBuilder::in_store(
///     head, &mut files, "resourcedump", DumpLimits::new(u64::MAX, 1), PackageOptions::default(),
/// )?;
/// for i in 1..=2 {
///     let b = Bitstream::new(format!("http://example.com/res{i}").parse()?, format!("/res{i}").into());
///     dump.add(b, &b"content"[..])?;
/// }
/// let dump = dump.finish()?;
/// assert_eq!(dump.written.unwrap().as_str(), "http://example.com/resourcedump.xml");
/// assert_eq!(files.0.keys().collect::<Vec<_>>(), [
///     "http://example.com/resourcedump-00001-manifest.xml",
///     "http://example.com/resourcedump-00001.zip",
///     "http://example.com/resourcedump-00002-manifest.xml",
///     "http://example.com/resourcedump-00002.zip",
///     "http://example.com/resourcedump.xml",
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait DumpStore {
    /// What a package is written into until it is complete.
    type Package: Write;

    /// The URI of the file `name`, a name relative to the store written as it stands in a
    /// URI (`resourcedump-00001.zip`, `dumps/resourcedump.xml`). A name that makes no URI
    /// the store could hold a file at is refused.
    fn uri(&self, name: &str) -> Result<Uri, PackageError>;

    /// Starts the package to be published at `uri`, from [`uri`](DumpStore::uri): what it
    /// is written into until [`persist_package`](DumpStore::persist_package). Nothing is
    /// published yet. A package that exists at `uri` is refused now, before anything is
    /// written ([`Misuse::TargetExists`](crate::Misuse::TargetExists)): packages are never
    /// replaced.
    fn create_package(&mut self, uri: &Uri) -> Result<Self::Package, PackageError>;

    /// Publishes a complete package at `uri`, atomically (a reader finds the whole package
    /// or none), and never over a package that appeared there meanwhile
    /// ([`Misuse::TargetExists`](crate::Misuse::TargetExists)). On error nothing of it is
    /// left.
    fn persist_package(&mut self, uri: &Uri, package: Self::Package) -> Result<(), PackageError>;

    /// Publishes a document, a manifest copy or the dump document, at `uri`, replacing
    /// what is there atomically: a reader finds the old document or the new one, never
    /// part of one.
    fn store_document(&mut self, uri: &Uri, document: &[u8]) -> Result<(), PackageError>;
}

/// Where the packages go: the caller's sinks, or a [`DumpStore`].
enum Destination<'a, N, O, C, W> {
    Sinks {
        package_uri: N,
        open_package: O,
        close_package: C,
    },
    Store {
        /// A trait object, so that the builder's type does not name the store's.
        store: Box<dyn DumpStore<Package = W> + 'a>,
        /// The dump's name: `{name}.xml`, `{name}-00001.zip`, `{name}-00001-manifest.xml`.
        name: String,
    },
}

/// The type of a [`DumpBuilder`] that writes into a [`DumpStore`] whose packages are
/// written into `W` ([`DumpBuilder::in_store`]).
pub type StoreDumpBuilder<'a, W> = DumpBuilder<
    'a,
    fn(usize) -> Result<Uri, UriError>,
    fn(&Uri) -> io::Result<W>,
    fn(&Uri, W) -> io::Result<()>,
    W,
>;

/// The package being filled.
struct Open<W: Write> {
    writer: PackageWriter<W>,
    uri: Uri,
    content: u64,
    from: Option<W3cDateTime>,
}

/// What [`DumpBuilder::finish`] returns: the dump document and what the model's
/// [`Checker`] found in it and in each package's manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DumpInfo {
    /// The Resource Dump or Change Dump that lists every package.
    pub document: Document,
    /// The findings of the dump document: warnings, and errors only when
    /// [`refuse_errors`](PackageOptions::refuse_errors) is off.
    pub findings: Vec<Finding>,
    /// Each package's URI and the findings of its manifest
    /// ([`PackageInfo::findings`]), in the dump's order.
    pub manifest_findings: Vec<(Uri, Vec<Finding>)>,
    /// In a store ([`DumpBuilder::in_store`]): the URI the dump document was stored at.
    pub written: Option<Uri>,
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
/// `contents` link to a copy of its package's manifest, stored through a second sink. The
/// sinks may borrow what the caller owns, for the builder's lifetime `'a`.
///
/// Packages of a Resource Dump carry the dump's `at` and `completed`. Packages of a Change
/// Dump cover contiguous intervals like the parts of a Change List: the first starts at the
/// dump's `from`, each later one where the one before ends, at the `datetime` of the last
/// change before it; the last ends at the dump's `until`, or is open.
///
/// It checks what a reader checks, as [`PackageWriter`] does: the model's [`Checker`] runs
/// on each package's manifest and on the dump document. An entry that would break a rule
/// of severity error is refused by [`add`](DumpBuilder::add) before anything of it is
/// written, and the dump is left as it was; that includes a change before an earlier one,
/// in its package or in an earlier package (whose end is the next one's start, so that the
/// change would lie outside its package's interval). A package whose URI would be an
/// error is refused before it is opened. An error of the dump document known only when a
/// package is complete (its manifest copy's URI) is refused then: the package is not handed
/// to `close_package`, and the builder should be dropped.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation, Uri};
/// use resourcesync_package::{Bitstream, DumpBuilder, DumpLimits, PackageOptions};
///
/// let head = DocumentHead::of_kind(DocumentKind::ResourceDump)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
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
///     let mut b = Bitstream::new(format!("http://example.com/res{i}").parse()?, format!("/res{i}").into());
///     b.media_type = Some("text/plain".parse()?);
///     dump.add(b, &b"content"[..])?;
/// }
/// let dump = dump.finish()?;
/// assert_eq!(dump.document.head.kind(), DocumentKind::ResourceDump);
/// assert_eq!(dump.document.entries.len(), 3);
/// assert!(dump.findings.is_empty());
/// assert!(dump.manifest_findings.iter().all(|(_, findings)| findings.is_empty()));
/// assert_eq!(packages.len(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "the dump document is returned only by `finish`, which also closes the last package"]
pub struct DumpBuilder<'a, N, O, C, W: Write> {
    head: DocumentHead,
    destination: Destination<'a, N, O, C, W>,
    manifests: Option<Box<StoreManifest<'a>>>,
    limits: DumpLimits,
    options: PackageOptions,
    intervals: bool,
    current: Option<Open<W>>,
    document: Document,
    /// The checker of the dump document, which has seen its head and every package's
    /// entry, and what it found.
    checker: Checker,
    findings: Vec<Finding>,
    manifest_findings: Vec<(Uri, Vec<Finding>)>,
    /// The `from` of the next package of a Change Dump.
    next_from: Option<W3cDateTime>,
    /// The `datetime` of the last change taken that had one, across packages: where a
    /// package of a Change Dump ends when it is full.
    last_change: Option<W3cDateTime>,
}

impl<N, O, C, W: Write> std::fmt::Debug for DumpBuilder<'_, N, O, C, W> {
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

impl<'a, N, O, C, W> DumpBuilder<'a, N, O, C, W>
where
    N: FnMut(usize) -> Result<Uri, UriError>,
    O: FnMut(&Uri) -> io::Result<W>,
    C: FnMut(&Uri, W) -> io::Result<()>,
    W: Write,
{
    /// Starts a dump. `package_uri(n)` names the `n`th package (from 1); `open_package`
    /// gives the writer a package is streamed into and `close_package` takes it back when
    /// the package is complete. Fails unless the head is a Resource Dump or Change Dump,
    /// and for a head that breaks a rule of severity error (no `up` link, no `at` or
    /// `from`, …) unless [`PackageOptions::refuse_errors`] is off.
    pub fn new(
        head: DocumentHead,
        package_uri: N,
        open_package: O,
        close_package: C,
        limits: DumpLimits,
        options: PackageOptions,
    ) -> Result<DumpBuilder<'a, N, O, C, W>, PackageError> {
        let destination = Destination::Sinks {
            package_uri,
            open_package,
            close_package,
        };
        DumpBuilder::with_destination(head, destination, limits, options)
    }

    /// [`new`](Self::new) with packages going to `destination`.
    fn with_destination(
        head: DocumentHead,
        destination: Destination<'a, N, O, C, W>,
        limits: DumpLimits,
        options: PackageOptions,
    ) -> Result<DumpBuilder<'a, N, O, C, W>, PackageError> {
        let intervals = match head.kind() {
            DocumentKind::ResourceDump => false,
            DocumentKind::ChangeDump => true,
            other => {
                return Err(Misuse::DumpKind { kind: other }.into());
            }
        };
        let (checker, findings) = crate::writer::check_head(&head, &options)?;
        Ok(DumpBuilder {
            next_from: head.md.from,
            last_change: None,
            document: Document::new(head.clone()),
            head,
            destination,
            manifests: None,
            limits,
            options,
            intervals,
            current: None,
            checker,
            findings,
            manifest_findings: Vec::new(),
        })
    }

    /// Stores a copy of each package's manifest through `store(n, package_uri, xml)`,
    /// which returns the copy's URI, and links it from the package's entry with
    /// `rel="contents"`. `store` may borrow what outlives the builder.
    ///
    /// ```
    /// # use std::collections::BTreeMap;
    /// # use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation, Uri};
    /// # use resourcesync_package::{Bitstream, DumpBuilder, DumpLimits, PackageOptions};
    /// # let head = DocumentHead::of_kind(DocumentKind::ResourceDump)
    /// #     .with_at("2013-01-03T09:00:00Z".parse()?)
    /// #     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
    /// let mut copies = BTreeMap::new();
    /// let mut dump = DumpBuilder::new(
    ///     head,
    ///     |n| format!("http://example.com/part{n}.zip").parse(),
    ///     |_: &Uri| Ok(Vec::new()),
    ///     |_: &Uri, _: Vec<u8>| Ok(()),
    ///     DumpLimits::default(),
    ///     PackageOptions::default(),
    /// )?
    /// .with_manifest_copies(|n, _, xml| {
    ///     let uri = format!("http://example.com/part{n}-manifest.xml");
    ///     copies.insert(uri.clone(), xml.to_vec());
    ///     uri.parse().map_err(std::io::Error::other)
    /// });
    /// dump.add(Bitstream::new("http://example.com/res1".parse()?, "/res1".into()), &b"hi"[..])?;
    /// let dump = dump.finish()?;
    /// assert_eq!(dump.document.entries[0].links[0].href.as_str(), "http://example.com/part1-manifest.xml");
    /// assert!(copies.contains_key("http://example.com/part1-manifest.xml"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_manifest_copies(
        mut self,
        store: impl FnMut(usize, &Uri, &[u8]) -> io::Result<Uri> + 'a,
    ) -> Self {
        self.manifests = Some(Box::new(store));
        self
    }

    /// The head of the manifest of a package starting at `from`: the dump's `up` link and
    /// times. A Change Dump Manifest's `until` is the dump's until the package is
    /// complete, so that a change after the dump's `until` is refused when it is added.
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
            (head.md.from, head.md.until) = (from, self.head.md.until);
        } else {
            (head.md.at, head.md.completed) = (self.head.md.at, self.head.md.completed);
        }
        head
    }

    /// Closes the current package, its interval ending at `until`.
    fn close(&mut self, until: Option<W3cDateTime>) -> Result<(), PackageError> {
        let Some(mut open) = self.current.take() else {
            return Ok(());
        };
        if self.intervals {
            open.writer.set_until(until)?;
        }
        let (sink, info) = open.writer.finish()?;
        let n = self.document.entries.len() + 1;
        let entry = self.entry(n, &open.uri, &info, open.from, until)?;
        check_next_entry(
            &mut self.checker,
            &self.document,
            &entry,
            &mut self.findings,
            &self.options,
        )?;
        match &mut self.destination {
            Destination::Sinks { close_package, .. } => close_package(&open.uri, sink)?,
            Destination::Store { store, .. } => store.persist_package(&open.uri, sink)?,
        }
        self.document.entries.push(entry);
        self.manifest_findings.push((open.uri, info.findings));
        Ok(())
    }

    /// The dump's entry of a complete package, with its fixity and the link to its
    /// manifest's copy, stored here.
    fn entry(
        &mut self,
        n: usize,
        uri: &Uri,
        info: &PackageInfo,
        from: Option<W3cDateTime>,
        until: Option<W3cDateTime>,
    ) -> Result<Entry, PackageError> {
        let mut entry = self.entry_head(uri, from, until);
        let md = entry.md_mut();
        md.length = Some(info.digests.length);
        md.hash = Some(info.digests.hashes());
        let xml = || {
            resourcesync_xml::write_document(Vec::new(), &info.manifest)
                .map(|written| written.output)
                .map_err(PackageError::ManifestWrite)
        };
        let href = match (&mut self.manifests, &mut self.destination) {
            (None, Destination::Sinks { .. }) => return Ok(entry),
            (Some(store), _) => store(n, uri, &xml()?)?,
            (None, Destination::Store { store, name }) => {
                let href = store.uri(&format!("{name}-{n:05}-manifest.xml"))?;
                store.store_document(&href, &xml()?)?;
                href
            }
        };
        let mut link = Link::new(Relation::Contents, href);
        link.media_type = "application/xml".parse().ok();
        entry.links.push(link);
        Ok(entry)
    }

    /// The dump's entry of a package but its length, hashes and manifest copy.
    fn entry_head(
        &self,
        uri: &Uri,
        from: Option<W3cDateTime>,
        until: Option<W3cDateTime>,
    ) -> Entry {
        let mut entry = Entry::new(uri.clone());
        let md = entry.md_mut();
        // A valid media type: parsing cannot fail.
        md.media_type = "application/zip".parse().ok();
        if self.intervals {
            (md.from, md.until) = (from, until);
        } else {
            (md.at, md.completed) = (self.head.md.at, self.head.md.completed);
        }
        entry
    }

    /// Adds a bitstream, starting a new package first if this one would go over a limit,
    /// and returns its length. Refused, leaving the dump as it was, for what
    /// [`PackageWriter::add`] refuses, and for a change before the last one of the package
    /// before (section 13.2 of the manifests, each package's interval of section 13.1).
    pub fn add(&mut self, bitstream: Bitstream, content: impl Read) -> Result<u64, PackageError> {
        self.add_sized(bitstream, content, None)
    }

    /// [`add`](Self::add) with the content's length known beforehand: `length_hint` lets
    /// the package close before the bitstream rather than after it.
    pub fn add_sized(
        &mut self,
        bitstream: Bitstream,
        content: impl Read,
        length_hint: Option<u64>,
    ) -> Result<u64, PackageError> {
        let (entry, path, compression) = bitstream.into_entry();
        let time = entry.md.as_ref().and_then(|md| md.datetime);
        let open = self.before(&entry, length_hint.unwrap_or(0))?;
        let length = open.writer.add_entry(entry, &path, compression, content)?;
        open.content += length;
        self.last_change = time.or(self.last_change);
        Ok(length)
    }

    /// Adds a deletion to a Change Dump (no bitstream); see
    /// [`PackageWriter::add_deleted`].
    pub fn add_deleted(
        &mut self,
        loc: Uri,
        datetime: Option<W3cDateTime>,
    ) -> Result<Entry, PackageError> {
        let entry = deleted_entry(loc, datetime);
        let open = self.before(&entry, 0)?;
        let entry = open.writer.add_deleted_entry(entry)?;
        self.last_change = datetime.or(self.last_change);
        Ok(entry)
    }

    /// Returns the package `entry` goes into: the current one, or, if it would go over a
    /// limit or there is none, a new one. A new package is started only once `entry` has
    /// been checked as its first entry and its URI as the dump's next entry, so that a
    /// refused entry leaves no empty package behind and the full one open.
    fn before(&mut self, entry: &Entry, hint: u64) -> Result<&mut Open<W>, PackageError> {
        let full = self.current.as_ref().is_some_and(|open| {
            let entries = open.writer.manifest_entries();
            entries >= self.limits.max_entries
                || (entries > 0 && open.content.saturating_add(hint) > self.limits.max_bytes)
                || open.content >= self.limits.max_bytes
        });
        // Taken and put back: returning a borrow of `current` from inside an `if let` on
        // it would keep it borrowed for the rest of the function.
        if let Some(open) = self.current.take_if(|_| !full) {
            return Ok(self.current.insert(open));
        }
        // A full package of a Change Dump ends at its last change, where the next starts.
        let from = match &self.current {
            Some(open) if self.intervals => self.last_change.or(open.from),
            _ => self.next_from,
        };
        let head = self.manifest_head(from);
        check_first_entry(&head, entry, &self.options)?;
        let n = self.document.entries.len() + 1 + usize::from(self.current.is_some());
        let uri = match &mut self.destination {
            Destination::Sinks { package_uri, .. } => {
                package_uri(n).map_err(|reason| Misuse::PackageUri { number: n, reason })?
            }
            Destination::Store { store, name } => store.uri(&format!("{name}-{n:05}.zip"))?,
        };
        let mut checker = self.checker.clone();
        let mut findings = Vec::new();
        checker.check_entry(&self.entry_head(&uri, from, None), &mut findings);
        if let Some(errors) = refused(&findings, &self.options) {
            return Err(Misuse::BreaksRule {
                document: self.head.kind(),
                loc: Some(uri),
                errors,
            }
            .into());
        }
        if self.current.is_some() {
            self.close(from)?;
        }
        self.next_from = from;
        let sink = match &mut self.destination {
            Destination::Sinks { open_package, .. } => open_package(&uri)?,
            Destination::Store { store, .. } => store.create_package(&uri)?,
        };
        let writer = PackageWriter::new(sink, head, self.options)?;
        Ok(self.current.insert(Open {
            writer,
            uri,
            content: 0,
            from,
        }))
    }

    /// Closes the last package and returns the dump document listing every package, with
    /// the findings of the dump and of each package's manifest.
    pub fn finish(mut self) -> Result<DumpInfo, PackageError> {
        let until = self.head.md.until;
        self.close(until)?;
        let start = self.findings.len();
        self.checker.finish(&mut self.findings);
        if let Some(errors) = refused(&self.findings[start..], &self.options) {
            return Err(Misuse::BreaksRule {
                document: self.head.kind(),
                loc: None,
                errors,
            }
            .into());
        }
        let written = match &mut self.destination {
            Destination::Store { store, name } => {
                let xml = resourcesync_xml::write_document(Vec::new(), &self.document)
                    .map_err(PackageError::ManifestWrite)?
                    .output;
                let uri = store.uri(&format!("{name}.xml"))?;
                store.store_document(&uri, &xml)?;
                Some(uri)
            }
            Destination::Sinks { .. } => None,
        };
        Ok(DumpInfo {
            document: self.document,
            findings: self.findings,
            manifest_findings: self.manifest_findings,
            written,
        })
    }
}

impl<'a, W: Write> StoreDumpBuilder<'a, W> {
    /// Starts a dump written into `store` under the name `name`: the packages are
    /// `{name}-00001.zip`, `{name}-00002.zip`, …, each with a copy of its manifest,
    /// `{name}-00001-manifest.xml`, linked from its entry with `rel="contents"`;
    /// [`finish`](DumpBuilder::finish) stores the dump document, `{name}.xml`, and returns
    /// its URI in [`DumpInfo::written`]. The store makes each name a URI
    /// ([`DumpStore::uri`]), so the caller writes no such mapping.
    ///
    /// A package is written into the store's sink and published when it is complete,
    /// never over a package that exists ([`Misuse::TargetExists`](crate::Misuse::TargetExists)):
    /// a client that read an earlier dump document must not find a package its entry does
    /// not describe. The manifest copies and the dump document replace what is at their
    /// URIs atomically ([`DumpStore::store_document`]), the dump document last, once every
    /// package it lists is in place. A name that makes no URI in the store is refused
    /// here; otherwise as [`new`](DumpBuilder::new). A store given to
    /// [`with_manifest_copies`](DumpBuilder::with_manifest_copies) takes the manifest
    /// copies instead of `store`. See [`DumpStore`] for an example.
    pub fn in_store<S>(
        head: DocumentHead,
        store: S,
        name: &str,
        limits: DumpLimits,
        options: PackageOptions,
    ) -> Result<StoreDumpBuilder<'a, W>, PackageError>
    where
        S: DumpStore<Package = W> + 'a,
    {
        store.uri(&format!("{name}.xml"))?;
        let destination = Destination::Store {
            store: Box::new(store),
            name: name.to_owned(),
        };
        DumpBuilder::with_destination(head, destination, limits, options)
    }
}
