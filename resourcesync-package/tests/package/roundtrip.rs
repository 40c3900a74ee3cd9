//! Packages written and read back: Resource and Change Dumps, stored and deflated, and
//! random sets of bitstreams.

use std::io::{Cursor, Read};

use proptest::prelude::*;
use resourcesync_model::{Change, DocumentKind, Relation};
use resourcesync_package::{
    Bitstream, Collision, Compression, Misuse, Package, PackageError, PackageOptions, PackageWriter,
};

use crate::manifest_head;

fn bitstream(i: usize, media: &str) -> Bitstream {
    let mut b = Bitstream::new(
        format!("http://example.com/res{i}").parse().unwrap(),
        format!("/resources/{i}/res").into(),
    );
    b.media_type = Some(media.parse().unwrap());
    b
}

#[test]
fn a_resource_dump_package_round_trips() {
    let contents: Vec<Vec<u8>> = vec![b"<html>one</html>".to_vec(), vec![7u8; 100_000], Vec::new()];
    let write = || {
        let mut writer = PackageWriter::new(
            Vec::new(),
            manifest_head(DocumentKind::ResourceDumpManifest),
            PackageOptions::default(),
        )
        .unwrap();
        let media = ["text/html", "image/png", "text/plain"];
        for (i, (content, media)) in contents.iter().zip(media).enumerate() {
            writer.add(bitstream(i, media), &content[..]).unwrap();
        }
        writer.finish().unwrap()
    };
    let (zip, info) = write();
    assert_eq!(info.digests.length, zip.len() as u64);
    // The same bitstreams give the same bytes.
    assert_eq!(write().0, zip);

    let mut package = Package::new(Cursor::new(&zip)).unwrap();
    assert!(package.findings().is_empty(), "{:?}", package.findings());
    assert_eq!(package.manifest(), &info.manifest);
    for (i, content) in contents.iter().enumerate() {
        let mut read = Vec::new();
        package
            .bitstream(i)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(&read, content);
        let md = package.entry(i).unwrap().md.clone().unwrap();
        assert_eq!(md.length, Some(content.len() as u64));
    }
    // The PNG was stored, the HTML deflated.
    let mut zip_archive = zip::ZipArchive::new(Cursor::new(&zip)).unwrap();
    assert_eq!(
        zip_archive
            .by_name("resources/1/res")
            .unwrap()
            .compression(),
        zip::CompressionMethod::Stored
    );
    assert_eq!(
        zip_archive
            .by_name("resources/0/res")
            .unwrap()
            .compression(),
        zip::CompressionMethod::Deflated
    );
}

#[test]
fn a_change_dump_package_round_trips_with_deletions_and_patches() {
    let mut writer = PackageWriter::new(
        Vec::new(),
        manifest_head(DocumentKind::ChangeDumpManifest),
        PackageOptions::default().compression(Compression::Store),
    )
    .unwrap();
    let mut created = bitstream(7, "text/html");
    created.change = Some(Change::Created);
    created.datetime = Some("2013-01-02T12:00:00Z".parse().unwrap());
    writer.add(created, &b"v1"[..]).unwrap();
    writer
        .add_deleted(
            "http://example.com/res5".parse().unwrap(),
            Some("2013-01-02T19:00:00Z".parse().unwrap()),
        )
        .unwrap();
    // A second version of the same resource at another path, with a patch link whose
    // bitstream is in the package too (section 14.4).
    let mut updated = Bitstream::new(
        "http://example.com/res7".parse().unwrap(),
        "/changes/res7-v2".into(),
    );
    updated.change = Some(Change::Updated);
    updated.datetime = Some("2013-01-02T20:00:00Z".parse().unwrap());
    let mut entry = resourcesync_model::Entry::new("http://example.com/res7".parse().unwrap());
    let mut patch = resourcesync_model::Link::new(
        Relation::Patch,
        "http://example.com/res7.patch".parse().unwrap(),
    );
    patch.media_type = Some("application/json-patch+json".parse().unwrap());
    patch.path = Some("/changes/res7.patch".into());
    entry.links.push(patch);
    updated.entry = Some(entry);
    updated.media_type = Some("text/html".parse().unwrap());
    writer.add(updated, &b"v2"[..]).unwrap();
    let mut patch_bits = Bitstream::new(
        "http://example.com/res7.patch".parse().unwrap(),
        "/changes/res7.patch".into(),
    );
    patch_bits.change = Some(Change::Updated);
    patch_bits.datetime = Some("2013-01-02T20:00:00Z".parse().unwrap());
    patch_bits.media_type = Some("application/json-patch+json".parse().unwrap());
    writer.add(patch_bits, &b"[]"[..]).unwrap();
    // Three names for three counts: the manifest's entries (deletions too), the
    // bitstreams written (files in the ZIP but the manifest) and, read back, the same.
    assert_eq!(writer.manifest_entries(), 4);
    assert_eq!(writer.bitstream_count(), 3);
    let (zip, _) = writer.finish().unwrap();

    let mut package = Package::new(Cursor::new(zip)).unwrap();
    assert_eq!(package.manifest().entries.len(), 4);
    assert_eq!(
        package.bitstream_count(),
        3,
        "the deletion has no bitstream"
    );
    assert!(package.findings().is_empty(), "{:?}", package.findings());
    package.verify().unwrap();
}

