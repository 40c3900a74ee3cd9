//! A WebSub subscriber's state machine for one subscription (WebSub, sections 5.1, 5.3
//! and 8), sans IO: the follower's side of a hub.
//!
//! [`poll_transmit`](Subscriber::poll_transmit) hands out the subscription request (and
//! its renewal before the lease ends, and a retry after a refusal), or the unsubscription
//! once [`unsubscribe`](Subscriber::unsubscribe) was called. The hub's intent verification
//! arriving at the callback goes to [`verify`](Subscriber::verify), which confirms only a
//! request this subscriber made and has not seen confirmed (WebSub 5.3: 404 otherwise); a
//! distributed body goes to [`accept`](Subscriber::accept), which takes it only when it is
//! for this topic and signed with this subscriber's secret (8: a body whose signature does
//! not match is ignored, and still acknowledged).

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, Method, Request, StatusCode, header};
use resourcesync_model::Uri;

use crate::link::Links;
use crate::retry::Retry;
use crate::signature::HubSignature;

/// How long a hub that took a request has to verify it before the request is sent again.
pub const VERIFICATION_WAIT: Duration = Duration::from_secs(60);

/// What the subscriber is doing with its subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// A subscription request is due.
    Subscribe,
    /// Sent; waiting for the hub's answer and its verification.
    Requested,
    /// Verified; active until the lease ends.
    Active,
    /// An unsubscription request is due.
    Unsubscribe,
    /// Sent; waiting for its verification.
    Unsubscribing,
    /// Unsubscribed (or the hub refused): nothing more to do.
    Done,
}

/// Names one request a [`Subscriber`] handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SubscriberRequestId(u64);

/// A request for the caller to send to the hub.
#[derive(Debug)]
#[non_exhaustive]
pub struct SubscriberRequest {
    /// What to pass back with its answer.
    pub id: SubscriberRequestId,
    /// The request: a form `POST` to the hub.
    pub request: Request<Vec<u8>>,
}

/// The answer to the hub's intent verification.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verification {
    /// 200 with this body: the challenge echoed.
    Confirm(String),
    /// 404: no request of this subscriber's.
    Refuse,
}

/// What a distributed body came to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Accepted {
    /// Signed with the secret, for the topic: the body is the hub's notification.
    Notification,
    /// Ignored (and acknowledged), for this reason.
    Ignored(&'static str),
}

/// What happened to the subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubscriberEvent {
    /// The hub verified the subscription: active for `lease`.
    Subscribed {
        /// The lease granted.
        lease: Duration,
    },
    /// The hub verified the unsubscription.
    Unsubscribed,
    /// The hub refused the subscription (`hub.mode=denied`, WebSub 5.2), for this reason.
    Denied {
        /// The hub's `hub.reason`, if it gave one.
        reason: Option<String>,
    },
    /// The request failed (a status other than 2xx, or no answer); it is sent again at
    /// `retry_at`.
    Failed {
        /// The hub's status, if it answered.
        status: Option<StatusCode>,
        /// When it is sent again.
        retry_at: SystemTime,
    },
}

/// One subscription to a topic at a hub: see the [module](self).
#[derive(Debug)]
pub struct Subscriber {
    hub: Uri,
    topic: Uri,
    callback: Uri,
    secret: String,
    lease: Duration,
    retry: Retry,
    phase: Phase,
    /// When the lease ends, once active.
    expires: Option<SystemTime>,
    /// The lease the hub granted last.
    lease_granted: Option<Duration>,
    /// A renewal was sent and not yet verified.
    renewing: bool,
    in_flight: Option<SubscriberRequestId>,
    /// After the hub took a request: when its verification is given up on (a hub that
    /// restarted, a verification that failed), and the request sent again.
    awaiting: Option<SystemTime>,
    not_before: Option<SystemTime>,
    failures: u32,
    next_id: u64,
    events: VecDeque<SubscriberEvent>,
}

impl Subscriber {
    /// A subscription to `topic` at `hub`, delivered to `callback` and signed with
    /// `secret` (make it random, and at most 199 bytes), asking for a lease of `lease`.
    pub fn new(hub: Uri, topic: Uri, callback: Uri, secret: String, lease: Duration) -> Subscriber {
        Subscriber {
            hub,
            topic,
            callback,
            secret,
            lease,
            retry: Retry::default(),
            phase: Phase::Subscribe,
            expires: None,
            lease_granted: None,
            renewing: false,
            in_flight: None,
            awaiting: None,
            not_before: None,
            failures: 0,
            next_id: 0,
            events: VecDeque::new(),
        }
    }

    /// Retries as `retry` says.
    #[must_use]
    pub fn with_retry(mut self, retry: Retry) -> Subscriber {
        self.retry = retry;
        self
    }

