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
