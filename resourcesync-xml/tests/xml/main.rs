//! Integration tests of resourcesync-xml, one binary with a module per topic.
//!
//! Every reading test runs through the slice path and through `BufRead` readers that hand
//! out 1 to 7 bytes at a time, so that tokens split across reads are covered.

/// The fuzz targets' document generator and round-trip property, shared with the
/// corpus replay and the property test.
#[path = "../../../fuzz/common/document.rs"]
#[allow(dead_code, unreachable_pub, clippy::all)]
mod document;
mod examples;
mod fuzz_corpus;
mod hostile;
mod notification;
mod push;
mod roundtrip;
mod rules;
mod set;
mod set_reader;
mod write_checks;

use std::io::{BufRead, Read};

use resourcesync_model::{Document, Finding};
use resourcesync_xml::{Error, Limits, Reader};

/// A `BufRead` over a slice that hands out at most `n` bytes per `fill_buf`.
#[derive(Debug)]
pub struct Chunks<'a> {
    data: &'a [u8],
    n: usize,
}

impl<'a> Chunks<'a> {
    /// Hands out `data` in pieces of at most `n` bytes.
    pub fn new(data: &'a [u8], n: usize) -> Chunks<'a> {
        Chunks { data, n }
    }
}

impl Read for Chunks<'_> {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        let n = self.n.min(out.len()).min(self.data.len());
        out[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

impl BufRead for Chunks<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        Ok(&self.data[..self.n.min(self.data.len())])
    }
    fn consume(&mut self, amt: usize) {
        self.data = &self.data[amt..];
    }
}

/// What reading a whole document gives.
pub type Outcome = Result<(Document, Vec<Finding>), Error>;

/// Reads a document through the slice path, a `BufRead` over the whole slice, and
/// `BufRead`s of every chunk size from 1 to 7; asserts that all nine agree (same document,
/// same findings, or the same error message), and returns the slice path's outcome.
pub fn read_everywhere(bytes: &[u8], limits: Limits) -> Outcome {
    let slice = Reader::from_slice_with_limits(bytes, limits).read_to_document();
    let buffered = Reader::with_limits(bytes, limits).and_then(Reader::read_to_document);
    match (&slice, &buffered) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the BufRead path read differently"),
        (Err(a), Err(b)) => assert_eq!(a.kind().to_string(), b.kind().to_string()),
        (a, b) => panic!("BufRead: {b:?} but the slice gave {a:?}"),
    }
    for n in 1..=7 {
        let chunked =
            Reader::with_limits(Chunks::new(bytes, n), limits).and_then(Reader::read_to_document);
        match (&slice, &chunked) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "chunks of {n} read differently"),
            (Err(a), Err(b)) => assert_eq!(
                a.kind().to_string(),
                b.kind().to_string(),
                "chunks of {n} failed differently"
            ),
            (a, b) => panic!("chunks of {n}: {b:?} but the slice gave {a:?}"),
        }
    }
    push::assert_push_agrees("a document read everywhere", bytes, limits);
    slice
}

/// `(rule id, entry)` of each finding.
pub fn rules_of(findings: &[Finding]) -> Vec<(&'static str, Option<u64>)> {
    findings.iter().map(|f| (f.rule.id(), f.entry)).collect()
}
