//! A directory on disk that a web server serves at a base URI: the one place where a
//! document's URI becomes a file name.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use resourcesync_model::names::MAX_NAME_BYTES;
use resourcesync_model::uri_path::{SegmentError, SegmentRules, percent_decode};
use resourcesync_model::{DocumentHead, MAX_ENTRIES, Uri, UriError};
use resourcesync_package::atomic::{AtomicFile, DirectorySync};
#[cfg(doc)]
use resourcesync_package::{DumpBuilder, Misuse};
use resourcesync_package::{DumpStore, PackageError, PackageFile};
#[cfg(doc)]
use resourcesync_xml::SetReader;
use resourcesync_xml::{SetOptions, SetStore, SetWriter, WriteError};

/// The longest path segment, in bytes after percent-decoding, that [`Directory::path`]
/// accepts: the model's [`MAX_NAME_BYTES`], 255, the `NAME_MAX` of ext4, XFS, APFS and
/// NTFS.
pub const MAX_SEGMENT_LEN: usize = MAX_NAME_BYTES;

/// Appends a name to a URI's path as a segment: the inverse of the model's grammar,
/// kept there beside it.
pub use resourcesync_model::uri_path::push_segment;

/// A directory on disk that a web server publishes at a base URI.
///
/// Every URI under the base names one file under the directory: the base
/// `http://example.com/dataset1/` and the directory `/srv/www/dataset1` put
/// `http://example.com/dataset1/changes/changelist.xml` at
/// `/srv/www/dataset1/changes/changelist.xml`. A URI reaches the file system only through
/// [`path`](Directory::path), which refuses, each with its own [`DirectoryError`], a URI
/// that could name a file outside the directory or a name a server would not serve as
/// written. [`write`](Directory::write) replaces a file atomically.
///
/// Path segments are percent-decoded (`a%20b.xml` is the file `a b.xml`), as web servers
/// map them. Symbolic links inside the directory are followed: they are the publisher's
/// own.
///
/// ```
/// use resourcesync_source::Directory;
///
/// let root = tempfile::tempdir()?;
/// let dir = Directory::new(root.path(), "http://example.com/dataset1/".parse()?)?;
/// let uri = dir.uri("resourcelist-00001.xml")?;
/// assert_eq!(uri.as_str(), "http://example.com/dataset1/resourcelist-00001.xml");
/// let path = dir.write(&uri, b"<urlset/>")?;
/// assert_eq!(path, root.path().join("resourcelist-00001.xml"));
/// assert_eq!(std::fs::read(&path)?, b"<urlset/>");
///
/// // A URI that climbs out of the base names no file.
/// assert!(dir.path(&"http://example.com/dataset1/../secret.xml".parse()?).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Directory {
    root: PathBuf,
    base: Uri,
}

