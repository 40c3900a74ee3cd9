//! Many Sources in one harvest (issue 32) beside the same Sources synced one after the
//! other: `HARVEST_SOURCES` Sources (200) of `HARVEST_RESOURCES` resources each (100, of
//! 1 KiB or so), served on 127.0.0.1 by the testkit's farm (every Source at a port of its
//! own, one runtime of two threads, in this process), each synced into a fresh directory
//! (in `/dev/shm` when there is one):
//! - **harvest**: `resourcesync_destination::harvest::harvest`, what `sync --sources`
//!   runs, with its default limits (16 Sources at once, 64 requests in flight, 4 per
//!   authority; robots.txt read, none there);
//! - **sequential**: `asynchronous::sync`, what `sync SOURCE-URL DIR` runs, once per
//!   Source, one after the other, with the same per-Source concurrency (8, `sync`'s
//!   default) — the peer: what an aggregator scripting single syncs gets without
//!   starting a process per Source (which would only add to it).
//!
//! Every answer of every Source comes `HARVEST_LATENCY_MS` (20) late, as from a repository
//! across a network: a harvest is there to overlap those waits. With 0 the Sources answer
//! at once and both sides are bound by the machine's two cores alike (benches/README.md
//! has the figures).
//!
//! `HARVEST_ROUNDS` rounds (3), alternating which goes first; every directory of every
//! round is checked to hold its Source's resources. Printed: each round's times, the
//! medians, and the ratio sequential / harvest (the target: at least 5).
//! In test mode (`cargo test --benches`) 10 Sources of 20 resources, one round.
//!
//! `cargo bench -p resourcesync-benches --bench harvest`

use std::sync::Arc;
use std::time::{Duration, Instant};

use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{self, AsyncStop};
use resourcesync_destination::harvest::{self, Harvest, Limits, Member};
use resourcesync_testkit::farm::Farm;
use resourcesync_testkit::served::Fault;

/// The allocator the `resourcesync` command runs with.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let bench = std::env::args().any(|a| a == "--bench");
    let number = |name: &str, bench_value: usize, test_value: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(if bench { bench_value } else { test_value })
    };
    let sources = number("HARVEST_SOURCES", 200, 10);
    let resources = number("HARVEST_RESOURCES", 100, 20);
    let rounds = number("HARVEST_ROUNDS", 3, 1);
    let latency = number("HARVEST_LATENCY_MS", 20, 5) as u64;
    let farm = Farm::start(sources, |i, s| {
        for r in 0..resources {
            // About 1 KiB each, different in every Source.
            let body = format!("source {i} resource {r} ").repeat(1024 / 24);
            s.put(&format!("r/{r}.txt"), body.as_bytes());
        }
        s.tick(10);
    });
    for s in &farm.sources {
        s.faults(move |_, _| (latency > 0).then_some(Fault::Slow(latency)));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!(
        "harvest: {sources} Sources of {resources} resources, each answer {latency} ms late, \
         {rounds} rounds (farm on 127.0.0.1)"
    );
    let (mut harvests, mut sequentials) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order: [bool; 2] = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for harvesting in order {
            let scratch = resourcesync_benches::scratch("harvest");
            let members: Vec<Member> = farm
                .sources
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let dir = scratch.path().join(format!("s{i}"));
                    Member::new(
                        format!("{i}"),
                        SyncOptions::new(s.base.parse().unwrap(), dir),
                    )
                })
                .collect();
            let took = if harvesting {
                let harvest = Harvest::new(members.clone(), Limits::default()).unwrap();
                let start = Instant::now();
                let run = async move {
                    harvest::harvest(&harvest, &AsyncStop::new(), Arc::new(())).await
                };
                let done = resourcesync_benches::spawned(&runtime, run);
                let took = start.elapsed();
                assert!(
                    done.iter().all(|d| d.is_complete()),
                    "a Source did not complete"
                );
                took
            } else {
                let start = Instant::now();
                for m in members {
                    let run = async move {
                        asynchronous::sync(&m.sync, &AsyncStop::new(), &mut ()).await
                    };
                    let synced = resourcesync_benches::spawned(&runtime, run).unwrap();
                    assert!(synced.report.complete, "{synced}");
                }
                start.elapsed()
            };
            for (i, s) in farm.sources.iter().enumerate() {
                s.equals(&scratch.path().join(format!("s{i}")))
                    .unwrap_or_else(|e| panic!("source {i}: {e}"));
            }
            let name = if harvesting { "harvest" } else { "sequential" };
            println!(
                "  round {}: {name:<10} {:.3} s",
                round + 1,
                took.as_secs_f64()
            );
            if harvesting {
                harvests.push(took);
            } else {
                sequentials.push(took);
            }
        }
    }
    let (h, s) = (median(&mut harvests), median(&mut sequentials));
    println!(
        "medians: harvest {:.3} s, sequential {:.3} s; sequential / harvest {:.2} (target 5)",
        h.as_secs_f64(),
        s.as_secs_f64(),
        s.as_secs_f64() / h.as_secs_f64()
    );
}

fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times[times.len() / 2]
}
