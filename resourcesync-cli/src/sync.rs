//! `resourcesync sync`: keeps a directory in step with a Source, driving the sans-IO
//! client (`resourcesync-client`) over reqwest and tokio.
//!
//! The main task owns the client; one task per request streams the response to it over a
//! channel (and, for a resource or a package, into a temporary file first). What the
//! client decides is carried out here: a stored resource is renamed into place, a
//! deletion removes a file, a package is opened with `resourcesync-package`. The state
//! and the inventory live in `<DIR>/.resourcesync/`, a name the client's path mapper
//! keeps out of every Source's reach.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use resourcesync_client::{
    Bounds, Client, Config, ConfigError, Event, Mode, ProblemKind, Report, RequestId, Standing,
    State,
};
use resourcesync_model::Uri;
use tokio::sync::mpsc;

use crate::destination::{DestinationError, DirectoryDestination};

mod driver;
mod stop;

use driver::CheckedResolver;
pub use driver::{Msg, fetch, wait};
use stop::{Interrupt, Saved};

/// What `sync` does, for its long help.
pub const SYNC_ABOUT: &str = "\
Keeps DIR in step with the ResourceSync Source at SOURCE-URL.

SOURCE-URL is the Source's base (ending in /: discovery by the well-known URI, robots.txt
and the home page's links) or any of its documents: Source Description, Capability List,
a list or an index. The first run into DIR is a baseline (from the Resource List, or the
Resource Dump with --dump); later runs go on incrementally from the checkpoint the last
one saved, through Change Lists, their Index and Archive, or Change Dumps; when they cannot
carry DIR forward (the changes since its checkpoint no longer offered, a gap), the run takes
a baseline instead and says so on standard error. Each resource
is checked against its listed length and hashes, written to a temporary file and renamed
into place; nothing is written outside DIR, whatever the Source lists. The state and the
inventory are kept in DIR/.resourcesync/, which no resource can overwrite.";

/// The output of `sync`, for its long help.
pub const SYNC_OUTPUT: &str = "\
Output:
  Problems and warnings on standard error as they happen; progress bars when standard
  error is a terminal; then one summary line on standard output:
    <mode>: <n> created, <n> updated, <n> deleted, <n> unchanged, <n> failed,
    <n> refused, <n> conflicts, <n> not deleted, <n> bytes, <n> requests, <s> s,
    complete|incomplete
  A conflict is a path where DIR holds a file no sync stored (left as it is; named on
  standard error), or a file changed since it was stored that the Source deleted (kept).
  \"not deleted\" counts deletions a Change List listed that --delete did not allow.
  and for an audit the counts changed, missing, extra and whether DIR is in sync.
  After it, on standard error, what to run about deletions not made and conflicts, which
  later incremental runs do not come back to.

