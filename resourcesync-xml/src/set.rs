//! Publishing a set of any size: as many documents as the limits require, and the index
//! over them.

use std::io;
use std::ops::Range;
use std::sync::Arc;

use resourcesync_model::{
    DocumentHead, DocumentKind, Entry, Link, MAX_BYTES, MAX_ENTRIES, Md, Relation, Root, Uri,
    UriError, W3cDateTime,
};

use crate::error::WriteError;
use crate::writer::{Checking, WriteOptions, Writer, Written, WrittenDocument};

/// Limits of one published document.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetLimits {
    /// Entries per document, at most the Sitemap protocol's 50,000 (the default).
    pub max_entries: u64,
    /// Bytes per document, at most the Sitemap protocol's 52,428,800 (the default).
    pub max_bytes: u64,
}

impl Default for SetLimits {
    fn default() -> Self {
        SetLimits {
            max_entries: MAX_ENTRIES,
            max_bytes: MAX_BYTES,
        }
    }
}

impl SetLimits {
    /// Limits of `max_entries` entries and `max_bytes` bytes per document; values above
    /// the Sitemap protocol's are lowered to them.
    pub fn new(max_entries: u64, max_bytes: u64) -> SetLimits {
        SetLimits {
            max_entries: max_entries.min(MAX_ENTRIES),
            max_bytes: max_bytes.min(MAX_BYTES),
        }
    }
}

/// Which documents of a set are gzip-compressed (`.xml.gz`, as the Sitemap protocol
/// allows). Limits count the bytes before compression, as readers do; readers
/// decompress by content, whatever the name.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Entry, Link, Relation, Uri};
/// use resourcesync_xml::{Gzip, SetLimits, SetOptions, SetWriter, read_document};
///
/// let head = DocumentHead::of_kind(DocumentKind::ResourceList)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut stored = BTreeMap::new();
/// let store = (
///     |n: usize| format!("http://example.com/resourcelist-{n:05}.xml.gz").parse::<Uri>(),
///     |uri: &Uri, document: &[u8]| {
///         stored.insert(uri.to_string(), document.to_vec());
///         Ok(())
///     },
/// );
/// let options = SetOptions::default()
///     .with_limits(SetLimits::new(2, 52_428_800))
///     .with_gzip(Gzip::Parts);
/// assert!(options.gzip_parts() && !options.gzip_set());
/// let uri = "http://example.com/resourcelist.xml".parse()?;
/// let mut set = SetWriter::with_store(head, uri, store, options)?;
/// for i in 0..3 {
///     set.write_entry(&Entry::new(format!("http://example.com/res{i}").parse()?))?;
/// }
/// let names: Vec<String> = set.finish()?.output.documents.iter().map(|u| u.to_string()).collect();
/// assert_eq!(names, [
///     "http://example.com/resourcelist-00001.xml.gz",
///     "http://example.com/resourcelist-00002.xml.gz",
///     "http://example.com/resourcelist.xml",
/// ]);
/// let gz = &stored["http://example.com/resourcelist-00002.xml.gz"];
/// assert_eq!(gz[..2], [0x1f, 0x8b]);
/// let (part, _) = read_document(gz)?;
/// assert_eq!(part.entries.len(), 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[cfg(feature = "gzip")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Gzip {
    /// None (the default).
    #[default]
    Never,
    /// The parts of a set that needs an index; the index, or a set that fits in one
    /// document, stays plain XML.
    Parts,
    /// Every document: the parts, the index, and a set that fits in one document.
    All,
}

/// How a [`SetWriter`] writes: its limits, its checking and its compression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetOptions {
    /// The limits of one document.
    pub limits: SetLimits,
    /// The standard's rules; errors are refused by default, since a set is published.
    pub write: WriteOptions,
    /// Which documents are gzip-compressed.
    #[cfg(feature = "gzip")]
    pub gzip: Gzip,
}

impl Default for SetOptions {
    fn default() -> Self {
        SetOptions {
            limits: SetLimits::default(),
            write: WriteOptions::default().with_refuse_errors(true),
            #[cfg(feature = "gzip")]
            gzip: Gzip::Never,
        }
    }
}

impl SetOptions {
    /// These options, with these limits.
    pub fn with_limits(mut self, limits: SetLimits) -> SetOptions {
        self.limits = limits;
        self
    }

