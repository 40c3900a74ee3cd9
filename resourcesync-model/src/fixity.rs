//! Length, md5 and sha-256 of a byte stream, computed in one pass as its bytes go by, and
//! checked against the `length` and `hash` a document lists (section 7, Table 3).
//!
//! Anyone who receives a resource needs this, not only a package reader: a Destination
//! checks each download against its Resource List entry, a Source computes what it lists.
//! It is pure computation (the caller hands the bytes over), so it sits in the model.

use std::fmt;

use md5::{Digest as _, Md5};
use sha2::Sha256;

use crate::{Hash, HashAlgorithm, Hashes, Md};

/// Length, md5 and sha-256 of a byte stream, updated as it goes.
///
/// ```
/// use resourcesync_model::{Entry, Fixity};
///
/// let mut fixity = Fixity::new();
/// fixity.update(b"hello ");
/// fixity.update(b"world");
/// let digests = fixity.finish();
/// assert_eq!(digests.md5.to_string(), "5eb63bbbe01eeed093cb22bb8f5acdc3");
///
/// let entry = Entry::new("http://example.com/res1".parse()?)
///     .with_length(11)
///     .with_hash("md5:5eb63bbbe01eeed093cb22bb8f5acdc3".parse()?);
/// assert!(digests.verify(entry.md.as_ref()).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Default)]
pub struct Fixity {
    md5: Md5,
    sha256: Sha256,
    length: u64,
}

impl fmt::Debug for Fixity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fixity")
            .field("length", &self.length)
            .finish_non_exhaustive()
    }
}

impl Fixity {
    /// Nothing seen yet.
    pub fn new() -> Fixity {
        Fixity::default()
    }

    /// Takes the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        self.md5.update(bytes);
        self.sha256.update(bytes);
        self.length += bytes.len() as u64;
    }

    /// Bytes seen so far.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The digests of everything seen.
    pub fn finish(self) -> Digests {
        Digests {
            length: self.length,
            md5: Digest(self.md5.finalize().into()),
            sha256: Digest(self.sha256.finalize().into()),
        }
    }
}

/// The bytes of a digest, shown as lowercase hexadecimal (as in a `hash` attribute) by both
/// `Display` and `Debug`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Digest<const N: usize>(pub [u8; N]);

impl<const N: usize> fmt::Display for Digest<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A table and one write a chunk, not `{:02x}` a byte: every file placed has its
        // digests written to the journal (a `write!` per byte was 1.5 % of a sync of
        // small files).
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0u8; 64];
        for chunk in self.0.chunks(32) {
            for (pair, byte) in text.chunks_exact_mut(2).zip(chunk) {
                pair[0] = HEX[usize::from(byte >> 4)];
                pair[1] = HEX[usize::from(byte & 15)];
            }
            let digits = &text[..2 * chunk.len()];
            f.write_str(std::str::from_utf8(digits).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

impl<const N: usize> fmt::Debug for Digest<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Digest({self})")
    }
}

impl<const N: usize> AsRef<[u8]> for Digest<N> {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// What a [`Fixity`] found: the length and both digests of a byte stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Digests {
    /// The length in bytes.
    pub length: u64,
    /// The md5 digest.
    pub md5: Digest<16>,
    /// The sha-256 digest.
    pub sha256: Digest<32>,
}

impl Digests {
    /// The `hash` attribute value: `md5:… sha-256:…`.
    pub fn hashes(&self) -> Hashes {
        Hashes::md5_sha256(self.md5.0, self.sha256.0)
    }

    /// The first digest of `hashes` this type computes (md5, sha-256) that these digests
    /// do not match, or `None` when all agree. Other algorithms (`sha-1`, …) are not
    /// checked.
    pub fn mismatch(&self, hashes: &Hashes) -> Option<FixityMismatch> {
        Measured::from(*self).mismatch(hashes)
    }

    /// Checks the `length` and `hash` of an `<rs:md>` (either may be absent; so may the
    /// `<rs:md>`): the first that differs, length first.
    pub fn verify(&self, md: Option<&Md>) -> Result<(), FixityMismatch> {
        Measured::from(*self).verify(md)
    }
}

/// Which digests a [`Measure`] computes: md5, sha-256 or both.
///
/// A Destination computes what checks what the Source lists ([`Algorithms::to_check`]),
/// not every digest it knows: on a large body hashing is most of the work of receiving
/// it, and md5 costs twice what sha-256 does on a processor with SHA extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Algorithms {
    md5: bool,
    sha256: bool,
}

impl Algorithms {
    /// md5 alone.
    pub const MD5: Algorithms = Algorithms {
        md5: true,
        sha256: false,
    };
    /// sha-256 alone.
    pub const SHA256: Algorithms = Algorithms {
        md5: false,
        sha256: true,
    };
    /// md5 and sha-256.
    pub const BOTH: Algorithms = Algorithms {
        md5: true,
        sha256: true,
    };

