//! Shards in one prefix: each shard's state, inventory and lease under
//! `PREFIX/.resourcesync/shards/K-of-N/`, the split checked at open, and the shards'
//! inventories read for an audit of the whole (or of one shard, whose extras leave the
//! others' objects out), as a directory's shards are.

use super::*;
use crate::directory::parse_shard;
use resourcesync_client::Inventory as _;

impl ObjectDestination {
    /// Refuses what would mix a split with other runs, as a directory does: a shard where
    /// an unsharded sync keeps the prefix ([`DestinationError::Unsharded`]), a shard of
    /// another split or an unsharded run where shards keep it
    /// ([`DestinationError::Shards`]); an audit of the whole while a shard runs
    /// ([`DestinationError::Busy`]).
    pub(super) fn check_split(&self, whole: bool) -> Result<(), DestinationError> {
        let store = self.store.clone();
        let (top, shard, shown) = (self.top.clone(), self.shard, self.shown.clone());
        self.wait(async move {
            let shards = list_shards(&*store, &top).await?;
            match shard {
                Some(shard) => {
                    // An unsharded sync's state, or its lease while its first run goes on.
                    let state = store.head(&child(&top, STATE)).await.is_ok();
                    if state || Lease::live(&*store, &child(&top, LOCK)).await {
                        return Err(DestinationError::Unsharded { dir: shown });
                    }
                    let asked = shard_name(shard);
                    for name in shards {
                        if parse_shard(&name).is_none_or(|o| o.count() != shard.count()) {
                            return Err(DestinationError::Shards {
                                dir: shown,
                                found: name,
                                asked,
                            });
                        }
                    }
                }
                None if whole => {
                    for name in shards {
                        let lock = child(&child(&child(&top, SHARDS), &name), LOCK);
                        if parse_shard(&name).is_none() {
                            return Err(DestinationError::Shards {
                                dir: shown,
                                found: name,
                                asked: "all".into(),
                            });
                        }
                        if Lease::live(&*store, &lock).await {
                            return Err(DestinationError::Busy {
                                dir: shown,
                                lock: PathBuf::from(lock.to_string()),
                            });
                        }
                    }
                }
                None => {
                    if let Some(found) = shards.into_iter().next() {
                        return Err(DestinationError::Shards {
                            dir: shown,
                            found,
                            asked: "all".into(),
                        });
                    }
                }
            }
            Ok(())
        })
    }

    /// What every shard but `but` stored, from each one's saved inventory (held in
    /// memory, a record a resource). What a killed shard stored after its last save is
    /// not among it until that shard runs again.
    pub(super) fn shard_records(
        &self,
        but: Option<Shard>,
    ) -> Result<Vec<(resourcesync_model::Uri, Held)>, DestinationError> {
        let store = self.store.clone();
        let top = self.top.clone();
        let names = self.wait(async move { list_shards(&*store, &top).await })?;
        let mut records = Vec::new();
        for name in names {
            if but.is_some_and(|own| shard_name(own) == name) {
                continue;
            }
            let kept = child(&child(&self.top, SHARDS), &name);
            let Some(bytes) = self.read(child(&kept, INVENTORY), u64::MAX)? else {
                continue;
            };
            let path = self.work.path().join(format!("{name}.redb"));
            let io_at = |source| DestinationError::Io {
                path: path.clone(),
                source,
            };
            std::fs::write(&path, bytes).map_err(io_at)?;
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(io_at)?;
            let inventory =
                DiskInventory::open(file).map_err(|source| DestinationError::Inventory {
                    path: PathBuf::from(child(&kept, INVENTORY).to_string()),
                    source: source.into(),
                })?;
            inventory.for_each(&mut |uri, held| records.push((uri.clone(), *held)));
        }
        Ok(records)
    }

    /// [`Destination::join_shards`]: the shards' records for an audit of the whole, the
    /// other shards' URIs for a shard's audit.
    pub(super) fn join<I: KeptInventory>(
        &mut self,
        options: &SyncOptions,
        inventory: &mut I,
    ) -> Result<(), DestinationError> {
        if !options.audit {
            return Ok(());
        }
        match self.shard {
            // Recorded for this run only: an audit never saves.
            None => {
                for (uri, held) in self.shard_records(None)? {
                    inventory.record(uri, held);
                }
            }
            Some(own) => {
                self.elsewhere = self
                    .shard_records(Some(own))?
                    .into_iter()
                    .map(|(uri, _)| uri)
                    .collect();
            }
        }
        Ok(())
    }
}

/// The names under `top/shards/` (each shard's `K-of-N`).
async fn list_shards(store: &dyn ObjectStore, top: &Key) -> Result<Vec<String>, DestinationError> {
    let shards = child(top, SHARDS);
    let listed = store
        .list_with_delimiter(Some(&shards))
        .await
        .map_err(|e| store_error(&shards, e))?;
    Ok(listed
        .common_prefixes
        .iter()
        .filter_map(|p| p.filename().map(str::to_owned))
        .collect())
}
