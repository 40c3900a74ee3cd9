//! Writing a package: bitstreams streamed into a ZIP while their fixity is computed, and
//! the manifest that describes them.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use resourcesync_model::{
    BitstreamPath, Change, Checker, DocumentHead, DocumentKind, Entry, Finding, MediaType,
    Severity, Uri, W3cDateTime,
};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

use crate::atomic::{AtomicFile, DirectorySync};
use crate::hashing::{Hashing, Msg};
use crate::{Collision, MANIFEST_NAME, Misuse, PackageError};
use resourcesync_model::{Digest, Digests, Fixity};

/// How a bitstream is stored in the ZIP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Stored for media types that are compressed already (images, audio, video, archives,
    /// PDF), deflated otherwise.
    #[default]
    Auto,
    /// Stored as it is.
    Store,
    /// Deflated.
    Deflate,
}

impl Compression {
    fn method(self, media_type: Option<&MediaType>) -> CompressionMethod {
        match self {
            Compression::Store => CompressionMethod::Stored,
            Compression::Deflate => CompressionMethod::Deflated,
            Compression::Auto => {
                let essence = media_type.map(|t| t.essence().to_ascii_lowercase());
                let compressed = essence.as_deref().is_some_and(|t| {
                    t.starts_with("image/") && t != "image/svg+xml" && t != "image/bmp"
                        || t.starts_with("audio/")
                        || t.starts_with("video/")
                        || matches!(
                            t,
                            "application/zip"
                                | "application/gzip"
                                | "application/x-gzip"
                                | "application/x-bzip2"
                                | "application/x-xz"
                                | "application/zstd"
                                | "application/x-7z-compressed"
                                | "application/pdf"
                                | "application/epub+zip"
                        )
                });
                if compressed {
                    CompressionMethod::Stored
                } else {
                    CompressionMethod::Deflated
                }
            }
        }
    }
}

/// Options of a package writer: [`default`](Default::default), then the builder methods.
///
/// Output is always reproducible: every ZIP entry carries the ZIP format's earliest
/// timestamp (1980-01-01 00:00) and mode 0644, since the library never reads the clock
/// and the manifest, not the ZIP, carries the resources' times. The same bitstreams in the
/// same order give the same bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackageOptions {
    /// How bitstreams are stored, unless one says otherwise.
    pub compression: Compression,
    /// Whether a second thread hashes the package while it is written (the default); see
    /// the crate's documentation. Either way the bytes and digests are the same.
    pub hashing_thread: bool,
    /// Whether a manifest (or a dump document) that would break a rule of severity
    /// [`Severity::Error`] is refused before it is written (the default). Off, it is
    /// written anyway and the errors come back with the warnings, in
    /// [`PackageInfo::findings`]. Warnings never refuse.
    pub refuse_errors: bool,
}

impl Default for PackageOptions {
    fn default() -> Self {
        PackageOptions {
            compression: Compression::default(),
            hashing_thread: true,
            refuse_errors: true,
        }
    }
}

impl PackageOptions {
    /// Options with another default compression.
    pub fn compression(mut self, compression: Compression) -> PackageOptions {
        self.compression = compression;
        self
    }

    /// Options with or without the hashing thread.
    pub fn hashing_thread(mut self, thread: bool) -> PackageOptions {
        self.hashing_thread = thread;
        self
    }

    /// Options that refuse, or write anyway, what breaks a rule of severity
    /// [`Severity::Error`]; see [`refuse_errors`](PackageOptions::refuse_errors).
    pub fn refuse_errors(mut self, refuse: bool) -> PackageOptions {
        self.refuse_errors = refuse;
        self
    }
}

