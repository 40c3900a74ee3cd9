//! The Source fed by events: one change published into a Source of 1,000,000 resources
//! whose open Change List holds at most 1,000 entries, beside a full publication of the
//! same Source from a snapshot of its records, in the same run. Both into a
//! `GenerationStore` in `/dev/shm` when there is one (tmpfs: the CPU's work is measured,
//! not this machine's disk).
//!
//! A change should cost what the change is: the open Change List read and written again,
//! not the collection. The bench prints the bytes a run wrote against the open list's.
//!
//! `cargo bench -p resourcesync-benches --bench publish`

use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use resourcesync_model::{Entry, Hashes, W3cDateTime};
use resourcesync_source::{
    GenerationStore, PublishOptions, Publisher, ResourceEvent, ResourceListPolicy,
};

const BASE: &str = "http://example.com/";
/// Entries of the open Change List, at most.
const OPEN: usize = 1000;

/// Resources in the Source: 1,000,000 when measuring, fewer when `cargo test --benches`
/// runs each function once to check it.
fn resources() -> u32 {
    if std::env::args().any(|a| a == "--bench") {
        1_000_000
    } else {
        3_000
    }
}

/// The application's record of resource `i` in version `version`.
fn record(i: u32, version: u64) -> Entry {
    let digest = resourcesync_benches::bytes(u64::from(i) << 20 | version, 48);
    let (md5, sha256) = digest.split_at(16);
    Entry::new(format!("{BASE}items/{i:07}").parse().unwrap())
        .with_lastmod(W3cDateTime::from(SystemTime::UNIX_EPOCH))
        .with_length(4096 + u64::from(i % 100))
        .with_hash(Hashes::md5_sha256(
            md5.try_into().unwrap(),
            sha256.try_into().unwrap(),
        ))
}

fn options() -> PublishOptions {
    PublishOptions::new(BASE.parse().unwrap())
        .with_changelist_entries(OPEN)
        .with_resource_list(ResourceListPolicy::Period(Duration::from_secs(86_400)))
}

fn bench(c: &mut Criterion) {
    let n = resources();
    let records: Vec<Entry> = (0..n).map(|i| record(i, 0)).collect();
    let mut group = c.benchmark_group(format!("publish into {n} resources"));
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(10));

    group.bench_function("full publication from a snapshot of the records", |b| {
        let mut last = None;
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                drop(last.take());
                let dir = resourcesync_benches::scratch("publish-bench-full");
                let snapshot = records.clone();
                let start = Instant::now();
                let store = GenerationStore::open(dir.path().join("publish")).unwrap();
                let mut source = Publisher::new(store, options());
                let report = source
                    .publish_snapshot(snapshot, SystemTime::now())
                    .unwrap();
                total += start.elapsed();
                assert_eq!(report.resource_list, Some(u64::from(n)));
                last = Some((source, dir));
            }
            total
        })
    });

    // One Source, published once outside the timing, then one change per run.
    let dir = resourcesync_benches::scratch("publish-bench-changes");
    let publish = dir.path().join("publish");
    let mut source = Publisher::new(GenerationStore::open(&publish).unwrap(), options());
    source
        .publish_snapshot(records.clone(), SystemTime::now())
        .unwrap();
    drop(records);
    let mut round = 0u64;
    // (bytes written, the open list's bytes before or after the run), per run.
    let mut written = Vec::new();
    group.bench_function(
        format!("one change, the open Change List at most {OPEN} entries"),
        |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    round += 1;
                    let i = (round * 7919 % u64::from(n)) as u32;
                    let event = ResourceEvent::updated(record(i, round), SystemTime::now().into());
                    let before = open_list(&publish);
                    let start = Instant::now();
                    let report = source.publish_changes([event], SystemTime::now()).unwrap();
                    total += start.elapsed();
                    assert_eq!((report.updated, report.resource_list), (1, None));
                    // Against the open list before the run or after it, the larger: a run
                    // that closes a full list writes it whole and opens a short one.
                    written.push((report.bytes_written, before.max(open_list(&publish))));
                }
                total
            })
        },
    );
    group.finish();

    let ratios: Vec<f64> = written
        .iter()
        .filter(|(_, open)| *open > 0)
        .map(|(w, open)| *w as f64 / *open as f64)
        .collect();
    if !ratios.is_empty() {
        let mut sorted = ratios.clone();
        sorted.sort_by(f64::total_cmp);
        let written_total: u64 = written.iter().map(|w| w.0).sum();
        println!(
            "one change: {} runs, bytes written / open Change List bytes: median {:.2}, \
             max {:.2}; {} bytes written per run on average",
            ratios.len(),
            sorted[sorted.len() / 2],
            sorted[sorted.len() - 1],
            written_total / written.len() as u64
        );
    }
}

/// The open Change List's size: the last one the index lists.
fn open_list(publish: &Path) -> u64 {
    let index = std::fs::read_to_string(publish.join("resourcesync/changelist.xml")).unwrap();
    let last = index.rsplit("<loc>").next().unwrap();
    let uri = &last[..last.find("</loc>").unwrap()];
    let name = uri.strip_prefix(BASE).unwrap();
    std::fs::metadata(publish.join(name)).map_or(0, |m| m.len())
}

criterion_group!(benches, bench);
criterion_main!(benches);
