//! Many Sources in one harvest, against a farm of simulated Sources on 127.0.0.1: each
//! that can be synced is, exactly (its directory audited against its Source); one that
//! fails, serves garbage or hangs is reported with why, and holds up none of the others;
//! no authority gets more requests at once than the limit, and one whose robots.txt sets
//! a Crawl-delay gets them that far apart.

use std::sync::Arc;
use std::time::Duration;

use resourcesync_destination::SyncOptions;
use resourcesync_destination::asynchronous::{self, AsyncStop};
use resourcesync_destination::harvest::{self, Harvest, HarvestError, Limits, Member};
use resourcesync_testkit::driver::populate;
use resourcesync_testkit::farm::Farm;
use resourcesync_testkit::served::Fault;

const GOOD: usize = 8;
const FAILING: usize = GOOD;
const GARBAGE: usize = GOOD + 1;
const HANGING: usize = GOOD + 2;
const PACED: usize = GOOD + 3;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A member per Source of `farm`, named `source I`, into `root/sI` (with sync's defaults:
/// 8 requests in flight), as `each` makes it.
fn members(
    farm: &Farm,
    root: &std::path::Path,
    each: impl Fn(usize, Member) -> Member,
) -> Vec<Member> {
    farm.sources
        .iter()
        .enumerate()
        .map(|(i, served)| {
            let sync = SyncOptions::new(served.base.parse().unwrap(), root.join(format!("s{i}")));
            each(i, Member::new(format!("source {i}"), sync))
        })
        .collect()
}

#[test]
fn a_harvest_syncs_every_source_within_its_limits_and_reports_each() {
    // Sources of different sizes; the good ones answer every resource 30 ms late, so
    // that their requests overlap and the per-authority limit is what bounds them.
    let farm = Farm::start(PACED + 1, |i, s| populate(s, 5 + 7 * (i % 4)));
    for (i, served) in farm.sources.iter().enumerate() {
        match i {
            FAILING => served.faults(|_, _| Some(Fault::Status(500))),
            GARBAGE => served.faults(|path, _| {
                (!path.starts_with("r/"))
                    .then(|| Fault::Body(b"\x00\x01 not a sitemap <<".to_vec()))
            }),
            HANGING => served.faults(|_, _| Some(Fault::Slow(60_000))),
            PACED => served.robots("User-agent: *\nCrawl-delay: 0.2\n"),
            _ => served.faults(|path, _| path.starts_with("r/").then_some(Fault::Slow(30))),
        }
    }
    let root = tempfile::tempdir().unwrap();
    let members = members(&farm, root.path(), |i, member| match i {
        HANGING => member.with_max_time(Duration::from_secs(3)),
        _ => member,
    });
    let limits = Limits::new(6, 24, 2);
    let harvest = Harvest::new(members, limits).unwrap();
    let stop = AsyncStop::new();
    let done = runtime().block_on(harvest::harvest(&harvest, &stop, Arc::new(())));
    assert_eq!(done.len(), PACED + 1);
    let hanging_ended = done[HANGING].ended;
    for (i, d) in done.iter().enumerate() {
        assert_eq!(d.index, i);
        match i {
            FAILING | GARBAGE => {
                assert_eq!(d.status(), "incomplete", "{i}: {:?}", d.outcome);
                let why = d.reason().unwrap();
                assert!(!why.is_empty(), "{i}");
            }
            HANGING => {
                assert_eq!(d.status(), "timed out", "{:?}", d.outcome);
                assert!(d.reason().is_some());
            }
            _ => {
                assert_eq!(d.status(), "complete", "{i}: {:?} {:?}", d.outcome, d.why);
                farm.sources[i]
                    .equals(&root.path().join(format!("s{i}")))
                    .unwrap_or_else(|e| panic!("source {i}: {e}"));
                assert!(d.next_due > d.ended, "{i}");
                // The hanging Source's run took one of six places: the others went on.
                assert!(d.ended <= hanging_ended, "{i} ended after the hanging one");
            }
        }
        assert!(
            farm.sources[i].max_in_flight() <= 2,
            "source {i}: {} requests at once",
            farm.sources[i].max_in_flight()
        );
    }
    // Paced: its requests (robots.txt read first) started 0.2 s apart at least.
    assert_eq!(done[PACED].crawl_delay, Some(Duration::from_millis(200)));
    let starts: Vec<_> = farm.sources[PACED]
        .starts()
        .into_iter()
        .filter(|(_, p)| p != "/robots.txt")
        .collect();
    assert!(starts.len() > 5);
    // Seen at the server, each start may come late by the machine's scheduling: every
    // gap well over none, and all of them together the pace.
    let span = starts[starts.len() - 1].0 - starts[0].0;
    let paced = Duration::from_millis(200) * (starts.len() as u32 - 1);
    assert!(
        span + Duration::from_millis(50) >= paced,
        "{span:?} for {} starts",
        starts.len()
    );
    for pair in starts.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        assert!(
            gap >= Duration::from_millis(100),
            "{:?} then {:?}: {gap:?}",
            pair[0].1,
            pair[1].1
        );
    }
    // Each Source's state is its own: a single sync of one goes on incrementally from it.
    let again = runtime()
        .block_on(asynchronous::sync(
            &harvest.members()[0].sync,
            &AsyncStop::new(),
            &mut (),
        ))
        .unwrap();
    assert_eq!(again.mode, "incremental");
    assert!(again.report.complete);
}

