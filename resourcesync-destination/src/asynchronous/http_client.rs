//! The async driver's HTTP client, [`Http`].

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{ACCEPT, HOST, USER_AGENT};
use http::uri::Authority;
use http::{HeaderMap, HeaderValue, StatusCode, Uri};
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::SendRequest;
use hyper_util::client::legacy::Client as Pool;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use resourcesync_client::policy::Policy;
use tokio::net::TcpStream;

/// What a failed resolution or connection carries.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The user agent every request names.
const AGENT: &str = concat!("resourcesync-rs/", env!("CARGO_PKG_VERSION"));

/// How long an idle connection is kept for the next request to its host (reqwest's
/// default).
const IDLE: Duration = Duration::from_secs(90);

/// TCP keepalive: the idle time before the first probe and between probes (reqwest's).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// The roots a Source's certificate is checked against: the webpki roots and the
/// system's (its store, or `SSL_CERT_FILE` / `SSL_CERT_DIR`), as reqwest built them here
/// (object_store asks reqwest for both): a Source signed by an organisation's own
/// authority, installed on the machine, is trusted. A certificate of the system's that
/// cannot be read is skipped, as reqwest skips it; none readable among some is an error.
fn roots() -> Result<rustls::RootCertStore, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    let (added, ignored) = roots.add_parsable_certificates(native.certs);
    if added == 0 && ignored > 0 {
        let errors: Vec<String> = native.errors.iter().map(|e| e.to_string()).collect();
        let why = if errors.is_empty() {
            format!("{ignored} unreadable")
        } else {
            errors.join("; ")
        };
        return Err(format!(
            "no valid root certificate in the system's store: {why}"
        ));
    }
    Ok(roots)
}

/// The async driver's HTTP client: hyper's pooled client (HTTP/1.1, and HTTP/2 where a
/// server over TLS offers it) over rustls with the webpki roots and the system's, each
/// host name resolved by the system and every address
/// checked against the client's policy before a connection is made
/// ([`CheckedResolver`]). A URL for which the environment names a proxy (`HTTP_PROXY`,
/// `HTTPS_PROXY`, `ALL_PROXY`, less `NO_PROXY`, read as curl reads them) goes through
/// reqwest instead, which speaks to proxies; the proxy resolves the Source's name then,
/// and the policy's check of addresses applies to the proxy's name.
///
/// Why hyper's client and not reqwest for every request: a sync of many small files
/// makes a request per file, and reqwest parses each `http::Uri` the client made into a
/// `Url` again (its host written back as text, checked for international names), runs
/// it through its redirect and retry layers (redirects are the client's to follow,
/// [`Request`](resourcesync_client::Request)), and then hands hyper's client a request
/// made back from it. 10,000 files of 1 KiB from nginx, alternated: the command's CPU
/// 0.81 s through reqwest, 0.62 s through this (perf had put `url` at 5.5 % and reqwest's
/// layers at 4 %; the rest went with the allocations and wake-ups between them).
///
/// Cheap to clone, one pool of connections among the clones. It follows no redirect: a
/// 3xx response is the client's to judge.
#[derive(Clone, Debug)]
pub struct Http {
    direct: Pool<Connector, Empty<Bytes>>,
    /// What [`Http::get_on`] opens its connections with (the pool's, without TLS).
    plain: HttpConnector<Resolver>,
    proxies: Arc<Matcher>,
    /// Built at the first URL sent to a proxy: most runs have none.
    proxied: Arc<OnceLock<Result<reqwest::Client, String>>>,
    policy: Option<Policy>,
    idle_per_host: usize,
}

impl Http {
    /// A client whose every resolved address `policy` checks (`None`: any address), which
    /// keeps at most `idle_per_host` idle connections to a host.
    pub fn new(policy: Option<Policy>, idle_per_host: usize) -> Http {
        Http::with_proxies(policy, idle_per_host, Matcher::from_system())
    }

