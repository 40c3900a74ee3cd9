//! Finding a Source's ResourceSync documents (sections 6.3 and 8): the well-known URI of
//! its Source Description, `Sitemap:` lines in robots.txt, `<link rel="resourcesync">` in
//! an HTML head, and `Link:` headers with `rel="resourcesync"` (RFC 8288).
//!
//! Each parser takes the bytes the driver received and the URI they came from, and returns
//! a [`Discovered`]: the URIs found, each once, in the order of first appearance, resolved
//! against the right base; the values it passed over and why ([`Ignored`]); and whether a
//! [`DiscoveryLimits`] cut the input or the list short. None of them fails or panics, whatever the
//! bytes. None of them judges what it found either: a discovered URI may be `javascript:`
//! or on another host. Pass each to a [`Policy`](crate::policy::Policy) before fetching it.
//!
//! The HTML scanner is a small one written here rather than an HTML parser crate
//! (html5ever, tl, scraper): discovery needs the `<link>` and `<base>` elements of the head
//! and nothing else, and a scanner of a few hundred lines is easier to bound in time and
//! memory, and to fuzz, than a parser that builds a tree. It follows the HTML standard's
//! tokenizer where that matters here: comments, raw-text elements (`<script>`, `<style>`,
//! `<title>`, `<template>`, ...), the three forms of attribute values, the first of two
//! attributes with one name, character references in values, and where the head ends.
//!
//! # Deviations
//! - robots.txt: a `Sitemap:` value is resolved against the robots.txt URI when it is
//!   relative; RFC 9309 (section 2.2.4) asks for absolute values, and crawlers that follow
//!   it drop relative ones.
//! - HTML: only the head counts, as section 6.3.3 says: the scan stops where the HTML
//!   standard's parser would leave the head (`</head>`, a start tag that belongs in the
//!   body, or text that is not white space). A `<link>` a browser would move into the body
//!   is not read. Named character references are decoded for `&amp;`, `&lt;`, `&gt;`,
//!   `&quot;`, `&apos;` and `&nbsp;`; other names are kept as written, which is what a
//!   browser does with a name it does not know.
//! - `Link:` headers: a link whose `anchor` parameter names another resource than the one
//!   requested is ignored ([`IgnoredReason::OtherAnchor`]), since section 6.3.3 requires
//!   the Capability List to pertain to the resource that provides the link.

use std::collections::HashSet;

use resourcesync_model::{MAX_URI_LEN, Uri};
use url::Url;

use crate::WELL_KNOWN_PATH;

/// Bounds on one discovery parse: what it reads and what it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DiscoveryLimits {
    /// Input read, in bytes (all `Link:` values together); the rest is not looked at.
    /// 512 KiB by default, a little over the 500 KiB that RFC 9309 (section 2.5) lets a
    /// crawler stop reading robots.txt at.
    pub max_input_bytes: usize,
    /// URIs returned; 1,000 by default.
    pub max_uris: usize,
    /// [`Ignored`] values returned; 100 by default.
    pub max_ignored: usize,
}

impl Default for DiscoveryLimits {
    fn default() -> DiscoveryLimits {
        DiscoveryLimits {
            max_input_bytes: 512 * 1024,
            max_uris: 1000,
            max_ignored: 100,
        }
    }
}

/// What one discovery parse found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discovered {
    /// The URIs found, resolved, each once, in order of first appearance.
    pub uris: Vec<Uri>,
    /// Values that named a target but gave no URI, in order, up to the limit.
    pub ignored: Vec<Ignored>,
    /// Whether a [`DiscoveryLimits`] bound was reached: input was left unread, or URIs or ignored
    /// values were left out.
    pub truncated: bool,
}

/// A value a discovery parse passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// The value, as written (lossily decoded when not UTF-8), cut to 256 characters.
    pub value: String,
    /// Why it gave no URI.
    pub reason: IgnoredReason,
}

/// Why a value gave no URI.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum IgnoredReason {
    /// It is empty.
    Empty,
    /// It is not UTF-8.
    NotUtf8,
    /// The `url` crate cannot resolve it against the base; its message.
    Unresolvable(String),
    /// Resolved, it is not a [`Uri`] (a character the model refuses); the reason.
    NotUri(String),
    /// Resolved, it is longer than [`MAX_URI_LEN`] characters.
    TooLong,
    /// A `Link:` value that does not follow RFC 8288's syntax, up to the next link.
    Malformed,
    /// A `Link:` whose `anchor` makes it a link of another resource.
    OtherAnchor,
}

