//! How a URI's path becomes a relative file path: the one grammar a Destination (the
//! client's path mapper, a sync's mirror), a Source (its directory) and a server (`serve`)
//! read a path's segments with, so that a name one of them accepts means the same file to
//! the others.
//!
//! The path is the one [`Uri::path`](crate::Uri::path) gives, as written (nothing resolved
//! before it is checked); the inverse, a name written as a segment, is [`push_segment`].
//! Each segment is percent-decoded on its own, so a `/` encoded inside one (`%2F`) is
//! never a separator. Refused, each with its own [`SegmentError`] and in this order: an
//! empty segment, `.` and `..` as written, a raw `\`, a segment that decodes to `.` or
//! `..` (`%2e%2E`), an encoded `/`, an encoded `\` where it is a separator, and a control
//! character (U+0000 to U+001F, U+007F), raw or encoded; then, for a name that must be
//! text, bytes that are not UTF-8, and a name over the caller's length limit.
//!
//! The callers differ on purpose, and say so through [`SegmentRules`], never through a
//! copy of the grammar:
//!
//! - **Empty and `.` segments.** A file name has neither, so the client and a Source's
//!   directory refuse them ([`SegmentRules::NAMES`]); a server joins a request's path
//!   segment by segment, where they name nothing, and skips them
//!   ([`SegmentRules::REQUEST`]).
//! - **Backslashes.** `%5C` is a character of a name on a POSIX file system (`build`
//!   publishes such names) and a separator on Windows: refused off Unix by default, and
//!   wherever Windows's rules are asked for ([`SegmentRules::with_backslash_separator`]).
//! - **Bytes or text.** The client stores any bytes (it writes what is not UTF-8 as `%XX`)
//!   and reads segments with [`SegmentRules::bytes`]; a Source and a server look files up
//!   by name, which must be UTF-8 ([`SegmentRules::name`], [`SegmentRules::path`]).
//! - **Length.** A Source refuses a name longer than a file system holds
//!   ([`SegmentRules::with_max_len`]); the client limits the names it writes, which are
//!   longer than the decoded bytes, itself.
//!
//! ```
//! use resourcesync_model::uri_path::{SegmentError, SegmentRules};
//!
//! let names = SegmentRules::NAMES;
//! assert_eq!(names.name("caf%C3%A9")?, "café");
//! assert!(matches!(names.name("%2e%2E"), Err(SegmentError::EncodedDot { .. })));
//! assert!(matches!(names.name("a%2Fb"), Err(SegmentError::EncodedSlash { .. })));
//! assert_eq!(names.bytes("a%FF")?.as_ref(), b"a\xFF");
//! assert!(matches!(names.name("a%FF"), Err(SegmentError::NotUtf8 { .. })));
//!
//! let request = SegmentRules::REQUEST.path("/a//./b%20c")?;
//! assert_eq!(request.names(), ["a", "b c"]);
//! assert!(SegmentRules::NAMES.path("a//b").is_err());
//! # Ok::<(), SegmentError>(())
//! ```

use std::borrow::Cow;
use std::path::PathBuf;

/// Which of the grammar's choices a caller makes: see the [module](self) for the grammar
/// and why the callers differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct SegmentRules {
    /// Empty and `.` segments (as written) are skipped by [`SegmentRules::path`] rather
    /// than refused. A segment that decodes to `.` (`%2E`) is refused either way.
    pub skip_empty_and_dot: bool,
    /// A `\` encoded in a segment (`%5C`) is a separator, and refused.
    pub backslash_is_separator: bool,
    /// The longest name [`SegmentRules::name`] accepts, in bytes once decoded.
    pub max_len: Option<usize>,
}

impl SegmentRules {
    /// A file's names: empty and `.` segments refused, `%5C` a separator off Unix only,
    /// no length limit.
    pub const NAMES: SegmentRules = SegmentRules {
        skip_empty_and_dot: false,
        backslash_is_separator: cfg!(not(unix)),
        max_len: None,
    };

    /// A request's path, as a web server joins it segment by segment: [`Self::NAMES`],
    /// with empty and `.` segments skipped.
    pub const REQUEST: SegmentRules = SegmentRules {
        skip_empty_and_dot: true,
        ..SegmentRules::NAMES
    };

    /// These rules, with `%5C` a separator (refused) or a character of a name.
    #[must_use]
    pub const fn with_backslash_separator(mut self, separator: bool) -> SegmentRules {
        self.backslash_is_separator = separator;
        self
    }

