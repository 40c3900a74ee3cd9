//! Change Notification from the Publisher: the channel in the Capability List, each run's
//! changes as notifications whose intervals tile time, the outbox that keeps them until
//! the hub took them (across restarts, never before the run is committed), and their
//! delivery, sans IO, in order and retried.

use std::time::{Duration, Instant, SystemTime};

use http::{StatusCode, header};
use resourcesync_model::{
    Capability, Change, Channel, Document, DocumentKind, Entry, Severity, Uri, W3cDateTime,
};
use resourcesync_source::notify::{Delivery, DeliveryEvent, HubProtocol, Retry};
use resourcesync_source::{
    GenerationStore, MemoryStore, Notification, PublishOptions, Publisher, ResourceEvent, Store,
};

use crate::Counting;
use resourcesync_xml::read_document;

const BASE: &str = "http://example.com/";
const HUB: &str = "http://hub.example.org/websub/";
const TOPIC: &str = "http://example.com/resourcesync/change-notification.xml";

fn t(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
}

fn at(seconds: u64) -> W3cDateTime {
    W3cDateTime::from(t(seconds))
}

fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}

fn record(n: u32) -> Entry {
    Entry::new(uri(&format!("{BASE}items/{n}"))).with_length(u64::from(n))
}

fn options() -> PublishOptions {
    PublishOptions::new(uri(BASE)).with_hub(uri(HUB))
}

