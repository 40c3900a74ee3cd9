//! Every rule of the catalogue, broken once and kept once.
//!
//! Each test is named after the rule it exercises. A document case starts from a clean
//! document of a kind (one that breaks no rule), changes it once so that the rule breaks
//! and once so that it is kept, often right at the rule's boundary. A value case parses
//! a bad and a good text. `every_rule_has_a_case` fails when a rule is added to the
//! catalogue without a case here.

use resourcesync_model::{
    BitstreamPath, Capability, Change, CheckOptions, Document, DocumentKind as K, Entry,
    HashAlgorithm, Hashes, Link, Md, MediaType, Priority, Relation, Root, Rule, RuleError,
    Severity, Uri, W3cDateTime, check_with, parse_length,
};
use rstest::rstest;

use crate::common;

fn url(s: &str) -> resourcesync_model::Uri {
    Uri::parse(s).unwrap()
}

fn t(s: &str) -> W3cDateTime {
    s.parse().unwrap()
}

fn md5() -> Hashes {
    "md5:1584abdf8ebdc9802ac0c6a7402c03b6".parse().unwrap()
}

fn link(rel: Relation, href: &str) -> Link {
    Link::new(rel, url(href))
}

trait WithType {
    fn with_type(self, media_type: &str) -> Self;
}

impl WithType for Link {
    fn with_type(mut self, media_type: &str) -> Link {
        self.media_type = Some(media_type.parse().unwrap());
        self
    }
}

/// One entry that breaks no rule in a document of `kind`, for the `n`th hour of the day.
fn clean_entry(kind: K, n: u32) -> Entry {
    let mut e = Entry::new(url(&format!("http://example.com/res{n}")));
    let time = t(&format!("2013-01-03T{n:02}:00:00Z"));
    let mut md = Md::default();
    match kind {
        K::ChangeList | K::ChangeNotification => {
            md.change = Some(Change::Updated);
            md.datetime = Some(time);
        }
        K::FrameworkNotification => {
            md.change = Some(Change::Created);
            md.datetime = Some(time);
            md.capability = Some(Capability::ResourceList);
        }
        K::ChangeDumpManifest => {
            md.change = Some(Change::Updated);
            md.datetime = Some(time);
            md.path = Some(BitstreamPath::new(format!("/changes/res{n}")));
            md.media_type = Some("text/html".parse().unwrap());
        }
        K::ResourceDumpManifest => {
            md.path = Some(BitstreamPath::new(format!("/resources/res{n}")));
            md.media_type = Some("text/html".parse().unwrap());
        }
        K::ResourceDump => {
            md.media_type = Some("application/zip".parse().unwrap());
            md.length = Some(4765);
            md.at = Some(time);
        }
        K::ChangeDump => {
            md.media_type = Some("application/zip".parse().unwrap());
            md.length = Some(4765);
            md.from = Some(time);
        }
        K::ChangeListIndex | K::ChangeDumpIndex | K::ChangeListArchive | K::ChangeDumpArchive => {
            md.from = Some(time);
        }
        K::ResourceListArchive | K::ResourceDumpArchive => md.at = Some(time),
        K::CapabilityList => md.capability = Some(Capability::ResourceList),
        K::SourceDescription => {
            md.capability = Some(Capability::CapabilityList);
            e.links
                .push(link(Relation::DescribedBy, "http://example.com/about-set1"));
        }
        _ => {}
    }
    e.md = Some(md);
    e
}

/// A document of `kind` with one entry that breaks no rule.
fn clean(kind: K) -> Document {
    let mut head = common::clean_head(kind);
    if matches!(kind, K::SourceDescription | K::CapabilityList) {
        head.links
            .push(link(Relation::DescribedBy, "http://example.com/about"));
    }
    let mut doc = Document::new(head);
    doc.entries.push(clean_entry(kind, 1));
    doc
}

fn md(doc: &mut Document, i: usize) -> &mut Md {
    doc.entries[i].md.get_or_insert_with(Md::default)
}

