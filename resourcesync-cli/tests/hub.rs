//! `resourcesync serve --hub` as a process on 127.0.0.1, with a subscriber of the test's
//! own on 127.0.0.1 (an axum server): a subscription verified by the echoed challenge and
//! saved (privately) to the state file, a Source's notification delivered signed with the
//! subscriber's secret and retried when the subscriber fails, the subscription kept across
//! a killed and restarted hub, a callback outside the policy refused, an unsubscription.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use resourcesync_websub::{HubSignature, Links};

#[path = "common/server.rs"]
mod server;

use server::serve_hub;

/// What the subscriber saw.
#[derive(Default)]
struct Seen {
    /// The verifications: mode and topic.
    verifications: Vec<(String, String)>,
    /// The bodies delivered, with their headers.
    deliveries: Vec<(HeaderMap, Bytes)>,
    /// Deliveries to fail with 503 before taking one.
    fail: usize,
}

type Shared = Arc<Mutex<Seen>>;

async fn verify(State(seen): State<Shared>, uri: axum::http::Uri) -> (StatusCode, String) {
    let query: Vec<(String, String)> =
        url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let get = |name: &str| {
        query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    seen.lock()
        .unwrap()
        .verifications
        .push((get("hub.mode"), get("hub.topic")));
    (StatusCode::OK, get("hub.challenge"))
}

async fn deliver(State(seen): State<Shared>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let mut seen = seen.lock().unwrap();
    if seen.fail > 0 {
        seen.fail -= 1;
        return StatusCode::SERVICE_UNAVAILABLE;
    }
    seen.deliveries.push((headers, body));
    StatusCode::OK
}

/// Waits up to 20 seconds for `done` to hold.
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "waited in vain for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn form(client: &reqwest::Client, hub: &str, pairs: &[(&str, &str)]) -> StatusCode {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    client
        .post(hub)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap()
        .status()
}

async fn notify(client: &reqwest::Client, hub: &str, topic: &str, body: &str) -> StatusCode {
    let links = resourcesync_websub::links(&topic.parse().unwrap(), &hub.parse().unwrap());
    client
        .post(hub)
        .header("content-type", "application/xml")
        .header("link", links)
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
        .status()
}

