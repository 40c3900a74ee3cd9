//! Following a Source (feature `reqwest`): a sync, then more as the Source changes, pushed
//! by its Change Notification channel (ResourceSync Change Notification 1.0.1, over
//! WebSub) and polled at an interval besides.
//!
//! A notification is never trusted for the Source's state: a verified one (for the topic,
//! signed with the follower's secret) only says that the Source changed, and the follower
//! runs an incremental sync, which reads the Source's Change Lists and applies what they
//! say with every rule a sync keeps (listed hashes checked, ownership, confinement, the
//! journal, `delete`), or a baseline when they cannot carry the directory forward. So a
//! notification lost, duplicated, reordered or forged never leaves the directory wrong: a
//! lost one is made up by the next or by the interval's run, a duplicate costs a run
//! that finds nothing, a forged one is ignored before that. Notifications that arrive
//! during a run make one more run after it.
//!
//! The channel is the one the Source's Capability List advertises, found by the first
//! run. The follower listens for its hub at a callback of its own (an unguessable path
//! under [`FollowOptions::listen`], or [`FollowOptions::callback_url`] where the hub must
//! reach it by another address), subscribes with a random secret, answers the hub's
//! verification only for what it asked ([`resourcesync_websub::Subscriber`]), renews
//! before the lease ends, and unsubscribes when stopped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use resourcesync_client::Event;
use resourcesync_client::follow::Follower;
use resourcesync_model::{Channel, DocumentKind, Uri, W3cDateTime};
use resourcesync_websub::{Accepted, Subscriber, SubscriberEvent, Verification};
use tokio::sync::mpsc;

use crate::asynchronous::{AsyncStop, sync_into};
use crate::destination::Destination;
use crate::directory::DirectoryDestination;
use crate::gate::Gate;
use crate::options::SyncOptions;
use crate::run::{Notice, Observer, SyncError};
use crate::synced::Synced;

/// The largest notification taken at the callback.
pub const MAX_NOTIFICATION: usize = 4 << 20;

/// Connections the callback serves at once.
pub const MAX_CALLBACK_CONNECTIONS: usize = 32;

/// How long one connection to the callback is served at most.
const CALLBACK_CONNECTION_TIME: Duration = Duration::from_secs(30);

/// How a follower follows.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FollowOptions {
    /// The syncs it runs (an incremental one each time; the first as the options say).
    pub sync: SyncOptions,
    /// Where its callback listens for the hub.
    pub listen: SocketAddr,
    /// The callback's URL as the hub reaches it, when that is not `http://` and the
    /// address bound (behind a proxy, a published port): its path is the one listened on.
    pub callback_url: Option<Uri>,
    /// A sync runs at least this often, notifications or not (without a channel, this is
    /// how the Source is followed).
    pub interval: Duration,
    /// The lease asked of the hub.
    pub lease: Duration,
    /// Where each run's requests wait before they are sent (shared with other followers
    /// in a harvest); by default nothing holds them back.
    pub gate: Gate,
}

impl FollowOptions {
    /// Follows as `sync` says, listening on 127.0.0.1 (a port of the system's choosing),
    /// a sync every 5 minutes besides the notifications, a lease of a day asked for.
    pub fn new(sync: SyncOptions) -> FollowOptions {
        FollowOptions {
            sync,
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            callback_url: None,
            interval: Duration::from_secs(300),
            lease: Duration::from_secs(24 * 3600),
            gate: Gate::unlimited(),
        }
    }

    /// Sends each run's requests through `gate`.
    #[must_use]
    pub fn with_gate(mut self, gate: Gate) -> FollowOptions {
        self.gate = gate;
        self
    }

    /// Listens for the hub on `addr`.
    #[must_use]
    pub fn with_listen(mut self, addr: SocketAddr) -> FollowOptions {
        self.listen = addr;
        self
    }

    /// Tells the hub `url` for the callback.
    #[must_use]
    pub fn with_callback_url(mut self, url: Uri) -> FollowOptions {
        self.callback_url = Some(url);
        self
    }

    /// Runs a sync at least every `interval`.
    #[must_use]
    pub fn with_interval(mut self, interval: Duration) -> FollowOptions {
        self.interval = interval.max(Duration::from_millis(10));
        self
    }

