//! `resourcesync sync` of 10,000 small resources from a fast local server, beside the
//! Python reference client (`resync-sync --baseline`) on the same Source in the same run,
//! and beside the ceiling: plain GETs of the same 10,000 URLs, 16 at a time, each body
//! written to a file, with no client logic at all (what the server and the machine allow).
//!
//! The Source is served from memory by axum on 127.0.0.1 (resources of 1 KiB, one
//! Resource List), and each sync writes into a fresh directory in memory (`/dev/shm` when
//! there is one), so that the clients are what is measured: on this machine's ext4 disk,
//! creating 10,000 files right after the last iteration deleted 10,000 spent most of the
//! time in the kernel's inode allocation, for every client alike. `resync-sync` comes from `.venv` (`.ci/run` installs it) or
//! `RESOURCESYNC_PYTHON`'s directory; without it that function is skipped, saying so.
//!
//! `cargo bench -p resourcesync-benches --bench sync`

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use resourcesync_cli::sync::{SyncOptions, sync};
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

/// A fresh directory in memory when the machine has `/dev/shm`, else in the temporary
/// directory.
fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("sync-bench")
            .tempdir_in(shm)
        {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

fn files(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir.join("resources"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn resync_sync() -> Option<PathBuf> {
    python("resync", &["resync-sync"]).map(|python| python.with_file_name("resync-sync"))
}

fn bench(c: &mut Criterion) {
    let n = resources();
    let served = serve(n);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group(format!("sync {n} resources of 1 KiB"));
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(20));

    group.bench_function("resourcesync sync, 16 in flight", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let dir = scratch();
                let dest = dir.path().join("dest");
                let options =
                    SyncOptions::new(served.base.parse().unwrap(), &dest).with_concurrency(16);
                let start = Instant::now();
                let status = runtime.block_on(sync(&options)).unwrap();
                total += start.elapsed();
                assert_eq!(status, 0);
                assert_eq!(files(&dest), n, "the destination is complete");
            }
            total
        })
    });

    group.bench_function(
        "plain GETs of the same URLs written to files, 16 in flight (the ceiling)",
        |b| {
            let http = reqwest::Client::new();
            let urls: Vec<String> = (0..n)
                .map(|i| format!("{}resources/{i}", served.base))
                .collect();
            b.iter_custom(|iters| {
                let mut elapsed = Duration::ZERO;
                for _ in 0..iters {
                    let dir = scratch();
                    let out = Arc::new(dir.path().to_owned());
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
                    elapsed += start.elapsed();
                    assert_eq!(got, n * 1024);
                }
                elapsed
            })
        },
    );

    if let Some(resync) = resync_sync() {
        group.bench_function("resync-sync --baseline (Python reference client)", |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = scratch();
                    let dest = dir.path().join("dest");
                    let start = Instant::now();
                    let out = Command::new(&resync)
                        .args([
                            "--baseline",
                            "--sitemap",
                            &format!("{}resourcelist.xml", served.base),
                        ])
                        .arg(format!("{}={}", served.base, dest.display()))
                        .output()
                        .unwrap();
                    total += start.elapsed();
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    assert_eq!(files(&dest), n, "the destination is complete");
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
