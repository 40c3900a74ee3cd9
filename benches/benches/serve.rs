//! `resourcesync serve` beside nginx, and `resourcesync sync` beside wget2, aria2c, the
//! Python reference client and plain GETs, on the same collections, in the same run: how
//! fast each client fetches each collection from each server.
//!
//! Two collections are generated once per process in `/dev/shm` when there is one (tmpfs:
//! the servers' and clients' work is measured, not this machine's disk): 10,000 files of
//! 1 KiB and 200 files of 1 MiB, pseudo-random bytes that do not compress, named `.bin`
//! (`application/octet-stream` for both servers). Each is published twice with
//! `resourcesync build` (md5 and sha-256 listed for every file), once for each server's
//! address (a publication names its base URL), into publications of the same files: both
//! servers serve the same bytes.
//!
//! The servers, both on 127.0.0.1, each a process in a session of its own, as servers
//! run (nginx's own default; `web::server_command` says why it matters on one machine;
//! `BENCH_ONE_SESSION=1` runs both in the bench's session, `serve` still a process):
//! - `resourcesync serve`: this bench's program run again as a child, where it serves
//!   (`serve::serve` with the default limits) on a tokio runtime with a worker per core,
//!   as the command does;
//! - nginx (Debian's `nginx-light`), a child process with a generated configuration:
//!   Debian's defaults that bear on speed (`worker_processes auto`, `sendfile on`,
//!   `tcp_nopush on`, keep-alive), root at the publication, `access_log off`, its pid,
//!   error log and temporary directories in a temporary directory.
//!
//! The clients, each against both servers:
//! - `resourcesync sync`, a baseline into a fresh directory, 16 requests in flight
//!   (`asynchronous::sync`, in process, as the command calls it): Source Description,
//!   Capability List, Resource List, then every resource, checked against its length and
//!   the strongest listed digest (sha-256), the default;
//! - the same with `--verify all` (md5 and sha-256 of every resource);
//! - wget2 with 16 threads over the list of the resources' URLs (`--input-file`), into a
//!   fresh directory; it checks nothing;
//! - aria2c, 16 downloads at once over the same URLs, each with its path and its md5,
//!   which aria2c checks;
//! - `resync-sync --baseline` (the Python reference client, resync 2.0.1, one request at
//!   a time, md5 checked);
//! - plain GETs of the same URLs by 16 tasks on the runtime's workers, each body
//!   written to its file there, nothing checked: over reqwest (the ceiling of a client
//!   on our HTTP stack), and over hyper's connection API, a connection per task, without
//!   reqwest's layers and pool (what such a client costs at the least);
//! - the least a client that keeps `sync`'s promises for each body costs: 16 blocking
//!   threads, each with one HTTP/1.1 connection (std's `TcpStream`, httparse), each body
//!   hashed (sha-256), written to a temporary file, a journal line written and the file
//!   renamed into place; no document read, no decision, no async runtime.
//!
//! With `SERVE_COMMANDS=LABEL=PATH,...` (absolute paths: cargo runs the bench in
//! `benches/`), also each of those builds of the command, run as
//! a process as a user runs it (`PATH sync --concurrency 16 BASE OUT`), its CPU time
//! counted as the client's: two builds of the command, before and after a change, side
//! by side with the peers in the same rounds.
//!
//! Beside them the hashing floor: the sha-256 (and md5 and sha-256) of every file read
//! from the collection, on two threads: what a client that checks the digests must
//! compute, whatever else it does.
//!
//! Every iteration asserts that the client got every file, whole. With `SERVE_PAIRED=N`
//! (what the figures are: `benches/README.md`), N rounds: in each every client
//! fetches from `serve` then from nginx; printed are the medians and the medians of the
//! rounds' ratios (ratios of times taken in the same round: the drift of a shared machine
//! between rounds cancels out), and for each client and server the CPU time the client
//! and the server used (`/proc`), with what they come to on 2 cores: a CPU-bound run's
//! floor. Without it, criterion's groups, then the ratios of the medians. Per client
//! `serve`'s throughput over nginx's; from nginx `sync`'s over each peer's.
//!
//! nginx, wget2 and aria2c come from the system (`.ci/run` installs them with apt-get),
//! `resync-sync` from `.venv` or `RESOURCESYNC_PYTHON`'s directory; without one, the bench
//! says so and skips what needs it, except on CI (`CI` set), where it fails.
//!
//! `SERVE_PAIRED=5 cargo bench -p resourcesync-benches --bench serve`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The allocator the `resourcesync` command runs with (its `main.rs` says why): what is
/// measured here is the command's `sync` (in this process) and `serve` (this program
/// run again as the server).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group};
use resourcesync_benches::peers::{self, median, program};
use resourcesync_cli::serve;
use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{AsyncStop, sync as synchronize};
use resourcesync_model::{Algorithms, Measure, Verification};
use resourcesync_testkit::python::python;

