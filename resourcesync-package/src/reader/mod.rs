//! Reading a package: its manifest checked, its bitstreams verified as they are read, and
//! extraction that is all or nothing.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use resourcesync_model::{Document, DocumentKind, Finding, Hashes, MAX_BYTES};

use crate::archive::{self, EntryReader, ZipEntry};
use crate::error::{BadPackage, LimitExceeded, Misuse, PathProblem};
use crate::hashing::{self, Batch};
use crate::{FixityError, MANIFEST_NAME, PackageError, safe_path};
use resourcesync_model::{Digest, Digests, Fixity, FixityMismatch};

mod pipe;

use pipe::*;

/// Limits on what reading a package may cost. Decompressed bytes are counted as they are
/// inflated, never taken from what the archive declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackageLimits {
    /// Decompressed bytes of one bitstream; 4 GiB by default.
    pub max_entry_bytes: u64,
    /// Decompressed bytes of all bitstreams together; 64 GiB by default.
    pub max_total_bytes: u64,
    /// Decompressed bytes per compressed byte of a bitstream whose manifest entry declares
    /// no `length`, checked once it has inflated 1 MiB; 1,000 by default. A bitstream with
    /// a declared length may inflate to that length and no more (then its length and
    /// hashes are verified), whatever its ratio: honest data compresses more than a
    /// thousand times (64 MiB of zeros, a sparse file, deflate to 64 KiB), and the byte
    /// limits above bound what a manifest may declare.
    pub max_ratio: u64,
    /// Entries in the ZIP; 100,000 by default (a manifest lists at most 50,000).
    pub max_entries: usize,
    /// Decompressed bytes of `manifest.xml`: the Sitemap protocol's 52,428,800.
    pub max_manifest_bytes: u64,
    /// Not a limit: whether [`verify`](Package::verify) and [`check`](Package::check) may
    /// compute the bitstreams' md5 on a second thread (the default); see the crate's
    /// documentation. Either way they find the same.
    pub hashing_thread: bool,
}

impl Default for PackageLimits {
    fn default() -> Self {
        PackageLimits {
            max_entry_bytes: 4 << 30,
            max_total_bytes: 64 << 30,
            max_ratio: 1_000,
            max_entries: 100_000,
            max_manifest_bytes: MAX_BYTES,
            hashing_thread: true,
        }
    }
}

impl PackageLimits {
    /// These limits with other byte limits per bitstream and in total.
    pub fn with_bytes(mut self, per_entry: u64, total: u64) -> PackageLimits {
        self.max_entry_bytes = per_entry;
        self.max_total_bytes = total;
        self
    }

    /// These limits with another compression ratio.
    pub fn with_ratio(mut self, ratio: u64) -> PackageLimits {
        self.max_ratio = ratio;
        self
    }

    /// These limits with or without the hashing thread of verification.
    pub fn with_hashing_thread(mut self, thread: bool) -> PackageLimits {
        self.hashing_thread = thread;
        self
    }
}

/// One bitstream the manifest lists: its manifest entry and where it is in the ZIP.
#[derive(Clone, Debug)]
struct Listed {
    entry: usize,
    zip_index: usize,
}

/// A package opened for reading: the ZIP's directory read, the manifest read and
/// checked, every bitstream it lists found.
///
/// Opening fails with a clear [`PackageError`] when the manifest is missing, not at the
/// top level, not a Resource Dump or Change Dump Manifest, or unreadable; when the ZIP has
/// two entries of one name, or the manifest lists one path twice or a path the ZIP lacks;
/// and when an entry is encrypted, compressed with a method other than store or deflate,
/// a symbolic link or special file, or named unsafely (see [`safe_path`]). Files the
/// manifest does not list are reported by [`unlisted`](Package::unlisted), not refused.
/// Rules the manifest breaks are [`findings`](Package::findings) (a manifest written by the
/// Python reference implementation, without leading slashes, opens with
/// `path-leading-slash` findings).
///
/// ```
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
/// use resourcesync_package::{Bitstream, Package, PackageOptions, PackageWriter};
/// use std::io::Read;
///
/// let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
/// head.md.at = Some("2013-01-03T09:00:00Z".parse()?);
/// head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
/// writer.add(Bitstream::new("http://example.com/res1".parse()?, "/resources/res1".into()), &b"hello"[..])?;
/// let (zip, _) = writer.finish()?;
///
/// let mut package = Package::new(std::io::Cursor::new(zip))?;
/// assert_eq!(package.bitstream_count(), 1);
/// let mut content = String::new();
/// package.bitstream(0)?.read_to_string(&mut content)?;
/// assert_eq!(content, "hello");
/// package.verify()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Package<R: Read + Seek> {
    reader: R,
    /// Where `reader` is, when known: entries read in file order need no seek.
    pos: Option<u64>,
    /// The buffer deflated entries are read through.
    buf: Vec<u8>,
    entries: Vec<ZipEntry>,
    manifest: Document,
    findings: Vec<Finding>,
    /// The manifest's entries the reader skipped (see [`Package::skipped`]).
    skipped: Vec<u64>,
    listed: Vec<Listed>,
    unlisted: Vec<String>,
    limits: PackageLimits,
    inflated: u64,
}