/// Why a URI has no well-known URI.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WellKnownError {
    /// The base is not http or https.
    #[error("{uri:?} is not an http or https URI")]
    NotHttp {
        /// The base.
        uri: String,
    },
    /// The `url` crate cannot parse the base.
    #[error("{uri:?} cannot be parsed: {reason}")]
    Unparsable {
        /// The base.
        uri: String,
        /// The `url` crate's message.
        reason: String,
    },
}

/// The URI of the Source Description at the well-known location (section 6.3.2,
/// RFC 8615) for any URI on the Source: its scheme and authority with
/// [`WELL_KNOWN_PATH`]. A path, query, fragment or userinfo of `base` is dropped; the
/// well-known path is always at the root of the authority.
///
/// ```
/// use resourcesync_client::discovery::well_known_uri;
///
/// let uri = well_known_uri(&"http://Example.com:8080/dataset1/resourcelist.xml?x#y".parse()?)?;
/// assert_eq!(uri.as_str(), "http://example.com:8080/.well-known/resourcesync");
/// assert!(well_known_uri(&"ftp://example.com/".parse()?).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn well_known_uri(base: &Uri) -> Result<Uri, WellKnownError> {
    if !base.is_http() {
        return Err(WellKnownError::NotHttp {
            uri: base.as_str().to_owned(),
        });
    }
    let unparsable = |reason: String| WellKnownError::Unparsable {
        uri: base.as_str().to_owned(),
        reason,
    };
    let url = base.to_url().map_err(|e| unparsable(e.reason))?;
    let host = url.host_str().unwrap_or_default();
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    Uri::parse(&format!("{}://{host}{port}{WELL_KNOWN_PATH}", url.scheme()))
        .map_err(|e| unparsable(e.reason))
}

/// The well-known URI under the path of `base` (its path up to its last `/`, then
/// [`WELL_KNOWN_PATH`]), for a Source published under a path rather than at its host's
/// root: a large aggregator's Capability List points `up` to
/// `https://host/path/.well-known/resourcesync`. `None` when that path is the root (the
/// URI is then [`well_known_uri`]'s) or `base` is no http or https URI.
///
/// This is not a well-known URI as RFC 8615 defines them (those are at the root only), so
/// discovery tries it after the host's: see [`Client`](crate::Client).
///
/// ```
/// use resourcesync_client::discovery::path_well_known_uri;
///
/// let uri = path_well_known_uri(&"http://example.com/oai/data/?x#y".parse()?).unwrap();
/// assert_eq!(uri.as_str(), "http://example.com/oai/data/.well-known/resourcesync");
/// assert_eq!(path_well_known_uri(&"http://example.com/".parse()?), None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn path_well_known_uri(base: &Uri) -> Option<Uri> {
    if !base.is_http() {
        return None;
    }
    let url = base.to_url().ok()?;
    let path = url.path();
    let dir = &path[..path.rfind('/')?];
    if dir.is_empty() {
        return None;
    }
    let host = url.host_str()?;
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    Uri::parse(&format!(
        "{}://{host}{port}{dir}{WELL_KNOWN_PATH}",
        url.scheme()
    ))
    .ok()
}

/// Collects URIs and ignored values within the limits.
struct Collector {
    limits: DiscoveryLimits,
    found: Discovered,
    seen: HashSet<Uri>,
}

impl Collector {
    fn new(limits: &DiscoveryLimits) -> Collector {
        Collector {
            limits: *limits,
            found: Discovered::default(),
            seen: HashSet::new(),
        }
    }

    /// Whether no more URIs can be taken.
    fn full(&self) -> bool {
        self.found.uris.len() >= self.limits.max_uris
    }

    /// Resolves `value` against `base` and keeps the URI, or the reason it has none.
    fn add(&mut self, base: Option<&Url>, value: &[u8]) {
        match resolve(base, value) {
            Ok(uri) => {
                if self.seen.contains(&uri) {
                    return;
                }
                if self.full() {
                    self.found.truncated = true;
                    return;
                }
                self.seen.insert(uri.clone());
                self.found.uris.push(uri);
            }
            Err(reason) => self.ignore(value, reason),
        }
    }