type Change1 = Box<dyn FnOnce(&mut Document)>;

enum Case {
    Doc {
        kind: K,
        options: CheckOptions,
        broken: Change1,
        kept: Change1,
    },
    /// The rule of the error from parsing a bad text, and whether a good text parsed.
    Value { broken: Rule, kept: bool },
}

fn doc(
    kind: K,
    broken: impl FnOnce(&mut Document) + 'static,
    kept: impl FnOnce(&mut Document) + 'static,
) -> Case {
    Case::Doc {
        kind,
        options: CheckOptions::default(),
        broken: Box::new(broken),
        kept: Box::new(kept),
    }
}

fn value<T, E: RuleError>(bad: Result<T, E>, good: Result<T, E>) -> Case {
    let Err(e) = bad else {
        panic!("the bad value parsed");
    };
    Case::Value {
        broken: e.rule(),
        kept: good.is_ok(),
    }
}

fn keep(_: &mut Document) {}

impl Case {
    fn run(self, rule: Rule) {
        match self {
            Case::Value { broken, kept } => {
                assert_eq!(broken, rule, "the bad value breaks another rule");
                assert!(kept, "the good value was refused");
            }
            Case::Doc {
                kind,
                options,
                broken,
                kept,
            } => {
                let mut d = clean(kind);
                broken(&mut d);
                let findings = check_with(&d, options);
                let found = findings.iter().find(|f| f.rule == rule);
                let found = found.unwrap_or_else(|| panic!("{rule:?} not reported: {findings:#?}"));
                assert_eq!(found.severity(), rule.severity());
                assert!(rule.section().contains(found.section) || found.section == kind.section());

                let mut d = clean(kind);
                kept(&mut d);
                let findings = check_with(&d, options);
                assert!(
                    findings.iter().all(|f| f.rule != rule),
                    "{rule:?} reported on the kept document: {findings:#?}"
                );
            }
        }
    }
}

macro_rules! rules {
    (
        read_time { $($read_name:ident: $read_rule:expr,)+ }
        $($name:ident: $rule:expr => $case:expr;)+
    ) => {
        $(
            #[test]
            fn $name() {
                let case: Case = $case;
                case.run($rule);
            }
        )+

        #[test]
        fn every_rule_has_a_case() {
            let mut covered = vec![$($rule),+];
            covered.extend([$($read_rule),+]);
            for rule in Rule::ALL {
                assert!(covered.contains(rule), "{rule:?} has no test");
            }
            for (i, rule) in covered.iter().enumerate() {
                assert!(!covered[..i].contains(rule), "{rule:?} has two tests");
            }
        }

        /// One test per rule of the catalogue, by [`in_the_catalogue`].
        mod catalogue {
            use super::*;

            $(
                #[test]
                fn $read_name() {
                    super::in_the_catalogue($read_rule);
                }
            )+
            $(
                #[test]
                fn $name() {
                    super::in_the_catalogue($rule);
                }
            )+
        }
    };
}

