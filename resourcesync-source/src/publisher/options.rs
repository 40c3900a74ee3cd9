//! What a [`Publisher`](super::Publisher) publishes, and how.

use std::time::Duration;

use resourcesync_model::{MAX_BYTES, MAX_ENTRIES, Uri};

use crate::engine::Limits;
#[cfg(doc)]
use crate::engine::dumps::Content;

/// When a [`Publisher`](crate::Publisher) fed changes writes the Resource List again. Between two, the
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

/// What a [`Publisher`](crate::Publisher) publishes, and how.
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
    /// The WebSub hub of the Source's Change Notification channel (Change Notification
    /// 1.0.1), if it has one: the Capability List advertises the channel, and each run
    /// with changes writes them as notifications into the outbox
    /// ([`Publisher::outbox`](crate::Publisher::outbox)).
    pub hub: Option<Uri>,
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
            hub: None,
        }
    }

    /// With a Change Notification channel relayed by `hub`.
    pub fn with_hub(mut self, hub: Uri) -> PublishOptions {
        self.hub = Some(hub);
        self
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
    pub(super) fn limits(&self) -> Limits {
        Limits {
            base_url: self.base_url.clone(),
            max_entries: self.max_entries.clamp(1, MAX_ENTRIES as usize),
            max_bytes: self.max_bytes.clamp(4096, MAX_BYTES),
            max_package_bytes: self.max_package_bytes.max(1),
            changelist_period: self.changelist_period,
            describedby: self.describedby.clone(),
            hub: self.hub.clone(),
        }
    }
}
