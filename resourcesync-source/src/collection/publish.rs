//! One generation written whole: what changed since the last run, and every document.

use super::*;

/// Writes generation `number` into `dir`, then publishes it by `commit` (the store's
/// switch to it). The phases: what the collection holds now ([`collected`]); compared with
/// the last run ([`pair`], [`to_hash`], [`hash_files`], [`outcomes`], [`published`],
/// [`change_entries`]); the documents and the state written ([`Writing`]); the switch.
#[allow(clippy::too_many_arguments)]
pub(super) fn publish_generation(
    collection: &Path,
    dir: &Path,
    previous: Previous,
    number: u64,
    options: &Options,
    now: SystemTime,
    delivered: u64,
    progress: &dyn BuildProgress,
    commit: impl FnOnce() -> Result<(), StoreError>,
) -> Result<BuildReport, BuildError> {
    let Previous {
        dir: previous_dir,
        mut state,
        resources: known,
    } = previous;
    // The generation begins empty and the run carries over what it keeps: nothing the
    // last run retired is here to remove.
    state.retired.clear();
    fs::create_dir_all(dir.join(DOCS)).map_err(written(dir))?;
    let directory = Directory::new(dir, options.base_url.clone())?;
    let uris = Uris::new(&directory);
    // `at` is when the snapshot starts (section 7): the caller's clock read before the
    // walk. The clock may have gone back since the last run: never publish before it.
    let now = W3cDateTime::from(now);
    let now = match state.at {
        Some(last) if !last.precedes(&now) => last,
        _ => now,
    };
    let Collected {
        opened,
        found,
        mut skipped,
        not_portable,
    } = collected(collection, &directory, options)?;
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

    // Compared with the last run.
    let mut media_types = previous.media_types.clone();
    let (pairs, mut listed) = pair(&found, &previous);
    let todo = to_hash(&found, &pairs, &previous);
    progress.hashing(todo.len() as u64);
    let hashed = hash_files(&opened, &found, &todo, progress)?;
    let hashed_bytes = hashed
        .iter()
        .filter_map(|(_, h)| h.digests())
        .map(|d| d.length)
        .sum();
    let first_run = state.at.is_none();
    let last_at = state.at.unwrap_or(now);
    let listed_before = previous.len();
    let Outcomes {
        made,
        outcomes,
        mut changes,
    } = outcomes(
        &found,
        &pairs,
        &mut listed,
        hashed,
        &previous,
        &mut media_types,
        &mut skipped,
        (first_run, last_at, now),
    );
    let resources = published(found, pairs, outcomes, &made, &previous, dir)?;
    // What the last run listed and is gone now.
    let gone: Vec<String> = (0..previous.len())
        .filter(|&j| !listed[j])
        .map(|j| previous.path(j).to_owned())
        .collect();
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
    let deleted = gone.len() as u64;
    changes.extend(gone.into_iter().map(|path| (now, path, None)));
    changes.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let change_entries = change_entries(
        &changes,
        &resources,
        &uris,
        &media_types,
        options,
        &directory,
        dir,
    )?;
    let changed: Vec<Option<usize>> = changes.iter().map(|c| c.2.map(|c| c.0)).collect();
    // The walk's in path order, with those the hashing left out among them.
    skipped.sort_by(|a, b| a.path.cmp(&b.path));

    // Written: the Resource List, most of a run's writing, on a thread of its own beside
    // the rest (the dumps, the Change Lists, the links, the state), which does not depend
    // on it: after the walk, one core would otherwise sit idle while the other writes.
    let sd_uri = directory.uri(SOURCE_DESCRIPTION)?;
    let cl_uri = directory.uri(CAPABILITY_LIST)?;
    let up = Link::new(Relation::Up, cl_uri.clone());
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
    let writing = Writing {
        collection,
        dir,
        opened: &opened,
        directory: &directory,
        options,
        previous_dir: previous_dir.as_deref(),
        resources: &resources,
        media_types: &media_types,
        skipped: &skipped,
        up: &up,
        last_at,
        now,
        number,
        delivered,
    };
    let (listed, rest) = std::thread::scope(|scope| {
        let listed =
            scope.spawn(|| write_resource_list(resource_list, rl_uri.clone(), now, &up, options));
        let rest = writing
            .documents(&mut state, change_entries, &changed, &rl_uri)
            .and_then(|written| writing.state(&state).map(|()| written));
        let listed = listed.join().unwrap_or_else(|_| {
            Err(BuildError::Write {
                path: dir.join(DOCS),
                source: io::Error::other("the thread writing the Resource List panicked"),
            })
        });
        (listed, rest)
    });
    // The Resource List's error first, as when it was written first.
    let listed = listed?;
    let (documents, notifications) = rest?;
    let documents = listed + documents;
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
        notifications,
        replaced_base_url: None,
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

/// The robots.txt `build` writes at the publication's root unless the collection has one.
const ROBOTS_TXT: &str = "robots.txt";

/// The error of a file of the publication that could not be written.
fn written(path: &Path) -> impl FnOnce(io::Error) -> BuildError {
    let path = path.to_owned();
    move |source| BuildError::Write { path, source }
}

/// What the collection holds now: its handle (every file is read through it, through no
/// link), its files in path order, and what was left out.
struct Collected {
    opened: Collection,
    found: Vec<Found>,
    skipped: Vec<Skipped>,
    not_portable: Vec<NotPortable>,
}

/// The collection walked (or its list read), in path order.
fn collected(
    collection: &Path,
    directory: &Directory,
    options: &Options,
) -> Result<Collected, BuildError> {
    let mut skipped = Vec::new();
    let mut not_portable = Vec::new();
    // Before the walk: a file changed after this is read again by the next run.
    let racy = Racy::now();
    let opened = Collection::open(collection).map_err(|source| BuildError::Read {
        path: collection.to_owned(),
        source,
    })?;
    let mut found = match &options.list {
        Some(list) => listed(&opened, list, &options.base_url, racy)?,
        None => walk(&opened, directory, racy, &mut skipped, &mut not_portable)?,
    };
    // In path order, as the state is, so that one pass pairs each file with what the last
    // run knew of it. The walk sorts what it found; a list is in the order it was written.
    if options.list.is_some() && !found.is_sorted_by(|a, b| a.path < b.path) {
        found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    Ok(Collected {
        opened,
        found,
        skipped,
        not_portable,
    })
}

/// What the writing of a generation reads, beside the Resource List's thread.
struct Writing<'a> {
    collection: &'a Path,
    dir: &'a Path,
    opened: &'a Collection,
    directory: &'a Directory,
    options: &'a Options,
    previous_dir: Option<&'a Path>,
    resources: &'a [Published<'a>],
    media_types: &'a MediaTypes,
    skipped: &'a [Skipped],
    up: &'a Link,
    last_at: W3cDateTime,
    now: W3cDateTime,
    number: u64,
    /// The last notification the hub took, as the mark beside the publication says.
    delivered: u64,
}

