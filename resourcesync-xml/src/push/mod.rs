//! A push reader: the caller feeds the document's bytes as they arrive (HTTP body chunks,
//! say) and takes entries as soon as they are complete.
//!
//! The pull parser (`Reader`) cannot stop in the middle of an event, let alone an entry:
//! it calls its `BufRead` until it has what it needs. Rewriting it as a resumable state
//! machine would double the parser; instead the push reader keeps the fed bytes in a
//! buffer the parser reads from (`Source`), and calls the parser only when a small
//! scanner (`Scanner`), which follows quick-xml's tokenization across chunks, knows that
//! the buffer holds everything the parser's next step reads: up to the end of the root's
//! start tag, then one event or child element of the root at a time (an entry's start
//! tag, then the rest of the entry). Where the scanner cannot tell (a DOCTYPE, markup it
//! does not follow), it waits, for the end of input or for a limit the parser must hit
//! within the bytes held: the byte limit, the entry limit of the entry or head being
//! read, the event limit of the event being read. Reading the same bytes in the same
//! steps, the parser gives what the slice reader gives, errors and positions included; if
//! it ever ran out of bytes all the same, the source fails with an IO error
//! (`WouldBlock`) rather than let it see an end of input that is not there.
//!
//! That path copies every event into the parser's buffer and counts every line as it
//! goes; most of a document does not need it. Between entries, after markup, quick-xml
//! is in the state a fresh reader starts in, and a child of the root closes what it
//! opens: so the next child (with the text before it) is first read in place, by a fresh
//! quick-xml slice reader over the bytes held (`input::Window`), as the slice reader
//! reads it. Only if that does not reach the end of markup (the child goes on past the
//! bytes held, or is ill-formed, or is the root's end tag, or meets a limit) does the
//! parser go back to a snapshot taken before it (`Reader::restore`) and read the child
//! through the buffer as above, which fails exactly as the pull reader does. One attempt
//! per place, so a long entry fed in small chunks is not parsed again with every chunk;
//! and the scanner looks only at what the buffered steps read. Up to 64 entries are read
//! in one window and handed out one by one (their findings, and the entries and bytes
//! read, show as each is handed out), so that setting up a window is shared. Fed in
//! chunks of 64 KiB, all but about one entry per chunk are read in place.
//!
//! A gzipped document is decompressed through the same decoder stack as a gzipped slice
//! (pieces of 8 KiB, a 64 KiB window), pulled only when the parser needs more text, so
//! that a corrupt stream fails at the same byte, and decompressed text is held no longer
//! than unread plain text would be.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};

use resourcesync_model::{CheckOptions, DocumentHead, Entry, Finding};

use crate::error::{Error, ErrorKind, Position};
use crate::input::{Buffered, Window};
use crate::reader::{Limits, Need, Reader, Step};

mod scanner;
mod source;

use scanner::*;
pub(crate) use source::Source;
use source::*;

/// UTF-8's byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// What [`PushReader::next_entry`] gives.
#[derive(Debug)]
#[non_exhaustive]
// The entry by value, as `Reader::next_entry` hands it out: boxing it would cost an
// allocation per entry, and the other variants are rare.
#[allow(clippy::large_enum_variant)]
pub enum Next {
    /// The next entry.
    Entry(Entry),
    /// The next entry (or the end) needs bytes not fed yet: feed more, or call
    /// [`finish`](PushReader::finish) if there are none.
    NeedMore,
    /// The end of the document: [`finish`](PushReader::finish) was called, everything
    /// was read, and the end-of-document checks have run (their findings are in
    /// [`findings`](PushReader::findings)).
    End,
}

