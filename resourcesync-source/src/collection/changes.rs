//! This run's resources compared with the last run's: each file paired with what the last
//! run knew of it, the files read again, what changed, and the Change List entries.

use super::*;

/// What the hashing came to, file by file: the resources made anew, each file's outcome
/// (its index in `made`, or `None` when it was left out), and the changes found.
pub(super) struct Outcomes {
    pub(super) made: Vec<Resource>,
    pub(super) outcomes: Vec<(usize, Option<usize>)>,
    pub(super) changes: Vec<ChangeAt>,
}

/// Each file paired with the last run's resource at its path, by its place among them
/// (which is its entry's in the Resource List the last run wrote), in one pass over both:
/// each in path order. The second vector marks what the last run listed and is still
/// here; the rest is gone.
pub(super) fn pair(found: &[Found], previous: &LastRun) -> (Vec<Option<usize>>, Vec<bool>) {
    let mut listed = vec![false; previous.len()];
    let mut pairs = Vec::with_capacity(found.len());
    let mut j = 0;
    for f in found {
        while j < previous.len() && previous.path(j) < f.path.as_str() {
            j += 1;
        }
        let paired = j < previous.len() && previous.path(j) == f.path;
        pairs.push(paired.then_some(j));
        if paired {
            listed[j] = true;
            j += 1;
        }
    }
    (pairs, listed)
}

/// What changed: a file of another size, modification time or stamp (a change time or
/// inode: a rewrite that kept the size and time) is read again, and one whose stamp the
/// last run could not trust.
pub(super) fn to_hash(found: &[Found], pairs: &[Option<usize>], previous: &LastRun) -> Vec<usize> {
    (0..found.len())
        .filter(|&i| {
            let f = &found[i];
            pairs[i].is_none_or(|j| {
                let r = &previous.resources[j];
                r.length != f.length || r.mtime != f.mtime || r.stamp != f.stamp || r.stamp == 0
            })
        })
        .collect()
}

/// What the hashing found, file by file in their order: a resource made anew, or the file
/// left out (and reported in `skipped`; deleted, if the last run listed it). A change
/// names its resource by its place among those published: its file's, less the files
/// left out before it.
#[allow(clippy::too_many_arguments)]
pub(super) fn outcomes(
    found: &[Found],
    pairs: &[Option<usize>],
    listed: &mut [bool],
    hashed: Vec<(usize, Hashed)>,
    previous: &LastRun,
    media_types: &mut MediaTypes,
    skipped: &mut Vec<Skipped>,
    (first_run, last_at, now): (bool, W3cDateTime, W3cDateTime),
) -> Outcomes {
    let mut changes: Vec<ChangeAt> = Vec::new();
    let mut made: Vec<Resource> = Vec::with_capacity(hashed.len());
    let mut outcomes: Vec<(usize, Option<usize>)> = Vec::with_capacity(hashed.len());
    for (i, hashed) in hashed {
        let f = &found[i];
        let paired = pairs[i];
        let resource = match hashed {
            Hashed::Gone => {
                // Gone while the run read it: deleted, if the last run listed it.
                if let Some(j) = paired {
                    listed[j] = false;
                }
                skipped.push(Skipped::because(
                    f.file.clone().unwrap_or_else(|| PathBuf::from(&f.path)),
                    "deleted, or replaced by what is not a file, while the run read it",
                ));
                None
            }
            Hashed::Unreadable(error) => {
                // Not published, so deleted if the last run listed it: the Change Lists
                // say what the Resource List no longer holds.
                if let Some(j) = paired {
                    listed[j] = false;
                }
                skipped.push(Skipped::unreadable(
                    f.file.clone().unwrap_or_else(|| PathBuf::from(&f.path)),
                    &error,
                ));
                None
            }
            Hashed::Digests(digests) => {
                let mut resource = Resource {
                    length: digests.length,
                    mtime: f.mtime,
                    lastmod: f.mtime,
                    stamp: f.stamp,
                    md5: digests.md5.0,
                    sha256: digests.sha256.0,
                    media_type: media_types.of(match &f.file {
                        // A resource: never one of the documents, whose names
                        // are not published.
                        Some(file) => crate::media::guessed(file),
                        None => crate::media::guessed(Path::new(&f.path)),
                    }),
                };
                let change = match paired.map(|j| &previous.resources[j]) {
                    None => Some(Change::Created),
                    Some(old)
                        if old.md5 != resource.md5
                            || old.sha256 != resource.sha256
                            || old.length != resource.length =>
                    {
                        Some(Change::Updated)
                    }
                    // Touched, not changed: only the file's time is new, and the
                    // resource keeps its lastmod (see `Resource::lastmod`), which no
                    // change in the Change Lists would otherwise account for.
                    Some(old) => {
                        resource.lastmod = old.lastmod;
                        None
                    }
                };
                if let Some(change) = change.filter(|_| !first_run) {
                    // When it changed, as far as the file says, within this run's span.
                    let modified = W3cDateTime::from(time_of(f.mtime));
                    let datetime = if last_at.precedes(&modified) && !now.precedes(&modified) {
                        modified
                    } else {
                        now
                    };
                    let place = i - (outcomes.len() - made.len());
                    changes.push((datetime, f.path.clone(), Some((place, change))));
                }
                made.push(resource);
                Some(made.len() - 1)
            }
        };
        outcomes.push((i, resource));
    }
    Outcomes {
        made,
        outcomes,
        changes,
    }
}

