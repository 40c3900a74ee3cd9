//! The state machine: [`Client`].

use std::collections::{HashMap, HashSet, VecDeque};
use std::io::{Read, Seek};
use std::time::Instant;

use http::{HeaderMap, StatusCode};
use resourcesync_model::{
    Capability, Change as Changed, DocumentHead, DocumentKind, Entry, Fixity, FixityMismatch, Md,
    Relation, Uri, W3cDateTime,
};
use resourcesync_package::Package;
use resourcesync_xml::{Limits, Next, PushReader};
use xxhash_rust::xxh3::xxh3_128;

/// The hasher of maps keyed by the client's own ids.
type FoldHash = foldhash::fast::FixedState;

use crate::config::{Config, Mode};
use crate::discovery;
use crate::event::{
    Action, Change, ChangeId, DocumentRead, Event, Extract, Problem, ProblemKind, Progress, Report,
    Standing, Store, Warning,
};
use crate::inventory::{Comparison, Inventory};
use crate::local_path::{LocalPathError, PathSet};
use crate::request::{Purpose, Request, RequestId};
use crate::state::{Checkpoint, Position, State};

/// A sans-IO ResourceSync Destination: it says which requests to make, takes their
/// responses, and says what to store, extract and delete. It performs no IO and reads
/// no clock; every input that may start a timer takes `now`.
///
/// # Driving it
///
/// A driver repeats, until [`Event::Done`]:
///
/// 1. Drain [`poll_request`](Client::poll_request): make each request (concurrently if
///    it likes; the client never has more than
///    [`Bounds::max_in_flight`](crate::Bounds::max_in_flight) out at once).
/// 2. Feed what comes back: [`handle_response`](Client::handle_response) with the status
///    and headers, [`handle_body`](Client::handle_body) with each chunk of the body,
///    [`handle_end`](Client::handle_end) at its end, or
///    [`handle_failure`](Client::handle_failure) if the exchange failed. For a resource
///    or a package, also keep the chunks (a temporary file): the client checks them but
///    never holds them.
/// 3. After every input, drain [`poll_event`](Client::poll_event) and carry out its
///    instructions: [`Event::Store`] (move the kept body into place),
///    [`Event::Extract`] (copy a bitstream out of a package), [`Event::Delete`], each
///    confirmed with [`applied`](Client::applied) or [`failed`](Client::failed);
///    [`Event::Package`] (open the kept package and hand its manifest over with
///    [`handle_package`](Client::handle_package)); [`Event::Cancel`] (abort that
///    request); [`Event::Checkpoint`] (save [`state`](Client::state)). Then go back to 1:
///    an input may have made room for new requests.
/// 4. When nothing is in flight, wait until [`poll_timeout`](Client::poll_timeout) and
///    call [`handle_timeout`](Client::handle_timeout); do the same when a request has
///    been quiet for longer than that.
///
/// Requests, changes and packages are named by `Copy` ids ([`RequestId`], [`ChangeId`]);
/// an input for an id the client no longer knows (a request it cancelled) is ignored.
///
/// # What it guarantees
///
/// - Every URI it asks for passed the [`Policy`](crate::policy::Policy), and so did every
///   redirect; every path it names came from the [`PathMapper`](crate::local_path::PathMapper).
/// - A body is stored only after its length and every listed md5 and sha-256 matched.
/// - The checkpoint moves only past changes confirmed as applied, in stream order; a
///   change is not decided before every earlier change to the same resource in the
///   documents read together is settled (they collapse into the last).
/// - Deletions in a baseline happen only after the whole listing was read without
///   failure, and never more than [`Config::max_deletes`].
/// - A dry run makes no request but for documents, instructs nothing and leaves the
///   state as it was: it reports the same [`Event::Change`]s a real run would decide.
pub struct Client<I> {
    config: Config,
    inventory: I,
    state: State,
    next_id: u64,
    /// Documents, discovery and packages waiting to be requested.
    docs: VecDeque<Job>,
    /// Resource fetches waiting to be requested.
    fetches: VecDeque<Job>,
    /// Jobs waiting for a retry.
    waiting: Vec<(Instant, Job)>,
    /// Keyed by the client's own ids, looked up several times per entry read: foldhash,
    /// not SipHash (no one else chooses these keys).
    flights: HashMap<RequestId, Flight, FoldHash>,
    events: VecDeque<Event>,
    sets: Vec<Set>,
    /// Changes decided, not yet settled.
    changes: HashMap<ChangeId, Pending, FoldHash>,
    /// Unsettled bitstreams per package.
    packages: HashMap<RequestId, Unpacking, FoldHash>,
    /// xxh3-128 of every URI listed (baseline, audit), for deletions and extras.
    listed: Vec<u128>,
    /// Paths written in this run, for collisions.
    paths: PathSet,
    visited: HashSet<String>,
    /// Jobs that have no set yet (discovery, the start, a Source Description).
    root_pending: u32,
    /// Deletions (baseline) or extras (audit) were worked out.
    swept: bool,
    /// Next reading of the Change Lists, when following.
    follow_at: Option<Instant>,
    /// The latest `now` of any input, for inputs that take none.
    now: Option<Instant>,
    report: Report,
    progress: Progress,
    done: bool,
}

