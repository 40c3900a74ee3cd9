//! The example programs (`read-resource-list`, `write-change-list`, `write-read-set`,
//! `resource-dump`, `publish-records`) run on real inputs: the spec's example Resource List, a gzipped copy,
//! broken documents, and what the programs write, read back by the library.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use resourcesync_model::{Change, DocumentKind, Relation};
use resourcesync_package::Package;
use resourcesync_xml::{Reader, read_document};

const EX14: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../spec/examples/ex14-resourcelist.xml"
);
const EX01: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../spec/examples/ex01-resourcelist.xml"
);

fn run(program: &str, args: &[&str]) -> Output {
    Command::new(program)
        .args(args)
        .output()
        .expect("run the program")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

// read-resource-list

const READ: &str = env!("CARGO_BIN_EXE_read-resource-list");

/// Example 14's two entries, each with lastmod, length and md5.
const EX14_ENTRIES: &str = "\
http://example.com/res1\t2013-01-02T13:00:00Z\t8876\t1584abdf8ebdc9802ac0c6a7402c03b6
http://example.com/res2\t2013-01-02T14:00:00Z\t14599\t1e0d5cb8ef6ba40c99b14c0237be735e
2 entries
";

#[test]
fn read_resource_list_prints_the_entries_of_example_14() {
    let out = run(READ, &[EX14]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!("loc\tlastmod\tlength\tmd5\n{EX14_ENTRIES}")
    );
}

#[test]
fn read_resource_list_reads_a_gzipped_copy() {
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("resourcelist.xml.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(&fs::read(EX14).unwrap()).unwrap();
    fs::write(&gz, encoder.finish().unwrap()).unwrap();

    let out = run(READ, &[path_str(&gz)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).ends_with(EX14_ENTRIES), "{}", stdout(&out));
}

#[test]
fn read_resource_list_fails_on_error_findings_and_names_them() {
    // Example 1 leaves out the mandatory up link.
    let out = run(READ, &[EX01]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stdout(&out).contains("error [up-link-mandatory, section 10.1]"),
        "{}",
        stdout(&out)
    );

    // A bad md5 and a repeated loc: both entries are still listed.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.xml");
    fs::write(
        &broken,
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
         xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
  <url><loc>http://example.com/res1</loc><rs:md hash="md5:xyz" length="10"/></url>
  <url><loc>http://example.com/res1</loc></url>
</urlset>"#,
    )
    .unwrap();
    let out = run(READ, &[path_str(&broken)]);
    assert_eq!(out.status.code(), Some(1));
    let text = stdout(&out);
    assert!(
        text.contains("http://example.com/res1\t-\t10\t-\n"),
        "{text}"
    );
    assert!(text.contains("2 entries"), "{text}");
    assert!(
        text.contains("error [hash-syntax, section 7] entry 1 line 5"),
        "{text}"
    );
    assert!(
        text.contains("warning [loc-duplicate, section 10.1] entry 2"),
        "{text}"
    );
}

#[test]
fn read_resource_list_refuses_what_it_cannot_read_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let not_xml = dir.path().join("not.xml");
    fs::write(&not_xml, "<urlset").unwrap();
    for (path, expected) in [
        (path_str(&not_xml), "not.xml"),
        ("no/such/file.xml", "no/such/file.xml: cannot open"),
        (
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../spec/examples/ex19-changelist-open.xml"
            ),
            "a Change List, not a Resource List",
        ),
    ] {
        let out = run(READ, &[path]);
        assert_eq!(out.status.code(), Some(2), "{path}");
        assert!(stderr(&out).contains(expected), "{path}: {}", stderr(&out));
    }
    assert_eq!(run(READ, &[]).status.code(), Some(2));
}

// write-change-list

const WRITE_CL: &str = env!("CARGO_BIN_EXE_write-change-list");

