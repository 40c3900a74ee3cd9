//! One fault, one finding: an attribute a reader found present but malformed (and reported)
//! is not also reported missing, nor a link it dropped for a malformed `href`.

use resourcesync_model::{
    AttributeName as A, Attributes, Capability, Change, CheckOptions, Checker, DocumentHead,
    DocumentKind as K, Entry, Finding, Link, Malformed, Md, MediaType, Relation, Rule,
};
use rstest::rstest;

fn t(s: &str) -> resourcesync_model::W3cDateTime {
    s.parse().unwrap()
}

fn up() -> Link {
    Link::new(Relation::Up, "http://example.com/caps.xml".parse().unwrap())
}

/// The head rules found for `head` with `malformed`.
fn head_rules(head: &DocumentHead, malformed: Malformed<'_>, options: CheckOptions) -> Vec<Rule> {
    let mut findings = Vec::new();
    Checker::with_malformed(head, options, malformed, &mut findings);
    findings.iter().map(|f| f.rule).collect()
}

/// `attribute`, mandatory on the head of `kind`, reported missing by `rule` only when it
/// was not there at all.
#[rstest]
#[case::resourcelist_at(K::ResourceList, A::At, Rule::AtMandatory)]
#[case::resourcelist_index_at(K::ResourceListIndex, A::At, Rule::AtMandatory)]
#[case::resourcedump_manifest_at(K::ResourceDumpManifest, A::At, Rule::AtMandatory)]
#[case::changelist_from(K::ChangeList, A::From, Rule::FromMandatory)]
#[case::changedump_index_from(K::ChangeDumpIndex, A::From, Rule::FromMandatory)]
#[case::changedump_manifest_from(K::ChangeDumpManifest, A::From, Rule::FromMandatory)]
fn malformed_head_attributes_are_not_also_missing(
    #[case] kind: K,
    #[case] attribute: A,
    #[case] rule: Rule,
) {
    let head = DocumentHead::of_kind(kind).with_link(up());
    let none = Malformed::default();
    assert_eq!(
        head_rules(&head, none, CheckOptions::default()),
        [rule],
        "{kind:?}"
    );
    let malformed = Malformed {
        md: Attributes::NONE.with(attribute),
        ..none
    };
    assert_eq!(
        head_rules(&head, malformed, CheckOptions::default()),
        [],
        "{kind:?}"
    );
    // Another attribute malformed does not hide it.
    let other = Malformed {
        md: Attributes::NONE.with(A::Until).with(A::Completed),
        ..none
    };
    assert_eq!(
        head_rules(&head, other, CheckOptions::default()),
        [rule],
        "{kind:?}"
    );
}

#[test]
fn a_malformed_capability_is_not_also_missing() {
    let mut head = DocumentHead::of_kind(K::ResourceList);
    head.md.capability = None;
    let malformed = Malformed {
        md: Attributes::NONE.with(A::Capability),
        ..Malformed::default()
    };
    assert_eq!(
        head_rules(&head, Malformed::default(), CheckOptions::default()),
        [Rule::CapabilityMandatory]
    );
    assert_eq!(head_rules(&head, malformed, CheckOptions::default()), []);
}

/// A link of `rel` that a reader dropped (for a malformed `href`) is not reported missing
/// by `rule`.
#[rstest]
#[case::resourcelist_up(
    K::ResourceList,
    Relation::Up,
    Rule::UpLinkMandatory,
    CheckOptions::default()
)]
#[case::capabilitylist_up(
    K::CapabilityList,
    Relation::Up,
    Rule::UpLinkMandatory,
    CheckOptions::default()
)]
#[case::changelist_index(
    K::ChangeList,
    Relation::Index,
    Rule::IndexLinkRecommended,
    CheckOptions::part_of_index(true)
)]
#[case::source_description_describedby(
    K::SourceDescription,
    Relation::DescribedBy,
    Rule::DescribedbyLinkRecommended,
    CheckOptions::default()
)]
fn dropped_links_are_not_also_missing(
    #[case] kind: K,
    #[case] rel: Relation,
    #[case] rule: Rule,
    #[case] options: CheckOptions,
) {
    let mut head = DocumentHead::of_kind(kind);
    head.md.at = Some(t("2013-01-03T09:00:00Z"));
    head.md.from = None;
    if matches!(kind, K::ChangeList) {
        head.md.at = None;
        head.md.from = Some(t("2013-01-03T00:00:00Z"));
    }
    if kind == K::SourceDescription || kind == K::CapabilityList {
        head.md.at = None;
    }
    for other in [Relation::Up, Relation::Index, Relation::DescribedBy] {
        if other != rel {
            head.links
                .push(Link::new(other, "http://example.com/x".parse().unwrap()));
        }
    }
    let found = head_rules(&head, Malformed::default(), options);
    assert!(found.contains(&rule), "{kind:?}: {found:?}");
    let dropped = [rel.clone()];
    let malformed = Malformed {
        dropped_links: &dropped,
        ..Malformed::default()
    };
    let found = head_rules(&head, malformed, options);
    assert!(!found.contains(&rule), "{kind:?}: {found:?}");
    let other = [Relation::Collection];
    let malformed = Malformed {
        dropped_links: &other,
        ..Malformed::default()
    };
    assert!(
        head_rules(&head, malformed, options).contains(&rule),
        "{kind:?}"
    );
}

