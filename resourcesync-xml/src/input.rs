//! Where a reader's events come from: any `BufRead`, or a byte slice read in place.
//!
//! (Called `Input`, not `Source`: in ResourceSync a Source is the server that publishes
//! the documents, and `Reader<Source>` read as a reader of one.)

use std::cell::Cell;
use std::io::BufRead;

use quick_xml::events::Event;

use crate::counted::Counted;

/// Where a [`Reader`](crate::Reader) reads from: [`Buffered`] for any `BufRead`, [`Slice`]
/// for a byte slice in memory. Sealed: the reader's two inputs are all there are.
pub trait Input: private::Sealed {}

pub(crate) mod private {
    use quick_xml::events::Event;

    /// The operations a reader needs from its input.
    pub trait Sealed {
        /// The next event; a buffered input reads it into `buf`, a slice borrows it from
        /// the input, which outlives `buf`. Either way the event does not borrow the
        /// input, so the reader can go on using its other state while handling it.
        fn read_event<'b>(&mut self, buf: &'b mut Vec<u8>) -> quick_xml::Result<Event<'b>>
        where
            Self: 'b;
        /// Where the next event starts: byte offset, and line and column when the input
        /// counts them as it goes (0 when they are computed on demand by `line_column`).
        /// The event limit counts from here.
        fn mark(&mut self) -> (u64, u64, u64);
        /// Line and column of a byte offset already read, for inputs that compute them
        /// on demand.
        fn line_column(&self, byte: u64) -> (u64, u64);
        /// quick-xml's position of its last error.
        fn error_position(&self) -> u64;
        /// Whether the last failure was the byte limit.
        fn over_limit(&self) -> bool;
        /// Whether the last failure was the limit on one event.
        fn over_event(&self) -> bool;
        /// Bytes read so far, after decompression.
        fn bytes_read(&self) -> u64;
    }
}

/// Settings shared by both inputs: end tags must match; empty elements stay empty
/// events; text is not trimmed (values are trimmed where the standard allows it).
fn configure<R>(reader: &mut quick_xml::Reader<R>) {
    let config = reader.config_mut();
    config.check_end_names = true;
    config.expand_empty_elements = false;
    config.trim_text(false);
}

/// An input over any `BufRead`: bytes are counted, limited (after decompression) and
/// copied into the reader's buffer one event at a time.
pub struct Buffered<R> {
    xml: quick_xml::Reader<Counted<R>>,
    /// Bytes consumed without quick-xml (`skip`): its offsets lag behind by this much.
    skipped: u64,
}

impl<R: BufRead> Buffered<R> {
    pub(crate) fn new(inner: R, max_bytes: u64, max_event: u64) -> std::io::Result<Buffered<R>> {
        let mut xml = quick_xml::Reader::from_reader(Counted::new(inner, max_bytes, max_event)?);
        configure(&mut xml);
        Ok(Buffered { xml, skipped: 0 })
    }
}

impl<R: BufRead> Buffered<R> {
    /// An input over text that is not sniffed for gzip (see `Counted::inflated`).
    pub(crate) fn inflated(inner: R, max_bytes: u64, max_event: u64) -> Buffered<R> {
        let mut xml =
            quick_xml::Reader::from_reader(Counted::inflated(inner, max_bytes, max_event));
        configure(&mut xml);
        Buffered { xml, skipped: 0 }
    }

    /// Where the next byte is, as a mark gives it, without marking an event.
    pub(crate) fn position(&self) -> (u64, u64, u64) {
        let input = self.xml.get_ref();
        let (line, column) = input.line_column();
        (input.consumed(), line, column)
    }

    /// Consumes the next `n` bytes, which were read in place ([`Window`]): counted as if
    /// quick-xml had read them. Its parse state stays as it was, which is right only
    /// after markup (`>`), where the window started and ended.
    pub(crate) fn skip(&mut self, n: u64) -> std::io::Result<()> {
        self.xml.get_mut().skip(n)?;
        self.skipped += n;
        Ok(())
    }

