//! Integration tests of resourcesync-package, one binary with a module per topic.

mod dump;
mod fuzz_corpus;
mod hostile;
mod interop;
mod order;
mod roundtrip;
mod rules;

use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};

/// The head of a manifest of `kind` with its time and `up` link.
pub fn manifest_head(kind: DocumentKind) -> DocumentHead {
    let mut head = DocumentHead::of_kind(kind).unwrap();
    if kind == DocumentKind::ChangeDumpManifest {
        head.md.from = Some("2013-01-02T00:00:00Z".parse().unwrap());
    } else {
        head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
    }
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/dataset1/capabilitylist.xml"
            .parse()
            .unwrap(),
    ));
    head
}

/// The packages `packages.py` writes with Python's zipfile, in a fresh directory.
pub fn python_packages() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/package/packages.py"
        ))
        .arg(dir.path())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}