/// One bitstream to add: the resource it belongs to and what the manifest says of it.
/// Length and hashes are computed while it is written and need not be given.
///
/// Built with [`Bitstream::new`] and `with_` methods, like the model's entries;
/// `#[non_exhaustive]`, its fields public to read and to set.
///
/// ```
/// use resourcesync_model::Change;
/// use resourcesync_package::{Bitstream, Compression};
///
/// let b = Bitstream::new("http://example.com/res1".parse()?, "/resources/res1".into())
///     .with_media_type("text/html".parse()?)
///     .with_change(Change::Updated)
///     .with_datetime("2013-01-03T09:00:00Z".parse()?)
///     .with_compression(Compression::Store);
/// assert_eq!(b.change, Some(Change::Updated));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Bitstream {
    /// The URI the Source associates with the bitstream (`<loc>`).
    pub loc: Uri,
    /// Where it goes in the package, with the leading slash the standard requires.
    pub path: BitstreamPath,
    /// Its media type (`type`), recommended by the standard.
    pub media_type: Option<MediaType>,
    /// `<lastmod>` of the resource.
    pub lastmod: Option<W3cDateTime>,
    /// In a Change Dump: the change (created or updated; deletions have no bitstream).
    pub change: Option<Change>,
    /// In a Change Dump: when the change happened.
    pub datetime: Option<W3cDateTime>,
    /// How to store it, overriding the writer's default.
    pub compression: Option<Compression>,
    /// Links and anything else for the manifest entry; its `rs:md` is replaced.
    pub entry: Option<Entry>,
}

impl Bitstream {
    /// A bitstream with only its URI and path.
    pub fn new(loc: Uri, path: BitstreamPath) -> Bitstream {
        Bitstream {
            loc,
            path,
            media_type: None,
            lastmod: None,
            change: None,
            datetime: None,
            compression: None,
            entry: None,
        }
    }

    /// Sets the media type (`type`).
    #[must_use]
    pub fn with_media_type(mut self, media_type: MediaType) -> Bitstream {
        self.media_type = Some(media_type);
        self
    }

    /// Sets `<lastmod>`.
    #[must_use]
    pub fn with_lastmod(mut self, lastmod: W3cDateTime) -> Bitstream {
        self.lastmod = Some(lastmod);
        self
    }

    /// Sets the change (in a Change Dump).
    #[must_use]
    pub fn with_change(mut self, change: Change) -> Bitstream {
        self.change = Some(change);
        self
    }

    /// Sets when the change happened (in a Change Dump).
    #[must_use]
    pub fn with_datetime(mut self, datetime: W3cDateTime) -> Bitstream {
        self.datetime = Some(datetime);
        self
    }

    /// Sets how to store it, overriding the writer's default.
    #[must_use]
    pub fn with_compression(mut self, compression: Compression) -> Bitstream {
        self.compression = Some(compression);
        self
    }

    /// Sets the manifest entry's links and extensions (its `rs:md` is replaced).
    #[must_use]
    pub fn with_entry(mut self, entry: Entry) -> Bitstream {
        self.entry = Some(entry);
        self
    }

    /// The manifest entry of this bitstream, as it will be written but for its length and
    /// hashes, which are placeholders until the content is read (the checker looks at their
    /// presence and algorithms, never their values); and its compression.
    /// The path comes back beside the entry, which holds it too.
    pub(crate) fn into_entry(self) -> (Entry, BitstreamPath, Option<Compression>) {
        let mut entry = self.entry.unwrap_or_else(|| Entry::new(self.loc.clone()));
        entry.loc = self.loc;
        entry.lastmod = self.lastmod.or(entry.lastmod);
        let md = entry.md_mut();
        (md.change, md.datetime) = (self.change, self.datetime);
        (md.length, md.path) = (Some(0), Some(self.path.clone()));
        // Zeros, not the digests of nothing: computing those would cost two hashes a
        // bitstream for a value that is replaced.
        let placeholder = Digests {
            length: 0,
            md5: Digest([0; 16]),
            sha256: Digest([0; 32]),
        };
        md.hash = Some(placeholder.hashes());
        md.media_type = self.media_type;
        (entry, self.path, self.compression)
    }
}

/// Reads until `buf` is full or the reader ends; returns how much was read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> Result<usize, PackageError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(PackageError::Io(e)),
        }
    }
    Ok(filled)
}

