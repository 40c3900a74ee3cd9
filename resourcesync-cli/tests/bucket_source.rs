//! A Source published into a bucket (`resourcesync_source::BucketStore`) on real S3
//! servers, read back as a static host serves it: `resourcesync sync` over plain HTTP GETs
//! of a public bucket (moto), a publisher killed by its object server after its commit
//! point finished by the next, none of its staging left, and two publishers into one
//! prefix kept one at a time.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, ExitCode, Output, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant, SystemTime};

use futures::TryStreamExt as _;
use resourcesync_model::{Entry, Fixity, W3cDateTime};
use resourcesync_objects::Runner;
use resourcesync_objects::object_store::ObjectStore;
use resourcesync_source::{
    BucketStore, MemoryStore, PublishOptions, Publisher, ResourceEvent, Store, StoreError,
};
use resourcesync_testkit::driver::text;
use resourcesync_testkit::needs;
use resourcesync_testkit::s3::{self, Kind, S3Server};

fn main() -> ExitCode {
    if let Ok(settings) = std::env::var(PUBLISHER) {
        return publisher_process(&settings);
    }
    let moto = s3::find(Kind::Moto);
    let s3s = s3::find(Kind::S3sFs);
    needs::main(vec![
        needs::trial(
            "a_publication_in_a_public_bucket_is_synced_over_http",
            &moto,
            |program| served_over_http(&program),
        ),
        needs::trial(
            "a_publisher_stopped_after_its_commit_point_is_finished_by_the_next",
            &s3s,
            |program| stopped_after_commit(&program),
        ),
        needs::trial(
            "a_build_into_a_bucket_is_served_sends_what_changed_and_keeps_one_publisher",
            &moto,
            |program| build_into_bucket(&program),
        ),
        needs::trial(
            "two_publishers_into_one_moto_prefix_take_turns",
            &moto,
            |program| two_publishers(Kind::Moto, &program),
        ),
        needs::trial(
            "two_publishers_into_one_s3s_fs_prefix_take_turns",
            &s3s,
            |program| two_publishers(Kind::S3sFs, &program),
        ),
    ])
}

const T0: u64 = 1_700_000_000;

fn at(minutes: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(T0 + 60 * minutes)
}

/// The bytes of resource `i` in version `v`.
fn body(i: usize, v: usize) -> Vec<u8> {
    format!("resource {i}, version {v}\n")
        .repeat(i % 7 + 1)
        .into_bytes()
}

/// Resource `i`'s entry, listing its length and digests.
fn entry(base: &str, i: usize, v: usize) -> Entry {
    let bytes = body(i, v);
    let mut fixity = Fixity::new();
    fixity.update(&bytes);
    Entry::new(format!("{base}r/{i}.txt").parse().unwrap())
        .with_length(bytes.len() as u64)
        .with_hash(fixity.finish().hashes())
}

fn open(server: &S3Server, prefix: &str) -> Result<BucketStore, StoreError> {
    let url = format!("s3://{}/{prefix}", server.bucket).parse().unwrap();
    BucketStore::open(&url, server.options(), BucketStore::LEASE)
}

/// Every object of the bucket, by key.
fn objects(store: &Arc<dyn ObjectStore>) -> BTreeMap<String, Vec<u8>> {
    let runner = Runner::new("test").unwrap();
    let store = store.clone();
    runner
        .run(async move {
            let keys: Vec<_> = store
                .list(None)
                .map_ok(|meta| meta.location)
                .try_collect()
                .await
                .unwrap();
            let mut all = BTreeMap::new();
            for key in keys {
                // Gone since listed (a lease given back): left out.
                if let Ok(found) = store.get(&key).await {
                    all.insert(key.to_string(), found.bytes().await.unwrap().to_vec());
                }
            }
            all
        })
        .unwrap()
}

/// The publication under `prefix/`: its objects by name, the store's own left out.
fn publication(store: &Arc<dyn ObjectStore>, prefix: &str) -> BTreeMap<String, Vec<u8>> {
    objects(store)
        .into_iter()
        .filter_map(|(key, bytes)| {
            let name = key.strip_prefix(&format!("{prefix}/"))?.to_owned();
            (!name.starts_with(".resourcesync/bucket/")).then_some((name, bytes))
        })
        .collect()
}

