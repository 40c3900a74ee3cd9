//! `resourcesync sync --follow` as a process: a Source on 127.0.0.1 (the testkit's) that
//! advertises a Change Notification channel, `resourcesync serve --hub` as its hub, and
//! the follower subscribed through it. A change the Source publishes and notifies is in
//! DIR moments later; a forged notification and a verification nobody asked for change
//! nothing; SIGTERM unsubscribes.

use std::path::Path;
use std::process::Command;

use resourcesync_testkit::served::Served;

#[path = "common/follower.rs"]
mod follower;
#[path = "common/process.rs"]
mod process;
#[path = "common/server.rs"]
mod server;

use follower::{Follower, first_publication, publish_and_follow, record};

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
    let served = Served::start(|s| {
        s.put("r/a.txt", b"a");
        s.tick(10);
    });
    // The hub relays the Source's topics; the Source advertises the hub.
    let (_hub, _, hub_url) = server::serve_hub(
        &publish,
        &dir.path().join("hub.json"),
        "127.0.0.1:0",
        &[&served.base],
    );
    served.change(|s| s.publish.hub = Some(hub_url.parse().unwrap()));
    let dest = dir.path().join("dest");
    let follower = Follower::start(&served.base, &dest);
    let first = follower.until("synced");
    assert_eq!(first["cause"], "start");
    assert_eq!(first["complete"], true);
    let channel = follower.until("channel");
    let topic = channel["topic"].as_str().unwrap().to_owned();
    assert_eq!(channel["hub"], hub_url.as_str());
    let callback = follower.until("listening")["callback"]
        .as_str()
        .unwrap()
        .to_owned();
    follower.until("subscribed");
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
    let ignored = follower.until("ignored");
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
    let notified = follower.until("notified");
    assert_eq!(notified["entries"], 1);
    let synced = follower.until("synced");
    assert_eq!(synced["cause"], "notification");
    assert_eq!(synced["created"], 1);
    assert_eq!(std::fs::read(dest.join("r/new.txt")).unwrap(), b"new");
    served.equals(&dest).unwrap();

    // SIGTERM: unsubscribed, then the summary, exit 130.
    process::signal(&follower.child, process::Signal::TERM);
    follower.until("unsubscribed");
    let mut follower = follower;
    let status = follower.child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn a_publisher_s_notifications_reach_a_follower_through_the_hub() {
    use resourcesync_source::notify::HubProtocol;

    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    // The hub serves the publication too: the Publisher writes it, serve --hub serves it
    // and relays its notifications.
    let (_server, base, hub_url) =
        server::serve_hub(&publish, &dir.path().join("hub.json"), "127.0.0.1:0", &[]);
    let mut publisher = first_publication(&publish, &base, &hub_url);
    let dest = dir.path().join("dest");
    let follower = Follower::start(&base, &dest);
    follower.until("subscribed");
    for n in 1..=5 {
        let notified = publish_and_follow(
            &mut publisher,
            &follower,
            &base,
            n,
            HubProtocol::ResourceSync,
            &dest,
        );
        assert_eq!(notified["entries"], 1, "{notified}");
    }
    // Every record is in DIR, as published.
    for n in 0..=5 {
        let (name, bytes, _) = record(&base, n);
        assert_eq!(std::fs::read(dest.join(&name)).unwrap(), bytes, "{name}");
    }
}

/// Runs `resourcesync build --json` with `args`; its exit status and its JSON line.
fn build(args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["build", "--json"])
        .args(args)
        .output()
        .unwrap();
    let line = String::from_utf8_lossy(&output.stdout);
    let value = serde_json::from_str(line.trim())
        .unwrap_or_else(|e| panic!("{e}: {line}\n{}", String::from_utf8_lossy(&output.stderr)));
    (output.status.code(), value)
}

#[test]
fn a_built_publication_s_changes_reach_a_follower_through_the_hub() {
    let dir = tempfile::tempdir().unwrap();
    let (collection, publish) = (dir.path().join("files"), dir.path().join("pub"));
    std::fs::create_dir(&collection).unwrap();
    std::fs::create_dir(&publish).unwrap();
    std::fs::write(collection.join("a.txt"), "first\n").unwrap();
    let (_server, base, hub_url) =
        server::serve_hub(&publish, &dir.path().join("hub.json"), "127.0.0.1:0", &[]);
    let (collection_arg, publish_arg) = (collection.to_str().unwrap(), publish.to_str().unwrap());
    let args = [
        "--base-url",
        &base,
        "--hub",
        &hub_url,
        collection_arg,
        publish_arg,
    ];
    let (status, first) = build(&args);
    assert_eq!(status, Some(0), "{first}");
    assert_eq!(first["notified"]["waiting"], 0, "{first}");

    let dest = dir.path().join("dest");
    let follower = Follower::start(&base, &dest);
    follower.until("subscribed");
    assert_eq!(std::fs::read(dest.join("a.txt")).unwrap(), b"first\n");

    // Each build's changes: a notification the hub took, and the follower's run for it.
    for (n, (name, bytes)) in [("b.txt", "second\n"), ("a.txt", "first, again\n")]
        .into_iter()
        .enumerate()
    {
        std::fs::write(collection.join(name), bytes).unwrap();
        let (status, report) = build(&args);
        assert_eq!(status, Some(0), "{report}");
        let written = report["notifications"].as_array().unwrap();
        assert_eq!(written.len(), 1, "run {n}: {report}");
        assert_eq!(report["notified"]["sequence"], written[0], "{report}");
        assert_eq!(report["notified"]["waiting"], 0, "{report}");
        let notified = follower.until("notified");
        assert_eq!(notified["entries"], 1, "{notified}");
        let start = std::time::Instant::now();
        while std::fs::read(dest.join(name)).ok().as_deref() != Some(bytes.as_bytes()) {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(30),
                "{name} never came"
            );
            let synced = follower.until("synced");
            assert_eq!(synced["complete"], true, "{synced}");
        }
    }
}

