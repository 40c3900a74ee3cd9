//! The async driver's requests on the wire: as many at once as the options allow,
//! whichever runtime the caller runs it on.

use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{self, AsyncStop};
use resourcesync_destination::gate::Gate;
use resourcesync_testkit::driver::populate;
use resourcesync_testkit::served::{Fault, Served};

/// Syncs a Source of twelve resources, each answered 300 ms late, with four requests
/// allowed in flight, on `runtime`: how many the server saw at once.
fn most_at_once(runtime: tokio::runtime::Runtime) -> usize {
    let served = Served::start(|s| populate(s, 12));
    served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(300)));
    let dir = tempfile::tempdir().unwrap();
    let options =
        SyncOptions::new(served.base.parse().unwrap(), dir.path().join("d")).with_concurrency(4);
    let synced = runtime
        .block_on(asynchronous::sync(&options, &AsyncStop::new(), &mut ()))
        .unwrap();
    assert_eq!(synced.exit_status(), 0, "{synced}");
    served.max_in_flight()
}

#[test]
fn as_many_requests_are_on_the_wire_as_allowed_on_one_thread() {
    // On one thread the workers run only when the run waits: each request queued must
    // still find a worker of its own.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(most_at_once(runtime), 4);
}

#[test]
fn as_many_requests_are_on_the_wire_as_allowed_on_many_threads() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(most_at_once(runtime), 4);
}

/// How many of a listing's entries were read before the first of its resources was
/// stored, in a sync of a Resource List Index of 7 parts (6,000 entries, 2 MB in all:
/// sent in a few milliseconds, parsed in tens, a second and more unoptimized) through
/// `gate`.
fn read_before_the_first_store(gate: &Gate) -> usize {
    use resourcesync_client::Event;
    use resourcesync_destination::Observer;
    /// How many Changes (one a listed entry) came before the first Store, and in all.
    #[derive(Default)]
    struct Order {
        changes: usize,
        before_first_store: Option<usize>,
    }
    impl Observer for Order {
        fn event(&mut self, event: &Event) {
            match event {
                Event::Change(_) => self.changes += 1,
                Event::Store(_) if self.before_first_store.is_none() => {
                    self.before_first_store = Some(self.changes)
                }
                _ => {}
            }
        }
    }
    let n = 6000;
    let served = Served::start(|s| populate(s, n));
    let dir = tempfile::tempdir().unwrap();
    let options =
        SyncOptions::new(served.base.parse().unwrap(), dir.path().join("d")).with_concurrency(16);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let gate = gate.clone();
    let (synced, order) = runtime
        .block_on(asynchronous::spawned(async move {
            let mut order = Order::default();
            let stop = AsyncStop::new();
            let synced = asynchronous::sync_with_gate(&options, &gate, &stop, &mut order).await;
            (synced, order)
        }))
        .unwrap();
    let synced = synced.unwrap();
    assert_eq!(synced.exit_status(), 0, "{synced}");
    // The listing's entries and the index page.
    assert_eq!(order.changes, n + 1);
    order.before_first_store.unwrap()
}

/// The resources a listing names are fetched and stored while the rest of it is still
/// parsed: the listing's pieces do not queue ahead of the responses to the requests it
/// made (a listing is parsed slower than a Source on the same machine sends it). Where
/// they did, the first resource was stored after 3,154 to 6,001 (every one) of the 6,000
/// entries were read; 105 to 246 since.
#[test]
fn resources_are_stored_while_their_listing_is_still_parsed() {
    let first = read_before_the_first_store(&Gate::unlimited());
    assert!(
        first < 1500,
        "the first resource was stored after {first} entries were read"
    );
}

/// As above, in a harvest's run, whose requests to a host pass its gate four at a time: a
/// listing's part gives its place back once read off its connection, not once parsed.
/// Where its pieces waited, 8 at a time, for the parser, the index's parts held the
/// host's four places until they were parsed and no resource could be asked for: the
/// first stored after 4,069 to 4,634 entries were read; 104 to 386 since.
#[test]
fn a_gated_run_s_listing_parts_give_their_places_back_before_they_are_parsed() {
    let first = read_before_the_first_store(&Gate::new(64, 4));
    assert!(
        first < 1500,
        "the first resource was stored after {first} entries were read"
    );
}
