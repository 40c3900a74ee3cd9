//! A `build`'s publication published into a bucket: [`upload`].

use std::collections::{BTreeMap, HashMap};

use md5::{Digest as _, Md5};
use serde::{Deserialize, Serialize};

use super::*;
use crate::BucketStore;

/// Bytes of small resources read before they are sent together.
const BATCH: usize = 32 << 20;

/// The record of the documents the last upload sent, in the publication.
const UPLOADED: &str = ".resourcesync/uploaded.json";

/// What [`upload`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct UploadReport {
    /// The generation uploaded.
    pub generation: u64,
    /// Files sent: resources and documents.
    pub written: u64,
    /// Their bytes.
    pub written_bytes: u64,
    /// Files the bucket held already, the same.
    pub kept: u64,
    /// Files removed from the bucket's publication.
    pub removed: u64,
}

#[derive(Default, Serialize, Deserialize)]
struct Uploaded {
    /// Each document's md5, in hex.
    documents: BTreeMap<String, String>,
}

/// Publishes the generation `build` last published in `publish` (built from `collection`
/// with `options`) into `store`, in one commit.
///
/// A `build`'s publication published into a bucket (feature `object-store`): what
/// `resourcesync build COLLECTION s3://BUCKET/PREFIX --work DIR` does after building into
/// its work directory.
///
/// The build runs as it does for a web server's directory, into the work directory (its
/// generations, state and lock), and then [`upload`] publishes the generation it made into
/// the bucket's prefix through a [`BucketStore`] (one commit: staged, committed by its
/// journal, rolled forward; one publisher at a time), writing only what changed since the
/// publication the bucket holds:
///
/// - a resource whose md5 is the one the bucket's publication lists for its path is not
///   read again nor sent (the bucket's own copy of the build's state says which);
/// - a document whose md5 is the one the last upload recorded
///   (`.resourcesync/uploaded.json`, in the publication) is not sent;
/// - what the bucket's publication holds and this one does not is removed.
///
/// Each resource is read from the collection beneath it, through no symbolic link, as the
/// build read it; a file changed since the build is sent as it is now, as a web server
/// serving the collection would (the Destinations check it against the listed digests).
/// With a list of URI and file pairs ([`Options::list`]) the resources are the list's,
/// served by whoever serves them: only the documents are uploaded.
///
/// The bucket's publication must be this work directory's: one made by another (two work
/// directories publishing into one prefix, one after the other) would have its Change Lists
/// replaced by an unrelated history, and is refused ([`BuildError::Diverged`]), as is one
/// newer than the work directory's.
pub fn upload(
    collection: &Path,
    publish: &Path,
    options: &Options,
    store: &mut BucketStore,
) -> Result<UploadReport, BuildError> {
    let shown = store.bucket().shown.clone();
    let in_bucket = |name: &str| PathBuf::from(format!("{shown}/{name}"));
    // Locked: no build runs in the work directory while it is read.
    let local = GenerationStore::open(publish)?;
    let Some(generation_dir) = local.published() else {
        return Err(BuildError::State {
            path: publish.to_owned(),
            reason: "nothing built yet".into(),
        });
    };
    let state = read_state(&generation_dir)?;

    // The bucket's publication: whose, and what it holds.
    let theirs = match store.read(STATE)? {
        None => None,
        Some(bytes) => {
            Some(
                serde_json::from_slice::<State>(&bytes).map_err(|e| BuildError::State {
                    path: in_bucket(STATE),
                    reason: e.to_string(),
                })?,
            )
        }
    };
    if let Some(theirs) = &theirs {
        let reason = diverged(theirs, &state);
        if let Some(reason) = reason {
            return Err(BuildError::Diverged {
                store: shown.clone(),
                reason,
            });
        }
    }
    let uploaded: Uploaded = match store.read(UPLOADED)? {
        Some(bytes) => serde_json::from_slice(&bytes).unwrap_or_default(),
        None => Uploaded::default(),
    };
    let theirs_resources: HashMap<String, [u8; 16]> = match store.read(RESOURCES)? {
        Some(bytes) if theirs.is_some() => match LastRun::from_file(&bytes, true) {
            Ok(run) => (0..run.len())
                .map(|j| (run.path(j).to_owned(), run.resources[j].md5))
                .collect(),
            // Unreadable: everything sent again.
            Err(_) => HashMap::new(),
        },
        _ => HashMap::new(),
    };

    let mut report = UploadReport {
        generation: state.generation,
        written: 0,
        written_bytes: 0,
        kept: 0,
        removed: 0,
    };
    store.begin()?;

    // The documents (and robots.txt): the generation's own files, not the links into
    // the collection it serves the resources through.
    let mut documents = Uploaded::default();
    for found in walkdir::WalkDir::new(&generation_dir).follow_links(false) {
        let found = found.map_err(|e| BuildError::Read {
            path: generation_dir.clone(),
            source: e.into(),
        })?;
        if !found.file_type().is_file() {
            continue;
        }
        let relative = found
            .path()
            .strip_prefix(&generation_dir)
            .ok()
            .and_then(Path::to_str)
            .map(|p| p.replace(std::path::MAIN_SEPARATOR, "/"));
        let Some(name) = relative else { continue };
        if name == UPLOADED {
            continue;
        }
        let read = |source| BuildError::Read {
            path: found.path().to_owned(),
            source,
        };
        // Hashed as it is read, then read again if it goes: a package may be a gigabyte.
        let mut file = File::open(found.path()).map_err(read)?;
        let mut md5 = Md5::new();
        let mut buffer = vec![0; 1 << 16];
        let mut length = 0u64;
        loop {
            let n = file.read(&mut buffer).map_err(read)?;
            if n == 0 {
                break;
            }
            md5.update(&buffer[..n]);
            length += n as u64;
        }
        let md5 = resourcesync_model::Hash::md5(md5.finalize().into()).hex();
        if uploaded.documents.get(&name) == Some(&md5) {
            report.kept += 1;
        } else {
            let mut file = File::open(found.path()).map_err(read)?;
            store.write_from(&name, &mut file)?;
            report.written += 1;
            report.written_bytes += length;
        }
        documents.documents.insert(name, md5);
    }
    for name in uploaded.documents.keys() {
        if !documents.documents.contains_key(name) {
            store.remove(name)?;
            report.removed += 1;
        }
    }

    // The resources, unless a list's (served elsewhere).
    if options.list.is_none() {
        let bytes =
            fs::read(generation_dir.join(RESOURCES)).map_err(|source| BuildError::Read {
                path: generation_dir.join(RESOURCES),
                source,
            })?;
        let ours = LastRun::from_file(&bytes, true).map_err(|reason| BuildError::State {
            path: generation_dir.join(RESOURCES),
            reason,
        })?;
        let files = Collection::open(collection).map_err(|source| BuildError::Read {
            path: collection.to_owned(),
            source,
        })?;
        let mut listed = std::collections::HashSet::with_capacity(ours.len());
        let (mut batch, mut batched) = (Vec::new(), 0usize);
        for j in 0..ours.len() {
            let path = ours.path(j);
            listed.insert(path);
            let resource = &ours.resources[j];
            if theirs_resources.get(path) == Some(&resource.md5) {
                report.kept += 1;
                continue;
            }
            let mut file = files
                .open_file(Path::new(path))
                .map_err(|source| BuildError::Read {
                    path: collection.join(path),
                    source,
                })?;
            report.written += 1;
            report.written_bytes += resource.length;
            if resource.length >= BucketStore::PART as u64 {
                store.write_from(path, &mut file)?;
                continue;
            }
            // Small ones in batches sent many at once (at most BATCH bytes held).
            let read = |source| BuildError::Read {
                path: collection.join(path),
                source,
            };
            let mut bytes = Vec::new();
            Read::take(&mut file, BucketStore::PART as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(read)?;
            if bytes.len() > BucketStore::PART {
                // Grown since the build: sent as it is now, as a stream.
                let mut file = files.open_file(Path::new(path)).map_err(read)?;
                store.write_from(path, &mut file)?;
                continue;
            }
            batched += bytes.len();
            batch.push((path.to_owned(), bytes));
            if batched >= BATCH {
                store.write_all(std::mem::take(&mut batch))?;
                batched = 0;
            }
        }
        store.write_all(batch)?;
        for path in theirs_resources.keys() {
            if !listed.contains(path.as_str()) {
                store.remove(path)?;
                report.removed += 1;
            }
        }
    }

    let record = serde_json::to_vec(&documents).map_err(|e| BuildError::State {
        path: in_bucket(UPLOADED),
        reason: e.to_string(),
    })?;
    store.write(UPLOADED, &[&record])?;
    store.commit()?;
    Ok(report)
}

/// Why the bucket's publication (`theirs`) is not this work directory's to go on from
/// (`ours` is what the work directory built), if it is not.
fn diverged(theirs: &State, ours: &State) -> Option<String> {
    // The history's start: its first Change List, archived or not.
    let first = |s: &State| {
        s.archived
            .first()
            .or(s.change_lists.first())
            .map(|c| c.from)
    };
    if first(theirs) != first(ours) || theirs.base_url != ours.base_url {
        Some(format!(
            "the bucket holds a publication another work directory made (its Change Lists \
             from {}, at {}), or one at another base URL",
            first(theirs).map_or_else(|| "nothing".into(), |t| t.to_string()),
            theirs.base_url
        ))
    } else if theirs.generation > ours.generation {
        Some(format!(
            "the bucket holds generation {}, newer than this work directory's {}",
            theirs.generation, ours.generation
        ))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::state::ChangeListRecord;

    #[test]
    fn the_history_is_known_by_its_first_change_list_archived_or_not() {
        let at = |s: i64| W3cDateTime::from(SystemTime::UNIX_EPOCH + Duration::from_secs(s as u64));
        let list = |number, from| ChangeListRecord {
            number,
            from: at(from),
            until: None,
        };
        let history = || State {
            change_lists: vec![list(1, 100), list(2, 200)],
            ..State::default()
        };
        let (mut ours, theirs) = (history(), history());
        // The next run archives list 1: the same history.
        ours.archived = vec![ours.change_lists.remove(0)];
        ours.generation = 3;
        assert_eq!(diverged(&theirs, &ours), None);
        let other = State {
            change_lists: vec![list(1, 150)],
            ..State::default()
        };
        assert!(
            diverged(&other, &ours)
                .unwrap()
                .contains("another work directory")
        );
        let mut newer = history();
        newer.generation = 9;
        assert!(diverged(&newer, &ours).unwrap().contains("newer"));
    }
}
