//! Streaming reader and writer of ResourceSync documents.
//!
//! Every ResourceSync document — Source Description to Change Dump Archive Index — is a
//! Sitemap with `<rs:md>` and `<rs:ln>` extensions. This crate reads any of them from a
//! `BufRead` or a byte slice as a stream, the [`DocumentHead`] first and then one
//! `Entry` at a time, in constant memory (a typed, checked read from a slice executes 2–9 %
//! more instructions than a raw quick-xml loop that builds nothing, and ran at 75–97 % of
//! its speed in the last, noisy, timed run: see `benches/README.md`); and writes them back
//! entry by entry to any `Write`.
//!
//! Out of scope: HTTP, the clock and publishing files. The caller hands in bytes (or, to
//! read a file, its path: [`Reader::open`]) and takes bytes; a [`SetWriter`] hands its
//! documents to a [`SetStore`]. Writing them into a directory a web server publishes, each
//! URI under a base mapped to its file and written atomically, is the Source's work:
//! `resourcesync_source::Directory` and `DirectoryStore`.
//!
//! # Entry types
//! - [`Reader`]: streaming, namespace-aware, limited ([`Limits`]), checking the
//!   standard's rules as it goes (`resourcesync_model::Checker`), over a file
//!   ([`Reader::open`]), any `BufRead` ([`Reader::new`]) or a slice
//!   ([`Reader::from_slice`]); [`read_document`] for a whole document in memory.
//! - [`PushReader`]: the same reader driven by the caller's bytes as they arrive
//!   ([`feed`](PushReader::feed), then [`next_entry`](PushReader::next_entry) until
//!   [`Next::NeedMore`]), for a sans-IO client reading an HTTP body: any split of the bytes
//!   reads as the slice does, and what it holds is bounded by the limits.
//! - [`Writer`]: streaming, escaping, checking the same rules as it goes and handing back
//!   their findings from a fallible [`Writer::finish`], or refusing errors
//!   ([`WriteOptions`]); [`write_document`] for a whole document.
//! - [`SetReader`]: an index and every document it lists as one stream of entries, each
//!   part checked against the index, fetched through a function the caller gives.
//! - [`SetWriter`]: a Resource List, Resource Dump, Change List or Change Dump of any size,
//!   split into as many documents as the limits require, with the index over them, each
//!   handed to a [`SetStore`].
//!
//! # Example
//! ```
//! use resourcesync_model::{Document, DocumentKind};
//! use resourcesync_xml::{read_document, write_document};
//!
//! let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
//! <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
//!         xmlns:rs="http://www.openarchives.org/rs/terms/">
//!   <rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
//!   <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
//!   <url>
//!     <loc>http://example.com/res1</loc>
//!     <lastmod>2013-01-02T13:00:00+01:00</lastmod>
//!     <rs:md hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6" length="8876" type="text/html"/>
//!   </url>
//! </urlset>"#;
//!
//! let (doc, findings) = read_document(xml)?;
//! assert_eq!(doc.head.kind(), DocumentKind::ResourceList);
//! assert!(findings.is_empty());
//!
//! // Writing and reading back gives the same document, datetimes as they were written;
//! // the writer checks the same rules the reader does.
//! let written = write_document(Vec::new(), &doc)?;
//! assert!(written.findings.is_empty());
//! let (again, _) = read_document(&written.output)?;
//! assert_eq!(again, doc);
//! assert_eq!(again.entries[0].lastmod.as_ref().unwrap().to_string(), "2013-01-02T13:00:00+01:00");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Programs
//! Short programs that use this crate as a user would, tested in the workspace:
//! - [`read-resource-list`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/examples/src/bin/read-resource-list.rs)
//!   reads a Resource List (plain or gzip) from a path and prints its entries and findings;
//! - [`write-change-list`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/examples/src/bin/write-change-list.rs)
//!   writes a Change List with the writer's checks refusing errors;
//! - [`write-read-set`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/examples/src/bin/write-read-set.rs)
//!   writes a 120,000-entry Resource List as a set into a directory under a base URL (with
//!   `resourcesync_source::DirectoryStore`) and reads it back as one stream.
//!
//! # Safety on hostile input
//! No DTD is processed and no entity other than XML's five is expanded: a `<!DOCTYPE>` or
//! an unknown entity is an error. Input must be well-formed UTF-8 XML 1.0 without
//! forbidden characters, with one root; the byte limit is counted after decompression.
//! Memory is bounded whatever the input ([`Limits`]): one piece of XML (a tag, a run of
//! text, a comment, a processing instruction, a CDATA section — skipped or kept), one
//! entry, its children and an element's attributes each have a limit.
//!
//! # Writing what reads back
//! The writer never writes what a reader would refuse or read as something else: an
//! extension whose name is no XML name, whose namespace is reserved, that would be read as
//! a Sitemap or ResourceSync element or attribute, or whose content is not well-formed
//! XML with every prefix declared, is refused ([`WriteError::Extension`]), as is a value
//! with a character XML cannot carry ([`WriteError::ForbiddenCharacter`]).
//!
//! Writers check what readers check: the model's `Checker` runs over the head and each
//! entry as they are written, and its findings come back with the output ([`Written`]).
//! A [`Writer`] writes and reports by default, so that what was read writes back as it
//! was; a [`SetWriter`], whose output is published, refuses errors by default
//! ([`WriteError::Refused`], naming the entry and the rule).
//!
//! # Features
//! - `gzip` (default): gzip-compressed documents are detected by content and decompressed;
//!   a [`SetWriter`] can compress the documents it writes (`Gzip`).
//!
//! # Deviations
//! - A root in no namespace is read as a Sitemap, with a `Rule::SitemapNamespace`
//!   finding; `md` or `ln` outside the ResourceSync namespace are kept as extensions with
//!   a `Rule::ResourceSyncNamespace` finding.
//! - An element in another namespace between entries (not inside one) is read and
//!   dropped; one inside an entry or the head is kept.
//! - Extension elements keep their content as XML text. Content that uses a prefix
//!   declared on an outer element of the source (the root, say) is read, but the writer
//!   refuses it, since it would be written without the declaration.
//! - rs:md and rs:ln after the first entry are reported (`head-before-entries`) and
//!   dropped: the head has been handed out by then.
//! - Error columns count bytes, not characters.

#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod counted;
mod error;
mod extension;
mod input;
mod namespace;
mod push;
mod reader;
mod set;
mod set_reader;
mod writer;

pub use error::{Error, ErrorKind, Position, WriteError};
pub use extension::ExtensionError;
pub use input::{Buffered, Input, Slice};
pub use push::{Next, PushReader};
pub use reader::{Limits, Reader, read_document};
#[doc(no_inline)]
pub use resourcesync_model::{DocumentHead, RS_NAMESPACE, SITEMAP_NAMESPACE};
#[cfg(feature = "gzip")]
pub use set::Gzip;
pub use set::{SetLimits, SetOptions, SetStore, SetSummary, SetWriter};
pub use set_reader::{DocumentFinding, SetReadError, SetReader};
pub use writer::{
    WriteOptions, Writer, Written, WrittenDocument, write_document, write_document_with,
    written_entries,
};

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
