//! `<loc>` and `href` URIs: every scheme, userinfo and bidirectional-formatting variant,
//! one row each, checked in a Resource List entry's `<loc>` and in its links' `href`.

use resourcesync_model::{
    Capability, Document, DocumentHead, DocumentKind, Entry, Finding, Link, Md, Relation, Rule,
    Severity, Uri, check,
};
use rstest::rstest;

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

const NONE: &[Rule] = &[];
const UNSAFE: &[Rule] = &[Rule::UriScheme];
const NOT_HTTP: &[Rule] = &[Rule::UriSchemeNotHttp];

#[rstest]
#[case::http("http://example.com/res1", NONE)]
#[case::https("https://example.com/res1", NONE)]
#[case::http_upper_case("HTTP://example.com/res1", NONE)]
#[case::https_mixed_case("hTTpS://example.com/res1", NONE)]
#[case::javascript("javascript:alert(1)", UNSAFE)]
#[case::javascript_mixed_case("JavaScript:alert(1)", UNSAFE)]
#[case::vbscript("vbscript:msgbox(1)", UNSAFE)]
#[case::vbscript_mixed_case("VBScript:msgbox(1)", UNSAFE)]
#[case::data("data:text/html,%3Cscript%3E", UNSAFE)]
#[case::data_upper_case("DATA:text/html,x", UNSAFE)]
#[case::file("file:///etc/passwd", UNSAFE)]
#[case::file_upper_case("FILE://server/share/x", UNSAFE)]
#[case::ftp("ftp://example.com/res1", NOT_HTTP)]
#[case::urn("urn:isbn:0451450523", NOT_HTTP)]
#[case::mailto("mailto:a@example.com", NOT_HTTP)]
#[case::gsiftp("gsiftp://gridftp.example.com/res1", NOT_HTTP)]
#[case::httpx("httpx://example.com/res1", NOT_HTTP)]
#[case::javascripts("javascripts:x", NOT_HTTP)]
fn schemes_in_loc(#[case] loc: &str, #[case] expected: &[Rule]) {
    let found = findings(loc, &[]);
    assert_eq!(rules(&found), expected, "{loc}: {found:#?}");
    for f in &found {
        assert!(f.message.contains(loc), "{}", f.message);
    }
}

#[test]
fn an_unsafe_scheme_is_an_error_and_another_a_warning() {
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

#[rstest]
#[case::duplicate_ftp(Relation::Duplicate, "ftp://mirror.example.com/res1", NONE)]
#[case::duplicate_gsiftp(Relation::Duplicate, "gsiftp://gridftp.example.com/res1", NONE)]
#[case::duplicate_file(Relation::Duplicate, "file:///etc/passwd", UNSAFE)]
#[case::duplicate_javascript(Relation::Duplicate, "javascript:x", UNSAFE)]
#[case::canonical_ftp(Relation::Canonical, "ftp://example.com/res1", NOT_HTTP)]
#[case::describedby_urn(Relation::DescribedBy, "urn:example:x", NOT_HTTP)]
#[case::memento_data(Relation::Memento, "data:,x", UNSAFE)]
#[case::via_vbscript(Relation::Via, "vbscript:x", UNSAFE)]
#[case::collection_https(Relation::Collection, "https://example.com/c", NONE)]
fn schemes_in_href(#[case] rel: Relation, #[case] href: &str, #[case] expected: &[Rule]) {
    let found = findings("http://example.com/res1", &[(rel.clone(), href)]);
    assert_eq!(rules(&found), expected, "{rel} {href}: {found:#?}");
    if let Some(f) = found.first() {
        assert!(f.message.starts_with("href "), "{}", f.message);
    }
}

#[rstest]
#[case::userinfo_a_host("http://a.example@b.example/", Some(("a.example", "b.example")))]
#[case::user_and_password(
    "https://user:pass@b.example:8443/x",
    Some(("user:pass", "b.example"))
)]
#[case::empty_userinfo("http://@b.example/", Some(("", "b.example")))]
#[case::two_at_signs("http://a@b@c.example/", Some(("a@b", "c.example")))]
#[case::ipv6_host("http://example.com@[::1]/", Some(("example.com", "[::1]")))]
#[case::at_in_path("http://b.example/a@b", None)]
#[case::at_in_query("http://b.example/?u=a@b", None)]
#[case::at_in_fragment("http://b.example/#a@b", None)]
fn userinfo_names_the_real_host(#[case] loc: &str, #[case] expected: Option<(&str, &str)>) {
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

#[test]
fn userinfo_in_an_href() {
    let found = findings(
        "http://example.com/res1",
        &[(Relation::Duplicate, "http://example.com@evil.example/res1")],
    );
    assert_eq!(rules(&found), [Rule::UriUserinfo]);
    assert!(found[0].message.starts_with("href "));
}

/// A bidirectional formatting character `c` in a loc, where `at` (a loc with `{c}`) puts it.
#[rstest]
fn bidi_formatting_characters_anywhere_in_loc(
    #[values(
        '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
        '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'
    )]
    c: char,
    #[values(
        "http://example.com/a{c}b",
        "http://exa{c}mple.com/",
        "http://example.com/?q={c}",
        "http://example.com/#{c}"
    )]
    at: &str,
) {
    let loc = at.replace("{c}", &c.to_string());
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

#[rstest]
fn bidi_formatting_characters_in_href(
    #[values(
        '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}',
        '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}'
    )]
    c: char,
) {
    let found = findings(
        "http://example.com/res1",
        &[(
            Relation::Duplicate,
            &format!("http://mirror.example.com/{c}"),
        )],
    );
    assert_eq!(rules(&found), [Rule::UriBidi]);
}

#[rstest]
#[case::e_acute("http://example.com/caf\u{e9}")]
#[case::zero_width_joiner("http://example.com/\u{200D}")]
#[case::narrow_no_break_space("http://example.com/\u{202F}")]
fn other_characters_are_no_bidi_formatting(#[case] ok: &str) {
    assert_eq!(rules(&findings(ok, &[])), [], "{ok:?}");
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
