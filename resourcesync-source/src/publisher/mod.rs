//! The Source fed by the application: a snapshot of its resources, or the changes its own
//! database recorded, published into a [`Store`].

use std::time::SystemTime;

use resourcesync_model::Entry;

use crate::engine::PublishError;
use crate::engine::dumps::Content;
use crate::store::Store;

mod current;
mod event;
mod options;
mod outbox;
mod report;
mod run;
mod transaction;

pub use event::ResourceEvent;
pub use options::{PublishOptions, ResourceListPolicy};
pub use report::PublishReport;
pub use transaction::Transaction;

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
        self.refuse_without(None)?;
        self.begin()?.publish_snapshot(resources, now)
    }

    /// As [`publish_snapshot`](Publisher::publish_snapshot), with the resources' content
    /// for the dumps ([`PublishOptions::resource_dump`], [`PublishOptions::change_dump`]).
    pub fn publish_snapshot_with(
        &mut self,
        resources: impl IntoIterator<Item = Entry>,
        content: &dyn Content,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        self.refuse_without(Some(content))?;
        self.begin()?.publish_snapshot_with(resources, content, now)
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
        self.refuse_without(None)?;
        self.begin()?.publish_changes(events, now)
    }

    /// As [`publish_changes`](Publisher::publish_changes), with the resources' content for
    /// the dumps ([`PublishOptions::resource_dump`], [`PublishOptions::change_dump`]).
    pub fn publish_changes_with(
        &mut self,
        events: impl IntoIterator<Item = ResourceEvent>,
        content: &dyn Content,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        self.refuse_without(Some(content))?;
        self.begin()?.publish_changes_with(events, content, now)
    }

    /// Begins a run: the application writes its own files into the publication begun
    /// ([`Transaction::write`]), then publishes the documents with one of the
    /// transaction's `publish_*` methods, which commits the whole at once.
    pub fn begin(&mut self) -> Result<Transaction<'_, S>, PublishError> {
        Transaction::begin(self)
    }

    /// Refuses a run without content when the dumps need it, before the store is
    /// touched (a generation store's begin links every file of the publication).
    pub(super) fn refuse_without(&self, content: Option<&dyn Content>) -> Result<(), PublishError> {
        let dumps = self.options.resource_dump || self.options.change_dump;
        if dumps && content.is_none() {
            return Err(PublishError::NoContent);
        }
        Ok(())
    }
}
