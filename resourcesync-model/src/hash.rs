//! The `hash` attribute: fixity as a list of algorithm-tagged hex digests (section 7).

use std::fmt;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// A hash algorithm named in a `hash` attribute.
///
/// Section 7 gives `md5:` and `sha-256:` as examples of the token that names an algorithm
/// and says no more; the `hash` attribute comes from the Atom Link Extensions, whose tokens
/// are the IANA hash names. The algorithms of IANA's "Hash Function Textual Names" registry
/// (`md2`, `md5`, `sha-1`, `sha-224`, `sha-256`, `sha-384`, `sha-512`, `shake128`,
/// `shake256`) and "Named Information Hash Algorithm Registry" (`sha-256-128` and the other
/// truncations, `sha3-*`, `blake2*`) are known, with their digest lengths; names compare
/// case-insensitively and are written back in the registry's lower case. Any other token is
/// kept as written as [`HashAlgorithm::Other`] and flagged by
/// [`Rule::HashAlgorithmUnknown`](crate::Rule::HashAlgorithmUnknown).
///
/// ```
/// use resourcesync_model::HashAlgorithm;
///
/// assert_eq!(HashAlgorithm::from_token("SHA-512"), HashAlgorithm::Sha512);
/// assert_eq!(HashAlgorithm::Sha512.digest_len(), Some(64));
/// assert_eq!(HashAlgorithm::from_token("crc32"), HashAlgorithm::Other("crc32".into()));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
#[allow(non_camel_case_types)] // `Sha3_256` reads as the registry's `sha3-256`
pub enum HashAlgorithm {
    /// `md2`: 16-byte digests (Hash Function Textual Names).
    Md2,
    /// `md5`: 16-byte digests.
    Md5,
    /// `sha-1`: 20-byte digests.
    Sha1,
    /// `sha-224`: 28-byte digests.
    Sha224,
    /// `sha-256`: 32-byte digests.
    Sha256,
    /// `sha-384`: 48-byte digests.
    Sha384,
    /// `sha-512`: 64-byte digests.
    Sha512,
    /// `shake128`: 32-byte digests (its output length in the registry's RFC 8692).
    Shake128,
    /// `shake256`: 64-byte digests (RFC 8692).
    Shake256,
    /// `sha-256-128`: sha-256 cut to 16 bytes (Named Information, RFC 6920).
    Sha256_128,
    /// `sha-256-120`: sha-256 cut to 15 bytes (RFC 6920).
    Sha256_120,
    /// `sha-256-96`: sha-256 cut to 12 bytes (RFC 6920).
    Sha256_96,
    /// `sha-256-64`: sha-256 cut to 8 bytes (RFC 6920).
    Sha256_64,
    /// `sha-256-32`: sha-256 cut to 4 bytes (RFC 6920).
    Sha256_32,
    /// `sha3-224`: 28-byte digests (Named Information).
    Sha3_224,
    /// `sha3-256`: 32-byte digests (Named Information).
    Sha3_256,
    /// `sha3-384`: 48-byte digests (Named Information).
    Sha3_384,
    /// `sha3-512`: 64-byte digests (Named Information).
    Sha3_512,
    /// `blake2s-256`: 32-byte digests (Named Information).
    Blake2s256,
    /// `blake2b-256`: 32-byte digests (Named Information).
    Blake2b256,
    /// `blake2b-512`: 64-byte digests (Named Information).
    Blake2b512,
    /// Any other token, as written.
    Other(String),
}

/// Every known algorithm, its registered name and its digest length in bytes; the three
/// that nearly every document uses come first.
const REGISTERED: [(HashAlgorithm, &str, usize); 21] = [
    (HashAlgorithm::Md5, "md5", 16),
    (HashAlgorithm::Sha256, "sha-256", 32),
    (HashAlgorithm::Sha1, "sha-1", 20),
    (HashAlgorithm::Md2, "md2", 16),
    (HashAlgorithm::Sha224, "sha-224", 28),
    (HashAlgorithm::Sha384, "sha-384", 48),
    (HashAlgorithm::Sha512, "sha-512", 64),
    (HashAlgorithm::Shake128, "shake128", 32),
    (HashAlgorithm::Shake256, "shake256", 64),
    (HashAlgorithm::Sha256_128, "sha-256-128", 16),
    (HashAlgorithm::Sha256_120, "sha-256-120", 15),
    (HashAlgorithm::Sha256_96, "sha-256-96", 12),
    (HashAlgorithm::Sha256_64, "sha-256-64", 8),
    (HashAlgorithm::Sha256_32, "sha-256-32", 4),
    (HashAlgorithm::Sha3_224, "sha3-224", 28),
    (HashAlgorithm::Sha3_256, "sha3-256", 32),
    (HashAlgorithm::Sha3_384, "sha3-384", 48),
    (HashAlgorithm::Sha3_512, "sha3-512", 64),
    (HashAlgorithm::Blake2s256, "blake2s-256", 32),
    (HashAlgorithm::Blake2b256, "blake2b-256", 32),
    (HashAlgorithm::Blake2b512, "blake2b-512", 64),
];

