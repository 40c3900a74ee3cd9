//! URIs in `<loc>` and `href`: absolute, checked, and kept exactly as written.

use std::fmt;
use std::str::FromStr;

use crate::rules::{Rule, RuleError};

/// The longest URI the Sitemap protocol allows in `<loc>`, in characters: its text is
/// "must be less than 2,048 characters", so 2,047.
pub const MAX_URI_LEN: usize = 2047;

/// An absolute URI (RFC 3986, or an IRI with non-ASCII characters), as written.
///
/// A URI identifies a resource: a Destination compares the `<loc>` of a Change List with
/// the one it stored from a Resource List, so the text is kept exactly, never normalised.
/// Checking is one pass over the bytes: a scheme, then no white space, control or
/// delimiter characters (`` "<>\^`{|} ``), every `%` followed by two hex digits, and an
/// authority after `http:` and `https:`. [`Uri::to_url`] parses it fully with the `url`
/// crate when a caller needs the parts.
///
/// ```
/// use resourcesync_model::Uri;
///
/// let uri: Uri = " http://Example.com/res1?a=1&b=2 ".parse()?;
/// assert_eq!(uri.as_str(), "http://Example.com/res1?a=1&b=2");
/// assert_eq!(uri.scheme(), "http");
/// assert_eq!(uri.to_url()?.host_str(), Some("example.com"));
/// assert!("/res1".parse::<Uri>().is_err());
/// assert!("http://example.com/a b".parse::<Uri>().is_err());
/// assert!("http:/no-authority".parse::<Uri>().is_err());
/// # Ok::<(), resourcesync_model::UriError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uri {
    text: Box<str>,
    /// [`HTTP`], [`AT_SIGN`] and [`NON_ASCII`], found by the pass that checked the text:
    /// a function of it, so the derived traits stay those of the text.
    flags: u8,
}

/// The offset of the first byte of `text` that `delimiter` picks, a char boundary as
/// long as it picks ASCII bytes only. The accessors below run for every resource a sync
/// decides on (its local path, its authority, its request): a byte loop, where `str::find`
/// with a set of chars decoded every character (about 900 instructions a call for a
/// 40-byte URI, callgrind).
fn position_of(text: &str, delimiter: impl Fn(u8) -> bool) -> Option<usize> {
    text.bytes().position(delimiter)
}

impl fmt::Debug for Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Uri").field(&self.text).finish()
    }
}

/// The scheme is `http` or `https`, in any case.
const HTTP: u8 = 1;
/// The URI has an `@` (it may have a userinfo).
const AT_SIGN: u8 = 2;
/// The URI has a byte outside ASCII.
const NON_ASCII: u8 = 4;

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

/// Bytes that may not stand in a URI outside the ASCII letters, digits and the
/// delimiters RFC 3986 allows: controls, space, and `` "<>\^`{|} ``.
const fn forbidden_table() -> [bool; 128] {
    let mut t = [false; 128];
    let mut i = 0;
    while i < 0x21 {
        t[i] = true;
        i += 1;
    }
    t[0x7F] = true;
    let bad = b"\"<>\\^`{|}";
    let mut j = 0;
    while j < bad.len() {
        t[bad[j] as usize] = true;
        j += 1;
    }
    t
}
const FORBIDDEN: [bool; 128] = forbidden_table();

/// 1 for a forbidden byte or `%`, for the fast pass over a URI; and [`AT_SIGN`] for `@`,
/// [`NON_ASCII`] for bytes outside ASCII, which the same pass notes for the checker.
const SUSPECT: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        if i >= 128 {
            t[i] = NON_ASCII;
        } else if FORBIDDEN[i] {
            t[i] = 1;
        }
        i += 1;
    }
    t[b'%' as usize] = 1;
    t[b'@' as usize] = AT_SIGN;
    t
};

/// The pass over a URI's bytes: [`SUSPECT`]'s bits of every byte.
fn scan(bytes: &[u8]) -> u8 {
    bytes
        .iter()
        .fold(0u8, |acc, &c| acc | SUSPECT[usize::from(c)])
}