rules! {
    // Rules about the XML form of a document or a package, which no model value can break:
    // readers report them. `resourcesync-xml/tests/xml/rules.rs` breaks and keeps the first
    // ten, `resourcesync-package/tests/package/rules.rs` the last two.
    read_time {
        sitemap_namespace: Rule::SitemapNamespace,
        head_before_entries: Rule::HeadBeforeEntries,
        attribute_unknown: Rule::AttributeUnknown,
        max_bytes: Rule::MaxBytes,
        resourcesync_namespace: Rule::ResourceSyncNamespace,
        attribute_prefix: Rule::AttributePrefix,
        entry_element: Rule::EntryElement,
        loc_mandatory: Rule::LocMandatory,
        link_rel_href_mandatory: Rule::LinkRelHrefMandatory,
        md_not_repeatable: Rule::MdNotRepeatable,
        bitstream_fixity: Rule::BitstreamFixity,
        unlisted_file: Rule::UnlistedFile,
    }

    // Values.
    datetime_syntax: Rule::DatetimeSyntax =>
        value("2013-02-30".parse::<W3cDateTime>(), "2013-02-28".parse());
    datetime_recommended_form: Rule::DatetimeForm => doc(K::ResourceList,
        |d| d.head.md.at = Some(t("2013-01-03T10:00+01:00")),
        |d| d.head.md.at = Some(t("2013-01-03T09:00:00.5Z")));
    hash_syntax: Rule::HashSyntax =>
        value("md5:f40xZX_x_DFG".parse::<Hashes>(), "md5:1584abdf8ebdc9802ac0c6a7402c03b6".parse());
    hash_digest_length: Rule::HashDigestLength =>
        value("sha-256:1584abdf8ebdc9802ac0c6a7402c03b6".parse::<Hashes>(),
              "sha-256:854f61290e2e197a11bc91063afce22e43f8ccc655237050ace766adc68dc784".parse());
    hash_conflict: Rule::HashConflict =>
        value("md5:1584abdf8ebdc9802ac0c6a7402c03b6 md5:1e0d5cb8ef6ba40c99b14c0237be735e".parse::<Hashes>(),
              "md5:1584abdf8ebdc9802ac0c6a7402c03b6 MD5:1584ABDF8EBDC9802AC0C6A7402C03B6".parse());
    hash_algorithm_unknown: Rule::HashAlgorithmUnknown => doc(K::ResourceList,
        |d| md(d, 0).hash = Some("blake3:abcd".parse().unwrap()),
        |d| md(d, 0).hash = Some(md5()));
    hash_base64: Rule::HashBase64 => doc(K::ResourceList,
        |d| md(d, 0).hash = Some("md5:FYSr3469yYAqwManQCwDtg==".parse().unwrap()),
        |d| md(d, 0).hash = Some(md5()));
    hash_uncheckable: Rule::HashUncheckable => doc(K::ResourceList,
        |d| md(d, 0).hash = Some("sha-1:aaf4c61ddcc5e8a2dabede0f3b482cd9aea9434d".parse().unwrap()),
        |d| md(d, 0).hash = Some(md5()));
    length_syntax: Rule::LengthSyntax => value(parse_length("-1"), parse_length("0"));
    pri_range: Rule::PriorityRange =>
        value("1000000".parse::<Priority>(), "999999".parse());
    change_value: Rule::ChangeValue => value("removed".parse::<Change>(), "deleted".parse());
    changefreq_value: Rule::ChangefreqValue =>
        value("sometimes".parse::<resourcesync_model::ChangeFreq>(), "never".parse());
    capability_unknown: Rule::CapabilityUnknown => doc(K::CapabilityList,
        |d| md(d, 0).capability = Some(Capability::from("mirrorlist")),
        |d| md(d, 0).capability = Some(Capability::ChangeDumpArchive));
    capability_misspelt: Rule::CapabilityMisspelt => doc(K::CapabilityList,
        |d| md(d, 0).capability = Some(Capability::from("ResourceList")),
        |d| md(d, 0).capability = Some(Capability::from("x-resourcelist")));
    rel_syntax: Rule::RelationSyntax =>
        value("my rel".parse::<Relation>(), "http://example.org/rels/my".parse());
    type_syntax: Rule::MediaTypeSyntax =>
        value("zip".parse::<MediaType>(), "application/vnd.example+zip; v=1".parse());
    uri_syntax: Rule::UriSyntax =>
        value(Uri::parse("/res1"), Uri::parse("http://example.com/res1"));
    // "less than 2,048 characters": 19 + 2029 = 2048 breaks it, 2047 keeps it.
    uri_length: Rule::UriLength => doc(K::ResourceList,
        |d| d.entries[0].loc = url(&format!("http://example.com/{}", "a".repeat(2029))),
        |d| d.entries[0].loc = url(&format!("http://example.com/{}", "a".repeat(2028))));
    uri_unsafe_scheme: Rule::UriScheme => doc(K::ChangeList,
        |d| d.entries[0].links.push(link(Relation::Duplicate, "file:///etc/passwd")),
        |d| d.entries[0].links.push(link(Relation::Duplicate, "ftp://mirror.example.com/res1")));
    uri_scheme_not_http: Rule::UriSchemeNotHttp => doc(K::ResourceList,
        |d| d.entries[0].loc = url("ftp://example.com/res1"),
        |d| d.entries[0].loc = url("HTTPS://example.com/res1"));
    uri_userinfo: Rule::UriUserinfo => doc(K::ResourceList,
        |d| d.entries[0].loc = url("http://example.com@evil.example/res1"),
        |d| d.entries[0].loc = url("http://example.com/res1@evil.example"));
    uri_bidi: Rule::UriBidi => doc(K::ResourceList,
        |d| d.entries[0].loc = url("http://example.com/res1\u{202E}fdp.exe"),
        |d| d.entries[0].loc = url("http://example.com/r\u{e9}s1"));

    // Documents.
    capability_mandatory: Rule::CapabilityMandatory => doc(K::ResourceList,
        |d| d.head.md.capability = None, keep);
    manifest_not_index: Rule::ManifestIndex => doc(K::ResourceDumpManifest,
        |d| d.head.root = Root::SitemapIndex, keep);
    notification_not_index: Rule::NotificationIndex => doc(K::ChangeNotification,
        |d| d.head.root = Root::SitemapIndex, keep);
    capabilitylist_index: Rule::CapabilityListIndex => doc(K::CapabilityList,
        |d| d.head.root = Root::SitemapIndex, keep);
    max_entries: Rule::MaxEntries => doc(K::ChangeList,
        |d| { let e = d.entries[0].clone(); d.entries.resize(50_001, e) },
        |d| { let e = d.entries[0].clone(); d.entries.resize(50_000, e) });

    // Appendix A and intervals.
    at_mandatory: Rule::AtMandatory => doc(K::ResourceDumpManifest,
        |d| d.head.md.at = None, keep);
    from_mandatory: Rule::FromMandatory => doc(K::ChangeDumpIndex,
        |d| d.head.md.from = None, keep);
    // A framework notification's from and until are optional.
    until_mandatory: Rule::UntilMandatory => doc(K::ChangeNotification,
        |d| d.head.md.until = None,
        |d| d.head.md.from = Some(t("2013-01-03T01:00:00Z")));
    at_not_used: Rule::AtNotUsed => doc(K::ChangeList,
        |d| d.head.md.completed = Some(t("2013-01-04T00:00:00Z")),
        |d| d.head.md.until = Some(t("2013-01-04T00:00:00Z")));
    from_not_used: Rule::FromNotUsed => doc(K::ResourceList,
        |d| d.head.md.from = Some(t("2013-01-01T00:00:00Z")),
        |d| d.head.md.completed = Some(t("2013-01-03T09:01:00Z")));
    entry_at_not_used: Rule::EntryAtNotUsed => doc(K::ChangeDumpIndex,
        |d| md(d, 0).at = Some(t("2013-01-03T00:00:00Z")),
        |d| md(d, 0).until = Some(t("2013-01-04T00:00:00Z")));
    entry_from_not_used: Rule::EntryFromNotUsed => doc(K::ResourceListIndex,
        |d| md(d, 0).until = Some(t("2013-01-03T00:00:00Z")),
        |d| md(d, 0).at = Some(t("2013-01-03T00:00:00Z")));
    entry_from_recommended: Rule::EntryFromRecommended => doc(K::ChangeListIndex,
        |d| d.entries[0].md = None, keep);
    entry_at_recommended: Rule::EntryAtRecommended => doc(K::ResourceDumpArchive,
        |d| md(d, 0).at = None, keep);
    completed_before_at: Rule::CompletedBeforeAt => doc(K::ResourceList,
        |d| d.head.md.completed = Some(t("2013-01-03T08:59:59Z")),
        |d| d.head.md.completed = Some(t("2013-01-03T10:00+01:00")));
    until_before_from: Rule::UntilBeforeFrom => doc(K::ChangeDump,
        |d| md(d, 0).until = Some(t("2013-01-03T00:59:59Z")),
        |d| md(d, 0).until = Some(t("2013-01-03T01:00:00Z")));
    datetime_in_interval: Rule::DatetimeOutsideInterval => doc(K::ChangeList,
        |d| { d.head.md.until = Some(t("2013-01-03T00:30:00Z")); }, // entry is at 01:00
        |d| {
            d.head.md.until = Some(t("2013-01-03T01:00:00Z"));
            md(d, 0).datetime = Some(t("2013-01-03T02:00+01:00")); // = until, in another offset
        });

    // Order.
    changelist_order: Rule::ChangeListOrder => order(K::ChangeList);
    changelist_index_order: Rule::ChangeListIndexOrder => order(K::ChangeListIndex);
    changedump_order: Rule::ChangeDumpOrder => order(K::ChangeDump);
    changedump_index_order: Rule::ChangeDumpIndexOrder => order(K::ChangeDumpIndex);
    changedump_manifest_order: Rule::ChangeDumpManifestOrder => order(K::ChangeDumpManifest);
    changelist_archive_order: Rule::ChangeListArchiveOrder => order(K::ChangeListArchive);
    change_notification_order: Rule::ChangeNotificationOrder => order(K::ChangeNotification);
    changedump_archive_order: Rule::ChangeDumpArchiveOrder => order(K::ChangeDumpArchive);

    // Links.
    up_link_mandatory: Rule::UpLinkMandatory => doc(K::ChangeListArchive,
        |d| d.head.links.clear(), keep);
    index_link_recommended: Rule::IndexLinkRecommended => Case::Doc {
        kind: K::ResourceList,
        options: CheckOptions::part_of_index(true),
        broken: Box::new(keep),
        kept: Box::new(|d| d.head.links.push(link(Relation::Index, "http://example.com/index.xml"))),
    };
    describedby_link_recommended: Rule::DescribedbyLinkRecommended => doc(K::SourceDescription,
        |d| d.head.links.clear(), keep);
    entry_describedby_recommended: Rule::EntryDescribedbyRecommended => doc(K::SourceDescription,
        |d| d.entries[0].links.clear(), keep);
    patch_link_type: Rule::PatchLinkType => doc(K::ChangeList,
        |d| d.entries[0].links.push(link(Relation::Patch, "http://example.com/res1.patch")),
        |d| {
            let mut l = link(Relation::Patch, "http://example.com/res1.patch");
            l.media_type = Some("application/json-patch+json".parse().unwrap());
            d.entries[0].links.push(l);
        });
    patch_link_path: Rule::PatchLinkPath => doc(K::ChangeDumpManifest,
        |d| {
            let mut l = link(Relation::Patch, "http://example.com/res1.patch");
            l.media_type = Some("application/json-patch+json".parse().unwrap());
            d.entries[0].links.push(l);
        },
        |d| {
            let mut l = link(Relation::Patch, "http://example.com/res1.patch");
            l.media_type = Some("application/json-patch+json".parse().unwrap());
            l.path = Some("/changes/res1.patch".into());
            d.entries[0].links.push(l);
        });
    patch_link_not_applicable: Rule::PatchLinkNotApplicable => doc(K::ResourceList,
        |d| {
            let mut l = link(Relation::Patch, "http://example.com/res1.patch");
            l.media_type = Some("application/json-patch+json".parse().unwrap());
            d.entries[0].links.push(l);
        },
        |d| d.entries[0].links.push(link(Relation::Alternate, "http://example.com/res1.patch")
            .with_type("application/json-patch+json")));
    duplicate_link_attributes: Rule::DuplicateLinkAttributes => doc(K::ChangeList,
        |d| {
            let mut l = link(Relation::Duplicate, "http://mirror.example.com/res1");
            l.length = Some(8876);
            d.entries[0].links.push(l);
        },
        |d| {
            let mut l = link(Relation::Duplicate, "http://mirror.example.com/res1");
            l.pri = Some(Priority::new(1).unwrap());
            l.modified = Some(t("2013-01-03T18:00:00Z"));
            d.entries[0].links.push(l);
        });
    alternate_link_type: Rule::AlternateLinkType => doc(K::ResourceList,
        |d| d.entries[0].links.push(link(Relation::Alternate, "http://example.com/res1.html")),
        |d| d.entries[0].links.push(link(Relation::Alternate, "http://example.com/res1.html")
            .with_type("text/html")));
    timegate_link_attributes: Rule::TimegateLinkAttributes => doc(K::ChangeList,
        |d| {
            let mut l = link(Relation::TimeGate, "http://example.com/timegate/res1");
            l.hash = Some(md5());
            d.entries[0].links.push(l);
        },
        |d| d.entries[0].links.push(link(Relation::TimeGate, "http://example.com/timegate/res1")));

    // Entries.
    change_mandatory: Rule::ChangeMandatory => doc(K::ChangeDumpManifest,
        |d| md(d, 0).change = None, keep);
    framework_notification_entry_capability: Rule::FrameworkNotificationEntryCapability =>
        doc(K::FrameworkNotification,
            |d| md(d, 0).capability = None,
            |d| md(d, 0).capability = Some(Capability::ChangeDumpArchive));
    change_not_used: Rule::ChangeNotUsed => doc(K::ResourceList,
        |d| md(d, 0).change = Some(Change::Created),
        keep);
    resourcedump_manifest_deleted: Rule::ResourceDumpManifestDeleted => doc(K::ResourceDumpManifest,
        |d| md(d, 0).change = Some(Change::Deleted),
        keep);
    loc_duplicate: Rule::LocDuplicate => doc(K::ResourceList,
        |d| { let e = d.entries[0].clone(); d.entries.push(e) },
        |d| d.entries.push(clean_entry(K::ResourceList, 2)));
    path_mandatory: Rule::PathMandatory => doc(K::ChangeDumpManifest,
        |d| md(d, 0).path = None,
        |d| { md(d, 0).change = Some(Change::Deleted); md(d, 0).path = None; });
    path_leading_slash: Rule::PathLeadingSlash => doc(K::ResourceDumpManifest,
        |d| md(d, 0).path = Some("resources/res1".into()),
        |d| md(d, 0).path = Some("/resources/res1".into()));
    path_climbs_out: Rule::PathClimbsOut => doc(K::ResourceDumpManifest,
        |d| md(d, 0).path = Some("/resources/../../etc/passwd".into()),
        |d| md(d, 0).path = Some("/resources/../res1".into()));
    path_names_no_file: Rule::PathNamesNoFile => doc(K::ResourceDumpManifest,
        |d| md(d, 0).path = Some("//host/share/res1".into()),
        |d| md(d, 0).path = Some("/resources/res1".into()));
    path_duplicate: Rule::PathDuplicate => doc(K::ChangeDumpManifest,
        |d| {
            let mut e = clean_entry(K::ChangeDumpManifest, 23);
            e.md.as_mut().unwrap().path = md(d, 0).path.clone();
            d.entries.push(e);
        },
        |d| {
            // A deletion has no bitstream, so it shares no path.
            let mut e = clean_entry(K::ChangeDumpManifest, 23);
            e.md.as_mut().unwrap().path = md(d, 0).path.clone();
            e.md.as_mut().unwrap().change = Some(Change::Deleted);
            d.entries.push(e);
        });
    path_outside_manifest: Rule::PathOutsideManifest => doc(K::ResourceList,
        |d| md(d, 0).path = Some("/resources/res1".into()), keep);
    manifest_type_recommended: Rule::ManifestTypeRecommended => doc(K::ChangeDumpManifest,
        |d| md(d, 0).media_type = None,
        |d| {
            let m = md(d, 0);
            m.change = Some(Change::Deleted);
            m.media_type = None;
            m.path = None;
        });
    capabilitylist_entry_capability: Rule::CapabilityListEntryCapability => doc(K::CapabilityList,
        |d| d.entries[0].md = None, keep);
    capabilitylist_duplicate: Rule::CapabilityListDuplicate => doc(K::CapabilityList,
        |d| { let e = d.entries[0].clone(); d.entries.push(e) },
        |d| {
            let mut e = d.entries[0].clone();
            md(d, 0).capability = Some(Capability::ResourceListArchive);
            e.md = Some(Md::new().with_capability(Capability::ChangeList));
            d.entries.push(e);
        });
    capabilitylist_entry_kind: Rule::CapabilityListEntryKind => doc(K::CapabilityList,
        |d| md(d, 0).capability = Some(Capability::Description),
        |d| md(d, 0).capability = Some(Capability::ChangeListArchive));
    notification_channel_hub: Rule::NotificationChannelHub => doc(K::CapabilityList,
        |d| {
            md(d, 0).capability = Some(Capability::ChangeNotification);
            d.entries[0].loc = url("http://example.com/dataset1/change/");
            // A link, but not to the hub.
            d.entries[0].links.push(link(Relation::DescribedBy, "http://example.com/hub"));
        },
        |d| {
            md(d, 0).capability = Some(Capability::FrameworkNotification);
            d.entries[0].links.push(link(Relation::Hub, "http://hub.example.org/websub/"));
        });
    description_entry_md: Rule::SourceDescriptionEntryMd => doc(K::SourceDescription,
        |d| d.entries[0].md = None, keep);
    description_entry_capability: Rule::SourceDescriptionEntryCapability => doc(K::SourceDescription,
        |d| md(d, 0).capability = None,
        |d| d.entries[0].md = None);
    dump_package_metadata: Rule::DumpPackageMetadata => doc(K::ResourceDump,
        |d| md(d, 0).length = None, keep);
    dump_package_format: Rule::DumpPackageFormat => doc(K::ChangeDump,
        |d| {
            let mut e = clean_entry(K::ChangeDump, 2);
            e.md.as_mut().unwrap().media_type = Some("application/x-tar".parse().unwrap());
            d.entries.push(e);
        },
        |d| {
            let mut e = clean_entry(K::ChangeDump, 2);
            e.md.as_mut().unwrap().media_type = Some("Application/ZIP; v=2".parse().unwrap());
            d.entries.push(e);
        });
}

