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

mod in_directory {
    use super::*;
    use resourcesync_package::{Misuse, PackageError};
    use resourcesync_xml::Directory;

    fn files(root: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    fn change(i: usize) -> Bitstream {
        let mut b = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/changes/res{i}").into(),
        );
        b.media_type = Some("text/plain".parse().unwrap());
        b.change = Some(Change::Updated);
        b.datetime = Some(format!("2013-01-01T10:{i:02}:00Z").parse().unwrap());
        b
    }

    #[test]
    fn packages_manifest_copies_and_the_dump_document_land_under_the_base() {
        let root = tempfile::tempdir().unwrap();
        let directory = Directory::new(
            root.path().join("dataset1"),
            "http://example.com/dataset1/".parse().unwrap(),
        )
        .unwrap();
        let mut dump = DumpBuilder::in_store(
            head(DocumentKind::ChangeDump),
            &directory,
            "changedump",
            DumpLimits::new(u64::MAX, 2),
            PackageOptions::default(),
        )
        .unwrap();
        for i in 0..5 {
            dump.add(change(i), &b"content"[..]).unwrap();
        }
        let dump = dump.finish().unwrap();
        let uri = dump.written.clone().unwrap();
        let path = directory.path(&uri).unwrap();
        assert_eq!(uri.as_str(), "http://example.com/dataset1/changedump.xml");
        assert_eq!(
            files(&root.path().join("dataset1")),
            [
                "changedump-00001-manifest.xml",
                "changedump-00001.zip",
                "changedump-00002-manifest.xml",
                "changedump-00002.zip",
                "changedump-00003-manifest.xml",
                "changedump-00003.zip",
                "changedump.xml",
            ],
            "no temporary file is left"
        );
        // The document on disk is the one returned, and every URI in it names its file.
        let (read, findings) =
            resourcesync_xml::read_document(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(read, dump.document);
        assert!(findings.is_empty(), "{findings:?}");
        for entry in &dump.document.entries {
            let mut package = Package::open(directory.path(&entry.loc).unwrap()).unwrap();
            assert_eq!(package.check().unwrap(), []);
            let copy = std::fs::read(directory.path(&entry.links[0].href).unwrap()).unwrap();
            assert_eq!(
                &resourcesync_xml::read_document(&copy).unwrap().0,
                package.manifest()
            );
        }
    }

    #[test]
    fn a_package_file_that_exists_is_refused_and_kept_and_a_dropped_dump_leaves_nothing() {
        let root = tempfile::tempdir().unwrap();
        let directory =
            Directory::new(root.path(), "http://example.com/".parse().unwrap()).unwrap();
        let start = || {
            DumpBuilder::in_store(
                head(DocumentKind::ChangeDump),
                &directory,
                "changedump",
                DumpLimits::default(),
                PackageOptions::default(),
            )
            .unwrap()
        };
        // Dropped before finishing: not a file, not a temporary one.
        let mut dump = start();
        dump.add(change(1), &b"content"[..]).unwrap();
        drop(dump);
        assert_eq!(files(root.path()), [] as [&str; 0]);

        std::fs::write(root.path().join("changedump-00001.zip"), b"older").unwrap();
        let mut dump = start();
        match dump.add(change(1), &b"content"[..]) {
            Err(PackageError::Misuse(Misuse::TargetExists(path))) => {
                assert_eq!(path, root.path().join("changedump-00001.zip"))
            }
            other => panic!("{other:?}"),
        }
        drop(dump);
        assert_eq!(files(root.path()), ["changedump-00001.zip"]);
        assert_eq!(
            std::fs::read(root.path().join("changedump-00001.zip")).unwrap(),
            b"older"
        );

        // A name that makes no file under the base is refused at once.
        let error = DumpBuilder::in_store(
            head(DocumentKind::ChangeDump),
            &directory,
            "../changedump",
            DumpLimits::default(),
            PackageOptions::default(),
        )
        .unwrap_err();
        assert!(matches!(error, PackageError::Directory(_)), "{error:?}");
    }

    #[test]
    fn a_dump_refused_when_a_package_closes_leaves_no_file() {
        let root = tempfile::tempdir().unwrap();
        let directory =
            Directory::new(root.path(), "http://example.com/".parse().unwrap()).unwrap();
        let mut dump = DumpBuilder::in_store(
            head(DocumentKind::ChangeDump),
            &directory,
            "changedump",
            DumpLimits::default(),
            PackageOptions::default(),
        )
        .unwrap()
        .with_manifest_copies(|_, _, _| Ok("javascript:void(0)".parse().unwrap()));
        dump.add(change(1), &b"content"[..]).unwrap();
        assert!(matches!(
            dump.finish(),
            Err(PackageError::Misuse(Misuse::BreaksRule { .. }))
        ));
        assert_eq!(files(root.path()), [] as [&str; 0]);
    }
}
