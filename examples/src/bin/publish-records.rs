//! An application publishes its own records as a ResourceSync Source, with no file walk:
//! a snapshot first, then the changes its database recorded; a Destination, the sans-IO
//! client driven in this process, follows it from the baseline through the Change List.
//!
//! ```text
//! publish-records
//! ```
//!
//! The Source's documents live in a `MemoryStore`; the resources in the application's own
//! map. Both are what an HTTP server would serve: here `answer` is that server.

use std::collections::BTreeMap;
use std::error::Error;
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderMap, StatusCode};
use resourcesync_client::{Client, Config, Event, MemoryInventory, Mode, Report, State};
use resourcesync_model::{Entry, Fixity, W3cDateTime};
use resourcesync_source::{MemoryStore, PublishOptions, Publisher, ResourceEvent};

const BASE: &str = "http://example.org/";

/// The application's collection: content by URI.
type Collection = BTreeMap<String, Vec<u8>>;

/// A record as the application's database gives it: URI, time, length and digests.
fn record(uri: &str, content: &[u8], lastmod: SystemTime) -> Result<Entry, Box<dyn Error>> {
    let mut fixity = Fixity::new();
    fixity.update(content);
    let digests = fixity.finish();
    let entry = Entry::new(uri.parse()?);
    Ok(entry
        .with_lastmod(lastmod.into())
        .with_length(digests.length)
        .with_hash(digests.hashes()))
}

/// What the server answers for `uri`: a document of the store, or a resource.
fn answer(store: &MemoryStore, collection: &Collection, uri: &str) -> Option<Vec<u8>> {
    let name = uri.strip_prefix(BASE)?;
    store
        .get(name)
        .map(<[u8]>::to_vec)
        .or_else(|| collection.get(uri).cloned())
}

/// Runs the client against the Source in this process until it is done; the destination
/// is a map from local path to bytes.
fn sync(
    client: &mut Client<MemoryInventory>,
    serve: impl Fn(&str) -> Option<Vec<u8>>,
    dest: &mut BTreeMap<String, Vec<u8>>,
) -> Result<Report, Box<dyn Error>> {
    let mut bodies = BTreeMap::new();
    loop {
        let now = Instant::now();
        if let Some(request) = client.poll_request(now) {
            let uri = request.http.uri().to_string();
            let (status, body) = match serve(&uri) {
                Some(body) => (StatusCode::OK, body),
                None => (StatusCode::NOT_FOUND, Vec::new()),
            };
            // `?`: a misuse is this driver's bug, refused whole.
            client.handle_response(request.id, status, &HeaderMap::new(), now)?;
            client.handle_body(request.id, &body, now)?;
            client.handle_end(request.id, now)?;
            bodies.insert(request.id, body);
        }
        while let Some(event) = client.poll_event() {
            match event {
                Event::Store(store) => {
                    dest.insert(
                        store.change.path.to_string(),
                        bodies.remove(&store.request).unwrap_or_default(),
                    );
                    client.applied(store.change.id, None, now)?;
                }
                Event::Delete(change) => {
                    dest.remove(&change.path.to_string());
                    client.applied(change.id, None, now)?;
                }
                Event::Done(report) => return Ok(report),
                _ => {}
            }
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let t0 = SystemTime::now();
    let mut collection: Collection = (1..=5)
        .map(|n| {
            (
                format!("{BASE}records/{n}"),
                format!("record {n}").into_bytes(),
            )
        })
        .collect();
    let mut source = Publisher::new(MemoryStore::new(), PublishOptions::new(BASE.parse()?));
    let snapshot = collection
        .iter()
        .map(|(uri, content)| record(uri, content, t0))
        .collect::<Result<Vec<_>, _>>()?;
    let first = source.publish_snapshot(snapshot, t0)?;
    println!(
        "published {} records at {}",
        first.resource_list.unwrap_or(0),
        first.at
    );

    let mut dest = BTreeMap::new();
    let config = Config::new(BASE.parse()?, Mode::Baseline { prefer_dump: false })?;
    let mut client = Client::new(config, State::new(), MemoryInventory::new());
    let report = sync(
        &mut client,
        |uri| answer(source.store(), &collection, uri),
        &mut dest,
    )?;
    println!(
        "baseline: {} created, complete: {}",
        report.created, report.complete
    );

    // The application changes two records and deletes one, and says so.
    let t1 = t0 + Duration::from_secs(1);
    let when = W3cDateTime::from(t1);
    let (edited, new) = (format!("{BASE}records/2"), format!("{BASE}records/6"));
    collection.insert(edited.clone(), b"record 2, edited".to_vec());
    collection.insert(new.clone(), b"record 6".to_vec());
    collection.remove(&format!("{BASE}records/5"));
    let events = [
        ResourceEvent::updated(record(&edited, b"record 2, edited", t1)?, when),
        ResourceEvent::created(record(&new, b"record 6", t1)?, when),
        ResourceEvent::deleted(format!("{BASE}records/5").parse()?, when),
    ];
    let second = source.publish_changes(events, t1 + Duration::from_secs(1))?;
    println!(
        "published {} created, {} updated, {} deleted",
        second.created, second.updated, second.deleted
    );

    let (state, inventory) = client.into_parts();
    // Deleting what the Source deletes (nothing is deleted unless asked for).
    let config = Config::new(BASE.parse()?, Mode::Incremental)?.with_delete(u64::MAX);
    let mut client = Client::new(config, state, inventory);
    let report = sync(
        &mut client,
        |uri| answer(source.store(), &collection, uri),
        &mut dest,
    )?;
    println!(
        "incremental: {} created, {} updated, {} deleted, complete: {}",
        report.created, report.updated, report.deleted, report.complete
    );

    // Paths and URIs sort alike here: the bytes, in order, are the check.
    if !dest.values().eq(collection.values()) {
        return Err("the Destination does not hold what the application has".into());
    }
    println!(
        "the Destination holds the application's {} records",
        dest.len()
    );
    Ok(())
}
