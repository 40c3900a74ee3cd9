//! The set writer: as many documents as the limits require, the index over them, every
//! document valid and within the limits, and the entries read back in order.

use std::collections::BTreeMap;

use resourcesync_model::{
    Change, CheckOptions, DocumentHead, DocumentKind as K, Entry, Link, Md, Relation, Uri,
};
use resourcesync_xml::{
    Limits, Reader, SetLimits, SetOptions, SetWriter, WriteError, WriteOptions, WrittenDocument,
    read_document,
};

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
    let summary = set.finish()?.output;
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
        // The index entry describes the part; an archive's part has no times to describe.
        let md = part.md.unwrap_or_default();
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
fn an_archive_is_split_like_any_set() {
    // A Change List Archive of 7 Change Lists, 3 to a part: an archive index over 3 parts,
    // each part and the index with no finding, the entries back in order.
    let lists: Vec<Entry> = (0..7)
        .map(|i| {
            let time = |d: u32| format!("2013-01-{:02}T09:00:00Z", d + 1).parse().unwrap();
            Entry::new(
                format!("http://example.com/changelist{i}.xml")
                    .parse()
                    .unwrap(),
            )
            .with_md(Md::new().with_from(time(i)).with_until(time(i + 1)))
        })
        .collect();
    let head = DocumentHead::of_kind(K::ChangeListArchive).with_link(Link::new(
        Relation::Up,
        "http://example.com/caps.xml".parse().unwrap(),
    ));
    let mut store = Store::new();
    let mut set = SetWriter::new(
        head,
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n:03}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            store.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::new(3, u64::MAX),
    )
    .unwrap();
    for list in &lists {
        set.write_entry(list).unwrap();
    }
    let written = set.finish().unwrap();
    assert_eq!(written.findings, []);
    assert_eq!(written.output.documents.len(), 4);
    assert_eq!(
        read_back(&store, K::ChangeListArchiveIndex, K::ChangeListArchive),
        lists
    );
    let (index, findings) = read_document(&store["http://example.com/list.xml"]).unwrap();
    assert_eq!(rules_of(&findings), []);
    assert!(index.entries.iter().all(|e| e.md.is_none()));
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
    // Out of order: the checker's rule, with the entry's number, as a reader reports it.
    let backwards = [entry(5, true), entry(4, true)];
    match publish(K::ChangeList, &backwards, SetLimits::default()) {
        Err(WriteError::Refused {
            entry: Some(2),
            findings,
        }) => assert_eq!(rules_of(&findings), [("changelist-order", Some(2))]),
        other => panic!("{:?}", other.map(|(uris, _)| uris)),
    }
    // Out of order across parts: the entry without a datetime closes the first part and
    // starts a second, and the next is compared with the first part's change all the same.
    let mut untimed = entry(6, true);
    untimed.md.as_mut().unwrap().datetime = None;
    let across = [entry(5, true), untimed, entry(4, true)];
    match publish(K::ChangeList, &across, SetLimits::new(1, 52_428_800)) {
        Err(e @ WriteError::Refused { entry: Some(3), .. }) => assert_eq!(
            e.to_string(),
            "entry 3 refused: error [changelist-order, section 12.1] entry 3: \
             datetime 2013-01-01T00:04:00Z is before the previous entry's 2013-01-01T00:05:00Z"
        ),
        other => panic!("{:?}", other.map(|(uris, _)| uris)),
    }
    // A Change List entry without `change`.
    let mut unchanged = entry(7, true);
    unchanged.md.as_mut().unwrap().change = None;
    match publish(
        K::ChangeList,
        &[entry(5, true), unchanged],
        SetLimits::default(),
    ) {
        Err(WriteError::Refused {
            entry: Some(2),
            findings,
        }) => assert_eq!(rules_of(&findings), [("change-mandatory", Some(2))]),
        other => panic!("{:?}", other.map(|(uris, _)| uris)),
    }
    let huge = [entry(1, false)];
    assert!(matches!(
        publish(K::ResourceList, &huge, SetLimits::new(10, 300)),
        Err(WriteError::Limit { .. })
    ));
    // After a part holds entries, one too big for a part of its own is refused all the
    // same, before the part is closed for it: no document is stored over the limit, and
    // the set goes on.
    let mut big = entry(2, false);
    big.loc = format!("http://example.com/{}", "x".repeat(800))
        .parse()
        .unwrap();
    let mut stored = Vec::new();
    let mut set = SetWriter::new(
        head(K::ResourceList),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n:03}.xml").parse(),
        |_: &Uri, xml: &[u8]| {
            stored.push(xml.len());
            Ok(())
        },
        SetLimits::new(10, 700),
    )
    .unwrap();
    set.write_entry(&entry(1, false)).unwrap();
    assert!(matches!(
        set.write_entry(&big),
        Err(WriteError::Limit { limit: 700, .. })
    ));
    set.write_entry(&entry(3, false)).unwrap();
    assert_eq!(set.finish().unwrap().output.documents.len(), 1);
    assert!(stored.len() == 1 && stored[0] <= 700, "{stored:?}");
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