/// Reads a manifest whole: the document, the reader's findings, and the numbers of the
/// entries the reader skipped (it cannot name them), among the entries as written.
fn read_manifest(
    xml: &[u8],
) -> Result<(Document, Vec<Finding>, Vec<u64>), resourcesync_xml::Error> {
    let mut reader = resourcesync_xml::Reader::from_slice(xml);
    let head = reader.head()?.clone();
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    // The entries seen up to `seen` that are neither kept nor counted yet: skipped.
    let skip_to = |seen: u64, kept: usize, skipped: &mut Vec<u64>| {
        let before = kept as u64 + skipped.len() as u64;
        skipped.extend(before + 1..=seen);
    };
    while let Some(entry) = reader.next_entry()? {
        skip_to(
            reader.entries_read().saturating_sub(1),
            entries.len(),
            &mut skipped,
        );
        entries.push(entry);
    }
    skip_to(reader.entries_read(), entries.len(), &mut skipped);
    let findings = reader.take_findings();
    Ok((Document { head, entries }, findings, skipped))
}

impl<R: Read + Seek> fmt::Debug for Package<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Package")
            .field("kind", &self.manifest.head.kind())
            .field("zip_entries", &self.entries.len())
            .field("bitstreams", &self.listed.len())
            .field("unlisted", &self.unlisted)
            .field("limits", &self.limits)
            .field("inflated", &self.inflated)
            .finish_non_exhaustive()
    }
}

impl Package<io::BufReader<fs::File>> {
    /// Opens the package file at `path` with default limits. Any error of opening it,
    /// whether the file cannot be opened or the package is bad, is a
    /// [`PackageError::File`] that names the path and holds the error
    /// [`new`](Package::new) would return.
    ///
    /// ```
    /// # use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
    /// # use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};
    /// use resourcesync_package::{Package, PackageError};
    ///
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("part1.zip");
    /// # let head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest)
    /// #     .with_at("2013-01-03T09:00:00Z".parse()?)
    /// #     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
    /// # let mut writer = PackageWriter::create(&path, head, PackageOptions::default())?;
    /// # writer.add(Bitstream::new("http://example.com/res1".parse()?, "/res1".into()), &b"hi"[..])?;
    /// # writer.finish_file()?;
    /// let mut package = Package::open(&path)?;
    /// package.verify()?;
    /// assert_eq!(package.bitstream_count(), 1);
    ///
    /// let missing = Package::open(dir.path().join("missing.zip")).unwrap_err();
    /// assert!(matches!(missing, PackageError::File { ref path, .. } if path.ends_with("missing.zip")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Package<io::BufReader<fs::File>>, PackageError> {
        Package::open_with_limits(path, PackageLimits::default())
    }

    /// [`open`](Package::open) with the given limits.
    pub fn open_with_limits(
        path: impl AsRef<Path>,
        limits: PackageLimits,
    ) -> Result<Package<io::BufReader<fs::File>>, PackageError> {
        let path = path.as_ref();
        fs::File::open(path)
            .map_err(PackageError::Io)
            .and_then(|file| Package::with_limits(io::BufReader::new(file), limits))
            .map_err(|e| PackageError::File {
                path: path.to_path_buf(),
                source: Box::new(e),
            })
    }
}

