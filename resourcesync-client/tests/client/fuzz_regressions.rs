//! Minimal forms of what fuzzing the client (`fuzz/fuzz_targets/client.rs`) found, one
//! test each, named for the bug. A run that hung is run on a thread with a deadline, so
//! that a regression fails instead of hanging the suite.

use std::sync::mpsc;
use std::time::Duration;

use resourcesync_client::{Mode, ProblemKind, Report};

use crate::sim::{Destination, Drive, Run, Source, sync};

fn source() -> Source {
    let mut s = Source::new();
    for i in 0..3 {
        s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    s.tick(10);
    s.publish();
    s
}

/// Runs `f` on a thread; fails if it takes longer than 20 s (a hang).
fn within_deadline(f: impl FnOnce() -> (Run, Report) + Send + 'static) -> (Run, Report) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the run ended (it hung before the fix)")
}

/// Fuzz artifact timeout-2326042…: an incremental run started at a Change List with no
/// checkpoint pushed `NoCheckpoint` problems forever (a hang, and the event queue grew
/// until memory ran out): `on_head` returned before recording the head, and
/// `read_document` asked for it again.
#[test]
fn incremental_from_a_change_list_without_checkpoint_ends() {
    let (run, report) = within_deadline(|| {
        let s = source();
        let mut d = Destination::default();
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "changelist.xml",
            |c| c,
            Drive::default(),
        );
        let report = run.report().clone();
        (run, report)
    });
    assert!(!report.complete);
    let no_checkpoint = run
        .events
        .iter()
        .filter(|e| matches!(e, resourcesync_client::Event::Problem(p) if p.kind == ProblemKind::NoCheckpoint))
        .count();
    assert_eq!(no_checkpoint, 1, "{:?}", run.problems());
    assert_eq!(report.problems, 1);
}