    /// These options, with these write options (to report errors instead of refusing
    /// them, say).
    pub fn with_write(mut self, write: WriteOptions) -> SetOptions {
        self.write = write;
        self
    }

    /// These options, compressing these documents.
    #[cfg(feature = "gzip")]
    pub fn with_gzip(mut self, gzip: Gzip) -> SetOptions {
        self.gzip = gzip;
        self
    }

    /// Whether the parts of a set that needs an index are gzip-compressed: what a
    /// [`SetStore`] names them after (`.xml.gz`). Always false without the `gzip` feature.
    pub fn gzip_parts(&self) -> bool {
        #[cfg(feature = "gzip")]
        return matches!(self.gzip, Gzip::Parts | Gzip::All);
        #[cfg(not(feature = "gzip"))]
        false
    }

    /// Whether the set's own document, the index or the one document of a set that fits,
    /// is gzip-compressed. Always false without the `gzip` feature.
    pub fn gzip_set(&self) -> bool {
        #[cfg(feature = "gzip")]
        return matches!(self.gzip, Gzip::All);
        #[cfg(not(feature = "gzip"))]
        false
    }

    /// Whether parts, and the index or single document, are compressed.
    fn compressed(&self) -> (bool, bool) {
        (self.gzip_parts(), self.gzip_set())
    }
}

/// Where a [`SetWriter`] puts a set: the URIs of its parts, and the storage of each
/// finished document.
///
/// Implemented for a pair of closures (part number to URI, and URI and bytes to storage;
/// see [`SetWriter::new`]); the Source's crate implements it for the files of a directory
/// served at a base URI (`resourcesync_source::DirectoryStore`). An error of the store's
/// own is [`WriteError::Store`].
pub trait SetStore {
    /// The URI of part `number`, counted from 1.
    fn part_uri(&mut self, number: usize) -> Result<Uri, WriteError>;
    /// Stores a finished document, as it is to be served, under its URI.
    fn store(&mut self, uri: &Uri, document: &[u8]) -> Result<(), WriteError>;
    /// Stores a finished document given in pieces, one after the other: a part's head, its
    /// entries and its end, so that a part of many megabytes is not copied into one buffer
    /// first. By default they are joined and given to [`store`](SetStore::store).
    fn store_pieces(&mut self, uri: &Uri, pieces: &[&[u8]]) -> Result<(), WriteError> {
        self.store(uri, &pieces.concat())
    }
}

impl<N, S> SetStore for (N, S)
where
    N: FnMut(usize) -> Result<Uri, UriError>,
    S: FnMut(&Uri, &[u8]) -> io::Result<()>,
{
    fn part_uri(&mut self, number: usize) -> Result<Uri, WriteError> {
        (self.0)(number).map_err(|e| WriteError::Invalid(format!("part {number}: {e}")))
    }

    fn store(&mut self, uri: &Uri, document: &[u8]) -> Result<(), WriteError> {
        Ok((self.1)(uri, document)?)
    }
}

/// What a finished set wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetSummary {
    /// The set's URI, where a reader starts: the one document, or the index.
    pub uri: Uri,
    /// The URIs of the documents written, in order: one document at the set's URI when
    /// everything fitted in one, else the parts and then the index at the set's URI.
    pub documents: Vec<Uri>,
    /// Entries written, over all parts.
    pub entries: u64,
}

/// A part being filled: its entries, and the times its head will carry.
struct Part {
    /// The entries written here (serialized, or copied), in the order `pieces` gives.
    owned: Vec<u8>,
    /// Its entries in order: stretches of `owned`, and stretches of documents written
    /// before, held rather than copied until the part is stored.
    pieces: Vec<Piece>,
    /// Bytes of its entries.
    bytes: u64,
    entries: u64,
    from: Option<W3cDateTime>,
    /// The longest datetime text its head may need, for the byte limit.
    longest_time: usize,
}

