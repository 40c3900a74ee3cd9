//! The hashing thread of [`PackageWriter`](crate::PackageWriter): every byte of a package
//! is hashed twice (as part of its bitstream, and as part of the package), so the package's
//! own md5 and sha-256, and the sha-256 of about half of the stored bitstreams, are
//! computed on a second thread while the writing thread goes on. Without the thread
//! ([`PackageOptions::hashing_thread`](crate::PackageOptions::hashing_thread) false, or
//! when none can be started) everything is hashed on the writing thread, to the same
//! digests and the same bytes.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use resourcesync_model::{Digests, Fixity};

/// Messages to the hashing thread, in the order the bytes were written.
pub(crate) enum Msg {
    /// The next bytes of the package.
    Chunk(Vec<u8>),
    /// A stored bitstream whose sha-256 the thread computes starts at this offset of the
    /// package stream.
    Start(u64),
    /// The bitstream last started ends at this offset.
    End(u64),
    /// Reply with the sha-256 of every bitstream ended so far, in order, once all their
    /// bytes have been hashed.
    Sync(mpsc::Sender<Vec<[u8; 32]>>),
}

/// A bitstream's sha-256 computed from a range of the package stream.
struct Range {
    start: u64,
    end: Option<u64>,
    sha256: sha2::Sha256,
}

/// The hashing thread: the package's md5 and sha-256, and the sha-256 of the stored
/// bitstreams handed to it (ranges of the package stream). Runs until the channel closes.
fn hash_package(incoming: mpsc::Receiver<Msg>, spares: mpsc::Sender<Vec<u8>>) -> Digests {
    use sha2::Digest as _;
    let mut fixity = Fixity::new();
    let mut offset = 0u64;
    let mut ranges: VecDeque<Range> = VecDeque::new();
    let mut done: Vec<[u8; 32]> = Vec::new();
    let mut waiting: Option<mpsc::Sender<Vec<[u8; 32]>>> = None;
    for msg in incoming {
        match msg {
            Msg::Chunk(mut chunk) => {
                fixity.update(&chunk);
                let end = offset + chunk.len() as u64;
                for r in ranges.iter_mut() {
                    if r.start >= end {
                        break;
                    }
                    let from = r.start.max(offset);
                    let to = r.end.unwrap_or(u64::MAX).min(end);
                    if from < to {
                        r.sha256
                            .update(&chunk[(from - offset) as usize..(to - offset) as usize]);
                    }
                }
                offset = end;
                chunk.clear();
                // The writer may be gone; a spare it never takes is simply dropped.
                let _ = spares.send(chunk);
            }
            Msg::Start(start) => ranges.push_back(Range {
                start,
                end: None,
                sha256: sha2::Sha256::new(),
            }),
            Msg::End(end) => {
                if let Some(r) = ranges.back_mut() {
                    r.end = Some(end);
                }
            }
            Msg::Sync(reply) => waiting = Some(reply),
        }
        while ranges
            .front()
            .is_some_and(|r| r.end.is_some_and(|end| end <= offset))
        {
            if let Some(r) = ranges.pop_front() {
                done.push(r.sha256.finalize().into());
            }
        }
        if ranges.is_empty() {
            if let Some(reply) = waiting.take() {
                let _ = reply.send(std::mem::take(&mut done));
            }
        }
    }
    fixity.finish()
}

/// Counts and hashes everything written through it: the package's own fixity, and the
/// sha-256 of the stored bitstreams handed over.
///
/// Every byte of a package is hashed twice, once as part of its bitstream and once as part
/// of the package, so the hashing is split over two threads: bytes are copied into 1 MiB
/// chunks that a hashing thread takes (at most four in flight) while this one goes on.
/// That thread computes the package's md5 and sha-256, and the sha-256 of about half of the
/// stored bitstreams (whose bytes stand verbatim in the package), to balance the two
/// threads' work. If no thread can be started, everything is hashed here.
pub(crate) struct Hashing<W> {
    inner: W,
    chunk: Vec<u8>,
    worker: Option<Worker>,
    /// Chunks sent and not yet given back.
    in_flight: usize,
    /// Bytes written so far, shared with the package writer for bitstream offsets.
    pub(crate) written: Arc<AtomicU64>,
    /// Used when no worker thread could be started.
    inline: Fixity,
    /// The worker died with bytes of ours: the digests cannot be had.
    lost: bool,
}

struct Worker {
    /// Unbounded, so that the small messages of many small bitstreams never block; the
    /// chunks are bounded by `in_flight`.
    messages: mpsc::Sender<Msg>,
    spares: mpsc::Receiver<Vec<u8>>,
    handle: std::thread::JoinHandle<Digests>,
}

const CHUNK: usize = 1 << 20;
const IN_FLIGHT: usize = 4;

