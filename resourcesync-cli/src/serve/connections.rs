//! The server's connections: accepted up to a limit, each served by hyper's HTTP/1 with
//! a deadline for a request's head and one for a connection where nothing moves.
//!
//! `axum::serve` has neither (nor a limit), so idle clients and clients trickling a
//! request head could hold every file descriptor. This loop is nearly as lean as
//! axum's: one task per connection, the service shared (cloned by reference count), no
//! buffer allocated here; the watch on a connection's activity is an atomic store per
//! read or write and a timer that wakes once per idle period. What it adds: an entry
//! per connection in a [`Registry`] (a lock at its start and end), and per response a
//! box around the body that says when the response is no longer in flight, so that
//! room can be made at the limit by closing an idle connection.
//!
//! Also here, as they are HTTP/1's rather than the publication's: the 400 to a request
//! without one valid `Host`, no `Content-Length` on a 304, and the close of a
//! connection whose body was cut short ([`CutShort`]) once what came before is written.

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::{CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, TRANSFER_ENCODING};
use axum::http::{HeaderMap, HeaderValue, StatusCode, Version};
use hyper::body::{Frame, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Instant;

use crate::units::MAX_DURATION;

/// Bounds on what clients may hold of a server: connections, and the time a connection
/// may wait on its client.
///
/// Each connection takes a file descriptor, and a second one while it sends a file;
/// keep [`max_connections`](ServeLimits::max_connections) under half of the process's limit
/// (`ulimit -n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// The most connections served at once (at least 1). At the limit, the next
    /// connection is accepted and the connection idle longest that has no response in
    /// flight (one that never sent a byte, a keep-alive connection waiting, a client
    /// trickling its head) is closed to make room for it, as nginx reuses its idle
    /// connections under pressure: otherwise clients that connect and send nothing
    /// would hold every slot for an idle timeout each. When every connection has a
    /// response in flight, the one accepted waits for a slot, and those after it wait
    /// in the system's listen queue: one descriptor past the limit, never more.
    pub max_connections: u32,
    /// How long the head of a request (its request line and headers) may take to
    /// arrive, counted from the connection's start or the end of the response before:
    /// a client trickling a head is cut off after it. Taken at most
    /// [`MAX_DURATION`](crate::units::MAX_DURATION), as is the idle timeout.
    pub header_timeout: Duration,
    /// How long a connection may stay with no byte moving either way while no request
    /// is being answered: a keep-alive connection waiting for a next request, or a
    /// client that stopped reading its response, is closed after it. (Between requests
    /// the header timeout runs too: the shorter of the two closes an idle connection.)
    pub idle_timeout: Duration,
    /// How long a server told to stop lets the responses in flight finish; the
    /// connections still open then are dropped. Without it a client reading a large
    /// file slowly, or not at all, would keep the server from stopping for ever.
    pub shutdown_timeout: Duration,
}

/// [`ServeLimits::max_connections`] by default: half of the most common default limit of
/// open files (1024), as each connection may hold two.
pub const DEFAULT_MAX_CONNECTIONS: u32 = 512;

/// [`ServeLimits::header_timeout`] by default (hyper's own default).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// [`ServeLimits::idle_timeout`] by default.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(15);

/// [`ServeLimits::shutdown_timeout`] by default: as long as a service manager commonly waits
/// after SIGTERM before it kills.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(30);

impl Default for ServeLimits {
    fn default() -> ServeLimits {
        ServeLimits {
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
        }
    }
}

