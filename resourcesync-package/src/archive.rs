//! The ZIP structure as this crate reads it: the zip crate parses the central directory;
//! everything after that — local headers, the bytes of each entry, their sizes and CRC-32
//! — is read and checked here, so that every way a header can lie is a typed error naming
//! the entry, and so that entries read in order are read without seeking.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Read, Seek, SeekFrom};

use resourcesync_model::names;
use zip::{CompressionMethod, ZipArchive};

use crate::error::{
    BadPackage, Collision, ContentProblem, HeaderProblem, LimitExceeded, SizeProblem,
};
use crate::{PackageError, PackageLimits};

/// How an entry's data is stored; nothing else is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Method {
    Stored,
    Deflated,
}

impl Method {
    fn number(self) -> u16 {
        match self {
            Method::Stored => 0,
            Method::Deflated => 8,
        }
    }
}

/// One entry of the central directory, checked.
#[derive(Clone, Debug)]
pub(crate) struct ZipEntry {
    pub(crate) name: String,
    raw_name: Box<[u8]>,
    pub(crate) method: Method,
    pub(crate) compressed: u64,
    pub(crate) size: u64,
    crc32: u32,
    pub(crate) header_start: u64,
    /// Where the next entry's local header or the central directory starts: the entry's
    /// data must end by then.
    end: u64,
    /// The next entry's local header, when it comes before the central directory.
    next: Option<u64>,
    pub(crate) is_dir: bool,
}

/// Reads the central directory and refuses what this crate will not read: more entries
/// than the limit, duplicate or colliding names, unsafe names, encryption, methods other
/// than store and deflate, links and special files, and sizes that cannot be true. No
/// local header is read here: [`open_entry`] checks each when its entry is read.
pub(crate) fn read_directory<R: Read + Seek>(
    reader: R,
    limits: &PackageLimits,
) -> Result<(R, Vec<ZipEntry>), PackageError> {
    let zip = ZipArchive::new(reader)?;
    if zip.len() > limits.max_entries {
        return Err(LimitExceeded::Entries {
            count: zip.len(),
            max: limits.max_entries,
        }
        .into());
    }
    if zip.has_duplicate_names() {
        return Err(BadPackage::DuplicateName.into());
    }
    let directory_start = zip.central_directory_start();
    let mut entries = Vec::with_capacity(zip.len());
    for i in 0..zip.len() {
        let file = zip.by_index_data(i)?;
        let name = file.name()?.into_owned();
        let method = match file.compression() {
            CompressionMethod::Stored => Method::Stored,
            CompressionMethod::Deflated => Method::Deflated,
            other => {
                return Err(BadPackage::Compression {
                    name,
                    method: other.to_string(),
                }
                .into());
            }
        };
        if file.encrypted() {
            return Err(BadPackage::Encrypted { name }.into());
        }
        if file.is_symlink() {
            return Err(BadPackage::Symlink { name }.into());
        }
        if let Some(mode) = file.unix_mode() {
            let kind = mode & 0o170_000;
            if kind != 0 && kind != 0o100_000 && kind != 0o040_000 {
                return Err(BadPackage::SpecialFile { name, mode }.into());
            }
        }
        crate::name::check_name(&name).map_err(BadPackage::UnsafeName)?;
        entries.push(ZipEntry {
            is_dir: name.ends_with('/'),
            raw_name: file.name_raw().into(),
            method,
            compressed: file.compressed_size(),
            size: file.size(),
            crc32: file.crc32(),
            header_start: file.header_start(),
            end: directory_start,
            next: None,
            name,
        });
    }
    check_collisions(&entries)?;
    // Each entry's data must end before the next local header (in file order) or the
    // central directory: two entries sharing bytes are a known bomb.
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by_key(|&i| entries[i].header_start);
    for pair in order.windows(2) {
        let next = entries[pair[1]].header_start;
        if next < directory_start {
            entries[pair[0]].end = next;
            entries[pair[0]].next = Some(next);
        }
    }
    for entry in &entries {
        check_sizes(entry, minimal_data_start(entry))?;
    }
    Ok((zip.into_inner(), entries))
}

/// The earliest the data can start: after a local header with the central directory's
/// name and no extra field.
fn minimal_data_start(entry: &ZipEntry) -> u64 {
    entry
        .header_start
        .saturating_add(30)
        .saturating_add(entry.raw_name.len() as u64)
}

