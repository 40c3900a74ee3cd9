//! The Source fed by the application: a snapshot of its resources, or the changes its own
//! database recorded, published into a [`Store`].

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use resourcesync_model::{
    Capability, Change, DocumentHead, DocumentKind, Entry, Link, MAX_BYTES, MAX_ENTRIES, Relation,
    Uri, W3cDateTime,
};
use resourcesync_xml::{Reader, SetLimits, SetOptions, SetWriter};

use crate::engine::Run;
use crate::engine::change_list::change_list_name;
use crate::engine::dumps::{
    Content, GenerationParts, publisher_change_dump, publisher_resource_dump,
};
use crate::engine::sink::{Sink, StoreSink};
use crate::engine::state::{ResourceListRecord, State};
use crate::engine::{
    CAPABILITY_LIST, DOCS, Limits, PublishError, SOURCE_DESCRIPTION, STATE, STATE_VERSION,
};
use crate::store::Store;

/// The Resource List's name: the one document, or its index.
const RESOURCE_LIST: &str = "resourcesync/resourcelist.xml";

/// When a [`Publisher`] fed changes writes the Resource List again. Between two, the
/// Resource List keeps the `at` of the one written last, and the Change Lists carry the
/// Source on from there: a Destination baselines from it and follows them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceListPolicy {
    /// At every run: each run costs what the collection is.
    EveryRun,
    /// Once this many changes were published since the last one.
    EveryChanges(u64),
    /// Once the last one is this old.
    Period(Duration),
}

/// What a [`Publisher`] publishes, and how.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PublishOptions {
    /// The URL the publication's root is served at; ends with a slash.
    pub base_url: Uri,
    /// Entries per document (Resource List part, index, archive part), at most 50,000.
    pub max_entries: usize,
    /// Entries per Change List (and Change Lists per Change List Index), at most 50,000:
    /// what a run that adds one change reads and writes again is the open Change List, so
    /// a Source that publishes often keeps it short.
    pub changelist_entries: usize,
    /// Bytes per document, at most 50 MiB.
    pub max_bytes: u64,
    /// How long a Change List stays open, if the limits do not close it first.
    pub changelist_period: Option<Duration>,
    /// The Source Description's `describedby` link; without one, a page is written.
    pub describedby: Option<Uri>,
    /// When changes make the Resource List be written again.
    pub resource_list: ResourceListPolicy,
    /// Whether to publish a Resource Dump, written with each Resource List: the runs
    /// then need the resources' [`Content`].
    pub resource_dump: bool,
    /// Whether to publish a Change Dump, which each run with changes extends: the runs
    /// then need the resources' [`Content`].
    pub change_dump: bool,
    /// Bytes of content per dump package.
    pub max_package_bytes: u64,
}

impl PublishOptions {
    /// The standard's limits, Change Lists closed by the limits only, the Resource List
    /// written again once 10,000 changes were published since the last.
    pub fn new(base_url: Uri) -> PublishOptions {
        PublishOptions {
            base_url,
            max_entries: MAX_ENTRIES as usize,
            changelist_entries: MAX_ENTRIES as usize,
            max_bytes: MAX_BYTES,
            changelist_period: None,
            describedby: None,
            resource_list: ResourceListPolicy::EveryChanges(10_000),
            resource_dump: false,
            change_dump: false,
            max_package_bytes: 1 << 30,
        }
    }

    /// At most `entries` entries per document (1 to 50,000).
    pub fn with_max_entries(mut self, entries: usize) -> PublishOptions {
        self.max_entries = entries.clamp(1, MAX_ENTRIES as usize);
        self
    }

    /// At most `entries` entries per Change List (1 to 50,000).
    pub fn with_changelist_entries(mut self, entries: usize) -> PublishOptions {
        self.changelist_entries = entries.clamp(1, MAX_ENTRIES as usize);
        self
    }

    /// When the Resource List is written again.
    pub fn with_resource_list(mut self, policy: ResourceListPolicy) -> PublishOptions {
        self.resource_list = policy;
        self
    }

    /// With a Resource Dump (`true`) or without.
    pub fn with_resource_dump(mut self, on: bool) -> PublishOptions {
        self.resource_dump = on;
        self
    }

