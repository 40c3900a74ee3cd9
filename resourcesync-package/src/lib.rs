//! Resource Dump and Change Dump packages: write, read, verify, extract safely.
//!
//! A Resource Dump or Change Dump (sections 11 and 13 of ANSI/NISO Z39.99-2017) points at
//! ZIP packages of bitstreams, each described by a `manifest.xml` at the top level. This
//! crate writes such packages while hashing each bitstream, and reads them back.
//!
//! Out of scope: HTTP. The caller hands in and takes readers, writers and paths.
//!
//! # Entry types
//! - [`PackageWriter`]: streams [`Bitstream`]s into a ZIP with length, md5 and sha-256
//!   computed in one pass, adds the manifest, returns the package's own fixity; to any
//!   `Write`, or to a file it moves into place atomically ([`PackageWriter::create`]).
//! - [`Package`]: opens a package ([`Package::open`] a path, [`Package::new`] a reader),
//!   checks its manifest, verifies each bitstream while it is read ([`VerifiedReader`]),
//!   and extracts all or nothing, within [`PackageLimits`].
//! - [`DumpBuilder`]: splits bitstreams into as many packages as [`DumpLimits`] require
//!   and returns the Resource Dump or Change Dump document that lists them ([`DumpInfo`]);
//!   through the caller's sinks, or into a [`DumpStore`] (a directory served at a base
//!   URI, say), with the manifest copies and the dump document ([`DumpBuilder::in_store`]).
//!
//! # Writers check what readers check
//! The writers run the model's [`resourcesync_model::Checker`], the one
//! [`Package`] runs on a manifest it reads, on every manifest and dump document they write,
//! entry by entry. What they publish is read by others, so by default an entry that would
//! break a rule of severity error is refused before it is written
//! ([`Misuse::BreaksRule`]), leaving the package as it was;
//! [`PackageOptions::refuse_errors`] turns that off. The findings come back from `finish`
//! ([`PackageInfo::findings`], [`DumpInfo`]).
//! - [`safe_path`]: the one checked function through which a package name becomes a path.
//! - [`Fixity`]: length, md5 and sha-256 in one pass.
//!
//! # Errors
//! [`PackageError`] separates a bad package ([`BadPackage`]: the ZIP's structure, names
//! and headers, the manifest's paths; [`FixityError`]; an unreadable manifest, whose XML
//! error keeps its position; a ZIP the zip crate cannot read) from a reached limit
//! ([`LimitExceeded`]) and from caller misuse ([`Misuse`]). Each is data to match on, and
//! each error either prints the error it wraps or returns it as its `source`, never both.
//!
//! # Reading
//! The zip crate reads the central directory; this crate reads everything after it: each
//! local header, compared with the central directory, and each entry's bytes, counted
//! against its declared sizes and CRC-32 as they are read. Declared sizes that cannot be
//! true (data past the central directory or into the next entry, a stored entry with two
//! sizes, more than deflate can expand to) are refused on opening; sizes that turn out to
//! be lies are errors as soon as they show, before a byte past them is returned. A
//! bitstream whose bytes changed after it was packaged fails both its CRC-32 and a hash of
//! its manifest entry: it is a [`FixityError`] (the standard's bitstream-fixity), so that
//! [`Package::check`] reports it among the other findings; the CRC-32 alone is the error
//! only when the manifest's hashes agree with the bytes or its length does not.
//!
//! # Example
//! ```
//! use std::io::{Cursor, Read};
//! use resourcesync_model::{Change, DocumentHead, DocumentKind, Link, Relation};
//! use resourcesync_package::{Bitstream, Misuse, Package, PackageError, PackageOptions, PackageWriter};
//!
//! // A Change Dump package: one update and one deletion.
//! let head = DocumentHead::of_kind(DocumentKind::ChangeDumpManifest)
//!     .with_from("2013-01-02T00:00:00Z".parse()?)
//!     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
//! let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
//! let mut update = Bitstream::new("http://example.com/res7.html".parse()?, "/changes/res7.html".into());
//! update.change = Some(Change::Updated);
//! update.datetime = Some("2013-01-02T12:00:00Z".parse()?);
//! update.media_type = Some("text/html".parse()?);
//! writer.add(update, &b"<html>v2</html>"[..])?;
//! writer.add_deleted("http://example.com/res5.tiff".parse()?, Some("2013-01-02T19:00:00Z".parse()?))?;
//! // A change before the last one would break the order rule of section 13.2: refused.
//! let mut late = Bitstream::new("http://example.com/res8.html".parse()?, "/changes/res8.html".into());
//! late.change = Some(Change::Created);
//! late.datetime = Some("2013-01-02T08:00:00Z".parse()?);
//! assert!(matches!(writer.add(late, &b"<html/>"[..]), Err(PackageError::Misuse(Misuse::BreaksRule { .. }))));
//! let (zip, info) = writer.finish()?;
//! assert_eq!(info.digests.length, zip.len() as u64);
//! assert!(info.findings.is_empty());
//!
//! // Reading it back verifies every bitstream as it is read.
//! let mut package = Package::new(Cursor::new(zip))?;
//! assert_eq!(package.manifest().entries.len(), 2); // the update and the deletion
//! assert_eq!(package.bitstream_count(), 1); // a deletion has no bitstream
//! let mut html = String::new();
//! package.bitstream(0)?.read_to_string(&mut html)?;
//! assert_eq!(html, "<html>v2</html>");
//! assert!(package.check()?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Programs
//! Short programs that use this crate as a user would, tested in the workspace:
//! - [`resource-dump`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/examples/src/bin/resource-dump.rs)
//!   writes a Resource Dump package, then opens, verifies and extracts it.
//!
//! # Threads
//! [`PackageWriter`] hashes every byte twice, as part of its bitstream and as part of the
//! package, and spreads that over two threads: a hashing thread (module `hashing`) takes
//! the package's bytes in 1 MiB chunks, at most four in flight, and computes the package's
//! md5 and sha-256 and the sha-256 of about half of the stored bitstreams, whose bytes
//! stand verbatim in the package. The thread ends with `finish`, or when the writer is
//! dropped. [`PackageOptions::hashing_thread`] turns it off, for callers that want one
//! thread only; the bytes and digests are the same either way.
//!
//! [`Package::verify`] and [`Package::check`] compute the bitstreams' md5 on a second,
//! scoped thread, which lives for that one call: the reading thread reads each bitstream
//! (CRC-32, sizes and limits counted on the inflated bytes, as always), computes its length
//! and sha-256, and hands its bytes over in 1 MiB batches, at most four in flight; the md5
//! comes back per bitstream, and each fixity error is judged and reported in file order,
//! naming its bitstream, as on one thread. While the md5 thread is two batches behind,
//! bitstreams of up to 64 KiB are hashed whole on the reading thread, which keeps the two
//! balanced when bitstreams are small. [`PackageLimits::hashing_thread`] turns the thread
//! off; it is not started either on a single core, for bitstreams of less than 256 KiB in
//! all, or when it cannot be; the findings and errors are the same either way.
//! [`VerifiedReader`] and [`Package::extract`] use no thread.
//!
//! # Deviations
//! - Extraction refuses every `.` and `..` segment, not only those that climb out, and
//!   names with a colon, a backslash or a control character, or a segment longer than
//!   255 bytes.
//! - A package whose names would collide on some file system is refused: names that
//!   differ only in case or in Unicode normalization (NFC and NFD), and a name used both as
//!   a file and as a directory. The writer refuses such paths too.
//! - Manifest paths without the leading slash (as the Python reference implementation
//!   writes them) are read, and reported as `path-leading-slash`.
//! - ZIP entries carry the fixed timestamp 1980-01-01: the library does not read the clock.
// Every public type has Debug: enforced, since clippy runs with warnings as errors.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod archive;
pub mod atomic;
mod dump;
mod error;
mod hashing;
mod name;
mod reader;
mod writer;

pub use dump::{DumpBuilder, DumpInfo, DumpLimits, DumpStore, StoreDumpBuilder};
pub use error::{
    BadPackage, Collision, ContentProblem, FixityError, HeaderProblem, LimitExceeded, Misuse,
    PackageError, PathProblem, SizeProblem,
};
pub use name::{MAX_SEGMENT_BYTES, NameError, safe_path};
pub use reader::{Package, PackageLimits, VerifiedReader};
#[doc(no_inline)]
pub use resourcesync_model::{Digest, Digests, Fixity, FixityMismatch};
pub use writer::{Bitstream, Compression, PackageFile, PackageInfo, PackageOptions, PackageWriter};

/// The name of the manifest at the top level of every package (sections 11.2, 13.2).
pub const MANIFEST_NAME: &str = "manifest.xml";

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
