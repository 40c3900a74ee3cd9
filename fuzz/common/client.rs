//! A script of inputs for the client state machine, read from fuzz bytes, and the driver
//! that plays it. Shared by the `client` fuzz target and by
//! `resourcesync-client/tests/client/fuzz_corpus.rs`, which replays the committed corpus
//! (and the seeds [`seeds`] writes) under `cargo test`.
//!
//! Both include the simulated Source of `resourcesync-client/tests/client/sim.rs` as
//! `crate::sim`: the documents answered are the ones it publishes (Source Description,
//! Capability List, Resource List Index and parts, Resource Dump and its package, Change
//! List Index or Archive and parts, Change Dump and its packages), whole, cut, mutated,
//! or replaced by arbitrary bytes, spec examples or another of its documents.
//!
//! The script: a header (which Source, mode, dry run, deletions, shard, bounds, the
//! checkpoint, the inventory), then operations, one opcode byte each: answer an in-flight
//! request (status, `Location`, `Link`, body, chunking, end, failure or left open), fail
//! one, let time pass, follow a redirect, hand over a package (real, another, or none),
//! confirm or fail an announced change, and replay any of these on ids the client no
//! longer knows. When the bytes run out the driver answers honestly until the run ends.
//!
//! What it asserts, after every input: no panic; the requests in flight never exceed
//! `Bounds::max_in_flight`; no request after `Event::Done`; the work the client holds
//! (requests queued, changes unsettled) stays under `max_queued + max_in_flight + 8 +
//! one per 16 body bytes the Source sent`: it grows only with what the Source listed,
//! never by itself (retries, redirects, timeouts replace a job, they add none); a run
//! that waits for nothing is done; and, once answered honestly, the run ends within
//! [`HONEST_STEPS`] steps (unless it follows).

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, StatusCode};
use resourcesync_client::{
    Bounds, ChangeId, Checkpoint, Client, Config, Event, Held, MemoryInventory, Mode, Report,
    RequestId, Shard, State,
};
use resourcesync_model::Fixity;
use resourcesync_package::{Package, PackageLimits};

use crate::sim::{Publish, Response, Source, time};

/// Steps of the honest phase after the script: a run must end within them.
pub const HONEST_STEPS: usize = 20_000;

/// Documents of the standard's examples, answered as bodies.
const EXAMPLES: &[&[u8]] = &[
    include_bytes!("../../spec/examples/ex01-resourcelist.xml"),
    include_bytes!("../../spec/examples/ex03-changelist.xml"),
    include_bytes!("../../spec/examples/archives-ex2.1-capabilitylist.xml"),
    include_bytes!("../../spec/examples/archives-ex5.1-changelist-archive.xml"),
];

/// The Sources scripts pick from, published once per process.
pub fn sources() -> &'static [Source] {
    static SOURCES: OnceLock<Vec<Source>> = OnceLock::new();
    SOURCES.get_or_init(|| {
        let publishes = [
            // Index of three Resource Lists, a Resource Dump, a Change List Index.
            Publish {
                list_part: 4,
                change_part: 3,
                resource_dump: true,
                ..Publish::default()
            },
            // A Change List Archive, changes with lastmod only.
            Publish {
                list_part: 100,
                change_part: 2,
                archive: true,
                datetimes: false,
                ..Publish::default()
            },
            // Change Dumps.
            Publish {
                list_part: 5,
                change_part: 3,
                change_dump: true,
                ..Publish::default()
            },
            // Early changes forgotten: a gap for a Destination behind.
            Publish {
                list_part: 100,
                change_part: 4,
                forget_before: 15,
                ..Publish::default()
            },
        ];
        publishes
            .into_iter()
            .map(|p| {
                let mut s = Source::new();
                s.publish = p;
                for i in 0..10 {
                    s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
                }
                s.tick(10);
                for i in 0..4 {
                    s.put(
                        &format!("r/{i}.txt"),
                        format!("resource {i} again").as_bytes(),
                    );
                    s.tick(3);
                }
                s.delete("r/9.txt");
                s.put("r/new.txt", b"new");
                // Two URIs that share a file on a case-insensitive file system (not in
                // a package: its writer refuses them).
                if !s.publish.resource_dump && !s.publish.change_dump {
                    s.put("r/Case.txt", b"upper");
                    s.put("r/case.txt", b"lower");
                }
                s.tick(10);
                s.publish();
                s
            })
            .collect()
    })
}

