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
        let mut child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
            .args(["sync", "--follow", "--json", "--interval", "1h", source])
            .arg(dest)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or_default();
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        Follower { child, lines }
    }

    /// The next line with `"follow": kind`, waited for 30 s at most.
    pub(crate) fn until(&self, kind: &str) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(value) if value["follow"] == kind => return value,
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
    let mut run = publisher.begin().unwrap();
    let (name, bytes, entry) = record(base, n);
    run.write(&name, &[&bytes]).unwrap();
    let now = std::time::SystemTime::now();
    let event = resourcesync_source::ResourceEvent::created(entry, now.into());
    let report = run.publish_changes([event], now).unwrap();
    assert_eq!(report.notifications.len(), 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let delivered = runtime
        .block_on(resourcesync_cli::notify::deliver(
            publisher,
            protocol,
            &reqwest::Client::new(),
            Duration::from_secs(20),
        ))
        .unwrap();
    assert_eq!(delivered.sequence, report.notifications[0]);
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
