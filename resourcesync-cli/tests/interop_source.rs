//! Interop the other way round: the Python reference implementation `resync` (PyPI,
//! 2.0.1) as the Destination of a Source that `resourcesync build` publishes and
//! `resourcesync serve` serves, on 127.0.0.1.
//!
//! - `resync-sync --baseline`, finding the Resource List (an index over parts) from the
//!   Source Description (its default discovery), from the Capability List
//!   (`--capabilitylist`) and given (`--sitemap`), fetches every file with its bytes;
//!   after the collection changed and a second build, `resync-sync --incremental
//!   --delete` applies the open Change List, and `resync-sync --audit` finds the
//!   destination in sync (resync compares lastmod, to the second, and length; its
//!   `--hash` drops exactly the digests a Source lists, see `Client.prune_hashes`, so the
//!   test compares the bytes itself).
//! - resync's own parsers read every document and dump package of a publication, with the
//!   same entries as ours, and every path a manifest names is in its package with the
//!   manifest's length and digests.
//!
//! What resync 2.0.1 cannot do, and the test works around, saying so where it does:
//! `--incremental` reads `<mapping URI>/changelist.xml` unless given `--changelist-uri`
//! (it does not look in the Capability List), and cannot read a Change List Index at
//! all: its `ChangeList` takes only entries with a `change`, which the `<sitemap>`
//! entries of an index do not have (section 12.2), so it fails with a `ChangeTypeError`.
//! It is given the open Change List. The status line it logs after an incremental sync
//! says `NO CHANGES` whatever it applied.
//!
//! `.ci/run` installs resync in `.venv`; elsewhere set `RESOURCESYNC_PYTHON` to a Python
//! that has it. Without it the tests are reported ignored (this binary's harness is
//! `resourcesync_testkit::needs`), unless they are required: on CI (`CI` set to anything
//! but `false`) or when `RESOURCESYNC_PYTHON` is set, a missing resync fails them.
//!
//! resync keeps the Destination's state (`.resync-client-status.cfg`) in its working
//! directory, so each run has a temporary one. resync stores a resource at its URI's
//! path as it is, percent-encoding included (`docs/file%201.txt` for `docs/file 1.txt`):
//! the trees are compared with the destination's names percent-decoded.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use resourcesync_cli::serve;
use resourcesync_model::DocumentKind;
use resourcesync_xml::read_document;
use serde_json::Value;

/// How long one run of resync may take before it is killed and the test fails.
const TIMEOUT: Duration = Duration::from_secs(120);

const READER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/interop_source/resync_read.py"
);

use resourcesync_testkit::{needs, python};

fn main() -> std::process::ExitCode {
    let resync = python::find("resync", &["resync-sync"]);
    needs::main(vec![
        needs::trial(
            "resync_syncs_baseline_incremental_and_audit_from_our_source",
            &resync,
            resync_syncs_baseline_incremental_and_audit_from_our_source,
        ),
        needs::trial(
            "resync_reads_every_document_and_package_we_publish",
            &resync,
            resync_reads_every_document_and_package_we_publish,
        ),
    ])
}