    /// Asks the hub for a lease of `lease`.
    #[must_use]
    pub fn with_lease(mut self, lease: Duration) -> FollowOptions {
        self.lease = lease;
        self
    }
}

/// What a follower tells its caller, besides each run's events.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum FollowNotice {
    /// A sync ran: why, and what it came to.
    Synced {
        /// What made it run.
        cause: Cause,
        /// What it did.
        synced: Box<Synced>,
    },
    /// The Source's channel, found in its Capability List.
    Channel(Channel),
    /// The callback listens, at this URL as the hub is told.
    Listening(Uri),
    /// The hub verified the subscription, for this lease.
    Subscribed(Duration),
    /// The hub verified the unsubscription.
    Unsubscribed,
    /// The hub refused the subscription; the follower polls.
    Denied(Option<String>),
    /// The hub the Source names is outside the sync's address policy (a loopback, private
    /// or link-local address the Source itself is not on): no request goes to it, and the
    /// follower polls.
    HubRefused(resourcesync_client::policy::PolicyError),
    /// A subscription request failed; it is sent again at `retry_at`.
    SubscriptionFailed {
        /// The hub's status, if it answered.
        status: Option<StatusCode>,
        /// Why, in the hub's words (its answer's first line), if it gave any.
        reason: Option<String>,
        /// When the request is sent again.
        retry_at: SystemTime,
    },
    /// A notification was taken; a sync follows.
    Notified {
        /// Its `from` and `until`, when it is a change notification that has them.
        interval: Option<(String, String)>,
        /// Its entries.
        entries: usize,
    },
    /// A body at the callback was ignored (and acknowledged), for this reason.
    Ignored(&'static str),
    /// A notification's interval does not follow the last one's: a gap, an overlap, or an
    /// older one (the run it makes is the same).
    Irregular(FollowerEvent),
    /// A run after the first could not start or go on (the destination busy with another
    /// run, the store or the Source out of reach): said, and the follower goes on, as
    /// after an incomplete run.
    RunFailed(String),
}

pub use resourcesync_client::follow::{Cause, FollowerEvent};

/// What sees a follower's runs and notices.
pub trait FollowObserver: Observer {
    /// Something the follower says.
    fn follow(&mut self, notice: &FollowNotice) {
        let _ = notice;
    }
}

/// A follower that watches nothing.
impl FollowObserver for () {}

/// What following came to when it was stopped.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Followed {
    /// Syncs run.
    pub runs: u64,
    /// Notifications taken.
    pub notifications: u64,
    /// Bodies ignored at the callback.
    pub ignored: u64,
    /// Runs after the first that failed ([`FollowNotice::RunFailed`]).
    pub failed: u64,
    /// The last run.
    pub last: Option<Synced>,
    /// Whether the hub ever verified a subscription: `None` when there was none to make
    /// (the Source names no hub), `Some(false)` when every attempt failed or was refused
    /// (every run was then polled: see [`refusal`](Self::refusal)).
    pub subscribed: Option<bool>,
    /// The last failure or refusal of a subscription since the hub last verified one,
    /// in words: the hub's status and reason, no answer, its denial, or the policy that
    /// kept the follower from it. With [`subscribed`](Self::subscribed) `Some(true)`: a
    /// subscription lost (a renewal refused), the runs since polled.
    pub refusal: Option<String>,
}

impl std::fmt::Display for Followed {
    /// `followed: N runs, N failed, N notifications, N ignored`, and when the hub never
    /// took the subscription `; never subscribed (WHY): every run was polled`, or when it
    /// refused it after it took it `; the subscription was lost (WHY): the runs since
    /// were polled`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "followed: {} runs, {} failed, {} notifications, {} ignored",
            self.runs, self.failed, self.notifications, self.ignored
        )?;
        match (self.subscribed, &self.refusal) {
            (Some(false), refusal) => write!(
                f,
                "; never subscribed ({}): every run was polled",
                refusal.as_deref().unwrap_or("no answer yet")
            )?,
            (Some(true), Some(refusal)) => write!(
                f,
                "; the subscription was lost ({refusal}): the runs since were polled"
            )?,
            _ => {}
        }
        Ok(())
    }
}

