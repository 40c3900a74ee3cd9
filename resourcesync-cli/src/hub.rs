//! `resourcesync serve --hub`: the WebSub hub of [`resourcesync_websub::Hub`] beside a
//! publication, its endpoint an axum route, its requests (intent verifications, topic
//! fetches, content distribution) sent with reqwest, and its subscriptions saved in a file
//! after each change, so that a restart keeps them.
//!
//! [`HubServer::open`] restores the subscriptions; [`HubServer::router`] is the endpoint
//! (`POST`), to merge into a server's router at the hub's path; [`HubServer::run`] drives
//! the hub until a shutdown future completes. What happens goes to the caller's
//! [`HubReporter`]: nothing here prints.

use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{Method, StatusCode};
use axum::response::{IntoResponse, Response};
use resourcesync_websub::{Hub, HubEvent, HubOptions, SubscriptionRecord, Transmit};
use tokio::sync::Notify;

/// The largest body the hub takes from a publisher, fetches from a topic or reads of a
/// verification's answer.
pub const MAX_BODY: usize = 16 << 20;

/// The largest answer to a verification read: an echoed challenge is 32 characters.
const MAX_ECHO: usize = 4096;

/// What the hub tells its operator.
#[derive(Debug)]
#[non_exhaustive]
pub enum HubNotice<'a> {
    /// Something happened at the hub.
    Event(&'a HubEvent),
    /// The subscriptions could not be saved: they live on in memory, and the next change
    /// tries again.
    NotSaved(&'a HubError),
    /// A request to the hub was refused (a 4xx or 5xx status) for `reason`, the text
    /// its answer carries: a subscription to a topic the hub does not relay, for a
    /// callback it does not send to, a ping from an address that may not publish.
    Refused {
        /// The status answered.
        status: StatusCode,
        /// Why, as the answer says.
        reason: &'a str,
        /// The hub's policy does not allow the callback's host: the operator can
        /// ([`Answer::callback_not_allowed`](resourcesync_websub::hub::Answer::callback_not_allowed)).
        callback_not_allowed: bool,
    },
}

/// Where the hub's notices go (the command prints them).
pub type HubReporter = Arc<dyn Fn(HubNotice<'_>) + Send + Sync>;

/// Why the hub could not start or save.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HubError {
    /// The subscriptions file could not be read or written.
    #[error("the hub's subscriptions file {}: {source}", path.display())]
    State {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The subscriptions file is not one the hub wrote.
    #[error("the hub's subscriptions file {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The HTTP client could not be made.
    #[error("the hub's HTTP client: {0}")]
    Http(#[from] reqwest::Error),
}

/// A hub served over HTTP: the state machine, what wakes its driver, where it saves.
pub struct HubServer {
    url: resourcesync_model::Uri,
    /// The addresses notifications and pings are taken from: the Source's. Empty: the
    /// loopback addresses (a Source publishing beside the hub).
    publishers: Vec<std::net::IpAddr>,
    hub: Mutex<Hub>,
    wake: Notify,
    state: Option<PathBuf>,
    report: HubReporter,
    /// For requests to callbacks: names resolved and held to the policy.
    callbacks: reqwest::Client,
    /// For fetches of the operator's topics.
    topics: reqwest::Client,
    /// Requests out at once: a hub with many subscribers sends one body to each, and
    /// would otherwise open as many connections (and descriptors) at once.
    outbound: Arc<tokio::sync::Semaphore>,
}

/// Requests a hub has out at once ([`HubServer`]); the rest wait their turn.
pub const MAX_OUTBOUND: usize = 256;

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl HubServer {
    /// A hub as `options` say, taking notifications and pings from `publishers` (none:
    /// from loopback addresses only), with the subscriptions saved in `state` (if given,
    /// and there) restored, the expired ones dropped.
    pub fn open(
        options: HubOptions,
        publishers: Vec<std::net::IpAddr>,
        state: Option<PathBuf>,
        report: HubReporter,
    ) -> Result<Arc<HubServer>, HubError> {
        let mut hub = Hub::new(options);
        if let Some(path) = &state {
            match std::fs::read(path) {
                Ok(bytes) => {
                    let records: Vec<SubscriptionRecord> =
                        serde_json::from_slice(&bytes).map_err(|source| HubError::Unreadable {
                            path: path.clone(),
                            source,
                        })?;
                    hub.restore(records, SystemTime::now());
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(HubError::State {
                        path: path.clone(),
                        source,
                    });
                }
            }
        }
        // No redirect is followed: a callback that redirects would take the hub's
        // requests to an address the policy never saw. Callbacks go through a resolver
        // that holds a name's addresses to the policy (a name resolving, or rebound, to
        // 127.0.0.1 is refused); topics, the operator's own, through the system's.
        let builder = || {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .timeout(hub.options().retry.timeout)
        };
        let callbacks = builder()
            .dns_resolver(Arc::new(PolicyResolver(hub.options().callbacks.clone())))
            .build()?;
        let topics = builder().build()?;
        Ok(Arc::new(HubServer {
            url: hub.options().url.clone(),
            publishers,
            hub: Mutex::new(hub),
            wake: Notify::new(),
            state,
            report,
            callbacks,
            topics,
            outbound: Arc::new(tokio::sync::Semaphore::new(MAX_OUTBOUND)),
        }))
    }

    /// The hub's URL.
    pub fn url(&self) -> &resourcesync_model::Uri {
        &self.url
    }

    /// The active subscriptions and the bodies waiting in their queues.
    pub fn load(&self) -> (usize, usize) {
        self.lock().load()
    }

    fn lock(&self) -> MutexGuard<'_, Hub> {
        // A panic while the lock was held leaves the hub as it was between two calls,
        // each of which leaves it whole: go on with it.
        self.hub
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The endpoint, at `path`: `POST` a subscription, an unsubscription, a publish ping
    /// or a notification.
    pub fn router(self: &Arc<Self>, path: &str) -> Router {
        Router::new()
            .route(path, axum::routing::any(endpoint))
            .layer(DefaultBodyLimit::max(MAX_BODY))
            .with_state(Arc::clone(self))
    }

    /// Drives the hub until `shutdown` completes: sends what it hands out, passes the
    /// answers back, reports its events, saves the subscriptions when they change.
    pub async fn run(self: Arc<Self>, shutdown: impl Future<Output = ()> + Send) {
        tokio::pin!(shutdown);
        loop {
            let now = SystemTime::now();
            let (transmits, events, deadline) = {
                let mut hub = self.lock();
                // A request is taken from the hub only with a place to send it in: the
                // hub times each from when it hands it out, so none waits in a queue
                // here while its time runs (a finished one wakes this loop).
                let mut transmits = Vec::new();
                while let Ok(permit) = Arc::clone(&self.outbound).try_acquire_owned() {
                    match hub.poll_transmit(now) {
                        Some(transmit) => transmits.push((transmit, permit)),
                        None => break,
                    }
                }
                let events: Vec<HubEvent> = std::iter::from_fn(|| hub.poll_event()).collect();
                (transmits, events, hub.poll_timeout())
            };
            self.settle(&events);
            for (transmit, permit) in transmits {
                tokio::spawn(Arc::clone(&self).send(transmit, permit));
            }
            let wait = deadline
                .map(|d| d.duration_since(SystemTime::now()).unwrap_or_default())
                .unwrap_or(Duration::from_secs(3600));
            tokio::select! {
                () = &mut shutdown => return,
                () = self.wake.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Reports `events` and saves the subscriptions if one changed them.
    fn settle(&self, events: &[HubEvent]) {
        let changed = events.iter().any(|e| {
            matches!(
                e,
                HubEvent::Subscribed { .. }
                    | HubEvent::Unsubscribed { .. }
                    | HubEvent::Expired { .. }
                    | HubEvent::Gone { .. }
            )
        });
        for event in events {
            (self.report)(HubNotice::Event(event));
        }
        if changed && let Err(e) = self.save() {
            (self.report)(HubNotice::NotSaved(&e));
        }
    }

    /// Writes the subscriptions to the state file: a new file, private, synced and
    /// renamed over the old one.
    fn save(&self) -> Result<(), HubError> {
        let Some(path) = &self.state else {
            return Ok(());
        };
        let records = self.lock().subscriptions();
        let json = serde_json::to_vec_pretty(&records).map_err(|source| HubError::Unreadable {
            path: path.clone(),
            source,
        })?;
        write_private(path, &json).map_err(|source| HubError::State {
            path: path.clone(),
            source,
        })
    }

    /// Sends one request and hands its answer to the hub.
    async fn send(self: Arc<Self>, transmit: Transmit, permit: tokio::sync::OwnedSemaphorePermit) {
        let Transmit {
            id,
            request,
            to_callback,
            ..
        } = transmit;
        let http = if to_callback {
            &self.callbacks
        } else {
            &self.topics
        };
        let (parts, body) = request.into_parts();
        let limit = if parts.method == Method::GET && parts.uri.query().is_some() {
            MAX_ECHO
        } else {
            MAX_BODY
        };
        let answer = async {
            let url = parts.uri.to_string();
            let response = http
                .request(parts.method, url)
                .headers(parts.headers)
                .body(body)
                .send()
                .await
                .ok()?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = read_bounded(response, limit).await?;
            Some((status, headers, body))
        }
        .await;
        drop(permit);
        {
            let mut hub = self.lock();
            match answer {
                Some((status, headers, body)) => {
                    hub.handle_response(id, status, &headers, &body, SystemTime::now());
                }
                None => hub.handle_error(id, SystemTime::now()),
            }
        }
        self.wake.notify_one();
    }
}

/// Resolves a callback's name and keeps the addresses its policy allows; none left is an
/// error, and no connection is made.
struct PolicyResolver(resourcesync_websub::CallbackPolicy);

impl reqwest::dns::Resolve for PolicyResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.0.clone();
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let kept: Vec<std::net::SocketAddr> = found
                .filter(|address| policy.allows_address(address.ip()))
                .collect();
            if kept.is_empty() {
                let refused: Box<dyn std::error::Error + Send + Sync> =
                    format!("{host} resolves only to addresses the hub's policy refuses").into();
                return Err(refused);
            }
            let addresses: reqwest::dns::Addrs = Box::new(kept.into_iter());
            Ok(addresses)
        })
    }
}

/// The body of `response`, or `None` past `limit` bytes or on a read error.
async fn read_bounded(mut response: reqwest::Response, limit: usize) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.ok()? {
        if body.len() + chunk.len() > limit {
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    Some(body)
}

/// The hub's endpoint.
async fn endpoint(
    State(server): State<Arc<HubServer>>,
    request: axum::extract::Request,
) -> Response {
    let (parts, body) = request.into_parts();
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        let reason = "the body is too large";
        (server.report)(HubNotice::Refused {
            status: StatusCode::PAYLOAD_TOO_LARGE,
            reason,
            callback_not_allowed: false,
        });
        return (StatusCode::PAYLOAD_TOO_LARGE, format!("{reason}\n")).into_response();
    };
    // Who asks: a notification or a ping is taken from the Source's addresses only.
    let peer = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|info| info.0.ip());
    let may_publish = peer.is_some_and(|ip| {
        let ip = match ip {
            std::net::IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, std::net::IpAddr::V4),
            v4 => v4,
        };
        if server.publishers.is_empty() {
            ip.is_loopback()
        } else {
            server.publishers.contains(&ip)
        }
    });
    let answer = server
        .lock()
        .handle_request(&parts.method, &parts.headers, &body, may_publish);
    // What the request queued is sent now, not at the driver's next deadline.
    server.wake.notify_one();
    if !answer.status.is_success() {
        (server.report)(HubNotice::Refused {
            status: answer.status,
            reason: &answer.body,
            callback_not_allowed: answer.callback_not_allowed,
        });
    }
    let mut response = (answer.status, format!("{}\n", answer.body)).into_response();
    if answer.status == StatusCode::METHOD_NOT_ALLOWED {
        response.headers_mut().insert(
            axum::http::header::ALLOW,
            axum::http::HeaderValue::from_static("POST"),
        );
    }
    response
}

/// Replaces `path` with `bytes`: written to a new file readable by its owner alone,
/// synced, renamed over `path`.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut staged = path.as_os_str().to_owned();
    staged.push(".new");
    let staged = PathBuf::from(staged);
    // A file (or a link) left there is removed, not written through: the new one is made
    // here, with its mode, or not at all.
    match std::fs::remove_file(&staged) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&staged)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&staged, path)?;
    // The rename is durable once the directory is.
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::File::open(parent)?.sync_all()
}
