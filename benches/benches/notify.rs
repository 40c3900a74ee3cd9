//! Change Notification from the Publisher to the file on disk (issue 31), through our hub
//! (`resourcesync serve --hub`) and, beside it in the same run, through flask-websub's (the
//! peer: a third-party WebSub hub, pinned by `.ci/run`).
//!
//! Each hub runs as a process of its own: this binary again with `NOTIFY_ROLE=hub` (what
//! `serve --hub` runs: the publication and the hub at `/hub`), or flask-websub's hub
//! (`resourcesync-cli/tests/flask_hub/hub.py`) with this binary again as `NOTIFY_ROLE=topic`
//! serving the publication and its topic (`serve --hub-url`). The Publisher (a
//! `GenerationStore`, Change Lists of 1,000 entries) and the followers
//! (`resourcesync_destination::follow::follow`, what `sync --follow` runs, each on a thread
//! of its own) are in this process. Ours is told by the ResourceSync `POST`, flask-websub
//! by the publish ping (it fetches the topic and posts it, signed, to each follower).
//!
//! Two measures, printed side by side:
//! - **latency**: one follower per hub; change `i` is published (a new file), and the time
//!   from `publish_changes` returning to the file being in the follower's directory
//!   (renamed into place: it appears whole) is taken, for `NOTIFY_CHANGES` changes (1,000),
//!   one at a time, alternating between the two hubs so that both see the same machine.
//!   Delivery to the hub is inside the time. Printed: p50, p90, p99, max.
//! - **sustained**: changes arrive at `NOTIFY_RATE` per second (200) for `NOTIFY_SECONDS`
//!   (60) into `NOTIFY_FOLLOWERS` followers (5). The Publisher publishes, in one run, what
//!   arrived while its last run was going (a Source under load batches), then hands the
//!   notifications to the hub. After the last, every follower must hold every file, whole
//!   ("lost" counts those that never came within 60 s); the hub process's resident memory is
//!   sampled each second (`VmRSS`): its median over the first and the last 10 s.
//!
//! Percentiles are not criterion's to give, so this bench prints its own (harness off).
//! In test mode (`cargo test --benches`) it runs 20 changes and 2 s at 50 per second into 2
//! followers, and asserts that nothing is lost. Without flask-websub in the Python found
//! (`RESOURCESYNC_PYTHON` or `.venv`), its column says skipped (on CI it fails).
//!
//! `cargo bench -p resourcesync-benches --bench notify`

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::AsyncStop;
use resourcesync_destination::follow::{FollowNotice, FollowObserver, FollowOptions, follow};
use resourcesync_model::{Entry, Fixity};
use resourcesync_source::notify::HubProtocol;
use resourcesync_source::{GenerationStore, PublishOptions, Publisher, ResourceEvent};

/// flask-websub's hub, as the CLI's tests run it.
const FLASK_HUB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../resourcesync-cli/tests/flask_hub/hub.py"
);

