//! `<loc>` and `href` URIs: every scheme, userinfo and bidirectional-formatting variant,
//! one row each, checked in a Resource List entry's `<loc>` and in its links' `href`.

use resourcesync_model::{
    Capability, Document, DocumentHead, DocumentKind, Entry, Finding, Link, Md, Relation, Rule,
    Severity, Uri, check,
};

/// A clean Resource List whose one entry has `loc`, and links `(rel, href)`.
fn findings(loc: &str, links: &[(Relation, &str)]) -> Vec<Finding> {
    let mut head = DocumentHead::of_kind(DocumentKind::ResourceList);
    head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/capabilitylist.xml".parse().unwrap(),
    ));
    let mut doc = Document::new(head);
    let mut entry = Entry::new(Uri::parse(loc).unwrap());
    for (rel, href) in links {
        entry
            .links
            .push(Link::new(rel.clone(), Uri::parse(href).unwrap()));
    }
    doc.entries.push(entry);
    check(&doc)
}

fn rules(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().map(|f| f.rule).collect()
}

#[test]
fn schemes_in_loc() {
    use Rule::{UriScheme as Unsafe, UriSchemeNotHttp as NotHttp};
    let rows: &[(&str, &[Rule])] = &[
        ("http://example.com/res1", &[]),
        ("https://example.com/res1", &[]),
        ("HTTP://example.com/res1", &[]),
        ("hTTpS://example.com/res1", &[]),
        ("javascript:alert(1)", &[Unsafe]),
        ("JavaScript:alert(1)", &[Unsafe]),
        ("vbscript:msgbox(1)", &[Unsafe]),
        ("VBScript:msgbox(1)", &[Unsafe]),
        ("data:text/html,%3Cscript%3E", &[Unsafe]),
        ("DATA:text/html,x", &[Unsafe]),
        ("file:///etc/passwd", &[Unsafe]),
        ("FILE://server/share/x", &[Unsafe]),
        ("ftp://example.com/res1", &[NotHttp]),
        ("urn:isbn:0451450523", &[NotHttp]),
        ("mailto:a@example.com", &[NotHttp]),
        ("gsiftp://gridftp.example.com/res1", &[NotHttp]),
        ("httpx://example.com/res1", &[NotHttp]),
        ("javascripts:x", &[NotHttp]),
    ];
    for (loc, expected) in rows {
        let found = findings(loc, &[]);
        assert_eq!(rules(&found), *expected, "{loc}: {found:#?}");
        for f in &found {
            assert!(f.message.contains(loc), "{}", f.message);
        }
    }
    let unsafe_finding = &findings("javascript:alert(1)", &[])[0];
    assert_eq!(unsafe_finding.severity(), Severity::Error);
    assert_eq!(unsafe_finding.entry, Some(1));
    assert_eq!(
        unsafe_finding.message,
        "loc \"javascript:alert(1)\" uses the javascript scheme, which runs code or names local files"
    );
    assert_eq!(
        findings("ftp://e.com/", &[])[0].severity(),
        Severity::Warning
    );
}

#[test]
fn schemes_in_href() {
    use Rule::{UriScheme as Unsafe, UriSchemeNotHttp as NotHttp};
    let rows: &[(Relation, &str, &[Rule])] = &[
        (Relation::Duplicate, "ftp://mirror.example.com/res1", &[]),
        (
            Relation::Duplicate,
            "gsiftp://gridftp.example.com/res1",
            &[],
        ),
        (Relation::Duplicate, "file:///etc/passwd", &[Unsafe]),
        (Relation::Duplicate, "javascript:x", &[Unsafe]),
        (Relation::Canonical, "ftp://example.com/res1", &[NotHttp]),
        (Relation::DescribedBy, "urn:example:x", &[NotHttp]),
        (Relation::Memento, "data:,x", &[Unsafe]),
        (Relation::Via, "vbscript:x", &[Unsafe]),
        (Relation::Collection, "https://example.com/c", &[]),
    ];
    for (rel, href, expected) in rows {
        let found = findings("http://example.com/res1", &[(rel.clone(), href)]);
        assert_eq!(rules(&found), *expected, "{rel} {href}: {found:#?}");
        if let Some(f) = found.first() {
            assert!(f.message.starts_with("href "), "{}", f.message);
        }
    }
}

