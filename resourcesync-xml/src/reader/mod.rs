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

use attributes::*;
use chars::*;
pub(crate) use chars::{bad_char_reference, char_reference, check_chars, is_sitemap_name};

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

// After `next_event!`, which they use (a macro is in scope in the text after it).
mod attributes;
mod chars;
mod document;

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
