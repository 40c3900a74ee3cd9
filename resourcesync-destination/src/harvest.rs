//! Many Sources in one run (feature `reqwest`): what an aggregator does. Each Source is
//! synced into its own directory exactly as a sync of it alone would (its own state,
//! checkpoint and inventory there), many at once, within limits shared by all of them
//! ([`Gate`]): requests in flight in all, and per authority, each authority paced by its
//! robots.txt's `Crawl-delay`. One Source failing, hanging or running slow holds its own
//! places only; the others go on. [`harvest`] runs each once and says what each came to
//! and when it is next due; [`follow`] keeps following them all.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use resourcesync_destination::asynchronous::AsyncStop;
//! use resourcesync_destination::harvest::{self, Harvest, Limits, Member};
//! use resourcesync_destination::SyncOptions;
//!
//! let sources = vec![
//!     Member::new("one", SyncOptions::new("https://one.example/".parse()?, "mirror/one")),
//!     Member::new("two", SyncOptions::new("https://two.example/".parse()?, "mirror/two")),
//! ];
//! let harvest = Harvest::new(sources, Limits::default())?;
//! for done in harvest::harvest(&harvest, &AsyncStop::new(), Arc::new(())).await {
//!     println!("{}: {}", done.name, done.status());
//! }
//! # Ok(())
//! # }
//! ```

use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use resourcesync_client::Event;
use resourcesync_client::follow::Follower;
use tokio::sync::{OnceCell, Semaphore};

use crate::asynchronous::{AsyncStop, sync_with_gate};
use crate::follow::{FollowNotice, FollowObserver, FollowOptions, Followed};
use crate::gate::{Gate, authority_of};
use crate::options::SyncOptions;
use crate::run::{Notice, Observer, SyncError};
use crate::synced::Synced;

/// The user agent a harvest's robots.txt groups are matched against.
pub const ROBOTS_AGENT: &str = "resourcesync-rs";

/// The most of a robots.txt read (RFC 9309 asks parsers to read at least 500 KiB).
const ROBOTS_LIMIT: usize = 512 * 1024;

/// One Source of a harvest: its name (in reports), the sync of it, and its schedule.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Member {
    /// Its name in reports; unique in a harvest.
    pub name: String,
    /// The sync of it: the Source, its own directory (made with its parents), and its
    /// options.
    pub sync: SyncOptions,
    /// How often it is due when its last run completed (a run that did not complete is
    /// retried sooner: 1 s, doubling, up to this).
    pub interval: Duration,
    /// The longest one run of it may take in a [`harvest`]: then it is stopped, keeping
    /// what it did (as a stop does), and reported timed out. `None`: no limit. A
    /// follower's runs ([`follow`]) are bounded by their requests' timeouts only.
    pub max_time: Option<Duration>,
    /// The bucket's prefix its resources go into instead of a directory (feature
    /// `object-store`; see [`with_bucket`](Member::with_bucket)).
    #[cfg(feature = "object-store")]
    pub bucket: Option<MemberBucket>,
}

/// A bucket's prefix a [`Member`] is synced into, as `sync SOURCE-URL s3://...` syncs
/// (feature `object-store`): [`ObjectDestination::open_for`](crate::objects::ObjectDestination::open_for)'s arguments.
#[cfg(feature = "object-store")]
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MemberBucket {
    /// `s3://BUCKET/PREFIX`, or any URL the store opens.
    pub url: url::Url,
    /// The store's settings (`aws_endpoint`, ...), over the `AWS_*` variables.
    pub options: Vec<(String, String)>,
    /// How long its lease lasts unless renewed.
    pub lease: Duration,
}

#[cfg(feature = "object-store")]
impl MemberBucket {
    /// The prefix opened for a run of `options` (each run of a harvest or a follower).
    fn open_for(
        &self,
        options: &SyncOptions,
    ) -> Result<crate::objects::ObjectDestination, SyncError> {
        Ok(crate::objects::ObjectDestination::open_for(
            &self.url,
            &self.options,
            self.lease,
            options,
        )?)
    }
}

impl Member {
    /// `sync`, named `name`, due every hour, with no limit on a run's time.
    pub fn new(name: impl Into<String>, sync: SyncOptions) -> Member {
        Member {
            name: name.into(),
            sync,
            interval: Duration::from_secs(3600),
            max_time: None,
            #[cfg(feature = "object-store")]
            bucket: None,
        }
    }

