//! Write → read gives back the same model, for arbitrary documents of every kind with
//! extensions; and writing what was read gives the same bytes, so every datetime, hash and
//! extension keeps its written form.

use proptest::prelude::*;
use resourcesync_model::*;
use resourcesync_xml::{Limits, write_document};

use crate::read_everywhere;

fn url() -> impl Strategy<Value = Uri> {
    (
        "[a-z]{1,8}",
        "[a-zA-Z0-9/._~-]{0,24}",
        proptest::option::of("[a-z0-9=&]{1,12}"),
    )
        .prop_map(|(host, path, query)| {
            let q = query.map(|q| format!("?{q}")).unwrap_or_default();
            Uri::parse(&format!("http://{host}.example.com/{path}{q}")).unwrap()
        })
}

fn datetime() -> impl Strategy<Value = W3cDateTime> {
    (
        1990u32..2030,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0usize..7,
        "[0-9]{1,12}",
        prop_oneof![Just("Z".to_string()), "[+-](0[0-9]|1[0-3]):[0-5][0-9]"],
    )
        .prop_map(|(y, mo, d, h, mi, form, frac, tz)| {
            let text = match form {
                0 => format!("{y:04}"),
                1 => format!("{y:04}-{mo:02}"),
                2 => format!("{y:04}-{mo:02}-{d:02}"),
                3 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}{tz}"),
                4 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{mi:02}.{frac}{tz}"),
                _ => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{mi:02}{tz}"),
            };
            text.parse().unwrap()
        })
}

fn hashes() -> impl Strategy<Value = Hashes> {
    (
        proptest::collection::vec(any::<u8>(), 16),
        proptest::collection::vec(any::<u8>(), 32),
        0..3u8,
    )
        .prop_map(|(md5, sha, which)| {
            let md5 = Hash::from_bytes(HashAlgorithm::Md5, &md5).unwrap();
            let sha = Hash::from_bytes(HashAlgorithm::Sha256, &sha).unwrap();
            match which {
                0 => Hashes::from(md5),
                1 => Hashes::new(vec![md5, sha]).unwrap(),
                _ => "x-crc32:0A1b2C3d".parse().unwrap(),
            }
        })
}

/// Text with every character that needs escaping, white space that attribute
/// normalization would change, and non-ASCII.
fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9 <>&\"'\t\n\r=é☃-]{0,16}"
}

/// Namespaces an extension may be given, the reserved and the odd included.
fn namespace() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("http://example.org/ext".to_string()),
        1 => Just(String::new()),
        1 => Just(SITEMAP_NAMESPACE.to_string()),
        1 => Just(RS_NAMESPACE.to_string()),
        1 => Just("http://www.w3.org/XML/1998/namespace".to_string()),
        1 => Just("http://www.w3.org/2000/xmlns/".to_string()),
        1 => "[ -~]{0,12}",
    ]
}

/// Prefix hints, the unusable included.
fn prefix() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("ex".to_string())),
        Just(Some("rs".to_string())),
        Just(Some("xml".to_string())),
        Just(Some("xmlns".to_string())),
        Just(Some("ns1".to_string())),
        "[ -~]{0,4}".prop_map(Some),
    ]
}

/// Any local name: ordinary, the standard's own, or no XML name at all.
fn any_name() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z]{1,6}",
        1 => prop::sample::select(vec!["url", "loc", "md", "ln", "length", "at", "hash", "rel", "href", "xmlns", "capability"]).prop_map(str::to_owned),
        1 => "\\PC{0,6}",
    ]
}

/// Unsanitised extension attributes: any namespace, prefix, name and value, control
/// characters included, names repeated.
fn any_extension_attributes() -> impl Strategy<Value = Vec<Attribute>> {
    proptest::collection::vec(
        (
            namespace(),
            prefix(),
            any_name(),
            prop_oneof!["\\PC{0,8}", "[\\x00-\\x1f]{1,2}", Just("5".to_string())],
        )
            .prop_map(|(namespace, prefix, name, value)| Attribute {
                namespace,
                prefix,
                name,
                value,
            }),
        0..3,
    )
}

/// Unsanitised extension elements: any namespace, prefix and name, and content that may
/// be unbalanced, undeclared, or close the document early.
fn any_extension_elements() -> impl Strategy<Value = Vec<Element>> {
    proptest::collection::vec(
        (
            namespace(),
            prefix(),
            any_name(),
            any_extension_attributes(),
            prop_oneof![
                Just(String::new()),
                Just("</url></urlset>".to_string()),
                Just("<q:b/>".to_string()),
                Just("<q:b xmlns:q=\"urn:q\"/>".to_string()),
                Just("<a>".to_string()),
                Just("<!-- c -->".to_string()),
                Just("&bogus;".to_string()),
                "\\PC{0,10}",
                "[<>&a-z/=\" ]{0,12}",
            ],
        )
            .prop_map(|(namespace, prefix, name, attributes, content)| Element {
                namespace,
                prefix,
                name,
                attributes,
                content,
            }),
        0..2,
    )
}

