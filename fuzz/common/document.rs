//! An arbitrary ResourceSync document from fuzz bytes, for the structured round-trip
//! target. Shared with `resourcesync-xml/tests/xml/fuzz_corpus.rs`, which replays the
//! committed corpus under `cargo test`.

use arbitrary::{Result, Unstructured};
use resourcesync_model::*;

fn pick<'a, T>(u: &mut Unstructured<'_>, items: &'a [T]) -> Result<&'a T> {
    u.choose(items)
}

fn text(u: &mut Unstructured<'_>) -> Result<String> {
    // Any characters XML allows, markup characters and white space included.
    let s: String = u.arbitrary()?;
    Ok(s.chars()
        .filter(|&c| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..))
        .take(40)
        .collect())
}

fn name(u: &mut Unstructured<'_>) -> Result<String> {
    let len = u.int_in_range(1..=8)?;
    (0..len)
        .map(|_| Ok(char::from(b'a' + u.int_in_range(0..=25)?)))
        .collect()
}

fn uri(u: &mut Unstructured<'_>) -> Result<Uri> {
    let scheme = pick(u, &["http", "https", "ftp", "urn"])?;
    let path: String = name(u)?;
    let query = if u.arbitrary()? {
        format!("?a={}&b=%20", name(u)?)
    } else {
        String::new()
    };
    let text = if *scheme == "urn" {
        format!("urn:x:{path}")
    } else {
        format!("{scheme}://{}.example.com/{path}{query}", name(u)?)
    };
    Ok(text.parse().expect("generated URIs are valid"))
}

fn datetime(u: &mut Unstructured<'_>) -> Result<W3cDateTime> {
    let (y, mo, d) = (
        u.int_in_range(0..=9999)?,
        u.int_in_range(1..=12)?,
        u.int_in_range(1..=28)?,
    );
    let (h, mi, s) = (
        u.int_in_range(0..=23)?,
        u.int_in_range(0..=59)?,
        u.int_in_range(0..=59)?,
    );
    let tz = match u.int_in_range(0..=2)? {
        0 => "Z".to_string(),
        1 => format!(
            "+{:02}:{:02}",
            u.int_in_range(0..=23)?,
            u.int_in_range(0..=59)?
        ),
        _ => format!(
            "-{:02}:{:02}",
            u.int_in_range(0..=23)?,
            u.int_in_range(0..=59)?
        ),
    };
    let digits = u.int_in_range(1..=15)?;
    let frac: String = (0..digits)
        .map(|i| char::from(b'0' + ((y as usize + i) % 10) as u8))
        .collect();
    let text = match u.int_in_range(0..=5)? {
        0 => format!("{y:04}"),
        1 => format!("{y:04}-{mo:02}"),
        2 => format!("{y:04}-{mo:02}-{d:02}"),
        3 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}{tz}"),
        4 => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{tz}"),
        _ => format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{frac}{tz}"),
    };
    Ok(text.parse().expect("generated datetimes are valid"))
}

fn option<T>(
    u: &mut Unstructured<'_>,
    f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Option<T>> {
    if u.arbitrary()? {
        Ok(Some(f(u)?))
    } else {
        Ok(None)
    }
}

/// Any text at all, control characters and U+FFFE included: what a caller may put in an
/// extension, which the writer must refuse or write so that it reads back as itself.
fn raw_text(u: &mut Unstructured<'_>) -> Result<String> {
    let s: String = u.arbitrary()?;
    Ok(s.chars().take(40).collect())
}

/// Namespaces an extension may be given, the reserved and the odd included.
const NAMESPACES: &[&str] = &[
    "",
    "http://example.org/ext",
    "http://www.google.com/schemas/sitemap-image/1.1",
    SITEMAP_NAMESPACE,
    RS_NAMESPACE,
    "http://www.w3.org/XML/1998/namespace",
    "http://www.w3.org/2000/xmlns/",
    "urn:a b\t<&\"",
];

/// Prefix hints, the unusable included.
const PREFIXES: &[Option<&str>] = &[
    None,
    Some("ex"),
    Some("ns1"),
    Some("ns2"),
    Some("rs"),
    Some("xml"),
    Some("xmlns"),
    Some(""),
    Some("a b"),
    Some("1x"),
];

/// Local names: ordinary ones, the standard's own, and ones that are no XML name.
fn extension_name(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=3)? {
        0 => name(u)?,
        1 => pick(
            u,
            &[
                "url",
                "loc",
                "lastmod",
                "md",
                "ln",
                "length",
                "at",
                "hash",
                "type",
                "rel",
                "href",
                "pri",
                "capability",
                "path",
                "xmlns",
                "lang",
                "priority",
            ],
        )?
        .to_string(),
        2 => raw_text(u)?,
        _ => format!("x-{}", name(u)?),
    })
}

