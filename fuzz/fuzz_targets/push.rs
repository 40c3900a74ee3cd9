//! Arbitrary bytes through the push reader, fed in chunks derived from the bytes (and
//! byte by byte), with small limits (and smaller event and entry limits): never a panic, never a step that runs out of fed
//! bytes, and the same outcome as the slice reader: the same document and findings, or
//! an error of the same kind at the same place.
#![no_main]

use libfuzzer_sys::fuzz_target;
use resourcesync_xml::Reader;

#[path = "../common/outcome.rs"]
#[allow(dead_code)]
mod outcome;
#[path = "../common/push.rs"]
mod push;
use outcome::{limits, outcome};

fuzz_target!(|data: &[u8]| {
    // A plain document over the byte limit is the documented exception (the push reader
    // fails where a `BufRead` reader does); the fuzzer's inputs are far below 1 MiB.
    let text = data.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(data);
    if !data.starts_with(&[0x1f, 0x8b]) && text.len() as u64 > limits().max_bytes {
        return;
    }
    let slice = outcome(Reader::from_slice_with_limits(data, limits()).read_to_document());
    let cuts = push::cuts_from(data);
    let (chunked, _) = push::push_read(data, limits(), &cuts);
    assert_eq!(
        slice,
        outcome(chunked),
        "the push reader in chunks {cuts:?} and the slice reader read differently"
    );
    // Small event and entry limits, from the input, so that the reader is called on the
    // strength of a limit (the parser must fail within the bytes held) as often as on a
    // complete entry.
    let seed = data.first().copied().unwrap_or(0) as u64;
    let small = limits()
        .with_max_event_len(8 + seed % 64)
        .with_max_entry_len(16 + seed * 2);
    let slice_small = outcome(Reader::from_slice_with_limits(data, small).read_to_document());
    let (pushed_small, _) = push::push_read(data, small, &cuts);
    assert_eq!(
        slice_small,
        outcome(pushed_small),
        "with limits {small:?}, the push reader in chunks {cuts:?} and the slice reader read differently"
    );
    let every: Vec<usize> = (1..data.len()).collect();
    let (bytewise, _) = push::push_read(data, limits(), &every);
    assert_eq!(
        slice,
        outcome(bytewise),
        "the push reader byte by byte and the slice reader read differently"
    );
});
