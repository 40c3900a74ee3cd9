//! A structured round trip: an arbitrary document, written and read back, is the same
//! document, and writing it again gives the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../common/document.rs"]
mod document;

fuzz_target!(|data: &[u8]| {
    let mut u = arbitrary::Unstructured::new(data);
    let Ok(doc) = document::document(&mut u) else {
        return;
    };
    let xml = resourcesync_xml::write_document(Vec::new(), &doc).expect("writing to a Vec");
    let (read, _) = resourcesync_xml::read_document(&xml).expect("what we write, we read");
    assert_eq!(read, doc);
    assert_eq!(resourcesync_xml::write_document(Vec::new(), &read).expect("writing"), xml);
});
