//! An async driver over hyper and tokio (feature `reqwest`, after the crate that carries a
//! request the environment sends to a proxy): many requests in flight, made by worker
//! tasks (one for each request not yet ended, each keeping its connections to plain-HTTP
//! hosts; https, a proxy's URLs and a harvest's gated runs share a pool), streaming each
//! response to the task
//! that owns the [`Run`] over a channel ([`Msg`]; two in a run, one for the documents'
//! messages, which the run's task takes one at a time beside the rest; [`fetch`] makes
//! one request so); a
//! resource's or a package's body is hashed on the task that receives it and kept in its
//! temporary file, so that hashing runs on every core.
//! Requests go through [`Http`]: host names are resolved and checked against the
//! client's policy before a connection is made ([`CheckedResolver`]).
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use resourcesync_destination::asynchronous::{self, AsyncStop};
//! use resourcesync_destination::SyncOptions;
//!
//! let options = SyncOptions::new("https://example.com/".parse()?, "mirror");
//! // Trip `stop` from a signal handler to end the run early (it saves what it did).
//! let stop = AsyncStop::new();
//! let synced = asynchronous::sync(&options, &stop, &mut ()).await?;
//! println!("{synced}");
//! # Ok(())
//! # }
//! ```

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderMap, StatusCode};
use resourcesync_client::{Client, Event, Misuse, Request, RequestId};
use resourcesync_model::uri_path::SegmentRules;
use resourcesync_model::{Algorithms, Measure, Measured};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::destination::Destination;
use crate::directory::{Bodies, DirectoryDestination};
use crate::gate::Gate;
use crate::inventory::DiskInventory;
use crate::options::SyncOptions;
use crate::run::{Finished, Observer, Run, StopToken, SyncError};
use crate::synced::Synced;

mod http_client;

use http_client::Kept;
pub use http_client::{CheckedResolver, Http};

/// A [`StopToken`] with a waker: [`sync`] waits on the [`Notify`] beside its other
/// inputs, so a stop is seen at once, not at the next response.
#[derive(Clone, Debug, Default)]
pub struct AsyncStop {
    token: StopToken,
    notify: Arc<Notify>,
}

impl AsyncStop {
    /// A stop nobody asked for yet.
    pub fn new() -> AsyncStop {
        AsyncStop::default()
    }

    /// Asks the run to stop, and wakes it; true if it had been asked already.
    pub fn stop(&self) -> bool {
        let again = self.token.stop();
        self.notify.notify_one();
        again
    }

    /// The token the run checks.
    pub fn token(&self) -> &StopToken {
        &self.token
    }

    /// Until a stop is asked for.
    pub(crate) async fn wait(&self) {
        if !self.token.is_stopped() {
            self.notify.notified().await;
        }
    }
}

/// Awaits `run` spawned as a task of the current tokio runtime rather than polled where
/// it is awaited: a sync's fetch tasks, on the workers, then wake it where it runs, most
/// often without a thread to unpark (10,000 files of 1 KiB from nginx, alternated by
/// hand: 0.58 s against 0.645 s). Await it inside `Runtime::block_on`. A panic in `run`
/// goes on here, as it would have where it was awaited; the error is the task cancelled
/// (only a runtime shutting down does that).
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = tokio::runtime::Runtime::new()?;
/// let two = runtime.block_on(resourcesync_destination::asynchronous::spawned(async { 1 + 1 }))?;
/// assert_eq!(two, 2);
/// # Ok(())
/// # }
/// ```
pub async fn spawned<T: Send + 'static>(
    run: impl Future<Output = T> + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    match tokio::spawn(run).await {
        Ok(done) => Ok(done),
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(cancelled) => Err(cancelled),
        },
    }
}

/// Runs a sync on the current tokio runtime until the client is done or `stop` is
/// asked for; a baseline follows in the same call when the Change Lists cannot carry the
/// directory forward. `observer` sees every event, the progress and the run's notices.
/// What it came to, or why it could not start or go on.
///
/// On a multi-thread runtime, await it in a task (`tokio::spawn`) rather than in
/// `Runtime::block_on` itself: the requests run as tasks on the workers, and each reply
/// then wakes the run where it runs instead of unparking the thread that blocks (about
/// 8 % less time on 10,000 small files; the `resourcesync` command does so).
pub async fn sync(
    options: &SyncOptions,
    stop: &AsyncStop,
    observer: &mut (dyn Observer + Send),
) -> Result<Synced, SyncError> {
    sync_with_gate(options, &Gate::unlimited(), stop, observer).await
}

