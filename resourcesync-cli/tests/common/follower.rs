//! `resourcesync sync --follow --json` in a child process, its output read with a deadline,
//! and the application records the tests publish.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The follower, killed when dropped, and its output's JSON lines.
pub(crate) struct Follower {
    pub(crate) child: Child,
    lines: mpsc::Receiver<serde_json::Value>,
    /// Every line so far, those [`until`](Follower::until) passed over included.
    all: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl Drop for Follower {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Follower {
    /// Starts following `source` into `dest`.
    pub(crate) fn start(source: &str, dest: &Path) -> Follower {
        Follower::start_with(source, dest, &["--interval", "1h"])
    }

    /// Starts following `source` into `dest` with more arguments (`--interval` among
    /// them).
    pub(crate) fn start_with(source: &str, dest: &Path, args: &[&str]) -> Follower {
        let mut child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
            .args(["sync", "--follow", "--json"])
            .args(args)
            .arg(source)
            .arg(dest)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let all = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&all);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
                kept.lock().unwrap().push(value.clone());
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Follower { child, lines, all }
    }

    /// How many lines with `"follow": kind` came so far.
    #[allow(dead_code)] // not every test counts
    pub(crate) fn count(&self, kind: &str) -> usize {
        self.all
            .lock()
            .unwrap()
            .iter()
            .filter(|v| v["follow"] == kind)
            .count()
    }

    /// Asks the follower to stop (SIGTERM, as a service manager does) and returns its
    /// summary line (`{"followed": ...}`), waited for 30 s at most.
    #[allow(dead_code)] // not every test stops its follower
    pub(crate) fn stop(&self) -> serde_json::Value {
        let pid = rustix::process::Pid::from_child(&self.child);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) if value.get("followed").is_some() => return value,
                Ok(_) => {}
                Err(e) => panic!("no summary after SIGTERM: {e}"),
            }
        }
    }

    /// The next line with `"follow": kind`, waited for 30 s at most.
    pub(crate) fn until(&self, kind: &str) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) if value["follow"] == kind => return value,
                // DEBUG_FOLLOW=1 shows what a test passed over (and `serve`'s log).
                Ok(value) if std::env::var_os("DEBUG_FOLLOW").is_some() => eprintln!("{value}"),
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Timeout) => panic!("no {kind} in 30 s"),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("the follower ended before {kind}")
                }
            }
        }
    }
}

/// An application's record `n` under `base`: its file's name and bytes, and its entry.
#[allow(dead_code)] // not every test that follows publishes records
pub(crate) fn record(base: &str, n: u32) -> (String, Vec<u8>, resourcesync_model::Entry) {
    let name = format!("items/{n}.txt");
    let bytes = format!("record {n}\n").into_bytes();
    let mut fixity = resourcesync_model::Fixity::new();
    fixity.update(&bytes);
    let entry = resourcesync_model::Entry::new(format!("{base}{name}").parse().unwrap())
        .with_length(bytes.len() as u64)
        .with_hash(fixity.finish().hashes());
    (name, bytes, entry)
}

/// A Publisher of `publish` served at `base`, its notifications through `hub`, whose first
/// run published record 0.
#[allow(dead_code)] // not every test that follows publishes records
pub(crate) fn first_publication(
    publish: &Path,
    base: &str,
    hub: &str,
) -> resourcesync_source::Publisher<resourcesync_source::GenerationStore> {
    use resourcesync_source::{GenerationStore, PublishOptions, Publisher};
    let options = PublishOptions::new(base.parse().unwrap()).with_hub(hub.parse().unwrap());
    let mut publisher = Publisher::new(GenerationStore::open(publish).unwrap(), options);
    let mut run = publisher.begin().unwrap();
    let (name, bytes, entry) = record(base, 0);
    run.write(&name, &[&bytes]).unwrap();
    run.publish_snapshot([entry], std::time::SystemTime::now())
        .unwrap();
    publisher
}

/// Publishes record `n` as a change, delivers its notification by `protocol`, and waits
/// until the follower's run has put it in `dest`; the follower's notice of it, which says
/// what the notification said.
#[allow(dead_code)] // not every test that follows publishes records
pub(crate) fn publish_and_follow(
    publisher: &mut resourcesync_source::Publisher<resourcesync_source::GenerationStore>,
    follower: &Follower,
    base: &str,
    n: u32,
    protocol: resourcesync_source::notify::HubProtocol,
    dest: &Path,
) -> serde_json::Value {
    let sequence = publish_record(publisher, base, n);
    let (name, bytes, _) = record(base, n);
    let delivered = deliver(publisher, protocol, Duration::from_secs(20));
    assert_eq!(delivered.sequence, sequence);
    assert_eq!(delivered.waiting, 0);
    let notified = follower.until("notified");
    // The follower's run for it brings the file.
    let start = Instant::now();
    while std::fs::read(dest.join(&name)).ok().as_deref() != Some(&bytes[..]) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name} never came"
        );
        let synced = follower.until("synced");
        assert_eq!(synced["complete"], true, "{synced}");
    }
    notified
}

/// Publishes record `n` under `base` as created, in a run of its own; its notification's
/// sequence number.
#[allow(dead_code)] // not every test that follows publishes records
pub(crate) fn publish_record(
    publisher: &mut resourcesync_source::Publisher<resourcesync_source::GenerationStore>,
    base: &str,
    n: u32,
) -> u64 {
    let (name, bytes, _) = record(base, n);
    let mut run = publisher.begin().unwrap();
    run.write(&name, &[&bytes]).unwrap();
    let now = std::time::SystemTime::now();
    let event = resourcesync_source::ResourceEvent::created(record(base, n).2, now.into());
    let report = run.publish_changes([event], now).unwrap();
    assert_eq!(report.notifications.len(), 1);
    report.notifications[0]
}

/// Hands the publisher's waiting notifications to its hub by `protocol`, for `within` at
/// most.
#[allow(dead_code)] // not every test that follows publishes records
pub(crate) fn deliver(
    publisher: &mut resourcesync_source::Publisher<resourcesync_source::GenerationStore>,
    protocol: resourcesync_source::notify::HubProtocol,
    within: Duration,
) -> resourcesync_cli::notify::Delivered {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(resourcesync_cli::notify::deliver(
            publisher,
            protocol,
            &reqwest::Client::new(),
            within,
        ))
        .unwrap()
}

/// Waits, 30 s at most, until `dest` holds records `0..=last` as published under `base`.
#[allow(dead_code)] // not every test that follows publishes records
pub(crate) fn wait_for_records(dest: &Path, base: &str, last: u32) {
    let start = Instant::now();
    for n in 0..=last {
        let (name, bytes, _) = record(base, n);
        while std::fs::read(dest.join(&name)).ok().as_deref() != Some(&bytes[..]) {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "{name} never came"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `resourcesync sync --audit` of `dest` against `source`: panics unless DIR is in sync,
/// every listed resource's bytes checked.
#[allow(dead_code)] // not every test that follows audits
pub(crate) fn audit(source: &str, dest: &Path) {
    let output = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--audit", source])
        .arg(dest)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "not in sync: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