    /// With a Change Dump (`true`) or without.
    pub fn with_change_dump(mut self, on: bool) -> PublishOptions {
        self.change_dump = on;
        self
    }

    /// A Change List stays open for `period` at most.
    pub fn with_changelist_period(mut self, period: Duration) -> PublishOptions {
        self.changelist_period = Some(period);
        self
    }

    /// What the engine takes of them.
    fn limits(&self) -> Limits {
        Limits {
            base_url: self.base_url.clone(),
            max_entries: self.max_entries.clamp(1, MAX_ENTRIES as usize),
            max_bytes: self.max_bytes.clamp(4096, MAX_BYTES),
            max_package_bytes: self.max_package_bytes.max(1),
            changelist_period: self.changelist_period,
            describedby: self.describedby.clone(),
        }
    }
}

/// A change the application made, as its own database recorded it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ResourceEvent {
    /// A resource was created: its entry as the Resource List lists it (`loc`, `lastmod`,
    /// and in `rs:md` its length, hashes and media type).
    Created {
        /// The resource.
        resource: Entry,
        /// When.
        datetime: W3cDateTime,
    },
    /// A resource's content changed: its entry now.
    Updated {
        /// The resource.
        resource: Entry,
        /// When.
        datetime: W3cDateTime,
    },
    /// A resource was deleted.
    Deleted {
        /// Its URI.
        uri: Uri,
        /// When.
        datetime: W3cDateTime,
    },
}

impl ResourceEvent {
    /// `resource` was created at `datetime`.
    pub fn created(resource: Entry, datetime: W3cDateTime) -> ResourceEvent {
        ResourceEvent::Created { resource, datetime }
    }

    /// `resource` was updated at `datetime`.
    pub fn updated(resource: Entry, datetime: W3cDateTime) -> ResourceEvent {
        ResourceEvent::Updated { resource, datetime }
    }

    /// The resource at `uri` was deleted at `datetime`.
    pub fn deleted(uri: Uri, datetime: W3cDateTime) -> ResourceEvent {
        ResourceEvent::Deleted { uri, datetime }
    }

    /// The resource's URI.
    pub fn uri(&self) -> &Uri {
        match self {
            ResourceEvent::Created { resource, .. } | ResourceEvent::Updated { resource, .. } => {
                &resource.loc
            }
            ResourceEvent::Deleted { uri, .. } => uri,
        }
    }

    /// When it happened.
    pub fn datetime(&self) -> W3cDateTime {
        match self {
            ResourceEvent::Created { datetime, .. }
            | ResourceEvent::Updated { datetime, .. }
            | ResourceEvent::Deleted { datetime, .. } => *datetime,
        }
    }

    /// The change, as a Change List says it.
    pub fn change(&self) -> Change {
        match self {
            ResourceEvent::Created { .. } => Change::Created,
            ResourceEvent::Updated { .. } => Change::Updated,
            ResourceEvent::Deleted { .. } => Change::Deleted,
        }
    }

    /// The resource's Resource List entry after the change; `None` for a deletion.
    fn resource(&self) -> Option<Entry> {
        match self {
            ResourceEvent::Created { resource, .. } | ResourceEvent::Updated { resource, .. } => {
                Some(listed(resource.clone()))
            }
            ResourceEvent::Deleted { .. } => None,
        }
    }

    /// Its Change List entry, at `datetime`.
    fn change_entry(&self, datetime: W3cDateTime) -> Entry {
        let entry = match self.resource() {
            Some(resource) => resource,
            None => Entry::new(self.uri().clone()),
        };
        entry.with_change(self.change()).with_datetime(datetime)
    }
}

/// A resource's entry as a Resource List lists it: no change, no datetime.
fn listed(mut entry: Entry) -> Entry {
    if let Some(md) = &mut entry.md {
        md.change = None;
        md.datetime = None;
    }
    entry
}

