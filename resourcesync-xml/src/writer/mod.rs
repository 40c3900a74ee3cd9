//! The streaming writer: the head first, then one entry at a time.

use std::borrow::Cow;
use std::fmt::Display;
use std::io::Write;

use quick_xml::events::Event;
use resourcesync_model::{
    Attribute, AttributeName, AttributeSink, AttributeValue, CheckOptions, Checker, Document,
    DocumentHead, Element, Entry, Finding, Link, Md, RS_NAMESPACE, Root, RsElement, Rule,
    SITEMAP_NAMESPACE, Severity,
};

use crate::error::WriteError;
use crate::extension::{ExtensionError, XML_NAMESPACE, check_attributes, check_element, is_ncname};
use crate::reader::check_chars;

mod written;

pub(crate) use written::check_written;
pub use written::{WrittenDocument, written_entries};

/// Bytes gathered before they are handed to the sink.
const FLUSH_AT: usize = 64 * 1024;

/// How a writer holds what it writes to the standard's rules.
///
/// Every writer runs the model's [`Checker`], the one a [`Reader`](crate::Reader) runs,
/// over the head and each entry, and hands back its findings when it finishes
/// ([`Written`]). With `refuse_errors`, what would be an error finding is not written:
/// the head is refused by `new`, an entry by `write_entry` (nothing of it written, the
/// writer can go on), and a rule only decided at the end by `finish`, each with
/// [`WriteError::Refused`]. Warnings are never refused.
///
/// The default, for [`Writer`] and [`write_document`], is to write and report: a writer
/// serializes what it is given, like a reader reads what it is given, so that a document
/// read with its findings writes back as it was. A [`SetWriter`](crate::SetWriter)
/// refuses by default, since what it writes is published.
///
/// ```
/// use resourcesync_model::{Change, DocumentHead, DocumentKind, Entry, Link, Relation, Rule};
/// use resourcesync_xml::{WriteError, WriteOptions, Writer};
///
/// let head = DocumentHead::of_kind(DocumentKind::ChangeList)
///     .with_from("2013-01-03T00:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let options = WriteOptions::default().with_refuse_errors(true);
/// let mut writer = Writer::with_options(Vec::new(), &head, options)?;
/// let entry = |time: &str| -> Result<Entry, Box<dyn std::error::Error>> {
///     Ok(Entry::new("http://example.com/res1".parse()?)
///         .with_change(Change::Updated)
///         .with_datetime(time.parse()?))
/// };
/// writer.write_entry(&entry("2013-01-03T18:00:00Z")?)?;
/// let error = writer.write_entry(&entry("2013-01-03T11:00:00Z")?).unwrap_err();
/// let WriteError::Refused { entry: Some(2), findings } = &error else { panic!("{error}") };
/// assert_eq!(findings[0].rule, Rule::ChangeListOrder);
/// writer.write_entry(&entry("2013-01-03T19:00:00Z")?)?; // entry 2, in order
/// let written = writer.finish()?;
/// assert_eq!(written.findings, []);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Refuse what would be an error finding instead of writing it and reporting it.
    pub refuse_errors: bool,
    /// What the checker cannot see in the document itself, such as whether it is a part
    /// of an index.
    pub check: CheckOptions,
}

impl WriteOptions {
    /// These options, refusing errors or not.
    pub fn with_refuse_errors(mut self, refuse_errors: bool) -> WriteOptions {
        self.refuse_errors = refuse_errors;
        self
    }

    /// These options, with these check options.
    pub fn with_check(mut self, check: CheckOptions) -> WriteOptions {
        self.check = check;
        self
    }
}

/// What a finished writer hands back: its output and the findings of the standard's rules
/// on what it wrote, in document order.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
#[must_use = "the findings report broken rules of what was written"]
pub struct Written<T> {
    /// The sink, or for a set its [`SetSummary`](crate::SetSummary).
    pub output: T,
    /// The findings, warnings only when errors were refused.
    pub findings: Vec<Finding>,
}

impl<T> Written<T> {
    /// Whether a finding is an error.
    pub fn has_errors(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.severity() == Severity::Error)
    }
}