    /// Synced into the bucket's prefix at `url` (with the store's `options`, its lease
    /// lasting `lease`) rather than a directory: its [`SyncOptions::dir`] then only names
    /// it (unique in the harvest), as `sync`'s DIR argument does.
    #[cfg(feature = "object-store")]
    #[must_use]
    pub fn with_bucket(
        mut self,
        url: url::Url,
        options: Vec<(String, String)>,
        lease: Duration,
    ) -> Member {
        self.bucket = Some(MemberBucket {
            url,
            options,
            lease,
        });
        self
    }

    /// Due every `interval` after a complete run.
    #[must_use]
    pub fn with_interval(mut self, interval: Duration) -> Member {
        self.interval = interval.max(Duration::from_millis(10));
        self
    }

    /// One run may take `max` at most.
    #[must_use]
    pub fn with_max_time(mut self, max: Duration) -> Member {
        self.max_time = Some(max);
        self
    }
}

/// The limits shared by every Source of a harvest.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Limits {
    /// Sources synced at once.
    pub sources: usize,
    /// Requests in flight in all.
    pub requests: usize,
    /// Requests in flight to one authority (scheme, host and port).
    pub per_authority: usize,
    /// Whether each authority's robots.txt is read for a `Crawl-delay` (for the group of
    /// [`ROBOTS_AGENT`], else `*`) and its requests paced by it.
    pub robots: bool,
}

impl Limits {
    /// The most any of the limits may be.
    pub const MAX: usize = 1_000_000;

    /// `sources` synced at once, `requests` in flight in all, `per_authority` to one
    /// authority (each from one to [`Limits::MAX`]); robots.txt read.
    pub fn new(sources: usize, requests: usize, per_authority: usize) -> Limits {
        let bound = |n: usize| n.clamp(1, Limits::MAX);
        Limits {
            sources: bound(sources),
            requests: bound(requests),
            per_authority: bound(per_authority),
            robots: true,
        }
    }

    /// Whether robots.txt is read for a Crawl-delay.
    #[must_use]
    pub fn with_robots(mut self, robots: bool) -> Limits {
        self.robots = robots;
        self
    }
}

impl Default for Limits {
    /// 16 Sources at once, 64 requests in flight in all, 4 per authority, robots.txt read.
    fn default() -> Limits {
        Limits {
            sources: 16,
            requests: 64,
            per_authority: 4,
            robots: true,
        }
    }
}

/// The Sources of a harvest and its limits, checked: names unique, and no directory the
/// same as or inside another's (each Source's state and files are its own).
#[derive(Debug, Clone)]
pub struct Harvest {
    members: Vec<Member>,
    limits: Limits,
}

/// Why the Sources cannot be harvested together.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HarvestError {
    /// Nothing to harvest.
    #[error("no Sources to harvest")]
    Empty,
    /// Two Sources share a name.
    #[error("two Sources are named {0:?}")]
    SameName(String),
    /// Two Sources' directories are one, or one is inside the other: each sync must own
    /// its directory (its state, its inventory, and what it may delete).
    #[error(
        "the directories of {first:?} ({first_dir}) and {second:?} ({second_dir}) overlap: each Source needs a directory of its own"
    )]
    Overlap {
        /// The first Source's name.
        first: String,
        /// Its directory.
        first_dir: String,
        /// The second's.
        second: String,
        /// Its directory.
        second_dir: String,
    },
}

impl Harvest {
    /// Checks `members` and takes them with `limits`.
    pub fn new(members: Vec<Member>, limits: Limits) -> Result<Harvest, HarvestError> {
        if members.is_empty() {
            return Err(HarvestError::Empty);
        }
        let mut seen = std::collections::HashSet::new();
        for m in &members {
            if !seen.insert(m.name.as_str()) {
                return Err(HarvestError::SameName(m.name.clone()));
            }
        }
        // Compared as absolute, lexically normal paths: a link between two directories is
        // not seen here, but each sync holds a lock in its own directory, so two runs in
        // one directory still cannot happen at once.
        let dirs: Vec<PathBuf> = members.iter().map(|m| normal(&m.sync.dir)).collect();
        for (i, a) in dirs.iter().enumerate() {
            for (j, b) in dirs.iter().enumerate().skip(i + 1) {
                if a.starts_with(b) || b.starts_with(a) {
                    return Err(HarvestError::Overlap {
                        first: members[i].name.clone(),
                        first_dir: members[i].sync.dir.display().to_string(),
                        second: members[j].name.clone(),
                        second_dir: members[j].sync.dir.display().to_string(),
                    });
                }
            }
        }
        Ok(Harvest { members, limits })
    }

