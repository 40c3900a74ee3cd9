//! The rules on one value where it stands: a capability, an interval, a URI, the hash
//! algorithms, a path in a package, a link; and the set of `<loc>`s seen.

use super::*;

/// The finding for a capability the standards do not define: an error naming the value
/// meant for a near miss, else a warning.
pub(super) fn undefined_capability(capability: &Capability, n: Option<u64>) -> Finding {
    let value = crate::rules::clip(capability.as_str());
    match capability.meant() {
        Some(meant) => Finding {
            message: format!("capability \"{value}\" is not defined; did you mean \"{meant}\"?"),
            ..Finding::new(Rule::CapabilityMisspelt, n)
        },
        None => Finding {
            message: format!("capability \"{value}\" is not defined by the standards"),
            ..Finding::new(Rule::CapabilityUnknown, n)
        },
    }
}

/// `completed` not before `at`, `until` not before `from`, and the recommended form of all
/// four, on one `<rs:md>`.
pub(super) fn check_intervals(md: &Md, n: Option<u64>, out: &mut Vec<Finding>) {
    // Most entries have none of the four: one test each, then nothing to build.
    if md.at.is_none() && md.completed.is_none() && md.from.is_none() && md.until.is_none() {
        return;
    }
    // A lower bound is the start of its period and an upper bound its end
    // (`W3cDateTime::precedes`): `until="2013-01-03"` covers the whole day.
    if let (Some(at), Some(completed)) = (&md.at, &md.completed) {
        if completed.precedes(at) {
            out.push(Finding {
                message: format!("completed {completed} is before at {at}"),
                ..Finding::new(Rule::CompletedBeforeAt, n)
            });
        }
    }
    if let (Some(from), Some(until)) = (&md.from, &md.until) {
        if until.precedes(from) {
            out.push(Finding {
                message: format!("until {until} is before from {from}"),
                ..Finding::new(Rule::UntilBeforeFrom, n)
            });
        }
    }
    for (name, value) in md.times() {
        if let Some(value) = value.filter(|v| !v.is_recommended_form()) {
            out.push(Finding {
                message: format!(
                    "{name} {value} should be a complete UTC datetime (YYYY-MM-DDThh:mm:ss[.s]Z)"
                ),
                ..Finding::new(Rule::DatetimeForm, n)
            });
        }
    }
}

/// Where a URI stands, for the messages and for the rules that depend on it.
#[derive(Clone, Copy)]
pub(super) enum UriPlace<'a> {
    /// An entry's `<loc>`.
    Loc,
    /// The `href` of a link with this relation.
    Href(&'a Relation),
}

pub(super) fn check_uri(
    value: &crate::Uri,
    place: UriPlace<'_>,
    n: Option<u64>,
    out: &mut Vec<Finding>,
) {
    let what = match place {
        UriPlace::Loc => "loc",
        UriPlace::Href(_) => "href",
    };
    // Bytes bound characters from above: count characters only for long URIs.
    let s = value.as_str();
    if s.len() > uri::MAX_URI_LEN && s.chars().count() > uri::MAX_URI_LEN {
        let len = s.chars().count();
        out.push(Finding {
            message: format!(
                "{what} is {len} characters long; the Sitemap protocol allows less than {}",
                uri::MAX_URI_LEN + 1
            ),
            ..Finding::new(Rule::UriLength, n)
        });
    }
    if value.is_http() {
        // The common case: one compare of the scheme, then the authority.
    } else if value.has_unsafe_scheme() {
        out.push(Finding {
            message: format!(
                "{what} \"{}\" uses the {} scheme, which runs code or names local files",
                crate::rules::clip(s),
                value.scheme()
            ),
            ..Finding::new(Rule::UriScheme, n)
        });
    } else if !matches!(place, UriPlace::Href(Relation::Duplicate)) {
        out.push(Finding {
            message: format!(
                "{what} \"{}\" uses the {} scheme, not http or https",
                crate::rules::clip(s),
                value.scheme()
            ),
            ..Finding::new(Rule::UriSchemeNotHttp, n)
        });
    }
    // Nearly no URI has an `@` (a userinfo) or a byte outside ASCII (which every
    // bidirectional formatting character has): `Uri::parse`'s own pass noted them.
    let (at_sign, non_ascii) = (value.has_at_sign(), !value.is_ascii());
    if !at_sign {
    } else if let (Some(userinfo), Some(host)) = (value.userinfo(), value.host()) {
        out.push(Finding {
            message: format!(
                "{what} \"{}\" has the userinfo \"{}\" before its host: it names the host \"{}\"",
                crate::rules::clip(s),
                crate::rules::clip(userinfo),
                crate::rules::clip(host)
            ),
            ..Finding::new(Rule::UriUserinfo, n)
        });
    }
    if let Some(c) = non_ascii.then(|| value.bidi_formatting_char()).flatten() {
        out.push(Finding {
            message: format!(
                "{what} \"{}\" contains the bidirectional formatting character U+{:04X}",
                crate::rules::clip(s).escape_default(),
                u32::from(c)
            ),
            ..Finding::new(Rule::UriBidi, n)
        });
    }
}

