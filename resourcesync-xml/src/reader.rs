//! The streaming reader: the head first, then one entry at a time.

use std::borrow::Cow;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::mem;
use std::path::{Path, PathBuf};

use quick_xml::XmlVersion;
use quick_xml::events::{BytesStart, Event};
use resourcesync_model::{
    Attribute, AttributeName, Attributes, CheckOptions, Checker, Document, DocumentHead,
    DocumentKind, Element, Entry, Finding, Link, MAX_BYTES, MAX_ENTRIES, Malformed, Md,
    PartialLink, RS_NAMESPACE, Relation, Root, RsElement, Rule, RuleError, SITEMAP_NAMESPACE,
    TextPosition, Uri,
};

use crate::error::{Error, ErrorKind, Position};
use crate::input::{Buffered, Input, Slice};
use crate::namespace::{DeclarationError, Known, Namespaces, Resolved};

/// Namespace bindings in scope at once, at most.
const MAX_BINDINGS: usize = 128;

/// Limits on what a reader accepts. Going over one is an [`Error`], never unbounded
/// memory or time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Entries per document; the Sitemap protocol's 50,000 by default.
    pub max_entries: u64,
    /// Bytes per document, counted after decompression; the Sitemap protocol's
    /// 52,428,800 (50 MiB) by default. This also bounds the size of any one XML event.
    pub max_bytes: u64,
    /// Nesting depth of elements, extensions included; 32 by default.
    pub max_depth: usize,
    /// Length in bytes of one text or attribute value, or of one extension element's
    /// content; 1 MiB by default.
    pub max_value_len: usize,
    /// Length in bytes of one piece of XML as written: a tag with its attributes, a run
    /// of text, a comment, a processing instruction or a CDATA section, whether it is
    /// kept or skipped; 2 MiB by default. A reader over `BufRead` holds one such piece in
    /// memory at a time, so this bounds what a huge comment or run of white space costs.
    pub max_event_len: u64,
    /// Length in bytes of one entry as written, from its start tag to its end tag, and of
    /// the head (the root's children before the first entry); 8 MiB by default. An entry
    /// is kept in memory whole, links and extension elements included, so this bounds
    /// what one entry costs.
    pub max_entry_len: u64,
    /// Child elements of one entry, or of the root before the first entry; 1,024 by
    /// default. They are kept until the entry is handed out.
    pub max_children: usize,
    /// Attributes of one element; 256 by default.
    pub max_attributes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: MAX_ENTRIES,
            max_bytes: MAX_BYTES,
            max_depth: 32,
            max_value_len: 1 << 20,
            max_event_len: 2 << 20,
            max_entry_len: 8 << 20,
            max_children: 1024,
            max_attributes: 256,
        }
    }
}

impl Limits {
    /// No limit on entries or bytes; depth and value length keep their defaults, so
    /// memory stays bounded. For validators, which report the standard's limits as
    /// findings instead ([`Rule::MaxEntries`]).
    pub fn unbounded_size() -> Limits {
        Limits {
            max_entries: u64::MAX,
            max_bytes: u64::MAX,
            ..Limits::default()
        }
    }

    /// These limits with another entry limit.
    pub fn with_max_entries(mut self, max_entries: u64) -> Limits {
        self.max_entries = max_entries;
        self
    }

    /// These limits with another byte limit.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Limits {
        self.max_bytes = max_bytes;
        self
    }

    /// These limits with another depth limit.
    pub fn with_max_depth(mut self, max_depth: usize) -> Limits {
        self.max_depth = max_depth;
        self
    }

    /// These limits with another value length limit.
    pub fn with_max_value_len(mut self, max_value_len: usize) -> Limits {
        self.max_value_len = max_value_len;
        self
    }

    /// These limits with another limit on one piece of XML (tag, text, comment,
    /// processing instruction, CDATA section).
    pub fn with_max_event_len(mut self, max_event_len: u64) -> Limits {
        self.max_event_len = max_event_len;
        self
    }

    /// These limits with another limit on the child elements of an entry or the head.
    pub fn with_max_children(mut self, max_children: usize) -> Limits {
        self.max_children = max_children;
        self
    }

    /// These limits with another limit on the attributes of one element.
    pub fn with_max_attributes(mut self, max_attributes: usize) -> Limits {
        self.max_attributes = max_attributes;
        self
    }

    /// These limits with another limit on one entry, and on the head.
    pub fn with_max_entry_len(mut self, max_entry_len: u64) -> Limits {
        self.max_entry_len = max_entry_len;
        self
    }
}

/// The next event, read into `buf` by a buffered input: where it starts is marked first
/// (see `Parser::mark`), and a failure returns an error with its place from the function
/// it is used in. Every loop of the reader reads through here.
// A macro, not a method: an `#[inline(always)]` method returning `Result<Event, Error>`
// cost 0.5 % more instructions per read (3.5 M of 641 M), the event going through the
// `Result` before each loop matched on it; expanded in place, the loops match on what the
// input returns, as they did when each wrote this out.
macro_rules! next_event {
    ($parser:ident, $buf:ident) => {{
        $buf.clear();
        $parser.mark()?;
        match $parser.input.read_event($buf) {
            Ok(event) => event,
            Err(e) => return Err($parser.xml_error(e)),
        }
    }};
}

/// The elements a ResourceSync document is made of, by local name and namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    UrlSet,
    SitemapIndex,
    Url,
    Sitemap,
    Loc,
    Lastmod,
    Changefreq,
    Md,
    Ln,
    /// `md` or `ln` outside the ResourceSync namespace: kept as an extension, reported.
    MisplacedRs,
    /// An element named like one of the Sitemap's outside its namespace (such as a
    /// `<url xmlns="">`): kept as an extension, reported, never read as what it looks
    /// like.
    MisplacedSitemap,
    /// Anything else: kept as an extension.
    Other,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Prolog,
    Head,
    /// An entry's start tag has been read; its content has not.
    EntryStarted {
        empty: bool,
    },
    Entries,
    Done,
}

/// What reading the root's children came to.
enum Child {
    /// The start tag of an entry: its tag, whether it is empty, and where it starts.
    Entry((Tag, bool, Position)),
    /// The root's end tag.
    End,
    /// One event or child element that is neither (only when asked to stop after one).
    More,
}

/// The parser's state between entries, as `Reader::snapshot` takes it.
#[derive(Clone, Copy)]
pub(crate) struct Snapshot {
    state: State,
    entries: u64,
    entry_position: Position,
    event_at: (u64, u64, u64),
    scope: Option<(u64, &'static str)>,
    findings: usize,
    depth: usize,
}

/// What one step of a push reader read (see `Reader::push_step`).
// An entry is large and the other variants empty; it is moved once, to the caller, as
// `Reader::next_entry`'s `Option<Entry>` is: boxing it would cost an allocation per entry.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Step {
    /// Part of the head or of the gap between entries, or an entry skipped for want of a
    /// `<loc>`: nothing to hand out.
    Nothing,
    /// The head is complete.
    Head,
    /// An entry, read into the slot `push_step` was given (entries are large: handed out
    /// by value through the steps, they were copied at each).
    Entry,
    /// The end of the document, checked.
    End,
}

/// How much of the document a push reader must hold before its next step
/// (see `Reader::push_need`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// Nothing more: the step reads no bytes.
    Nothing,
    /// The next event or child element of the root, or the rest of the root's child
    /// being read (an entry whose start tag was read); in the prolog, up to the end of
    /// the root's start tag.
    Item,
    /// Everything, up to the end of input.
    End,
}

/// Reads a ResourceSync document as a stream: the [`DocumentHead`] first, then one
/// [`Entry`] at a time, in constant memory whatever the document's size.
///
/// Every value is parsed into its model type. A value that breaks a rule of the standard
/// (a bad datetime, hash or URI, a missing `<loc>`) does not stop reading: it becomes a
/// [`Finding`] with its place, and the raw attribute is kept as an extension so that
/// writing the document back loses nothing; an entry whose `<loc>` cannot be read is
/// skipped (and reported). With checking on (the default), the model's [`Checker`] runs
/// as the entries stream, adding findings for the rules that span the document. Text
/// that is not a well-formed, UTF-8, DTD-free XML sitemap, or that goes over a
/// [`Limits`], is an [`Error`] that names the problem and its place.
///
/// Findings accumulate until taken with [`take_findings`](Reader::take_findings): take
/// them as you go to keep memory constant on documents with many faults.
///
/// ```
/// use resourcesync_xml::Reader;
/// use resourcesync_model::{DocumentKind, Rule};
///
/// let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
/// <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
///         xmlns:rs="http://www.openarchives.org/rs/terms/">
///   <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
///   <rs:md capability="changelist" from="2013-01-03T00:00:00Z"/>
///   <url><loc>http://example.com/res2.pdf</loc>
///        <rs:md change="updated" datetime="2013-01-03T18:00:00Z"/></url>
///   <url><loc>http://example.com/res3.tiff</loc>
///        <rs:md change="deleted" datetime="2013-01-03T17:00:00Z"/></url>
/// </urlset>"#;
///
/// let mut reader = Reader::from_slice(xml);
/// assert_eq!(reader.head()?.kind(), DocumentKind::ChangeList);
/// let mut locs = Vec::new();
/// while let Some(entry) = reader.next_entry()? {
///     locs.push(entry.loc.to_string());
/// }
/// assert_eq!(locs.len(), 2);
/// let findings = reader.take_findings();
/// assert_eq!(findings[0].rule, Rule::ChangeListOrder);
/// assert_eq!(findings[0].entry, Some(2));
/// assert_eq!(findings[0].position.unwrap().line, 8);
/// # Ok::<(), resourcesync_xml::Error>(())
/// ```
pub struct Reader<I: Input> {
    /// The buffer a buffered input reads each event into (a slice's events borrow the
    /// slice instead). It is kept apart from the parser, as quick-xml's `Reader` keeps its
    /// `ReaderState` apart from the buffer its caller hands in: an event borrows the
    /// buffer while the parser handles it, so each loop takes `buf` as an argument, reads
    /// with `next_event!` and goes on using the parser. (It was a field of the parser,
    /// taken out with `mem::take` around every loop and put back after.)
    buf: Vec<u8>,
    parser: Parser<I>,
}