impl<R: Read + Seek> Package<R> {
    /// Reads a package from `reader` with default limits. A file is better opened with
    /// [`Package::open`], which buffers it and names its path in errors.
    pub fn new(reader: R) -> Result<Package<R>, PackageError> {
        Package::with_limits(reader, PackageLimits::default())
    }

    /// Reads a package from `reader` with the given limits.
    pub fn with_limits(reader: R, limits: PackageLimits) -> Result<Package<R>, PackageError> {
        let (mut reader, entries) = archive::read_directory(reader, &limits)?;
        let Some(manifest_index) = entries.iter().position(|e| e.name == MANIFEST_NAME) else {
            let near = entries.iter().find(|e| {
                e.name
                    .rsplit('/')
                    .next()
                    .is_some_and(|base| base.eq_ignore_ascii_case(MANIFEST_NAME))
            });
            return Err(match near {
                Some(e) => BadPackage::ManifestElsewhere {
                    found: e.name.clone(),
                },
                None => BadPackage::NoManifest,
            }
            .into());
        };
        let mut pos = None;
        let mut buf = Vec::new();
        let max = limits.max_manifest_bytes;
        let mut xml = Vec::new();
        archive::open_entry(&mut reader, &mut pos, &mut buf, &entries[manifest_index])?
            .take(max.saturating_add(1))
            .read_to_end(&mut xml)
            .map_err(unwrap_io)?;
        if xml.len() as u64 > max {
            return Err(LimitExceeded::ManifestBytes { max }.into());
        }
        let (manifest, findings, skipped) = read_manifest(&xml).map_err(PackageError::Manifest)?;
        let kind = manifest.head.kind();
        if !matches!(
            kind,
            DocumentKind::ResourceDumpManifest | DocumentKind::ChangeDumpManifest
        ) {
            return Err(BadPackage::NotAManifest { kind }.into());
        }
        let listed = listed(&manifest, &entries)?;
        let is_listed = listed_entries(&listed, entries.len());
        let unlisted = entries
            .iter()
            .zip(&is_listed)
            .filter(|(e, listed)| e.name != MANIFEST_NAME && !e.is_dir && !**listed)
            .map(|(e, _)| e.name.clone())
            .collect();
        Ok(Package {
            reader,
            pos,
            buf,
            entries,
            manifest,
            findings,
            skipped,
            listed,
            unlisted,
            limits,
            inflated: 0,
        })
    }

    /// The manifest: its entries are the bitstreams' and the deletions'.
    pub fn manifest(&self) -> &Document {
        &self.manifest
    }

    /// Rules of the standard the manifest breaks.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// The numbers (from 1, in order) of the manifest's entries, as written, that its
    /// reader skipped: no `<loc>`, or one no reading makes a URI (a
    /// [finding](Package::findings) with that number says which). They are not in
    /// [`manifest`](Package::manifest), and the findings number entries as written, skipped
    /// ones included. Such an entry may name a resource the Source holds: a Destination
    /// deletes nothing for want of it (`resourcesync_client::PackageManifest`).
    pub fn skipped(&self) -> &[u64] {
        &self.skipped
    }

    /// Files in the package that the manifest does not list.
    pub fn unlisted(&self) -> &[String] {
        &self.unlisted
    }

    /// How many bitstreams the package has: files of the ZIP that the manifest lists,
    /// numbered from 0 in the manifest's order for [`bitstream`](Package::bitstream) and
    /// [`entry`](Package::entry), among the entries for which
    /// [`resourcesync_model::Entry::has_bitstream`] holds (so that
    /// a reader of [`manifest`](Package::manifest) alone numbers them alike). Fewer than the manifest's entries
    /// (`manifest().entries.len()`) when it lists deletions, which have no bitstream;
    /// files the manifest does not list are not counted (see
    /// [`unlisted`](Package::unlisted)), nor is `manifest.xml`.
    pub fn bitstream_count(&self) -> usize {
        self.listed.len()
    }

    /// The manifest entry of the `i`th bitstream.
    pub fn entry(&self, i: usize) -> Option<&resourcesync_model::Entry> {
        self.listed.get(i).map(|l| &self.manifest.entries[l.entry])
    }

