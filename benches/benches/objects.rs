//! A Source copied into object storage (issue 32): `resourcesync sync URL s3://...` beside
//! `rclone copy`, both from nginx into s3s-fs (a Rust S3 server over a directory, in
//! `/dev/shm` when there is one), for the two collections (10,000 files of 1 KiB,
//! 200 of 1 MiB):
//! - **sync**: `asynchronous::sync_into` with an `objects::ObjectDestination`, what `sync
//!   SOURCE-URL s3://BUCKET/PREFIX` runs: the publication's documents read, every body
//!   checked against its length and the strongest listed digest (sha-256), then PUT with
//!   `If-None-Match: *` and the sync's mark in its metadata; 16 requests in flight, 16
//!   uploads at once;
//! - **rclone**: Debian's rclone 1.60, `rclone copy --transfers 8` from nginx's listing of
//!   the same files (its HTTP backend reads the `autoindex` pages) into the same server:
//!   it checks each object's MD5 against the ETag s3s-fs returns, nothing against a list.
//!
//! - **sync unsigned**: the same with `aws_unsigned_payload`, the PUTs' payload unsigned
//!   (`X-Amz-Content-Sha256: UNSIGNED-PAYLOAD`), as rclone sends them over plain HTTP too
//!   (seen with `--dump headers`) and as the sync does by default over HTTPS: no SHA-256
//!   of every body on either side. The like-for-like figure beside rclone.
//!
//! - **sync unsigned, every digest**: the same with `--verify all` (md5 beside sha-256),
//!   what a user who asks for every listed digest pays.
//!
//! Beside the two collections a third of one file of 1 KiB: the time a run takes
//! whatever it copies (the lease taken and read back, the documents read, the state
//! saved), against rclone's.
//!
//! Each round copies into a fresh prefix, rotating which goes first; every copy is
//! checked to hold every file, then deleted. Printed: each round's times, the medians, and rclone's time
//! over each sync's (the target: at least 1). `OBJECTS_ROUNDS` rounds (3). In test
//! mode (`cargo test --benches`) 100 small, 4 large and the one file, one round.
//!
//! nginx, rclone and s3s-fs come from the system (`.ci/run` installs them); without one,
//! the bench says so and skips, except on CI (`CI` set), where it fails.
//!
//! `cargo bench -p resourcesync-benches --bench objects`

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{StreamExt as _, TryStreamExt as _};
use object_store::ObjectStore;
use resourcesync_benches::peers::{median, program};
use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{self, AsyncStop};
use resourcesync_destination::gate::Gate;
use resourcesync_destination::objects::ObjectDestination;
use resourcesync_model::Verification;
use resourcesync_testkit::s3::{self, Kind, S3Server};

#[path = "shared/web.rs"]
mod web;
use web::{LARGE, Nginx, SMALL, Size, free_port, generate, publish};

/// The allocator the `resourcesync` command runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let rounds = std::env::var("OBJECTS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench { 3 } else { 1 });
    let (Some(nginx), Some(rclone)) =
        (program("nginx", "nginx-light"), program("rclone", "rclone"))
    else {
        return;
    };
    let s3s = match s3::find(Kind::S3sFs) {
        Ok(s3s) => s3s,
        Err(missing) => {
            assert!(!missing.required, "{}", missing.why);
            eprintln!("skipped: {}", missing.why);
            return;
        }
    };
    let server = S3Server::start(Kind::S3sFs, &s3s, "bench");
    let bucket = Bucket::of(&server);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // `OBJECTS_SIZES=small` (or `large`) measures one collection alone.
    let only = std::env::var("OBJECTS_SIZES").unwrap_or_default();
    // One file: what a run costs whatever it copies.
    const ONE: Size = Size {
        name: "one",
        files: 1,
        len: |_| 1 << 10,
    };
    for size in [SMALL, LARGE, ONE] {
        if !only.is_empty() && !only.split(',').any(|s| s == size.name) {
            continue;
        }
        let files = if bench {
            size.files
        } else {
            (size.files / 50).max(1)
        };
        let collection = generate(&size, files);
        let port = free_port();
        let (_dir, publication) = publish(&collection, &format!("http://127.0.0.1:{port}/"));
        let nginx = Nginx::start_with(&nginx, port, &publication, true);
        const NAMES: [&str; 4] = ["sync", "sync-unsigned", "sync-unsigned-all", "rclone"];
        let mut times: [Vec<f64>; 4] = Default::default();
        for round in 0..rounds {
            for turn in 0..NAMES.len() {
                // Rotated: which goes first changes every round.
                let which = (round + turn) % NAMES.len();
                let prefix = format!("{}-{round}-{}", size.name, NAMES[which]);
                let (signed, unsigned) = (Payload::Signed, Payload::Unsigned);
                let strongest = Verification::Strongest;
                let took = match which {
                    0 => ours(&runtime, &server, &nginx.base, &prefix, signed, strongest),
                    1 => ours(&runtime, &server, &nginx.base, &prefix, unsigned, strongest),
                    2 => ours(
                        &runtime,
                        &server,
                        &nginx.base,
                        &prefix,
                        unsigned,
                        Verification::All,
                    ),
                    _ => theirs(
                        &rclone,
                        &server,
                        &format!("{}{}/", nginx.base, size.name),
                        &prefix,
                    ),
                };
                let stored = bucket.count(&format!("{prefix}/"), size.name);
                assert_eq!(stored, files, "{prefix}: {stored} of {files} objects");
                // Out of the way of the next copies (and of the disk).
                bucket.delete(&prefix);
                times[which].push(took.as_secs_f64());
            }
        }
        let medians: Vec<f64> = times.iter().map(|t| median(&mut t.clone())).collect();
        println!("{} ({files} files, {} bytes):", size.name, collection.bytes);
        for (name, (times, median)) in NAMES.iter().zip(times.iter().zip(&medians)) {
            print!("  {name}: {times:?} s, median {median:.3} s");
            if *name != "rclone" {
                print!("; rclone / {name} {:.2}", medians[3] / median);
            }
            println!();
        }
    }
}