impl HashAlgorithm {
    /// Every known algorithm, in the order of the registries.
    pub fn known() -> impl Iterator<Item = HashAlgorithm> {
        REGISTERED.into_iter().map(|(a, _, _)| a)
    }

    /// The token written before the colon: the registry's name for a known algorithm.
    pub fn as_str(&self) -> &str {
        match self {
            // The three common ones without a search of the table.
            HashAlgorithm::Md5 => "md5",
            HashAlgorithm::Sha1 => "sha-1",
            HashAlgorithm::Sha256 => "sha-256",
            HashAlgorithm::Other(s) => s,
            known => REGISTERED
                .iter()
                .find(|(a, _, _)| a == known)
                .map_or("", |(_, name, _)| name),
        }
    }

    /// The digest length in bytes, for the known algorithms.
    pub fn digest_len(&self) -> Option<usize> {
        match self {
            HashAlgorithm::Md5 => Some(16),
            HashAlgorithm::Sha1 => Some(20),
            HashAlgorithm::Sha256 => Some(32),
            HashAlgorithm::Other(_) => None,
            known => REGISTERED
                .iter()
                .find(|(a, _, _)| a == known)
                .map(|(_, _, len)| *len),
        }
    }

    /// The algorithm a token names, compared case-insensitively with the registered
    /// names; any other token is [`HashAlgorithm::Other`], as written.
    pub fn from_token(token: &str) -> HashAlgorithm {
        match token {
            "md5" => HashAlgorithm::Md5,
            "sha-1" => HashAlgorithm::Sha1,
            "sha-256" => HashAlgorithm::Sha256,
            other => REGISTERED
                .iter()
                .find(|(_, name, _)| name.eq_ignore_ascii_case(other))
                .map_or_else(
                    || HashAlgorithm::Other(other.to_owned()),
                    |(a, _, _)| a.clone(),
                ),
        }
    }
}

impl fmt::Display for HashAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a `hash` value is not valid.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HashError {
    /// Not a whitespace-delimited list of `algorithm:hexdigest` tokens.
    #[error("invalid hash \"{input}\": {reason}")]
    Syntax {
        /// The offending token, cut to 64 characters.
        input: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A digest whose length does not fit its algorithm.
    #[error(
        "invalid hash \"{input}\": a {algorithm} digest has {expected} hex digits, not {actual}"
    )]
    DigestLength {
        /// The offending token, cut to 64 characters.
        input: String,
        /// The algorithm.
        algorithm: String,
        /// Hex digits the algorithm's digests have.
        expected: usize,
        /// Hex digits given.
        actual: usize,
    },
    /// Two different digests for one algorithm: one representation has one digest per
    /// algorithm, so at least one of them is wrong and the fixity says nothing.
    #[error("invalid hash: two different {algorithm} digests, \"{first}\" and \"{second}\"")]
    Conflict {
        /// The algorithm, as written first.
        algorithm: String,
        /// The first digest, cut to 64 characters.
        first: String,
        /// The other digest, cut to 64 characters.
        second: String,
    },
}

impl RuleError for HashError {
    fn rule(&self) -> Rule {
        match self {
            HashError::Syntax { .. } => Rule::HashSyntax,
            HashError::DigestLength { .. } => Rule::HashDigestLength,
            HashError::Conflict { .. } => Rule::HashConflict,
        }
    }
}

/// One digest: an algorithm and its hex-encoded value, kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hash {
    algorithm: HashAlgorithm,
    digest: Digest,
}

/// A digest's value. Lower-case hex of up to 32 bytes (every md5, sha-1 and sha-256 digest
/// as tools write them) is kept as bytes, without an allocation; anything else as the
/// text written, so that it is written back the same.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Digest {
    Bytes {
        len: u8,
        bytes: [u8; 32],
    },
    Text(Box<str>),
    /// Base64 as some Sources write it (`md5:1B2M2Y8AsgTpgAmY7PhCfg==`): the bytes it
    /// decodes to, and the text as written.
    Base64 {
        bytes: Box<[u8]>,
        text: Box<str>,
    },
}

