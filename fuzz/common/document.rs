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

fn attributes(u: &mut Unstructured<'_>) -> Result<Vec<Attribute>> {
    let n = u.int_in_range(0..=2)?;
    let mut out: Vec<Attribute> = Vec::new();
    for _ in 0..n {
        let a = if u.arbitrary()? {
            Attribute {
                namespace: "http://example.org/ext".into(),
                prefix: Some("ex".into()),
                name: name(u)?,
                value: text(u)?,
            }
        } else {
            Attribute {
                namespace: String::new(),
                prefix: None,
                name: format!("x-{}", name(u)?),
                value: text(u)?,
            }
        };
        if !out
            .iter()
            .any(|b| b.namespace == a.namespace && b.name == a.name)
        {
            out.push(a);
        }
    }
    Ok(out)
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
    Ok(Md {
        capability: option(u, |u| {
            Ok(Capability::from(*pick(
                u,
                &["resourcelist", "changedump-archive", "x-other"],
            )?))
        })?,
        at: option(u, datetime)?,
        completed: option(u, datetime)?,
        from: option(u, datetime)?,
        until: option(u, datetime)?,
        change: option(u, |u| Ok(*pick(u, Change::ALL)?))?,
        datetime: option(u, datetime)?,
        hash: option(u, hashes)?,
        length: option(u, |u| u.arbitrary())?,
        path: option(u, |u| Ok(BitstreamPath::new(format!("/{}", name(u)?))))?,
        media_type: option(u, |u| {
            Ok(pick(u, &["text/html", "application/xml; charset=\"a&b\""])?
                .parse()
                .expect("valid"))
        })?,
        encoding: option(u, |u| Ok(pick(u, &["gzip", "br"])?.to_string()))?,
        extensions: attributes(u)?,
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

fn elements(u: &mut Unstructured<'_>) -> Result<Vec<Element>> {
    let n = u.int_in_range(0..=1)?;
    (0..n)
        .map(|_| {
            let raw = text(u)?;
            let content = raw
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('\r', "&#13;");
            Ok(Element {
                namespace: "http://www.google.com/schemas/sitemap-image/1.1".into(),
                prefix: Some("image".into()),
                name: name(u)?,
                attributes: attributes(u)?
                    .into_iter()
                    .filter(|a| !a.namespace.is_empty())
                    .collect(),
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
    let mut head = DocumentHead::of_kind(kind).expect("defined kinds have heads");
    let mut head_md = md(u)?;
    head_md.capability = head.md.capability.take();
    head.md = head_md;
    let n = u.int_in_range(0..=2)?;
    head.links = (0..n).map(|_| link(u)).collect::<Result<_>>()?;
    head.attributes = attributes(u)?
        .into_iter()
        .filter(|a| !a.namespace.is_empty())
        .collect();
    head.extensions = elements(u)?;
    let mut doc = Document::new(head);
    let n = u.int_in_range(0..=8)?;
    doc.entries = (0..n).map(|_| entry(u)).collect::<Result<_>>()?;
    Ok(doc)
}
