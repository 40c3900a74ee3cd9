//! The one place where a resource URI becomes a relative path under a destination
//! directory, and the check that no two URIs of a sync share a file.
//!
//! A Source chooses the URIs; a Destination writes files. Every create, update and delete
//! a driver performs goes through [`PathMapper::local_path`], so a URI that climbs out of
//! the destination (`..`, `%2e%2e`, `%5c`), names a device (`CON`, `NUL.txt`), or would be
//! truncated by a file system (`a.`, 300-byte names) is a typed error before any file is
//! touched. [`PathSet`] then catches the collisions one mapping cannot see alone: two URIs
//! whose paths differ only in case or Unicode normalization, which one file holds on
//! macOS and Windows, and a file whose name another URI needs as a directory.
//!
//! # The mapping
//! It keys on the authority (host and port, as the `url` crate normalizes them: lower-case
//! host, IDNA, default port dropped) and the path as written, never the scheme:
//! `http://example.com/a` and `https://example.com/a` are one file.
//!
//! - **Base.** A URI on the base's authority under the base's path prefix (the base's path
//!   up to its last `/`) maps to its remaining segments: under base
//!   `http://example.com/data/`, `http://example.com/data/a/b.txt` is `a/b.txt`. One on
//!   that authority outside the prefix is [`LocalPathError::OutsideBase`].
//! - **Other authorities**, when the caller allows them ([`PathMapper::with_other_authorities`]),
//!   map under a directory named `@` and the authority, with their whole path:
//!   `http://cdn.example.org:8080/x` is `@cdn.example.org%3A8080/x`. No segment of the
//!   base's own tree starts with `@` (see below), so the two never meet.
//! - **Segments** are percent-decoded. The bytes are then written as UTF-8 where they are
//!   valid UTF-8, except `%`, `@` and the characters Windows forbids in names
//!   (`:*?"<>|`) and bidirectional formatting characters, which are written as `%XX`
//!   (upper-case hex), as are bytes that are not UTF-8. Percent-decoding the name gives the
//!   segment's bytes back, so distinct segments get distinct names; `/a%3Ab` and `/a:b`,
//!   which an HTTP server decodes to the same path, share a name.
//! - **A trailing `/`** (a directory URI) maps to the name [`INDEX_NAME`], `%index`, inside
//!   the directory: `http://example.com/a/` is `a/%index`. The name cannot come from a
//!   segment (a segment writes `%` only before two hex digits), so it never collides with a
//!   resource called `index.html`.
//! - **A query** is never dropped: the last name gets `@` and the query. The query is kept
//!   as written, since `?a=1%26b` and `?a=1&b` are different requests: escapes of
//!   unreserved characters are decoded (RFC 3986, section 6.2.2.2) and every other escape
//!   keeps its `%` written as `%25`; `/`, `%`, `@` and the characters Windows forbids are
//!   escaped. `http://example.com/search?q=a%20b` is `search@q=a%2520b`.
//! - **A fragment** is dropped: it is never sent to the server, so `#x` and `#y` fetch the
//!   same bytes. [`PathSet`] reports two such URIs as [`Collision::SameName`].
//!
//! One limit is in the file system, not the mapping: a resource `http://example.com/a` and
//! a resource `http://example.com/a/b` cannot both be files, since `a` would have to be a
//! file and a directory. [`PathSet`] reports it as [`Collision::FileAsDirectory`]; which
//! of the two to keep is the caller's decision.
//!
//! # What is refused
//! Each is a [`LocalPathError`] variant naming the URI: empty segments (`a//b`), `.` and
//! `..` segments, their percent-encoded forms (`%2e%2E`, `.%2e`), backslashes (`%5c`; a raw
//! one is not a [`Uri`]) where Windows's rules apply or off Unix (on a POSIX file system a
//! backslash is a character of a name), control characters raw or encoded (`%00`, `%0a`, U+0085), an
//! encoded `/` (`%2f`) inside a segment, segments that start with a drive letter (`C:`),
//! names Windows reserves for devices (`CON`, `nul.txt`, `COM1`, `LPT¹`, `CONIN$`), names
//! ending in a dot or a space (Windows drops them), names over [`MAX_COMPONENT_BYTES`] and
//! paths over the mapper's limit.
//!
//! # Deviation
//! Windows 8.3 short names (`PROGRA~1`) are not refused: whether one aliases a long name
//! depends on the directory's contents, which a pure function cannot see.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};

