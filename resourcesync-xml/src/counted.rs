//! The bytes under the XML reader: counted, limited, and decompressed when gzipped.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};

/// How far ahead of the reader line breaks are looked for, which bounds the memory that
/// remembering them takes, whatever buffer the source hands out.
pub(crate) const WINDOW: usize = 64 * 1024;

/// UTF-8's byte order mark.
const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A `BufRead` that counts what the XML reader consumes (bytes and line breaks, for
/// positions) and refuses to hand out more than a limit. The limit applies to the bytes
/// after decompression, so a gzip bomb stops at the same size as a plain document.
pub(crate) struct Counted<R> {
    inner: Stream<R>,
    consumed: u64,
    limit: u64,
    /// Line breaks consumed so far, and the offset just after the last one.
    lines: u64,
    line_start: u64,
    /// Offsets of line breaks handed out but not yet consumed, found once per byte as
    /// buffers are handed out, so that `consume` needs no second look at the source.
    breaks: VecDeque<u64>,
    /// Everything before this offset has been searched for line breaks.
    scanned: u64,
    /// Set when a read was refused for the limit, so the caller can tell it from IO.
    pub(crate) over_limit: bool,
    /// Where the event being read started, and how many bytes one event may take: the
    /// XML reader copies an event whole into its buffer, so this bounds the memory that
    /// one comment, processing instruction, CDATA section, tag or run of text can take,
    /// whether it is kept or skipped.
    event_start: u64,
    max_event: u64,
    /// Set when a read was refused for the event limit.
    pub(crate) over_event: bool,
}

/// The source after sniffing its first bytes: as it was when it could be sniffed without
/// consuming anything, else behind the bytes read to sniff it.
enum Sniffed<R> {
    Direct(R),
    Prefixed(io::Chain<io::Cursor<Vec<u8>>, R>),
}

impl<R: BufRead> Read for Sniffed<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self {
            Sniffed::Direct(r) => r.read(out),
            Sniffed::Prefixed(r) => r.read(out),
        }
    }
}

impl<R: BufRead> BufRead for Sniffed<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        match self {
            Sniffed::Direct(r) => r.fill_buf(),
            Sniffed::Prefixed(r) => r.fill_buf(),
        }
    }
    fn consume(&mut self, amt: usize) {
        match self {
            Sniffed::Direct(r) => r.consume(amt),
            Sniffed::Prefixed(r) => r.consume(amt),
        }
    }
}

enum Stream<R> {
    Plain(Sniffed<R>),
    /// Text that needs no sniffing: a push reader's, decompressed already if it was
    /// gzipped. Only a byte order mark is taken off, as from a decompressed source.
    Inflated(WithoutBom<R>),
    #[cfg(feature = "gzip")]
    /// Boxed: rarer, and several times the size of a plain source.
    Gzip(Box<Decompressed<R>>),
}

/// A gzipped source, decompressed: pieces in, a window of text out, the BOM taken off.
#[cfg(feature = "gzip")]
type Decompressed<R> =
    WithoutBom<io::BufReader<flate2::bufread::MultiGzDecoder<Pieces<Sniffed<R>>>>>;

/// How much compressed input the decoder is given at a time.
#[cfg(feature = "gzip")]
const PIECE: usize = 8 * 1024;

/// Compressed input handed to the decoder in pieces of `PIECE` bytes (the last shorter),
/// whatever sizes the source hands out. flate2 drops what it decoded in a call that then
/// finds the stream corrupt: fed what the source gave, a corrupt stream was an IO error
/// from a slice, and through a `BufRead` of a few bytes the text decoded before the fault
/// came first, and failed as XML. Fed the same pieces, the decoder does the same on every
/// path. The copy costs little beside inflating.
#[cfg(feature = "gzip")]
pub(crate) struct Pieces<R> {
    inner: R,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
}

#[cfg(feature = "gzip")]
impl<R> Pieces<R> {
    /// Hands out `inner` in pieces of `PIECE` bytes.
    pub(crate) fn new(inner: R) -> Pieces<R> {
        Pieces {
            inner,
            buf: vec![0; PIECE].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    pub(crate) fn get_mut(&mut self) -> &mut R {
        &mut self.inner
    }

    pub(crate) fn get_ref(&self) -> &R {
        &self.inner
    }
}

#[cfg(feature = "gzip")]
impl<R: BufRead> Read for Pieces<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        read_through_buffer(self, out)
    }
}