    /// The source of an `inflated` input.
    pub(crate) fn inflated_source(&mut self) -> Option<&mut R> {
        self.xml.get_mut().inflated_source()
    }

    pub(crate) fn inflated_source_ref(&self) -> Option<&R> {
        self.xml.get_ref().inflated_source_ref()
    }
}

impl<R: BufRead> std::fmt::Debug for Buffered<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffered")
            .field("bytes_read", &self.xml.get_ref().consumed())
            .finish_non_exhaustive()
    }
}

impl<R: BufRead> Input for Buffered<R> {}

impl<R: BufRead> private::Sealed for Buffered<R> {
    fn read_event<'b>(&mut self, buf: &'b mut Vec<u8>) -> quick_xml::Result<Event<'b>>
    where
        Self: 'b,
    {
        let event = self.xml.read_event_into(buf);
        // Read or failed, an event over the limit fails for its length, as from a slice.
        if self.xml.get_mut().over_event_limit() {
            return Err(quick_xml::Error::Io(std::sync::Arc::new(
                std::io::Error::other("event limit reached"),
            )));
        }
        event
    }

    fn mark(&mut self) -> (u64, u64, u64) {
        let input = self.xml.get_mut();
        input.start_event();
        let (line, column) = input.line_column();
        (input.consumed(), line, column)
    }

    fn line_column(&self, _byte: u64) -> (u64, u64) {
        // Marks of a buffered input carry their line and column already.
        (0, 0)
    }

    fn error_position(&self) -> u64 {
        self.xml.error_position() + self.skipped
    }

    fn over_limit(&self) -> bool {
        self.xml.get_ref().over_limit
    }

    fn over_event(&self) -> bool {
        self.xml.get_ref().over_event
    }

    fn bytes_read(&self) -> u64 {
        self.xml.get_ref().consumed()
    }
}

/// An input over a byte slice: events borrow the slice, nothing is copied, and lines are
/// counted only for the places a finding or error names. A gzipped slice is read through
/// the buffered path, to decompress it.
pub struct Slice<'a> {
    inner: SliceInner<'a>,
    /// The slice after any byte order mark, for counting lines.
    bytes: &'a [u8],
    /// Lines, counted from the start.
    lines: Lines,
    /// Bytes one event may take. Events borrow the slice, so nothing accumulates; the
    /// limit is checked all the same, so that a document fails the same way whichever
    /// source reads it.
    max_event: u64,
    /// The last read was refused for the event limit.
    over_event: bool,
}

enum SliceInner<'a> {
    Borrowed(quick_xml::Reader<&'a [u8]>),
    /// Boxed: rare, and four times the size of the borrowed reader.
    Gzip(Box<Buffered<&'a [u8]>>),
    /// Longer than the byte limit: the first read fails.
    TooLarge,
}

impl<'a> Slice<'a> {
    pub(crate) fn new(input: &'a [u8], max_bytes: u64, max_event: u64) -> Slice<'a> {
        // As `Counted` does for a `BufRead`: gzip is sniffed on the first bytes as given, so
        // a byte order mark says text, and one BOM is stripped. quick-xml strips it here,
        // from the slice it reads, so that it does not strip a second one, which is a
        // character of the document (U+FEFF); positions count from after it either way.
        let bytes = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
        let inner = if input.starts_with(&[0x1f, 0x8b]) {
            match Buffered::new(input, max_bytes, max_event) {
                Ok(b) => SliceInner::Gzip(Box::new(b)),
                // Sniffing a slice cannot fail; refuse rather than guess.
                Err(_) => SliceInner::TooLarge,
            }
        } else if bytes.len() as u64 > max_bytes {
            SliceInner::TooLarge
        } else {
            let mut xml = quick_xml::Reader::from_reader(input);
            configure(&mut xml);
            SliceInner::Borrowed(xml)
        };
        Slice {
            inner,
            bytes,
            lines: Lines::new((0, 0, 0)),
            max_event,
            over_event: false,
        }
    }
}

/// The next event of a borrowing reader, refused (and `over_event` set) if it took more
/// than `max_event` bytes. Checked whether the event was read or failed: through `BufRead`,
/// reading stops at the limit, before quick-xml can find what else is wrong with the event
/// (its text not UTF-8, say), so a slice fails the same way.
#[inline(always)]
fn read_borrowed<'a>(
    xml: &mut quick_xml::Reader<&'a [u8]>,
    max_event: u64,
    over_event: &mut bool,
) -> quick_xml::Result<Event<'a>> {
    let start = xml.buffer_position();
    let event = xml.read_event();
    if xml.buffer_position().saturating_sub(start) > max_event {
        return Err(refuse_event(over_event));
    }
    event
}

