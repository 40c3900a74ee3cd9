//! A file of the publication as a response: its validators and conditionals, ranges, and
//! its body.

use super::*;

/// A 304 standing for the 200 of the representation whose tag is `etag` (RFC 9110
/// 15.4.5: the `ETag` and `Vary` the 200 would have had). `Vary: accept-encoding` when
/// the compression layer would have looked at the 200 (`compressed`: it says so on every
/// 200 of such a type, gzipped or not).
pub(super) fn not_modified(compressed: bool, etag: Option<&str>) -> Response {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    if compressed {
        response
            .headers_mut()
            .insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if let Some(tag) = etag.and_then(|t| HeaderValue::from_str(t).ok()) {
        response.headers_mut().insert(header::ETAG, tag);
    }
    response
}

/// The bytes of a file a response sends at a time, and the most read with its open.
/// Each chunk is a read on tokio's blocking pool, a handoff there and back: at 64 KiB
/// (what `ServeDir` read) a 1 MiB file took 16 of them.
pub(super) const CHUNK: usize = 256 << 10;

/// An open file of the publication as the response to a GET or HEAD: its media type,
/// length, validators and `Link` header, after the conditionals (RFC 9110 13.2.2's
/// order) and a single byte range. `relative` is the path asked for, `name` the file's
/// (a directory's `index.html`).
#[allow(clippy::too_many_arguments)]
pub(super) fn static_file(
    relative: &Path,
    name: &Path,
    request: &axum::http::request::Parts,
    mut file: std::fs::File,
    meta: std::fs::Metadata,
    bytes: Option<Bytes>,
    lists: Option<&Discovered>,
    report: &Reporter,
) -> Response {
    let headers = &request.headers;
    let len = meta.len();
    // One clock for the whole answer: the dates asked about and the one sent.
    let now = SystemTime::now();
    // A modification time in the future (a clock set wrong, `touch -d`) or before 1970
    // is no modification date to compare with: none is sent, and the date conditionals
    // are ignored (RFC 9110 13.1.3, 13.1.4), the ETag validating the file alone. Sent
    // as the response's time, it would be a Last-Modified that moves with every
    // response, and fail its own If-Unmodified-Since a second later.
    let modified = meta
        .modified()
        .ok()
        .filter(|m| *m <= now && *m >= std::time::UNIX_EPOCH);
    let etag = Validator::of(&meta).map(|v| v.etag());
    let last_modified = modified.and_then(|m| conditional::last_modified(m, now));

    // The standard's documents application/xml (section 7), a resource what `build`
    // lists it as (a resource's `data.xml` is text/xml there, and here).
    let media_type = HeaderValue::from_static(
        name.to_str()
            .map_or("application/octet-stream", resourcesync_source::media_type),
    );
    // The representation the request selects, which every conditional is compared with
    // (RFC 9110 13.1): part of the file as it is, when a range is asked while the file
    // is the one the client has part of (If-Range; with nothing to check it against, the
    // whole file is the safe answer); else the whole file, gzipped when the compression
    // layer will gzip it.
    // Several lines of Range are several ranges at best, which are ignored as below.
    let mut ranges = headers.get_all(header::RANGE).iter();
    let range = match (ranges.next(), ranges.next()) {
        (Some(range), None) => Some(range),
        _ => None,
    }
    .filter(|_| conditional::if_range_holds(headers, etag.as_deref()));
    let asked = range.map_or(RangeAsked::Whole, |r| range_asked(r.as_bytes(), len));
    // Whether the compression layer looks at this file's 200s (a type gzip shrinks, which
    // most resources are not: then no more is asked), once for the gzip and the 304.
    let compressed = compressed_type(&media_type, len);
    let gzipped = asked == RangeAsked::Whole && compressed && gzip_negotiated(headers);
    let selected = etag.as_deref().map(|etag| {
        if gzipped {
            gzipped_tag(etag)
        } else {
            etag.to_owned()
        }
    });
    let selected = selected.as_deref();

    // If-Match first, and If-Unmodified-Since only without it; then If-None-Match, and
    // If-Modified-Since only without it (RFC 9110 13.2.2).
    let precondition_holds = if headers.contains_key(header::IF_MATCH) {
        conditional::if_match_holds(headers, selected)
    } else {
        conditional::if_unmodified_since_holds(headers, modified, now)
    };
    if !precondition_holds {
        return StatusCode::PRECONDITION_FAILED.into_response();
    }
    let unchanged = if headers.contains_key(header::IF_NONE_MATCH) {
        conditional::none_match(headers, selected)
    } else {
        conditional::unmodified_since_asked(headers, modified, now)
    };
    if unchanged {
        return not_modified(compressed, selected);
    }

    // The headers set one by one on a map made for them: the response builder's
    // `header` converts each name and value anew, the map growing as they come. A value
    // that is no header value (none of these can be one) is the 500 the builder gave.
    let mut fields = HeaderMap::with_capacity(8);
    let mut valid = true;
    let mut set = |name, value: Result<HeaderValue, _>| match value {
        Ok(value) => {
            fields.insert(name, value);
        }
        Err(axum::http::header::InvalidHeaderValue { .. }) => valid = false,
    };
    set(header::CONTENT_TYPE, Ok(media_type));
    set(header::ACCEPT_RANGES, Ok(HeaderValue::from_static("bytes")));
    if let Some(modified) = last_modified {
        set(
            header::LAST_MODIFIED,
            HeaderValue::try_from(modified.to_string()),
        );
    }
    let (status, start, count) = match asked {
        RangeAsked::Whole => (StatusCode::OK, 0, len),
        RangeAsked::Part { start, count } => {
            let last = start + count - 1;
            let range = format!("bytes {start}-{last}/{len}");
            set(header::CONTENT_RANGE, HeaderValue::try_from(range));
            (StatusCode::PARTIAL_CONTENT, start, count)
        }
        RangeAsked::Unsatisfiable => {
            return (
                StatusCode::RANGE_NOT_SATISFIABLE,
                [(header::CONTENT_RANGE, format!("bytes */{len}"))],
            )
                .into_response();
        }
    };
    if let Some(etag) = etag {
        set(header::ETAG, HeaderValue::try_from(etag));
    }
    if let Some(link) = lists.and_then(|lists| link_header(lists, relative)) {
        set(header::LINK, Ok(link));
    }
    set(header::CONTENT_LENGTH, Ok(HeaderValue::from(count)));
    if !valid {
        return plain(StatusCode::INTERNAL_SERVER_ERROR, "bad response\n");
    }
    let body = if request.method == Method::HEAD || count == 0 {
        Body::empty()
    } else if let Some(bytes) = bytes.filter(|b| start == 0 && b.len() as u64 == count) {
        Body::from(bytes)
    } else {
        // Always to the start, 0 included: a short read with the open (`read_whole`, the
        // file shrinking meanwhile) has moved the file's offset, and the stream would
        // begin there.
        if let Err(e) = file.seek(SeekFrom::Start(start)) {
            return error_response(e, relative, report);
        }
        let file = super::file_body::OnWorker(file);
        let cut_short = request.extensions.get::<connections::CutShort>().cloned();
        Body::new(FileBody::new(
            file,
            count,
            CHUNK,
            cut_short,
            name.to_owned(),
            Arc::clone(report),
        ))
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = fields;
    response
}

/// What a `Range` header asks of a representation of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RangeAsked {
    /// The whole representation (200): the header is malformed, in a unit other than
    /// `bytes`, or asks for several ranges, all of which RFC 9110 14.2 lets a server
    /// ignore. Several ranges would need a multipart body, which no client of a Source
    /// needs.
    Whole,
    /// `count` bytes (at least one) from `start` (206).
    Part { start: u64, count: u64 },
    /// One valid byte range with no byte in the representation (416): its first byte
    /// past the end, a suffix of none, or any range of an empty file (14.1.1).
    Unsatisfiable,
}

/// Reads a `Range` header (RFC 9110 14.1.1, 14.2) for a representation of `len` bytes.
///
/// One pass over the header, which stops at the second range: a header of tens of
/// thousands of ranges costs no more than its bytes up to its first comma or two
/// (a parser that validates every range against every other, as http-range-header
/// does, took quadratic time on a runtime worker). Numbers too large for 64 bits are
/// taken as `u64::MAX`, which is past any file's end.
pub(super) fn range_asked(header: &[u8], len: u64) -> RangeAsked {
    let Some(equals) = header.iter().position(|&b| b == b'=') else {
        return RangeAsked::Whole;
    };
    let (unit, set) = (&header[..equals], &header[equals + 1..]);
    if !unit.eq_ignore_ascii_case(b"bytes") {
        return RangeAsked::Whole;
    }
    // A list's empty elements count for nothing (RFC 9110 5.6.1), nor do spaces around
    // an element.
    let mut specs = set
        .split(|&b| b == b',')
        .map(|spec| spec.trim_ascii())
        .filter(|spec| !spec.is_empty());
    let (Some(spec), None) = (specs.next(), specs.next()) else {
        return RangeAsked::Whole;
    };
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeAsked::Whole;
    };
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    if first.is_empty() {
        // `-N`: the last N bytes, or the whole file when it is shorter (zip readers
        // ask `bytes=-65536` of small files).
        return match digits(last) {
            None => RangeAsked::Whole,
            Some(0) => RangeAsked::Unsatisfiable,
            Some(_) if len == 0 => RangeAsked::Unsatisfiable,
            Some(suffix) => {
                let count = suffix.min(len);
                RangeAsked::Part {
                    start: len - count,
                    count,
                }
            }
        };
    }
    let Some(first) = digits(first) else {
        return RangeAsked::Whole;
    };
    // `N-`: from N to the end; `N-M`: to M, or the end when the file is shorter.
    let last = if last.is_empty() {
        None
    } else {
        match digits(last) {
            // Before the first position, the range is invalid: ignored.
            Some(last) if last >= first => Some(last),
            _ => return RangeAsked::Whole,
        }
    };
    if first >= len {
        return RangeAsked::Unsatisfiable;
    }
    let end = last.map_or(len - 1, |last| last.min(len - 1));
    RangeAsked::Part {
        start: first,
        count: end - first + 1,
    }
}

/// The value of a run of ASCII digits (`1*DIGIT`), saturating at `u64::MAX`; `None`
/// for anything else, the empty run included.
pub(super) fn digits(text: &[u8]) -> Option<u64> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(text.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}
