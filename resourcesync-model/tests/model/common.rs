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
