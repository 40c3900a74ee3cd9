//! `resourcesync build`: what it publishes from a generated collection, read back and
//! validated; incremental runs; the generation switch under failures, kills and readers.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, SystemTime};

use resourcesync_model::{Capability, Change, DocumentKind, Entry, Fixity};
use resourcesync_xml::read_document;
use serde_json::Value;

#[path = "common/building.rs"]
mod building;
#[path = "common/help.rs"]
mod help;
#[path = "common/server.rs"]
mod server;

use building::*;

/// A collection of `n` files of mixed media types, sizes and names (spaces, non-ASCII),
/// nested three levels deep; returns their relative paths.
fn collection(root: &Path, n: usize) -> Vec<String> {
    let kinds = ["txt", "html", "json", "png", "pdf", "xml", "csv", "bin"];
    let mut paths = Vec::new();
    for i in 0..n {
        let kind = kinds[i % kinds.len()];
        let path = match i % 5 {
            0 => format!("top-{i}.{kind}"),
            1 => format!("docs/file {i}.{kind}"),
            2 => format!("docs/été/{i}.{kind}"),
            _ => format!("data/{}/{}/r{i}.{kind}", i % 3, i % 7),
        };
        let size = (i * 37) % 3000;
        let bytes: Vec<u8> = (0..size).map(|b| (b * 31 + i) as u8).collect();
        put(root, &path, &bytes);
        paths.push(path);
    }
    paths
}

