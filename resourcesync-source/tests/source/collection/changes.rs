//! Incremental runs: what is read again, what is listed as changed, and how the Change
//! Lists grow, close and move to the archive.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::time::{Duration, SystemTime};

use resourcesync_model::{Capability, Change, DocumentKind, Entry};
use resourcesync_testkit::publication::{digests, percent_decode};

use super::{build, generated, local, options, publication, put, refused, set_mtime, settle};

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

#[test]
fn an_incremental_run_lists_the_changes_and_reads_only_what_changed() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 40);
    settle();
    let options = options().with_max_entries(2).with_change_dump(true);
    build(&coll, &publish, &options);

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

    let report = build(&coll, &publish, &options);
    assert_eq!(report.generation, 2);
    assert_eq!(
        (
            report.created,
            report.updated,
            report.deleted,
            report.hashed_files
        ),
        (1, 2, 1, 4),
        "{report}"
    );
    let p = publication(&publish);
    p.validate();

    // Four changes, two per list: the first list closed, the second open, contiguous.
    let lists = p.change_lists();
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
    let entries = p.resource_list();
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
    let dump = p.document("resourcesync/changedump.xml");
    assert!(!dump.entries.is_empty());
    let packaged: usize = dump
        .entries
        .iter()
        .map(|e| p.package(e).entries.len())
        .sum();
    assert_eq!(packaged, 4);

    // Nothing changed: nothing read, nothing listed, the lists as they were.
    let report = build(&coll, &publish, &options);
    assert_eq!(report.hashed_files, 0);
    assert_eq!(report.created, 0);
    assert_eq!(p.change_lists().len(), 2);
    p.validate();
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
    let p = publication(&publish);
    let lastmods = || -> BTreeMap<String, String> {
        p.resource_list()
            .iter()
            .map(|e| {
                (
                    local(e.loc.as_str()).to_owned(),
                    e.lastmod.unwrap().to_string(),
                )
            })
            .collect()
    };
    build(&coll, &publish, &options());
    let first = lastmods();
    assert_eq!(first["touched.txt"], "2020-09-13T12:26:40Z");

    set_mtime(&coll.join("touched.txt"), t0 + Duration::from_secs(3600));
    put(&coll, "updated.txt", b"new bytes");
    set_mtime(&coll.join("updated.txt"), t0 + Duration::from_secs(7200));
    settle();
    let report = build(&coll, &publish, &options());
    let counts = [
        report.created,
        report.updated,
        report.deleted,
        report.hashed_files,
    ];
    assert_eq!(counts, [0, 1, 0, 2], "{report}");
    let second = lastmods();
    assert_eq!(second["touched.txt"], first["touched.txt"]);
    assert_eq!(second["updated.txt"], "2020-09-13T14:26:40Z");

    // What a Destination holds after the first run, with the changes applied, is the
    // Resource List.
    let mut followed = first;
    for (_, entries) in p.change_lists() {
        for e in entries {
            let lastmod = e.lastmod.unwrap().to_string();
            followed.insert(local(e.loc.as_str()).to_owned(), lastmod);
        }
    }
    assert_eq!(followed, second);
    p.validate();

    // The touched file's new time was recorded: not read again, still the same lastmod.
    let report = build(&coll, &publish, &options());
    assert_eq!(report.hashed_files, 0);
    assert_eq!(lastmods(), second);
}

