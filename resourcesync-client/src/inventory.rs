//! What the Destination holds: the caller's inventory, which the client compares with
//! what the Source lists so that only what differs is fetched.
//!
//! The inventory is the caller's (a directory scanned once, a database, a map kept in
//! memory): the client asks it about one URI at a time ([`Inventory::get`]) and walks it
//! once, after a whole listing was read, to find what the Source no longer lists
//! ([`Inventory::for_each`]). [`MemoryInventory`] is a ready one, kept in a map.

use std::collections::HashMap;

use resourcesync_model::{Digest, Digests, HashAlgorithm, Md, Uri, W3cDateTime};

/// What the Destination holds of one resource: as much as it knows of it. Every field is
/// optional; the comparison ([`Held::compare`]) uses the strongest evidence both sides
/// have.
///
/// Serialized with the digests in hexadecimal, absent fields left out.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[non_exhaustive]
pub struct Held {
    /// Length in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<u64>,
    /// When the held copy was last modified at the Source, as the Source said when it
    /// was fetched (not the local file's time, which says when it was written here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lastmod: Option<W3cDateTime>,
    /// The md5 digest of the held bytes.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex")]
    pub md5: Option<Digest<16>>,
    /// The sha-256 digest of the held bytes.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "hex")]
    pub sha256: Option<Digest<32>>,
}

/// Digests as lowercase hexadecimal.
mod hex {
    use resourcesync_model::Digest;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer, const N: usize>(
        digest: &Option<Digest<N>>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match digest {
            Some(d) => serializer.collect_str(d),
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>, const N: usize>(
        deserializer: D,
    ) -> Result<Option<Digest<N>>, D::Error> {
        let Some(text) = Option::<String>::deserialize(deserializer)? else {
            return Ok(None);
        };
        let bad = || serde::de::Error::custom(format!("not {N} bytes in hexadecimal: {text:?}"));
        if text.len() != 2 * N || !text.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; N];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(Some(Digest(out)))
    }
}

impl Held {
    /// Nothing known but that the resource is held.
    pub fn new() -> Held {
        Held::default()
    }

    /// What a fetch or extraction the client verified gave: length and both digests,
    /// and the `lastmod` the Source listed.
    pub fn of(digests: &Digests, lastmod: Option<W3cDateTime>) -> Held {
        Held {
            length: Some(digests.length),
            lastmod,
            md5: Some(digests.md5),
            sha256: Some(digests.sha256),
        }
    }

    /// This record with a length.
    pub fn with_length(mut self, length: u64) -> Held {
        self.length = Some(length);
        self
    }

    /// This record with a last modification time.
    pub fn with_lastmod(mut self, lastmod: W3cDateTime) -> Held {
        self.lastmod = Some(lastmod);
        self
    }

    /// This record with an md5 digest.
    pub fn with_md5(mut self, md5: Digest<16>) -> Held {
        self.md5 = Some(md5);
        self
    }

    /// This record with a sha-256 digest.
    pub fn with_sha256(mut self, sha256: Digest<32>) -> Held {
        self.sha256 = Some(sha256);
        self
    }

    /// Whether the held copy is the one the Source lists with `md` and `lastmod`.
    ///
    /// By the strongest evidence both sides have: a hash both know (md5, sha-256) decides,
    /// a length that differs says changed; otherwise a `lastmod` later than the held one
    /// says changed and one not later says the same. When nothing can be compared (no
    /// hash in common, no `lastmod` on either side) the resource counts as changed:
    /// fetching it again is harmless, keeping a stale copy is not.
    pub fn compare(&self, md: Option<&Md>, lastmod: Option<&W3cDateTime>) -> Comparison {
        let length = md.and_then(|md| md.length);
        if let (Some(listed), Some(held)) = (length, self.length) {
            if listed != held {
                return Comparison::Differs(Difference::Length);
            }
        }
        let mut hashed = false;
        if let Some(hashes) = md.and_then(|md| md.hash.as_ref()) {
            for hash in hashes {
                let same = match (hash.algorithm(), &self.md5, &self.sha256) {
                    (HashAlgorithm::Md5, Some(held), _) => hash.matches(&held.0),
                    (HashAlgorithm::Sha256, _, Some(held)) => hash.matches(&held.0),
                    _ => continue,
                };
                if !same {
                    return Comparison::Differs(Difference::Hash);
                }
                hashed = true;
            }
        }
        if hashed {
            return Comparison::Same;
        }
        match (lastmod, &self.lastmod) {
            (Some(listed), Some(held)) if held < listed => Comparison::Differs(Difference::Lastmod),
            (Some(_), Some(_)) => Comparison::Same,
            _ => Comparison::Differs(Difference::Unknown),
        }
    }
}

/// What [`Held::compare`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Comparison {
    /// The held copy is the listed one.
    Same,
    /// It is not, or it cannot be told.
    Differs(Difference),
}

/// Why a held copy counts as changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Difference {
    /// The listed length is another.
    Length,
    /// A listed hash is another.
    Hash,
    /// The listed `lastmod` is later.
    Lastmod,
    /// Nothing could be compared.
    Unknown,
}

/// The Destination's resources, as the client asks about them. Implemented by the
/// caller over whatever it keeps; [`MemoryInventory`] keeps a map.
pub trait Inventory {
    /// What is held of the resource `uri`, if it is held.
    fn get(&self, uri: &Uri) -> Option<Held>;
    /// Calls `f` once for every resource held, in any order. Called at most once per
    /// listing, after the whole listing was read (deletions, an audit's extra resources).
    fn for_each(&self, f: &mut dyn FnMut(&Uri, &Held));
}

