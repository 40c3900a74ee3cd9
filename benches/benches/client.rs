//! Baseline planning by the sans-IO client, beside the floor measured in the same run:
//! reading the same documents with `resourcesync-xml`'s reader alone.
//!
//! A 1,000,000-entry Resource List published with the set writer (20 parts of 50,000 and
//! the index over them, as `benches/xml.rs` does), and a `MemoryInventory` of the same
//! 1,000,000 resources in which 1 % has another sha-256. The client runs a dry-run
//! baseline (`Mode::Baseline { prefer_dump: false }`, `Config::with_dry_run(true)`):
//! it asks for the index and the parts, compares every entry with the inventory and
//! announces the 10,000 changes, fetching no resource. The driver answers each document
//! request from the bytes in memory, in 64 KiB chunks, one request at a time (the others
//! wait in flight, bodies not started), and drains the events after every input.
//!
//! Memory: a counting global allocator (this binary's only) measures the client's own
//! peak, over what was allocated before it started (the documents and the inventory),
//! once before criterion runs, in test mode too; it must stay within 10 bytes per listed
//! entry (issue 21; 64 MiB in all was the bound before).
//!
//! The client reads each document with `resourcesync-xml`'s push reader as its chunks
//! arrive, so a document in flight costs about one entry, not the document.
//!
//! `cargo bench -p resourcesync-benches --bench client -- --warm-up-time 1 --measurement-time 10`
//!
//! Paired rounds: with `CLIENT_PAIRED=N` in the environment, the three functions run
//! one after the other in each of N rounds instead of in criterion's groups, and the
//! medians of their times and of each round's ratios to the reader alone are printed.
//! On a VM whose speed drifts within minutes, separate groups can disagree with each
//! other (a client's median under its own floor's); ratios within a round do not.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use http::{HeaderMap, StatusCode};
use resourcesync_benches::alloc::{self, Counting};
use resourcesync_client::{Client, Config, Event, Held, MemoryInventory, Mode, Report, State};
use resourcesync_model::{Digest, Uri};
use resourcesync_xml::{Limits, Next, PushReader, Reader, SetLimits, SetWriter};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ENTRIES: u64 = 1_000_000;
const INDEX: &str = "http://example.com/resourcelist.xml";
const CHUNK: usize = 64 << 10;
/// The bound on the client's own memory: 10 bytes per listed entry.
const MAX_CLIENT_BYTES: usize = 10 * ENTRIES as usize;

/// The index and its parts, by URI.
fn publish(n: u64) -> BTreeMap<String, Vec<u8>> {
    let mut store: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let head =
        resourcesync_benches::document(resourcesync_model::DocumentKind::ResourceList, 0, 0).head;
    let mut set = SetWriter::new(
        head,
        INDEX.parse().unwrap(),
        |i| format!("http://example.com/resourcelist-{i:03}.xml").parse(),
        |uri: &Uri, xml: &[u8]| {
            store.insert(uri.to_string(), xml.to_vec());
            Ok(())
        },
        SetLimits::default(),
    )
    .unwrap();
    for i in 0..n {
        set.write_entry(&resourcesync_benches::entry(i, false))
            .unwrap();
    }
    let _ = set.finish().unwrap();
    store
}

/// What the Destination holds: every listed resource, as listed (length, md5, sha-256,
/// lastmod), but one in a hundred with another sha-256.
fn inventory(n: u64) -> MemoryInventory {
    (0..n)
        .map(|i| {
            let e = resourcesync_benches::entry(i, false);
            let md = e.md.as_ref().unwrap();
            let sha = if i % 100 == 0 { i + 2 } else { i + 1 };
            let mut md5 = [0; 16];
            md5.copy_from_slice(&resourcesync_benches::bytes(i, 16));
            let mut sha256 = [0; 32];
            sha256.copy_from_slice(&resourcesync_benches::bytes(sha, 32));
            let held = Held::new()
                .with_length(md.length.unwrap())
                .with_lastmod(e.lastmod.unwrap())
                .with_md5(Digest(md5))
                .with_sha256(Digest(sha256));
            (e.loc, held)
        })
        .collect()
}

/// The floor: the index and every part read with the reader alone; entries counted.
fn read_alone(store: &BTreeMap<String, Vec<u8>>) -> u64 {
    let mut index = Reader::from_slice_with_limits(&store[INDEX][..], Limits::default());
    let mut n = 0;
    while let Some(part) = index.next_entry().unwrap() {
        let mut reader =
            Reader::from_slice_with_limits(&store[part.loc.as_str()][..], Limits::default());
        while let Some(entry) = reader.next_entry().unwrap() {
            n += 1;
            black_box(entry);
        }
    }
    n
}

/// The same documents through the push reader, fed 64 KiB chunks as the client is: what
/// reading costs when the bytes arrive in pieces, before the client does anything.
fn push_alone(store: &BTreeMap<String, Vec<u8>>) -> u64 {
    /// Every entry of one document, fed in chunks.
    fn read(bytes: &[u8], mut each: impl FnMut(resourcesync_model::Entry)) {
        let mut reader = PushReader::with_limits(Limits::default());
        for chunk in bytes.chunks(CHUNK) {
            reader.feed(chunk).unwrap();
            while let Next::Entry(entry) = reader.next_entry().unwrap() {
                each(entry);
            }
        }
        reader.finish().unwrap();
        while let Next::Entry(entry) = reader.next_entry().unwrap() {
            each(entry);
        }
    }
    let mut parts = Vec::new();
    read(&store[INDEX][..], |part| {
        parts.push(part.loc.as_str().to_owned())
    });
    let mut n = 0;
    for part in &parts {
        read(&store[part.as_str()][..], |entry| {
            n += 1;
            black_box(entry);
        });
    }
    n
}

