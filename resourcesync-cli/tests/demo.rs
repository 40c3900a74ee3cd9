//! `resourcesync demo`: the whole run ends in sync and leaves nothing behind; `--source`
//! synchronizes from a Source served by `resourcesync serve` in another process.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

#[path = "common/help.rs"]
mod help;
#[path = "common/server.rs"]
mod server;

fn resourcesync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .output()
        .expect("run resourcesync")
}

/// The JSON lines of an output: the steps, then the summary.
fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn step<'a>(lines: &'a [Value], name: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["step"] == name).collect()
}

#[test]
fn the_whole_demo_ends_in_sync_and_cleans_up() {
    let out = resourcesync(&["demo", "--resources", "300", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = lines(&out);

    let generated = step(&lines, "generate")[0];
    assert_eq!(generated["detail"]["resources"], 300);
    let builds = step(&lines, "build");
    assert_eq!(builds.len(), 2);
    assert_eq!(builds[0]["detail"]["created"], 300);
    let changed = &step(&lines, "change")[0]["detail"];
    assert_eq!(builds[1]["detail"]["created"], changed["created"]);
    assert_eq!(builds[1]["detail"]["updated"], changed["updated"]);
    assert_eq!(builds[1]["detail"]["deleted"], changed["deleted"]);

    // By dump: every resource, from a few package requests rather than one per resource.
    let dump = &step(&lines, "sync (dump)")[0]["detail"];
    assert_eq!(dump["created"], 300);
    assert!(dump["requests"].as_u64().unwrap() < 20, "{dump}");
    // Incremental: exactly the changes.
    let sync = &step(&lines, "sync")[0]["detail"];
    assert_eq!(sync["created"], changed["created"]);
    assert_eq!(sync["updated"], changed["updated"]);
    assert_eq!(sync["deleted"], changed["deleted"]);
    let audit = &step(&lines, "audit")[0]["detail"];
    assert_eq!(audit["in_sync"], true);
    assert_eq!(
        step(&lines, "compare")[0]["detail"]["differences"],
        Value::Array(vec![])
    );
    let summary = &lines.last().unwrap()["summary"];
    assert_eq!(summary["in_sync"], true);
    // As many resources as the collection holds after the change; every sync's bytes and
    // requests added up.
    let expected =
        300 + changed["created"].as_u64().unwrap() - changed["deleted"].as_u64().unwrap();
    assert_eq!(summary["resources"], expected);
    let syncs = ["sync (dump)", "sync", "audit"].map(|s| &step(&lines, s)[0]["detail"]);
    let sum = |field: &str| {
        syncs
            .iter()
            .map(|d| d[field].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(summary["bytes"], sum("bytes"));
    assert_eq!(summary["requests"], sum("requests"));

    // The temporary directory is gone.
    let collection = generated["detail"]["directory"].as_str().unwrap();
    assert!(!Path::new(collection).exists());
    assert!(!Path::new(collection).parent().unwrap().exists());
}

#[test]
fn the_text_output_says_each_step_and_the_summary() {
    let root = tempfile::tempdir().unwrap();
    let keep = root.path().join("kept");
    let out = resourcesync(&[
        "demo",
        "--resources",
        "50",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Each step's name, right-aligned at the start of its line.
    let steps = [
        "generate",
        "build",
        "serve",
        "sync (dump)",
        "change",
        "sync",
        "audit",
        "compare",
    ];
    for step in steps {
        let start = format!("{step:>12}  ");
        assert!(
            stdout.lines().any(|l| l.starts_with(&start)),
            "{step} missing from:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("the destination is in sync with the Source"),
        "{stdout}"
    );
    // --keep keeps all three directories, and refuses to run in them again.
    for dir in ["collection", "publication", "destination"] {
        assert!(keep.join(dir).exists(), "{dir}");
    }
    let again = resourcesync(&[
        "demo",
        "--resources",
        "50",
        "--keep",
        keep.to_str().unwrap(),
    ]);
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("not empty"));
}

#[test]
fn the_destination_half_syncs_from_any_source() {
    let root = tempfile::tempdir().unwrap();
    let (coll, publish) = (root.path().join("coll"), root.path().join("pub"));
    for i in 0..40 {
        let path = coll.join(format!("dir{}/r{i}.txt", i % 4));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, format!("resource {i}\n").repeat(i + 1)).unwrap();
    }
    // The server first, on a port of its choosing, serving an empty directory that the
    // build then turns into its publication (the server resolves it per request).
    std::fs::create_dir(&publish).unwrap();
    let (_server, base) = server::serve(&publish);
    let out = resourcesync(&[
        "build",
        "--resource-dump",
        "--base-url",
        &base,
        coll.to_str().unwrap(),
        publish.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = resourcesync(&["demo", "--source", &base, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = lines(&out);
    assert_eq!(step(&lines, "baseline")[0]["detail"]["created"], 40);
    assert_eq!(step(&lines, "audit")[0]["detail"]["in_sync"], true);
    assert_eq!(lines.last().unwrap()["summary"]["in_sync"], true);
}

#[test]
fn help_says_each_option_the_output_and_exit_status() {
    help::assert_help(
        &[&["demo", "--help"], &["help", "demo"]],
        &[
            "Usage: resourcesync demo [OPTIONS]",
            "--source <URL>",
            "--resources <N>",
            "--keep <DIR>",
            "--json",
            "{\"summary\": {\"in_sync\"",
            "Exit status:\n  0  every step completed and the destination is in sync",
            "  1  a sync did not complete",
            "  2  a step could not run",
        ],
    );
    let out = resourcesync(&["demo", "--resources", "many"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--resources"));
}

#[test]
fn the_live_demo_times_each_change_from_publication_to_disk() {
    let out = resourcesync(&["demo", "--resources", "50", "--live", "3", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines = lines(&out);
    assert_eq!(step(&lines, "follow").len(), 1);
    let live = step(&lines, "live");
    assert_eq!(live.len(), 4, "{live:?}");
    for (n, change) in live[..3].iter().enumerate() {
        let detail = &change["detail"];
        assert_eq!(detail["path"], format!("live/change-{}.txt", n + 1));
        let ms = detail["latency_ms"].as_f64().unwrap();
        assert!(ms > 0.0 && ms < 10_000.0, "{detail}");
    }
    assert_eq!(live[3]["detail"]["arrived"], 3);
    // The live changes are in the audit and the comparison too.
    let audit = &step(&lines, "audit")[0]["detail"];
    assert_eq!(audit["in_sync"], true);
    assert_eq!(
        step(&lines, "compare")[0]["detail"]["differences"],
        serde_json::json!([])
    );
    assert_eq!(lines.last().unwrap()["summary"]["in_sync"], true);
}