#[test]
fn write_change_list_writes_what_reads_back_without_findings() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("changelist.xml");
    let out = run(
        WRITE_CL,
        &[
            "--from=2013-01-03T00:00:00Z",
            "--up=http://example.com/dataset1/capabilitylist.xml",
            "-o",
            path_str(&file),
            "created,http://example.com/res1,2013-01-03T09:00:00Z",
            "updated,http://example.com/res2?a=1&b=2,2013-01-03T10:00:00Z",
            "deleted,http://example.com/res3,2013-01-03T11:00:00Z",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("wrote 3 changes"), "{}", stderr(&out));

    let (doc, findings) = read_document(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(findings, []);
    assert_eq!(doc.head.kind(), DocumentKind::ChangeList);
    assert_eq!(
        doc.head.md.from.unwrap().to_string(),
        "2013-01-03T00:00:00Z"
    );
    let up = doc.head.link(&Relation::Up).expect("an up link");
    assert_eq!(
        up.href.as_str(),
        "http://example.com/dataset1/capabilitylist.xml"
    );
    let changes: Vec<_> = doc
        .entries
        .iter()
        .map(|e| {
            (
                e.loc.as_str(),
                e.change(),
                e.md.as_ref().unwrap().datetime.unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        changes,
        [
            (
                "http://example.com/res1",
                Some(Change::Created),
                "2013-01-03T09:00:00Z".to_owned()
            ),
            (
                "http://example.com/res2?a=1&b=2",
                Some(Change::Updated),
                "2013-01-03T10:00:00Z".to_owned()
            ),
            (
                "http://example.com/res3",
                Some(Change::Deleted),
                "2013-01-03T11:00:00Z".to_owned()
            ),
        ]
    );
}

#[test]
fn write_change_list_defaults_to_now_and_standard_output() {
    let out = run(
        WRITE_CL,
        &[
            "created,http://example.com/res1",
            "deleted,http://example.com/res2",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (doc, findings) = read_document(&out.stdout).unwrap();
    assert_eq!(findings, []);
    let from = doc.head.md.from.expect("from");
    assert!(from.is_recommended_form());
    // Both changes happened "now", the same instant as `from`.
    for entry in &doc.entries {
        assert_eq!(entry.md.as_ref().unwrap().datetime, Some(from));
    }
    assert_eq!(doc.entries.len(), 2);
}

#[test]
fn write_change_list_refuses_changes_out_of_order_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("changelist.xml");
    let out = run(
        WRITE_CL,
        &[
            "--from=2013-01-03T00:00:00Z",
            "-o",
            path_str(&file),
            "updated,http://example.com/res2,2013-01-03T18:00:00Z",
            "deleted,http://example.com/res3,2013-01-03T17:00:00Z",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("entry 2 refused: error [changelist-order"),
        "{}",
        stderr(&out)
    );
    assert!(!file.exists());

    // A change before `from`, and a change that is not one.
    let out = run(
        WRITE_CL,
        &[
            "--from=2013-01-03T00:00:00Z",
            "created,http://example.com/a,2013-01-02T00:00:00Z",
        ],
    );
    assert!(
        stderr(&out).contains("[datetime-in-interval"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    let out = run(WRITE_CL, &["moved,http://example.com/a"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("moved"), "{}", stderr(&out));
}

// write-read-set

const SET: &str = env!("CARGO_BIN_EXE_write-read-set");

/// The entries of every part of the set at `dir/resourcelist.xml`, read by the library.
fn entries_of_set(dir: &Path, parts: &[&str]) -> u64 {
    let (index, findings) = Reader::open(dir.join("resourcelist.xml"))
        .unwrap()
        .read_to_document()
        .unwrap();
    assert_eq!(findings, []);
    assert_eq!(index.head.kind(), DocumentKind::ResourceListIndex);
    let listed: Vec<&str> = index.entries.iter().map(|e| e.loc.as_str()).collect();
    let expected: Vec<String> = parts
        .iter()
        .map(|p| format!("http://example.com/dataset1/{p}"))
        .collect();
    assert_eq!(listed, expected);
    let mut total = 0;
    for part in parts {
        let mut reader = Reader::open(dir.join(part)).unwrap();
        assert_eq!(reader.kind().unwrap(), DocumentKind::ResourceList);
        while reader.next_entry().unwrap().is_some() {}
        assert_eq!(reader.take_findings(), []);
        total += reader.entries_read();
    }
    total
}

#[test]
fn write_read_set_writes_and_reads_back_120000_entries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("dataset1");
    let out = run(SET, &[path_str(&root)]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("read 120000 entries back, from 3 parts"),
        "{}",
        stdout(&out)
    );
    let parts = [
        "resourcelist-00001.xml",
        "resourcelist-00002.xml",
        "resourcelist-00003.xml",
    ];
    assert_eq!(entries_of_set(&root, &parts), 120_000);
}

#[test]
fn write_read_set_gzips_the_parts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("dataset1");
    let out = run(SET, &["--gzip", "--entries=50001", path_str(&root)]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("read 50001 entries back, from 2 parts"),
        "{}",
        stdout(&out)
    );
    let parts = ["resourcelist-00001.xml.gz", "resourcelist-00002.xml.gz"];
    for part in parts {
        assert_eq!(fs::read(root.join(part)).unwrap()[..2], [0x1f, 0x8b]);
    }
    assert_eq!(entries_of_set(&root, &parts), 50_001);
}

// resource-dump

const DUMP: &str = env!("CARGO_BIN_EXE_resource-dump");

#[test]
fn resource_dump_extracts_the_files_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    let files = [
        ("res1.html", b"<html>res1</html>".to_vec()),
        (
            "res2.bin",
            (0..200_000u32).map(|i| (i * 7 % 251) as u8).collect(),
        ),
        ("empty.txt", Vec::new()),
    ];
    let mut args = vec![
        dir.path().join("package.zip").to_str().unwrap().to_owned(),
        dir.path().join("extracted").to_str().unwrap().to_owned(),
    ];
    for (name, content) in &files {
        fs::write(dir.path().join(name), content).unwrap();
        args.push(dir.path().join(name).to_str().unwrap().to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(DUMP, &args);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("verified and extracted 3 bitstreams into"),
        "{text}"
    );
    assert!(
        text.contains("/res1.html <- http://example.com/dataset1/res1.html"),
        "{text}"
    );

    for (name, content) in &files {
        assert_eq!(
            &fs::read(dir.path().join("extracted").join(name)).unwrap(),
            content,
            "{name}"
        );
    }
    assert!(dir.path().join("extracted/manifest.xml").exists());
    let mut package = Package::open(dir.path().join("package.zip")).unwrap();
    assert_eq!(package.bitstream_count(), 3);
    assert_eq!(
        package.manifest().head.kind(),
        DocumentKind::ResourceDumpManifest
    );
    package.verify().unwrap();
}

#[test]
fn resource_dump_leaves_an_existing_package_alone() {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("package.zip");
    fs::write(&package, b"not mine to replace").unwrap();
    fs::write(dir.path().join("a.txt"), b"a").unwrap();
    let extracted = dir.path().join("extracted");
    let out = run(
        DUMP,
        &[
            path_str(&package),
            path_str(&extracted),
            path_str(&dir.path().join("a.txt")),
        ],
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("exists"), "{}", stderr(&out));
    assert_eq!(fs::read(&package).unwrap(), b"not mine to replace");
    assert!(!extracted.exists());
}

// publish-records

const PUBLISH: &str = env!("CARGO_BIN_EXE_publish-records");

#[test]
fn publish_records_publishes_changes_and_the_client_follows_them() {
    let out = run(PUBLISH, &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for line in [
        "published 5 records at ",
        "baseline: 5 created, complete: true",
        "published 1 created, 1 updated, 1 deleted",
        "incremental: 1 created, 1 updated, 1 deleted, complete: true",
        "the Destination holds the application's 5 records",
    ] {
        assert!(text.contains(line), "{line:?} not in:\n{text}");
    }
}
