//! Tests of the object-store Destination: its lease, its run into a prefix, its recovery.

use super::*;

use resourcesync_testkit::objects::keys;

/// The prefix `p` of `store` opened as a sync opens it: the lease claimed, its read
/// back still to come.
fn opened(store: &Arc<dyn ObjectStore>) -> ObjectDestination {
    open_p(store, None, false, Hold::Writes { settle: false }).unwrap()
}

/// The prefix `p` of `store` opened for `shard` (or the whole, `whole`) as `hold` says.
fn open_p(
    store: &Arc<dyn ObjectStore>,
    shard: Option<Shard>,
    whole: bool,
    hold: Hold,
) -> Result<ObjectDestination, DestinationError> {
    let (prefix, shown, lease) = (
        Key::from("p"),
        PathBuf::from("memory:///p"),
        Duration::from_secs(5),
    );
    ObjectDestination::open_inner(store.clone(), prefix, shown, lease, shard, whole, hold)
}

/// Puts another writer's lease, valid for a minute, on the prefix `p`; its key.
fn another_s_lease(runner: &Runner, store: &Arc<dyn ObjectStore>) -> Key {
    let lock = Key::from("p/.resourcesync/lock");
    let other = format!(
        r#"{{"owner":"another","until_ms":{}}}"#,
        resourcesync_objects::now_ms() + 60_000
    );
    let (store, key) = (store.clone(), lock.clone());
    runner
        .run(async move { store.put(&key, other.into()).await.map(drop) })
        .unwrap()
        .unwrap();
    lock
}

/// A Source of `n` resources, and a sync of it into `dest` (its future, for a
/// runtime of the caller's).
fn resources_into(
    n: usize,
    dest: ObjectDestination,
) -> (
    resourcesync_testkit::served::Served,
    impl std::future::Future<Output = Result<crate::Synced, crate::SyncError>> + use<>,
) {
    let served = resourcesync_testkit::served::Served::start(|s| {
        for i in 0..n {
            s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
        }
        s.tick(10);
    });
    let sync = sync_from(dest, options(&served.base));
    (served, sync)
}

/// A memory store whose prefix `p` a sync filled with a Source's three resources, the
/// Source, and a runtime for the runs after.
fn three_synced() -> (
    Arc<dyn ObjectStore>,
    resourcesync_testkit::served::Served,
    tokio::runtime::Runtime,
) {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let (served, sync) = resources_into(3, opened(&store));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(runtime.block_on(sync).unwrap().report.created, 3);
    (store, served, runtime)
}

/// The options of a sync of the Source at `base` into the prefix.
fn options(base: &str) -> SyncOptions {
    SyncOptions::new(base.parse().unwrap(), "memory:///p")
}

/// A sync into `dest` with `options` (its future, for a runtime of the caller's).
fn sync_from(
    dest: ObjectDestination,
    options: SyncOptions,
) -> impl std::future::Future<Output = Result<crate::Synced, crate::SyncError>> + use<> {
    let mut dest = Some(dest);
    let open = move |_: &SyncOptions| {
        dest.take()
            .ok_or_else(|| crate::SyncError::Http("opened twice".into()))
    };
    async move {
        let (gate, stop) = (crate::gate::Gate::unlimited(), Default::default());
        crate::asynchronous::sync_into(&options, open, &gate, &stop, &mut ()).await
    }
}

