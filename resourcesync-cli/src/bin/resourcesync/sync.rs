//! `resourcesync sync`: the command's layer over `resourcesync-destination`'s async
//! driver (reqwest and tokio): the arguments, the signals (a `StopToken` tripped by
//! SIGINT and SIGTERM), and the printing (problems, warnings, progress bars, the summary
//! line or JSON). What a sync does is the library's.

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use indicatif::{ProgressBar, ProgressStyle};
use resourcesync_cli::Chain;
use resourcesync_client::{Event, ProblemKind, Progress, WarningSummary};
use resourcesync_destination::asynchronous::{self, AsyncStop};
use resourcesync_destination::objects::ObjectDestination;
use resourcesync_destination::{Notice, Observer};
use resourcesync_model::Verification;
use resourcesync_model::text::escaped;

use resourcesync_destination::follow::{
    FollowNotice, FollowObserver, FollowOptions, FollowerEvent,
};
use resourcesync_destination::{SyncOptions, Synced};

use crate::error::Error;

/// What `sync` does, for its long help.
pub(crate) const SYNC_ABOUT: &str = "\
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
inventory are kept in DIR/.resourcesync/, which no resource can overwrite; a run that
writes removes the temporary files a stopped run left in its tmp/ (a dry run and an audit
write nothing in DIR).

With --follow, the command goes on after the first run: when the Source's Capability List
advertises a Change Notification channel (ResourceSync Change Notification 1.0.1, over a
WebSub hub), it listens for the hub on --listen (at an unguessable path; --callback-url
when the hub must reach it by another address), subscribes with a random secret, answers
the hub's verification only for what it asked, renews before the lease ends, and runs an
incremental sync for each notification signed with its secret (others are ignored). A
notification only says that the Source changed: each run reads the Source's Change Lists
and applies them with every rule above, so a notification lost, duplicated, reordered or
forged never leaves DIR wrong. A run also comes every --interval, channel or not. SIGINT
or SIGTERM unsubscribes and stops.";

/// The output of `sync`, for its long help.
pub(crate) const SYNC_OUTPUT: &str = "\
Output:
  Problems on standard error as they happen, warnings at the end (a line per document
  and rule, with a count and the first entries); progress bars when standard error is a
  terminal; then one summary line on standard output:
    <mode>: <n> created, <n> updated, <n> deleted, <n> unchanged, <n> failed,
    <n> refused, <n> conflicts, <n> not deleted, <n> bytes, <n> requests, <s> s,
    complete|incomplete[, <n> moved at the Source]
  \"moved at the Source\" counts resources whose bytes matched nothing the Source listed,
  even fetched again after its Change Lists were read: it changed them while the run
  read it, and the next run fetches them. A conflict is a path where DIR holds a file no
  sync stored, or one changed since a sync stored it (left as it is, named on standard
  error, and met again by each later run until it is resolved), or a file changed since
  it was stored that the Source deleted (kept, the user's from then on). \"not deleted\"
  counts deletions a Change List listed that --delete did not allow.
  An audit's line adds the counts changed, missing, extra and whether DIR is in sync (each
  such resource named on standard error as it is found: changed (length|hash|lastmod|
  nothing to compare), missing, or extra (a sync stored it, the Source lists it no
  longer), then its URI; at the end each file no sync stored: \"extra: PATH\", or
  \"foreign: PATH\" where it is at the path of a missing resource, counted once, as
  missing).
  After it, on standard error, what to run about deletions not made (later incremental
  runs do not come back to them), conflicts and what moved at the Source. When SOURCE-URL
  names no ResourceSync document (a resource, a web page), the problem says so and what
  it should name.

