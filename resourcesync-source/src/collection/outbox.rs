//! The outbox of a publish directory: the notifications `build` runs with a hub wrote and
//! the hub has not taken yet.

use super::*;
use crate::Notification;
use crate::outbox;

/// The notifications of the publication at a publish directory that wait for its hub,
/// and the record of those the hub took; the publication stays locked (no `build` runs
/// into it) while this is open. Hand it to a delivery loop
/// ([`notify::Outbox`](crate::notify::Outbox)); the next `build` removes from the outbox
/// what the hub took.
#[derive(Debug)]
pub struct DirectoryOutbox {
    store: GenerationStore,
    base_url: Uri,
    hub: Option<Uri>,
}

impl DirectoryOutbox {
    /// Opens the outbox of the publication `build` made at `publish` with `options`
    /// (their base URL and hub name the channel). Refused, as [`StoreError::Busy`], while
    /// a `build` runs into it.
    pub fn open(publish: &Path, options: &Options) -> Result<DirectoryOutbox, BuildError> {
        Ok(DirectoryOutbox {
            store: GenerationStore::open(publish)?,
            base_url: options.base_url.clone(),
            hub: options.hub.clone(),
        })
    }
}

impl crate::notify::Outbox for DirectoryOutbox {
    fn outbox(&self) -> Result<Vec<Notification>, PublishError> {
        match &self.hub {
            None => Ok(Vec::new()),
            Some(hub) => outbox::waiting(&self.store, &self.base_url, hub),
        }
    }

    fn delivered(&mut self, sequence: u64) -> Result<(), PublishError> {
        outbox::mark(&mut self.store, sequence)
    }
}
