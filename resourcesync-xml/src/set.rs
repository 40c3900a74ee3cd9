//! Publishing a set of any size: as many documents as the limits require, and the index
//! over them.

use std::io;

use resourcesync_model::{
    ChangeOrder, DocumentHead, DocumentKind, Entry, Link, MAX_BYTES, MAX_ENTRIES, Md, Relation,
    Root, Uri, W3cDateTime,
};

use crate::error::WriteError;
use crate::writer::Writer;

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

/// What a finished set wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SetSummary {
    /// The URIs of the documents written, in order: one document at the set's URI when
    /// everything fitted in one, else the parts and then the index at the set's URI.
    pub documents: Vec<Uri>,
    /// Entries written, over all parts.
    pub entries: u64,
}

/// A part being filled: its entries serialized, and the times its head will carry.
struct Part {
    body: Vec<u8>,
    entries: u64,
    from: Option<W3cDateTime>,
    /// The latest `datetime` (or `from`, for dumps) among its entries.
    last: Option<W3cDateTime>,
    /// The longest datetime text its head may need, for the byte limit.
    longest_time: usize,
}

/// Writes a Resource List, Resource Dump, Change List or Change Dump of any size as as
/// many documents as the limits require (entries and bytes), and the index over them.
///
/// Give it the set's head (root `urlset`, the capability, `at`/`completed` or
/// `from`/`until`, and the `up` link), the URI where the set is published, a scheme that
/// names the parts, and a sink that stores a finished document under its URI. Then write
/// the entries in order and [`finish`](SetWriter::finish).
///
/// - If every entry fits in one document, that document is stored at the set's URI, with
///   no index.
/// - Otherwise each part is stored under `part_uri(1)`, `part_uri(2)`, … with an `index`
///   link to the set's URI, and the index (a `<sitemapindex>` with the same capability)
///   at the set's URI.
/// - Parts of a Resource List or Resource Dump carry the set's `at` and `completed`, and
///   so do their index entries. Parts of a Change List or Change Dump cover contiguous
///   intervals: the first part starts at the set's `from`, each later part at the
///   `datetime` (or, in a dump, the `from`) of its first entry, where the part before it
///   ends (`until`); the last part ends at the set's `until` or stays open. Entries out of
///   forward chronological order are refused, since they would break the standard.
///
/// A part is gathered in memory until it is complete (its head depends on its last
/// entry), so memory is bounded by one part, at most `max_bytes`.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Entry, Link, Relation, Uri};
/// use resourcesync_xml::{SetLimits, SetWriter, read_document};
///
/// let mut head = DocumentHead::of_kind(DocumentKind::ResourceList);
/// head.md.at = Some("2013-01-03T09:00:00Z".parse()?);
/// head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
///
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
/// let summary = set.finish()?;
/// assert_eq!(summary.documents.len(), 4); // three parts and the index
/// let (index, findings) = read_document(&stored["http://example.com/resourcelist.xml"])?;
/// assert_eq!(index.head.kind(), DocumentKind::ResourceListIndex);
/// assert_eq!(index.entries.len(), 3);
/// assert!(findings.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a SetWriter dropped without finish() stores no index and may hold back a part"]
pub struct SetWriter<N, S> {
    head: DocumentHead,
    uri: Uri,
    part_uri: N,
    sink: S,
    limits: SetLimits,
    /// Parts already stored (or, for the first, held until a second one is needed).
    parts: Vec<(Uri, Option<W3cDateTime>, Option<W3cDateTime>)>,
    /// The first part, held back until it is known whether the set needs an index.
    first: Option<Part>,
    current: Part,
    scratch: Writer<Vec<u8>>,
    entries: u64,
    /// Bytes of a part's head and closing tag, without an `until`.
    overhead: u64,
    intervals: bool,
    /// The order of the whole set, across parts: a part's own `last` starts again empty.
    order: ChangeOrder,
}

