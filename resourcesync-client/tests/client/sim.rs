#![allow(unreachable_pub)]
//! A simulated Source with a virtual clock, and a driver that runs the client against it
//! in process: every document the Source publishes is written by `resourcesync-xml` and
//! `resourcesync-package`, every response goes through the client's inputs in chunks of
//! varying size, and faults are injected per request.

use std::collections::{BTreeMap, HashMap};
use std::io::{Cursor, Read};
use std::time::{Duration, Instant};

use http::{HeaderMap, HeaderValue, StatusCode};
use resourcesync_client::{
    Client, Config, Event, Held, MemoryInventory, Mode, Report, RequestId, State,
};
use resourcesync_model::{
    BitstreamPath, Capability, Change, Document, DocumentHead, Entry, Fixity, Link, Md, Relation,
    Root, Uri, W3cDateTime,
};
use resourcesync_package::{Bitstream, Package, PackageOptions, PackageWriter};

/// Seconds since 2020-01-01T00:00:00Z as a W3C Datetime.
pub fn time(seconds: i64) -> W3cDateTime {
    let base = 1_577_836_800i64;
    let t = std::time::UNIX_EPOCH + Duration::from_secs((base + seconds) as u64);
    W3cDateTime::from(t)
}

/// One change in the Source's history.
#[derive(Clone, Debug)]
pub struct Logged {
    pub at: i64,
    pub path: String,
    pub change: Change,
    /// The content after the change (none for a deletion).
    pub bytes: Option<Vec<u8>>,
}

/// How the Source publishes.
#[derive(Clone, Debug)]
pub struct Publish {
    /// Entries per Resource List; more make a Resource List Index.
    pub list_part: usize,
    /// Changes per Change List; more make several (an index, or an archive).
    pub change_part: usize,
    /// Closed Change Lists go to a Change List Archive instead of an index.
    pub archive: bool,
    /// Offer a Resource Dump (one package).
    pub resource_dump: bool,
    /// Offer a Change Dump (a package per change part) instead of Change Lists.
    pub change_dump: bool,
    /// Changes before this time are no longer offered (a gap for a Destination behind).
    pub forget_before: i64,
    /// Write `datetime` on changes (else only `lastmod`, as Archives Example 2.2).
    pub datetimes: bool,
}

impl Default for Publish {
    fn default() -> Publish {
        Publish {
            list_part: 1000,
            change_part: 1000,
            archive: false,
            resource_dump: false,
            change_dump: false,
            forget_before: 0,
            datetimes: true,
        }
    }
}

/// A canned response.
#[derive(Clone, Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn ok(body: Vec<u8>) -> Response {
        Response {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }
}

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
}

pub type FaultFn = Box<dyn FnMut(&str, u32) -> Option<Fault>>;

/// The simulated Source.
pub struct Source {
    pub base: String,
    pub now: i64,
    pub resources: BTreeMap<String, (Vec<u8>, i64)>,
    pub log: Vec<Logged>,
    pub publish: Publish,
    pub files: BTreeMap<String, Response>,
    /// When the last Resource List was published.
    pub published_at: i64,
}

impl Source {
    pub fn new() -> Source {
        Source {
            base: "http://example.com/".into(),
            now: 0,
            resources: BTreeMap::new(),
            log: Vec::new(),
            publish: Publish::default(),
            files: BTreeMap::new(),
            published_at: 0,
        }
    }

    pub fn uri(&self, path: &str) -> Uri {
        format!("{}{}", self.base, path).parse().unwrap()
    }

    pub fn tick(&mut self, seconds: i64) {
        self.now += seconds;
    }

    pub fn put(&mut self, path: &str, bytes: &[u8]) {
        let change = if self.resources.contains_key(path) {
            Change::Updated
        } else {
            Change::Created
        };
        self.resources
            .insert(path.into(), (bytes.to_vec(), self.now));
        self.log.push(Logged {
            at: self.now,
            path: path.into(),
            change,
            bytes: Some(bytes.to_vec()),
        });
    }

    pub fn delete(&mut self, path: &str) {
        if self.resources.remove(path).is_some() {
            self.log.push(Logged {
                at: self.now,
                path: path.into(),
                change: Change::Deleted,
                bytes: None,
            });
        }
    }

