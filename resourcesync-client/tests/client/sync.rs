//! The client against the simulated Source: every path, faults included.

use resourcesync_client::{Action, Event, Mode, ProblemKind, Report, Shard, Standing};

use crate::sim::{Destination, Drive, Fault, Response, Run, Source, bounded, deleting, sync};

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
const DUMP: Mode = Mode::Baseline { prefer_dump: true };

fn changes(run: &crate::sim::Run, action: Action) -> usize {
    run.events
        .iter()
        .filter(|e| matches!(e, Event::Change(c) if c.action == action))
        .count()
}

fn baseline(s: &Source) -> Destination {
    let mut d = Destination::default();
    let run = sync(s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(s), "{}", d.difference(s));
    d
}

/// Some changes at the Source after a baseline: creates, updates, deletes, and several
/// changes to one resource.
fn change(s: &mut Source) {
    s.tick(5);
    s.put("r/new-1.txt", b"new one");
    s.put("r/0.txt", b"updated zero");
    s.tick(1);
    s.delete("r/1.txt");
    s.put("r/2.txt", b"two, first");
    s.put("r/2.txt", b"two, second");
    s.tick(3);
    s.put("r/new-2.txt", b"new two");
    s.delete("r/new-2.txt");
    s.put("r/3.txt", b"three again");
    s.tick(2);
    s.publish();
}

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
    // The checkpoint is the Resource List's `at`.
    let cp = d
        .state
        .checkpoint("http://example.com/capabilitylist.xml")
        .unwrap();
    assert_eq!(cp.datetime, crate::sim::time(10));
    assert!(run.requests[0].ends_with("/.well-known/resourcesync"));
}

#[test]
fn a_baseline_starts_at_any_document() {
    for start in [
        "capabilitylist.xml",
        "resourcelist.xml",
        ".well-known/resourcesync",
    ] {
        let mut s = source(30);
        s.publish.list_part = 7;
        s.publish();
        let mut d = Destination::default();
        let run = sync(&s, &mut d, BASELINE, start, |c| c, Drive::default());
        assert!(run.report().complete, "{start}: {:?}", run.problems());
        assert!(d.equals(&s), "{start}: {}", d.difference(&s));
        // An index of five parts was read; and, through the Capability List, the
        // Change List since the list's `at` (a list started at knows none).
        assert_eq!(
            run.report().documents as usize,
            6 + if start == "resourcelist.xml" { 0 } else { 2 }
                + if start.starts_with('.') { 1 } else { 0 }
        );
    }
}

#[test]
fn discovery_falls_back_to_robots_txt_and_link_headers() {
    let mut s = source(3);
    let sd = s.files.remove(".well-known/resourcesync").unwrap();
    s.files.insert("sd.xml".into(), sd.clone());
    s.files.insert(
        "robots.txt".into(),
        Response::ok(b"User-agent: *\nSitemap: /sd.xml\n".to_vec()),
    );
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s));

    s.files.remove("robots.txt");
    s.files.insert(
        "".into(),
        Response {
            status: 200,
            headers: vec![("link".into(), r#"<sd.xml>; rel="resourcesync""#.into())],
            body: b"<html><head></head></html>".to_vec(),
        },
    );
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s));

    s.files.remove("");
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(!run.report().complete);
    assert!(
        run.problems()
            .iter()
            .any(|p| p.contains("offers no Source Description")),
        "{:?}",
        run.problems()
    );
}

#[test]
fn a_second_baseline_fetches_only_what_differs() {
    let mut s = source(40);
    let mut d = baseline(&s);
    s.tick(100);
    s.put("r/5.txt", b"five changed");
    s.publish();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    let report = run.report();
    assert_eq!(
        (report.updated, report.unchanged, report.created),
        (1, 39, 0),
        "{report:?}"
    );
    assert_eq!(run.requests.iter().filter(|r| r.contains("/r/")).count(), 1);
    assert!(d.equals(&s));
}

#[test]
fn deletion_happens_only_when_asked_and_within_the_limit() {
    let mut s = source(10);
    let mut d = baseline(&s);
    s.delete("r/3.txt");
    s.delete("r/4.txt");
    s.tick(1);
    s.publish();
    // Not asked: nothing deleted.
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert_eq!(changes(&run, Action::Delete), 0);
    assert!(d.files.contains_key("r/3.txt"));
    // Over the limit: nothing deleted, and said so; the baseline is not done, so its
    // checkpoint is not saved.
    let state = d.state.clone();
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "",
        |c| c.with_delete(1),
        Drive::default(),
    );
    assert_eq!(d.state, state);
    assert!(
        run.problems()
            .iter()
            .any(|p| p.contains("2 deletions, more than the 1 allowed")),
        "{:?}",
        run.problems()
    );
    assert!(d.files.contains_key("r/3.txt"));
    assert!(!run.report().complete);
    // Within it.
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "",
        |c| c.with_delete(2),
        Drive::default(),
    );
    assert_eq!(run.report().deleted, 2);
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn nothing_is_deleted_when_the_listing_was_not_read_whole() {
    let mut s = source(20);
    s.publish.list_part = 5;
    s.publish();
    let mut d = baseline(&s);
    s.delete("r/3.txt");
    s.tick(1);
    s.publish();
    // A baseline with --delete where `failing` fails: its deletions, and the warnings it
    // said.
    let mut run = |s: &Source, failing: &'static str, status: u16| {
        let fault = Drive::faulty(move |uri: &str, _| {
            uri.ends_with(failing).then_some(Fault::Status(status))
        });
        let run = sync(s, &mut d, BASELINE, "", |c| c.with_delete(10), fault);
        assert!(!run.report().complete);
        let warned: Vec<String> = (run.events.iter())
            .filter_map(|e| match e {
                Event::Warning(w) => Some(w.to_string()),
                _ => None,
            })
            .collect();
        let kept = d.files.contains_key("r/3.txt");
        (changes(&run, Action::Delete), kept, warned)
    };
    let (deleted, kept, said) = run(&s, "resourcelist-2.xml", 404);
    let why = "a document or a package of the listing failed (said above): \
               nothing is deleted";
    assert!(said.iter().any(|w| w.contains(why)), "{said:?}");
    assert_eq!((deleted, kept), (0, true), "{said:?}");
    // A listing read whole, a resource it lists failing: what the listing does not list
    // is deleted all the same (the failure may be a held file in the way of what the
    // Source lists now: a file `x` where `x/y` goes, which no run stored while none
    // deleted `x`); the run is not complete, and takes no checkpoint.
    s.put("r/5.txt", b"resource 5, changed");
    s.tick(1);
    s.publish();
    let (deleted, kept, said) = run(&s, "r/5.txt", 500);
    assert_eq!((deleted, kept), (1, false), "{said:?}");
    assert!(
        !said.iter().any(|w| w.contains("nothing is deleted")),
        "{said:?}"
    );
}

/// A Resource Dump whose package is not read, because the policy refuses it (moved to
/// a host the sync may not ask) or its entry breaks a rule: its resources are not
/// listed, so a baseline with deletions deletes nothing (it deleted every resource held).
#[test]
fn a_dump_baseline_deletes_nothing_when_a_package_is_not_read() {
    let mut s = source(4);
    s.publish.resource_dump = true;
    s.publish();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, DUMP, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(d.files.len(), 4);
    let dump = String::from_utf8(s.files["resourcedump.xml"].body.clone()).unwrap();
    for (from, to) in [
        (
            "http://example.com/resourcedump-1.zip",
            "http://elsewhere.example/resourcedump-1.zip",
        ),
        ("length=\"", "length=\"x"),
    ] {
        let unread = dump.replace(from, to);
        assert_ne!(dump, unread);
        s.files
            .insert("resourcedump.xml".into(), Response::ok(unread.into_bytes()));
        let run = sync(
            &s,
            &mut d,
            DUMP,
            "",
            |c| c.with_delete(10),
            Drive::default(),
        );
        assert!(!run.report().complete, "{to}");
        assert_eq!(
            changes(&run, Action::Delete),
            0,
            "{to}: {:?}",
            run.problems()
        );
        assert_eq!(d.files.len(), 4, "{to}: {:?}", run.problems());
    }
}

#[test]
fn a_baseline_from_a_resource_dump() {
    let mut s = source(12);
    s.publish.resource_dump = true;
    s.publish();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, DUMP, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(run.report().created, 12);
    assert!(d.equals(&s), "{}", d.difference(&s));
    // No resource was fetched on its own: they came in the package.
    assert!(!run.requests.iter().any(|r| r.contains("/r/")));
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::Release { request: _ }))
    );
}

#[test]
fn incremental_syncs_apply_the_changes_since_the_checkpoint() {
    for (part, archive, dump, datetimes) in [
        (1000, false, false, true),
        (2, false, false, true),
        (2, true, false, true),
        (3, false, true, true),
        (1000, false, false, false),
    ] {
        let mut s = source(10);
        s.publish.change_part = part;
        s.publish.archive = archive;
        s.publish.change_dump = dump;
        s.publish.datetimes = datetimes;
        s.publish();
        let mut d = baseline(&s);
        change(&mut s);
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "",
            deleting,
            Drive::default(),
        );
        let what = format!("part {part} archive {archive} dump {dump} datetimes {datetimes}");
        assert!(run.report().complete, "{what}: {:?}", run.problems());
        assert!(d.equals(&s), "{what}: {}", d.difference(&s));
        // Several changes to one resource collapse to the last.
        let twos = run
            .events
            .iter()
            .filter(|e| matches!(e, Event::Change(c) if c.uri.as_str().ends_with("r/2.txt")))
            .count();
        assert_eq!(twos, 1, "{what}");
        // Once more: nothing new.
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "",
            deleting,
            Drive::default(),
        );
        assert!(run.report().complete, "{what}: {:?}", run.problems());
        assert_eq!(
            changes(&run, Action::Create)
                + changes(&run, Action::Update)
                + changes(&run, Action::Delete),
            0,
            "{what}"
        );
        // More changes, and again.
        s.tick(7);
        s.put("r/9.txt", b"nine");
        s.delete("r/0.txt");
        s.publish();
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "",
            deleting,
            Drive::default(),
        );
        assert!(run.report().complete, "{what}: {:?}", run.problems());
        assert!(d.equals(&s), "{what}: {}", d.difference(&s));
    }
}