/// A document read back, with no error finding.
fn document(bytes: &[u8]) -> Document {
    let (document, findings) = read_document(bytes).unwrap();
    let errors: Vec<_> = findings
        .iter()
        .filter(|f| f.severity() == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    document
}

/// Each change of a notification: its URI's last segment, the change, its datetime.
fn changes(document: &Document) -> Vec<(String, Change, W3cDateTime)> {
    document
        .entries
        .iter()
        .map(|e| {
            let md = e.md.as_ref().unwrap();
            let name = e.loc.as_str().rsplit('/').next().unwrap().to_owned();
            (name, md.change.unwrap(), md.datetime.unwrap())
        })
        .collect()
}

#[test]
fn the_capability_list_advertises_the_channel_and_each_run_notifies_its_changes() {
    let mut source = Publisher::new(MemoryStore::new(), options());
    let first = source
        .publish_snapshot([record(1), record(2)], t(0))
        .unwrap();
    // The first run's resources are in the Resource List: nothing to notify.
    assert!(first.notifications.is_empty());
    assert!(source.outbox().unwrap().is_empty());
    let store = source.store();
    let caps = document(store.get("resourcesync/capabilitylist.xml").unwrap());
    let channels: Vec<Channel> = caps.entries.iter().filter_map(Channel::of_entry).collect();
    assert_eq!(
        channels,
        [Channel::change_notification(uri(TOPIC), uri(HUB))]
    );
    // The topic answers before the first notification, with no content.
    assert_eq!(
        store.get("resourcesync/change-notification.xml"),
        Some(&b""[..])
    );

    let events = [
        ResourceEvent::updated(record(1), at(30)),
        ResourceEvent::created(record(3), at(20)),
    ];
    let second = source.publish_changes(events, t(60)).unwrap();
    assert_eq!(second.notifications, [1]);
    let outbox = source.outbox().unwrap();
    assert_eq!(outbox.len(), 1);
    assert_eq!(outbox[0].sequence, 1);
    assert_eq!(outbox[0].channel, channels[0]);
    let notification = document(&outbox[0].body);
    assert_eq!(notification.head.kind(), DocumentKind::ChangeNotification);
    assert_eq!(notification.head.md.from, Some(at(0)));
    assert_eq!(notification.head.md.until, Some(at(60)));
    // The same changes, in the same order, as the Change List lists.
    assert_eq!(
        changes(&notification),
        [
            ("3".into(), Change::Created, at(20)),
            ("1".into(), Change::Updated, at(30)),
        ]
    );
    let list = document(
        source
            .store()
            .get("resourcesync/changelist-00001.xml")
            .unwrap(),
    );
    assert_eq!(changes(&list), changes(&notification));
    // The topic serves the latest.
    assert_eq!(
        source.store().get("resourcesync/change-notification.xml"),
        Some(&outbox[0].body[..])
    );

    // A run without changes notifies nothing; the next one's interval covers it.
    let quiet = source.publish_changes([], t(120)).unwrap();
    assert!(quiet.notifications.is_empty());
    let third = source
        .publish_changes(
            [ResourceEvent::deleted(
                uri(&format!("{BASE}items/2")),
                at(150),
            )],
            t(180),
        )
        .unwrap();
    assert_eq!(third.notifications, [2]);
    let outbox = source.outbox().unwrap();
    assert_eq!(
        outbox.iter().map(|n| n.sequence).collect::<Vec<_>>(),
        [1, 2]
    );
    let next = document(&outbox[1].body);
    assert_eq!(
        next.head.md.from,
        Some(at(60)),
        "tiles with the last one's until"
    );
    assert_eq!(next.head.md.until, Some(at(180)));
    assert_eq!(changes(&next), [("2".into(), Change::Deleted, at(150))]);
}

#[test]
fn without_a_hub_there_is_no_channel_and_no_notification() {
    let mut source = Publisher::new(MemoryStore::new(), PublishOptions::new(uri(BASE)));
    source.publish_snapshot([record(1)], t(0)).unwrap();
    let report = source
        .publish_changes([ResourceEvent::created(record(2), at(10))], t(10))
        .unwrap();
    assert!(report.notifications.is_empty());
    assert!(source.outbox().unwrap().is_empty());
    let caps = document(
        source
            .store()
            .get("resourcesync/capabilitylist.xml")
            .unwrap(),
    );
    assert!(caps.entries.iter().all(|e| Channel::of_entry(e).is_none()));
    assert!(
        source.store().names().all(|n| !n.contains("notification")),
        "{:?}",
        source.store().names().collect::<Vec<_>>()
    );
}

#[test]
fn runs_without_the_hub_leave_a_gap_a_follower_sees() {
    let mut source = Publisher::new(MemoryStore::new(), options());
    source.publish_snapshot([record(1)], t(0)).unwrap();
    source
        .publish_changes([ResourceEvent::created(record(2), at(5))], t(10))
        .unwrap();
    // The hub is off for a run: its change goes into no notification.
    let mut off = Publisher::new(source.into_store(), PublishOptions::new(uri(BASE)));
    off.publish_changes([ResourceEvent::created(record(3), at(15))], t(20))
        .unwrap();
    let mut source = Publisher::new(off.into_store(), options());
    source
        .publish_changes([ResourceEvent::created(record(4), at(25))], t(30))
        .unwrap();
    let outbox = source.outbox().unwrap();
    let documents: Vec<Document> = outbox.iter().map(|n| document(&n.body)).collect();
    assert_eq!(documents.len(), 2);
    assert_eq!(documents[0].head.md.until, Some(at(10)));
    // Not from 10, which would claim that nothing changed from 10 to 20: from 20, so that
    // the interval 10-20 is visibly missing.
    assert_eq!(documents[1].head.md.from, Some(at(20)));
}

#[test]
fn a_burst_is_split_into_notifications_that_tile_the_run() {
    let mut source = Publisher::new(MemoryStore::new(), options());
    source.publish_snapshot([], t(0)).unwrap();
    let events: Vec<ResourceEvent> = (0..2500)
        .map(|n| ResourceEvent::created(record(n), at(1 + u64::from(n) / 10)))
        .collect();
    let report = source.publish_changes(events, t(1000)).unwrap();
    assert_eq!(report.notifications, [1, 2, 3]);
    let outbox = source.outbox().unwrap();
    let documents: Vec<Document> = outbox.iter().map(|n| document(&n.body)).collect();
    assert_eq!(
        documents
            .iter()
            .map(|d| d.entries.len())
            .collect::<Vec<_>>(),
        [1000, 1000, 500]
    );
    // Consecutive, non-overlapping, from the last run to this one.
    assert_eq!(documents[0].head.md.from, Some(at(0)));
    for pair in documents.windows(2) {
        assert_eq!(pair[1].head.md.from, pair[0].head.md.until);
    }
    assert_eq!(documents[2].head.md.until, Some(at(1000)));
    let all: Vec<String> = documents
        .iter()
        .flat_map(|d| changes(d).into_iter().map(|c| c.0))
        .collect();
    assert_eq!(all, (0..2500).map(|n| n.to_string()).collect::<Vec<_>>());
    // The topic serves the last of them.
    assert_eq!(
        source.store().get("resourcesync/change-notification.xml"),
        Some(&outbox[2].body[..])
    );
}

#[test]
fn the_outbox_keeps_what_the_hub_has_not_taken_across_restarts_and_never_goes_back() {
    let dir = tempfile::tempdir().unwrap();
    let publish = dir.path().join("pub");
    let open = || Publisher::new(GenerationStore::open(&publish).unwrap(), options());
    let mut source = open();
    source.publish_snapshot([record(1)], t(0)).unwrap();
    source
        .publish_changes([ResourceEvent::created(record(2), at(5))], t(10))
        .unwrap();
    source
        .publish_changes([ResourceEvent::created(record(3), at(15))], t(20))
        .unwrap();
    drop(source);

    // A restart: the outbox is as the runs left it.
    let mut source = open();
    assert_eq!(waiting(&source), [1, 2]);
    source.delivered(1).unwrap();
    drop(source);
    let mut source = open();
    assert_eq!(waiting(&source), [2]);
    // A mark never goes back.
    source.delivered(0).unwrap();
    assert_eq!(source.outbox().unwrap().len(), 1);
    // The next run drops what the hub took from the publication.
    assert!(
        source
            .store()
            .exists("resourcesync/notifications/0000000001.xml")
            .unwrap()
    );
    source
        .publish_changes([ResourceEvent::created(record(4), at(25))], t(30))
        .unwrap();
    assert!(
        !source
            .store()
            .exists("resourcesync/notifications/0000000001.xml")
            .unwrap()
    );
    assert_eq!(waiting(&source), [2, 3]);
    // The mark is beside the publication, not in it: never served.
    let served = publish.canonicalize().unwrap();
    let mut names = Vec::new();
    for entry in walk(&served) {
        names.push(entry);
    }
    assert!(names.iter().all(|n| !n.contains("delivered")), "{names:?}");
}

/// The sequence numbers in the outbox.
fn waiting<S: Store>(source: &Publisher<S>) -> Vec<u64> {
    source
        .outbox()
        .unwrap()
        .iter()
        .map(|n| n.sequence)
        .collect()
}

/// Every file under `dir`, as paths relative to it.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out
}

