//! The hub's state machine driven by hand with a virtual clock: intent verification,
//! leases, policies, distribution with signatures, per-subscriber queues, retries, 410,
//! the publish ping, and a restart.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use resourcesync_websub::{
    Answer, CallbackPolicy, Hub, HubEvent, HubOptions, HubSignature, Leases, Links, Retry, Transmit,
};

mod common;

use common::{HUB, TOPIC, t, uri};

fn hub() -> Hub {
    Hub::new(
        HubOptions::new(uri(HUB), vec!["http://127.0.0.1:8000/".into()])
            .with_callbacks(CallbackPolicy::Hosts(vec!["127.0.0.1".into()]))
            .with_retry(
                Retry::new(
                    Duration::from_secs(1),
                    Duration::from_secs(8),
                    Duration::from_secs(30),
                ),
                3,
            )
            .with_queue(3),
    )
}

fn form(pairs: &[(&str, &str)]) -> (HeaderMap, Vec<u8>) {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-www-form-urlencoded"),
    );
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish();
    (headers, body.into_bytes())
}

/// A form POSTed to the hub; the time is the caller's story, not the hub's.
fn post(hub: &mut Hub, pairs: &[(&str, &str)], _now: SystemTime) -> StatusCode {
    let (headers, body) = form(pairs);
    hub.handle_request(&Method::POST, &headers, &body, true)
        .status
}

fn hub_answer(hub: &mut Hub, headers: &HeaderMap, body: &[u8]) -> Answer {
    hub.handle_request(&Method::POST, headers, body, true)
}

fn subscribe_request(
    hub: &mut Hub,
    callback: &str,
    secret: Option<&str>,
    now: SystemTime,
) -> StatusCode {
    let mut pairs = vec![
        ("hub.mode", "subscribe"),
        ("hub.topic", TOPIC),
        ("hub.callback", callback),
    ];
    if let Some(secret) = secret {
        pairs.push(("hub.secret", secret));
    }
    post(hub, &pairs, now)
}

/// The query of a request's URI, as pairs.
fn query(transmit: &Transmit) -> Vec<(String, String)> {
    url::form_urlencoded::parse(transmit.request.uri().query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

fn param(transmit: &Transmit, name: &str) -> Option<String> {
    query(transmit)
        .into_iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
}

fn events(hub: &mut Hub) -> Vec<HubEvent> {
    std::iter::from_fn(|| hub.poll_event()).collect()
}

/// Answers a verification as the subscriber who asked: the challenge echoed.
fn echo(hub: &mut Hub, verify: &Transmit, now: SystemTime) {
    let challenge = param(verify, "hub.challenge").unwrap();
    hub.handle_response(
        verify.id,
        StatusCode::OK,
        &HeaderMap::new(),
        challenge.as_bytes(),
        now,
    );
}

/// Subscribes `callback` all the way: the request, its verification echoed.
fn subscribe(hub: &mut Hub, callback: &str, secret: Option<&str>, now: SystemTime) {
    assert_eq!(
        subscribe_request(hub, callback, secret, now),
        StatusCode::ACCEPTED
    );
    let verify = hub.poll_transmit(now).unwrap();
    echo(hub, &verify, now);
    assert!(matches!(events(hub)[..], [HubEvent::Subscribed { .. }]));
}

/// The headers of a Source's notification: XML, and its topic and hub.
fn notification_headers() -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    headers.insert(
        header::LINK,
        HeaderValue::from_str(&resourcesync_websub::links(&uri(TOPIC), &uri(HUB))).unwrap(),
    );
    headers
}

/// A Source's notification POSTed to the hub.
fn notify(hub: &mut Hub, body: &str, _now: SystemTime) -> StatusCode {
    let headers = notification_headers();
    hub.handle_request(&Method::POST, &headers, body.as_bytes(), true)
        .status
}

fn ok(hub: &mut Hub, transmit: &Transmit, now: SystemTime) {
    hub.handle_response(transmit.id, StatusCode::OK, &HeaderMap::new(), b"", now);
}

#[test]
fn a_subscription_is_active_once_the_callback_echoes_the_challenge() {
    let mut hub = hub();
    let callback = "http://127.0.0.1:9000/cb?follower=1";
    assert_eq!(
        subscribe_request(&mut hub, callback, None, t(0)),
        StatusCode::ACCEPTED
    );
    assert!(hub.subscriptions().is_empty(), "not before it is verified");
    let verify = hub.poll_transmit(t(0)).unwrap();
    assert_eq!(verify.request.method(), Method::GET);
    // The callback's own query is kept, the hub's parameters appended.
    assert_eq!(query(&verify)[0], ("follower".into(), "1".into()));
    assert_eq!(param(&verify, "hub.mode").as_deref(), Some("subscribe"));
    assert_eq!(param(&verify, "hub.topic").as_deref(), Some(TOPIC));
    assert_eq!(
        param(&verify, "hub.lease_seconds").as_deref(),
        Some("864000")
    );
    let challenge = param(&verify, "hub.challenge").unwrap();
    assert!(challenge.len() >= 32);
    // A wrong echo is no confirmation.
    hub.handle_response(verify.id, StatusCode::OK, &HeaderMap::new(), b"yes", t(1));
    assert!(matches!(
        events(&mut hub)[..],
        [HubEvent::NotVerified { .. }]
    ));
    assert!(hub.subscriptions().is_empty());

    subscribe(&mut hub, callback, Some("s3cret"), t(2));
    let saved = hub.subscriptions();
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].secret.as_deref(), Some("s3cret"));
    // The lease runs from the verification request.
    assert_eq!(saved[0].expires, 1_800_000_002 + 864_000);
    // Each challenge is new.
    assert_eq!(
        subscribe_request(&mut hub, callback, None, t(3)),
        StatusCode::ACCEPTED
    );
    let again = hub.poll_transmit(t(3)).unwrap();
    assert_ne!(param(&again, "hub.challenge").unwrap(), challenge);
    // A failed renewal leaves the subscription as it was.
    hub.handle_response(
        again.id,
        StatusCode::NOT_FOUND,
        &HeaderMap::new(),
        b"",
        t(3),
    );
    assert_eq!(hub.subscriptions(), saved);
}