#[path = "shared/web.rs"]
mod web;
use web::{Collection, LARGE, Nginx, SMALL, free_port, generate, own_cpu, publish};

/// Whether criterion measures (`cargo bench`), rather than runs each function once
/// (`cargo test --benches`).
fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Requests in flight for both clients.
const CONCURRENCY: usize = 16;

/// `resourcesync serve` as a server of its own, until dropped: this bench's program run
/// again as a child in a session of its own (`web::server_command`, as nginx is run),
/// where [`main`] serves the publication as the command does.
struct Ours {
    base: String,
    child: std::process::Child,
}

/// The variables that make this bench's program a `serve` ([`serve_here`]): the
/// publication's directory, and the address to listen on.
const SERVE_DIR: &str = "SERVE_BENCH_SERVE_DIR";
const SERVE_ADDR: &str = "SERVE_BENCH_SERVE_ADDR";

impl Ours {
    fn start(port: u16, publish: &Path) -> Ours {
        let exe = std::env::current_exe().unwrap();
        let addr = format!("127.0.0.1:{port}");
        let mut child = web::server_command(&exe)
            .env(SERVE_DIR, publish)
            .env(SERVE_ADDR, &addr)
            // Its standard input closed is its signal to stop (`serve_here`): this
            // process gone, however it ended, it does not serve on.
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        loop {
            // Its exit first: one that could not bind (the port taken since
            // `free_port`) is said as such, not taken for a server up.
            if let Some(status) = child.try_wait().unwrap() {
                panic!("serve exited ({status})");
            }
            if std::net::TcpStream::connect(&addr).is_ok() {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "serve did not listen within 10 s"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Ours {
            base: format!("http://{addr}/"),
            child,
        }
    }

    /// The CPU time the server has used so far, in seconds.
    fn cpu(&self) -> f64 {
        web::process_cpu(self.child.id())
    }
}

impl Drop for Ours {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In the child [`Ours::start`] runs: serves `dir` at `addr` as `resourcesync serve`
/// does (a multi-thread runtime, a worker per core, the server's loop on the main
/// thread; `serve::serve` with the default limits) until its standard input closes.
fn serve_here(dir: PathBuf, addr: String) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (closed, stdin_closed) = tokio::sync::oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
        let _ = closed.send(());
    });
    runtime
        .block_on(async move {
            let listener = tokio::net::TcpListener::bind(&addr).await?;
            serve::serve(listener, dir, async {
                let _ = stdin_closed.await;
            })
            .await
        })
        .unwrap();
}

/// Files under `dir`, and their bytes.
fn fetched(dir: &Path) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0;
    for entry in walk(dir) {
        files += 1;
        bytes += entry;
    }
    (files, bytes)
}

fn walk(dir: &Path) -> Vec<u64> {
    let mut lens = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        // The client's own records (sync's state) are not what it fetched.
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let meta = entry.metadata().unwrap();
        if meta.is_dir() {
            lens.extend(walk(&entry.path()));
        } else {
            lens.push(meta.len());
        }
    }
    lens
}