impl Uri {
    /// Checks and keeps a URI. Leading and trailing XML white space is dropped (sitemaps
    /// often wrap `<loc>` text); anything else is kept as written.
    pub fn parse(text: &str) -> Result<Uri, UriError> {
        let s = text.trim_matches([' ', '\t', '\r', '\n']);
        let fail = |reason: &str| UriError {
            input: crate::rules::clip(s),
            reason: reason.to_owned(),
        };
        let b = s.as_bytes();
        let colon = b
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.')))
            .filter(|&at| b[at] == b':' && at > 0 && b[0].is_ascii_alphabetic())
            .ok_or_else(|| fail("not an absolute URI (no scheme)"))?;
        // A branch-free pass flags forbidden bytes and percent signs; only a URI with
        // either is looked at byte by byte.
        let flags = scan(&b[colon + 1..]);
        if flags & 1 != 0 {
            for (i, &c) in b.iter().enumerate().skip(colon + 1) {
                if c < 0x80 && FORBIDDEN[c as usize] {
                    return Err(fail(if c <= b' ' || c == 0x7F {
                        "white space or control character inside the URI"
                    } else {
                        "character not allowed in a URI"
                    }));
                }
                if c == b'%'
                    && !(b.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                        && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
                {
                    return Err(fail("'%' not followed by two hex digits"));
                }
            }
        }
        let scheme = &s[..colon];
        let http = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
        if http {
            // The host is what follows `//` up to a `/`, `?` or `#`: it is empty exactly
            // when one of those (or the end) comes first.
            let rest = &b[colon + 1..];
            let has_host = rest
                .strip_prefix(b"//")
                .and_then(|r| r.first())
                .is_some_and(|c| !matches!(c, b'/' | b'?' | b'#'));
            if !has_host {
                return Err(fail("an http URI needs //host"));
            }
        }
        Ok(Uri {
            text: s.into(),
            flags: (flags & (AT_SIGN | NON_ASCII)) | if http { HTTP } else { 0 },
        })
    }

    /// The URI a Source meant by `text` when it wrote one unescaped: a raw space, `|`,
    /// `"` or `{}` in a file name, as Python resync's publisher and others write them. The
    /// text is read as the URL standard reads it (the `url` crate: what a browser or an
    /// HTTP client would request), which percent-encodes what a URI may not hold as it is
    /// (`a b` becomes `a%20b`), then checked as by [`Uri::parse`].
    ///
    /// Only for text that [`Uri::parse`] refuses: the result is another text than the one
    /// written (normalised as the URL standard normalises it), so a reader says so. Fails
    /// where the URL standard fails too (a space in the host, no scheme).
    ///
    /// ```
    /// use resourcesync_model::Uri;
    ///
    /// let meant = Uri::from_unescaped("http://example.com/a b|c.txt")?;
    /// assert_eq!(meant.as_str(), "http://example.com/a%20b%7Cc.txt");
    /// assert!(Uri::from_unescaped("http://exa mple.com/a").is_err());
    /// # Ok::<(), resourcesync_model::UriError>(())
    /// ```
    pub fn from_unescaped(text: &str) -> Result<Uri, UriError> {
        let s = text.trim_matches([' ', '\t', '\r', '\n']);
        let fail = |reason: String| UriError {
            input: crate::rules::clip(s),
            reason,
        };
        let url = url::Url::parse(s).map_err(|e| fail(e.to_string()))?;
        // The URL standard leaves `|`, `^` and `\` (outside special schemes) as they are in
        // a path; a URI may not hold them: they are percent-encoded as any other.
        let mut out = String::with_capacity(url.as_str().len());
        for c in url.as_str().chars() {
            match c {
                '|' | '^' | '\\' | '"' | '<' | '>' | '`' | '{' | '}' => {
                    out.push_str(&format!("%{:02X}", c as u32))
                }
                c => out.push(c),
            }
        }
        Uri::parse(&out)
    }

    /// The URI as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The scheme, as written (compare it case-insensitively).
    pub fn scheme(&self) -> &str {
        match position_of(&self.text, |b| b == b':') {
            Some(colon) => &self.text[..colon],
            None => &self.text,
        }
    }

    /// The URI parsed by the `url` crate (WHATWG URL), normalised: lower-case scheme and
    /// host, `/` for an empty path.
    pub fn to_url(&self) -> Result<url::Url, UriError> {
        url::Url::parse(&self.text).map_err(|e| UriError {
            input: crate::rules::clip(&self.text),
            reason: e.to_string(),
        })
    }

    /// A reference resolved against this URI (RFC 3986, section 5, as the `url` crate
    /// does it): `"resourcelist.xml"` against `http://example.com/dataset1/` is
    /// `http://example.com/dataset1/resourcelist.xml`. Characters a URI cannot hold
    /// (spaces, non-ASCII) are percent-encoded; the result is checked as any `Uri`.
    ///
    /// ```
    /// use resourcesync_model::Uri;
    ///
    /// let base: Uri = "http://example.com/dataset1/capabilitylist.xml".parse()?;
    /// assert_eq!(base.join("resourcelist.xml")?.as_str(), "http://example.com/dataset1/resourcelist.xml");
    /// assert_eq!(base.join("../a b.txt")?.as_str(), "http://example.com/a%20b.txt");
    /// assert_eq!(base.join("https://other.example/")?.as_str(), "https://other.example/");
    /// # Ok::<(), resourcesync_model::UriError>(())
    /// ```
    pub fn join(&self, reference: &str) -> Result<Uri, UriError> {
        let joined = self.to_url()?.join(reference).map_err(|e| UriError {
            input: crate::rules::clip(reference),
            reason: e.to_string(),
        })?;
        Uri::parse(joined.as_str())
    }

    /// Whether the scheme runs code or names local files (`javascript`, `vbscript`,
    /// `data`, `file`, compared case-insensitively), never a Source's resources.
    pub fn has_unsafe_scheme(&self) -> bool {
        let scheme = self.scheme();
        UNSAFE_SCHEMES
            .iter()
            .any(|s| s.eq_ignore_ascii_case(scheme))
    }

    /// Whether the scheme is `http` or `https`, compared case-insensitively.
    pub fn is_http(&self) -> bool {
        // Noted by the pass that checked the text.
        self.flags & HTTP != 0
    }

    /// The authority (RFC 3986, section 3.2): what follows `//` after the scheme, up to the
    /// next `/`, `?` or `#`; `None` for a URI without `//` (`urn:`, `mailto:`).
    ///
    /// ```
    /// use resourcesync_model::Uri;
    ///
    /// let uri: Uri = "http://a.example@b.example:8080/res1".parse()?;
    /// assert_eq!(uri.authority(), Some("a.example@b.example:8080"));
    /// assert_eq!(uri.userinfo(), Some("a.example"));
    /// assert_eq!(uri.host(), Some("b.example"));
    /// assert_eq!("urn:isbn:0451450523".parse::<Uri>()?.authority(), None);
    /// # Ok::<(), resourcesync_model::UriError>(())
    /// ```
    pub fn authority(&self) -> Option<&str> {
        let rest = self.text.get(self.scheme().len() + 1..)?;
        let rest = rest.strip_prefix("//")?;
        let end = position_of(rest, |b| matches!(b, b'/' | b'?' | b'#')).unwrap_or(rest.len());
        Some(&rest[..end])
    }

    /// The path, as written: what follows the authority (or the scheme's `:` when there
    /// is none) up to the first `?` or `#`. Never normalised: `..`, `%2e%2e` and `%2F`
    /// stay, for a caller that must refuse them before anything resolves them (see
    /// [`uri_path`](crate::uri_path)).
    ///
    /// ```
    /// use resourcesync_model::Uri;
    ///
    /// let uri: Uri = "http://e.com/a/../b%2Fc?q=1#f".parse()?;
    /// assert_eq!(uri.path(), "/a/../b%2Fc");
    /// assert_eq!(uri.query(), Some("q=1"));
    /// assert_eq!("http://e.com".parse::<Uri>()?.path(), "");
    /// assert_eq!("urn:isbn:0451450523".parse::<Uri>()?.path(), "isbn:0451450523");
    /// # Ok::<(), resourcesync_model::UriError>(())
    /// ```
    pub fn path(&self) -> &str {
        let rest = self.after_authority();
        let end = position_of(rest, |b| matches!(b, b'?' | b'#')).unwrap_or(rest.len());
        &rest[..end]
    }

    /// The query, as written, without its `?`: up to the `#` of a fragment. `None`
    /// without a `?`.
    pub fn query(&self) -> Option<&str> {
        let rest = self.after_authority();
        let rest = &rest[..position_of(rest, |b| b == b'#').unwrap_or(rest.len())];
        position_of(rest, |b| b == b'?').map(|mark| &rest[mark + 1..])
    }

    /// What follows the authority (with its `//`), or the scheme's `:` when there is none.
    fn after_authority(&self) -> &str {
        let rest = self.text.get(self.scheme().len() + 1..).unwrap_or("");
        match rest.strip_prefix("//") {
            // The authority runs to the first `/`, `?` or `#`, as `authority` reads it.
            Some(authority) => {
                let end = position_of(authority, |b| matches!(b, b'/' | b'?' | b'#'));
                &authority[end.unwrap_or(authority.len())..]
            }
            None => rest,
        }
    }

    /// The userinfo of the authority: what stands before its last `@`. Browsers and HTTP
    /// clients send the request to the host after the `@`, so a userinfo that looks like a
    /// host (`http://a.example@b.example/`) misleads whoever reads the URI.
    pub fn userinfo(&self) -> Option<&str> {
        let authority = self.authority()?;
        authority.rfind('@').map(|at| &authority[..at])
    }

    /// The authority without its userinfo, as written: host and port, what a message may
    /// name of a URI whose userinfo and path are secrets (a WebSub callback's).
    ///
    /// ```
    /// use resourcesync_model::Uri;
    /// let uri: Uri = "http://user:t0ken@a.example:8080/s3cret".parse()?;
    /// assert_eq!(uri.host_port(), Some("a.example:8080"));
    /// # Ok::<(), resourcesync_model::UriError>(())
    /// ```
    pub fn host_port(&self) -> Option<&str> {
        let authority = self.authority()?;
        Some(
            authority
                .rfind('@')
                .map_or(authority, |at| &authority[at + 1..]),
        )
    }

    /// The host of the authority, as written: after any userinfo, without the port. An IP
    /// literal keeps its brackets (`[::1]`).
    pub fn host(&self) -> Option<&str> {
        let host_port = self.host_port()?;
        if host_port.starts_with('[') {
            let end = host_port.find(']').map_or(host_port.len(), |at| at + 1);
            return Some(&host_port[..end]);
        }
        Some(host_port.split(':').next().unwrap_or(host_port))
    }

    /// Whether the URI has an `@`, without which it has no userinfo.
    pub(crate) fn has_at_sign(&self) -> bool {
        self.flags & AT_SIGN != 0
    }

    /// Whether every byte of the URI is ASCII: one that is not (an IRI) is requested
    /// percent-encoded, as [`Uri::to_url`] gives it.
    pub fn is_ascii(&self) -> bool {
        self.flags & NON_ASCII == 0
    }

    /// The first bidirectional formatting character in the URI, which RFC 3987 (section
    /// 4.1) forbids in IRIs: U+061C ARABIC LETTER MARK, U+200E LRM, U+200F RLM, U+202A to
    /// U+202E (LRE, RLE, PDF, LRO, RLO) and U+2066 to U+2069 (LRI, RLI, FSI, PDI). They
    /// change how a URI is displayed without changing what it names.
    pub fn bidi_formatting_char(&self) -> Option<char> {
        // Every one of them is outside ASCII: an ASCII URI, the common case, costs one
        // pass that the compiler vectorises.
        if self.flags & NON_ASCII == 0 {
            return None;
        }
        self.text.chars().find(|&c| is_bidi_formatting(c))
    }
}

/// Schemes that run code or name local files.
const UNSAFE_SCHEMES: [&str; 4] = ["javascript", "vbscript", "data", "file"];

/// The bidirectional formatting characters of RFC 3987, section 4.1, with U+061C and the
/// isolates (U+2066 to U+2069) that Unicode added after it.
fn is_bidi_formatting(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

impl FromStr for Uri {
    type Err = UriError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Uri::parse(s)
    }
}

impl TryFrom<&str> for Uri {
    type Error = UriError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Uri::parse(s)
    }
}