    fn ignore(&mut self, value: &[u8], reason: IgnoredReason) {
        if self.found.ignored.len() >= self.limits.max_ignored {
            self.found.truncated = true;
            return;
        }
        let value: String = String::from_utf8_lossy(value).chars().take(256).collect();
        self.found.ignored.push(Ignored { value, reason });
    }

    /// The input up to the byte limit, noting when it was cut.
    fn bounded<'a>(&mut self, input: &'a [u8]) -> &'a [u8] {
        if input.len() > self.limits.max_input_bytes {
            self.found.truncated = true;
            &input[..self.limits.max_input_bytes]
        } else {
            input
        }
    }
}

/// A reference resolved against a base (RFC 3986, section 5, as the `url` crate does it).
fn resolve(base: Option<&Url>, value: &[u8]) -> Result<Uri, IgnoredReason> {
    let text = std::str::from_utf8(value).map_err(|_| IgnoredReason::NotUtf8)?;
    // The URL standard strips leading and trailing C0 controls and spaces; an empty
    // value would resolve to the base itself, which names no document of its own.
    if text.trim_matches(|c: char| c <= ' ').is_empty() {
        return Err(IgnoredReason::Empty);
    }
    let url = Url::options()
        .base_url(base)
        .parse(text)
        .map_err(|e| IgnoredReason::Unresolvable(e.to_string()))?;
    if url.as_str().chars().count() > MAX_URI_LEN {
        return Err(IgnoredReason::TooLong);
    }
    Uri::parse(url.as_str()).map_err(|e| IgnoredReason::NotUri(e.reason))
}

/// The `Sitemap:` values of a robots.txt (section 6.3.4; RFC 9309), resolved against
/// `robots_uri`, the URI the file was fetched from.
///
/// The field name is matched without regard to case, with optional white space before
/// the colon; `#` starts a comment; lines end in LF, CR or CRLF; a leading UTF-8 BOM is
/// skipped; a line that is not UTF-8 is ignored if it is a `Sitemap:` line and skipped
/// otherwise. `Sitemap:` lines count wherever they stand, inside or outside a group of
/// `User-agent` rules. When the input is cut at the byte limit, its last, partial line is
/// not read.
///
/// ```
/// use resourcesync_client::discovery::{robots_txt, DiscoveryLimits};
///
/// let robots = b"\xEF\xBB\xBFUser-agent: *\r\nDisallow: /tmp/\r\n\
///     SITEMAP: http://example.com/dataset1/resourcelist.xml # ResourceSync\r\n\
///     sitemap:/sitemap.xml\r\n";
/// let found = robots_txt(&"http://example.com/robots.txt".parse()?, robots, &DiscoveryLimits::default());
/// let uris: Vec<&str> = found.uris.iter().map(|u| u.as_str()).collect();
/// assert_eq!(uris, ["http://example.com/dataset1/resourcelist.xml", "http://example.com/sitemap.xml"]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn robots_txt(robots_uri: &Uri, body: &[u8], limits: &DiscoveryLimits) -> Discovered {
    let mut out = Collector::new(limits);
    let base = robots_uri.to_url().ok();
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let cut = body.len() > limits.max_input_bytes;
    let mut body = out.bounded(body);
    if cut {
        // The last line may have been cut in the middle of its URI.
        let end = body.iter().rposition(|&b| b == b'\n' || b == b'\r');
        body = &body[..end.unwrap_or(0)];
    }
    for line in body.split(|&b| b == b'\n' || b == b'\r') {
        let line = match line.iter().position(|&b| b == b'#') {
            Some(at) => &line[..at],
            None => line,
        };
        let line = line.trim_ascii();
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if !line[..colon].trim_ascii().eq_ignore_ascii_case(b"sitemap") {
            continue;
        }
        out.add(base.as_ref(), line[colon + 1..].trim_ascii());
    }
    out.found
}

/// Start tags that the HTML standard's parser keeps in the head; any other ends it.
const HEAD_TAGS: [&[u8]; 13] = [
    b"html",
    b"head",
    b"base",
    b"basefont",
    b"bgsound",
    b"link",
    b"meta",
    b"title",
    b"noscript",
    b"noframes",
    b"style",
    b"script",
    b"template",
];

/// Elements whose content is text up to their end tag, never tags.
const RAW_TEXT: [&[u8]; 6] = [
    b"title",
    b"noscript",
    b"noframes",
    b"style",
    b"script",
    b"template",
];

