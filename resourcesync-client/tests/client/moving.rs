//! Sources that move while a Destination reads them: a Resource List written rarely and
//! carried forward by Change Lists, resources changed after everything listed, and the
//! baseline that must reconcile through the Change Lists instead of failing.

use resourcesync_client::{Event, Mode, ProblemKind, State};

use crate::sim::{
    Destination, Drive, Fault, Source, deleting, sync, sync_moving, sync_moving_with, time,
};

const BASELINE: Mode = Mode::Baseline { prefer_dump: false };
const SET: &str = "http://example.com/capabilitylist.xml";

/// Ten resources, published at 10 s.
fn source() -> Source {
    let mut s = Source::new();
    for i in 0..10 {
        s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    s.tick(10);
    s.publish();
    s
}

fn kinds(run: &crate::sim::Run) -> Vec<&ProblemKind> {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::Problem(p) => Some(&p.kind),
            _ => None,
        })
        .collect()
}

/// An incremental run right after: nothing to do, and complete; and an audit finds the
/// Destination in sync (judged by the Resource List and the Change Lists since it).
fn quiet(s: &Source, d: &mut Destination) {
    let run = sync(s, d, Mode::Incremental, "", deleting, Drive::default());
    let report = run.report();
    assert!(report.complete, "{:?}", run.problems());
    assert_eq!(
        (report.created, report.updated, report.deleted),
        (0, 0, 0),
        "{report:?}"
    );
    assert!(d.equals(s), "{}", d.difference(s));
    // An audit fetches no package: past a Resource List, a Change Dump tells it nothing.
    if !s.publish.change_dump {
        let run = sync(s, d, Mode::Audit, "", |c| c, Drive::default());
        assert_eq!(run.report().in_sync, Some(true), "{:?}", run.report());
    }
}

#[test]
fn an_audit_judges_by_the_resource_list_and_the_changes_since_it() {
    let mut s = source();
    let mut d = Destination::default();
    sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    // The Source moves on, its Resource List kept; the Destination does not follow.
    s.tick(5);
    s.put("r/0.txt", b"zero, updated");
    s.delete("r/1.txt");
    s.put("r/new.txt", b"created after the list");
    s.tick(1);
    s.publish_changes();
    let run = sync(&s, &mut d, Mode::Audit, "", |c| c, Drive::default());
    let r = run.report();
    assert_eq!((r.changed, r.missing, r.extra), (1, 1, 1), "{r:?}");
    assert_eq!(r.in_sync, Some(false));
    // Followed: in sync, though the Resource List still lists the old r/0 and r/1.
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    let run = sync(&s, &mut d, Mode::Audit, "", |c| c, Drive::default());
    let r = run.report();
    assert_eq!((r.changed, r.missing, r.extra), (0, 0, 0), "{r:?}");
    assert_eq!(r.in_sync, Some(true));
}

#[test]
fn a_baseline_reconciles_through_the_change_lists_since_its_resource_list() {
    // Every layout of the change stream: one list, an index, an archive, a Change Dump.
    for layout in 0..4 {
        let mut s = source();
        s.publish.change_part = if layout == 1 { 2 } else { 1000 };
        s.publish.archive = layout == 2;
        s.publish.change_dump = layout == 3;
        s.publish();
        // The Source moves on; its Resource List stays as it was at 10 s.
        s.tick(5);
        s.put("r/0.txt", b"zero, updated");
        s.delete("r/1.txt");
        s.put("r/2.txt", b"two, first");
        s.tick(1);
        s.put("r/2.txt", b"two, second");
        s.put("r/new.txt", b"created after the list");
        s.tick(1);
        s.publish_changes();
        for configure in [|c| c, deleting] {
            let mut d = Destination::default();
            let run = sync(&s, &mut d, BASELINE, "", configure, Drive::default());
            let report = run.report();
            assert!(report.complete, "layout {layout}: {:?}", run.problems());
            assert!(d.equals(&s), "layout {layout}: {}", d.difference(&s));
            assert_eq!(report.failed, 0, "{report:?}");
            // The checkpoint is where the Change Lists end, not the Resource List's `at`.
            let cp = d.state.checkpoint(SET).unwrap();
            assert_eq!(cp.datetime, time(16), "layout {layout}");
            assert!(d.state.refetch.is_empty(), "{:?}", d.state.refetch);
            quiet(&s, &mut d);
        }
    }
}