/// The bytes of a base64 digest (RFC 4648, the standard or the URL-safe alphabet, padded
/// or not); `None` for anything else.
fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let body = text.trim_end_matches('=');
    if text.len() - body.len() > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in body.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    // Bits left over must be zero, as an encoder writes them: anything else is no digest.
    (acc & ((1 << bits) - 1) == 0).then_some(out)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Each byte's value as a hex digit; 0x10 marks an upper-case digit (valid, but not the
/// form kept as bytes) and 0x80 a byte that is no hex digit. A table, because digests are
/// random: a branch per digit mispredicts half the time.
const HEX_VALUE: [u8; 256] = {
    let mut t = [0x80u8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut j = 0;
    while j < 6 {
        t[b'a' as usize + j] = 10 + j as u8;
        t[b'A' as usize + j] = 0x10 | (10 + j as u8);
        j += 1;
    }
    t
};

/// Bytes as lower-case hex.
fn lower_hex(bytes: &[u8]) -> String {
    bytes
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .map(char::from)
        .collect()
}

/// Lower-case hex of at most 64 digits, a multiple of eight, as bytes; `None` when any
/// digit is something else (upper case included), for the careful path to look at.
fn decode_lower_hex(hex: &[u8]) -> Option<(u8, [u8; 32])> {
    let mut bytes = [0u8; 32];
    for (digits, out) in hex.chunks_exact(8).zip(bytes.chunks_exact_mut(4)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(digits);
        out.copy_from_slice(&decode8(u64::from_le_bytes(word))?);
    }
    Some(((hex.len() / 2) as u8, bytes))
}

/// Eight lower-case hex digits, read as a little-endian word, to four bytes: a few word
/// operations (SWAR) instead of sixteen table lookups. `None` when any byte is not one of
/// `0-9a-f`.
fn decode8(x: u64) -> Option<[u8; 4]> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    if x & HIGH != 0 {
        return None;
    }
    // The high bit of each byte is set where the byte is at least `c`: bytes are below
    // 0x80 and `0x80 - c` at most 0x50, so no byte carries into the next.
    let at_least = |c: u8| (x + u64::from(0x80 - c) * ONES) & HIGH;
    let digit = at_least(b'0') & !at_least(b'9' + 1);
    let letter = at_least(b'a') & !at_least(b'f' + 1);
    if digit | letter != HIGH {
        return None;
    }
    // `0`-`9` have their value in the low nibble; `a`-`f` have 1-6 there, plus nine.
    let values = (x & (0x0F * ONES)) + (letter >> 7) * 9;
    // The first digit of each pair is the low byte of its 16-bit lane (little-endian).
    let lanes = (values & 0x00FF_00FF_00FF_00FF) << 4 | (values >> 8) & 0x00FF_00FF_00FF_00FF;
    let halves = (lanes | lanes >> 8) & 0x0000_FFFF_0000_FFFF;
    let word = (halves | halves >> 16) & 0xFFFF_FFFF;
    Some((word as u32).to_le_bytes())
}

fn nibble(c: u8) -> Option<u8> {
    let v = HEX_VALUE[usize::from(c)];
    (v & 0x80 == 0).then_some(v & 0x0F)
}

impl Hash {
    /// A digest given as hex text; fails when the text is not hex or its length does not
    /// fit a known algorithm.
    pub fn new(algorithm: HashAlgorithm, hex: &str) -> Result<Hash, HashError> {
        let token = format!("{algorithm}:{hex}");
        Hash::check(&token, algorithm, hex)
    }

    /// An md5 digest from its bytes; cannot fail, since the length is md5's.
    pub fn md5(digest: [u8; 16]) -> Hash {
        Hash::known(HashAlgorithm::Md5, &digest)
    }

    /// A sha-256 digest from its bytes; cannot fail, since the length is sha-256's.
    pub fn sha256(digest: [u8; 32]) -> Hash {
        Hash::known(HashAlgorithm::Sha256, &digest)
    }

    /// A digest of at most 32 bytes whose length the caller guarantees is the algorithm's.
    fn known(algorithm: HashAlgorithm, digest: &[u8]) -> Hash {
        let mut bytes = [0u8; 32];
        bytes[..digest.len()].copy_from_slice(digest);
        Hash {
            algorithm,
            digest: Digest::Bytes {
                len: digest.len() as u8,
                bytes,
            },
        }
    }