/// The targets of `<link rel="resourcesync" href="...">` in the head of an HTML document
/// (section 6.3.3), resolved against `document_uri` or the document's first
/// `<base href>`.
///
/// `rel` is a set of space-separated tokens compared without regard to ASCII case;
/// attributes may come in any order and be double-quoted, single-quoted or unquoted;
/// character references in values are decoded (`&amp;`); the first of two attributes of
/// one name counts. A `<link>` without `href` or with an empty one is passed over. See
/// the module's deviations for where the head ends.
///
/// ```
/// use resourcesync_client::discovery::{html_links, DiscoveryLimits};
///
/// let html = br#"<!DOCTYPE html>
/// <html><head>
///   <base href="http://example.com/dataset1/">
///   <!-- <link rel="resourcesync" href="/commented-out.xml"> -->
///   <link href='capabilitylist.xml?a=1&amp;b=2' REL="Alternate ResourceSync">
///   <link rel=resourcesync href=../other/capabilitylist.xml>
/// </head><body><link rel="resourcesync" href="/in-body.xml"></body></html>"#;
/// let found = html_links(&"http://example.com/page.html".parse()?, html, &DiscoveryLimits::default());
/// let uris: Vec<&str> = found.uris.iter().map(|u| u.as_str()).collect();
/// assert_eq!(uris, [
///     "http://example.com/dataset1/capabilitylist.xml?a=1&b=2",
///     "http://example.com/other/capabilitylist.xml",
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn html_links(document_uri: &Uri, body: &[u8], limits: &DiscoveryLimits) -> Discovered {
    let mut out = Collector::new(limits);
    let body = out.bounded(body);
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let mut base_href: Option<Vec<u8>> = None;
    let mut hrefs: Vec<Vec<u8>> = Vec::new();
    let mut seen_hrefs: HashSet<Vec<u8>> = HashSet::new();
    let mut i = 0;
    while i < body.len() {
        let Some(lt) = body[i..].iter().position(|&b| b == b'<') else {
            break;
        };
        // Text that is not white space ends the head.
        if !body[i..i + lt].iter().all(u8::is_ascii_whitespace) {
            break;
        }
        i += lt;
        let rest = &body[i..];
        if rest.starts_with(b"<!--") {
            i = find(body, i + 4, b"-->").map_or(body.len(), |at| at + 3);
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            i = find(body, i, b">").map_or(body.len(), |at| at + 1);
            continue;
        }
        let end_tag = rest.starts_with(b"</");
        let name_at = i + if end_tag { 2 } else { 1 };
        if !body.get(name_at).is_some_and(u8::is_ascii_alphabetic) {
            // A `<` that starts no tag is text.
            break;
        }
        let name_len = body[name_at..]
            .iter()
            .position(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>')
            .unwrap_or(body.len() - name_at);
        let name = body[name_at..name_at + name_len].to_ascii_lowercase();
        let Some((attributes, after)) = attributes(body, name_at + name_len) else {
            // The input ends inside the tag, which the HTML standard drops.
            break;
        };
        i = after;
        if end_tag {
            // The HTML standard, "in head": these end it; any other end tag is ignored.
            if [&b"head"[..], b"body", b"html", b"br"].contains(&name.as_slice()) {
                break;
            }
            continue;
        }
        if !HEAD_TAGS.contains(&name.as_slice()) {
            break;
        }
        let attribute = |wanted: &[u8]| match wanted {
            b"rel" => attributes.rel.as_deref(),
            _ => attributes.href.as_deref(),
        };
        match name.as_slice() {
            b"link" => {
                let resourcesync = attribute(b"rel").is_some_and(|rel| {
                    rel.split(u8::is_ascii_whitespace)
                        .any(|token| token.eq_ignore_ascii_case(b"resourcesync"))
                });
                if resourcesync {
                    match attribute(b"href") {
                        // Kept raw until the `<base>` is known; a repeated value once, so
                        // that repeats do not use up the room for others.
                        Some(href) if !seen_hrefs.contains(href) => {
                            if hrefs.len() < limits.max_uris.saturating_add(limits.max_ignored) {
                                hrefs.push(href.to_vec());
                                seen_hrefs.insert(href.to_vec());
                            } else {
                                out.found.truncated = true;
                            }
                        }
                        Some(_) => {}
                        None => out.ignore(b"", IgnoredReason::Empty),
                    }
                }
            }
            // The first `<base>` with an `href` counts (one with only `target` does not).
            b"base" if base_href.is_none() => {
                base_href = attribute(b"href").map(<[u8]>::to_vec);
            }
            raw if RAW_TEXT.contains(&raw) => {
                // Skip to the matching end tag, whatever it holds.
                i = raw_text_end(body, i, raw);
            }
            _ => {}
        }
    }
    // The HTML standard: the document's base URL is its first `<base href>` resolved
    // against the document's URL, or the document's URL if that fails.
    let document = document_uri.to_url().ok();
    let base = base_href
        .and_then(|href| {
            let text = String::from_utf8(href).ok()?;
            Url::options().base_url(document.as_ref()).parse(&text).ok()
        })
        .or(document);
    for href in hrefs {
        out.add(base.as_ref(), &href);
    }
    out.found
}

/// The first `needle` in `haystack` at or after `from`.
fn find(haystack: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|at| from + at)
}