/// The checking a writer does: the model's checker, its findings, and whether errors are
/// refused.
#[derive(Debug)]
pub(crate) struct Checking {
    checker: Checker,
    pub(crate) findings: Vec<Finding>,
    refuse: bool,
    /// The entries are a whole set's, split into documents by the set writer: the entry
    /// limit of one document does not apply.
    set: bool,
}

impl Checking {
    /// Checks `head`; refuses it if it has errors and errors are refused.
    pub(crate) fn new(head: &DocumentHead, options: WriteOptions) -> Result<Checking, WriteError> {
        let mut findings = Vec::new();
        let checker = Checker::with_options(head, options.check, &mut findings);
        if options.refuse_errors {
            refuse(None, &findings)?;
        }
        Ok(Checking {
            checker,
            findings,
            refuse: options.refuse_errors,
            set: false,
        })
    }

    /// The checking of a whole set's entries.
    pub(crate) fn for_set(mut self) -> Checking {
        self.set = true;
        self
    }

    /// Checks the next entry, number `n`; a refused entry's findings go into the error,
    /// and the checker forgets it.
    pub(crate) fn entry(&mut self, entry: &Entry, n: u64) -> Result<(), WriteError> {
        let start = self.findings.len();
        let (refuse, set) = (self.refuse, self.set);
        let counts = |f: &Finding| !(set && f.rule == Rule::MaxEntries);
        let kept = self
            .checker
            .check_entry_unless(entry, &mut self.findings, |found| {
                refuse
                    && found
                        .iter()
                        .any(|f| f.severity() == Severity::Error && counts(f))
            });
        if set && self.findings.len() > start {
            // Once, at the 50,001st entry of a set: cheap where it is not there.
            let mut i = start;
            while i < self.findings.len() {
                if counts(&self.findings[i]) {
                    i += 1;
                } else {
                    self.findings.remove(i);
                }
            }
        }
        if kept {
            return Ok(());
        }
        let found = self.findings.split_off(start);
        refuse_entry(n, found)
    }

    /// Ends the check; refuses the document if the end brings errors and errors are
    /// refused.
    pub(crate) fn finish(mut self) -> Result<Vec<Finding>, WriteError> {
        let start = self.findings.len();
        self.checker.finish(&mut self.findings);
        if self.refuse {
            refuse(None, &self.findings[start..])?;
        }
        Ok(self.findings)
    }
}

/// Refuses with the error findings among `found`, if any.
fn refuse(entry: Option<u64>, found: &[Finding]) -> Result<(), WriteError> {
    if !found.iter().any(|f| f.severity() == Severity::Error) {
        return Ok(());
    }
    Err(WriteError::Refused {
        entry,
        findings: found
            .iter()
            .filter(|f| f.severity() == Severity::Error)
            .cloned()
            .collect(),
    })
}

#[cold]
fn refuse_entry(n: u64, mut found: Vec<Finding>) -> Result<(), WriteError> {
    found.retain(|f| f.severity() == Severity::Error);
    Err(WriteError::Refused {
        entry: Some(n),
        findings: found,
    })
}

/// Writes a ResourceSync document to any `Write`, entry by entry, in constant memory.
///
/// [`new`](Writer::new) writes the XML declaration, the root and the head;
/// [`write_entry`](Writer::write_entry) writes one entry; [`finish`](Writer::finish)
/// closes the root, flushes and returns the sink with the findings. Nothing is written on
/// `Drop`: a writer dropped without `finish` leaves an unterminated document, which no
/// reader accepts.
///
/// The standard's rules are checked as the entries go, as a [`Reader`](crate::Reader)
/// checks them; by default what breaks them is written and reported, and with
/// [`WriteOptions::refuse_errors`] refused ([`with_options`](Writer::with_options)).
///
/// Every value is escaped; datetimes are written as they were given; extension
/// attributes and elements are written back with their namespaces declared where they
/// stand. Bytes are gathered in a 64 KiB buffer, so the sink needs no buffering of its
/// own.
///
/// ```
/// use resourcesync_model::{Change, DocumentHead, DocumentKind, Entry, Link, Md, Relation};
/// use resourcesync_xml::Writer;
///
/// let mut head = DocumentHead::of_kind(DocumentKind::ChangeList);
/// head.md.from = Some("2013-01-03T00:00:00Z".parse()?);
/// head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut writer = Writer::new(Vec::new(), &head)?;
/// let mut entry = Entry::new("http://example.com/res1?a=1&b=2".parse()?);
/// entry.md = Some(Md::new().with_change(Change::Created).with_datetime("2013-01-03T09:00:00Z".parse()?));
/// writer.write_entry(&entry)?;
/// let written = writer.finish()?;
/// assert_eq!(written.findings, []);
/// let xml = String::from_utf8(written.output)?;
/// assert!(xml.contains("<loc>http://example.com/res1?a=1&amp;b=2</loc>"));
/// assert!(xml.contains(r#"<rs:md capability="changelist" from="2013-01-03T00:00:00Z"/>"#));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a Writer dropped without finish() leaves an unterminated document"]
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    root: Root,
    entries: u64,
    flushed: u64,
    /// The first value found that XML cannot carry, while an entry or the head is
    /// serialized: they are checked as they are escaped, in one pass.
    fault: Option<WriteError>,
    /// The standard's rules; `None` in the set writer's internal writers, whose entries
    /// the set writer checks itself.
    checking: Option<Checking>,
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("root", &self.root)
            .field("entries_written", &self.entries)
            .field("bytes_written", &self.bytes_written())
            .finish_non_exhaustive()
    }
}

