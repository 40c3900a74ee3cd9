//! `resourcesync sync URL s3://BUCKET/PREFIX`: a Source kept in a bucket's prefix on real
//! S3 servers (moto_server, s3s-fs; `resourcesync_testkit::s3`), every promise of the
//! directory in the terms of objects: nothing written or deleted outside the prefix, an
//! object no sync stored never replaced (unless asked) nor deleted, one edited since
//! kept, the audit reading the objects' bytes, one sync at a time, a killed sync resumed
//! without losing what it stored, shards filling one prefix as one sync would (one of
//! them killed and rerun, the whole audited as one), and the object server killed in the
//! middle of a sync and started again losing nothing.

use std::collections::BTreeMap;
use std::process::{Child, Command, ExitCode, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::TryStreamExt as _;
use object_store::ObjectStore;
use object_store::path::Path as Key;
use resourcesync_testkit::driver::text;
use resourcesync_testkit::needs;
use resourcesync_testkit::s3::{self, Kind, S3Server};
use resourcesync_testkit::served::{Fault, Served};

#[path = "common/process.rs"]
mod process;

fn main() -> ExitCode {
    let moto = s3::find(Kind::Moto);
    let s3s = s3::find(Kind::S3sFs);
    needs::main(vec![
        needs::trial("a_sync_into_moto_keeps_every_promise", &moto, |program| {
            promises(Kind::Moto, &program)
        }),
        needs::trial("a_sync_into_s3s_fs_keeps_every_promise", &s3s, |program| {
            promises(Kind::S3sFs, &program)
        }),
        // moto only: s3s-fs takes a PUT into a bucket it does not have (its bucket is a
        // directory, made by the write).
        needs::trial(
            "a_bucket_that_is_not_there_is_named_on_one_line",
            &moto,
            |program| missing_bucket(Kind::Moto, &program),
        ),
        needs::trial(
            "a_killed_sync_resumes_once_its_lease_ran_out",
            &s3s,
            |program| killed_sync(&program),
        ),
        needs::trial(
            "shards_fill_one_prefix_as_one_sync_would",
            &s3s,
            |program| shards(&program),
        ),
        needs::trial(
            "many_sources_into_prefixes_of_one_bucket",
            &s3s,
            |program| many_sources(&program),
        ),
        needs::trial(
            "two_syncs_started_at_once_into_one_prefix_one_runs_the_other_is_refused",
            &s3s,
            |program| raced(&program),
        ),
        needs::trial(
            "the_object_server_killed_mid_sync_and_restarted_loses_nothing",
            &s3s,
            |program| killed_server(&program),
        ),
    ])
}

/// The bucket, through the same crate the command uses.
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

    fn put(&self, key: &str, bytes: &[u8]) {
        let store = self.store.clone();
        let payload = object_store::PutPayload::from(bytes.to_vec());
        self.runtime
            .block_on(store.put(&Key::parse(key).unwrap(), payload))
            .unwrap();
    }

    fn delete(&self, key: &str) {
        self.runtime
            .block_on(self.store.delete(&Key::parse(key).unwrap()))
            .unwrap();
    }

    fn get(&self, key: &str) -> Option<Vec<u8>> {
        self.runtime.block_on(async {
            match self.store.get(&Key::parse(key).unwrap()).await {
                Ok(found) => Some(found.bytes().await.unwrap().to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("{key}: {e}"),
            }
        })
    }

    /// How many resources `prefix/` holds (its `.resourcesync/` left out), listed, not
    /// read.
    fn count(&self, prefix: &str) -> usize {
        let keys: Vec<String> = self.runtime.block_on(async {
            self.store
                .list(Some(&Key::parse(prefix).unwrap()))
                .map_ok(|meta| meta.location.to_string())
                .try_collect()
                .await
                .unwrap()
        });
        let kept = format!("{prefix}/.resourcesync/");
        keys.iter().filter(|k| !k.starts_with(&kept)).count()
    }

    /// Every object's key and bytes.
    fn objects(&self) -> BTreeMap<String, Vec<u8>> {
        let keys: Vec<String> = self.runtime.block_on(async {
            self.store
                .list(None)
                .map_ok(|meta| meta.location.to_string())
                .try_collect()
                .await
                .unwrap()
        });
        // An object listed may be gone when read (a lease let go): left out.
        keys.into_iter()
            .filter_map(|key| {
                let bytes = self.get(&key)?;
                Some((key, bytes))
            })
            .collect()
    }

    /// The resources under `prefix/` (its `.resourcesync/` left out), by path.
    fn resources(&self, prefix: &str) -> BTreeMap<String, Vec<u8>> {
        self.objects()
            .into_iter()
            .filter_map(|(key, bytes)| {
                let path = key.strip_prefix(&format!("{prefix}/"))?.to_owned();
                (!path.starts_with(".resourcesync/")).then_some((path, bytes))
            })
            .collect()
    }
}

fn resourcesync(args: &[&str], server: &S3Server) -> Output {
    command(args, server).output().unwrap()
}

fn command(args: &[&str], server: &S3Server) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_resourcesync"));
    // The store's settings as the command's options; no AWS_* of the machine's.
    command
        .args(args)
        .args(server.store_args())
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT")
        .env_remove("AWS_ENDPOINT_URL");
    command
}

