//! Writers check what readers check: the model's checker runs over the head and each
//! entry, its findings come back from `finish`, and refusing errors is an option.

use resourcesync_model::{
    Change, Document, DocumentHead, DocumentKind as K, Entry, Link, Relation, Uri,
};
use resourcesync_xml::{
    WriteError, WriteOptions, Writer, read_document, write_document, write_document_with,
};

use crate::rules_of;

fn change_list() -> DocumentHead {
    DocumentHead::of_kind(K::ChangeList)
        .with_from("2013-01-03T00:00:00Z".parse().unwrap())
        .with_link(Link::new(
            Relation::Up,
            "http://example.com/caps.xml".parse().unwrap(),
        ))
}

fn change(loc: &str, minute: u32) -> Entry {
    Entry::new(loc.parse::<Uri>().unwrap())
        .with_change(Change::Updated)
        .with_datetime(format!("2013-01-03T10:{minute:02}:00Z").parse().unwrap())
}

fn refusing() -> WriteOptions {
    WriteOptions::default().with_refuse_errors(true)
}

#[test]
fn an_out_of_order_change_list_is_written_with_a_word_by_default() {
    let mut doc = Document::new(change_list());
    doc.entries = vec![change("http://e.com/a", 30), change("http://e.com/b", 10)];
    let written = write_document(Vec::new(), &doc).unwrap();
    assert_eq!(rules_of(&written.findings), [("changelist-order", Some(2))]);
    // The same findings a reader of the written document reports.
    let (read, findings) = read_document(&written.output).unwrap();
    assert_eq!(read, doc);
    assert_eq!(rules_of(&findings), rules_of(&written.findings));
}

#[test]
fn refusing_stops_the_document_at_the_first_error() {
    let mut doc = Document::new(change_list());
    doc.entries = vec![change("http://e.com/a", 30), change("http://e.com/b", 10)];
    match write_document_with(Vec::new(), &doc, refusing()) {
        Err(WriteError::Refused {
            entry: Some(2),
            findings,
        }) => assert_eq!(rules_of(&findings), [("changelist-order", Some(2))]),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_head_with_errors_is_refused_before_a_byte_is_written() {
    let head = DocumentHead::of_kind(K::ChangeList); // no from, no up link
    let mut out = Vec::new();
    match Writer::with_options(&mut out, &head, refusing()) {
        Err(e @ WriteError::Refused { entry: None, .. }) => {
            let WriteError::Refused { findings, .. } = &e else {
                unreachable!()
            };
            assert_eq!(
                rules_of(findings),
                [("from-mandatory", None), ("up-link-mandatory", None)]
            );
            assert!(
                e.to_string()
                    .starts_with("document refused: error [from-mandatory"),
                "{e}"
            );
            assert!(e.to_string().ends_with("(and 1 more)"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(out.is_empty());
    // By default the head is written, its findings reported.
    let written = Writer::new(&mut out, &head).unwrap().finish().unwrap();
    assert_eq!(
        rules_of(&written.findings),
        [("from-mandatory", None), ("up-link-mandatory", None)]
    );
}

#[test]
fn a_refused_entry_leaves_nothing_and_is_forgotten() {
    let mut writer = Writer::with_options(Vec::new(), &change_list(), refusing()).unwrap();
    writer.write_entry(&change("http://e.com/a", 30)).unwrap();
    // Out of order: refused.
    assert!(writer.write_entry(&change("http://e.com/b", 10)).is_err());
    // No change: refused, and its loc and 10:50 forgotten.
    let no_change = Entry::new("http://e.com/c".parse().unwrap())
        .with_datetime("2013-01-03T10:50:00Z".parse().unwrap());
    match writer.write_entry(&no_change) {
        Err(WriteError::Refused {
            entry: Some(2),
            findings,
        }) => assert_eq!(rules_of(&findings), [("change-mandatory", Some(2))]),
        other => panic!("{other:?}"),
    }
    // Entry 2, compared with 10:30 (not 10:10 or 10:50); a warning is written.
    writer.write_entry(&change("http://e.com/b", 40)).unwrap();
    writer.write_entry(&change("ftp://e.com/d", 45)).unwrap();
    assert_eq!(writer.entries_written(), 3);
    let written = writer.finish().unwrap();
    assert_eq!(
        rules_of(&written.findings),
        [("uri-scheme-not-http", Some(3))]
    );
    let (read, findings) = read_document(&written.output).unwrap();
    let locs: Vec<&str> = read.entries.iter().map(|e| e.loc.as_str()).collect();
    assert_eq!(locs, ["http://e.com/a", "http://e.com/b", "ftp://e.com/d"]);
    assert_eq!(rules_of(&written.findings), rules_of(&findings));
}

#[test]
fn a_refused_entrys_loc_is_forgotten() {
    let head = DocumentHead::of_kind(K::ResourceList)
        .with_at("2013-01-03T00:00:00Z".parse().unwrap())
        .with_link(Link::new(
            Relation::Up,
            "http://example.com/caps.xml".parse().unwrap(),
        ));
    let mut writer = Writer::with_options(Vec::new(), &head, refusing()).unwrap();
    let with_from = Entry::new("http://e.com/a".parse().unwrap())
        .with_from("2013-01-03T00:00:00Z".parse().unwrap());
    match writer.write_entry(&with_from) {
        Err(WriteError::Refused {
            entry: Some(1),
            findings,
        }) => assert_eq!(rules_of(&findings), [("entry-from-not-used", Some(1))]),
        other => panic!("{other:?}"),
    }
    writer
        .write_entry(&Entry::new("http://e.com/a".parse().unwrap()))
        .unwrap();
    // Listed once: no loc-duplicate warning for the refused one.
    writer
        .write_entry(&Entry::new("http://e.com/a".parse().unwrap()))
        .unwrap();
    let written = writer.finish().unwrap();
    assert_eq!(rules_of(&written.findings), [("loc-duplicate", Some(2))]);
}

#[test]
fn findings_can_be_taken_as_they_come() {
    let mut writer = Writer::new(Vec::new(), &change_list()).unwrap();
    writer.write_entry(&change("http://e.com/a", 30)).unwrap();
    writer.write_entry(&change("http://e.com/b", 10)).unwrap();
    assert_eq!(rules_of(writer.findings()), [("changelist-order", Some(2))]);
    assert_eq!(writer.take_findings().len(), 1);
    writer.write_entry(&change("http://e.com/c", 5)).unwrap();
    let written = writer.finish().unwrap();
    assert_eq!(rules_of(&written.findings), [("changelist-order", Some(3))]);
}
