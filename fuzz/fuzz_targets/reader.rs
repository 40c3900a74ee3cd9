//! Arbitrary bytes through the streaming reader's `BufRead` path, with small limits: never
//! a panic, and memory bounded by the limits. The `slice` target covers the slice path.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resourcesync_xml::Reader;

#[path = "../common/outcome.rs"]
#[allow(dead_code)]
mod outcome;

fuzz_target!(|data: &[u8]| {
    let Ok(mut reader) = Reader::with_limits(data, outcome::limits()) else {
        return;
    };
    while let Ok(Some(_)) = reader.next_entry() {}
});