/// Where the text of a raw-text element that starts at `from` ends: after its end tag
/// (`</script` followed by white space, `/` or `>`, in any case), or the end of input.
fn raw_text_end(body: &[u8], from: usize, name: &[u8]) -> usize {
    let mut at = from;
    while let Some(lt) = find(body, at, b"</") {
        let name_end = lt + 2 + name.len();
        let matches = body
            .get(lt + 2..name_end)
            .is_some_and(|n| n.eq_ignore_ascii_case(name))
            && body
                .get(name_end)
                .is_none_or(|&b| b.is_ascii_whitespace() || b == b'/' || b == b'>');
        if matches {
            return find(body, name_end, b">").map_or(body.len(), |gt| gt + 1);
        }
        at = lt + 2;
    }
    body.len()
}

/// The attributes discovery reads, the first of each name, with character references
/// decoded. Only these are kept: remembering every name to find the first of each would
/// make a tag with many attributes cost time quadratic in their number.
#[derive(Default)]
struct Attributes {
    rel: Option<Vec<u8>>,
    href: Option<Vec<u8>>,
}

/// The attributes of a tag whose name ends at `i`, and where the tag ends; `None` when
/// the input ends first.
fn attributes(body: &[u8], mut i: usize) -> Option<(Attributes, usize)> {
    let mut out = Attributes::default();
    loop {
        while body
            .get(i)
            .is_some_and(|&b| b.is_ascii_whitespace() || b == b'/')
        {
            i += 1;
        }
        match body.get(i)? {
            b'>' => return Some((out, i + 1)),
            _ => {
                // A name runs to white space, `/`, `>` or `=`; a first `=` belongs to it.
                let start = i;
                i += 1;
                while body.get(i).is_some_and(|&b| {
                    !(b.is_ascii_whitespace() || b == b'/' || b == b'>' || b == b'=')
                }) {
                    i += 1;
                }
                let name = &body[start..i];
                while body.get(i).is_some_and(u8::is_ascii_whitespace) {
                    i += 1;
                }
                let mut value: &[u8] = &[];
                if body.get(i) == Some(&b'=') {
                    i += 1;
                    while body.get(i).is_some_and(u8::is_ascii_whitespace) {
                        i += 1;
                    }
                    let raw = match body.get(i)? {
                        &quote @ (b'"' | b'\'') => {
                            let len = body[i + 1..].iter().position(|&b| b == quote)?;
                            let raw = &body[i + 1..i + 1 + len];
                            i += len + 2;
                            raw
                        }
                        _ => {
                            let len = body[i..]
                                .iter()
                                .position(|&b| b.is_ascii_whitespace() || b == b'>')
                                .unwrap_or(body.len() - i);
                            let raw = &body[i..i + len];
                            i += len;
                            raw
                        }
                    };
                    value = raw;
                }
                let slot = if name.eq_ignore_ascii_case(b"rel") {
                    &mut out.rel
                } else if name.eq_ignore_ascii_case(b"href") {
                    &mut out.href
                } else {
                    continue;
                };
                if slot.is_none() {
                    *slot = Some(decode_references(value));
                }
            }
        }
    }
}