/// How the PUTs' payload goes.
#[derive(Clone, Copy, PartialEq)]
enum Payload {
    /// Signed (its SHA-256 in the signature): the default over plain HTTP.
    Signed,
    /// `UNSIGNED-PAYLOAD`, as rclone sends it and the sync does over HTTPS.
    Unsigned,
}

/// `sync` of the publication at `base` into `s3://bench/PREFIX`, in process, spawned on
/// the runtime as the command runs it.
fn ours(
    runtime: &tokio::runtime::Runtime,
    server: &S3Server,
    base: &str,
    prefix: &str,
    payload: Payload,
    verification: Verification,
) -> Duration {
    let url: url::Url = format!("s3://{}/{prefix}", server.bucket).parse().unwrap();
    let options = SyncOptions::new(base.parse().unwrap(), prefix)
        .with_concurrency(16)
        .with_verification(verification);
    let mut store = server.options();
    if payload == Payload::Unsigned {
        store.push(("aws_unsigned_payload".into(), "true".into()));
    }
    let started = Instant::now();
    let run = async move {
        let open = |options: &SyncOptions| {
            Ok(ObjectDestination::open_for(
                &url,
                &store,
                ObjectDestination::LEASE,
                options,
            )?)
        };
        let (gate, stop) = (Gate::unlimited(), AsyncStop::new());
        asynchronous::sync_into(&options, open, &gate, &stop, &mut ()).await
    };
    let synced = resourcesync_benches::spawned(runtime, run).unwrap();
    let took = started.elapsed();
    assert!(synced.report.complete, "{synced}");
    took
}

/// `rclone copy --transfers 8` of nginx's listing at `url` into `s3://bench/PREFIX`.
fn theirs(rclone: &Path, server: &S3Server, url: &str, prefix: &str) -> Duration {
    let target = format!(
        ":s3,provider=Other,endpoint='{}',access_key_id={},secret_access_key={},region=us-east-1:{}/{prefix}/{}",
        server.endpoint,
        s3::ACCESS_KEY,
        s3::SECRET_KEY,
        server.bucket,
        url.trim_end_matches('/').rsplit('/').next().unwrap()
    );
    let mut command = Command::new(rclone);
    command
        .args(["copy", "--transfers", "8", "--config", "/dev/null"])
        // A CA bundle of the machine's is for HTTPS; rclone's S3 client refuses to start
        // with one over its plain-HTTP transport.
        .env_remove("AWS_CA_BUNDLE")
        .arg(format!(":http,url='{url}':"))
        .arg(target);
    let started = Instant::now();
    let out = command.output().unwrap();
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "rclone: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    took
}

/// The bucket, to count what each copy stored.
struct Bucket {
    store: Arc<dyn ObjectStore>,
    runtime: tokio::runtime::Runtime,
}

impl Bucket {
    fn of(server: &S3Server) -> Bucket {
        let mut builder =
            object_store::aws::AmazonS3Builder::new().with_bucket_name(&server.bucket);
        for (key, value) in server.options() {
            builder = builder.with_config(key.parse().unwrap(), value);
        }
        Bucket {
            store: Arc::new(builder.build().unwrap()),
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
        }
    }

    /// Deletes every object under `prefix/`.
    fn delete(&self, prefix: &str) {
        let prefix = object_store::path::Path::parse(prefix).unwrap();
        self.runtime.block_on(async {
            let keys = self
                .store
                .list(Some(&prefix))
                .map_ok(|meta| meta.location)
                .boxed();
            self.store
                .delete_stream(keys)
                .try_collect::<Vec<_>>()
                .await
                .unwrap();
        });
    }

    /// Objects under `prefix` in the collection's directory `name` (the sync's own
    /// `.resourcesync/` and the publication's documents are not among them).
    fn count(&self, prefix: &str, name: &str) -> usize {
        let keys: Vec<String> = self.runtime.block_on(async {
            self.store
                .list(Some(&object_store::path::Path::parse(prefix).unwrap()))
                .map_ok(|meta| meta.location.to_string())
                .try_collect()
                .await
                .unwrap()
        });
        keys.iter()
            .filter(|k| k.starts_with(&format!("{prefix}{name}/")))
            .count()
    }
}
