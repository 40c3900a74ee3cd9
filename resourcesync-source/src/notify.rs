//! Delivering the outbox's notifications to the hub, sans IO: the caller passes the time
//! in, sends the requests this hands out with its own HTTP stack, and passes the
//! responses back (quinn-proto's shape; the command drives it over reqwest).
//!
//! Notifications go out one request at a time, in order of their sequence, so that a hub
//! that relays in the order it receives relays them in order. A request the hub answers
//! with 2xx delivers; any other answer, a transport error or no answer within the timeout
//! is retried after a backoff that doubles up to a bound, for as long as the caller
//! drives it. Each [`DeliveryEvent::Delivered`] is for the caller to record
//! ([`Publisher::delivered`](crate::Publisher::delivered)), so that a restart resumes
//! after it: at least once, never lost. A follower applies a duplicate once.
//!
//! ```
//! use std::time::Instant;
//! use http::StatusCode;
//! use resourcesync_model::Channel;
//! use resourcesync_source::Notification;
//! use resourcesync_source::notify::{Delivery, DeliveryEvent, HubProtocol};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let channel = Channel::change_notification(
//!     "http://example.com/resourcesync/change-notification.xml".parse()?,
//!     "http://hub.example.org/".parse()?,
//! );
//! let mut delivery = Delivery::new(HubProtocol::ResourceSync);
//! delivery.push(Notification::new(1, channel, b"<urlset/>".to_vec()));
//! let t0 = Instant::now();
//! let request = delivery.poll_request(t0).ok_or("nothing to send")?;
//! assert_eq!(request.http.uri(), "http://hub.example.org/");
//! // The hub fails once: the same notification again after the backoff.
//! delivery.handle_response(request.id, StatusCode::SERVICE_UNAVAILABLE, t0);
//! assert!(delivery.poll_request(t0).is_none());
//! let later = delivery.poll_timeout().ok_or("no retry")?;
//! let again = delivery.poll_request(later).ok_or("no retry")?;
//! delivery.handle_response(again.id, StatusCode::OK, later);
//! let events: Vec<DeliveryEvent> = std::iter::from_fn(|| delivery.poll_event()).collect();
//! assert_eq!(events.last(), Some(&DeliveryEvent::Delivered { sequence: 1 }));
//! # Ok(())
//! # }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::time::Instant;

use http::{HeaderValue, Method, Request, StatusCode, header};

use crate::Notification;

/// How the hub is told of a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HubProtocol {
    /// Change Notification 1.0.1, section 4.1: the notification is the body of a `POST` to
    /// the hub, `Content-Type: application/xml`, with `Link` headers naming the topic
    /// (`self`) and the hub (`hub`). Every notification reaches the hub.
    ResourceSync,
    /// The publish ping most WebSub hubs take (`hub.mode=publish` with `hub.topic` and
    /// `hub.url`, form-encoded): the hub fetches the topic, which serves the latest
    /// notification. One ping stands for every notification waiting; a subscriber that
    /// misses the earlier ones sees the gap in `from`/`until` and catches up from the
    /// Change Lists.
    Publish,
}

/// How a [`Delivery`] retries: the waits all of WebSub's parts share.
pub use crate::outbox::Outbox;
pub use resourcesync_websub::Retry;

/// Names one request a [`Delivery`] handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HubRequestId(u64);

impl fmt::Display for HubRequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hub request {}", self.0)
    }
}

/// A request for the caller to send to the hub.
#[derive(Debug)]
#[non_exhaustive]
pub struct HubRequest {
    /// What to pass back with its response.
    pub id: HubRequestId,
    /// The request.
    pub http: Request<Vec<u8>>,
    /// The sequence numbers it delivers, first and last.
    pub sequences: (u64, u64),
}

/// What happened to the notifications.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeliveryEvent {
    /// The hub took every notification up to `sequence`: record it
    /// ([`Publisher::delivered`](crate::Publisher::delivered)).
    Delivered {
        /// The last sequence number taken.
        sequence: u64,
    },
    /// The hub did not take them; they are sent again at `retry_at`.
    Failed {
        /// The sequence numbers of the request that failed, first and last.
        sequences: (u64, u64),
        /// How many times they failed in a row.
        attempts: u32,
        /// Why: the hub's status, or none for a transport error or no answer in time.
        status: Option<StatusCode>,
        /// When they are sent again.
        retry_at: Instant,
    },
}

/// The request out, and when it went.
#[derive(Debug)]
struct InFlight {
    id: HubRequestId,
    sequences: (u64, u64),
    sent: Instant,
}

/// Delivers notifications to one hub, in order, retrying: see the [module](self).
#[derive(Debug)]
pub struct Delivery {
    protocol: HubProtocol,
    retry: Retry,
    queue: VecDeque<Notification>,
    in_flight: Option<InFlight>,
    /// No request before this (a backoff).
    not_before: Option<Instant>,
    /// Failures in a row.
    attempts: u32,
    next_id: u64,
    /// The last sequence delivered, or pushed and dropped as already delivered.
    delivered: u64,
    events: VecDeque<DeliveryEvent>,
}

impl Delivery {
    /// Delivers by `protocol`, retrying as [`Retry::default`] says.
    pub fn new(protocol: HubProtocol) -> Delivery {
        Delivery::with_retry(protocol, Retry::default())
    }

