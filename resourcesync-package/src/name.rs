//! The one place where a name from a package becomes a path on a file system.

use std::path::PathBuf;

/// Why a name in a package cannot be used as a path.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NameError {
    /// Empty, or only slashes.
    #[error("empty name")]
    Empty,
    /// Starts at a root: `/etc/passwd`, `\\server\share`.
    #[error("absolute name {0:?}")]
    Absolute(String),
    /// A drive letter or any other colon: `C:\x`, `C:x`.
    #[error("name {0:?} has a drive letter or colon")]
    Drive(String),
    /// A backslash, which Windows takes as a separator.
    #[error("name {0:?} has a backslash")]
    Backslash(String),
    /// A NUL or other control character.
    #[error("name {0:?} has a control character")]
    Control(String),
    /// A `.` or `..` segment: the path would not be what it says.
    #[error("name {0:?} has a . or .. segment")]
    DotSegment(String),
    /// A segment longer than the 255 bytes most file systems allow in one name.
    #[error("name {name:?} has a segment of {length} bytes, more than {MAX_SEGMENT_BYTES}")]
    SegmentTooLong {
        /// The whole name.
        name: String,
        /// The segment's length in bytes.
        length: usize,
    },
}

/// The longest segment (file or directory name) [`safe_path`] accepts, in bytes: the
/// model's [`resourcesync_model::names::MAX_NAME_BYTES`], which every
/// common file system holds.
pub const MAX_SEGMENT_BYTES: usize = resourcesync_model::names::MAX_NAME_BYTES;

/// The relative path a package entry named `name` (as written in the ZIP, with `/`
/// separators) may be extracted to, or why it may not.
///
/// Stricter than zip's `enclosed_name()`, which strips a leading root rather than refusing
/// it: any `.` or `..` segment, backslash, colon, control character or leading separator is
/// refused, so the result always stays below the directory it is joined to. Empty
/// segments (`a//b`) are refused too, since two names would map to one path, and so are
/// segments longer than [`MAX_SEGMENT_BYTES`], which no common file system can create.
///
/// ```
/// use resourcesync_package::safe_path;
///
/// assert_eq!(safe_path("resources/res1")?, std::path::Path::new("resources").join("res1"));
/// assert!(safe_path("../etc/passwd").is_err());
/// assert!(safe_path("/etc/passwd").is_err());
/// assert!(safe_path("C:\\Windows").is_err());
/// # Ok::<(), resourcesync_package::NameError>(())
/// ```
pub fn safe_path(name: &str) -> Result<PathBuf, NameError> {
    check_name(name)?;
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    Ok(trimmed.split('/').collect())
}

/// The checks of [`safe_path`], without building the path.
pub(crate) fn check_name(name: &str) -> Result<(), NameError> {
    let owned = || name.to_owned();
    if name.trim_matches('/').is_empty() {
        return Err(NameError::Empty);
    }
    if name.chars().any(char::is_control) {
        return Err(NameError::Control(owned()));
    }
    if name.contains('\\') {
        return Err(NameError::Backslash(owned()));
    }
    if name.starts_with('/') {
        return Err(NameError::Absolute(owned()));
    }
    if name.contains(':') {
        return Err(NameError::Drive(owned()));
    }
    // A directory entry ends with one slash.
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    for segment in trimmed.split('/') {
        match segment {
            "." | ".." => return Err(NameError::DotSegment(owned())),
            "" => return Err(NameError::Empty),
            long if long.len() > MAX_SEGMENT_BYTES => {
                return Err(NameError::SegmentTooLong {
                    name: owned(),
                    length: long.len(),
                });
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_are_refused() {
        for (name, expected) in [
            ("", NameError::Empty),
            ("/", NameError::Empty),
            ("a//b", NameError::Empty),
            ("../x", NameError::DotSegment("../x".into())),
            ("a/../../x", NameError::DotSegment("a/../../x".into())),
            ("a/./b", NameError::DotSegment("a/./b".into())),
            ("/etc/passwd", NameError::Absolute("/etc/passwd".into())),
            (
                "\\\\server\\share",
                NameError::Backslash("\\\\server\\share".into()),
            ),
            ("a\\..\\..\\x", NameError::Backslash("a\\..\\..\\x".into())),
            ("C:/x", NameError::Drive("C:/x".into())),
            ("C:x", NameError::Drive("C:x".into())),
            ("a\0b", NameError::Control("a\0b".into())),
            ("a\nb", NameError::Control("a\nb".into())),
            (
                &format!("a/{}/b", "x".repeat(256)),
                NameError::SegmentTooLong {
                    name: format!("a/{}/b", "x".repeat(256)),
                    length: 256,
                },
            ),
            (
                // 128 two-byte characters: 128 characters, 256 bytes.
                &"é".repeat(128),
                NameError::SegmentTooLong {
                    name: "é".repeat(128),
                    length: 256,
                },
            ),
        ] {
            assert_eq!(safe_path(name), Err(expected), "{name:?}");
        }
    }

    #[test]
    fn ordinary_names_are_kept() {
        assert_eq!(safe_path("a").unwrap(), PathBuf::from("a"));
        assert_eq!(
            safe_path("a/b c/d.html").unwrap(),
            PathBuf::from("a").join("b c").join("d.html")
        );
        assert_eq!(safe_path("dir/").unwrap(), PathBuf::from("dir"));
        let longest = "x".repeat(MAX_SEGMENT_BYTES);
        assert_eq!(safe_path(&longest).unwrap(), PathBuf::from(&longest));
        assert_eq!(
            safe_path("..a/b..").unwrap(),
            PathBuf::from("..a").join("b..")
        );
    }
}
