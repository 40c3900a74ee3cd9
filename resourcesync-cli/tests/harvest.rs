//! `resourcesync sync --sources FILE`: many Sources in one run of the command, against a
//! farm of simulated Sources on 127.0.0.1 and a publication of `build` served by
//! `serve`: each Source that can be synced is (its directory equal to its Source, then
//! audited by a sync of its own), the one that fails or hangs is in the table with why,
//! a second run goes on incrementally, `--json` says the same as objects, a bad file is
//! refused naming the entry, and `--follow` follows every Source until SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use resourcesync_testkit::driver::{populate, text};
use resourcesync_testkit::farm::Farm;
use resourcesync_testkit::served::Fault;

#[path = "common/building.rs"]
mod building;
#[path = "common/process.rs"]
mod process;
#[path = "common/server.rs"]
mod server;

fn resourcesync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(args)
        .output()
        .unwrap()
}

const FAILING: usize = 3;
const HANGING: usize = 4;

/// A farm of five Sources (three good, one answering 500, one hanging), a sixth built
/// and served by the command, and a Sources file naming them all.
struct Setup {
    farm: Farm,
    _server: server::Server,
    served_base: String,
    root: tempfile::TempDir,
    file: std::path::PathBuf,
}

fn setup(extra: &str) -> Setup {
    let farm = Farm::start(5, |i, s| populate(s, 4 + 5 * i));
    for (i, served) in farm.sources.iter().enumerate() {
        match i {
            FAILING => served.faults(|_, _| Some(Fault::Status(500))),
            HANGING => served.faults(|_, _| Some(Fault::Slow(60_000))),
            _ => served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(20))),
        }
    }
    let root = tempfile::tempdir().unwrap();
    let (collection, publish) = (root.path().join("collection"), root.path().join("publish"));
    std::fs::create_dir_all(&publish).unwrap();
    for i in 0..12 {
        building::put(
            &collection,
            &format!("doc/{i}.txt"),
            format!("document {i}").as_bytes(),
        );
    }
    let (server, served_base) = server::serve(&publish);
    let out = building::build_output_at(&served_base, &collection, &publish, &[]);
    assert!(out.status.success(), "{}", text(&out));
    let mut toml =
        format!("[limits]\nper-host = 2\nsources = 4\n\n[defaults]\nconcurrency = 6\n{extra}\n");
    for (i, served) in farm.sources.iter().enumerate() {
        toml.push_str(&format!(
            "[[source]]\nname = \"farm {i}\"\nurl = \"{}\"\ndir = \"mirror/{i}\"\n",
            served.base
        ));
        if i == HANGING {
            toml.push_str("max-time = \"2s\"\n");
        }
    }
    toml.push_str(&format!(
        "[[source]]\nname = \"built\"\nurl = \"{served_base}\"\ndir = \"mirror/built\"\ndelete = true\n"
    ));
    let file = root.path().join("sources.toml");
    std::fs::write(&file, toml).unwrap();
    Setup {
        farm,
        _server: server,
        served_base,
        root,
        file,
    }
}

