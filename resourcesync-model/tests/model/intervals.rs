//! Interval, containment and order rules with values of reduced precision: a lower bound
//! is the start of its period and an upper bound its end, so `until="2013-01-03"` covers
//! 11:00 that day. Also link relations compared case-insensitively (RFC 8288).

use resourcesync_model::{
    Change, Document, DocumentHead, DocumentKind as K, Entry, Link, Md, Relation, Rule,
    W3cDateTime, check,
};

fn t(s: &str) -> W3cDateTime {
    s.parse().unwrap()
}

/// A Change List from `from` (until `until`) with one update per datetime.
fn change_list(from: &str, until: Option<&str>, datetimes: &[&str]) -> Document {
    let mut head = DocumentHead::of_kind(K::ChangeList);
    head.md.from = Some(t(from));
    head.md.until = until.map(t);
    head.links.push(Link::new(
        Relation::Up,
        "http://example.com/capabilitylist.xml".parse().unwrap(),
    ));
    let mut doc = Document::new(head);
    for (i, datetime) in datetimes.iter().enumerate() {
        let mut entry = Entry::new(format!("http://example.com/res{i}").parse().unwrap());
        entry.md = Some(
            Md::new()
                .with_change(Change::Updated)
                .with_datetime(t(datetime)),
        );
        doc.entries.push(entry);
    }
    doc
}

/// The rules found, but for the recommended form of datetimes (reduced precision is not
/// the recommended form, and that is not what these tests are about).
fn rules(doc: &Document) -> Vec<(Rule, Option<u64>)> {
    check(doc)
        .into_iter()
        .filter(|f| f.rule != Rule::DatetimeForm)
        .map(|f| (f.rule, f.entry))
        .collect()
}

const OUT: Rule = Rule::DatetimeOutsideInterval;

#[test]
fn datetime_within_from_and_until_of_any_precision() {
    // (from, until, datetime, broken)
    let rows: &[(&str, Option<&str>, &str, bool)] = &[
        // until a day covers that whole day
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03"),
            "2013-01-03T11:00:00Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03"),
            "2013-01-03T23:59:59.999Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03"),
            "2013-01-04T00:00:00Z",
            true,
        ),
        // until a month, a year, a minute
        (
            "2013-01-01T00:00:00Z",
            Some("2013-02"),
            "2013-02-28T12:00:00Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-02"),
            "2013-03-01T00:00:00Z",
            true,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013"),
            "2013-12-31T23:59:59Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013"),
            "2014-01-01T00:00:00Z",
            true,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T11:00Z"),
            "2013-01-03T11:00:59Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T11:00Z"),
            "2013-01-03T11:01:00Z",
            true,
        ),
        // an until with seconds is an instant
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T11:00:00Z"),
            "2013-01-03T11:00:00Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T11:00:00Z"),
            "2013-01-03T11:00:00.1Z",
            true,
        ),
        // from is a lower bound: the start of its period
        ("2013-01-03", None, "2013-01-03T00:00:00Z", false),
        ("2013-01-03", None, "2013-01-02T23:59:59Z", true),
        ("2013-01", None, "2013-01-31T00:00:00Z", false),
        ("2013-01", None, "2012-12-31T23:59:59Z", true),
        ("2013-01-03T10:00Z", None, "2013-01-03T10:00:30Z", false),
        ("2013-01-03T10:00Z", None, "2013-01-03T09:59:59Z", true),
        // a datetime of reduced precision is out only when its whole period is
        ("2013-01-03T10:00:00Z", None, "2013-01-03", false),
        ("2013-01-03T00:00:00Z", None, "2013-01-02", true),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T10:00:00Z"),
            "2013-01-03",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T10:00:00Z"),
            "2013-01-04",
            true,
        ),
        // offsets: the end of 2013-01-03T12:00+01:00 is 11:01Z
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T12:00+01:00"),
            "2013-01-03T11:00:30Z",
            false,
        ),
        (
            "2013-01-01T00:00:00Z",
            Some("2013-01-03T12:00+01:00"),
            "2013-01-03T11:01:00Z",
            true,
        ),
    ];
    for (from, until, datetime, broken) in rows {
        let found = rules(&change_list(from, *until, &[datetime]));
        let expected: &[(Rule, Option<u64>)] = if *broken { &[(OUT, Some(1))] } else { &[] };
        assert_eq!(
            found, expected,
            "from {from} until {until:?} datetime {datetime}"
        );
    }
}