fn spawn(args: &[&str], server: &S3Server) -> Child {
    command(args, server)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn summary(out: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str::<serde_json::Value>(last).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
        ["summary"]
        .clone()
}

/// Waits (bounded) until `prefix/` holds at least `n` resources.
fn until_stored(bucket: &Bucket, prefix: &str, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while bucket.count(prefix) < n {
        assert!(Instant::now() < deadline, "fewer than {n} objects stored");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A sync into a bucket the server does not have: it cannot start (2), and says so on one
/// line with the server's code and message, not the XML document the server answered with
/// (which object_store's error holds whole, over several lines).
fn missing_bucket(kind: Kind, program: &std::path::Path) {
    let server = S3Server::start(kind, program, "present");
    let served = Served::start(|s| {
        s.put("a.txt", b"a");
    });
    let out = resourcesync(&["sync", served.base.as_str(), "s3://absent/copy"], &server);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{}", text(&out));
    assert!(stderr.contains("NoSuchBucket"), "{}", text(&out));
    assert!(!stderr.contains('<'), "{}", text(&out));
    // Its duration, which differs from run to run, is not said either.
    assert!(!stderr.contains("ms -"), "{}", text(&out));
}

fn promises(kind: Kind, program: &std::path::Path) {
    let server = S3Server::start(kind, program, "mirror");
    let bucket = Bucket::of(&server);
    let served = Served::start(|s| {
        for i in 0..30 {
            s.put(
                &format!("r/{i}.txt"),
                format!("resource {i}").repeat(i + 1).as_bytes(),
            );
        }
        s.put("deep/a/b/c.bin", &[7u8; 5000]);
        // Past a whole PUT (ObjectDestination::WHOLE_PUT, 16 MiB): its first 16 MiB held
        // in memory, then all of it spilled to its temporary file, and up as a multipart
        // upload from there.
        let big: Vec<u8> = (0..17u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
            .collect();
        s.put("big.bin", &big);
        s.tick(10);
    });
    // Around the prefix: the bucket's root, a prefix that begins alike, and an object no
    // sync stored at a listed path.
    bucket.put("outside.txt", b"outside");
    bucket.put("copyx/r/1.txt", b"a neighbour");
    bucket.put("copy/r/3.txt", b"someone else's");
    // The listed bytes already, put there by hand (no mark): adopted, and later deleted
    // as the sync's when the Source deletes it.
    bucket.put("copy/r/8.txt", &served_bytes(8));
    let base = served.base.as_str();
    let url = "s3://mirror/copy";

    // A mistyped setting is an error, not a sync into the store's default.
    let out = resourcesync(
        &[
            "sync",
            "--store-option",
            "aws_endpiont=http://127.0.0.1:9",
            base,
            url,
        ],
        &server,
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("\"aws_endpiont\" is not a setting of an S3 store"),
        "{}",
        text(&out)
    );

    let out = resourcesync(&["sync", base, url], &server);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("s3://mirror/copy/r/3.txt: an object no sync stored"),
        "{}",
        text(&out)
    );
    assert_eq!(bucket.get("copy/r/3.txt").unwrap(), b"someone else's");
    // The audit reads every object: not in sync while r/3.txt is another's.
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    // Asked to replace it, the sync does; then the prefix is the Source's.
    let out = resourcesync(
        &["sync", "--baseline", "--replace-foreign", base, url],
        &server,
    );
    assert!(out.status.success(), "{}", text(&out));
    served.holds(&bucket.resources("copy")).unwrap();
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert!(audit.status.success(), "{}", text(&audit));
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("32 unchanged"),
        "{}",
        text(&audit)
    );
    // Folder markers (the empty objects `copy/`, `copy/r/` that the S3 console's "Create
    // folder" makes, which a listing gives as the empty objects `copy`, `copy/r`): the
    // prefix's own, a directory's of the sync's objects, and a stray one at a resource's
    // own key (listed as that key a second time, empty) change nothing: the audit stays
    // in sync. They stay for the rest of the test.
    let in_sync = |audit: &Output| {
        assert!(audit.status.success(), "{}", text(audit));
        assert!(
            String::from_utf8_lossy(&audit.stdout).contains("0 missing, 0 extra, in sync"),
            "{}",
            text(audit)
        );
    };
    // Not in sync (exit 1), with `counts` in the summary.
    let not_in_sync = |audit: &Output, counts: &str| {
        assert_eq!(audit.status.code(), Some(1), "{}", text(audit));
        assert!(
            String::from_utf8_lossy(&audit.stdout).contains(counts),
            "{}",
            text(audit)
        );
    };
    if kind == Kind::Moto {
        for marker in ["copy", "copy/r", "copy/deep/a", "copy/r/4.txt"] {
            server.put_folder_marker(marker);
        }
        in_sync(&resourcesync(&["sync", "--audit", base, url], &server));
        // The object gone and its stray marker left: missing, not changed (the marker is
        // listed as the resource's key, and reading it finds nothing); a baseline puts
        // it back.
        bucket.delete("copy/r/4.txt");
        let audit = resourcesync(&["sync", "--audit", base, url], &server);
        not_in_sync(&audit, "0 changed, 1 missing, 0 extra");
        let out = resourcesync(&["sync", "--baseline", base, url], &server);
        assert!(out.status.success(), "{}", text(&out));
        in_sync(&resourcesync(&["sync", "--audit", base, url], &server));
        // The same under a baseline not asked for (the state gone: a first run over the
        // inventory), which reads none of what the sync stored: the empty `KEY` listed
        // where it stored bytes is asked for, found gone, and fetched again.
        bucket.delete("copy/r/4.txt");
        bucket.delete("copy/.resourcesync/state.json");
        let out = resourcesync(&["sync", base, url], &server);
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(
            bucket.get("copy/r/4.txt"),
            Some(served_bytes(4)),
            "{}",
            text(&out)
        );
        in_sync(&resourcesync(&["sync", "--audit", base, url], &server));
        // But an object there, emptied by someone, is kept as such a baseline keeps what
        // it finds (the audit says changed; a baseline asked for keeps it too, a
        // conflict, and replaces it with --replace-foreign).
        bucket.put("copy/r/4.txt", b"");
        bucket.delete("copy/.resourcesync/state.json");
        let out = resourcesync(&["sync", base, url], &server);
        assert!(out.status.success(), "{}", text(&out));
        assert_eq!(
            bucket.get("copy/r/4.txt"),
            Some(Vec::new()),
            "{}",
            text(&out)
        );
        not_in_sync(
            &resourcesync(&["sync", "--audit", base, url], &server),
            "1 changed, 0 missing",
        );
        let out = resourcesync(&["sync", "--baseline", base, url], &server);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert_eq!(
            bucket.get("copy/r/4.txt"),
            Some(Vec::new()),
            "{}",
            text(&out)
        );
        let out = resourcesync(
            &["sync", "--baseline", "--replace-foreign", base, url],
            &server,
        );
        assert!(out.status.success(), "{}", text(&out));
        in_sync(&resourcesync(&["sync", "--audit", base, url], &server));
        // One of a directory that holds nothing is an empty object no sync stored; an
        // object beside the marker of a directory of the sync's is one too: extras.
        server.put_folder_marker("copy/empty");
        bucket.put("copy/deep", b"someone's, beside the marker copy/deep/");
        server.put_folder_marker("copy/deep");
        let audit = resourcesync(&["sync", "--audit", base, url], &server);
        not_in_sync(&audit, "2 extra");
        let stderr = String::from_utf8_lossy(&audit.stderr);
        for extra in ["extra: empty ", "extra: deep "] {
            assert!(stderr.contains(extra), "{}", text(&audit));
        }
        server.delete_folder_marker("copy/empty");
        server.delete_folder_marker("copy/deep");
        bucket.delete("copy/deep");
        in_sync(&resourcesync(&["sync", "--audit", base, url], &server));
    }
    // Each object carries what the sync stored in it.
    let head = bucket.runtime.block_on(bucket.store.get_opts(
        &Key::parse("copy/r/4.txt").unwrap(),
        object_store::GetOptions {
            head: true,
            ..Default::default()
        },
    ));
    let attributes = head.unwrap().attributes;
    let held = attributes
        .get(&object_store::Attribute::Metadata(
            "resourcesync-held".into(),
        ))
        .expect("no metadata of the sync's");
    assert!(held.as_ref().contains("\"length\":50"), "{held:?}");

    // An object changed in the bucket is found by the audit, by its bytes alone (same
    // length, no metadata).
    bucket.put("copy/r/6.txt", &b"x".repeat(70));
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    not_in_sync(&audit, "1 changed");

    // The Source changes; someone edits an object the Source then deletes.
    served.change(|s| {
        s.put("r/1.txt", b"changed");
        s.delete("r/2.txt");
        s.delete("r/5.txt");
        s.delete("r/8.txt");
        s.put("r/new.txt", b"new");
    });
    bucket.put("copy/r/5.txt", b"edited by hand");
    let out = resourcesync(&["sync", "--json", "--delete", base, url], &server);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let s = summary(&out);
    assert_eq!(
        (
            s["created"].as_u64(),
            s["updated"].as_u64(),
            s["deleted"].as_u64()
        ),
        (Some(1), Some(1), Some(2)),
        "{}",
        text(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("s3://mirror/copy/r/5.txt: changed since the sync stored it"),
        "{}",
        text(&out)
    );
    assert_eq!(bucket.get("copy/r/5.txt").unwrap(), b"edited by hand");
    assert_eq!(bucket.get("copy/r/2.txt"), None);
    assert_eq!(
        bucket.get("copy/r/8.txt"),
        None,
        "the adopted object was not deleted"
    );
    assert_eq!(bucket.get("copy/r/1.txt").unwrap(), b"changed");
    // The edited r/6.txt was kept by the incremental run (a conflict), as in a directory,
    // and by a baseline asked for; --replace-foreign replaces it.
    let out = resourcesync(&["sync", "--baseline", base, url], &server);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert_eq!(bucket.get("copy/r/6.txt").unwrap(), b"x".repeat(70));
    let out = resourcesync(
        &["sync", "--baseline", "--replace-foreign", base, url],
        &server,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("1 updated"),
        "{}",
        text(&out)
    );
    assert_eq!(bucket.get("copy/r/6.txt").unwrap(), served_bytes(6));

    // Nothing outside the prefix was touched; nothing but the prefix was written.
    assert_eq!(bucket.get("outside.txt").unwrap(), b"outside");
    assert_eq!(bucket.get("copyx/r/1.txt").unwrap(), b"a neighbour");
    let keys: Vec<String> = bucket.objects().into_keys().collect();
    for key in &keys {
        assert!(
            key.starts_with("copy/") || key == "outside.txt" || key == "copyx/r/1.txt",
            "{key}"
        );
    }
    assert!(keys.contains(&"copy/.resourcesync/state.json".to_owned()));
    assert!(
        !keys
            .iter()
            .any(|k| k.ends_with("/lock") || k.ends_with("/unfinished")),
        "a finished sync let its lease go and left no run to recover: {keys:?}"
    );

    // One sync at a time: while one runs, another is refused, changing nothing.
    served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(200)));
    served.change(|s| {
        for i in 0..10 {
            s.put(&format!("r/slow-{i}.txt"), b"slow");
        }
    });
    let running = spawn(&["sync", "--concurrency", "1", base, url], &server);
    let deadline = Instant::now() + Duration::from_secs(30);
    while bucket.get("copy/.resourcesync/lock").is_none() {
        assert!(
            Instant::now() < deadline,
            "the first sync never took its lease"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = resourcesync(&["sync", base, url], &server);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("another sync is using s3://mirror/copy"),
        "{}",
        text(&out)
    );
    let first = running.wait_with_output().unwrap();
    assert!(first.status.success(), "{}", text(&first));
    // The prefix is the Source's, but for r/5.txt, which the user edited and the Source
    // deleted since: kept.
    let mut held = bucket.resources("copy");
    assert_eq!(held.remove("r/5.txt").unwrap(), b"edited by hand");
    served.holds(&held).unwrap();

    // An object copied with its metadata from another key carries another URI's mark:
    // not the sync's to replace.
    bucket.runtime.block_on(async {
        bucket
            .store
            .copy(
                &Key::parse("copy/r/4.txt").unwrap(),
                &Key::parse("copy/r/copied.txt").unwrap(),
            )
            .await
            .unwrap()
    });
    served.change(|s| s.put("r/copied.txt", b"the Source's own bytes"));
    let out = resourcesync(&["sync", base, url], &server);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("copy/r/copied.txt: an object no sync stored"),
        "{}",
        text(&out)
    );
    assert_eq!(bucket.get("copy/r/copied.txt").unwrap(), served_bytes(4));
}

/// The bytes `promises` serves at r/{i}.txt.
fn served_bytes(i: usize) -> Vec<u8> {
    format!("resource {i}").repeat(i + 1).into_bytes()
}

fn slow_source(n: usize) -> Served {
    let served = Served::start(|s| {
        for i in 0..n {
            s.put(
                &format!("r/{i}.txt"),
                format!("resource {i}").repeat(20).as_bytes(),
            );
        }
        s.tick(10);
    });
    served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(30)));
    served
}