use resourcesync_model::Uri;
use resourcesync_model::names::{MAX_NAME_BYTES, fold, is_windows_device_name, nfc};
use resourcesync_model::uri_path::{SegmentError, SegmentRules};

/// The longest name (one path component) a mapping makes, in bytes: the model's
/// [`MAX_NAME_BYTES`], which every file system holds.
pub const MAX_COMPONENT_BYTES: usize = MAX_NAME_BYTES;

/// The longest relative path a [`PathMapper`] makes unless told otherwise, in bytes. Far
/// below Linux's 4,096 so that the destination directory fits in front of it; Windows
/// without long-path support (260 in all) needs a smaller limit.
pub const DEFAULT_MAX_PATH_BYTES: usize = 1024;

/// The name a directory URI (one ending in `/`) maps to, inside that directory. A segment
/// never maps to it: a mapped segment has `%` only before two upper-case hex digits.
pub const INDEX_NAME: &str = "%index";

/// Why a URI has no local path. Every variant carries the URI as written.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LocalPathError {
    /// Not `http` or `https`: nothing else is fetched into files.
    #[error("{uri:?} is not an http or https URI")]
    NotHttp {
        /// The URI.
        uri: String,
    },
    /// The `url` crate cannot parse it (a host it refuses, a port over 65535).
    #[error("{uri:?} cannot be parsed: {reason}")]
    Unparsable {
        /// The URI.
        uri: String,
        /// The `url` crate's message.
        reason: String,
    },
    /// On another authority than the base's, and the mapper does not allow others.
    #[error("{uri:?} is on {authority:?}, not on the base's authority")]
    OtherAuthority {
        /// The URI.
        uri: String,
        /// Its authority, normalized.
        authority: String,
    },
    /// On the base's authority, but not under the base's path prefix.
    #[error("{uri:?} is not under the base {base:?}")]
    OutsideBase {
        /// The URI.
        uri: String,
        /// The base the mapper was made with.
        base: String,
    },
    /// An empty segment (`a//b`, `//a`), which no file system can name.
    #[error("{uri:?} has an empty segment")]
    EmptySegment {
        /// The URI.
        uri: String,
    },
    /// A `.` or `..` segment.
    #[error("{uri:?} has the dot segment {segment:?}")]
    DotSegment {
        /// The URI.
        uri: String,
        /// The segment as written.
        segment: String,
    },
    /// A segment that decodes to `.` or `..` (`%2e%2E`, `.%2e`).
    #[error("{uri:?} has the percent-encoded dot segment {segment:?}")]
    EncodedDotSegment {
        /// The URI.
        uri: String,
        /// The segment as written.
        segment: String,
    },
    /// A backslash (`%5c`), which Windows takes as a separator (refused under
    /// [`FileSystem::windows_names`], and on every system but Unix).
    #[error("{uri:?} has a backslash")]
    Backslash {
        /// The URI.
        uri: String,
    },
    /// A control character, raw (U+0085) or encoded (`%00`, `%0A`, `%7F`, `%C2%85`).
    #[error("{uri:?} has a control character")]
    ControlCharacter {
        /// The URI.
        uri: String,
    },
    /// An encoded `/` (`%2f`) inside a segment: decoding it would add a directory.
    #[error("{uri:?} has an encoded slash inside a segment")]
    EncodedSlash {
        /// The URI.
        uri: String,
    },
    /// A segment that starts with a drive letter (`C:`, `c%3A`).
    #[error("{uri:?} has the drive-letter segment {segment:?}")]
    DriveLetter {
        /// The URI.
        uri: String,
        /// The segment as written.
        segment: String,
    },
    /// A name Windows reserves for a device, with or without an extension (`CON`,
    /// `nul.txt`, `COM1`, `LPT¹`, `CONIN$`).
    #[error("{uri:?} maps to the reserved name {name:?}")]
    ReservedName {
        /// The URI.
        uri: String,
        /// The name it maps to.
        name: String,
    },
    /// A path whose first name is one the destination keeps for itself (see
    /// [`PathMapper::with_kept_name`]), compared as a case-insensitive file system would.
    #[error("{uri:?} maps under {name:?}, which the destination keeps for itself")]
    KeptName {
        /// The URI.
        uri: String,
        /// The kept name.
        name: String,
    },
    /// A name ending in `.` or a space, which Windows silently drops, so that `a.` and `a`
    /// would be one file.
    #[error("{uri:?} maps to {name:?}, which ends in a dot or space")]
    TrailingDotOrSpace {
        /// The URI.
        uri: String,
        /// The name it maps to.
        name: String,
    },
    /// A name longer than [`MAX_COMPONENT_BYTES`].
    #[error("{uri:?} maps to a name of {length} bytes, more than {MAX_COMPONENT_BYTES}")]
    ComponentTooLong {
        /// The URI.
        uri: String,
        /// The name's length in bytes.
        length: usize,
    },
    /// A path longer than the mapper's limit.
    #[error("{uri:?} maps to a path of {length} bytes, more than {max}")]
    PathTooLong {
        /// The URI.
        uri: String,
        /// The path's length in bytes.
        length: usize,
        /// The mapper's limit.
        max: usize,
    },
}

