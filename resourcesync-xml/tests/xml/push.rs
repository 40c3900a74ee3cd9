//! The push reader (`PushReader`) reads every document as the slice reader does, however
//! its bytes are split into chunks: the same head, entries and findings, or the same
//! error at the same place; and it holds no more of the document than the limits allow.

use std::io::Write;

use proptest::prelude::*;
use resourcesync_xml::{ErrorKind, Limits, Next, PushReader, Reader};

use crate::fuzz_corpus::outcome::{Outcome, limits, outcome};

#[path = "../../../fuzz/common/push.rs"]
#[allow(unreachable_pub)]
mod common;

/// What the slice reader makes of `data`; for a plain document over the byte limit, what
/// a `BufRead` reader makes of it (the push reader's documented deviation: it cannot know
/// the length before it has read that far).
pub(crate) fn expected(data: &[u8], limits: Limits) -> Outcome {
    let text = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    if !data.starts_with(&[0x1f, 0x8b]) && text.len() as u64 > limits.max_bytes {
        return outcome(Reader::with_limits(data, limits).and_then(Reader::read_to_document));
    }
    outcome(Reader::from_slice_with_limits(data, limits).read_to_document())
}

/// Reads `data` with a push reader fed the chunks that `cuts` make (see
/// `fuzz/common/push.rs`), comparably; and the most bytes it held.
pub(crate) fn push_read(data: &[u8], limits: Limits, cuts: &[usize]) -> (Outcome, usize) {
    let (result, held) = common::push_read(data, limits, cuts);
    (outcome(result), held)
}

/// Offsets every `n` bytes.
fn every(data: &[u8], n: usize) -> Vec<usize> {
    (n..data.len()).step_by(n).collect()
}

/// Asserts that the push reader reads `data` as the slice reader does, fed whole, by 1
/// and by 7 bytes, with empty feeds between, and split at a few points from its bytes.
pub(crate) fn assert_push_agrees(name: &str, data: &[u8], limits: Limits) {
    let expected = expected(data, limits);
    let mut splits: Vec<(String, Vec<usize>)> = vec![
        ("whole".into(), vec![]),
        ("by 1 byte".into(), every(data, 1)),
        ("by 7 bytes".into(), every(data, 7)),
        (
            "with empty feeds".into(),
            every(data, 3).into_iter().flat_map(|c| [c, c]).collect(),
        ),
    ];
    let mut seed = data
        .iter()
        .fold(17usize, |h, &b| h.wrapping_mul(31) ^ b as usize);
    let mut random = Vec::new();
    for _ in 0..5 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        random.push((seed >> 33) % (data.len() + 1));
    }
    random.sort_unstable();
    splits.push((format!("at {random:?}"), random));
    let cuts = common::cuts_from(data);
    splits.push((format!("as the fuzz target does, at {cuts:?}"), cuts));
    for (how, cuts) in splits {
        let (got, _) = push_read(data, limits, &cuts);
        assert!(
            got == expected,
            "{name}, fed {how}: the push reader read\n  {}\nbut the slice reader\n  {}",
            describe(&got),
            describe(&expected)
        );
    }
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Ok((doc, findings)) => format!(
            "{} entries, findings {:?}",
            doc.entries.len(),
            findings
                .iter()
                .map(|f| (f.rule.id(), f.entry, f.position))
                .collect::<Vec<_>>()
        ),
        Err((kind, position)) => format!("error at {position:?}: {kind}"),
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

const OPEN: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="http://example.com/dataset1/capabilitylist.xml"/>
<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
"#;

/// A Resource List of `n` entries.
fn resource_list(n: usize) -> Vec<u8> {
    let mut xml = OPEN.to_owned();
    for i in 0..n {
        xml.push_str(&format!(
            "<url><loc>http://example.com/res{i}</loc><lastmod>2013-01-02T13:00:00Z</lastmod>\
             <rs:md hash=\"md5:1584abdf8ebdc9802ac0c6a7402c03b6\" length=\"{i}\" type=\"text/html\"/></url>\n"
        ));
    }
    xml.push_str("</urlset>\n");
    xml.into_bytes()
}

