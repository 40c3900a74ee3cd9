//! Hostile packages, written with Python's zipfile or byte by byte (`packages.py`): each
//! fails with a clear, typed error at the stage it should (opening, or reading the
//! bitstreams in `check`, `verify` and `extract`), and extraction never leaves anything
//! behind.

use std::fs::File;

use resourcesync_package::{
    BadPackage as B, Collision, ContentProblem as C, HeaderProblem as H, LimitExceeded, NameError,
    Package, PackageError as E, PackageLimits, PathProblem as P, SizeProblem as S,
};

use crate::python_packages;

/// Where a case must fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// `Package::open` fails.
    Open,
    /// Opening works; `check` and `verify` fail with the error (not a finding), and so
    /// does `extract`.
    Read,
    /// Opening and `check` work (the error is a finding); `verify` and `extract` fail.
    Verify,
}

type Row = (
    &'static str,
    PackageLimits,
    Stage,
    fn(&E) -> bool,
    &'static str,
);

macro_rules! is {
    ($pattern:pat) => {
        |e: &E| matches!(e, $pattern)
    };
    ($pattern:pat if $guard:expr) => {
        |e: &E| matches!(e, $pattern if $guard)
    };
}

fn cases() -> Vec<Row> {
    use Stage::*;
    let d = PackageLimits::default();
    vec![
        // Structure.
        (
            "no-manifest.zip",
            d,
            Open,
            is!(E::Bad(B::NoManifest)),
            "no manifest.xml in the package",
        ),
        (
            "manifest-in-folder.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestElsewhere { found }) if found == "data/manifest.xml"),
            "no manifest.xml at the top level of the package (found \"data/manifest.xml\")",
        ),
        (
            "manifest-upper-case.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestElsewhere { .. })),
            "found \"MANIFEST.XML\"",
        ),
        (
            "two-manifests.zip",
            d,
            Open,
            is!(E::Bad(B::DuplicateName)),
            "two entries of the same name",
        ),
        (
            "truncated.zip",
            d,
            Open,
            is!(E::Zip(_)),
            "broken ZIP archive",
        ),
        (
            "not-a-zip.zip",
            d,
            Open,
            is!(E::Zip(_)),
            "broken ZIP archive",
        ),
        // Names that escape.
        (
            "name-dotdot.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::DotSegment(_)))),
            "unsafe entry name: name \"../evil\"",
        ),
        (
            "name-nested-dotdot.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::DotSegment(_)))),
            "\"a/../../evil\"",
        ),
        (
            "name-absolute.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::Absolute(_)))),
            "\"/etc/evil\"",
        ),
        (
            "name-backslash.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::Backslash(_)))),
            "backslash",
        ),
        (
            "name-drive.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::Drive(_)))),
            "drive letter",
        ),
        (
            "name-nul.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::Control(_)))),
            "control character",
        ),
        (
            "name-long-segment.zip",
            d,
            Open,
            is!(E::Bad(B::UnsafeName(NameError::SegmentTooLong {
                length: 256,
                ..
            }))),
            "has a segment of 256 bytes, more than 255",
        ),
        (
            "symlink.zip",
            d,
            Open,
            is!(E::Bad(B::Symlink { .. })),
            "entry \"resources/res1\" is a symbolic link",
        ),
        (
            "special-file.zip",
            d,
            Open,
            is!(E::Bad(B::SpecialFile { mode: 0o10644, .. })),
            "is a special file (mode 10644)",
        ),
        (
            "encrypted.zip",
            d,
            Open,
            is!(E::Bad(B::Encrypted { .. })),
            "entry \"resources/res1\" is encrypted",
        ),
        (
            "bzip2.zip",
            d,
            Open,
            is!(E::Bad(B::Compression { .. })),
            "uses compression method Bzip2: only store and deflate are read",
        ),
        // Names one file system path would hold twice.
        (
            "collide-case.zip",
            d,
            Open,
            is!(E::Bad(B::NameCollision {
                collision: Collision::Case,
                ..
            })),
            "entries \"resources/res1\" and \"resources/RES1\" differ only in case",
        ),
        (
            "collide-case-sharp-s.zip",
            d,
            Open,
            is!(E::Bad(B::NameCollision {
                collision: Collision::Case,
                ..
            })),
            "entries \"resources/straße\" and \"resources/STRASSE\" differ only in case",
        ),
        (
            "collide-nfd.zip",
            d,
            Open,
            is!(E::Bad(B::NameCollision {
                collision: Collision::Normalization,
                ..
            })),
            "differ only in Unicode normalization",
        ),
        (
            "collide-file-as-directory.zip",
            d,
            Open,
            is!(E::Bad(B::NameCollision {
                collision: Collision::FileAsDirectory,
                ..
            })),
            "entries \"resources/res1\" and \"resources/res1/x\" use one name as a file and as a directory",
        ),
        (
            "collide-directory-entry.zip",
            d,
            Open,
            is!(E::Bad(B::NameCollision {
                collision: Collision::FileAsDirectory,
                ..
            })),
            "entries \"resources/res1\" and \"resources/res1/\" use one name",
        ),
        // Manifest paths that name no bitstream, or one twice: always the second entry.
        (
            "missing-bitstream.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Missing,
                ..
            })),
            "manifest entry 2: path \"/resources/sub/res2\" is not in the package",
        ),
        (
            "listed-twice.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Twice { first: 1 },
                ..
            })),
            "manifest entry 2: path \"/resources/res1\" is listed by entry 1 too",
        ),
        (
            "path-twice.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Twice { first: 1 },
                ..
            })),
            "path \"/resources/res1\" is listed by entry 1 too",
        ),
        (
            "path-twice-without-slash.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Twice { first: 1 },
                ..
            })),
            "path \"resources/res1\" is listed by entry 1 too",
        ),
        (
            "path-network.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Network,
                ..
            })),
            "manifest entry 2: path \"//server/share/resources/res1\" is a network path",
        ),
        (
            "path-root.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Root,
                ..
            })),
            "manifest entry 2: path \"/\" is the package root",
        ),
        (
            "path-empty.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Root,
                ..
            })),
            "manifest entry 2: path \"\" is the package root",
        ),
        (
            "path-trailing-slash.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Directory,
                ..
            })),
            "path \"/resources/sub/res2/\" ends with a slash",
        ),
        (
            "path-trailing-slash-directory.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Directory,
                ..
            })),
            "path \"/resources/sub/\" ends with a slash",
        ),
        (
            "path-directory-entry.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::NamesDirectory,
                ..
            })),
            "path \"/resources/sub\" names a directory",
        ),
        (
            "path-implied-directory.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::NamesDirectory,
                ..
            })),
            "path \"/resources/sub\" names a directory",
        ),
        (
            "path-dot.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Unsafe(NameError::DotSegment(_)),
                ..
            })),
            "path \"/resources/./res1\" is unsafe",
        ),
        (
            "path-dotdot.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Unsafe(NameError::DotSegment(_)),
                ..
            })),
            "path \"/resources/sub/../res1\" is unsafe",
        ),
        (
            "path-empty-segment.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Unsafe(NameError::Empty),
                ..
            })),
            "path \"/resources//res1\" is unsafe",
        ),
        (
            "path-backslash.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Unsafe(NameError::Backslash(_)),
                ..
            })),
            "path \"\\\\server\\share\\res1\" is unsafe",
        ),
        (
            "path-drive.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Unsafe(NameError::Drive(_)),
                ..
            })),
            "path \"/C:/resources/res1\" is unsafe",
        ),
        (
            "path-manifest.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Manifest,
                ..
            })),
            "path \"/manifest.xml\" is the manifest itself",
        ),
        (
            "path-long-segment.zip",
            d,
            Open,
            is!(E::Bad(B::ManifestPath {
                entry: 2,
                problem: P::Unsafe(NameError::SegmentTooLong { .. }),
                ..
            })),
            "has a segment of 256 bytes",
        ),
        // Headers that lie about sizes: impossible ones refused on open...
        (
            "zip-stored-claims-gigabytes.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                declared: 3221225472,
                problem: S::Overlaps { .. },
                ..
            })),
            "entry \"resources/res1\" declares 3221225472 bytes: its data runs into the entry at offset",
        ),
        (
            "zip-deflated-claims-gigabytes.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                declared: 3221225472,
                problem: S::Deflate { .. },
                ..
            })),
            "deflate cannot expand",
        ),
        (
            "zip-stored-two-sizes.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                declared: 16,
                problem: S::Stored { compressed: 15 },
                ..
            })),
            "declares 16 bytes: it is stored, and declares 15 compressed bytes",
        ),
        (
            "zip-zip64-exabytes-deflated.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                declared: 1152921504606846976,
                problem: S::Deflate { .. },
                ..
            })),
            "declares 1152921504606846976 bytes",
        ),
        (
            "zip-zip64-exabytes-compressed.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                declared: 1152921504606846976,
                problem: S::Overlaps { .. },
                ..
            })),
            "declares 1152921504606846976 bytes",
        ),
        (
            "zip-zip64-exabytes-stored.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                declared: 1152921504606846976,
                ..
            })),
            "declares 1152921504606846976 bytes",
        ),
        (
            "zip-overlap.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                problem: S::Overlaps { next: 0 },
                ..
            })),
            "its data runs into the entry at offset 0",
        ),
        // ... possible ones found when the bytes are read, and never extracted.
        (
            "zip-deflated-shorter-than-declared.zip",
            d,
            Read,
            is!(E::Bad(B::Content {
                problem: C::Shorter {
                    declared: 25,
                    actual: 15
                },
                ..
            })),
            "entry \"resources/res1\": has 15 bytes, 25 declared",
        ),
        (
            "zip-deflated-longer-than-declared.zip",
            d,
            Read,
            is!(E::Bad(B::Content {
                problem: C::Longer { declared: 10 },
                ..
            })),
            "inflates to more than the 10 bytes declared",
        ),
        (
            "zip-zip64-fewer-deflated.zip",
            d,
            Read,
            is!(E::Bad(B::Content {
                problem: C::Longer { declared: 3 },
                ..
            })),
            "inflates to more than the 3 bytes declared",
        ),
        (
            "zip-zip64-fewer-stored.zip",
            d,
            Read,
            is!(E::Bad(B::Content {
                problem: C::Crc32 { .. },
                ..
            })),
            "CRC-32 is",
        ),
        // Local headers that disagree with the central directory.
        (
            "zip-local-name.zip",
            d,
            Read,
            is!(E::Bad(B::LocalHeader {
                problem: H::Name { .. },
                ..
            })),
            "entry \"resources/res1\": the local header names \"resources/evil\"",
        ),
        (
            "zip-local-name-manifest.zip",
            d,
            Open,
            is!(E::Bad(B::LocalHeader {
                problem: H::Name { .. },
                ..
            })),
            "entry \"manifest.xml\": the local header names \"manifest.xm_\"",
        ),
        (
            "zip-local-size.zip",
            d,
            Read,
            is!(E::Bad(B::LocalHeader {
                problem: H::Field {
                    local: 16,
                    central: 15,
                    ..
                },
                ..
            })),
            "the local header says compressed size 16, the central directory 15",
        ),
        (
            "zip-local-method.zip",
            d,
            Read,
            is!(E::Bad(B::LocalHeader {
                problem: H::Method {
                    local: 8,
                    central: 0
                },
                ..
            })),
            "compression method 8, the central directory 0",
        ),
        (
            "zip-local-missing.zip",
            d,
            Read,
            is!(E::Bad(B::LocalHeader {
                problem: H::Missing,
                ..
            })),
            "no local header where the central directory says",
        ),
        (
            "zip-local-shifted.zip",
            d,
            Open,
            is!(E::Bad(B::ImpossibleSize {
                problem: S::Overlaps { next: 59 },
                ..
            })),
            "its data runs into the entry at offset 59",
        ),
        // Bombs.
        (
            "bomb.zip",
            d,
            Read,
            is!(E::Limit(LimitExceeded::Ratio { max: 1000, .. })),
            "bitstream zeros inflates more than 1000 times its compressed size",
        ),
        (
            "bomb.zip",
            d.with_ratio(u64::MAX).with_bytes(8 << 20, 1 << 40),
            Read,
            is!(E::Limit(LimitExceeded::EntryBytes { .. })),
            "inflates to more than 8388608 bytes",
        ),
        (
            "bomb.zip",
            d.with_ratio(u64::MAX).with_bytes(1 << 40, 16 << 20),
            Read,
            is!(E::Limit(LimitExceeded::TotalBytes { .. })),
            "the package inflates to more than 16777216 bytes",
        ),
        (
            // Stopped once past its declared length: a fixity error, not a bomb read out.
            "bomb-declared-short.zip",
            d,
            Verify,
            is!(E::Fixity(_)),
            "bitstream zeros: length is more than 1048576, listed as 1048576",
        ),
        // Fixity: findings of check, errors of verify.
        (
            "fixity-md5.zip",
            d,
            Verify,
            is!(E::Fixity(_)),
            "bitstream resources/res1: md5 is 0d4bf0603e788776029bfb1b307a4530, listed as 00000000000000000000000000000000",
        ),
        (
            "fixity-sha256.zip",
            d,
            Verify,
            is!(E::Fixity(_)),
            "bitstream resources/res1: sha-256 is",
        ),
        (
            "fixity-length.zip",
            d,
            Verify,
            is!(E::Fixity(_)),
            "bitstream resources/res1: length is 15, listed as 16",
        ),
        (
            "fixity-short.zip",
            d,
            Verify,
            is!(E::Fixity(_)),
            "length is more than 14, listed as 14",
        ),
    ]
}

