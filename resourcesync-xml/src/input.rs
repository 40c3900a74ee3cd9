//! The bytes under the XML reader: counted, limited, and decompressed when gzipped.

use std::io::{self, BufRead, Read};

/// A `BufRead` that counts what the XML reader consumes (bytes and line breaks, for error
/// positions) and refuses to hand out more than a limit. The limit applies to the bytes
/// after decompression, so a gzip bomb stops at the same size as a plain document.
pub(crate) struct Input<R> {
    inner: Source<R>,
    consumed: u64,
    limit: u64,
    /// Line breaks consumed so far, and the offset just after the last one.
    lines: u64,
    line_start: u64,
    /// Set when a read was refused for the limit, so the caller can tell it from IO.
    pub(crate) over_limit: bool,
}

/// The source, behind the first bytes read to sniff gzip and a byte order mark.
type Sniffed<R> = io::Chain<io::Cursor<Vec<u8>>, R>;

enum Source<R> {
    Plain(Sniffed<R>),
    #[cfg(feature = "gzip")]
    Gzip(io::BufReader<flate2::bufread::MultiGzDecoder<Sniffed<R>>>),
}

impl<R: BufRead> Input<R> {
    /// Wraps `inner`, decompressing it when it starts with the gzip magic bytes and
    /// dropping a UTF-8 byte order mark. The first three bytes are read whatever the
    /// source's buffer size, so a reader that hands out one byte at a time is sniffed the
    /// same as a slice.
    pub(crate) fn new(mut inner: R, limit: u64) -> io::Result<Input<R>> {
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
        let gzipped = first.starts_with(&[0x1f, 0x8b]);
        if first == b"\xEF\xBB\xBF" {
            first.clear();
        }
        let inner = io::Cursor::new(first).chain(inner);
        let inner = if gzipped {
            #[cfg(feature = "gzip")]
            {
                Source::Gzip(io::BufReader::with_capacity(
                    64 * 1024,
                    flate2::bufread::MultiGzDecoder::new(inner),
                ))
            }
            #[cfg(not(feature = "gzip"))]
            {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "gzip-compressed input, but the gzip feature is off",
                ));
            }
        } else {
            Source::Plain(inner)
        };
        Ok(Input {
            inner,
            consumed: 0,
            limit,
            lines: 0,
            line_start: 0,
            over_limit: false,
        })
    }

    /// Bytes consumed by the XML reader so far.
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed
    }

    /// 1-based line and byte column of the next byte to be consumed.
    pub(crate) fn line_column(&self) -> (u64, u64) {
        (self.lines + 1, self.consumed - self.line_start + 1)
    }

    fn source_buf(&mut self) -> io::Result<&[u8]> {
        match &mut self.inner {
            Source::Plain(r) => r.fill_buf(),
            #[cfg(feature = "gzip")]
            Source::Gzip(r) => r.fill_buf(),
        }
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
        let over = &mut self.over_limit;
        let buf = match &mut self.inner {
            Source::Plain(r) => r.fill_buf()?,
            #[cfg(feature = "gzip")]
            Source::Gzip(r) => r.fill_buf()?,
        };
        if room == 0 && !buf.is_empty() {
            *over = true;
            return Err(io::Error::other("byte limit reached"));
        }
        let n = usize::try_from(room).unwrap_or(usize::MAX).min(buf.len());
        Ok(&buf[..n])
    }

    fn consume(&mut self, amt: usize) {
        // Count line breaks in what is consumed; memchr keeps this far below the cost of
        // parsing. `source_buf` cannot fail here: the bytes were just handed out.
        if let Ok(buf) = self.source_buf() {
            let chunk = &buf[..amt.min(buf.len())];
            let breaks = memchr::memchr_iter(b'\n', chunk);
            let mut last = None;
            let mut count = 0;
            for at in breaks {
                count += 1;
                last = Some(at);
            }
            if let Some(at) = last {
                self.lines += count;
                self.line_start = self.consumed + at as u64 + 1;
            }
        }
        self.consumed += amt as u64;
        match &mut self.inner {
            Source::Plain(r) => r.consume(amt),
            #[cfg(feature = "gzip")]
            Source::Gzip(r) => r.consume(amt),
        }
    }
}
