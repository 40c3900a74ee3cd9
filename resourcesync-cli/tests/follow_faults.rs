//! `resourcesync sync --follow` when things go wrong between the Publisher and the file on
//! disk, each as real processes on 127.0.0.1: the hub killed and restarted mid-stream, the
//! follower killed for a while and restarted, notifications dropped, duplicated and
//! reordered by a proxy in between, a notification that lists a URL outside the Source,
//! a subscriber that never answers beside the follower. In each the follower ends in sync
//! once the Source is quiet (audited over the bytes by `sync --audit`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[path = "common/follower.rs"]
mod follower;
#[path = "common/server.rs"]
mod server;

use follower::{
    Follower, audit, deliver, first_publication, publish_and_follow, publish_record,
    wait_for_records,
};
use resourcesync_source::notify::HubProtocol;

/// A Publisher's publication, record 0 published, served by `serve --hub` (with
/// `hub_args`) on 127.0.0.1: the temporary directory (the publication in `pub`, the hub's
/// subscriptions in `hub.json`), the server, the base URL, the hub's URL, the Publisher,
/// and the directory a follower syncs into.
fn published(
    hub_args: &[&str],
) -> (
    tempfile::TempDir,
    server::Server,
    String,
    String,
    resourcesync_source::Publisher<resourcesync_source::GenerationStore>,
    std::path::PathBuf,
) {
    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    let state = dir.path().join("hub.json");
    let (hub, base, hub_url) =
        server::serve_hub_with(&publish, &state, "127.0.0.1:0", &[], hub_args);
    let publisher = first_publication(&publish, &base, &hub_url);
    let dest = dir.path().join("dest");
    (dir, hub, base, hub_url, publisher, dest)
}

/// Whether nobody connected to `listener`, which never accepted (a connection would
/// wait in its backlog).
fn heard_nothing(listener: &std::net::TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    listener
        .accept()
        .is_err_and(|e| e.kind() == std::io::ErrorKind::WouldBlock)
}

/// The port of `url` (`http://127.0.0.1:<port>/…`).
fn port(url: &str) -> u16 {
    url.parse::<reqwest::Url>().unwrap().port().unwrap()
}

#[test]
fn the_hub_killed_and_restarted_mid_stream_loses_nothing() {
    let (dir, hub, base, hub_url, mut publisher, dest) = published(&[]);
    let (publish, state) = (dir.path().join("pub"), dir.path().join("hub.json"));
    let follower = Follower::start(&base, &dest);
    follower.until("subscribed");
    publish_and_follow(
        &mut publisher,
        &follower,
        &base,
        1,
        HubProtocol::ResourceSync,
        &dest,
    );

    // SIGKILL: the hub (and the publication it serves) is gone while the Source goes on;
    // what it could not take waits in the outbox.
    drop(hub);
    for n in 2..=4 {
        publish_record(&mut publisher, &base, n);
    }
    let waiting = deliver(
        &mut publisher,
        HubProtocol::ResourceSync,
        Duration::from_millis(500),
    );
    assert_eq!(waiting.waiting, 3, "{waiting:?}");

    // Restarted on its address with its subscriptions: the outbox goes to it, and it to
    // the follower, which catches up.
    let addr = format!("127.0.0.1:{}", port(&hub_url));
    let (_hub, _, again) = server::serve_hub(&publish, &state, &addr, &[]);
    assert_eq!(again, hub_url);
    let delivered = deliver(
        &mut publisher,
        HubProtocol::ResourceSync,
        Duration::from_secs(20),
    );
    assert_eq!(
        (delivered.sequence, delivered.waiting),
        (4, 0),
        "{delivered:?}"
    );
    follower.until("notified");
    wait_for_records(&dest, &base, 4);
    drop(follower);
    audit(&base, &dest);
}

#[test]
fn a_follower_killed_for_a_while_catches_up_when_restarted() {
    let (_dir, _hub, base, _, mut publisher, dest) = published(&[]);
    let follower = Follower::start(&base, &dest);
    follower.until("subscribed");
    // SIGKILL: no unsubscription; the hub's deliveries to it fail from now on.
    drop(follower);
    for n in 1..=3 {
        publish_record(&mut publisher, &base, n);
        let delivered = deliver(
            &mut publisher,
            HubProtocol::ResourceSync,
            Duration::from_secs(20),
        );
        assert_eq!(delivered.waiting, 0);
    }
    // Back: its first run brings what it missed, from the Change Lists, then it follows.
    let follower = Follower::start(&base, &dest);
    let first = follower.until("synced");
    assert_eq!(
        (&first["cause"], &first["complete"]),
        (&"start".into(), &true.into())
    );
    wait_for_records(&dest, &base, 3);
    follower.until("subscribed");
    publish_and_follow(
        &mut publisher,
        &follower,
        &base,
        4,
        HubProtocol::ResourceSync,
        &dest,
    );
    drop(follower);
    audit(&base, &dest);
}