/// Runs a command to its end within [`TIMEOUT`], killing it and failing past that.
fn run(command: &mut Command) -> Output {
    /// Kills the child if the test fails while it runs.
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Kill(
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the command"),
    );
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            bytes
        })
    };
    let stdout = drain(Box::new(child.0.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.0.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            break status;
        }
        assert!(
            start.elapsed() < TIMEOUT,
            "{command:?} still runs after {TIMEOUT:?}: killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `resourcesync build --json --base-url BASE [extra] COLLECTION PUBLISH`; its report.
fn build(base: &str, collection: &Path, publish: &Path, extra: &[&str]) -> Value {
    let out = run(Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["build", "--json", "--base-url", base])
        .args(extra)
        .arg(collection)
        .arg(publish));
    assert!(out.status.success(), "build failed: {}", text(&out));
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

/// `resync-sync ARGS` run by `python`, in `cwd` (where resync keeps its state). resync
/// exits 0 even when it stops on a fatal error (it prints `FatalError: ...`), so
/// that and any traceback fail here too. Its stderr: the log, where the status is.
fn resync_sync(python: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = run(Command::new(python)
        .arg(python.with_file_name("resync-sync"))
        .args(args)
        .current_dir(cwd));
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && !log.contains("FatalError") && !log.contains("Traceback"),
        "resync-sync {args:?}: {}",
        text(&out)
    );
    log
}

/// The `Status:` lines of resync's log, each as the status word and the counts, as in
/// `Status:         IN SYNC (same=3, to create=0, to update=0, to delete=0)`.
fn statuses(log: &str) -> Vec<(String, BTreeMap<String, u64>)> {
    let lines: Vec<_> = log
        .lines()
        .filter_map(|l| l.split_once("Status:").map(|(_, s)| s))
        .map(|line| {
            let (word, counts) = line.split_once('(').unwrap();
            let counts = counts
                .trim_end_matches(')')
                .split(", ")
                .map(|pair| {
                    let (name, n) = pair.split_once('=').unwrap();
                    (name.to_owned(), n.parse().unwrap())
                })
                .collect();
            (word.trim().to_owned(), counts)
        })
        .collect();
    assert!(!lines.is_empty(), "no status in resync's log:\n{log}");
    lines
}

/// The last `Status:` line of resync's log.
fn status(log: &str) -> (String, BTreeMap<String, u64>) {
    statuses(log).pop().unwrap()
}

/// Writes `bytes` at `relative` under `root`, making its directories.
fn put(root: &Path, relative: &str, bytes: &[u8]) {
    let path = root.join(relative);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, bytes).unwrap();
}

/// A collection of `n` files of mixed media types and sizes (some empty), nested up to
/// three levels deep, with names holding a space, non-ASCII letters and a `+`.
fn collection(root: &Path, n: usize) {
    let kinds = ["txt", "html", "json", "png", "pdf", "xml", "csv", "bin"];
    for i in 0..n {
        let kind = kinds[i % kinds.len()];
        let path = match i % 6 {
            0 => format!("top-{i}.{kind}"),
            1 => format!("docs/file {i}.{kind}"),
            2 => format!("docs/été/{i}.{kind}"),
            3 => format!("docs/a+b/{i}.{kind}"),
            _ => format!("data/{}/{}/r{i}.{kind}", i % 3, i % 7),
        };
        let size = (i * 37) % 5000;
        let bytes: Vec<u8> = (0..size).map(|b| (b * 31 + i) as u8).collect();
        put(root, &path, &bytes);
    }
}

/// Every file under `root` by its path relative to it (`/`-separated), with its bytes;
/// names percent-decoded when `decode`.
fn tree(root: &Path, decode: bool) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let relative = path
                .strip_prefix(root)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let name = if decode {
                percent_encoding::percent_decode_str(&relative)
                    .decode_utf8()
                    .unwrap()
                    .into_owned()
            } else {
                relative
            };
            files.insert(name, fs::read(&path).unwrap());
        }
    }
    files
}

/// Asserts that the destination holds exactly the collection's files, byte for byte.
fn assert_same_tree(collection: &Path, dest: &Path) {
    let ours = tree(collection, false);
    let theirs = tree(dest, true);
    let only_ours: Vec<&String> = ours.keys().filter(|k| !theirs.contains_key(*k)).collect();
    let only_theirs: Vec<&String> = theirs.keys().filter(|k| !ours.contains_key(*k)).collect();
    let differ: Vec<&String> = ours
        .iter()
        .filter(|(k, v)| theirs.get(*k).is_some_and(|w| w != *v))
        .map(|(k, _)| k)
        .collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty() && differ.is_empty(),
        "missing at the destination: {only_ours:?}\nonly at the destination: {only_theirs:?}\n\
         different bytes: {differ:?}"
    );
}

/// A listener on 127.0.0.1 bound before the build (the documents name its port), then
/// `serve` on it in process; stopped at the end, and by `Drop` when a test fails.
struct Server {
    runtime: Option<tokio::runtime::Runtime>,
    listener: Option<tokio::net::TcpListener>,
    /// `http://127.0.0.1:PORT/`.
    base: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl Server {
    fn bind() -> Server {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        Server {
            runtime: Some(runtime),
            listener: Some(listener),
            base,
            stop: None,
            task: None,
        }
    }

    fn serve(&mut self, publish: &Path) {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let listener = self.listener.take().unwrap();
        let runtime = self.runtime.as_ref().unwrap();
        self.task = Some(
            runtime.spawn(serve::serve(listener, publish.to_path_buf(), async {
                let _ = stopped.await;
            })),
        );
        self.stop = Some(stop);
    }

    /// Stops the server and checks that it stopped cleanly.
    fn stop(mut self) {
        let _ = self.stop.take().unwrap().send(());
        let task = self.task.take().unwrap();
        let runtime = self.runtime.as_ref().unwrap();
        let served = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(20), task).await })
            .expect("the server stops within 20 s")
            .unwrap();
        served.unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(5));
        }
    }
}