/// [`sync`], each request waiting at `gate` before it is sent: a place among the requests
/// in flight of every run that shares the gate, one of its authority's, and its turn by
/// the authority's pace (a harvest of many Sources shares one gate among their runs).
pub async fn sync_with_gate(
    options: &SyncOptions,
    gate: &Gate,
    stop: &AsyncStop,
    observer: &mut (dyn Observer + Send),
) -> Result<Synced, SyncError> {
    let open = |options: &SyncOptions| Ok(DirectoryDestination::open_for(options)?);
    sync_into(options, open, gate, stop, observer).await
}

/// [`sync_with_gate`] into a destination of the caller's (a bucket's prefix,
/// `objects::ObjectDestination`), which `open` opens (and locks) for each run's options:
/// a baseline that follows a run is a run of its own.
pub async fn sync_into<D: Destination + Send>(
    options: &SyncOptions,
    mut open: impl FnMut(&SyncOptions) -> Result<D, SyncError> + Send,
    gate: &Gate,
    stop: &AsyncStop,
    observer: &mut (dyn Observer + Send),
) -> Result<Synced, SyncError> {
    let started = Instant::now();
    let mut options = options.clone();
    loop {
        let dest = open(&options)?;
        match one_run(dest, &options, gate, stop, observer).await? {
            Finished::Done(mut synced) => {
                synced.seconds = started.elapsed().as_secs_f64();
                return Ok(synced);
            }
            Finished::Baseline(baseline) => options = baseline,
        }
    }
}

