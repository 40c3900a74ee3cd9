//! Malformed and hostile input: each row must fail with a clear error of the named kind,
//! through the slice path and through readers of 1 to 7 bytes, never a panic, a hang or
//! unbounded memory.

use std::io::Write;

use resourcesync_xml::{ErrorKind, Limits, Reader};

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
        ErrorKind::Open(_) => "open",
        ErrorKind::Xml(_) => "xml",
        ErrorKind::DocType => "doctype",
        ErrorKind::UnknownEntity(_) => "entity",
        ErrorKind::ForbiddenCharacter(_) => "char",
        ErrorKind::Encoding(_) => "encoding",
        ErrorKind::Empty => "empty",
        ErrorKind::MisplacedDeclaration => "decl",
        ErrorKind::UnexpectedText(_) => "text",
        ErrorKind::UnexpectedElement(_) => "element",
        ErrorKind::AfterRoot(_) => "after-root",
        ErrorKind::NestedEntry(_) => "nested-entry",
        ErrorKind::UnexpectedEndTag(_) => "end-tag",
        ErrorKind::UnexpectedCData => "cdata",
        ErrorKind::Unclosed(_) => "unclosed",
        ErrorKind::NotSitemap { .. } => "not-sitemap",
        ErrorKind::UndeclaredPrefix(_) => "prefix",
        ErrorKind::TooManyEntries(_) => "entries",
        ErrorKind::TooLarge(_) => "bytes",
        ErrorKind::TooDeep(_) => "depth",
        ErrorKind::ValueTooLong(_) => "value",
        ErrorKind::CharacterReference(_) => "charref",
        ErrorKind::EventTooLong(_) => "event",
        ErrorKind::EntryTooLong { .. } => "entry",
        ErrorKind::TooManyChildren(_) => "children",
        ErrorKind::TooManyAttributes(_) => "attributes",
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
            "after-root",
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
            "undeclared prefix inside an extension",
            doc("<url><loc>http://e.com/</loc><x:y xmlns:x=\"urn:x\"><z:q/></x:y></url>"),
            d,
            "prefix",
        ),
        (
            "undeclared attribute prefix inside an extension",
            doc(
                "<url><loc>http://e.com/</loc><x:y xmlns:x=\"urn:x\"><x:q z:a=\"1\">t</x:q></x:y></url>",
            ),
            d,
            "prefix",
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
        ("CDATA inside the root", doc("<![CDATA[x]]>"), d, "cdata"),
        (
            "CDATA inside url",
            doc("<url><![CDATA[x]]><loc>http://e.com/</loc></url>"),
            d,
            "cdata",
        ),
        // quick-xml finds it before the reader could.
        ("end tag first", b"</urlset>".to_vec(), d, "xml"),
        ("urlset inside the root", doc("<urlset/>"), d, "element"),
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
            "nested-entry",
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
            doc(&url(&format!("http://e.com/{}", "a".repeat(3 << 19)))),
            d,
            "value",
        ),
    ]
}

/// Character references XML's grammar refuses, in text, attribute values and extension
/// content: `u32`'s parsers take a sign, XML takes digits only.
fn character_reference_rows() -> Vec<(&'static str, Vec<u8>, Limits, &'static str)> {
    let d = Limits::default();
    let in_text = |r: &str| doc(&url(&format!("http://e.com/{r}")));
    let in_attribute = |r: &str| {
        doc(&format!(
            "<url><loc>http://e.com/</loc><rs:md type=\"a/b{r}\"/></url>"
        ))
    };
    let in_extension = |r: &str| {
        doc(&format!(
            "<url><loc>http://e.com/</loc><x:y xmlns:x=\"urn:x\">{r}</x:y></url>"
        ))
    };
    let mut rows = Vec::new();
    for (name, reference) in [
        ("plus sign, hexadecimal", "&#x+41;"),
        ("plus sign, decimal", "&#+65;"),
        ("minus sign", "&#-65;"),
        ("no digits, hexadecimal", "&#x;"),
        ("no digits, decimal", "&#;"),
        ("white space", "&#x 41;"),
        ("surrogate", "&#xD800;"),
        ("beyond Unicode", "&#x110000;"),
        ("upper-case X", "&#X41;"),
    ] {
        rows.push((name, in_text(reference), d, "charref"));
        rows.push((name, in_attribute(reference), d, "charref"));
        rows.push((name, in_extension(reference), d, "charref"));
    }
    rows
}

