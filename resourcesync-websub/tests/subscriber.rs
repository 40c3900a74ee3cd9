//! The subscriber's state machine against the hub's, in process, with a virtual clock:
//! subscribed through the verification, renewed before the lease ends, notifications
//! taken only when signed and for the topic, verifications it did not ask for refused,
//! unsubscribed.

use std::time::{Duration, SystemTime};

use http::{HeaderMap, HeaderValue, StatusCode, header};
use resourcesync_websub::{
    Accepted, CallbackPolicy, Hub, HubOptions, HubSignature, Leases, SignatureMethod, Subscriber,
    SubscriberEvent, Transmit, Verification,
};

mod common;

use common::{HUB, TOPIC, t, uri};
const CALLBACK: &str = "http://127.0.0.1:9000/cb/3f1c";

fn hub() -> Hub {
    Hub::new(
        HubOptions::new(uri(HUB), vec!["http://127.0.0.1:8000/".into()])
            .with_callbacks(CallbackPolicy::Hosts(vec!["127.0.0.1".into()]))
            .with_leases(Leases::new(
                Duration::from_secs(600),
                Duration::from_secs(300),
                Duration::from_secs(3600),
            )),
    )
}

fn subscriber() -> Subscriber {
    Subscriber::new(
        uri(HUB),
        uri(TOPIC),
        uri(CALLBACK),
        "0123456789abcdef".into(),
        Duration::from_secs(3600),
    )
}

/// Sends what the subscriber hands out to the hub, and the hub's verification back.
fn exchange(hub: &mut Hub, s: &mut Subscriber, now: SystemTime) -> Option<Verification> {
    let request = s.poll_transmit(now)?;
    let (parts, body) = request.request.into_parts();
    assert_eq!(parts.uri, HUB);
    let answer = hub.handle_request(&parts.method, &parts.headers, &body, false);
    s.handle_response(request.id, answer.status, now);
    let verify: Transmit = hub.poll_transmit(now)?;
    let query = verify.request.uri().query().unwrap_or("").to_owned();
    let verification = s.verify(&query, now);
    let (status, body) = match &verification {
        Verification::Confirm(echo) => (StatusCode::OK, echo.clone()),
        Verification::Refuse => (StatusCode::NOT_FOUND, String::new()),
        _ => unreachable!(),
    };
    hub.handle_response(verify.id, status, &HeaderMap::new(), body.as_bytes(), now);
    Some(verification)
}

fn events(s: &mut Subscriber) -> Vec<SubscriberEvent> {
    std::iter::from_fn(|| s.poll_event()).collect()
}

#[test]
fn subscribed_renewed_and_unsubscribed_through_a_hub() {
    let (mut hub, mut s) = (hub(), subscriber());
    assert!(!s.is_active(t(0)));
    assert!(matches!(
        exchange(&mut hub, &mut s, t(0)),
        Some(Verification::Confirm(_))
    ));
    // The hub's bound, not the lease asked for.
    assert_eq!(
        events(&mut s),
        [SubscriberEvent::Subscribed {
            lease: Duration::from_secs(3600)
        }]
    );
    assert!(s.is_active(t(0)));
    assert_eq!(hub.subscriptions().len(), 1);
    // Nothing to send until a tenth of the lease is left.
    assert!(s.poll_transmit(t(100)).is_none());
    assert_eq!(s.poll_timeout(), Some(t(3240)));
    assert!(matches!(
        exchange(&mut hub, &mut s, t(3240)),
        Some(Verification::Confirm(_))
    ));
    assert!(matches!(
        events(&mut s)[..],
        [SubscriberEvent::Subscribed { .. }]
    ));
    assert!(s.is_active(t(3700)), "renewed before it ended");

    s.unsubscribe();
    assert!(matches!(
        exchange(&mut hub, &mut s, t(3800)),
        Some(Verification::Confirm(_))
    ));
    assert_eq!(events(&mut s), [SubscriberEvent::Unsubscribed]);
    assert!(s.is_done());
    assert!(hub.subscriptions().is_empty());
}

