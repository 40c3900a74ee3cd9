//! `resourcesync serve`: publishes a directory over HTTP as a ResourceSync Source, with
//! the three ways of discovery of section 6.3.
//!
//! Static files are served from the file a request opened (media types,
//! `Content-Length`, `Last-Modified`, an `ETag`, the conditionals `If-Match`,
//! `If-Unmodified-Since`, `If-None-Match`, `If-Modified-Since` and `If-Range`, `HEAD`, single byte ranges)
//! and, when text, gzipped as they are sent (`compression`); with `application/xml`
//! for the ResourceSync documents, no hidden files, and discovery: `/robots.txt` with a
//! `Sitemap` directive per Resource List, a home page with `<link rel="resourcesync">` per
//! Capability List, and a `Link: <…>; rel="resourcesync"` header on every resource.
//!
//! Files are opened by directory handles, one segment at a time, following only the
//! publication's own links (`publication` says which and why): nothing outside the
//! publication is served, however links change under it. tower-http's `ServeDir`, used
//! before, opens by path and follows every link. The validators come from the open file,
//! so an `ETag` always names the bytes sent. A request's file is opened, and read when it
//! is small, on the runtime's worker thread rather than on tokio's blocking pool, as
//! nginx does on its event loop (`Shared::lookup` says why and what it costs).
//!
//! The publish directory may be a symbolic link that a publisher swaps to switch
//! generations, so nothing is resolved once: every request opens the directory as given,
//! and what discovery knows of the Source Description is keyed by the file it was read
//! from ([`router`] says how).
//!
//! Connections are served by hyper's HTTP/1 within [`ServeLimits`]: a connection limit, a
//! deadline for a request's head, and one for a connection where nothing moves.
//!
//! Entry points: [`router`] (the whole service, for a server of the caller's), [`serve`]
//! and [`serve_with_limits`] (a server on a listener, until a shutdown future completes),
//! and [`built_for_elsewhere`] (whether a publication's base URL is not this server's).
//! The subcommand's arguments, help, signals and start line are the binary's.

mod compression;
mod conditional;
mod connections;
mod file_body;
mod pages;
mod publication;
mod shared;
mod static_file;

pub use connections::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_SHUTDOWN_TIMEOUT, ServeLimits,
};

use std::future::Future;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cap_std::fs::Dir;
use resourcesync_model::uri_path::SegmentRules;
use resourcesync_model::{Capability, Document, Uri};

use compression::*;
use conditional::Validator;
use file_body::FileBody;
use pages::*;
use publication::Found;
use shared::*;
use static_file::*;