/// Refuses declared sizes that cannot be true for data starting at `data_start`.
fn check_sizes(entry: &ZipEntry, data_start: u64) -> Result<(), BadPackage> {
    let impossible = |declared, problem| BadPackage::ImpossibleSize {
        name: entry.name.clone(),
        declared,
        problem,
    };
    if data_start.saturating_add(entry.compressed) > entry.end {
        let problem = match entry.next {
            Some(next) => SizeProblem::Overlaps { next },
            None => SizeProblem::PastTheEnd {
                available: entry.end.saturating_sub(data_start),
            },
        };
        return Err(impossible(entry.compressed, problem));
    }
    match entry.method {
        Method::Stored if entry.size != entry.compressed => Err(impossible(
            entry.size,
            SizeProblem::Stored {
                compressed: entry.compressed,
            },
        )),
        // Deflate expands at most 1032 times (a 258-byte match per two bits), plus a
        // little for the smallest streams.
        Method::Deflated if entry.size / 1032 > entry.compressed.saturating_add(1) => {
            Err(impossible(
                entry.size,
                SizeProblem::Deflate {
                    compressed: entry.compressed,
                },
            ))
        }
        _ => Ok(()),
    }
}

/// The name as a case-insensitive, normalization-insensitive file system would see it,
/// without a trailing slash.
pub(crate) fn fold(name: &str) -> Cow<'_, str> {
    names::fold(name.strip_suffix('/').unwrap_or(name))
}

/// The name in NFC, without a trailing slash.
pub(crate) fn nfc(name: &str) -> Cow<'_, str> {
    names::nfc(name.strip_suffix('/').unwrap_or(name))
}

/// Refuses two names that one file system path would hold: the same after case folding
/// or Unicode normalization, or a file whose name another entry uses as a directory.
fn check_collisions(entries: &[ZipEntry]) -> Result<(), BadPackage> {
    let collision = |first: &ZipEntry, second: &ZipEntry, collision| BadPackage::NameCollision {
        first: first.name.clone(),
        second: second.name.clone(),
        collision,
    };
    let mut seen: HashMap<Cow<'_, str>, usize> = HashMap::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        if let Some(&j) = seen.get(&fold(&entry.name)) {
            let first = &entries[j];
            let kind = if first.is_dir != entry.is_dir {
                Collision::FileAsDirectory
            } else if nfc(&first.name) == nfc(&entry.name) {
                Collision::Normalization
            } else {
                Collision::Case
            };
            let (first, second) = if first.is_dir && !entry.is_dir {
                (entry, first)
            } else {
                (first, entry)
            };
            return Err(collision(first, second, kind));
        }
        seen.insert(fold(&entry.name), i);
    }
    // A file whose name is a directory of another entry: `a` and `a/b`.
    for entry in entries {
        let name = entry.name.strip_suffix('/').unwrap_or(&entry.name);
        for (at, _) in name.match_indices('/') {
            if let Some(&j) = seen.get(&fold(&name[..at])) {
                if !entries[j].is_dir {
                    return Err(collision(&entries[j], entry, Collision::FileAsDirectory));
                }
            }
        }
    }
    Ok(())
}

/// Every directory the names imply, folded: `a/b/c` implies `a` and `a/b`.
pub(crate) fn directories(entries: &[ZipEntry]) -> HashSet<String> {
    let mut dirs = HashSet::new();
    for entry in entries {
        let name = entry.name.strip_suffix('/').unwrap_or(&entry.name);
        if entry.is_dir {
            dirs.insert(name.to_owned());
        }
        for (at, _) in name.match_indices('/') {
            dirs.insert(name[..at].to_owned());
        }
    }
    dirs
}

/// Forward gaps up to this size are read past rather than sought over, so that a
/// buffered reader keeps its buffer (seeking a `BufReader` always empties it).
const SKIP: u64 = 64 * 1024;