/// Bytes of a script, read as they are needed; zero once they run out.
#[derive(Debug)]
pub struct Script<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Script<'a> {
    /// A script over `data`.
    pub fn new(data: &'a [u8]) -> Script<'a> {
        Script { data, at: 0 }
    }

    fn done(&self) -> bool {
        self.at >= self.data.len()
    }

    fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    fn below(&mut self, n: usize) -> usize {
        self.byte() as usize % n.max(1)
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let start = self.at.min(self.data.len());
        let end = (start + n).min(self.data.len());
        self.at += n;
        &self.data[start..end]
    }
}

/// A script's operations, as [`encode`] writes them for the seeds.
#[derive(Clone, Debug)]
pub enum Op {
    /// Answer the in-flight request at this place honestly, in chunks of this size.
    Honest(u8, u8),
    /// Answer with the Source's response, one byte changed.
    Mutated(u8, u16, u8),
    /// Answer with a status (one of the table's) and a `Location` from the table.
    Status(u8, u16, u8),
    /// Answer with arbitrary bytes.
    Body(u8, Vec<u8>),
    /// The exchange fails.
    Fail(u8),
    /// Time passes: this many seconds.
    Wait(u8),
    /// Confirm the announced change at this place (or fail it, with `false`).
    Confirm(u8, bool),
}

/// The bytes of a script: a header and its operations.
pub fn encode(header: [u8; 10], ops: &[Op]) -> Vec<u8> {
    let mut out = header.to_vec();
    for op in ops {
        match op {
            // Answers: opcode, pick, kind, what the kind reads, `Link`, chunk, end.
            Op::Honest(pick, chunk) => out.extend([0, *pick, 0, 0, *chunk, 0]),
            Op::Mutated(pick, at, with) => {
                out.extend([0, *pick, 1]);
                out.extend(at.to_le_bytes());
                out.extend([*with, 0, 4, 0]);
            }
            Op::Status(pick, status, location) => {
                out.extend([0, *pick, 2]);
                let i = STATUSES.iter().position(|s| s == status).unwrap_or(0) as u16;
                out.extend(i.to_le_bytes());
                out.extend([(*location << 1) | 1, 0, 0, 0]);
            }
            Op::Body(pick, bytes) => {
                out.extend([0, *pick, 3, bytes.len().min(255) as u8]);
                out.extend(&bytes[..bytes.len().min(255)]);
                out.extend([0, 1, 0]);
            }
            Op::Fail(pick) => out.extend([1, *pick]),
            Op::Wait(s) => out.extend([2, *s]),
            Op::Confirm(pick, ok) => out.extend([3, *pick, u8::from(!*ok)]),
        }
    }
    out
}

/// The header of a script: which Source (0..4), mode (0: baseline, 1: baseline preferring
/// the dump, 2: incremental, 3: audit), dry run, delete, start (0: discovery, 1: the
/// Capability List, 2: the Resource List, 3: the Change List), checkpoint (seconds),
/// inventory (0: empty, 1: in step with the Source, 2: one in three differs, plus
/// extras), and max_in_flight (1..=4); no shard, 5 queued, depth 4, 3 attempts.
#[allow(clippy::too_many_arguments)]
pub fn header(
    source: u8,
    mode: u8,
    dry: bool,
    delete: bool,
    start: u8,
    checkpoint: u8,
    inventory: u8,
    in_flight: u8,
) -> [u8; 10] {
    let delete = if delete { 0x0F } else { 0 };
    [
        source,
        mode,
        u8::from(dry),
        delete,
        start,
        checkpoint,
        inventory,
        in_flight - 1,
        0x60,
        2,
    ]
}

