//! The run policy: what one sync into a [`DirectoryDestination`] does around the client,
//! whatever moves the bytes. [`Run`] opens the directory, loads what the last run saved,
//! compares the files with it where the mode needs that, carries out what the client
//! decides, saves every few seconds and at the end, stops at the caller's
//! [`StopToken`], and says when the Change Lists cannot carry the directory forward and a
//! baseline must follow. A driver moves the bytes: it asks [`Run::poll_request`] what to
//! fetch, hands the responses to [`Run::client`], and calls [`Run::settle`] after each
//! input, as [`blocking::sync`](crate::blocking::sync) and
//! `asynchronous::sync` (feature `reqwest`) do.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use resourcesync_client::local_path::FileSystem;
use resourcesync_client::{
    Client, Config, ConfigError, Event, Misuse, Mode, ProblemKind, Progress, Report, Request,
    Standing,
};

use crate::destination::Destination;
use crate::directory::{DestinationError, DirectoryDestination, Verified};
use crate::inventory::{DiskInventory, KeptInventory};
use crate::options::SyncOptions;
use crate::synced::Synced;

/// Why a run could not start, or could not go on: the driver's or the directory's
/// trouble, not a resource's (those are counted in the [`Report`] and the run goes on).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SyncError {
    /// The directory, its state or its inventory cannot be used.
    #[error(transparent)]
    Destination(#[from] DestinationError),
    /// The options make no configuration of the client (a Source URL it cannot take).
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The client refused an input: a bug of the driver's (the client changed nothing).
    #[error(transparent)]
    Misuse(#[from] Misuse),
    /// The HTTP stack could not be set up (a TLS backend missing, say).
    #[error("the HTTP client cannot be built: {0}")]
    Http(String),
    /// The options ask for what this driver does not do.
    #[error("not supported: {0}")]
    Unsupported(String),
}

/// Asks a run to stop: cheap to clone, for a signal handler, another thread or a task.
/// A run asked to stop takes no more work, carries out what is whole already (bodies
/// verified and waiting to be stored, deletions decided), saves, and ends
/// [`interrupted`](Synced::interrupted); a rerun fetches only the rest.
#[derive(Clone, Debug, Default)]
pub struct StopToken {
    set: Arc<AtomicBool>,
}

impl StopToken {
    /// A token nobody tripped yet.
    pub fn new() -> StopToken {
        StopToken::default()
    }

    /// Asks every run holding this token to stop; true if it had been asked already (a
    /// second Ctrl-C, which a command may take as "stop at once").
    pub fn stop(&self) -> bool {
        self.set.swap(true, Ordering::SeqCst)
    }

    /// Whether a stop was asked for.
    pub fn is_stopped(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }
}

/// What a run tells its caller besides the client's events: each is something to show a
/// person (or log), not something to act on.
#[derive(Debug)]
#[non_exhaustive]
pub enum Notice {
    /// A save failed; the last state saved stays (each save is atomic), and the save is
    /// tried again later.
    SaveFailed(DestinationError),
    /// The run was asked to stop: it saves what it did.
    Stopping,
    /// The Change Lists cannot carry the directory forward (`reason`): a baseline
    /// follows in the same run.
    Fallback {
        /// The directory (or the store's URL: [`Destination::location`]).
        dir: PathBuf,
        /// What the client said: a gap, no checkpoint.
        reason: String,
    },
    /// A file under the directory (an object under the prefix) that no sync stored,
    /// found by an audit: the destination is not the Source's copy while it is there.
    ExtraFile(PathBuf),
    /// A file (an object) that no sync stored at the path of a listed resource the audit
    /// found missing (the [`Event::Audit`] before): counted once, as missing, not as an
    /// extra as well. A run leaves it, a conflict, unless it holds the listed bytes or
    /// the run replaces such files.
    ForeignFile {
        /// Where, under the directory.
        path: PathBuf,
        /// The resource listed there.
        uri: resourcesync_model::Uri,
    },
    /// The inventory could not answer a lookup (a damaged record, a read that failed): the
    /// run is not complete.
    InventoryFailed(Box<dyn std::error::Error + Send + Sync>),
}

impl std::fmt::Display for Notice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Notice::SaveFailed(e) => write!(f, "cannot save the state: {e}"),
            Notice::Stopping => f.write_str("interrupted: saving what was done"),
            Notice::Fallback { dir, reason } => write!(
                f,
                "the Change Lists cannot carry {} forward ({reason}): a baseline instead",
                dir.display()
            ),
            Notice::ExtraFile(path) => write!(f, "extra: {} (no sync stored it)", path.display()),
            Notice::ForeignFile { path, uri } => write!(
                f,
                "foreign: {} (no sync stored it) is at the path of {uri}, which is missing",
                path.display()
            ),
            Notice::InventoryFailed(e) => write!(f, "the inventory failed a lookup: {e}"),
        }
    }
}