impl<I> std::fmt::Debug for Client<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("mode", &self.config.mode)
            .field("start", &self.config.start)
            .field("in_flight", &self.flights.len())
            .field("queued", &(self.docs.len() + self.fetches.len()))
            .field("unsettled", &self.changes.len())
            .field("done", &self.done)
            .field("waiting", &self.waiting.len())
            .field("packages", &self.packages.len())
            .field("root_pending", &self.root_pending)
            .field(
                "sets",
                &self
                    .sets
                    .iter()
                    .map(|s| (s.pending, s.phase, s.failed))
                    .collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// A request to make, not yet made.
#[derive(Clone, Debug)]
struct Job {
    uri: Uri,
    what: What,
    attempt: u32,
    redirects: u32,
}

#[derive(Clone, Debug)]
enum What {
    /// A step of discovery (section 8).
    Discover(Step),
    Document(DocJob),
    /// A resource for a change; more places to try after `uri` (mirrors, then `loc`).
    Resource {
        change: ChangeId,
        others: Vec<Uri>,
    },
    Package {
        set: usize,
        /// What the Source listed for it (boxed: jobs queue by the thousand).
        md: Option<Box<Md>>,
        /// Which candidate of the set's change stream, for a Change Dump.
        candidate: Option<usize>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `Sitemap:` lines of the Source's robots.txt.
    Robots,
    /// `Link` headers and `<link>` elements of the Source's home page.
    Home,
}

impl Step {
    fn next(self) -> Option<Step> {
        match self {
            Step::Robots => Some(Step::Home),
            Step::Home => None,
        }
    }
}

#[derive(Clone, Debug)]
struct DocJob {
    set: Option<usize>,
    depth: u32,
    /// The capability its parent promised.
    expect: Option<Capability>,
    /// What the document is read for.
    role: Role,
    /// The discovery step to take if this document fails (the well-known URI's).
    then: Option<Step>,
    /// Found by discovery: a document that is no ResourceSync document is ignored.
    discovered: bool,
    /// The document that listed it (none for the first).
    parent: Option<Uri>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Whatever it turns out to be (the start, discovery).
    Any,
    /// A Capability List of a set.
    Capabilities,
    /// The listing of a baseline or an audit (a list or an index).
    Listing,
    /// A Resource Dump (or its index).
    Dump,
    /// The start of a set's change stream: a Change List, its Index, or a Change Dump.
    Changes,
    /// A change stream's archive (Change List Archive or its index).
    Archive,
    /// The candidate of the change stream to load.
    Candidate(usize),
    /// Read for an exploration: its entries are followed when they are documents.
    Explore,
}

struct Flight {
    job: Job,
    deadline: Instant,
    status: Option<StatusCode>,
    body: Body,
}

enum Body {
    /// Bytes kept for discovery (robots.txt, HTML), and the `Link` headers.
    Discovery(Vec<u8>, Vec<String>),
    Document(Box<DocFlight>),
    Fixity(Fixity),
}

struct DocFlight {
    /// The document, read as its body arrives: memory per document in flight is bounded
    /// by its largest entry, not by the document.
    feed: PushReader,
    /// Set once the head was read.
    head: Option<Head>,
    entries: u64,
    warnings: usize,
}

/// What a document's head decided.
struct Head {
    kind: DocumentKind,
    set: Option<usize>,
    at: Option<W3cDateTime>,
    /// What its entries are for.
    role: Role,
}

/// One set of resources: a Capability List's, or a list's without one.
struct Set {
    key: String,
    /// The key is a Capability List's URI, read first.
    listed_by_capabilities: bool,
    /// What a run following the Change Lists reads again: the Capability List, or the
    /// document the run started at.
    start: Uri,
    offered: Offered,
    /// Documents and packages of the set queued or in flight.
    pending: u32,
    /// The listing's `at` (the earliest of its documents).
    at: Option<W3cDateTime>,
    /// Something of the set failed: its checkpoint stays, no deletions follow.
    failed: bool,
    phase: Phase,
    stream: Option<Stream>,
}

#[derive(Default)]
struct Offered {
    /// Every capability document listed, for an exploration.
    all: Vec<(Capability, Uri)>,
    resourcelist: Option<Uri>,
    resourcedump: Option<Uri>,
    changelist: Option<Uri>,
    changedump: Option<Uri>,
    changelist_archive: Option<Uri>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for its Capability List.
    Capabilities,
    /// Reading its listing or change stream.
    Reading,
    /// Nothing more to read or apply.
    Finished,
}

/// A set's change stream in an incremental run.
struct Stream {
    checkpoint: Checkpoint,
    candidates: Vec<Candidate>,
    archive: Option<Uri>,
    archive_read: bool,
    planned: bool,
    /// The next candidate to load.
    next: usize,
    /// Candidates loaded and not yet applied, from `batch_start`.
    batch_start: usize,
    batch_entries: usize,
    /// Where counting positions stands: the datetime, and the index the next change at
    /// it gets.
    cursor: Option<(W3cDateTime, u64)>,
    /// Changes of the batch being applied, by position.
    issued: Vec<(Position, ChangeId)>,
    failed_at: Option<Position>,
    /// The last position of the batch being applied.
    batch_end: Option<Position>,
    /// The batch being applied has candidates still to settle.
    applying: bool,
    /// Packages of the batch, released when it settles.
    batch_packages: Vec<RequestId>,
}

struct Candidate {
    uri: Uri,
    from: Option<W3cDateTime>,
    until: Option<W3cDateTime>,
    dump: bool,
    md: Option<Md>,
    loaded: Option<Vec<Raw>>,
    package: Option<RequestId>,
}

/// A change as read, before collapsing.
struct Raw {
    uri: Uri,
    change: Option<Changed>,
    datetime: Option<W3cDateTime>,
    lastmod: Option<W3cDateTime>,
    md: Option<Md>,
    mirrors: Vec<Uri>,
    /// For a change from a Change Dump: its package and bitstream.
    bitstream: Option<(RequestId, usize)>,
}

struct Pending {
    change: Change,
    set: usize,
    package: Option<RequestId>,
    stored: bool,
}

struct Unpacking {
    set: usize,
    unsettled: u64,
    manifest_read: bool,
    candidate: Option<usize>,
}

fn problem(uri: Option<&Uri>, request: Option<RequestId>, kind: ProblemKind) -> Event {
    Event::Problem(Problem {
        uri: uri.cloned(),
        request,
        kind,
    })
}

fn hash(uri: &Uri) -> u128 {
    xxh3_128(uri.as_str().as_bytes())
}

fn http_uri(uri: &Uri) -> Option<http::Uri> {
    http::Uri::try_from(uri.as_str()).ok().or_else(|| {
        uri.to_url()
            .ok()
            .and_then(|u| http::Uri::try_from(u.as_str()).ok())
    })
}

impl<I: Inventory> Client<I> {
    /// A client for one run: `config` says what it does, `state` is what the caller
    /// saved after the last run ([`State::new`] for none), `inventory` what the
    /// Destination holds.
    pub fn new(config: Config, state: State, inventory: I) -> Client<I> {
        let mut client = Client {
            config,
            inventory,
            state,
            next_id: 0,
            docs: VecDeque::new(),
            fetches: VecDeque::new(),
            waiting: Vec::new(),
            flights: HashMap::default(),
            events: VecDeque::new(),
            sets: Vec::new(),
            changes: HashMap::default(),
            packages: HashMap::default(),
            listed: Vec::new(),
            paths: PathSet::new(),
            visited: HashSet::new(),
            root_pending: 0,
            swept: false,
            follow_at: None,
            now: None,
            report: Report::default(),
            progress: Progress::default(),
            done: false,
        };
        client.begin();
        client
    }

    fn begin(&mut self) {
        let start = self.config.start.clone();
        if self.config.discovers() {
            match discovery::well_known_uri(&start) {
                Ok(uri) => self.push_root_doc(uri, Role::Any, Some(Step::Robots), true),
                Err(e) => {
                    self.events.push_back(problem(
                        Some(&start),
                        None,
                        ProblemKind::Document(e.to_string()),
                    ));
                    self.report.problems += 1;
                }
            }
        } else {
            self.push_root_doc(start, Role::Any, None, false);
        }
        self.advance(None);
    }

    fn push_root_doc(&mut self, uri: Uri, role: Role, then: Option<Step>, discovered: bool) {
        if !self.visited.insert(uri.as_str().to_owned()) {
            return;
        }
        self.root_pending += 1;
        self.docs.push_back(Job {
            uri,
            what: What::Document(DocJob {
                set: None,
                depth: 0,
                expect: None,
                role,
                then,
                discovered,
                parent: None,
            }),
            attempt: 0,
            redirects: 0,
        });
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The state to save: checkpoints move as changes are confirmed (announced by
    /// [`Event::Checkpoint`]). A dry run never changes it.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The inventory.
    pub fn inventory(&self) -> &I {
        &self.inventory
    }

    /// The inventory, to record what was applied.
    pub fn inventory_mut(&mut self) -> &mut I {
        &mut self.inventory
    }

    /// Where the run stands.
    pub fn progress(&self) -> Progress {
        Progress {
            in_flight: self.flights.len(),
            ..self.progress
        }
    }

    /// Whether [`Event::Done`] was emitted (it may still be waiting in the event queue).
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The next request to make, if one is due and fewer than the bound are in flight.
    #[must_use]
    pub fn poll_request(&mut self, now: Instant) -> Option<Request> {
        if self.done || self.flights.len() >= self.config.bounds.max_in_flight {
            return None;
        }
        // Documents first, unless enough fetches wait: documents find the work, and
        // fetches drain what they found.
        let (job, target) = loop {
            let job = if self.fetches.len() >= self.config.bounds.max_queued || self.docs.is_empty()
            {
                self.fetches.pop_front().or_else(|| self.docs.pop_front())
            } else {
                self.docs.pop_front()
            }?;
            match http_uri(&job.uri) {
                Some(target) => break (job, target),
                None => {
                    let uri = job.uri.to_string();
                    let refusal =
                        crate::policy::Refusal::Unparsable("not an HTTP request target".into());
                    let kind = ProblemKind::Refused(crate::policy::PolicyError { uri, refusal });
                    self.fail_job(job, kind, None, now);
                    self.advance(Some(now));
                }
            }
        };
        self.next_id += 1;
        let id = RequestId(self.next_id);
        let purpose = match &job.what {
            What::Discover(_) => Purpose::Discovery,
            What::Document(_) => Purpose::Document,
            What::Resource { change, .. } => match self.changes.get(change) {
                Some(p) => Purpose::Resource {
                    change: *change,
                    path: p.change.path.clone(),
                },
                None => Purpose::Document,
            },
            What::Package { .. } => Purpose::Package,
        };
        let mut http = http::Request::new(());
        *http.uri_mut() = target;
        let body = match &job.what {
            What::Discover(_) => Body::Discovery(Vec::new(), Vec::new()),
            What::Document(_) => Body::Document(Box::new(DocFlight {
                feed: PushReader::with_limits(Limits::default()),
                head: None,
                entries: 0,
                warnings: 0,
            })),
            What::Resource { .. } | What::Package { .. } => Body::Fixity(Fixity::new()),
        };
        let uri = job.uri.clone();
        self.flights.insert(
            id,
            Flight {
                job,
                deadline: now + self.config.bounds.request_timeout,
                status: None,
                body,
            },
        );
        self.report.requests += 1;
        Some(Request {
            id,
            http,
            uri,
            purpose,
        })
    }

    /// The next event, if any.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When [`handle_timeout`](Client::handle_timeout) is due next: a retry, a request
    /// gone quiet, the next reading of the Change Lists.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        let flights = self.flights.values().map(|f| f.deadline);
        let waiting = self.waiting.iter().map(|(at, _)| *at);
        flights.chain(waiting).chain(self.follow_at).min()
    }

    /// Time has passed: retries come due, quiet requests are cancelled.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired: Vec<RequestId> = self
            .flights
            .iter()
            .filter(|(_, f)| f.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            if let Some(flight) = self.flights.remove(&id) {
                self.events.push_back(Event::Cancel { request: id });
                self.discard(id, &flight.job);
                self.retry(flight.job, id, ProblemKind::Failed("timed out".into()), now);
            }
        }
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.waiting)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        self.waiting = later;
        for (_, job) in due {
            self.queue(job, true);
        }
        if self.follow_at.is_some_and(|at| at <= now) {
            self.follow_at = None;
            self.visited.clear();
            for i in 0..self.sets.len() {
                let uri = self.sets[i].start.clone();
                self.sets[i].stream = None;
                if self.sets[i].listed_by_capabilities {
                    self.sets[i].phase = Phase::Capabilities;
                    self.push_doc(
                        i,
                        uri,
                        Role::Capabilities,
                        1,
                        Some(Capability::CapabilityList),
                        None,
                    );
                } else if self.start_stream(i) {
                    self.sets[i].phase = Phase::Reading;
                    self.push_doc(i, uri, Role::Changes, 0, None, None);
                }
            }
        }
        self.advance(Some(now));
    }

    fn capability_list_uri(&self, set: usize) -> Option<Uri> {
        self.sets[set].key.parse().ok()
    }

    /// The response head of `id` arrived: its status and headers.
    pub fn handle_response(
        &mut self,
        id: RequestId,
        status: StatusCode,
        headers: &HeaderMap,
        now: Instant,
    ) {
        let Some(flight) = self.flights.get_mut(&id) else {
            return;
        };
        flight.deadline = now + self.config.bounds.request_timeout;
        flight.status = Some(status);
        if status.is_success() {
            if let Body::Discovery(_, links) = &mut flight.body {
                links.extend(
                    headers
                        .get_all(http::header::LINK)
                        .iter()
                        .filter_map(|v| v.to_str().ok().map(str::to_owned)),
                );
            }
            return;
        }
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        self.discard(id, &flight.job);
        let job = flight.job;
        if status.is_redirection() {
            let location = headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            match location {
                Some(location) => self.redirect(id, job, &location, now),
                None => self.fail_job(job, ProblemKind::Status(status.as_u16()), Some(id), now),
            }
        } else if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS {
            self.retry(job, id, ProblemKind::Status(status.as_u16()), now);
        } else {
            self.fail_job(job, ProblemKind::Status(status.as_u16()), Some(id), now);
        }
        self.advance(Some(now));
    }

    /// The caller's HTTP stack followed a redirect of `id` to `location`: the client
    /// checks it against its policy, and fails the request if it is refused (the caller
    /// should then abort it: an [`Event::Cancel`] says so).
    pub fn handle_redirect(&mut self, id: RequestId, location: &str, now: Instant) {
        let Some(flight) = self.flights.get_mut(&id) else {
            return;
        };
        flight.job.redirects += 1;
        let checked = self.config.policy.check_redirect(&flight.job.uri, location);
        let too_many = flight.job.redirects > self.config.bounds.max_redirects;
        match checked {
            Ok(target) if !too_many => flight.job.uri = target,
            other => {
                let Some(flight) = self.flights.remove(&id) else {
                    return;
                };
                self.events.push_back(Event::Cancel { request: id });
                self.discard(id, &flight.job);
                let kind = match other {
                    Err(e) => ProblemKind::Refused(e),
                    Ok(_) => ProblemKind::Failed("too many redirects".into()),
                };
                self.fail_job(flight.job, kind, Some(id), now);
            }
        }
        self.advance(Some(now));
    }

    /// The caller's resolver gave `address` for the host of `id`, before connecting: the
    /// client checks it against its policy (a public name that resolves to a loopback,
    /// link-local or private address is refused unless the Source is on one too). When
    /// refused the request fails, and an [`Event::Cancel`] says not to connect.
    pub fn handle_address(&mut self, id: RequestId, address: std::net::IpAddr, now: Instant) {
        let Some(flight) = self.flights.get(&id) else {
            return;
        };
        if let Err(e) = self.config.policy.check_address(&flight.job.uri, address) {
            if let Some(flight) = self.flights.remove(&id) {
                self.events.push_back(Event::Cancel { request: id });
                self.discard(id, &flight.job);
                self.fail_job(flight.job, ProblemKind::Refused(e), Some(id), now);
            }
            self.advance(Some(now));
        }
    }

    /// A chunk of the body of `id`.
    pub fn handle_body(&mut self, id: RequestId, bytes: &[u8], now: Instant) {
        let Some(flight) = self.flights.get_mut(&id) else {
            return;
        };
        flight.deadline = now + self.config.bounds.request_timeout;
        self.report.bytes += bytes.len() as u64;
        self.progress.bytes += bytes.len() as u64;
        let limit = self.config.bounds.max_discovery_bytes;
        let outcome = match &mut flight.body {
            Body::Discovery(kept, _) => {
                let room = limit.saturating_sub(kept.len());
                kept.extend_from_slice(&bytes[..bytes.len().min(room)]);
                Ok(())
            }
            Body::Fixity(fixity) => {
                fixity.update(bytes);
                let listed = match &flight.job.what {
                    What::Resource { change, .. } => self
                        .changes
                        .get(change)
                        .and_then(|p| p.change.md.as_ref())
                        .and_then(|md| md.length),
                    What::Package { md, .. } => md.as_ref().and_then(|md| md.length),
                    _ => None,
                };
                match listed {
                    Some(expected) if fixity.length() > expected => {
                        Err(ProblemKind::Fixity(FixityMismatch::Longer { expected }))
                    }
                    _ => Ok(()),
                }
            }
            Body::Document(doc) => match doc.feed.feed(bytes) {
                Ok(()) => Ok(()),
                Err(e) => Err(ProblemKind::Document(e.to_string())),
            },
        };
        match outcome {
            Ok(()) => {
                if matches!(flight.body, Body::Document(_)) {
                    self.read_document(id, false, now);
                }
            }
            Err(kind) => {
                if let Some(flight) = self.flights.remove(&id) {
                    self.events.push_back(Event::Cancel { request: id });
                    self.discard(id, &flight.job);
                    self.fail_job(flight.job, kind, Some(id), now);
                }
            }
        }
        self.advance(Some(now));
    }

    /// The body of `id` ended.
    pub fn handle_end(&mut self, id: RequestId, now: Instant) {
        let Some(flight) = self.flights.get(&id) else {
            return;
        };
        if matches!(flight.body, Body::Document(_)) {
            if let Some(Flight {
                body: Body::Document(doc),
                ..
            }) = self.flights.get_mut(&id)
            {
                if let Err(e) = doc.feed.finish() {
                    self.document_failed(id, ProblemKind::Document(e.to_string()), now);
                    self.advance(Some(now));
                    return;
                }
            }
            self.read_document(id, true, now);
            self.advance(Some(now));
            return;
        }
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        match flight.body {
            Body::Discovery(kept, links) => self.discovered(flight.job, &kept, &links),
            Body::Fixity(fixity) => self.fetched(id, flight.job, fixity.finish(), now),
            Body::Document(_) => {}
        }
        self.advance(Some(now));
    }

    /// The exchange of `id` failed (connection, DNS, a body cut short): the client tries
    /// again, or elsewhere, as its bounds allow.
    pub fn handle_failure(&mut self, id: RequestId, reason: impl Into<String>, now: Instant) {
        let reason = reason.into();
        if let Some(package) = self.packages.get(&id) {
            // A package the caller could not open or read: its bitstreams are not taken.
            if !package.manifest_read {
                let set = package.set;
                self.packages.remove(&id);
                self.sets[set].failed = true;
                self.events
                    .push_back(problem(None, Some(id), ProblemKind::Failed(reason)));
                self.report.problems += 1;
                self.events.push_back(Event::Release { request: id });
                self.package_gone(set);
                self.advance(Some(now));
            }
            return;
        }
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        self.discard(id, &flight.job);
        self.retry(flight.job, id, ProblemKind::Failed(reason), now);
        self.advance(Some(now));
    }

    /// The package received for `id` (announced by [`Event::Package`]), opened by the
    /// caller with `resourcesync-package`: the client reads its manifest (already in
    /// memory; this performs no IO) and decides what to take from it
    /// ([`Event::Extract`] names bitstreams by their number in `package`).
    pub fn handle_package<R: Read + Seek>(
        &mut self,
        id: RequestId,
        package: &Package<R>,
        now: Instant,
    ) {
        let Some(pending) = self.packages.get_mut(&id) else {
            return;
        };
        if pending.manifest_read {
            return;
        }
        pending.manifest_read = true;
        // Bitstreams are numbered among the entries that have one (a deletion has none).
        let numbers: HashMap<usize, usize> = (0..package.bitstream_count())
            .filter_map(|i| package.entry(i).map(|e| (e as *const Entry as usize, i)))
            .collect();
        let manifest = package.manifest();
        let bitstream_of = |e: &Entry| numbers.get(&(e as *const Entry as usize)).copied();
        let set = pending.set;
        let candidate = pending.candidate;
        let expected = if candidate.is_some() {
            Capability::ChangeDumpManifest
        } else {
            Capability::ResourceDumpManifest
        };
        if manifest.head.md.capability.as_ref() != Some(&expected) {
            self.sets[set].failed = true;
            self.push_problem(
                None,
                Some(id),
                ProblemKind::Unexpected {
                    expected: expected.as_str().into(),
                    found: manifest.head.kind().name().into(),
                },
            );
            self.packages.remove(&id);
            self.events.push_back(Event::Release { request: id });
            self.package_gone(set);
            self.advance(Some(now));
            return;
        }
        for (i, entry) in manifest.entries.iter().enumerate() {
            if let Some(path) = entry.md.as_ref().and_then(|md| md.path.as_ref()) {
                if !path.as_str().starts_with('/') {
                    self.warn(
                        None,
                        Some(i as u64 + 1),
                        None,
                        format!(
                            "bitstream path {:?} does not start with \"/\" (as the Python \
                             reference implementation writes them); read as if it did",
                            path.as_str()
                        ),
                    );
                }
            }
        }
        match candidate {
            Some(c) => {
                let raws = manifest
                    .entries
                    .iter()
                    .map(|e| raw(e, bitstream_of(e).map(|i| (id, i))))
                    .collect();
                if let Some(stream) = self.sets[set].stream.as_mut() {
                    if let Some(cand) = stream.candidates.get_mut(c) {
                        cand.loaded = Some(raws);
                        cand.package = Some(id);
                    }
                }
            }
            None => {
                for entry in &manifest.entries {
                    match bitstream_of(entry) {
                        Some(i) => self.listed_entry(set, entry, Some((id, i))),
                        None => self.warn(
                            None,
                            None,
                            None,
                            format!(
                                "{}: listed in the manifest without a bitstream; skipped",
                                entry.loc
                            ),
                        ),
                    }
                }
            }
        }
        self.package_gone(set);
        self.release_if_settled(id);
        self.advance(Some(now));
    }

    /// The caller applied `change`: stored, extracted or deleted it.
    pub fn applied(&mut self, change: ChangeId) {
        self.settle(change, None);
        self.advance(None);
    }

    /// The caller could not apply `change`; `reason` says why. The checkpoint stays
    /// before it.
    pub fn failed(&mut self, change: ChangeId, reason: impl Into<String>) {
        self.settle(change, Some(ProblemKind::NotApplied(reason.into())));
        self.advance(None);
    }

    // ---- requests ----

    fn queue(&mut self, job: Job, front: bool) {
        let queue = match job.what {
            What::Resource { .. } => &mut self.fetches,
            _ => &mut self.docs,
        };
        if front {
            queue.push_front(job)
        } else {
            queue.push_back(job)
        }
    }

    /// Queues a document of `set`, listed by `parent`.
    #[allow(clippy::too_many_arguments)]
    fn push_doc(
        &mut self,
        set: usize,
        uri: Uri,
        role: Role,
        depth: u32,
        expect: Option<Capability>,
        parent: Option<Uri>,
    ) {
        if !self.visited.insert(uri.as_str().to_owned()) {
            self.sets[set].failed = true;
            self.push_problem(Some(&uri), None, ProblemKind::Loop);
            return;
        }
        self.sets[set].pending += 1;
        self.docs.push_back(Job {
            uri,
            what: What::Document(DocJob {
                set: Some(set),
                depth,
                expect,
                role,
                then: None,
                discovered: false,
                parent,
            }),
            attempt: 0,
            redirects: 0,
        });
    }

    /// Tells the caller to drop what it kept of a request's body, if it kept any.
    fn discard(&mut self, id: RequestId, job: &Job) {
        if let What::Resource { change, .. } = &job.what {
            self.events.push_back(Event::Discard {
                request: id,
                change: *change,
            });
        }
    }

    fn redirect(&mut self, id: RequestId, mut job: Job, location: &str, now: Instant) {
        match self.config.policy.check_redirect(&job.uri, location) {
            Ok(_) if job.redirects >= self.config.bounds.max_redirects => self.fail_job(
                job,
                ProblemKind::Failed("too many redirects".into()),
                Some(id),
                now,
            ),
            Ok(target) => {
                job.uri = target;
                job.redirects += 1;
                self.queue(job, true);
            }
            Err(e) => self.fail_job(job, ProblemKind::Refused(e), Some(id), now),
        }
    }

    fn retry(&mut self, mut job: Job, id: RequestId, kind: ProblemKind, now: Instant) {
        job.attempt += 1;
        if job.attempt < self.config.bounds.attempts {
            let delay = self.config.bounds.retry_delay * (1 << (job.attempt - 1).min(16));
            self.waiting.push((now + delay, job));
        } else {
            self.fail_job(job, kind, Some(id), now);
        }
    }

    /// A job failed for good (or was refused): what follows depends on what it was for.
    fn fail_job(&mut self, job: Job, kind: ProblemKind, id: Option<RequestId>, _now: Instant) {
        match job.what {
            What::Discover(step) => {
                self.root_pending = self.root_pending.saturating_sub(1);
                self.discover(step.next());
            }
            What::Document(doc) => {
                if let Some(step) = doc.then {
                    // No Source Description at the well-known URI: discovery goes on.
                    // A refusal is said all the same.
                    if matches!(kind, ProblemKind::Refused(_)) {
                        self.push_problem(Some(&job.uri), id, kind);
                    }
                    self.root_pending = self.root_pending.saturating_sub(1);
                    self.visited.remove(job.uri.as_str());
                    self.discover(Some(step));
                    return;
                }
                self.push_problem(Some(&job.uri), id, kind);
                match doc.set {
                    Some(set) => {
                        self.sets[set].failed = true;
                        self.sets[set].pending = self.sets[set].pending.saturating_sub(1);
                    }
                    None => self.root_pending = self.root_pending.saturating_sub(1),
                }
            }
            What::Resource { change, mut others } => {
                if !others.is_empty() && !matches!(kind, ProblemKind::Refused(_)) {
                    let next = others.remove(0);
                    self.queue(
                        Job {
                            uri: next,
                            what: What::Resource { change, others },
                            attempt: 0,
                            redirects: 0,
                        },
                        true,
                    );
                    return;
                }
                self.push_problem(Some(&job.uri), id, kind);
                self.settle_failed(change);
            }
            What::Package { set, .. } => {
                self.push_problem(Some(&job.uri), id, kind);
                self.sets[set].failed = true;
                self.sets[set].pending = self.sets[set].pending.saturating_sub(1);
            }
        }
    }

    fn push_problem(&mut self, uri: Option<&Uri>, id: Option<RequestId>, kind: ProblemKind) {
        match kind {
            ProblemKind::Refused(_) | ProblemKind::Path(_) | ProblemKind::Collision(_) => {
                self.report.refused += 1
            }
            _ => {}
        }
        self.report.problems += 1;
        self.events.push_back(problem(uri, id, kind));
    }

    fn warn(
        &mut self,
        document: Option<&Uri>,
        entry: Option<u64>,
        rule: Option<resourcesync_model::Rule>,
        message: String,
    ) {
        self.report.warnings += 1;
        self.events.push_back(Event::Warning(Warning {
            document: document.cloned(),
            entry,
            rule,
            message,
        }));
    }

    // ---- discovery ----

    /// Takes discovery's `step`, or says it found nothing.
    fn discover(&mut self, step: Option<Step>) {
        let base = self.config.start.clone();
        let uri = match step {
            None => {
                self.push_problem(
                    Some(&base),
                    None,
                    ProblemKind::NotOffered("Source Description (discovery found none)"),
                );
                return;
            }
            Some(Step::Robots) => base.join("/robots.txt"),
            Some(Step::Home) => Ok(base.clone()),
        };
        match (uri, step) {
            (Ok(uri), Some(step)) => {
                self.root_pending += 1;
                self.docs.push_back(Job {
                    uri,
                    what: What::Discover(step),
                    attempt: 0,
                    redirects: 0,
                });
            }
            (Err(e), _) => {
                self.push_problem(Some(&base), None, ProblemKind::Document(e.to_string()))
            }
            (Ok(_), None) => {}
        }
    }

    fn discovered(&mut self, job: Job, body: &[u8], links: &[String]) {
        self.root_pending = self.root_pending.saturating_sub(1);
        let What::Discover(step) = job.what else {
            return;
        };
        let limits = discovery::Limits::default();
        let found = match step {
            Step::Robots => discovery::robots_txt(&job.uri, body, &limits),
            Step::Home => {
                let mut found =
                    discovery::link_headers(&job.uri, links.iter().map(String::as_str), &limits);
                found
                    .uris
                    .extend(discovery::html_links(&job.uri, body, &limits).uris);
                found
            }
        };
        let mut any = false;
        for uri in found.uris {
            if let Some(uri) = self.checked(&uri) {
                any = true;
                self.push_root_doc(uri, Role::Any, None, true);
            }
        }
        if !any {
            self.discover(step.next());
        }
    }

    // ---- documents ----

    fn read_document(&mut self, id: RequestId, end: bool, now: Instant) {
        loop {
            let Some(Flight {
                body: Body::Document(doc),
                job,
                ..
            }) = self.flights.get_mut(&id)
            else {
                return;
            };
            if doc.head.is_none() {
                match doc.feed.head() {
                    Ok(Some(head)) => {
                        let head = head.clone();
                        let job = job.clone();
                        if let Err(kind) = self.on_head(id, &job, &head) {
                            self.document_failed(id, kind, now);
                            return;
                        }
                        continue;
                    }
                    Ok(None) => return,
                    Err(e) => {
                        self.document_failed(id, ProblemKind::Document(e.to_string()), now);
                        return;
                    }
                }
            }
            match doc.feed.next_entry() {
                Ok(Next::Entry(entry)) => {
                    doc.entries += 1;
                    let n = doc.entries;
                    // The reader's findings come with the entry they are about.
                    let findings = !doc.feed.findings().is_empty();
                    // A listing's entries, by the million, go straight to their set
                    // (as `on_entry` would send them), without looking the flight up
                    // again.
                    match &doc.head {
                        Some(Head {
                            role: Role::Listing,
                            kind: DocumentKind::ResourceList,
                            set,
                            ..
                        }) => {
                            if let Some(s) = *set {
                                self.listed_entry(s, &entry, None);
                            }
                        }
                        _ => self.on_entry(id, n, entry),
                    }
                    if findings {
                        self.take_findings(id);
                    }
                }
                Ok(Next::NeedMore) => {
                    self.take_findings(id);
                    return;
                }
                Ok(Next::End) => {
                    self.take_findings(id);
                    if end {
                        self.document_read(id);
                    }
                    return;
                }
                // What a later reader may add: nothing to take yet.
                Ok(_) => {
                    self.take_findings(id);
                    return;
                }
                Err(e) => {
                    self.document_failed(id, ProblemKind::Document(e.to_string()), now);
                    return;
                }
            }
        }
    }

    fn take_findings(&mut self, id: RequestId) {
        let max = self.config.bounds.max_warnings;
        let Some(Flight {
            body: Body::Document(doc),
            job,
            ..
        }) = self.flights.get_mut(&id)
        else {
            return;
        };
        if doc.feed.findings().is_empty() {
            return;
        }
        let findings = doc.feed.take_findings();
        let uri = job.uri.clone();
        for finding in findings {
            doc.warnings += 1;
            self.report.warnings += 1;
            if doc.warnings <= max {
                self.events.push_back(Event::Warning(Warning {
                    document: Some(uri.clone()),
                    entry: finding.entry,
                    rule: Some(finding.rule),
                    message: finding.message,
                }));
            }
        }
    }

    fn document_failed(&mut self, id: RequestId, kind: ProblemKind, now: Instant) {
        if let Some(flight) = self.flights.remove(&id) {
            self.events.push_back(Event::Cancel { request: id });
            let mut job = flight.job;
            // A broken document is not retried: it would break the same way.
            job.attempt = self.config.bounds.attempts;
            self.fail_job(job, kind, Some(id), now);
        }
    }

    /// Decides what a document is read for, from its head and what its parent promised.
    fn on_head(
        &mut self,
        id: RequestId,
        job: &Job,
        head: &DocumentHead,
    ) -> Result<(), ProblemKind> {
        let What::Document(doc) = &job.what else {
            return Ok(());
        };
        let kind = head.kind();
        let capability = head.md.capability.clone();
        if let Some(expected) = &doc.expect {
            if capability.as_ref() != Some(expected) {
                return Err(ProblemKind::Unexpected {
                    expected: expected.as_str().into(),
                    found: kind.name().into(),
                });
            }
        }
        let mode = self.config.mode;
        let mut set = doc.set;
        if doc.role == Role::Any {
            if let Some(instead) = self.instead_of_start(head, kind) {
                // Read the whole set instead: this document is not read on (and may be
                // reached again from there).
                self.visited.remove(job.uri.as_str());
                self.push_root_doc(instead, Role::Any, None, false);
                if self.flights.remove(&id).is_some() {
                    self.events.push_back(Event::Cancel { request: id });
                    self.root_pending = self.root_pending.saturating_sub(1);
                }
                return Ok(());
            }
        }
        // A list started at directly belongs to the set of the Capability List it
        // points `up` to, if it does: baseline and incremental runs then share it.
        let key = head
            .link(&Relation::Up)
            .map(|l| l.href.to_string())
            .unwrap_or_else(|| job.uri.to_string());
        let role = match (doc.role, kind) {
            (Role::Any, DocumentKind::SourceDescription) => Role::Any,
            (Role::Any, k) if mode == Mode::Explore && k != DocumentKind::CapabilityList => {
                if k == DocumentKind::Unknown {
                    return Err(ProblemKind::NotOffered(
                        "ResourceSync document (the start has no capability)",
                    ));
                }
                set = Some(self.new_start_set(&key, &job.uri));
                Role::Explore
            }
            (Role::Any, DocumentKind::CapabilityList) => {
                set = Some(self.new_set(job.uri.as_str(), Phase::Capabilities));
                Role::Capabilities
            }
            (Role::Any, DocumentKind::ResourceList | DocumentKind::ResourceListIndex)
                if mode != Mode::Incremental =>
            {
                set = Some(self.new_start_set(&key, &job.uri));
                Role::Listing
            }
            (Role::Any, DocumentKind::ResourceDump | DocumentKind::ResourceDumpIndex)
                if matches!(mode, Mode::Baseline { .. }) =>
            {
                set = Some(self.new_start_set(&key, &job.uri));
                Role::Dump
            }
            (
                Role::Any,
                DocumentKind::ChangeList
                | DocumentKind::ChangeListIndex
                | DocumentKind::ChangeDump
                | DocumentKind::ChangeDumpIndex,
            ) if mode == Mode::Incremental => {
                let s = self.new_start_set(&key, &job.uri);
                if self.start_stream(s) {
                    set = Some(s);
                    Role::Changes
                } else {
                    // No checkpoint (a problem said so): the document is read on without
                    // a set, its entries ignored. Returning before its head is recorded
                    // made `read_document` ask for the head again, forever.
                    self.sets[s].phase = Phase::Finished;
                    Role::Any
                }
            }
            (Role::Any, DocumentKind::Unknown) if doc.discovered => {
                // A plain Sitemap found by discovery: not ResourceSync.
                self.warn(
                    Some(&job.uri),
                    None,
                    None,
                    "not a ResourceSync document; ignored".into(),
                );
                Role::Any
            }
            (Role::Any, _) => {
                return Err(ProblemKind::NotOffered(match mode {
                    Mode::Incremental => "Change List (the start is a document of another kind)",
                    _ => "Resource List (the start is a document of another kind)",
                }));
            }
            (role, _) => role,
        };
        // The start was counted as a root job; it now belongs to its set (and a failure
        // later in its body is counted there).
        if doc.set.is_none() {
            if let Some(s) = set {
                self.root_pending = self.root_pending.saturating_sub(1);
                self.sets[s].pending += 1;
                // And it is that set's document of that role from now on: read again
                // (a retry after its body failed), it is not a start a second time.
                if let Some(flight) = self.flights.get_mut(&id) {
                    if let What::Document(d) = &mut flight.job.what {
                        d.set = Some(s);
                        d.role = role;
                        // Found, so no longer discovery's: a failure later is this set's,
                        // not a reason to try the next way of discovery.
                        d.then = None;
                    }
                }
            }
        }
        if let Some(Flight {
            body: Body::Document(d),
            ..
        }) = self.flights.get_mut(&id)
        {
            d.head = Some(Head {
                kind,
                set,
                at: head.md.at,
                role,
            });
        }
        if let Some(s) = set {
            if role == Role::Listing || role == Role::Dump {
                if let Some(at) = head.md.at {
                    let earliest = self.sets[s].at.map_or(at, |a| a.min(at));
                    self.sets[s].at = Some(earliest);
                }
            }
            if let Some(stream) = self.sets[s].stream.as_mut() {
                if let Some(link) = head.link(&Relation::Archives) {
                    if stream.archive.is_none() {
                        stream.archive = Some(link.href.clone());
                    }
                }
                if role == Role::Changes && kind == DocumentKind::ChangeList {
                    // The stream starts at a Change List: it is its own candidate. Read
                    // again (a retry), it starts over.
                    let own = Candidate {
                        uri: job.uri.clone(),
                        from: head.md.from,
                        until: head.md.until,
                        dump: false,
                        md: None,
                        loaded: Some(Vec::new()),
                        package: None,
                    };
                    match stream.candidates.iter_mut().find(|c| c.uri == job.uri) {
                        Some(c) => *c = own,
                        None => stream.candidates.push(own),
                    }
                }
                if let Role::Candidate(c) = role {
                    // A candidate read again (a retry after its body failed) starts over:
                    // what the failed attempt read would count twice.
                    if let Some(c) = stream.candidates.get_mut(c) {
                        c.loaded = Some(Vec::new());
                    }
                }
            }
        }
        Ok(())
    }

    /// Where a run that starts at a list should read instead: a baseline or audit reads
    /// a Resource List's whole index (its `index` link), never one part (deleting what
    /// the other parts list); an incremental run reads the Capability List a Resource
    /// List or Dump points `up` to, where the Change Lists are.
    fn instead_of_start(&mut self, head: &DocumentHead, kind: DocumentKind) -> Option<Uri> {
        let link = match (self.config.mode, kind) {
            (
                Mode::Incremental,
                DocumentKind::ResourceList
                | DocumentKind::ResourceListIndex
                | DocumentKind::ResourceDump
                | DocumentKind::ResourceDumpIndex,
            ) => head.link(&Relation::Up)?,
            (Mode::Baseline { .. } | Mode::Audit, DocumentKind::ResourceList) => {
                head.link(&Relation::Index)?
            }
            _ => return None,
        };
        let uri = link.href.clone();
        self.checked(&uri)
    }

    /// The set of a list the run started at: keyed by `key`, re-read from `start`.
    fn new_start_set(&mut self, key: &str, start: &Uri) -> usize {
        let set = self.new_set(key, Phase::Reading);
        self.sets[set].start = start.clone();
        set
    }

    fn new_set(&mut self, key: &str, phase: Phase) -> usize {
        if let Some(i) = self.sets.iter().position(|s| s.key == key) {
            return i;
        }
        let start = key.parse().unwrap_or_else(|_| self.config.start.clone());
        self.sets.push(Set {
            key: key.to_owned(),
            start,
            listed_by_capabilities: phase == Phase::Capabilities,
            offered: Offered::default(),
            pending: 0,
            at: None,
            failed: false,
            phase,
            stream: None,
        });
        self.sets.len() - 1
    }

    /// Sets up an incremental run's stream for `set`; false (with a problem) when the
    /// set has no checkpoint.
    fn start_stream(&mut self, set: usize) -> bool {
        let Some(checkpoint) = self.state.checkpoint(&self.sets[set].key).copied() else {
            self.sets[set].failed = true;
            let uri = self.capability_list_uri(set);
            self.push_problem(uri.as_ref(), None, ProblemKind::NoCheckpoint);
            return false;
        };
        self.sets[set].stream = Some(Stream {
            checkpoint,
            candidates: Vec::new(),
            archive: self.sets[set].offered.changelist_archive.clone(),
            archive_read: false,
            planned: false,
            next: 0,
            batch_start: 0,
            batch_entries: 0,
            cursor: None,
            issued: Vec::new(),
            failed_at: None,
            batch_end: None,
            applying: false,
            batch_packages: Vec::new(),
        });
        true
    }

    fn on_entry(&mut self, id: RequestId, n: u64, entry: Entry) {
        let Some(Flight {
            body: Body::Document(doc),
            job,
            ..
        }) = self.flights.get(&id)
        else {
            return;
        };
        let Some(head) = &doc.head else { return };
        let (kind, set, role) = (head.kind, head.set, head.role);
        let depth = match &job.what {
            What::Document(d) => d.depth,
            _ => 0,
        };
        // The entries of lists, by the million, go straight to their role (a listing's
        // from `read_document`); the rest may name the document they are in.
        if let (Role::Changes | Role::Candidate(_), DocumentKind::ChangeList) = (role, kind) {
            self.collect_change(set, role, &entry);
            return;
        }
        let doc_uri = job.uri.clone();
        let capability = entry.md.as_ref().and_then(|md| md.capability.clone());
        match (role, kind) {
            (Role::Any, DocumentKind::SourceDescription) => {
                if capability != Some(Capability::CapabilityList) {
                    self.warn(
                        Some(&doc_uri),
                        Some(n),
                        None,
                        "entry is not a Capability List; ignored".into(),
                    );
                    return;
                }
                if let Some(uri) = self.checked(&entry.loc) {
                    let s = self.new_set(uri.as_str(), Phase::Capabilities);
                    self.push_doc(
                        s,
                        uri,
                        Role::Capabilities,
                        depth + 1,
                        Some(Capability::CapabilityList),
                        Some(doc_uri.clone()),
                    );
                }
            }
            (Role::Capabilities, _) => {
                let Some(s) = set else { return };
                let uri = entry.loc.clone();
                let offered = &mut self.sets[s].offered;
                if let Some(c) = &capability {
                    offered.all.push((c.clone(), uri.clone()));
                }
                match capability {
                    Some(Capability::ResourceList) => offered.resourcelist = Some(uri),
                    Some(Capability::ResourceDump) => offered.resourcedump = Some(uri),
                    Some(Capability::ChangeList) => offered.changelist = Some(uri),
                    Some(Capability::ChangeDump) => offered.changedump = Some(uri),
                    Some(Capability::ChangeListArchive) => offered.changelist_archive = Some(uri),
                    // Others (archives of lists and dumps, unknown) are not needed.
                    _ => {}
                }
            }
            (_, k) if k.is_index() => {
                // Every child of an index has the index's capability.
                let Some(s) = set else { return };
                if depth + 1 > self.config.bounds.max_depth {
                    self.sets[s].failed = true;
                    self.push_problem(
                        Some(&entry.loc),
                        Some(id),
                        ProblemKind::TooDeep(self.config.bounds.max_depth),
                    );
                    return;
                }
                let expect = k.capability();
                match role {
                    Role::Changes | Role::Archive
                        if k == DocumentKind::ChangeListIndex
                            || k == DocumentKind::ChangeDumpIndex =>
                    {
                        // Change lists (or dumps) become candidates, read in order later.
                        self.add_candidate(s, &entry, k == DocumentKind::ChangeDumpIndex);
                    }
                    _ => {
                        if let Some(uri) = self.checked(&entry.loc) {
                            self.push_doc(s, uri, role, depth + 1, expect, Some(doc_uri.clone()));
                        }
                    }
                }
            }
            (Role::Explore, archive) => {
                // An archive lists documents of the capability it archives.
                let archived = match archive {
                    DocumentKind::ResourceListArchive => Capability::ResourceList,
                    DocumentKind::ResourceDumpArchive => Capability::ResourceDump,
                    DocumentKind::ChangeListArchive => Capability::ChangeList,
                    DocumentKind::ChangeDumpArchive => Capability::ChangeDump,
                    _ => return,
                };
                let Some(s) = set else { return };
                if depth + 1 > self.config.bounds.max_depth {
                    self.sets[s].failed = true;
                    let max = self.config.bounds.max_depth;
                    self.push_problem(Some(&entry.loc), Some(id), ProblemKind::TooDeep(max));
                    return;
                }
                if let Some(uri) = self.checked(&entry.loc) {
                    self.push_doc(
                        s,
                        uri,
                        Role::Explore,
                        depth + 1,
                        Some(archived),
                        Some(doc_uri.clone()),
                    );
                }
            }
            (Role::Dump, DocumentKind::ResourceDump) => {
                let Some(s) = set else { return };
                if let Some(uri) = self.checked(&entry.loc) {
                    self.sets[s].pending += 1;
                    self.docs.push_back(Job {
                        uri,
                        what: What::Package {
                            set: s,
                            md: entry.md.clone().map(Box::new),
                            candidate: None,
                        },
                        attempt: 0,
                        redirects: 0,
                    });
                }
            }
            (Role::Changes, DocumentKind::ChangeDump)
            | (Role::Archive, DocumentKind::ChangeDumpArchive) => {
                if let Some(s) = set {
                    self.add_candidate(s, &entry, true);
                }
            }
            (Role::Archive, DocumentKind::ChangeListArchive) => {
                if let Some(s) = set {
                    self.add_candidate(s, &entry, false);
                }
            }
            _ => {}
        }
    }

    /// A change read from a Change List: kept with its candidate until its batch is
    /// applied.
    fn collect_change(&mut self, set: Option<usize>, role: Role, entry: &Entry) {
        let Some(s) = set else { return };
        let Some(stream) = self.sets[s].stream.as_mut() else {
            return;
        };
        let c = match role {
            Role::Candidate(c) => c,
            _ => stream.candidates.len().saturating_sub(1),
        };
        if let Some(Some(loaded)) = stream.candidates.get_mut(c).map(|c| c.loaded.as_mut()) {
            loaded.push(raw(entry, None));
        }
    }

    fn add_candidate(&mut self, set: usize, entry: &Entry, dump: bool) {
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return;
        };
        if stream.candidates.iter().any(|c| c.uri == entry.loc) {
            return;
        }
        let md = entry.md.as_ref();
        stream.candidates.push(Candidate {
            uri: entry.loc.clone(),
            from: md.and_then(|m| m.from),
            until: md.and_then(|m| m.until),
            dump,
            md: entry.md.clone(),
            loaded: None,
            package: None,
        });
    }

    /// The URI if the policy allows it; else a problem.
    fn checked(&mut self, uri: &Uri) -> Option<Uri> {
        match self.config.policy.check(uri) {
            Ok(()) => Some(uri.clone()),
            Err(e) => {
                self.push_problem(Some(uri), None, ProblemKind::Refused(e));
                None
            }
        }
    }

    fn document_read(&mut self, id: RequestId) {
        let Some(flight) = self.flights.remove(&id) else {
            return;
        };
        let Body::Document(doc) = flight.body else {
            return;
        };
        let Some(head) = doc.head else { return };
        self.report.documents += 1;
        self.progress.documents += 1;
        let parent = match &flight.job.what {
            What::Document(d) => d.parent.clone(),
            _ => None,
        };
        self.events.push_back(Event::Document(DocumentRead {
            request: id,
            parent,
            uri: flight.job.uri.clone(),
            kind: head.kind,
            entries: doc.entries,
            at: head.at,
        }));
        match head.set {
            Some(s) => {
                if head.role == Role::Capabilities {
                    self.capabilities_read(s);
                }
                self.sets[s].pending = self.sets[s].pending.saturating_sub(1);
            }
            None => self.root_pending = self.root_pending.saturating_sub(1),
        }
        self.events.push_back(Event::Progress(self.progress()));
    }

    /// A set's Capability List was read: start its listing or change stream.
    fn capabilities_read(&mut self, set: usize) {
        self.sets[set].phase = Phase::Reading;
        let offered = &self.sets[set].offered;
        if self.config.mode == Mode::Explore {
            let parent = self.capability_list_uri(set);
            let all = std::mem::take(&mut self.sets[set].offered.all);
            for (capability, uri) in all {
                if let Some(uri) = self.checked(&uri) {
                    self.push_doc(set, uri, Role::Explore, 2, Some(capability), parent.clone());
                }
            }
            return;
        }
        let (uri, role, expect, what) = match self.config.mode {
            Mode::Baseline { prefer_dump } => {
                match (&offered.resourcelist, &offered.resourcedump) {
                    (_, Some(dump)) if prefer_dump || offered.resourcelist.is_none() => (
                        dump.clone(),
                        Role::Dump,
                        Capability::ResourceDump,
                        "Resource List or Dump",
                    ),
                    (Some(list), _) => (list.clone(), Role::Listing, Capability::ResourceList, ""),
                    _ => {
                        self.set_not_offered(set, "Resource List or Dump");
                        return;
                    }
                }
            }
            Mode::Audit => match &offered.resourcelist {
                Some(list) => (list.clone(), Role::Listing, Capability::ResourceList, ""),
                None => {
                    self.set_not_offered(set, "Resource List");
                    return;
                }
            },
            Mode::Explore => return,
            Mode::Incremental => {
                let (uri, expect) = match (&offered.changelist, &offered.changedump) {
                    (Some(list), _) => (list.clone(), Capability::ChangeList),
                    (None, Some(dump)) => (dump.clone(), Capability::ChangeDump),
                    _ => {
                        self.set_not_offered(set, "Change List or Change Dump");
                        return;
                    }
                };
                if !self.start_stream(set) {
                    self.sets[set].phase = Phase::Finished;
                    return;
                }
                (uri, Role::Changes, expect, "")
            }
        };
        let _ = what;
        if let Some(uri) = self.checked(&uri) {
            let parent = self.capability_list_uri(set);
            self.push_doc(set, uri, role, 2, Some(expect), parent);
        } else {
            self.sets[set].failed = true;
        }
    }

    fn set_not_offered(&mut self, set: usize, what: &'static str) {
        self.sets[set].failed = true;
        self.sets[set].phase = Phase::Finished;
        let uri = self.capability_list_uri(set);
        self.push_problem(uri.as_ref(), None, ProblemKind::NotOffered(what));
    }

    // ---- baseline and audit ----

    /// One resource of a listing (a Resource List entry, or a bitstream of a Resource
    /// Dump package): compared with the inventory, and a change decided if it differs.
    fn listed_entry(&mut self, set: usize, entry: &Entry, bitstream: Option<(RequestId, usize)>) {
        if let Some(shard) = &self.config.shard {
            if !shard.contains(&entry.loc) {
                return;
            }
        }
        self.report.listed += 1;
        self.progress.listed += 1;
        // Kept only for what reads it once the listing is whole: deletions, an audit.
        let keep = match self.config.mode {
            Mode::Audit => true,
            Mode::Incremental | Mode::Explore => false,
            _ => self.config.delete,
        };
        if keep {
            self.listed.push(hash(&entry.loc));
        }
        let held = self.inventory.get(&entry.loc);
        let comparison = held.map(|h| h.compare(entry.md.as_ref(), entry.lastmod.as_ref()));
        let action = match comparison {
            Some(Comparison::Same) => {
                self.report.unchanged += 1;
                return;
            }
            Some(Comparison::Differs(d)) => {
                if self.config.mode == Mode::Audit {
                    self.report.changed += 1;
                    self.events.push_back(Event::Audit {
                        uri: entry.loc.clone(),
                        standing: Standing::Changed(d),
                    });
                    return;
                }
                Action::Update
            }
            None => {
                if self.config.mode == Mode::Audit {
                    self.report.missing += 1;
                    self.events.push_back(Event::Audit {
                        uri: entry.loc.clone(),
                        standing: Standing::Missing,
                    });
                    return;
                }
                Action::Create
            }
        };
        let mirrors = mirrors(entry);
        self.decide(set, action, entry, mirrors, bitstream);
    }

    /// Decides a change: checks the URI and its path, announces it, and in a real run
    /// asks for it (a fetch, an extraction, a deletion).
    fn decide(
        &mut self,
        set: usize,
        action: Action,
        entry: &Entry,
        mirrors: Vec<Uri>,
        bitstream: Option<(RequestId, usize)>,
    ) -> Option<ChangeId> {
        if let Err(e) = self.config.policy.check(&entry.loc) {
            self.push_problem(Some(&entry.loc), None, ProblemKind::Refused(e));
            return None;
        }
        let path = match self.config.paths.local_path(&entry.loc) {
            Ok(path) => path,
            Err(e) => {
                self.push_problem(Some(&entry.loc), None, ProblemKind::Path(e));
                return None;
            }
        };
        if action != Action::Delete {
            if let Err(collision) = self.paths.insert(&entry.loc, &path) {
                self.push_problem(
                    Some(&entry.loc),
                    None,
                    ProblemKind::Collision(Box::new(collision)),
                );
                return None;
            }
        }
        self.next_id += 1;
        let id = ChangeId(self.next_id);
        let change = Change {
            id,
            action,
            uri: entry.loc.clone(),
            path,
            md: entry.md.clone(),
            lastmod: entry.lastmod,
        };
        self.progress.planned += 1;
        self.events.push_back(Event::Change(change.clone()));
        if self.config.dry_run {
            self.progress.settled += 1;
            self.count(action);
            return Some(id);
        }
        let package = bitstream.map(|(p, _)| p);
        match (action, bitstream) {
            (Action::Delete, _) => self.events.push_back(Event::Delete(change.clone())),
            (_, Some((package, index))) => {
                if let Some(p) = self.packages.get_mut(&package) {
                    p.unsettled += 1;
                }
                self.events.push_back(Event::Extract(Extract {
                    change: change.clone(),
                    package,
                    bitstream: index,
                }))
            }
            (_, None) => {
                let mut places = mirrors;
                places.retain(|m| self.config.policy.check(m).is_ok());
                places.push(entry.loc.clone());
                let first = places.remove(0);
                self.fetches.push_back(Job {
                    uri: first,
                    what: What::Resource {
                        change: id,
                        others: places,
                    },
                    attempt: 0,
                    redirects: 0,
                });
            }
        }
        self.changes.insert(
            id,
            Pending {
                change,
                set,
                package,
                stored: false,
            },
        );
        Some(id)
    }

    fn count(&mut self, action: Action) {
        match action {
            Action::Create => self.report.created += 1,
            Action::Update => self.report.updated += 1,
            Action::Delete => self.report.deleted += 1,
        }
    }

    /// A resource's body ended: checked against what was listed.
    fn fetched(
        &mut self,
        id: RequestId,
        job: Job,
        digests: resourcesync_model::Digests,
        now: Instant,
    ) {
        match &job.what {
            What::Resource { change, .. } => {
                let change = *change;
                let Some(pending) = self.changes.get_mut(&change) else {
                    return;
                };
                match digests.verify(pending.change.md.as_ref()) {
                    Ok(()) => {
                        pending.stored = true;
                        let change = pending.change.clone();
                        self.events.push_back(Event::Store(Store {
                            change,
                            request: id,
                            digests,
                        }));
                    }
                    Err(mismatch) => {
                        self.events.push_back(Event::Discard {
                            request: id,
                            change,
                        });
                        self.fail_job(job, ProblemKind::Fixity(mismatch), Some(id), now);
                    }
                }
            }
            What::Package { set, md, candidate } => match digests.verify(md.as_deref()) {
                Ok(()) => {
                    self.packages.insert(
                        id,
                        Unpacking {
                            set: *set,
                            unsettled: 0,
                            manifest_read: false,
                            candidate: *candidate,
                        },
                    );
                    self.events.push_back(Event::Package { request: id });
                }
                Err(mismatch) => {
                    self.events.push_back(Event::Release { request: id });
                    self.fail_job(job, ProblemKind::Fixity(mismatch), Some(id), now);
                }
            },
            _ => {}
        }
    }

    fn package_gone(&mut self, set: usize) {
        self.sets[set].pending = self.sets[set].pending.saturating_sub(1);
    }

    fn release_if_settled(&mut self, package: RequestId) {
        let Some(p) = self.packages.get(&package) else {
            return;
        };
        if p.manifest_read && p.unsettled == 0 && p.candidate.is_none() {
            self.packages.remove(&package);
            self.events.push_back(Event::Release { request: package });
        }
    }

    fn settle_failed(&mut self, change: ChangeId) {
        self.settle(change, Some(ProblemKind::Failed(String::new())));
    }

    fn settle(&mut self, change: ChangeId, failure: Option<ProblemKind>) {
        let Some(pending) = self.changes.remove(&change) else {
            return;
        };
        self.progress.settled += 1;
        let set = pending.set;
        match failure {
            None => self.count(pending.change.action),
            Some(kind) => {
                self.report.failed += 1;
                if let ProblemKind::NotApplied(_) = kind {
                    self.push_problem(Some(&pending.change.uri), None, kind);
                }
                self.sets[set].failed = true;
                if let Some(stream) = self.sets[set].stream.as_mut() {
                    if let Some((pos, _)) = stream.issued.iter().find(|(_, c)| *c == change) {
                        stream.failed_at = Some(stream.failed_at.map_or(*pos, |f| f.min(*pos)));
                    }
                }
            }
        }
        if let Some(package) = pending.package {
            if let Some(p) = self.packages.get_mut(&package) {
                p.unsettled = p.unsettled.saturating_sub(1);
            }
            self.release_if_settled(package);
        }
    }

    // ---- incremental ----

    /// Moves a set's change stream on as far as it can.
    fn advance_stream(&mut self, set: usize) {
        loop {
            if self.sets[set].pending > 0 || self.sets[set].phase != Phase::Reading {
                return;
            }
            let failed = self.sets[set].failed;
            let Some(stream) = self.sets[set].stream.as_mut() else {
                self.sets[set].phase = Phase::Finished;
                return;
            };
            if failed && !stream.applying {
                // A document failed, or a change: later changes wait for the next run.
                self.sets[set].phase = Phase::Finished;
                return;
            }
            if stream.applying {
                if self.changes.values().any(|p| p.set == set) {
                    return;
                }
                self.batch_settled(set);
                continue;
            }
            if !stream.planned {
                if let Err(kind) = self.plan(set) {
                    self.sets[set].failed = true;
                    self.sets[set].phase = Phase::Finished;
                    let uri = self.capability_list_uri(set);
                    self.push_problem(uri.as_ref(), None, kind);
                    return;
                }
                continue;
            }
            let Some(stream) = self.sets[set].stream.as_mut() else {
                return;
            };
            // Load the next candidates, then apply them together.
            if stream.next < stream.candidates.len() && stream.batch_entries < BATCH {
                let c = stream.next;
                let cand = &stream.candidates[c];
                if cand.loaded.is_some() {
                    stream.batch_entries += cand.loaded.as_ref().map_or(0, Vec::len);
                    stream.next += 1;
                    continue;
                }
                let (uri, dump, md) = (cand.uri.clone(), cand.dump, cand.md.clone());
                match self.checked(&uri) {
                    Some(uri) if dump => {
                        self.sets[set].pending += 1;
                        self.docs.push_back(Job {
                            uri,
                            what: What::Package {
                                set,
                                md: md.map(Box::new),
                                candidate: Some(c),
                            },
                            attempt: 0,
                            redirects: 0,
                        });
                    }
                    Some(uri) => {
                        if let Some(cand) = self.sets[set]
                            .stream
                            .as_mut()
                            .and_then(|s| s.candidates.get_mut(c))
                        {
                            cand.loaded = Some(Vec::new());
                        }
                        self.push_doc(
                            set,
                            uri,
                            Role::Candidate(c),
                            3,
                            Some(Capability::ChangeList),
                            None,
                        );
                    }
                    None => {
                        self.sets[set].failed = true;
                        self.sets[set].phase = Phase::Finished;
                    }
                }
                return;
            }
            if stream.batch_start < stream.next {
                self.apply_batch(set);
                continue;
            }
            // Everything applied.
            self.sets[set].phase = Phase::Finished;
            return;
        }
    }

    /// Orders a set's candidates, reads the archive when the changes on offer start
    /// after the checkpoint, and refuses gaps.
    fn plan(&mut self, set: usize) -> Result<(), ProblemKind> {
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return Ok(());
        };
        let checkpoint = stream.checkpoint.datetime;
        let earliest = stream.candidates.iter().filter_map(|c| c.from).min();
        // A list that starts at the checkpoint's datetime may not hold every change at
        // it: lists are closed and opened within one second, and an earlier one whose
        // interval ends there may hold some. So the archive is read then too.
        let missing_early = match earliest {
            Some(from) => from >= checkpoint,
            None => stream.candidates.is_empty(),
        };
        if missing_early && !stream.archive_read {
            if let Some(archive) = stream.archive.clone() {
                stream.archive_read = true;
                if let Some(uri) = self.checked(&archive) {
                    self.push_doc(
                        set,
                        uri,
                        Role::Archive,
                        3,
                        Some(Capability::ChangeListArchive),
                        None,
                    );
                }
                return Ok(());
            }
        }
        if let Some(from) = earliest {
            if from > checkpoint {
                return Err(ProblemKind::Gap { checkpoint, from });
            }
        }
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return Ok(());
        };
        stream
            .candidates
            .retain(|c| c.until.is_none_or(|u| u >= checkpoint));
        // By `from`; among lists that start together (closed and opened within one
        // second), the closed ones first, by `until`, and an open one last.
        stream
            .candidates
            .sort_by_key(|c| (c.from, c.until.is_none(), c.until));
        for pair in stream.candidates.windows(2) {
            if let (Some(until), Some(from)) = (pair[0].until, pair[1].from) {
                if from > until {
                    return Err(ProblemKind::Gap {
                        checkpoint: until,
                        from,
                    });
                }
            }
        }
        // Re-number loaded candidates' roles: the one read as the stream's start keeps
        // its entries wherever it sorted to.
        stream.planned = true;
        Ok(())
    }

    /// Applies the loaded candidates `batch_start..next`: positions, collapse, decide.
    fn apply_batch(&mut self, set: usize) {
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return;
        };
        let checkpoint = stream.checkpoint;
        let mut cursor = stream.cursor;
        let mut last = None;
        let mut latest: HashMap<Uri, (Position, Raw)> = HashMap::new();
        let mut order: Vec<Uri> = Vec::new();
        let mut packages = Vec::new();
        for c in stream.batch_start..stream.next {
            let cand = &mut stream.candidates[c];
            if let Some(p) = cand.package {
                packages.push(p);
            }
            // An entry without a datetime takes the one before it; the first of a
            // document, its `from`.
            if let Some(from) = cand.from {
                if cursor.is_none_or(|(at, _)| from > at) {
                    cursor = Some((from, 0));
                }
            }
            for r in cand.loaded.take().unwrap_or_default() {
                let (at, next) = match (r.datetime.or(r.lastmod), cursor) {
                    // Out of order (a finding of its own): counted where the stream is.
                    (Some(dt), Some((at, next))) if dt <= at => (at, next),
                    (Some(dt), _) => (dt, 0),
                    (None, Some((at, next))) => (at, next),
                    (None, None) => (checkpoint.datetime, checkpoint.count),
                };
                let position = Position {
                    datetime: at,
                    index: next,
                };
                cursor = Some((at, next + 1));
                last = Some(position);
                if checkpoint.covers(position) {
                    continue;
                }
                if !latest.contains_key(&r.uri) {
                    order.push(r.uri.clone());
                }
                latest.insert(r.uri.clone(), (position, r));
            }
        }
        stream.cursor = cursor;
        stream.batch_end = last;
        stream.batch_start = stream.next;
        stream.batch_entries = 0;
        stream.applying = true;
        stream.issued.clear();
        stream.failed_at = None;
        stream.batch_packages = packages;
        let mut ordered: Vec<(Position, Raw)> = order
            .into_iter()
            .filter_map(|u| latest.remove(&u))
            .collect();
        ordered.sort_by_key(|a| a.0);
        for (position, r) in ordered {
            if let Some(shard) = &self.config.shard {
                if !shard.contains(&r.uri) {
                    continue;
                }
            }
            let held = self.inventory.get(&r.uri);
            let action = match (r.change, held) {
                (Some(Changed::Deleted), _) => Action::Delete,
                (_, Some(h)) => match h.compare(r.md.as_ref(), r.lastmod.as_ref()) {
                    Comparison::Same => {
                        self.report.unchanged += 1;
                        continue;
                    }
                    Comparison::Differs(_) => Action::Update,
                },
                (_, None) => Action::Create,
            };
            let mut entry = Entry::new(r.uri.clone());
            entry.md = r.md.clone();
            entry.lastmod = r.lastmod;
            if let Some(id) = self.decide(set, action, &entry, r.mirrors.clone(), r.bitstream) {
                if let Some(stream) = self.sets[set].stream.as_mut() {
                    stream.issued.push((position, id));
                }
            }
        }
    }

    /// Every change of the batch is settled: move the checkpoint, release its packages.
    fn batch_settled(&mut self, set: usize) {
        let dry = self.config.dry_run;
        let Some(stream) = self.sets[set].stream.as_mut() else {
            return;
        };
        stream.applying = false;
        let new = match (stream.failed_at, stream.batch_end) {
            (Some(failed), _) => Some(failed.checkpoint_before()),
            (None, Some(end)) => Some(end.checkpoint_after()),
            (None, None) => None,
        };
        let failed = stream.failed_at.is_some();
        let packages = std::mem::take(&mut stream.batch_packages);
        if let Some(new) = new {
            if !dry
                && new != stream.checkpoint
                && (new.datetime > stream.checkpoint.datetime
                    || (new.datetime == stream.checkpoint.datetime
                        && new.count > stream.checkpoint.count))
            {
                stream.checkpoint = new;
                let key = self.sets[set].key.clone();
                self.state.sets.insert(key, new);
                self.report.at = Some(new.datetime);
                self.events.push_back(Event::Checkpoint);
            }
        }
        for p in packages {
            self.packages.remove(&p);
            self.events.push_back(Event::Release { request: p });
        }
        if failed {
            // Later changes wait until this one is applied: stop here.
            self.sets[set].phase = Phase::Finished;
        }
    }

    // ---- the end ----

    /// Moves the run on after an input: streams, deletions, the end.
    fn advance(&mut self, now: Option<Instant>) {
        if now.is_some() {
            self.now = now;
        }
        if self.done {
            return;
        }
        for set in 0..self.sets.len() {
            if self.sets[set].pending > 0 {
                continue;
            }
            match self.sets[set].phase {
                // Its Capability List failed.
                Phase::Capabilities => self.sets[set].phase = Phase::Finished,
                Phase::Reading if self.config.mode == Mode::Incremental => self.advance_stream(set),
                Phase::Reading => self.sets[set].phase = Phase::Finished,
                Phase::Finished => {}
            }
        }
        let reading = self.root_pending > 0
            || self
                .sets
                .iter()
                .any(|s| s.phase != Phase::Finished || s.pending > 0)
            || !self.docs.is_empty();
        if reading {
            return;
        }
        if !self.swept && self.config.mode != Mode::Incremental {
            self.swept = true;
            self.sweep();
        }
        if !self.changes.is_empty()
            || !self.flights.is_empty()
            || !self.fetches.is_empty()
            || !self.waiting.is_empty()
        {
            return;
        }
        if !self.packages.is_empty() {
            let left: Vec<RequestId> = self.packages.keys().copied().collect();
            for p in left {
                self.packages.remove(&p);
                self.events.push_back(Event::Release { request: p });
            }
        }
        if let (Some(every), Mode::Incremental) = (self.config.follow, self.config.mode) {
            if self.report.problems == 0 {
                if self.follow_at.is_none() {
                    let now = self.now.unwrap_or_else(Instant::now);
                    self.follow_at = Some(now + every);
                }
                return;
            }
        }
        self.finish();
    }

    /// After the whole listing was read: deletions (baseline) or extras (audit).
    fn sweep(&mut self) {
        if self.sets.is_empty() {
            if self.report.problems == 0 {
                self.push_problem(
                    Some(&self.config.start.clone()),
                    None,
                    ProblemKind::NotOffered("Source Description"),
                );
            }
            return;
        }
        let audit = self.config.mode == Mode::Audit;
        if self.config.mode == Mode::Explore || (!audit && !self.config.delete) {
            return;
        }
        if self.sets.iter().any(|s| s.failed) {
            if !audit {
                self.warn(
                    None,
                    None,
                    None,
                    "the listing was not read whole: nothing is deleted".into(),
                );
            }
            return;
        }
        self.listed.sort_unstable();
        let listed = std::mem::take(&mut self.listed);
        let shard = self.config.shard;
        let paths = &self.config.paths;
        let mut gone: Vec<Uri> = Vec::new();
        let mut count = 0u64;
        let limit = if audit {
            u64::MAX
        } else {
            self.config.max_deletes
        };
        self.inventory.for_each(&mut |uri, _| {
            if shard.is_some_and(|s| !s.contains(uri)) || listed.binary_search(&hash(uri)).is_ok() {
                return;
            }
            // What is not the Source's to list is not ours to delete.
            if matches!(
                paths.local_path(uri),
                Err(LocalPathError::OtherAuthority { .. } | LocalPathError::OutsideBase { .. })
            ) {
                return;
            }
            count += 1;
            if count <= limit {
                gone.push(uri.clone());
            }
        });
        if audit {
            for uri in gone {
                self.report.extra += 1;
                self.events.push_back(Event::Audit {
                    uri,
                    standing: Standing::Extra,
                });
            }
            return;
        }
        if count > limit {
            self.push_problem(
                None,
                None,
                ProblemKind::DeleteLimit {
                    would: count,
                    limit,
                },
            );
            // The baseline is not done: no checkpoint, so that the next run is a
            // baseline again (with a limit the caller may raise), not an incremental
            // run that would never delete these.
            for set in &mut self.sets {
                set.failed = true;
            }
            return;
        }
        let set = 0;
        for uri in gone {
            self.decide(set, Action::Delete, &Entry::new(uri), Vec::new(), None);
        }
    }

    fn finish(&mut self) {
        if !self.config.dry_run && matches!(self.config.mode, Mode::Baseline { .. }) {
            for s in 0..self.sets.len() {
                let set = &self.sets[s];
                if set.failed {
                    continue;
                }
                match set.at {
                    Some(at) => {
                        let key = set.key.clone();
                        self.state.sets.insert(key, Checkpoint::at(at));
                        self.events.push_back(Event::Checkpoint);
                    }
                    None => {
                        let key = set.key.clone();
                        self.warn(None, None, None, format!("{key}: the listing has no `at`: no checkpoint, an incremental sync needs another baseline"));
                    }
                }
            }
        }
        if !matches!(self.config.mode, Mode::Incremental) {
            self.report.at = self.sets.iter().filter_map(|s| s.at).min();
        }
        self.report.complete = self.report.problems == 0 && !self.sets.iter().any(|s| s.failed);
        if self.config.mode == Mode::Audit {
            self.report.in_sync = Some(
                self.report.complete
                    && self.report.changed + self.report.missing + self.report.extra == 0,
            );
        }
        self.done = true;
        self.events.push_back(Event::Done(self.report.clone()));
    }
}

/// Changes read in one batch at most (their documents are read whole, then collapsed).
const BATCH: usize = 200_000;

fn raw(entry: &Entry, bitstream: Option<(RequestId, usize)>) -> Raw {
    Raw {
        uri: entry.loc.clone(),
        change: entry.change(),
        datetime: entry.datetime(),
        lastmod: entry.lastmod,
        md: entry.md.clone(),
        mirrors: mirrors(entry),
        bitstream,
    }
}

/// The `duplicate` links of an entry, in `pri` order (section 7.1).
fn mirrors(entry: &Entry) -> Vec<Uri> {
    let mut links: Vec<_> = entry.links_with(&Relation::Duplicate);
    links.sort_by_key(|l| l.priority());
    links.into_iter().map(|l| l.href.clone()).collect()
}