/// Extraction of `name` fails, and leaves nothing behind.
fn extract_leaves_nothing(dir: &std::path::Path, name: &str, limits: PackageLimits) {
    let out = tempfile::tempdir().unwrap();
    let target = out.path().join("extracted");
    let mut package =
        Package::open_with_limits(dir.join(name), limits).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(package.extract(&target).is_err(), "{name} extracted");
    assert_eq!(
        std::fs::read_dir(out.path()).unwrap().count(),
        0,
        "{name} left files"
    );
}

#[test]
fn hostile_packages_fail_where_and_how_they_should() {
    let dir = python_packages();
    for (name, limits, stage, expected, message) in cases() {
        let open = || {
            let file = File::open(dir.path().join(name)).unwrap();
            Package::with_limits(std::io::BufReader::new(file), limits)
        };
        let check = |error: &E, what: &str| {
            assert!(expected(error), "{name} ({what}): {error:?}");
            let text = crate::chain(error);
            assert!(text.contains(message), "{name} ({what}): {text}");
        };
        match stage {
            Stage::Open => check(
                &open().err().unwrap_or_else(|| panic!("{name} opened")),
                "open",
            ),
            Stage::Read => {
                let mut package = open().unwrap_or_else(|e| panic!("{name}: {e:?}"));
                check(&package.check().unwrap_err(), "check");
                check(&open().unwrap().verify().unwrap_err(), "verify");
                extract_leaves_nothing(dir.path(), name, limits);
            }
            Stage::Verify => {
                let findings = open().unwrap().check().unwrap();
                assert_eq!(findings.len(), 1, "{name}: {findings:?}");
                assert!(
                    findings[0].message.contains(message),
                    "{name}: {findings:?}"
                );
                check(&open().unwrap().verify().unwrap_err(), "verify");
                extract_leaves_nothing(dir.path(), name, limits);
            }
        }
    }
}