/// Decodes the character references of an attribute value: numeric ones, and the named
/// ones a ResourceSync link can need. A name without `;` is decoded only when the HTML
/// standard would (a legacy name not followed by `=` or an alphanumeric).
fn decode_references(raw: &[u8]) -> Vec<u8> {
    const NAMED: [(&[u8], char, bool); 6] = [
        (b"amp", '&', true),
        (b"lt", '<', true),
        (b"gt", '>', true),
        (b"quot", '"', true),
        (b"apos", '\'', false),
        (b"nbsp", '\u{a0}', true),
    ];
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] != b'&' {
            out.push(raw[i]);
            i += 1;
            continue;
        }
        let rest = &raw[i + 1..];
        if let Some(numeric) = rest.strip_prefix(b"#") {
            let (hex, digits) = match numeric.first() {
                Some(b'x' | b'X') => (true, &numeric[1..]),
                _ => (false, numeric),
            };
            let len = digits
                .iter()
                .position(|b| {
                    !(if hex {
                        b.is_ascii_hexdigit()
                    } else {
                        b.is_ascii_digit()
                    })
                })
                .unwrap_or(digits.len());
            if len > 0 {
                let text = std::str::from_utf8(&digits[..len]).unwrap_or("");
                let code = u32::from_str_radix(text, if hex { 16 } else { 10 }).ok();
                let c = code
                    .filter(|&c| c != 0)
                    .and_then(char::from_u32)
                    .unwrap_or('\u{FFFD}');
                out.extend(c.encode_utf8(&mut [0; 4]).bytes());
                let semicolon = usize::from(digits.get(len) == Some(&b';'));
                i += 1 + 1 + usize::from(hex) + len + semicolon;
                continue;
            }
        } else if let Some((name, c, legacy)) =
            NAMED.iter().find(|(name, _, _)| rest.starts_with(name))
        {
            let after = rest.get(name.len());
            let decode = match after {
                Some(b';') => true,
                Some(&b) => *legacy && !(b.is_ascii_alphanumeric() || b == b'='),
                None => *legacy,
            };
            if decode {
                out.extend(c.encode_utf8(&mut [0; 4]).bytes());
                i += 1 + name.len() + usize::from(after == Some(&b';'));
                continue;
            }
        }
        out.push(b'&');
        i += 1;
    }
    out
}

/// The targets of `Link:` header values with the relation type `resourcesync`
/// (section 6.3.3; RFC 8288), resolved against `request_uri`, the URI the response
/// answered (after any redirect the driver followed).
///
/// Pass every `Link` value of the response, in order: with the `http` crate,
/// `headers.get_all(http::header::LINK)`. A value may hold several links separated by
/// commas; parameters may be tokens or quoted strings with `\` escapes and commas inside;
/// `rel` may hold several space-separated relation types, compared without regard to
/// case, and only the first `rel` of a link counts (RFC 8288, section 3.3). A link that
/// breaks the syntax is ignored up to the next comma outside quotes and angle brackets.
///
/// ```
/// use resourcesync_client::discovery::{link_headers, DiscoveryLimits};
///
/// let values = [
///     r#"<http://example.com/dataset1/capabilitylist.xml>; rel="resourcesync""#,
///     r#"</style.css>; rel=stylesheet, <capabilitylist2.xml>; title="a, \"b\""; rel="describedby ResourceSync""#,
/// ];
/// let found = link_headers(&"http://example.com/dataset1/res1".parse()?, values, &DiscoveryLimits::default());
/// let uris: Vec<&str> = found.uris.iter().map(|u| u.as_str()).collect();
/// assert_eq!(uris, [
///     "http://example.com/dataset1/capabilitylist.xml",
///     "http://example.com/dataset1/capabilitylist2.xml",
/// ]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn link_headers<I>(request_uri: &Uri, values: I, limits: &DiscoveryLimits) -> Discovered
where
    I: IntoIterator,
    I::Item: AsRef<[u8]>,
{
    let mut out = Collector::new(limits);
    let base = request_uri.to_url().ok();
    let mut budget = limits.max_input_bytes;
    for value in values {
        let value = value.as_ref();
        if budget == 0 {
            out.found.truncated |= !value.is_empty();
            break;
        }
        let value = if value.len() > budget {
            out.found.truncated = true;
            &value[..budget]
        } else {
            value
        };
        budget -= value.len();
        link_value(&mut out, base.as_ref(), value);
    }
    out.found
}