JSON (--json):
  Every event of the client as one object per line ({\"event\": \"change\", ...}), then
  {\"summary\": {\"mode\", \"complete\", \"in_sync\", \"at\", \"created\", \"updated\",
  \"deleted\", \"unchanged\", \"failed\", \"refused\", \"conflicts\", \"kept\", \"bytes\",
  \"requests\", \"seconds\", ...}}";

/// Exit statuses of `sync`.
pub const SYNC_EXIT: &str = "\
Exit status:
  0    the sync completed (an audit: DIR is in sync)
  1    it did not complete, refused something, met a conflict, could not save its state
       (the disk full: the last state saved is kept), or (an audit) DIR is not in sync
  2    it could not start: a bad URL or option, DIR unusable, saved state unreadable
  130  interrupted (SIGINT, Ctrl-C, or SIGTERM): it stopped taking work, kept what was
       whole and saved; a rerun fetches only the rest. A second signal stops it at once
       (what was stored is still found by the rerun).";

/// The arguments of `resourcesync sync`; [`SyncArgs::options`] makes them the
/// [`SyncOptions`] the library takes.
#[derive(Debug, clap::Parser)]
pub struct SyncArgs {
    /// The Source's base URL (ending in /) or the URL of one of its documents.
    #[arg(value_name = "SOURCE-URL")]
    source: String,
    /// The destination directory (made if missing; its parent must exist).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Compare the files in DIR, every byte of them, with what the Source lists, and
    /// name each file changed, missing or extra (one no sync stored); change nothing.
    #[arg(long)]
    audit: bool,
    /// Decide and report the changes; fetch no resource, change nothing.
    #[arg(long)]
    dry_run: bool,
    /// A baseline even when DIR has a checkpoint; it also reads the files in DIR, and
    /// fetches again what changed or went missing since the sync stored it.
    #[arg(long)]
    baseline: bool,
    /// Take a baseline from the Resource Dump when the Source has one.
    #[arg(long)]
    dump: bool,
    /// Delete what the Source no longer has: in a baseline what it no longer lists, in
    /// an incremental run what its Change Lists list as deleted. Only files a sync
    /// stored and that still hold the bytes it stored are deleted; without --delete
    /// nothing is.
    #[arg(long)]
    delete: bool,
    /// Delete at most N resources (with --delete). Over it a baseline deletes nothing;
    /// an incremental run makes N deletions and stops before the next (a later run with
    /// a higher N goes on from there).
    #[arg(long, value_name = "N", default_value_t = u64::MAX, hide_default_value = true)]
    max_deletes: u64,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    concurrency: usize,
    /// Bytes a resource listed without a length may have (K, M, G: powers of 1024); past
    /// them its fetch fails. A listed length bounds a resource itself.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = crate::units::bytes)]
    max_unlisted_bytes: u64,
    /// Time one request may take in all, however steadily its bytes come (then it is
    /// retried); ms, s or m.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::units::duration)]
    max_request_time: std::time::Duration,
    /// Answer requests for URLs under PREFIX from the directory DIR (a mirror on disk).
    #[arg(long, value_name = "PREFIX=DIR")]
    mirror: Vec<String>,
    /// Replace a file at a listed path that no sync stored (by default such a file is a
    /// conflict, named and left as it is, unless it holds the listed bytes: then it is
    /// taken as stored).
    #[arg(long)]
    replace_foreign: bool,
    /// One JSON object per event and line, then a summary object.
    #[arg(long)]
    json: bool,
}

impl SyncArgs {
    /// The options these arguments ask for, or why they cannot be (a SOURCE-URL that is
    /// not a URL, a `--mirror` that is not PREFIX=DIR).
    pub fn options(&self) -> Result<SyncOptions, Unusable> {
        let source = self
            .source
            .parse()
            .map_err(|e| Unusable(format!("{:?} is not a URL: {e}", self.source)))?;
        let mut options = SyncOptions::new(source, self.dir.clone())
            .with_audit(self.audit)
            .with_dry_run(self.dry_run)
            .with_baseline(self.baseline)
            .with_dump(self.dump)
            .with_concurrency(self.concurrency)
            .with_limits(self.max_unlisted_bytes, self.max_request_time)
            .with_replace_foreign(self.replace_foreign)
            .with_json(self.json);
        if self.delete {
            options = options.with_delete(self.max_deletes);
        }
        for (prefix, dir) in mirrors(&self.mirror)? {
            options = options.with_mirror(prefix, dir);
        }
        Ok(options)
    }
}

/// What a sync does: the typed options of [`synchronize`] and [`sync`], built from a
/// Source and a directory (`SyncOptions::new(source, dir).with_delete(100)`), or from a
/// command line by [`SyncArgs::options`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SyncOptions {
    /// The Source's base URL (ending in /) or the URL of one of its documents.
    pub source: Uri,
    /// The destination directory (made if missing; its parent must exist).
    pub dir: PathBuf,
    /// Compare the directory with the Source and report; change nothing.
    pub audit: bool,
    /// Decide and report the changes; fetch no resource, change nothing.
    pub dry_run: bool,
    /// A baseline even when the directory has a checkpoint. Set through
    /// [`with_baseline`](Self::with_baseline), which also sets [`repair`](Self::repair):
    /// a baseline asked for repairs DIR.
    pub baseline: bool,
    /// A baseline fetches again the files changed in DIR since the sync stored them
    /// (set with [`baseline`](Self::baseline) by [`with_baseline`](Self::with_baseline));
    /// a baseline not asked for (a first run, one in place of Change Lists that cannot
    /// carry DIR forward) keeps them, an update of one a conflict.
    pub repair: bool,
    /// Take a baseline from the Resource Dump when the Source has one.
    pub dump: bool,
    /// Delete what the Source no longer has (`--delete`), at most this many
    /// (`--max-deletes`); `None` deletes nothing.
    pub delete: Option<u64>,
    /// Requests in flight at once (at least one).
    pub concurrency: usize,
    /// Bytes a resource listed without a length may have.
    pub max_unlisted_bytes: u64,
    /// Time one request may take in all.
    pub max_request_time: std::time::Duration,
    /// URL prefixes answered from a directory (a mirror on disk), each with it.
    pub mirrors: Vec<(String, PathBuf)>,
    /// Replace a file at a listed path that no sync stored (by default a conflict,
    /// unless it holds the listed bytes).
    pub replace_foreign: bool,
    /// Print every event as a JSON object on its own line (and no problem or warning
    /// lines on standard error).
    pub json: bool,
}

impl SyncOptions {
    /// A sync of `dir` from `source`, with the defaults of `resourcesync sync`: 8
    /// requests in flight, no deletion, no dump, text output.
    pub fn new(source: Uri, dir: impl Into<PathBuf>) -> SyncOptions {
        SyncOptions {
            source,
            dir: dir.into(),
            audit: false,
            dry_run: false,
            baseline: false,
            repair: false,
            dump: false,
            delete: None,
            concurrency: 8,
            max_unlisted_bytes: Bounds::default().max_unlisted_bytes,
            max_request_time: Bounds::default().max_request_time,
            mirrors: Vec::new(),
            replace_foreign: false,
            json: false,
        }
    }

    /// See [`SyncOptions::audit`].
    #[must_use]
    pub fn with_audit(mut self, audit: bool) -> SyncOptions {
        self.audit = audit;
        self
    }

    /// See [`SyncOptions::dry_run`].
    #[must_use]
    pub fn with_dry_run(mut self, dry_run: bool) -> SyncOptions {
        self.dry_run = dry_run;
        self
    }

    /// See [`SyncOptions::baseline`].
    #[must_use]
    pub fn with_baseline(mut self, baseline: bool) -> SyncOptions {
        self.baseline = baseline;
        self.repair = baseline;
        self
    }

    /// See [`SyncOptions::dump`].
    #[must_use]
    pub fn with_dump(mut self, dump: bool) -> SyncOptions {
        self.dump = dump;
        self
    }

    /// Delete what the Source no longer lists, at most `max` resources.
    #[must_use]
    pub fn with_delete(mut self, max: u64) -> SyncOptions {
        self.delete = Some(max);
        self
    }

    /// See [`SyncOptions::max_unlisted_bytes`] and [`SyncOptions::max_request_time`].
    #[must_use]
    pub fn with_limits(
        mut self,
        max_unlisted_bytes: u64,
        max_request_time: std::time::Duration,
    ) -> SyncOptions {
        self.max_unlisted_bytes = max_unlisted_bytes;
        self.max_request_time = max_request_time;
        self
    }

    /// See [`SyncOptions::concurrency`].
    #[must_use]
    pub fn with_concurrency(mut self, concurrency: usize) -> SyncOptions {
        self.concurrency = concurrency;
        self
    }

    /// Answers requests for URLs under `prefix` from the directory `dir`.
    #[must_use]
    pub fn with_mirror(
        mut self,
        prefix: impl Into<String>,
        dir: impl Into<PathBuf>,
    ) -> SyncOptions {
        self.mirrors.push((prefix.into(), dir.into()));
        self
    }

    /// See [`SyncOptions::replace_foreign`].
    #[must_use]
    pub fn with_replace_foreign(mut self, replace: bool) -> SyncOptions {
        self.replace_foreign = replace;
        self
    }

    /// See [`SyncOptions::json`].
    #[must_use]
    pub fn with_json(mut self, json: bool) -> SyncOptions {
        self.json = json;
        self
    }

    /// The mode these options ask for, given the saved state: an audit, a baseline (asked
    /// for, or the first run into the directory), or an incremental sync.
    pub fn mode(&self, state: &State) -> Mode {
        if self.audit {
            Mode::Audit
        } else if self.baseline || state.sets.is_empty() {
            Mode::Baseline {
                prefer_dump: self.dump,
            }
        } else {
            Mode::Incremental
        }
    }

    /// The client's config for a sync into `dest` from `state`: the mode, a dry run,
    /// deletion, requests in flight, and the destination's own name kept out of every
    /// Source's reach. A driver that resolves names checks their addresses itself (the
    /// policy's special address kinds; see [`synchronize`]).
    pub fn config(
        &self,
        dest: &DirectoryDestination,
        state: &State,
    ) -> Result<Config, ConfigError> {
        let mut config =
            Config::new(self.source.clone(), self.mode(state))?.with_dry_run(self.dry_run);
        config = config.clone().with_paths(dest.paths(&config));
        if let Some(max) = self.delete {
            config = config.with_delete(max);
        }
        let mut bounds = config.bounds;
        bounds.max_in_flight = self.concurrency.max(1);
        bounds.max_unlisted_bytes = self.max_unlisted_bytes;
        bounds.max_request_time = self.max_request_time;
        Ok(config.with_bounds(bounds))
    }
}

/// Why a sync could not start (exit status 2): what to tell the user.
#[derive(Debug)]
pub struct Unusable(pub String);

impl<E: std::fmt::Display> From<E> for Unusable {
    fn from(e: E) -> Unusable {
        Unusable(e.to_string())
    }
}

/// Runs `sync` and returns its exit status.
pub fn run(args: &SyncArgs) -> ExitCode {
    block_on("sync", async { sync(&args.options()?).await })
}

/// Runs a subcommand's future on a tokio runtime of its own: its exit status, or 2 (said
/// on standard error, named by `command`) when it could not start.
pub fn block_on(
    command: &str,
    run: impl std::future::Future<Output = Result<u8, Unusable>>,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("resourcesync {command}: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run) {
        Ok(status) => ExitCode::from(status),
        Err(Unusable(reason)) => {
            eprintln!("resourcesync {command}: {reason}");
            ExitCode::from(2)
        }
    }
}

/// The `--mirror PREFIX=DIR` options: each URL prefix with its directory.
pub fn mirrors(options: &[String]) -> Result<Vec<(String, PathBuf)>, Unusable> {
    options
        .iter()
        .map(|m| match m.split_once('=') {
            Some((prefix, dir)) => Ok((prefix.to_owned(), PathBuf::from(dir))),
            None => Err(Unusable(format!("--mirror {m:?} is not PREFIX=DIR"))),
        })
        .collect()
}

/// Runs a sync on the current tokio runtime and prints its summary (a line, or with
/// `json` an object): the exit status ([`Synced::exit_status`]), or why it could not
/// start.
pub async fn sync(options: &SyncOptions) -> Result<u8, Unusable> {
    let synced = synchronize(options).await?;
    let Synced {
        mode: name,
        report,
        seconds,
        interrupted,
    } = &synced;
    let stdout = io::stdout();
    if options.json {
        let mut summary = serde_json::to_value(report)?;
        if let Some(object) = summary.as_object_mut() {
            object.insert("mode".into(), (*name).into());
            object.insert("seconds".into(), (*seconds).into());
            object.insert("interrupted".into(), (*interrupted).into());
        }
        let _ = writeln!(
            stdout.lock(),
            "{}",
            serde_json::json!({ "summary": summary })
        );
    } else {
        let _ = writeln!(stdout.lock(), "{synced}");
        for hint in synced.hints(options.dry_run) {
            eprintln!("resourcesync sync: {hint}");
        }
    }
    Ok(synced.exit_status())
}

/// What a sync came to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Synced {
    /// `baseline`, `incremental` or `audit`.
    pub mode: &'static str,
    /// The client's report.
    pub report: Report,
    /// How long it took.
    pub seconds: f64,
    /// Stopped by SIGINT or SIGTERM before its end (what it did is saved).
    pub interrupted: bool,
}

impl std::fmt::Display for Synced {
    /// The summary line of `sync` (see [`SYNC_OUTPUT`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let report = &self.report;
        write!(
            f,
            "{}: {} created, {} updated, {} deleted, {} unchanged, {} failed, {} refused, {} conflicts, {} not deleted, {} bytes, {} requests, {:.2} s, {}",
            self.mode,
            report.created,
            report.updated,
            report.deleted,
            report.unchanged,
            report.failed,
            report.refused,
            report.conflicts,
            report.kept,
            report.bytes,
            report.requests,
            self.seconds,
            if self.interrupted {
                "interrupted"
            } else if report.complete {
                "complete"
            } else {
                "incomplete"
            },
        )?;
        if let Some(in_sync) = report.in_sync {
            write!(
                f,
                ", {} changed, {} missing, {} extra, {}",
                report.changed,
                report.missing,
                report.extra,
                if in_sync { "in sync" } else { "not in sync" }
            )?;
        }
        Ok(())
    }
}

