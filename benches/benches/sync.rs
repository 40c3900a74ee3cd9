//! `resourcesync sync` of 10,000 small resources from a fast local server, beside the
//! Python reference client (`resync-sync --baseline`) on the same Source in the same run,
//! beside wget2 (16 threads) and aria2c (16 downloads, checking each md5) fetching the same
//! URLs, and beside the ceiling: plain GETs of the same 10,000 URLs, 16 at a time, each body
//! written to a file, with no client logic at all (what the server and the machine allow).
//! After the group, each function's median (criterion's warm-up included) and the ratio
//! of `sync`'s throughput to each other's are printed.
//!
//! The Source is served from memory by axum on 127.0.0.1 (resources of 1 KiB, one
//! Resource List), and each sync writes into a fresh directory in memory (`/dev/shm` when
//! there is one), so that the clients are what is measured: on this machine's ext4 disk,
//! creating 10,000 files right after the last iteration deleted 10,000 spent most of the
//! time in the kernel's inode allocation, for every client alike. `resync-sync` comes from
//! `.venv` (`.ci/run` installs it) or `RESOURCESYNC_PYTHON`'s directory, wget2 and aria2c
//! from the system (`.ci/run` installs them); without one, that function is skipped,
//! saying so, except on CI, where it fails.
//!
//! `cargo bench -p resourcesync-benches --bench sync`

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The allocator the `resourcesync` command runs with (its `main.rs` says why): what is
/// measured here is the command's `sync` and `serve`, in process.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, criterion_group, criterion_main};
use resourcesync_benches::peers;
use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{AsyncStop, sync};
use resourcesync_model::Fixity;
use resourcesync_testkit::python::python;

use resourcesync_testkit::source as sim;

/// Resources in the Source: 10,000 when measuring, fewer when `cargo test --benches`
/// runs each function once to check it.
fn resources() -> usize {
    if std::env::args().any(|a| a == "--bench") {
        10_000
    } else {
        300
    }
}

/// The Source, served until the runtime is dropped.
struct Served {
    base: String,
    _runtime: tokio::runtime::Runtime,
}

fn serve(n: usize) -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    let mut source = sim::Source::new();
    source.base = base.clone();
    for i in 0..n {
        source.put(
            &format!("resources/{i}"),
            &resourcesync_benches::bytes(i as u64 + 1, 1024),
        );
    }
    source.publish.list_part = 50_000;
    source.tick(1);
    source.publish();
    // Everything the server answers, ready in memory.
    let mut answers = std::collections::HashMap::new();
    for (path, response) in &source.files {
        answers.insert(format!("/{path}"), response.body.clone());
    }
    for (path, (bytes, _)) in &source.resources {
        answers.insert(format!("/{path}"), bytes.clone());
    }
    let answers = Arc::new(answers);
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri| {
        let answers = answers.clone();
        async move {
            match answers.get(uri.path()) {
                Some(body) => (axum::http::StatusCode::OK, body.clone()),
                None => (axum::http::StatusCode::NOT_FOUND, Vec::new()),
            }
        }
    });
    runtime.spawn(async move { axum::serve(listener, app).await.unwrap() });
    Served {
        base,
        _runtime: runtime,
    }
}

fn files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("resources"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn resync_sync() -> Option<PathBuf> {
    python("resync", &["resync-sync"]).map(|python| python.with_file_name("resync-sync"))
}

/// The path (under the base) and md5 of every resource, as the peers' input files list
/// them.
fn listed(n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|i| {
            let mut fixity = Fixity::new();
            fixity.update(&resourcesync_benches::bytes(i as u64 + 1, 1024));
            (format!("resources/{i}"), fixity.finish().md5.to_string())
        })
        .collect()
}

/// Runs `fetch` into a fresh directory for each of criterion's iterations, checks that
/// the directory then holds every resource, and keeps each iteration's time in `times`.
fn measured(
    b: &mut criterion::Bencher<'_>,
    n: usize,
    times: &mut Vec<f64>,
    mut fetch: impl FnMut(&Path) -> Duration,
) {
    b.iter_custom(|iters| {
        peers::timing(times, iters, || {
            let dir = resourcesync_benches::scratch("sync-bench");
            let dest = dir.path().join("dest");
            let took = fetch(&dest);
            assert_eq!(files(&dest), n, "the destination is complete");
            took
        })
    })
}