    /// [`Http::new`] with the proxies `proxies` names rather than the environment's.
    pub(crate) fn with_proxies(
        policy: Option<Policy>,
        idle_per_host: usize,
        proxies: Matcher,
    ) -> Http {
        let mut plain = HttpConnector::new_with_resolver(Resolver(policy.clone()));
        // The TLS layer takes the `https` URLs through it.
        plain.enforce_http(false);
        // As reqwest sets them: no delay for a small request, and an idle connection
        // that a NAT or a firewall dropped found out in about a minute, not at the
        // request's timeout.
        plain.set_nodelay(true);
        plain.set_keepalive(Some(KEEPALIVE));
        plain.set_keepalive_interval(Some(KEEPALIVE));
        plain.set_keepalive_retries(Some(3));
        let connector = Connector {
            plain: plain.clone(),
            tls: Arc::new(OnceLock::new()),
        };
        let direct = Pool::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE)
            .pool_max_idle_per_host(idle_per_host)
            .build(connector);
        Http {
            direct,
            plain,
            proxies: Arc::new(proxies),
            proxied: Arc::new(OnceLock::new()),
            policy,
            idle_per_host,
        }
    }

    /// The client of the URLs sent to a proxy: reqwest, which reads the same variables.
    fn proxied(&self) -> Result<&reqwest::Client, String> {
        let built = self.proxied.get_or_init(|| {
            let mut builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(AGENT)
                .tcp_nodelay(true)
                .pool_max_idle_per_host(self.idle_per_host);
            if let Some(policy) = &self.policy {
                builder = builder.dns_resolver(Arc::new(CheckedResolver(policy.clone())));
            }
            builder
                .build()
                .map_err(|e| described("the client for proxies cannot be built", &e))
        });
        built.as_ref().map_err(Clone::clone)
    }

    /// [`Http::get`] on a connection of `kept`, the caller's own, for an `http` URL no
    /// proxy takes: opened to the URL's authority when `kept` holds none to it (or the
    /// one it holds was closed), and left there for the next request. Other URLs go
    /// through [`Http::get`]'s pool.
    ///
    /// Why a connection of one's own: a task that sends its requests one after another
    /// on its connection needs no pool to check a connection out of and back into (a
    /// lock, a channel, a wake-up each way, for every request), which is most of what
    /// a small file costs the client over a plain GET (10,000 files of 1 KiB from nginx:
    /// the figures in benches/README.md, "A connection a worker").
    ///
    /// A request on a kept connection that the server closed (its keep-alive ended while
    /// the connection was idle, or as the request went) before the response's head came
    /// is sent again once, on a new connection: when it was not sent, as the pool does;
    /// when it was, because a GET is idempotent (RFC 9110, 9.2.2).
    pub(crate) async fn get_on<'k>(
        &self,
        kept: &'k mut Kept,
        uri: &Uri,
    ) -> Result<Response<'k>, String> {
        let Some(authority) = uri.authority().filter(|_| {
            uri.scheme() == Some(&http::uri::Scheme::HTTP) && self.proxies.intercept(uri).is_none()
        }) else {
            return self.get(uri).await;
        };
        // Origin-form (the URI's own path and query, not parsed again), with the Host a
        // client names (the port left out where it is the scheme's).
        let mut target = http::uri::Parts::default();
        target.path_and_query = Some(match uri.path_and_query() {
            Some(path) => path.clone(),
            None => http::uri::PathAndQuery::from_static("/"),
        });
        let position = |kept: &Kept| kept.0.iter().position(|(to, ..)| to == authority);
        let mut found = position(kept);
        // Made once a connection, kept with it: not a string formatted a request.
        let host = match found.and_then(|at| kept.0.get(at)) {
            Some((_, host, ..)) => host.clone(),
            None => {
                let host = match authority.port_u16() {
                    Some(port) if port != 80 => format!("{}:{port}", authority.host()),
                    _ => authority.host().to_owned(),
                };
                HeaderValue::try_from(host).map_err(|e| described("request failed", &e))?
            }
        };
        let target = Uri::from_parts(target).map_err(|e| described("request failed", &e))?;
        let fresh = || {
            let mut request = http::Request::new(Empty::new());
            *request.uri_mut() = target.clone();
            let headers = request.headers_mut();
            headers.insert(HOST, host.clone());
            headers.insert(USER_AGENT, HeaderValue::from_static(AGENT));
            headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
            request
        };
        let mut request = fresh();
        loop {
            // The connection found above, or after a retry another to the same authority.
            let at = found.take().or_else(|| position(kept));
            let (mut sender, mut driver, reused) = match at.map(|at| kept.0.remove(at)) {
                Some((_, _, sender, driver @ Some(_))) if !sender.is_closed() => {
                    (sender, driver, true)
                }
                _ => {
                    let (sender, driver) = self.connect(uri).await?;
                    (sender, Some(driver), false)
                }
            };
            if let Err(e) = driven(&mut driver, sender.ready()).await {
                if reused {
                    continue;
                }
                return Err(described("request failed", &e));
            }
            match driven(&mut driver, sender.try_send_request(request)).await {
                Ok(response) => {
                    // The most recently used last; the least, first to go.
                    if kept.0.len() >= KEPT {
                        kept.0.remove(0);
                    }
                    kept.0
                        .push((authority.clone(), host.clone(), sender, driver));
                    let (head, body) = response.into_parts();
                    return Ok(Response {
                        status: head.status,
                        headers: head.headers,
                        body: Body::Direct(body),
                        driver: kept.0.last_mut().map(|(.., driver)| driver),
                    });
                }
                Err(mut e) => match e.take_message() {
                    // Not sent, on a connection that had served: once more, anew.
                    Some(unsent) if reused => request = unsent,
                    // Sent on a connection that had served, which ended (closed or
                    // reset) before the response's head was whole: the server's
                    // keep-alive ended as the request went, its close crossing the
                    // request (the driver is polled only while the task uses it, so a
                    // close that came while the task was elsewhere may be learnt only
                    // now). A GET may be sent again (RFC 9110, 9.2.2: idempotent):
                    // once, on a new connection, whose failure is the request's. Where
                    // part of a head had come, curl would not send it again; a GET
                    // asked twice costs the server one more answer, no harm. Not a
                    // head the server got wrong: that one is said.
                    None if reused && !e.error().is_parse() && !e.error().is_user() => {
                        request = fresh();
                    }
                    _ => return Err(described("request failed", e.error())),
                },
            }
        }
    }

    /// A new HTTP/1.1 connection to `uri`'s authority, through the policy's resolver, and
    /// its driver, which the caller polls while it uses the connection ([`driven`]).
    async fn connect(&self, uri: &Uri) -> Result<(SendRequest<Empty<Bytes>>, Driver), String> {
        let mut plain = self.plain.clone();
        let io = match tower_service::Service::call(&mut plain, uri.clone()).await {
            Ok(io) => io,
            Err(e) => return Err(described("cannot connect", &e)),
        };
        let (sender, connection) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| described("cannot connect", &e))?;
        Ok((sender, Box::pin(connection)))
    }

    /// Sends a GET of `uri` and waits for the response's head; the failure is in words a
    /// user acts on ("cannot connect: connection refused").
    pub(crate) async fn get(&self, uri: &Uri) -> Result<Response<'static>, String> {
        if self.proxies.intercept(uri).is_some() {
            return match self.proxied()?.get(uri.to_string()).send().await {
                Ok(mut response) => Ok(Response {
                    status: response.status(),
                    headers: std::mem::take(response.headers_mut()),
                    body: Body::Proxied(response),
                    driver: None,
                }),
                Err(e) => Err(failure(&e)),
            };
        }
        let mut request = http::Request::new(Empty::new());
        *request.uri_mut() = uri.clone();
        let headers = request.headers_mut();
        headers.insert(USER_AGENT, HeaderValue::from_static(AGENT));
        headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        match self.direct.request(request).await {
            Ok(response) => {
                let (head, body) = response.into_parts();
                Ok(Response {
                    status: head.status,
                    headers: head.headers,
                    body: Body::Direct(body),
                    driver: None,
                })
            }
            Err(e) => {
                let what = if e.is_connect() {
                    "cannot connect"
                } else {
                    "request failed"
                };
                Err(described(what, &e))
            }
        }
    }
}

