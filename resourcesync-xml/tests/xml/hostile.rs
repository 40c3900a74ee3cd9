//! Malformed and hostile input: each row must fail with a clear error of the named kind,
//! through the slice path and through readers of 1 to 7 bytes, never a panic, a hang or
//! unbounded memory.

use std::io::Write;

use resourcesync_xml::{ErrorKind, Limits};

use crate::read_everywhere;

const HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="http://example.com/caps.xml"/><rs:md capability="resourcelist" at="2013-01-03T09:00:00Z"/>
"#;

fn doc(body: &str) -> Vec<u8> {
    format!("{HEAD}{body}</urlset>").into_bytes()
}

fn url(loc: &str) -> String {
    format!("<url><loc>{loc}</loc></url>\n")
}

/// Which error a row expects, by the kind's variant.
fn kind_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Io(_) => "io",
        ErrorKind::Xml(_) => "xml",
        ErrorKind::DocType => "doctype",
        ErrorKind::UnknownEntity(_) => "entity",
        ErrorKind::ForbiddenCharacter(_) => "char",
        ErrorKind::Encoding(_) => "encoding",
        ErrorKind::Empty => "empty",
        ErrorKind::MisplacedDeclaration => "decl",
        ErrorKind::UnexpectedText(_) => "text",
        ErrorKind::UnexpectedElement(_) => "element",
        ErrorKind::Unclosed(_) => "unclosed",
        ErrorKind::NotSitemap { .. } => "not-sitemap",
        ErrorKind::UndeclaredPrefix(_) => "prefix",
        ErrorKind::TooManyEntries(_) => "entries",
        ErrorKind::TooLarge(_) => "bytes",
        ErrorKind::TooDeep(_) => "depth",
        ErrorKind::ValueTooLong(_) => "value",
        _ => "other",
    }
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).unwrap();
    enc.finish().unwrap()
}

fn rows() -> Vec<(&'static str, Vec<u8>, Limits, &'static str)> {
    let d = Limits::default();
    let billion_laughs = br#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>http://e.com/&lol2;</loc></url></urlset>"#;
    let xxe = br#"<?xml version="1.0"?>
<!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&xxe;</loc></url></urlset>"#;
    let deep = format!(
        "<url><loc>http://e.com/</loc>{}{}</url>",
        "<x:a xmlns:x=\"urn:x\">".repeat(100),
        "</x:a>".repeat(100)
    );
    let mut many = String::new();
    for i in 0..4 {
        many.push_str(&url(&format!("http://e.com/{i}")));
    }
    // 40 MB of white space inside a document: a gzip bomb of a few dozen kilobytes.
    let mut bomb = HEAD.as_bytes().to_vec();
    bomb.extend(std::iter::repeat_n(b' ', 40 << 20));
    bomb.extend_from_slice(b"</urlset>");
    let bomb = gzip(&bomb);
    assert!(bomb.len() < 100_000);
    vec![
        ("empty input", b"".to_vec(), d, "empty"),
        ("white space only", b"  \n ".to_vec(), d, "empty"),
        (
            "declaration only",
            b"<?xml version=\"1.0\"?>".to_vec(),
            d,
            "empty",
        ),
        ("billion laughs", billion_laughs.to_vec(), d, "doctype"),
        ("external entity", xxe.to_vec(), d, "doctype"),
        (
            "unknown entity in text",
            doc(&url("http://e.com/&foo;")),
            d,
            "entity",
        ),
        (
            "unknown entity in attribute",
            doc("<url><loc>http://e.com/</loc><rs:md type=\"&foo;\"/></url>"),
            d,
            "entity",
        ),
        (
            "NUL character reference",
            doc(&url("http://e.com/&#0;")),
            d,
            "char",
        ),
        (
            "control character reference",
            doc(&url("http://e.com/&#1;")),
            d,
            "char",
        ),
        (
            "raw control character",
            doc(&url("http://e.com/\u{1}")),
            d,
            "char",
        ),
        ("U+FFFF", doc(&url("http://e.com/\u{FFFF}")), d, "char"),
        ("unclosed root", HEAD.as_bytes().to_vec(), d, "unclosed"),
        (
            "unclosed entry",
            format!("{HEAD}<url><loc>http://e.com/</loc>").into_bytes(),
            d,
            "unclosed",
        ),
        (
            "second root",
            [doc(""), b"<urlset/>".to_vec()].concat(),
            d,
            "element",
        ),
        (
            "text after the root",
            [doc(""), b"junk".to_vec()].concat(),
            d,
            "text",
        ),
        (
            "declaration not first",
            [b"\n<!-- c -->".to_vec(), doc("")].concat(),
            d,
            "decl",
        ),
        (
            "invalid UTF-8",
            doc(&url("http://e.com/~"))
                .iter()
                .map(|&b| if b == b'~' { 0xFF } else { b })
                .collect(),
            d,
            "xml",
        ),
        (
            "another encoding declared",
            String::from_utf8(doc(""))
                .unwrap()
                .replace("UTF-8", "ISO-8859-1")
                .into_bytes(),
            d,
            "encoding",
        ),
        (
            "UTF-16 byte order mark",
            [vec![0xFF, 0xFE], doc("")].concat(),
            d,
            "xml",
        ),
        (
            "HTML root",
            b"<html><body/></html>".to_vec(),
            d,
            "not-sitemap",
        ),
        (
            "root in another namespace",
            b"<urlset xmlns=\"http://example.com/not-sitemaps\"/>".to_vec(),
            d,
            "not-sitemap",
        ),
        (
            "mismatched end tag",
            doc("<url><loc>http://e.com/</lastmod></url>"),
            d,
            "xml",
        ),
        (
            "undeclared prefix",
            doc("<url><loc>http://e.com/</loc><x:y/></url>"),
            d,
            "prefix",
        ),
        (
            "duplicate attribute",
            doc("<url><loc>http://e.com/</loc><rs:md length=\"1\" length=\"2\"/></url>"),
            d,
            "xml",
        ),
        (
            "duplicate attribute of rs:ln",
            doc(
                "<url><loc>http://e.com/</loc><rs:ln rel=\"a\" href=\"http://e.com/a\" rel=\"b\"/></url>",
            ),
            d,
            "xml",
        ),
        (
            "duplicate extension attribute of rs:md",
            doc("<url><loc>http://e.com/</loc><rs:md x=\"1\" length=\"2\" x=\"3\"/></url>"),
            d,
            "xml",
        ),
        (
            "duplicate prefixed attribute of rs:md",
            doc("<url><loc>http://e.com/</loc><rs:md rs:type=\"a/b\" rs:type=\"a/c\"/></url>"),
            d,
            "xml",
        ),
        (
            "markup inside loc",
            doc("<url><loc>http://e.com/<b>x</b></loc></url>"),
            d,
            "element",
        ),
        (
            "text inside url",
            doc("<url>text<loc>http://e.com/</loc></url>"),
            d,
            "text",
        ),
        ("text inside the root", doc("stray text"), d, "text"),
        (
            "content inside rs:md",
            doc("<url><loc>http://e.com/</loc><rs:md>x</rs:md></url>"),
            d,
            "text",
        ),
        (
            "entry inside an entry",
            doc("<url><loc>http://e.com/</loc><url/></url>"),
            d,
            "element",
        ),
        (
            "rs:md after the first entry",
            doc(&format!(
                "{}<rs:md capability=\"x\"/>",
                url("http://e.com/")
            )),
            d,
            "element",
        ),
        (
            "rs:ln after the first entry",
            doc(&format!(
                "{}<rs:ln rel=\"up\" href=\"http://e.com/c\"/>",
                url("http://e.com/")
            )),
            d,
            "element",
        ),
        (
            "over the entry limit",
            doc(&many),
            d.with_max_entries(3),
            "entries",
        ),
        (
            // The first entry counts like any other.
            "an entry limit of zero",
            doc(&url("http://e.com/")),
            d.with_max_entries(0),
            "entries",
        ),
        (
            "over the byte limit",
            doc(&many),
            d.with_max_bytes(300),
            "bytes",
        ),
        ("gzip bomb", bomb, d.with_max_bytes(1 << 20), "bytes"),
        ("deep nesting", doc(&deep), d, "depth"),
        (
            "one huge value",
            doc(&url(&format!("http://e.com/{}", "a".repeat(2 << 20)))),
            d,
            "value",
        ),
    ]
}

