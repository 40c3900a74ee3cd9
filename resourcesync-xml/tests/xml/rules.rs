//! The rules about a document's XML form, which only a reader can break: each is broken
//! once and kept once (the model's tests cover every other rule).

use resourcesync_model::Rule;
use resourcesync_xml::Limits;

use crate::read_everywhere;

const NS: &str = r#"xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/""#;

fn doc(root: &str, attrs: &str, body: &str) -> Vec<u8> {
    format!(
        r#"<{root} {attrs}><rs:ln rel="up" href="http://e.com/caps.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>{body}</{root}>"#
    )
    .into_bytes()
}

fn findings(bytes: &[u8]) -> Vec<Rule> {
    let (_, findings) = read_everywhere(bytes, Limits::default())
        .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(bytes)));
    findings.iter().map(|f| f.rule).collect()
}

fn case(rule: Rule, broken: Vec<u8>, kept: Vec<u8>) {
    assert!(findings(&broken).contains(&rule), "{rule:?} not reported");
    assert!(
        !findings(&kept).contains(&rule),
        "{rule:?} reported on the kept document"
    );
}

const ENTRY: &str = "<url><loc>http://e.com/a</loc></url>";

#[test]
fn sitemap_namespace() {
    case(
        Rule::SitemapNamespace,
        doc(
            "urlset",
            r#"xmlns:rs="http://www.openarchives.org/rs/terms/""#,
            ENTRY,
        ),
        doc("urlset", NS, ENTRY),
    );
    // A root without namespace is still read as a Sitemap.
    let bytes = doc(
        "urlset",
        r#"xmlns:rs="http://www.openarchives.org/rs/terms/""#,
        ENTRY,
    );
    let (doc, _) = read_everywhere(&bytes, Limits::default()).unwrap();
    assert_eq!(doc.entries.len(), 1);
}

#[test]
fn rs_namespace() {
    // rs bound to another URI: the md is not ResourceSync's, and says so.
    let other = r#"xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://example.com/not-rs/""#;
    let broken = format!(r#"<urlset {other}><rs:md capability="resourcelist"/></urlset>"#);
    // The ResourceSync namespace under another prefix, and as a default namespace.
    let kept = r#"<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:r="http://www.openarchives.org/rs/terms/"><r:ln rel="up" href="http://e.com/c"/><md xmlns="http://www.openarchives.org/rs/terms/" capability="resourcelist" at="2013-01-03T09:00:00Z"/></urlset>"#;
    case(
        Rule::ResourceSyncNamespace,
        broken.into_bytes(),
        kept.as_bytes().to_vec(),
    );
    let (doc, findings) = read_everywhere(kept.as_bytes(), Limits::default()).unwrap();
    assert!(findings.is_empty(), "{findings:?}");
    assert_eq!(
        doc.head.kind(),
        resourcesync_model::DocumentKind::ResourceList
    );
}

#[test]
fn names_are_resolved_inside_entries_that_rebind_prefixes() {
    // The root binds the conventional prefixes; entries rebind them: names are read by
    // namespace, not as written.
    let body = concat!(
        r#"<url xmlns:rs="http://example.com/not-rs/"><loc>http://e.com/a</loc>"#,
        r#"<rs:md length="1"/></url>"#,
        r#"<url><loc xmlns="urn:other">http://e.com/b</loc></url>"#,
        r#"<s:url xmlns:s="http://www.sitemaps.org/schemas/sitemap/0.9">"#,
        r#"<s:loc>http://e.com/c</s:loc><md xmlns="http://www.openarchives.org/rs/terms/" length="3"/></s:url>"#,
    );
    let bytes = doc("urlset", NS, body);
    let (doc, findings) = read_everywhere(&bytes, Limits::default()).unwrap();
    let rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
    assert!(rules.contains(&Rule::ResourceSyncNamespace), "{rules:?}");
    assert!(rules.contains(&Rule::LocMandatory), "{rules:?}");
    assert_eq!(doc.entries.len(), 2);
    assert!(doc.entries[0].md.is_none());
    assert_eq!(
        doc.entries[0].extensions[0].namespace,
        "http://example.com/not-rs/"
    );
    assert_eq!(doc.entries[1].loc.as_str(), "http://e.com/c");
    assert_eq!(doc.entries[1].md.as_ref().unwrap().length, Some(3));
}

#[test]
fn children_of_an_entry_in_any_order() {
    // The rs:md before the <loc> is the entry's; the one after it is a repeat.
    let body = concat!(
        r#"<url><rs:md length="1"/><lastmod>2013-01-03</lastmod><loc>http://e.com/a</loc>"#,
        r#"<rs:ln rel="duplicate" href="http://m.e.com/a"/><rs:md length="2"/></url>"#,
        r#"<url><rs:ln rel="duplicate" href="http://m.e.com/b"/><loc>http://e.com/b</loc></url>"#,
    );
    let bytes = doc("urlset", NS, body);
    let (doc, findings) = read_everywhere(&bytes, Limits::default()).unwrap();
    let rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
    assert_eq!(rules, [Rule::MdNotRepeatable]);
    assert_eq!(findings[0].entry, Some(1));
    let [a, b] = &doc.entries[..] else {
        panic!("{:?}", doc.entries)
    };
    assert_eq!(a.md.as_ref().unwrap().length, Some(1));
    assert!(a.lastmod.is_some());
    assert_eq!(a.links.len(), 1);
    assert!(b.md.is_none());
    assert_eq!(b.links[0].href.as_str(), "http://m.e.com/b");
}

#[test]
fn attribute_no_prefix() {
    case(
        Rule::AttributePrefix,
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:md rs:length="3"/></url>"#,
        ),
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:md length="3"/></url>"#,
        ),
    );
    // `length` and `rs:length` are different names to XML, so not a repeated attribute:
    // read (the prefixed one reported), not refused.
    let both = doc(
        "urlset",
        NS,
        r#"<url><loc>http://e.com/a</loc><rs:md length="3" rs:length="4"/></url>"#,
    );
    assert!(findings(&both).contains(&Rule::AttributePrefix));
}

