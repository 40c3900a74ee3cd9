//! Never trust coverage that is not stated: a Change List without `from`, lists or an
//! index whose intervals do not meet, are a gap (the command's fallback baseline); an
//! entry without `change` is refused with its rule.

use resourcesync_client::{Event, Mode, ProblemKind};

use crate::counting::{baseline, serving};
use crate::sim::{Destination, Drive, Run, sync};

const UP: &str = r#"<rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>"#;

/// A Resource List at 2025-01-01 of a.txt ("hello"), in the set of the Capability List.
fn resourcelist() -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  {UP}<rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <url><loc>http://example.com/a.txt</loc><rs:md length="5"/></url>
</urlset>"#
    )
    .into_bytes()
}

/// A Change List with the head attributes `md` and the entries `urls`.
fn changelist(md: &str, urls: &str) -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  {UP}<rs:md capability="changelist" {md}/>
  {urls}
</urlset>"#
    )
    .into_bytes()
}

const B_CREATED: &str = r#"<url><loc>http://example.com/b.txt</loc><rs:md change="created" datetime="2025-01-02T00:00:00Z" length="3"/></url>"#;

/// A baseline of `resourcelist()`, then an incremental run from `start` over `files`.
fn incremental(files: &[(&str, &[u8])], start: &str) -> (Run, Destination) {
    let list = resourcelist();
    let mut all: Vec<(&str, &[u8])> = vec![("resourcelist.xml", &list), ("a.txt", b"hello")];
    all.extend_from_slice(files);
    let source = serving(&all);
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    assert!(run.report().complete, "{:?}", run.problems());
    let run = sync(
        &source,
        &mut dest,
        Mode::Incremental,
        start,
        |c| c,
        Drive::default(),
    );
    (run, dest)
}

fn gaps(run: &Run) -> usize {
    run.events
        .iter()
        .filter(|e| matches!(e, Event::Problem(p) if matches!(p.kind, ProblemKind::Gap { .. })))
        .count()
}

/// Python resync's publisher rewrites one `changelist.xml` without `from`: a Destination
/// that missed a rewrite cannot tell, so it is a gap, and nothing is applied.
#[test]
fn a_change_list_without_from_is_a_gap() {
    let cl = changelist(r#"until="2025-01-03T00:00:00Z""#, B_CREATED);
    let (run, dest) = incremental(
        &[("changelist.xml", &cl), ("b.txt", b"abc")],
        "changelist.xml",
    );
    assert_eq!(gaps(&run), 1, "{:?}", run.problems());
    assert_eq!(run.report().created, 0);
    assert!(!run.report().complete);
    assert!(!dest.files.contains_key("b.txt"));

    // Stated, the same list is applied.
    let cl = changelist(
        r#"from="2025-01-01T00:00:00Z" until="2025-01-03T00:00:00Z""#,
        B_CREATED,
    );
    let (run, _) = incremental(
        &[("changelist.xml", &cl), ("b.txt", b"abc")],
        "changelist.xml",
    );
    assert_eq!(gaps(&run), 0, "{:?}", run.problems());
    assert_eq!(run.report().created, 1);
    assert!(run.report().complete, "{:?}", run.problems());
}

/// An index whose entries say nothing of their intervals: the lists' own `from` and
/// `until` state a hole between them, and that is a gap.
#[test]
fn lists_whose_own_intervals_do_not_meet_are_a_gap() {
    let index = format!(
        r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  {UP}<rs:md capability="changelist" from="2025-01-01T00:00:00Z"/>
  <sitemap><loc>http://example.com/cl1.xml</loc></sitemap>
  <sitemap><loc>http://example.com/cl2.xml</loc></sitemap>
</sitemapindex>"#
    );
    let cl1 = changelist(
        r#"from="2025-01-01T00:00:00Z" until="2025-01-02T00:00:00Z""#,
        "",
    );
    let cl2 = changelist(r#"from="2025-01-05T00:00:00Z""#, B_CREATED);
    let files: [(&str, &[u8]); 4] = [
        ("changelist.xml", index.as_bytes()),
        ("cl1.xml", &cl1),
        ("cl2.xml", &cl2),
        ("b.txt", b"abc"),
    ];
    let (run, _) = incremental(&files, "changelist.xml");
    assert_eq!(gaps(&run), 1, "{:?}", run.problems());
    assert_eq!(run.report().created, 0);
}

/// An index whose own `from` is after the checkpoint, its entry silent: a gap.
#[test]
fn an_index_whose_own_from_is_after_the_checkpoint_is_a_gap() {
    let index = format!(
        r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  {UP}<rs:md capability="changelist" from="2025-01-05T00:00:00Z"/>
  <sitemap><loc>http://example.com/cl2.xml</loc></sitemap>
</sitemapindex>"#
    );
    let cl2 = changelist(r#"from="2025-01-05T00:00:00Z""#, B_CREATED);
    let files: [(&str, &[u8]); 3] = [
        ("changelist.xml", index.as_bytes()),
        ("cl2.xml", &cl2),
        ("b.txt", b"abc"),
    ];
    let (run, _) = incremental(&files, "changelist.xml");
    assert_eq!(gaps(&run), 1, "{:?}", run.problems());
    assert_eq!(run.report().created, 0);
}

/// An entry without `change` (a real aggregator lists its archive files so) is refused
/// with its rule and counted, not stored as "created".
#[test]
fn a_change_list_entry_without_change_is_refused() {
    let cl = changelist(
        r#"from="2025-01-01T00:00:00Z""#,
        r#"<url><loc>http://example.com/c.zip</loc><rs:md datetime="2025-01-02T00:00:00Z" length="3"/></url>"#,
    );
    let (run, dest) = incremental(
        &[("changelist.xml", &cl), ("c.zip", b"zip")],
        "changelist.xml",
    );
    let report = run.report();
    assert_eq!((report.created, report.refused), (0, 1), "{report:?}");
    assert!(!report.complete);
    assert!(!dest.files.contains_key("c.zip"));
    let refusals = crate::counting::refusals(&run.events);
    assert!(refusals[0].contains("(change-mandatory)"), "{refusals:?}");
}