/// A head of `kind` that breaks no rule, checked, then `entry` with `malformed`.
fn entry_rules(kind: K, entry: &Entry, malformed: Malformed<'_>) -> Vec<Rule> {
    let mut head = DocumentHead::of_kind(kind);
    head.md.at = Some(t("2013-01-03T09:00:00Z"));
    if matches!(
        kind,
        K::ChangeList | K::ChangeListIndex | K::ChangeDump | K::ChangeDumpManifest
    ) {
        head.md.at = None;
        head.md.from = Some(t("2013-01-03T00:00:00Z"));
    }
    if matches!(
        kind,
        K::SourceDescription | K::CapabilityList | K::ResourceDumpArchive
    ) {
        head.md.at = None;
    }
    head.links.push(up());
    head.links.push(Link::new(
        Relation::DescribedBy,
        "http://example.com/about".parse().unwrap(),
    ));
    let mut findings: Vec<Finding> = Vec::new();
    let mut checker = Checker::new(&head, &mut findings);
    findings.clear();
    checker.check_entry_with(entry, malformed, &mut findings);
    findings.iter().map(|f| f.rule).collect()
}

fn html() -> MediaType {
    "text/html".parse().unwrap()
}

fn zip() -> MediaType {
    "application/zip".parse().unwrap()
}

/// `attribute` of an entry's `rs:md` in a document of `kind`, reported missing by `rule`
/// only when it was not there at all.
#[rstest]
#[case::changelist_change(K::ChangeList, Md::default(), A::Change, Rule::ChangeMandatory)]
#[case::changedump_manifest_change(
    K::ChangeDumpManifest,
    Md::new().with_path("/changes/res1".into()).with_media_type(html()),
    A::Change,
    Rule::ChangeMandatory
)]
#[case::changedump_manifest_path(
    K::ChangeDumpManifest,
    Md::new().with_change(Change::Updated).with_media_type(html()),
    A::Path,
    Rule::PathMandatory
)]
#[case::changedump_manifest_type(
    K::ChangeDumpManifest,
    Md::new().with_change(Change::Updated).with_path("/changes/res1".into()),
    A::Type,
    Rule::ManifestTypeRecommended
)]
#[case::resourcedump_manifest_path(
    K::ResourceDumpManifest,
    Md::new().with_media_type(html()),
    A::Path,
    Rule::PathMandatory
)]
#[case::changedump_type(
    K::ChangeDump,
    Md::new().with_length(1).with_from(t("2013-01-03T00:00:00Z")),
    A::Type,
    Rule::DumpPackageMetadata
)]
#[case::changedump_length(
    K::ChangeDump,
    Md::new().with_media_type(zip()).with_from(t("2013-01-03T00:00:00Z")),
    A::Length,
    Rule::DumpPackageMetadata
)]
#[case::changedump_from(
    K::ChangeDump,
    Md::new().with_media_type(zip()).with_length(1),
    A::From,
    Rule::EntryFromRecommended
)]
#[case::changelist_index_from(
    K::ChangeListIndex,
    Md::default(),
    A::From,
    Rule::EntryFromRecommended
)]
#[case::resourcedump_archive_at(
    K::ResourceDumpArchive,
    Md::default(),
    A::At,
    Rule::EntryAtRecommended
)]
#[case::capabilitylist_capability(
    K::CapabilityList,
    Md::default(),
    A::Capability,
    Rule::CapabilityListEntryCapability
)]
#[case::source_description_capability(
    K::SourceDescription,
    Md::default(),
    A::Capability,
    Rule::SourceDescriptionEntryCapability
)]
fn malformed_entry_attributes_are_not_also_missing(
    #[case] kind: K,
    #[case] md: Md,
    #[case] attribute: A,
    #[case] rule: Rule,
) {
    let mut entry = Entry::new("http://example.com/res1".parse().unwrap()).with_md(md);
    if kind == K::SourceDescription {
        entry.links.push(Link::new(
            Relation::DescribedBy,
            "http://example.com/set".parse().unwrap(),
        ));
    }
    let found = entry_rules(kind, &entry, Malformed::default());
    assert_eq!(found, [rule], "{kind:?} {attribute}");
    let malformed = Malformed {
        md: Attributes::NONE.with(attribute),
        ..Malformed::default()
    };
    assert_eq!(
        entry_rules(kind, &entry, malformed),
        [],
        "{kind:?} {attribute}"
    );
}