/// How long the loop waits after an error that is not one connection's (out of file
/// descriptors, of memory) before it accepts again: the listener is kept, and
/// connections closing meanwhile free what it lacks.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// Serves `router` on `listener` within `limits` until `shutdown` completes; then stops
/// accepting, lets the requests in flight finish (idle connections are closed at once)
/// and returns once every connection is closed, or once
/// [`ServeLimits::shutdown_timeout`] has passed, the connections left dropped.
///
/// An error of one connection, or a lack of descriptors or memory, is not the server's
/// end: the loop goes on (after [`ACCEPT_PAUSE`] for the latter). The error returned is
/// one that leaves the listener unusable.
pub(super) async fn serve<S: Served>(
    listener: TcpListener,
    router: S,
    limits: ServeLimits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> io::Result<()> {
    let max = limits.max_connections.max(1);
    // A deadline is the clock plus a timeout, and `Instant + Duration` panics past the
    // clock's range (in hyper's task for the header timeout): the timeouts are taken at
    // most `MAX_DURATION`, the options' bound, whoever made the limits.
    let header_timeout = limits.header_timeout.min(MAX_DURATION);
    let idle_timeout = limits.idle_timeout.min(MAX_DURATION);
    let permits = Arc::new(Semaphore::new(max as usize));
    let (closing, closing_seen) = watch::channel(Closing::No);
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .keep_alive(true);
    let http = Arc::new(http);
    tokio::pin!(shutdown);
    let registry = Arc::new(Registry::default());
    let stopped = loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break Ok(()),
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) if listener_unusable(&e) => break Err(e),
            Err(e) if one_connections(&e) => continue,
            Err(_) => {
                tokio::select! {
                    () = tokio::time::sleep(ACCEPT_PAUSE) => continue,
                    () = &mut shutdown => break Ok(()),
                }
            }
        };
        // A slot, or room made for one: the accept loop waits here, with this one
        // connection past the limit, until a connection closes.
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(_) => {
                let permit = loop {
                    registry.close_idlest();
                    tokio::select! {
                        permit = Arc::clone(&permits).acquire_owned() => break permit.ok(),
                        // A response ended, or a connection told to close had one
                        // start meanwhile: look again.
                        () = registry.changed.notified() => {}
                        () = &mut shutdown => break None,
                    }
                };
                match permit {
                    Some(permit) => permit,
                    // Shut down, or the semaphore closed (never: nothing more could
                    // be served).
                    None => break Ok(()),
                }
            }
        };
        // Responses are written whole by hyper (head and body in one write where it
        // can): Nagle's delay would only hold back the last segment of each.
        let _ = stream.set_nodelay(true);
        tokio::spawn(connection(
            stream,
            router.clone(),
            Arc::clone(&http),
            idle_timeout,
            closing_seen.clone(),
            Registered::new(&registry, permit),
        ));
    };
    // New connections are refused from here on.
    drop(listener);
    let _ = closing.send(Closing::Gracefully);
    // Every permit back: every connection closed. A connection whose client reads
    // slowly holds its permit for as long as its response lasts: past the deadline,
    // the connections left are dropped (each task ends at its next poll, and gives its
    // permit back; the wait for that is bounded too, should a task be stuck in a
    // system call).
    let grace = limits.shutdown_timeout.min(MAX_DURATION);
    if tokio::time::timeout(grace, permits.acquire_many(max))
        .await
        .is_err()
    {
        let _ = closing.send(Closing::Now);
        let _ = tokio::time::timeout(DROP_WAIT, permits.acquire_many(max)).await;
    }
    stopped
}

/// What [`serve`] serves a connection's requests with: axum's [`Router`](axum::Router) (the hub's
/// routes beside the publication), or the publication's own service.
pub(super) trait Served:
    tower_service::Service<
        hyper::Request<hyper::body::Incoming>,
        Response = axum::http::Response<Body>,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> Served for S where
    S: tower_service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = axum::http::Response<Body>,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// How long the server waits, once it has told its connections to drop, for their
/// tasks to end.
const DROP_WAIT: Duration = Duration::from_secs(1);

/// What the server tells its connections of its stopping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Closing {
    /// It serves.
    No,
    /// It stops: a connection finishes the response in flight, then closes.
    Gracefully,
    /// Its shutdown deadline has passed: a connection closes at once.
    Now,
}