/// A few seed scripts: honest runs of every mode against every Source, and some with
/// faults, named.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    let honest: Vec<Op> = (0..40)
        .map(|i| Op::Honest(0, [7, 200, 1, 64][i % 4]))
        .collect();
    let mut out = Vec::new();
    for source in 0..4u8 {
        for (mode, name) in [
            (0u8, "baseline"),
            (1, "dump"),
            (2, "incremental"),
            (3, "audit"),
        ] {
            let start = if mode == 2 && source != 2 { 3 } else { 0 };
            out.push((
                format!("seed-{name}-source{source}"),
                encode(header(source, mode, false, true, start, 12, 2, 4), &honest),
            ));
        }
    }
    out.push((
        "seed-baseline-dry-from-list".into(),
        encode(header(0, 0, true, true, 2, 0, 2, 2), &honest),
    ));
    out.push((
        "seed-incremental-from-capabilitylist".into(),
        encode(header(1, 2, false, false, 1, 5, 1, 3), &honest),
    ));
    let faults = vec![
        Op::Status(0, 503, 0),
        Op::Wait(5),
        Op::Honest(0, 9),
        Op::Status(0, 302, 1),
        Op::Honest(0, 3),
        Op::Mutated(0, 40, b'<'),
        Op::Body(0, b"<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url><loc>http://example.com/r/0.txt</loc></url></urlset>".to_vec()),
        Op::Fail(0),
        Op::Confirm(0, false),
        Op::Status(0, 429, 0),
        Op::Wait(200),
    ];
    let faults: Vec<Op> = faults.into_iter().chain(honest.iter().cloned()).collect();
    for (mode, name) in [(0u8, "baseline"), (2, "incremental")] {
        let start = if mode == 2 { 1 } else { 0 };
        out.push((
            format!("seed-{name}-faults"),
            encode(header(0, mode, false, true, start, 12, 2, 2), &faults),
        ));
    }
    out
}

/// `Location` values a redirect may carry.
const LOCATIONS: &[&str] = &[
    "http://example.com/capabilitylist.xml",
    "resourcelist.xml",
    "/.well-known/resourcesync",
    "http://other.example.org/resourcelist.xml",
    "https://example.com/changelist.xml",
    "http://127.0.0.1/latest/meta-data/",
    "http://example.com/r/0.txt",
    "",
    "::not a uri::",
    "http://user:pw@example.com/",
    "ftp://example.com/x",
    "http://example.com/loop",
];

/// `Link` values a response may carry.
const LINKS: &[&str] = &[
    "<capabilitylist.xml>; rel=\"resourcesync\"",
    "<http://example.com/.well-known/resourcesync>; rel=resourcesync, <x>; rel=\"next\"",
    "<http://evil.example.org/cl.xml>; rel=\"resourcesync\"",
    "<>; rel=\"resourcesync\"",
];

const STATUSES: &[u16] = &[
    200, 200, 206, 204, 301, 302, 303, 307, 308, 304, 400, 404, 410, 429, 500, 503,
];

/// What the driver keeps of a request.
struct Flying {
    id: RequestId,
    uri: String,
}