    /// The `i`th bitstream, as a reader that verifies it as it is read: reading past the
    /// length the manifest gives, or reaching the end with another length or another md5
    /// or sha-256, is an `InvalidData` error whose inner error is a
    /// [`PackageError::Fixity`] naming the bitstream, the expected and the actual value;
    /// a local header or content that disagrees with the ZIP's central directory is a
    /// [`PackageError::Bad`], and going over a limit a [`PackageError::Limit`].
    pub fn bitstream(&mut self, i: usize) -> Result<VerifiedReader<'_, R>, PackageError> {
        let listed = self.listed.get(i).ok_or(Misuse::NoBitstream {
            index: i,
            count: self.listed.len(),
        })?;
        let md = self.manifest.entries[listed.entry].md.as_ref();
        let (length, hashes) = (
            md.and_then(|md| md.length),
            md.and_then(|md| md.hash.clone()),
        );
        let entry = &self.entries[listed.zip_index];
        let inner = archive::open_entry(&mut self.reader, &mut self.pos, &mut self.buf, entry)?;
        Ok(VerifiedReader {
            inner,
            length,
            hashes,
            fixity: Fixity::new(),
            limits: self.limits,
            inflated: &mut self.inflated,
            done: false,
        })
    }

    /// The bitstreams' numbers in the order they stand in the ZIP, so that reading them
    /// all needs no seek.
    fn file_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.listed.len()).collect();
        order.sort_by_key(|&i| self.entries[self.listed[i].zip_index].header_start);
        order
    }

    /// Reads every bitstream to its end, verifying length and every listed hash, in the
    /// order they stand in the ZIP; fails with the first that does not verify.
    /// [`extract`](Package::extract) verifies as it writes: there is no need to call both.
    pub fn verify(&mut self) -> Result<(), PackageError> {
        self.verify_each(&mut |_, f| Err(f.into()))
    }

    /// Reads every bitstream to its end in file order and hands each fixity error, with
    /// the bitstream's number, to `fixity`, in file order; stops at the first error that
    /// `fixity` returns, or at the first other error. With two threads (see the crate's
    /// documentation) a bitstream's md5 is known only once the hashing thread has reached
    /// it: fixity errors are still handed over in file order, and all of those before a
    /// bitstream that cannot be read before its error is returned, as with one thread.
    fn verify_each(
        &mut self,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<(), PackageError> {
        let order = self.file_order();
        if self.two_threads(&order) {
            if let Some(result) = self.verify_threaded(&order, fixity) {
                return result;
            }
        }
        for i in order {
            let mut reader = self.bitstream(i)?;
            match io::copy(&mut reader, &mut io::sink()).map_err(unwrap_io) {
                Ok(_) => {}
                Err(PackageError::Fixity(f)) => fixity(i, f)?,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Whether to verify on two threads: when allowed, when the machine has two cores or
    /// more, and when the bitstreams are large enough to repay starting a thread.
    fn two_threads(&self, order: &[usize]) -> bool {
        if !self.limits.hashing_thread {
            return false;
        }
        let bytes = order
            .iter()
            .map(|&i| self.entries[self.listed[i].zip_index].size)
            .fold(0, u64::saturating_add);
        bytes >= THREAD_BYTES && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1)
    }

    /// [`verify_each`](Package::verify_each) with the md5 computed on a scoped thread;
    /// `None`, before anything is read, when no thread can be started.
    fn verify_threaded(
        &mut self,
        order: &[usize],
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Option<Result<(), PackageError>> {
        std::thread::scope(|scope| {
            let (batches, incoming) = mpsc::channel();
            let (replies, done) = mpsc::channel();
            let worker = std::thread::Builder::new()
                .name("resourcesync-package-md5".into())
                .spawn_scoped(scope, move || hashing::md5_of_batches(incoming, replies))
                .ok()?;
            let pipe = Pipe {
                batches,
                done,
                batch: Batch::new(BATCH),
                buffers: 1,
                in_flight: 0,
                pending: VecDeque::new(),
                stopped: false,
                spares: Vec::new(),
            };
            // Dropping the pipe closes the channel: the thread ends after its batches.
            let result = self.pipeline(order, pipe, fixity);
            if worker.join().is_err() && result.is_ok() {
                return Some(Err(thread_failed()));
            }
            Some(result)
        })
    }

    /// Reads the bitstreams in `order` into batches for the md5 thread, computing their
    /// length and sha-256 here and checking the limits as they are read.
    fn pipeline(
        &mut self,
        order: &[usize],
        mut pipe: Pipe,
        fixity: &mut dyn FnMut(usize, FixityError) -> Result<(), PackageError>,
    ) -> Result<(), PackageError> {
        use md5::Md5;
        use sha2::{Digest as _, Sha256};
        let Package {
            reader,
            pos,
            buf,
            entries,
            manifest,
            listed,
            limits,
            inflated,
            ..
        } = self;
        let facts = Facts {
            entries,
            manifest,
            listed,
        };
        for &i in order {
            let (entry, length, _) = facts.expected(i);
            // A small bitstream while the thread is behind: its md5 is computed here.
            let inline = entry.size <= INLINE_BYTES && pipe.behind(&facts, fixity)?;
            let mut read_one = || -> Result<Result<ReadToEnd, FixityError>, PackageError> {
                let mut data = archive::open_entry(reader, pos, buf, entry)?;
                let mut sha256 = Sha256::new();
                let mut md5 = inline.then(Md5::new);
                let mut read = 0u64;
                loop {
                    if pipe.batch.filled == pipe.batch.bytes.len() {
                        pipe.send(&facts, fixity)?;
                    }
                    let batch = &mut pipe.batch;
                    let n = match data.read(&mut batch.bytes[batch.filled..]) {
                        Ok(n) => n,
                        // Every byte was read (see `VerifiedReader::read`): the error waits
                        // for the md5, so that the manifest's judgement comes first.
                        Err(e) if is_crc_mismatch(&e) => {
                            return Ok(Ok(ReadToEnd {
                                length: read,
                                sha256: sha256.finalize().into(),
                                md5: md5.map(|md5| md5.finalize().into()),
                                crc: Some(unwrap_io(e)),
                            }));
                        }
                        Err(e) => return Err(unwrap_io(e)),
                    };
                    if n == 0 {
                        return Ok(Ok(ReadToEnd {
                            length: read,
                            sha256: sha256.finalize().into(),
                            md5: md5.map(|md5| md5.finalize().into()),
                            crc: None,
                        }));
                    }
                    let bytes = &batch.bytes[batch.filled..batch.filled + n];
                    sha256.update(bytes);
                    if let Some(md5) = md5.as_mut() {
                        md5.update(bytes);
                    }
                    batch.filled += n;
                    read += n as u64;
                    *inflated += n as u64;
                    match growth(
                        &entry.name,
                        read,
                        length,
                        entry.compressed,
                        *inflated,
                        limits,
                    ) {
                        Ok(()) => {}
                        Err(PackageError::Fixity(f)) => return Ok(Err(f)),
                        Err(e) => return Err(e),
                    }
                }
            };
            match read_one() {
                Ok(outcome) => {
                    pipe.batch.ends.push((pipe.batch.filled, !inline));
                    pipe.pending.push_back(Pending { index: i, outcome });
                }
                // Stopped by `fixity`, or the thread failed: that is the error.
                Err(e) if pipe.stopped => return Err(e),
                // Else the fixity errors of the bitstreams before this one come first.
                Err(e) => return pipe.drain(&facts, fixity).and(Err(e)),
            }
        }
        pipe.drain(&facts, fixity)
    }

    /// Checks the whole package against the standard: the manifest's findings, a
    /// [`resourcesync_model::Rule::UnlistedFile`] warning per file the
    /// manifest does not describe, and a
    /// [`resourcesync_model::Rule::BitstreamFixity`] error per
    /// bitstream whose length or hashes differ from its entry (numbered as in the
    /// manifest). Fails only when the package cannot be read (IO, ZIP, limits).
    pub fn check(&mut self) -> Result<Vec<Finding>, PackageError> {
        use resourcesync_model::Rule;
        let mut findings = self.findings.clone();
        for name in &self.unlisted {
            findings.push(Finding {
                message: format!("{name} is in the package but not in its manifest"),
                ..Finding::new(Rule::UnlistedFile, None)
            });
        }
        let mut failed = Vec::new();
        self.verify_each(&mut |i, f| {
            failed.push((i, f));
            Ok(())
        })?;
        let mut fixity: Vec<Finding> = failed
            .into_iter()
            .map(|(i, f)| Finding {
                message: f.to_string(),
                ..Finding::new(Rule::BitstreamFixity, Some(self.listed[i].entry as u64 + 1))
            })
            .collect();
        fixity.sort_by_key(|f| f.entry);
        findings.extend(fixity);
        // The entries not read above: their local headers must agree too.
        let read = listed_entries(&self.listed, self.entries.len());
        for (entry, read) in self.entries.iter().zip(read) {
            if entry.name != MANIFEST_NAME && !read {
                archive::open_entry(&mut self.reader, &mut self.pos, &mut self.buf, entry)?;
            }
        }
        Ok(findings)
    }

    /// Extracts every bitstream to its path below `target`, with `manifest.xml`, all or
    /// nothing: into a temporary directory beside `target`, renamed to `target` only when
    /// every bitstream has been written and verified. `target` must not exist. On error
    /// nothing is left behind. Verifies every bitstream as [`verify`](Package::verify)
    /// does, so a package need not be verified first.
    pub fn extract(&mut self, target: impl AsRef<Path>) -> Result<PathBuf, PackageError> {
        let target = target.as_ref();
        if target.exists() {
            return Err(Misuse::TargetExists(target.to_path_buf()).into());
        }
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let mut builder = tempfile::Builder::new();
        // tempfile makes its directories owner-only (0700) and the rename keeps that: the
        // extracted tree gets the mode of any directory the program makes instead.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(fs::Permissions::from_mode(0o777));
        }
        let temp = builder
            .prefix(".resourcesync-extract-")
            .tempdir_in(parent)?;
        for i in self.file_order() {
            let name = &self.entries[self.listed[i].zip_index].name;
            let relative = safe_path(name).map_err(BadPackage::UnsafeName)?;
            let path = temp.path().join(relative);
            if let Some(dir) = path.parent() {
                fs::create_dir_all(dir)?;
            }
            // create_new: a name can never overwrite another bitstream or follow a link.
            let mut file = fs::File::create_new(&path)?;
            let mut reader = self.bitstream(i)?;
            io::copy(&mut reader, &mut file).map_err(unwrap_io)?;
            file.flush()?;
        }
        // Written and reported, never refused, as before; the package writer keeps a Change
        // Dump Manifest's order itself and does not report the other findings (yet).
        let xml = resourcesync_xml::write_document(Vec::new(), &self.manifest)
            .map_err(PackageError::ManifestWrite)?
            .output;
        fs::write(temp.path().join(MANIFEST_NAME), xml)?;
        let kept = temp.keep();
        fs::rename(&kept, target).inspect_err(|_| {
            let _ = fs::remove_dir_all(&kept);
        })?;
        Ok(target.to_path_buf())
    }
}

/// The bitstreams the manifest lists, each found in the ZIP; a path that names no
/// bitstream, or one listed before, is an error naming the entry and the path.
///
/// A package written in the manifest's order is read without a map: each path is looked
/// for first in the ZIP entry after the last one found, and the map of names and the set
/// of directories are made only when needed.
fn listed(manifest: &Document, entries: &[ZipEntry]) -> Result<Vec<Listed>, PackageError> {
    let mut by_name: Option<HashMap<&str, usize>> = None;
    let mut directories: Option<HashSet<String>> = None;
    let mut listed = Vec::with_capacity(manifest.entries.len());
    // The manifest entry that listed each ZIP entry: ZIP names are unique, so a path listed
    // twice finds the same ZIP entry twice.
    let mut seen: Vec<Option<usize>> = vec![None; entries.len()];
    let mut next = 0;
    for (i, entry) in manifest.entries.iter().enumerate() {
        // A deletion in a Change Dump Manifest has no bitstream; a missing path anywhere
        // else is a finding of the manifest's (path-mandatory). The rule is the model's,
        // so that a reader of the manifest alone (the client) numbers bitstreams alike.
        if !entry.has_bitstream() {
            continue;
        }
        let Some(path) = entry.md.as_ref().and_then(|md| md.path.as_ref()) else {
            continue;
        };
        // The standard's paths start with a slash; tolerate its absence (reported as
        // path-leading-slash), as the Python reference implementation leaves it out.
        let name = path.name_in_package();
        let mut find = || match entries.get(next) {
            Some(e) if e.name == name => Some(next),
            _ => by_name
                .get_or_insert_with(|| {
                    entries
                        .iter()
                        .enumerate()
                        .map(|(k, e)| (e.name.as_str(), k))
                        .collect()
                })
                .get(name)
                .copied(),
        };
        // A name found is a file's (manifest names ending in a slash are refused first, and
        // ZIP directories' names end in one) and so no directory: the ZIP was refused on
        // opening if a file's name were another entry's directory.
        // What names no file is the model's one test, which `validate` reports of a
        // manifest alone (path-names-no-file).
        let mut found = None;
        let problem = if let Some(no_file) = path.names_no_file() {
            Some(PathProblem::from(no_file))
        } else if let Err(e) = crate::name::check_name(name) {
            Some(PathProblem::Unsafe(e))
        } else if name.eq_ignore_ascii_case(MANIFEST_NAME) {
            Some(PathProblem::Manifest)
        } else if let Some(k) = find() {
            found = Some(k);
            seen[k].map(|first| PathProblem::Twice { first: first + 1 })
        } else if directories
            .get_or_insert_with(|| archive::directories(entries))
            .contains(name)
        {
            Some(PathProblem::NamesDirectory)
        } else {
            Some(PathProblem::Missing)
        };
        if let Some(problem) = problem {
            return Err(BadPackage::ManifestPath {
                entry: i + 1,
                path: path.as_str().to_owned(),
                problem,
            }
            .into());
        }
        let Some(k) = found else {
            continue;
        };
        seen[k] = Some(i);
        next = k + 1;
        listed.push(Listed {
            entry: i,
            zip_index: k,
        });
    }
    Ok(listed)
}

/// Whether each ZIP entry is a listed bitstream.
fn listed_entries(listed: &[Listed], entries: usize) -> Vec<bool> {
    let mut is_listed = vec![false; entries];
    for l in listed {
        is_listed[l.zip_index] = true;
    }
    is_listed
}

/// A bitstream's content, verified as it is read. See [`Package::bitstream`].
pub struct VerifiedReader<'a, R: Read + Seek> {
    inner: EntryReader<'a, R>,
    length: Option<u64>,
    hashes: Option<Hashes>,
    fixity: Fixity,
    limits: PackageLimits,
    inflated: &'a mut u64,
    done: bool,
}

impl<R: Read + Seek> fmt::Debug for VerifiedReader<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VerifiedReader")
            .field("path", &self.inner.name)
            .field("length", &self.length)
            .field("hashes", &self.hashes)
            .field("read", &self.fixity.length())
            .finish_non_exhaustive()
    }
}

