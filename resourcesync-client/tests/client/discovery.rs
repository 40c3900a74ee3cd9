//! Discovery: robots.txt, HTML links and `Link:` headers as real servers write them, and
//! as hostile ones do.

use proptest::prelude::*;
use resourcesync_client::discovery::{
    Discovered, DiscoveryLimits, IgnoredReason, html_links, link_headers, robots_txt,
    well_known_uri,
};
use resourcesync_model::Uri;

fn uri(s: &str) -> Uri {
    Uri::parse(s).unwrap()
}

fn uris(found: &Discovered) -> Vec<&str> {
    found.uris.iter().map(Uri::as_str).collect()
}

fn robots(body: &str) -> Discovered {
    robots_txt(
        &uri("https://example.com/robots.txt"),
        body.as_bytes(),
        &DiscoveryLimits::default(),
    )
}

fn html(body: &str) -> Discovered {
    html_links(
        &uri("https://example.com/dir/page.html"),
        body.as_bytes(),
        &DiscoveryLimits::default(),
    )
}

fn links(values: &[&str]) -> Discovered {
    link_headers(
        &uri("https://example.com/dir/res1"),
        values,
        &DiscoveryLimits::default(),
    )
}

fn limits(max_input_bytes: usize, max_uris: usize, max_ignored: usize) -> DiscoveryLimits {
    let mut limits = DiscoveryLimits::default();
    limits.max_input_bytes = max_input_bytes;
    limits.max_uris = max_uris;
    limits.max_ignored = max_ignored;
    limits
}

#[test]
fn well_known_uris() {
    for (base, expected) in [
        (
            "http://example.com",
            "http://example.com/.well-known/resourcesync",
        ),
        (
            "https://EXAMPLE.com:443/a/b?c#d",
            "https://example.com/.well-known/resourcesync",
        ),
        (
            "http://example.com:8080/",
            "http://example.com:8080/.well-known/resourcesync",
        ),
        (
            "http://user:pw@example.com/",
            "http://example.com/.well-known/resourcesync",
        ),
        (
            "http://[::1]:8000/x",
            "http://[::1]:8000/.well-known/resourcesync",
        ),
        (
            "http://bücher.example/",
            "http://xn--bcher-kva.example/.well-known/resourcesync",
        ),
    ] {
        assert_eq!(
            well_known_uri(&uri(base)).unwrap().as_str(),
            expected,
            "{base}"
        );
    }
    assert!(well_known_uri(&uri("mailto:a@example.com")).is_err());
    assert!(well_known_uri(&uri("http://example.com:99999/")).is_err());
    assert_eq!(
        resourcesync_client::WELL_KNOWN_PATH,
        "/.well-known/resourcesync"
    );
}

#[test]
fn robots_txt_of_the_specification() {
    // Example 11.
    let found = robots(
        "User-agent: *\nDisallow: /cgi-bin/\nDisallow: /tmp/\nSitemap: http://example.com/dataset1/resourcelist.xml\n",
    );
    assert_eq!(
        uris(&found),
        ["http://example.com/dataset1/resourcelist.xml"]
    );
    assert!(found.ignored.is_empty() && !found.truncated);
}