/// What one run published.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PublishReport {
    /// The run, counted from 1.
    pub generation: u64,
    /// When: the time the caller gave, or the last run's if that was later.
    pub at: W3cDateTime,
    /// Resources created, updated and deleted by this run's changes (none are listed in
    /// the first run, whose Resource List is where Destinations start).
    pub created: u64,
    /// See `created`.
    pub updated: u64,
    /// See `created`.
    pub deleted: u64,
    /// The entries of the Resource List, when this run wrote it.
    pub resource_list: Option<u64>,
    /// Documents written.
    pub documents: u64,
    /// Bytes written into the store, state included.
    pub bytes_written: u64,
    /// The Source Description's URI.
    pub source_description: Uri,
    /// The Capability List's URI.
    pub capability_list: Uri,
}

impl std::fmt::Display for PublishReport {
    /// One line: the generation and its time, the changes, the Resource List's entries
    /// when written, the documents and bytes written, the Source Description's URI.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "published generation {} at {}: {} created, {} updated, {} deleted, ",
            self.generation, self.at, self.created, self.updated, self.deleted
        )?;
        if let Some(entries) = self.resource_list {
            write!(f, "a Resource List of {entries}, ")?;
        }
        write!(
            f,
            "{} documents ({} bytes); Source Description {}",
            self.documents, self.bytes_written, self.source_description
        )
    }
}

/// The Source's publishing engine, fed by the application: a snapshot of its resources
/// ([`publish_snapshot`](Publisher::publish_snapshot)) or the changes since the last run
/// ([`publish_changes`](Publisher::publish_changes)), published into a [`Store`] as a
/// Source Description, a Capability List, a Resource List (an index over parts when the
/// limits require), contiguous Change Lists with their index and, once the index is
/// full, their archive.
///
/// A run publishes all of it or nothing: everything goes into a new publication of the
/// store, committed at the end; on an error it is dropped and the last one stays. A
/// change costs what the change is: fed changes, a run reads and writes the open Change
/// List, the index and its small state, not the collection's documents (a
/// [`GenerationStore`](crate::GenerationStore) makes a hard link per file of the
/// publication, and a Change Dump, when on, is written again over all its packages); the
/// Resource List is written again when the [`ResourceListPolicy`] says (its `at` is when
/// it was written, and what it lists is the Source at that time). The time is the
/// caller's, passed to each run.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use resourcesync_model::{Entry, W3cDateTime};
/// use resourcesync_source::{ResourceEvent, MemoryStore, PublishOptions, Publisher};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = PublishOptions::new("http://example.com/".parse()?);
/// let mut source = Publisher::new(MemoryStore::new(), options);
/// let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
/// let record = |n: u32| -> Result<Entry, Box<dyn std::error::Error>> {
///     Ok(Entry::new(format!("http://example.com/items/{n}").parse()?).with_length(u64::from(n)))
/// };
/// let first = source.publish_snapshot([record(1)?, record(2)?], t0)?;
/// assert_eq!(first.resource_list, Some(2));
///
/// let t1 = t0 + Duration::from_secs(60);
/// let event = ResourceEvent::created(record(3)?, W3cDateTime::from(t1));
/// let second = source.publish_changes([event], t1)?;
/// assert_eq!((second.created, second.resource_list), (1, None));
/// let store = source.store();
/// let list = store.get("resourcesync/changelist-00001.xml").ok_or("no open Change List")?;
/// assert!(String::from_utf8_lossy(list).contains("http://example.com/items/3"));
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Publisher<S> {
    store: S,
    options: PublishOptions,
}