/// What a Change List lists as deleted is deleted only with `delete`, only if held, and
/// at most `max_deletes` a run (the rest waits, its checkpoint before the first not made).
#[test]
fn incremental_deletions_obey_delete_and_the_limit_and_touch_only_what_is_held() {
    let mut s = source(6);
    let mut d = baseline(&s);
    // A file the user put there: not in the inventory, and the Source will list its
    // path as deleted.
    d.files.insert("r/mine.txt".into(), b"the user's".to_vec());
    s.tick(5);
    s.put("r/mine.txt", b"briefly the Source's");
    s.delete("r/mine.txt");
    for i in 0..4 {
        s.delete(&format!("r/{i}.txt"));
    }
    s.tick(1);
    s.put("r/later.txt", b"after the deletions");
    s.tick(1);
    s.publish();

    // Without `delete`: nothing deleted, the deletions counted as kept, the rest applied.
    let mut keep = Destination {
        files: d.files.clone(),
        inventory: d.inventory.clone(),
        state: d.state.clone(),
    };
    let run = sync(
        &s,
        &mut keep,
        Mode::Incremental,
        "",
        |c| c,
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(changes(&run, Action::Delete), 0);
    assert_eq!(
        (run.report().deleted, run.report().kept),
        (0, 4),
        "{:?}",
        run.report()
    );
    assert!(keep.files.contains_key("r/0.txt") && keep.files.contains_key("r/later.txt"));
    assert_eq!(keep.files["r/mine.txt"], b"the user's");

    // With `delete` and a limit of 2: two deletions, then the stream stops there.
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        |c| c.with_delete(2),
        Drive::default(),
    );
    assert_eq!(run.report().deleted, 2, "{:?}", run.report());
    assert!(!run.report().complete);
    assert!(
        run.events.iter().any(|e| matches!(e,
            Event::Problem(p) if matches!(p.kind, ProblemKind::DeleteLimitReached { limit: 2 }))),
        "{:?}",
        run.problems()
    );
    assert!(
        !d.files.contains_key("r/later.txt"),
        "applied past the limit"
    );
    // The user's file was never a deletion: it is not held.
    assert_eq!(d.files["r/mine.txt"], b"the user's");

    // A run with a higher limit goes on from there and ends where the Source is, the
    // user's file still there.
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        |c| c.with_delete(2),
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(run.report().deleted, 2, "{:?}", run.report());
    assert_eq!(
        d.files.remove("r/mine.txt").as_deref(),
        Some(&b"the user's"[..])
    );
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn an_incremental_sync_needs_a_checkpoint() {
    let s = source(3);
    let mut d = Destination::default();
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(!run.report().complete);
    assert!(
        run.problems()
            .iter()
            .any(|p| p.contains("baseline must come first")),
        "{:?}",
        run.problems()
    );
}

#[test]
fn a_gap_is_reported_and_nothing_applied() {
    let mut s = source(5);
    let mut d = baseline(&s);
    change(&mut s);
    s.publish.forget_before = s.now - 1;
    s.put("r/4.txt", b"four later");
    s.publish();
    let before = d.files.clone();
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::Gap { .. }))),
        "{:?}",
        run.problems()
    );
    assert!(!run.report().complete);
    assert_eq!(d.files, before);
}

#[test]
fn an_audit_reports_changed_missing_and_extra() {
    let mut s = source(6);
    let mut d = baseline(&s);
    let run = sync(&s, &mut d, Mode::Audit, "", |c| c, Drive::default());
    assert_eq!(run.report().in_sync, Some(true));
    s.tick(3);
    s.put("r/0.txt", b"changed");
    s.put("r/extra.txt", b"missing here");
    s.delete("r/5.txt");
    s.publish();
    let before = d.files.clone();
    let run = sync(&s, &mut d, Mode::Audit, "", |c| c, Drive::default());
    let r = run.report();
    assert_eq!(r.in_sync, Some(false));
    assert_eq!((r.changed, r.missing, r.extra), (1, 1, 1), "{r:?}");
    assert_eq!(r.at, Some(crate::sim::time(s.now)));
    assert!(run.events.iter().any(|e| matches!(e, Event::Audit { standing: Standing::Extra, uri } if uri.as_str().ends_with("r/5.txt"))));
    assert_eq!(d.files, before, "an audit changes nothing");
}

#[test]
fn a_dry_run_decides_the_same_changes_and_changes_nothing() {
    let mut s = source(8);
    let mut d = baseline(&s);
    change(&mut s);
    let state = d.state.clone();
    let files = d.files.clone();
    let dry = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        |c| deleting(c).with_dry_run(true),
        Drive::default(),
    );
    assert_eq!(d.state, state);
    assert_eq!(d.files, files);
    assert!(
        !dry.events
            .iter()
            .any(|e| matches!(e, Event::Store(_) | Event::Delete(_) | Event::Checkpoint))
    );
    assert!(!dry.requests.iter().any(|r| r.contains("/r/")));
    let real = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert_eq!(decided(&dry), decided(&real));
    assert!(d.equals(&s));
}

/// The changes a run decided, in order.
fn decided(run: &crate::sim::Run) -> Vec<(Action, String)> {
    run.events
        .iter()
        .filter_map(|e| match e {
            Event::Change(c) => Some((c.action, c.uri.to_string())),
            _ => None,
        })
        .collect()
}

/// A baseline reads the Change Lists since before its listing's `at`, whose changes name
/// resources the listing lists too: a run holds those by then and decides nothing more
/// of them. A dry run stores nothing, and counted each a second time (a creation the
/// listing missed); it decides and counts what the run does.
#[test]
fn a_dry_baseline_decides_and_counts_what_a_baseline_does() {
    let mut s = source(8);
    change(&mut s);
    let mut d = Destination::default();
    let dry = sync(
        &s,
        &mut d,
        BASELINE,
        "",
        |c| deleting(c).with_dry_run(true),
        Drive::default(),
    );
    assert!(d.files.is_empty());
    let mut d = Destination::default();
    let real = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert!(d.equals(&s), "{}", d.difference(&s));
    let sorted = |run: &crate::sim::Run| {
        let mut decided = decided(run);
        decided.sort_by(|a, b| a.1.cmp(&b.1));
        decided
    };
    assert_eq!(sorted(&dry), sorted(&real));
    let counts = |r: &Report| {
        (
            r.listed,
            r.created,
            r.updated,
            r.deleted,
            r.unchanged,
            r.kept,
        )
    };
    assert_eq!(counts(dry.report()), counts(real.report()));
    assert!(real.report().created > 0);
}

#[test]
fn shards_split_a_baseline_between_workers() {
    let s = source(60);
    let mut union = std::collections::BTreeMap::new();
    let mut total = 0;
    for k in 0..3 {
        let mut d = Destination::default();
        let run = sync(
            &s,
            &mut d,
            BASELINE,
            "",
            |c| c.with_shard(Shard::new(k, 3).unwrap()),
            Drive::default(),
        );
        assert!(run.report().complete);
        total += run.report().listed;
        assert!(d.files.len() < 60);
        union.extend(d.files);
    }
    assert_eq!(total, 60);
    let d = Destination {
        files: union,
        ..Destination::default()
    };
    assert!(d.equals(&s));
}

#[test]
fn server_errors_and_cut_bodies_are_retried() {
    let s = source(10);
    let mut d = Destination::default();
    let fault = Box::new(|uri: &str, attempt| match attempt {
        0 if uri.ends_with("r/1.txt") => Some(Fault::Status(500)),
        0 if uri.ends_with("r/2.txt") => Some(Fault::Truncate(3)),
        0 if uri.ends_with("r/3.txt") => Some(Fault::Status(429)),
        0 if uri.ends_with("resourcelist.xml") => Some(Fault::Status(503)),
        0 if uri.ends_with("r/4.txt") => Some(Fault::Hang),
        _ => None,
    });
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "",
        |c| c,
        Drive {
            fault: Some(fault),
            ..Drive::default()
        },
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::Cancel { request: _ })),
        "the hung request was cancelled"
    );
}

/// A start URL beneath the host's root whose Source Description (the host's) lists its
/// Capability List elsewhere: synced all the same, and said; under it, nothing said.
#[test]
fn a_capability_list_not_under_the_start_url_is_said() {
    let s = source(3);
    let said = |run: &Run| -> Vec<String> {
        run.events
            .iter()
            .filter_map(|e| match e {
                Event::Warning(w) if w.message.contains("not under the start URL") => {
                    Some(w.message.clone())
                }
                _ => None,
            })
            .collect()
    };
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "wrong/", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s));
    let warned = said(&run);
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(
        warned[0].contains("is not under the start URL http://example.com/wrong/"),
        "{warned:?}"
    );
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(said(&run).is_empty());
}

/// A Source that stops answering part way is not asked again and again for every
/// resource left: once it has left requests unanswered for two request timeouts after
/// the first, the rest fail without a request, saying why (it was asked 3 times for
/// each, each a timeout).
#[test]
fn a_source_that_stops_answering_is_not_asked_for_every_resource_left() {
    let s = source(200);
    let mut d = Destination::default();
    // Everything after the first 20 resources' first requests hangs.
    let mut answered = 0;
    let fault = Box::new(move |uri: &str, _| {
        if !uri.contains("/r/") {
            return None;
        }
        answered += 1;
        (answered > 20).then_some(Fault::Hang)
    });
    let drive = Drive {
        fault: Some(fault),
        ..Drive::default()
    };
    let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
    let report = run.report();
    assert!(!report.complete);
    assert_eq!(report.created + report.failed, 200, "{report:?}");
    let asked = run.requests.iter().filter(|r| r.contains("/r/")).count();
    // The 20 answered, 3 attempts for each of the 8 that made the authority gone, and
    // those in flight meanwhile (each tried as often): far fewer than 3 for each of 180.
    assert!(asked < 20 + 3 * 8 * 4, "{asked} requests");
    let problems = run.problems();
    assert!(
        problems
            .iter()
            .any(|p| p
                .contains("not requested: example.com answered no request in 120 s (timed out")),
        "{problems:?}"
    );
    // And once as a warning, which the command prints beside the summary.
    let said: Vec<_> = run
        .events
        .iter()
        .filter(|e| matches!(e, Event::Warning(w) if w.message.contains("stopped answering")))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
}