fn resync_syncs_baseline_incremental_and_audit_from_our_source(python: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let collection_dir = root.join("collection");
    collection(&collection_dir, 300);
    let publish = root.join("publish");
    let mut server = Server::bind();
    let base = server.base.clone();
    // 50 entries a document: the Resource List is an index over 6 parts. (The Change
    // List Index has one Change List, open: the first build lists no changes, the second
    // nine.)
    let report = build(&base, &collection_dir, &publish, &["--max-entries", "50"]);
    assert_eq!(report["resources"], 300, "{report}");
    server.serve(&publish);
    let started = Instant::now();

    // The baseline, the Resource List found three ways: from the Source Description at
    // BASE.well-known/resourcesync (resync's default discovery), from the Capability
    // List, and given.
    let capability_list = format!("{base}resourcesync/capabilitylist.xml");
    let resource_list = format!("{base}resourcesync/resourcelist.xml");
    let ways: [(&str, Vec<&str>); 3] = [
        ("description", vec![]),
        ("capabilitylist", vec!["--capabilitylist", &capability_list]),
        ("sitemap", vec!["--sitemap", &resource_list]),
    ];
    let mut dests = Vec::new();
    for (name, discovery) in &ways {
        let dest = root.join(format!("dest-{name}"));
        let cwd = root.join(format!("cwd-{name}"));
        fs::create_dir(&cwd).unwrap();
        let mapping = format!("{base}={}", dest.display());
        let mut args = vec!["--baseline", "--delete", "-v"];
        args.extend(discovery);
        args.push(&mapping);
        let log = resync_sync(&python, &cwd, &args);
        let (word, counts) = status(&log);
        assert_eq!(word, "SYNCED", "{name}:\n{log}");
        assert_eq!(counts["created"], 300, "{name}:\n{log}");
        // It read what this way names, and the Resource List through its index.
        let read = match *name {
            "description" => format!("Reading source description {base}.well-known/resourcesync"),
            "capabilitylist" => format!("Reading capability list {capability_list}"),
            _ => format!("Reading resource list {resource_list}"),
        };
        assert!(log.contains(&read), "{name}: no `{read}` in\n{log}");
        assert!(
            log.contains(&format!("Reading resource list {resource_list}")),
            "{name}:\n{log}"
        );
        assert!(
            log.contains("Parsed as sitemapindex, 6 sitemaps"),
            "{name}:\n{log}"
        );
        // What it fetched has the length listed (resync logs a mismatch, and goes on).
        assert!(!log.contains("does not match"), "{name}:\n{log}");
        assert_same_tree(&collection_dir, &dest);
        dests.push((dest, cwd, mapping));
    }
    // resync keeps the percent-encoding of a URI's path in the file's name.
    let (dest, cwd, mapping) = dests.remove(0);
    assert!(dest.join("docs/file%201.html").is_file());
    assert!(dest.join("docs/%C3%A9t%C3%A9/2.json").is_file());
    eprintln!("three baselines: {:?}", started.elapsed());

    // The open Change List of the first build is empty: an incremental sync reads it and
    // has nothing to do.
    let index = read_document(&fs::read(publish.join("resourcesync/changelist.xml")).unwrap())
        .unwrap()
        .0;
    let changelist = index.entries.last().unwrap().loc.as_str().to_owned();
    let log = resync_sync(
        &python,
        &cwd,
        &["--incremental", "--changelist-uri", &changelist, &mapping],
    );
    assert_eq!(
        statuses(&log),
        [(
            "NO CHANGES".to_owned(),
            BTreeMap::from([
                ("created".to_owned(), 0),
                ("updated".to_owned(), 0),
                ("deleted".to_owned(), 0)
            ])
        )],
        "{log}"
    );

    // Changes: three files created (one in a new directory, one with a space), three
    // updated (one to the same size), three deleted; then a second build, which lists
    // them in the open Change List.
    put(&collection_dir, "new/deep/created one.txt", b"created\n");
    put(
        &collection_dir,
        "docs/created.json",
        b"{\"created\": true}\n",
    );
    put(&collection_dir, "top-created.html", b"<p>created</p>\n");
    let mut flipped = fs::read(collection_dir.join("top-6.csv")).unwrap();
    for b in &mut flipped {
        *b = !*b;
    }
    put(&collection_dir, "top-6.csv", &flipped);
    put(&collection_dir, "docs/file 1.html", b"updated, shorter\n");
    put(&collection_dir, "docs/été/2.json", &[7u8; 6000]);
    for gone in ["top-12.pdf", "docs/file 7.bin", "data/1/4/r4.pdf"] {
        fs::remove_file(collection_dir.join(gone)).unwrap();
    }
    let report = build(&base, &collection_dir, &publish, &["--max-entries", "50"]);
    assert_eq!(report["resources"], 300, "{report}");
    // resync does not look for the Change List in the Capability List: it reads
    // BASE/changelist.xml unless told where it is. Nor can it read a Change List Index
    // (its ChangeList wants a change on every entry, and an index's have none: a
    // ChangeTypeError), so it is given the open Change List, the index's last entry,
    // which holds every change since the first build.
    let index = read_document(&fs::read(publish.join("resourcesync/changelist.xml")).unwrap())
        .unwrap()
        .0;
    assert_eq!(index.head.kind(), DocumentKind::ChangeListIndex);
    let changelist = index.entries.last().unwrap().loc.as_str().to_owned();
    let started = Instant::now();
    let log = resync_sync(
        &python,
        &cwd,
        &[
            "--incremental",
            "--delete",
            "-v",
            "--changelist-uri",
            &changelist,
            &mapping,
        ],
    );
    // Two status lines: the plan, then what was applied, which resync 2.0.1 labels NO
    // CHANGES whatever it did (its last log_status call in Client.incremental leaves
    // in_sync at its default, True).
    let lines = statuses(&log);
    assert_eq!(lines.len(), 2, "{log}");
    for (word, counts) in &lines {
        assert_eq!(counts["created"], 3, "{log}");
        assert_eq!(counts["updated"], 3, "{log}");
        assert_eq!(counts["deleted"], 3, "{log}");
        assert!(
            ["CHANGES APPLIED", "NO CHANGES"].contains(&word.as_str()),
            "{log}"
        );
    }
    assert_eq!(lines[0].0, "CHANGES APPLIED", "{log}");
    assert!(
        log.contains("Read source change list, 9 changes listed"),
        "{log}"
    );
    assert_same_tree(&collection_dir, &dest);
    eprintln!("incremental: {:?}", started.elapsed());

    // The audit: in sync, every file the same.
    let started = Instant::now();
    let log = resync_sync(&python, &cwd, &["--audit", &mapping]);
    let (word, counts) = status(&log);
    assert_eq!(word, "IN SYNC", "{log}");
    assert_eq!(counts["same"], 300, "{log}");
    assert_eq!(counts["to create"], 0, "{log}");
    assert_eq!(counts["to update"], 0, "{log}");
    assert_eq!(counts["to delete"], 0, "{log}");
    // And the other destinations, not synced since: the audit sees the changes.
    for (_, cwd, mapping) in &dests {
        let log = resync_sync(&python, cwd, &["--audit", mapping]);
        let (word, counts) = status(&log);
        assert_eq!(word, "NOT IN SYNC", "{log}");
        assert_eq!(counts["same"], 294, "{log}");
        assert_eq!(counts["to create"], 3, "{log}");
        assert_eq!(counts["to update"], 3, "{log}");
        assert_eq!(counts["to delete"], 3, "{log}");
    }
    eprintln!("audits: {:?}", started.elapsed());
    server.stop();
}

