//! Sets written into a `Directory` by `DirectoryStore`: parts named after the set,
//! compressed if asked, bad names refused, and the set read back through the directory's
//! paths.

use std::io;

use resourcesync_model::{Change, DocumentHead, DocumentKind as K, Entry, Link, Md, Relation, Uri};
use resourcesync_source::{Directory, DirectoryStore};
use resourcesync_xml::{Gzip, SetLimits, SetOptions, SetReader, read_document};

use crate::files;

fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}

fn resource_list() -> DocumentHead {
    head(K::ResourceList)
}

fn res(i: u32) -> Entry {
    entry(i, false)
}

/// `(rule id, entry)` of each finding.
fn rules_of(findings: &[resourcesync_model::Finding]) -> Vec<(&'static str, Option<u64>)> {
    findings.iter().map(|f| (f.rule.id(), f.entry)).collect()
}

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

#[test]
fn a_set_in_a_directory_names_its_parts_and_compresses_if_asked() {
    let entries: Vec<Entry> = (0..5).map(|i| entry(i, true)).collect();
    for (gzip, expected) in [
        (
            Gzip::Never,
            &[
                "changelist-00001.xml",
                "changelist-00002.xml",
                "changelist-00003.xml",
                "changelist.xml",
            ][..],
        ),
        (
            Gzip::Parts,
            &[
                "changelist-00001.xml.gz",
                "changelist-00002.xml.gz",
                "changelist-00003.xml.gz",
                "changelist.xml",
            ],
        ),
        (
            Gzip::All,
            &[
                "changelist-00001.xml.gz",
                "changelist-00002.xml.gz",
                "changelist-00003.xml.gz",
                "changelist.xml.gz",
            ],
        ),
    ] {
        let root = tempfile::tempdir().unwrap();
        let dir = Directory::new(root.path(), "http://example.com/sets/".parse().unwrap()).unwrap();
        let options = SetOptions::default()
            .with_limits(SetLimits::new(2, 52_428_800))
            .with_gzip(gzip);
        let mut set =
            DirectoryStore::set_writer(head(K::ChangeList), dir, "changelist.xml", options)
                .unwrap();
        for e in &entries {
            set.write_entry(e).unwrap();
        }
        let written = set.finish().unwrap();
        assert_eq!(written.findings, []);
        assert_eq!(files(root.path()), expected, "{gzip:?}");
        for (uri, name) in written.output.documents.iter().zip(expected) {
            assert_eq!(uri.as_str(), format!("http://example.com/sets/{name}"));
            let bytes = std::fs::read(root.path().join(name)).unwrap();
            assert_eq!(
                bytes.starts_with(&[0x1f, 0x8b]),
                name.ends_with(".gz"),
                "{name}"
            );
        }
        // Read back through the index, parts decompressed on the way.
        let index_name = expected[3];
        assert_eq!(
            written.output.uri.as_str(),
            format!("http://example.com/sets/{index_name}"),
            "the set's URI is the index's"
        );
        let (index, _) =
            read_document(&std::fs::read(root.path().join(index_name)).unwrap()).unwrap();
        let mut read = Vec::new();
        for part in &index.entries {
            let name = part.loc.as_str().rsplit('/').next().unwrap();
            let (doc, findings) =
                read_document(&std::fs::read(root.path().join(name)).unwrap()).unwrap();
            assert_eq!(rules_of(&findings), []);
            assert_eq!(
                doc.head.link(&Relation::Index).unwrap().href.as_str(),
                format!("http://example.com/sets/{index_name}")
            );
            read.extend(doc.entries);
        }
        assert_eq!(read, entries);
    }
    // A set that fits is one document, compressed only with Gzip::All.
    for (gzip, name) in [
        (Gzip::Parts, "changelist.xml"),
        (Gzip::All, "changelist.xml.gz"),
    ] {
        let root = tempfile::tempdir().unwrap();
        let dir = Directory::new(root.path(), "http://example.com/".parse().unwrap()).unwrap();
        let options = SetOptions::default().with_gzip(gzip);
        let mut set =
            DirectoryStore::set_writer(head(K::ChangeList), dir, "changelist.xml", options)
                .unwrap();
        set.write_entry(&entries[0]).unwrap();
        let summary = set.finish().unwrap().output;
        assert_eq!(files(root.path()), [name]);
        assert_eq!(summary.uri.as_str(), format!("http://example.com/{name}"));
        assert_eq!(summary.documents, std::slice::from_ref(&summary.uri));
    }
}

#[test]
fn a_set_in_a_directory_refuses_bad_names() {
    let root = tempfile::tempdir().unwrap();
    let dir = Directory::new(root.path(), "http://example.com/".parse().unwrap()).unwrap();
    for name in [
        "changelist",
        ".xml",
        "../changelist.xml",
        "a b.xml",
        "sub/.xml",
    ] {
        let set = DirectoryStore::set_writer(
            head(K::ChangeList),
            dir.clone(),
            name,
            SetOptions::default(),
        );
        assert!(set.is_err(), "{name}");
    }
    // A name in a subdirectory puts the parts beside it.
    let mut set = DirectoryStore::set_writer(
        head(K::ResourceList),
        dir,
        "lists/resourcelist.xml",
        SetOptions::default().with_limits(SetLimits::new(1, 52_428_800)),
    )
    .unwrap();
    set.write_entry(&entry(1, false)).unwrap();
    set.write_entry(&entry(2, false)).unwrap();
    let _ = set.finish().unwrap();
    assert_eq!(
        files(&root.path().join("lists")),
        [
            "resourcelist-00001.xml",
            "resourcelist-00002.xml",
            "resourcelist.xml"
        ]
    );
}

#[test]
fn gzip_parts_in_a_directory_are_read_through_its_paths() {
    let root = tempfile::tempdir().unwrap();
    let dir = Directory::new(root.path(), uri("http://example.com/sets/")).unwrap();
    let options = SetOptions::default()
        .with_limits(SetLimits::new(3, 52_428_800))
        .with_gzip(Gzip::All);
    let mut set =
        DirectoryStore::set_writer(resource_list(), dir.clone(), "resourcelist.xml", options)
            .unwrap();
    for i in 0..10 {
        set.write_entry(&res(i)).unwrap();
    }
    let written = set.finish().unwrap();
    let index = written.output.documents.last().unwrap().clone();
    assert_eq!(
        index.as_str(),
        "http://example.com/sets/resourcelist.xml.gz"
    );
    // The fetch function a publisher's own checker would use: the Directory's paths.
    let fetch = |u: &Uri| -> io::Result<io::BufReader<std::fs::File>> {
        let path = dir.path(u).map_err(io::Error::other)?;
        Ok(io::BufReader::new(std::fs::File::open(path)?))
    };
    let mut reader = SetReader::open(index, fetch).unwrap();
    let mut locs = Vec::new();
    while let Some(entry) = reader.next_entry().unwrap() {
        locs.push(entry.loc);
    }
    assert_eq!(locs, (0..10).map(|i| res(i).loc).collect::<Vec<_>>());
    assert_eq!(reader.parts_read(), 4);
    assert_eq!(reader.findings(), []);
}