/// A Source that keeps its connections but answers nothing more (a stopped process)
/// costs a resource its three attempts' timeouts; at a concurrency of 2 the eight
/// resources that took it as gone were twelve silent minutes. A request left unanswered
/// two request timeouts after the first, nothing answered between, is enough.
#[test]
fn a_source_silent_for_its_timeouts_is_gone_after_one_resource() {
    let s = source(40);
    // A baseline of `s` at a concurrency of 2 whose resources are never answered, with
    // `max_request_time` as the time a request may take in all, if given.
    let silent = |max_request_time: Option<std::time::Duration>| {
        let mut d = Destination::default();
        let drive = Drive::faulty(|uri, _| uri.contains("/r/").then_some(Fault::Hang));
        let configure = bounded(|bounds| {
            bounds.max_in_flight = 2;
            if let Some(time) = max_request_time {
                bounds.max_request_time = time;
            }
        });
        sync(&s, &mut d, BASELINE, "", configure, drive)
    };
    let run = silent(None);
    let report = run.report();
    assert_eq!(report.failed, 40, "{report:?}");
    let asked = run.requests.iter().filter(|r| r.contains("/r/")).count();
    // Two at a time, each timed out: the first two, the next two, the first two again.
    assert!(asked <= 6, "{asked} requests");
    // Three timeouts of 60 s, not twelve minutes (nor the five minutes of the first
    // resource's three attempts, between which the next resources took their turn).
    assert!(
        run.elapsed < std::time::Duration::from_secs(3 * 60 + 10),
        "{:?}",
        run.elapsed
    );
    let problems = run.problems();
    assert!(
        problems.iter().any(|p| p.contains(
            "not requested: example.com answered no request in 120 s (timed out: nothing \
             received for 60 s)"
        )),
        "{problems:?}"
    );
    // A shorter time a request may take in all (`--max-request-time 20s`) is the
    // request's limit, and the silence's measure: three of them (a trial waited 141 s
    // at 20 s, the silence measured in request timeouts of 60 s).
    let run = silent(Some(std::time::Duration::from_secs(20)));
    assert_eq!(run.report().failed, 40);
    assert!(
        run.elapsed < std::time::Duration::from_secs(3 * 20 + 10),
        "{:?}",
        run.elapsed
    );
}

/// A Source sending one large body slowly while its other requests wait in its queue is
/// not silent: the body's bytes end its silence as a response head does. Here one
/// resource's body comes over 300 s in pieces 30 s apart while every other request is
/// left unanswered twice (each a timeout of 60 s) and answered the third time: every
/// resource is fetched. (Counted from the first request left unanswered, with the bytes
/// not counted, the silence reached two timeouts at 180 s, and the resources after were
/// failed without a request.)
#[test]
fn a_source_sending_a_body_slowly_is_not_silent() {
    let s = source(4);
    let mut d = Destination::default();
    let drive = Drive::faulty(|uri, attempt| match uri {
        u if u.ends_with("/r/0.txt") => Some(Fault::Trickle {
            pieces: 10,
            gap: std::time::Duration::from_secs(30),
        }),
        u if u.contains("/r/") && attempt < 2 => Some(Fault::Hang),
        _ => None,
    });
    let configure = bounded(|bounds| bounds.max_in_flight = 2);
    let run = sync(&s, &mut d, BASELINE, "", configure, drive);
    let report = run.report();
    assert_eq!(
        (report.failed, report.created),
        (0, 4),
        "{:?}",
        run.problems()
    );
    assert!(d.equals(&s), "{}", d.difference(&s));
    // The trickle took its 300 s, and the others their timeouts meanwhile.
    assert!(
        run.elapsed >= std::time::Duration::from_secs(300),
        "{:?}",
        run.elapsed
    );
}

/// An authority's silence restarts after a spell longer than two request timeouts with
/// nothing failing (no request was out to it: a retry waited, another Source's lists
/// were read): one timeout much later does not take it as gone. Here the one resource
/// is left unanswered twice, its retries 200 s apart (the retry delay), and answered
/// the third time: it is fetched. (Counted from the first timeout, the second came
/// 260 s after it, past two timeouts, and took the Source as gone.)
#[test]
fn a_silence_restarts_after_a_spell_with_nothing_out() {
    let s = source(1);
    let mut d = Destination::default();
    let drive =
        Drive::faulty(|uri, attempt| (uri.contains("/r/") && attempt < 2).then_some(Fault::Hang));
    let configure = bounded(|bounds| bounds.retry_delay = std::time::Duration::from_secs(200));
    let run = sync(&s, &mut d, BASELINE, "", configure, drive);
    let report = run.report();
    assert_eq!(
        (report.failed, report.created),
        (0, 1),
        "{:?}",
        run.problems()
    );
    assert!(d.equals(&s), "{}", d.difference(&s));
}

/// A Source that refuses every connection (it stopped, its port closed) fails each
/// request at once: 8 resources in a row, each refused at every attempt, and the rest
/// fail without a request.
#[test]
fn a_source_that_refuses_every_connection_is_gone_after_8_resources() {
    let s = source(100);
    let mut d = Destination::default();
    let drive = Drive::faulty(|uri, _| uri.contains("/r/").then_some(Fault::Refused));
    let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
    assert_eq!(run.report().failed, 100);
    let asked = run.requests.iter().filter(|r| r.contains("/r/")).count();
    // Refusals come at once: every resource is tried while the first ones wait to be
    // tried again (1 s, then 2 s), but not all three times.
    assert!(asked < 3 * 100, "{asked} requests");
    let problems = run.problems();
    assert!(
        problems.iter().any(|p| p.contains(
            "not requested: example.com answered none of the requests for the last 8 \
             resources asked of it (connection refused)"
        )),
        "{problems:?}"
    );
}

#[test]
fn failures_leave_the_checkpoint_where_it_was() {
    let mut s = source(10);
    let mut d = baseline(&s);
    change(&mut s);
    let state = d.state.clone();
    // The resource is gone for good, or corrupt: not committed, and the checkpoint
    // stays before it.
    for fault in [Fault::Status(404), Fault::Corrupt, Fault::Status(500)] {
        let f = fault.clone();
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "",
            deleting,
            Drive {
                fault: Some(Box::new(move |uri: &str, _| {
                    uri.ends_with("r/0.txt").then(|| f.clone())
                })),
                ..Drive::default()
            },
        );
        assert!(!run.report().complete, "{fault:?}");
        assert!(
            d.files.get("r/0.txt").is_some_and(|b| b == b"resource 0"),
            "{fault:?}"
        );
        assert_ne!(
            d.state, state,
            "{fault:?}: changes before the failed one are checkpointed"
        );
        let cp = d.state.sets.values().next().unwrap();
        assert!(cp.datetime <= crate::sim::time(15), "{fault:?}: {cp:?}");
        if matches!(fault, Fault::Corrupt) {
            assert!(run.events.iter().any(
                |e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::Fixity(_)))
            ));
            assert!(
                run.events
                    .iter()
                    .any(|e| matches!(e, Event::Discard { .. }))
            );
        }
    }
    // When the faults stop, the next run converges.
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
}

#[test]
fn redirects_are_followed_on_the_authority_and_refused_off_it() {
    let mut s = source(4);
    let body = s.resources.get("r/0.txt").unwrap().0.clone();
    s.files.insert("moved/0.txt".into(), Response::ok(body));
    let mut d = Destination::default();
    let fault = Box::new(|uri: &str, _| {
        if uri.ends_with("r/0.txt") {
            Some(Fault::Redirect("/moved/0.txt".into()))
        } else if uri.ends_with("r/1.txt") {
            Some(Fault::Redirect(
                "http://169.254.169.254/latest/meta-data".into(),
            ))
        } else if uri.ends_with("r/2.txt") {
            Some(Fault::Redirect("https://elsewhere.example/2.txt".into()))
        } else {
            None
        }
    });
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "",
        |c| c,
        Drive {
            fault: Some(fault),
            ..Drive::default()
        },
    );
    assert_eq!(
        d.files.get("r/0.txt").map(Vec::as_slice),
        Some(&b"resource 0"[..])
    );
    assert!(!d.files.contains_key("r/1.txt") && !d.files.contains_key("r/2.txt"));
    assert!(
        !run.requests
            .iter()
            .any(|r| r.contains("169.254") || r.contains("elsewhere"))
    );
    assert_eq!(run.report().refused, 2, "{:?}", run.problems());
}

#[test]
fn index_loops_deep_nesting_and_broken_promises_are_refused() {
    let mut s = source(3);
    // An index that lists itself.
    let looped = br#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/>
<sitemap><loc>http://example.com/resourcelist.xml</loc></sitemap>
</sitemapindex>"#;
    s.files
        .insert("resourcelist.xml".into(), Response::ok(looped.to_vec()));
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::Problem(p) if p.kind == ProblemKind::Loop)),
        "{:?}",
        run.problems()
    );
    assert!(!run.report().complete);

    // A chain of indexes deeper than the bound.
    for i in 0..8 {
        let next = format!("http://example.com/deep-{}.xml", i + 1);
        let doc = format!(
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="2020-01-01T00:00:00Z"/><sitemap><loc>{next}</loc></sitemap></sitemapindex>"#
        );
        s.files
            .insert(format!("deep-{i}.xml"), Response::ok(doc.into_bytes()));
    }
    let run = sync(&s, &mut d, BASELINE, "deep-0.xml", |c| c, Drive::default());
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::TooDeep(_)))),
        "{:?}",
        run.problems()
    );
    assert!(run.requests.len() <= 6, "{:?}", run.requests);

    // The Capability List promises a Resource List; the document is a Change List.
    let mut s = source(3);
    let cl = s.files.get("changelist.xml").unwrap().clone();
    s.files.insert("resourcelist.xml".into(), cl);
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    assert!(
        run.problems()
            .iter()
            .any(|p| p.contains("expected resourcelist")),
        "{:?}",
        run.problems()
    );
}

#[test]
fn uris_that_climb_out_are_never_written_or_deleted() {
    let mut s = source(2);
    let base = "http://example.com/";
    let evil = [
        "r/%2e%2e/%2e%2e/etc/passwd",
        "r/..%2f..%2fescape",
        "r/a%5c..%5c..%5cwin",
        "r/nul%00byte",
    ];
    let mut entries = String::new();
    for e in evil {
        entries += &format!("<url><loc>{base}{e}</loc></url>");
    }
    let doc = format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="2020-01-01T00:00:10Z"/>{entries}<url><loc>{base}r/0.txt</loc></url></urlset>"#
    );
    s.files
        .insert("resourcelist.xml".into(), Response::ok(doc.into_bytes()));
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    // r/1, which the hand-written list leaves out, the Source's Change List says was
    // created before the list's `at`: a creation the list missed, taken.
    assert_eq!(
        d.files.keys().cloned().collect::<Vec<_>>(),
        vec!["r/0.txt".to_string(), "r/1.txt".to_string()]
    );
    assert_eq!(
        run.report().refused,
        evil.len() as u64,
        "{:?}",
        run.problems()
    );
    for e in &run.events {
        if let Event::Change(c) = e {
            assert!(!c.path.as_str().contains(".."), "{c:?}");
        }
    }
}

