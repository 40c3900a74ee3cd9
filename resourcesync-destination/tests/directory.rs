//! `DirectoryDestination` on its own, driven in process by a blocking loop over a
//! simulated Source (no HTTP): what it stores, extracts and deletes, what it saves and
//! finds again on the next open, and what it cleans.

use std::path::Path;
use std::time::Instant;

use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use resourcesync_client::{Client, Event, Inventory, Report};
use resourcesync_destination::{
    DestinationError, DirectoryDestination, DiskInventory, KEPT, SyncOptions,
};
use resourcesync_testkit::source::Source;

/// One run of the client into `dir`, every request answered by `source`, every event
/// carried out by the destination.
fn run(source: &Source, dir: &Path, options: impl Fn(SyncOptions) -> SyncOptions) -> Report {
    run_with(source, dir, options, |_| {})
}

/// [`run`], calling `between` after each event the destination carried out.
fn run_with(
    source: &Source,
    dir: &Path,
    options: impl Fn(SyncOptions) -> SyncOptions,
    mut between: impl FnMut(&Event),
) -> Report {
    let options = options(SyncOptions::new(source.uri(""), dir));
    let mut dest = DirectoryDestination::open(dir).unwrap();
    let (state, inventory) = dest.load().unwrap();
    let config = options.config(&dest, &state).unwrap();
    let mut client = Client::new(config, state, inventory);
    loop {
        if let Some(request) = client.poll_request(Instant::now()) {
            answer(source, &dest, &mut client, &request);
        } else if let Some(at) = client.poll_timeout() {
            client.handle_timeout(at);
        }
        while let Some(event) = client.poll_event() {
            if let Event::Done(report) = event {
                dest.save(&client).unwrap();
                return report;
            }
            dest.apply(&mut client, &event).unwrap();
            between(&event);
        }
    }
}

/// The status and headers of one of the Source's responses, as HTTP's types.
fn head_of(response: &resourcesync_testkit::source::Response) -> (StatusCode, HeaderMap) {
    let mut headers = HeaderMap::new();
    for (name, value) in &response.headers {
        headers.insert(
            HeaderName::try_from(name.as_str()).unwrap(),
            HeaderValue::try_from(value.as_str()).unwrap(),
        );
    }
    (StatusCode::from_u16(response.status).unwrap(), headers)
}

/// Hands `source`'s response to `request` to the client, through `dest`.
fn answer<I: Inventory>(
    source: &Source,
    dest: &DirectoryDestination,
    client: &mut Client<I>,
    request: &resourcesync_client::Request,
) {
    let keep = dest.keeps_body(request);
    let response = source.respond(request.uri.as_str());
    let (status, headers) = head_of(&response);
    let body = &response.body[..];
    dest.receive(client, request.id, keep, status, &headers, body)
        .unwrap();
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
    assert!(d.join(KEPT).join("inventory.redb").is_file());

    // A reopen finds what the run saved: a checkpoint, and both resources as held.
    let dest = DirectoryDestination::open(&d).unwrap();
    let (state, inventory) = dest.load().unwrap();
    assert!(!state.sets.is_empty());
    assert!(inventory.get(&source.uri("a.txt")).is_some());
    assert!(inventory.get(&source.uri("docs/deep/b.txt")).is_some());
    // Closed, for the next run to open: one destination (and its inventory) at a time
    // holds the directory.
    drop((dest, inventory));

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
    drop(inventory);

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

/// A publication's `.resourcesync/` holds a Source's state under the name of the
/// Destination's, with `sets` in it: a sync into it read it as its own and wrote over
/// it, and the publication could not be built again. It is refused at the open, before
/// anything is written there: the state as it was, no lock, no inventory, no `tmp/`.
#[test]
fn a_publication_is_refused_before_anything_is_written_there() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join(KEPT);
    std::fs::create_dir_all(&kept).unwrap();
    let theirs = br#"{"version":5,"base_url":"http://example.com/","generation":1,"change_lists":[],"change_dump_from":null,"change_dump":[],"sets":{}}"#;
    std::fs::write(kept.join("state.json"), theirs).unwrap();
    match &DirectoryDestination::open(dir.path()) {
        Err(e @ DestinationError::Publication { dir: named, state }) => {
            assert_eq!(named, dir.path());
            assert_eq!(state, &kept.join("state.json"));
            assert!(e.to_string().contains("is a publication"), "{e}");
        }
        Err(other) => panic!("{other:?}"),
        Ok(_) => panic!("a publication opened as a Destination"),
    }
    assert_eq!(std::fs::read(kept.join("state.json")).unwrap(), theirs);
    let mut left: Vec<_> = std::fs::read_dir(&kept)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["state.json"]);

    // A Destination's own state, and one that is no JSON at all, still open (the
    // latter is named at the load, as before).
    std::fs::write(kept.join("state.json"), br#"{"sets":{}}"#).unwrap();
    drop(DirectoryDestination::open(dir.path()).unwrap());
    std::fs::write(kept.join("state.json"), b"not json").unwrap();
    drop(DirectoryDestination::open(dir.path()).unwrap());
}

