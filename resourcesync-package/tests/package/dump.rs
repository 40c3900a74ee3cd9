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
