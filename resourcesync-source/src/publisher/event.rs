//! What the application tells the [`Publisher`](super::Publisher) changed.

use resourcesync_model::{Change, Entry, Uri, W3cDateTime};

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
    pub(super) fn resource(&self) -> Option<Entry> {
        match self {
            ResourceEvent::Created { resource, .. } | ResourceEvent::Updated { resource, .. } => {
                Some(listed(resource.clone()))
            }
            ResourceEvent::Deleted { .. } => None,
        }
    }

    /// Its Change List entry, at `datetime`.
    pub(super) fn change_entry(&self, datetime: W3cDateTime) -> Entry {
        let entry = match self.resource() {
            Some(resource) => resource,
            None => Entry::new(self.uri().clone()),
        };
        entry.with_change(self.change()).with_datetime(datetime)
    }
}

/// A resource's entry as a Resource List lists it: no change, no datetime.
pub(super) fn listed(mut entry: Entry) -> Entry {
    if let Some(md) = &mut entry.md {
        md.change = None;
        md.datetime = None;
    }
    entry
}