/// The md5 and sha-256 of `bytes` in hexadecimal, as the journal and the old inventory
/// write them.
fn hex_digests(bytes: &[u8]) -> (String, String) {
    let mut fixity = resourcesync_model::Fixity::new();
    fixity.update(bytes);
    let digests = fixity.finish();
    (digests.md5.to_string(), digests.sha256.to_string())
}

/// A directory holding `a.txt` ("hello") that no saved inventory records, and the line
/// of the journal that says a run placed it; `.resourcesync/` made.
fn placed_but_not_saved(dir: &Path) -> (std::path::PathBuf, String) {
    let kept = dir.join(KEPT);
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(dir.join("a.txt"), b"hello").unwrap();
    let (md5, sha256) = hex_digests(b"hello");
    let line = format!(
        r#"{{"uri":"http://example.com/a.txt","path":"a.txt","held":{{"length":5,"md5":"{md5}","sha256":"{sha256}"}}}}"#
    );
    (kept, line)
}

#[test]
fn a_journal_line_cut_inside_a_character_costs_only_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (kept, line) = placed_but_not_saved(dir.path());
    std::fs::write(dir.path().join("b.txt"), b"abc").unwrap();
    // A whole line, then one a killed run cut inside the two bytes of "é".
    let mut journal = format!("{line}\n").into_bytes();
    journal.extend_from_slice(b"{\"uri\":\"http://example.com/caf\xc3");
    std::fs::write(kept.join("placed.jsonl"), journal).unwrap();
    let (_, inventory) = DirectoryDestination::open(dir.path())
        .unwrap()
        .load()
        .unwrap();
    let held = inventory.get(&"http://example.com/a.txt".parse().unwrap());
    assert_eq!(held.and_then(|h| h.length), Some(5));
}

#[test]
fn a_file_found_at_a_new_resources_name_is_kept_and_its_journal_line_adopts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    std::fs::create_dir_all(&d).unwrap();
    // Someone else's file where the new resource goes.
    std::fs::write(d.join("a.txt"), b"mine").unwrap();
    let source = source(false);
    // The journal as a run killed after the placement would leave it.
    let journal = d.join(KEPT).join("placed.jsonl");
    let mut left = Vec::new();
    let report = run_with(
        &source,
        &d,
        |o| o,
        |_| {
            if let Ok(bytes) = std::fs::read(&journal)
                && !bytes.is_empty()
            {
                left = bytes;
            }
        },
    );
    assert_eq!((report.created, report.conflicts), (1, 1), "{report:?}");
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"mine");
    // The body not placed is not left behind.
    let left_over = std::fs::read_dir(d.join(KEPT).join("tmp")).unwrap().count();
    assert_eq!(left_over, 0, "temporary files left");
    let lines = String::from_utf8_lossy(&left).into_owned();
    assert!(lines.contains(r#""path":"a.txt""#), "{lines}");
    // Replayed after such a kill, nothing claims the file: its bytes are not the listed
    // ones.
    std::fs::write(&journal, &left).unwrap();
    let (_, inventory) = DirectoryDestination::open(&d).unwrap().load().unwrap();
    assert!(inventory.get(&source.uri("a.txt")).is_none());
    assert!(inventory.get(&source.uri("docs/deep/b.txt")).is_some());
    assert_eq!(std::fs::read(d.join("a.txt")).unwrap(), b"mine");
}

#[test]
fn a_record_that_proves_nothing_proves_no_ownership() {
    let dir = tempfile::tempdir().unwrap();
    let (kept, _) = placed_but_not_saved(dir.path());
    // Neither a length nor a digest: any file "holds" it.
    let line = r#"{"uri":"http://example.com/a.txt","path":"a.txt","held":{}}"#;
    std::fs::write(kept.join("placed.jsonl"), format!("{line}\n")).unwrap();
    let (_, inventory) = DirectoryDestination::open(dir.path())
        .unwrap()
        .load()
        .unwrap();
    assert_eq!(
        inventory.get(&"http://example.com/a.txt".parse().unwrap()),
        None
    );
}

#[test]
fn an_empty_state_file_is_no_state_and_the_next_run_a_baseline() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join(KEPT);
    std::fs::create_dir_all(&kept).unwrap();
    // What a power failure can leave after the rename of a state whose bytes had not
    // reached the disk.
    std::fs::write(kept.join("state.json"), b"").unwrap();
    let (state, _) = DirectoryDestination::open(dir.path())
        .unwrap()
        .load()
        .unwrap();
    assert!(state.sets.is_empty());
}

