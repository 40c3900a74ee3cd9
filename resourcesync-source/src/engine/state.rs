//! The state a run leaves in the publication for the next: the Change Lists, the open
//! one, the dumps' and sets' files, and the Resource List a [`Publisher`](crate::Publisher)
//! wrote last.

use resourcesync_model::{Entry, W3cDateTime};
use serde::{Deserialize, Serialize};

/// The state a run leaves in its generation, for the next run.
#[derive(Debug, Default, Serialize, Deserialize)]
pub(crate) struct State {
    /// The format: [`STATE_VERSION`]; another is refused.
    pub(crate) version: u32,
    /// The base URL published at: another one starts afresh.
    pub(crate) base_url: String,
    pub(crate) generation: u64,
    /// When the last run published.
    pub(crate) at: Option<W3cDateTime>,
    /// The Change Lists of the Change List Index, in order; the last one is open (no
    /// `until`).
    pub(crate) change_lists: Vec<ChangeListRecord>,
    /// The Change Lists before them, moved to the Change List Archive, in order.
    #[serde(default)]
    pub(crate) archived: Vec<ChangeListRecord>,
    /// The open Change List, whose entries are in its document: each run copies their
    /// bytes and adds its own, rather than keeping them here as entries to read back and
    /// write again.
    #[serde(default)]
    pub(crate) open: OpenList,
    /// The Change Dump's start and its package entries, in order.
    pub(crate) change_dump_from: Option<W3cDateTime>,
    pub(crate) change_dump: Vec<Entry>,
    /// The generation that wrote the Resource Dump published, if one is: its packages are
    /// named after it, and the next run carries them over.
    #[serde(default)]
    pub(crate) resource_dump: Option<u64>,
    /// The Resource List a [`Publisher`](crate::Publisher) wrote last (`build` writes one
    /// each run, and keeps none here).
    #[serde(default)]
    pub(crate) resource_list: Option<ResourceListRecord>,
    /// The files of each set written again whole from time to time (the Resource List's
    /// parts, the archive's, the Change Dump's, the Resource Dump's packages), by set, as
    /// the run that wrote them last named them.
    #[serde(default)]
    pub(crate) sets: std::collections::BTreeMap<String, Vec<String>>,
    /// Files of sets written again since, kept one run for readers of the index that
    /// named them, then removed.
    #[serde(default)]
    pub(crate) retired: Vec<String>,
    /// The Change Notification channel's sequence, interval and outbox, once it has one.
    #[serde(default)]
    pub(crate) notifications: Option<super::notification::Notifications>,
}

impl State {
    /// Records `files` as set `set`'s: the files it had before and has no more are
    /// retired, to be removed by the next run.
    pub(crate) fn replace_set(&mut self, set: &str, files: Vec<String>) {
        let old = self.sets.insert(set.to_owned(), files).unwrap_or_default();
        let new = &self.sets[set];
        self.retired
            .extend(old.into_iter().filter(|name| !new.contains(name)));
    }
}

/// The Resource List a [`Publisher`](crate::Publisher) wrote last (its parts, if it has
/// any, are [`State::sets`]' `resourcelist`), and where the Change Lists stood then: the changes after that place are those it does not hold.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ResourceListRecord {
    /// Its `at`.
    pub(crate) at: W3cDateTime,
    /// Its entries.
    pub(crate) entries: u64,
    /// The Change List open when it was written, and how many entries that list held then.
    pub(crate) mark: (u32, usize),
    /// Changes published since.
    pub(crate) changes_since: u64,
}

/// What a run needs to know of the open Change List's entries, which are in its document.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub(crate) struct OpenList {
    /// How many.
    pub(crate) entries: usize,
    /// Their estimated size (see [`estimated_bytes`]).
    pub(crate) bytes: u64,
    /// The last one's `datetime`, where the list closes when it is full.
    pub(crate) last: Option<W3cDateTime>,
}

/// One Change List of the set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChangeListRecord {
    pub(crate) number: u32,
    pub(crate) from: W3cDateTime,
    pub(crate) until: Option<W3cDateTime>,
}