#[test]
fn only_signed_notifications_of_the_topic_are_taken() {
    let (mut hub, mut s) = (hub(), subscriber());
    exchange(&mut hub, &mut s, t(0));
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/xml"),
    );
    headers.insert(
        header::LINK,
        HeaderValue::from_str(&resourcesync_websub::links(&uri(TOPIC), &uri(HUB))).unwrap(),
    );
    assert_eq!(
        hub.handle_request(&http::Method::POST, &headers, b"<urlset/>", true)
            .status,
        StatusCode::OK
    );
    let delivery = hub.poll_transmit(t(1)).unwrap();
    let (parts, body) = delivery.request.into_parts();
    assert_eq!(
        s.accept(&parts.headers, &body, t(1)),
        Accepted::Notification
    );
    // The same body changed, or signed with another secret, or unsigned, or for another
    // topic: ignored.
    assert_eq!(
        s.accept(&parts.headers, b"<urlset>forged</urlset>", t(1)),
        Accepted::Ignored("a signature that does not match")
    );
    let mut forged = parts.headers.clone();
    let guess = HubSignature::sign(SignatureMethod::Sha256, b"guess", &body);
    forged.insert(
        "x-hub-signature",
        HeaderValue::from_str(&guess.to_string()).unwrap(),
    );
    assert_eq!(
        s.accept(&forged, &body, t(1)),
        Accepted::Ignored("a signature that does not match")
    );
    let mut unsigned = parts.headers.clone();
    unsigned.remove("x-hub-signature");
    assert_eq!(
        s.accept(&unsigned, &body, t(1)),
        Accepted::Ignored("unsigned")
    );
    let mut elsewhere = parts.headers.clone();
    elsewhere.insert(
        header::LINK,
        HeaderValue::from_static("<http://127.0.0.1:8000/other>; rel=\"self\""),
    );
    assert_eq!(
        s.accept(&elsewhere, &body, t(1)),
        Accepted::Ignored("another topic")
    );
    // After the lease, nothing is taken.
    assert_eq!(
        s.accept(&parts.headers, &body, t(4000)),
        Accepted::Ignored("no active subscription")
    );
}

#[test]
fn a_verification_nobody_asked_for_is_refused() {
    let mut s = subscriber();
    let query = |mode: &str, topic: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("hub.mode", mode)
            .append_pair("hub.topic", topic)
            .append_pair("hub.challenge", "c0cc4630")
            .append_pair("hub.lease_seconds", "600")
            .finish()
    };
    // Before any request: not ours.
    assert_eq!(
        s.verify(&query("subscribe", TOPIC), t(0)),
        Verification::Refuse
    );
    let request = s.poll_transmit(t(0)).unwrap();
    s.handle_response(request.id, StatusCode::ACCEPTED, t(0));
    // Another topic, an unsubscription we did not ask for: refused.
    assert_eq!(
        s.verify(&query("subscribe", "http://127.0.0.1:8000/other"), t(0)),
        Verification::Refuse
    );
    assert_eq!(
        s.verify(&query("unsubscribe", TOPIC), t(0)),
        Verification::Refuse
    );
    // A lease of nothing is none (it would be renewed at once, over and over).
    let no_lease = query("subscribe", TOPIC).replace("lease_seconds=600", "lease_seconds=0");
    assert_eq!(s.verify(&no_lease, t(0)), Verification::Refuse);
    assert_eq!(
        s.verify(&query("subscribe", TOPIC), t(0)),
        Verification::Confirm("c0cc4630".into())
    );
    // Confirmed once: the same verification again is not ours any more.
    assert_eq!(
        s.verify(&query("subscribe", TOPIC), t(1)),
        Verification::Refuse
    );
}