pub(super) fn check_hash_algorithms(hash: &crate::Hashes, n: Option<u64>, out: &mut Vec<Finding>) {
    for h in hash.iter().filter(|h| h.is_base64()) {
        out.push(Finding {
            message: format!(
                "the {} digest is base64, not hex; read as base64",
                h.algorithm()
            ),
            ..Finding::new(Rule::HashBase64, n)
        });
    }
    let checkable =
        |h: &crate::Hash| matches!(h.algorithm(), HashAlgorithm::Md5 | HashAlgorithm::Sha256);
    if !hash.iter().any(checkable) {
        out.push(Finding {
            message: format!(
                "hash \"{}\" has no md5 or sha-256 digest, which Destinations check",
                crate::rules::clip(&hash.to_string())
            ),
            ..Finding::new(Rule::HashUncheckable, n)
        });
    }
    // Checked for every entry: the common case, only named algorithms, costs one pass.
    if hash.iter().all(|h| h.algorithm().digest_len().is_some()) {
        return;
    }
    for name in hash.unknown_algorithms() {
        out.push(Finding {
            message: format!(
                "hash algorithm \"{}\" is not in IANA's hash name registries",
                crate::rules::clip(name)
            ),
            ..Finding::new(Rule::HashAlgorithmUnknown, n)
        });
    }
}

pub(super) fn check_path(
    kind: K,
    path: &crate::BitstreamPath,
    on: &str,
    n: Option<u64>,
    out: &mut Vec<Finding>,
) {
    if !is_manifest(kind) {
        out.push(Finding {
            message: format!("path \"{path}\" on {on} outside a manifest"),
            ..Finding::new(Rule::PathOutsideManifest, n)
        });
    }
    if !path.has_leading_slash() {
        out.push(Finding {
            message: format!("path \"{path}\" on {on} does not start with a slash"),
            ..Finding::new(Rule::PathLeadingSlash, n)
        });
    }
    if path.climbs_out() {
        out.push(Finding {
            message: format!("path \"{path}\" on {on} climbs out of the package"),
            ..Finding::new(Rule::PathClimbsOut, n)
        });
    }
    if let Some(no_file) = path.names_no_file() {
        out.push(Finding {
            message: format!(
                "path \"{}\" on {on} {no_file}",
                crate::rules::clip(path.as_str())
            ),
            ..Finding::new(Rule::PathNamesNoFile, n)
        });
    }
}

/// The `<loc>`s of a document's entries, for [`Rule::LocDuplicate`] (and a manifest's
/// bitstream paths, for [`Rule::PathDuplicate`]), in bounded memory.
///
/// Each URI is kept as a 64-bit foldhash (its `quality` variant) under a seed drawn at
/// random for each document,
/// with the number of the entry that listed it first: 16 bytes an entry in the table,
/// about 1 MiB for the 50,000 entries a document may have. Entries after the 50,000th
/// (already a [`Rule::MaxEntries`] error) are not remembered, so a larger document cannot
/// grow it. Two different URIs of one document share a hash with a chance of about
/// n²/2⁶⁵, 7·10⁻¹¹ for a full document, and a key an attacker does not know makes that
/// impossible to aim at; such a collision would report a false `loc-duplicate` warning.
/// A 128-bit key was measured: its table is twice as large and inserting into it cost
/// two to three times as much, for a chance that is already negligible; SipHash-1-3,
/// std's keyed hash, took two thirds of the checker's time on a 50,000-entry Resource
/// List, and foldhash (the crate hashbrown hashes with) a fifth of that. URIs compare as
/// written (the model never normalises them): `http://Example.com/a` and
/// `http://example.com/a` are two.
#[derive(Clone, Debug, Default)]
pub(super) struct LocSet {
    pub(super) key: foldhash::quality::RandomState,
    pub(super) first: HashMap<u64, u32, BuildHasherDefault<Prehashed>>,
}