    /// A digest from its bytes, written in lowercase hex.
    ///
    /// ```
    /// use resourcesync_model::{Hash, HashAlgorithm};
    /// let h = Hash::from_bytes(HashAlgorithm::Md5, &[0xab; 16])?;
    /// assert_eq!(h.to_string(), format!("md5:{}", "ab".repeat(16)));
    /// # Ok::<(), resourcesync_model::HashError>(())
    /// ```
    pub fn from_bytes(algorithm: HashAlgorithm, bytes: &[u8]) -> Result<Hash, HashError> {
        // Digests of up to 32 bytes are kept as bytes: no text to build or check.
        if bytes.len() <= 32 {
            if let Some(len) = algorithm.digest_len() {
                if len != bytes.len() {
                    return Err(HashError::DigestLength {
                        input: format!("{algorithm}:…"),
                        algorithm: algorithm.to_string(),
                        expected: len * 2,
                        actual: bytes.len() * 2,
                    });
                }
            }
            if bytes.is_empty() {
                return Err(HashError::Syntax {
                    input: format!("{algorithm}:"),
                    reason: "missing digest after ':'",
                });
            }
            let mut own = [0u8; 32];
            own[..bytes.len()].copy_from_slice(bytes);
            return Ok(Hash {
                algorithm,
                digest: Digest::Bytes {
                    len: bytes.len() as u8,
                    bytes: own,
                },
            });
        }
        Hash::new(algorithm, &lower_hex(bytes))
    }