fn main() {
    if let Ok(role) = std::env::var("NOTIFY_ROLE") {
        return role_main(&role);
    }
    let bench = std::env::args().any(|a| a == "--bench");
    let number = |name: &str, bench_value: u64, test_value: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if bench { bench_value } else { test_value })
    };
    let changes = number("NOTIFY_CHANGES", 1000, 20) as u32;
    let rate = number("NOTIFY_RATE", 200, 50);
    let seconds = number("NOTIFY_SECONDS", 60, 2);
    let followers = number("NOTIFY_FOLLOWERS", 5, 2) as usize;

    let python = resourcesync_testkit::python::find("flask_websub.hub, celery", &[]);
    let python = match python {
        Ok(python) => Some(python),
        Err(missing) => {
            assert!(!missing.required, "{}", missing.why);
            eprintln!("flask-websub skipped: {}", missing.why);
            None
        }
    };
    let peers: Vec<Peer> = std::iter::once(Peer::Ours)
        .chain(python.map(Peer::Flask))
        .collect();

    println!("notify/latency: {changes} single changes, one follower per hub, alternated");
    let mut setups: Vec<Setup> = peers.iter().map(|peer| Setup::start(peer, 1)).collect();
    let mut latencies: Vec<Vec<Duration>> = vec![Vec::new(); setups.len()];
    for n in 1..=changes {
        for (setup, latencies) in setups.iter_mut().zip(&mut latencies) {
            latencies.extend(setup.one_change(n));
        }
    }
    for (setup, latencies) in setups.iter().zip(&mut latencies) {
        latencies.sort_unstable();
        let at = |q: f64| {
            let i = ((latencies.len() as f64 * q).ceil() as usize).clamp(1, latencies.len());
            latencies[i - 1].as_secs_f64() * 1e3
        };
        println!(
            "  {:<44} p50 {:6.1} ms  p90 {:6.1} ms  p99 {:6.1} ms  max {:6.1} ms",
            setup.name,
            at(0.50),
            at(0.90),
            at(0.99),
            at(1.0)
        );
    }
    drop(setups);

    println!(
        "notify/sustained: {rate} changes/s for {seconds} s into {followers} followers per hub"
    );
    for peer in &peers {
        let mut setup = Setup::start(peer, followers);
        let sustained = setup.sustained(rate, Duration::from_secs(seconds));
        println!(
            "  {:<44} {} changes in {} runs ({:.0}/s); all in every follower {:.2} s after the \
             last; lost {}; hub memory {:.1} MiB (first 10 s) -> {:.1} MiB (last 10 s)",
            setup.name,
            sustained.changes,
            sustained.runs,
            sustained.changes as f64 / sustained.publishing.as_secs_f64(),
            sustained.caught_up.as_secs_f64(),
            sustained.lost,
            sustained.memory.0 as f64 / (1 << 20) as f64,
            sustained.memory.1 as f64 / (1 << 20) as f64,
        );
        assert_eq!(sustained.lost, 0, "{}: changes lost", setup.name);
    }
}

/// A hub the bench runs.
#[derive(Debug, Clone)]
enum Peer {
    /// `serve --hub`.
    Ours,
    /// flask-websub's hub, run by this Python.
    Flask(PathBuf),
}

/// A publication, its hub and its followers, running.
struct Setup {
    name: &'static str,
    _dir: tempfile::TempDir,
    base: String,
    protocol: HubProtocol,
    publisher: Publisher<GenerationStore>,
    /// The hub's process, whose memory is sampled.
    hub_pid: u32,
    /// Killed when dropped, the hub's last.
    children: Vec<Child>,
    followers: Vec<FollowerThread>,
    runtime: tokio::runtime::Runtime,
    http: reqwest::Client,
}

