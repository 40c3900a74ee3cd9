//! A `build`'s publication published into a bucket: [`upload`].

use std::collections::{BTreeMap, HashMap};

use md5::{Digest as _, Md5};
use serde::{Deserialize, Serialize};

use super::*;
use crate::BucketStore;

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
        let first = |s: &State| s.change_lists.first().map(|c| c.from);
        let reason = if first(theirs) != first(&state) || theirs.base_url != state.base_url {
            Some(format!(
                "the bucket holds a publication another work directory made (its Change \
                 Lists from {}, at {})",
                first(theirs).map_or_else(|| "nothing".into(), |t| t.to_string()),
                theirs.base_url
            ))
        } else if theirs.generation > state.generation {
            Some(format!(
                "the bucket holds generation {}, newer than this work directory's {}",
                theirs.generation, state.generation
            ))
        } else {
            None
        };
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

    // The documents: the generation's own files.
    let mut documents = Uploaded::default();
    for top in [".well-known", DOCS, ".resourcesync"] {
        let dir = generation_dir.join(top);
        if !dir.is_dir() {
            continue;
        }
        for found in walkdir::WalkDir::new(&dir).follow_links(false) {
            let found = found.map_err(|e| BuildError::Read {
                path: dir.clone(),
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
            let bytes = fs::read(found.path()).map_err(|source| BuildError::Read {
                path: found.path().to_owned(),
                source,
            })?;
            let md5 = hex(&Md5::digest(&bytes));
            if uploaded.documents.get(&name) == Some(&md5) {
                report.kept += 1;
            } else {
                report.written += 1;
                report.written_bytes += bytes.len() as u64;
                store.write(&name, &[&bytes])?;
            }
            documents.documents.insert(name, md5);
        }
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
            store.write_from(path, &mut file)?;
            report.written += 1;
            report.written_bytes += resource.length;
        }
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

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
