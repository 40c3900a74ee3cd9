//! Dumps written into a `Directory` through `DumpStore`: packages, manifest copies and the
//! dump document under the base, no package written over a file, nothing left behind.

use resourcesync_model::{Change, DocumentHead, DocumentKind, Link, Relation};
use resourcesync_package::{
    Bitstream, DumpBuilder, DumpLimits, Misuse, Package, PackageError, PackageOptions,
};
use resourcesync_source::{Directory, DirectoryError};

use crate::files;

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
    let (read, findings) = resourcesync_xml::read_document(&std::fs::read(&path).unwrap()).unwrap();
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
    let directory = Directory::new(root.path(), "http://example.com/".parse().unwrap()).unwrap();
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
    match error {
        PackageError::Store(store) => assert!(
            matches!(
                store.downcast_ref::<DirectoryError>(),
                Some(DirectoryError::DotSegment { .. })
            ),
            "{store:?}"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_dump_refused_when_a_package_closes_leaves_no_file() {
    let root = tempfile::tempdir().unwrap();
    let directory = Directory::new(root.path(), "http://example.com/".parse().unwrap()).unwrap();
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