JSON (--json):
  Every event of the client as one object per line ({\"event\": \"change\", ...}), then
  {\"summary\": {\"mode\", \"complete\", \"in_sync\", \"at\", \"created\", \"updated\",
  \"deleted\", \"unchanged\", \"failed\", \"refused\", \"conflicts\", \"kept\", \"bytes\",
  \"requests\", \"seconds\", ...}}";

/// Exit statuses of `sync`.
pub(crate) const SYNC_EXIT: &str = "\
Exit status:
  0    the sync completed (an audit: DIR is in sync)
  1    it did not complete, refused something, met a conflict, found a resource changed
       since everything the Source lists (its checkpoint saved; the next run fetches it
       again), could not save its state (the disk full: the last state saved is kept),
       or (an audit) DIR is not in sync
  2    it could not start: a bad URL or option, DIR unusable, saved state unreadable
  130  interrupted (SIGINT, Ctrl-C, or SIGTERM): it stopped taking work, kept what was
       whole and saved; a rerun fetches only the rest. A second signal stops it at once
       (what was stored is still found by the rerun).";

/// The arguments of `resourcesync sync`; [`SyncArgs::options`] makes them the
/// [`SyncOptions`] the library takes.
#[derive(Debug, clap::Parser)]
pub(crate) struct SyncArgs {
    /// The Source's base URL (ending in /) or the URL of one of its documents.
    #[arg(value_name = "SOURCE-URL", required_unless_present = "sources")]
    source: Option<String>,
    /// The destination directory (made if missing, for a run that stores: its parent
    /// must exist; --audit and --dry-run make nothing), or a
    /// bucket's prefix, `s3://BUCKET/PREFIX` (credentials and endpoint from the AWS_*
    /// variables, or --store-option).
    #[arg(value_name = "DIR", required_unless_present = "sources")]
    dir: Option<PathBuf>,
    /// Sync every Source in FILE instead (TOML: each Source's URL, its own directory and
    /// options; see the long help), many at once within shared limits, then print a
    /// table of what each came to. With --follow, follow them all.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = [
            "source", "dir", "delete", "max_deletes", "concurrency", "verify", "dump",
            "max_unlisted_bytes", "max_request_time", "mirror", "replace_foreign",
            "allow_authority", "callback_url", "lease", "interval", "shard",
        ]
    )]
    pub(crate) sources: Option<PathBuf>,
    /// Compare the files in DIR, every byte of them, with what the Source lists, and
    /// name each file changed, missing or extra (one no sync stored); change nothing.
    #[arg(long)]
    pub(crate) audit: bool,
    /// Decide and report the changes; fetch no resource, change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// A baseline even when DIR has a checkpoint; it also reads the files in DIR: one that
    /// went missing since the sync stored it is fetched again, one changed since is a
    /// conflict, named and left as it is (replaced with --replace-foreign).
    #[arg(long)]
    pub(crate) baseline: bool,
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
    #[arg(
        long,
        value_name = "N",
        default_value_t = u64::MAX,
        hide_default_value = true,
        requires = "delete"
    )]
    max_deletes: u64,
    /// Requests in flight at once.
    #[arg(long, value_name = "N", default_value_t = 8)]
    concurrency: usize,
    /// Which listed digests each resource is checked against besides its length:
    /// `strongest` (sha-256 where listed, else md5: a body that matches it is the listed
    /// one) or `all` (every listed md5 and sha-256: a Source whose digests disagree with
    /// each other is noticed). A resource listed with neither is not checked; its
    /// sha-256 is recorded all the same.
    #[arg(long, value_name = "WHICH", default_value = "strongest", value_parser = verification)]
    verify: Verification,
    /// Bytes a resource listed without a length may have (K, M, G: powers of 1024); past
    /// them its fetch fails. A listed length bounds a resource itself.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = resourcesync_cli::units::bytes)]
    max_unlisted_bytes: u64,
    /// Time one request may take in all, however steadily its bytes come (then it is
    /// retried); ms, s or m.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = resourcesync_cli::units::duration)]
    max_request_time: std::time::Duration,
    /// Answer requests for URLs under PREFIX from the directory DIR (a mirror on disk).
    #[arg(long, value_name = "PREFIX=DIR")]
    mirror: Vec<String>,
    /// Replace whatever file is at a listed path: one no sync stored, and one changed since
    /// a sync stored it (by default either is a conflict, named and left as it is; a file
    /// no sync stored that holds the listed bytes is taken as stored).
    #[arg(long)]
    replace_foreign: bool,
    /// Fetch from another host or port too (HOST or HOST:PORT; repeatable): a Source
    /// built for another address than SOURCE-URL's, resources on a mirror host. Their
    /// files go under DIR/@HOST:PORT/.
    #[arg(long, value_name = "HOST[:PORT]")]
    allow_authority: Vec<String>,
    /// Only shard K of N of the Source's resources (K from 0; split by a hash of their
    /// URIs, the same on every machine and version), with a state of its own in
    /// DIR/.resourcesync/shards/K-of-N/: N runs, one per shard, on as many machines,
    /// fill DIR together as one run would. An audit without --shard audits the whole.
    #[arg(long, value_name = "K/N", value_parser = shard)]
    shard: Option<resourcesync_client::Shard>,
    #[command(flatten)]
    store: StoreArgs,
    /// One JSON object per event and line, then a summary object.
    #[arg(long)]
    pub(crate) json: bool,
    /// Go on after the first run: follow the Source's notifications, and sync every
    /// --interval besides.
    #[arg(long, conflicts_with_all = ["audit", "dry_run"])]
    pub(crate) follow: bool,
    /// Where the follower's callback listens for the hub.
    #[arg(
        long,
        value_name = "IP:PORT",
        default_value = "127.0.0.1:0",
        requires = "follow"
    )]
    pub(crate) listen: std::net::SocketAddr,
    /// The callback's URL as the hub reaches it [default: `http://` and the address bound,
    /// an unguessable path]
    #[arg(long, value_name = "URL", requires = "follow")]
    callback_url: Option<String>,
    /// Sync at least this often while following.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = resourcesync_cli::units::duration, requires = "follow")]
    interval: std::time::Duration,
    /// The lease asked of the hub; the follower renews before it ends (the hub may grant
    /// another).
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = resourcesync_cli::units::duration, requires = "follow")]
    lease: std::time::Duration,
}