#[cold]
fn refuse_event(over_event: &mut bool) -> quick_xml::Error {
    *over_event = true;
    quick_xml::Error::Io(std::sync::Arc::new(std::io::Error::other(
        "event limit reached",
    )))
}

impl std::fmt::Debug for Slice<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slice")
            .field("len", &self.bytes.len())
            .field("gzip", &matches!(self.inner, SliceInner::Gzip(_)))
            .finish_non_exhaustive()
    }
}

impl Input for Slice<'_> {}

impl private::Sealed for Slice<'_> {
    // Always: it is called once per event from a dozen places, and a call that returns an
    // event through memory cost 5 % of reading when it stopped being inlined.
    #[inline(always)]
    fn read_event<'b>(&mut self, buf: &'b mut Vec<u8>) -> quick_xml::Result<Event<'b>>
    where
        Self: 'b,
    {
        match &mut self.inner {
            SliceInner::Borrowed(xml) => read_borrowed(xml, self.max_event, &mut self.over_event),
            SliceInner::Gzip(b) => b.read_event(buf),
            SliceInner::TooLarge => Err(quick_xml::Error::Io(std::sync::Arc::new(
                std::io::Error::other("byte limit reached"),
            ))),
        }
    }

    #[inline]
    fn mark(&mut self) -> (u64, u64, u64) {
        match &mut self.inner {
            SliceInner::Borrowed(xml) => (xml.buffer_position(), 0, 0),
            SliceInner::Gzip(b) => b.mark(),
            SliceInner::TooLarge => (0, 1, 1),
        }
    }

    fn line_column(&self, byte: u64) -> (u64, u64) {
        self.lines.line_column(self.bytes, 0, byte)
    }

    fn error_position(&self) -> u64 {
        match &self.inner {
            SliceInner::Borrowed(xml) => xml.error_position(),
            SliceInner::Gzip(b) => b.error_position(),
            SliceInner::TooLarge => 0,
        }
    }

    fn over_limit(&self) -> bool {
        match &self.inner {
            SliceInner::Borrowed(_) => false,
            SliceInner::Gzip(b) => b.over_limit(),
            SliceInner::TooLarge => true,
        }
    }

    fn over_event(&self) -> bool {
        match &self.inner {
            SliceInner::Borrowed(_) => self.over_event,
            SliceInner::Gzip(b) => b.over_event(),
            SliceInner::TooLarge => false,
        }
    }

    fn bytes_read(&self) -> u64 {
        match &self.inner {
            SliceInner::Borrowed(xml) => xml.buffer_position(),
            SliceInner::Gzip(b) => b.bytes_read(),
            SliceInner::TooLarge => 0,
        }
    }
}

/// Lines and columns of places in bytes held whole, counted on demand: findings come in
/// document order, so counting goes on from the last place asked for, and the bytes are
/// counted at most once.
struct Lines {
    /// Where counting starts: an offset, the line breaks before it, and the offset after
    /// the last of them.
    origin: (u64, u64, u64),
    /// The same for the last place counted up to.
    counted: Cell<(u64, u64, u64)>,
}

impl Lines {
    fn new(origin: (u64, u64, u64)) -> Lines {
        Lines {
            origin,
            counted: Cell::new(origin),
        }
    }