/// Moves the reader to `to`, by reading past a small gap or by seeking.
fn goto<R: Read + Seek>(reader: &mut R, pos: &mut Option<u64>, to: u64) -> io::Result<()> {
    match *pos {
        Some(at) if at == to => return Ok(()),
        Some(at) if at < to && to - at <= SKIP => {
            *pos = None;
            let skipped = io::copy(&mut reader.take(to - at), &mut io::sink())?;
            if skipped != to - at {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
        _ => {
            *pos = None;
            reader.seek(SeekFrom::Start(to))?;
        }
    }
    *pos = Some(to);
    Ok(())
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// The ZIP64 sizes of a local extra field, for the 32-bit fields that are all ones.
fn zip64_sizes(extra: &[u8], mut size: u64, mut compressed: u64) -> (u64, u64) {
    let mut rest = extra;
    while rest.len() >= 4 {
        let (id, len) = (u16_at(rest, 0), usize::from(u16_at(rest, 2)));
        let Some(data) = rest.get(4..4 + len) else {
            break;
        };
        if id == 1 {
            let mut fields = data.chunks_exact(8).map(|c| {
                let mut b = [0u8; 8];
                b.copy_from_slice(c);
                u64::from_le_bytes(b)
            });
            if size == u64::from(u32::MAX) {
                size = fields.next().unwrap_or(size);
            }
            if compressed == u64::from(u32::MAX) {
                compressed = fields.next().unwrap_or(compressed);
            }
        }
        rest = &rest[4 + len..];
    }
    (size, compressed)
}

/// Opens an entry's data for reading: its local header read and compared with the central
/// directory, its declared sizes checked against where it starts.
pub(crate) fn open_entry<'a, R: Read + Seek>(
    reader: &'a mut R,
    pos: &'a mut Option<u64>,
    buf: &'a mut Vec<u8>,
    entry: &ZipEntry,
) -> Result<EntryReader<'a, R>, PackageError> {
    let bad = |problem| BadPackage::LocalHeader {
        name: entry.name.clone(),
        problem,
    };
    let eof_is_missing = |e: io::Error| -> PackageError {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            bad(HeaderProblem::Missing).into()
        } else {
            e.into()
        }
    };
    goto(reader, pos, entry.header_start).map_err(eof_is_missing)?;
    *pos = None;
    let mut fixed = [0u8; 30];
    reader.read_exact(&mut fixed).map_err(eof_is_missing)?;
    if u32_at(&fixed, 0) != 0x0403_4b50 {
        return Err(bad(HeaderProblem::Missing).into());
    }
    let flags = u16_at(&fixed, 6);
    let method = u16_at(&fixed, 8);
    let crc32 = u32_at(&fixed, 14);
    let name_len = usize::from(u16_at(&fixed, 26));
    let extra_len = usize::from(u16_at(&fixed, 28));
    let mut variable = vec![0u8; name_len + extra_len];
    reader.read_exact(&mut variable).map_err(eof_is_missing)?;
    let (local_name, extra) = variable.split_at(name_len);
    if local_name != &*entry.raw_name {
        return Err(bad(HeaderProblem::Name {
            local: String::from_utf8_lossy(local_name).into_owned(),
        })
        .into());
    }
    if method != entry.method.number() {
        return Err(bad(HeaderProblem::Method {
            local: method,
            central: entry.method.number(),
        })
        .into());
    }
    let (size, compressed) = zip64_sizes(
        extra,
        u64::from(u32_at(&fixed, 22)),
        u64::from(u32_at(&fixed, 18)),
    );
    // With bit 3 the sizes and CRC follow the data, and the local header may hold zeros.
    let deferred = flags & 0x8 != 0;
    for (field, local, central) in [
        ("CRC-32", u64::from(crc32), u64::from(entry.crc32)),
        ("compressed size", compressed, entry.compressed),
        ("uncompressed size", size, entry.size),
    ] {
        if local != central && !(deferred && local == 0) {
            return Err(bad(HeaderProblem::Field {
                field,
                local,
                central,
            })
            .into());
        }
    }
    let data_start = entry
        .header_start
        .saturating_add(30)
        .saturating_add((name_len + extra_len) as u64);
    check_sizes(entry, data_start)?;
    // The position stays unknown until the data is read to its end (`finish`): a reader
    // dropped before then has moved the reader by an unknown amount.
    let data = match entry.method {
        Method::Stored => Data::Stored(reader.take(entry.compressed)),
        Method::Deflated => {
            buf.resize(SKIP as usize, 0);
            Data::Deflated(Box::new(flate2::bufread::DeflateDecoder::new(Window {
                inner: reader,
                buf,
                start: 0,
                end: 0,
                remaining: entry.compressed,
            })))
        }
    };
    Ok(EntryReader {
        data,
        name: entry.name.clone(),
        size: entry.size,
        compressed: entry.compressed,
        crc32: entry.crc32,
        data_start,
        produced: 0,
        crc: crc32fast::Hasher::new(),
        pos,
        done: false,
    })
}

