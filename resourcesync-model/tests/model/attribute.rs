//! The one table of Table 3's attributes: every row reads a value into its field of `Md`
//! or of a link, gives it back for writing, and refuses a value that breaks its rule.

use resourcesync_model::{
    AttributeName as A, Link, Md, PartialLink, Relation, RsElement, Rule, Uri,
};

/// A valid value of each attribute, written as a writer writes it back, and a value that
/// breaks its rule (`None` where any text is read). A row added to the table fails here
/// until it has its sample.
fn sample(a: A) -> (&'static str, Option<&'static str>) {
    match a {
        A::Capability => ("resourcelist", None),
        A::At | A::Completed | A::From | A::Until | A::Datetime | A::Modified => {
            ("2013-01-03T09:00:00Z", Some("yesterday"))
        }
        A::Change => ("created", Some("modified")),
        A::Rel => ("up", Some("not a relation")),
        A::Href => ("http://example.com/res1", Some("not a uri")),
        A::Pri => ("1", Some("0")),
        A::Hash => ("md5:1584abdf8ebdc9802ac0c6a7402c03b6", Some("md5:12")),
        A::Length => ("8876", Some("-1")),
        A::Type => ("text/html", Some("json")),
        A::Path => ("/resources/res1", None),
        A::Encoding => ("gzip", None),
        other => panic!("no sample value for {other}"),
    }
}

/// A link with both mandatory attributes, from parts read so far.
fn complete(mut parts: PartialLink) -> Link {
    parts.rel.get_or_insert(Relation::Up);
    parts
        .href
        .get_or_insert_with(|| Uri::parse("http://example.com/caps.xml").unwrap());
    parts.into_link().unwrap()
}

#[test]
fn every_row_reads_and_gives_back_its_value() {
    for a in A::ALL {
        let (good, bad) = sample(a);
        assert!(a.is_valid(good), "{a}");

        let mut md = Md::default();
        match a.read_md(&mut md, good) {
            Ok(()) => {
                assert!(a.is_on(RsElement::Md), "{a}");
                assert_eq!(a.md_value(&md).unwrap().to_string(), good, "{a}");
            }
            Err(e) => {
                assert!(!a.is_on(RsElement::Md), "{a}");
                assert_eq!(e.rule(), Rule::AttributeUnknown);
                assert_eq!(md, Md::default());
                assert_eq!(a.md_value(&md), None);
            }
        }

        let mut parts = PartialLink::default();
        match a.read_ln(&mut parts, good) {
            Ok(()) => {
                assert!(a.is_on(RsElement::Ln), "{a}");
                let link = complete(parts);
                assert_eq!(a.ln_value(&link).unwrap().to_string(), good, "{a}");
            }
            Err(e) => {
                assert!(!a.is_on(RsElement::Ln), "{a}");
                assert_eq!(e.rule(), Rule::AttributeUnknown);
                assert_eq!(parts, PartialLink::default());
            }
        }

        if let Some(bad) = bad {
            assert!(!a.is_valid(bad), "{a}: {bad}");
            let mut md = Md::default();
            if a.is_on(RsElement::Md) {
                assert!(a.read_md(&mut md, bad).is_err(), "{a}: {bad}");
                assert_eq!(
                    md,
                    Md::default(),
                    "{a}: a bad value leaves the field as it was"
                );
            }
        }
    }
}

/// The table against Table 3 of the standard, which lists each element's attributes.
#[test]
fn each_element_has_the_attributes_of_table_3() {
    let names = |element: RsElement| {
        let mut names: Vec<&str> = element.attributes().map(A::as_str).collect();
        names.sort_unstable();
        names
    };
    assert_eq!(
        names(RsElement::Md),
        [
            "at",
            "capability",
            "change",
            "completed",
            "datetime",
            "encoding",
            "from",
            "hash",
            "length",
            "path",
            "type",
            "until"
        ]
    );
    assert_eq!(
        names(RsElement::Ln),
        [
            "encoding", "hash", "href", "length", "modified", "path", "pri", "rel", "type"
        ]
    );
}

#[test]
fn a_link_needs_rel_and_href() {
    let mut parts = PartialLink::default();
    A::Rel.read_ln(&mut parts, "duplicate").unwrap();
    A::Length.read_ln(&mut parts, "10").unwrap();
    let parts = parts.into_link().unwrap_err();
    assert_eq!(parts.rel, Some(Relation::Duplicate), "given back whole");
    assert_eq!(parts.length, Some(10));
    let link = complete(parts);
    assert_eq!(link.rel, Relation::Duplicate);
    assert_eq!(link.length, Some(10));
}