/// A client: fetches the collection from the server at `base` into `out`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Client {
    Sync,
    SyncAll,
    /// A build of the command, by its index in [`commands`].
    Command(usize),
    Wget2,
    Aria2c,
    Resync,
    Ceiling,
    Hyper,
    Lean,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Client::Sync => "resourcesync sync",
            Client::SyncAll => "resourcesync sync --verify all",
            Client::Command(i) => commands()[i].0.as_str(),
            Client::Wget2 => "wget2",
            Client::Aria2c => "aria2c (md5)",
            Client::Resync => "resync-sync (Python)",
            Client::Ceiling => "plain GETs (reqwest, nothing checked)",
            Client::Hyper => "plain GETs (hyper's connections, nothing checked)",
            Client::Lean => "blocking GETs with sync's promises (sha-256, rename, journal)",
        }
    }
}

/// The builds of the command named by `SERVE_COMMANDS` (`LABEL=PATH,...`), each with the
/// label it is printed under.
fn commands() -> &'static [(String, PathBuf)] {
    static COMMANDS: std::sync::OnceLock<Vec<(String, PathBuf)>> = std::sync::OnceLock::new();
    COMMANDS.get_or_init(|| {
        let Ok(list) = std::env::var("SERVE_COMMANDS") else {
            return Vec::new();
        };
        (list.split(',').filter(|c| !c.is_empty()))
            .map(|c| {
                let (label, path) = c.split_once('=').expect("SERVE_COMMANDS is LABEL=PATH,...");
                (format!("command {label}"), PathBuf::from(path))
            })
            .collect()
    })
}

struct Fetcher<'a> {
    collection: &'a Collection,
    runtime: tokio::runtime::Runtime,
    wget2: Option<PathBuf>,
    aria2c: Option<PathBuf>,
    resync: Option<PathBuf>,
    http: reqwest::Client,
    urls: tempfile::TempDir,
}

