//! A blocking driver: one request at a time over any blocking HTTP stack (a
//! [`Transport`]), ureq's with the feature `ureq` ([`UreqTransport`]). No async runtime.
//!
//! ```no_run
//! # #[cfg(feature = "ureq")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use resourcesync_destination::blocking::{self, UreqTransport};
//! use resourcesync_destination::{StopToken, SyncOptions};
//!
//! let options = SyncOptions::new("https://example.com/".parse()?, "mirror");
//! let synced = blocking::sync(&options, &mut UreqTransport::new(), &StopToken::new(), &mut ())?;
//! println!("{synced}");
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "ureq"))]
//! # fn main() {}
//! ```

use std::io::Read;
use std::time::Instant;

use http::{HeaderMap, StatusCode};

use crate::inventory::KeptInventory;
use crate::options::SyncOptions;
use crate::run::{Finished, Observer, Run, StopToken, SyncError};
use crate::synced::Synced;

/// A blocking HTTP stack: makes one request and gives back the response's status,
/// headers and body, or why the exchange failed (a connection refused, a timeout, in
/// words a person acts on). It must follow no redirect (the client checks each against
/// its policy and asks for it) and must not decode a `Content-Encoding` it did not ask
/// for.
pub trait Transport {
    /// Makes `request`.
    fn fetch(&mut self, request: http::Request<()>) -> Result<Response<'_>, String>;

    /// Called once before a run's first request with the client's config: a transport
    /// that resolves host names itself checks each address against
    /// [`resourcesync_client::Config::policy`] here
    /// ([`resourcesync_client::policy::Policy::check_address`]):
    /// a name that resolves to a loopback, private or link-local address when the Source
    /// is not on one (DNS rebinding, a listed internal host) is the client's to refuse,
    /// and it never sees the address. Nothing by default.
    fn prepare(&mut self, config: &resourcesync_client::Config) {
        let _ = config;
    }
}

/// A response of a [`Transport`]: its head, and its body to read.
#[derive(Debug)]
#[non_exhaustive]
pub struct Response<'a> {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, read to its end (or to the limit the client sets).
    pub body: Body<'a>,
}

impl<'a> Response<'a> {
    /// A response of `status` with `headers`, its body read from `body`.
    pub fn new(status: StatusCode, headers: HeaderMap, body: impl Read + 'a) -> Response<'a> {
        Response {
            status,
            headers,
            body: Body(Box::new(body)),
        }
    }
}

/// The body of a [`Response`].
pub struct Body<'a>(Box<dyn Read + 'a>);

impl std::fmt::Debug for Body<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Body")
    }
}

impl Read for Body<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.read(buf)
    }
}

/// Runs a sync with `transport`, one request at a time, until the client is done or
/// `stop` is tripped; a baseline follows in the same call when the Change Lists cannot
/// carry the directory forward. `observer` sees every event, the progress and the run's
/// notices. What it came to, or why it could not start or go on.
pub fn sync(
    options: &SyncOptions,
    transport: &mut dyn Transport,
    stop: &StopToken,
    observer: &mut dyn Observer,
) -> Result<Synced, SyncError> {
    let started = Instant::now();
    // Refused before DIR is opened (`Run::start` asks again) and before the start's
    // name is resolved: a run that cannot start makes nothing and asks nothing.
    options.check()?;
    let mut options = options.clone();
    // A Source named by a host name is on whatever address kinds that name resolves to
    // now (a Source on localhost is on loopback): those are allowed, as an address
    // written in the URI would be, and every later resolution is held to them.
    let kinds = options.source.to_url().ok().and_then(|url| {
        let host = url.host_str()?.to_owned();
        let port = url.port_or_known_default()?;
        use std::net::ToSocketAddrs;
        let found = (host.as_str(), port).to_socket_addrs().ok()?;
        Some(
            found
                .filter_map(|a| resourcesync_client::policy::SpecialAddress::of(a.ip()))
                .collect::<Vec<_>>(),
        )
    });
    loop {
        let kinds = kinds.clone().unwrap_or_default();
        let run = Run::start(&options, stop.clone(), |config| {
            let mut policy = config.policy.clone();
            for kind in kinds {
                policy = policy.allow_address_kind(kind);
            }
            config.with_policy(policy)
        })?;
        match drive(run, transport, observer)? {
            Finished::Done(mut synced) => {
                synced.seconds = started.elapsed().as_secs_f64();
                return Ok(synced);
            }
            Finished::Baseline(baseline) => options = baseline,
        }
    }
}

/// Drives `run` (with any [`KeptInventory`]) to its end with `transport`, one request at
/// a time: what [`sync`] does for one run. A [`Finished::Baseline`] is the caller's to
/// start.
pub fn drive<I: KeptInventory>(
    mut run: Run<I>,
    transport: &mut dyn Transport,
    observer: &mut dyn Observer,
) -> Result<Finished, SyncError> {
    if let Some((prefix, _)) = run.options().mirrors.first() {
        // The async driver answers from a mirror on disk; this one would fetch those URLs
        // from the network instead, without a word.
        return Err(SyncError::Unsupported(format!(
            "a mirror on disk ({prefix}=...) with the blocking driver"
        )));
    }
    let stop = run.stop_token().clone();
    transport.prepare(run.client().config());
    while !run.is_over() {
        if let Some(request) = run.poll_request(Instant::now()) {
            let (id, keep) = (request.id, run.destination().keeps_body(&request));
            let (client, dest) = run.parts();
            match transport.fetch(request.http) {
                Ok(response) => {
                    // A stop ends a body that trickles, between two reads.
                    let body = Stoppable {
                        inner: response.body,
                        stop: &stop,
                    };
                    let received =
                        dest.receive(client, id, keep, response.status, &response.headers, body);
                    match received {
                        // The body's temporary file could not be written (a full disk):
                        // that request's failure, as the async driver has it; the run
                        // goes on to save what it did.
                        Err(crate::DestinationError::Io { path, source })
                            if client.in_flight(id) =>
                        {
                            let reason = format!("{}: {source}", path.display());
                            client.handle_failure(id, reason, Instant::now())?
                        }
                        other => other?,
                    }
                }
                Err(reason) => client.handle_failure(id, reason, Instant::now())?,
            }
        } else {
            // Nothing to send: wait for the next retry or save, a stop checked at least
            // every second (and no spin when there is nothing to wait for).
            let at = run
                .poll_timeout()
                .unwrap_or_else(|| Instant::now() + std::time::Duration::from_millis(100));
            let wait = at.saturating_duration_since(Instant::now());
            std::thread::sleep(wait.min(std::time::Duration::from_secs(1)));
            if Instant::now() >= at {
                run.client().handle_timeout(Instant::now());
            }
        }
        run.settle(observer)?;
    }
    run.finish(observer)
}

