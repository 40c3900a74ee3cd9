//! A WebSub hub's state machine (WebSub, sections 5.1 to 5.3 and 8, with Change
//! Notification 1.0.1's `POST` of a notification), sans IO.
//!
//! The caller hands each request made to the hub's URL to
//! [`handle_request`](Hub::handle_request) and answers with what it returns (it changes
//! nothing at once that needs the time: a subscription waits for its verification); it sends the
//! requests [`poll_transmit`](Hub::poll_transmit) hands out (intent verifications, topic
//! fetches, content distribution) and passes their answers to
//! [`handle_response`](Hub::handle_response) or [`handle_error`](Hub::handle_error); it
//! calls again at [`poll_timeout`](Hub::poll_timeout); it saves
//! [`subscriptions`](Hub::subscriptions) after each [`HubEvent`] that changes them and
//! [`restore`](Hub::restore)s them after a restart. The time is the caller's (a wall
//! clock: leases outlive the process).
//!
//! What it keeps to: a subscription changes only once its intent is verified (the
//! subscriber echoes a random, single-use challenge at its callback), and a failed
//! verification leaves it as it was; leases are clamped to the operator's bounds and
//! enforced, never perpetual; a subscriber's body is signed with its `hub.secret`; each
//! subscriber has a queue of its own, bounded (the oldest dropped when full), and a slow
//! or dead one delays no other; a failed distribution is retried after a doubling wait and
//! given up after a number of failures in a row; `410 Gone` ends a subscription; no request
//! goes to a callback or topic the operator's policy does not allow.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use resourcesync_model::Uri;
use serde::{Deserialize, Serialize};

use crate::link::{Links, links};
use crate::retry::Retry;
use crate::signature::{HubSignature, SignatureMethod};

mod events;
mod options;

pub use events::{Answer, HubEvent, SubscriptionRecord, Transmit, TransmitId};
use options::callback_host;
pub use options::{CallbackPolicy, HubOptions, Leases, MAX_SECRET};

/// A body to distribute.
#[derive(Debug)]
struct Content {
    content_type: HeaderValue,
    body: Arc<[u8]>,
}

/// One subscription, active.
#[derive(Debug)]
struct Subscriber {
    topic: Uri,
    callback: Uri,
    secret: Option<String>,
    expires: SystemTime,
    queue: VecDeque<Arc<Content>>,
    in_flight: bool,
    failures: u32,
    not_before: Option<SystemTime>,
    /// Tells this subscription from an earlier one of the same topic and callback: an
    /// answer to a request made for that one settles nothing of this one's.
    generation: u64,
}

/// A subscription or unsubscription waiting for its verification.
#[derive(Debug)]
struct Pending {
    subscribe: bool,
    topic: Uri,
    callback: Uri,
    secret: Option<String>,
    lease: Duration,
    challenge: String,
    sent: bool,
}

/// A pinged topic to fetch.
#[derive(Debug, Default)]
struct Fetch {
    /// Pinged since the last fetch began.
    due: bool,
    in_flight: bool,
    failures: u32,
    not_before: Option<SystemTime>,
}

type Key = (String, String);

/// What a request handed out was for.
#[derive(Debug)]
enum Purpose {
    Verify(u64),
    Fetch(String),
    Deliver(Key, u64),
}

/// A WebSub hub, sans IO: see the [module](self).
#[derive(Debug)]
pub struct Hub {
    options: HubOptions,
    /// Active subscriptions by (topic, callback), so that a topic's are a range.
    subscribers: BTreeMap<Key, Subscriber>,
    /// Active subscriptions by their callback's host ([`callback_host`]), kept with
    /// `subscribers` by [`Hub::insert`] and [`Hub::remove`].
    hosts: HashMap<String, usize>,
    pending: BTreeMap<u64, Pending>,
    next_pending: u64,
    fetches: BTreeMap<String, (Uri, Fetch)>,
    in_flight: HashMap<TransmitId, (Purpose, SystemTime)>,
    next_id: u64,
    /// The next subscription's generation.
    next_generation: u64,
    /// The subscriber after which the next distribution is looked for: each gets its
    /// turn.
    cursor: Option<Key>,
    events: VecDeque<HubEvent>,
}