/// Writes a Resource List, Resource Dump, Change List or Change Dump of any size as as
/// many documents as the limits require (entries and bytes), and the index over them.
///
/// Give it the set's head (root `urlset`, the capability, `at`/`completed` or
/// `from`/`until`, and the `up` link), the URI where the set is published, and where to
/// put its documents: a part-naming function and a sink ([`new`](SetWriter::new)), or any
/// [`SetStore`] ([`with_store`](SetWriter::with_store)). Then write the entries in order and
/// [`finish`](SetWriter::finish).
///
/// - If every entry fits in one document, that document is stored at the set's URI, with
///   no index.
/// - Otherwise each part is stored under the store's URI for it, with an `index` link to
///   the set's URI, and the index (a `<sitemapindex>` with the same capability) at the
///   set's URI.
/// - Parts of a Resource List or Resource Dump carry the set's `at` and `completed`, and
///   so do their index entries. Parts of a Change List or Change Dump cover contiguous
///   intervals: the first part starts at the set's `from`, each later part at the latest
///   `datetime` (or, in a dump, `from`) written before it, where the part before it ends
///   (`until`); the last part ends at the set's `until` or stays open.
///
/// The entries are checked as one document by the model's [`resourcesync_model::Checker`], the one a
/// [`Reader`](crate::Reader) runs, and by default what breaks a rule of the standard is
/// refused ([`SetOptions::write`]): the head by the constructor, an entry by
/// [`write_entry`](SetWriter::write_entry) with its number (the set goes on without it;
/// an entry out of forward chronological order in a Change List, say), the end by
/// `finish`, before the last part and the index are stored. The entry limit of one
/// document ([`resourcesync_model::Rule::MaxEntries`]) is kept by splitting, not checked over the set.
///
/// A part is gathered in memory until it is complete (its head depends on its last
/// entry), so memory is bounded by one part, at most `max_bytes`, and the checker's
/// table of `<loc>`s, bounded by 50,000 entries.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Entry, Link, Relation, Uri};
/// use resourcesync_xml::{SetLimits, SetOptions, SetWriter, read_document};
///
/// let head = DocumentHead::of_kind(DocumentKind::ResourceList)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut stored = BTreeMap::new();
/// let store = (
///     |n: usize| format!("http://example.com/resourcelist-{n:05}.xml").parse::<Uri>(),
///     |uri: &Uri, document: &[u8]| {
///         stored.insert(uri.to_string(), document.to_vec());
///         Ok(())
///     },
/// );
/// let options = SetOptions::default().with_limits(SetLimits::new(2, 52_428_800));
/// let uri = "http://example.com/resourcelist.xml".parse()?;
/// let mut set = SetWriter::with_store(head, uri, store, options)?;
/// for i in 0..5 {
///     set.write_entry(&Entry::new(format!("http://example.com/res{i}").parse()?))?;
/// }
/// let written = set.finish()?;
/// assert_eq!(written.findings, []);
/// let names: Vec<&str> = written.output.documents.iter().map(|u| u.as_str()).collect();
/// assert_eq!(names, [
///     "http://example.com/resourcelist-00001.xml",
///     "http://example.com/resourcelist-00002.xml",
///     "http://example.com/resourcelist-00003.xml",
///     "http://example.com/resourcelist.xml",
/// ]);
/// let (index, findings) = read_document(&stored["http://example.com/resourcelist.xml"])?;
/// assert_eq!(index.head.kind(), DocumentKind::ResourceListIndex);
/// assert_eq!(index.entries.len(), 3);
/// assert!(findings.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a SetWriter dropped without finish() stores no index and may hold back a part"]
pub struct SetWriter<T> {
    head: DocumentHead,
    uri: Uri,
    store: T,
    limits: SetLimits,
    /// Whether parts, and the index or single document, are gzip-compressed.
    compress: (bool, bool),
    /// Parts already stored.
    parts: Vec<(Uri, Option<W3cDateTime>, Option<W3cDateTime>)>,
    current: Part,
    scratch: Writer<Vec<u8>>,
    entries: u64,
    /// Bytes of a part's head and closing tag, without an `until`.
    overhead: u64,
    intervals: bool,
    /// The latest time among the entries so far, where the current part would end. Only
    /// a boundary: the checker decides whether an entry is in order.
    latest: Option<W3cDateTime>,
    /// The standard's rules over the set's entries; taken by `finish`, which consumes the
    /// writer, so always there before.
    checking: Option<Checking>,
}

impl<T> std::fmt::Debug for SetWriter<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetWriter")
            .field("kind", &self.head.kind())
            .field("uri", &self.uri)
            .field("parts", &self.parts.len())
            .field("entries", &self.entries)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<N, S> SetWriter<(N, S)>
