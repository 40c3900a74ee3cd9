//! With the `serde` feature, every data type serializes, values as their document text, and
//! deserializes back to an identical value.
#![cfg(feature = "serde")]

use resourcesync_model::*;

#[test]
fn a_document_round_trips_through_json() {
    let mut head = DocumentHead::of_kind(DocumentKind::ChangeDumpManifest);
    head.md.from = Some("2013-01-02T00:00:00+01:00".parse().unwrap());
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/dataset1/capabilitylist.xml"
            .parse()
            .unwrap(),
    ));
    head.attributes.push(Attribute {
        namespace: "http://example.org/ns".into(),
        prefix: Some("ex".into()),
        name: "note".into(),
        value: "kept".into(),
    });
    let mut entry = Entry::new("http://example.com/res7.html".parse().unwrap());
    entry.md = Some(
        Md::new()
            .with_change(Change::Created)
            .with_datetime("2013-01-02T12:00:00.250Z".parse().unwrap())
            .with_hash("md5:1c1b0e264fa9b7e1e9aa6f9db8d6362b".parse().unwrap())
            .with_length(4339)
            .with_media_type("text/html".parse().unwrap())
            .with_path("/changes/res7.html".into()),
    );
    let mut patch = Link::new(
        Relation::Patch,
        "http://example.com/res7.patch".parse().unwrap(),
    );
    patch.pri = Some(Priority::new(2).unwrap());
    entry.links.push(patch);
    let mut doc = Document::new(head);
    doc.entries.push(entry);

    let json = serde_json::to_string(&doc).unwrap();
    assert!(
        json.contains(r#""from":"2013-01-02T00:00:00+01:00""#),
        "{json}"
    );
    assert!(json.contains(r#""rel":"http://www.openarchives.org/rs/terms/patch""#));
    assert!(json.contains(r#""capability":"changedump-manifest""#));
    let back: Document = serde_json::from_str(&json).unwrap();
    assert_eq!(back, doc);
    let from = back.head.md.from.as_ref().unwrap();
    assert!(from.is_identical(doc.head.md.from.as_ref().unwrap()));

    let finding = Finding::new(Rule::ChangeListOrder, Some(3));
    let json = serde_json::to_string(&finding).unwrap();
    assert!(json.contains(r#""rule":"changelist-order""#), "{json}");
    assert_eq!(serde_json::from_str::<Finding>(&json).unwrap(), finding);
    assert!(serde_json::from_str::<W3cDateTime>(r#""2013-02-30""#).is_err());
}
