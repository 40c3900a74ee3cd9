//! A bitstream's bytes on their way to the digests: batches handed to the hashing thread
//! (or hashed inline when small), and the judgement of what was read against what the
//! manifest lists.

use super::*;

/// Bitstream bytes handed to the md5 thread at once, and buffers of them at most.
pub(super) const BATCH: usize = 1 << 20;
pub(super) const BATCHES: usize = 4;
/// Bitstreams of this size or less have their md5 computed on the reading thread when the
/// md5 thread has `BEHIND` batches or more to hash: the reading thread has less to do
/// (sha-256, reading, CRC-32), and many small bitstreams keep the two threads balanced.
pub(super) const INLINE_BYTES: u64 = 64 << 10;
pub(super) const BEHIND: usize = 2;
/// In unit tests every small bitstream is hashed here (the integration tests, with the
/// library built as it ships, take the md5 thread's path).
pub(super) const ALWAYS_INLINE: bool = cfg!(test);
/// Bitstreams of fewer bytes in all are verified on one thread.
pub(super) const THREAD_BYTES: u64 = 256 << 10;

pub(super) fn thread_failed() -> PackageError {
    PackageError::Io(io::Error::other("the package hashing thread failed"))
}

/// What the manifest says of the bitstreams, for judging them.
pub(super) struct Facts<'a> {
    pub(super) entries: &'a [ZipEntry],
    pub(super) manifest: &'a Document,
    pub(super) listed: &'a [Listed],
}

impl<'a> Facts<'a> {
    /// The `i`th bitstream's ZIP entry, and the length and hashes its manifest entry gives.
    pub(super) fn expected(&self, i: usize) -> (&'a ZipEntry, Option<u64>, Option<&'a Hashes>) {
        let listed = &self.listed[i];
        let md = self.manifest.entries[listed.entry].md.as_ref();
        (
            &self.entries[listed.zip_index],
            md.and_then(|md| md.length),
            md.and_then(|md| md.hash.as_ref()),
        )
    }
}

/// A bitstream read on the two-thread path, its md5 still to come (unless computed here):
/// what was read, or the fixity error found while reading it.
pub(super) struct Pending {
    pub(super) index: usize,
    pub(super) outcome: Result<ReadToEnd, FixityError>,
}

/// A bitstream read to its end on the two-thread path.
pub(super) struct ReadToEnd {
    pub(super) length: u64,
    pub(super) sha256: [u8; 32],
    /// Computed by the reading thread rather than the md5 thread.
    pub(super) md5: Option<[u8; 16]>,
    /// The ZIP's CRC-32 differed: the error, reported when the manifest's length and
    /// hashes have nothing against the bytes (else their fixity error is).
    pub(super) crc: Option<PackageError>,
}

/// The reading thread's end of the md5 thread.
pub(super) struct Pipe {
    pub(super) batches: mpsc::Sender<Batch>,
    pub(super) done: mpsc::Receiver<(Batch, Vec<[u8; 16]>)>,
    /// The batch being filled.
    pub(super) batch: Batch,
    /// Batches allocated, at most `BATCHES`.
    pub(super) buffers: usize,
    /// Batches sent and not yet given back.
    pub(super) in_flight: usize,
    /// Bitstreams read whose md5 has not come back, in file order.
    pub(super) pending: VecDeque<Pending>,
    /// `fixity` returned an error, or the thread failed: nothing more is judged.
    pub(super) stopped: bool,
    /// Batches given back and not yet used.
    pub(super) spares: Vec<Batch>,
}

impl Pipe {
    /// Sends the batch being filled, and takes another: one given back, or a new one
    /// while fewer than `BATCHES` exist, or else the next given back.
    pub(super) fn send(
        &mut self,
        facts: &Facts<'_>,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<(), PackageError> {
        self.send_inner(facts, fixity)
            .inspect_err(|_| self.stopped = true)
    }

    pub(super) fn send_inner(
        &mut self,
        facts: &Facts<'_>,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<(), PackageError> {
        let mut spare = self.spares.pop();
        while let Ok(reply) = self.done.try_recv() {
            let batch = self.judge(reply, facts, fixity)?;
            self.spares.extend(spare.replace(batch));
        }
        let next = match spare {
            Some(spare) => spare,
            None if self.buffers < BATCHES => {
                self.buffers += 1;
                Batch::new(BATCH)
            }
            None => {
                let reply = self.done.recv().map_err(|_| thread_failed())?;
                self.judge(reply, facts, fixity)?
            }
        };
        let full = std::mem::replace(&mut self.batch, next);
        self.batches.send(full).map_err(|_| thread_failed())?;
        self.in_flight += 1;
        Ok(())
    }