/// One [`Run`], to its [`finish`](Run::finish).
async fn one_run<D: Destination + Send>(
    dest: D,
    options: &SyncOptions,
    gate: &Gate,
    stop: &AsyncStop,
    observer: &mut (dyn Observer + Send),
) -> Result<Finished, SyncError> {
    // A Source named by a host name is on whatever address kinds that name resolves to
    // now (a Source on localhost is on loopback): those are allowed, as an address written
    // in the URI would be, and every later resolution is held to them.
    let mut kinds = Vec::new();
    if let Ok(url) = options.source.to_url()
        && let Some(url::Host::Domain(host)) = url.host()
        && let Ok(found) = tokio::net::lookup_host((host, 0)).await
    {
        kinds.extend(found.filter_map(|a| resourcesync_client::policy::SpecialAddress::of(a.ip())));
    }
    // A gate holds requests back: their timers start when they pass it (`Msg::Started`).
    let gated = !gate.is_unlimited();
    let configure = |config: resourcesync_client::Config| {
        let mut policy = config.policy.clone();
        for kind in kinds {
            policy = policy.allow_address_kind(kind);
        }
        config.with_policy(policy).with_started_by_driver(gated)
    };
    let mut run: Run<DiskInventory, D> =
        Run::start_on(dest, options, stop.token().clone(), configure, |dest| {
            Ok(dest.open_inventory()?)
        })?;
    // Work the destination finishes after `settle` (an upload) wakes this loop.
    let settled = Arc::new(Notify::new());
    let wake = settled.clone();
    run.destination_mut()
        .on_settled(Arc::new(move || wake.notify_one()));
    // Connections kept open to a host: no more than the gate lets be in use.
    let http = Http::new(
        Some(run.client().config().policy.clone()),
        gate.per_authority().unwrap_or(usize::MAX),
    );
    // Two channels to the run's task, each request's messages through one of them: a
    // request's whose body its worker does not keep (a document: a listing, robots.txt,
    // a page of discovery), and the rest (the bodies the workers keep, their progress and
    // digests, and their failures). The run's loop takes one document's message at a
    // time and up to TAKEN_AT_ONCE of the rest, so that the responses to the requests a
    // listing made are not held up behind it.
    let (tx, mut rx) = mpsc::channel::<Msg>(256);
    let (documents, mut documents_rx) = mpsc::channel::<Msg>(DOCUMENTS_WAITING);
    // The requests are sent by workers, each taking the next from the queue when it is
    // done with its last: no task is spawned a request, and a worker keeps its
    // connection to the Source (`Kept`) rather than checking one out of a pool a
    // request. A run behind a gate shares the pool, whose idle connections to a host the
    // gate's count bounds. Workers are started as the requests not yet ended outnumber
    // the workers alive, up to the requests allowed in flight (a run allowed a hundred
    // thousand at once but given a few starts a few), and kept for the run.
    let (queue, jobs) = mpsc::unbounded_channel::<Job>();
    let worker = Worker {
        jobs: Arc::new(tokio::sync::Mutex::new(jobs)),
        alive: Arc::new(AtomicUsize::new(0)),
        http,
        tx,
        mirrors: options.mirrors.clone().into(),
        gate: gated.then(|| gate.clone()),
        documents,
    };
    let most = run.client().config().bounds.max_in_flight.max(1);
    // Aborted however this function ends.
    let mut workers = Workers(Vec::new());
    // A request's worker drops it when this is sent (the client cancelled it, or ended
    // it while its body still came); taken out when the request ends.
    let mut cancels: HashMap<RequestId, oneshot::Sender<()>> = HashMap::new();
    /// Cancels the requests the client cancels, then hands the event on.
    struct Watch<'a> {
        cancels: &'a mut HashMap<RequestId, oneshot::Sender<()>>,
        observer: &'a mut (dyn Observer + Send),
    }
    impl Observer for Watch<'_> {
        fn event(&mut self, event: &Event) {
            if let Event::Cancel { request } = event
                && let Some(cancel) = self.cancels.remove(request)
            {
                let _ = cancel.send(());
            }
            self.observer.event(event);
        }
        fn progress(&mut self, progress: &resourcesync_client::Progress) {
            self.observer.progress(progress);
        }
        fn notice(&mut self, notice: &crate::run::Notice) {
            self.observer.notice(notice);
        }
    }
    // An error ends the loop with the workers stopped, as its end does.
    let ran: Result<(), SyncError> = async {
        // A gate that holds nothing back is skipped: a run alone sends at once.
        while !run.is_over() {
            while let Some(request) = run.poll_request(Instant::now()) {
                let id = request.id;
                // Only a gate that holds requests back needs it (a string made per request).
                let authority = gated
                    .then(|| crate::gate::authority_of(request.http.uri()))
                    .flatten();
                let keep = match run.client().algorithms(id) {
                    Some(algorithms) if run.destination().keeps_body(&request) => Some(Keep {
                        bodies: run.destination().bodies(),
                        limit: run.client().body_limit(id),
                        algorithms,
                        in_memory: run.destination().keeps_in_memory(&request),
                    }),
                    _ => None,
                };
                let (cancel, cancelled) = oneshot::channel();
                cancels.insert(id, cancel);
                // A worker for each request not yet ended (`cancels` holds them); one that
                // died (a panic its request's catch could not hold) is not counted.
                if worker.alive.load(Ordering::Acquire) < most.min(cancels.len()) {
                    worker.alive.fetch_add(1, Ordering::AcqRel);
                    workers.0.push(tokio::spawn(worker.clone().work()));
                }
                let job = Job {
                    request,
                    keep,
                    authority,
                    cancelled,
                };
                // The queue's receiver lives as long as `worker`, which is this function's.
                let _ = queue.send(job);
            }
            let mut watch = Watch {
                cancels: &mut cancels,
                observer: &mut *observer,
            };
            if run.settle(&mut watch)? || run.is_over() {
                continue;
            }
            let timeout = run.client().poll_timeout();
            let wake = run.poll_timeout();
            tokio::select! {
                message = rx.recv() => if let Some(message) = message {
                    // The messages already waiting are taken with it, a bounded number
                    // (the timeouts, a stop and a due save keep their turn): a select
                    // a message, with its timers registered and dropped, cost more
                    // than the message's own work on a run of small files.
                    let waiting = std::iter::from_fn(|| rx.try_recv().ok());
                    for message in std::iter::once(message).chain(waiting.take(TAKEN_AT_ONCE - 1)) {
                        take(run.client(), &mut cancels, message)?;
                    }
                },
                // One at a time: a piece of a listing may list resources, which are asked
                // for before more is parsed.
                message = documents_rx.recv() => if let Some(message) = message {
                    take(run.client(), &mut cancels, message)?;
                },
                () = sleep_until(timeout) => run.client().handle_timeout(Instant::now()),
                () = stop.wait() => {}
                () = settled.notified() => {}
                // A save that is due though nothing else happens (every request in flight
                // waiting on a slow Source): `settle` makes it.
                () = sleep_until(wake) => {}
            }
        }
        Ok(())
    }
    .await;
    // The requests in flight go with their workers (their temporary files at the next
    // open), every worker at rest before `finish` stores what was whole and verified
    // (or, after an error, before the run lets go of the destination), so that none
    // writes beside it.
    workers.stop().await;
    ran?;
    run.finish(observer)
}

/// The most bytes of a document's body in one [`Msg::Chunk`] (and of a body read from a
/// mirror's directory). The run's task parses a listing slower than a fast Source sends
/// it (tens of MB/s against hundreds), and the resources it lists are asked for between
/// two pieces: a piece of 16 KiB is some fifty entries, a fraction of a millisecond of
/// parsing, so the requests in flight are kept full while a listing is read. Pieces of a
/// chunk share its buffer (no copy).
pub const PIECE: usize = 16 * 1024;

/// The most messages of documents waiting for the run's task (the capacity of their
/// channel, apart from the rest's): 256 pieces, 4 MiB of a listing. The run's loop takes
/// one of them at a time and the responses to the requests a listing made between them,
/// whatever waits: in one channel, first come first served, a listing's pieces, sent
/// before those responses came, held them up until the whole listing was parsed, the
/// requests in flight done and none sent (10,000 files of 1 KiB: the first file placed
/// some 50 ms after the listing came, one core parsing while the other idled). So many
/// that a listing of a few MiB is read off its connection at once: its worker, and in a
/// harvest its place at the gate (a host's few), are free for the next request while it
/// is parsed (with 8, a Resource List Index's parts held every place of their host until
/// they were parsed, and no resource of it could be asked for).
const DOCUMENTS_WAITING: usize = 256;

