//! Errors of writing and reading packages, in three families as rustls separates them: the
//! package is bad ([`BadPackage`], [`FixityError`], an unreadable manifest, a broken ZIP),
//! a limit was reached ([`LimitExceeded`]), or the caller asked for something the standard
//! or this crate does not allow ([`Misuse`]).
//!
//! Each error either prints the error it wraps or returns it from
//! [`source`](std::error::Error::source), never both: errors of this crate that explain
//! another ([`NameError`], [`Finding`], [`FixityMismatch`]) are part of the message; errors of
//! other layers (IO, the zip crate, the XML reader) are sources, so a caller prints the
//! chain.

use std::fmt;
use std::io;
use std::path::PathBuf;

use resourcesync_model::{DocumentKind, Finding, FixityMismatch, NoFile, Uri, UriError};

use crate::NameError;

/// Why a package could not be written, read, verified or extracted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PackageError {
    /// The sink or source failed.
    #[error("IO error: {0}")]
    Io(#[from] io::Error),
    /// The ZIP structure is broken or unsupported, as the zip crate found.
    #[error("broken ZIP archive")]
    Zip(#[from] zip::result::ZipError),
    /// `manifest.xml` is not a readable ResourceSync document; the XML error, with its
    /// position, is the source.
    #[error("manifest.xml cannot be read")]
    Manifest(#[source] resourcesync_xml::Error),
    /// The manifest could not be written, for an entry the XML writer refuses; the
    /// writer's error is the source.
    #[error("manifest.xml cannot be written")]
    ManifestWrite(#[source] resourcesync_xml::WriteError),
    /// The package is broken or hostile.
    #[error(transparent)]
    Bad(#[from] BadPackage),
    /// A bitstream whose length or a hash differs from its manifest entry.
    #[error(transparent)]
    Fixity(#[from] FixityError),
    /// Reading the package would cost more than its [`PackageLimits`](crate::PackageLimits)
    /// allow.
    #[error(transparent)]
    Limit(#[from] LimitExceeded),
    /// The caller asked for something the standard or this crate does not allow.
    #[error(transparent)]
    Misuse(#[from] Misuse),
    /// A [`DumpStore`](crate::DumpStore) could not make a URI of a name or publish a
    /// file: the store's own error, kept whole (downcast it to the store's error type).
    /// Made with [`PackageError::store`].
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// An error of a package file this crate opened or created itself
    /// ([`Package::open`](crate::Package::open), [`PackageWriter::create`](crate::PackageWriter::create)):
    /// the path, and the error as it would be without one.
    #[error("package file {}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: Box<PackageError>,
    },
}

impl PackageError {
    /// A [`DumpStore`](crate::DumpStore)'s own error, as [`PackageError::Store`].
    pub fn store(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> PackageError {
        PackageError::Store(error.into())
    }
}

/// What is wrong with a package: the ZIP structure beyond what the zip crate checks, or
/// the manifest and the bitstreams it lists.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BadPackage {
    /// No `manifest.xml` at all.
    #[error("no manifest.xml in the package")]
    NoManifest,
    /// No `manifest.xml` at the top level, but one elsewhere or in another case.
    #[error("no manifest.xml at the top level of the package (found \"{found}\")")]
    ManifestElsewhere {
        /// The name of the entry that looks like the manifest.
        found: String,
    },
    /// `manifest.xml` is some other kind of document.
    #[error("manifest.xml is a {kind}, not a Resource Dump or Change Dump Manifest")]
    NotAManifest {
        /// What it is.
        kind: DocumentKind,
    },
    /// Two entries of the ZIP with the same name.
    #[error("the package has two entries of the same name")]
    DuplicateName,
    /// Two entries whose names differ but name the same file on a file system that folds
    /// case or normalizes Unicode (`a.txt` and `A.TXT`; `é` composed and decomposed), or a
    /// file whose name is also used as a directory (`a` and `a/b`).
    #[error("entries \"{first}\" and \"{second}\" {collision}")]
    NameCollision {
        /// The earlier entry.
        first: String,
        /// The later entry.
        second: String,
        /// How they collide.
        collision: Collision,
    },
    /// An entry name this crate will not turn into a path.
    #[error("unsafe entry name: {0}")]
    UnsafeName(NameError),
    /// An encrypted entry.
    #[error("entry \"{name}\" is encrypted")]
    Encrypted {
        /// The entry.
        name: String,
    },
    /// An entry compressed with a method other than store and deflate.
    #[error("entry \"{name}\" uses compression method {method}: only store and deflate are read")]
    Compression {
        /// The entry.
        name: String,
        /// The method's name, or `Unknown`.
        method: String,
    },
    /// A symbolic link.
    #[error("entry \"{name}\" is a symbolic link")]
    Symlink {
        /// The entry.
        name: String,
    },
    /// A device, FIFO or socket.
    #[error("entry \"{name}\" is a special file (mode {mode:o})")]
    SpecialFile {
        /// The entry.
        name: String,
        /// Its Unix mode.
        mode: u32,
    },
    /// The local header of an entry disagrees with the central directory, or is not there.
    #[error("entry \"{name}\": {problem}")]
    LocalHeader {
        /// The entry, as the central directory names it.
        name: String,
        /// What disagrees.
        problem: HeaderProblem,
    },
    /// An entry's declared sizes cannot be true: its data runs past the end of the entries
    /// or into another entry, a stored entry declares two sizes, or a deflated entry
    /// declares more than deflate can expand to.
    #[error("entry \"{name}\" declares {declared} bytes: {problem}")]
    ImpossibleSize {
        /// The entry.
        name: String,
        /// The size declared (uncompressed, or compressed for data past the end).
        declared: u64,
        /// Why it cannot be true.
        problem: SizeProblem,
    },
    /// An entry whose content is not what its header declares: another length, or another
    /// CRC-32.
    #[error("entry \"{name}\": {problem}")]
    Content {
        /// The entry.
        name: String,
        /// What differs.
        problem: ContentProblem,
    },
    /// A path of the manifest that names no bitstream of the package, or names one twice.
    #[error("manifest entry {entry}: path \"{path}\" {problem}")]
    ManifestPath {
        /// The 1-based number of the manifest entry.
        entry: usize,
        /// The path as written.
        path: String,
        /// What is wrong with it.
        problem: PathProblem,
    },
}

/// How two names of a package collide. See [`BadPackage::NameCollision`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Collision {
    /// They differ only in case.
    Case,
    /// They differ only in Unicode normalization (NFC and NFD), and maybe case.
    Normalization,
    /// The first is a file, and the second uses its name as a directory.
    FileAsDirectory,
}

impl fmt::Display for Collision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Collision::Case => "differ only in case",
            Collision::Normalization => "differ only in Unicode normalization",
            Collision::FileAsDirectory => "use one name as a file and as a directory",
        })
    }
}

/// What disagrees between an entry's local header and the central directory.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum HeaderProblem {
    /// No local header signature where the central directory says the entry starts.
    Missing,
    /// The local header names another file.
    Name {
        /// The name in the local header (lossy UTF-8).
        local: String,
    },
    /// Another compression method.
    Method {
        /// The local header's method number.
        local: u16,
        /// The central directory's method number.
        central: u16,
    },
    /// Another size or CRC-32, in a header that does not defer them to a data descriptor.
    Field {
        /// `compressed size`, `uncompressed size` or `CRC-32`.
        field: &'static str,
        /// The local header's value.
        local: u64,
        /// The central directory's value.
        central: u64,
    },
}

