//! A hub that is not ours: flask-websub's (tests/flask_hub/hub.py, pinned by `.ci/run` in
//! the project's Python environment, its Celery tasks run eagerly). Our Publisher pings it
//! (the WebSub publish ping: it fetches the topic, which `serve --hub-url` serves with the
//! Link header it checks), and our follower, subscribed through it, takes what it signs
//! (sha512) and syncs. And flask-websub's subscriber (tests/flask_hub/subscriber.py)
//! subscribes to our hub (`serve --hub`), takes the notification our Publisher posts, and
//! unsubscribes. Ignored, saying so, without such a Python (required on CI).

use resourcesync_source::notify::HubProtocol;
use resourcesync_testkit::{needs, python};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

#[path = "common/follower.rs"]
mod follower;
#[path = "common/server.rs"]
mod server;

use follower::{Follower, first_publication, publish_and_follow, record};

const HUB: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/flask_hub/hub.py");

const SUBSCRIBER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/flask_hub/subscriber.py");

fn main() -> std::process::ExitCode {
    needs::main(vec![
        needs::trial(
            "a_publisher_and_a_follower_meet_through_flask_websub",
            &python::find("flask_websub.hub, celery", &[]),
            a_publisher_and_a_follower_meet_through_flask_websub,
        ),
        needs::trial(
            "a_flask_websub_subscriber_takes_our_hub_s_notifications",
            &python::find("flask_websub.subscriber", &[]),
            a_flask_websub_subscriber_takes_our_hub_s_notifications,
        ),
    ])
}

/// flask-websub's hub on 127.0.0.1; returns it (killed when dropped) and its URL.
fn flask_hub(python: &Path, storage: &Path) -> (server::Server, String) {
    let mut command = Command::new(python);
    command.arg(HUB).arg(storage);
    let (hub, first) = server::start(command);
    let port = first
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("the hub said {first:?}"))
        .trim()
        .to_owned();
    (hub, format!("http://127.0.0.1:{port}/hub"))
}

fn a_publisher_and_a_follower_meet_through_flask_websub(python: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let (_hub, hub_url) = flask_hub(&python, &dir.path().join("hub.sqlite"));
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    let mut serve = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
    serve
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--json",
            "--hub-url",
            &hub_url,
        ])
        .arg(&publish);
    let (_server, first) = server::start(serve);
    let line: serde_json::Value = serde_json::from_str(&first).unwrap();
    let base = line["url"].as_str().unwrap().to_owned();

    let mut publisher = first_publication(&publish, &base, &hub_url);
    let dest = dir.path().join("dest");
    let follower = Follower::start(&base, &dest);
    assert_eq!(follower.until("channel")["hub"], hub_url.as_str());
    follower.until("subscribed");
    for n in 1..=3 {
        // flask-websub fetched the topic and posted it, signed, to the follower.
        let notified = publish_and_follow(
            &mut publisher,
            &follower,
            &base,
            n,
            HubProtocol::Publish,
            &dest,
        );
        assert_eq!(notified["entries"], 1, "{notified}");
    }
}

/// flask-websub's subscriber, killed when dropped, and its JSON lines.
struct FlaskSubscriber {
    child: std::process::Child,
    lines: mpsc::Receiver<serde_json::Value>,
}

impl Drop for FlaskSubscriber {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl FlaskSubscriber {
    /// The next line that has `key`, waited for `within` at most.
    fn next(&self, key: &str, within: Duration) -> Option<serde_json::Value> {
        let deadline = std::time::Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.get(key).is_some() => return Some(line),
                Ok(line) => assert!(line.get("denied").is_none(), "{line}"),
                Err(mpsc::RecvTimeoutError::Timeout) => return None,
                Err(mpsc::RecvTimeoutError::Disconnected) => panic!("the subscriber ended"),
            }
        }
    }
}

/// Publishes record `n` as a change and hands its notification to the hub; its bytes.
fn publish_change(
    publisher: &mut resourcesync_source::Publisher<resourcesync_source::GenerationStore>,
    base: &str,
    n: u32,
) -> Vec<u8> {
    let mut run = publisher.begin().unwrap();
    let (name, bytes, entry) = record(base, n);
    run.write(&name, &[&bytes]).unwrap();
    let now = std::time::SystemTime::now();
    let event = resourcesync_source::ResourceEvent::created(entry, now.into());
    run.publish_changes([event], now).unwrap();
    let waiting = publisher.outbox().unwrap();
    assert_eq!(waiting.len(), 1);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let delivered = runtime
        .block_on(resourcesync_cli::notify::deliver(
            publisher,
            HubProtocol::ResourceSync,
            &reqwest::Client::new(),
            Duration::from_secs(20),
        ))
        .unwrap();
    assert_eq!(
        (delivered.sequence, delivered.waiting),
        (waiting[0].sequence, 0)
    );
    waiting[0].body.clone()
}

fn a_flask_websub_subscriber_takes_our_hub_s_notifications(python: PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    let (_server, base, hub_url) =
        server::serve_hub(&publish, &dir.path().join("hub.json"), "127.0.0.1:0", &[]);
    let mut publisher = first_publication(&publish, &base, &hub_url);
    let topic = format!("{base}resourcesync/change-notification.xml");
    let mut child = Command::new(&python)
        .arg(SUBSCRIBER)
        .args([&topic, &hub_url])
        .arg(dir.path())
        .stdin(Stdio::piped())
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
    let mut subscriber = FlaskSubscriber { child, lines };
    let wait = Duration::from_secs(30);
    subscriber
        .next("listening", wait)
        .expect("the subscriber never listened");
    // Our hub verified its intent: flask-websub echoed the challenge for the callback it
    // made.
    subscriber
        .next("subscribed", wait)
        .expect("never subscribed");

    // What our Publisher posts, our hub relays to it as published, for its topic.
    let body = publish_change(&mut publisher, &base, 1);
    let post = subscriber
        .next("post", wait)
        .expect("our hub posted nothing");
    assert!(
        post["post"].as_str().unwrap().starts_with("/callbacks/"),
        "{post}"
    );
    let line = subscriber
        .next("notification", wait)
        .expect("no notification came");
    assert_eq!(
        line["notification"].as_str().unwrap().as_bytes(),
        body,
        "{line}"
    );
    assert_eq!(line["topic"], topic.as_str());

    // Unsubscribed (verified again), it is sent nothing more.
    let stdin = subscriber.child.stdin.as_mut().unwrap();
    stdin.write_all(b"unsubscribe\n").unwrap();
    stdin.flush().unwrap();
    subscriber
        .next("unsubscribed", wait)
        .expect("never unsubscribed");
    publish_change(&mut publisher, &base, 2);
    // Our hub sends it nothing more (seen at its callbacks, before flask-websub's
    // routing, which would drop a late one quietly).
    let late = subscriber.next("post", Duration::from_secs(3));
    assert!(late.is_none(), "sent after it unsubscribed: {late:?}");
}
