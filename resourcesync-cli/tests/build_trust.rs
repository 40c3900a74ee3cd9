//! `resourcesync build` as a hostile collection or a careless user meets it (issue 28): every
//! input path resolves inside the collection at every level, walked or listed; a change
//! that keeps size and modification time is a change; a name is escaped wherever it is
//! printed; the cleanup removes only what the build made.

#![cfg(unix)]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use resourcesync_model::Fixity;
use resourcesync_xml::read_document;

#[path = "common/building.rs"]
mod building;

use building::*;

/// What no published byte may hold: the content of a file outside the collection.
const SECRET: &[u8] = b"the secret outside the collection";

/// Every regular file under `dir` (not following links, which lead into the collection),
/// with its bytes.
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                todo.push(entry.path());
            } else if kind.is_file() {
                found.push((entry.path(), fs::read(entry.path()).unwrap()));
            }
        }
    }
    found
}

/// Whether any file the build wrote (documents, packages, state) holds the secret, or
/// lists its digest; the packages, whose bitstreams may be deflated, are also read as
/// packages.
fn published_secret(root: &Path) -> Option<PathBuf> {
    let generations = root.join(".pub.resourcesync");
    let md5 = digests(SECRET).md5.to_string();
    for (path, bytes) in files_under(&generations) {
        let holds = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        if holds(SECRET) || holds(md5.as_bytes()) {
            return Some(path);
        }
        if path.extension().is_some_and(|e| e == "zip") {
            let mut package = resourcesync_package::Package::open(&path).unwrap();
            for i in 0..package.bitstream_count() {
                let mut content = Vec::new();
                let mut reader = package.bitstream(i).unwrap();
                std::io::Read::read_to_end(&mut reader, &mut content).unwrap();
                if content.windows(SECRET.len()).any(|w| w == SECRET) {
                    return Some(path);
                }
            }
        }
    }
    None
}

/// The Resource List `publish` serves.
fn resource_list(publish: &Path) -> resourcesync_model::Document {
    let bytes = fs::read(publish.join("resourcesync/resourcelist.xml")).unwrap();
    read_document(&bytes).unwrap().0
}

/// Length, md5 and sha-256 of `bytes`.
fn digests(bytes: &[u8]) -> resourcesync_model::Digests {
    let mut fixity = Fixity::new();
    fixity.update(bytes);
    fixity.finish()
}