impl Writer<Vec<u8>> {
    /// A writer of entries only, without declaration, root or head: the serializer the
    /// set writer uses for the body of a part whose head is not known yet.
    pub(crate) fn entries_only(root: Root) -> Writer<Vec<u8>> {
        Writer {
            out: Vec::new(),
            buf: Vec::with_capacity(4096),
            root,
            entries: 0,
            flushed: 0,
            fault: None,
            checking: None,
        }
    }

    /// Everything written, and a writer emptied for reuse.
    pub(crate) fn take_bytes(&mut self) -> Vec<u8> {
        let mut bytes = std::mem::take(&mut self.out);
        bytes.append(&mut self.buf);
        self.flushed = 0;
        self.entries = 0;
        bytes
    }
}

impl<W: Write> Writer<W> {
    /// Starts a document: writes the declaration, the root element and the head, which it
    /// checks; errors are reported, not refused ([`WriteOptions::default`]).
    pub fn new(out: W, head: &DocumentHead) -> Result<Writer<W>, WriteError> {
        Writer::with_options(out, head, WriteOptions::default())
    }

    /// Starts a document with these options. With
    /// [`refuse_errors`](WriteOptions::refuse_errors), a head that breaks a rule is
    /// refused ([`WriteError::Refused`] with no entry number) and nothing is written.
    pub fn with_options(
        out: W,
        head: &DocumentHead,
        options: WriteOptions,
    ) -> Result<Writer<W>, WriteError> {
        check_head(head)?;
        let checking = Checking::new(head, options)?;
        Writer::start(out, head, Some(checking))
    }

    /// Starts a document whose rules the caller checks, if anyone: the set writer's parts
    /// and index, whose entries it has checked as one set.
    pub(crate) fn unchecked(out: W, head: &DocumentHead) -> Result<Writer<W>, WriteError> {
        check_head(head)?;
        Writer::start(out, head, None)
    }