/// What a reader passes over rather than keeps — comments, processing instructions, CDATA,
/// white space, tags — is bounded all the same, plain and gzipped, even with the byte
/// limits off as a validator runs; and what it keeps per entry is bounded by count and
/// length.
fn bounded_rows() -> Vec<(&'static str, Vec<u8>, Limits, &'static str)> {
    // Smaller limits than the defaults keep the rows quick through readers of 1 to 7
    // bytes; the first two rows and tests/memory.rs use the defaults.
    let u = Limits::unbounded_size()
        .with_max_event_len(64 << 10)
        .with_max_entry_len(1 << 20);
    let big = 100 << 10;
    let huge_comment = doc(&format!("<!--{}-->", "c".repeat(3 << 20)));
    let mut rows = vec![
        (
            "comment over the default limit, gzipped",
            gzip(&huge_comment),
            Limits::unbounded_size(),
            "event",
        ),
        (
            "comment over the default limit",
            huge_comment,
            Limits::unbounded_size(),
            "event",
        ),
    ];
    let pieces: Vec<(&'static str, String)> = vec![
        ("comment", format!("<!--{}-->", "c".repeat(big))),
        (
            "processing instruction",
            format!("<?pi {}?>", "p".repeat(big)),
        ),
        ("white space between entries", " ".repeat(big)),
        (
            "white space inside an entry",
            format!("<url>{}<loc>http://e.com/</loc></url>", "\n".repeat(big)),
        ),
        (
            "CDATA section",
            format!(
                "<url><loc><![CDATA[http://e.com/{}]]></loc></url>",
                "a".repeat(big)
            ),
        ),
        (
            "comment inside an extension",
            format!(
                "<url><loc>http://e.com/</loc><x:y xmlns:x=\"urn:x\"><!--{}--></x:y></url>",
                "c".repeat(big)
            ),
        ),
        (
            "start tag",
            format!(
                "<url><loc>http://e.com/</loc><x:y xmlns:x=\"urn:x\" {}/></url>",
                "  ".repeat(big / 2)
            ),
        ),
    ];
    for (name, piece) in pieces {
        let plain = doc(&format!(
            "{}{piece}{}",
            url("http://e.com/1"),
            url("http://e.com/2")
        ));
        rows.push((name, gzip(&plain), u, "event"));
        rows.push((name, plain, u, "event"));
    }
    let children = |n: usize| "<x:a xmlns:x=\"urn:x\"/>".repeat(n);
    let links = |n: usize| "<rs:ln rel=\"alternate\" href=\"http://e.com/m\"/>".repeat(n);
    let attributes = |n: usize| (0..n).map(|i| format!(" x:a{i}=\"1\"")).collect::<String>();
    rows.extend([
        (
            "many extension elements in one entry",
            doc(&format!("<url><loc>http://e.com/</loc>{}</url>", children(1025))),
            u,
            "children",
        ),
        (
            "many links in one entry",
            doc(&format!("<url><loc>http://e.com/</loc>{}</url>", links(1025))),
            u,
            "children",
        ),
        (
            "many locs in one entry",
            doc(&format!("<url>{}</url>", "<loc>http://e.com/</loc>".repeat(1025))),
            u,
            "children",
        ),
        (
            "many links in the head",
            format!("{HEAD}{}</urlset>", links(1025)).into_bytes(),
            u,
            "children",
        ),
        (
            "many attributes on rs:md",
            doc(&format!(
                "<url><loc>http://e.com/</loc><rs:md xmlns:x=\"urn:x\"{}/></url>",
                attributes(257)
            )),
            u,
            "attributes",
        ),
        (
            "many attributes on rs:ln",
            doc(&format!(
                "<url><loc>http://e.com/</loc><rs:ln rel=\"a\" href=\"http://e.com/\" xmlns:x=\"urn:x\"{}/></url>",
                attributes(257)
            )),
            u,
            "attributes",
        ),
        (
            "many attributes on an extension element",
            doc(&format!(
                "<url><loc>http://e.com/</loc><x:y xmlns:x=\"urn:x\"{}/></url>",
                attributes(257)
            )),
            u,
            "attributes",
        ),
        (
            "many attributes on url",
            doc(&format!(
                "<url xmlns:x=\"urn:x\"{}><loc>http://e.com/</loc></url>",
                attributes(257)
            )),
            u,
            "attributes",
        ),
        (
            // Each extension is under the value limit, their number under the children
            // limit: the entry's length is what stops it.
            "one long entry",
            doc(&format!(
                "<url><loc>http://e.com/</loc>{}</url>",
                format!("<x:y xmlns:x=\"urn:x\">{}</x:y>", "v".repeat(50_000)).repeat(30)
            )),
            u,
            "entry",
        ),
        (
            "a long head",
            format!(
                "{HEAD}{}</urlset>",
                format!("<x:y xmlns:x=\"urn:x\">{}</x:y>", "v".repeat(50_000)).repeat(30)
            )
            .into_bytes(),
            u,
            "entry",
        ),
    ]);
    rows
}

