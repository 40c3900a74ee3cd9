//! One fault, one finding: an attribute a reader found present but malformed (and reported)
//! is not also reported missing, nor a link it dropped for a malformed `href`.

use resourcesync_model::{
    AttributeName as A, Attributes, Capability, Change, CheckOptions, Checker, DocumentHead,
    DocumentKind as K, Entry, Finding, Link, Malformed, Md, Relation, Rule,
};

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

#[test]
fn malformed_head_attributes_are_not_also_missing() {
    // (kind, the attribute left out, the rule that reports it missing)
    let rows = [
        (K::ResourceList, A::At, Rule::AtMandatory),
        (K::ResourceListIndex, A::At, Rule::AtMandatory),
        (K::ResourceDumpManifest, A::At, Rule::AtMandatory),
        (K::ChangeList, A::From, Rule::FromMandatory),
        (K::ChangeDumpIndex, A::From, Rule::FromMandatory),
        (K::ChangeDumpManifest, A::From, Rule::FromMandatory),
    ];
    for (kind, attribute, rule) in rows {
        let mut head = DocumentHead::of_kind(kind);
        head.links.push(up());
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
    // capability
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

#[test]
fn dropped_links_are_not_also_missing() {
    // (kind, relation dropped, rule, options)
    let rows = [
        (
            K::ResourceList,
            Relation::Up,
            Rule::UpLinkMandatory,
            CheckOptions::default(),
        ),
        (
            K::CapabilityList,
            Relation::Up,
            Rule::UpLinkMandatory,
            CheckOptions::default(),
        ),
        (
            K::ChangeList,
            Relation::Index,
            Rule::IndexLinkRecommended,
            CheckOptions::part_of_index(true),
        ),
        (
            K::SourceDescription,
            Relation::DescribedBy,
            Rule::DescribedbyLinkRecommended,
            CheckOptions::default(),
        ),
    ];
    for (kind, rel, rule, options) in rows {
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

#[test]
fn malformed_entry_attributes_are_not_also_missing() {
    let md = |md: Md| {
        let mut e = Entry::new("http://example.com/res1".parse().unwrap());
        e.md = Some(md);
        e
    };
    let manifest = Md::new()
        .with_change(Change::Updated)
        .with_path("/changes/res1".into())
        .with_media_type("text/html".parse().unwrap());
    let package = Md::new()
        .with_media_type("application/zip".parse().unwrap())
        .with_length(1)
        .with_from(t("2013-01-03T00:00:00Z"));
    // (kind, entry, the malformed attribute, the rule that reports it missing)
    let rows: Vec<(K, Entry, A, Rule)> = vec![
        (
            K::ChangeList,
            md(Md::default()),
            A::Change,
            Rule::ChangeMandatory,
        ),
        (
            K::ChangeDumpManifest,
            md({
                let mut md = manifest.clone();
                md.change = None;
                md
            }),
            A::Change,
            Rule::ChangeMandatory,
        ),
        (
            K::ChangeDumpManifest,
            md({
                let mut md = manifest.clone();
                md.path = None;
                md
            }),
            A::Path,
            Rule::PathMandatory,
        ),
        (
            K::ChangeDumpManifest,
            md({
                let mut md = manifest.clone();
                md.media_type = None;
                md
            }),
            A::Type,
            Rule::ManifestTypeRecommended,
        ),
        (
            K::ResourceDumpManifest,
            md({
                let mut md = manifest.clone();
                md.change = None;
                md.path = None;
                md
            }),
            A::Path,
            Rule::PathMandatory,
        ),
        (
            K::ChangeDump,
            md({
                let mut md = package.clone();
                md.media_type = None;
                md
            }),
            A::Type,
            Rule::DumpPackageMetadata,
        ),
        (
            K::ChangeDump,
            md({
                let mut md = package.clone();
                md.length = None;
                md
            }),
            A::Length,
            Rule::DumpPackageMetadata,
        ),
        (
            K::ChangeDump,
            md({
                let mut md = package.clone();
                md.from = None;
                md
            }),
            A::From,
            Rule::EntryFromRecommended,
        ),
        (
            K::ChangeListIndex,
            md(Md::default()),
            A::From,
            Rule::EntryFromRecommended,
        ),
        (
            K::ResourceDumpArchive,
            md(Md::default()),
            A::At,
            Rule::EntryAtRecommended,
        ),
        (
            K::CapabilityList,
            md(Md::default()),
            A::Capability,
            Rule::CapabilityListEntryCapability,
        ),
        (
            K::SourceDescription,
            md(Md::default()),
            A::Capability,
            Rule::SourceDescriptionEntryCapability,
        ),
    ];
    for (kind, entry, attribute, rule) in rows {
        let mut entry = entry;
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
}

#[test]
fn malformed_link_attributes_are_not_also_missing() {
    let patch = Link::new(
        Relation::Patch,
        "http://example.com/res1.diff".parse().unwrap(),
    );
    let alternate = Link::new(
        Relation::Alternate,
        "http://example.com/res1.pdf".parse().unwrap(),
    );
    let mut typed_patch = patch.clone();
    typed_patch.media_type = Some("application/json-patch+json".parse().unwrap());
    let rows: Vec<(K, Link, A, Rule)> = vec![
        (K::ChangeList, patch.clone(), A::Type, Rule::PatchLinkType),
        (
            K::ChangeDumpManifest,
            typed_patch,
            A::Path,
            Rule::PatchLinkPath,
        ),
        (K::ResourceList, alternate, A::Type, Rule::AlternateLinkType),
    ];
    for (kind, link, attribute, rule) in rows {
        let mut entry = Entry::new("http://example.com/res1".parse().unwrap());
        entry.md = Some({
            let mut md = Md::new();
            md.change =
                matches!(kind, K::ChangeList | K::ChangeDumpManifest).then_some(Change::Updated);
            md.path = (kind == K::ChangeDumpManifest).then(|| "/res1".into());
            md.media_type = (kind == K::ChangeDumpManifest).then(|| "text/html".parse().unwrap());
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
    // A dropped describedby link on a Source Description entry.
    let mut entry = Entry::new("http://example.com/caps.xml".parse().unwrap());
    entry.md = Some(Md::new().with_capability(Capability::CapabilityList));
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

#[test]
fn attribute_names_and_sets() {
    for a in A::ALL {
        assert_eq!(A::from_name(a.as_str()), Some(a));
        assert_eq!(a.to_string(), a.as_str());
        let set = Attributes::NONE.with(a);
        assert_eq!(set.iter().collect::<Vec<_>>(), [a]);
        assert!(!set.is_empty());
    }
    let all: Attributes = A::ALL.into_iter().collect();
    assert_eq!(all.iter().count(), A::ALL.len());
    for bad in ["At", "lenght", "rs:at", ""] {
        assert_eq!(A::from_name(bad), None, "{bad}");
    }
    assert_eq!(
        format!("{:?}", Attributes::NONE.with(A::At).with(A::Type)),
        "{At, Type}"
    );
}
