#![allow(unreachable_pub)]
//! A driver that runs the client in process against the simulated Source of
//! `resourcesync-testkit` (every document written by `resourcesync-xml` and
//! `resourcesync-package`): every response goes through the client's inputs in chunks of
//! varying size, and faults are injected per request.

use std::collections::{BTreeMap, HashMap};
use std::io::{Cursor, Read};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, StatusCode};
use resourcesync_client::{
    Bounds, Client, Config, Event, Held, MemoryInventory, Mode, PackageManifest, Report, RequestId,
    State,
};
use resourcesync_model::Fixity;
use resourcesync_package::Package;

pub use resourcesync_testkit::source::*;

/// What the Source does wrong to one request.
#[derive(Clone, Debug)]
pub enum Fault {
    Status(u16),
    /// The body is cut after this many bytes, and the exchange fails.
    Truncate(usize),
    /// One byte of the body is changed.
    Corrupt,
    /// A redirect to this location.
    Redirect(String),
    /// No answer at all: the request hangs until the client gives up on it.
    Hang,
    /// No connection: the request fails at once, unanswered.
    Refused,
    /// The body comes in this many pieces, each this long after the one before (the
    /// driver's clock moves on, and the client's timeouts due meanwhile fire): a large
    /// body over a slow link.
    Trickle {
        pieces: usize,
        gap: Duration,
    },
}

pub type FaultFn = Box<dyn FnMut(&str, u32) -> Option<Fault>>;
/// Whether the Destination declines a store at this path.
pub type DeclineFn = Box<dyn FnMut(&str) -> bool>;

/// The Destination: files by local path, and the inventory.
#[derive(Debug, Default)]
pub struct Destination {
    pub files: BTreeMap<String, Vec<u8>>,
    pub inventory: MemoryInventory,
    pub state: State,
}

impl Destination {
    /// Whether the Destination holds exactly the Source's resources.
    pub fn equals(&self, source: &Source) -> bool {
        let expected: BTreeMap<String, Vec<u8>> = source
            .resources
            .iter()
            .map(|(p, (b, _))| (p.clone(), b.clone()))
            .collect();
        self.files == expected
    }

    pub fn difference(&self, source: &Source) -> String {
        let mut out = String::new();
        for (p, (b, _)) in &source.resources {
            match self.files.get(p) {
                None => out += &format!("missing {p}\n"),
                Some(f) if f != b => out += &format!("differs {p}\n"),
                _ => {}
            }
        }
        for p in self.files.keys() {
            if !source.resources.contains_key(p) {
                out += &format!("extra {p}\n");
            }
        }
        out
    }
}

/// How the driver behaves.
pub struct Drive {
    /// Bytes per body chunk, cycled.
    pub chunks: Vec<usize>,
    /// Faults by URI and attempt (how many times that URI was asked for before).
    pub fault: Option<FaultFn>,
    /// Stop (a crash) after this many confirmations; the state saved at the last
    /// `Checkpoint` event is what survives.
    pub crash_after: Option<u64>,
    /// Answer the requests in flight in this rotation (0: oldest first).
    pub rotate: usize,
    /// Return when nothing is in flight and the client only waits for a timeout.
    pub stop_when_idle: bool,
    /// The paths whose stores the Destination declines (a file of the user's there: a
    /// conflict, `Client::declined`).
    pub decline: Option<DeclineFn>,
    /// The paths whose deletions fail (`Client::failed`: a file system that refused).
    pub fail_delete: Option<DeclineFn>,
}

impl Default for Drive {
    fn default() -> Drive {
        Drive {
            chunks: vec![7, 1, 4096, 13],
            fault: None,
            crash_after: None,
            rotate: 0,
            stop_when_idle: false,
            decline: None,
            fail_delete: None,
        }
    }
}

impl Drive {
    /// The default drive, `fault` saying each exchange's fault.
    pub fn faulty(fault: impl FnMut(&str, u32) -> Option<Fault> + 'static) -> Drive {
        Drive {
            fault: Some(Box::new(fault)),
            ..Drive::default()
        }
    }
}

/// A configuration's bounds as `set` changes them (a `configure` for [`sync`]).
pub fn bounded(set: impl FnOnce(&mut Bounds)) -> impl FnOnce(Config) -> Config {
    |c| {
        let mut bounds = c.bounds;
        set(&mut bounds);
        c.with_bounds(bounds)
    }
}

/// What a run gave.
#[derive(Debug)]
pub struct Run {
    pub report: Option<Report>,
    pub events: Vec<Event>,
    pub requests: Vec<String>,
    pub crashed: bool,
    /// A file written and not confirmed when the run crashed, as the destination's
    /// journal has it (`DirectoryDestination` journals what it places before it renames
    /// it into place, and the next open records it).
    pub placed: Option<(resourcesync_model::Uri, Held)>,
    /// The driver's clock from the start to Done: the 10 ms each response takes, and
    /// every timeout waited for.
    pub elapsed: Duration,
}