/// A file rewritten with its size and modification time kept (`cp -p`, `rsync -t`,
/// `touch -r`) is read again and published as updated: its change time and inode say
/// what its size and time do not. Fails on the code before: the old digests stayed
/// published and every Destination failed the hash check on the file.
#[test]
fn a_rewrite_that_keeps_size_and_time_is_an_update() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_600_000_000);
    for name in ["in-place.txt", "renamed.txt", "kept.txt"] {
        put(&coll, name, b"first bytes");
        set_mtime(&coll.join(name), t0);
    }
    // Past the file system clock's granularity, so that the files are not racy.
    settle();
    build(&coll, &publish, &options());

    // `cp -p`: rewritten in place, its time set back.
    fs::write(coll.join("in-place.txt"), b"other bytes").unwrap();
    set_mtime(&coll.join("in-place.txt"), t0);
    // `rsync -t`: a new file with the time set back, renamed over the old one.
    put(&coll, ".renamed.tmp", b"newer bytes");
    set_mtime(&coll.join(".renamed.tmp"), t0);
    fs::rename(coll.join(".renamed.tmp"), coll.join("renamed.txt")).unwrap();
    settle();
    let report = build(&coll, &publish, &options());
    let counts = [
        report.created,
        report.updated,
        report.deleted,
        report.hashed_files,
    ];
    assert_eq!(counts, [0, 2, 0, 2], "{report}");
    let list = publication(&publish).resource_list();
    for (name, bytes) in [
        ("in-place.txt", &b"other bytes"[..]),
        ("renamed.txt", b"newer bytes"),
        ("kept.txt", b"first bytes"),
    ] {
        let entry = list
            .iter()
            .find(|e| e.loc.as_str().ends_with(name))
            .unwrap();
        assert_eq!(
            digests(bytes).mismatch(entry.hashes().unwrap()),
            None,
            "{name}"
        );
    }
    // Nothing changed since: nothing read.
    let report = build(&coll, &publish, &options());
    assert_eq!(report.hashed_files, 0, "{report}");
}

#[test]
fn the_open_change_list_grows_run_by_run_and_closes_when_full() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 5);
    let options = options().with_max_entries(3);
    build(&coll, &publish, &options);
    let p = publication(&publish);
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
        build(&coll, &publish, &options);
        p.validate();
    }
    let lists = p.change_lists();
    assert_eq!(sizes_and_listed(&lists), (vec![3, 3, 2], expected));

    // A run without changes leaves the open list as it was; one whose open list is not
    // what the state says is refused, naming it, and publishes nothing.
    let open = publish.join("resourcesync/changelist-00003.xml");
    let before = fs::read(&open).unwrap();
    build(&coll, &publish, &options);
    assert_eq!(fs::read(&open).unwrap(), before);
    let text = String::from_utf8(before).unwrap();
    let cut = text.find("<url>").unwrap();
    let damaged = [&text[..cut], &text[text.find("</url>\n").unwrap() + 7..]].concat();
    fs::remove_file(&open).unwrap();
    fs::write(&open, damaged).unwrap();
    let snapshot_before = p.snapshot();
    put(&coll, "one-more.txt", b"z");
    let error = refused(&coll, &publish, &options).to_string();
    assert!(
        error.contains("changelist-00003.xml")
            && error.contains("1 entries where the state says 2"),
        "{error}"
    );
    assert_eq!(p.snapshot(), snapshot_before);
}

#[test]
fn an_incremental_resource_list_is_the_one_a_fresh_build_writes() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 40);
    let options = options().with_max_entries(7);
    build(&coll, &publish, &options);
    let p = publication(&publish);
    let is_touched = |e: &&mut Entry| e.loc.as_str().ends_with("/2.json");
    let listed_first = p
        .resource_list()
        .iter_mut()
        .find(is_touched)
        .and_then(|e| e.lastmod);
    // A fresh build lists the same, but for the touched file's lastmod: an incremental run
    // keeps the one it listed (the bytes did not change), which a fresh build, with no
    // history, cannot know.
    let fresh_build = |name: &str| {
        let fresh = root.path().join(name);
        build(&coll, &fresh, &options);
        let mut entries = publication(&fresh).resource_list();
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
    build(&coll, &publish, &options);
    p.validate();
    assert_eq!(p.resource_list(), fresh_build("fresh-1"));

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
    build(&coll, &publish, &options);
    p.validate();
    assert_eq!(p.resource_list(), fresh_build("fresh-2"));
}