#[test]
fn robots_txt_as_servers_write_it() {
    let found = robots(concat!(
        "\u{feff}# robots.txt for example.com\r\n",
        "User-agent: Googlebot\r\n",
        "Disallow: /private/ # not this\r\n",
        "\r\n",
        "sitemap: https://example.com/sitemap.xml\r\n",
        "SITEMAP:https://example.com/rs/resourcelist.xml#frag\r",
        "  Sitemap  :   /relative/resourcelist.xml   \n",
        "Sitemap: resourcelist2.xml\n",
        "Sitemap: https://cdn.example.org/rl.xml?a=1&b=2\n",
        "Sitemap: https://example.com/sitemap.xml\n",
        "# Sitemap: https://example.com/commented.xml\n",
        "Sitemaps: https://example.com/not-the-field.xml\n",
        "Site-map: https://example.com/not-either.xml\n",
        "Sitemap:\n",
        "Sitemap: http://exa mple.com/x\n",
        "Sitemap: http://[::1/x\n",
        "Sitemap: https://example.com/last-line-without-newline.xml",
    ));
    assert_eq!(
        uris(&found),
        [
            "https://example.com/sitemap.xml",
            "https://example.com/rs/resourcelist.xml",
            "https://example.com/relative/resourcelist.xml",
            "https://example.com/resourcelist2.xml",
            "https://cdn.example.org/rl.xml?a=1&b=2",
            "https://example.com/last-line-without-newline.xml",
        ]
    );
    let reasons: Vec<_> = found
        .ignored
        .iter()
        .map(|i| (i.value.as_str(), &i.reason))
        .collect();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert_eq!(reasons[0], ("", &IgnoredReason::Empty));
    assert!(matches!(
        reasons[1],
        ("http://exa mple.com/x", IgnoredReason::Unresolvable(_))
    ));
    assert!(matches!(
        reasons[2],
        ("http://[::1/x", IgnoredReason::Unresolvable(_))
    ));
}

#[test]
fn robots_txt_that_is_not_utf8_or_not_robots_txt() {
    let body = b"Sitemap: http://example.com/caf\xE9.xml\nSitemap: http://example.com/ok.xml\n\xFF\xFE\x00garbage\n";
    let found = robots_txt(
        &uri("http://example.com/robots.txt"),
        body,
        &DiscoveryLimits::default(),
    );
    assert_eq!(uris(&found), ["http://example.com/ok.xml"]);
    assert_eq!(found.ignored.len(), 1);
    assert_eq!(found.ignored[0].reason, IgnoredReason::NotUtf8);
    assert_eq!(found.ignored[0].value, "http://example.com/caf\u{fffd}.xml");
    // An HTML error page served as robots.txt.
    let found = robots("<html><body><h1>404 Not Found</h1></body></html>");
    assert!(found.uris.is_empty() && found.ignored.is_empty());
    // Non-http values are found: judging them is the policy's.
    let found = robots("Sitemap: javascript:alert(1)\nSitemap: ftp://example.com/x");
    assert_eq!(uris(&found), ["javascript:alert(1)", "ftp://example.com/x"]);
}

#[test]
fn robots_txt_limits() {
    let body = "Sitemap: http://example.com/a.xml\nSitemap: http://example.com/bbbbbbbbbb.xml\n";
    // Cut in the middle of the second line: that line is not read.
    let cut = robots_txt(
        &uri("http://example.com/robots.txt"),
        body.as_bytes(),
        &limits(50, 10, 10),
    );
    assert_eq!(uris(&cut), ["http://example.com/a.xml"]);
    assert!(cut.truncated);
    let few = robots_txt(
        &uri("http://example.com/robots.txt"),
        body.as_bytes(),
        &limits(1000, 1, 10),
    );
    assert_eq!(uris(&few), ["http://example.com/a.xml"]);
    assert!(few.truncated);
    let exact = robots_txt(
        &uri("http://example.com/robots.txt"),
        body.as_bytes(),
        &limits(1000, 2, 10),
    );
    assert!(!exact.truncated);
    // A million sitemap lines: bounded output, bounded ignored list.
    let many = "Sitemap: http://example.com/x.xml\nSitemap:\n".repeat(100_000);
    let found = robots(&many);
    assert_eq!(found.uris.len(), 1);
    assert_eq!(found.ignored.len(), 100);
    assert!(found.truncated);
    // One enormous line.
    let long = format!("Sitemap: http://example.com/{}", "a".repeat(1_000_000));
    let found = robots(&long);
    assert!(found.uris.is_empty() && found.truncated);
    let long = format!("Sitemap: http://example.com/{}\n", "a".repeat(3000));
    assert_eq!(robots(&long).ignored[0].reason, IgnoredReason::TooLong);
    assert_eq!(robots(&long).ignored[0].value.chars().count(), 256);
}