fn killed_sync(program: &std::path::Path) {
    let server = S3Server::start(Kind::S3sFs, program, "mirror");
    let bucket = Bucket::of(&server);
    let served = slow_source(80);
    let base = served.base.as_str();
    let url = "s3://mirror/killed";
    let args = ["sync", "--concurrency", "2", "--store-lease", "2s"];
    let mut running = spawn(&[&args[..], &[base, url]].concat(), &server);
    until_stored(&bucket, "killed", 10);
    running.kill().unwrap();
    running.wait().unwrap();
    // Its lease is still on the prefix: the next sync is refused until it runs out.
    let out = resourcesync(&[&args[..], &[base, url]].concat(), &server);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(2500));
    // An audit in between (it takes the expired lease and lets it go) loses nothing of
    // what the next sync takes over.
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    let out = resourcesync(&[&args[..], &["--json", base, url]].concat(), &server);
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&out);
    let created = s["created"].as_u64().unwrap();
    assert!(
        created < 80 - 9,
        "the rerun stored {created} of 80: what the killed run stored was not taken as the sync's"
    );
    served.holds(&bucket.resources("killed")).unwrap();
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert!(audit.status.success(), "{}", text(&audit));
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("80 unchanged"),
        "{}",
        text(&audit)
    );
}

