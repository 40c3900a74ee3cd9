//! The `hash` attribute: fixity as a list of algorithm-tagged hex digests (section 7).

use std::fmt;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// A hash algorithm named in a `hash` attribute.
///
/// The standard names `md5`, `sha-1` and `sha-256` (in the style of the Atom Link
/// Extensions); any other token is kept as [`HashAlgorithm::Other`] and flagged by
/// [`Rule::HashAlgorithmUnknown`](crate::Rule::HashAlgorithmUnknown).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum HashAlgorithm {
    /// `md5`: 16-byte digests.
    Md5,
    /// `sha-1`: 20-byte digests.
    Sha1,
    /// `sha-256`: 32-byte digests.
    Sha256,
    /// Any other token, as written.
    Other(String),
}

impl HashAlgorithm {
    /// The token written before the colon.
    pub fn as_str(&self) -> &str {
        match self {
            HashAlgorithm::Md5 => "md5",
            HashAlgorithm::Sha1 => "sha-1",
            HashAlgorithm::Sha256 => "sha-256",
            HashAlgorithm::Other(s) => s,
        }
    }

    /// The digest length in bytes, for the algorithms the standard names.
    pub fn digest_len(&self) -> Option<usize> {
        match self {
            HashAlgorithm::Md5 => Some(16),
            HashAlgorithm::Sha1 => Some(20),
            HashAlgorithm::Sha256 => Some(32),
            HashAlgorithm::Other(_) => None,
        }
    }

    fn from_token(token: &str) -> HashAlgorithm {
        match token {
            "md5" => HashAlgorithm::Md5,
            "sha-1" => HashAlgorithm::Sha1,
            "sha-256" => HashAlgorithm::Sha256,
            other => HashAlgorithm::Other(other.to_owned()),
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
}

impl RuleError for HashError {
    fn rule(&self) -> Rule {
        match self {
            HashError::Syntax { .. } => Rule::HashSyntax,
            HashError::DigestLength { .. } => Rule::HashDigestLength,
        }
    }
}

/// One digest: an algorithm and its hex-encoded value, kept as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Hash {
    algorithm: HashAlgorithm,
    digest: String,
}

impl Hash {
    /// A digest given as hex text; fails when the text is not hex or its length does not
    /// fit a known algorithm.
    pub fn new(algorithm: HashAlgorithm, hex: &str) -> Result<Hash, HashError> {
        let token = format!("{algorithm}:{hex}");
        Hash::check(&token, algorithm, hex)
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
        use fmt::Write as _;
        let mut hex = String::with_capacity(bytes.len() * 2);
        for b in bytes {
            let _ = write!(hex, "{b:02x}");
        }
        Hash::new(algorithm, &hex)
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
        if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(syntax("digest is not hex-encoded"));
        }
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
        Ok(Hash {
            algorithm,
            digest: hex.to_owned(),
        })
    }

    /// The algorithm.
    pub fn algorithm(&self) -> &HashAlgorithm {
        &self.algorithm
    }

    /// The digest as hex, as written.
    pub fn hex(&self) -> &str {
        &self.digest
    }

    /// Whether `bytes` is this digest (hex case does not matter).
    pub fn matches(&self, bytes: &[u8]) -> bool {
        self.digest.len() == bytes.len() * 2
            && self
                .digest
                .as_bytes()
                .chunks(2)
                .zip(bytes)
                .all(|(pair, b)| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                        == Some(*b)
                })
    }
}

impl fmt::Display for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.algorithm, self.digest)
    }
}

impl FromStr for Hash {
    type Err = HashError;
    fn from_str(token: &str) -> Result<Self, Self::Err> {
        let Some((alg, hex)) = token.split_once(':') else {
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
    /// A list of digests; fails when empty, since an empty `hash` attribute says nothing.
    pub fn new(hashes: Vec<Hash>) -> Result<Hashes, HashError> {
        if hashes.is_empty() {
            return Err(HashError::Syntax {
                input: String::new(),
                reason: "no digest",
            });
        }
        Ok(Hashes(hashes))
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

    /// Algorithms the standard does not name, for the warning of
    /// [`Rule::HashAlgorithmUnknown`](crate::Rule::HashAlgorithmUnknown).
    pub fn unknown_algorithms(&self) -> impl Iterator<Item = &str> {
        self.0.iter().filter_map(|h| match h.algorithm() {
            HashAlgorithm::Other(name) => Some(name.as_str()),
            _ => None,
        })
    }
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
    /// Tokens are split on XML whitespace (space, tab, CR, LF).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hashes = s
            .split([' ', '\t', '\r', '\n'])
            .filter(|t| !t.is_empty())
            .map(str::parse)
            .collect::<Result<Vec<Hash>, _>>()?;
        Hashes::new(hashes)
    }
}

impl fmt::Display for Hashes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, h) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{h}")?;
        }
        Ok(())
    }
}

crate::rules::serde_as_text!(Hashes);

#[cfg(test)]
mod tests {
    use super::*;

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
