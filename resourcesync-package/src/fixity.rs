//! Length, md5 and sha-256 of a bitstream, computed in one pass as its bytes go by.

use md5::{Digest as _, Md5};
use resourcesync_model::{Hash, HashAlgorithm, Hashes};
use sha2::Sha256;

use crate::Mismatch;

/// Length, md5 and sha-256 of a byte stream, updated as it goes.
#[derive(Clone, Default)]
pub struct Fixity {
    md5: Md5,
    sha256: Sha256,
    length: u64,
}

/// What a [`Fixity`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digests {
    /// The length in bytes.
    pub length: u64,
    /// The md5 digest.
    pub md5: [u8; 16],
    /// The sha-256 digest.
    pub sha256: [u8; 32],
}

impl std::fmt::Debug for Fixity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
            md5: self.md5.finalize().into(),
            sha256: self.sha256.finalize().into(),
        }
    }
}

impl Digests {
    /// The `hash` attribute value: `md5:… sha-256:…`.
    pub fn hashes(&self) -> Hashes {
        // Both digests have their algorithm's length, so neither constructor can fail;
        // an empty list would, and is not possible here either.
        let md5 = Hash::from_bytes(HashAlgorithm::Md5, &self.md5);
        let sha = Hash::from_bytes(HashAlgorithm::Sha256, &self.sha256);
        match (md5, sha) {
            (Ok(md5), Ok(sha)) => {
                Hashes::new(vec![md5, sha]).unwrap_or_else(|_| unreachable_empty())
            }
            _ => unreachable_empty(),
        }
    }

    /// The first digest of `hashes` this crate can compute (md5, sha-256) that these
    /// digests do not match, or `None` when all agree.
    pub fn mismatch(&self, hashes: &Hashes) -> Option<Mismatch> {
        // A parsed md5 or sha-256 has its algorithm's length (Hash::new checks it), so the
        // conversions below cannot fail; the zeros are never seen.
        for hash in hashes {
            let mismatch = match hash.algorithm() {
                HashAlgorithm::Md5 if !hash.matches(&self.md5) => Mismatch::Md5 {
                    expected: hash.bytes().try_into().unwrap_or([0; 16]),
                    actual: self.md5,
                },
                HashAlgorithm::Sha256 if !hash.matches(&self.sha256) => Mismatch::Sha256 {
                    expected: hash.bytes().try_into().unwrap_or([0; 32]),
                    actual: self.sha256,
                },
                _ => continue,
            };
            return Some(mismatch);
        }
        None
    }
}

#[cold]
fn unreachable_empty() -> ! {
    unreachable!("two digests of the right lengths make a valid hash list")
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
        assert_eq!(
            d.mismatch(&other),
            Some(Mismatch::Md5 {
                expected: [0; 16],
                actual: d.md5
            })
        );
    }
}