#[test]
fn sources_that_share_a_directory_or_a_name_are_refused() {
    let one = |name: &str, dir: &str| {
        Member::new(
            name,
            SyncOptions::new("http://127.0.0.1:9/".parse().unwrap(), dir),
        )
    };
    let overlap = Harvest::new(
        vec![one("a", "m/a"), one("b", "m/./a/b")],
        Limits::default(),
    );
    assert!(
        matches!(overlap, Err(HarvestError::Overlap { .. })),
        "{overlap:?}"
    );
    let same = Harvest::new(
        vec![one("a", "m/a"), one("b", "m/x/../a")],
        Limits::default(),
    );
    assert!(
        matches!(same, Err(HarvestError::Overlap { .. })),
        "{same:?}"
    );
    let named = Harvest::new(vec![one("a", "m/a"), one("a", "m/b")], Limits::default());
    assert_eq!(named.unwrap_err(), HarvestError::SameName("a".into()));
    assert_eq!(
        Harvest::new(vec![], Limits::default()).unwrap_err(),
        HarvestError::Empty
    );
    assert!(Harvest::new(vec![one("a", "m/a"), one("b", "m/ab")], Limits::default()).is_ok());
}

#[test]
fn a_farm_of_a_hundred_and_fifty_sources_of_every_kind_is_harvested() {
    // Sizes from 1 to 40 resources; answers at once, 5 ms or 25 ms late; every tenth
    // Source at fault in one of four ways.
    let n = 150;
    let farm = Farm::start(n, |i, s| populate(s, 1 + (i * 7) % 40));
    let fault = |i: usize| (i % 10 == 9).then_some(i / 10 % 4);
    for (i, served) in farm.sources.iter().enumerate() {
        match fault(i) {
            Some(0) => served.faults(|_, _| Some(Fault::Status(503))),
            Some(1) => served.faults(|path, _| {
                (!path.starts_with("r/")).then(|| Fault::Body(b"<urlset><url><loc>".to_vec()))
            }),
            Some(2) => served.faults(|_, _| Some(Fault::Slow(60_000))),
            // A resource whose bytes are not the listed ones.
            Some(_) => served.faults(|path, _| (path == "r/0.txt").then_some(Fault::Corrupt)),
            None => {
                let late = [0, 5, 25][i % 3];
                served.faults(move |path, _| {
                    (late > 0 && path.starts_with("r/")).then_some(Fault::Slow(late))
                })
            }
        }
    }
    let root = tempfile::tempdir().unwrap();
    let members = members(&farm, root.path(), |i, member| match fault(i) {
        Some(2) => member.with_max_time(Duration::from_secs(4)),
        _ => member,
    });
    let harvest = Harvest::new(members, Limits::new(32, 64, 4).with_robots(false)).unwrap();
    let done = runtime().block_on(harvest::harvest(&harvest, &AsyncStop::new(), Arc::new(())));
    assert_eq!(done.len(), n);
    for (i, d) in done.iter().enumerate() {
        match fault(i) {
            None => {
                assert_eq!(d.status(), "complete", "{i}: {:?}", d.reason());
                farm.sources[i]
                    .equals(&root.path().join(format!("s{i}")))
                    .unwrap_or_else(|e| panic!("source {i}: {e}"));
            }
            Some(2) => assert_eq!(d.status(), "timed out", "{i}"),
            Some(_) => {
                assert_eq!(d.status(), "incomplete", "{i}: {:?}", d.outcome);
                assert!(d.reason().is_some(), "{i}");
            }
        }
    }
    // The corrupted resource was never placed: nothing but verified bytes in any directory.
    for (i, _) in done
        .iter()
        .enumerate()
        .filter(|(i, _)| fault(*i) == Some(3))
    {
        assert!(!root.path().join(format!("s{i}/r/0.txt")).exists(), "{i}");
    }
}

/// A member that cannot start (its start no http or https URI) is reported as such and
/// makes nothing: not its directory, not the parents a harvest makes for a member's
/// directory (it made them before its sync found the start refused).
#[test]
fn a_member_that_cannot_start_makes_nothing() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("deep/down/s0");
    let sync = SyncOptions::new("ftp://127.0.0.1/".parse().unwrap(), &dir);
    let harvest = Harvest::new(vec![Member::new("ftp", sync)], Limits::default()).unwrap();
    let done = runtime().block_on(harvest::harvest(&harvest, &AsyncStop::new(), Arc::new(())));
    assert_eq!(done.len(), 1);
    assert!(done[0].outcome.is_err(), "{:?}", done[0].outcome);
    assert!(!root.path().join("deep").exists());
}
