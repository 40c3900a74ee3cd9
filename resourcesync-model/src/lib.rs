//! The typed data model of ResourceSync documents and the standard's rules.
//!
//! ResourceSync (ANSI/NISO Z39.99-2017, with the ResourceSync Archives specification) lets
//! a Destination stay in step with a Source's changing resources through Sitemap documents
//! with `<rs:md>` and `<rs:ln>` extensions. This crate holds every such document as values
//! that cannot be invalid — [`W3cDateTime`], [`Capability`], [`Hashes`], [`Priority`],
//! [`Relation`], [`MediaType`] — and checks what a value alone cannot show, the rules that
//! span a document, with a [`Checker`] that reports each broken rule as a [`Finding`]
//! naming the [`Rule`], the section of the standard and the entry.
//!
//! Out of scope: XML (see `resourcesync-xml`), packages (`resourcesync-package`), HTTP
//! and the file system. This crate performs no IO and never reads the clock.
//!
//! # Entry types
//! - [`Document`] = [`DocumentHead`] (root, document `<rs:md>` and `<rs:ln>`) + [`Entry`]s;
//!   [`DocumentKind`] follows from the root and the capability.
//! - [`Md`] and [`Link`]: every attribute of Table 3, typed; [`AttributeName`] is the one
//!   table of those attributes (names, elements, parsing, values) that readers, writers and
//!   the checker go by.
//! - [`Checker`] and [`check`]: the rules of sections 7–14, Appendix A and the Archives
//!   specification, entry by entry in constant memory; [`Rule::ALL`] is the catalogue.
//! - [`ChangeOrder`]: the forward chronological order a writer of changes keeps, so that
//!   it refuses what the checker would report.
//!
//! # Example
//! ```
//! use resourcesync_model::*;
//!
//! // A Change List whose entries are out of order.
//! let head = DocumentHead::of_kind(DocumentKind::ChangeList)
//!     .with_from("2013-01-03T00:00:00Z".parse()?)
//!     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
//! let mut doc = Document::new(head);
//! for (loc, change, datetime) in [
//!     ("http://example.com/res2.pdf", Change::Updated, "2013-01-03T13:00:00Z"),
//!     ("http://example.com/res1.html", Change::Created, "2013-01-03T12:00+01:00"),
//! ] {
//!     let entry = Entry::new(loc.parse()?).with_change(change).with_datetime(datetime.parse()?);
//!     doc.entries.push(entry);
//! }
//!
//! let findings = check(&doc);
//! assert_eq!(findings.len(), 1);
//! assert_eq!(findings[0].rule, Rule::ChangeListOrder);
//! assert_eq!(findings[0].rule.id(), "changelist-order");
//! assert_eq!(findings[0].severity(), Severity::Error);
//! assert_eq!(findings[0].section, "12.1");
//! assert_eq!(findings[0].entry, Some(2));
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
//!   writes a 120,000-entry Resource List as a set into a directory under a base URL and
//!   reads it back as one stream;
//! - [`resource-dump`](https://github.com/resourcesync-rs/resourcesync-rs/blob/main/examples/src/bin/resource-dump.rs)
//!   writes a Resource Dump package, then opens, verifies and extracts it.
//!
//! # Features
//! - `serde`: `Serialize` and `Deserialize` on every data type; values such as datetimes,
//!   hashes and relations as the text they have in a document.
//!
//! # Deviations
//! Where this crate is stricter or more lenient than the standard, on purpose:
//! - A W3C Datetime with a leap second (`:60`) is refused: it has no instant in chrono or
//!   most stores. Offsets are limited to ±23:59 and years to four digits, as in the W3C
//!   note.
//! - Equality and order of [`W3cDateTime`] are on the instant, a value of reduced precision
//!   standing for the start of its period and a date without a time for UTC.
//! - URIs are kept exactly as written, never normalised; white space inside a URI is
//!   refused rather than percent-encoded. [`Uri::to_url`] gives the normalised form.
//! - The Archives specification's text leaves out whether an archive's entries must carry
//!   `at` (Resource List and Resource Dump Archives); missing `at` there is a warning.
//! - Order rules compare `datetime` (Change Lists, Change Dump Manifests) or `from` (the
//!   others); an entry without that attribute is skipped, not guessed from `<lastmod>`.
//! - A value of reduced precision names a period: interval and order rules take a lower
//!   bound at the start of its period and an upper bound at its end
//!   ([`W3cDateTime::precedes`]), so `until="2013-01-03"` covers that whole day.
//! - A capability that is a near miss of a defined value ([`Capability::meant`]) is an
//!   error, and the document is checked as the kind meant (so its missing `at` or `up`
//!   link is reported too); [`Checker::kind`] is that kind. Any other undefined
//!   capability is a warning, and only the rules common to every document apply.
//! - Relation names and the names of known hash algorithms compare case-insensitively and
//!   are written back in the registries' lower case.
//! - Some rules guard a Destination without text of the standard behind them (unsafe URI
//!   schemes, userinfo, unknown hash algorithms); each says so in its documentation.
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod attribute;
mod capability;
mod check;
mod datetime;
mod document;
mod entry;
mod extension;
mod fixity;
mod hash;
mod keyword;
mod length;
mod link;
mod malformed;
mod md;
mod media_type;
pub mod names;
mod notification;
mod order;
mod path;
mod priority;
mod relation;
mod rules;
pub mod text;
mod uri;
pub mod uri_path;

pub use attribute::{
    AttributeName, AttributeSink, AttributeValue, Attributes, NotOnElement, PartialLink, RsElement,
};
pub use capability::{Capability, DocumentKind, Root};
pub use check::{CheckOptions, Checker, MAX_BYTES, MAX_ENTRIES, check, check_with};
pub use datetime::{DateTimeError, Offset, Precision, W3cDateTime};
pub use document::{Document, DocumentHead};
pub use entry::Entry;
pub use extension::{Attribute, Element};
pub use fixity::{
    Algorithms, Digest, Digests, Fixity, FixityMismatch, Measure, Measured, Verification,
};
pub use hash::{Hash, HashAlgorithm, HashError, Hashes};
pub use keyword::{Change, ChangeFreq, KeywordError};
pub use length::{LengthError, parse_length};
pub use link::Link;
pub use malformed::Malformed;
pub use md::Md;
pub use media_type::{MediaType, MediaTypeError};
pub use notification::Channel;
pub use order::{ChangeOrder, OrderError};
pub use path::{BitstreamPath, NoFile};
pub use priority::{Priority, PriorityError};
pub use relation::{PATCH_RELATION, Relation, RelationError};
pub use rules::{Finding, Rule, RuleError, Severity, TextPosition};
pub use uri::{MAX_URI_LEN, Uri, UriError};
#[doc(no_inline)]
pub use url::Url;

/// The ResourceSync XML namespace, bound to `rs` in the standard's examples.
pub const RS_NAMESPACE: &str = "http://www.openarchives.org/rs/terms/";
/// The Sitemap protocol's XML namespace.
pub const SITEMAP_NAMESPACE: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// The README's example, compiled and run as a doc-test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
