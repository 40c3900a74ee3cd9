//! The `length` attribute: a content length in bytes (section 7).

use crate::rules::{Rule, RuleError};

/// A `length` value that is not a non-negative integer fitting 64 bits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid length \"{input}\": expected a non-negative integer of at most 64 bits")]
pub struct LengthError {
    /// The offending text, cut to 64 characters.
    pub input: String,
}

impl RuleError for LengthError {
    fn rule(&self) -> Rule {
        Rule::LengthSyntax
    }
}

/// Parses a `length`: decimal digits only, as HTTP's `Content-Length` (no sign, no
/// fraction, no white space, at most `u64::MAX`).
///
/// ```
/// use resourcesync_model::parse_length;
/// assert_eq!(parse_length("8876")?, 8876);
/// assert!(parse_length("-1").is_err());
/// assert!(parse_length("1.5").is_err());
/// assert!(parse_length("18446744073709551616").is_err());
/// # Ok::<(), resourcesync_model::LengthError>(())
/// ```
pub fn parse_length(s: &str) -> Result<u64, LengthError> {
    // u64's own parser accepts a leading '+'; Content-Length does not.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LengthError {
            input: crate::rules::clip(s),
        });
    }
    s.parse().map_err(|_| LengthError {
        input: crate::rules::clip(s),
    })
}