/// Who watches a run: every event of the client before it is carried out, the progress
/// after each round, and the run's own [`Notice`]s. Every method does nothing by default.
pub trait Observer {
    /// An event of the client's, before the run carries it out; but [`Event::Done`]
    /// at the run's end, with the report the run comes to (the client's, with what
    /// the run found after it: a save that failed, an audit's files no sync stored),
    /// not the client's as it said it: a reader of the events must not take a run
    /// as complete, or a directory as in sync, that the summary then says is not.
    fn event(&mut self, event: &Event) {
        let _ = event;
    }
    /// Where the run stands, after each round of inputs.
    fn progress(&mut self, progress: &Progress) {
        let _ = progress;
    }
    /// Something the run itself says.
    fn notice(&mut self, notice: &Notice) {
        let _ = notice;
    }
}

/// An observer that watches nothing.
impl Observer for () {}

/// When the run saves its state and inventory before its end: at most every
/// [`Saved::EVERY`], and only when changes were settled since.
#[derive(Debug)]
struct Saved {
    at: Instant,
    settled: u64,
}

impl Saved {
    /// Time between two saves: a save writes the whole inventory (about a second for a
    /// million resources), so more often would cost the run more than it protects.
    const EVERY: Duration = Duration::from_secs(5);

    fn new<I: KeptInventory>(client: &Client<I>) -> Saved {
        Saved {
            at: Instant::now(),
            settled: client.progress().settled,
        }
    }
}

/// What [`Run::finish`] came to.
#[derive(Debug)]
#[non_exhaustive]
pub enum Finished {
    /// The run is over.
    Done(Synced),
    /// The Change Lists cannot carry the directory forward: run these options (a
    /// baseline that repairs nothing) next, as the same run.
    Baseline(SyncOptions),
}

/// One sync into a [`DirectoryDestination`], whatever moves the bytes: it opens the
/// directory, loads what the last run saved, compares the files with it where the mode
/// needs that, carries out what the client decides, saves every few seconds and at the
/// end, stops at the caller's [`StopToken`], and says when the Change Lists cannot carry
/// the directory forward and a baseline must follow ([`Finished::Baseline`]). A driver
/// asks [`poll_request`](Self::poll_request) what to fetch, hands the responses to
/// [`client`](Self::client), and calls [`settle`](Self::settle) after each input, until
/// [`is_over`](Self::is_over); then [`finish`](Self::finish).
///
/// The inventory is the directory's own [`DiskInventory`] ([`start`](Run::start)), or
/// one of the caller's ([`start_with`](Run::start_with)).
///
/// Another destination (a bucket's prefix, `objects::ObjectDestination`) is opened by the
/// caller and given to [`start_on`](Run::start_on).
#[derive(Debug)]
pub struct Run<I = DiskInventory, D = DirectoryDestination> {
    options: SyncOptions,
    dest: D,
    client: Client<I>,
    verified: Verified,
    mode: Mode,
    saved: Saved,
    /// Whether this run saves (not a dry run, not an audit).
    saves: bool,
    /// Why the Change Lists cannot carry the directory forward, if they cannot.
    stranded: Option<String>,
    /// An audit's extra files, by their keys ([`path_key`]); and its missing resources
    /// at one of them, by the same key: such a file is said with its resource, not as
    /// an extra as well. Bounded by the extra files found, not by the missing resources.
    extra_keys: HashSet<u128>,
    missing_at: HashMap<u128, resourcesync_model::Uri>,
    stop: StopToken,
    started: Instant,
    /// The report, once the client said [`Event::Done`].
    done: Option<Report>,
    /// The events [`settle`](Self::settle) takes at once, kept between calls.
    batch: Vec<Event>,
}

