//! The `path` attribute: where a bitstream sits in a package (sections 11.2, 13.2).

use std::fmt;

/// Why a path names no file of a package, whatever the package holds: see
/// [`BitstreamPath::names_no_file`]. The package reader refuses such a path, and the
/// checker reports it ([`Rule::PathNamesNoFile`](crate::Rule::PathNamesNoFile)), by this
/// one classification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum NoFile {
    /// `//server/share/…`: a network (UNC) path, not one inside the package.
    Network,
    /// `/` or empty: the package root, not a bitstream.
    Root,
    /// Ends with `/`: a directory, not a bitstream.
    Directory,
}

impl fmt::Display for NoFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NoFile::Network => "is a network path, not one inside the package",
            NoFile::Root => "is the package root, not a bitstream",
            NoFile::Directory => "ends with a slash: a directory, not a bitstream",
        })
    }
}

/// The path of a bitstream inside a ZIP package, kept exactly as written.
///
/// The standard requires a leading slash and a path relative to the package root. Those
/// are rules, not parse failures, because real packages break them (the Python reference
/// implementation writes paths without the slash) and a reader must still be able to
/// report them: see [`Rule::PathLeadingSlash`](crate::Rule::PathLeadingSlash) and
/// [`Rule::PathClimbsOut`](crate::Rule::PathClimbsOut). The package crate refuses unsafe
/// paths before anything reaches a file system.
///
/// ```
/// use resourcesync_model::BitstreamPath;
///
/// assert!(BitstreamPath::new("/resources/res1").has_leading_slash());
/// assert!(BitstreamPath::new("/a/../../etc/passwd").climbs_out());
/// assert!(!BitstreamPath::new("/a/../b").climbs_out());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(transparent))]
pub struct BitstreamPath(String);

impl BitstreamPath {
    /// A path as written.
    pub fn new(path: impl Into<String>) -> BitstreamPath {
        BitstreamPath(path.into())
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the path starts with `/`, as sections 11.2 and 13.2 require.
    pub fn has_leading_slash(&self) -> bool {
        self.0.starts_with('/')
    }

    /// The bitstream's name in the ZIP: the path without its leading slash, which the
    /// Python reference implementation leaves out. Two paths of a manifest name the same
    /// file when their names are equal (`/a` and `a`).
    ///
    /// ```
    /// use resourcesync_model::BitstreamPath;
    ///
    /// assert_eq!(BitstreamPath::new("/resources/res1").name_in_package(), "resources/res1");
    /// assert_eq!(BitstreamPath::new("resources/res1").name_in_package(), "resources/res1");
    /// ```
    pub fn name_in_package(&self) -> &str {
        self.0.strip_prefix('/').unwrap_or(&self.0)
    }

    /// Why the path names no file of any package, if it names none: a network path
    /// (`//host/share`), the root (`/` or empty) or a directory (ending in `/`). Section 7
    /// has the path convey "the relative file system path where the bitstream would
    /// reside if the ZIP were unpacked".
    ///
    /// ```
    /// use resourcesync_model::{BitstreamPath, NoFile};
    ///
    /// assert_eq!(BitstreamPath::new("/").names_no_file(), Some(NoFile::Root));
    /// assert_eq!(BitstreamPath::new("/a/").names_no_file(), Some(NoFile::Directory));
    /// assert_eq!(BitstreamPath::new("//host/share/a").names_no_file(), Some(NoFile::Network));
    /// assert_eq!(BitstreamPath::new("/a/b").names_no_file(), None);
    /// ```
    pub fn names_no_file(&self) -> Option<NoFile> {
        let name = self.name_in_package();
        if self.0.starts_with("//") {
            Some(NoFile::Network)
        } else if name.is_empty() {
            Some(NoFile::Root)
        } else if name.ends_with('/') {
            Some(NoFile::Directory)
        } else {
            None
        }
    }

    /// Whether a `..` segment climbs above the package root. Backslashes count as
    /// separators too, since an extractor on Windows would treat them so.
    pub fn climbs_out(&self) -> bool {
        let mut depth: usize = 0;
        for segment in self.0.split(['/', '\\']) {
            match segment {
                "" | "." => {}
                ".." => match depth.checked_sub(1) {
                    Some(d) => depth = d,
                    None => return true,
                },
                _ => depth += 1,
            }
        }
        false
    }
}

impl fmt::Display for BitstreamPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for BitstreamPath {
    fn from(s: &str) -> Self {
        BitstreamPath::new(s)
    }
}

impl From<String> for BitstreamPath {
    fn from(s: String) -> Self {
        BitstreamPath(s)
    }
}