/// Breaks a kind's order rule with a later entry listed first; keeps it with two entries
/// at the same instant written in different offsets, then a later one.
fn order(kind: K) -> Case {
    doc(
        kind,
        move |d| {
            d.entries.insert(0, clean_entry(kind, 3));
            d.entries.push(clean_entry(kind, 2));
        },
        move |d| {
            let mut same = clean_entry(kind, 1);
            let m = same.md.as_mut().unwrap();
            let shifted = t("2013-01-03T02:00+01:00");
            if m.datetime.is_some() {
                m.datetime = Some(shifted);
            } else {
                m.from = Some(shifted);
            }
            d.entries.push(same);
            d.entries.push(clean_entry(kind, 2));
        },
    )
}

/// The clean document of `kind` breaks no rule (but the one a Capability List Index always
/// breaks).
fn clean_document_breaks_no_rule(kind: K) {
    let findings = check_with(&clean(kind), CheckOptions::default());
    let expected: &[Rule] = match kind {
        K::CapabilityListIndex => &[Rule::CapabilityListIndex],
        _ => &[],
    };
    let rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, expected, "{kind:?}: {findings:#?}");
}
per_kind!(clean_document_breaks_no_rule);

#[test]
fn findings_name_the_entry_and_the_kinds_section() {
    let mut d = clean(K::ChangeDumpManifest);
    d.entries.push(clean_entry(K::ChangeDumpManifest, 2));
    d.entries[1].md.as_mut().unwrap().path = Some("res2".into());
    d.head.links.clear();
    let findings = check_with(&d, CheckOptions::default());
    let up = findings
        .iter()
        .find(|f| f.rule == Rule::UpLinkMandatory)
        .unwrap();
    assert_eq!((up.section, up.entry), ("13.2", None));
    assert_eq!(up.severity(), Severity::Error);
    let slash = findings
        .iter()
        .find(|f| f.rule == Rule::PathLeadingSlash)
        .unwrap();
    assert_eq!(slash.entry, Some(2));
    assert_eq!(
        slash.to_string(),
        "error [path-leading-slash, section 11.2, 13.2] entry 2: path \"res2\" on rs:md does not start with a slash"
    );
}