/// Every ResourceSync document and package of a publication.
fn published_files(publish: &Path) -> Vec<PathBuf> {
    let mut files = vec![publish.join(".well-known/resourcesync")];
    let mut docs: Vec<PathBuf> = fs::read_dir(publish.join("resourcesync"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml" || e == "zip"))
        .collect();
    docs.sort();
    files.extend(docs);
    files
}

/// `resourcesync validate --json` over every document and package: errors and warnings.
fn validate(publish: &Path) -> (u64, u64) {
    let files = published_files(publish);
    let mut args = vec!["validate", "--json"];
    args.extend(files.iter().map(|p| p.to_str().unwrap()));
    let out = resourcesync(&args);
    let text = String::from_utf8_lossy(&out.stdout);
    let summary: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let errors = summary["summary"]["errors"].as_u64().unwrap();
    assert_eq!(errors, 0, "validate found errors:\n{text}");
    assert!(out.status.success(), "{text}");
    (errors, summary["summary"]["warnings"].as_u64().unwrap())
}

/// A document of the publication, by its path under the publish directory.
fn document(publish: &Path, relative: &str) -> resourcesync_model::Document {
    let bytes = fs::read(publish.join(relative)).unwrap();
    let (document, findings) = read_document(&bytes).unwrap();
    assert!(
        findings
            .iter()
            .all(|f| f.severity() == resourcesync_model::Severity::Warning),
        "{relative}: {findings:?}"
    );
    document
}

/// The path under the publish directory of a URI under the base.
fn local(uri: &str) -> &str {
    uri.strip_prefix(BASE).expect("a URI under the base")
}

/// Every entry of the Resource List, through its index when it has one.
fn resource_list(publish: &Path) -> Vec<Entry> {
    let top = document(publish, "resourcesync/resourcelist.xml");
    if top.head.kind() == DocumentKind::ResourceList {
        return top.entries;
    }
    assert_eq!(top.head.kind(), DocumentKind::ResourceListIndex);
    // Each part is the index's own: the same snapshot time, however the publication
    // switches between the reads.
    top.entries
        .iter()
        .flat_map(|part| {
            let part = document(publish, local(part.loc.as_str()));
            assert_eq!(
                part.head.md.at, top.head.md.at,
                "a part of another generation"
            );
            part.entries
        })
        .collect()
}

/// Every entry of every Change List, in the index's order, with the index's intervals.
fn change_lists(publish: &Path) -> Vec<(Entry, Vec<Entry>)> {
    let index = document(publish, "resourcesync/changelist.xml");
    assert_eq!(index.head.kind(), DocumentKind::ChangeListIndex);
    archived_lists(publish)
        .iter()
        .chain(&index.entries)
        .map(|e| (e.clone(), document(publish, local(e.loc.as_str())).entries))
        .collect()
}

/// The sizes of `lists` and the paths they list, in order, once their `from`/`until` are
/// checked contiguous.
fn sizes_and_listed(lists: &[(Entry, Vec<Entry>)]) -> (Vec<usize>, Vec<String>) {
    let md = |e: &Entry| e.md.clone().unwrap();
    for pair in lists.windows(2) {
        assert_eq!(md(&pair[0].0).until, md(&pair[1].0).from);
    }
    let sizes = lists.iter().map(|(_, entries)| entries.len()).collect();
    let listed = lists
        .iter()
        .flat_map(|(_, entries)| entries.iter())
        .map(|e| percent_decode(local(e.loc.as_str())))
        .collect();
    (sizes, listed)
}

/// The Change Lists the Change List Archive lists, oldest first, through its index when it
/// has one; none without an archive.
fn archived_lists(publish: &Path) -> Vec<Entry> {
    let name = "resourcesync/changelist-archive.xml";
    if !publish.join(name).exists() {
        return Vec::new();
    }
    let archive = document(publish, name);
    match archive.head.kind() {
        DocumentKind::ChangeListArchive => archive.entries,
        DocumentKind::ChangeListArchiveIndex => archive
            .entries
            .iter()
            .flat_map(|part| {
                let part = document(publish, local(part.loc.as_str()));
                assert_eq!(part.head.kind(), DocumentKind::ChangeListArchive);
                part.entries
            })
            .collect(),
        other => panic!("{name} is a {other:?}"),
    }
}

/// The manifest of the package a dump's entry lists, every bitstream verified.
fn package(publish: &Path, entry: &Entry) -> resourcesync_model::Document {
    let path = publish.join(local(entry.loc.as_str()));
    let mut package = resourcesync_package::Package::open(path).unwrap();
    package.verify().unwrap();
    package.manifest().clone()
}

/// What the publish directory serves at a resource's URI: its bytes.
fn served(publish: &Path, entry: &Entry) -> Vec<u8> {
    let path = percent_decode(local(entry.loc.as_str()));
    fs::read(publish.join(path)).unwrap()
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

fn digests(bytes: &[u8]) -> resourcesync_model::Digests {
    let mut fixity = Fixity::new();
    fixity.update(bytes);
    fixity.finish()
}

#[test]
fn publishes_a_collection_that_validates_and_reads_back() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let paths = collection(&coll, 250);
    let report = build(
        &coll,
        &publish,
        &["--max-entries", "100", "--resource-dump", "--change-dump"],
    );
    assert_eq!(report["generation"], 1);
    assert_eq!(report["resources"], 250);
    assert_eq!(report["created"], 250);
    assert_eq!(report["hashed_files"], 250);
    assert_eq!(report["skipped"], Value::Array(vec![]));
    assert_eq!(validate(&publish), (0, 0));

    // The Source Description leads to the Capability List, which lists each document; no
    // Change Dump yet, which would have no package (changes are published from this run
    // on).
    let sd = document(&publish, ".well-known/resourcesync");
    assert_eq!(sd.head.kind(), DocumentKind::SourceDescription);
    let cl = document(&publish, local(sd.entries[0].loc.as_str()));
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
    let index = document(&publish, "resourcesync/resourcelist.xml");
    assert_eq!(index.head.kind(), DocumentKind::ResourceListIndex);
    assert_eq!(index.entries.len(), 3);
    let entries = resource_list(&publish);
    assert_eq!(entries.len(), 250);
    let mut expected: Vec<String> = paths.clone();
    expected.sort();
    let locs: Vec<String> = entries
        .iter()
        .map(|e| percent_decode(local(e.loc.as_str())))
        .collect();
    assert_eq!(locs, expected);
    for entry in &entries {
        let bytes = served(&publish, entry);
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
    let dump = document(&publish, "resourcesync/resourcedump.xml");
    assert_eq!(dump.entries.len(), 3);
    let packaged: usize = dump
        .entries
        .iter()
        .map(|e| package(&publish, e).entries.len())
        .sum();
    assert_eq!(packaged, 250);

    // One open Change List, empty: changes are published from this run on.
    let lists = change_lists(&publish);
    assert_eq!(lists.len(), 1);
    assert!(lists[0].0.md.as_ref().unwrap().until.is_none());
    assert!(lists[0].1.is_empty());
}

#[test]
fn an_incremental_run_lists_the_changes_and_reads_only_what_changed() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 40);
    settle();
    build(&coll, &publish, &["--max-entries", "2", "--change-dump"]);

    // Updated, created, deleted; one rewritten with the same size and time, which its
    // change time tells (issue 28); one touched with the same content.
    put(&coll, "docs/file 1.html", b"an update");
    put(&coll, "new/created.txt", b"created");
    fs::remove_file(coll.join("top-0.txt")).unwrap();
    let sneaky = coll.join("docs/file 6.csv");
    let before = fs::metadata(&sneaky).unwrap();
    let mut bytes = fs::read(&sneaky).unwrap();
    bytes.iter_mut().for_each(|b| *b = !*b);
    fs::write(&sneaky, &bytes).unwrap();
    set_mtime(&sneaky, before.modified().unwrap());
    let touched = coll.join("docs/été/2.json");
    set_mtime(&touched, SystemTime::now() + Duration::from_secs(1));
    settle();

    let report = build(&coll, &publish, &["--max-entries", "2", "--change-dump"]);
    assert_eq!(report["generation"], 2);
    assert_eq!(
        (
            &report["created"],
            &report["updated"],
            &report["deleted"],
            &report["hashed_files"]
        ),
        (&1.into(), &2.into(), &1.into(), &4.into()),
        "{report}"
    );
    assert_eq!(validate(&publish).0, 0);

    // Four changes, two per list: the first list closed, the second open, contiguous.
    let lists = change_lists(&publish);
    assert_eq!(lists.len(), 2);
    let (first, second) = (&lists[0].0, &lists[1].0);
    let md = |e: &Entry| e.md.clone().unwrap();
    assert_eq!(md(first).until, md(second).from);
    assert!(md(second).until.is_none());
    let changes: BTreeMap<String, Change> = lists
        .iter()
        .flat_map(|(_, entries)| entries.iter())
        .map(|e| (percent_decode(local(e.loc.as_str())), e.change().unwrap()))
        .collect();
    let expected: BTreeMap<String, Change> = [
        ("docs/file 1.html".to_string(), Change::Updated),
        ("docs/file 6.csv".to_string(), Change::Updated),
        ("new/created.txt".to_string(), Change::Created),
        ("top-0.txt".to_string(), Change::Deleted),
    ]
    .into();
    assert_eq!(changes, expected);
    // Changes are in forward chronological order over the lists.
    let times: Vec<_> = lists
        .iter()
        .flat_map(|(_, e)| e.iter().map(|e| e.datetime().unwrap()))
        .collect();
    assert!(times.windows(2).all(|w| !w[1].precedes(&w[0])));

    // The Resource List is the collection now, the sneaky file with its new digests.
    let entries = resource_list(&publish);
    assert_eq!(entries.len(), 40);
    assert!(
        entries
            .iter()
            .any(|e| e.loc.as_str().ends_with("new/created.txt"))
    );
    assert!(
        !entries
            .iter()
            .any(|e| e.loc.as_str().ends_with("top-0.txt"))
    );
    let sneaky_entry = entries
        .iter()
        .find(|e| e.loc.as_str().ends_with("docs/file%206.csv"))
        .unwrap();
    assert_eq!(
        digests(&bytes).mismatch(sneaky_entry.hashes().unwrap()),
        None
    );

    // The Change Dump packages the changes: the created and updated bitstreams and the
    // deletion.
    let dump = document(&publish, "resourcesync/changedump.xml");
    assert!(!dump.entries.is_empty());
    let packaged: usize = dump
        .entries
        .iter()
        .map(|e| package(&publish, e).entries.len())
        .sum();
    assert_eq!(packaged, 4);

    // Nothing changed: nothing read, nothing listed, the lists as they were.
    let report = build(&coll, &publish, &["--max-entries", "2", "--change-dump"]);
    assert_eq!(report["hashed_files"], 0);
    assert_eq!(report["created"], 0);
    assert_eq!(change_lists(&publish).len(), 2);
    assert_eq!(validate(&publish).0, 0);
}

/// A file touched, its bytes the same (issue 22): it keeps the `lastmod` listed, since no
/// Change List entry says otherwise, so that a Destination following the Change Lists
/// agrees with the Resource List; its new time is recorded, so the next run does not read
/// it again. An update's `lastmod` is its new time. Fails on the code before: the touched
/// file's `lastmod` became its new time, with no change listed.
#[test]
fn a_file_touched_with_the_same_bytes_keeps_its_lastmod_and_is_no_change() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for name in ["touched.txt", "updated.txt", "still.txt"] {
        put(&coll, name, name.as_bytes());
        set_mtime(&coll.join(name), t0);
    }
    settle();
    let lastmods = || -> BTreeMap<String, String> {
        resource_list(&publish)
            .iter()
            .map(|e| {
                (
                    local(e.loc.as_str()).to_owned(),
                    e.lastmod.unwrap().to_string(),
                )
            })
            .collect()
    };
    build(&coll, &publish, &[]);
    let first = lastmods();
    assert_eq!(first["touched.txt"], "2020-09-13T12:26:40Z");

    set_mtime(&coll.join("touched.txt"), t0 + Duration::from_secs(3600));
    put(&coll, "updated.txt", b"new bytes");
    set_mtime(&coll.join("updated.txt"), t0 + Duration::from_secs(7200));
    settle();
    let report = build(&coll, &publish, &[]);
    let counts = ["created", "updated", "deleted", "hashed_files"].map(|k| report[k].as_u64());
    assert_eq!(counts, [0, 1, 0, 2].map(Some), "{report}");
    let second = lastmods();
    assert_eq!(second["touched.txt"], first["touched.txt"]);
    assert_eq!(second["updated.txt"], "2020-09-13T14:26:40Z");

    // What a Destination holds after the first run, with the changes applied, is the
    // Resource List.
    let mut followed = first;
    for (_, entries) in change_lists(&publish) {
        for e in entries {
            let lastmod = e.lastmod.unwrap().to_string();
            followed.insert(local(e.loc.as_str()).to_owned(), lastmod);
        }
    }
    assert_eq!(followed, second);
    assert_eq!(validate(&publish).0, 0);

    // The touched file's new time was recorded: not read again, still the same lastmod.
    let report = build(&coll, &publish, &[]);
    assert_eq!(report["hashed_files"], 0);
    assert_eq!(lastmods(), second);
}