/// Why a Destination that starts at `addr` would not reach the publication in `dir`, if
/// it would not: its documents name the base URL it was built for (its Source
/// Description's first Capability List), and a Destination refuses a document on another
/// authority than the one it started at (another port, or a host that is not this
/// address: a name is resolved, for at most two seconds), and is answered 404 for one
/// whose path is not the file's in `dir` (built for a base URL with another path).
/// `None` when they agree, when the server listens on every address and the ports agree
/// (and the path holds), or when there is no Source Description to read (a publication
/// built later: nothing to compare yet).
///
/// A warning, not a refusal: behind a proxy that serves the publication at its base URL,
/// the two differ on purpose.
pub async fn built_for_elsewhere(dir: &Path, addr: SocketAddr) -> Option<String> {
    let shown = dir.display().to_string();
    let dir = dir.to_owned();
    let (locs, served_there) = tokio::task::spawn_blocking(move || {
        let root = publication::open_publication(&dir).ok()?;
        let found = publication::open_in(&root, &dir, Path::new(SOURCE_DESCRIPTION), false);
        let Ok(Found::File(file, _) | Found::Index(file, _)) = found else {
            return None;
        };
        let document = read_bounded(&file).ok()?;
        let locs = locs_of(&document, &Capability::CapabilityList);
        // Whether the first Capability List is in the publication at its URI's path.
        let there = locs
            .first()
            .and_then(|loc| relative_path_of_uri(loc))
            .map(|path| {
                matches!(
                    publication::open_in(&root, &dir, &path, false),
                    Ok(Found::File(..))
                )
            });
        Some((locs, there))
    })
    .await
    .ok()??;
    let listed = locs.first()?;
    let url = url::Url::parse(listed).ok()?;
    let port = url.port_or_known_default()?;
    let host = url.host_str()?;
    let addresses: Vec<std::net::IpAddr> = match url.host()? {
        url::Host::Ipv4(ip) => vec![ip.into()],
        url::Host::Ipv6(ip) => vec![ip.into()],
        url::Host::Domain(name) => {
            let lookup = tokio::net::lookup_host((name, port));
            match tokio::time::timeout(Duration::from_secs(2), lookup).await {
                Ok(Ok(found)) => found.map(|a| a.ip()).collect(),
                _ => Vec::new(),
            }
        }
    };
    let here = addr.ip().is_unspecified() || addresses.contains(&addr.ip());
    // On every address, the base URL names the machine as Destinations reach it, which
    // this server cannot know: 0.0.0.0 is no address to fetch from.
    let base_here = match addr.ip().is_unspecified() {
        true => format!(
            "http://HOST:{}/ (the name Destinations reach this machine by)",
            addr.port()
        ),
        false => format!("http://{addr}/"),
    };
    if here && port == addr.port() {
        // The right server: but is the Capability List where its URI's path says?
        if served_there == Some(false) {
            return Some(format!(
                "the publication's Source Description lists {listed}, and {shown} has no \
                 file at that path: a Destination that starts here is answered 404 for \
                 it (built for another base URL's path?); build with --base-url \
                 {base_here} to agree (behind a proxy that maps the path, no matter)"
            ));
        }
        return None;
    }
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let built_for = format!("{}://{authority}/", url.scheme());
    let at = match addr.ip().is_unspecified() {
        true => format!("listens on port {} of every address", addr.port()),
        false => format!("is at http://{addr}/"),
    };
    Some(format!(
        "the publication was built for {built_for} (its Source Description lists \
         {listed}), and this server {at}: a Destination that starts here \
         is refused the documents' URIs unless it allows them (resourcesync sync \
         --allow-authority {authority}); build with --base-url {base_here} or serve \
         with --addr {authority} to agree (behind a proxy that serves it at {built_for}, \
         no matter)"
    ))
}

/// Serves `dir` on `listener` within the default [`ServeLimits`] until `shutdown` completes,
/// then lets the requests in flight finish and returns; see [`serve_with_limits`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with_limits(listener, dir, ServeLimits::default(), shutdown).await
}

/// Serves `dir` on `listener` within `limits` until `shutdown` completes, then stops
/// accepting, lets the requests in flight finish (idle connections are closed at once)
/// for up to [`ServeLimits::shutdown_timeout`], and returns.
///
/// The error is the server's own: a listener that can no longer accept. An error of one
/// connection is that connection's end, and a lack of file descriptors a pause before
/// the next accept; a request's failure is its response's status.
pub async fn serve_with_limits(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_reporting(listener, dir, limits, Arc::new(|_| {}), shutdown).await
}

/// [`serve_with_limits`], handing each [`ReadFailure`] to `report` (the command prints
/// them on standard error): nothing in this library prints.
pub async fn serve_reporting(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    limits: ServeLimits,
    report: Reporter,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    connections::serve(listener, publication(dir, report), limits, shutdown).await
}

/// [`serve_reporting`] with a WebSub hub (`resourcesync serve --hub`): its endpoint at
/// `hub_path` beside the publication, and its driver sending its requests, both until
/// `shutdown` completes. The Change Notification topic a Publisher writes
/// (`resourcesync/change-notification.xml`) is served with the `Link` header Change
/// Notification 1.0.1, section 4.1 asks of it: itself as `self`, this hub as `hub`.
pub async fn serve_with_hub(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    limits: ServeLimits,
    report: Reporter,
    hub: Arc<crate::hub::HubServer>,
    hub_path: &str,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let stop = tokio_util::sync::CancellationToken::new();
    let trip = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        trip.cancel();
    });
    let driver = tokio::spawn(Arc::clone(&hub).run(stop.clone().cancelled_owned()));
    let publication = router_with_topic_hub(dir, report, hub.url().clone());
    let router = hub.router(hub_path).merge(publication);
    let served = connections::serve(listener, router, limits, stop.clone().cancelled_owned()).await;
    stop.cancel();
    let _ = driver.await;
    served
}