    /// The topic.
    pub fn topic(&self) -> &Uri {
        &self.topic
    }

    /// Whether the subscription is verified and its lease not over at `now`.
    pub fn is_active(&self, now: SystemTime) -> bool {
        self.phase == Phase::Active && self.expires.is_some_and(|e| now < e)
    }

    /// Whether nothing more is to be done: unsubscribed, or refused by the hub.
    pub fn is_done(&self) -> bool {
        self.phase == Phase::Done
    }

    /// Asks for the subscription to end: the unsubscription request is handed out next.
    pub fn unsubscribe(&mut self) {
        if self.phase != Phase::Done {
            self.phase = Phase::Unsubscribe;
            self.not_before = None;
            self.in_flight = None;
            self.awaiting = None;
        }
    }

    /// When a renewal is due: with a tenth of the lease left, and never less than a
    /// minute before its end, or half of it for a lease shorter than two minutes (a lease
    /// shorter than the margin would otherwise be renewed as soon as it is granted, over
    /// and over).
    fn renew_at(&self) -> Option<SystemTime> {
        let expires = self.expires?;
        let granted = self.lease_granted.unwrap_or(self.lease);
        let margin = (granted / 10).max(Duration::from_secs(60).min(granted / 2));
        Some(expires.checked_sub(margin).unwrap_or(expires))
    }

    /// The next request to send at `now`, if one is due.
    pub fn poll_transmit(&mut self, now: SystemTime) -> Option<SubscriberRequest> {
        if self.awaiting.is_some_and(|t| t <= now) {
            // The hub took the request and never verified it: as if it had refused it.
            self.awaiting = None;
            self.failed(None, now);
        }
        if self.in_flight.is_some()
            || self.awaiting.is_some()
            || self.not_before.is_some_and(|t| now < t)
        {
            return None;
        }
        let subscribe = match self.phase {
            Phase::Subscribe => true,
            Phase::Active if !self.renewing && self.renew_at().is_some_and(|t| t <= now) => {
                self.renewing = true;
                true
            }
            Phase::Unsubscribe => false,
            _ => return None,
        };
        if subscribe && self.phase == Phase::Subscribe {
            self.phase = Phase::Requested;
        }
        if !subscribe {
            self.phase = Phase::Unsubscribing;
        }
        let mut form = url::form_urlencoded::Serializer::new(String::new());
        form.append_pair(
            "hub.mode",
            if subscribe {
                "subscribe"
            } else {
                "unsubscribe"
            },
        )
        .append_pair("hub.topic", self.topic.as_str())
        .append_pair("hub.callback", self.callback.as_str());
        if subscribe {
            form.append_pair(
                "hub.lease_seconds",
                &self.lease.as_secs().max(1).to_string(),
            )
            .append_pair("hub.secret", &self.secret);
        }
        let mut request = Request::new(form.finish().into_bytes());
        *request.method_mut() = Method::POST;
        if let Ok(uri) = self.hub.as_str().parse() {
            *request.uri_mut() = uri;
        }
        request.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        let id = SubscriberRequestId(self.next_id);
        self.next_id += 1;
        self.in_flight = Some(id);
        Some(SubscriberRequest { id, request })
    }

    /// The hub's answer to request `id`: 2xx (202) means it will verify; anything else
    /// is tried again after a doubling wait.
    pub fn handle_response(
        &mut self,
        id: SubscriberRequestId,
        status: StatusCode,
        now: SystemTime,
    ) {
        if self.in_flight != Some(id) {
            return;
        }
        self.in_flight = None;
        if status.is_success() {
            self.failures = 0;
            self.not_before = None;
            // The hub may verify before its answer reaches us (it verifies on its own
            // time, and the answer and the verification travel apart): a request already
            // verified awaits nothing, or the lease would run out while this waited.
            let unverified =
                matches!(self.phase, Phase::Requested | Phase::Unsubscribing) || self.renewing;
            if unverified {
                self.awaiting = Some(now + VERIFICATION_WAIT);
            }
            return;
        }
        self.failed(Some(status), now);
    }

    /// Request `id` got no answer.
    pub fn handle_error(&mut self, id: SubscriberRequestId, now: SystemTime) {
        if self.in_flight != Some(id) {
            return;
        }
        self.in_flight = None;
        self.failed(None, now);
    }

    fn failed(&mut self, status: Option<StatusCode>, now: SystemTime) {
        self.failures += 1;
        let retry_at = now + self.retry.wait(self.failures);
        self.not_before = Some(retry_at);
        match self.phase {
            Phase::Requested => self.phase = Phase::Subscribe,
            Phase::Unsubscribing => self.phase = Phase::Unsubscribe,
            _ => self.renewing = false,
        }
        self.events
            .push_back(SubscriberEvent::Failed { status, retry_at });
    }