impl SyncArgs {
    /// The options these arguments ask for, or why they cannot be (a SOURCE-URL that is
    /// not a URL, a `--mirror` that is not PREFIX=DIR).
    pub(crate) fn options(&self) -> Result<SyncOptions, Error> {
        // Both are there unless --sources is, which does not come here (clap's
        // `required_unless_present`).
        let (Some(source), Some(dir)) = (&self.source, &self.dir) else {
            return Err(Error::Usage("SOURCE-URL and DIR, or --sources FILE".into()));
        };
        let source = source.parse().map_err(|e| Error::url(source, e))?;
        let mut options = SyncOptions::new(source, dir.clone())
            .with_audit(self.audit)
            .with_dry_run(self.dry_run)
            .with_baseline(self.baseline)
            .with_dump(self.dump)
            .with_concurrency(self.concurrency)
            .with_verification(self.verify)
            .with_limits(self.max_unlisted_bytes, self.max_request_time)
            .with_replace_foreign(self.replace_foreign)
            .with_shard(self.shard);
        if self.delete {
            options = options.with_delete(self.max_deletes);
        }
        for authority in &self.allow_authority {
            options = options.with_allowed_authority(authority);
        }
        for (prefix, dir) in mirrors(&self.mirror)? {
            options = options.with_mirror(prefix, dir);
        }
        Ok(options)
    }
}

/// Runs `sync` and returns its exit status.
pub(crate) fn run(args: SyncArgs) -> ExitCode {
    if let Some(file) = args.sources.clone() {
        return spawned(
            "sync",
            async move { crate::harvest::run(&args, &file).await },
        );
    }
    if args.follow {
        return spawned("sync", async move { follow(&args).await });
    }
    spawned("sync", async move {
        let options = args.options()?;
        match store_url(&options.dir) {
            Some(url) => {
                let store = Store {
                    url,
                    options: args.store.options()?,
                    lease: args.store.store_lease,
                };
                sync_to(&options, Some(&store), args.json).await
            }
            None => sync(&options, args.json).await,
        }
    })
}

/// [`block_on`] with `run` spawned as a task of the runtime's
/// ([`asynchronous::spawned`]).
pub(crate) fn spawned(
    command: &str,
    run: impl std::future::Future<Output = Result<u8, Error>> + Send + 'static,
) -> ExitCode {
    block_on(command, async move {
        // Only a runtime shutting down cancels the task, and this one outlives it.
        asynchronous::spawned(run)
            .await
            .unwrap_or_else(|e| Err(Error::Task("the sync", e)))
    })
}

