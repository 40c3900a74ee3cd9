//! Every listed entry ends counted: stored, unchanged, refused (with its rule), failed,
//! conflict or kept; a run is complete only when none is left unaccounted, and an audit
//! compares every listed entry.

use resourcesync_client::{Event, Mode};

use crate::sim::{Destination, Drive, Response, Run, Source, sync};

/// A Source that serves exactly `files` (paths under its base, as requested), nothing
/// published by the testkit.
pub(crate) fn serving(files: &[(&str, &[u8])]) -> Source {
    let mut source = Source::new();
    for (path, body) in files {
        source
            .files
            .insert((*path).to_owned(), Response::ok(body.to_vec()));
    }
    source
}

pub(crate) const BASELINE: Mode = Mode::Baseline { prefer_dump: false };

/// A baseline of `source` into `dest`, started at its `resourcelist.xml`.
pub(crate) fn baseline(source: &Source, dest: &mut Destination) -> Run {
    sync(
        source,
        dest,
        BASELINE,
        "resourcelist.xml",
        |c| c,
        Drive::default(),
    )
}

/// A Resource List at 2025-01-01 of `urls` (each a whole `<url>` element).
pub(crate) fn resource_list(urls: &str) -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  {urls}
</urlset>"#
    )
    .into_bytes()
}

/// The refusals of entries among `events`, as their text.
pub(crate) fn refusals(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Problem(p) if p.kind.name() == "entry-refused" => Some(p.to_string()),
            _ => None,
        })
        .collect()
}

fn warnings(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Warning(w) => Some(w.message.clone()),
            _ => None,
        })
        .collect()
}

/// Python resync's publisher writes a file name with a space as it is: the entry is the
/// resource the Source meant, percent-encoded as the URL standard does, with a warning.
#[test]
fn a_loc_with_a_raw_space_is_read_as_the_source_meant_it() {
    let list = resource_list(
        r#"<url><loc>http://example.com/a b.txt</loc><rs:md length="5"/></url>
  <url><loc>http://example.com/c.txt</loc><rs:md length="3"/></url>"#,
    );
    let source = serving(&[
        ("resourcelist.xml", &list),
        ("a%20b.txt", b"hello"),
        ("c.txt", b"abc"),
    ]);
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    let report = run.report();
    assert_eq!((report.listed, report.created), (2, 2), "{report:?}");
    assert!(report.complete, "{:?}", run.problems());
    assert_eq!(
        dest.files.get("a b.txt").map(Vec::as_slice),
        Some(&b"hello"[..])
    );
    assert!(
        warnings(&run.events)
            .iter()
            .any(|w| w.contains("a%20b.txt")),
        "{:?}",
        warnings(&run.events)
    );
    // The next audit compares it too, and finds it in step.
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
        (report.listed, report.missing, report.refused),
        (2, 0, 0),
        "{report:?}"
    );
    assert_eq!(report.in_sync, Some(true), "{report:?}");
}

/// A `<loc>` that no reading makes a URI is refused with its rule, counted, and the run
/// is not complete; an audit of it is not in sync.
#[test]
fn an_entry_whose_loc_cannot_be_read_is_refused_and_counted() {
    let list = resource_list(
        r#"<url><loc>http://exa mple.com/x.txt</loc><rs:md length="5"/></url>
  <url><rs:md length="5"/></url>
  <url><loc>http://example.com/c.txt</loc><rs:md length="3"/></url>"#,
    );
    let source = serving(&[("resourcelist.xml", &list), ("c.txt", b"abc")]);
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    let report = run.report();
    assert_eq!((report.created, report.refused), (1, 2), "{report:?}");
    assert!(!report.complete);
    // Named by kind and text, so that this test runs against a client without them.
    let refusals = refusals(&run.events);
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals[0].contains("entry 1 ") && refusals[0].contains("(uri-syntax)"));
    assert!(refusals[1].contains("entry 2 ") && refusals[1].contains("(loc-mandatory)"));
    let run = sync(
        &source,
        &mut dest,
        Mode::Audit,
        "resourcelist.xml",
        |c| c,
        Drive::default(),
    );
    assert_eq!(run.report().refused, 2, "{:?}", run.report());
    assert_eq!(run.report().in_sync, Some(false));
}