/// Why a base URI, a URI or a name cannot be mapped to a file, or the file not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DirectoryError {
    /// The base is not an `http` or `https` URI whose path ends in `/`, without query or
    /// fragment, with segments [`Directory::path`] would accept.
    #[error("invalid base URI \"{base}\": {reason}")]
    InvalidBase {
        /// The base as given.
        base: Uri,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A relative name that does not make a URI.
    #[error("name \"{name}\" makes no URI: {error}")]
    InvalidName {
        /// The name as given.
        name: String,
        /// Why the joined text is no URI.
        error: UriError,
    },
    /// Another scheme, host or port than the base's, or a path outside the base's.
    #[error("{uri} is outside {base}")]
    OutsideBase {
        /// The URI refused.
        uri: Uri,
        /// The directory's base.
        base: Uri,
    },
    /// A query or fragment, which a static file server ignores or serves elsewhere.
    #[error("{uri} has a query or fragment")]
    QueryOrFragment {
        /// The URI refused.
        uri: Uri,
    },
    /// A `.` or `..` segment.
    #[error("{uri} has the dot segment \"{segment}\"")]
    DotSegment {
        /// The URI refused.
        uri: Uri,
        /// The segment as written.
        segment: String,
    },
    /// A segment that is `.` or `..` once percent-decoded, such as `%2e%2E`.
    #[error("{uri} has the percent-encoded dot segment \"{segment}\"")]
    EncodedDotSegment {
        /// The URI refused.
        uri: Uri,
        /// The segment as written.
        segment: String,
    },
    /// A backslash as written, or a `/` percent-encoded inside a segment (or a `\`,
    /// off Unix): Windows and some servers read either as a separator. On Unix, `%5C` is
    /// a backslash in a file's name.
    #[error("{uri} has a backslash or an encoded separator in \"{segment}\"")]
    Separator {
        /// The URI refused.
        uri: Uri,
        /// The segment as written.
        segment: String,
    },
    /// NUL or another control character (U+0000 to U+001F, U+007F), as written or
    /// percent-encoded.
    #[error("{uri} has the control character U+{code:04X}")]
    ControlCharacter {
        /// The URI refused.
        uri: Uri,
        /// The character's code point.
        code: u32,
    },
    /// A segment that percent-decodes to bytes that are not UTF-8.
    #[error("{uri}: segment \"{segment}\" is not UTF-8 once decoded")]
    NotUtf8 {
        /// The URI refused.
        uri: Uri,
        /// The segment as written.
        segment: String,
    },
    /// An empty segment (`a//b`, or a path ending in `/`): a directory, or a name that
    /// file systems collapse.
    #[error("{uri} has an empty path segment")]
    EmptySegment {
        /// The URI refused.
        uri: Uri,
    },
    /// A segment longer than [`MAX_SEGMENT_LEN`] bytes once decoded.
    #[error("{uri} has a segment of {len} bytes, more than {MAX_SEGMENT_LEN}")]
    SegmentTooLong {
        /// The URI refused.
        uri: Uri,
        /// The decoded segment's length in bytes.
        len: usize,
    },
    /// Creating the directories, writing, syncing or renaming the file failed. No
    /// temporary file is left behind, and a file that was there before is unchanged.
    #[error("writing {}: {source}", crate::Shown(path))]
    Io {
        /// The file being written.
        path: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl Directory {
    /// The directory `root`, served at `base`. The directory need not exist yet:
    /// [`write`](Directory::write) creates it.
    pub fn new(root: impl Into<PathBuf>, base: Uri) -> Result<Directory, DirectoryError> {
        let invalid = |reason| DirectoryError::InvalidBase {
            base: base.clone(),
            reason,
        };
        if !base.is_http() {
            return Err(invalid("not an http or https URI"));
        }
        let s = base.as_str();
        if s.contains(['?', '#']) {
            return Err(invalid("it has a query or fragment"));
        }
        if base.authority().is_none_or(str::is_empty) {
            return Err(invalid("it has no host"));
        }
        let path = base.path();
        if !path.ends_with('/') {
            return Err(invalid(
                "its path does not end in / (the base is a directory's URL: add the /)",
            ));
        }
        if base.to_url().is_err() {
            return Err(invalid("its host or port cannot be parsed"));
        }
        let directory = Directory {
            root: root.into(),
            base: base.clone(),
        };
        // The base's own segments must be ones a file could have: they are compared, not
        // joined, but a `..` or an empty one would make "under the base" ambiguous.
        if path.len() > 1 {
            for segment in path[1..path.len() - 1].split('/') {
                if directory.segment(&base, segment).is_err() {
                    return Err(invalid("its path has a segment no file could have"));
                }
            }
        }
        Ok(directory)
    }

    /// The directory on disk.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The URI the directory is served at, ending in `/`.
    pub fn base(&self) -> &Uri {
        &self.base
    }

    /// The URI of a file under the directory: the base joined with `relative`, a name
    /// such as `resourcelist-00001.xml` or `changes/changelist.xml` written as it stands in
    /// a URI (percent-encoded where need be). A name whose URI [`path`](Directory::path)
    /// would refuse is refused.
    pub fn uri(&self, relative: &str) -> Result<Uri, DirectoryError> {
        let joined = format!("{}{relative}", self.base);
        let uri: Uri = joined
            .parse()
            .map_err(|error| DirectoryError::InvalidName {
                name: relative.to_owned(),
                error,
            })?;
        self.path(&uri)?;
        Ok(uri)
    }

    /// The file a URI under the base names.
    ///
    /// Refused, each with its own error: another scheme, host, port (compared as the
    /// `url` crate normalises them: case-insensitively, a default port as none) or
    /// userinfo, or a path
    /// that does not start with the base's ([`DirectoryError::OutsideBase`]); a query or
    /// fragment; `.` and `..` segments, as written or percent-encoded; backslashes and
    /// encoded separators; control characters, as written or encoded; segments that are
    /// empty, not UTF-8 once decoded, or longer than [`MAX_SEGMENT_LEN`].
    pub fn path(&self, uri: &Uri) -> Result<PathBuf, DirectoryError> {
        let s = uri.as_str();
        // Control characters first: they would make every later message unreadable.
        if let Some(b) = s.bytes().find(|&b| b < 0x20 || b == 0x7F) {
            return Err(DirectoryError::ControlCharacter {
                uri: uri.clone(),
                code: u32::from(b),
            });
        }
        if s.contains(['?', '#']) {
            return Err(DirectoryError::QueryOrFragment { uri: uri.clone() });
        }
        let outside = || DirectoryError::OutsideBase {
            uri: uri.clone(),
            base: self.base.clone(),
        };
        let same_origin = match (uri.to_url(), self.base.to_url()) {
            (Ok(a), Ok(b)) => a.origin() == b.origin(),
            _ => false,
        };
        // A userinfo the base does not have is refused too: `http://example.org@example.com/`
        // reads as another host to whoever reads it.
        let same_origin = same_origin && uri.userinfo() == self.base.userinfo();
        if !same_origin || uri.authority().is_none() {
            return Err(outside());
        }
        // The path as written: dot segments must be seen before anything resolves them.
        // Its first segments must be the base's, compared decoded (`%7E` is `~`).
        let path = uri.path();
        let mut segments = path.strip_prefix('/').ok_or_else(outside)?.split('/');
        for base_segment in self.base_segments() {
            let same = segments
                .next()
                .is_some_and(|segment| percent_decode(segment) == percent_decode(base_segment));
            if !same {
                return Err(outside());
            }
        }
        let mut file = self.root.clone();
        for segment in segments {
            file.push(self.segment(uri, segment)?);
        }
        if file == self.root {
            // The base itself: a directory, not a file.
            return Err(DirectoryError::EmptySegment { uri: uri.clone() });
        }
        Ok(file)
    }

    /// The base path's segments, as written, without the empty one after its last `/`.
    fn base_segments(&self) -> impl Iterator<Item = &str> {
        let path = self.base.path();
        path.split('/').filter(|segment| !segment.is_empty())
    }

    /// One path segment, decoded, or why it names no file: the model's grammar
    /// ([`SegmentRules::NAMES`]), names no longer than [`MAX_SEGMENT_LEN`]. A `\` written
    /// as `%5C` names a file with a backslash in its name where the system does not read
    /// it as a separator (Unix); where it does, it is refused.
    fn segment(&self, uri: &Uri, segment: &str) -> Result<String, DirectoryError> {
        let uri = || uri.clone();
        let rules = SegmentRules::NAMES.with_max_len(MAX_SEGMENT_LEN);
        let name = rules.name(segment).map_err(|e| match e {
            SegmentError::Empty => DirectoryError::EmptySegment { uri: uri() },
            SegmentError::Dot { segment } => DirectoryError::DotSegment {
                uri: uri(),
                segment,
            },
            SegmentError::EncodedDot { segment } => DirectoryError::EncodedDotSegment {
                uri: uri(),
                segment,
            },
            SegmentError::EncodedSlash { segment } | SegmentError::Backslash { segment } => {
                DirectoryError::Separator {
                    uri: uri(),
                    segment,
                }
            }
            SegmentError::ControlCharacter { code, .. } => DirectoryError::ControlCharacter {
                uri: uri(),
                code: u32::from(code),
            },
            SegmentError::NotUtf8 { segment } => DirectoryError::NotUtf8 {
                uri: uri(),
                segment,
            },
            SegmentError::TooLong { len, .. } => DirectoryError::SegmentTooLong { uri: uri(), len },
        })?;
        Ok(name.into_owned())
    }

    /// Opens the file `uri` names, for reading (through [`path`](Directory::path)): what a
    /// [`SetReader`]'s fetch function over a directory needs.
    ///
    /// ```
    /// use resourcesync_source::Directory;
    ///
    /// let root = tempfile::tempdir()?;
    /// let dir = Directory::new(root.path(), "http://example.com/".parse()?)?;
    /// let uri = dir.uri("a.xml")?;
    /// dir.write(&uri, b"<urlset/>")?;
    /// let mut text = String::new();
    /// std::io::Read::read_to_string(&mut dir.open(&uri)?, &mut text)?;
    /// assert_eq!(text, "<urlset/>");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn open(&self, uri: &Uri) -> Result<io::BufReader<fs::File>, DirectoryError> {
        let path = self.path(uri)?;
        match fs::File::open(&path) {
            Ok(file) => Ok(io::BufReader::new(file)),
            Err(source) => Err(DirectoryError::Io { path, source }),
        }
    }

    /// Writes `bytes` as the file `uri` names, atomically: into a temporary file in the
    /// target's directory, synced to disk, then renamed over the target, so a web server
    /// serves the old file or the new one, never part of one. Creates the directories on
    /// the way. On failure no temporary file is left behind and a file that was there
    /// before is unchanged. Returns the file's path.
    pub fn write(&self, uri: &Uri, bytes: &[u8]) -> Result<PathBuf, DirectoryError> {
        self.write_pieces(uri, &[bytes])
    }

    /// Writes the file `uri` names as [`write`](Directory::write) does, its bytes given in
    /// `pieces`, one after the other: a large document made of a head, a body and an end
    /// is written without being joined into one buffer first.
    ///
    /// ```
    /// use resourcesync_source::Directory;
    ///
    /// let root = tempfile::tempdir()?;
    /// let dir = Directory::new(root.path(), "http://example.com/".parse()?)?;
    /// let uri = dir.uri("a.xml")?;
    /// let path = dir.write_pieces(&uri, &[b"<urlset>", b"</urlset>"])?;
    /// assert_eq!(std::fs::read(path)?, b"<urlset></urlset>");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_pieces(&self, uri: &Uri, pieces: &[&[u8]]) -> Result<PathBuf, DirectoryError> {
        let path = self.path(uri)?;
        let io = |source| DirectoryError::Io {
            path: path.clone(),
            source,
        };
        write_file(&path, pieces, true).map_err(io)?;
        Ok(path)
    }
}