/// A bucket's prefix to sync into: its URL, the store's settings, the lease.
pub(crate) struct Store {
    url: url::Url,
    options: Vec<(String, String)>,
    lease: std::time::Duration,
}

impl Store {
    /// The prefix opened for a run of `options` (a follower's each run).
    fn open_for(
        &self,
        options: &SyncOptions,
    ) -> Result<ObjectDestination, resourcesync_destination::SyncError> {
        Ok(ObjectDestination::open_for(
            &self.url,
            &self.options,
            self.lease,
            options,
        )?)
    }
}

/// The settings of a bucket, for a DIR (or PUBLISH-DIR) written `s3://...`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct StoreArgs {
    /// A setting of the object store's, for a directory written `s3://BUCKET/PREFIX`
    /// (KEY=VALUE, repeatable; the keys of the object_store crate: aws_endpoint,
    /// aws_allow_http, aws_region, ...).
    #[arg(long, value_name = "KEY=VALUE")]
    store_option: Vec<String>,
    /// How long a run into a bucket holds its prefix unless it renews its lease: a run
    /// that was killed keeps the next one out this long.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = resourcesync_cli::units::duration)]
    pub(crate) store_lease: std::time::Duration,
}

impl StoreArgs {
    /// The `--store-option KEY=VALUE` settings.
    pub(crate) fn options(&self) -> Result<Vec<(String, String)>, Error> {
        self.store_option
            .iter()
            .map(|o| match o.split_once('=') {
                Some((key, value)) => Ok((key.to_owned(), value.to_owned())),
                None => Err(Error::Usage(format!("--store-option {o:?}: not KEY=VALUE"))),
            })
            .collect()
    }
}

/// DIR as a store's URL, when it is one (`s3://`): a directory is never named so.
pub(crate) fn store_url(dir: &std::path::Path) -> Option<url::Url> {
    let text = dir.to_str()?;
    text.starts_with("s3://").then(|| text.parse().ok())?
}

/// `sync --follow`: the follower, printing a line per run and notice (with `--json`, an
/// object per event and notice), until SIGINT or SIGTERM; exit status 130.
async fn follow(args: &SyncArgs) -> Result<u8, Error> {
    let store = match store_url(args.dir.as_deref().unwrap_or(std::path::Path::new(""))) {
        Some(url) => Some(Store {
            url,
            options: args.store.options()?,
            lease: args.store.store_lease,
        }),
        None => None,
    };
    let mut options = FollowOptions::new(args.options()?)
        .with_listen(args.listen)
        .with_interval(args.interval)
        .with_lease(args.lease);
    if let Some(url) = &args.callback_url {
        options = options.with_callback_url(url.parse().map_err(|e| Error::url(url, e))?);
    }
    let stop = AsyncStop::new();
    let _listener = listen(stop.clone());
    let mut printer = Printer {
        json: args.json,
        bar: ProgressBar::hidden(),
        warnings: WarningSummary::new(),
        start: options.sync.source.clone(),
        hinted: Vec::new(),
    };
    let followed = match &store {
        None => resourcesync_destination::follow::follow(&options, &stop, &mut printer).await?,
        Some(store) => {
            let open = |options: &SyncOptions| store.open_for(options);
            resourcesync_destination::follow::follow_into(&options, open, &stop, &mut printer)
                .await?
        }
    };
    for group in printer.warnings.groups() {
        eprintln!("warning: {group}");
    }
    // A follower the hub never took polled every run: said at its end, as well as at
    // each attempt.
    let line = followed.to_string();
    if args.json {
        let summary = serde_json::json!({"followed": {"runs": followed.runs,
            "failed": followed.failed, "notifications": followed.notifications,
            "ignored": followed.ignored, "subscribed": followed.subscribed,
            "refusal": followed.refusal}});
        let _ = writeln!(io::stdout().lock(), "{summary}");
    } else {
        let _ = writeln!(io::stdout().lock(), "{line}");
    }
    Ok(130)
}