    fn check(token: &str, algorithm: HashAlgorithm, hex: &str) -> Result<Hash, HashError> {
        let syntax = |reason| HashError::Syntax {
            input: crate::rules::clip(token),
            reason,
        };
        if algorithm.as_str().is_empty() {
            return Err(syntax("missing algorithm before ':'"));
        }
        if hex.is_empty() {
            return Err(syntax("missing digest after ':'"));
        }
        // Lower-case hex in whole groups of eight digits (every md5, sha-1 and sha-256
        // digest as tools write them) is decoded eight digits at a time.
        if hex.len() % 8 == 0 && hex.len() <= 64 {
            if let Some((len, bytes)) = decode_lower_hex(hex.as_bytes()) {
                if let Some(expected) = algorithm.digest_len() {
                    if usize::from(len) != expected {
                        return Err(HashError::DigestLength {
                            input: crate::rules::clip(token),
                            algorithm: algorithm.to_string(),
                            expected: expected * 2,
                            actual: hex.len(),
                        });
                    }
                }
                return Ok(Hash {
                    algorithm,
                    digest: Digest::Bytes { len, bytes },
                });
            }
        }
        // One branch-free pass decodes lower-case hex and notes anything else.
        let mut bytes = [0u8; 32];
        let mut flags = 0u8;
        let short = hex.len() % 2 == 0 && hex.len() <= 64;
        if short {
            for (pair, out) in hex.as_bytes().chunks_exact(2).zip(&mut bytes) {
                let (hi, lo) = (
                    HEX_VALUE[usize::from(pair[0])],
                    HEX_VALUE[usize::from(pair[1])],
                );
                flags |= hi | lo;
                *out = (hi & 0x0F) << 4 | (lo & 0x0F);
            }
        } else {
            flags = hex
                .bytes()
                .fold(0, |acc, c| acc | HEX_VALUE[usize::from(c)]);
        }
        if flags & 0x80 != 0 {
            // Section 7 says hex; some Sources write base64. Read as base64 only when it
            // decodes to exactly the algorithm's digest length, so that no hex digest is
            // ever read as base64 (a base64 md5 has 22 characters and padding, hex 32).
            let len = algorithm.digest_len();
            return match decode_base64(hex) {
                Some(bytes) if Some(bytes.len()) == len => Ok(Hash {
                    algorithm,
                    digest: Digest::Base64 {
                        bytes: bytes.into(),
                        text: hex.into(),
                    },
                }),
                _ => Err(syntax("digest is not hex-encoded")),
            };
        }
        let lower = short && flags & 0x10 == 0;
        if let Some(len) = algorithm.digest_len() {
            if hex.len() != len * 2 {
                return Err(HashError::DigestLength {
                    input: crate::rules::clip(token),
                    algorithm: algorithm.to_string(),
                    expected: len * 2,
                    actual: hex.len(),
                });
            }
        }
        let digest = if lower {
            Digest::Bytes {
                len: (hex.len() / 2) as u8,
                bytes,
            }
        } else {
            Digest::Text(hex.into())
        };
        Ok(Hash { algorithm, digest })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> &HashAlgorithm {
        &self.algorithm
    }

    /// The digest as hex, as written (a digest written in base64: its bytes in
    /// lower-case hex).
    pub fn hex(&self) -> String {
        match &self.digest {
            Digest::Bytes { len, bytes } => lower_hex(&bytes[..usize::from(*len)]),
            Digest::Text(text) => text.to_string(),
            Digest::Base64 { bytes, .. } => lower_hex(bytes),
        }
    }

    /// Whether the digest was written in base64, as some Sources write them, and not in
    /// the hex section 7 asks for (a reader reports it: [`Rule::HashBase64`]).
    pub fn is_base64(&self) -> bool {
        matches!(self.digest, Digest::Base64 { .. })
    }

    /// The digest's bytes.
    pub fn bytes(&self) -> Vec<u8> {
        match &self.digest {
            Digest::Bytes { len, bytes } => bytes[..usize::from(*len)].to_vec(),
            Digest::Base64 { bytes, .. } => bytes.to_vec(),
            Digest::Text(text) => text
                .as_bytes()
                .chunks(2)
                .map(|pair| {
                    let hi = nibble(pair[0]).unwrap_or(0);
                    let lo = pair.get(1).and_then(|&c| nibble(c)).unwrap_or(0);
                    if pair.len() == 2 { hi << 4 | lo } else { hi }
                })
                .collect(),
        }
    }

    /// Whether `bytes` is this digest (hex case does not matter).
    pub fn matches(&self, bytes: &[u8]) -> bool {
        match &self.digest {
            Digest::Bytes { len, bytes: own } => own[..usize::from(*len)] == *bytes,
            Digest::Text(text) => text.len() == bytes.len() * 2 && self.bytes() == bytes,
            Digest::Base64 { bytes: own, .. } => **own == *bytes,
        }
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::with_capacity(80);
        self.write_to(&mut out);
        // Written from `str`s and hex digits.
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

impl Hash {
    /// Appends the digest to `out` as [`Display`](fmt::Display) writes it
    /// (`algorithm:hex`), without the formatting machinery.
    pub fn write_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.algorithm.as_str().as_bytes());
        out.push(b':');
        match &self.digest {
            Digest::Bytes { len, bytes } => {
                out.reserve(2 * usize::from(*len));
                for b in &bytes[..usize::from(*len)] {
                    out.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
                }
            }
            Digest::Text(text) | Digest::Base64 { text, .. } => {
                out.extend_from_slice(text.as_bytes())
            }
        }
    }
}

impl FromStr for Hash {
    type Err = HashError;
    fn from_str(token: &str) -> Result<Self, Self::Err> {
        let colon = token.bytes().position(|b| b == b':');
        let Some((alg, hex)) = colon.map(|at| (&token[..at], &token[at + 1..])) else {
            return Err(HashError::Syntax {
                input: crate::rules::clip(token),
                reason: "expected algorithm:digest",
            });
        };
        Hash::check(token, HashAlgorithm::from_token(alg), hex)
    }
}

/// The value of a `hash` attribute: one or more digests of the same representation.
///
/// ```
/// use resourcesync_model::{HashAlgorithm, Hashes};
///
/// let h: Hashes = "md5:1e0d5cb8ef6ba40c99b14c0237be735e sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784".parse()?;
/// assert_eq!(h.len(), 2);
/// assert_eq!(h.get(&HashAlgorithm::Md5).unwrap().hex(), "1e0d5cb8ef6ba40c99b14c0237be735e");
/// assert!("md5:xyz".parse::<Hashes>().is_err());
/// # Ok::<(), resourcesync_model::HashError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hashes(Vec<Hash>);

impl Hashes {
    /// A list of digests; fails when empty, since an empty `hash` attribute says nothing,
    /// and when one algorithm has two different digests ([`HashError::Conflict`]). The same
    /// digest twice is accepted and kept as written: it is redundant, not contradictory.
    pub fn new(hashes: Vec<Hash>) -> Result<Hashes, HashError> {
        if hashes.is_empty() {
            return Err(HashError::Syntax {
                input: String::new(),
                reason: "no digest",
            });
        }
        if let Some((a, b)) = conflict(&hashes) {
            return Err(HashError::Conflict {
                algorithm: a.algorithm().to_string(),
                first: crate::rules::clip(&a.hex()),
                second: crate::rules::clip(&b.hex()),
            });
        }
        Ok(Hashes(hashes))
    }