#[test]
fn a_crash_at_any_point_resumes_without_losing_a_change() {
    let mut s = source(10);
    s.publish.change_part = 3;
    s.publish();
    let d0 = baseline(&s);
    change(&mut s);
    for crash_after in 0..8 {
        let mut d = Destination {
            files: d0.files.clone(),
            inventory: d0.inventory.clone(),
            state: d0.state.clone(),
        };
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "",
            deleting,
            Drive {
                crash_after: Some(crash_after),
                ..Drive::default()
            },
        );
        if !run.crashed {
            assert!(d.equals(&s));
            continue;
        }
        // What the Destination saved survives; the next run picks up from there.
        let run = sync(
            &s,
            &mut d,
            Mode::Incremental,
            "",
            deleting,
            Drive::default(),
        );
        assert!(
            run.report().complete,
            "crash after {crash_after}: {:?}",
            run.problems()
        );
        assert!(
            d.equals(&s),
            "crash after {crash_after}: {}",
            d.difference(&s)
        );
    }
}

#[test]
fn mirrors_are_tried_in_priority_order_with_the_loc_last() {
    let mut s = source(1);
    s.files
        .insert("m1/0.txt".into(), Response::ok(b"resource 0".to_vec()));
    let doc = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcelist" at="2020-01-01T00:00:10Z"/>
<url><loc>http://example.com/r/0.txt</loc><rs:md length="10"/>
<rs:ln rel="duplicate" pri="2" href="http://example.com/m1/0.txt"/>
<rs:ln rel="duplicate" pri="1" href="http://example.com/m0/0.txt"/>
<rs:ln rel="http://example.org/unknown-relation" href="http://example.com/x"/>
</url></urlset>"#;
    s.files.insert(
        "resourcelist.xml".into(),
        Response::ok(doc.as_bytes().to_vec()),
    );
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
    let fetched: Vec<&String> = run
        .requests
        .iter()
        .filter(|r| r.ends_with("0.txt"))
        .collect();
    assert_eq!(
        fetched,
        ["http://example.com/m0/0.txt", "http://example.com/m1/0.txt"]
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s));
}

#[test]
fn following_reads_the_change_lists_again_later() {
    followed_through(|_| {});
}

/// A follower whose Source names another Change List in its Capability List between two
/// readings (a dated Change List, say): the next reading takes the one named now, not both
/// (two named in one Capability List, which fails the set).
#[test]
fn a_follower_takes_the_change_list_its_capability_list_names_now() {
    followed_through(|s| {
        let moved = |file: &str| {
            String::from_utf8(s.files[file].body.clone())
                .unwrap()
                .replace("changelist.xml", "changelist-2.xml")
                .into_bytes()
        };
        let (list, capabilities) = (moved("changelist.xml"), moved("capabilitylist.xml"));
        s.files
            .insert("changelist-2.xml".into(), Response::ok(list));
        s.files
            .insert("capabilitylist.xml".into(), Response::ok(capabilities));
    });
}

/// A follower of a Source that changed since its baseline, driven until it caught up;
/// then a resource is created there and `then` changes it more, and the follower's next
/// reading catches up again.
fn followed_through(then: impl FnOnce(&mut Source)) {
    let mut s = source(3);
    let mut d = baseline(&s);
    change(&mut s);
    let config = resourcesync_client::Config::new(s.uri(""), Mode::Incremental)
        .unwrap()
        .with_delete(u64::MAX)
        .with_follow(std::time::Duration::from_secs(60));
    let mut client =
        resourcesync_client::Client::new(config, d.state.clone(), std::mem::take(&mut d.inventory));
    // Drive until caught up: no Done, a timeout set.
    let run = crate::sim::drive_client_until_idle(&mut client, &s, &mut d);
    assert!(run.report.is_none());
    assert!(d.equals(&s), "{}", d.difference(&s));
    let at = client
        .poll_timeout()
        .expect("a timeout for the next reading");
    s.tick(30);
    s.put("r/later.txt", b"later");
    s.publish();
    then(&mut s);
    client.handle_timeout(at);
    let run = crate::sim::drive_client_until_idle(&mut client, &s, &mut d);
    assert!(run.report.is_none(), "{:?}", run.events);
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn a_part_leads_to_its_index_and_a_list_up_to_its_changes() {
    let mut s = source(12);
    s.publish.list_part = 4;
    s.publish();
    // A baseline started at one part reads the whole index (and may delete safely).
    let mut d = Destination::default();
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "resourcelist-1.xml",
        |c| c.with_delete(0),
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    // Its checkpoint is the Capability List's set, so an incremental run started at the
    // Resource List goes up to the Capability List and on to the Change List.
    assert!(
        d.state
            .checkpoint("http://example.com/capabilitylist.xml")
            .is_some(),
        "{:?}",
        d.state
    );
    change(&mut s);
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "resourcelist.xml",
        deleting,
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn resolved_addresses_are_checked_against_the_policy() {
    let s = source(1);
    let config = resourcesync_client::Config::new(s.uri(""), BASELINE).unwrap();
    let mut client = resourcesync_client::Client::new(
        config,
        Default::default(),
        resourcesync_client::MemoryInventory::new(),
    );
    let now = std::time::Instant::now();
    let request = client.poll_request(now).unwrap();
    client
        .handle_address(request.id, "127.0.0.1".parse().unwrap(), now)
        .unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| client.poll_event()).collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Cancel { request: id } if *id == request.id)),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::Refused(_)))),
        "{events:?}"
    );
    // A public address is fine.
    let mut client = resourcesync_client::Client::new(
        resourcesync_client::Config::new(s.uri(""), BASELINE).unwrap(),
        Default::default(),
        resourcesync_client::MemoryInventory::new(),
    );
    let request = client.poll_request(now).unwrap();
    client
        .handle_address(request.id, "93.184.216.34".parse().unwrap(), now)
        .unwrap();
    assert!(
        std::iter::from_fn(|| client.poll_event())
            .all(|e| !matches!(e, Event::Cancel { request: _ } | Event::Problem(_)))
    );
}

/// A Resource Dump package as the Python reference implementation writes it: bitstream
/// paths without the leading slash; the resource at `pathless`, if any, listed in the
/// manifest without a path, and not in the package.
fn python_style_package(s: &Source, pathless: Option<&str>) -> Vec<u8> {
    package_of(s, |_| true, pathless)
}