/// What a run is fed.
enum Input<'a> {
    Snapshot(&'a mut dyn Iterator<Item = Entry>),
    Changes(&'a mut dyn Iterator<Item = ResourceEvent>),
}

impl<S: Store> Publisher<S> {
    /// A publisher of the publication in `store`, as `options` say.
    pub fn new(store: S, options: PublishOptions) -> Publisher<S> {
        Publisher { store, options }
    }

    /// The store.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// The store, the publisher done with.
    pub fn into_store(self) -> S {
        self.store
    }

    /// Publishes every resource the Source has now, `resources` in any order: compared
    /// with what was published, the differences are listed as changes at `now` (or at a
    /// resource's `lastmod`, when that falls after the last run), and the Resource List
    /// is written from them. A resource whose length and hashes did not change keeps the
    /// entry it had, `lastmod` included, so that the Resource List and the Change Lists
    /// never disagree. A URI given twice is refused.
    pub fn publish_snapshot(
        &mut self,
        resources: impl IntoIterator<Item = Entry>,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut resources = resources.into_iter();
        self.run(Input::Snapshot(&mut resources), None, now)
    }

    /// As [`publish_snapshot`](Publisher::publish_snapshot), with the resources' content
    /// for the dumps ([`PublishOptions::resource_dump`], [`PublishOptions::change_dump`]).
    pub fn publish_snapshot_with(
        &mut self,
        resources: impl IntoIterator<Item = Entry>,
        content: &dyn Content,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut resources = resources.into_iter();
        self.run(Input::Snapshot(&mut resources), Some(content), now)
    }

    /// Publishes the changes the application made since the last run, in any order: each
    /// is listed in the open Change List at its `datetime` (brought within the time since
    /// the last run: a change the application recorded before it is listed at the last
    /// run's time, one after `now` at `now`), in order of time. The Resource List is
    /// written again as [`PublishOptions::resource_list`] says, and in the first run.
    pub fn publish_changes(
        &mut self,
        events: impl IntoIterator<Item = ResourceEvent>,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut events = events.into_iter();
        self.run(Input::Changes(&mut events), None, now)
    }

    /// As [`publish_changes`](Publisher::publish_changes), with the resources' content for
    /// the dumps ([`PublishOptions::resource_dump`], [`PublishOptions::change_dump`]).
    pub fn publish_changes_with(
        &mut self,
        events: impl IntoIterator<Item = ResourceEvent>,
        content: &dyn Content,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut events = events.into_iter();
        self.run(Input::Changes(&mut events), Some(content), now)
    }

    fn run(
        &mut self,
        input: Input<'_>,
        content: Option<&dyn Content>,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let dumps = self.options.resource_dump || self.options.change_dump;
        if dumps && content.is_none() {
            return Err(PublishError::NoContent);
        }
        self.store.begin()?;
        let options = self.options.clone();
        let sink = StoreSink::new(options.base_url.clone(), &mut self.store);
        let result = publish(&sink, &options, input, content, now).map(|mut report| {
            report.bytes_written = sink.written();
            report
        });
        drop(sink);
        match result {
            Ok(report) => {
                self.store.commit()?;
                Ok(report)
            }
            Err(e) => {
                self.store.abort();
                Err(e)
            }
        }
    }
}

/// One run, into a begun publication.
fn publish(
    sink: &dyn Sink,
    options: &PublishOptions,
    input: Input<'_>,
    content: Option<&dyn Content>,
    now: SystemTime,
) -> Result<PublishReport, PublishError> {
    let limits = options.limits();
    let mut state = read_state(sink, options)?;
    // What the last run replaced: kept for readers of the last run's indexes, not now.
    for name in std::mem::take(&mut state.retired) {
        sink.remove(&name)?;
    }
    let now = W3cDateTime::from(now);
    let now = match state.at {
        Some(last) if !last.precedes(&now) => last,
        _ => now,
    };
    let first_run = state.at.is_none();
    let last_at = state.at.unwrap_or(now);
    let generation = state.generation + 1;
    let cl_uri = sink.uri(CAPABILITY_LIST)?;
    let up = Link::new(Relation::Up, cl_uri.clone());
    let rl_name = RESOURCE_LIST;
    let rl_uri = sink.uri(rl_name)?;
    let mut documents = 0;

    // The Resource List, if this run writes it, and this run's changes. The changes since
    // the last Resource List are read back only to write the next one.
    let (events, resource_list) = match input {
        Input::Changes(events) => {
            // In order of time, each within the run's span: the order the Change List
            // lists them in, and the order the Resource List applies them in, the last
            // change of a resource winning in both.
            let events = in_order_of_time(events.collect(), last_at, now);
            let due = first_run
                || match (options.resource_list, &state.resource_list) {
                    (_, None) | (ResourceListPolicy::EveryRun, _) => true,
                    (ResourceListPolicy::EveryChanges(n), Some(rl)) => {
                        rl.changes_since + events.len() as u64 >= n
                    }
                    (ResourceListPolicy::Period(period), Some(rl)) => {
                        (now.to_utc() - rl.at.to_utc()).to_std().unwrap_or_default() >= period
                    }
                };
            let written = if due {
                let mut pending = changes_since(sink, &state)?;
                for (_, event) in &events {
                    pending.insert(event.uri().as_str().to_owned(), event.resource());
                }
                let current = Current::new(sink, &state, pending);
                Some(write_resource_list(
                    sink, current, &rl_uri, now, &up, &limits, generation,
                )?)
            } else {
                None
            };
            (events, written)
        }
        Input::Snapshot(resources) => {
            let mut resources: Vec<Entry> = resources.map(listed).collect();
            resources.sort_unstable_by(|a, b| a.loc.as_str().cmp(b.loc.as_str()));
            if let Some(twice) = resources.windows(2).find(|w| w[0].loc == w[1].loc) {
                return Err(PublishError::Resource {
                    uri: twice[0].loc.clone(),
                    reason: "given twice",
                });
            }
            let current = Current::new(sink, &state, changes_since(sink, &state)?);
            let (events, kept) = compare(current, resources, last_at, now)?;
            let events = in_order_of_time(events, last_at, now);
            let written = write_resource_list(
                sink,
                kept.into_iter().map(Ok),
                &rl_uri,
                now,
                &up,
                &limits,
                generation,
            )?;
            (events, Some(written))
        }
    };
    let count = |change| events.iter().filter(|e| e.1.change() == change).count() as u64;
    let (created, updated, deleted) = if first_run {
        (0, 0, 0)
    } else {
        (
            count(Change::Created),
            count(Change::Updated),
            count(Change::Deleted),
        )
    };

    // The Change Lists: this run's changes in order of time, within its span. The first
    // run's are in the Resource List, where Destinations start.
    let mut entries: Vec<Entry> = Vec::new();
    if !first_run {
        entries = events
            .iter()
            .map(|(at, event)| event.change_entry(*at))
            .collect();
    }
    let added = entries.len() as u64;
    let mut list_options = limits.clone();
    list_options.max_entries = options.changelist_entries.clamp(1, MAX_ENTRIES as usize);
    let run = Run {
        sink,
        lists: &list_options,
        documents: &limits,
        generation,
        last_at,
        now,
        up: &up,
    };
    let resources = resource_list.as_ref().map_or_else(
        || state.resource_list.as_ref().map_or(0, |rl| rl.entries),
        |(_, entries)| *entries,
    );
    let mut first = vec![(rl_uri, Capability::ResourceList)];
    let mut last = Vec::new();

    // The dumps: the Resource Dump written with the Resource List (kept while the
    // Resource List is), the Change Dump extended by this run's changes.
    let dump_name = format!("{DOCS}/resourcedump.xml");
    match (content, &resource_list) {
        (Some(content), Some((written, _))) if options.resource_dump => {
            let listed = Current::of(sink, written.clone(), BTreeMap::new());
            documents += publisher_resource_dump(
                sink, &mut state, listed, content, now, &up, &limits, generation,
            )?;
        }
        _ if options.resource_dump => {}
        _ => {
            if state.resource_dump.take().is_some() {
                sink.remove(&dump_name)?;
                state.replace_set("resourcedump", Vec::new());
            }
        }
    }
    if state.resource_dump.is_some() {
        first.push((sink.uri(&dump_name)?, Capability::ResourceDump));
    }
    match content {
        Some(content) if options.change_dump => {
            let dumped = publisher_change_dump(
                sink, &mut state, &entries, content, generation, last_at, now, &up, &limits,
            )?;
            // None while no change was packaged: see `change_dump`.
            if let Some((uri, written)) = dumped {
                documents += written;
                last.push((uri, Capability::ChangeDump));
            }
        }
        _ => {
            // A Change Dump must hold every change of its interval: one that was off for a
            // run starts afresh when it is on again. What was published of it goes.
            if state.change_dump_from.take().is_some() {
                let packages: Vec<String> = std::mem::take(&mut state.change_dump)
                    .iter()
                    .filter_map(|entry| sink.name(&entry.loc).map(str::to_owned))
                    .collect();
                state.retired.extend(packages);
                state.replace_set("changedump", Vec::new());
                sink.remove(&format!("{DOCS}/changedump.xml"))?;
            }
        }
    }

    documents += run.publish_changes(&mut state, entries, first, last, resources as usize)?;

    // Where the Resource List stands against the Change Lists: what it does not hold is
    // what comes after this place.
    let open = state.change_lists.last().map_or(1, |list| list.number);
    let mark = (open, state.open.entries);
    match (&resource_list, &mut state.resource_list) {
        (Some((_, entries)), record) => {
            *record = Some(ResourceListRecord {
                at: now,
                entries: *entries,
                mark,
                changes_since: 0,
            });
        }
        (None, Some(record)) => record.changes_since += added,
        (None, None) => {}
    }
    if let Some((written, _)) = &resource_list {
        // Its parts are named after the generation; the one document (and the index) not.
        let parts: Vec<String> = written
            .iter()
            .filter(|name| **name != rl_name)
            .cloned()
            .collect();
        documents += parts.len() as u64 + 1;
        state.replace_set("resourcelist", parts);
    }

    let json = serde_json::to_vec(&state).map_err(|e| PublishError::State {
        document: STATE.into(),
        reason: e.to_string(),
    })?;
    sink.write(STATE, &[&json])?;

    Ok(PublishReport {
        generation,
        at: now,
        created,
        updated,
        deleted,
        resource_list: resource_list.map(|(_, entries)| entries),
        documents,
        bytes_written: 0,
        source_description: sink.uri(SOURCE_DESCRIPTION)?,
        capability_list: cl_uri,
    })
}

/// `events` each at its datetime brought within the run's span (one the application
/// recorded before the last run at the last run's time, one after `now` at `now`,
/// compared as instants), in order of that time; events at the same time keep their order.
fn in_order_of_time(
    events: Vec<ResourceEvent>,
    last_at: W3cDateTime,
    now: W3cDateTime,
) -> Vec<(W3cDateTime, ResourceEvent)> {
    let (floor, ceiling) = (last_at.to_utc(), now.to_utc());
    let mut stamped: Vec<(W3cDateTime, ResourceEvent)> = events
        .into_iter()
        .map(|event| {
            let at = event.datetime();
            let at = if at.to_utc() < floor {
                last_at
            } else if at.to_utc() > ceiling {
                now
            } else {
                at
            };
            (at, event)
        })
        .collect();
    stamped.sort_by_key(|(at, _)| at.to_utc());
    stamped
}

/// The state the last run left, or a new one for a first run.
fn read_state(sink: &dyn Sink, options: &PublishOptions) -> Result<State, PublishError> {
    let unreadable = |reason: String| PublishError::State {
        document: STATE.into(),
        reason,
    };
    let Some(bytes) = sink.read(STATE)? else {
        return Ok(State::default());
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|e| unreadable(e.to_string()))?;
    if state.version != STATE_VERSION {
        return Err(unreadable(format!(
            "format {} is not this version's ({STATE_VERSION}); publish into a new store",
            state.version
        )));
    }
    if state.at.is_some() && state.resource_list.is_none() {
        // What `build` publishes: its Resource List is not one the Publisher can go on
        // from, and starting afresh would drop every resource it lists.
        return Err(unreadable(
            "published by build, not by a Publisher; publish into a new store".into(),
        ));
    }
    if state.base_url != options.base_url.as_str() {
        return Err(unreadable(format!(
            "published at {}, not {}; publish into a new store",
            state.base_url, options.base_url
        )));
    }
    Ok(state)
}

/// The changes published after the last Resource List, by URI, the last one of each: the
/// resource's entry now, or `None` when it was deleted. Read from the Change Lists, from
/// the place the Resource List's record marks: as many as the policy lets pass.
fn changes_since(
    sink: &dyn Sink,
    state: &State,
) -> Result<BTreeMap<String, Option<Entry>>, PublishError> {
    let mut since = BTreeMap::new();
    let Some(record) = &state.resource_list else {
        return Ok(since);
    };
    let (first, skip) = record.mark;
    let last = state.change_lists.last().map_or(first, |list| list.number);
    for number in first..=last {
        let name = change_list_name(number);
        let damaged = |reason: String| PublishError::State {
            document: name.clone(),
            reason,
        };
        // Its changes are not in the last Resource List: without them the next would
        // list what is gone, or miss what came.
        let bytes = sink.read(&name)?.ok_or_else(|| {
            damaged("not found; the changes since the last Resource List are lost".into())
        })?;
        let mut reader = Reader::new(&bytes[..]).map_err(|e| damaged(e.to_string()))?;
        let mut index = 0;
        while let Some(entry) = reader.next_entry().map_err(|e| damaged(e.to_string()))? {
            index += 1;
            if number == first && index <= skip {
                continue;
            }
            let deleted = entry.md.as_ref().and_then(|md| md.change) == Some(Change::Deleted);
            let key = entry.loc.as_str().to_owned();
            since.insert(key, (!deleted).then(|| listed(entry)));
        }
    }
    Ok(since)
}

/// The resources as published: the last Resource List's entries with the changes since
/// applied, in order of URI, one part of the list in memory at a time.
struct Current<'s> {
    sink: &'s dyn Sink,
    parts: std::vec::IntoIter<String>,
    part: std::vec::IntoIter<Entry>,
    pending: std::iter::Peekable<std::collections::btree_map::IntoIter<String, Option<Entry>>>,
    next: Option<Entry>,
}

