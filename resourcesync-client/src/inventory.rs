//! What the Destination holds: the caller's inventory, which the client compares with
//! what the Source lists so that only what differs is fetched.
//!
//! The inventory is the caller's (a directory scanned once, a database, a map kept in
//! memory): the client asks it about one URI at a time ([`Inventory::get`]) and walks it
//! once, after a whole listing was read, to find what the Source no longer lists
//! ([`Inventory::for_each`]). [`MemoryInventory`] is a ready one, kept in a map.

use resourcesync_model::{Algorithms, Digest, HashAlgorithm, Md, Measured, Uri, W3cDateTime};

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

    /// The record of a file (an object) found holding something else than what was
    /// stored, or no longer a plain file: a length no file has, so that it compares as
    /// other than anything listed (the client fetches the resource again) and a
    /// destination's placement finds the path not what the sync stored (a conflict,
    /// unless it replaces such files). For one run, never saved.
    pub fn changed() -> Held {
        Held::new().with_length(u64::MAX)
    }

    /// Whether this is [`Held::changed`]'s record.
    pub fn is_changed(&self) -> bool {
        self.length == Some(u64::MAX)
    }

    /// What a fetch or extraction the client verified gave: the length and the digests
    /// computed, and the `lastmod` the Source listed.
    pub fn of(measured: &Measured, lastmod: Option<W3cDateTime>) -> Held {
        Held {
            length: Some(measured.length),
            lastmod,
            md5: measured.md5,
            sha256: measured.sha256,
        }
    }

    /// What the Source listed for a resource, as held once a copy verified against it is:
    /// the listed length, md5 and sha-256 digests (each if listed), and `lastmod`.
    pub fn listed(md: Option<&Md>, lastmod: Option<W3cDateTime>) -> Held {
        let hashes = md.and_then(|md| md.hash.as_ref());
        let bytes = |algorithm| hashes.and_then(|h| h.get(&algorithm)).map(|h| h.bytes());
        Held {
            length: md.and_then(|md| md.length),
            lastmod,
            md5: bytes(HashAlgorithm::Md5).and_then(|b| b.try_into().ok().map(Digest)),
            sha256: bytes(HashAlgorithm::Sha256).and_then(|b| b.try_into().ok().map(Digest)),
        }
    }

    /// The digests to compute of a file to compare it with this record: those it
    /// records (sha-256 where it records none, which the length alone then decides).
    pub fn algorithms(&self) -> Algorithms {
        match (self.md5.is_some(), self.sha256.is_some()) {
            (true, true) => Algorithms::BOTH,
            (true, false) => Algorithms::MD5,
            _ => Algorithms::SHA256,
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

impl std::fmt::Display for Difference {
    /// What differs: `length`, `hash`, `lastmod`, or `nothing to compare`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Difference::Length => "length",
            Difference::Hash => "hash",
            Difference::Lastmod => "lastmod",
            Difference::Unknown => "nothing to compare",
        })
    }
}

/// The Destination's resources, as the client asks about them and records what the
/// caller applied. Implemented by the caller over whatever it keeps; [`MemoryInventory`]
/// keeps a map.
///
/// The client writes to it only when the caller confirms a change
/// ([`Client::applied`](crate::Client::applied)), so that the inventory and the files
/// never drift apart by a forgotten second call.
pub trait Inventory {
    /// What is held of the resource `uri`, if it is held.
    fn get(&self, uri: &Uri) -> Option<Held>;
    /// Calls `f` once for every resource held, in any order. Called at most once per
    /// listing, after the whole listing was read (deletions, an audit's extra resources).
    fn for_each(&self, f: &mut dyn FnMut(&Uri, &Held));
    /// Records that `uri` is held as `held` (a store or an extraction confirmed),
    /// replacing what was recorded.
    fn record(&mut self, uri: Uri, held: Held);
    /// Records that `uri` is no longer held (a deletion confirmed); nothing if it was not.
    fn forget(&mut self, uri: &Uri);
}

impl<T: Inventory + ?Sized> Inventory for &mut T {
    fn get(&self, uri: &Uri) -> Option<Held> {
        (**self).get(uri)
    }