impl Writing<'_> {
    /// The dumps, the Change Lists and the documents over them, the links to the
    /// collection; returns the documents written.
    fn documents(
        &self,
        state: &mut State,
        change_entries: Vec<Entry>,
        changed: &[Option<usize>],
        rl_uri: &Uri,
    ) -> Result<(u64, Vec<u64>), BuildError> {
        let Writing {
            collection,
            dir,
            opened,
            directory,
            options,
            previous_dir,
            resources,
            media_types,
            skipped,
            up,
            last_at,
            now,
            number,
            delivered,
        } = *self;
        let limits = options.limits();
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
                    opened,
                    directory,
                    resources,
                    media_types,
                    now,
                    up,
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
                    || Some(name) == TOPIC.rsplit('/').next()
            })?;
            // The notifications the hub has not taken yet (the run removes those it took),
            // with or without a hub this run: a later run with one delivers them.
            let outbox = previous.join(OUTBOX);
            if outbox.is_dir() {
                let to = dir.join(OUTBOX);
                fs::create_dir_all(&to).map_err(written(&to))?;
                carry_over(&outbox, &to, |name| name.ends_with(".xml"))?;
            }
        }
        // The Change Dump: this run's changes as packages, added to the earlier runs'.
        let mut last = Vec::new();
        if options.change_dump {
            let dumped = change_dump(
                opened,
                directory,
                state,
                &change_entries,
                resources,
                media_types,
                changed,
                number,
                last_at,
                now,
                up,
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
            sink: directory,
            lists: &limits,
            documents: &limits,
            generation: number,
            last_at,
            now,
            up,
            delivered,
        };
        let (written, notified) =
            run.publish_changes(state, change_entries, capabilities, last, resources.len())?;
        documents += written;

        // The resources, served from the collection through one link per top-level entry.
        if options.list.is_none() {
            link_collection(collection, dir, resources, skipped)?;
        }
        // A robots.txt that names the Resource List (section 6.3.4), for a server that
        // serves the publish directory at its root; a collection's own robots.txt, linked
        // in above, is the one served.
        let robots = dir.join(ROBOTS_TXT);
        match fs::symlink_metadata(&robots) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let text = crate::discovery::robots_txt([rl_uri.as_str()]);
                crate::engine::sink::Sink::write(directory, ROBOTS_TXT, &[text.as_bytes()])?;
                documents += 1;
            }
            Err(source) => {
                return Err(BuildError::Read {
                    path: robots,
                    source,
                });
            }
            Ok(_) => {}
        }
        Ok((documents, notified))
    }

    /// The state the next run reads: durable before the switch.
    fn state(&self, state: &State) -> Result<(), BuildError> {
        let (dir, resources, media_types) = (self.dir, self.resources, self.media_types);
        let write = written;
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
            resources_file(resources, media_types).map_err(|reason| BuildError::State {
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
        Ok(())
    }
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