impl Fetcher<'_> {
    /// Fetches the whole collection from `base` with `client` into a fresh directory and
    /// checks it; the time it took.
    fn fetch(&self, client: Client, base: &str) -> Duration {
        let dir = resourcesync_benches::scratch("serve-bench-out");
        let out = dir.path().join("out");
        let took = match client {
            Client::Sync | Client::SyncAll => {
                let verification = match client {
                    Client::SyncAll => Verification::All,
                    _ => Verification::Strongest,
                };
                let options = SyncOptions::new(base.parse().unwrap(), &out)
                    .with_concurrency(CONCURRENCY)
                    .with_verification(verification);
                let start = Instant::now();
                let run = async move { synchronize(&options, &AsyncStop::new(), &mut ()).await };
                let synced = resourcesync_benches::spawned(&self.runtime, run).unwrap();
                let took = start.elapsed();
                assert_eq!(synced.report.created, self.collection.paths.len() as u64);
                assert_eq!(synced.report.failed, 0);
                took
            }
            Client::Command(i) => {
                let mut command = Command::new(&commands()[i].1);
                command
                    .args(["sync", "--concurrency", &CONCURRENCY.to_string(), base])
                    .arg(&out);
                peers::timed(client.name(), command)
            }
            Client::Wget2 => {
                let list = self.list(client, base, peers::wget2_line);
                peers::wget2(self.wget2.as_ref().unwrap(), &list, &out, CONCURRENCY)
            }
            Client::Aria2c => {
                let list = self.list(client, base, peers::aria2c_line);
                peers::aria2c(self.aria2c.as_ref().unwrap(), &list, &out, CONCURRENCY)
            }
            Client::Resync => {
                let mut command = Command::new(self.resync.as_ref().unwrap());
                command
                    .args([
                        "--baseline",
                        "--sitemap",
                        &format!("{base}resourcesync/resourcelist.xml"),
                    ])
                    .arg(format!("{base}={}", out.display()));
                peers::timed("resync-sync", command)
            }
            Client::Ceiling => self.ceiling(base, &out, Http::Reqwest),
            Client::Hyper => self.ceiling(base, &out, Http::Hyper),
            Client::Lean => self.lean(base, &out),
        };
        let (files, bytes) = fetched(&out);
        assert_eq!(files, self.collection.paths.len(), "{client:?} from {base}");
        assert_eq!(bytes, self.collection.bytes, "{client:?} from {base}");
        took
    }

    /// Plain GETs of every resource's URL by CONCURRENCY tasks on the runtime's workers,
    /// each taking the next URL when its last body is written to its file under `out`:
    /// no document read, nothing checked, what a client over `http` costs at the least.
    /// Over reqwest, each task shares its pool; over hyper, each holds one connection
    /// of its own (HTTP/1.1 keep-alive) and sends on it.
    fn ceiling(&self, base: &str, out: &Path, http: Http) -> Duration {
        for path in &self.collection.paths {
            if let Some((dir, _)) = path.rsplit_once('/') {
                std::fs::create_dir_all(out.join(dir)).unwrap();
            }
        }
        let jobs: Vec<(String, PathBuf)> = (self.collection.paths.iter())
            .map(|path| (format!("{base}{path}"), out.join(path)))
            .collect();
        let jobs = Arc::new(Mutex::new(jobs.into_iter()));
        let reqwest = self.http.clone();
        let start = Instant::now();
        let got = self.runtime.block_on(async move {
            let tasks: Vec<_> = (0..CONCURRENCY)
                .map(|_| {
                    let jobs = jobs.clone();
                    let reqwest = reqwest.clone();
                    tokio::spawn(async move {
                        let mut connection = None;
                        let mut total = 0;
                        loop {
                            let Some((url, file)) = jobs.lock().unwrap().next() else {
                                return total;
                            };
                            let body = match http {
                                Http::Reqwest => {
                                    let response = reqwest.get(&url).send().await.unwrap();
                                    response.bytes().await.unwrap()
                                }
                                Http::Hyper => hyper_get(&mut connection, &url).await,
                            };
                            std::fs::write(file, &body).unwrap();
                            total += body.len() as u64;
                        }
                    })
                })
                .collect();
            let mut total = 0;
            for task in tasks {
                total += task.await.unwrap();
            }
            total
        });
        let took = start.elapsed();
        assert_eq!(got, self.collection.bytes);
        took
    }

    /// The least a client that keeps `sync`'s promises for each body costs, without an
    /// async runtime or a state machine: CONCURRENCY threads, each with one HTTP/1.1
    /// connection of its own (std's `TcpStream`, the response's head read by httparse,
    /// its body by `Content-Length`), each body hashed with sha-256 (computed, compared
    /// with nothing: there is no listing), written to a temporary file, a journal line
    /// written (one file, under a lock) and the file renamed into place. No document
    /// read, no decision made: the floor of the design, against which `sync`'s own cost
    /// is measured (benches/README, session 28).
    fn lean(&self, base: &str, out: &Path) -> Duration {
        use std::io::{Read, Write};
        for path in &self.collection.paths {
            if let Some((dir, _)) = path.rsplit_once('/') {
                std::fs::create_dir_all(out.join(dir)).unwrap();
            }
        }
        let tmp = out.join(".tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let journal = Mutex::new(std::fs::File::create(out.join(".journal")).unwrap());
        let authority = base.trim_start_matches("http://").trim_end_matches('/');
        let next = std::sync::atomic::AtomicUsize::new(0);
        let paths = &self.collection.paths;
        let start = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..CONCURRENCY {
                scope.spawn(|| {
                    let mut connection = std::net::TcpStream::connect(authority).unwrap();
                    connection.set_nodelay(true).unwrap();
                    // A server that stalls is a failure, not a bench that never ends.
                    let stall = Some(Duration::from_secs(30));
                    connection.set_read_timeout(stall).unwrap();
                    let mut buffer = vec![0u8; 64 << 10];
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(path) = paths.get(i) else { return };
                        let request = format!("GET /{path} HTTP/1.1\r\nHost: {authority}\r\n\r\n");
                        connection.write_all(request.as_bytes()).unwrap();
                        let mut filled = 0;
                        let (head, length) = loop {
                            let n = connection.read(&mut buffer[filled..]).unwrap();
                            assert!(n > 0, "{path}: the connection closed");
                            filled += n;
                            let mut headers = [httparse::EMPTY_HEADER; 32];
                            let mut response = httparse::Response::new(&mut headers);
                            if let httparse::Status::Complete(head) =
                                response.parse(&buffer[..filled]).unwrap()
                            {
                                assert_eq!(response.code, Some(200), "{path}");
                                let header = |name: &str| {
                                    (response.headers.iter())
                                        .find(|h| h.name.eq_ignore_ascii_case(name))
                                        .map(|h| String::from_utf8_lossy(h.value).into_owned())
                                };
                                // Read by its length on a connection kept open: the two
                                // servers here send nothing else.
                                assert_eq!(header("transfer-encoding"), None, "{path}");
                                assert_ne!(header("connection").as_deref(), Some("close"));
                                let length: usize = header("content-length")
                                    .unwrap_or_else(|| panic!("{path}: no Content-Length"))
                                    .parse()
                                    .unwrap();
                                break (head, length);
                            }
                        };
                        if buffer.len() < head + length {
                            buffer.resize(head + length, 0);
                        }
                        while filled < head + length {
                            let n = connection.read(&mut buffer[filled..]).unwrap();
                            assert!(n > 0, "{path}: the body cut short");
                            filled += n;
                        }
                        let body = &buffer[head..head + length];
                        let mut measure = Measure::new(Algorithms::SHA256);
                        measure.update(body);
                        let measured = measure.finish();
                        let temp = tmp.join(format!("request-{i}"));
                        std::fs::write(&temp, body).unwrap();
                        let sha256 = measured.sha256.map(|d| d.to_string()).unwrap_or_default();
                        let line = format!(
                            "{{\"path\":\"{path}\",\"length\":{length},\"sha256\":\"{sha256}\"}}\n"
                        );
                        journal.lock().unwrap().write_all(line.as_bytes()).unwrap();
                        std::fs::rename(&temp, out.join(path)).unwrap();
                    }
                });
            }
        });
        let took = start.elapsed();
        std::fs::remove_dir(&tmp).unwrap();
        std::fs::remove_file(out.join(".journal")).unwrap();
        took
    }

    /// The input file of `client` for the server at `base`, made once: `line` of each
    /// resource's URL, path and md5.
    fn list(&self, client: Client, base: &str, line: fn(&str, &str, &str) -> String) -> PathBuf {
        let list = self
            .urls
            .path()
            .join(format!("{client:?}-{}", base.replace(['/', ':'], "_")));
        if !list.exists() {
            let c = self.collection;
            let resources = c.paths.iter().zip(&c.md5s);
            peers::input_file(&list, base, resources.map(|(p, m)| (&**p, &**m)), line);
        }
        list
    }
}