    fn for_each(&self, f: &mut dyn FnMut(&Uri, &Held)) {
        (**self).for_each(f)
    }

    fn record(&mut self, uri: Uri, held: Held) {
        (**self).record(uri, held)
    }

    fn forget(&mut self, uri: &Uri) {
        (**self).forget(uri)
    }
}

/// An inventory kept in memory: a map from URI to what is held. A driver fills it from
/// its own records ([`MemoryInventory::insert`]); the client keeps it up to date as the
/// driver confirms changes. Serialized as a map from
/// URI to [`Held`], to keep between runs.
///
/// A lookup per listed entry is the client's largest cost after reading, and at a
/// million resources it is a matter of cache misses: the records are kept in a vector
/// (in the order inserted; a removal moves the last record into the gap) and found through
/// a table of indices keyed by foldhash of the URI, randomly seeded per process (the
/// seed keeps a Source from choosing URIs that collide). The table of a million
/// resources takes 18 MiB where a map of whole records took 240 MiB, so that a lookup
/// touches one record and index bytes that are more often cached.
#[derive(Clone, Default)]
pub struct MemoryInventory {
    /// What is held, one record per URI.
    records: Vec<(Uri, Held)>,
    /// Indices into `records`, by the hash of their URI.
    index: hashbrown::HashTable<usize>,
    hasher: crate::hash::SourceHash,
}

impl std::fmt::Debug for MemoryInventory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl PartialEq for MemoryInventory {
    /// The same resources held the same way, in whatever order.
    fn eq(&self, other: &MemoryInventory) -> bool {
        self.len() == other.len()
            && self
                .records
                .iter()
                .all(|(uri, held)| other.find(uri).is_some_and(|(_, h)| h == held))
    }
}

impl MemoryInventory {
    /// An empty inventory: a Destination that holds nothing yet.
    pub fn new() -> MemoryInventory {
        MemoryInventory::default()
    }

    fn hash(&self, uri: &Uri) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(uri.as_str())
    }

    /// The record of `uri` and its place in `records`.
    fn find(&self, uri: &Uri) -> Option<(usize, &Held)> {
        let records = &self.records;
        let i = *self.index.find(self.hash(uri), |&i| records[i].0 == *uri)?;
        Some((i, &records[i].1))
    }

    /// Records that `uri` is held as `held`; what it replaces, if anything.
    pub fn insert(&mut self, uri: Uri, held: Held) -> Option<Held> {
        if let Some((i, _)) = self.find(&uri) {
            return Some(std::mem::replace(&mut self.records[i].1, held));
        }
        let hash = self.hash(&uri);
        let i = self.records.len();
        let (records, hasher) = (&self.records, &self.hasher);
        self.index.insert_unique(hash, i, |&j| {
            use std::hash::BuildHasher;
            hasher.hash_one(records[j].0.as_str())
        });
        self.records.push((uri, held));
        None
    }

    /// Records that `uri` is no longer held.
    pub fn remove(&mut self, uri: &Uri) -> Option<Held> {
        let hash = self.hash(uri);
        let records = &self.records;
        let found = self
            .index
            .find_entry(hash, |&i| records[i].0 == *uri)
            .ok()?;
        let (i, _) = found.remove();
        let last = self.records.len() - 1;
        if i != last {
            // The last record moves into the gap: its index follows it.
            let moved = self.hash(&self.records[last].0);
            if let Some(slot) = self.index.find_mut(moved, |&j| j == last) {
                *slot = i;
            }
        }
        Some(self.records.swap_remove(i).1)
    }

    /// How many resources are held.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The held resources, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&Uri, &Held)> {
        self.records.iter().map(|(uri, held)| (uri, held))
    }
}

impl FromIterator<(Uri, Held)> for MemoryInventory {
    fn from_iter<T: IntoIterator<Item = (Uri, Held)>>(iter: T) -> MemoryInventory {
        let mut inventory = MemoryInventory::new();
        inventory.extend(iter);
        inventory
    }
}

