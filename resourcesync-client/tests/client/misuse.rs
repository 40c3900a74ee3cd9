//! Inputs that break the client's contract are refused with a `Misuse`, and change nothing.

use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};
use resourcesync_client::{
    Event, Held, Inventory, MemoryInventory, Misuse, PackageManifest, Purpose,
};
use resourcesync_model::{Document, DocumentHead, DocumentKind};

use crate::apply::{answer, client, read_all};

const LIST: &[u8] = br#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <url><loc>https://example.com/a.txt</loc><rs:md length="5"/></url>
</urlset>"#;

#[test]
fn a_body_before_its_response_head_is_refused_and_changes_nothing() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let request = client.poll_request(now).unwrap();
    let before = format!("{client:?}");
    assert_eq!(
        client.handle_body(request.id, LIST, now),
        Err(Misuse::BodyBeforeResponse(request.id))
    );
    assert_eq!(
        client.handle_end(request.id, now),
        Err(Misuse::BodyBeforeResponse(request.id))
    );
    // Nothing read, nothing decided: the body did not become documents or changes.
    assert_eq!(format!("{client:?}"), before);
    assert_eq!(client.progress().bytes, 0);
    assert_eq!(client.poll_event(), None);
    // The request goes on as if the misuse had not happened.
    answer(&mut client, &request, LIST, now);
    assert!(std::iter::from_fn(|| client.poll_event()).any(|e| matches!(e, Event::Change(_))));
}

#[test]
fn a_second_response_head_is_refused() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let request = client.poll_request(now).unwrap();
    let headers = HeaderMap::new();
    client
        .handle_response(request.id, StatusCode::OK, &headers, now)
        .unwrap();
    assert_eq!(
        client.handle_response(request.id, StatusCode::NOT_FOUND, &headers, now),
        Err(Misuse::ResponseTwice(request.id))
    );
    // The first head stands: the body is read.
    client.handle_body(request.id, LIST, now).unwrap();
    client.handle_end(request.id, now).unwrap();
    assert!(std::iter::from_fn(|| client.poll_event()).any(|e| matches!(e, Event::Change(_))));
}

#[test]
fn an_input_after_the_end_is_refused() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let request = client.poll_request(now).unwrap();
    answer(&mut client, &request, LIST, now);
    let over = Err(Misuse::RequestOver(request.id));
    assert_eq!(client.handle_body(request.id, b"more", now), over);
    assert_eq!(client.handle_end(request.id, now), over);
    assert_eq!(client.handle_failure(request.id, "late", now), over);
    let headers = HeaderMap::new();
    assert_eq!(
        client.handle_response(request.id, StatusCode::OK, &headers, now),
        over
    );
    assert_eq!(client.handle_redirect(request.id, "/x", now), over);
    let address = "93.184.216.34".parse().unwrap();
    assert_eq!(client.handle_address(request.id, address, now), over);
    assert_eq!(client.handle_started(request.id, now), over);
}

#[test]
fn a_request_of_another_client_is_unknown() {
    let now = Instant::now();
    let mut one = client(MemoryInventory::new(), false);
    let mut other = client(MemoryInventory::new(), false);
    let _ = one.poll_request(now).unwrap();
    // The other client's list, then its fetch: an id this one never reached.
    let list = other.poll_request(now).unwrap();
    answer(&mut other, &list, LIST, now);
    let fetch = other.poll_request(now).unwrap();
    assert!(matches!(fetch.purpose, Purpose::Resource { .. }));
    assert_eq!(
        one.handle_body(fetch.id, b"x", now),
        Err(Misuse::UnknownRequest(fetch.id))
    );
    assert_eq!(
        one.handle_end(fetch.id, now),
        Err(Misuse::UnknownRequest(fetch.id))
    );
}