/// The connections a task keeps for its next requests ([`Http::get_on`]), one an
/// authority, [`KEPT`] at most, the least recently used closed first; none at first.
/// A response left unread (a request the client cancelled while its body came) is
/// dropped by its reader; when the connection's driver is next polled (the worker's next
/// request to its authority), hyper closes it unless the body had come whole, and that
/// request opens another rather than waiting on it. Till then it stays open, unread.
///
/// Each connection's driver is polled by the task that uses it, while it uses it
/// ([`driven`]), not spawned as a task of its own: the socket's bytes go from the driver
/// to the body in the same poll, with no wake-up of another task between them. 200
/// files of 1 MiB from nginx on 2 cores, by hand (15 and 21 alternated rounds): 0.367-0.369
/// CPU-s against 0.381-0.383, 1-3 % more throughput; the serve bench's 7 rounds of both
/// builds as processes did not tell them apart (benches/README.md, session 44).
#[derive(Debug, Default)]
pub(crate) struct Kept(Vec<KeptConnection>);

/// A kept connection: its authority, the Host field its requests name, its sender, and
/// its driver (`None` once it ended: not polled again).
type KeptConnection = (
    Authority,
    HeaderValue,
    SendRequest<Empty<Bytes>>,
    Option<Driver>,
);

/// An HTTP/1.1 connection's driver: it reads the socket and writes the requests.
type Driver = Pin<Box<hyper::client::conn::http1::Connection<TokioIo<TcpStream>, Empty<Bytes>>>>;