fn attributes(u: &mut Unstructured<'_>) -> Result<Vec<Attribute>> {
    let n = u.int_in_range(0..=3)?;
    (0..n)
        .map(|_| {
            let value = if u.arbitrary()? {
                // Text XML can carry, markup characters included, or anything at all.
                if u.arbitrary()? {
                    text(u)?
                } else {
                    raw_text(u)?
                }
            } else {
                // Values a typed attribute of the same name would take.
                pick(
                    u,
                    &[
                        "5",
                        "2013-01-01",
                        "md5:1584abdf8ebdc9802ac0c6a7402c03b6",
                        "text/html",
                        "deleted",
                        "up",
                    ],
                )?
                .to_string()
            };
            Ok(Attribute {
                namespace: pick(u, NAMESPACES)?.to_string(),
                prefix: pick(u, PREFIXES)?.map(str::to_owned),
                name: extension_name(u)?,
                value,
            })
        })
        .collect()
}

fn hashes(u: &mut Unstructured<'_>) -> Result<Hashes> {
    let md5: [u8; 16] = u.arbitrary()?;
    let sha: [u8; 32] = u.arbitrary()?;
    let list = match u.int_in_range(0..=2)? {
        0 => vec![Hash::from_bytes(HashAlgorithm::Md5, &md5).expect("16 bytes")],
        1 => vec![
            Hash::from_bytes(HashAlgorithm::Md5, &md5).expect("16 bytes"),
            Hash::from_bytes(HashAlgorithm::Sha256, &sha).expect("32 bytes"),
        ],
        _ => vec!["x-crc:AbCd01".parse().expect("valid")],
    };
    Ok(Hashes::new(list).expect("not empty"))
}

fn md(u: &mut Unstructured<'_>) -> Result<Md> {
    Ok({
        let mut md = Md::new();
        md.capability = option(u, |u| {
            Ok(Capability::from(*pick(
                u,
                &["resourcelist", "changedump-archive", "x-other"],
            )?))
        })?;
        md.at = option(u, datetime)?;
        md.completed = option(u, datetime)?;
        md.from = option(u, datetime)?;
        md.until = option(u, datetime)?;
        md.change = option(u, |u| Ok(*pick(u, Change::ALL)?))?;
        md.datetime = option(u, datetime)?;
        md.hash = option(u, hashes)?;
        md.length = option(u, |u| u.arbitrary())?;
        md.path = option(u, |u| Ok(BitstreamPath::new(format!("/{}", name(u)?))))?;
        md.media_type = option(u, |u| {
            Ok(pick(u, &["text/html", "application/xml; charset=\"a&b\""])?
                .parse()
                .expect("valid"))
        })?;
        md.encoding = option(u, |u| Ok(pick(u, &["gzip", "br"])?.to_string()))?;
        md.extensions = attributes(u)?;
        md
    })
}

fn link(u: &mut Unstructured<'_>) -> Result<Link> {
    let rel = pick(
        u,
        &[
            "up",
            "duplicate",
            "http://www.openarchives.org/rs/terms/patch",
            "license",
            "http://example.org/rel",
        ],
    )?;
    let mut link = Link::new(rel.parse().expect("valid"), uri(u)?);
    link.pri = option(u, |u| {
        Ok(Priority::new(u.int_in_range(1..=999_999)?).expect("in range"))
    })?;
    link.modified = option(u, datetime)?;
    link.hash = option(u, hashes)?;
    link.length = option(u, |u| u.arbitrary())?;
    link.extensions = attributes(u)?;
    Ok(link)
}

/// Pieces of extension content: well-formed and not, declared and not, and the text
/// that would end the document early.
const CONTENT: &[&str] = &[
    "",
    "text",
    "&amp; &lt; &#65; &#x42;",
    "&foo;",
    "&#x+41;",
    "<a/>",
    "<img:loc a=\"1\">x</img:loc>",
    "<q:b/>",
    "<q:b xmlns:q=\"urn:q\"><q:c/></q:b>",
    "<b q:a=\"1\"/>",
    "</url></urlset>",
    "<a>",
    "</a>",
    "<![CDATA[<raw> & ]]>",
    "<!-- a comment -->",
    "<?pi x?>",
    "a ]]> b",
    " \n\t ",
    "<b a=\"1\" a=\"2\"/>",
];

