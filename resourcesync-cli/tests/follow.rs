//! `resourcesync sync --follow` as a process: a Source on 127.0.0.1 (the testkit's) that
//! advertises a Change Notification channel, `resourcesync serve --hub` as its hub, and
//! the follower subscribed through it. A change the Source publishes and notifies is in
//! DIR moments later; a forged notification and a verification nobody asked for change
//! nothing; SIGTERM unsubscribes.

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use resourcesync_testkit::served::Served;

#[path = "common/server.rs"]
mod server;

/// A child process, killed when dropped.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `sync --follow --json` of `source` into `dest`; returns it and its output's
/// lines.
fn follow(source: &str, dest: &std::path::Path) -> (Process, Lines<BufReader<ChildStdout>>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--follow", "--json", "--interval", "1h", source])
        .arg(dest)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (Process(child), lines)
}

/// The follower's JSON lines, read until one with `"follow": kind` (at most 20 s).
fn until(lines: &mut Lines<BufReader<ChildStdout>>, kind: &str) -> serde_json::Value {
    let start = Instant::now();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
        if value["follow"] == kind {
            return value;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "no {kind} in time"
        );
    }
    panic!("the follower ended before {kind}");
}

const NOTIFICATION: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="change-notification" from="2020-01-01T00:00:10Z" until="2020-01-01T00:00:20Z"/>
<url><loc>SOURCE/r/new.txt</loc><rs:md change="created" datetime="2020-01-01T00:00:20Z"/></url>
</urlset>
"#;