/// A relative path made by [`PathMapper::local_path`]: one or more names joined by `/`,
/// none of them empty, `.`, `..`, or holding a separator, so it stays below any directory
/// it is joined to.
///
/// ```
/// use resourcesync_client::local_path::PathMapper;
/// use std::path::{Component, Path};
///
/// let mapper = PathMapper::new(&"http://example.com/".parse()?)?;
/// let path = mapper.local_path(&"http://example.com/a/b.txt".parse()?)?;
/// assert_eq!(path.as_str(), "a/b.txt");
/// assert_eq!(path.to_path_buf(), Path::new("a").join("b.txt"));
/// assert!(path.as_path().components().all(|c| matches!(c, Component::Normal(_))));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalPath(String);

impl serde::Serialize for LocalPath {
    /// As its text, `/` between names.
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl LocalPath {
    /// The path with `/` between names.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as a [`Path`]: `/` separates names on every platform Rust supports,
    /// Windows included.
    pub fn as_path(&self) -> &Path {
        Path::new(&self.0)
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// The path for this platform, built name by name.
    pub fn to_path_buf(&self) -> PathBuf {
        self.names().collect()
    }
}

impl AsRef<Path> for LocalPath {
    fn as_ref(&self) -> &Path {
        self.as_path()
    }
}

impl fmt::Display for LocalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Maps the URIs of one Source to relative local paths: the pure function every driver
/// uses before it creates, updates or deletes a file. See the [module](self) for the
/// mapping and what it refuses.
///
/// ```
/// use resourcesync_client::local_path::{LocalPathError, PathMapper};
///
/// let base = "http://example.com/data/capabilitylist.xml".parse()?;
/// let mapper = PathMapper::new(&base)?;
/// let map = |uri: &str| mapper.local_path(&uri.parse().unwrap());
///
/// assert_eq!(map("http://EXAMPLE.com:80/data/a/b.txt")?.as_str(), "a/b.txt");
/// assert_eq!(map("http://example.com/data/caf%C3%A9")?.as_str(), "café");
/// assert_eq!(map("http://example.com/data/dir/")?.as_str(), "dir/%index");
/// assert_eq!(map("http://example.com/data/s?q=1&r=%2F")?.as_str(), "s@q=1&r=%252F");
/// assert!(matches!(map("http://example.com/data/%2e%2e/x"), Err(LocalPathError::EncodedDotSegment { .. })));
/// assert!(matches!(map("http://example.com/other"), Err(LocalPathError::OutsideBase { .. })));
/// assert!(matches!(map("http://cdn.example.org/x"), Err(LocalPathError::OtherAuthority { .. })));
///
/// let mapper = mapper.with_other_authorities(true);
/// assert_eq!(mapper.local_path(&"https://cdn.example.org/x".parse()?)?.as_str(), "@cdn.example.org/x");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct PathMapper {
    base: String,
    authority: String,
    /// The base's scheme and authority as written: a URI with both has the base's
    /// `authority`, without parsing it again (the `url` crate's parse of a whole URI,
    /// IDNA included, was a fifth of a run's main thread).
    written: crate::policy::Written,
    prefix: Vec<Vec<u8>>,
    other_authorities: bool,
    max_path_bytes: usize,
    /// First names no resource may take, folded.
    kept: Vec<String>,
    /// The rules of names of the file system the paths are for.
    file_system: FileSystem,
}

impl PathMapper {
    /// A mapper for the Source at `base`: its authority, and its path up to the last `/`
    /// as the prefix every mapped URI on that authority must be under. Other authorities
    /// are refused and paths are limited to [`DEFAULT_MAX_PATH_BYTES`].
    ///
    /// Fails when `base` is not http or https, or its prefix has a segment that
    /// [`local_path`](Self::local_path) would refuse.
    pub fn new(base: &Uri) -> Result<PathMapper, LocalPathError> {
        let parts = Parts::of(base)?;
        let (dirs, _) = parts
            .segments
            .split_at(parts.segments.len().saturating_sub(1));
        let prefix = dirs
            .iter()
            .map(|s| decode_segment(base, s, FileSystem::PORTABLE.windows_names))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(PathMapper {
            base: base.as_str().to_owned(),
            written: crate::policy::Written::of(base),
            authority: parts.authority,
            prefix,
            other_authorities: false,
            max_path_bytes: DEFAULT_MAX_PATH_BYTES,
            kept: Vec::new(),
            file_system: FileSystem::PORTABLE,
        })
    }

