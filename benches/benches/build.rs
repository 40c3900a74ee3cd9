//! `resourcesync build` of 100,000 files of 4 KiB, from scratch and after 1 % of them
//! changed, beside the hashing floor (every file read and run through `Fixity`, md5 and
//! sha-256 in one pass, on one thread, and the same on every core) and beside the Python
//! reference implementation's `resync-build --write-resourcelist --hash md5 --hash sha-256`
//! on the same directory, all in the same run.
//!
//! Beside the incremental build, its floor on this machine: the walk on every core and the
//! last Resource List's documents read and written again: the floor of an incremental build
//! that notices changes by size and modification time and rewrites the Resource List.
//!
//! The collection is generated once per process in `/dev/shm` when there is one (tmpfs: the
//! CPU's work is measured, not this machine's disk), 100 directories of 1,000 files. Each
//! full build publishes into a fresh publish directory, the last one removed outside the
//! timed part; each incremental iteration rewrites 1 % of the files (same size, new content
//! and modification time) outside the timed part, then times the build. `resync-build`
//! comes from `.venv` or `RESOURCESYNC_PYTHON`'s directory; without it that function is
//! skipped, saying so.
//!
//! `cargo bench -p resourcesync-benches --bench build`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use resourcesync_benches::peers::{median, time, timing};
use resourcesync_model::{Fixity, Uri};
use resourcesync_source::collection::{Options, build};
use resourcesync_testkit::python::python;

/// Files in the collection: 100,000 when measuring, fewer when `cargo test --benches`
/// runs each function once to check it.
fn files() -> usize {
    if std::env::args().any(|a| a == "--bench") {
        100_000
    } else {
        300
    }
}

/// Bytes per file.
const SIZE: usize = 4096;
/// Files per directory.
const PER_DIR: usize = 1000;
const BASE: &str = "http://example.com/";

fn relative(i: usize) -> String {
    format!("d{:03}/f{i:06}.txt", i / PER_DIR)
}

/// Writes the collection: `n` files of [`SIZE`] bytes under `root`.
fn generate(root: &Path, n: usize) -> Vec<PathBuf> {
    let mut paths = Vec::with_capacity(n);
    for i in 0..n {
        let path = root.join(relative(i));
        if i % PER_DIR == 0 {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        std::fs::write(&path, resourcesync_benches::bytes(i as u64 + 1, SIZE)).unwrap();
        paths.push(path);
    }
    paths
}

/// Reads every file and runs `Fixity` over it, on `threads` threads: the floor.
fn hash_all(paths: &[PathBuf], threads: usize) -> u64 {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut buffer = vec![0; 256 * 1024];
        let mut bytes = 0;
        loop {
            let Some(path) = paths.get(next.fetch_add(1, Ordering::Relaxed)) else {
                return bytes;
            };
            let mut file = std::fs::File::open(path).unwrap();
            let mut fixity = Fixity::new();
            loop {
                let n = std::io::Read::read(&mut file, &mut buffer).unwrap();
                if n == 0 {
                    break;
                }
                fixity.update(&buffer[..n]);
            }
            bytes += std::hint::black_box(fixity.finish()).length;
        }
    };
    if threads == 1 {
        return work();
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    })
}

/// Lists every directory under `dir` and takes every file's metadata relative to its
/// directory, as the build's walk does, building nothing: what any incremental build pays.
fn stat_all(dir: &Path) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let file_type = entry.file_type().unwrap();
        if file_type.is_dir() {
            files += stat_all(&entry.path());
        } else {
            std::hint::black_box(entry.metadata().unwrap().modified().unwrap());
            files += 1;
        }
    }
    files
}

/// [`stat_all`] on every core: each directory a task of a rayon scope, as the build's
/// walk reads the collection. The floor of an incremental build on this machine.
fn stat_all_parallel(dir: &Path, threads: usize) -> usize {
    fn directory<'s>(scope: &rayon::Scope<'s>, dir: PathBuf, files: &'s AtomicUsize) {
        let mut n = 0;
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                scope.spawn(move |scope| directory(scope, entry.path(), files));
            } else {
                std::hint::black_box(entry.metadata().unwrap().modified().unwrap());
                n += 1;
            }
        }
        files.fetch_add(n, Ordering::Relaxed);
    }
    let files = AtomicUsize::new(0);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.scope(|scope| directory(scope, dir.to_owned(), &files));
    files.into_inner()
}