impl FollowObserver for Printer {
    fn follow(&mut self, notice: &FollowNotice) {
        let line = match self.json {
            true => follow_json(notice).map(|v| v.to_string()),
            false => follow_line(notice),
        };
        // What went wrong (a subscription refused or failed, the hub outside the policy,
        // a run that failed) on standard error, as the help says of problems; what the
        // follower did on standard output. `--json` keeps every line on standard output.
        let problem = matches!(
            notice,
            FollowNotice::SubscriptionFailed { .. }
                | FollowNotice::Denied(_)
                | FollowNotice::HubRefused(_)
                | FollowNotice::RunFailed(_)
        );
        match line {
            Some(line) if problem && !self.json => eprintln!("{line}"),
            Some(line) => {
                let _ = writeln!(io::stdout().lock(), "{line}");
            }
            None => {}
        }
        // What to do about a run's deletions not made and its conflicts, after its line,
        // as a single sync says them after its summary; but not again after each run
        // while they are the same: a conflict left as it is is met by every run (its
        // problem line says so each time), and a follower runs every few seconds. A
        // hint whose count changed, or that comes back, is said again.
        if let FollowNotice::Synced { synced, .. } = notice
            && !self.json
        {
            let hints = synced.hints(false);
            if hints != self.hinted {
                for hint in &hints {
                    eprintln!("resourcesync sync: {hint}");
                }
            }
            self.hinted = hints;
        }
    }
}

/// A follower's notice as the JSON object `--json` prints, if it prints one.
pub(crate) fn follow_json(notice: &FollowNotice) -> Option<serde_json::Value> {
    Some(match notice {
        FollowNotice::Synced { cause, synced } => serde_json::json!({
                    "follow": "synced", "cause": format!("{cause:?}").to_lowercase(),
                    "summary": synced.to_string(), "complete": synced.report.complete,
                    "created": synced.report.created, "updated": synced.report.updated,
                    "deleted": synced.report.deleted}),
        FollowNotice::Channel(channel) => serde_json::json!({"follow": "channel",
                    "topic": channel.topic, "hub": channel.hub}),
        FollowNotice::Listening(url) => {
            serde_json::json!({"follow": "listening", "callback": url})
        }
        FollowNotice::Subscribed(lease) => {
            serde_json::json!({"follow": "subscribed", "lease": lease.as_secs()})
        }
        FollowNotice::Unsubscribed => serde_json::json!({"follow": "unsubscribed"}),
        FollowNotice::Denied(reason) => {
            serde_json::json!({"follow": "denied", "reason": reason})
        }
        FollowNotice::HubRefused(refused) => {
            serde_json::json!({"follow": "hub-refused", "reason": refused.to_string()})
        }
        FollowNotice::SubscriptionFailed {
            status,
            reason,
            retry_at,
        } => {
            serde_json::json!({"follow": "subscription-failed",
                    "status": status.map(|s| s.as_u16()), "reason": reason,
                    "retry_in": seconds_until(*retry_at)})
        }
        FollowNotice::Notified { interval, entries } => {
            serde_json::json!({"follow": "notified",
                    "from": interval.as_ref().map(|i| &i.0), "until": interval.as_ref().map(|i| &i.1),
                    "entries": entries})
        }
        FollowNotice::Ignored(why) => serde_json::json!({"follow": "ignored", "why": why}),
        FollowNotice::RunFailed(why) => serde_json::json!({"follow": "run-failed", "why": why}),
        FollowNotice::Irregular(event) => match event {
            FollowerEvent::Gap { after, from } => serde_json::json!({"follow": "gap",
                        "after": after.to_string(), "from": from.to_string()}),
            FollowerEvent::Overlap { after, from } => {
                serde_json::json!({"follow": "overlap",
                        "after": after.to_string(), "from": from.to_string()})
            }
            FollowerEvent::Stale { until, latest } => serde_json::json!({"follow": "stale",
                        "until": until.to_string(), "latest": latest.to_string()}),
            _ => return None,
        },
        _ => return None,
    })
}

/// Whole seconds until `at`, rounded up (a wait of half a second is "1 s", not "0 s"):
/// 0 once it is past.
fn seconds_until(at: std::time::SystemTime) -> u64 {
    at.duration_since(std::time::SystemTime::now())
        .map_or(0, |wait| {
            wait.as_secs() + u64::from(wait.subsec_nanos() > 0)
        })
}