/// [`python_style_package`] of the resources of `s` whose path is `chosen`.
fn package_of(s: &Source, chosen: impl Fn(&str) -> bool, pathless: Option<&str>) -> Vec<u8> {
    use std::io::Write;
    let resources: Vec<(&String, &Vec<u8>)> = s
        .resources
        .iter()
        .filter(|(path, _)| chosen(path))
        .map(|(path, (bytes, _))| (path, bytes))
        .collect();
    let mut urls = String::new();
    for (path, bytes) in &resources {
        let mut f = resourcesync_model::Fixity::new();
        f.update(bytes);
        let d = f.finish();
        let at = if pathless == Some(path.as_str()) {
            String::new()
        } else {
            format!(r#" path="{path}""#)
        };
        urls += &format!(
            r#"<url><loc>{}{path}</loc><rs:md hash="{}" length="{}"{at}/></url>"#,
            s.base,
            d.hashes(),
            d.length
        );
    }
    let manifest = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="{}capabilitylist.xml"/><rs:md capability="resourcedump-manifest" at="2020-01-01T00:00:10Z"/>{urls}</urlset>"#,
        s.base
    );
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("manifest.xml", options).unwrap();
    zip.write_all(manifest.as_bytes()).unwrap();
    for (path, bytes) in resources {
        if pathless != Some(path.as_str()) {
            zip.start_file(path.as_str(), options).unwrap();
            zip.write_all(bytes).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}

/// `zip` served as the one package of `s`'s Resource Dump.
fn serve_package(s: &mut Source, zip: Vec<u8>) {
    let dump = dump_of(s, "", "resourcedump-1.zip", &zip);
    s.files
        .insert("resourcedump.xml".into(), Response::ok(dump));
    s.files
        .insert("resourcedump-1.zip".into(), Response::ok(zip));
}

/// A Resource Dump of `s` whose one package is `zip`, served at `name`, with `links` in
/// its head beside its `up` link.
fn dump_of(s: &Source, links: &str, name: &str, zip: &[u8]) -> Vec<u8> {
    let mut f = resourcesync_model::Fixity::new();
    f.update(zip);
    let d = f.finish();
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="{}capabilitylist.xml"/>{links}<rs:md capability="resourcedump" at="2020-01-01T00:00:10Z"/><url><loc>{}{name}</loc><rs:md length="{}" hash="{}"/></url></urlset>"#,
        s.base,
        s.base,
        d.length,
        d.hashes()
    )
    .into_bytes()
}

/// A baseline from a Resource Dump started at one part of a Resource Dump Index reads the
/// whole index, where the part links to it (it read the one part, and a baseline with
/// deletions deleted what the others hold); when the policy refuses that link, the part
/// is read, but not as the whole: nothing is deleted.
#[test]
fn a_dump_baseline_started_at_a_part_reads_its_index() {
    let mut s = source(4);
    s.publish();
    let first: Vec<String> = s.resources.keys().take(2).cloned().collect();
    let zips = [
        package_of(&s, |p| first.iter().any(|f| f == p), None),
        package_of(&s, |p| !first.iter().any(|f| f == p), None),
    ];
    let index = |at: &str| format!(r#"<rs:ln rel="index" href="{at}resourcedump-index.xml"/>"#);
    let base = s.base.clone();
    let dump_index = format!(
        r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="resourcedump" at="2020-01-01T00:00:10Z"/><sitemap><loc>{base}dump-1.xml</loc></sitemap><sitemap><loc>{base}dump-2.xml</loc></sitemap></sitemapindex>"#
    );
    s.files.insert(
        "resourcedump-index.xml".into(),
        Response::ok(dump_index.into_bytes()),
    );
    for (n, zip) in zips.iter().enumerate() {
        let n = n + 1;
        let dump = dump_of(&s, &index(&base), &format!("package-{n}.zip"), zip);
        s.files.insert(format!("dump-{n}.xml"), Response::ok(dump));
        s.files
            .insert(format!("package-{n}.zip"), Response::ok(zip.clone()));
    }
    let mut d = Destination::default();
    let run = sync(&s, &mut d, DUMP, "dump-1.xml", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    let refused = dump_of(
        &s,
        &index("http://elsewhere.example/"),
        "package-1.zip",
        &zips[0],
    );
    s.files.insert("dump-1.xml".into(), Response::ok(refused));
    let run = sync(
        &s,
        &mut d,
        DUMP,
        "dump-1.xml",
        |c| c.with_delete(10),
        Drive::default(),
    );
    assert!(!run.report().complete);
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn dumps_written_by_the_python_reference_implementation_sync_with_a_warning() {
    let mut s = source(5);
    s.publish.resource_dump = true;
    s.publish();
    let zip = python_style_package(&s, None);
    serve_package(&mut s, zip);
    let mut dest = Destination::default();
    let run = sync(&s, &mut dest, DUMP, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(dest.equals(&s), "{}", dest.difference(&s));
    let warned = run
        .events
        .iter()
        .filter(|e| matches!(e, Event::Warning(w) if w.message.contains("does not start with")))
        .count();
    assert_eq!(warned, 5);
}

/// A Resource Dump's manifest that lists a resource without its bitstream (no `path`,
/// which the standard requires): the resource is the Source's all the same, fetched from
/// its URI; skipped, it was deleted by a baseline with deletions that held it.
#[test]
fn a_manifest_entry_without_a_bitstream_is_fetched_and_never_deleted() {
    let mut s = source(4);
    s.publish.resource_dump = true;
    s.publish();
    let mut held = Destination::default();
    let run = sync(&s, &mut held, DUMP, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(held.files.len(), 4);
    let pathless = s.resources.keys().next().unwrap().clone();
    let zip = python_style_package(&s, Some(&pathless));
    serve_package(&mut s, zip);
    let run = sync(
        &s,
        &mut held,
        DUMP,
        "",
        |c| c.with_delete(10),
        Drive::default(),
    );
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(held.equals(&s), "{}", held.difference(&s));
    let mut fresh = Destination::default();
    let run = sync(&s, &mut fresh, DUMP, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(fresh.equals(&s), "{}", fresh.difference(&s));
    let fetched: Vec<&String> = run.requests.iter().filter(|r| r.contains("/r/")).collect();
    assert_eq!(fetched.len(), 1, "{fetched:?}");
    assert!(
        run.events.iter().any(|e| matches!(e, Event::Warning(w)
            if w.message.contains("without a bitstream; fetched from its URI"))),
        "{:?}",
        run.events
    );
}

/// A dry run of a baseline that prefers the dump plans from the Resource List: no
/// package is fetched (every one was, to count what it holds), and the counts are the
/// run's.
#[test]
fn a_dry_run_that_prefers_the_dump_fetches_no_package() {
    let mut s = source(12);
    s.publish.resource_dump = true;
    s.publish();
    let mut d = Destination::default();
    let run = sync(
        &s,
        &mut d,
        DUMP,
        "",
        |c| c.with_dry_run(true),
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(
        !run.requests.iter().any(|r| r.ends_with(".zip")),
        "{:?}",
        run.requests
    );
    let dry = run.report().created;
    let run = sync(&s, &mut d, DUMP, "", |c| c, Drive::default());
    assert!(run.requests.iter().any(|r| r.ends_with(".zip")));
    assert_eq!(run.report().created, dry);
}

#[test]
fn a_package_that_fails_its_listed_hash_is_not_opened() {
    let mut s = source(3);
    s.publish.resource_dump = true;
    s.publish();
    let mut d = Destination::default();
    let fault = Box::new(|uri: &str, _| uri.ends_with(".zip").then_some(Fault::Corrupt));
    let run = sync(
        &s,
        &mut d,
        DUMP,
        "",
        |c| c,
        Drive {
            fault: Some(fault),
            ..Drive::default()
        },
    );
    assert!(!run.report().complete);
    assert!(d.files.is_empty());
    assert!(
        !run.events
            .iter()
            .any(|e| matches!(e, Event::Package { request: _ }))
    );
    assert!(
        run.events
            .iter()
            .any(|e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::Fixity(_))))
    );
}

#[test]
fn a_start_document_cut_short_after_its_head_is_read_again() {
    let mut s = source(30);
    s.publish.list_part = 100;
    s.publish();
    let cut = s.files["resourcelist.xml"].body.len() / 2;
    let mut d = Destination::default();
    let fault = Box::new(move |uri: &str, attempt| {
        (uri.ends_with("resourcelist.xml") && attempt == 0).then_some(Fault::Truncate(cut))
    });
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "resourcelist.xml",
        |c| c,
        Drive {
            fault: Some(fault),
            ..Drive::default()
        },
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert_eq!(
        run.requests
            .iter()
            .filter(|r| r.ends_with("resourcelist.xml"))
            .count(),
        2
    );
}

#[test]
fn an_exploration_reads_every_document_and_nothing_else() {
    let mut s = source(10);
    s.publish.list_part = 4;
    s.publish.change_part = 3;
    s.publish.archive = true;
    s.publish.resource_dump = true;
    s.publish.hub = Some("http://hub.example.org/websub/".parse().unwrap());
    s.publish();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, Mode::Explore, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    let documents: Vec<(String, Option<String>)> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Document(doc) => Some((
                doc.uri.as_str().trim_start_matches(&s.base).to_owned(),
                doc.parent
                    .as_ref()
                    .map(|p| p.as_str().trim_start_matches(&s.base).to_owned()),
            )),
            _ => None,
        })
        .collect();
    let parent = |name: &str| {
        documents
            .iter()
            .find(|(d, _)| d == name)
            .unwrap_or_else(|| panic!("{name} was not read: {documents:?}"))
            .1
            .clone()
    };
    assert_eq!(parent(".well-known/resourcesync"), None);
    assert_eq!(
        parent("capabilitylist.xml").as_deref(),
        Some(".well-known/resourcesync")
    );
    assert_eq!(
        parent("resourcelist.xml").as_deref(),
        Some("capabilitylist.xml")
    );
    assert_eq!(
        parent("resourcelist-2.xml").as_deref(),
        Some("resourcelist.xml")
    );
    assert_eq!(
        parent("resourcedump.xml").as_deref(),
        Some("capabilitylist.xml")
    );
    assert_eq!(
        parent("changelist-archive.xml").as_deref(),
        Some("capabilitylist.xml")
    );
    assert_eq!(
        parent("changes-0.xml").as_deref(),
        Some("changelist-archive.xml")
    );
    assert_eq!(
        parent("changelist.xml").as_deref(),
        Some("capabilitylist.xml")
    );
    // Description, Capability List, index and 3 parts, dump, current list, archive and
    // the 3 lists it archives (10 changes, 3 to a list).
    assert_eq!(documents.len(), 12, "{documents:?}");
    // The notification channel is told, not read: a topic is no document.
    let channels: Vec<_> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Channel {
                capability_list,
                channel,
            } => Some((capability_list.clone(), channel.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        channels,
        [(
            s.uri("capabilitylist.xml"),
            resourcesync_model::Channel::change_notification(
                s.uri("notifications/change"),
                "http://hub.example.org/websub/".parse().unwrap()
            )
        )]
    );
    assert!(
        !run.requests
            .iter()
            .any(|r| r.contains("/r/") || r.ends_with(".zip") || r.contains("notifications"))
    );
    assert!(d.files.is_empty() && d.state.sets.is_empty());
}

#[test]
fn entries_are_decided_as_the_body_arrives() {
    let s = source(200);
    let config = resourcesync_client::Config::new(s.uri("resourcelist.xml"), BASELINE).unwrap();
    let mut client = resourcesync_client::Client::new(
        config,
        Default::default(),
        resourcesync_client::MemoryInventory::new(),
    );
    let now = std::time::Instant::now();
    let request = client.poll_request(now).unwrap();
    let body = s.respond(request.uri.as_str()).body;
    client
        .handle_response(
            request.id,
            http::StatusCode::OK,
            &http::HeaderMap::new(),
            now,
        )
        .unwrap();
    // Half the document: the entries in it are decided already, the end not yet reached.
    client
        .handle_body(request.id, &body[..body.len() / 2], now)
        .unwrap();
    let decided = std::iter::from_fn(|| client.poll_event())
        .filter(|e| matches!(e, Event::Change(_)))
        .count();
    assert!(
        (60..100).contains(&decided),
        "{decided} of 200 decided from half the document"
    );
    client
        .handle_body(request.id, &body[body.len() / 2..], now)
        .unwrap();
    client.handle_end(request.id, now).unwrap();
    let rest = std::iter::from_fn(|| client.poll_event())
        .filter(|e| matches!(e, Event::Change(_)))
        .count();
    assert_eq!(decided + rest, 200);
}

#[test]
fn redirects_the_callers_stack_followed_are_checked_too() {
    let s = source(1);
    let start = |uri: &str| {
        let config = resourcesync_client::Config::new(uri.parse().unwrap(), BASELINE).unwrap();
        resourcesync_client::Client::new(
            config,
            Default::default(),
            resourcesync_client::MemoryInventory::new(),
        )
    };
    let now = std::time::Instant::now();
    // Off the authority: refused, and the caller told to stop the request.
    let mut client = start(s.uri("resourcelist.xml").as_str());
    let request = client.poll_request(now).unwrap();
    client
        .handle_redirect(request.id, "https://elsewhere.example/list.xml", now)
        .unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| client.poll_event()).collect();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Cancel { request: id } if *id == request.id)),
        "{events:?}"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::Refused(_)))),
        "{events:?}"
    );
    // On the authority: the request goes on, and its body is read as the document.
    let mut client = start(s.uri("old-list.xml").as_str());
    let request = client.poll_request(now).unwrap();
    client
        .handle_redirect(request.id, "/resourcelist.xml", now)
        .unwrap();
    assert!(
        std::iter::from_fn(|| client.poll_event())
            .all(|e| !matches!(e, Event::Cancel { .. } | Event::Problem(_)))
    );
    let body = s.respond(s.uri("resourcelist.xml").as_str()).body;
    crate::apply::answer(&mut client, &request, &body, now);
    let read = std::iter::from_fn(|| client.poll_event())
        .any(|e| matches!(e, Event::Document(d) if d.uri.as_str().ends_with("/resourcelist.xml")));
    assert!(read, "the document is known by where the redirect led");
}