#[test]
fn the_open_change_list_grows_run_by_run_and_closes_when_full() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 5);
    let args = ["--max-entries", "3"];
    build(&coll, &publish, &args);
    // One change per run, three in the fifth: the open list's entries are carried from
    // run to run in its document; a full list closes with them (the fourth run's close),
    // or with them and this run's first (the fifth's).
    let mut expected = Vec::new();
    for run in 0..6 {
        let names: &[&str] = if run == 4 { &["", "b", "c"] } else { &[""] };
        for suffix in names {
            let name = format!("run-{run}{suffix}.txt");
            put(&coll, &name, b"x");
            expected.push(name);
        }
        build(&coll, &publish, &args);
        assert_eq!(validate(&publish).0, 0, "after run {run}");
    }
    let lists = change_lists(&publish);
    assert_eq!(sizes_and_listed(&lists), (vec![3, 3, 2], expected));

    // A run without changes leaves the open list as it was; one whose open list is not
    // what the state says is refused, naming it, and publishes nothing.
    let open = publish.join("resourcesync/changelist-00003.xml");
    let before = fs::read(&open).unwrap();
    build(&coll, &publish, &args);
    assert_eq!(fs::read(&open).unwrap(), before);
    let text = String::from_utf8(before).unwrap();
    let cut = text.find("<url>").unwrap();
    let damaged = [&text[..cut], &text[text.find("</url>\n").unwrap() + 7..]].concat();
    fs::remove_file(&open).unwrap();
    fs::write(&open, damaged).unwrap();
    let snapshot_before = snapshot(&publish);
    put(&coll, "one-more.txt", b"z");
    let out = resourcesync(
        &["build", "--base-url", BASE, "--max-entries", "3"]
            .iter()
            .copied()
            .chain([coll.to_str().unwrap(), publish.to_str().unwrap()])
            .collect::<Vec<_>>(),
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("changelist-00003.xml")
            && stderr.contains("1 entries where the state says 2"),
        "{stderr}"
    );
    assert_eq!(snapshot(&publish), snapshot_before);
}

#[test]
fn an_incremental_resource_list_is_the_one_a_fresh_build_writes() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 40);
    let args = ["--max-entries", "7"];
    build(&coll, &publish, &args);
    let is_touched = |e: &&mut Entry| e.loc.as_str().ends_with("/2.json");
    let listed_first = resource_list(&publish)
        .iter_mut()
        .find(is_touched)
        .and_then(|e| e.lastmod);
    // A fresh build lists the same, but for the touched file's lastmod: an incremental run
    // keeps the one it listed (the bytes did not change), which a fresh build, with no
    // history, cannot know.
    let fresh_build = |name: &str| {
        let fresh = root.path().join(name);
        build(&coll, &fresh, &args);
        let mut entries = resource_list(&fresh);
        entries.iter_mut().find(is_touched).unwrap().lastmod = listed_first;
        entries
    };

    // Updated, created, deleted, touched: the unchanged entries are copied from the last
    // run's Resource List, the others made again; a fresh build lists the same.
    put(&coll, "docs/file 1.html", b"an update");
    put(&coll, "new/created & escaped.txt", b"created");
    fs::remove_file(coll.join("top-0.txt")).unwrap();
    set_mtime(
        &coll.join("docs/été/2.json"),
        SystemTime::now() + Duration::from_secs(1),
    );
    build(&coll, &publish, &args);
    assert_eq!(validate(&publish).0, 0);
    assert_eq!(resource_list(&publish), fresh_build("fresh-1"));

    // A Resource List that is not as the state says (a part that lost an entry) is not
    // copied from: every entry is made again.
    let part = fs::read_dir(publish.join("resourcesync"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("resourcelist-g2-00002"))
        .unwrap();
    let text = fs::read_to_string(&part).unwrap();
    let (start, end) = (text.find("<url>").unwrap(), text.find("</url>\n").unwrap());
    let text = [&text[..start], &text[end + "</url>\n".len()..]].concat();
    fs::remove_file(&part).unwrap();
    fs::write(&part, text).unwrap();
    put(&coll, "docs/file 1.html", b"updated again");
    build(&coll, &publish, &args);
    assert_eq!(validate(&publish).0, 0);
    assert_eq!(resource_list(&publish), fresh_build("fresh-2"));
}

#[test]
fn a_lower_entry_limit_closes_the_open_list_as_it_was_written() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 3);
    build(&coll, &publish, &["--max-entries", "5"]);
    let mut expected = Vec::new();
    for run in 0..4 {
        let name = format!("run-{run}.txt");
        put(&coll, &name, b"x");
        expected.push(name);
        build(&coll, &publish, &["--max-entries", "5"]);
    }
    // The open list holds four entries; at a limit of two the next change closes it as
    // it is and opens another, run after run.
    for run in 4..7 {
        let name = format!("run-{run}.txt");
        put(&coll, &name, b"x");
        expected.push(name);
        build(&coll, &publish, &["--max-entries", "2"]);
        assert_eq!(validate(&publish).0, 0, "after run {run}");
    }
    let lists = change_lists(&publish);
    assert_eq!(sizes_and_listed(&lists), (vec![4, 2, 1], expected));
}

#[test]
fn a_full_change_list_index_moves_its_oldest_lists_to_the_archive() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 3);
    // Two entries to a document: a Change List holds two changes, the index two lists, a
    // part of the archive two lists.
    let args = ["--max-entries", "2"];
    build(&coll, &publish, &args);
    let mut expected = Vec::new();
    for run in 0..11 {
        let name = format!("run-{run}.txt");
        put(&coll, &name, b"x");
        expected.push(name);
        build(&coll, &publish, &args);
        assert_eq!(validate(&publish).0, 0, "after run {run}");
    }
    // Eleven changes make six lists, the last one open; the index holds the last two, the
    // archive the four before them, as an archive index over two parts.
    assert_eq!(
        document(&publish, "resourcesync/changelist.xml")
            .entries
            .len(),
        2
    );
    let archive = document(&publish, "resourcesync/changelist-archive.xml");
    assert_eq!(archive.head.kind(), DocumentKind::ChangeListArchiveIndex);
    assert_eq!(archive.entries.len(), 2);
    let lists = change_lists(&publish);
    assert_eq!(sizes_and_listed(&lists), (vec![2, 2, 2, 2, 2, 1], expected));
    assert!(lists[5].0.md.as_ref().unwrap().until.is_none());
    // The Capability List names the archive beside the Change List Index.
    let capabilities: Vec<(String, Option<Capability>)> =
        document(&publish, "resourcesync/capabilitylist.xml")
            .entries
            .iter()
            .map(|e| {
                (
                    local(e.loc.as_str()).to_owned(),
                    e.md.as_ref().and_then(|m| m.capability.clone()),
                )
            })
            .collect();
    assert!(
        capabilities.contains(&(
            "resourcesync/changelist-archive.xml".into(),
            Some(Capability::ChangeListArchive)
        )),
        "{capabilities:?}"
    );
    // The archive is written again by each run, its parts named after the run's
    // generation; the last generation's are kept for readers of its index, none older.
    let generations: std::collections::BTreeSet<String> =
        fs::read_dir(publish.join("resourcesync"))
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                let rest = name.strip_prefix("changelist-archive-g")?;
                Some(rest.split('-').next().unwrap().to_owned())
            })
            .collect();
    assert_eq!(generations.len(), 2, "{generations:?}");
}