/// Whether a regular file is at `path`, as [`read_file`] with `own` set finds it: `false` for
/// nothing there, and the error `read_file` would give for a symbolic link (not followed,
/// even one to nothing: a link planted where a document goes is not the document) or for
/// what is not a regular file. An answer of `true` for a link had a run leave the link
/// where it would have written its document (a dangling one at the notification topic,
/// say), and `false` had it replace what it cannot tell is its own.
pub(crate) fn file_exists(path: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    let meta = fs::symlink_metadata(path);
    // Elsewhere `read_file` follows links, as the system opens them.
    #[cfg(not(unix))]
    let meta = fs::metadata(path);
    match meta {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(meta) if meta.file_type().is_symlink() => Err(not_followed()),
        Ok(_) => Err(not_regular()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// The error for a symbolic link among the publisher's files, which is not followed.
fn not_followed() -> io::Error {
    io::Error::other("a symbolic link the publisher did not make: not followed")
}

/// The error for what is not a regular file where a document is read.
fn not_regular() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "not a regular file")
}

/// Reads the whole regular file at `path`, which the publisher wrote (a document, its
/// state): with `own`, a symbolic link there is not followed (`ELOOP`, an error naming
/// the link), since a link planted among the publisher's files would have it read, and
/// publish, what the link leads to. Whatever is there, only a regular file is read
/// (opened without waiting, so a FIFO is refused at once rather than waited on for ever;
/// a device, `/dev/zero`, is refused rather than read without end), and only as many
/// bytes as its size when opened.
pub(crate) fn read_file(path: &Path, own: bool) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    read_file_into(path, own, &mut bytes)?;
    Ok(bytes)
}