/// A rule of the catalogue: its id is its own and reads back, it has a message and a
/// section, and every part of its section is a section of the standard (4 to 14, with
/// subsections), Appendix A, a section of the Archives or of a Notification specification,
/// the Sitemap protocol or an RFC.
fn in_the_catalogue(rule: Rule) {
    assert_eq!(Rule::from_id(rule.id()), Some(rule));
    assert_eq!(
        Rule::ALL.iter().filter(|r| r.id() == rule.id()).count(),
        1,
        "{rule:?}: id {} is not unique",
        rule.id()
    );
    assert!(!rule.message().is_empty() && !rule.section().is_empty());
    for part in rule.section().split(", ") {
        let standard = part.split('.').all(|n| n.parse::<u32>().is_ok())
            && part
                .split('.')
                .next()
                .and_then(|n| n.parse::<u32>().ok())
                .is_some_and(|n| (4..=14).contains(&n));
        let known = standard
            || part == "Appendix A"
            || part.starts_with("Archives ")
            || part.starts_with("Change Notification ")
            || part.starts_with("Framework Notification ")
            || part == "Sitemap protocol"
            || part.starts_with("RFC ");
        assert!(known, "{rule:?}: {part}");
    }
}

#[test]
fn unknown_hash_algorithms_are_kept() {
    let h: Hashes = "md5:1584abdf8ebdc9802ac0c6a7402c03b6 x-crc32:0a1b2c3d"
        .parse()
        .unwrap();
    assert!(h.get(&HashAlgorithm::Other("x-crc32".into())).is_some());
    assert_eq!(
        h.to_string(),
        "md5:1584abdf8ebdc9802ac0c6a7402c03b6 x-crc32:0a1b2c3d"
    );
}