/// A list entry that names a link, or a path through a linked directory, is refused with
/// its line, as the walk refuses to follow them: nothing outside is hashed, listed or
/// packed. Fails on the code before: the link was followed and the outside file's bytes
/// went into the Resource Dump.
#[test]
fn a_list_reaches_no_further_than_the_walk() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish, outside) = (
        root.path().join("coll"),
        root.path().join("pub"),
        root.path().join("outside"),
    );
    put(&coll, "own.txt", b"own");
    put(&coll, "dir/deeper.txt", b"deeper");
    put(&outside, "secret.txt", SECRET);
    symlink(outside.join("secret.txt"), coll.join("file-link")).unwrap();
    symlink(&outside, coll.join("dir-link")).unwrap();
    symlink("../dir-link", coll.join("dir/up-link")).unwrap();
    // Links that stay inside are no files of the collection either, as in the walk.
    symlink("own.txt", coll.join("inner-link")).unwrap();
    symlink("dir", coll.join("inner-dir-link")).unwrap();
    let list = root.path().join("list.txt");
    let args = ["--list", list.to_str().unwrap(), "--resource-dump"];
    fs::write(&list, "http://example.org/own own.txt\n").unwrap();
    build(&coll, &publish, &args);
    for file in [
        "file-link",
        "dir-link/secret.txt",
        "dir/up-link/secret.txt",
        "inner-link",
        "inner-dir-link/deeper.txt",
        "./dir-link/secret.txt",
    ] {
        fs::write(
            &list,
            format!("http://example.org/own own.txt\nhttp://example.org/x {file}\n"),
        )
        .unwrap();
        let out = build_output(&coll, &publish, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{file}: {stderr}");
        assert!(
            stderr.contains("line 2") && stderr.contains("symbolic link"),
            "{file}: {stderr}"
        );
        assert_eq!(published_secret(root.path()), None, "{file}");
    }
    // What the walk would not publish, a list does not either: a hidden name, a
    // directory named as a file; nor may a listed URI take the publication's own.
    put(&coll, ".env", SECRET);
    for (line, needle) in [
        ("http://example.org/x .env", "hidden"),
        ("http://example.org/x dir/../.env", "relative to"),
        ("http://example.org/x own.txt/", "trailing"),
        (
            "http://127.0.0.1:8080/resourcesync/capabilitylist.xml own.txt",
            "own documents",
        ),
        (
            "http://127.0.0.1:8080/.well-known/resourcesync own.txt",
            "own documents",
        ),
    ] {
        fs::write(&list, format!("http://example.org/own own.txt\n{line}\n")).unwrap();
        let out = build_output(&coll, &publish, &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{line}: {stderr}");
        assert!(
            stderr.contains("line 2") && stderr.contains(needle),
            "{line}: {stderr}"
        );
    }
    fs::remove_file(coll.join(".env")).unwrap();
    assert_eq!(published_secret(root.path()), None);

    // The walk of the same collection publishes the collection's own files only.
    let report = build(&coll, &publish, &["--resource-dump"]);
    assert_eq!(report["resources"], 2, "{report}");
    assert_eq!(published_secret(root.path()), None);
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
    std::thread::sleep(Duration::from_millis(100));
    build(&coll, &publish, &[]);

    // `cp -p`: rewritten in place, its time set back.
    fs::write(coll.join("in-place.txt"), b"other bytes").unwrap();
    set_mtime(&coll.join("in-place.txt"), t0);
    // `rsync -t`: a new file with the time set back, renamed over the old one.
    put(&coll, ".renamed.tmp", b"newer bytes");
    set_mtime(&coll.join(".renamed.tmp"), t0);
    fs::rename(coll.join(".renamed.tmp"), coll.join("renamed.txt")).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let report = build(&coll, &publish, &[]);
    let counts = ["created", "updated", "deleted", "hashed_files"].map(|k| report[k].as_u64());
    assert_eq!(counts, [0, 2, 0, 2].map(Some), "{report}");
    let list = resource_list(&publish);
    for (name, bytes) in [
        ("in-place.txt", &b"other bytes"[..]),
        ("renamed.txt", b"newer bytes"),
        ("kept.txt", b"first bytes"),
    ] {
        let entry = list
            .entries
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
    let report = build(&coll, &publish, &[]);
    assert_eq!(report["hashed_files"], 0, "{report}");
}

/// A name is escaped wherever `build` prints it: an escape sequence in a skipped file's
/// name reaches no terminal, and a newline forges no line. Fails on the code before: the
/// names were printed raw.
#[test]
fn names_are_escaped_wherever_build_prints_them() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "own.txt", b"own");
    let forged = "x\nresourcesync build: published generation 9\u{1b}[2J";
    // Skipped for its control characters (no URI), and for being a link.
    put(&coll, forged, b"skipped");
    symlink("own.txt", coll.join("link\u{1b}]0;title\u{7}")).unwrap();
    let out = resourcesync(&[
        "build",
        "--base-url",
        BASE,
        coll.to_str().unwrap(),
        publish.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains('\u{1b}') && !stderr.contains('\u{7}'),
        "{stderr:?}"
    );
    assert!(
        !stderr
            .lines()
            .any(|l| l.starts_with("resourcesync build: published")),
        "{stderr}"
    );
    assert!(
        stderr.contains(r"\u{1b}[2J") && stderr.contains(r"x\n"),
        "{stderr}"
    );
    // And in an error: a list naming a file by such a name, a URI holding one (which
    // does not parse) or a bidirectional override (which does).
    let list = root.path().join("list.txt");
    for line in [
        "http://example.org/a no-such\u{1b}[2J.txt",
        "http://example.org/\u{1b}[2J own.txt",
        "http://example.org/\u{202e}a own.txt\nhttp://example.org/\u{202e}a own.txt",
    ] {
        fs::write(&list, format!("{line}\n")).unwrap();
        let out = build_output(&coll, &publish, &["--list", list.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains('\u{1b}') && !stderr.contains('\u{202e}'),
            "{stderr:?}"
        );
        assert!(
            stderr.contains(r"\u{1b}[2J") || stderr.contains(r"\u{202e}"),
            "{stderr}"
        );
    }
}

/// The cleanup removes only the generations the build made: a directory the user put
/// beside them under a generation's name is left, and one in the way of the next
/// generation is refused, not emptied. A generation published by an earlier version
/// (no mark) is adopted, and removed in its turn. Fails on the code before: both user
/// directories were deleted.
#[test]
fn the_cleanup_removes_only_what_the_build_made() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let generations = root.path().join(".pub.resourcesync");
    put(&coll, "a.txt", b"a");
    build(&coll, &publish, &[]);
    put(&generations, "00009/user.txt", b"the user's");
    put(&coll, "b.txt", b"b");
    build(&coll, &publish, &[]);
    put(&coll, "c.txt", b"c");
    build(&coll, &publish, &[]);
    // Generations 3 and 2 kept, 1 removed; the user's directory left.
    let mut names: Vec<String> = fs::read_dir(&generations)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.contains('.') && n != "lock")
        .collect();
    names.sort();
    assert_eq!(names, ["00002", "00003", "00009"]);
    assert_eq!(
        fs::read(generations.join("00009/user.txt")).unwrap(),
        b"the user's"
    );

    // In the way of the next generation: refused, named, left as it is.
    put(&generations, "00004/user.txt", b"also the user's");
    put(&coll, "d.txt", b"d");
    let out = build_output(&coll, &publish, &[]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("00004") && stderr.contains("did not"),
        "{stderr}"
    );
    assert_eq!(
        fs::read(generations.join("00004/user.txt")).unwrap(),
        b"also the user's"
    );
    fs::remove_dir_all(generations.join("00004")).unwrap();

    // A published generation without its mark, as an earlier version left it, is the
    // build's (the publish link it made says so): removed two runs later.
    fs::remove_file(generations.join("00003.made")).unwrap();
    build(&coll, &publish, &[]);
    put(&coll, "e.txt", b"e");
    build(&coll, &publish, &[]);
    assert!(!generations.join("00003").exists());
    assert!(generations.join("00009/user.txt").exists());
}

