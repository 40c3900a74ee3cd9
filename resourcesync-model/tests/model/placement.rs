//! Where attributes, links and entries may stand: `change` only in Change Lists and Change
//! Dump Manifests, no deletion in a Resource Dump Manifest, a Source Description entry's
//! `rs:md` with its capability, patch links only for changes (14.4), duplicate links
//! without `rs:md` attributes (14.2), alternate links with a type (14.3), and each `<loc>`
//! once where entries stand for different resources.

use resourcesync_model::{
    BitstreamPath, Capability, Change, Checker, Document, DocumentKind as K, Entry, Finding, Link,
    MAX_ENTRIES, Md, Priority, Relation, Rule, Severity, Uri, check,
};
use rstest::rstest;

fn t(s: &str) -> resourcesync_model::W3cDateTime {
    s.parse().unwrap()
}

use crate::common::clean_head as head;

/// The rules of `findings` that are among `of`, with their entries.
fn only(findings: &[Finding], of: &[Rule]) -> Vec<(Rule, Option<u64>)> {
    findings
        .iter()
        .filter(|f| of.contains(&f.rule))
        .map(|f| (f.rule, f.entry))
        .collect()
}

fn entry(loc: &str, md: Md) -> Entry {
    Entry::new(loc.parse().unwrap()).with_md(md)
}

const CHANGE_RULES: [Rule; 2] = [Rule::ChangeNotUsed, Rule::ResourceDumpManifestDeleted];

/// `change` on an entry of a document of `kind`: only Change Lists and Change Dump
/// Manifests use it, and a Resource Dump Manifest lists no deletion.
fn change_in_an_entry(kind: K, change: Change) {
    let mut doc = Document::new(head(kind));
    let mut md = Md::new().with_change(change);
    if kind == K::ResourceDumpManifest {
        md.path = Some(BitstreamPath::new("/resources/res1"));
    }
    doc.entries.push(entry("http://example.com/res1", md));
    let found = check(&doc);
    let expected: &[(Rule, Option<u64>)] = match (kind, change) {
        (
            K::ChangeList
            | K::ChangeDumpManifest
            | K::ChangeNotification
            | K::FrameworkNotification,
            _,
        ) => &[],
        (K::ResourceDumpManifest, Change::Deleted) => {
            &[(Rule::ResourceDumpManifestDeleted, Some(1))]
        }
        _ => &[(Rule::ChangeNotUsed, Some(1))],
    };
    assert_eq!(only(&found, &CHANGE_RULES), expected, "{kind:?} {change}");
}

fn created_in_an_entry(kind: K) {
    change_in_an_entry(kind, Change::Created);
}
per_kind!(created_in_an_entry);

fn updated_in_an_entry(kind: K) {
    change_in_an_entry(kind, Change::Updated);
}
per_kind!(updated_in_an_entry);

fn deleted_in_an_entry(kind: K) {
    change_in_an_entry(kind, Change::Deleted);
}
per_kind!(deleted_in_an_entry);

#[test]
fn every_change_value_has_its_tests_in_an_entry() {
    assert_eq!(
        Change::ALL,
        [Change::Created, Change::Updated, Change::Deleted]
    );
}

/// On the document's rs:md, `change` is never used.
fn change_on_the_document(kind: K) {
    let mut h = head(kind);
    h.md.change = Some(Change::Updated);
    let found = check(&Document::new(h));
    assert_eq!(
        only(&found, &CHANGE_RULES),
        [(Rule::ChangeNotUsed, None)],
        "{kind:?}"
    );
}
per_kind!(change_on_the_document);

#[test]
fn a_deletion_in_a_resource_dump_manifest_is_one_error() {
    // Without a path, it is the deletion that is reported, not also the missing path, type
    // or a change where none is used.
    let mut doc = Document::new(head(K::ResourceDumpManifest));
    doc.entries.push(entry(
        "http://example.com/res1",
        Md::new().with_change(Change::Deleted),
    ));
    let found = check(&doc);
    assert_eq!(
        found.iter().map(|f| (f.rule, f.entry)).collect::<Vec<_>>(),
        [(Rule::ResourceDumpManifestDeleted, Some(1))]
    );
    assert_eq!(found[0].severity(), Severity::Error);
    assert_eq!(
        found[0].message,
        "loc \"http://example.com/res1\" is listed as deleted in a Resource Dump Manifest, which describes the bitstreams of a snapshot"
    );
    // An update in it is only a change where none is used; the path is still mandatory.
    let mut doc = Document::new(head(K::ResourceDumpManifest));
    doc.entries.push(entry(
        "http://example.com/res1",
        Md::new().with_change(Change::Updated),
    ));
    let rules: Vec<Rule> = check(&doc).iter().map(|f| f.rule).collect();
    assert_eq!(
        rules,
        [
            Rule::ChangeNotUsed,
            Rule::PathMandatory,
            Rule::ManifestTypeRecommended
        ]
    );
}

