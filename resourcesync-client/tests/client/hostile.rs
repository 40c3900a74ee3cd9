//! What a hostile review of `sync` found in the client, each a class: times a Source
//! cannot vouch for, indexes of indexes, audits with nothing to compare, a sync started
//! at a list, bodies in a coding nobody asked for.

use resourcesync_client::Mode;

use crate::counting::{BASELINE, baseline, resource_list, serving};
use crate::sim::{Destination, Drive, sync};

/// A list of `<loc>`s alone: right after a complete baseline, an audit finds every file
/// held and none changed (it has nothing to compare them with, and does not pretend).
#[test]
fn an_audit_of_bare_locs_after_a_baseline_calls_nothing_changed() {
    let list = resource_list(
        r#"<url><loc>http://example.com/a.txt</loc></url>
  <url><loc>http://example.com/b.txt</loc></url>"#,
    );
    let source = serving(&[
        ("resourcelist.xml", &list),
        ("a.txt", b"a"),
        ("b.txt", b"b"),
    ]);
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    assert!(run.report().complete, "{:?}", run.problems());
    let run = sync(
        &source,
        &mut dest,
        Mode::Audit,
        "resourcelist.xml",
        |c| c,
        Drive::default(),
    );
    let report = run.report();
    assert_eq!(
        (report.changed, report.missing, report.extra),
        (0, 0, 0),
        "{report:?}"
    );
    assert_eq!(report.in_sync, Some(true), "{report:?}");
}

/// A body in a content coding nobody asked for (the driver asks for identity) is not
/// stored encoded: the fetch fails, naming the coding.
#[test]
fn a_body_in_a_content_coding_nobody_asked_for_is_not_stored() {
    let list = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let mut source = serving(&[("resourcelist.xml", &list)]);
    source.files.insert(
        "a.txt".into(),
        crate::sim::Response {
            status: 200,
            headers: vec![("content-encoding".into(), "gzip".into())],
            body: vec![0x1f, 0x8b, 8, 0],
        },
    );
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    assert!(dest.files.is_empty(), "stored encoded");
    assert_eq!(run.report().failed, 1, "{:?}", run.report());
    assert!(!run.report().complete);
    assert!(
        run.problems().iter().any(|p| p.contains("gzip")),
        "{:?}",
        run.problems()
    );
    // Its body still coming, the client tells the driver to stop reading it (a driver
    // whose requests are workers would otherwise keep one on it).
    assert!(
        (run.events.iter()).any(|e| matches!(e, resourcesync_client::Event::Cancel { .. })),
        "{:?}",
        run.events
    );
}

/// An index of indexes names its children's children by the billion: depth alone does
/// not bound it. Past `Bounds::max_documents` the set fails, said once, and no more
/// documents are queued or asked for (memory bounded by the bound, not by what is named).
/// Said even where the set failed already (a child the policy refuses, first): it was
/// not, and the run did not tell that it met the bound.
#[test]
fn an_index_that_names_more_documents_than_the_bound_fails_without_reading_them_all() {
    for refused in [
        "",
        "<sitemap><loc>http://elsewhere.example/index.xml</loc></sitemap>",
    ] {
        bounded_index(refused);
    }
}

/// [`an_index_that_names_more_documents_than_the_bound_fails_without_reading_them_all`],
/// with `first` before the children each index names.
fn bounded_index(first: &str) {
    const NAMED: usize = 2_000;
    const MAX: u64 = 100;
    let lists: String = (0..NAMED)
        .map(|i| format!("<sitemap><loc>http://example.com/index-{i}.xml</loc></sitemap>"))
        .collect();
    let index = format!(
        r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  {first}{lists}
</sitemapindex>"#
    );
    // Each child is an index again, of as many: what a hostile Source serves (served
    // for as many as the bound lets be read, and some).
    let mut files = vec![("resourcelist.xml".to_owned(), index.clone().into_bytes())];
    for i in 0..2 * MAX as usize {
        files.push((
            format!("index-{i}.xml"),
            index.replace("index-", &format!("index-{i}-")).into_bytes(),
        ));
    }
    let borrowed: Vec<(&str, &[u8])> = files.iter().map(|(p, b)| (p.as_str(), &b[..])).collect();
    let source = serving(&borrowed);
    let mut dest = Destination::default();
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        "resourcelist.xml",
        |c| {
            let mut bounds = c.bounds;
            bounds.max_documents = MAX;
            c.with_bounds(bounds)
        },
        Drive::default(),
    );
    let said: Vec<String> = run
        .problems()
        .into_iter()
        .filter(|p| p.contains("more than 100 documents"))
        .collect();
    assert_eq!(said.len(), 1, "{:?}", run.problems());
    assert!(!run.report().complete);
    assert!(
        run.requests.len() as u64 <= MAX + 1,
        "{} requests for a bound of {MAX}",
        run.requests.len()
    );
}