/// The most messages the run's loop hands to its client between two looks at its
/// timeouts, its stop and its saves.
const TAKEN_AT_ONCE: usize = 16;

/// Hands `message` to `client`; a request it ended is taken off `cancels`, its worker
/// told. A misuse is this driver's bug.
fn take<I: resourcesync_client::Inventory>(
    client: &mut Client<I>,
    cancels: &mut HashMap<RequestId, oneshot::Sender<()>>,
    message: Msg,
) -> Result<(), Misuse> {
    let id = message.id();
    message.deliver(client)?;
    // Ended by the client (whole, failed, or refused at its head with its body still
    // coming, which no cancel may say): its worker is free of it.
    if !client.in_flight(id)
        && let Some(cancel) = cancels.remove(&id)
    {
        let _ = cancel.send(());
    }
    Ok(())
}

/// A run's workers, aborted when dropped.
struct Workers(Vec<tokio::task::JoinHandle<()>>);

impl Workers {
    /// Aborts the workers and waits until none runs (a worker in the middle of a
    /// poll, writing a body, ends it first).
    async fn stop(mut self) {
        let workers = std::mem::take(&mut self.0);
        for worker in &workers {
            worker.abort();
        }
        for worker in workers {
            let _ = worker.await;
        }
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        for worker in &self.0 {
            worker.abort();
        }
    }
}

/// A request for a [`Worker`] to make.
struct Job {
    request: Request,
    keep: Option<Keep>,
    /// The authority a gate holds it back by (a gated run's only).
    authority: Option<String>,
    /// Sent when the client cancels it.
    cancelled: oneshot::Receiver<()>,
}

/// What a run's workers share: the queue of requests, and what each needs to make one.
#[derive(Clone)]
struct Worker {
    jobs: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Job>>>,
    /// The workers started and not ended (each takes itself off as it ends).
    alive: Arc<AtomicUsize>,
    http: Http,
    tx: mpsc::Sender<Msg>,
    mirrors: Arc<[(String, PathBuf)]>,
    /// A gated run's gate; then the pool's connections, not the worker's own.
    gate: Option<Gate>,
    /// The channel for the messages of a request whose body is not kept by its worker
    /// (a document's), [`DOCUMENTS_WAITING`] at most waiting.
    documents: mpsc::Sender<Msg>,
}

impl Worker {
    /// Makes the queue's requests one after another until the queue closes; a request
    /// the client cancels is dropped where it is (its connection with it).
    async fn work(self) {
        /// Takes the worker off the count of those alive however it ends.
        struct Alive(Arc<AtomicUsize>);
        impl Drop for Alive {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _alive = Alive(self.alive.clone());
        let mut kept = Kept::default();
        loop {
            let job = self.jobs.lock().await.recv().await;
            let Some(Job {
                request,
                keep,
                authority,
                mut cancelled,
            }) = job
            else {
                return;
            };
            if cancelled.try_recv().is_ok() {
                // Cancelled while it waited in the queue: not sent at all.
                continue;
            }
            let id = request.id;
            // Every message of a request goes through one channel, in the order sent.
            let tx = if keep.is_none() {
                &self.documents
            } else {
                &self.tx
            };
            let exchange = async {
                let pass = match (&self.gate, authority) {
                    // Held at the gate until it may go, then started for the client.
                    (Some(gate), Some(authority)) => {
                        let pass = gate.pass(&authority).await;
                        if tx.send(Msg::Started(id)).await.is_err() {
                            return;
                        }
                        Some(pass)
                    }
                    _ => None,
                };
                let kept = self.gate.is_none().then_some(&mut kept);
                exchange(&self.http, kept, request, keep, tx, &self.mirrors).await;
                drop(pass);
            };
            let job = async {
                tokio::select! {
                    biased;
                    () = exchange => {}
                    // The sender dropped is the request done, not cancelled.
                    Ok(()) = cancelled => {}
                }
            };
            // A panic (a bug, ours or a library's) fails the request it was making, said
            // as such, rather than leaving it unanswered and the run one worker short.
            if let Err(panic) = caught(job).await {
                kept = Kept::default();
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let reason = format!("the request's worker panicked: {what}");
                let _ = tx.send(Msg::Panicked(id, reason)).await;
            }
        }
    }
}

/// `future`'s output, or the payload of a panic while it was polled.
async fn caught<T>(future: impl Future<Output = T>) -> Result<T, Box<dyn std::any::Any + Send>> {
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(done)) => std::task::Poll::Ready(Ok(done)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            // Not polled again.
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    })
    .await
}