/// A dry run or an audit of a prefix a sync keeps writes nothing there: no probe of the
/// store's conditions, no lease (it wrote both, and with credentials that may only read
/// it could not start). It reads the lease instead, and is refused while another run's
/// is live, as a run that writes would be.
#[test]
fn a_dry_run_or_an_audit_of_a_prefix_writes_nothing_there() {
    let (store, served, runtime) = three_synced();
    served.change(|s| {
        s.tick(1);
        s.put("r/new.txt", b"new at the Source");
        s.tick(1);
    });
    let hooked = Arc::new(resourcesync_testkit::objects::Hooked::new(store.clone()).read_only());
    let read_only: Arc<dyn ObjectStore> = hooked.clone();
    let open = |whole| open_p(&read_only, None, whole, Hold::Reads);
    let before = keys(&*store);
    for audit in [false, true] {
        let dest = open(audit).unwrap();
        let mut options = options(&served.base);
        options.dry_run = !audit;
        options.audit = audit;
        // What `open_for` opens for them.
        assert_eq!(Hold::of(&options), Hold::Reads);
        let sync = sync_from(dest, options);
        let synced = runtime.block_on(sync).unwrap();
        let report = &synced.report;
        match audit {
            true => assert_eq!(
                (report.missing, report.in_sync),
                (1, Some(false)),
                "{synced}"
            ),
            false => assert_eq!(report.created, 1, "{synced}"),
        }
        assert_eq!(report.failed, 0, "{synced}");
    }
    assert_eq!(keys(&*store), before);
    assert_eq!(hooked.refusals(), 0, "a write was tried");
    // Nor could a caller write through it (no lease held, no conditions known).
    let dest = open(false).unwrap();
    let written = dest.write_kept(STATE, b"{}".to_vec());
    assert!(
        matches!(written, Err(DestinationError::Store { .. })),
        "{written:?}"
    );
    assert_eq!(hooked.refusals(), 0);
    assert_eq!(
        Hold::of(&options(&served.base)),
        Hold::Writes { settle: false }
    );
    // Another run's lease, live: refused before anything is read of the Source.
    let runner = Runner::new("test").unwrap();
    another_s_lease(&runner, &store);
    for whole in [false, true] {
        let opened = open(whole);
        assert!(
            matches!(&opened, Err(DestinationError::Busy { lock, .. })
                if lock == Path::new("p/.resourcesync/lock")),
            "{:?}",
            opened.as_ref().err()
        );
    }
}

/// A prefix a Source is published to (its state in `.resourcesync/state.json`, as
/// `resourcesync build` keeps it) is refused before anything is written there: no
/// probe, no lease, the state as it was (the store's strict reading of the state
/// refused it only after both).
#[test]
fn a_publication_s_prefix_is_refused_before_anything_is_written_there() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let runner = Runner::new("test").unwrap();
    let state = Key::from("p/.resourcesync/state.json");
    let published = r#"{"version":2,"base_url":"http://example.com/","sets":{}}"#;
    let (put, key) = (store.clone(), state.clone());
    runner
        .run(async move { put.put(&key, published.into()).await.map(drop) })
        .unwrap()
        .unwrap();
    for shard in [None, Some(Shard::new(1, 2).unwrap())] {
        let opened = open_p(&store, shard, false, Hold::Writes { settle: false });
        assert!(
            matches!(&opened, Err(DestinationError::Publication { state, .. })
                if state == Path::new("p/.resourcesync/state.json")),
            "{opened:?}"
        );
        assert_eq!(keys(&*store), vec![state.to_string()]);
    }
    // A Destination's own state is no publication.
    let (put, key) = (store.clone(), state.clone());
    runner
        .run(async move { put.put(&key, r#"{"sets":{}}"#.into()).await.map(drop) })
        .unwrap()
        .unwrap();
    drop(opened(&store));
}

#[test]
fn a_run_whose_lease_is_found_another_s_writes_nothing_and_ends_busy() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let runner = Runner::new("test").unwrap();
    let dest = opened(&store);
    // Another writer's lease lands before the read back, as a second writer let
    // through by a store whose conditional create is not atomic would have it.
    let lock = another_s_lease(&runner, &store);
    // The first write waits for the read back, and is refused.
    let written = dest.write_kept(STATE, b"{}".to_vec());
    assert!(
        matches!(written, Err(DestinationError::Busy { .. })),
        "{written:?}"
    );
    // And every later step says so at once.
    assert!(matches!(dest.refused(), Err(DestinationError::Busy { .. })));
    drop(dest);
    // Nothing of the run's under the prefix; the other's lease left as it was.
    assert_eq!(keys(&*store), vec!["p/.resourcesync/lock".to_owned()]);
    let left = runner
        .run(async move { store.get(&lock).await.unwrap().bytes().await.unwrap() })
        .unwrap();
    assert!(String::from_utf8_lossy(&left).contains("another"));
}

/// A run that learns its lease is another's once resources arrive ends with
/// [`DestinationError::Busy`]; it waited for ever before (the change it refused to
/// store was never confirmed), as one of two syncs raced into a prefix did. With
/// nothing to store, its last save says it (it said "cannot save", incomplete).
#[test]
fn a_run_refused_its_lease_while_resources_arrive_ends_busy_not_waiting() {
    for n in [5, 0] {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let runner = Runner::new("test").unwrap();
        let dest = opened(&store);
        another_s_lease(&runner, &store);
        // The read back done (and found another's) before the run's first store.
        assert!(matches!(
            dest.write_kept(STATE, b"{}".to_vec()),
            Err(DestinationError::Busy { .. })
        ));
        let (_served, sync) = resources_into(n, dest);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        // Dropped (the run with it) if it waits past the timeout: the test fails
        // rather than hangs.
        let synced = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(30), sync).await })
            .unwrap_or_else(|_| panic!("{n} resources: the run still waited after 30 s"));
        assert!(
            matches!(
                synced,
                Err(crate::SyncError::Destination(DestinationError::Busy { .. }))
            ),
            "{n} resources: {synced:?}"
        );
    }
}

