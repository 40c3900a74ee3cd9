//! Runs the property of the `w3c_datetime` fuzz target (in `fuzz/`) over its committed
//! seed corpus and every crash it found, so that plain `cargo test` exercises them.

use resourcesync_model::W3cDateTime;

#[test]
fn w3c_datetime_corpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../fuzz/corpus/w3c_datetime");
    let Ok(entries) = std::fs::read_dir(dir) else {
        // Not in the published crate, which leaves the fuzz corpus out.
        return;
    };
    let mut ran = 0;
    for entry in entries {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        let Ok(text) = std::str::from_utf8(&data) else {
            continue;
        };
        if let Ok(value) = text.parse::<W3cDateTime>() {
            assert_eq!(value.to_string(), text);
            assert_eq!(value.cmp(&value), std::cmp::Ordering::Equal);
            let _ = value.to_utc();
        }
        ran += 1;
    }
    assert!(ran >= 10, "the seed corpus is missing");
}