#[test]
fn html_of_the_specification() {
    // Example 9.
    let found = html(
        r#"<html>
  <head>
    <link rel="resourcesync"
          href="http://example.com/dataset1/capabilitylist.xml"/>
  </head>
  <body>...</body>
</html>"#,
    );
    assert_eq!(
        uris(&found),
        ["http://example.com/dataset1/capabilitylist.xml"]
    );
}

#[test]
fn html_links_in_every_spelling() {
    let found = html(
        r#"<!doctype html>
<?xml-stylesheet nonsense?>
<HTML lang=en>
<HEAD>
<meta charset="utf-8">
<title>A <link rel="resourcesync" href="/in-title.xml"> title</title>
<script>var s = '<link rel="resourcesync" href="/in-script.xml">'; if (a < b) {}</script>
<style>a::before { content: "</head>" }</style>
<noscript><link rel="resourcesync" href="/in-noscript.xml"></noscript>
<template><link rel="resourcesync" href="/in-template.xml"></template>
<!-- <link rel="resourcesync" href="/in-comment.xml"> -->
<LINK REL="ResourceSync" HREF="/upper.xml">
<link href="/href-first.xml" rel="resourcesync">
<link rel='resourcesync' href='/single.xml'>
<link rel=resourcesync href=/unquoted.xml>
<link rel="alternate resourcesync  describedby" href="/tokens.xml">
<link rel="resourcesync" href="/amp.xml?a=1&amp;b=2&amp=3&#38;c=&#x34;&lt;">
<link rel="resourcesync" href="relative.xml">
<link rel="resourcesync" href="  /spaces.xml  ">
<link rel="resourcesync" href="/first.xml" href="/second.xml">
<link rel="stylesheet" href="/style.css">
<link rel="resourcesyncx" href="/not-the-token.xml">
<link rel="resourcesync">
<link rel="resourcesync" href="">
<link rel="resourcesync" href="/upper.xml">
<link rel="resourcesync" href="http://[bad/">
<link rel="resourcesync" href="/self-closing.xml"/>
<link
  rel="resourcesync"
  href="/multi-line.xml"
>
</head>
<body>
<link rel="resourcesync" href="/in-body.xml">
</body>
</HTML>"#,
    );
    assert_eq!(
        uris(&found),
        [
            "https://example.com/upper.xml",
            "https://example.com/href-first.xml",
            "https://example.com/single.xml",
            "https://example.com/unquoted.xml",
            "https://example.com/tokens.xml",
            "https://example.com/amp.xml?a=1&b=2&amp=3&c=4%3C",
            "https://example.com/dir/relative.xml",
            "https://example.com/spaces.xml",
            "https://example.com/first.xml",
            "https://example.com/self-closing.xml",
            "https://example.com/multi-line.xml",
        ]
    );
    let reasons: Vec<_> = found.ignored.iter().map(|i| &i.reason).collect();
    assert!(
        matches!(
            reasons[..],
            [
                IgnoredReason::Empty,
                IgnoredReason::Empty,
                IgnoredReason::Unresolvable(_)
            ]
        ),
        "{reasons:?}"
    );
}

