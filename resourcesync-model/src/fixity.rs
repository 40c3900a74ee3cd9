//! Length, md5 and sha-256 of a byte stream, computed in one pass as its bytes go by, and
//! checked against the `length` and `hash` a document lists (section 7, Table 3).
//!
//! Anyone who receives a resource needs this, not only a package reader: a Destination
//! checks each download against its Resource List entry, a Source computes what it lists.
//! It is pure computation (the caller hands the bytes over), so it sits in the model.

use std::fmt;

use md5::{Digest as _, Md5};
use sha2::Sha256;

use crate::{HashAlgorithm, Hashes, Md};

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
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
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
        for hash in hashes {
            let mismatch = match hash.algorithm() {
                HashAlgorithm::Md5 if !hash.matches(&self.md5.0) => FixityMismatch::Md5 {
                    expected: Digest(to_array(&hash.bytes())),
                    actual: self.md5,
                },
                HashAlgorithm::Sha256 if !hash.matches(&self.sha256.0) => FixityMismatch::Sha256 {
                    expected: Digest(to_array(&hash.bytes())),
                    actual: self.sha256,
                },
                _ => continue,
            };
            return Some(mismatch);
        }
        None
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
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
