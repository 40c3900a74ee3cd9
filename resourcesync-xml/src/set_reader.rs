//! Reading a set: an index and every document it lists as one stream of entries.

use std::collections::HashSet;
use std::io::{self, BufRead};

use resourcesync_model::{
    CheckOptions, DocumentHead, DocumentKind, Entry, Finding, Relation, Root, Uri,
};

use crate::error::Error;
use crate::input::Buffered;
use crate::reader::{Limits, Reader};

/// A finding in one document of a set, with the document's URI.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DocumentFinding {
    /// The index, or the part, the finding is about.
    pub document: Uri,
    /// The finding; its entry number counts within that document.
    pub finding: Finding,
}

impl std::fmt::Display for DocumentFinding {
    /// `DOCUMENT: FINDING`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.document, self.finding)
    }
}

/// Why a set, or one of its parts, could not be read. Each names the document.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SetReadError {
    /// The caller's fetch failed. (The message includes the cause's.)
    #[error("fetching {uri} failed: {source}")]
    Fetch {
        /// The document asked for.
        uri: Uri,
        /// The cause.
        source: io::Error,
    },
    /// The document is not a readable ResourceSync document.
    #[error("{uri}: {error}")]
    Read {
        /// The document.
        uri: Uri,
        /// What went wrong, and where.
        error: Error,
    },
    /// A part whose capability is not the index's: a Resource List listed in a Change
    /// List Index, say.
    #[error("{uri}: a part with capability {found} in {index}, whose capability is {expected}")]
    Capability {
        /// The part.
        uri: Uri,
        /// The part's capability, as written, or `none`.
        found: String,
        /// The index's capability, as written, or `none`.
        expected: String,
        /// The index.
        index: Uri,
    },
    /// A part whose `index` link points to another document than the index it was
    /// listed in.
    #[error("{uri}: its index link points to {href}, not to {index}, which lists it")]
    IndexLink {
        /// The part.
        uri: Uri,
        /// Where its `index` link points.
        href: Uri,
        /// The index that lists it.
        index: Uri,
    },
    /// A part listed a second time (or the index listing itself): reading it again
    /// could loop.
    #[error("{uri} is listed again in {index}")]
    Repeated {
        /// The part.
        uri: Uri,
        /// The index.
        index: Uri,
    },
    /// A part that is itself an index (`<sitemapindex>`): indexes do not nest.
    #[error("{uri} is an index listed in the index {index}: indexes do not nest")]
    NestedIndex {
        /// The part.
        uri: Uri,
        /// The index.
        index: Uri,
    },
}

/// The part being read: its URI, head and reader.
struct Part<R: BufRead> {
    uri: Uri,
    head: DocumentHead,
    reader: Reader<Buffered<R>>,
}

/// Reads a set — an index (Resource List Index, Change List Index, Resource Dump Index,
/// …) and every document it lists — as one stream of entries, one part open at a time;
/// a document that is no index is read as itself.
///
/// Give it the URI of the set and a function that fetches a document's bytes by URI (a
/// `BufRead`: a file, a response body, a slice; gzip is decompressed). This crate
/// performs no HTTP: the function does. [`next_entry`](SetReader::next_entry) hands out
/// the entries of the first part, then of the next, …; [`document`](SetReader::document)
/// names the part the last one came from.
///
/// Each part is checked against the index that lists it: its capability must be the
/// index's ([`SetReadError::Capability`]), its `index` link, if any, must point to the
/// index ([`SetReadError::IndexLink`]; a missing one is the warning
/// `index-link-recommended`), and a part listed twice ([`SetReadError::Repeated`]) or
/// that is itself an index ([`SetReadError::NestedIndex`]) is refused, so no set loops.
/// An error about a part ends that part: the next call goes on with the next one. An
/// error of the index ends the set.
///
/// Over a set published into a directory (`resourcesync_source::Directory`), the fetch
/// function is `|uri: &Uri| Ok(directory.open(uri)?)`: the directory maps the URI to its
/// file, and its errors convert to `io::Error`.
///
/// Findings of every document are kept with its URI ([`DocumentFinding`]); take them as
/// you go ([`take_findings`](SetReader::take_findings)) to keep memory constant. Besides
/// them, memory holds two documents' buffers (the index's and one part's) and the URIs of
/// the parts seen, at most the 50,000 an index may list.
///
/// ```
/// use std::collections::BTreeMap;
/// use resourcesync_model::{DocumentHead, DocumentKind, Entry, Link, Relation, Uri};
/// use resourcesync_xml::{SetLimits, SetReader, SetWriter};
///
/// // A Resource List of five entries, published as three parts and an index.
/// let head = DocumentHead::of_kind(DocumentKind::ResourceList)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut stored = BTreeMap::new();
/// let mut set = SetWriter::new(
///     head,
///     "http://example.com/resourcelist.xml".parse()?,
///     |n| format!("http://example.com/resourcelist-{n}.xml").parse(),
///     |uri: &Uri, xml: &[u8]| { stored.insert(uri.clone(), xml.to_vec()); Ok(()) },
///     SetLimits::new(2, 52_428_800),
/// )?;
/// for i in 0..5 {
///     set.write_entry(&Entry::new(format!("http://example.com/res{i}").parse()?))?;
/// }
/// let _ = set.finish()?;
///
/// let fetch = |uri: &Uri| match stored.get(uri) {
///     Some(bytes) => Ok(&bytes[..]),
///     None => Err(std::io::Error::new(std::io::ErrorKind::NotFound, "no such document")),
/// };
/// let mut reader = SetReader::open("http://example.com/resourcelist.xml".parse()?, fetch)?;
/// assert_eq!(reader.head().kind(), DocumentKind::ResourceListIndex);
/// assert_eq!(reader.kind(), DocumentKind::ResourceList);
/// let mut locs = Vec::new();
/// while let Some(entry) = reader.next_entry()? {
///     locs.push(entry.loc.to_string());
/// }
/// assert_eq!(locs.len(), 5);
/// assert_eq!(reader.parts_read(), 3);
/// assert!(reader.take_findings().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SetReader<F, R: BufRead> {
    fetch: F,
    limits: Limits,
    uri: Uri,
    head: DocumentHead,
    /// The document at the set's URI, while it has entries left: the index, or the one
    /// document.
    top: Option<Reader<Buffered<R>>>,
    is_index: bool,
    part: Option<Part<R>>,
    /// Parts opened so far, to refuse one listed twice.
    seen: HashSet<Uri>,
    findings: Vec<DocumentFinding>,
}