/// Two processes started at the same moment into one prefix, three times: the lease lets
/// one run and refuses the other ("another sync is using", exit 2) before it writes a
/// thing, and the one that ran leaves the prefix as one sync alone would. The first
/// request for the Source Description waits 1.5 s (the lease is taken before it), so that
/// the first process's run is not over before a slow start of the second.
fn raced(program: &std::path::Path) {
    let server = S3Server::start(Kind::S3sFs, program, "mirror");
    let bucket = Bucket::of(&server);
    for round in 0..3 {
        let served = slow_source(20);
        served.faults(|path, asked| match path {
            ".well-known/resourcesync" if asked == 0 => Some(Fault::Slow(1500)),
            _ if path.starts_with("r/") => Some(Fault::Slow(30)),
            _ => None,
        });
        let base = served.base.as_str();
        let prefix = format!("raced{round}");
        let url = format!("s3://mirror/{prefix}");
        let args = ["sync", "--concurrency", "2", base, url.as_str()];
        let (a, b) = (spawn(&args, &server), spawn(&args, &server));
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let codes: Vec<Option<i32>> = outs.iter().map(|out| out.status.code()).collect();
        let (ran, refused) = match codes[..] {
            [Some(0), Some(2)] => (&outs[0], &outs[1]),
            [Some(2), Some(0)] => (&outs[1], &outs[0]),
            _ => panic!(
                "round {round}: exit codes {codes:?}\n{}\n{}",
                text(&outs[0]),
                text(&outs[1])
            ),
        };
        assert!(
            String::from_utf8_lossy(&refused.stderr).contains("another sync is using"),
            "{}",
            text(refused)
        );
        assert!(
            String::from_utf8_lossy(&ran.stdout).contains("20 created"),
            "{}",
            text(ran)
        );
        served.holds(&bucket.resources(&prefix)).unwrap();
        let audit = resourcesync(&["sync", "--audit", base, url.as_str()], &server);
        assert!(audit.status.success(), "{}", text(&audit));
        assert!(
            String::from_utf8_lossy(&audit.stdout).contains("20 unchanged"),
            "{}",
            text(&audit)
        );
    }
}