/// Reads a ResourceSync document pushed to it in chunks: the caller feeds bytes as they
/// arrive and takes the head and the entries as soon as they are complete, without
/// performing any IO itself. A sans-IO client reads an HTTP body this way.
///
/// For any split of a document into chunks, feeding them in order and taking entries
/// after each gives the same head, entries, findings and error (kind and place) as
/// [`Reader::from_slice`] over the whole document. Gzip is detected by content and
/// decompressed as the bytes come; [`Limits::max_bytes`] counts decompressed bytes.
///
/// Memory: the reader holds the bytes fed but not yet read ([`buffered`]), and up to 64
/// entries it has read ahead from them (which show, findings and counts included, only
/// as they are handed out). After each
/// feed, take entries until [`Next::NeedMore`]: what stays held is then the part of the
/// document that the next entry (or other piece of the root) needs, which the limits
/// bound: an entry or the head longer than [`Limits::max_entry_len`], or a comment, text
/// or tag longer than [`Limits::max_event_len`], is an error as soon as the reader holds
/// that much of it, as it is for the pull reader. A child element of the root between
/// entries that is no entry, and what follows the root, are bounded by
/// [`Limits::max_bytes`] alone.
///
/// Deviation: a plain document longer than [`Limits::max_bytes`] fails with
/// [`ErrorKind::TooLarge`] where the limit is reached, as from a `BufRead`
/// ([`Reader::new`]): a slice reader sees its length before reading and fails at once.
///
/// ```
/// use resourcesync_xml::{Next, PushReader};
/// use resourcesync_model::DocumentKind;
///
/// let xml = br#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
///         xmlns:rs="http://www.openarchives.org/rs/terms/">
///   <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
///   <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
///   <url><loc>http://example.com/res1</loc></url>
///   <url><loc>http://example.com/res2</loc></url>
/// </urlset>"#;
///
/// let mut reader = PushReader::new();
/// let mut locs = Vec::new();
/// // Chunks as they might come off the network: any split reads the same.
/// for chunk in xml.chunks(40) {
///     reader.feed(chunk)?;
///     while let Next::Entry(entry) = reader.next_entry()? {
///         locs.push(entry.loc.to_string());
///     }
/// }
/// reader.finish()?;
/// assert_eq!(reader.head()?.map(|h| h.kind()), Some(DocumentKind::ResourceList));
/// loop {
///     match reader.next_entry()? {
///         Next::Entry(entry) => locs.push(entry.loc.to_string()),
///         Next::End => break,
///         _ => unreachable!("everything was fed"),
///     }
/// }
/// assert_eq!(locs, ["http://example.com/res1", "http://example.com/res2"]);
/// assert!(reader.findings().is_empty());
/// assert_eq!(reader.entries_read(), 2);
/// # Ok::<(), resourcesync_xml::Error>(())
/// ```
///
/// [`buffered`]: PushReader::buffered
pub struct PushReader {
    limits: Limits,
    check: Option<CheckOptions>,
    /// The first bytes, until they tell plain text from gzip.
    first: Vec<u8>,
    /// The parser, once the first bytes are in: it owns the text buffer (`Source`).
    reader: Option<Reader<Buffered<Source>>>,
    /// The decoder of a gzipped document.
    #[cfg(feature = "gzip")]
    gzip: Option<Box<Inflater>>,
    scanner: Scanner,
    /// `finish` was called.
    finished: bool,
    /// The head has been read.
    head_read: bool,
    /// An error was returned: the document cannot be read further.
    failed: bool,
    /// Children of the root read in place (see [`in_place`](PushReader::in_place)).
    in_place: u64,
    /// Where an attempt to read in place failed last: not tried again there.
    declined: Option<u64>,
    /// Entries read in place and not handed out yet, with what was read after each.
    ahead: VecDeque<(Entry, Seen)>,
    /// What was read after the last entry handed out from `ahead`: what the reader
    /// shows until the caller asks for more.
    seen: Option<Seen>,
}

/// How far the parser had read after an entry read ahead (see `PushReader::in_place`).
#[derive(Clone, Copy, Debug)]
struct Seen {
    entries: u64,
    bytes: u64,
    findings: usize,
}

/// How many entries the push reader reads ahead in place at most (see
/// `PushReader::in_place`): a batch shares the cost of setting up a window.
const AHEAD: usize = 64;

