//! gzip as `serve` negotiates it: which responses are compressed, for which clients,
//! and the entity tag of the gzipped representation.

use super::*;

/// What the compression layer asks of a response before it gzips it; [`not_modified`]
/// asks it too, of the 200 a 304 stands for, so that the two cannot disagree.
pub(super) fn compression_predicate() -> impl Predicate {
    NotForContentType::GRPC
        .and(NotForContentType::IMAGES)
        .and(NotForContentType::SSE)
        .and(compressible)
}

/// Whether the compression layer, as [`router`] sets it (gzip alone), picks gzip for a
/// request with these headers.
///
/// tower-http does not expose its negotiation, so this is the same rule (0.6's
/// `Encoding::from_headers`): of the `Accept-Encoding` elements `gzip`, `x-gzip` and
/// `identity` (case-insensitive) with a valid q-value above 0, the highest q-value
/// wins, gzip over identity at a tie; `*` and other codings count for nothing. A test
/// (`a_304_has_the_vary_and_etag_of_the_200_it_stands_for`) compares the two.
pub(super) fn gzip_negotiated(headers: &HeaderMap) -> bool {
    let mut gzip = 0;
    let mut identity = 0;
    let elements = headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','));
    for element in elements {
        let mut parts = element.splitn(2, ';');
        let coding = parts.next().unwrap_or("").trim();
        let Some(q) = parts.next().map_or(Some(1000), |q| qvalue(q.trim())) else {
            continue;
        };
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = gzip.max(q);
        } else if coding.eq_ignore_ascii_case("identity") {
            identity = identity.max(q);
        }
    }
    gzip > 0 && gzip >= identity
}

/// A q-value (`q=0.5`) in thousandths, as tower-http reads it: `q=` (either case), 0 or
/// 1, then up to three decimals, at most 1; `None` otherwise.
pub(super) fn qvalue(text: &str) -> Option<u16> {
    let rest = text
        .strip_prefix("q=")
        .or_else(|| text.strip_prefix("Q="))?;
    let (whole, decimals) = rest.split_once('.').unwrap_or((rest, ""));
    let mut value: u16 = match whole {
        "0" => 0,
        "1" => 1000,
        _ => return None,
    };
    if decimals.len() > 3 || !decimals.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    for (digit, factor) in decimals.bytes().zip([100, 10, 1]) {
        value += factor * u16::from(digit - b'0');
    }
    (value <= 1000).then_some(value)
}

/// Whether a media type is text that gzip shrinks: text, XML, JSON, JavaScript, WebAssembly,
/// and the RDF serializations a repository publishes. Anything else (archives, images,
/// audio, video, PDFs, `application/octet-stream`) is left as it is, as nginx's
/// `gzip_types` and Caddy's `encode` do: most binary formats are compressed already, and
/// gzip costs about 20 ns a byte to send as many bytes or more (wget2, which asks for
/// gzip, took 3.2 s for 150 files of 1 MiB of random bytes gzipped, 0.22 s as they are).
/// A list of the compressed types instead (the rule before) gzipped every unknown binary
/// file.
pub(super) fn compressible_type(media_type: &str) -> bool {
    // Compared without case and without a lower-cased copy: this is asked twice of every
    // whole file sent (by `compressed_type`, and by the layer's predicate).
    let essence = media_type.split(';').next().unwrap_or("").trim().as_bytes();
    let starts = |prefix: &str| {
        essence
            .get(..prefix.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(prefix.as_bytes()))
    };
    let ends = |suffix: &str| {
        essence
            .len()
            .checked_sub(suffix.len())
            .is_some_and(|at| essence[at..].eq_ignore_ascii_case(suffix.as_bytes()))
    };
    starts("text/")
        || ends("+xml")
        || ends("+json")
        || [
            "application/xml",
            "application/json",
            "application/javascript",
            "application/x-javascript",
            "application/ecmascript",
            "application/wasm",
            "application/x-ndjson",
            "application/n-triples",
            "application/n-quads",
            "application/trig",
        ]
        .iter()
        .any(|known| essence.eq_ignore_ascii_case(known.as_bytes()))
}

/// Below this many bytes gzip saves nothing (the default predicate's bound).
pub(super) const MIN_COMPRESSED: u64 = 32;

/// Whether a response may be gzipped: a whole representation (200; the layer leaves out
/// ranges itself), of a [`compressible_type`], and not tiny.
///
/// This stands in for the default predicate's size bound, which reads the body's size:
/// the empty body of a HEAD would never be gzipped while its GET is, and HEAD must give
/// GET's headers. `Content-Length`, which [`static_file`] sets for both, decides instead.
pub(super) fn compressible(
    status: StatusCode,
    _: axum::http::Version,
    headers: &HeaderMap,
    _: &axum::http::Extensions,
) -> bool {
    let media_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let len = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    status == StatusCode::OK
        && compressible_type(media_type)
        && len.is_none_or(|len| len >= MIN_COMPRESSED)
}