/// A follower's notice as the line the command prints, if it prints one.
pub(crate) fn follow_line(notice: &FollowNotice) -> Option<String> {
    Some(match notice {
        FollowNotice::Synced { synced, .. } => synced.to_string(),
        FollowNotice::Channel(channel) => {
            format!(
                "following the channel {} at the hub {}",
                channel.topic, channel.hub
            )
        }
        FollowNotice::Listening(url) => format!("listening for the hub at {url}"),
        FollowNotice::Subscribed(lease) => format!("subscribed for {} s", lease.as_secs()),
        FollowNotice::Unsubscribed => "unsubscribed".into(),
        FollowNotice::Denied(reason) => format!(
            "the hub refused the subscription{}; polling",
            // The hub's words, with no control character for the terminal.
            reason
                .as_ref()
                .map(|r| format!(" ({})", escaped(r)))
                .unwrap_or_default()
        ),
        FollowNotice::HubRefused(refused) => {
            format!("not subscribing: the Source's hub is outside the policy ({refused}); polling")
        }
        FollowNotice::SubscriptionFailed {
            status,
            reason,
            retry_at,
        } => {
            let again = match seconds_until(*retry_at) {
                0 => "trying again".to_owned(),
                wait => format!("trying again in {wait} s"),
            };
            match status {
                Some(status) => format!(
                    "the hub answered the subscription with {status}{}; {again}",
                    // The hub's words, with no control character for the terminal.
                    reason
                        .as_ref()
                        .map(|r| format!(": {}", escaped(r)))
                        .unwrap_or_default()
                ),
                None => format!("the hub did not answer the subscription; {again}"),
            }
        }
        FollowNotice::Notified { entries, .. } => format!("notified of {entries} changes"),
        FollowNotice::Ignored(why) => format!("ignored a body at the callback: {why}"),
        FollowNotice::RunFailed(why) => format!("a run failed (the next goes on): {why}"),
        FollowNotice::Irregular(event) => match event {
            FollowerEvent::Gap { after, from } => format!(
                "a notification from {from}, the last one until {after}: changes between \
                     were not notified (the run reads them from the Change Lists)"
            ),
            FollowerEvent::Overlap { after, from } => {
                format!("a notification from {from} overlaps the last one, until {after}")
            }
            FollowerEvent::Stale { until, latest } => format!(
                "a notification until {until}, older than one until {latest} (reordered or \
                     replayed)"
            ),
            _ => return None,
        },
        _ => return None,
    })
}

/// Runs a subcommand's future on a tokio runtime of its own: its exit status, or 2 (said
/// on standard error with its causes, named by `command`) when it could not start.
pub(crate) fn block_on(
    command: &str,
    run: impl std::future::Future<Output = Result<u8, Error>>,
) -> ExitCode {
    let ran = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Error::Runtime)
        .and_then(|runtime| {
            let ran = runtime.block_on(run);
            // The command's work is done (saved, printed) and the process ends next:
            // its threads are not waited for, each handing its memory back on its way
            // out (a few ms after a sync of 10,000 files, within one run's noise).
            runtime.shutdown_background();
            ran
        });
    match ran {
        Ok(status) => ExitCode::from(status),
        Err(e) => {
            eprintln!("resourcesync {command}: {}", Chain(&e));
            ExitCode::from(2)
        }
    }
}

/// The `--mirror PREFIX=DIR` options: each URL prefix with its directory.
pub(crate) fn mirrors(options: &[String]) -> Result<Vec<(String, PathBuf)>, Error> {
    options
        .iter()
        .map(|m| match m.split_once('=') {
            Some((prefix, dir)) => Ok((prefix.to_owned(), PathBuf::from(dir))),
            None => Err(Error::Mirror(m.clone())),
        })
        .collect()
}

/// Runs a sync on the current tokio runtime and prints its summary (a line, or with
/// `json` an object): the exit status ([`Synced::exit_status`]), or why it could not
/// start.
pub(crate) async fn sync(options: &SyncOptions, json: bool) -> Result<u8, Error> {
    sync_to(options, None, json).await
}