/// Publishes resources `0..n` in version 0 with their bytes, through a transaction.
fn publish_snapshot<S: Store>(source: &mut Publisher<S>, base: &str, n: usize, minute: u64) {
    let mut run = source.begin().unwrap();
    for i in 0..n {
        run.write(&format!("r/{i}.txt"), &[&body(i, 0)]).unwrap();
    }
    run.publish_snapshot((0..n).map(|i| entry(base, i, 0)), at(minute))
        .unwrap();
}

/// A file of the application's written (its bytes) or removed (`None`).
type FileChange = (String, Option<Vec<u8>>);

/// Updates resources 0..3 to version 1, deletes 3..5, creates `n` and `n + 1`.
fn changes(base: &str, n: usize, minute: u64) -> (Vec<FileChange>, Vec<ResourceEvent>) {
    let when = W3cDateTime::from(at(minute));
    let mut files = Vec::new();
    let mut events = Vec::new();
    for i in 0..3 {
        files.push((format!("r/{i}.txt"), Some(body(i, 1))));
        events.push(ResourceEvent::updated(entry(base, i, 1), when));
    }
    for i in 3..5 {
        files.push((format!("r/{i}.txt"), None));
        events.push(ResourceEvent::deleted(
            format!("{base}r/{i}.txt").parse().unwrap(),
            when,
        ));
    }
    for i in [n, n + 1] {
        files.push((format!("r/{i}.txt"), Some(body(i, 0))));
        events.push(ResourceEvent::created(entry(base, i, 0), when));
    }
    (files, events)
}

fn publish_changes<S: Store>(source: &mut Publisher<S>, base: &str, n: usize, minute: u64) {
    let (files, events) = changes(base, n, minute);
    let mut run = source.begin().unwrap();
    for (name, bytes) in &files {
        match bytes {
            Some(bytes) => run.write(name, &[bytes]).unwrap(),
            None => run.remove(name).unwrap(),
        }
    }
    run.publish_changes(events, at(minute)).unwrap();
}

fn resourcesync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .output()
        .unwrap()
}

/// The files under `dir` (its `.resourcesync/` left out), by path.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let path = e.path().strip_prefix(dir).unwrap().to_str()?.to_owned();
            (!path.starts_with(".resourcesync")).then(|| (path, std::fs::read(e.path()).unwrap()))
        })
        .collect()
}

fn served_over_http(program: &Path) {
    let server = S3Server::start(Kind::Moto, program, "site");
    server.allow_public_read();
    let base = format!("{}/site/pub/", server.endpoint);
    let store = open(&server, "pub").unwrap();
    assert!(store.conditional(), "moto honours conditional PUTs");
    let objects_store = store.bucket().store.clone();
    let mut source = Publisher::new(store, PublishOptions::new(base.parse().unwrap()));
    publish_snapshot(&mut source, &base, 40, 0);

    // Read as a static host serves it: plain GETs, no signature.
    let mirror = tempfile::tempdir().unwrap();
    let dir = mirror.path().join("copy");
    let dir = dir.to_str().unwrap();
    let out = resourcesync(&["sync", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));
    // Paths under the directory are the URIs' paths on their authority.
    let expected: BTreeMap<String, Vec<u8>> = (0..40)
        .map(|i| (format!("site/pub/r/{i}.txt"), body(i, 0)))
        .collect();
    same(&files(Path::new(dir)), &expected, "the baseline");

    publish_changes(&mut source, &base, 40, 5);
    let out = resourcesync(&["sync", "--delete", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));
    let mut expected = expected;
    for i in 0..3 {
        expected.insert(format!("site/pub/r/{i}.txt"), body(i, 1));
    }
    for i in 3..5 {
        expected.remove(&format!("site/pub/r/{i}.txt"));
    }
    for i in [40, 41] {
        expected.insert(format!("site/pub/r/{i}.txt"), body(i, 0));
    }
    same(&files(Path::new(dir)), &expected, "the incremental sync");
    let out = resourcesync(&["sync", "--audit", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));

    // The bucket holds the publication an in-memory publisher makes of the same runs,
    // and nothing of the staging.
    let mut memory = Publisher::new(
        MemoryStore::new(),
        PublishOptions::new(base.parse().unwrap()),
    );
    publish_snapshot(&mut memory, &base, 40, 0);
    publish_changes(&mut memory, &base, 40, 5);
    let held = publication(&objects_store, "pub");
    let made = everything(memory.store());
    assert_eq!(
        held.keys().collect::<Vec<_>>(),
        made.keys().collect::<Vec<_>>()
    );
    assert!(
        held == made,
        "the bytes differ from the in-memory publication"
    );
    let own: Vec<String> = objects(&objects_store)
        .into_keys()
        .filter(|k| k.starts_with("pub/.resourcesync/bucket/"))
        .collect();
    assert_eq!(own, ["pub/.resourcesync/bucket/lock"], "only the lease");
    drop(source);
    assert!(
        !objects(&objects_store).contains_key("pub/.resourcesync/bucket/lock"),
        "the lease given back"
    );
}

