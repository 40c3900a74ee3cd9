//! What every run shares, whatever fed it (a directory's walk for `build`, the
//! application's records or events for the [`Publisher`](crate::Publisher)): its changes
//! into the Change Lists, their index and archive, then the Capability List and the Source
//! Description over what the run published, and the state's own fields.

use resourcesync_model::{Capability, Entry, Link, Uri, W3cDateTime};

pub(crate) mod change_list;
pub(crate) mod documents;
pub(crate) mod dumps;
mod error;
pub(crate) mod notification;
pub(crate) mod sink;
pub(crate) mod state;

pub use error::PublishError;

use change_list::{CHANGE_LIST_INDEX, change_list_archive, change_lists};
use documents::capability_list;
use sink::{Sink, Unchanged};
use state::State;

/// Where the documents go, under the base.
pub(crate) const DOCS: &str = "resourcesync";
/// The Source Description's name (section 6.3.2).
pub(crate) const SOURCE_DESCRIPTION: &str = ".well-known/resourcesync";
/// The Capability List's name.
pub(crate) const CAPABILITY_LIST: &str = "resourcesync/capabilitylist.xml";
/// The name of the state file in a publication.
pub(crate) const STATE: &str = ".resourcesync/state.json";
/// The state's format. 5: the resources file keeps each resource's `lastmod` apart from
/// its file's modification time.
pub(crate) const STATE_VERSION: u32 = 5;
/// What a damaged open Change List leaves to do.
pub(crate) const LOST_OPEN_LIST: &str =
    "the state's open Change List is lost: publish into a new directory";

/// What the engine takes from its adapter's options: the base, the documents' limits and
/// what the Capability List names. The [`Publisher`](crate::Publisher) makes it from its
/// [`PublishOptions`](crate::PublishOptions), `build` from its
/// [`Options`](crate::collection::Options).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    /// The URL the publication's root is served at.
    pub(crate) base_url: Uri,
    /// Entries per document, at most 50,000.
    pub(crate) max_entries: usize,
    /// Bytes per document, at most 50 MiB.
    pub(crate) max_bytes: u64,
    /// Bytes of content per dump package.
    pub(crate) max_package_bytes: u64,
    /// How long a Change List stays open.
    pub(crate) changelist_period: Option<std::time::Duration>,
    /// The Source Description's `describedby` link; without one, a page is written.
    pub(crate) describedby: Option<Uri>,
    /// The WebSub hub of the Change Notification channel, if the Source has one: the
    /// Capability List advertises the channel and each run writes its notifications.
    pub(crate) hub: Option<Uri>,
}

/// One run, as its adapter made it.
pub(crate) struct Run<'a> {
    /// Where the documents go.
    pub(crate) sink: &'a dyn Sink,
    /// The limits of the Change Lists, and the period that closes the open one.
    pub(crate) lists: &'a Limits,
    /// The limits of the other documents, and the `describedby` link.
    pub(crate) documents: &'a Limits,
    /// This run's generation, which names the parts it writes.
    pub(crate) generation: u64,
    /// When the last run published (this run's, for the first).
    pub(crate) last_at: W3cDateTime,
    /// When this run publishes.
    pub(crate) now: W3cDateTime,
    /// The `up` link of every capability document: the Capability List.
    pub(crate) up: &'a Link,
    /// The last notification the hub took, as the adapter's mark says (0 for none):
    /// the outbox keeps those after it.
    pub(crate) delivered: u64,
}

impl Run<'_> {
    /// Adds `changes` (Change List entries, in order of time, within the run's span) to
    /// the Change Lists, writes the Capability List with `first`, the Change Lists' own
    /// capabilities, then `last`, and the Source Description, and sets the state's fields
    /// for this run. `resources` is how many the Source has, for its about page. With a
    /// hub, the same changes go into notifications ([`notification`]) and the Capability
    /// List advertises the channel. Returns the documents written (the Capability List,
    /// Source Description and about page are left as they are when their bytes would not
    /// change) and the sequence numbers of the notifications written.
    pub(crate) fn publish_changes(
        &self,
        state: &mut State,
        changes: Vec<Entry>,
        first: Vec<(Uri, Capability)>,
        last: Vec<(Uri, Capability)>,
        resources: usize,
    ) -> Result<(u64, Vec<u64>), PublishError> {
        let Run {
            sink,
            lists,
            documents: options,
            generation,
            last_at,
            now,
            up,
            delivered,
        } = *self;
        let mut notified = Vec::new();
        if options.hub.is_none()
            && let Some(notifications) = &mut state.notifications
        {
            // Without a hub this run notifies nobody: the next notification starts after
            // it, and the gap in from/until tells a follower that changes went unnotified
            // (it catches up from the Change Lists).
            notifications.until = now;
        }
        if options.hub.is_some() {
            notified = notification::write_notifications(
                sink,
                &mut state.notifications,
                &changes,
                delivered,
                last_at,
                now,
                up,
            )?;
        }
        let mut documents = notified.len() as u64;
        documents += change_lists(sink, state, changes, last_at, now, up, lists)?;
        let mut capabilities = first;
        capabilities.push((sink.uri(CHANGE_LIST_INDEX)?, Capability::ChangeList));
        if let Some((uri, written)) = change_list_archive(sink, state, generation, up, options)? {
            documents += written.len() as u64;
            state.replace_set("changelist-archive", written);
            capabilities.push((uri, Capability::ChangeListArchive));
        }
        capabilities.extend(last);
        let unchanged = Unchanged::new(sink);
        let channel = match &options.hub {
            Some(hub) => Some(notification::channel(sink, hub)?),
            None => None,
        };
        let written = capability_list(
            &unchanged,
            capabilities,
            channel.as_ref(),
            options.describedby.as_ref(),
            resources,
        )?;
        documents += written - unchanged.left();
        state.version = STATE_VERSION;
        state.base_url = options.base_url.to_string();
        state.generation = generation;
        state.at = Some(now);
        Ok((documents, notified))
    }
}