#[test]
fn entry_element() {
    case(
        Rule::EntryElement,
        doc("urlset", NS, "<sitemap><loc>http://e.com/a</loc></sitemap>"),
        doc("urlset", NS, ENTRY),
    );
}

#[test]
fn loc_mandatory() {
    case(
        Rule::LocMandatory,
        doc("urlset", NS, "<url><lastmod>2013-01-01</lastmod></url>"),
        doc("urlset", NS, ENTRY),
    );
    case(
        Rule::LocMandatory,
        doc(
            "urlset",
            NS,
            "<url><loc>http://e.com/a</loc><loc>http://e.com/b</loc></url>",
        ),
        doc("urlset", NS, ENTRY),
    );
}

#[test]
fn link_rel_href_mandatory() {
    case(
        Rule::LinkRelHrefMandatory,
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:ln href="http://e.com/m"/></url>"#,
        ),
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:ln rel="duplicate" href="http://e.com/m"/></url>"#,
        ),
    );
}

#[test]
fn md_not_repeatable() {
    case(
        Rule::MdNotRepeatable,
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:md length="1"/><rs:md length="2"/></url>"#,
        ),
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:md length="1"/></url>"#,
        ),
    );
}

#[test]
fn bad_values_are_findings_with_places_and_kept() {
    let bytes = doc(
        "urlset",
        NS,
        "<url><loc>http://e.com/a</loc>\n<lastmod>2013-02-30</lastmod><rs:md length=\"-1\" pri=\"x\"/></url>\n<url><loc>/relative</loc></url>",
    );
    let (doc, findings) = read_everywhere(&bytes, Limits::default()).unwrap();
    let rules: Vec<(Rule, Option<u64>, u64)> = findings
        .iter()
        .map(|f| (f.rule, f.entry, f.position.unwrap().line))
        .collect();
    assert_eq!(
        rules,
        [
            (Rule::DatetimeSyntax, Some(1), 2),
            (Rule::LengthSyntax, Some(1), 2),
            // pri is an attribute of rs:ln, not of rs:md.
            (Rule::AttributeUnknown, Some(1), 2),
            (Rule::UriSyntax, Some(2), 3),
        ]
    );
    // The entry with a bad loc is skipped; the bad length and the unknown pri attribute
    // are kept as written.
    assert_eq!(doc.entries.len(), 1);
    let kept: Vec<(&str, &str)> = doc.entries[0]
        .md
        .as_ref()
        .unwrap()
        .extensions
        .iter()
        .map(|a| (a.name.as_str(), a.value.as_str()))
        .collect();
    assert_eq!(kept, [("length", "-1"), ("pri", "x")]);
}