    fn start(
        out: W,
        head: &DocumentHead,
        checking: Option<Checking>,
    ) -> Result<Writer<W>, WriteError> {
        let mut w = Writer {
            out,
            buf: Vec::with_capacity(FLUSH_AT + 4096),
            root: head.root,
            entries: 0,
            flushed: 0,
            fault: None,
            checking,
        };
        w.buf
            .extend_from_slice(b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<");
        w.buf.extend_from_slice(head.root.element().as_bytes());
        w.buf.extend_from_slice(b" xmlns=\"");
        w.buf.extend_from_slice(SITEMAP_NAMESPACE.as_bytes());
        w.buf.extend_from_slice(b"\" xmlns:rs=\"");
        w.buf.extend_from_slice(RS_NAMESPACE.as_bytes());
        w.buf.push(b'"');
        w.extension_attributes(&head.attributes, &mut root_bindings());
        w.buf.extend_from_slice(b">\n");
        for link in &head.links {
            w.link(link);
            w.buf.push(b'\n');
        }
        w.md(&head.md);
        w.buf.push(b'\n');
        for element in &head.extensions {
            w.element(element);
            w.buf.push(b'\n');
        }
        if let Some(fault) = w.fault.take() {
            return Err(fault);
        }
        w.maybe_flush()?;
        Ok(w)
    }

    /// Writes one entry: a `<url>` in a `<urlset>`, a `<sitemap>` in a `<sitemapindex>`.
    ///
    /// An entry that cannot be written so that it reads back as itself — an extension
    /// that is not well-formed or would be read as something else
    /// ([`WriteError::Extension`]), a value with a character XML cannot carry
    /// ([`WriteError::ForbiddenCharacter`]) — is refused, and nothing of it is written: the
    /// writer can go on with the next entry. So is, with
    /// [`refuse_errors`](WriteOptions::refuse_errors), an entry that breaks a rule of the
    /// standard ([`WriteError::Refused`] with its number), and the checker forgets it: the
    /// next entry takes its number and is compared with the entries written.
    pub fn write_entry(&mut self, entry: &Entry) -> Result<(), WriteError> {
        check_entry(entry)?;
        let start = self.buf.len();
        self.entry_into(entry);
        if let Some(fault) = self.fault.take() {
            self.buf.truncate(start);
            return Err(fault);
        }
        if let Some(checking) = &mut self.checking {
            if let Err(refused) = checking.entry(entry, self.entries + 1) {
                self.buf.truncate(start);
                return Err(refused);
            }
        }
        self.entries += 1;
        self.maybe_flush()
    }

    /// The findings so far, in document order.
    pub fn findings(&self) -> &[Finding] {
        self.checking.as_ref().map_or(&[], |c| &c.findings)
    }

    /// Takes the findings so far, leaving none: to keep memory constant over a document
    /// with many.
    pub fn take_findings(&mut self) -> Vec<Finding> {
        self.checking
            .as_mut()
            .map(|c| std::mem::take(&mut c.findings))
            .unwrap_or_default()
    }

    /// Writes the next entry as the bytes this crate's writer made of it before (one of
    /// those [`written_entries`] finds in a document it wrote), without making or checking
    /// it again: the caller vouches that it is such an entry, and that a document whose
    /// entries must all be checked gets each through [`write_entry`](Writer::write_entry)
    /// once. Bytes that are not one entry element of this document's root are refused
    /// ([`WriteError::Invalid`]) and nothing is written.
    pub fn write_written(&mut self, entry: &[u8]) -> Result<(), WriteError> {
        check_written(self.root, entry)?;
        self.buf.extend_from_slice(entry);
        self.entries += 1;
        self.maybe_flush()
    }

    /// Places the entries of `document`, a `<urlset>` this crate wrote, here without
    /// copying them: returns the offset in this writer's output where they belong, and
    /// counts them as written (the entries written next are numbered after them). The
    /// caller writes the output in pieces: the bytes before the offset, then
    /// [`document.entry_bytes()`](WrittenDocument::entry_bytes), then the rest; the
    /// result is what [`write_written`](Writer::write_written) of each entry would have
    /// written. A Change List extended by a run is its last document's entries and the
    /// run's, which need not pass through the writer's buffer.
    ///
    /// Refused ([`WriteError::Invalid`]) when this writer's root is not `<urlset>`.
    pub fn place_written(&mut self, document: &WrittenDocument) -> Result<u64, WriteError> {
        if self.root != Root::UrlSet {
            return Err(WriteError::Invalid(
                "the entries of a <urlset> placed in a <sitemapindex>".into(),
            ));
        }
        self.entries += document.len() as u64;
        Ok(self.bytes_written())
    }

    /// Entries written so far.
    pub fn entries_written(&self) -> u64 {
        self.entries
    }

    /// Bytes written so far, including those still buffered.
    pub fn bytes_written(&self) -> u64 {
        self.flushed + self.buf.len() as u64
    }

    /// Closes the root element, flushes everything to the sink and returns it, with the
    /// findings not yet taken.
    ///
    /// With [`refuse_errors`](WriteOptions::refuse_errors), a rule that only the end of the
    /// document decides refuses it ([`WriteError::Refused`] with no entry number): the
    /// root is not closed, so what was flushed already is a document no reader accepts.
    pub fn finish(mut self) -> Result<Written<W>, WriteError> {
        let findings = match self.checking.take() {
            Some(checking) => checking.finish()?,
            None => Vec::new(),
        };
        let out = self.close()?;
        Ok(Written {
            output: out,
            findings,
        })
    }

    /// Closes the root element, flushes everything to the sink and returns it.
    pub(crate) fn close(mut self) -> Result<W, WriteError> {
        self.buf.extend_from_slice(b"</");
        self.buf.extend_from_slice(self.root.element().as_bytes());
        self.buf.extend_from_slice(b">\n");
        self.out.write_all(&self.buf)?;
        self.out.flush()?;
        Ok(self.out)
    }

    /// Appends the entry's XML to the buffer.
    fn entry_into(&mut self, entry: &Entry) {
        let element = self.root.entry_element().as_bytes();
        self.buf.push(b'<');
        self.buf.extend_from_slice(element);
        self.buf.extend_from_slice(b"><loc>");
        if let Err(code) = escape_into(&mut self.buf, entry.loc.as_str(), false) {
            self.forbidden("loc", code);
        }
        self.buf.extend_from_slice(b"</loc>");
        if let Some(lastmod) = &entry.lastmod {
            self.buf.extend_from_slice(b"<lastmod>");
            lastmod.write_to(&mut self.buf);
            self.buf.extend_from_slice(b"</lastmod>");
        }
        if let Some(changefreq) = entry.changefreq {
            self.buf.extend_from_slice(b"<changefreq>");
            self.buf.extend_from_slice(changefreq.as_str().as_bytes());
            self.buf.extend_from_slice(b"</changefreq>");
        }
        if let Some(md) = &entry.md {
            self.md(md);
        }
        for link in &entry.links {
            self.link(link);
        }
        for extension in &entry.extensions {
            self.element(extension);
        }
        self.buf.extend_from_slice(b"</");
        self.buf.extend_from_slice(element);
        self.buf.extend_from_slice(b">\n");
    }

    fn maybe_flush(&mut self) -> Result<(), WriteError> {
        if self.buf.len() >= FLUSH_AT {
            self.out.write_all(&self.buf)?;
            self.flushed += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }

    fn attr(&mut self, name: &str, value: &str) {
        self.buf.push(b' ');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"=\"");
        if let Err(code) = escape_into(&mut self.buf, value, true) {
            self.forbidden(name, code);
        }
        self.buf.push(b'"');
    }

    /// Notes a value XML cannot carry; the entry or head being written is refused.
    #[cold]
    fn forbidden(&mut self, place: &str, code: u32) {
        self.fault.get_or_insert(WriteError::ForbiddenCharacter {
            place: place.to_owned(),
            code,
        });
    }

    // Never inlined: `attr_value` is inlined at every attribute of `md` and `link`, and
    // stays small that way.
    #[inline(never)]
    fn attr_display(&mut self, name: &str, value: &dyn Display) {
        self.buf.push(b' ');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"=\"");
        let start = self.buf.len();
        display(&mut self.buf, value);
        self.escape_from(name, start);
        self.buf.push(b'"');
    }

