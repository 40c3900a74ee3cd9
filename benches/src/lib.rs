//! Generated documents for the benchmarks, and the raw quick-xml loop they are measured
//! against; a counting allocator ([`alloc`]); the client peers ([`peers`]). Benchmarks live in `benches/`.

use std::io::BufRead;

pub mod alloc;
pub mod peers;

use quick_xml::NsReader;
use quick_xml::events::Event;
use resourcesync_model::{
    Change, Document, DocumentHead, DocumentKind, Entry, Hash, HashAlgorithm, Hashes, Link, Md,
    Relation, Uri, W3cDateTime,
};

/// Runs `run` to its end spawned on `runtime`, as the command runs a sync
/// ([`resourcesync_destination::asynchronous::spawned`]).
pub fn spawned<T: Send + 'static>(
    runtime: &tokio::runtime::Runtime,
    run: impl Future<Output = T> + Send + 'static,
) -> T {
    runtime
        .block_on(resourcesync_destination::asynchronous::spawned(run))
        .expect("the runtime outlives the run")
}

/// The peak resident memory of this process, from `/proc/self/status` (Linux): what a
/// child process of a bench reports of itself (`VmHWM`).
pub fn peak_resident() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib << 10)
}

/// A fresh directory in memory when the machine has `/dev/shm` (tmpfs: the benches
/// measure the CPU's work, not this machine's disk), else in the temporary directory.
pub fn scratch(prefix: &str) -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir()
        && let Ok(dir) = tempfile::Builder::new().prefix(prefix).tempdir_in(shm)
    {
        return dir;
    }
    tempfile::tempdir().expect("a temporary directory")
}

/// A cheap deterministic byte stream (xorshift): digests that look random, content no
/// compressor shrinks.
pub fn bytes(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// Writes one Resource List of `n` generated entries ([`entry`]) to `path`, entry by
/// entry, however large (past the Sitemap protocol's limits, which a reader reports):
/// what `resourcesync validate` is measured on (`benches/memory.rs`,
/// `examples/generate.rs --single`).
pub fn write_single_document(path: &std::path::Path, n: u64) -> std::io::Result<()> {
    let head = document(DocumentKind::ResourceList, 0, 0).head;
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut writer = resourcesync_xml::Writer::new(file, &head).map_err(std::io::Error::other)?;
    for i in 0..n {
        writer
            .write_entry(&entry(i, false))
            .map_err(std::io::Error::other)?;
    }
    let written = writer.finish().map_err(std::io::Error::other)?;
    written.output.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

/// The document a profile program works on, from its environment: the 50,000-entry
/// Change List with `CHANGES` set, else the Resource List.
pub fn profiled_document() -> Document {
    let kind = if std::env::var_os("CHANGES").is_some() {
        DocumentKind::ChangeList
    } else {
        DocumentKind::ResourceList
    };
    document(kind, 0, 50_000)
}

/// How many times a profile program repeats its work: `ITER`, 20 by default (`ITER=0`
/// is callgrind's baseline, the setup alone).
pub fn profiled_iterations() -> u32 {
    std::env::var("ITER")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20)
}

/// A realistic entry: lastmod, an md5 and a sha-256 hash, length and type; one in ten
/// with a `duplicate` link; a change and its datetime in change lists. About 330 bytes.
pub fn entry(i: u64, change: bool) -> Entry {
    let mut e = Entry::new(
        Uri::parse(&format!(
            "http://example.com/repository/collections/dataset-{:04}/items/{i:08}/content.html",
            i % 1000
        ))
        .unwrap(),
    );
    let secs = 1_357_000_000 + i as i64 * 7;
    let time = W3cDateTime::from(chrono::DateTime::from_timestamp(secs, 0).unwrap());
    e.lastmod = Some(time);
    let hashes = Hashes::new(vec![
        Hash::from_bytes(HashAlgorithm::Md5, &bytes(i, 16)).unwrap(),
        Hash::from_bytes(HashAlgorithm::Sha256, &bytes(i + 1, 32)).unwrap(),
    ])
    .unwrap();
    e.md = Some({
        let mut md = Md::new()
            .with_hash(hashes)
            .with_length(1000 + i * 37 % 100_000)
            .with_media_type("text/html; charset=utf-8".parse().unwrap());
        md.change = change.then_some(Change::Updated);
        md.datetime = change.then_some(time);
        md
    });
    if i % 10 == 0 {
        e.links.push(Link::new(
            Relation::Duplicate,
            Uri::parse(&format!("http://mirror.example.com/resources/{i:08}.html")).unwrap(),
        ));
    }
    e
}

/// The head of a Resource Dump Manifest that breaks no rule, for the package benches.
pub fn manifest_head() -> DocumentHead {
    let mut head = DocumentHead::of_kind(DocumentKind::ResourceDumpManifest);
    head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
    head.links.push(Link::new(
        Relation::Up,
        Uri::parse("http://example.com/capabilitylist.xml").unwrap(),
    ));
    head
}

/// A Resource List (or, with `change`, a Change List) of `n` entries starting at `first`.
pub fn document(kind: DocumentKind, first: u64, n: u64) -> Document {
    let mut head = DocumentHead::of_kind(kind);
    head.links.push(Link::new(
        Relation::Up,
        Uri::parse("http://example.com/dataset1/capabilitylist.xml").unwrap(),
    ));
    let change = kind == DocumentKind::ChangeList;
    if change {
        head.md.from = Some("2013-01-01T00:00:00Z".parse().unwrap());
    } else {
        head.md.at = Some("2014-01-01T00:00:00Z".parse().unwrap());
    }
    let mut doc = Document::new(head);
    doc.entries = (first..first + n).map(|i| entry(i, change)).collect();
    doc
}

/// The XML of a document.
pub fn xml(doc: &Document) -> Vec<u8> {
    resourcesync_xml::write_document(Vec::new(), doc)
        .unwrap()
        .output
}

/// The floor: a raw quick-xml `NsReader` loop that reads every event, resolves every
/// element's namespace, and unescapes every attribute value and text of the same bytes,
/// building nothing. Returns a count so the work cannot be optimised away.
pub fn raw_loop(input: impl BufRead) -> usize {
    let mut reader = NsReader::from_reader(input);
    let mut buf = Vec::new();
    let mut n = 0;
    loop {
        buf.clear();
        match reader.read_resolved_event_into(&mut buf).unwrap() {
            (_, Event::Start(e) | Event::Empty(e)) => {
                for attr in e.attributes() {
                    let attr = attr.unwrap();
                    n += attr
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .unwrap()
                        .len();
                }
                n += 1;
            }
            (_, Event::Text(t)) => n += t.xml10_content().len(),
            (_, Event::Eof) => break,
            _ => n += 1,
        }
    }
    n
}
