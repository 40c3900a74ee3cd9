//! Integration tests of resourcesync-package, one binary with a module per topic.

mod checks;
mod dump;
mod fuzz_corpus;
mod hostile;
mod order;
mod roundtrip;
mod rules;
mod threads;

use resourcesync_model::{DocumentHead, DocumentKind, Link, Relation};

/// The head of a manifest of `kind` with its time and `up` link.
pub fn manifest_head(kind: DocumentKind) -> DocumentHead {
    let mut head = DocumentHead::of_kind(kind);
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

/// The messages of an error and its sources, joined by ": ", as a command would print
/// them. Fails when a message prints Rust debug syntax, or repeats its source's message
/// (an error either prints its source or returns it, never both).
pub fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut messages = vec![error.to_string()];
    let mut current = error;
    while let Some(source) = current.source() {
        let (parent, child) = (current.to_string(), source.to_string());
        assert!(
            child.is_empty() || !parent.contains(&child),
            "{parent:?} prints its source {child:?} too"
        );
        messages.push(child);
        current = source;
    }
    let text = messages.join(": ");
    for debug in ["Some(", "None", "\"\"\""] {
        assert!(!text.contains(debug), "debug syntax in {text:?}");
    }
    text
}