#[test]
fn the_destinations_own_files_as_fifos_links_hard_links_or_directories_are_refused_not_waited_on() {
    for (name, what) in [
        ("state.json", "fifo"),
        ("placed.jsonl", "fifo"),
        ("inventory.redb", "fifo"),
        ("state.json", "link"),
        ("inventory.redb", "hard link"),
        ("inventory.redb", "dir"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join(KEPT);
        std::fs::create_dir_all(&kept).unwrap();
        let secret = dir.path().join("elsewhere");
        // Empty: what a new inventory file is, which redb would make a database of.
        std::fs::write(&secret, b"").unwrap();
        match what {
            "fifo" => rustix::fs::mknodat(
                rustix::fs::CWD,
                kept.join(name),
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o600),
                0,
            )
            .unwrap(),
            "link" => std::os::unix::fs::symlink(&secret, kept.join(name)).unwrap(),
            // Another name of a file outside: written through, it would be changed there.
            "hard link" => std::fs::hard_link(&secret, kept.join(name)).unwrap(),
            _ => std::fs::create_dir(kept.join(name)).unwrap(),
        }
        // On a thread: a FIFO opened for reading waits for a writer that never comes.
        let (tx, rx) = std::sync::mpsc::channel();
        let path = dir.path().to_owned();
        std::thread::spawn(move || {
            let loaded = DirectoryDestination::open(&path).map(|d| d.load().map(drop));
            let _ = tx.send(format!("{loaded:?}"));
        });
        let loaded = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{name} as a {what}: the load hung"));
        let written = std::fs::metadata(&secret).unwrap().len();
        assert_eq!(written, 0, "{name} as a {what}: written through");
        match (name, what) {
            // The journal is replayed when it can be, skipped when it cannot.
            ("placed.jsonl", _) => assert_eq!(loaded, "Ok(Ok(()))"),
            _ => assert!(
                loaded.contains(name) && loaded.contains("Err("),
                "{name} as a {what}: {loaded}"
            ),
        }
    }
}

#[test]
fn an_inventory_saved_whole_by_an_earlier_version_is_carried_over() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join(KEPT);
    std::fs::create_dir_all(&kept).unwrap();
    let (md5, sha256) = hex_digests(b"hello");
    let old = format!(
        r#"{{"http://example.com/a.txt":{{"length":5,"md5":"{md5}","sha256":"{sha256}"}},"http://example.com/b.txt":{{"length":3}}}}"#
    );
    std::fs::write(kept.join("inventory.json"), old).unwrap();
    {
        let (_, inventory) = DirectoryDestination::open(dir.path())
            .unwrap()
            .load()
            .unwrap();
        let a = inventory.get(&"http://example.com/a.txt".parse().unwrap());
        assert_eq!(a.and_then(|h| h.md5).map(|d| d.to_string()), Some(md5));
        assert!(!kept.join("inventory.json").exists());
    }
    // And it stays, the old file gone.
    let (_, inventory) = DirectoryDestination::open(dir.path())
        .unwrap()
        .load()
        .unwrap();
    let b = inventory.get(&"http://example.com/b.txt".parse().unwrap());
    assert_eq!(b.and_then(|h| h.length), Some(3));
}

