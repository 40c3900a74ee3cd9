//! Change Notification (1.0.1): the notifications a run writes beside its Change Lists, and
//! the outbox that keeps them until the hub has taken them.
//!
//! Each run that publishes changes writes them, the same entries its Change Lists get, as
//! one or more notifications (a burst is split, never made an index), named by a sequence
//! number under [`OUTBOX`]. Their intervals tile time: the first one's `from` is the last
//! notification's `until` (a run without changes writes none, and the next one's interval
//! covers it), the last one's `until` is the run's time. The latest is also the topic's
//! document ([`TOPIC`]), which a generic WebSub hub fetches when pinged. They are written
//! into the publication the run commits, so that none is sent before the Change Lists that
//! carry the same changes are published, and none is lost by a crash: the outbox keeps
//! each until the adapter's mark says the hub took it.

use resourcesync_model::{
    Channel, Document, DocumentHead, DocumentKind, Entry, Link, Uri, W3cDateTime,
};
use serde::{Deserialize, Serialize};

use super::PublishError;
use super::documents::write_small;
use super::sink::Sink;

/// The topic's document: the latest notification (empty before the first), served at
/// the channel's topic URI.
pub(crate) const TOPIC: &str = "resourcesync/change-notification.xml";

/// Where the outbox's notifications are, one file per sequence number.
pub(crate) const OUTBOX: &str = "resourcesync/notifications";

/// Entries per notification: a burst is split into several. A hub relays each as one
/// request to every subscriber, so they are kept far smaller than a Change List.
pub(crate) const NOTIFICATION_ENTRIES: usize = 1000;

/// The most notifications the outbox keeps waiting for a hub: past it, the oldest are
/// dropped. A follower that misses them sees the gap in `from`/`until` and catches up
/// from the Change Lists, which hold every change.
pub(crate) const MAX_OUTBOX: usize = 10_000;

/// The name of notification `sequence` in the publication.
pub(crate) fn outbox_name(sequence: u64) -> String {
    format!("{OUTBOX}/{sequence:010}.xml")
}

/// The channel of a publication at `sink` relayed by `hub`.
pub(crate) fn channel(sink: &dyn Sink, hub: &Uri) -> Result<Channel, PublishError> {
    Ok(Channel::change_notification(sink.uri(TOPIC)?, hub.clone()))
}

/// The channel of a publication served at `base` relayed by `hub`.
pub(crate) fn channel_at(base: &Uri, hub: &Uri) -> Result<Channel, PublishError> {
    let topic = format!("{base}{TOPIC}")
        .parse()
        .map_err(|error| PublishError::Name {
            name: TOPIC.to_owned(),
            error,
        })?;
    Ok(Channel::change_notification(topic, hub.clone()))
}

/// What the state keeps of the notifications.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Notifications {
    /// The next notification's sequence number.
    pub(crate) next: u64,
    /// The last notification's `until` (or when the channel began): the next one's
    /// `from`.
    pub(crate) until: W3cDateTime,
    /// The sequence numbers in the outbox, in order: written, and not yet known to be
    /// taken by the hub.
    pub(crate) outbox: Vec<u64>,
    /// How many were dropped from a full outbox, ever.
    #[serde(default)]
    pub(crate) dropped: u64,
}

/// Writes this run's `changes` (in order of time, within the run's span) as notifications
/// and updates the outbox: what the hub took (`delivered`, the mark's sequence) leaves it.
/// Returns the sequence numbers written.
pub(crate) fn write_notifications(
    sink: &dyn Sink,
    state: &mut Option<Notifications>,
    changes: &[Entry],
    delivered: u64,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
) -> Result<Vec<u64>, PublishError> {
    let notifications = state.get_or_insert_with(|| Notifications {
        next: 1,
        until: last_at,
        outbox: Vec::new(),
        dropped: 0,
    });
    if !sink.exists(TOPIC)? {
        // The topic answers 200 before the first notification, with no content
        // (Change Notification, section 4.1).
        sink.write(TOPIC, &[])?;
    }
    let mut taken = Vec::new();
    notifications.outbox.retain(|&sequence| {
        let keep = sequence > delivered;
        if !keep {
            taken.push(sequence);
        }
        keep
    });
    for sequence in taken {
        sink.remove(&outbox_name(sequence))?;
    }
    let mut written = Vec::new();
    let parts: Vec<&[Entry]> = changes.chunks(NOTIFICATION_ENTRIES).collect();
    let mut latest = None;
    for (i, part) in parts.iter().enumerate() {
        let from = notifications.until;
        // A part before the last ends at its last change; the last at the run's time.
        let until = match part.last().and_then(|e| e.md.as_ref()?.datetime) {
            Some(at) if i + 1 < parts.len() && !at.precedes(&from) => at,
            _ => now,
        };
        let mut document = Document::new(
            DocumentHead::of_kind(DocumentKind::ChangeNotification)
                .with_from(from)
                .with_until(until)
                .with_link(up.clone()),
        );
        document.entries = part.to_vec();
        let sequence = notifications.next;
        let name = outbox_name(sequence);
        write_small(sink, &name, &document)?;
        latest = Some(name);
        notifications.next += 1;
        notifications.until = until;
        notifications.outbox.push(sequence);
        written.push(sequence);
    }
    if let Some(name) = latest {
        let bytes = sink.read(&name)?.unwrap_or_default();
        sink.write(TOPIC, &[&bytes])?;
    }
    let over = notifications.outbox.len().saturating_sub(MAX_OUTBOX);
    for sequence in notifications.outbox.drain(..over).collect::<Vec<_>>() {
        sink.remove(&outbox_name(sequence))?;
        notifications.dropped += 1;
    }
    Ok(written)
}
