//! URIs in `<loc>` and `href`: absolute, checked, parsed once.

use url::Url;

use crate::rules::{Rule, RuleError};

/// The longest URI the Sitemap protocol allows in `<loc>`, in characters.
pub const MAX_URI_LEN: usize = 2048;

/// A `<loc>` or `href` value that is not an absolute URI.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid URI \"{input}\": {reason}")]
pub struct UriError {
    /// The offending text, cut to 64 characters.
    pub input: String,
    /// What is wrong with it.
    pub reason: String,
}

impl RuleError for UriError {
    fn rule(&self) -> Rule {
        Rule::UriSyntax
    }
}

/// Parses an absolute URI as found in `<loc>` or `href`.
///
/// Leading and trailing XML white space is ignored (sitemaps often wrap `<loc>` text);
/// white space or control characters inside the URI, and relative references, are
/// refused. The result is the URL crate's normalised form (`HTTP://Example.com` becomes
/// `http://example.com/`), which is how it is written back.
///
/// ```
/// use resourcesync_model::parse_uri;
///
/// assert_eq!(parse_uri(" http://example.com/res1 ")?.as_str(), "http://example.com/res1");
/// assert!(parse_uri("/res1").is_err());
/// assert!(parse_uri("http://example.com/a b").is_err());
/// # Ok::<(), resourcesync_model::UriError>(())
/// ```
pub fn parse_uri(text: &str) -> Result<Url, UriError> {
    let s = text.trim_matches([' ', '\t', '\r', '\n']);
    let fail = |reason: String| UriError {
        input: crate::rules::clip(s),
        reason,
    };
    if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(fail(
            "white space or control character inside the URI".into(),
        ));
    }
    Url::parse(s).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => fail("not an absolute URI".into()),
        other => fail(other.to_string()),
    })
}

/// Whether `s` is an absolute URI (a scheme, then anything `Url` accepts).
pub(crate) fn is_absolute_uri(s: &str) -> bool {
    parse_uri(s).is_ok()
}

/// Schemes that point at local files or run code, never at a Source's resources.
const UNSAFE_SCHEMES: [&str; 4] = ["javascript", "data", "file", "vbscript"];

/// Whether a URI's scheme is one a Destination must not follow blindly.
pub(crate) fn has_unsafe_scheme(url: &Url) -> bool {
    UNSAFE_SCHEMES.contains(&url.scheme())
}