    /// Whether md5 is computed.
    pub fn md5(self) -> bool {
        self.md5
    }

    /// Whether sha-256 is computed.
    pub fn sha256(self) -> bool {
        self.sha256
    }

    /// What to compute to check a body against the `hash` of `md` as `verification`
    /// asks: the strongest listed digest ([`Verification::Strongest`]: sha-256 where it
    /// is listed, else md5) or every listed digest this family knows
    /// ([`Verification::All`]). Where neither md5 nor sha-256 is listed there is nothing
    /// to check, and sha-256 is computed all the same: a Destination records it as what
    /// it stored, and checks the file against it before it overwrites or deletes it.
    ///
    /// ```
    /// use resourcesync_model::{Algorithms, Md, Verification};
    ///
    /// let both = Md::new().with_hash("md5:900150983cd24fb0d6963f7d28e17f72 sha-256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad".parse()?);
    /// assert_eq!(Algorithms::to_check(Some(&both), Verification::Strongest), Algorithms::SHA256);
    /// assert_eq!(Algorithms::to_check(Some(&both), Verification::All), Algorithms::BOTH);
    /// let md5 = Md::new().with_hash("md5:900150983cd24fb0d6963f7d28e17f72".parse()?);
    /// assert_eq!(Algorithms::to_check(Some(&md5), Verification::Strongest), Algorithms::MD5);
    /// assert_eq!(Algorithms::to_check(None, Verification::All), Algorithms::SHA256);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn to_check(md: Option<&Md>, verification: Verification) -> Algorithms {
        let hashes = md.and_then(|md| md.hash.as_ref());
        let listed = |algorithm| hashes.is_some_and(|h| h.get(&algorithm).is_some());
        let (md5, sha256) = (listed(HashAlgorithm::Md5), listed(HashAlgorithm::Sha256));
        match verification {
            Verification::All if md5 => Algorithms { md5, sha256 },
            Verification::Strongest if md5 && !sha256 => Algorithms::MD5,
            _ => Algorithms::SHA256,
        }
    }
}

/// How much of what a Source lists of a body a Destination checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verification {
    /// The listed length and the strongest listed digest (sha-256 over md5): a body that
    /// matches it matches what the Source listed, short of a collision in the stronger
    /// algorithm, for half the hashing or less.
    #[default]
    Strongest,
    /// The listed length and every listed digest this family computes (md5 and sha-256):
    /// for a Source whose digests may disagree with each other, which the strongest alone
    /// would not notice.
    All,
}

/// Computes the length and the chosen [`Algorithms`] of a byte stream as it goes by: a
/// [`Fixity`] that leaves out what the check does not need.
///
/// ```
/// use resourcesync_model::{Algorithms, Measure};
///
/// let mut measure = Measure::new(Algorithms::SHA256);
/// measure.update(b"abc");
/// let measured = measure.finish();
/// assert_eq!(measured.length, 3);
/// assert!(measured.md5.is_none());
/// assert_eq!(measured.sha256.map(|d| d.to_string()).as_deref(),
///     Some("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
/// ```
#[derive(Clone, Default)]
pub struct Measure {
    md5: Option<Md5>,
    sha256: Option<Sha256>,
    length: u64,
}

impl fmt::Debug for Measure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Measure")
            .field("length", &self.length)
            .field("algorithms", &self.algorithms())
            .finish()
    }
}

impl Measure {
    /// Nothing seen yet; `algorithms` will be computed.
    pub fn new(algorithms: Algorithms) -> Measure {
        Measure {
            md5: algorithms.md5.then(Md5::default),
            sha256: algorithms.sha256.then(Sha256::default),
            length: 0,
        }
    }

    /// What it computes.
    pub fn algorithms(&self) -> Algorithms {
        Algorithms {
            md5: self.md5.is_some(),
            sha256: self.sha256.is_some(),
        }
    }

    /// Takes the next bytes.
    pub fn update(&mut self, bytes: &[u8]) {
        if let Some(md5) = &mut self.md5 {
            md5.update(bytes);
        }
        if let Some(sha256) = &mut self.sha256 {
            sha256.update(bytes);
        }
        self.length += bytes.len() as u64;
    }

    /// Bytes seen so far.
    pub fn length(&self) -> u64 {
        self.length
    }

    /// The length and the digests computed of everything seen.
    pub fn finish(self) -> Measured {
        Measured {
            length: self.length,
            md5: self.md5.map(|h| Digest(h.finalize().into())),
            sha256: self.sha256.map(|h| Digest(h.finalize().into())),
        }
    }
}