/// What `notice` says of the subscription, kept in `followed` for its end.
fn subscription_said(followed: &mut Followed, notice: &FollowNotice) {
    let words = |reason: &Option<String>| {
        reason
            .as_ref()
            .map(|r| format!(": {}", resourcesync_model::text::escaped(r)))
            .unwrap_or_default()
    };
    match notice {
        FollowNotice::Subscribed(_) => {
            followed.subscribed = Some(true);
            followed.refusal = None;
        }
        FollowNotice::Denied(reason) => {
            followed.refusal = Some(format!("the hub denied it{}", words(reason)));
        }
        FollowNotice::SubscriptionFailed {
            status: Some(status),
            reason,
            ..
        } => followed.refusal = Some(format!("the hub answered {status}{}", words(reason))),
        FollowNotice::SubscriptionFailed {
            status: None,
            reason,
            ..
        } => followed.refusal = Some(format!("the hub did not answer{}", words(reason))),
        _ => {}
    }
}

/// What the callback hands the follower.
enum Inbound {
    /// A notification taken: its interval and entries (the body itself is not kept: a run
    /// reads the Source's Change Lists).
    Notification(Option<(W3cDateTime, W3cDateTime)>, usize),
    Ignored(&'static str),
    /// The subscriber's state changed (a verification answered).
    Verified,
}

/// The two ways in from the callback: notifications, whose queue being full means a run is
/// due already (so one dropped then is made up by it), and the rest (reports only), apart,
/// so that no flood of ignored bodies can crowd out a notification.
#[derive(Clone)]
struct Inbox {
    notifications: mpsc::Sender<Inbound>,
    others: mpsc::Sender<Inbound>,
}

/// The answer of a subscription request, for the subscriber: its status and, when it is
/// a refusal, the hub's reason (its body's first line), or nothing when none came.
struct Answered(
    resourcesync_websub::SubscriberRequestId,
    Option<(StatusCode, Option<String>)>,
);

/// Follows the Source of `options.sync` into its directory until `stop` is asked for.
pub async fn follow(
    options: &FollowOptions,
    stop: &AsyncStop,
    observer: &mut (dyn FollowObserver + Send),
) -> Result<Followed, SyncError> {
    let open = |options: &SyncOptions| Ok(DirectoryDestination::open_for(options)?);
    follow_into(options, open, stop, observer).await
}

/// [`follow`] into a destination of the caller's (a bucket's prefix,
/// `objects::ObjectDestination`), which `open` opens (and locks) for each run, as
/// [`sync_into`] does: between runs the follower holds nothing, so a single `sync` into the
/// same place is refused only while a run is in progress. A run that cannot open (the
/// place busy, the store out of reach) ends the follower with its error, as for a
/// directory.
pub async fn follow_into<D: Destination + Send>(
    options: &FollowOptions,
    mut open: impl FnMut(&SyncOptions) -> Result<D, SyncError> + Send,
    stop: &AsyncStop,
    observer: &mut (dyn FollowObserver + Send),
) -> Result<Followed, SyncError> {
    let mut followed = Followed::default();
    let mut channel = None;
    // When runs are due: the sans-IO schedule, the first run at once.
    let mut schedule = Follower::new(options.interval, Instant::now());
    let first = schedule.poll_run(Instant::now()).unwrap_or(Cause::Start);
    let synced = run(
        &options.sync,
        &mut open,
        &options.gate,
        stop,
        observer,
        &mut channel,
    )
    .await?;
    schedule.finished(synced.report.complete, Instant::now());
    report(observer, &mut followed, first, synced);
    let incremental = options.sync.clone().with_baseline(false);
    let (notifications_tx, mut notifications) = mpsc::channel::<Inbound>(64);
    let (others_tx, mut others) = mpsc::channel::<Inbound>(64);
    let inbox = Inbox {
        notifications: notifications_tx,
        others: others_tx,
    };
    let (answered_tx, mut answered) = mpsc::channel::<Answered>(16);
    // The reason of the last refusal answered, until the subscriber reports the failure.
    let mut refusal: Option<String> = None;
    let mut subscription: Option<Arc<Mutex<Subscriber>>> = None;
    // The hub is named by the Source: held to the sync's address policy, as the Source's
    // documents and resources are (any authority, since a hub is usually elsewhere), so
    // that a Source cannot have the follower post to an address of the Destination's
    // network. Names are checked as they resolve.
    let policy = hub_policy(&options.sync).await?;
    let http = reqwest::Client::builder()
        .dns_resolver(Arc::new(crate::asynchronous::CheckedResolver(
            policy.clone(),
        )))
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| SyncError::Http(e.to_string()))?;
    let mut listener_task = None;
    let mut channel = match channel {
        Some(channel) => match policy.check(&channel.hub) {
            Ok(()) => Some(channel),
            Err(refused) => {
                followed.subscribed = Some(false);
                followed.refusal = Some(format!("the hub is outside the policy: {refused}"));
                observer.follow(&FollowNotice::Channel(channel));
                observer.follow(&FollowNotice::HubRefused(refused));
                None
            }
        },
        None => None,
    };
    if let Some(channel) = channel.clone() {
        followed.subscribed = Some(false);
        observer.follow(&FollowNotice::Channel(channel.clone()));
        let (subscriber, task, callback) =
            listen(options, &channel, inbox.clone())
                .await
                .map_err(|e| {
                    SyncError::Unsupported(format!(
                        "the callback cannot listen on {}: {e}",
                        options.listen
                    ))
                })?;
        observer.follow(&FollowNotice::Listening(callback));
        subscription = Some(subscriber);
        listener_task = Some(task);
    }
    while !stop.token().is_stopped() {
        let mut wake = schedule
            .poll_timeout()
            .unwrap_or_else(|| Instant::now() + options.interval);
        if let Some(subscriber) = &subscription {
            let (requests, events, timeout) = {
                let mut s = lock(subscriber);
                let now = SystemTime::now();
                let requests: Vec<_> = std::iter::from_fn(|| s.poll_transmit(now)).collect();
                let events: Vec<_> = std::iter::from_fn(|| s.poll_event()).collect();
                (requests, events, s.poll_timeout())
            };
            for event in events {
                let notice = match event {
                    SubscriberEvent::Subscribed { lease } => FollowNotice::Subscribed(lease),
                    SubscriberEvent::Unsubscribed => FollowNotice::Unsubscribed,
                    SubscriberEvent::Denied { reason } => FollowNotice::Denied(reason),
                    SubscriberEvent::Failed { status, retry_at } => {
                        FollowNotice::SubscriptionFailed {
                            status,
                            reason: refusal.take(),
                            retry_at,
                        }
                    }
                    _ => continue,
                };
                subscription_said(&mut followed, &notice);
                observer.follow(&notice);
            }
            for request in requests {
                tokio::spawn(send(http.clone(), request, answered_tx.clone()));
            }
            if let Some(at) = timeout {
                let after = at.duration_since(SystemTime::now()).unwrap_or_default();
                wake = wake.min(Instant::now() + after);
            }
        }
        tokio::select! {
            () = stop.wait() => break,
            () = tokio::time::sleep_until(wake.into()) => {}
            Some(Answered(id, answer)) = answered.recv() => {
                if let Some(s) = &subscription {
                    let mut s = lock(s);
                    match answer {
                        Some((status, reason)) => {
                            // Handed on with the failure the subscriber reports next.
                            refusal = reason;
                            s.handle_response(id, status, SystemTime::now());
                        }
                        None => s.handle_error(id, SystemTime::now()),
                    }
                }
            }
            Some(message) = notifications.recv() => {
                take(message, &mut schedule, observer, &mut followed);
            }
            Some(message) = others.recv() => {
                take(message, &mut schedule, observer, &mut followed);
            }
        }
        // Every notification waiting now is made up by the one run it makes due.
        while let Ok(message) = notifications.try_recv() {
            take(message, &mut schedule, observer, &mut followed);
        }
        let Some(cause) = schedule.poll_run(Instant::now()) else {
            continue;
        };
        let synced = run(
            &incremental,
            &mut open,
            &options.gate,
            stop,
            observer,
            &mut channel,
        )
        .await;
        match synced {
            Ok(synced) => {
                schedule.finished(synced.report.complete, Instant::now());
                report(observer, &mut followed, cause, synced);
            }
            // Only the first run's failure ends the follower: a later one (a one-off
            // sync holding the place, the store out of reach for a while) is made up by
            // the next run, due as after an incomplete one.
            Err(e) => {
                schedule.finished(false, Instant::now());
                followed.failed += 1;
                observer.follow(&FollowNotice::RunFailed(e.to_string()));
            }
        }
    }
    if let Some(subscriber) = &subscription {
        unsubscribe(
            subscriber,
            &http,
            &mut answered,
            &mut others,
            answered_tx,
            observer,
        )
        .await;
    }
    if let Some(task) = listener_task {
        task.abort();
    }
    Ok(followed)
}