#[test]
fn userinfo_names_the_real_host() {
    let rows: &[(&str, Option<(&str, &str)>)] = &[
        (
            "http://a.example@b.example/",
            Some(("a.example", "b.example")),
        ),
        (
            "https://user:pass@b.example:8443/x",
            Some(("user:pass", "b.example")),
        ),
        ("http://@b.example/", Some(("", "b.example"))),
        ("http://a@b@c.example/", Some(("a@b", "c.example"))),
        ("http://example.com@[::1]/", Some(("example.com", "[::1]"))),
        ("http://b.example/a@b", None),
        ("http://b.example/?u=a@b", None),
        ("http://b.example/#a@b", None),
    ];
    for (loc, expected) in rows {
        let found = findings(loc, &[]);
        let userinfo: Vec<&Finding> = found
            .iter()
            .filter(|f| f.rule == Rule::UriUserinfo)
            .collect();
        match expected {
            None => assert!(userinfo.is_empty(), "{loc}: {found:#?}"),
            Some((info, host)) => {
                assert_eq!(userinfo.len(), 1, "{loc}: {found:#?}");
                assert_eq!(
                    userinfo[0].message,
                    format!(
                        "loc \"{loc}\" has the userinfo \"{info}\" before its host: it names the host \"{host}\""
                    )
                );
                assert_eq!(userinfo[0].severity(), Severity::Warning);
            }
        }
    }
    // In an href too.
    let found = findings(
        "http://example.com/res1",
        &[(Relation::Duplicate, "http://example.com@evil.example/res1")],
    );
    assert_eq!(rules(&found), [Rule::UriUserinfo]);
    assert!(found[0].message.starts_with("href "));
}

#[test]
fn bidi_formatting_characters_anywhere() {
    let chars = [
        '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
        '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}',
    ];
    for c in chars {
        for loc in [
            format!("http://example.com/a{c}b"),
            format!("http://exa{c}mple.com/"),
            format!("http://example.com/?q={c}"),
            format!("http://example.com/#{c}"),
        ] {
            let found = findings(&loc, &[]);
            assert_eq!(rules(&found), [Rule::UriBidi], "{loc:?}");
            assert_eq!(found[0].severity(), Severity::Error);
            assert!(
                found[0]
                    .message
                    .contains(&format!("U+{:04X}", u32::from(c))),
                "{}",
                found[0].message
            );
            // The message shows the character escaped, never raw.
            assert!(!found[0].message.contains(c));
        }
        let found = findings(
            "http://example.com/res1",
            &[(
                Relation::Duplicate,
                &format!("http://mirror.example.com/{c}"),
            )],
        );
        assert_eq!(rules(&found), [Rule::UriBidi]);
    }
    for ok in [
        "http://example.com/caf\u{e9}",
        "http://example.com/\u{200D}",
        "http://example.com/\u{202F}",
    ] {
        assert_eq!(rules(&findings(ok, &[])), [], "{ok:?}");
    }
}

#[test]
fn capability_documents_are_checked_too() {
    // The Capability List's entries: a loc with an unsafe scheme is reported there as well.
    let mut head = DocumentHead::of_kind(DocumentKind::CapabilityList);
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/sd.xml".parse().unwrap(),
    ));
    head.links.push(Link::new(
        Relation::DescribedBy,
        "javascript:alert(1)".parse().unwrap(),
    ));
    let mut doc = Document::new(head);
    let mut entry = Entry::new("file:///etc/passwd".parse().unwrap());
    entry.md = Some(Md::new().with_capability(Capability::ResourceList));
    doc.entries.push(entry);
    let found = check(&doc);
    assert_eq!(
        found.iter().map(|f| (f.rule, f.entry)).collect::<Vec<_>>(),
        [(Rule::UriScheme, None), (Rule::UriScheme, Some(1))]
    );
}
