//! `resourcesync sync` end to end: the command against a Source served over HTTP on
//! 127.0.0.1 by the test (axum), with faults injected by the server.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};

// The simulated Source of the client's tests: it publishes every document with
// resourcesync-xml and resourcesync-package, and answers a URI as published.
// It is written for the client's minimum Rust (1.85, no let chains), not this crate's.
#[allow(dead_code, clippy::collapsible_if)]
#[path = "../../resourcesync-client/tests/client/sim.rs"]
mod sim;

#[path = "common/help.rs"]
mod help;

use sim::Source;

/// What the server does wrong, by path and how many times that path was asked for.
type Faults = Arc<Mutex<Box<dyn FnMut(&str, u32) -> Option<Fault> + Send>>>;

#[derive(Clone, Debug)]
enum Fault {
    Status(u16),
    /// The body stops after this many bytes (the connection is closed early).
    Truncate(usize),
    Corrupt,
    Redirect(String),
    /// The response waits this long.
    Slow(u64),
}

/// A Source on 127.0.0.1, served until dropped.
struct Served {
    source: Arc<Mutex<Source>>,
    faults: Faults,
    base: String,
    _runtime: tokio::runtime::Runtime,
}

impl Served {
    fn start(build: impl FnOnce(&mut Source)) -> Served {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let mut source = Source::new();
        source.base = base.clone();
        build(&mut source);
        source.publish();
        let source = Arc::new(Mutex::new(source));
        let faults: Faults = Arc::new(Mutex::new(Box::new(|_: &str, _| None)));
        let asked: Arc<Mutex<BTreeMap<String, u32>>> = Arc::default();
        let (s, f) = (source.clone(), faults.clone());
        let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
            let (s, f, asked) = (s.clone(), f.clone(), asked.clone());
            async move {
                let (response, wait) = respond(&s, &f, &asked, &uri);
                if let Some(ms) = wait {
                    tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
                }
                response
            }
        });
        runtime.spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Served {
            source,
            faults,
            base,
            _runtime: runtime,
        }
    }

    fn change(&self, f: impl FnOnce(&mut Source)) {
        let mut source = self.source.lock().unwrap();
        f(&mut source);
        source.publish();
    }

    fn faults(&self, f: impl FnMut(&str, u32) -> Option<Fault> + Send + 'static) {
        *self.faults.lock().unwrap() = Box::new(f);
    }

    /// Whether `dir` holds exactly the Source's resources (and the sync's own state).
    fn equals(&self, dir: &Path) -> Result<(), String> {
        let source = self.source.lock().unwrap();
        let mut held = BTreeMap::new();
        collect(dir, dir, &mut held);
        let expected: BTreeMap<String, Vec<u8>> = source
            .resources
            .iter()
            .map(|(p, (b, _))| (p.clone(), b.clone()))
            .collect();
        if held == expected {
            Ok(())
        } else {
            let missing: Vec<_> = expected.keys().filter(|k| !held.contains_key(*k)).collect();
            let extra: Vec<_> = held.keys().filter(|k| !expected.contains_key(*k)).collect();
            let differ: Vec<_> = held
                .iter()
                .filter(|(k, v)| expected.get(*k).is_some_and(|e| e != *v))
                .map(|(k, _)| k)
                .collect();
            Err(format!(
                "missing {missing:?}, extra {extra:?}, differ {differ:?}"
            ))
        }
    }
}

fn respond(
    source: &Mutex<Source>,
    faults: &Faults,
    asked: &Mutex<BTreeMap<String, u32>>,
    uri: &axum::http::Uri,
) -> (axum::response::Response, Option<u64>) {
    use axum::body::Body;
    use axum::response::Response;
    let path = uri.path().trim_start_matches('/').to_owned();
    let attempt = {
        let mut asked = asked.lock().unwrap();
        let n = asked.entry(path.clone()).or_default();
        *n += 1;
        *n - 1
    };
    let source = source.lock().unwrap();
    let mut r = source.respond(&format!("{}{}", source.base, path));
    let fault = (faults.lock().unwrap())(&path, attempt);
    let mut wait = None;
    match fault {
        Some(Fault::Status(s)) => {
            r.status = s;
            r.body = b"fault".to_vec();
        }
        Some(Fault::Redirect(to)) => {
            let response = Response::builder()
                .status(302)
                .header("location", to)
                .body(Body::empty())
                .unwrap();
            return (response, None);
        }
        Some(Fault::Slow(ms)) => wait = Some(ms),
        Some(Fault::Corrupt) => {
            if let Some(b) = r.body.last_mut() {
                *b ^= 0x20;
            }
        }
        Some(Fault::Truncate(n)) => {
            // A body that promises more than it sends: the client sees the connection
            // end early.
            let total = r.body.len();
            let sent = r.body[..n.min(total)].to_vec();
            let stream = cut_body(sent);
            let response = Response::builder()
                .status(r.status)
                .header("content-length", total.to_string())
                .body(stream)
                .unwrap();
            return (response, None);
        }
        None => {}
    }
    let mut builder = Response::builder().status(r.status);
    for (k, v) in &r.headers {
        builder = builder.header(k, v);
    }
    (builder.body(Body::from(r.body)).unwrap(), wait)
}

