//! The lease on a prefix (`.resourcesync/lock`): one sync at a time, renewed while it
//! runs, taken over once it expired (a killed run's).

use super::*;

/// The lease's object under `.resourcesync/`.
pub(super) const LOCK: &str = "lock";

/// What a lease object says.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct LeaseBody {
    /// Who holds it: random, per open.
    pub(super) owner: String,
    /// Until when, in seconds since the Unix epoch.
    pub(super) until: u64,
}

/// The lease on a prefix, renewed by a task on the destination's runtime.
pub(super) struct Lease {
    pub(super) owner: String,
    /// Set by the renewing task when the lease was lost (taken over after it expired:
    /// this process stalled longer than the lease).
    pub(super) lost: Arc<AtomicBool>,
    /// When the lease was last taken or renewed, in seconds since the Unix epoch.
    pub(super) renewed: Arc<std::sync::atomic::AtomicU64>,
    pub(super) renewing: Option<tokio::task::JoinHandle<()>>,
}

impl ObjectDestination {
    /// Takes the prefix's lease (or [`DestinationError::Busy`]), and starts renewing it.
    pub(super) fn take_lease(&mut self) -> Result<(), DestinationError> {
        let store = self.store.clone();
        let key = child(&self.kept, LOCK);
        let (owner, time, conditional) =
            (self.lease.owner.clone(), self.lease_time, self.conditional);
        let shown = self.shown.clone();
        let version = self.wait(async move {
            let body = lease_body(&owner, time);
            let mode = match conditional {
                true => PutMode::Create,
                false => PutMode::Overwrite,
            };
            let busy = || DestinationError::Busy {
                dir: shown.clone(),
                lock: PathBuf::from(key.to_string()),
            };
            // Held by another unless it expired.
            let found = match store.get(&key).await {
                Ok(found) => {
                    let version = UpdateVersion {
                        e_tag: found.meta.e_tag.clone(),
                        version: found.meta.version.clone(),
                    };
                    let bytes = found.bytes().await.map_err(|e| store_error(&key, e))?;
                    let expired = serde_json::from_slice::<LeaseBody>(&bytes)
                        .map_or(true, |held| held.until < now_secs());
                    if !expired {
                        return Err(busy());
                    }
                    Some(version)
                }
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => return Err(store_error(&key, e)),
            };
            let mode = match (found, conditional) {
                (Some(version), true) => PutMode::Update(version),
                _ => mode,
            };
            let put = PutOptions {
                mode,
                ..Default::default()
            };
            match store.put_opts(&key, body, put).await {
                Ok(put) => Ok(UpdateVersion {
                    e_tag: put.e_tag,
                    version: put.version,
                }),
                Err(object_store::Error::AlreadyExists { .. })
                | Err(object_store::Error::Precondition { .. }) => Err(busy()),
                Err(e) => Err(store_error(&key, e)),
            }
        })?;
        self.lease.renewed.store(now_secs(), Ordering::SeqCst);
        let renewed = self.lease.renewed.clone();
        let store = self.store.clone();
        let key = child(&self.kept, LOCK);
        let (owner, time, conditional) =
            (self.lease.owner.clone(), self.lease_time, self.conditional);
        let lost = self.lease.lost.clone();
        let Some(runtime) = &self.runtime else {
            return Err(self.stopped());
        };
        self.lease.renewing = Some(runtime.spawn(async move {
            let mut version = version;
            loop {
                tokio::time::sleep(time / 3).await;
                let mode = match conditional {
                    true => PutMode::Update(version.clone()),
                    false => PutMode::Overwrite,
                };
                let put = PutOptions {
                    mode,
                    ..Default::default()
                };
                // Bounded: a renewal that hangs past its turn is as good as lost.
                let renewal = store.put_opts(&key, lease_body(&owner, time), put);
                let Ok(renewal) = tokio::time::timeout(time / 3, renewal).await else {
                    continue;
                };
                match renewal {
                    Ok(put) => {
                        renewed.store(now_secs(), Ordering::SeqCst);
                        version = UpdateVersion {
                            e_tag: put.e_tag,
                            version: put.version,
                        }
                    }
                    // Taken over: this run stalled past its lease.
                    Err(object_store::Error::Precondition { .. }) => {
                        lost.store(true, Ordering::SeqCst);
                        return;
                    }
                    // The store is down for a moment: tried again at the next turn,
                    // while the lease still runs.
                    Err(_) => {}
                }
            }
        }));
        Ok(())
    }

    pub(super) fn lost(&self) -> Option<String> {
        // Not renewed for two thirds of the lease (the store out of reach): another sync
        // may take it over before this one hears, so this one writes no more.
        let stale = now_secs()
            > self.lease.renewed.load(Ordering::SeqCst) + (self.lease_time * 2 / 3).as_secs();
        (stale || self.lease.lost.load(Ordering::SeqCst)).then(|| {
            format!(
                "{}: the lease on the prefix was taken over by another sync (this one stalled past it)",
                self.shown.display()
            )
        })
    }
}

pub(super) fn lease_body(owner: &str, time: Duration) -> PutPayload {
    let body = LeaseBody {
        owner: owner.to_owned(),
        until: now_secs() + time.as_secs().max(1),
    };
    PutPayload::from(serde_json::to_vec(&body).unwrap_or_default())
}

pub(super) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(super) fn random() -> u128 {
    let mut bytes = [0; 16];
    // Without the system's randomness the time and the process: still apart between
    // two syncs at once.
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        return nanos ^ u128::from(std::process::id()) << 64;
    }
    u128::from_le_bytes(bytes)
}
