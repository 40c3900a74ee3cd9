//! Delivering a publication's notifications to its hub over reqwest: the HTTP of
//! [`resourcesync_source::notify::Delivery`], which decides what to send and when, and
//! the record of what the hub took ([`Outbox::delivered`]), for a
//! [`Publisher`](resourcesync_source::Publisher) and for what `build` published
//! ([`DirectoryOutbox`](resourcesync_source::collection::DirectoryOutbox)) alike.

use std::time::{Duration, Instant};

use resourcesync_source::PublishError;
use resourcesync_source::notify::{Delivery, DeliveryEvent, HubProtocol, Outbox};

/// What [`deliver`] came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Delivered {
    /// The last sequence number the hub took (0 for none this time).
    pub sequence: u64,
    /// Requests that failed and were sent again.
    pub retried: u64,
    /// Notifications still waiting when the time ran out (they wait in the outbox for the
    /// next call).
    pub waiting: usize,
}

/// Sends the outbox's waiting notifications to their hub by `protocol`, in order and
/// retried, for at most `within`; records each the hub takes, so that none is sent twice
/// by the next call and none is lost by a restart.
pub async fn deliver<O: Outbox + ?Sized>(
    outbox: &mut O,
    protocol: HubProtocol,
    http: &reqwest::Client,
    within: Duration,
) -> Result<Delivered, PublishError> {
    let deadline = Instant::now() + within;
    let mut delivery = Delivery::new(protocol);
    for notification in outbox.outbox()? {
        delivery.push(notification);
    }
    let mut delivered = Delivered::default();
    while !delivery.is_idle() && Instant::now() < deadline {
        if let Some(request) = delivery.poll_request(Instant::now()) {
            let (parts, body) = request.http.into_parts();
            let sent = http
                .request(parts.method, parts.uri.to_string())
                .headers(parts.headers)
                .body(body)
                .send();
            // A hub that takes the connection and never answers holds nothing past the
            // request's own timeout, nor past `within`.
            let until = delivery
                .poll_timeout()
                .map_or(deadline, |t| t.min(deadline));
            match tokio::time::timeout_at(until.into(), sent).await {
                Ok(Ok(response)) => {
                    delivery.handle_response(request.id, response.status(), Instant::now())
                }
                _ => delivery.handle_error(request.id, Instant::now()),
            }
        }
        while let Some(event) = delivery.poll_event() {
            match event {
                DeliveryEvent::Delivered { sequence } => {
                    outbox.delivered(sequence)?;
                    delivered.sequence = sequence;
                }
                DeliveryEvent::Failed { .. } => delivered.retried += 1,
                _ => {}
            }
        }
        if let Some(at) = delivery.poll_timeout() {
            let wait = at.min(deadline).saturating_duration_since(Instant::now());
            tokio::time::sleep(wait).await;
        }
    }
    delivered.waiting = outbox.outbox()?.len();
    Ok(delivered)
}