    fn md_of(bytes: &[u8]) -> Md {
        let mut f = Fixity::new();
        f.update(bytes);
        let d = f.finish();
        Md::new().with_length(d.length).with_hash(d.hashes())
    }

    fn xml(doc: &Document) -> Response {
        let mut out = Vec::new();
        let written = resourcesync_xml::write_document(&mut out, doc).unwrap();
        drop(written);
        Response::ok(out)
    }

    fn head(&self, capability: Capability, root: Root) -> DocumentHead {
        DocumentHead::new(root, capability)
            .with_link(Link::new(Relation::Up, self.uri("capabilitylist.xml")))
    }

    /// Writes every document (and package) as the Source stands now.
    pub fn publish(&mut self) {
        let p = self.publish.clone();
        let now = time(self.now);
        self.files.clear();
        self.published_at = self.now;
        // Source Description and Capability List.
        let mut sd = Document::new(DocumentHead::new(Root::UrlSet, Capability::Description));
        sd.entries.push(
            Entry::new(self.uri("capabilitylist.xml"))
                .with_md(Md::new().with_capability(Capability::CapabilityList)),
        );
        self.files
            .insert(".well-known/resourcesync".into(), Self::xml(&sd));
        let mut cl = Document::new(
            DocumentHead::new(Root::UrlSet, Capability::CapabilityList).with_link(Link::new(
                Relation::Up,
                self.uri(".well-known/resourcesync"),
            )),
        );
        let cap = |uri: Uri, c: Capability| Entry::new(uri).with_md(Md::new().with_capability(c));
        cl.entries
            .push(cap(self.uri("resourcelist.xml"), Capability::ResourceList));
        if p.resource_dump {
            cl.entries
                .push(cap(self.uri("resourcedump.xml"), Capability::ResourceDump));
        }
        if p.change_dump {
            cl.entries
                .push(cap(self.uri("changedump.xml"), Capability::ChangeDump));
        } else {
            cl.entries
                .push(cap(self.uri("changelist.xml"), Capability::ChangeList));
        }
        if p.archive {
            cl.entries.push(cap(
                self.uri("changelist-archive.xml"),
                Capability::ChangeListArchive,
            ));
        }
        self.files
            .insert("capabilitylist.xml".into(), Self::xml(&cl));

        // Resource List, an index when it has more than one part.
        let entries: Vec<Entry> = self
            .resources
            .iter()
            .map(|(path, (bytes, lastmod))| {
                Entry::new(self.uri(path))
                    .with_lastmod(time(*lastmod))
                    .with_md(Self::md_of(bytes))
            })
            .collect();
        let parts: Vec<&[Entry]> = if entries.is_empty() {
            vec![&[][..]]
        } else {
            entries.chunks(p.list_part.max(1)).collect()
        };
        if parts.len() == 1 {
            let mut doc = Document::new(
                self.head(Capability::ResourceList, Root::UrlSet)
                    .with_at(now),
            );
            doc.entries = parts[0].to_vec();
            self.files
                .insert("resourcelist.xml".into(), Self::xml(&doc));
        } else {
            let mut index = Document::new(
                self.head(Capability::ResourceList, Root::SitemapIndex)
                    .with_at(now),
            );
            for (i, part) in parts.iter().enumerate() {
                let name = format!("resourcelist-{i}.xml");
                let mut doc = Document::new(
                    self.head(Capability::ResourceList, Root::UrlSet)
                        .with_at(now)
                        .with_link(Link::new(Relation::Index, self.uri("resourcelist.xml"))),
                );
                doc.entries = part.to_vec();
                self.files.insert(name.clone(), Self::xml(&doc));
                index
                    .entries
                    .push(Entry::new(self.uri(&name)).with_md(Md::new().with_at(now)));
            }
            self.files
                .insert("resourcelist.xml".into(), Self::xml(&index));
        }

        // Resource Dump: one package.
        if p.resource_dump {
            let head = DocumentHead::new(Root::UrlSet, Capability::ResourceDumpManifest)
                .with_at(now)
                .with_link(Link::new(Relation::Up, self.uri("capabilitylist.xml")));
            let mut w =
                PackageWriter::new(Cursor::new(Vec::new()), head, PackageOptions::default())
                    .unwrap();
            for (path, (bytes, lastmod)) in &self.resources {
                let b = Bitstream::new(self.uri(path), BitstreamPath::new(format!("/{path}")))
                    .with_lastmod(time(*lastmod));
                w.add(b, &bytes[..]).unwrap();
            }
            let (zip, info) = w.finish().unwrap();
            let zip = zip.into_inner();
            let mut dump = Document::new(
                self.head(Capability::ResourceDump, Root::UrlSet)
                    .with_at(now),
            );
            dump.entries.push(
                Entry::new(self.uri("resourcedump-1.zip")).with_md(
                    Md::new()
                        .with_length(info.digests.length)
                        .with_hash(info.digests.hashes())
                        .with_at(now),
                ),
            );
            self.files
                .insert("resourcedump-1.zip".into(), Response::ok(zip));
            self.files
                .insert("resourcedump.xml".into(), Self::xml(&dump));
        }

        // Changes, in parts; the last part is open.
        let offered: Vec<&Logged> = self
            .log
            .iter()
            .filter(|l| l.at >= p.forget_before)
            .collect();
        let chunks: Vec<&[&Logged]> = if offered.is_empty() {
            vec![&[][..]]
        } else {
            offered.chunks(p.change_part.max(1)).collect()
        };
        let mut from = p.forget_before;
        let mut lists = Vec::new();
        for (i, chunk) in chunks.iter().enumerate() {
            let last = i + 1 == chunks.len();
            let until = if last {
                None
            } else {
                Some(chunks[i + 1][0].at)
            };
            lists.push((format!("changes-{i}"), from, until, chunk.to_vec()));
            if let Some(u) = until {
                from = u;
            }
        }
        let change_entry = |l: &Logged| {
            let mut md = match &l.bytes {
                Some(b) => Self::md_of(b),
                None => Md::new(),
            }
            .with_change(l.change);
            if p.datetimes {
                md = md.with_datetime(time(l.at));
            }
            Entry::new(self.uri(&l.path))
                .with_lastmod(time(l.at))
                .with_md(md)
        };
        if p.change_dump {
            let mut dump = Document::new(
                self.head(Capability::ChangeDump, Root::UrlSet)
                    .with_from(time(p.forget_before)),
            );
            for (name, from, until, chunk) in &lists {
                if chunk.is_empty() {
                    continue;
                }
                let mut head = DocumentHead::new(Root::UrlSet, Capability::ChangeDumpManifest)
                    .with_from(time(*from))
                    .with_link(Link::new(Relation::Up, self.uri("capabilitylist.xml")));
                if let Some(u) = until {
                    head = head.with_until(time(*u));
                }
                let mut w =
                    PackageWriter::new(Cursor::new(Vec::new()), head, PackageOptions::default())
                        .unwrap();
                for (k, l) in chunk.iter().enumerate() {
                    match &l.bytes {
                        Some(bytes) => {
                            let b = Bitstream::new(
                                self.uri(&l.path),
                                BitstreamPath::new(format!("/{k}/{}", l.path)),
                            )
                            .with_lastmod(time(l.at))
                            .with_change(l.change)
                            .with_datetime(time(l.at));
                            w.add(b, &bytes[..]).unwrap();
                        }
                        None => {
                            w.add_deleted(self.uri(&l.path), Some(time(l.at))).unwrap();
                        }
                    }
                }
                let (zip, info) = w.finish().unwrap();
                let zip_name = format!("{name}.zip");
                self.files
                    .insert(zip_name.clone(), Response::ok(zip.into_inner()));
                let mut md = Md::new()
                    .with_length(info.digests.length)
                    .with_hash(info.digests.hashes())
                    .with_from(time(*from));
                if let Some(u) = until {
                    md = md.with_until(time(*u));
                }
                dump.entries
                    .push(Entry::new(self.uri(&zip_name)).with_md(md));
            }
            self.files.insert("changedump.xml".into(), Self::xml(&dump));
            return;
        }
        let mut docs = Vec::new();
        for (name, from, until, chunk) in &lists {
            let mut head = self
                .head(Capability::ChangeList, Root::UrlSet)
                .with_from(time(*from));
            if let Some(u) = until {
                head = head.with_until(time(*u));
            }
            if p.archive {
                head = head.with_link(Link::new(
                    Relation::Archives,
                    self.uri("changelist-archive.xml"),
                ));
            }
            let mut doc = Document::new(head);
            doc.entries = chunk.iter().map(|l| change_entry(l)).collect();
            docs.push((format!("{name}.xml"), *from, *until, doc));
        }
        if p.archive {
            // The open list is the Change List; closed ones are in the archive.
            let mut archive = Document::new(self.head(Capability::ChangeListArchive, Root::UrlSet));
            let n = docs.len();
            for (i, (name, from, until, doc)) in docs.into_iter().enumerate() {
                if i + 1 == n {
                    self.files.insert("changelist.xml".into(), Self::xml(&doc));
                } else {
                    let mut md = Md::new().with_from(time(from));
                    if let Some(u) = until {
                        md = md.with_until(time(u));
                    }
                    archive
                        .entries
                        .push(Entry::new(self.uri(&name)).with_md(md));
                    self.files.insert(name, Self::xml(&doc));
                }
            }
            self.files
                .insert("changelist-archive.xml".into(), Self::xml(&archive));
        } else if docs.len() == 1 {
            let (_, _, _, doc) = docs.pop().unwrap();
            self.files.insert("changelist.xml".into(), Self::xml(&doc));
        } else {
            let mut index = Document::new(
                self.head(Capability::ChangeList, Root::SitemapIndex)
                    .with_from(time(p.forget_before)),
            );
            for (name, from, until, doc) in docs {
                let mut md = Md::new().with_from(time(from));
                if let Some(u) = until {
                    md = md.with_until(time(u));
                }
                index.entries.push(Entry::new(self.uri(&name)).with_md(md));
                self.files.insert(name, Self::xml(&doc));
            }
            self.files
                .insert("changelist.xml".into(), Self::xml(&index));
        }
    }