impl Run<DiskInventory> {
    /// Opens the directory, loads what the last run saved (and what a killed run's
    /// journal says it placed), works out the mode, and, for an audit or a baseline,
    /// compares the files with the inventory ([`DirectoryDestination::verify`]).
    /// `configure` may add to the client's config before the client is made (a driver
    /// that resolves names allows the address kinds the Source is on); `stop` ends the
    /// run early when tripped.
    pub fn start(
        options: &SyncOptions,
        stop: StopToken,
        configure: impl FnOnce(Config) -> Config,
    ) -> Result<Run, SyncError> {
        Run::start_with(options, stop, configure, |dest| Ok(dest.open_inventory()?))
    }
}

impl<I: KeptInventory> Run<I> {
    /// [`start`](Run::start) with an inventory of the caller's, which `open` gives once
    /// the directory is open (and locked); the journal of a killed run is replayed into
    /// it. For an audit of a directory that shards keep, their records are
    /// recorded into it as well (`Inventory::record`): an audit
    /// never saves, so they stay this run's (an inventory that writes through on
    /// `record` rather than on [`save`](KeptInventory::save) must not be given to one).
    pub fn start_with(
        options: &SyncOptions,
        stop: StopToken,
        configure: impl FnOnce(Config) -> Config,
        open: impl FnOnce(&DirectoryDestination) -> Result<I, SyncError>,
    ) -> Result<Run<I>, SyncError> {
        // Refused before DIR is opened: a run that cannot start makes nothing there.
        options.check()?;
        let dest = DirectoryDestination::open_for(options)?;
        Run::start_on(dest, options, stop, configure, open)
    }
}

impl<I: KeptInventory, D: Destination> Run<I, D> {
    /// A run into `dest`, opened (and locked) by the caller for `options` (its replacing
    /// of what no sync stored and its repair set from them): loads the state, opens the
    /// inventory with `open`, replays what a stopped run stored, works out the mode, and,
    /// for an audit or a baseline, compares what is there with the inventory
    /// ([`Destination::verify`]). `configure` and `stop` as for [`start`](Run::start).
    pub fn start_on(
        mut dest: D,
        options: &SyncOptions,
        stop: StopToken,
        configure: impl FnOnce(Config) -> Config,
        open: impl FnOnce(&D) -> Result<I, SyncError>,
    ) -> Result<Run<I, D>, SyncError> {
        let state = dest.load_state()?;
        let config = configure(options.config(&dest, &state)?);
        let mut inventory = open(&dest)?;
        dest.replay(&config, &mut inventory);
        dest.join_shards(options, &mut inventory)?;
        let mode = config.mode;
        // An audit or a baseline compares the listing with what the files hold, not with
        // what the inventory says they hold: a file changed or removed in DIR is reported
        // (an audit) or fetched again (a baseline).
        let verified = dest.verify(&config, &mut inventory)?;
        let extra_keys = match mode {
            Mode::Audit => {
                let file_system = config.paths.file_system();
                (verified.extra.iter())
                    .filter_map(|path| slashed(path))
                    .map(|path| path_key(file_system, &path))
                    .collect()
            }
            _ => HashSet::new(),
        };
        let client = Client::new(config, state, inventory);
        Ok(Run {
            saved: Saved::new(&client),
            saves: !options.dry_run && !options.audit,
            options: options.clone(),
            dest,
            client,
            verified,
            mode,
            stranded: None,
            extra_keys,
            missing_at: HashMap::new(),
            stop,
            started: Instant::now(),
            done: None,
            batch: Vec::new(),
        })
    }

