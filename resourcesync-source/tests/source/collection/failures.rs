//! Runs that publish nothing and leave the publication as it was: a failed switch, a
//! publish directory that is not the build's, another build, a damaged state, a collection
//! that emptied; links planted where the build keeps its files; and files that cannot be
//! read, which are skipped while the rest is published.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use resourcesync_source::collection::{BuildError, Options};

use super::{build, generated, local, options, publication, put, refused};

#[test]
fn a_failed_run_leaves_the_publication_as_it_was() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 20);
    let mut options = options();
    options.max_bytes = 4096;
    build(&coll, &publish, &options);
    let p = publication(&publish);
    let before = p.snapshot();
    let link = fs::read_link(&publish).unwrap();

    // Everything of the next generation is written, and the switch fails: the place
    // where the new link is staged is taken by a directory (of files, so that it is not
    // removed as a link a killed run left).
    put(&coll, "new.txt", b"new");
    put(root.path(), ".pub.link/x", b"in the way");
    let error = refused(&coll, &publish, &options).to_string();
    assert!(error.contains(".pub.link"), "{error}");

    // The same link, the same files, and no leftover generation.
    assert_eq!(fs::read_link(&publish).unwrap(), link);
    assert_eq!(p.snapshot(), before);
    let generations: Vec<String> = crate::files(&root.path().join(".pub.resourcesync"))
        .into_iter()
        .filter(|n| n != "lock" && !n.ends_with(".made"))
        .collect();
    assert_eq!(generations, ["00001"]);

    assert!(
        !p.resource_list()
            .iter()
            .any(|e| e.loc.as_str().ends_with("new.txt"))
    );

    // Once the way is clear, the next run publishes.
    fs::remove_dir_all(root.path().join(".pub.link")).unwrap();
    assert_eq!(build(&coll, &publish, &options).generation, 2);
}

#[test]
fn refuses_a_publish_directory_it_did_not_make_and_a_second_build() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 3);

    // A directory with someone's files is left alone.
    put(&publish, "theirs.txt", b"theirs");
    let error = refused(&coll, &publish, &options());
    assert!(matches!(error, BuildError::Publish(_)), "{error:?}");
    assert!(error.to_string().contains("did not publish"), "{error}");
    assert_eq!(fs::read(publish.join("theirs.txt")).unwrap(), b"theirs");
    fs::remove_dir_all(&publish).unwrap();

    // An empty directory is taken.
    fs::create_dir(&publish).unwrap();
    build(&coll, &publish, &options());

    // While another build holds the lock, a second one publishes nothing.
    let lock = fs::File::open(root.path().join(".pub.resourcesync/lock")).unwrap();
    lock.lock().unwrap();
    let error = refused(&coll, &publish, &options()).to_string();
    assert!(error.contains("another build"), "{error}");
    lock.unlock().unwrap();
    assert_eq!(build(&coll, &publish, &options()).generation, 2);

    // A base URL that is no directory's.
    let no_slash = Options::new("http://127.0.0.1:8080/no-slash".parse().unwrap());
    let error = refused(&coll, &publish, &no_slash).to_string();
    assert!(error.contains("no-slash"), "{error}");
}