/// Compressed bytes of one entry, buffered in the package's buffer.
struct Window<'a, R> {
    inner: &'a mut R,
    buf: &'a mut Vec<u8>,
    start: usize,
    end: usize,
    /// Compressed bytes not yet taken from `inner`.
    remaining: u64,
}

impl<R: Read> Read for Window<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl<R: Read> BufRead for Window<'_, R> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.start == self.end && self.remaining > 0 {
            let want = self
                .buf
                .len()
                .min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
            let n = self.inner.read(&mut self.buf[..want])?;
            self.remaining -= n as u64;
            if n == 0 {
                // Truncated: the entry ends here, and reading stops.
                self.remaining = 0;
            }
            self.start = 0;
            self.end = n;
        }
        Ok(&self.buf[self.start..self.end])
    }

    fn consume(&mut self, amt: usize) {
        self.start = (self.start + amt).min(self.end);
    }
}

enum Data<'a, R> {
    Stored(io::Take<&'a mut R>),
    Deflated(Box<flate2::bufread::DeflateDecoder<Window<'a, R>>>),
}

/// An entry's bytes as they are read, checked against what its headers declare: no more
/// than the uncompressed size (stopping there), no fewer, all of the compressed data
/// used, and the CRC-32. Errors are `InvalidData` IO errors holding a [`PackageError`].
pub(crate) struct EntryReader<'a, R> {
    data: Data<'a, R>,
    pub(crate) name: String,
    size: u64,
    pub(crate) compressed: u64,
    crc32: u32,
    data_start: u64,
    produced: u64,
    crc: crc32fast::Hasher,
    pos: &'a mut Option<u64>,
    done: bool,
}

impl<R> std::fmt::Debug for EntryReader<'_, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EntryReader")
            .field("name", &self.name)
            .field("size", &self.size)
            .field("produced", &self.produced)
            .finish_non_exhaustive()
    }
}

/// An error of reading an entry, as the IO error `Read` must return.
pub(crate) fn invalid(error: impl Into<PackageError>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, error.into())
}

impl<R: Read> EntryReader<'_, R> {
    fn content(&self, problem: ContentProblem) -> io::Error {
        invalid(BadPackage::Content {
            name: self.name.clone(),
            problem,
        })
    }

    /// At the end of the data: every declared byte there, all compressed data used, the
    /// CRC-32 right. Leaves the position after the data.
    fn finish(&mut self) -> io::Result<()> {
        let unused = match &self.data {
            Data::Stored(take) => take.limit(),
            Data::Deflated(decoder) => {
                let window = decoder.get_ref();
                window.remaining + (window.end - window.start) as u64
            }
        };
        if let Data::Deflated(decoder) = &self.data {
            let window = decoder.get_ref();
            *self.pos = Some(self.data_start + self.compressed - window.remaining);
        } else {
            *self.pos = Some(self.data_start + self.compressed - unused);
        }
        if self.produced < self.size {
            return Err(self.content(ContentProblem::Shorter {
                declared: self.size,
                actual: self.produced,
            }));
        }
        if unused > 0 {
            return Err(self.content(ContentProblem::CompressedShorter {
                declared: self.compressed,
                actual: self.compressed - unused,
            }));
        }
        let crc = std::mem::take(&mut self.crc).finalize();
        if crc != self.crc32 {
            return Err(self.content(ContentProblem::Crc32 {
                declared: self.crc32,
                actual: crc,
            }));
        }
        Ok(())
    }
}

impl<R: Read> Read for EntryReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.done || out.is_empty() {
            return Ok(0);
        }
        // Never ask for more than one byte past the declared size: a lie is found as
        // soon as it shows, without inflating the rest.
        let room = self.size.saturating_sub(self.produced).saturating_add(1);
        let want = out.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = match &mut self.data {
            Data::Stored(take) => take.read(&mut out[..want])?,
            Data::Deflated(decoder) => match decoder.read(&mut out[..want]) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData
                    ) && e.get_ref().is_none_or(|inner| !inner.is::<PackageError>()) =>
                {
                    self.done = true;
                    return Err(self.content(ContentProblem::Deflate));
                }
                Err(e) => return Err(e),
            },
        };
        if n == 0 {
            self.done = true;
            self.finish()?;
            return Ok(0);
        }
        self.produced += n as u64;
        if self.produced > self.size {
            self.done = true;
            return Err(self.content(ContentProblem::Longer {
                declared: self.size,
            }));
        }
        self.crc.update(&out[..n]);
        Ok(n)
    }
}
