//! A publication's outbox of notifications (Change Notification 1.0.1): what runs wrote
//! and the hub has not taken, whichever adapter published them (a
//! [`Publisher`](crate::Publisher) over any store, or `build` over a directory).

use resourcesync_model::{Channel, Uri};

use crate::engine::PublishError;
use crate::engine::STATE;
use crate::engine::notification::{Notifications, channel_at, outbox_name};
use crate::engine::state::State;
use crate::store::Store;

/// The record beside the publications that holds the sequence number of the last
/// notification the hub took.
pub(crate) const DELIVERED: &str = "notifications-delivered";

/// A notification waiting in the outbox for the hub to take it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Notification {
    /// Its place in the channel's sequence, from 1.
    pub sequence: u64,
    /// The channel it is sent on: the topic and the hub.
    pub channel: Channel,
    /// The notification document, as published.
    pub body: Vec<u8>,
}

impl Notification {
    /// Notification `sequence` of `channel`, the document `body`.
    pub fn new(sequence: u64, channel: Channel, body: Vec<u8>) -> Notification {
        Notification {
            sequence,
            channel,
            body,
        }
    }
}

/// What delivery needs of a publication: the notifications waiting for the hub, and a
/// durable record of those it took. [`Publisher`](crate::Publisher) and
/// [`collection::DirectoryOutbox`](crate::collection::DirectoryOutbox) have it, so one delivery loop
/// (`resourcesync_cli::notify::deliver`) serves both.
pub trait Outbox {
    /// The notifications waiting for the hub, in order: those published after the last
    /// one marked [`delivered`](Outbox::delivered). Empty without a hub.
    fn outbox(&self) -> Result<Vec<Notification>, PublishError>;

    /// Marks every notification up to `sequence` as taken by the hub, durably and at
    /// once; a mark never goes back.
    fn delivered(&mut self, sequence: u64) -> Result<(), PublishError>;
}

/// The notifications of the publication in `store`, served at `base_url`, that wait for
/// `hub`: those its state's outbox lists after the mark beside it.
pub(crate) fn waiting<S: Store + ?Sized>(
    store: &S,
    base_url: &Uri,
    hub: &Uri,
) -> Result<Vec<Notification>, PublishError> {
    let Some(notifications) = notifications(store)? else {
        return Ok(Vec::new());
    };
    let delivered = delivered_mark(store)?;
    let channel = channel_at(base_url, hub)?;
    let mut waiting = Vec::new();
    for sequence in notifications.outbox.into_iter().filter(|&s| s > delivered) {
        let name = outbox_name(sequence);
        let body = store.read(&name)?.ok_or_else(|| PublishError::State {
            document: name.clone(),
            reason: "the outbox lists a notification the publication does not hold".into(),
        })?;
        waiting.push(Notification {
            sequence,
            channel: channel.clone(),
            body,
        });
    }
    Ok(waiting)
}

/// Moves the mark beside the publications in `store` to `sequence`, unless it is there or
/// past it already.
pub(crate) fn mark<S: Store + ?Sized>(store: &mut S, sequence: u64) -> Result<(), PublishError> {
    if sequence <= delivered_mark(store)? {
        return Ok(());
    }
    Ok(store.write_beside(DELIVERED, sequence.to_string().as_bytes())?)
}

/// The sequence number of the last notification the hub took, 0 for none.
pub(crate) fn delivered_mark<S: Store + ?Sized>(store: &S) -> Result<u64, PublishError> {
    let Some(bytes) = store.read_beside(DELIVERED)? else {
        return Ok(0);
    };
    std::str::from_utf8(&bytes)
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .ok_or_else(|| PublishError::State {
            document: DELIVERED.into(),
            reason: "not a sequence number".into(),
        })
}

/// What the published state keeps of the notifications.
fn notifications<S: Store + ?Sized>(store: &S) -> Result<Option<Notifications>, PublishError> {
    let Some(bytes) = store.read(STATE)? else {
        return Ok(None);
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|e| PublishError::State {
        document: STATE.into(),
        reason: e.to_string(),
    })?;
    Ok(state.notifications)
}