/// Whether an accept error means the listener itself cannot be used any more.
fn listener_unusable(e: &io::Error) -> bool {
    #[cfg(unix)]
    if let Some(code) = e.raw_os_error() {
        return matches!(
            code,
            libc::EBADF | libc::ENOTSOCK | libc::EOPNOTSUPP | libc::EINVAL
        );
    }
    e.kind() == io::ErrorKind::InvalidInput
}

/// Whether an accept error is that of the one connection being accepted.
fn one_connections(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
            | io::ErrorKind::WouldBlock
            | io::ErrorKind::PermissionDenied
    )
}

/// Serves one connection until it closes, its client is too slow or idle (see
/// [`ServeLimits`]), it is closed to make room, or the server stops; then gives back its
/// slot.
async fn connection<S: Served>(
    stream: TcpStream,
    router: S,
    http: Arc<http1::Builder>,
    idle: Duration,
    mut closing: watch::Receiver<Closing>,
    registered: Registered,
) {
    let activity = Arc::clone(&registered.activity);
    let registry = Arc::clone(&registered.registry);
    // Who is asking, for a route that answers by it (the hub takes notifications from its
    // publishers' addresses only).
    let peer = stream.peer_addr().ok();
    let io = TokioIo::new(Watched {
        stream,
        activity: Arc::clone(&activity),
    });
    let tower = TowerToHyperService::new(router);
    let busy = Arc::clone(&activity);
    let stopping_seen = closing.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
        request.extensions_mut().insert(CutShort(Arc::clone(&busy)));
        if let Some(peer) = peer {
            request
                .extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
        }
        // A request being answered is no idleness, however long the answer takes to
        // start (a Source Description read from a slow disk).
        let answering = Answering::start(&busy);
        let in_flight = InFlight::start(&busy, &registry);
        // A request with a body (which GET and HEAD need not have, and which is not
        // read) has hyper close the connection after the response, adding `close`: a
        // `keep-alive` said beside it would contradict it (RFC 9112 9.6).
        let keep_alive = request.version() == Version::HTTP_11
            && !asks_to_close(request.headers())
            && !has_body(request.headers())
            && *stopping_seen.borrow() == Closing::No;
        // Refused before the router sees it: which host a request is for must be
        // unambiguous, or a proxy and this server could take it for different ones.
        let response = host_is_valid(request.version(), request.headers())
            .then(|| hyper::service::Service::call(&tower, request));
        async move {
            let Some(response) = response else {
                drop(answering);
                return Ok(bad_host().map(|body| InFlight::around(body, in_flight)));
            };
            let mut response = response.await;
            // HTTP/1.1 keeps a connection open unless a side says `close`, and hyper
            // says nothing more; but wget2 (1.99) takes a response without
            // `Connection: keep-alive` as the end of the connection, and opened one
            // connection per file, a third of a small file's time here. nginx says it
            // on every response too. Were the connection to close after all (the
            // server stopping meanwhile), hyper adds `close`, which a client obeys.
            // A 304 has no content and hyper writes no Content-Length for it, but axum
            // sets `Content-Length: 0` on every empty body, and hyper keeps it in the
            // answer to HEAD: HEAD's 304 would then differ from GET's, and claim a
            // length that is not the 200's (RFC 9110 8.6 allows only that).
            if let Ok(response) = &mut response
                && response.status() == StatusCode::NOT_MODIFIED
            {
                response.headers_mut().remove(CONTENT_LENGTH);
            }
            if keep_alive && let Ok(response) = &mut response {
                response
                    .headers_mut()
                    .entry(CONNECTION)
                    .or_insert(HeaderValue::from_static("keep-alive"));
            }
            drop(answering);
            // In flight until hyper drops the body, having sent it or not.
            response.map(|response| response.map(|body| InFlight::around(body, in_flight)))
        }
    });
    let conn = http.serve_connection(io, service);
    tokio::pin!(conn);
    let mut stopping = false;
    match *closing.borrow_and_update() {
        Closing::No => {}
        Closing::Gracefully => {
            stopping = true;
            conn.as_mut().graceful_shutdown();
        }
        Closing::Now => return,
    }
    let idle_check = tokio::time::sleep(idle);
    tokio::pin!(idle_check);
    loop {
        tokio::select! {
            // Its errors are the client's (gone, too slow with its head): nothing to
            // report but the closing.
            _ = conn.as_mut() => break,
            // A body cut short, all before it written: dropping the connection closes
            // it, and the client sees a body shorter than its Content-Length.
            () = activity.written_out.notified() => break,
            // Told to make room: closed unless a response started meanwhile (the
            // connection is not polled here, so none starts during this check).
            () = activity.close_for_room.notified() => {
                if activity.in_flight.load(Ordering::Relaxed) == 0 {
                    break;
                }
                activity.closing_for_room.store(false, Ordering::Relaxed);
                registered.registry.changed.notify_one();
            }
            () = idle_check.as_mut() => match activity.idle_until(idle) {
                Some(deadline) => idle_check.as_mut().reset(deadline),
                // Dropping the connection closes it.
                None => break,
            },
            changed = closing.changed() => {
                // The sender gone: the server has returned, and nothing is served on.
                if changed.is_err() {
                    break;
                }
                match *closing.borrow_and_update() {
                    Closing::No => {}
                    Closing::Gracefully => {
                        if !stopping {
                            stopping = true;
                            conn.as_mut().graceful_shutdown();
                        }
                    }
                    // Dropping the connection closes it, mid-response.
                    Closing::Now => break,
                }
            }
        }
    }
}

