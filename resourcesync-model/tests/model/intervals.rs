//! Interval, containment and order rules with values of reduced precision: a lower bound
//! is the start of its period and an upper bound its end, so `until="2013-01-03"` covers
//! 11:00 that day. Also link relations compared case-insensitively (RFC 8288).

use resourcesync_model::{
    Change, Document, DocumentHead, DocumentKind as K, Entry, Link, Md, Relation, Rule,
    W3cDateTime, check,
};
use rstest::rstest;

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

const Z: &str = "2013-01-01T00:00:00Z";

#[rstest]
// until a day covers that whole day
#[case::until_day_covers_its_morning(Z, Some("2013-01-03"), "2013-01-03T11:00:00Z", false)]
#[case::until_day_covers_its_last_instant(Z, Some("2013-01-03"), "2013-01-03T23:59:59.999Z", false)]
#[case::until_day_ends_at_midnight(Z, Some("2013-01-03"), "2013-01-04T00:00:00Z", true)]
// until a month, a year, a minute
#[case::until_month_covers_its_last_day(Z, Some("2013-02"), "2013-02-28T12:00:00Z", false)]
#[case::until_month_ends_with_it(Z, Some("2013-02"), "2013-03-01T00:00:00Z", true)]
#[case::until_year_covers_its_last_second(Z, Some("2013"), "2013-12-31T23:59:59Z", false)]
#[case::until_year_ends_with_it(Z, Some("2013"), "2014-01-01T00:00:00Z", true)]
#[case::until_minute_covers_its_seconds(
    Z,
    Some("2013-01-03T11:00Z"),
    "2013-01-03T11:00:59Z",
    false
)]
#[case::until_minute_ends_with_it(Z, Some("2013-01-03T11:00Z"), "2013-01-03T11:01:00Z", true)]
// an until with seconds is an instant
#[case::until_second_is_an_instant(Z, Some("2013-01-03T11:00:00Z"), "2013-01-03T11:00:00Z", false)]
#[case::until_second_ends_at_it(Z, Some("2013-01-03T11:00:00Z"), "2013-01-03T11:00:00.1Z", true)]
// from is a lower bound: the start of its period
#[case::from_day_starts_at_midnight("2013-01-03", None, "2013-01-03T00:00:00Z", false)]
#[case::from_day_after_the_day_before("2013-01-03", None, "2013-01-02T23:59:59Z", true)]
#[case::from_month_covers_it("2013-01", None, "2013-01-31T00:00:00Z", false)]
#[case::from_month_after_the_month_before("2013-01", None, "2012-12-31T23:59:59Z", true)]
#[case::from_minute_covers_it("2013-01-03T10:00Z", None, "2013-01-03T10:00:30Z", false)]
#[case::from_minute_after_the_minute_before(
    "2013-01-03T10:00Z",
    None,
    "2013-01-03T09:59:59Z",
    true
)]
// a datetime of reduced precision is out only when its whole period is
#[case::day_datetime_partly_after_from("2013-01-03T10:00:00Z", None, "2013-01-03", false)]
#[case::day_datetime_wholly_before_from("2013-01-03T00:00:00Z", None, "2013-01-02", true)]
#[case::day_datetime_partly_before_until(Z, Some("2013-01-03T10:00:00Z"), "2013-01-03", false)]
#[case::day_datetime_wholly_after_until(Z, Some("2013-01-03T10:00:00Z"), "2013-01-04", true)]
// offsets: the end of 2013-01-03T12:00+01:00 is 11:01Z
#[case::until_minute_in_an_offset_covers_it(
    Z,
    Some("2013-01-03T12:00+01:00"),
    "2013-01-03T11:00:30Z",
    false
)]
#[case::until_minute_in_an_offset_ends_with_it(
    Z,
    Some("2013-01-03T12:00+01:00"),
    "2013-01-03T11:01:00Z",
    true
)]
fn datetime_within_from_and_until_of_any_precision(
    #[case] from: &str,
    #[case] until: Option<&str>,
    #[case] datetime: &str,
    #[case] broken: bool,
) {
    let found = rules(&change_list(from, until, &[datetime]));
    let expected: &[(Rule, Option<u64>)] = if broken { &[(OUT, Some(1))] } else { &[] };
    assert_eq!(
        found, expected,
        "from {from} until {until:?} datetime {datetime}"
    );
}