#[test]
fn leases_are_held_to_their_bounds_and_end() {
    let mut hub = hub();
    let callback = "http://127.0.0.1:9000/cb";
    for (asked, granted) in [("1", "300"), ("999999999", "2678400"), ("3600", "3600")] {
        let status = post(
            &mut hub,
            &[
                ("hub.mode", "subscribe"),
                ("hub.topic", TOPIC),
                ("hub.callback", callback),
                ("hub.lease_seconds", asked),
            ],
            t(0),
        );
        assert_eq!(status, StatusCode::ACCEPTED);
        let verify = hub.poll_transmit(t(0)).unwrap();
        assert_eq!(
            param(&verify, "hub.lease_seconds").as_deref(),
            Some(granted),
            "{asked}"
        );
        echo(&mut hub, &verify, t(0));
    }
    // The first made the subscription, the two after renewed it.
    let renewed: Vec<bool> = events(&mut hub)
        .into_iter()
        .filter_map(|e| match e {
            HubEvent::Subscribed { renewed, .. } => Some(renewed),
            _ => None,
        })
        .collect();
    assert_eq!(renewed, [false, true, true]);
    assert_eq!(hub.poll_timeout(), Some(t(3600)));
    assert!(hub.poll_transmit(t(3600)).is_none());
    assert!(matches!(events(&mut hub)[..], [HubEvent::Expired { .. }]));
    assert!(hub.subscriptions().is_empty());
    // Nothing is delivered to an expired subscription.
    assert_eq!(notify(&mut hub, "<urlset/>", t(3601)), StatusCode::OK);
    assert!(hub.poll_transmit(t(3601)).is_none());
    for bad in ["0", "-5", "soon"] {
        let status = post(
            &mut hub,
            &[
                ("hub.mode", "subscribe"),
                ("hub.topic", TOPIC),
                ("hub.callback", callback),
                ("hub.lease_seconds", bad),
            ],
            t(0),
        );
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    }
}