fn killed_server(program: &std::path::Path) {
    let mut server = S3Server::start(Kind::S3sFs, program, "mirror");
    let bucket = Bucket::of(&server);
    let served = slow_source(80);
    let base = served.base.as_str();
    let url = "s3://mirror/outage";
    let args = ["sync", "--concurrency", "2", "--store-lease", "2s"];
    let running = spawn(&[&args[..], &[base, url]].concat(), &server);
    until_stored(&bucket, "outage", 10);
    server.kill();
    std::thread::sleep(Duration::from_millis(500));
    server.restart();
    let out = running.wait_with_output().unwrap();
    // Whatever the run came to (the store's client retries), a rerun ends it whole.
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    std::thread::sleep(Duration::from_millis(2500));
    let out = resourcesync(&[&args[..], &[base, url]].concat(), &server);
    assert!(out.status.success(), "{}", text(&out));
    served.holds(&bucket.resources("outage")).unwrap();
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert!(audit.status.success(), "{}", text(&audit));
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("80 unchanged"),
        "{}",
        text(&audit)
    );
}

fn shards(program: &std::path::Path) {
    let server = S3Server::start(Kind::S3sFs, program, "mirror");
    let bucket = Bucket::of(&server);
    let served = slow_source(90);
    let base = served.base.as_str();
    let url = "s3://mirror/sharded";
    let shard = |k: usize, n: usize| format!("{k}/{n}");
    let args = |k: usize| {
        [
            "sync",
            "--concurrency",
            "2",
            "--store-lease",
            "2s",
            "--shard",
            &shard(k, 3),
            base,
            url,
        ]
        .map(str::to_owned)
    };
    let run = |k: usize| {
        let args = args(k);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        (spawn(&args, &server), args.join(" "))
    };
    // Three shards at once, one of them killed once the prefix holds something.
    let mut children: Vec<_> = (0..3).map(run).collect();
    until_stored(&bucket, "sharded", 20);
    children[1].0.kill().unwrap();
    children[1].0.wait().unwrap();
    for k in [2, 0] {
        let (child, args) = children.remove(k);
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{args}: {}", text(&out));
    }
    // The killed shard's lease is still on its part: no audit of the whole meanwhile.
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert_eq!(audit.status.code(), Some(2), "{}", text(&audit));
    assert!(
        String::from_utf8_lossy(&audit.stderr).contains("1-of-3/lock"),
        "{}",
        text(&audit)
    );
    // Once it ran out: not whole yet.
    std::thread::sleep(Duration::from_millis(2500));
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    // The rerun goes on from what the killed shard stored.
    let rerun = args(1);
    let mut rerun: Vec<&str> = rerun.iter().map(String::as_str).collect();
    rerun.insert(1, "--json");
    let out = resourcesync(&rerun, &server);
    assert!(out.status.success(), "{}", text(&out));
    let s = summary(&out);
    let (created, listed) = (
        s["created"].as_u64().unwrap(),
        s["listed"].as_u64().unwrap(),
    );
    assert!(
        created < listed,
        "the rerun stored {created} of its {listed}: what the killed shard stored was lost"
    );
    // Whole: the prefix is the Source's, and an audit of the whole says so.
    served.holds(&bucket.resources("sharded")).unwrap();
    let audit = resourcesync(&["sync", "--audit", base, url], &server);
    assert!(audit.status.success(), "{}", text(&audit));
    let line = String::from_utf8_lossy(&audit.stdout);
    assert!(
        line.contains("90 unchanged") && line.contains(" 0 extra, in sync"),
        "{line}"
    );
    // Each shard audits its own part, the others' objects not its extras.
    for k in 0..3 {
        let out = resourcesync(
            &["sync", "--audit", "--shard", &shard(k, 3), base, url],
            &server,
        );
        assert!(out.status.success(), "shard {k}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(" 0 extra"),
            "{}",
            text(&out)
        );
    }
    // A run that is no shard of this split is refused.
    for refused in [
        vec!["sync", base, url],
        vec!["sync", "--shard", "0/2", base, url],
    ] {
        let out = resourcesync(&refused, &server);
        assert_eq!(out.status.code(), Some(2), "{refused:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is kept by shards"),
            "{}",
            text(&out)
        );
    }
    // A prefix an unsharded sync keeps is not taken over by shards.
    let whole = "s3://mirror/whole";
    let out = resourcesync(&["sync", base, whole], &server);
    assert!(out.status.success(), "{}", text(&out));
    let out = resourcesync(&["sync", "--shard", "0/2", base, whole], &server);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("was synced without --shard"),
        "{}",
        text(&out)
    );
}