fn elements(u: &mut Unstructured<'_>) -> Result<Vec<Element>> {
    let n = u.int_in_range(0..=2)?;
    (0..n)
        .map(|_| {
            let pieces = u.int_in_range(0..=3)?;
            let mut content = String::new();
            for _ in 0..pieces {
                if u.arbitrary()? {
                    content.push_str(pick(u, CONTENT)?);
                } else {
                    content.push_str(&raw_text(u)?);
                }
            }
            Ok(Element {
                namespace: pick(u, NAMESPACES)?.to_string(),
                prefix: pick(
                    u,
                    &[
                        None,
                        Some("image"),
                        Some("img"),
                        Some("rs"),
                        Some("ns1"),
                        Some("x y"),
                    ],
                )?
                .map(str::to_owned),
                name: extension_name(u)?,
                attributes: attributes(u)?,
                content,
            })
        })
        .collect()
}

fn entry(u: &mut Unstructured<'_>) -> Result<Entry> {
    let mut e = Entry::new(uri(u)?);
    e.lastmod = option(u, datetime)?;
    e.changefreq = option(u, |u| Ok(*pick(u, ChangeFreq::ALL)?))?;
    e.md = option(u, md)?;
    let n = u.int_in_range(0..=2)?;
    e.links = (0..n).map(|_| link(u)).collect::<Result<_>>()?;
    e.extensions = elements(u)?;
    Ok(e)
}

/// An arbitrary document of any kind, with extensions.
pub fn document(u: &mut Unstructured<'_>) -> Result<Document> {
    let kind = *pick(u, &DocumentKind::DEFINED)?;
    let mut head = DocumentHead::of_kind(kind);
    let mut head_md = md(u)?;
    head_md.capability = head.md.capability.take();
    head.md = head_md;
    let n = u.int_in_range(0..=2)?;
    head.links = (0..n).map(|_| link(u)).collect::<Result<_>>()?;
    head.attributes = attributes(u)?;
    head.extensions = elements(u)?;
    let mut doc = Document::new(head);
    let n = u.int_in_range(0..=8)?;
    doc.entries = (0..n).map(|_| entry(u)).collect::<Result<_>>()?;
    Ok(doc)
}

/// The round trip every generator of documents asserts: whatever the writer accepts, the
/// reader reads back as the same document — datetimes as written, not only the same
/// instants (`is_identical`), extensions the same but for the prefixes they were written
/// with (a prefix is a hint) — and writing that again gives the same bytes. What the
/// writer refuses is refused with an error, never written.
pub fn assert_round_trip(doc: &Document) {
    let Ok(resourcesync_xml::Written { output: xml, .. }) =
        resourcesync_xml::write_document(Vec::new(), doc)
    else {
        return;
    };
    let (read, _) = resourcesync_xml::read_document(&xml).unwrap_or_else(|e| {
        panic!(
            "what the writer accepts, the reader reads: {e}\n{}",
            String::from_utf8_lossy(&xml)
        )
    });
    assert_eq!(without_prefixes(&read), without_prefixes(doc));
    let (ours, theirs) = (datetimes(&read), datetimes(doc));
    assert_eq!(ours.len(), theirs.len());
    for (a, b) in ours.iter().zip(&theirs) {
        assert!(a.is_identical(b), "{a} was written as {b}");
    }
    let again = resourcesync_xml::write_document(Vec::new(), &read)
        .expect("written once")
        .output;
    assert_eq!(again, xml, "the second write differs");
}

fn without_prefixes(doc: &Document) -> Document {
    fn attributes(list: &mut [Attribute]) {
        list.iter_mut().for_each(|a| a.prefix = None);
    }
    fn elements(list: &mut [Element]) {
        for e in list {
            e.prefix = None;
            attributes(&mut e.attributes);
        }
    }
    fn md(md: &mut Md) {
        attributes(&mut md.extensions);
    }
    let mut doc = doc.clone();
    attributes(&mut doc.head.attributes);
    md(&mut doc.head.md);
    doc.head
        .links
        .iter_mut()
        .for_each(|l| attributes(&mut l.extensions));
    elements(&mut doc.head.extensions);
    for entry in &mut doc.entries {
        if let Some(m) = &mut entry.md {
            md(m);
        }
        entry
            .links
            .iter_mut()
            .for_each(|l| attributes(&mut l.extensions));
        elements(&mut entry.extensions);
    }
    doc
}

/// Every datetime of a document, in document order.
fn datetimes(doc: &Document) -> Vec<&W3cDateTime> {
    fn md<'a>(md: &'a Md, out: &mut Vec<&'a W3cDateTime>) {
        for t in [&md.at, &md.completed, &md.from, &md.until, &md.datetime] {
            out.extend(t.as_ref());
        }
    }
    let mut out = Vec::new();
    md(&doc.head.md, &mut out);
    out.extend(doc.head.links.iter().filter_map(|l| l.modified.as_ref()));
    for entry in &doc.entries {
        out.extend(entry.lastmod.as_ref());
        if let Some(m) = &entry.md {
            md(m, &mut out);
        }
        out.extend(entry.links.iter().filter_map(|l| l.modified.as_ref()));
    }
    out
}
