//! The set writer: as many documents as the limits require, the index over them, every
//! document valid and within the limits, and the entries read back in order.

use std::collections::BTreeMap;

use resourcesync_model::{
    Change, CheckOptions, DocumentHead, DocumentKind as K, Entry, Link, Md, Relation, Uri,
};
use resourcesync_xml::{Limits, Reader, SetLimits, SetWriter, WriteError};

use crate::rules_of;

fn head(kind: K) -> DocumentHead {
    let mut head = DocumentHead::of_kind(kind);
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/caps.xml".parse().unwrap(),
    ));
    match kind {
        K::ChangeList | K::ChangeDump => {
            head.md.from = Some("2013-01-01T00:00:00Z".parse().unwrap())
        }
        _ => {
            head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
            head.md.completed = Some("2013-01-03T09:10:00Z".parse().unwrap());
        }
    }
    head
}

fn entry(i: u32, change: bool) -> Entry {
    let mut e = Entry::new(format!("http://example.com/res{i}").parse().unwrap());
    if change {
        e.md = Some(
            Md::new().with_change(Change::Updated).with_datetime(
                format!("2013-01-01T{:02}:{:02}:00Z", i / 60, i % 60)
                    .parse()
                    .unwrap(),
            ),
        );
    }
    e
}

type Store = BTreeMap<String, Vec<u8>>;

fn publish(kind: K, entries: &[Entry], limits: SetLimits) -> Result<(Vec<Uri>, Store), WriteError> {
    let mut store = Store::new();
    let mut set = SetWriter::new(
        head(kind),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n:03}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            assert!(
                store.insert(uri.to_string(), xml.to_vec()).is_none(),
                "{uri} stored twice"
            );
            Ok(())
        },
        limits,
    )?;
    for e in entries {
        set.write_entry(e)?;
    }
    let summary = set.finish()?;
    assert_eq!(summary.entries, entries.len() as u64);
    Ok((summary.documents, store))
}

/// Reads every part through the index, checking each as part of an index, and returns
/// the entries in order.
fn read_back(store: &Store, index_kind: K, part_kind: K) -> Vec<Entry> {
    let index = &store["http://example.com/list.xml"];
    let mut reader = Reader::new(&index[..]).unwrap();
    assert_eq!(reader.kind().unwrap(), index_kind);
    let mut entries = Vec::new();
    while let Some(part) = reader.next_entry().unwrap() {
        let bytes = &store[part.loc.as_str()];
        let mut r = Reader::new(&bytes[..])
            .unwrap()
            .with_check_options(Some(CheckOptions::part_of_index(true)));
        assert_eq!(r.kind().unwrap(), part_kind);
        let part_head = r.head().unwrap().clone();
        while let Some(e) = r.next_entry().unwrap() {
            entries.push(e);
        }
        assert_eq!(rules_of(r.findings()), [], "{}", part.loc);
        // The index entry describes the part.
        let md = part.md.unwrap();
        assert_eq!(md.from, part_head.md.from);
        assert_eq!(md.until, part_head.md.until);
        assert_eq!(md.at, part_head.md.at);
    }
    assert_eq!(rules_of(reader.findings()), []);
    entries
}

#[test]
fn a_resource_list_is_split_by_entries() {
    let entries: Vec<Entry> = (0..120).map(|i| entry(i, false)).collect();
    let (docs, store) = publish(K::ResourceList, &entries, SetLimits::new(50, u64::MAX)).unwrap();
    assert_eq!(docs.len(), 4);
    assert_eq!(docs[3].as_str(), "http://example.com/list.xml");
    assert_eq!(
        read_back(&store, K::ResourceListIndex, K::ResourceList),
        entries
    );
}

