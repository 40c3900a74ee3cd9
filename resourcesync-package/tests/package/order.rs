//! Change order: whatever the package writer and the dump builder accept, `Package::check`
//! finds in order; whatever they refuse, they refuse before writing anything of it. The
//! writer refuses by the reader's own rule (the model's `Checker`), so the two agree.

use std::io::Cursor;

use resourcesync_model::{Change, DocumentKind, Rule};
use resourcesync_package::{
    Bitstream, Misuse, Package, PackageError, PackageOptions, PackageWriter,
};

use crate::manifest_head;

/// One step of a row: a bitstream (`Add`) or a deletion (`Delete`), with its time if any.
#[derive(Clone, Copy, Debug)]
enum Step {
    Add(Option<&'static str>),
    Delete(Option<&'static str>),
}

/// The number the manifest entry of step `i` (from 0) would have, after `refused` steps
/// left no entry.
fn info_entries(refused: &[usize], i: usize) -> u64 {
    (i + 1 - refused.len()) as u64
}

/// Runs the steps on a Change Dump Manifest writer; returns the 1-based numbers of the
/// refused steps, and the rules `Package::check` reports on what was written.
fn run(steps: &[Step]) -> (Vec<usize>, Vec<Rule>) {
    let mut writer = PackageWriter::new(
        Vec::new(),
        manifest_head(DocumentKind::ChangeDumpManifest),
        PackageOptions::default(),
    )
    .unwrap();
    let mut refused = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let result = match *step {
            Step::Add(time) => {
                let mut b = Bitstream::new(
                    format!("http://example.com/res{i}").parse().unwrap(),
                    format!("/changes/res{i}").into(),
                );
                b.change = Some(Change::Updated);
                b.datetime = time.map(|t| t.parse().unwrap());
                writer.add(b, &b"content"[..]).map(drop)
            }
            Step::Delete(time) => writer
                .add_deleted(
                    format!("http://example.com/gone{i}").parse().unwrap(),
                    time.map(|t| t.parse().unwrap()),
                )
                .map(drop),
        };
        match result {
            Ok(()) => {}
            Err(PackageError::Misuse(Misuse::BreaksRule { errors, loc, .. })) => {
                // The error names the rule, the entry, and the time as written.
                let order = errors
                    .iter()
                    .find(|f| f.rule == Rule::ChangeDumpManifestOrder)
                    .unwrap_or_else(|| panic!("{errors:?}"));
                assert_eq!(order.entry, Some(info_entries(&refused, i)));
                let (Step::Add(Some(time)) | Step::Delete(Some(time))) = *step else {
                    panic!("step {} without a time refused", i + 1)
                };
                let message = order.to_string();
                assert!(message.contains(time), "{message}");
                assert!(loc.unwrap().as_str().ends_with(&i.to_string()));
                refused.push(i + 1);
            }
            Err(e) => panic!("step {}: {e:?}", i + 1),
        }
    }
    let (zip, info) = writer.finish().unwrap();
    let accepted = steps.len() - refused.len();
    assert_eq!(
        info.manifest.entries.len(),
        accepted,
        "a refused step left an entry"
    );
    let mut package = Package::new(Cursor::new(zip)).unwrap();
    let rules = package.check().unwrap().iter().map(|f| f.rule).collect();
    (refused, rules)
}

#[test]
fn the_writer_refuses_every_change_out_of_order_and_check_agrees() {
    use Step::*;
    const T1: &str = "2013-01-02T10:00:00Z";
    const T2: &str = "2013-01-02T11:00:00Z";
    const T2_LOCAL: &str = "2013-01-02T12:00:00+01:00";
    const T3: &str = "2013-01-02T12:00:00Z";
    let rows: &[(&str, &[Step], &[usize])] = &[
        ("bitstreams in order", &[Add(Some(T1)), Add(Some(T2))], &[]),
        (
            "a bitstream before a bitstream",
            &[Add(Some(T2)), Add(Some(T1))],
            &[2],
        ),
        (
            "a bitstream before a deletion",
            &[Delete(Some(T2)), Add(Some(T1))],
            &[2],
        ),
        (
            "a deletion before a bitstream",
            &[Add(Some(T2)), Delete(Some(T1))],
            &[2],
        ),
        (
            "a deletion before a deletion",
            &[Delete(Some(T2)), Delete(Some(T1))],
            &[2],
        ),
        (
            "compared with the last change that had a time",
            &[Add(Some(T2)), Add(None), Delete(None), Add(Some(T1))],
            &[4],
        ),
        (
            "a refused change is not remembered",
            &[Add(Some(T1)), Add(Some(T3)), Add(Some(T2)), Add(Some(T3))],
            &[3],
        ),
        (
            "a day that holds the last change's time is in order, as the reader judges it",
            &[Add(Some(T2)), Add(Some("2013-01-02"))],
            &[],
        ),
        (
            "the same instant with another offset is in order",
            &[Add(Some(T2)), Add(Some(T2_LOCAL)), Delete(Some(T2))],
            &[],
        ),
        (
            "a reduced-precision time stands for the start of its period",
            &[
                Add(Some("2013-01-02T00:00:00Z")),
                Add(Some("2013-01-02")),
                Add(Some("2013-01-01")),
            ],
            &[3],
        ),
    ];
    for (name, steps, expected) in rows {
        let (refused, rules) = run(steps);
        assert_eq!(&refused, expected, "{name}");
        assert!(
            !rules.contains(&Rule::ChangeDumpManifestOrder),
            "{name}: written out of order: {rules:?}"
        );
    }
}

#[test]
fn a_refused_bitstream_does_not_take_its_path() {
    let mut writer = PackageWriter::new(
        Vec::new(),
        manifest_head(DocumentKind::ChangeDumpManifest),
        PackageOptions::default(),
    )
    .unwrap();
    let bitstream = |time: &str| {
        let mut b = Bitstream::new(
            "http://example.com/res".parse().unwrap(),
            "/changes/res".into(),
        );
        b.change = Some(Change::Updated);
        b.datetime = Some(time.parse().unwrap());
        b.media_type = Some("text/plain".parse().unwrap());
        b
    };
    writer
        .add_deleted(
            "http://example.com/gone".parse().unwrap(),
            Some("2013-01-02T11:00:00Z".parse().unwrap()),
        )
        .unwrap();
    assert!(matches!(
        writer.add(bitstream("2013-01-02T10:00:00Z"), &b"old"[..]),
        Err(PackageError::Misuse(Misuse::BreaksRule { .. }))
    ));
    writer
        .add(bitstream("2013-01-02T12:00:00Z"), &b"new"[..])
        .unwrap();
    let (zip, _) = writer.finish().unwrap();
    let mut package = Package::new(Cursor::new(zip)).unwrap();
    assert_eq!(package.bitstream_count(), 1);
    assert_eq!(package.check().unwrap(), []);
}

#[test]
fn a_resource_dump_manifest_has_no_order() {
    let mut writer = PackageWriter::new(
        Vec::new(),
        manifest_head(DocumentKind::ResourceDumpManifest),
        PackageOptions::default(),
    )
    .unwrap();
    for (i, time) in ["2013-01-02T11:00:00Z", "2013-01-02T10:00:00Z"]
        .into_iter()
        .enumerate()
    {
        let mut b = Bitstream::new(
            format!("http://example.com/res{i}").parse().unwrap(),
            format!("/res{i}").into(),
        );
        b.datetime = Some(time.parse().unwrap());
        b.media_type = Some("text/plain".parse().unwrap());
        writer.add(b, &b"x"[..]).unwrap();
    }
    let (zip, _) = writer.finish().unwrap();
    assert_eq!(
        Package::new(Cursor::new(zip))
            .unwrap()
            .check()
            .unwrap()
            .iter()
            .map(|f| f.rule)
            .collect::<Vec<_>>(),
        []
    );
}