/// A callback proxy between the hub and a follower: verifications pass; of the
/// notifications, in turn, one passes, one is dropped (answered 202, never forwarded), one
/// is forwarded twice, and one is held until the next has passed (reordered).
mod proxy {
    use std::sync::{Arc, Mutex};

    use axum::body::Bytes;
    use axum::extract::State;
    use axum::http::{HeaderMap, Method, StatusCode, Uri};

    /// What the proxy did.
    #[derive(Default, Debug)]
    pub(crate) struct Counts {
        pub(crate) notifications: usize,
        pub(crate) dropped: usize,
        pub(crate) duplicated: usize,
        pub(crate) reordered: usize,
        held: Option<(HeaderMap, Bytes, String)>,
    }

    #[derive(Clone)]
    struct Proxy {
        target: String,
        counts: Arc<Mutex<Counts>>,
        http: reqwest::Client,
    }

    impl Proxy {
        async fn forward(&self, headers: &HeaderMap, body: Bytes, path: &str) {
            let mut request = self.http.post(format!("{}{path}", self.target));
            for name in ["content-type", "link", "x-hub-signature"] {
                if let Some(value) = headers.get(name) {
                    request = request.header(name, value.as_bytes());
                }
            }
            let _ = request.body(body).send().await;
        }
    }

    async fn relay(
        State(proxy): State<Proxy>,
        method: Method,
        uri: Uri,
        headers: HeaderMap,
        body: Bytes,
    ) -> (StatusCode, Bytes) {
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
        if method == Method::GET {
            let Ok(answer) = proxy
                .http
                .get(format!("{}{path}", proxy.target))
                .send()
                .await
            else {
                return (StatusCode::BAD_GATEWAY, Bytes::new());
            };
            let status = StatusCode::from_u16(answer.status().as_u16()).unwrap();
            return (status, answer.bytes().await.unwrap_or_default());
        }
        let (turn, held) = {
            let mut counts = proxy.counts.lock().unwrap();
            counts.notifications += 1;
            let turn = (counts.notifications - 1) % 4;
            match turn {
                1 => counts.dropped += 1,
                2 => counts.duplicated += 1,
                3 => counts.held = Some((headers.clone(), body.clone(), path.clone())),
                _ => {}
            }
            let held = if turn == 0 { counts.held.take() } else { None };
            if held.is_some() {
                counts.reordered += 1;
            }
            (turn, held)
        };
        match turn {
            0 => {
                proxy.forward(&headers, body, &path).await;
                if let Some((headers, body, path)) = held {
                    proxy.forward(&headers, body, &path).await;
                }
            }
            2 => {
                proxy.forward(&headers, body.clone(), &path).await;
                proxy.forward(&headers, body, &path).await;
            }
            _ => {}
        }
        (StatusCode::ACCEPTED, Bytes::new())
    }

    /// Starts the proxy to `target` (`http://host:port`) on a runtime of its own; its
    /// address and counts.
    pub(crate) fn start(
        target: String,
    ) -> (
        std::net::SocketAddr,
        Arc<Mutex<Counts>>,
        tokio::runtime::Runtime,
    ) {
        let runtime = tokio::runtime::Runtime::new().unwrap();
        let counts = Arc::new(Mutex::new(Counts::default()));
        let proxy = Proxy {
            target,
            counts: Arc::clone(&counts),
            http: reqwest::Client::new(),
        };
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new().fallback(relay).with_state(proxy);
        runtime.spawn(async move { axum::serve(listener, app).await });
        (addr, counts, runtime)
    }
}

/// A port free on 127.0.0.1 a moment ago.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn notifications_dropped_duplicated_and_reordered_leave_the_follower_in_sync() {
    let (_dir, _hub, base, _, mut publisher, dest) = published(&[]);
    let listen = format!("127.0.0.1:{}", free_port());
    let (proxy, counts, _runtime) = proxy::start(format!("http://{listen}"));
    let callback = format!("http://{proxy}/resourcesync/through-the-proxy");
    // The hub reaches the follower through the proxy; a run every 2 s besides.
    let follower = Follower::start_with(
        &base,
        &dest,
        &[
            "--interval",
            "2s",
            "--listen",
            &listen,
            "--callback-url",
            &callback,
        ],
    );
    follower.until("subscribed");
    for n in 1..=8 {
        publish_record(&mut publisher, &base, n);
        let delivered = deliver(
            &mut publisher,
            HubProtocol::ResourceSync,
            Duration::from_secs(20),
        );
        assert_eq!(delivered.waiting, 0);
    }
    wait_for_records(&dest, &base, 8);
    // What the notifications' intervals told: the dropped ones as gaps, the duplicated
    // and the late ones as stale.
    assert!(follower.count("gap") >= 1, "no gap told");
    assert!(follower.count("stale") >= 1, "no stale notification told");
    let seen = counts.lock().unwrap();
    assert!(
        seen.notifications >= 8 && seen.dropped >= 2 && seen.duplicated >= 2 && seen.reordered >= 1,
        "{seen:?}"
    );
    drop(seen);
    drop(follower);
    audit(&base, &dest);
}