#[test]
fn a_built_notification_the_hub_did_not_take_waits_for_the_next_build() {
    let dir = tempfile::tempdir().unwrap();
    let (collection, publish) = (dir.path().join("files"), dir.path().join("pub"));
    std::fs::create_dir(&collection).unwrap();
    std::fs::create_dir(&publish).unwrap();
    std::fs::write(collection.join("a.txt"), "first\n").unwrap();
    let (_server, base, hub_url) =
        server::serve_hub(&publish, &dir.path().join("hub.json"), "127.0.0.1:0", &[]);
    let (collection_arg, publish_arg) = (collection.to_str().unwrap(), publish.to_str().unwrap());
    // A hub that takes the connection and never answers (the listener never accepts: the
    // connection waits in its backlog): the run publishes, says within --notify-within
    // that the notification waits (exit 1), and keeps it in the publication.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/hub", silent.local_addr().unwrap());
    let dead_args = [
        "--base-url",
        &base,
        "--hub",
        &dead,
        "--notify-within",
        "1s",
        collection_arg,
        publish_arg,
    ];
    // The first run is the baseline: no change, no notification.
    let (status, baseline) = build(&dead_args);
    assert_eq!(status, Some(0), "{baseline}");
    assert_eq!(
        baseline["notifications"],
        serde_json::json!([]),
        "{baseline}"
    );
    std::fs::write(collection.join("b.txt"), "second\n").unwrap();
    let started = std::time::Instant::now();
    let (status, first) = build(&dead_args);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "build hung on the hub"
    );
    assert_eq!(status, Some(1), "{first}");
    assert_eq!(first["generation"], 2, "{first}");
    let written = first["notifications"].as_array().unwrap().clone();
    assert_eq!(written.len(), 1, "{first}");
    assert_eq!(first["notified"]["waiting"], 1, "{first}");
    assert_eq!(first["notified"]["sequence"], 0, "{first}");

    // Two runs later, without changes, a hub that answers takes it: it was carried from
    // generation to generation (a run without a hub keeps it too).
    let (status, second) = build(&["--base-url", &base, collection_arg, publish_arg]);
    assert_eq!(status, Some(0), "{second}");
    assert!(second.get("notified").is_none(), "{second}");
    let notification = format!(
        "resourcesync/notifications/{:010}.xml",
        written[0].as_u64().unwrap()
    );
    assert!(publish.join(&notification).is_file(), "{notification}");
    let args = [
        "--base-url",
        &base,
        "--hub",
        &hub_url,
        collection_arg,
        publish_arg,
    ];
    let (status, third) = build(&args);
    assert_eq!(status, Some(0), "{third}");
    assert_eq!(third["notifications"], serde_json::json!([]), "{third}");
    assert_eq!(third["notified"]["sequence"], written[0], "{third}");
    assert_eq!(third["notified"]["waiting"], 0, "{third}");
    // Taken, it leaves the outbox with the next run.
    let (status, fourth) = build(&args);
    assert_eq!(status, Some(0), "{fourth}");
    assert!(!publish.join(&notification).exists(), "{notification}");
    assert_eq!(fourth["notified"]["sequence"], 0, "{fourth}");
}