/// `future`, with `driver` polled beside it (first: what it reads, `future` may take in
/// the same poll); once the driver ends (the connection closed, or failed), `future`
/// alone, which then learns it from hyper.
async fn driven<F: Future>(driver: &mut Option<Driver>, future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        if let Some(connection) = driver
            && connection.as_mut().poll(cx).is_ready()
        {
            // Its failure is the request's, said there.
            *driver = None;
        }
        future.as_mut().poll(cx)
    })
    .await
}

/// The most connections a task keeps: a Source's host, and the hosts its resources are
/// on or redirect to (one connection a host would be opened and closed a request
/// where a Source's resources redirect to another host).
const KEPT: usize = 4;

/// A response's head, and its body to read (with its connection's driver, on a
/// connection of a [`Kept`]'s).
#[derive(Debug)]
pub(crate) struct Response<'k> {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    body: Body,
    driver: Option<&'k mut Option<Driver>>,
}

#[derive(Debug)]
enum Body {
    Direct(hyper::body::Incoming),
    Proxied(reqwest::Response),
}

impl Response<'_> {
    /// The body's next chunk, `None` at its end; the failure in words.
    pub(crate) async fn chunk(&mut self) -> Result<Option<Bytes>, String> {
        match &mut self.body {
            Body::Direct(body) => loop {
                let frame = match &mut self.driver {
                    Some(driver) => driven(driver, body.frame()).await,
                    None => body.frame().await,
                };
                match frame {
                    None => return Ok(None),
                    Some(Ok(frame)) => {
                        // Trailers are not the body's.
                        if let Ok(data) = frame.into_data() {
                            return Ok(Some(data));
                        }
                    }
                    Some(Err(e)) => {
                        let what = if e.is_timeout() {
                            "timed out"
                        } else {
                            "the body broke off"
                        };
                        return Err(described(what, &e));
                    }
                }
            },
            Body::Proxied(response) => response.chunk().await.map_err(|e| failure(&e)),
        }
    }
}

/// `what` went wrong, with the innermost cause of `e`: the outer errors of an HTTP stack
/// name only their layer ("client error (Connect)"); the cause (connection refused, no
/// such host, a TLS error) is the last of the sources.
fn described(what: &str, e: &(dyn std::error::Error + 'static)) -> String {
    let mut innermost = None;
    let mut source = e.source();
    while let Some(cause) = source {
        innermost = Some(cause);
        source = cause.source();
    }
    format!("{what}: {}", innermost.unwrap_or(e))
}

/// Why a request through reqwest failed, as [`described`].
fn failure(e: &reqwest::Error) -> String {
    let what = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else if e.is_body() || e.is_decode() {
        "the body broke off"
    } else {
        "request failed"
    };
    described(what, e)
}

/// The connector of [`Http`]'s pool: TCP for an `http` URL, and TLS over it for an
/// `https` one, with HTTP/2 where the server offers it (ALPN). The TLS configuration is
/// made at the first `https` URL: reading the system's root certificates took 5 ms
/// (strace: 440 calls, a file for each root), before the first request of every run,
/// where a Source over plain HTTP needs none of it.
#[derive(Clone, Debug)]
struct Connector {
    plain: HttpConnector<Resolver>,
    tls: Arc<OnceLock<Result<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>, String>>>,
}

impl Connector {
    /// The TLS connector over `plain`: rustls (ring), the webpki roots and the system's.
    fn tls(
        plain: &HttpConnector<Resolver>,
    ) -> Result<hyper_rustls::HttpsConnector<HttpConnector<Resolver>>, String> {
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots()?)
        .with_no_client_auth();
        Ok(hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(config)
            .https_only()
            .enable_all_versions()
            .wrap_connector(plain.clone()))
    }
}