/// The simulated Source answering in process, as a blocking transport.
struct InProcess<'a>(&'a Source);

impl resourcesync_destination::blocking::Transport for InProcess<'_> {
    fn fetch(
        &mut self,
        request: http::Request<()>,
    ) -> Result<resourcesync_destination::blocking::Response<'_>, String> {
        let answer = self.0.respond(&request.uri().to_string());
        let (status, headers) = head_of(&answer);
        Ok(resourcesync_destination::blocking::Response::new(
            status,
            headers,
            std::io::Cursor::new(answer.body),
        ))
    }
}

/// An application's own inventory (here a map, whose "commit" is counted): what a
/// directory destination needs of one is [`KeptInventory`].
#[derive(Default)]
struct Mine {
    map: resourcesync_client::MemoryInventory,
    overlay: std::collections::HashMap<resourcesync_model::Uri, Option<resourcesync_client::Held>>,
    saves: std::rc::Rc<std::cell::Cell<u32>>,
}

impl Inventory for Mine {
    fn get(&self, uri: &resourcesync_model::Uri) -> Option<resourcesync_client::Held> {
        match self.overlay.get(uri) {
            Some(now) => *now,
            None => self.map.get(uri),
        }
    }

    fn for_each(&self, f: &mut dyn FnMut(&resourcesync_model::Uri, &resourcesync_client::Held)) {
        for (uri, held) in self.map.iter() {
            match self.overlay.get(uri) {
                Some(Some(now)) => f(uri, now),
                Some(None) => {}
                None => f(uri, held),
            }
        }
    }

    fn record(&mut self, uri: resourcesync_model::Uri, held: resourcesync_client::Held) {
        self.overlay.remove(&uri);
        self.map.insert(uri, held);
    }

    fn forget(&mut self, uri: &resourcesync_model::Uri) {
        self.overlay.remove(uri);
        self.map.remove(uri);
    }
}

impl resourcesync_destination::KeptInventory for Mine {
    fn stored(&self, uri: &resourcesync_model::Uri) -> Option<resourcesync_client::Held> {
        self.map.get(uri)
    }

    fn substitute(&mut self, uri: resourcesync_model::Uri, now: Option<resourcesync_client::Held>) {
        self.overlay.insert(uri, now);
    }

    fn save(&self) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        self.saves.set(self.saves.get() + 1);
        Ok(())
    }
}

#[test]
fn a_run_keeps_an_inventory_of_the_callers_own() {
    use resourcesync_destination::{Finished, Run, StopToken, blocking};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let source = source(false);
    let options = SyncOptions::new(source.uri(""), &d);
    let saves = std::rc::Rc::new(std::cell::Cell::new(0));
    let mine = Mine {
        saves: saves.clone(),
        ..Mine::default()
    };
    let run = Run::start_with(&options, StopToken::new(), |c| c, |_| Ok(mine)).unwrap();
    let Finished::Done(synced) = blocking::drive(run, &mut InProcess(&source), &mut ()).unwrap()
    else {
        panic!("a first run is a baseline");
    };
    assert!(synced.report.complete, "{synced}");
    assert_eq!(synced.report.created, 2);
    assert_eq!(std::fs::read(d.join("docs/deep/b.txt")).unwrap(), b"abc");
    // The directory's own inventory file was never made: the run kept the caller's.
    assert!(!d.join(KEPT).join("inventory.redb").exists());
    assert!(d.join(KEPT).join("state.json").is_file());
    // Saved before the state, at the end at least.
    assert!(saves.get() >= 1);
}

/// The blocking transport checks every address a name resolves to against the client's
/// policy: a name that resolves to loopback is refused for a Source that is not there
/// (DNS rebinding, a listed internal host), and allowed for one that is.
#[cfg(feature = "ureq")]
#[test]
fn the_ureq_transport_refuses_a_name_that_resolves_where_the_source_is_not() {
    use resourcesync_destination::blocking::{Transport, UreqTransport};
    let served = resourcesync_testkit::served::Served::start(|s| {
        resourcesync_testkit::driver::populate(s, 1)
    });
    let by_name = served.base.replace("127.0.0.1", "localhost");
    let request = || {
        http::Request::get(format!("{by_name}r/0.txt"))
            .body(())
            .unwrap()
    };
    let config = |source: &str| {
        resourcesync_client::Config::new(source.parse().unwrap(), resourcesync_client::Mode::Audit)
            .unwrap()
    };
    let mut transport = UreqTransport::new();
    transport.prepare(&config("http://example.com/"));
    let refused = transport.fetch(request()).map(|r| r.status).unwrap_err();
    assert!(refused.contains("loopback"), "{refused}");
    // A Source on 127.0.0.1: loopback is where it is.
    transport.prepare(&config(&served.base));
    let status = transport.fetch(request()).map(|r| r.status).unwrap();
    assert_eq!(status, StatusCode::OK);
}