where
    N: FnMut(usize) -> Result<Uri, UriError>,
    S: FnMut(&Uri, &[u8]) -> io::Result<()>,
{
    /// Starts a set published at `uri` whose part `n` is published at `part_uri(n)` and
    /// whose documents `sink` stores, checked with errors refused, uncompressed; see
    /// [`with_store`](SetWriter::with_store) for other options.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use resourcesync_model::{DocumentHead, DocumentKind, Entry, Link, Relation, Uri};
    /// use resourcesync_xml::{SetLimits, SetWriter, read_document};
    ///
    /// let head = DocumentHead::of_kind(DocumentKind::ResourceList)
    ///     .with_at("2013-01-03T09:00:00Z".parse()?)
    ///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
    /// let mut stored = BTreeMap::new();
    /// let mut set = SetWriter::new(
    ///     head,
    ///     "http://example.com/resourcelist.xml".parse()?,
    ///     |n| format!("http://example.com/resourcelist-{n}.xml").parse(),
    ///     |uri: &Uri, xml: &[u8]| { stored.insert(uri.to_string(), xml.to_vec()); Ok(()) },
    ///     SetLimits::new(2, 52_428_800),
    /// )?;
    /// for i in 0..5 {
    ///     set.write_entry(&Entry::new(format!("http://example.com/res{i}").parse()?))?;
    /// }
    /// let summary = set.finish()?.output;
    /// assert_eq!(summary.documents.len(), 4); // three parts and the index
    /// let (index, findings) = read_document(&stored["http://example.com/resourcelist.xml"])?;
    /// assert_eq!(index.head.kind(), DocumentKind::ResourceListIndex);
    /// assert_eq!(index.entries.len(), 3);
    /// assert!(findings.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        head: DocumentHead,
        uri: Uri,
        part_uri: N,
        sink: S,
        limits: SetLimits,
    ) -> Result<SetWriter<(N, S)>, WriteError> {
        let options = SetOptions::default().with_limits(limits);
        SetWriter::with_store(head, uri, (part_uri, sink), options)
    }
}

impl<T: SetStore> SetWriter<T> {
    /// Starts a set published at `uri`, whose documents go to `store`. Fails for a kind
    /// that is not split into indexes (anything but a Resource List, Resource Dump,
    /// Change List, Change Dump or one of their archives), a head that is not a
    /// `<urlset>`, or, when errors are
    /// refused, a head that breaks a rule ([`WriteError::Refused`]).
    pub fn with_store(
        head: DocumentHead,
        uri: Uri,
        store: T,
        options: SetOptions,
    ) -> Result<SetWriter<T>, WriteError> {
        let intervals = match head.kind() {
            DocumentKind::ResourceList | DocumentKind::ResourceDump => false,
            DocumentKind::ChangeList | DocumentKind::ChangeDump => true,
            // An archive's head has no times of its own: its entries carry theirs.
            DocumentKind::ResourceListArchive
            | DocumentKind::ResourceDumpArchive
            | DocumentKind::ChangeListArchive
            | DocumentKind::ChangeDumpArchive => false,
            other => {
                return Err(WriteError::Invalid(format!(
                    "a {other} is not published as a set"
                )));
            }
        };
        let checking = Checking::new(&head, options.write)?.for_set();
        let mut writer = SetWriter {
            current: Part::new(head.md.from),
            head,
            uri,
            store,
            limits: options.limits,
            compress: options.compressed(),
            parts: Vec::new(),
            scratch: Writer::entries_only(Root::UrlSet),
            entries: 0,
            overhead: 0,
            intervals,
            latest: None,
            checking: Some(checking),
        };
        let (start, end) = writer.framing(writer.current.from, None, true)?;
        writer.overhead = (start.len() + end.len()) as u64;
        Ok(writer)
    }

    /// Writes the next entry, starting a new part when the current one is full.
    ///
    /// An entry that cannot be written as it would read back, or (when errors are
    /// refused) that breaks a rule of the standard, is refused with nothing of it
    /// written, and the set can go on with the next entry.
    pub fn write_entry(&mut self, entry: &Entry) -> Result<(), WriteError> {
        self.scratch.write_entry(entry)?;
        let bytes = self.scratch.take_bytes();
        if let Some(checking) = &mut self.checking {
            checking.entry(entry, self.entries + 1)?;
        }
        let time = entry
            .md
            .as_ref()
            .and_then(|md| md.datetime.as_ref().or(md.from.as_ref()));
        self.add(&bytes, time)
    }

