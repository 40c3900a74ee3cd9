//! Names a POSIX file system holds and another does not: what `build` warns about, since
//! a Destination on Windows or macOS cannot store such a resource under its own name (a
//! sync there refuses it, saying so; a sync on Linux stores it).
//!
//! The rules are those of `resourcesync-client`'s `local_path::FileSystem::PORTABLE`:
//! Windows's device names, a name ending in a dot or a space, the characters Windows
//! forbids, and names of one directory that differ only in case or Unicode
//! normalization (one file on Windows and macOS).

use std::collections::HashMap;

use resourcesync_model::names::{fold, is_windows_device_name};

/// Why a Windows file system cannot hold `name`, if it cannot.
pub(super) fn windows_refuses(name: &str) -> Option<&'static str> {
    if name.ends_with(['.', ' ']) {
        return Some("a name ending in a dot or a space (Windows drops it)");
    }
    // Bytes, not chars: each is ASCII, which no byte of a longer UTF-8 sequence is, and
    // this runs for every name of every walk.
    let forbidden = |b: &u8| matches!(b, b':' | b'*' | b'?' | b'"' | b'<' | b'>' | b'|' | b'\\');
    if name.as_bytes().iter().any(forbidden) {
        return Some("a name with a character Windows forbids (:*?\"<>|\\)");
    }
    if is_windows_device_name(name) {
        return Some("a name Windows reserves for a device");
    }
    None
}

/// Whether `name` is its own folded form ([`fold`]): ASCII without a capital letter.
fn is_folded(name: &str) -> bool {
    !name
        .bytes()
        .any(|b| !b.is_ascii() || b.is_ascii_uppercase())
}

/// Of the names of one directory (each once), those another file system cannot hold as
/// they are, each with why: by its index in `names` as this leaves it. Of two names that
/// differ only in case or normalization, the second in name order is the one reported:
/// `names` is sorted for that, but only when a name folds to another form (two distinct
/// names that are their own folded forms cannot fold alike), so that a directory of
/// lowercase ASCII names, the usual one, costs a pass over them and neither a sort nor a
/// folded copy of each in a map.
pub(super) fn not_portable(names: &mut [&str]) -> Vec<(usize, &'static str)> {
    let mut found = Vec::new();
    if names.iter().all(|name| is_folded(name)) {
        for (i, name) in names.iter().enumerate() {
            if let Some(why) = windows_refuses(name) {
                found.push((i, why));
            }
        }
        return found;
    }
    names.sort_unstable();
    let mut seen: HashMap<String, usize> = HashMap::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        if let Some(why) = windows_refuses(name) {
            found.push((i, why));
        }
        if seen.insert(fold(name).into_owned(), i).is_some() {
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
    use resourcesync_model::names::WINDOWS_DEVICE_NAMES;

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
        let mut sorted = names;
        let found: Vec<&str> = not_portable(&mut sorted)
            .into_iter()
            .map(|(i, _)| sorted[i])
            .collect();
        // In name order, the second of each pair of twins: `readme.txt`, `caf\u{e9}`.
        assert_eq!(
            found,
            [
                "CON",
                "a ",
                "a.",
                "a:b",
                "caf\u{e9}",
                "nul.txt",
                "readme.txt"
            ]
        );
    }

    #[test]
    fn every_reserved_name_is_found_by_its_first_letter_and_length() {
        for reserved in WINDOWS_DEVICE_NAMES {
            let first = reserved.as_bytes()[0];
            assert!(
                b"ACLNP".contains(&first) && reserved.len() <= 7,
                "{reserved}"
            );
            let lower = reserved.to_lowercase();
            for name in [reserved.to_owned(), lower.clone(), format!("{lower}.txt")] {
                assert!(windows_refuses(&name).is_some(), "{name}");
            }
        }
    }

    #[test]
    fn names_that_fold_to_themselves_are_checked_without_the_twin_pass() {
        let mut names = ["plain.txt", "nul.txt", "a.", "d000", "com1"];
        let found: Vec<&str> = not_portable(&mut names)
            .into_iter()
            .map(|(i, _)| names[i])
            .collect();
        assert_eq!(found, ["nul.txt", "a.", "com1"]);
        // One capital letter, and the twins are found whatever order the names came in.
        for mut names in [["b", "readme", "README"], ["README", "b", "readme"]] {
            let found: Vec<&str> = not_portable(&mut names)
                .into_iter()
                .map(|(i, _)| names[i])
                .collect();
            assert_eq!(found, ["readme"]);
        }
    }
}