/// A file the user put into the publication (through the publish directory's link, into
/// the generation it points at) is not removed with that generation: the generation is
/// left while it holds what the build did not write. Fails on the code before: the
/// user's files went with the generation two runs later.
#[test]
fn a_generation_the_user_added_to_is_left_by_the_cleanup() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let generations = root.path().join(".pub.resourcesync");
    put(&coll, "a.txt", b"a");
    build(&coll, &publish, &[]);
    put(&publish, "robots.txt", b"the user's robots.txt");
    put(&publish, "resourcesync/notes/mine.txt", b"the user's notes");
    for name in ["b", "c", "d"] {
        put(&coll, &format!("{name}.txt"), name.as_bytes());
        build(&coll, &publish, &[]);
    }
    assert_eq!(
        fs::read(generations.join("00001/robots.txt")).unwrap(),
        b"the user's robots.txt"
    );
    assert!(
        generations
            .join("00001/resourcesync/notes/mine.txt")
            .exists()
    );
    // The generations nobody added to go as before: 2 removed, 3 and 4 kept.
    assert!(!generations.join("00002").exists());
    assert!(generations.join("00003").exists() && generations.join("00004").exists());
}

/// A name with a backslash gets a URI (`%5C`), as the CHANGELOG says: on Unix it is a
/// character of the name. Fails on the code before: it was skipped.
#[test]
fn a_name_with_a_backslash_is_published() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "dir/back\\slash.txt", b"backslash");
    let report = build(&coll, &publish, &[]);
    assert_eq!(report["resources"], 1, "{report}");
    assert_eq!(report["skipped"].as_array().map(Vec::len), Some(0));
    let list = resource_list(&publish);
    assert_eq!(
        list.entries[0].loc.as_str(),
        format!("{BASE}dir/back%5Cslash.txt")
    );
}

/// Runs `resourcesync` with `args`, killed after 30 s: a build that waits for ever on a
/// planted FIFO fails the test rather than hang it.
fn bounded(args: &[&str]) -> (Option<i32>, String) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..300 {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
            return (status.code(), stderr);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("resourcesync {args:?} still running after 30 s");
}

/// The build's own files in the published generation (its state, its documents) planted
/// as links or FIFOs are not followed, not waited on, not carried into the next
/// generation: the run fails naming them, the publication kept. Fails on the code
/// before: a FIFO at the state hung the build (holding the lock), and a link among the
/// documents was carried over and served what it led to.
#[test]
fn the_builds_own_files_planted_as_links_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish, outside) = (
        root.path().join("coll"),
        root.path().join("pub"),
        root.path().join("outside"),
    );
    put(&outside, "secret.txt", SECRET);
    let fifo = root.path().join("fifo");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo");
    let args = |extra: &[&'static str]| -> Vec<String> {
        let mut args: Vec<String> = ["build", "--base-url", BASE, "--max-entries", "1"]
            .map(String::from)
            .to_vec();
        args.extend(extra.iter().map(|s| s.to_string()));
        args.push(coll.to_str().unwrap().to_owned());
        args.push(publish.to_str().unwrap().to_owned());
        args
    };
    let run = |extra: &[&'static str]| {
        let args = args(extra);
        bounded(&args.iter().map(String::as_str).collect::<Vec<_>>())
    };
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        put(&coll, &format!("{name}.txt"), name.as_bytes());
        assert_eq!(run(&[]).0, Some(0), "run {i}");
    }
    let generation = fs::canonicalize(&publish).unwrap();
    for (planted, target) in [
        (".resourcesync/state.json", fifo.as_path()),
        (".resourcesync/resources.2.postcard", fifo.as_path()),
        (".resourcesync/state.json", Path::new("/dev/zero")),
        (
            "resourcesync/changelist-00001.xml",
            &outside.join("secret.txt"),
        ),
    ] {
        let path = generation.join(planted);
        let kept = path.with_extension("kept");
        fs::rename(&path, &kept).unwrap();
        symlink(target, &path).unwrap();
        put(&coll, "d.txt", planted.as_bytes());
        let (code, stderr) = run(&[]);
        assert_eq!(code, Some(2), "{planted}: {stderr}");
        assert!(
            stderr.contains(planted.rsplit('/').next().unwrap()),
            "{stderr}"
        );
        assert_eq!(fs::canonicalize(&publish).unwrap(), generation, "{planted}");
        fs::remove_file(&path).unwrap();
        fs::rename(&kept, &path).unwrap();
        assert_eq!(published_secret(root.path()), None, "{planted}");
    }
    assert_eq!(run(&[]).0, Some(0));
}
