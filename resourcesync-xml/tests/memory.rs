//! Memory stays bounded on input built to grow it: a test binary of its own, because it
//! counts every allocation of the process through a capped global allocator. The cap is
//! set a few MiB above what is allocated before each read; a reader that accumulated what
//! it skips would go over it, and the process would abort.
//!
//! The documents are 16 MiB of one construct (a comment, a processing instruction, white
//! space, CDATA, tiny unknown elements), plain and gzipped, each read through the slice
//! path and through `BufRead`, with the byte limits off as `resourcesync validate` reads.

use std::alloc::System;
use std::io::Write;

use cap::Cap;
use resourcesync_xml::{ErrorKind, Limits, Reader};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// What a read may allocate on top of its input: the default limits allow one event of
/// 2 MiB in the reader's buffer, and quick-xml and flate2 keep buffers of their own.
const HEADROOM: usize = 12 << 20;

const BIG: usize = 16 << 20;

fn document(body: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut xml = br#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:ln rel="up" href="http://e.com/caps.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/><url><loc>http://e.com/1</loc></url>"#.to_vec();
    body(&mut xml);
    xml.extend_from_slice(b"<url><loc>http://e.com/2</loc></url></urlset>");
    xml
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

/// Reads `bytes` with the cap set, and returns how it ended: `Ok(entries)` or the error.
fn read_capped(bytes: &[u8], slice: bool) -> Result<usize, ErrorKind> {
    ALLOCATOR
        .set_limit(ALLOCATOR.allocated() + HEADROOM)
        .unwrap();
    let limits = Limits::unbounded_size();
    let result = if slice {
        Reader::from_slice_with_limits(bytes, limits).read_to_document()
    } else {
        Reader::with_limits(bytes, limits).and_then(Reader::read_to_document)
    };
    let outcome = result
        .map(|(doc, _)| doc.entries.len())
        .map_err(|e| e.into_kind());
    ALLOCATOR.set_limit(usize::MAX).unwrap();
    outcome
}

#[test]
fn skipped_constructs_do_not_grow_memory() {
    type Body = fn(&mut Vec<u8>);
    let cases: [(&str, Body, bool); 6] = [
        (
            "comment",
            |x| {
                x.extend_from_slice(b"<!--");
                x.resize(x.len() + BIG, b'c');
                x.extend_from_slice(b"-->");
            },
            false,
        ),
        (
            "processing instruction",
            |x| {
                x.extend_from_slice(b"<?pi ");
                x.resize(x.len() + BIG, b'p');
                x.extend_from_slice(b"?>");
            },
            false,
        ),
        ("white space", |x| x.resize(x.len() + BIG, b' '), false),
        (
            "CDATA",
            |x| {
                x.extend_from_slice(b"<url><loc><![CDATA[");
                x.resize(x.len() + BIG, b'a');
                x.extend_from_slice(b"]]></loc></url>");
            },
            false,
        ),
        (
            "an unknown element's content",
            |x| {
                x.extend_from_slice(b"<x:y xmlns:x=\"urn:x\">");
                x.resize(x.len() + BIG, b'v');
                x.extend_from_slice(b"</x:y>");
            },
            false,
        ),
        (
            // Read and dropped one by one: the document is read to its end.
            "tiny unknown elements between entries",
            |x| {
                let element = b"<x:y xmlns:x=\"urn:x\"/>";
                // Kept, they would take ten times their bytes: 4 MiB is enough to tell.
                for _ in 0..(4 << 20) / element.len() {
                    x.extend_from_slice(element);
                }
            },
            true,
        ),
    ];
    for (name, body, readable) in cases {
        let plain = document(body);
        let zipped = gzip(&plain);
        for (form, bytes) in [("plain", &plain), ("gzipped", &zipped)] {
            for slice in [true, false] {
                let outcome = read_capped(bytes, slice);
                let path = if slice { "slice" } else { "BufRead" };
                match outcome {
                    Ok(entries) => {
                        assert!(readable, "{name}, {form}, {path}: read without error");
                        assert_eq!(entries, 2, "{name}, {form}, {path}");
                    }
                    Err(kind) => {
                        assert!(!readable, "{name}, {form}, {path}: {kind}");
                        assert!(
                            matches!(
                                kind,
                                ErrorKind::EventTooLong(_) | ErrorKind::ValueTooLong(_)
                            ),
                            "{name}, {form}, {path}: {kind}"
                        );
                    }
                }
            }
        }
    }
}