    /// Maps for a file system with these rules ([`FileSystem::PORTABLE`] unless told
    /// otherwise): a name it can hold is not refused, nor escaped, for the sake of
    /// another. A destination directory knows its own (see the CLI's
    /// `DirectoryDestination`, which finds out by trying).
    #[must_use]
    pub fn with_file_system(mut self, file_system: FileSystem) -> PathMapper {
        self.file_system = file_system;
        self
    }

    /// The rules of names this mapper maps for.
    pub fn file_system(&self) -> FileSystem {
        self.file_system
    }

    /// Whether URIs on other authorities map (under `@` and their authority) or are
    /// refused. Which authorities a client may fetch from at all is the
    /// [`Policy`](crate::policy::Policy)'s to say; this only keeps their files apart.
    #[must_use]
    pub fn with_other_authorities(mut self, allowed: bool) -> PathMapper {
        self.other_authorities = allowed;
        self
    }

    /// Keeps the top-level name `name` for the destination's own use (a driver's state,
    /// its temporary files): no resource maps to it or under it, in any case or
    /// normalization, so that no Source can overwrite or delete what is kept there.
    #[must_use]
    pub fn with_kept_name(mut self, name: &str) -> PathMapper {
        self.kept.push(fold(name).into_owned());
        self
    }

    /// The longest relative path to make, in bytes.
    #[must_use]
    pub fn with_max_path_bytes(mut self, max: usize) -> PathMapper {
        self.max_path_bytes = max;
        self
    }

