//! The client against the simulated Source: every path, faults included.

use resourcesync_client::{Event, Mode, ProblemKind, Standing};

use crate::sim::{sync, Destination, Drive, Fault, Source};

fn source(n: usize) -> Source {
    let mut s = Source::new();
    for i in 0..n {
        s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    s.tick(10);
    s.publish();
    s
}

const BASELINE: Mode = Mode::Baseline { prefer_dump: false };

#[test]
fn a_baseline_from_discovery_brings_the_destination_in_step() {
    let s = source(25);
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert_eq!(run.problems(), Vec::<String>::new());
    let report = run.report();
    assert!(report.complete, "{report:?}");
    assert_eq!(report.created, 25);
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert_eq!(d.state.sets.len(), 1);
}
