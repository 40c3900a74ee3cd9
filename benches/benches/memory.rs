//! `resourcesync validate` of one 1,000,000-entry Resource List (309 MiB, past the
//! Sitemap protocol's 50,000 entries and 50 MiB, which it reports), in memory that does
//! not grow with the document: at most 8 MiB (issue 21), asserted in test mode too, and
//! timed beside the floor, the raw quick-xml loop over the same file.
//!
//! The document is written once to a file in the temporary directory, entry by entry
//! (`resourcesync_benches::write_single_document`, as `examples/generate.rs --single`
//! writes it). Memory is measured twice, before criterion runs:
//! - the validation's own heap peak, over what was allocated before it started, by this
//!   binary's counting allocator ([`resourcesync_benches::alloc`]);
//! - on Linux, the peak resident memory (`VmHWM`) of a process that does nothing but the
//!   validation: this binary run again with `MEMORY_VALIDATE` naming the file. It counts
//!   the program's touched code and stack too, as `/usr/bin/time -v resourcesync
//!   validate` does (benches/README.md, "Memory of `resourcesync validate`").
//!
//! `cargo bench -p resourcesync-benches --bench memory`

use std::hint::black_box;
use std::io::BufReader;
use std::path::Path;
use std::process::Command;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group};
use resourcesync_benches::alloc::{self, Counting};
use resourcesync_cli::validate::{ValidateOptions, validate};
use resourcesync_model::Rule;

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const ENTRIES: u64 = 1_000_000;
/// The bound the issue sets, for the heap and for the whole process.
const MAX_BYTES: usize = 8 << 20;
/// The environment variable that makes this binary the child that validates one file.
const CHILD: &str = "MEMORY_VALIDATE";

/// What `resourcesync validate FILE` does, without the printing: the report's entries,
/// and the rules it found broken.
fn validated(path: &Path) -> (u64, Vec<Rule>) {
    let mut broken = Vec::new();
    let report = validate(&ValidateOptions::new(path), |f| broken.push(f.rule));
    assert!(report.unreadable.is_none(), "{:?}", report.unreadable);
    (report.entries, broken)
}

/// The peak resident memory of a process of this binary that validates `path`.
fn child_peak_resident(path: &Path) -> Option<usize> {
    resourcesync_benches::peak_resident()?;
    let output = Command::new(std::env::current_exe().ok()?)
        .env(CHILD, path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().parse().ok()
}

fn mib(n: usize) -> f64 {
    n as f64 / (1 << 20) as f64
}

fn bench(c: &mut Criterion) {
    // On disk, not in `/dev/shm` as other benches: 309 MiB is more than some machines'
    // (a container's 64 MiB by default), and the page cache serves the reads alike.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("resourcelist.xml");
    resourcesync_benches::write_single_document(&path, ENTRIES).unwrap();
    let bytes = std::fs::metadata(&path).unwrap().len();

    let (result, heap) = alloc::own_peak(|| validated(&path));
    // The Sitemap protocol's limits, and nothing else.
    assert_eq!(result, (ENTRIES, vec![Rule::MaxEntries, Rule::MaxBytes]));
    let resident = child_peak_resident(&path);
    eprintln!(
        "memory/validate-1m: {} MiB document; the validation's own heap peak {:.2} MiB; \
         a process that only validates it: peak resident {}",
        bytes >> 20,
        mib(heap),
        resident.map_or("not measured (no /proc)".into(), |r| format!(
            "{:.2} MiB",
            mib(r)
        )),
    );
    assert!(heap <= MAX_BYTES, "validate's heap peaked at {heap} bytes");
    if let Some(resident) = resident {
        assert!(
            resident <= MAX_BYTES,
            "a process validating the document peaked at {resident} resident bytes"
        );
    }

    let mut group = c.benchmark_group("validate 1,000,000-entry document");
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .throughput(Throughput::Bytes(bytes));
    group.bench_function("resourcesync validate", |b| {
        b.iter(|| black_box(validated(&path)))
    });
    group.bench_function("raw quick-xml loop (floor)", |b| {
        b.iter(|| {
            let file = std::fs::File::open(&path).unwrap();
            black_box(resourcesync_benches::raw_loop(BufReader::new(file)))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);

fn main() {
    // The child: validate, then say the peak resident memory, nothing else.
    if let Some(path) = std::env::var_os(CHILD) {
        let (entries, _) = validated(Path::new(&path));
        assert_eq!(entries, ENTRIES);
        println!("{}", resourcesync_benches::peak_resident().unwrap_or(0));
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