impl From<url::Url> for Uri {
    /// A parsed URL is always an absolute URI.
    fn from(url: url::Url) -> Self {
        let text: Box<str> = String::from(url).into();
        let b = text.as_bytes();
        let http =
            |n: usize| b.len() > n && b[n] == b':' && b[..n].eq_ignore_ascii_case(&b"https"[..n]);
        let flags = (scan(b) & (AT_SIGN | NON_ASCII)) | if http(4) || http(5) { HTTP } else { 0 };
        Uri { text, flags }
    }
}

impl AsRef<str> for Uri {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Uri {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

crate::rules::serde_as_text!(Uri);

#[cfg(test)]
mod tests {
    use super::*;

    /// The accessors as they were written with `str::find` and `split`, before the byte
    /// loops: the reference the loops must agree with.
    fn by_chars(uri: &str) -> (&str, Option<&str>, &str, Option<&str>) {
        let scheme = uri.split(':').next().unwrap_or("");
        let rest = &uri[scheme.len() + 1..];
        let authority = rest.strip_prefix("//").map(|rest| {
            let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
            &rest[..end]
        });
        let after = match authority {
            Some(authority) => rest.get(2 + authority.len()..).unwrap_or(""),
            None => rest,
        };
        let path = &after[..after.find(['?', '#']).unwrap_or(after.len())];
        let query = after.split('#').next().unwrap_or(after);
        let query = query.split_once('?').map(|(_, query)| query);
        (scheme, authority, path, query)
    }