impl Drop for Setup {
    fn drop(&mut self) {
        for follower in &self.followers {
            follower.stop.stop();
        }
        for follower in self.followers.drain(..) {
            let _ = follower.thread.join();
        }
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A follower on a thread of its own.
struct FollowerThread {
    dest: PathBuf,
    stop: AsyncStop,
    thread: std::thread::JoinHandle<()>,
}

/// Record `n`: its file's name and bytes, and its entry under `base`.
fn record(base: &str, n: u32) -> (String, Vec<u8>, Entry) {
    let name = format!("items/{n}.txt");
    let bytes = format!("record {n}\n").into_bytes();
    let mut fixity = Fixity::new();
    fixity.update(&bytes);
    let entry = Entry::new(format!("{base}{name}").parse().unwrap())
        .with_length(bytes.len() as u64)
        .with_hash(fixity.finish().hashes());
    (name, bytes, entry)
}

/// Starts this binary again in `role`, with `env`; the child and its first line.
fn start_role(role: &str, env: &[(&str, &Path)]) -> (Child, String) {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env("NOTIFY_ROLE", role);
    for (name, value) in env {
        command.env(name, value);
    }
    start(command)
}

/// Starts `command`, its output piped; the child and its first line.
fn start(mut command: Command) -> (Child, String) {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    (child, first.trim().to_owned())
}

/// What a follower thread tells the bench: it subscribed.
struct Observer(mpsc::Sender<()>);

impl resourcesync_destination::Observer for Observer {}

impl FollowObserver for Observer {
    fn follow(&mut self, notice: &FollowNotice) {
        if let FollowNotice::Subscribed(_) = notice {
            let _ = self.0.send(());
        }
    }
}

impl Setup {
    /// The publication with record 0, its hub, and `followers` followers subscribed.
    fn start(peer: &Peer, followers: usize) -> Setup {
        let dir = resourcesync_benches::scratch("notify");
        let publish = dir.path().join("pub");
        std::fs::create_dir(&publish).unwrap();
        let mut children = Vec::new();
        let (name, base, hub, protocol, hub_pid) = match peer {
            Peer::Ours => {
                let (child, addr) = start_role("hub", &[("NOTIFY_DIR", &publish)]);
                let pid = child.id();
                children.push(child);
                (
                    "ours (serve --hub, ResourceSync POST)",
                    format!("http://{addr}/"),
                    format!("http://{addr}/hub"),
                    HubProtocol::ResourceSync,
                    pid,
                )
            }
            Peer::Flask(python) => {
                let mut command = Command::new(python);
                command.arg(FLASK_HUB).arg(dir.path().join("hub.sqlite"));
                let (hub, first) = start(command);
                let port = first.strip_prefix("listening ").unwrap().to_owned();
                let pid = hub.id();
                children.push(hub);
                let hub = format!("http://127.0.0.1:{port}/hub");
                let (topic, addr) = start_role(
                    "topic",
                    &[("NOTIFY_DIR", &publish), ("NOTIFY_HUB", Path::new(&hub))],
                );
                children.push(topic);
                (
                    "flask-websub 0.4.1 (publish ping)",
                    format!("http://{addr}/"),
                    hub,
                    HubProtocol::Publish,
                    pid,
                )
            }
        };
        let options = PublishOptions::new(base.parse().unwrap())
            .with_hub(hub.parse().unwrap())
            .with_changelist_entries(1000);
        let mut publisher = Publisher::new(GenerationStore::open(&publish).unwrap(), options);
        let mut run = publisher.begin().unwrap();
        let (file, bytes, entry) = record(&base, 0);
        run.write(&file, &[&bytes]).unwrap();
        run.publish_snapshot([entry], SystemTime::now()).unwrap();

        let (subscribed, heard) = mpsc::channel();
        let followers: Vec<FollowerThread> = (0..followers)
            .map(|i| {
                let dest = dir.path().join(format!("dest{i}"));
                let stop = AsyncStop::new();
                let options = FollowOptions::new(SyncOptions::new(base.parse().unwrap(), &dest))
                    .with_interval(Duration::from_secs(3600));
                let (thread_stop, observer) = (stop.clone(), Observer(subscribed.clone()));
                let thread = std::thread::spawn(move || {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .unwrap();
                    let mut observer = observer;
                    runtime
                        .block_on(follow(&options, &thread_stop, &mut observer))
                        .unwrap();
                });
                FollowerThread { dest, stop, thread }
            })
            .collect();
        for _ in 0..followers.len() {
            heard
                .recv_timeout(Duration::from_secs(30))
                .expect("a follower never subscribed");
        }
        Setup {
            name,
            _dir: dir,
            base,
            protocol,
            publisher,
            hub_pid,
            children,
            followers,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            http: reqwest::Client::new(),
        }
    }

    /// Publishes records `numbers` as created in one run.
    fn publish(&mut self, numbers: std::ops::RangeInclusive<u32>) {
        let mut run = self.publisher.begin().unwrap();
        let now = SystemTime::now();
        let mut events = Vec::new();
        for n in numbers {
            let (name, bytes, entry) = record(&self.base, n);
            run.write(&name, &[&bytes]).unwrap();
            events.push(ResourceEvent::created(entry, now.into()));
        }
        run.publish_changes(events, now).unwrap();
    }

    /// Hands the waiting notifications to the hub.
    fn deliver(&mut self) {
        let delivered = self
            .runtime
            .block_on(resourcesync_cli::notify::deliver(
                &mut self.publisher,
                self.protocol,
                &self.http,
                Duration::from_secs(20),
            ))
            .unwrap();
        assert_eq!(delivered.waiting, 0, "{}: the hub took not all", self.name);
    }

    /// Publishes record `n`, delivers it, and waits for it at each follower: the time from
    /// the publication to each.
    fn one_change(&mut self, n: u32) -> Vec<Duration> {
        self.publish(n..=n);
        let published = Instant::now();
        self.deliver();
        let (name, bytes, _) = record(&self.base, n);
        let mut arrived = vec![None; self.followers.len()];
        while arrived.iter().any(Option::is_none) {
            assert!(
                published.elapsed() < Duration::from_secs(20),
                "{}: change {n} never came",
                self.name
            );
            for (follower, at) in self.followers.iter().zip(&mut arrived) {
                if at.is_none() && follower.dest.join(&name).exists() {
                    *at = Some(published.elapsed());
                    assert_eq!(std::fs::read(follower.dest.join(&name)).unwrap(), bytes);
                }
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        arrived.into_iter().flatten().collect()
    }

    /// Changes at `rate` per second for `during`, published as they come; then waits until
    /// every follower has each.
    fn sustained(&mut self, rate: u64, during: Duration) -> Sustained {
        let (stop_sampling, stopped) = mpsc::channel::<()>();
        let pid = self.hub_pid;
        let sampler = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while let Err(mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(Duration::from_secs(1))
            {
                samples.extend(resident(pid));
            }
            samples
        });
        let start = Instant::now();
        let (mut published, mut runs) = (0u32, 0u64);
        while start.elapsed() < during {
            // The changes that have arrived by now.
            let due = (start.elapsed().as_secs_f64() * rate as f64) as u32;
            if due > published {
                self.publish(published + 1..=due);
                self.deliver();
                published = due;
                runs += 1;
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let publishing = start.elapsed();
        let last = Instant::now();
        let mut lost = 0;
        for follower in &self.followers {
            for n in 1..=published {
                let (name, bytes, _) = record(&self.base, n);
                let path = follower.dest.join(&name);
                while std::fs::read(&path).ok().as_deref() != Some(&bytes[..]) {
                    if last.elapsed() > Duration::from_secs(60) {
                        lost += 1;
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        }
        let caught_up = last.elapsed();
        let _ = stop_sampling.send(());
        let samples = sampler.join().unwrap();
        let median = |s: &[usize]| {
            let mut s = s.to_vec();
            s.sort_unstable();
            s.get(s.len() / 2).copied().unwrap_or(0)
        };
        let window = samples.len().min(10);
        Sustained {
            changes: published,
            runs,
            publishing,
            caught_up,
            lost,
            memory: (
                median(&samples[..window]),
                median(&samples[samples.len() - window..]),
            ),
        }
    }
}

/// What a sustained run came to.
struct Sustained {
    changes: u32,
    runs: u64,
    publishing: Duration,
    caught_up: Duration,
    lost: u64,
    /// The hub's resident memory: medians of the first and the last 10 samples.
    memory: (usize, usize),
}

/// The resident memory of process `pid` (`VmRSS`), in bytes.
fn resident(pid: u32) -> Option<usize> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// This binary as a server: `hub` (the publication at `NOTIFY_DIR` with a hub at `/hub`,
/// as `serve --hub` runs it, callbacks on 127.0.0.1 allowed) or `topic` (the publication,
/// its topic naming the hub at `NOTIFY_HUB`, as `serve --hub-url`). Prints its address,
/// then serves until its standard input ends (the bench ended) or it is killed.
fn role_main(role: &str) {
    use resourcesync_cli::hub::HubServer;
    use resourcesync_cli::serve::{ServeLimits, serve_with_hub, serve_with_topic_hub};
    use resourcesync_websub::{CallbackPolicy, HubOptions};

    let dir = PathBuf::from(std::env::var_os("NOTIFY_DIR").unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        println!("{addr}");
        let ended = async {
            // The bench holds the other end of standard input: it ends with the bench.
            let _ = tokio::task::spawn_blocking(|| {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
            })
            .await;
        };
        let report: resourcesync_cli::serve::Reporter = std::sync::Arc::new(|_| {});
        match role {
            "hub" => {
                let url = format!("http://{addr}/hub").parse().unwrap();
                let options = HubOptions::new(url, vec![format!("http://{addr}/")])
                    .with_callbacks(CallbackPolicy::Hosts(vec!["127.0.0.1".into()]));
                let hub = HubServer::open(options, Vec::new(), None, std::sync::Arc::new(|_| {}))
                    .unwrap();
                serve_with_hub(
                    listener,
                    dir,
                    ServeLimits::default(),
                    report,
                    hub,
                    "/hub",
                    ended,
                )
                .await
                .unwrap();
            }
            "topic" => {
                let hub = std::env::var("NOTIFY_HUB").unwrap().parse().unwrap();
                serve_with_topic_hub(listener, dir, ServeLimits::default(), report, hub, ended)
                    .await
                    .unwrap();
            }
            other => panic!("no role {other}"),
        }
    });
}