/// What a [`Measure`] found: the length of a byte stream and the digests it computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Measured {
    /// The length in bytes.
    pub length: u64,
    /// The md5 digest, if computed.
    pub md5: Option<Digest<16>>,
    /// The sha-256 digest, if computed.
    pub sha256: Option<Digest<32>>,
}

impl From<Digests> for Measured {
    fn from(digests: Digests) -> Measured {
        Measured {
            length: digests.length,
            md5: Some(digests.md5),
            sha256: Some(digests.sha256),
        }
    }
}

impl Measured {
    /// The digests it holds.
    pub fn algorithms(&self) -> Algorithms {
        Algorithms {
            md5: self.md5.is_some(),
            sha256: self.sha256.is_some(),
        }
    }

    /// The `hash` attribute value of the digests computed (`md5:… sha-256:…`, or one of
    /// them); `None` when none was.
    pub fn hashes(&self) -> Option<Hashes> {
        let hashes: Vec<Hash> = self
            .md5
            .map(|d| Hash::md5(d.0))
            .into_iter()
            .chain(self.sha256.map(|d| Hash::sha256(d.0)))
            .collect();
        Hashes::new(hashes).ok()
    }

    /// The first digest of `hashes` that was computed and does not match, or `None` when
    /// all agree. A listed md5 or sha-256 that was not computed, when none of the listed
    /// was, is [`FixityMismatch::Unchecked`]: nothing checked the bytes against the
    /// listing. Other algorithms (`sha-1`, …) are not checked.
    pub fn mismatch(&self, hashes: &Hashes) -> Option<FixityMismatch> {
        let mut unchecked = None;
        let mut checked = false;
        for hash in hashes {
            let mismatch = match (hash.algorithm(), self.md5, self.sha256) {
                (HashAlgorithm::Md5, Some(actual), _) if !hash.matches(&actual.0) => {
                    FixityMismatch::Md5 {
                        expected: Digest(to_array(&hash.bytes())),
                        actual,
                    }
                }
                (HashAlgorithm::Sha256, _, Some(actual)) if !hash.matches(&actual.0) => {
                    FixityMismatch::Sha256 {
                        expected: Digest(to_array(&hash.bytes())),
                        actual,
                    }
                }
                (HashAlgorithm::Md5, Some(_), _) | (HashAlgorithm::Sha256, _, Some(_)) => {
                    checked = true;
                    continue;
                }
                (HashAlgorithm::Md5, _, _) => {
                    unchecked = unchecked.or(Some(FixityMismatch::Unchecked { algorithm: "md5" }));
                    continue;
                }
                (HashAlgorithm::Sha256, _, _) => {
                    unchecked = unchecked.or(Some(FixityMismatch::Unchecked {
                        algorithm: "sha-256",
                    }));
                    continue;
                }
                _ => continue,
            };
            return Some(mismatch);
        }
        if checked { None } else { unchecked }
    }

    /// Checks the `length` and `hash` of an `<rs:md>` (either may be absent; so may the
    /// `<rs:md>`): the first that differs, length first.
    pub fn verify(&self, md: Option<&Md>) -> Result<(), FixityMismatch> {
        let Some(md) = md else { return Ok(()) };
        if let Some(expected) = md.length {
            if expected != self.length {
                return Err(FixityMismatch::Length {
                    expected,
                    actual: self.length,
                });
            }
        }
        match md.hash.as_ref().and_then(|h| self.mismatch(h)) {
            Some(mismatch) => Err(mismatch),
            None => Ok(()),
        }
    }
}

/// A parsed md5 or sha-256 has its algorithm's length (`Hash` checks it on parsing), so
/// the copy is whole; zeros would fill a short one, never seen.
fn to_array<const N: usize>(bytes: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    let n = bytes.len().min(N);
    out[..n].copy_from_slice(&bytes[..n]);
    out
}