impl LocSet {
    /// Remembers a URI (or path) listed by entry `n`; returns the entry that listed it
    /// before.
    pub(super) fn insert(&mut self, loc: &str, n: u64) -> Option<u32> {
        // One probe: the entry is looked up where it would be inserted.
        match self.first.entry(self.hash(loc)) {
            Slot::Occupied(first) => Some(*first.get()),
            Slot::Vacant(slot) => {
                if n <= MAX_ENTRIES {
                    // n fits u32: MAX_ENTRIES does.
                    slot.insert(n as u32);
                }
                None
            }
        }
    }

    /// Forgets a URI remembered by [`insert`](LocSet::insert).
    pub(super) fn remove(&mut self, loc: &str) {
        let key = self.hash(loc);
        self.first.remove(&key);
    }

    /// The URI's bytes hashed as they are, without the terminator `Hash for str` adds (a
    /// set of whole URIs needs none).
    pub(super) fn hash(&self, loc: &str) -> u64 {
        let mut hasher = self.key.build_hasher();
        hasher.write(loc.as_bytes());
        hasher.finish()
    }
}

/// A hasher for keys that are random hashes already: it keeps their low 64 bits.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; any other input is folded in all the same.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

pub(super) fn check_link(
    kind: K,
    link: &Link,
    n: Option<u64>,
    bad: Attributes,
    out: &mut Vec<Finding>,
) {
    let has_type = link.media_type.is_some() || bad.contains(A::Type);
    check_uri(&link.href, UriPlace::Href(&link.rel), n, out);
    if let Some(hash) = &link.hash {
        check_hash_algorithms(hash, n, out);
    }
    if let Some(path) = &link.path {
        check_path(kind, path, "rs:ln", n, out);
    }
    match link.rel {
        Relation::Patch => {
            let applicable = n.is_some()
                && matches!(
                    kind,
                    K::ChangeList | K::ChangeDumpManifest | K::ChangeNotification | K::Unknown
                );
            if !applicable {
                let place = match (n, kind) {
                    (None, _) => format!("on a {}'s document level", kind.name()),
                    (Some(_), K::ChangeDump) => "on a Change Dump's entry (the patches of a Change Dump belong in its Change Dump Manifests)".to_owned(),
                    (Some(_), _) => format!("on an entry of a {}", kind.name()),
                };
                out.push(Finding {
                    message: format!(
                        "patch link to \"{}\" {place}: patch links are only applicable to Change Lists, Change Dumps and change notifications",
                        crate::rules::clip(link.href.as_str())
                    ),
                    ..Finding::new(Rule::PatchLinkNotApplicable, n)
                });
            }
            if !has_type {
                out.push(Finding::new(Rule::PatchLinkType, n));
            }
            if kind == K::ChangeDumpManifest && link.path.is_none() && !bad.contains(A::Path) {
                out.push(Finding::new(Rule::PatchLinkPath, n));
            }
        }
        Relation::Duplicate => {
            let repeated: Vec<&str> = [A::Hash, A::Length, A::Type, A::Encoding, A::Path]
                .into_iter()
                .filter(|a| a.ln_value(link).is_some())
                .map(A::as_str)
                .collect();
            if !repeated.is_empty() {
                out.push(Finding {
                    message: format!(
                        "duplicate link to \"{}\" has {}: a mirror's rs:md values are the resource's, and should be omitted",
                        crate::rules::clip(link.href.as_str()),
                        repeated.join(", ")
                    ),
                    ..Finding::new(Rule::DuplicateLinkAttributes, n)
                });
            }
        }
        Relation::Alternate if !has_type => out.push(Finding {
            message: format!(
                "alternate link to \"{}\" has no type",
                crate::rules::clip(link.href.as_str())
            ),
            ..Finding::new(Rule::AlternateLinkType, n)
        }),
        Relation::TimeGate => {
            // Any attribute of the table but the two every link has.
            let extra = RsElement::Ln
                .attributes()
                .any(|a| !matches!(a, A::Rel | A::Href) && a.ln_value(link).is_some());
            if extra {
                out.push(Finding::new(Rule::TimegateLinkAttributes, n));
            }
        }
        _ => {}
    }
}