#[test]
fn sitemap_elements_in_the_wrong_namespace() {
    // Entries that undeclare the default namespace are no entries: reported, each.
    let undeclared = r#"<url xmlns=""><loc>http://e.com/a</loc></url><url xmlns=""><loc>http://e.com/b</loc></url>"#;
    let (read, found) = read_everywhere(&doc("urlset", NS, undeclared), Limits::default()).unwrap();
    assert_eq!(read.entries.len(), 0);
    let namespace: Vec<_> = found
        .iter()
        .filter(|f| f.rule == Rule::SitemapNamespace)
        .collect();
    assert_eq!(namespace.len(), 2, "{found:?}");
    assert!(
        namespace[0].message.contains("no namespace"),
        "{}",
        namespace[0].message
    );

    for (name, body) in [
        (
            "loc in another namespace",
            r#"<url><loc>http://e.com/a</loc><x:loc xmlns:x="urn:x">http://e.com/b</x:loc></url>"#,
        ),
        (
            "lastmod in no namespace",
            r#"<url><loc>http://e.com/a</loc><lastmod xmlns="">2013-01-01</lastmod></url>"#,
        ),
        (
            "url in the ResourceSync namespace",
            r#"<rs:url><loc>http://e.com/a</loc></rs:url>"#,
        ),
        (
            "sitemap in another namespace",
            r#"<x:sitemap xmlns:x="urn:x"/>"#,
        ),
        (
            "changefreq in another namespace",
            r#"<url><loc>http://e.com/a</loc><x:changefreq xmlns:x="urn:x">daily</x:changefreq></url>"#,
        ),
    ] {
        let broken = doc("urlset", NS, body);
        assert!(
            findings(&broken).contains(&Rule::SitemapNamespace),
            "{name}"
        );
    }
    // An element of another vocabulary with another name is an extension, unreported.
    let kept = doc(
        "urlset",
        NS,
        r#"<url><loc>http://e.com/a</loc><x:image xmlns:x="urn:x"/></url>"#,
    );
    assert!(!findings(&kept).contains(&Rule::SitemapNamespace));
}