/// A body of these bytes that then fails, as a connection reset would.
fn cut_body(bytes: Vec<u8>) -> axum::body::Body {
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![
        Ok(bytes),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "cut",
        )),
    ];
    axum::body::Body::new(tokio_stream_iter(chunks))
}

fn tokio_stream_iter(
    items: Vec<Result<Vec<u8>, std::io::Error>>,
) -> impl axum::body::HttpBody<Data = axum::body::Bytes, Error = std::io::Error> + Send + 'static {
    StreamBody {
        items: items.into_iter(),
    }
}

struct StreamBody {
    items: std::vec::IntoIter<Result<Vec<u8>, std::io::Error>>,
}

impl axum::body::HttpBody for StreamBody {
    type Data = axum::body::Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::task::Poll::Ready(
            self.items
                .next()
                .map(|r| r.map(|b| http_body::Frame::data(axum::body::Bytes::from(b)))),
        )
    }
}

fn collect(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == ".resourcesync") {
            continue;
        }
        if path.is_dir() {
            collect(root, &path, out);
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.insert(rel, std::fs::read(&path).unwrap());
        }
    }
}

fn sync(args: &[&str]) -> Output {
    Driver::Tokio.run(args)
}

/// The two drivers of the client: `resourcesync sync` (reqwest and tokio, concurrent)
/// and `sync-ureq` (ureq, one request at a time).
#[derive(Clone, Copy, Debug)]
enum Driver {
    Tokio,
    Ureq,
}

const DRIVERS: [Driver; 2] = [Driver::Tokio, Driver::Ureq];