/// Every file that is published, in order, with its resource: made by this run
/// (`outcomes`), or the last run's (same size and time: unchanged, and not read).
/// Collected into the walk's own allocation (a `Published` is no larger than a `Found`):
/// no new memory for 100,000 of them to take, page by page.
pub(super) fn published<'a>(
    found: Vec<Found>,
    pairs: Vec<Option<usize>>,
    outcomes: Vec<(usize, Option<usize>)>,
    made: &'a [Resource],
    previous: &'a LastRun,
    dir: &Path,
) -> Result<Vec<Published<'a>>, BuildError> {
    let mut outcomes = outcomes.into_iter().peekable();
    let resources: Vec<Published<'_>> = found
        .into_iter()
        .zip(pairs)
        .enumerate()
        .filter_map(|(i, (f, paired))| {
            let (resource, written) = match outcomes.next_if(|(k, _)| *k == i) {
                Some((_, None)) => return None,
                Some((_, Some(k))) => (&made[k], None),
                // Not hashed: paired with the last run's resource of the same size and
                // time (`todo` holds every other file).
                None => match paired {
                    Some(j) => (&previous.resources[j], Some(j)),
                    None => {
                        return Some(Err(BuildError::State {
                            path: dir.join(STATE),
                            reason: format!("{} was neither hashed nor known", f.path),
                        }));
                    }
                },
            };
            Some(Ok(Published {
                path: f.path,
                file: f.file,
                uri: f.uri,
                resource,
                written,
            }))
        })
        .collect::<Result<_, _>>()?;
    Ok(resources)
}

/// The Change List entries of `changes` (in order), each resource's entry as the
/// Resource List lists it, with its change and datetime.
pub(super) fn change_entries(
    changes: &[ChangeAt],
    resources: &[Published<'_>],
    uris: &Uris<'_>,
    media_types: &MediaTypes,
    options: &Options,
    directory: &Directory,
    dir: &Path,
) -> Result<Vec<Entry>, BuildError> {
    let mut change_entries = Vec::with_capacity(changes.len());
    for (datetime, path, change) in changes {
        let entry = match change {
            Some((i, change)) => {
                let published = &resources[*i];
                resource_entry(&published.uri(uris)?, published.resource, media_types)
                    .with_change(*change)
            }
            // A listed resource's key is its URI.
            None if options.list.is_some() => {
                Entry::new(path.parse().map_err(|e: resourcesync_model::UriError| {
                    BuildError::State {
                        path: dir.join(STATE),
                        reason: format!("{path} is no URI: {e}"),
                    }
                })?)
                .with_change(Change::Deleted)
            }
            None => {
                let uri = resource_uri(directory, path).map_err(|reason| BuildError::State {
                    path: dir.join(STATE),
                    reason: format!("{path} makes no URI: {reason}"),
                })?;
                Entry::new(uri).with_change(Change::Deleted)
            }
        };
        change_entries.push(entry.with_datetime(*datetime));
    }
    Ok(change_entries)
}