impl<F, R: BufRead> std::fmt::Debug for SetReader<F, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SetReader")
            .field("uri", &self.uri)
            .field("kind", &self.head.kind())
            .field("part", &self.part.as_ref().map(|p| &p.uri))
            .field("parts_read", &self.seen.len())
            .field("findings", &self.findings.len())
            .finish_non_exhaustive()
    }
}

impl<F, R> SetReader<F, R>
where
    F: FnMut(&Uri) -> io::Result<R>,
    R: BufRead,
{
    /// Fetches the document at `uri` and reads its head, with default [`Limits`] for
    /// every document.
    pub fn open(uri: Uri, fetch: F) -> Result<SetReader<F, R>, SetReadError> {
        SetReader::with_limits(uri, fetch, Limits::default())
    }

    /// Fetches the document at `uri` and reads its head, with these limits for every
    /// document.
    pub fn with_limits(
        uri: Uri,
        mut fetch: F,
        limits: Limits,
    ) -> Result<SetReader<F, R>, SetReadError> {
        let mut top = open(&mut fetch, &uri, limits, CheckOptions::default())?;
        let head = top
            .head()
            .cloned()
            .map_err(|error| read_error(&uri, error))?;
        let mut reader = SetReader {
            fetch,
            limits,
            is_index: head.root == Root::SitemapIndex,
            head,
            top: None,
            part: None,
            seen: HashSet::new(),
            findings: Vec::new(),
            uri,
        };
        reader.keep_findings(&mut top, None);
        reader.top = Some(top);
        Ok(reader)
    }

    /// The head of the document at the set's URI: the index's, or the one document's.
    pub fn head(&self) -> &DocumentHead {
        &self.head
    }

    /// Whether the set's URI names an index.
    pub fn is_index(&self) -> bool {
        self.is_index
    }

    /// The kind of the entries handed out: the parts' kind for an index (a Resource List
    /// for a Resource List Index), else the document's own.
    pub fn kind(&self) -> DocumentKind {
        if self.is_index {
            DocumentKind::new(Root::UrlSet, self.head.md.capability.as_ref())
        } else {
            self.head.kind()
        }
    }

    /// The URI of the document the last entry came from: a part's, or the set's for a
    /// document that is no index.
    pub fn document(&self) -> Option<&Uri> {
        match &self.part {
            Some(part) => Some(&part.uri),
            None if !self.is_index => Some(&self.uri),
            None => None,
        }
    }

    /// The head of the part being read, if any.
    pub fn part_head(&self) -> Option<&DocumentHead> {
        self.part.as_ref().map(|p| &p.head)
    }

    /// Parts opened so far, those refused after opening included.
    pub fn parts_read(&self) -> u64 {
        self.seen.len() as u64
    }

    /// The findings so far, each with its document's URI, in reading order.
    pub fn findings(&self) -> &[DocumentFinding] {
        &self.findings
    }

    /// Takes the findings so far, leaving none.
    pub fn take_findings(&mut self) -> Vec<DocumentFinding> {
        std::mem::take(&mut self.findings)
    }

    /// The next entry of the set, or `None` after the last entry of the last part.
    ///
    /// An error about a part (fetching it, reading it, or its agreement with the index)
    /// ends that part; calling again goes on with the next part. An error reading the
    /// index, or the one document, ends the set.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, SetReadError> {
        loop {
            if let Some(mut part) = self.part.take() {
                let next = part.reader.next_entry();
                self.keep_findings_of_part(&mut part);
                match next {
                    Ok(Some(entry)) => {
                        self.part = Some(part);
                        return Ok(Some(entry));
                    }
                    Ok(None) => continue,
                    Err(error) => return Err(read_error(&part.uri, error)),
                }
            }
            let Some(mut top) = self.top.take() else {
                return Ok(None);
            };
            let next = top.next_entry();
            self.keep_findings(&mut top, None);
            let entry = match next {
                Ok(Some(entry)) => entry,
                Ok(None) => return Ok(None),
                Err(error) => return Err(read_error(&self.uri, error)),
            };
            self.top = Some(top);
            if !self.is_index {
                return Ok(Some(entry));
            }
            self.part = Some(self.open_part(entry.loc)?);
        }
    }

    /// Fetches a part listed in the index and checks that it belongs to it.
    fn open_part(&mut self, uri: Uri) -> Result<Part<R>, SetReadError> {
        if uri == self.uri || !self.seen.insert(uri.clone()) {
            return Err(SetReadError::Repeated {
                uri,
                index: self.uri.clone(),
            });
        }
        let options = CheckOptions::part_of_index(true);
        let mut reader = open(&mut self.fetch, &uri, self.limits, options)?;
        let head = match reader.head() {
            Ok(head) => head.clone(),
            Err(error) => return Err(read_error(&uri, error)),
        };
        let mut part = Part { uri, head, reader };
        self.keep_findings_of_part(&mut part);
        let index = || self.uri.clone();
        if part.head.root == Root::SitemapIndex {
            return Err(SetReadError::NestedIndex {
                uri: part.uri,
                index: index(),
            });
        }
        if part.head.md.capability != self.head.md.capability {
            let name = |c: Option<&resourcesync_model::Capability>| {
                c.map_or_else(|| "none".to_owned(), |c| c.as_str().to_owned())
            };
            return Err(SetReadError::Capability {
                found: name(part.head.md.capability.as_ref()),
                expected: name(self.head.md.capability.as_ref()),
                uri: part.uri,
                index: index(),
            });
        }
        if let Some(link) = part.head.link(&Relation::Index) {
            if !same_uri(&link.href, &self.uri) {
                return Err(SetReadError::IndexLink {
                    href: link.href.clone(),
                    uri: part.uri,
                    index: index(),
                });
            }
        }
        Ok(part)
    }

    fn keep_findings_of_part(&mut self, part: &mut Part<R>) {
        let uri = part.uri.clone();
        self.keep_findings(&mut part.reader, Some(uri));
    }

    /// Moves a reader's findings into the set's, with the document's URI (the set's if
    /// `None`).
    fn keep_findings(&mut self, reader: &mut Reader<Buffered<R>>, uri: Option<Uri>) {
        if reader.findings().is_empty() {
            return;
        }
        let document = uri.unwrap_or_else(|| self.uri.clone());
        self.findings.extend(
            reader
                .take_findings()
                .into_iter()
                .map(|finding| DocumentFinding {
                    document: document.clone(),
                    finding,
                }),
        );
    }
}

/// Fetches a document and starts reading it.
fn open<F, R>(
    fetch: &mut F,
    uri: &Uri,
    limits: Limits,
    options: CheckOptions,
) -> Result<Reader<Buffered<R>>, SetReadError>
where
    F: FnMut(&Uri) -> io::Result<R>,
    R: BufRead,
{
    let body = fetch(uri).map_err(|source| SetReadError::Fetch {
        uri: uri.clone(),
        source,
    })?;
    let reader = Reader::with_limits(body, limits).map_err(|error| read_error(uri, error))?;
    Ok(reader.with_check_options(Some(options)))
}

#[cold]
fn read_error(uri: &Uri, error: Error) -> SetReadError {
    SetReadError::Read {
        uri: uri.clone(),
        error,
    }
}

/// Whether two URIs name the same document: as written, or once normalised (case of
/// scheme and host, default port).
fn same_uri(a: &Uri, b: &Uri) -> bool {
    a == b
        || match (a.to_url(), b.to_url()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}