#[test]
fn an_unreadable_manifest_keeps_the_xml_error_and_its_position_as_the_source() {
    let dir = python_packages();
    let path = dir.path().join("manifest-not-xml.zip");
    let error = Package::open(&path).unwrap_err();
    // Opened from a path, the error names it; the error it holds is the reader's.
    let E::File {
        path: named,
        source,
    } = &error
    else {
        panic!("{error:?}")
    };
    assert_eq!(named, &path);
    assert!(
        crate::chain(&error).starts_with(&format!("package file {}: manifest.xml", path.display()))
    );
    let error = &**source;
    let E::Manifest(xml) = error else {
        panic!("{error:?}")
    };
    assert!(matches!(
        xml.kind(),
        resourcesync_xml::ErrorKind::UnknownEntity(name) if name == "bogus"
    ));
    assert_eq!(xml.position().line, 2);
    let source = std::error::Error::source(error).unwrap();
    assert!(source.is::<resourcesync_xml::Error>());
    assert_eq!(
        crate::chain(error).split(": ").take(3).collect::<Vec<_>>(),
        [
            "manifest.xml cannot be read",
            "line 2, column 11, entry 1",
            "unknown entity reference &bogus;"
        ]
    );
}

#[test]
fn valid_packages_from_python_open_verify_and_extract() {
    let dir = python_packages();
    for name in [
        "valid-deflated.zip",
        "valid-stored.zip",
        "resync-style.zip",
        "unlisted.zip",
    ] {
        let mut package =
            Package::open(dir.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(package.bitstream_count(), 2, "{name}");
        package.verify().unwrap_or_else(|e| panic!("{name}: {e}"));
        let rules: Vec<&str> = package.findings().iter().map(|f| f.rule.id()).collect();
        if name == "resync-style.zip" {
            // Read, with the rule it breaks reported.
            assert_eq!(rules, ["path-leading-slash", "path-leading-slash"]);
        } else {
            assert_eq!(rules, [] as [&str; 0], "{name}");
        }
        let unlisted: Vec<&str> = package.unlisted().iter().map(String::as_str).collect();
        assert_eq!(
            unlisted,
            if name == "unlisted.zip" {
                vec!["extra.txt"]
            } else {
                vec![]
            }
        );

        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("x");
        package.extract(&target).unwrap();
        assert_eq!(
            std::fs::read(target.join("resources/res1")).unwrap(),
            b"first resource\n"
        );
        assert!(target.join("resources/sub/res2").is_file());
        assert!(target.join("manifest.xml").is_file());
        // The extracted tree has the mode of any directory the program makes, not the
        // owner-only mode of a temporary directory.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let plain = out.path().join("plain");
            std::fs::create_dir(&plain).unwrap();
            let mode =
                |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&target), mode(&plain), "{name}");
            std::fs::remove_dir(&plain).unwrap();
        }
        // Only the target is left beside it, no temporary directory.
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
        // And extracting onto an existing target is refused.
        assert!(package.extract(&target).is_err());
    }
}

