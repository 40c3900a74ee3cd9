//! Every example of the specifications is read, and exactly the rules each breaks are
//! reported (see `spec/README.md` for why some examples break rules).

use resourcesync_model::DocumentKind as K;
use resourcesync_xml::{Limits, write_document};

use crate::{read_everywhere, rules_of};

type Expected = (
    &'static str,
    K,
    usize,
    &'static [(&'static str, Option<u64>)],
);

const UP: (&str, Option<u64>) = ("up-link-mandatory", None);

/// File, kind, entries, and the findings (rule id, entry) in document order.
const EXAMPLES: &[Expected] = &[
    (
        "archives-ex2.1-capabilitylist.xml",
        K::CapabilityList,
        8,
        &[],
    ),
    (
        "archives-ex2.2-changelist-with-archives-link.xml",
        K::ChangeList,
        2,
        &[],
    ),
    (
        "archives-ex3.1-resourcelist-archive.xml",
        K::ResourceListArchive,
        3,
        &[],
    ),
    (
        "archives-ex3.2-resourcelist-archive-index.xml",
        K::ResourceListArchiveIndex,
        2,
        &[],
    ),
    (
        "archives-ex4.1-resourcedump-archive.xml",
        K::ResourceDumpArchive,
        2,
        &[],
    ),
    (
        "archives-ex5.1-changelist-archive.xml",
        K::ChangeListArchive,
        3,
        &[],
    ),
    (
        "archives-ex6.1-changedump-archive.xml",
        K::ChangeDumpArchive,
        2,
        &[],
    ),
    // Change Notification 1.0.1: the notification (Example 1) and the Capability List that
    // advertises its channel (Example 7).
    (
        "change-notification-ex1-notification.xml",
        K::ChangeNotification,
        2,
        &[],
    ),
    (
        "change-notification-ex7-capabilitylist.xml",
        K::CapabilityList,
        5,
        &[],
    ),
    // Examples 1-5 leave out the mandatory up link (spec/README.md).
    ("ex01-resourcelist.xml", K::ResourceList, 2, &[UP]),
    (
        "ex02-resourcelist-with-metadata.xml",
        K::ResourceList,
        2,
        &[UP],
    ),
    ("ex03-changelist.xml", K::ChangeList, 3, &[UP]),
    (
        "ex04-resourcedump.xml",
        K::ResourceDump,
        1,
        &[UP, ("dump-package-metadata", Some(1))],
    ),
    (
        "ex05-resourcedump-manifest.xml",
        K::ResourceDumpManifest,
        2,
        &[
            UP,
            ("manifest-type-recommended", Some(1)),
            ("manifest-type-recommended", Some(2)),
        ],
    ),
    ("ex06-capabilitylist.xml", K::CapabilityList, 3, &[]),
    (
        "ex07-source-description.xml",
        K::SourceDescription,
        1,
        &[
            ("describedby-link-recommended", None),
            ("entry-describedby-recommended", Some(1)),
        ],
    ),
    // Example 8 was a picture; like examples 1-5 it has no up link.
    (
        "ex08-resourcelist-index.xml",
        K::ResourceListIndex,
        2,
        &[UP],
    ),
    ("ex12-source-description.xml", K::SourceDescription, 3, &[]),
    ("ex13-capabilitylist.xml", K::CapabilityList, 4, &[]),
    ("ex14-resourcelist.xml", K::ResourceList, 2, &[]),
    ("ex15-resourcelist-index.xml", K::ResourceListIndex, 3, &[]),
    (
        "ex16-resourcelist-with-index-link.xml",
        K::ResourceList,
        2,
        &[],
    ),
    ("ex17-resourcedump.xml", K::ResourceDump, 3, &[]),
    (
        "ex18-resourcedump-manifest.xml",
        K::ResourceDumpManifest,
        2,
        &[],
    ),
    ("ex19-changelist-open.xml", K::ChangeList, 4, &[]),
    ("ex20-changelist-index.xml", K::ChangeListIndex, 3, &[]),
    ("ex21-changelist-closed.xml", K::ChangeList, 4, &[]),
    ("ex22-changedump.xml", K::ChangeDump, 3, &[]),
    (
        "ex23-changedump-manifest.xml",
        K::ChangeDumpManifest,
        4,
        &[],
    ),
    ("ex24-mirrored-content.xml", K::ChangeList, 1, &[]),
    ("ex25-alternate-representations.xml", K::ChangeList, 1, &[]),
    ("ex26-canonical.xml", K::ChangeList, 1, &[]),
    // Example 27's sha-256 values are not hex digests (spec/README.md): they look like
    // base64url, and the second entry's decodes to 32 bytes, so it is read as base64.
    (
        "ex27-patch-links.xml",
        K::ChangeList,
        2,
        &[
            ("hash-syntax", Some(1)),
            ("hash-syntax", Some(1)),
            ("hash-syntax", Some(2)),
            ("hash-base64", Some(2)),
        ],
    ),
    ("ex28-metadata-about-resources.xml", K::ChangeList, 2, &[]),
    ("ex29-prior-versions.xml", K::ChangeList, 1, &[]),
    ("ex30-collection-membership.xml", K::ChangeList, 1, &[]),
    ("ex31-original-source.xml", K::ChangeList, 1, &[]),
    ("ex32-primary-aggregator.xml", K::ChangeList, 1, &[]),
    ("ex33-second-aggregator.xml", K::ChangeList, 1, &[]),
    // Framework Notification 1.0.1: two notifications (Examples 1 and 2; the second without
    // the optional up link) and the Capability List with its channel (Example 8).
    (
        "framework-notification-ex1-notification.xml",
        K::FrameworkNotification,
        1,
        &[],
    ),
    (
        "framework-notification-ex2-notification.xml",
        K::FrameworkNotification,
        3,
        &[],
    ),
    (
        "framework-notification-ex8-capabilitylist.xml",
        K::CapabilityList,
        5,
        &[],
    ),
];

