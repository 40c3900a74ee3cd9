//! Any text either fails to parse as a W3C Datetime or parses to a value that writes
//! itself back as exactly that text. `resourcesync-model/tests/fuzz_corpus.rs` runs the
//! same property over the committed corpus, so plain `cargo test` exercises it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resourcesync_model::W3cDateTime;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(value) = text.parse::<W3cDateTime>() {
        assert_eq!(value.to_string(), text);
        assert_eq!(value.cmp(&value), std::cmp::Ordering::Equal);
        let _ = value.to_utc();
    }
});