/// The client's dry-run baseline from the index: the report and the changes announced.
/// The inventory is lent (`&mut`: the client records confirmed changes in it, and a dry
/// run confirms none).
fn plan(store: &BTreeMap<String, Vec<u8>>, inventory: &mut MemoryInventory) -> (Report, u64) {
    let config = Config::new(
        INDEX.parse().unwrap(),
        Mode::Baseline { prefer_dump: false },
    )
    .unwrap()
    .with_dry_run(true);
    let mut client = Client::new(config, State::new(), inventory);
    let now = Instant::now();
    let headers = HeaderMap::new();
    let mut waiting = Vec::new();
    let mut changes = 0;
    loop {
        while let Some(request) = client.poll_request(now) {
            waiting.push(request);
        }
        while let Some(event) = client.poll_event() {
            match event {
                Event::Change(_) => changes += 1,
                Event::Done(report) => return (report, changes),
                Event::Problem(p) => panic!("{p}"),
                _ => {}
            }
        }
        let Some(request) = waiting.pop() else {
            panic!("the client waits for nothing and is not done: {client:?}");
        };
        let body = &store[request.uri.as_str()];
        // A misuse would be this driver's bug.
        client
            .handle_response(request.id, StatusCode::OK, &headers, now)
            .unwrap();
        for chunk in body.chunks(CHUNK) {
            client.handle_body(request.id, chunk, now).unwrap();
        }
        client.handle_end(request.id, now).unwrap();
    }
}

fn bench(c: &mut Criterion) {
    let store = publish(ENTRIES);
    assert_eq!(store.len(), 21);
    let total: usize = store.values().map(Vec::len).sum();
    let mut inventory = inventory(ENTRIES);
    assert_eq!(read_alone(&store), ENTRIES);
    assert_eq!(push_alone(&store), ENTRIES);

    // The client's own memory: its peak over what is allocated before it starts.
    let before = alloc::current();
    let started = Instant::now();
    let ((report, changes), own) = alloc::own_peak(|| plan(&store, &mut inventory));
    let took = started.elapsed();
    assert_eq!(changes, ENTRIES / 100);
    assert_eq!(report.listed, ENTRIES);
    assert_eq!(report.updated, ENTRIES / 100);
    assert_eq!(report.documents, 21);
    // And the reader's alone, for comparison.
    let (_, reader_own) = alloc::own_peak(|| read_alone(&store));
    let mib = |n: usize| n as f64 / (1 << 20) as f64;
    eprintln!(
        "client/baseline-plan-1m: the client's own peak {:.1} MiB ({:.1} bytes per listed entry); \
         the reader's alone {:.2} MiB; \
         documents {:.0} MiB, inventory and documents {:.0} MiB; one run {:?}",
        mib(own),
        own as f64 / ENTRIES as f64,
        mib(reader_own),
        mib(total),
        mib(before),
        took,
    );
    assert!(
        own <= MAX_CLIENT_BYTES,
        "the client's own memory peaked at {own} bytes, over {MAX_CLIENT_BYTES}"
    );

    if let Some(rounds) = std::env::var("CLIENT_PAIRED")
        .ok()
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        paired(&store, &mut inventory, rounds);
        return;
    }

    let mut g = c.benchmark_group("client/baseline-plan-1m-index-20-parts");
    g.throughput(Throughput::Bytes(total as u64));
    g.sample_size(10);
    g.sampling_mode(SamplingMode::Flat);
    g.warm_up_time(Duration::from_secs(1));
    g.bench_function("reader alone (floor)", |b| {
        b.iter(|| black_box(read_alone(&store)))
    });
    g.bench_function("push reader alone, 64 KiB chunks", |b| {
        b.iter(|| black_box(push_alone(&store)))
    });
    g.bench_function("client dry-run baseline", |b| {
        b.iter(|| black_box(plan(&store, &mut inventory)))
    });
    g.finish();
}

/// `rounds` rounds of the reader alone, the push reader alone and the client, one after
/// the other; prints the median of each one's times and of the rounds' ratios.
fn paired(store: &BTreeMap<String, Vec<u8>>, inventory: &mut MemoryInventory, rounds: usize) {
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for _ in 0..rounds {
        let started = Instant::now();
        black_box(read_alone(store));
        times[0].push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        black_box(push_alone(store));
        times[1].push(started.elapsed().as_secs_f64());
        let started = Instant::now();
        black_box(plan(store, inventory));
        times[2].push(started.elapsed().as_secs_f64());
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ratio = |i: usize| median((0..rounds).map(|k| times[i][k] / times[0][k]).collect());
    eprintln!(
        "client/paired, {rounds} rounds: medians reader alone {:.3} s, push reader alone {:.3} s, \
         client {:.3} s; medians of the rounds' ratios to the reader alone: push {:.2}x, client {:.2}x",
        median(times[0].clone()),
        median(times[1].clone()),
        median(times[2].clone()),
        ratio(1),
        ratio(2),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