    /// Escapes the attribute value written into the buffer from `start`, in place. Model
    /// values print without markup characters but for media type parameters and the
    /// like: only then is the value escaped again.
    fn escape_from(&mut self, name: &str, start: usize) {
        if !plain(&self.buf[start..]) {
            let raw = String::from_utf8_lossy(&self.buf[start..]).into_owned();
            self.buf.truncate(start);
            if let Err(code) = escape_into(&mut self.buf, &raw, true) {
                self.forbidden(name, code);
            }
        }
    }

    /// Writes an attribute whose value `value` appends to the buffer without markup
    /// characters: times and numbers, made of digits and punctuation only.
    #[inline(never)]
    fn attr_plain(&mut self, name: &str, value: impl FnOnce(&mut Vec<u8>)) {
        self.buf.push(b' ');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"=\"");
        value(&mut self.buf);
        self.buf.push(b'"');
    }

    /// Writes the `hash` attribute: digests are hex, but an unknown algorithm's name is text
    /// as written, and is escaped (or refused) as any text is.
    #[inline(never)]
    fn attr_hashes(&mut self, name: &str, hashes: &resourcesync_model::Hashes) {
        self.buf.push(b' ');
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.extend_from_slice(b"=\"");
        let start = self.buf.len();
        hashes.write_to(&mut self.buf);
        self.escape_from(name, start);
        self.buf.push(b'"');
    }

    /// Writes one attribute of Table 3: text as the model holds it, parsed values (times,
    /// hashes, numbers) by their own writers, not `AttributeValue`'s `Display`, which
    /// would add a call and a match per value, and the formatting machinery. Inlined, so
    /// that at each attribute of `md` and `link` the match is decided at compile time.
    #[inline(always)]
    fn attr_value(&mut self, name: &str, value: AttributeValue<'_>) {
        match value {
            AttributeValue::DateTime(t) => self.attr_plain(name, |buf| t.write_to(buf)),
            AttributeValue::Hashes(h) => self.attr_hashes(name, h),
            AttributeValue::Length(n) => self.attr_plain(name, |buf| {
                buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            }),
            AttributeValue::Priority(p) => self.attr_display(name, &p),
            other => match other.as_str() {
                Some(text) => self.attr(name, text),
                None => self.attr_display(name, &other),
            },
        }
    }

    fn md(&mut self, md: &Md) {
        self.buf.extend_from_slice(b"<rs:md");
        AttributeName::for_each_in_md(md, self);
        self.extension_attributes(&md.extensions, &mut root_bindings());
        self.buf.extend_from_slice(b"/>");
    }

    fn link(&mut self, link: &Link) {
        self.buf.extend_from_slice(b"<rs:ln");
        AttributeName::for_each_in_link(link, self);
        self.extension_attributes(&link.extensions, &mut root_bindings());
        self.buf.extend_from_slice(b"/>");
    }

    /// Writes attributes in other namespaces, declaring each namespace on the element
    /// that carries it (once), and attributes in no namespace as they are. `declared`
    /// holds the bindings already made on this element (and `rs` and `xml`, which are in
    /// scope everywhere), so that no prefix is declared twice or bound to two namespaces.
    fn extension_attributes(&mut self, attributes: &[Attribute], declared: &mut Bindings) {
        for attr in attributes {
            if attr.namespace.is_empty() {
                self.attr(&attr.name, &attr.value);
                continue;
            }
            let prefix = match declared.iter().find(|(_, ns)| *ns == attr.namespace) {
                Some((prefix, _)) => prefix.clone(),
                None => {
                    let prefix = free_prefix(attr.prefix.as_deref(), declared);
                    self.attr(&format!("xmlns:{prefix}"), &attr.namespace);
                    declared.push((prefix.clone(), attr.namespace.clone()));
                    prefix
                }
            };
            self.attr(&format!("{prefix}:{}", attr.name), &attr.value);
        }
    }

    /// Writes an extension element with its namespace declared on it.
    fn element(&mut self, element: &Element) {
        let mut declared = root_bindings();
        let prefix = element_prefix(element, &declared);
        let qname = match &prefix {
            Some(prefix) => format!("{prefix}:{}", element.name),
            None => element.name.clone(),
        };
        self.buf.push(b'<');
        self.buf.extend_from_slice(qname.as_bytes());
        if element.namespace.is_empty() {
            // Undeclare the Sitemap default namespace: the element is in none.
            self.buf.extend_from_slice(b" xmlns=\"\"");
        } else if let Some(prefix) = prefix {
            self.attr(&format!("xmlns:{prefix}"), &element.namespace);
            declared.push((prefix, element.namespace.clone()));
        }
        self.extension_attributes(&element.attributes, &mut declared);
        if element.content.is_empty() {
            self.buf.extend_from_slice(b"/>");
        } else {
            self.buf.push(b'>');
            self.buf.extend_from_slice(element.content.as_bytes());
            self.buf.extend_from_slice(b"</");
            self.buf.extend_from_slice(qname.as_bytes());
            self.buf.push(b'>');
        }
    }
}

