//! The Publisher's outbox of notifications: what runs wrote and the hub has not taken.

use resourcesync_model::Channel;

use super::Publisher;
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

impl<S: Store> Publisher<S> {
    /// The notifications waiting for the hub, in order: those runs published that are
    /// after the last one marked [`delivered`](Publisher::delivered). Empty without a
    /// hub. A notification is in the outbox once the run that wrote it is committed, so
    /// none is sent before the Change Lists with the same changes are published, and it
    /// stays until it is marked taken, across restarts.
    pub fn outbox(&self) -> Result<Vec<Notification>, PublishError> {
        let Some(hub) = &self.options.hub else {
            return Ok(Vec::new());
        };
        let Some(notifications) = self.notifications()? else {
            return Ok(Vec::new());
        };
        let delivered = self.delivered_mark()?;
        let channel = channel_at(&self.options.base_url, hub)?;
        let mut waiting = Vec::new();
        for sequence in notifications.outbox.into_iter().filter(|&s| s > delivered) {
            let name = outbox_name(sequence);
            let body = self.store.read(&name)?.ok_or_else(|| PublishError::State {
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

    /// Marks every notification up to `sequence` as taken by the hub, durably and at once
    /// (beside the publication, not in it: no run is needed). The next run removes them
    /// from the outbox. A mark never goes back: an older `sequence` changes nothing.
    pub fn delivered(&mut self, sequence: u64) -> Result<(), PublishError> {
        if sequence <= self.delivered_mark()? {
            return Ok(());
        }
        Ok(self
            .store
            .write_beside(DELIVERED, sequence.to_string().as_bytes())?)
    }

    /// The sequence number of the last notification the hub took, 0 for none.
    pub(super) fn delivered_mark(&self) -> Result<u64, PublishError> {
        let Some(bytes) = self.store.read_beside(DELIVERED)? else {
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
    fn notifications(&self) -> Result<Option<Notifications>, PublishError> {
        let Some(bytes) = self.store.read(STATE)? else {
            return Ok(None);
        };
        let state: State = serde_json::from_slice(&bytes).map_err(|e| PublishError::State {
            document: STATE.into(),
            reason: e.to_string(),
        })?;
        Ok(state.notifications)
    }
}