/// The HTTP stack of a ceiling's plain GETs.
#[derive(Clone, Copy)]
enum Http {
    Reqwest,
    Hyper,
}

/// One connection of hyper's, HTTP/1.1, without a body to send.
type Connection = hyper::client::conn::http1::SendRequest<http_body_util::Empty<bytes::Bytes>>;

/// GET `url` on `connection`, opened on first use (to `url`'s authority, which every
/// URL of a ceiling's shares): the body, whole.
async fn hyper_get(connection: &mut Option<Connection>, url: &str) -> bytes::Bytes {
    use http_body_util::BodyExt;
    let uri: hyper::Uri = url.parse().unwrap();
    let authority = uri.authority().unwrap().clone();
    if connection.is_none() {
        let stream = tokio::net::TcpStream::connect(authority.as_str())
            .await
            .unwrap();
        stream.set_nodelay(true).unwrap();
        let io = hyper_util::rt::TokioIo::new(stream);
        let (sender, driver) = hyper::client::conn::http1::handshake(io).await.unwrap();
        tokio::spawn(driver);
        *connection = Some(sender);
    }
    let sender = connection.as_mut().unwrap();
    sender.ready().await.unwrap();
    let request = hyper::Request::get(uri.path())
        .header(hyper::header::HOST, authority.as_str())
        .body(http_body_util::Empty::new())
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert!(
        response.status().is_success(),
        "{url}: {}",
        response.status()
    );
    response.into_body().collect().await.unwrap().to_bytes()
}

