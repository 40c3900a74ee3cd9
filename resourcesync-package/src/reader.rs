//! Reading a package: its manifest checked, its bitstreams verified as they are read, and
//! extraction that is all or nothing.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use resourcesync_model::{Change, Document, DocumentKind, Finding, Hashes};

use crate::archive::{self, EntryReader, ZipEntry};
use crate::error::{BadPackage, LimitExceeded, Misuse, PathProblem};
use crate::fixity::Fixity;
use crate::{FixityError, MANIFEST_NAME, Mismatch, PackageError, safe_path};

/// Limits on what reading a package may cost. Decompressed bytes are counted as they are
/// inflated, never taken from what the archive declares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackageLimits {
    /// Decompressed bytes of one bitstream; 4 GiB by default.
    pub max_entry_bytes: u64,
    /// Decompressed bytes of all bitstreams together; 64 GiB by default.
    pub max_total_bytes: u64,
    /// Decompressed bytes per compressed byte of one entry, checked once it has inflated
    /// 1 MiB; 1,000 by default.
    pub max_ratio: u64,
    /// Entries in the ZIP; 100,000 by default (a manifest lists at most 50,000).
    pub max_entries: usize,
    /// Decompressed bytes of `manifest.xml`: the Sitemap protocol's 52,428,800.
    pub max_manifest_bytes: u64,
}