#[test]
fn a_change_list_is_split_into_contiguous_intervals() {
    let entries: Vec<Entry> = (0..10).map(|i| entry(i * 7, true)).collect();
    let (docs, store) = publish(K::ChangeList, &entries, SetLimits::new(4, u64::MAX)).unwrap();
    assert_eq!(docs.len(), 4);
    assert_eq!(
        read_back(&store, K::ChangeListIndex, K::ChangeList),
        entries
    );
    let (index, _) =
        resourcesync_xml::read_document(&store["http://example.com/list.xml"]).unwrap();
    let times: Vec<(String, Option<String>)> = index
        .entries
        .iter()
        .map(|e| {
            let md = e.md.as_ref().unwrap();
            (
                md.from.as_ref().unwrap().to_string(),
                md.until.as_ref().map(|u| u.to_string()),
            )
        })
        .collect();
    assert_eq!(
        times,
        [
            (
                "2013-01-01T00:00:00Z".to_string(),
                Some("2013-01-01T00:28:00Z".to_string())
            ),
            (
                "2013-01-01T00:28:00Z".to_string(),
                Some("2013-01-01T00:56:00Z".to_string())
            ),
            // The last part stays open, as the set is.
            ("2013-01-01T00:56:00Z".to_string(), None),
        ]
    );
}

#[test]
fn documents_stay_within_the_byte_limit() {
    let entries: Vec<Entry> = (0..300).map(|i| entry(i, true)).collect();
    let max = 4_000;
    let (docs, store) = publish(K::ChangeList, &entries, SetLimits::new(50_000, max)).unwrap();
    assert!(docs.len() > 5, "{}", docs.len());
    for (uri, xml) in &store {
        assert!(xml.len() as u64 <= max, "{uri}: {} bytes", xml.len());
        // And a reader held to the same limit accepts it.
        Reader::with_limits(&xml[..], Limits::default().with_max_bytes(max))
            .unwrap()
            .read_to_document()
            .unwrap();
    }
    assert_eq!(
        read_back(&store, K::ChangeListIndex, K::ChangeList),
        entries
    );
}

#[test]
fn a_set_that_fits_is_one_document_at_the_sets_uri() {
    let entries: Vec<Entry> = (0..3).map(|i| entry(i, false)).collect();
    let (docs, store) = publish(K::ResourceDump, &entries, SetLimits::default()).unwrap();
    assert_eq!(docs.len(), 1);
    let (doc, _) = resourcesync_xml::read_document(&store["http://example.com/list.xml"]).unwrap();
    assert_eq!(doc.head.kind(), K::ResourceDump);
    assert!(doc.head.link(&Relation::Index).is_none());
    assert_eq!(doc.entries, entries);
}

#[test]
fn refusals() {
    let backwards = [entry(5, true), entry(4, true)];
    assert!(matches!(
        publish(K::ChangeList, &backwards, SetLimits::default()),
        Err(WriteError::Invalid(_))
    ));
    // Out of order across parts: the entry without a datetime closes the first part and
    // starts a second, and the next is compared with the first part's change all the same.
    let mut untimed = entry(6, true);
    untimed.md.as_mut().unwrap().datetime = None;
    let across = [entry(5, true), untimed, entry(4, true)];
    match publish(K::ChangeList, &across, SetLimits::new(1, 52_428_800)) {
        Err(WriteError::Invalid(message)) => assert_eq!(
            message,
            "entry 3: a change at 2013-01-01T00:04:00Z comes after one at 2013-01-01T00:05:00Z: \
             changes come in forward chronological order"
        ),
        other => panic!("{:?}", other.map(|(uris, _)| uris)),
    }
    let huge = [entry(1, false)];
    assert!(matches!(
        publish(K::ResourceList, &huge, SetLimits::new(10, 300)),
        Err(WriteError::Limit { .. })
    ));
    let mut store = Store::new();
    let set = SetWriter::new(
        DocumentHead::of_kind(K::CapabilityList),
        "http://example.com/caps.xml".parse().unwrap(),
        |n| format!("http://example.com/c{n}").parse(),
        |uri: &Uri, xml: &[u8]| {
            store.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::default(),
    );
    assert!(matches!(set, Err(WriteError::Invalid(_))));
}