#[test]
fn what_is_still_delivered_for_a_request_the_client_ended_is_ignored() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    // An error status: the body of the error page and its end are accepted.
    let request = client.poll_request(now).unwrap();
    client
        .handle_response(
            request.id,
            StatusCode::SERVICE_UNAVAILABLE,
            &HeaderMap::new(),
            now,
        )
        .unwrap();
    client
        .handle_body(request.id, b"<html>busy</html>", now)
        .unwrap();
    client.handle_end(request.id, now).unwrap();
    // Its end was the last input.
    assert_eq!(
        client.handle_end(request.id, now),
        Err(Misuse::RequestOver(request.id))
    );
    // A request cancelled when it went quiet: what was on its way is accepted too.
    let later = client.poll_timeout().unwrap();
    client.handle_timeout(later);
    let retry = client.poll_request(later).unwrap();
    let quiet = client.poll_timeout().unwrap() + Duration::from_secs(1);
    client.handle_timeout(quiet);
    assert!(
        std::iter::from_fn(|| client.poll_event())
            .any(|e| e == Event::Cancel { request: retry.id })
    );
    client
        .handle_response(retry.id, StatusCode::OK, &HeaderMap::new(), quiet)
        .unwrap();
    client.handle_body(retry.id, LIST, quiet).unwrap();
    client.handle_failure(retry.id, "aborted", quiet).unwrap();
    // Nothing of it was read.
    assert_eq!(client.progress().listed, 0);
    assert_eq!(
        client.handle_body(retry.id, LIST, quiet),
        Err(Misuse::RequestOver(retry.id))
    );
}

#[test]
fn a_change_is_confirmed_once_and_only_once_instructed() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let list = client.poll_request(now).unwrap();
    answer(&mut client, &list, LIST, now);
    let change = std::iter::from_fn(|| client.poll_event())
        .find_map(|e| match e {
            Event::Change(c) => Some(c),
            _ => None,
        })
        .unwrap();
    // Decided, its resource not fetched yet: nothing to confirm.
    assert_eq!(
        client.applied(change.id, None, now),
        Err(Misuse::NotInstructed(change.id))
    );
    assert_eq!(
        client.failed(change.id, "too early", now),
        Err(Misuse::NotInstructed(change.id))
    );
    assert_eq!(client.inventory().get(&change.uri), None);
    let fetch = client.poll_request(now).unwrap();
    answer(&mut client, &fetch, b"hello", now);
    assert!(std::iter::from_fn(|| client.poll_event()).any(|e| matches!(e, Event::Store(_))));
    client.applied(change.id, None, now).unwrap();
    let held = client.inventory().get(&change.uri);
    assert!(held.is_some());
    // Twice is a misuse, and so is failing it now: the record stays.
    assert_eq!(
        client.applied(change.id, Some(Held::new()), now),
        Err(Misuse::ChangeSettled(change.id))
    );
    assert_eq!(
        client.failed(change.id, "disk full", now),
        Err(Misuse::ChangeSettled(change.id))
    );
    assert_eq!(client.inventory().get(&change.uri), held);
}

#[test]
fn a_change_of_another_client_is_unknown() {
    let now = Instant::now();
    let mut one = client(MemoryInventory::new(), false);
    let mut other = client(MemoryInventory::new(), false);
    let _ = one.poll_request(now).unwrap();
    let events = read_all(&mut other, now);
    let Some(Event::Store(store)) = events.iter().find(|e| matches!(e, Event::Store(_))) else {
        panic!("a store");
    };
    assert_eq!(
        one.applied(store.change.id, None, now),
        Err(Misuse::UnknownChange(store.change.id))
    );
}

#[test]
fn a_record_for_a_deletion_is_refused() {
    let now = Instant::now();
    let gone: resourcesync_model::Uri = "https://example.com/gone.txt".parse().unwrap();
    let mut inventory = MemoryInventory::new();
    inventory.insert(gone.clone(), Held::new().with_length(1));
    let mut client = client(inventory, true);
    let mut events = read_all(&mut client, now);
    if let Some(Event::Store(store)) = events.iter().find(|e| matches!(e, Event::Store(_))) {
        client.applied(store.change.id, None, now).unwrap();
    }
    events.extend(std::iter::from_fn(|| client.poll_event()));
    let Some(Event::Delete(delete)) = events.iter().find(|e| matches!(e, Event::Delete(_))) else {
        panic!("a deletion: {events:?}");
    };
    assert_eq!(
        client.applied(delete.id, Some(Held::new()), now),
        Err(Misuse::HeldForDeletion(delete.id))
    );
    // Refused whole: still held, still to confirm.
    assert!(client.inventory().get(&gone).is_some());
    client.applied(delete.id, None, now).unwrap();
    assert_eq!(client.inventory().get(&gone), None);
}

