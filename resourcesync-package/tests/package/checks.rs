//! Writers check what readers check: the package writer and the dump builder run the
//! model's `Checker` on what they write, refuse an error before writing anything of it
//! (unless told not to), and report the same findings a reader finds.

use std::collections::BTreeMap;
use std::io::Cursor;

use resourcesync_model::{Change, DocumentHead, DocumentKind, Link, Relation, Rule, Uri, check};
use resourcesync_package::{
    Bitstream, DumpBuilder, DumpLimits, Misuse, Package, PackageError, PackageOptions,
    PackageWriter,
};

use crate::manifest_head;

fn bitstream(loc: &str, path: &str) -> Bitstream {
    let mut b = Bitstream::new(loc.parse().unwrap(), path.into());
    b.media_type = Some("text/plain".parse().unwrap());
    b
}

fn change(loc: &str, path: &str, time: &str) -> Bitstream {
    let mut b = bitstream(loc, path);
    b.change = Some(Change::Updated);
    b.datetime = Some(time.parse().unwrap());
    b
}

/// The rules of a refusal, or a panic naming what came instead.
fn refused<T: std::fmt::Debug>(result: Result<T, PackageError>) -> Vec<Rule> {
    match result {
        Err(PackageError::Misuse(Misuse::BreaksRule { errors, .. })) => {
            errors.iter().map(|f| f.rule).collect()
        }
        other => panic!("not refused for a rule: {other:?}"),
    }
}

#[test]
fn a_refused_entry_leaves_the_package_as_it_was() {
    let mut writer = PackageWriter::new(
        Vec::new(),
        manifest_head(DocumentKind::ResourceDumpManifest),
        PackageOptions::default(),
    )
    .unwrap();
    writer
        .add(bitstream("http://example.com/a", "/a"), &b"a"[..])
        .unwrap();
    // An unsafe scheme is an error: refused, its path not taken, nothing written.
    let error = writer
        .add(bitstream("javascript:alert(1)", "/b"), &b"b"[..])
        .unwrap_err();
    assert_eq!(crate::chain(&error).matches("uri-unsafe-scheme").count(), 1);
    assert!(
        crate::chain(&error).contains("entry javascript:alert(1) of the Resource Dump Manifest"),
        "{}",
        crate::chain(&error)
    );
    assert_eq!(writer.manifest_entries(), 1);
    assert_eq!(writer.bitstream_count(), 1);
    // The refused entry's number, `<loc>` and path are free again.
    writer
        .add(bitstream("http://example.com/b", "/b"), &b"b"[..])
        .unwrap();
    let (zip, info) = writer.finish().unwrap();
    assert_eq!(info.manifest.entries.len(), 2);
    assert!(info.findings.is_empty(), "{:?}", info.findings);
    let mut package = Package::new(Cursor::new(zip)).unwrap();
    assert_eq!(package.check().unwrap(), []);
}

#[test]
fn the_writer_reports_what_the_reader_finds_and_writes_errors_only_when_told() {
    let write = |options: PackageOptions| {
        let mut writer = PackageWriter::new(
            Vec::new(),
            manifest_head(DocumentKind::ResourceDumpManifest),
            options,
        )?;
        // A warning (no media type: manifest-type-recommended), never refused.
        writer.add(
            Bitstream::new("http://example.com/a".parse().unwrap(), "/a".into()),
            &b"a"[..],
        )?;
        // An error (a deletion in a Resource Dump Manifest).
        writer.add_deleted("http://example.com/gone".parse().unwrap(), None)?;
        writer.finish()
    };
    assert_eq!(
        refused(write(PackageOptions::default())),
        [Rule::ResourceDumpManifestDeleted]
    );
    let (zip, info) = write(PackageOptions::default().refuse_errors(false)).unwrap();
    let rules: Vec<Rule> = info.findings.iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::ManifestTypeRecommended,
            Rule::ResourceDumpManifestDeleted
        ]
    );
    // The reader finds exactly what the writer reported, where in the text besides.
    let package = Package::new(Cursor::new(zip)).unwrap();
    let mut read = package.findings().to_vec();
    read.iter_mut().for_each(|f| f.position = None);
    assert_eq!(read, info.findings);
}

#[test]
fn a_head_that_breaks_a_rule_is_refused_unless_allowed() {
    let head = DocumentHead::of_kind(DocumentKind::ChangeDumpManifest);
    assert_eq!(
        refused(PackageWriter::new(
            Vec::new(),
            head.clone(),
            PackageOptions::default()
        )),
        [Rule::FromMandatory, Rule::UpLinkMandatory]
    );
    let writer = PackageWriter::new(
        Vec::new(),
        head,
        PackageOptions::default().refuse_errors(false),
    )
    .unwrap();
    let (_, info) = writer.finish().unwrap();
    assert_eq!(info.findings.len(), 2);
    let dump = DocumentHead::of_kind(DocumentKind::ResourceDump);
    assert_eq!(
        refused(DumpBuilder::new(
            dump,
            |n| format!("http://example.com/p{n}.zip").parse(),
            |_: &Uri| Ok(Vec::new()),
            |_: &Uri, _: Vec<u8>| Ok(()),
            DumpLimits::default(),
            PackageOptions::default(),
        )),
        [Rule::AtMandatory, Rule::UpLinkMandatory]
    );
}