impl<W: Write> Hashing<W> {
    /// Hashes what is written to `inner`, on a thread of its own when `thread` is true
    /// and one can be started.
    pub(crate) fn new(inner: W, thread: bool) -> Hashing<W> {
        let (messages, incoming) = mpsc::channel::<Msg>();
        let (give_back, spares) = mpsc::channel::<Vec<u8>>();
        let worker = thread
            .then(|| {
                std::thread::Builder::new()
                    .name("resourcesync-package-hash".into())
                    .spawn(move || hash_package(incoming, give_back))
                    .ok()
            })
            .flatten()
            .map(|handle| Worker {
                messages,
                spares,
                handle,
            });
        Hashing {
            inner,
            chunk: Vec::with_capacity(CHUNK),
            worker,
            in_flight: 0,
            written: Arc::default(),
            inline: Fixity::new(),
            lost: false,
        }
    }

    /// A sender of messages to the hashing thread, if there is one.
    pub(crate) fn messages(&self) -> Option<mpsc::Sender<Msg>> {
        self.worker.as_ref().map(|w| w.messages.clone())
    }

    /// Hands the bytes gathered so far to the hashing thread, waiting first if it has
    /// `IN_FLIGHT` chunks still to hash.
    fn send_chunk(&mut self) {
        let Some(worker) = &self.worker else {
            return;
        };
        if self.chunk.is_empty() {
            return;
        }
        let mut spare = None;
        while let Ok(s) = worker.spares.try_recv() {
            self.in_flight = self.in_flight.saturating_sub(1);
            spare = Some(s);
        }
        if self.in_flight >= IN_FLIGHT {
            match worker.spares.recv() {
                Ok(s) => {
                    self.in_flight -= 1;
                    spare = Some(s);
                }
                Err(_) => {
                    self.worker = None;
                    self.lost = true;
                    return;
                }
            }
        }
        let spare = spare.unwrap_or_else(|| Vec::with_capacity(CHUNK));
        let full = std::mem::replace(&mut self.chunk, spare);
        if worker.messages.send(Msg::Chunk(full)).is_err() {
            // The worker died with bytes of ours: `finish` reports it.
            self.worker = None;
            self.lost = true;
        } else {
            self.in_flight += 1;
        }
    }

    fn hash(&mut self, bytes: &[u8]) {
        self.written
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        if self.worker.is_none() {
            self.inline.update(bytes);
            return;
        }
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = rest.len().min(CHUNK - self.chunk.len());
            self.chunk.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            if self.chunk.len() == CHUNK {
                self.send_chunk();
            }
        }
    }

    /// The sink and the digests of everything written.
    pub(crate) fn finish(mut self) -> io::Result<(W, Digests)> {
        self.inner.flush()?;
        self.send_chunk();
        if self.lost {
            return Err(io::Error::other("the package hashing thread failed"));
        }
        let digests = match self.worker.take() {
            Some(worker) => {
                drop(worker.messages);
                match worker.handle.join() {
                    Ok(digests) => digests,
                    Err(_) => return Err(io::Error::other("the package hashing thread failed")),
                }
            }
            None => std::mem::take(&mut self.inline).finish(),
        };
        Ok((self.inner, digests))
    }
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash(&buf[..n]);
        Ok(n)
    }

    /// Flushes the sink, and hands what is gathered to the hashing thread.
    fn flush(&mut self) -> io::Result<()> {
        self.send_chunk();
        if self.lost {
            return Err(io::Error::other("the package hashing thread failed"));
        }
        self.inner.flush()
    }
}

/// Bytes of bitstreams handed to the md5 thread of verification: `bytes[..filled]`, in
/// which the bitstreams listed in `ends` end (each offset ends one; the first continues the
/// bitstream the previous batch left unfinished), each with whether the thread is to hash
/// it (the reading thread hashes some small bitstreams itself when the thread is behind).
pub(crate) struct Batch {
    pub(crate) bytes: Vec<u8>,
    pub(crate) filled: usize,
    pub(crate) ends: Vec<(usize, bool)>,
}

impl Batch {
    pub(crate) fn new(size: usize) -> Batch {
        Batch {
            bytes: vec![0; size],
            filled: 0,
            ends: Vec::new(),
        }
    }
}

/// The md5 thread of [`Package::verify`](crate::Package::verify) and
/// [`Package::check`](crate::Package::check): hashes the batches in order and gives each
/// back, emptied, with the md5 of every bitstream that ended in it. Runs until the channel
/// closes or nobody takes its replies. A bitstream it is not to hash gets zeros.
pub(crate) fn md5_of_batches(
    incoming: mpsc::Receiver<Batch>,
    replies: mpsc::Sender<(Batch, Vec<[u8; 16]>)>,
) {
    use md5::{Digest as _, Md5};
    let mut md5 = Md5::new();
    for mut batch in incoming {
        let mut from = 0;
        let mut digests = Vec::with_capacity(batch.ends.len());
        for &(end, hash) in &batch.ends {
            if hash {
                md5.update(&batch.bytes[from..end]);
                digests.push(md5.finalize_reset().into());
            } else {
                // Its bytes in earlier batches are forgotten too.
                md5.reset();
                digests.push([0; 16]);
            }
            from = end;
        }
        md5.update(&batch.bytes[from..batch.filled]);
        batch.filled = 0;
        batch.ends.clear();
        if replies.send((batch, digests)).is_err() {
            return;
        }
    }
}
