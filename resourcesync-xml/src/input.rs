//! The bytes under the XML reader: counted, limited, and decompressed when gzipped.

use std::collections::VecDeque;
use std::io::{self, BufRead, Read};

/// How far ahead of the reader line breaks are looked for, which bounds the memory that
/// remembering them takes, whatever buffer the source hands out.
const WINDOW: usize = 64 * 1024;

/// A `BufRead` that counts what the XML reader consumes (bytes and line breaks, for
/// positions) and refuses to hand out more than a limit. The limit applies to the bytes
/// after decompression, so a gzip bomb stops at the same size as a plain document.
pub(crate) struct Input<R> {
    inner: Source<R>,
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

enum Source<R> {
    Plain(Sniffed<R>),
    #[cfg(feature = "gzip")]
    Gzip(io::BufReader<flate2::bufread::MultiGzDecoder<Sniffed<R>>>),
}

impl<R: BufRead> Input<R> {
    /// Wraps `inner`, decompressing it when it starts with the gzip magic bytes and
    /// dropping a UTF-8 byte order mark. The first three bytes are looked at whatever the
    /// source's buffer size, so a reader that hands out one byte at a time is sniffed the
    /// same as a slice.
    pub(crate) fn new(mut inner: R, limit: u64, max_event: u64) -> io::Result<Input<R>> {
        let peek = inner.fill_buf()?;
        let (first, sniffed) = if peek.len() >= 3 {
            let mut first = [0u8; 3];
            first.copy_from_slice(&peek[..3]);
            if first == *b"\xEF\xBB\xBF" {
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
            let kept = if first == b"\xEF\xBB\xBF" {
                Vec::new()
            } else {
                first.clone()
            };
            (first, Sniffed::Prefixed(io::Cursor::new(kept).chain(inner)))
        };
        let inner = if first.starts_with(&[0x1f, 0x8b]) {
            #[cfg(feature = "gzip")]
            {
                Source::Gzip(io::BufReader::with_capacity(
                    WINDOW,
                    flate2::bufread::MultiGzDecoder::new(sniffed),
                ))
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
            Source::Plain(sniffed)
        };
        Ok(Input {
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

    /// Marks where the next event starts: from here on, at most `max_event` bytes are
    /// handed out until the next mark.
    pub(crate) fn start_event(&mut self) {
        self.event_start = self.consumed;
    }

    /// Bytes consumed by the XML reader so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed
    }

    /// 1-based line and byte column of the next byte to be consumed.
    pub(crate) fn line_column(&self) -> (u64, u64) {
        (self.lines + 1, self.consumed - self.line_start + 1)
    }
}

impl<R: BufRead> Read for Input<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let buf = self.fill_buf()?;
            let n = buf.len().min(out.len());
            out[..n].copy_from_slice(&buf[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl<R: BufRead> BufRead for Input<R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        let room = self.limit.saturating_sub(self.consumed);
        let buf = match &mut self.inner {
            Source::Plain(r) => r.fill_buf()?,
            #[cfg(feature = "gzip")]
            Source::Gzip(r) => r.fill_buf()?,
        };
        if room == 0 && !buf.is_empty() {
            self.over_limit = true;
            return Err(io::Error::other("byte limit reached"));
        }
        let event_room = self
            .event_start
            .saturating_add(self.max_event)
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
        let n = n.min(self.scanned.saturating_sub(self.consumed) as usize);
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
            Source::Plain(r) => r.consume(amt),
            #[cfg(feature = "gzip")]
            Source::Gzip(r) => r.consume(amt),
        }
    }
}
