//! The `type` attribute: a media type (section 7, RFC 6838).

use std::fmt;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// A media type such as `text/html` or `application/xml; charset=utf-8`, kept as written.
///
/// Checked for the shape `type/subtype` with RFC 6838 restricted names, optionally
/// followed by `;` parameters, which are kept but not interpreted.
///
/// ```
/// use resourcesync_model::MediaType;
///
/// let t: MediaType = "application/zip".parse()?;
/// assert_eq!(t.essence(), "application/zip");
/// assert!("zip".parse::<MediaType>().is_err());
/// # Ok::<(), resourcesync_model::MediaTypeError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MediaType(String);

/// A `type` value that is not a media type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid media type \"{input}\": expected type/subtype")]
pub struct MediaTypeError {
    /// The offending text, cut to 64 characters.
    pub input: String,
}

impl RuleError for MediaTypeError {
    fn rule(&self) -> Rule {
        Rule::MediaTypeSyntax
    }
}

/// RFC 6838 restricted-name: an alphanumeric first character, then up to 126 of
/// alphanumerics and `!#$&-^_.+`.
fn restricted_name(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_alphanumeric)
        && b.len() <= 127
        && b.iter().all(|&c| {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'!' | b'#' | b'$' | b'&' | b'-' | b'^' | b'_' | b'.' | b'+'
                )
        })
}

impl MediaType {
    /// `type/subtype` without parameters, as written.
    pub fn essence(&self) -> &str {
        self.0.split(';').next().unwrap_or("").trim()
    }

    /// The value as written.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl FromStr for MediaType {
    type Err = MediaTypeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // Byte searches: media types are short, and std's char searcher costs more to set
        // up than the search.
        let end = s.bytes().position(|b| b == b';').unwrap_or(s.len());
        let essence = s[..end].trim_end();
        let ok = essence.bytes().position(|b| b == b'/').is_some_and(|at| {
            restricted_name(&essence[..at]) && restricted_name(&essence[at + 1..])
        });
        if ok {
            Ok(MediaType(s.to_owned()))
        } else {
            Err(MediaTypeError {
                input: crate::rules::clip(s),
            })
        }
    }
}

impl fmt::Display for MediaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

crate::rules::serde_as_text!(MediaType);
