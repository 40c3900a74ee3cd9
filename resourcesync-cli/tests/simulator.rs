//! `resourcesync sync` against the Python reference simulator (`resync-simulator` from
//! PyPI) while it keeps changing: a baseline, incremental syncs, and once it is quiet a
//! sync that converges and an audit that finds the destination in sync.
//!
//! `.ci/run` installs the simulator in `.venv`; elsewhere set `RESOURCESYNC_PYTHON` to a
//! Python that has it. Without it the test is reported ignored (this binary's harness is
//! `resourcesync_testkit::needs`), unless it is required: on CI (`CI` set to anything but
//! `false`) or when `RESOURCESYNC_PYTHON` is set, a missing simulator fails it.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const LAUNCHER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/simulator/launch.py");

use resourcesync_testkit::{needs, python};

fn main() -> std::process::ExitCode {
    needs::main(vec![needs::trial(
        "syncs_converge_with_the_python_simulator_while_it_changes",
        &python::find("simulator.source, resync", &[]),
        syncs_converge_with_the_python_simulator_while_it_changes,
    )])
}

/// The simulator's process, killed when dropped; its "ready" and "quiet" lines.
struct Simulator {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Simulator {
    fn start(python: &PathBuf, port: u16, resources: u32, events: u32, delay: f64) -> Simulator {
        let mut child = Command::new(python)
            .args([
                LAUNCHER,
                &port.to_string(),
                &resources.to_string(),
                &events.to_string(),
                &delay.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the simulator");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let simulator = Simulator { child, lines };
        simulator.wait_for("ready", Duration::from_secs(60));
        simulator
    }

    fn wait_for(&self, line: &str, within: Duration) {
        let got = self
            .lines
            .recv_timeout(within)
            .expect("the simulator says where it is");
        assert_eq!(got, line);
    }
}

impl Drop for Simulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sync(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_resourcesync"))
        .arg("sync")
        .args(args)
        .output()
        .expect("run resourcesync")
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One trial: the simulator changes while syncs run, then is quiet; the first sync
/// after that completes and the audit finds DIR in sync.
fn trial(python: &PathBuf, trial: u32) {
    let port = free_port();
    // 200 resources, then 150 changes, one every 20 ms: about 3 s of changes.
    let simulator = Simulator::start(python, port, 200, 150, 0.02);
    let base = format!("http://127.0.0.1:{port}/");
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("dest");
    let d = dest.to_str().unwrap();
    // While it changes: a baseline (maybe incomplete, when a resource changes between
    // the list and its fetch: then the next run is a baseline again), then incremental
    // syncs, which fall back to a baseline in the same run when the simulator's Change
    // List does not reach back to their checkpoint; none may fail to run.
    for _ in 0..4 {
        let out = sync(&["--delete", &base, d]);
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "trial {trial}: {}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    simulator.wait_for("quiet", Duration::from_secs(120));
    // Quiet now: the next sync converges, by itself.
    let out = sync(&["--delete", &base, d]);
    assert_eq!(out.status.code(), Some(0), "trial {trial}: {}", text(&out));
    let out = sync(&["--audit", &base, d]);
    assert_eq!(out.status.code(), Some(0), "trial {trial}: {}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains(", in sync"),
        "trial {trial}: {}",
        text(&out)
    );
    // And the files are the simulator's: as many as its Resource List lists.
    let files = std::fs::read_dir(dest.join("resources")).unwrap().count();
    assert!(files > 100, "trial {trial}: {files} files");
    drop(simulator);
}

/// Five trials, every one converging (issue 22: 0 of 5, then 2 of 5, before the
/// fallback to a baseline).
fn syncs_converge_with_the_python_simulator_while_it_changes(python: PathBuf) {
    for n in 1..=5 {
        trial(&python, n);
    }
}