    /// These rules, with names longer than `max` bytes (once decoded) refused.
    #[must_use]
    pub const fn with_max_len(mut self, max: usize) -> SegmentRules {
        self.max_len = Some(max);
        self
    }

    /// The bytes one segment names, percent-decoded, or why it names none. Every rule of
    /// the grammar but UTF-8 and the length holds; an empty or `.` segment is refused
    /// whatever [`skip_empty_and_dot`](Self::skip_empty_and_dot) says (only a path can
    /// skip one).
    pub fn bytes<'a>(&self, segment: &'a str) -> Result<Cow<'a, [u8]>, SegmentError> {
        let named = || segment.to_owned();
        if segment.is_empty() {
            return Err(SegmentError::Empty);
        }
        if segment == "." || segment == ".." {
            return Err(SegmentError::Dot { segment: named() });
        }
        // A raw backslash is not in a URI; some clients and servers take one in a request
        // for a `/`.
        if segment.contains('\\') {
            return Err(SegmentError::Backslash { segment: named() });
        }
        let bytes = percent_decode(segment);
        if *bytes == *b"." || *bytes == *b".." {
            return Err(SegmentError::EncodedDot { segment: named() });
        }
        if bytes.contains(&b'/') {
            return Err(SegmentError::EncodedSlash { segment: named() });
        }
        if self.backslash_is_separator && bytes.contains(&b'\\') {
            return Err(SegmentError::Backslash { segment: named() });
        }
        if let Some(&b) = bytes.iter().find(|&&b| b < 0x20 || b == 0x7F) {
            return Err(SegmentError::ControlCharacter {
                segment: named(),
                code: b,
            });
        }
        Ok(bytes)
    }

    /// The name one segment makes: [`bytes`](Self::bytes), which must be UTF-8 and no
    /// longer than [`max_len`](Self::max_len).
    pub fn name<'a>(&self, segment: &'a str) -> Result<Cow<'a, str>, SegmentError> {
        let name = match self.bytes(segment)? {
            Cow::Borrowed(b) => std::str::from_utf8(b).map(Cow::Borrowed).ok(),
            Cow::Owned(b) => String::from_utf8(b).map(Cow::Owned).ok(),
        };
        let name = name.ok_or_else(|| SegmentError::NotUtf8 {
            segment: segment.to_owned(),
        })?;
        match self.max_len {
            Some(max) if name.len() > max => Err(SegmentError::TooLong {
                segment: segment.to_owned(),
                len: name.len(),
            }),
            _ => Ok(name),
        }
    }

    /// The names of a `/`-separated path (a URI's path, or its part under a base, without
    /// query or fragment), each by [`name`](Self::name); empty and `.` segments skipped
    /// when [`skip_empty_and_dot`](Self::skip_empty_and_dot) says so.
    pub fn path(&self, path: &str) -> Result<NamePath, SegmentError> {
        let mut names = Vec::new();
        for segment in path.split('/') {
            if self.skip_empty_and_dot && (segment.is_empty() || segment == ".") {
                continue;
            }
            names.push(self.name(segment)?.into_owned());
        }
        Ok(NamePath(names))
    }
}

impl Default for SegmentRules {
    /// [`SegmentRules::NAMES`].
    fn default() -> SegmentRules {
        SegmentRules::NAMES
    }
}

/// Why a segment of a URI's path names no file. Each variant but [`SegmentError::Empty`]
/// carries the segment as written.
///
/// Exhaustive on purpose: each caller reports these as its own errors, and a rule added
/// to the grammar must be given its report by every one, not fall into a catch-all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[allow(clippy::exhaustive_enums)] // each caller maps every refusal to its own error
pub enum SegmentError {
    /// An empty segment (`a//b`).
    #[error("empty path segment")]
    Empty,
    /// A `.` or `..` segment.
    #[error("dot segment \"{segment}\"")]
    Dot {
        /// The segment.
        segment: String,
    },
    /// A segment that is `.` or `..` once decoded (`%2e%2E`, `.%2e`).
    #[error("percent-encoded dot segment \"{segment}\"")]
    EncodedDot {
        /// The segment.
        segment: String,
    },
    /// A `/` encoded inside a segment (`%2F`): decoding it would add a directory.
    #[error("encoded slash in \"{segment}\"")]
    EncodedSlash {
        /// The segment.
        segment: String,
    },
    /// A raw `\`, or one encoded (`%5C`) where it is a separator.
    #[error("backslash in \"{segment}\"")]
    Backslash {
        /// The segment.
        segment: String,
    },
    /// A control character (U+0000 to U+001F, U+007F), raw or encoded.
    #[error("control character U+{code:04X} in \"{segment}\"")]
    ControlCharacter {
        /// The segment.
        segment: String,
        /// The character.
        code: u8,
    },
    /// Bytes that are not UTF-8 once decoded, where a name must be text.
    #[error("\"{segment}\" is not UTF-8 once decoded")]
    NotUtf8 {
        /// The segment.
        segment: String,
    },
    /// A name longer than the rules' [`max_len`](SegmentRules::max_len).
    #[error("\"{segment}\" is {len} bytes once decoded, more than allowed")]
    TooLong {
        /// The segment.
        segment: String,
        /// The decoded name's length in bytes.
        len: usize,
    },
}