/// What [`Connector`] connects.
type Stream = hyper_rustls::MaybeHttpsStream<hyper_util::rt::TokioIo<tokio::net::TcpStream>>;

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // Each call readies the connector it uses.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        if uri.scheme() == Some(&http::uri::Scheme::HTTPS) {
            let tls = self.tls.get_or_init(|| Connector::tls(&self.plain)).clone();
            Box::pin(async move {
                let mut tls = tls.map_err(BoxError::from)?;
                std::future::poll_fn(|cx| tls.poll_ready(cx)).await?;
                tls.call(uri).await
            })
        } else if uri.scheme() == Some(&http::uri::Scheme::HTTP) {
            let mut plain = self.plain.clone();
            Box::pin(async move {
                std::future::poll_fn(|cx| plain.poll_ready(cx)).await?;
                let tcp = plain.call(uri).await?;
                Ok(hyper_rustls::MaybeHttpsStream::Http(tcp))
            })
        } else {
            // The client's policy refuses other schemes before a request is made.
            let refused = format!("not an http or https URL: {uri}");
            Box::pin(std::future::ready(Err(refused.into())))
        }
    }
}

/// The system's resolver, with every address it returns checked against the client's
/// policy before reqwest may connect to it: a host name that resolves to a loopback,
/// private or link-local address (when the Source is not on one) is refused, as the
/// client refuses such an address written in a URI. The client itself never resolves a
/// name; this is the check its policy leaves to the driver ([`Policy::check_address`]).
#[derive(Debug)]
pub struct CheckedResolver(pub Policy);

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let allowed = resolve(Some(&policy), name.as_str()).await?;
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// [`CheckedResolver`] as hyper's connector asks for it, or the system's resolver alone
/// for no policy.
#[derive(Clone, Debug)]
struct Resolver(Option<Policy>);

impl tower_service::Service<Name> for Resolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let policy = self.0.clone();
        Box::pin(async move {
            let allowed = resolve(policy.as_ref(), name.as_str()).await?;
            Ok(allowed.into_iter())
        })
    }
}

/// The addresses `host` resolves to that `policy` allows; the policy's refusal if it
/// allows none of them.
async fn resolve(policy: Option<&Policy>, host: &str) -> Result<Vec<SocketAddr>, BoxError> {
    let found: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
    match policy {
        Some(policy) => Ok(policy.allowed_addresses(host, found)?),
        None => Ok(found),
    }
}

#[cfg(test)]
mod tests {
    use reqwest::dns::Resolve;
    use resourcesync_client::policy::Policy;

    use std::io::{BufRead, BufReader, Write};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{CheckedResolver, Http, Kept};