/// The package's own fixity, for the Resource Dump or Change Dump entry that lists it, and
/// what was written.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PackageInfo {
    /// Length and digests of the whole ZIP file.
    pub digests: Digests,
    /// The manifest as written into the package.
    pub manifest: resourcesync_model::Document,
    /// What the model's [`Checker`] found in the manifest, as a reader of the package would
    /// find it: warnings, and errors only when
    /// [`refuse_errors`](PackageOptions::refuse_errors) is off.
    pub findings: Vec<Finding>,
}

/// Writes a Resource Dump or Change Dump package to any `Write`: each bitstream is streamed
/// into the ZIP while its length, md5 and sha-256 are computed in the same pass, and
/// [`finish`](PackageWriter::finish) adds `manifest.xml` at the top level and returns the
/// package's own length and hashes.
///
/// The writer checks what a reader checks: the model's [`Checker`] sees the manifest's head
/// when the writer starts and each entry as it is added, so that by default
/// ([`PackageOptions::refuse_errors`]) an entry that would break a rule of severity
/// [`Severity::Error`] (a change out of order, a deletion in a Resource Dump
/// Manifest, an unsafe URI, …) is refused with [`Misuse::BreaksRule`] before a byte of it is
/// written, and the package is left as it was. The findings come back in
/// [`PackageInfo::findings`].
///
/// The ZIP is written as a stream (sizes in data descriptors), so the sink needs no `Seek`
/// and the package's digests are those of exactly the bytes written. Entries are marked
/// ZIP64 when a bitstream may pass 4 GiB. Nothing fallible happens on `Drop`; for a file,
/// [`PackageWriter::create`] writes beside the target and moves it into place only in
/// [`finish_file`](PackageWriter::finish_file), so a failed or dropped writer leaves nothing
/// behind.
///
/// ```
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
/// use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};
///
/// let head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
/// let mut b = Bitstream::new("http://example.com/res1".parse()?, "/resources/res1".into());
/// b.media_type = Some("text/html".parse()?);
/// assert_eq!(writer.add(b, &b"<html></html>"[..])?, 13);
/// let (zip, info) = writer.finish()?;
/// assert_eq!(info.digests.length, zip.len() as u64);
/// assert!(info.findings.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "a package is complete only once `finish` has written its manifest"]
pub struct PackageWriter<W: Write> {
    zip: ZipWriter<zip::write::StreamWriter<Hashing<W>>>,
    manifest: resourcesync_model::Document,
    /// The names used, folded as a case-insensitive file system would, to the name given.
    paths: HashMap<String, String>,
    /// The directories those names imply, folded, to the first name under each.
    directories: HashMap<String, String>,
    options: PackageOptions,
    buf: Vec<u8>,
    /// The model's checker, which has seen the head and every entry accepted.
    checker: Checker,
    /// What it found: the head's findings first (`head_findings` of them), then the
    /// entries'.
    findings: Vec<Finding>,
    head_findings: usize,
    /// Bitstreams added: the manifest's entries but the deletions.
    bitstreams: usize,
    /// Messages to the hashing thread, and the bytes written so far: for the stored
    /// bitstreams whose sha-256 that thread computes.
    messages: Option<mpsc::Sender<Msg>>,
    written: Arc<AtomicU64>,
    /// Manifest entries of bitstreams waiting for the thread's sha-256: (entry, md5).
    pending: Vec<(usize, [u8; 16])>,
    /// Bytes of stored bitstreams whose sha-256 was computed here, and there: the next is
    /// handed over while there is less there.
    sha_here: u64,
    sha_there: u64,
}

impl<W: Write> std::fmt::Debug for PackageWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PackageWriter")
            .field("kind", &self.manifest.head.kind())
            .field("manifest_entries", &self.manifest.entries.len())
            .field("bitstreams", &self.bitstreams)
            .field("findings", &self.findings.len())
            .field("options", &self.options)
            .field("hashing_thread", &self.messages.is_some())
            .finish_non_exhaustive()
    }
}

/// The options of every ZIP entry: fixed time and mode, so the output is reproducible.
fn file_options(method: CompressionMethod, large: bool) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(method)
        .last_modified_time(zip::DateTime::DEFAULT)
        .unix_permissions(0o644)
        .large_file(large)
}