impl Run {
    pub fn report(&self) -> &Report {
        self.report.as_ref().expect("the run ended with Done")
    }

    pub fn problems(&self) -> Vec<String> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Problem(p) => Some(format!("{p}")),
                _ => None,
            })
            .collect()
    }
}

/// A configuration that deletes what the Source deletes, without limit: a Destination
/// that mirrors the Source.
pub fn deleting(config: Config) -> Config {
    config.with_delete(u64::MAX)
}

/// Runs one sync of `dest` from `source` in `mode` from `start` (a path under the base,
/// "" for discovery), with `configure` applied to the configuration.
pub fn sync(
    source: &Source,
    dest: &mut Destination,
    mode: Mode,
    start: &str,
    configure: impl FnOnce(Config) -> Config,
    drive: Drive,
) -> Run {
    let config = configure(Config::new(source.uri(start), mode).unwrap());
    let inventory = std::mem::take(&mut dest.inventory);
    let mut client = Client::new(config, dest.state.clone(), inventory);
    let run = drive_client(&mut client, source, dest, drive);
    let (state, inventory) = client.into_parts();
    dest.inventory = inventory;
    if let Some((uri, held)) = run.placed.clone() {
        dest.inventory.insert(uri, held);
    }
    if !run.crashed {
        dest.state = state;
    }
    run
}

/// A response being delivered.
struct Exchange {
    keep: bool,
    body: Vec<u8>,
    at: usize,
    cut: bool,
    /// A trickled body's piece size, gap, and when its next piece arrives.
    trickle: Option<(usize, Duration, Instant)>,
}

/// Drives `client` until it waits only for a timeout (or is done).
pub fn drive_client_until_idle(
    client: &mut Client<MemoryInventory>,
    source: &Source,
    dest: &mut Destination,
) -> Run {
    drive_client(
        client,
        source,
        dest,
        Drive {
            stop_when_idle: true,
            ..Drive::default()
        },
    )
}

/// Drives `client` against `source` until Done (or a crash).
pub fn drive_client(
    client: &mut Client<MemoryInventory>,
    source: &Source,
    dest: &mut Destination,
    drive: Drive,
) -> Run {
    drive_with(client, &mut |uri| source.respond(uri), dest, drive)
}

/// Runs one sync of `dest` from `source`, which moves while it is read: the moves it
/// holds run as their paths are served ([`Source::serve`]). Otherwise as [`sync`].
pub fn sync_moving(
    source: &mut Source,
    dest: &mut Destination,
    mode: Mode,
    configure: impl FnOnce(Config) -> Config,
) -> Run {
    sync_moving_with(source, dest, mode, configure, Drive::default())
}

/// [`sync_moving`], driven as `drive` says.
pub fn sync_moving_with(
    source: &mut Source,
    dest: &mut Destination,
    mode: Mode,
    configure: impl FnOnce(Config) -> Config,
    drive: Drive,
) -> Run {
    let config = configure(Config::new(source.uri(""), mode).unwrap());
    let inventory = std::mem::take(&mut dest.inventory);
    let mut client = Client::new(config, dest.state.clone(), inventory);
    let run = drive_with(&mut client, &mut |uri| source.serve(uri), dest, drive);
    let (state, inventory) = client.into_parts();
    dest.inventory = inventory;
    dest.state = state;
    run
}

