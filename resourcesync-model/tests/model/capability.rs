//! Capabilities the standards do not define: a near miss of a defined value is an error
//! that names the value meant, and the document is checked as the kind meant; any other
//! value is a warning.

use resourcesync_model::{
    Capability, Checker, Document, DocumentHead, DocumentKind as K, Entry, Finding, Link, Md,
    Relation, Root, Rule, Severity, check,
};

use rstest::rstest;

#[rstest]
// letter case
#[case::letter_case_resourcelist("ResourceList", Some(Capability::ResourceList))]
#[case::upper_case_resourcelist("RESOURCELIST", Some(Capability::ResourceList))]
#[case::letter_case_changelist("ChangeList", Some(Capability::ChangeList))]
#[case::letter_case_changedump("ChangeDump", Some(Capability::ChangeDump))]
#[case::letter_case_description("Description", Some(Capability::Description))]
#[case::letter_case_capabilitylist("CapabilityList", Some(Capability::CapabilityList))]
#[case::letter_case_resourcedump_manifest(
    "ResourceDump-Manifest",
    Some(Capability::ResourceDumpManifest)
)]
// separators
#[case::hyphen_resource_list("resource-list", Some(Capability::ResourceList))]
#[case::underscore_resource_list("resource_list", Some(Capability::ResourceList))]
#[case::space_resource_list("Resource List", Some(Capability::ResourceList))]
#[case::no_hyphen_resourcedump_manifest(
    "ResourceDumpManifest",
    Some(Capability::ResourceDumpManifest)
)]
#[case::underscore_changedump_manifest("changedump_manifest", Some(Capability::ChangeDumpManifest))]
#[case::no_hyphen_resourcelist_archive(
    "ResourceListArchive",
    Some(Capability::ResourceListArchive)
)]
#[case::spaces_changelist_archive("change list archive", Some(Capability::ChangeListArchive))]
// one edit on a short value, two on a long one
#[case::chnagelist("chnagelist", Some(Capability::ChangeList))]
#[case::changelst("changelst", Some(Capability::ChangeList))]
#[case::changelists("changelists", Some(Capability::ChangeList))]
#[case::changedumps("changedumps", Some(Capability::ChangeDump))]
#[case::descripton("descripton", Some(Capability::Description))]
#[case::resorcelist("resorcelist", Some(Capability::ResourceList))]
#[case::ressourcelist("ressourcelist", Some(Capability::ResourceList))]
#[case::resourcelsit("resourcelsit", Some(Capability::ResourceList))]
#[case::resorcelsit("resorcelsit", Some(Capability::ResourceList))]
#[case::resourcedmp("resourcedmp", Some(Capability::ResourceDump))]
#[case::capabilitylst("capabilitylst", Some(Capability::CapabilityList))]
#[case::capabiltylists("capabiltylists", Some(Capability::CapabilityList))]
#[case::resourcedump_manfest("resourcedump-manfest", Some(Capability::ResourceDumpManifest))]
#[case::changedump_manifset("changedump-manifset", Some(Capability::ChangeDumpManifest))]
#[case::changelist_archiv("changelist-archiv", Some(Capability::ChangeListArchive))]
#[case::resourcelist_archives("resourcelist-archives", Some(Capability::ResourceListArchive))]
// not near misses: other words, deliberate extensions, two edits on a short value
#[case::other_word_mirrorlist("mirrorlist", None)]
#[case::other_word_changes("changes", None)]
#[case::other_word_list("list", None)]
#[case::other_word_dump("dump", None)]
#[case::empty("", None)]
#[case::extension_x_changelist("x-changelist", None)]
#[case::extension_x_resourcelist("x-resourcelist", None)]
#[case::extension_resourcelist_v2("resourcelist-v2", None)]
#[case::extension_changelist_2("changelist-2", None)]
#[case::two_edits_chnagelsit("chnagelsit", None)]
#[case::two_edits_descriptn("descriptn", None)]
#[case::uri("http://example.org/capabilities/mirror", None)]
fn near_misses_name_the_value_meant(#[case] value: &str, #[case] meant: Option<Capability>) {
    assert_eq!(Capability::from(value).meant(), meant, "{value:?}");
}