/// [`serve_reporting`] for a publication whose notifications go through a hub elsewhere
/// (`resourcesync serve --hub-url`): the topic is served with the `Link` header naming
/// itself and `hub`, which a generic hub checks when it fetches the topic after a ping.
pub async fn serve_with_topic_hub(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    limits: ServeLimits,
    report: Reporter,
    hub: Uri,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let router = router_with_topic_hub(dir, report, hub);
    connections::serve(listener, router, limits, shutdown).await
}

/// [`router_reporting`], the topic answering with its `Link` header naming `hub`.
pub fn router_with_topic_hub(dir: PathBuf, report: Reporter, hub: Uri) -> Router {
    router_reporting(dir, report).layer(axum::middleware::from_fn(
        move |request: Request, next: axum::middleware::Next| {
            let hub = hub.clone();
            async move { topic_links(request, next, &hub).await }
        },
    ))
}

/// The topic a Publisher writes, under the publication's root.
const TOPIC: &str = "/resourcesync/change-notification.xml";

/// Adds `Link: <topic>; rel="self", <hub>; rel="hub"` to a successful answer for the
/// topic (the request's own URL, on the authority it was asked at).
async fn topic_links(mut request: Request, next: axum::middleware::Next, hub: &Uri) -> Response {
    if request.uri().path() == TOPIC {
        // The topic goes out as it is, with its Content-Length: flask-websub forwards the
        // headers of what it fetched with the body it decoded, and a gzipped (chunked)
        // answer's headers would not fit that body.
        request.headers_mut().remove(header::ACCEPT_ENCODING);
    }
    let topic = (request.uri().path() == TOPIC)
        .then(|| {
            let host = request.headers().get(header::HOST)?.to_str().ok()?;
            format!("http://{host}{TOPIC}").parse::<Uri>().ok()
        })
        .flatten();
    let mut response = next.run(request).await;
    if let Some(topic) = topic
        && response.status().is_success()
        && let Ok(value) = HeaderValue::from_str(&resourcesync_websub::links(&topic, hub))
    {
        response.headers_mut().append(header::LINK, value);
    }
    response
}

/// A file of the publication the server could not read (an I/O error, a stale handle:
/// the server's fault, not the client's), answered 500, or found while its body was
/// being sent, which then ends short.
#[derive(Debug)]
#[non_exhaustive]
pub struct ReadFailure {
    /// The file's path in the publication, as the request named it.
    pub path: PathBuf,
    /// Why.
    pub error: io::Error,
    /// Found while the body was being sent (the status line had gone out).
    pub sending: bool,
}

impl std::fmt::Display for ReadFailure {
    /// `cannot read /PATH[ while sending it]: ERROR`, the path escaped
    /// ([`Shown`](resourcesync_source::Shown)): a client's control characters reach no
    /// terminal or log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cannot read /{}{}: {}",
            resourcesync_source::Shown(&self.path),
            if self.sending {
                " while sending it"
            } else {
                ""
            },
            self.error
        )
    }
}

/// Where a server hands its [`ReadFailure`]s.
pub type Reporter = Arc<dyn Fn(&ReadFailure) + Send + Sync>;

/// The service that publishes `dir`: static files, conditionals, compression and
/// discovery, as the module describes.
///
/// `dir` is opened anew by every request (a symbolic link is followed anew), and the
/// request's file under it by directory handles, as the module says. The Capability
/// Lists named by the Source Description are cached with the identity of the file they
/// were read from (its length, modification time and, on Unix, device and inode, taken
/// from the open file), and that identity is checked at every request (by one `statx` of
/// its path on Unix), so a new generation is read at its first request.
///
/// What HTTP/1 itself asks is left to the connections of [`serve_with_limits`]: under
/// a server of the caller's, a request without `Host` is not refused, a 304 to HEAD
/// carries axum's `Content-Length: 0`, and a file that shrinks while it is sent ends
/// its body with an error, which lets hyper drop the bytes it still holds.
pub fn router(dir: PathBuf) -> Router {
    router_reporting(dir, Arc::new(|_| {}))
}

/// [`router`], handing each [`ReadFailure`] to `report`.
pub fn router_reporting(dir: PathBuf, report: Reporter) -> Router {
    Router::new()
        .fallback(respond)
        .with_state(Shared::new(dir, report))
        // Compression sits outside `respond`, so that the ETag it marks as the gzipped
        // representation's is the file's.
        .layer(axum::middleware::from_fn(compress_middleware))
}