impl<W: Write> AttributeSink for Writer<W> {
    // Always: at each attribute of `md` and `link` the value's kind is then known, and
    // the match in `attr_value` goes.
    #[inline(always)]
    fn attribute(&mut self, attribute: AttributeName, value: AttributeValue<'_>) {
        self.attr_value(attribute.as_str(), value);
    }
}

/// Prefixes bound on an element, with their namespaces.
type Bindings = Vec<(String, String)>;

/// What is in scope on every element the writer writes: `rs`, bound on the root, and
/// `xml`, bound in every document.
fn root_bindings() -> Bindings {
    vec![
        ("rs".into(), RS_NAMESPACE.into()),
        ("xml".into(), XML_NAMESPACE.into()),
    ]
}

/// The prefix an extension element is written with: none in the Sitemap namespace (the
/// default) or in no namespace (written with `xmlns=""`), else its hint where that is a
/// free prefix, else a generated one.
fn element_prefix(element: &Element, declared: &Bindings) -> Option<String> {
    if element.namespace.is_empty() || element.namespace == SITEMAP_NAMESPACE {
        return None;
    }
    Some(free_prefix(element.prefix.as_deref(), declared))
}

/// The hint if it is a prefix that can be declared here, else the first of `ns1`, `ns2`
/// … that is free. `xmlns` is never one, and `rs` and `xml` are taken (`declared`
/// holds them).
fn free_prefix(hint: Option<&str>, declared: &Bindings) -> String {
    let free = |p: &str| !declared.iter().any(|(taken, _)| taken == p);
    match hint {
        Some(p) if is_ncname(p) && p != "xmlns" && free(p) => p.to_owned(),
        _ => (1..)
            .map(|n| format!("ns{n}"))
            .find(|p| free(p))
            .unwrap_or_default(),
    }
}