#[test]
fn no_request_goes_to_a_callback_or_topic_the_policy_does_not_allow() {
    let mut hub = hub();
    for callback in [
        "http://10.0.0.1/cb",
        "http://localhost:9000/cb",
        "ftp://127.0.0.1/cb",
    ] {
        assert_eq!(
            subscribe_request(&mut hub, callback, None, t(0)),
            StatusCode::FORBIDDEN,
            "{callback}"
        );
    }
    // Text that starts like the prefix but names another host, another port, a path
    // beside the prefix's: refused.
    for elsewhere in [
        "http://127.0.0.1:8000@169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:80001/topic",
        "http://127.0.0.1:8000.evil.example/topic",
        "https://127.0.0.1:8000/topic",
    ] {
        let status = post(
            &mut hub,
            &[
                ("hub.mode", "subscribe"),
                ("hub.topic", elsewhere),
                ("hub.callback", "http://127.0.0.1/cb"),
            ],
            t(0),
        );
        assert_ne!(status, StatusCode::ACCEPTED, "{elsewhere}");
    }
    // Another Source's topic: neither subscribed to, nor published, nor fetched.
    let other = "http://elsewhere.example/topic";
    let status = post(
        &mut hub,
        &[
            ("hub.mode", "subscribe"),
            ("hub.topic", other),
            ("hub.callback", "http://127.0.0.1/cb"),
        ],
        t(0),
    );
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Which of the two refusals is the operator's to lift: the callback's host, not the
    // topic.
    let refused = |callback: &str, topic: &str| {
        let (headers, body) = form(&[
            ("hub.mode", "subscribe"),
            ("hub.topic", topic),
            ("hub.callback", callback),
        ]);
        hub_answer(&mut crate::hub(), &headers, &body)
    };
    let answer = refused("http://10.0.0.1/cb", TOPIC);
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(answer.callback_not_allowed);
    let answer = refused("http://127.0.0.1/cb", other);
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(!answer.callback_not_allowed);
    // The refused callback is named by its host and port: neither its path nor its
    // userinfo, the subscriber's secrets, is in the answer (which the operator logs).
    let answer = refused("http://user:t0ken@10.0.0.1:8080/s3cret/cb", TOPIC);
    assert!(
        answer.body.contains("http://10.0.0.1:8080/…"),
        "{}",
        answer.body
    );
    assert!(
        !answer.body.contains("t0ken") && !answer.body.contains("s3cret"),
        "{}",
        answer.body
    );
    // A scheme the hub never sends to is nothing the operator can allow.
    let answer = refused("ftp://10.0.0.1/cb", TOPIC);
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    assert!(!answer.callback_not_allowed);
    assert_eq!(
        post(
            &mut hub,
            &[("hub.mode", "publish"), ("hub.url", other)],
            t(0)
        ),
        StatusCode::FORBIDDEN
    );
    assert!(hub.poll_transmit(t(0)).is_none());
    // The public policy refuses the operator's own network.
    let public = CallbackPolicy::Public;
    for inside in [
        "http://127.0.0.1/cb",
        "http://192.168.1.2/cb",
        "http://[::1]/cb",
        "http://[fe80::1]/cb",
        "http://[::ffff:127.0.0.1]/cb",
        "http://app.localhost/cb",
        "http://169.254.169.254/latest",
    ] {
        assert!(!public.allows(&uri(inside)), "{inside}");
    }
    assert!(public.allows(&uri("https://destination.example.net/callback/")));
    // What a callback's name resolves to is held to the policy too.
    for inside in [
        "127.0.0.1",
        "10.1.2.3",
        "192.168.0.9",
        "169.254.169.254",
        "::1",
        "fc00::1",
        "::ffff:10.0.0.1",
    ] {
        assert!(!public.allows_address(inside.parse().unwrap()), "{inside}");
    }
    assert!(public.allows_address("93.184.215.14".parse().unwrap()));
    assert!(
        CallbackPolicy::Hosts(vec!["cb.example".into()])
            .allows_address("127.0.0.1".parse().unwrap())
    );
    // `localhost` allowed is the loopback's addresses too, which a follower on the same
    // machine gives as its callback (a new-user trial's `--hub-allow localhost` refused
    // http://127.0.0.1:PORT/); no other host's.
    let local = CallbackPolicy::Hosts(vec!["LocalHost".into()]);
    for loopback in [
        "http://localhost:8081/cb",
        "http://127.0.0.1:8081/cb",
        "http://127.0.0.2/cb",
        "http://[::1]:8081/cb",
    ] {
        assert!(local.allows(&uri(loopback)), "{loopback}");
    }
    for elsewhere in [
        "http://192.168.1.2/cb",
        "http://app.localhost/cb",
        "http://[fe80::1]/cb",
    ] {
        assert!(!local.allows(&uri(elsewhere)), "{elsewhere}");
    }
    // A secret of 200 bytes or more, no mode, no callback.
    let long = "x".repeat(200);
    assert_eq!(
        subscribe_request(&mut hub, "http://127.0.0.1/cb", Some(&long), t(0)),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        post(&mut hub, &[("hub.topic", TOPIC)], t(0)),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        post(
            &mut hub,
            &[("hub.mode", "subscribe"), ("hub.topic", TOPIC)],
            t(0)
        ),
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        hub.handle_request(&Method::GET, &HeaderMap::new(), b"", true)
            .status,
        StatusCode::METHOD_NOT_ALLOWED
    );
    assert!(hub.poll_transmit(t(0)).is_none());
}