/// Asks the hub to end the subscription, and waits a few seconds for its verification.
async fn unsubscribe(
    subscriber: &Arc<Mutex<Subscriber>>,
    http: &reqwest::Client,
    answered: &mut mpsc::Receiver<Answered>,
    inbound: &mut mpsc::Receiver<Inbound>,
    answered_tx: mpsc::Sender<Answered>,
    observer: &mut (dyn FollowObserver + Send),
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    {
        let mut s = lock(subscriber);
        if !s.is_active(SystemTime::now()) {
            return;
        }
        s.unsubscribe();
    }
    loop {
        let request = lock(subscriber).poll_transmit(SystemTime::now());
        if let Some(request) = request {
            tokio::spawn(send(http.clone(), request, answered_tx.clone()));
        }
        if lock(subscriber).is_done() {
            observer.follow(&FollowNotice::Unsubscribed);
            return;
        }
        tokio::select! {
            () = tokio::time::sleep_until(deadline) => return,
            Some(Answered(id, answer)) = answered.recv() => {
                let mut s = lock(subscriber);
                match answer {
                    Some((status, _)) => s.handle_response(id, status, SystemTime::now()),
                    None => s.handle_error(id, SystemTime::now()),
                }
            }
            Some(_) = inbound.recv() => {}
        }
    }
}

