//! The Publisher fed by records and events: what it publishes, checked by reading every
//! document back with the standard's rules, and what a run costs.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use resourcesync_model::{Change, DocumentKind, Entry, Fixity, Hashes, W3cDateTime};
use resourcesync_source::{
    GenerationStore, MemoryStore, PublishOptions, Publisher, ResourceEvent, ResourceListPolicy,
    Store, StoreError,
};
use resourcesync_xml::Reader;

use crate::Counting;

const BASE: &str = "http://example.com/";

fn t(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
}

fn at(seconds: u64) -> W3cDateTime {
    W3cDateTime::from(t(seconds))
}

/// The application's record of item `n` with `content`, as its database would hold it.
fn record(n: u32, content: &str) -> Entry {
    Entry::new(format!("{BASE}items/{n}").parse().unwrap())
        .with_lastmod(at(0))
        .with_length(content.len() as u64)
        .with_hash(hashes(content.as_bytes()))
}

/// The md5 and sha-256 of `bytes`, as an `rs:md` says them.
fn hashes(bytes: &[u8]) -> Hashes {
    let mut fixity = Fixity::new();
    fixity.update(bytes);
    fixity.finish().hashes()
}

fn options() -> PublishOptions {
    PublishOptions::new(BASE.parse().unwrap())
}