/// The service [`serve_reporting`] serves: [`router_reporting`]'s, without axum's
/// router around it (the same `answer` and compression), as a tower service of its own.
/// The router, which routes every request to its fallback, and its layers' boxed
/// services cost a request some 5,000 instructions of the 47,000 `serve` spent on a
/// small file (callgrind); [`router`] stays for a server of the caller's.
fn publication(dir: PathBuf, report: Reporter) -> impl connections::Served {
    Publication(Shared::new(dir, report))
}

/// A request's answer as a boxed future (an async block's future has no name to give
/// the service's `Future`).
type Answer = std::pin::Pin<
    Box<dyn Future<Output = Result<Response, std::convert::Infallible>> + Send + 'static>,
>;

/// [`answer`] and [`compress`] as a tower service; then what axum's router does to
/// every response it routes: `Content-Length` set from a body of known length where the
/// answer has none (a 416's empty body, a generated page), so that HEAD's answer keeps
/// GET's fields. (axum also empties HEAD's body; hyper sends none to HEAD anyway.)
#[derive(Clone)]
struct Publication(Arc<Shared>);

impl tower_service::Service<axum::http::Request<hyper::body::Incoming>> for Publication {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future = Answer;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: axum::http::Request<hyper::body::Incoming>) -> Answer {
        let shared = Arc::clone(&self.0);
        // The head only, as `respond` takes it.
        let (request, _) = request.into_parts();
        let gzip = gzip_negotiated(&request.headers);
        Box::pin(async move {
            let mut response = compress(answer(&shared, request).await, gzip);
            // As axum's `RouteFuture` does, before the body goes.
            let known = axum::body::HttpBody::size_hint(response.body()).exact();
            if let Some(len) = known
                && !response.headers().contains_key(header::CONTENT_LENGTH)
            {
                response
                    .headers_mut()
                    .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
            }
            Ok(response)
        })
    }
}

/// The relative path a request path names under the publish directory, segment by
/// segment (percent-decoded), or `None` when it may not be served: what the model's
/// grammar refuses for a request ([`SegmentRules::REQUEST`]: `..`, `%2e%2e`, an encoded
/// `/`, a raw backslash or one encoded off Unix, a control character, a name not UTF-8),
/// and a hidden segment (starting with a dot, except a leading `.well-known`).
fn relative_path(path: &str) -> Option<PathBuf> {
    // Each segment decoded apart: a `/` percent-encoded inside one (`%2F`) is no
    // separator, and refused, as `Directory::path` refuses it. Empty and `.` segments
    // name nothing, as in a path joined segment by segment. A `\` written `%5C` is a
    // character of a file's name on Unix (`build` publishes such names so), a separator
    // elsewhere.
    let names = SegmentRules::REQUEST.path(path).ok()?;
    // The walk under the publish directory takes plain names only.
    let hidden =
        |(i, name): (usize, &String)| name.starts_with('.') && !(i == 0 && name == ".well-known");
    if names.names().iter().enumerate().any(hidden) {
        return None;
    }
    Some(names.to_path_buf())
}

/// The relative path of a URI served by this server: the path of an `http(s)` URI
/// (the well-known URI sits at the root of its host, so a Source's documents are named
/// by their path under the publish directory).
fn relative_path_of_uri(uri: &str) -> Option<PathBuf> {
    let uri = Uri::parse(uri)
        .ok()
        .filter(|uri| uri.authority().is_some())?;
    relative_path(uri.path())
}

/// A plain response of a status with a short text.
fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, text).into_response()
}

/// Answers one request.
async fn respond(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    // The head only: the body of a GET or HEAD means nothing here (and is not `Sync`,
    // which a future holding a reference to it across an await would need).
    let (request, _) = request.into_parts();
    answer(&shared, request).await
}

