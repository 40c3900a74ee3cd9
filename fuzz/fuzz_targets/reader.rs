//! Arbitrary bytes through the streaming reader, with small limits: never a panic, and
//! memory bounded by the limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resourcesync_xml::{Limits, Reader};

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default()
        .with_max_entries(1_000)
        .with_max_bytes(1 << 20)
        .with_max_value_len(1 << 16);
    let Ok(mut reader) = Reader::with_limits(data, limits) else {
        return;
    };
    while let Ok(Some(_)) = reader.next_entry() {}
});
