//! The run's policy when a save finds the Destination held by another run (a bucket's
//! prefix whose lease read back as another's: `DestinationError::Busy`): the run ends
//! with that error, whichever save met it, rather than notice it and go on. Nothing of
//! this run's is there to save over, and it never held the Destination. And the run's
//! part of the contract with a destination that prepares (`Destination::prepare`):
//! every placement is shown to it before it is applied.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use resourcesync_client::local_path::PathMapper;
use resourcesync_client::{Client, Config, Event, Request, RequestId, State};
use resourcesync_destination::asynchronous::{self, AsyncStop};
use resourcesync_destination::gate::Gate;
use resourcesync_destination::{
    Bodies, Destination, DestinationError, DirectoryDestination, DiskInventory, KeptInventory,
    SyncError, SyncOptions, Synced, Verified,
};
use resourcesync_testkit::driver::populate;
use resourcesync_testkit::served::{Fault, Served};

/// A directory whose first `refused` saves the run asks for are refused as another run's
/// (the rest are the directory's own), counting them. A Checkpoint's save, which the
/// directory makes inside `apply`, is its own, neither refused nor counted: the run's
/// saves (on the way, and the last) are what these tests are of; a refusal from `apply`
/// has its own test (`objects::tests`). It passes on what the run prepares, noting the
/// placements it was shown, and counts those applied that it was not.
struct Refusing {
    inner: DirectoryDestination,
    refused: usize,
    saves: Arc<AtomicUsize>,
    prepared: HashSet<RequestId>,
    unprepared: Arc<AtomicUsize>,
}

impl Destination for Refusing {
    fn location(&self) -> &Path {
        Destination::location(&self.inner)
    }
    fn paths(&self, config: &Config) -> PathMapper {
        Destination::paths(&self.inner, config)
    }
    fn load_state(&self) -> Result<State, DestinationError> {
        Destination::load_state(&self.inner)
    }
    fn open_inventory(&self) -> Result<DiskInventory, DestinationError> {
        Destination::open_inventory(&self.inner)
    }
    fn replay<I: KeptInventory>(&self, config: &Config, inventory: &mut I) {
        Destination::replay(&self.inner, config, inventory);
    }
    fn join_shards<I: KeptInventory>(
        &mut self,
        options: &SyncOptions,
        inventory: &mut I,
    ) -> Result<(), DestinationError> {
        Destination::join_shards(&mut self.inner, options, inventory)
    }
    fn verify<I: KeptInventory>(
        &mut self,
        config: &Config,
        inventory: &mut I,
    ) -> Result<Verified, DestinationError> {
        Destination::verify(&mut self.inner, config, inventory)
    }
    fn prepare(&mut self, events: &[Event]) {
        for event in events {
            if let Event::Store(store) = event {
                self.prepared.insert(store.request);
            }
        }
        Destination::prepare(&mut self.inner, events);
    }
    fn apply<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        event: &Event,
    ) -> Result<(), DestinationError> {
        if let Event::Store(store) = event
            && !self.prepared.remove(&store.request)
        {
            self.unprepared.fetch_add(1, Ordering::SeqCst);
        }
        Destination::apply(&mut self.inner, client, event)
    }
    fn settle<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
    ) -> Result<bool, DestinationError> {
        Destination::settle(&mut self.inner, client)
    }
    fn settle_all<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
    ) -> Result<bool, DestinationError> {
        Destination::settle_all(&mut self.inner, client)
    }
    fn on_settled(&mut self, wake: Arc<dyn Fn() + Send + Sync>) {
        Destination::on_settled(&mut self.inner, wake);
    }
    fn save<I: KeptInventory>(&mut self, client: &Client<I>) -> Result<(), DestinationError> {
        if self.saves.fetch_add(1, Ordering::SeqCst) < self.refused {
            return Err(DestinationError::Busy {
                dir: Destination::location(&self.inner).to_owned(),
                lock: Destination::location(&self.inner).join("lock"),
            });
        }
        Destination::save(&mut self.inner, client)
    }
    fn keeps_body(&self, request: &Request) -> bool {
        Destination::keeps_body(&self.inner, request)
    }
    fn bodies(&self) -> Bodies {
        Destination::bodies(&self.inner)
    }
    fn keeps_in_memory(&self, request: &Request) -> bool {
        Destination::keeps_in_memory(&self.inner, request)
    }
}

