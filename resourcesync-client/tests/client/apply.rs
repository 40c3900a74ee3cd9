//! Confirming a change is one call: the client records it in the inventory itself.

use std::time::Instant;

use http::{HeaderMap, StatusCode};
use resourcesync_client::{
    Action, Client, Config, Event, Held, Inventory, MemoryInventory, Mode, Request, State,
};
use resourcesync_model::{Algorithms, Measure, Uri};

const LIST: &str = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <url><loc>https://example.com/a.txt</loc><lastmod>2024-12-01T00:00:00Z</lastmod><rs:md length="5"/></url>
</urlset>"#;

fn uri(s: &str) -> Uri {
    s.parse().unwrap()
}

/// A baseline client of the list above, holding `inventory`.
pub(crate) fn client(inventory: MemoryInventory, delete: bool) -> Client<MemoryInventory> {
    let mut config = Config::new(
        uri("https://example.com/resourcelist.xml"),
        Mode::Baseline { prefer_dump: false },
    )
    .unwrap();
    if delete {
        config = config.with_delete(10);
    }
    Client::new(config, State::new(), inventory)
}

/// Answers `request` with 200 and `body`, in one chunk; a misuse fails the test.
pub(crate) fn answer<I: Inventory>(
    client: &mut Client<I>,
    request: &Request,
    body: &[u8],
    now: Instant,
) {
    client
        .handle_response(request.id, StatusCode::OK, &HeaderMap::new(), now)
        .unwrap();
    client.handle_body(request.id, body, now).unwrap();
    client.handle_end(request.id, now).unwrap();
}

/// Answers the list, then every resource (with "hello"), until the client waits for the
/// caller; the events so far.
pub(crate) fn read_all(client: &mut Client<MemoryInventory>, now: Instant) -> Vec<Event> {
    let mut events = Vec::new();
    while let Some(request) = client.poll_request(now) {
        let body: &[u8] = match request.uri.as_str() {
            "https://example.com/resourcelist.xml" => LIST.as_bytes(),
            _ => b"hello",
        };
        answer(client, &request, body, now);
        events.extend(std::iter::from_fn(|| client.poll_event()));
    }
    events
}

#[test]
fn applying_a_store_records_what_the_client_verified() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let events = read_all(&mut client, now);
    let store = events
        .iter()
        .find_map(|e| match e {
            Event::Store(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a store");
    // Nothing is recorded before the caller confirms.
    assert_eq!(client.inventory().get(&store.change.uri), None);
    client.applied(store.change.id, None, now).unwrap();
    // The list gives no digest: the client computes sha-256 all the same, and records it.
    let mut f = Measure::new(Algorithms::SHA256);
    f.update(b"hello");
    let held = Held::of(&f.finish(), store.change.lastmod);
    assert_eq!(client.inventory().get(&store.change.uri), Some(held));
    assert!(held.lastmod.is_some());
    let done = std::iter::from_fn(|| client.poll_event())
        .any(|e| matches!(e, Event::Done(r) if r.complete && r.created == 1));
    assert!(done);
}

#[test]
fn applying_a_store_with_a_held_records_the_held_given() {
    let now = Instant::now();
    let mut client = client(MemoryInventory::new(), false);
    let events = read_all(&mut client, now);
    let Some(Event::Store(store)) = events.iter().find(|e| matches!(e, Event::Store(_))) else {
        panic!("a store");
    };
    let held = Held::new().with_length(5);
    client.applied(store.change.id, Some(held), now).unwrap();
    assert_eq!(client.inventory().get(&store.change.uri), Some(held));
}

#[test]
fn applying_a_deletion_forgets_the_record_and_a_failure_keeps_it() {
    let now = Instant::now();
    let gone = uri("https://example.com/gone.txt");
    let kept = uri("https://example.com/kept.txt");
    let mut inventory = MemoryInventory::new();
    inventory.insert(gone.clone(), Held::new().with_length(1));
    inventory.insert(kept.clone(), Held::new().with_length(2));
    let mut client = client(inventory, true);
    let mut events = read_all(&mut client, now);
    // The store first: deletions follow once the listing is whole and read.
    if let Some(Event::Store(store)) = events.iter().find(|e| matches!(e, Event::Store(_))) {
        client.applied(store.change.id, None, now).unwrap();
    }
    events.extend(std::iter::from_fn(|| client.poll_event()));
    let deletes: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            Event::Delete(c) => Some(c.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(deletes.len(), 2, "{events:?}");
    assert!(deletes.iter().all(|c| c.action == Action::Delete));
    for change in deletes {
        if change.uri == gone {
            client.applied(change.id, None, now).unwrap();
        } else {
            client.failed(change.id, "disk full", now).unwrap();
        }
    }
    assert_eq!(client.inventory().get(&gone), None);
    assert_eq!(
        client.inventory().get(&kept),
        Some(Held::new().with_length(2))
    );
    let (_, inventory) = client.into_parts();
    assert_eq!(inventory.len(), 2, "a.txt and kept.txt");
}

#[test]
fn declining_records_nothing_forgets_a_deletion_and_is_a_conflict_the_run_goes_past() {
    let now = Instant::now();
    let changed = uri("https://example.com/changed.txt");
    let mut inventory = MemoryInventory::new();
    inventory.insert(changed.clone(), Held::new().with_length(1));
    let mut client = client(inventory, true);
    let mut events = read_all(&mut client, now);
    // The path of the store holds a file no sync stored: declined.
    let store = events
        .iter()
        .find_map(|e| match e {
            Event::Store(s) => Some(s.clone()),
            _ => None,
        })
        .expect("a store");
    client
        .declined(store.change.id, "a file of the user's", now)
        .unwrap();
    assert_eq!(client.inventory().get(&store.change.uri), None);
    // Declined once: a second confirmation is a misuse.
    assert!(client.applied(store.change.id, None, now).is_err());
    events.extend(std::iter::from_fn(|| client.poll_event()));
    // The file to delete changed since it was stored: declined, and no longer the sync's.
    let delete = events
        .iter()
        .find_map(|e| match e {
            Event::Delete(c) => Some(c.clone()),
            _ => None,
        })
        .expect("a deletion");
    client.declined(delete.id, "changed since", now).unwrap();
    assert_eq!(client.inventory().get(&changed), None);
    events.extend(std::iter::from_fn(|| client.poll_event()));
    let report = events
        .iter()
        .find_map(|e| match e {
            Event::Done(r) => Some(r.clone()),
            _ => None,
        })
        .expect("done");
    // Named, counted, and the run is not complete; but the listing was read whole and
    // the checkpoint taken: the conflict is the user's to resolve, not a reason to
    // read the Source again.
    assert_eq!(report.conflicts, 2, "{report:?}");
    assert!(!report.complete);
    let conflicts = events
        .iter()
        .filter(|e| matches!(e, Event::Problem(p) if p.kind.name() == "conflict"))
        .count();
    assert_eq!(conflicts, 2);
    let (state, _) = client.into_parts();
    assert!(!state.sets.is_empty(), "{state:?}");
    // The store declined is the next run's to fetch again (it meets the conflict again
    // until the user resolves it); the deletion declined is done with.
    let again: Vec<&Uri> = state.refetch.values().flatten().map(|r| &r.uri).collect();
    assert_eq!(again, [&store.change.uri], "{state:?}");
}