/// What resync read of one file, as `resync_read.py` prints it.
fn resync_read(python: &Path, files: &[(&str, PathBuf)]) -> Vec<Value> {
    let mut command = Command::new(python);
    command.arg(READER);
    for (capability, file) in files {
        command.arg(capability).arg(file);
    }
    let out = run(&mut command);
    assert!(
        out.status.success(),
        "resync could not read: {}",
        text(&out)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), files.len());
    lines
}

fn resync_reads_every_document_and_package_we_publish(python: PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let collection_dir = root.join("collection");
    collection(&collection_dir, 240);
    let publish = root.join("publish");
    let base = "http://127.0.0.1:8080/";
    let options = [
        "--max-entries",
        "50",
        "--resource-dump",
        "--change-dump",
        "--max-package-bytes",
        "100000",
    ];
    build(base, &collection_dir, &publish, &options);
    // A second run with changes of each kind, for Change Lists and a Change Dump
    // package that hold updates and deletions.
    put(&collection_dir, "docs/created.txt", b"created\n");
    put(&collection_dir, "top-0.txt", b"updated\n");
    fs::remove_file(collection_dir.join("docs/file 1.html")).unwrap();
    build(base, &collection_dir, &publish, &options);

    let mut files: Vec<PathBuf> = vec![publish.join(".well-known/resourcesync")];
    let mut docs: Vec<PathBuf> = fs::read_dir(publish.join("resourcesync"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml" || e == "zip"))
        .collect();
    docs.sort();
    files.extend(docs);

    // Ours: the capability and the entries (loc, change) of each document, and of each
    // package's manifest.
    let mut expected = Vec::new();
    for file in &files {
        let document = if file.extension().is_some_and(|e| e == "zip") {
            resourcesync_package::Package::open(file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
                .manifest()
                .clone()
        } else {
            read_document(&fs::read(file).unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()))
                .0
        };
        let capability = document
            .head
            .md
            .capability
            .as_ref()
            .expect("a capability")
            .as_str()
            .to_owned();
        let entries: Vec<(String, Option<String>)> = document
            .entries
            .iter()
            .map(|e| {
                let change = e.md.as_ref().and_then(|m| m.change).map(|c| c.as_str());
                (e.loc.as_str().to_owned(), change.map(str::to_owned))
            })
            .collect();
        expected.push((document.head.kind(), capability, entries));
    }
    let kinds: Vec<DocumentKind> = expected.iter().map(|(k, _, _)| *k).collect();
    for kind in [
        DocumentKind::SourceDescription,
        DocumentKind::CapabilityList,
        DocumentKind::ResourceListIndex,
        DocumentKind::ResourceList,
        DocumentKind::ChangeListIndex,
        DocumentKind::ChangeList,
        DocumentKind::ResourceDump,
        DocumentKind::ResourceDumpManifest,
        DocumentKind::ChangeDump,
        DocumentKind::ChangeDumpManifest,
    ] {
        assert!(kinds.contains(&kind), "no {kind:?} among {files:?}");
    }

    let args: Vec<(&str, PathBuf)> = expected
        .iter()
        .zip(&files)
        .map(|((_, capability, _), file)| (capability.as_str(), file.clone()))
        .collect();
    let theirs = resync_read(&python, &args);
    for ((file, (kind, capability, entries)), theirs) in files.iter().zip(&expected).zip(&theirs) {
        let name = file.strip_prefix(&publish).unwrap().display();
        assert_eq!(
            theirs["capability"],
            capability.as_str(),
            "{name}: {theirs}"
        );
        let index = matches!(
            kind,
            DocumentKind::ResourceListIndex | DocumentKind::ChangeListIndex
        );
        assert_eq!(theirs["index"], index, "{name}");
        let mut ours: Vec<(String, Option<String>)> = entries.clone();
        let mut read: Vec<(String, Option<String>)> =
            serde_json::from_value(theirs["entries"].clone()).unwrap();
        assert_eq!(read.len(), ours.len(), "{name}: entries");
        ours.sort();
        read.sort();
        assert_eq!(read, ours, "{name}");
        assert_eq!(
            theirs["without_datetime"], 0,
            "{name}: changes without datetime"
        );
        // resync's ChangeList cannot hold a Change List Index: it wants a change on every
        // entry, and an index's have none (section 12.2). Its generic parser read the
        // index above; no other document may need it.
        if *kind == DocumentKind::ChangeListIndex {
            assert!(
                theirs["class_error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("ChangeTypeError")),
                "{name}: {}",
                theirs["class_error"]
            );
        } else {
            assert_eq!(theirs["class_error"], Value::Null, "{name}");
        }
        if file.extension().is_some_and(|e| e == "zip") {
            assert_eq!(theirs["missing"], serde_json::json!([]), "{name}");
            assert_eq!(theirs["differing"], serde_json::json!([]), "{name}");
        }
    }
    eprintln!("resync read {} documents and packages", files.len());
}