impl Default for PackageLimits {
    fn default() -> Self {
        PackageLimits {
            max_entry_bytes: 4 << 30,
            max_total_bytes: 64 << 30,
            max_ratio: 1_000,
            max_entries: 100_000,
            max_manifest_bytes: 52_428_800,
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
}

/// One bitstream the manifest lists: its manifest entry and where it is in the ZIP.
#[derive(Clone, Debug)]
struct Listed {
    entry: usize,
    zip_index: usize,
    name: String,
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
/// let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest).unwrap();
/// head.md.at = Some("2013-01-03T09:00:00Z".parse()?);
/// head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
/// writer.add(Bitstream::new("http://example.com/res1".parse()?, "/resources/res1".into()), &b"hello"[..])?;
/// let (zip, _) = writer.finish()?;
///
/// let mut package = Package::open(std::io::Cursor::new(zip))?;
/// assert_eq!(package.manifest().entries.len(), 1);
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
    listed: Vec<Listed>,
    unlisted: Vec<String>,
    limits: PackageLimits,
    inflated: u64,
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

impl<R: Read + Seek> Package<R> {
    /// Opens a package with default limits.
    pub fn open(reader: R) -> Result<Package<R>, PackageError> {
        Package::open_with_limits(reader, PackageLimits::default())
    }

    /// Opens a package with the given limits.
    pub fn open_with_limits(reader: R, limits: PackageLimits) -> Result<Package<R>, PackageError> {
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
        let (manifest, findings) =
            resourcesync_xml::read_document(&xml).map_err(PackageError::Manifest)?;
        let kind = manifest.head.kind();
        if !matches!(
            kind,
            DocumentKind::ResourceDumpManifest | DocumentKind::ChangeDumpManifest
        ) {
            return Err(BadPackage::NotAManifest { kind }.into());
        }
        let listed = listed(&manifest, &entries)?;
        let listed_names: HashSet<&str> = listed.iter().map(|l| l.name.as_str()).collect();
        let unlisted = entries
            .iter()
            .filter(|e| {
                e.name != MANIFEST_NAME && !e.is_dir && !listed_names.contains(e.name.as_str())
            })
            .map(|e| e.name.clone())
            .collect();
        Ok(Package {
            reader,
            pos,
            buf,
            entries,
            manifest,
            findings,
            listed,
            unlisted,
            limits,
            inflated: 0,
        })
    }

    /// The manifest.
    pub fn manifest(&self) -> &Document {
        &self.manifest
    }

    /// Rules of the standard the manifest breaks.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Files in the package that the manifest does not list.
    pub fn unlisted(&self) -> &[String] {
        &self.unlisted
    }

    /// How many bitstreams the manifest lists (deletions excluded).
    pub fn len(&self) -> usize {
        self.listed.len()
    }

    /// Whether the manifest lists no bitstream.
    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
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
            len: self.listed.len(),
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
    pub fn verify(&mut self) -> Result<(), PackageError> {
        for i in self.file_order() {
            let mut reader = self.bitstream(i)?;
            io::copy(&mut reader, &mut io::sink()).map_err(unwrap_io)?;
        }
        Ok(())
    }

    /// Checks the whole package against the standard: the manifest's findings, a
    /// [`Rule::UnlistedFile`](resourcesync_model::Rule::UnlistedFile) warning per file the
    /// manifest does not describe, and a
    /// [`Rule::BitstreamFixity`](resourcesync_model::Rule::BitstreamFixity) error per
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
        let mut fixity = Vec::new();
        for i in self.file_order() {
            let entry = self.listed[i].entry as u64 + 1;
            let mut reader = self.bitstream(i)?;
            match io::copy(&mut reader, &mut io::sink()).map_err(unwrap_io) {
                Ok(_) => {}
                Err(PackageError::Fixity(f)) => fixity.push(Finding {
                    message: f.to_string(),
                    ..Finding::new(Rule::BitstreamFixity, Some(entry))
                }),
                Err(e) => return Err(e),
            }
        }
        fixity.sort_by_key(|f| f.entry);
        findings.extend(fixity);
        // The entries not read above: their local headers must agree too.
        let read: HashSet<usize> = self.listed.iter().map(|l| l.zip_index).collect();
        for (k, entry) in self.entries.iter().enumerate() {
            if entry.name != MANIFEST_NAME && !read.contains(&k) {
                archive::open_entry(&mut self.reader, &mut self.pos, &mut self.buf, entry)?;
            }
        }
        Ok(findings)
    }

    /// Extracts every bitstream to its path below `target`, with `manifest.xml`, all or
    /// nothing: into a temporary directory beside `target`, renamed to `target` only when
    /// every bitstream has been written and verified. `target` must not exist. On error
    /// nothing is left behind.
    pub fn extract(&mut self, target: &Path) -> Result<PathBuf, PackageError> {
        if target.exists() {
            return Err(Misuse::TargetExists(target.to_path_buf()).into());
        }
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let temp = tempfile::Builder::new()
            .prefix(".resourcesync-extract-")
            .tempdir_in(parent)?;
        for i in self.file_order() {
            let relative = safe_path(&self.listed[i].name).map_err(BadPackage::UnsafeName)?;
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
        let xml = resourcesync_xml::write_document(Vec::new(), &self.manifest)
            .map_err(PackageError::ManifestWrite)?;
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
fn listed(manifest: &Document, entries: &[ZipEntry]) -> Result<Vec<Listed>, PackageError> {
    let by_name: HashMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), i))
        .collect();
    let directories = archive::directories(entries);
    let mut listed = Vec::new();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, entry) in manifest.entries.iter().enumerate() {
        let md = entry.md.as_ref();
        let Some(path) = md.and_then(|md| md.path.as_ref()) else {
            // A deletion in a Change Dump Manifest has no bitstream; a missing path
            // anywhere else is a finding of the manifest's (path-mandatory).
            continue;
        };
        if md.and_then(|md| md.change) == Some(Change::Deleted) {
            continue;
        }
        let path = path.as_str();
        // The standard's paths start with a slash; tolerate its absence (reported as
        // path-leading-slash), as the Python reference implementation leaves it out.
        let name = path.strip_prefix('/').unwrap_or(path);
        let problem = if path.starts_with("//") {
            Some(PathProblem::Network)
        } else if name.is_empty() {
            Some(PathProblem::Root)
        } else if name.ends_with('/') {
            Some(PathProblem::Directory)
        } else if let Err(e) = crate::name::check_name(name) {
            Some(PathProblem::Unsafe(e))
        } else if name.eq_ignore_ascii_case(MANIFEST_NAME) {
            Some(PathProblem::Manifest)
        } else if let Some(&first) = seen.get(name) {
            Some(PathProblem::Twice { first: first + 1 })
        } else if directories.contains(name) {
            Some(PathProblem::NamesDirectory)
        } else if !by_name.contains_key(name) {
            Some(PathProblem::Missing)
        } else {
            None
        };
        if let Some(problem) = problem {
            return Err(BadPackage::ManifestPath {
                entry: i + 1,
                path: path.to_owned(),
                problem,
            }
            .into());
        }
        seen.insert(name, i);
        listed.push(Listed {
            entry: i,
            zip_index: by_name[name],
            name: name.to_owned(),
        });
    }
    Ok(listed)
}

/// An IO error from a verified reader, back to the package error inside it.
fn unwrap_io(e: io::Error) -> PackageError {
    if e.get_ref().is_some_and(|inner| inner.is::<PackageError>()) {
        if let Some(Ok(package)) = e.into_inner().map(|inner| inner.downcast::<PackageError>()) {
            return *package;
        }
        // is::<PackageError>() held, so the downcast cannot fail; the error is gone.
        return PackageError::Io(io::Error::from(io::ErrorKind::InvalidData));
    }
    PackageError::Io(e)
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
    fn fixity_error(&self, mismatch: Mismatch) -> io::Error {
        archive::invalid(FixityError {
            path: self.inner.name.clone(),
            mismatch,
        })
    }

    /// Checks what was read so far against the limits and the manifest's length.
    fn check_growth(&self) -> io::Result<()> {
        let read = self.fixity.length();
        if let Some(expected) = self.length {
            if read > expected {
                return Err(self.fixity_error(Mismatch::Longer { expected }));
            }
        }
        let path = || self.inner.name.clone();
        if read > self.limits.max_entry_bytes {
            return Err(archive::invalid(LimitExceeded::EntryBytes {
                path: path(),
                max: self.limits.max_entry_bytes,
            }));
        }
        if *self.inflated > self.limits.max_total_bytes {
            return Err(archive::invalid(LimitExceeded::TotalBytes {
                max: self.limits.max_total_bytes,
            }));
        }
        if read > 1 << 20 && read / self.inner.compressed.max(1) > self.limits.max_ratio {
            return Err(archive::invalid(LimitExceeded::Ratio {
                path: path(),
                max: self.limits.max_ratio,
            }));
        }
        Ok(())
    }

    /// At the end: the length and every hash the manifest gives.
    fn check_end(&mut self) -> io::Result<()> {
        let digests = std::mem::take(&mut self.fixity).finish();
        if let Some(expected) = self.length {
            if digests.length != expected {
                return Err(self.fixity_error(Mismatch::Length {
                    expected,
                    actual: digests.length,
                }));
            }
        }
        if let Some(mismatch) = self.hashes.as_ref().and_then(|h| digests.mismatch(h)) {
            return Err(self.fixity_error(mismatch));
        }
        Ok(())
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