/// [`read_file`] into the end of `buffer` (which keeps its allocation); the bytes read.
pub(crate) fn read_file_into(path: &Path, own: bool, buffer: &mut Vec<u8>) -> io::Result<usize> {
    use std::io::Read;
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        let nofollow = if own { libc::O_NOFOLLOW } else { 0 };
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | nofollow);
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        let looped = e.raw_os_error() == Some(libc::ELOOP);
        #[cfg(not(unix))]
        let looped = false;
        if looped { not_followed() } else { e }
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_regular());
    }
    buffer.reserve(usize::try_from(meta.len()).unwrap_or(0));
    file.take(meta.len()).read_to_end(buffer)
}

/// Writes `path` whole from `pieces`, the directories on the way created: an
/// [`AtomicFile`] beside it, synced, renamed over it. The old file, if any, is replaced,
/// never changed in place: it may be a hard link another generation shares. With
/// `sync_parent`, the rename is made durable too (the caller syncs the directories itself
/// otherwise). On failure no temporary file is left.
pub(crate) fn write_file(path: &Path, pieces: &[&[u8]], sync_parent: bool) -> io::Result<()> {
    let parent = path
        .parent()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "a file needs a directory"))?;
    fs::create_dir_all(parent)?;
    let mut temp = AtomicFile::beside(path)?;
    write_all_vectored(temp.as_file_mut(), pieces)?;
    temp.replace(match sync_parent {
        true => DirectorySync::Now,
        false => DirectorySync::ByCaller,
    })?;
    Ok(())
}