    /// Writes the next entry as the bytes this crate's writer made of it before: one
    /// `<url>…</url>` element and its line break, as a document this crate wrote holds it
    /// ([`written_entries`](crate::written_entries) finds them; say, an entry of the set
    /// written last time whose resource has not changed since).
    /// It is not serialized or checked against the standard's rules again (only found to
    /// be one element), so it costs a copy: the caller vouches that
    /// the bytes are such an entry, and that a set whose entries must all be checked gets
    /// each through [`write_entry`](SetWriter::write_entry) once. `time` is the entry's
    /// `datetime` (or `from`), which a set of intervals (a Change List) ends its parts at.
    ///
    /// Bytes that are not one entry element are refused ([`WriteError::Invalid`]).
    pub fn write_written(
        &mut self,
        entry: &[u8],
        time: Option<&W3cDateTime>,
    ) -> Result<(), WriteError> {
        crate::writer::check_written(Root::UrlSet, entry)?;
        self.add(entry, time)
    }

    /// Writes entries `entries` (counted from 0) of `document`, a document this crate
    /// wrote, in order: the same as [`write_written`](SetWriter::write_written) for each
    /// with no time, as a Resource List's entries have none, but neither copied nor
    /// checked again ([`WrittenDocument::new`] checked them): the part holds the
    /// document and writes the entries' bytes from it when it is stored. A Resource List
    /// copied from the last one but for the entries that changed costs about what reading
    /// and writing its bytes costs.
    ///
    /// Entries past the document's last are refused ([`WriteError::Invalid`]) with none
    /// written; an entry too large for a part of its own is refused as by `write_written`,
    /// after the entries before it.
    pub fn write_written_entries(
        &mut self,
        document: &Arc<WrittenDocument>,
        entries: Range<usize>,
    ) -> Result<(), WriteError> {
        if entries.end > document.len() {
            return Err(WriteError::Invalid(format!(
                "entries {}..{} of a document of {}",
                entries.start,
                entries.end,
                document.len()
            )));
        }
        // Entries go into the current part until one does not fit; then the part is
        // closed and the next begins with it, as `add` does entry by entry, but each
        // part takes its entries as one stretch of the document.
        let mut first = entries.start;
        let mut pending = 0u64;
        for i in entries.clone() {
            let bytes = document.entry_range(i).len() as u64;
            if !self.fits(i - first + 1, pending + bytes, 0) {
                self.hold(document, first..i, pending);
                (first, pending) = (i, 0);
                self.close_for(bytes, 0, None)?;
            }
            pending += bytes;
        }
        self.hold(document, first..entries.end, pending);
        Ok(())
    }

    /// Adds entries `entries` of `document`, `bytes` long together, to the current part.
    fn hold(&mut self, document: &Arc<WrittenDocument>, entries: Range<usize>, bytes: u64) {
        if entries.is_empty() {
            return;
        }
        let range =
            document.entry_range(entries.start).start..document.entry_range(entries.end - 1).end;
        let part = &mut self.current;
        match part.pieces.last_mut() {
            Some(Piece::Written(last, held))
                if Arc::ptr_eq(last, document) && held.end == range.start =>
            {
                held.end = range.end;
            }
            _ => part
                .pieces
                .push(Piece::Written(Arc::clone(document), range)),
        }
        let count = entries.len() as u64;
        part.bytes += bytes;
        part.entries += count;
        self.entries += count;
    }

    /// Whether the current part can take `entries` more entries of `bytes` bytes, the
    /// longest of their times `time_len` long.
    fn fits(&self, entries: usize, bytes: u64, time_len: usize) -> bool {
        let part = &self.current;
        let until_len = part.longest_time.max(time_len) as u64 + 9; // ` until=""`
        part.entries + entries as u64 <= self.limits.max_entries
            && self.overhead + until_len + part.bytes + bytes <= self.limits.max_bytes
    }

