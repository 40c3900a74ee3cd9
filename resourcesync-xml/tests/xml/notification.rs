//! Change Notification 1.0.1 and Framework Notification 1.0.1 documents, read and written:
//! every rule of section 3 and section 5, broken in the XML a hub delivers, is reported with
//! its section and its line; Change Notification 1.0's capability name is read as 1.0.1's
//! and written as 1.0.1 writes it.

use resourcesync_model::{Capability, DocumentKind as K, Relation};
use resourcesync_xml::{Limits, WriteOptions, read_document, write_document, write_document_with};

use crate::{read_everywhere, rules_of};

const OPEN: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
"#;

fn change(loc: &str, change: &str, datetime: &str) -> String {
    format!("  <url><loc>{loc}</loc><rs:md change=\"{change}\" datetime=\"{datetime}\"/></url>\n")
}

fn notification(md: &str, entries: &[String]) -> Vec<u8> {
    let mut xml = format!("{OPEN}  {md}\n");
    for e in entries {
        xml.push_str(e);
    }
    xml.push_str("</urlset>\n");
    xml.into_bytes()
}

/// Each finding as (rule, entry, section, line).
fn found(xml: &[u8]) -> Vec<(&'static str, Option<u64>, &'static str, Option<u64>)> {
    let (_, findings) = read_everywhere(xml, Limits::default()).unwrap();
    findings
        .iter()
        .map(|f| (f.rule.id(), f.entry, f.section, f.position.map(|p| p.line)))
        .collect()
}

#[test]
fn a_notification_without_its_interval_is_two_errors_of_section_3() {
    let xml = notification(
        r#"<rs:md capability="change-notification"/>"#,
        &[change(
            "http://example.com/res1",
            "created",
            "2013-01-03T00:07:22Z",
        )],
    );
    assert_eq!(
        found(&xml),
        [
            ("from-mandatory", None, "Change Notification 3", None),
            ("until-mandatory", None, "Change Notification 3", None),
        ]
    );
    // With only from, until is still missing.
    let xml = notification(
        r#"<rs:md capability="change-notification" from="2013-01-03T00:00:00Z"/>"#,
        &[],
    );
    assert_eq!(
        rules_of(&read_everywhere(&xml, Limits::default()).unwrap().1),
        [("until-mandatory", None)]
    );
}

const INTERVAL: &str = r#"<rs:md capability="change-notification" from="2013-01-03T00:00:00Z" until="2013-01-03T00:10:00Z"/>"#;

#[test]
fn entries_are_changes_in_forward_order_within_the_interval() {
    let xml = notification(
        INTERVAL,
        &[
            change("http://example.com/res1", "updated", "2013-01-03T00:08:52Z"),
            // Earlier than the entry before it.
            change("http://example.com/res2", "created", "2013-01-03T00:07:22Z"),
            // No change: a notification's entries are changes.
            "  <url><loc>http://example.com/res3</loc><rs:md datetime=\"2013-01-03T00:09:00Z\"/></url>\n".into(),
            // After until.
            change("http://example.com/res4", "deleted", "2013-01-03T00:11:00Z"),
            // The same resource again is a second change, not a duplicate.
            change("http://example.com/res4", "created", "2013-01-03T00:11:00Z"),
        ],
    );
    assert_eq!(
        found(&xml),
        [
            (
                "change-notification-order",
                Some(2),
                "Change Notification 3",
                Some(6)
            ),
            (
                "change-mandatory",
                Some(3),
                "Change Notification 3",
                Some(7)
            ),
            ("datetime-in-interval", Some(4), "7", Some(8)),
            ("datetime-in-interval", Some(5), "7", Some(9)),
        ]
    );
}

#[test]
fn a_notification_is_never_an_index() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="change-notification" from="2013-01-03T00:00:00Z" until="2013-01-03T00:10:00Z"/>
  <sitemap><loc>http://example.com/notification-part1.xml</loc></sitemap>
