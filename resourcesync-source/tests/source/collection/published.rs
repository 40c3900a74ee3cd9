//! What a build publishes: every document read back and validated, what is skipped and
//! why, and a list of URI and file pairs in place of the walk.

use std::collections::BTreeMap;
use std::fs;

use resourcesync_model::{Change, DocumentKind};
use resourcesync_source::collection::BuildError;
use resourcesync_testkit::publication::{digests, percent_decode};

use super::{BASE, build, generated, local, options, publication, put, refused};

#[test]
fn publishes_a_collection_that_validates_and_reads_back() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let paths = generated(&coll, 250);
    let options = options()
        .with_max_entries(100)
        .with_resource_dump(true)
        .with_change_dump(true);
    let report = build(&coll, &publish, &options);
    assert_eq!(report.generation, 1);
    assert_eq!(report.resources, 250);
    assert_eq!(report.created, 250);
    assert_eq!(report.hashed_files, 250);
    assert_eq!(report.skipped, []);
    let p = publication(&publish);
    assert_eq!(p.validate(), 0, "no warning either");

    // The Source Description leads to the Capability List, which lists each document; no
    // Change Dump yet, which would have no package (changes are published from this run
    // on).
    let sd = p.document(".well-known/resourcesync");
    assert_eq!(sd.head.kind(), DocumentKind::SourceDescription);
    let cl = p.document(local(sd.entries[0].loc.as_str()));
    assert_eq!(cl.head.kind(), DocumentKind::CapabilityList);
    let listed: Vec<&str> = cl.entries.iter().map(|e| local(e.loc.as_str())).collect();
    assert_eq!(
        listed,
        [
            "resourcesync/resourcelist.xml",
            "resourcesync/resourcedump.xml",
            "resourcesync/changelist.xml",
        ]
    );
    assert!(!publish.join("resourcesync/changedump.xml").exists());

    // 250 entries at 100 per document: an index over three parts, each entry naming a
    // file the publish directory serves with the listed length, md5, sha-256 and type.
    let index = p.document("resourcesync/resourcelist.xml");
    assert_eq!(index.head.kind(), DocumentKind::ResourceListIndex);
    assert_eq!(index.entries.len(), 3);
    let entries = p.resource_list();
    assert_eq!(entries.len(), 250);
    let mut expected: Vec<String> = paths.clone();
    expected.sort();
    let locs: Vec<String> = entries
        .iter()
        .map(|e| percent_decode(local(e.loc.as_str())))
        .collect();
    assert_eq!(locs, expected);
    for entry in &entries {
        let bytes = p.served(entry);
        let d = digests(&bytes);
        assert_eq!(d.mismatch(entry.hashes().unwrap()), None, "{}", entry.loc);
        assert_eq!(entry.length(), Some(bytes.len() as u64));
        assert!(entry.lastmod.is_some());
        let media_type = entry.md.as_ref().unwrap().media_type.as_ref().unwrap();
        let expected = match entry.loc.as_str().rsplit('.').next().unwrap() {
            "txt" => "text/plain",
            "html" => "text/html",
            "json" => "application/json",
            "png" => "image/png",
            "pdf" => "application/pdf",
            "csv" => "text/csv",
            "xml" => "text/xml",
            _ => "application/octet-stream",
        };
        assert_eq!(media_type.as_str(), expected, "{}", entry.loc);
    }
    assert!(
        entries.iter().any(|e| e.loc.as_str().contains("file%20")
            && e.loc.as_str().contains("%C3%A9")
            || e.loc.as_str().contains("%C3%A9t%C3%A9")),
        "names are percent-encoded"
    );

    // The Resource Dump's packages hold every resource, verified by the package reader.
    let dump = p.document("resourcesync/resourcedump.xml");
    assert_eq!(dump.entries.len(), 3);
    let packaged: usize = dump
        .entries
        .iter()
        .map(|e| p.package(e).entries.len())
        .sum();
    assert_eq!(packaged, 250);

    // One open Change List, empty: changes are published from this run on.
    let lists = p.change_lists();
    assert_eq!(lists.len(), 1);
    assert!(lists[0].0.md.as_ref().unwrap().until.is_none());
    assert!(lists[0].1.is_empty());
}

/// A name that is not UTF-8 is skipped, its path kept as it is in the report and
/// serialized as text (U+FFFD for the byte); the report serializes without a panic (it
/// was one, after the switch: issue 22).
#[test]
fn a_skipped_name_that_is_not_utf8_is_reported_and_serialized() {
    use std::os::unix::ffi::OsStrExt;
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "ok.txt", b"ok");
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(coll.join(name), b"latin-1").unwrap();
    let report = build(&coll, &publish, &options());
    assert_eq!(report.resources, 1);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].path.as_os_str(), name);
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["skipped"][0]["path"], "caf\u{fffd}.txt");
}