#[test]
fn a_very_long_value_is_no_near_miss() {
    let long = "resourcelist".repeat(100_000);
    assert_eq!(Capability::from(long.as_str()).meant(), None);
}

/// Every small edit of the defined value `c` is a near miss of it.
fn every_small_edit_is_a_near_miss(c: Capability) {
    let name = c.as_str();
    let b = name.as_bytes();
    let mut variants = vec![name.to_ascii_uppercase()];
    for i in 0..b.len() {
        // deletion, substitution, insertion, and transposition with the next letter
        let mut v = b.to_vec();
        v.remove(i);
        variants.push(String::from_utf8(v).unwrap());
        let mut v = b.to_vec();
        v[i] = if v[i] == b'q' { b'z' } else { b'q' };
        variants.push(String::from_utf8(v).unwrap());
        let mut v = b.to_vec();
        v.insert(i, b'q');
        variants.push(String::from_utf8(v).unwrap());
        if i + 1 < b.len() && b[i] != b[i + 1] {
            let mut v = b.to_vec();
            v.swap(i, i + 1);
            variants.push(String::from_utf8(v).unwrap());
        }
    }
    for v in variants {
        let parsed = Capability::from(v.as_str());
        assert!(matches!(parsed, Capability::Other(_)), "{v} is defined");
        assert_eq!(parsed.meant(), Some(c.clone()), "{v}");
    }
}

per_row!(every_small_edit_is_a_near_miss: Capability = Capability::DEFINED;
    description: Capability::Description,
    capabilitylist: Capability::CapabilityList,
    resourcelist: Capability::ResourceList,
    resourcedump: Capability::ResourceDump,
    resourcedump_manifest: Capability::ResourceDumpManifest,
    changelist: Capability::ChangeList,
    changedump: Capability::ChangeDump,
    changedump_manifest: Capability::ChangeDumpManifest,
    resourcelist_archive: Capability::ResourceListArchive,
    resourcedump_archive: Capability::ResourceDumpArchive,
    changelist_archive: Capability::ChangeListArchive,
    changedump_archive: Capability::ChangeDumpArchive,
    change_notification: Capability::ChangeNotification,
    framework_notification: Capability::FrameworkNotification,
);

fn up() -> Link {
    Link::new(
        Relation::Up,
        "http://example.com/capabilitylist.xml".parse().unwrap(),
    )
}

fn rules(found: &[Finding]) -> Vec<(Rule, Option<u64>)> {
    found.iter().map(|f| (f.rule, f.entry)).collect()
}

#[test]
fn a_near_miss_document_is_checked_as_the_kind_meant() {
    // capability="ResourceList", no at and no up link: all three are reported.
    let head = DocumentHead::new(Root::UrlSet, Capability::from("ResourceList"));
    let mut findings = Vec::new();
    let checker = Checker::new(&head, &mut findings);
    assert_eq!(checker.kind(), K::ResourceList);
    assert_eq!(head.kind(), K::Unknown);
    assert_eq!(
        rules(&findings),
        [
            (Rule::CapabilityMisspelt, None),
            (Rule::AtMandatory, None),
            (Rule::UpLinkMandatory, None)
        ]
    );
    assert_eq!(findings[0].severity(), Severity::Error);
    assert_eq!(
        findings[0].message,
        "capability \"ResourceList\" is not defined; did you mean \"resourcelist\"?"
    );

    // On a sitemapindex, the index kind is meant.
    let mut head = DocumentHead::new(Root::SitemapIndex, Capability::from("Change_List"));
    head.links.push(up());
    let mut findings = Vec::new();
    let checker = Checker::new(&head, &mut findings);
    assert_eq!(checker.kind(), K::ChangeListIndex);
    assert_eq!(
        rules(&findings),
        [
            (Rule::CapabilityMisspelt, None),
            (Rule::FromMandatory, None)
        ]
    );

    // Entries are checked as the kind meant: a Change List's change is mandatory.
    let mut head = DocumentHead::new(Root::UrlSet, Capability::from("changelsit"));
    head.md.from = Some("2013-01-03T00:00:00Z".parse().unwrap());
    head.links.push(up());
    let mut doc = Document::new(head);
    doc.entries
        .push(Entry::new("http://example.com/res1".parse().unwrap()));
    assert_eq!(
        rules(&check(&doc)),
        [
            (Rule::CapabilityMisspelt, None),
            (Rule::ChangeMandatory, Some(1))
        ]
    );
}