#[test]
fn the_writer_refuses_what_the_standard_does_not_allow() {
    let head = manifest_head(DocumentKind::ResourceDumpManifest);
    let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default()).unwrap();
    let refuse = |w: &mut PackageWriter<Vec<u8>>, path: &str| match w.add(
        Bitstream::new("http://example.com/r".parse().unwrap(), path.into()),
        &b""[..],
    ) {
        Err(PackageError::Misuse(misuse)) => misuse,
        other => panic!("{path}: {other:?}"),
    };
    assert!(matches!(
        refuse(&mut writer, "no-slash"),
        Misuse::PathWithoutSlash { .. }
    ));
    assert!(matches!(
        refuse(&mut writer, "/../evil"),
        Misuse::UnsafePath { .. }
    ));
    assert!(matches!(
        refuse(&mut writer, "/dir/"),
        Misuse::UnsafePath { .. }
    ));
    let long = format!("/{}", "x".repeat(256));
    assert!(matches!(
        refuse(&mut writer, &long),
        Misuse::UnsafePath { .. }
    ));
    assert!(matches!(
        refuse(&mut writer, "/manifest.xml"),
        Misuse::ManifestPath { .. }
    ));
    writer.add(bitstream(1, "text/plain"), &b"x"[..]).unwrap();
    // Every path the reader would refuse as colliding with /resources/1/res.
    for (path, expected) in [
        ("/resources/1/res", None),
        ("/resources/1/RES", Some(Collision::Case)),
        ("/resources/1/res/x", Some(Collision::FileAsDirectory)),
        ("/resources", Some(Collision::FileAsDirectory)),
        ("/RESOURCES/1", Some(Collision::FileAsDirectory)),
    ] {
        match (refuse(&mut writer, path), expected) {
            (Misuse::PathUsedTwice { .. }, None) => {}
            (Misuse::PathCollision { collision, .. }, Some(expected)) => {
                assert_eq!(collision, expected, "{path}")
            }
            (other, _) => panic!("{path}: {other:?}"),
        }
    }
    writer
        .add(
            Bitstream::new("http://example.com/c".parse().unwrap(), "/caf\u{e9}".into()),
            &b""[..],
        )
        .unwrap();
    assert!(matches!(
        refuse(&mut writer, "/cafe\u{301}"),
        Misuse::PathCollision {
            collision: Collision::Normalization,
            ..
        }
    ));
    // A deletion in a Resource Dump Manifest breaks resourcedump-manifest-deleted.
    match writer.add_deleted("http://example.com/r".parse().unwrap(), None) {
        Err(PackageError::Misuse(Misuse::BreaksRule {
            document: DocumentKind::ResourceDumpManifest,
            loc: Some(loc),
            errors,
        })) => {
            assert_eq!(loc.as_str(), "http://example.com/r");
            assert_eq!(
                errors[0].rule,
                resourcesync_model::Rule::ResourceDumpManifestDeleted
            );
            assert_eq!(errors[0].entry, Some(3), "numbered as the next entry");
        }
        other => panic!("{other:?}"),
    }
    // What the writer accepted, the reader reads.
    let (zip, _) = writer.finish().unwrap();
    Package::new(Cursor::new(zip)).unwrap().verify().unwrap();
    let list = resourcesync_model::DocumentHead::of_kind(DocumentKind::ResourceList);
    assert!(matches!(
        PackageWriter::new(Vec::new(), list, PackageOptions::default()),
        Err(PackageError::Misuse(Misuse::ManifestKind { .. }))
    ));
}