/// Writes `pieces` one after the other, as many to a system call as it takes (`writev`): a
/// Resource List part taken from the last run's is a thousand stretches, which a call
/// each would cost a thousand calls. (`Write::write_all_vectored` is not stable.)
fn write_all_vectored(file: &mut fs::File, pieces: &[&[u8]]) -> io::Result<()> {
    let mut slices: Vec<io::IoSlice<'_>> = pieces
        .iter()
        .filter(|piece| !piece.is_empty())
        .map(|piece| io::IoSlice::new(piece))
        .collect();
    let mut slices = &mut slices[..];
    while !slices.is_empty() {
        match file.write_vectored(slices) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut slices, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

impl From<DirectoryError> for io::Error {
    /// An IO error keeps its kind; a URI the directory refuses is `InvalidInput`, so that a
    /// [`SetReader`] fetch function can use `?` on [`Directory::open`].
    fn from(e: DirectoryError) -> io::Error {
        let kind = match &e {
            DirectoryError::Io { source, .. } => source.kind(),
            _ => io::ErrorKind::InvalidInput,
        };
        io::Error::new(kind, e)
    }
}

impl DirectoryError {
    /// This error as a [`SetStore`]'s: kept whole, for a caller to downcast.
    pub(crate) fn into_write(self) -> WriteError {
        WriteError::Store(Box::new(self))
    }
}

/// A set's documents as files of a [`Directory`]: the parts named `<stem>-00001.xml`,
/// `<stem>-00002.xml`, … beside the set's own `<stem>.xml` (`.xml.gz` for compressed
/// ones), each written atomically ([`Directory::write`]). Made with the [`SetWriter`] that
/// writes into it by [`DirectoryStore::set_writer`].
///
/// ```
/// use resourcesync_model::{DocumentHead, DocumentKind, Entry, Link, Relation};
/// use resourcesync_source::{Directory, DirectoryStore};
/// use resourcesync_xml::{Gzip, SetLimits, SetOptions, read_document};
///
/// let head = DocumentHead::of_kind(DocumentKind::ResourceList)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/capabilitylist.xml".parse()?));
/// let root = tempfile::tempdir()?;
/// let dir = Directory::new(root.path(), "http://example.com/".parse()?)?;
/// let options = SetOptions::default()
///     .with_limits(SetLimits::new(2, 52_428_800))
///     .with_gzip(Gzip::Parts);
/// let mut set = DirectoryStore::set_writer(head, dir, "resourcelist.xml", options)?;
/// for i in 0..3 {
///     set.write_entry(&Entry::new(format!("http://example.com/res{i}").parse()?))?;
/// }
/// let names: Vec<String> = set.finish()?.output.documents.iter().map(|u| u.to_string()).collect();
/// assert_eq!(names, [
///     "http://example.com/resourcelist-00001.xml.gz",
///     "http://example.com/resourcelist-00002.xml.gz",
///     "http://example.com/resourcelist.xml",
/// ]);
/// let gz = std::fs::read(root.path().join("resourcelist-00002.xml.gz"))?;
/// assert_eq!(gz[..2], [0x1f, 0x8b]);
/// let (part, _) = read_document(&gz)?;
/// assert_eq!(part.entries.len(), 1);
/// let (index, findings) = read_document(&std::fs::read(root.path().join("resourcelist.xml"))?)?;
/// assert_eq!(index.entries.len(), 2);
/// assert!(findings.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct DirectoryStore {
    directory: Directory,
    stem: String,
    part_suffix: &'static str,
}

impl DirectoryStore {
    /// Starts a set whose documents are files of `directory`: the set's own document
    /// (the index, or the one document if everything fits) is `name`, which ends in
    /// `.xml` (a `.gz` is added when it is compressed), and its parts are named after it,
    /// `resourcelist.xml` having the parts `resourcelist-00001.xml`, … (`.xml.gz` when
    /// compressed). A name that does not end in `.xml`, or of which no part name under the
    /// base can be made, is refused now; otherwise as [`SetWriter::with_store`].
    pub fn set_writer(
        head: DocumentHead,
        directory: Directory,
        name: &str,
        options: SetOptions,
    ) -> Result<SetWriter<DirectoryStore>, WriteError> {
        let stem = name
            .strip_suffix(".xml.gz")
            .or_else(|| name.strip_suffix(".xml"))
            .filter(|stem| !stem.is_empty() && !stem.ends_with('/'))
            .ok_or_else(|| {
                WriteError::Invalid(format!("set name \"{name}\" does not end in .xml"))
            })?;
        let suffix = |gzip| if gzip { ".xml.gz" } else { ".xml" };
        let uri = directory
            .uri(&format!("{stem}{}", suffix(options.gzip_set())))
            .map_err(DirectoryError::into_write)?;
        let mut store = DirectoryStore {
            directory,
            stem: stem.to_owned(),
            part_suffix: suffix(options.gzip_parts()),
        };
        // A stem no part name can be made of fails now, not after the first part. The
        // largest number a part can have makes the longest name.
        store.part_uri(MAX_ENTRIES as usize)?;
        SetWriter::with_store(head, uri, store, options)
    }

    /// The directory.
    pub fn directory(&self) -> &Directory {
        &self.directory
    }
}

impl SetStore for DirectoryStore {
    /// `{stem}-00001.xml`, … under the directory.
    fn part_uri(&mut self, number: usize) -> Result<Uri, WriteError> {
        // Five digits: an index holds at most 50,000 parts, so names sort in order.
        let name = format!("{}-{number:05}{}", self.stem, self.part_suffix);
        self.directory
            .uri(&name)
            .map_err(DirectoryError::into_write)
    }

    /// The file `uri` names, written atomically.
    fn store(&mut self, uri: &Uri, document: &[u8]) -> Result<(), WriteError> {
        self.directory
            .write(uri, document)
            .map_err(DirectoryError::into_write)?;
        Ok(())
    }

    /// The file `uri` names, written atomically from its pieces.
    fn store_pieces(&mut self, uri: &Uri, pieces: &[&[u8]]) -> Result<(), WriteError> {
        self.directory
            .write_pieces(uri, pieces)
            .map_err(DirectoryError::into_write)?;
        Ok(())
    }
}

/// A dump's files as files of the directory ([`DumpBuilder::in_store`]): each package is
/// written beside its file and moved into place when complete, never over a file that
/// exists ([`Misuse::TargetExists`]), as [`PackageFile`] does; manifest copies and the dump
/// document are written atomically ([`Directory::write`]). Errors of the directory are
/// [`PackageError::Store`], holding a [`DirectoryError`].
///
/// ```
/// use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};
/// use resourcesync_package::{Bitstream, DumpBuilder, DumpLimits, Package, PackageOptions};
/// use resourcesync_source::Directory;
///
/// let root = tempfile::tempdir()?;
/// let directory = Directory::new(root.path(), "http://example.com/dataset1/".parse()?)?;
/// let head = DocumentHead::of_kind(DocumentKind::ResourceDump)
///     .with_at("2013-01-03T09:00:00Z".parse()?)
///     .with_link(Link::new(Relation::Up, "http://example.com/dataset1/capabilitylist.xml".parse()?));
/// let mut dump = DumpBuilder::in_store(
///     head, &directory, "resourcedump", DumpLimits::new(u64::MAX, 1), PackageOptions::default(),
/// )?;
/// for i in 1..=2 {
///     let b = Bitstream::new(format!("http://example.com/res{i}").parse()?, format!("/res{i}").into());
///     dump.add(b, &b"content"[..])?;
/// }
/// let dump = dump.finish()?;
/// let uri = dump.written.ok_or("no Resource Dump written")?;
/// assert_eq!(uri.as_str(), "http://example.com/dataset1/resourcedump.xml");
/// assert_eq!(directory.path(&uri)?, root.path().join("resourcedump.xml"));
/// let package = &dump.document.entries[1];
/// assert_eq!(package.loc.as_str(), "http://example.com/dataset1/resourcedump-00002.zip");
/// assert_eq!(package.links[0].href.as_str(), "http://example.com/dataset1/resourcedump-00002-manifest.xml");
/// Package::open(directory.path(&package.loc)?)?.verify()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl DumpStore for &Directory {
    type Package = PackageFile;

    /// The URI `name` has under the base.
    fn uri(&self, name: &str) -> Result<Uri, PackageError> {
        Directory::uri(self, name).map_err(PackageError::store)
    }

    /// A new file beside the one `uri` names; refused when that one exists.
    fn create_package(&mut self, uri: &Uri) -> Result<PackageFile, PackageError> {
        PackageFile::create_new(&self.path(uri).map_err(PackageError::store)?)
    }

    /// The package moved into place, never over an existing file.
    fn persist_package(&mut self, _uri: &Uri, package: PackageFile) -> Result<(), PackageError> {
        // The file's target is the path `create_package` made of the same URI.
        package.persist().map(drop)
    }

    /// The file `uri` names, written atomically.
    fn store_document(&mut self, uri: &Uri, document: &[u8]) -> Result<(), PackageError> {
        self.write(uri, document).map_err(PackageError::store)?;
        Ok(())
    }
}
