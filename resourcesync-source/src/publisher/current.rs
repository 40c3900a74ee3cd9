//! The resources as the [`Publisher`](super::Publisher) published them: the last Resource
//! List with the changes since applied, compared with a snapshot, and the next Resource
//! List written from them.

use std::collections::BTreeMap;

use resourcesync_model::{Change, DocumentHead, DocumentKind, Entry, Link, Uri, W3cDateTime};
use resourcesync_xml::{Reader, SetLimits, SetOptions, SetWriter};

use super::ResourceEvent;
use super::event::listed;
use super::run::RESOURCE_LIST;
use crate::engine::change_list::change_list_name;
use crate::engine::dumps::GenerationParts;
use crate::engine::sink::Sink;
use crate::engine::state::State;
use crate::engine::{DOCS, Limits, PublishError};

/// The changes published after the last Resource List, by URI, the last one of each: the
/// resource's entry now, or `None` when it was deleted. Read from the Change Lists, from
/// the place the Resource List's record marks: as many as the policy lets pass.
pub(super) fn changes_since(
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
pub(super) struct Current<'s> {
    sink: &'s dyn Sink,
    parts: std::vec::IntoIter<String>,
    part: std::vec::IntoIter<Entry>,
    pending: std::iter::Peekable<std::collections::btree_map::IntoIter<String, Option<Entry>>>,
    next: Option<Entry>,
}

impl<'s> Current<'s> {
    /// The entries of the Resource List whose entries `documents` hold (the one document,
    /// or the parts), with `pending` applied.
    pub(super) fn of(
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
    pub(super) fn new(
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
pub(super) fn compare(
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
pub(super) fn write_resource_list(
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
