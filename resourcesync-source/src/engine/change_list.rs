//! The Change Lists: the open one extended, closed by the limits or the period, their
//! index, and the archive their oldest move to.

use resourcesync_model::{
    Document, DocumentHead, DocumentKind, Entry, Link, Md, Relation, Uri, W3cDateTime,
};
use resourcesync_xml::{
    SetLimits, SetOptions, SetWriter, WriteError, WriteOptions, Writer, WrittenDocument,
};

use super::documents::write_small;
use super::dumps::GenerationParts;
use super::sink::Sink;
use super::state::{ChangeListRecord, OpenList, State};
use super::{DOCS, LOST_OPEN_LIST, Limits, PublishError, STATE};

/// A Change List's estimated size of one entry, for the byte limit: its URI as written
/// at worst (every character escaped, `&` as `&amp;`) and the longest its metadata can be.
pub(crate) fn estimated_bytes(entry: &Entry) -> u64 {
    entry.loc.as_str().len() as u64 * 5 + 400
}

/// Adds this run's changes to the open Change List, closing it (and opening the next)
/// where the limits or the period say, and writes every Change List that changed and the
/// Change List Index. Returns the number of documents written.
pub(crate) fn change_lists(
    sink: &dyn Sink,
    state: &mut State,
    changes: Vec<Entry>,
    last_at: W3cDateTime,
    now: W3cDateTime,
    up: &Link,
    options: &Limits,
) -> Result<u64, PublishError> {
    if state.change_lists.is_empty() {
        // The first run: the changes are published from now on. Its open Change List has
        // no entry yet and is published all the same, unlike an empty dump (which is
        // omitted: `dumps::change_dump`): the Change Lists' `from` and `until` must be
        // contiguous (sections 12.1, 12.2), section 7 allows a `<urlset>` "zero or more"
        // `<url>`, and an open list with none is how a Destination learns that nothing
        // changed since its `from`. The Sitemap schema's one `<url>` at least yields.
        state.change_lists.push(ChangeListRecord {
            number: 1,
            from: now,
            until: None,
        });
        state.open = OpenList::default();
    }
    let index_uri = sink.uri(CHANGE_LIST_INDEX)?;
    let head = |record: &ChangeListRecord| {
        let mut head = DocumentHead::of_kind(DocumentKind::ChangeList)
            .with_from(record.from)
            .with_link(up.clone())
            .with_link(Link::new(Relation::Index, index_uri.clone()));
        if let Some(until) = record.until {
            head = head.with_until(until);
        }
        head
    };
    // Whether the period closes the open list, where the last run left it (so that the
    // intervals stay contiguous).
    let open = open_list(state)?;
    let period_closes = options.changelist_period.is_some_and(|period| {
        let from = open.from;
        let age = (now.to_utc() - from.to_utc()).to_std().unwrap_or_default();
        age >= period && from.precedes(&last_at)
    });
    // The open list's entries as the last run wrote them, in its document (carried over
    // into this generation), then this run's; read only when the list is written again.
    let carried = if state.open.entries > 0 && (period_closes || !changes.is_empty()) {
        let name = change_list_name(open.number);
        let document = sink.read(&name)?.ok_or_else(|| PublishError::State {
            document: name.clone(),
            reason: format!("not found; {LOST_OPEN_LIST}"),
        })?;
        Some((name, document))
    } else {
        None
    };
    let carried = match carried {
        None => None,
        Some((name, document)) => {
            let damaged = |reason: String| PublishError::State {
                document: name.clone(),
                reason: format!("{reason}; {LOST_OPEN_LIST}"),
            };
            let written = WrittenDocument::new(document)
                .ok_or_else(|| damaged("not a Change List this command wrote".into()))?;
            if written.len() != state.open.entries {
                return Err(damaged(format!(
                    "{} entries where the state says {}",
                    written.len(),
                    state.open.entries
                )));
            }
            Some(written)
        }
    };
    let mut entries: Vec<Listed<'_>> = carried.iter().map(Listed::Written).collect();
    let mut added = false;
    let mut closed = Vec::new();
    if period_closes {
        close_open_list(state, &mut entries, &mut closed, last_at);
    }
    for entry in changes {
        let size = estimated_bytes(&entry);
        let open = &state.open;
        if open.entries > 0
            && (open.entries >= options.max_entries || open.bytes + size + 2048 > options.max_bytes)
        {
            let until = open.last.unwrap_or(last_at);
            close_open_list(state, &mut entries, &mut closed, until);
        }
        state.open.entries += 1;
        state.open.bytes += size;
        state.open.last = entry.datetime().or(state.open.last);
        entries.push(Listed::New(Box::new(entry)));
        added = true;
    }
    let open = open_list(state)?;
    // An open list this run neither added to nor closed is the one carried over.
    let unchanged = closed.is_empty() && !added && sink.exists(&change_list_name(open.number))?;
    let mut written = 0;
    let open = [(open, entries)];
    let lists = closed.iter().chain(open.iter());
    for (record, entries) in lists.take(closed.len() + usize::from(!unchanged)) {
        write_list(
            sink,
            &change_list_name(record.number),
            &head(record),
            entries,
            options,
        )?;
        written += 1;
    }
    // A full index: its oldest lists move to the archive (they stay published).
    let over = state.change_lists.len().saturating_sub(options.max_entries);
    state.archived.extend(state.change_lists.drain(..over));
    // The index keeps at least its open list: `max_entries` is at least 1.
    let first = state.change_lists.first().map_or(now, |list| list.from);
    let mut index = Document::new(
        DocumentHead::of_kind(DocumentKind::ChangeListIndex)
            .with_from(first)
            .with_link(up.clone()),
    );
    for record in &state.change_lists {
        let mut entry =
            Entry::new(sink.uri(&change_list_name(record.number))?).with_from(record.from);
        if let Some(until) = record.until {
            entry = entry.with_until(until);
        }
        index.entries.push(entry);
    }
    write_small(sink, CHANGE_LIST_INDEX, &index)?;
    Ok(written + 1)
}