/// Honest data that compresses more than the ratio limit, 64 MiB of zeros (what a sparse
/// file holds), passes when the manifest declares its length, which the reader holds it
/// to (issue 22: our own Resource Dumps of such files were refused). `bomb.zip`, the same
/// zeros with no length declared, is still refused by the ratio (above), and a bitstream
/// that inflates past its declared length by `Longer`.
#[test]
fn zeros_whose_length_the_manifest_declares_are_no_bomb() {
    use resourcesync_model::DocumentKind;
    use resourcesync_package::{Bitstream, Package, PackageOptions, PackageWriter};
    use std::io::{Cursor, Read};
    let head = crate::manifest_head(DocumentKind::ResourceDumpManifest);
    let mut writer = PackageWriter::new(Vec::new(), head, PackageOptions::default()).unwrap();
    let zeros = Bitstream::new("http://example.com/zeros".parse().unwrap(), "/zeros".into());
    writer
        .add(zeros, std::io::repeat(0).take(64 << 20))
        .unwrap();
    let (zip, _) = writer.finish().unwrap();
    assert!(zip.len() < (64 << 20) / 1000, "{} bytes", zip.len());
    let mut package = Package::new(Cursor::new(zip)).unwrap();
    assert_eq!(package.entry(0).and_then(|e| e.length()), Some(64 << 20));
    package.verify().unwrap();
    let rules: Vec<&str> = package
        .check()
        .unwrap()
        .iter()
        .map(|f| f.rule.id())
        .collect();
    assert_eq!(rules, ["manifest-type-recommended"]);

    // Another implementation's (Python's zipfile), extracted too.
    let dir = python_packages();
    let mut package = Package::open(dir.path().join("zeros.zip")).unwrap();
    package.verify().unwrap();
    let out = tempfile::tempdir().unwrap();
    package.extract(out.path().join("x")).unwrap();
    let extracted = std::fs::metadata(out.path().join("x/zeros")).unwrap();
    assert_eq!(extracted.len(), 64 << 20);
}
