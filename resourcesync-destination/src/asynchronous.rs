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
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use resourcesync_client::{Client, Event, Misuse, Request, RequestId};
use tokio::sync::{Notify, mpsc, oneshot};

use crate::IdHash;
use crate::destination::Destination;
use crate::directory::DirectoryDestination;
use crate::gate::Gate;
use crate::inventory::DiskInventory;
use crate::options::SyncOptions;
use crate::run::{Finished, Observer, Run, StopToken, SyncError};
use crate::synced::Synced;

mod exchange;
mod http_client;

use exchange::exchange;
pub use exchange::{Keep, Msg, PIECE, fetch, wait};
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
    // Refused before DIR is opened: a run that cannot start makes nothing there.
    options.check()?;
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
    let mut cancels: HashMap<RequestId, oneshot::Sender<()>, IdHash> = HashMap::default();
    /// Cancels the requests the client cancels, then hands the event on.
    struct Watch<'a> {
        cancels: &'a mut HashMap<RequestId, oneshot::Sender<()>, IdHash>,
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
    cancels: &mut HashMap<RequestId, oneshot::Sender<()>, IdHash>,
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
            // On the heap: the exchange's state is some 7 KB, and the futures around it
            // (the select with the cancel, the panic's catch, the await) each moved it
            // whole, five copies a request (callgrind: 60,000 memcpy calls from here for
            // 10,000 files; perf: memmove 4 % of a sync of small files, the largest
            // user-space symbol). Boxed, they move a pointer.
            let exchange = Box::pin(async {
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
            });
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

/// Sleeps until `at`, or forever when there is no timeout.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::caught;

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
}