#[test]
fn head_before_entries() {
    let late = format!(
        r#"{ENTRY}<rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/><rs:ln rel="up" href="http://e.com/c"/>{ENTRY}"#
    );
    case(
        Rule::HeadBeforeEntries,
        doc("urlset", NS, &late),
        doc("urlset", NS, ENTRY),
    );
    // Read to the end, both entries kept, one finding for each element.
    let (read, found) = read_everywhere(&doc("urlset", NS, &late), Limits::default()).unwrap();
    assert_eq!(read.entries.len(), 2);
    let late: Vec<_> = found
        .iter()
        .filter(|f| f.rule == Rule::HeadBeforeEntries)
        .collect();
    assert_eq!(late.len(), 2);
    // Its values are still checked.
    let bad = format!(r#"{ENTRY}<rs:md capability="resourcelist" at="2013-13-03"/>"#);
    assert!(findings(&doc("urlset", NS, &bad)).contains(&Rule::DatetimeSyntax));
}

#[test]
fn attribute_unknown() {
    let rows = [
        (r#"<rs:md lenght="5"/>"#, "did you mean length"),
        (
            r#"<rs:md Hash="md5:1584abdf8ebdc9802ac0c6a7402c03b6"/>"#,
            "did you mean hash",
        ),
        (r#"<rs:md tpye="text/html"/>"#, "did you mean type"),
        (
            r#"<rs:md datetiem="2013-01-03T09:00:00Z"/>"#,
            "did you mean datetime",
        ),
        (r#"<rs:md colour="red"/>"#, "kept, not understood"),
        (
            r#"<rs:ln rel="alternate" hreff="http://e.com/b" href="http://e.com/b"/>"#,
            "did you mean href",
        ),
        (
            r#"<rs:ln rel="alternate" href="http://e.com/b" capability="x"/>"#,
            "kept, not understood",
        ),
    ];
    for (child, says) in rows {
        let broken = doc(
            "urlset",
            NS,
            &format!("<url><loc>http://e.com/a</loc>{child}</url>"),
        );
        let (_, found) = read_everywhere(&broken, Limits::default()).unwrap();
        let finding = found
            .iter()
            .find(|f| f.rule == Rule::AttributeUnknown)
            .unwrap_or_else(|| panic!("{child}: {found:?}"));
        assert!(
            finding.message.contains(says),
            "{child}: {}",
            finding.message
        );
        assert_eq!(finding.entry, Some(1));
    }
    // Attributes of Sitemap elements, which have none.
    for body in [
        r#"<url priority="1"><loc>http://e.com/a</loc></url>"#,
        r#"<url><loc type="x">http://e.com/a</loc></url>"#,
        r#"<url><loc>http://e.com/a</loc><lastmod at="x">2013-01-01</lastmod></url>"#,
        r#"<url xmlns:x="urn:x" x:y="1"><loc>http://e.com/a</loc></url>"#,
    ] {
        let found = findings(&doc("urlset", NS, body));
        assert!(found.contains(&Rule::AttributeUnknown), "{body}: {found:?}");
    }
    // Extension attributes in a namespace of their own, and declarations, are fine.
    case(
        Rule::AttributeUnknown,
        doc(
            "urlset",
            NS,
            r#"<url><loc>http://e.com/a</loc><rs:md lenght="5"/></url>"#,
        ),
        doc(
            "urlset",
            NS,
            r#"<url xmlns:x="urn:x"><loc>http://e.com/a</loc><rs:md length="5" x:lenght="5"/></url>"#,
        ),
    );
}

#[test]
fn max_bytes() {
    // Entries with long locations make a document over 50 MiB quickly.
    let loc = format!("http://e.com/{}", "a".repeat(1900));
    let entry = format!("<url><loc>{loc}</loc></url>\n");
    let n = resourcesync_model::MAX_BYTES as usize / entry.len() + 1;
    let big = doc("urlset", NS, &entry.repeat(n));
    assert!(big.len() as u64 > resourcesync_model::MAX_BYTES);
    // A validator reads on and reports it, through either source.
    let (read, found) =
        resourcesync_xml::Reader::from_slice_with_limits(&big, Limits::unbounded_size())
            .read_to_document()
            .unwrap();
    assert_eq!(read.entries.len(), n);
    assert!(
        found.iter().any(|f| f.rule == Rule::MaxBytes),
        "{:?}",
        found.first()
    );
    let (_, found) = resourcesync_xml::Reader::with_limits(&big[..], Limits::unbounded_size())
        .unwrap()
        .read_to_document()
        .unwrap();
    assert!(found.iter().any(|f| f.rule == Rule::MaxBytes));
    // With the default limits, the document is refused.
    let error = resourcesync_xml::Reader::from_slice(&big)
        .read_to_document()
        .unwrap_err();
    assert!(matches!(
        error.kind(),
        resourcesync_xml::ErrorKind::TooLarge(_)
    ));
    // Under the limit is fine.
    assert!(!findings(&doc("urlset", NS, &entry)).contains(&Rule::MaxBytes));
}

/// A malformed mandatory attribute is one fault: reported as malformed, not also as
/// missing.
#[test]
fn one_fault_one_finding() {
    let rows: [(&str, &str, &str, Rule, Rule); 5] = [
        (
            "a malformed at",
            r#"<rs:ln rel="up" href="http://e.com/caps.xml"/><rs:md capability="resourcelist" at="yesterday"/>"#,
            "<url><loc>http://e.com/a</loc></url>",
            Rule::DatetimeSyntax,
            Rule::AtMandatory,
        ),
        (
            "a malformed from",
            r#"<rs:ln rel="up" href="http://e.com/caps.xml"/><rs:md capability="changelist" from="2013-13-01"/>"#,
            r#"<url><loc>http://e.com/a</loc><rs:md change="created"/></url>"#,
            Rule::DatetimeSyntax,
            Rule::FromMandatory,
        ),
        (
            "a malformed change",
            r#"<rs:ln rel="up" href="http://e.com/caps.xml"/><rs:md capability="changelist" from="2013-01-01T00:00:00Z"/>"#,
            r#"<url><loc>http://e.com/a</loc><rs:md change="modified"/></url>"#,
            Rule::ChangeValue,
            Rule::ChangeMandatory,
        ),
        (
            "a malformed up href",
            r#"<rs:ln rel="up" href="not a uri"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>"#,
            "<url><loc>http://e.com/a</loc></url>",
            Rule::UriSyntax,
            Rule::UpLinkMandatory,
        ),
        (
            "a malformed patch type",
            r#"<rs:ln rel="up" href="http://e.com/caps.xml"/><rs:md capability="changelist" from="2013-01-01T00:00:00Z"/>"#,
            r#"<url><loc>http://e.com/a</loc><rs:md change="updated"/><rs:ln rel="http://www.openarchives.org/rs/terms/patch" href="http://e.com/p" type="json"/></url>"#,
            Rule::MediaTypeSyntax,
            Rule::PatchLinkType,
        ),
    ];
    for (name, head, body, reported, not_also) in rows {
        let bytes = format!("<urlset {NS}>{head}{body}</urlset>").into_bytes();
        let found = findings(&bytes);
        assert!(found.contains(&reported), "{name}: {found:?}");
        assert!(!found.contains(&not_also), "{name}: {found:?}");
    }
}
