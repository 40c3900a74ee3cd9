//! What several of the test modules build the same way.

use resourcesync_model::{DocumentHead, DocumentKind as K, Link, Relation};

/// A head of `kind` that breaks no rule of its own: `at` on snapshots, `from` on change
/// documents, an `up` link on every kind but the Source Description's.
pub(crate) fn clean_head(kind: K) -> DocumentHead {
    let mut head = DocumentHead::of_kind(kind);
    let t = |s: &str| s.parse().unwrap();
    match kind {
        K::ResourceList
        | K::ResourceListIndex
        | K::ResourceDump
        | K::ResourceDumpIndex
        | K::ResourceDumpManifest => head.md.at = Some(t("2013-01-03T09:00:00Z")),
        K::ChangeList
        | K::ChangeListIndex
        | K::ChangeDump
        | K::ChangeDumpIndex
        | K::ChangeDumpManifest => head.md.from = Some(t("2013-01-03T00:00:00Z")),
        _ => {}
    }
    if !matches!(kind, K::SourceDescription | K::SourceDescriptionIndex) {
        head.links.push(Link::new(
            Relation::Up,
            "http://example.com/capabilitylist.xml".parse().unwrap(),
        ));
    }
    head
}