#[test]
fn a_source_that_moves_during_the_baseline_is_caught_up_with() {
    let mut s = source();
    // Once the Resource List was served: one resource updated and one deleted, both
    // listed in the Change List; and one updated that no list says yet.
    s.after_serving("resourcelist.xml", |s| {
        s.tick(1);
        s.put("r/3.txt", b"three, moved");
        s.delete("r/4.txt");
        s.publish_changes();
        s.tick(1);
        s.put("r/6.txt", b"six, after every list");
    });
    let mut d = Destination::default();
    let run = sync_moving(&mut s, &mut d, BASELINE, deleting);
    let report = run.report();
    // r/3 and r/4 as the Change List says; r/6 matches nothing listed: said, not
    // failed, and the checkpoint saved at the end of the Change List.
    let kinds = kinds(&run);
    assert!(
        matches!(kinds[..], [ProblemKind::ChangedSinceListed { .. }]),
        "{:?}",
        run.problems()
    );
    assert!(run.problems()[0].starts_with("http://example.com/r/6.txt: fixity"));
    assert!(!report.complete);
    assert_eq!(report.failed, 0, "{report:?}");
    assert_eq!(report.moved, 1, "{report:?}");
    assert!(
        report
            .to_string()
            .ends_with("incomplete, 1 moved at the Source"),
        "{report}"
    );
    assert_eq!(d.files["r/3.txt"], b"three, moved");
    assert!(!d.files.contains_key("r/4.txt"));
    assert!(
        !d.files.contains_key("r/6.txt"),
        "a body nothing vouches for"
    );
    assert_eq!(d.state.checkpoint(SET).unwrap().datetime, time(11));
    let refetch: Vec<&str> = d.state.refetch[SET]
        .iter()
        .map(|r| r.uri.as_str())
        .collect();
    assert_eq!(refetch, ["http://example.com/r/6.txt"]);
    // The Source lists the change; the next run is incremental, takes it, and the
    // Destination is the Source's.
    s.tick(1);
    s.publish_changes();
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert!(d.state.refetch.is_empty(), "{:?}", d.state.refetch);
    quiet(&s, &mut d);
}

#[test]
fn a_body_that_went_wrong_once_is_fetched_once_more_in_the_same_baseline() {
    let s = source();
    let mut d = Destination::default();
    let drive = Drive {
        fault: Some(Box::new(|uri: &str, attempt| {
            (uri.ends_with("r/2.txt") && attempt == 0).then_some(Fault::Corrupt)
        })),
        ..Drive::default()
    };
    let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert_eq!(d.state.checkpoint(SET).unwrap().datetime, time(10));
}

#[test]
fn what_matches_nothing_listed_is_fetched_again_by_the_next_run() {
    // A Source that serves r/2 as nothing it lists (a 404 here, a corrupt body there) for
    // a whole baseline: the baseline keeps its checkpoint, and the next run, incremental,
    // fetches r/2 again once the Source serves it.
    for fault in [Fault::Status(404), Fault::Corrupt] {
        let s = source();
        let mut d = Destination::default();
        let f = fault.clone();
        let drive = Drive {
            fault: Some(Box::new(move |uri: &str, _| {
                uri.ends_with("r/2.txt").then(|| f.clone())
            })),
            ..Drive::default()
        };
        let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
        assert!(!run.report().complete, "{fault:?}");
        assert!(
            matches!(kinds(&run)[..], [ProblemKind::ChangedSinceListed { .. }]),
            "{fault:?}: {:?}",
            run.problems()
        );
        assert_eq!(d.state.checkpoint(SET).unwrap().datetime, time(10));
        assert_eq!(d.state.refetch[SET].len(), 1);
        // Saved and read back as the state's JSON.
        let json = serde_json::to_string(&d.state).unwrap();
        d.state = serde_json::from_str::<State>(&json).unwrap();
        let run = sync(&s, &mut d, Mode::Incremental, "", |c| c, Drive::default());
        assert!(run.report().complete, "{fault:?}: {:?}", run.problems());
        assert_eq!(run.report().created, 1);
        assert!(d.equals(&s), "{fault:?}: {}", d.difference(&s));
        assert!(d.state.refetch.is_empty());
    }
}

#[test]
fn a_change_the_resource_list_does_not_reflect_though_it_is_before_its_at() {
    // A file edited while its Resource List was written: the list stamped 10 s lists the
    // old bytes, and the Change List the edit at 9 s, which the checkpoint covers.
    let mut s = source();
    s.now = 9;
    s.put("r/2.txt", b"two, edited while the list was written");
    s.now = 12;
    s.publish_changes();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert!(d.state.refetch.is_empty(), "{:?}", d.state.refetch);
    quiet(&s, &mut d);
}