#[rstest]
#[case::no_rs_md(None, false)]
#[case::capabilitylist(Some(Md::new().with_capability(Capability::CapabilityList)), false)]
#[case::no_capability(Some(Md::default()), true)]
#[case::at_but_no_capability(Some(Md::new().with_at(t("2013-01-03T09:00:00Z"))), true)]
#[case::resourcelist(Some(Md::new().with_capability(Capability::ResourceList)), true)]
#[case::description(Some(Md::new().with_capability(Capability::Description)), true)]
fn a_source_description_entry_rs_md_has_capabilitylist(
    #[case] md: Option<Md>,
    #[case] broken: bool,
) {
    let mut doc = Document::new(head(K::SourceDescription));
    let mut e = Entry::new("http://example.com/capabilitylist.xml".parse().unwrap());
    e.md = md.clone();
    doc.entries.push(e);
    let found = only(&check(&doc), &[Rule::SourceDescriptionEntryCapability]);
    let expected: &[(Rule, Option<u64>)] = if broken {
        &[(Rule::SourceDescriptionEntryCapability, Some(1))]
    } else {
        &[]
    };
    assert_eq!(found, expected, "{md:?}");
}

fn typed(rel: Relation, href: &str, media_type: Option<&str>) -> Link {
    let mut l = Link::new(rel, href.parse().unwrap());
    l.media_type = media_type.map(|m| m.parse().unwrap());
    l
}

fn patch() -> Link {
    typed(
        Relation::Patch,
        "http://example.com/res1-diff",
        Some("application/json-patch+json"),
    )
}

/// A patch link on an entry: only in Change Lists and Change Dump Manifests.
fn patch_link_on_an_entry(kind: K) {
    let mut doc = Document::new(head(kind));
    let mut e = Entry::new("http://example.com/res1".parse().unwrap());
    e.links.push(patch());
    doc.entries.push(e);
    let found = only(&check(&doc), &[Rule::PatchLinkNotApplicable]);
    let expected: &[(Rule, Option<u64>)] = if matches!(
        kind,
        K::ChangeList | K::ChangeDumpManifest | K::ChangeNotification
    ) {
        &[]
    } else {
        &[(Rule::PatchLinkNotApplicable, Some(1))]
    };
    assert_eq!(found, expected, "{kind:?}");
}
per_kind!(patch_link_on_an_entry);

/// A patch link on the document: never.
fn patch_link_on_the_document(kind: K) {
    let mut h = head(kind);
    h.links.push(patch());
    let found = only(&check(&Document::new(h)), &[Rule::PatchLinkNotApplicable]);
    assert_eq!(found, [(Rule::PatchLinkNotApplicable, None)], "{kind:?}");
}
per_kind!(patch_link_on_the_document);

#[test]
fn a_patch_link_in_a_change_dump_belongs_in_its_manifests() {
    let mut doc = Document::new(head(K::ChangeDump));
    let mut e = Entry::new("http://example.com/package.zip".parse().unwrap());
    e.links.push(patch());
    doc.entries.push(e);
    let found = check(&doc);
    let f = found
        .iter()
        .find(|f| f.rule == Rule::PatchLinkNotApplicable)
        .unwrap();
    assert!(
        f.message.contains("belong in its Change Dump Manifests"),
        "{}",
        f.message
    );
}

fn mirror() -> Link {
    Link::new(
        Relation::Duplicate,
        "http://mirror.example.com/res1".parse().unwrap(),
    )
}

