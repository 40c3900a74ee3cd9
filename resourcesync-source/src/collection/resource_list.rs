//! The Resource List (an index over parts when the limits require), an unchanged
//! resource's entry copied from the last run's.

use super::*;

/// What [`write_resource_list`] writes from: the run's resources, and the last run's
/// Resource List, being read, to take unchanged entries from.
pub(super) struct ResourceListRun<'a> {
    pub(super) directory: &'a Directory,
    pub(super) uris: &'a Uris<'a>,
    pub(super) resources: &'a [Published<'a>],
    pub(super) media_types: &'a MediaTypes,
    /// The last run's Resource List, being read ([`read_resources`]).
    pub(super) last_list: Option<std::thread::JoinHandle<LastList>>,
    /// How many resources the last run listed.
    pub(super) listed_before: usize,
    /// This run's generation, which names the parts.
    pub(super) generation: u64,
}

/// Writes the Resource List at `uri`, as one document or an index over parts, and
/// returns how many documents that took.
pub(super) fn write_resource_list(
    run: ResourceListRun<'_>,
    uri: Uri,
    now: W3cDateTime,
    up: &Link,
    options: &Options,
) -> Result<u64, BuildError> {
    let ResourceListRun {
        directory,
        uris,
        resources,
        media_types,
        last_list,
        listed_before,
        generation,
    } = run;
    let head = DocumentHead::of_kind(DocumentKind::ResourceList)
        .with_at(now)
        .with_link(up.clone());
    let name = uri.to_string();
    let document_error = |source| {
        BuildError::from(PublishError::Document {
            document: name.clone(),
            source,
        })
    };
    let set_options = SetOptions::default().with_limits(SetLimits::new(
        options.max_entries as u64,
        options.max_bytes,
    ));
    // Parts are named after the generation (the last generation's are carried over with
    // the Change Lists: `publish_generation`).
    let store = GenerationParts {
        sink: directory,
        stem: format!("{DOCS}/resourcelist-g{generation}"),
    };
    let mut rl = SetWriter::with_store(head, uri, store, set_options).map_err(document_error)?;
    // An unchanged resource's entry is the same bytes as last time: taken from the
    // Resource List the last run wrote, not made and checked again.
    // A thread that panicked read nothing: every entry is made again.
    let LastList {
        documents: last_list,
        named,
    } = last_list
        .and_then(|reading| reading.join().ok())
        .unwrap_or_default();
    let starts = entry_starts(&last_list, listed_before);
    // Unchanged resources side by side whose entries are side by side in one document
    // (all of them but around a change) are one stretch of it, taken by reference.
    let mut stretch: Option<(usize, std::ops::Range<usize>)> = None;
    let take =
        |rl: &mut SetWriter<_>, stretch: Option<(usize, std::ops::Range<usize>)>| match stretch {
            Some((document, entries)) => rl
                .write_written_entries(&last_list[document], entries)
                .map_err(document_error),
            None => Ok(()),
        };
    for published in resources {
        let before = published
            .written
            .zip(starts.as_deref())
            .map(|(j, starts)| entry_before(&last_list, starts, j))
            .filter(|&(document, entry)| {
                // Checked while it was read, for a plain path; else here.
                published.written.and_then(|j| named.get(j)) == Some(&true)
                    || uris.names(
                        last_list[document].entry(entry),
                        published.uri.as_ref(),
                        &published.path,
                    )
            });
        match (before, &mut stretch) {
            (Some((document, entry)), Some((last, entries)))
                if *last == document && entries.end == entry =>
            {
                entries.end += 1;
            }
            (Some((document, entry)), _) => {
                take(&mut rl, stretch.replace((document, entry..entry + 1)))?
            }
            (None, _) => {
                take(&mut rl, stretch.take())?;
                rl.write_entry(&resource_entry(
                    &published.uri(uris)?,
                    published.resource,
                    media_types,
                ))
                .map_err(document_error)?;
            }
        }
    }
    take(&mut rl, stretch)?;
    let written = rl.finish().map_err(document_error)?;
    Ok(written.output.documents.len() as u64)
}

/// The documents of the Resource List generation `generation` wrote into `docs`: its
/// parts in order, or the one document; none when `docs` cannot be read.
pub(super) fn resource_list_parts(docs: &Path, generation: u64) -> Vec<PathBuf> {
    let prefix = format!("resourcelist-g{generation}-");
    let Ok(names) = fs::read_dir(docs) else {
        return Vec::new();
    };
    let mut parts: Vec<(u64, PathBuf)> = names
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name();
            let number = name.to_str()?.strip_prefix(&prefix)?.strip_suffix(".xml")?;
            Some((number.parse().ok()?, entry.path()))
        })
        .collect();
    parts.sort();
    if parts.is_empty() {
        parts.push((0, docs.join("resourcelist.xml")));
    }
    parts.into_iter().map(|(_, part)| part).collect()
}

/// Where the entry the last run listed at place `j` is: its document's place in
/// `documents` and its own there, given where each document's entries start among all
/// (`starts`, from [`entry_starts`]).
fn entry_before(documents: &[Arc<WrittenDocument>], starts: &[usize], j: usize) -> (usize, usize) {
    let document = starts.partition_point(|&start| start <= j) - 1;
    debug_assert!(j - starts[document] < documents[document].len());
    (document, j - starts[document])
}

/// Where the entries of each of `documents` start among all of them, if there are
/// `count` in all, one per resource the last run listed; else `None`, and every entry is
/// made again.
pub(super) fn entry_starts(documents: &[Arc<WrittenDocument>], count: usize) -> Option<Vec<usize>> {
    let mut starts = Vec::with_capacity(documents.len());
    let mut total = 0;
    for document in documents {
        starts.push(total);
        total += document.len();
    }
    (total == count).then_some(starts)
}
