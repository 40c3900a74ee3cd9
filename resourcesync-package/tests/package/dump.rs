//! The dump builder: packages within the limits, a dump document that validates, and
//! every package verifying against its entry.

use std::collections::BTreeMap;
use std::io::Cursor;

use resourcesync_model::{
    Change, CheckOptions, Document, DocumentHead, DocumentKind, Link, Relation, Uri, check_with,
};
use resourcesync_package::{Bitstream, DumpBuilder, DumpLimits, Package, PackageOptions};

type Store = BTreeMap<String, Vec<u8>>;

fn head(kind: DocumentKind) -> DocumentHead {
    let mut head = DocumentHead::of_kind(kind);
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/caps.xml".parse().unwrap(),
    ));
    if kind == DocumentKind::ChangeDump {
        head.md.from = Some("2013-01-01T00:00:00Z".parse().unwrap());
    } else {
        head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
        head.md.completed = Some("2013-01-03T09:04:00Z".parse().unwrap());
    }
    head
}

fn build(kind: DocumentKind, n: usize, limits: DumpLimits) -> (Document, Store, Store) {
    // Both sinks borrow local maps: the builder lives no longer than they do.
    let mut packages = Store::new();
    let mut manifests = Store::new();
    let mut dump = DumpBuilder::new(
        head(kind),
        |i| format!("http://example.com/dump-part{i}.zip").parse(),
        |_: &Uri| Ok(Vec::new()),
        |uri: &Uri, zip: Vec<u8>| {
            packages.insert(uri.to_string(), zip);
            Ok(())
        },
        limits,
        PackageOptions::default(),
    )
    .unwrap()
    .with_manifest_copies(|i, _, xml| {
        let uri = format!("http://example.com/dump-part{i}-manifest.xml");
        manifests.insert(uri.clone(), xml.to_vec());
        Ok(uri.parse().unwrap())
    });
    for i in 0..n {
        let content = vec![b'a' + (i % 26) as u8; 1000 + i];
        let mut b = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/resources/res{i}").into(),
        );
        b.media_type = Some("text/plain".parse().unwrap());
        if kind == DocumentKind::ChangeDump {
            b.change = Some(Change::Updated);
            b.datetime = Some(
                format!("2013-01-01T{:02}:{:02}:00Z", i / 60, i % 60)
                    .parse()
                    .unwrap(),
            );
            if i % 5 == 4 {
                dump.add_deleted(
                    format!("http://example.com/gone{i}").parse().unwrap(),
                    b.datetime,
                )
                .unwrap();
            }
        }
        dump.add_sized(b, &content[..], Some(content.len() as u64))
            .unwrap();
    }
    let dump = dump.finish().unwrap();
    assert!(dump.findings.is_empty(), "{:?}", dump.findings);
    assert_eq!(dump.manifest_findings.len(), dump.document.entries.len());
    for ((uri, findings), entry) in dump.manifest_findings.iter().zip(&dump.document.entries) {
        assert_eq!(uri, &entry.loc);
        assert!(findings.is_empty(), "{uri}: {findings:?}");
    }
    (dump.document, packages, manifests)
}

fn check_packages(doc: &Document, packages: &Store, manifests: &Store) -> usize {
    let mut bitstreams = 0;
    for entry in &doc.entries {
        let zip = &packages[entry.loc.as_str()];
        let md = entry.md.as_ref().unwrap();
        assert_eq!(md.length, Some(zip.len() as u64));
        assert_eq!(md.media_type.as_ref().unwrap().as_str(), "application/zip");
        let mut package = Package::new(Cursor::new(zip.clone())).unwrap();
        assert!(package.findings().is_empty(), "{:?}", package.findings());
        package.verify().unwrap();
        bitstreams += package.bitstream_count();
        // The contents link points at a copy of exactly the package's manifest.
        let copy = &manifests[entry.links[0].href.as_str()];
        let (copied, _) = resourcesync_xml::read_document(copy).unwrap();
        assert_eq!(&copied, package.manifest());
        // A Change Dump's package covers the interval its manifest says.
        assert_eq!(md.from, package.manifest().head.md.from);
        assert_eq!(md.until, package.manifest().head.md.until);
    }
    bitstreams
}