#[test]
fn a_head_that_breaks_a_rule_is_refused_before_anything_is_stored() {
    let mut no_from = head(K::ChangeList);
    no_from.md.from = None;
    let mut stored = 0;
    let set = SetWriter::new(
        no_from,
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n}.xml").parse(),
        |_: &Uri, _: &[u8]| {
            stored += 1;
            Ok(())
        },
        SetLimits::default(),
    );
    match set {
        Err(WriteError::Refused {
            entry: None,
            findings,
        }) => {
            assert_eq!(rules_of(&findings), [("from-mandatory", None)])
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(stored, 0);
}

#[test]
fn a_refused_entry_is_forgotten_and_the_set_goes_on() {
    let mut store = Store::new();
    let mut set = SetWriter::new(
        head(K::ChangeList),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            store.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::new(2, 52_428_800),
    )
    .unwrap();
    set.write_entry(&entry(10, true)).unwrap();
    set.write_entry(&entry(20, true)).unwrap();
    // Before 20: refused, and not taken as the latest time.
    assert!(set.write_entry(&entry(15, true)).is_err());
    let mut unchanged = entry(30, true);
    unchanged.md.as_mut().unwrap().change = None;
    // Refused too, and its 00:30 forgotten: 00:25 is in order after it.
    assert!(set.write_entry(&unchanged).is_err());
    set.write_entry(&entry(25, true)).unwrap();
    let written = set.finish().unwrap();
    assert_eq!(written.findings, []);
    assert_eq!(written.output.entries, 3);
    let entries = read_back(&store, K::ChangeListIndex, K::ChangeList);
    assert_eq!(entries, [entry(10, true), entry(20, true), entry(25, true)]);
}

#[test]
fn reporting_instead_of_refusing_writes_and_reports_with_set_wide_numbers() {
    let mut store = Store::new();
    let options = SetOptions::default()
        .with_limits(SetLimits::new(2, 52_428_800))
        .with_write(WriteOptions::default().with_refuse_errors(false));
    let mut set = SetWriter::with_store(
        head(K::ChangeList),
        "http://example.com/list.xml".parse().unwrap(),
        (
            |n| format!("http://example.com/list-{n}.xml").parse(),
            |uri: &Uri, xml: &[u8]| {
                store.insert(uri.to_string(), xml.to_vec());
                Ok(())
            },
        ),
        options,
    )
    .unwrap();
    for i in [10, 20, 30, 15] {
        set.write_entry(&entry(i, true)).unwrap();
    }
    let written = set.finish().unwrap();
    assert_eq!(rules_of(&written.findings), [("changelist-order", Some(4))]);
    assert!(written.has_errors());
    // The parts' intervals never end before they start: the boundary is the latest time.
    let (index, findings) = read_document(&store["http://example.com/list.xml"]).unwrap();
    assert_eq!(rules_of(&findings), []);
    let md = index.entries[1].md.as_ref().unwrap();
    assert_eq!(md.from.unwrap().to_string(), "2013-01-01T00:30:00Z");
}

#[test]
fn a_change_dump_out_of_order_is_a_warning_written() {
    let dump_entry = |i: u32| {
        let mut e = Entry::new(format!("http://example.com/p{i}.zip").parse().unwrap());
        e.md = Some(
            Md::new()
                .with_from(format!("2013-01-01T00:{i:02}:00Z").parse().unwrap())
                .with_length(10)
                .with_media_type("application/zip".parse().unwrap()),
        );
        e
    };
    let entries = [dump_entry(10), dump_entry(5), dump_entry(20)];
    let mut store = Store::new();
    let mut set = SetWriter::new(
        head(K::ChangeDump),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            store.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::new(1, 52_428_800),
    )
    .unwrap();
    for e in &entries {
        set.write_entry(e).unwrap();
    }
    let written = set.finish().unwrap();
    assert_eq!(rules_of(&written.findings), [("changedump-order", Some(2))]);
    let (index, findings) = read_document(&store["http://example.com/list.xml"]).unwrap();
    assert_eq!(rules_of(&findings), []);
    assert_eq!(index.entries.len(), 3);
}

#[test]
fn a_set_has_no_entry_limit_of_its_own() {
    let mut parts = 0;
    let mut set = SetWriter::new(
        head(K::ResourceList),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n}.xml").parse(),
        |_: &Uri, _: &[u8]| {
            parts += 1;
            Ok(())
        },
        SetLimits::default(),
    )
    .unwrap();
    for i in 0..50_001 {
        set.write_entry(&entry(i, false)).unwrap();
    }
    let written = set.finish().unwrap();
    assert_eq!(written.findings, []);
    assert_eq!(written.output.documents.len(), 3);
    assert_eq!(parts, 3);
}