/// The recovery after an unfinished run takes each entry a listing gives for a key by
/// its own time and size: an object of an hour before the run, with a folder marker
/// over it made during the run, was not written by the run, and is not recorded as
/// the sync's (folded by the larger size and the later time, as the audit folds, it
/// was); an object the run wrote is.
#[test]
fn a_recovery_takes_no_old_object_for_new_by_its_folder_marker() {
    let base = "http://example.com/";
    let old = Key::from("p/r/old.txt");
    // Listed as S3 lists it with a folder marker `p/r/old.txt/` made now over the object
    // of an hour ago: object_store gives the marker as `p/r/old.txt` too.
    let inner = Arc::new(object_store::memory::InMemory::new());
    let hooked = resourcesync_testkit::objects::Hooked::new(inner).listing(move |mut meta| {
        if meta.location != old {
            return vec![meta];
        }
        meta.last_modified -= chrono::TimeDelta::hours(1);
        let marker = object_store::ObjectMeta {
            size: 0,
            last_modified: chrono::Utc::now(),
            e_tag: None,
            version: None,
            location: meta.location.clone(),
        };
        vec![meta, marker]
    });
    let store: Arc<dyn ObjectStore> = Arc::new(hooked);
    let runner = Runner::new("test").unwrap();
    let uri =
        |name: &str| -> resourcesync_model::Uri { format!("{base}r/{name}").parse().unwrap() };
    // Both stored as a sync stores them, with their marks; then the run's marker.
    for name in ["old.txt", "new.txt"] {
        let mark = placing::Mark {
            uri: Some(uri(name)),
            held: Held::new().with_length(5),
        };
        let mut attributes = Attributes::new();
        attributes.insert(
            Attribute::Metadata(placing::HELD_KEY.into()),
            AttributeValue::from(placing::mark_json(&mark).unwrap()),
        );
        let (store, key) = (store.clone(), Key::from(format!("p/r/{name}")));
        runner
            .run(async move {
                let options = PutOptions {
                    attributes,
                    ..Default::default()
                };
                store
                    .put_opts(&key, b"hello".to_vec().into(), options)
                    .await
            })
            .unwrap()
            .unwrap();
    }
    let (unfinished, marker) = (store.clone(), Key::from("p/.resourcesync/unfinished"));
    runner
        .run(async move { unfinished.put(&marker, PutPayload::default()).await })
        .unwrap()
        .unwrap();
    let dest = opened(&store);
    assert!(dest.recovering.is_some());
    let config = Config::new(base.parse().unwrap(), Mode::Baseline { prefer_dump: false }).unwrap();
    let mut inventory = dest.open_inventory().unwrap();
    dest.replay(&config, &mut inventory);
    assert!(inventory.stored(&uri("new.txt")).is_some());
    assert_eq!(inventory.stored(&uri("old.txt")), None);
}