impl Synced {
    /// What a run in `mode` came to, in `seconds`.
    pub fn new(mode: &Mode, report: Report, seconds: f64) -> Synced {
        let mode = match mode {
            Mode::Audit => "audit",
            Mode::Incremental => "incremental",
            _ => "baseline",
        };
        Synced {
            mode,
            report,
            seconds,
            interrupted: false,
        }
    }

    /// What the user can do about what the summary counts and a later run will not
    /// come back to by itself: deletions left undone, conflicts left as they are (an
    /// incremental run goes on from where this one ended). And that a dry run changed
    /// nothing, its counts being what a run would do.
    pub fn hints(&self, dry_run: bool) -> Vec<String> {
        let report = &self.report;
        let mut hints = Vec::new();
        if dry_run {
            hints.push("a dry run: nothing was changed; the counts are what a run would do".into());
        }
        if report.kept > 0 {
            hints.push(format!(
                "{} deletions listed by the Source were not made (no --delete); \
                 `sync --baseline --delete` makes them later",
                report.kept
            ));
        }
        if report.conflicts > 0 {
            hints.push(format!(
                "{} conflicts (named above) were left as they are; `sync --baseline` \
                 fetches again the sync's own files that were edited, with \
                 --replace-foreign also files no sync stored; `sync --audit` lists them",
                report.conflicts
            ));
        }
        hints
    }

