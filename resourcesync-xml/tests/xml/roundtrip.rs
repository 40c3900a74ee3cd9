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
            )| Md {
                capability,
                at,
                completed,
                from,
                until,
                change,
                datetime,
                hash,
                length,
                path: path.map(BitstreamPath::new),
                media_type: t.map(|t| t.parse().unwrap()),
                encoding,
                extensions,
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
        .prop_map(|(loc, lastmod, changefreq, md, links, extensions)| Entry {
            loc,
            lastmod,
            changefreq,
            md,
            links,
            extensions,
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
            let mut head = DocumentHead::of_kind(kind).unwrap();
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn write_then_read_gives_the_same_document(doc in document()) {
        let written = write_document(Vec::new(), &doc).unwrap();
        let (read, _) = read_everywhere(&written, Limits::default())
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&written)));
        prop_assert_eq!(&read, &doc);
        // Same bytes again: every value kept its written form.
        prop_assert_eq!(write_document(Vec::new(), &read).unwrap(), written);
    }
}