#[test]
fn a_destination_far_behind_catches_up_through_the_archive() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish, dest) = (
        root.path().join("coll"),
        root.path().join("pub"),
        root.path().join("dest"),
    );
    collection(&coll, 4);
    // The server first, serving an empty directory that the build then turns into its
    // publication.
    fs::create_dir(&publish).unwrap();
    let (_server, base) = server::serve(&publish);
    let publish_at = || {
        let out = build_output_at(&base, &coll, &publish, &["--max-entries", "2"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let sync = |extra: &[&str]| {
        let mut args = vec!["sync", "--json", "--delete"];
        args.extend(extra);
        args.extend([base.as_str(), dest.to_str().unwrap()]);
        let out = resourcesync(&args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let summary: Value = serde_json::from_str(text.lines().last().unwrap_or("{}")).unwrap();
        (
            out.status.code(),
            summary["summary"].clone(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    publish_at();
    let (code, summary, stderr) = sync(&[]);
    assert_eq!(code, Some(0), "{summary} {stderr}");
    // Changes over eight runs: creates, an update, a delete; the lists the destination
    // needs move out of the index into the archive meanwhile.
    for run in 0..8 {
        put(
            &coll,
            &format!("new/run-{run}.txt"),
            format!("run {run}").as_bytes(),
        );
        if run == 3 {
            put(&coll, "new/run-0.txt", b"updated");
        }
        if run == 5 {
            fs::remove_file(coll.join("new/run-1.txt")).unwrap();
        }
        publish_at();
    }
    assert!(publish.join("resourcesync/changelist-archive.xml").exists());
    let (code, summary, stderr) = sync(&[]);
    assert_eq!(code, Some(0), "{summary} {stderr}");
    assert_eq!(summary["mode"], "incremental", "{summary}");
    assert!(summary["created"].as_u64().unwrap() >= 7, "{summary}");
    let (code, summary, stderr) = sync(&["--audit"]);
    assert_eq!(code, Some(0), "{summary} {stderr}");
    assert_eq!(summary["in_sync"], true, "{summary}");
    assert_eq!(fs::read(dest.join("new/run-0.txt")).unwrap(), b"updated");
    assert!(!dest.join("new/run-1.txt").exists());
}

#[test]
fn a_destination_catches_up_with_files_edited_between_builds() {
    // The resources are served live from the collection (through links): a file edited
    // after a build is served as nothing the publication lists until the next build.
    let root = tempfile::tempdir().unwrap();
    let (coll, publish, dest, fresh) = (
        root.path().join("coll"),
        root.path().join("pub"),
        root.path().join("dest"),
        root.path().join("fresh"),
    );
    let paths = collection(&coll, 6);
    fs::create_dir(&publish).unwrap();
    let (_server, base) = server::serve(&publish);
    let publish_at = || {
        let out = build_output_at(&base, &coll, &publish, &[]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let sync = |dest: &Path, extra: &[&str]| {
        let mut args = vec!["sync", "--json", "--delete"];
        args.extend(extra);
        args.extend([base.as_str(), dest.to_str().unwrap()]);
        let out = resourcesync(&args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let summary: Value = serde_json::from_str(text.lines().last().unwrap_or("{}")).unwrap();
        // With --json every event is a line of standard output: the problems too.
        let said = format!("{text}{}", String::from_utf8_lossy(&out.stderr));
        (out.status.code(), summary["summary"].clone(), said)
    };
    publish_at();
    put(&coll, &paths[0], b"edited after the first build");
    // The baseline says so, but keeps its checkpoint: the next run is incremental.
    let (code, summary, stderr) = sync(&dest, &[]);
    assert_eq!(code, Some(1), "{summary} {stderr}");
    assert_eq!(summary["mode"], "baseline", "{summary}");
    assert!(
        stderr.contains("\"kind\":\"changed-since-listed\""),
        "{summary} {stderr}"
    );
    assert_eq!(summary["failed"], 0, "{summary} {stderr}");
    // The next build lists the edit, with another one and a deletion; a file is edited
    // after it again.
    put(&coll, &paths[1], b"edited before the second build");
    fs::remove_file(coll.join(&paths[2])).unwrap();
    publish_at();
    put(&coll, &paths[3], b"edited after the second build");
    // Incremental: the edit the first baseline could not take, and the others listed.
    let (code, summary, stderr) = sync(&dest, &[]);
    assert_eq!(code, Some(0), "{summary} {stderr}");
    assert_eq!(summary["mode"], "incremental", "{summary} {stderr}");
    let local = |dest: &Path, path: &str| fs::read(dest.join(path)).ok();
    assert_eq!(
        local(&dest, &paths[0]).as_deref(),
        Some(&b"edited after the first build"[..])
    );
    assert_eq!(
        local(&dest, &paths[1]).as_deref(),
        Some(&b"edited before the second build"[..])
    );
    assert!(local(&dest, &paths[2]).is_none());
    // A new Destination alike: everything but the file edited after every list.
    let (code, summary, stderr) = sync(&fresh, &[]);
    assert_eq!(code, Some(1), "{summary} {stderr}");
    assert!(
        stderr.contains(&paths[3].replace(' ', "%20")),
        "{summary} {stderr}"
    );
    // Once the next build lists it, both converge and the audits find them in sync.
    publish_at();
    for dest in [&dest, &fresh] {
        let (code, summary, stderr) = sync(dest, &[]);
        assert_eq!(code, Some(0), "{summary} {stderr}");
        assert_eq!(summary["mode"], "incremental", "{summary}");
        let (code, summary, stderr) = sync(dest, &["--audit"]);
        assert_eq!(code, Some(0), "{summary} {stderr}");
        assert_eq!(summary["in_sync"], true, "{summary}");
        assert_eq!(
            local(dest, &paths[3]).as_deref(),
            Some(&b"edited after the second build"[..])
        );
    }
}

#[test]
fn a_period_closes_the_open_change_list_where_the_last_run_ended() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 5);
    let args = ["--changelist-period", "0"];
    let first = build(&coll, &publish, &args);
    put(&coll, "a.txt", b"a");
    let second = build(&coll, &publish, &args);
    put(&coll, "b.txt", b"b");
    build(&coll, &publish, &args);
    let lists = change_lists(&publish);
    assert_eq!(lists.len(), 2, "the second run's list closed at the third");
    let md = |e: &Entry| e.md.clone().unwrap();
    assert_eq!(md(&lists[0].0).from.unwrap().to_string(), first["at"]);
    assert_eq!(md(&lists[0].0).until.unwrap().to_string(), second["at"]);
    assert_eq!(md(&lists[1].0).from, md(&lists[0].0).until);
    assert_eq!(lists[0].1.len(), 1);
    assert_eq!(lists[1].1.len(), 1);
    assert_eq!(validate(&publish).0, 0);
}

/// Every file of the publication, by path, with its bytes (through the links).
fn snapshot(publish: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(publish)
        .follow_links(true)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(publish).unwrap().to_owned(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_failed_run_leaves_the_publication_as_it_was() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 20);
    build(&coll, &publish, &["--max-bytes", "4096"]);
    let before = snapshot(&publish);
    let link = fs::read_link(&publish).unwrap();

    // Everything of the next generation is written, and the switch fails: the place
    // where the new link is staged is taken by a directory (of files, so that it is not
    // removed as a link a killed run left).
    put(&coll, "new.txt", b"new");
    put(root.path(), ".pub.link/x", b"in the way");
    let out = build_output(&coll, &publish, &["--max-bytes", "4096"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(".pub.link") && stderr.contains("nothing published"),
        "{stderr}"
    );

    // The same link, the same files, and no leftover generation.
    assert_eq!(fs::read_link(&publish).unwrap(), link);
    assert_eq!(snapshot(&publish), before);
    let generations: Vec<_> = fs::read_dir(root.path().join(".pub.resourcesync"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "lock" && !n.ends_with(".made"))
        .collect();
    assert_eq!(generations, ["00001"]);

    assert!(
        !resource_list(&publish)
            .iter()
            .any(|e| e.loc.as_str().ends_with("new.txt"))
    );

    // Once the way is clear, the next run publishes.
    fs::remove_dir_all(root.path().join(".pub.link")).unwrap();
    let report = build(&coll, &publish, &["--max-bytes", "4096"]);
    assert_eq!(report["generation"], 2);
}

#[test]
fn readers_see_whole_publications_while_runs_switch_and_are_killed() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 2000);
    build(&coll, &publish, &["--max-entries", "500"]);

    // A reader follows Source Description -> Capability List -> Resource List (and its
    // parts) again and again; every document it reads must be whole and agree.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (publish, stop) = (publish.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && reads < 100_000 {
                let entries = resource_list(&publish);
                assert!(entries.len() >= 2000, "{} entries", entries.len());
                reads += 1;
            }
            reads
        })
    };
    for round in 0..6 {
        put(&coll, &format!("round/{round}.txt"), b"more");
        if round % 2 == 0 {
            build(&coll, &publish, &["--max-entries", "500"]);
        } else {
            // Killed at some point of its run: before or after its switch, the
            // publication is whole.
            let mut child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
                .args(["build", "--base-url", BASE, "--max-entries", "500"])
                .arg(&coll)
                .arg(&publish)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_millis(20 * round));
            let _ = child.kill();
            let _ = child.wait();
        }
        assert_eq!(validate(&publish).0, 0);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader
        .join()
        .expect("the reader saw only whole publications");
    assert!(reads > 0);
    // After the kills, a run still publishes every file.
    let report = build(&coll, &publish, &["--max-entries", "500"]);
    assert_eq!(report["resources"], 2006);
    assert_eq!(resource_list(&publish).len(), 2006);
}

#[test]
fn refuses_a_publish_directory_it_did_not_make_and_a_second_build() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 3);

    // A directory with someone's files is left alone.
    put(&publish, "theirs.txt", b"theirs");
    let out = build_output(&coll, &publish, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not publish"));
    assert_eq!(fs::read(publish.join("theirs.txt")).unwrap(), b"theirs");
    fs::remove_dir_all(&publish).unwrap();

    // An empty directory is taken.
    fs::create_dir(&publish).unwrap();
    build(&coll, &publish, &[]);

    // While another build holds the lock, a second one publishes nothing.
    let lock = fs::File::open(root.path().join(".pub.resourcesync/lock")).unwrap();
    lock.lock().unwrap();
    let out = build_output(&coll, &publish, &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another build"));
    lock.unlock().unwrap();
    assert_eq!(build(&coll, &publish, &[])["generation"], 2);

    // A base URL that is no directory's.
    let out = resourcesync(&[
        "build",
        "--base-url",
        "http://127.0.0.1:8080/no-slash",
        coll.to_str().unwrap(),
        publish.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-slash"));
}

/// Links and files planted where `build` keeps its own (issue 22): its generations'
/// directory, its lock, the place it stages its link, a generation's number. Each is
/// refused with an error naming it, and nothing is written through it, truncated or
/// removed. (The code before followed the first two, truncating the lock's target and
/// writing the generations into the linked directory, and removed the other two.)
#[test]
fn links_planted_where_build_keeps_its_files_are_refused_not_followed() {
    use std::os::unix::fs::symlink;
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let generations = root.path().join(".pub.resourcesync");
    collection(&coll, 3);
    let victim = root.path().join("victim.txt");
    fs::write(&victim, b"the user's").unwrap();
    let elsewhere = root.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let refused = |planted: &Path| {
        let out = build_output(&coll, &publish, &[]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}: {stderr}",
            planted.display()
        );
        assert!(
            stderr.contains(planted.to_str().unwrap()) && stderr.contains("nothing published"),
            "{stderr}"
        );
    };
    let is_empty = |dir: &Path| fs::read_dir(dir).unwrap().next().is_none();

    // The generations' directory a link to another directory: nothing is written there.
    symlink(&elsewhere, &generations).unwrap();
    refused(&generations);
    assert!(is_empty(&elsewhere));
    assert!(fs::symlink_metadata(&publish).is_err());
    fs::remove_file(&generations).unwrap();

    // The lock's path a link to the user's file, or to none: not truncated, not created.
    fs::create_dir(&generations).unwrap();
    let lock = generations.join("lock");
    symlink(&victim, &lock).unwrap();
    refused(&lock);
    assert_eq!(fs::read(&victim).unwrap(), b"the user's");
    fs::remove_file(&lock).unwrap();
    let through = root.path().join("made-through-the-link");
    symlink(&through, &lock).unwrap();
    refused(&lock);
    assert!(fs::symlink_metadata(&through).is_err());
    fs::remove_file(&lock).unwrap();

    // Published once; then a file of the user's, or a link of theirs, where the link is
    // staged: left as it is.
    assert_eq!(build(&coll, &publish, &[])["generation"], 1);
    let staged = root.path().join(".pub.link");
    fs::write(&staged, b"the user's").unwrap();
    refused(&staged);
    assert_eq!(fs::read(&staged).unwrap(), b"the user's");
    fs::remove_file(&staged).unwrap();
    symlink(&victim, &staged).unwrap();
    refused(&staged);
    assert_eq!(fs::read_link(&staged).unwrap(), victim);
    fs::remove_file(&staged).unwrap();

    // A link at the next generation's number: not removed, nothing written through it.
    let next = generations.join("00002");
    symlink(&elsewhere, &next).unwrap();
    refused(&next);
    assert_eq!(fs::read_link(&next).unwrap(), elsewhere);
    assert!(is_empty(&elsewhere));
    fs::remove_file(&next).unwrap();

    // Once the way is clear, the next run publishes.
    assert_eq!(build(&coll, &publish, &[])["generation"], 2);
    assert_eq!(fs::read(&victim).unwrap(), b"the user's");
}

/// `resourcesync build` of `collection` into `publish` (`--json` if `json`) as a user who
/// cannot read what the test makes private (mode 000): the test's own user, unless that is
/// root, who reads any file whatever its mode; then nobody (65534), through `setpriv`.
fn build_unprivileged(collection: &Path, publish: &Path, json: bool) -> Output {
    use std::os::unix::fs::MetadataExt;
    let mut command = if fs::metadata(collection).unwrap().uid() == 0 {
        let setpriv = Command::new("setpriv").arg("--help").output();
        assert!(
            setpriv.is_ok_and(|o| o.status.success()),
            "running as root, the test needs setpriv (util-linux) to read as another user"
        );
        let mut command = Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups"]);
        command.arg(env!("CARGO_BIN_EXE_resourcesync"));
        command
    } else {
        Command::new(env!("CARGO_BIN_EXE_resourcesync"))
    };
    command.args(["build", "--base-url", BASE]);
    if json {
        command.arg("--json");
    }
    command.arg(collection).arg(publish);
    command.output().expect("run resourcesync")
}

/// A file and a directory that cannot be read (issue 22: one unreadable file made every
/// build fail, exit 2, nothing published): each is skipped with its error, in the text
/// output and in --json, the rest is published, the exit status is 1; once readable, the
/// next run publishes them (exit 0). Fails on the code before (exit 2).
#[test]
fn a_file_or_directory_that_cannot_be_read_is_skipped_and_the_rest_published() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mode = |path: &Path, mode| fs::set_permissions(path, fs::Permissions::from_mode(mode));
    let root = tempfile::tempdir().unwrap();
    // Another user walks to the collection and writes the publication.
    mode(root.path(), 0o755).unwrap();
    let (coll, work) = (root.path().join("coll"), root.path().join("work"));
    put(&coll, "a.txt", b"readable");
    put(&coll, "docs/b.txt", b"readable too");
    put(&coll, "docs/locked.txt", b"private");
    put(&coll, "closed/c.txt", b"private too");
    fs::create_dir(&work).unwrap();
    if fs::metadata(&work).unwrap().uid() == 0 {
        std::os::unix::fs::chown(&work, Some(65534), Some(65534)).unwrap();
    }
    let publish = work.join("pub");
    mode(&coll.join("docs/locked.txt"), 0o000).unwrap();
    mode(&coll.join("closed"), 0o000).unwrap();

    let out = build_unprivileged(&coll, &publish, true);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(
        (report["resources"].as_u64(), report["unreadable"].as_u64()),
        (Some(2), Some(2))
    );
    let skipped: Vec<(&str, &str, &str)> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let text = |key| s[key].as_str().unwrap_or_default();
            (text("path"), text("reason"), text("error"))
        })
        .collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    for ((path, reason, error), expected) in skipped.iter().zip(["closed", "docs/locked.txt"]) {
        assert_eq!((*path, *reason), (expected, "cannot be read"));
        assert!(error.contains("ermission denied"), "{error}");
    }
    let listed: Vec<String> = resource_list(&publish)
        .iter()
        .map(|e| local(e.loc.as_str()).to_owned())
        .collect();
    assert_eq!(listed, ["a.txt", "docs/b.txt"]);
    // Not served through a link to its directory either.
    assert!(fs::symlink_metadata(publish.join("docs/locked.txt")).is_err());
    assert!(fs::symlink_metadata(publish.join("closed")).is_err());
    assert_eq!(
        fs::read(publish.join("docs/b.txt")).unwrap(),
        b"readable too"
    );
    assert_eq!(validate(&publish).0, 0);

    // The text output names each with its error, and says what is missing.
    let out = build_unprivileged(&coll, &publish, false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("skipped docs/locked.txt: cannot be read: Permission denied")
            && stderr.contains("skipped closed: cannot be read: Permission denied")
            && stderr.contains("published without 2 files or directories that could not be read"),
        "{stderr}"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("2 skipped (2 unreadable)"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    // Readable again: published, and the run is a success.
    mode(&coll.join("docs/locked.txt"), 0o644).unwrap();
    mode(&coll.join("closed"), 0o755).unwrap();
    let out = build_unprivileged(&coll, &publish, true);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (report["resources"].as_u64(), report["created"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(report["unreadable"], 0);
}

#[test]
fn a_skipped_name_that_is_not_utf8_is_reported_in_json_without_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "ok.txt", b"ok");
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(coll.join(name), b"latin-1").unwrap();
    // `build` parses its one JSON line, and fails on any other status (it was 101, a
    // panic, after the switch: issue 22).
    let report = build(&coll, &publish, &[]);
    assert_eq!(report["resources"], 1);
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert_eq!(skipped[0]["path"], "caf\u{fffd}.txt");
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
    let report = build(&coll, &publish, &["--resource-dump"]);
    assert_eq!(report["resources"], 3);
    let mut skipped: Vec<String> = report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .collect();
    skipped.sort();
    assert_eq!(
        skipped,
        [".secret", "docs/.git", "docs/link", "resourcesync"]
    );
    let entries = resource_list(&publish);
    assert_eq!(entries.len(), 3);
    assert_eq!(validate(&publish).0, 0);
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

#[test]
fn a_resource_dump_is_kept_by_later_runs_unless_a_new_one_is_asked_for() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 10);
    build(&coll, &publish, &["--resource-dump"]);
    let first = document(&publish, "resourcesync/resourcedump.xml");
    put(&coll, "later.txt", b"later");
    build(&coll, &publish, &["--resource-dump"]);
    let kept = document(&publish, "resourcesync/resourcedump.xml");
    assert_eq!(kept, first, "the dump is carried over");
    // The Change Lists cover from the dump's time: the new file is listed as created.
    let dump_at = first.head.md.at.unwrap();
    let lists = change_lists(&publish);
    assert!(!dump_at.precedes(&lists[0].0.md.clone().unwrap().from.unwrap()));
    assert!(
        lists[0]
            .1
            .iter()
            .any(|e| e.loc.as_str().ends_with("later.txt"))
    );
    assert_eq!(validate(&publish).0, 0);

    build(&coll, &publish, &["--new-resource-dump"]);
    let new = document(&publish, "resourcesync/resourcedump.xml");
    assert!(first.head.md.at.unwrap().precedes(&new.head.md.at.unwrap()));
    assert_eq!(package(&publish, &new.entries[0]).entries.len(), 11);
    assert_eq!(validate(&publish).0, 0);
}

/// A Resource Dump and a Change Dump holding a 64 MiB sparse file (zeros, which deflate
/// more than a thousand times): our own `validate` passes every package, and each reads
/// back verified (issue 22: "bitstream zeros.bin inflates more than 1000 times its
/// compressed size"; the manifest declares the length, which the reader holds it to).
/// Fails on the code before (validate: 1 unreadable).
#[test]
fn dumps_of_a_sparse_file_of_zeros_validate_and_read_back() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "a.txt", b"a");
    build(&coll, &publish, &["--resource-dump", "--change-dump"]);
    fs::File::create(coll.join("zeros.bin"))
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    build(&coll, &publish, &["--new-resource-dump", "--change-dump"]);
    assert_eq!(validate(&publish).0, 0);
    for dump in ["resourcedump", "changedump"] {
        let dump = document(&publish, &format!("resourcesync/{dump}.xml"));
        let zeros: Vec<Option<u64>> = dump
            .entries
            .iter()
            .flat_map(|e| package(&publish, e).entries)
            .filter(|e| e.loc.as_str().ends_with("zeros.bin"))
            .map(|e| e.length())
            .collect();
        assert_eq!(zeros, [Some(64 << 20)]);
    }
}