/// Every row of the tables here: name, document, limits, expected error.
pub(crate) fn all_rows() -> Vec<(&'static str, Vec<u8>, Limits, &'static str)> {
    let mut rows = rows();
    rows.extend(character_reference_rows());
    rows.extend(bounded_rows());
    rows
}

#[test]
fn hostile_input_is_refused_with_the_right_error() {
    check_rows(rows());
}

#[test]
fn malformed_character_references_are_refused() {
    check_rows(character_reference_rows());
}

#[test]
fn what_is_skipped_or_kept_is_bounded() {
    check_rows(bounded_rows());
}

#[test]
fn noncharacters_are_named_right() {
    for (text, named) in [("\u{FFFE}", "U+FFFE"), ("\u{FFFF}", "U+FFFF")] {
        for bytes in [
            doc(&url(&format!("http://e.com/{text}"))),
            doc(&format!(
                "<url><loc>http://e.com/</loc><rs:md type=\"a/b{text}\"/></url>"
            )),
        ] {
            let e = read_everywhere(&bytes, Limits::default()).unwrap_err();
            assert!(e.to_string().contains(named), "{e}");
        }
    }
}

fn check_rows(rows: Vec<(&'static str, Vec<u8>, Limits, &'static str)>) {
    for (name, bytes, limits, expected) in rows {
        match read_everywhere(&bytes, limits) {
            Ok(_) => panic!("{name}: read without error"),
            Err(e) => {
                assert_eq!(kind_name(e.kind()), expected, "{name}: {e}");
                // The message names a place.
                assert!(e.to_string().starts_with("line "), "{name}: {e}");
                assert_readable(name, &e);
            }
        }
    }
}

/// An error's message shows no Rust syntax, and no cause in its chain is printed twice
/// (once in a message and again as the source after it).
fn assert_readable(name: &str, e: &(dyn std::error::Error + 'static)) {
    let mut level: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(error) = level {
        let message = error.to_string();
        for debug in ["Some(", "None", "Box(", "\\u{"] {
            assert!(!message.contains(debug), "{name}: {message}");
        }
        if let Some(source) = error.source() {
            assert!(
                !message.contains(&source.to_string()),
                "{name}: {message} repeats its source"
            );
        }
        level = error.source();
    }
}

#[test]
fn write_errors_name_their_cause_once() {
    #[derive(Debug)]
    struct Failing;
    impl std::io::Write for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::other("disk full"))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (document, _) = read_everywhere(&doc(&url("http://e.com/a")), Limits::default()).unwrap();
    let e = resourcesync_xml::write_document(Failing, &document).unwrap_err();
    assert_eq!(e.to_string(), "write failed: disk full");
    assert_readable("write", &e);
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

/// `Reader::open` reads a file as `BufRead`, gzipped or not, and every error, from opening
/// it to a fault deep inside, names its path.
#[test]
fn files_are_opened_by_path_and_errors_name_them() {
    let dir = tempfile::tempdir().unwrap();
    let plain = doc(&url("http://e.com/a"));
    let (expected, _) = read_everywhere(&plain, Limits::default()).unwrap();
    for (name, bytes) in [("list.xml", plain.clone()), ("list.xml.gz", gzip(&plain))] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let (read, findings) = Reader::open(&path).unwrap().read_to_document().unwrap();
        assert_eq!((read, findings), (expected.clone(), vec![]), "{name}");
    }

    let broken = dir.path().join("broken.xml.gz");
    std::fs::write(&broken, gzip(&doc(&url("&bogus;")))).unwrap();
    let error = Reader::open_with_limits(&broken, Limits::default())
        .unwrap()
        .read_to_document()
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::UnknownEntity(_)));
    assert_eq!(error.path(), Some(broken.as_path()));
    let message = error.to_string();
    assert!(
        message.starts_with(&format!("{}: line 4, column ", broken.display())),
        "{message}"
    );

    let missing = dir.path().join("missing.xml");
    let error = Reader::open(&missing).unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Open(e) if e.kind() == std::io::ErrorKind::NotFound));
    assert_eq!(error.path(), Some(missing.as_path()));
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}: cannot open: ", missing.display()))
    );

    // A reader over a `BufRead` has no path to name.
    let error = Reader::new(&doc(&url("&bogus;"))[..])
        .unwrap()
        .read_to_document()
        .unwrap_err();
    assert_eq!(error.path(), None);
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
