//! Names a POSIX file system holds and another does not: what `build` warns about, since
//! a Destination on Windows or macOS cannot store such a resource under its own name (a
//! sync there refuses it, saying so; a sync on Linux stores it).
//!
//! The rules are those of `resourcesync-client`'s `local_path::FileSystem::PORTABLE`:
//! Windows's device names, a name ending in a dot or a space, the characters Windows
//! forbids, and names of one directory that differ only in case or Unicode
//! normalization (one file on Windows and macOS).

use std::collections::HashMap;

use icu_normalizer::ComposingNormalizerBorrowed;

/// Windows device names: reserved with any extension, in any case.
const RESERVED: [&str; 33] = [
    "CON", "PRN", "AUX", "NUL", "COM0", "COM1", "COM2", "COM3", "COM4", "COM5", "COM6", "COM7",
    "COM8", "COM9", "COM¹", "COM²", "COM³", "LPT0", "LPT1", "LPT2", "LPT3", "LPT4", "LPT5", "LPT6",
    "LPT7", "LPT8", "LPT9", "LPT¹", "LPT²", "LPT³", "CONIN$", "CONOUT$", "CLOCK$",
];

/// Why a Windows file system cannot hold `name`, if it cannot.
pub(super) fn windows_refuses(name: &str) -> Option<&'static str> {
    if name.ends_with(['.', ' ']) {
        return Some("a name ending in a dot or a space (Windows drops it)");
    }
    if name.contains([':', '*', '?', '"', '<', '>', '|', '\\']) {
        return Some("a name with a character Windows forbids (:*?\"<>|\\)");
    }
    let stem = name.split('.').next().unwrap_or(name).trim_end_matches(' ');
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(stem)) {
        return Some("a name Windows reserves for a device");
    }
    None
}

/// The name as a case-insensitive, normalizing file system compares it.
fn folded(name: &str) -> String {
    if name.is_ascii() {
        return name.to_ascii_lowercase();
    }
    let nfc = ComposingNormalizerBorrowed::new_nfc().normalize(name);
    nfc.to_uppercase().to_lowercase()
}

/// Of the names of one directory, those another file system cannot hold as they are,
/// each with why: by its index in `names`. The second of two names that differ only in
/// case or normalization is the one reported.
pub(super) fn not_portable(names: &[&str]) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if let Some(why) = windows_refuses(name) {
            found.push((i, why));
        }
        if seen.insert(folded(name), i).is_some() {
            found.push((
                i,
                "a name another in its directory differs from only in case or normalization \
                 (one file on Windows and macOS)",
            ));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_is_found_and_plain_names_are_not() {
        let names = [
            "readme.txt",
            "Readme.TXT",
            "CON",
            "nul.txt",
            "a.",
            "a ",
            "a:b",
            "caf\u{e9}",
            "cafe\u{301}",
            "conference.txt",
            "plain",
        ];
        let found: Vec<usize> = not_portable(&names).into_iter().map(|(i, _)| i).collect();
        assert_eq!(found, [1, 2, 3, 4, 5, 6, 8]);
    }
}