/// The hashing floor of `collection`: the median time of three passes that read every
/// file and compute `algorithms` of it, the files split between two threads (this
/// machine's cores).
fn hashing_floor(collection: &Collection, algorithms: Algorithms) -> f64 {
    let mut times: Vec<f64> = (0..3)
        .map(|_| {
            peers::time(|| {
                let (a, b) = collection.paths.split_at(collection.paths.len() / 2);
                std::thread::scope(|scope| {
                    for half in [a, b] {
                        scope.spawn(move || {
                            for path in half {
                                let bytes = std::fs::read(collection.root.join(path)).unwrap();
                                let mut measure = Measure::new(algorithms);
                                measure.update(&bytes);
                                std::hint::black_box(measure.finish());
                            }
                        });
                    }
                });
            })
            .as_secs_f64()
        })
        .collect();
    median(&mut times)
}

/// Prints the throughput ratios the issue sets targets for: each client's from `serve`
/// over its from nginx, and `sync`'s from nginx over each other client's from nginx.
/// `ratio(a, b)` is b's time over a's, (client, server) indices into `clients` and
/// `servers`.
fn ratios(
    clients: &[Client],
    servers: &[(&str, String)],
    ratio: impl Fn((usize, usize), (usize, usize)) -> f64,
    how: &str,
) {
    let nginx = servers.iter().position(|(name, _)| *name == "nginx");
    let Some(nginx) = nginx else { return };
    for (c, client) in clients.iter().enumerate() {
        println!(
            "  {}: throughput from serve / from nginx ({how}): {:.2}",
            client.name(),
            ratio((c, 0), (c, nginx))
        );
    }
    for (c, peer) in clients.iter().enumerate().skip(1) {
        println!(
            "  from nginx, throughput of resourcesync sync / of {} ({how}): {:.2}",
            peer.name(),
            ratio((0, nginx), (c, nginx))
        );
    }
}