#[test]
fn html_base_href() {
    // The first `<base href>` counts, wherever it stands in the head, and is itself
    // resolved against the document's URI.
    let found = html(
        r#"<head>
<link rel="resourcesync" href="before-base.xml">
<base target="_blank">
<base href="/other/dir/">
<base href="http://ignored.example/">
<link rel="resourcesync" href="after-base.xml">
<link rel="resourcesync" href="//cdn.example.org/x.xml">
</head>"#,
    );
    assert_eq!(
        uris(&found),
        [
            "https://example.com/other/dir/before-base.xml",
            "https://example.com/other/dir/after-base.xml",
            "https://cdn.example.org/x.xml",
        ]
    );
    // A base that cannot be resolved is passed over for the document's URI.
    let found = html(r#"<base href="http://[bad/"><link rel="resourcesync" href="x.xml">"#);
    assert_eq!(uris(&found), ["https://example.com/dir/x.xml"]);
}

#[test]
fn html_head_ends_where_the_standard_says() {
    for (page, expected) in [
        (
            r#"<link rel="resourcesync" href="/a.xml"><p>text</p><link rel="resourcesync" href="/b.xml">"#,
            1,
        ),
        (
            r#"<head><link rel="resourcesync" href="/a.xml">stray text<link rel="resourcesync" href="/b.xml">"#,
            1,
        ),
        (
            r#"<head><link rel="resourcesync" href="/a.xml"></head><link rel="resourcesync" href="/b.xml">"#,
            1,
        ),
        (
            r#"<head><link rel="resourcesync" href="/a.xml"></br><link rel="resourcesync" href="/b.xml">"#,
            1,
        ),
        (
            r#"<head><link rel="resourcesync" href="/a.xml"></span><link rel="resourcesync" href="/b.xml">"#,
            2,
        ),
        (r#"<body><link rel="resourcesync" href="/a.xml">"#, 0),
        (
            r#"<link rel="resourcesync" href="/a.xml"><link rel="resourcesync" href="/b.xml"#,
            1,
        ),
        (
            r#"<link rel="resourcesync" href="/a.xml"><link rel="resourcesync" href='/b.xml>"#,
            1,
        ),
        (
            r#"<!-- unterminated <link rel="resourcesync" href="/a.xml">"#,
            0,
        ),
        (r#"<script><link rel="resourcesync" href="/a.xml">"#, 0),
        (
            r#"<script>x</scriptx><link rel="resourcesync" href="/a.xml"></SCRIPT ><link rel="resourcesync" href="/b.xml">"#,
            1,
        ),
        ("", 0),
        ("\u{feff}<link rel=resourcesync href=/a.xml>", 1),
    ] {
        assert_eq!(html(page).uris.len(), expected, "{page}");
    }
}

#[test]
fn html_that_is_hostile() {
    let document = uri("https://example.com/");
    let run = |body: &[u8]| html_links(&document, body, &DiscoveryLimits::default());
    // Not UTF-8 in a href: ignored; elsewhere: no matter.
    let found = run(b"<title>caf\xE9</title><link rel=resourcesync href=\"/caf\xE9\"><link rel=resourcesync href=/ok>");
    assert_eq!(uris(&found), ["https://example.com/ok"]);
    assert_eq!(found.ignored[0].reason, IgnoredReason::NotUtf8);
    // References that decode to nothing sensible.
    let found =
        run(b"<link rel=resourcesync href=\"/a&#0;&#xD800;&#99999999999;&#x110000;&#;&bogus;\">");
    assert_eq!(
        uris(&found),
        ["https://example.com/a%EF%BF%BD%EF%BF%BD%EF%BF%BD%EF%BF%BD&#;&bogus;"]
    );
    // Many links: bounded.
    let many = "<link rel=resourcesync href=/x>".repeat(10_000)
        + &(0..5000)
            .map(|i| format!("<link rel=resourcesync href=/{i}>"))
            .collect::<String>();
    let found = run(many.as_bytes());
    assert_eq!(found.uris.len(), 1000);
    assert!(found.truncated);
    // A tag with a quarter of a million attributes: linear time.
    let attrs = format!("<link {} rel=resourcesync href=/a>", "a ".repeat(250_000));
    assert_eq!(uris(&run(attrs.as_bytes())), ["https://example.com/a"]);
    let attrs = format!(
        "<link {} rel=resourcesync href=/a>",
        "href=/x ".repeat(60_000)
    );
    assert_eq!(uris(&run(attrs.as_bytes())), ["https://example.com/x"]);
    // Many comments, raw-text elements and unterminated constructs.
    let comments =
        "<!-- a --><script>x</script>".repeat(15_000) + "<link rel=resourcesync href=/a>";
    assert_eq!(run(comments.as_bytes()).uris.len(), 1);
    let scripts = "<script></scrip".repeat(40_000);
    assert!(run(scripts.as_bytes()).uris.is_empty());
    // Deep nesting of tags that are allowed in the head, and an enormous attribute.
    let deep = "<template>".repeat(100_000);
    assert!(run(deep.as_bytes()).uris.is_empty());
    let huge = format!(
        "<link rel=resourcesync href=\"/{}\">",
        "a".repeat(2_000_000)
    );
    let found = run(huge.as_bytes());
    assert!(found.uris.is_empty() && found.truncated);
    // Cut at the byte limit in the middle of a tag.
    let found = html_links(
        &document,
        b"<link rel=resourcesync href=/a.xml><link rel=resourcesync href=/bbbbbbbbb.xml>",
        &limits(40, 10, 10),
    );
    assert_eq!(uris(&found), ["https://example.com/a.xml"]);
    assert!(found.truncated);
}

#[test]
fn link_header_of_the_specification() {
    // Example 10.
    let found = links(&[r#"<http://example.com/dataset1/capabilitylist.xml>; rel="resourcesync""#]);
    assert_eq!(
        uris(&found),
        ["http://example.com/dataset1/capabilitylist.xml"]
    );
}

#[test]
fn link_headers_in_every_spelling() {
    let found = links(&[
        r#"</style.css>; rel=stylesheet, <cl1.xml>; rel=resourcesync"#,
        r#"<../cl2.xml>;rel="ResourceSync""#,
        r#"<cl3.xml> ; title="a, b; c \"d\", <x.xml>; rel=resourcesync" ; rel="describedby resourcesync""#,
        r#"<cl4.xml>; rel="resourcesync"; rel="describedby""#,
        r#"<cl5.xml>; rel="describedby"; rel="resourcesync""#,
        r#"<https://cdn.example.org/cl6.xml?a=1,2;b=3>; type="application/xml"; rel=resourcesync"#,
        r#"<cl7.xml>; REL = "resourcesync""#,
        r#"<cl8.xml>; anchor="https://example.com/dir/res1"; rel="resourcesync""#,
        r##"<cl9.xml>; anchor="#section"; rel="resourcesync""##,
        r#"<cl10.xml>; anchor="/elsewhere"; rel="resourcesync""#,
        r#"<cl11.xml>; rel*=UTF-8''resourcesync"#,
        r#"<cl12.xml>; rel="resource sync""#,
        r#"<cl1.xml>; rel=resourcesync,,, <cl13.xml>; ; rel=resourcesync"#,
        "",
        "\t<cl14.xml>\t;\trel=resourcesync\t",
    ]);
    assert_eq!(
        uris(&found),
        [
            "https://example.com/dir/cl1.xml",
            "https://example.com/cl2.xml",
            "https://example.com/dir/cl3.xml",
            "https://example.com/dir/cl4.xml",
            "https://cdn.example.org/cl6.xml?a=1,2;b=3",
            "https://example.com/dir/cl7.xml",
            "https://example.com/dir/cl8.xml",
            "https://example.com/dir/cl13.xml",
            "https://example.com/dir/cl14.xml",
        ]
    );
    let reasons: Vec<_> = found
        .ignored
        .iter()
        .map(|i| (i.value.as_str(), &i.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("cl9.xml", &IgnoredReason::OtherAnchor),
            ("cl10.xml", &IgnoredReason::OtherAnchor)
        ]
    );
}

#[test]
fn link_headers_that_break_the_syntax() {
    let found = links(&[
        r#"cl1.xml; rel=resourcesync, <ok1.xml>; rel=resourcesync"#,
        r#"<cl2.xml; rel=resourcesync"#,
        r#"<cl3.xml>; rel="resourcesync, <ok2.xml>; rel=resourcesync"#,
        r#"<cl4.xml> rel=resourcesync, <ok3.xml>; rel=resourcesync"#,
        r#"<cl5.xml>; rel=resource/sync, <ok4.xml>; rel=resourcesync"#,
        r#"<cl6.xml>; rel="a\"#,
        r#"<>; rel=resourcesync"#,
        r#"<http://[::1>; rel=resourcesync"#,
    ]);
    assert_eq!(
        uris(&found),
        [
            "https://example.com/dir/ok1.xml",
            "https://example.com/dir/ok3.xml",
            "https://example.com/dir/ok4.xml",
        ]
    );
    let reasons: Vec<_> = found
        .ignored
        .iter()
        .map(|i| (i.value.as_str(), &i.reason))
        .collect();
    assert_eq!(
        reasons[0],
        ("cl1.xml; rel=resourcesync", &IgnoredReason::Malformed)
    );
    assert_eq!(
        reasons[1],
        ("<cl2.xml; rel=resourcesync", &IgnoredReason::Malformed)
    );
    assert_eq!(reasons[2].1, &IgnoredReason::Malformed);
    assert_eq!(
        reasons[3],
        ("<cl4.xml> rel=resourcesync", &IgnoredReason::Malformed)
    );
    assert_eq!(
        reasons[4],
        ("<cl5.xml>; rel=resource/sync", &IgnoredReason::Malformed)
    );
    assert_eq!(reasons[5].1, &IgnoredReason::Malformed);
    assert_eq!(reasons[6], ("", &IgnoredReason::Empty));
    assert!(matches!(reasons[7].1, IgnoredReason::Unresolvable(_)));
    assert_eq!(reasons.len(), 8);
}

#[test]
fn link_headers_as_bytes_and_bounded() {
    let request = uri("http://example.com/");
    let values: Vec<Vec<u8>> = vec![
        b"<caf\xE9.xml>; rel=resourcesync".to_vec(),
        b"<ok.xml>; title=\"caf\xE9\"; rel=resourcesync".to_vec(),
    ];
    let found = link_headers(&request, &values, &DiscoveryLimits::default());
    assert_eq!(uris(&found), ["http://example.com/ok.xml"]);
    assert_eq!(found.ignored[0].reason, IgnoredReason::NotUtf8);
    // The byte budget is shared by all values.
    let values = [
        "<a.xml>; rel=resourcesync",
        "<b.xml>; rel=resourcesync",
        "<c.xml>; rel=resourcesync",
    ];
    let found = link_headers(&request, values, &limits(50, 10, 10));
    assert_eq!(
        uris(&found),
        ["http://example.com/a.xml", "http://example.com/b.xml"]
    );
    assert!(found.truncated);
    let found = link_headers(&request, values, &limits(51, 10, 10));
    assert!(found.truncated);
    let found = link_headers(&request, values, &limits(75, 10, 10));
    assert!(!found.truncated && found.uris.len() == 3);
    let many = "<x.xml>; rel=resourcesync, ".repeat(100_000);
    let found = link_headers(&request, [many.as_str()], &DiscoveryLimits::default());
    assert_eq!(found.uris.len(), 1);
    assert!(found.truncated);
    let many: String = (0..20_000)
        .map(|i| format!("<{i}>;rel=resourcesync,"))
        .collect();
    let found = link_headers(&request, [many.as_str()], &DiscoveryLimits::default());
    assert_eq!(found.uris.len(), 1000);
    assert!(found.truncated);
}

/// Pieces of the three formats, to build inputs more interesting than random bytes.
fn pieces() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        proptest::sample::select(vec![
            "<",
            ">",
            "</",
            "<!--",
            "-->",
            "<!",
            "<?",
            "\"",
            "'",
            "=",
            " ",
            "\t",
            "\r\n",
            "\n",
            ",",
            ";",
            "\\",
            "&",
            "&amp;",
            "&#",
            "&#x",
            ";",
            "#",
            ":",
            "Sitemap:",
            "sitemap :",
            "<link",
            "<LINK ",
            "rel=",
            "rel=\"",
            "resourcesync",
            "href=",
            "href='",
            "<base href=",
            "<head>",
            "</head>",
            "<script>",
            "</script>",
            "<template>",
            "anchor=",
            "/",
            "..",
            "http://",
            "https://example.com/",
            "//",
            "[::1]",
            "%",
            "%zz",
            "\u{feff}",
            "é",
            "\0",
        ])
        .prop_map(|s| s.as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 0..4),
    ];
    proptest::collection::vec(piece, 0..64).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn arbitrary_bytes_never_panic(body in proptest::collection::vec(any::<u8>(), 0..512)) {
        let base = uri("http://example.com/a/b");
        let small = limits(256, 3, 3);
        for limits in [DiscoveryLimits::default(), small] {
            for found in [
                robots_txt(&base, &body, &limits),
                html_links(&base, &body, &limits),
                link_headers(&base, [&body, &body], &limits),
            ] {
                prop_assert!(found.uris.len() <= limits.max_uris);
                prop_assert!(found.ignored.len() <= limits.max_ignored);
            }
        }
    }

    #[test]
    fn structured_input_never_panics(body in pieces(), split in any::<prop::sample::Index>()) {
        let base = uri("http://example.com/a/b");
        let small = limits(128, 2, 2);
        for limits in [DiscoveryLimits::default(), small] {
            let (a, b) = body.split_at(split.index(body.len() + 1));
            for found in [
                robots_txt(&base, &body, &limits),
                html_links(&base, &body, &limits),
                link_headers(&base, [a, b], &limits),
            ] {
                prop_assert!(found.uris.len() <= limits.max_uris);
                prop_assert!(found.ignored.len() <= limits.max_ignored);
                for u in &found.uris {
                    let again = Uri::parse(u.as_str());
                    prop_assert_eq!(again.as_ref(), Ok(u));
                }
            }
        }
    }
}

/// A Source published under a path (its Capability List points `up` to
/// `/oai/data/.well-known/resourcesync`, as a large aggregator's does), three resources.
fn under_a_path() -> crate::sim::Source {
    let mut s = crate::sim::Source::new();
    s.base = "http://example.com/oai/data/".into();
    for i in 0..3 {
        s.put(&format!("r/{i}.txt"), format!("resource {i}").as_bytes());
    }
    s.tick(10);
    s.publish();
    s
}

#[test]
fn a_source_under_a_path_is_found_at_the_paths_well_known_uri_after_the_hosts() {
    use crate::sim::{Destination, Drive, sync};
    let s = under_a_path();
    let mut d = Destination::default();
    let mode = resourcesync_client::Mode::Baseline { prefer_dump: false };
    let run = sync(&s, &mut d, mode, "", |c| c, Drive::default());
    assert!(run.report().complete, "{:?}", run.problems());
    // Paths are relative to the host's root, as the Config's mapper makes them.
    let held: Vec<&str> = d.files.keys().map(String::as_str).collect();
    assert_eq!(
        held,
        ["oai/data/r/0.txt", "oai/data/r/1.txt", "oai/data/r/2.txt"]
    );
    assert_eq!(
        run.requests[..2],
        [
            "http://example.com/.well-known/resourcesync",
            "http://example.com/oai/data/.well-known/resourcesync",
        ]
    );
}

#[test]
fn when_discovery_finds_nothing_the_problem_names_every_place_it_looked() {
    use crate::sim::{Destination, Drive, sync};
    use resourcesync_client::{Event, ProblemKind};
    let mut s = under_a_path();
    s.files.remove(".well-known/resourcesync");
    let mut d = Destination::default();
    let run = sync(
        &s,
        &mut d,
        resourcesync_client::Mode::Audit,
        "",
        |c| c,
        Drive::default(),
    );
    assert!(!run.report().complete);
    let tried: Vec<(String, String)> = run
        .events
        .iter()
        .find_map(|e| match e {
            Event::Problem(p) => match &p.kind {
                ProblemKind::NotDiscovered { tried } => Some(tried.clone()),
                _ => None,
            },
            _ => None,
        })
        .unwrap_or_else(|| panic!("{:?}", run.problems()))
        .into_iter()
        .map(|a| (a.uri.to_string(), a.outcome))
        .collect();
    let status = "HTTP status 404".to_owned();
    assert_eq!(
        tried,
        [
            (
                "http://example.com/.well-known/resourcesync".into(),
                status.clone()
            ),
            (
                "http://example.com/oai/data/.well-known/resourcesync".into(),
                status.clone()
            ),
            ("http://example.com/robots.txt".into(), status.clone()),
            ("http://example.com/oai/data/".into(), status),
        ]
    );
    let message = &run.problems()[0];
    assert!(message.contains("offers no Source Description: tried http://example.com/.well-known/resourcesync (HTTP status 404), http://example.com/oai/data/.well-known/resourcesync"), "{message}");
}
