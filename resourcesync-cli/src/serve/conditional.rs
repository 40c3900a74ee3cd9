//! Conditional requests (RFC 9110 13): a file's validators, and the preconditions
//! `If-Match`, `If-None-Match`, `If-Modified-Since`, `If-Unmodified-Since` and
//! `If-Range` read as a client may send them.
//!
//! Every comparison is with the representation the request selects, which the caller
//! names by its entity tag: a gzipped response is another representation than the file
//! as it is, with a tag of its own, and a client holding one has not the other. A list
//! of tags is read across every line of its field (RFC 9110 5.3), with the optional
//! whitespace and empty elements of RFC 9110 5.6.1. A date is any of the three forms of
//! RFC 9110 5.6.7; one that is not a date, a field of several dates, and a date later
//! than the server's clock are ignored.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderName, header};

/// A file's validator: its length and modification time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Validator {
    len: u64,
    modified: SystemTime,
}

impl Validator {
    /// The validator of an open file; `None` without a modification time.
    pub(super) fn of(meta: &std::fs::Metadata) -> Option<Validator> {
        Some(Validator {
            len: meta.len(),
            modified: meta.modified().ok()?,
        })
    }

    /// The entity tag, `"<length hex>-<nanoseconds since 1970 hex>"` (`--` and the
    /// nanoseconds before 1970 for an older file, which would otherwise all share one
    /// tag): a file rewritten with the same length within the file system's time
    /// granularity would keep it, a risk every server that does not hash its files
    /// takes.
    pub(super) fn etag(&self) -> String {
        match self.modified.duration_since(UNIX_EPOCH) {
            Ok(after) => format!("\"{:x}-{:x}\"", self.len, after.as_nanos()),
            Err(before) => format!("\"{:x}--{:x}\"", self.len, before.duration().as_nanos()),
        }
    }
}

/// The `Last-Modified` of a file modified at `modified`, answered at `now`: a time in
/// the future is sent as `now` (RFC 9110 8.8.2.1: never later than the response's
/// `Date`), and a time before 1970 not at all (httpdate cannot write it, and panics
/// where it is asked to, as it does past the year 9999).
pub(super) fn last_modified(modified: SystemTime, now: SystemTime) -> Option<httpdate::HttpDate> {
    /// 10000-01-01T00:00:00Z, the first time httpdate cannot write.
    const YEAR_10000: u64 = 253_402_300_800;
    let sent = modified.min(now);
    let seconds = sent.duration_since(UNIX_EPOCH).ok()?.as_secs();
    (seconds < YEAR_10000).then(|| httpdate::HttpDate::from(sent))
}

/// Whether a file modified at `modified` was not modified after `date`, an HTTP-date
/// (whole seconds): `Last-Modified` is the modification time truncated to the second.
fn not_modified_after(modified: SystemTime, date: SystemTime) -> bool {
    modified < date + Duration::from_secs(1)
}

/// The date of the field `name` (`If-Modified-Since`, `If-Unmodified-Since`), if it is
/// one date no later than `now`; `None` otherwise.
///
/// Ignored: a value that is not an HTTP-date, several lines of the field (RFC 9110
/// 13.1.3 and 13.1.4: a list of dates), and a date later than the server's clock, which
/// no `Last-Modified` of this server can have been (RFC 7232 3.3 said it is invalid;
/// RFC 9110 kept the rule that the date is the origin's): taken as it is, a date in
/// the year 9999 would make a file changed at any time until then "not modified".
fn date(headers: &HeaderMap, name: HeaderName, now: SystemTime) -> Option<SystemTime> {
    let mut values = headers.get_all(name).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return None;
    };
    let date = httpdate::parse_http_date(value.to_str().ok()?).ok()?;
    (date <= now).then_some(date)
}

/// Whether `If-Modified-Since` says the file modified at `modified` is not modified
/// (a 304 to GET and HEAD, RFC 9110 13.1.3); `false` without the field, or with a date
/// it ignores ([`date`]), or without a modification time. Asked only without
/// `If-None-Match` (13.2.2).
pub(super) fn unmodified_since_asked(
    headers: &HeaderMap,
    modified: Option<SystemTime>,
    now: SystemTime,
) -> bool {
    match (date(headers, header::IF_MODIFIED_SINCE, now), modified) {
        (Some(since), Some(modified)) => not_modified_after(modified, since),
        _ => false,
    }
}

/// Whether `If-Unmodified-Since` holds for a file modified at `modified` (RFC 9110
/// 13.1.4): `true` without the field, with a date it ignores ([`date`]), or without a
/// modification time. Asked only without `If-Match` (13.2.2).
pub(super) fn if_unmodified_since_holds(
    headers: &HeaderMap,
    modified: Option<SystemTime>,
    now: SystemTime,
) -> bool {
    match (date(headers, header::IF_UNMODIFIED_SINCE, now), modified) {
        (Some(since), Some(modified)) => not_modified_after(modified, since),
        _ => true,
    }
}

