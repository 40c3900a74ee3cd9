//! Every listed entry ends counted: stored, unchanged, refused (with its rule), failed,
//! conflict or kept; a run is complete only when none is left unaccounted, and an audit
//! compares every listed entry.

use resourcesync_client::{Event, Mode};

use crate::sim::{Destination, Drive, Fault, Response, Run, Source, sync};

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

/// `file` of `source` becomes `body`; a baseline with deletions started at `start`,
/// driven by `drive`, then deletes nothing: `kept` stays, a warning says why (`why`), and
/// the run is not complete.
fn nothing_deleted_after(
    source: &mut Source,
    dest: &mut Destination,
    start: &str,
    (file, body): (&str, Vec<u8>),
    drive: Drive,
    (kept, why): (&str, &str),
) -> Run {
    assert!(dest.files.contains_key(kept));
    source.files.insert(file.into(), Response::ok(body));
    let run = sync(source, dest, BASELINE, start, |c| c.with_delete(10), drive);
    assert_eq!(run.report().deleted, 0, "{:?}", run.problems());
    assert!(dest.files.contains_key(kept), "{:?}", run.problems());
    // The deletions it was asked for were not done: not complete.
    assert!(!run.report().complete, "{:?}", run.problems());
    let warned = warnings(&run.events);
    assert!(
        warned.iter().any(|w| w.contains(why)),
        "{warned:?} {:?}",
        run.problems()
    );
    run
}

/// A Resource List Index of `list-a.xml` and `b_list` (which lists `b.txt`).
fn index_of_two(b_list: &str) -> Vec<u8> {
    format!(
        r#"<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <sitemap><loc>http://example.com/list-a.xml</loc></sitemap>
  <sitemap><loc>{b_list}</loc></sitemap>
</sitemapindex>"#
    )
    .into_bytes()
}

/// A Resource List part of `a.txt` whose `index` link is `index`.
fn part(index: &str) -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="index" href="{index}"/>
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <url><loc>http://example.com/a.txt</loc></url>
</urlset>"#
    )
    .into_bytes()
}

/// A Source of `a.txt` in `list_a` and `b.txt` in `list-b.xml`, with `index` at
/// `resourcelist.xml`; and a Destination that holds both, from a baseline started at
/// `start`.
fn two_parts(index: &[u8], list_a: &[u8], start: &str) -> (Source, Destination) {
    two_lists(("resourcelist.xml", index), list_a, start)
}

