//! `DirectoryDestination` on its own, driven in process by a blocking loop over a
//! simulated Source (no HTTP): what it stores, extracts and deletes, what it saves and
//! finds again on the next open, and what it cleans.

use std::path::Path;
use std::time::Instant;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use resourcesync_client::{Client, Event, Inventory, Report};
use resourcesync_destination::{DestinationError, DirectoryDestination, KEPT, SyncOptions};
use resourcesync_testkit::source::Source;

/// One run of the client into `dir`, every request answered by `source`, every event
/// carried out by the destination.
fn run(source: &Source, dir: &Path, options: impl Fn(SyncOptions) -> SyncOptions) -> Report {
    let options = options(SyncOptions::new(source.uri(""), dir));
    let mut dest = DirectoryDestination::open(dir).unwrap();
    let (state, inventory) = dest.load().unwrap();
    let config = options.config(&dest, &state).unwrap();
    let mut client = Client::new(config, state, inventory);
    loop {
        if let Some(request) = client.poll_request(Instant::now()) {
            let keep = dest.keeps_body(&request);
            let response = source.respond(request.uri.as_str());
            let mut headers = HeaderMap::new();
            for (name, value) in &response.headers {
                headers.insert(
                    HeaderName::try_from(name.as_str()).unwrap(),
                    HeaderValue::try_from(value.as_str()).unwrap(),
                );
            }
            let status = StatusCode::from_u16(response.status).unwrap();
            let body = &response.body[..];
            dest.receive(&mut client, request.id, keep, status, &headers, body)
                .unwrap();
        } else if let Some(at) = client.poll_timeout() {
            client.handle_timeout(at);
        }
        while let Some(event) = client.poll_event() {
            if let Event::Done(report) = event {
                dest.save(&client).unwrap();
                return report;
            }
            dest.apply(&mut client, &event).unwrap();
        }
    }
}

fn source(dump: bool) -> Source {
    let mut source = Source::new();
    source.publish.resource_dump = dump;
    source.put("a.txt", b"hello");
    source.put("docs/deep/b.txt", b"abc");
    source.tick(10);
    source.publish();
    source
}

#[test]
fn stores_then_deletes_and_a_reopen_finds_the_state_and_the_inventory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let mut source = source(false);
    let report = run(&source, &d, |o| o);
    assert!(report.complete, "{report:?}");
    assert_eq!(report.created, 2);
    assert_eq!(std::fs::read(d.join("docs/deep/b.txt")).unwrap(), b"abc");
    assert!(d.join(KEPT).join("state.json").is_file());
    assert!(d.join(KEPT).join("inventory.json").is_file());

    // A reopen finds what the run saved: a checkpoint, and both resources as held.
    let dest = DirectoryDestination::open(&d).unwrap();
    let (state, inventory) = dest.load().unwrap();
    assert!(!state.sets.is_empty());
    assert!(inventory.get(&source.uri("a.txt")).is_some());
    assert!(inventory.get(&source.uri("docs/deep/b.txt")).is_some());
    // Closed, for the next run to open: one destination at a time holds the directory.
    drop(dest);

    // The next run is incremental, from that checkpoint: the deletion (allowed) removes
    // the file and the directories it leaves empty, and the inventory forgets it.
    source.tick(5);
    source.delete("docs/deep/b.txt");
    source.tick(5);
    source.publish();
    let report = run(&source, &d, |o| o.with_delete(1));
    assert!(report.complete, "{report:?}");
    assert_eq!((report.created, report.deleted), (0, 1), "{report:?}");
    assert!(!d.join("docs").exists());
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"hello");
    let (_, inventory) = DirectoryDestination::open(&d).unwrap().load().unwrap();
    assert!(inventory.get(&source.uri("docs/deep/b.txt")).is_none());

    // An audit saves nothing and finds the directory in step.
    let report = run(&source, &d, |o| o.with_audit(true));
    assert_eq!(report.in_sync, Some(true), "{report:?}");
}

#[test]
fn extracts_from_a_resource_dump_and_releases_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let source = source(true);
    let report = run(&source, &d, |o| o.with_dump(true));
    assert!(report.complete, "{report:?}");
    assert_eq!(report.created, 2);
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"hello");
    assert_eq!(std::fs::read(d.join("docs/deep/b.txt")).unwrap(), b"abc");
    // The package and the extracted bitstreams' temporary files are gone.
    let tmp = d.join(KEPT).join("tmp");
    assert_eq!(std::fs::read_dir(tmp).unwrap().count(), 0);
}

#[test]
fn open_removes_what_a_stopped_run_left_in_its_temporary_directory() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join(KEPT).join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("request-7"), b"half a body").unwrap();
    let dest = DirectoryDestination::open(dir.path()).unwrap();
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    // Nothing saved yet: a first run's state and inventory.
    let (state, inventory) = dest.load().unwrap();
    assert!(state.sets.is_empty());
    assert!(
        inventory
            .get(&"http://example.com/a.txt".parse().unwrap())
            .is_none()
    );
}

#[test]
fn a_state_that_is_not_ours_is_unreadable_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join(KEPT);
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("state.json"), b"not json").unwrap();
    let dest = DirectoryDestination::open(dir.path()).unwrap();
    match dest.load() {
        Err(DestinationError::Unreadable { path, .. }) => {
            assert_eq!(path, kept.join("state.json"))
        }
        other => panic!("{other:?}"),
    }
}