#[cfg(feature = "gzip")]
impl<R: BufRead> BufRead for Pieces<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.start == self.end {
            (self.start, self.end) = (0, 0);
            // What was read before an error stays, and is handed out next time.
            while self.end < self.buf.len() {
                match self.inner.read(&mut self.buf[self.end..]) {
                    Ok(0) => break,
                    Ok(n) => self.end += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(&self.buf[self.start..self.end])
    }

    fn consume(&mut self, amt: usize) {
        self.start = (self.start + amt).min(self.end);
    }
}

/// Decompressed content with its byte order mark, if any, taken off, as a plain source's
/// is in `Counted::new`: the first bytes are read aside at the first read (not when the
/// reader is made, so that a broken gzip stream fails where it always has), whatever the
/// sizes the decoder hands out, and handed out first unless they are a BOM. Left to
/// quick-xml, the BOM was stripped only when the decoder's first buffer held all of it,
/// and counted in positions.
struct WithoutBom<R> {
    inner: R,
    /// Up to the first three bytes, read aside.
    first: Vec<u8>,
    /// How many of `first` have been consumed.
    handed: usize,
    /// Whether `first` is complete and a BOM dropped from it.
    sniffed: bool,
}

impl<R: BufRead> WithoutBom<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if !self.sniffed {
            while self.first.len() < BOM.len() {
                let buf = self.inner.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                let n = buf.len().min(BOM.len() - self.first.len());
                self.first.extend_from_slice(&buf[..n]);
                self.inner.consume(n);
            }
            if self.first == BOM {
                self.first.clear();
            }
            self.sniffed = true;
        }
        if self.handed < self.first.len() {
            return Ok(&self.first[self.handed..]);
        }
        self.inner.fill_buf()
    }

    fn consume(&mut self, amt: usize) {
        // `amt` is at most what the last `fill_buf` handed out, which came from one side.
        if self.handed < self.first.len() {
            self.handed += amt;
        } else {
            self.inner.consume(amt);
        }
    }
}

impl<R: BufRead> Counted<R> {
    /// Wraps `inner`, decompressing it when it starts with the gzip magic bytes and
    /// dropping a UTF-8 byte order mark. The first three bytes are looked at whatever the
    /// source's buffer size, so a reader that hands out one byte at a time is sniffed the
    /// same as a slice.
    pub(crate) fn new(mut inner: R, limit: u64, max_event: u64) -> io::Result<Counted<R>> {
        let peek = inner.fill_buf()?;
        let (first, sniffed) = if peek.len() >= 3 {
            let mut first = [0u8; 3];
            first.copy_from_slice(&peek[..3]);
            if first == BOM {
                inner.consume(3);
            }
            (first.to_vec(), Sniffed::Direct(inner))
        } else {
            // A source that hands out fewer bytes: read them aside and put them back.
            let mut first = Vec::with_capacity(3);
            while first.len() < 3 {
                let buf = inner.fill_buf()?;
                if buf.is_empty() {
                    break;
                }
                let n = buf.len().min(3 - first.len());
                first.extend_from_slice(&buf[..n]);
                inner.consume(n);
            }
            let kept = if first == BOM {
                Vec::new()
            } else {
                first.clone()
            };
            (first, Sniffed::Prefixed(io::Cursor::new(kept).chain(inner)))
        };
        let inner = if first.starts_with(&[0x1f, 0x8b]) {
            #[cfg(feature = "gzip")]
            {
                Stream::Gzip(Box::new(WithoutBom {
                    inner: io::BufReader::with_capacity(
                        WINDOW,
                        flate2::bufread::MultiGzDecoder::new(Pieces::new(sniffed)),
                    ),
                    first: Vec::with_capacity(BOM.len()),
                    handed: 0,
                    sniffed: false,
                }))
            }
            #[cfg(not(feature = "gzip"))]
            {
                drop(sniffed);
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "gzip-compressed input, but the gzip feature is off",
                ));
            }
        } else {
            Stream::Plain(sniffed)
        };
        Ok(Counted {
            inner,
            consumed: 0,
            limit,
            lines: 0,
            line_start: 0,
            breaks: VecDeque::new(),
            scanned: 0,
            over_limit: false,
            event_start: 0,
            max_event,
            over_event: false,
        })
    }

    /// Wraps text that is not to be sniffed for gzip (a push reader's, decompressed
    /// already): only a byte order mark is dropped, at the first read, as from a gzipped
    /// source's content.
    pub(crate) fn inflated(inner: R, limit: u64, max_event: u64) -> Counted<R> {
        Counted {
            inner: Stream::Inflated(WithoutBom {
                inner,
                first: Vec::with_capacity(BOM.len()),
                handed: 0,
                sniffed: false,
            }),
            consumed: 0,
            limit,
            lines: 0,
            line_start: 0,
            breaks: VecDeque::new(),
            scanned: 0,
            over_limit: false,
            event_start: 0,
            max_event,
            over_event: false,
        }
    }

    /// The source under an `inflated` stream.
    pub(crate) fn inflated_source(&mut self) -> Option<&mut R> {
        match &mut self.inner {
            Stream::Inflated(r) => Some(&mut r.inner),
            _ => None,
        }
    }

    pub(crate) fn inflated_source_ref(&self) -> Option<&R> {
        match &self.inner {
            Stream::Inflated(r) => Some(&r.inner),
            _ => None,
        }
    }

    /// Marks where the next event starts: from here on, at most `max_event` (+ 1) bytes are
    /// handed out until the next mark.
    pub(crate) fn start_event(&mut self) {
        self.event_start = self.consumed;
    }

    /// Whether the event being read has taken more than `max_event` bytes: set as
    /// `over_event` if so. Reading hands out one byte more (see `fill_buf`).
    pub(crate) fn over_event_limit(&mut self) -> bool {
        if self.consumed.saturating_sub(self.event_start) > self.max_event {
            self.over_event = true;
        }
        self.over_event
    }

    /// Bytes consumed by the XML reader so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed
    }

    /// Consumes the next `n` bytes without an XML reader (they were read in place),
    /// counting them as `consume` does. They are held: a push reader's window.
    pub(crate) fn skip(&mut self, mut n: u64) -> io::Result<()> {
        while n > 0 {
            self.start_event();
            let got = self.fill_buf()?.len() as u64;
            if got == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "push reader: a window ran past the bytes held (internal error)",
                ));
            }
            let take = got.min(n);
            self.consume(take as usize);
            n -= take;
        }
        Ok(())
    }

    /// 1-based line and byte column of the next byte to be consumed.
    pub(crate) fn line_column(&self) -> (u64, u64) {
        (self.lines + 1, self.consumed - self.line_start + 1)
    }
}