/// [`two_parts`], with `file` (an index, a Capability List) that names the lists.
fn two_lists((file, names): (&str, &[u8]), list_a: &[u8], start: &str) -> (Source, Destination) {
    let list_b = resource_list(r#"<url><loc>http://example.com/b.txt</loc></url>"#);
    let source = serving(&[
        (file, names),
        ("list-a.xml", list_a),
        ("list-b.xml", &list_b),
        ("a.txt", b"a"),
        ("b.txt", b"b"),
    ]);
    let mut dest = Destination::default();
    let run = sync(&source, &mut dest, BASELINE, start, |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    (source, dest)
}

/// A Resource List Index whose child the policy refuses (moved to a host the sync may
/// not ask): that part of the listing is not read, so a baseline with deletions deletes
/// nothing, not every resource the unread list names (it deleted `b.txt`).
#[test]
fn a_baseline_deletes_nothing_when_the_policy_refuses_a_part_of_its_listing() {
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let before = index_of_two("http://example.com/list-b.xml");
    let (mut source, mut dest) = two_parts(&before, &list_a, "resourcelist.xml");
    let after = index_of_two("http://elsewhere.example/list-b.xml");
    let run = nothing_deleted_after(
        &mut source,
        &mut dest,
        "resourcelist.xml",
        ("resourcelist.xml", after),
        Drive::default(),
        ("b.txt", "nothing is deleted"),
    );
    assert!(!run.report().complete);
}

/// A baseline started at one part of a Resource List Index reads the whole index, where
/// the part links to it; when the policy refuses that link, the part is read, but not as
/// the whole listing: a baseline with deletions deleted what the other parts list.
#[test]
fn a_baseline_started_at_a_part_deletes_nothing_when_its_index_is_refused() {
    let index = index_of_two("http://example.com/list-b.xml");
    let list_a = part("http://example.com/resourcelist.xml");
    let (mut source, mut dest) = two_parts(&index, &list_a, "list-a.xml");
    let refused = part("http://elsewhere.example/resourcelist.xml");
    let run = nothing_deleted_after(
        &mut source,
        &mut dest,
        "list-a.xml",
        ("list-a.xml", refused),
        Drive::default(),
        ("b.txt", "nothing is deleted"),
    );
    assert!(!run.report().complete);
}

/// A Source Description one of whose Capability Lists the policy refuses (moved to a
/// host the sync may not ask): that set is not read, and a baseline with deletions of the
/// others deletes nothing; it deleted what the unread set holds (`b.txt`), the sweep
/// going over every held resource.
#[test]
fn a_baseline_deletes_nothing_when_the_policy_refuses_a_capability_list() {
    let (mut source, mut dest) = two_sets();
    let after = description("http://elsewhere.example/cl-b.xml");
    let run = nothing_deleted_after(
        &mut source,
        &mut dest,
        "",
        (".well-known/resourcesync", after),
        Drive::default(),
        ("b.txt", "the Source Description was not read whole"),
    );
    assert!(!run.report().complete);
}

/// A Source Description that fails part-way (its body cut after its first Capability
/// List, at every try): the set it names past the cut is not read, and a baseline with
/// deletions of the other deletes nothing.
#[test]
fn a_baseline_deletes_nothing_when_the_source_description_fails_part_way() {
    let (mut source, mut dest) = two_sets();
    let whole = description("http://example.com/cl-b.xml");
    let text = String::from_utf8(whole.clone()).unwrap();
    let cut = text.find("</url>").unwrap() + "</url>".len();
    let drive = Drive::faulty(move |uri, _| {
        uri.ends_with(".well-known/resourcesync")
            .then_some(Fault::Truncate(cut))
    });
    let run = nothing_deleted_after(
        &mut source,
        &mut dest,
        "",
        (".well-known/resourcesync", whole),
        drive,
        ("b.txt", "the Source Description was not read whole"),
    );
    assert!(!run.report().complete);
}

/// A Source Description of `cl-a.xml` and `b_list`.
fn description(b_list: &str) -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="description"/>
  <url><loc>http://example.com/cl-a.xml</loc><rs:md capability="capabilitylist"/></url>
  <url><loc>{b_list}</loc><rs:md capability="capabilitylist"/></url>
</urlset>"#
    )
    .into_bytes()
}

