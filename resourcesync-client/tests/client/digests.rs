//! A caller that hashes a resource's body itself (`handle_progress`, `handle_digests`):
//! the client checks the digests as it checks bytes it hashes, bounds the body, and
//! refuses the inputs that would mix the two ways.

use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};
use resourcesync_client::{Event, MemoryInventory, Misuse, ProblemKind, Purpose};
use resourcesync_model::{Algorithms, FixityMismatch, Measure, Measured, Verification};

use crate::apply::{answer, client as new_client};

const LIST: &str = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <url><loc>https://example.com/a.txt</loc><rs:md length="5" hash="md5:5d41402abc4b2a76b9719d911017c592"/></url>
</urlset>"#;

/// What a caller that computes what the client asks (md5: the list lists it alone)
/// hands over.
fn digests(bytes: &[u8]) -> Measured {
    measured(Algorithms::MD5, bytes)
}

fn measured(algorithms: Algorithms, bytes: &[u8]) -> Measured {
    let mut measure = Measure::new(algorithms);
    measure.update(bytes);
    measure.finish()
}

/// A client that read the list and asked for a.txt: the request, its head received.
fn asked(
    now: Instant,
) -> (
    resourcesync_client::Client<MemoryInventory>,
    resourcesync_client::RequestId,
) {
    let mut client = new_client(MemoryInventory::new(), false);
    let list = client.poll_request(now).expect("the list");
    answer(&mut client, &list, LIST.as_bytes(), now);
    let resource = client.poll_request(now).expect("the resource");
    assert!(matches!(resource.purpose, Purpose::Resource { .. }));
    client
        .handle_response(resource.id, StatusCode::OK, &HeaderMap::new(), now)
        .unwrap();
    (client, resource.id)
}

fn drain(client: &mut resourcesync_client::Client<MemoryInventory>) -> Vec<Event> {
    std::iter::from_fn(|| client.poll_event()).collect()
}

#[test]
fn digests_that_match_are_a_store_and_others_a_fixity_failure() {
    let now = Instant::now();
    let (mut client, id) = asked(now);
    assert_eq!(client.body_limit(id), Some(5));
    client.handle_progress(id, 5, now).unwrap();
    client.handle_digests(id, digests(b"hello"), now).unwrap();
    let events = drain(&mut client);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Store(s) if s.digests == digests(b"hello"))),
        "{events:?}"
    );

    let (mut client, id) = asked(now);
    client.handle_digests(id, digests(b"jello"), now).unwrap();
    let events = again(&mut client, b"jello", now);
    assert!(
        events.iter().any(|e| matches!(e, Event::Problem(p)
                if matches!(&p.kind, ProblemKind::ChangedSinceListed { cause }
                    if matches!(**cause, ProblemKind::Fixity(_))))),
        "{events:?}"
    );
    assert!(!events.iter().any(|e| matches!(e, Event::Store(_))));
}

/// A baseline fetches a body that matched nothing listed once more, after the listing (a
/// Source that moved since it, or a transfer that went wrong once): `body` again. The
/// events of both fetches.
fn again(
    client: &mut resourcesync_client::Client<MemoryInventory>,
    body: &[u8],
    now: Instant,
) -> Vec<Event> {
    let mut events = drain(client);
    let resource = client.poll_request(now).expect("fetched once more");
    assert!(matches!(resource.purpose, Purpose::Resource { .. }));
    client
        .handle_response(resource.id, StatusCode::OK, &HeaderMap::new(), now)
        .unwrap();
    client
        .handle_digests(resource.id, digests(body), now)
        .unwrap();
    events.extend(drain(client));
    events
}

#[test]
fn a_body_past_its_listed_length_fails_without_a_retry() {
    let now = Instant::now();
    let (mut client, id) = asked(now);
    client.handle_digests(id, digests(b"hello!"), now).unwrap();
    let events = again(&mut client, b"hello!", now);
    assert!(
        events.iter().any(|e| matches!(e, Event::Problem(p)
                if matches!(&p.kind, ProblemKind::ChangedSinceListed { cause }
                    if **cause == ProblemKind::Fixity(FixityMismatch::Longer { expected: 5 })))),
        "{events:?}"
    );
    assert!(client.poll_request(now + Duration::from_secs(60)).is_none());
}