#[rstest]
#[case::bare(mirror(), None)]
#[case::pri(mirror().with_pri(Priority::new(1).unwrap()), None)]
#[case::modified(mirror().with_modified(t("2013-01-03T18:00:00Z")), None)]
#[case::hash(mirror().with_hash("md5:1584abdf8ebdc9802ac0c6a7402c03b6".parse().unwrap()), Some("hash"))]
#[case::length(mirror().with_length(8876), Some("length"))]
#[case::type_(mirror().with_media_type("text/html".parse().unwrap()), Some("type"))]
#[case::encoding(mirror().with_encoding("gzip".into()), Some("encoding"))]
#[case::path(mirror().with_path("/res1".into()), Some("path"))]
#[case::length_and_encoding(mirror().with_length(1).with_encoding("gzip".into()), Some("length, encoding"))]
fn duplicate_links_omit_rs_md_attributes(#[case] link: Link, #[case] named: Option<&str>) {
    let mut doc = Document::new(head(K::ChangeList));
    let mut e = entry(
        "http://example.com/res1",
        Md::new().with_change(Change::Updated),
    );
    e.links.push(link.clone());
    doc.entries.push(e);
    let found: Vec<Finding> = check(&doc)
        .into_iter()
        .filter(|f| f.rule == Rule::DuplicateLinkAttributes)
        .collect();
    match named {
        None => assert!(found.is_empty(), "{link:?}: {found:#?}"),
        Some(names) => {
            assert_eq!(found.len(), 1, "{link:?}");
            assert_eq!(found[0].severity(), Severity::Warning);
            assert!(
                found[0].message.contains(&format!("has {names}:")),
                "{}",
                found[0].message
            );
        }
    }
}

#[rstest]
#[case::alternate_untyped(typed(Relation::Alternate, "http://example.com/res1.html", None), true)]
#[case::alternate_typed(
    typed(Relation::Alternate, "http://example.com/res1.html", Some("text/html")),
    false
)]
#[case::canonical_untyped(typed(Relation::Canonical, "http://example.com/res1", None), false)]
#[case::alternate_upper_case_untyped(
    typed("ALTERNATE".parse().unwrap(), "http://example.com/res1.pdf", None),
    true
)]
fn alternate_links_carry_a_type(
    #[case] link: Link,
    #[case] broken: bool,
    #[values(K::ResourceList, K::ChangeList, K::ResourceDumpManifest)] kind: K,
) {
    let mut doc = Document::new(head(kind));
    let mut e = Entry::new("http://example.com/res1".parse().unwrap());
    e.links.push(link.clone());
    doc.entries.push(e);
    let found = only(&check(&doc), &[Rule::AlternateLinkType]);
    assert_eq!(!found.is_empty(), broken, "{kind:?} {link:?}");
}

/// Each `<loc>` once, but in Change Lists and Change Dump Manifests.
fn each_loc_once_where_entries_are_different_resources(kind: K) {
    let mut doc = Document::new(head(kind));
    for loc in [
        "http://example.com/a",
        "http://example.com/b",
        "http://example.com/a",
        "http://Example.com/a",
        "http://example.com/a/",
        "http://example.com/b",
    ] {
        doc.entries.push(Entry::new(loc.parse().unwrap()));
    }
    let found: Vec<Finding> = check(&doc)
        .into_iter()
        .filter(|f| f.rule == Rule::LocDuplicate)
        .collect();
    if matches!(
        kind,
        K::ChangeList | K::ChangeDumpManifest | K::ChangeNotification | K::FrameworkNotification
    ) {
        assert!(
            found.is_empty(),
            "{kind:?}: a resource is listed once per change"
        );
        return;
    }
    // URIs compare as written: only the exact repeats are reported.
    assert_eq!(
        found.iter().map(|f| f.entry).collect::<Vec<_>>(),
        [Some(3), Some(6)],
        "{kind:?}"
    );
    assert_eq!(found[0].section, kind.section());
    assert_eq!(
        found[0].message,
        "loc \"http://example.com/a\" is listed again; entry 1 lists it first"
    );
    assert_eq!(
        found[1].message,
        "loc \"http://example.com/b\" is listed again; entry 2 lists it first"
    );
}
per_kind!(each_loc_once_where_entries_are_different_resources);

#[test]
fn loc_memory_is_bounded_by_the_entry_limit() {
    // Past MAX_ENTRIES, locs are still compared with those remembered, but not kept: the
    // table stops growing. 50,000 distinct locs, then one repeat of the first and one
    // new loc repeated twice past the limit (not remembered, so not found).
    let mut findings = Vec::new();
    let mut checker = Checker::new(&head(K::ResourceList), &mut findings);
    for i in 0..MAX_ENTRIES {
        checker.check_entry(
            &Entry::new(Uri::parse(&format!("http://example.com/r{i}")).unwrap()),
            &mut findings,
        );
    }
    for loc in [
        "http://example.com/r0",
        "http://example.com/new",
        "http://example.com/new",
    ] {
        checker.check_entry(&Entry::new(loc.parse().unwrap()), &mut findings);
    }
    assert_eq!(
        findings
            .iter()
            .map(|f| (f.rule, f.entry))
            .collect::<Vec<_>>(),
        [
            (Rule::MaxEntries, Some(MAX_ENTRIES + 1)),
            (Rule::LocDuplicate, Some(MAX_ENTRIES + 1)),
        ]
    );
}
