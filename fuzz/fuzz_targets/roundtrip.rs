//! A structured round trip: an arbitrary document — extensions unsanitised, entries in any
//! order — is refused by the writer or, written and read back, is the same document, and
//! writing it again gives the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../common/document.rs"]
mod document;

fuzz_target!(|data: &[u8]| {
    let mut u = arbitrary::Unstructured::new(data);
    if let Ok(doc) = document::document(&mut u) {
        document::assert_round_trip(&doc);
    }
});