const NOTIFICATION: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="change-notification" from="2013-01-03T00:00:00Z" until="2013-01-03T00:10:00Z"/>
<url><loc>http://example.com/res1</loc><rs:md change="created" datetime="2013-01-03T00:07:22Z"/></url>
</urlset>
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_beside_the_publication_verifies_signs_retries_and_remembers() {
    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    std::fs::create_dir(&publish).unwrap();
    std::fs::write(publish.join("hello.txt"), "hello").unwrap();
    let state = dir.path().join("hub.json");

    let seen: Shared = Arc::default();
    let app = Router::new()
        .route("/cb", axum::routing::get(verify).post(deliver))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let callback = format!("http://{}/cb", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let (server, url, hub) = serve_hub(&publish, &state, "127.0.0.1:0", &[]);
    let topic = format!("{url}resourcesync/change-notification.xml");
    let client = reqwest::Client::new();
    // The topic answers with its links (Change Notification 1.0.1, 4.1); another file
    // without them.
    std::fs::create_dir(publish.join("resourcesync")).unwrap();
    std::fs::write(publish.join("resourcesync/change-notification.xml"), "").unwrap();
    for method in [reqwest::Method::GET, reqwest::Method::HEAD] {
        let answer = client.request(method, &topic).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let links = Links::parse(answer.headers()["link"].to_str().unwrap());
        assert_eq!(links.topic().map(|t| t.to_string()), Some(topic.clone()));
        assert_eq!(links.hub().map(|h| h.to_string()), Some(hub.clone()));
    }
    let other = client.get(format!("{url}hello.txt")).send().await.unwrap();
    assert!(other.headers().get("link").is_none());
    let subscribe = [
        ("hub.mode", "subscribe"),
        ("hub.topic", topic.as_str()),
        ("hub.callback", callback.as_str()),
        ("hub.secret", "s3cret"),
        ("hub.lease_seconds", "600"),
    ];
    assert_eq!(form(&client, &hub, &subscribe).await, StatusCode::ACCEPTED);
    until("the verification", || {
        !seen.lock().unwrap().verifications.is_empty()
    })
    .await;
    assert_eq!(
        seen.lock().unwrap().verifications[0],
        ("subscribe".to_owned(), topic.clone())
    );
    until("the saved subscription", || {
        std::fs::read_to_string(&state).is_ok_and(|s| s.contains(&callback))
    })
    .await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&state).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the secrets are the owner's alone");
    }

    // The subscriber fails once: the body comes again after the hub's wait.
    seen.lock().unwrap().fail = 1;
    assert_eq!(
        notify(&client, &hub, &topic, NOTIFICATION).await,
        StatusCode::OK
    );
    until("the delivery", || {
        !seen.lock().unwrap().deliveries.is_empty()
    })
    .await;
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.fail, 0, "the first attempt failed");
        let (headers, body) = &seen.deliveries[0];
        assert_eq!(&body[..], NOTIFICATION.as_bytes());
        assert_eq!(headers["content-type"], "application/xml");
        let links = Links::parse(headers["link"].to_str().unwrap());
        assert_eq!(links.topic().map(|t| t.to_string()), Some(topic.clone()));
        assert_eq!(links.hub().map(|h| h.to_string()), Some(hub.clone()));
        let signature: HubSignature = headers["x-hub-signature"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!(signature.verify(b"s3cret", body));
        assert!(!signature.verify(b"guess", body));
    }

    // Killed, not stopped: the subscription was saved when it was made.
    drop(server);
    // On the same address: the topics it relays are its own URL's.
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let (server, _, hub) = serve_hub(&publish, &state, &addr, &[]);
    assert_eq!(
        notify(&client, &hub, &topic, NOTIFICATION).await,
        StatusCode::OK
    );
    until("the delivery after the restart", || {
        seen.lock().unwrap().deliveries.len() == 2
    })
    .await;

    // A callback the policy does not allow gets no request, and the subscriber its 403.
    let elsewhere = [
        ("hub.mode", "subscribe"),
        ("hub.topic", topic.as_str()),
        ("hub.callback", "http://10.1.2.3/cb"),
    ];
    assert_eq!(form(&client, &hub, &elsewhere).await, StatusCode::FORBIDDEN);
    // Another Source's topic is not relayed.
    assert_eq!(
        notify(
            &client,
            &hub,
            "http://elsewhere.example/topic",
            NOTIFICATION
        )
        .await,
        StatusCode::FORBIDDEN
    );

    // Unsubscribed once the subscriber confirms: the state file says so.
    let unsubscribe = [
        ("hub.mode", "unsubscribe"),
        ("hub.topic", topic.as_str()),
        ("hub.callback", callback.as_str()),
    ];
    assert_eq!(
        form(&client, &hub, &unsubscribe).await,
        StatusCode::ACCEPTED
    );
    until("the unsubscription", || {
        std::fs::read_to_string(&state).is_ok_and(|s| !s.contains(&callback))
    })
    .await;
    assert_eq!(
        seen.lock()
            .unwrap()
            .verifications
            .last()
            .map(|v| v.0.clone()),
        Some("unsubscribe".into())
    );
    drop(server);
}

/// `serve --hub` over a one-file publication, its standard error kept in a file, and a
/// subscriber's callback served by `app` at `path`.
struct Logged {
    _dir: tempfile::TempDir,
    log: std::path::PathBuf,
    hub: String,
    topic: String,
    callback: String,
}

