//! gzip as `serve` negotiates it: which responses are compressed, for which clients,
//! and the entity tag of the gzipped representation.

use super::*;

/// Whether a request with these headers is answered gzipped, where its answer may be
/// ([`compress`]).
///
/// The rule tower-http's compression layer had (0.6's `Encoding::from_headers`), which
/// served before [`compress`]: of the `Accept-Encoding` elements `gzip`, `x-gzip` and
/// `identity` (case-insensitive) with a valid q-value above 0, the highest q-value
/// wins, gzip over identity at a tie; `*` and other codings count for nothing.
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
    // Compared without case and without a lower-cased copy: this is asked of every
    // whole file sent.
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
    // Server-sent events go out as they come (gzip would hold them back), and an image
    // is compressed in its own format whatever its suffix, SVG aside: both as
    // tower-http's predicate left them, which decided before [`compress`].
    if essence.eq_ignore_ascii_case(b"text/event-stream")
        || starts("image/") && !essence.eq_ignore_ascii_case(b"image/svg+xml")
    {
        return false;
    }
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

/// Below this many bytes gzip saves nothing (the bound tower-http's default predicate
/// had).
pub(super) const MIN_COMPRESSED: u64 = 32;

/// The suffix of the ETag of a gzipped representation (as Apache's mod_deflate does): a
/// strong validator names one sequence of bytes, and the gzipped bytes are another.
pub(super) const GZIP_SUFFIX: &str = "-gzip";

/// The entity tag of the gzipped representation of the file whose tag is `etag`.
pub(super) fn gzipped_tag(etag: &str) -> String {
    format!("{}{GZIP_SUFFIX}\"", etag.trim_end_matches('"'))
}

/// Whether the 200 of `len` bytes of `media_type` is one [`compress`] gzips for a client
/// that accepts gzip: what the conditionals compare with (the gzipped representation's
/// tag) and the `Vary` of a 304 are decided by the same rule as what is sent.
pub(super) fn compressed_type(media_type: &HeaderValue, len: u64) -> bool {
    len >= MIN_COMPRESSED && media_type.to_str().is_ok_and(compressible_type)
}

/// An answer as it goes out, `gzip` when the request accepts gzip ([`gzip_negotiated`]).
///
/// A whole representation (a 200 without `Content-Range`, not already encoded) of a
/// [`compressed_type`] says `Vary: accept-encoding`, gzipped or not; gzipped, it loses
/// its `Content-Length` (sent chunked) and `Accept-Ranges` (a range would be of the
/// other representation), and its `ETag` is the gzipped representation's
/// ([`gzipped_tag`]). The length is the `Content-Length` [`static_file`] sets for GET
/// and HEAD alike (a HEAD's empty body must not decide otherwise than its GET), else the
/// body's own (a generated page).
///
/// This was tower-http's `CompressionLayer`: the same answers, but it parsed
/// `Accept-Encoding` before every request and boxed every body, about 3,000
/// instructions of a small binary file's answer, which is never gzipped.
pub(super) fn compress(response: Response, gzip: bool) -> Response {
    let headers = response.headers();
    // The type first: most resources are binary, and are let through with one look.
    let textual = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(compressible_type);
    if !textual
        || response.status() != StatusCode::OK
        || headers.contains_key(header::CONTENT_ENCODING)
        || headers.contains_key(header::CONTENT_RANGE)
    {
        return response;
    }
    let len = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| http_body::Body::size_hint(response.body()).exact());
    if len.is_some_and(|len| len < MIN_COMPRESSED) {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let varies = parts.headers.get_all(header::VARY).iter().any(|value| {
        value
            .as_bytes()
            .windows(15)
            .any(|w| w.eq_ignore_ascii_case(b"accept-encoding"))
    });
    if !varies {
        parts
            .headers
            .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    if !gzip {
        return Response::from_parts(parts, body);
    }
    parts.headers.remove(header::ACCEPT_RANGES);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts
        .headers
        .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    let tag = parts
        .headers
        .get(header::ETAG)
        .and_then(|t| t.to_str().ok())
        .and_then(|t| HeaderValue::from_str(&gzipped_tag(t)).ok());
    if let Some(tag) = tag {
        parts.headers.insert(header::ETAG, tag);
    }
    Response::from_parts(parts, Body::new(Gzipped::new(body)))
}

/// [`compress`] as axum middleware, for [`router`].
pub(super) async fn compress_middleware(
    request: Request,
    next: axum::middleware::Next,
) -> Response {
    let gzip = gzip_negotiated(request.headers());
    compress(next.run(request).await, gzip)
}

/// A body gzipped as it is sent, at flate2's default level (6, as tower-http's
/// `CompressionLevel::Default`): each frame compressed as it comes, what deflate has
/// ready sent on, and the gzip trailer only when the body ends.
///
/// A body that fails, or that never ends (a file cut short: [`FileBody`] stops and has
/// the connection closed), passes that on and is never finished: a gzip stream ended
/// there would be a complete, valid answer of part of the file.
pub(super) struct Gzipped<B> {
    inner: B,
    /// `None` once the trailer has gone.
    encoder: Option<flate2::write::GzEncoder<Vec<u8>>>,
    /// Trailers of the inner body, sent after the gzip stream's end.
    trailers: Option<HeaderMap>,
}

impl<B> Gzipped<B> {
    /// `inner`, gzipped.
    pub(super) fn new(inner: B) -> Gzipped<B> {
        Gzipped {
            inner,
            encoder: Some(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::default(),
            )),
            trailers: None,
        }
    }
}