    /// Closes the current part for an entry of `bytes` bytes, whose time (`time`, in a
    /// set of intervals) is `time_len` long, that does not fit in it; refuses one too big
    /// for a part of its own, before a part is closed for it.
    fn close_for(
        &mut self,
        bytes: u64,
        time_len: usize,
        time: Option<&W3cDateTime>,
    ) -> Result<(), WriteError> {
        let fits_alone = self.limits.max_entries >= 1
            && self.overhead + time_len as u64 + 9 + bytes <= self.limits.max_bytes;
        if self.current.entries == 0 || !fits_alone {
            return Err(WriteError::Limit {
                what: "one entry with the document's head",
                limit: self.limits.max_bytes,
            });
        }
        // The boundary is the latest time so far, or this entry's if later: an entry out
        // of order (reported, or refused above) never makes a part end before it starts.
        let until = match (self.latest, time) {
            (Some(latest), Some(time)) => Some(latest.max(*time)),
            (latest, time) => time.copied().or(latest),
        };
        self.close_part(until)
    }

    /// Copies the bytes of `entries` entries into the current part.
    fn copy(&mut self, bytes: &[u8], entries: u64) {
        let part = &mut self.current;
        let owned = &mut part.owned;
        if owned.capacity() - owned.len() < bytes.len() && owned.len() + bytes.len() >= 1 << 20 {
            // A large part: room at once for the most a part may hold, rather than a copy
            // into each larger buffer as it grows (the incremental build's Resource List
            // copy: 40-65 ms to about 30). Where memory is committed lazily (Linux), its
            // pages are taken only as they are written.
            let most = usize::try_from(self.limits.max_bytes).unwrap_or(usize::MAX);
            owned.reserve_exact(most.saturating_sub(owned.len()).max(bytes.len()));
        }
        let start = owned.len();
        owned.extend_from_slice(bytes);
        match part.pieces.last_mut() {
            Some(Piece::Owned(held)) if held.end == start => held.end = owned.len(),
            _ => part.pieces.push(Piece::Owned(start..owned.len())),
        }
        part.bytes += bytes.len() as u64;
        part.entries += entries;
        self.entries += entries;
    }

    /// Adds an entry's bytes to the current part, or to a new one when it is full.
    fn add(&mut self, bytes: &[u8], time: Option<&W3cDateTime>) -> Result<(), WriteError> {
        let time = time.filter(|_| self.intervals);
        let time_len = time.map_or(0, |t| t.to_string().len());
        if !self.fits(1, bytes.len() as u64, time_len) {
            self.close_for(bytes.len() as u64, time_len, time)?;
        }
        self.copy(bytes, 1);
        let part = &mut self.current;
        part.longest_time = part.longest_time.max(time_len);
        if let Some(time) = time {
            self.latest = Some(self.latest.map_or(*time, |latest| latest.max(*time)));
        }
        Ok(())
    }

    /// Closes the current part at `until`, for an entry that follows in the next one, and
    /// starts that from there. The set has several parts now, so the part is stored at
    /// once, with its `index` link, and its buffer is the next part's.
    fn close_part(&mut self, until: Option<W3cDateTime>) -> Result<(), WriteError> {
        let until = if self.intervals { until } else { None };
        let mut part = std::mem::replace(&mut self.current, Part::new(until));
        let number = self.parts.len() + 1;
        if number as u64 > MAX_ENTRIES {
            return Err(WriteError::Limit {
                what: "parts in one index",
                limit: MAX_ENTRIES,
            });
        }
        let uri = self.store.part_uri(number)?;
        self.parts.push((uri.clone(), part.from, until));
        self.store_part(&uri, &part, until, true)?;
        // Its buffers are the next part's.
        part.owned.clear();
        part.pieces.clear();
        self.current.owned = part.owned;
        self.current.pieces = part.pieces;
        Ok(())
    }

    /// Stores a part: its entries framed by [`framing`](SetWriter::framing).
    fn store_part(
        &mut self,
        uri: &Uri,
        part: &Part,
        until: Option<W3cDateTime>,
        in_index: bool,
    ) -> Result<(), WriteError> {
        let (start, end) = self.framing(part.from, until, in_index)?;
        let compress = if in_index {
            self.compress.0
        } else {
            self.compress.1
        };
        let mut pieces = Vec::with_capacity(part.pieces.len() + 2);
        pieces.push(&start[..]);
        pieces.extend(part.pieces.iter().map(|piece| match piece {
            Piece::Owned(range) => &part.owned[range.clone()],
            Piece::Written(document, range) => &document.bytes()[range.clone()],
        }));
        pieces.push(end.as_bytes());
        self.emit(uri, &pieces, compress)
    }

