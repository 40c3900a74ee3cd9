//! Replays the committed corpora of the `reader` and `roundtrip` fuzz targets (in
//! `fuzz/`) with the same properties, so plain `cargo test` exercises them; every crash a
//! fuzzer finds is added to its corpus as a named file.

use resourcesync_xml::{Limits, Reader};

use crate::document;

fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
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

#[test]
fn reader_corpus() {
    for (name, data) in corpus("reader") {
        let limits = Limits::default()
            .with_max_entries(1_000)
            .with_max_bytes(1 << 20)
            .with_max_value_len(1 << 16);
        // Through the slice and through one-byte reads: no panic, and the same outcome.
        let slice = Reader::with_limits(&data[..], limits).and_then(Reader::read_to_document);
        let chunked = Reader::with_limits(crate::Chunks::new(&data, 1), limits)
            .and_then(Reader::read_to_document);
        assert_eq!(
            slice.as_ref().map_err(|e| e.kind().to_string()).ok(),
            chunked.as_ref().map_err(|e| e.kind().to_string()).ok(),
            "{name}"
        );
    }
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