/// What reading goes by: the input, the namespaces in scope, the place, the limits, the
/// head and the findings; everything of a [`Reader`] but its event buffer.
struct Parser<I: Input> {
    input: I,
    ns: Namespaces,
    /// Scratch for element text, reused across entries.
    text: String,
    limits: Limits,
    state: State,
    /// Boxed, as is the checker: a push reader moves the parser between inputs (see
    /// `replace_input`) twice per entry, and these are the bulk of it.
    head: Option<Box<DocumentHead>>,
    /// The root's name as written, for messages.
    root_name: String,
    /// The root was in no namespace: unprefixed elements are read as the Sitemap's.
    lenient: bool,
    check: Option<CheckOptions>,
    checker: Option<Box<Checker>>,
    findings: Vec<Finding>,
    entries: u64,
    /// Where the entry being read started.
    entry_position: Position,
    /// Where the event being handled started: byte, line, column.
    event_at: (u64, u64, u64),
    /// Where the entry or head being read started, and which it is: both are kept in
    /// memory whole, so their length is limited.
    scope: Option<(u64, &'static str)>,
    /// The end of input has been reached and checked.
    finished: bool,
    /// How many namespace bindings are in scope when exactly the root's are, if the root
    /// binds them the conventional way (see `Namespaces::is_conventional`); `usize::MAX`
    /// otherwise.
    conventional_bindings: usize,
    /// The file being read, when the reader opened it: errors name it.
    path: Option<PathBuf>,
    /// The head as a push reader reads it, one child of the root at a time.
    push_head: Option<Box<HeadParts>>,
}

impl<I: Input> std::fmt::Debug for Reader<I> {
    /// Where the reader is: not its buffers, which hold the document's bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parser = &self.parser;
        f.debug_struct("Reader")
            .field("state", &parser.state)
            .field("kind", &parser.head.as_ref().map(|h| h.kind()))
            .field("entries_read", &parser.entries)
            .field("bytes_read", &parser.input.bytes_read())
            .field("findings", &parser.findings.len())
            .field("limits", &parser.limits)
            .finish_non_exhaustive()
    }
}

impl<'a> Reader<Slice<'a>> {
    /// A reader over a byte slice, with default limits and checking on. Events borrow
    /// the slice: nothing is copied, which makes this the fastest way to read a document
    /// in memory. A gzipped slice is decompressed.
    pub fn from_slice(bytes: &'a [u8]) -> Reader<Slice<'a>> {
        Reader::from_slice_with_limits(bytes, Limits::default())
    }

    /// A reader over a byte slice with the given limits. A slice longer than the byte
    /// limit fails on the first read.
    pub fn from_slice_with_limits(bytes: &'a [u8], limits: Limits) -> Reader<Slice<'a>> {
        Reader::with_input(
            Slice::new(bytes, limits.max_bytes, limits.max_event_len),
            limits,
        )
    }
}

impl<R: BufRead> Reader<Buffered<R>> {
    /// A reader over any `BufRead`, with default limits and checking on. Reads the first
    /// bytes to detect gzip and a byte order mark, which is why it can fail.
    pub fn new(inner: R) -> Result<Reader<Buffered<R>>, Error> {
        Reader::with_limits(inner, Limits::default())
    }

    /// A reader over any `BufRead` with the given limits and checking on.
    pub fn with_limits(inner: R, limits: Limits) -> Result<Reader<Buffered<R>>, Error> {
        let input = Buffered::new(inner, limits.max_bytes, limits.max_event_len).map_err(|e| {
            let start = Position {
                line: 1,
                column: 1,
                ..Position::default()
            };
            Error::new(ErrorKind::Io(e), start)
        })?;
        Ok(Reader::with_input(input, limits))
    }
}

impl<R: BufRead> Reader<Buffered<R>> {
    /// A push reader's reader (`crate::push`): over text not sniffed for gzip, with the
    /// given limits and checks.
    pub(crate) fn pushed(
        inner: R,
        limits: Limits,
        check: Option<CheckOptions>,
    ) -> Reader<Buffered<R>> {
        let input = Buffered::inflated(inner, limits.max_bytes, limits.max_event_len);
        Reader::with_input(input, limits).with_check_options(check)
    }
}

impl Reader<Buffered<BufReader<File>>> {
    /// A reader of the file at `path`, with default limits and checking on. The file is
    /// read through a 64 KiB buffer, and decompressed when it is gzipped (by content,
    /// whatever its name); every error the reader returns names the path
    /// ([`Error::path`]).
    ///
    /// ```
    /// use resourcesync_xml::{ErrorKind, Reader};
    ///
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/examples/ex14-resourcelist.xml");
    /// let (doc, findings) = Reader::open(path)?.read_to_document()?;
    /// assert_eq!((doc.entries.len(), findings.len()), (2, 0));
    ///
    /// let error = Reader::open("no/such/file.xml").unwrap_err();
    /// assert!(matches!(error.kind(), ErrorKind::Open(_)));
    /// assert!(error.to_string().starts_with("no/such/file.xml: cannot open: "));
    /// # Ok::<(), resourcesync_xml::Error>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Reader<Buffered<BufReader<File>>>, Error> {
        Reader::open_with_limits(path, Limits::default())
    }

    /// A reader of the file at `path` with the given limits and checking on; see
    /// [`open`](Reader::open).
    pub fn open_with_limits(
        path: impl AsRef<Path>,
        limits: Limits,
    ) -> Result<Reader<Buffered<BufReader<File>>>, Error> {
        let path = path.as_ref();
        let file = File::open(path)
            .map_err(|e| Error::new(ErrorKind::Open(e), Position::default()).in_file(Some(path)))?;
        // As large as the window in which the input looks for line breaks, so that one
        // fill of the buffer serves one search.
        let inner = BufReader::with_capacity(64 * 1024, file);
        let mut reader = Reader::with_limits(inner, limits).map_err(|e| e.in_file(Some(path)))?;
        reader.parser.path = Some(path.to_path_buf());
        Ok(reader)
    }
}

impl<I: Input> Reader<I> {
    fn with_input(input: I, limits: Limits) -> Reader<I> {
        Reader {
            buf: Vec::with_capacity(1024),
            parser: Parser {
                input,
                ns: Namespaces::new(MAX_BINDINGS),
                text: String::new(),
                limits,
                state: State::Prolog,
                head: None,
                root_name: String::new(),
                lenient: false,
                check: Some(CheckOptions::default()),
                checker: None,
                findings: Vec::new(),
                entries: 0,
                entry_position: Position::default(),
                event_at: (0, 1, 1),
                scope: None,
                finished: false,
                conventional_bindings: usize::MAX,
                path: None,
                push_head: None,
            },
        }
    }

    /// The reader checking the standard's document-wide rules with these options, or not
    /// at all with `None` (value and structure findings are still reported); the default
    /// is `Some(CheckOptions::default())`. Call before reading: the options are taken when
    /// the head is read.
    ///
    /// ```
    /// use resourcesync_model::{CheckOptions, Rule};
    /// use resourcesync_xml::Reader;
    ///
    /// let xml = br#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    ///                       xmlns:rs="http://www.openarchives.org/rs/terms/">
    ///   <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
    /// </urlset>"#;
    /// let rules = |reader: Reader<_>| -> Result<Vec<Rule>, resourcesync_xml::Error> {
    ///     Ok(reader.read_to_document()?.1.iter().map(|f| f.rule).collect())
    /// };
    /// assert_eq!(rules(Reader::from_slice(xml))?, [Rule::UpLinkMandatory]);
    /// assert_eq!(rules(Reader::from_slice(xml).with_check_options(None))?, []);
    /// // A part of a Resource List Index: its `index` link is expected too.
    /// let part = Some(CheckOptions::part_of_index(true));
    /// assert_eq!(
    ///     rules(Reader::from_slice(xml).with_check_options(part))?,
    ///     [Rule::UpLinkMandatory, Rule::IndexLinkRecommended]
    /// );
    /// # Ok::<(), resourcesync_xml::Error>(())
    /// ```
    pub fn with_check_options(mut self, options: Option<CheckOptions>) -> Reader<I> {
        self.parser.check = options;
        self
    }

    /// The document's head, reading it first if need be.
    pub fn head(&mut self) -> Result<&DocumentHead, Error> {
        let parser = &mut self.parser;
        if parser.head.is_none() {
            parser.read_head(&mut self.buf)?;
        }
        match &parser.head {
            Some(head) => Ok(head),
            None => Err(parser.error(ErrorKind::Empty)),
        }
    }

    /// The document's kind, reading the head first if need be.
    pub fn kind(&mut self) -> Result<DocumentKind, Error> {
        Ok(self.head()?.kind())
    }

    /// Entries seen so far, skipped ones included.
    pub fn entries_read(&self) -> u64 {
        self.parser.entries
    }

    /// Bytes read so far, after decompression.
    pub fn bytes_read(&self) -> u64 {
        self.parser.input.bytes_read()
    }

    /// The findings so far, in document order.
    pub fn findings(&self) -> &[Finding] {
        &self.parser.findings
    }