/// The destination places files through a handle on each directory it checked: a link
/// put in a directory's place during the run (after a file was placed in it) is never
/// followed, and nothing lands where it leads.
#[cfg(unix)]
#[test]
fn a_link_swapped_in_for_a_directory_during_the_run_is_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let mut source = Source::new();
    for i in 0..20 {
        source.put(&format!("docs/{i}.txt"), format!("file {i}").as_bytes());
    }
    source.tick(10);
    source.publish();
    let mut swapped = false;
    let report = run_with(
        &source,
        &d,
        |o| o,
        |event| {
            if !swapped && matches!(event, Event::Store(_)) && d.join("docs").is_dir() {
                std::fs::rename(d.join("docs"), d.join("docs.moved")).unwrap();
                std::os::unix::fs::symlink(&outside, d.join("docs")).unwrap();
                swapped = true;
            }
        },
    );
    assert!(swapped);
    assert_eq!(report.created, 20, "{report:?}");
    assert_eq!(
        std::fs::read_dir(&outside).unwrap().count(),
        0,
        "written through the link"
    );
    // Every file went to the directory the run checked, wherever it now is in DIR.
    assert_eq!(std::fs::read_dir(d.join("docs.moved")).unwrap().count(), 20);
}

/// A `between` for [`run_with`]: after the first file placed, `docs/` is removed and
/// made again holding the other of `a.txt` and `b.txt`, with the bytes `restored` gives
/// for its name, as a backup put back would be; `other` says which, once done.
fn restore_docs<'a>(
    d: &'a Path,
    other: &'a mut Option<&'static str>,
    restored: impl Fn(&str) -> Vec<u8> + 'a,
) -> impl FnMut(&Event) + 'a {
    move |event| {
        if let Event::Store(store) = event
            && other.is_none()
        {
            let name = match store.change.path.as_str() {
                "docs/a.txt" => "b.txt",
                _ => "a.txt",
            };
            std::fs::remove_dir_all(d.join("docs")).unwrap();
            std::fs::create_dir(d.join("docs")).unwrap();
            std::fs::write(d.join("docs").join(name), restored(name)).unwrap();
            *other = Some(name);
        }
    }
}

#[test]
fn a_file_restored_into_a_directory_removed_during_the_run_is_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let mut source = Source::new();
    source.put("docs/a.txt", b"listed a");
    source.put("docs/b.txt", b"listed b");
    source.tick(10);
    source.publish();
    // After the first of the two is placed, someone removes `docs/` and restores it from
    // a backup holding their own version of the other: the run's handle on the old
    // directory is stale, and the directory is made again, over the restored file.
    let mut other = None;
    let restore = restore_docs(&d, &mut other, |_| b"restored".to_vec());
    let report = run_with(&source, &d, |o| o, restore);
    let other = other.expect("a resource was placed");
    assert_eq!((report.created, report.conflicts), (1, 1), "{report:?}");
    assert_eq!(
        std::fs::read(d.join("docs").join(other)).unwrap(),
        b"restored"
    );
}

#[test]
fn the_syncs_own_file_restored_into_a_directory_removed_during_the_run_is_updated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let mut source = Source::new();
    source.put("docs/a.txt", b"a, first");
    source.put("docs/b.txt", b"b, first");
    source.tick(10);
    source.publish();
    let report = run(&source, &d, |o| o);
    assert_eq!(report.created, 2, "{report:?}");
    source.tick(5);
    source.put("docs/a.txt", b"a, second");
    source.put("docs/b.txt", b"b, second");
    source.tick(5);
    source.publish();
    // After the first update, `docs/` is removed and put back from a backup: the other
    // file as the sync stored it. Decided in the directory as it is now, it is the
    // sync's own file, unchanged, and is updated.
    let mut other = None;
    let first = |name: &str| format!("{}, first", &name[..1]).into_bytes();
    let report = run_with(&source, &d, |o| o, restore_docs(&d, &mut other, first));
    let other = other.expect("a resource was placed");
    assert_eq!((report.updated, report.conflicts), (2, 0), "{report:?}");
    let expected = format!("{}, second", &other[..1]);
    assert_eq!(
        std::fs::read(d.join("docs").join(other)).unwrap(),
        expected.as_bytes()
    );
}

