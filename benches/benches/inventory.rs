//! The Destination's inventory at scale (issue 27): a directory whose inventory holds
//! 1,000,000 resources (10,000,000 with `INVENTORY_LONG=1`) syncs 100 changes
//! incrementally. Asserted, in test mode too:
//! - the save of those changes (`DiskInventory::save`: one transaction of what changed)
//!   costs at most 5 % of a full inventory write, the floor of the design it replaced
//!   (every save wrote the whole inventory: `MemoryInventory` as JSON, synced), both
//!   timed in this run;
//! - a process that does nothing but that incremental sync (`blocking::sync` in process
//!   over a simulated Source, this binary run again) peaks at most 64 MiB resident.
//!
//! `cargo bench -p resourcesync-benches --bench inventory`
//! (`INVENTORY_LONG=1` for 10,000,000 held resources: about 1.5 GB of inventory file and
//! a few minutes to build it).

use std::hint::black_box;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{Criterion, SamplingMode, criterion_group};
use resourcesync_client::{Held, Inventory, MemoryInventory};
use resourcesync_destination::blocking::{self, Response, Transport};
use resourcesync_destination::{DirectoryDestination, DiskInventory, StopToken, SyncOptions};
use resourcesync_model::{Digest, Uri};
use resourcesync_testkit::source::Source;

/// The environment variable that makes this binary the child that syncs one directory.
const CHILD: &str = "INVENTORY_SYNC";
/// Changes synced.
const CHANGES: usize = 100;
/// The bound the issue sets on the resident memory of such a sync.
const MAX_RESIDENT: usize = 64 << 20;

fn held_count() -> usize {
    match std::env::var_os("INVENTORY_LONG") {
        Some(_) => 10_000_000,
        None => 1_000_000,
    }
}

/// A held record, as a verified store records it.
fn record(i: usize) -> (Uri, Held) {
    let uri = format!("https://archive.example.org/records/{i:08}.xml")
        .parse()
        .unwrap();
    let mut md5 = [0u8; 16];
    md5[..8].copy_from_slice(&(i as u64).to_le_bytes());
    let mut sha256 = [0u8; 32];
    sha256[..8].copy_from_slice(&(i as u64).to_le_bytes());
    let held = Held::new()
        .with_length(1000 + i as u64 % 5000)
        .with_md5(Digest(md5))
        .with_sha256(Digest(sha256))
        .with_lastmod("2024-05-01T12:00:00Z".parse().unwrap());
    (uri, held)
}

/// A simulated Source answering in process.
struct InProcess<'a>(&'a Source);

impl Transport for InProcess<'_> {
    fn fetch(&mut self, request: http::Request<()>) -> Result<Response<'_>, String> {
        let answer = self.0.respond(&request.uri().to_string());
        let mut headers = http::HeaderMap::new();
        for (name, value) in &answer.headers {
            if let (Ok(name), Ok(value)) = (
                http::HeaderName::try_from(name.as_str()),
                http::HeaderValue::try_from(value.as_str()),
            ) {
                headers.insert(name, value);
            }
        }
        let status = http::StatusCode::from_u16(answer.status).map_err(|e| e.to_string())?;
        Ok(Response::new(
            status,
            headers,
            std::io::Cursor::new(answer.body),
        ))
    }
}

/// A Source of `CHANGES` resources, and `dir` synced from it with `held` more records in
/// its inventory (resources of another collection the same Destination holds); then the
/// Source changes every resource. What is left is the incremental sync, which the child
/// makes (building the same Source again).
fn prepare(dir: &Path, held: usize) {
    let source = simulated(false);
    let options = SyncOptions::new(source.uri(""), dir);
    let synced = blocking::sync(
        &options,
        &mut InProcess(&source),
        &StopToken::new(),
        &mut (),
    )
    .unwrap();
    assert!(synced.report.complete, "{synced}");
    {
        let dest = DirectoryDestination::open(dir).unwrap();
        let (_, mut inventory) = dest.load().unwrap();
        for chunk in (0..held).collect::<Vec<_>>().chunks(1_000_000) {
            inventory.import(chunk.iter().map(|&i| record(i))).unwrap();
        }
    }
}