/// A Resource List whose `at` a publisher's clock stamped in 2199.
fn list_stamped(at: &str) -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="{at}"/>
  <url><loc>http://example.com/a.txt</loc><rs:md length="5"/></url>
</urlset>"#
    )
    .into_bytes()
}

/// The checkpoint of `dest`'s one set.
fn checkpoint(dest: &Destination) -> String {
    let (_, checkpoint) = dest.state.sets.iter().next().expect("a checkpoint");
    checkpoint.datetime.to_string()
}

/// One far-future time (a list's `at`: a publisher's clock slip) does not become the
/// checkpoint: it is held at the caller's clock, and the run says so. Without that every
/// change stamped before 2199 would be skipped for ever, "complete".
#[test]
fn a_far_future_at_is_no_checkpoint_past_the_callers_clock() {
    let list = list_stamped("2199-01-01T00:00:00Z");
    let source = serving(&[("resourcelist.xml", &list), ("a.txt", b"hello")]);
    let mut dest = Destination::default();
    let now = "2025-06-01T00:00:00Z";
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        "resourcelist.xml",
        |c| c.with_clock(now.parse().unwrap()),
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(checkpoint(&dest), now);
    let said = run.events.iter().any(|e| {
        matches!(e, resourcesync_client::Event::Warning(w) if w.message.contains("later than this run can vouch for"))
    });
    assert!(said, "the hold is said");
}

/// The Source's own `Date` bounds the checkpoint too, when the caller gives no clock.
#[test]
fn a_far_future_at_is_no_checkpoint_past_the_sources_date() {
    let list = list_stamped("2199-01-01T00:00:00Z");
    let mut source = serving(&[("a.txt", b"hello")]);
    source.files.insert(
        "resourcelist.xml".into(),
        crate::sim::Response {
            status: 200,
            headers: vec![("date".into(), "Sun, 01 Jun 2025 00:00:00 GMT".into())],
            body: list,
        },
    );
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(checkpoint(&dest), "2025-06-01T00:00:00Z");
}

/// An `at` the clock vouches for is the checkpoint, as before.
#[test]
fn an_at_before_the_clock_is_the_checkpoint() {
    let list = list_stamped("2025-01-01T00:00:00Z");
    let source = serving(&[("resourcelist.xml", &list), ("a.txt", b"hello")]);
    let mut dest = Destination::default();
    sync(
        &source,
        &mut dest,
        BASELINE,
        "resourcelist.xml",
        |c| c.with_clock("2025-06-01T00:00:00Z".parse().unwrap()),
        Drive::default(),
    );
    assert_eq!(checkpoint(&dest), "2025-01-01T00:00:00Z");
}

/// One Change List entry stamped in 2199 moves the checkpoint no further than the clock:
/// a change the Source makes later (stamped correctly) is applied by the next run, not
/// skipped as "before the checkpoint".
#[test]
fn a_far_future_change_holds_the_checkpoint_at_the_clock_and_later_changes_are_applied() {
    let changelist = |urls: &str| -> Vec<u8> {
        format!(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
  <rs:md capability="changelist" from="2025-01-01T00:00:00Z"/>
  {urls}
</urlset>"#
        )
        .into_bytes()
    };
    let b = r#"<url><loc>http://example.com/b.txt</loc><rs:md change="created" datetime="2199-01-01T00:00:00Z" length="3"/></url>"#;
    let c = r#"<url><loc>http://example.com/c.txt</loc><rs:md change="created" datetime="2025-03-01T00:00:00Z" length="3"/></url>"#;
    let list = list_stamped("2025-01-01T00:00:00Z");
    let first = changelist(b);
    let files: Vec<(&str, &[u8])> = vec![
        ("resourcelist.xml", &list),
        ("changelist.xml", &first),
        ("a.txt", b"hello"),
        ("b.txt", b"bbb"),
        ("c.txt", b"ccc"),
    ];
    let mut source = serving(&files);
    let mut dest = Destination::default();
    let clock =
        |at: &'static str| move |c: resourcesync_client::Config| c.with_clock(at.parse().unwrap());
    sync(
        &source,
        &mut dest,
        BASELINE,
        "resourcelist.xml",
        clock("2025-01-15T00:00:00Z"),
        Drive::default(),
    );
    let run = sync(
        &source,
        &mut dest,
        Mode::Incremental,
        "changelist.xml",
        clock("2025-02-01T00:00:00Z"),
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(checkpoint(&dest), "2025-02-01T00:00:00Z");
    // The Source goes on: c.txt is created, stamped by a clock that is right.
    let second = changelist(&format!("{c}\n  {b}"));
    source
        .files
        .insert("changelist.xml".into(), crate::sim::Response::ok(second));
    let run = sync(
        &source,
        &mut dest,
        Mode::Incremental,
        "changelist.xml",
        clock("2025-04-01T00:00:00Z"),
        Drive::default(),
    );
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(
        dest.files.get("c.txt").map(Vec::as_slice),
        Some(&b"ccc"[..]),
        "c.txt was skipped"
    );
}