    /// What comes before and after a part's entries: the declaration and the set's head
    /// with the part's times and, if it is one of several, an `index` link; the end tag.
    fn framing(
        &self,
        from: Option<W3cDateTime>,
        until: Option<W3cDateTime>,
        in_index: bool,
    ) -> Result<(Vec<u8>, String), WriteError> {
        let mut head = self.head.clone();
        if self.intervals {
            head.md.from = from;
            head.md.until = until;
        }
        if in_index {
            head.links.retain(|l| l.rel != Relation::Index);
            head.links
                .push(Link::new(Relation::Index, self.uri.clone()));
        }
        let start = Writer::unchecked(Vec::new(), &head)?.take_bytes();
        Ok((start, format!("</{}>\n", head.root.element())))
    }

    /// Stores a finished document, given in pieces, compressed if asked.
    fn emit(&mut self, uri: &Uri, pieces: &[&[u8]], compress: bool) -> Result<(), WriteError> {
        #[cfg(feature = "gzip")]
        if compress {
            use std::io::Write;
            let len: usize = pieces.iter().map(|p| p.len()).sum();
            let mut gz = flate2::write::GzEncoder::new(
                Vec::with_capacity(len / 4),
                flate2::Compression::default(),
            );
            for piece in pieces {
                gz.write_all(piece)?;
            }
            return self.store.store(uri, &gz.finish()?);
        }
        #[cfg(not(feature = "gzip"))]
        let _ = compress;
        self.store.store_pieces(uri, pieces)
    }

    /// Closes the last part and, if there are several, writes the index. Returns what
    /// was written, with the findings of the standard's rules over the set's head and
    /// entries (entries numbered across the set).
    ///
    /// When errors are refused and the end of the set brings one, neither the last part
    /// nor the index is stored ([`WriteError::Refused`]); parts stored before stay.
    pub fn finish(mut self) -> Result<Written<SetSummary>, WriteError> {
        let findings = match self.checking.take() {
            Some(checking) => checking.finish()?,
            None => Vec::new(),
        };
        let last_until = self.head.md.until;
        if self.parts.is_empty() {
            // Everything fitted: the one document is the set.
            let part = std::mem::replace(&mut self.current, Part::new(None));
            let uri = self.uri.clone();
            self.store_part(&uri, &part, last_until, false)?;
            return Ok(Written {
                output: SetSummary {
                    documents: vec![self.uri.clone()],
                    uri: self.uri,
                    entries: self.entries,
                },
                findings,
            });
        }
        // A part is closed only when an entry did not fit, and that entry starts the
        // next one: the last part is never empty here.
        let part = std::mem::replace(&mut self.current, Part::new(None));
        let number = self.parts.len() + 1;
        let uri = self.store.part_uri(number)?;
        self.parts.push((uri.clone(), part.from, last_until));
        self.store_part(&uri, &part, last_until, true)?;
        // The index: same capability and times, one entry per part.
        let mut head = self.head.clone();
        head.root = Root::SitemapIndex;
        let mut writer = Writer::unchecked(Vec::new(), &head)?;
        for (uri, from, until) in &self.parts {
            let mut entry = Entry::new(uri.clone());
            let md = if self.intervals {
                let mut md = Md::new();
                (md.from, md.until) = (*from, *until);
                md
            } else {
                let mut md = Md::new();
                (md.at, md.completed) = (self.head.md.at, self.head.md.completed);
                md
            };
            if md != Md::default() {
                entry.md = Some(md);
            }
            writer.write_entry(&entry)?;
        }
        let xml = writer.close()?;
        let uri = self.uri.clone();
        self.emit(&uri, &[&xml], self.compress.1)?;
        let mut documents: Vec<Uri> = self.parts.into_iter().map(|(uri, ..)| uri).collect();
        documents.push(self.uri.clone());
        Ok(Written {
            output: SetSummary {
                uri: self.uri,
                documents,
                entries: self.entries,
            },
            findings,
        })
    }
}

/// A stretch of a part's entries.
enum Piece {
    /// Bytes of the part's own buffer.
    Owned(Range<usize>),
    /// Bytes of a document written before: entries taken as they are.
    Written(Arc<WrittenDocument>, Range<usize>),
}

impl Part {
    fn new(from: Option<W3cDateTime>) -> Part {
        Part {
            owned: Vec::new(),
            pieces: Vec::new(),
            bytes: 0,
            entries: 0,
            from,
            longest_time: 0,
        }
    }
}