#[test]
fn a_run_that_fails_or_is_dropped_adds_nothing_to_the_outbox() {
    let mut source = Publisher::new(Counting::default(), options());
    source.publish_snapshot([record(1)], t(0)).unwrap();
    let mut run = source.begin().unwrap();
    run.write("items/2", &[b"two"]).unwrap();
    drop(run);
    assert!(source.outbox().unwrap().is_empty());
    // The run writes its notification, and its commit fails: none is in the outbox, as
    // none of its Change Lists is published.
    let mut failing = Publisher::new(
        Counting {
            inner: source.into_store().inner,
            fail_commit: true,
            ..Counting::default()
        },
        options(),
    );
    let failed = failing.publish_changes([ResourceEvent::created(record(2), at(5))], t(10));
    assert!(failed.is_err());
    assert!(failing.outbox().unwrap().is_empty());
    let store = &failing.store().inner;
    assert_eq!(
        store.get("resourcesync/change-notification.xml"),
        Some(&b""[..])
    );
    assert!(
        store
            .get("resourcesync/notifications/0000000001.xml")
            .is_none()
    );
    // The next run that commits notifies the change as the first of the sequence.
    let mut source = Publisher::new(
        Counting {
            inner: failing.into_store().inner,
            ..Counting::default()
        },
        options(),
    );
    let report = source
        .publish_changes([ResourceEvent::created(record(2), at(5))], t(10))
        .unwrap();
    assert_eq!(report.notifications, [1]);
}

fn notification(sequence: u64) -> Notification {
    Notification::new(
        sequence,
        Channel::change_notification(uri(TOPIC), uri(HUB)),
        format!("<urlset>{sequence}</urlset>").into_bytes(),
    )
}