impl fmt::Display for HeaderProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderProblem::Missing => {
                f.write_str("no local header where the central directory says")
            }
            HeaderProblem::Name { local } => {
                write!(f, "the local header names \"{local}\"")
            }
            HeaderProblem::Method { local, central } => write!(
                f,
                "the local header says compression method {local}, the central directory {central}"
            ),
            HeaderProblem::Field {
                field,
                local,
                central,
            } => write!(
                f,
                "the local header says {field} {local}, the central directory {central}"
            ),
        }
    }
}

/// Why declared sizes cannot be true. See [`BadPackage::ImpossibleSize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SizeProblem {
    /// Its compressed data would run past the start of the central directory, where
    /// only `available` bytes are left.
    PastTheEnd {
        /// Bytes from the start of its data to the central directory.
        available: u64,
    },
    /// Its data would run into the entry that starts at this offset.
    Overlaps {
        /// Where the next entry's local header starts.
        next: u64,
    },
    /// A stored entry whose uncompressed size is not its compressed size.
    Stored {
        /// The compressed size declared.
        compressed: u64,
    },
    /// More than deflate's maximal ratio of 1032 to 1 from the compressed size.
    Deflate {
        /// The compressed size declared.
        compressed: u64,
    },
}

impl fmt::Display for SizeProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SizeProblem::PastTheEnd { available } => {
                write!(
                    f,
                    "only {available} bytes are left before the central directory"
                )
            }
            SizeProblem::Overlaps { next } => {
                write!(f, "its data runs into the entry at offset {next}")
            }
            SizeProblem::Stored { compressed } => {
                write!(
                    f,
                    "it is stored, and declares {compressed} compressed bytes"
                )
            }
            SizeProblem::Deflate { compressed } => write!(
                f,
                "deflate cannot expand {compressed} compressed bytes to that many"
            ),
        }
    }
}