impl<'s> Current<'s> {
    /// The entries of the Resource List whose entries `documents` hold (the one document,
    /// or the parts), with `pending` applied.
    fn of(
        sink: &'s dyn Sink,
        documents: Vec<String>,
        pending: BTreeMap<String, Option<Entry>>,
    ) -> Current<'s> {
        Current {
            sink,
            parts: documents.into_iter(),
            part: Vec::new().into_iter(),
            pending: pending.into_iter().peekable(),
            next: None,
        }
    }

    /// The last Resource List's entries, as `state` records it, with `pending` applied.
    fn new(
        sink: &'s dyn Sink,
        state: &State,
        pending: BTreeMap<String, Option<Entry>>,
    ) -> Current<'s> {
        let parts = state.sets.get("resourcelist").cloned().unwrap_or_default();
        let documents = match (&state.resource_list, parts.is_empty()) {
            (None, _) => Vec::new(),
            (Some(_), true) => vec![RESOURCE_LIST.to_owned()],
            (Some(_), false) => parts,
        };
        Current::of(sink, documents, pending)
    }

    /// The next entry of the last Resource List, reading its next part when one ends.
    fn listed(&mut self) -> Result<Option<Entry>, PublishError> {
        loop {
            if let Some(entry) = self.part.next() {
                return Ok(Some(entry));
            }
            let Some(name) = self.parts.next() else {
                return Ok(None);
            };
            let damaged = |reason: String| PublishError::State {
                document: name.clone(),
                reason: format!("the last Resource List: {reason}"),
            };
            let bytes = self
                .sink
                .read(&name)?
                .ok_or_else(|| damaged("not found".into()))?;
            let mut reader = Reader::new(&bytes[..]).map_err(|e| damaged(e.to_string()))?;
            let mut entries = Vec::new();
            while let Some(entry) = reader.next_entry().map_err(|e| damaged(e.to_string()))? {
                entries.push(entry);
            }
            self.part = entries.into_iter();
        }
    }
}