fn patch() -> Link {
    Link::new(
        Relation::Patch,
        "http://example.com/res1.diff".parse().unwrap(),
    )
}

/// `attribute` of an entry's link, reported missing by `rule` only when it was not there at
/// all, and only on the link it was malformed on.
#[rstest]
#[case::changelist_patch_type(K::ChangeList, patch(), A::Type, Rule::PatchLinkType)]
#[case::changedump_manifest_patch_path(
    K::ChangeDumpManifest,
    patch().with_media_type("application/json-patch+json".parse().unwrap()),
    A::Path,
    Rule::PatchLinkPath
)]
#[case::resourcelist_alternate_type(
    K::ResourceList,
    Link::new(Relation::Alternate, "http://example.com/res1.pdf".parse().unwrap()),
    A::Type,
    Rule::AlternateLinkType
)]
fn malformed_link_attributes_are_not_also_missing(
    #[case] kind: K,
    #[case] link: Link,
    #[case] attribute: A,
    #[case] rule: Rule,
) {
    let mut entry = Entry::new("http://example.com/res1".parse().unwrap());
    entry.md = Some({
        let mut md = Md::new();
        md.change =
            matches!(kind, K::ChangeList | K::ChangeDumpManifest).then_some(Change::Updated);
        md.path = (kind == K::ChangeDumpManifest).then(|| "/res1".into());
        md.media_type = (kind == K::ChangeDumpManifest).then(html);
        md
    });
    // The link is second, after one with nothing malformed.
    entry.links.push(Link::new(
        Relation::Collection,
        "http://example.com/c".parse().unwrap(),
    ));
    entry.links.push(link);
    assert_eq!(
        entry_rules(kind, &entry, Malformed::default()),
        [rule],
        "{kind:?}"
    );
    let on_second = [Attributes::NONE, Attributes::NONE.with(attribute)];
    let malformed = Malformed {
        links: &on_second,
        ..Malformed::default()
    };
    assert_eq!(entry_rules(kind, &entry, malformed), [], "{kind:?}");
    // On the first link, it does not hide the second's.
    let on_first = [Attributes::NONE.with(attribute)];
    let malformed = Malformed {
        links: &on_first,
        ..Malformed::default()
    };
    assert_eq!(entry_rules(kind, &entry, malformed), [rule], "{kind:?}");
}

#[test]
fn a_dropped_describedby_link_is_not_also_missing() {
    // A dropped describedby link on a Source Description entry.
    let entry = Entry::new("http://example.com/caps.xml".parse().unwrap())
        .with_md(Md::new().with_capability(Capability::CapabilityList));
    assert_eq!(
        entry_rules(K::SourceDescription, &entry, Malformed::default()),
        [Rule::EntryDescribedbyRecommended]
    );
    let dropped = [Relation::DescribedBy];
    let malformed = Malformed {
        dropped_links: &dropped,
        ..Malformed::default()
    };
    assert_eq!(entry_rules(K::SourceDescription, &entry, malformed), []);
}

/// An attribute's name reads back, and a set of it holds it alone.
fn attribute_name_and_set(a: A) {
    assert_eq!(A::from_name(a.as_str()), Some(a));
    assert_eq!(a.to_string(), a.as_str());
    let set = Attributes::NONE.with(a);
    assert_eq!(set.iter().collect::<Vec<_>>(), [a]);
    assert!(!set.is_empty());
}

// In the order the writer writes them, which is A::ALL's.
per_row!(attribute_name_and_set: A = A::ALL;
    capability: A::Capability,
    at: A::At,
    completed: A::Completed,
    from: A::From,
    until: A::Until,
    change: A::Change,
    datetime: A::Datetime,
    rel: A::Rel,
    href: A::Href,
    pri: A::Pri,
    modified: A::Modified,
    hash: A::Hash,
    length: A::Length,
    type_: A::Type,
    path: A::Path,
    encoding: A::Encoding,
);

#[test]
fn a_set_of_every_attribute_and_its_debug_form() {
    let all: Attributes = A::ALL.into_iter().collect();
    assert_eq!(all.iter().count(), A::ALL.len());
    assert_eq!(
        format!("{:?}", Attributes::NONE.with(A::At).with(A::Type)),
        "{At, Type}"
    );
}

#[rstest]
#[case::upper_case("At")]
#[case::misspelt("lenght")]
#[case::prefixed("rs:at")]
#[case::empty("")]
fn other_names_are_no_attribute(#[case] bad: &str) {
    assert_eq!(A::from_name(bad), None, "{bad}");
}
