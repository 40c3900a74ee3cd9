//! Replays the committed corpus of the `client` fuzz target (in `fuzz/corpus/client/`)
//! with the same driver and assertions (`fuzz/common/client.rs`), so plain `cargo test`
//! exercises it; every crash a fuzzer finds is added there as a named file, and its
//! minimal form as a test in `fuzz_regressions.rs`.

#[path = "../../../fuzz/common/client.rs"]
#[allow(dead_code, unreachable_pub)]
pub(crate) mod script;

fn corpus() -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/../fuzz/corpus/client", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| {
            let path = e.unwrap().path();
            (path.display().to_string(), std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    files
}

/// The seeds, as `script::seeds` makes them, are committed in the corpus.
#[test]
fn the_seeds_are_in_the_corpus() {
    let dir = format!("{}/../fuzz/corpus/client", env!("CARGO_MANIFEST_DIR"));
    for (name, bytes) in script::seeds() {
        let path = format!("{dir}/{name}");
        if std::env::var_os("WRITE_SEEDS").is_some() {
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{path}: {e} (WRITE_SEEDS=1 cargo test writes the seeds)"));
        assert_eq!(
            committed, bytes,
            "{path} is not the seed script_seeds makes"
        );
    }
}

/// Every file of the corpus played: no panic, the bounds kept, every run ended.
#[test]
fn the_client_corpus_plays_within_bounds() {
    let files = corpus();
    assert!(files.len() >= 10, "the client corpus is missing");
    for (name, bytes) in files {
        if let Err(e) = std::panic::catch_unwind(|| {
            script::run(&bytes);
        }) {
            let message = e
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{name}: {message}");
        }
    }
}

/// The seeds go deep: honest runs of every mode end complete.
#[test]
fn honest_seeds_reach_the_end() {
    for (name, bytes) in script::seeds() {
        let report = script::run(&bytes).unwrap_or_else(|| panic!("{name}: no Done"));
        eprintln!("{name}: {report:?}");
        assert!(report.documents >= 1, "{name}: {report:?}");
    }
}

/// Plays one script named by `CLIENT_SCRIPT` (a fuzz artifact), printing its report:
/// `CLIENT_SCRIPT=path cargo test -p resourcesync-client --test client replay -- --ignored --nocapture`.
#[test]
#[ignore]
fn replay() {
    let path = std::env::var("CLIENT_SCRIPT").expect("CLIENT_SCRIPT names a script");
    let bytes = std::fs::read(&path).unwrap();
    let started = std::time::Instant::now();
    let report = script::run(&bytes);
    eprintln!("{path}: {:?} in {:?}", report, started.elapsed());
}