/// Links and files planted where the build keeps its own (issue 22): its generations'
/// directory, its lock, the place it stages its link, a generation's number. Each is
/// refused with an error naming it, and nothing is written through it, truncated or
/// removed. (The code before followed the first two, truncating the lock's target and
/// writing the generations into the linked directory, and removed the other two.)
#[test]
fn links_planted_where_build_keeps_its_files_are_refused_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    let generations = root.path().join(".pub.resourcesync");
    generated(&coll, 3);
    let victim = root.path().join("victim.txt");
    fs::write(&victim, b"the user's").unwrap();
    let elsewhere = root.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let refused = |planted: &Path| {
        let error = refused(&coll, &publish, &options()).to_string();
        assert!(
            error.contains(planted.to_str().unwrap()),
            "{}: {error}",
            planted.display()
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
    assert_eq!(build(&coll, &publish, &options()).generation, 1);
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
    assert_eq!(build(&coll, &publish, &options()).generation, 2);
    assert_eq!(fs::read(&victim).unwrap(), b"the user's");
}

#[test]
fn a_damaged_state_is_named_and_nothing_is_published() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    generated(&coll, 5);
    build(&coll, &publish, &options());
    let p = publication(&publish);
    let mut before = p.snapshot();
    let resources = publish.join(".resourcesync/resources.2.postcard");
    let mut bytes = fs::read(&resources).unwrap();
    bytes.truncate(bytes.len() / 2);
    fs::write(&resources, bytes).unwrap();
    put(&coll, "new.txt", b"new");
    let error = refused(&coll, &publish, &options()).to_string();
    assert!(
        error.contains("resources.2.postcard") && error.contains("unreadable state"),
        "{error}"
    );
    let mut after = p.snapshot();
    after.remove(Path::new(".resourcesync/resources.2.postcard"));
    before.remove(Path::new(".resourcesync/resources.2.postcard"));
    assert_eq!(after, before);
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
    build(&coll, &publish, &options());
    let error = refused(&empty, &publish, &options());
    assert!(
        matches!(error, BuildError::Emptied { listed: 2, .. }),
        "{error:?}"
    );
    let text = error.to_string();
    assert!(
        text.contains("nothing to publish, where the publication lists 2 resources")
            && text.contains("--allow-empty"),
        "{text}"
    );
    let p = publication(&publish);
    assert_eq!(p.resource_list().len(), 2);
    assert!(p.change_lists().iter().all(|(_, c)| c.is_empty()));
    // A list that lists nothing: the list is named.
    let list = root.path().join("list.txt");
    fs::write(&list, "# nothing yet\n").unwrap();
    let mut listed = options();
    listed.list = Some(list.clone());
    let text = refused(&coll, &publish, &listed).to_string();
    assert!(
        text.contains(&format!("{}: nothing to publish", list.display())),
        "{text}"
    );
    // Asked for: both listed as deleted.
    let mut allow_empty = options();
    allow_empty.allow_empty = true;
    let report = build(&empty, &publish, &allow_empty);
    assert_eq!((report.generation, report.deleted), (2, 2), "{report}");
    assert!(p.resource_list().is_empty());
    // A collection that was empty from the start is no mistake.
    let fresh = root.path().join("fresh");
    build(&empty, &fresh, &options());
    build(&empty, &fresh, &options());
}

/// Runs the test `name` of this module again in a child process as nobody (65534),
/// through `setpriv`, when the tests run as root, who reads any file whatever its mode;
/// whether it did (and the test passed there), so that the caller, as root, returns.
fn ran_unprivileged(name: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let probe = tempfile::tempdir().unwrap();
    if fs::metadata(probe.path()).unwrap().uid() != 0 {
        return false;
    }
    let setpriv = std::process::Command::new("setpriv").arg("--help").output();
    assert!(
        setpriv.is_ok_and(|o| o.status.success()),
        "running as root, the test needs setpriv (util-linux) to read as another user"
    );
    let module = module_path!().split_once("::").unwrap().1;
    let test = format!("{module}::{name}");
    let out = std::process::Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args([test.as_str(), "--exact", "--test-threads=1"])
        .output()
        .expect("run the test as nobody");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{test} as nobody: {said}");
    assert!(said.contains("1 passed"), "{test} as nobody: {said}");
    true
}

/// A file and a directory that cannot be read (issue 22: one unreadable file made every
/// build fail, nothing published): each is skipped with its error, the rest is published;
/// once readable, the next run publishes them. Fails on the code before (an error).
#[test]
fn a_file_or_directory_that_cannot_be_read_is_skipped_and_the_rest_published() {
    use std::os::unix::fs::PermissionsExt;
    if ran_unprivileged("a_file_or_directory_that_cannot_be_read_is_skipped_and_the_rest_published")
    {
        return;
    }
    let mode = |path: &Path, mode| fs::set_permissions(path, fs::Permissions::from_mode(mode));
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    put(&coll, "a.txt", b"readable");
    put(&coll, "docs/b.txt", b"readable too");
    put(&coll, "docs/locked.txt", b"private");
    put(&coll, "closed/c.txt", b"private too");
    mode(&coll.join("docs/locked.txt"), 0o000).unwrap();
    mode(&coll.join("closed"), 0o000).unwrap();

    let report = build(&coll, &publish, &options());
    assert_eq!((report.resources, report.unreadable), (2, 2));
    assert_eq!(report.skipped.len(), 2, "{:?}", report.skipped);
    for (skipped, expected) in report.skipped.iter().zip(["closed", "docs/locked.txt"]) {
        assert_eq!(
            (skipped.path.to_str().unwrap(), skipped.reason),
            (expected, "cannot be read")
        );
        assert!(skipped.is_unreadable());
        let error = skipped.error.as_deref().unwrap_or_default();
        assert!(error.contains("ermission denied"), "{error}");
    }
    let p = publication(&publish);
    let listed: Vec<String> = p
        .resource_list()
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
    p.validate();

    // Readable again: published.
    mode(&coll.join("docs/locked.txt"), 0o644).unwrap();
    mode(&coll.join("closed"), 0o755).unwrap();
    let report = build(&coll, &publish, &options());
    assert_eq!((report.resources, report.created), (4, 2));
    assert_eq!(report.unreadable, 0);
}
