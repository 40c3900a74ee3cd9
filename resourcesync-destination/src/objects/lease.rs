//! The lease on a prefix (`.resourcesync/lock`): one sync at a time, renewed while it
//! runs, taken over once it expired (a killed run's); `resourcesync_objects::Lease`.

use super::*;

/// The lease's object under `.resourcesync/`.
pub(super) const LOCK: &str = "lock";

impl ObjectDestination {
    /// Takes the prefix's lease (or [`DestinationError::Busy`]), and starts renewing it.
    pub(super) fn take_lease(&mut self) -> Result<(), DestinationError> {
        let store = self.store.clone();
        let key = child(&self.kept, LOCK);
        let (time, conditional) = (self.lease_time, self.conditional);
        let shown = self.shown.display().to_string();
        let lease = self.wait(async move {
            Lease::take(store, key, time, conditional)
                .await
                .map_err(|e| objects_error(&shown, e))
        })?;
        self.lease = Some(lease);
        Ok(())
    }

    pub(super) fn lost(&self) -> Option<String> {
        self.lease.as_ref().is_some_and(Lease::lost).then(|| {
            format!(
                "{}: the lease on the prefix was taken over by another sync (this one stalled past it)",
                self.shown.display()
            )
        })
    }
}