/// How an entry's content differs from its header. See [`BadPackage::Content`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ContentProblem {
    /// It inflated past the uncompressed size declared (reading stopped there).
    Longer {
        /// The uncompressed size declared.
        declared: u64,
    },
    /// It ended before the uncompressed size declared.
    Shorter {
        /// The uncompressed size declared.
        declared: u64,
        /// Bytes it has.
        actual: u64,
    },
    /// Its deflate stream ended before its declared compressed size.
    CompressedShorter {
        /// The compressed size declared.
        declared: u64,
        /// Compressed bytes the stream used.
        actual: u64,
    },
    /// Its deflate stream is corrupt.
    Deflate,
    /// Another CRC-32 than declared.
    Crc32 {
        /// Declared.
        declared: u32,
        /// Computed.
        actual: u32,
    },
}

impl fmt::Display for ContentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContentProblem::Longer { declared } => {
                write!(f, "inflates to more than the {declared} bytes declared")
            }
            ContentProblem::Shorter { declared, actual } => {
                write!(f, "has {actual} bytes, {declared} declared")
            }
            ContentProblem::CompressedShorter { declared, actual } => write!(
                f,
                "its compressed data ends after {actual} bytes, {declared} declared"
            ),
            ContentProblem::Deflate => f.write_str("its deflate stream is corrupt"),
            ContentProblem::Crc32 { declared, actual } => {
                write!(f, "CRC-32 is {actual:08x}, {declared:08x} declared")
            }
        }
    }
}

/// What is wrong with a path of the manifest. See [`BadPackage::ManifestPath`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PathProblem {
    /// `//server/share/…`: a network (UNC) path, not one inside the package.
    Network,
    /// `/` or empty: the package root, not a bitstream.
    Root,
    /// Ends with `/`: a directory, not a bitstream.
    Directory,
    /// Names a directory of the ZIP: a directory entry, or a folder its names imply.
    NamesDirectory,
    /// Names `manifest.xml`, the manifest itself.
    Manifest,
    /// Cannot be a path inside the package.
    Unsafe(NameError),
    /// The package has no such file.
    Missing,
    /// An earlier manifest entry lists the same bitstream (with or without the leading
    /// slash).
    Twice {
        /// The 1-based number of that entry.
        first: usize,
    },
}

impl From<NoFile> for PathProblem {
    /// The model's reason a path names no file (the one test the checker's
    /// path-names-no-file applies too).
    fn from(no_file: NoFile) -> PathProblem {
        match no_file {
            NoFile::Network => PathProblem::Network,
            NoFile::Root => PathProblem::Root,
            // A reason added to the model later is a directory's as far as the package is
            // concerned: no bitstream.
            _ => PathProblem::Directory,
        }
    }
}

impl fmt::Display for PathProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathProblem::Network => NoFile::Network.fmt(f),
            PathProblem::Root => NoFile::Root.fmt(f),
            PathProblem::Directory => NoFile::Directory.fmt(f),
            PathProblem::NamesDirectory => {
                f.write_str("names a directory of the package, not a bitstream")
            }
            PathProblem::Unsafe(e) => write!(f, "is unsafe: {e}"),
            PathProblem::Manifest => f.write_str("is the manifest itself, not a bitstream"),
            PathProblem::Missing => f.write_str("is not in the package"),
            PathProblem::Twice { first } => write!(f, "is listed by entry {first} too"),
        }
    }
}

/// A limit of [`PackageLimits`](crate::PackageLimits) that reading would pass.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitExceeded {
    /// More entries in the ZIP than `max_entries`.
    #[error("the package has {count} entries, more than {max}")]
    Entries {
        /// Entries in the ZIP.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// `manifest.xml` inflates past `max_manifest_bytes`.
    #[error("manifest.xml is larger than {max} bytes")]
    ManifestBytes {
        /// The limit.
        max: u64,
    },
    /// A bitstream inflates past `max_entry_bytes`.
    #[error("bitstream {path} inflates to more than {max} bytes")]
    EntryBytes {
        /// The bitstream's name in the package.
        path: String,
        /// The limit.
        max: u64,
    },
    /// The bitstreams read so far inflate past `max_total_bytes`.
    #[error("the package inflates to more than {max} bytes")]
    TotalBytes {
        /// The limit.
        max: u64,
    },
    /// A bitstream whose manifest entry declares no length inflates more than `max_ratio`
    /// times its compressed size.
    #[error("bitstream {path} inflates more than {max} times its compressed size")]
    Ratio {
        /// The bitstream's name in the package.
        path: String,
        /// The limit.
        max: u64,
    },
}

