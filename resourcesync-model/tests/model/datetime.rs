//! Property tests of W3C Datetimes: every valid form round-trips to the same text, and
//! ordering agrees with the UTC instant computed independently by chrono.

use chrono::{DateTime, NaiveDate, Utc};
use proptest::prelude::*;
use resourcesync_model::{Precision, W3cDateTime};

fn days_in_month(y: u32, m: u32) -> u32 {
    let next = if m == 12 {
        NaiveDate::from_ymd_opt(y as i32 + 1, 1, 1)
    } else {
        NaiveDate::from_ymd_opt(y as i32, m + 1, 1)
    };
    next.unwrap().pred_opt().unwrap().day0() + 1
}

use chrono::Datelike;

/// A time zone designator: `Z`, or an offset of either sign up to ±23:59.
fn offset() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("Z".to_string()),
        (any::<bool>(), 0u32..24, 0u32..60)
            .prop_map(|(east, h, m)| format!("{}{h:02}:{m:02}", if east { '+' } else { '-' })),
    ]
}

/// A valid W3C Datetime text of any of the six granularities, with the components an
/// independent oracle needs: (text, precision 0..=5, RFC 3339 text of its start or None).
fn w3c(max_fraction: usize) -> impl Strategy<Value = (String, Option<String>)> {
    (
        0u32..=9999,
        1u32..=12,
        0u32..31,
        0u32..24,
        0u32..60,
        0u32..60,
    )
        .prop_flat_map(move |(y, mo, d, h, mi, s)| {
            let d = d % days_in_month(y, mo) + 1;
            (
                Just((y, mo, d, h, mi, s)),
                0usize..6,
                proptest::collection::vec(0u8..10, 1..=max_fraction),
                offset(),
            )
        })
        .prop_map(|((y, mo, d, h, mi, s), form, frac, tz)| {
            let frac: String = frac.iter().map(|d| char::from(b'0' + d)).collect();
            let date = format!("{y:04}-{mo:02}-{d:02}");
            match form {
                0 => (format!("{y:04}"), Some(format!("{y:04}-01-01T00:00:00Z"))),
                1 => (
                    format!("{y:04}-{mo:02}"),
                    Some(format!("{y:04}-{mo:02}-01T00:00:00Z")),
                ),
                2 => (date.clone(), Some(format!("{date}T00:00:00Z"))),
                3 => (
                    format!("{date}T{h:02}:{mi:02}{tz}"),
                    Some(format!("{date}T{h:02}:{mi:02}:00{tz}")),
                ),
                4 => {
                    let text = format!("{date}T{h:02}:{mi:02}:{s:02}{tz}");
                    (text.clone(), Some(text))
                }
                _ => {
                    let text = format!("{date}T{h:02}:{mi:02}:{s:02}.{frac}{tz}");
                    // chrono reads at most nine fraction digits exactly.
                    let oracle = (frac.len() <= 9).then(|| text.clone());
                    (text, oracle)
                }
            }
        })
}

/// The instant by chrono's own RFC 3339 parser, an oracle independent of ours.
fn oracle(rfc3339: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(rfc3339)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn text_to_value_to_text_is_identity((text, _) in w3c(14)) {
        let value: W3cDateTime = text.parse().unwrap();
        prop_assert_eq!(value.to_string(), text.clone());
        // And the value read back from its own text is identical, not only equal.
        let again: W3cDateTime = value.to_string().parse().unwrap();
        prop_assert!(again.is_identical(&value));
    }

    #[test]
    fn instant_is_local_time_minus_offset((text, rfc) in w3c(9)) {
        let value: W3cDateTime = text.parse().unwrap();
        if let Some(rfc) = rfc {
            let expected = oracle(&rfc);
            prop_assert!(expected.is_some(), "chrono refused {}", rfc);
            prop_assert_eq!(Some(value.to_utc()), expected);
        }
    }

    #[test]
    fn ordering_agrees_with_the_utc_instant((a, ra) in w3c(9), (b, rb) in w3c(9)) {
        let (va, vb): (W3cDateTime, W3cDateTime) = (a.parse().unwrap(), b.parse().unwrap());
        if let (Some(ia), Some(ib)) = (ra.as_deref().and_then(oracle), rb.as_deref().and_then(oracle)) {
            prop_assert_eq!(va.cmp(&vb), ia.cmp(&ib), "{} vs {}", a, b);
            prop_assert_eq!(va == vb, ia == ib);
        }
    }

    #[test]
    fn same_instant_in_both_offset_signs_is_equal(
        minutes in 0i64..(24 * 60),
        h in 0u32..24, m in 0u32..60,
    ) {
        // One instant written as UTC, and with an offset east and west of it.
        let utc: DateTime<Utc> = format!("2013-06-15T{h:02}:{m:02}:00Z").parse().unwrap();
        let east = chrono::FixedOffset::east_opt((minutes * 60) as i32).unwrap();
        let west = chrono::FixedOffset::west_opt((minutes * 60) as i32).unwrap();
        let base: W3cDateTime = utc.to_rfc3339_opts(chrono::SecondsFormat::Secs, true).parse().unwrap();
        let e = W3cDateTime::from(utc.with_timezone(&east));
        let w = W3cDateTime::from(utc.with_timezone(&west));
        prop_assert_eq!(&e, &base);
        prop_assert_eq!(&w, &base);
        prop_assert_eq!(e.precision(), Precision::Second);
        // Parsing the text form agrees with the chrono conversion.
        let reparsed: W3cDateTime = e.to_string().parse().unwrap();
        prop_assert!(reparsed.is_identical(&e));
    }

    #[test]
    fn arbitrary_text_never_panics(s in "\\PC{0,40}") {
        let _ = s.parse::<W3cDateTime>();
    }
}
