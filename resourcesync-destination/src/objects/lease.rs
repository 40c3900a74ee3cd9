//! The lease on a prefix (`.resourcesync/lock`): one sync at a time, renewed while it
//! runs, taken over once it expired (a killed run's); `resourcesync_objects::Lease`.

use super::*;

/// The lease's object under `.resourcesync/`.
pub(super) const LOCK: &str = "lock";

impl ObjectDestination {
    /// Takes the prefix's lease (or [`DestinationError::Busy`]), and starts renewing it.
    /// With `settle`, returns once the lease was read back as this run's; without, the
    /// read back runs while the run reads and fetches, and the first write waits for it
    /// ([`settled`](Self::settled)).
    pub(super) fn take_lease(&mut self, settle: bool) -> Result<(), DestinationError> {
        let store = self.store.clone();
        let key = child(&self.kept, LOCK);
        let (time, conditional) = (self.lease_time, self.conditional);
        let shown = self.shown.display().to_string();
        let lease = self.wait(async move {
            let lease = Lease::claim(store, key, time, conditional)
                .await
                .map_err(|e| objects_error(&shown, e))?;
            if settle {
                lease
                    .settled()
                    .await
                    .map_err(|e| objects_error(&shown, e))?;
            }
            Ok(lease)
        })?;
        self.lease = Some(lease);
        Ok(())
    }

    /// [`DestinationError::Busy`] while another run's lease on the prefix (this shard's,
    /// or the unsharded prefix's) is live: a run that writes nothing reads it rather than
    /// takes it.
    pub(super) fn leased_elsewhere(&self) -> Result<(), DestinationError> {
        let store = self.store.clone();
        let key = child(&self.kept, LOCK);
        let shown = self.shown.clone();
        self.wait(async move {
            match Lease::live(&*store, &key).await {
                true => Err(DestinationError::Busy {
                    dir: shown,
                    lock: PathBuf::from(key.to_string()),
                }),
                false => Ok(()),
            }
        })
    }

    /// A future that ends once the lease was read back: `Ok` if it is this run's,
    /// [`DestinationError::Busy`] if another's. Every write waits for it.
    pub(super) fn settled(
        &self,
    ) -> impl std::future::Future<Output = Result<(), DestinationError>> + Send + 'static {
        let settled = self.lease.as_ref().map(Lease::settled);
        let shown = self.shown.display().to_string();
        async move {
            match settled {
                Some(settled) => settled.await.map_err(|e| objects_error(&shown, e)),
                None => Ok(()),
            }
        }
    }

    /// [`DestinationError::Busy`] once the lease's read back found another run's: this
    /// one never held the prefix, wrote nothing, and ends. Every write asks first: one
    /// opened to write nothing refuses them all, as it holds no lease and knows nothing
    /// of the store's conditions (no run asks it to write; a caller's misuse would write
    /// unguarded).
    pub(super) fn refused(&self) -> Result<(), DestinationError> {
        if self.hold == Hold::Reads {
            return Err(DestinationError::Store {
                key: self.shown.display().to_string(),
                source: "opened to write nothing (a dry run, an audit): not written".into(),
            });
        }
        match &self.lease {
            Some(lease) if lease.refused() => Err(DestinationError::Busy {
                dir: self.shown.clone(),
                lock: PathBuf::from(lease.key().to_string()),
            }),
            _ => Ok(()),
        }
    }

    pub(super) fn lost(&self) -> Option<String> {
        self.lease
            .as_ref()
            .is_some_and(Lease::lost)
            .then(|| self.lost_message())
    }

    /// What a write refused for a lost lease says.
    pub(super) fn lost_message(&self) -> String {
        format!(
            "{}: the lease on the prefix was taken over by another sync (this one stalled past it)",
            self.shown.display()
        )
    }
}