impl<R: Read + Seek> VerifiedReader<'_, R> {
    /// Checks what was read so far against the limits and the manifest's length.
    fn check_growth(&self) -> io::Result<()> {
        growth(
            &self.inner.name,
            self.fixity.length(),
            self.length,
            self.inner.compressed,
            *self.inflated,
            &self.limits,
        )
        .map_err(archive::invalid)
    }

    /// At the end: the length and every hash the manifest gives.
    fn check_end(&mut self) -> io::Result<()> {
        let digests = std::mem::take(&mut self.fixity).finish();
        match judge(
            &self.inner.name,
            self.length,
            self.hashes.as_ref(),
            &digests,
        ) {
            Some(f) => Err(archive::invalid(f)),
            None => Ok(()),
        }
    }
}

impl<R: Read + Seek> Read for VerifiedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) => {
                self.done = true;
                // A CRC-32 that differs is found once every byte is read: a hash of the
                // manifest that differs too is the finding the standard names
                // (bitstream-fixity), bytes changed in the package. Another length is the
                // ZIP's sizes lying: that stays the ZIP's error, as does a CRC-32 the
                // manifest has nothing against.
                if is_crc_mismatch(&e) {
                    let digests = std::mem::take(&mut self.fixity).finish();
                    let judged = judge(
                        &self.inner.name,
                        self.length,
                        self.hashes.as_ref(),
                        &digests,
                    );
                    if let Some(f) = behind_crc(judged) {
                        return Err(archive::invalid(f));
                    }
                }
                return Err(e);
            }
        };
        if n == 0 {
            self.done = true;
            self.check_end()?;
            return Ok(0);
        }
        self.fixity.update(&buf[..n]);
        *self.inflated += n as u64;
        if let Err(e) = self.check_growth() {
            self.done = true;
            return Err(e);
        }
        Ok(n)
    }
}