#[test]
fn spec_examples_read_alike_in_any_chunks() {
    let dir = format!("{}/../spec/examples", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "xml"))
        .collect();
    files.sort();
    assert!(files.len() > 30, "the examples are missing");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let name = path.display().to_string();
        assert!(expected(&data, Limits::default()).is_ok(), "{name}");
        assert_push_agrees(&name, &data, Limits::default());
        assert_push_agrees(&format!("{name}, gzipped"), &gzip(&data), Limits::default());
    }
}

#[test]
fn fuzz_corpora_read_alike_in_any_chunks() {
    let mut files = crate::fuzz_corpus::corpus("reader");
    files.extend(crate::fuzz_corpus::corpus("slice"));
    files.sort_by(|a, b| a.1.cmp(&b.1));
    files.dedup_by(|a, b| a.1 == b.1);
    for (name, data) in files {
        assert_push_agrees(&name, &data, limits());
    }
}

#[test]
fn hostile_documents_read_alike_in_any_chunks() {
    for (name, data, limits, _) in crate::hostile::all_rows() {
        assert_push_agrees(name, &data, limits);
        assert_push_agrees(name, &gzip(&data), limits);
    }
}

/// 100,000 entries (about 17 MB) fed 4 KiB at a time: every entry comes out, and the
/// reader never holds more than a chunk and an entry or so; gzipped, more than a window
/// of decompressed text and a piece of compressed bytes.
#[test]
fn a_large_resource_list_streams_in_bounded_memory() {
    let data = resource_list(100_000);
    let limits = Limits::unbounded_size();
    let (got, held) = push_read(&data, limits, &every(&data, 4096));
    let (doc, findings) = got.unwrap();
    assert_eq!(doc.entries.len(), 100_000);
    assert_eq!(
        doc.entries[99_999].loc.as_str(),
        "http://example.com/res99999"
    );
    // Unbounded size: the Sitemap protocol's limit is a finding.
    assert_eq!(crate::rules_of(&findings), [("max-entries", Some(50_001))]);
    assert!(held <= 4096 + 512, "held {held} bytes");

    let zipped = gzip(&data);
    let (got, held) = push_read(&zipped, limits, &every(&zipped, 4096));
    assert_eq!(got.unwrap().0.entries.len(), 100_000);
    assert!(held <= 64 * 1024 + 16 * 1024, "held {held} bytes");
}

#[test]
fn an_over_long_entry_fails_as_in_the_pull_reader_without_growing() {
    let mut xml = OPEN.to_owned();
    xml.push_str(
        "<url><loc>http://example.com/a</loc></url>\n<url><loc>http://example.com/b</loc>",
    );
    for _ in 0..1000 {
        xml.push_str("<rs:ln rel=\"alternate\" href=\"http://example.com/b.html\"/>\n");
    }
    xml.push_str("</url></urlset>");
    let data = xml.into_bytes();
    let limits = Limits::default()
        .with_max_entry_len(16 * 1024)
        .with_max_event_len(1024);
    let slice = expected(&data, limits);
    let (kind, position) = slice.clone().unwrap_err();
    assert!(kind.contains("an entry longer than 16384 bytes"), "{kind}");
    assert_eq!(position.entry, Some(2));
    let (got, held) = push_read(&data, limits, &every(&data, 1000));
    assert_eq!(got, slice);
    assert!(held <= 16 * 1024 + 1024 + 2000, "held {held} bytes");
    // One long comment between entries fails at the event limit, held no longer.
    let comment = format!("{OPEN}<!--{}--></urlset>", " ".repeat(100_000));
    let (got, held) = push_read(comment.as_bytes(), limits, &every(comment.as_bytes(), 1000));
    assert_eq!(got, expected(comment.as_bytes(), limits));
    assert!(got.unwrap_err().0.contains("longer than 1024 bytes"));
    assert!(held <= 1024 + 2000 + OPEN.len(), "held {held} bytes");
}