    /// The hub's intent verification (a GET of the callback with `query`): confirmed
    /// only for the topic, and only for a request this subscriber sent and has not seen
    /// confirmed.
    pub fn verify(&mut self, query: &str, now: SystemTime) -> Verification {
        let mut mode = None;
        let mut topic = None;
        let mut challenge = None;
        let mut lease = None;
        let mut reason = None;
        for (name, value) in url::form_urlencoded::parse(query.as_bytes()) {
            match &*name {
                "hub.mode" => mode = Some(value.into_owned()),
                "hub.topic" => topic = Some(value.into_owned()),
                "hub.challenge" => challenge = Some(value.into_owned()),
                "hub.lease_seconds" => lease = value.parse::<u64>().ok(),
                "hub.reason" => reason = Some(value.into_owned()),
                _ => {}
            }
        }
        if topic.as_deref() != Some(self.topic.as_str()) {
            return Verification::Refuse;
        }
        match mode.as_deref() {
            Some("denied") if matches!(self.phase, Phase::Requested | Phase::Active) => {
                self.phase = Phase::Done;
                self.expires = None;
                self.events.push_back(SubscriberEvent::Denied { reason });
                // WebSub 5.2 asks nothing of the answer; a 200 is polite.
                Verification::Confirm(String::new())
            }
            Some("subscribe") if self.phase == Phase::Requested || self.renewing => {
                // A lease of 0 s is none (it would be renewed at once, over and over).
                let (Some(challenge), Some(lease)) = (challenge, lease.filter(|&l| l > 0)) else {
                    return Verification::Refuse;
                };
                // A hub may grant less than was asked, and is taken at its word; more is
                // taken as what was asked, so that a renewal is never put off past what
                // this subscriber wanted (and no lease overflows the clock).
                let lease = Duration::from_secs(lease).min(self.lease.max(Duration::from_secs(1)));
                self.awaiting = None;
                self.phase = Phase::Active;
                self.renewing = false;
                self.expires = Some(now + lease);
                self.lease_granted = Some(lease);
                self.events.push_back(SubscriberEvent::Subscribed { lease });
                Verification::Confirm(challenge)
            }
            Some("unsubscribe") if self.phase == Phase::Unsubscribing => {
                let Some(challenge) = challenge else {
                    return Verification::Refuse;
                };
                self.awaiting = None;
                self.phase = Phase::Done;
                self.expires = None;
                self.events.push_back(SubscriberEvent::Unsubscribed);
                Verification::Confirm(challenge)
            }
            _ => Verification::Refuse,
        }
    }

    /// A body the hub `POST`ed to the callback: a notification when its `Link` names this
    /// topic and its `X-Hub-Signature` checks with the secret; ignored otherwise. Either
    /// way the caller answers 2xx (WebSub 8), so a forger learns nothing.
    pub fn accept(&self, headers: &HeaderMap, body: &[u8], now: SystemTime) -> Accepted {
        if !(self.is_active(now) || self.phase == Phase::Requested || self.renewing) {
            return Accepted::Ignored("no active subscription");
        }
        let Some(signature) = headers.get("x-hub-signature") else {
            return Accepted::Ignored("unsigned");
        };
        let Ok(signature) = signature.to_str().unwrap_or("").parse::<HubSignature>() else {
            return Accepted::Ignored("a signature that cannot be read");
        };
        if !signature.verify(self.secret.as_bytes(), body) {
            return Accepted::Ignored("a signature that does not match");
        }
        let mut links = Links::default();
        for value in headers.get_all(header::LINK) {
            if let Ok(value) = value.to_str() {
                links.add(value);
            }
        }
        if links.topic().as_ref() != Some(&self.topic) {
            return Accepted::Ignored("another topic");
        }
        Accepted::Notification
    }

    /// When to call [`poll_transmit`](Subscriber::poll_transmit) next: a retry, a renewal.
    pub fn poll_timeout(&self) -> Option<SystemTime> {
        if self.in_flight.is_some() {
            return None;
        }
        if let Some(awaiting) = self.awaiting {
            return Some(awaiting);
        }
        match self.phase {
            Phase::Subscribe | Phase::Unsubscribe => {
                Some(self.not_before.unwrap_or(SystemTime::UNIX_EPOCH))
            }
            Phase::Active if !self.renewing => self.renew_at().map(|at| match self.not_before {
                Some(wait) => wait.max(at),
                None => at,
            }),
            _ => None,
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<SubscriberEvent> {
        self.events.pop_front()
    }
}