/// What a request task tells the main task.
#[derive(Debug)]
#[non_exhaustive]
pub enum Msg {
    /// The response head.
    Head(RequestId, StatusCode, HeaderMap),
    /// A piece of the body, at most [`PIECE`] bytes.
    Chunk(RequestId, Bytes),
    /// The end of the body.
    End(RequestId),
    /// The exchange failed.
    Failed(RequestId, String),
    /// More bytes of a body the task hashes itself arrived (a resource or a package).
    Progress(RequestId, u64),
    /// The end of such a body: its length and digests.
    Digests(RequestId, Measured),
    /// A whole response at once, hashed and kept by the task: head and digests (a small
    /// resource).
    Whole(RequestId, StatusCode, HeaderMap, Measured),
    /// The request passed its [`Gate`] and is sent now.
    Started(RequestId),
    /// The task making the request panicked: a failure if the request is still in
    /// flight (the panic may have come after its last message).
    Panicked(RequestId, String),
}

impl Msg {
    /// The request it is about.
    pub fn id(&self) -> RequestId {
        match self {
            Msg::Head(id, ..)
            | Msg::Chunk(id, _)
            | Msg::End(id)
            | Msg::Failed(id, _)
            | Msg::Progress(id, _)
            | Msg::Digests(id, _)
            | Msg::Whole(id, ..)
            | Msg::Started(id)
            | Msg::Panicked(id, _) => *id,
        }
    }

    /// Hands what the request task said to the client, as the input it is. A misuse is
    /// a bug of this driver's (the client refused the input and changed nothing).
    pub fn deliver<I: resourcesync_client::Inventory>(
        self,
        client: &mut Client<I>,
    ) -> Result<(), Misuse> {
        let now = Instant::now();
        match self {
            Msg::Head(id, status, headers) => client.handle_response(id, status, &headers, now),
            Msg::Chunk(id, bytes) => client.handle_body(id, &bytes, now),
            Msg::End(id) => client.handle_end(id, now),
            Msg::Failed(id, reason) => client.handle_failure(id, reason, now),
            Msg::Progress(id, bytes) => client.handle_progress(id, bytes, now),
            Msg::Digests(id, digests) => client.handle_digests(id, digests, now),
            Msg::Whole(id, status, headers, digests) => {
                client.handle_response(id, status, &headers, now)?;
                client.handle_digests(id, digests, now)
            }
            Msg::Started(id) => client.handle_started(id, now),
            Msg::Panicked(id, reason) if client.in_flight(id) => {
                client.handle_failure(id, reason, now)
            }
            Msg::Panicked(..) => Ok(()),
        }
    }
}

/// Waits for what comes first, a request task's message or the client's next timeout, and
/// hands it to the client; a misuse is this driver's bug.
pub async fn wait<I: resourcesync_client::Inventory>(
    client: &mut Client<I>,
    rx: &mut mpsc::Receiver<Msg>,
) -> Result<(), Misuse> {
    let timeout = client.poll_timeout();
    tokio::select! {
        message = rx.recv() => if let Some(message) = message {
            message.deliver(client)?;
        },
        () = sleep_until(timeout) => client.handle_timeout(Instant::now()),
    }
    Ok(())
}

/// Sleeps until `at`, or forever when there is no timeout.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// A body a request task keeps itself: a resource's or a package's, written to its
/// temporary file and hashed as it arrives.
#[derive(Clone, Debug)]
pub struct Keep {
    /// Where it is written ([`DirectoryDestination::bodies`](crate::DirectoryDestination::bodies)).
    pub bodies: Bodies,
    /// The most bytes it may have ([`Client::body_limit`]): reading stops one past it.
    pub limit: Option<u64>,
    /// The digests computed of it ([`Client::algorithms`]).
    pub algorithms: Algorithms,
    /// Held in memory while the bodies' budget has room, rather than written to its file
    /// ([`Destination::keeps_in_memory`]).
    pub in_memory: bool,
}

/// Makes one request and streams its response to the main task; a resource or a
/// package answered with success is kept by the task instead, as `keep` says, and the
/// main task gets its progress and digests. URLs under a mirror's prefix are answered
/// from its directory.
pub async fn fetch(
    http: Http,
    request: Request,
    keep: Option<Keep>,
    tx: mpsc::Sender<Msg>,
    mirrors: Vec<(String, PathBuf)>,
) {
    exchange(&http, None, request, keep, &tx, &mirrors).await;
}