fn extension_attributes() -> impl Strategy<Value = Vec<Attribute>> {
    proptest::collection::vec(
        (0..2u8, "[a-z]{1,6}", text()).prop_map(|(ns, name, value)| {
            if ns == 0 {
                Attribute {
                    namespace: "http://example.org/ext".into(),
                    prefix: Some("ex".into()),
                    name,
                    value,
                }
            } else {
                // No namespace, under a name ResourceSync does not use.
                Attribute {
                    namespace: String::new(),
                    prefix: None,
                    name: format!("x-{name}"),
                    value,
                }
            }
        }),
        0..3,
    )
    .prop_map(|mut attrs| {
        // Attribute names are unique on an element.
        attrs.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        attrs.dedup_by(|a, b| a.namespace == b.namespace && a.name == b.name);
        attrs
    })
}

fn extension_elements() -> impl Strategy<Value = Vec<Element>> {
    proptest::collection::vec(
        ("[a-z]{1,6}", extension_attributes(), text(), any::<bool>()).prop_map(
            |(name, attributes, content, nested)| {
                let mut escaped = String::new();
                for c in content.chars() {
                    match c {
                        '&' => escaped.push_str("&amp;"),
                        '<' => escaped.push_str("&lt;"),
                        '>' => escaped.push_str("&gt;"),
                        '\r' => escaped.push_str("&#13;"),
                        c => escaped.push(c),
                    }
                }
                if nested {
                    escaped = format!("<img:loc a=\"1\">{escaped}</img:loc><img:x/>");
                }
                Element {
                    namespace: "http://www.google.com/schemas/sitemap-image/1.1".into(),
                    prefix: Some("img".into()),
                    name,
                    attributes: attributes
                        .into_iter()
                        .filter(|a| !a.namespace.is_empty())
                        .collect(),
                    content: escaped,
                }
            },
        ),
        0..2,
    )
}

fn md() -> impl Strategy<Value = Md> {
    (
        (
            proptest::option::of(prop_oneof![
                Just(Capability::ResourceList),
                Just(Capability::ChangeDumpArchive),
                Just(Capability::from("x-custom"))
            ]),
            proptest::option::of(datetime()),
            proptest::option::of(datetime()),
            proptest::option::of(datetime()),
            proptest::option::of(datetime()),
        ),
        (
            proptest::option::of(prop_oneof![
                Just(Change::Created),
                Just(Change::Updated),
                Just(Change::Deleted)
            ]),
            proptest::option::of(datetime()),
            proptest::option::of(hashes()),
            proptest::option::of(any::<u64>()),
        ),
        (
            proptest::option::of("/[a-z/]{1,12}"),
            proptest::option::of(prop_oneof![
                Just("text/html"),
                Just("application/xml; charset=\"utf-8\"")
            ]),
            proptest::option::of("gzip|br"),
            extension_attributes(),
        ),
    )
        .prop_map(
            |(
                (capability, at, completed, from, until),
                (change, datetime, hash, length),
                (path, t, encoding, extensions),
            )| {
                let mut md = Md::new();
                md.capability = capability;
                md.at = at;
                md.completed = completed;
                md.from = from;
                md.until = until;
                md.change = change;
                md.datetime = datetime;
                md.hash = hash;
                md.length = length;
                md.path = path.map(BitstreamPath::new);
                md.media_type = t.map(|t| t.parse().unwrap());
                md.encoding = encoding;
                md.extensions = extensions;
                md
            },
        )
}

fn link() -> impl Strategy<Value = Link> {
    (
        prop_oneof![
            Just(Relation::Up),
            Just(Relation::Patch),
            Just(Relation::Duplicate),
            Just(Relation::Registered("license".into())),
            Just(Relation::Uri("http://example.org/rels/x".into()))
        ],
        url(),
        proptest::option::of(1u32..=999_999),
        proptest::option::of(datetime()),
        proptest::option::of(hashes()),
        proptest::option::of(any::<u64>()),
        proptest::option::of("/[a-z]{1,8}"),
        extension_attributes(),
    )
        .prop_map(
            |(rel, href, pri, modified, hash, length, path, extensions)| {
                let mut link = Link::new(rel, href);
                link.pri = pri.map(|p| Priority::new(p).unwrap());
                link.modified = modified;
                link.hash = hash;
                link.length = length;
                link.path = path.map(BitstreamPath::new);
                link.extensions = extensions;
                link
            },
        )
}