/// Runs the script in `data`; panics if the client breaks a promise. The report of
/// `Event::Done`, if the run ended.
pub fn run(data: &[u8]) -> Option<Report> {
    let mut s = Script::new(data);
    let sources = sources();
    let source = &sources[s.below(sources.len())];
    let mode = match s.below(4) {
        0 => Mode::Baseline { prefer_dump: false },
        1 => Mode::Baseline { prefer_dump: true },
        2 => Mode::Incremental,
        _ => Mode::Audit,
    };
    let dry = s.byte() & 1 == 1;
    let delete = s.byte();
    let start = [
        "",
        "capabilitylist.xml",
        "resourcelist.xml",
        "changelist.xml",
    ][s.below(4)];
    let checkpoint = s.byte();
    let inventory_kind = s.byte();
    let in_flight = 1 + s.below(4);
    let flags = s.byte();
    let attempts = 1 + s.below(3) as u32;

    let mut config = match Config::new(source.uri(start), mode) {
        Ok(c) => c,
        Err(e) => panic!("the Source's URIs make a configuration: {e}"),
    };
    config = config.with_dry_run(dry);
    if delete & 1 == 1 {
        config = config.with_delete(u64::from(delete >> 1) % 8);
    }
    if flags & 1 == 1 {
        if let Some(shard) = Shard::new(u64::from(flags >> 1) % 3, 3) {
            config = config.with_shard(shard);
        }
    }
    let follow = flags & 0x80 != 0 && mode == Mode::Incremental;
    if follow {
        config = config.with_follow(Duration::from_secs(30));
    }
    let mut bounds = Bounds::default();
    bounds.max_in_flight = in_flight;
    bounds.max_queued = 1 + (flags as usize >> 3) % 8;
    bounds.attempts = attempts;
    bounds.max_redirects = 2;
    bounds.max_depth = 1 + u32::from(flags >> 5) % 4;
    bounds.max_warnings = 5;
    bounds.max_discovery_bytes = 4096;
    let bounds_copy = bounds;
    config = config.with_bounds(bounds);

    let mut state = State::new();
    if checkpoint != 0 {
        let key = if start.is_empty() || start == "capabilitylist.xml" {
            "http://example.com/capabilitylist.xml".to_string()
        } else {
            source.uri(start).to_string()
        };
        state
            .sets
            .insert(key, Checkpoint::at(time(i64::from(checkpoint % 64))));
    }
    let mut inventory = MemoryInventory::new();
    if inventory_kind % 3 != 0 {
        for (k, (path, (bytes, lastmod))) in source.resources.iter().enumerate() {
            let mut f = Fixity::new();
            f.update(bytes);
            if inventory_kind % 3 == 2 && k % 3 == 0 {
                f.update(b"changed");
            }
            inventory.insert(
                source.uri(path),
                Held::of(&f.finish().into(), Some(time(*lastmod))),
            );
        }
        inventory.insert(source.uri("r/gone.txt"), Held::new());
        inventory.insert(source.uri("r/GONE.txt"), Held::new().with_length(3));
        inventory.insert(
            "http://other.example.org/x".parse().expect("a URI"),
            Held::new(),
        );
    }

    let slack = 8 + inventory.len();
    let mut client = Client::new(config, state, inventory);
    let origin = Instant::now();
    let mut now = origin;
    let mut flying: Vec<Flying> = Vec::new();
    let mut every_id: Vec<RequestId> = Vec::new();
    let mut announced: Vec<ChangeId> = Vec::new();
    let mut to_confirm: Vec<ChangeId> = Vec::new();
    // Bodies of 2xx responses, as a driver keeps them, and packages announced.
    let mut bodies: HashMap<RequestId, Vec<u8>> = HashMap::new();
    let mut packages: Vec<RequestId> = Vec::new();
    let mut done = false;
    let mut report = None;
    let mut body_bytes = 0usize;
    let limits = PackageLimits::default()
        .with_bytes(1 << 20, 4 << 20)
        .with_ratio(100);

    let mut honest_steps = 0usize;
    loop {
        // Requests.
        while let Some(request) = client.poll_request(now) {
            assert!(!done, "a request after Done");
            every_id.push(request.id);
            flying.push(Flying {
                id: request.id,
                uri: request.uri.to_string(),
            });
        }
        let progress = client.progress();
        assert!(
            progress.in_flight <= bounds_copy.max_in_flight,
            "{} requests in flight, more than {}",
            progress.in_flight,
            bounds_copy.max_in_flight
        );
        // Events.
        let mut events = 0usize;
        while let Some(event) = client.poll_event() {
            events += 1;
            match event {
                Event::Change(c) => announced.push(c.id),
                Event::Store(st) => to_confirm.push(st.change.id),
                Event::Extract(x) => to_confirm.push(x.change.id),
                Event::Delete(c) => to_confirm.push(c.id),
                Event::Package { request: id } => packages.push(id),
                Event::Cancel { request: id } => {
                    flying.retain(|f| f.id != id);
                    bodies.remove(&id);
                }
                Event::Discard { request, .. } => {
                    bodies.remove(&request);
                }
                Event::Release { request: id } => {
                    packages.retain(|p| *p != id);
                    bodies.remove(&id);
                }
                Event::Done(r) => {
                    assert!(!done, "Done twice");
                    done = true;
                    report = Some(r);
                }
                _ => {}
            }
        }
        if done {
            assert!(client.poll_request(now).is_none(), "a request after Done");
        }
        let held = held_work(&client);
        let bound = bounds_copy.max_queued + bounds_copy.max_in_flight + slack + body_bytes / 16;
        assert!(
            held <= bound,
            "the client holds {held} jobs and changes, more than {bound}"
        );

        if !s.done() {
            let mut d = Io {
                client: &mut client,
                now: &mut now,
                bodies: &mut bodies,
                body_bytes: &mut body_bytes,
                limits,
            };
            script_step(
                &mut s,
                &mut d,
                source,
                &mut flying,
                &every_id,
                &announced,
                &mut packages,
            );
            continue;
        }
        // Honest: answer, confirm, hand over packages, wait.
        if done {
            if std::env::var_os("CLIENT_SCRIPT").is_some() {
                eprintln!("ended after {honest_steps} honest steps");
            }
            return report;
        }
        honest_steps += 1;
        // A run that follows never ends: a few rounds of reading the Change Lists again.
        if follow && honest_steps > 500 {
            return report;
        }
        if honest_steps > HONEST_STEPS {
            assert!(
                follow,
                "the run did not end in {HONEST_STEPS} honest steps: {client:?}"
            );
            return report;
        }
        if events > 0 {
            continue;
        }
        if let Some(change) = to_confirm.pop() {
            let _ = client.applied(change, None, now);
            continue;
        }
        let mut d = Io {
            client: &mut client,
            now: &mut now,
            bodies: &mut bodies,
            body_bytes: &mut body_bytes,
            limits,
        };
        if !packages.is_empty() {
            let id = packages.remove(0);
            let body = d.bodies.get(&id).cloned().unwrap_or_default();
            d.hand_package(id, &body);
            continue;
        }
        if !flying.is_empty() {
            let f = flying.remove(0);
            d.answer(&f, source.respond(&f.uri), 4096, true);
            continue;
        }
        match client.poll_timeout() {
            Some(at) => {
                now = now.max(at);
                client.handle_timeout(now);
            }
            None => panic!("the client waits for nothing and is not done: {client:?}"),
        }
    }
}