/// A document of the store read back: its kind, its entries, and the rules it breaks
/// (errors only; warnings recommend).
fn read(store: &impl Store, name: &str) -> (DocumentKind, Vec<Entry>) {
    let bytes = store
        .read(name)
        .unwrap()
        .unwrap_or_else(|| panic!("{name} is not published"));
    let mut reader = Reader::new(&bytes[..]).unwrap();
    let kind = reader.kind().unwrap();
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry().unwrap() {
        entries.push(entry);
    }
    let errors: Vec<_> = reader
        .take_findings()
        .into_iter()
        .filter(|f| f.severity() == resourcesync_model::Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{name}: {errors:?}");
    (kind, entries)
}

fn name(uri: &resourcesync_model::Uri) -> &str {
    uri.as_str().strip_prefix(BASE).unwrap()
}

/// The resources the Resource List lists (its index's parts read in order), by URI.
fn resource_list(store: &impl Store) -> BTreeMap<String, Entry> {
    let (kind, entries) = read(store, "resourcesync/resourcelist.xml");
    let entries = match kind {
        DocumentKind::ResourceList => entries,
        DocumentKind::ResourceListIndex => entries
            .iter()
            .flat_map(|part| read(store, name(&part.loc)).1)
            .collect(),
        other => panic!("a {other:?} at the Resource List's place"),
    };
    entries
        .into_iter()
        .map(|e| (e.loc.as_str().to_owned(), e))
        .collect()
}

/// Every change the Change Lists list, in order, with the lists' `from`/`until` checked
/// to follow one another.
fn changes(store: &impl Store) -> Vec<(String, Change)> {
    let (kind, lists) = read(store, "resourcesync/changelist.xml");
    assert_eq!(kind, DocumentKind::ChangeListIndex);
    let mut all = Vec::new();
    let mut until = None;
    for list in &lists {
        let md = list.md.as_ref().unwrap();
        if let Some(until) = until {
            assert_eq!(md.from, Some(until), "contiguous");
        }
        until = md.until;
        let (kind, entries) = read(store, name(&list.loc));
        assert_eq!(kind, DocumentKind::ChangeList);
        for entry in entries {
            let change = entry.md.as_ref().and_then(|md| md.change).unwrap();
            all.push((entry.loc.as_str().to_owned(), change));
        }
    }
    all
}

#[test]
fn records_then_events_make_every_document_and_the_resource_list_follows_its_policy() {
    let options = options().with_resource_list(ResourceListPolicy::EveryChanges(3));
    let mut source = Publisher::new(MemoryStore::new(), options);
    let records: Vec<Entry> = (0..10).map(|n| record(n, &format!("item {n}"))).collect();
    let first = source
        .publish_snapshot(records.iter().rev().cloned(), t(0))
        .unwrap();
    assert_eq!((first.generation, first.resource_list), (1, Some(10)));
    let store = source.store();
    for document in [
        ".well-known/resourcesync",
        "resourcesync/capabilitylist.xml",
    ] {
        read(store, document);
    }
    assert_eq!(resource_list(store).len(), 10);
    assert!(
        changes(store).is_empty(),
        "the first run's resources are the baseline"
    );

    // Two changes: under the policy's three, the Resource List stays as it was.
    let before = store.read("resourcesync/resourcelist.xml").unwrap();
    let report = source
        .publish_changes(
            [
                ResourceEvent::updated(record(1, "item 1, again"), at(5)),
                ResourceEvent::deleted(format!("{BASE}items/2").parse().unwrap(), at(6)),
            ],
            t(10),
        )
        .unwrap();
    assert_eq!(
        (report.updated, report.deleted, report.resource_list),
        (1, 1, None)
    );
    let store = source.store();
    assert_eq!(store.read("resourcesync/resourcelist.xml").unwrap(), before);
    let expected = vec![
        (format!("{BASE}items/1"), Change::Updated),
        (format!("{BASE}items/2"), Change::Deleted),
    ];
    assert_eq!(changes(store), expected);

    // The third: the Resource List is written again, holding all three, at this run's time.
    let report = source
        .publish_changes([ResourceEvent::created(record(10, "new"), at(12))], t(20))
        .unwrap();
    assert_eq!(report.resource_list, Some(10));
    let store = source.store();
    let listed = resource_list(store);
    assert!(listed.contains_key(&format!("{BASE}items/10")));
    assert!(!listed.contains_key(&format!("{BASE}items/2")));
    assert_eq!(
        listed[&format!("{BASE}items/1")].length(),
        Some("item 1, again".len() as u64)
    );
    let (_, _) = read(store, "resourcesync/resourcelist.xml");
    let bytes = store
        .read("resourcesync/resourcelist.xml")
        .unwrap()
        .unwrap();
    let mut reader = Reader::new(&bytes[..]).unwrap();
    assert_eq!(reader.head().unwrap().md.at, Some(at(20)));
    assert_eq!(changes(store).len(), 3);
}

#[test]
fn a_snapshot_lists_what_changed_and_keeps_an_untouched_resource_as_it_was() {
    let mut source = Publisher::new(MemoryStore::new(), options());
    source
        .publish_snapshot((0..5).map(|n| record(n, &format!("item {n}"))), t(0))
        .unwrap();
    let mut next: Vec<Entry> = (0..5).map(|n| record(n, &format!("item {n}"))).collect();
    // Touched, not changed: a new lastmod, the same bytes.
    next[0] = next[0].clone().with_lastmod(at(8));
    next[3] = record(3, "item 3, edited").with_lastmod(at(7));
    next.remove(4);
    next.push(record(7, "seven"));
    let report = source.publish_snapshot(next, t(10)).unwrap();
    assert_eq!((report.created, report.updated, report.deleted), (1, 1, 1));
    let store = source.store();
    let listed = resource_list(store);
    assert_eq!(listed[&format!("{BASE}items/0")].lastmod, Some(at(0)));
    let changes = changes(store);
    assert_eq!(changes.len(), 3);
    assert!(!changes.iter().any(|(uri, _)| uri.ends_with("items/0")));
    // A change is listed at its lastmod when that falls in the run's span.
    let list = store
        .read("resourcesync/changelist-00001.xml")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&list).contains("2023-11-14T22:13:27Z"));

    let twice = [record(1, "a"), record(1, "b")];
    let error = source.publish_snapshot(twice, t(20)).unwrap_err();
    assert!(error.to_string().contains("given twice"), "{error}");
}

#[test]
fn changes_out_of_order_are_listed_in_order_of_time_within_the_run() {
    let mut source = Publisher::new(MemoryStore::new(), options());
    source.publish_snapshot([record(1, "one")], t(100)).unwrap();
    let events = [
        ResourceEvent::updated(record(1, "one, later"), at(150)),
        // Recorded before the last run: listed at its time.
        ResourceEvent::created(record(2, "two"), at(50)),
        // After now: listed at now.
        ResourceEvent::created(record(3, "three"), at(900)),
        ResourceEvent::deleted(format!("{BASE}items/9").parse().unwrap(), at(120)),
    ];
    source.publish_changes(events, t(200)).unwrap();
    let (_, entries) = read(source.store(), "resourcesync/changelist-00001.xml");
    let datetimes: Vec<_> = entries
        .iter()
        .map(|e| e.md.as_ref().unwrap().datetime.unwrap())
        .collect();
    assert_eq!(datetimes, [at(100), at(120), at(150), at(200)]);
}