    /// Delivers by `protocol`, retrying as `retry` says.
    pub fn with_retry(protocol: HubProtocol, retry: Retry) -> Delivery {
        Delivery {
            protocol,
            retry,
            queue: VecDeque::new(),
            in_flight: None,
            not_before: None,
            attempts: 0,
            next_id: 0,
            delivered: 0,
            events: VecDeque::new(),
        }
    }

    /// Queues a notification to deliver after those queued. One whose sequence is not
    /// after the last queued or delivered is dropped: pushing the outbox again after a
    /// restart, or twice, sends nothing twice.
    pub fn push(&mut self, notification: Notification) {
        let last = self.queue.back().map_or(self.delivered, |n| n.sequence);
        if notification.sequence > last {
            self.queue.push_back(notification);
        }
    }

    /// Whether nothing is queued or under way.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.in_flight.is_none()
    }

    /// The next request to send, if one is due at `now`. A request unanswered for longer
    /// than [`Retry::timeout`] counts as failed here (the caller may drop it; its late
    /// answer is ignored).
    pub fn poll_request(&mut self, now: Instant) -> Option<HubRequest> {
        if let Some(flight) = &self.in_flight {
            if now.saturating_duration_since(flight.sent) < self.retry.timeout {
                return None;
            }
            let id = flight.id;
            self.fail(id, None, now);
        }
        if self.not_before.is_some_and(|t| now < t) {
            return None;
        }
        let first = self.queue.front()?;
        let (request, last) = match self.protocol {
            HubProtocol::ResourceSync => (post(first), first.sequence),
            HubProtocol::Publish => {
                let last = self.queue.back().map_or(first.sequence, |n| n.sequence);
                (ping(first), last)
            }
        };
        let id = HubRequestId(self.next_id);
        self.next_id += 1;
        let sequences = (first.sequence, last);
        self.in_flight = Some(InFlight {
            id,
            sequences,
            sent: now,
        });
        Some(HubRequest {
            id,
            http: request,
            sequences,
        })
    }

    /// The hub's answer to request `id`: 2xx delivers, anything else fails.
    pub fn handle_response(&mut self, id: HubRequestId, status: StatusCode, now: Instant) {
        if status.is_success() {
            let Some(flight) = self.in_flight.take_if(|f| f.id == id) else {
                return;
            };
            let last = flight.sequences.1;
            while self.queue.front().is_some_and(|n| n.sequence <= last) {
                self.queue.pop_front();
            }
            self.delivered = last;
            self.attempts = 0;
            self.not_before = None;
            self.events
                .push_back(DeliveryEvent::Delivered { sequence: last });
        } else {
            self.fail(id, Some(status), now);
        }
    }

    /// Request `id` got no answer: the connection failed, or the caller gave up on it.
    pub fn handle_error(&mut self, id: HubRequestId, now: Instant) {
        self.fail(id, None, now);
    }

    /// When to call [`poll_request`](Delivery::poll_request) next: the end of a backoff,
    /// or of the timeout of the request under way. `None` when idle.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match &self.in_flight {
            Some(flight) => Some(flight.sent + self.retry.timeout),
            None if self.queue.is_empty() => None,
            None => Some(self.not_before.unwrap_or_else(Instant::now)),
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<DeliveryEvent> {
        self.events.pop_front()
    }

    fn fail(&mut self, id: HubRequestId, status: Option<StatusCode>, now: Instant) {
        let Some(flight) = self.in_flight.take_if(|f| f.id == id) else {
            return;
        };
        self.attempts = self.attempts.saturating_add(1);
        let retry_at = now + self.retry.wait(self.attempts);
        self.not_before = Some(retry_at);
        self.events.push_back(DeliveryEvent::Failed {
            sequences: flight.sequences,
            attempts: self.attempts,
            status,
            retry_at,
        });
    }
}

/// The `Link` header of a notification: its topic (`self`) and its hub.
fn links(notification: &Notification) -> Option<HeaderValue> {
    let channel = &notification.channel;
    HeaderValue::from_str(&resourcesync_websub::links(&channel.topic, &channel.hub)).ok()
}

/// Change Notification 1.0.1, section 4.1: the notification `POST`ed to the hub.
fn post(notification: &Notification) -> Request<Vec<u8>> {
    let mut request = Request::new(notification.body.clone());
    *request.method_mut() = Method::POST;
    fill(&mut request, notification, "application/xml");
    request
}

/// The WebSub publish ping for the topic.
fn ping(notification: &Notification) -> Request<Vec<u8>> {
    let topic = notification.channel.topic.as_str();
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("hub.mode", "publish")
        .append_pair("hub.topic", topic)
        .append_pair("hub.url", topic)
        .finish();
    let mut request = Request::new(form.into_bytes());
    *request.method_mut() = Method::POST;
    fill(
        &mut request,
        notification,
        "application/x-www-form-urlencoded",
    );
    request
}

fn fill(request: &mut Request<Vec<u8>>, notification: &Notification, content_type: &'static str) {
    // A URI the model parsed is one http parses: a failure leaves the request's default,
    // which the hub answers with an error, retried and reported.
    if let Ok(uri) = notification.channel.hub.as_str().parse() {
        *request.uri_mut() = uri;
    }
    let headers = request.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Some(links) = links(notification) {
        headers.insert(header::LINK, links);
    }
}
