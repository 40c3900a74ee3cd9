//! How file systems compare and refuse names: the one place for the rules a Destination
//! (the client's path mapper), a package (ZIP entry names) and a Source (`build`'s
//! warnings) all hold names to.
//!
//! ```
//! use resourcesync_model::names::{fold, is_windows_device_name};
//!
//! assert_eq!(fold("Straße.TXT"), fold("STRASSE.txt"));
//! assert_eq!(fold("caf\u{e9}"), fold("cafe\u{301}"));
//! assert!(is_windows_device_name("nul.txt") && is_windows_device_name("COM¹"));
//! assert!(!is_windows_device_name("console"));
//! ```

use std::borrow::Cow;

use icu_normalizer::{ComposingNormalizerBorrowed, DecomposingNormalizerBorrowed};

/// The longest name (one path component) file systems hold, in bytes: ext4, XFS, Btrfs
/// and APFS allow 255 bytes, NTFS 255 UTF-16 units, which is never fewer.
pub const MAX_NAME_BYTES: usize = 255;

/// Windows device names: reserved with any extension, in any case.
pub const WINDOWS_DEVICE_NAMES: [&str; 33] = [
    "CON", "PRN", "AUX", "NUL", "COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7",
    "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6",
    "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³", "CONIN$", "CONOUT$", "CLOCK$",
];

/// Whether Windows takes `name` for a device ([`WINDOWS_DEVICE_NAMES`]): it compares the
/// part before the first dot, without trailing spaces, ASCII letters in any case.
pub fn is_windows_device_name(name: &str) -> bool {
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    // Every device name starts with one of `ACLNP` and is at most 7 bytes long
    // (`CONOUT$`): most stems are passed over without a comparison (a walk checks every
    // name of a collection).
    let first = stem.as_bytes().first().map(u8::to_ascii_uppercase);
    matches!(first, Some(b'A' | b'C' | b'L' | b'N' | b'P'))
        && stem.len() <= 7
        // Byte-wise ASCII folding: the superscript digits compare exactly.
        && WINDOWS_DEVICE_NAMES
            .iter()
            .any(|r| r.eq_ignore_ascii_case(stem))
}

/// The name (or path) as a case-insensitive, normalization-insensitive file system
/// (Windows, macOS) compares it: two names with one fold are one file there.
///
/// Unicode's full lower-casing of the upper-cased name, between NFD and NFC: upper then
/// lower case folds more than lower case alone (`ß` and `SS`, `ﬁ` and `FI`), and
/// decomposing first and composing last makes NFC and NFD the same. It folds more than
/// NTFS's simple upcase table and about as much as APFS, so it can find two names one
/// where a given file system would not: never the reverse.
pub fn fold(name: &str) -> Cow<'_, str> {
    if name.is_ascii() {
        return match name.bytes().any(|b| b.is_ascii_uppercase()) {
            true => Cow::Owned(name.to_ascii_lowercase()),
            false => Cow::Borrowed(name),
        };
    }
    let decomposed = DecomposingNormalizerBorrowed::new_nfd().normalize(name);
    let cased = decomposed.to_uppercase().to_lowercase();
    Cow::Owned(
        ComposingNormalizerBorrowed::new_nfc()
            .normalize(&cased)
            .into_owned(),
    )
}

/// The name in Unicode's NFC, as a normalizing file system (macOS) compares names.
pub fn nfc(name: &str) -> Cow<'_, str> {
    ComposingNormalizerBorrowed::new_nfc().normalize(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_device_name_is_found_in_any_case_and_with_an_extension() {
        for name in WINDOWS_DEVICE_NAMES {
            // The quick test: a first letter of ACLNP, at most 7 bytes.
            assert!(
                b"ACLNP".contains(&name.as_bytes()[0]) && name.len() <= 7,
                "{name}"
            );
            let lower = name.to_lowercase();
            for name in [
                name.to_owned(),
                lower.clone(),
                format!("{lower}.txt"),
                format!("{name} .x"),
            ] {
                assert!(is_windows_device_name(&name), "{name}");
            }
        }
        for name in ["", "a", "console", "com10", "lpt", "nul_", "xcon"] {
            assert!(!is_windows_device_name(name), "{name}");
        }
    }

    #[test]
    fn names_fold_alike_in_case_and_normalization_only() {
        assert_eq!(fold("readme"), Cow::Borrowed("readme"));
        assert_eq!(fold("README"), fold("readme"));
        assert_eq!(fold("\u{212A}"), fold("k"));
        assert_ne!(fold("a"), fold("b"));
        assert_eq!(nfc("e\u{301}"), "\u{e9}");
    }
}
