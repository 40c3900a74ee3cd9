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
    // Checked, though a date read here ends in 9999: past the clock's range, every
    // time is before it.
    date.checked_add(Duration::from_secs(1))
        .is_none_or(|end| modified < end)
}

/// The date of the field `name` (`If-Modified-Since`, `If-Unmodified-Since`), if it is
/// one date no later than `now`; `None` otherwise.
///
/// Ignored: a value that is not an HTTP-date, several lines of the field (RFC 9110
/// 13.1.3 and 13.1.4: a list of dates), and a date later than the server's clock, which
/// no `Last-Modified` of this server can have been (RFC 2616 14.25 said "a date which
/// is later than the server's current time is invalid"; RFC 9110 13.1.3 keeps that the
/// date is read by the origin's clock): taken as it is, a date in the year 9999 would
/// make a file changed at any time until then "not modified".
fn date(headers: &HeaderMap, name: HeaderName, now: SystemTime) -> Option<SystemTime> {
    let mut values = headers.get_all(name).iter();
    let (Some(value), None) = (values.next(), values.next()) else {
        return None;
    };
    let date = http_date(value.as_bytes(), now)?;
    (date <= now).then_some(date)
}

/// An HTTP-date (RFC 9110 5.6.7) in any of its three forms: IMF-fixdate
/// (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
/// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`), with
/// whitespace around it.
///
/// Read here rather than by httpdate, which takes a two-digit year as 1970 to 2069
/// where RFC 9110 asks for the most recent year with those digits unless that is more
/// than 50 years ahead of `now`, and refuses any date before 1970 (an
/// If-Unmodified-Since of 1960 must fail for a file of today, not be ignored). The day
/// name must be one, but it is not checked against the date, as RFC 9110 asks
/// recipients to be robust; a date past the calendar's (30 February, 24:00) is none.
fn http_date(text: &[u8], now: SystemTime) -> Option<SystemTime> {
    const DAYS: [&[u8]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
    const LONG_DAYS: [&[u8]; 7] = [
        b"Monday",
        b"Tuesday",
        b"Wednesday",
        b"Thursday",
        b"Friday",
        b"Saturday",
        b"Sunday",
    ];
    const MONTHS: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let number = |digits: &[u8]| -> Option<i64> {
        (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
            .then(|| digits.iter().fold(0, |n, &d| n * 10 + i64::from(d - b'0')))
    };
    let month = |name: &[u8]| MONTHS.iter().position(|m| *m == name).map(|m| m as i64 + 1);
    // `HH:MM:SS`
    let time = |t: &[u8]| -> Option<i64> {
        let [h1, h2, b':', m1, m2, b':', s1, s2] = *t else {
            return None;
        };
        let (hour, minute, second) = (number(&[h1, h2])?, number(&[m1, m2])?, number(&[s1, s2])?);
        // 60: a leap second (RFC 9110 5.6.7 allows it).
        (hour < 24 && minute < 60 && second <= 60).then_some(hour * 3600 + minute * 60 + second)
    };
    let text = text.trim_ascii();
    let (year, month, day, seconds) = if let Some((name, rest)) = text.split_at_checked(3)
        && DAYS.contains(&name)
        && let Some(rest) = rest.strip_prefix(b", ")
    {
        // IMF-fixdate: `06 Nov 1994 08:49:37 GMT`
        let [
            d1,
            d2,
            b' ',
            m1,
            m2,
            m3,
            b' ',
            y1,
            y2,
            y3,
            y4,
            b' ',
            ref t @ ..,
            b' ',
            b'G',
            b'M',
            b'T',
        ] = *rest
        else {
            return None;
        };
        (
            number(&[y1, y2, y3, y4])?,
            month(&[m1, m2, m3])?,
            number(&[d1, d2])?,
            time(t)?,
        )
    } else if let Some(comma) = text.iter().position(|&b| b == b',')
        && LONG_DAYS.contains(&&text[..comma])
    {
        // RFC 850: `, 06-Nov-94 08:49:37 GMT`
        let [
            b',',
            b' ',
            d1,
            d2,
            b'-',
            m1,
            m2,
            m3,
            b'-',
            y1,
            y2,
            b' ',
            ref t @ ..,
            b' ',
            b'G',
            b'M',
            b'T',
        ] = text[comma..]
        else {
            return None;
        };
        (
            recent_year(number(&[y1, y2])?, now),
            month(&[m1, m2, m3])?,
            number(&[d1, d2])?,
            time(t)?,
        )
    } else {
        // asctime: `Sun Nov  6 08:49:37 1994`
        let [
            a,
            b,
            c,
            b' ',
            m1,
            m2,
            m3,
            b' ',
            d1,
            d2,
            b' ',
            ref t @ ..,
            b' ',
            y1,
            y2,
            y3,
            y4,
        ] = *text
        else {
            return None;
        };
        if !DAYS.contains(&&[a, b, c][..]) {
            return None;
        }
        let day = if d1 == b' ' {
            number(&[d2])?
        } else {
            number(&[d1, d2])?
        };
        (
            number(&[y1, y2, y3, y4])?,
            month(&[m1, m2, m3])?,
            day,
            time(t)?,
        )
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let Ok(index) = usize::try_from(month - 1) else {
        return None;
    };
    if day < 1 || day > month_days[index] {
        return None;
    }
    let since_1970 = days_from_civil(year, month, day) * 86_400 + seconds;
    let magnitude = Duration::from_secs(since_1970.unsigned_abs());
    if since_1970 >= 0 {
        UNIX_EPOCH.checked_add(magnitude)
    } else {
        UNIX_EPOCH.checked_sub(magnitude)
    }
}

/// The year of a two-digit year `yy` (RFC 9110 5.6.7): in the century of `now`'s year,
/// unless that is more than 50 years ahead of it, then the century before.
fn recent_year(yy: i64, now: SystemTime) -> i64 {
    let seconds = match now.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(_) => 0,
    };
    // The current year, near enough: a year is 365.2425 days on average.
    let this_year = 1970 + seconds / 31_556_952;
    let year = this_year - this_year % 100 + yy;
    if year > this_year + 50 {
        year - 100
    } else {
        year
    }
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard
/// Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
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
    not_modified_since(headers, header::IF_MODIFIED_SINCE, modified, now).unwrap_or(false)
}

/// Whether `If-Unmodified-Since` holds for a file modified at `modified` (RFC 9110
/// 13.1.4): `true` without the field, with a date it ignores ([`date`]), or without a
/// modification time. Asked only without `If-Match` (13.2.2).
pub(super) fn if_unmodified_since_holds(
    headers: &HeaderMap,
    modified: Option<SystemTime>,
    now: SystemTime,
) -> bool {
    not_modified_since(headers, header::IF_UNMODIFIED_SINCE, modified, now).unwrap_or(true)
}

/// Whether a file modified at `modified` was not modified after the date of the field
/// `name`; `None` when there is nothing to compare: no field, a date it ignores
/// ([`date`]), or no modification time.
fn not_modified_since(
    headers: &HeaderMap,
    name: header::HeaderName,
    modified: Option<SystemTime>,
    now: SystemTime,
) -> Option<bool> {
    Some(not_modified_after(modified?, date(headers, name, now)?))
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
/// is taken from (the file as it is: a range is never gzipped). Without it, a client
/// resuming a download across a swap of generations would get a range of other bytes.
/// Several lines of the field, a weak tag, a date, anything else: the whole file.
pub(super) fn if_range_holds(headers: &HeaderMap, etag: Option<&str>) -> bool {
    let mut values = headers.get_all(header::IF_RANGE).iter();
    let value = match (values.next(), values.next()) {
        (None, _) => return true,
        (Some(value), None) => value.as_bytes().trim_ascii(),
        (Some(_), Some(_)) => return false,
    };
    // A date is never taken: it holds only if it is a strong validator (RFC 9110
    // 13.1.5, 8.8.2.2), and a Last-Modified sent within a second of the file's change
    // is weak (a second change within that second keeps it); the range of a newer file
    // would then be joined to an older one's bytes. The ETag, sent with every file,
    // is what a client resumes with; without a match the whole file is sent.
    value.starts_with(b"\"") && etag.is_some_and(|etag| value == etag.as_bytes())
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

    /// The forms of HTTP-date beyond httpdate's: two-digit years within 50 years
    /// ahead, dates before 1970, a day name that does not fit the date.
    #[test]
    fn http_dates_of_every_year_and_two_digit_years_as_rfc_9110_reads_them() {
        // 2026-11-28, as the clock of the tests' writing.
        let now = UNIX_EPOCH + Duration::from_secs(1_795_824_000);
        let at = |text: &str| http_date(text.as_bytes(), now);
        let seconds = |s: u64| Some(UNIX_EPOCH + Duration::from_secs(s));
        assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), seconds(0));
        assert_eq!(at("Sat, 29 Feb 2000 23:59:59 GMT"), seconds(951_868_799));
        assert_eq!(
            at("Fri, 01 Jan 1960 00:00:00 GMT"),
            Some(UNIX_EPOCH - Duration::from_secs(315_619_200))
        );
        assert_eq!(
            at("Fri, 31 Dec 9999 23:59:59 GMT"),
            seconds(253_402_300_799)
        );
        // Two digits: within 50 years ahead this century, else the one before.
        assert_eq!(at("Monday, 01-Jan-75 00:00:00 GMT"), seconds(3_313_526_400));
        assert_eq!(
            at("Wednesday, 01-Jan-80 00:00:00 GMT"),
            seconds(315_532_800)
        );
        assert_eq!(at("Saturday, 01-Jan-00 00:00:00 GMT"), seconds(946_684_800));
        // The day name is not checked against the date.
        assert_eq!(at("Mon, 06 Nov 1994 08:49:37 GMT"), seconds(784_111_777));
        // The asctime day of two digits.
        assert_eq!(at("Thu Nov 10 08:49:37 1994"), seconds(784_457_377));
        for not_a_date in [
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT x",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Xyz Nov  6 08:49:37 1994",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov +994 08:49:37 GMT",
        ] {
            assert_eq!(at(not_a_date), None, "{not_a_date}");
        }
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