    /// The response to a GET of `uri`, as published (resources as they are now).
    pub fn respond(&self, uri: &str) -> Response {
        let Some(path) = uri.strip_prefix(&self.base) else {
            return Response {
                status: 404,
                headers: vec![],
                body: vec![],
            };
        };
        if let Some(r) = self.files.get(path) {
            return r.clone();
        }
        match self.resources.get(path) {
            Some((bytes, _)) => Response::ok(bytes.clone()),
            None => Response {
                status: 404,
                headers: vec![],
                body: b"not found".to_vec(),
            },
        }
    }
}

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
}

impl Default for Drive {
    fn default() -> Drive {
        Drive {
            chunks: vec![7, 1, 4096, 13],
            fault: None,
            crash_after: None,
            rotate: 0,
            stop_when_idle: false,
        }
    }
}

/// What a run gave.
#[derive(Debug)]
pub struct Run {
    pub report: Option<Report>,
    pub events: Vec<Event>,
    pub requests: Vec<String>,
    pub crashed: bool,
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
            match &event {
                Event::Store(store) => {
                    let body = kept.remove(&store.request).expect("a stored body was kept");
                    assert_eq!(body.len() as u64, store.digests.length);
                    dest.files
                        .insert(store.change.path.as_str().to_owned(), body);
                    // The client records the digests it verified.
                    confirm = Some((store.change.id, None));
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
                    let held = Held::of(&digests, extract.change.lastmod);
                    confirm = Some((extract.change.id, Some(held)));
                }
                Event::Package { request: id } => {
                    let body = kept.remove(id).expect("a package body was kept");
                    let package = Package::new(Cursor::new(body)).unwrap();
                    client.handle_package(*id, package.manifest(), now).unwrap();
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
                Event::Done(report) => run.report = Some(report.clone()),
                _ => {}
            }
            run.events.push(event);
            if let Some((change, held)) = confirm {
                confirmations += 1;
                if drive.crash_after.is_some_and(|n| confirmations > n) {
                    run.crashed = true;
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
        if progressed {
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
        let pick = drive.rotate % in_flight.len();
        drive.rotate = drive.rotate.wrapping_add(drive.rotate.max(1));
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
                let mut response = source.respond(&uri);
                let mut truncate = None;
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
        } = exchange;
        if at < body.len() {
            let n = drive.chunks[chunk_i % drive.chunks.len()].max(1);
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