#[test]
fn every_source_is_synced_and_reported_and_a_second_run_goes_on_incrementally() {
    let s = setup("");
    let out = resourcesync(&["sync", "--sources", s.file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no row for {name}: {}", text(&out)))
            .to_owned()
    };
    assert!(stdout.starts_with("SOURCE "), "{stdout}");
    for i in [0, 1, 2] {
        assert!(
            row(&format!("farm {i}")).contains(" complete "),
            "{}",
            row(&format!("farm {i}"))
        );
        s.farm.sources[i]
            .equals(&s.root.path().join(format!("mirror/{i}")))
            .unwrap();
        assert!(s.farm.sources[i].max_in_flight() <= 2);
    }
    assert!(row("farm 3").contains(" incomplete "), "{}", row("farm 3"));
    assert!(row("farm 3").contains("500"), "{}", row("farm 3"));
    assert!(row("farm 4").contains(" timed out "), "{}", row("farm 4"));
    assert!(row("built").contains(" complete "), "{}", row("built"));
    assert!(
        stdout.contains("harvest: 6 Sources, 4 complete, 2 not"),
        "{stdout}"
    );
    // Problems come named by their Source as they happen.
    assert!(stderr.contains("farm 3: problem: "), "{stderr}");
    // The served publication: its own sync audits the directory the harvest filled.
    let dir = s.root.path().join("mirror/built");
    let audit = resourcesync(&["sync", "--audit", &s.served_base, dir.to_str().unwrap()]);
    assert!(audit.status.success(), "{}", text(&audit));
    assert!(String::from_utf8_lossy(&audit.stdout).contains("in sync"));

    // Again, in JSON: each Source's state was kept, so the good ones go on incrementally.
    let out = resourcesync(&["sync", "--json", "--sources", s.file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let objects: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sources: Vec<&serde_json::Value> = objects.iter().filter_map(|o| o.get("source")).collect();
    assert_eq!(sources.len(), 6);
    for o in &sources {
        let name = o["name"].as_str().unwrap();
        match name {
            "farm 3" => assert_eq!(o["status"], "incomplete"),
            "farm 4" => assert_eq!(o["status"], "timed out"),
            _ => {
                assert_eq!(o["status"], "complete", "{o}");
                assert_eq!(o["mode"], "incremental", "{o}");
                assert!(o["next_due"].as_str().unwrap().ends_with('Z'), "{o}");
            }
        }
    }
    let harvest = objects.last().unwrap();
    assert_eq!(harvest["harvest"]["complete"], 4, "{harvest}");
}

#[test]
fn a_bad_sources_file_is_refused_naming_the_entry() {
    let root = tempfile::tempdir().unwrap();
    let file = root.path().join("s.toml");
    std::fs::write(
        &file,
        "[[source]]\nurl = \"http://127.0.0.1:9/\"\ndir = \"a\"\nconcurency = 3\n",
    )
    .unwrap();
    let out = resourcesync(&["sync", "--sources", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("s.toml: source 1 (http://127.0.0.1:9/): unknown field `concurency`"),
        "{stderr}"
    );
    // Options of a single sync do not mix with a file's.
    let out = resourcesync(&["sync", "--delete", "--sources", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(!root.path().join("a").exists());
}

#[test]
fn follow_keeps_every_source_in_step_until_stopped() {
    let s = setup("interval = \"1s\"\n");
    let mut child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--follow", "--sources", s.file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let wait_for = |what: &dyn Fn(&str) -> bool, within: Duration| {
        let deadline = Instant::now() + within;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match rx.recv_timeout(left) {
                Ok(line) if what(&line) => return line,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("nothing came within {within:?}");
    };
    // Each good Source's first run.
    for name in ["farm 0", "farm 1", "farm 2", "built"] {
        let prefix = format!("{name}: ");
        wait_for(
            &|l: &str| l.starts_with(&prefix) && l.contains("complete"),
            Duration::from_secs(30),
        );
    }
    // A change at a farm Source is fetched by its next run, a second later.
    s.farm.sources[1].change(|src| src.put("r/new.txt", b"new"));
    wait_for(
        &|l: &str| l.starts_with("farm 1: incremental: 1 created"),
        Duration::from_secs(30),
    );
    s.farm.sources[1]
        .equals(&s.root.path().join("mirror/1"))
        .unwrap();
    process::signal(&child, process::Signal::TERM);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
}

#[test]
fn an_interrupted_harvest_keeps_what_it_stored_and_a_rerun_completes() {
    // Four slow Sources, two at a time: SIGINT comes while they are under way.
    let farm = Farm::start(4, |i, s| populate(s, 30 + i));
    for served in &farm.sources {
        served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(60)));
    }
    let root = tempfile::tempdir().unwrap();
    let mut toml = String::from("[limits]\nsources = 2\n[defaults]\nconcurrency = 2\n");
    for (i, served) in farm.sources.iter().enumerate() {
        toml.push_str(&format!(
            "[[source]]\nname = \"s{i}\"\nurl = \"{}\"\ndir = \"m/{i}\"\n",
            served.base
        ));
    }
    let file = root.path().join("sources.toml");
    std::fs::write(&file, toml).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .args(["sync", "--sources", file.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Stopped once any Source stored something: which two start first is the
    // runtime's to choose (tasks wait for the two places in any order).
    let journals: Vec<_> = (0..4)
        .map(|i| {
            root.path()
                .join(format!("m/{i}/.resourcesync/placed.jsonl"))
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    while journals
        .iter()
        .all(|j| std::fs::metadata(j).map_or(true, |m| m.len() == 0))
    {
        assert!(Instant::now() < deadline, "nothing stored");
        std::thread::sleep(Duration::from_millis(20));
    }
    process::signal(&child, process::Signal::INT);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(" interrupted "), "{stdout}");
    assert!(
        stdout.contains("harvest: 4 Sources, 0 complete, 4 not, interrupted"),
        "{stdout}"
    );
    // What was stored stays stored: the rerun fetches only the rest, and completes.
    let out = resourcesync(&["sync", "--json", "--sources", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let mut fetched = 0;
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let o: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(s) = o.get("source") {
            assert_eq!(s["status"], "complete", "{s}");
            fetched += s["report"]["created"].as_u64().unwrap();
        }
    }
    let total: u64 = (0..4).map(|i| 31 + i).sum();
    assert!(fetched < total, "the rerun fetched {fetched} of {total}");
    for (i, served) in farm.sources.iter().enumerate() {
        served.equals(&root.path().join(format!("m/{i}"))).unwrap();
    }
}

#[test]
fn followers_that_cannot_start_are_told_at_once_and_the_command_ends() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("taken"), b"a file, not a directory").unwrap();
    let file = root.path().join("sources.toml");
    std::fs::write(
        &file,
        "[[source]]\nname = \"one\"\nurl = \"http://127.0.0.1:9/\"\ndir = \"taken/one\"\n\
         [[source]]\nname = \"two\"\nurl = \"http://127.0.0.1:9/\"\ndir = \"taken/two\"\n",
    )
    .unwrap();
    let out = resourcesync(&["sync", "--follow", "--sources", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("one: cannot follow: ") && stderr.contains("two: cannot follow: "),
        "{stderr}"
    );
}