fn bench(c: &mut Criterion) {
    let nginx = program("nginx", "nginx-light");
    let wget2 = program("wget2", "wget2");
    let aria2c = program("aria2c", "aria2");
    let resync = python("resync", &["resync-sync"]).map(|p| p.with_file_name("resync-sync"));
    let paired = std::env::var("SERVE_PAIRED")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0);
    for size in [SMALL, LARGE] {
        let files = if measuring() {
            size.files
        } else {
            size.files / 50
        };
        let collection = generate(&size, files);

        let ours_port = free_port();
        let (_ours_dir, ours_publish) =
            publish(&collection, &format!("http://127.0.0.1:{ours_port}/"));
        let ours = Ours::start(ours_port, &ours_publish);
        let nginx = nginx.as_ref().map(|nginx| {
            let port = free_port();
            let publication = publish(&collection, &format!("http://127.0.0.1:{port}/"));
            (Nginx::start(nginx, port, &publication.1), publication)
        });
        let nginx = nginx.as_ref().map(|(nginx, _)| nginx);

        let fetcher = Fetcher {
            collection: &collection,
            runtime: tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .unwrap(),
            wget2: wget2.clone(),
            aria2c: aria2c.clone(),
            resync: resync.clone(),
            http: reqwest::Client::new(),
            urls: tempfile::tempdir().unwrap(),
        };
        let mut clients = vec![Client::Sync, Client::SyncAll];
        clients.extend((0..commands().len()).map(Client::Command));
        if wget2.is_some() {
            clients.push(Client::Wget2);
        }
        if aria2c.is_some() {
            clients.push(Client::Aria2c);
        }
        if resync.is_some() {
            clients.push(Client::Resync);
        }
        clients.push(Client::Ceiling);
        clients.push(Client::Hyper);
        clients.push(Client::Lean);
        let mut servers = vec![("serve", ours.base.clone())];
        if let Some(nginx) = &nginx {
            servers.push(("nginx", nginx.base.clone()));
        }
        let title = format!(
            "serve {} files of {} ({} MB)",
            files,
            if size.name == "small" {
                "1 KiB"
            } else {
                "1 MiB"
            },
            collection.bytes / 1_000_000
        );
        let floors = || {
            if measuring() {
                println!(
                    "  hashing floor, every file read and hashed on 2 threads: sha-256 {:.3} s, md5 and sha-256 {:.3} s",
                    hashing_floor(&collection, Algorithms::SHA256),
                    hashing_floor(&collection, Algorithms::BOTH),
                );
            }
        };

        if let Some(rounds) = paired {
            println!("{title}: {rounds} rounds, each client from serve then nginx");
            // times[client][server]: one time per round; cpu[client][server]: the
            // client's and the server's CPU time while it fetched, one pair per round.
            let server_cpu = |s: usize| match s {
                0 => ours.cpu(),
                _ => nginx.map_or(0.0, Nginx::cpu),
            };
            let mut times = vec![vec![Vec::new(); servers.len()]; clients.len()];
            let mut cpu = vec![vec![(Vec::new(), Vec::new()); servers.len()]; clients.len()];
            for _ in 0..rounds {
                for (c, &client) in clients.iter().enumerate() {
                    for (s, (_, base)) in servers.iter().enumerate() {
                        // The server's read outside the client's: reading nginx's
                        // takes a walk of `/proc` by this process.
                        let server_was = server_cpu(s);
                        let was = own_cpu();
                        times[c][s].push(fetcher.fetch(client, base).as_secs_f64());
                        cpu[c][s].0.push(own_cpu() - was);
                        cpu[c][s].1.push(server_cpu(s) - server_was);
                    }
                }
            }
            for (c, &client) in clients.iter().enumerate() {
                for (s, (server, _)) in servers.iter().enumerate() {
                    let time = median(&mut times[c][s].clone());
                    let (mine, theirs) = &mut cpu[c][s];
                    let (mine, theirs) = (median(mine), median(theirs));
                    println!(
                        "  {} from {server}: median {time:.3} s; CPU: client {mine:.2} s, {server} {theirs:.2} s, both on 2 cores {:.3} s",
                        client.name(),
                        (mine + theirs) / 2.0
                    );
                }
            }
            floors();
            // Ratios of times taken in the same round, then their median: the drift of a
            // shared machine between rounds cancels out.
            let ratio = |a: (usize, usize), b: (usize, usize)| {
                let mut r: Vec<f64> = (0..rounds)
                    .map(|i| times[b.0][b.1][i] / times[a.0][a.1][i])
                    .collect();
                median(&mut r)
            };
            ratios(&clients, &servers, ratio, "median of the rounds' ratios");
            continue;
        }

        let mut group = c.benchmark_group(&title);
        group
            .sample_size(10)
            .sampling_mode(SamplingMode::Flat)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(10))
            .throughput(Throughput::Bytes(collection.bytes));
        let mut medians = Vec::new();
        for &client in &clients {
            for (server, base) in &servers {
                let mut times = Vec::new();
                group.bench_function(format!("{} from {server}", client.name()), |b| {
                    b.iter_custom(|iters| {
                        peers::timing(&mut times, iters, || fetcher.fetch(client, base))
                    })
                });
                medians.push((client, *server, median(&mut times)));
            }
        }
        group.finish();
        // One iteration each in test mode: no figure worth printing.
        if !measuring() {
            continue;
        }
        println!("{title}: medians of every iteration (warm-up included)");
        for (client, server, time) in &medians {
            println!("  {} from {server}: {time:.3} s", client.name());
        }
        floors();
        let ratio = |a: (usize, usize), b: (usize, usize)| {
            let time = |(c, s): (usize, usize)| {
                medians
                    .iter()
                    .find(|(client, server, _)| *client == clients[c] && *server == servers[s].0)
                    .map_or(f64::NAN, |m| m.2)
            };
            time(b) / time(a)
        };
        ratios(&clients, &servers, ratio, "ratio of the medians");
    }
}

criterion_group!(benches, bench);

/// `criterion_main!`'s, but for the child that serves ([`Ours::start`]).
fn main() {
    if let (Some(dir), Some(addr)) = (std::env::var_os(SERVE_DIR), std::env::var(SERVE_ADDR).ok()) {
        serve_here(PathBuf::from(dir), addr);
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
