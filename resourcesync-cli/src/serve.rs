//! `resourcesync serve`: publishes a directory over HTTP as a ResourceSync Source, with
//! the three ways of discovery of section 6.3.
//!
//! Static files are served from the file a request opened (media types,
//! `Content-Length`, `Last-Modified`, an `ETag`, the conditionals `If-Match`,
//! `If-Unmodified-Since`, `If-None-Match`, `If-Modified-Since` and `If-Range`, `HEAD`, single byte ranges)
//! and, when text, compressed by tower-http's [`CompressionLayer`]; with `application/xml`
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
//! Connections are served by hyper's HTTP/1 within [`Limits`]: a connection limit, a
//! deadline for a request's head, and one for a connection where nothing moves.
//!
//! Entry points: [`router`] (the whole service, for a server of the caller's), [`serve`]
//! and [`serve_with_limits`] (a server on a listener, until a shutdown future completes),
//! and [`run`] with [`ServeArgs`] (the subcommand).

mod conditional;
mod connections;
mod file_body;
mod publication;

pub use connections::{
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS,
    DEFAULT_SHUTDOWN_TIMEOUT, Limits,
};

use std::future::Future;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use cap_std::fs::Dir;
use resourcesync_model::{Capability, Document};
use tower_http::compression::predicate::{NotForContentType, Predicate};
use tower_http::compression::{CompressionLayer, CompressionLevel};

use conditional::Validator;
use file_body::FileBody;
use publication::Found;

use crate::sync::{Unusable, block_on};

/// What `serve` does, for its long help.
pub const SERVE_ABOUT: &str = "\
Publishes PUBLISH-DIR over HTTP as a ResourceSync Source (section 6.3 discovery included).

Every file under PUBLISH-DIR is served as it is, with its media type, Content-Length,
Last-Modified and an ETag; conditional requests (If-Match, If-Unmodified-Since,
If-None-Match, If-Modified-Since, If-Range), HEAD and single byte ranges are answered (a
Range header of several ranges, or one that is not a byte range, gets the whole file),
and text, XML and JSON are gzipped for clients that accept it (never a range, nor a
binary file). Names starting with a dot are not served, except .well-known/. The Source
Description at .well-known/resourcesync and every *.xml are application/xml.

Conditional requests are compared with the representation the request gets: the
gzipped one has an ETag of its own (ending in -gzip\"), and a range is of the file as it
is. If-None-Match compares weakly, If-Match and If-Range strongly; a field sent on
several lines is one list. Dates may be in any of HTTP's three forms, of any year (a day
name that does not fit the date is not held against it); a date later than the
server's clock, a field of two dates, or one that is not a date is ignored. A file
modified in the future or before 1970 has no Last-Modified, and the date conditionals
are ignored for it (its ETag still validates it). If-Range holds for the file's ETag
only: a date there is never taken (a Last-Modified may be weak, and a resumed download
would join two versions), so the whole file is sent. A request with two Host lines or an
invalid one (a port that is not digits, a comma, userinfo), and an HTTP/1.1 request
without Host, are 400. A file asked for with a trailing slash (/a.txt/) is 404, and a
request target that is not a path (a.txt, host:80) is 400.

Discovery is derived from the Source Description at each request: /robots.txt (unless
PUBLISH-DIR has one) has a Sitemap line per Resource List of its Capability Lists, / (unless
PUBLISH-DIR has index.html) is a page linking each Capability List with
<link rel=\"resourcesync\">, and every resource outside the ResourceSync documents carries
a Link header with rel=\"resourcesync\" to its Capability List(s). Without a Source
Description, / and /robots.txt are 404 and no Link header is sent.