#[test]
fn only_the_publishers_may_publish() {
    let mut hub = hub();
    subscribe(&mut hub, "http://127.0.0.1:9001/a", Some("alpha"), t(0));
    let headers = notification_headers();
    // A notification or a ping from anyone else: refused, nothing queued or fetched.
    let forged = hub.handle_request(&Method::POST, &headers, b"<urlset>forged</urlset>", false);
    assert_eq!(forged.status, StatusCode::FORBIDDEN);
    let (form_headers, ping) = form(&[("hub.mode", "publish"), ("hub.topic", TOPIC)]);
    let pinged = hub.handle_request(&Method::POST, &form_headers, &ping, false);
    assert_eq!(pinged.status, StatusCode::FORBIDDEN);
    assert!(hub.poll_transmit(t(1)).is_none());
    assert_eq!(hub.load(), (1, 0));
    // Anyone may still subscribe.
    let (form_headers, request) = form(&[
        ("hub.mode", "subscribe"),
        ("hub.topic", TOPIC),
        ("hub.callback", "http://127.0.0.1:9002/b"),
    ]);
    let subscribed = hub.handle_request(&Method::POST, &form_headers, &request, false);
    assert_eq!(subscribed.status, StatusCode::ACCEPTED);
}

#[test]
fn a_restored_record_of_no_time_is_dropped() {
    let mut hub = hub();
    let record: Vec<resourcesync_websub::SubscriptionRecord> = serde_json::from_str(&format!(
        r#"[{{"topic":"{TOPIC}","callback":"http://127.0.0.1:9001/a","secret":null,"expires":18446744073709551615}}]"#
    ))
    .unwrap();
    hub.restore(record, t(0));
    assert!(hub.subscriptions().is_empty());
}

#[test]
fn a_notification_goes_to_every_subscriber_signed_with_its_secret() {
    let mut hub = hub();
    subscribe(&mut hub, "http://127.0.0.1:9001/a", Some("alpha"), t(0));
    subscribe(&mut hub, "http://127.0.0.1:9002/b", None, t(0));
    assert_eq!(notify(&mut hub, "<urlset>1</urlset>", t(1)), StatusCode::OK);
    assert!(matches!(
        events(&mut hub)[..],
        [HubEvent::Published { subscribers: 2, .. }]
    ));
    let mut seen = Vec::new();
    while let Some(transmit) = hub.poll_transmit(t(1)) {
        let r = &transmit.request;
        assert_eq!(r.method(), Method::POST);
        assert_eq!(r.body(), b"<urlset>1</urlset>");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "application/xml");
        let links = Links::parse(r.headers()[header::LINK].to_str().unwrap());
        assert_eq!(links.topic(), Some(uri(TOPIC)));
        assert_eq!(links.hub(), Some(uri(HUB)));
        let signature = r
            .headers()
            .get("x-hub-signature")
            .map(|v| v.to_str().unwrap().parse::<HubSignature>().unwrap());
        seen.push((
            r.uri().to_string(),
            signature.map(|s| s.verify(b"alpha", r.body())),
        ));
        ok(&mut hub, &transmit, t(1));
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            ("http://127.0.0.1:9001/a".into(), Some(true)),
            ("http://127.0.0.1:9002/b".into(), None),
        ]
    );
    // A notification without its topic is refused.
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    assert_eq!(
        hub.handle_request(&Method::POST, &headers, b"<urlset/>", true)
            .status,
        StatusCode::BAD_REQUEST
    );
}

