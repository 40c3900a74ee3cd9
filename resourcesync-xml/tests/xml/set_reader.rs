//! `SetReader`: an index and its parts as one stream, each part checked against the
//! index; over sets the `SetWriter` wrote (gzip parts too) and over broken ones.

use std::collections::BTreeMap;
use std::io;

use resourcesync_model::{
    Change, Document, DocumentHead, DocumentKind as K, Entry, Link, Relation, Root, Uri,
};
use resourcesync_xml::{SetLimits, SetReadError, SetReader, SetWriter, write_document};

type Store = BTreeMap<Uri, Vec<u8>>;

fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}

fn up() -> Link {
    Link::new(Relation::Up, uri("http://example.com/caps.xml"))
}

fn resource_list() -> DocumentHead {
    DocumentHead::of_kind(K::ResourceList)
        .with_at("2013-01-03T09:00:00Z".parse().unwrap())
        .with_link(up())
}

fn change_list() -> DocumentHead {
    DocumentHead::of_kind(K::ChangeList)
        .with_from("2013-01-01T00:00:00Z".parse().unwrap())
        .with_link(up())
}

fn res(i: u32) -> Entry {
    Entry::new(uri(&format!("http://example.com/res{i}")))
}

fn change(i: u32) -> Entry {
    res(i)
        .with_change(Change::Updated)
        .with_datetime(format!("2013-01-01T00:{i:02}:00Z").parse().unwrap())
}

fn fetcher<'s>(store: &'s Store) -> impl FnMut(&Uri) -> io::Result<&'s [u8]> + 's {
    |uri: &Uri| match store.get(uri) {
        Some(bytes) => Ok(&bytes[..]),
        None => Err(io::Error::new(io::ErrorKind::NotFound, "404")),
    }
}

/// Every entry, with the URI of the document it came from, and the findings as
/// `(document, rule id, entry)`.
type Read = (
    Vec<(String, String)>,
    Vec<(String, &'static str, Option<u64>)>,
);

fn read_all(store: &Store, set: &str) -> Result<Read, SetReadError> {
    let mut reader = SetReader::open(uri(set), fetcher(store))?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry()? {
        entries.push((
            reader.document().unwrap().to_string(),
            entry.loc.to_string(),
        ));
    }
    let findings = reader
        .take_findings()
        .into_iter()
        .map(|f| (f.document.to_string(), f.finding.rule.id(), f.finding.entry))
        .collect();
    Ok((entries, findings))
}

fn document(head: DocumentHead, entries: Vec<Entry>) -> Vec<u8> {
    let mut doc = Document::new(head);
    doc.entries = entries;
    write_document(Vec::new(), &doc).unwrap().output
}

fn index_of(head: &DocumentHead, parts: &[&str]) -> Vec<u8> {
    let mut head = head.clone();
    head.root = Root::SitemapIndex;
    document(head, parts.iter().map(|p| Entry::new(uri(p))).collect())
}

fn part(head: &DocumentHead, index: &str, entries: Vec<Entry>) -> Vec<u8> {
    document(
        head.clone()
            .with_link(Link::new(Relation::Index, uri(index))),
        entries,
    )
}

const INDEX: &str = "http://example.com/list.xml";

#[test]
fn a_set_written_by_the_set_writer_reads_back_as_one_stream() {
    let mut store = Store::new();
    let mut set = SetWriter::new(
        change_list(),
        uri(INDEX),
        |n| format!("http://example.com/list-{n}.xml").parse(),
        |u: &Uri, xml: &[u8]| {
            store.insert(u.clone(), xml.to_vec());
            Ok(())
        },
        SetLimits::new(2, 52_428_800),
    )
    .unwrap();
    for i in 0..5 {
        set.write_entry(&change(i)).unwrap();
    }
    let _ = set.finish().unwrap();
    let (entries, findings) = read_all(&store, INDEX).unwrap();
    assert_eq!(findings, []);
    let expected: Vec<(String, String)> = (0..5)
        .map(|i| {
            (
                format!("http://example.com/list-{}.xml", i / 2 + 1),
                format!("http://example.com/res{i}"),
            )
        })
        .collect();
    assert_eq!(entries, expected);
    let reader = SetReader::open(uri(INDEX), fetcher(&store)).unwrap();
    assert!(reader.is_index());
    assert_eq!(reader.kind(), K::ChangeList);
    assert_eq!(reader.head().kind(), K::ChangeListIndex);
}

#[test]
fn a_document_that_is_no_index_is_read_as_itself() {
    let mut store = Store::new();
    store.insert(uri(INDEX), document(resource_list(), vec![res(1), res(2)]));
    let (entries, findings) = read_all(&store, INDEX).unwrap();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|(doc, _)| doc == INDEX));
    assert_eq!(findings, []);
    let reader = SetReader::open(uri(INDEX), fetcher(&store)).unwrap();
    assert!(!reader.is_index());
    assert_eq!(reader.kind(), K::ResourceList);
}