Nothing outside the publication is served, however links change. PUBLISH-DIR may be a
symbolic link swapped to switch to a new generation: it is resolved anew by every
request. A symbolic link in the generation itself is the publisher's and is followed
(build links the collection's files and directories so); beneath it no link is followed
(build never publishes one: a link there was made since), nor a name the build linked
swapped for a link: those are 404, as are FIFOs, sockets, devices and names the file
system refuses (too long, through a file). 503 means the server is out of descriptors
or memory for a while; any other failure of the file system (a read error, a stale
network file handle, a timeout) is 500, logged on standard error, never 404. A file
that shrinks (or fails to read) while it is sent is sent as far as it goes, then the
connection is closed, its body shorter than its Content-Length; one that grows is sent
to its Content-Length.

Connections: at most --max-connections are served at once; at the limit, a new
connection is accepted and the connection idle longest with no response in flight (one
that sent nothing, a keep-alive connection, a client trickling its request) is closed
to make room for it, so that silent clients cannot hold every slot; when every one has
a response in flight, new connections wait in the system's queue. A request's head must
arrive within --header-timeout; a connection on which nothing moves for --idle-timeout
while no request is being answered (a keep-alive connection, a client that stopped
reading) is closed. Durations are written 500ms, 30s, 2m, or a number of seconds.

The server listens on --addr (loopback unless told otherwise) and stops on Ctrl-C or
SIGTERM, letting the requests in flight finish for up to 30 s (then their connections
are closed).";

/// The output of `serve`, for its long help.
pub const SERVE_OUTPUT: &str = "\
Output:
  One line once the address is bound (with the port chosen, for --addr HOST:0):
    serving <PUBLISH-DIR> at http://<addr>/
  and a warning on standard error when the publication was built for another address
  (its Source Description names another host or port): a Destination starting here would
  be refused its documents' URIs.

JSON (--json):
  {\"addr\": \"<ip>:<port>\", \"dir\": \"<PUBLISH-DIR>\", \"url\": \"http://<addr>/\"}";

/// Exit statuses of `serve`.
pub const SERVE_EXIT: &str = "\
Exit status:
  0  the server stopped on Ctrl-C or SIGTERM
  1  the server failed after it had started (its listening socket became unusable)
  2  it could not start: PUBLISH-DIR is not a directory, the address cannot be bound";

/// `--addr`: an IP address and port, a host name and port (the first address the system's
/// resolver gives for it: `localhost:8080`), or a port alone (on 127.0.0.1, as the default).
fn listen_address(text: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Ok(port) = text.parse::<u16>() {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    match std::net::ToSocketAddrs::to_socket_addrs(text) {
        Ok(mut found) => found
            .next()
            .ok_or_else(|| format!("{text} names no address")),
        Err(e) => Err(format!("not IP:PORT, HOST:PORT or PORT ({e})")),
    }
}

/// The arguments of `resourcesync serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The directory to publish (may be a symbolic link, swapped while serving).
    #[arg(value_name = "PUBLISH-DIR")]
    pub dir: PathBuf,
    /// The address to listen on: IP:PORT, HOST:PORT (`localhost:8080`, the first address
    /// the name has) or a PORT alone (on 127.0.0.1); port 0 picks a free port.
    #[arg(long, value_name = "IP:PORT", default_value = "127.0.0.1:8080", value_parser = listen_address)]
    pub addr: SocketAddr,
    /// Print the start line as a JSON object.
    #[arg(long)]
    pub json: bool,
    /// The most connections served at once [default: 512, or half of `ulimit -n` if less]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_connections: Option<u32>,
    /// How long a request's head (request line and headers) may take to arrive.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::units::duration)]
    pub header_timeout: Duration,
    /// How long a connection may sit with nothing moving while no request is answered.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::units::duration)]
    pub idle_timeout: Duration,
}

impl ServeArgs {
    /// The connection limits the arguments ask for; without `--max-connections`, as many
    /// as the process's limit of open files allows, up to [`DEFAULT_MAX_CONNECTIONS`].
    pub fn limits(&self) -> Limits {
        Limits {
            max_connections: self
                .max_connections
                .unwrap_or_else(max_connections_that_fit),
            header_timeout: self.header_timeout,
            idle_timeout: self.idle_timeout,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// The descriptors a server keeps besides its connections' (standard streams, the
/// listener, the runtime's event queue and wakers, a Source Description being read).
const OWN_FILES: u64 = 16;

/// [`DEFAULT_MAX_CONNECTIONS`], or fewer where the process may open fewer than twice as
/// many files (macOS's default limit is 256): past the limit of open files, accepting
/// fails and connections wait in the listen queue anyway, with those served unable to
/// open a file.
fn max_connections_that_fit() -> u32 {
    #[cfg(unix)]
    if let Some(files) = rustix::process::getrlimit(rustix::process::Resource::Nofile).current {
        let fit = files.saturating_sub(OWN_FILES) / 2;
        return u32::try_from(fit)
            .unwrap_or(u32::MAX)
            .clamp(1, DEFAULT_MAX_CONNECTIONS);
    }
    DEFAULT_MAX_CONNECTIONS
}

/// Runs `serve` and returns its exit status: binds, prints the start line, serves until
/// Ctrl-C or SIGTERM.
pub fn run(args: &ServeArgs) -> ExitCode {
    block_on("serve", async {
        // Checked once to refuse a typo at startup; never canonicalized or kept open, so
        // that a swap of the link is seen (a directory missing later gives 404s).
        if !args.dir.is_dir() {
            return Err(Unusable(format!(
                "PUBLISH-DIR {} is not a directory",
                args.dir.display()
            )));
        }
        let shutdown = ctrl_c().map_err(|e| Unusable(format!("cannot listen for Ctrl-C: {e}")))?;
        let listener = tokio::net::TcpListener::bind(args.addr)
            .await
            .map_err(|e| Unusable(format!("cannot bind address {}: {e}", args.addr)))?;
        let addr = listener.local_addr()?;
        let dir = args.dir.display().to_string();
        if args.json {
            let line = serde_json::json!({"addr": addr.to_string(), "dir": dir,
                "url": format!("http://{addr}/")});
            println!("{line}");
        } else {
            println!("serving {dir} at http://{addr}/");
        }
        if let Some(warning) = built_for_elsewhere(&args.dir, addr).await {
            eprintln!("resourcesync serve: warning: {warning}");
        }
        match serve_with_limits(listener, args.dir.clone(), args.limits(), shutdown).await {
            Ok(()) => Ok(0),
            Err(e) => {
                eprintln!("resourcesync serve: {e}");
                Ok(1)
            }
        }
    })
}

/// Why a Destination that starts at `addr` would not reach the publication in `dir`, if
/// it would not: its documents name the base URL it was built for (its Source
/// Description's first Capability List), and a Destination refuses a document on another
/// authority than the one it started at (another port, or a host that is not this
/// address: a name is resolved, for at most two seconds). `None` when they agree, when
/// the server listens on every address and the ports agree, or when there is no Source
/// Description to read (a publication built later: nothing to compare yet).
///
/// A warning, not a refusal: behind a proxy that serves the publication at its base URL,
/// the two differ on purpose.
async fn built_for_elsewhere(dir: &Path, addr: SocketAddr) -> Option<String> {
    let dir = dir.to_owned();
    let locs = tokio::task::spawn_blocking(move || {
        let root = publication::open_publication(&dir).ok()?;
        let found = publication::open_in(&root, &dir, Path::new(SOURCE_DESCRIPTION), false);
        let Ok(Found::File(file, _) | Found::Index(file, _)) = found else {
            return None;
        };
        let document = read_bounded(&file).ok()?;
        Some(locs_of(&document, &Capability::CapabilityList))
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
    if here && port == addr.port() {
        return None;
    }
    let authority = match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    };
    let built_for = format!("{}://{authority}/", url.scheme());
    Some(format!(
        "the publication was built for {built_for} (its Source Description lists \
         {listed}), and this server is at http://{addr}/: a Destination that starts here \
         is refused the documents' URIs unless it allows them (resourcesync sync \
         --allow-authority {authority}); build with --base-url http://{addr}/ or serve \
         with --addr {authority} to agree (behind a proxy that serves it at {built_for}, \
         no matter)"
    ))
}

/// Completes at Ctrl-C (or SIGTERM, as a service manager stops a server). The handlers
/// are installed here, before the start line is printed, so that a signal right after it
/// is not missed: `tokio::signal::ctrl_c()` installs its handler only when first polled.
fn ctrl_c() -> io::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt())?;
        let mut terminate = signal(SignalKind::terminate())?;
        Ok(async move {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        })
    }
    #[cfg(windows)]
    {
        let mut ctrl_c = tokio::signal::windows::ctrl_c()?;
        Ok(async move {
            ctrl_c.recv().await;
        })
    }
}

/// Serves `dir` on `listener` within the default [`Limits`] until `shutdown` completes,
/// then lets the requests in flight finish and returns; see [`serve_with_limits`].
pub async fn serve(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    serve_with_limits(listener, dir, Limits::default(), shutdown).await
}

/// Serves `dir` on `listener` within `limits` until `shutdown` completes, then stops
/// accepting, lets the requests in flight finish (idle connections are closed at once)
/// for up to [`Limits::shutdown_timeout`], and returns.
///
/// The error is the server's own: a listener that can no longer accept. An error of one
/// connection is that connection's end, and a lack of file descriptors a pause before
/// the next accept; a request's failure is its response's status.
pub async fn serve_with_limits(
    listener: tokio::net::TcpListener,
    dir: PathBuf,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    connections::serve(listener, router(dir), limits, shutdown).await
}

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
    let shared = Arc::new(Shared {
        dir,
        capability_lists: Mutex::new(None),
    });
    Router::new()
        .fallback(respond)
        .with_state(shared)
        // Compression sits outside `respond`, so that the ETag is that of the file; the
        // layer outside it marks the gzipped representation's ETag as another one.
        .layer(
            CompressionLayer::new()
                .gzip(true)
                .quality(CompressionLevel::Default)
                .compress_when(compression_predicate()),
        )
        .layer(axum::middleware::map_response(gzip_etag))
}

/// What the compression layer asks of a response before it gzips it; [`not_modified`]
/// asks it too, of the 200 a 304 stands for, so that the two cannot disagree.
fn compression_predicate() -> impl Predicate {
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
fn gzip_negotiated(headers: &HeaderMap) -> bool {
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
fn qvalue(text: &str) -> Option<u16> {
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
fn compressible_type(media_type: &str) -> bool {
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

/// Below this many bytes gzip saves nothing (the default predicate's bound).
const MIN_COMPRESSED: u64 = 32;

/// Whether a response may be gzipped: a whole representation (200; the layer leaves out
/// ranges itself), of a [`compressible_type`], and not tiny.
///
/// This stands in for the default predicate's size bound, which reads the body's size:
/// the empty body of a HEAD would never be gzipped while its GET is, and HEAD must give
/// GET's headers. `Content-Length`, which [`static_file`] sets for both, decides instead.
fn compressible(
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
const GZIP_SUFFIX: &str = "-gzip";

/// The entity tag of the gzipped representation of the file whose tag is `etag`.
fn gzipped_tag(etag: &str) -> String {
    format!("{}{GZIP_SUFFIX}\"", etag.trim_end_matches('"'))
}

/// Marks the ETag of a gzipped response as the gzipped representation's.
async fn gzip_etag(mut response: Response) -> Response {
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

/// What every request shares: the directory as given, and the Capability Lists of the
/// last Source Description read, with the identity of its file.
struct Shared {
    dir: PathBuf,
    capability_lists: Mutex<Option<(FileIdentity, Discovered)>>,
}

/// The Capability Lists, or why the Source Description could not be read.
type Discovered = Result<Arc<Discovery>, String>;

/// What the Source Description says of the Capability Lists, kept with the identity of
/// its file, and the `Link` header made from it once rather than at every request.
#[derive(Debug)]
struct Discovery {
    /// The Capability Lists' URIs.
    lists: Vec<String>,
    /// The `Link` header naming them all (section 6.3.3); `None` without any.
    link: Option<HeaderValue>,
    /// Each list's path under the publication, and its directory unless that is the
    /// root: the documents, which get no `Link` header.
    documents: Vec<(PathBuf, Option<PathBuf>)>,
}

impl Discovery {
    fn new(lists: Vec<String>) -> Discovery {
        let documents = lists
            .iter()
            .filter_map(|uri| relative_path_of_uri(uri))
            .map(|list| {
                let directory = list
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map(Path::to_owned);
                (list, directory)
            })
            .collect();
        let links: Vec<String> = lists
            .iter()
            .map(|uri| format!("<{uri}>; rel=\"resourcesync\""))
            .collect();
        let link = (!links.is_empty())
            .then(|| HeaderValue::from_str(&links.join(", ")).ok())
            .flatten();
        Discovery {
            lists,
            link,
            documents,
        }
    }
}

/// What tells one file's content from another's without reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileIdentity {
    len: u64,
    #[cfg(not(unix))]
    modified: Option<SystemTime>,
    /// Seconds and nanoseconds since 1970.
    #[cfg(unix)]
    modified: (i64, i64),
    #[cfg(unix)]
    inode: (u64, u64),
}

impl FileIdentity {
    fn of(meta: &std::fs::Metadata) -> FileIdentity {
        #[cfg(unix)]
        use std::os::unix::fs::MetadataExt;
        FileIdentity {
            len: meta.len(),
            #[cfg(not(unix))]
            modified: meta.modified().ok(),
            #[cfg(unix)]
            modified: (meta.mtime(), meta.mtime_nsec()),
            #[cfg(unix)]
            inode: (meta.dev(), meta.ino()),
        }
    }

    /// The identity of what `path` under `dir` names, links followed, in one `statx`.
    #[cfg(unix)]
    fn at(dir: &Dir, path: &str) -> io::Result<FileIdentity> {
        use rustix::fs::{AtFlags, StatxFlags, makedev, statx};
        let stat = statx(dir, path, AtFlags::empty(), StatxFlags::BASIC_STATS)?;
        Ok(FileIdentity {
            len: stat.stx_size,
            modified: (stat.stx_mtime.tv_sec, i64::from(stat.stx_mtime.tv_nsec)),
            inode: (
                makedev(stat.stx_dev_major, stat.stx_dev_minor),
                stat.stx_ino,
            ),
        })
    }
}

/// Where the Source Description is, under the publish directory (section 6.3.2).
const SOURCE_DESCRIPTION: &str = ".well-known/resourcesync";

/// The most of a Source Description or Capability List read for discovery: both are
/// short (a Capability List has at most a dozen entries), and a request must not make the
/// server read without bound.
const MAX_DOCUMENT: u64 = 8 << 20;

/// What a request found under the publication.
struct Lookup {
    /// What the request's path names.
    found: io::Result<Found>,
    /// The file's bytes, read with its open when asked for and at most [`CHUNK`] long.
    bytes: Option<Bytes>,
    /// The Capability Lists for the `Link` header.
    lists: Lists,
}

/// The Capability Lists for a resource's `Link` header, as far as the lookup knows them.
enum Lists {
    /// These (`None`: no Source Description, or no `Link` header asked for).
    Known(Option<Discovered>),
    /// The Source Description is not the file last read, or could not be asked about:
    /// [`Shared::capability_lists`] reads it on the blocking pool.
    Unknown,
}

impl Shared {
    /// Opens what `relative` names, confined to the publication (see `publication`);
    /// with `index`, a directory's `index.html`. With `whole`, a file of at most
    /// [`CHUNK`] bytes is read too; with `discover`, the Capability Lists are looked up
    /// beside a file, if the cache holds them.
    ///
    /// On the calling thread, a worker of the runtime, rather than on tokio's blocking
    /// pool: the opens and metadata are calls that the kernel's caches answer in
    /// microseconds, and a small file one read from the page cache, while a trip to the
    /// pool and back (a thread woken, the task woken back) cost more than all of them
    /// (strace: 30 futex calls per request; perf: a third of the server's time, with
    /// wget2 at 0.69x nginx's pace). nginx makes the same calls on its event loop. The
    /// price: on a slow or network file system a call that waits holds its worker (the
    /// others go on, and take over its queued tasks). Reading a Source Description that
    /// changed, and the chunks of a larger file, stay on the pool.
    fn lookup(&self, relative: &Path, index: bool, whole: bool, discover: bool) -> Lookup {
        let root = match publication::open_publication(&self.dir) {
            Ok(root) => root,
            Err(e) => {
                return Lookup {
                    found: Err(e),
                    bytes: None,
                    lists: Lists::Known(None),
                };
            }
        };
        let mut found = publication::open_in(&root, &self.dir, relative, index);
        let mut bytes = None;
        let mut lists = Lists::Known(None);
        if let Ok(Found::File(file, meta) | Found::Index(file, meta)) = &found {
            if whole && meta.len() <= CHUNK as u64 {
                match read_whole(file, meta.len()) {
                    Ok(read) => bytes = read,
                    Err(e) => found = Err(e),
                }
            }
            if discover {
                lists = self.cached_capability_lists(&root);
            }
        }
        Lookup {
            found,
            bytes,
            lists,
        }
    }

    /// The Capability Lists if the Source Description under `root` is the file last read
    /// (or there is none), by one `statx` of its path rather than the walk's half-dozen
    /// calls: every request of a resource asks, for its `Link` header.
    ///
    /// Only equality is trusted, and it means the very file the walk found and read
    /// before (device, inode, length and modification time to the nanosecond); any
    /// other answer, links included, is left to [`Shared::capability_lists`]. Nothing
    /// there is nothing for the walk either: it follows no link the system would not.
    fn cached_capability_lists(&self, root: &Dir) -> Lists {
        #[cfg(unix)]
        match FileIdentity::at(root, SOURCE_DESCRIPTION) {
            Ok(identity) => {
                if let Some((cached, found)) = &*self.lock()
                    && *cached == identity
                {
                    return Lists::Known(Some(found.clone()));
                }
            }
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR)) => {
                return Lists::Known(None);
            }
            Err(_) => {}
        }
        #[cfg(not(unix))]
        let _ = root;
        Lists::Unknown
    }

    /// The URIs of the Capability Lists the Source Description lists; `None` when there
    /// is no Source Description.
    async fn capability_lists(self: &Arc<Self>) -> Option<Discovered> {
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || match publication::open_publication(&shared.dir) {
            Ok(root) => shared.capability_lists_in(&root),
            Err(e) if status_of(&e) == StatusCode::NOT_FOUND => None,
            Err(e) => Some(Err(format!("cannot read the Source Description: {e}"))),
        })
        .await
        .unwrap_or_else(|e| Some(Err(format!("cannot read the Source Description: {e}"))))
    }

    /// [`capability_lists`](Shared::capability_lists) in the publication `root`, on a
    /// thread that may block. The Source Description is opened at every call, and read
    /// only when its file is not the one last read.
    fn capability_lists_in(&self, root: &Dir) -> Option<Discovered> {
        let found = publication::open_in(root, &self.dir, Path::new(SOURCE_DESCRIPTION), false);
        let (file, meta) = match found {
            Ok(Found::File(file, meta) | Found::Index(file, meta)) => (file, meta),
            Ok(Found::Directory) => return None,
            Err(e) if status_of(&e) == StatusCode::NOT_FOUND => return None,
            Err(e) => return Some(Err(format!("cannot read the Source Description: {e}"))),
        };
        // The identity comes from the open file, so it is that of the bytes read even if
        // the link is swapped meanwhile.
        let identity = FileIdentity::of(&meta);
        if let Some((cached, found)) = &*self.lock()
            && *cached == identity
        {
            return Some(found.clone());
        }
        let found = read_bounded(&file)
            .map(|document| {
                Arc::new(Discovery::new(locs_of(
                    &document,
                    &Capability::CapabilityList,
                )))
            })
            .map_err(|e| format!("the Source Description: {e}"));
        *self.lock() = Some((identity, found.clone()));
        Some(found)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(FileIdentity, Discovered)>> {
        // The cache is replaced whole, so a panic elsewhere cannot leave it half written.
        self.capability_lists
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }
}

/// The `len` bytes of an open file, or `None` if it holds fewer now (it is being
/// rewritten: the response then streams what there is, as for a large file).
///
/// Read into a buffer of the file's length, in one call where the system gives it all:
/// `read_to_end` probes with 8 KiB and doubles, three calls for a 30 KB file.
fn read_whole(mut file: &std::fs::File, len: u64) -> io::Result<Option<Bytes>> {
    let Ok(len) = usize::try_from(len) else {
        return Ok(None);
    };
    let mut bytes = vec![0; len];
    let mut filled = 0;
    while filled < len {
        match file.read(&mut bytes[filled..]) {
            Ok(0) => return Ok(None),
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(Some(Bytes::from(bytes)))
}

/// Reads a document of at most [`MAX_DOCUMENT`] bytes with resourcesync-xml.
fn read_bounded(file: &std::fs::File) -> Result<Document, String> {
    let mut bytes = Vec::new();
    file.take(MAX_DOCUMENT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    if bytes.len() as u64 > MAX_DOCUMENT {
        return Err(format!("longer than {MAX_DOCUMENT} bytes"));
    }
    // Findings (rules broken) do not stop discovery: a Destination would follow the
    // links all the same.
    resourcesync_xml::read_document(&bytes)
        .map(|(document, _findings)| document)
        .map_err(|e| e.to_string())
}

/// The `<loc>` of every entry of `document` whose capability is `capability`, if it is
/// an `http` or `https` URI that can stand in a `Link` header, an HTML attribute and a
/// robots.txt line as it is.
///
/// The reader reports other schemes (`javascript:` among them) as findings but still
/// returns them; put in the home page's links they would run in a visitor's browser.
fn locs_of(document: &Document, capability: &Capability) -> Vec<String> {
    let usable = |uri: &str| {
        let scheme = uri.split_once(':').map_or("", |(scheme, _)| scheme);
        (scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https"))
            && !uri.contains(|c: char| c.is_whitespace() || c.is_control() || "<>\"".contains(c))
    };
    document
        .entries
        .iter()
        .filter(|e| e.md.as_ref().and_then(|md| md.capability.as_ref()) == Some(capability))
        .map(|e| e.loc.as_str())
        .filter(|loc| usable(loc))
        .map(str::to_owned)
        .collect()
}

/// The relative path a request path names under the publish directory, segment by
/// segment (percent-decoded), or `None` when it may not be served:
/// `..`, a hidden segment (starting with a dot, except a leading `.well-known`), a
/// backslash or NUL, or a path that is not UTF-8.
fn relative_path(path: &str) -> Option<PathBuf> {
    let mut relative = PathBuf::new();
    // Each segment decoded apart: a `/` percent-encoded inside one (`%2F`) is no
    // separator, and refused, as `Directory::path` refuses it. Empty and `.` segments
    // name nothing, as in a path joined segment by segment.
    let segments = path.split('/').filter(|s| !s.is_empty() && *s != ".");
    for (i, raw) in segments.enumerate() {
        // A backslash as written some clients and servers take for a `/`.
        if raw.contains('\\') {
            return None;
        }
        let segment = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .ok()?;
        let hidden = segment.starts_with('.') && !(i == 0 && segment == ".well-known");
        // `..` is hidden too: the walk under the publish directory takes plain names
        // only, and a request never names a parent. A `\` written `%5C` is a character of
        // a file's name on Unix (`build` publishes such names so), a separator elsewhere.
        let separator = segment.contains('/') || cfg!(not(unix)) && segment.contains('\\');
        if hidden || separator || segment.contains('\0') || segment == "." {
            return None;
        }
        relative.push(&*segment);
    }
    Some(relative)
}

/// The relative path of a URI served by this server: the path of an `http(s)` URI
/// (the well-known URI sits at the root of its host, so a Source's documents are named
/// by their path under the publish directory).
fn relative_path_of_uri(uri: &str) -> Option<PathBuf> {
    let after_scheme = uri.split_once("://")?.1;
    let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
    let path = path.split(['?', '#']).next().unwrap_or("/");
    relative_path(path)
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
    let discover = !relative.starts_with(".well-known");
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
        Ok(Found::File(file, meta)) => {
            static_file(&relative, &relative, &request, file, meta, bytes, lists)
        }
        Ok(Found::Index(file, meta)) => {
            let page = relative.join("index.html");
            static_file(&relative, &page, &request, file, meta, bytes, lists)
        }
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
                home_page(&shared).await
            } else if relative == Path::new("robots.txt") {
                robots_txt(&shared).await
            } else {
                return plain(StatusCode::NOT_FOUND, "not found\n");
            };
            generated_page(&request.headers, page)
        }
        Err(e) => error_response(&e, &relative),
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
        resourcesync_source::push_segment(&mut location, segment);
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
fn error_response(e: &io::Error, relative: &Path) -> Response {
    match status_of(e) {
        StatusCode::NOT_FOUND => plain(StatusCode::NOT_FOUND, "not found\n"),
        StatusCode::SERVICE_UNAVAILABLE => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, "1")],
            "busy, try again\n",
        )
            .into_response(),
        status => {
            // The request's path, escaped: a client's control characters reach no
            // terminal or log line of ours.
            eprintln!(
                "resourcesync serve: cannot read /{}: {e}",
                resourcesync_source::Shown(relative)
            );
            (status, format!("cannot read the file: {e}\n")).into_response()
        }
    }
}

/// `/`: a page with a `<link rel="resourcesync">` per Capability List (section 6.3.3).
async fn home_page(shared: &Arc<Shared>) -> Response {
    let lists = match shared.capability_lists().await {
        None => return plain(StatusCode::NOT_FOUND, "no Source Description yet\n"),
        Some(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
        Some(Ok(lists)) => lists,
    };
    let mut head = String::new();
    let mut body = String::new();
    for uri in &lists.lists {
        let uri = escape_html(uri);
        head.push_str(&format!("    <link rel=\"resourcesync\" href=\"{uri}\">\n"));
        body.push_str(&format!("      <li><a href=\"{uri}\">{uri}</a></li>\n"));
    }
    let page = format!(
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n{head}    \
         <title>ResourceSync Source</title>\n  </head>\n  <body>\n    \
         <h1>ResourceSync Source</h1>\n    <p>The <a href=\"/{SOURCE_DESCRIPTION}\">Source \
         Description</a> lists these Capability Lists:</p>\n    <ul>\n{body}    </ul>\n  \
         </body>\n</html>\n"
    );
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], page).into_response()
}

/// `&`, `<`, `>` and `"` as character references, for a URI in an attribute or text.
fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            c => escaped.push(c),
        }
    }
    escaped
}

/// `/robots.txt`: a `Sitemap` line per Resource List of each Capability List (section
/// 6.3.4). The Capability Lists are read at each request, as robots.txt is seldom asked
/// for; one that cannot be read is named in a comment.
async fn robots_txt(shared: &Arc<Shared>) -> Response {
    let shared = Arc::clone(shared);
    // Opening and reading the documents blocks; the publication is opened once, so that
    // every document read is of one generation.
    tokio::task::spawn_blocking(move || {
        let root = match publication::open_publication(&shared.dir) {
            Ok(root) => root,
            Err(e) if status_of(&e) == StatusCode::NOT_FOUND => {
                return plain(StatusCode::NOT_FOUND, "no Source Description yet\n");
            }
            Err(e) => {
                let e = format!("cannot read the Source Description: {e}");
                return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response();
            }
        };
        let lists = match shared.capability_lists_in(&root) {
            None => return plain(StatusCode::NOT_FOUND, "no Source Description yet\n"),
            Some(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
            Some(Ok(lists)) => lists,
        };
        let mut text = String::from("# The Resource Lists of this ResourceSync Source.\n");
        for uri in &lists.lists {
            let read = || {
                let relative = relative_path_of_uri(uri).ok_or("not a path of this server")?;
                match publication::open_in(&root, &shared.dir, &relative, false) {
                    Ok(Found::File(file, _) | Found::Index(file, _)) => read_bounded(&file),
                    Ok(Found::Directory) => Err("not found".to_owned()),
                    Err(e) if status_of(&e) == StatusCode::NOT_FOUND => Err("not found".to_owned()),
                    Err(e) => Err(format!("cannot open: {e}")),
                }
            };
            match read() {
                Ok(document) => {
                    for list in locs_of(&document, &Capability::ResourceList) {
                        // A line break in a URI would make a line of its own.
                        if !list.contains(['\r', '\n']) {
                            text.push_str(&format!("Sitemap: {list}\n"));
                        }
                    }
                }
                Err(e) => {
                    let e = e.replace(['\r', '\n'], " ");
                    let uri = uri.replace(['\r', '\n'], " ");
                    text.push_str(&format!("# {uri}: {e}\n"));
                }
            }
        }
        ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
    })
    .await
    .unwrap_or_else(|e| (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response())
}

/// Whether the compression layer would gzip the 200 of a file of `len` bytes and
/// `media_type` for a client that accepts gzip: the same predicate, asked of the same
/// headers, so that the representation the conditionals compare with and the one sent
/// cannot disagree.
fn compressed_type(media_type: &HeaderValue, len: u64) -> bool {
    let probe = Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, media_type)
        .header(header::CONTENT_LENGTH, len)
        .body(Body::empty());
    probe.is_ok_and(|probe| compression_predicate().should_compress(&probe))
}

/// A 304 standing for the 200 of the representation whose tag is `etag` (RFC 9110
/// 15.4.5: the `ETag` and `Vary` the 200 would have had). `Vary: accept-encoding` when
/// the compression layer would have looked at the 200 (`compressed`: it says so on every
/// 200 of such a type, gzipped or not).
fn not_modified(compressed: bool, etag: Option<&str>) -> Response {
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

/// A generated page (the home page, robots.txt) under the conditionals, which only a
/// 200 is subject to (RFC 9110 13.2.1). It has no validator: a list of tags in
/// If-Match matches nothing (412), If-None-Match `*` matches the page there is (304,
/// with the 200's `Vary`), and the dates and If-Range have nothing to compare with.
fn generated_page(headers: &HeaderMap, page: Response) -> Response {
    if page.status() != StatusCode::OK {
        return page;
    }
    if !conditional::if_match_holds(headers, None) {
        return StatusCode::PRECONDITION_FAILED.into_response();
    }
    if headers.contains_key(header::IF_NONE_MATCH) && conditional::none_match(headers, None) {
        let len = hyper::body::Body::size_hint(page.body()).lower();
        let compressed = page
            .headers()
            .get(header::CONTENT_TYPE)
            .is_some_and(|media_type| compressed_type(media_type, len));
        return not_modified(compressed, None);
    }
    page
}

/// The bytes of a file a response sends at a time, and the most read with its open.
/// Each chunk is a read on tokio's blocking pool, a handoff there and back: at 64 KiB
/// (what `ServeDir` read) a 1 MiB file took 16 of them.
const CHUNK: usize = 256 << 10;

/// An open file of the publication as the response to a GET or HEAD: its media type,
/// length, validators and `Link` header, after the conditionals (RFC 9110 13.2.2's
/// order) and a single byte range. `relative` is the path asked for, `name` the file's
/// (a directory's `index.html`).
fn static_file(
    relative: &Path,
    name: &Path,
    request: &axum::http::request::Parts,
    mut file: std::fs::File,
    meta: std::fs::Metadata,
    bytes: Option<Bytes>,
    lists: Option<&Discovered>,
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

    // mime_guess says text/xml for .xml and nothing for the extensionless Source
    // Description; the standard's documents are application/xml (section 7).
    let media_type =
        if name == Path::new(SOURCE_DESCRIPTION) || name.extension() == Some("xml".as_ref()) {
            HeaderValue::from_static("application/xml")
        } else {
            mime_guess::from_path(name)
                .first_raw()
                .map_or(HeaderValue::from_static("application/octet-stream"), |t| {
                    HeaderValue::from_static(t)
                })
        };
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
    // The probe of `compressed_type` only when the client asks for gzip: most do not.
    let gzipped =
        asked == RangeAsked::Whole && gzip_negotiated(headers) && compressed_type(&media_type, len);
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
        return not_modified(compressed_type(&media_type, len), selected);
    }

    let mut response = Response::builder()
        .header(header::CONTENT_TYPE, media_type)
        .header(header::ACCEPT_RANGES, "bytes");
    if let Some(modified) = last_modified {
        response = response.header(header::LAST_MODIFIED, modified.to_string());
    }
    let (start, count) = match asked {
        RangeAsked::Whole => {
            response = response.status(StatusCode::OK);
            (0, len)
        }
        RangeAsked::Part { start, count } => {
            let last = start + count - 1;
            response = response
                .status(StatusCode::PARTIAL_CONTENT)
                .header(header::CONTENT_RANGE, format!("bytes {start}-{last}/{len}"));
            (start, count)
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
        response = response.header(header::ETAG, etag);
    }
    if let Some(link) = lists.and_then(|lists| link_header(lists, relative)) {
        response = response.header(header::LINK, link);
    }
    response = response.header(header::CONTENT_LENGTH, count);
    let body = if request.method == Method::HEAD || count == 0 {
        Body::empty()
    } else if let Some(bytes) = bytes.filter(|b| start == 0 && b.len() as u64 == count) {
        Body::from(bytes)
    } else {
        // Always to the start, 0 included: a short read with the open (`read_whole`, the
        // file shrinking meanwhile) has moved the file's offset, and the stream would
        // begin there.
        if let Err(e) = file.seek(SeekFrom::Start(start)) {
            return error_response(&e, relative);
        }
        let file = tokio::fs::File::from_std(file);
        let cut_short = request.extensions.get::<connections::CutShort>().cloned();
        Body::new(FileBody::new(
            file,
            count,
            CHUNK,
            cut_short,
            name.to_owned(),
        ))
    };
    response
        .body(body)
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR, "bad response\n"))
}

/// What a `Range` header asks of a representation of `len` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RangeAsked {
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
fn range_asked(header: &[u8], len: u64) -> RangeAsked {
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
fn digits(text: &[u8]) -> Option<u64> {
    if text.is_empty() || !text.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(text.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// The `Link` header of a resource (section 6.3.3): one `rel="resourcesync"` link per
/// Capability List. `None` for the ResourceSync documents themselves: the well-known
/// URI, and whatever sits in a Capability List's directory (unless that is the root),
/// which is where a publication keeps its documents and packages.
///
/// Every Capability List is named, as the server does not know which set a resource
/// belongs to; a publication with one set (the usual case) gets the exact link.
fn link_header(discovered: &Discovered, relative: &Path) -> Option<HeaderValue> {
    if relative.starts_with(".well-known") {
        return None;
    }
    let discovery = discovered.as_ref().ok()?;
    let document = discovery.documents.iter().any(|(list, directory)| {
        relative == list || directory.as_ref().is_some_and(|d| relative.starts_with(d))
    });
    if document {
        return None;
    }
    discovery.link.clone()
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

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
        let response = static_file(name, name, &request, file, meta, None, None);
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