/// Checks what of the head is open data: the root's attributes, the document's `rs:md`
/// and `rs:ln` extension attributes, and its extension elements.
fn check_head(head: &DocumentHead) -> Result<(), WriteError> {
    check_attributes(&head.attributes, &|_, _| false).map_err(|e| extension("the root", e))?;
    check_md(&head.md)?;
    for link in &head.links {
        check_link(link)?;
    }
    check_elements(&head.extensions)
}

/// Checks what of an entry is open data, as [`check_head`] does.
fn check_entry(entry: &Entry) -> Result<(), WriteError> {
    if let Some(md) = &entry.md {
        check_md(md)?;
    }
    for link in &entry.links {
        check_link(link)?;
    }
    check_elements(&entry.extensions)
}

fn check_md(md: &Md) -> Result<(), WriteError> {
    if md.extensions.is_empty() {
        return Ok(());
    }
    check_attributes(&md.extensions, &|name, value| md_reads(md, name, value))
        .map_err(|e| extension("rs:md", e))
}

fn check_link(link: &Link) -> Result<(), WriteError> {
    if link.extensions.is_empty() {
        return Ok(());
    }
    check_attributes(&link.extensions, &|name, value| ln_reads(link, name, value))
        .map_err(|e| extension("rs:ln", e))
}

fn check_elements(elements: &[Element]) -> Result<(), WriteError> {
    for element in elements {
        let prefix = element_prefix(element, &root_bindings());
        check_element(element, prefix.as_deref())
            .map_err(|e| extension("an extension element", e))?;
    }
    Ok(())
}

#[cold]
fn extension(place: &'static str, error: ExtensionError) -> WriteError {
    WriteError::Extension { place, error }
}

/// Whether a reader would read an `rs:md` attribute in no namespace as the typed one: an
/// extension attribute that would is refused, since it would come back as something
/// else (or twice, when the typed one is set too). Values that do not parse are kept by a
/// reader as written, so they may be written back.
fn md_reads(md: &Md, name: &str, value: &str) -> bool {
    AttributeName::from_name(name)
        .is_some_and(|a| a.is_on(RsElement::Md) && (a.md_value(md).is_some() || a.is_valid(value)))
}

/// As [`md_reads`], for `rs:ln`.
fn ln_reads(link: &Link, name: &str, value: &str) -> bool {
    AttributeName::from_name(name).is_some_and(|a| {
        a.is_on(RsElement::Ln) && (a.ln_value(link).is_some() || a.is_valid(value))
    })
}

fn display(buf: &mut Vec<u8>, value: &dyn Display) {
    // Writing to a Vec cannot fail.
    let _ = write!(buf, "{value}");
}

/// Whether `bytes` are written as they are, with nothing to escape or refuse: no markup
/// character, no control character, no byte that may start U+FFFE or U+FFFF (0xEF, which
/// `escape_into` looks at closer). One branch-free pass the compiler vectorises (`any`
/// stops at the first hit, and so is a branch per byte): most values are plain.
fn plain(bytes: &[u8]) -> bool {
    !bytes.iter().fold(false, |acc, &b| {
        acc | (b < 0x20) | (b == b'&') | (b == b'<') | (b == b'>') | (b == b'"') | (b == 0xEF)
    })
}