#[test]
fn a_follower_applies_a_notified_change_and_ignores_what_it_did_not_ask_for() {
    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    let (_hub, _, hub_url) = server::serve_hub(&publish, &dir.path().join("hub.json"));
    let served = Served::start(|s| {
        s.put("r/a.txt", b"a");
        s.tick(10);
        s.publish.hub = Some(hub_url.parse().unwrap());
    });
    let dest = dir.path().join("dest");
    let (follower, mut lines) = follow(&served.base, &dest);
    let first = until(&mut lines, "synced");
    assert_eq!(first["cause"], "start");
    assert_eq!(first["complete"], true);
    let channel = until(&mut lines, "channel");
    let topic = channel["topic"].as_str().unwrap().to_owned();
    assert_eq!(channel["hub"], hub_url.as_str());
    let callback = until(&mut lines, "listening")["callback"]
        .as_str()
        .unwrap()
        .to_owned();
    until(&mut lines, "subscribed");
    assert_eq!(std::fs::read(dest.join("r/a.txt")).unwrap(), b"a");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = reqwest::Client::new();
    // A forged notification, posted to the callback: acknowledged, and ignored.
    let forged = client
        .post(&callback)
        .header("content-type", "application/xml")
        .header(
            "link",
            format!("<{topic}>; rel=\"self\", <{hub_url}>; rel=\"hub\""),
        )
        .header("x-hub-signature", format!("sha256={}", "0".repeat(64)))
        .body(NOTIFICATION.to_owned())
        .send();
    let forged = runtime.block_on(forged).unwrap();
    assert!(forged.status().is_success());
    let ignored = until(&mut lines, "ignored");
    assert_eq!(ignored["why"], "a signature that does not match");
    // A verification nobody asked for.
    let unasked = client
        .get(format!(
            "{callback}?hub.mode=unsubscribe&hub.topic={}&hub.challenge=x",
            url::form_urlencoded::byte_serialize(topic.as_bytes()).collect::<String>()
        ))
        .send();
    let unasked = runtime.block_on(unasked).unwrap();
    assert_eq!(unasked.status(), reqwest::StatusCode::NOT_FOUND);

    // The Source changes and notifies its hub: the change is in DIR moments later.
    served.change(|s| {
        s.tick(10);
        s.put("r/new.txt", b"new");
    });
    let posted = client
        .post(&hub_url)
        .header("content-type", "application/xml")
        .header(
            "link",
            format!("<{topic}>; rel=\"self\", <{hub_url}>; rel=\"hub\""),
        )
        .body(NOTIFICATION.replace("SOURCE/", &served.base))
        .send();
    let posted = runtime.block_on(posted).unwrap();
    assert_eq!(posted.status(), reqwest::StatusCode::OK);
    let notified = until(&mut lines, "notified");
    assert_eq!(notified["entries"], 1);
    let synced = until(&mut lines, "synced");
    assert_eq!(synced["cause"], "notification");
    assert_eq!(synced["created"], 1);
    assert_eq!(std::fs::read(dest.join("r/new.txt")).unwrap(), b"new");
    served.equals(&dest).unwrap();

    // SIGTERM: unsubscribed, then the summary, exit 130.
    let pid = follower.0.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    until(&mut lines, "unsubscribed");
    let mut follower = follower;
    let status = follower.0.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

/// An application's record `n`: its file's bytes and its entry.
fn record(base: &str, n: u32) -> (String, Vec<u8>, resourcesync_model::Entry) {
    let name = format!("items/{n}.txt");
    let bytes = format!("record {n}\n").into_bytes();
    let mut fixity = resourcesync_model::Fixity::new();
    fixity.update(&bytes);
    let entry = resourcesync_model::Entry::new(format!("{base}{name}").parse().unwrap())
        .with_length(bytes.len() as u64)
        .with_hash(fixity.finish().hashes());
    (name, bytes, entry)
}

#[test]
fn a_publisher_s_notifications_reach_a_follower_through_the_hub() {
    use resourcesync_source::notify::HubProtocol;
    use resourcesync_source::{GenerationStore, PublishOptions, Publisher, ResourceEvent};
    use std::time::SystemTime;

    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    // The hub serves the publication too: the Publisher writes it, serve --hub serves it
    // and relays its notifications.
    let (_server, base, hub_url) = server::serve_hub(&publish, &dir.path().join("hub.json"));
    let options = PublishOptions::new(base.parse().unwrap()).with_hub(hub_url.parse().unwrap());
    let mut publisher = Publisher::new(GenerationStore::open(&publish).unwrap(), options);
    let mut run = publisher.begin().unwrap();
    let (name, bytes, entry) = record(&base, 0);
    run.write(&name, &[&bytes]).unwrap();
    run.publish_snapshot([entry], SystemTime::now()).unwrap();

    let dest = dir.path().join("dest");
    let (_follower, mut lines) = follow(&base, &dest);
    until(&mut lines, "subscribed");

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let http = reqwest::Client::new();
    for n in 1..=5 {
        let mut run = publisher.begin().unwrap();
        let (name, bytes, entry) = record(&base, n);
        run.write(&name, &[&bytes]).unwrap();
        let now = SystemTime::now();
        let event = ResourceEvent::created(entry, now.into());
        let report = run.publish_changes([event], now).unwrap();
        assert_eq!(report.notifications.len(), 1);
        let delivered = runtime
            .block_on(resourcesync_cli::notify::deliver(
                &mut publisher,
                HubProtocol::ResourceSync,
                &http,
                Duration::from_secs(10),
            ))
            .unwrap();
        assert_eq!(delivered.sequence, report.notifications[0]);
        assert_eq!(delivered.waiting, 0);
        // The follower's run for it brings the file.
        let start = Instant::now();
        while std::fs::read(dest.join(&name)).ok().as_deref() != Some(&bytes[..]) {
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{name} never came"
            );
            let synced = until(&mut lines, "synced");
            assert_eq!(synced["complete"], true, "{synced}");
        }
    }
    // Every record is in DIR, as published.
    for n in 0..=5 {
        let (name, bytes, _) = record(&base, n);
        assert_eq!(std::fs::read(dest.join(&name)).unwrap(), bytes, "{name}");
    }
}