/// A Source of two sets (`a.txt` in `cl-a.xml`'s, `b.txt` in `cl-b.xml`'s), found by
/// its Source Description; and a Destination that holds both, from a baseline.
fn two_sets() -> (Source, Destination) {
    let (cl_a, cl_b) = (
        capabilities(&["list-a.xml"], ""),
        capabilities(&["list-b.xml"], ""),
    );
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let list_b = resource_list(r#"<url><loc>http://example.com/b.txt</loc></url>"#);
    let before = description("http://example.com/cl-b.xml");
    let source = serving(&[
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
    (source, dest)
}

/// A Capability List naming `lists` as its Resource Lists, and `more` (entries) beside.
fn capabilities(lists: &[&str], more: &str) -> Vec<u8> {
    let lists: String = lists
        .iter()
        .map(|l| {
            format!(
                r#"<url><loc>http://example.com/{l}</loc><rs:md capability="resourcelist"/></url>"#
            )
        })
        .collect();
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/.well-known/resourcesync"/>
  <rs:md capability="capabilitylist"/>
  {lists}{more}
</urlset>"#
    )
    .into_bytes()
}

/// A Capability List that names two Resource Lists, where the standard groups them in an
/// index: both are read, as parts of one listing, with a warning (the first was not
/// read, and a baseline with deletions deleted what it lists).
#[test]
fn a_capability_list_naming_two_resource_lists_is_read_as_both() {
    let cl = capabilities(&["list-a.xml", "list-b.xml"], "");
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let list_b = resource_list(r#"<url><loc>http://example.com/b.txt</loc></url>"#);
    let source = serving(&[
        ("capabilitylist.xml", &cl),
        ("list-a.xml", &list_a),
        ("list-b.xml", &list_b),
        ("a.txt", b"a"),
        ("b.txt", b"b"),
    ]);
    let mut dest = Destination::default();
    for delete in [false, true] {
        let run = sync(
            &source,
            &mut dest,
            BASELINE,
            "capabilitylist.xml",
            |c| if delete { c.with_delete(10) } else { c },
            Drive::default(),
        );
        assert!(run.report().complete, "{:?}", run.problems());
        assert_eq!(run.report().deleted, 0);
        assert_eq!(dest.files.len(), 2, "{:?}", dest.files.keys());
        let warned = warnings(&run.events);
        assert!(
            warned
                .iter()
                .any(|w| w.contains("a second resourcelist in one Capability List")),
            "{warned:?}"
        );
    }
}

/// A Change List of the set in `capabilities`, from `from`, with no change.
fn empty_change_list(from: &str) -> Vec<u8> {
    format!(
        r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://example.com/capabilitylist.xml"/>
  <rs:md capability="changelist" from="{from}"/>
</urlset>"#
    )
    .into_bytes()
}

/// A Source whose Capability List names `list.xml` (of `a.txt` and `x.txt`) and
/// `changes` (entries, each served with `reaching`: no change, from the listing's `at`);
/// and a Destination that holds both resources, from a baseline, with that baseline's run.
fn a_and_x(changes: &[&str]) -> (Source, Destination, Run) {
    let named: String = changes
        .iter()
        .map(|c| {
            format!(
                r#"<url><loc>http://example.com/{c}</loc><rs:md capability="changelist"/></url>"#
            )
        })
        .collect();
    let cl = capabilities(&["list.xml"], &named);
    let both = resource_list(
        r#"<url><loc>http://example.com/a.txt</loc></url>
  <url><loc>http://example.com/x.txt</loc></url>"#,
    );
    let reaching = empty_change_list("2025-01-01T00:00:00Z");
    let mut files: Vec<(&str, &[u8])> = vec![
        ("capabilitylist.xml", &cl),
        ("list.xml", &both),
        ("a.txt", b"a"),
        ("x.txt", b"x"),
    ];
    files.extend(changes.iter().map(|c| (*c, &reaching[..])));
    let source = serving(&files);
    let mut dest = Destination::default();
    let run = sync(&source, &mut dest, BASELINE, START, |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    (source, dest, run)
}

/// Where [`a_and_x`]'s runs start.
const START: &str = "capabilitylist.xml";

/// What a baseline with deletions says when it cannot learn what was created since its
/// listing.
const UNRECONCILED: &str = "the Change Lists since the listing were not read to its time";

/// `a.txt` alone, listed at `at`.
fn only_a(at: &str) -> Vec<u8> {
    String::from_utf8(resource_list(
        r#"<url><loc>http://example.com/a.txt</loc></url>"#,
    ))
    .unwrap()
    .replace("2025-01-01T00:00:00Z", at)
    .into_bytes()
}

/// The Change Lists a baseline reads to learn what was created since its listing's `at`
/// start after it (a gap), and the listing is older than the set's checkpoint: what it
/// does not list may have been created since (held from an incremental run), so a
/// baseline with deletions deletes nothing; it deleted it, said only as a warning. With a
/// listing newer than the checkpoint, all that is held was stored before its `at`, and
/// the sweep stands on it (a Source whose Change Lists state no `from`, as Python's
/// resync-simulator writes them, is a gap every time: such a baseline deleted nothing, ever).
#[test]
fn a_baseline_whose_change_lists_do_not_reach_its_listing_deletes_nothing() {
    let (mut source, mut dest, _) = a_and_x(&["changelist.xml"]);
    let lagging = only_a("2024-06-01T00:00:00Z");
    source
        .files
        .insert("list.xml".into(), Response::ok(lagging));
    let gap = empty_change_list("2025-06-01T00:00:00Z");
    nothing_deleted_after(
        &mut source,
        &mut dest,
        START,
        ("changelist.xml", gap),
        Drive::default(),
        ("x.txt", UNRECONCILED),
    );
    let newer = only_a("2025-03-01T00:00:00Z");
    source.files.insert("list.xml".into(), Response::ok(newer));
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        START,
        |c| c.with_delete(10),
        Drive::default(),
    );
    assert_eq!(run.report().deleted, 1, "{:?}", run.problems());
    assert!(!dest.files.contains_key("x.txt"));
}

/// A Capability List that names two Change Lists, where the standard groups them in an
/// index (which states their order): an incremental run reads neither and says why, and
/// a baseline with deletions from a listing older than the checkpoint, which cannot learn
/// from them what was created since, deletes nothing.
#[test]
fn a_capability_list_naming_two_change_lists_is_said() {
    let (mut source, mut dest, run) = a_and_x(&["cl-1.xml", "cl-2.xml"]);
    let warned = warnings(&run.events);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("a second changelist in one Capability List")),
        "{warned:?}"
    );
    let lagging = only_a("2024-06-01T00:00:00Z");
    nothing_deleted_after(
        &mut source,
        &mut dest,
        START,
        ("list.xml", lagging),
        Drive::default(),
        ("x.txt", UNRECONCILED),
    );
    let run = incomplete_incremental(&source, &mut dest);
    assert!(
        run.problems()
            .iter()
            .any(|p| p.contains("names more than one, where only an index")),
        "{:?}",
        run.problems()
    );
}

/// A part of a Resource List Index that answers with its index (a redirect to it): that
/// body names the parts again, a loop, not the part read; a baseline with deletions
/// deletes nothing (what the part lists is not known).
#[test]
fn a_part_that_answers_with_its_index_is_a_loop() {
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let index = index_of_two("http://example.com/list-b.xml");
    // At once; once it failed a first time (a retry, which names what it named before
    // without a loop); or failing once where it was redirected (the index's second ask),
    // read again there.
    for (first, there) in [(0, false), (1, false), (0, true)] {
        let (mut source, mut dest) = two_parts(&index, &list_a, "resourcelist.xml");
        let drive = Drive::faulty(move |uri, attempt| {
            if there && uri.ends_with("resourcelist.xml") {
                return (attempt == 1).then_some(Fault::Status(503));
            }
            let to_index = Fault::Redirect("http://example.com/resourcelist.xml".into());
            let fault = if attempt < first {
                Fault::Status(503)
            } else {
                to_index
            };
            uri.ends_with("list-b.xml").then_some(fault)
        });
        let run = nothing_deleted_after(
            &mut source,
            &mut dest,
            "resourcelist.xml",
            ("resourcelist.xml", index.clone()),
            drive,
            ("b.txt", "nothing is deleted"),
        );
        assert!(!run.report().complete);
        let problems = run.problems();
        assert!(problems.iter().any(|p| p.contains("loop")), "{problems:?}");
    }
}

/// Two parts of one Resource List Index found by discovery (a `Sitemap:` line each in
/// robots.txt), each with its `index` link: each leads to the index, read once, and the
/// run is complete (the second was refused as a loop: one link a run was followed).
#[test]
fn two_parts_found_by_discovery_lead_to_their_index_once() {
    let index = index_of_two("http://example.com/list-b.xml");
    let list_a = part("http://example.com/resourcelist.xml");
    let list_b = String::from_utf8(list_a.clone())
        .unwrap()
        .replace("a.txt", "b.txt")
        .into_bytes();
    let robots =
        b"Sitemap: http://example.com/list-a.xml\nSitemap: http://example.com/list-b.xml\n";
    let source = serving(&[
        ("robots.txt", robots),
        ("resourcelist.xml", &index),
        ("list-a.xml", &list_a),
        ("list-b.xml", &list_b),
        ("a.txt", b"a"),
        ("b.txt", b"b"),
    ]);
    let mut dest = Destination::default();
    let run = sync(&source, &mut dest, BASELINE, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    assert_eq!(dest.files.len(), 2, "{:?}", dest.files.keys());
}

/// A Resource List part whose `index` link does not lead to the whole: a link to itself
/// (read round for ever, unbounded), or to a list that is no index (read as the whole
/// listing). The part is read, not as the whole, and said.
#[test]
fn a_part_whose_index_link_leads_nowhere_whole_is_said_and_read_alone() {
    let list_b = resource_list(r#"<url><loc>http://example.com/b.txt</loc></url>"#);
    for (index, said) in [
        ("list-a.xml", "loop"),
        (
            "list-b.xml",
            "a list's index link names a document that is none",
        ),
    ] {
        let list_a = part(&format!("http://example.com/{index}"));
        let source = serving(&[
            ("list-a.xml", &list_a),
            ("list-b.xml", &list_b),
            ("a.txt", b"a"),
            ("b.txt", b"b"),
        ]);
        let mut dest = Destination::default();
        let start = "list-a.xml";
        let run = sync(&source, &mut dest, BASELINE, start, |c| c, Drive::default());
        assert!(!run.report().complete, "{index}");
        let problems = run.problems();
        assert!(problems.iter().any(|p| p.contains(said)), "{problems:?}");
        assert!(run.requests.len() <= 4, "{:?}", run.requests);
    }
}

/// A Source Description entry the client does not read as a Capability List (refused
/// for a `length` it cannot read, or not stated a Capability List): that set is not
/// read, and a baseline with deletions of the other deletes nothing (it deleted `b.txt`).
#[test]
fn a_source_description_entry_not_read_makes_a_baseline_delete_nothing() {
    let named = r#"<loc>http://example.com/cl-b.xml</loc><rs:md capability="capabilitylist"/>"#;
    for unread in [
        r#"<loc>http://example.com/cl-b.xml</loc><rs:md capability="capabilitylist" length="x"/>"#,
        r#"<loc>http://example.com/cl-b.xml</loc><rs:md capability="resourcelist"/>"#,
    ] {
        let (mut source, mut dest) = two_sets();
        let whole = String::from_utf8(description("http://example.com/cl-b.xml")).unwrap();
        let body = whole.replace(named, unread).into_bytes();
        nothing_deleted_after(
            &mut source,
            &mut dest,
            "",
            (".well-known/resourcesync", body),
            Drive::default(),
            ("b.txt", "the Source Description was not read whole"),
        );
    }
}

/// A Capability List entry refused (a `length` it cannot read) on the second of two
/// Resource Lists: that part is not read, so a baseline with deletions deletes nothing.
#[test]
fn a_capability_list_entry_refused_makes_a_baseline_delete_nothing() {
    let cl = capabilities(&["list-a.xml", "list-b.xml"], "");
    let list_a = resource_list(r#"<url><loc>http://example.com/a.txt</loc></url>"#);
    let (mut source, mut dest) = two_lists(("capabilitylist.xml", &cl), &list_a, START);
    let refused = String::from_utf8(cl)
        .unwrap()
        .replace(
            r#"list-b.xml</loc><rs:md capability="resourcelist"/>"#,
            r#"list-b.xml</loc><rs:md capability="resourcelist" length="x"/>"#,
        )
        .into_bytes();
    nothing_deleted_after(
        &mut source,
        &mut dest,
        START,
        ("capabilitylist.xml", refused),
        Drive::default(),
        ("b.txt", "the listing was not read whole"),
    );
}

/// A Change List Archive the policy refuses (on a host the sync may not ask), where the
/// open Change List starts at the checkpoint's second: the closed lists may hold changes
/// at that second, so it is a gap; the run planned on without them.
#[test]
fn a_refused_change_list_archive_is_a_gap() {
    let (mut source, mut dest, _) = a_and_x(&["changelist.xml"]);
    let archived = capabilities(
        &["list.xml"],
        r#"<url><loc>http://example.com/changelist.xml</loc><rs:md capability="changelist"/></url>
  <url><loc>http://elsewhere.example/archive.xml</loc><rs:md capability="changelist-archive"/></url>"#,
    );
    source.files.insert(START.into(), Response::ok(archived));
    let run = incomplete_incremental(&source, &mut dest);
    let problems = run.problems();
    assert!(
        run.events.iter().any(|e| matches!(e, Event::Problem(p)
            if matches!(p.kind, resourcesync_client::ProblemKind::Gap { .. }))),
        "{problems:?}"
    );
}

/// An incremental run of `source` into `dest` from [`START`], which is not complete.
fn incomplete_incremental(source: &Source, dest: &mut Destination) -> Run {
    let run = sync(
        source,
        dest,
        Mode::Incremental,
        START,
        |c| c,
        Drive::default(),
    );
    assert!(!run.report().complete);
    run
}

/// A baseline whose Change Lists do not reach back to its listing (a gap) while a
/// resource matched nothing listed (fetched once more after them): the Change Lists are
/// given up once, not read again when that fetch settles (read again, the Change List
/// was "reached twice", a loop that failed the set).
#[test]
fn a_gap_with_a_resource_to_fetch_once_more_is_no_loop() {
    let (mut source, mut dest, _) = a_and_x(&["changelist.xml"]);
    let wrong = resource_list(
        r#"<url><loc>http://example.com/a.txt</loc><rs:md length="9"/></url>
  <url><loc>http://example.com/x.txt</loc></url>"#,
    );
    source.files.insert("list.xml".into(), Response::ok(wrong));
    let gap = empty_change_list("2025-06-01T00:00:00Z");
    source
        .files
        .insert("changelist.xml".into(), Response::ok(gap));
    dest.files.clear();
    let run = sync(&source, &mut dest, BASELINE, START, |c| c, Drive::default());
    let problems = run.problems();
    assert!(!problems.iter().any(|p| p.contains("loop")), "{problems:?}");
    let warned = warnings(&run.events);
    assert!(
        warned.iter().any(|w| w.contains("do not reach back")),
        "{warned:?}"
    );
}

/// An incremental run started at a Resource List whose `up` link the policy refuses:
/// said as a list whose Capability List is not read, not as one that names none.
#[test]
fn an_incremental_run_from_a_list_whose_capability_list_is_refused_says_so() {
    let list = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
    xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="up" href="http://elsewhere.example/capabilitylist.xml"/>
  <rs:md capability="resourcelist" at="2025-01-01T00:00:00Z"/>
  <url><loc>http://example.com/a.txt</loc></url>
</urlset>"#;
    let source = serving(&[("resourcelist.xml", list.as_bytes()), ("a.txt", b"a")]);
    let mut dest = Destination::default();
    let start = "resourcelist.xml";
    let run = sync(
        &source,
        &mut dest,
        Mode::Incremental,
        start,
        |c| c,
        Drive::default(),
    );
    let problems = run.problems();
    assert!(
        problems
            .iter()
            .any(|p| p.contains("a list whose Capability List is not read")),
        "{problems:?}"
    );
}

/// A baseline's deletion that fails (the file system refused) belongs to the run, not to
/// one set: no set's checkpoint moves past it. (It was charged to the first set, and the
/// other set, whose listing no longer lists `b.txt`, saved its checkpoint: no later
/// incremental run would delete `b.txt`.)
#[test]
fn a_baseline_deletion_that_fails_moves_no_checkpoint() {
    let (mut source, mut dest) = two_sets();
    let key = "http://example.com/cl-b.xml";
    let before = dest.state.checkpoint(key).expect("a checkpoint").datetime;
    let later = String::from_utf8(resource_list(""))
        .unwrap()
        .replace("2025-01-01", "2025-02-01")
        .into_bytes();
    source
        .files
        .insert("list-b.xml".into(), Response::ok(later));
    let drive = Drive {
        fail_delete: Some(Box::new(|path: &str| path == "b.txt")),
        ..Drive::default()
    };
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        "",
        |c| c.with_delete(10),
        drive,
    );
    assert!(!run.report().complete);
    assert!(dest.files.contains_key("b.txt"));
    let after = dest.state.checkpoint(key).expect("a checkpoint").datetime;
    assert_eq!(after, before, "{:?}", run.problems());
}

/// A baseline's resource that fails as listed, which its Change Lists since then say was
/// deleted: the state keeps nothing to fetch again for it (it kept what was listed, and
/// each later run fetched it, found it gone, and was not complete).
#[test]
fn a_failed_resource_the_change_lists_deleted_is_not_left_to_fetch_again() {
    let (mut source, mut dest, _) = a_and_x(&["changelist.xml"]);
    let listed = resource_list(
        r#"<url><loc>http://example.com/a.txt</loc></url>
  <url><loc>http://example.com/x.txt</loc><rs:md length="5"/></url>"#,
    );
    source.files.insert("list.xml".into(), Response::ok(listed));
    let deleted = String::from_utf8(empty_change_list("2025-01-01T00:00:00Z"))
        .unwrap()
        .replace(
            "</urlset>",
            r#"<url><loc>http://example.com/x.txt</loc><rs:md change="deleted" datetime="2025-03-01T00:00:00Z"/></url>
</urlset>"#,
        )
        .into_bytes();
    source
        .files
        .insert("changelist.xml".into(), Response::ok(deleted));
    let drive = Drive::faulty(|uri, _| uri.ends_with("x.txt").then_some(Fault::Status(500)));
    let run = sync(
        &source,
        &mut dest,
        BASELINE,
        START,
        |c| c.with_delete(10),
        drive,
    );
    let left = dest.state.refetch.values().flatten();
    let left: Vec<String> = left.map(|r| r.uri.to_string()).collect();
    assert!(
        left.iter().all(|u| !u.ends_with("x.txt")),
        "{left:?} {:?}",
        run.problems()
    );
}
