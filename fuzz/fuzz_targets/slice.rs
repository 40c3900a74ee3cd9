//! Arbitrary bytes through the reader's borrowed slice fast path, with small limits: never
//! a panic, memory bounded by the limits, and the same outcome as the `BufRead` path over
//! the same bytes, handed out whole and in pieces of 1 to 7 bytes: the same document and
//! findings, or an error of the same kind at the same place.
#![no_main]

use std::io::BufReader;

use libfuzzer_sys::fuzz_target;
use resourcesync_xml::Reader;

#[path = "../common/outcome.rs"]
mod outcome;
use outcome::{limits, outcome};

fuzz_target!(|data: &[u8]| {
    let slice = outcome(Reader::from_slice_with_limits(data, limits()).read_to_document());
    let buffered = outcome(Reader::with_limits(data, limits()).and_then(Reader::read_to_document));
    assert_eq!(
        slice, buffered,
        "the slice and BufRead paths read differently"
    );
    // A BufReader's capacity bounds what one fill_buf hands out, so tokens split across
    // reads; the size comes from the input, which keeps each run reproducible.
    let n = 1 + data.len() % 7;
    let chunked = outcome(
        Reader::with_limits(BufReader::with_capacity(n, data), limits())
            .and_then(Reader::read_to_document),
    );
    assert_eq!(
        slice, chunked,
        "the slice and {n}-byte BufRead reads differ"
    );
});
