//! The Publisher's outbox of notifications: what runs wrote and the hub has not taken.

use super::Publisher;
use crate::engine::PublishError;
use crate::outbox::{self, Notification, Outbox};
use crate::store::Store;

impl<S: Store> Publisher<S> {
    /// The notifications waiting for the hub, in order: those runs published that are
    /// after the last one marked [`delivered`](Publisher::delivered). Empty without a
    /// hub. A notification is in the outbox once the run that wrote it is committed, so
    /// none is sent before the Change Lists with the same changes are published, and it
    /// stays until it is marked taken, across restarts.
    pub fn outbox(&self) -> Result<Vec<Notification>, PublishError> {
        match &self.options.hub {
            None => Ok(Vec::new()),
            Some(hub) => outbox::waiting(&self.store, &self.options.base_url, hub),
        }
    }

    /// Marks every notification up to `sequence` as taken by the hub, durably and at once
    /// (beside the publication, not in it: no run is needed). The next run removes them
    /// from the outbox. A mark never goes back: an older `sequence` changes nothing.
    pub fn delivered(&mut self, sequence: u64) -> Result<(), PublishError> {
        outbox::mark(&mut self.store, sequence)
    }

    /// The sequence number of the last notification the hub took, 0 for none.
    pub(super) fn delivered_mark(&self) -> Result<u64, PublishError> {
        outbox::delivered_mark(&self.store)
    }
}

impl<S: Store> Outbox for Publisher<S> {
    fn outbox(&self) -> Result<Vec<Notification>, PublishError> {
        Publisher::outbox(self)
    }

    fn delivered(&mut self, sequence: u64) -> Result<(), PublishError> {
        Publisher::delivered(self, sequence)
    }
}