/// What a sync through [`Refusing`] came to.
struct Ran {
    synced: Result<Synced, SyncError>,
    /// The saves it asked for.
    saves: usize,
    /// The placements applied that were not prepared first.
    unprepared: usize,
}

/// A sync of `served` into a new directory through [`Refusing`] (`refused` saves
/// refused), with `concurrency` requests at once.
fn sync(served: &Served, refused: usize, concurrency: usize) -> Ran {
    let dir = tempfile::tempdir().unwrap();
    let options = SyncOptions::new(served.base.parse().unwrap(), dir.path().join("d"))
        .with_concurrency(concurrency);
    let saves = Arc::new(AtomicUsize::new(0));
    let unprepared = Arc::new(AtomicUsize::new(0));
    let (counted, not_shown) = (saves.clone(), unprepared.clone());
    let open = move |options: &SyncOptions| {
        let inner = DirectoryDestination::open(&options.dir)?;
        Ok(Refusing {
            inner,
            refused,
            saves: counted.clone(),
            prepared: HashSet::new(),
            unprepared: not_shown.clone(),
        })
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let synced = runtime.block_on(async {
        let (gate, stop) = (Gate::unlimited(), AsyncStop::new());
        asynchronous::sync_into(&options, open, &gate, &stop, &mut ()).await
    });
    Ran {
        synced,
        saves: saves.load(Ordering::SeqCst),
        unprepared: unprepared.load(Ordering::SeqCst),
    }
}

fn is_busy(synced: &Result<Synced, SyncError>) -> bool {
    matches!(
        synced,
        Err(SyncError::Destination(DestinationError::Busy { .. }))
    )
}

/// The last save refused: the run ends Busy, not "cannot save" and incomplete.
#[test]
fn a_run_whose_last_save_is_refused_as_another_s_ends_busy() {
    let served = Served::start(|s| populate(s, 3));
    let started = std::time::Instant::now();
    let Ran { synced, saves, .. } = sync(&served, usize::MAX, 4);
    // Under the 5 s of a save on the way: the one refused was the last.
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(is_busy(&synced), "{synced:?}");
    assert_eq!(saves, 1, "{synced:?}");
}

/// A save made as the run goes (every 5 s while work settles) refused: the run ends
/// there, Busy, rather than notice it, go on and end complete on a later save.
#[test]
fn a_run_whose_save_on_the_way_is_refused_as_another_s_ends_busy_there() {
    let served = Served::start(|s| populate(s, 8));
    // One at a time, each a second late: the first save on the way comes at 5 s, with
    // resources still to fetch.
    served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(1000)));
    let Ran { synced, saves, .. } = sync(&served, 1, 1);
    assert!(is_busy(&synced), "{synced:?}");
    assert_eq!(saves, 1, "{synced:?}");
    // Ended there: not every resource was asked for (the last save would have been).
    let asked = served
        .starts()
        .iter()
        .filter(|(_, path)| path.starts_with("/r/"))
        .count();
    assert!((1..8).contains(&asked), "{asked} resources asked for");
}

/// Every placement the run applies was shown to the destination first, in the batch
/// `Run::settle` prepares (the directory writes a batch's journal lines in one write).
#[test]
fn every_placement_a_run_applies_was_prepared_first() {
    let served = Served::start(|s| populate(s, 40));
    let Ran {
        synced, unprepared, ..
    } = sync(&served, 0, 8);
    let synced = synced.unwrap();
    // populate's 40 resources and its docs/index.html: every one listed, stored.
    assert!(synced.report.created >= 40, "{synced:?}");
    assert_eq!(synced.report.created, synced.report.listed, "{synced:?}");
    assert_eq!(unprepared, 0, "{synced:?}");
}