/// The suffix of the ETag of a gzipped representation (as Apache's mod_deflate does): a
/// strong validator names one sequence of bytes, and the gzipped bytes are another.
pub(super) const GZIP_SUFFIX: &str = "-gzip";

/// The entity tag of the gzipped representation of the file whose tag is `etag`.
pub(super) fn gzipped_tag(etag: &str) -> String {
    format!("{}{GZIP_SUFFIX}\"", etag.trim_end_matches('"'))
}

/// Marks the ETag of a gzipped response as the gzipped representation's.
pub(super) async fn gzip_etag(response: Response) -> Response {
    mark_gzip_etag(response)
}

/// [`gzip_etag`], where it is not a middleware's function.
pub(super) fn mark_gzip_etag(mut response: Response) -> Response {
    let gzipped = response
        .headers()
        .get(header::CONTENT_ENCODING)
        .is_some_and(|e| e == "gzip");
    if gzipped {
        let tag = response
            .headers()
            .get(header::ETAG)
            .and_then(|t| t.to_str().ok())
            .and_then(|t| HeaderValue::from_str(&gzipped_tag(t)).ok());
        if let Some(tag) = tag {
            response.headers_mut().insert(header::ETAG, tag);
        }
    }
    response
}

/// Whether the compression layer would gzip the 200 of a file of `len` bytes and
/// `media_type` for a client that accepts gzip: the same predicate, asked of the same
/// headers, so that the representation the conditionals compare with and the one sent
/// cannot disagree.
pub(super) fn compressed_type(media_type: &HeaderValue, len: u64) -> bool {
    // The predicate holds only for a compressible type ([`compressible`]): the probe,
    // a response built and asked, is made for those alone (a binary file's request
    // skips it).
    if !media_type.to_str().is_ok_and(compressible_type) {
        return false;
    }
    let probe = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, media_type)
        .header(header::CONTENT_LENGTH, len)
        .body(Body::empty());
    probe.is_ok_and(|probe| compression_predicate().should_compress(&probe))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule as it was written before it compared without a lower-cased copy.
    fn lowered(media_type: &str) -> bool {
        let essence = media_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        essence.starts_with("text/")
            || essence.ends_with("+xml")
            || essence.ends_with("+json")
            || matches!(
                essence.as_str(),
                "application/xml"
                    | "application/json"
                    | "application/javascript"
                    | "application/x-javascript"
                    | "application/ecmascript"
                    | "application/wasm"
                    | "application/x-ndjson"
                    | "application/n-triples"
                    | "application/n-quads"
                    | "application/trig"
            )
    }

    #[test]
    fn compressible_types_are_compared_without_case_as_before() {
        for (media_type, compressible) in [
            ("text/plain", true),
            ("Text/HTML; charset=utf-8", true),
            ("  text/csv  ", true),
            ("application/ld+JSON", true),
            ("APPLICATION/XML", true),
            ("application/rdf+xml;q=1", true),
            ("image/svg+xml", true),
            ("application/N-Triples", true),
            ("application/xml2", false),
            ("xapplication/xml", false),
            ("application/octet-stream", false),
            ("text", false),
            ("+xml", true),
            ("", false),
            ("t\u{e9}xt/plain", false),
        ] {
            assert_eq!(compressible_type(media_type), compressible, "{media_type}");
            assert_eq!(lowered(media_type), compressible, "{media_type}");
        }
    }

    #[test]
    fn the_probe_is_skipped_only_where_the_predicate_would_refuse() {
        let probe = |media_type: &str, len: u64| {
            let response = Response::builder()
                .status(StatusCode::OK)
                .header(header::CONTENT_TYPE, media_type)
                .header(header::CONTENT_LENGTH, len)
                .body(Body::empty())
                .unwrap();
            compression_predicate().should_compress(&response)
        };
        for media_type in [
            "text/plain",
            "application/octet-stream",
            "image/svg+xml",
            "application/xml",
            "application/grpc",
            "text/event-stream",
            "application/zip",
        ] {
            for len in [0, 31, 32, 1 << 20] {
                let value = HeaderValue::from_static(media_type);
                assert_eq!(
                    compressed_type(&value, len),
                    probe(media_type, len),
                    "{media_type} {len}"
                );
            }
        }
    }
}
