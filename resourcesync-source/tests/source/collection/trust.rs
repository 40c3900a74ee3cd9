//! The build as a hostile collection or a careless user meets it (issue 28): every input
//! path resolves inside the collection at every level, walked or listed; the build's own
//! files planted as links are refused; the cleanup removes only what the build made.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use resourcesync_source::collection::{self, BuildError, BuildReport, Options};
use resourcesync_testkit::publication::digests;

use super::{build, options, put, refused};

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
    let mut listed = options().with_resource_dump(true);
    listed.list = Some(list.clone());
    fs::write(&list, "http://example.org/own own.txt\n").unwrap();
    build(&coll, &publish, &listed);
    let line_2 = |text: &str| -> String {
        fs::write(&list, format!("http://example.org/own own.txt\n{text}\n")).unwrap();
        let error = refused(&coll, &publish, &listed);
        assert!(
            matches!(error, BuildError::List { line: 2, .. }),
            "{text}: {error:?}"
        );
        error.to_string()
    };
    for file in [
        "file-link",
        "dir-link/secret.txt",
        "dir/up-link/secret.txt",
        "inner-link",
        "inner-dir-link/deeper.txt",
        "./dir-link/secret.txt",
    ] {
        let error = line_2(&format!("http://example.org/x {file}"));
        assert!(
            error.contains("line 2") && error.contains("symbolic link"),
            "{file}: {error}"
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
        let error = line_2(line);
        assert!(
            error.contains("line 2") && error.contains(needle),
            "{line}: {error}"
        );
    }
    fs::remove_file(coll.join(".env")).unwrap();
    assert_eq!(published_secret(root.path()), None);

    // The walk of the same collection publishes the collection's own files only.
    let report = build(&coll, &publish, &options().with_resource_dump(true));
    assert_eq!(report.resources, 2, "{report}");
    assert_eq!(published_secret(root.path()), None);
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
    build(&coll, &publish, &options());
    put(&generations, "00009/user.txt", b"the user's");
    put(&coll, "b.txt", b"b");
    build(&coll, &publish, &options());
    put(&coll, "c.txt", b"c");
    build(&coll, &publish, &options());
    // Generations 3 and 2 kept, 1 removed; the user's directory left.
    let names: Vec<String> = crate::files(&generations)
        .into_iter()
        .filter(|n| !n.contains('.') && n != "lock")
        .collect();
    assert_eq!(names, ["00002", "00003", "00009"]);
    assert_eq!(
        fs::read(generations.join("00009/user.txt")).unwrap(),
        b"the user's"
    );

    // In the way of the next generation: refused, named, left as it is.
    put(&generations, "00004/user.txt", b"also the user's");
    put(&coll, "d.txt", b"d");
    let error = refused(&coll, &publish, &options()).to_string();
    assert!(
        error.contains("00004") && error.contains("did not"),
        "{error}"
    );
    assert_eq!(
        fs::read(generations.join("00004/user.txt")).unwrap(),
        b"also the user's"
    );
    fs::remove_dir_all(generations.join("00004")).unwrap();

    // A published generation without its mark, as an earlier version left it, is the
    // build's (the publish link it made says so): removed two runs later.
    fs::remove_file(generations.join("00003.made")).unwrap();
    build(&coll, &publish, &options());
    put(&coll, "e.txt", b"e");
    build(&coll, &publish, &options());
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
    build(&coll, &publish, &options());
    put(&publish, "robots.txt", b"the user's robots.txt");
    put(&publish, "resourcesync/notes/mine.txt", b"the user's notes");
    for name in ["b", "c", "d"] {
        put(&coll, &format!("{name}.txt"), name.as_bytes());
        build(&coll, &publish, &options());
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

/// Builds `collection` into `publish` on a thread of its own, waiting 30 s at most: a
/// build that waits for ever on a planted FIFO fails the test rather than hang it.
fn bounded(
    collection: &Path,
    publish: &Path,
    options: &Options,
) -> Result<BuildReport, BuildError> {
    let (send, receive) = std::sync::mpsc::channel();
    let (collection, publish, options) =
        (collection.to_owned(), publish.to_owned(), options.clone());
    std::thread::spawn(move || {
        let built = collection::build(&collection, &publish, &options, SystemTime::now(), &());
        let _ = send.send(built);
    });
    receive
        .recv_timeout(Duration::from_secs(30))
        .expect("the build still running after 30 s")
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
    let options = options().with_max_entries(1);
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        put(&coll, &format!("{name}.txt"), name.as_bytes());
        let built = bounded(&coll, &publish, &options);
        assert!(built.is_ok(), "run {i}: {built:?}");
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
        let error = match bounded(&coll, &publish, &options) {
            Ok(report) => panic!("{planted}: published generation {}", report.generation),
            Err(error) => error.to_string(),
        };
        assert!(
            error.contains(planted.rsplit('/').next().unwrap()),
            "{error}"
        );
        assert_eq!(fs::canonicalize(&publish).unwrap(), generation, "{planted}");
        fs::remove_file(&path).unwrap();
        fs::rename(&kept, &path).unwrap();
        assert_eq!(published_secret(root.path()), None, "{planted}");
    }
    assert!(bounded(&coll, &publish, &options).is_ok());
}