impl Hub {
    /// A hub with no subscription.
    pub fn new(options: HubOptions) -> Hub {
        Hub {
            options,
            subscribers: BTreeMap::new(),
            hosts: HashMap::new(),
            pending: BTreeMap::new(),
            next_pending: 0,
            fetches: BTreeMap::new(),
            in_flight: HashMap::new(),
            next_id: 0,
            next_generation: 0,
            cursor: None,
            events: VecDeque::new(),
        }
    }

    /// The options.
    pub fn options(&self) -> &HubOptions {
        &self.options
    }

    /// Takes back subscriptions saved before a restart: those not expired at `now`, of a
    /// topic the hub relays and a callback its policy allows.
    pub fn restore(&mut self, records: Vec<SubscriptionRecord>, now: SystemTime) {
        for r in records {
            // A hostile or damaged file's `u64::MAX` is no time: such a record is dropped.
            let Some(expires) = SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(r.expires))
            else {
                continue;
            };
            let host = callback_host(&r.callback);
            if expires <= now
                || !self.options.serves(&r.topic)
                || !self.options.callbacks.allows(&r.callback)
                || self.subscribers.len() >= self.options.max_subscriptions
                || self.hosts.get(&host).copied().unwrap_or(0) >= self.options.max_per_host
            {
                continue;
            }
            self.insert(r.topic, r.callback, r.secret, expires);
        }
    }

    /// Makes a subscription active, with an empty queue and a generation of its own.
    fn insert(&mut self, topic: Uri, callback: Uri, secret: Option<String>, expires: SystemTime) {
        let key = (topic.to_string(), callback.to_string());
        let generation = self.next_generation;
        self.next_generation += 1;
        let host = callback_host(&callback);
        let replaced = self.subscribers.insert(
            key,
            Subscriber {
                topic,
                callback,
                secret,
                expires,
                queue: VecDeque::new(),
                in_flight: false,
                failures: 0,
                not_before: None,
                generation,
            },
        );
        if replaced.is_none() {
            *self.hosts.entry(host).or_default() += 1;
        }
    }

    /// Ends the subscription `key`, if it is active.
    fn remove(&mut self, key: &Key) -> Option<Subscriber> {
        let s = self.subscribers.remove(key)?;
        let host = callback_host(&s.callback);
        if let Some(n) = self.hosts.get_mut(&host) {
            *n -= 1;
            if *n == 0 {
                self.hosts.remove(&host);
            }
        }
        Some(s)
    }

    /// The active subscriptions, to save.
    pub fn subscriptions(&self) -> Vec<SubscriptionRecord> {
        self.subscribers
            .values()
            .map(|s| SubscriptionRecord {
                topic: s.topic.clone(),
                callback: s.callback.clone(),
                secret: s.secret.clone(),
                expires: s
                    .expires
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs()),
            })
            .collect()
    }

    /// How many subscriptions are active, and how many bodies are in all their queues
    /// (those under way included).
    pub fn load(&self) -> (usize, usize) {
        let waiting = self.subscribers.values().map(|s| s.queue.len()).sum();
        (self.subscribers.len(), waiting)
    }

    /// Handles a request made to the hub's URL: a subscription or unsubscription request,
    /// a publish ping (both form-encoded), or a notification `POST`ed by a Source (any
    /// other body, its topic in the `Link` header's `self`). A publication (a ping or a
    /// notification) is refused (403) unless `may_publish`: the caller knows who asks (the
    /// Source beside the hub), and a body any client could have the hub sign and relay to
    /// every subscriber would be a notification nobody can tell from the Source's.
    pub fn handle_request(
        &mut self,
        method: &Method,
        headers: &HeaderMap,
        body: &[u8],
        may_publish: bool,
    ) -> Answer {
        if method != Method::POST {
            return Answer::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "the hub takes POST requests",
            );
        }
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("application/x-www-form-urlencoded") {
            return self.handle_form(body, may_publish);
        }
        if !may_publish {
            return Answer::new(
                StatusCode::FORBIDDEN,
                "this hub takes notifications from its publishers only",
            );
        }
        let mut links = Links::default();
        for value in headers.get_all(header::LINK) {
            if let Ok(value) = value.to_str() {
                links.add(value);
            }
        }
        let Some(topic) = links.topic() else {
            return Answer::new(
                StatusCode::BAD_REQUEST,
                "a notification needs a Link header with rel=\"self\" naming its topic",
            );
        };
        if !self.options.serves(&topic) {
            return Answer::new(
                StatusCode::FORBIDDEN,
                format!("this hub does not relay {topic}"),
            );
        }
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .cloned()
            .unwrap_or(HeaderValue::from_static("application/xml"));
        self.distribute(&topic, content_type, body);
        Answer::new(StatusCode::OK, "notification taken")
    }

    fn handle_form(&mut self, body: &[u8], may_publish: bool) -> Answer {
        let mut mode = None;
        let mut topic = None;
        let mut callback = None;
        let mut lease = None;
        let mut secret = None;
        for (name, value) in url::form_urlencoded::parse(body) {
            match &*name {
                "hub.mode" => mode = Some(value.into_owned()),
                "hub.topic" => topic = Some(value.into_owned()),
                // The publish ping's other name for the topic.
                "hub.url" if topic.is_none() => topic = Some(value.into_owned()),
                "hub.callback" => callback = Some(value.into_owned()),
                "hub.lease_seconds" => lease = Some(value.into_owned()),
                "hub.secret" => secret = Some(value.into_owned()),
                // WebSub 5.1.1: parameters not understood are ignored.
                _ => {}
            }
        }
        let bad = |why: String| Answer::new(StatusCode::BAD_REQUEST, why);
        let Some(topic) = topic else {
            return bad("hub.topic is missing".into());
        };
        let topic: Uri = match topic.parse() {
            Ok(t) => t,
            Err(e) => return bad(format!("hub.topic: {e}")),
        };
        if !self.options.serves(&topic) {
            return Answer::new(
                StatusCode::FORBIDDEN,
                format!("this hub does not relay {topic}"),
            );
        }
        let subscribe = match mode.as_deref() {
            Some("publish") if !may_publish => {
                return Answer::new(
                    StatusCode::FORBIDDEN,
                    "this hub takes pings from its publishers only",
                );
            }
            Some("publish") => {
                // Fetched only for someone: a ping for a topic nobody follows costs no
                // request.
                let start = (topic.to_string(), String::new());
                let followed = self
                    .subscribers
                    .range(start..)
                    .next()
                    .is_some_and(|((t, _), _)| *t == topic.as_str());
                if !followed {
                    return Answer::new(StatusCode::ACCEPTED, "nobody follows the topic");
                }
                let (_, fetch) = self
                    .fetches
                    .entry(topic.to_string())
                    .or_insert_with(|| (topic.clone(), Fetch::default()));
                fetch.due = true;
                return Answer::new(StatusCode::ACCEPTED, "the topic will be fetched");
            }
            Some("subscribe") => true,
            Some("unsubscribe") => false,
            _ => return bad("hub.mode must be subscribe, unsubscribe or publish".into()),
        };
        let Some(callback) = callback else {
            return bad("hub.callback is missing".into());
        };
        let callback: Uri = match callback.parse() {
            Ok(c) => c,
            Err(e) => return bad(format!("hub.callback: {e}")),
        };
        if !self.options.callbacks.allows(&callback) {
            // Refused here: no request goes to a callback the operator does not allow,
            // not even a denial. Named by its scheme, host and port: its path is the
            // subscriber's secret (WebSub 6), and so is any userinfo, and the answer is
            // logged by the operator.
            let host = format!(
                "{}://{}",
                callback.scheme(),
                callback.host_port().unwrap_or_default()
            );
            let mut answer = Answer::new(
                StatusCode::FORBIDDEN,
                format!(
                    "this hub sends nothing to {host}/…: its host is not one the hub's \
                     operator allows (loopback, private and link-local addresses are \
                     refused unless allowed)"
                ),
            );
            // A host the operator can allow; a scheme the hub never sends to is no such
            // thing.
            answer.callback_not_allowed = matches!(callback.scheme(), "http" | "https");
            return answer;
        }
        if secret.as_ref().is_some_and(|s| s.len() > MAX_SECRET) {
            return bad(format!(
                "hub.secret must be less than {} bytes",
                MAX_SECRET + 1
            ));
        }
        let asked = match lease.map(|l| l.trim().parse::<u64>()) {
            None => None,
            Some(Ok(n)) if n > 0 => Some(n),
            Some(_) => return bad("hub.lease_seconds must be a positive integer".into()),
        };
        let key = (topic.to_string(), callback.to_string());
        // A newer request for the same pair replaces one not yet sent, below: it takes no
        // more room.
        let replaces = |p: &Pending| {
            !p.sent && (p.topic.as_str(), p.callback.as_str()) == (key.0.as_str(), key.1.as_str())
        };
        // An unsubscription of nothing this hub holds or is verifying is no request to
        // verify: the hub sends nothing to a callback it never had (no request of ours
        // goes to whatever callback a stranger names).
        let known = self.subscribers.contains_key(&key)
            || self.pending.values().any(|p| {
                (p.topic.as_str(), p.callback.as_str()) == (key.0.as_str(), key.1.as_str())
            });
        if !subscribe && !known {
            return Answer::new(StatusCode::ACCEPTED, "no such subscription");
        }
        let pending = self.pending.values().filter(|p| !replaces(p));
        if pending.clone().count() >= self.options.max_pending {
            // Unsubscriptions too: each waiting request is memory and a request out.
            return Answer::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "too many requests wait for their verification; try again later",
            );
        }
        if subscribe && !self.subscribers.contains_key(&key) {
            if self.subscribers.len() + self.pending.len() >= self.options.max_subscriptions {
                return Answer::new(StatusCode::SERVICE_UNAVAILABLE, "the hub is full");
            }
            let host = callback_host(&callback);
            // Those it holds, and the new ones waiting (a renewal is counted once, active).
            let held = self.hosts.get(&host).copied().unwrap_or(0)
                + pending
                    .filter(|p| {
                        p.subscribe
                            && callback_host(&p.callback) == host
                            && !self
                                .subscribers
                                .contains_key(&(p.topic.to_string(), p.callback.to_string()))
                    })
                    .count();
            if held >= self.options.max_per_host {
                return Answer::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    format!("this hub holds no more subscriptions for callbacks on {host}"),
                );
            }
        }
        let Some(challenge) = challenge() else {
            return Answer::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "no randomness for a challenge",
            );
        };
        self.pending.retain(|_, p| {
            p.sent || (p.topic.as_str(), p.callback.as_str()) != (key.0.as_str(), key.1.as_str())
        });
        self.pending.insert(
            self.next_pending,
            Pending {
                subscribe,
                topic,
                callback,
                secret: if subscribe { secret } else { None },
                lease: self.options.leases.grant(asked),
                challenge,
                sent: false,
            },
        );
        self.next_pending += 1;
        Answer::new(StatusCode::ACCEPTED, "the request will be verified")
    }

    /// Queues `body` for every active subscriber of `topic`.
    fn distribute(&mut self, topic: &Uri, content_type: HeaderValue, body: &[u8]) {
        let content = Arc::new(Content {
            content_type,
            body: body.into(),
        });
        let start = (topic.to_string(), String::new());
        let queue = self.options.queue;
        let mut subscribers = 0;
        let mut dropped = Vec::new();
        for ((t, _), s) in self.subscribers.range_mut(start..) {
            if *t != topic.as_str() {
                break;
            }
            subscribers += 1;
            // The bound counts the bodies waiting; the one under way (the front) stays,
            // as its answer settles it.
            let under_way = usize::from(s.in_flight);
            if s.queue.len() >= queue + under_way {
                s.queue.remove(under_way);
                dropped.push((s.topic.clone(), s.callback.clone()));
            }
            s.queue.push_back(Arc::clone(&content));
        }
        for (topic, callback) in dropped {
            self.events.push_back(HubEvent::Dropped {
                topic,
                callback,
                why: "its queue was full",
            });
        }
        self.events.push_back(HubEvent::Published {
            topic: topic.clone(),
            subscribers,
        });
    }

    /// The next request to send, if one is due at `now`; leases that ended and requests
    /// unanswered past the timeout are settled first.
    pub fn poll_transmit(&mut self, now: SystemTime) -> Option<Transmit> {
        self.expire(now);
        self.time_out(now);
        if let Some((&n, p)) = self.pending.iter_mut().find(|(_, p)| !p.sent) {
            p.sent = true;
            let request = verification(p);
            return Some(self.hand_out(Purpose::Verify(n), request, now));
        }
        let due = self
            .fetches
            .iter_mut()
            .find(|(_, (_, f))| f.due && !f.in_flight && f.not_before.is_none_or(|t| t <= now));
        if let Some((key, (topic, fetch))) = due {
            fetch.due = false;
            fetch.in_flight = true;
            let mut request = Request::new(Vec::new());
            if let Ok(uri) = topic.as_str().parse() {
                *request.uri_mut() = uri;
            }
            let key = key.clone();
            return Some(self.hand_out(Purpose::Fetch(key), request, now));
        }
        let key = self.next_delivery(now)?;
        let hub = self.options.url.clone();
        let method = self.options.signature;
        let s = self.subscribers.get_mut(&key)?;
        let content = s.queue.front()?.clone();
        s.in_flight = true;
        let generation = s.generation;
        let mut request = Request::new(content.body.to_vec());
        *request.method_mut() = Method::POST;
        if let Ok(uri) = s.callback.as_str().parse() {
            *request.uri_mut() = uri;
        }
        let headers = request.headers_mut();
        headers.insert(header::CONTENT_TYPE, content.content_type.clone());
        if let Ok(value) = HeaderValue::from_str(&links(&s.topic, &hub)) {
            headers.insert(header::LINK, value);
        }
        if let Some(secret) = &s.secret {
            let signature = HubSignature::sign(method, secret.as_bytes(), &content.body);
            if let Ok(value) = HeaderValue::from_str(&signature.to_string()) {
                headers.insert("x-hub-signature", value);
            }
        }
        self.cursor = Some(key.clone());
        Some(self.hand_out(Purpose::Deliver(key, generation), request, now))
    }

    /// The next subscriber with a body to send at `now`, after the last one served.
    fn next_delivery(&self, now: SystemTime) -> Option<Key> {
        let ready = |s: &Subscriber| {
            !s.in_flight && !s.queue.is_empty() && s.not_before.is_none_or(|t| t <= now)
        };
        let after = match &self.cursor {
            Some(c) => self
                .subscribers
                .range((Bound::Excluded(c.clone()), Bound::Unbounded))
                .find(|(_, s)| ready(s)),
            None => None,
        };
        after
            .or_else(|| self.subscribers.iter().find(|(_, s)| ready(s)))
            .map(|(k, _)| k.clone())
    }

    fn hand_out(
        &mut self,
        purpose: Purpose,
        request: Request<Vec<u8>>,
        now: SystemTime,
    ) -> Transmit {
        let id = TransmitId(self.next_id);
        self.next_id += 1;
        let to_callback = !matches!(purpose, Purpose::Fetch(_));
        self.in_flight.insert(id, (purpose, now));
        Transmit {
            id,
            request,
            to_callback,
        }
    }

    /// The answer to request `id`: its status, headers and body.
    pub fn handle_response(
        &mut self,
        id: TransmitId,
        status: StatusCode,
        headers: &HeaderMap,
        body: &[u8],
        now: SystemTime,
    ) {
        let Some((purpose, sent)) = self.in_flight.remove(&id) else {
            return;
        };
        match purpose {
            Purpose::Verify(n) => {
                let Some(p) = self.pending.remove(&n) else {
                    return;
                };
                let echoed = status.is_success() && body == p.challenge.as_bytes();
                if !echoed {
                    self.events.push_back(HubEvent::NotVerified {
                        topic: p.topic,
                        callback: p.callback,
                        status: Some(status),
                    });
                    return;
                }
                self.verified(p, sent);
            }
            Purpose::Fetch(key) => {
                let Some((topic, fetch)) = self.fetches.get_mut(&key) else {
                    return;
                };
                fetch.in_flight = false;
                if status.is_success() {
                    fetch.failures = 0;
                    fetch.not_before = None;
                    let topic = topic.clone();
                    if !fetch.due {
                        self.fetches.remove(&key);
                    }
                    let content_type = headers
                        .get(header::CONTENT_TYPE)
                        .cloned()
                        .unwrap_or(HeaderValue::from_static("application/xml"));
                    self.distribute(&topic, content_type, body);
                } else {
                    self.fetch_failed(&key, Some(status), now);
                }
            }
            Purpose::Deliver(key, generation) => {
                if self
                    .subscribers
                    .get(&key)
                    .is_none_or(|s| s.generation != generation)
                {
                    // An answer for a subscription since ended (and maybe made again).
                    return;
                }
                if status.is_success() {
                    let Some(s) = self.subscribers.get_mut(&key) else {
                        return;
                    };
                    s.in_flight = false;
                    s.queue.pop_front();
                    s.failures = 0;
                    s.not_before = None;
                    self.events.push_back(HubEvent::Delivered {
                        topic: s.topic.clone(),
                        callback: s.callback.clone(),
                    });
                } else if status == StatusCode::GONE {
                    if let Some(s) = self.remove(&key) {
                        self.events.push_back(HubEvent::Gone {
                            topic: s.topic,
                            callback: s.callback,
                        });
                    }
                } else {
                    self.delivery_failed(&key, now);
                }
            }
        }
    }

    /// Request `id` got no answer: the connection failed, or the caller gave up on it.
    pub fn handle_error(&mut self, id: TransmitId, now: SystemTime) {
        let Some((purpose, _)) = self.in_flight.remove(&id) else {
            return;
        };
        self.failed(purpose, now);
    }

    fn failed(&mut self, purpose: Purpose, now: SystemTime) {
        match purpose {
            Purpose::Verify(n) => {
                if let Some(p) = self.pending.remove(&n) {
                    self.events.push_back(HubEvent::NotVerified {
                        topic: p.topic,
                        callback: p.callback,
                        status: None,
                    });
                }
            }
            Purpose::Fetch(key) => {
                if let Some((_, f)) = self.fetches.get_mut(&key) {
                    f.in_flight = false;
                }
                self.fetch_failed(&key, None, now);
            }
            Purpose::Deliver(key, generation) => {
                if self
                    .subscribers
                    .get(&key)
                    .is_some_and(|s| s.generation == generation)
                {
                    self.delivery_failed(&key, now);
                }
            }
        }
    }

    /// A verified request takes effect; a subscription's lease runs from the
    /// verification's request (WebSub 5.3).
    fn verified(&mut self, p: Pending, sent: SystemTime) {
        let key = (p.topic.to_string(), p.callback.to_string());
        if !p.subscribe {
            self.remove(&key);
            self.events.push_back(HubEvent::Unsubscribed {
                topic: p.topic,
                callback: p.callback,
            });
            return;
        }
        let expires = sent + p.lease;
        let renewed = match self.subscribers.get_mut(&key) {
            Some(s) => {
                s.expires = expires;
                s.secret = p.secret;
                true
            }
            None => {
                self.insert(p.topic.clone(), p.callback.clone(), p.secret, expires);
                false
            }
        };
        self.events.push_back(HubEvent::Subscribed {
            topic: p.topic,
            callback: p.callback,
            lease: p.lease,
            renewed,
        });
    }

    fn fetch_failed(&mut self, key: &str, status: Option<StatusCode>, now: SystemTime) {
        let (attempts, retry) = (self.options.attempts, self.options.retry);
        let Some((topic, fetch)) = self.fetches.get_mut(key) else {
            return;
        };
        fetch.failures += 1;
        let topic = topic.clone();
        if fetch.failures >= attempts && !fetch.due {
            self.fetches.remove(key);
        } else {
            fetch.due = true;
            fetch.not_before = Some(now + retry.wait(fetch.failures));
        }
        self.events
            .push_back(HubEvent::FetchFailed { topic, status });
    }

    fn delivery_failed(&mut self, key: &Key, now: SystemTime) {
        let (attempts, retry) = (self.options.attempts, self.options.retry);
        let Some(s) = self.subscribers.get_mut(key) else {
            return;
        };
        s.in_flight = false;
        s.failures += 1;
        s.not_before = Some(now + retry.wait(s.failures));
        if s.failures >= attempts {
            s.queue.pop_front();
            s.failures = 0;
            self.events.push_back(HubEvent::Dropped {
                topic: s.topic.clone(),
                callback: s.callback.clone(),
                why: "it failed every attempt",
            });
        }
    }

    /// Ends the leases over at `now`.
    fn expire(&mut self, now: SystemTime) {
        let over: Vec<Key> = self
            .subscribers
            .iter()
            .filter(|(_, s)| s.expires <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in over {
            if let Some(s) = self.remove(&key) {
                self.events.push_back(HubEvent::Expired {
                    topic: s.topic,
                    callback: s.callback,
                });
            }
        }
    }

    /// Counts requests unanswered past the timeout as failed.
    fn time_out(&mut self, now: SystemTime) {
        let timeout = self.options.retry.timeout;
        let late: Vec<TransmitId> = self
            .in_flight
            .iter()
            .filter(|(_, (_, sent))| now.duration_since(*sent).is_ok_and(|d| d >= timeout))
            .map(|(id, _)| *id)
            .collect();
        for id in late {
            if let Some((purpose, _)) = self.in_flight.remove(&id) {
                self.failed(purpose, now);
            }
        }
    }

    /// When to call [`poll_transmit`](Hub::poll_transmit) next, if nothing comes before:
    /// a request to send, a wait or a timeout ending, a lease ending.
    pub fn poll_timeout(&self) -> Option<SystemTime> {
        let timeout = self.options.retry.timeout;
        let mut next: Option<SystemTime> = None;
        let mut at = |t: SystemTime| next = Some(next.map_or(t, |n| n.min(t)));
        if self.pending.values().any(|p| !p.sent) {
            at(SystemTime::UNIX_EPOCH);
        }
        for (_, sent) in self.in_flight.values() {
            at(*sent + timeout);
        }
        for (_, f) in self.fetches.values() {
            if f.due && !f.in_flight {
                at(f.not_before.unwrap_or(SystemTime::UNIX_EPOCH));
            }
        }
        for s in self.subscribers.values() {
            at(s.expires);
            if !s.in_flight && !s.queue.is_empty() {
                at(s.not_before.unwrap_or(SystemTime::UNIX_EPOCH));
            }
        }
        next
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<HubEvent> {
        self.events.pop_front()
    }
}

/// The intent verification request for `p` (WebSub 5.3): a GET of the callback with the
/// mode, topic, challenge and (to subscribe) lease appended to its query.
fn verification(p: &Pending) -> Request<Vec<u8>> {
    let Ok(mut url) = p.callback.to_url() else {
        // A callback the model parsed is one the url crate parses: this is not reached,
        // and a request to nowhere fails verification.
        return Request::new(Vec::new());
    };
    {
        let mut query = url.query_pairs_mut();
        query
            .append_pair(
                "hub.mode",
                if p.subscribe {
                    "subscribe"
                } else {
                    "unsubscribe"
                },
            )
            .append_pair("hub.topic", p.topic.as_str())
            .append_pair("hub.challenge", &p.challenge);
        if p.subscribe {
            query.append_pair("hub.lease_seconds", &p.lease.as_secs().to_string());
        }
    }
    let mut request = Request::new(Vec::new());
    if let Ok(uri) = url.as_str().parse() {
        *request.uri_mut() = uri;
    }
    request
}

/// A random, single-use challenge: 128 bits as hex.
fn challenge() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