</sitemapindex>
"#;
    assert_eq!(
        found(xml),
        [(
            "notification-not-index",
            None,
            "Change Notification 3",
            None
        )]
    );
    let framework = String::from_utf8_lossy(xml).replace(
        r#"capability="change-notification" from="2013-01-03T00:00:00Z" until="2013-01-03T00:10:00Z""#,
        r#"capability="framework-notification""#,
    );
    assert_eq!(
        found(framework.as_bytes()),
        [(
            "notification-not-index",
            None,
            "Framework Notification 3",
            None
        )]
    );
}

#[test]
fn a_framework_notification_entry_names_the_kind_of_document_that_changed() {
    let xml = notification(
        r#"<rs:md capability="framework-notification"/>"#,
        &[
            "  <url><loc>http://example.com/dataset1/resourcelist.xml</loc><rs:md change=\"created\"/></url>\n".into(),
            "  <url><loc>http://example.com/dataset1/changelist.xml</loc><rs:md capability=\"changelist\"/></url>\n".into(),
        ],
    );
    assert_eq!(
        found(&xml),
        [
            (
                "framework-notification-entry-capability",
                Some(1),
                "Framework Notification 3",
                Some(5)
            ),
            (
                "change-mandatory",
                Some(2),
                "Framework Notification 3",
                Some(6)
            ),
        ]
    );
}

#[test]
fn a_channel_without_its_hub_cannot_be_subscribed_to() {
    let xml = br#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:ln rel="describedby" href="http://example.com/info_about_set1_of_resources.xml"/>
  <rs:ln rel="up" href="http://example.com/source_description.xml"/>
  <rs:md capability="capabilitylist"/>
  <url>
    <loc>http://example.com/dataset1/change/</loc>
    <rs:md capability="change-notification"/>
  </url>
  <url>
    <loc>http://example.com/dataset1/change-again/</loc>
    <rs:ln rel="hub" href="http://hub.example.org/websub/"/>
    <rs:md capability="change-notification"/>
  </url>
</urlset>
"#;
    assert_eq!(
        found(xml),
        [
            (
                "notification-channel-hub",
                Some(1),
                "Change Notification 5, Framework Notification 5",
                Some(7)
            ),
            // One channel per Capability List.
            (
                "capabilitylist-duplicate",
                Some(2),
                "9, Archives 2.1",
                Some(11)
            ),
        ]
    );
    let (doc, _) = read_document(xml).unwrap();
    let hub = doc.entries[1].links.iter().find(|l| l.rel == Relation::Hub);
    assert_eq!(
        hub.map(|l| l.href.as_str()),
        Some("http://hub.example.org/websub/")
    );
}

#[test]
fn change_notification_1_0_s_capability_is_read_as_1_0_1_s_and_written_as_it() {
    let xml = notification(
        r#"<rs:md capability="changelist-notification" from="2013-01-03T00:00:00Z" until="2013-01-03T00:10:00Z"/>"#,
        &[change(
            "http://example.com/res1",
            "created",
            "2013-01-03T00:07:22Z",
        )],
    );
    let (doc, findings) = read_everywhere(&xml, Limits::default()).unwrap();
    assert_eq!(rules_of(&findings), []);
    assert_eq!(doc.head.kind(), K::ChangeNotification);
    assert_eq!(doc.head.md.capability, Some(Capability::ChangeNotification));
    let written = String::from_utf8(write_document(Vec::new(), &doc).unwrap().output).unwrap();
    assert!(
        written.contains(r#"capability="change-notification""#),
        "{written}"
    );
    assert!(!written.contains("changelist-notification"), "{written}");
}

#[test]
fn a_writer_refusing_errors_refuses_a_notification_without_until() {
    let xml = notification(
        r#"<rs:md capability="change-notification" from="2013-01-03T00:00:00Z"/>"#,
        &[],
    );
    let (doc, _) = read_document(&xml).unwrap();
    let refused = write_document_with(
        Vec::new(),
        &doc,
        WriteOptions::default().with_refuse_errors(true),
    );
    assert!(refused.is_err(), "{refused:?}");
}