/// The open Change List: the last of the state's, which [`change_lists`] opens first if
/// there is none.
fn open_list(state: &State) -> Result<ChangeListRecord, PublishError> {
    state
        .change_lists
        .last()
        .cloned()
        .ok_or_else(|| PublishError::State {
            document: STATE.into(),
            reason: "no open Change List".into(),
        })
}

/// Closes the open Change List at `until`, with `entries`, into `closed`, and opens the
/// next one from there.
pub(crate) fn close_open_list<'a>(
    state: &mut State,
    entries: &mut Vec<Listed<'a>>,
    closed: &mut Vec<(ChangeListRecord, Vec<Listed<'a>>)>,
    until: W3cDateTime,
) {
    let Some(open) = state.change_lists.last_mut() else {
        return;
    };
    open.until = Some(until);
    let record = open.clone();
    closed.push((record.clone(), std::mem::take(entries)));
    state.change_lists.push(ChangeListRecord {
        number: record.number + 1,
        from: until,
        until: None,
    });
    state.open = OpenList::default();
}

/// Entries of a Change List being written: those the last run wrote (the open list's,
/// carried over: all the entries of its document), or one of this run's changes.
pub(crate) enum Listed<'a> {
    Written(&'a WrittenDocument),
    New(Box<Entry>),
}