#[test]
fn each_part_is_checked_against_the_index_and_named_in_errors() {
    let a = "http://example.com/a.xml";
    let b = "http://example.com/b.xml";
    let c = "http://example.com/c.xml";
    let mut store = Store::new();
    store.insert(uri(INDEX), index_of(&change_list(), &[a, b, c]));
    store.insert(uri(a), part(&change_list(), INDEX, vec![change(1)]));
    // A Resource List in a Change List Index.
    store.insert(uri(b), part(&resource_list(), INDEX, vec![res(2)]));
    store.insert(uri(c), part(&change_list(), INDEX, vec![change(3)]));
    let mut reader = SetReader::open(uri(INDEX), fetcher(&store)).unwrap();
    assert_eq!(reader.next_entry().unwrap().unwrap().loc, res(1).loc);
    match reader.next_entry() {
        Err(e @ SetReadError::Capability { .. }) => assert_eq!(
            e.to_string(),
            "http://example.com/b.xml: a part with capability resourcelist in \
             http://example.com/list.xml, whose capability is changelist"
        ),
        other => panic!("{other:?}"),
    }
    // The refused part is skipped; the set goes on.
    assert_eq!(reader.next_entry().unwrap().unwrap().loc, res(3).loc);
    assert!(reader.next_entry().unwrap().is_none());
}

#[test]
fn a_missing_index_link_is_a_warning_of_the_part_and_a_wrong_one_an_error() {
    let a = "http://example.com/a.xml";
    let b = "http://example.com/b.xml";
    let mut store = Store::new();
    store.insert(uri(INDEX), index_of(&resource_list(), &[a, b]));
    store.insert(uri(a), document(resource_list(), vec![res(1)]));
    store.insert(
        uri(b),
        part(
            &resource_list(),
            "http://example.com/other.xml",
            vec![res(2)],
        ),
    );
    let mut reader = SetReader::open(uri(INDEX), fetcher(&store)).unwrap();
    reader.next_entry().unwrap().unwrap();
    match reader.next_entry() {
        Err(SetReadError::IndexLink { uri: u, href, .. }) => {
            assert_eq!(
                (u.as_str(), href.as_str()),
                (b, "http://example.com/other.xml")
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.next_entry().unwrap().is_none());
    let findings: Vec<(&str, &str)> = reader
        .findings()
        .iter()
        .map(|f| (f.document.as_str(), f.finding.rule.id()))
        .collect();
    assert_eq!(findings, [(a, "index-link-recommended")]);
    // Printed as a user sees it: the document, then the finding.
    let shown = reader.findings()[0].to_string();
    assert!(
        shown.starts_with(&format!("{a}: ")) && shown.contains("index-link-recommended"),
        "{shown}"
    );
    drop(reader);
    // The same index written differently (host case, default port) is the same.
    store.insert(
        uri(b),
        part(
            &resource_list(),
            "http://EXAMPLE.com:80/list.xml",
            vec![res(2)],
        ),
    );
    assert_eq!(read_all(&store, INDEX).unwrap().0.len(), 2);
}

#[test]
fn loops_are_refused() {
    let a = "http://example.com/a.xml";
    let nested = "http://example.com/nested.xml";
    let mut store = Store::new();
    // The index lists a part twice, itself, and another index.
    store.insert(
        uri(INDEX),
        index_of(&resource_list(), &[a, a, INDEX, nested]),
    );
    store.insert(uri(a), part(&resource_list(), INDEX, vec![res(1)]));
    store.insert(uri(nested), index_of(&resource_list(), &[a]));
    let mut reader = SetReader::open(uri(INDEX), fetcher(&store)).unwrap();
    reader.next_entry().unwrap().unwrap();
    match reader.next_entry() {
        Err(SetReadError::Repeated { uri: u, .. }) => assert_eq!(u.as_str(), a),
        other => panic!("{other:?}"),
    }
    match reader.next_entry() {
        Err(SetReadError::Repeated { uri: u, .. }) => assert_eq!(u.as_str(), INDEX),
        other => panic!("{other:?}"),
    }
    match reader.next_entry() {
        Err(e @ SetReadError::NestedIndex { .. }) => {
            assert!(e.to_string().starts_with(nested), "{e}")
        }
        other => panic!("{other:?}"),
    }
    assert!(reader.next_entry().unwrap().is_none());
}

#[test]
fn fetch_and_read_failures_name_the_document() {
    let a = "http://example.com/a.xml";
    let gone = "http://example.com/gone.xml";
    let broken = "http://example.com/broken.xml";
    let mut store = Store::new();
    store.insert(uri(INDEX), index_of(&resource_list(), &[gone, broken, a]));
    store.insert(uri(a), part(&resource_list(), INDEX, vec![res(1)]));
    let mut bad = part(&resource_list(), INDEX, vec![res(2), res(3)]);
    bad.truncate(bad.len() - 20);
    store.insert(uri(broken), bad);
    let mut reader = SetReader::open(uri(INDEX), fetcher(&store)).unwrap();
    match reader.next_entry() {
        Err(e @ SetReadError::Fetch { .. }) => {
            assert_eq!(e.to_string(), format!("fetching {gone} failed: 404"))
        }
        other => panic!("{other:?}"),
    }
    // The broken part's first entry is read; the error comes where the text ends.
    assert_eq!(reader.next_entry().unwrap().unwrap().loc, res(2).loc);
    match reader.next_entry() {
        Err(SetReadError::Read { uri: u, .. }) => assert_eq!(u.as_str(), broken),
        other => panic!("{other:?}"),
    }
    assert_eq!(reader.next_entry().unwrap().unwrap().loc, res(1).loc);
    assert!(reader.next_entry().unwrap().is_none());
    // A set whose own document cannot be fetched is no set.
    assert!(matches!(
        SetReader::open(uri("http://example.com/none.xml"), fetcher(&store)),
        Err(SetReadError::Fetch { .. })
    ));
}