/// Whether a request says it has a body: a `Transfer-Encoding`, or a `Content-Length`
/// other than 0.
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(TRANSFER_ENCODING)
        || headers
            .get_all(CONTENT_LENGTH)
            .iter()
            .any(|length| length.as_bytes().trim_ascii() != b"0")
}

/// Whether a request's `Host` is as RFC 9112 3.2 requires: one line (none only in an
/// HTTP/1.0 request), whose value is `host[:port]` or empty (a target without an
/// authority). A server MUST answer 400 otherwise; hyper does not check.
fn host_is_valid(version: Version, headers: &HeaderMap) -> bool {
    let mut hosts = headers.get_all(HOST).iter();
    match (hosts.next(), hosts.next()) {
        (None, _) => version < Version::HTTP_11,
        (Some(host), None) => host_and_port(host.as_bytes()),
        (Some(_), Some(_)) => false,
    }
}

/// Whether `value` is `uri-host [ ":" port ]` (RFC 9110 7.2, RFC 3986 3.2.2 and 3.2.3):
/// an IP literal in brackets, or a registered name (IPv4 addresses among them) of
/// unreserved characters, percent-encodings and sub-delimiters; then, after a colon,
/// digits only. Empty is allowed (a target with no authority). No userinfo.
fn host_and_port(value: &[u8]) -> bool {
    let (host, port) = if let Some(rest) = value.strip_prefix(b"[") {
        let Some(end) = rest.iter().position(|&b| b == b']') else {
            return false;
        };
        let literal = &rest[..end];
        let ip = !literal.is_empty()
            && literal
                .iter()
                .all(|&b| b.is_ascii_hexdigit() || matches!(b, b':' | b'.'));
        let future = literal.first().is_some_and(|&b| b == b'v' || b == b'V');
        if !(ip || future) {
            return false;
        }
        match &rest[end + 1..] {
            [] => return true,
            [b':', port @ ..] => (&b""[..], port),
            _ => return false,
        }
    } else {
        match value.iter().rposition(|&b| b == b':') {
            Some(colon) => (&value[..colon], &value[colon + 1..]),
            None => (value, &b""[..]),
        }
    };
    let mut i = 0;
    while i < host.len() {
        let b = host[i];
        if b == b'%' {
            if !host
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            {
                return false;
            }
            i += 3;
            continue;
        }
        if !(b.is_ascii_alphanumeric() || b"-._~!$&'()*+;=".contains(&b)) {
            return false;
        }
        i += 1;
    }
    port.iter().all(u8::is_ascii_digit)
}