    /// Takes the findings so far, leaving none.
    pub fn take_findings(&mut self) -> Vec<Finding> {
        mem::take(&mut self.parser.findings)
    }

    /// Takes the first `n` findings, leaving the others.
    pub(crate) fn take_findings_before(&mut self, n: usize) -> Vec<Finding> {
        let n = n.min(self.parser.findings.len());
        self.parser.findings.drain(..n).collect()
    }

    /// The next entry, or `None` after the last. Entries whose `<loc>` is missing or
    /// invalid are skipped, with a finding.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, Error> {
        let mut slot = None;
        self.parser.next_entry_into(&mut self.buf, &mut slot)?;
        Ok(slot)
    }

    /// Reads the rest of the document into memory.
    pub fn read_to_document(mut self) -> Result<(Document, Vec<Finding>), Error> {
        self.head()?;
        let mut entries = Vec::new();
        while let Some(entry) = self.next_entry()? {
            entries.push(entry);
        }
        let parser = self.parser;
        let Some(head) = parser.head else {
            return Err(parser.error(ErrorKind::Empty));
        };
        Ok((
            Document {
                head: *head,
                entries,
            },
            parser.findings,
        ))
    }
}

/// The steps a push reader (`crate::push`) drives the reader by: each reads no further
/// than `push_need` says, so that the push reader can call it only once it holds those
/// bytes. The pull reader's `head` and `next_entry` read several of these at once.
impl<I: Input> Reader<I> {
    pub(crate) fn input_mut(&mut self) -> &mut I {
        &mut self.parser.input
    }

    pub(crate) fn input_ref(&self) -> &I {
        &self.parser.input
    }

    /// The head, once it has been read.
    pub(crate) fn read_head_so_far(&self) -> Option<&DocumentHead> {
        match self.parser.state {
            State::Prolog | State::Head => None,
            _ => self.parser.head.as_deref(),
        }
    }

    /// Where the entry or head being read started: reading it fails once it is longer
    /// than `Limits::max_entry_len`.
    pub(crate) fn scope_start(&self) -> Option<u64> {
        self.parser.scope.map(|(start, _)| start)
    }

    /// Whether a child of the root whose start tag (`<name ...>`, as written) comes next
    /// is an entry: then reading it reads the start tag alone. False when unsure (the tag
    /// is malformed: reading it fails, which reading the whole element also does).
    pub(crate) fn starts_entry(&mut self, tag: &[u8]) -> bool {
        let Some(inner) = tag.strip_prefix(b"<").and_then(|t| t.strip_suffix(b">")) else {
            return false;
        };
        let Ok(content) = std::str::from_utf8(inner) else {
            return false;
        };
        let name_len = inner
            .iter()
            .position(|&b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
            .unwrap_or(inner.len());
        let e = BytesStart::from_content(content, name_len);
        let parser = &mut self.parser;
        // Opened and closed again: `pop` undoes `push`, a failed one included.
        let declared = parser.ns.push(&e).is_ok();
        let entry = declared && matches!(parser.classify(&e), Ok(Tag::Url | Tag::Sitemap));
        parser.ns.pop();
        entry
    }

    /// The reader over another input, and the input it had: a push reader reads the
    /// children of the root it holds whole in place (`input::Window`), and the rest
    /// from its buffer.
    pub(crate) fn replace_input<J: Input>(self, input: J) -> (Reader<J>, I) {
        let Reader { buf, parser } = self;
        // Struct update syntax cannot change a type parameter: every other field is
        // moved across by name, listed once (the destructuring, without `..`, fails to
        // compile when a field is added and not listed).
        macro_rules! with_input {
            ($($field:ident),* $(,)?) => {{
                let Parser { input: old, $($field),* } = parser;
                (Parser { input, $($field),* }, old)
            }};
        }
        let (parser, old) = with_input!(
            ns,
            text,
            limits,
            state,
            head,
            root_name,
            lenient,
            check,
            checker,
            findings,
            entries,
            entry_position,
            event_at,
            scope,
            finished,
            conventional_bindings,
            path,
            push_head,
        );
        (Reader { buf, parser }, old)
    }

    /// Whether the reader is between entries (and past the head): the steps a push
    /// reader may read in place.
    pub(crate) fn between_entries(&self) -> bool {
        self.parser.state == State::Entries
    }

    /// What reading between entries changes, to go back to if a push reader's attempt
    /// to read in place runs out of bytes (see `PushReader::in_place`). The checker is
    /// not in it: it sees an entry only once the entry has been read whole.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let p = &self.parser;
        Snapshot {
            state: p.state,
            entries: p.entries,
            entry_position: p.entry_position,
            event_at: p.event_at,
            scope: p.scope,
            findings: p.findings.len(),
            depth: p.ns.depth(),
        }
    }

    /// Goes back to the snapshot.
    pub(crate) fn restore(&mut self, s: Snapshot) {
        let p = &mut self.parser;
        p.state = s.state;
        p.entries = s.entries;
        p.entry_position = s.entry_position;
        p.event_at = s.event_at;
        p.scope = s.scope;
        p.findings.truncate(s.findings);
        p.ns.truncate(s.depth);
    }

    /// Where the next event starts, from the input: after a push reader read in place,
    /// the place it left is the window's, which counts lines no longer.
    pub(crate) fn mark_here(&mut self) {
        self.parser.event_at = self.parser.input.mark();
    }

    /// What the next `push_step` reads.
    pub(crate) fn push_need(&self) -> Need {
        match self.parser.state {
            State::EntryStarted { empty: true } => Need::Nothing,
            State::Done if self.parser.finished => Need::Nothing,
            State::Done => Need::End,
            _ => Need::Item,
        }
    }

    /// Reads what `push_need` says, and no more; an entry into `slot`.
    pub(crate) fn push_step(&mut self, slot: &mut Option<Entry>) -> Result<Step, Error> {
        let buf = &mut self.buf;
        let parser = &mut self.parser;
        match parser.state {
            State::Prolog => {
                parser.read_root(buf)?;
                if parser.state == State::Head {
                    parser.push_head = Some(Box::default());
                    Ok(Step::Nothing)
                } else {
                    parser.end_head(None, None)?;
                    Ok(Step::Head)
                }
            }
            State::Head => {
                let mut parts = parser.push_head.take().unwrap_or_default();
                let first_entry = match parser.read_root_children(buf, Some(&mut parts), true)? {
                    Child::More => {
                        parser.push_head = Some(parts);
                        return Ok(Step::Nothing);
                    }
                    Child::Entry(first) => Some(first),
                    Child::End => None,
                };
                parser.end_head(Some(*parts), first_entry)?;
                Ok(Step::Head)
            }
            State::EntryStarted { empty } => {
                parser.state = State::Entries;
                parser.read_entry(buf, empty, slot)?;
                Ok(if slot.is_some() {
                    Step::Entry
                } else {
                    Step::Nothing
                })
            }
            State::Entries => {
                match parser.read_root_children(buf, None, true)? {
                    Child::More => {}
                    Child::Entry(next) => parser.enter(Some(next))?,
                    Child::End => parser.enter(None)?,
                }
                Ok(Step::Nothing)
            }
            State::Done => {
                parser.end_document(buf)?;
                Ok(Step::End)
            }
        }
    }
}

impl<I: Input> Parser<I> {
    /// Reads the next entry into `slot` (`None` after the last). An entry is built where it
    /// is to stay, its `rs:md` included: entries are large, and moving them costs.
    fn next_entry_into(
        &mut self,
        buf: &mut Vec<u8>,
        slot: &mut Option<Entry>,
    ) -> Result<(), Error> {
        if self.head.is_none() {
            self.read_head(buf)?;
        }
        loop {
            match self.state {
                State::Prolog | State::Head => return Err(self.error(ErrorKind::Empty)),
                State::Done => {
                    self.end_document(buf)?;
                    *slot = None;
                    return Ok(());
                }
                State::EntryStarted { empty } => {
                    self.state = State::Entries;
                    if self.read_entry(buf, empty, slot)? {
                        return Ok(());
                    }
                }
                State::Entries => self.read_between_entries(buf)?,
            }
        }
    }

    /// After the root: reads to the end of input and ends the checks, once.
    fn end_document(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        if !self.finished {
            self.finished = true;
            self.read_epilog(buf)?;
            if let Some(checker) = self.checker.take() {
                checker.finish(&mut self.findings);
                let bytes = self.input.bytes_read();
                if bytes > MAX_BYTES {
                    let end = self.place(self.position());
                    self.finding(
                        Rule::MaxBytes,
                        format!("{bytes} bytes, uncompressed: more than {MAX_BYTES}"),
                        end,
                    );
                }
            }
        }
        Ok(())
    }

    // --- positions and errors ---

    /// Where the event being handled started. A slice input counts lines only when a
    /// finding or error needs them: see `place`.
    fn position(&self) -> Position {
        let (byte, line, column) = self.event_at;
        Position {
            byte,
            line,
            column,
            entry: matches!(self.state, State::Entries | State::EntryStarted { .. })
                .then_some(self.entries)
                .filter(|n| *n > 0),
        }
    }

    #[cold]
    fn error(&self, kind: ErrorKind) -> Error {
        Error::new(kind, self.place(self.position())).in_file(self.path.as_deref())
    }

    /// Remembers where the next event starts: quick-xml consumes its input exactly up to
    /// the end of each event, so this is the end of the previous one.
    ///
    /// While an entry or the head is read, this is also where its length is checked: it
    /// is kept in memory whole.
    fn mark(&mut self) -> Result<(), Error> {
        self.event_at = self.input.mark();
        if let Some((start, what)) = self.scope {
            if self.event_at.0 - start > self.limits.max_entry_len {
                return Err(self.error(ErrorKind::EntryTooLong {
                    what,
                    limit: self.limits.max_entry_len,
                }));
            }
        }
        Ok(())
    }