/// [`fetch`], on `kept` when given ([`Http::get_on`]), else through the pool.
async fn exchange(
    http: &Http,
    kept: Option<&mut Kept>,
    request: Request,
    keep: Option<Keep>,
    tx: &mpsc::Sender<Msg>,
    mirrors: &[(String, PathBuf)],
) {
    let id = request.id;
    // Made only to be matched against the mirrors' prefixes.
    let url = (!mirrors.is_empty()).then(|| request.http.uri().to_string());
    if let Some(url) = &url
        && let Some((prefix, dir)) = mirrors.iter().find(|(p, _)| url.starts_with(p.as_str()))
    {
        // Read beneath the mirror's directory only, through a handle on it: a URI whose
        // rest climbs out (`..`), is absolute (`//`), or meets a link that leads out is
        // not found, and nothing of such a file is read, let alone quoted in an error.
        // The rest is a URI's path: its query and fragment are not the file's, and it is
        // read as a server reads a request's path (the model's grammar for one, as
        // `serve` reads it): each segment decoded apart (`%20` for a space, UTF-8 bytes
        // for other letters), empty and `.` ones skipped; one the grammar refuses (`..`,
        // an encoded `/`, bytes not UTF-8) names no file here.
        let rest = mirrored(&url[prefix.len()..]);
        let dir = dir.clone();
        let read = tokio::task::spawn_blocking(move || {
            let rest = rest.ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))?;
            cap_std::fs::Dir::open_ambient_dir(dir, cap_std::ambient_authority())?.read(rest)
        })
        .await;
        let (status, body) = match read {
            Ok(Ok(body)) => (StatusCode::OK, body),
            // What the path names is not there, or not a file of the mirror's own.
            Ok(Err(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound
                        | std::io::ErrorKind::NotADirectory
                        | std::io::ErrorKind::IsADirectory
                        | std::io::ErrorKind::PermissionDenied
                        | std::io::ErrorKind::InvalidInput
                ) =>
            {
                (StatusCode::NOT_FOUND, Vec::new())
            }
            // The disk failed: said as what it is, not as a 404.
            Ok(Err(e)) => {
                let _ = tx.send(Msg::Failed(id, format!("mirror: {e}"))).await;
                return;
            }
            Err(e) => {
                let _ = tx.send(Msg::Failed(id, format!("mirror: {e}"))).await;
                return;
            }
        };
        let _ = tx.send(Msg::Head(id, status, HeaderMap::new())).await;
        if status.is_success() {
            if let Some(keep) = &keep
                && let Err(e) = keep.bodies.create(id).and_then(|mut f| f.write_all(&body))
            {
                let _ = tx.send(Msg::Failed(id, e.to_string())).await;
                return;
            }
            if !send_pieces(tx, id, Bytes::from(body)).await {
                return;
            }
        }
        let _ = tx.send(Msg::End(id)).await;
        return;
    }
    let got = match kept {
        Some(kept) => http.get_on(kept, request.http.uri()).await,
        None => http.get(request.http.uri()).await,
    };
    let mut response = match got {
        Ok(response) => response,
        Err(reason) => {
            let _ = tx.send(Msg::Failed(id, reason)).await;
            return;
        }
    };
    let status = response.status;
    // Taken, not cloned: reading the body needs no header of the response's.
    let headers = std::mem::take(&mut response.headers);
    let keep = match keep {
        Some(keep) if status.is_success() => keep,
        _ => {
            // A document (or an error): streamed to the client as it arrives.
            if tx.send(Msg::Head(id, status, headers)).await.is_err() || !status.is_success() {
                return;
            }
            loop {
                match response.chunk().await {
                    Ok(Some(chunk)) => {
                        if !send_pieces(tx, id, chunk).await {
                            return;
                        }
                    }
                    Ok(None) => break,
                    Err(reason) => {
                        let _ = tx.send(Msg::Failed(id, reason)).await;
                        return;
                    }
                }
            }
            let _ = tx.send(Msg::End(id)).await;
            return;
        }
    };
    // A resource or a package, kept in its temporary file and hashed here, on the task
    // that receives it: the tasks run on every core, where the client, a state machine
    // on the main task, would hash every body on one (hashing is most of the work of a
    // large body). Only the digests that check what is listed are computed
    // (`Keep::algorithms`). The client gets the progress and, at the end, the digests to
    // check (`Client::handle_digests`).
    //
    // The body's chunks (hyper's own buffers) are kept as they arrive and written
    // together with one `writev` once BATCH bytes are held, on this worker: no copy in
    // user space, no hop to tokio's blocking pool, one message to the main task per
    // batch. A write of a quarter of a MiB to the page cache takes tens of microseconds,
    // less than a hop to the blocking pool and back (whose futex wake-ups were most of
    // the system calls of a sync of small files, and which `tokio::fs` takes for every
    // chunk, with a copy). A body of at most BATCH bytes is written with one call and
    // handed over in one message. Reading stops one byte past the limit (the listed
    // length, or the cap for an unlisted one): the client fails it then.
    //
    // A body the destination takes in memory (`Keep::in_memory`) keeps its chunks while
    // the bodies' budget has room, and is handed over whole at the end
    // (`Bodies::keep`); once it does not fit, what it held goes to its file and the rest
    // follows as above.
    const BATCH: usize = 256 * 1024;
    let Keep {
        bodies,
        limit,
        algorithms,
        in_memory,
    } = keep;
    let mut measure = Measure::new(algorithms);
    let mut held: Vec<Bytes> = Vec::new();
    let mut in_memory = in_memory;
    // Bytes of the budget this body holds (given back however the task ends, aborted
    // included, unless handed over with the body), and bytes not yet told as progress.
    let mut reserved = Reserved {
        bodies: &bodies,
        bytes: 0,
    };
    let mut unreported = 0usize;
    let mut file: Option<std::fs::File> = None;
    let mut head = Some(headers);
    let fail = |reason: String| Msg::Failed(id, reason);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => break,
            Err(reason) => {
                let _ = tx.send(fail(reason)).await;
                return;
            }
        };
        measure.update(&chunk);
        let past = limit.is_some_and(|limit| measure.length() > limit);
        if in_memory {
            let more = chunk.len() as u64;
            if bodies.reserve(reserved.bytes, more) {
                reserved.bytes += more;
            } else {
                // It goes to its file from here on, with what it held.
                in_memory = false;
                reserved.release();
            }
        }
        unreported += chunk.len();
        held.push(chunk);
        if unreported < BATCH && !past {
            continue;
        }
        if !in_memory {
            let f = match &mut file {
                Some(f) => f,
                None => match bodies.create(id) {
                    Ok(f) => file.insert(f),
                    Err(e) => {
                        let _ = tx.send(fail(e.to_string())).await;
                        return;
                    }
                },
            };
            if let Err(e) = write_chunks(f, &held) {
                let _ = tx.send(fail(bodies.error(id, &e))).await;
                return;
            }
            held.clear();
        }
        if let Some(headers) = head.take()
            && tx.send(Msg::Head(id, status, headers)).await.is_err()
        {
            return;
        }
        if tx
            .send(Msg::Progress(id, std::mem::take(&mut unreported) as u64))
            .await
            .is_err()
        {
            return;
        }
        if past {
            break;
        }
    }
    let measured = measure.finish();
    // The rest of the body (all of it, for a small one) goes to the file, or the whole
    // body to the bodies in memory; the progress of the last batch is in the digests'
    // length.
    let written = match &mut file {
        Some(f) => write_chunks(f, &held),
        None if in_memory => {
            bodies.keep(id, held, std::mem::take(&mut reserved.bytes));
            Ok(())
        }
        None => bodies
            .create(id)
            .and_then(|mut f| write_chunks(&mut f, &held)),
    };
    let message = match (written, head) {
        (Err(e), _) => fail(bodies.error(id, &e)),
        (Ok(()), Some(headers)) => Msg::Whole(id, status, headers, measured),
        (Ok(()), None) => Msg::Digests(id, measured),
    };
    let _ = tx.send(message).await;
}