/// The names a URI's path makes under [`SegmentRules`]: none empty, `.` or `..`, none
/// holding `/`, a control character, or `\` where it is a separator. Joined to a
/// directory, it stays below it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct NamePath(Vec<String>);

impl NamePath {
    /// The names, in order.
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// Whether the path has no name (the directory itself).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The relative path for this platform, built name by name.
    pub fn to_path_buf(&self) -> PathBuf {
        self.0.iter().collect()
    }
}

/// What a name's bytes are written as in a URI's path segment: everything but RFC
/// 3986's `pchar` percent-encoded. The `url` crate's own set (WHATWG's) leaves `|`, `^`,
/// `[`, `]` and `\\` as they are, which no URI may hold: a file named `a|b` had no URI,
/// and was skipped, though every file system but Windows's holds it.
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// Appends `segment` (a file's or a directory's name) to `out` as a segment of a URI's
/// path: every byte but RFC 3986's `pchar` percent-encoded. The one way a name becomes
/// a URI's segment, for what a Source publishes and for a server's redirects; what
/// [`SegmentRules::name`] reads back as the same name.
///
/// ```
/// let mut path = String::from("/");
/// resourcesync_model::uri_path::push_segment(&mut path, "a b|[c]é");
/// assert_eq!(path, "/a%20b%7C%5Bc%5D%C3%A9");
/// ```
pub fn push_segment(out: &mut String, segment: &str) {
    out.extend(percent_encoding::utf8_percent_encode(segment, SEGMENT));
}