    /// A position with its line and column, counted now if the input did not.
    fn place(&self, mut p: Position) -> Position {
        if p.line == 0 {
            (p.line, p.column) = self.input.line_column(p.byte);
        }
        p
    }

    #[cold]
    fn xml_error(&self, e: quick_xml::Error) -> Error {
        let kind = match e {
            _ if self.input.over_limit() => ErrorKind::TooLarge(self.limits.max_bytes),
            _ if self.input.over_event() => ErrorKind::EventTooLong(self.limits.max_event_len),
            quick_xml::Error::Io(io) => {
                ErrorKind::Io(std::io::Error::new(io.kind(), io.to_string()))
            }
            quick_xml::Error::Namespace(quick_xml::name::NamespaceError::UnknownPrefix(p)) => {
                ErrorKind::UndeclaredPrefix(p)
            }
            other => ErrorKind::Xml(other),
        };
        let mut error = self.error(kind);
        let position = error.position_mut();
        position.byte = self.input.error_position().max(position.byte);
        error
    }

    fn declaration_error(&self, e: DeclarationError) -> Error {
        match e {
            DeclarationError::Invalid(key) => self.error(ErrorKind::Namespace(key)),
            DeclarationError::TooMany(n) => self.error(ErrorKind::TooManyNamespaces(n)),
            DeclarationError::Value(e) => self.xml_error(e),
        }
    }

    fn finding(&mut self, rule: Rule, message: String, at: Position) {
        let at = self.place(at);
        self.findings.push(Finding {
            message,
            entry: at.entry,
            position: Some(TextPosition {
                line: at.line,
                column: at.column,
            }),
            ..Finding::new(rule, at.entry)
        });
    }

    fn value_finding(&mut self, error: &dyn RuleError, at: Position) {
        self.finding(error.rule(), error.to_string(), at);
    }

    // --- events ---

    /// The element's tag, from its namespace and local name.
    fn classify(&self, start: &BytesStart<'_>) -> Result<Tag, Error> {
        // With the root's conventional bindings in scope, names as written say it all.
        if self.ns.len() == self.conventional_bindings {
            match start.name().0 {
                "url" => return Ok(Tag::Url),
                "loc" => return Ok(Tag::Loc),
                "lastmod" => return Ok(Tag::Lastmod),
                "rs:md" => return Ok(Tag::Md),
                "rs:ln" => return Ok(Tag::Ln),
                "sitemap" => return Ok(Tag::Sitemap),
                "changefreq" => return Ok(Tag::Changefreq),
                _ => {}
            }
        }
        let (known, local) = self.ns.known_element(start.name().0);
        let sitemap = match known {
            Some(Known::Sitemap) => true,
            None => self.lenient,
            Some(Known::ResourceSync) => {
                return Ok(match local {
                    "md" => Tag::Md,
                    "ln" => Tag::Ln,
                    _ if is_sitemap_name(local) => Tag::MisplacedSitemap,
                    _ => Tag::Other,
                });
            }
            Some(Known::Other) => {
                // An undeclared prefix is an error, not an extension.
                if let (Resolved::Unknown(prefix), _) = self.ns.element(start.name().0) {
                    return Err(self.error(ErrorKind::UndeclaredPrefix(prefix)));
                }
                false
            }
        };
        Ok(match local {
            "md" | "ln" => Tag::MisplacedRs,
            "url" if sitemap => Tag::Url,
            "loc" if sitemap => Tag::Loc,
            "lastmod" if sitemap => Tag::Lastmod,
            "sitemap" if sitemap => Tag::Sitemap,
            "changefreq" if sitemap => Tag::Changefreq,
            "urlset" if sitemap => Tag::UrlSet,
            "sitemapindex" if sitemap => Tag::SitemapIndex,
            _ if !sitemap && is_sitemap_name(local) => Tag::MisplacedSitemap,
            _ => Tag::Other,
        })
    }

    // --- the head ---

    fn read_head(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        self.read_root(buf)?;
        if self.state == State::Head {
            let mut parts = HeadParts::default();
            let first_entry = match self.read_root_children(buf, Some(&mut parts), false)? {
                Child::Entry(first) => Some(first),
                Child::End | Child::More => None,
            };
            self.end_head(Some(parts), first_entry)
        } else {
            self.end_head(None, None)
        }
    }

    /// Completes the head from the root's children read before the first entry (`None`
    /// for an empty root), starts that entry, and starts checking.
    fn end_head(
        &mut self,
        parts: Option<HeadParts>,
        first_entry: Option<(Tag, bool, Position)>,
    ) -> Result<(), Error> {
        let mut malformed = MalformedParts::default();
        if let Some(parts) = parts {
            if let Some(head) = &mut self.head {
                if let Some(md) = parts.md {
                    head.md = md;
                }
                head.links = parts.links;
                head.extensions = parts.extensions;
            }
            self.enter(first_entry)?;
            malformed = parts.malformed;
        }
        let Some(head) = &self.head else {
            return Err(self.error(ErrorKind::Empty));
        };
        if let Some(options) = self.check {
            self.checker = Some(Box::new(Checker::with_malformed(
                head,
                options,
                malformed.as_malformed(),
                &mut self.findings,
            )));
        }
        Ok(())
    }

    /// Reads the root's children up to the next entry's start tag, which it returns
    /// (`Child::Entry`), or to the root's end (`Child::End`). Before the first entry, `head`
    /// takes the document's metadata, links and extensions; after it (`None`), see
    /// `read_between_entries`.
    ///
    /// With `one`, it returns after one event or child element that is neither
    /// (`Child::More`): a push reader calls it once it holds that much of the document. (One loop
    /// over `read_root_child`, its only caller, rather than a second copy of the loop for
    /// the push reader.)
    fn read_root_children(
        &mut self,
        buf: &mut Vec<u8>,
        mut head: Option<&mut HeadParts>,
        one: bool,
    ) -> Result<Child, Error> {
        loop {
            match self.read_root_child(buf, head.as_deref_mut())? {
                Child::More if !one => {}
                child => return Ok(child),
            }
        }
    }