    /// The client, for the driver's inputs (`handle_response`, `handle_body`, ...).
    pub fn client(&mut self) -> &mut Client<I> {
        &mut self.client
    }

    /// The destination, for the bodies the driver keeps
    /// ([`keeps_body`](Destination::keeps_body), [`bodies`](Destination::bodies)).
    pub fn destination(&self) -> &D {
        &self.dest
    }

    /// The destination, to tell it how to wake the driver
    /// ([`Destination::on_settled`]).
    pub fn destination_mut(&mut self) -> &mut D {
        &mut self.dest
    }

    /// The client and the destination at once: a blocking driver hands a response over
    /// with [`DirectoryDestination::receive`].
    pub fn parts(&mut self) -> (&mut Client<I>, &D) {
        (&mut self.client, &self.dest)
    }

    /// The options the run was started with.
    pub fn options(&self) -> &SyncOptions {
        &self.options
    }

    /// The token that stops the run.
    pub fn stop_token(&self) -> &StopToken {
        &self.stop
    }

    /// The mode the run is in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Whether the run was asked to stop.
    pub fn is_stopped(&self) -> bool {
        self.stop.is_stopped()
    }

    /// Whether the run is over: the client said [`Event::Done`], or a stop was asked for.
    /// Then call [`finish`](Self::finish).
    pub fn is_over(&self) -> bool {
        self.done.is_some() || self.is_stopped()
    }

    /// The next request to make, unless the run is over.
    pub fn poll_request(&mut self, now: Instant) -> Option<Request> {
        match self.is_over() {
            true => None,
            false => self.client.poll_request(now),
        }
    }

