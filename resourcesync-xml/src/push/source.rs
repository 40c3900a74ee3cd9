//! The text the push reader's parser reads: what was fed, or inflated from gzip as it
//! came.

use super::*;

/// The text the parser reads: what was fed (or decompressed), from the first byte not
/// yet dropped.
#[derive(Default)]
pub(crate) struct Source {
    pub(super) data: Vec<u8>,
    /// How much of `data` the parser has read.
    pub(super) pos: usize,
    /// The offset of `data[0]` in the text.
    pub(super) base: u64,
    /// No more text will come.
    pub(super) complete: bool,
    /// The text ends in this error (a corrupt gzip stream): its kind and message.
    pub(super) error: Option<(io::ErrorKind, String)>,
    /// The last byte the parser read (0 before the first).
    pub(super) last: u8,
}

impl Source {
    /// The offset of the end of the text held.
    pub(super) fn end(&self) -> u64 {
        self.base + self.data.len() as u64
    }

    /// Drops the text the parser has read.
    pub(super) fn compact(&mut self) {
        if self.pos > 0 {
            self.data.drain(..self.pos);
            self.base += self.pos as u64;
            self.pos = 0;
        }
    }
}

impl Read for Source {
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

impl BufRead for Source {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos < self.data.len() {
            return Ok(&self.data[self.pos..]);
        }
        if let Some((kind, message)) = &self.error {
            return Err(io::Error::new(*kind, message.clone()));
        }
        if self.complete {
            return Ok(&[]);
        }
        // The scanner said the bytes were here and they are not: a bug, which must not be
        // read as the end of the document.
        Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            "push reader: the parser ran out of fed bytes (internal error)",
        ))
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.data.len());
        if amt > 0 {
            if let Some(&b) = self.pos.checked_sub(1).and_then(|i| self.data.get(i)) {
                self.last = b;
            }
        }
    }
}

/// Compressed bytes as fed, handed to the decoder in whole pieces only (see
/// `counted::Pieces`): the decoder sees the pieces a slice's decoder sees, so that it
/// decodes (and fails) alike; until a piece is complete, it is told to wait.
#[cfg(feature = "gzip")]
#[derive(Default)]
pub(super) struct Compressed {
    pub(super) data: Vec<u8>,
    pub(super) pos: usize,
    pub(super) complete: bool,
}

#[cfg(feature = "gzip")]
impl Read for Compressed {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.data.len() - self.pos;
        if available < out.len() && !self.complete {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = available.min(out.len());
        out[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(feature = "gzip")]
impl BufRead for Compressed {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        Ok(&self.data[self.pos..])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.data.len());
    }
}

/// The decoder of a gzipped document: the stack `Counted` reads a gzipped source through,
/// over the compressed bytes fed so far.
#[cfg(feature = "gzip")]
pub(super) struct Inflater {
    pub(super) decoder:
        io::BufReader<flate2::bufread::MultiGzDecoder<crate::counted::Pieces<Compressed>>>,
}

#[cfg(feature = "gzip")]
impl Inflater {
    pub(super) fn new() -> Inflater {
        Inflater {
            decoder: io::BufReader::with_capacity(
                crate::counted::WINDOW,
                flate2::bufread::MultiGzDecoder::new(crate::counted::Pieces::new(
                    Compressed::default(),
                )),
            ),
        }
    }

    pub(super) fn compressed(&mut self) -> &mut Compressed {
        self.decoder.get_mut().get_mut().get_mut()
    }

    pub(super) fn feed(&mut self, bytes: &[u8]) {
        let compressed = self.compressed();
        if compressed.pos > 0 {
            compressed.data.drain(..compressed.pos);
            compressed.pos = 0;
        }
        compressed.data.extend_from_slice(bytes);
    }

    pub(super) fn finish(&mut self) {
        self.compressed().complete = true;
    }

    /// Compressed bytes held.
    pub(super) fn held(&self) -> usize {
        self.decoder.get_ref().get_ref().get_ref().data.len()
    }

    /// Decompresses one window into `source`; false if the decoder waits for input.
    pub(super) fn pull(&mut self, source: &mut Source) -> bool {
        match self.decoder.fill_buf() {
            Ok([]) => source.complete = true,
            Ok(text) => {
                let n = text.len();
                source.compact();
                source.data.extend_from_slice(text);
                self.decoder.consume(n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return false,
            Err(e) => source.error = Some((e.kind(), e.to_string())),
        }
        true
    }
}