/// Percent-decodes `text`: every `%` followed by two hex digits is the byte they stand
/// for; any other `%` (which a [`Uri`](crate::Uri) never has) stays as it is.
pub fn percent_decode(text: &str) -> Cow<'_, [u8]> {
    percent_encoding::percent_decode_str(text).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(segment: &str) -> Result<Cow<'_, str>, SegmentError> {
        SegmentRules::NAMES.with_max_len(255).name(segment)
    }

    #[test]
    fn dot_segments_as_written_and_encoded() {
        for s in [".", ".."] {
            assert!(matches!(name(s), Err(SegmentError::Dot { .. })), "{s}");
        }
        for s in ["%2e", "%2E", "%2e%2E", ".%2e", "%2E."] {
            assert!(
                matches!(name(s), Err(SegmentError::EncodedDot { .. })),
                "{s}"
            );
        }
        // Dots inside a name are only dots.
        for s in ["...", ".a", "a.", "%2e%2e%2e", "%2Ehidden"] {
            assert!(name(s).is_ok(), "{s}");
        }
        // `.` is skipped in a request; `%2E`, which decodes to it, never is.
        assert!(SegmentRules::REQUEST.path("/a/./b").is_ok());
        for p in ["/a/%2E/b", "/a/../b", "/a/%2e%2e/b"] {
            assert!(SegmentRules::REQUEST.path(p).is_err(), "{p}");
        }
    }

    #[test]
    fn separators_encoded_inside_a_segment() {
        for s in ["%2F", "%2f", "..%2F..%2Fx", "a%2Fb"] {
            assert!(
                matches!(name(s), Err(SegmentError::EncodedSlash { .. })),
                "{s}"
            );
        }
        let windows = SegmentRules::NAMES.with_backslash_separator(true);
        let posix = SegmentRules::NAMES.with_backslash_separator(false);
        for s in ["%5C", "%5c", "a%5c..%5c..%5cx"] {
            assert!(
                matches!(windows.name(s), Err(SegmentError::Backslash { .. })),
                "{s}"
            );
            assert!(posix.name(s).is_ok_and(|n| n.contains('\\')), "{s}");
        }
        // Raw, a backslash is refused by any rules.
        assert!(matches!(
            posix.name("a\\b"),
            Err(SegmentError::Backslash { .. })
        ));
        assert_eq!(SegmentRules::NAMES.backslash_is_separator, cfg!(not(unix)));
    }

    #[test]
    fn control_characters_raw_and_encoded() {
        for (s, code) in [("a%00", 0), ("%0a", 10), ("%1F", 0x1F), ("a%7F", 0x7F)] {
            assert_eq!(
                name(s),
                Err(SegmentError::ControlCharacter {
                    segment: s.to_owned(),
                    code
                })
            );
        }
        assert!(matches!(
            name("a\tb"),
            Err(SegmentError::ControlCharacter { code: 9, .. })
        ));
        // C1 controls are characters of the grammar; the client refuses them in its names.
        assert!(name("%C2%85").is_ok());
    }

    #[test]
    fn over_long_names_count_decoded_bytes() {
        let ok = "%41".repeat(255);
        assert_eq!(name(&ok).map(|n| n.len()), Ok(255));
        let long = "%41".repeat(256);
        assert!(matches!(
            name(&long),
            Err(SegmentError::TooLong { len: 256, .. })
        ));
        assert!(matches!(
            name(&"a".repeat(256)),
            Err(SegmentError::TooLong { len: 256, .. })
        ));
        // Without a limit, any length; bytes are never limited.
        assert!(SegmentRules::NAMES.name(&long).is_ok());
    }

    #[test]
    fn non_utf8_escapes_are_bytes_but_no_name() {
        assert_eq!(
            SegmentRules::NAMES.bytes("a%FF").as_deref(),
            Ok(&b"a\xFF"[..])
        );
        assert!(matches!(name("a%FF"), Err(SegmentError::NotUtf8 { .. })));
        assert!(matches!(name("%C3"), Err(SegmentError::NotUtf8 { .. })));
        assert_eq!(name("caf%C3%A9").as_deref(), Ok("café"));
        // A `%` without two hex digits stays.
        assert_eq!(name("100%").as_deref(), Ok("100%"));
        assert_eq!(name("%zz").as_deref(), Ok("%zz"));
    }

    #[test]
    fn empty_segments_refused_or_skipped() {
        assert_eq!(name(""), Err(SegmentError::Empty));
        for p in ["a//b", "/a", "a/", ""] {
            assert_eq!(SegmentRules::NAMES.path(p), Err(SegmentError::Empty), "{p}");
        }
        let request = SegmentRules::REQUEST;
        assert_eq!(request.path("//a///b/").map(|p| p.names().len()), Ok(2));
        assert!(request.path("/").is_ok_and(|p| p.is_empty()));
        assert_eq!(
            request.path("/a/b%20c").map(|p| p.to_path_buf()),
            Ok(PathBuf::from("a").join("b c"))
        );
    }

    #[test]
    fn query_and_fragment_are_the_callers_to_cut() {
        // `?` and `#` are characters of a segment here: a caller cuts the query and the
        // fragment off first, since only it knows whether they are kept.
        assert_eq!(name("a?b").as_deref(), Ok("a?b"));
        assert_eq!(name("a%3Fb%23c").as_deref(), Ok("a?b#c"));
        assert_eq!(
            SegmentRules::REQUEST
                .path("/a?x=1/b")
                .map(|p| p.names().len()),
            Ok(2)
        );
    }

    #[test]
    fn a_pushed_name_reads_back_as_itself() {
        for n in [
            "a", "a b", "a|b^c", "[x]", "café", "100%", "a?b#c", "~-._", "a\\b", "...",
        ] {
            let mut segment = String::new();
            push_segment(&mut segment, n);
            assert!(
                crate::Uri::parse(&format!("http://e.com/{segment}")).is_ok(),
                "{n}"
            );
            let rules = SegmentRules::NAMES.with_backslash_separator(false);
            assert_eq!(rules.name(&segment).as_deref(), Ok(n), "{n}");
        }
    }

    #[test]
    fn the_first_refusal_in_the_documented_order() {
        // A dot segment is one before anything is decoded.
        assert!(matches!(name(".."), Err(SegmentError::Dot { .. })));
        // An encoded slash before an encoded control character, that before bad UTF-8.
        assert!(matches!(
            name("%2F%00"),
            Err(SegmentError::EncodedSlash { .. })
        ));
        assert!(matches!(
            name("%FF%00"),
            Err(SegmentError::ControlCharacter { .. })
        ));
        assert!(matches!(
            name(&format!("{}%FF", "a".repeat(300))),
            Err(SegmentError::NotUtf8 { .. })
        ));
    }
}