    /// Reads one event, or one child element, of the root: see `read_root_children`.
    fn read_root_child(
        &mut self,
        buf: &mut Vec<u8>,
        mut head: Option<&mut HeadParts>,
    ) -> Result<Child, Error> {
        let event = next_event!(self, buf);
        let (e, empty) = match event {
            Event::Start(e) => (e, false),
            Event::Empty(e) => (e, true),
            Event::End(_) => {
                self.ns.pop();
                return Ok(Child::End);
            }
            other => {
                self.between_children(other)?;
                return Ok(Child::More);
            }
        };
        self.ns
            .push(&e)
            .map_err(|err| self.declaration_error(err))?;
        let at = self.position();
        let tag = self.classify(&e)?;
        if let Some(parts) = head.as_deref_mut() {
            if !matches!(tag, Tag::Url | Tag::Sitemap) {
                parts.children += 1;
                self.check_children(parts.children)?;
            }
        }
        match tag {
            tag @ (Tag::Url | Tag::Sitemap) => {
                self.stray_attributes(&e, at)?;
                if empty {
                    self.ns.pop();
                }
                return Ok(Child::Entry((tag, empty, at)));
            }
            tag @ (Tag::Loc | Tag::Lastmod | Tag::Changefreq) => {
                // A <loc> or <lastmod> outside any entry: kept as an extension.
                drop(e);
                self.read_text_into(buf, empty)?;
                let Some(parts) = head.as_deref_mut() else {
                    return Ok(Child::More);
                };
                let name = match tag {
                    Tag::Loc => "loc",
                    Tag::Lastmod => "lastmod",
                    _ => "changefreq",
                };
                parts.extensions.push(Element {
                    namespace: SITEMAP_NAMESPACE.into(),
                    prefix: None,
                    name: name.into(),
                    attributes: Vec::new(),
                    content: crate::writer::escape_text(self.text()).into_owned(),
                });
            }
            Tag::Md => {
                let Some(parts) = head.as_deref_mut() else {
                    self.after_first_entry(&e, at);
                    self.rs_attributes(&e, at, &mut Md::default())?;
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                    return Ok(Child::More);
                };
                if parts.md.is_some() {
                    self.rs_attributes(&e, at, &mut Md::default())?;
                    self.finding(
                        Rule::MdNotRepeatable,
                        "the document has more than one rs:md; the first is kept".into(),
                        at,
                    );
                } else {
                    parts.malformed.md =
                        self.rs_attributes(&e, at, parts.md.insert(Md::default()))?;
                }
                drop(e);
                self.end_of_empty_element(buf, empty)?;
            }
            Tag::Ln => {
                let Some(parts) = head.as_deref_mut() else {
                    self.after_first_entry(&e, at);
                    let _ = self.link_attributes(&e, at)?;
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                    return Ok(Child::More);
                };
                let read = self.link_attributes(&e, at)?;
                parts.malformed.add(read, &mut parts.links);
                drop(e);
                self.end_of_empty_element(buf, empty)?;
            }
            Tag::UrlSet | Tag::SitemapIndex => {
                return Err(self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned())));
            }
            tag @ (Tag::MisplacedRs | Tag::MisplacedSitemap | Tag::Other) => {
                let mut element = self.extension_start(&e, tag, at)?;
                drop(e);
                self.extension_content(buf, &mut element, empty)?;
                if let Some(parts) = head {
                    parts.extensions.push(element);
                }
            }
        }
        Ok(Child::More)
    }

    fn read_root(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        let mut first = true;
        while self.state == State::Prolog {
            match next_event!(self, buf) {
                Event::Decl(decl) if first => match decl.encoding() {
                    Some(Ok(enc)) if !enc.eq_ignore_ascii_case("utf-8") => {
                        return Err(self.error(ErrorKind::Encoding(enc.into_owned())));
                    }
                    Some(Err(e)) => return Err(self.xml_error(e.into())),
                    _ => {}
                },
                Event::Decl(_) => return Err(self.error(ErrorKind::MisplacedDeclaration)),
                Event::DocType(_) => return Err(self.error(ErrorKind::DocType)),
                Event::Comment(_) | Event::PI(_) => {}
                Event::Text(t) if is_xml_space(&t) => {}
                Event::Text(t) => {
                    return Err(self.error(ErrorKind::UnexpectedText(clip(&t))));
                }
                Event::GeneralRef(r) => {
                    return Err(self.error(ErrorKind::UnexpectedText(format!("&{};", &*r))));
                }
                Event::CData(_) => return Err(self.error(ErrorKind::UnexpectedCData)),
                Event::Start(e) => {
                    self.ns
                        .push(&e)
                        .map_err(|err| self.declaration_error(err))?;
                    self.start_root(&e, false)?;
                }
                Event::Empty(e) => {
                    self.ns
                        .push(&e)
                        .map_err(|err| self.declaration_error(err))?;
                    self.start_root(&e, true)?;
                }
                Event::End(e) => {
                    return Err(
                        self.error(ErrorKind::UnexpectedEndTag(e.name().as_ref().to_owned()))
                    );
                }
                Event::Eof => return Err(self.error(ErrorKind::Empty)),
            }
            first = false;
        }
        Ok(())
    }

    /// After the root: only white space, comments and processing instructions, then the
    /// end of input.
    fn read_epilog(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        loop {
            match next_event!(self, buf) {
                Event::Eof => return Ok(()),
                Event::Comment(_) | Event::PI(_) => {}
                Event::Start(e) | Event::Empty(e) => {
                    return Err(self.error(ErrorKind::AfterRoot(e.name().as_ref().to_owned())));
                }
                event => self.expect_space(event)?,
            }
        }
    }

    fn start_root(&mut self, e: &BytesStart<'_>, empty: bool) -> Result<(), Error> {
        let (ns, local) = self.ns.element(e.name().0);
        let ns = match ns {
            Resolved::Bound(ns) => Some(ns.to_owned()),
            Resolved::Unbound => None,
            Resolved::Unknown(p) => return Err(self.error(ErrorKind::UndeclaredPrefix(p))),
        };
        let root = match local {
            "urlset" => Root::UrlSet,
            "sitemapindex" => Root::SitemapIndex,
            _ => None.ok_or_else(|| {
                self.error(ErrorKind::NotSitemap {
                    name: local.to_owned(),
                    namespace: ns.clone(),
                })
            })?,
        };
        match ns.as_deref() {
            Some(SITEMAP_NAMESPACE) => {}
            None => {
                // Sitemaps in the wild often forget the namespace; reading them as the
                // Sitemap's is what every consumer does, but it is reported.
                self.lenient = true;
                let at = self.position();
                self.finding(
                    Rule::SitemapNamespace,
                    format!("<{local}> is in no namespace; read as a Sitemap"),
                    at,
                );
            }
            Some(other) => {
                return Err(self.error(ErrorKind::NotSitemap {
                    name: local.to_owned(),
                    namespace: Some(other.to_owned()),
                }));
            }
        }
        if self.ns.is_conventional() {
            self.conventional_bindings = self.ns.len();
        }
        self.root_name = e.name().as_ref().to_owned();
        let mut head = DocumentHead::of_root(root);
        let at = self.position();
        head.attributes = self.plain_attributes(e, at)?;
        self.head = Some(Box::new(head));
        self.state = if empty { State::Done } else { State::Head };
        if !empty {
            self.scope = Some((at.byte, "the head"));
        }
        Ok(())
    }

    fn start_entry(&mut self, tag: Tag, empty: bool, mut at: Position) {
        self.entries += 1;
        at.entry = Some(self.entries);
        self.entry_position = at;
        self.scope = Some((at.byte, "an entry"));
        self.state = State::EntryStarted { empty };
        let expected = match self.head.as_ref().map(|h| h.root) {
            Some(Root::SitemapIndex) => Tag::Sitemap,
            _ => Tag::Url,
        };
        if tag != expected {
            self.finding(
                Rule::EntryElement,
                format!(
                    "a <{}> entry in a <{}>",
                    if tag == Tag::Url { "url" } else { "sitemap" },
                    if expected == Tag::Url {
                        "urlset"
                    } else {
                        "sitemapindex"
                    }
                ),
                at,
            );
        }
    }

    // --- entries ---

    /// Reads up to the next entry's start tag, or the end of the root. Between entries,
    /// document-level metadata is reported (the head has been handed out: it cannot be
    /// placed, and guessing would misread the document); it and other children are read,
    /// so that their markup is checked and bounded, and dropped.
    fn read_between_entries(&mut self, buf: &mut Vec<u8>) -> Result<(), Error> {
        match self.read_root_children(buf, None, false)? {
            Child::Entry(next) => self.enter(Some(next)),
            Child::End | Child::More => self.enter(None),
        }
    }

    /// Document-level metadata after the first entry: reported, and read (so that its
    /// values are checked) but dropped, since the head has been handed out.
    #[cold]
    fn after_first_entry(&mut self, e: &BytesStart<'_>, at: Position) {
        let at = Position { entry: None, ..at };
        self.finding(
            Rule::HeadBeforeEntries,
            format!(
                "<{}> after the first entry; ignored, as the document's metadata comes first",
                e.name().as_ref()
            ),
            at,
        );
    }

    /// Starts the entry whose start tag was read, or ends the document at the root's end.
    fn enter(&mut self, next: Option<(Tag, bool, Position)>) -> Result<(), Error> {
        self.scope = None;
        match next {
            Some((tag, empty, at)) => {
                if self.entries >= self.limits.max_entries {
                    return Err(self.error(ErrorKind::TooManyEntries(self.limits.max_entries)));
                }
                self.start_entry(tag, empty, at);
            }
            None => self.state = State::Done,
        }
        Ok(())
    }

    /// Reads an entry into `slot`; false when it was skipped for want of a `<loc>`.
    fn read_entry(
        &mut self,
        buf: &mut Vec<u8>,
        empty: bool,
        slot: &mut Option<Entry>,
    ) -> Result<bool, Error> {
        let start = self.entry_position;
        *slot = None;
        let mut parts = EntryParts::default();
        if !empty {
            self.read_entry_children(buf, &mut parts, slot)?;
        }
        self.scope = None;
        let Some(entry) = slot else {
            if parts.locs == 0 {
                self.finding(
                    Rule::LocMandatory,
                    "the entry has no loc; skipped".into(),
                    start,
                );
            }
            if let Some(checker) = &mut self.checker {
                checker.skip_entry(&mut self.findings);
            }
            return Ok(false);
        };
        entry.lastmod = parts.lastmod;
        entry.changefreq = parts.changefreq;
        entry.links = mem::take(&mut parts.links);
        entry.extensions = mem::take(&mut parts.extensions);
        if let Some(checker) = &mut self.checker {
            let before = self.findings.len();
            checker.check_entry_with(entry, parts.malformed.as_malformed(), &mut self.findings);
            if self.findings.len() > before {
                let start = self.place(start);
                for f in &mut self.findings[before..] {
                    f.position.get_or_insert(TextPosition {
                        line: start.line,
                        column: start.column,
                    });
                }
            }
        }
        Ok(true)
    }

    /// Reads an entry's children up to its end tag: the hot path of reading, one flat
    /// loop over events into `buf`, where the head and the gaps between entries go through
    /// `read_child`.
    fn read_entry_children(
        &mut self,
        buf: &mut Vec<u8>,
        parts: &mut EntryParts,
        slot: &mut Option<Entry>,
    ) -> Result<(), Error> {
        loop {
            let event = next_event!(self, buf);
            let (e, empty) = match event {
                Event::Start(e) => (e, false),
                Event::Empty(e) => (e, true),
                Event::End(_) => {
                    self.ns.pop();
                    return Ok(());
                }
                other => {
                    self.between_children(other)?;
                    continue;
                }
            };
            self.ns
                .push(&e)
                .map_err(|err| self.declaration_error(err))?;
            let at = self.position();
            parts.children += 1;
            self.check_children(parts.children)?;
            match self.classify(&e)? {
                tag @ (Tag::Loc | Tag::Lastmod | Tag::Changefreq) => {
                    self.stray_attributes(&e, at)?;
                    drop(e);
                    self.read_text_into(buf, empty)?;
                    self.entry_text(tag, at, parts, slot);
                }
                Tag::Md => {
                    // Into the entry once its <loc> has made it.
                    let md = match slot {
                        Some(entry) => &mut entry.md,
                        None => &mut parts.md,
                    };
                    if md.is_some() {
                        self.rs_attributes(&e, at, &mut Md::default())?;
                        self.finding(
                            Rule::MdNotRepeatable,
                            "the entry has more than one rs:md; the first is kept".into(),
                            at,
                        );
                    } else {
                        // Built where it stays: an `Md` is large, and moving it costs.
                        parts.malformed.md =
                            self.rs_attributes(&e, at, md.insert(Md::default()))?;
                    }
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                }
                Tag::Ln => {
                    let read = self.link_attributes(&e, at)?;
                    parts.malformed.add(read, &mut parts.links);
                    drop(e);
                    self.end_of_empty_element(buf, empty)?;
                }
                Tag::Url | Tag::Sitemap => {
                    return Err(self.error(ErrorKind::NestedEntry(e.name().as_ref().to_owned())));
                }
                Tag::UrlSet | Tag::SitemapIndex => {
                    return Err(
                        self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned()))
                    );
                }
                tag @ (Tag::MisplacedRs | Tag::MisplacedSitemap | Tag::Other) => {
                    let mut element = self.extension_start(&e, tag, at)?;
                    drop(e);
                    self.extension_content(buf, &mut element, empty)?;
                    parts.extensions.push(element);
                }
            }
        }
    }

    /// Reads the value of an entry's `<loc>`, `<lastmod>` or `<changefreq>` from `self.text`.
    fn entry_text(
        &mut self,
        tag: Tag,
        at: Position,
        parts: &mut EntryParts,
        slot: &mut Option<Entry>,
    ) {
        let text = self.text();
        match tag {
            Tag::Loc => {
                parts.locs += 1;
                if parts.locs > 1 {
                    self.finding(
                        Rule::LocMandatory,
                        "more than one loc; the first is kept".into(),
                        at,
                    );
                } else {
                    // A `<loc>` written unescaped (a raw space in a file name, as Python
                    // resync's publisher writes them) is read as the URL standard reads
                    // it, with a finding that says so: skipping it would leave a resource
                    // the Source lists unread and uncounted.
                    let read = Uri::parse(text).map(|loc| (loc, None)).or_else(|err| {
                        Uri::from_unescaped(text)
                            .map(|loc| (loc, Some(err.clone())))
                            .map_err(|_| err)
                    });
                    match read {
                        Ok((loc, repaired)) => {
                            if let Some(err) = repaired {
                                self.finding(
                                    err.rule(),
                                    format!(
                                        "{err}; read as \"{loc}\", percent-encoded as the URL \
                                         standard does"
                                    ),
                                    at,
                                );
                            }
                            let mut entry = Entry::new(loc);
                            // An rs:md read before the <loc> (rare): from now on, the entry's.
                            entry.md = parts.md.take();
                            *slot = Some(entry);
                        }
                        Err(err) => self.value_finding(&err, at),
                    }
                }
            }
            Tag::Lastmod => match text.parse() {
                Ok(t) => parts.lastmod = Some(t),
                Err(err) => self.value_finding(&err, at),
            },
            _ => match text.parse() {
                Ok(c) => parts.changefreq = Some(c),
                Err(err) => self.value_finding(&err, at),
            },
        }
    }

    /// Closes `rs:md` or `rs:ln`: an empty element's scope, or the content of one written
    /// with an end tag, which may only be white space.
    fn end_of_empty_element(&mut self, buf: &mut Vec<u8>, empty: bool) -> Result<(), Error> {
        if empty {
            self.ns.pop();
            return Ok(());
        }
        loop {
            match next_event!(self, buf) {
                Event::End(_) => {
                    self.ns.pop();
                    return Ok(());
                }
                Event::Start(e) | Event::Empty(e) => {
                    return Err(
                        self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned()))
                    );
                }
                other => self.between_children(other)?,
            }
        }
    }

    /// An event other than a start or end tag where elements are expected: comments,
    /// processing instructions and white space are passed over, anything else refused.
    fn between_children(&mut self, event: Event<'_>) -> Result<(), Error> {
        match event {
            Event::Comment(_) | Event::PI(_) => Ok(()),
            Event::DocType(_) => Err(self.error(ErrorKind::DocType)),
            Event::Decl(_) => Err(self.error(ErrorKind::MisplacedDeclaration)),
            Event::Eof => Err(self.error(ErrorKind::Unclosed(self.root_name.clone()))),
            other => self.expect_space(other),
        }
    }

    /// Reads the text of a simple element (`<loc>`, `<lastmod>`, `<changefreq>`) into
    /// `self.text`, references resolved, up to and including its end tag (closing its
    /// scope), with `buf` for the events. Markup inside is an error.
    fn read_text_into(&mut self, buf: &mut Vec<u8>, empty: bool) -> Result<(), Error> {
        self.text.clear();
        if empty {
            self.ns.pop();
            return Ok(());
        }
        loop {
            let event = next_event!(self, buf);
            match event {
                Event::Text(t) => {
                    // Text without line breaks, controls or `U+FFFx` is its own content.
                    if needs_attention(t.as_bytes(), 0) {
                        let content = t.xml10_content();
                        self.push_text(&content)?;
                    } else {
                        self.push_checked_text(&t)?;
                    }
                }
                Event::CData(c) => {
                    let content = c.xml10_content();
                    self.push_text(&content)?;
                }
                Event::GeneralRef(reference) => {
                    let c = self.resolve_reference(&reference)?;
                    self.push_text(c.encode_utf8(&mut [0; 4]))?;
                }
                Event::End(_) => {
                    self.ns.pop();
                    return Ok(());
                }
                Event::Start(e) | Event::Empty(e) => {
                    return Err(
                        self.error(ErrorKind::UnexpectedElement(e.name().as_ref().to_owned()))
                    );
                }
                Event::Comment(_) | Event::PI(_) => {}
                other => self.between_children(other)?,
            }
        }
    }

    /// Refuses an element inside extension content whose name or attributes use a prefix
    /// without a declaration: kept as text, it would be written back as a document no
    /// namespace-aware reader accepts.
    fn check_prefixes(&self, e: &BytesStart<'_>) -> Result<(), Error> {
        if let (Resolved::Unknown(p), _) = self.ns.element(e.name().as_ref()) {
            return Err(self.error(ErrorKind::UndeclaredPrefix(p)));
        }
        if !e.attributes_raw().contains(':') {
            return Ok(());
        }
        for (n, attr) in e.attributes().with_checks(false).enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            let key = attr.key.as_ref();
            if !key.starts_with("xmlns") {
                if let (Resolved::Unknown(p), _) = self.ns.attribute(key) {
                    return Err(self.error(ErrorKind::UndeclaredPrefix(p)));
                }
            }
        }
        Ok(())
    }

    /// Refuses the child element that makes an entry's or the head's children too many:
    /// they are kept in memory until the entry is handed out.
    fn check_children(&self, children: usize) -> Result<(), Error> {
        if children > self.limits.max_children {
            return Err(self.error(ErrorKind::TooManyChildren(self.limits.max_children)));
        }
        Ok(())
    }

    /// Refuses the attribute that makes an element's attributes too many: they are kept,
    /// and finding a repeated name takes time that grows with their square.
    fn check_attributes(&self, attributes: usize) -> Result<(), Error> {
        if attributes > self.limits.max_attributes {
            return Err(self.error(ErrorKind::TooManyAttributes(self.limits.max_attributes)));
        }
        Ok(())
    }

    /// Accepts white space, and refuses any other text, as content between elements.
    fn expect_space(&self, event: Event<'_>) -> Result<(), Error> {
        match event {
            Event::Text(t) if is_xml_space(&t) => Ok(()),
            Event::Text(t) => Err(self.error(ErrorKind::UnexpectedText(clip(&t)))),
            Event::CData(_) => Err(self.error(ErrorKind::UnexpectedCData)),
            Event::GeneralRef(r) => {
                Err(self.error(ErrorKind::UnexpectedText(format!("&{};", &*r))))
            }
            _ => Ok(()),
        }
    }

    /// The text last read by `read_text_into`, without the white space around it.
    fn text(&self) -> &str {
        // XML's white space is ASCII's but for form feed, which the text cannot hold (it
        // is a forbidden character): the byte-wise trim is the cheaper.
        self.text.trim_ascii()
    }

    fn push_text(&mut self, s: &str) -> Result<(), Error> {
        check_chars(s).map_err(|c| self.error(ErrorKind::ForbiddenCharacter(c)))?;
        self.push_checked_text(s)
    }

    /// Adds text whose characters are known to be allowed.
    fn push_checked_text(&mut self, s: &str) -> Result<(), Error> {
        if self.text.len() + s.len() > self.limits.max_value_len {
            return Err(self.error(ErrorKind::ValueTooLong(self.limits.max_value_len)));
        }
        self.text.push_str(s);
        Ok(())
    }

    fn resolve_reference(&self, reference: &str) -> Result<char, Error> {
        let c = match reference {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "apos" => '\'',
            "quot" => '"',
            r if r.starts_with('#') => char_reference(r)
                .ok_or_else(|| self.error(ErrorKind::CharacterReference(clip(r))))?,
            other => return Err(self.error(ErrorKind::UnknownEntity(clip(other)))),
        };
        check_chars(c.encode_utf8(&mut [0; 4]))
            .map_err(|code| self.error(ErrorKind::ForbiddenCharacter(code)))?;
        Ok(c)
    }

    // --- attributes ---

    fn attribute_value<'v>(
        &self,
        attr: &quick_xml::events::attributes::Attribute<'v>,
    ) -> Result<Cow<'v, str>, Error> {
        if attr.value.len() > self.limits.max_value_len {
            return Err(self.error(ErrorKind::ValueTooLong(self.limits.max_value_len)));
        }
        // One vectorised pass: a value without `&`, without bytes below 0x20 (tab, CR and
        // LF are normalized to spaces, the others are forbidden) and without 0xEF (the
        // lead byte of U+FFFE and U+FFFF) is its own normalized value, and valid.
        if !needs_attention(attr.value.as_bytes(), b'&') {
            return Ok(attr.value.clone());
        }
        if let Some(reference) = bad_char_reference(&attr.value) {
            return Err(self.error(ErrorKind::CharacterReference(clip(reference))));
        }
        let value =
            attr.normalized_value(XmlVersion::Implicit1_0)
                .map_err(|e| match e {
                    quick_xml::Error::Escape(
                        quick_xml::escape::EscapeError::UnrecognizedEntity(_, name),
                    ) => self.error(ErrorKind::UnknownEntity(clip(&name))),
                    other => self.xml_error(other),
                })?;
        check_chars(&value).map_err(|c| self.error(ErrorKind::ForbiddenCharacter(c)))?;
        Ok(value)
    }

    /// Reads one attribute: `None` for a namespace declaration, a ResourceSync attribute
    /// by local name and value (a prefixed one is read, and reported), or an extension.
    fn attribute<'v>(
        &mut self,
        attr: &'v quick_xml::events::attributes::Attribute<'v>,
        at: Position,
    ) -> Result<Option<Attr<'v>>, Error> {
        let key = attr.key.as_ref();
        if key == "xmlns" || key.starts_with("xmlns:") {
            return Ok(None);
        }
        let value = self.attribute_value(attr)?;
        let (ns, local) = self.ns.attribute(key);
        let namespace = match ns {
            Resolved::Unbound => return Ok(Some(Attr::Rs(local, value))),
            Resolved::Bound(RS_NAMESPACE) => None,
            Resolved::Bound(ns) => Some(ns.to_owned()),
            Resolved::Unknown(p) => return Err(self.error(ErrorKind::UndeclaredPrefix(p))),
        };
        let Some(namespace) = namespace else {
            self.finding(
                Rule::AttributePrefix,
                format!("attribute {key} has a namespace prefix"),
                at,
            );
            return Ok(Some(Attr::Rs(local, value)));
        };
        Ok(Some(Attr::Extension(Attribute {
            namespace,
            prefix: attr.key.prefix().map(|p| p.into_inner().to_owned()),
            name: local.to_owned(),
            value: value.into_owned(),
        })))
    }

    /// Every attribute of an element kept as written, for roots and extensions.
    fn plain_attributes(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
    ) -> Result<Vec<Attribute>, Error> {
        let mut out = Vec::new();
        for (n, attr) in e.attributes().enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            match self.attribute(&attr, at)? {
                None => {}
                Some(Attr::Extension(a)) => out.push(a),
                Some(Attr::Rs(name, value)) => out.push(Attribute {
                    namespace: String::new(),
                    prefix: None,
                    name: name.to_owned(),
                    value: value.into_owned(),
                }),
            }
        }
        Ok(out)
    }

    /// Reads the attributes of `rs:md` or `rs:ln` into `into`, and returns those present
    /// but malformed (reported here, so that the checker does not report them missing
    /// too). An attribute that is not read into the model (malformed, unknown) is kept as
    /// written, so that writing the document back loses nothing.
    fn rs_attributes<T: ReadInto>(
        &mut self,
        e: &BytesStart<'_>,
        at: Position,
        into: &mut T,
    ) -> Result<Attributes, Error> {
        let mut malformed = Attributes::NONE;
        let mut seen = Seen::default();
        for (n, attr) in e.attributes().with_checks(false).enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            let (name, value) = match self.attribute(&attr, at)? {
                None => continue,
                Some(Attr::Extension(a)) => {
                    seen.other = true;
                    into.extensions().push(a);
                    continue;
                }
                Some(Attr::Rs(name, value)) => (name, value),
            };
            let known = AttributeName::from_name(name).filter(|a| a.is_on(T::ELEMENT));
            seen.note(&attr, name, known);
            match known {
                Some(attribute) => match into.read(attribute, &value) {
                    Ok(()) => continue,
                    Err(error) => {
                        malformed.insert(attribute);
                        self.value_finding(error.as_ref(), at);
                    }
                },
                None => self.unknown_attribute(&attr, name, T::ELEMENT, at),
            }
            into.extensions().push(Attribute {
                namespace: String::new(),
                prefix: None,
                name: name.to_owned(),
                value: value.into_owned(),
            });
        }
        self.check_duplicates(e, seen)?;
        Ok(malformed)
    }

    fn link_attributes(&mut self, e: &BytesStart<'_>, at: Position) -> Result<LinkRead, Error> {
        let mut parts = PartialLink::default();
        let malformed = self.rs_attributes(e, at, &mut parts)?;
        match parts.into_link() {
            Ok(link) => Ok(LinkRead::Kept(link, malformed)),
            Err(parts) => {
                let broken = malformed.contains(AttributeName::Rel)
                    || malformed.contains(AttributeName::Href);
                if !broken {
                    self.finding(
                        Rule::LinkRelHrefMandatory,
                        "an rs:ln without rel or href; skipped".into(),
                        at,
                    );
                }
                // A link whose relation was read but whose href was not is not also
                // missing.
                Ok(LinkRead::Dropped(parts.rel.filter(|_| broken)))
            }
        }
    }

    /// Reports an attribute in no namespace that the element does not have, naming the
    /// one probably meant (`lenght` for `length`): kept as an extension, it would
    /// otherwise go unnoticed and, say, the fixity it was to carry be lost. An attribute
    /// prefixed with the ResourceSync namespace is reported as such already.
    #[cold]
    fn unknown_attribute(
        &mut self,
        attr: &quick_xml::events::attributes::Attribute<'_>,
        name: &str,
        element: RsElement,
        at: Position,
    ) {
        let key = attr.key.as_ref();
        let known: Vec<&str> = element.attributes().map(AttributeName::as_str).collect();
        let message = match closest(name, &known) {
            Some(meant) => format!(
                "unknown attribute {key} on {element}; did you mean {meant}? It is kept, not understood"
            ),
            None => format!("unknown attribute {key} on {element}; it is kept, not understood"),
        };
        self.finding(Rule::AttributeUnknown, message, at);
    }

    /// Reports the attributes of a Sitemap element that has none (`<url>`, `<loc>` …):
    /// the model has no place for them, so they are not kept. Namespace declarations are
    /// not attributes here.
    #[inline]
    fn stray_attributes(&mut self, e: &BytesStart<'_>, at: Position) -> Result<(), Error> {
        if e.attributes_raw().is_empty() {
            return Ok(());
        }
        self.report_stray_attributes(e, at)
    }

    #[cold]
    fn report_stray_attributes(&mut self, e: &BytesStart<'_>, at: Position) -> Result<(), Error> {
        for (n, attr) in e.attributes().enumerate() {
            self.check_attributes(n + 1)?;
            let attr = attr.map_err(|err| self.xml_error(err.into()))?;
            if self.attribute(&attr, at)?.is_some() {
                self.finding(
                    Rule::AttributeUnknown,
                    format!(
                        "attribute {} on <{}>: the Sitemap protocol defines none; ignored",
                        attr.key.as_ref(),
                        e.name().as_ref()
                    ),
                    at,
                );
            }
        }
        Ok(())
    }

    /// Refuses an element that repeats an attribute. `rs:md` and `rs:ln` are read without
    /// quick-xml's own check (it keeps a list of names per element); their known names are
    /// checked by `Seen`, and only an element with other attributes is checked again here.
    fn check_duplicates(&self, e: &BytesStart<'_>, seen: Seen) -> Result<(), Error> {
        // quick-xml's check finds the repeat and says where it is.
        if seen.other || seen.repeated {
            for attr in e.attributes() {
                attr.map_err(|err| self.xml_error(err.into()))?;
            }
        }
        Ok(())
    }

    // --- extensions ---

    /// Reads an element outside the Sitemap and ResourceSync vocabularies, keeping its
    /// content as XML text.
    fn extension_start(
        &mut self,
        e: &BytesStart<'_>,
        tag: Tag,
        at: Position,
    ) -> Result<Element, Error> {
        let (ns, local) = self.ns.element(e.name().0);
        let namespace = match ns {
            Resolved::Bound(ns) => ns.to_owned(),
            Resolved::Unbound => String::new(),
            Resolved::Unknown(p) => return Err(self.error(ErrorKind::UndeclaredPrefix(p))),
        };
        let name = local.to_owned();
        let misplaced = match tag {
            Tag::MisplacedRs => Some((Rule::ResourceSyncNamespace, "ResourceSync's")),
            Tag::MisplacedSitemap => Some((Rule::SitemapNamespace, "the Sitemap's")),
            _ => None,
        };
        if let Some((rule, whose)) = misplaced {
            let written = e.name();
            let written = written.as_ref();
            let message = if namespace.is_empty() {
                format!("<{written}> is in no namespace, not {whose}; kept as an extension")
            } else {
                format!(
                    "<{written}> is in namespace \"{namespace}\", not {whose}; kept as an extension"
                )
            };
            self.finding(rule, message, at);
        }
        let prefix = e.name().prefix().map(|p| p.into_inner().to_owned());
        let attributes = self.plain_attributes(e, at)?;
        Ok(Element {
            namespace,
            prefix,
            name,
            attributes,
            content: String::new(),
        })
    }

    /// Reads an extension element's content as XML text, bounded in depth and length, up
    /// to and including its end tag (closing its scope), with `buf` for the events.
    fn extension_content(
        &mut self,
        buf: &mut Vec<u8>,
        element: &mut Element,
        empty: bool,
    ) -> Result<(), Error> {
        if empty {
            self.ns.pop();
            return Ok(());
        }
        let mut depth = 1usize;
        loop {
            let event = next_event!(self, buf);
            match &event {
                Event::Comment(_)
                | Event::PI(_)
                | Event::DocType(_)
                | Event::Decl(_)
                | Event::Eof => {
                    // Passed over (comments, processing instructions) or refused.
                    self.between_children(event)?;
                    continue;
                }
                Event::Start(e) => {
                    self.ns.push(e).map_err(|err| self.declaration_error(err))?;
                    self.check_prefixes(e)?;
                    depth += 1;
                    if depth > self.limits.max_depth {
                        return Err(self.error(ErrorKind::TooDeep(self.limits.max_depth)));
                    }
                }
                Event::Empty(e) => {
                    // Its declarations are checked, and go out of scope at once.
                    self.ns.push(e).map_err(|err| self.declaration_error(err))?;
                    self.check_prefixes(e)?;
                    self.ns.pop();
                }
                Event::End(_) => {
                    self.ns.pop();
                    depth -= 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                Event::GeneralRef(reference) => {
                    self.resolve_reference(reference)?;
                }
                Event::Text(t) => {
                    check_chars(t).map_err(|c| self.error(ErrorKind::ForbiddenCharacter(c)))?
                }
                Event::CData(_) => {}
            }
            crate::writer::write_event(&mut element.content, &event);
            if element.content.len() > self.limits.max_value_len {
                return Err(self.error(ErrorKind::ValueTooLong(self.limits.max_value_len)));
            }
        }
    }
}