#[test]
fn a_slow_subscriber_delays_no_other_and_its_queue_is_bounded() {
    let mut hub = hub();
    subscribe(&mut hub, "http://127.0.0.1:9001/slow", None, t(0));
    subscribe(&mut hub, "http://127.0.0.1:9002/fast", None, t(0));
    let mut slow_first = None;
    for n in 0..5 {
        notify(&mut hub, &format!("<urlset>{n}</urlset>"), t(1));
        while let Some(transmit) = hub.poll_transmit(t(1)) {
            if transmit.request.uri().path() == "/slow" {
                // Never answered.
                slow_first.get_or_insert(transmit.request.body().clone());
            } else {
                assert_eq!(
                    transmit.request.body(),
                    format!("<urlset>{n}</urlset>").as_bytes()
                );
                ok(&mut hub, &transmit, t(1));
            }
        }
    }
    assert_eq!(slow_first.as_deref(), Some(&b"<urlset>0</urlset>"[..]));
    // The slow one holds one under way and 3 waiting (its bound): the oldest waiting was
    // dropped once.
    let dropped = events(&mut hub)
        .into_iter()
        .filter(|e| {
            matches!(
                e,
                HubEvent::Dropped {
                    why: "its queue was full",
                    ..
                }
            )
        })
        .count();
    assert_eq!(dropped, 1);
    assert_eq!(hub.load(), (2, 4));
}

#[test]
fn failures_are_retried_after_a_doubling_wait_given_up_and_410_ends_a_subscription() {
    let mut hub = hub();
    subscribe(&mut hub, "http://127.0.0.1:9001/a", None, t(0));
    notify(&mut hub, "<urlset>1</urlset>", t(0));
    notify(&mut hub, "<urlset>2</urlset>", t(0));
    events(&mut hub);
    let mut now = t(0);
    let mut waits = Vec::new();
    for _ in 0..3 {
        let transmit = hub.poll_transmit(now).unwrap();
        assert_eq!(transmit.request.body(), b"<urlset>1</urlset>");
        hub.handle_response(
            transmit.id,
            StatusCode::INTERNAL_SERVER_ERROR,
            &HeaderMap::new(),
            b"",
            now,
        );
        let next = hub.poll_timeout().unwrap();
        waits.push(next.duration_since(now).unwrap().as_secs());
        assert!(hub.poll_transmit(next - Duration::from_millis(1)).is_none());
        now = next;
    }
    assert_eq!(waits, [1, 2, 4]);
    // Given up after 3 failures in a row: the next body goes.
    assert!(events(&mut hub).iter().any(|e| matches!(
        e,
        HubEvent::Dropped {
            why: "it failed every attempt",
            ..
        }
    )));
    let transmit = hub.poll_transmit(now).unwrap();
    assert_eq!(transmit.request.body(), b"<urlset>2</urlset>");
    // No answer within the timeout is a failure too.
    now += Duration::from_secs(30);
    assert!(hub.poll_transmit(now).is_none());
    now += Duration::from_secs(1);
    let transmit = hub.poll_transmit(now).unwrap();
    hub.handle_response(transmit.id, StatusCode::GONE, &HeaderMap::new(), b"", now);
    assert!(matches!(events(&mut hub)[..], [HubEvent::Gone { .. }]));
    assert!(hub.subscriptions().is_empty());
}

#[test]
fn an_answer_for_an_ended_subscription_settles_nothing_of_a_new_one() {
    let mut hub = hub();
    let callback = "http://127.0.0.1:9001/a";
    subscribe(&mut hub, callback, None, t(0));
    notify(&mut hub, "<urlset>old</urlset>", t(0));
    let old = hub.poll_transmit(t(0)).unwrap();
    // Unsubscribed and subscribed again while the old delivery is out.
    post(
        &mut hub,
        &[
            ("hub.mode", "unsubscribe"),
            ("hub.topic", TOPIC),
            ("hub.callback", callback),
        ],
        t(1),
    );
    let verify = hub.poll_transmit(t(1)).unwrap();
    echo(&mut hub, &verify, t(1));
    assert!(
        events(&mut hub)
            .iter()
            .any(|e| matches!(e, HubEvent::Unsubscribed { .. }))
    );
    subscribe(&mut hub, callback, None, t(2));
    notify(&mut hub, "<urlset>b</urlset>", t(2));
    notify(&mut hub, "<urlset>c</urlset>", t(2));
    events(&mut hub);
    let b = hub.poll_transmit(t(2)).unwrap();
    assert_eq!(b.request.body(), b"<urlset>b</urlset>");
    // The old answer comes now: it must not take b (or c) off the queue.
    ok(&mut hub, &old, t(2));
    assert!(events(&mut hub).is_empty());
    assert_eq!(hub.load(), (1, 2));
    ok(&mut hub, &b, t(2));
    let c = hub.poll_transmit(t(2)).unwrap();
    assert_eq!(c.request.body(), b"<urlset>c</urlset>");
}