fn change_dump_head() -> DocumentHead {
    DocumentHead::of_kind(DocumentKind::ChangeDump)
        .with_from("2013-01-01T00:00:00Z".parse().unwrap())
        .with_until("2013-01-02T00:00:00Z".parse().unwrap())
        .with_link(Link::new(
            Relation::Up,
            "http://example.com/caps.xml".parse().unwrap(),
        ))
}

#[test]
fn the_dump_builder_refuses_a_change_out_of_order_across_packages() {
    let mut packages = BTreeMap::new();
    let mut opened = 0;
    let mut dump = DumpBuilder::new(
        change_dump_head(),
        |n| format!("http://example.com/part{n}.zip").parse(),
        |_: &Uri| {
            opened += 1;
            Ok(Vec::new())
        },
        |uri: &Uri, zip: Vec<u8>| {
            packages.insert(uri.to_string(), zip);
            Ok(())
        },
        DumpLimits::new(u64::MAX, 2),
        PackageOptions::default(),
    )
    .unwrap();
    let at = |hour: u32| format!("2013-01-01T{hour:02}:00:00Z");
    dump.add(change("http://example.com/r1", "/r1", &at(10)), &b"1"[..])
        .unwrap();
    // Before the first: out of order within the package.
    assert_eq!(
        refused(dump.add(change("http://example.com/r0", "/r0", &at(9)), &b"0"[..])),
        [Rule::ChangeDumpManifestOrder]
    );
    dump.add(change("http://example.com/r2", "/r2", &at(11)), &b"2"[..])
        .unwrap();
    // The package is full: the next change starts a package at 11:00, the last change's
    // time, and one before that is refused without closing the full one or opening another.
    assert_eq!(
        refused(dump.add(change("http://example.com/r3", "/r3", &at(8)), &b"3"[..])),
        [Rule::DatetimeOutsideInterval]
    );
    // After the dump's `until`: refused too.
    let late = change("http://example.com/r4", "/r4", "2013-01-03T00:00:00Z");
    assert_eq!(
        refused(dump.add(late, &b"4"[..])),
        [Rule::DatetimeOutsideInterval]
    );
    dump.add_deleted(
        "http://example.com/r1".parse().unwrap(),
        Some(at(12).parse().unwrap()),
    )
    .unwrap();
    let dump = dump.finish().unwrap();
    assert_eq!(opened, 2, "no package opened for a refused change");
    assert_eq!(dump.document.entries.len(), 2);
    assert!(dump.findings.is_empty(), "{:?}", dump.findings);
    assert_eq!(check(&dump.document), []);
    let md = |i: usize| dump.document.entries[i].md.clone().unwrap();
    assert_eq!(md(0).until, Some(at(11).parse().unwrap()));
    assert_eq!(md(1).from, md(0).until);
    assert_eq!(md(1).until, change_dump_head().md.until);
    for (uri, zip) in &packages {
        let mut package = Package::new(Cursor::new(zip)).unwrap();
        assert_eq!(package.check().unwrap(), [], "{uri}");
    }
}

#[test]
fn the_dump_builder_refuses_a_package_uri_that_breaks_a_rule_before_opening_it() {
    let mut opened = 0;
    let mut dump = DumpBuilder::new(
        DocumentHead::of_kind(DocumentKind::ResourceDump)
            .with_at("2013-01-03T09:00:00Z".parse().unwrap())
            .with_link(Link::new(
                Relation::Up,
                "http://example.com/caps.xml".parse().unwrap(),
            )),
        |n| format!("javascript:part{n}").parse(),
        |_: &Uri| {
            opened += 1;
            Ok(Vec::new())
        },
        |_: &Uri, _: Vec<u8>| Ok(()),
        DumpLimits::default(),
        PackageOptions::default(),
    )
    .unwrap();
    let error = dump
        .add(bitstream("http://example.com/a", "/a"), &b"a"[..])
        .unwrap_err();
    match &error {
        PackageError::Misuse(Misuse::BreaksRule {
            document: DocumentKind::ResourceDump,
            loc: Some(loc),
            errors,
        }) => {
            assert_eq!(loc.as_str(), "javascript:part1");
            assert_eq!(errors[0].rule, Rule::UriScheme);
        }
        other => panic!("{other:?}"),
    }
    let dump = dump.finish().unwrap();
    assert_eq!(dump.document.entries, []);
    assert_eq!(opened, 0);
}

#[test]
fn an_error_known_only_when_a_package_closes_is_refused_before_it_is_published() {
    let mut closed = Vec::new();
    let mut dump = DumpBuilder::new(
        change_dump_head(),
        |n| format!("http://example.com/part{n}.zip").parse(),
        |_: &Uri| Ok(Vec::new()),
        |uri: &Uri, _: Vec<u8>| {
            closed.push(uri.clone());
            Ok(())
        },
        DumpLimits::default(),
        PackageOptions::default(),
    )
    .unwrap()
    // The copy's URI is known only once the package is complete.
    .with_manifest_copies(|_, _, _| Ok("javascript:void(0)".parse().unwrap()));
    dump.add(
        change("http://example.com/r1", "/r1", "2013-01-01T10:00:00Z"),
        &b"1"[..],
    )
    .unwrap();
    match dump.finish() {
        Err(PackageError::Misuse(Misuse::BreaksRule {
            document: DocumentKind::ChangeDump,
            loc: Some(loc),
            errors,
        })) => {
            assert_eq!(loc.as_str(), "http://example.com/part1.zip");
            assert_eq!(errors[0].rule, Rule::UriScheme);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(closed, [], "the package was not handed over");
}