#[test]
fn a_request_the_hub_took_and_never_verified_is_sent_again() {
    let mut s = subscriber();
    let request = s.poll_transmit(t(0)).unwrap();
    s.handle_response(request.id, StatusCode::ACCEPTED, t(0));
    // The hub restarts and forgets it: no verification comes.
    assert!(s.poll_transmit(t(30)).is_none());
    let deadline = s.poll_timeout().unwrap();
    assert_eq!(deadline, t(60));
    assert!(
        s.poll_transmit(deadline).is_none(),
        "a wait after the failure"
    );
    assert!(matches!(
        events(&mut s)[..],
        [SubscriberEvent::Failed { status: None, .. }]
    ));
    assert!(s.poll_transmit(s.poll_timeout().unwrap()).is_some());
}

#[test]
fn a_lease_longer_than_asked_is_taken_as_asked_and_never_overflows() {
    let mut s = subscriber();
    let request = s.poll_transmit(t(0)).unwrap();
    s.handle_response(request.id, StatusCode::ACCEPTED, t(0));
    let query = format!(
        "hub.mode=subscribe&hub.topic={}&hub.challenge=c&hub.lease_seconds=18446744073709551615",
        url::form_urlencoded::byte_serialize(TOPIC.as_bytes()).collect::<String>()
    );
    assert_eq!(s.verify(&query, t(0)), Verification::Confirm("c".into()));
    assert_eq!(
        events(&mut s),
        [SubscriberEvent::Subscribed {
            lease: Duration::from_secs(3600)
        }]
    );
    assert!(!s.is_active(t(3600)), "the lease asked for, not a century");
    assert!(s.poll_timeout().is_some(), "a renewal is due");
}

#[test]
fn a_refused_request_is_sent_again_after_a_wait_and_a_denial_ends_it() {
    let mut s = subscriber();
    let request = s.poll_transmit(t(0)).unwrap();
    s.handle_response(request.id, StatusCode::INTERNAL_SERVER_ERROR, t(0));
    assert!(matches!(
        events(&mut s)[..],
        [SubscriberEvent::Failed {
            status: Some(StatusCode::INTERNAL_SERVER_ERROR),
            ..
        }]
    ));
    assert!(s.poll_transmit(t(0)).is_none());
    let again = s.poll_transmit(s.poll_timeout().unwrap()).unwrap();
    s.handle_response(again.id, StatusCode::ACCEPTED, t(1));
    let denied = "hub.mode=denied&hub.topic=http%3A%2F%2F127.0.0.1%3A8000%2Fresourcesync%2Fchange-notification.xml&hub.reason=full";
    assert!(matches!(s.verify(denied, t(1)), Verification::Confirm(_)));
    assert_eq!(
        events(&mut s),
        [SubscriberEvent::Denied {
            reason: Some("full".into())
        }]
    );
    assert!(s.is_done());
    assert!(s.poll_transmit(t(100)).is_none());
}

#[test]
fn a_verification_that_comes_before_the_hub_s_answer_leaves_nothing_awaited() {
    let (mut hub, mut s) = (hub(), subscriber());
    for (at, renewal) in [(0, false), (3240, true)] {
        let request = s.poll_transmit(t(at)).unwrap();
        let (parts, body) = request.request.into_parts();
        let answer = hub.handle_request(&parts.method, &parts.headers, &body, false);
        // The verification first, then the 202.
        let verify = hub.poll_transmit(t(at)).unwrap();
        let query = verify.request.uri().query().unwrap_or("").to_owned();
        let Verification::Confirm(echo) = s.verify(&query, t(at)) else {
            panic!("refused")
        };
        hub.handle_response(
            verify.id,
            StatusCode::OK,
            &HeaderMap::new(),
            echo.as_bytes(),
            t(at),
        );
        s.handle_response(request.id, answer.status, t(at));
        assert!(matches!(
            events(&mut s)[..],
            [SubscriberEvent::Subscribed { .. }]
        ));
        // Next: the renewal with a tenth of the lease left, not a wait for a verification
        // that came already (which would let the lease run out, and fail).
        assert_eq!(s.poll_timeout(), Some(t(at + 3240)), "renewal {renewal}");
        assert!(s.poll_transmit(t(at + 60)).is_none());
        assert!(events(&mut s).is_empty());
    }
    assert!(s.is_active(t(6000)));
}