/// The name in `known` that `name` is most likely a misspelling of: the same but for
/// case, or at most one edit (two for longer names) away, counting a swap of two
/// neighbours as one edit.
fn closest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    if let Some(k) = known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        return Some(k);
    }
    let allowed = if name.chars().count() > 5 { 2 } else { 1 };
    known
        .iter()
        .map(|k| (edit_distance(name, k), *k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Optimal string alignment distance between two short names: insertions, deletions,
/// substitutions and swaps of neighbours, by characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 || a.len() > 64 {
        return usize::MAX;
    }
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// Which attributes of an `rs:md` or `rs:ln` have been read, to find repeats.
#[derive(Clone, Copy, Default)]
struct Seen {
    /// The known unprefixed names.
    known: Attributes,
    /// Some known name came twice.
    repeated: bool,
    /// Some attribute was prefixed or unknown: the names need quick-xml's full check.
    other: bool,
}

impl Seen {
    /// Notes an attribute read as `name`, the element's attribute `known` if it has one.
    fn note(
        &mut self,
        attr: &quick_xml::events::attributes::Attribute<'_>,
        name: &str,
        known: Option<AttributeName>,
    ) {
        let unprefixed = attr.key.as_ref().len() == name.len();
        match known {
            Some(attribute) if unprefixed => {
                self.repeated |= self.known.contains(attribute);
                self.known.insert(attribute);
            }
            _ => self.other = true,
        }
    }
}

/// What an attribute of `rs:md` or `rs:ln` is read into: an [`Md`], or the
/// [`PartialLink`] a [`Link`] is made of.
trait ReadInto {
    const ELEMENT: RsElement;
    fn read(&mut self, attribute: AttributeName, text: &str) -> Result<(), Box<dyn RuleError>>;
    fn extensions(&mut self) -> &mut Vec<Attribute>;
}

impl ReadInto for Md {
    const ELEMENT: RsElement = RsElement::Md;
    #[inline]
    fn read(&mut self, attribute: AttributeName, text: &str) -> Result<(), Box<dyn RuleError>> {
        attribute.read_md(self, text)
    }
    fn extensions(&mut self) -> &mut Vec<Attribute> {
        &mut self.extensions
    }
}

impl ReadInto for PartialLink {
    const ELEMENT: RsElement = RsElement::Ln;
    #[inline]
    fn read(&mut self, attribute: AttributeName, text: &str) -> Result<(), Box<dyn RuleError>> {
        attribute.read_ln(self, text)
    }
    fn extensions(&mut self) -> &mut Vec<Attribute> {
        &mut self.extensions
    }
}

/// What `rs:ln` gave.
// Returned and taken apart at once, never stored: boxing the link would only add an
// allocation per link.
#[allow(clippy::large_enum_variant)]
enum LinkRead {
    /// A link, with its attributes that were present but malformed.
    Kept(Link, Attributes),
    /// No link: its `href` was malformed (with the relation, when that was read), or
    /// `rel` or `href` was missing or malformed.
    Dropped(Option<Relation>),
}

/// What was present but malformed in the head or an entry, for the checker
/// ([`Malformed`]), built as the children are read.
#[derive(Default)]
struct MalformedParts {
    md: Attributes,
    /// One per kept link, but only once some link has a malformed attribute.
    links: Vec<Attributes>,
    dropped_links: Vec<Relation>,
}

impl MalformedParts {
    /// Adds a link read, keeping it in `links` when it was kept.
    fn add(&mut self, read: LinkRead, links: &mut Vec<Link>) {
        match read {
            LinkRead::Kept(link, malformed) => {
                if malformed != Attributes::NONE {
                    self.links.resize(links.len(), Attributes::NONE);
                    self.links.push(malformed);
                }
                links.push(link);
            }
            LinkRead::Dropped(rel) => self.dropped_links.extend(rel),
        }
    }

    fn as_malformed(&self) -> Malformed<'_> {
        Malformed {
            md: self.md,
            links: &self.links,
            dropped_links: &self.dropped_links,
        }
    }
}