    /// 0 when it completed (and, an audit, found the directory in sync), 130 when it
    /// was interrupted, else 1 (see [`SYNC_EXIT`]).
    pub fn exit_status(&self) -> u8 {
        let ok = self.report.complete && self.report.in_sync.unwrap_or(true);
        match (self.interrupted, ok) {
            (true, _) => 130,
            (false, true) => 0,
            (false, false) => 1,
        }
    }
}

/// Runs a sync on the current tokio runtime, printing problems and warnings (and, with
/// `json`, every event) as they come, but no summary: what it came to, or why it could
/// not start.
pub async fn synchronize(options: &SyncOptions) -> Result<Synced, Unusable> {
    let started = Instant::now();
    let mut dest = DirectoryDestination::open(&options.dir)?
        .with_replace_foreign(options.replace_foreign)
        .with_repair(options.repair);
    let (state, mut inventory) = dest.load()?;
    let mut config = options.config(&dest, &state)?;
    let mode = config.mode;
    // An audit or a baseline compares the listing with what the files hold, not with
    // what the inventory says they hold: a file changed or removed in DIR is reported
    // (an audit) or fetched again (a baseline).
    let verified = dest.verify(&config, &mut inventory)?;
    // A Source named by a host name is on whatever address kinds that name resolves to
    // now (a Source on localhost is on loopback): those are allowed, as an address written
    // in the URI would be, and every later resolution is held to them.
    if let Some(url::Host::Domain(host)) = config.start.to_url()?.host()
        && let Ok(found) = tokio::net::lookup_host((host, 0)).await
    {
        let mut policy = config.policy.clone();
        for address in found {
            if let Some(kind) = resourcesync_client::policy::SpecialAddress::of(address.ip()) {
                policy = policy.allow_address_kind(kind);
            }
        }
        config = config.with_policy(policy);
    }
    let http = reqwest::Client::builder()
        .dns_resolver(std::sync::Arc::new(CheckedResolver(config.policy.clone())))
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("resourcesync-rs/", env!("CARGO_PKG_VERSION")))
        .build()?;

    let mut client = Client::new(config, state, inventory);
    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    let mut tasks: HashMap<RequestId, tokio::task::JoinHandle<()>> = HashMap::new();
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} changes, {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let stdout = io::stdout();
    // Why the Change Lists cannot carry the directory forward, if they cannot.
    let mut stranded = None;
    let saves = !options.dry_run && !options.audit;
    let mut saved = Saved::new(&client);
    let interrupt = Interrupt::listen();
    let report: Report = loop {
        if interrupt.is_set() {
            // Stop taking work; settle what is whole already (verified bodies waiting to
            // be stored, deletions decided): the requests in flight are dropped below.
            while let Some(event) = client.poll_event() {
                if let Err(DestinationError::Misuse(misuse)) = dest.apply(&mut client, &event) {
                    return Err(misuse.into());
                }
            }
            break client.report();
        }
        let now = Instant::now();
        while let Some(request) = client.poll_request(now) {
            let id = request.id;
            let temp = dest.keeps_body(&request).then(|| dest.bodies());
            let limit = client.body_limit(id);
            let task = tokio::spawn(fetch(
                http.clone(),
                request,
                temp,
                limit,
                tx.clone(),
                options.mirrors.clone(),
            ));
            tasks.insert(id, task);
        }
        let mut done = None;
        let mut acted = false;
        while let Some(event) = client.poll_event() {
            acted = true;
            if options.json
                && let Ok(line) = serde_json::to_string(&event)
            {
                let _ = writeln!(stdout.lock(), "{line}");
            }
            match &event {
                Event::Store(store) => {
                    tasks.remove(&store.request);
                }
                Event::Cancel { request } => {
                    if let Some(task) = tasks.remove(request) {
                        task.abort();
                    }
                }
                Event::Problem(problem) => {
                    if matches!(
                        problem.kind,
                        ProblemKind::Gap { .. } | ProblemKind::NoCheckpoint
                    ) {
                        stranded = Some(problem.kind.to_string());
                    }
                    if !options.json {
                        bar.suspend(|| eprintln!("problem: {problem}"));
                    }
                }
                Event::Warning(warning) if !options.json => {
                    let document = warning
                        .document
                        .as_ref()
                        .map(|d| format!("{d}: "))
                        .unwrap_or_default();
                    bar.suspend(|| eprintln!("warning: {document}{}", warning.message));
                }
                Event::Audit { uri, standing } if !options.json => {
                    let standing = match standing {
                        Standing::Changed(_) => "changed",
                        Standing::Missing => "missing",
                        _ => "extra",
                    };
                    bar.suspend(|| eprintln!("{standing}: {uri}"));
                }
                Event::Done(report) => done = Some(report.clone()),
                _ => {}
            }
            // Blocking file IO on the main task, as before: a rename or a removal per
            // resource costs less than a hop to tokio's blocking pool.
            match dest.apply(&mut client, &event) {
                Err(DestinationError::Misuse(misuse)) => return Err(misuse.into()),
                Err(e) => eprintln!("resourcesync sync: cannot save the state: {e}"),
                Ok(()) => {}
            }
        }
        let progress = client.progress();
        bar.set_length(progress.planned);
        bar.set_position(progress.settled);
        bar.set_message(format!(
            "{} documents, {} listed, {} bytes",
            progress.documents, progress.listed, progress.bytes
        ));
        if let Some(report) = done {
            break report;
        }
        // Work is saved as the run goes, not only at its end (the journal covers what
        // lies between two saves).
        if saves && saved.due(&client) {
            match dest.save(&client) {
                Ok(()) => saved = Saved::new(&client),
                Err(e) => {
                    bar.suspend(|| eprintln!("resourcesync sync: cannot save: {e}"));
                    saved.retry_later();
                }
            }
        }
        if acted {
            continue;
        }
        let save_at = saved.wake_at(&client).filter(|_| saves);
        tokio::select! {
            waited = wait(&mut client, &mut rx) => waited?,
            () = interrupt.wait() => {}
            () = driver::sleep_until(save_at) => {}
        }
    };
    bar.finish_and_clear();
    for (_, task) in tasks {
        task.abort();
    }
    let mut report = report;
    if interrupt.is_set() {
        // In flight: aborted above (their temporary files go at the next open); what
        // was whole and verified was stored by the loop before it stopped.
        eprintln!("resourcesync sync: interrupted: saving what was done");
    }
    if saves && let Err(e) = dest.save(&client) {
        // The last state saved stays (each save is atomic): a rerun goes on from it.
        eprintln!("resourcesync sync: cannot save the state: {e}");
        report.complete = false;
        report.problems += 1;
    }
    if interrupt.is_set() {
        let mut synced = Synced::new(&mode, report, started.elapsed().as_secs_f64());
        synced.interrupted = true;
        return Ok(synced);
    }
    // The standard lets a Destination stay in step by repeated baselines: when the Change
    // Lists cannot carry the directory forward (changes no longer offered, a gap, no
    // checkpoint), a baseline in this run, rather than a run that fails until someone
    // asks for one. It deletes only as `--delete` allows.
    if let (Some(reason), Mode::Incremental, false, false) =
        (stranded, mode, options.dry_run, options.audit)
    {
        eprintln!(
            "resourcesync sync: the Change Lists cannot carry {} forward ({reason}): a baseline instead",
            options.dir.display()
        );
        drop(dest);
        // Not asked for: what the user changed in DIR is kept, as the incremental run
        // would have kept it.
        let mut baseline = options.clone().with_baseline(true);
        baseline.repair = false;
        let mut synced = Box::pin(synchronize(&baseline)).await?;
        synced.seconds = started.elapsed().as_secs_f64();
        return Ok(synced);
    }
    if mode == Mode::Audit {
        // Files no sync stored: DIR is not the Source's copy while they are there.
        for path in &verified.extra {
            if options.json {
                let line = serde_json::json!({"event": "extra-file", "path": path});
                let _ = writeln!(stdout.lock(), "{line}");
            } else {
                eprintln!("extra: {} (no sync stored it)", path.display());
            }
        }
        verified.count_extras(&mut report);
    }
    Ok(Synced::new(&mode, report, started.elapsed().as_secs_f64()))
}