impl Iterator for Current<'_> {
    type Item = Result<Entry, PublishError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.next.is_none() {
                match self.listed() {
                    Ok(next) => self.next = next,
                    Err(e) => return Some(Err(e)),
                }
            }
            let order = match (&self.next, self.pending.peek()) {
                (None, None) => return None,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(listed), Some((uri, _))) => listed.loc.as_str().cmp(uri.as_str()),
            };
            match order {
                std::cmp::Ordering::Less => return self.next.take().map(Ok),
                std::cmp::Ordering::Equal => {
                    self.next = None;
                    if let Some((_, Some(now))) = self.pending.next() {
                        return Some(Ok(now));
                    }
                }
                std::cmp::Ordering::Greater => {
                    if let Some((_, Some(now))) = self.pending.next() {
                        return Some(Ok(now));
                    }
                }
            }
        }
    }
}

/// Whether a resource's content differs between two entries: by length and hashes, or by
/// `lastmod` where neither has a hash.
fn differs(old: &Entry, new: &Entry) -> bool {
    let (a, b) = (old.md.as_ref(), new.md.as_ref());
    let hash = |md: Option<&resourcesync_model::Md>| md.and_then(|md| md.hash.clone());
    let length = |md: Option<&resourcesync_model::Md>| md.and_then(|md| md.length);
    if length(a) != length(b) || hash(a) != hash(b) {
        return true;
    }
    hash(a).is_none() && old.lastmod != new.lastmod
}

