//! The async driver's requests on the wire: as many at once as the options allow,
//! whichever runtime the caller runs it on.

use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{self, AsyncStop};
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