/// Answers one request, by its head.
async fn answer(shared: &Arc<Shared>, request: axum::http::request::Parts) -> Response {
    // A target is a path (`/a.txt`) or an absolute URI (`http://host/a.txt`) (RFC 9112
    // 3.2.1, 3.2.2); `a.txt` and `host:80` (the authority form, CONNECT's) are neither,
    // and `*` is OPTIONS' alone (answered 405 below).
    let uri = &request.uri;
    let target =
        uri.path().starts_with('/') && (uri.scheme().is_some() || uri.authority().is_none());
    if !(target || request.method == Method::OPTIONS && uri.path() == "*") {
        return plain(
            StatusCode::BAD_REQUEST,
            "the request target is not a path\n",
        );
    }
    let Some(relative) = relative_path(request.uri.path()) else {
        return plain(StatusCode::NOT_FOUND, "not found\n");
    };
    if !matches!(request.method, Method::GET | Method::HEAD) {
        return (
            StatusCode::METHOD_NOT_ALLOWED,
            [(header::ALLOW, "GET, HEAD")],
            "only GET and HEAD\n",
        )
            .into_response();
    }
    let index = request.uri.path().ends_with('/');
    // A small file is read with its open when its whole body is the likely answer: a GET
    // with no range and no precondition to answer 304 or 412 to.
    let whole = request.method == Method::GET
        && [
            header::RANGE,
            header::IF_NONE_MATCH,
            header::IF_MODIFIED_SINCE,
            header::IF_MATCH,
            header::IF_UNMODIFIED_SINCE,
        ]
        .iter()
        .all(|name| !request.headers.contains_key(name));
    // The Source Description and what sits beside it get no `Link` header.
    let discover = !within(&relative, Path::new(".well-known"));
    let Lookup {
        found,
        bytes,
        lists,
    } = shared.lookup(&relative, index, whole, discover);
    let lists = match lists {
        Lists::Known(lists) => lists,
        Lists::Unknown => shared.capability_lists().await,
    };
    let lists = lists.as_ref();
    match found {
        // `/a.txt/` names a directory `a.txt`, which there is not: another URI for the
        // file would resolve its relative references elsewhere (nginx answers 404 too).
        Ok(Found::File(..)) if index => plain(StatusCode::NOT_FOUND, "not found\n"),
        Ok(Found::File(file, meta)) => static_file(
            &relative,
            &relative,
            &request,
            file,
            meta,
            bytes,
            lists,
            &shared.report,
        ),
        // A directory's index, served as the page it is under the directory's URI.
        Ok(Found::Index(file, meta)) => static_file(
            &relative,
            &relative.join("index.html"),
            &request,
            file,
            meta,
            bytes,
            lists,
            &shared.report,
        ),
        Ok(Found::Directory) => {
            // `/dir` to `/dir/`, whose relative links then resolve inside it.
            match directory_location(&relative, request.uri.query()) {
                Some(location) => (
                    StatusCode::TEMPORARY_REDIRECT,
                    [(header::LOCATION, location)],
                )
                    .into_response(),
                None => plain(StatusCode::NOT_FOUND, "not found\n"),
            }
        }
        // The generated pages stand in only for files the publication does not have.
        Err(e) if status_of(&e) == StatusCode::NOT_FOUND => {
            let page = if relative.as_os_str().is_empty() {
                home_page(shared).await
            } else if relative == Path::new("robots.txt") {
                robots_txt(shared).await
            } else {
                return plain(StatusCode::NOT_FOUND, "not found\n");
            };
            generated_page(&request.headers, page)
        }
        Err(e) => error_response(e, &relative, &shared.report),
    }
}

/// The `Location` of the redirect from a directory to its `/` form: built from the
/// normalised relative path, so that it always starts with exactly one `/`. Built from
/// the request's own path, `GET //evil.example` of a directory so named gave
/// `Location: //evil.example/`, a reference to another host (an open redirect).
fn directory_location(relative: &Path, query: Option<&str>) -> Option<HeaderValue> {
    let mut location = String::from("/");
    for segment in relative {
        let segment = segment.to_str()?;
        resourcesync_model::uri_path::push_segment(&mut location, segment);
        location.push('/');
    }
    if let Some(query) = query {
        location.push('?');
        location.push_str(query);
    }
    HeaderValue::from_str(&location).ok()
}