#[test]
fn progress_keeps_a_request_alive_past_its_idle_timeout() {
    let now = Instant::now();
    let (mut client, id) = asked(now);
    let later = now + Duration::from_secs(50);
    client.handle_progress(id, 2, later).unwrap();
    // 70 s after the head, 20 s after the progress: not timed out (60 s by default).
    client.handle_timeout(now + Duration::from_secs(70));
    assert!(
        !drain(&mut client)
            .iter()
            .any(|e| matches!(e, Event::Cancel { .. }))
    );
    client.handle_digests(id, digests(b"hello"), later).unwrap();
    assert!(
        drain(&mut client)
            .iter()
            .any(|e| matches!(e, Event::Store(_)))
    );
}

#[test]
fn the_two_ways_do_not_mix_and_documents_are_not_digested() {
    let now = Instant::now();
    let (mut client, id) = asked(now);
    client.handle_body(id, b"he", now).unwrap();
    assert_eq!(
        client.handle_digests(id, digests(b"hello"), now),
        Err(Misuse::NotDigestible(id))
    );
    let (mut client, id) = asked(now);
    client.handle_progress(id, 2, now).unwrap();
    assert_eq!(
        client.handle_body(id, b"he", now),
        Err(Misuse::NotDigestible(id))
    );

    let mut client = new_client(MemoryInventory::new(), false);
    let list = client.poll_request(now).unwrap();
    assert_eq!(client.body_limit(list.id), None);
    client
        .handle_response(list.id, StatusCode::OK, &HeaderMap::new(), now)
        .unwrap();
    assert_eq!(
        client.handle_digests(list.id, digests(LIST.as_bytes()), now),
        Err(Misuse::NotDigestible(list.id))
    );
}

/// A Resource List of one resource `a.txt` ("hello") listed with `hash`.
fn listed_with(hash: &str) -> crate::sim::Source {
    let list = crate::counting::resource_list(&format!(
        r#"<url><loc>http://example.com/a.txt</loc><rs:md length="5" hash="{hash}"/></url>"#
    ));
    crate::counting::serving(&[("resourcelist.xml", &list), ("a.txt", b"hello")])
}

/// md5 of "hello" in base64, as some Sources write digests.
const HELLO_MD5_BASE64: &str = "md5:XUFAKrxLKna5cZ2REBfFkg==";

/// A base64 md5 (section 7 says hex; real Sources write base64) is checked: the right
/// body is stored, a corrupt one is not.
#[test]
fn a_base64_digest_is_checked() {
    use crate::sim::{Destination, Drive, Fault, sync};
    let source = listed_with(HELLO_MD5_BASE64);
    let mut dest = Destination::default();
    let start = "resourcelist.xml";
    let run = sync(
        &source,
        &mut dest,
        crate::counting::BASELINE,
        start,
        |c| c,
        Drive::default(),
    );
    assert_eq!(run.report().created, 1, "{:?}", run.problems());
    assert!(run.report().complete);

    // The same length, another body: only the digest tells.
    let source = listed_with(HELLO_MD5_BASE64);
    let mut dest = Destination::default();
    let drive = Drive {
        fault: Some(Box::new(|uri: &str, _| {
            uri.ends_with("a.txt").then_some(Fault::Corrupt)
        })),
        ..Drive::default()
    };
    let run = sync(
        &source,
        &mut dest,
        crate::counting::BASELINE,
        start,
        |c| c,
        drive,
    );
    assert_eq!(run.report().created, 0, "{:?}", run.report());
    assert!(dest.files.is_empty(), "stored unchecked");
    assert!(
        run.problems().iter().any(|p| p.contains("md5")),
        "{:?}",
        run.problems()
    );
}

/// Digests that cannot be read or checked refuse the entry: never stored unchecked.
#[test]
fn an_entry_whose_digests_cannot_be_checked_is_refused() {
    use crate::sim::{Destination, Drive, sync};
    for hash in [
        "md5:not-a-digest",
        "md5:XUFAKrxLKna5cZ2REBfF",
        "sha-1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d",
    ] {
        let source = listed_with(hash);
        let mut dest = Destination::default();
        let start = "resourcelist.xml";
        let run = sync(
            &source,
            &mut dest,
            crate::counting::BASELINE,
            start,
            |c| c,
            Drive::default(),
        );
        let report = run.report();
        assert_eq!(
            (report.created, report.refused),
            (0, 1),
            "{hash}: {report:?}"
        );
        assert!(!report.complete, "{hash}");
        assert!(dest.files.is_empty(), "{hash}: stored unchecked");
        assert_eq!(crate::counting::refusals(&run.events).len(), 1, "{hash}");
    }
}