/// The children of the root before the first entry, as they are read.
#[derive(Default)]
struct HeadParts {
    malformed: MalformedParts,
    /// How many child elements there were.
    children: usize,
    md: Option<Md>,
    links: Vec<Link>,
    extensions: Vec<Element>,
}

/// The parts of an entry as its children are read, but for its `<loc>` and `rs:md`: the
/// entry is made when its `<loc>` is read, and an `rs:md` after it is read into it.
#[derive(Default)]
struct EntryParts {
    malformed: MalformedParts,
    /// How many child elements there were.
    children: usize,
    /// How many `<loc>` there were.
    locs: u32,
    md: Option<Md>,
    lastmod: Option<resourcesync_model::W3cDateTime>,
    changefreq: Option<resourcesync_model::ChangeFreq>,
    links: Vec<Link>,
    extensions: Vec<Element>,
}

/// One attribute, read.
enum Attr<'v> {
    /// Unprefixed (or prefixed with the ResourceSync namespace): local name and value.
    Rs(&'v str, Cow<'v, str>),
    /// In another namespace.
    Extension(Attribute),
}

/// Whether `local` names an element of the Sitemap protocol that a reader reads.
pub(crate) fn is_sitemap_name(local: &str) -> bool {
    matches!(
        local,
        "urlset" | "sitemapindex" | "url" | "sitemap" | "loc" | "lastmod" | "changefreq"
    )
}