/// Jobs queued and changes unsettled, as the client's `Debug` says.
fn held_work<I>(client: &Client<I>) -> usize {
    let debug = format!("{client:?}");
    let field = |name: &str| -> usize {
        debug
            .split(&format!("{name}: "))
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    };
    field("queued") + field("unsettled")
}

/// The driver's side of the exchanges.
struct Io<'a> {
    client: &'a mut Client<MemoryInventory>,
    now: &'a mut Instant,
    bodies: &'a mut HashMap<RequestId, Vec<u8>>,
    body_bytes: &'a mut usize,
    limits: PackageLimits,
}

// The fuzz repeats, reorders and invents inputs, so many are misuses: the client refuses
// those whole (and changes nothing), and their results are not looked at.
impl Io<'_> {
    fn hand_package(&mut self, id: RequestId, body: &[u8]) {
        match Package::with_limits(Cursor::new(body.to_vec()), self.limits) {
            Ok(package) => {
                // Its manifest's entries count as listed, like a document's.
                *self.body_bytes += package.manifest().entries.len() * 16;
                let manifest = resourcesync_client::PackageManifest::new(
                    package.manifest(),
                    package.findings(),
                    package.skipped(),
                );
                let _ = self.client.handle_package(id, manifest, *self.now);
            }
            Err(e) => {
                let _ = self.client.handle_failure(id, e.to_string(), *self.now);
            }
        }
    }

    fn answer(&mut self, f: &Flying, response: Response, chunk: usize, end: bool) {
        let mut headers = HeaderMap::new();
        for (k, v) in &response.headers {
            if let (Ok(k), Ok(v)) = (
                http::header::HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(v),
            ) {
                headers.append(k, v);
            }
        }
        *self.now += Duration::from_millis(10);
        let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::OK);
        let _ = self
            .client
            .handle_response(f.id, status, &headers, *self.now);
        *self.body_bytes += response.body.len();
        if status.is_success() {
            self.bodies
                .entry(f.id)
                .or_default()
                .extend_from_slice(&response.body);
        }
        for piece in response.body.chunks(chunk.max(1)) {
            let _ = self.client.handle_body(f.id, piece, *self.now);
        }
        if end {
            let _ = self.client.handle_end(f.id, *self.now);
        }
    }
}