/// The simulated Source: `CHANGES` resources, and then (`changed`) every one of them
/// changed. The same steps give the same documents (its clock is virtual): the child
/// builds it again rather than be handed it.
fn simulated(changed: bool) -> Source {
    let mut source = Source::new();
    for i in 0..CHANGES {
        source.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    source.tick(10);
    source.publish();
    if changed {
        source.tick(10);
        for i in 0..CHANGES {
            let changed = format!("resource {i}, changed");
            source.put(&format!("r/{i}.txt"), changed.as_bytes());
        }
        source.tick(10);
        source.publish();
    }
    source
}

/// The incremental sync of the changes.
fn sync_changes(dir: &Path, source: &Source) {
    let options = SyncOptions::new(source.uri(""), dir);
    let synced =
        blocking::sync(&options, &mut InProcess(source), &StopToken::new(), &mut ()).unwrap();
    assert!(synced.report.complete, "{synced}");
    assert_eq!(synced.mode, "incremental");
    assert_eq!(synced.report.updated, CHANGES as u64, "{synced}");
}

/// What a full inventory write costs in the design the inventory file replaced: every
/// record as JSON, written and synced.
fn full_write(inventory: &MemoryInventory, path: &Path) -> Duration {
    let started = Instant::now();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    serde_json::to_writer(&mut out, inventory).unwrap();
    let file = out.into_inner().unwrap();
    file.sync_all().unwrap();
    started.elapsed()
}

/// The median of `times`.
fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn bench(c: &mut Criterion) {
    let held = held_count();
    // On disk, where a Destination is: the commit's fsync is part of its cost.
    let work = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
    let dir = work.path().join("dest");
    let started = Instant::now();
    prepare(&dir, held);
    eprintln!(
        "inventory: {held} held resources prepared in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The memory of a process that only syncs the changes.
    let output = Command::new(std::env::current_exe().unwrap())
        .env(CHILD, &dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let resident: Option<usize> = String::from_utf8_lossy(&output.stdout).trim().parse().ok();

    // The save of CHANGES changes against a full write of the same inventory, rounds
    // alternated: the figures are medians.
    let inventory_file = dir.join(".resourcesync/inventory.redb");
    let mut whole = MemoryInventory::new();
    whole.extend((0..held).map(record));
    let json = work.path().join("inventory.json");
    let (mut saves, mut writes) = (Vec::new(), Vec::new());
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&inventory_file)
        .unwrap();
    let mut inventory = DiskInventory::open(file).unwrap();
    for round in 0..5 {
        for i in 0..CHANGES {
            let (uri, held) = record(i * 997 + round);
            inventory.record(uri, held.with_length(round as u64));
        }
        let started = Instant::now();
        inventory.save().unwrap();
        saves.push(started.elapsed());
        writes.push(full_write(&whole, &json));
    }
    drop(whole);
    let (save, write) = (median(saves), median(writes));
    let ratio = save.as_secs_f64() / write.as_secs_f64();
    eprintln!(
        "inventory/{held}: save of {CHANGES} changes {:.2} ms (median of 5), full inventory \
         write (the JSON design) {:.0} ms: {:.2} % of it (bound 5 %); a process syncing the \
         changes peaked at {} resident (bound 64 MiB)",
        save.as_secs_f64() * 1e3,
        write.as_secs_f64() * 1e3,
        ratio * 100.0,
        resident.map_or("? (no /proc)".into(), |r| format!(
            "{:.1} MiB",
            r as f64 / (1 << 20) as f64
        )),
    );
    assert!(
        ratio <= 0.05,
        "the save cost {:.2} % of a full write",
        ratio * 100.0
    );
    if let Some(resident) = resident {
        assert!(
            resident <= MAX_RESIDENT,
            "the sync peaked at {resident} bytes"
        );
    }

    let mut group = c.benchmark_group(format!("inventory of {held}"));
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    let mut round = 5;
    group.bench_function(format!("save of {CHANGES} changes"), |b| {
        b.iter(|| {
            round += 1;
            for i in 0..CHANGES {
                let (uri, held) = record(i * 991 + round);
                inventory.record(uri, held.with_length(round as u64));
            }
            inventory.save().unwrap();
        })
    });
    group.bench_function(format!("lookup of {CHANGES} held"), |b| {
        b.iter(|| {
            for i in 0..CHANGES {
                black_box(inventory.get(&record(i * 9973 % held).0));
            }
        })
    });
    group.finish();
    let _ = std::io::stderr().flush();
}

criterion_group!(benches, bench);

fn main() {
    // The child: the incremental sync of the changes, then the peak resident memory.
    if let Some(dir) = std::env::var_os(CHILD) {
        sync_changes(Path::new(&dir), &simulated(true));
        println!("{}", resourcesync_benches::peak_resident().unwrap_or(0));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