#[test]
fn a_manifest_for_no_package_is_refused() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let request = client.poll_request(now).unwrap();
    let manifest = Document::new(DocumentHead::of_kind(DocumentKind::ResourceDumpManifest));
    assert_eq!(
        client.handle_package(request.id, PackageManifest::whole(&manifest), now),
        Err(Misuse::NoPackage(request.id))
    );
    assert_eq!(client.poll_event(), None);
}

#[test]
fn a_request_held_back_by_its_driver_counts_its_quiet_time_from_its_start() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let request = client.poll_request(now).unwrap();
    let quiet = client.poll_timeout().unwrap();
    // Held back (a shared connection limit, a Crawl-delay) until just before it would
    // have gone quiet, then started: not cancelled at the first deadline.
    let start = quiet - Duration::from_secs(1);
    client.handle_started(request.id, start).unwrap();
    client.handle_timeout(quiet + Duration::from_secs(1));
    assert!(!std::iter::from_fn(|| client.poll_event()).any(|e| e
        == Event::Cancel {
            request: request.id
        }));
    // Nothing after its start for as long again: cancelled then.
    client.handle_timeout(client.poll_timeout().unwrap());
    assert!(std::iter::from_fn(|| client.poll_event()).any(|e| e
        == Event::Cancel {
            request: request.id
        }));

    // A driver that tells each start: no timer until then, however long it is held.
    let config = resourcesync_client::Config::new(
        "https://example.com/resourcelist.xml".parse().unwrap(),
        resourcesync_client::Mode::Baseline { prefer_dump: false },
    )
    .unwrap()
    .with_started_by_driver(true);
    let mut client = resourcesync_client::Client::new(
        config,
        resourcesync_client::State::new(),
        MemoryInventory::new(),
    );
    let request = client.poll_request(now).unwrap();
    let day = now + Duration::from_secs(86_400);
    client.handle_timeout(day);
    let cancelled = |e: &Event| {
        *e == Event::Cancel {
            request: request.id,
        }
    };
    assert!(!std::iter::from_fn(|| client.poll_event()).any(|e| cancelled(&e)));
    client.handle_started(request.id, day).unwrap();
    client.handle_timeout(client.poll_timeout().unwrap());
    assert!(std::iter::from_fn(|| client.poll_event()).any(|e| cancelled(&e)));
}

#[test]
fn a_listing_found_broken_after_it_waited_for_its_fetches_takes_no_input_after_its_end() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let list = client.poll_request(now).unwrap();
    // 1,100 entries, more than the client decides ahead of its requests, then a cut.
    let mut body = String::from(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>"#,
    );
    for i in 0..1100 {
        body.push_str(&format!(
            "<url><loc>https://example.com/r/{i}.txt</loc></url>"
        ));
    }
    body.push_str("<url><loc>https://example.com/r/cut");
    // The whole body and its end before any resource is asked for: the listing waits,
    // unread past its first entries, for its fetches.
    answer(&mut client, &list, body.as_bytes(), now);
    let mut events: Vec<Event> = std::iter::from_fn(|| client.poll_event()).collect();
    assert!(
        !events.iter().any(|e| matches!(e, Event::Problem(_))),
        "{events:?}"
    );
    // As the fetches are answered the rest is read, and found broken.
    while let Some(request) = client.poll_request(now) {
        answer(&mut client, &request, b"hello", now);
        events.extend(std::iter::from_fn(|| client.poll_event()));
    }
    assert!(
        events.iter().any(|e| matches!(e, Event::Problem(p)
            if p.uri.as_ref().is_some_and(|u| u.as_str().ends_with("resourcelist.xml")))),
        "the cut list is not found broken"
    );
    // Its end was its last input, long before: nothing more of it is taken.
    assert_eq!(
        client.handle_end(list.id, now),
        Err(Misuse::RequestOver(list.id))
    );
    assert_eq!(
        client.handle_body(list.id, b"more", now),
        Err(Misuse::RequestOver(list.id))
    );
}