fn script_step(
    s: &mut Script<'_>,
    d: &mut Io<'_>,
    source: &Source,
    flying: &mut Vec<Flying>,
    every_id: &[RequestId],
    announced: &[ChangeId],
    packages: &mut Vec<RequestId>,
) {
    match s.byte() % 9 {
        0 => {
            if flying.is_empty() {
                return;
            }
            let i = s.below(flying.len());
            let f = flying.remove(i);
            let honest = source.respond(&f.uri);
            let mut response = match s.byte() % 6 {
                0 => honest,
                1 => {
                    let mut r = honest;
                    let at = s.u16() as usize;
                    let with = s.byte();
                    if !r.body.is_empty() {
                        let n = r.body.len();
                        r.body[at % n] = with;
                    }
                    r
                }
                2 => {
                    let code = s.u16();
                    let status = if code & 0x8000 != 0 {
                        100 + code % 900
                    } else {
                        STATUSES[code as usize % STATUSES.len()]
                    };
                    let mut r = Response {
                        status,
                        headers: Vec::new(),
                        body: Vec::new(),
                    };
                    let l = s.byte();
                    if l & 1 == 1 {
                        r.headers.push((
                            "location".into(),
                            LOCATIONS[(l >> 1) as usize % LOCATIONS.len()].into(),
                        ));
                    }
                    r
                }
                3 => {
                    let n = s.byte() as usize;
                    Response::ok(s.bytes(n).to_vec())
                }
                4 => {
                    let files: Vec<&Response> = source.files.values().collect();
                    let mut r = files[s.below(files.len())].clone();
                    // Cut it somewhere.
                    let cut = s.u16() as usize;
                    if cut != 0 && cut < r.body.len() {
                        r.body.truncate(cut);
                    }
                    r
                }
                _ => Response::ok(EXAMPLES[s.below(EXAMPLES.len())].to_vec()),
            };
            let links = s.byte();
            if links & 1 == 1 {
                response.headers.push((
                    "link".into(),
                    LINKS[(links >> 1) as usize % LINKS.len()].into(),
                ));
            }
            let chunk = 1 + s.byte() as usize * 16;
            let how = s.byte() % 4;
            match how {
                // Left open: it may be answered again, time out, or fail later.
                3 => {
                    d.answer(&f, response, chunk, false);
                    flying.push(f);
                }
                2 => {
                    d.answer(&f, response, chunk, false);
                    let _ = d.client.handle_failure(f.id, "connection reset", *d.now);
                }
                _ => d.answer(&f, response, chunk, true),
            }
        }
        1 => {
            if !flying.is_empty() {
                let i = s.below(flying.len());
                let f = flying.remove(i);
                let _ = d.client.handle_failure(f.id, "connection refused", *d.now);
            }
        }
        2 => {
            let secs = s.byte();
            *d.now += Duration::from_secs(u64::from(secs));
            d.client.handle_timeout(*d.now);
        }
        3 => {
            if !announced.is_empty() {
                let c = announced[s.below(announced.len())];
                if s.byte() & 1 == 0 {
                    let _ = d.client.applied(c, None, *d.now);
                } else {
                    let _ = d.client.failed(c, "disk full", *d.now);
                }
            }
        }
        4 => {
            if !flying.is_empty() {
                let i = s.below(flying.len());
                let location = LOCATIONS[s.below(LOCATIONS.len())];
                let _ = d.client.handle_redirect(flying[i].id, location, *d.now);
            }
        }
        5 => {
            // A package: the one received, another Source's, or one that fails to open.
            if packages.is_empty() {
                return;
            }
            let i = s.below(packages.len());
            let id = packages.remove(i);
            match s.byte() % 4 {
                0 | 1 => {
                    let body = d.bodies.get(&id).cloned().unwrap_or_default();
                    d.hand_package(id, &body)
                }
                2 => {
                    let zips: Vec<&Response> = sources()
                        .iter()
                        .flat_map(|src| src.files.iter())
                        .filter(|(name, _)| name.ends_with(".zip"))
                        .map(|(_, r)| r)
                        .collect();
                    let other = zips[s.below(zips.len())].body.clone();
                    d.hand_package(id, &other)
                }
                _ => {
                    let _ = d.client.handle_failure(id, "cannot open", *d.now);
                }
            }
        }
        6 => {
            // Any input again for an id the client may no longer know.
            if every_id.is_empty() {
                return;
            }
            let id = every_id[s.below(every_id.len())];
            // Mostly a misuse, refused as one: it must change nothing.
            let _ = match s.byte() % 5 {
                0 => d
                    .client
                    .handle_response(id, StatusCode::OK, &HeaderMap::new(), *d.now),
                1 => d.client.handle_body(id, b"<urlset>", *d.now),
                2 => d.client.handle_end(id, *d.now),
                3 => d.client.handle_failure(id, "late", *d.now),
                _ => d.client.handle_redirect(id, "/x", *d.now),
            };
        }
        7 => {
            // Time jumps to the next deadline.
            if let Some(at) = d.client.poll_timeout() {
                *d.now = (*d.now).max(at);
                d.client.handle_timeout(*d.now);
            }
        }
        _ => {
            // Confirm the oldest announced change; and look at the state.
            if let Some(c) = announced.first() {
                let _ = d.client.applied(*c, None, *d.now);
            }
            let _ = d.client.state();
            let _ = d.client.progress();
        }
    }
}