/// The findings of severity error among `findings`, if any and if they refuse; else `None`.
pub(crate) fn refused(findings: &[Finding], options: &PackageOptions) -> Option<Vec<Finding>> {
    if !options.refuse_errors {
        return None;
    }
    let errors: Vec<Finding> = findings
        .iter()
        .filter(|f| f.severity() == Severity::Error)
        .cloned()
        .collect();
    (!errors.is_empty()).then_some(errors)
}

/// Runs `checker` on the document's next entry, adding what it finds to `findings`. An
/// entry that breaks a rule of severity error, when that refuses, leaves no trace: its
/// findings are dropped and the checker forgets it (its number, its time, its `<loc>`;
/// `Checker::check_entry_unless`), so that the caller can go on.
pub(crate) fn check_next_entry(
    checker: &mut Checker,
    document: &resourcesync_model::Document,
    entry: &Entry,
    findings: &mut Vec<Finding>,
    options: &PackageOptions,
) -> Result<(), PackageError> {
    let start = findings.len();
    if checker.check_entry_unless(entry, findings, |new| refused(new, options).is_some()) {
        return Ok(());
    }
    let errors = refused(&findings[start..], options).unwrap_or_default();
    findings.truncate(start);
    Err(Misuse::BreaksRule {
        document: document.head.kind(),
        loc: Some(entry.loc.clone()),
        errors,
    }
    .into())
}

/// A checker for a document with this head, and the head's findings; refused when the
/// head breaks a rule of severity error and that refuses.
pub(crate) fn check_head(
    head: &DocumentHead,
    options: &PackageOptions,
) -> Result<(Checker, Vec<Finding>), PackageError> {
    let mut findings = Vec::new();
    let checker = Checker::new(head, &mut findings);
    match refused(&findings, options) {
        Some(errors) => Err(Misuse::BreaksRule {
            document: head.kind(),
            loc: None,
            errors,
        }
        .into()),
        None => Ok((checker, findings)),
    }
}

/// The manifest entry of a deletion.
pub(crate) fn deleted_entry(loc: Uri, datetime: Option<W3cDateTime>) -> Entry {
    let mut entry = Entry::new(loc).with_change(Change::Deleted);
    entry.md_mut().datetime = datetime;
    entry
}

/// Checks one entry of a document of `head`'s kind on a checker of its own: the entry as
/// the first of that document. The dump builder asks this before it starts a package for
/// the entry, so that an entry refused leaves no empty package behind.
pub(crate) fn check_first_entry(
    head: &DocumentHead,
    entry: &Entry,
    options: &PackageOptions,
) -> Result<(), PackageError> {
    let mut findings = Vec::new();
    let mut checker = Checker::new(head, &mut findings);
    findings.clear();
    checker.check_entry(entry, &mut findings);
    match refused(&findings, options) {
        Some(errors) => Err(Misuse::BreaksRule {
            document: head.kind(),
            loc: Some(entry.loc.clone()),
            errors,
        }
        .into()),
        None => Ok(()),
    }
}

impl<W: Write> PackageWriter<W> {
    /// Starts a package whose manifest has this head: a Resource Dump Manifest (with
    /// `at`) or a Change Dump Manifest (with `from`), and the `up` link. A head that breaks
    /// a rule of severity error (no `up` link, no `at` or `from`, …) is refused with
    /// [`Misuse::BreaksRule`] unless [`PackageOptions::refuse_errors`] is off.
    pub fn new(
        out: W,
        head: DocumentHead,
        options: PackageOptions,
    ) -> Result<PackageWriter<W>, PackageError> {
        if !matches!(
            head.kind(),
            DocumentKind::ResourceDumpManifest | DocumentKind::ChangeDumpManifest
        ) {
            return Err(Misuse::ManifestKind { kind: head.kind() }.into());
        }
        let (checker, findings) = check_head(&head, &options)?;
        let sink = Hashing::new(out, options.hashing_thread);
        let messages = sink.messages();
        let written = sink.written.clone();
        Ok(PackageWriter {
            messages,
            written,
            pending: Vec::new(),
            sha_here: 0,
            sha_there: 0,
            zip: ZipWriter::new_stream(sink),
            manifest: resourcesync_model::Document::new(head),
            paths: HashMap::new(),
            directories: HashMap::new(),
            options,
            buf: vec![0; 64 * 1024],
            checker,
            head_findings: findings.len(),
            findings,
            bitstreams: 0,
        })
    }