/// Empty documents (issue 22; the Sitemap schema wants at least one `<url>`): a Resource
/// Dump with nothing to package and a Change Dump with no package are omitted, and not in
/// the Capability List (a dump "points at one or more packages", section 5.1); the empty
/// Resource List and the open Change List with no entry stay (section 7: "zero or more";
/// the Change Lists are contiguous, 12.1). The next run with resources writes both dumps.
/// Fails on the code before (both dumps written with no `<url>`, and listed).
#[test]
fn an_empty_dump_is_omitted_and_not_listed_an_empty_list_stays() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    fs::create_dir(&coll).unwrap();
    let args = ["--resource-dump", "--change-dump"];
    let capabilities = || -> Vec<Capability> {
        document(&publish, "resourcesync/capabilitylist.xml")
            .entries
            .iter()
            .map(|e| e.md.as_ref().unwrap().capability.clone().unwrap())
            .collect()
    };
    build(&coll, &publish, &args);
    for name in ["resourcedump.xml", "changedump.xml"] {
        assert!(!publish.join("resourcesync").join(name).exists(), "{name}");
    }
    assert_eq!(
        capabilities(),
        [Capability::ResourceList, Capability::ChangeList]
    );
    assert!(resource_list(&publish).is_empty());
    let lists = change_lists(&publish);
    assert_eq!((lists.len(), lists[0].1.len()), (1, 0));
    assert_eq!(validate(&publish).0, 0);

    // An unchanged run: still nothing to package.
    let report = build(&coll, &publish, &args);
    assert_eq!(report["generation"], 2);
    assert!(!publish.join("resourcesync/resourcedump.xml").exists());
    assert!(!publish.join("resourcesync/changedump.xml").exists());

    put(&coll, "a.txt", b"a");
    build(&coll, &publish, &args);
    assert_eq!(
        capabilities(),
        [
            Capability::ResourceList,
            Capability::ResourceDump,
            Capability::ChangeList,
            Capability::ChangeDump
        ]
    );
    for dump in ["resourcedump", "changedump"] {
        let dump = document(&publish, &format!("resourcesync/{dump}.xml"));
        assert_eq!(dump.entries.len(), 1);
        assert_eq!(package(&publish, &dump.entries[0]).entries.len(), 1);
    }
    assert_eq!(validate(&publish).0, 0);
}