    /// The relative local path of `uri`, or why it has none. Pure: the same mapper and URI
    /// always give the same answer, and nothing is read or written.
    pub fn local_path(&self, uri: &Uri) -> Result<LocalPath, LocalPathError> {
        let parts = if self.written.matches(uri) {
            // The same text under the same scheme normalizes to the same authority.
            Parts::with_authority(uri, self.authority.clone())
        } else {
            Parts::of(uri)?
        };
        let (last, dirs) =
            parts
                .segments
                .split_last()
                .ok_or_else(|| LocalPathError::EmptySegment {
                    uri: uri.as_str().to_owned(),
                })?;
        let mut decoded = dirs
            .iter()
            .map(|s| decode_segment(uri, s, self.file_system.windows_names))
            .collect::<Result<Vec<_>, _>>()?;
        let windows = self.file_system.windows_names;
        let mut names = Vec::with_capacity(decoded.len() + 2);
        if parts.authority == self.authority {
            if !decoded.starts_with(&self.prefix) {
                return Err(LocalPathError::OutsideBase {
                    uri: uri.as_str().to_owned(),
                    base: self.base.clone(),
                });
            }
            decoded.drain(..self.prefix.len());
        } else if self.other_authorities {
            names.push(format!(
                "@{}",
                render(uri, parts.authority.as_bytes(), false, windows)?
            ));
        } else {
            return Err(LocalPathError::OtherAuthority {
                uri: uri.as_str().to_owned(),
                authority: parts.authority,
            });
        }
        for segment in &decoded {
            names.push(render(uri, segment, false, windows)?);
        }
        let mut name = if last.is_empty() {
            INDEX_NAME.to_owned()
        } else {
            render(uri, &decode_segment(uri, last, windows)?, false, windows)?
        };
        if let Some(query) = parts.query {
            name.push('@');
            name.push_str(&render(uri, &normalize_query(uri, query)?, true, windows)?);
        }
        names.push(name);
        for name in &names {
            check_name(uri, name, windows)?;
        }
        if let Some(kept) = names.first().and_then(|first| {
            let first = fold(first);
            self.kept.iter().find(|k| **k == *first)
        }) {
            return Err(LocalPathError::KeptName {
                uri: uri.as_str().to_owned(),
                name: kept.clone(),
            });
        }
        let path = names.join("/");
        if path.len() > self.max_path_bytes {
            return Err(LocalPathError::PathTooLong {
                uri: uri.as_str().to_owned(),
                length: path.len(),
                max: self.max_path_bytes,
            });
        }
        Ok(LocalPath(path))
    }
}

/// A URI cut where the mapping needs it.
struct Parts<'a> {
    /// `host` or `host:port`, normalized by the `url` crate.
    authority: String,
    /// The path's segments as written; the first `/` is not a separator, so `/a/` is
    /// `["a", ""]` and an empty path is `[""]`.
    segments: Vec<&'a str>,
    /// The query as written, without `?`.
    query: Option<&'a str>,
}