#[test]
fn a_resource_dump_splits_by_entries_and_bytes() {
    let (doc, packages, manifests) =
        build(DocumentKind::ResourceDump, 25, DumpLimits::new(8_000, 10));
    assert_eq!(doc.head.kind(), DocumentKind::ResourceDump);
    // 1,000-1,024 bytes each: 7 fit under 8,000 bytes.
    assert_eq!(doc.entries.len(), 4);
    assert!(check_with(&doc, CheckOptions::default()).is_empty());
    assert_eq!(check_packages(&doc, &packages, &manifests), 25);
}

#[test]
fn a_change_dump_has_contiguous_intervals_in_order() {
    let (doc, packages, manifests) =
        build(DocumentKind::ChangeDump, 20, DumpLimits::new(u64::MAX, 6));
    assert!(
        check_with(&doc, CheckOptions::default()).is_empty(),
        "{:?}",
        check_with(&doc, CheckOptions::default())
    );
    assert_eq!(check_packages(&doc, &packages, &manifests), 20);
    let intervals: Vec<(String, Option<String>)> = doc
        .entries
        .iter()
        .map(|e| {
            let md = e.md.as_ref().unwrap();
            (
                md.from.as_ref().unwrap().to_string(),
                md.until.as_ref().map(ToString::to_string),
            )
        })
        .collect();
    for pair in intervals.windows(2) {
        assert_eq!(
            pair[0].1.as_deref(),
            Some(pair[1].0.as_str()),
            "{intervals:?}"
        );
    }
    assert_eq!(intervals[0].0, "2013-01-01T00:00:00Z");
    assert_eq!(intervals.last().unwrap().1, None, "the dump is open");
}

/// `DumpBuilder::in_store` over a store in memory that records what it is asked, in
/// order: the builder's own part of the guarantees, without a file system.
mod in_store {
    use super::*;
    use resourcesync_package::{DumpStore, Misuse, PackageError, StoreDumpBuilder};

    /// What the builder asked of the store, in order.
    #[derive(Debug, PartialEq)]
    enum Call {
        Create(String),
        Persist(String),
        Document(String),
    }

    /// A name the store refuses, as a store's own error.
    #[derive(Debug, thiserror::Error)]
    #[error("no file may be named {0}")]
    struct BadName(String);

    #[derive(Default)]
    struct Memory {
        files: Store,
        calls: Vec<Call>,
    }

    impl DumpStore for &mut Memory {
        type Package = Vec<u8>;

        fn uri(&self, name: &str) -> Result<Uri, PackageError> {
            if name.contains("..") {
                return Err(PackageError::store(BadName(name.to_owned())));
            }
            format!("http://example.com/{name}")
                .parse()
                .map_err(PackageError::store)
        }

        fn create_package(&mut self, uri: &Uri) -> Result<Vec<u8>, PackageError> {
            self.calls.push(Call::Create(uri.to_string()));
            if self.files.contains_key(uri.as_str()) {
                return Err(Misuse::TargetExists(uri.as_str().into()).into());
            }
            Ok(Vec::new())
        }

        fn persist_package(&mut self, uri: &Uri, zip: Vec<u8>) -> Result<(), PackageError> {
            self.calls.push(Call::Persist(uri.to_string()));
            self.files.insert(uri.to_string(), zip);
            Ok(())
        }

        fn store_document(&mut self, uri: &Uri, bytes: &[u8]) -> Result<(), PackageError> {
            self.calls.push(Call::Document(uri.to_string()));
            self.files.insert(uri.to_string(), bytes.to_vec());
            Ok(())
        }
    }