/// One `Link:` value: `#link-value`, each `"<" URI-Reference ">" *( OWS ";" OWS
/// link-param )`.
fn link_value(out: &mut Collector, base: Option<&Url>, v: &[u8]) {
    let mut i = 0;
    loop {
        while v
            .get(i)
            .is_some_and(|&b| b == b' ' || b == b'\t' || b == b',')
        {
            i += 1;
        }
        if i >= v.len() {
            return;
        }
        let start = i;
        match parse_link(v, &mut i) {
            Some(LinkValue {
                target,
                rel,
                anchor,
            }) => {
                let resourcesync = rel.as_deref().is_some_and(|rel| {
                    rel.split(|b: &u8| b.is_ascii_whitespace())
                        .any(|t| t.eq_ignore_ascii_case(b"resourcesync"))
                });
                if !resourcesync {
                    continue;
                }
                if let Some(anchor) = anchor {
                    // The anchor changes whose link this is; one that resolves to the
                    // requested resource itself changes nothing.
                    let here = base.map(Url::as_str);
                    let anchored = std::str::from_utf8(&anchor)
                        .ok()
                        .and_then(|a| Url::options().base_url(base).parse(a).ok());
                    if anchored.as_ref().map(Url::as_str) != here {
                        out.ignore(target, IgnoredReason::OtherAnchor);
                        continue;
                    }
                }
                out.add(base, target);
            }
            None => {
                skip_to_comma(v, &mut i);
                let malformed = &v[start..i.min(v.len())];
                out.ignore(
                    malformed.strip_suffix(b",").unwrap_or(malformed),
                    IgnoredReason::Malformed,
                );
            }
        }
    }
}

/// What discovery needs of one link-value.
struct LinkValue<'a> {
    target: &'a [u8],
    /// The first `rel` parameter.
    rel: Option<Vec<u8>>,
    /// The first `anchor` parameter.
    anchor: Option<Vec<u8>>,
}

/// One link-value from `i`, up to the comma after it or the end; `None` when it breaks
/// the syntax (then `i` is where it broke).
fn parse_link<'a>(v: &'a [u8], i: &mut usize) -> Option<LinkValue<'a>> {
    let ows = |i: &mut usize| {
        while v.get(*i).is_some_and(|&b| b == b' ' || b == b'\t') {
            *i += 1;
        }
    };
    if v.get(*i) != Some(&b'<') {
        return None;
    }
    let len = v[*i + 1..].iter().position(|&b| b == b'>')?;
    let target = &v[*i + 1..*i + 1 + len];
    *i += len + 2;
    let mut rel = None;
    let mut anchor = None;
    loop {
        ows(i);
        match v.get(*i) {
            None | Some(b',') => {
                return Some(LinkValue {
                    target,
                    rel,
                    anchor,
                });
            }
            Some(b';') => *i += 1,
            Some(_) => return None,
        }
        ows(i);
        let start = *i;
        while v.get(*i).is_some_and(|&b| is_tchar(b)) {
            *i += 1;
        }
        if *i == start {
            // `;` with no parameter after it (`<a>;`, `<a>; , <b>`) is tolerated.
            continue;
        }
        let name = v[start..*i].to_ascii_lowercase();
        ows(i);
        let mut value = Vec::new();
        if v.get(*i) == Some(&b'=') {
            *i += 1;
            ows(i);
            if v.get(*i) == Some(&b'"') {
                *i += 1;
                loop {
                    match v.get(*i)? {
                        b'"' => {
                            *i += 1;
                            break;
                        }
                        b'\\' => {
                            value.push(*v.get(*i + 1)?);
                            *i += 2;
                        }
                        &b => {
                            value.push(b);
                            *i += 1;
                        }
                    }
                }
            } else {
                let start = *i;
                while v.get(*i).is_some_and(|&b| is_tchar(b)) {
                    *i += 1;
                }
                value = v[start..*i].to_vec();
            }
        }
        match name.as_slice() {
            b"rel" if rel.is_none() => rel = Some(value),
            b"anchor" if anchor.is_none() => anchor = Some(value),
            _ => {}
        }
    }
}

/// RFC 9110's `tchar`: the characters of a token.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Moves `i` past the next comma that is outside quotes and angle brackets.
fn skip_to_comma(v: &[u8], i: &mut usize) {
    let mut quoted = false;
    let mut angle = false;
    while let Some(&b) = v.get(*i) {
        *i += 1;
        match b {
            b'\\' if quoted => *i += 1,
            b'"' if !angle => quoted = !quoted,
            b'<' if !quoted => angle = true,
            b'>' if !quoted => angle = false,
            b',' if !quoted && !angle => return,
            _ => {}
        }
    }
}
