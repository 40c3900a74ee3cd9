//! The state machine: [`Client`], its state, and the input that drives it to its end.
//!
//! One impl of [`Client`] is split by concept across the modules below; this one holds
//! the struct, its documentation, the accessors and polls, and the end of a run.

mod baseline;
mod changes;
pub use changes::PackageManifest;
mod discover;
mod incremental;
mod moving;
mod navigation;
mod reading;
mod transport;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use http::StatusCode;
use resourcesync_model::{
    Capability, Change as Changed, DocumentKind, Md, Measure, Measured, Uri, W3cDateTime,
};
use resourcesync_xml::PushReader;
use xxhash_rust::xxh3::xxh3_128;

use crate::hash::{IdHash, SourceHash};

use crate::config::{Config, Mode};
use crate::discovery;
use crate::event::{ChangeId, Decision, Event, Problem, ProblemKind, Progress, Report, Warning};
use crate::inventory::Inventory;
use crate::local_path::PathSet;
use crate::misuse::Misuse;
use crate::request::RequestId;
use crate::state::{Checkpoint, Refetch, State, StreamPosition};

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
///    confirmed with [`applied`](Client::applied) (which records it in the inventory: one
///    call) or [`failed`](Client::failed); [`Event::Package`] (open the kept package, with
///    `resourcesync-package`, and hand its manifest over with
///    [`handle_package`](Client::handle_package), as a
///    [`PackageManifest::new`](crate::PackageManifest::new) of the package's manifest,
///    findings and skipped entries); [`Event::Cancel`] (abort that
///    request); [`Event::Checkpoint`] (save [`state`](Client::state)). Then go back to 1:
///    an input may have made room for new requests.
/// 4. When nothing is in flight, wait until [`poll_timeout`](Client::poll_timeout) and
///    call [`handle_timeout`](Client::handle_timeout); do the same when a request has
///    been quiet for longer than that.
///
/// Requests, changes and packages are named by `Copy` ids ([`RequestId`], [`ChangeId`]).
/// An input that breaks this order (a body before its response head, an input after a
/// request's end, a change confirmed twice or before it was instructed, an id of another
/// client) is refused with a [`Misuse`] and changes nothing: not the state, the
/// inventory, the events or the requests. What a driver still delivers for a request the
/// client ended ([`Event::Cancel`], an error status) is accepted and ignored until that
/// request's end or failure.
///
/// Time is the driver's: every input that may start or move a timer takes `now`, and
/// the client never reads a clock.
///
/// # What it guarantees
///
/// - Every URI it asks for passed the [`Policy`](crate::policy::Policy), and so did every
///   redirect; every path it names came from the [`PathMapper`](crate::local_path::PathMapper).
/// - A body is stored only after its length and every listed md5 and sha-256 matched.
/// - The inventory changes only when a change is confirmed as applied, and then in the
///   same call: what a store or an extraction wrote is recorded, a deletion forgotten.
/// - The checkpoint moves only past changes confirmed as applied, in stream order; a
///   change is not decided before every earlier change to the same resource in the
///   documents read together is settled (they collapse into the last).
/// - Deletions in a baseline happen only after the whole listing was read without
///   failure, and never more than [`Config::max_deletes`].
/// - A Source that moves is caught up with: in a baseline, a resource whose body is not
///   what the listing says (or that is gone) is taken as the Change Lists since the
///   listing's `at` say, read in the same run, and the checkpoint is where they end;
///   one that matches nothing listed is
///   [`ProblemKind::ChangedSinceListed`](crate::ProblemKind::ChangedSinceListed), kept in
///   [`State::refetch`] for the next run, never a failure that holds the checkpoint back
///   (see the `moving` module's source for the whole rule).
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
    /// Listings whose entries wait, unread, for `fetches` to drain ([`DECIDED_AHEAD`]),
    /// in the order they stopped.
    parked: VecDeque<Parked>,
    /// Jobs waiting for a retry.
    waiting: Vec<(Instant, Job)>,
    /// Keyed by the client's own ids, looked up several times per entry read: foldhash,
    /// not SipHash (no one else chooses these keys).
    flights: Flights,
    /// Requests the client ended (cancelled, or answered with an error status) whose
    /// driver may still deliver inputs, ignored until their end or failure. One id per
    /// cancellation whose driver aborts without a last input: few.
    closed: HashSet<RequestId, IdHash>,
    events: VecDeque<Event>,
    sets: Vec<Set>,
    /// Changes decided, not yet settled. Boxed: a baseline decides a whole Resource
    /// List before most of it is fetched, and a `Pending` is over 500 bytes, which every
    /// doubling of the table copied and faulted in again (a fifth of a 10,000-file run's
    /// page faults, perf); a box keeps the table at 16 bytes an entry.
    changes: HashMap<ChangeId, Box<Pending>, IdHash>,
    /// Unsettled bitstreams per package.
    packages: HashMap<RequestId, Unpacking, IdHash>,
    /// xxh3-128 of every URI listed (baseline, audit), for deletions and extras.
    listed: Vec<u128>,
    /// Paths written in this run, for collisions.
    paths: PathSet,
    /// Every document named in this run, with the job of the document that named it
    /// ([`DocJob::serial`]; none for a root or a set's own step): one named twice is a
    /// loop, unless by that same job read again (a retry after its body was cut, wherever
    /// a redirect took it), or an entry it repeats.
    visited: HashMap<String, Option<u64>>,
    /// The last [`DocJob::serial`] given.
    serials: u64,
    /// The latest `Date` of the Source's responses: no checkpoint is later.
    source_date: Option<W3cDateTime>,
    /// A checkpoint was held back to what the run can vouch for (said once).
    clamped: bool,
    /// Documents queued or named as candidates in this run, against
    /// [`Bounds::max_documents`](crate::Bounds::max_documents).
    documents: u64,
    /// Jobs that have no set yet (discovery, the start, a Source Description).
    root_pending: u32,
    /// A part of the Source Description was not read (it failed part-way, the policy
    /// refused a Capability List it names, or an entry is not stated a Capability List):
    /// what the lists not read hold is unknown, and the sweep, which goes over every held
    /// resource, deletes nothing (a baseline asked to delete is then not complete).
    root_unread: bool,
    /// Deletions (baseline) or extras (audit) were worked out.
    swept: bool,
    /// Next reading of the Change Lists, when following.
    follow_at: Option<Instant>,
    report: Report,
    progress: Progress,
    done: bool,
    /// Deletions decided by an incremental run, against `Config::max_deletes`.
    deletions: u64,
    /// A baseline's deletions its Change Lists name of what it holds, by xxh3-128 of
    /// the URI: made with the sweep's, all or nothing within `Config::max_deletes`,
    /// and only after the whole listing was read. Made as an incremental run makes its
    /// own (up to the limit, then stopped), some were deleted while the baseline said
    /// it deleted nothing.
    listed_deletions: HashMap<u128, Uri, SourceHash>,
    /// A dry run's: xxh3-128 of each URI it decided, and whether the decision leaves it
    /// held (a creation or an update) or not (a deletion). Nothing is stored, so the
    /// inventory does not know them: a baseline's change from before its listing's `at`
    /// that names one is not a creation the listing missed, as it is not in a run (which
    /// holds what its listing lists by then). Only that question asks it: a change after
    /// the checkpoint is compared with the inventory as before, which knows nothing of
    /// what a dry run decided (its counts there are still those of a run that had not
    /// stored it).
    dry: HashMap<u128, bool, SourceHash>,
    /// Why discovery could not reach the Source (a request that failed, not a status):
    /// said instead of "offers no Source Description".
    unreachable: Option<(Uri, ProblemKind)>,
    /// Per authority, its silence since it last answered a request (a response head or
    /// body bytes): at [`transport::SILENT_LIMIT`] resources whose requests all went
    /// unanswered (no connection, no response), or at any request left unanswered
    /// [`transport::SILENT_TIMEOUTS`] request timeouts after the first, it is taken as
    /// gone for this run (its resources; documents keep their own attempts).
    silent: HashMap<String, transport::Silence>,
    /// The authorities gone for this run, with how it showed (the last reason
    /// included): their resources still to fetch are failed without a request (a
    /// Source that stopped while 10,000 were left was asked 30,000 times, and one that
    /// stopped answering cost each its timeouts).
    gone: HashMap<String, String>,
    /// Where discovery looked so far, and what it found: named when it finds nothing.
    attempts: Vec<crate::event::Attempt>,
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
                    .map(|s| (s.pending, s.phase, s.failed, s.resource_failed))
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
    /// The well-known URI under the start's path (after the host's, which section 6.3.2
    /// and RFC 8615 put at the root: the standard's place first).
    PathWellKnown,
    /// `Sitemap:` lines of the Source's robots.txt.
    Robots,
    /// `Link` headers and `<link>` elements of the Source's home page.
    Home,
}