#[test]
fn a_trailing_slash_a_new_base_url_and_a_change_dump_switched_off_and_on() {
    let root = tempfile::tempdir().unwrap();
    let coll = root.path().join("coll");
    collection(&coll, 6);
    // `pub/`, as a shell completes it, is the same publish directory.
    let slashed = PathBuf::from(format!("{}/", root.path().join("pub").display()));
    let publish = root.path().join("pub");
    build(&coll, &slashed, &["--change-dump", "--max-entries", "1"]);
    put(&coll, "one.txt", b"1");
    put(&coll, "two.txt", b"2");
    assert_eq!(
        build(&coll, &slashed, &["--change-dump", "--max-entries", "1"])["generation"],
        2
    );
    assert!(fs::symlink_metadata(&publish).unwrap().is_symlink());
    assert_eq!(change_lists(&publish).len(), 2);

    // A run without the Change Dump drops it; on again, it starts afresh from that run:
    // no package claims an interval whose changes it lacks.
    put(&coll, "three.txt", b"3");
    build(&coll, &publish, &["--max-entries", "1"]);
    assert!(!publish.join("resourcesync/changedump.xml").exists());
    put(&coll, "four.txt", b"4");
    let fourth = build(&coll, &publish, &["--change-dump", "--max-entries", "1"]);
    let dump = document(&publish, "resourcesync/changedump.xml");
    let third_at = dump.head.md.from.unwrap();
    assert_eq!(dump.entries.len(), 1);
    let md = dump.entries[0].md.clone().unwrap();
    assert_eq!(md.from, Some(third_at));
    assert_eq!(md.until.unwrap().to_string(), fourth["at"]);
    let manifest = package(&publish, &dump.entries[0]);
    let changed: Vec<&str> = manifest.entries.iter().map(|e| e.loc.as_str()).collect();
    assert_eq!(changed, [format!("{BASE}four.txt")]);
    assert_eq!(validate(&publish).0, 0);
    // Packages past the entry limit: the Change Dump becomes an index over parts, one
    // package each, contiguous, written again by each run (no parts older than the last
    // generation's).
    for name in ["five.txt", "six.txt"] {
        put(&coll, name, b"5");
        build(&coll, &publish, &["--change-dump", "--max-entries", "1"]);
    }
    let index = document(&publish, "resourcesync/changedump.xml");
    assert_eq!(index.head.kind(), DocumentKind::ChangeDumpIndex);
    let packages: Vec<Entry> = index
        .entries
        .iter()
        .flat_map(|part| {
            let part = document(&publish, local(part.loc.as_str()));
            assert_eq!(part.entries.len(), 1);
            part.entries
        })
        .collect();
    assert_eq!(packages.len(), 3);
    for pair in packages.windows(2) {
        let md = |e: &Entry| e.md.clone().unwrap();
        assert_eq!(md(&pair[0]).until, md(&pair[1]).from);
    }
    assert_eq!(package(&publish, &packages[2]).entries.len(), 1);
    let part_generations: std::collections::BTreeSet<String> =
        fs::read_dir(publish.join("resourcesync"))
            .unwrap()
            .filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                Some(
                    name.strip_prefix("changedump-g")?
                        .split('-')
                        .next()?
                        .to_owned(),
                )
            })
            .collect();
    assert_eq!(part_generations.len(), 2, "{part_generations:?}");
    assert_eq!(validate(&publish).0, 0);

    // Another base URL: a publication afresh, nothing of the old one's lists carried.
    let out = resourcesync(&[
        "build",
        "--json",
        "--base-url",
        "http://127.0.0.1:9090/",
        coll.to_str().unwrap(),
        publish.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let names: Vec<String> = fs::read_dir(publish.join("resourcesync"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("change"))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}"); // the index and one open list
    let lists = document(&publish, "resourcesync/changelist.xml");
    assert!(
        lists.entries[0]
            .loc
            .as_str()
            .starts_with("http://127.0.0.1:9090/")
    );
}

#[test]
fn a_damaged_state_is_named_and_nothing_is_published() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 5);
    build(&coll, &publish, &[]);
    let before = snapshot(&publish);
    let resources = publish.join(".resourcesync/resources.2.postcard");
    let mut bytes = fs::read(&resources).unwrap();
    bytes.truncate(bytes.len() / 2);
    fs::write(&resources, bytes).unwrap();
    put(&coll, "new.txt", b"new");
    let out = build_output(&coll, &publish, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("resources.2.postcard") && stderr.contains("unreadable state"),
        "{stderr}"
    );
    let mut after = snapshot(&publish);
    after.remove(Path::new(".resourcesync/resources.2.postcard"));
    let mut before = before;
    before.remove(Path::new(".resourcesync/resources.2.postcard"));
    assert_eq!(after, before);
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
    let args = [
        "--list",
        list.to_str().unwrap(),
        "--resource-dump",
        "--change-dump",
    ];
    let report = build(&coll, &publish, &args);
    assert_eq!(report["resources"], 2);
    let entries = resource_list(&publish);
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
    let dump = document(&publish, "resourcesync/resourcedump.xml");
    let manifest = package(&publish, &dump.entries[0]);
    let paths: Vec<String> = manifest
        .entries
        .iter()
        .map(|e| e.md.as_ref().unwrap().path.as_ref().unwrap().to_string())
        .collect();
    assert_eq!(
        paths,
        ["/cdn.example.org/a.txt", "/example.net/pages/b.html"]
    );
    assert_eq!(validate(&publish).0, 0);

    // Changes by the list and by the files.
    put(&coll, "a.txt", b"alpha, again");
    fs::write(
        &list,
        "http://cdn.example.org/a.txt a.txt\nhttp://cdn.example.org/c c.bin\n",
    )
    .unwrap();
    let report = build(&coll, &publish, &args);
    assert_eq!(
        (&report["created"], &report["updated"], &report["deleted"]),
        (&1.into(), &1.into(), &1.into())
    );
    let changes: BTreeMap<String, Change> = change_lists(&publish)
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
    assert_eq!(validate(&publish).0, 0);

    // A wrong line is named, and nothing is published.
    fs::write(
        &list,
        "http://cdn.example.org/a.txt a.txt\nftp://x.example/y a.txt\n",
    )
    .unwrap();
    let out = build_output(&coll, &publish, &args);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("line 2") && stderr.contains("not an http"),
        "{stderr}"
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
        let out = build_output(&coll, &publish, &args);
        assert_eq!(out.status.code(), Some(2), "{file}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("line {line}")) && stderr.contains("relative to"),
            "{file}: {stderr}"
        );
        assert!(!stderr.contains("secret"));
    }
}