    /// Adds a bitstream, streaming `content` into the package, and returns its length. Its
    /// manifest entry, with length and hashes filled in, is in [`PackageInfo::manifest`].
    ///
    /// Fails for a path without the leading slash, one that is not a safe relative path,
    /// one used before, or `/manifest.xml`; and, unless
    /// [`PackageOptions::refuse_errors`] is off, for an entry that breaks a rule of
    /// severity error ([`Misuse::BreaksRule`]), such as a change dated before an earlier
    /// bitstream's or deletion's in a Change Dump Manifest (section 13.2). A bitstream
    /// refused for its path or a rule leaves the package as it was. An IO error while the
    /// content is streamed leaves the package unusable: drop the writer.
    pub fn add(&mut self, bitstream: Bitstream, content: impl Read) -> Result<u64, PackageError> {
        let (entry, path, compression) = bitstream.into_entry();
        self.add_entry(entry, &path, compression, content)
    }

    /// [`add`](Self::add) of a bitstream's manifest entry, made by
    /// [`Bitstream::into_entry`].
    pub(crate) fn add_entry(
        &mut self,
        mut entry: Entry,
        path: &BitstreamPath,
        compression: Option<Compression>,
        mut content: impl Read,
    ) -> Result<u64, PackageError> {
        let name = self.claimable(path)?;
        let media_type = entry.md.as_ref().and_then(|md| md.media_type.as_ref());
        let method = compression
            .unwrap_or(self.options.compression)
            .method(media_type);
        self.check(&entry)?;
        // Read the first buffer before the entry starts: a bitstream that ends within it
        // (most do) has a known small size and needs no ZIP64 fields; one that does not
        // may pass 4 GiB and is marked ZIP64-capable rather than fail there.
        let mut filled = fill(&mut content, &mut self.buf)?;
        let whole = filled < self.buf.len();
        let options = file_options(method, !whole);
        self.zip.start_file(name.as_str(), options)?;
        // A stored bitstream's bytes stand verbatim in the package, so the hashing thread
        // can take its sha-256 from there; about half of them are handed over, by bytes,
        // to balance the threads (that thread hashes the whole package besides).
        let offload = match (&self.messages, method) {
            (Some(messages), CompressionMethod::Stored) if self.sha_there <= self.sha_here => {
                let start = self.written.load(Ordering::Relaxed);
                messages
                    .send(Msg::Start(start))
                    .is_ok()
                    .then(|| messages.clone())
            }
            _ => None,
        };
        let mut fixity = Fixity::new();
        let mut md5 = <md5::Md5 as md5::Digest>::new();
        let mut length = 0u64;
        while filled > 0 {
            if offload.is_some() {
                md5::Digest::update(&mut md5, &self.buf[..filled]);
                length += filled as u64;
            } else {
                fixity.update(&self.buf[..filled]);
            }
            self.zip.write_all(&self.buf[..filled])?;
            filled = if whole {
                0
            } else {
                fill(&mut content, &mut self.buf)?
            };
        }
        let (hash, length) = match &offload {
            Some(messages) => {
                let end = self.written.load(Ordering::Relaxed);
                if messages.send(Msg::End(end)).is_err() {
                    return Err(PackageError::Io(io::Error::other(
                        "the package hashing thread failed",
                    )));
                }
                self.pending.push((
                    self.manifest.entries.len(),
                    md5::Digest::finalize(md5).into(),
                ));
                self.sha_there += length;
                (None, length)
            }
            None => {
                let digests = fixity.finish();
                if method == CompressionMethod::Stored {
                    self.sha_here += digests.length;
                }
                (Some(digests.hashes()), digests.length)
            }
        };
        let md = entry.md_mut();
        (md.length, md.hash) = (Some(length), hash);
        self.claim(name);
        self.manifest.entries.push(entry);
        self.bitstreams += 1;
        Ok(length)
    }