#[test]
fn documents_wait_while_enough_fetches_are_queued() {
    let mut s = source(15);
    s.publish.list_part = 5;
    s.publish();
    let mut bounds = resourcesync_client::Bounds::default();
    bounds.max_queued = 3;
    bounds.max_in_flight = 2;
    let config = resourcesync_client::Config::new(s.uri("resourcelist.xml"), BASELINE)
        .unwrap()
        .with_bounds(bounds);
    let mut client = resourcesync_client::Client::new(
        config,
        Default::default(),
        resourcesync_client::MemoryInventory::new(),
    );
    let now = std::time::Instant::now();
    let answer = |client: &mut resourcesync_client::Client<_>,
                  request: &resourcesync_client::Request| {
        let body = s.respond(request.uri.as_str()).body;
        crate::apply::answer(client, request, &body, now);
    };
    let index = client.poll_request(now).unwrap();
    answer(&mut client, &index);
    // Two of the three parts in flight; the first answered: five fetches wait, over three.
    let part0 = client.poll_request(now).unwrap();
    let _part1 = client.poll_request(now).unwrap();
    assert!(part0.uri.as_str().ends_with("resourcelist-0.xml"));
    answer(&mut client, &part0);
    while client.poll_event().is_some() {}
    // The free slot goes to a fetch, not to the third part, which waits.
    let next = client.poll_request(now).unwrap();
    assert!(
        matches!(next.purpose, resourcesync_client::Purpose::Resource { .. }),
        "{next:?}"
    );
}

#[test]
fn a_change_list_out_of_chronological_order_is_applied_by_datetime_the_last_change_winning() {
    let mut s = source(3);
    let mut d = baseline(&s);
    // Deleted, then created again a second later; the Change List written the other way
    // round (issue 22: the resource ended deleted).
    s.tick(5);
    s.delete("r/1.txt");
    s.tick(1);
    s.put("r/1.txt", b"back again");
    s.tick(1);
    s.publish();
    let list = String::from_utf8(s.files["changelist.xml"].body.clone()).unwrap();
    // The list's last two entries: r/1.txt deleted, then created.
    let blocks: Vec<&str> = list.split("<url>").collect();
    let n = blocks.len();
    let (deleted, created) = (blocks[n - 2], blocks[n - 1]);
    assert!(
        deleted.contains("r/1.txt") && deleted.contains("deleted") && created.contains("created"),
        "{list}"
    );
    let (created, end) = created.split_at(created.find("</url>").unwrap() + "</url>".len());
    let head = blocks[..n - 2].join("<url>");
    let swapped = format!("{head}<url>{created}<url>{deleted}{end}");
    s.files
        .insert("changelist.xml".into(), Response::ok(swapped.into_bytes()));
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert_eq!(changes(&run, Action::Delete), 0);
    assert_eq!(changes(&run, Action::Update), 1);
    // The list's order is reported, as a warning.
    let warnings: Vec<String> = run
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Warning(w) => Some(format!("{w:?}")),
            _ => None,
        })
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("ChangeListOrder")),
        "{warnings:?}"
    );
}

#[test]
fn durations_past_the_clocks_range_are_no_panic() {
    // `Duration::MAX` for "no limit": `Instant + Duration` would panic on every request.
    let s = source(5);
    let mut d = Destination::default();
    let fault = Box::new(|uri: &str, attempt| match attempt {
        0 if uri.ends_with("r/1.txt") => Some(Fault::Status(500)),
        // Unanswered: the silence's limit is a multiple of the request timeout.
        0 if uri.ends_with("r/2.txt") => Some(Fault::Refused),
        _ => None,
    });
    let run = sync(
        &s,
        &mut d,
        BASELINE,
        "",
        |c| {
            let mut bounds = c.bounds;
            bounds.retry_delay = std::time::Duration::MAX;
            bounds.request_timeout = std::time::Duration::MAX;
            bounds.max_request_time = std::time::Duration::MAX;
            c.with_bounds(bounds)
        },
        Drive {
            fault: Some(fault),
            ..Drive::default()
        },
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
}

/// The most changes decided and not yet stored at any point of `run`: what the client
/// held queued (and in flight) at once.
fn most_decided_ahead(run: &crate::sim::Run) -> usize {
    let (mut ahead, mut most) = (0usize, 0usize);
    for event in &run.events {
        match event {
            Event::Change(_) => ahead += 1,
            Event::Store(_) => ahead = ahead.saturating_sub(1),
            _ => {}
        }
        most = most.max(ahead);
    }
    most
}

#[test]
fn a_long_listing_is_read_as_its_fetches_drain_not_decided_whole() {
    // 3,000 entries, in one list and as an index of 6 lists: each read whole before its
    // first resource is asked for (the simulated Source answers at once).
    for per_list in [5000, 500] {
        let mut s = source(3000);
        s.publish.list_part = per_list;
        s.publish();
        let mut d = Destination::default();
        let run = sync(&s, &mut d, BASELINE, "", |c| c, Drive::default());
        assert_eq!(run.problems(), Vec::<String>::new());
        assert_eq!(run.report().created, 3000, "{:?}", run.report());
        assert!(d.equals(&s), "{}", d.difference(&s));
        // Decided at most 1,024 ahead of the requests made, and those in flight.
        let most = most_decided_ahead(&run);
        assert!(
            most <= 1024 + 16,
            "{most} changes decided ahead ({per_list} a list)"
        );
    }
}

#[test]
fn a_listing_that_waits_for_its_fetches_never_times_out() {
    // Every resource's first request hangs until the client gives up on it (60 s each,
    // a few at a time): the listing, read to its end long before, waits for minutes of
    // the run's time for its remaining entries to be decided.
    let s = source(1500);
    let mut d = Destination::default();
    let drive = Drive {
        fault: Some(Box::new(|uri: &str, attempt: u32| {
            (uri.contains("/r/") && attempt == 0).then_some(Fault::Hang)
        })),
        ..Drive::default()
    };
    let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
    let report = run.report();
    assert_eq!(report.created, 1500, "{report:?}");
    // Only the resources' hung requests failed; no document did.
    assert!(
        run.problems().iter().all(|p| p.contains("/r/")),
        "{:?}",
        run.problems()
    );
    assert!(d.equals(&s), "{}", d.difference(&s));
}

#[test]
fn a_parked_listing_keeps_the_next_parts_of_its_index_unrequested() {
    // Six lists of 1,100 entries, two requests at a time: once a list waits for its
    // fetches, the next lists wait too (each would only be held, whole, in memory).
    let mut s = source(6600);
    s.publish.list_part = 1100;
    s.publish();
    let mut d = Destination::default();
    let two = |mut c: resourcesync_client::Config| {
        c.bounds.max_in_flight = 2;
        c
    };
    let run = sync(&s, &mut d, BASELINE, "", two, Drive::default());
    assert_eq!(run.report().created, 6600, "{:?}", run.report());
    assert!(d.equals(&s), "{}", d.difference(&s));
    let first_resource = run
        .requests
        .iter()
        .position(|r| r.contains("/r/"))
        .expect("resources were requested");
    let lists_before = run.requests[..first_resource]
        .iter()
        .filter(|r| r.contains("resourcelist"))
        .count();
    assert!(
        lists_before <= 3,
        "{lists_before} lists requested before the first resource: {:?}",
        &run.requests[..first_resource]
    );
    assert!(most_decided_ahead(&run) <= 1024 + 16);
}

#[test]
fn a_parked_listing_past_the_byte_limit_fails_as_the_reader_would() {
    // 1,100 entries, then 51 MiB of white space: the listing parks after 1,024 entries
    // (every resource's first request hangs), and what comes after is held, not read.
    let mut urls = String::new();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for i in 0..1100 {
        urls.push_str(&format!(
            "<url><loc>http://example.com/r/{i}.txt</loc></url>\n"
        ));
        files.push((format!("r/{i}.txt"), format!("{i}").into_bytes()));
    }
    urls.push_str(&" ".repeat(51 << 20));
    let list = crate::counting::resource_list(&urls);
    let mut served: Vec<(&str, &[u8])> = vec![("resourcelist.xml", &list)];
    served.extend(files.iter().map(|(p, b)| (p.as_str(), &b[..])));
    let source = crate::counting::serving(&served);
    let mut d = Destination::default();
    let drive = Drive {
        chunks: vec![1 << 20],
        fault: Some(Box::new(|uri: &str, attempt: u32| {
            (uri.contains("/r/") && attempt == 0).then_some(Fault::Hang)
        })),
        ..Drive::default()
    };
    let run = sync(&source, &mut d, BASELINE, "resourcelist.xml", |c| c, drive);
    let too_large = run.events.iter().position(|e| {
        matches!(e, Event::Problem(p) if matches!(&p.kind, ProblemKind::Document(e)
            if matches!(e.kind(), resourcesync_xml::ErrorKind::TooLarge(_))))
    });
    let too_large = too_large.unwrap_or_else(|| panic!("{:?}", run.problems()));
    // While the body came, not once the list was read on: before any resource is
    // stored (the first requests hang until they time out).
    let first_store = run.events.iter().position(|e| matches!(e, Event::Store(_)));
    assert!(
        first_store.is_some_and(|s| too_large < s),
        "{too_large} {first_store:?}"
    );
    assert!(!run.report().complete);
    assert!(most_decided_ahead(&run) <= 1024 + 16);
}

/// A document that names documents (a Source Description, a Capability List, a Resource
/// List Index), its body cut short after its first entry and read again: what it named
/// the first time is named again by it, not a loop (the set failed, "document reached
/// twice", and the baseline was never complete over a connection that broke once).
#[test]
fn a_document_cut_short_after_naming_documents_is_read_again_without_a_loop() {
    for (start, file, part) in [
        ("", ".well-known/resourcesync", 100),
        ("", "capabilitylist.xml", 100),
        ("resourcelist.xml", "resourcelist.xml", 5),
    ] {
        let mut s = source(30);
        s.publish.list_part = part;
        s.publish();
        let body = String::from_utf8(s.files[file].body.clone()).unwrap();
        // Into the second entry: the first was read whole.
        let first = body.find("</url>").or(body.find("</sitemap>")).unwrap();
        let cut = first + 30;
        let cut_file = file.to_owned();
        let mut d = Destination::default();
        let fault = Box::new(move |uri: &str, attempt| {
            (uri.ends_with(&cut_file) && attempt == 0).then_some(Fault::Truncate(cut))
        });
        let drive = Drive {
            fault: Some(fault),
            ..Drive::default()
        };
        let run = sync(&s, &mut d, BASELINE, start, |c| c, drive);
        assert!(run.report().complete, "{file}: {:?}", run.problems());
        assert!(d.equals(&s), "{file}: {}", d.difference(&s));
        let asked = run.requests.iter().filter(|r| r.ends_with(file)).count();
        assert_eq!(asked, 2, "{file}");
    }
}

/// A Source that offers a Change Dump and no Change List, whose Resource List lags
/// behind: a resource an incremental run stored after the listing's `at` is not listed.
/// A baseline with deletions reads the Change Dump to learn it was created since (it read
/// none, since nothing it fetched disagreed with the listing, and deleted it).
#[test]
fn a_baseline_with_deletions_reads_the_change_dump_when_a_run_since_its_listing_stored_more() {
    let mut s = source(4);
    s.publish.change_dump = true;
    s.publish();
    let mut d = baseline(&s);
    let lagging = s.files["resourcelist.xml"].clone();
    s.tick(30);
    s.put("r/later.txt", b"later");
    s.publish();
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.files.contains_key("r/later.txt"));
    s.files.insert("resourcelist.xml".into(), lagging);
    let run = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    // Started at the Resource List, whose Capability List (and so its Change Dump) it
    // does not read: it cannot learn what was created since, and deletes nothing.
    let start = "resourcelist.xml";
    let run = sync(&s, &mut d, BASELINE, start, deleting, Drive::default());
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
    assert!(run.events.iter().any(|e| matches!(e, Event::Warning(w)
        if w.message.contains("the Change Lists since the listing were not read"))));
}