/// A sync into a prefix takes its resources' bodies in memory, not through their
/// temporary files: with the run's directory for them gone, every resource is still
/// fetched, checked and stored (the directory destination, or this one if
/// `keeps_in_memory` said no, fails each one at its file).
#[test]
fn a_sync_into_a_prefix_keeps_its_resources_in_memory() {
    let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
    let dest = opened(&store);
    // Nothing can be made in the bodies' directory from here on.
    std::fs::remove_dir(dest.work.path().join("tmp")).unwrap();
    let (_served, sync) = resources_into(5, dest);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let synced = runtime.block_on(sync).unwrap();
    assert_eq!(synced.report.created, 5, "{synced}");
    assert_eq!(synced.report.failed, 0, "{synced}");
    let keys = keys(&*store);
    for i in 0..5 {
        assert!(keys.contains(&format!("p/r/{i}.txt")), "{keys:?}");
    }
}

/// A setting the store does not have is said with the store's URL once (it was twice:
/// `s3://b/q: s3://b/q: "bogus" is not a setting of an S3 store`).
#[test]
fn a_bad_setting_names_the_store_once() {
    let url = url::Url::parse("s3://bucket/q").unwrap();
    let opened = ObjectDestination::store(&url, [("bogus".to_owned(), "x".to_owned())]);
    let said = opened.err().map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        said,
        r#"s3://bucket/q: "bogus" is not a setting of an S3 store"#
    );
}

/// An object changed since the sync stored it, by a writer that kept its metadata (the
/// sync's mark) and its length: a baseline asked for reads its bytes, finds them changed,
/// and keeps it, a conflict, as it keeps any object changed since. The mark alone took
/// it for the sync's, as stored: replaced, or (its length the listed one) taken as the
/// listed bytes already, the run complete with the change still there.
#[test]
fn a_baseline_keeps_an_object_changed_under_the_sync_s_mark() {
    let (store, served, runtime) = three_synced();
    let key = Key::from("p/r/1.txt");
    let edited = b"RESOURCE 1".to_vec();
    runtime.block_on(async {
        let found = store.get(&key).await.unwrap();
        let attributes = found.attributes.clone();
        assert!(mark(&attributes).is_some(), "no mark of the sync's");
        assert_eq!(found.bytes().await.unwrap().len(), edited.len());
        let options = PutOptions {
            attributes,
            ..Default::default()
        };
        store
            .put_opts(&key, edited.clone().into(), options)
            .await
            .unwrap();
    });
    let run = |replace: bool| {
        let options = options(&served.base)
            .with_baseline(true)
            .with_replace_foreign(replace);
        // What `open_for` opens for such options.
        let dest = opened(&store).with_replace_foreign(replace);
        runtime.block_on(sync_from(dest, options)).unwrap()
    };
    let synced = run(false);
    assert_eq!(synced.report.conflicts, 1, "{synced}");
    assert!(!synced.report.complete, "{synced}");
    let held = runtime.block_on(async { store.get(&key).await.unwrap().bytes().await.unwrap() });
    assert_eq!(held.as_ref(), edited.as_slice());
    // Asked for: replaced.
    let synced = run(true);
    assert!(synced.report.complete, "{synced}");
    let held = runtime.block_on(async { store.get(&key).await.unwrap().bytes().await.unwrap() });
    assert_eq!(held.as_ref(), b"resource 1");
}