impl Logged {
    /// The hub started (stopped when its server is dropped), and the callback.
    async fn start(app: Router, path: &str) -> (Logged, server::Server) {
        let dir = tempfile::tempdir().unwrap();
        let publish = dir.path().join("pub");
        std::fs::create_dir(&publish).unwrap();
        std::fs::write(publish.join("hello.txt"), "hello").unwrap();
        let state = dir.path().join("hub.json");
        let log = dir.path().join("stderr");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let callback = format!("http://{}{path}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let stderr = std::fs::File::create(&log).unwrap();
        let (server, url, hub) =
            server::serve_hub_logged(&publish, &state, "127.0.0.1:0", &[], &[], stderr.into());
        let topic = format!("{url}resourcesync/change-notification.xml");
        let logged = Logged {
            _dir: dir,
            log,
            hub,
            topic,
            callback,
        };
        (logged, server)
    }

    /// The callback's request to subscribe to the topic.
    fn subscription(&self) -> [(&str, &str); 3] {
        [
            ("hub.mode", "subscribe"),
            ("hub.topic", self.topic.as_str()),
            ("hub.callback", self.callback.as_str()),
        ]
    }

    /// What the hub said so far.
    fn read(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// What the hub's operator reads of a subscriber names its callback by scheme and
/// authority only: the rest is the subscriber's secret (WebSub 6). A callback that
/// refused its verification was printed whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_s_log_never_shows_a_callback_s_secret() {
    // A subscriber whose callback refuses the verification (404).
    let app = Router::new().route(
        "/s3cret-path/cb",
        axum::routing::get(|| async { StatusCode::NOT_FOUND }),
    );
    let (logged, server) = Logged::start(app, "/s3cret-path/cb").await;
    let client = reqwest::Client::new();
    assert_eq!(
        form(&client, &logged.hub, &logged.subscription()).await,
        StatusCode::ACCEPTED
    );
    let read = || logged.read();
    until("the hub to say the verification failed", || {
        read().contains("did not confirm")
    })
    .await;
    drop(server);
    let said = read();
    assert!(!said.contains("s3cret"), "{said}");
    assert!(said.contains("/… did not confirm its request"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operator_s_log_tells_a_renewal_from_a_new_subscription_and_names_what_allows_a_host() {
    let seen = Shared::default();
    let app = Router::new()
        .route("/cb", axum::routing::get(verify))
        .with_state(seen.clone());
    let (logged, server) = Logged::start(app, "/cb").await;
    let (client, hub, pairs) = (reqwest::Client::new(), &logged.hub, logged.subscription());
    let read = || logged.read();
    assert_eq!(form(&client, hub, &pairs).await, StatusCode::ACCEPTED);
    until("the subscription", || read().contains(" subscribed to ")).await;
    // The same subscriber again, as it does before its lease ends.
    assert_eq!(form(&client, hub, &pairs).await, StatusCode::ACCEPTED);
    until("the renewal", || {
        read().contains(" renewed its subscription to ")
    })
    .await;
    let said = read();
    assert_eq!(said.matches(" subscribed to ").count(), 1, "{said}");
    assert_eq!(seen.lock().unwrap().verifications.len(), 2, "{said}");
    // A callback on a host the hub does not allow (a private address): refused, and the
    // operator's log names what allows it; a topic the hub does not relay is no such
    // thing.
    let private = [
        ("hub.mode", "subscribe"),
        ("hub.topic", logged.topic.as_str()),
        ("hub.callback", "http://10.1.2.3/cb"),
    ];
    assert_eq!(form(&client, hub, &private).await, StatusCode::FORBIDDEN);
    let elsewhere = [
        ("hub.mode", "subscribe"),
        ("hub.topic", "http://elsewhere.example/topic"),
        ("hub.callback", logged.callback.as_str()),
    ];
    assert_eq!(form(&client, hub, &elsewhere).await, StatusCode::FORBIDDEN);
    until("the refusals", || {
        read().matches("refused a request").count() == 2
    })
    .await;
    drop(server);
    let said = read();
    assert_eq!(said.matches("--hub-allow HOST").count(), 1, "{said}");
    // Named by its host: its path is the subscriber's secret.
    assert!(
        said.contains("http://10.1.2.3/…: its host is not one"),
        "{said}"
    );
    assert!(!said.contains("/cb"), "{said}");
}