/// A document reached by a redirect (the well-known URI to the Source Description's own
/// address), its body cut short after its first entry and read again (where it was
/// redirected to): what it names, it named; no loop.
#[test]
fn a_redirected_document_cut_short_is_read_again_without_a_loop() {
    let mut s = source(3);
    s.publish();
    let body = s.files[".well-known/resourcesync"].body.clone();
    let text = String::from_utf8(body.clone()).unwrap();
    let cut = (text.find("</url>").unwrap() + 30).min(text.len() - 1);
    s.files.insert("description.xml".into(), Response::ok(body));
    let fault = Box::new(move |uri: &str, attempt| {
        if uri.ends_with(".well-known/resourcesync") {
            return Some(Fault::Redirect("http://example.com/description.xml".into()));
        }
        (uri.ends_with("description.xml") && attempt == 0).then_some(Fault::Truncate(cut))
    });
    let drive = Drive {
        fault: Some(fault),
        ..Drive::default()
    };
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", |c| c, drive);
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.equals(&s), "{}", d.difference(&s));
}

/// A baseline in which a resource failed keeps its checkpoint where it was, and records
/// the resource to fetch again: the next run, incremental, whose Change Lists do not name
/// it, fetches it (it ended complete without it: the baseline had recorded nothing).
#[test]
fn a_resource_a_baseline_failed_is_fetched_by_the_next_incremental_run() {
    let s = source(3);
    let mut d = baseline(&s);
    let lost = s.uri("r/1.txt");
    d.inventory.remove(&lost);
    d.files.remove("r/1.txt");
    let failing = Drive::faulty(|uri, _| uri.ends_with("r/1.txt").then_some(Fault::Status(500)));
    let run = sync(&s, &mut d, BASELINE, "", deleting, failing);
    assert!(!run.report().complete);
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
}

