//! Resource Dump and Change Dump packages (work in progress).
//!
//! This crate will write ZIP packages with a `manifest.xml` while hashing each bitstream,
//! read and verify them (length, md5, sha-256), and extract them safely: every name
//! checked before it reaches a file system, bombs bounded, all or nothing.
//!
//! Nothing is implemented yet: the crate exists so that the workspace has its final
//! shape. It exports only the manifest file name the standard fixes.

/// The name of the manifest at the top level of every package (sections 11.2, 13.2).
pub const MANIFEST_NAME: &str = "manifest.xml";