#[test]
fn a_change_costs_what_the_open_change_list_is_not_what_the_collection_is() {
    let options = options()
        .with_max_entries(1000)
        .with_changelist_entries(100)
        .with_resource_list(ResourceListPolicy::EveryChanges(1_000_000));
    let mut source = Publisher::new(Counting::default(), options);
    let resources = 20_000;
    source
        .publish_snapshot((0..resources).map(|n| record(n, &n.to_string())), t(0))
        .unwrap();
    let collection: u64 = source.store().inner.names().count() as u64;
    assert!(
        collection > 20,
        "an index over parts: {collection} documents"
    );
    let mut open_list = 0;
    for run in 1..=150u32 {
        let (read_before, written_before) = (source.store().read.get(), source.store().written);
        let event = ResourceEvent::updated(record(run % resources, "changed"), at(u64::from(run)));
        let report = source.publish_changes([event], t(u64::from(run))).unwrap();
        let store = source.store();
        let (read, written) = (
            store.read.get() - read_before,
            store.written - written_before,
        );
        assert_eq!(report.bytes_written, written);
        assert_eq!(report.resource_list, None);
        let open = report_open_list(store);
        // What a run reads and writes is the open list (twice at most: read, then written
        // again with the change) and the small documents around it.
        assert!(
            written <= 2 * open.max(open_list) + 16_384,
            "run {run}: wrote {written} bytes, open list {open}"
        );
        assert!(
            read <= 2 * open.max(open_list) + 16_384,
            "run {run}: read {read} bytes, open list {open}"
        );
        open_list = open;
    }
    // The Change Lists closed at 100 entries, and every change is in them.
    assert_eq!(changes(source.store()).len(), 150);
    let (_, lists) = read(source.store(), "resourcesync/changelist.xml");
    assert_eq!(lists.len(), 2);
}

/// The open Change List's size in bytes.
fn report_open_list(store: &Counting) -> u64 {
    let index = store.inner.get("resourcesync/changelist.xml").unwrap();
    let text = String::from_utf8_lossy(index);
    let last = text.rsplit("<loc>").next().unwrap();
    let uri = &last[..last.find("</loc>").unwrap()];
    store.inner.get(name(&uri.parse().unwrap())).unwrap().len() as u64
}

#[test]
fn a_full_index_moves_its_oldest_change_lists_to_the_archive() {
    let options = options()
        .with_max_entries(2)
        .with_changelist_entries(2)
        .with_resource_list(ResourceListPolicy::EveryRun);
    let mut source = Publisher::new(MemoryStore::new(), options);
    source.publish_snapshot([record(0, "zero")], t(0)).unwrap();
    for run in 1..=9u32 {
        let event = ResourceEvent::created(record(run, "x"), at(u64::from(run)));
        source
            .publish_changes([event.clone(), event], t(u64::from(run)))
            .unwrap();
    }
    let store = source.store();
    let (_, index) = read(store, "resourcesync/changelist.xml");
    assert_eq!(index.len(), 2);
    let (kind, _) = read(store, "resourcesync/changelist-archive.xml");
    assert!(matches!(
        kind,
        DocumentKind::ChangeListArchive | DocumentKind::ChangeListArchiveIndex
    ));
    let (_, capabilities) = read(store, "resourcesync/capabilitylist.xml");
    assert!(
        capabilities
            .iter()
            .any(|e| e.loc.as_str().ends_with("changelist-archive.xml"))
    );
    // The Resource List, written each run over parts of two entries, holds them all.
    assert_eq!(resource_list(store).len(), 10);
}