    proptest::proptest! {
        #[test]
        fn the_accessors_read_what_the_char_searches_read(
            scheme in "[a-zA-Z][a-zA-Z0-9+.-]{0,5}",
            rest in "[a-z0-9/?#@:.\u{e9}\u{4e2d}-]{0,24}",
        ) {
            let text = format!("{scheme}:{rest}");
            if let Ok(uri) = Uri::parse(&text) {
                let got = (uri.scheme(), uri.authority(), uri.path(), uri.query());
                proptest::prop_assert_eq!(got, by_chars(uri.as_str()));
            }
        }
    }

    #[test]
    fn the_accessors_split_a_uri_where_its_delimiters_are() {
        for uri in [
            "http://e.com?q#f",
            "http://e.com#f?x",
            "http://e.com/a?b?c#d#e",
            "http://u@e.com:80/caf\u{e9}/\u{4e2d}?\u{e9}=1#x",
            "urn:isbn:0451450523",
            "mailto:a@example.com?subject=x",
            "file:///etc/passwd",
            "http://e.com",
        ] {
            let parsed = Uri::parse(uri).unwrap();
            let got = (
                parsed.scheme(),
                parsed.authority(),
                parsed.path(),
                parsed.query(),
            );
            assert_eq!(got, by_chars(parsed.as_str()), "{uri}");
        }
    }