impl Extend<(Uri, Held)> for MemoryInventory {
    fn extend<T: IntoIterator<Item = (Uri, Held)>>(&mut self, iter: T) {
        let iter = iter.into_iter();
        let (n, _) = iter.size_hint();
        self.records.reserve(n);
        let (records, hasher) = (&self.records, &self.hasher);
        self.index.reserve(n, |&j| {
            use std::hash::BuildHasher;
            hasher.hash_one(records[j].0.as_str())
        });
        for (uri, held) in iter {
            self.insert(uri, held);
        }
    }
}

impl serde::Serialize for MemoryInventory {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_map(self.iter())
    }
}

impl<'de> serde::Deserialize<'de> for MemoryInventory {
    /// A map from URI to [`Held`]; of a URI given twice, the last record counts.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = MemoryInventory;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map from URI to what is held")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<MemoryInventory, A::Error> {
                let mut inventory = MemoryInventory::new();
                while let Some((uri, held)) = map.next_entry::<Uri, Held>()? {
                    inventory.insert(uri, held);
                }
                Ok(inventory)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl Inventory for MemoryInventory {
    fn get(&self, uri: &Uri) -> Option<Held> {
        self.find(uri).map(|(_, held)| *held)
    }

    fn for_each(&self, f: &mut dyn FnMut(&Uri, &Held)) {
        for (uri, held) in &self.records {
            f(uri, held)
        }
    }

    fn record(&mut self, uri: Uri, held: Held) {
        self.insert(uri, held);
    }

    fn forget(&mut self, uri: &Uri) {
        self.remove(uri);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resourcesync_model::{Fixity, Hashes};

    fn digests(bytes: &[u8]) -> resourcesync_model::Digests {
        let mut f = Fixity::new();
        f.update(bytes);
        f.finish()
    }

    fn t(s: &str) -> W3cDateTime {
        s.parse().unwrap()
    }

    #[test]
    fn what_is_listed_is_held_as_a_verified_copy_would_be() {
        let d = digests(b"abc");
        let lastmod = Some(t("2020-01-01T00:00:00Z"));
        let md = Md::new().with_length(3).with_hash(d.hashes());
        assert_eq!(
            Held::listed(Some(&md), lastmod),
            Held::of(&d.into(), lastmod)
        );
        let md5_only = Md::new().with_hash(Hashes::from(resourcesync_model::Hash::md5(d.md5.0)));
        assert_eq!(
            Held::listed(Some(&md5_only), None),
            Held::new().with_md5(d.md5)
        );
        assert_eq!(Held::listed(None, None), Held::new());
    }

    #[test]
    fn a_hash_in_common_decides() {
        let held = Held::of(&digests(b"abc").into(), Some(t("2020-01-01T00:00:00Z")));
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
    fn removing_moves_the_last_record_and_finds_every_other() {
        let uri = |i: usize| -> Uri { format!("https://example.com/{i}").parse().unwrap() };
        let mut inventory: MemoryInventory = (0..100)
            .map(|i| (uri(i), Held::new().with_length(i as u64)))
            .collect();
        assert_eq!(inventory.len(), 100);
        assert_eq!(
            inventory.insert(uri(7), Held::new().with_length(70)),
            Some(Held::new().with_length(7))
        );
        for i in (0..100).step_by(3) {
            assert!(inventory.remove(&uri(i)).is_some());
            assert_eq!(inventory.remove(&uri(i)), None);
        }
        assert_eq!(inventory.len(), 66);
        for i in 0..100 {
            let expected = match i {
                _ if i % 3 == 0 => None,
                7 => Some(Held::new().with_length(70)),
                _ => Some(Held::new().with_length(i as u64)),
            };
            assert_eq!(inventory.get(&uri(i)), expected, "{i}");
        }
        let mut seen = 0;
        inventory.for_each(&mut |_, _| seen += 1);
        assert_eq!(seen, 66);
        let again: MemoryInventory = inventory
            .iter()
            .map(|(u, h)| (u.clone(), *h))
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        assert_eq!(again, inventory);
        assert!(format!("{inventory:?}").contains("https://example.com/1"));
    }

    #[test]
    fn an_inventory_keeps_as_json() {
        let mut inventory = MemoryInventory::new();
        inventory.insert(
            "https://example.com/a".parse().unwrap(),
            Held::of(&digests(b"abc").into(), Some(t("2020-01-01T00:00:00Z"))),
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