#[test]
fn a_generation_store_publishes_all_or_nothing_and_one_publisher_at_a_time() {
    let root = tempfile::tempdir().unwrap();
    let publish = root.path().join("publish");
    let store = GenerationStore::open(&publish).unwrap();
    assert!(matches!(
        GenerationStore::open(&publish),
        Err(StoreError::Busy { .. })
    ));
    let mut source = Publisher::new(store, options());
    source
        .publish_snapshot((0..3).map(|n| record(n, "x")), t(0))
        .unwrap();
    let list = publish.join("resourcesync/resourcelist.xml");
    let first = std::fs::read(&list).unwrap();
    // Readable by a web server running as another user, as `build`'s files are.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&list).unwrap().permissions().mode();
        assert_ne!(mode & 0o004, 0, "mode {mode:o}");
    }
    // A run that fails publishes nothing: the last generation stays, whole.
    let error = source
        .publish_snapshot([record(1, "a"), record(1, "b")], t(5))
        .unwrap_err();
    assert!(error.to_string().contains("given twice"));
    assert_eq!(std::fs::read(&list).unwrap(), first);
    // A run killed before its commit: a begun generation, dropped.
    let mut store = source.into_store();
    store.begin().unwrap();
    store
        .write("resourcesync/resourcelist.xml", &[b"half"])
        .unwrap();
    drop(store);
    assert_eq!(std::fs::read(&list).unwrap(), first);
    // The next publisher goes on from the last generation; the unchanged files of the
    // last generation are the same files (hard links), not copies.
    let mut source = Publisher::new(GenerationStore::open(&publish).unwrap(), options());
    let report = source
        .publish_changes([ResourceEvent::created(record(9, "nine"), at(7))], t(10))
        .unwrap();
    assert_eq!((report.generation, report.created), (2, 1));
    let generations = root.path().join(".publish.resourcesync");
    let sd = |g: &str| std::fs::metadata(generations.join(g).join(".well-known/resourcesync"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(sd("00001").unwrap().ino(), sd("00002").unwrap().ino());
    }
    assert!(sd("00002").is_ok());
    let changed =
        std::fs::read_to_string(publish.join("resourcesync/changelist-00001.xml")).unwrap();
    assert!(changed.contains("items/9"));
}

#[test]
fn dumps_package_the_application_content_and_every_bitstream_checks() {
    use std::io::{Cursor, Read};

    use resourcesync_package::Package;

    let options = options().with_resource_dump(true).with_change_dump(true);
    let mut source = Publisher::new(MemoryStore::new(), options);
    let texts: BTreeMap<String, String> = (0..4)
        .map(|n| (format!("{BASE}items/{n}"), format!("item {n}")))
        .collect();
    let content = |texts: &BTreeMap<String, String>| {
        let texts = texts.clone();
        move |entry: &Entry| -> std::io::Result<Box<dyn Read>> {
            let text = texts
                .get(entry.loc.as_str())
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
            Ok(Box::new(Cursor::new(text.clone().into_bytes())))
        }
    };
    let records = |texts: &BTreeMap<String, String>| -> Vec<Entry> {
        texts
            .iter()
            .map(|(uri, text)| {
                let n = uri.rsplit('/').next().unwrap().parse().unwrap();
                record(n, text)
            })
            .collect()
    };
    // Without the content, nothing is published.
    let error = source.publish_snapshot(records(&texts), t(0)).unwrap_err();
    assert!(error.to_string().contains("content"), "{error}");
    assert!(source.store().names().next().is_none());

    source
        .publish_snapshot_with(records(&texts), &content(&texts), t(0))
        .unwrap();
    let store = source.store();
    let (kind, packages) = read(store, "resourcesync/resourcedump.xml");
    assert_eq!(kind, DocumentKind::ResourceDump);
    let mut bitstreams = 0;
    for package in &packages {
        let zip = store.get(name(&package.loc)).unwrap().to_vec();
        let mut package = Package::new(Cursor::new(zip)).unwrap();
        for i in 0..package.bitstream_count() {
            let mut text = String::new();
            package
                .bitstream(i)
                .unwrap()
                .read_to_string(&mut text)
                .unwrap();
            assert!(text.starts_with("item "));
            bitstreams += 1;
        }
    }
    assert_eq!(bitstreams, 4);
    let (_, capabilities) = read(store, "resourcesync/capabilitylist.xml");
    assert!(
        capabilities
            .iter()
            .any(|e| e.loc.as_str().ends_with("resourcedump.xml"))
    );
    // No change yet, so no Change Dump: one with no package is omitted, and not listed
    // (issue 22: a `<urlset>` with no `<url>`).
    assert!(store.get("resourcesync/changedump.xml").is_none());
    assert!(
        !capabilities
            .iter()
            .any(|e| e.loc.as_str().ends_with("changedump.xml"))
    );

    // Changes: a package of their own in the Change Dump, the deletion listed in it.
    let mut changed = texts.clone();
    changed.insert(format!("{BASE}items/1"), "item 1, edited".into());
    changed.remove(&format!("{BASE}items/3"));
    let events = [
        ResourceEvent::updated(record(1, "item 1, edited"), at(5)),
        ResourceEvent::deleted(format!("{BASE}items/3").parse().unwrap(), at(6)),
    ];
    source
        .publish_changes_with(events, &content(&changed), t(10))
        .unwrap();
    let store = source.store();
    let (kind, packages) = read(store, "resourcesync/changedump.xml");
    assert_eq!(kind, DocumentKind::ChangeDump);
    assert_eq!(packages.len(), 1);
    let zip = store.get(name(&packages[0].loc)).unwrap().to_vec();
    let mut package = Package::new(Cursor::new(zip)).unwrap();
    let mut text = String::new();
    package
        .bitstream(0)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "item 1, edited");
    let (_, capabilities) = read(store, "resourcesync/capabilitylist.xml");
    let kinds: Vec<&str> = capabilities.iter().map(|e| name(&e.loc)).collect();
    assert_eq!(
        kinds,
        [
            "resourcesync/resourcelist.xml",
            "resourcesync/resourcedump.xml",
            "resourcesync/changelist.xml",
            "resourcesync/changedump.xml"
        ]
    );
}