impl<'a> Parts<'a> {
    fn of(uri: &'a Uri) -> Result<Parts<'a>, LocalPathError> {
        if !uri.is_http() {
            return Err(LocalPathError::NotHttp {
                uri: uri.as_str().to_owned(),
            });
        }
        let url = uri.to_url().map_err(|e| LocalPathError::Unparsable {
            uri: uri.as_str().to_owned(),
            reason: e.reason,
        })?;
        let host = url.host_str().unwrap_or_default();
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Ok(Parts::with_authority(uri, authority))
    }

    /// The parts of `uri`, whose authority normalizes to `authority`.
    fn with_authority(uri: &'a Uri, authority: String) -> Parts<'a> {
        // The path as written, not the `url` crate's: it resolves `..` and `%2e%2e` and
        // turns `\` into `/`, which would hide exactly what must be refused.
        let path = uri.path();
        let path = path.strip_prefix('/').unwrap_or(path);
        Parts {
            authority,
            segments: path.split('/').collect(),
            query: uri.query(),
        }
    }
}

/// The bytes of one segment, percent-decoded, or why the segment cannot be a name: the
/// model's grammar ([`SegmentRules`]), with `%5C` a separator under Windows's rules and off
/// Unix (on a POSIX file system of a Unix host a backslash is a character of a name, and
/// `resourcesync build` publishes such names as `%5C`), and drive letters refused under
/// Windows's rules.
fn decode_segment(uri: &Uri, segment: &str, windows: bool) -> Result<Vec<u8>, LocalPathError> {
    let err_uri = || uri.as_str().to_owned();
    let rules = SegmentRules::NAMES.with_backslash_separator(windows || cfg!(not(unix)));
    let bytes = rules.bytes(segment).map_err(|e| match e {
        SegmentError::Empty => LocalPathError::EmptySegment { uri: err_uri() },
        SegmentError::Dot { segment } => LocalPathError::DotSegment {
            uri: err_uri(),
            segment,
        },
        SegmentError::EncodedDot { segment } => LocalPathError::EncodedDotSegment {
            uri: err_uri(),
            segment,
        },
        SegmentError::EncodedSlash { .. } => LocalPathError::EncodedSlash { uri: err_uri() },
        SegmentError::Backslash { .. } => LocalPathError::Backslash { uri: err_uri() },
        SegmentError::ControlCharacter { .. } => {
            LocalPathError::ControlCharacter { uri: err_uri() }
        }
        // `bytes` limits no length (the names are limited once written, by
        // `check_name`) and takes any bytes: neither is met here.
        SegmentError::TooLong { len, .. } => LocalPathError::ComponentTooLong {
            uri: err_uri(),
            length: len,
        },
        e @ SegmentError::NotUtf8 { .. } => LocalPathError::Unparsable {
            uri: err_uri(),
            reason: e.to_string(),
        },
    })?;
    if let [letter, b':', ..] = bytes[..] {
        if windows && letter.is_ascii_alphabetic() {
            return Err(LocalPathError::DriveLetter {
                uri: err_uri(),
                segment: segment.to_owned(),
            });
        }
    }
    Ok(bytes.into_owned())
}

/// The byte two hex digits at `at` stand for.
fn hex_pair(text: &[u8], at: usize) -> Option<u8> {
    let digit = |b: u8| char::from(b).to_digit(16);
    let high = digit(*text.get(at)?)?;
    let low = digit(*text.get(at + 1)?)?;
    u8::try_from(high * 16 + low).ok()
}

/// The query as the bytes [`render`] writes: escapes of unreserved characters decoded
/// (they mean the same either way), every other escape kept with its `%` as a `%` byte,
/// so that the rendered name writes it as `%25`. Encoded control characters are refused.
fn normalize_query(uri: &Uri, query: &str) -> Result<Vec<u8>, LocalPathError> {
    let text = query.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match (text[i], hex_pair(text, i + 1)) {
            (b'%', Some(byte)) => {
                if byte < 0x20 || byte == 0x7F {
                    return Err(LocalPathError::ControlCharacter {
                        uri: uri.as_str().to_owned(),
                    });
                }
                if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
                    out.push(byte);
                } else {
                    out.push(b'%');
                    out.extend(format!("{byte:02X}").bytes());
                }
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Writes bytes as a name: UTF-8 as itself, except the characters that are escaped
/// ([`escaped`]), and bytes that are not UTF-8 as `%XX`. Percent-decoding the name gives
/// the bytes back, which is what makes the mapping injective. A control character
/// (U+0080 to U+009F included) is refused.
fn render(
    uri: &Uri,
    bytes: &[u8],
    in_query: bool,
    windows: bool,
) -> Result<String, LocalPathError> {
    let mut name = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() {
                return Err(LocalPathError::ControlCharacter {
                    uri: uri.as_str().to_owned(),
                });
            }
            if escaped(c, in_query, windows) {
                let mut buf = [0; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    name.push_str(&format!("%{b:02X}"));
                }
            } else {
                name.push(c);
            }
        }
        for b in chunk.invalid() {
            name.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(name)
}

/// Characters a name writes as `%XX`: `%` (so that every `%` in a name starts an escape),
/// `@` (which separates a query and starts an authority's directory), what Windows
/// forbids in names, separators (only a query can hold them), and the bidirectional
/// formatting characters of RFC 3987, section 4.1, which make a name display as another.
fn escaped(c: char, in_query: bool, windows: bool) -> bool {
    matches!(c, '%' | '@' | '\\')
        || (windows && matches!(c, ':' | '*' | '?' | '"' | '<' | '>' | '|'))
        || (in_query && c == '/')
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Checks one finished name: length, and for Windows's rules trailing dot or space and
/// device names.
fn check_name(uri: &Uri, name: &str, windows: bool) -> Result<(), LocalPathError> {
    let err_uri = || uri.as_str().to_owned();
    if name.len() > MAX_COMPONENT_BYTES {
        return Err(LocalPathError::ComponentTooLong {
            uri: err_uri(),
            length: name.len(),
        });
    }
    if !windows {
        return Ok(());
    }
    if name.ends_with(['.', ' ']) {
        return Err(LocalPathError::TrailingDotOrSpace {
            uri: err_uri(),
            name: name.to_owned(),
        });
    }
    if is_windows_device_name(name) {
        return Err(LocalPathError::ReservedName {
            uri: err_uri(),
            name: name.to_owned(),
        });
    }
    Ok(())
}

/// The rules of names of the file system paths are mapped for: which names it cannot
/// hold, and which names it takes as one. [`FileSystem::PORTABLE`] holds to all of them,
/// so that a destination can be copied anywhere; a destination that knows its own file
/// system holds to its rules only, and stores every name that file system can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct FileSystem {
    /// Windows's rules: device names (`CON`, `nul.txt`), names ending in a dot or a
    /// space, drive letters (`C:`) refused, and `:*?"<>|` written as `%XX`.
    pub windows_names: bool,
    /// Names that differ only in case are one file (Windows, macOS by default).
    pub case_insensitive: bool,
    /// Names that differ only in Unicode normalization are one file (macOS).
    pub normalizing: bool,
}

impl FileSystem {
    /// Every rule: paths any of Windows, macOS and Linux can hold, each as its own file.
    pub const PORTABLE: FileSystem = FileSystem {
        windows_names: true,
        case_insensitive: true,
        normalizing: true,
    };

    /// A POSIX file system such as ext4, XFS or Btrfs: any name but `.` and `..`, with
    /// names that differ in case or normalization apart.
    pub const POSIX: FileSystem = FileSystem {
        windows_names: false,
        case_insensitive: false,
        normalizing: false,
    };

    /// A file system with these rules.
    pub fn new(windows_names: bool, case_insensitive: bool, normalizing: bool) -> FileSystem {
        FileSystem {
            windows_names,
            case_insensitive,
            normalizing,
        }
    }

    /// `path` (names between `/`) as this file system compares names: two paths with
    /// the same fold are one file on it.
    pub fn fold(&self, path: &str) -> String {
        match (self.case_insensitive, self.normalizing) {
            (true, true) => fold(path).into_owned(),
            (false, true) => nfc(path).into_owned(),
            // Case folded, normalization kept: lower case of each form as written.
            (true, false) => path.to_uppercase().to_lowercase(),
            (false, false) => path.to_owned(),
        }
    }
}

impl Default for FileSystem {
    /// [`FileSystem::PORTABLE`].
    fn default() -> FileSystem {
        FileSystem::PORTABLE
    }
}

/// How two URIs of a [`PathCollision`] meet in one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Collision {
    /// The same path: the URIs differ only in what the mapping treats as equal (scheme,
    /// percent-encoding of a path, a fragment, a default port).
    SameName,
    /// Paths in NFC that differ only in case (`a.txt` and `A.TXT`, `straße` and
    /// `STRASSE`), one file on macOS and Windows.
    Case,
    /// Paths that differ in Unicode normalization (`é` composed and decomposed, the
    /// Kelvin sign and `K`), and maybe in case: one file on macOS.
    Normalization,
    /// One URI's file is a directory the other's path goes through (`a` and `a/b`).
    FileAsDirectory,
}

/// Two URIs of one sync that would share a file, or one whose file is the other's
/// directory.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{second} (as {second_path}) collides with {first} (as {first_path}): {kind:?}")]
pub struct PathCollision {
    /// The URI that was there first.
    pub first: Uri,
    /// Its path.
    pub first_path: LocalPath,
    /// The URI refused.
    pub second: Uri,
    /// Its path.
    pub second_path: LocalPath,
    /// How they collide.
    pub kind: Collision,
}

// A `PathSet`'s maps are keyed by paths made from the Source's URIs (a file's paths are
// hashed four times as it is added; SipHash was some 1.5 % of a sync of small files).
use crate::hash::SourceHash;

/// The paths of one sync, folded as a case-insensitive, normalizing file system sees
/// them, to find two URIs that would share a file.
///
/// Feed it every path a sync maps, before the file is written. Memory grows with the paths
/// held: one entry per file and one per directory.
///
/// Names compare as [`resourcesync_model::names::fold`] folds them (the one fold of the
/// workspace: the package crate checks ZIP names with it, `build` its warnings), so
/// that a collision a given file system would not have may be reported: never the
/// reverse.
///
/// ```
/// use resourcesync_client::local_path::{Collision, PathMapper, PathSet};
///
/// let mapper = PathMapper::new(&"http://example.com/".parse()?)?;
/// let mut set = PathSet::new();
/// let mut add = |uri: &str| {
///     let uri = uri.parse().unwrap();
///     let path = mapper.local_path(&uri).unwrap();
///     set.insert(&uri, &path)
/// };
/// assert_eq!(add("http://example.com/Readme.txt"), Ok(true));
/// assert_eq!(add("http://example.com/Readme.txt"), Ok(false));
/// assert_eq!(add("http://example.com/README.TXT").unwrap_err().kind, Collision::Case);
/// assert_eq!(add("http://example.com/Readme.txt/x").unwrap_err().kind, Collision::FileAsDirectory);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct PathSet {
    /// Folded file path to the path and the URI that took it.
    files: HashMap<String, (LocalPath, Uri), SourceHash>,
    /// Folded directory path to the first file path and URI under it.
    directories: HashMap<String, (LocalPath, Uri), SourceHash>,
    /// How names compare.
    file_system: FileSystem,
}

impl PathSet {
    /// An empty set, for a case-insensitive, normalizing file system
    /// ([`FileSystem::PORTABLE`]).
    pub fn new() -> PathSet {
        PathSet::default()
    }

    /// An empty set comparing names as `file_system` does: on a POSIX file system,
    /// `a.txt` and `A.TXT` are two files, and no collision.
    pub fn for_file_system(file_system: FileSystem) -> PathSet {
        PathSet {
            file_system,
            ..PathSet::default()
        }
    }

    /// The number of files held.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether no file is held.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Adds the file `path` that `uri` maps to. `Ok(true)` when it is new, `Ok(false)` when
    /// the same URI was added with it before; an error, leaving the set as it was, when
    /// another URI's file is the same on a case-insensitive or normalizing file system, or
    /// when one's file is a directory of the other's path.
    pub fn insert(&mut self, uri: &Uri, path: &LocalPath) -> Result<bool, PathCollision> {
        let collision = |(first_path, first): &(LocalPath, Uri), kind| PathCollision {
            first: first.clone(),
            first_path: first_path.clone(),
            second: uri.clone(),
            second_path: path.clone(),
            kind,
        };
        let folded = self.file_system.fold(path.as_str());
        if let Some(held) = self.files.get(&folded) {
            let (held_path, held_uri) = held;
            if held_path == path && held_uri == uri {
                return Ok(false);
            }
            let (a, b) = (held_path.as_str(), path.as_str());
            let kind = if a == b {
                Collision::SameName
            } else if nfc(a) == a && nfc(b) == b {
                Collision::Case
            } else {
                Collision::Normalization
            };
            return Err(collision(held, kind));
        }
        if let Some(held) = self.directories.get(&folded) {
            return Err(collision(held, Collision::FileAsDirectory));
        }
        let dirs: Vec<&str> = folded
            .match_indices('/')
            .map(|(at, _)| &folded[..at])
            .collect();
        for dir in &dirs {
            if let Some(held) = self.files.get(*dir) {
                return Err(collision(held, Collision::FileAsDirectory));
            }
        }
        for dir in dirs {
            // Most files share their directory with the one before: looked up first,
            // its path copied only when it is new.
            if !self.directories.contains_key(dir) {
                self.directories
                    .insert(dir.to_owned(), (path.clone(), uri.clone()));
            }
        }
        self.files.insert(folded, (path.clone(), uri.clone()));
        Ok(true)
    }
}