/// A run of the client into `dir` as a driver that answers every request it may make
/// before it carries out what they brought: each batch of events is prepared
/// ([`DirectoryDestination::prepare`]) and then applied in order, `before` called
/// between the two. Returns the report and the most placements one batch held.
fn run_in_batches(
    source: &Source,
    dir: &Path,
    mut before: impl FnMut(&mut DirectoryDestination, &Client<DiskInventory>, &[Event]),
) -> (Report, usize) {
    let options = SyncOptions::new(source.uri(""), dir);
    let mut dest = DirectoryDestination::open(dir).unwrap();
    let (state, inventory) = dest.load().unwrap();
    let config = options.config(&dest, &state).unwrap();
    let mut client = Client::new(config, state, inventory);
    let mut most = 0;
    loop {
        while let Some(request) = client.poll_request(Instant::now()) {
            answer(source, &dest, &mut client, &request);
        }
        let batch: Vec<Event> = std::iter::from_fn(|| client.poll_event()).collect();
        if batch.is_empty()
            && let Some(at) = client.poll_timeout()
        {
            client.handle_timeout(at);
        }
        let stores = batch
            .iter()
            .filter(|e| matches!(e, Event::Store(_)))
            .count();
        most = most.max(stores);
        dest.prepare(&batch);
        before(&mut dest, &client, &batch);
        for event in &batch {
            if let Event::Done(report) = event {
                dest.save(&client).unwrap();
                return (report.clone(), most);
            }
            dest.apply(&mut client, event).unwrap();
        }
    }
}

/// A Source of `n` small files under `docs/`.
fn many(n: usize) -> Source {
    let mut source = Source::new();
    for i in 0..n {
        source.put(&format!("docs/{i}.txt"), format!("body {i}").as_bytes());
    }
    source.tick(10);
    source.publish();
    source
}

/// The paths of the bodies `batch` places.
fn stored_paths(batch: &[Event]) -> Vec<String> {
    batch
        .iter()
        .filter_map(|e| match e {
            Event::Store(store) => Some(store.change.path.as_str().to_owned()),
            _ => None,
        })
        .collect()
}

/// The paths the journal's lines name, in order.
fn journaled_paths(dir: &Path) -> Vec<String> {
    let journal = std::fs::read_to_string(dir.join(KEPT).join("placed.jsonl")).unwrap_or_default();
    journal
        .lines()
        .filter(|line| !line.is_empty())
        .map(|line| {
            let line: serde_json::Value = serde_json::from_str(line).unwrap();
            line["path"].as_str().unwrap().to_owned()
        })
        .collect()
}

/// As a run killed before it saved leaves `dir`: no saved inventory, the journal as
/// `journal`. The next open must record every one of `paths` from the journal's lines.
fn assert_recorded_after_kill(dir: &Path, source: &Source, journal: Vec<u8>, paths: &[String]) {
    std::fs::remove_file(dir.join(KEPT).join("inventory.redb")).unwrap();
    std::fs::write(dir.join(KEPT).join("placed.jsonl"), journal).unwrap();
    let (_, inventory) = DirectoryDestination::open(dir).unwrap().load().unwrap();
    for path in paths {
        assert!(
            inventory.get(&source.uri(path)).is_some(),
            "{path} placed but not recorded"
        );
    }
}