    /// Every Source's sync changed by `f` (an audit of them all, say), checked again.
    pub fn map_sync(self, f: impl Fn(SyncOptions) -> SyncOptions) -> Result<Harvest, HarvestError> {
        let members = self
            .members
            .into_iter()
            .map(|mut m| {
                m.sync = f(m.sync);
                m
            })
            .collect();
        Harvest::new(members, self.limits)
    }

    /// The Sources, in the order given.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// `path` absolute (against the working directory) with `.` and `..` taken out.
fn normal(path: &Path) -> PathBuf {
    let absolute = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    let mut out = PathBuf::new();
    for c in absolute.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What one Source's run came to.
#[derive(Debug)]
#[non_exhaustive]
pub struct Harvested {
    /// Its name.
    pub name: String,
    /// Its place in the harvest's list.
    pub index: usize,
    /// What the run did, or why it could not start or go on.
    pub outcome: Result<Synced, SyncError>,
    /// The first problem the run met and how many it met, when it did not complete.
    pub why: Option<String>,
    /// The run was stopped for taking longer than [`Member::max_time`].
    pub timed_out: bool,
    /// The `Crawl-delay` its authority's robots.txt set, if any.
    pub crawl_delay: Option<Duration>,
    /// When the run started and ended.
    pub started: SystemTime,
    /// When it ended.
    pub ended: SystemTime,
    /// When the Source is next due: an interval after a complete run, sooner after one
    /// that was not.
    pub next_due: SystemTime,
}

impl Harvested {
    /// Whether the run completed (an audit: and found its directory in sync).
    pub fn is_complete(&self) -> bool {
        match &self.outcome {
            Ok(synced) => {
                !synced.interrupted
                    && synced.report.complete
                    && synced.report.in_sync.unwrap_or(true)
            }
            Err(_) => false,
        }
    }

    /// `complete`, `incomplete`, `interrupted`, `timed out` or `failed`.
    pub fn status(&self) -> &'static str {
        match &self.outcome {
            Err(_) => "failed",
            Ok(_) if self.is_complete() => "complete",
            Ok(_) if self.timed_out => "timed out",
            Ok(synced) if synced.interrupted => "interrupted",
            Ok(_) => "incomplete",
        }
    }

    /// Why it did not complete, in a line: the error, or the first problem met.
    pub fn reason(&self) -> Option<String> {
        match &self.outcome {
            Err(e) => Some(e.to_string()),
            Ok(_) if self.is_complete() => None,
            Ok(synced) => self.why.clone().or_else(|| {
                let r = &synced.report;
                Some(match (self.timed_out, synced.interrupted, r.in_sync) {
                    (true, _, _) => "stopped at its time limit".to_owned(),
                    (_, true, _) => "stopped".to_owned(),
                    (_, _, Some(false)) => format!(
                        "not in sync: {} changed, {} missing, {} extra",
                        r.changed, r.missing, r.extra
                    ),
                    _ => format!(
                        "{} failed, {} refused, {} conflicts",
                        r.failed, r.refused, r.conflicts
                    ),
                })
            }),
        }
    }
}

/// What a harvest tells its caller as it goes; every method is called from the task of
/// the Source it names (by its index in the harvest), so from many threads at once.
pub trait HarvestObserver: Send + Sync {
    /// The Source's run begins.
    fn started(&self, index: usize, member: &Member) {
        let _ = (index, member);
    }
    /// An event of the Source's client.
    fn event(&self, index: usize, event: &Event) {
        let _ = (index, event);
    }
    /// A notice of the Source's run.
    fn notice(&self, index: usize, notice: &Notice) {
        let _ = (index, notice);
    }
    /// A follower's notice about the Source ([`follow`] only).
    fn follow(&self, index: usize, notice: &FollowNotice) {
        let _ = (index, notice);
    }
    /// The Source's run ended.
    fn finished(&self, done: &Harvested) {
        let _ = done;
    }
    /// The Source's follower cannot go on ([`follow`] only): it ends with `error`, the
    /// others go on.
    fn failed(&self, index: usize, error: &SyncError) {
        let _ = (index, error);
    }
}

impl HarvestObserver for () {}

/// The places a harvest shares: the gate and each authority's robots.txt, read once.
struct Shared {
    gate: Gate,
    limits: Limits,
    robots: Mutex<std::collections::HashMap<String, Arc<OnceCell<Option<Duration>>>>>,
    http: Option<reqwest::Client>,
}

impl Shared {
    fn new(limits: &Limits) -> Shared {
        Shared {
            gate: Gate::new(limits.requests, limits.per_authority),
            limits: limits.clone(),
            robots: Mutex::default(),
            // Redirects are not followed: a robots.txt elsewhere governs another authority.
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("resourcesync-rs/", env!("CARGO_PKG_VERSION")))
                .timeout(Duration::from_secs(5))
                .build()
                .ok(),
        }
    }