/// The floor of an incremental run that notices changes by size and modification time and
/// writes the Resource List anew (as `build` does; patching it in place would be another
/// design): [`stat_all_parallel`], then the last Resource List's documents (`documents`)
/// read and written again into `out`, unsynced (the build syncs each document). It leaves
/// out everything else a run does (hashing what changed, the state, the Change List, the
/// rest of the documents).
fn incremental_floor(dir: &Path, threads: usize, documents: &[PathBuf], out: &Path) -> usize {
    let files = stat_all_parallel(dir, threads);
    for document in documents {
        let bytes = std::fs::read(document).unwrap();
        std::fs::write(out.join(document.file_name().unwrap()), bytes).unwrap();
    }
    files
}

fn resync_build() -> Option<PathBuf> {
    python("resync", &["resync-build"]).map(|python| python.with_file_name("resync-build"))
}

fn options() -> Options {
    Options::new(BASE.parse::<Uri>().unwrap())
}

fn bench(c: &mut Criterion) {
    let n = files();
    let collection_dir = resourcesync_benches::scratch("build-bench-collection");
    let collection = collection_dir.path().join("collection");
    let paths = generate(&collection, n);
    let bytes = (n * SIZE) as u64;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());

    let mut group = c.benchmark_group(format!("build {n} files of 4 KiB"));
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .measurement_time(Duration::from_secs(10))
        .throughput(criterion::Throughput::Bytes(bytes));

    // Each function's iteration times (criterion's warm-up included), for the ratios.
    let (mut full, mut hash_one, mut hash_all_cores) = (Vec::new(), Vec::new(), Vec::new());
    let (mut walk_one, mut walk_all_cores, mut resync_times) = (Vec::new(), Vec::new(), Vec::new());
    group.bench_function("resourcesync build, from scratch", |b| {
        let mut last = None;
        b.iter_custom(|iters| {
            timing(&mut full, iters, || {
                // The last publication removed outside the timed part.
                drop(last.take());
                let dir = resourcesync_benches::scratch("build-bench-publish");
                let publish = dir.path().join("publish");
                let mut report = None;
                let took = time(|| {
                    report = Some(
                        build(&collection, &publish, &options(), SystemTime::now(), &()).unwrap(),
                    )
                });
                let report = report.unwrap();
                assert_eq!(report.resources, n as u64);
                assert_eq!(report.hashed_files, n as u64);
                last = Some(dir);
                took
            })
        })
    });

    group.bench_function("hashing floor: read + Fixity, one thread", |b| {
        b.iter_custom(|iters| {
            timing(&mut hash_one, iters, || {
                time(|| assert_eq!(hash_all(&paths, 1), bytes))
            })
        })
    });

    group.bench_function(
        format!("hashing floor: read + Fixity, {cores} threads"),
        |b| {
            b.iter_custom(|iters| {
                timing(&mut hash_all_cores, iters, || {
                    time(|| assert_eq!(hash_all(&paths, cores), bytes))
                })
            })
        },
    );

    group.bench_function("walk floor: list every directory, stat every file", |b| {
        b.iter_custom(|iters| {
            timing(&mut walk_one, iters, || {
                time(|| assert_eq!(stat_all(&collection), n))
            })
        })
    });

    group.bench_function(
        format!("walk floor: the same on {cores} threads (a rayon task per directory)"),
        |b| {
            b.iter_custom(|iters| {
                timing(&mut walk_all_cores, iters, || {
                    time(|| assert_eq!(stat_all_parallel(&collection, cores), n))
                })
            })
        },
    );

    if let Some(resync) = resync_build() {
        group.bench_function(
            "resync-build --write-resourcelist --hash md5 --hash sha-256 (Python reference)",
            |b| {
                let mut last = None;
                b.iter_custom(|iters| {
                    timing(&mut resync_times, iters, || {
                        drop(last.take());
                        let dir = resourcesync_benches::scratch("build-bench-resync");
                        // Over 50,000 entries it writes an index, whose parts need URIs:
                        // the output directory is mapped too, and only the collection
                        // scanned.
                        let out = dir.path().join("resourcelist.xml");
                        let mut output = None;
                        let took = time(|| {
                            output = Some(
                                Command::new(&resync)
                                    .args([
                                        "--write-resourcelist",
                                        "--hash",
                                        "md5",
                                        "--hash",
                                        "sha-256",
                                    ])
                                    .arg("--paths")
                                    .arg(&collection)
                                    .arg("--outfile")
                                    .arg(&out)
                                    .arg(format!("{BASE}={}", collection.display()))
                                    .arg(format!("{BASE}resync-out/={}", dir.path().display()))
                                    .output()
                                    .unwrap(),
                            )
                        });
                        let output = output.unwrap();
                        assert!(
                            output.status.success(),
                            "{}",
                            String::from_utf8_lossy(&output.stderr)
                        );
                        assert!(out.exists());
                        last = Some(dir);
                        took
                    })
                })
            },
        );
    }

    // One publication, built outside the timing, then rebuilt after each change of 1 %.
    let publish_dir = resourcesync_benches::scratch("build-bench-incremental");
    let publish = publish_dir.path().join("publish");
    build(&collection, &publish, &options(), SystemTime::now(), &()).unwrap();
    let documents: Vec<PathBuf> = std::fs::read_dir(publish.join("resourcesync"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("resourcelist"))
        })
        .collect();
    let bytes_listed: u64 = documents
        .iter()
        .map(|d| std::fs::metadata(d).unwrap().len())
        .sum();
    assert!(bytes_listed > n as u64 * 200, "{documents:?}");
    let out = resourcesync_benches::scratch("build-bench-floor");
    let (mut floor, mut incremental) = (Vec::new(), Vec::new());
    group.bench_function(
        format!("incremental floor: walk floor on {cores} threads, then the Resource List's {bytes_listed} bytes read and written"),
        |b| {
            b.iter_custom(|iters| {
                timing(&mut floor, iters, || {
                    time(|| {
                        assert_eq!(incremental_floor(&collection, cores, &documents, out.path()), n)
                    })
                })
            })
        },
    );
    let changed = n / 100;
    let mut round = 0;
    group.bench_function("resourcesync build, incremental after 1 % changed", |b| {
        b.iter_custom(|iters| {
            timing(&mut incremental, iters, || {
                round += 1;
                // Every hundredth file, another hundredth each round: same size, new
                // content and modification time.
                for path in paths.iter().skip(round % 100).step_by(100) {
                    let seed = std::hint::black_box(round as u64 * 1_000_003 + 7);
                    let mut content = resourcesync_benches::bytes(seed, SIZE);
                    content[..8].copy_from_slice(&(round as u64).to_le_bytes());
                    std::fs::write(path, content).unwrap();
                }
                // Untimed: past the file system clock's granularity, so that the files
                // written are not racy (a build reads a file changed within 20 ms of its
                // start again the next time), as a real edit is long before a build.
                std::thread::sleep(std::time::Duration::from_millis(30));
                let mut report = None;
                let took = time(|| {
                    report = Some(
                        build(&collection, &publish, &options(), SystemTime::now(), &()).unwrap(),
                    )
                });
                let report = report.unwrap();
                assert_eq!(report.resources, n as u64);
                assert_eq!(report.hashed_files, changed as u64);
                assert_eq!(report.updated, changed as u64);
                took
            })
        })
    });
    group.finish();

    // One iteration each in test mode: no figure worth printing. A filter may have
    // skipped some functions: their ratios are not printed.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let m = |t: &mut Vec<f64>| (!t.is_empty()).then(|| median(t));
    let (full, hash_one, hash_all_cores) = (m(&mut full), m(&mut hash_one), m(&mut hash_all_cores));
    let (walk_one, walk_all_cores, resync) = (
        m(&mut walk_one),
        m(&mut walk_all_cores),
        m(&mut resync_times),
    );
    let (floor, incremental) = (m(&mut floor), m(&mut incremental));
    println!("build {n} files of 4 KiB: medians of every iteration (warm-up included)");
    for (name, time) in [
        ("build, from scratch", full),
        ("hashing floor, one thread", hash_one),
        ("hashing floor, every core", hash_all_cores),
        ("walk floor, one thread", walk_one),
        ("walk floor, every core", walk_all_cores),
        ("resync-build", resync),
        ("incremental floor", floor),
        ("build, incremental after 1 % changed", incremental),
    ] {
        if let Some(time) = time {
            println!("  {name}: {:.1} ms", time * 1e3);
        }
    }
    if let (Some(full), Some(hash_one)) = (full, hash_one) {
        println!(
            "  build's throughput / the one-thread hashing floor's: {:.2}",
            hash_one / full
        );
    }
    if let (Some(full), Some(resync)) = (full, resync) {
        println!(
            "  build's throughput / resync-build's: {:.2}",
            resync / full
        );
    }
    if let (Some(floor), Some(incremental)) = (floor, incremental) {
        println!(
            "  incremental build / its floor (time): {:.2} (issue 21: at most 1.5)",
            incremental / floor
        );
    }
    if let (Some(full), Some(incremental)) = (full, incremental) {
        println!(
            "  incremental build / full build (time): {:.1} %",
            incremental / full * 100.0
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