/// [`sync`] into `store` when there is one (DIR is its URL), else into DIR.
pub(crate) async fn sync_to(
    options: &SyncOptions,
    store: Option<&Store>,
    json: bool,
) -> Result<u8, Error> {
    let synced = synchronize_to(options, store, json).await?;
    let Synced {
        mode: name,
        report,
        seconds,
        interrupted,
        ..
    } = &synced;
    let stdout = io::stdout();
    if json {
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
        // An audit changes nothing either, but its counts are what it found, not what a
        // run would decide: the dry run's note is not for it.
        for hint in synced.hints(options.dry_run && !options.audit) {
            eprintln!("resourcesync sync: {hint}");
        }
    }
    Ok(synced.exit_status())
}

/// Runs a sync on the current tokio runtime, printing problems and warnings (and, with
/// `json`, every event) as they come, but no summary: what it came to, or why it could
/// not start. SIGINT and SIGTERM stop it (it saves what it did); a second one ends the
/// process at once.
pub(crate) async fn synchronize(options: &SyncOptions, json: bool) -> Result<Synced, Error> {
    synchronize_to(options, None, json).await
}

/// [`synchronize`] into `store` when there is one.
async fn synchronize_to(
    options: &SyncOptions,
    store: Option<&Store>,
    json: bool,
) -> Result<Synced, Error> {
    let stop = AsyncStop::new();
    let _listener = listen(stop.clone());
    let bar = ProgressBar::new(0).with_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} changes, {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    let mut printer = Printer {
        json,
        bar: bar.clone(),
        warnings: WarningSummary::new(),
        start: options.source.clone(),
        hinted: Vec::new(),
    };
    let synced = match store {
        None => asynchronous::sync(options, &stop, &mut printer).await,
        Some(store) => {
            let open = |options: &SyncOptions| store.open_for(options);
            let gate = resourcesync_destination::gate::Gate::unlimited();
            asynchronous::sync_into(options, open, &gate, &stop, &mut printer).await
        }
    };
    bar.finish_and_clear();
    // A line per document and rule, with a count and the first entries, not a line per
    // entry (`--json` keeps every one).
    for group in printer.warnings.groups() {
        eprintln!("warning: {group}");
    }
    Ok(synced?)
}

/// What the command shows of a run: problems and an audit's findings on standard error as
/// they come, warnings summarized at the end (every event as a JSON line on standard
/// output with `--json`), the progress in a bar.
struct Printer {
    json: bool,
    bar: ProgressBar,
    warnings: WarningSummary,
    /// SOURCE-URL.
    start: resourcesync_model::Uri,
    /// The hints said after a follower's last run ([`Synced::hints`]): not said again
    /// while each run's are the same.
    hinted: Vec<String>,
}

impl Observer for Printer {
    fn event(&mut self, event: &Event) {
        if self.json {
            if let Ok(line) = serde_json::to_string(event) {
                let _ = writeln!(io::stdout().lock(), "{line}");
            }
            return;
        }
        match event {
            Event::Problem(problem) => self.bar.suspend(|| {
                eprintln!("problem: {}", resourcesync_cli::problem_line(problem));
                // A new user's first mistake: the URL of a resource, or of a web page,
                // where the Source's is meant. The line above says what it is not.
                if let ProblemKind::Document(e) = &problem.kind
                    && problem.uri.as_ref() == Some(&self.start)
                    && not_resourcesync(e)
                {
                    eprintln!(
                        "resourcesync sync: {} is not a ResourceSync document: SOURCE-URL \
                         is the Source's base URL (ending in /: its Source Description is \
                         found from there) or the URL of its Source Description, a \
                         Capability List, or a list or index one names",
                        self.start
                    );
                }
            }),
            Event::Warning(warning) => self.warnings.add(warning),
            Event::Audit { uri, standing } => {
                self.bar.suspend(|| eprintln!("{standing}: {uri}"));
            }
            _ => {}
        }
    }

