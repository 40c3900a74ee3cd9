//! `resourcesync sync --shard K/N`: one Source's resources split over N processes into one
//! directory, each with its own state; together they equal one sync (audited as one by an
//! audit without --shard, and compared with the Source byte for byte). A shard killed
//! mid-run and run again loses nothing; the shards go on incrementally; a run that is no
//! shard of the split is refused.

use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use resourcesync_testkit::driver::text;
use resourcesync_testkit::served::{Fault, Served};

fn resourcesync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .output()
        .unwrap()
}

fn spawn(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn shards_fill_one_directory_as_one_sync_would() {
    let served = Served::start(|s| {
        for i in 0..90 {
            s.put(
                &format!("r/{i}.txt"),
                format!("resource {i}").repeat(50).as_bytes(),
            );
        }
        s.tick(10);
    });
    // Slow enough that a shard can be killed in the middle of its run.
    served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(40)));
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("mirror");
    let d = dir.to_str().unwrap();
    let base = served.base.as_str();

    // Three shards at once, one of them killed once it stored something.
    let mut children: Vec<Child> = (0..3)
        .map(|k| {
            spawn(&[
                "sync",
                "--concurrency",
                "2",
                "--shard",
                &format!("{k}/3"),
                base,
                d,
            ])
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    let kept = root
        .path()
        .join("mirror/.resourcesync/shards/1-of-3/placed.jsonl");
    // Stored: a file its journal names is in place (a line is written before its
    // file's rename, a batch's lines before the batch's renames).
    let placed = || {
        let journal = std::fs::read_to_string(&kept).unwrap_or_default();
        journal.lines().any(|line| {
            serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|line| line["path"].as_str().map(|p| dir.join(p).is_file()))
                .unwrap_or(false)
        })
    };
    while !placed() {
        assert!(Instant::now() < deadline, "shard 1 stored nothing");
        std::thread::sleep(Duration::from_millis(20));
    }
    children[1].kill().unwrap();
    children[1].wait().unwrap();
    for k in [0, 2] {
        let out = children
            .remove(if k == 0 { 0 } else { 1 })
            .wait_with_output()
            .unwrap();
        assert!(out.status.success(), "shard {k}: {}", text(&out));
    }
    // Not whole yet: shard 1 was killed.
    let audit = resourcesync(&["sync", "--audit", base, d]);
    assert_eq!(audit.status.code(), Some(1), "{}", text(&audit));
    // Rerun: it goes on from what it stored (its state and journal are its own).
    let out = resourcesync(&["sync", "--json", "--shard", "1/3", base, d]);
    assert!(out.status.success(), "{}", text(&out));
    let summary: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).lines().last().unwrap()).unwrap();
    let created = summary["summary"]["created"].as_u64().unwrap();
    let listed = summary["summary"]["listed"].as_u64().unwrap();
    assert!(
        created < listed,
        "the rerun fetched {created} of its {listed}: what it stored before was lost"
    );
    // Whole: the directory is the Source's, and an audit of the whole says so.
    served.equals(&dir).unwrap();
    let audit = resourcesync(&["sync", "--audit", base, d]);
    assert!(audit.status.success(), "{}", text(&audit));
    let line = String::from_utf8_lossy(&audit.stdout);
    assert!(
        line.contains("90 unchanged") && line.contains(" 0 extra, in sync"),
        "{line}"
    );
    // Each shard audits its own part.
    for k in 0..3 {
        let out = resourcesync(&["sync", "--audit", "--shard", &format!("{k}/3"), base, d]);
        assert!(out.status.success(), "shard {k}: {}", text(&out));
    }

    // The Source changes; each shard goes on incrementally.
    served.change(|s| {
        s.put("r/new-1.txt", b"new one");
        s.put("r/new-2.txt", b"new two");
        s.put("r/0.txt", b"changed");
        s.delete("r/5.txt");
    });
    for k in 0..3 {
        let out = resourcesync(&["sync", "--delete", "--shard", &format!("{k}/3"), base, d]);
        assert!(out.status.success(), "shard {k}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("incremental:"),
            "{}",
            text(&out)
        );
    }
    served.equals(&dir).unwrap();
    let audit = resourcesync(&["sync", "--audit", base, d]);
    assert!(audit.status.success(), "{}", text(&audit));

    // A run that is no shard of this split is refused, touching nothing.
    for refused in [
        vec!["sync", base, d],
        vec!["sync", "--shard", "0/2", base, d],
    ] {
        let out = resourcesync(&refused);
        assert_eq!(out.status.code(), Some(2), "{refused:?}: {}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("is kept by shards"),
            "{}",
            text(&out)
        );
    }
    let out = resourcesync(&["sync", "--shard", "3/3", base, d]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not K/N with K below N"));
}

#[test]
fn shards_and_unsharded_runs_keep_out_of_each_other() {
    let served = Served::start(|s| {
        for i in 0..30 {
            s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
        }
        s.tick(10);
    });
    served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(100)));
    let root = tempfile::tempdir().unwrap();
    let base = served.base.as_str();

    // A directory a sync without --shard keeps is not taken over by shards.
    let whole = root.path().join("whole");
    let out = resourcesync(&["sync", base, whole.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let out = resourcesync(&["sync", "--shard", "0/2", base, whole.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("was synced without --shard"));

    // While a shard runs, neither an unsharded run nor an audit of the whole starts.
    let dir = root.path().join("sharded");
    let d = dir.to_str().unwrap();
    let mut running = spawn(&["sync", "--concurrency", "1", "--shard", "0/2", base, d]);
    let lock = dir.join(".resourcesync/shards/0-of-2/lock");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !lock.exists() {
        assert!(Instant::now() < deadline, "the shard never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    for args in [vec!["sync", "--audit", base, d], vec!["sync", base, d]] {
        let out = resourcesync(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("another sync is using"),
            "{args:?}: {stderr}"
        );
    }
    // The other shard of the split runs beside it.
    let out = resourcesync(&["sync", "--shard", "1/2", base, d]);
    assert!(out.status.success(), "{}", text(&out));
    running.kill().unwrap();
    running.wait().unwrap();

    // A shard directory not named as a shard's is no shard of any split.
    std::fs::create_dir(dir.join(".resourcesync/shards/00-of-2")).unwrap();
    let out = resourcesync(&["sync", "--shard", "0/2", base, d]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let out = resourcesync(&["sync", "--audit", base, d]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!dir.join(".resourcesync/shards/00-of-2/lock").exists());
}
