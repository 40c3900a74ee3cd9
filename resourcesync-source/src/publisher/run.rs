//! One run of the [`Publisher`](super::Publisher) into a begun publication, phase by
//! phase: what the last run left; this run's changes and, when due, its Resource List;
//! the dumps; the Change Lists and the small documents; the state for the next run.

use std::collections::BTreeMap;
use std::time::SystemTime;

use resourcesync_model::{
    Capability, Change, Entry, Link, MAX_ENTRIES, Relation, Uri, W3cDateTime,
};

use super::current::{Current, changes_since, compare, write_resource_list};
use super::event::listed;
use super::{Input, PublishOptions, PublishReport, ResourceEvent, ResourceListPolicy};
use crate::engine::Run;
use crate::engine::dumps::{Content, publisher_change_dump, publisher_resource_dump};
use crate::engine::sink::Sink;
use crate::engine::state::{ResourceListRecord, State};
use crate::engine::{
    CAPABILITY_LIST, DOCS, Limits, PublishError, SOURCE_DESCRIPTION, STATE, STATE_VERSION,
};

/// The Resource List's name: the one document, or its index.
pub(super) const RESOURCE_LIST: &str = "resourcesync/resourcelist.xml";

/// The Resource List a run wrote: the names of the documents that hold its entries, and
/// how many entries.
type Written = (Vec<String>, u64);

/// One run, into a begun publication.
///
/// `numbered` is the store's number of the publication being written, if it numbers them
/// ([`Store::writing_generation`](crate::Store::writing_generation)).
pub(super) fn publish(
    sink: &dyn Sink,
    options: &PublishOptions,
    input: Input<'_>,
    content: Option<&dyn Content>,
    now: SystemTime,
    numbered: Option<u64>,
    delivered: u64,
) -> Result<PublishReport, PublishError> {
    let mut run = Publishing::begin(sink, options, now, numbered)?;
    run.delivered = delivered;
    let (events, resource_list) = run.resources(input)?;
    let count = |change| events.iter().filter(|e| e.1.change() == change).count() as u64;
    let (created, updated, deleted) = if run.first_run {
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
    let entries: Vec<Entry> = if run.first_run {
        Vec::new()
    } else {
        events
            .iter()
            .map(|(at, event)| event.change_entry(*at))
            .collect()
    };
    let added = entries.len() as u64;
    let (first, last) = run.dumps(content, resource_list.as_ref(), &entries)?;
    let resources = resource_list.as_ref().map_or_else(
        || run.state.resource_list.as_ref().map_or(0, |rl| rl.entries),
        |(_, entries)| *entries,
    );
    let notifications = run.change_lists(entries, first, last, resources as usize)?;
    run.record(resource_list.as_ref(), added)?;
    Ok(PublishReport {
        generation: run.generation,
        at: run.now,
        created,
        updated,
        deleted,
        resource_list: resource_list.map(|(_, entries)| entries),
        documents: run.documents,
        bytes_written: 0,
        source_description: sink.uri(SOURCE_DESCRIPTION)?,
        capability_list: run.up.href.clone(),
        notifications,
    })
}

/// A run under way: what every phase reads, and the state it updates.
struct Publishing<'a> {
    sink: &'a dyn Sink,
    options: &'a PublishOptions,
    limits: Limits,
    state: State,
    first_run: bool,
    /// When the last run published (this run's, for the first).
    last_at: W3cDateTime,
    /// When this run publishes: never before the last run.
    now: W3cDateTime,
    /// This run's number, which names the parts it writes.
    generation: u64,
    /// The `up` link of every capability document: the Capability List.
    up: Link,
    rl_uri: Uri,
    /// Documents and packages written so far.
    documents: u64,
    /// The last notification the hub took.
    delivered: u64,
}