fn lock(subscriber: &Arc<Mutex<Subscriber>>) -> MutexGuard<'_, Subscriber> {
    // Each call leaves the subscriber whole: a panic elsewhere does not spoil it.
    subscriber.lock().unwrap_or_else(|p| p.into_inner())
}

/// Handles what the callback handed over; true for a notification taken.
/// Reports what came in from the callback; a notification makes a run due.
fn take(
    message: Inbound,
    schedule: &mut Follower,
    observer: &mut (dyn FollowObserver + Send),
    followed: &mut Followed,
) {
    match message {
        Inbound::Notification(interval, entries) => {
            followed.notifications += 1;
            observer.follow(&FollowNotice::Notified {
                interval: interval.map(|(from, until)| (from.to_string(), until.to_string())),
                entries,
            });
            schedule.notified(interval, Instant::now());
            while let Some(event) = schedule.poll_event() {
                observer.follow(&FollowNotice::Irregular(event));
            }
        }
        Inbound::Ignored(why) => {
            followed.ignored += 1;
            observer.follow(&FollowNotice::Ignored(why));
        }
        Inbound::Verified => {}
    }
}

fn report(
    observer: &mut (dyn FollowObserver + Send),
    followed: &mut Followed,
    cause: Cause,
    synced: Synced,
) {
    followed.runs += 1;
    observer.follow(&FollowNotice::Synced {
        cause,
        synced: Box::new(synced.clone()),
    });
    followed.last = Some(synced);
}

/// One sync, noting the channel its Capability List advertises.
async fn run<D: Destination + Send>(
    options: &SyncOptions,
    open: &mut (impl FnMut(&SyncOptions) -> Result<D, SyncError> + Send),
    gate: &Gate,
    stop: &AsyncStop,
    observer: &mut (dyn FollowObserver + Send),
    channel: &mut Option<Channel>,
) -> Result<Synced, SyncError> {
    struct Noting<'a> {
        inner: &'a mut (dyn FollowObserver + Send),
        channel: &'a mut Option<Channel>,
    }
    impl Observer for Noting<'_> {
        fn event(&mut self, event: &Event) {
            if let Event::Channel { channel, .. } = event
                && channel.capability == resourcesync_model::Capability::ChangeNotification
            {
                *self.channel = Some(channel.clone());
            }
            self.inner.event(event);
        }
        fn progress(&mut self, progress: &resourcesync_client::Progress) {
            self.inner.progress(progress);
        }
        fn notice(&mut self, notice: &Notice) {
            self.inner.notice(notice);
        }
    }
    let mut noting = Noting {
        inner: observer,
        channel,
    };
    sync_into(options, open, gate, stop, &mut noting).await
}