/// The 400 to a request without one valid `Host`; the connection is closed after it,
/// as a client that sends such a request cannot be trusted to frame the next one.
fn bad_host() -> axum::response::Response {
    let mut response = axum::response::Response::new(axum::body::Body::from(
        "a request needs one valid Host header\n",
    ));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(CONNECTION, HeaderValue::from_static("close"));
    response
}

/// Whether a request's `Connection` header holds the `close` option.
fn asks_to_close(headers: &HeaderMap) -> bool {
    headers.get_all(CONNECTION).iter().any(|value| {
        value.to_str().is_ok_and(|value| {
            value
                .split(',')
                .any(|option| option.trim().eq_ignore_ascii_case("close"))
        })
    })
}

/// When bytes last moved on a connection, and whether a request is being answered.
struct Activity {
    start: Instant,
    /// Milliseconds from `start` to the last read or write that moved bytes.
    last: AtomicU64,
    /// Requests being answered (more than one only if a client pipelines).
    answering: AtomicUsize,
    /// A response's body was cut short ([`CutShort`]).
    cut_short: AtomicBool,
    /// Told once what was sent before a cut is written out.
    written_out: Notify,
    /// Responses whose body hyper still holds, from the request's call on: while there
    /// is one, the connection is not closed to make room.
    in_flight: AtomicUsize,
    /// Told to close to make room for a new connection ([`Registry::close_idlest`]).
    close_for_room: Notify,
    /// Chosen to close to make room, and not yet gone.
    closing_for_room: AtomicBool,
}

impl Activity {
    fn new() -> Activity {
        Activity {
            start: Instant::now(),
            last: AtomicU64::new(0),
            answering: AtomicUsize::new(0),
            cut_short: AtomicBool::new(false),
            written_out: Notify::new(),
            in_flight: AtomicUsize::new(0),
            close_for_room: Notify::new(),
            closing_for_room: AtomicBool::new(false),
        }
    }

    /// When bytes last moved.
    fn last_moved(&self) -> Instant {
        self.start + Duration::from_millis(self.last.load(Ordering::Relaxed))
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last.store(now, Ordering::Relaxed);
    }

    /// `None` once the connection has been idle for `idle`; else when to look again.
    fn idle_until(&self, idle: Duration) -> Option<Instant> {
        let now = Instant::now();
        if self.answering.load(Ordering::Relaxed) > 0 {
            return Some(now + idle);
        }
        let last = self.start + Duration::from_millis(self.last.load(Ordering::Relaxed));
        let deadline = last + idle;
        (deadline > now).then_some(deadline)
    }
}

/// The connections being served, so that room can be made at the limit.
#[derive(Default)]
struct Registry {
    connections: Mutex<Connections>,
    /// Told when a response ends (its connection may now be closed for room) and when
    /// a connection chosen to close had a response start first.
    changed: Notify,
}

