//! The simulated Source ([`crate::source`]) served over HTTP on 127.0.0.1 by axum, with
//! faults injected per path and attempt: the Source a Destination driver's tests sync from.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::source::Source;

/// What the server does wrong, by path and how many times that path was asked for.
type Faults = Arc<Mutex<Box<dyn FnMut(&str, u32) -> Option<Fault> + Send>>>;

/// What the server does wrong to one request.
#[derive(Clone, Debug)]
pub enum Fault {
    /// This status, with a short body, instead of the response.
    Status(u16),
    /// The body stops after this many bytes (the connection is closed early).
    Truncate(usize),
    /// One byte of the body is changed.
    Corrupt,
    /// A 302 to this location.
    Redirect(String),
    /// The response waits this long.
    Slow(u64),
    /// The body comes one byte every this many milliseconds (a Source that never stops
    /// and never finishes).
    Trickle(u64),
    /// A 200 with these bytes instead of the response (garbage where a document was).
    Body(Vec<u8>),
    /// The body stops after this many bytes, its connection left open and silent: a
    /// Source that hangs in the middle of a body (the response's headers are sent).
    Stall(usize),
}

/// The runtime a [`Served`] of its own serves on: two workers.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A Source on 127.0.0.1, served until dropped.
pub struct Served {
    /// The simulated Source, to read what it holds.
    pub source: Arc<Mutex<Source>>,
    faults: Faults,
    robots: Arc<Mutex<Option<String>>>,
    log: Arc<Mutex<Log>>,
    /// The base URL, `http://127.0.0.1:PORT/`.
    pub base: String,
    // A farm's Sources share the farm's runtime (`None` here).
    _runtime: Option<tokio::runtime::Runtime>,
}

/// What the server saw: requests in flight now and at most, and when each began.
#[derive(Debug, Default)]
struct Log {
    in_flight: usize,
    max_in_flight: usize,
    starts: Vec<(std::time::Instant, String)>,
    /// The HTTP version of each request, in the order they came.
    versions: Vec<axum::http::Version>,
}

impl Served {
    /// Publishes the Source `build` makes and serves it on 127.0.0.1.
    pub fn start(build: impl FnOnce(&mut Source)) -> Served {
        let runtime = runtime();
        let mut served = Served::start_on(runtime.handle(), build);
        served._runtime = Some(runtime);
        served
    }

    /// [`Served::start`] on a runtime of the caller's (a [`crate::farm::Farm`]'s).
    pub fn start_on(runtime: &tokio::runtime::Handle, build: impl FnOnce(&mut Source)) -> Served {
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let (served, app) = Served::app(base, build);
        runtime.spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        served
    }