#[test]
fn help_says_what_build_writes_its_options_output_and_exit_status() {
    help::assert_help(
        &[&["build", "--help"], &["help", "build"]],
        &[
            "Usage: resourcesync build [OPTIONS] --base-url <URL> <COLLECTION-DIR> <PUBLISH-DIR>",
            "--resource-dump",
            "--change-dump",
            "--max-entries <N>",
            "--changelist-period <SECONDS>",
            "--list <FILE>",
            "--json",
            "\"generation\", \"at\", \"resources\"",
            "Exit status:\n  0  published",
            "  1  published, without the files or directories that could not be read",
            "\"unreadable\"",
            "  2  nothing published",
            "change time and inode",
            "(<number>.made)",
            "%5C in its URI",
            "Names are printed escaped",
            "reached through no symbolic link",
        ],
    );
    // A wrong command line is exit status 2, and says what is wrong.
    let out = resourcesync(&["build", "--max-entries", "0", "--base-url", BASE, "a", "b"]);
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("--max-entries"), "{text}");
    let out = resourcesync(&["build", "a", "b"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--base-url <URL>"));
}

/// Every class of name a POSIX file system holds and another would not (names that
/// differ only in case, names Windows reserves, a trailing dot, a colon, a drive letter,
/// two Unicode normalization forms of one name) goes through build, serve, sync and an
/// audit: each is stored, under its own name, and DIR is in sync (issue 22: 7 of 16 were
/// missing and the sync said complete).
#[test]
fn names_of_every_class_go_through_build_serve_sync_and_audit() {
    let dir = tempfile::tempdir().unwrap();
    let (coll, publish, dest) = (
        dir.path().join("coll"),
        dir.path().join("pub"),
        dir.path().join("dest"),
    );
    let names = [
        "case/Readme.txt",
        "case/README.TXT",
        "windows/CON",
        "windows/aux.txt",
        "windows/trailing.",
        "windows/trailing space ",
        "windows/a:b",
        "windows/c:drive",
        "windows/what?.txt",
        "windows/<pipe|star*>",
        "windows/back\\slash",
        "unicode/caf\u{e9}.txt",
        "unicode/cafe\u{301}.txt",
    ];
    for (i, name) in names.iter().enumerate() {
        put(&coll, name, format!("file {i}").as_bytes());
    }
    fs::create_dir(&publish).unwrap();
    let (_server, base) = server::serve(&publish);
    let out = build_output_at(&base, &coll, &publish, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each name a sync elsewhere would refuse is named, and only those.
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut warned: Vec<&str> = report["not_portable"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["path"].as_str().unwrap())
        .collect();
    warned.dedup();
    let mut expected: Vec<&str> = names
        .iter()
        .copied()
        // Of two names that fold alike, the second in byte order.
        .filter(|n| !matches!(*n, "case/README.TXT" | "unicode/cafe\u{301}.txt"))
        .collect();
    expected.sort_unstable();
    assert_eq!(warned, expected);
    let sync = |extra: &[&str]| {
        let mut args = vec!["sync"];
        args.extend(extra);
        args.extend([base.as_str(), dest.to_str().unwrap()]);
        resourcesync(&args)
    };
    let out = sync(&[]);
    let text = |out: &Output| {
        format!(
            "{:?}\n{}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with(&format!("baseline: {} created", names.len())),
        "{}",
        text(&out)
    );
    for (i, name) in names.iter().enumerate() {
        // A backslash is stored as `%5C`, as the client writes every character some
        // system takes for a separator.
        let name = name.replace('\\', "%5C");
        assert_eq!(
            fs::read(dest.join(&name)).ok(),
            Some(format!("file {i}").into_bytes()),
            "{name:?}"
        );
    }
    let out = sync(&["--audit"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(", in sync"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_collection_that_emptied_is_refused_unless_asked_for_and_the_publication_kept() {
    // An empty directory in place of the collection (a wrong path, a disk not mounted)
    // would have every Destination that deletes delete everything.
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let empty = root.path().join("empty");
    fs::create_dir(&empty).unwrap();
    put(&coll, "a.txt", b"a");
    put(&coll, "d/b.txt", b"b");
    build(&coll, &publish, &[]);
    let out = build_output(&empty, &publish, &[]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("nothing to publish, where the publication lists 2 resources")
            && stderr.contains("--allow-empty"),
        "{stderr}"
    );
    assert_eq!(resource_list(&publish).len(), 2);
    assert!(change_lists(&publish).iter().all(|(_, c)| c.is_empty()));
    // A list that lists nothing: the list is named.
    let list = root.path().join("list.txt");
    fs::write(&list, "# nothing yet\n").unwrap();
    let out = build_output(&coll, &publish, &["--list", list.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}: nothing to publish", list.display())),
        "{stderr}"
    );
    // Asked for: both listed as deleted.
    let report = build(&empty, &publish, &["--allow-empty"]);
    assert_eq!(
        (report["generation"].as_u64(), report["deleted"].as_u64()),
        (Some(2), Some(2)),
        "{report}"
    );
    assert!(resource_list(&publish).is_empty());
    // A collection that was empty from the start is no mistake.
    let fresh = root.path().join("fresh");
    build(&empty, &fresh, &[]);
    build(&empty, &fresh, &[]);
}