fn entry() -> impl Strategy<Value = Entry> {
    (
        url(),
        proptest::option::of(datetime()),
        proptest::option::of(prop_oneof![
            Just(ChangeFreq::Daily),
            Just(ChangeFreq::Never)
        ]),
        proptest::option::of(md()),
        proptest::collection::vec(link(), 0..3),
        extension_elements(),
    )
        .prop_map(|(loc, lastmod, changefreq, md, links, extensions)| {
            let mut entry = Entry::new(loc);
            entry.lastmod = lastmod;
            entry.changefreq = changefreq;
            entry.md = md;
            entry.links = links;
            entry.extensions = extensions;
            entry
        })
}

fn document() -> impl Strategy<Value = Document> {
    (
        proptest::sample::select(DocumentKind::DEFINED.to_vec()),
        md(),
        proptest::collection::vec(link(), 0..3),
        extension_attributes(),
        extension_elements(),
        proptest::collection::vec(entry(), 0..6),
    )
        .prop_map(|(kind, mut md, links, attributes, extensions, entries)| {
            let mut head = DocumentHead::of_kind(kind);
            md.capability = head.md.capability.take();
            head.md = md;
            head.links = links;
            // Root attributes in no namespace are not ResourceSync's to keep.
            head.attributes = attributes
                .into_iter()
                .filter(|a| !a.namespace.is_empty())
                .collect();
            head.extensions = extensions;
            Document { head, entries }
        })
}

/// A document whose extensions are unsanitised, in the head and in its entries.
fn document_with_any_extensions() -> impl Strategy<Value = Document> {
    (
        document(),
        any_extension_attributes(),
        any_extension_attributes(),
        any_extension_elements(),
        any_extension_elements(),
    )
        .prop_map(|(mut doc, root, md, head, entry)| {
            doc.head.attributes.extend(root);
            doc.head.md.extensions.extend(md);
            doc.head.extensions.extend(head);
            if let Some(first) = doc.entries.first_mut() {
                first.extensions.extend(entry);
            }
            doc
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Whatever the writer accepts reads back as itself; the rest it refuses.
    #[test]
    fn the_writer_never_writes_what_reads_differently(doc in document_with_any_extensions()) {
        crate::document::assert_round_trip(&doc);
    }

    #[test]
    fn write_then_read_gives_the_same_document(doc in document()) {
        let written = write_document(Vec::new(), &doc).unwrap().output;
        let (read, _) = read_everywhere(&written, Limits::default())
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&written)));
        prop_assert_eq!(&read, &doc);
        // Same bytes again: every value kept its written form.
        prop_assert_eq!(write_document(Vec::new(), &read).unwrap().output, written);
    }
}

fn ext_attribute(namespace: &str, prefix: Option<&str>, name: &str, value: &str) -> Attribute {
    Attribute {
        namespace: namespace.into(),
        prefix: prefix.map(str::to_owned),
        name: name.into(),
        value: value.into(),
    }
}

fn ext_element(namespace: &str, prefix: Option<&str>, name: &str, content: &str) -> Element {
    Element {
        namespace: namespace.into(),
        prefix: prefix.map(str::to_owned),
        name: name.into(),
        attributes: Vec::new(),
        content: content.into(),
    }
}

fn resource_list() -> DocumentHead {
    let mut head = DocumentHead::of_kind(DocumentKind::ResourceList);
    head.md.at = Some("2013-01-03T09:00:00Z".parse().unwrap());
    head
}

/// An element and its attributes in different namespaces once both got `ns1`, and the
/// element declared it twice; hints that clash, or name another binding, are replaced.
#[test]
fn prefixes_are_declared_once_per_element() {
    let mut element = ext_element("urn:a", None, "e", "");
    element.attributes = vec![
        ext_attribute("urn:b", None, "x", "1"),
        ext_attribute("urn:c", Some("ns1"), "y", "2"),
        ext_attribute("urn:d", Some("ns2"), "z", "3"),
        ext_attribute("urn:e", Some("rs"), "w", "4"),
    ];
    let mut entry = Entry::new("http://e.com/a".parse().unwrap());
    entry.extensions.push(element);
    entry.md = Some({
        let mut md = Md::new();
        md.extensions = vec![
            ext_attribute("urn:b", Some("rs"), "x", "1"),
            ext_attribute("urn:c", Some("ns1"), "y", "2"),
            ext_attribute("urn:d", None, "z", "3"),
        ];
        md
    });
    let mut doc = Document::new(resource_list());
    doc.entries.push(entry);
    crate::document::assert_round_trip(&doc);
    let xml = String::from_utf8(write_document(Vec::new(), &doc).unwrap().output).unwrap();
    assert!(!xml.contains("xmlns:rs=\"urn:"), "{xml}");
}