/// Sends a subscription request and hands back its status.
async fn send(
    http: reqwest::Client,
    request: resourcesync_websub::SubscriberRequest,
    answered: mpsc::Sender<Answered>,
) {
    let id = request.id;
    let (parts, body) = request.request.into_parts();
    let response = http
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await;
    let answer = match response {
        Ok(response) if response.status().is_success() => Some((response.status(), None)),
        Ok(response) => Some((response.status(), reason(response).await)),
        Err(_) => None,
    };
    let _ = answered.send(Answered(id, answer)).await;
}

/// The first line of a refusal's body, which a hub writes its reason in (WebSub 5.1.2),
/// at most [`MAX_REASON`] bytes of it, read for at most two seconds.
async fn reason(mut response: reqwest::Response) -> Option<String> {
    let mut body = Vec::new();
    let read = async {
        while body.len() < MAX_REASON {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), read).await;
    body.truncate(MAX_REASON);
    let text = String::from_utf8_lossy(&body);
    let line = text.lines().next().unwrap_or("").trim();
    (!line.is_empty()).then(|| line.to_owned())
}

/// The most of a hub's refusal kept as its reason.
const MAX_REASON: usize = 512;

/// The address policy a Source's hub is held to: the sync's (its special address kinds
/// refused, but those the Source itself is on, written or resolved, as a sync allows
/// them), for any authority.
async fn hub_policy(
    options: &SyncOptions,
) -> Result<resourcesync_client::policy::Policy, SyncError> {
    use resourcesync_client::policy::{Policy, SpecialAddress};
    let mut policy = Policy::new(&options.source)
        .map_err(|e| SyncError::Unsupported(e.to_string()))?
        .allow_any_authority();
    if let Ok(url) = options.source.to_url() {
        let kinds: Vec<SpecialAddress> = match url.host() {
            Some(url::Host::Ipv4(ip)) => SpecialAddress::of(ip.into()).into_iter().collect(),
            Some(url::Host::Ipv6(ip)) => SpecialAddress::of(ip.into()).into_iter().collect(),
            Some(url::Host::Domain(host)) => match tokio::net::lookup_host((host, 0)).await {
                Ok(found) => found.filter_map(|a| SpecialAddress::of(a.ip())).collect(),
                Err(_) => Vec::new(),
            },
            None => Vec::new(),
        };
        for kind in kinds {
            policy = policy.allow_address_kind(kind);
        }
    }
    Ok(policy)
}

/// Binds the callback's listener and serves it: the hub's verifications answered by the
/// subscriber, its bodies checked and handed over.
async fn listen(
    options: &FollowOptions,
    channel: &Channel,
    inbox: Inbox,
) -> std::io::Result<(Arc<Mutex<Subscriber>>, tokio::task::JoinHandle<()>, Uri)> {
    let listener = tokio::net::TcpListener::bind(options.listen).await?;
    let addr = listener.local_addr()?;
    let secret = random_hex()?;
    let callback: Uri = match &options.callback_url {
        Some(url) => url.clone(),
        None => format!("http://{addr}/resourcesync/{}", random_hex()?)
            .parse()
            .map_err(std::io::Error::other)?,
    };
    let path = callback.path().to_owned();
    let subscriber = Arc::new(Mutex::new(Subscriber::new(
        channel.hub.clone(),
        channel.topic.clone(),
        callback.clone(),
        secret,
        options.lease,
    )));
    let shared = Arc::clone(&subscriber);
    // Connections at once, each reading at most one body of MAX_NOTIFICATION at a time:
    // a flood at the callback costs bounded memory (the hub's requests wait their turn,
    // and a notification lost to it is made up by the next run).
    let connections = Arc::new(tokio::sync::Semaphore::new(MAX_CALLBACK_CONNECTIONS));
    let task = tokio::spawn(async move {
        loop {
            let Ok(permit) = Arc::clone(&connections).acquire_owned().await else {
                return;
            };
            let Ok((stream, _)) = listener.accept().await else {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            };
            let (subscriber, inbound, path) = (Arc::clone(&shared), inbox.clone(), path.clone());
            tokio::spawn(async move {
                let _permit = permit;
                let service =
                    hyper::service::service_fn(move |request: hyper::Request<Incoming>| {
                        let (subscriber, inbound, path) =
                            (Arc::clone(&subscriber), inbound.clone(), path.clone());
                        async move {
                            Ok::<_, std::convert::Infallible>(
                                callback_answer(request, &subscriber, &inbound, &path).await,
                            )
                        }
                    });
                // No connection holds its place for ever: one request each (an idle
                // keep-alive connection would keep a place from the others), and a
                // bounded time for it (one that trickles).
                let _ = tokio::time::timeout(
                    CALLBACK_CONNECTION_TIME,
                    hyper::server::conn::http1::Builder::new()
                        .keep_alive(false)
                        .serve_connection(TokioIo::new(stream), service),
                )
                .await;
            });
        }
    });
    Ok((subscriber, task, callback))
}