/// Whether an entry reader's error is a CRC-32 other than declared, met at the end of the
/// entry's data (every byte was read).
fn is_crc_mismatch(e: &io::Error) -> bool {
    matches!(
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<PackageError>()),
        Some(PackageError::Bad(BadPackage::Content {
            problem: crate::error::ContentProblem::Crc32 { .. },
            ..
        }))
    )
}

#[cfg(test)]
mod tests {
    use std::io::{Cursor, Write as _};

    use super::*;
    use crate::{Bitstream, Compression, PackageOptions, PackageWriter};

    /// 40 bitstreams of 8 KiB and one of 1.5 MiB; three changed after hashing, one longer
    /// and one shorter than the manifest says.
    fn corrupt() -> Vec<u8> {
        let mut head =
            resourcesync_model::DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
        head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
        head.links.push(resourcesync_model::Link::new(
            resourcesync_model::Relation::Up,
            "http://example.com/caps.xml".parse().unwrap(),
        ));
        let mut contents: Vec<Vec<u8>> = (0..41u32)
            .map(|i| {
                let n = if i == 20 { 3 << 19 } else { 8 << 10 };
                (0..n)
                    .map(|k| (k as u32).wrapping_mul(i + 7).to_le_bytes()[1])
                    .collect()
            })
            .collect();
        let options = PackageOptions::default().compression(Compression::Store);
        let mut writer = PackageWriter::new(Vec::new(), head, options).unwrap();
        for (i, content) in contents.iter().enumerate() {
            let b = Bitstream::new(
                format!("http://example.com/{i}").parse().unwrap(),
                format!("/b/{i}").into(),
            );
            writer.add(b, &content[..]).unwrap();
        }
        let mut manifest = writer.finish().unwrap().1.manifest;
        for i in [2, 20, 40] {
            contents[i][100] ^= 1;
        }
        *manifest.entries[5]
            .md
            .as_mut()
            .unwrap()
            .length
            .as_mut()
            .unwrap() -= 1;
        *manifest.entries[6]
            .md
            .as_mut()
            .unwrap()
            .length
            .as_mut()
            .unwrap() += 1;
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let stored = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (i, content) in contents.iter().enumerate() {
            zip.start_file(format!("b/{i}"), stored).unwrap();
            zip.write_all(content).unwrap();
        }
        zip.start_file(MANIFEST_NAME, stored).unwrap();
        let xml = resourcesync_xml::write_document(Vec::new(), &manifest)
            .unwrap()
            .output;
        zip.write_all(&xml).unwrap();
        zip.finish().unwrap().into_inner()
    }

    fn check(zip: &[u8], thread: bool) -> Vec<String> {
        let limits = PackageLimits::default().with_hashing_thread(thread);
        let mut package = Package::with_limits(Cursor::new(zip), limits).unwrap();
        assert_eq!(package.two_threads(&package.file_order()), thread);
        let findings = package.check().unwrap();
        findings
            .iter()
            .filter(|f| f.rule == resourcesync_model::Rule::BitstreamFixity)
            .map(|f| f.to_string())
            .collect()
    }

    #[test]
    fn bitstreams_hashed_on_the_reading_thread_find_the_same() {
        let zip = corrupt();
        let one = check(&zip, false);
        assert_eq!(one.len(), 5, "{one:#?}");
        assert_eq!(check(&zip, true), one);
        let limits = PackageLimits::default();
        let error = Package::with_limits(Cursor::new(&zip[..]), limits)
            .unwrap()
            .verify()
            .unwrap_err();
        assert!(error.to_string().contains("b/2"), "{error}");
    }
}