#[rstest]
#[case::mirrorlist("mirrorlist")]
#[case::x_resourcelist("x-resourcelist")]
#[case::resourcelist_v2("resourcelist-v2")]
fn any_other_capability_is_a_warning_and_turns_kind_rules_off(#[case] value: &str) {
    let head = DocumentHead::new(Root::UrlSet, Capability::from(value));
    let found = check(&Document::new(head));
    assert_eq!(rules(&found), [(Rule::CapabilityUnknown, None)], "{value}");
    assert_eq!(found[0].severity(), Severity::Warning);
    assert_eq!(
        found[0].message,
        format!("capability \"{value}\" is not defined by the standards")
    );
}

fn entries(kind: K, capabilities: &[&str]) -> Vec<(Rule, Option<u64>)> {
    let mut head = DocumentHead::of_kind(kind);
    head.links.push(up());
    head.links.push(Link::new(
        Relation::DescribedBy,
        "http://example.com/about".parse().unwrap(),
    ));
    if kind == K::SourceDescription {
        head.links.clear();
        head.links.push(Link::new(
            Relation::DescribedBy,
            "http://example.com/about".parse().unwrap(),
        ));
    }
    let mut doc = Document::new(head);
    for (i, c) in capabilities.iter().enumerate() {
        let mut e = Entry::new(format!("http://example.com/doc{i}.xml").parse().unwrap());
        e.md = Some(Md::new().with_capability(Capability::from(*c)));
        if kind == K::SourceDescription {
            e.links.push(Link::new(
                Relation::DescribedBy,
                "http://example.com/about-set".parse().unwrap(),
            ));
        }
        doc.entries.push(e);
    }
    rules(&check(&doc))
}

#[test]
fn entries_with_near_misses() {
    use Rule::*;
    // Capability List: the near miss is checked as meant, for duplicates and kinds.
    assert_eq!(
        entries(K::CapabilityList, &["ResourceList"]),
        [(CapabilityMisspelt, Some(1))]
    );
    assert_eq!(
        entries(K::CapabilityList, &["resourcelist", "ResourceList"]),
        [
            (CapabilityMisspelt, Some(2)),
            (CapabilityListDuplicate, Some(2))
        ]
    );
    assert_eq!(
        entries(K::CapabilityList, &["Description"]),
        [
            (CapabilityMisspelt, Some(1)),
            (CapabilityListEntryKind, Some(1))
        ]
    );
    assert_eq!(
        entries(K::CapabilityList, &["mirrorlist"]),
        [(CapabilityUnknown, Some(1))]
    );
    // Source Description: a near miss of capabilitylist is only misspelt; any other value
    // is an error of the Source Description, not also an unknown capability.
    assert_eq!(
        entries(K::SourceDescription, &["CapabilityList"]),
        [(CapabilityMisspelt, Some(1))]
    );
    assert_eq!(
        entries(K::SourceDescription, &["mirrorlist"]),
        [(SourceDescriptionEntryCapability, Some(1))]
    );
    assert_eq!(
        entries(K::SourceDescription, &["ResourceList"]),
        [
            (CapabilityMisspelt, Some(1)),
            (SourceDescriptionEntryCapability, Some(1))
        ]
    );
}