fn example(name: &str) -> Vec<u8> {
    let path = format!("{}/../spec/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_xml_example_is_in_the_table() {
    let dir = format!("{}/../spec/examples", env!("CARGO_MANIFEST_DIR"));
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".xml") {
            assert!(
                EXAMPLES.iter().any(|(file, ..)| *file == name),
                "{name} has no row"
            );
        }
    }
}

#[test]
fn every_example_reads_with_exactly_its_findings() {
    for (file, kind, entries, expected) in EXAMPLES {
        let (doc, findings) = read_everywhere(&example(file), Limits::default())
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(doc.head.kind(), *kind, "{file}");
        assert_eq!(doc.entries.len(), *entries, "{file}");
        assert_eq!(rules_of(&findings), *expected, "{file}");
        // Every finding about an entry knows its line.
        for f in findings.iter().filter(|f| f.entry.is_some()) {
            assert!(f.position.is_some(), "{file}: {f}");
        }
    }
}

#[test]
fn every_example_round_trips() {
    for (file, ..) in EXAMPLES {
        let (doc, findings) = read_everywhere(&example(file), Limits::default()).unwrap();
        let written = write_document(Vec::new(), &doc).unwrap().output;
        let (again, again_findings) =
            read_everywhere(&written, Limits::default()).unwrap_or_else(|e| {
                panic!(
                    "{file} as written: {e}\n{}",
                    String::from_utf8_lossy(&written)
                )
            });
        assert_eq!(again, doc, "{file}");
        assert_eq!(rules_of(&again_findings), rules_of(&findings), "{file}");
        // Writing what was read back gives the same bytes: datetimes, hashes and raw
        // attributes kept exactly as written.
        assert_eq!(
            write_document(Vec::new(), &again).unwrap().output,
            written,
            "{file}"
        );
    }
}

#[test]
fn example_values_are_typed() {
    let (doc, _) =
        read_everywhere(&example("ex23-changedump-manifest.xml"), Limits::default()).unwrap();
    let md = doc.entries[0].md.as_ref().unwrap();
    assert_eq!(md.length, Some(4339));
    assert_eq!(md.path.as_ref().unwrap().as_str(), "/changes/res7.html");
    assert_eq!(md.media_type.as_ref().unwrap().as_str(), "text/html");
    assert_eq!(
        md.hash.as_ref().unwrap().to_string(),
        "md5:1c1b0e264fa9b7e1e9aa6f9db8d6362b"
    );
    assert_eq!(
        doc.entries[2].change(),
        Some(resourcesync_model::Change::Deleted)
    );

    // Example 14's hash attribute spans two digests.
    let (doc, _) = read_everywhere(&example("ex14-resourcelist.xml"), Limits::default()).unwrap();
    assert_eq!(
        doc.entries[1]
            .md
            .as_ref()
            .unwrap()
            .hash
            .as_ref()
            .unwrap()
            .len(),
        2
    );

    // Example 27's bad hashes are kept as written, so nothing is lost.
    let (doc, _) = read_everywhere(&example("ex27-patch-links.xml"), Limits::default()).unwrap();
    let raw = &doc.entries[0].md.as_ref().unwrap().extensions[0];
    assert_eq!((raw.namespace.as_str(), raw.name.as_str()), ("", "hash"));
    assert_eq!(
        raw.value,
        "sha-256:f40xZX_x_DFGFDgghgdfb6rtSx-iosjf6735432nklj"
    );
}