impl std::fmt::Debug for PushReader {
    /// Where the reader is, not the bytes it holds.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushReader")
            .field("entries_read", &self.entries_read())
            .field("bytes_read", &self.bytes_read())
            .field("buffered", &self.buffered())
            .field("finished", &self.finished)
            .field("failed", &self.failed)
            .field("read_in_place", &self.in_place)
            .field("read_ahead", &self.ahead.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Default for PushReader {
    fn default() -> Self {
        PushReader::new()
    }
}

impl PushReader {
    /// A push reader with default limits and checking on, as [`Reader::new`].
    pub fn new() -> PushReader {
        PushReader::with_limits(Limits::default())
    }

    /// A push reader with the given limits and checking on.
    pub fn with_limits(limits: Limits) -> PushReader {
        PushReader {
            limits,
            check: Some(CheckOptions::default()),
            first: Vec::new(),
            reader: None,
            #[cfg(feature = "gzip")]
            gzip: None,
            scanner: Scanner::default(),
            finished: false,
            head_read: false,
            failed: false,
            in_place: 0,
            declined: None,
            ahead: VecDeque::new(),
            seen: None,
        }
    }

    /// The reader checking the standard's document-wide rules with these options, or not
    /// at all with `None`, as [`Reader::with_check_options`]. Call before the head is
    /// read.
    pub fn with_check_options(mut self, options: Option<CheckOptions>) -> PushReader {
        self.check = options;
        self.reader = self.reader.take().map(|r| r.with_check_options(options));
        self
    }

    /// Appends the next bytes of the document (compressed ones, for a gzipped document).
    /// Nothing is parsed here; an empty slice is fine. Fails only when called after
    /// [`finish`](PushReader::finish) ([`ErrorKind::Io`], `InvalidInput`, at line 0: the
    /// caller's fault, not the document's).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<(), Error> {
        if self.finished {
            return Err(Error::new(
                ErrorKind::Io(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "bytes fed after finish",
                )),
                self.here(),
            ));
        }
        if self.reader.is_none() {
            self.first.extend_from_slice(bytes);
            self.start();
            return Ok(());
        }
        #[cfg(feature = "gzip")]
        if let Some(gzip) = &mut self.gzip {
            gzip.feed(bytes);
            return Ok(());
        }
        // Text past the byte limit (and a BOM) is never read: the parser fails first.
        let cap = self.cap();
        if let Some(source) = self.source() {
            source.compact();
            let room = cap.saturating_sub(source.end());
            let n = usize::try_from(room).unwrap_or(usize::MAX).min(bytes.len());
            source.data.extend_from_slice(&bytes[..n]);
        }
        Ok(())
    }