/// Something the caller asked for that the standard or this crate does not allow.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Misuse {
    /// A package writer started with another kind of manifest head.
    #[error(
        "a package's manifest is a Resource Dump Manifest or a Change Dump Manifest, not a {kind}"
    )]
    ManifestKind {
        /// The kind given.
        kind: DocumentKind,
    },
    /// A dump builder started with another kind of head.
    #[error("a dump is a Resource Dump or a Change Dump, not a {kind}")]
    DumpKind {
        /// The kind given.
        kind: DocumentKind,
    },
    /// A bitstream path without the leading slash (sections 11.2, 13.2).
    #[error("path {path} must start with a slash (sections 11.2, 13.2)")]
    PathWithoutSlash {
        /// The path.
        path: String,
    },
    /// A bitstream path that cannot safely be a name in the package.
    #[error("path {path} is unsafe: {reason}")]
    UnsafePath {
        /// The path.
        path: String,
        /// Why.
        reason: NameError,
    },
    /// The path of the manifest itself.
    #[error("path {path} is the manifest's")]
    ManifestPath {
        /// The path.
        path: String,
    },
    /// A path given to an earlier bitstream of the package.
    #[error("path {path} is used twice")]
    PathUsedTwice {
        /// The path.
        path: String,
    },
    /// A path that names the same file as an earlier bitstream's on a file system that
    /// folds case or normalizes Unicode, or uses its name as a file and a directory.
    #[error("path {path} and the earlier {earlier} {collision}")]
    PathCollision {
        /// The path.
        path: String,
        /// The earlier bitstream's path.
        earlier: String,
        /// How they collide.
        collision: Collision,
    },
    /// A manifest or dump document that would break a rule of the standard of severity
    /// [`resourcesync_model::Severity::Error`], as the model's
    /// [`resourcesync_model::Checker`] would find it in what is written: an
    /// entry (a change out of order, a deletion in a Resource Dump Manifest, an unsafe
    /// URI, …) or the head. Refused unless
    /// [`PackageOptions::refuse_errors`](crate::PackageOptions::refuse_errors) is off.
    #[error("{}", breaks_rule(*document, loc.as_ref(), errors))]
    BreaksRule {
        /// The document that would break it.
        document: DocumentKind,
        /// The `<loc>` of the entry refused, or `None` for the head.
        loc: Option<Uri>,
        /// The findings of severity error, each with its rule, section and entry number;
        /// never empty.
        errors: Vec<Finding>,
    },
    /// A bitstream number the package does not have.
    #[error("no bitstream {index}: the package has {count}")]
    NoBitstream {
        /// The number asked for (from 0).
        index: usize,
        /// How many bitstreams it has ([`Package::bitstream_count`](crate::Package::bitstream_count)).
        count: usize,
    },
    /// A target that exists already: of an extraction, or of a package file
    /// ([`PackageWriter::finish_file`](crate::PackageWriter::finish_file),
    /// [`DumpStore::create_package`](crate::DumpStore::create_package)), which is never
    /// overwritten.
    #[error("{} exists already", .0.display())]
    TargetExists(PathBuf),
    /// A package URI scheme that gave an invalid URI.
    #[error("the URI of package {number} is invalid: {reason}")]
    PackageUri {
        /// The package's number, from 1.
        number: usize,
        /// Why the URI is invalid.
        reason: UriError,
    },
}

/// The message of [`Misuse::BreaksRule`]: what was refused, and the first error.
fn breaks_rule(document: DocumentKind, loc: Option<&Uri>, errors: &[Finding]) -> String {
    let what = match loc {
        Some(loc) => format!("entry {loc} of the {document}"),
        None => format!("the head of the {document}"),
    };
    let first = errors
        .first()
        .map(|f| f.to_string())
        .unwrap_or_else(|| "an error".to_owned());
    match errors.len() {
        0 | 1 => format!("{what} would break a rule: {first}"),
        n => format!("{what} would break {n} rules: {first}, and more"),
    }
}

/// A bitstream whose content differs from what its manifest entry says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bitstream {path}: {mismatch}")]
pub struct FixityError {
    /// The bitstream's name in the package.
    pub path: String,
    /// What differs.
    pub mismatch: FixityMismatch,
}