/// What a list field of entity tags (`If-Match`, `If-None-Match`) holds, every line of
/// it read as one list.
enum Tags<'a> {
    /// `*`: any current representation.
    Any,
    /// The tags, each with whether it is weak (`W/`) and its quoted opaque part.
    Listed(Vec<(bool, &'a [u8])>),
}

/// Reads the entity tags of every line of the field `name` (RFC 9110 8.8.3, 5.6.1):
/// spaces and tabs around elements, empty elements, and an element that is not an
/// entity tag (skipped to the next comma) are all allowed for. A tag may hold a comma,
/// so the line is read tag by tag rather than split at commas.
fn tags(headers: &HeaderMap, name: HeaderName) -> Tags<'_> {
    let values: Vec<&[u8]> = headers
        .get_all(name)
        .iter()
        .map(|v| v.as_bytes().trim_ascii())
        .collect();
    if let [value] = values.as_slice()
        && *value == b"*"
    {
        return Tags::Any;
    }
    let mut listed = Vec::new();
    for value in values {
        let mut rest = value;
        loop {
            rest = rest.trim_ascii_start();
            let Some(&first) = rest.first() else {
                break;
            };
            if first == b',' {
                rest = &rest[1..];
                continue;
            }
            let (weak, tag) = match rest.strip_prefix(b"W/") {
                Some(tag) => (true, tag),
                None => (false, rest),
            };
            let end = match tag.strip_prefix(b"\"") {
                Some(inner) => inner.iter().position(|&b| b == b'"').map(|end| end + 2),
                None => None,
            };
            let after = match end {
                Some(end) => {
                    let after = tag[end..].trim_ascii_start();
                    if after.is_empty() || after[0] == b',' {
                        listed.push((weak, &tag[..end]));
                        after
                    } else {
                        // Bytes after a tag before the comma: not a tag.
                        skip_element(after)
                    }
                }
                None => skip_element(tag),
            };
            rest = after;
        }
    }
    Tags::Listed(listed)
}

/// What follows the next comma of `rest` (or nothing).
fn skip_element(rest: &[u8]) -> &[u8] {
    rest.iter()
        .position(|&b| b == b',')
        .map_or(&[][..], |comma| &rest[comma..])
}

/// Whether `If-Match` holds (RFC 9110 13.1.1) for the representation whose tag is
/// `selected`: `true` without the field; `*`, as the file exists; or a strong match
/// with a listed tag (a `W/` tag never matches). A file without a tag matches only
/// `*`.
pub(super) fn if_match_holds(headers: &HeaderMap, selected: Option<&str>) -> bool {
    if !headers.contains_key(header::IF_MATCH) {
        return true;
    }
    match tags(headers, header::IF_MATCH) {
        Tags::Any => true,
        Tags::Listed(listed) => selected.is_some_and(|selected| {
            listed
                .iter()
                .any(|&(weak, tag)| !weak && tag == selected.as_bytes())
        }),
    }
}

/// Whether `If-None-Match` matches the representation whose tag is `selected` (RFC
/// 9110 13.1.2), a 304 for GET and HEAD: `*`, as the file exists, or a weak match (a
/// `W/` is no difference; the server's own tags are strong) with a listed tag.
pub(super) fn none_match(headers: &HeaderMap, selected: Option<&str>) -> bool {
    match tags(headers, header::IF_NONE_MATCH) {
        Tags::Any => true,
        Tags::Listed(listed) => selected
            .is_some_and(|selected| listed.iter().any(|&(_, tag)| tag == selected.as_bytes())),
    }
}