/// A body that ends (with an error, the request's failure) once a stop is asked for.
struct Stoppable<'a, R> {
    inner: R,
    stop: &'a StopToken,
}

impl<R: Read> Read for Stoppable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.stop.is_stopped() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Interrupted,
                "the run was asked to stop",
            ));
        }
        self.inner.read(buf)
    }
}

/// A [`Transport`] over a ureq [`ureq::Agent`] that follows no redirect and takes
/// every status as a response.
#[cfg(feature = "ureq")]
#[derive(Debug)]
pub struct UreqTransport {
    agent: ureq::Agent,
    /// The agent's configuration, to build it again with a checked resolver
    /// ([`Transport::prepare`]).
    config: ureq::config::Config,
}

#[cfg(feature = "ureq")]
impl UreqTransport {
    /// An agent of ureq's defaults, but that follows no redirect (the client checks them),
    /// takes an error status as a response (the client decides what it means), and gives
    /// up on a Source that does not answer: the client's own bounds
    /// ([`resourcesync_client::Bounds`]: 60 s to connect or to answer, 30 minutes
    /// in all for one request), which a blocking read cannot otherwise enforce.
    pub fn new() -> UreqTransport {
        let bounds = resourcesync_client::Bounds::default();
        let config = ureq::Agent::config_builder()
            .max_redirects(0)
            .max_redirects_will_error(false)
            .http_status_as_error(false)
            .timeout_connect(Some(bounds.request_timeout))
            .timeout_recv_response(Some(bounds.request_timeout))
            .timeout_global(Some(bounds.max_request_time))
            .user_agent(concat!("resourcesync-rs/", env!("CARGO_PKG_VERSION")))
            .build();
        UreqTransport {
            agent: config.clone().into(),
            config,
        }
    }
}

/// ureq's resolver, with every address it returns checked against the client's policy
/// before ureq may connect to it (what `asynchronous::CheckedResolver` is to reqwest).
#[cfg(feature = "ureq")]
#[derive(Debug)]
struct CheckedResolver {
    policy: resourcesync_client::policy::Policy,
    inner: ureq::unversioned::resolver::DefaultResolver,
}

#[cfg(feature = "ureq")]
impl ureq::unversioned::resolver::Resolver for CheckedResolver {
    fn resolve(
        &self,
        uri: &http::Uri,
        config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let found = self.inner.resolve(uri, config, timeout)?;
        let host = uri.host().unwrap_or_default();
        let allowed = self
            .policy
            .allowed_addresses(host, found.iter().copied())
            .map_err(|refusal| {
                ureq::Error::Io(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    refusal.to_string(),
                ))
            })?;
        let mut addresses = self.empty();
        for address in allowed {
            addresses.push(address);
        }
        Ok(addresses)
    }
}

#[cfg(feature = "ureq")]
impl Default for UreqTransport {
    fn default() -> UreqTransport {
        UreqTransport::new()
    }
}

#[cfg(feature = "ureq")]
impl Transport for UreqTransport {
    fn prepare(&mut self, config: &resourcesync_client::Config) {
        let resolver = CheckedResolver {
            policy: config.policy.clone(),
            inner: Default::default(),
        };
        let connector = ureq::unversioned::transport::DefaultConnector::new();
        self.agent = ureq::Agent::with_parts(self.config.clone(), connector, resolver);
    }

    fn fetch(&mut self, request: http::Request<()>) -> Result<Response<'_>, String> {
        let response = self.agent.run(request).map_err(|e| e.to_string())?;
        let (head, body) = response.into_parts();
        Ok(Response::new(head.status, head.headers, body.into_reader()))
    }
}

#[cfg(all(test, feature = "ureq"))]
mod tests {
    use resourcesync_client::{Config, Mode};

    use super::{Transport, UreqTransport};

    #[test]
    fn ureq_does_not_connect_to_a_name_that_resolves_to_loopback_for_a_source_elsewhere() {
        // A port nothing listens on: a refused connection would be another error.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let request = |uri: &str| http::Request::get(uri).body(()).unwrap();
        let target = format!("http://localhost:{port}/");
        let mut transport = UreqTransport::new();
        let config = Config::new("http://example.com/".parse().unwrap(), Mode::Explore).unwrap();
        transport.prepare(&config);
        let refused = transport.fetch(request(&target)).map(drop).unwrap_err();
        assert!(refused.contains("loopback"), "{refused}");
        // The Source on loopback: resolved, allowed, and the connection refused.
        let config = Config::new(target.parse().unwrap(), Mode::Explore).unwrap();
        transport.prepare(&config);
        let failed = transport.fetch(request(&target)).map(drop).unwrap_err();
        assert!(!failed.contains("loopback"), "{failed}");
    }
}