    /// When the driver must call back though no response comes: the client's timeout
    /// (hand it [`Client::handle_timeout`]), or a save that is due
    /// ([`settle`](Self::settle) makes it).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let save = (self.saves && self.client.progress().settled != self.saved.settled)
            .then(|| self.saved.at + Saved::EVERY);
        [self.client.poll_timeout(), save]
            .into_iter()
            .flatten()
            .min()
    }

    /// Carries out what the client decided since the last input: each event goes to
    /// `observer` and then to the directory ([`DirectoryDestination::apply`]). Saves when
    /// a save is due. Returns whether there was anything to do (then there may be new
    /// requests). A misuse is the driver's bug and ends the run, as
    /// [`DestinationError::Busy`] does: the events taken with the one that failed and
    /// not yet applied are dropped with it.
    pub fn settle(&mut self, observer: &mut dyn Observer) -> Result<bool, SyncError> {
        let mut acted = false;
        // The events waiting, taken together so that the destination prepares them at
        // once (a directory journals its placements in one write); the buffer is kept
        // for the next call. Those that applying them brings are taken next round.
        let mut batch = std::mem::take(&mut self.batch);
        let settled = loop {
            batch.clear();
            batch.extend(std::iter::from_fn(|| self.client.poll_event()));
            if batch.is_empty() {
                // Work the destination finished since (an upload), confirmed now: the
                // client may have more events, or requests, after it.
                match self.dest.settle(&mut self.client) {
                    Ok(true) => {
                        acted = true;
                        continue;
                    }
                    Ok(false) => break Ok(()),
                    Err(DestinationError::Misuse(misuse)) => break Err(misuse.into()),
                    Err(e) => {
                        observer.notice(&Notice::SaveFailed(e));
                        break Ok(());
                    }
                }
            }
            acted = true;
            self.dest.prepare(&batch);
            if let Err(e) = self.apply_all(&batch, observer) {
                break Err(e);
            }
        };
        batch.clear();
        self.batch = batch;
        settled?;
        observer.progress(&self.client.progress());
        // Work is saved as the run goes, not only at its end (the journal covers what
        // lies between two saves).
        let due = self.saved.at.elapsed() >= Saved::EVERY
            && self.client.progress().settled != self.saved.settled;
        if self.saves && self.done.is_none() && due {
            match self.dest.save(&self.client) {
                Ok(()) => self.saved = Saved::new(&self.client),
                // Another run's destination, as from `apply`.
                Err(e @ DestinationError::Busy { .. }) => return Err(e.into()),
                Err(e) => {
                    observer.notice(&Notice::SaveFailed(e));
                    // Tried again after EVERY, not at once: a full disk stays full.
                    self.saved.at = Instant::now();
                }
            }
        }
        Ok(acted)
    }

    /// Each of `events` to `observer` and then to the destination, in order (see
    /// [`settle`](Self::settle)).
    fn apply_all(
        &mut self,
        events: &[Event],
        observer: &mut dyn Observer,
    ) -> Result<(), SyncError> {
        for event in events {
            // `Done` is said at the end, with the report the run comes to (`finish`).
            if !matches!(event, Event::Done(_)) {
                observer.event(event);
            }
            match event {
                Event::Audit {
                    uri,
                    standing: Standing::Missing,
                } => {
                    let paths = &self.client.config().paths;
                    if !self.extra_keys.is_empty()
                        && let Ok(path) = paths.local_path(uri)
                    {
                        let key = path_key(paths.file_system(), path.as_str());
                        if self.extra_keys.contains(&key) {
                            self.missing_at.insert(key, uri.clone());
                        }
                    }
                }
                Event::Problem(problem)
                    if matches!(
                        problem.kind,
                        ProblemKind::Gap { .. }
                            | ProblemKind::NoCheckpoint
                            | ProblemKind::NoChanges(_)
                    ) =>
                {
                    self.stranded = Some(problem.kind.to_string());
                }
                Event::Done(report) => self.done = Some(report.clone()),
                _ => {}
            }
            // Blocking file IO on the caller's thread: a rename or a removal per
            // resource costs less than a hop to another thread.
            match self.dest.apply(&mut self.client, event) {
                Err(DestinationError::Misuse(misuse)) => return Err(misuse.into()),
                // Another run holds the destination (a prefix whose lease read back as
                // another's): this one never held it, and the change it was given is
                // not carried out, nor confirmed; waiting for it would be for ever.
                Err(e @ DestinationError::Busy { .. }) => return Err(e.into()),
                Err(e) => observer.notice(&Notice::SaveFailed(e)),
                Ok(()) => {}
            }
        }
        Ok(())
    }

    /// Ends the run: what is whole is carried out (after a stop), the state and the
    /// inventory are saved, an audit counts the files no sync stored. When the Change
    /// Lists could not carry the directory forward, the baseline to run next.
    pub fn finish(mut self, observer: &mut dyn Observer) -> Result<Finished, SyncError> {
        let stopped = self.done.is_none();
        if stopped {
            observer.notice(&Notice::Stopping);
            // Stop taking work; settle what is whole already (verified bodies waiting to
            // be stored, deletions decided, uploads under way): the requests in flight
            // are the driver's to drop.
            // Confirmations can bring events (a checkpoint), which can start work: until
            // neither is left.
            loop {
                let mut applied = false;
                while let Some(event) = self.client.poll_event() {
                    applied = true;
                    match self.dest.apply(&mut self.client, &event) {
                        Err(DestinationError::Misuse(misuse)) => return Err(misuse.into()),
                        // As in `settle`: another run's destination.
                        Err(e @ DestinationError::Busy { .. }) => return Err(e.into()),
                        _ => {}
                    }
                }
                let settled = match self.dest.settle_all(&mut self.client) {
                    Err(DestinationError::Misuse(misuse)) => return Err(misuse.into()),
                    Err(e) => {
                        observer.notice(&Notice::SaveFailed(e));
                        false
                    }
                    Ok(settled) => settled,
                };
                if !applied && !settled {
                    break;
                }
            }
        }
        let mut report = self.done.take().unwrap_or_else(|| self.client.report());
        if self.saves
            && let Err(e) = self.dest.save(&self.client)
        {
            // Another run holds the destination: this one never held it, and says so
            // (not "cannot save": nothing of it is there to save over).
            if let DestinationError::Busy { .. } = e {
                return Err(e.into());
            }
            // The last state saved stays (each save is atomic): a rerun goes on from it.
            observer.notice(&Notice::SaveFailed(e));
            report.complete = false;
            report.problems += 1;
        }
        // A run that saves learnt of a failed lookup from its save; one that does not (an
        // audit, a dry run) asks.
        if !self.saves
            && let Err(e) = self.client.inventory().check()
        {
            observer.notice(&Notice::InventoryFailed(e));
            report.complete = false;
            report.problems += 1;
            report.in_sync = report.in_sync.map(|_| false);
        }
        let seconds = self.started.elapsed().as_secs_f64();
        if stopped {
            let mut synced = Synced::new(&self.mode, report, seconds);
            synced.interrupted = true;
            return Ok(Finished::Done(synced));
        }
        // The standard lets a Destination stay in step by repeated baselines: when the
        // Change Lists cannot carry the directory forward (changes no longer offered, a
        // gap, no checkpoint), a baseline in this run, rather than a run that fails until
        // someone asks for one. It deletes only as the options allow.
        if let (Some(reason), Mode::Incremental, true) =
            (self.stranded.take(), self.mode, self.saves)
        {
            observer.event(&Event::Done(report));
            observer.notice(&Notice::Fallback {
                dir: self.dest.location().to_owned(),
                reason,
            });
            // Not asked for: what the user changed in DIR is kept, as the incremental run
            // would have kept it.
            let mut baseline = self.options.clone().with_baseline(true);
            baseline.repair = false;
            return Ok(Finished::Baseline(baseline));
        }
        if self.mode == Mode::Audit {
            // Files no sync stored: DIR is not the Source's copy while they are there.
            // One at a missing resource's path is that resource's finding.
            let mut extra = std::mem::take(&mut self.verified.extra);
            let file_system = self.client.config().paths.file_system();
            let at_listed = |path: &std::path::Path| {
                let key = slashed(path).map(|path| path_key(file_system, &path))?;
                self.missing_at.get(&key)
            };
            extra.retain(|path| match at_listed(path) {
                Some(uri) => {
                    observer.notice(&Notice::ForeignFile {
                        path: path.clone(),
                        uri: uri.clone(),
                    });
                    false
                }
                None => {
                    observer.notice(&Notice::ExtraFile(path.clone()));
                    true
                }
            });
            self.verified.extra = extra;
            self.verified.count_extras(&mut report);
        }
        observer.event(&Event::Done(report.clone()));
        Ok(Finished::Done(Synced::new(&self.mode, report, seconds)))
    }
}

/// A path's key in [`Run`]'s `extra_keys` and `missing_at`: the hash of `path` (names
/// between `/`) as `file_system` compares names, so that a file found as `README.TXT` is
/// at the path of `readme.txt` where the two are one file.
fn path_key(file_system: FileSystem, path: &str) -> u128 {
    xxhash_rust::xxh3::xxh3_128(file_system.fold(path).as_bytes())
}

/// A relative path found under the destination as names between `/` (how the path
/// mapper writes them), if every name is UTF-8 (no resource's path is otherwise).
fn slashed(path: &std::path::Path) -> Option<String> {
    let names: Option<Vec<&str>> = path.iter().map(|name| name.to_str()).collect();
    Some(names?.join("/"))
}