impl<N, S> std::fmt::Debug for SetWriter<N, S> {
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

impl<N, S> SetWriter<N, S>
where
    N: FnMut(usize) -> Result<Uri, resourcesync_model::UriError>,
    S: FnMut(&Uri, &[u8]) -> io::Result<()>,
{
    /// Starts a set. Fails for a kind that is not split into indexes (anything but a
    /// Resource List, Resource Dump, Change List or Change Dump) or a head that is not a
    /// `<urlset>`.
    pub fn new(
        head: DocumentHead,
        uri: Uri,
        part_uri: N,
        sink: S,
        limits: SetLimits,
    ) -> Result<SetWriter<N, S>, WriteError> {
        let intervals = match head.kind() {
            DocumentKind::ResourceList | DocumentKind::ResourceDump => false,
            DocumentKind::ChangeList | DocumentKind::ChangeDump => true,
            other => {
                return Err(WriteError::Invalid(format!(
                    "a {other} is not published as a set"
                )));
            }
        };
        let mut writer = SetWriter {
            current: Part::new(head.md.from),
            head,
            uri,
            part_uri,
            sink,
            limits,
            parts: Vec::new(),
            first: None,
            scratch: Writer::entries_only(Root::UrlSet),
            entries: 0,
            overhead: 0,
            intervals,
            order: ChangeOrder::new(),
        };
        writer.overhead = writer.part_document(&writer.current, None, true)?.len() as u64;
        Ok(writer)
    }

    /// Writes the next entry, starting a new part when the current one is full.
    pub fn write_entry(&mut self, entry: &Entry) -> Result<(), WriteError> {
        self.scratch.write_entry(entry)?;
        let bytes = self.scratch.take_bytes();
        let time = if self.intervals {
            entry
                .md
                .as_ref()
                .and_then(|md| md.datetime.as_ref().or(md.from.as_ref()))
        } else {
            None
        };
        self.order
            .check(time)
            .map_err(|e| WriteError::Invalid(format!("entry {}: {e}", self.entries + 1)))?;
        let time_len = time.map_or(0, |t| t.to_string().len());
        let fits = |part: &Part| {
            let until_len = part.longest_time.max(time_len) as u64 + 9; // ` until=""`
            part.entries < self.limits.max_entries
                && self.overhead + until_len + part.body.len() as u64 + bytes.len() as u64
                    <= self.limits.max_bytes
        };
        if !fits(&self.current) {
            if self.current.entries == 0 {
                return Err(WriteError::Limit {
                    what: "one entry with the document's head",
                    limit: self.limits.max_bytes,
                });
            }
            self.close_part(time.cloned())?;
        }
        let part = &mut self.current;
        part.body.extend_from_slice(&bytes);
        part.entries += 1;
        part.longest_time = part.longest_time.max(time_len);
        if let Some(time) = time {
            part.last = Some(*time);
        }
        self.order.record(time);
        self.entries += 1;
        Ok(())
    }

    /// Closes the current part at `until` and starts the next one from there.
    fn close_part(&mut self, until: Option<W3cDateTime>) -> Result<(), WriteError> {
        let until = if self.intervals {
            until.or(self.current.last)
        } else {
            None
        };
        let next = Part::new(if self.intervals { until } else { None });
        let part = std::mem::replace(&mut self.current, next);
        let number = self.parts.len() + 1;
        if number as u64 > MAX_ENTRIES {
            return Err(WriteError::Limit {
                what: "parts in one index",
                limit: MAX_ENTRIES,
            });
        }
        let uri = (self.part_uri)(number)
            .map_err(|e| WriteError::Invalid(format!("part {number}: {e}")))?;
        self.parts.push((uri, part.from, until));
        if number == 1 {
            // Held back: with a second part the set needs an index and this one an
            // `index` link; alone, it is the set itself.
            self.first = Some(part);
            Ok(())
        } else {
            self.store_part(number - 1, &part)
        }
    }

    /// Stores part `index` (0-based) of several, storing the held-back first part first.
    fn store_part(&mut self, index: usize, part: &Part) -> Result<(), WriteError> {
        if let Some(first) = self.first.take() {
            self.store_part(0, &first)?;
        }
        let (uri, _, until) = self.parts[index].clone();
        let xml = self.part_document(part, until, true)?;
        (self.sink)(&uri, &xml)?;
        Ok(())
    }

    /// A part's document: the set's head with the part's times and, if it is one of
    /// several, an `index` link.
    fn part_document(
        &self,
        part: &Part,
        until: Option<W3cDateTime>,
        in_index: bool,
    ) -> Result<Vec<u8>, WriteError> {
        let mut head = self.head.clone();
        if self.intervals {
            head.md.from = part.from;
            head.md.until = until;
        }
        if in_index {
            head.links.retain(|l| l.rel != Relation::Index);
            head.links
                .push(Link::new(Relation::Index, self.uri.clone()));
        }
        let mut writer = Writer::new(Vec::with_capacity(part.body.len() + 1024), &head)?;
        writer.append_raw(&part.body)?;
        writer.finish()
    }

    /// Closes the last part and, if there are several, writes the index.
    pub fn finish(mut self) -> Result<SetSummary, WriteError> {
        let last_until = self.head.md.until;
        if self.parts.is_empty() {
            // Everything fitted: the one document is the set.
            let part = std::mem::replace(&mut self.current, Part::new(None));
            let xml = self.part_document(&part, last_until, false)?;
            (self.sink)(&self.uri, &xml)?;
            return Ok(SetSummary {
                documents: vec![self.uri],
                entries: self.entries,
            });
        }
        // A part is closed only when an entry did not fit, and that entry starts the
        // next one: the last part is never empty here.
        let part = std::mem::replace(&mut self.current, Part::new(None));
        let number = self.parts.len() + 1;
        let uri = (self.part_uri)(number)
            .map_err(|e| WriteError::Invalid(format!("part {number}: {e}")))?;
        self.parts.push((uri, part.from, last_until));
        self.store_part(number - 1, &part)?;
        // The index: same capability and times, one entry per part.
        let mut head = self.head.clone();
        head.root = Root::SitemapIndex;
        let mut writer = Writer::new(Vec::new(), &head)?;
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
        let xml = writer.finish()?;
        (self.sink)(&self.uri, &xml)?;
        let mut documents: Vec<Uri> = self.parts.into_iter().map(|(uri, ..)| uri).collect();
        documents.push(self.uri);
        Ok(SetSummary {
            documents,
            entries: self.entries,
        })
    }
}

impl Part {
    fn new(from: Option<W3cDateTime>) -> Part {
        Part {
            body: Vec::new(),
            entries: 0,
            from,
            last: None,
            longest_time: 0,
        }
    }
}