    /// The Crawl-delay of the Source's authority, read once per harvest from its
    /// robots.txt and set at the gate.
    async fn crawl_delay(&self, member: &Member) -> Option<Duration> {
        if !self.limits.robots {
            return None;
        }
        let uri: http::Uri = member.sync.source.as_str().parse().ok()?;
        let authority = authority_of(&uri)?;
        let cell = {
            let mut map = self.robots.lock().unwrap_or_else(PoisonError::into_inner);
            map.entry(authority.clone()).or_default().clone()
        };
        *cell
            .get_or_init(|| async {
                let delay = match &self.http {
                    Some(http) => read_crawl_delay(http, &authority).await,
                    None => None,
                };
                if let Some(delay) = delay {
                    self.gate.set_delay(&authority, delay);
                }
                delay
            })
            .await
    }
}

/// The `Crawl-delay` for [`ROBOTS_AGENT`] in `authority`'s robots.txt: none when there is
/// no robots.txt, it cannot be read or parsed, or it sets none. Redirects are not
/// followed (RFC 9309 asks for up to five): a redirect could lead the read to an address
/// the Source's sync would refuse, and this read is not held to the sync's policy.
async fn read_crawl_delay(http: &reqwest::Client, authority: &str) -> Option<Duration> {
    let mut response = http
        .get(format!("{authority}/robots.txt"))
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = ROBOTS_LIMIT.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= ROBOTS_LIMIT {
            break;
        }
    }
    // Parsed off the runtime's threads: the parser compiles a pattern per rule, and a
    // large file has many (of which only the Crawl-delay is used here).
    let robot =
        tokio::task::spawn_blocking(move || texting_robots::Robot::new(ROBOTS_AGENT, &body))
            .await
            .ok()?
            .ok()?;
    robot
        .delay
        .filter(|d| d.is_finite() && *d > 0.0)
        // Read as f32 by the parser: to the millisecond, as written (0.2 is 200 ms).
        .map(|d| Duration::from_secs_f64((f64::from(d).min(86_400.0) * 1000.0).round() / 1000.0))
}

/// Runs each Source of `harvest` once, as many at once as its limits allow, until each
/// is done or `stop` is asked for (then each stops as a sync does, keeping what it did).
/// What each came to, in the harvest's order.
pub async fn harvest(
    harvest: &Harvest,
    stop: &AsyncStop,
    observer: Arc<dyn HarvestObserver>,
) -> Vec<Harvested> {
    let shared = Arc::new(Shared::new(&harvest.limits));
    let running = Arc::new(Semaphore::new(harvest.limits.sources.max(1)));
    let stops: Vec<AsyncStop> = harvest.members.iter().map(|_| AsyncStop::new()).collect();
    let relay = relay_stop(stop, &stops);
    let mut tasks = Vec::new();
    for (index, member) in harvest.members.iter().enumerate() {
        let (shared, running, observer) = (shared.clone(), running.clone(), observer.clone());
        let (member, stop) = (member.clone(), stops[index].clone());
        tasks.push(tokio::spawn(async move {
            // Never closed: a Source runs without a place rather than never.
            let _place = running.acquire_owned().await.ok();
            // Stopped while it waited for its place: not started at all.
            if stop.token().is_stopped() {
                return not_started(index, &member, &*observer);
            }
            let mut schedule = Follower::new(member.interval, Instant::now());
            let _ = schedule.poll_run(Instant::now());
            one(
                &shared,
                index,
                &member,
                &stop,
                &*observer,
                &mut schedule,
                &member.sync,
            )
            .await
        }));
    }
    let mut done = Vec::new();
    for (index, task) in tasks.into_iter().enumerate() {
        match task.await {
            Ok(harvested) => done.push(harvested),
            // A task that panicked: said as what it is, for its Source.
            Err(e) => {
                let now = SystemTime::now();
                done.push(Harvested {
                    name: harvest.members[index].name.clone(),
                    index,
                    outcome: Err(SyncError::Unsupported(format!(
                        "the run ended abnormally: {e}"
                    ))),
                    why: None,
                    timed_out: false,
                    crawl_delay: None,
                    started: now,
                    ended: now,
                    next_due: now,
                });
            }
        }
    }
    relay.abort();
    done
}

