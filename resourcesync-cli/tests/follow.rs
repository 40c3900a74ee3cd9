//! `resourcesync sync --follow` as a process: a Source on 127.0.0.1 (the testkit's) that
//! advertises a Change Notification channel, `resourcesync serve --hub` as its hub, and
//! the follower subscribed through it. A change the Source publishes and notifies is in
//! DIR moments later; a forged notification and a verification nobody asked for change
//! nothing; SIGTERM unsubscribes.

use std::process::Command;

use resourcesync_testkit::served::Served;

#[path = "common/follower.rs"]
mod follower;
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
    let pid = follower.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
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
