//! The `path` attribute: where a bitstream sits in a package (sections 11.2, 13.2).

use std::fmt;

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