    /// [`Served::start`] over TLS (`https://127.0.0.1:PORT/`), with the certificate
    /// [`crate::tls`] has for 127.0.0.1, offering the protocols `alpn` by ALPN (`h2`,
    /// `http/1.1`): HTTP/2 where the client and `alpn` agree on it, else HTTP/1.1.
    #[cfg(feature = "tls")]
    pub fn start_tls(alpn: &[&[u8]], build: impl FnOnce(&mut Source)) -> Served {
        let runtime = runtime();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("https://{}/", listener.local_addr().unwrap());
        let (mut served, app) = Served::app(base, build);
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(crate::tls::server_config(alpn)));
        runtime.spawn(async move {
            loop {
                let tcp = match listener.accept().await {
                    Ok((tcp, _)) => tcp,
                    // Out of descriptors, say: a moment's rest, as axum's loop takes,
                    // rather than a spin.
                    Err(e) => {
                        eprintln!("Served over TLS: accept: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (acceptor, app) = (acceptor.clone(), app.clone());
                tokio::spawn(async move {
                    // A client that refuses the certificate ends its handshake: nothing
                    // to serve.
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper_util::server::conn::auto::Builder::new(
                        hyper_util::rt::TokioExecutor::new(),
                    )
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
                });
            }
        });
        served._runtime = Some(runtime);
        served
    }

    /// The Source `build` makes at `base`, and the app that serves it.
    fn app(base: String, build: impl FnOnce(&mut Source)) -> (Served, axum::Router) {
        let mut source = Source::new();
        source.base = base.clone();
        build(&mut source);
        source.publish();
        let source = Arc::new(Mutex::new(source));
        let faults: Faults = Arc::new(Mutex::new(Box::new(|_: &str, _| None)));
        let robots: Arc<Mutex<Option<String>>> = Arc::default();
        let log: Arc<Mutex<Log>> = Arc::default();
        let asked: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
        let (s, f, r, l) = (source.clone(), faults.clone(), robots.clone(), log.clone());
        let app = axum::Router::new().fallback(
            move |version: axum::http::Version, uri: axum::http::Uri| {
                let (s, f, r, l, asked) =
                    (s.clone(), f.clone(), r.clone(), l.clone(), asked.clone());
                async move {
                    {
                        let mut log = l.lock().unwrap();
                        log.in_flight += 1;
                        log.max_in_flight = log.max_in_flight.max(log.in_flight);
                        log.starts
                            .push((std::time::Instant::now(), uri.path().to_owned()));
                        log.versions.push(version);
                    }
                    let robots = r.lock().unwrap().clone();
                    let (response, wait) = match robots {
                        Some(text) if uri.path() == "/robots.txt" => (
                            axum::response::Response::new(axum::body::Body::from(text)),
                            None,
                        ),
                        _ => respond(&s, &f, &asked, &uri),
                    };
                    if let Some(ms) = wait {
                        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                    }
                    l.lock().unwrap().in_flight -= 1;
                    response
                }
            },
        );
        let served = Served {
            source,
            faults,
            robots,
            log,
            base,
            _runtime: None,
        };
        (served, app)
    }

    /// The HTTP version of each request served so far, in the order they came.
    pub fn versions(&self) -> Vec<axum::http::Version> {
        self.log.lock().unwrap().versions.clone()
    }

    /// Serves `text` as its robots.txt from now on.
    pub fn robots(&self, text: &str) {
        *self.robots.lock().unwrap() = Some(text.to_owned());
    }

    /// The most requests it had in flight at once (counted until each response's head).
    pub fn max_in_flight(&self) -> usize {
        self.log.lock().unwrap().max_in_flight
    }

    /// When each request it was asked began, and its path, in order.
    pub fn starts(&self) -> Vec<(std::time::Instant, String)> {
        self.log.lock().unwrap().starts.clone()
    }

    /// Reads or changes what the Source serves without publishing again (a list left as
    /// it was, as a Source that rewrites it rarely leaves it).
    pub fn edit<T>(&self, f: impl FnOnce(&mut Source) -> T) -> T {
        f(&mut self.source.lock().unwrap())
    }

    /// Changes the Source and publishes again.
    pub fn change(&self, f: impl FnOnce(&mut Source)) {
        let mut source = self.source.lock().unwrap();
        f(&mut source);
        source.publish();
    }

    /// What the server does wrong from now on, by path and attempt (0 for the first).
    pub fn faults(&self, f: impl FnMut(&str, u32) -> Option<Fault> + Send + 'static) {
        *self.faults.lock().unwrap() = Box::new(f);
    }

    /// Whether `dir` holds exactly the Source's resources (and the sync's own state).
    pub fn equals(&self, dir: &Path) -> Result<(), String> {
        let mut held = BTreeMap::new();
        collect(dir, dir, &mut held);
        self.holds(&held)
    }

    /// Whether `held` (each path under the Source's base and its bytes: the objects of a
    /// bucket's prefix, say) is exactly the Source's resources; what differs if not.
    pub fn holds(&self, held: &BTreeMap<String, Vec<u8>>) -> Result<(), String> {
        let held = held.clone();
        let source = self.source.lock().unwrap();
        let expected: BTreeMap<String, Vec<u8>> = source
            .resources
            .iter()
            .map(|(p, (b, _))| (p.clone(), b.clone()))
            .collect();
        if held == expected {
            Ok(())
        } else {
            let missing: Vec<_> = expected.keys().filter(|k| !held.contains_key(*k)).collect();
            let extra: Vec<_> = held.keys().filter(|k| !expected.contains_key(*k)).collect();
            let differ: Vec<_> = held
                .iter()
                .filter(|(k, v)| expected.get(*k).is_some_and(|e| e != *v))
                .map(|(k, _)| k)
                .collect();
            Err(format!(
                "missing {missing:?}, extra {extra:?}, differ {differ:?}"
            ))
        }
    }
}

fn respond(
    source: &Mutex<Source>,
    faults: &Faults,
    asked: &Mutex<BTreeMap<String, u32>>,
    uri: &axum::http::Uri,
) -> (axum::response::Response, Option<u64>) {
    use axum::body::Body;
    use axum::response::Response;
    let path = uri.path().trim_start_matches('/').to_owned();
    let attempt = {
        let mut asked = asked.lock().unwrap();
        let n = asked.entry(path.clone()).or_default();
        *n += 1;
        *n - 1
    };
    let mut source = source.lock().unwrap();
    let uri = format!("{}{}", source.base, path);
    let mut r = source.serve(&uri);
    let fault = (faults.lock().unwrap())(&path, attempt);
    let mut wait = None;
    match fault {
        Some(Fault::Status(s)) => {
            r.status = s;
            r.body = b"fault".to_vec();
        }
        Some(Fault::Redirect(to)) => {
            let response = Response::builder()
                .status(302)
                .header("location", to)
                .body(Body::empty())
                .unwrap();
            return (response, None);
        }
        Some(Fault::Slow(ms)) => wait = Some(ms),
        Some(Fault::Body(bytes)) => {
            r.status = 200;
            r.body = bytes;
        }
        Some(Fault::Trickle(ms)) => {
            let body = axum::body::Body::new(Trickle {
                bytes: r.body.clone().into_iter(),
                every: std::time::Duration::from_millis(ms),
                sleep: Box::pin(tokio::time::sleep(std::time::Duration::ZERO)),
            });
            let response = Response::builder()
                .status(r.status)
                .header("content-length", r.body.len().to_string())
                .body(body)
                .unwrap();
            return (response, None);
        }
        Some(Fault::Corrupt) => {
            if let Some(b) = r.body.last_mut() {
                *b ^= 0x20;
            }
        }
        Some(Fault::Stall(n)) => {
            let total = r.body.len();
            let mut builder = Response::builder()
                .status(r.status)
                .header("content-length", total.to_string());
            for (k, v) in &r.headers {
                builder = builder.header(k, v);
            }
            let body = axum::body::Body::new(Stalled {
                bytes: Some(r.body[..n.min(total)].to_vec()),
            });
            return (builder.body(body).unwrap(), None);
        }
        Some(Fault::Truncate(n)) => {
            // A body that promises more than it sends: the client sees the connection
            // end early.
            let total = r.body.len();
            let sent = r.body[..n.min(total)].to_vec();
            let stream = cut_body(sent);
            let response = Response::builder()
                .status(r.status)
                .header("content-length", total.to_string())
                .body(stream)
                .unwrap();
            return (response, None);
        }
        None => {}
    }
    let mut builder = Response::builder().status(r.status);
    for (k, v) in &r.headers {
        builder = builder.header(k, v);
    }
    (builder.body(Body::from(r.body)).unwrap(), wait)
}

/// A body that sends its bytes one at a time, `every` apart.
struct Trickle {
    bytes: std::vec::IntoIter<u8>,
    every: std::time::Duration,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl axum::body::HttpBody for Trickle {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        use std::future::Future;
        if self.sleep.as_mut().poll(cx).is_pending() {
            return std::task::Poll::Pending;
        }
        let next = tokio::time::Instant::now() + self.every;
        self.sleep.as_mut().reset(next);
        std::task::Poll::Ready(
            self.bytes
                .next()
                .map(|b| Ok(http_body::Frame::data(axum::body::Bytes::from(vec![b])))),
        )
    }
}

/// A body that sends its bytes, then nothing, for ever.
struct Stalled {
    bytes: Option<Vec<u8>>,
}

impl axum::body::HttpBody for Stalled {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        match self.bytes.take() {
            Some(bytes) => std::task::Poll::Ready(Some(Ok(http_body::Frame::data(
                axum::body::Bytes::from(bytes),
            )))),
            // Never woken: dropped when the client goes.
            None => std::task::Poll::Pending,
        }
    }
}

/// A body of these bytes that then fails, as a connection reset would.
fn cut_body(bytes: Vec<u8>) -> axum::body::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![
        Ok(bytes),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "cut",
        )),
    ];
    axum::body::Body::new(tokio_stream_iter(chunks))
}

fn tokio_stream_iter(
    items: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl axum::body::HttpBody<Data = axum::body::Bytes, Error = std::io::Error> + Send + 'static {
    StreamBody {
        items: items.into_iter(),
    }
}

struct StreamBody {
    items: std::vec::IntoIter<Result<Vec<u8>, std::io::Error>>,
}

impl axum::body::HttpBody for StreamBody {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(
            self.items
                .next()
                .map(|r| r.map(|b| http_body::Frame::data(axum::body::Bytes::from(b)))),
        )
    }
}

/// Every file under `dir` but the sync's own `.resourcesync`, by path relative to `root`.
pub fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == ".resourcesync") {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}