/// Compares the resources as published with a snapshot (in order of URI): the changes, as
/// events at the resource's `lastmod` when it falls after `last_at`, else at `now`, and
/// the entries the Resource List lists now (an unchanged resource's as it was).
fn compare(
    current: Current<'_>,
    snapshot: Vec<Entry>,
    last_at: W3cDateTime,
    now: W3cDateTime,
) -> Result<(Vec<ResourceEvent>, Vec<Entry>), PublishError> {
    let when = |entry: &Entry| match entry.lastmod {
        Some(at) if last_at.precedes(&at) && !now.precedes(&at) => at,
        _ => now,
    };
    let mut events = Vec::new();
    let mut kept = Vec::with_capacity(snapshot.len());
    let mut current = current.peekable();
    for resource in snapshot {
        loop {
            let order = match current.peek() {
                Some(Ok(old)) => old.loc.as_str().cmp(resource.loc.as_str()),
                Some(Err(_)) => {
                    if let Some(Err(e)) = current.next() {
                        return Err(e);
                    }
                    continue;
                }
                None => std::cmp::Ordering::Greater,
            };
            match order {
                std::cmp::Ordering::Less => {
                    if let Some(Ok(gone)) = current.next() {
                        events.push(ResourceEvent::deleted(gone.loc, now));
                    }
                }
                std::cmp::Ordering::Equal => {
                    if let Some(Ok(old)) = current.next() {
                        if differs(&old, &resource) {
                            events.push(ResourceEvent::updated(resource.clone(), when(&resource)));
                            kept.push(resource);
                        } else {
                            kept.push(old);
                        }
                    }
                    break;
                }
                std::cmp::Ordering::Greater => {
                    events.push(ResourceEvent::created(resource.clone(), when(&resource)));
                    kept.push(resource);
                    break;
                }
            }
        }
    }
    for gone in current {
        events.push(ResourceEvent::deleted(gone?.loc, now));
    }
    Ok((events, kept))
}

