//! Replays the committed corpora of the `reader`, `slice` and `roundtrip` fuzz targets (in
//! `fuzz/`) with the same properties, so plain `cargo test` exercises them; every crash a
//! fuzzer finds is added to its corpus as a named file.

use resourcesync_xml::Reader;

use crate::document;

#[path = "../../../fuzz/common/outcome.rs"]
#[allow(unreachable_pub)]
pub(crate) mod outcome;

use outcome::{Outcome, limits, outcome};

pub(crate) fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = format!("{}/../fuzz/corpus/{target}", env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| {
            let path = e.unwrap().path();
            (path.display().to_string(), std::fs::read(&path).unwrap())
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the {target} corpus is missing");
    files
}

/// How reading `data` through a `BufRead` over the whole slice, and through `BufRead`s
/// that hand out 1 to 7 bytes at a time, differs from reading it through the slice path:
/// one line per path that disagrees, naming both outcomes. Empty when all nine agree:
/// the same document and findings, or an error of the same kind at the same position.
fn differences(name: &str, data: &[u8]) -> Vec<String> {
    let slice = outcome(Reader::from_slice_with_limits(data, limits()).read_to_document());
    let mut differences = Vec::new();
    let mut compare = |path: &str, other: Outcome| {
        if slice != other {
            differences.push(format!(
                "{name}\n  slice: {}\n  {path}: {}",
                describe(&slice),
                describe(&other)
            ));
        }
    };
    compare(
        "BufRead",
        outcome(Reader::with_limits(data, limits()).and_then(Reader::read_to_document)),
    );
    for n in 1..=7 {
        compare(
            &format!("BufRead by {n} bytes"),
            outcome(
                Reader::with_limits(crate::Chunks::new(data, n), limits())
                    .and_then(Reader::read_to_document),
            ),
        );
    }
    differences
}

/// An outcome in one line: the error and its place, or what was read.
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

/// Every file of the reader corpora (`reader` and `slice`) read on every path: no panic,
/// and the same outcome. Every disagreement is listed before the test fails.
#[test]
fn reader_corpora_read_the_same_on_every_path() {
    let mut files = corpus("reader");
    files.extend(corpus("slice"));
    // The slice corpus was seeded from the reader corpus: read each content once.
    files.sort_by(|a, b| a.1.cmp(&b.1));
    files.dedup_by(|a, b| a.1 == b.1);
    let differences: Vec<String> = files
        .iter()
        .flat_map(|(name, data)| differences(name, data))
        .collect();
    assert!(
        differences.is_empty(),
        "{} of {} files read differently off the slice path:\n{}",
        differences.len(),
        files.len(),
        differences.join("\n")
    );
}

const URLSET: &str = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://example.com/a</loc></url></urlset>"#;

/// Found by the corpus replay (`reader/159568366c78f9f65eaa5597eda59b8509701b7a`: two
/// BOMs, then bytes): one byte order mark is a signature, a second is U+FEFF, a character,
/// which cannot stand before the root. The slice path and `BufRead`s that hand out 3 bytes
/// or more let quick-xml strip it as a second BOM; `BufRead`s of 1 or 2 bytes kept it.
#[test]
fn a_second_byte_order_mark_is_text_on_every_path() {
    const BOM: &str = "\u{feff}";
    for data in [
        format!("{BOM}{BOM}{URLSET}"),
        format!("{BOM}{BOM}\u{1}\0\0'"),
        format!("{BOM}{BOM}"),
        format!("{BOM}{BOM}{BOM}{URLSET}"),
    ] {
        let differences = differences(&format!("{data:?}"), data.as_bytes());
        assert!(differences.is_empty(), "{}", differences.join("\n"));
        let (kind, position) =
            outcome(Reader::from_slice_with_limits(data.as_bytes(), limits()).read_to_document())
                .unwrap_err();
        assert!(
            kind.starts_with(r#"unexpected text "<U+FEFF>"#),
            "{data:?}: {kind}"
        );
        assert_eq!((position.byte, position.line, position.column), (0, 1, 1));
    }
    // One BOM is a signature on every path, and positions count from after it.
    let data = format!("{BOM}{URLSET}");
    assert!(differences("one BOM", data.as_bytes()).is_empty());
    let data = format!("{BOM}\n{}", URLSET.replace("/a<", "/a\u{1}<"));
    assert!(differences("one BOM, then an error", data.as_bytes()).is_empty());
}

/// A BOM says the input is text: gzip's magic bytes after it are text too, on every path.
/// The slice path looked for the magic after the BOM and decompressed; `BufRead` looked
/// at the first bytes.
#[test]
fn gzip_magic_after_a_byte_order_mark_is_not_decompressed() {
    use std::io::Write;
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gzip.write_all(URLSET.as_bytes()).unwrap();
    let mut data = b"\xEF\xBB\xBF".to_vec();
    data.extend(gzip.finish().unwrap());
    let differences = differences("BOM then gzip", &data);
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    assert!(
        Reader::from_slice_with_limits(&data, limits())
            .read_to_document()
            .is_err()
    );
}

#[test]
fn roundtrip_corpus() {
    for (name, data) in corpus("roundtrip") {
        let mut u = arbitrary::Unstructured::new(&data);
        let Ok(doc) = document::document(&mut u) else {
            continue;
        };
        let outcome = std::panic::catch_unwind(|| document::assert_round_trip(&doc));
        assert!(outcome.is_ok(), "{name}");
    }
}

/// Inside gzip, the document's BOM was left to quick-xml, which strips one only when the
/// decoder's first buffer holds all of it: through a `BufRead` that hands out a few bytes
/// at a time it was read as text, and elsewhere it was counted in positions. Now one BOM
/// is stripped on every path, a second is text, and positions are those of the document
/// without its BOM.
#[test]
fn a_gzipped_byte_order_mark_is_stripped_on_every_path() {
    use std::io::Write;
    let gzip = |text: &str| {
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gzip.write_all(text.as_bytes()).unwrap();
        gzip.finish().unwrap()
    };
    let read = |data: &[u8]| {
        let differences = differences("gzip", data);
        assert!(differences.is_empty(), "{}", differences.join("\n"));
        outcome(Reader::from_slice_with_limits(data, limits()).read_to_document())
    };
    // A forbidden character in the entry, so that the outcome names a place.
    let broken = URLSET.replace("/a<", "/a\u{1}<");
    for document in [URLSET, &broken, &format!("\n{broken}")] {
        let without = read(&gzip(document));
        assert_eq!(read(&gzip(&format!("\u{feff}{document}"))), without);
        assert_eq!(read(&format!("\u{feff}{document}").into_bytes()), without);
        let (kind, position) = read(&gzip(&format!("\u{feff}\u{feff}{document}"))).unwrap_err();
        assert!(kind.starts_with(r#"unexpected text "<U+FEFF>"#), "{kind}");
        assert_eq!((position.byte, position.line, position.column), (0, 1, 1));
    }
    let (_, position) = read(&gzip(&format!("\u{feff}{broken}"))).unwrap_err();
    assert_eq!((position.byte, position.line, position.column), (70, 1, 71));
}

/// Found by the `slice` fuzz target (`slice/crash-gzip-corrupt-after-some-text`, a gzip
/// stream whose deflate data decodes to some bytes that are not UTF-8, then breaks): from
/// a slice it failed as a corrupt deflate stream, through a `BufRead` of 6 bytes as
/// invalid UTF-8, because flate2 drops what it decoded in the call that finds the fault
/// and the calls went by the source's reads. The decoder is now fed the same pieces on
/// every path. Beside it, a document in stored blocks whose second block is broken.
#[test]
fn a_corrupt_gzip_stream_fails_alike_however_it_arrives() {
    use std::io::Write;
    let found = format!(
        "{}/../fuzz/corpus/slice/crash-gzip-corrupt-after-some-text",
        env!("CARGO_MANIFEST_DIR")
    );
    let found = std::fs::read(&found).unwrap_or_else(|e| panic!("{found}: {e}"));
    let found = differences("crash-gzip-corrupt-after-some-text", &found);
    assert!(found.is_empty(), "{}", found.join("\n"));

    // Stored (uncompressed) blocks, the second's length check broken: the decoder puts
    // out the first block, then fails, in one call when it is given the whole stream.
    let entry =
        "<url><loc>http://example.com/res</loc><lastmod>2013-01-02T13:00:00Z</lastmod></url>\n";
    let document = URLSET.replace("<url>", &format!("{}<url>", entry.repeat(1_000)));
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gzip.write_all(document.as_bytes()).unwrap();
    let mut gzip = gzip.finish().unwrap();
    // After the 10-byte gzip header: one byte of block type, LEN and NLEN, LEN bytes.
    assert_eq!(gzip[10] & 0b110, 0, "a stored block");
    let second = 15 + usize::from(u16::from_le_bytes([gzip[11], gzip[12]]));
    assert!(second + 5 < gzip.len(), "one block only");
    gzip[second + 3] ^= 0xff;
    let found = differences("stored blocks, the second broken", &gzip);
    assert!(found.is_empty(), "{}", found.join("\n"));
    let (kind, _) =
        outcome(Reader::from_slice_with_limits(&gzip, limits()).read_to_document()).unwrap_err();
    assert!(kind.contains("corrupt deflate stream"), "{kind}");
}
