//! Hostile packages, written with Python's zipfile: each fails with a clear error at the
//! stage it should (opening, verifying or extracting), and extraction never leaves
//! anything behind.

use std::fs::File;

use resourcesync_package::{Package, PackageError, PackageLimits};

use crate::python_packages;

/// Where a case must fail, and a piece of the message.
enum Expect {
    Open(&'static str),
    Verify(&'static str),
}

fn cases() -> Vec<(&'static str, PackageLimits, Expect)> {
    use Expect::*;
    let d = PackageLimits::default();
    vec![
        ("no-manifest.zip", d, Open("no manifest.xml in the package")),
        (
            "manifest-in-folder.zip",
            d,
            Open("no manifest.xml at the top level of the package (found \"data/manifest.xml\")"),
        ),
        ("manifest-upper-case.zip", d, Open("found \"MANIFEST.XML\"")),
        ("two-manifests.zip", d, Open("two entries of the same name")),
        (
            "missing-bitstream.zip",
            d,
            Open(
                "the manifest lists /resources/sub/res2 (entry 2), which the package does not have",
            ),
        ),
        (
            "listed-twice.zip",
            d,
            Open("the manifest lists /resources/res1 twice"),
        ),
        ("truncated.zip", d, Open("ZIP error")),
        ("not-a-zip.zip", d, Open("ZIP error")),
        ("name-dotdot.zip", d, Open("unsafe name \"../evil\"")),
        (
            "name-nested-dotdot.zip",
            d,
            Open("unsafe name \"a/../../evil\""),
        ),
        ("name-absolute.zip", d, Open("unsafe name \"/etc/evil\"")),
        ("name-backslash.zip", d, Open("backslash")),
        ("name-drive.zip", d, Open("drive letter")),
        ("name-nul.zip", d, Open("control character")),
        ("symlink.zip", d, Open("symbolic link")),
        ("special-file.zip", d, Open("special file")),
        ("encrypted.zip", d, Open("is encrypted")),
        ("bzip2.zip", d, Open("only store and deflate are read")),
        (
            "bomb.zip",
            d,
            Verify("inflates more than 1000 times its compressed size"),
        ),
        (
            "bomb.zip",
            d.with_ratio(u64::MAX).with_bytes(8 << 20, 1 << 40),
            Verify("inflates to more than 8388608 bytes"),
        ),
        (
            "bomb.zip",
            d.with_ratio(u64::MAX).with_bytes(1 << 40, 16 << 20),
            Verify("the package inflates to more than 16777216 bytes"),
        ),
        (
            "fixity-md5.zip",
            d,
            Verify(
                "bitstream resources/res1: md5 is 0d4bf0603e788776029bfb1b307a4530, the manifest says 00000000000000000000000000000000",
            ),
        ),
        (
            "fixity-sha256.zip",
            d,
            Verify("bitstream resources/res1: sha-256 is"),
        ),
        (
            "fixity-length.zip",
            d,
            Verify("bitstream resources/res1: length is 15, the manifest says 16"),
        ),
        (
            "fixity-short.zip",
            d,
            Verify("length is more than 14, the manifest says 14"),
        ),
    ]
}

#[test]
fn hostile_packages_fail_where_and_how_they_should() {
    let dir = python_packages();
    for (name, limits, expect) in cases() {
        let file = File::open(dir.path().join(name)).unwrap();
        let opened = Package::open_with_limits(file, limits);
        match expect {
            Expect::Open(message) => {
                let error = opened.err().unwrap_or_else(|| panic!("{name} opened"));
                assert!(error.to_string().contains(message), "{name}: {error}");
            }
            Expect::Verify(message) => {
                let mut package = opened.unwrap_or_else(|e| panic!("{name}: {e}"));
                let error = package.verify().unwrap_err();
                assert!(error.to_string().contains(message), "{name}: {error}");
                if name.starts_with("fixity") {
                    assert!(
                        matches!(error, PackageError::Fixity(_)),
                        "{name}: {error:?}"
                    );
                }
                // Extraction of the same package fails, and leaves nothing behind.
                let out = tempfile::tempdir().unwrap();
                let target = out.path().join("extracted");
                let mut package =
                    Package::open_with_limits(File::open(dir.path().join(name)).unwrap(), limits)
                        .unwrap();
                assert!(package.extract(&target).is_err(), "{name} extracted");
                assert_eq!(
                    std::fs::read_dir(out.path()).unwrap().count(),
                    0,
                    "{name} left files"
                );
            }
        }
    }
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
        let mut package = Package::open(File::open(dir.path().join(name)).unwrap())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(package.len(), 2, "{name}");
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
        // Only the target is left beside it, no temporary directory.
        assert_eq!(std::fs::read_dir(out.path()).unwrap().count(), 1);
        // And extracting onto an existing target is refused.
        assert!(package.extract(&target).is_err());
    }
}