#[test]
fn hidden_files_links_and_reserved_names_are_skipped_and_reported() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "ok.txt", b"ok");
    // A colon: a fine URI, but a name a package may not hold as it is.
    put(&coll, "a:b.txt", b"colon");
    put(&coll, ".secret", b"secret");
    put(&coll, "docs/.git/config", b"git");
    put(&coll, "docs/kept/deep.txt", b"deep");
    put(&coll, "resourcesync/x.xml", b"<x/>");
    std::os::unix::fs::symlink("/etc/hostname", coll.join("docs/link")).unwrap();
    let report = build(&coll, &publish, &options().with_resource_dump(true));
    assert_eq!(report.resources, 3);
    assert_eq!(report.unreadable, 0);
    let mut skipped: Vec<String> = report
        .skipped
        .iter()
        .map(|s| s.path.to_str().unwrap().to_string())
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [".secret", "docs/.git", "docs/link", "resourcesync"]
    );
    let p = publication(&publish);
    let entries = p.resource_list();
    assert_eq!(entries.len(), 3);
    p.validate();
    // What was skipped is not served either: `docs` is a directory of its own in the
    // publication, with links to what it publishes only.
    for path in [".secret", "docs/.git/config", "docs/link"] {
        assert!(!publish.join(path).exists(), "{path} is reachable");
    }
    assert!(
        !fs::symlink_metadata(publish.join("docs"))
            .unwrap()
            .is_symlink()
    );
    assert_eq!(
        fs::read(publish.join("docs/kept/deep.txt")).unwrap(),
        b"deep"
    );
    assert!(
        fs::symlink_metadata(publish.join("docs/kept"))
            .unwrap()
            .is_symlink()
    );
    let mut package =
        resourcesync_package::Package::open(publish.join("resourcesync/resourcedump-g1-00001.zip"))
            .unwrap();
    package.verify().unwrap();
    let paths: Vec<String> = package
        .manifest()
        .entries
        .iter()
        .map(|e| e.md.as_ref().unwrap().path.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(paths, ["/a%3Ab.txt", "/docs/kept/deep.txt", "/ok.txt"]);
}

/// A name with a backslash gets a URI (`%5C`), as the CHANGELOG says: on Unix it is a
/// character of the name. Fails on the code before: it was skipped.
#[test]
fn a_name_with_a_backslash_is_published() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "dir/back\\slash.txt", b"backslash");
    let report = build(&coll, &publish, &options());
    assert_eq!(report.resources, 1, "{report}");
    assert_eq!(report.skipped.len(), 0);
    let list = publication(&publish).resource_list();
    assert_eq!(list[0].loc.as_str(), format!("{BASE}dir/back%5Cslash.txt"));
}

#[test]
fn a_list_of_uri_and_file_pairs_is_published_as_listed() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "a.txt", b"alpha");
    put(&coll, "deep/b file.html", b"<p>beta</p>");
    put(&coll, "c.bin", b"gamma");
    let list = root.path().join("list.txt");
    fs::write(
        &list,
        "# resources served elsewhere\n\
         http://cdn.example.org/a.txt a.txt\n\
         \n\
         https://example.net/pages/b.html\tdeep/b file.html\n",
    )
    .unwrap();
    let mut options = options().with_resource_dump(true).with_change_dump(true);
    options.list = Some(list.clone());
    let report = build(&coll, &publish, &options);
    assert_eq!(report.resources, 2);
    let p = publication(&publish);
    let entries = p.resource_list();
    let locs: Vec<&str> = entries.iter().map(|e| e.loc.as_str()).collect();
    assert_eq!(
        locs,
        [
            "http://cdn.example.org/a.txt",
            "https://example.net/pages/b.html"
        ]
    );
    assert_eq!(entries[1].length(), Some(11));
    let html = entries[1].md.as_ref().unwrap().media_type.as_ref().unwrap();
    assert_eq!(html.as_str(), "text/html");
    assert_eq!(
        digests(b"alpha").mismatch(entries[0].hashes().unwrap()),
        None
    );
    // Nothing of the collection is linked into the publication.
    assert!(!publish.join("a.txt").exists() && !publish.join("deep").exists());
    let dump = p.document("resourcesync/resourcedump.xml");
    let manifest = p.package(&dump.entries[0]);
    let paths: Vec<String> = manifest
        .entries
        .iter()
        .map(|e| e.md.as_ref().unwrap().path.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        paths,
        ["/cdn.example.org/a.txt", "/example.net/pages/b.html"]
    );
    p.validate();

    // Changes by the list and by the files.
    put(&coll, "a.txt", b"alpha, again");
    fs::write(
        &list,
        "http://cdn.example.org/a.txt a.txt\nhttp://cdn.example.org/c c.bin\n",
    )
    .unwrap();
    let report = build(&coll, &publish, &options);
    assert_eq!((report.created, report.updated, report.deleted), (1, 1, 1));
    let changes: BTreeMap<String, Change> = p
        .change_lists()
        .into_iter()
        .flat_map(|(_, e)| e)
        .map(|e| (e.loc.to_string(), e.change().unwrap()))
        .collect();
    let expected: BTreeMap<String, Change> = [
        ("http://cdn.example.org/a.txt".to_string(), Change::Updated),
        ("http://cdn.example.org/c".to_string(), Change::Created),
        (
            "https://example.net/pages/b.html".to_string(),
            Change::Deleted,
        ),
    ]
    .into();
    assert_eq!(changes, expected);
    p.validate();

    // A wrong line is named, and nothing is published.
    fs::write(
        &list,
        "http://cdn.example.org/a.txt a.txt\nftp://x.example/y a.txt\n",
    )
    .unwrap();
    let error = refused(&coll, &publish, &options);
    assert!(
        matches!(&error, BuildError::List { line: 2, .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("line 2") && text.contains("not an http"),
        "{text}"
    );

    // Files are relative to the collection: a way out of it is refused, naming the line,
    // even to a file that exists (issue 22).
    put(root.path(), "outside.txt", b"secret");
    let outside = root.path().join("outside.txt");
    for (line, file) in [
        (2, "../outside.txt".to_string()),
        (2, outside.display().to_string()),
        (2, "deep/../../outside.txt".to_string()),
    ] {
        fs::write(
            &list,
            format!("http://cdn.example.org/a.txt a.txt\nhttp://cdn.example.org/o {file}\n"),
        )
        .unwrap();
        let text = refused(&coll, &publish, &options).to_string();
        assert!(
            text.contains(&format!("line {line}")) && text.contains("relative to"),
            "{file}: {text}"
        );
        assert!(!text.contains("secret"));
    }
}