/// Bytes of the bodies' memory budget a receiving body holds: given back when dropped.
struct Reserved<'a> {
    bodies: &'a Bodies,
    bytes: u64,
}

impl Reserved<'_> {
    fn release(&mut self) {
        self.bodies.release(std::mem::take(&mut self.bytes));
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.release();
    }
}

/// Hands `bytes`, a document's body or part of it, to the run's loop in pieces of at most
/// [`PIECE`] bytes (each shares `bytes`' buffer: no copy); `false` once the loop is gone.
async fn send_pieces(tx: &mpsc::Sender<Msg>, id: RequestId, mut bytes: Bytes) -> bool {
    while !bytes.is_empty() {
        let piece = bytes.split_to(bytes.len().min(PIECE));
        if tx.send(Msg::Chunk(id, piece)).await.is_err() {
            return false;
        }
    }
    true
}

/// Writes `chunks` to `file` whole, with as few `writev` calls as the kernel allows.
fn write_chunks<B: AsRef<[u8]>>(file: &mut std::fs::File, chunks: &[B]) -> std::io::Result<()> {
    let mut slices: Vec<std::io::IoSlice<'_>> = chunks
        .iter()
        .map(|c| std::io::IoSlice::new(c.as_ref()))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match file.write_vectored(rest) {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => std::io::IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The file a mirror holds for the rest of a URL after the mirror's prefix: its path read
/// as a server reads a request's (the model's [`SegmentRules::REQUEST`]), its query and
/// fragment left out; `None` where the grammar names no file (`..`, an encoded `/`, a
/// control character, bytes not UTF-8).
fn mirrored(rest: &str) -> Option<PathBuf> {
    let path = rest.split(['?', '#']).next().unwrap_or("");
    SegmentRules::REQUEST
        .path(path)
        .ok()
        .map(|names| names.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::{Msg, caught, mirrored};

    #[test]
    fn a_panic_after_a_request_s_last_message_is_no_misuse() {
        let config = resourcesync_client::Config::new(
            "http://example.com/".parse().unwrap(),
            resourcesync_client::Mode::Baseline { prefer_dump: false },
        )
        .unwrap();
        let mut client = resourcesync_client::Client::new(
            config,
            resourcesync_client::State::default(),
            resourcesync_client::MemoryInventory::default(),
        );
        let now = std::time::Instant::now();
        let id = client.poll_request(now).unwrap().id;
        // In flight: a failure, said.
        Msg::Panicked(id, "a bug".into())
            .deliver(&mut client)
            .unwrap();
        assert!(!client.in_flight(id));
        // Over (its end, or that failure, delivered): ignored, where a second failure
        // would be a misuse that ends the run.
        Msg::Panicked(id, "a bug".into())
            .deliver(&mut client)
            .unwrap();
        assert!(
            Msg::Failed(id, "again".into())
                .deliver(&mut client)
                .is_err()
        );
    }

    #[tokio::test]
    async fn a_panic_in_a_worker_s_request_is_caught_as_its_failure() {
        let panicked = caught(async {
            tokio::task::yield_now().await;
            panic!("a bug");
        })
        .await
        .unwrap_err();
        assert_eq!(panicked.downcast_ref::<&str>(), Some(&"a bug"));
        // What does not panic is its output, after as many polls as it takes.
        let done = caught(async {
            tokio::task::yield_now().await;
            7
        })
        .await;
        assert_eq!(done.ok(), Some(7));
    }

    #[test]
    fn a_mirror_reads_a_url_s_path_as_a_server_reads_a_request_s() {
        let path = |rest: &str| mirrored(rest).map(|p| p.to_string_lossy().into_owned());
        assert_eq!(path("a/./b//c.xml?x=1#f").as_deref(), Some("a/b/c.xml"));
        assert_eq!(
            path("caf%C3%A9%20au%20lait").as_deref(),
            Some("café au lait")
        );
        for refused in [
            "../x",
            "a/../../x",
            "a%2Fb",
            "a%2fb",
            "%2E%2E/x",
            "a%00b",
            "%FF",
        ] {
            assert_eq!(path(refused), None, "{refused}");
        }
    }
}

#[cfg(all(test, feature = "object-store"))]
mod memory_tests {

    use resourcesync_model::Algorithms;
    use resourcesync_testkit::served::Served;

    use super::{Keep, Msg, fetch};
    use crate::directory::test_support::first_request;
    use crate::directory::{Bodies, temp_name};

    /// `fetch` of the first request a client makes of `served` (its Source Description),
    /// kept by `bodies`, and every message it sent.
    async fn fetched(
        served: &Served,
        bodies: &Bodies,
    ) -> (resourcesync_client::RequestId, Vec<Msg>) {
        let request = first_request(&served.base);
        let id = request.id;
        let keep = Keep {
            bodies: bodies.clone(),
            limit: None,
            algorithms: Algorithms::SHA256,
            in_memory: true,
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel(64);
        let http = super::Http::new(None, 1);
        fetch(http, request, Some(keep), tx, Vec::new()).await;
        let mut messages = Vec::new();
        while let Ok(message) = rx.try_recv() {
            messages.push(message);
        }
        (id, messages)
    }

    fn bodies(budget: u64) -> (tempfile::TempDir, Bodies) {
        crate::directory::test_support::bodies(budget, budget)
    }

    #[test]
    fn a_body_that_fits_stays_in_memory_and_one_that_does_not_goes_to_its_file() {
        let served = Served::start(|s| {
            s.put("r/a.txt", b"a");
            s.tick(10);
        });
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        // Room for it: in memory, no file.
        let (dir, room) = bodies(1 << 20);
        let (id, messages) = runtime.block_on(fetched(&served, &room));
        assert!(messages.iter().any(|m| matches!(m, Msg::Whole(..))));
        let body = room.take(id).expect("held in memory");
        let text = String::from_utf8(body.chunks().concat()).unwrap();
        assert!(text.contains("sitemaps.org"), "{text}");
        assert!(!dir.path().join(temp_name(id)).exists());
        // Its bytes back in the budget once dropped: the whole budget reserved again.
        assert!(!room.reserve(0, 1 << 20));
        drop(body);
        assert!(room.reserve(0, 1 << 20));
        room.release(1 << 20);
        // No room (10 bytes): its file, whole, and nothing held.
        let (dir, none) = bodies(10);
        let (id, _) = runtime.block_on(fetched(&served, &none));
        assert!(none.take(id).is_none());
        let written = std::fs::read_to_string(dir.path().join(temp_name(id))).unwrap();
        assert_eq!(written, text);
        assert!(
            none.reserve(0, 10),
            "what it reserved before it spilled, given back"
        );
    }
}