#[test]
fn a_lower_entry_limit_closes_the_open_list_as_it_was_written() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 3);
    build(&coll, &publish, &options().with_max_entries(5));
    let mut expected = Vec::new();
    for run in 0..4 {
        let name = format!("run-{run}.txt");
        put(&coll, &name, b"x");
        expected.push(name);
        build(&coll, &publish, &options().with_max_entries(5));
    }
    // The open list holds four entries; at a limit of two the next change closes it as
    // it is and opens another, run after run.
    let p = publication(&publish);
    for run in 4..7 {
        let name = format!("run-{run}.txt");
        put(&coll, &name, b"x");
        expected.push(name);
        build(&coll, &publish, &options().with_max_entries(2));
        p.validate();
    }
    let lists = p.change_lists();
    assert_eq!(sizes_and_listed(&lists), (vec![4, 2, 1], expected));
}

#[test]
fn a_full_change_list_index_moves_its_oldest_lists_to_the_archive() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 3);
    // Two entries to a document: a Change List holds two changes, the index two lists, a
    // part of the archive two lists.
    let options = options().with_max_entries(2);
    build(&coll, &publish, &options);
    let p = publication(&publish);
    let mut expected = Vec::new();
    for run in 0..11 {
        let name = format!("run-{run}.txt");
        put(&coll, &name, b"x");
        expected.push(name);
        build(&coll, &publish, &options);
        p.validate();
    }
    // Eleven changes make six lists, the last one open; the index holds the last two, the
    // archive the four before them, as an archive index over two parts.
    assert_eq!(p.document("resourcesync/changelist.xml").entries.len(), 2);
    let archive = p.document("resourcesync/changelist-archive.xml");
    assert_eq!(archive.head.kind(), DocumentKind::ChangeListArchiveIndex);
    assert_eq!(archive.entries.len(), 2);
    let lists = p.change_lists();
    assert_eq!(sizes_and_listed(&lists), (vec![2, 2, 2, 2, 2, 1], expected));
    assert!(lists[5].0.md.as_ref().unwrap().until.is_none());
    // The Capability List names the archive beside the Change List Index.
    let capabilities: Vec<(String, Option<Capability>)> = p
        .document("resourcesync/capabilitylist.xml")
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
    assert_eq!(generations_of(&publish, "changelist-archive-g").len(), 2);
}

/// The generations of the parts in `publish`'s `resourcesync/` whose names start with
/// `prefix` (`changedump-g`: `changedump-g00003-00001.xml`, ...).
pub(super) fn generations_of(publish: &std::path::Path, prefix: &str) -> BTreeSet<String> {
    fs::read_dir(publish.join("resourcesync"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            let rest = name.strip_prefix(prefix)?;
            Some(rest.split('-').next()?.to_owned())
        })
        .collect()
}

#[test]
fn a_period_closes_the_open_change_list_where_the_last_run_ended() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 5);
    let options = options().with_changelist_period(Duration::ZERO);
    let first = build(&coll, &publish, &options);
    put(&coll, "a.txt", b"a");
    let second = build(&coll, &publish, &options);
    put(&coll, "b.txt", b"b");
    build(&coll, &publish, &options);
    let p = publication(&publish);
    let lists = p.change_lists();
    assert_eq!(lists.len(), 2, "the second run's list closed at the third");
    let md = |e: &Entry| e.md.clone().unwrap();
    assert_eq!(
        md(&lists[0].0).from.unwrap().to_string(),
        first.at.to_string()
    );
    assert_eq!(
        md(&lists[0].0).until.unwrap().to_string(),
        second.at.to_string()
    );
    assert_eq!(md(&lists[1].0).from, md(&lists[0].0).until);
    assert_eq!(lists[0].1.len(), 1);
    assert_eq!(lists[1].1.len(), 1);
    p.validate();
}