    /// Says that no more bytes will come: the end of input is now known, and what has
    /// been waiting for it can be read. Calling it again does nothing.
    pub fn finish(&mut self) -> Result<(), Error> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if self.reader.is_none() {
            self.start();
        }
        #[cfg(feature = "gzip")]
        if let Some(gzip) = &mut self.gzip {
            gzip.finish();
            return Ok(());
        }
        if let Some(source) = self.source() {
            source.complete = true;
        }
        Ok(())
    }

    /// The document's head, reading it first if the bytes it takes have been fed;
    /// `None` when they have not (feed more, or finish).
    pub fn head(&mut self) -> Result<Option<&DocumentHead>, Error> {
        while !self.head_read {
            match self.step(&mut None)? {
                None => return Ok(None),
                Some(Step::Head) => self.head_read = true,
                Some(_) => {}
            }
        }
        Ok(self.reader.as_ref().and_then(Reader::read_head_so_far))
    }

    /// The next entry if its bytes have been fed, [`Next::NeedMore`] if not, or
    /// [`Next::End`] after the last, once [`finish`](PushReader::finish) has been called.
    /// Reads the head first if need be. Entries whose `<loc>` is missing or invalid are
    /// skipped, with a finding, as by [`Reader::next_entry`].
    pub fn next_entry(&mut self) -> Result<Next, Error> {
        if !self.head_read && self.head()?.is_none() {
            return Ok(Next::NeedMore);
        }
        let mut slot = None;
        loop {
            if let Some((entry, seen)) = self.ahead.pop_front() {
                self.seen = Some(seen);
                return Ok(Next::Entry(entry));
            }
            // Reading on: what has been read shows.
            self.seen = None;
            match self.step(&mut slot)? {
                None => {
                    if let Some(source) = self.source() {
                        source.compact();
                    }
                    return Ok(Next::NeedMore);
                }
                Some(Step::Entry) => {
                    if let Some(entry) = slot {
                        return Ok(Next::Entry(entry));
                    }
                }
                Some(Step::End) => return Ok(Next::End),
                Some(Step::Head | Step::Nothing) => {}
            }
        }
    }

    /// Entries seen so far, skipped ones included.
    pub fn entries_read(&self) -> u64 {
        match self.seen {
            Some(seen) => seen.entries,
            None => self.reader.as_ref().map_or(0, Reader::entries_read),
        }
    }

    /// Bytes read by the parser so far, after decompression.
    pub fn bytes_read(&self) -> u64 {
        match self.seen {
            Some(seen) => seen.bytes,
            None => self.reader.as_ref().map_or(0, Reader::bytes_read),
        }
    }

    /// The findings so far, in document order.
    pub fn findings(&self) -> &[Finding] {
        let all = self.reader.as_ref().map_or(&[][..], Reader::findings);
        match self.seen {
            Some(seen) => &all[..seen.findings.min(all.len())],
            None => all,
        }
    }

    /// Takes the findings so far, leaving none.
    pub fn take_findings(&mut self) -> Vec<Finding> {
        let Some(reader) = self.reader.as_mut() else {
            return Vec::new();
        };
        let Some(seen) = &mut self.seen else {
            return reader.take_findings();
        };
        let n = seen.findings;
        seen.findings = 0;
        for (_, later) in &mut self.ahead {
            later.findings -= n;
        }
        reader.take_findings_before(n)
    }

    /// The limits the reader holds its document to ([`with_limits`](PushReader::with_limits)).
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The error a document past the reader's byte limit ([`Limits::max_bytes`]) ends
    /// with, for a caller that holds bytes of it back and finds them past that limit
    /// before they are fed: the reader would fail with it once it read them.
    pub fn too_large(&self) -> Error {
        Error::new(ErrorKind::TooLarge(self.limits.max_bytes), self.here())
    }

    /// Bytes the reader holds: fed (or decompressed) but not yet read by the parser,
    /// compressed bytes not yet decompressed, and read bytes not yet dropped (they are
    /// dropped when more is fed and when [`next_entry`](PushReader::next_entry) returns
    /// [`Next::NeedMore`]).
    pub fn buffered(&self) -> usize {
        let text = self.reader.as_ref().map_or(0, |r| {
            r.input_ref()
                .inflated_source_ref()
                .map_or(0, |s| s.data.len())
        });
        #[cfg(feature = "gzip")]
        let text = text + self.gzip.as_ref().map_or(0, |g| g.held());
        text + self.first.len()
    }

    // --- the steps ---

    /// One step of the parser, if the bytes it reads are here (decompressing more as
    /// needed); `None` if they are not. An entry is read into `slot`.
    fn step(&mut self, slot: &mut Option<Entry>) -> Result<Option<Step>, Error> {
        if self.failed {
            return Err(Error::new(
                ErrorKind::Io(io::Error::other("the document failed to read earlier")),
                self.here(),
            ));
        }
        if self.in_place() {
            return Ok(Some(Step::Nothing));
        }
        loop {
            if self.reader.is_none() {
                return Ok(None);
            }
            if self.ready() {
                break;
            }
            if !self.pull() {
                return Ok(None);
            }
        }
        let Some(reader) = &mut self.reader else {
            return Ok(None);
        };
        match reader.push_step(slot) {
            Ok(step) => Ok(Some(step)),
            Err(e) => {
                self.failed = true;
                Err(e)
            }
        }
    }

    /// Reads the next children of the root in place, each with the text before it, as far
    /// as the reader holds them whole: the entries among them go to `ahead`, at most
    /// [`AHEAD`]. False if not even the first could be read so: then the next step reads
    /// it from the buffer, as the scanner says.
    ///
    /// Between entries, after markup (`>`), quick-xml is in the state a fresh reader
    /// starts in, and a child of the root holds the end tags of what it opens: a fresh
    /// quick-xml reader over the bytes held ([`Window`]) reads the child as a slice
    /// reader does, with nothing copied and no scanning ahead. If it does not get to the
    /// end of markup, for any reason (the child goes on past the bytes held, or is not
    /// well-formed, or is the root's end tag, or meets a limit), the parser goes back to
    /// where it was before the child (`Reader::restore`) and the child is read from the
    /// buffer, which fails exactly as the pull reader does; an attempt is made once per
    /// place. The window stops at the byte limit, so no read in place passes it.
    ///
    /// Entries read ahead do not show before they are handed out: the findings, entries
    /// and bytes read are reported as they were after the entry handed out last (`Seen`).
    fn in_place(&mut self) -> bool {
        let limits = self.limits;
        let Some(bom) = self.scanner.bom else {
            return false;
        };
        let Some(reader) = self.reader.as_mut() else {
            return false;
        };
        if !reader.between_entries() {
            return false;
        }
        let position = reader.bytes_read();
        if self.declined == Some(position) {
            return false;
        }
        let Some(source) = reader.input_mut().inflated_source() else {
            return false;
        };
        // Where the text held ends, or the byte limit, in the parser's offsets.
        let end = (source.end().saturating_sub(bom)).min(limits.max_bytes);
        let Ok(len) = usize::try_from(end.saturating_sub(position)) else {
            return false;
        };
        if source.last != b'>' || len == 0 {
            return false;
        }
        let Some(reader) = self.reader.take() else {
            return false;
        };
        let (detached, buffered) = reader.replace_input(Window::empty());
        let (consumed, failed_at, detached) = {
            let bytes = buffered
                .inflated_source_ref()
                .and_then(|s| s.data.get(s.pos..s.pos.checked_add(len)?))
                .unwrap_or(&[]);
            let mut windowed: Reader<Window<'_>> = detached;
            *windowed.input_mut() = Window::new(bytes, buffered.position(), limits.max_event_len);
            let mut consumed = 0;
            let mut failed_at = None;
            while consumed < len as u64 && self.ahead.len() < AHEAD {
                let before = windowed.snapshot();
                let mut slot = None;
                let mut read = false;
                // Text, a start tag, an entry's content: three steps at most.
                for _ in 0..3 {
                    match windowed.push_step(&mut slot) {
                        Ok(Step::Nothing | Step::Entry) => {
                            if windowed.between_entries() && windowed.input_ref().after_markup() {
                                read = true;
                                break;
                            }
                        }
                        Ok(_) | Err(_) => break,
                    }
                }
                if !read {
                    windowed.restore(before);
                    failed_at = Some(position + consumed);
                    break;
                }
                consumed = windowed.input_ref().consumed();
                self.in_place += 1;
                if let Some(entry) = slot {
                    let seen = Seen {
                        entries: windowed.entries_read(),
                        bytes: position + consumed,
                        findings: windowed.findings().len(),
                    };
                    self.ahead.push_back((entry, seen));
                }
            }
            let (detached, _) = windowed.replace_input(Window::empty());
            (consumed, failed_at, detached)
        };
        let (mut reader, _) = detached.replace_input(buffered);
        // Held bytes, counted: this fails only if the window was not what is held, and
        // then the reader is not where the parser is: it fails at the next step.
        if reader.input_mut().skip(consumed).is_err() {
            self.failed = true;
        }
        reader.mark_here();
        self.reader = Some(reader);
        self.declined = failed_at;
        consumed > 0
    }

    /// Whether the buffer holds every byte the parser's next step reads.
    fn ready(&mut self) -> bool {
        // The scanner looks only at what the buffered steps read, once they read it: what
        // was read in place it has not seen, and it takes up after it.
        if let (Some(bom), Some(reader)) = (self.scanner.bom, &self.reader) {
            let position = bom.saturating_add(reader.bytes_read());
            self.scanner.catch_up(position);
            self.scanner.stop = position;
        }
        self.scan();
        let limits = self.limits;
        let Some(reader) = &mut self.reader else {
            return false;
        };
        let need = reader.push_need();
        let read = reader.bytes_read();
        let scope = reader.scope_start();
        let Some(source) = reader.input_mut().inflated_source() else {
            return false;
        };
        if need == Need::Nothing || source.complete || source.error.is_some() {
            return true;
        }
        let Some(bom) = self.scanner.bom else {
            return false;
        };
        let end = source.end();
        // Positions of the parser are counted after the BOM; the buffer's before it.
        let at = |n: u64| bom.saturating_add(n);
        // Past the byte limit, the parser fails there.
        if end > at(limits.max_bytes) {
            return true;
        }
        if need == Need::End {
            return false;
        }
        // An entry or the head fails once an event starts past its limit; the event that
        // starts before it fails once it is longer than its own, when the parser asks for
        // the byte after the one more it is handed (see `Counted::fill_buf`).
        if let Some(start) = scope {
            let bound = at(start)
                .saturating_add(limits.max_entry_len)
                .saturating_add(limits.max_event_len)
                .saturating_add(1);
            if end > bound {
                return true;
            }
        }
        let position = at(read);
        if self.scanner.boundary_after(position)
            || self
                .scanner
                .event_overflows(position, end, limits.max_event_len)
        {
            return true;
        }
        // The start tag of a child of the root is in, not its end: if it starts an entry,
        // the step reads the start tag alone (and the entry's limit bounds the next).
        if self.scanner.open == Open::Element && self.scanner.open_at == position {
            let from = position.saturating_sub(source.base) as usize;
            let to = self.scanner.open_tag_end.saturating_sub(source.base) as usize;
            if let Some(tag) = source.data.get(from..to) {
                let tag = tag.to_vec();
                return reader.starts_entry(&tag);
            }
        }
        false
    }

    /// Decompresses the next window of text, if there is one to decompress; false when
    /// nothing changed.
    fn pull(&mut self) -> bool {
        #[cfg(feature = "gzip")]
        {
            let cap = self.cap();
            let Some(gzip) = &mut self.gzip else {
                return false;
            };
            let Some(reader) = &mut self.reader else {
                return false;
            };
            let Some(source) = reader.input_mut().inflated_source() else {
                return false;
            };
            if source.complete || source.error.is_some() || source.end() > cap {
                return false;
            }
            if !gzip.pull(source) {
                return false;
            }
            self.scan();
            true
        }
        #[cfg(not(feature = "gzip"))]
        false
    }

    /// Builds the parser once the first bytes tell plain text from gzip (two bytes, or
    /// fewer at the end of input), as `Counted::new` and `Slice::new` do: the magic bytes
    /// first, so that a BOM before them says text.
    fn start(&mut self) {
        if self.first.len() < 2 && !self.finished {
            return;
        }
        let gzip = self.first.starts_with(&[0x1f, 0x8b]);
        let first = std::mem::take(&mut self.first);
        let mut source = Source::default();
        if gzip {
            #[cfg(feature = "gzip")]
            {
                let mut inflater = Box::new(Inflater::new());
                inflater.feed(&first);
                if self.finished {
                    inflater.finish();
                }
                self.gzip = Some(inflater);
            }
            #[cfg(not(feature = "gzip"))]
            {
                source.error = Some((
                    io::ErrorKind::InvalidData,
                    "gzip-compressed input, but the gzip feature is off".into(),
                ));
            }
        } else {
            let room = usize::try_from(self.cap()).unwrap_or(usize::MAX);
            source
                .data
                .extend_from_slice(&first[..first.len().min(room)]);
            source.complete = self.finished;
        }
        self.reader = Some(Reader::pushed(source, self.limits, self.check));
        self.scan();
    }

    /// Scans the text not scanned yet.
    fn scan(&mut self) {
        if let Some(reader) = &mut self.reader {
            if let Some(source) = reader.input_mut().inflated_source() {
                self.scanner.scan(source);
            }
        }
    }

    fn source(&mut self) -> Option<&mut Source> {
        self.reader.as_mut()?.input_mut().inflated_source()
    }

    /// Text beyond this offset of the buffer is never read: the byte limit, a BOM before
    /// it, and the byte the parser looks at to know the limit is passed.
    fn cap(&self) -> u64 {
        self.limits.max_bytes.saturating_add(BOM.len() as u64 + 1)
    }

    /// The place of an error that is no fault of the document: the bytes read, at line 0.
    fn here(&self) -> Position {
        Position {
            byte: self.bytes_read(),
            line: 0,
            column: 0,
            entry: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Resource List of `n` entries, each on its own lines.
    fn resource_list(n: usize) -> Vec<u8> {
        let mut xml = String::from(
            "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\n\
             <rs:ln rel=\"up\" href=\"http://example.com/capabilitylist.xml\"/>\n\
             <rs:md capability=\"resourcelist\" at=\"2013-01-03T09:00:00Z\"/>\n",
        );
        for i in 0..n {
            xml.push_str(&format!(
                "  <url>\n    <loc>http://example.com/r{i}</loc>\n    \
                 <lastmod>2013-01-02T13:00:00Z</lastmod>\n    \
                 <rs:md length=\"{i}\" type=\"text/plain\"/>\n  </url>\n"
            ));
        }
        xml.push_str("</urlset>\n");
        xml.into_bytes()
    }

    /// Entries held whole when their turn comes are read in place, and read as the slice
    /// reader reads them, positions included.
    #[test]
    fn entries_held_whole_are_read_in_place() {
        let xml = resource_list(2000);
        // A finding in an entry late in the document, to compare its place.
        let xml = String::from_utf8(xml)
            .unwrap()
            .replace("length=\"1500\"", "length=\"x\"")
            .into_bytes();
        let mut reader = PushReader::new();
        let mut locs = Vec::new();
        for chunk in xml.chunks(4096) {
            reader.feed(chunk).unwrap();
            while let Next::Entry(entry) = reader.next_entry().unwrap() {
                locs.push(entry.loc.to_string());
            }
        }
        reader.finish().unwrap();
        while let Next::Entry(entry) = reader.next_entry().unwrap() {
            locs.push(entry.loc.to_string());
        }
        let mut slice = Reader::from_slice(&xml);
        let mut expected = Vec::new();
        while let Some(entry) = slice.next_entry().unwrap() {
            expected.push(entry.loc.to_string());
        }
        assert_eq!(locs, expected);
        assert_eq!(reader.findings(), slice.findings());
        assert_eq!(reader.findings().len(), 1);
        // All but the first (read with the head) and those cut by a chunk's end.
        let cut = xml.len() / 4096 + 1;
        assert!(
            reader.in_place >= 2000 - 1 - cut as u64,
            "{} of 2000 entries read in place",
            reader.in_place
        );
    }

    /// Entries read ahead in place do not show before they are handed out: after each
    /// entry, the findings, entries and bytes read are the slice reader's after it.
    #[test]
    fn entries_read_ahead_show_only_when_handed_out() {
        let xml = String::from_utf8(resource_list(300))
            .unwrap()
            .replace("length=\"7\"", "length=\"x\"")
            .replace("length=\"8\"", "length=\"y\"")
            .replace("<loc>http://example.com/r20</loc>", "")
            .into_bytes();
        let mut reader = PushReader::new();
        let mut slice = Reader::from_slice(&xml);
        reader.feed(&xml).unwrap();
        reader.finish().unwrap();
        let mut n = 0;
        let mut taken = 0;
        while let Next::Entry(entry) = reader.next_entry().unwrap() {
            let expected = slice.next_entry().unwrap().unwrap();
            assert_eq!(entry.loc, expected.loc);
            assert_eq!(reader.entries_read(), slice.entries_read(), "entry {n}");
            assert_eq!(reader.bytes_read(), slice.bytes_read(), "entry {n}");
            assert_eq!(
                reader.findings().len() + taken,
                slice.findings().len(),
                "entry {n}"
            );
            // Taking them as they come takes what shows, no more.
            if n == 7 {
                taken += reader.take_findings().len();
                assert!(reader.findings().is_empty());
            }
            n += 1;
        }
        assert_eq!(n, 299);
        assert!(reader.in_place > 200, "{} read in place", reader.in_place);
        assert_eq!(reader.findings().len() + taken, slice.findings().len());
    }
}
