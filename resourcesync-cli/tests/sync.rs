//! `resourcesync sync` end to end: the command against a Source served over HTTP on
//! 127.0.0.1 by the test (axum), with faults injected by the server. The scenarios every
//! driver must pass are written once, in `resourcesync-testkit`; the `sync-ureq` example
//! runs them too.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use resourcesync_testkit::driver::{Driver, populate, text};
use resourcesync_testkit::served::{Served, collect};
use resourcesync_testkit::source::{Response, Source};

#[path = "common/help.rs"]
mod help;

fn driver() -> Driver {
    Driver::new(
        "resourcesync sync",
        env!("CARGO_BIN_EXE_resourcesync"),
        &["sync"],
    )
}

fn sync(args: &[&str]) -> Output {
    driver().run(args)
}

resourcesync_testkit::driver_tests!(driver());

#[test]
fn baseline_then_incremental_then_audit() {
    let served = Served::start(|s| {
        populate(s, 40);
        s.publish.list_part = 15;
        s.publish.change_part = 4;
    });
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let d = d.to_str().unwrap();
    let out = sync(&[&served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).starts_with("baseline: 41 created"),
        "{}",
        text(&out)
    );
    served.equals(Path::new(d)).unwrap();

    served.change(|s| {
        s.tick(5);
        s.put("r/0.txt", b"zero, again");
        s.put("r/new.txt", b"new");
        s.delete("r/1.txt");
        s.tick(2);
    });
    // A dry run says what it would do and does nothing.
    let out = sync(&["--dry-run", "--json", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(r#""event":"change""#),
        "{}",
        text(&out)
    );
    assert!(served.equals(Path::new(d)).is_err());
    let out = sync(&["--audit", &served.base, d]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("not in sync"),
        "{}",
        text(&out)
    );

    let out = sync(&["--delete", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with("incremental: 1 created, 1 updated, 1 deleted"),
        "{}",
        text(&out)
    );
    served.equals(Path::new(d)).unwrap();
    let out = sync(&["--audit", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(", in sync"),
        "{}",
        text(&out)
    );
}

#[test]
fn nothing_outside_the_destination_whatever_the_source_lists() {
    let served = Served::start(|s| populate(s, 2));
    let base = served.base.clone();
    let evil = [
        "r/%2e%2e/%2e%2e/escaped-1",
        "r/..%2f..%2fescaped-2",
        "r/a%5c..%5c..%5cescaped-3",
        ".resourcesync/state.json",
        ".RESOURCESYNC/inventory.json",
    ];
    let list = |entries: &[&str]| {
        let mut urls = String::new();
        for e in entries {
            urls += &format!(
                "<url><loc>{base}{e}</loc><rs:md change=\"created\" datetime=\"2020-01-01T00:00:20Z\"/></url>"
            );
        }
        urls
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let ds = d.to_str().unwrap().to_owned();
    // A baseline whose Resource List lists them.
    let rl = format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="{base}capabilitylist.xml"/><rs:md capability="resourcelist" at="2020-01-01T00:00:10Z"/>{}<url><loc>{base}r/0.txt</loc></url></urlset>"#,
        list(&evil).replace(
            r#"<rs:md change="created" datetime="2020-01-01T00:00:20Z"/>"#,
            ""
        )
    );
    served
        .source
        .lock()
        .unwrap()
        .files
        .insert("resourcelist.xml".into(), Response::ok(rl.into_bytes()));
    let out = sync(&[&base, &ds]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Then changes that create them (a deletion of what is not held is never decided,
    // whatever its path: the refusal is the creation's).
    let cl = format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="{base}capabilitylist.xml"/><rs:md capability="changelist" from="2020-01-01T00:00:00Z"/>{}</urlset>"#,
        list(&evil),
    );
    served
        .source
        .lock()
        .unwrap()
        .files
        .insert("changelist.xml".into(), Response::ok(cl.into_bytes()));
    let out = sync(&[&base, &ds]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // The temporary directory holds the destination and nothing else; the state is intact.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names, ["dest"]);
    let state = std::fs::read_to_string(d.join(".resourcesync/state.json")).unwrap();
    assert!(state.starts_with("{\"sets\""), "{state}");
    let mut held = BTreeMap::new();
    collect(&d, &d, &mut held);
    assert_eq!(held.keys().collect::<Vec<_>>(), ["r/0.txt"]);
}

#[test]
fn help_describes_the_options_output_and_exit_status() {
    help::assert_help(
        &[&["sync", "--help"], &["help", "sync"]],
        &[
            "Usage: resourcesync sync [OPTIONS] <SOURCE-URL> <DIR>",
            "--audit",
            "--dry-run",
            "--delete",
            "--max-deletes <N>",
            "--concurrency <N>",
            "--mirror <PREFIX=DIR>",
            "--json",
            "{\"summary\": {\"mode\"",
            "  2  it could not start",
        ],
    );
    // A bad URL or option cannot start.
    let out = sync(&["not a url", "/tmp/x"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not a URL"),
        "{}",
        text(&out)
    );
    let out = sync(&["--bogus"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn explore_shows_the_tree_of_documents() {
    let served = Served::start(|s| {
        populate(s, 9);
        s.publish.list_part = 5;
        s.publish.change_part = 4;
        s.publish.archive = true;
    });
    let out = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["explore", &served.base])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let tree = String::from_utf8_lossy(&out.stdout).replace(&served.base, "/");
    let expected = "\
Source Description /.well-known/resourcesync (1 entries)
  Capability List /capabilitylist.xml (3 entries)
    Change List Archive /changelist-archive.xml (2 entries)
      Change List /changes-0.xml (4 entries)
      Change List /changes-1.xml (4 entries)
    Change List /changelist.xml (2 entries)
    Resource List Index /resourcelist.xml (2 entries, at 2020-01-01T00:00:10Z)
      Resource List /resourcelist-0.xml (5 entries, at 2020-01-01T00:00:10Z)
      Resource List /resourcelist-1.xml (5 entries, at 2020-01-01T00:00:10Z)
";
    assert_eq!(tree, expected);
    let out = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["explore", "--json", &format!("{}nowhere.xml", served.base)])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains(r#"{"summary":{"documents":0,"problems":1}}"#),
        "{}",
        text(&out)
    );
}

#[test]
fn a_mirror_on_disk_answers_for_its_url_prefix() {
    // The Source's files, written to a directory: no server at all.
    let mut source = Source::new();
    populate(&mut source, 5);
    source.publish();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror");
    for (path, response) in &source.files {
        let file = mirror.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, &response.body).unwrap();
    }
    for (path, (bytes, _)) in &source.resources {
        let file = mirror.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    }
    let dest = dir.path().join("dest");
    let out = sync(&[
        "--mirror",
        &format!("{}={}", source.base, mirror.display()),
        &source.base,
        dest.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let mut held = BTreeMap::new();
    collect(&dest, &dest, &mut held);
    let expected: BTreeMap<String, Vec<u8>> = source
        .resources
        .iter()
        .map(|(p, (b, _))| (p.clone(), b.clone()))
        .collect();
    assert_eq!(held, expected);
}

#[test]
fn a_mirror_reads_nothing_outside_its_directory_and_quotes_nothing_of_it() {
    let mut source = Source::new();
    populate(&mut source, 2);
    source.publish();
    let dir = tempfile::tempdir().unwrap();
    let mirror = dir.path().join("mirror");
    std::fs::create_dir_all(mirror.join("r")).unwrap();
    // A file outside the mirror, and a link in it that leads there.
    let secret = dir.path().join("secret.xml");
    std::fs::write(&secret, "TOP-SECRET first line\n").unwrap();
    std::os::unix::fs::symlink(&secret, mirror.join("r/link.xml")).unwrap();
    let secret = secret.to_str().unwrap().trim_start_matches('/');
    let prefix = &source.base;
    let dest = dir.path().join("dest");
    // An absolute path after the prefix (`//`), a climb out (`..`), a link out.
    for start in [
        format!("{prefix}/{secret}"),
        format!("{prefix}r/../../secret.xml"),
        format!("{prefix}r/%2e%2e/%2e%2e/secret.xml"),
        format!("{prefix}r/link.xml"),
    ] {
        let out = sync(&[
            "--mirror",
            &format!("{prefix}={}", mirror.display()),
            &start,
            dest.to_str().unwrap(),
        ]);
        assert_ne!(out.status.code(), Some(0), "{start}: {}", text(&out));
        assert!(
            !text(&out).contains("TOP-SECRET"),
            "{start}: {}",
            text(&out)
        );
    }
}

#[test]
fn changes_no_longer_offered_make_a_baseline_in_the_same_run_deleting_only_as_asked() {
    for delete in [false, true] {
        let served = Served::start(|s| populate(s, 5));
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dest");
        let d = d.to_str().unwrap();
        assert_eq!(sync(&[&served.base, d]).status.code(), Some(0));
        // The Source goes on, and stops offering the changes the destination has not
        // seen: a gap (issue 22: every later run failed, "no longer offered").
        served.change(|s| {
            s.tick(5);
            s.put("r/0.txt", b"zero, again");
            s.delete("r/1.txt");
            s.tick(2);
            s.publish.forget_before = s.now;
            s.put("r/new.txt", b"new");
            s.tick(1);
        });
        let mut args = vec![served.base.as_str(), d];
        if delete {
            args.insert(0, "--delete");
        }
        let out = sync(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("a baseline instead"),
            "{}",
            text(&out)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("baseline: 1 created, 1 updated"),
            "{}",
            text(&out)
        );
        let dest = Path::new(d);
        assert_eq!(std::fs::read(dest.join("r/0.txt")).unwrap(), b"zero, again");
        assert!(dest.join("r/new.txt").exists());
        // Deleted only with --delete.
        assert_eq!(dest.join("r/1.txt").exists(), !delete);
        if delete {
            served.equals(dest).unwrap();
        }
        // And it goes on incrementally from there.
        let out = sync(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("incremental:"),
            "{}",
            text(&out)
        );
    }
}
