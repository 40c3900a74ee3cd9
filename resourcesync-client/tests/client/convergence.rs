//! The property: whatever the Source's history (creates, updates, deletes over time, lists
//! rolled over, Change Lists closed and archived or dumped) and whatever faults and
//! crashes hit the syncs along the way, once the faults stop the Destination equals the
//! Source, and no resource ever went back to an older version.

use std::collections::HashMap;

use proptest::prelude::*;
use resourcesync_client::Mode;

use crate::sim::{Destination, Drive, Fault, Source, deleting, sync};

#[derive(Clone, Debug)]
enum Op {
    Put(u8),
    Delete(u8),
    Tick(u8),
    /// An incremental sync, with faults drawn from the seed, maybe a crash.
    Sync {
        faults: u64,
        crash: Option<u8>,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..10).prop_map(Op::Put),
        2 => (0u8..10).prop_map(Op::Delete),
        2 => (1u8..4).prop_map(Op::Tick),
        2 => (any::<u64>(), proptest::option::of(0u8..6)).prop_map(|(faults, crash)| Op::Sync { faults, crash }),
    ]
}

/// A fault for one request, drawn from the seed, the URI and the attempt: about one in
/// six requests.
fn faults(seed: u64) -> crate::sim::FaultFn {
    Box::new(move |uri: &str, attempt| {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(uri.as_bytes(), seed ^ u64::from(attempt));
        match h % 24 {
            0 => Some(Fault::Status(500)),
            1 => Some(Fault::Status(404)),
            2 => Some(Fault::Corrupt),
            3 => Some(Fault::Truncate((h >> 8) as usize % 64)),
            _ => None,
        }
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn syncs_converge_whatever_the_history_faults_and_crashes(
        ops in proptest::collection::vec(op(), 1..40),
        change_part in 1usize..5,
        list_part in 1usize..6,
        layout in 0u8..3,
        datetimes in any::<bool>(),
    ) {
        let mut s = Source::new();
        s.publish.change_part = change_part;
        s.publish.list_part = list_part;
        s.publish.archive = layout == 1;
        s.publish.change_dump = layout == 2;
        s.publish.datetimes = datetimes;
        let mut version = 0u32;
        let mut put = |s: &mut Source, i: u8| {
            version += 1;
            s.put(&format!("r/{i}"), format!("{i} version {version}").as_bytes());
        };
        for i in 0..4 {
            put(&mut s, i);
        }
        s.tick(1);
        s.publish();
        let mut d = Destination::default();
        let run = sync(&s, &mut d, Mode::Baseline { prefer_dump: false }, "", |c| c, Drive::default());
        prop_assert!(run.report().complete, "{:?}", run.problems());
        // The version (put order) each resource is held at, never going back.
        let mut held: HashMap<String, u32> = HashMap::new();
        for op in ops {
            match op {
                Op::Put(i) => put(&mut s, i),
                Op::Delete(i) => s.delete(&format!("r/{i}")),
                Op::Tick(t) => s.tick(i64::from(t)),
                Op::Sync { faults: seed, crash } => {
                    s.tick(1);
                    s.publish();
                    let drive = Drive { fault: Some(faults(seed)), crash_after: crash.map(u64::from), ..Drive::default() };
                    let run = sync(&s, &mut d, Mode::Incremental, "", deleting, drive);
                    prop_assert!(!run.problems().iter().any(|p| p.contains("no longer offered")), "{:?}", run.problems());
                    for (path, body) in &d.files {
                        let v: u32 = String::from_utf8_lossy(body).rsplit(' ').next().unwrap().parse().unwrap();
                        if let Some(before) = held.get(path) {
                            prop_assert!(v >= *before, "{path} went back from version {before} to {v}");
                        }
                        held.insert(path.clone(), v);
                    }
                }
            }
        }
        // The faults stop: the next syncs converge.
        s.tick(1);
        s.publish();
        let mut converged = false;
        for _ in 0..3 {
            let run = sync(&s, &mut d, Mode::Incremental, "", deleting, Drive::default());
            if run.report().complete {
                converged = true;
                break;
            }
        }
        prop_assert!(converged);
        prop_assert!(d.equals(&s), "{}", d.difference(&s));
        let run = sync(&s, &mut d, Mode::Audit, "", |c| c, Drive::default());
        prop_assert_eq!(run.report().in_sync, Some(true));
    }
}
