//! What several of the test modules build the same way.

use resourcesync_model::{DocumentHead, DocumentKind as K, Link, Relation};

/// A head of `kind` that breaks no rule of its own: `at` on snapshots, `from` on change
/// documents, `from` and `until` on change notifications, an `up` link on every kind but the Source Description's.
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
        K::ChangeNotification => {
            head.md.from = Some(t("2013-01-03T00:00:00Z"));
            head.md.until = Some(t("2013-01-04T00:00:00Z"));
        }
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

/// One test per entry of a catalogue (`DocumentKind::DEFINED`, `Rule::ALL`, ...):
///
/// ```text
/// per_row!(test_fn: Type = CATALOGUE; name: value, ...);
/// ```
///
/// expands a module `test_fn` (beside the function `test_fn`) with one `#[test] fn name`
/// per row, each calling `super::test_fn(value)`, so that a failing row names itself and
/// does not hide the others. Its test `rows_are_the_catalogue` fails when the rows are not
/// the catalogue's entries in its order, as when the catalogue gains one.
macro_rules! per_row {
    ($test:ident: $ty:ty = $all:expr; $($name:ident: $value:expr),+ $(,)?) => {
        mod $test {
            #[allow(unused_imports)]
            use super::*;

            $(
                #[test]
                fn $name() {
                    super::$test($value);
                }
            )+

            #[test]
            fn rows_are_the_catalogue() {
                let rows: &[$ty] = &[$($value),+];
                assert_eq!(rows, &$all[..]);
            }
        }
    };
}

/// One test per defined kind of document: `per_kind!(test_fn)` for a `fn test_fn(kind:
/// DocumentKind)`, by [`per_row!`].
macro_rules! per_kind {
    ($test:ident) => {
        per_row!($test: resourcesync_model::DocumentKind = resourcesync_model::DocumentKind::DEFINED;
            source_description: resourcesync_model::DocumentKind::SourceDescription,
            source_description_index: resourcesync_model::DocumentKind::SourceDescriptionIndex,
            capability_list: resourcesync_model::DocumentKind::CapabilityList,
            capability_list_index: resourcesync_model::DocumentKind::CapabilityListIndex,
            resource_list: resourcesync_model::DocumentKind::ResourceList,
            resource_list_index: resourcesync_model::DocumentKind::ResourceListIndex,
            resource_dump: resourcesync_model::DocumentKind::ResourceDump,
            resource_dump_index: resourcesync_model::DocumentKind::ResourceDumpIndex,
            resource_dump_manifest: resourcesync_model::DocumentKind::ResourceDumpManifest,
            change_list: resourcesync_model::DocumentKind::ChangeList,
            change_list_index: resourcesync_model::DocumentKind::ChangeListIndex,
            change_dump: resourcesync_model::DocumentKind::ChangeDump,
            change_dump_index: resourcesync_model::DocumentKind::ChangeDumpIndex,
            change_dump_manifest: resourcesync_model::DocumentKind::ChangeDumpManifest,
            resource_list_archive: resourcesync_model::DocumentKind::ResourceListArchive,
            resource_list_archive_index: resourcesync_model::DocumentKind::ResourceListArchiveIndex,
            resource_dump_archive: resourcesync_model::DocumentKind::ResourceDumpArchive,
            resource_dump_archive_index: resourcesync_model::DocumentKind::ResourceDumpArchiveIndex,
            change_list_archive: resourcesync_model::DocumentKind::ChangeListArchive,
            change_list_archive_index: resourcesync_model::DocumentKind::ChangeListArchiveIndex,
            change_dump_archive: resourcesync_model::DocumentKind::ChangeDumpArchive,
            change_dump_archive_index: resourcesync_model::DocumentKind::ChangeDumpArchiveIndex,
            change_notification: resourcesync_model::DocumentKind::ChangeNotification,
            framework_notification: resourcesync_model::DocumentKind::FrameworkNotification,
        );
    };
}