    async fn resolve(source: &str, name: &str) -> Result<Vec<std::net::SocketAddr>, String> {
        let policy = Policy::new(&source.parse().unwrap()).unwrap();
        let resolving = CheckedResolver(policy).resolve(name.parse().unwrap());
        resolving
            .await
            .map(|addrs| addrs.collect())
            .map_err(|e| e.to_string())
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_unless_the_source_is_there() {
        // What DNS rebinding does: a name the policy cannot judge from the URI.
        let refused = resolve("http://example.com/", "localhost")
            .await
            .unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        let allowed = resolve("http://127.0.0.1:8080/", "localhost")
            .await
            .unwrap();
        assert!(allowed.iter().any(|a| a.ip().is_loopback()));
    }

    /// A test server's URL, the connections it accepted, a message for each it closed,
    /// and each request's first line.
    struct Server {
        base: String,
        accepted: Arc<AtomicUsize>,
        closes: tokio::sync::mpsc::UnboundedReceiver<()>,
        lines: Arc<std::sync::Mutex<Vec<String>>>,
    }

    /// When a test server closes a connection, without saying so.
    #[derive(Clone, Copy, PartialEq)]
    enum Ends {
        /// When the client does.
        Never,
        /// After each response.
        AfterEach,
        /// When the connection's second request has come, unanswered (the close
        /// crossing the request, a keep-alive's end as a client meets it on a busy
        /// machine).
        AtSecond,
        /// Answering the connection's second request with bytes that are no HTTP (a
        /// server that got it wrong), then closing.
        GarbageAtSecond,
    }

    /// A server on 127.0.0.1 that answers each request on a connection with `body`
    /// (`Content-Length` as `length` says; the connection closed as `ends` says), and
    /// counts the connections it accepted.
    fn server(body: &'static [u8], length: usize, ends: Ends) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        let (closed, closes) = tokio::sync::mpsc::unbounded_channel();
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = lines.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { return };
                count.fetch_add(1, Ordering::SeqCst);
                let closed = closed.clone();
                let seen = seen.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    for n in 0.. {
                        // The request's head, to its empty line.
                        let mut line = String::new();
                        let mut first = true;
                        loop {
                            line.clear();
                            match reader.read_line(&mut line) {
                                Ok(0) | Err(_) => return,
                                Ok(_) if line == "\r\n" => break,
                                Ok(_) if first => {
                                    first = false;
                                    seen.lock().unwrap().push(line.trim_end().to_owned());
                                }
                                Ok(_) => {}
                            }
                        }
                        if ends == Ends::AtSecond && n == 1 {
                            let _ = stream.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                        if ends == Ends::GarbageAtSecond && n == 1 {
                            let _ = stream.write_all(b"NOT HTTP AT ALL\r\n\r\n");
                            let _ = stream.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                        let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {length}\r\n\r\n");
                        if stream.write_all(head.as_bytes()).is_err()
                            || stream.write_all(body).is_err()
                        {
                            return;
                        }
                        if ends == Ends::AfterEach {
                            drop(reader);
                            let _ = stream.shutdown(std::net::Shutdown::Both);
                            drop(stream);
                            let _ = closed.send(());
                            return;
                        }
                    }
                });
            }
        });
        Server {
            base,
            accepted,
            closes,
            lines,
        }
    }

    /// The body of `response`, to its end.
    async fn read(mut response: super::Response<'_>) -> Vec<u8> {
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.unwrap() {
            body.extend_from_slice(&chunk);
        }
        body
    }

    fn direct() -> Http {
        // No proxy, whatever the test's environment says: the direct path.
        let none = hyper_util::client::proxy::matcher::Matcher::builder().build();
        Http::with_proxies(None, 1, none)
    }

    #[tokio::test]
    async fn a_kept_connection_carries_the_next_request() {
        let Server {
            base,
            accepted,
            lines,
            ..
        } = server(b"ok", 2, Ends::Never);
        let http = direct();
        let mut kept = Kept::default();
        for n in 0..5 {
            let uri: http::Uri = format!("{base}r/{n}?q={n}").parse().unwrap();
            let response = http.get_on(&mut kept, &uri).await.unwrap();
            assert_eq!(response.status, 200);
            assert_eq!(read(response).await, b"ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        // Origin-form: the path and query, not the absolute URI.
        assert_eq!(lines.lock().unwrap()[4], "GET /r/4?q=4 HTTP/1.1");
    }

    #[tokio::test]
    async fn requests_that_alternate_between_hosts_keep_a_connection_to_each() {
        // A Source whose resources redirect to another host: its requests alternate.
        let Server {
            base: a,
            accepted: to_a,
            ..
        } = server(b"ok", 2, Ends::Never);
        let Server {
            base: b,
            accepted: to_b,
            ..
        } = server(b"ok", 2, Ends::Never);
        let http = direct();
        let mut kept = Kept::default();
        for n in 0..4 {
            for base in [&a, &b] {
                let uri: http::Uri = format!("{base}r/{n}").parse().unwrap();
                let response = http.get_on(&mut kept, &uri).await.unwrap();
                assert_eq!(read(response).await, b"ok");
            }
        }
        assert_eq!(to_a.load(Ordering::SeqCst), 1);
        assert_eq!(to_b.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_replaced_not_a_failure() {
        // The server ends each connection after its response, as a keep-alive that
        // timed out while the connection was idle would.
        let Server {
            base,
            accepted,
            mut closes,
            ..
        } = server(b"ok", 2, Ends::AfterEach);
        let http = direct();
        let mut kept = Kept::default();
        for n in 0..3 {
            assert_eq!(got(&http, &mut kept, &base, n).await.unwrap(), b"ok");
            // Closed by the server before the next request is made (what an idle
            // connection's end is). The client may learn it before the request or
            // only as it goes (the test below): either way it is sent on another.
            let waited = std::time::Duration::from_secs(10);
            tokio::time::timeout(waited, closes.recv())
                .await
                .unwrap()
                .unwrap();
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_request_the_server_s_close_crossed_is_sent_again_on_a_new_connection() {
        // Each connection serves one request and closes at the next, unanswered: what
        // a client meets when a keep-alive's end crosses its request (and what CI met
        // in the test above, the close learnt only as the request went).
        let Server { base, accepted, .. } = server(b"ok", 2, Ends::AtSecond);
        let http = direct();
        let mut kept = Kept::default();
        for n in 0..3 {
            assert_eq!(got(&http, &mut kept, &base, n).await.unwrap(), b"ok");
        }
        // Each request after the first: sent on the kept one, then on a new one.
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_response_the_server_got_wrong_is_said_not_asked_again() {
        // The second request on the kept connection is answered with no HTTP: that
        // answer is the request's failure, not a close to send it again past.
        let Server { base, accepted, .. } = server(b"ok", 2, Ends::GarbageAtSecond);
        let http = direct();
        let mut kept = Kept::default();
        assert_eq!(got(&http, &mut kept, &base, 0).await.unwrap(), b"ok");
        let failed = got(&http, &mut kept, &base, 1).await;
        assert!(failed.is_err(), "{failed:?}");
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    /// The body of `r/{n}` under `base`, asked on `kept`, or why not.
    async fn got(http: &Http, kept: &mut Kept, base: &str, n: usize) -> Result<Vec<u8>, String> {
        let uri: http::Uri = format!("{base}r/{n}").parse().unwrap();
        Ok(read(http.get_on(kept, &uri).await?).await)
    }

    #[tokio::test]
    async fn a_response_left_unread_is_not_waited_for() {
        // Ten bytes of a hundred, then nothing: the first response never ends.
        let Server { base, accepted, .. } = server(b"0123456789", 100, Ends::Never);
        let http = direct();
        let mut kept = Kept::default();
        let uri: http::Uri = format!("{base}a").parse().unwrap();
        let response = http.get_on(&mut kept, &uri).await.unwrap();
        // Given up (a request the client cancelled).
        drop(response);
        let second = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            http.get_on(&mut kept, &uri),
        )
        .await
        .expect("the next request waited on the connection of one left unread");
        assert_eq!(second.unwrap().status, 200);
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_request_to_a_name_that_resolves_to_loopback_is_not_sent() {
        // Hyper's connector resolves through the same check.
        let policy = Policy::new(&"http://example.com/".parse().unwrap()).unwrap();
        // No proxy, whatever the test's environment says: the direct path.
        let none = || hyper_util::client::proxy::matcher::Matcher::builder().build();
        let http = Http::with_proxies(Some(policy), 1, none());
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let uri: http::Uri = format!("http://localhost:{port}/").parse().unwrap();
        let refused = http.get(&uri).await.map(|r| r.status).unwrap_err();
        assert!(refused.starts_with("cannot connect: "), "{refused}");
        assert!(refused.contains("loopback"), "{refused}");
        // A worker's own connection is opened through the same check.
        let refused = (http.get_on(&mut Kept::default(), &uri).await)
            .map(|r| r.status)
            .unwrap_err();
        assert!(refused.starts_with("cannot connect: "), "{refused}");
        assert!(refused.contains("loopback"), "{refused}");
        // Without a policy: resolved, and the connection refused.
        let http = Http::with_proxies(None, 1, none());
        let refused = http.get(&uri).await.map(|r| r.status).unwrap_err();
        assert!(refused.starts_with("cannot connect: "), "{refused}");
        assert!(!refused.contains("loopback"), "{refused}");
    }
}