#[test]
fn a_publish_ping_fetches_the_topic_and_distributes_what_it_serves() {
    let mut hub = hub();
    // Nobody follows the topic yet: the ping is taken, and nothing is fetched.
    assert_eq!(
        post(
            &mut hub,
            &[("hub.mode", "publish"), ("hub.url", TOPIC)],
            t(0)
        ),
        StatusCode::ACCEPTED
    );
    assert!(hub.poll_transmit(t(0)).is_none());
    subscribe(&mut hub, "http://127.0.0.1:9001/a", None, t(0));
    assert_eq!(
        post(
            &mut hub,
            &[("hub.mode", "publish"), ("hub.url", TOPIC)],
            t(1)
        ),
        StatusCode::ACCEPTED
    );
    let fetch = hub.poll_transmit(t(1)).unwrap();
    assert_eq!(fetch.request.method(), Method::GET);
    assert_eq!(fetch.request.uri().to_string(), TOPIC);
    // Pinged again while fetching: fetched again after.
    post(
        &mut hub,
        &[("hub.mode", "publish"), ("hub.topic", TOPIC)],
        t(1),
    );
    assert!(hub.poll_transmit(t(1)).is_none());
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml; charset=utf-8"),
    );
    hub.handle_response(
        fetch.id,
        StatusCode::OK,
        &headers,
        b"<urlset>latest</urlset>",
        t(1),
    );
    let mut requests = Vec::new();
    let mut bodies = Vec::new();
    while let Some(transmit) = hub.poll_transmit(t(1)) {
        let r = &transmit.request;
        requests.push((r.method().clone(), r.uri().to_string()));
        if r.method() == Method::POST {
            bodies.push(String::from_utf8(r.body().clone()).unwrap());
            assert_eq!(
                r.headers()[header::CONTENT_TYPE],
                "application/xml; charset=utf-8"
            );
        }
        hub.handle_response(
            transmit.id,
            StatusCode::OK,
            &headers,
            b"<urlset>later</urlset>",
            t(1),
        );
    }
    // The second fetch goes first (fetches before distributions); each fetched body is
    // distributed.
    assert_eq!(
        requests,
        [
            (Method::GET, TOPIC.into()),
            (Method::POST, "http://127.0.0.1:9001/a".into()),
            (Method::POST, "http://127.0.0.1:9001/a".into()),
        ]
    );
    assert_eq!(
        bodies,
        ["<urlset>latest</urlset>", "<urlset>later</urlset>"]
    );
}

#[test]
fn subscriptions_come_back_after_a_restart_but_not_an_expired_one() {
    let mut hub = hub();
    subscribe(&mut hub, "http://127.0.0.1:9001/a", Some("alpha"), t(0));
    post(
        &mut hub,
        &[
            ("hub.mode", "subscribe"),
            ("hub.topic", TOPIC),
            ("hub.callback", "http://127.0.0.1:9002/b"),
            ("hub.lease_seconds", "300"),
        ],
        t(0),
    );
    let verify = hub.poll_transmit(t(0)).unwrap();
    echo(&mut hub, &verify, t(0));
    let saved = serde_json::to_string(&hub.subscriptions()).unwrap();

    let mut restarted = self::hub();
    restarted.restore(serde_json::from_str(&saved).unwrap(), t(600));
    let kept = restarted.subscriptions();
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].callback, uri("http://127.0.0.1:9001/a"));
    notify(&mut restarted, "<urlset/>", t(600));
    let transmit = restarted.poll_transmit(t(600)).unwrap();
    assert!(transmit.request.headers().contains_key("x-hub-signature"));
}