impl Step {
    fn next(self) -> Option<Step> {
        match self {
            Step::PathWellKnown => Some(Step::Robots),
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
    /// The job's own number, kept through its retries and redirects: what it names, it
    /// names as itself ([`Client::visited`]'s loops).
    serial: u64,
    /// The link of a list the run started at that led here, to read its whole instead
    /// (`instead_of_start`): what it leads to must be that whole (an index, a Capability
    /// List), and is followed no further so.
    via: Option<resourcesync_model::Relation>,
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
    /// When it is cancelled: a while after its last input, and never later than `limit`.
    deadline: Instant,
    /// When it started, plus the total time a request may take.
    limit: Instant,
    status: Option<StatusCode>,
    body: Body,
}

enum Body {
    /// Bytes kept for discovery (robots.txt, HTML), and the `Link` headers.
    Discovery(Vec<u8>, Vec<String>),
    Document(Box<DocFlight>),
    Fixity(Measure),
    /// A body the caller hashes itself ([`Client::handle_progress`],
    /// [`Client::handle_digests`]): the bytes it said arrived so far.
    Digested(u64),
}

/// A listing whose entries wait for the fetches decided before them
/// ([`DECIDED_AHEAD`]).
struct Parked {
    id: RequestId,
    /// The listing's flight once its body ended: out of `flights` (no longer in flight,
    /// no timer, no place among the requests in flight) until its last entry is read.
    /// `None` while its body still arrives, its flight in `flights`.
    ended: Option<Flight>,
}

/// The most resource fetches a listing's entries are decided ahead of the requests made
/// for them. Past it the rest of the listing waits, unread (its bytes held, a fifth of
/// what its entries take once decided), and is read on once half are requested (or, one
/// still arriving, as its next piece comes while fewer than this wait):
/// a Resource List of 50,000 entries would otherwise hold 50,000 decisions, half a
/// kilobyte or more each, until they are fetched, and a sync of 10,000 small files spent
/// more time in the page faults of that memory than in deciding.
const DECIDED_AHEAD: usize = 1024;

/// The flights by request: `Client::flights`.
type Flights = HashMap<RequestId, Flight, IdHash>;

/// Document `id`'s reading and its job, if `id` is a document in flight. A function of
/// the table, not a method: the caller goes on using the client's other fields.
fn document(flights: &Flights, id: RequestId) -> Option<(&DocFlight, &Job)> {
    match flights.get(&id)? {
        Flight {
            body: Body::Document(doc),
            job,
            ..
        } => Some((doc, job)),
        _ => None,
    }
}

/// [`document`], to change its reading.
fn document_mut(flights: &mut Flights, id: RequestId) -> Option<(&mut DocFlight, &Job)> {
    match flights.get_mut(&id)? {
        Flight {
            body: Body::Document(doc),
            job,
            ..
        } => Some((doc, job)),
        _ => None,
    }
}

struct DocFlight {
    /// The document, read as its body arrives: memory per document in flight is bounded
    /// by its largest entry, not by the document (but for `held`).
    feed: PushReader,
    /// The pieces of the body that came while it was parked, or after such pieces, not
    /// yet fed to `feed`: kept as they came (a piece under 16 KiB extended by the next),
    /// so that a listing's bytes are held once (a reader's buffer would grow by
    /// doublings, copying them each time), and fed one at a time as its entries are
    /// read on.
    held: VecDeque<Vec<u8>>,
    /// The body ended while pieces were held: `feed` is finished once they are fed.
    ended_held: bool,
    /// Bytes ever held, at most a document's limit
    /// ([`Limits::max_bytes`](resourcesync_xml::Limits::max_bytes)): past it the listing
    /// fails at once, with the reader's own error for it
    /// ([`PushReader::too_large`](resourcesync_xml::PushReader::too_large)).
    held_bytes: u64,
    /// Set once the head was read.
    head: Option<Head>,
    entries: u64,
    /// Entries the reader skipped (no `<loc>` it could read), refused and counted.
    skipped: u64,
    /// Why entries not yet counted were skipped: entry, rule, message.
    loc_findings: Vec<(u64, resourcesync_model::Rule, String)>,
    warnings: usize,
}

/// What a document's head decided.
struct Head {
    kind: DocumentKind,
    set: Option<usize>,
    at: Option<W3cDateTime>,
    /// The document's own `until`.
    until: Option<W3cDateTime>,
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
    /// An entry of its listing, or of a baseline's Change Lists, was refused without a
    /// URI: no deletions follow (it may name a resource held, or have created one the
    /// listing missed; a baseline asked to delete is then not complete), though the
    /// checkpoint may move.
    unread: bool,
    /// A baseline's resource failed (listed, named by the Change Lists since the
    /// listing, fetched once more, or a deletion), and nothing else of the set: no new
    /// checkpoint (what it leaves to fetch again is recorded), and the run is not
    /// complete, but the listing was read whole, so the Change Lists since it are read to
    /// their end and the sweep goes ahead. The failure may be what a deletion clears: a
    /// held file `x` where the Source's `x/y` now goes, which no run would store while
    /// no run deleted `x`.
    resource_failed: bool,
    /// A baseline's Change Lists since its listing's `at` were given up (a gap, a
    /// refusal, two where an index was due): not read again in this run.
    changes_given_up: bool,
    /// A baseline's listing is older than the set's checkpoint (a run since its `at`
    /// stored what it may not list), and no Change List read says what was created
    /// since: no deletions follow, and a run asked to delete is not complete; the
    /// checkpoint may move. (With the listing newer than
    /// the checkpoint, all that is held was stored before its `at`, and the sweep
    /// stands on the listing, as without Change Lists.)
    unreconciled: bool,
    /// A baseline's changes (with deletions asked for) before its listing's `at`, which
    /// the checkpoint covers, and that it did not take as missed (creations and updates
    /// of resources held, deletions of any), per resource the last by datetime (by the
    /// order written among those without one): its datetime, and whether it left the
    /// resource in place. What the listing does not list and such a change left in
    /// place, the listing missed (stamped late): the sweep keeps it.
    reflected: HashMap<u128, (Option<W3cDateTime>, bool), SourceHash>,
    phase: Phase,
    stream: Option<Stream>,
    /// Changes of the set decided and not yet settled: a baseline reads the Change Lists
    /// only once its listing's changes are all settled.
    unsettled: u64,
    /// Resources whose fetched bodies matched nothing listed for them so far (a Source
    /// that moved since its listing), by URI: a later change the Change Lists list
    /// explains one (it is then taken as that change says); the rest are fetched once
    /// more once every list is read. An incremental run starts with the state's
    /// [`State::refetch`].
    deferred: HashMap<Uri, Refetch>,
    /// The deferred resources were fetched once more.
    retried: bool,
    /// Fetched once more and still matching nothing listed: the next run's to fetch again
    /// ([`State::refetch`]).
    refetch: Vec<Refetch>,
    /// Stores the caller declined (a conflict: [`Client::declined`]), by URI, as last
    /// decided: the next run's to fetch again ([`State::refetch`]), so that it meets the
    /// conflict again until the user resolves it. A later change this run reads for one
    /// takes its place (a deletion takes it out; an update decided again and declined
    /// again puts what it lists).
    conflicted: HashMap<Uri, Refetch>,
    /// A baseline's resources that failed, as last decided: the next run's to fetch
    /// again ([`State::refetch`]; the baseline's checkpoint stays where it was). A later
    /// change this run reads for one takes its place, as for [`Set::conflicted`].
    unfetched: HashMap<Uri, Refetch>,
    /// An audit's: what the Change Lists since the listing's `at` say each resource they
    /// name is now (`None`: deleted), judged against the inventory once they are read.
    since: HashMap<Uri, Option<Refetch>>,
    /// xxh3-128 of the URIs a baseline's listing lists that are not held for another
    /// reason than the Source's motion (refused, a conflict, failed): not creations it
    /// missed.
    declined: HashSet<u128, SourceHash>,
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
    /// Documents of a capability above named after its first (where the standard
    /// groups them in an index).
    more: Vec<(Capability, Uri)>,
}

impl Offered {
    /// A second Change List, Change Dump or Change List Archive is named: the order of
    /// the changes is not stated.
    fn more_changes(&self) -> bool {
        self.more.iter().any(|(c, _)| {
            matches!(
                c,
                Capability::ChangeList | Capability::ChangeDump | Capability::ChangeListArchive
            )
        })
    }
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
    /// The hashes of the candidates' URIs: an index of many Change Lists is checked for
    /// repeats in constant time per entry, not by a scan of every candidate.
    named: HashSet<u128, SourceHash>,
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
    /// Where the change documents applied so far are stated to end: the checkpoint at
    /// first, `None` past an open list (no `until`).
    covered: Option<W3cDateTime>,
    /// The `from` of the Change List Index (or Change Dump Index) the stream started at.
    index_from: Option<W3cDateTime>,
    /// Changes of the batch being applied, by position.
    issued: Vec<(StreamPosition, ChangeId)>,
    failed_at: Option<StreamPosition>,
    /// The last position of the batch being applied.
    batch_end: Option<StreamPosition>,
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
    /// The entry is refused (this says why), counted where it stands in the stream.
    refused: Option<Box<crate::event::EntryRefusal>>,
    /// Its `uri` is the entry's (a refused entry without one has its document's).
    known: bool,
    uri: Uri,
    change: Option<Changed>,
    /// Its datetime; for a refused entry whose URI is not known (its datetime was not
    /// read either), a bound: the latest its change can be in a list in chronological
    /// order (the next entry's datetime, or, after the last, its list's `until`). It
    /// takes its place after the entry before it, and the checkpoint covers it only where
    /// it covers that bound too; without a bound, or with one earlier than the place the
    /// stream reached (a list out of order there), never; nor in a baseline or an audit,
    /// whose listing may have missed what it created. Without it, the checkpoint covering
    /// the entry before it, an entry that could not be read passed as applied. A refused
    /// entry whose URI is known has its own datetime, and its place is its own.
    datetime: Option<W3cDateTime>,
    lastmod: Option<W3cDateTime>,
    md: Option<Md>,
    mirrors: Vec<Uri>,
    /// For a change from a Change Dump: its package and bitstream.
    bitstream: Option<(RequestId, usize)>,
}

struct Pending {
    change: Decision,
    set: usize,
    package: Option<RequestId>,
    /// An [`Event::Store`], [`Event::Extract`] or [`Event::Delete`] named it: the caller
    /// may confirm it.
    instructed: bool,
    /// What a fetch verified, once [`Event::Store`] said to store it: what the inventory
    /// records when the caller confirms.
    digests: Option<Measured>,
    /// Where the change came from: what a body that matches nothing listed means.
    origin: Origin,
}

/// Where a change came from, which says what a fetched body that is not what was listed
/// (a fixity mismatch, a 404 or 410) means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// A baseline's: the Source may have moved since its listing. The resource is
    /// deferred ([`Set::deferred`]) until the Change Lists since the listing's `at` are
    /// read, not failed: a failure would keep the baseline from any checkpoint, and every
    /// later run from going on.
    Listed,
    /// An incremental run's Change List entry: a failure, and the checkpoint stays before
    /// it (the next run reads the Change Lists again, a later change included).
    Changed,
    /// A deferred resource fetched once more, after every list (in an incremental run,
    /// one an earlier run kept: it moved, or its path held a conflict): a body that
    /// still matches nothing is [`ProblemKind::ChangedSinceListed`], kept for the next
    /// run.
    Refetch,
    /// A creation before the listing's `at` that the listing does not hold (a listing
    /// stamped later than what it holds): gone (404, 410) it is what the listing says,
    /// and nothing happens; another body is deferred as a listing's would be.
    Missed,
}

struct Unpacking {
    /// The package's URI: what its manifest's findings are about.
    uri: Uri,
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
    // The `http` crate takes UTF-8 in a path as it is, which no server is bound to read
    // as the Source meant: an IRI is requested percent-encoded, as the URL standard (and
    // a browser) requests it.
    let direct = uri
        .is_ascii()
        .then(|| http::Uri::try_from(uri.as_str()).ok());
    direct.flatten().or_else(|| {
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
        let file_system = config.paths.file_system();
        let mut client = Client {
            config,
            inventory,
            state,
            next_id: 0,
            docs: VecDeque::new(),
            fetches: VecDeque::new(),
            parked: VecDeque::new(),
            waiting: Vec::new(),
            flights: HashMap::default(),
            closed: HashSet::default(),
            events: VecDeque::new(),
            sets: Vec::new(),
            changes: HashMap::default(),
            packages: HashMap::default(),
            listed: Vec::new(),
            paths: PathSet::for_file_system(file_system),
            visited: HashMap::new(),
            serials: 0,
            documents: 0,
            source_date: None,
            clamped: false,
            root_pending: 0,
            root_unread: false,
            swept: false,
            follow_at: None,
            report: Report::default(),
            deletions: 0,
            listed_deletions: HashMap::default(),
            dry: HashMap::default(),
            unreachable: None,
            silent: HashMap::new(),
            gone: HashMap::new(),
            attempts: Vec::new(),
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
                Ok(uri) => {
                    let then = match discovery::path_well_known_uri(&start) {
                        Some(under) if under != uri => Step::PathWellKnown,
                        _ => Step::Robots,
                    };
                    self.push_root_doc(uri, Role::Any, Some(then), true, None)
                }
                Err(e) => {
                    self.events
                        .push_back(problem(Some(&start), None, ProblemKind::WellKnown(e)));
                    self.report.problems += 1;
                }
            }
        } else {
            self.push_root_doc(start, Role::Any, None, false, None);
        }
        self.advance(None);
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

    /// The inventory: what the Destination holds, with every change confirmed so far
    /// recorded.
    pub fn inventory(&self) -> &I {
        &self.inventory
    }

    /// The inventory and the state, at the end of the run: the client recorded in the
    /// inventory every change confirmed with [`applied`](Client::applied), so both are
    /// ready to save for the next run.
    pub fn into_parts(self) -> (State, I) {
        (self.state, self.inventory)
    }

    /// What the run did so far, for a caller that stops it before [`Event::Done`] (an
    /// interrupted run): `complete` is false until the run is done.
    pub fn report(&self) -> Report {
        self.report.clone()
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

    fn capability_list_uri(&self, set: usize) -> Option<Uri> {
        self.sets[set].key.parse().ok()
    }

    fn push_problem(&mut self, uri: Option<&Uri>, id: Option<RequestId>, kind: ProblemKind) {
        match kind {
            ProblemKind::Refused(_)
            | ProblemKind::Path(_)
            | ProblemKind::Collision(_)
            | ProblemKind::EntryRefused(_) => self.report.refused += 1,
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

    /// `checkpoint`, or one no later than what the run can vouch for: the caller's clock
    /// ([`Config::clock`]) and the Source's `Date`, whichever is earlier, give or take
    /// [`CLOCK_SLACK`]. A Source that states a time past that (a publisher's clock slip)
    /// would otherwise make a checkpoint that skips every change stamped before that
    /// time; held back, the next run reads the changes after it again, or (their lists
    /// starting later: a gap) takes a baseline. Said once.
    pub(super) fn vouched(&mut self, checkpoint: Checkpoint) -> Checkpoint {
        let bound = match (self.config.clock, self.source_date) {
            (Some(a), Some(b)) => Some(if b < a { b } else { a }),
            (a, b) => a.or(b),
        };
        let Some(bound) = bound else {
            return checkpoint;
        };
        // Clocks disagree by seconds or minutes (and `Date` has whole seconds): a time
        // within the slack is the Source's own, taken as it is. Held back below the
        // listing's `at`, a checkpoint would be a gap before the Change Lists that start
        // there (a baseline each run), which only a time no clock explains is worth.
        let at: std::time::SystemTime = bound.to_utc().into();
        let slack = at.checked_add(CLOCK_SLACK).map(W3cDateTime::from);
        if slack.is_none_or(|slack| checkpoint.datetime <= slack) {
            return checkpoint;
        }
        if !self.clamped {
            self.clamped = true;
            self.warn(
                None,
                None,
                None,
                format!(
                    "the Source states {}, later than this run can vouch for ({bound}: the \
                     Source's Date, this machine's clock): the checkpoint is held at {bound}",
                    checkpoint.datetime
                ),
            );
        }
        Checkpoint::at(bound)
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

    /// An input for `id`, which is in no flight: accepted (and ignored) when the client
    /// ended the request and its driver may still deliver, refused otherwise.
    fn not_in_flight(&self, id: RequestId) -> Result<(), Misuse> {
        match self.closed.contains(&id) {
            true => Ok(()),
            false => Err(self.over(id)),
        }
    }

    /// What an input for `id`, neither in flight nor ended by the client, is.
    fn over(&self, id: RequestId) -> Misuse {
        // Requests and changes are numbered from one counter: an id above it is no
        // request of this client.
        match id.0 > self.next_id {
            true => Misuse::UnknownRequest(id),
            false => Misuse::RequestOver(id),
        }
    }

    /// Tells the caller to abort request `id`; what it still delivers is ignored.
    fn cancel(&mut self, id: RequestId) {
        self.events.push_back(Event::Cancel { request: id });
        self.closed.insert(id);
    }

    /// Moves the run on after an input: streams, deletions, the end. `now` is the input's;
    /// none only from [`Client::new`], where a run never waits to follow (it has a
    /// request to make, or a problem that ends it).
    fn advance(&mut self, now: Option<Instant>) {
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
                Phase::Reading
                    if self.config.mode == Mode::Incremental || self.sets[set].stream.is_some() =>
                {
                    self.advance_stream(set)
                }
                Phase::Reading
                    if matches!(self.config.mode, Mode::Baseline { .. } | Mode::Audit) =>
                {
                    self.reconcile(set)
                }
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
            if let (0, Some(now)) = (self.report.problems, now) {
                if self.follow_at.is_none() {
                    self.follow_at = Some(later(now, every));
                }
                return;
            }
        }
        self.finish();
    }

    fn finish(&mut self) {
        if !self.config.dry_run && matches!(self.config.mode, Mode::Baseline { .. }) {
            for s in 0..self.sets.len() {
                let set = &self.sets[s];
                if set.failed {
                    continue;
                }
                if set.resource_failed {
                    // The checkpoint stays where it was; the next run fetches again
                    // what failed (and what moved, or met a conflict), even an
                    // incremental one whose Change Lists do not name it.
                    if self.record_refetch(s) {
                        self.events.push_back(Event::Checkpoint);
                    }
                    continue;
                }
                match set.at {
                    Some(at) => {
                        let key = set.key.clone();
                        // Where the Change Lists read to reconcile a moving Source end,
                        // or the listing's `at`; no later than the run can vouch for.
                        let checkpoint = set
                            .stream
                            .as_ref()
                            .map_or(Checkpoint::at(at), |s| s.checkpoint);
                        let checkpoint = self.vouched(checkpoint);
                        self.state.sets.insert(key, checkpoint);
                        self.record_refetch(s);
                        self.events.push_back(Event::Checkpoint);
                    }
                    None => {
                        let key = set.key.clone();
                        self.warn(None, None, None, format!("{key}: the listing has no `at`: no checkpoint, an incremental sync needs another baseline"));
                    }
                }
            }
        }
        if !self.config.dry_run && self.config.mode == Mode::Incremental {
            for s in 0..self.sets.len() {
                // Only a set whose stream started read the state's resources to fetch
                // again: the others' stay as they were.
                if self.sets[s].stream.is_some() && self.record_refetch(s) {
                    self.events.push_back(Event::Checkpoint);
                }
            }
        }
        if !matches!(self.config.mode, Mode::Incremental) {
            self.report.at = self.sets.iter().filter_map(|s| s.at).min();
        }
        // A baseline asked to delete, whose deletions were withheld (a part of what the
        // Source lists not read: an entry of its Source Description or of a listing
        // ignored, or the Change Lists that say what was created since the listing), did
        // not do all it set out to: DIR may hold what the Source deleted. (A set that
        // failed is not complete in any case.)
        let withheld = self.config.delete
            && matches!(self.config.mode, Mode::Baseline { .. })
            && (self.root_unread || self.sets.iter().any(|s| s.unread || s.unreconciled));
        self.report.complete = self.report.problems == 0
            && !withheld
            && !self.sets.iter().any(|s| s.failed || s.resource_failed);
        if self.config.mode == Mode::Audit {
            // What a set whose Change Lists failed left unjudged is judged by its listing.
            for s in 0..self.sets.len() {
                self.audit_moved(s);
            }
            self.report.in_sync = Some(
                self.report.complete
                    && self.report.changed + self.report.missing + self.report.extra == 0,
            );
        }
        self.done = true;
        self.events.push_back(Event::Done(self.report.clone()));
    }
}

impl<I: Inventory> Client<I> {
    /// Puts what set `s` leaves to fetch again into the state (or takes its entry out
    /// when nothing is left); whether the state changed.
    fn record_refetch(&mut self, s: usize) -> bool {
        let set = &mut self.sets[s];
        // One entry a resource, the last one put: a conflict over what matched nothing.
        let mut left: BTreeMap<Uri, Refetch> = BTreeMap::new();
        let all = std::mem::take(&mut set.refetch).into_iter();
        let all = all.chain(set.deferred.drain().map(|(_, r)| r));
        let all = all.chain(set.unfetched.drain().map(|(_, r)| r));
        for again in all.chain(set.conflicted.drain().map(|(_, r)| r)) {
            left.insert(again.uri.clone(), again);
        }
        let left: Vec<Refetch> = left.into_values().collect();
        let key = set.key.clone();
        let before = self.state.refetch.get(&key);
        if before.map_or(left.is_empty(), |b| *b == left) {
            return false;
        }
        match left.is_empty() {
            true => self.state.refetch.remove(&key),
            false => self.state.refetch.insert(key, left),
        };
        true
    }
}

/// How far past the caller's clock or the Source's `Date` a stated time is still taken
/// as it is ([`Client::vouched`]): clocks that disagree by minutes are common, a clock
/// slip that stamps a list hours or years ahead is what is held back.
pub(crate) const CLOCK_SLACK: Duration = Duration::from_secs(3600);

/// `now` plus `wait`, saturating: the durations come from the caller's [`Config`] (a
/// `Duration::MAX` meaning "no limit" included), and `Instant + Duration` panics past the
/// clock's range. A century past `now` is as late as any deadline needs to be.
pub(crate) fn later(now: Instant, wait: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);
    now.checked_add(wait.min(CENTURY))
        .or_else(|| now.checked_add(Duration::from_secs(86_400)))
        .unwrap_or(now)
}
