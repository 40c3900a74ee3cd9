//! What one run of the [`Publisher`](super::Publisher) published.

use resourcesync_model::{Uri, W3cDateTime};

/// What one run published.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PublishReport {
    /// The generation published: the store's number for it where the store numbers its
    /// publications (a [`GenerationStore`](crate::GenerationStore)'s, whose directory has
    /// that number), else the run's, counted from 1.
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
    /// The sequence numbers of the notifications this run put into the outbox (none
    /// without a hub, or without changes).
    pub notifications: Vec<u64>,
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