    fn progress(&mut self, progress: &Progress) {
        // Called after every input: a hidden bar (no terminal) is not worth the message's
        // formatting and the bar's lock (2 % of a sync of small files).
        if self.bar.is_hidden() {
            return;
        }
        self.bar.set_length(progress.planned);
        self.bar.set_position(progress.settled);
        self.bar.set_message(format!(
            "{} documents, {} listed, {} bytes",
            progress.documents, progress.listed, progress.bytes
        ));
    }

    fn notice(&mut self, notice: &Notice) {
        match notice {
            Notice::ExtraFile(path) if self.json => {
                let line = serde_json::json!({"event": "extra-file", "path": path});
                let _ = writeln!(io::stdout().lock(), "{line}");
            }
            Notice::ForeignFile { path, uri } if self.json => {
                let line = serde_json::json!({
                    "event": "foreign-file",
                    "path": path,
                    "uri": uri.as_str(),
                });
                let _ = writeln!(io::stdout().lock(), "{line}");
            }
            Notice::ExtraFile(_) => eprintln!("{notice}"),
            Notice::ForeignFile { .. } => {
                eprintln!(
                    "{notice}: a run takes it if it holds the listed bytes, else leaves it (a conflict) unless --replace-foreign"
                );
            }
            _ => self
                .bar
                .suspend(|| eprintln!("resourcesync sync: {notice}")),
        }
    }
}

/// Whether a document's error says it is no document of ResourceSync's at all (a
/// resource's bytes, a web page), rather than one that breaks a rule: its root is not a
/// sitemap's, it is empty or an HTML page's doctype, or its first byte is no XML (text,
/// bytes that are no UTF-8). A document in an encoding the reader refuses, or one whose
/// transfer failed, is a sitemap that could not be read: not said to be the wrong URL.
fn not_resourcesync(error: &resourcesync_client::DocumentError) -> bool {
    use resourcesync_xml::ErrorKind;
    let first = error.position().byte == 0;
    match error.kind() {
        ErrorKind::NotSitemap { .. } | ErrorKind::Empty | ErrorKind::DocType => true,
        ErrorKind::Xml(_) | ErrorKind::UnexpectedText(_) | ErrorKind::ForbiddenCharacter(_) => {
            first
        }
        _ => false,
    }
}

/// SIGINT (Ctrl-C) and SIGTERM: the first asks the run to stop and save, a second ends
/// the process at once (exit 130). The listener ends with the handle.
pub(crate) fn listen(stop: AsyncStop) -> Listener {
    Listener(tokio::spawn(async move {
        let Ok(mut term) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        else {
            return;
        };
        let Ok(mut int) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        else {
            return;
        };
        for _ in 0..2 {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            if stop.stop() {
                std::process::exit(130);
            }
        }
    }))
}

/// The signal listener of a run, aborted when the run is over: the signals are no longer
/// its to handle.
pub(crate) struct Listener(tokio::task::JoinHandle<()>);

impl Drop for Listener {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `--verify`'s value.
fn verification(value: &str) -> Result<Verification, String> {
    match value {
        "strongest" => Ok(Verification::Strongest),
        "all" => Ok(Verification::All),
        _ => Err(format!("{value:?} is neither `strongest` nor `all`")),
    }
}

/// `--shard`'s value: `K/N`, K below N.
fn shard(value: &str) -> Result<resourcesync_client::Shard, String> {
    let bad = || format!("{value:?} is not K/N with K below N (shard 0/4 to 3/4 of 4)");
    let (k, n) = value.split_once('/').ok_or_else(bad)?;
    let (k, n) = (
        k.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    resourcesync_client::Shard::new(k, n).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    /// A wait is said in whole seconds rounded up: the follower's first retry, half a
    /// second away, was said "in 0 s" (JSON) or "in 1 s" for waits of 1 s and 2 s.
    #[test]
    fn a_wait_is_said_in_seconds_rounded_up() {
        let now = SystemTime::now();
        // Far enough that the time this test takes cannot round them down.
        assert_eq!(super::seconds_until(now + Duration::from_millis(2_500)), 3);
        assert_eq!(super::seconds_until(now + Duration::from_secs(60)), 60);
        assert_eq!(super::seconds_until(now - Duration::from_secs(1)), 0);
    }
}