    /// Whether the md5 thread is behind, by `BEHIND` batches or more, once the batches it
    /// has given back are judged.
    pub(super) fn behind(
        &mut self,
        facts: &Facts<'_>,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<bool, PackageError> {
        if ALWAYS_INLINE {
            return Ok(true);
        }
        if self.in_flight < BEHIND {
            return Ok(false);
        }
        while let Ok(reply) = self.done.try_recv() {
            let spare = self
                .judge(reply, facts, fixity)
                .inspect_err(|_| self.stopped = true)?;
            self.spares.push(spare);
        }
        Ok(self.in_flight >= BEHIND)
    }

    /// Judges the bitstreams whose md5 came back, handing on their fixity errors; returns
    /// the emptied batch.
    pub(super) fn judge(
        &mut self,
        (batch, md5s): (Batch, Vec<[u8; 16]>),
        facts: &Facts<'_>,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<Batch, PackageError> {
        self.in_flight -= 1;
        for md5 in md5s {
            let Some(pending) = self.pending.pop_front() else {
                return Err(thread_failed());
            };
            let (entry, length, hashes) = facts.expected(pending.index);
            let error = match pending.outcome {
                Err(f) => Some(f),
                Ok(read) => {
                    let digests = Digests {
                        length: read.length,
                        md5: Digest(read.md5.unwrap_or(md5)),
                        sha256: Digest(read.sha256),
                    };
                    let error = judge(&entry.name, length, hashes, &digests);
                    match read.crc {
                        // As `VerifiedReader::read` judges it.
                        Some(crc) => Some(behind_crc(error).ok_or(crc)?),
                        None => error,
                    }
                }
            };
            if let Some(f) = error {
                fixity(pending.index, f)?;
            }
        }
        Ok(batch)
    }

    /// Sends what is gathered and judges every bitstream read.
    pub(super) fn drain(
        &mut self,
        facts: &Facts<'_>,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<(), PackageError> {
        if self.batch.filled > 0 || !self.batch.ends.is_empty() {
            let last = std::mem::replace(&mut self.batch, Batch::new(0));
            self.batches.send(last).map_err(|_| thread_failed())?;
            self.in_flight += 1;
        }
        while self.in_flight > 0 {
            let reply = self.done.recv().map_err(|_| thread_failed())?;
            self.judge(reply, facts, fixity)?;
        }
        match self.pending.is_empty() {
            true => Ok(()),
            false => Err(thread_failed()),
        }
    }
}

/// The fixity error of a bitstream read to its end, if any: its length first, then the
/// first of the manifest's hashes that differs.
pub(super) fn judge(
    path: &str,
    length: Option<u64>,
    hashes: Option<&Hashes>,
    digests: &Digests,
) -> Option<FixityError> {
    let mismatch = match length {
        Some(expected) if digests.length != expected => FixityMismatch::Length {
            expected,
            actual: digests.length,
        },
        _ => hashes.and_then(|h| digests.mismatch(h))?,
    };
    Some(FixityError {
        path: path.to_owned(),
        mismatch,
    })
}

/// The fixity error that explains a CRC-32 other than declared: a hash, not the length
/// (another length means the ZIP's sizes lie, which is the ZIP's error).
pub(super) fn behind_crc(judged: Option<FixityError>) -> Option<FixityError> {
    judged.filter(|f| !matches!(f.mismatch, FixityMismatch::Length { .. }))
}

/// Checks `read` bytes of a bitstream, `inflated` of the package, against the manifest's
/// length and the limits: no more than the length declared, and, when none is, no more
/// than `max_ratio` times its compressed size.
pub(super) fn growth(
    path: &str,
    read: u64,
    length: Option<u64>,
    compressed: u64,
    inflated: u64,
    limits: &PackageLimits,
) -> Result<(), PackageError> {
    if let Some(expected) = length {
        if read > expected {
            return Err(FixityError {
                path: path.to_owned(),
                mismatch: FixityMismatch::Longer { expected },
            }
            .into());
        }
    }
    if read > limits.max_entry_bytes {
        return Err(LimitExceeded::EntryBytes {
            path: path.to_owned(),
            max: limits.max_entry_bytes,
        }
        .into());
    }
    if inflated > limits.max_total_bytes {
        return Err(LimitExceeded::TotalBytes {
            max: limits.max_total_bytes,
        }
        .into());
    }
    // A declared length bounds the inflation already (above): the ratio is the guard of
    // a bitstream that declares none, which could otherwise grow to the byte limits.
    if length.is_none() && read > 1 << 20 && read / compressed.max(1) > limits.max_ratio {
        return Err(LimitExceeded::Ratio {
            path: path.to_owned(),
            max: limits.max_ratio,
        }
        .into());
    }
    Ok(())
}

/// An IO error from a verified reader, back to the package error inside it.
pub(super) fn unwrap_io(e: io::Error) -> PackageError {
    if e.get_ref().is_some_and(|inner| inner.is::<PackageError>()) {
        if let Some(Ok(package)) = e.into_inner().map(|inner| inner.downcast::<PackageError>()) {
            return *package;
        }
        // is::<PackageError>() held, so the downcast cannot fail; the error is gone.
        return PackageError::Io(io::Error::from(io::ErrorKind::InvalidData));
    }
    PackageError::Io(e)
}