#[test]
fn the_resource_list_applies_a_run_s_changes_in_order_of_time_as_the_change_list_lists_them() {
    let options = options().with_resource_list(ResourceListPolicy::EveryRun);
    let mut source = Publisher::new(MemoryStore::new(), options);
    source.publish_snapshot([record(1, "one")], t(0)).unwrap();
    let a = format!("{BASE}items/7");
    // Given out of order: created at 10, deleted at 20.
    let events = [
        ResourceEvent::deleted(a.parse().unwrap(), at(20)),
        ResourceEvent::created(record(7, "seven"), at(10)),
    ];
    source.publish_changes(events, t(30)).unwrap();
    let store = source.store();
    assert_eq!(
        changes(store),
        [(a.clone(), Change::Created), (a.clone(), Change::Deleted)]
    );
    assert!(!resource_list(store).contains_key(&a), "deleted last");
}

#[test]
fn a_publication_build_made_is_refused_not_started_afresh() {
    let root = tempfile::tempdir().unwrap();
    let collection = root.path().join("collection");
    std::fs::create_dir(&collection).unwrap();
    std::fs::write(collection.join("a.txt"), "a").unwrap();
    let publish = root.path().join("publish");
    let build_options = resourcesync_source::collection::Options::new(BASE.parse().unwrap());
    resourcesync_source::collection::build(&collection, &publish, &build_options, t(0), &())
        .unwrap();
    let mut source = Publisher::new(GenerationStore::open(&publish).unwrap(), options());
    let event = ResourceEvent::created(record(2, "b"), at(5));
    let error = source.publish_changes([event], t(10)).unwrap_err();
    assert!(error.to_string().contains("published by build"), "{error}");
    assert!(
        std::fs::read_to_string(publish.join("resourcesync/resourcelist.xml"))
            .unwrap()
            .contains("a.txt")
    );
}

/// The application's resources and the documents that describe them switch together: a
/// reader of the publish directory sees both of one run or both of the last, never a
/// resource without its entry or an entry without its resource.
#[test]
fn the_application_s_files_and_the_documents_are_published_in_one_transaction() {
    let root = tempfile::tempdir().unwrap();
    let publish = root.path().join("publish");
    let mut source = Publisher::new(GenerationStore::open(&publish).unwrap(), options());
    let file = |n: u32| publish.join(format!("items/{n}"));
    let listed = || std::fs::read_to_string(publish.join("resourcesync/resourcelist.xml")).unwrap();

    let mut run = source.begin().unwrap();
    run.write("items/1", &[b"one"]).unwrap();
    // Not published until the documents are written and the whole committed.
    assert!(!file(1).exists());
    assert_eq!(run.read("items/1").unwrap().as_deref(), Some(&b"one"[..]));
    let report = run.publish_snapshot([record(1, "one")], t(0)).unwrap();
    assert_eq!(report.resource_list, Some(1));
    assert_eq!(std::fs::read(file(1)).unwrap(), b"one");
    assert!(listed().contains("items/1"));
    let published = source.store().published().unwrap();
    assert!(published.join("items/1").is_file());
    assert!(published.join("resourcesync/resourcelist.xml").is_file());

    // A run that fails after the application wrote: neither its file nor its documents.
    let mut run = source.begin().unwrap();
    run.write("items/2", &[b"two"]).unwrap();
    let error = run
        .publish_snapshot([record(2, "two"), record(2, "two")], t(5))
        .unwrap_err();
    assert!(error.to_string().contains("given twice"), "{error}");
    assert!(!file(2).exists());
    assert!(!listed().contains("items/2"));

    // One dropped: nothing of it.
    let mut run = source.begin().unwrap();
    run.write("items/3", &[b"three"]).unwrap();
    run.remove("items/1").unwrap();
    drop(run);
    assert!(!file(3).exists());
    assert_eq!(std::fs::read(file(1)).unwrap(), b"one");

    // The documents' and the state's names are not the application's.
    let mut run = source.begin().unwrap();
    for name in [
        "resourcesync",
        "resourcesync/resourcelist.xml",
        "resourcesync/changelist-00001.xml",
        ".well-known/resourcesync",
        ".resourcesync/state.json",
        ".resourcesync",
    ] {
        assert!(
            matches!(
                run.write(name, &[b"mine"]),
                Err(resourcesync_source::PublishError::Reserved { .. })
            ),
            "{name}"
        );
        assert!(run.remove(name).is_err(), "{name}");
    }
    // Fed changes too: the deletion and its file's removal in one run.
    run.remove("items/1").unwrap();
    run.write("items/4", &[b"four"]).unwrap();
    let report = run
        .publish_changes(
            [
                ResourceEvent::deleted(format!("{BASE}items/1").parse().unwrap(), at(6)),
                ResourceEvent::created(record(4, "four"), at(6)),
            ],
            t(10),
        )
        .unwrap();
    assert_eq!((report.created, report.deleted), (1, 1));
    assert!(!file(1).exists());
    assert_eq!(std::fs::read(file(4)).unwrap(), b"four");
    let changed =
        std::fs::read_to_string(publish.join("resourcesync/changelist-00001.xml")).unwrap();
    assert!(changed.contains("items/4") && changed.contains("items/1"));
}