fn is_xml_space(s: &str) -> bool {
    s.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// The first character XML 1.0 forbids: C0 controls other than tab, line feed and
/// carriage return, and U+FFFE and U+FFFF. (Surrogates cannot be in a `str`.)
pub(crate) fn check_chars(s: &str) -> Result<(), u32> {
    let bytes = s.as_bytes();
    // No byte below 0x20 and no 0xEF lead byte means nothing to look at. Only values
    // with one take the slow path. (`\0` stands for "no other byte".)
    if !needs_attention(bytes, 0) {
        return Ok(());
    }
    for (i, &b) in bytes.iter().enumerate() {
        if b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r') {
            return Err(u32::from(b));
        }
        // U+FFFE and U+FFFF are EF BF BE and EF BF BF in UTF-8.
        if b == 0xEF && bytes.get(i + 1) == Some(&0xBF) {
            if let Some(&last @ (0xBE | 0xBF)) = bytes.get(i + 2) {
                return Err(0xFFC0 | u32::from(last & 0x3F));
            }
        }
    }
    Ok(())
}

/// The character a character reference (`#65`, `#x41`, without `&` and `;`) stands for.
/// XML's grammar allows digits only: `u32`'s own parsers also take a sign, and the
/// reference must name a character XML allows (checked by the caller).
pub(crate) fn char_reference(reference: &str) -> Option<char> {
    let (digits, radix) = match reference.strip_prefix("#x") {
        Some(hex) => (hex, 16),
        None => (reference.strip_prefix('#')?, 10),
    };
    if digits.is_empty() || !digits.bytes().all(|b| (b as char).is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix)
        .ok()
        .and_then(char::from_u32)
}

/// Character references in an attribute value that XML's grammar refuses (a sign, no
/// digits), which quick-xml's unescaping accepts: the first, without `&` and `;`.
pub(crate) fn bad_char_reference(value: &str) -> Option<&str> {
    let mut rest = value;
    while let Some(at) = rest.find("&#") {
        let reference = &rest[at + 1..];
        let end = reference.find(';').unwrap_or(reference.len());
        if char_reference(&reference[..end]).is_none() {
            return Some(&reference[..end]);
        }
        rest = &reference[end..];
    }
    None
}

/// Whether `bytes` has a byte below 0x20, the byte 0xEF or `also`: a branch-free pass the
/// compiler vectorises, so that the common value costs one read of its bytes.
fn needs_attention(bytes: &[u8], also: u8) -> bool {
    bytes.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == 0xEF) | (b == also)
    })
}

/// Cuts untrusted text for an error message.
/// Characters that cannot be seen (controls, byte order marks, zero-width and
/// bidirectional formatting characters) are shown as `<U+FEFF>`, so that a message names
/// what is there.
fn clip(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n == 40 {
            out.push('…');
            break;
        }
        if c.is_control()
            || matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
        {
            out.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// Reads a whole document from a byte slice, with default limits and checking on.
///
/// ```
/// let xml = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/examples/ex14-resourcelist.xml"))?;
/// let (doc, findings) = resourcesync_xml::read_document(&xml)?;
/// assert_eq!(doc.entries.len(), 2);
/// assert!(findings.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn read_document(bytes: &[u8]) -> Result<(Document, Vec<Finding>), Error> {
    Reader::from_slice(bytes).read_to_document()
}