impl<R: BufRead> Read for Counted<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        read_through_buffer(self, out)
    }
}

impl<R: BufRead> BufRead for Counted<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let room = self.limit.saturating_sub(self.consumed);
        let buf = match &mut self.inner {
            Stream::Plain(r) => r.fill_buf()?,
            Stream::Inflated(r) => r.fill_buf()?,
            #[cfg(feature = "gzip")]
            Stream::Gzip(r) => r.fill_buf()?,
        };
        if room == 0 && !buf.is_empty() {
            self.over_limit = true;
            return Err(io::Error::other("byte limit reached"));
        }
        // One byte more than an event may take: quick-xml ends a run of text at the `<` or
        // `&` after it, which it must see, so text of exactly `max_event` bytes is read,
        // as from a slice; an event that takes that byte is refused once read
        // (`over_event_limit`).
        let event_room = self
            .event_start
            .saturating_add(self.max_event)
            .saturating_add(1)
            .saturating_sub(self.consumed);
        if event_room == 0 && !buf.is_empty() {
            self.over_event = true;
            return Err(io::Error::other("event limit reached"));
        }
        let n = usize::try_from(room.min(event_room))
            .unwrap_or(usize::MAX)
            .min(buf.len())
            .min(WINDOW);
        // Search ahead in large steps (once half the window has been consumed), and hand
        // out only what has been searched.
        let end = self.consumed + n as u64;
        let ahead = self.scanned.saturating_sub(self.consumed);
        if end > self.scanned && (ahead as usize) < WINDOW / 2 {
            let from = ahead as usize;
            let base = self.scanned;
            self.breaks
                .extend(memchr::memchr_iter(b'\n', &buf[from..n]).map(|at| base + at as u64));
            self.scanned = end;
        }
        let mut n = n.min(self.scanned.saturating_sub(self.consumed) as usize);
        // quick-xml strips a byte order mark it finds whole at the start of its first
        // buffer. The content's BOM has been stripped already, so one there now is a
        // second, a character of the document (U+FEFF): until something is consumed it is
        // handed out a byte at a time, and quick-xml reads it as text, as it does when the
        // source's own buffers are shorter than a BOM, and as the slice path does.
        if self.consumed == 0 && buf[..n].starts_with(BOM) {
            n = 1;
        }
        Ok(&buf[..n])
    }

    fn consume(&mut self, amt: usize) {
        self.consumed += amt as u64;
        while let Some(&at) = self.breaks.front() {
            if at >= self.consumed {
                break;
            }
            self.breaks.pop_front();
            self.lines += 1;
            self.line_start = at + 1;
        }
        match &mut self.inner {
            Stream::Plain(r) => r.consume(amt),
            Stream::Inflated(r) => r.consume(amt),
            #[cfg(feature = "gzip")]
            Stream::Gzip(r) => r.consume(amt),
        }
    }
}

/// `Read` for a type whose reading is its `BufRead`: copies from its buffer.
fn read_through_buffer(source: &mut impl BufRead, out: &mut [u8]) -> io::Result<usize> {
    let n = {
        let buf = source.fill_buf()?;
        let n = buf.len().min(out.len());
        out[..n].copy_from_slice(&buf[..n]);
        n
    };
    source.consume(n);
    Ok(n)
}