/// "Generation" is one number: a run into a generation store is the store's generation,
/// whatever was committed to the store before the publisher's first run.
#[test]
fn a_run_s_generation_is_the_store_s() {
    let root = tempfile::tempdir().unwrap();
    let publish = root.path().join("publish");
    let mut store = GenerationStore::open(&publish).unwrap();
    // The application's files, committed on their own before any document.
    store.begin().unwrap();
    store.write("items/1", &[b"one"]).unwrap();
    store.commit().unwrap();
    assert_eq!(store.generation(), Some(1));
    let mut source = Publisher::new(store, options().with_max_entries(1));
    let report = source
        .publish_snapshot([record(1, "one"), record(2, "two")], t(0))
        .unwrap();
    assert_eq!(source.store().generation(), Some(2));
    assert_eq!(report.generation, 2);
    // The parts the run wrote are named after it too.
    let published = source.store().published().unwrap();
    assert!(published.ends_with("00002"), "{}", published.display());
    assert!(
        published
            .join("resourcesync/resourcelist-g2-00001.xml")
            .is_file()
    );
    let report = source
        .publish_changes([ResourceEvent::created(record(3, "x"), at(5))], t(10))
        .unwrap();
    assert_eq!(
        (report.generation, source.store().generation()),
        (3, Some(3))
    );
}

/// Dumps need the resources' content: a run without it is the caller's mistake, refused
/// from the Publisher or from a Transaction, and nothing of it is published.
#[test]
fn dumps_without_content_are_refused_and_nothing_is_published() {
    let root = tempfile::tempdir().unwrap();
    let publish = root.path().join("publish");
    let options = options().with_resource_dump(true);
    let mut source = Publisher::new(GenerationStore::open(&publish).unwrap(), options);
    let refused = source.publish_snapshot([record(1, "one")], t(0));
    assert!(
        matches!(refused, Err(resourcesync_source::PublishError::NoContent)),
        "{refused:?}"
    );
    // No generation begun (no numbered directory beside the lock), none published.
    let generations = || crate::files(&root.path().join(".publish.resourcesync"));
    assert!(
        generations()
            .iter()
            .all(|name| !name.starts_with(|c: char| c.is_ascii_digit())),
        "{:?}",
        generations()
    );
    assert!(!publish.exists());
    assert_eq!(source.store().generation(), None);
    let mut run = source.begin().unwrap();
    run.write("items/1", &[b"one"]).unwrap();
    let refused = run.publish_changes([ResourceEvent::created(record(1, "one"), at(0))], t(0));
    assert!(matches!(
        refused,
        Err(resourcesync_source::PublishError::NoContent)
    ));
    assert_eq!(source.store().generation(), None);
    assert!(!publish.join("items/1").exists());
}