#[test]
fn hostile_input_is_refused_with_the_right_error() {
    for (name, bytes, limits, expected) in rows() {
        match read_everywhere(&bytes, limits) {
            Ok(_) => panic!("{name}: read without error"),
            Err(e) => {
                assert_eq!(kind_name(e.kind()), expected, "{name}: {e}");
                // The message names a place.
                assert!(e.to_string().starts_with("line "), "{name}: {e}");
            }
        }
    }
}

#[test]
fn gzipped_documents_are_read() {
    let plain = doc(&url("http://e.com/a"));
    let (doc_plain, _) = read_everywhere(&plain, Limits::default()).unwrap();
    let zipped = gzip(&plain);
    let (doc_gz, _) = read_everywhere(&zipped, Limits::default()).unwrap();
    assert_eq!(doc_plain, doc_gz);
    // Bytes are counted after decompression, through either source.
    let mut reader = resourcesync_xml::Reader::new(&zipped[..]).unwrap();
    while reader.next_entry().unwrap().is_some() {}
    assert_eq!(reader.bytes_read(), plain.len() as u64);
    let mut reader = resourcesync_xml::Reader::from_slice(&zipped);
    while reader.next_entry().unwrap().is_some() {}
    assert_eq!(reader.bytes_read(), plain.len() as u64);
}

#[test]
fn byte_order_mark_and_comments_are_accepted() {
    let bytes = [
        b"\xEF\xBB\xBF".to_vec(),
        doc("<!-- c --><?pi x?>\n"),
        b"<!-- after -->\n".to_vec(),
    ]
    .concat();
    let (doc, findings) = read_everywhere(&bytes, Limits::default()).unwrap();
    assert!(doc.entries.is_empty());
    assert!(findings.is_empty(), "{findings:?}");
}

#[test]
fn the_limit_counts_entries_not_bytes_of_findings() {
    // Exactly at the limit is fine.
    let mut body = String::new();
    for i in 0..3 {
        body.push_str(&url(&format!("http://e.com/{i}")));
    }
    let (doc, _) = read_everywhere(&doc(&body), Limits::default().with_max_entries(3)).unwrap();
    assert_eq!(doc.entries.len(), 3);
}