/// Whether a `Range` may be answered with part of the file (RFC 9110 13.1.5): `true`
/// without `If-Range`; with it, a strong match with `etag`, the tag of the bytes a range
/// is taken from (the file as it is: a range is never gzipped), or a date exactly the
/// file's `Last-Modified` (to the second, of a time not in the future, which would be
/// sent as another). Without it, a client resuming a download across a swap of
/// generations would get a range of other bytes. Several lines of the field, a weak
/// tag, anything else: the whole file.
pub(super) fn if_range_holds(
    headers: &HeaderMap,
    etag: Option<&str>,
    modified: Option<SystemTime>,
    now: SystemTime,
) -> bool {
    let mut values = headers.get_all(header::IF_RANGE).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return true,
        (Some(value), None) => value.as_bytes().trim_ascii(),
        (Some(_), Some(_)) => return false,
    };
    if value.starts_with(b"\"") {
        return etag.is_some_and(|etag| value == etag.as_bytes());
    }
    let Some(date) = std::str::from_utf8(value)
        .ok()
        .and_then(|value| httpdate::parse_http_date(value).ok())
    else {
        return false;
    };
    modified.is_some_and(|modified| {
        modified <= now && modified >= date && not_modified_after(modified, date)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(fields: &[(HeaderName, &str)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in fields {
            headers.append(name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    fn listed(fields: &[&str]) -> Vec<(bool, String)> {
        let fields: Vec<_> = fields.iter().map(|f| (header::IF_MATCH, *f)).collect();
        let headers = headers(&fields);
        match tags(&headers, header::IF_MATCH) {
            Tags::Any => vec![(false, "*".to_owned())],
            Tags::Listed(listed) => listed
                .into_iter()
                .map(|(weak, tag)| (weak, String::from_utf8(tag.to_vec()).unwrap()))
                .collect(),
        }
    }

    /// Lists as clients write them: odd whitespace, empty elements, commas inside a
    /// tag, elements that are no tags, several lines.
    #[test]
    fn entity_tag_lists_are_read_tag_by_tag() {
        let tag = |weak, t: &str| (weak, t.to_owned());
        assert_eq!(listed(&["*"]), [tag(false, "*")]);
        assert_eq!(listed(&[" * "]), [tag(false, "*")]);
        assert_eq!(listed(&["\"a\""]), [tag(false, "\"a\"")]);
        assert_eq!(
            listed(&[" ,\t\"a\" ,W/\"b\",, \"c,d\"\t"]),
            [
                tag(false, "\"a\""),
                tag(true, "\"b\""),
                tag(false, "\"c,d\"")
            ]
        );
        assert_eq!(
            listed(&["\"a\"", "W/\"b\""]),
            [tag(false, "\"a\""), tag(true, "\"b\"")]
        );
        // `*` among tags, or on a line of its own beside another, is no tag.
        assert_eq!(listed(&["*", "\"a\""]), [tag(false, "\"a\"")]);
        assert_eq!(listed(&["\"a\", *"]), [tag(false, "\"a\"")]);
        // Not tags: unquoted, unterminated, followed by other bytes, lower-case `w/`.
        assert_eq!(listed(&["a, \"b"]), []);
        assert_eq!(listed(&["\"a\"x, \"b\""]), [tag(false, "\"b\"")]);
        assert_eq!(listed(&["w/\"a\""]), []);
        assert_eq!(listed(&[""]), []);
    }

    #[test]
    fn if_match_is_strong_and_if_none_match_weak() {
        let tag = Some("\"a\"");
        let m = |value: &str| if_match_holds(&headers(&[(header::IF_MATCH, value)]), tag);
        let n = |value: &str| none_match(&headers(&[(header::IF_NONE_MATCH, value)]), tag);
        assert!(m("\"a\"") && m("*") && m("\"x\", \"a\""));
        assert!(!m("W/\"a\"") && !m("\"x\"") && !m("\"a-gzip\"") && !m("a"));
        assert!(n("\"a\"") && n("*") && n("W/\"a\"") && n("\"x\",W/\"a\""));
        assert!(!n("\"x\"") && !n("\"a-gzip\"") && !n("a"));
        // Without a tag, only `*`.
        assert!(if_match_holds(&headers(&[(header::IF_MATCH, "*")]), None));
        assert!(!if_match_holds(
            &headers(&[(header::IF_MATCH, "\"a\"")]),
            None
        ));
        assert!(none_match(&headers(&[(header::IF_NONE_MATCH, "*")]), None));
        assert!(if_match_holds(&HeaderMap::new(), None));
    }

    /// RFC 9110 5.6.7's three forms of its example date, and what is not a date.
    #[test]
    fn dates_in_every_form_and_none_in_the_future() {
        let example = UNIX_EPOCH + Duration::from_secs(784_111_777);
        let now = SystemTime::now();
        let at = |value: &str| {
            date(
                &headers(&[(header::IF_MODIFIED_SINCE, value)]),
                header::IF_MODIFIED_SINCE,
                now,
            )
        };
        for form in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(at(form), Some(example), "{form}");
        }
        let tomorrow = httpdate::fmt_http_date(now + Duration::from_secs(86_400));
        for not_a_date in [
            "Fri, 31 Dec 9999 23:59:59 GMT",
            tomorrow.as_str(),
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37",
            "1994-11-06T08:49:37Z",
            "",
        ] {
            assert_eq!(at(not_a_date), None, "{not_a_date}");
        }
        let twice = headers(&[
            (header::IF_MODIFIED_SINCE, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (header::IF_MODIFIED_SINCE, "Sun, 06 Nov 1994 08:49:37 GMT"),
        ]);
        assert_eq!(date(&twice, header::IF_MODIFIED_SINCE, now), None);
    }

    #[test]
    fn last_modified_is_never_later_than_now_and_never_panics() {
        let now = SystemTime::now();
        let sent = |t| last_modified(t, now).map(SystemTime::from);
        let second = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_secs();
        assert_eq!(sent(now).map(second), Some(second(now)));
        let future = now + Duration::from_secs(1 << 40);
        assert_eq!(sent(future).map(second), Some(second(now)));
        assert_eq!(sent(UNIX_EPOCH - Duration::from_secs(1)), None);
        assert_eq!(sent(UNIX_EPOCH), Some(UNIX_EPOCH));
    }

    #[test]
    fn tags_before_1970_differ_from_each_other() {
        let at = |modified| Validator { len: 5, modified }.etag();
        let before = |s| UNIX_EPOCH - Duration::from_secs(s);
        assert_ne!(at(before(1)), at(before(2)));
        assert_ne!(at(before(1)), at(UNIX_EPOCH));
        assert_eq!(at(UNIX_EPOCH + Duration::from_nanos(255)), "\"5-ff\"");
    }
}