#[test]
fn extensions_that_would_read_differently_are_refused() {
    let refused: Vec<(&str, Element)> = vec![
        (
            "closes the document",
            ext_element("urn:a", None, "e", "</url></urlset>"),
        ),
        ("unbalanced", ext_element("urn:a", None, "e", "<b>")),
        (
            "undeclared prefix",
            ext_element("urn:a", None, "e", "<q:b/>"),
        ),
        ("bare ampersand", ext_element("urn:a", None, "e", "a & b")),
        ("unknown entity", ext_element("urn:a", None, "e", "&nbsp;")),
        ("comment", ext_element("urn:a", None, "e", "<!-- c -->")),
        (
            "control character",
            ext_element("urn:a", None, "e", "\u{1}"),
        ),
        ("no XML name", ext_element("urn:a", None, "a b", "")),
        (
            "a Sitemap element",
            ext_element(SITEMAP_NAMESPACE, None, "url", ""),
        ),
        (
            "a ResourceSync element",
            ext_element(RS_NAMESPACE, None, "md", ""),
        ),
        (
            "the xmlns namespace",
            ext_element("http://www.w3.org/2000/xmlns/", None, "e", ""),
        ),
    ];
    for (name, element) in refused {
        let mut entry = Entry::new("http://e.com/a".parse().unwrap());
        entry.extensions.push(element);
        let mut writer = resourcesync_xml::Writer::new(Vec::new(), &resource_list()).unwrap();
        let error = writer.write_entry(&entry).unwrap_err();
        assert!(
            matches!(error, resourcesync_xml::WriteError::Extension { .. }),
            "{name}: {error}"
        );
        // Nothing of the refused entry was written, and the writer goes on.
        writer
            .write_entry(&Entry::new("http://e.com/b".parse().unwrap()))
            .unwrap();
        let xml = writer.finish().unwrap().output;
        let (read, _) = read_everywhere(&xml, Limits::default()).unwrap();
        assert_eq!(read.entries.len(), 1, "{name}");
    }
    let refused_attributes = [
        (
            "typed attribute of rs:md",
            ext_attribute("", None, "length", "5"),
        ),
        (
            "ResourceSync namespace",
            ext_attribute(RS_NAMESPACE, None, "foo", "1"),
        ),
        ("a declaration", ext_attribute("", None, "xmlns", "urn:x")),
        ("no XML name", ext_attribute("urn:a", None, "1x", "1")),
    ];
    for (name, attribute) in refused_attributes {
        let mut entry = Entry::new("http://e.com/a".parse().unwrap());
        let mut md = Md::default();
        md.extensions.push(attribute);
        entry.md = Some(md);
        let mut writer = resourcesync_xml::Writer::new(Vec::new(), &resource_list()).unwrap();
        assert!(writer.write_entry(&entry).is_err(), "{name}");
    }
    // The same attribute twice.
    let mut head = resource_list();
    head.attributes = vec![
        ext_attribute("urn:a", None, "x", "1"),
        ext_attribute("urn:a", Some("p"), "x", "2"),
    ];
    assert!(resourcesync_xml::Writer::new(Vec::new(), &head).is_err());
}

#[test]
fn values_xml_cannot_carry_are_refused() {
    let mut entry = Entry::new("http://e.com/a".parse().unwrap());
    entry.md = Some(Md::new().with_encoding("gzip\u{0}".into()));
    let mut writer = resourcesync_xml::Writer::new(Vec::new(), &resource_list()).unwrap();
    let error = writer.write_entry(&entry).unwrap_err();
    assert_eq!(
        error.to_string(),
        "encoding: character U+0000 is not allowed in XML"
    );
    entry.md = Some(Md::new().with_path(BitstreamPath::new("/a\u{FFFE}")));
    let error = writer.write_entry(&entry).unwrap_err();
    assert_eq!(
        error.to_string(),
        "path: character U+FFFE is not allowed in XML"
    );
    // In a hash, only an unknown algorithm's name is text as written: checked alike.
    for (hash, code) in [("x\u{FFFF}:abcd", "FFFF"), ("x\u{1}:abcd", "0001")] {
        let hashes: resourcesync_model::Hashes = hash.parse().unwrap();
        entry.md = Some(Md::new().with_hash(hashes));
        let error = writer.write_entry(&entry).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("hash: character U+{code} is not allowed in XML")
        );
    }
    // Tab, line feed and carriage return are carried, escaped.
    entry.md = Some(Md::new().with_encoding("a\tb\nc\rd".into()));
    writer.write_entry(&entry).unwrap();
    let (read, _) = read_everywhere(&writer.finish().unwrap().output, Limits::default()).unwrap();
    assert_eq!(read.entries.len(), 1);
    assert_eq!(
        read.entries[0].md.as_ref().unwrap().encoding.as_deref(),
        Some("a\tb\nc\rd")
    );
}
