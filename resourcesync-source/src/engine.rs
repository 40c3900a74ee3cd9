//! What every run shares, whatever fed it (a directory's walk for `build`, the
//! application's records or events for the [`Publisher`](crate::Publisher)): its changes
//! into the Change Lists, their index and archive, then the Capability List and the Source
//! Description over what the run published, and the state's own fields.

use resourcesync_model::{Capability, Entry, Link, Uri, W3cDateTime};

use crate::build::change_list::{CHANGE_LIST_INDEX, change_list_archive, change_lists};
use crate::build::publish::capability_list;
use crate::build::state::State;
use crate::build::{BuildError, Options, STATE_VERSION};
use crate::sink::{Sink, Unchanged};

/// One run, as its adapter made it.
pub(crate) struct Run<'a> {
    /// Where the documents go.
    pub(crate) sink: &'a dyn Sink,
    /// The limits of the Change Lists, and the period that closes the open one.
    pub(crate) lists: &'a Options,
    /// The limits of the other documents, and the `describedby` link.
    pub(crate) documents: &'a Options,
    /// This run's generation, which names the parts it writes.
    pub(crate) generation: u64,
    /// When the last run published (this run's, for the first).
    pub(crate) last_at: W3cDateTime,
    /// When this run publishes.
    pub(crate) now: W3cDateTime,
    /// The `up` link of every capability document: the Capability List.
    pub(crate) up: &'a Link,
}

impl Run<'_> {
    /// Adds `changes` (Change List entries, in order of time, within the run's span) to
    /// the Change Lists, writes the Capability List with `first`, the Change Lists' own
    /// capabilities, then `last`, and the Source Description, and sets the state's fields
    /// for this run. `resources` is how many the Source has, for its about page. Returns
    /// the documents written; the Capability List, Source Description and about page are
    /// left as they are when their bytes would not change.
    pub(crate) fn publish_changes(
        &self,
        state: &mut State,
        changes: Vec<Entry>,
        first: Vec<(Uri, Capability)>,
        last: Vec<(Uri, Capability)>,
        resources: usize,
    ) -> Result<u64, BuildError> {
        let Run {
            sink,
            lists,
            documents: options,
            generation,
            last_at,
            now,
            up,
        } = *self;
        let mut documents = change_lists(sink, state, changes, last_at, now, up, lists)?;
        let mut capabilities = first;
        capabilities.push((sink.uri(CHANGE_LIST_INDEX)?, Capability::ChangeList));
        if let Some((uri, written)) = change_list_archive(sink, state, generation, up, options)? {
            documents += written.len() as u64;
            state.replace_set("changelist-archive", written);
            capabilities.push((uri, Capability::ChangeListArchive));
        }
        capabilities.extend(last);
        let unchanged = Unchanged::new(sink);
        let written = capability_list(
            &unchanged,
            capabilities,
            options.describedby.as_ref(),
            resources,
        )?;
        documents += written - unchanged.left();
        state.version = STATE_VERSION;
        state.base_url = options.base_url.to_string();
        state.generation = generation;
        state.at = Some(now);
        Ok(documents)
    }
}
