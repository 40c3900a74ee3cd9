//! The audit of a bucket's prefix against the inventory ([`Destination::verify`]): one
//! listing of the prefix, each recorded object read (an audit, a repair) or only found
//! (a baseline), the extras and the folder markers told apart. The listing
//! ([`listing`]) is the recovery's too (`replay`, after a run that did not finish).

use super::*;

/// An object of a [`listing`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Listed {
    pub(super) size: u64,
    pub(super) modified: chrono::DateTime<chrono::Utc>,
}

/// Every object under `prefix` but those under `kept`, by key, and the error that ended
/// the listing early, if one did (what was listed before it is kept).
///
/// A folder marker `KEY/` (the empty object the S3 console's "Create folder" and other
/// tools make) is listed by object_store as `KEY`, its paths dropping the trailing `/`,
/// beside the object `KEY` if there is one: a key then has two entries, each with its
/// own size and time, which a listing cannot tell apart. Each reader folds them by its
/// own rule: the audit takes the larger size (a marker's is none), the recovery each
/// entry's own size and time.
pub(super) async fn listing(
    store: &dyn ObjectStore,
    prefix: &Key,
    kept: &Key,
) -> (HashMap<Key, Vec<Listed>>, Option<object_store::Error>) {
    let mut listed: HashMap<Key, Vec<Listed>> = HashMap::new();
    let mut list = store.list(Some(prefix));
    while let Some(meta) = list.next().await {
        let meta = match meta {
            Ok(meta) => meta,
            Err(e) => return (listed, Some(e)),
        };
        if meta.location.prefix_matches(kept) {
            continue;
        }
        listed.entry(meta.location).or_default().push(Listed {
            size: meta.size,
            modified: meta.last_modified,
        });
    }
    (listed, None)
}