#[test]
fn a_file_is_written_beside_its_target_and_moved_into_place() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("dump-part1.zip");
    // A writer with one bitstream added, not finished.
    let started = || {
        let mut writer = PackageWriter::create(
            &target,
            manifest_head(DocumentKind::ResourceDumpManifest),
            PackageOptions::default(),
        )
        .unwrap();
        writer
            .add(bitstream(1, "text/plain"), &b"hello"[..])
            .unwrap();
        writer
    };
    let writer = started();
    // Dropped without finishing: nothing is left.
    drop(writer);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // Finished: the file is at the path given to `create`, and nothing else.
    let writer = started();
    let (path, info) = writer.finish_file().unwrap();
    assert_eq!(path, target, "the path given to create");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), info.digests.length);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    Package::open(&path).unwrap().verify().unwrap();

    // Readable as any file the program creates, not owner-only as tempfile makes them.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let plain = dir.path().join("plain");
        std::fs::File::create(&plain).unwrap();
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), mode(&plain));
        std::fs::remove_file(&plain).unwrap();
    }

    // A second package for the same target is refused at once, before it is written.
    let before = std::fs::read(&target).unwrap();
    match PackageWriter::create(
        &target,
        manifest_head(DocumentKind::ResourceDumpManifest),
        PackageOptions::default(),
    ) {
        Err(PackageError::Misuse(Misuse::TargetExists(existing))) => {
            assert_eq!(existing, target)
        }
        other => panic!("{other:?}"),
    }
    // A target that appears while the package is written is not overwritten either: the
    // package is refused when it finishes, and its temporary file is gone.
    std::fs::remove_file(&target).unwrap();
    let mut second = started();
    std::fs::write(&target, &before).unwrap();
    second
        .add(bitstream(2, "text/plain"), &b"other"[..])
        .unwrap();
    match second.finish_file() {
        Err(PackageError::Misuse(Misuse::TargetExists(existing))) => {
            assert_eq!(existing, target)
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(std::fs::read(&target).unwrap(), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_file_writer_refused_or_failing_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("part1.zip");
    // A head that breaks a rule is refused before any file is made.
    let mut head = manifest_head(DocumentKind::ResourceDumpManifest);
    head.links.clear();
    let error = PackageWriter::create(&target, head, PackageOptions::default()).unwrap_err();
    assert!(
        matches!(
            &error,
            PackageError::Misuse(Misuse::BreaksRule { loc: None, .. })
        ),
        "{error:?}"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // An entry refused leaves the file writer usable, and a later IO error (content that
    // fails to read) leaves no temporary file once the writer is dropped.
    let mut writer = PackageWriter::create(
        &target,
        manifest_head(DocumentKind::ResourceDumpManifest),
        PackageOptions::default(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "the temporary file"
    );
    assert!(
        writer
            .add_deleted("http://example.com/gone".parse().unwrap(), None)
            .is_err()
    );
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk on fire"))
        }
    }
    assert!(matches!(
        writer.add(bitstream(1, "text/plain"), Failing),
        Err(PackageError::Io(_))
    ));
    drop(writer);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    // A directory that does not exist: the error names the target.
    let nowhere = dir.path().join("no/such/dir/part1.zip");
    match PackageWriter::create(
        &nowhere,
        manifest_head(DocumentKind::ResourceDumpManifest),
        PackageOptions::default(),
    ) {
        Err(PackageError::File { path, .. }) => assert_eq!(path, nowhere),
        other => panic!("{other:?}"),
    }
    // Opening a package that is not there, or not a package: the error names the path.
    let missing = dir.path().join("missing.zip");
    match Package::open(&missing) {
        Err(e @ PackageError::File { .. }) => {
            assert!(e.to_string().contains("missing.zip"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    let not_zip = dir.path().join("not.zip");
    std::fs::write(&not_zip, b"plain text").unwrap();
    match Package::open(&not_zip) {
        Err(PackageError::File { path, .. }) => assert_eq!(path, not_zip),
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_sets_of_bitstreams_round_trip(
        contents in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..5000), 0..12),
        store in any::<bool>(),
    ) {
        let options = PackageOptions::default().compression(if store { Compression::Store } else { Compression::Deflate });
        let mut writer = PackageWriter::new(Vec::new(), manifest_head(DocumentKind::ResourceDumpManifest), options).unwrap();
        for (i, c) in contents.iter().enumerate() {
            writer.add(bitstream(i, "application/octet-stream"), &c[..]).unwrap();
        }
        let (zip, info) = writer.finish().unwrap();
        prop_assert_eq!(info.digests.length, zip.len() as u64);
        let mut package = Package::new(Cursor::new(zip)).unwrap();
        prop_assert_eq!(package.bitstream_count(), contents.len());
        for (i, c) in contents.iter().enumerate() {
            let mut read = Vec::new();
            package.bitstream(i).unwrap().read_to_end(&mut read).unwrap();
            prop_assert_eq!(&read, c);
        }
    }
}

#[test]
fn large_bitstreams_round_trip_stored_and_deflated() {
    // 24 MiB that deflate shrinks and 8 MiB it cannot, in one package each way.
    let text: Vec<u8> = (0..24u32 << 20)
        .map(|i| b"resourcesync "[(i % 13) as usize])
        .collect();
    let mut x = 1u64;
    let noise: Vec<u8> = (0..8 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    for compression in [Compression::Store, Compression::Deflate] {
        let options = PackageOptions::default().compression(compression);
        let mut writer = PackageWriter::new(
            Vec::new(),
            manifest_head(DocumentKind::ResourceDumpManifest),
            options,
        )
        .unwrap();
        writer.add(bitstream(0, "text/plain"), &text[..]).unwrap();
        writer
            .add(bitstream(1, "application/octet-stream"), &noise[..])
            .unwrap();
        let (zip, info) = writer.finish().unwrap();
        assert_eq!(info.digests.length, zip.len() as u64);
        if compression == Compression::Deflate {
            assert!(zip.len() < noise.len() + (2 << 20), "the text was deflated");
        }
        let mut package = Package::new(Cursor::new(zip)).unwrap();
        package.verify().unwrap();
        let mut read = Vec::new();
        package
            .bitstream(0)
            .unwrap()
            .read_to_end(&mut read)
            .unwrap();
        assert!(read == text);
    }
}

#[test]
fn with_and_without_the_hashing_thread_the_bytes_are_the_same() {
    // Stored and deflated, small and past the 1 MiB chunks, so that both threads' shares of
    // the stored bitstreams' sha-256 are exercised.
    let contents: Vec<Vec<u8>> = (0..40)
        .map(|i: usize| {
            let len = if i % 7 == 0 { (3 << 20) + i } else { i * 997 };
            (0..len).map(|k| (k * 31 + i) as u8).collect()
        })
        .collect();
    let write = |thread: bool| {
        let options = PackageOptions::default().hashing_thread(thread);
        let mut writer = PackageWriter::new(
            Vec::new(),
            manifest_head(DocumentKind::ResourceDumpManifest),
            options,
        )
        .unwrap();
        assert!(format!("{writer:?}").contains(&format!("hashing_thread: {thread}")));
        for (i, content) in contents.iter().enumerate() {
            let mut b = bitstream(
                i,
                if i % 2 == 0 {
                    "image/png"
                } else {
                    "text/plain"
                },
            );
            b.compression = (i % 3 == 0).then_some(Compression::Deflate);
            writer.add(b, &content[..]).unwrap();
        }
        writer.finish().unwrap()
    };
    let (threaded, threaded_info) = write(true);
    let (single, single_info) = write(false);
    let first = threaded.iter().zip(&single).position(|(a, b)| a != b);
    assert_eq!(threaded_info.manifest, single_info.manifest);
    assert!(
        first.is_none() && threaded.len() == single.len(),
        "the packages differ from byte {first:?}: {:?}",
        String::from_utf8_lossy(&threaded[first.unwrap_or(0).saturating_sub(40)..][..200])
    );
    assert_eq!(threaded_info, single_info);
    let mut package = Package::new(Cursor::new(single)).unwrap();
    assert_eq!(package.check().unwrap(), []);
}
