//! Reading a package: its manifest checked, its bitstreams verified as they are read, and
//! extraction that is all or nothing.

use std::collections::HashMap;
use std::fs;
use std::io::{self, Read, Seek, Write};
use std::path::{Path, PathBuf};

use resourcesync_model::{Change, Document, DocumentKind, Finding, Hashes};
use zip::{CompressionMethod, ZipArchive};

use crate::fixity::Fixity;
use crate::{MANIFEST_NAME, PackageError, safe_path};

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

/// What a reader found wrong with a bitstream's content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bitstream {path}: {what} is {actual}, the manifest says {expected}")]
pub struct FixityError {
    /// The bitstream's path in the package.
    pub path: String,
    /// `length`, `md5` or `sha-256`.
    pub what: String,
    /// What the manifest says.
    pub expected: String,
    /// What the bytes are.
    pub actual: String,
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
    zip: ZipArchive<R>,
    manifest: Document,
    findings: Vec<Finding>,
    listed: Vec<Listed>,
    unlisted: Vec<String>,
    limits: PackageLimits,
    inflated: u64,
}

impl<R: Read + Seek> Package<R> {
    /// Opens a package with default limits.
    pub fn open(reader: R) -> Result<Package<R>, PackageError> {
        Package::open_with_limits(reader, PackageLimits::default())
    }

