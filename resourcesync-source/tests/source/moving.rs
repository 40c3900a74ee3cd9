//! A Destination (the client, in process) against the Publisher on every
//! [`ResourceListPolicy`]: between two Resource Lists the Change Lists carry the Source
//! on, and a new Destination's baseline must catch up through them, not fail on every
//! resource changed since the Resource List.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use http::{HeaderMap, StatusCode};
use resourcesync_client::{
    Client, Config, Event, MemoryInventory, Mode, ProblemKind, Purpose, Report, State,
};
use resourcesync_model::{Entry, Fixity, W3cDateTime};
use resourcesync_source::{
    MemoryStore, PublishOptions, Publisher, ResourceEvent, ResourceListPolicy, Store,
};

const BASE: &str = "http://example.com/";

fn t(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + seconds)
}

/// The application: its resources by URI, and the Publisher of its publication.
struct App {
    content: BTreeMap<String, Vec<u8>>,
    publisher: Publisher<MemoryStore>,
}

impl App {
    fn entry(&self, n: u32, at: u64) -> Entry {
        let uri = format!("{BASE}items/{n}");
        let bytes = &self.content[&uri];
        let mut fixity = Fixity::new();
        fixity.update(bytes);
        let digests = fixity.finish();
        Entry::new(uri.parse().unwrap())
            .with_lastmod(W3cDateTime::from(t(at)))
            .with_length(digests.length)
            .with_hash(digests.hashes())
    }

    /// Item `n` holds `text`; not published.
    fn edit(&mut self, n: u32, text: &str) {
        self.content
            .insert(format!("{BASE}items/{n}"), text.as_bytes().to_vec());
    }

    /// Item `n` holds `text` from `at`, published.
    fn put(&mut self, n: u32, text: &str, at: u64) {
        let uri = format!("{BASE}items/{n}");
        let created = !self.content.contains_key(&uri);
        self.edit(n, text);
        let entry = self.entry(n, at);
        let datetime = W3cDateTime::from(t(at));
        let event = match created {
            true => ResourceEvent::created(entry, datetime),
            false => ResourceEvent::updated(entry, datetime),
        };
        self.publisher.publish_changes([event], t(at)).unwrap();
    }

    fn delete(&mut self, n: u32, at: u64) {
        let uri = format!("{BASE}items/{n}");
        self.content.remove(&uri);
        let event = ResourceEvent::deleted(uri.parse().unwrap(), W3cDateTime::from(t(at)));
        self.publisher.publish_changes([event], t(at)).unwrap();
    }

    /// What a GET of `uri` answers: a document of the publication, or a resource.
    fn get(&self, uri: &str) -> Option<Vec<u8>> {
        let path = uri.strip_prefix(BASE)?;
        match self.publisher.store().read(path).unwrap() {
            Some(bytes) => Some(bytes),
            None => self.content.get(uri).cloned(),
        }
    }
}

/// A Destination in memory: its files by path, inventory and state.
#[derive(Default)]
struct Destination {
    files: BTreeMap<String, Vec<u8>>,
    inventory: MemoryInventory,
    state: State,
}

impl Destination {
    fn assert_holds(&self, app: &App) {
        let expected: BTreeMap<String, Vec<u8>> = app
            .content
            .iter()
            .map(|(uri, bytes)| (uri.strip_prefix(BASE).unwrap().to_owned(), bytes.clone()))
            .collect();
        assert_eq!(self.files, expected);
    }
}