impl<B> http_body::Body for Gzipped<B>
where
    B: http_body::Body<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, axum::BoxError>>> {
        use std::io::Write;
        use std::task::Poll;
        let this = self.get_mut();
        loop {
            let Some(encoder) = this.encoder.as_mut() else {
                return Poll::Ready(
                    this.trailers
                        .take()
                        .map(|t| Ok(hyper::body::Frame::trailers(t))),
                );
            };
            let frame = if this.trailers.is_some() {
                None
            } else {
                std::task::ready!(std::pin::Pin::new(&mut this.inner).poll_frame(cx))
            };
            match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => {
                        encoder.write_all(&data)?;
                        let out = std::mem::take(encoder.get_mut());
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(hyper::body::Frame::data(out.into()))));
                        }
                    }
                    Err(frame) => {
                        // Trailers end the body: the stream is finished first.
                        if let Ok(trailers) = frame.into_trailers() {
                            this.trailers = Some(trailers);
                        }
                    }
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e.into()))),
                None => {
                    let Some(encoder) = this.encoder.take() else {
                        continue;
                    };
                    let out = encoder.finish()?;
                    return Poll::Ready(Some(Ok(hyper::body::Frame::data(out.into()))));
                }
            }
        }
    }
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

    /// The answers of tower-http's compression layer, as `serve` set it before
    /// [`compress`] replaced it (gzip alone, at the default level, under this predicate).
    async fn as_tower_http(request: axum::http::Request<Body>, answer: Response) -> Response {
        use tower_http::compression::predicate::{NotForContentType, Predicate};
        use tower_http::compression::{CompressionLayer, CompressionLevel};
        use tower_service::Service as _;
        let compressible = |status: StatusCode,
                            _: axum::http::Version,
                            headers: &HeaderMap,
                            _: &axum::http::Extensions| {
            let media_type = headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let len = headers
                .get(header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<u64>().ok());
            status == StatusCode::OK
                && lowered(media_type)
                && len.is_none_or(|len| len >= MIN_COMPRESSED)
        };
        let predicate = NotForContentType::GRPC
            .and(NotForContentType::IMAGES)
            .and(NotForContentType::SSE)
            .and(compressible);
        let answer = std::sync::Mutex::new(Some(answer));
        let inner = tower::service_fn(move |_: axum::http::Request<Body>| {
            let answer = answer.lock().unwrap().take().unwrap();
            async move { Ok::<_, std::convert::Infallible>(answer) }
        });
        let layer = CompressionLayer::new()
            .gzip(true)
            .quality(CompressionLevel::Default)
            .compress_when(predicate);
        let mut service = tower_layer::Layer::layer(&layer, inner);
        let response = service.call(request).await.unwrap();
        let mut response = response.map(Body::new);
        // The outer layer that marked a gzipped answer's tag.
        let gzipped = response
            .headers()
            .get(header::CONTENT_ENCODING)
            .is_some_and(|e| e == "gzip");
        if let Some(tag) = response.headers().get(header::ETAG).filter(|_| gzipped) {
            let tag = HeaderValue::from_str(&gzipped_tag(tag.to_str().unwrap())).unwrap();
            response.headers_mut().insert(header::ETAG, tag);
        }
        response
    }

    /// The headers and the decoded bytes of an answer.
    async fn seen(response: Response) -> (StatusCode, Vec<(String, String)>, Vec<u8>) {
        let status = response.status();
        let mut headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        headers.sort();
        let gzipped = response.headers().get(header::CONTENT_ENCODING).is_some();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let bytes = if gzipped {
            let mut decoded = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut decoded)
                .unwrap();
            decoded
        } else {
            bytes.to_vec()
        };
        (status, headers, bytes)
    }

    /// [`compress`] answers every request as tower-http's layer did: which answers are
    /// gzipped, for which `Accept-Encoding`, with which headers, and the same bytes once
    /// decoded.
    #[tokio::test]
    async fn compress_answers_as_the_layer_it_replaced() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_string().into_bytes())
            .collect();
        let accepts = [
            None,
            Some("gzip"),
            Some("GZIP;q=0.5, identity;q=0.4"),
            Some("gzip;q=0.4, identity"),
            Some("gzip;q=0"),
            Some("x-gzip"),
            Some("br, deflate"),
            Some("*"),
            Some("gzip;q=1.0001"),
            Some("identity;q=0, gzip;q=0.001"),
        ];
        let types = [
            "text/plain",
            "application/octet-stream",
            "image/svg+xml",
            "image/png",
            "image/foo+xml",
            "text/event-stream",
            "application/xml; charset=utf-8",
            "application/ld+json",
        ];
        for accept in accepts {
            for media_type in types {
                for len in [0usize, 31, 32, text.len()] {
                    for (status, range) in [
                        (StatusCode::OK, false),
                        (StatusCode::PARTIAL_CONTENT, true),
                        (StatusCode::NOT_FOUND, false),
                    ] {
                        let answer = || {
                            let mut response = Response::new(Body::from(text[..len].to_vec()));
                            *response.status_mut() = status;
                            let headers = response.headers_mut();
                            headers
                                .insert(header::CONTENT_TYPE, HeaderValue::from_static(media_type));
                            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
                            headers
                                .insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
                            headers.insert(header::ETAG, HeaderValue::from_static("\"abc\""));
                            if range {
                                headers.insert(
                                    header::CONTENT_RANGE,
                                    HeaderValue::from_static("bytes 0-0/1"),
                                );
                            }
                            response
                        };
                        let mut request = axum::http::Request::new(Body::empty());
                        if let Some(accept) = accept {
                            request
                                .headers_mut()
                                .insert(header::ACCEPT_ENCODING, HeaderValue::from_static(accept));
                        }
                        let gzip = gzip_negotiated(request.headers());
                        let ours = seen(compress(answer(), gzip)).await;
                        let theirs = seen(as_tower_http(request, answer()).await).await;
                        assert_eq!(ours, theirs, "{accept:?} {media_type} {len} {status}");
                    }
                }
            }
        }
    }

    /// A body that fails is not finished as a gzip stream: the error goes on, and no
    /// trailer makes what came before a whole answer.
    #[tokio::test]
    async fn a_failing_body_is_not_finished() {
        let frames: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from(vec![b'a'; 100_000])),
            Err(std::io::Error::other("the disk is gone")),
        ];
        let body = Body::from_stream(futures::stream::iter(frames));
        let mut gzipped = Gzipped::new(body);
        let mut sent = Vec::new();
        let failed = loop {
            let frame = std::future::poll_fn(|cx| {
                http_body::Body::poll_frame(std::pin::Pin::new(&mut gzipped), cx)
            })
            .await;
            match frame {
                Some(Ok(frame)) => sent.extend_from_slice(&frame.into_data().unwrap()),
                Some(Err(e)) => break e.to_string(),
                None => panic!("the body ended as if whole"),
            }
        };
        assert!(failed.contains("the disk is gone"), "{failed}");
        let mut decoded = Vec::new();
        let read =
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&sent[..]), &mut decoded);
        assert!(read.is_err(), "what was sent decodes as a whole stream");
    }
}