    #[test]
    fn accepts_absolute_uris_as_written() {
        for s in [
            "http://example.com",
            "HTTPS://Example.COM:8080/a/../b?q=%20#frag",
            "ftp://mirror.example.com/res1",
            "urn:isbn:0451450523",
            "mailto:a@example.com",
            "http://example.com/caf\u{e9}",
            "javascript:alert(1)",
            "file:///etc/passwd",
        ] {
            assert_eq!(Uri::parse(s).unwrap().as_str(), s);
        }
    }

    #[test]
    fn refuses_relative_spaces_controls_and_bad_escapes() {
        for s in [
            "",
            "/res1",
            "res1",
            "1http://example.com",
            "://example.com",
            "http://exa mple.com",
            "http://example.com/\u{0}",
            "http://example.com/<script>",
            "http://example.com/%zz",
            "http://example.com/%4",
            "http:/path",
            "http://",
            "http:///path",
        ] {
            let e = Uri::parse(s).unwrap_err();
            assert_eq!(e.rule(), Rule::UriSyntax, "{s}");
        }
    }

    #[test]
    fn unsafe_schemes() {
        for s in [
            "JavaScript:x",
            "vbscript:x",
            "DATA:text/html,x",
            "file:///etc/passwd",
        ] {
            let uri = Uri::parse(s).unwrap();
            assert!(uri.has_unsafe_scheme() && !uri.is_http(), "{s}");
        }
        for s in ["https://e.com/", "HTTP://e.com/"] {
            let uri = Uri::parse(s).unwrap();
            assert!(!uri.has_unsafe_scheme() && uri.is_http(), "{s}");
        }
        let ftp = Uri::parse("ftp://e.com/").unwrap();
        assert!(!ftp.has_unsafe_scheme() && !ftp.is_http());
    }

    #[test]
    fn authority_userinfo_and_host() {
        let cases = [
            ("http://e.com/a", Some("e.com"), None, Some("e.com")),
            ("http://e.com", Some("e.com"), None, Some("e.com")),
            ("http://e.com?q", Some("e.com"), None, Some("e.com")),
            (
                "http://u:p@e.com:80/a",
                Some("u:p@e.com:80"),
                Some("u:p"),
                Some("e.com"),
            ),
            (
                "http://a@b@c.example#f",
                Some("a@b@c.example"),
                Some("a@b"),
                Some("c.example"),
            ),
            (
                "http://[::1]:8080/",
                Some("[::1]:8080"),
                None,
                Some("[::1]"),
            ),
            ("http://e.com/a@b", Some("e.com"), None, Some("e.com")),
            ("mailto:a@e.com", None, None, None),
        ];
        for (s, authority, userinfo, host) in cases {
            let uri = Uri::parse(s).unwrap();
            assert_eq!(
                (uri.authority(), uri.userinfo(), uri.host()),
                (authority, userinfo, host),
                "{s}"
            );
        }
    }

    #[test]
    fn bidi_formatting_characters() {
        for c in [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
            '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
        ] {
            let uri = Uri::parse(&format!("http://e.com/a{c}b")).unwrap();
            assert_eq!(uri.bidi_formatting_char(), Some(c));
        }
        // Neighbours of the ranges, and other non-ASCII text, are not formatting characters.
        for c in [
            '\u{200D}', '\u{2010}', '\u{2029}', '\u{202F}', '\u{2065}', '\u{206A}', '\u{e9}',
        ] {
            let uri = Uri::parse(&format!("http://e.com/a{c}b")).unwrap();
            assert_eq!(uri.bidi_formatting_char(), None, "{c:?}");
        }
    }
}