/// `s`'s package `zip_name` with its manifest edited by `edit`, and the dump `dump` that
/// lists it stating the new package's length and digests.
fn edit_package(s: &mut Source, dump: &str, zip_name: &str, edit: impl Fn(String) -> String) {
    use std::io::{Read, Write};
    let old = s.files[zip_name].body.clone();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(&old)).unwrap();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for i in 0..archive.len() {
        let mut file = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        let name = file.name().unwrap().into_owned();
        if name == "manifest.xml" {
            bytes = edit(String::from_utf8(bytes).unwrap()).into_bytes();
        }
        zip.start_file(name, options).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    let new = zip.finish().unwrap().into_inner();
    let fixity = |bytes: &[u8]| {
        let mut f = resourcesync_model::Fixity::new();
        f.update(bytes);
        let d = f.finish();
        (format!(r#"length="{}""#, d.length), d.hashes().to_string())
    };
    let (old_length, old_hashes) = fixity(&old);
    let (new_length, new_hashes) = fixity(&new);
    let listing = String::from_utf8(s.files[dump].body.clone()).unwrap();
    assert!(listing.contains(&old_hashes), "{listing}");
    let listing = listing
        .replace(&old_length, &new_length)
        .replace(&old_hashes, &new_hashes);
    s.files
        .insert(dump.into(), Response::ok(listing.into_bytes()));
    s.files.insert(zip_name.into(), Response::ok(new));
}

/// The manifest of the package `zip`, as text.
fn manifest_in(zip: &[u8]) -> String {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut text = String::new();
    (archive.by_name("manifest.xml").unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text
}

/// Asserts that one problem of `run` refuses an entry, for `rule`.
fn refused_once(run: &Run, rule: resourcesync_model::Rule) {
    assert_eq!(refused_for(run, rule), 1, "{:?}", run.problems());
}

/// The problems of `run` that refuse an entry for `rule`.
fn refused_for(run: &Run, rule: resourcesync_model::Rule) -> usize {
    (run.events.iter())
        .filter(|e| {
            matches!(e, Event::Problem(p)
            if matches!(&p.kind, ProblemKind::EntryRefused(r) if r.rule == rule))
        })
        .count()
}

/// A Resource Dump manifest entry whose `<loc>` no reading makes a URI is skipped by the
/// package's reader: it may name a resource held, so a baseline with deletions deletes
/// nothing for want of it, and says so (the sweep deleted the resource it named).
#[test]
fn a_dump_manifest_entry_that_names_nothing_stops_the_deletions() {
    let mut s = source(3);
    s.publish.resource_dump = true;
    s.publish();
    let mut d = Destination::default();
    let run = sync(&s, &mut d, DUMP, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    let named = format!("<loc>{}</loc>", s.uri("r/1.txt"));
    let dump = s.files["resourcedump.xml"].clone();
    let package = s.files["resourcedump-1.zip"].clone();
    for (broken, rule) in [
        (
            "<loc>http://exa mple.com/r/1.txt</loc>",
            resourcesync_model::Rule::UriSyntax,
        ),
        ("", resourcesync_model::Rule::LocMandatory),
    ] {
        s.files.insert("resourcedump.xml".into(), dump.clone());
        s.files.insert("resourcedump-1.zip".into(), package.clone());
        edit_package(&mut s, "resourcedump.xml", "resourcedump-1.zip", |m| {
            assert!(m.contains(&named), "{m}");
            m.replace(&named, broken)
        });
        let run = sync(&s, &mut d, DUMP, "", deleting, Drive::default());
        assert_eq!(
            changes(&run, Action::Delete),
            0,
            "{broken}: {:?}",
            run.problems()
        );
        assert!(d.files.contains_key("r/1.txt"), "{broken}");
        assert!(!run.report().complete, "{broken}");
        refused_once(&run, rule);
    }
}

/// A Resource Dump manifest entry whose hash cannot be read is refused, not extracted
/// unchecked (its bytes were stored whatever they were), and not deleted either.
#[test]
fn a_dump_manifest_entry_whose_hash_cannot_be_read_is_not_extracted_unchecked() {
    let mut s = source(3);
    s.publish.resource_dump = true;
    s.publish();
    let uri = s.uri("r/1.txt");
    edit_package(&mut s, "resourcedump.xml", "resourcedump-1.zip", |m| {
        unreadable_hash(&m, &format!("<loc>{uri}</loc>"))
    });
    let mut d = Destination::default();
    let run = sync(&s, &mut d, DUMP, "", |c| c, Drive::default());
    // (The Change Lists since the dump name it with its digests: fetched so, it is checked.)
    let extracted = |e: &Event| matches!(e, Event::Extract(x) if x.change.uri == uri);
    assert!(!run.events.iter().any(extracted), "extracted unchecked");
    assert!(!run.report().complete);
    refused_once(&run, resourcesync_model::Rule::HashSyntax);
    // Held from an earlier run, it is kept: listed, if refused.
    let mut held = baseline(&s);
    let run = sync(&s, &mut held, DUMP, "", deleting, Drive::default());
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(held.files.contains_key("r/1.txt"));
}

/// A Change Dump manifest entry whose `<loc>` no reading makes a URI is a change not
/// known: refused where it stands, as one of a Change List is; the run is not complete
/// (it was, without the change).
#[test]
fn a_change_dump_manifest_entry_that_names_nothing_is_refused() {
    let (mut s, mut d, package, named) = change_dump_with_later();
    edit_package(&mut s, "changedump.xml", &package, |m| {
        m.replace(&named, "<loc>http://exa mple.com/r/later.txt</loc>")
    });
    one_unread_refused(&s, &mut d);
    assert!(!d.files.contains_key("r/later.txt"));
}

/// A Change Dump manifest entry whose hash cannot be read is refused where it stands,
/// not extracted unchecked (its bytes were stored whatever they were); the change after
/// it is applied.
#[test]
fn a_change_dump_manifest_entry_whose_hash_cannot_be_read_is_not_extracted_unchecked() {
    let (mut s, mut d, package, named) = change_dump_with_later();
    edit_package(&mut s, "changedump.xml", &package, |m| {
        unreadable_hash(&m, &named)
    });
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(!run.report().complete, "{:?}", run.problems());
    refused_once(&run, resourcesync_model::Rule::HashSyntax);
    let later = s.uri("r/later.txt");
    let extracted = |e: &Event| matches!(e, Event::Extract(x) if x.change.uri == later);
    assert!(!run.events.iter().any(extracted), "extracted unchecked");
    assert!(!d.files.contains_key("r/later.txt"));
    assert!(d.files.contains_key("r/next.txt"));
}

/// A Source offering a Change Dump, `r/later.txt` and `r/next.txt` created since a
/// destination's baseline: the Source, the destination, the package whose manifest
/// names `r/later.txt`, and its `<loc>` as written there.
fn change_dump_with_later() -> (Source, Destination, String, String) {
    let mut s = source(3);
    s.publish.change_dump = true;
    s.publish();
    let d = baseline(&s);
    s.tick(30);
    s.put("r/later.txt", b"later");
    s.put("r/next.txt", b"next");
    s.publish();
    let named = format!("<loc>{}</loc>", s.uri("r/later.txt"));
    let package = served_where(&s, |name, body| {
        name.ends_with(".zip") && manifest_in(body).contains(&named)
    });
    (s, d, package, named)
}

/// `manifest` with the hash of the entry whose `<loc>` is `named` made unreadable.
fn unreadable_hash(manifest: &str, named: &str) -> String {
    let m = manifest;
    let at = m.find(named).unwrap();
    let hash = at + m[at..].find("hash=\"").unwrap() + "hash=\"".len();
    let end = hash + m[hash..].find('"').unwrap();
    format!("{}md5:zz{}", &m[..hash], &m[end..])
}

/// The name of the file `s` serves that `found` picks by its name and body.
fn served_where(s: &Source, found: impl Fn(&str, &[u8]) -> bool) -> String {
    (s.files.iter())
        .find(|(name, response)| found(name, &response.body))
        .map(|(name, _)| name.clone())
        .unwrap_or_else(|| panic!("{:?}", s.files.keys().collect::<Vec<_>>()))
}

/// A Change List entry whose `<loc>` no reading makes a URI, right after changes the
/// checkpoint covers and before one it does not: refused and said, not passed over as
/// applied (it took the place of the entry before it, which the checkpoint covers).
#[test]
fn a_change_list_entry_that_names_nothing_after_applied_changes_is_refused() {
    let mut s = source(3);
    s.publish();
    let mut d = baseline(&s);
    s.tick(30);
    s.put("r/later.txt", b"later");
    s.tick(30);
    s.put("r/next.txt", b"next");
    s.publish();
    let named = format!("<loc>{}</loc>", s.uri("r/later.txt"));
    let list = served_where(&s, |name, body| {
        name.starts_with("changelist") && String::from_utf8_lossy(body).contains(&named)
    });
    let text = String::from_utf8(s.files[&list].body.clone()).unwrap();
    let broken = text.replace(&named, "<loc>http://exa mple.com/r/later.txt</loc>");
    s.files.insert(list, Response::ok(broken.into_bytes()));
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(!run.report().complete, "{:?}", run.problems());
    assert!(d.files.contains_key("r/next.txt"));
    refused_once(&run, resourcesync_model::Rule::UriSyntax);
}

/// The same, the entry last in the open Change List (no next entry, no `until`): it may
/// be any change since the one before it, which the checkpoint covers. Refused and said,
/// on every run until the list says more.
#[test]
fn the_last_entry_of_an_open_change_list_that_names_nothing_is_refused_on_every_run() {
    let mut s = source(3);
    s.publish();
    let mut d = baseline(&s);
    edit_open_change_list(&mut s, |text| {
        text.replace("</urlset>", &format!("{UNREAD}</urlset>"))
    });
    for _ in 0..2 {
        one_unread_refused(&s, &mut d);
    }
}

/// A Change List entry whose `<loc>` cannot be read.
const UNREAD: &str =
    r#"<url><loc>http://exa mple.com/r/x.txt</loc><rs:md change="created"/></url>"#;

/// `s`'s open Change List (the one with entries and no `until`) edited by `edit`.
fn edit_open_change_list(s: &mut Source, edit: impl Fn(&str) -> String) {
    let open = served_where(s, |name, body| {
        let text = String::from_utf8_lossy(body);
        name.starts_with("changelist") && text.contains("<url>") && !text.contains("until=")
    });
    let text = String::from_utf8(s.files[&open].body.clone()).unwrap();
    s.files.insert(open, Response::ok(edit(&text).into_bytes()));
}

/// An unread Change List entry whose next entry is stamped before the entry before it
/// (a list out of order there) has no bound: it may be any change since, and is refused
/// (the next entry's datetime, which the checkpoint covers, passed it as applied).
#[test]
fn an_unread_change_list_entry_before_one_out_of_order_is_refused() {
    let mut s = source(3);
    s.publish();
    let mut d = baseline(&s);
    let earlier = format!(
        r#"<url><loc>{}</loc><rs:md change="updated" datetime="2019-01-01T00:00:00Z"/></url>"#,
        s.uri("r/0.txt")
    );
    edit_open_change_list(&mut s, |text| {
        text.replace("</urlset>", &format!("{UNREAD}{earlier}</urlset>"))
    });
    one_unread_refused(&s, &mut d);
}

/// A baseline reads the Change Lists since its listing's `at`: an unread entry even
/// before that `at` is refused, since a listing stamped late may have missed what it
/// created (it cannot be told from one the listing reflects). Here it stands where the
/// creation of `r/2.txt`, held and no longer listed, was: nothing is deleted (it was).
#[test]
fn a_baseline_refuses_an_unread_change_even_before_its_listing() {
    let mut s = source(3);
    s.publish();
    let mut d = baseline(&s);
    let uri = s.uri("r/2.txt");
    edit_open_change_list(&mut s, |text| text.replace(entry_of(text, &uri), UNREAD));
    let list = String::from_utf8(s.files["resourcelist.xml"].body.clone()).unwrap();
    let list = list.replace(entry_of(&list, &uri), "");
    s.files
        .insert("resourcelist.xml".into(), Response::ok(list.into_bytes()));
    let run = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert!(!run.report().complete);
    refused_once(&run, resourcesync_model::Rule::UriSyntax);
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(d.files.contains_key("r/2.txt"));
}

/// The `<url>` entry of `uri` in `text`.
fn entry_of<'a>(text: &'a str, uri: &resourcesync_model::Uri) -> &'a str {
    let start = text.find(&format!("<url><loc>{uri}</loc>")).unwrap();
    &text[start..start + text[start..].find("</url>").unwrap() + "</url>".len()]
}

/// A Source whose listing, stamped after `r/late.txt` was created, does not list it
/// (written while the Source changed), and a destination an incremental run brought up
/// to date: it holds it.
fn missed_by_a_late_listing() -> (Source, Destination) {
    let mut s = source(3);
    s.publish();
    let mut d = baseline(&s);
    s.tick(30);
    s.put("r/late.txt", b"late");
    s.tick(30);
    s.publish();
    let run = sync(
        &s,
        &mut d,
        Mode::Incremental,
        "",
        deleting,
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.files.contains_key("r/late.txt"));
    let list = String::from_utf8(s.files["resourcelist.xml"].body.clone()).unwrap();
    let list = list.replace(entry_of(&list, &s.uri("r/late.txt")), "");
    s.files
        .insert("resourcelist.xml".into(), Response::ok(list.into_bytes()));
    (s, d)
}

/// A resource an incremental run stored, which a listing stamped after its creation
/// does not list (written while the Source changed): the Change Lists say it was
/// created before the listing's `at`, so a baseline with deletions keeps it (it deleted
/// it as unlisted).
#[test]
fn a_resource_a_late_stamped_listing_missed_is_not_deleted_by_a_baseline() {
    let (s, mut d) = missed_by_a_late_listing();
    let run = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(d.files.contains_key("r/late.txt"));
}

/// The same, the Change Lists stating, out of chronological order, the creation and then
/// an earlier deletion: by datetime the creation is the last change, and the resource is
/// kept (the deletion, written last, took it back).
#[test]
fn a_resource_a_late_stamped_listing_missed_is_kept_by_its_last_change_by_datetime() {
    let (mut s, mut d) = missed_by_a_late_listing();
    deleted_earlier_written_last(&mut s);
    let run = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert_eq!(changes(&run, Action::Delete), 0, "{:?}", run.problems());
    assert!(d.files.contains_key("r/late.txt"));
}

/// The same, not held: the creation the listing missed is fetched, though a deletion
/// dated earlier is written after it (it took the creation back by the order written).
#[test]
fn a_creation_a_late_stamped_listing_missed_is_fetched_by_its_last_change_by_datetime() {
    let (mut s, _) = missed_by_a_late_listing();
    deleted_earlier_written_last(&mut s);
    let mut d = Destination::default();
    let run = sync(&s, &mut d, BASELINE, "", deleting, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(d.files.contains_key("r/late.txt"));
}

/// A deletion of `r/late.txt` dated before its creation, written last in `s`'s open
/// Change List (a list out of chronological order).
fn deleted_earlier_written_last(s: &mut Source) {
    let earlier = format!(
        r#"<url><loc>{}</loc><rs:md change="deleted" datetime="2019-01-01T00:00:00Z"/></url>"#,
        s.uri("r/late.txt")
    );
    edit_open_change_list(s, |text| {
        text.replace("</urlset>", &format!("{earlier}</urlset>"))
    });
}

/// An unread last entry of a closed Change List whose index states a later `until` than
/// the list does: the bound is the later (a list may end before its index says), and a
/// checkpoint between the two does not cover it (the list's own, earlier, passed it).
#[test]
fn an_unread_last_entry_is_bounded_by_the_later_of_the_list_s_and_its_index_s_until() {
    let mut s = source(3);
    s.publish.change_part = 2;
    s.publish();
    let mut d = baseline(&s);
    let index = String::from_utf8(s.files["changelist.xml"].body.clone()).unwrap();
    assert!(index.contains("<sitemapindex"), "{index}");
    let closed = served_where(&s, |_, body| {
        let text = String::from_utf8_lossy(body);
        text.contains("<urlset") && text.contains("changelist") && text.contains("until=")
    });
    let text = String::from_utf8(s.files[&closed].body.clone()).unwrap();
    let text = text.replace("</urlset>", &format!("{UNREAD}</urlset>"));
    s.files
        .insert(closed.clone(), Response::ok(text.into_bytes()));
    // The index says the closed list runs far later than it says itself.
    let at = index.find(&format!("{closed}</loc>")).unwrap();
    let until = at + index[at..].find("until=\"").unwrap() + "until=\"".len();
    let end = until + index[until..].find('"').unwrap();
    let index = format!("{}2100-01-01T00:00:00Z{}", &index[..until], &index[end..]);
    s.files
        .insert("changelist.xml".into(), Response::ok(index.into_bytes()));
    one_unread_refused(&s, &mut d);
}

/// An incremental run of `s` into `d`: not complete, one entry refused for its `<loc>`.
fn one_unread_refused(s: &Source, d: &mut Destination) {
    let run = sync(s, d, Mode::Incremental, "", deleting, Drive::default());
    assert!(!run.report().complete, "{:?}", run.problems());
    refused_once(&run, resourcesync_model::Rule::UriSyntax);
}