    fn change(i: usize) -> Bitstream {
        let mut b = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/changes/res{i}").into(),
        );
        b.change = Some(Change::Updated);
        b.datetime = Some(format!("2013-01-01T10:{i:02}:00Z").parse().unwrap());
        b
    }

    /// A Change Dump of packages of two entries named after `name`, into `memory`.
    fn start<'a>(
        memory: &'a mut Memory,
        name: &str,
    ) -> Result<StoreDumpBuilder<'a, Vec<u8>>, PackageError> {
        DumpBuilder::in_store(
            head(DocumentKind::ChangeDump),
            memory,
            name,
            DumpLimits::new(u64::MAX, 2),
            PackageOptions::default(),
        )
    }

    #[test]
    fn each_manifest_copy_is_stored_before_its_package_is_published_and_the_dump_document_last() {
        let mut memory = Memory::default();
        let mut dump = start(&mut memory, "changedump").unwrap();
        for i in 0..3 {
            dump.add(change(i), &b"content"[..]).unwrap();
        }
        let dump = dump.finish().unwrap();
        let uri = |name: &str| format!("http://example.com/{name}");
        assert_eq!(
            dump.written.as_ref().map(Uri::as_str),
            Some(uri("changedump.xml").as_str())
        );
        assert_eq!(
            memory.calls,
            [
                Call::Create(uri("changedump-00001.zip")),
                Call::Document(uri("changedump-00001-manifest.xml")),
                Call::Persist(uri("changedump-00001.zip")),
                Call::Create(uri("changedump-00002.zip")),
                Call::Document(uri("changedump-00002-manifest.xml")),
                Call::Persist(uri("changedump-00002.zip")),
                Call::Document(uri("changedump.xml")),
            ]
        );
        let (read, _) =
            resourcesync_xml::read_document(&memory.files[&uri("changedump.xml")]).unwrap();
        assert_eq!(read, dump.document);
        for entry in &dump.document.entries {
            let zip = Cursor::new(memory.files[entry.loc.as_str()].clone());
            Package::new(zip).unwrap().verify().unwrap();
        }
    }

    #[test]
    fn a_package_that_exists_is_refused_before_it_is_written_and_a_bad_name_at_once() {
        let mut memory = Memory::default();
        memory.files.insert(
            "http://example.com/changedump-00001.zip".into(),
            b"older".to_vec(),
        );
        let mut dump = start(&mut memory, "changedump").unwrap();
        assert!(matches!(
            dump.add(change(1), &b"content"[..]),
            Err(PackageError::Misuse(Misuse::TargetExists(_)))
        ));
        drop(dump);
        assert_eq!(
            memory.calls,
            [Call::Create(
                "http://example.com/changedump-00001.zip".into()
            )]
        );
        assert_eq!(
            memory.files["http://example.com/changedump-00001.zip"],
            b"older"
        );

        // The store's own error comes back whole.
        match start(&mut memory, "../changedump") {
            Err(PackageError::Store(error)) => {
                assert_eq!(
                    error.downcast_ref::<BadName>().map(|e| e.0.as_str()),
                    Some("../changedump.xml")
                )
            }
            Err(other) => panic!("{other:?}"),
            Ok(_) => panic!("a bad name was taken"),
        }
    }

    #[test]
    fn a_dump_refused_when_a_package_closes_publishes_nothing() {
        let mut memory = Memory::default();
        let mut dump = start(&mut memory, "changedump")
            .unwrap()
            .with_manifest_copies(|_, _, _| Ok("javascript:void(0)".parse().unwrap()));
        dump.add(change(1), &b"content"[..]).unwrap();
        assert!(matches!(
            dump.finish(),
            Err(PackageError::Misuse(Misuse::BreaksRule { .. }))
        ));
        assert_eq!(
            memory.calls,
            [Call::Create(
                "http://example.com/changedump-00001.zip".into()
            )]
        );
        assert!(memory.files.is_empty());
    }
}