#[test]
fn what_matches_nothing_is_said_even_when_another_resource_failed() {
    // r/4 fails for good (its redirect leaves the Source), r/2 is gone: the baseline
    // saves no checkpoint (a failure), and says what became of r/2 all the same.
    let s = source();
    let mut d = Destination::default();
    let drive = Drive {
        fault: Some(Box::new(|uri: &str, _| {
            if uri.ends_with("r/4.txt") {
                Some(Fault::Redirect("http://elsewhere.example/4.txt".into()))
            } else {
                uri.ends_with("r/2.txt").then_some(Fault::Status(404))
            }
        })),
        ..Drive::default()
    };
    let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
    assert!(!run.report().complete);
    let kinds = kinds(&run);
    assert!(
        kinds.iter().any(|k| matches!(k, ProblemKind::Refused(_))),
        "{:?}",
        run.problems()
    );
    assert!(
        kinds
            .iter()
            .any(|k| matches!(k, ProblemKind::ChangedSinceListed { cause }
            if **cause == ProblemKind::Status(404))),
        "{:?}",
        run.problems()
    );
    assert!(d.state.sets.is_empty(), "{:?}", d.state);
    // The faults stop: the next baseline takes both.
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn a_creation_the_resource_list_missed_though_it_is_before_its_at_is_taken() {
    // A list written while the Source changed, stamped when it was done (Python's
    // resync-simulator): r/new was created at 9 s, the list at 10 s does not hold it.
    let mut s = source();
    s.now = 9;
    s.put("r/new.txt", b"created while the list was written");
    // And one created then deleted before the list: nothing to take.
    s.put("r/gone.txt", b"briefly");
    s.delete("r/gone.txt");
    s.now = 10;
    s.publish_changes();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    quiet(&s, &mut d);
}

/// A baseline deletes all or nothing within `max_deletes`, the deletions its Change Lists
/// name since its listing included: they were made as an incremental run makes them (up
/// to the limit, then stopped), so a baseline over the limit deleted some while saying
/// it deleted nothing. And a dry run counts each once (they were counted again as no
/// longer listed, the inventory a dry run leaves not having forgotten them).
#[test]
fn a_baseline_deletes_all_or_nothing_its_change_lists_deletions_included() {
    for (limit, dry) in [(2, false), (3, false), (2, true), (3, true)] {
        let mut s = source();
        let mut d = Destination::default();
        let run = sync_moving(&mut s, &mut d, BASELINE, |c| c);
        assert!(run.report().complete, "{:?}", run.problems());
        // Deleted once the listing was served: its Change List says so, it does not.
        s.after_serving("resourcelist.xml", |s| {
            s.tick(1);
            for i in 0..3 {
                s.delete(&format!("r/{i}.txt"));
            }
            s.publish_changes();
            s.tick(1);
        });
        let run = sync_moving(&mut s, &mut d, BASELINE, |c| {
            c.with_delete(limit).with_dry_run(dry)
        });
        let report = run.report();
        let held = (0..3)
            .filter(|i| d.files.contains_key(&format!("r/{i}.txt")))
            .count();
        if limit < 3 {
            assert_eq!(report.deleted, 0, "{limit} {dry}: {report:?}");
            assert!(!report.complete);
            assert!(
                kinds(&run)
                    .iter()
                    .any(|k| matches!(k, ProblemKind::DeleteLimit { would: 3, limit: 2 })),
                "{:?}",
                run.problems()
            );
            assert_eq!(held, 3, "{limit} {dry}: deleted over the limit");
        } else {
            assert_eq!(report.deleted, 3, "{limit} {dry}: {report:?}");
            assert!(report.complete, "{:?}", run.problems());
            assert_eq!(held, if dry { 3 } else { 0 });
        }
    }
}

/// A conflict met by a baseline, for a resource the Change Lists since its listing then
/// say changed, is kept as the latest change says: deleted, it is done with; updated
/// (and declined again), the next run fetches what the update lists. Kept as first met,
/// the next runs fetched a 404, or a body that matched nothing kept, each run, for ever.
#[test]
fn a_conflict_a_later_change_of_the_same_run_explains_is_kept_as_that_change_says() {
    let mut s = source();
    // Once served (and declined): r/3 updated, r/4 deleted, both listed in the Change
    // List the baseline reads after its listing.
    s.after_serving("r/3.txt", |s| {
        s.tick(1);
        s.put("r/3.txt", b"three, updated");
        s.publish_changes();
    });
    s.after_serving("r/4.txt", |s| {
        s.tick(1);
        s.delete("r/4.txt");
        s.publish_changes();
    });
    let mut d = Destination::default();
    let users = |path: &str| path.ends_with("r/3.txt") || path.ends_with("r/4.txt");
    let drive = Drive {
        decline: Some(Box::new(users)),
        ..Drive::default()
    };
    let run = sync_moving_with(&mut s, &mut d, BASELINE, deleting, drive);
    assert!(!run.report().complete);
    let kept: Vec<(&str, Option<u64>)> = d.state.refetch[SET]
        .iter()
        .map(|r| (r.uri.as_str(), r.md.as_ref().and_then(|md| md.length)))
        .collect();
    assert_eq!(
        kept,
        [(
            "http://example.com/r/3.txt",
            Some(b"three, updated".len() as u64)
        )],
        "{:?}",
        run.problems()
    );
    // The next run meets the conflict at r/3 again, and nothing of r/4.
    let drive = Drive {
        decline: Some(Box::new(users)),
        ..Drive::default()
    };
    let run = sync(&s, &mut d, Mode::Incremental, "", deleting, drive);
    let report = run.report();
    assert_eq!(
        (report.conflicts, report.moved, report.failed),
        (1, 0, 0),
        "{:?}",
        run.problems()
    );
    let asked: Vec<&String> = run.requests.iter().filter(|r| r.contains("/r/")).collect();
    assert_eq!(asked, ["http://example.com/r/3.txt"]);
}