    /// An md5 and a sha-256 digest, the pair this family computes; cannot fail, since two
    /// algorithms cannot conflict.
    pub fn md5_sha256(md5: [u8; 16], sha256: [u8; 32]) -> Hashes {
        Hashes(vec![Hash::md5(md5), Hash::sha256(sha256)])
    }

    /// The digest for an algorithm, if listed.
    pub fn get(&self, algorithm: &HashAlgorithm) -> Option<&Hash> {
        self.0.iter().find(|h| h.algorithm() == algorithm)
    }

    /// The digests in the order written.
    pub fn iter(&self) -> std::slice::Iter<'_, Hash> {
        self.0.iter()
    }

    /// How many digests there are (at least one).
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Always false: a `Hashes` holds at least one digest.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Algorithms that are not known, for the warning of
    /// [`Rule::HashAlgorithmUnknown`](crate::Rule::HashAlgorithmUnknown).
    pub fn unknown_algorithms(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|h| match h.algorithm() {
            HashAlgorithm::Other(name) => Some(name.as_str()),
            _ => None,
        })
    }
}

/// Whether two hashes are of the same algorithm: known ones are one variant whatever the
/// case they were written in, and other names compare case-insensitively too.
fn same_algorithm(a: &HashAlgorithm, b: &HashAlgorithm) -> bool {
    match (a, b) {
        (HashAlgorithm::Other(x), HashAlgorithm::Other(y)) => x.eq_ignore_ascii_case(y),
        _ => a == b,
    }
}

/// The first two digests of one algorithm that differ (hex case aside).
fn conflict(hashes: &[Hash]) -> Option<(&Hash, &Hash)> {
    // Nearly every attribute has one to three digests: compare pairs. A hostile attribute
    // with thousands goes through a map instead, so the cost stays linear.
    if hashes.len() <= 8 {
        for (i, b) in hashes.iter().enumerate() {
            for a in &hashes[..i] {
                if same_algorithm(a.algorithm(), b.algorithm()) && a.bytes() != b.bytes() {
                    return Some((a, b));
                }
            }
        }
        return None;
    }
    let mut first: std::collections::HashMap<String, &Hash> = std::collections::HashMap::new();
    for b in hashes {
        let name = b.algorithm().as_str().to_ascii_lowercase();
        match first.get(&name) {
            Some(a) if a.bytes() != b.bytes() => return Some((a, b)),
            Some(_) => {}
            None => {
                first.insert(name, b);
            }
        }
    }
    None
}

impl From<Hash> for Hashes {
    fn from(hash: Hash) -> Self {
        Hashes(vec![hash])
    }
}

impl<'a> IntoIterator for &'a Hashes {
    type Item = &'a Hash;
    type IntoIter = std::slice::Iter<'a, Hash>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromStr for Hashes {
    type Err = HashError;
    /// Tokens are split on white space (XML's space, tab, CR and LF; byte-wise, which is
    /// several times faster than splitting on a set of chars).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut hashes = Vec::with_capacity(2);
        let b = s.as_bytes();
        let mut at = 0;
        while at < b.len() {
            if b[at].is_ascii_whitespace() {
                at += 1;
                continue;
            }
            let end = token_end(b, at);
            hashes.push(s[at..end].parse()?);
            at = end;
        }
        Hashes::new(hashes)
    }
}

/// Where the token starting at `start` ends. A token of a known algorithm whose digest has
/// the expected length ends right after it, found without reading the digest (decoding
/// reads it); any other token ends at the next white space.
fn token_end(b: &[u8], start: usize) -> usize {
    let token = &b[start..];
    let expected = [(&b"md5:"[..], 32), (b"sha-256:", 64), (b"sha-1:", 40)]
        .into_iter()
        .find(|(prefix, _)| token.starts_with(prefix))
        .map(|(prefix, digits)| prefix.len() + digits);
    if let Some(len) = expected {
        if token.len() == len || token.get(len).is_some_and(u8::is_ascii_whitespace) {
            return start + len;
        }
    }
    token
        .iter()
        .position(u8::is_ascii_whitespace)
        .map_or(b.len(), |at| start + at)
}