impl ObjectDestination {
    /// What [`Destination::verify`] finds: the recorded objects missing or holding other
    /// bytes (the inventory told, by [`KeptInventory::substitute`]), and the objects no
    /// sync stored.
    pub(super) fn audit<I: KeptInventory>(
        &mut self,
        config: &Config,
        inventory: &mut I,
    ) -> Result<Verified, DestinationError> {
        let mut verified = Verified::default();
        if !matches!(config.mode, Mode::Audit | Mode::Baseline { .. }) {
            return Ok(verified);
        }
        let audit = config.mode == Mode::Audit;
        let reads = audit || self.repair;
        // Every object under the prefix but the kept ones: one listing.
        let store = self.store.clone();
        // Every shard's `.resourcesync/` left out too.
        let (prefix, kept) = (self.prefix.clone(), self.top.clone());
        let listed: HashMap<String, u64> = self.wait(async move {
            match listing(&*store, &prefix, &kept).await {
                (_, Some(e)) => Err(store_error(&prefix, e)),
                // An object beside its folder marker keeps its own size: the larger.
                (listed, None) => Ok(listed
                    .into_iter()
                    .map(|(key, objects)| {
                        let size = objects.iter().map(|o| o.size).max().unwrap_or(0);
                        (key.to_string(), size)
                    })
                    .collect()),
            }
        })?;
        // Held in memory for the reads at once: a key and a record a resource.
        let mut records = Vec::new();
        inventory.for_each(&mut |uri, held| {
            if let Ok(path) = config.paths.local_path(uri)
                && let Ok(key) = self.key_of(path.as_str())
            {
                records.push((uri.clone(), *held, key, path.to_path_buf()));
            }
        });
        let mut named: HashSet<String> = records
            .iter()
            .map(|(_, _, key, _)| key.to_string())
            .collect();
        // Another shard's objects are not this one's extras.
        for uri in &self.elsewhere {
            if let Ok(path) = config.paths.local_path(uri)
                && let Ok(key) = self.key_of(path.as_str())
            {
                named.insert(key.to_string());
            }
        }
        let store = self.store.clone();
        // Per record: `None` missing, `Some(None)` as stored, `Some(Some(found))` what the
        // object holds instead.
        let checks: Vec<(usize, Option<Option<Held>>)> = {
            let jobs: Vec<_> = records
                .iter()
                .enumerate()
                .map(|(i, (_, held, key, _))| {
                    (i, *held, key.clone(), listed.get(key.as_ref()).copied())
                })
                .collect();
            self.wait(async move {
                let checks = futures::stream::iter(jobs)
                    .map(|(i, held, key, size)| {
                        let store = store.clone();
                        async move {
                            let Some(size) = size else { return (i, None) };
                            if !reads {
                                // A baseline that does not repair keeps the object whatever
                                // it holds: only a missing one matters. Listed empty where
                                // the sync stored bytes (or a length it did not record), it
                                // may be a folder marker `KEY/` alone (listed as `KEY`):
                                // asked for, once. (An empty resource's marker alone is
                                // taken for it: the two cannot be told apart unread.)
                                let gone = size == 0
                                    && held.length != Some(0)
                                    && matches!(
                                        store.head(&key).await,
                                        Err(object_store::Error::NotFound { .. })
                                    );
                                return (i, (!gone).then_some(None));
                            }
                            let standing = match digest_object(&*store, &key, held.algorithms())
                                .await
                            {
                                Ok(found) if size == found.length && holds(&held, &found) => None,
                                // An audit says how it differs.
                                Ok(found) if audit => Some(Held::of(&found, None)),
                                // A baseline fetches it again, and its placement finds
                                // the object holds nothing the sync stored: a conflict
                                // unless the run replaces such objects.
                                Ok(_) => Some(Held::changed()),
                                // Gone since the listing, or never there: only its folder
                                // marker `KEY/` was listed (as `KEY`).
                                Err(object_store::Error::NotFound { .. }) => return (i, None),
                                // Unreadable: what it holds is not what was stored.
                                Err(_) => Some(Held::changed()),
                            };
                            (i, Some(standing))
                        }
                    })
                    .buffer_unordered(MAX_UPLOADS)
                    .collect()
                    .await;
                Ok(checks)
            })?
        };
        let mut replaced = Vec::new();
        for (i, check) in checks {
            let (uri, _, _, path) = &records[i];
            match check {
                Some(None) => {}
                Some(Some(standing)) => {
                    verified.changed.push(path.clone());
                    replaced.push((uri.clone(), Some(standing)));
                }
                None => {
                    verified.missing.push(path.clone());
                    replaced.push((uri.clone(), None));
                }
            }
        }
        for (uri, now) in replaced {
            inventory.substitute(uri, now);
        }
        let strip = match self.prefix.as_ref().is_empty() {
            true => String::new(),
            false => format!("{}/", self.prefix),
        };
        // Folder markers: the empty objects `KEY/` that the S3 console's "Create folder"
        // (and other tools) make, which a listing gives as the empty objects `KEY`
        // (object_store's paths drop the trailing `/`). One at the prefix itself, or at
        // a directory of other objects or of the sync's resources, missing ones included
        // (where no resource can be a file), is no extra; one of a directory that holds
        // nothing cannot be told from an empty object. An object at `KEY` beside its
        // marker is listed with its own size, and is an extra if it is not the sync's.
        let directories: HashSet<&str> = listed
            .keys()
            .chain(named.iter())
            .flat_map(|key| key.match_indices('/').map(|(at, _)| &key[..at]))
            .collect();
        let marker = |key: &str| {
            listed.get(key) == Some(&0)
                && (key == self.prefix.as_ref() || directories.contains(key))
        };
        for key in listed.keys() {
            if !named.contains(key) && !marker(key) {
                verified
                    .extra
                    .push(PathBuf::from(key.strip_prefix(&strip).unwrap_or(key)));
            }
        }
        verified.changed.sort();
        verified.missing.sort();
        verified.extra.sort();
        Ok(verified)
    }
}