/// One run of the client from the Source's base, every request answered at once.
fn sync(app: &App, dest: &mut Destination, mode: Mode) -> (Report, Vec<ProblemKind>) {
    let config = Config::new(BASE.parse().unwrap(), mode).unwrap();
    let inventory = std::mem::take(&mut dest.inventory);
    let mut client = Client::new(config, dest.state.clone(), inventory);
    let now = Instant::now();
    let mut bodies: BTreeMap<resourcesync_client::RequestId, Vec<u8>> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut report = None;
    while report.is_none() {
        // Every answer comes at once: nothing to wait for (no retry, no timeout).
        let request = client
            .poll_request(now)
            .unwrap_or_else(|| panic!("the client waits and is not done: {client:?}"));
        let keep = matches!(request.purpose, Purpose::Resource { .. });
        match app.get(request.uri.as_str()) {
            Some(body) => {
                client
                    .handle_response(request.id, StatusCode::OK, &HeaderMap::new(), now)
                    .unwrap();
                client.handle_body(request.id, &body, now).unwrap();
                if keep {
                    bodies.insert(request.id, body);
                }
            }
            None => client
                .handle_response(request.id, StatusCode::NOT_FOUND, &HeaderMap::new(), now)
                .unwrap(),
        }
        client.handle_end(request.id, now).unwrap();
        while let Some(event) = client.poll_event() {
            match event {
                Event::Store(store) => {
                    let body = bodies.remove(&store.request).unwrap();
                    dest.files
                        .insert(store.change.path.as_str().to_owned(), body);
                    client.applied(store.change.id, None, now).unwrap();
                }
                Event::Delete(change) => {
                    dest.files.remove(change.path.as_str());
                    client.applied(change.id, None, now).unwrap();
                }
                Event::Discard { request, .. } => {
                    bodies.remove(&request);
                }
                Event::Problem(problem) => problems.push(problem.kind),
                Event::Done(done) => report = Some(done),
                _ => {}
            }
        }
    }
    let (state, inventory) = client.into_parts();
    dest.state = state;
    dest.inventory = inventory;
    (report.unwrap_or_default(), problems)
}

const BASELINE: Mode = Mode::Baseline { prefer_dump: false };

#[test]
fn a_new_destination_catches_up_with_the_publisher_on_every_resource_list_policy() {
    for policy in [
        ResourceListPolicy::EveryRun,
        ResourceListPolicy::EveryChanges(1),
        ResourceListPolicy::EveryChanges(3),
        // The default: the Resource List stays the first one throughout.
        ResourceListPolicy::EveryChanges(10_000),
        ResourceListPolicy::Period(Duration::from_secs(25)),
    ] {
        let options = PublishOptions::new(BASE.parse().unwrap()).with_resource_list(policy);
        let mut app = App {
            content: BTreeMap::new(),
            publisher: Publisher::new(MemoryStore::new(), options),
        };
        for n in 0..8 {
            app.edit(n, &format!("item {n}"));
        }
        let records: Vec<Entry> = (0..8).map(|n| app.entry(n, 0)).collect();
        app.publisher.publish_snapshot(records, t(0)).unwrap();
        // The Source moves on, one run of the Publisher per change.
        app.put(1, "item 1, updated", 10);
        app.delete(2, 20);
        app.put(8, "item 8, created", 30);
        app.put(3, "item 3, updated", 40);
        app.put(1, "item 1, updated again", 50);

        let mut dest = Destination::default();
        let (report, problems) = sync(&app, &mut dest, BASELINE);
        assert!(report.complete, "{policy:?}: {problems:?}");
        assert_eq!(report.failed, 0, "{policy:?}");
        dest.assert_holds(&app);
        assert!(!dest.state.sets.is_empty(), "{policy:?}: a checkpoint");

        // Edited after everything published: said, the checkpoint saved all the same;
        // the next run, once the Publisher lists the change, takes it.
        app.edit(4, "item 4, not yet published");
        let mut late = Destination::default();
        let (report, problems) = sync(&app, &mut late, BASELINE);
        assert!(!report.complete, "{policy:?}");
        assert!(
            matches!(problems[..], [ProblemKind::ChangedSinceListed { .. }]),
            "{policy:?}: {problems:?}"
        );
        assert!(!late.state.sets.is_empty(), "{policy:?}: a checkpoint");
        app.put(4, "item 4, published", 60);
        for dest in [&mut dest, &mut late] {
            let (report, problems) = sync(&app, dest, Mode::Incremental);
            assert!(report.complete, "{policy:?}: {problems:?}");
            dest.assert_holds(&app);
            // And quiet after; an audit finds it in sync, whatever the Resource List's
            // age (the changes since it count).
            let (report, _) = sync(&app, dest, Mode::Incremental);
            assert!(report.complete, "{policy:?}");
            assert_eq!((report.created, report.updated, report.deleted), (0, 0, 0));
            let (report, problems) = sync(&app, dest, Mode::Audit);
            assert_eq!(
                report.in_sync,
                Some(true),
                "{policy:?}: {report:?} {problems:?}"
            );
        }
    }
}