#[test]
fn entries_written_before_are_copied_into_the_same_documents() {
    for (kind, limits) in [
        (K::ResourceList, SetLimits::new(4, u64::MAX)),
        (K::ChangeList, SetLimits::new(3, u64::MAX)),
        (K::ResourceList, SetLimits::new(50_000, 1024)),
    ] {
        let change = kind == K::ChangeList;
        let entries: Vec<Entry> = (0..40).map(|i| entry(i * 7, change)).collect();
        let (_, store) = publish(kind, &entries, limits).unwrap();
        // The parts, in order of their names (the index is at the set's URI).
        let parts: Vec<&String> = store.keys().filter(|uri| uri.contains("list-")).collect();
        assert!(parts.len() > 1, "{kind:?}: {:?}", store.keys());
        let written: Vec<Vec<u8>> = parts
            .iter()
            .flat_map(|uri| resourcesync_xml::written_entries(&store[uri.as_str()]).unwrap())
            .map(<[u8]>::to_vec)
            .collect();
        assert_eq!(written.len(), entries.len());

        // Every other entry as the bytes written before: the same documents, byte for byte.
        let mut again = Store::new();
        let mut set = SetWriter::new(
            head(kind),
            "http://example.com/list.xml".parse().unwrap(),
            |n| format!("http://example.com/list-{n:03}.xml").parse(),
            |uri: &Uri, xml: &[u8]| {
                again.insert(uri.to_string(), xml.to_vec());
                Ok(())
            },
            limits,
        )
        .unwrap();
        for (i, (e, bytes)) in entries.iter().zip(&written).enumerate() {
            if i % 2 == 0 {
                set.write_written(bytes, e.datetime().as_ref()).unwrap();
            } else {
                set.write_entry(e).unwrap();
            }
        }
        assert_eq!(set.finish().unwrap().output.entries, 40);
        assert_eq!(again, store, "{kind:?}");
    }

    // What is not one entry element is refused, and the set goes on.
    let mut set = SetWriter::new(
        head(K::ResourceList),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n:03}.xml").parse(),
        |_: &Uri, _: &[u8]| Ok(()),
        SetLimits::new(10, u64::MAX),
    )
    .unwrap();
    let one = b"<url><loc>http://example.com/a</loc></url>\n";
    for bad in [
        &b""[..],
        b"<url>\n",
        b"<url></url>",
        b"<url><loc>http://example.com/a</loc></url>\n<url><loc>http://example.com/b</loc></url>\n",
        b"<sitemap><loc>http://example.com/a</loc></sitemap>\n",
        b"</urlset>\n",
    ] {
        assert!(
            matches!(set.write_written(bad, None), Err(WriteError::Invalid(_))),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    set.write_written(one, None).unwrap();
    assert_eq!(set.finish().unwrap().output.entries, 1);
}

#[test]
fn entries_of_documents_written_before_are_taken_into_the_same_documents() {
    use std::sync::Arc;
    for limits in [
        SetLimits::new(4, u64::MAX),
        SetLimits::new(50_000, 1024),
        SetLimits::new(1, u64::MAX),
    ] {
        let entries: Vec<Entry> = (0..40).map(|i| entry(i * 7, false)).collect();
        let (_, store) = publish(K::ResourceList, &entries, limits).unwrap();
        // Each entry as its document and its place there.
        let mut written: Vec<(Arc<WrittenDocument>, usize)> = Vec::new();
        for uri in store.keys().filter(|uri| uri.contains("list-")) {
            let bytes = store[uri.as_str()].clone();
            let slices: Vec<Vec<u8>> = resourcesync_xml::written_entries(&bytes)
                .unwrap()
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect();
            let document = Arc::new(WrittenDocument::new(bytes).unwrap());
            assert_eq!(document.len(), slices.len());
            for (i, slice) in slices.iter().enumerate() {
                assert_eq!(document.entry(i), slice);
                written.push((Arc::clone(&document), i));
            }
        }
        assert_eq!(written.len(), entries.len());

        // Stretches of one to five entries of one document (a part's end ends one),
        // every sixth entry made again: the same documents, byte for byte.
        for step in 1..=5 {
            let mut again = Store::new();
            let mut set = SetWriter::new(
                head(K::ResourceList),
                "http://example.com/list.xml".parse().unwrap(),
                |n| format!("http://example.com/list-{n:03}.xml").parse(),
                |uri: &Uri, xml: &[u8]| {
                    again.insert(uri.to_string(), xml.to_vec());
                    Ok(())
                },
                limits,
            )
            .unwrap();
            let mut i = 0;
            while i < entries.len() {
                if i % 6 == 5 {
                    set.write_entry(&entries[i]).unwrap();
                    i += 1;
                    continue;
                }
                let (document, first) = &written[i];
                let mut j = i + 1;
                while j < entries.len()
                    && j < i + step
                    && j % 6 != 5
                    && Arc::ptr_eq(&written[j].0, document)
                {
                    j += 1;
                }
                set.write_written_entries(document, *first..first + (j - i))
                    .unwrap();
                i = j;
            }
            assert_eq!(set.finish().unwrap().output.entries, 40);
            assert_eq!(again, store, "{limits:?}, stretches of {step}");
        }
    }

    // What is not as this crate writes it is no written document.
    let one = "<url><loc>http://example.com/a</loc></url>\n";
    let document =
        |body: &str| WrittenDocument::new(format!("<urlset>{body}</urlset>\n").into_bytes());
    assert_eq!(document("").map(|d| d.len()), Some(0));
    assert_eq!(document(&one.repeat(2)).map(|d| d.len()), Some(2));
    for bad in [
        "<url>\n",
        "<url></url>",
        "<url><loc>http://example.com/a</loc></url>",
        "<url><loc>http://example.com/a</loc></url>\n \n<url><loc>http://x/b</loc></url>\n",
        "<url><loc>http://example.com/a</url></loc></url>\n",
        "<url><loc>http://example.com/a</loc></url>\n<sitemap></sitemap>\n",
    ] {
        assert!(document(bad).is_none(), "{bad:?}");
    }
    assert!(WrittenDocument::new(one.as_bytes().to_vec()).is_none());

    // Entries past the last are refused; one too big for a part of its own is refused
    // after those before it.
    let mut stored = Store::new();
    let mut set = SetWriter::new(
        head(K::ResourceList),
        "http://example.com/list.xml".parse().unwrap(),
        |n| format!("http://example.com/list-{n:03}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            stored.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::new(10, 700),
    )
    .unwrap();
    let long = format!(
        "<url><loc>http://example.com/{}</loc></url>\n",
        "x".repeat(700)
    );
    let written = std::sync::Arc::new(document(&[one, one, &long].concat()).unwrap());
    assert!(matches!(
        set.write_written_entries(&written, 2..4),
        Err(WriteError::Invalid(_))
    ));
    assert!(matches!(
        set.write_written_entries(&written, 0..3),
        Err(WriteError::Limit { .. })
    ));
    assert_eq!(set.finish().unwrap().output.entries, 2);
}

#[test]
fn written_entries_finds_each_entry_of_a_document_this_crate_wrote_or_none() {
    let entries: Vec<Entry> = (0..5).map(|i| entry(i, false)).collect();
    let (_, store) = publish(K::ResourceList, &entries, SetLimits::new(2, u64::MAX)).unwrap();
    // A part: its entries; the index: its <sitemap> entries, one per part.
    let part = &store["http://example.com/list-001.xml"];
    let found = resourcesync_xml::written_entries(part).unwrap();
    assert_eq!(found.len(), 2);
    assert!(
        found
            .iter()
            .all(|e| e.starts_with(b"<url><loc>") && e.ends_with(b"</url>\n"))
    );
    let index = &store["http://example.com/list.xml"];
    assert_eq!(resourcesync_xml::written_entries(index).unwrap().len(), 3);
    // Cut short, or with something between entries: not as this crate writes.
    assert!(resourcesync_xml::written_entries(&part[..part.len() - 20]).is_none());
    let text = String::from_utf8(part.clone()).unwrap();
    let spaced = text.replacen("</url>\n", "</url>\n \n", 1);
    assert!(resourcesync_xml::written_entries(spaced.as_bytes()).is_none());
    // No entries: none.
    let empty = resourcesync_xml::Writer::new(Vec::new(), &head(K::ChangeList))
        .unwrap()
        .finish()
        .unwrap()
        .output;
    assert_eq!(resourcesync_xml::written_entries(&empty).unwrap().len(), 0);

    // A single document's writer takes them back, and refuses what is not one entry.
    let mut writer = resourcesync_xml::Writer::new(Vec::new(), &head(K::ResourceList)).unwrap();
    for bad in [&b"<url>\n"[..], b"<sitemap><loc>x</loc></sitemap>\n"] {
        assert!(matches!(
            writer.write_written(bad),
            Err(WriteError::Invalid(_))
        ));
    }
    for e in &found {
        writer.write_written(e).unwrap();
    }
    assert_eq!(writer.entries_written(), 2);
}

#[test]
fn entries_placed_by_reference_make_the_document_copying_them_makes() {
    let entries: Vec<Entry> = (0..6).map(|i| entry(i, true)).collect();
    let (_, store) = publish(K::ChangeList, &entries[..4], SetLimits::default()).unwrap();
    let written = &store["http://example.com/list.xml"];
    let document = WrittenDocument::new(written.clone()).unwrap();
    assert_eq!(document.len(), 4);
    // Copied entry by entry, then two new ones; and placed, then the same two.
    let head = head(K::ChangeList);
    let mut copied = resourcesync_xml::Writer::new(Vec::new(), &head).unwrap();
    for i in 0..document.len() {
        copied.write_written(document.entry(i)).unwrap();
    }
    let mut placed = resourcesync_xml::Writer::new(Vec::new(), &head).unwrap();
    let at = placed.place_written(&document).unwrap() as usize;
    for writer in [&mut copied, &mut placed] {
        for e in &entries[4..] {
            writer.write_entry(e).unwrap();
        }
        assert_eq!(writer.entries_written(), 6);
    }
    let copied = copied.finish().unwrap().output;
    let placed = placed.finish().unwrap().output;
    let assembled = [&placed[..at], document.entry_bytes(), &placed[at..]].concat();
    assert_eq!(assembled, copied);
    assert!(document.entry_bytes().starts_with(b"<url>"));
    assert!(document.entry_bytes().ends_with(b"</url>\n"));
    // Only into a <urlset>.
    let mut index =
        resourcesync_xml::Writer::new(Vec::new(), &DocumentHead::of_kind(K::ResourceListIndex))
            .unwrap();
    assert!(matches!(
        index.place_written(&document),
        Err(WriteError::Invalid(_))
    ));
}