impl Hashes {
    /// Appends the value to `out` as [`Display`](fmt::Display) writes it (digests
    /// separated by a space), without the formatting machinery.
    ///
    /// ```
    /// use resourcesync_model::Hashes;
    /// let hashes: Hashes = "md5:1e0d5cb8ef6ba40c99b14c0237be735e sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784".parse()?;
    /// let mut out = Vec::new();
    /// hashes.write_to(&mut out);
    /// assert_eq!(out, hashes.to_string().as_bytes());
    /// # Ok::<(), resourcesync_model::HashError>(())
    /// ```
    pub fn write_to(&self, out: &mut Vec<u8>) {
        for (i, h) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b' ');
            }
            h.write_to(out);
        }
    }
}

impl fmt::Display for Hashes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Vec::with_capacity(160);
        self.write_to(&mut out);
        // Written from `str`s and hex digits.
        f.write_str(std::str::from_utf8(&out).map_err(|_| fmt::Error)?)
    }
}

crate::rules::serde_as_text!(Hashes);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_to_writes_what_display_shows() {
        for text in [
            "md5:1e0d5cb8ef6ba40c99b14c0237be735e",
            "md5:1E0D5CB8EF6BA40C99B14C0237BE735E sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784",
            "sha-1:da39a3ee5e6b4b0d3255bfef95601890afd80709 x-crc32:1234abcd",
        ] {
            let hashes: Hashes = text.parse().unwrap();
            let mut out = Vec::new();
            hashes.write_to(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), hashes.to_string());
            assert_eq!(hashes.to_string(), text);
        }
    }

    #[test]
    fn eight_digit_decoding_agrees_with_the_table() {
        // Every byte value at every place of a group: only 0-9a-f decode, to the value
        // the table gives.
        for place in 0..8 {
            for b in 0..=255u8 {
                let mut group = *b"09afc3e7";
                group[place] = b;
                let lower = group.iter().all(|&c| HEX_VALUE[usize::from(c)] < 0x10);
                let decoded = decode8(u64::from_le_bytes(group));
                assert_eq!(decoded.is_some(), lower, "{group:?}");
                if let Some(bytes) = decoded {
                    for (i, byte) in bytes.iter().enumerate() {
                        let hi = nibble(group[2 * i]).unwrap();
                        let lo = nibble(group[2 * i + 1]).unwrap();
                        assert_eq!(*byte, hi << 4 | lo);
                    }
                }
            }
        }
    }

    #[test]
    fn tokens_end_where_they_end() {
        let h: Hashes = "  md5:1e0d5cb8ef6ba40c99b14c0237be735e\tsha-1:00112233445566778899aabbccddeeff00112233\nx:1 "
            .parse()
            .unwrap();
        assert_eq!(h.len(), 3);
        // A digest longer than its algorithm's is one token, reported by length.
        let long = format!("md5:{}", "a".repeat(34));
        assert!(matches!(
            long.parse::<Hashes>(),
            Err(HashError::DigestLength { actual: 34, .. })
        ));
        // Upper case is read on the careful path and kept as written.
        let upper = "md5:1E0D5CB8EF6BA40C99B14C0237BE735E";
        assert_eq!(upper.parse::<Hashes>().unwrap().to_string(), upper);
    }

    #[test]
    fn digest_lengths_are_checked_for_known_algorithms() {
        assert!(
            "md5:1e0d5cb8ef6ba40c99b14c0237be735e"
                .parse::<Hash>()
                .is_ok()
        );
        let e = "md5:1e0d".parse::<Hash>().unwrap_err();
        assert_eq!(e.rule(), Rule::HashDigestLength);
        assert_eq!(
            e.to_string(),
            "invalid hash \"md5:1e0d\": a md5 digest has 32 hex digits, not 4"
        );
        assert_eq!(
            "sha-1:abcd".parse::<Hash>().unwrap_err().rule(),
            Rule::HashDigestLength
        );
        // Unknown algorithms are kept; their length is not known.
        let h: Hashes = "blake3:abcd".parse().unwrap();
        assert_eq!(h.unknown_algorithms().collect::<Vec<_>>(), ["blake3"]);
    }

    #[test]
    fn every_registered_algorithm_in_any_case_with_its_length() {
        let rows = [
            ("md2", 32),
            ("md5", 32),
            ("sha-1", 40),
            ("sha-224", 56),
            ("sha-256", 64),
            ("sha-384", 96),
            ("sha-512", 128),
            ("shake128", 64),
            ("shake256", 128),
            ("sha-256-128", 32),
            ("sha-256-120", 30),
            ("sha-256-96", 24),
            ("sha-256-64", 16),
            ("sha-256-32", 8),
            ("sha3-224", 56),
            ("sha3-256", 64),
            ("sha3-384", 96),
            ("sha3-512", 128),
            ("blake2s-256", 64),
            ("blake2b-256", 64),
            ("blake2b-512", 128),
        ];
        assert_eq!(rows.len(), HashAlgorithm::known().count());
        for (name, digits) in rows {
            for written in [name.to_owned(), name.to_ascii_uppercase()] {
                let algorithm = HashAlgorithm::from_token(&written);
                assert!(!matches!(algorithm, HashAlgorithm::Other(_)), "{written}");
                assert_eq!(algorithm.as_str(), name);
                assert_eq!(algorithm.digest_len(), Some(digits / 2), "{written}");
                let ok = format!("{written}:{}", "ab".repeat(digits / 2));
                let h: Hashes = ok.parse().unwrap();
                assert!(h.unknown_algorithms().next().is_none(), "{ok}");
                assert_eq!(h.to_string(), format!("{name}:{}", "ab".repeat(digits / 2)));
                for wrong in [digits - 2, digits + 2] {
                    let bad = format!("{written}:{}", "c".repeat(wrong));
                    let e = bad.parse::<Hashes>().unwrap_err();
                    assert_eq!(e.rule(), Rule::HashDigestLength, "{bad}");
                }
            }
        }
        for other in ["sha256", "sha-2", "sha3-255", "crc32", "x-md5"] {
            assert_eq!(
                HashAlgorithm::from_token(other),
                HashAlgorithm::Other(other.into())
            );
        }
    }

    #[test]
    fn one_digest_per_algorithm() {
        let md5a = "md5:1e0d5cb8ef6ba40c99b14c0237be735e";
        let md5b = "md5:1584abdf8ebdc9802ac0c6a7402c03b6";
        let sha = "sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784";
        let conflicts = [
            format!("{md5a} {md5b}"),
            format!("{md5a} {sha} {md5b}"),
            format!("{md5a} MD5:1584ABDF8EBDC9802AC0C6A7402C03B6"),
            "x-crc:0a1b x-crc:0a1c".to_owned(),
            "X-CRC:0a1b x-crc:0a1c".to_owned(),
            // Past the pairwise path.
            format!("{} {md5b}", [md5a; 9].join(" ")),
        ];
        for text in &conflicts {
            let e = text.parse::<Hashes>().unwrap_err();
            assert_eq!(e.rule(), Rule::HashConflict, "{text}");
            assert!(matches!(e, HashError::Conflict { .. }), "{text}");
        }
        assert_eq!(
            format!("{md5a} {md5b}")
                .parse::<Hashes>()
                .unwrap_err()
                .to_string(),
            "invalid hash: two different md5 digests, \"1e0d5cb8ef6ba40c99b14c0237be735e\" and \"1584abdf8ebdc9802ac0c6a7402c03b6\""
        );
        // The same digest twice, in any case, is accepted and kept as written.
        let kept = [
            format!("{md5a} {md5a}"),
            format!("{md5a} MD5:1E0D5CB8EF6BA40C99B14C0237BE735E"),
            format!("{md5a} {sha}"),
            [md5a; 12].join(" "),
            "x-crc:0a1b y-crc:0a1c".to_owned(),
        ];
        for text in &kept {
            let h: Hashes = text.parse().unwrap();
            assert_eq!(h.len(), text.split(' ').count(), "{text}");
        }
        // Built in code too.
        let a: Hash = md5a.parse().unwrap();
        let b: Hash = md5b.parse().unwrap();
        assert!(Hashes::new(vec![a.clone(), b]).is_err());
        assert!(Hashes::new(vec![a.clone(), a]).is_ok());
    }

    #[test]
    fn syntax_errors() {
        for s in ["", "md5", ":abcd", "md5:", "md5:zz", "sha-256:f40xZX_x_DFG"] {
            let e = s.parse::<Hashes>().unwrap_err();
            assert_eq!(e.rule(), Rule::HashSyntax, "{s}");
        }
    }

    #[test]
    fn matches_bytes_in_any_case() {
        let h: Hash = "md5:ABABABABABABABABABABABABABABABAB".parse().unwrap();
        assert!(h.matches(&[0xab; 16]));
        assert!(!h.matches(&[0xab; 15]));
        assert!(!h.matches(&[0xac; 16]));
    }
}