/// The callback's answer to one request of the hub's.
async fn callback_answer(
    request: hyper::Request<Incoming>,
    subscriber: &Arc<Mutex<Subscriber>>,
    inbound: &Inbox,
    path: &str,
) -> Response<Full<Bytes>> {
    let answer = |status: StatusCode, body: Bytes| {
        let mut response = Response::new(Full::new(body));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != path {
        return answer(StatusCode::NOT_FOUND, Bytes::new());
    }
    match *request.method() {
        Method::GET => {
            let query = request.uri().query().unwrap_or("").to_owned();
            let verification = lock(subscriber).verify(&query, SystemTime::now());
            let _ = inbound.others.try_send(Inbound::Verified);
            match verification {
                Verification::Confirm(echo) => answer(StatusCode::OK, Bytes::from(echo)),
                _ => answer(StatusCode::NOT_FOUND, Bytes::new()),
            }
        }
        Method::POST => {
            let headers: HeaderMap = request.headers().clone();
            let Ok(body) = Limited::new(request.into_body(), MAX_NOTIFICATION)
                .collect()
                .await
            else {
                return answer(StatusCode::PAYLOAD_TOO_LARGE, Bytes::new());
            };
            let body = body.to_bytes();
            let accepted = lock(subscriber).accept(&headers, &body, SystemTime::now());
            match accepted {
                Accepted::Notification => {
                    let (interval, entries) = summary(&body);
                    // A full queue means a run is due already: it makes this one up.
                    let _ = inbound
                        .notifications
                        .try_send(Inbound::Notification(interval, entries));
                }
                Accepted::Ignored(why) => {
                    let _ = inbound.others.try_send(Inbound::Ignored(why));
                }
                _ => {
                    let _ = inbound.others.try_send(Inbound::Ignored("not understood"));
                }
            }
            // 2xx either way (WebSub 8): a forger learns nothing.
            answer(StatusCode::NO_CONTENT, Bytes::new())
        }
        _ => answer(StatusCode::METHOD_NOT_ALLOWED, Bytes::new()),
    }
}

/// A notification's interval and entries, when it is a change notification that reads.
fn summary(body: &[u8]) -> (Option<(W3cDateTime, W3cDateTime)>, usize) {
    match resourcesync_xml::read_document(body) {
        Ok((doc, _)) if doc.head.kind() == DocumentKind::ChangeNotification => {
            let md = &doc.head.md;
            (md.from.zip(md.until), doc.entries.len())
        }
        _ => (None, 0),
    }
}

/// 128 random bits as hex: the secret, the callback's unguessable path.
fn random_hex() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The end's line says how the subscription went: never taken, lost after it was
    /// taken (a renewal refused; a new-user trial's said nothing), or held.
    #[test]
    fn the_end_says_how_the_subscription_went() {
        let mut followed = Followed::default();
        assert_eq!(
            followed.to_string(),
            "followed: 0 runs, 0 failed, 0 notifications, 0 ignored"
        );
        followed.subscribed = Some(false);
        let refused = FollowNotice::SubscriptionFailed {
            status: Some(StatusCode::FORBIDDEN),
            reason: Some("the hub's\nreason".into()),
            retry_at: SystemTime::now(),
        };
        subscription_said(&mut followed, &refused);
        assert!(
            followed.to_string().ends_with(
                "; never subscribed (the hub answered 403 Forbidden: the hub's\\nreason): \
                 every run was polled"
            ),
            "{followed}"
        );
        subscription_said(
            &mut followed,
            &FollowNotice::Subscribed(Duration::from_secs(60)),
        );
        assert!(followed.to_string().ends_with("0 ignored"), "{followed}");
        subscription_said(&mut followed, &refused);
        assert!(
            followed
                .to_string()
                .ends_with("; the subscription was lost (the hub answered 403 Forbidden: the hub's\\nreason): the runs since were polled"),
            "{followed}"
        );
    }
}