/// The status of an error opening a request's file. What the request's name is at fault
/// for is 404, whatever the system calls it: not there, a link not followed, not a
/// regular file (a socket refuses its open with `ENXIO`), a segment too long
/// (`ENAMETOOLONG`), a path through a file (`ENOTDIR`), a loop, a name the file system
/// cannot hold (`EINVAL`, `EILSEQ`), one the server may not read. Out of descriptors or
/// memory is 503 (for a while). Anything else (`EIO`, `ESTALE`, `ETIMEDOUT`, `EINTR`,
/// `EOVERFLOW`, …) is the server's failure, 500: a Destination takes 404 to mean the
/// resource is gone, and would delete its copy for a disk's or a network file system's
/// passing fault.
fn status_of(e: &io::Error) -> StatusCode {
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error() {
        return match code {
            libc::ENOENT
            | libc::ENOTDIR
            | libc::EISDIR
            | libc::ELOOP
            | libc::ENAMETOOLONG
            | libc::EINVAL
            | libc::EILSEQ
            | libc::ENXIO
            | libc::ENODEV
            | libc::EACCES
            | libc::EPERM => StatusCode::NOT_FOUND,
            libc::EMFILE | libc::ENFILE | libc::ENOMEM | libc::ENOBUFS | libc::EAGAIN => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
    }
    match e.kind() {
        // The walk's own errors (not a regular file, a link not followed, a path through
        // a file), cap-std's refusal of a path leading out, and the system's where it
        // gives no number.
        io::ErrorKind::NotFound
        | io::ErrorKind::NotADirectory
        | io::ErrorKind::IsADirectory
        | io::ErrorKind::InvalidFilename
        | io::ErrorKind::PermissionDenied => StatusCode::NOT_FOUND,
        io::ErrorKind::OutOfMemory => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The response to an error opening or reading the file of `relative` ([`status_of`]);
/// a 503 asks the client to come back in a second. A 500 is logged: it is the server's
/// fault, and its operator's to look into.
fn error_response(e: io::Error, relative: &Path, report: &Reporter) -> Response {
    match status_of(&e) {
        StatusCode::NOT_FOUND => plain(StatusCode::NOT_FOUND, "not found\n"),
        StatusCode::SERVICE_UNAVAILABLE => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "busy, try again\n",
        )
            .into_response(),
        status => {
            let response = (status, format!("cannot read the file: {e}\n")).into_response();
            report(&ReadFailure {
                path: relative.to_owned(),
                error: e,
                sending: false,
            });
            response
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A server on every address is told no `0.0.0.0` URL to build for: it is no
    /// address a Destination fetches from.
    #[tokio::test]
    async fn the_advice_for_every_address_names_the_machine_not_0_0_0_0() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".well-known")).unwrap();
        std::fs::write(
            dir.path().join(".well-known/resourcesync"),
            "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\" \
             xmlns:rs=\"http://www.openarchives.org/rs/terms/\">\
             <rs:md capability=\"description\"/><url>\
             <loc>http://127.0.0.1:1/resourcesync/capabilitylist.xml</loc>\
             <rs:md capability=\"capabilitylist\"/></url></urlset>",
        )
        .unwrap();
        let every: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let said = built_for_elsewhere(dir.path(), every).await.unwrap();
        assert!(
            said.contains("--base-url http://HOST:8080/")
                && said.contains("listens on port 8080 of every address")
                && !said.contains("0.0.0.0"),
            "{said}"
        );
    }

    #[test]
    fn request_paths_are_read_by_the_models_grammar_for_a_request() {
        let served = |p: &str| relative_path(p).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(served("/a//./b%20c").as_deref(), Some("a/b c"));
        assert_eq!(
            served("/.well-known/resourcesync").as_deref(),
            Some(".well-known/resourcesync")
        );
        assert_eq!(served("/").as_deref(), Some(""));
        // Refused: a climb, written or encoded; an encoded `/`; hidden names; a raw
        // backslash; bytes not UTF-8; and (since the grammar is shared) every control
        // character, not only NUL: `build` publishes no such name.
        for p in [
            "/../a",
            "/%2e%2e/a",
            "/a%2Fb",
            "/.hidden",
            "/a/.well-known",
            "/a\\b",
            "/a%FF",
            "/a%00",
            "/a%0Ab",
        ] {
            assert_eq!(served(p), None, "{p}");
        }
        assert_eq!(served("/a%5Cb").is_some(), cfg!(unix));
        assert_eq!(
            relative_path_of_uri("http://e.com/a/b?q#f").as_deref(),
            Some(Path::new("a/b"))
        );
        assert_eq!(relative_path_of_uri("urn:x:y"), None);
    }

    /// A reporter that drops what it is given.
    fn quiet() -> Reporter {
        Arc::new(|_| {})
    }

    /// A file that cannot be read is a 500 whose failure goes to the reporter (the
    /// command prints it); the library prints nothing.
    #[test]
    fn a_read_failure_is_a_500_and_goes_to_the_reporter() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&seen);
        let report: Reporter = Arc::new(move |failure| {
            keep.lock().unwrap().push(failure.to_string());
        });
        let stale = io::Error::from_raw_os_error(libc::EIO);
        let response = error_response(stale, Path::new("docs/a.txt"), &report);
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        // A missing file is the client's 404, not the server's failure: not reported.
        let missing = io::Error::from(io::ErrorKind::NotFound);
        let response = error_response(missing, Path::new("docs/b.txt"), &report);
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert!(seen[0].starts_with("cannot read /docs/a.txt: "), "{seen:?}");
    }

    /// The cache of the Capability Lists trusts an identity taken by `statx` to be the
    /// one the walk's open file gives: the device numbers must be made alike.
    #[test]
    fn a_files_identity_in_one_call_is_that_of_its_open_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".well-known")).unwrap();
        std::fs::write(dir.path().join(SOURCE_DESCRIPTION), "<urlset/>").unwrap();
        let root = publication::open_publication(dir.path()).unwrap();
        let found = publication::open_in(&root, dir.path(), Path::new(SOURCE_DESCRIPTION), false);
        let Ok(Found::File(_, meta)) = found else {
            panic!("{found:?}");
        };
        assert_eq!(
            FileIdentity::at(&root, SOURCE_DESCRIPTION).unwrap(),
            FileIdentity::of(&meta)
        );
        let missing = FileIdentity::at(&root, ".well-known/missing").unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }

    /// Only the errors that are the request's name's are 404: the others, a disk's or
    /// a network file system's faults among them, must not tell a Destination that the
    /// resource is gone.
    #[test]
    fn only_errors_of_the_requests_name_are_404() {
        let raw = io::Error::from_raw_os_error;
        for code in [
            libc::ENOENT,
            libc::ENOTDIR,
            libc::ELOOP,
            libc::ENAMETOOLONG,
            libc::ENXIO,
            libc::EACCES,
        ] {
            assert_eq!(status_of(&raw(code)), StatusCode::NOT_FOUND, "{code}");
        }
        for kind in [io::ErrorKind::NotFound, io::ErrorKind::NotADirectory] {
            assert_eq!(status_of(&io::Error::from(kind)), StatusCode::NOT_FOUND);
        }
        for code in [libc::EMFILE, libc::ENFILE, libc::ENOMEM] {
            assert_eq!(
                status_of(&raw(code)),
                StatusCode::SERVICE_UNAVAILABLE,
                "{code}"
            );
        }
        for code in [
            libc::EIO,
            libc::ESTALE,
            libc::ETIMEDOUT,
            libc::EINTR,
            libc::EOVERFLOW,
        ] {
            assert_eq!(
                status_of(&raw(code)),
                StatusCode::INTERNAL_SERVER_ERROR,
                "{code}"
            );
        }
        let timed_out = io::Error::from(io::ErrorKind::TimedOut);
        assert_eq!(status_of(&timed_out), StatusCode::INTERNAL_SERVER_ERROR);
    }

    /// A file that shrinks between its open and its read: the whole-file read comes up
    /// short, and the response streams the file instead, from its first byte, what is
    /// left of it, then an error (the body is shorter than its Content-Length).
    #[test]
    fn after_a_short_read_the_file_is_streamed_from_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shrinks.txt");
        std::fs::write(&path, "0123456789").unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let meta = file.metadata().unwrap();
        // Rewritten shorter in place, as a publisher rewriting the file would.
        std::fs::write(&path, "01234").unwrap();
        assert!(read_whole(&file, meta.len()).unwrap().is_none());
        let (request, ()) = Request::get("/shrinks.txt").body(()).unwrap().into_parts();
        let name = Path::new("shrinks.txt");
        let response = static_file(name, name, &request, file, meta, None, None, &quiet());
        assert_eq!(response.status(), StatusCode::OK);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let mut body = response.into_body();
        let mut received = Vec::new();
        let ended = runtime.block_on(async {
            loop {
                let frame = std::future::poll_fn(|cx| {
                    hyper::body::Body::poll_frame(std::pin::Pin::new(&mut body), cx)
                })
                .await;
                match frame {
                    Some(Ok(frame)) => received.extend_from_slice(&frame.into_data().unwrap()),
                    Some(Err(e)) => return Some(e),
                    None => return None,
                }
            }
        });
        assert_eq!(received, b"01234");
        assert!(ended.is_some(), "ended as if whole");
    }
}
