//! What a [`Hub`] hands its caller: its answers to requests, the requests it sends
//! ([`Transmit`]), what it reports ([`HubEvent`]) and the records of its subscriptions,
//! which the caller saves ([`SubscriptionRecord`]).

use super::*;

/// The hub's answer to a request made to it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answer {
    /// The status.
    pub status: StatusCode,
    /// A line of plain text saying why (WebSub 5.1.2: a description of any error).
    pub body: String,
    /// Refused because the hub's [`CallbackPolicy`](crate::hub::CallbackPolicy) does not allow the
    /// callback's host (a loopback, private or link-local address, or one not named):
    /// what the hub's operator can allow, where the subscriber can do nothing.
    pub callback_not_allowed: bool,
}

impl Answer {
    pub(super) fn new(status: StatusCode, body: impl Into<String>) -> Answer {
        Answer {
            status,
            body: body.into(),
            callback_not_allowed: false,
        }
    }
}

/// Names one request a [`Hub`] handed out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransmitId(pub(super) u64);

impl fmt::Display for TransmitId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "hub request {}", self.0)
    }
}

/// A request for the caller to send.
#[derive(Debug)]
#[non_exhaustive]
pub struct Transmit {
    /// What to pass back with its answer.
    pub id: TransmitId,
    /// The request.
    pub request: Request<Vec<u8>>,
    /// Whether it goes to a subscriber's callback (an intent verification, a
    /// distribution), which the caller's resolver must hold to the
    /// [`CallbackPolicy`] ([`CallbackPolicy::allows_address`]), or to a topic of the
    /// operator's (a fetch).
    pub to_callback: bool,
}

/// A subscription as saved across a restart. It holds the subscriber's secret: keep the
/// file it goes to private.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SubscriptionRecord {
    /// The topic.
    pub topic: Uri,
    /// The callback.
    pub callback: Uri,
    /// The subscriber's `hub.secret`.
    pub secret: Option<String>,
    /// When the lease ends, in seconds since the Unix epoch.
    pub expires: u64,
}

/// What happened at the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HubEvent {
    /// A subscription was verified and is active (or renewed) for `lease`. Save.
    Subscribed {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
        /// The lease granted.
        lease: Duration,
        /// The callback held a subscription to the topic already: this one renews it
        /// (a subscriber renews before its lease ends, WebSub 5.1), with its new lease
        /// and secret.
        renewed: bool,
    },
    /// An unsubscription was verified: the subscription is gone. Save.
    Unsubscribed {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
    },
    /// The callback did not confirm the request: nothing changed.
    NotVerified {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
        /// Its status, if it answered.
        status: Option<StatusCode>,
    },
    /// A lease ended. Save.
    Expired {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
    },
    /// A subscriber answered `410 Gone`: its subscription ended. Save.
    Gone {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
    },
    /// A body for `topic` was queued for its subscribers.
    Published {
        /// The topic.
        topic: Uri,
        /// How many subscribers it was queued for.
        subscribers: usize,
    },
    /// A pinged topic could not be fetched; it is tried again.
    FetchFailed {
        /// The topic.
        topic: Uri,
        /// Its status, if it answered.
        status: Option<StatusCode>,
    },
    /// A subscriber took a body.
    Delivered {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
    },
    /// A subscriber's body was dropped: its queue was full (the oldest), or it failed
    /// `attempts` times in a row.
    Dropped {
        /// The topic.
        topic: Uri,
        /// The callback.
        callback: Uri,
        /// Why.
        why: &'static str,
    },
}