#[test]
fn a_notification_listing_urls_outside_the_source_fetches_none() {
    let (_dir, _hub, base, hub_url, _publisher, dest) = published(&[]);
    let follower = Follower::start(&base, &dest);
    follower.until("subscribed");
    // A server elsewhere that must hear nothing: connections would wait in its backlog.
    let canary = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let elsewhere = format!("http://{}/stolen.txt", canary.local_addr().unwrap());
    let notification = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="change-notification" from="2020-01-01T00:00:00Z" until="2030-01-01T00:00:00Z"/>
<url><loc>{elsewhere}</loc><rs:md change="created"/></url>
<url><loc>http://169.254.169.254/latest/meta-data/</loc><rs:md change="created"/></url>
<url><loc>{base}../../etc/passwd</loc><rs:md change="created"/></url>
</urlset>
"#
    );
    // Posted to the hub as the Source would (the hub takes it from loopback), relayed
    // signed: the follower takes it, and runs a sync that reads the Change Lists.
    let topic = format!("{base}resourcesync/change-notification.xml");
    let links = resourcesync_websub::links(&topic.parse().unwrap(), &hub_url.parse().unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let posted = runtime
        .block_on(
            reqwest::Client::new()
                .post(&hub_url)
                .header("content-type", "application/xml")
                .header("link", links)
                .body(notification)
                .send(),
        )
        .unwrap();
    assert!(posted.status().is_success(), "{}", posted.status());
    assert_eq!(follower.until("notified")["entries"], 3);
    let synced = follower.until("synced");
    assert_eq!(
        (&synced["cause"], &synced["complete"]),
        (&"notification".into(), &true.into())
    );
    assert_eq!(synced["created"], 0, "{synced}");
    assert!(
        heard_nothing(&canary),
        "the follower fetched a URL the notification listed"
    );
    assert!(!dest.join("stolen.txt").exists());
    drop(follower);
    audit(&base, &dest);
}

#[test]
fn a_subscriber_that_never_answers_does_not_delay_the_follower() {
    let (_dir, _hub, base, hub_url, mut publisher, dest) = published(&[]);
    // A subscriber that verifies, then never answers a notification.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let silent = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let silent_url = format!("http://{}/never", silent.local_addr().unwrap());
    // What it saw: verifications, notifications (each left hanging).
    let seen = std::sync::Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
    let (on_get, on_post) = (seen.clone(), seen.clone());
    let app = axum::Router::new().route(
        "/never",
        axum::routing::get(|uri: axum::http::Uri| async move {
            on_get[0].fetch_add(1, Ordering::SeqCst);
            url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
                .find(|(name, _)| name == "hub.challenge")
                .map(|(_, value)| value.into_owned())
                .unwrap_or_default()
        })
        .post(|| async move {
            on_post[1].fetch_add(1, Ordering::SeqCst);
            std::future::pending::<()>().await;
            ""
        }),
    );
    runtime.spawn(async move { axum::serve(silent, app).await });
    let topic = format!("{base}resourcesync/change-notification.xml");
    let form = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("hub.mode", "subscribe"),
            ("hub.topic", topic.as_str()),
            ("hub.callback", silent_url.as_str()),
        ])
        .finish();
    let asked = runtime
        .block_on(
            reqwest::Client::new()
                .post(&hub_url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(form)
                .send(),
        )
        .unwrap();
    assert_eq!(asked.status(), reqwest::StatusCode::ACCEPTED);
    let start = std::time::Instant::now();
    while seen[0].load(Ordering::SeqCst) == 0 {
        assert!(start.elapsed() < Duration::from_secs(20), "never verified");
        std::thread::sleep(Duration::from_millis(20));
    }

    let follower = Follower::start(&base, &dest);
    follower.until("subscribed");
    // Each notification reaches the follower at once, the silent one's requests hanging
    // beside it.
    for n in 1..=4 {
        let start = std::time::Instant::now();
        publish_and_follow(
            &mut publisher,
            &follower,
            &base,
            n,
            HubProtocol::ResourceSync,
            &dest,
        );
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "change {n} took {:?}",
            start.elapsed()
        );
    }
    // The hub did send to the silent one: its first notification still hangs there.
    assert!(seen[1].load(Ordering::SeqCst) >= 1);
    drop(follower);
    audit(&base, &dest);
}

