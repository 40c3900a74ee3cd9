//! W3C WebSub (Recommendation, 23 January 2018) as ResourceSync Change Notification 1.0.1
//! uses it, sans IO: no socket, no file, no clock. The caller passes requests and the time
//! in, and sends the requests it is handed with its own HTTP stack.
//!
//! - [`Hub`]: a hub's state machine ([`hub`] says what it keeps to).
//! - [`Subscriber`]: one subscription's state machine, the follower's side: requests,
//!   renewals, the answer to the hub's verification, signed bodies taken, others ignored.
//! - [`HubSignature`]: `X-Hub-Signature`, made and checked.
//! - [`links`], [`Links`]: the `Link` header's topic (`self`) and hub.
//! - [`Retry`]: the doubling waits publishers and hubs retry after.

#![forbid(unsafe_code)]
// No unwrap or expect outside tests: what input can make fail is an answer or an event.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod hub;
mod link;
mod retry;
mod signature;
pub mod subscriber;

pub use hub::{
    Answer, CallbackPolicy, Hub, HubEvent, HubOptions, Leases, SubscriptionRecord, Transmit,
    TransmitId,
};
pub use link::{Links, links};
pub use retry::Retry;
pub use signature::{HubSignature, SignatureError, SignatureMethod};
pub use subscriber::{
    Accepted, Subscriber, SubscriberEvent, SubscriberRequest, SubscriberRequestId, Verification,
};