#[test]
fn an_unsubscription_takes_effect_once_verified() {
    let mut hub = hub();
    subscribe(&mut hub, "http://127.0.0.1:9001/a", None, t(0));
    let status = post(
        &mut hub,
        &[
            ("hub.mode", "unsubscribe"),
            ("hub.topic", TOPIC),
            ("hub.callback", "http://127.0.0.1:9001/a"),
        ],
        t(1),
    );
    assert_eq!(status, StatusCode::ACCEPTED);
    let verify = hub.poll_transmit(t(1)).unwrap();
    assert_eq!(param(&verify, "hub.mode").as_deref(), Some("unsubscribe"));
    assert_eq!(param(&verify, "hub.lease_seconds"), None);
    assert_eq!(hub.subscriptions().len(), 1, "not before it is verified");
    echo(&mut hub, &verify, t(1));
    assert!(matches!(
        events(&mut hub)[..],
        [HubEvent::Unsubscribed { .. }]
    ));
    assert!(hub.subscriptions().is_empty());
}

#[test]
fn leases_constructor_keeps_default_within_bounds() {
    let leases = Leases::new(
        Duration::from_secs(10),
        Duration::from_secs(60),
        Duration::from_secs(30),
    );
    assert_eq!(leases.min, Duration::from_secs(60));
    assert_eq!(leases.max, Duration::from_secs(60));
    assert_eq!(leases.default, Duration::from_secs(60));
}

#[test]
fn one_host_cannot_take_the_hub_nor_a_flood_of_requests_its_memory() {
    // Hosts 127.0.0.1 and localhost both allowed; at most 2 per host, 3 waiting.
    let mut hub = Hub::new(
        HubOptions::new(uri(HUB), vec!["http://127.0.0.1:8000/".into()])
            .with_callbacks(CallbackPolicy::Hosts(vec![
                "127.0.0.1".into(),
                "localhost".into(),
            ]))
            .with_limits(100, 2, 3),
    );
    subscribe(&mut hub, "http://127.0.0.1:9000/a", None, t(0));
    // A renewal of what the host holds is no new subscription, nor counted twice while
    // it waits: room for one more.
    assert_eq!(
        subscribe_request(&mut hub, "http://127.0.0.1:9000/a", None, t(1)),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        subscribe_request(&mut hub, "http://127.0.0.1:9000/b", None, t(1)),
        StatusCode::ACCEPTED
    );
    // One active and one waiting on the host: a third is refused, another host's not.
    assert_eq!(
        subscribe_request(&mut hub, "http://127.0.0.1:9001/c", None, t(1)),
        StatusCode::TOO_MANY_REQUESTS
    );
    assert_eq!(
        subscribe_request(&mut hub, "http://localhost:9000/d", None, t(1)),
        StatusCode::ACCEPTED
    );
    // Three requests wait for their verification now: a fourth waits for room.
    assert_eq!(
        subscribe_request(&mut hub, "http://localhost:9000/e", None, t(1)),
        StatusCode::SERVICE_UNAVAILABLE
    );
    // An unsubscription of what the hub never held: nothing to verify, nothing queued.
    let unsubscribe = |callback| {
        [
            ("hub.mode", "unsubscribe"),
            ("hub.topic", TOPIC),
            ("hub.callback", callback),
        ]
    };
    assert_eq!(
        post(&mut hub, &unsubscribe("http://localhost:9000/f"), t(1)),
        StatusCode::ACCEPTED
    );
    let waiting: Vec<Transmit> = std::iter::from_fn(|| hub.poll_transmit(t(2))).collect();
    assert_eq!(waiting.len(), 3, "a's renewal, b and d; nothing for f");
    for verify in &waiting {
        echo(&mut hub, verify, t(2));
    }
    assert_eq!(hub.subscriptions().len(), 3);
    // The verifications done, there is room for waiting requests again; the host's
    // quota counts what it holds, a and b.
    assert_eq!(
        subscribe_request(&mut hub, "http://localhost:9000/e", None, t(3)),
        StatusCode::ACCEPTED
    );
    assert_eq!(
        subscribe_request(&mut hub, "http://127.0.0.1:9001/c", None, t(3)),
        StatusCode::TOO_MANY_REQUESTS
    );
    // a unsubscribed: its place on the host is free.
    assert_eq!(
        post(&mut hub, &unsubscribe("http://127.0.0.1:9000/a"), t(4)),
        StatusCode::ACCEPTED
    );
    for verify in std::iter::from_fn(|| hub.poll_transmit(t(4))).collect::<Vec<_>>() {
        echo(&mut hub, &verify, t(4));
    }
    assert_eq!(hub.subscriptions().len(), 3, "b, d and e");
    assert_eq!(
        subscribe_request(&mut hub, "http://127.0.0.1:9001/c", None, t(5)),
        StatusCode::ACCEPTED
    );
}