    /// Opens a package with the given limits.
    pub fn open_with_limits(reader: R, limits: PackageLimits) -> Result<Package<R>, PackageError> {
        let mut zip = ZipArchive::new(reader)?;
        if zip.len() > limits.max_entries {
            return Err(PackageError::Invalid(format!(
                "the package has {} entries, more than {}",
                zip.len(),
                limits.max_entries
            )));
        }
        if zip.has_duplicate_names() {
            return Err(PackageError::Invalid(
                "the package has two entries of the same name".into(),
            ));
        }
        let names = (0..zip.len())
            .map(|i| match zip.name_for_index(i) {
                Some(Ok(name)) => Ok(name.into_owned()),
                Some(Err(e)) => Err(PackageError::Zip(e)),
                None => Err(PackageError::Invalid(format!("no entry {i}"))),
            })
            .collect::<Result<Vec<String>, PackageError>>()?;
        for (i, name) in names.iter().enumerate() {
            check_entry(&mut zip, i, name)?;
        }
        let Some(manifest_index) = names.iter().position(|n| n == MANIFEST_NAME) else {
            let near = names.iter().find(|n| {
                n.rsplit('/')
                    .next()
                    .is_some_and(|base| base.eq_ignore_ascii_case(MANIFEST_NAME))
            });
            return Err(PackageError::Invalid(match near {
                Some(n) => format!("no manifest.xml at the top level of the package (found {n:?})"),
                None => "no manifest.xml in the package".into(),
            }));
        };
        let xml = read_limited(&mut zip, manifest_index, limits.max_manifest_bytes)?;
        let (manifest, findings) = resourcesync_xml::read_document(&xml)
            .map_err(|e| PackageError::Invalid(format!("manifest.xml: {e}")))?;
        if !matches!(
            manifest.head.kind(),
            DocumentKind::ResourceDumpManifest | DocumentKind::ChangeDumpManifest
        ) {
            return Err(PackageError::Invalid(format!(
                "manifest.xml is a {}, not a Resource Dump or Change Dump Manifest",
                manifest.head.kind()
            )));
        }

        let by_name: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let mut listed = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
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
            // The standard's paths start with a slash; tolerate its absence (reported as
            // path-leading-slash), as the Python reference implementation leaves it out.
            let name = path
                .as_str()
                .strip_prefix('/')
                .unwrap_or(path.as_str())
                .to_owned();
            if let Some(first) = seen.insert(name.clone(), i) {
                return Err(PackageError::Invalid(format!(
                    "the manifest lists {path} twice (entries {} and {})",
                    first + 1,
                    i + 1
                )));
            }
            let Some(&zip_index) = by_name.get(name.as_str()) else {
                return Err(PackageError::Invalid(format!(
                    "the manifest lists {path} (entry {}), which the package does not have",
                    i + 1
                )));
            };
            listed.push(Listed {
                entry: i,
                zip_index,
                name,
            });
        }
        let unlisted = names
            .iter()
            .filter(|n| *n != MANIFEST_NAME && !n.ends_with('/') && !seen.contains_key(n.as_str()))
            .cloned()
            .collect();
        Ok(Package {
            zip,
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
    /// or sha-256, is an `InvalidData` error whose inner error is a [`FixityError`] naming
    /// the bitstream, the expected and the actual value; going over a limit is an error
    /// too.
    pub fn bitstream(&mut self, i: usize) -> Result<VerifiedReader<'_, R>, PackageError> {
        let listed = self
            .listed
            .get(i)
            .ok_or_else(|| PackageError::Invalid(format!("no bitstream {i}")))?
            .clone();
        let md = self.manifest.entries[listed.entry]
            .md
            .clone()
            .unwrap_or_default();
        let file = self.zip.by_index(listed.zip_index)?;
        let compressed = file.compressed_size();
        Ok(VerifiedReader {
            inner: file,
            path: listed.name,
            length: md.length,
            hashes: md.hash,
            fixity: Fixity::new(),
            compressed,
            limits: self.limits,
            inflated: &mut self.inflated,
            done: false,
        })
    }

    /// Reads every bitstream to its end, verifying length and every listed hash.
    pub fn verify(&mut self) -> Result<(), PackageError> {
        for i in 0..self.listed.len() {
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
        for i in 0..self.listed.len() {
            let entry = self.listed[i].entry as u64 + 1;
            let mut reader = self.bitstream(i)?;
            match io::copy(&mut reader, &mut io::sink()).map_err(unwrap_io) {
                Ok(_) => {}
                Err(PackageError::Fixity(f)) => findings.push(Finding {
                    message: f.to_string(),
                    ..Finding::new(Rule::BitstreamFixity, Some(entry))
                }),
                Err(e) => return Err(e),
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
            return Err(PackageError::Invalid(format!(
                "{} exists already",
                target.display()
            )));
        }
        let parent = target
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let temp = tempfile::Builder::new()
            .prefix(".resourcesync-extract-")
            .tempdir_in(parent)?;
        for i in 0..self.listed.len() {
            let relative = safe_path(&self.listed[i].name)
                .map_err(|e| PackageError::Name(self.listed[i].name.clone(), e))?;
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
            .map_err(|e| PackageError::Invalid(e.to_string()))?;
        fs::write(temp.path().join(MANIFEST_NAME), xml)?;
        let kept = temp.keep();
        fs::rename(&kept, target).inspect_err(|_| {
            let _ = fs::remove_dir_all(&kept);
        })?;
        Ok(target.to_path_buf())
    }
}

/// Refuses entries this crate will not read: encrypted ones, compression other than store
/// and deflate, links and special files, and unsafe names.
fn check_entry<R: Read + Seek>(
    zip: &mut ZipArchive<R>,
    i: usize,
    name: &str,
) -> Result<(), PackageError> {
    let file = zip.by_index_raw(i)?;
    if file.encrypted() {
        return Err(PackageError::Invalid(format!("{name:?} is encrypted")));
    }
    if !matches!(
        file.compression(),
        CompressionMethod::Stored | CompressionMethod::Deflated
    ) {
        return Err(PackageError::Invalid(format!(
            "{name:?} uses compression method {:?}: only store and deflate are read",
            file.compression()
        )));
    }
    if file.is_symlink() {
        return Err(PackageError::Invalid(format!(
            "{name:?} is a symbolic link"
        )));
    }
    if let Some(mode) = file.unix_mode() {
        let kind = mode & 0o170_000;
        if kind != 0 && kind != 0o100_000 && kind != 0o040_000 {
            return Err(PackageError::Invalid(format!(
                "{name:?} is a special file (mode {mode:o})"
            )));
        }
    }
    safe_path(name).map_err(|e| PackageError::Name(name.to_owned(), e))?;
    Ok(())
}

/// Reads one entry whole, refusing more than `max` decompressed bytes.
fn read_limited<R: Read + Seek>(
    zip: &mut ZipArchive<R>,
    i: usize,
    max: u64,
) -> Result<Vec<u8>, PackageError> {
    let file = zip.by_index(i)?;
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(PackageError::Invalid(format!(
            "manifest.xml is larger than {max} bytes"
        )));
    }
    Ok(bytes)
}

/// An IO error from a verified reader, back to the package error inside it.
fn unwrap_io(e: io::Error) -> PackageError {
    if e.get_ref().is_some_and(|inner| inner.is::<PackageError>()) {
        if let Some(inner) = e.into_inner() {
            if let Ok(package) = inner.downcast::<PackageError>() {
                return *package;
            }
        }
        return PackageError::Invalid("unreadable bitstream".into());
    }
    PackageError::Io(e)
}

/// A bitstream's content, verified as it is read. See [`Package::bitstream`].
pub struct VerifiedReader<'a, R: Read + Seek> {
    inner: zip::read::ZipFile<'a, R>,
    path: String,
    length: Option<u64>,
    hashes: Option<Hashes>,
    fixity: Fixity,
    compressed: u64,
    limits: PackageLimits,
    inflated: &'a mut u64,
    done: bool,
}

impl<R: Read + Seek> VerifiedReader<'_, R> {
    fn fail(&self, error: PackageError) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, error)
    }

    fn fixity_error(&self, what: &str, expected: String, actual: String) -> io::Error {
        self.fail(PackageError::Fixity(FixityError {
            path: self.path.clone(),
            what: what.to_owned(),
            expected,
            actual,
        }))
    }

    /// Checks what was read so far against the limits and the manifest's length.
    fn check_growth(&self) -> io::Result<()> {
        let read = self.fixity.length();
        if let Some(length) = self.length {
            if read > length {
                return Err(self.fixity_error(
                    "length",
                    length.to_string(),
                    format!("more than {length}"),
                ));
            }
        }
        if read > self.limits.max_entry_bytes {
            return Err(self.fail(PackageError::Invalid(format!(
                "bitstream {} inflates to more than {} bytes",
                self.path, self.limits.max_entry_bytes
            ))));
        }
        if *self.inflated > self.limits.max_total_bytes {
            return Err(self.fail(PackageError::Invalid(format!(
                "the package inflates to more than {} bytes",
                self.limits.max_total_bytes
            ))));
        }
        if read > 1 << 20 && read / self.compressed.max(1) > self.limits.max_ratio {
            return Err(self.fail(PackageError::Invalid(format!(
                "bitstream {} inflates more than {} times its compressed size",
                self.path, self.limits.max_ratio
            ))));
        }
        Ok(())
    }

    /// At the end: the length and every hash the manifest gives.
    fn check_end(&mut self) -> io::Result<()> {
        let digests = std::mem::take(&mut self.fixity).finish();
        if let Some(length) = self.length {
            if digests.length != length {
                return Err(self.fixity_error(
                    "length",
                    length.to_string(),
                    digests.length.to_string(),
                ));
            }
        }
        if let Some(hashes) = &self.hashes {
            if let Some((what, expected, actual)) = digests.mismatch(hashes) {
                return Err(self.fixity_error(&what, expected, actual));
            }
        }
        Ok(())
    }
}

impl<R: Read + Seek> Read for VerifiedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done {
            return Ok(0);
        }
        let n = self.inner.read(buf)?;
        if n == 0 {
            self.done = true;
            self.check_end()?;
            return Ok(0);
        }
        self.fixity.update(&buf[..n]);
        *self.inflated += n as u64;
        self.check_growth()?;
        Ok(n)
    }
}
