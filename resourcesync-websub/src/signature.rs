//! `X-Hub-Signature` (WebSub, section 8): the HMAC of a distributed body, keyed by the
//! subscriber's `hub.secret`.

use std::fmt;
use std::str::FromStr;

use hmac::{Hmac, KeyInit, Mac};

/// The algorithms WebSub names for `X-Hub-Signature`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[allow(clippy::exhaustive_enums)] // the Recommendation names exactly these four
pub enum SignatureMethod {
    /// `sha1`, which the Recommendation still lists; accepted, never chosen here.
    Sha1,
    /// `sha256`.
    Sha256,
    /// `sha384`.
    Sha384,
    /// `sha512`.
    Sha512,
}

impl SignatureMethod {
    /// The name in the header.
    pub fn as_str(self) -> &'static str {
        match self {
            SignatureMethod::Sha1 => "sha1",
            SignatureMethod::Sha256 => "sha256",
            SignatureMethod::Sha384 => "sha384",
            SignatureMethod::Sha512 => "sha512",
        }
    }

    /// The digest's length in bytes.
    fn len(self) -> usize {
        match self {
            SignatureMethod::Sha1 => 20,
            SignatureMethod::Sha256 => 32,
            SignatureMethod::Sha384 => 48,
            SignatureMethod::Sha512 => 64,
        }
    }
}

impl fmt::Display for SignatureMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why an `X-Hub-Signature` value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// Not `method=hex`.
    #[error("X-Hub-Signature is not method=signature")]
    Form,
    /// A method WebSub does not name.
    #[error("X-Hub-Signature method {0:?} is not sha1, sha256, sha384 or sha512")]
    Method(String),
    /// The signature is not hex of the method's length.
    #[error("X-Hub-Signature's {method} signature is not {} hex digits", method_len(*.method))]
    Digest {
        /// The method named.
        method: SignatureMethod,
    },
}

fn method_len(method: SignatureMethod) -> usize {
    method.len() * 2
}

/// An `X-Hub-Signature` value: a method and the HMAC it gives.
///
/// ```
/// use resourcesync_websub::{HubSignature, SignatureMethod};
///
/// let body = b"<urlset/>";
/// let signature = HubSignature::sign(SignatureMethod::Sha256, b"s3cret", body);
/// let header = signature.to_string();
/// assert!(header.starts_with("sha256="));
/// let read: HubSignature = header.parse()?;
/// assert!(read.verify(b"s3cret", body));
/// assert!(!read.verify(b"guess", body));
/// assert!(!read.verify(b"s3cret", b"<urlset>forged</urlset>"));
/// # Ok::<(), resourcesync_websub::SignatureError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct HubSignature {
    method: SignatureMethod,
    digest: Vec<u8>,
}

impl fmt::Debug for HubSignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HubSignature({self})")
    }
}

impl HubSignature {
    /// The signature of `body` keyed by `secret`.
    pub fn sign(method: SignatureMethod, secret: &[u8], body: &[u8]) -> HubSignature {
        HubSignature {
            method,
            digest: hmac(method, secret, body),
        }
    }

    /// The method.
    pub fn method(&self) -> SignatureMethod {
        self.method
    }

    /// Whether this is the signature of `body` keyed by `secret`, compared in constant
    /// time (the HMAC's own check).
    pub fn verify(&self, secret: &[u8], body: &[u8]) -> bool {
        fn check<M: Mac + KeyInit>(secret: &[u8], body: &[u8], digest: &[u8]) -> bool {
            let Ok(mut mac) = <M as KeyInit>::new_from_slice(secret) else {
                return false;
            };
            mac.update(body);
            mac.verify_slice(digest).is_ok()
        }
        let digest = &self.digest;
        match self.method {
            SignatureMethod::Sha1 => check::<Hmac<sha1::Sha1>>(secret, body, digest),
            SignatureMethod::Sha256 => check::<Hmac<sha2::Sha256>>(secret, body, digest),
            SignatureMethod::Sha384 => check::<Hmac<sha2::Sha384>>(secret, body, digest),
            SignatureMethod::Sha512 => check::<Hmac<sha2::Sha512>>(secret, body, digest),
        }
    }
}

fn hmac(method: SignatureMethod, secret: &[u8], body: &[u8]) -> Vec<u8> {
    fn mac<M: Mac + KeyInit>(secret: &[u8], body: &[u8]) -> Vec<u8> {
        // HMAC takes a key of any length: this never fails.
        match <M as KeyInit>::new_from_slice(secret) {
            Ok(mut mac) => {
                mac.update(body);
                mac.finalize().into_bytes().to_vec()
            }
            Err(_) => Vec::new(),
        }
    }
    match method {
        SignatureMethod::Sha1 => mac::<Hmac<sha1::Sha1>>(secret, body),
        SignatureMethod::Sha256 => mac::<Hmac<sha2::Sha256>>(secret, body),
        SignatureMethod::Sha384 => mac::<Hmac<sha2::Sha384>>(secret, body),
        SignatureMethod::Sha512 => mac::<Hmac<sha2::Sha512>>(secret, body),
    }
}

impl fmt::Display for HubSignature {
    /// `method=hex`, as the header carries it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", self.method)?;
        for b in &self.digest {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl FromStr for HubSignature {
    type Err = SignatureError;

    /// Reads `method=hex`; the method's name and the hex digits in any case.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let (name, hex) = s.trim().split_once('=').ok_or(SignatureError::Form)?;
        let method = match name.to_ascii_lowercase().as_str() {
            "sha1" => SignatureMethod::Sha1,
            "sha256" => SignatureMethod::Sha256,
            "sha384" => SignatureMethod::Sha384,
            "sha512" => SignatureMethod::Sha512,
            _ => {
                let mut shown: String = name.chars().take(16).collect();
                if name.chars().count() > 16 {
                    shown.push('…');
                }
                return Err(SignatureError::Method(shown));
            }
        };
        if hex.len() != method.len() * 2 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(SignatureError::Digest { method });
        }
        let digest = (0..hex.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
            .collect();
        Ok(HubSignature { method, digest })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4231, test case 2 ("Jefe", "what do ya want for nothing?"), and the common
    /// sha1 vector of the same key and text.
    #[test]
    fn known_vectors() {
        let key = b"Jefe";
        let data = b"what do ya want for nothing?";
        for (method, hex) in [
            (
                SignatureMethod::Sha1,
                "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79",
            ),
            (
                SignatureMethod::Sha256,
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                SignatureMethod::Sha384,
                "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649",
            ),
            (
                SignatureMethod::Sha512,
                "164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737",
            ),
        ] {
            let signature = HubSignature::sign(method, key, data);
            assert_eq!(signature.to_string(), format!("{method}={hex}"));
            let read: HubSignature =
                format!("{}={}", method.as_str().to_uppercase(), hex.to_uppercase())
                    .parse()
                    .unwrap();
            assert!(read.verify(key, data));
        }
    }

    #[test]
    fn bad_headers_name_what_is_wrong() {
        assert_eq!("sha256".parse::<HubSignature>(), Err(SignatureError::Form));
        assert_eq!(
            "md5=00".parse::<HubSignature>(),
            Err(SignatureError::Method("md5".into()))
        );
        assert_eq!(
            "sha256=abcd".parse::<HubSignature>(),
            Err(SignatureError::Digest {
                method: SignatureMethod::Sha256
            })
        );
        let long = format!("{}=00", "x".repeat(10_000));
        match long.parse::<HubSignature>() {
            Err(SignatureError::Method(m)) => assert!(m.chars().count() <= 17),
            other => panic!("{other:?}"),
        }
    }
}