/// Writes the Resource List of `entries` (in order of URI) at `uri`, one document or an
/// index over parts named after the generation; returns the names of the documents that
/// hold its entries (the one document, or the parts) and its entries.
fn write_resource_list(
    sink: &dyn Sink,
    entries: impl Iterator<Item = Result<Entry, PublishError>>,
    uri: &Uri,
    now: W3cDateTime,
    up: &Link,
    options: &Limits,
    generation: u64,
) -> Result<(Vec<String>, u64), PublishError> {
    let document_error = |source| PublishError::Document {
        document: uri.to_string(),
        source,
    };
    let head = DocumentHead::of_kind(DocumentKind::ResourceList)
        .with_at(now)
        .with_link(up.clone());
    let limits = SetLimits::new(options.max_entries as u64, options.max_bytes);
    let store = GenerationParts {
        sink,
        stem: format!("{DOCS}/resourcelist-g{generation}"),
    };
    let set_options = SetOptions::default().with_limits(limits);
    let mut list =
        SetWriter::with_store(head, uri.clone(), store, set_options).map_err(document_error)?;
    for entry in entries {
        list.write_entry(&entry?).map_err(document_error)?;
    }
    let summary = list.finish().map_err(document_error)?.output;
    let mut names: Vec<String> = summary
        .documents
        .iter()
        .filter_map(|uri| sink.name(uri).map(str::to_owned))
        .collect();
    // The parts, then the index: the entries are in the parts.
    if names.len() > 1 {
        names.pop();
    }
    Ok((names, summary.entries))
}
