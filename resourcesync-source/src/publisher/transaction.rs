//! A run of the [`Publisher`](crate::Publisher) begun, into which the application writes its own files
//! before the documents are written and the whole is published at once.

use std::time::SystemTime;

use resourcesync_model::Entry;

use super::{Input, PublishReport, Publisher, ResourceEvent, run};
use crate::engine::dumps::Content;
use crate::engine::sink::StoreSink;
use crate::engine::{DOCS, PublishError, SOURCE_DESCRIPTION, STATE};
use crate::store::Store;

/// A publication begun by [`Publisher::begin`]: the application writes its own files
/// (the resources the documents describe, an index page, ...) into it with
/// [`write`](Transaction::write) and [`remove`](Transaction::remove), then one of the
/// `publish_*` methods writes the documents and commits the whole, so that readers see the
/// resources and the documents that describe them switch together, never one without the
/// other. Dropped without publishing, nothing of it is published (the store's
/// [`abort`](Store::abort)); so is a run that fails.
///
/// The publication's own names (`resourcesync/`, `.well-known/resourcesync`,
/// `.resourcesync/`) are the documents' and are refused.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use resourcesync_model::{Entry, Fixity};
/// use resourcesync_source::{MemoryStore, PublishOptions, Publisher};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let options = PublishOptions::new("http://example.com/".parse()?);
/// let mut source = Publisher::new(MemoryStore::new(), options);
/// let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
///
/// let body = b"{\"title\": \"one\"}";
/// let mut run = source.begin()?;
/// run.write("records/1.json", &[body])?;
/// let mut fixity = Fixity::new();
/// fixity.update(body);
/// let entry = Entry::new("http://example.com/records/1.json".parse()?)
///     .with_length(body.len() as u64)
///     .with_hash(fixity.finish().hashes());
/// let report = run.publish_snapshot([entry], now)?;
/// assert_eq!(report.resource_list, Some(1));
/// assert_eq!(source.store().get("records/1.json"), Some(&body[..]));
///
/// // The documents' names are not the application's.
/// let mut run = source.begin()?;
/// assert!(run.write("resourcesync/resourcelist.xml", &[b"<urlset/>"]).is_err());
/// drop(run); // nothing published
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[must_use = "a transaction dropped publishes nothing"]
pub struct Transaction<'p, S: Store> {
    publisher: &'p mut Publisher<S>,
    /// Begun and not yet committed or aborted.
    open: bool,
}

impl<'p, S: Store> Transaction<'p, S> {
    pub(super) fn begin(publisher: &'p mut Publisher<S>) -> Result<Self, PublishError> {
        publisher.store.begin()?;
        Ok(Transaction {
            publisher,
            open: true,
        })
    }

    /// Writes the application's file `name` (relative to the publication's root, which
    /// the base URI serves) whole, its bytes given in `pieces` one after the other.
    pub fn write(&mut self, name: &str, pieces: &[&[u8]]) -> Result<(), PublishError> {
        refuse_reserved(name)?;
        Ok(self.publisher.store.write(name, pieces)?)
    }

    /// Removes the application's file `name`, if it is there.
    pub fn remove(&mut self, name: &str) -> Result<(), PublishError> {
        refuse_reserved(name)?;
        Ok(self.publisher.store.remove(name)?)
    }

    /// The bytes of `name` in the publication being written (carried over from the last
    /// one, or written since), `None` if it has none.
    pub fn read(&self, name: &str) -> Result<Option<Vec<u8>>, PublishError> {
        Ok(self.publisher.store.read(name)?)
    }

    /// [`Publisher::publish_snapshot`] into this publication, then commits it.
    pub fn publish_snapshot(
        self,
        resources: impl IntoIterator<Item = Entry>,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut resources = resources.into_iter();
        self.run(Input::Snapshot(&mut resources), None, now)
    }

    /// [`Publisher::publish_snapshot_with`] into this publication, then commits it.
    pub fn publish_snapshot_with(
        self,
        resources: impl IntoIterator<Item = Entry>,
        content: &dyn Content,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut resources = resources.into_iter();
        self.run(Input::Snapshot(&mut resources), Some(content), now)
    }

    /// [`Publisher::publish_changes`] into this publication, then commits it.
    pub fn publish_changes(
        self,
        events: impl IntoIterator<Item = ResourceEvent>,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut events = events.into_iter();
        self.run(Input::Changes(&mut events), None, now)
    }

    /// [`Publisher::publish_changes_with`] into this publication, then commits it.
    pub fn publish_changes_with(
        self,
        events: impl IntoIterator<Item = ResourceEvent>,
        content: &dyn Content,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        let mut events = events.into_iter();
        self.run(Input::Changes(&mut events), Some(content), now)
    }

    /// Writes the documents, and commits the whole if that succeeded; on an error the
    /// publication is dropped (by `Drop`).
    pub(super) fn run(
        mut self,
        input: Input<'_>,
        content: Option<&dyn Content>,
        now: SystemTime,
    ) -> Result<PublishReport, PublishError> {
        self.publisher.refuse_without(content)?;
        let options = self.publisher.options.clone();
        let numbered = self.publisher.store.writing_generation();
        let delivered = self.publisher.delivered_mark()?;
        let sink = StoreSink::new(options.base_url.clone(), &mut self.publisher.store);
        let mut report = run::publish(&sink, &options, input, content, now, numbered, delivered)?;
        report.bytes_written = sink.written();
        drop(sink);
        // Committed or not, the store holds no begun publication after this.
        self.open = false;
        if let Err(e) = self.publisher.store.commit() {
            self.publisher.store.abort();
            return Err(e.into());
        }
        Ok(report)
    }
}

impl<S: Store> Drop for Transaction<'_, S> {
    fn drop(&mut self) {
        if self.open {
            self.publisher.store.abort();
        }
    }
}

/// Refuses the names the documents and the state have: what the application writes
/// there would be overwritten by the run, or would overwrite what it wrote.
fn refuse_reserved(name: &str) -> Result<(), PublishError> {
    let own = name == SOURCE_DESCRIPTION
        || name == DOCS
        || name.starts_with(&format!("{DOCS}/"))
        || STATE
            .split_once('/')
            .is_some_and(|(dir, _)| name == dir || name.starts_with(&format!("{dir}/")));
    if own {
        return Err(PublishError::Reserved {
            name: name.to_owned(),
        });
    }
    Ok(())
}