/// Keeps following every Source of `harvest` until `stop` is asked for: each is run at
/// once, then whenever its schedule says (its interval after a complete run, sooner
/// after one that was not), and, when its Capability List names a Change Notification
/// channel, when its hub notifies a change (each Source's follower listens at its own
/// callback, on `listen`'s address at a port of the system's choosing). What each
/// follower did, in the harvest's order.
///
/// Every follower is under way at once ([`Limits::sources`] does not apply: a follower
/// mostly waits); the requests of all of them pass the one gate. A follower that cannot
/// go on is told at once ([`HarvestObserver::failed`]) and ends with its error, in its
/// place in what is returned.
pub async fn follow(
    harvest: &Harvest,
    listen: std::net::IpAddr,
    stop: &AsyncStop,
    observer: Arc<dyn HarvestObserver>,
) -> Vec<Result<Followed, SyncError>> {
    let shared = Arc::new(Shared::new(&harvest.limits));
    let stops: Vec<AsyncStop> = harvest.members.iter().map(|_| AsyncStop::new()).collect();
    let relay = relay_stop(stop, &stops);
    let mut tasks = Vec::new();
    for (index, member) in harvest.members.iter().enumerate() {
        let (shared, observer) = (shared.clone(), observer.clone());
        let (member, stop) = (member.clone(), stops[index].clone());
        tasks.push(tokio::spawn(async move {
            shared.crawl_delay(&member).await;
            let options = FollowOptions::new(member.sync.clone())
                .with_interval(member.interval)
                .with_listen(std::net::SocketAddr::new(listen, 0))
                .with_gate(shared.gate.clone());
            let mut each = Each {
                index,
                observer: &*observer,
                problems: 0,
                first: None,
            };
            observer.started(index, &member);
            let followed = match into_bucket(&member) {
                #[cfg(feature = "object-store")]
                Some(bucket) => {
                    // Not a directory: never made as one.
                    let open = |options: &SyncOptions| bucket.open_for(options);
                    crate::follow::follow_into(&options, open, &stop, &mut each).await
                }
                _ => match make_parent(&member.sync).await {
                    Ok(()) => crate::follow::follow(&options, &stop, &mut each).await,
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = &followed {
                observer.failed(index, e);
            }
            followed
        }));
    }
    let mut out = Vec::new();
    for task in tasks {
        out.push(match task.await {
            Ok(followed) => followed,
            Err(e) => Err(SyncError::Unsupported(format!(
                "the follower ended abnormally: {e}"
            ))),
        });
    }
    relay.abort();
    out
}

/// Trips every Source's stop when `stop` is asked for (one waiter on it, many stops).
fn relay_stop(stop: &AsyncStop, stops: &[AsyncStop]) -> tokio::task::JoinHandle<()> {
    let (stop, stops) = (stop.clone(), stops.to_vec());
    tokio::spawn(async move {
        stop.wait().await;
        for s in &stops {
            s.stop();
        }
    })
}

/// One run of `member`, reported.
async fn one(
    shared: &Shared,
    index: usize,
    member: &Member,
    stop: &AsyncStop,
    observer: &dyn HarvestObserver,
    schedule: &mut Follower,
    options: &SyncOptions,
) -> Harvested {
    let crawl_delay = shared.crawl_delay(member).await;
    observer.started(index, member);
    let started = SystemTime::now();
    let mut each = Each {
        index,
        observer,
        problems: 0,
        first: None,
    };
    // A run over its time is stopped as a signal would stop it: it keeps what it did.
    let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let timer = member.max_time.map(|max| {
        let (stop, timed_out) = (stop.clone(), timed_out.clone());
        tokio::spawn(async move {
            tokio::time::sleep(max).await;
            timed_out.store(true, std::sync::atomic::Ordering::SeqCst);
            stop.stop();
        })
    });
    let outcome = match into_bucket(member) {
        #[cfg(feature = "object-store")]
        Some(bucket) => {
            let open = |options: &SyncOptions| bucket.open_for(options);
            crate::asynchronous::sync_into(options, open, &shared.gate, stop, &mut each).await
        }
        _ => match make_parent(options).await {
            Ok(()) => sync_with_gate(options, &shared.gate, stop, &mut each).await,
            Err(e) => Err(e),
        },
    };
    if let Some(timer) = timer {
        timer.abort();
    }
    let complete = outcome.as_ref().is_ok_and(|s| s.report.complete);
    let now = Instant::now();
    schedule.finished(complete, now);
    let ended = SystemTime::now();
    let next_due = schedule
        .poll_timeout()
        .map_or(ended + member.interval, |at| {
            ended + at.saturating_duration_since(now)
        });
    let why = each.first.take().map(|first| match each.problems {
        1 => first,
        n => format!("{first} (and {} more problems)", n - 1),
    });
    let done = Harvested {
        name: member.name.clone(),
        index,
        outcome,
        why,
        timed_out: timed_out.load(std::sync::atomic::Ordering::SeqCst),
        crawl_delay,
        started,
        ended,
        next_due,
    };
    observer.finished(&done);
    done
}

/// What a Source the harvest was stopped before it started comes to: interrupted,
/// nothing done, due again at once.
fn not_started(index: usize, member: &Member, observer: &dyn HarvestObserver) -> Harvested {
    let now = SystemTime::now();
    let synced = Synced {
        mode: "not started",
        report: resourcesync_client::Report::default(),
        seconds: 0.0,
        interrupted: true,
    };
    let done = Harvested {
        name: member.name.clone(),
        index,
        outcome: Ok(synced),
        why: Some("stopped before it started".into()),
        timed_out: false,
        crawl_delay: None,
        started: now,
        ended: now,
        next_due: now,
    };
    observer.finished(&done);
    done
}

/// Makes the parents of the Source's directory: a harvest's directories are laid out by
/// its file (`mirror/<name>`), where a single sync wants its directory's parent there.
/// The bucket `member` is synced into, if any.
#[cfg(feature = "object-store")]
fn into_bucket(member: &Member) -> Option<&MemberBucket> {
    member.bucket.as_ref()
}

/// No bucket without the feature.
#[cfg(not(feature = "object-store"))]
fn into_bucket(_: &Member) -> Option<std::convert::Infallible> {
    None
}

async fn make_parent(options: &SyncOptions) -> Result<(), SyncError> {
    // A member that cannot start makes nothing, its parent directories included.
    options.check()?;
    // An audit or a dry run changes nothing: it makes no directory either (nor does
    // its sync: `DirectoryDestination::open_for`).
    if options.audit || options.dry_run {
        return Ok(());
    }
    let Some(parent) = options.dir.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    tokio::fs::create_dir_all(parent).await.map_err(|source| {
        SyncError::Destination(crate::directory::DestinationError::Io {
            path: parent.to_path_buf(),
            source,
        })
    })
}

/// One Source's observer: hands everything on with the Source's index, and keeps the
/// first problem for the report.
struct Each<'a> {
    index: usize,
    observer: &'a dyn HarvestObserver,
    problems: u64,
    first: Option<String>,
}

impl Observer for Each<'_> {
    fn event(&mut self, event: &Event) {
        if let Event::Problem(problem) = event {
            self.problems += 1;
            if self.first.is_none() {
                self.first = Some(problem.to_string());
            }
        }
        self.observer.event(self.index, event);
    }
    fn notice(&mut self, notice: &Notice) {
        self.observer.notice(self.index, notice);
    }
}

impl FollowObserver for Each<'_> {
    fn follow(&mut self, notice: &FollowNotice) {
        self.observer.follow(self.index, notice);
    }
}