#[test]
fn a_hub_on_an_address_of_the_destination_s_network_is_never_asked_and_the_follower_polls() {
    use resourcesync_testkit::served::Served;

    let dir = tempfile::tempdir().unwrap();
    // A Source on 127.0.0.1 naming a hub on a private address: the follower does not
    // subscribe there (no request goes to it), and polls.
    let served = Served::start(|s| {
        s.put("r/a.txt", b"a");
        s.tick(10);
        s.publish.hub = Some("http://10.255.255.1:9/hub".parse().unwrap());
    });
    let dest = dir.path().join("dest");
    let follower = Follower::start_with(&served.base, &dest, &["--interval", "1s"]);
    let refused = follower.until("hub-refused");
    assert!(
        refused["reason"].as_str().unwrap().contains("10.255.255.1"),
        "{refused}"
    );
    served.change(|s| {
        s.tick(10);
        s.put("r/b.txt", b"b");
    });
    loop {
        let synced = follower.until("synced");
        assert_eq!(synced["complete"], true, "{synced}");
        if dest.join("r/b.txt").is_file() {
            break;
        }
    }
    drop(follower);
    served.equals(&dest).unwrap();
}

#[test]
fn short_leases_are_renewed_and_a_lease_nobody_renews_ends() {
    // Leases of 2 s at most.
    let (_dir, _hub, base, _, mut publisher, dest) =
        published(&["--hub-lease-min", "1s", "--hub-lease-max", "2s"]);
    let listen = format!("127.0.0.1:{}", free_port());
    let follower = Follower::start_with(
        &base,
        &dest,
        &["--interval", "1h", "--lease", "1h", "--listen", &listen],
    );
    assert_eq!(follower.until("subscribed")["lease"], 2);
    // Three leases later the follower is still subscribed: it renewed each in time.
    for _ in 0..3 {
        assert_eq!(follower.until("subscribed")["lease"], 2);
    }
    std::thread::sleep(Duration::from_secs(1));
    publish_and_follow(
        &mut publisher,
        &follower,
        &base,
        1,
        HubProtocol::ResourceSync,
        &dest,
    );

    // Killed, it renews no more: once its lease has run out the hub sends its callback
    // nothing (a listener in its place hears no connection).
    drop(follower);
    std::thread::sleep(Duration::from_secs(3));
    let canary = std::net::TcpListener::bind(&listen).unwrap();
    publish_record(&mut publisher, &base, 2);
    let delivered = deliver(
        &mut publisher,
        HubProtocol::ResourceSync,
        Duration::from_secs(20),
    );
    assert_eq!(delivered.waiting, 0);
    std::thread::sleep(Duration::from_secs(1));
    assert!(
        heard_nothing(&canary),
        "the hub sent to a subscription whose lease had ended"
    );
}

/// The peak resident memory of process `pid` (`VmHWM`), in bytes.
fn peak_resident(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        << 10
}

#[test]
fn a_flood_at_the_callback_is_acknowledged_in_bounded_memory_and_changes_nothing() {
    let (_dir, _hub, base, _, mut publisher, dest) = published(&[]);
    let follower = Follower::start(&base, &dest);
    let callback = follower.until("listening")["callback"]
        .as_str()
        .unwrap()
        .to_owned();
    follower.until("subscribed");
    let before = peak_resident(follower.child.id());

    // 256 bodies of 1 MiB, unsigned, 64 at a time (twice the connections the callback
    // serves at once): 256 MiB at the callback.
    let runs = follower.count("synced");
    let body = axum::body::Bytes::from(vec![b'x'; 1 << 20]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let acknowledged = runtime.block_on(async {
        let client = reqwest::Client::new();
        let mut tasks = Vec::new();
        for _ in 0..64 {
            let (client, callback, body) = (client.clone(), callback.clone(), body.clone());
            tasks.push(tokio::spawn(async move {
                let mut ok = 0;
                for _ in 0..4 {
                    let sent = client
                        .post(&callback)
                        .header("content-type", "application/xml")
                        .body(body.clone())
                        .send()
                        .await;
                    ok += usize::from(sent.is_ok_and(|r| r.status().is_success()));
                }
                ok
            }));
        }
        let mut ok = 0;
        for task in tasks {
            ok += task.await.unwrap();
        }
        ok
    });
    assert_eq!(acknowledged, 256, "each body is acknowledged (and ignored)");
    let grown = peak_resident(follower.child.id()).saturating_sub(before);
    assert!(
        grown < 96 << 20,
        "the follower's peak memory grew by {} MiB for 256 MiB sent",
        grown >> 20
    );
    // It ran no sync for any of them, and goes on following.
    assert_eq!(follower.count("synced"), runs);
    assert!(follower.count("ignored") >= 1);
    publish_and_follow(
        &mut publisher,
        &follower,
        &base,
        1,
        HubProtocol::ResourceSync,
        &dest,
    );
    drop(follower);
    audit(&base, &dest);
}