fn events(delivery: &mut Delivery) -> Vec<DeliveryEvent> {
    std::iter::from_fn(|| delivery.poll_event()).collect()
}

#[test]
fn a_notification_is_posted_to_the_hub_with_its_topic_and_hub_links() {
    let mut delivery = Delivery::new(HubProtocol::ResourceSync);
    delivery.push(notification(7));
    let request = delivery.poll_request(Instant::now()).unwrap();
    assert_eq!(request.http.method(), http::Method::POST);
    assert_eq!(request.http.uri(), HUB);
    assert_eq!(
        request.http.headers()[header::CONTENT_TYPE],
        "application/xml"
    );
    assert_eq!(
        request.http.headers()[header::LINK],
        format!("<{TOPIC}>; rel=\"self\", <{HUB}>; rel=\"hub\"").as_str()
    );
    assert_eq!(request.http.body(), b"<urlset>7</urlset>");
    assert_eq!(request.sequences, (7, 7));
}

#[test]
fn notifications_go_one_at_a_time_in_order_and_a_failure_is_retried_after_a_doubling_wait() {
    let retry = Retry::new(
        Duration::from_secs(1),
        Duration::from_secs(5),
        Duration::from_secs(30),
    );
    let mut delivery = Delivery::with_retry(HubProtocol::ResourceSync, retry);
    for s in [1, 2, 3] {
        delivery.push(notification(s));
    }
    // Pushing the outbox again (a restart, a second call) sends nothing twice.
    delivery.push(notification(2));
    let t0 = Instant::now();
    let first = delivery.poll_request(t0).unwrap();
    assert_eq!(first.sequences, (1, 1));
    assert!(delivery.poll_request(t0).is_none(), "one request at a time");
    delivery.handle_response(first.id, StatusCode::OK, t0);
    assert_eq!(
        events(&mut delivery),
        [DeliveryEvent::Delivered { sequence: 1 }]
    );

    // The hub fails 2 four times: waits of 1, 2, 4, then 5 (the most) seconds.
    let mut now = t0;
    let mut waits = Vec::new();
    for (i, status) in [500, 503, 404, 302].into_iter().enumerate() {
        let request = delivery.poll_request(now).unwrap();
        assert_eq!(request.sequences, (2, 2));
        delivery.handle_response(request.id, StatusCode::from_u16(status).unwrap(), now);
        match &events(&mut delivery)[..] {
            [
                DeliveryEvent::Failed {
                    attempts,
                    retry_at,
                    status: Some(s),
                    ..
                },
            ] => {
                assert_eq!(*attempts as usize, i + 1);
                assert_eq!(s.as_u16(), status);
                waits.push(retry_at.duration_since(now).as_secs());
                // Nothing before the wait is over.
                assert!(
                    delivery
                        .poll_request(*retry_at - Duration::from_millis(1))
                        .is_none()
                );
                now = *retry_at;
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(waits, [1, 2, 4, 5]);
    // No answer at all: the request times out and is retried; its late answer is ignored.
    let request = delivery.poll_request(now).unwrap();
    assert_eq!(delivery.poll_timeout(), Some(now + Duration::from_secs(30)));
    now += Duration::from_secs(30);
    assert!(
        delivery.poll_request(now).is_none(),
        "the backoff after the timeout"
    );
    assert!(matches!(
        &events(&mut delivery)[..],
        [DeliveryEvent::Failed {
            status: None,
            attempts: 5,
            ..
        }]
    ));
    delivery.handle_response(request.id, StatusCode::OK, now);
    assert!(
        events(&mut delivery).is_empty(),
        "a late answer delivers nothing"
    );
    now += Duration::from_secs(5);
    let request = delivery.poll_request(now).unwrap();
    delivery.handle_error(request.id, now);
    now += Duration::from_secs(5);
    let request = delivery.poll_request(now).unwrap();
    assert_eq!(request.sequences, (2, 2));
    delivery.handle_response(request.id, StatusCode::ACCEPTED, now);
    let request = delivery.poll_request(now).unwrap();
    assert_eq!(
        request.sequences,
        (3, 3),
        "the wait is over once one is taken"
    );
    delivery.handle_response(request.id, StatusCode::OK, now);
    let delivered: Vec<_> = events(&mut delivery)
        .into_iter()
        .filter(|e| matches!(e, DeliveryEvent::Delivered { .. }))
        .collect();
    assert_eq!(
        delivered,
        [
            DeliveryEvent::Delivered { sequence: 2 },
            DeliveryEvent::Delivered { sequence: 3 }
        ]
    );
    assert!(delivery.is_idle());
    assert_eq!(delivery.poll_timeout(), None);
}

#[test]
fn a_publish_ping_stands_for_every_notification_waiting() {
    let mut delivery = Delivery::new(HubProtocol::Publish);
    for s in [4, 5, 6] {
        delivery.push(notification(s));
    }
    let request = delivery.poll_request(Instant::now()).unwrap();
    assert_eq!(request.sequences, (4, 6));
    assert_eq!(
        request.http.headers()[header::CONTENT_TYPE],
        "application/x-www-form-urlencoded"
    );
    let form: Vec<(String, String)> = url::form_urlencoded::parse(request.http.body())
        .into_owned()
        .collect();
    assert_eq!(
        form,
        [
            ("hub.mode".into(), "publish".into()),
            ("hub.topic".into(), TOPIC.into()),
            ("hub.url".into(), TOPIC.into()),
        ]
    );
    delivery.handle_response(request.id, StatusCode::NO_CONTENT, Instant::now());
    assert_eq!(
        events(&mut delivery),
        [DeliveryEvent::Delivered { sequence: 6 }]
    );
    assert!(delivery.is_idle());
}

#[test]
fn the_capability_list_s_channel_names_the_topic_the_notifications_go_to() {
    let mut source = Publisher::new(MemoryStore::new(), options());
    source.publish_snapshot([record(1)], t(0)).unwrap();
    source
        .publish_changes([ResourceEvent::created(record(2), at(1))], t(2))
        .unwrap();
    let caps = document(
        source
            .store()
            .get("resourcesync/capabilitylist.xml")
            .unwrap(),
    );
    let channel = caps.entries.iter().find_map(Channel::of_entry).unwrap();
    assert_eq!(channel.capability, Capability::ChangeNotification);
    assert_eq!(source.outbox().unwrap()[0].channel, channel);
}

/// A link planted where the Publisher writes its topic (a generation store carries links
/// over into the next generation as they are) is not the topic: the store's `exists`
/// answers as its `read` finds it, with an error naming the link, and the run is refused
/// with the link left as it is. The code before followed the link: to a file elsewhere,
/// the topic was taken as written and the link published as the topic; to nothing, it
/// was replaced without a word.
#[cfg(unix)]
#[test]
fn a_link_planted_at_the_topic_is_refused_not_taken_for_it() {
    let root = tempfile::tempdir().unwrap();
    let publish = root.path().join("publish");
    let mut source = Publisher::new(GenerationStore::open(&publish).unwrap(), options());
    source.publish_snapshot([record(1)], t(0)).unwrap();
    let name = "resourcesync/change-notification.xml";
    let topic = publish.join(name);
    assert!(std::fs::symlink_metadata(&topic).unwrap().is_file());
    let elsewhere = root.path().join("elsewhere.xml");
    std::fs::write(&elsewhere, b"<not-the-topic/>").unwrap();
    let mut store = source.into_store();
    for (n, target) in [elsewhere, root.path().join("nothing-there")]
        .into_iter()
        .enumerate()
    {
        std::fs::remove_file(&topic).unwrap();
        std::os::unix::fs::symlink(&target, &topic).unwrap();
        let named = |error: String| {
            assert!(
                error.contains(name) && error.contains("symbolic link"),
                "{error}"
            );
        };
        named(store.exists(name).unwrap_err().to_string());
        named(store.read(name).unwrap_err().to_string());
        let mut source = Publisher::new(store, options());
        let event = ResourceEvent::created(record(10 + n as u32), at(5));
        named(
            source
                .publish_changes([event], t(10))
                .unwrap_err()
                .to_string(),
        );
        store = source.into_store();
        assert_eq!(std::fs::read_link(&topic).unwrap(), target);
    }
}