#[test]
fn a_prepared_batch_is_journaled_before_any_of_its_files_is_placed_and_a_kill_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let source = many(6);
    let mut checked = Vec::new();
    let mut journal_at_kill = Vec::new();
    let (report, most) = run_in_batches(&source, &d, |_, _, batch| {
        let stores = stored_paths(batch);
        if stores.len() < 2 {
            return;
        }
        // Every line of the batch is written, and none of its files is there yet.
        let journaled = journaled_paths(&d);
        for path in &stores {
            assert!(
                journaled.contains(path),
                "{path} not journaled: {journaled:?}"
            );
            assert!(
                !d.join(path).exists(),
                "{path} placed before its batch was applied"
            );
        }
        journal_at_kill = std::fs::read(d.join(KEPT).join("placed.jsonl")).unwrap();
        checked = stores;
    });
    assert_eq!(report.created, 6, "{report:?}");
    assert!(
        most >= 2 && !checked.is_empty(),
        "no batch of two placements: {most}"
    );
    // As a run killed after that batch's renames, before it saved, leaves it: the
    // journal as it was then, no saved inventory. The next open records every file
    // of the batch from the lines written ahead.
    assert_recorded_after_kill(&d, &source, journal_at_kill, &checked);
}

#[test]
fn a_save_between_prepare_and_apply_leaves_no_placement_unjournaled() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let source = many(6);
    let mut saved_over = Vec::new();
    let mut journal_after = Vec::new();
    let mut pending: Option<Vec<String>> = None;
    let (report, _) = run_in_batches(&source, &d, |dest, client, batch| {
        // The journal as the previous batch's applies left it.
        if let Some(stores) = pending.take() {
            journal_after = journaled_paths(&d);
            saved_over = stores;
        }
        let stores = stored_paths(batch);
        if stores.len() >= 2 && saved_over.is_empty() {
            // A save empties the journal after the lines were written ahead: the
            // placements must write theirs again.
            dest.save(client).unwrap();
            assert!(journaled_paths(&d).is_empty());
            pending = Some(stores);
        }
    });
    assert_eq!(report.created, 6, "{report:?}");
    assert!(!saved_over.is_empty(), "no batch of two placements");
    for path in &saved_over {
        assert!(
            journal_after.contains(path),
            "{path} placed with no line: {journal_after:?}"
        );
    }
}

#[test]
fn a_journal_line_an_earlier_run_left_cut_short_costs_only_itself_not_the_next_runs_first() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    std::fs::create_dir_all(d.join(KEPT)).unwrap();
    // What a run stopped in the middle of a write (a full disk, a kill) leaves: a line
    // with no end.
    let cut = br#"{"uri":"http://example.com/gone.txt","path":"gone.txt","he"#;
    std::fs::write(d.join(KEPT).join("placed.jsonl"), cut).unwrap();
    let source = many(6);
    // The journal and the files placed, as a kill before this batch would leave them.
    let mut at_kill = (Vec::new(), Vec::new());
    let (report, _) = run_in_batches(&source, &d, |_, _, _| {
        let placed: Vec<String> = (0..6)
            .map(|i| format!("docs/{i}.txt"))
            .filter(|path| d.join(path).is_file())
            .collect();
        if !placed.is_empty() {
            let journal = std::fs::read(d.join(KEPT).join("placed.jsonl")).unwrap();
            at_kill = (journal, placed);
        }
    });
    assert_eq!(report.created, 6, "{report:?}");
    let (journal, placed) = at_kill;
    assert!(journal.starts_with(cut), "the cut line is gone");
    assert!(!placed.is_empty(), "nothing placed before the run's end");
    assert_recorded_after_kill(&d, &source, journal, &placed);
}

/// A run that cannot start, started through the library's `Run`: refused before DIR is
/// opened, so nothing is made there (not DIR, not its `.resourcesync/`); the blocking and
/// async drivers ask the same before they open it.
#[test]
fn a_run_that_cannot_start_opens_nothing() {
    use resourcesync_destination::{Run, StopToken, SyncError};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("dest");
    let options = SyncOptions::new("ftp://127.0.0.1/".parse().unwrap(), &d);
    let started = Run::start(&options, StopToken::new(), |c| c);
    assert!(
        matches!(started, Err(SyncError::Config(_))),
        "{:?}",
        started.err()
    );
    assert!(!d.exists());
    let mut transport = resourcesync_destination::blocking::UreqTransport::new();
    let synced = resourcesync_destination::blocking::sync(
        &options,
        &mut transport,
        &StopToken::new(),
        &mut (),
    );
    assert!(matches!(synced, Err(SyncError::Config(_))));
    assert!(!d.exists());
}