/// The publisher the parent kills: the second run of [`stopped_after_commit`], every
/// resource written again (the same bytes) so that its commit lasts long enough to stop
/// in, under a lease of three seconds.
fn publisher_process(settings: &str) -> ExitCode {
    let settings: serde_json::Value = serde_json::from_str(settings).unwrap();
    let options: Vec<(String, String)> =
        serde_json::from_value(settings["options"].clone()).unwrap();
    let url = settings["url"].as_str().unwrap().parse().unwrap();
    let n = settings["n"].as_u64().unwrap() as usize;
    let base = "http://example.org/";
    let store = BucketStore::open(&url, options, Duration::from_secs(3)).unwrap();
    let mut source = Publisher::new(store, PublishOptions::new(base.parse().unwrap()));
    let (files, events) = changes(base, n, 5);
    let mut run = source.begin().unwrap();
    for (name, bytes) in &files {
        match bytes {
            Some(bytes) => run.write(name, &[bytes]).unwrap(),
            None => run.remove(name).unwrap(),
        }
    }
    for i in 5..n {
        run.write(&format!("r/{i}.txt"), &[&body(i, 0)]).unwrap();
    }
    run.publish_changes(events, at(5)).unwrap();
    ExitCode::SUCCESS
}

const PUBLISHER: &str = "BUCKET_SOURCE_PUBLISHER";

fn stopped_after_commit(program: &Path) {
    let server = S3Server::start(Kind::S3sFs, program, "site");
    let base = "http://example.org/";
    let n = 1000;
    let store = open(&server, "pub").unwrap();
    let objects_store = store.bucket().store.clone();
    let mut source = Publisher::new(store, PublishOptions::new(base.parse().unwrap()));
    publish_snapshot(&mut source, base, n, 0);
    drop(source);
    let before = publication(&objects_store, "pub");

    // The next run, in a process of its own, killed (SIGKILL) once its journal is there:
    // while the staged files are copied to their keys.
    let journal = server
        .root()
        .unwrap()
        .join("site/pub/.resourcesync/bucket/commit.json");
    let settings = serde_json::json!({
        "options": server.options(),
        "url": format!("s3://{}/pub", server.bucket),
        "n": n,
    });
    let mut child = Command::new(std::env::current_exe().unwrap())
        .env(PUBLISHER, settings.to_string())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !journal.exists() {
        assert!(Instant::now() < deadline, "no journal written");
        assert!(
            child.try_wait().unwrap().is_none(),
            "the publisher ended before its commit"
        );
        std::thread::sleep(Duration::from_micros(200));
    }
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(
        !status.success(),
        "killed in its commit, not after: {status:?}"
    );
    let interrupted = publication(&objects_store, "pub");

    // The journal is the commit point: the next publisher finishes the commit before
    // anything else.
    let store = open_when_free(&server, "pub");
    let after = publication(&objects_store, "pub");
    let mut memory = Publisher::new(
        MemoryStore::new(),
        PublishOptions::new(base.parse().unwrap()),
    );
    publish_snapshot(&mut memory, base, n, 0);
    assert!(
        before == everything(memory.store()),
        "the first run's publication"
    );
    publish_changes(&mut memory, base, n, 5);
    let made = everything(memory.store());
    assert!(
        interrupted != made,
        "stopped before its commit was rolled forward"
    );
    eprintln!(
        "killed with {} of {} names as committed",
        interrupted
            .iter()
            .filter(|(k, v)| made.get(*k) == Some(v))
            .count(),
        made.len()
    );
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        made.keys().collect::<Vec<_>>()
    );
    assert!(after == made, "the committed run's publication, finished");
    let keys: Vec<String> = objects(&objects_store)
        .into_keys()
        .filter(|k| k.starts_with("pub/.resourcesync/bucket/"))
        .collect();
    assert_eq!(
        keys,
        ["pub/.resourcesync/bucket/lock"],
        "no journal, no staging"
    );

    // And the next publisher goes on from it.
    let mut source = Publisher::new(store, PublishOptions::new(base.parse().unwrap()));
    publish_changes(&mut source, base, n + 2, 10);
    publish_changes(&mut memory, base, n + 2, 10);
    same(
        &publication(&objects_store, "pub"),
        &everything(memory.store()),
        "the run after",
    );
}