/// Writes the Change List of `head` and `entries` whole, atomically. This run's entries
/// are checked against the head and refused if they break a rule; those written before
/// were checked then, against the head of the same list (whose `until` is only ever set
/// at or after them). The limits, which their sum can break, are checked here.
pub(crate) fn write_list(
    sink: &dyn Sink,
    name: &str,
    head: &DocumentHead,
    entries: &[Listed<'_>],
    options: &Limits,
) -> Result<(), PublishError> {
    let refused = |source| PublishError::Document {
        document: name.to_owned(),
        source,
    };
    let refuse = WriteOptions::default().with_refuse_errors(true);
    // The entries carried over are not copied through the writer: it leaves their place,
    // and the document goes out in pieces around them (`writev`): a run that adds a
    // thousand entries to an open list of 40,000 copies no 13 MB buffer for it.
    let size = entries
        .iter()
        .map(|entry| match entry {
            Listed::Written(_) => 0,
            Listed::New(entry) => estimated_bytes(entry) as usize,
        })
        .sum::<usize>();
    let buffer = Vec::with_capacity(size + 4096);
    let mut writer = Writer::with_options(buffer, head, refuse).map_err(refused)?;
    let mut placed = Vec::new();
    for entry in entries {
        match entry {
            Listed::Written(document) => writer
                .place_written(document)
                .map(|at| placed.push((at as usize, document.entry_bytes()))),
            Listed::New(entry) => writer.write_entry(entry),
        }
        .map_err(refused)?;
    }
    // The limits bind what this run adds. A list of carried entries only is one an
    // earlier run wrote within its limits, closed now (its head gains an `until`, for
    // which closing leaves room): a lower limit since must not refuse it, or every later
    // run with changes would fail on it.
    let adds = entries.iter().any(|entry| matches!(entry, Listed::New(_)));
    if adds && writer.entries_written() > options.max_entries as u64 {
        return Err(refused(WriteError::Limit {
            what: "entries",
            limit: options.max_entries as u64,
        }));
    }
    let document = writer.finish().map_err(refused)?.output;
    let mut pieces = Vec::with_capacity(2 * placed.len() + 1);
    let mut at = 0;
    for (place, bytes) in placed {
        pieces.extend([&document[at..place], bytes]);
        at = place;
    }
    pieces.push(&document[at..]);
    let length: usize = pieces.iter().map(|piece| piece.len()).sum();
    if adds && length as u64 > options.max_bytes {
        return Err(refused(WriteError::Limit {
            what: "bytes",
            limit: options.max_bytes,
        }));
    }
    sink.write(name, &pieces)
}

/// Writes the Change List Archive over the lists the index no longer holds, if there are
/// any, as one document or an archive index over parts named after the generation; returns
/// its URI and the names of its documents.
pub(crate) fn change_list_archive(
    sink: &dyn Sink,
    state: &State,
    generation: u64,
    up: &Link,
    options: &Limits,
) -> Result<Option<(Uri, Vec<String>)>, PublishError> {
    if state.archived.is_empty() {
        return Ok(None);
    }
    let uri = sink.uri(&format!("{DOCS}/changelist-archive.xml"))?;
    let document_error = |source| PublishError::Document {
        document: uri.to_string(),
        source,
    };
    let head = DocumentHead::of_kind(DocumentKind::ChangeListArchive).with_link(up.clone());
    let store = GenerationParts {
        sink,
        stem: format!("{DOCS}/changelist-archive-g{generation}"),
    };
    let limits = SetLimits::new(options.max_entries as u64, options.max_bytes);
    let set_options = SetOptions::default().with_limits(limits);
    let mut archive =
        SetWriter::with_store(head, uri.clone(), store, set_options).map_err(document_error)?;
    for record in &state.archived {
        let mut md = Md::new().with_from(record.from);
        if let Some(until) = record.until {
            md = md.with_until(until);
        }
        let entry = Entry::new(sink.uri(&change_list_name(record.number))?).with_md(md);
        archive.write_entry(&entry).map_err(document_error)?;
    }
    let written = archive.finish().map_err(document_error)?;
    let names = written
        .output
        .documents
        .iter()
        .filter_map(|uri| sink.name(uri).map(str::to_owned))
        .collect();
    Ok(Some((uri, names)))
}

/// The name of Change List `number`.
pub(crate) fn change_list_name(number: u32) -> String {
    format!("{DOCS}/changelist-{number:05}.xml")
}

/// The name of the Change List Index.
pub(crate) const CHANGE_LIST_INDEX: &str = "resourcesync/changelist.xml";