    /// Runs the checker on the next entry; see [`check_next_entry`].
    fn check(&mut self, entry: &Entry) -> Result<(), PackageError> {
        check_next_entry(
            &mut self.checker,
            &self.manifest,
            entry,
            &mut self.findings,
            &self.options,
        )
    }

    /// Fills in the sha-256 the hashing thread computed.
    fn collect_hashes(&mut self) -> Result<(), PackageError> {
        // Hand over the bytes gathered so far. This flushes the last bitstream's deflate
        // stream too (an empty block), so it is done with or without the hashing thread
        // and whether or not it has work: the bytes must not depend on either.
        self.zip.flush()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        let failed = || PackageError::Io(io::Error::other("the package hashing thread failed"));
        // Wait for every range to be hashed.
        let (reply, answer) = mpsc::channel();
        let messages = self.messages.as_ref().ok_or_else(failed)?;
        messages.send(Msg::Sync(reply)).map_err(|_| failed())?;
        let sha256s = answer.recv().map_err(|_| failed())?;
        if sha256s.len() != self.pending.len() {
            return Err(failed());
        }
        for ((entry, md5), sha256) in std::mem::take(&mut self.pending).into_iter().zip(sha256s) {
            let digests = Digests {
                length: 0,
                md5: Digest(md5),
                sha256: Digest(sha256),
            };
            if let Some(md) = self.manifest.entries[entry].md.as_mut() {
                md.hash = Some(digests.hashes());
            }
        }
        Ok(())
    }

    /// Adds a manifest entry without a bitstream: a deletion, which belongs in a Change Dump
    /// Manifest (in a Resource Dump Manifest it breaks `resourcedump-manifest-deleted` and is
    /// refused, unless [`PackageOptions::refuse_errors`] is off). Returns the entry as
    /// written. A refused deletion leaves the package as it was.
    pub fn add_deleted(
        &mut self,
        loc: Uri,
        datetime: Option<W3cDateTime>,
    ) -> Result<Entry, PackageError> {
        self.add_deleted_entry(deleted_entry(loc, datetime))
    }

    /// [`add_deleted`](Self::add_deleted) of the entry made by `deleted_entry`.
    pub(crate) fn add_deleted_entry(&mut self, entry: Entry) -> Result<Entry, PackageError> {
        self.check(&entry)?;
        self.manifest.entries.push(entry.clone());
        Ok(entry)
    }

    /// Checks a path and returns its ZIP name, without reserving it: a path the reader
    /// would refuse, as unsafe or as colliding with an earlier one on some file system, is
    /// refused here. [`claim`](Self::claim) reserves it once the bitstream is taken.
    fn claimable(&self, path: &BitstreamPath) -> Result<String, PackageError> {
        let Some(name) = path.as_str().strip_prefix('/') else {
            return Err(Misuse::PathWithoutSlash {
                path: path.to_string(),
            }
            .into());
        };
        let misuse = |m: Misuse| Err(PackageError::Misuse(m));
        if let Err(reason) = crate::name::check_name(name) {
            return misuse(Misuse::UnsafePath {
                path: path.to_string(),
                reason,
            });
        }
        if name.eq_ignore_ascii_case(MANIFEST_NAME) {
            return misuse(Misuse::ManifestPath {
                path: path.to_string(),
            });
        }
        if name.ends_with('/') {
            return misuse(Misuse::UnsafePath {
                path: path.to_string(),
                reason: crate::NameError::Empty,
            });
        }
        let folded = crate::archive::fold(name);
        let collision = |earlier: &str, collision| {
            misuse(Misuse::PathCollision {
                path: path.to_string(),
                earlier: format!("/{earlier}"),
                collision,
            })
        };
        if let Some(earlier) = self.paths.get(&*folded) {
            if earlier == name {
                return misuse(Misuse::PathUsedTwice {
                    path: path.to_string(),
                });
            }
            let kind = if crate::archive::nfc(earlier) == crate::archive::nfc(name) {
                Collision::Normalization
            } else {
                Collision::Case
            };
            return collision(earlier, kind);
        }
        if let Some(earlier) = self.directories.get(&*folded) {
            return collision(earlier, Collision::FileAsDirectory);
        }
        for (at, _) in name.match_indices('/') {
            if let Some(earlier) = self.paths.get(&*crate::archive::fold(&name[..at])) {
                return collision(earlier, Collision::FileAsDirectory);
            }
        }
        Ok(name.to_owned())
    }

