//! What a [`Run`](crate::Run) needs of the place the resources go to: a directory
//! ([`DirectoryDestination`]) or a bucket's prefix (`ObjectDestination`, feature
//! `object-store`). The run policy is written once, over this trait; each destination
//! keeps the promises in its own terms (files or objects): nothing written outside it,
//! nothing replaced or deleted that no sync stored, nothing half-written after a stop or
//! a kill.

use std::path::Path;
use std::sync::Arc;

use resourcesync_client::local_path::PathMapper;
use resourcesync_client::{Client, Config, Event, Request, State};

use crate::directory::{Bodies, DestinationError, DirectoryDestination, Verified};
use crate::inventory::{DiskInventory, KeptInventory};
use crate::options::SyncOptions;

/// The place a [`Run`](crate::Run) keeps in step with a Source: where the bodies wait
/// while they arrive, how the client's decisions are carried out, what is kept between
/// runs. Implemented by [`DirectoryDestination`] and, with the feature `object-store`,
/// `objects::ObjectDestination`.
pub trait Destination {
    /// Where the resources go, for messages: a directory's path, a store's URL.
    fn location(&self) -> &Path;

    /// The config's path mapper for this destination's rules of names, with its own
    /// kept name out of every Source's reach: give it to [`Config::with_paths`].
    fn paths(&self, config: &Config) -> PathMapper;

    /// The state the last run saved, or a new one for a first run.
    fn load_state(&self) -> Result<State, DestinationError>;

    /// The destination's own inventory of what the sync stored, as the last run saved it
    /// (a [`Run`](crate::Run) may be given another, [`Run::start_on`](crate::Run::start_on)).
    fn open_inventory(&self) -> Result<DiskInventory, DestinationError>;

    /// Records in `inventory` what a run stopped before it saved had stored, each only if
    /// it still holds those bytes (and, for a shard, only its own: `config` says which).
    /// Nothing by default.
    fn replay<I: KeptInventory>(&self, config: &Config, inventory: &mut I) {
        let _ = (config, inventory);
    }

    /// Before the comparison of an audit or a baseline: what other runs keeping the same
    /// place (shards) stored, known to `inventory` or to this destination, as `options`
    /// need. Nothing by default.
    fn join_shards<I: KeptInventory>(
        &mut self,
        options: &SyncOptions,
        inventory: &mut I,
    ) -> Result<(), DestinationError> {
        let _ = (options, inventory);
        Ok(())
    }

    /// Compares what the inventory says the sync stored with what is there, for an audit
    /// or a baseline (see [`DirectoryDestination::verify`]).
    fn verify<I: KeptInventory>(
        &mut self,
        config: &Config,
        inventory: &mut I,
    ) -> Result<Verified, DestinationError>;

    /// Told of `events`, polled from the client and about to be given to
    /// [`apply`](Self::apply) in this order, so that what their applies share is done
    /// once for all (a directory writes the journal's lines of its placements in one
    /// write). An event applied without it is carried out the same. Nothing by default.
    fn prepare(&mut self, events: &[Event]) {
        let _ = events;
    }

    /// Carries out what the client decided in `event`, and confirms it to the client, at
    /// once or, for work that goes on after the call (an upload), from
    /// [`settle`](Self::settle) once it is done.
    ///
    /// A change that cannot be carried out is confirmed as failed, not returned as an
    /// error: a run waits for every change it gave. The errors are the destination's
    /// as a whole: [`DestinationError::Busy`] (another run holds it) ends the run, a
    /// misuse is the caller's bug, and any other (a save at a checkpoint that failed) is
    /// a notice, the run going on.
    fn apply<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        event: &Event,
    ) -> Result<(), DestinationError>;

    /// Confirms to the client the work [`apply`](Self::apply) started that has ended
    /// since; true if there was any. Nothing by default: a directory confirms at once.
    fn settle<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
    ) -> Result<bool, DestinationError> {
        let _ = client;
        Ok(false)
    }

    /// Waits for the work [`apply`](Self::apply) started to end, and confirms it: what
    /// was whole when a run stopped is stored, not thrown away. True if there was any.
    /// Nothing by default.
    fn settle_all<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
    ) -> Result<bool, DestinationError> {
        let _ = client;
        Ok(false)
    }

    /// Has `wake` called whenever work [`apply`](Self::apply) started ends, so that a
    /// driver waiting for responses calls [`Run::settle`](crate::Run::settle). Nothing
    /// by default.
    fn on_settled(&mut self, wake: Arc<dyn Fn() + Send + Sync>) {
        let _ = wake;
    }

    /// Saves the client's state and inventory.
    fn save<I: KeptInventory>(&mut self, client: &Client<I>) -> Result<(), DestinationError>;

    /// Whether the body of `request` is kept by the driver while it arrives, in a
    /// temporary file ([`Bodies::create`]) or, where [`keeps_in_memory`](Self::keeps_in_memory)
    /// says so, in memory: a resource's or a package's.
    fn keeps_body(&self, request: &Request) -> bool;

    /// The temporary directory of the bodies, for the tasks that write them.
    fn bodies(&self) -> Bodies;

    /// Whether the body of `request`, which it keeps, may be held in memory instead of
    /// its file when [`Bodies`] has room ([`Bodies::reserve`]): a destination that
    /// sends a resource's bytes on (a bucket's) rather than renaming its file into place.
    /// None by default.
    fn keeps_in_memory(&self, request: &Request) -> bool {
        let _ = request;
        false
    }
}

impl Destination for DirectoryDestination {
    fn location(&self) -> &Path {
        self.dir()
    }

    fn paths(&self, config: &Config) -> PathMapper {
        DirectoryDestination::paths(self, config)
    }

    fn load_state(&self) -> Result<State, DestinationError> {
        DirectoryDestination::load_state(self)
    }

    fn open_inventory(&self) -> Result<DiskInventory, DestinationError> {
        DirectoryDestination::open_inventory(self)
    }

    fn replay<I: KeptInventory>(&self, config: &Config, inventory: &mut I) {
        // The journal is the shard's own: every line is its.
        let _ = config;
        DirectoryDestination::replay(self, inventory);
    }

    fn join_shards<I: KeptInventory>(
        &mut self,
        options: &SyncOptions,
        inventory: &mut I,
    ) -> Result<(), DestinationError> {
        if let (true, Some(shard)) = (options.audit, options.shard) {
            self.know_other_shards(shard)?;
        }
        if options.audit && options.shard.is_none() {
            // Recorded for this run only: an audit never saves, so the shards' records
            // never become this directory's own.
            for (uri, held) in self.shard_records()? {
                inventory.record(uri, held);
            }
        }
        Ok(())
    }

    fn verify<I: KeptInventory>(
        &mut self,
        config: &Config,
        inventory: &mut I,
    ) -> Result<Verified, DestinationError> {
        DirectoryDestination::verify(self, config, inventory)
    }

    fn prepare(&mut self, events: &[Event]) {
        DirectoryDestination::prepare(self, events)
    }

    fn apply<I: KeptInventory>(
        &mut self,
        client: &mut Client<I>,
        event: &Event,
    ) -> Result<(), DestinationError> {
        DirectoryDestination::apply(self, client, event)
    }

    fn save<I: KeptInventory>(&mut self, client: &Client<I>) -> Result<(), DestinationError> {
        DirectoryDestination::save(self, client)
    }

    fn keeps_body(&self, request: &Request) -> bool {
        DirectoryDestination::keeps_body(self, request)
    }

    fn bodies(&self) -> Bodies {
        DirectoryDestination::bodies(self)
    }
}