/// Asserts that `found` holds what `expected` does, naming the first file that differs.
fn same(found: &BTreeMap<String, Vec<u8>>, expected: &BTreeMap<String, Vec<u8>>, what: &str) {
    assert_eq!(
        found.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>(),
        "{what}: the names"
    );
    if let Some((name, _)) = found
        .iter()
        .find(|(name, bytes)| expected[*name] != **bytes)
    {
        panic!("{what}: {name} holds other bytes");
    }
}

/// Every file of an in-memory publication.
fn everything(store: &MemoryStore) -> BTreeMap<String, Vec<u8>> {
    store
        .names()
        .map(|n| (n.to_owned(), store.get(n).unwrap().to_vec()))
        .collect()
}

/// Opens `prefix` once the killed publisher's lease ran out (bounded).
fn open_when_free(server: &S3Server, prefix: &str) -> BucketStore {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match open(server, prefix) {
            Ok(store) => return store,
            Err(StoreError::Busy { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => panic!("{e}"),
        }
    }
}

fn two_publishers(kind: Kind, program: &Path) {
    let server = S3Server::start(kind, program, "site");
    let base = "http://example.org/";
    // Two publishers opening the prefix at the same moment, ten times: one of them holds it.
    for round in 0..10 {
        let barrier = Barrier::new(2);
        let opened: Vec<Result<BucketStore, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..2)
                .map(|_| {
                    scope.spawn(|| {
                        barrier.wait();
                        open(&server, "pub")
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let held = opened.iter().filter(|o| o.is_ok()).count();
        let busy = opened
            .iter()
            .filter(|o| matches!(o, Err(StoreError::Busy { .. })))
            .count();
        assert_eq!((held, busy), (1, 1), "round {round}: {opened:?}");
    }
    // The one that holds it publishes; the other, refused meanwhile, goes on from its
    // publication once it let go.
    let store = open(&server, "pub").unwrap();
    let objects_store = store.bucket().store.clone();
    let mut first = Publisher::new(store, PublishOptions::new(base.parse().unwrap()));
    publish_snapshot(&mut first, base, 20, 0);
    let refused = open(&server, "pub");
    assert!(
        matches!(&refused, Err(StoreError::Busy { .. })),
        "{refused:?}"
    );
    let message = refused.unwrap_err().to_string();
    assert!(
        message.contains("another build is publishing here"),
        "{message}"
    );
    drop(first);
    let mut second = Publisher::new(
        open(&server, "pub").unwrap(),
        PublishOptions::new(base.parse().unwrap()),
    );
    publish_changes(&mut second, base, 20, 5);
    let mut memory = Publisher::new(
        MemoryStore::new(),
        PublishOptions::new(base.parse().unwrap()),
    );
    publish_snapshot(&mut memory, base, 20, 0);
    publish_changes(&mut memory, base, 20, 5);
    let made = everything(memory.store());
    same(
        &publication(&objects_store, "pub"),
        &made,
        "one publication, the second run continuing the first's",
    );
}

/// `resourcesync build` with the server's settings.
fn build(server: &S3Server, collection: &Path, work: &Path, url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["build", "--json", "--base-url"])
        .arg(format!("{}/site/pub/", server.endpoint))
        .arg(collection)
        .arg(url)
        .arg("--work")
        .arg(work)
        .args(server.store_args())
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_ENDPOINT")
        .env_remove("AWS_ENDPOINT_URL")
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(out)))
}

fn build_into_bucket(program: &Path) {
    let server = S3Server::start(Kind::Moto, program, "site");
    server.allow_public_read();
    let root = tempfile::tempdir().unwrap();
    let collection = root.path().join("collection");
    for i in 0..30 {
        let path = collection.join(format!("r/{i}.txt"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body(i, 0)).unwrap();
    }
    std::fs::write(
        collection.join("big.bin"),
        vec![7u8; BucketStore::PART + 1000],
    )
    .unwrap();
    let work = root.path().join("work");
    let url = "s3://site/pub";
    let out = build(&server, &collection, &work, url);
    assert!(out.status.success(), "{}", text(&out));
    let first = json(&out);
    assert_eq!(first["resources"], 31, "{first}");
    let documents = first["uploaded"]["written"].as_u64().unwrap() - 31;

    // Served by the bucket: a sync over plain GETs.
    let base = format!("{}/site/pub/", server.endpoint);
    let mirror = root.path().join("mirror");
    let dir = mirror.to_str().unwrap();
    let out = resourcesync(&["sync", "--delete", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));
    let served = |dir: &Path| -> BTreeMap<String, Vec<u8>> {
        files(dir)
            .into_iter()
            .map(|(path, bytes)| (path.strip_prefix("site/pub/").unwrap().to_owned(), bytes))
            .collect()
    };
    same(
        &served(&mirror),
        &files(&collection),
        "the first build, synced",
    );

    // Two files changed, one deleted, one new: only they (and the documents that
    // changed) are sent.
    std::fs::write(collection.join("r/1.txt"), b"changed").unwrap();
    std::fs::write(collection.join("r/2.txt"), b"changed too").unwrap();
    std::fs::remove_file(collection.join("r/3.txt")).unwrap();
    std::fs::write(collection.join("r/new.txt"), b"new").unwrap();
    let out = build(&server, &collection, &work, url);
    assert!(out.status.success(), "{}", text(&out));
    let second = json(&out);
    let uploaded = &second["uploaded"];
    let written = uploaded["written"].as_u64().unwrap();
    // The documents this build left as they were (its Change Lists' closed ones, the
    // Source Description, robots.txt, ...) are not sent again.
    assert!(
        written >= 3 && written - 3 < documents,
        "sent {written}: the 3 resources and the documents that changed: {second}"
    );
    assert!(uploaded["kept"].as_u64().unwrap() >= 27, "{second}");
    assert_eq!(uploaded["removed"], 1, "{second}");
    let out = resourcesync(&["sync", "--delete", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));
    same(
        &served(&mirror),
        &files(&collection),
        "the second build, synced",
    );
    let out = resourcesync(&["sync", "--audit", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));

    // Another publisher holding the prefix: the build is refused, and publishes nothing.
    let holder = open(&server, "pub").unwrap();
    std::fs::write(collection.join("r/4.txt"), b"not yet").unwrap();
    let out = build(&server, &collection, &work, url);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("another build is publishing here"),
        "{}",
        text(&out)
    );
    drop(holder);
    // A publisher of another work directory: refused, the bucket's publication kept.
    let elsewhere = root.path().join("elsewhere");
    let out = build(&server, &collection, &elsewhere, url);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(
        text(&out).contains("another work directory made"),
        "{}",
        text(&out)
    );
    let out = resourcesync(&["sync", "--delete", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(
        served(&mirror)["r/4.txt"],
        body(4, 0),
        "nothing of the refused builds published"
    );
    // The work directory's own goes on.
    let out = build(&server, &collection, &work, url);
    assert!(out.status.success(), "{}", text(&out));
    let out = resourcesync(&["sync", "--delete", &base, dir]);
    assert!(out.status.success(), "{}", text(&out));
    same(
        &served(&mirror),
        &files(&collection),
        "the third build, synced",
    );
}