    /// The line and column (from 1) of offset `byte`, in `bytes`, which start at offset
    /// `base`.
    fn line_column(&self, bytes: &[u8], base: u64, byte: u64) -> (u64, u64) {
        let (mut at, mut lines, mut line_start) = self.counted.get();
        if byte < at {
            (at, lines, line_start) = self.origin;
        }
        if byte < at {
            // A place before the origin is not asked for; its line rather than a guess.
            return (lines + 1, byte.saturating_sub(line_start) + 1);
        }
        let end = (byte.saturating_sub(base) as usize).min(bytes.len());
        let from = (at.saturating_sub(base) as usize).min(end);
        for i in memchr::memchr_iter(b'\n', &bytes[from..end]) {
            lines += 1;
            line_start = base + (from + i + 1) as u64;
        }
        self.counted.set((byte, lines, line_start));
        (lines + 1, byte - line_start + 1)
    }
}

/// Whole children of the root that a push reader holds, read in place as a slice is: a
/// fresh quick-xml reader over them, its offsets counted from `base`, lines counted on
/// demand from the line and column the buffered input had reached there. Only markup
/// (`>`) may come before and end a window: there quick-xml's state is the one a fresh
/// reader starts in, and a child holds the end tags of what it opens (see
/// `PushReader::window`).
pub(crate) struct Window<'a> {
    xml: quick_xml::Reader<&'a [u8]>,
    bytes: &'a [u8],
    /// The offset of `bytes[0]` in the text.
    base: u64,
    /// Lines, counted from the window's start.
    lines: Lines,
    max_event: u64,
    over_event: bool,
    /// The last event read was markup: a tag, comment, CDATA section, declaration or
    /// processing instruction (not text, a reference or the end).
    markup: bool,
}

impl<'a> Window<'a> {
    /// A window over `bytes`, which start at offset `base`, at `line` and `column`.
    pub(crate) fn new(
        bytes: &'a [u8],
        (base, line, column): (u64, u64, u64),
        max_event: u64,
    ) -> Window<'a> {
        let mut xml = quick_xml::Reader::from_reader(bytes);
        configure(&mut xml);
        let line_start = base.saturating_sub(column.saturating_sub(1));
        let origin = (base, line.saturating_sub(1), line_start);
        Window {
            xml,
            bytes,
            base,
            lines: Lines::new(origin),
            max_event,
            over_event: false,
            markup: false,
        }
    }

    /// Bytes of the window read so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.xml.buffer_position()
    }

    /// Whether the last event read was markup that ended at its `>`: then the next byte
    /// is where a fresh quick-xml reader (or the buffered one, after markup) goes on.
    pub(crate) fn after_markup(&self) -> bool {
        let n = self.consumed() as usize;
        self.markup && n > 0 && self.bytes.get(n - 1) == Some(&b'>')
    }
}

impl Window<'static> {
    /// No bytes: what a reader holds while its input is elsewhere.
    pub(crate) fn empty() -> Window<'static> {
        Window::new(&[], (0, 1, 1), 0)
    }
}

impl std::fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Window")
            .field("base", &self.base)
            .field("len", &self.bytes.len())
            .finish_non_exhaustive()
    }
}

impl Input for Window<'_> {}

impl private::Sealed for Window<'_> {
    #[inline(always)]
    fn read_event<'b>(&mut self, _buf: &'b mut Vec<u8>) -> quick_xml::Result<Event<'b>>
    where
        Self: 'b,
    {
        let event = read_borrowed(&mut self.xml, self.max_event, &mut self.over_event);
        self.markup = !matches!(
            event,
            Ok(Event::Text(_) | Event::GeneralRef(_) | Event::Eof) | Err(_)
        );
        event
    }

    #[inline]
    fn mark(&mut self) -> (u64, u64, u64) {
        (self.base + self.xml.buffer_position(), 0, 0)
    }

    fn line_column(&self, byte: u64) -> (u64, u64) {
        self.lines.line_column(self.bytes, self.base, byte)
    }

    fn error_position(&self) -> u64 {
        self.base + self.xml.error_position()
    }

    fn over_limit(&self) -> bool {
        false
    }

    fn over_event(&self) -> bool {
        self.over_event
    }

    fn bytes_read(&self) -> u64 {
        self.base + self.xml.buffer_position()
    }
}
