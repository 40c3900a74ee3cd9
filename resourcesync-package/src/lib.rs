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
//!   computed in one pass, adds the manifest, returns the package's own fixity.
//! - [`Package`]: opens a package, checks its manifest, verifies each bitstream while it
//!   is read ([`VerifiedReader`]), and extracts all or nothing, within [`PackageLimits`].
//! - [`DumpBuilder`]: splits bitstreams into as many packages as [`DumpLimits`] require
//!   and returns the Resource Dump or Change Dump document that lists them.
//! - [`safe_path`]: the one checked function through which a package name becomes a path.
//! - [`Fixity`]: length, md5 and sha-256 in one pass.
//!
//! # Example
//! ```
//! use std::io::{Cursor, Read};
//! use resourcesync_model::{Change, DocumentHead, DocumentKind, Link, Relation};
//! use resourcesync_package::{Bitstream, Package, PackageOptions, PackageWriter};
//!
//! // A Change Dump package: one update and one deletion.
//! let mut head = DocumentHead::of_kind(DocumentKind::ChangeDumpManifest).unwrap();
//! head.md.from = Some("2013-01-02T00:00:00Z".parse()?);
//! head.links.push(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
//! let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default())?;
//! let mut update = Bitstream::new("http://example.com/res7.html".parse()?, "/changes/res7.html".into());
//! update.change = Some(Change::Updated);
//! update.datetime = Some("2013-01-02T12:00:00Z".parse()?);
//! update.media_type = Some("text/html".parse()?);
//! writer.add(update, &b"<html>v2</html>"[..])?;
//! writer.add_deleted("http://example.com/res5.tiff".parse()?, Some("2013-01-02T19:00:00Z".parse()?))?;
//! let (zip, info) = writer.finish()?;
//! assert_eq!(info.digests.length, zip.len() as u64);
//!
//! // Reading it back verifies every bitstream as it is read.
//! let mut package = Package::open(Cursor::new(zip))?;
//! assert_eq!(package.manifest().entries.len(), 2);
//! let mut html = String::new();
//! package.bitstream(0)?.read_to_string(&mut html)?;
//! assert_eq!(html, "<html>v2</html>");
//! assert!(package.check()?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Deviations
//! - Extraction refuses every `.` and `..` segment, not only those that climb out, and
//!   names with a colon, a backslash or a control character.
//! - Manifest paths without the leading slash (as the Python reference implementation
//!   writes them) are read, and reported as `path-leading-slash`.
//! - ZIP entries carry the fixed timestamp 1980-01-01: the library does not read the clock.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod dump;
mod error;
mod fixity;
mod name;
mod reader;
mod writer;

pub use dump::{DumpBuilder, DumpLimits};
pub use error::PackageError;
pub use fixity::{Digests, Fixity};
pub use name::{NameError, safe_path};
pub use reader::{FixityError, Package, PackageLimits, VerifiedReader};
pub use writer::{Bitstream, Compression, PackageInfo, PackageOptions, PackageWriter};

/// The name of the manifest at the top level of every package (sections 11.2, 13.2).
pub const MANIFEST_NAME: &str = "manifest.xml";