/// Drives `client` against what `respond` answers until Done (or a crash).
fn drive_with(
    client: &mut Client<MemoryInventory>,
    respond: &mut dyn FnMut(&str) -> Response,
    dest: &mut Destination,
    mut drive: Drive,
) -> Run {
    let origin = Instant::now();
    let mut now = origin;
    let mut in_flight: Vec<(RequestId, String)> = Vec::new();
    let mut hung: Vec<RequestId> = Vec::new();
    let mut kept: HashMap<RequestId, Vec<u8>> = HashMap::new();
    let mut packages: HashMap<RequestId, Package<Cursor<Vec<u8>>>> = HashMap::new();
    let mut asked: HashMap<String, u32> = HashMap::new();
    let mut run = Run {
        report: None,
        events: Vec::new(),
        requests: Vec::new(),
        crashed: false,
        placed: None,
        elapsed: Duration::ZERO,
    };
    let mut confirmations = 0u64;
    let mut chunk_i = 0usize;
    let mut exchanges: HashMap<RequestId, Exchange> = HashMap::new();
    for _step in 0..2_000_000 {
        // Events first: they may confirm changes and so free the client to go on, and a
        // Cancel ends a request.
        let mut progressed = false;
        while let Some(event) = client.poll_event() {
            progressed = true;
            // The change to confirm, and what the inventory records for it.
            let mut confirm = None;
            let mut placed = None;
            let mut declined = None;
            let mut failed = None;
            match &event {
                Event::Store(store)
                    if drive
                        .decline
                        .as_mut()
                        .is_some_and(|decline| decline(store.change.path.as_str())) =>
                {
                    kept.remove(&store.request);
                    declined = Some(store.change.id);
                }
                Event::Store(store) => {
                    let body = kept.remove(&store.request).expect("a stored body was kept");
                    assert_eq!(body.len() as u64, store.digests.length);
                    dest.files
                        .insert(store.change.path.as_str().to_owned(), body);
                    // The client records the digests it verified.
                    confirm = Some((store.change.id, None));
                    let held = Held::of(&store.digests, store.change.lastmod);
                    placed = Some((store.change.uri.clone(), held));
                }
                Event::Delete(change)
                    if drive
                        .fail_delete
                        .as_mut()
                        .is_some_and(|fail| fail(change.path.as_str())) =>
                {
                    failed = Some(change.id);
                }
                Event::Delete(change) => {
                    dest.files.remove(change.path.as_str());
                    confirm = Some((change.id, None));
                }
                Event::Extract(extract) => {
                    let package = packages
                        .get_mut(&extract.package)
                        .expect("the package is open");
                    let mut bytes = Vec::new();
                    package
                        .bitstream(extract.bitstream)
                        .unwrap()
                        .read_to_end(&mut bytes)
                        .unwrap();
                    let mut f = Fixity::new();
                    f.update(&bytes);
                    let digests = f.finish();
                    dest.files
                        .insert(extract.change.path.as_str().to_owned(), bytes);
                    let held = Held::of(&digests.into(), extract.change.lastmod);
                    confirm = Some((extract.change.id, Some(held)));
                    placed = Some((extract.change.uri.clone(), held));
                }
                Event::Package { request: id } => {
                    let body = kept.remove(id).expect("a package body was kept");
                    let package = Package::new(Cursor::new(body)).unwrap();
                    let manifest = PackageManifest::new(
                        package.manifest(),
                        package.findings(),
                        package.skipped(),
                    );
                    client.handle_package(*id, manifest, now).unwrap();
                    packages.insert(*id, package);
                }
                Event::Release { request: id } => {
                    packages.remove(id);
                    kept.remove(id);
                }
                Event::Discard { request, .. } => {
                    kept.remove(request);
                }
                Event::Cancel { request: id } => {
                    in_flight.retain(|(r, _)| r != id);
                    exchanges.remove(id);
                    hung.retain(|r| r != id);
                    kept.remove(id);
                }
                Event::Checkpoint => dest.state = client.state().clone(),
                Event::Done(report) => {
                    run.report = Some(report.clone());
                    run.elapsed = now - origin;
                }
                _ => {}
            }
            run.events.push(event);
            if let Some(change) = declined {
                client
                    .declined(change, "a file of the user's", now)
                    .unwrap();
            }
            if let Some(change) = failed {
                client.failed(change, "permission denied", now).unwrap();
            }
            if let Some((change, held)) = confirm {
                confirmations += 1;
                if drive.crash_after.is_some_and(|n| confirmations > n) {
                    run.crashed = true;
                    run.placed = placed;
                    return run;
                }
                client.applied(change, held, now).unwrap();
            }
        }
        if run.report.is_some() {
            assert!(client.poll_request(now).is_none(), "no request after Done");
            return run;
        }
        // After the events: a Cancel among them ended a request.
        while let Some(request) = client.poll_request(now) {
            // A request answered with an error status is over for the client, though its
            // body is still delivered (and ignored).
            let live = in_flight
                .iter()
                .filter(|(id, _)| exchanges.get(id).is_none_or(|e| e.keep))
                .count();
            assert!(
                live + hung.len() < client.config().bounds.max_in_flight,
                "more requests in flight than the bound"
            );
            let uri = request.http.uri().to_string();
            assert_eq!(request.http.method(), http::Method::GET);
            run.requests.push(uri.clone());
            in_flight.push((request.id, uri));
        }
        // A request the client fails without making (its authority gone) may end the run
        // inside poll_request: its events, Done among them, wait in the queue.
        if progressed || client.is_done() {
            continue;
        }
        if in_flight.is_empty() {
            if drive.stop_when_idle {
                return run;
            }
            match client.poll_timeout() {
                Some(at) => {
                    now = now.max(at);
                    client.handle_timeout(now);
                    continue;
                }
                None => panic!("the client waits for nothing and is not done: {client:?}"),
            }
        }
        // One step of one exchange: its head, or its next chunk, or its end; so that the
        // bodies of several requests arrive interleaved.
        let mut pick = drive.rotate % in_flight.len();
        drive.rotate = drive.rotate.wrapping_add(drive.rotate.max(1));
        // A trickled body whose next piece is not due yet waits while another exchange
        // can go on: the clock moves only when none can.
        let ready = |id: &RequestId| {
            exchanges.get(id).is_none_or(|e| {
                e.trickle
                    .is_none_or(|(_, _, due)| due <= now || e.at >= e.body.len())
            })
        };
        if !ready(&in_flight[pick].0) {
            if let Some(other) = in_flight.iter().position(|(id, _)| ready(id)) {
                pick = other;
            }
        }
        let id = in_flight[pick].0;
        let uri = in_flight[pick].1.clone();
        let exchange = match exchanges.remove(&id) {
            Some(exchange) => exchange,
            None => {
                let attempt = {
                    let n = asked.entry(uri.clone()).or_default();
                    *n += 1;
                    *n - 1
                };
                let fault = drive.fault.as_mut().and_then(|f| f(&uri, attempt));
                let mut response = respond(&uri);
                let mut truncate = None;
                let mut trickle = None;
                match fault {
                    None => {}
                    Some(Fault::Status(s)) => {
                        response = Response {
                            status: s,
                            headers: vec![],
                            body: b"fault".to_vec(),
                        }
                    }
                    Some(Fault::Truncate(n)) => truncate = Some(n),
                    Some(Fault::Trickle { pieces, gap }) => {
                        trickle = Some((response.body.len().div_ceil(pieces.max(1)), gap));
                    }
                    Some(Fault::Corrupt) => {
                        if let Some(b) = response.body.last_mut() {
                            *b ^= 0x20;
                        }
                    }
                    Some(Fault::Redirect(location)) => {
                        response = Response {
                            status: 302,
                            headers: vec![("location".into(), location)],
                            body: vec![],
                        }
                    }
                    Some(Fault::Refused) => {
                        in_flight.remove(pick);
                        client
                            .handle_failure(id, "connection refused", now)
                            .unwrap();
                        continue;
                    }
                    Some(Fault::Hang) => {
                        in_flight.remove(pick);
                        hung.push(id);
                        if in_flight.is_empty() {
                            if let Some(at) = client.poll_timeout() {
                                now = now.max(at);
                                client.handle_timeout(now);
                            }
                        }
                        continue;
                    }
                }
                let mut headers = HeaderMap::new();
                for (k, v) in &response.headers {
                    headers.append(
                        http::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        HeaderValue::from_str(v).unwrap(),
                    );
                }
                now += Duration::from_millis(10);
                let status = StatusCode::from_u16(response.status).unwrap();
                client.handle_response(id, status, &headers, now).unwrap();
                if let Some(n) = truncate {
                    response.body.truncate(n);
                }
                exchanges.insert(
                    id,
                    Exchange {
                        keep: status.is_success(),
                        body: response.body,
                        at: 0,
                        cut: truncate.is_some(),
                        trickle: trickle.map(|(piece, gap)| (piece, gap, now + gap)),
                    },
                );
                continue;
            }
        };
        let Exchange {
            keep,
            body,
            at,
            cut,
            mut trickle,
        } = exchange;
        if let Some((_, _, due)) = trickle
            && due > now
            && at < body.len()
        {
            // No exchange can go on: the clock moves to the next piece of any trickled
            // body, or to a timeout of the client's due no later, which fires first, one
            // a step (their events are taken in between).
            let next = exchanges
                .values()
                .filter(|e| e.at < e.body.len())
                .filter_map(|e| e.trickle.map(|(_, _, due)| due))
                .fold(due, Instant::min);
            match client.poll_timeout() {
                Some(timeout) if timeout <= next => {
                    now = now.max(timeout);
                    client.handle_timeout(now);
                }
                _ => now = next,
            }
            let exchange = Exchange {
                keep,
                body,
                at,
                cut,
                trickle,
            };
            exchanges.insert(id, exchange);
            continue;
        }
        if at < body.len() {
            let n = match &mut trickle {
                Some((piece, gap, due)) => {
                    *due = now + *gap;
                    *piece
                }
                None => drive.chunks[chunk_i % drive.chunks.len()].max(1),
            };
            chunk_i += 1;
            let end = (at + n).min(body.len());
            if keep {
                kept.entry(id)
                    .or_default()
                    .extend_from_slice(&body[at..end]);
            }
            client.handle_body(id, &body[at..end], now).unwrap();
            exchanges.insert(
                id,
                Exchange {
                    keep,
                    body,
                    at: end,
                    cut,
                    trickle,
                },
            );
            continue;
        }
        in_flight.remove(pick);
        if cut {
            kept.remove(&id);
            client.handle_failure(id, "connection closed", now).unwrap();
        } else {
            client.handle_end(id, now).unwrap();
        }
    }
    panic!("the run did not end in 2,000,000 steps");
}