#[derive(Default)]
struct Connections {
    next: u64,
    open: HashMap<u64, Arc<Activity>>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Connections> {
        // Entries are inserted and removed whole: a panic elsewhere leaves none half
        // written.
        self.connections.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells the connection idle longest with no response in flight to close, unless
    /// one told before is still closing (one slot is wanted at a time). A scan of every
    /// connection, made only at the limit: a list kept in idle order would cost every
    /// request a lock instead.
    fn close_idlest(&self) {
        let connections = self.lock();
        let open = connections.open.values();
        if open
            .clone()
            .any(|c| c.closing_for_room.load(Ordering::Relaxed))
        {
            return;
        }
        let idlest = open
            .filter(|c| c.in_flight.load(Ordering::Relaxed) == 0)
            .min_by_key(|c| c.last_moved());
        if let Some(idlest) = idlest {
            idlest.closing_for_room.store(true, Ordering::Relaxed);
            idlest.close_for_room.notify_one();
        }
    }
}

/// A connection's place in the [`Registry`] and its slot, both given back when it is
/// dropped.
struct Registered {
    registry: Arc<Registry>,
    id: u64,
    activity: Arc<Activity>,
    _permit: OwnedSemaphorePermit,
}

impl Registered {
    fn new(registry: &Arc<Registry>, permit: OwnedSemaphorePermit) -> Registered {
        let activity = Arc::new(Activity::new());
        let mut connections = registry.lock();
        let id = connections.next;
        connections.next += 1;
        connections.open.insert(id, Arc::clone(&activity));
        drop(connections);
        Registered {
            registry: Arc::clone(registry),
            id,
            activity,
            _permit: permit,
        }
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.registry.lock().open.remove(&self.id);
    }
}

/// A response in flight on a connection, from its request's call until hyper drops its
/// body (sent whole, or the connection gone).
struct InFlight {
    activity: Arc<Activity>,
    registry: Arc<Registry>,
}

impl InFlight {
    fn start(activity: &Arc<Activity>, registry: &Arc<Registry>) -> InFlight {
        activity.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight {
            activity: Arc::clone(activity),
            registry: Arc::clone(registry),
        }
    }

    /// `body`, which keeps `in_flight` until it is dropped.
    fn around(body: Body, in_flight: InFlight) -> Body {
        Body::new(Tracked {
            body,
            _in_flight: in_flight,
        })
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.activity.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.registry.changed.notify_one();
    }
}

/// A response body and its [`InFlight`].
struct Tracked {
    body: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    // hyper frames the response by it (and an empty body's exact 0 is how it knows a
    // HEAD's or a 304's has nothing to send).
    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// A response body's way to end its connection when it cannot send the length it
/// promised (a file that shrank while it was sent): the connection is closed as soon as
/// everything written before is flushed to the socket. Ending the body early instead
/// makes hyper close the connection at once, with what it still holds unwritten lost.
/// In every request's extensions.
#[derive(Clone)]
pub(super) struct CutShort(Arc<Activity>);

impl CutShort {
    /// Closes the connection once what it holds is written; the body sends nothing more.
    pub(super) fn close_once_written(&self) {
        self.0.cut_short.store(true, Ordering::Relaxed);
    }
}

/// A request being answered, for as long as this lives.
struct Answering(Arc<Activity>);

impl Answering {
    fn start(activity: &Arc<Activity>) -> Answering {
        activity.answering.fetch_add(1, Ordering::Relaxed);
        Answering(Arc::clone(activity))
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        // Idleness counts from the end of the answer.
        self.0.touch();
        self.0.answering.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A connection's stream that records when bytes move.
struct Watched {
    stream: TcpStream,
    activity: Arc<Activity>,
}

impl Watched {
    /// Records progress: a read or write that moved bytes (a read of none is the end).
    fn moved<T>(&self, polled: Poll<io::Result<T>>, bytes: bool) -> Poll<io::Result<T>> {
        if bytes && matches!(polled, Poll::Ready(Ok(_))) {
            self.activity.touch();
        }
        polled
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let bytes = buf.filled().len() > before;
        self.moved(polled, bytes)
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write(cx, buf);
        let bytes = matches!(polled, Poll::Ready(Ok(n)) if n > 0);
        self.moved(polled, bytes)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        let bytes = matches!(polled, Poll::Ready(Ok(n)) if n > 0);
        self.moved(polled, bytes)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let polled = Pin::new(&mut self.stream).poll_flush(cx);
        // hyper flushes the stream only once its own buffer is written out: after a
        // body was cut short, that is when the connection may close.
        if matches!(polled, Poll::Ready(Ok(()))) && self.activity.cut_short.load(Ordering::Relaxed)
        {
            self.activity.written_out.notify_one();
        }
        polled
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