/// `sync --sources FILE` with each Source's `dir` a prefix of one bucket.
fn many_sources(program: &std::path::Path) {
    let server = S3Server::start(Kind::S3sFs, program, "mirror");
    let bucket = Bucket::of(&server);
    let sources: Vec<Served> = (0..3)
        .map(|k| {
            Served::start(|s| {
                for i in 0..20 {
                    s.put(
                        &format!("r/{i}.txt"),
                        format!("source {k}, resource {i}").as_bytes(),
                    );
                }
                s.tick(10);
            })
        })
        .collect();
    let root = tempfile::tempdir().unwrap();
    let settings: Vec<String> = server
        .options()
        .iter()
        .map(|(k, v)| format!("{k} = {v:?}"))
        .collect();
    let mut toml = format!(
        "[defaults]\nstore-options = {{ {} }}\nstore-lease = \"5s\"\ndelete = true\n",
        settings.join(", ")
    );
    for (k, served) in sources.iter().enumerate() {
        toml += &format!(
            "[[source]]\nurl = {:?}\ndir = \"s3://mirror/s{k}\"\ninterval = \"1s\"\n",
            served.base.as_str()
        );
    }
    let file = root.path().join("sources.toml");
    std::fs::write(&file, toml).unwrap();
    let file = file.to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_resourcesync"))
            .args(args)
            .current_dir(root.path())
            .env_remove("AWS_PROFILE")
            .env_remove("AWS_ENDPOINT")
            .env_remove("AWS_ENDPOINT_URL")
            .output()
            .unwrap()
    };
    let out = run(&["sync", "--sources", file]);
    assert!(out.status.success(), "{}", text(&out));
    for (k, served) in sources.iter().enumerate() {
        served.holds(&bucket.resources(&format!("s{k}"))).unwrap();
    }
    let out = run(&["sync", "--audit", "--sources", file]);
    assert!(out.status.success(), "{}", text(&out));
    // Named, not made: no directory of the URL's name beside the file.
    assert!(!root.path().join("s3:").exists());
    // Followed: the harvest's followers run into their prefixes, each run a sync with
    // every promise (an interval of a second here), and carry the Sources' changes.
    let following = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--follow", "--json", "--sources", file])
        .current_dir(root.path())
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT")
        .env_remove("AWS_ENDPOINT_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // One Source followed alone, by `sync --follow URL s3://...`.
    let single = spawn(
        &[
            "sync",
            "--follow",
            "--json",
            "--interval",
            "1s",
            "--delete",
            sources[0].base.as_str(),
            "s3://mirror/single",
        ],
        &server,
    );
    let harvest = Lines::of(following);
    let alone = Lines::of(single);
    // Each one's first run done before the Sources change: the change is carried by a
    // later run, into a prefix opened again.
    harvest.until("the harvest's first runs", |lines| {
        synced_by_source(lines).len() == sources.len()
    });
    alone.until("the single follower's first run", |lines| {
        synced_by_source(lines).values().sum::<usize>() >= 1
    });
    // Another run holds the single prefix for a while: the follower's runs are refused
    // then (said), and it goes on once the lease is gone.
    let held = format!(
        r#"{{"owner":"another","until_ms":{}}}"#,
        resourcesync_objects::now_ms() + 600_000
    );
    bucket.put("single/.resourcesync/lock", held.as_bytes());
    alone.until("a run refused while another held the prefix", |lines| {
        lines.iter().any(|l| l.contains(r#""follow":"run-failed""#))
    });
    for (k, served) in sources.iter().enumerate() {
        served.change(|s| {
            s.tick(10);
            s.put(&format!("r/new-{k}.txt"), b"new");
            s.put("r/1.txt", b"changed");
            s.delete("r/2.txt");
        });
    }
    let mut prefixes: Vec<(String, &Served)> = sources
        .iter()
        .enumerate()
        .map(|(k, served)| (format!("s{k}"), served))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut waiting = prefixes.clone();
    while !waiting.is_empty() {
        assert!(
            Instant::now() < deadline,
            "the followers did not carry the change: {:?}",
            harvest.lines()
        );
        waiting.retain(|(prefix, served)| served.holds(&bucket.resources(prefix)).is_err());
        std::thread::sleep(Duration::from_millis(200));
    }
    // Still refused: nothing of the change in the single prefix.
    assert!(sources[0].holds(&bucket.resources("single")).is_err());
    bucket.delete("single/.resourcesync/lock");
    prefixes.push(("single".into(), &sources[0]));
    let deadline = Instant::now() + Duration::from_secs(60);
    while sources[0].holds(&bucket.resources("single")).is_err() {
        assert!(
            Instant::now() < deadline,
            "the single follower did not go on: {:?}",
            alone.lines()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    for (lines, name) in [(harvest, "the harvest"), (alone, "the single follower")] {
        let (status, lines) = lines.stop();
        assert_eq!(status, Some(130), "{name}: {lines:?}");
        // Per Source: the first run and one at least that carried the change.
        let synced = synced_by_source(&lines);
        assert!(!synced.is_empty(), "{name}: {lines:?}");
        for (source, runs) in &synced {
            assert!(*runs >= 2, "{name}, {source}: {runs} runs: {lines:?}");
        }
        assert!(
            lines
                .iter()
                .any(|l| l.contains(r#""follow":"synced""#) && l.contains(r#""created":1"#)),
            "{name}: no run carried the change: {lines:?}"
        );
    }
    // Each prefix is as an audit of its own finds it, and holds what its Source does.
    let out = run(&["sync", "--audit", "--sources", file]);
    assert!(out.status.success(), "{}", text(&out));
    for (prefix, served) in &prefixes {
        served.holds(&bucket.resources(prefix)).unwrap();
    }
    let out = resourcesync(
        &[
            "sync",
            "--audit",
            sources[0].base.as_str(),
            "s3://mirror/single",
        ],
        &server,
    );
    assert!(out.status.success(), "{}", text(&out));
    // Named, not made, beside the file or where the single follower ran.
    assert!(!root.path().join("s3:").exists());
    assert!(!std::path::Path::new("s3:").exists());
}

/// A child's standard output, line by line as it comes, kept.
struct Lines {
    child: Child,
    lines: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Lines {
    fn of(mut child: Child) -> Lines {
        use std::io::BufRead as _;
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = lines.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout)
                .lines()
                .map_while(Result::ok)
            {
                kept.lock().unwrap().push(line);
            }
        });
        Lines { child, lines }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (60 s at most) until `done` holds of the lines so far.
    fn until(&self, what: &str, done: impl Fn(&[String]) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done(&self.lines()) {
            assert!(Instant::now() < deadline, "no {what}: {:?}", self.lines());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGTERM, then its exit status and every line.
    fn stop(mut self) -> (Option<i32>, Vec<String>) {
        process::signal(&self.child, process::Signal::TERM);
        let Some(status) = process::exited_within(&mut self.child, Duration::from_secs(30)) else {
            self.child.kill().unwrap();
            panic!("a follower did not stop on SIGTERM");
        };
        let status = status.code();
        // Its output read to the end.
        std::thread::sleep(Duration::from_millis(200));
        (status, self.lines())
    }
}

/// How many `synced` lines each Source has (a single follower's lines name none: "").
fn synced_by_source(lines: &[String]) -> BTreeMap<String, usize> {
    let mut runs = BTreeMap::new();
    for line in lines {
        let Ok(value) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if value["follow"] == "synced" {
            let source = value["source"].as_str().unwrap_or_default().to_owned();
            *runs.entry(source).or_insert(0) += 1;
        }
    }
    runs
}
