//! Writing a package: bitstreams streamed into a ZIP while their fixity is computed, and
//! the manifest that describes them.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};

use resourcesync_model::{
    BitstreamPath, Change, ChangeOrder, DocumentHead, DocumentKind, Entry, MediaType, Uri,
    W3cDateTime,
};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

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
}

impl Default for PackageOptions {
    fn default() -> Self {
        PackageOptions {
            compression: Compression::default(),
            hashing_thread: true,
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
}

/// One bitstream to add: the resource it belongs to and what the manifest says of it.
/// Length and hashes are computed while it is written and need not be given.
#[derive(Clone, Debug, PartialEq, Eq)]
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

/// The package's own fixity, for the Resource Dump or Change Dump entry that lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageInfo {
    /// Length and digests of the whole ZIP file.
    pub digests: Digests,
    /// The manifest as written into the package.
    pub manifest: resourcesync_model::Document,
}

/// Writes a Resource Dump or Change Dump package to any `Write`: each bitstream is streamed
/// into the ZIP while its length, md5 and sha-256 are computed in the same pass, and
/// [`finish`](PackageWriter::finish) adds `manifest.xml` at the top level and returns the
/// package's own length and hashes.
///
/// The ZIP is written as a stream (sizes in data descriptors), so the sink needs no `Seek`
/// and the package's digests are those of exactly the bytes written. Entries are marked
/// ZIP64 when a bitstream may pass 4 GiB. Nothing fallible happens on `Drop`; for a file,
/// [`PackageWriter::create`] writes beside the target and renames into place only in
/// `finish`, so a failed write leaves nothing behind.
///
/// ```
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
/// use resourcesync_package::{Bitstream, PackageOptions, PackageWriter};
///
/// let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
/// head.md.at = Some("2013-01-03T09:00:00Z".parse()?);
/// head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
/// let mut b = Bitstream::new("http://example.com/res1".parse()?, "/resources/res1".into());
/// b.media_type = Some("text/html".parse()?);
/// assert_eq!(writer.add(b, &b"<html></html>"[..])?, 13);
/// let (zip, info) = writer.finish()?;
/// assert_eq!(info.digests.length, zip.len() as u64);
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
    /// The changes of a Change Dump Manifest, in forward chronological order (13.2).
    order: ChangeOrder,
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
            .field("entries", &self.manifest.entries.len())
            .field("options", &self.options)
            .field("hashing_thread", &self.messages.is_some())
            .finish_non_exhaustive()
    }
}