#[test]
fn truncated_documents_fail_where_the_slice_reader_does() {
    let data = resource_list(3);
    for cut in [
        0,
        1,
        2,
        10,
        OPEN.len(),
        OPEN.len() + 20,
        data.len() - 20,
        data.len() - 3,
    ] {
        let part = &data[..cut];
        assert_push_agrees(&format!("cut at {cut}"), part, Limits::default());
        assert!(expected(part, Limits::default()).is_err(), "cut at {cut}");
        let zipped = gzip(&data);
        let part = &zipped[..cut.min(zipped.len() - 1)];
        assert_push_agrees(&format!("gzip cut at {cut}"), part, Limits::default());
    }
}

#[test]
fn limits_are_hit_at_the_same_place() {
    let data = resource_list(50);
    for limits in [
        Limits::default().with_max_entries(10),
        Limits::default().with_max_bytes(2000),
        Limits::default().with_max_bytes(0),
        Limits::default().with_max_event_len(30),
        Limits::default().with_max_entry_len(100),
    ] {
        assert!(expected(&data, limits).is_err(), "{limits:?}");
        assert_push_agrees(&format!("{limits:?}"), &data, limits);
        assert_push_agrees(&format!("{limits:?}, gzip"), &gzip(&data), limits);
    }
    // Over the byte limit, the push reader fails where a `BufRead` reader does, after the
    // entries before it.
    let limits = Limits::default().with_max_bytes(2000);
    let (got, _) = push_read(&data, limits, &every(&data, 100));
    let (kind, position) = got.unwrap_err();
    assert_eq!(kind, ErrorKind::TooLarge(2000).to_string());
    assert!(position.byte > 1500, "{position:?}");
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let mut reader = PushReader::new();
    reader.finish().unwrap();
    assert!(reader.feed(b"<").is_err());
    assert!(matches!(
        reader.next_entry().unwrap_err().kind(),
        ErrorKind::Empty
    ));
    assert!(reader.next_entry().is_err());
    // Nothing fed yet: nothing to read, and no error.
    let mut reader = PushReader::default();
    assert!(reader.head().unwrap().is_none());
    assert!(matches!(reader.next_entry(), Ok(Next::NeedMore)));
    assert_eq!((reader.entries_read(), reader.bytes_read()), (0, 0));
    fn is_send<T: Send>(_: &T) {}
    is_send(&reader);
    assert!(format!("{reader:?}").starts_with("PushReader"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Generated documents, plain and gzipped, at random split points.
    #[test]
    fn random_documents_at_random_splits(
        n in 0usize..20,
        cuts in proptest::collection::vec(0usize..4000, 0..30),
        zip in any::<bool>(),
        cut_end in proptest::option::of(0usize..4000),
    ) {
        let mut data = resource_list(n);
        if let Some(end) = cut_end {
            data.truncate(end);
        }
        let data = if zip { gzip(&data) } else { data };
        let mut cuts = cuts;
        cuts.sort_unstable();
        let (got, _) = push_read(&data, limits(), &cuts);
        prop_assert_eq!(got, expected(&data, limits()));
    }

    /// Corpus files at random split points.
    #[test]
    fn corpus_at_random_splits(
        pick in any::<prop::sample::Index>(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
    ) {
        let files = crate::fuzz_corpus::corpus("slice");
        let (name, data) = &files[pick.index(files.len())];
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(data.len() + 1)).collect();
        cuts.sort_unstable();
        let (got, _) = push_read(data, limits(), &cuts);
        prop_assert_eq!(got, expected(data, limits()), "{}", name);
    }
}

/// Markup the push reader's scanner must follow as quick-xml does, whatever the chunks:
/// `>` inside quoted attribute values, comments, CDATA sections and processing
/// instructions that end in odd ways, references and markup between entries, elements
/// named like entries that are not (and entries that do not look like them), a DOCTYPE,
/// byte order marks, mismatched and stray tags.
#[test]
fn tricky_markup_reads_alike_in_any_chunks() {
    const NS: &str = r#"xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/""#;
    let url = |loc: &str| format!("<url><loc>{loc}</loc></url>");
    let a = url("http://e.com/a");
    let rows: Vec<String> = vec![
        format!(
            r#"<urlset {NS} x='>"' y=">'"><url a='/>'><loc>http://e.com/a</loc></url>{a}</urlset>"#
        ),
        format!("<urlset {NS}><!-- > -- - ->--><!---->{a}<!-- --->{a}</urlset>"),
        format!("<urlset {NS}><!-->{a}-->{a}</urlset>"),
        format!(
            "<urlset {NS}><url><loc><![CDATA[http://e.com/]]]]><![CDATA[>]]></loc></url>{a}</urlset>"
        ),
        format!("<urlset {NS}><?pi ?? > ?>{a}<?>{a}<??></urlset>"),
        format!(
            "<?xml version=\"1.0\"?><?pi?><!-- c -->\n<urlset {NS}>{a}</urlset>\n<!-- after --><?after?>\n"
        ),
        format!("<urlset {NS}> &amp; {a}</urlset>"),
        format!("<urlset {NS}>{a} &#x20; {a}</urlset>"),
        format!("<urlset {NS}>{a} x {a}</urlset>"),
        format!(
            "<urlset {NS}>{a}<x:url xmlns:x=\"http://other/\"><loc>http://e.com/x</loc></x:url>{a}</urlset>"
        ),
        format!("<urlset {NS}><url xmlns=\"\"><loc>http://e.com/x</loc></url>{a}</urlset>"),
        format!(
            "<sm:urlset xmlns:sm=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><sm:url><sm:loc>http://e.com/a</sm:loc></sm:url><sm:url\n><sm:loc>http://e.com/b</sm:loc></sm:url></sm:urlset>"
        ),
        format!("<urlset>{a}<url/><url></url>{a}</urlset>"),
        format!("<urlset {NS}><bad:url>{a}</bad:url></urlset>"),
        format!(
            "<urlset {NS}><rs:md capability=\"resourcelist\"></rs:md><ext><url/></ext>{a}<rs:md capability=\"x\"/>{a}</urlset>"
        ),
        format!("<!DOCTYPE urlset [<!ENTITY x \"y\">]><urlset {NS}>{a}</urlset>"),
        format!("<urlset {NS}>{a}<!DOCTYPE x>{a}</urlset>"),
        format!("<urlset {NS}>{a}</url>{a}</urlset>"),
        format!("</urlset><urlset {NS}>{a}</urlset>"),
        format!("<urlset {NS}>{a}</urlset><urlset/>"),
        format!("<urlset {NS}/>"),
        format!("<urlset {NS}>{a}</urlset "),
        format!("<urlset {NS}>{a}<url><loc>http://e.com/b</loc></url   ></urlset\t>"),
        format!(
            "<urlset {NS}><url><loc>http://e.com/a</loc><ext><deep><deeper/></deep></ext></url>{a}</urlset>"
        ),
        format!("\u{feff}<urlset {NS}>{a}</urlset>"),
        format!("\u{feff}\u{feff}<urlset {NS}>{a}</urlset>"),
        format!("<urlset {NS}>{a}<!x>{a}</urlset>"),
        format!("<urlset {NS}>{a}<"),
        format!("<urlset {NS}>{a}<url>"),
        format!("<urlset {NS}>{a}\r\n\t {a}</urlset>"),
        format!(
            "<sitemapindex {NS}><sitemap><loc>http://e.com/s.xml</loc></sitemap>{a}</sitemapindex>"
        ),
    ];
    for (i, row) in rows.iter().enumerate() {
        let name = format!("row {i}: {row:?}");
        assert_push_agrees(&name, row.as_bytes(), limits());
        assert_push_agrees(&format!("{name}, gzipped"), &gzip(row.as_bytes()), limits());
        let small = limits().with_max_event_len(24).with_max_entry_len(60);
        assert_push_agrees(&format!("{name}, small limits"), row.as_bytes(), small);
    }
    // A BOM before gzip's magic bytes says text: not decompressed, as from a slice.
    let mut data = b"\xEF\xBB\xBF".to_vec();
    data.extend(gzip(format!("<urlset {NS}>{a}</urlset>").as_bytes()));
    assert_push_agrees("BOM, then gzip", &data, limits());
    // A corrupt gzip stream fails where it does from a slice.
    let mut zipped = gzip(resource_list(200).as_slice());
    let n = zipped.len();
    zipped[n / 2] ^= 0x55;
    assert_push_agrees("corrupt gzip", &zipped, limits());
    zipped.truncate(n - 4);
    assert_push_agrees("truncated gzip", &zipped, limits());
}

/// Found by the `push` fuzz target (`push/crash-c1b5ebc66f1cfa556c35bc7bdf3dea9b3e55cda6`,
/// event limit 68, text of 68 bytes that are not UTF-8, then `&`): text of exactly the
/// event limit was refused through `BufRead` (and so by the push reader), which handed out
/// the limit and no more, so that quick-xml never saw the `<` or `&` that ends the text; a
/// slice read it. `Counted` now hands out one byte more and refuses an event that takes it.
#[test]
fn text_of_exactly_the_event_limit_reads_on_every_path() {
    let text = "http://e.com/aaaaaaaaaaaaaaaaa";
    let limit = text.len() as u64;
    let crash = std::fs::read(format!(
        "{}/../fuzz/corpus/push/crash-c1b5ebc66f1cfa556c35bc7bdf3dea9b3e55cda6",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let rows: Vec<(Vec<u8>, Limits)> = vec![
        (
            format!("<urlset><url><loc>{text}</loc></url></urlset>").into_bytes(),
            limits().with_max_event_len(limit),
        ),
        (
            format!("<urlset><url><loc>{text}&amp;</loc></url></urlset>").into_bytes(),
            limits().with_max_event_len(limit),
        ),
        (
            format!("<urlset><url><loc>{text}a</loc></url></urlset>").into_bytes(),
            limits().with_max_event_len(limit),
        ),
        (
            crash,
            limits().with_max_event_len(68).with_max_entry_len(136),
        ),
    ];
    for (i, (data, limits)) in rows.into_iter().enumerate() {
        let slice = expected(&data, limits);
        let buffered =
            outcome(Reader::with_limits(&data[..], limits).and_then(Reader::read_to_document));
        assert_eq!(slice, buffered, "row {i}");
        for n in 1..=7 {
            let chunked = outcome(
                Reader::with_limits(crate::Chunks::new(&data, n), limits)
                    .and_then(Reader::read_to_document),
            );
            assert_eq!(slice, chunked, "row {i}, by {n}");
        }
        assert_push_agrees(&format!("row {i}"), &data, limits);
        match i {
            0 | 1 => assert!(slice.is_ok(), "row {i}: {slice:?}"),
            _ => assert!(slice.is_err(), "row {i}"),
        }
    }
}

/// Found while testing the push reader against the slice reader: an event longer than the
/// event limit that is also broken otherwise (text that is not UTF-8, a comment without an
/// end) failed from a slice for the other fault, since the slice reader read the whole event
/// before measuring it, and through `BufRead` (and so the push reader) for its length, since
/// reading stops at the limit. Now it fails for its length on every path.
#[test]
fn an_over_long_broken_event_fails_for_its_length_on_every_path() {
    let limits = limits().with_max_event_len(24);
    let long = "http://e.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
    for data in [
        format!("<urlset><url><loc>{long}\u{1}</loc></url></urlset>").into_bytes(),
        [
            format!("<urlset><url><loc>{long}").as_bytes(),
            b"\xff</loc></url></urlset>",
        ]
        .concat(),
        [
            b"<urlset><url a='\xff".as_slice(),
            long.as_bytes(),
            b"'/></urlset>",
        ]
        .concat(),
        format!("<urlset><!-- {long}").into_bytes(),
        format!("<urlset><url><loc>{long}").into_bytes(),
        // Found by the push target (`push/crash-c1b5ebc66f1cfa556c35bc7bdf3dea9b3e55cda6`),
        // below: text of exactly the limit, then `&`.
    ] {
        let slice = expected(&data, limits);
        let buffered =
            outcome(Reader::with_limits(&data[..], limits).and_then(Reader::read_to_document));
        assert_eq!(slice, buffered, "{data:?}");
        let (kind, _) = slice.unwrap_err();
        assert_eq!(kind, ErrorKind::EventTooLong(24).to_string(), "{data:?}");
        assert_push_agrees(&format!("{data:?}"), &data, limits);
    }
}