impl Driver {
    fn run(self, args: &[&str]) -> Output {
        let mut command = match self {
            Driver::Tokio => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
                c.arg("sync");
                c
            }
            Driver::Ureq => Command::new(env!("CARGO_BIN_EXE_sync-ureq")),
        };
        command.args(args).output().expect("run the driver")
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

fn populate(s: &mut Source, n: usize) {
    for i in 0..n {
        s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    s.put("docs/index.html", b"<html></html>");
    s.tick(10);
}

#[test]
fn both_drivers_baseline_then_go_on_incrementally_and_audit() {
    for driver in DRIVERS {
        let served = Served::start(|s| {
            populate(s, 30);
            s.publish.list_part = 7;
            s.publish.change_part = 2;
        });
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dest");
        let d = d.to_str().unwrap();
        let out = driver.run(&[&served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("baseline: 31 created"),
            "{driver:?}: {}",
            text(&out)
        );
        served.equals(Path::new(d)).unwrap();
        served.change(|s| {
            s.tick(5);
            s.put("r/0.txt", b"zero, again");
            s.put("r/new/deep.txt", b"new");
            s.delete("r/1.txt");
            s.tick(2);
        });
        // A dry run changes nothing on disk, the state included.
        let before = std::fs::read(Path::new(d).join(".resourcesync/state.json")).unwrap();
        let out = driver.run(&["--dry-run", &served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            served.equals(Path::new(d)).is_err(),
            "{driver:?}: a dry run changed the tree"
        );
        assert_eq!(
            std::fs::read(Path::new(d).join(".resourcesync/state.json")).unwrap(),
            before
        );
        let out = driver.run(&["--audit", &served.base, d]);
        assert_eq!(out.status.code(), Some(1), "{driver:?}: {}", text(&out));
        let out = driver.run(&[&served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout)
                .starts_with("incremental: 1 created, 1 updated, 1 deleted"),
            "{driver:?}: {}",
            text(&out)
        );
        served.equals(Path::new(d)).unwrap();
        let out = driver.run(&["--audit", &served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(", in sync"),
            "{driver:?}: {}",
            text(&out)
        );
    }
}

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

    let out = sync(&[&served.base, d]);
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
fn dumps_for_the_baseline_and_the_changes() {
    let served = Served::start(|s| {
        populate(s, 20);
        s.publish.resource_dump = true;
        s.publish.change_dump = true;
        s.publish.change_part = 3;
    });
    let dir = tempfile::tempdir().unwrap();
    for driver in DRIVERS {
        let d = dir.path().join(format!("{driver:?}"));
        let d = d.to_str().unwrap();
        let out = driver.run(&["--dump", &served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        served.equals(Path::new(d)).unwrap();
    }
    served.change(|s| {
        s.tick(3);
        s.put("r/5.txt", b"five");
        s.delete("r/6.txt");
        s.put("r/x/y.txt", b"deep");
        s.tick(1);
    });
    for driver in DRIVERS {
        let d = dir.path().join(format!("{driver:?}"));
        let d = d.to_str().unwrap();
        let out = driver.run(&[&served.base, d]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        served.equals(Path::new(d)).unwrap();
    }
}

#[test]
fn a_deletion_limit_stops_the_deletions() {
    for driver in DRIVERS {
        deletion_limit(driver);
    }
}

fn deletion_limit(driver: Driver) {
    let sync = |args: &[&str]| driver.run(args);
    let served = Served::start(|s| populate(s, 6));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let d = d.to_str().unwrap();
    assert_eq!(sync(&[&served.base, d]).status.code(), Some(0));
    served.change(|s| {
        s.delete("r/2.txt");
        s.delete("r/3.txt");
        s.tick(1);
    });
    // A baseline again: the state of the last one goes.
    std::fs::remove_file(Path::new(d).join(".resourcesync/state.json")).unwrap();
    let out = sync(&["--delete", "--max-deletes", "1", &served.base, d]);
    // Refused deletions leave the baseline undone: no checkpoint.
    assert!(
        !std::fs::read_to_string(Path::new(d).join(".resourcesync/state.json"))
            .unwrap()
            .contains("datetime")
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2 deletions, more than the 1 allowed"),
        "{}",
        text(&out)
    );
    assert!(Path::new(d).join("r/2.txt").exists());
    let out = sync(&["--delete", "--max-deletes", "2", &served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    served.equals(Path::new(d)).unwrap();
}

#[test]
fn faults_are_retried_or_refused_and_a_later_run_converges() {
    for driver in DRIVERS {
        faults(driver);
    }
}

fn faults(driver: Driver) {
    let sync = |args: &[&str]| driver.run(args);
    let served = Served::start(|s| populate(s, 12));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let d = d.to_str().unwrap();
    served.faults(|path, attempt| match (path, attempt) {
        ("r/0.txt", 0) => Some(Fault::Status(500)),
        ("r/1.txt", 0) => Some(Fault::Truncate(3)),
        ("r/2.txt", _) => Some(Fault::Status(404)),
        ("r/3.txt", _) => Some(Fault::Corrupt),
        ("r/4.txt", _) => Some(Fault::Redirect("http://localhost.example/4.txt".into())),
        _ => None,
    });
    let out = sync(&[&served.base, d]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("r/2.txt: HTTP status 404"), "{}", text(&out));
    assert!(err.contains("fixity"), "{}", text(&out));
    assert!(err.contains("refused"), "{}", text(&out));
    let dest = Path::new(d);
    assert!(dest.join("r/0.txt").exists() && dest.join("r/1.txt").exists());
    assert!(
        !dest.join("r/3.txt").exists(),
        "a corrupt body is not stored"
    );
    // No temporary file is left behind.
    assert_eq!(
        std::fs::read_dir(dest.join(".resourcesync/tmp"))
            .unwrap()
            .count(),
        0
    );
    served.faults(|_, _| None);
    let out = sync(&[&served.base, d]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    served.equals(dest).unwrap();
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
    served.source.lock().unwrap().files.insert(
        "resourcelist.xml".into(),
        sim::Response::ok(rl.into_bytes()),
    );
    let out = sync(&[&base, &ds]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    // Then changes that create, update and delete them.
    let cl = format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="{base}capabilitylist.xml"/><rs:md capability="changelist" from="2020-01-01T00:00:00Z"/>{}{}</urlset>"#,
        list(&evil),
        list(&evil).replace("created", "deleted")
    );
    served
        .source
        .lock()
        .unwrap()
        .files
        .insert("changelist.xml".into(), sim::Response::ok(cl.into_bytes()));
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
fn an_interrupted_sync_leaves_no_half_written_file_and_resumes() {
    for driver in DRIVERS {
        let served = Served::start(|s| populate(s, 30));
        // Half the resources are slow: the sync is stopped while it waits for them.
        served.faults(|path, _| {
            let slow = path
                .strip_prefix("r/")
                .and_then(|p| p.strip_suffix(".txt"))
                .and_then(|n| n.parse::<u32>().ok());
            slow.filter(|n| n % 2 == 0).map(|_| Fault::Slow(20_000))
        });
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("dest");
        let mut command = match driver {
            Driver::Tokio => {
                let mut c = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
                c.arg("sync");
                c
            }
            Driver::Ureq => Command::new(env!("CARGO_BIN_EXE_sync-ureq")),
        };
        let mut child = command
            .args([&served.base, d.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Until some resources are in place (bounded), then stop it at once.
        for _ in 0..100 {
            if d.join("r/1.txt").exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child.kill().unwrap();
        child.wait().unwrap();
        // Every file in the tree is whole: written aside, then renamed.
        let mut held = BTreeMap::new();
        collect(&d, &d, &mut held);
        assert!(
            !held.is_empty(),
            "{driver:?}: nothing was stored before the stop"
        );
        assert!(
            held.len() < 31,
            "{driver:?}: the sync was not stopped midway"
        );
        {
            let source = served.source.lock().unwrap();
            for (path, bytes) in &held {
                assert_eq!(
                    Some(bytes),
                    source.resources.get(path).map(|(b, _)| b),
                    "{driver:?}: {path}"
                );
            }
        }
        // The next run resumes and completes.
        served.faults(|_, _| None);
        let out = driver.run(&[&served.base, d.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(0), "{driver:?}: {}", text(&out));
        served.equals(&d).unwrap();
    }
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