    /// Reserves a name that [`claimable`](Self::claimable) allowed.
    fn claim(&mut self, name: String) {
        for (at, _) in name.match_indices('/') {
            self.directories
                .entry(crate::archive::fold(&name[..at]).into_owned())
                .or_insert_with(|| name.clone());
        }
        self.paths
            .insert(crate::archive::fold(&name).into_owned(), name);
    }

    /// Sets the `until` of a Change Dump Manifest before it is written (the dump builder
    /// knows it only when the next package starts) and checks the head again, which is
    /// refused as [`new`](Self::new) refuses it.
    pub(crate) fn set_until(&mut self, until: Option<W3cDateTime>) -> Result<(), PackageError> {
        self.manifest.head.md.until = until;
        let mut head = Vec::new();
        Checker::new(&self.manifest.head, &mut head);
        if let Some(errors) = refused(&head, &self.options) {
            return Err(Misuse::BreaksRule {
                document: self.manifest.head.kind(),
                loc: None,
                errors,
            }
            .into());
        }
        let entries = self.findings.split_off(self.head_findings);
        self.head_findings = head.len();
        self.findings = head;
        self.findings.extend(entries);
        Ok(())
    }

    /// Entries of the manifest so far: bitstreams and deletions. A manifest holds at most
    /// 50,000 ([`resourcesync_model::MAX_ENTRIES`]).
    pub fn manifest_entries(&self) -> usize {
        self.manifest.entries.len()
    }

    /// Bitstreams added so far: the entries of the manifest but the deletions, which have
    /// no bitstream. Each is a file in the package.
    pub fn bitstream_count(&self) -> usize {
        self.bitstreams
    }

    /// Writes `manifest.xml`, closes the ZIP, and returns the sink with the package's own
    /// length and hashes, the manifest and its findings.
    pub fn finish(mut self) -> Result<(W, PackageInfo), PackageError> {
        self.collect_hashes()?;
        let start = self.findings.len();
        self.checker.finish(&mut self.findings);
        if let Some(errors) = refused(&self.findings[start..], &self.options) {
            return Err(Misuse::BreaksRule {
                document: self.manifest.head.kind(),
                loc: None,
                errors,
            }
            .into());
        }
        // The hashing thread finishes when every sender is gone.
        self.messages = None;
        // Written and reported, never refused, as before; the package writer keeps a Change
        // Dump Manifest's order itself and does not report the other findings (yet).
        let xml = resourcesync_xml::write_document(Vec::new(), &self.manifest)
            .map_err(PackageError::ManifestWrite)?
            .output;
        // Deflate's fastest level: a manifest is repetitive text and shrinks well anyway.
        let options = file_options(CompressionMethod::Deflated, false).compression_level(Some(1));
        self.zip.start_file(MANIFEST_NAME, options)?;
        self.zip.write_all(&xml)?;
        let stream = self.zip.finish()?;
        let (inner, digests) = stream.into_inner().finish()?;
        Ok((
            inner,
            PackageInfo {
                digests,
                manifest: self.manifest,
                findings: self.findings,
            },
        ))
    }
}

/// A package file being written: a temporary file beside its target, which
/// [`PackageWriter::finish_file`] moves into place, and which is removed if the writer is
/// dropped or fails. See [`PackageWriter::create`].
#[derive(Debug)]
pub struct PackageFile {
    temp: io::BufWriter<AtomicFile>,
}

impl Write for PackageFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.temp.write(buf)
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.temp.write_all(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.temp.flush()
    }
}