impl<T: Inventory + ?Sized> Inventory for &T {
    fn get(&self, uri: &Uri) -> Option<Held> {
        (**self).get(uri)
    }

    fn for_each(&self, f: &mut dyn FnMut(&Uri, &Held)) {
        (**self).for_each(f)
    }
}

/// An inventory kept in memory: a map from URI to what is held. A driver fills it from
/// its own records, and keeps it up to date as it applies the client's changes
/// ([`MemoryInventory::insert`], [`MemoryInventory::remove`]). Serialized as a map from
/// URI to [`Held`], to keep between runs.
///
/// Keyed by foldhash, randomly seeded per process: a lookup per listed entry is the client's
/// largest cost after reading, and SipHash over a URI took about a tenth of a planning run;
/// the random seed keeps a Source from choosing URIs that collide.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct MemoryInventory {
    held: HashMap<Uri, Held, foldhash::fast::RandomState>,
}

impl PartialEq for MemoryInventory {
    fn eq(&self, other: &MemoryInventory) -> bool {
        self.held == other.held
    }
}

impl MemoryInventory {
    /// An empty inventory: a Destination that holds nothing yet.
    pub fn new() -> MemoryInventory {
        MemoryInventory::default()
    }

    /// Records that `uri` is held as `held`; what it replaces, if anything.
    pub fn insert(&mut self, uri: Uri, held: Held) -> Option<Held> {
        self.held.insert(uri, held)
    }

    /// Records that `uri` is no longer held.
    pub fn remove(&mut self, uri: &Uri) -> Option<Held> {
        self.held.remove(uri)
    }

    /// How many resources are held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The held resources, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uri, &Held)> {
        self.held.iter()
    }
}

impl FromIterator<(Uri, Held)> for MemoryInventory {
    fn from_iter<T: IntoIterator<Item = (Uri, Held)>>(iter: T) -> MemoryInventory {
        MemoryInventory {
            held: iter.into_iter().collect(),
        }
    }
}

impl Inventory for MemoryInventory {
    fn get(&self, uri: &Uri) -> Option<Held> {
        self.held.get(uri).copied()
    }

    fn for_each(&self, f: &mut dyn FnMut(&Uri, &Held)) {
        for (uri, held) in &self.held {
            f(uri, held)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resourcesync_model::{Fixity, Hashes};

    fn digests(bytes: &[u8]) -> Digests {
        let mut f = Fixity::new();
        f.update(bytes);
        f.finish()
    }

    fn t(s: &str) -> W3cDateTime {
        s.parse().unwrap()
    }

    #[test]
    fn a_hash_in_common_decides() {
        let held = Held::of(&digests(b"abc"), Some(t("2020-01-01T00:00:00Z")));
        let same = Md::new().with_hash(digests(b"abc").hashes());
        let other = Md::new().with_hash(digests(b"abd").hashes());
        // A later lastmod does not matter when the hashes agree.
        assert_eq!(
            held.compare(Some(&same), Some(&t("2021-01-01T00:00:00Z"))),
            Comparison::Same
        );
        assert_eq!(
            held.compare(Some(&other), None),
            Comparison::Differs(Difference::Hash)
        );
        let md5_only = Md::new().with_hash(Hashes::from(resourcesync_model::Hash::md5(
            digests(b"abc").md5.0,
        )));
        assert_eq!(held.compare(Some(&md5_only), None), Comparison::Same);
    }

    #[test]
    fn an_inventory_keeps_as_json() {
        let mut inventory = MemoryInventory::new();
        inventory.insert(
            "https://example.com/a".parse().unwrap(),
            Held::of(&digests(b"abc"), Some(t("2020-01-01T00:00:00Z"))),
        );
        inventory.insert(
            "https://example.com/b".parse().unwrap(),
            Held::new().with_length(4),
        );
        let json = serde_json::to_string(&inventory).unwrap();
        assert!(
            json.contains(r#""md5":"900150983cd24fb0d6963f7d28e17f72""#),
            "{json}"
        );
        assert!(
            json.contains(r#""https://example.com/b":{"length":4}"#),
            "{json}"
        );
        assert_eq!(
            serde_json::from_str::<MemoryInventory>(&json).unwrap(),
            inventory
        );
        assert!(serde_json::from_str::<Held>(r#"{"md5":"00"}"#).is_err());
    }

    #[test]
    fn length_then_lastmod_then_unknown() {
        let held = Held::new()
            .with_length(3)
            .with_lastmod(t("2020-01-01T00:00:00Z"));
        assert_eq!(
            held.compare(Some(&Md::new().with_length(4)), None),
            Comparison::Differs(Difference::Length)
        );
        assert_eq!(
            held.compare(None, Some(&t("2020-01-02T00:00:00Z"))),
            Comparison::Differs(Difference::Lastmod)
        );
        assert_eq!(
            held.compare(None, Some(&t("2020-01-01T00:00:00Z"))),
            Comparison::Same
        );
        assert_eq!(
            Held::new().compare(None, Some(&t("2020-01-01T00:00:00Z"))),
            Comparison::Differs(Difference::Unknown)
        );
        assert_eq!(
            held.compare(Some(&Md::new().with_length(3)), None),
            Comparison::Differs(Difference::Unknown)
        );
    }
}