fn bench(c: &mut Criterion) {
    let n = resources();
    let served = serve(n);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let lists = tempfile::tempdir().unwrap();
    let listed = listed(n);
    let list = |name: &str, line: fn(&str, &str, &str) -> String| {
        let path = lists.path().join(name);
        let resources = listed.iter().map(|(p, m)| (p.as_str(), m.as_str()));
        peers::input_file(&path, &served.base, resources, line);
        path
    };
    let wget2 = peers::program("wget2", "wget2").map(|p| (p, list("wget2", peers::wget2_line)));
    let aria2c = peers::program("aria2c", "aria2").map(|p| (p, list("aria2c", peers::aria2c_line)));
    let resync = resync_sync();

    let mut group = c.benchmark_group(format!("sync {n} resources of 1 KiB"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));
    // Every iteration's time of each function, criterion's warm-up included.
    let mut times: Vec<(&str, Vec<f64>)> = Vec::new();

    let mut t = Vec::new();
    group.bench_function(SYNC, |b| {
        measured(b, n, &mut t, |dest| {
            let options = SyncOptions::new(served.base.parse().unwrap(), dest).with_concurrency(16);
            let start = Instant::now();
            let run = async move { sync(&options, &AsyncStop::new(), &mut ()).await };
            let synced = resourcesync_benches::spawned(&runtime, run);
            let took = start.elapsed();
            assert_eq!(synced.unwrap().exit_status(), 0);
            took
        })
    });
    times.push((SYNC, t));

    let mut t = Vec::new();
    let urls: Vec<String> = (0..n)
        .map(|i| format!("{}resources/{i}", served.base))
        .collect();
    let http = reqwest::Client::new();
    group.bench_function(CEILING, |b| {
        measured(b, n, &mut t, |dest| {
            // As sync lays the files out: under `resources/`.
            let out = Arc::new(dest.join("resources"));
            std::fs::create_dir_all(&*out).unwrap();
            let start = Instant::now();
            let got = runtime.block_on(async {
                let semaphore = Arc::new(tokio::sync::Semaphore::new(16));
                let mut tasks = Vec::new();
                for url in &urls {
                    let permit = semaphore.clone().acquire_owned().await.unwrap();
                    let (http, url, out) = (http.clone(), url.clone(), out.clone());
                    tasks.push(tokio::spawn(async move {
                        let response = http.get(&url).send().await.unwrap();
                        let bytes = response.bytes().await.unwrap();
                        let name = url.rsplit('/').next().unwrap().to_owned();
                        tokio::fs::write(out.join(name), &bytes).await.unwrap();
                        drop(permit);
                        bytes.len()
                    }));
                }
                let mut total = 0;
                for t in tasks {
                    total += t.await.unwrap();
                }
                total
            });
            let took = start.elapsed();
            assert_eq!(got, n * 1024);
            took
        })
    });
    times.push((CEILING, t));

    if let Some((wget2, list)) = &wget2 {
        let mut t = Vec::new();
        group.bench_function(WGET2, |b| {
            measured(b, n, &mut t, |dest| {
                // wget2 saves each URL's last segment in the directory it is given.
                peers::wget2(wget2, list, &dest.join("resources"), 16)
            })
        });
        times.push((WGET2, t));
    }

    if let Some((aria2c, list)) = &aria2c {
        let mut t = Vec::new();
        group.bench_function(ARIA2C, |b| {
            measured(b, n, &mut t, |dest| peers::aria2c(aria2c, list, dest, 16))
        });
        times.push((ARIA2C, t));
    }

    if let Some(resync) = &resync {
        let mut t = Vec::new();
        group.bench_function(RESYNC, |b| {
            measured(b, n, &mut t, |dest| {
                let start = Instant::now();
                let out = Command::new(resync)
                    .args([
                        "--baseline",
                        "--sitemap",
                        &format!("{}resourcelist.xml", served.base),
                    ])
                    .arg(format!("{}={}", served.base, dest.display()))
                    .output()
                    .unwrap();
                let took = start.elapsed();
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                took
            })
        });
        times.push((RESYNC, t));
    }
    group.finish();

    // One iteration each in test mode: no figure worth printing.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let medians: Vec<(&str, f64)> = times
        .iter_mut()
        .map(|(name, t)| (*name, peers::median(t)))
        .collect();
    println!("sync {n} resources of 1 KiB: medians of every iteration (warm-up included)");
    for (name, time) in &medians {
        println!("  {name}: {time:.3} s");
    }
    let ours = medians[0].1;
    for (name, time) in &medians[1..] {
        println!(
            "  throughput of resourcesync sync / of {name}: {:.2}",
            time / ours
        );
    }
}

const SYNC: &str = "resourcesync sync, 16 in flight";
const CEILING: &str = "plain GETs of the same URLs written to files, 16 in flight (the ceiling)";
const WGET2: &str = "wget2, 16 threads";
const ARIA2C: &str = "aria2c, 16 downloads, md5s checked";
const RESYNC: &str = "resync-sync --baseline (Python reference client)";

criterion_group!(benches, bench);
criterion_main!(benches);
