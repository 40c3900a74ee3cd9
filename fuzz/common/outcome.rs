//! What reading a whole document comes to, in a form the reader's two input paths can be
//! compared on, and the limits the reader targets read with. Shared by the `reader` and
//! `slice` targets and by `resourcesync-xml/tests/xml/fuzz_corpus.rs`, which replays their
//! committed corpora under `cargo test`.

use resourcesync_model::{Document, Finding};
use resourcesync_xml::{Error, Limits, Position};

/// Small limits, so that memory stays bounded whatever the input.
pub fn limits() -> Limits {
    Limits::default()
        .with_max_entries(1_000)
        .with_max_bytes(1 << 20)
        .with_max_value_len(1 << 16)
}

/// The document and its findings, or the error's kind (as its message: `ErrorKind` holds
/// IO errors and cannot be compared) and its position.
pub type Outcome = Result<(Document, Vec<Finding>), (String, Position)>;

/// The outcome of `Reader::read_to_document`, comparable.
pub fn outcome(read: Result<(Document, Vec<Finding>), Error>) -> Outcome {
    read.map_err(|e| (e.kind().to_string(), e.position()))
}