/// until not before from
#[rstest]
#[case::until_day("2013-01-03T10:00:00Z", "2013-01-03", false)]
#[case::until_month("2013-01-03T10:00:00Z", "2013-01", false)]
#[case::until_year("2013-01-03T10:00:00Z", "2013", false)]
#[case::until_minute("2013-01-03T10:00:00Z", "2013-01-03T10:00Z", false)]
#[case::until_day_before("2013-01-03T10:00:00Z", "2013-01-02", true)]
#[case::until_year_before("2013-01-03T10:00:00Z", "2012", true)]
#[case::until_minute_before("2013-01-03T10:00:00Z", "2013-01-03T09:59Z", true)]
#[case::from_day_until_its_start("2013-01-03", "2013-01-03T00:00:00Z", false)]
#[case::from_day_until_before_it("2013-01-03", "2013-01-02T23:59:59Z", true)]
fn until_covers_its_period(#[case] from: &str, #[case] until: &str, #[case] broken: bool) {
    let found = rules(&change_list(from, Some(until), &[]));
    let expected: &[(Rule, Option<u64>)] = if broken {
        &[(Rule::UntilBeforeFrom, None)]
    } else {
        &[]
    };
    assert_eq!(found, expected, "from {from} until {until}");
}

/// completed not before at
#[rstest]
#[case::completed_day("2013-01-03T09:00:00Z", "2013-01-03", false)]
#[case::completed_minute("2013-01-03T09:00:00Z", "2013-01-03T09:00Z", false)]
#[case::completed_day_before("2013-01-03T09:00:00Z", "2013-01-02", true)]
#[case::completed_minute_before("2013-01-03T09:00:00Z", "2013-01-03T08:59Z", true)]
fn completed_covers_its_period(#[case] at: &str, #[case] completed: &str, #[case] broken: bool) {
    let head = DocumentHead::of_kind(K::ResourceList)
        .with_at(t(at))
        .with_completed(t(completed))
        .with_link(Link::new(
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

#[rstest]
#[case::a_day_after_an_instant_in_it(&["2013-01-03T11:00:00Z", "2013-01-03"], None)]
#[case::an_instant_after_its_day(&["2013-01-03", "2013-01-03T11:00:00Z"], None)]
#[case::a_month_after_an_instant_in_it(&["2013-01-03T11:00:00Z", "2013-01"], None)]
#[case::a_minute_after_an_instant_in_it(&["2013-01-03T11:00:30Z", "2013-01-03T11:00Z"], None)]
#[case::the_day_before(&["2013-01-03T11:00:00Z", "2013-01-02"], Some(2))]
#[case::the_minute_before(&["2013-01-03T11:01:00Z", "2013-01-03T11:00Z"], Some(2))]
#[case::a_second_before_the_month(&["2013-02", "2013-01-31T23:59:59Z"], Some(2))]
#[case::a_second_before(&["2013-01-03T11:00:00Z", "2013-01-03T10:59:59Z"], Some(2))]
fn order_is_broken_only_by_a_wholly_earlier_entry(
    #[case] datetimes: &[&str],
    #[case] broken: Option<u64>,
) {
    let found = rules(&change_list("2013-01-01T00:00:00Z", None, datetimes));
    let expected: Vec<(Rule, Option<u64>)> = broken
        .map(|n| (Rule::ChangeListOrder, Some(n)))
        .into_iter()
        .collect();
    assert_eq!(found, expected, "{datetimes:?}");
}

#[rstest]
#[case::space_before(" 2013-01-03T09:00:00Z")]
#[case::newline_after("2013-01-03T09:00:00Z\n")]
#[case::tab_before_space_and_crlf_after("\t2013-01-03T09:00:00Z \r\n")]
fn datetimes_with_white_space_around_them_are_read(#[case] text: &str) {
    let value: W3cDateTime = text.parse().unwrap();
    assert!(value.is_identical(&t("2013-01-03T09:00:00Z")), "{text:?}");
}

#[rstest]
#[case::up("Up", Relation::Up)]
#[case::upper_case_up("UP", Relation::Up)]
#[case::index("Index", Relation::Index)]
#[case::describedby("DescribedBy", Relation::DescribedBy)]
#[case::duplicate("DUPLICATE", Relation::Duplicate)]
#[case::timegate("TimeGate", Relation::TimeGate)]
#[case::patch_uri("Http://www.openarchives.org/rs/terms/Patch", Relation::Patch)]
fn relation_names_compare_case_insensitively(#[case] text: &str, #[case] rel: Relation) {
    assert_eq!(text.parse::<Relation>().unwrap(), rel, "{text}");
}

#[test]
fn rel_up_in_other_case_is_the_mandatory_up_link() {
    // `rel="Up"` is the mandatory up link.
    let head = DocumentHead::of_kind(K::ResourceList)
        .with_at(t("2013-01-03T09:00:00Z"))
        .with_link(Link::new(
            "Up".parse().unwrap(),
            "http://example.com/capabilitylist.xml".parse().unwrap(),
        ));
    assert_eq!(rules(&Document::new(head)), []);
}