/// Escapes text (or an attribute value, which also protects white space from attribute
/// value normalization) into `buf`. A character XML cannot carry, even escaped (a C0
/// control but tab, line feed and carriage return; U+FFFE; U+FFFF), is refused with its
/// code point; what was escaped up to it stays in `buf`, for the caller to drop.
fn escape_into(buf: &mut Vec<u8>, s: &str, attribute: bool) -> Result<(), u32> {
    let bytes = s.as_bytes();
    if plain(bytes) {
        buf.extend_from_slice(bytes);
        return Ok(());
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let replacement: &[u8] = match b {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' if attribute => b"&quot;",
            b'\t' if attribute => b"&#9;",
            b'\n' if attribute => b"&#10;",
            b'\r' => b"&#13;",
            0..0x20 if !matches!(b, b'\t' | b'\n') => return Err(u32::from(b)),
            0xEF => {
                check_chars(&s[i..(i + 3).min(s.len())])?;
                continue;
            }
            _ => continue,
        };
        buf.extend_from_slice(&bytes[start..i]);
        buf.extend_from_slice(replacement);
        start = i + 1;
    }
    buf.extend_from_slice(&bytes[start..]);
    Ok(())
}

/// Text escaped for element content.
pub(crate) fn escape_text(s: &str) -> Cow<'_, str> {
    if !s.bytes().any(|b| matches!(b, b'&' | b'<' | b'>' | b'\r')) {
        return Cow::Borrowed(s);
    }
    let mut buf = Vec::with_capacity(s.len() + 8);
    // The reader hands in text whose characters it has checked.
    let _ = escape_into(&mut buf, s, false);
    Cow::Owned(String::from_utf8_lossy(&buf).into_owned())
}

/// Appends an event read inside an extension element as XML text, as it was written.
pub(crate) fn write_event(out: &mut String, event: &Event<'_>) {
    match event {
        Event::Start(e) => {
            out.push('<');
            out.push_str(e);
            out.push('>');
        }
        Event::Empty(e) => {
            out.push('<');
            out.push_str(e);
            out.push_str("/>");
        }
        Event::End(e) => {
            out.push_str("</");
            out.push_str(e);
            out.push('>');
        }
        // Text events hold the text as escaped in the source.
        Event::Text(t) => out.push_str(t),
        Event::CData(c) => {
            out.push_str("<![CDATA[");
            out.push_str(c);
            out.push_str("]]>");
        }
        Event::GeneralRef(r) => {
            out.push('&');
            out.push_str(r);
            out.push(';');
        }
        Event::Comment(_) | Event::PI(_) | Event::Decl(_) | Event::DocType(_) | Event::Eof => {}
    }
}

/// Writes a whole document to a sink, reporting the findings of the standard's rules and
/// refusing none ([`WriteOptions::default`]); see [`write_document_with`].
///
/// ```
/// use resourcesync_model::{Change, Document, DocumentHead, DocumentKind, Entry, Link, Relation, Rule};
/// use resourcesync_xml::write_document;
///
/// let head = DocumentHead::of_kind(DocumentKind::ChangeList)
///     .with_from("2013-01-03T00:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut doc = Document::new(head);
/// doc.entries.push(Entry::new("http://example.com/res1".parse()?)); // no change
/// let written = write_document(Vec::new(), &doc)?;
/// assert_eq!(written.findings[0].rule, Rule::ChangeMandatory);
/// assert!(written.has_errors());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_document<W: Write>(out: W, document: &Document) -> Result<Written<W>, WriteError> {
    write_document_with(out, document, WriteOptions::default())
}

/// Writes a whole document to a sink with these options: with
/// [`refuse_errors`](WriteOptions::refuse_errors), the first part that breaks a rule — the
/// head, an entry, or the end — stops the writing with [`WriteError::Refused`].
pub fn write_document_with<W: Write>(
    out: W,
    document: &Document,
    options: WriteOptions,
) -> Result<Written<W>, WriteError> {
    let mut writer = Writer::with_options(out, &document.head, options)?;
    for entry in &document.entries {
        writer.write_entry(entry)?;
    }
    writer.finish()
}