/// A `<loc>` with non-ASCII characters (an IRI) is fetched percent-encoded (UTF-8, as the
/// URL standard does) and stored under its own name.
#[test]
fn a_loc_with_non_ascii_characters_is_fetched_percent_encoded() {
    let list =
        resource_list(r#"<url><loc>http://example.com/café.txt</loc><rs:md length="5"/></url>"#);
    let source = serving(&[("resourcelist.xml", &list), ("caf%C3%A9.txt", b"hello")]);
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(run.report().created, 1);
    assert!(
        run.requests.iter().any(|r| r.ends_with("caf%C3%A9.txt")),
        "{:?}",
        run.requests
    );
}

/// One warning event per entry stays in the stream; the summary a printer prints has one
/// line per document and rule, with the count and the first entries.
#[test]
fn warnings_are_summarized_per_document_and_rule() {
    let urls: String = (0..112)
        .map(|i| format!("<url><loc>http://example.com/f {i}.txt</loc></url>\n"))
        .collect();
    let list = resource_list(&urls);
    let source = serving(&[("resourcelist.xml", &list)]);
    let mut dest = Destination::default();
    let run = sync(
        &source,
        &mut dest,
        Mode::Audit,
        "resourcelist.xml",
        |c| c,
        Drive::default(),
    );
    let mut summary = resourcesync_client::WarningSummary::new();
    let mut events = 0;
    for event in &run.events {
        if let Event::Warning(w) = event {
            events += 1;
            summary.add(w);
        }
    }
    assert_eq!(events, 100, "the events as the bound lets them through");
    // The document's own (no up link) and the entries' (99 past the bound).
    assert_eq!(summary.len(), 2, "{summary}");
    let text = summary.to_string();
    let line = text.lines().nth(1).unwrap_or_default();
    assert!(
        line.starts_with("http://example.com/resourcelist.xml: uri-syntax: "),
        "{text}"
    );
    assert!(line.ends_with("(99 entries: 1, 2, 3, ...)"), "{text}");
}

/// A Resource List Index whose child the policy refuses (moved to a host the sync may
/// not ask): that part of the listing is not read, so a baseline with deletions deletes
/// nothing, not every resource the unread list names (it deleted `b.txt`).
#[test]
fn a_baseline_deletes_nothing_when_the_policy_refuses_a_part_of_its_listing() {
    let index = |b_list: &str| {
        format!(
            r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <sitemap><loc>http://example.com/list-a.xml</loc></sitemap>
  <sitemap><loc>{b_list}</loc></sitemap>
</sitemapindex>"#
        )
        .into_bytes()
    };
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let list_b = resource_list(r#"<url><loc>http://example.com/b.txt</loc></url>"#);
    let before = index("http://example.com/list-b.xml");
    let mut source = serving(&[
        ("resourcelist.xml", &before),
        ("list-a.xml", &list_a),
        ("list-b.xml", &list_b),
        ("a.txt", b"a"),
        ("b.txt", b"b"),
    ]);
    let mut dest = Destination::default();
    let run = baseline(&source, &mut dest);
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(dest.files.contains_key("b.txt"));
    let after = index("http://elsewhere.example/list-b.xml");
    source
        .files
        .insert("resourcelist.xml".into(), Response::ok(after));
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        "resourcelist.xml",
        |c| c.with_delete(10),
        Drive::default(),
    );
    assert!(!run.report().complete);
    assert_eq!(run.report().deleted, 0, "{:?}", run.problems());
    assert!(dest.files.contains_key("b.txt"), "{:?}", run.problems());
    assert!(
        warnings(&run.events)
            .iter()
            .any(|w| w.contains("nothing is deleted")),
        "{:?}",
        warnings(&run.events)
    );
}

/// A Source Description one of whose Capability Lists the policy refuses (moved to a
/// host the sync may not ask): that set is not read, and a baseline with deletions of the
/// others deletes nothing; it deleted what the unread set holds (`b.txt`), the sweep
/// going over every held resource.
#[test]
fn a_baseline_deletes_nothing_when_the_policy_refuses_a_capability_list() {
    let description = |b_list: &str| {
        format!(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="description"/>
  <url><loc>http://example.com/cl-a.xml</loc><rs:md capability="capabilitylist"/></url>
  <url><loc>{b_list}</loc><rs:md capability="capabilitylist"/></url>
</urlset>"#
        )
        .into_bytes()
    };
    let capabilities = |list: &str| {
        format!(
            r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/.well-known/resourcesync"/>
  <rs:md capability="capabilitylist"/>
  <url><loc>http://example.com/{list}</loc><rs:md capability="resourcelist"/></url>
</urlset>"#
        )
        .into_bytes()
    };
    let (cl_a, cl_b) = (capabilities("list-a.xml"), capabilities("list-b.xml"));
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let list_b = resource_list(r#"<url><loc>http://example.com/b.txt</loc></url>"#);
    let before = description("http://example.com/cl-b.xml");
    let mut source = serving(&[
        (".well-known/resourcesync", &before),
        ("cl-a.xml", &cl_a),
        ("cl-b.xml", &cl_b),
        ("list-a.xml", &list_a),
        ("list-b.xml", &list_b),
        ("a.txt", b"a"),
        ("b.txt", b"b"),
    ]);
    let mut dest = Destination::default();
    let run = sync(&source, &mut dest, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert!(dest.files.contains_key("b.txt"));
    let after = description("http://elsewhere.example/cl-b.xml");
    source
        .files
        .insert(".well-known/resourcesync".into(), Response::ok(after));
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        "",
        |c| c.with_delete(10),
        Drive::default(),
    );
    assert!(!run.report().complete);
    assert_eq!(run.report().deleted, 0, "{:?}", run.problems());
    assert!(dest.files.contains_key("b.txt"), "{:?}", run.problems());
    assert!(
        warnings(&run.events)
            .iter()
            .any(|w| w.contains("the Source Description was not read whole")),
        "{:?}",
        warnings(&run.events)
    );
}