/// A client asked for a resource listed with `hash` (none if empty; "hello", 5 bytes), checking
/// `verification`: the request, its head received.
fn asked_listed(
    hash: &str,
    verification: Verification,
    now: Instant,
) -> (
    resourcesync_client::Client<MemoryInventory>,
    resourcesync_client::RequestId,
) {
    // An empty `hash`: none listed.
    let list = match hash {
        "" => LIST.replace(r#" hash="md5:5d41402abc4b2a76b9719d911017c592""#, ""),
        _ => LIST.replace("md5:5d41402abc4b2a76b9719d911017c592", hash),
    };
    let config = resourcesync_client::Config::new(
        "https://example.com/resourcelist.xml".parse().unwrap(),
        resourcesync_client::Mode::Baseline { prefer_dump: false },
    )
    .unwrap()
    .with_verification(verification);
    let mut client = resourcesync_client::Client::new(
        config,
        resourcesync_client::State::new(),
        MemoryInventory::new(),
    );
    let request = client.poll_request(now).expect("the list");
    answer(&mut client, &request, list.as_bytes(), now);
    let resource = client.poll_request(now);
    let events = drain(&mut client);
    let resource =
        resource.unwrap_or_else(|| panic!("the resource listed with {hash}: {events:?}"));
    client
        .handle_response(resource.id, StatusCode::OK, &HeaderMap::new(), now)
        .unwrap();
    (client, resource.id)
}

const HELLO_MD5: &str = "md5:5d41402abc4b2a76b9719d911017c592";
const HELLO_SHA256: &str =
    "sha-256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824";

/// The client asks for the digests that check what is listed: the strongest listed by
/// default (sha-256 over md5), every listed one under `Verification::All`, sha-256 where
/// none is listed (the inventory's record of what was stored); and what is handed over
/// is checked against every listed digest it holds.
#[test]
fn the_digests_asked_for_are_the_strongest_listed_or_all_of_them() {
    let now = Instant::now();
    let both = format!("{HELLO_MD5} {HELLO_SHA256}");
    for (hash, verification, algorithms) in [
        (both.as_str(), Verification::Strongest, Algorithms::SHA256),
        (both.as_str(), Verification::All, Algorithms::BOTH),
        (HELLO_MD5, Verification::Strongest, Algorithms::MD5),
        (HELLO_MD5, Verification::All, Algorithms::MD5),
        (HELLO_SHA256, Verification::All, Algorithms::SHA256),
        ("", Verification::Strongest, Algorithms::SHA256),
    ] {
        let (mut client, id) = asked_listed(hash, verification, now);
        assert_eq!(
            client.algorithms(id),
            Some(algorithms),
            "{hash} {verification:?}"
        );
        client
            .handle_digests(id, measured(algorithms, b"hello"), now)
            .unwrap();
        let events = drain(&mut client);
        let store = events.iter().find_map(|e| match e {
            Event::Store(s) => Some(s.digests),
            _ => None,
        });
        assert_eq!(
            store,
            Some(measured(algorithms, b"hello")),
            "{hash}: {events:?}"
        );
    }

    // A body whose md5 matches and sha-256 does not: `All` refuses it, and so does the
    // default, which checks the sha-256.
    let mut lying = measured(Algorithms::BOTH, b"hello");
    lying.sha256 = measured(Algorithms::SHA256, b"jello").sha256;
    for verification in [Verification::Strongest, Verification::All] {
        let (mut client, id) = asked_listed(&both, verification, now);
        client.handle_digests(id, lying, now).unwrap();
        let events = drain(&mut client);
        assert!(
            !events.iter().any(|e| matches!(e, Event::Store(_))),
            "{events:?}"
        );
    }
}

/// A caller that hands over other digests than the listed ones (md5 for a sha-256 list)
/// has checked nothing: that is a fixity failure, never a store.
#[test]
fn digests_that_check_nothing_listed_are_not_a_store() {
    let now = Instant::now();
    let (mut client, id) = asked_listed(HELLO_SHA256, Verification::Strongest, now);
    client
        .handle_digests(id, measured(Algorithms::MD5, b"hello"), now)
        .unwrap();
    // Fetched once more (what matches nothing listed may be a Source that moved), and
    // the same digests handed over again.
    let events = again(&mut client, b"hello", now);
    assert!(
        !events.iter().any(|e| matches!(e, Event::Store(_))),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(e, Event::Problem(p)
                if matches!(&p.kind, ProblemKind::ChangedSinceListed { cause }
                    if **cause == ProblemKind::Fixity(FixityMismatch::Unchecked { algorithm: "sha-256" })))),
        "{events:?}"
    );
}