/// Which fixity check failed, with what was listed and what the bytes gave.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FixityMismatch {
    /// Another length at the end of the stream.
    #[error("length is {actual}, listed as {expected}")]
    Length {
        /// The listed `length`.
        expected: u64,
        /// Bytes seen.
        actual: u64,
    },
    /// More bytes than the listed `length` (reading stopped there).
    #[error("length is more than {expected}, listed as {expected}")]
    Longer {
        /// The listed `length`.
        expected: u64,
    },
    /// Another md5.
    #[error("md5 is {actual}, listed as {expected}")]
    Md5 {
        /// The listed digest.
        expected: Digest<16>,
        /// The bytes' digest.
        actual: Digest<16>,
    },
    /// Another sha-256.
    #[error("sha-256 is {actual}, listed as {expected}")]
    Sha256 {
        /// The listed digest.
        expected: Digest<32>,
        /// The bytes' digest.
        actual: Digest<32>,
    },
    /// A digest was listed, and none of the listed was computed: the bytes were not
    /// checked (a caller measured other [`Algorithms`] than it was asked for).
    #[error("{algorithm} is listed and was not computed: the bytes are not checked")]
    Unchecked {
        /// The first listed algorithm not computed (`md5`, `sha-256`).
        algorithm: &'static str,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_shows_as_lower_case_hex_whatever_its_length() {
        assert_eq!(Digest([0x0f, 0xa0]).to_string(), "0fa0");
        assert_eq!(Digest([0xab; 40]).to_string(), "ab".repeat(40));
        assert_eq!(Digest([]).to_string(), "");
        assert_eq!(format!("{:?}", Digest([1])), "Digest(01)");
    }

    #[test]
    fn known_digests() {
        let mut f = Fixity::new();
        f.update(b"abc");
        let d = f.finish();
        assert_eq!(d.length, 3);
        assert_eq!(
            d.hashes().to_string(),
            "md5:900150983cd24fb0d6963f7d28e17f72 sha-256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert!(d.mismatch(&d.hashes()).is_none());
        let other: Hashes = "md5:00000000000000000000000000000000".parse().unwrap();
        let m = d.mismatch(&other).unwrap();
        assert_eq!(
            m,
            FixityMismatch::Md5 {
                expected: Digest([0; 16]),
                actual: d.md5
            }
        );
        assert_eq!(
            m.to_string(),
            "md5 is 900150983cd24fb0d6963f7d28e17f72, listed as 00000000000000000000000000000000"
        );
    }

    #[test]
    fn verify_checks_length_then_hashes() {
        let mut f = Fixity::new();
        f.update(b"abc");
        let d = f.finish();
        assert_eq!(d.verify(None), Ok(()));
        assert_eq!(d.verify(Some(&Md::new())), Ok(()));
        assert_eq!(
            d.verify(Some(&Md::new().with_length(4).with_hash(d.hashes()))),
            Err(FixityMismatch::Length {
                expected: 4,
                actual: 3
            })
        );
        let sha: Hashes =
            "sha-256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ae"
                .parse()
                .unwrap();
        assert!(matches!(
            d.verify(Some(&Md::new().with_length(3).with_hash(sha))),
            Err(FixityMismatch::Sha256 { .. })
        ));
        // An algorithm this type does not compute is not a mismatch.
        let sha1: Hashes = "sha-1:a9993e364706816aba3e25717850c26c9cd0d89d"
            .parse()
            .unwrap();
        assert_eq!(d.verify(Some(&Md::new().with_hash(sha1))), Ok(()));
    }

    #[test]
    fn a_measure_checks_what_it_computed_and_names_what_it_could_not() {
        let mut all = Fixity::new();
        all.update(b"abc");
        let all = all.finish();
        let measured = |algorithms| {
            let mut m = Measure::new(algorithms);
            m.update(b"abc");
            m.finish()
        };
        // What both compute agrees with the full digests.
        assert_eq!(Measured::from(all), measured(Algorithms::BOTH));
        let md5 = measured(Algorithms::MD5);
        assert_eq!((md5.md5, md5.sha256), (Some(all.md5), None));
        assert_eq!(md5.algorithms(), Algorithms::MD5);
        assert_eq!(
            md5.hashes().map(|h| h.to_string()).as_deref(),
            Some("md5:900150983cd24fb0d6963f7d28e17f72")
        );

        // Listed md5 and sha-256, md5 computed: the md5 decides.
        assert_eq!(md5.mismatch(&all.hashes()), None);
        let wrong_md5: Hashes = format!("md5:{} sha-256:{}", Digest([0; 16]), all.sha256)
            .parse()
            .unwrap();
        assert!(matches!(
            md5.mismatch(&wrong_md5),
            Some(FixityMismatch::Md5 { .. })
        ));
        // The sha-256 listed alone, md5 computed: nothing checked, and said.
        let sha: Hashes = format!("sha-256:{}", all.sha256).parse().unwrap();
        assert_eq!(
            md5.mismatch(&sha),
            Some(FixityMismatch::Unchecked {
                algorithm: "sha-256"
            })
        );
        assert_eq!(
            md5.mismatch(&sha).map(|m| m.to_string()).as_deref(),
            Some("sha-256 is listed and was not computed: the bytes are not checked")
        );
        // An algorithm this family does not compute is not checked by anyone.
        let sha1: Hashes = "sha-1:a9993e364706816aba3e25717850c26c9cd0d89d"
            .parse()
            .unwrap();
        assert_eq!(md5.mismatch(&sha1), None);
    }
}