impl<'a> Publishing<'a> {
    /// Reads what the last run left, and removes what it replaced (kept for readers of
    /// the last run's indexes, not now).
    fn begin(
        sink: &'a dyn Sink,
        options: &'a PublishOptions,
        now: SystemTime,
        numbered: Option<u64>,
    ) -> Result<Publishing<'a>, PublishError> {
        let mut state = read_state(sink, options)?;
        for name in std::mem::take(&mut state.retired) {
            sink.remove(&name)?;
        }
        let now = W3cDateTime::from(now);
        let now = match state.at {
            Some(last) if !last.precedes(&now) => last,
            _ => now,
        };
        Ok(Publishing {
            sink,
            options,
            limits: options.limits(),
            first_run: state.at.is_none(),
            last_at: state.at.unwrap_or(now),
            now,
            // The store's number when it has one (a generation store's directory), so
            // that the run's generation is the store's; after the last run's in any case,
            // as the parts it names must be new.
            generation: numbered
                .filter(|&n| n > state.generation)
                .unwrap_or(state.generation + 1),
            up: Link::new(Relation::Up, sink.uri(CAPABILITY_LIST)?),
            rl_uri: sink.uri(RESOURCE_LIST)?,
            state,
            documents: 0,
            delivered: 0,
        })
    }

    /// This run's changes, in order of time, and the Resource List if this run writes it
    /// (a snapshot's always; fed changes, when the policy says). The changes since the
    /// last Resource List are read back only to write the next one.
    #[allow(clippy::type_complexity)]
    fn resources(
        &mut self,
        input: Input<'_>,
    ) -> Result<(Vec<(W3cDateTime, ResourceEvent)>, Option<Written>), PublishError> {
        let (sink, state, now, last_at) = (self.sink, &self.state, self.now, self.last_at);
        let (uri, up, limits) = (&self.rl_uri, &self.up, &self.limits);
        match input {
            Input::Changes(events) => {
                // In order of time, each within the run's span: the order the Change List
                // lists them in, and the order the Resource List applies them in, the last
                // change of a resource winning in both.
                let events = in_order_of_time(events.collect(), last_at, now);
                let due = self.first_run
                    || match (self.options.resource_list, &state.resource_list) {
                        (_, None) | (ResourceListPolicy::EveryRun, _) => true,
                        (ResourceListPolicy::EveryChanges(n), Some(rl)) => {
                            rl.changes_since + events.len() as u64 >= n
                        }
                        (ResourceListPolicy::Period(period), Some(rl)) => {
                            (now.to_utc() - rl.at.to_utc()).to_std().unwrap_or_default() >= period
                        }
                    };
                if !due {
                    return Ok((events, None));
                }
                let mut pending = changes_since(sink, state)?;
                for (_, event) in &events {
                    pending.insert(event.uri().as_str().to_owned(), event.resource());
                }
                let current = Current::new(sink, state, pending);
                let written =
                    write_resource_list(sink, current, uri, now, up, limits, self.generation)?;
                Ok((events, Some(written)))
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
                let current = Current::new(sink, state, changes_since(sink, state)?);
                let (events, kept) = compare(current, resources, last_at, now)?;
                let events = in_order_of_time(events, last_at, now);
                let kept = kept.into_iter().map(Ok);
                let written =
                    write_resource_list(sink, kept, uri, now, up, limits, self.generation)?;
                Ok((events, Some(written)))
            }
        }
    }

    /// The dumps: the Resource Dump written with the Resource List (kept while the
    /// Resource List is), the Change Dump extended by this run's changes (`entries`).
    /// Returns the Capability List's entries before the Change Lists' and after them.
    #[allow(clippy::type_complexity)]
    fn dumps(
        &mut self,
        content: Option<&dyn Content>,
        resource_list: Option<&Written>,
        entries: &[Entry],
    ) -> Result<(Vec<(Uri, Capability)>, Vec<(Uri, Capability)>), PublishError> {
        let (sink, options) = (self.sink, self.options);
        let mut first = vec![(self.rl_uri.clone(), Capability::ResourceList)];
        let mut last = Vec::new();
        let dump_name = format!("{DOCS}/resourcedump.xml");
        match (content, resource_list) {
            (Some(content), Some((written, _))) if options.resource_dump => {
                let listed = Current::of(sink, written.clone(), BTreeMap::new());
                self.documents += publisher_resource_dump(
                    sink,
                    &mut self.state,
                    listed,
                    content,
                    self.now,
                    &self.up,
                    &self.limits,
                    self.generation,
                )?;
            }
            _ if options.resource_dump => {}
            _ => {
                if self.state.resource_dump.take().is_some() {
                    sink.remove(&dump_name)?;
                    self.state.replace_set("resourcedump", Vec::new());
                }
            }
        }
        if self.state.resource_dump.is_some() {
            first.push((sink.uri(&dump_name)?, Capability::ResourceDump));
        }
        match content {
            Some(content) if options.change_dump => {
                let dumped = publisher_change_dump(
                    sink,
                    &mut self.state,
                    entries,
                    content,
                    self.generation,
                    self.last_at,
                    self.now,
                    &self.up,
                    &self.limits,
                )?;
                // None while no change was packaged: see `change_dump`.
                if let Some((uri, written)) = dumped {
                    self.documents += written;
                    last.push((uri, Capability::ChangeDump));
                }
            }
            _ => {
                // A Change Dump must hold every change of its interval: one that was off
                // for a run starts afresh when it is on again. What was published of it
                // goes.
                if self.state.change_dump_from.take().is_some() {
                    let packages: Vec<String> = std::mem::take(&mut self.state.change_dump)
                        .iter()
                        .filter_map(|entry| sink.name(&entry.loc).map(str::to_owned))
                        .collect();
                    self.state.retired.extend(packages);
                    self.state.replace_set("changedump", Vec::new());
                    sink.remove(&format!("{DOCS}/changedump.xml"))?;
                }
            }
        }
        Ok((first, last))
    }

    /// The Change Lists (their own entries per list), their index and archive, then the
    /// Capability List with `first` and `last` around them, and the Source Description;
    /// with a hub, the notifications. Returns the notifications' sequence numbers.
    fn change_lists(
        &mut self,
        entries: Vec<Entry>,
        first: Vec<(Uri, Capability)>,
        last: Vec<(Uri, Capability)>,
        resources: usize,
    ) -> Result<Vec<u64>, PublishError> {
        let mut lists = self.limits.clone();
        lists.max_entries = self
            .options
            .changelist_entries
            .clamp(1, MAX_ENTRIES as usize);
        let run = Run {
            sink: self.sink,
            lists: &lists,
            documents: &self.limits,
            generation: self.generation,
            last_at: self.last_at,
            now: self.now,
            up: &self.up,
            delivered: self.delivered,
        };
        let (documents, notifications) =
            run.publish_changes(&mut self.state, entries, first, last, resources)?;
        self.documents += documents;
        Ok(notifications)
    }

    /// Where the Resource List stands against the Change Lists (what it does not hold is
    /// what comes after this place), its parts, and the state for the next run.
    fn record(&mut self, resource_list: Option<&Written>, added: u64) -> Result<(), PublishError> {
        let state = &mut self.state;
        let open = state.change_lists.last().map_or(1, |list| list.number);
        let mark = (open, state.open.entries);
        match (resource_list, &mut state.resource_list) {
            (Some((_, entries)), record) => {
                *record = Some(ResourceListRecord {
                    at: self.now,
                    entries: *entries,
                    mark,
                    changes_since: 0,
                });
            }
            (None, Some(record)) => record.changes_since += added,
            (None, None) => {}
        }
        if let Some((written, _)) = resource_list {
            // Its parts are named after the generation; the one document (and the
            // index) not.
            let parts: Vec<String> = written
                .iter()
                .filter(|name| **name != RESOURCE_LIST)
                .cloned()
                .collect();
            self.documents += parts.len() as u64 + 1;
            state.replace_set("resourcelist", parts);
        }
        let json = serde_json::to_vec(&*state).map_err(|e| PublishError::State {
            document: STATE.into(),
            reason: e.to_string(),
        })?;
        self.sink.write(STATE, &[&json])
    }
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