/// A hub that refuses the subscription (here `serve --hub` without `--hub-allow`, which
/// sends nothing to a loopback callback) is heard: the follower says the hub's reason and
/// when it tries again, and the server logs the refusal (both said only "403" or nothing).
#[test]
fn a_refused_subscription_says_why_at_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (collection, publish) = (dir.path().join("files"), dir.path().join("pub"));
    std::fs::create_dir(&collection).unwrap();
    std::fs::create_dir(&publish).unwrap();
    std::fs::write(collection.join("a.txt"), "first\n").unwrap();
    let log = dir.path().join("serve.log");
    let mut command = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
    command
        .args(["serve", "--addr", "127.0.0.1:0", "--json", "--hub"])
        .arg("--hub-state")
        .arg(dir.path().join("hub.json"))
        .arg(&publish)
        .stdout(std::process::Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap());
    let mut child = command.spawn().unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let _server = server::Server::from(child);
    let line: serde_json::Value = serde_json::from_str(&first).unwrap();
    let (base, hub) = (line["url"].as_str().unwrap(), line["hub"].as_str().unwrap());
    let args = ["--base-url", base, "--hub", hub];
    let status = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .arg("build")
        .args(args)
        .arg(&collection)
        .arg(&publish)
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");

    let follower = Follower::start(base, &dir.path().join("dest"));
    let failed = follower.until("subscription-failed");
    assert_eq!(failed["status"], 403, "{failed}");
    let reason = failed["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("this hub sends nothing to http://127.0.0.1:"),
        "{failed}"
    );
    // The first wait is half a second: 1 s rounded up (0 only if it passed before the
    // line was written).
    assert!(
        matches!(failed["retry_in"].as_u64(), Some(0 | 1)),
        "{failed}"
    );
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("refused a request (403 Forbidden): this hub sends nothing to"),
        "{logged}"
    );
    // And at its end the follower says it never was subscribed, and why: every run was
    // polled (its summary said only how many runs).
    let summary = &follower.stop()["followed"];
    assert_eq!(summary["subscribed"], false, "{summary}");
    let refusal = summary["refusal"].as_str().unwrap_or_default();
    assert!(
        refusal.starts_with("the hub answered 403 Forbidden: this hub sends nothing to"),
        "{summary}"
    );
    // Without --json the refusal is a problem, on standard error, as the help says, in
    // the hub's words as written (its apostrophes were printed escaped: "hub\'s").
    let (out, err) = (dir.path().join("out"), dir.path().join("err"));
    let mut plain = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--follow", "--interval", "1h", base])
        .arg(dir.path().join("plain"))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let said = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    for _ in 0..100 {
        if said(&err).contains("the hub answered the subscription with 403") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = plain.kill();
    let _ = plain.wait();
    let (out, err) = (said(&out), said(&err));
    assert!(
        err.contains("the hub answered the subscription with 403 Forbidden: this hub sends"),
        "stdout:\n{out}\nstderr:\n{err}"
    );
    assert!(!err.contains("\\'"), "{err}");
    assert!(!out.contains("the hub answered"), "stdout:\n{out}");
}

/// Each of a follower's runs is followed by the hints a single sync prints after its
/// summary: here, that the deletions its Change Lists listed were not made (no --delete),
/// and what makes them.
#[test]
fn a_follower_says_what_to_do_about_the_deletions_it_did_not_make() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(|s| {
        s.put("r/a.txt", b"a");
        s.put("r/b.txt", b"b");
        s.tick(10);
    });
    let dest = dir.path().join("dest");
    let log = dir.path().join("stderr");
    let _follower = polling_follower(&served.base, &dest, &log);
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !dest.join("r/b.txt").exists() {
        assert!(std::time::Instant::now() < deadline, "{}", read());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    served.change(|s| {
        s.tick(10);
        s.delete("r/b.txt");
        s.tick(10);
    });
    let hint = "1 deletion listed by the Source was not made (no --delete); \
                `sync --baseline --delete` makes it later";
    while !read().contains(hint) {
        assert!(std::time::Instant::now() < deadline, "{}", read());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(dest.join("r/b.txt").exists());
}

/// A conflict left as it is is met by each of a follower's runs, and each run's problem
/// line names it; the hint that says what to do about it comes once, not after every
/// run (a follower without a hub runs every second here).
#[test]
fn a_follower_says_what_to_do_about_a_conflict_once_not_after_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let served = Served::start(|s| {
        s.put("r/a.txt", b"a");
        s.put("r/b.txt", b"b");
        s.tick(10);
    });
    let dest = dir.path().join("dest");
    // A file of the user's at a listed path, with other bytes: a conflict, left as it is.
    std::fs::create_dir_all(dest.join("r")).unwrap();
    std::fs::write(dest.join("r/a.txt"), b"mine").unwrap();
    let log = dir.path().join("stderr");
    let _follower = polling_follower(&served.base, &dest, &log);
    let read = || std::fs::read_to_string(&log).unwrap_or_default();
    let problem = "a file no sync stored, with other bytes: left as it is";
    let hint = "1 conflict (named above) was left as it is";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Three runs met it; the first one's hint came before the second run's problem line.
    while read().matches(problem).count() < 3 {
        assert!(std::time::Instant::now() < deadline, "{}", read());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let err = read();
    assert_eq!(err.matches(hint).count(), 1, "{err}");
    assert_eq!(std::fs::read(dest.join("r/a.txt")).unwrap(), b"mine");
    assert_eq!(std::fs::read(dest.join("r/b.txt")).unwrap(), b"b");
}

/// `sync --follow` of `base` into `dest` without a hub (a run every second), its
/// standard error written to `log`; killed when dropped, however the test ends.
fn polling_follower(base: &str, dest: &std::path::Path, log: &std::path::Path) -> Killed {
    let child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--follow", "--interval", "1s", base])
        .arg(dest)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    Killed(child)
}

/// A child process, killed and waited for when dropped.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