/// "not used" is stated in section 7, not in Appendix A.
#[rstest]
#[case::at_not_used(Rule::AtNotUsed)]
#[case::from_not_used(Rule::FromNotUsed)]
#[case::entry_at_not_used(Rule::EntryAtNotUsed)]
#[case::entry_from_not_used(Rule::EntryFromNotUsed)]
#[case::change_not_used(Rule::ChangeNotUsed)]
#[case::path_outside_manifest(Rule::PathOutsideManifest)]
fn not_used_is_stated_in_section_7(#[case] rule: Rule) {
    assert_eq!(rule.section(), "7", "{rule:?}");
}

#[test]
fn sections_outside_the_standard() {
    assert_eq!(Rule::UriLength.section(), "Sitemap protocol");
    assert_eq!(Rule::UriBidi.section(), "RFC 3987 4.1");
}

/// Rules with no text of the standard behind them say so.
#[rstest]
#[case::uri_scheme(Rule::UriScheme)]
#[case::uri_scheme_not_http(Rule::UriSchemeNotHttp)]
#[case::uri_userinfo(Rule::UriUserinfo)]
#[case::hash_algorithm_unknown(Rule::HashAlgorithmUnknown)]
#[case::hash_uncheckable(Rule::HashUncheckable)]
fn rules_with_no_text_of_the_standard_say_so(#[case] rule: Rule) {
    assert!(
        rule.message().contains("not a rule of the standard's text"),
        "{rule:?}: {}",
        rule.message()
    );
}