impl PackageFile {
    /// A temporary file in `target`'s directory, to become `target`.
    pub(crate) fn create(target: &Path) -> Result<PackageFile, PackageError> {
        let temp = AtomicFile::beside(target).map_err(|source| PackageError::File {
            path: target.to_path_buf(),
            source: Box::new(PackageError::Io(source)),
        })?;
        Ok(PackageFile {
            temp: io::BufWriter::new(temp),
        })
    }

    /// A package file to become `target`, written meanwhile to a temporary file beside it
    /// that is removed if this is dropped, and moved into place by
    /// [`persist`](Self::persist): what a [`DumpStore`](crate::DumpStore) over a directory
    /// writes a package into. Makes `target`'s directory if need be, and is refused at
    /// once if `target` exists ([`Misuse::TargetExists`]), before anything is written: the
    /// rename into place would refuse it anyway, after the package was written.
    pub fn create_new(target: &Path) -> Result<PackageFile, PackageError> {
        if target.exists() {
            return Err(Misuse::TargetExists(target.to_path_buf()).into());
        }
        if let Some(dir) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| PackageError::File {
                path: target.to_path_buf(),
                source: Box::new(PackageError::Io(e)),
            })?;
        }
        PackageFile::create(target)
    }

    /// The path the package goes to.
    pub fn target(&self) -> &Path {
        self.temp.get_ref().target()
    }

    /// Flushes the file to disk and moves it to its target, which must not exist
    /// (the rename does not overwrite, and fails with [`Misuse::TargetExists`] if it
    /// does), then syncs the target's directory, so that the package is there after a
    /// crash. On error the temporary file is removed. Returns the target.
    pub fn persist(self) -> Result<PathBuf, PackageError> {
        let target = self.target().to_path_buf();
        let in_file = |source: PackageError| PackageError::File {
            path: target.clone(),
            source: Box::new(source),
        };
        let temp = self
            .temp
            .into_inner()
            .map_err(|e| in_file(PackageError::Io(e.into_error())))?;
        match temp.persist_new(DirectorySync::Now) {
            Ok(target) => Ok(target),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                Err(Misuse::TargetExists(target).into())
            }
            Err(e) => Err(in_file(PackageError::Io(e))),
        }
    }
}

impl PackageWriter<PackageFile> {
    /// Starts a package that [`finish_file`](Self::finish_file) writes to `path`, which
    /// must not exist then. Meanwhile it is written to a temporary file in the same
    /// directory, which is removed if the writer is dropped or fails, so that neither the
    /// package nor a temporary file is left behind. Errors of the file name `path`
    /// ([`PackageError::File`]).
    ///
    /// ```
    /// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
    /// use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest)
    ///     .with_at("2013-01-03T09:00:00Z".parse()?)
    ///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
    /// let target = dir.path().join("part1.zip");
    /// let mut writer = PackageWriter::create(&target, head, PackageOptions::default())?;
    /// writer.add(Bitstream::new("http://example.com/res1".parse()?, "/res1".into()), &b"hi"[..])?;
    /// let (path, info) = writer.finish_file()?;
    /// assert_eq!(path, target);
    /// assert_eq!(std::fs::metadata(&path)?.len(), info.digests.length);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn create(
        path: impl AsRef<Path>,
        head: DocumentHead,
        options: PackageOptions,
    ) -> Result<PackageWriter<PackageFile>, PackageError> {
        let path = path.as_ref();
        // Refused at once, not after the whole package was written: the rename into
        // place would refuse it then.
        if path.exists() {
            return Err(Misuse::TargetExists(path.to_path_buf()).into());
        }
        PackageWriter::new(PackageFile::create(path)?, head, options)
    }

    /// Finishes the package and moves it to the path given to
    /// [`create`](Self::create), atomically: the file is synced to disk and renamed into
    /// place, never over an existing file ([`Misuse::TargetExists`]). Returns the path and
    /// what [`finish`](Self::finish) returns. On error nothing is left behind.
    pub fn finish_file(self) -> Result<(PathBuf, PackageInfo), PackageError> {
        let (file, info) = self.finish()?;
        Ok((file.persist()?, info))
    }
}
