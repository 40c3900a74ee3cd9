//! One generation written whole: what changed since the last run, and every document.

use super::*;

/// Writes generation `number` into `dir`, then publishes it by `commit` (the store's
/// switch to it).
#[allow(clippy::too_many_arguments)]
pub(super) fn publish_generation(
    collection: &Path,
    dir: &Path,
    previous: Previous,
    number: u64,
    options: &Options,
    now: SystemTime,
    progress: &dyn Progress,
    commit: impl FnOnce() -> Result<(), StoreError>,
) -> Result<BuildReport, BuildError> {
    let write = |path: &Path| {
        let path = path.to_owned();
        move |source| BuildError::Write { path, source }
    };
    let Previous {
        dir: previous_dir,
        mut state,
        resources: known,
    } = previous;
    // The generation begins empty and the run carries over what it keeps: nothing the
    // last run retired is here to remove.
    state.retired.clear();
    fs::create_dir_all(dir.join(DOCS)).map_err(write(dir))?;
    let directory = Directory::new(dir, options.base_url.clone())?;
    let uris = Uris::new(&directory);
    let mut skipped = Vec::new();
    let mut not_portable = Vec::new();
    // `at` is when the snapshot starts (section 7): the caller's clock read before the
    // walk. The clock may have gone back since the last run: never publish before it.
    let now = W3cDateTime::from(now);
    let now = match state.at {
        Some(last) if !last.precedes(&now) => last,
        _ => now,
    };
    // Before the walk: a file changed after this is read again by the next run.
    let racy = Racy::now();
    // Every file of the collection is read through this handle, through no link.
    let opened = Collection::open(collection).map_err(|source| BuildError::Read {
        path: collection.to_owned(),
        source,
    })?;
    let mut found = match &options.list {
        Some(list) => listed(&opened, list, &options.base_url, racy)?,
        None => walk(&opened, &directory, racy, &mut skipped, &mut not_portable)?,
    };
    // In path order, as the state is, so that one pass pairs each file with what the last
    // run knew of it. The walk sorts what it found; a list is in the order it was written.
    if options.list.is_some() && !found.is_sorted_by(|a, b| a.path < b.path) {
        found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    let previous = match &known {
        None => Arc::default(),
        Some(known) => known.resources()?,
    };
    // Nothing found where the last run listed resources: the collection is most likely
    // not the one meant (a wrong path, a disk not mounted), and publishing it would have
    // every Destination that deletes delete everything. Refused unless asked for.
    if found.is_empty() && previous.len() > 0 && !options.allow_empty {
        return Err(BuildError::Emptied {
            collection: options
                .list
                .clone()
                .unwrap_or_else(|| collection.to_owned()),
            listed: previous.len() as u64,
        });
    }
    let mut media_types = previous.media_types.clone();

    // Each file paired with the last run's resource at its path, by its place among them
    // (which is its entry's in the Resource List the last run wrote), in one pass over
    // both: each in path order. `listed` marks what the last run listed and is still
    // here; the rest is gone.
    let mut listed = vec![false; previous.len()];
    let mut pairs = Vec::with_capacity(found.len());
    let mut j = 0;
    for f in &found {
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
    // What changed: a file of another size, modification time or stamp (a change time
    // or inode: a rewrite that kept the size and time) is read again, and one whose
    // stamp the last run could not trust.
    let todo: Vec<usize> = (0..found.len())
        .filter(|&i| {
            let f = &found[i];
            pairs[i].is_none_or(|j| {
                let r = &previous.resources[j];
                r.length != f.length || r.mtime != f.mtime || r.stamp != f.stamp || r.stamp == 0
            })
        })
        .collect();
    progress.hashing(todo.len() as u64);
    let hashed = hash_files(&opened, &found, &todo, progress)?;
    let hashed_bytes = hashed
        .iter()
        .filter_map(|(_, h)| h.digests())
        .map(|d| d.length)
        .sum();

    let first_run = state.at.is_none();
    let last_at = state.at.unwrap_or(now);

    let mut changes: Vec<ChangeAt> = Vec::new();
    let mut gone = Vec::new();
    let listed_before = previous.len();
    // First what the hashing found, file by file in their order: a resource made anew
    // (in `made`), or the file left out (`None`). A change names its resource by its
    // place among those published: its file's, less the files left out before it.
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
                        Some(file) => media_type(file),
                        None => media_type(Path::new(&f.path)),
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
    // Then every file that is published, in order, with its resource: made above, or the
    // last run's (same size and time: unchanged, and not read). Collected into the
    // walk's own allocation (a `Published` is no larger than a `Found`): no new memory
    // for 100,000 of them to take, page by page.
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
    gone.extend(
        (0..previous.len())
            .filter(|&j| !listed[j])
            .map(|j| previous.path(j).to_owned()),
    );
    let count = |kind| {
        changes
            .iter()
            .filter(|c| c.2.map(|c| c.1) == Some(kind))
            .count() as u64
    };
    let created = if first_run {
        resources.len() as u64
    } else {
        count(Change::Created)
    };
    let updated = count(Change::Updated);
    // What the last run listed and is gone now.
    let deleted = gone.len() as u64;
    changes.extend(gone.into_iter().map(|path| (now, path, None)));
    changes.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut change_entries = Vec::with_capacity(changes.len());
    for (datetime, path, change) in &changes {
        let entry = match change {
            Some((i, change)) => {
                let published = &resources[*i];
                resource_entry(&published.uri(&uris)?, published.resource, &media_types)
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
                let uri = resource_uri(&directory, path).map_err(|reason| BuildError::State {
                    path: dir.join(STATE),
                    reason: format!("{path} makes no URI: {reason}"),
                })?;
                Entry::new(uri).with_change(Change::Deleted)
            }
        };
        change_entries.push(entry.with_datetime(*datetime));
    }
    let changed: Vec<Option<usize>> = changes.iter().map(|c| c.2.map(|c| c.0)).collect();

    let sd_uri = directory.uri(SOURCE_DESCRIPTION)?;
    let cl_uri = directory.uri(CAPABILITY_LIST)?;
    let up = Link::new(Relation::Up, cl_uri.clone());
    let limits = options.limits();
    let mut documents = 0u64;

    // The Resource List, as one document or an index over parts.
    let rl_uri = directory.uri(&format!("{DOCS}/resourcelist.xml"))?;
    let bytes = resources.iter().map(|p| p.resource.length).sum();
    let resource_list = ResourceListRun {
        directory: &directory,
        uris: &uris,
        resources: &resources,
        media_types: &media_types,
        last_list: known.map(|known| known.list),
        listed_before,
        generation: number,
    };
    // The Resource List, most of a run's writing, on a thread of its own beside the rest
    // (the dumps, the Change Lists, the links, the state), which does not depend on it:
    // after the walk, one core would otherwise sit idle while the other writes.
    let (listed, rest) = std::thread::scope(|scope| {
        let listed =
            scope.spawn(|| write_resource_list(resource_list, rl_uri.clone(), now, &up, options));
        let rest = (|| -> Result<u64, BuildError> {
            let mut documents = 0;
            let mut capabilities = vec![(rl_uri.clone(), Capability::ResourceList)];

            // The Resource Dump: every resource again, packaged; or the one published before,
            // whose `at` the Change Lists cover from, so that a Destination baselines from it
            // and goes on from there. Packaging the whole collection again is on request.
            // Its packages are named after the generation that wrote them, as the Resource List's
            // parts are; those of the dump published last are carried over.
            if options.resource_dump {
                let published = previous_dir.as_ref().zip(state.resource_dump);
                if let Some((previous, g)) = published {
                    let prefix = format!("resourcedump-g{g}-");
                    let keep_document = !options.new_resource_dump;
                    carry_over(&previous.join(DOCS), &dir.join(DOCS), |name| {
                        name.starts_with(&prefix) || keep_document && name == "resourcedump.xml"
                    })?;
                }
                if published.is_none() || options.new_resource_dump {
                    let dumped = resource_dump(
                        &opened,
                        &directory,
                        &resources,
                        &media_types,
                        now,
                        &up,
                        options,
                        number,
                    )?;
                    // No resource, no Resource Dump (omitted, not empty): the next run with
                    // resources packages them.
                    state.resource_dump = dumped.then_some(number);
                    documents += u64::from(dumped);
                }
                if state.resource_dump.is_some() {
                    capabilities.push((
                        directory.uri(&format!("{DOCS}/resourcedump.xml"))?,
                        Capability::ResourceDump,
                    ));
                }
            } else {
                state.resource_dump = None;
            }

            // The Change Lists and the Change Dump's packages are carried over from the last
            // generation unchanged; of the archive, the Change Dump's parts and the Resource
            // List's, which each run writes again (parts named after the generation), the
            // last generation's parts only, for readers of its index: one that read it
            // before the switch reads its parts after it, never another generation's
            // under the same names. (Here rather than on the Resource List's thread, the
            // longer of the two.)
            if let Some(previous) = &previous_dir {
                let archive_parts = format!("changelist-archive-g{}-", state.generation);
                let dump_parts = format!("changedump-g{}-", state.generation);
                let list_parts = format!("resourcelist-g{}-", state.generation);
                carry_over(&previous.join(DOCS), &dir.join(DOCS), |name| {
                    name.starts_with("changelist-") && !name.starts_with("changelist-archive")
                        || name.starts_with(&archive_parts)
                        || name.starts_with("changedump-") && !name.starts_with("changedump-g")
                        || name.starts_with(&dump_parts)
                        || name.starts_with(&list_parts)
                })?;
            }
            // The Change Dump: this run's changes as packages, added to the earlier runs'.
            let mut last = Vec::new();
            if options.change_dump {
                let dumped = change_dump(
                    &opened,
                    &directory,
                    &mut state,
                    &change_entries,
                    &resources,
                    &media_types,
                    &changed,
                    number,
                    last_at,
                    now,
                    &up,
                    options,
                )?;
                if let Some((uri, written)) = dumped {
                    documents += written;
                    last.push((uri, Capability::ChangeDump));
                }
            } else {
                // A Change Dump must hold every change of its interval: one that was off for a
                // run starts afresh when it is on again.
                state.change_dump_from = None;
                state.change_dump.clear();
            }
            let run = Run {
                sink: &directory,
                lists: &limits,
                documents: &limits,
                generation: number,
                last_at,
                now,
                up: &up,
            };
            documents += run.publish_changes(
                &mut state,
                change_entries,
                capabilities,
                last,
                resources.len(),
            )?;

            // The resources, served from the collection through one link per top-level entry.
            if options.list.is_none() {
                link_collection(collection, dir, &resources, &skipped)?;
            }
            // The walk's in path order, with those the hashing left out among them.
            skipped.sort_by(|a, b| a.path.cmp(&b.path));

            let state_path = dir.join(STATE);
            if let Some(parent) = state_path.parent() {
                fs::create_dir_all(parent).map_err(write(parent))?;
            }
            let json = serde_json::to_vec(&state).map_err(|e| BuildError::State {
                path: state_path.clone(),
                reason: e.to_string(),
            })?;
            let resources_path = dir.join(RESOURCES);
            let records =
                resources_file(&resources, &media_types).map_err(|reason| BuildError::State {
                    path: resources_path.clone(),
                    reason,
                })?;
            // Durable before the switch: a publication whose state is lost cannot be built on.
            // Created new in the generation this run made: nothing there is another's to truncate.
            for (path, bytes) in [(&state_path, &json), (&resources_path, &records)] {
                fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)
                    .and_then(|mut file| {
                        io::Write::write_all(&mut file, bytes)?;
                        file.sync_all()
                    })
                    .map_err(write(path))?;
            }
            Ok(documents)
        })();
        let listed = listed.join().unwrap_or_else(|_| {
            Err(BuildError::Write {
                path: dir.join(DOCS),
                source: io::Error::other("the thread writing the Resource List panicked"),
            })
        });
        (listed, rest)
    });
    // The Resource List's error first, as when it was written first.
    documents += listed? + rest?;
    // The generation's directories are synced by the store's commit.

    let report = BuildReport {
        generation: number,
        at: now,
        resources: resources.len() as u64,
        bytes,
        created,
        updated,
        deleted,
        hashed_files: todo.len() as u64,
        hashed_bytes,
        unreadable: skipped.iter().filter(|s| s.is_unreadable()).count() as u64,
        not_portable,
        skipped,
        source_description: sd_uri,
        capability_list: cl_uri,
        documents,
        directory: dir.to_owned(),
    };
    // The run's memory (a string per resource, the last run's resources: 3-4 ms to free
    // on this VM) freed on a thread of its own while this one switches to the generation
    // (syncs it, links it, removes the one before last: as long). The resources borrow
    // the last run's, so their strings are taken out first, in place.
    let paths: Vec<String> = resources.into_iter().map(|p| p.path).collect();
    std::thread::scope(|scope| {
        scope.spawn(move || drop((paths, previous, made)));
        commit()
    })?;
    Ok(report)
}

/// A resource this run publishes.
pub(super) struct Published<'a> {
    /// Its key: its path in the collection, or with a list, its URI.
    pub(super) path: String,
    /// With a list: its file.
    pub(super) file: Option<PathBuf>,
    /// As [`Found::uri`].
    pub(super) uri: Option<Uri>,
    /// What the run knows of it: the last run's (unchanged), or made by this one.
    pub(super) resource: &'a Resource,
    /// Unchanged since the last run, which listed it at this place: its Resource List
    /// entry is the bytes written then.
    pub(super) written: Option<usize>,
}

impl Published<'_> {
    /// Its URI (see [`Uris::of_found`]).
    pub(super) fn uri(&self, uris: &Uris<'_>) -> Result<Uri, BuildError> {
        uris.of_found(self.uri.as_ref(), &self.path)
    }

    /// Its file: under the collection by its path, or where the list says.
    pub(super) fn file(&self, collection: &Path) -> PathBuf {
        match &self.file {
            Some(file) => file.clone(),
            None => collection.join(&self.path),
        }
    }

    /// Its file's path in the collection.
    pub(super) fn relative<'a>(&'a self, collection: &Collection) -> &'a Path {
        match &self.file {
            Some(file) => file.strip_prefix(collection.path()).unwrap_or(file),
            None => Path::new(&self.path),
        }
    }
}
