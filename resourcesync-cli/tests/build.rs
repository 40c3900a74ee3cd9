//! `resourcesync build`: what the command adds to `resourcesync_source::collection` (whose
//! behaviour is tested in resourcesync-source's tests, in process): its help, its text and
//! JSON output, its exit statuses, a run killed at any point, running as another user; and
//! publications built by the command, served, synced and audited.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use resourcesync_testkit::publication::{Publication, generate_collection as collection};
use serde_json::Value;

#[path = "common/building.rs"]
mod building;
#[path = "common/help.rs"]
mod help;
#[path = "common/server.rs"]
mod server;

use building::*;

/// What `--json` prints: one object with the report's fields; the text output, one line
/// with the counts and the time taken.
#[test]
fn the_json_report_is_one_object_and_the_text_one_line() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 5);
    let report = build(&coll, &publish, &[]);
    assert_eq!(report["generation"], 1);
    assert_eq!(report["resources"], 5);
    assert_eq!(report["created"], 5);
    assert_eq!(report["hashed_files"], 5);
    assert_eq!(report["skipped"], Value::Array(vec![]));
    assert_eq!(report["unreadable"], 0);
    assert_eq!(report["not_portable"], Value::Array(vec![]));
    assert_eq!(
        report["source_description"],
        format!("{BASE}.well-known/resourcesync")
    );
    assert!(report["seconds"].is_f64(), "{report}");

    put(&coll, "new.txt", b"new");
    let out = build_text(&coll, &publish);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    assert!(
        stdout.starts_with("published generation 2 at ")
            && stdout.contains(": 6 resources (")
            // (Files written within the file system clock's granularity of the first run are
            // hashed again: the count varies.)
            && stdout.contains(", 1 created, 0 updated, 0 deleted, ")
            && stdout.contains(" files hashed (")
            && stdout.contains(" documents; ")
            && stdout.contains(&format!(
                "Source Description {BASE}.well-known/resourcesync; in "
            )),
        "{stdout}"
    );
}

/// A run that publishes nothing exits 2 and says why and that nothing was published; with
/// `--json`, one object `{"error"}`.
#[test]
fn a_run_that_publishes_nothing_exits_2_and_says_why() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 3);
    let refused = |out: Output, needles: &[&str]| {
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("nothing published"), "{stderr}");
        for needle in needles {
            assert!(stderr.contains(needle), "{needle}: {stderr}");
        }
        out
    };

    // A directory with someone's files.
    put(&publish, "theirs.txt", b"theirs");
    let out = refused(build_output(&coll, &publish, &[]), &["did not publish"]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert!(
        json["error"].as_str().unwrap().contains("did not publish"),
        "{json}"
    );
    fs::remove_dir_all(&publish).unwrap();

    // The switch fails: the place where the new link is staged is taken.
    build(&coll, &publish, &[]);
    put(root.path(), ".pub.link/x", b"in the way");
    refused(build_output(&coll, &publish, &[]), &[".pub.link"]);
    fs::remove_dir_all(root.path().join(".pub.link")).unwrap();

    // A wrong line of a list.
    let list = root.path().join("list.txt");
    fs::write(&list, "ftp://x.example/y top-0.txt\n").unwrap();
    let args = ["--list", list.to_str().unwrap()];
    refused(build_output(&coll, &publish, &args), &["line 1"]);

    // A collection that emptied, unless asked for.
    let empty = root.path().join("empty");
    fs::create_dir(&empty).unwrap();
    refused(build_output(&empty, &publish, &[]), &["--allow-empty"]);
    let report = build(&empty, &publish, &["--allow-empty"]);
    assert_eq!(report["deleted"], 3, "{report}");

    // A base URL that is no directory's.
    let out = resourcesync(&[
        "build",
        "--base-url",
        "http://127.0.0.1:8080/no-slash",
        coll.to_str().unwrap(),
        publish.to_str().unwrap(),
    ]);
    refused(out, &["no-slash"]);
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
fn readers_see_whole_publications_while_runs_switch_and_are_killed() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 2000);
    build(&coll, &publish, &["--max-entries", "500"]);

    // A reader follows Source Description -> Capability List -> Resource List (and its
    // parts) again and again; every document it reads must be whole and agree.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let publication = Publication::new(&publish, BASE);
    let reader = {
        let (publication, stop) = (publication.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && reads < 100_000 {
                let entries = publication.resource_list();
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
        publication.validate();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader
        .join()
        .expect("the reader saw only whole publications");
    assert!(reads > 0);
    // After the kills, a run still publishes every file.
    let report = build(&coll, &publish, &["--max-entries", "500"]);
    assert_eq!(report["resources"], 2006);
    assert_eq!(publication.resource_list().len(), 2006);
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
/// output and in --json, and the exit status is 1; once readable, the next run is a
/// success (exit 0). (What is published then: resourcesync-source's tests.)
#[test]
fn a_file_or_directory_that_cannot_be_read_is_reported_and_exits_1() {
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

/// A build under another base URL than the publication's is a new Source (nothing
/// carried over), and says so: it began a new history without a word.
#[test]
fn a_new_base_url_is_said_to_begin_a_new_source() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    collection(&coll, 3);
    let first = build(&coll, &publish, &[]);
    assert_eq!(first["replaced_base_url"], Value::Null, "{first}");
    let other = "http://127.0.0.1:8081/";
    let out = build_output_at(other, &coll, &publish, &[]);
    assert!(out.status.success(), "{out:?}");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["replaced_base_url"], BASE, "{report}");
    assert_eq!(report["created"], first["created"], "{report}");
    // The same URL again: nothing said.
    let again = build_output_at(other, &coll, &publish, &[]);
    let report: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(report["replaced_base_url"], Value::Null, "{report}");
    // In text, on standard error.
    let out = build_text(&coll, &publish);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "warning: the base URL was {other}: another base URL names other resources"
        )),
        "{said}"
    );
}