impl<W: Write> PackageWriter<W> {
    /// Starts a package whose manifest has this head: a Resource Dump Manifest (with
    /// `at`) or a Change Dump Manifest (with `from`), and the `up` link.
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
            order: ChangeOrder::new(),
        })
    }

    fn file_options(&self, method: CompressionMethod, large: bool) -> SimpleFileOptions {
        SimpleFileOptions::default()
            .compression_method(method)
            .last_modified_time(zip::DateTime::DEFAULT)
            .unix_permissions(0o644)
            .large_file(large)
    }

    /// Adds a bitstream, streaming `content` into the package, and returns its length. Its
    /// manifest entry, in [`PackageInfo::manifest`],
    /// with length and hashes filled in. Fails for a path without the leading slash, one
    /// that is not a safe relative path, one used before, or `/manifest.xml`, and, in a
    /// Change Dump Manifest, for a change dated before an earlier bitstream's or
    /// deletion's (section 13.2). A bitstream refused for its path or its time leaves
    /// nothing in the package.
    pub fn add(
        &mut self,
        bitstream: Bitstream,
        mut content: impl Read,
    ) -> Result<u64, PackageError> {
        self.check_order(bitstream.datetime.as_ref())?;
        let name = self.claim(&bitstream.path)?;
        let method = bitstream
            .compression
            .unwrap_or(self.options.compression)
            .method(bitstream.media_type.as_ref());
        // Read the first buffer before the entry starts: a bitstream that ends within it
        // (most do) has a known small size and needs no ZIP64 fields; one that does not
        // may pass 4 GiB and is marked ZIP64-capable rather than fail there.
        let mut filled = fill(&mut content, &mut self.buf)?;
        let whole = filled < self.buf.len();
        let options = self.file_options(method, !whole);
        self.zip.start_file(name, options)?;
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
        let mut entry = bitstream
            .entry
            .unwrap_or_else(|| Entry::new(bitstream.loc.clone()));
        entry.loc = bitstream.loc;
        entry.lastmod = bitstream.lastmod.or(entry.lastmod);
        let md = entry.md_mut();
        (md.change, md.datetime, md.hash) = (bitstream.change, bitstream.datetime, hash);
        (md.length, md.path) = (Some(length), Some(bitstream.path));
        md.media_type = bitstream.media_type;
        if self.manifest.head.kind() == DocumentKind::ChangeDumpManifest {
            self.order
                .record(entry.md.as_ref().and_then(|md| md.datetime.as_ref()));
        }
        self.manifest.entries.push(entry);
        Ok(length)
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

    /// Adds a manifest entry without a bitstream: a deletion in a Change Dump Manifest.
    pub fn add_deleted(
        &mut self,
        loc: Uri,
        datetime: Option<W3cDateTime>,
    ) -> Result<Entry, PackageError> {
        if self.manifest.head.kind() != DocumentKind::ChangeDumpManifest {
            return Err(Misuse::DeletionInResourceDump.into());
        }
        self.check_order(datetime.as_ref())?;
        self.order.record(datetime.as_ref());
        let mut entry = Entry::new(loc).with_change(Change::Deleted);
        entry.md_mut().datetime = datetime;
        self.manifest.entries.push(entry.clone());
        Ok(entry)
    }

    /// Checks a path and reserves its ZIP name: a path the reader would refuse, as unsafe
    /// or as colliding with an earlier one on some file system, is refused here.
    fn claim(&mut self, path: &BitstreamPath) -> Result<String, PackageError> {
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
        let folded = crate::archive::fold(name).into_owned();
        let collision = |earlier: &str, collision| {
            misuse(Misuse::PathCollision {
                path: path.to_string(),
                earlier: format!("/{earlier}"),
                collision,
            })
        };
        if let Some(earlier) = self.paths.get(&folded) {
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
        if let Some(earlier) = self.directories.get(&folded) {
            return collision(earlier, Collision::FileAsDirectory);
        }
        for (at, _) in name.match_indices('/') {
            if let Some(earlier) = self.paths.get(&*crate::archive::fold(&name[..at])) {
                return collision(earlier, Collision::FileAsDirectory);
            }
        }
        for (at, _) in name.match_indices('/') {
            self.directories
                .entry(crate::archive::fold(&name[..at]).into_owned())
                .or_insert_with(|| name.to_owned());
        }
        self.paths.insert(folded, name.to_owned());
        Ok(name.to_owned())
    }

    /// Sets the `until` of a Change Dump Manifest before it is written (the dump builder
    /// knows it only when the next package starts).
    pub(crate) fn set_until(&mut self, until: Option<W3cDateTime>) {
        self.manifest.head.md.until = until;
    }

    /// Checks that a change does not come before an earlier one, in a Change Dump
    /// Manifest (section 13.2); a Resource Dump Manifest has no order.
    fn check_order(&self, datetime: Option<&W3cDateTime>) -> Result<(), PackageError> {
        if self.manifest.head.kind() == DocumentKind::ChangeDumpManifest {
            self.order.check(datetime)?;
        }
        Ok(())
    }

    /// Bitstreams and deletions added so far.
    pub fn entries(&self) -> usize {
        self.manifest.entries.len()
    }

    /// Writes `manifest.xml`, closes the ZIP, and returns the sink with the package's own
    /// length and hashes and the manifest.
    pub fn finish(mut self) -> Result<(W, PackageInfo), PackageError> {
        self.collect_hashes()?;
        // The hashing thread finishes when every sender is gone.
        self.messages = None;
        // Written and reported, never refused, as before; the package writer keeps a Change
        // Dump Manifest's order itself and does not report the other findings (yet).
        let xml = resourcesync_xml::write_document(Vec::new(), &self.manifest)
            .map_err(PackageError::ManifestWrite)?
            .output;
        // Deflate's fastest level: a manifest is repetitive text and shrinks well anyway.
        let options = self
            .file_options(CompressionMethod::Deflated, false)
            .compression_level(Some(1));
        self.zip.start_file(MANIFEST_NAME, options)?;
        self.zip.write_all(&xml)?;
        let stream = self.zip.finish()?;
        let (inner, digests) = stream.into_inner().finish()?;
        Ok((
            inner,
            PackageInfo {
                digests,
                manifest: self.manifest,
            },
        ))
    }
}

impl PackageWriter<std::io::BufWriter<tempfile::NamedTempFile>> {
    /// Starts a package that [`finish_file`](Self::finish_file) moves to `path`. It is
    /// written to a temporary file in the same directory meanwhile, which is removed if the
    /// writer is dropped or fails, so a failed write leaves nothing behind.
    pub fn create(
        path: &Path,
        head: DocumentHead,
        options: PackageOptions,
    ) -> Result<PackageWriter<std::io::BufWriter<tempfile::NamedTempFile>>, PackageError> {
        let dir = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let temp = tempfile::Builder::new()
            .prefix(".resourcesync-package-")
            .tempfile_in(dir)?;
        PackageWriter::new(std::io::BufWriter::new(temp), head, options)
    }

    /// Finishes the package and moves it to `path`, which must not exist yet.
    pub fn finish_file(self, path: &Path) -> Result<(PathBuf, PackageInfo), PackageError> {
        let (out, info) = self.finish()?;
        let temp = out
            .into_inner()
            .map_err(|e| PackageError::Io(e.into_error()))?;
        temp.as_file().sync_all()?;
        let file: File = temp
            .persist_noclobber(path)
            .map_err(|e| PackageError::Io(e.error))?;
        drop(file);
        Ok((path.to_path_buf(), info))
    }
}