#[test]
fn until_and_completed_cover_their_period() {
    // until not before from
    for (from, until, broken) in [
        ("2013-01-03T10:00:00Z", "2013-01-03", false),
        ("2013-01-03T10:00:00Z", "2013-01", false),
        ("2013-01-03T10:00:00Z", "2013", false),
        ("2013-01-03T10:00:00Z", "2013-01-03T10:00Z", false),
        ("2013-01-03T10:00:00Z", "2013-01-02", true),
        ("2013-01-03T10:00:00Z", "2012", true),
        ("2013-01-03T10:00:00Z", "2013-01-03T09:59Z", true),
        ("2013-01-03", "2013-01-03T00:00:00Z", false),
        ("2013-01-03", "2013-01-02T23:59:59Z", true),
    ] {
        let found = rules(&change_list(from, Some(until), &[]));
        let expected: &[(Rule, Option<u64>)] = if broken {
            &[(Rule::UntilBeforeFrom, None)]
        } else {
            &[]
        };
        assert_eq!(found, expected, "from {from} until {until}");
    }
    // completed not before at
    for (at, completed, broken) in [
        ("2013-01-03T09:00:00Z", "2013-01-03", false),
        ("2013-01-03T09:00:00Z", "2013-01-03T09:00Z", false),
        ("2013-01-03T09:00:00Z", "2013-01-02", true),
        ("2013-01-03T09:00:00Z", "2013-01-03T08:59Z", true),
    ] {
        let mut head = DocumentHead::of_kind(K::ResourceList);
        head.md.at = Some(t(at));
        head.md.completed = Some(t(completed));
        head.links.push(Link::new(
            Relation::Up,
            "http://example.com/capabilitylist.xml".parse().unwrap(),
        ));
        let found = rules(&Document::new(head));
        let expected: &[(Rule, Option<u64>)] = if broken {
            &[(Rule::CompletedBeforeAt, None)]
        } else {
            &[]
        };
        assert_eq!(found, expected, "at {at} completed {completed}");
    }
}

#[test]
fn order_is_broken_only_by_a_wholly_earlier_entry() {
    let rows: &[(&[&str], Option<u64>)] = &[
        (&["2013-01-03T11:00:00Z", "2013-01-03"], None),
        (&["2013-01-03", "2013-01-03T11:00:00Z"], None),
        (&["2013-01-03T11:00:00Z", "2013-01"], None),
        (&["2013-01-03T11:00:30Z", "2013-01-03T11:00Z"], None),
        (&["2013-01-03T11:00:00Z", "2013-01-02"], Some(2)),
        (&["2013-01-03T11:01:00Z", "2013-01-03T11:00Z"], Some(2)),
        (&["2013-02", "2013-01-31T23:59:59Z"], Some(2)),
        (&["2013-01-03T11:00:00Z", "2013-01-03T10:59:59Z"], Some(2)),
    ];
    for (datetimes, broken) in rows {
        let found = rules(&change_list("2013-01-01T00:00:00Z", None, datetimes));
        let expected: Vec<(Rule, Option<u64>)> = broken
            .map(|n| (Rule::ChangeListOrder, Some(n)))
            .into_iter()
            .collect();
        assert_eq!(found, expected, "{datetimes:?}");
    }
}

#[test]
fn datetimes_with_white_space_around_them_are_read() {
    for text in [
        " 2013-01-03T09:00:00Z",
        "2013-01-03T09:00:00Z\n",
        "\t2013-01-03T09:00:00Z \r\n",
    ] {
        let value: W3cDateTime = text.parse().unwrap();
        assert!(value.is_identical(&t("2013-01-03T09:00:00Z")), "{text:?}");
    }
}

#[test]
fn relation_names_compare_case_insensitively() {
    for (text, rel) in [
        ("Up", Relation::Up),
        ("UP", Relation::Up),
        ("Index", Relation::Index),
        ("DescribedBy", Relation::DescribedBy),
        ("DUPLICATE", Relation::Duplicate),
        ("TimeGate", Relation::TimeGate),
        (
            "Http://www.openarchives.org/rs/terms/Patch",
            Relation::Patch,
        ),
    ] {
        assert_eq!(text.parse::<Relation>().unwrap(), rel, "{text}");
    }
    // `rel="Up"` is the mandatory up link.
    let mut head = DocumentHead::of_kind(K::ResourceList);
    head.md.at = Some(t("2013-01-03T09:00:00Z"));
    head.links.push(Link::new(
        "Up".parse().unwrap(),
        "http://example.com/capabilitylist.xml".parse().unwrap(),
    ));
    assert_eq!(rules(&Document::new(head)), []);
}
