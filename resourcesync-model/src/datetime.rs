//! W3C Datetimes, the value type of every time attribute of the standard.
//!
//! ResourceSync (section 7) expresses `at`, `completed`, `from`, `until`, `datetime`,
//! `modified` and `<lastmod>` as [W3C Datetimes](https://www.w3.org/TR/NOTE-datetime): one of
//! six granularities, from a bare year to a time with any number of decimal fractions of a
//! second, and a time zone designator (`Z` or `±hh:mm`) on every value that has a time.
//!
//! A [`W3cDateTime`] remembers how it was written (granularity, fraction digits, offset) and
//! writes itself back the same way, so that reading and writing a document changes nothing.
//! Comparison, equality and hashing are on the instant it denotes, as with
//! `chrono::DateTime`; [`W3cDateTime::is_identical`] compares the written form.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;

use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, Offset as _, TimeZone, Timelike, Utc};

use crate::rules::{Rule, RuleError};

/// A W3C Datetime, as written in a ResourceSync document.
///
/// Values of reduced precision (`2013`, `2013-01`, `2013-01-03`, `2013-01-03T09:00Z`) stand
/// for the start of the period they name: `2013-01` compares as `2013-01-01T00:00:00Z`.
/// Date-only values carry no offset and are taken as UTC. The instant of a value with an
/// offset is its local time minus the offset: `19:20+01:00` is `18:20Z`.
///
/// Equality, ordering and hashing are on that instant, so `2013-01-03T10:00:00+01:00`
/// equals `2013-01-03T09:00:00Z`; use [`W3cDateTime::is_identical`] to compare the text.
///
/// ```
/// use resourcesync_model::{Precision, W3cDateTime};
///
/// let local: W3cDateTime = "2013-01-03T19:20+01:00".parse()?;
/// let utc: W3cDateTime = "2013-01-03T18:20:00Z".parse()?;
/// assert_eq!(local, utc);
/// assert!(!local.is_identical(&utc));
/// assert_eq!(local.precision(), Precision::Minute);
/// assert_eq!(local.to_string(), "2013-01-03T19:20+01:00");
/// assert!("2013-02-30".parse::<W3cDateTime>().is_err());
/// # Ok::<(), resourcesync_model::DateTimeError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct W3cDateTime {
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    /// The first nine fraction digits, as nanoseconds.
    nanos: u32,
    precision: Precision,
    /// `None` exactly when the precision has no time (year, month, day).
    offset: Option<Offset>,
    /// Seconds since the Unix epoch of the instant (UTC), computed once on construction so
    /// that comparing and sorting are integer compares.
    epoch: i64,
    /// Fraction digits after the ninth (up to [`W3cDateTime::MAX_FRACTION_DIGITS`] in all),
    /// scaled to nineteen decimal places, so that values of any width compare as integers;
    /// the precision says how many of them were written.
    sub_nanos: u64,
}

/// The granularity a [`W3cDateTime`] was written with: the six forms of the W3C note.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[allow(clippy::exhaustive_enums)] // the W3C note defines exactly these six forms
pub enum Precision {
    /// `YYYY`
    Year,
    /// `YYYY-MM`
    Month,
    /// `YYYY-MM-DD`
    Day,
    /// `YYYY-MM-DDThh:mmTZD`
    Minute,
    /// `YYYY-MM-DDThh:mm:ssTZD`
    Second,
    /// `YYYY-MM-DDThh:mm:ss.sTZD`, with this many fraction digits (at least one).
    Fraction(u32),
}

/// The time zone designator of a [`W3cDateTime`] that has a time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[allow(clippy::exhaustive_enums)] // the W3C note defines exactly these forms
pub enum Offset {
    /// `Z`: UTC.
    Utc,
    /// `+hh:mm`: this many minutes ahead of UTC (`+00:00` is `East(0)`).
    East(u16),
    /// `-hh:mm`: this many minutes behind UTC (`-00:00` is `West(0)`).
    West(u16),
}

impl Offset {
    /// The offset in seconds east of UTC.
    pub fn seconds_east(self) -> i32 {
        match self {
            Offset::Utc => 0,
            Offset::East(m) => i32::from(m) * 60,
            Offset::West(m) => -i32::from(m) * 60,
        }
    }
}

/// Why a text is not a W3C Datetime.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid W3C datetime \"{input}\": {reason}")]
pub struct DateTimeError {
    /// The offending text, cut to 64 characters.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl RuleError for DateTimeError {
    fn rule(&self) -> Rule {
        Rule::DatetimeSyntax
    }
}

fn err(input: &str, reason: &'static str) -> DateTimeError {
    DateTimeError {
        input: crate::rules::clip(input),
        reason,
    }
}

/// Reads exactly `n` ASCII digits at `at`.
fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let s = b.get(at..at + n)?;
    s.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

impl FromStr for W3cDateTime {
    type Err = DateTimeError;

    /// Leading and trailing XML white space (space, tab, CR, LF) is dropped first, as XML
    /// Schema's `whiteSpace="collapse"` does for `xs:dateTime` attribute values; white
    /// space inside the value is an error.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // XML's white space is ASCII's but for form feed, which XML forbids anyway; the
        // byte-wise trim costs a fraction of a char-set one.
        let s = s.trim_ascii();
        let mut dt = W3cDateTime::parse_fields(s)?;
        dt.epoch = dt.compute_epoch();
        Ok(dt)
    }
}

impl W3cDateTime {
    /// Reads the fields; the caller computes the instant.
    fn parse_fields(s: &str) -> Result<W3cDateTime, DateTimeError> {
        let b = s.as_bytes();
        let mut dt = W3cDateTime {
            year: 0,
            month: 1,
            day: 1,
            hour: 0,
            minute: 0,
            second: 0,
            nanos: 0,
            precision: Precision::Year,
            offset: None,
            sub_nanos: 0,
            epoch: 0,
        };
        // `digits` bounds every value it returns: four digits fit u16, two fit u8.
        let year = digits(b, 0, 4).ok_or_else(|| err(s, "expected a four-digit year"))?;
        dt.year = year as u16;
        if b.len() == 4 {
            return Ok(dt);
        }
        if b.get(4) != Some(&b'-') {
            return Err(err(s, "expected '-' after the year"));
        }
        let month = digits(b, 5, 2).ok_or_else(|| err(s, "expected a two-digit month"))? as u8;
        if !(1..=12).contains(&month) {
            return Err(err(s, "month out of range"));
        }
        dt.month = month;
        dt.precision = Precision::Month;
        if b.len() == 7 {
            return Ok(dt);
        }
        if b.get(7) != Some(&b'-') {
            return Err(err(s, "expected '-' after the month"));
        }
        let day = digits(b, 8, 2).ok_or_else(|| err(s, "expected a two-digit day"))? as u8;
        if day == 0 || day > days_in_month(dt.year, month) {
            return Err(err(s, "day out of range for the month"));
        }
        dt.day = day;
        dt.precision = Precision::Day;
        if b.len() == 10 {
            return Ok(dt);
        }
        if b.get(10) != Some(&b'T') {
            return Err(err(s, "expected 'T' after the date"));
        }
        let hour = digits(b, 11, 2).ok_or_else(|| err(s, "expected a two-digit hour"))? as u8;
        if b.get(13) != Some(&b':') {
            return Err(err(s, "expected ':' after the hour"));
        }
        let minute = digits(b, 14, 2).ok_or_else(|| err(s, "expected two-digit minutes"))? as u8;
        if hour > 23 {
            return Err(err(s, "hour out of range"));
        }
        if minute > 59 {
            return Err(err(s, "minutes out of range"));
        }
        dt.hour = hour;
        dt.minute = minute;
        dt.precision = Precision::Minute;
        let mut at = 16;
        if b.get(at) == Some(&b':') {
            let second =
                digits(b, 17, 2).ok_or_else(|| err(s, "expected two-digit seconds"))? as u8;
            // A leap second (60) has no instant in chrono or in most stores; refusing it
            // is safer than silently moving it to the next minute.
            if second > 59 {
                return Err(err(s, "seconds out of range"));
            }
            dt.second = second;
            dt.precision = Precision::Second;
            at = 19;
            if b.get(at) == Some(&b'.') {
                let start = at + 1;
                let end = start + b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
                let count = end - start;
                if count == 0 {
                    return Err(err(s, "expected digits after '.'"));
                }
                if count > W3cDateTime::MAX_FRACTION_DIGITS as usize {
                    return Err(err(
                        s,
                        "more than 28 fraction digits of a second (this library keeps up to 28)",
                    ));
                }
                let first = count.min(9);
                // Nine digits fit u32; scale to nanoseconds.
                let n = digits(b, start, first).unwrap_or(0);
                dt.nanos = n * 10u32.pow((9 - first) as u32);
                if count > 9 {
                    // At most nineteen digits, so they fit u64 scaled to nineteen places.
                    let mut sub = 0u64;
                    for &d in &b[start + 9..end] {
                        sub = sub * 10 + u64::from(d - b'0');
                    }
                    dt.sub_nanos = sub * 10u64.pow((19 - (count - 9)) as u32);
                }
                dt.precision = Precision::Fraction(u32::try_from(count).unwrap_or(u32::MAX));
                at = end;
            }
        }
        dt.offset = Some(match b.get(at) {
            None => return Err(err(s, "a time needs a time zone designator (Z or ±hh:mm)")),
            Some(b'Z') if b.len() == at + 1 => Offset::Utc,
            Some(&sign @ (b'+' | b'-')) if b.len() == at + 6 => {
                let h = digits(b, at + 1, 2);
                let m = digits(b, at + 4, 2);
                let (Some(h), Some(m), Some(b':')) = (h, m, b.get(at + 3)) else {
                    return Err(err(s, "time zone offset must be ±hh:mm"));
                };
                if h > 23 || m > 59 {
                    return Err(err(s, "time zone offset out of range"));
                }
                let minutes = (h * 60 + m) as u16;
                if sign == b'+' {
                    Offset::East(minutes)
                } else {
                    Offset::West(minutes)
                }
            }
            Some(b'Z' | b'+' | b'-') => return Err(err(s, "time zone offset must be ±hh:mm")),
            Some(_) => return Err(err(s, "unexpected character in time")),
        });
        Ok(dt)
    }
}

impl TryFrom<&str> for W3cDateTime {
    type Error = DateTimeError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl fmt::Display for W3cDateTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut result = Ok(());
        self.pieces(|piece| {
            if result.is_ok() {
                // Every byte of a piece is ASCII.
                result = std::str::from_utf8(piece)
                    .map_err(|_| fmt::Error)
                    .and_then(|piece| f.write_str(piece));
            }
        });
        result
    }
}

impl W3cDateTime {
    /// Appends the value to `out` as [`Display`](fmt::Display) writes it, without the
    /// formatting machinery: what a writer of many documents does per entry.
    ///
    /// ```
    /// use resourcesync_model::W3cDateTime;
    /// let t: W3cDateTime = "2013-01-02T14:00:00.5+01:00".parse()?;
    /// let mut out = b"at=".to_vec();
    /// t.write_to(&mut out);
    /// assert_eq!(out, b"at=2013-01-02T14:00:00.5+01:00");
    /// # Ok::<(), resourcesync_model::DateTimeError>(())
    /// ```
    pub fn write_to(&self, out: &mut Vec<u8>) {
        self.pieces(|piece| out.extend_from_slice(piece));
    }

    /// The value as the W3C note writes it, in up to three pieces of ASCII.
    fn pieces(&self, mut emit: impl FnMut(&[u8])) {
        // Written digit by digit into a stack buffer: `write!` with a dozen padded
        // arguments was three times slower than chrono's formatter on the benchmark.
        let mut buf = [0u8; 36];
        let mut len = 0;
        let mut put = |bytes: &[u8]| {
            buf[len..len + bytes.len()].copy_from_slice(bytes);
            len += bytes.len();
        };
        let two = |n: u8| [b'0' + n / 10, b'0' + n % 10];
        let y = self.year;
        put(&[
            b'0' + (y / 1000 % 10) as u8,
            b'0' + (y / 100 % 10) as u8,
            b'0' + (y / 10 % 10) as u8,
            b'0' + (y % 10) as u8,
        ]);
        if self.precision >= Precision::Month {
            put(b"-");
            put(&two(self.month));
        }
        if self.precision >= Precision::Day {
            put(b"-");
            put(&two(self.day));
        }
        if self.precision >= Precision::Minute {
            put(b"T");
            put(&two(self.hour));
            put(b":");
            put(&two(self.minute));
        }
        if self.precision >= Precision::Second {
            put(b":");
            put(&two(self.second));
        }
        let mut tail: Option<([u8; 19], usize)> = None;
        if let Precision::Fraction(digits) = self.precision {
            put(b".");
            let shown = digits.min(9) as usize;
            let mut n = self.nanos;
            let mut frac = [b'0'; 9];
            for slot in frac.iter_mut().rev() {
                *slot = b'0' + (n % 10) as u8;
                n /= 10;
            }
            put(&frac[..shown]);
            if digits > 9 {
                let mut n = self.sub_nanos;
                let mut rest = [b'0'; 19];
                for slot in rest.iter_mut().rev() {
                    *slot = b'0' + (n % 10) as u8;
                    n /= 10;
                }
                tail = Some((rest, (digits - 9) as usize));
            }
        }
        let zone: Option<(u8, u16)> = match self.offset {
            None => None,
            Some(Offset::Utc) => Some((b'Z', 0)),
            Some(Offset::East(m)) => Some((b'+', m)),
            Some(Offset::West(m)) => Some((b'-', m)),
        };
        // Digits past the ninth go between the buffer and the zone.
        let mut zone_buf = [0u8; 6];
        let zone_len = match zone {
            None => 0,
            Some((b'Z', _)) => {
                zone_buf[0] = b'Z';
                1
            }
            Some((sign, m)) => {
                let (h, m) = ((m / 60) as u8, (m % 60) as u8);
                zone_buf = [
                    sign,
                    b'0' + h / 10,
                    b'0' + h % 10,
                    b':',
                    b'0' + m / 10,
                    b'0' + m % 10,
                ];
                6
            }
        };
        emit(&buf[..len]);
        if let Some((rest, len)) = tail {
            emit(&rest[..len]);
        }
        emit(&zone_buf[..zone_len]);
    }
}

impl W3cDateTime {
    /// The most fraction digits of a second a value keeps. The W3C note sets no bound;
    /// this one (a ten-thousandth of a yoctosecond) lets the value be `Copy` and 40 bytes,
    /// and a longer fraction is refused with a [`DateTimeError`] rather than cut.
    pub const MAX_FRACTION_DIGITS: u32 = 28;

    /// A complete UTC date and time with whole seconds, the form section 7 recommends.
    ///
    /// Fails when a field is out of range (month 13, February 30, hour 24, second 60) or the
    /// year has more than four digits.
    pub fn utc(
        year: u16,
        month: u8,
        day: u8,
        hour: u8,
        minute: u8,
        second: u8,
    ) -> Result<Self, DateTimeError> {
        format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}Z").parse()
    }

    /// A date without a time (`YYYY-MM-DD`).
    pub fn date(year: u16, month: u8, day: u8) -> Result<Self, DateTimeError> {
        format!("{year:04}-{month:02}-{day:02}").parse()
    }

    /// The granularity the value was written with.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// The time zone designator, or `None` for a value without a time.
    pub fn offset(&self) -> Option<Offset> {
        self.offset
    }

    /// Whether this is the form section 7 recommends: a complete date and time with at
    /// least whole seconds, in UTC (`YYYY-MM-DDThh:mm:ss[.s]Z`).
    pub fn is_recommended_form(&self) -> bool {
        matches!(self.precision, Precision::Second | Precision::Fraction(_))
            && self.offset == Some(Offset::Utc)
    }

    /// Whether both values were written the same way: same instant, granularity, fraction
    /// digits and offset. `==` compares instants only.
    pub fn is_identical(&self, other: &Self) -> bool {
        self.year == other.year
            && self.month == other.month
            && self.day == other.day
            && self.hour == other.hour
            && self.minute == other.minute
            && self.second == other.second
            && self.nanos == other.nanos
            && self.precision == other.precision
            && self.offset == other.offset
            && self.sub_nanos == other.sub_nanos
    }

    /// The local date and time as written, at the start of its period.
    fn naive(&self) -> chrono::NaiveDateTime {
        // Every field was range-checked on construction, so these cannot fail; a
        // fallback keeps the library free of panics all the same.
        NaiveDate::from_ymd_opt(
            i32::from(self.year),
            u32::from(self.month),
            u32::from(self.day),
        )
        .and_then(|d| {
            d.and_hms_nano_opt(
                u32::from(self.hour),
                u32::from(self.minute),
                u32::from(self.second),
                self.nanos,
            )
        })
        .unwrap_or_default()
    }

    fn offset_seconds(&self) -> i32 {
        self.offset.map_or(0, Offset::seconds_east)
    }

    /// The instant this value denotes (the start of its period), in its own offset; a
    /// value without a time is taken as UTC. Fraction digits past the ninth are dropped.
    pub fn to_chrono(&self) -> DateTime<FixedOffset> {
        // Offsets are bounded to ±23:59 on parsing, inside chrono's range.
        let tz = FixedOffset::east_opt(self.offset_seconds()).unwrap_or(Utc.fix());
        tz.from_local_datetime(&self.naive())
            .single()
            .unwrap_or_else(|| DateTime::<Utc>::default().fixed_offset())
    }

    /// The instant this value denotes (the start of its period), in UTC.
    pub fn to_utc(&self) -> DateTime<Utc> {
        self.to_chrono().with_timezone(&Utc)
    }

    /// Seconds since the Unix epoch of the instant, from the fields, minus the offset.
    fn compute_epoch(&self) -> i64 {
        days_from_civil(
            i64::from(self.year),
            i64::from(self.month),
            i64::from(self.day),
        ) * 86_400
            + i64::from(self.hour) * 3600
            + i64::from(self.minute) * 60
            + i64::from(self.second)
            - i64::from(self.offset_seconds())
    }

    /// The first second after the period a value of reduced precision names, in seconds
    /// since the Unix epoch: the next year, month, day or minute. `None` for a value with
    /// seconds, which names an instant.
    fn period_end(&self) -> Option<i64> {
        let (y, m) = (i64::from(self.year), i64::from(self.month));
        let start_of = |y, m, d| days_from_civil(y, m, d) * 86_400;
        Some(match self.precision {
            Precision::Year => start_of(y + 1, 1, 1),
            Precision::Month if m == 12 => start_of(y + 1, 1, 1),
            Precision::Month => start_of(y, m + 1, 1),
            Precision::Day => self.epoch + 86_400,
            Precision::Minute => self.epoch + 60,
            Precision::Second | Precision::Fraction(_) => return None,
        })
    }

    /// Whether this value lies wholly before `other`: every instant of the period it names
    /// is before the start of `other`'s.
    ///
    /// A value of reduced precision names a period — `2013-01-03` the whole day,
    /// `2013-01-03T11:00Z` the whole minute — and a value with seconds an instant. `<`
    /// compares starts only, so `2013-01-03 < 2013-01-03T11:00:00Z`, yet an `until` of
    /// `2013-01-03` covers 11:00 that day. Interval and order rules use this instead: a
    /// lower bound is the start of its period and an upper bound its end.
    ///
    /// ```
    /// use resourcesync_model::W3cDateTime;
    ///
    /// let t = |s: &str| s.parse::<W3cDateTime>().unwrap();
    /// // The day 2013-01-03 does not lie before 11:00 that day, nor 11:00 before the day.
    /// assert!(!t("2013-01-03").precedes(&t("2013-01-03T11:00:00Z")));
    /// assert!(!t("2013-01-03T11:00:00Z").precedes(&t("2013-01-03")));
    /// // It lies before the next day, and 11:00 the day before lies before it.
    /// assert!(t("2013-01-03").precedes(&t("2013-01-04T00:00:00Z")));
    /// assert!(t("2013-01-02T11:00:00Z").precedes(&t("2013-01-03")));
    /// // Instants compare as instants.
    /// assert!(t("2013-01-03T11:00:00Z").precedes(&t("2013-01-03T11:00:00.5Z")));
    /// ```
    pub fn precedes(&self, other: &W3cDateTime) -> bool {
        match self.period_end() {
            // `other` starts at `other.epoch` plus a fraction of a second, at or after
            // the end exactly when its whole seconds are.
            Some(end) => end <= other.epoch,
            None => self < other,
        }
    }
}

/// Days since 1970-01-01 of a date of the proleptic Gregorian calendar, after Howard
/// Hinnant's `days_from_civil`.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = year - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

impl<Tz: TimeZone> From<DateTime<Tz>> for W3cDateTime {
    /// A complete date and time in the value's own offset (`Z` for a zero offset), with as
    /// many fraction digits as the nanoseconds need and none when they are zero.
    fn from(value: DateTime<Tz>) -> Self {
        let fixed = value.fixed_offset();
        let local = fixed.naive_local();
        let east = fixed.offset().local_minus_utc() / 60;
        let offset = match east {
            0 => Offset::Utc,
            m if m > 0 => Offset::East(m as u16),
            m => Offset::West((-m) as u16),
        };
        let nanos = local.nanosecond() % 1_000_000_000;
        let precision = if nanos == 0 {
            Precision::Second
        } else {
            let mut digits = 9;
            let mut n = nanos;
            while n % 10 == 0 {
                n /= 10;
                digits -= 1;
            }
            Precision::Fraction(digits)
        };
        let mut dt = W3cDateTime {
            // W3C Datetimes have four-digit years; chrono's wider range is clamped.
            year: local.year().clamp(0, 9999) as u16,
            month: local.month() as u8,
            day: local.day() as u8,
            hour: local.hour() as u8,
            minute: local.minute() as u8,
            second: local.second().min(59) as u8,
            nanos,
            precision,
            offset: Some(offset),
            sub_nanos: 0,
            epoch: 0,
        };
        dt.epoch = dt.compute_epoch();
        dt
    }
}

impl From<std::time::SystemTime> for W3cDateTime {
    /// The instant in UTC, in the form section 7 recommends, with as many fraction digits
    /// as the nanoseconds need: `W3cDateTime::from(SystemTime::now())` is "now" for a
    /// caller that reads the clock (this crate never does).
    ///
    /// ```
    /// use std::time::{Duration, SystemTime};
    /// use resourcesync_model::W3cDateTime;
    ///
    /// let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_357_203_600_250);
    /// assert_eq!(W3cDateTime::from(t).to_string(), "2013-01-03T09:00:00.25Z");
    /// assert!(W3cDateTime::from(SystemTime::now()).is_recommended_form());
    /// ```
    fn from(value: std::time::SystemTime) -> Self {
        W3cDateTime::from(DateTime::<Utc>::from(value))
    }
}

impl PartialEq for W3cDateTime {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for W3cDateTime {}

impl PartialOrd for W3cDateTime {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for W3cDateTime {
    fn cmp(&self, other: &Self) -> Ordering {
        self.epoch
            .cmp(&other.epoch)
            .then(self.nanos.cmp(&other.nanos))
            // Digits past the ninth are scaled to one width, so "5" > "49" as integers.
            .then(self.sub_nanos.cmp(&other.sub_nanos))
    }
}

impl Hash for W3cDateTime {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.epoch.hash(state);
        self.nanos.hash(state);
        self.sub_nanos.hash(state);
    }
}

crate::rules::serde_as_text!(W3cDateTime);

#[cfg(test)]
mod tests {
    use super::*;

    fn dt(s: &str) -> W3cDateTime {
        s.parse().unwrap()
    }

    #[test]
    fn all_six_granularities_round_trip() {
        for s in [
            "1997",
            "1997-07",
            "1997-07-16",
            "1997-07-16T19:20+01:00",
            "1997-07-16T19:20:30+01:00",
            "1997-07-16T19:20:30.45+01:00",
            "1997-07-16T19:20:30.123456789012Z",
            "1997-07-16T19:20:30-00:00",
            "1997-07-16T19:20:30+00:00",
        ] {
            assert_eq!(dt(s).to_string(), s);
            let mut out = b"x".to_vec();
            dt(s).write_to(&mut out);
            assert_eq!(out, [b"x", s.as_bytes()].concat());
        }
    }

    #[test]
    fn white_space_around_the_value_is_dropped() {
        for s in [
            " 2013-01-03T09:00:00Z",
            "2013-01-03T09:00:00Z ",
            "\t\r\n 2013-01-03T09:00:00Z \n",
        ] {
            let v = dt(s);
            assert!(v.is_identical(&dt("2013-01-03T09:00:00Z")), "{s:?}");
            assert_eq!(v.to_string(), "2013-01-03T09:00:00Z");
        }
        assert!(dt(" 2013 ").is_identical(&dt("2013")));
        for bad in [
            "2013-01-03 T09:00:00Z",
            "2013-01-03T09:00:00 Z",
            " ",
            "",
            "\u{a0}2013",
        ] {
            assert!(bad.parse::<W3cDateTime>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn periods_end_where_their_precision_ends() {
        // (value, the first instant after its period, an instant inside its period)
        let rows = [
            ("2013", "2014-01-01T00:00:00Z", "2013-12-31T23:59:59.999Z"),
            ("2013-12", "2014-01-01T00:00:00Z", "2013-12-31T23:59:59Z"),
            ("2012-02", "2012-03-01T00:00:00Z", "2012-02-29T12:00:00Z"),
            ("2013-02", "2013-03-01T00:00:00Z", "2013-02-28T23:59:59Z"),
            (
                "2013-01-03",
                "2013-01-04T00:00:00Z",
                "2013-01-03T23:59:59.9Z",
            ),
            (
                "2013-01-03T11:00Z",
                "2013-01-03T11:01:00Z",
                "2013-01-03T11:00:59Z",
            ),
            (
                "2013-01-03T12:00+01:00",
                "2013-01-03T11:01:00Z",
                "2013-01-03T11:00:59Z",
            ),
            (
                "2013-01-03T11:00:00Z",
                "2013-01-03T11:00:00.001Z",
                "2013-01-03T11:00:00Z",
            ),
            (
                "2013-01-03T11:00:00.5Z",
                "2013-01-03T11:00:00.6Z",
                "2013-01-03T11:00:00.5Z",
            ),
        ];
        for (value, after, inside) in rows {
            let v = dt(value);
            assert!(v.precedes(&dt(after)), "{value} precedes {after}");
            assert!(
                !v.precedes(&dt(inside)),
                "{value} does not precede {inside}"
            );
            // And the other way: the period's start is a lower bound.
            assert!(!v.precedes(&v), "{value}");
        }
        // The period of the last year ends in the year 10000, which has no W3C form.
        assert!(!dt("9999").precedes(&dt("9999-12-31T23:59:59Z")));
    }

    #[test]
    fn offsets_are_subtracted_to_reach_utc() {
        // The Python reference implementation adds the offset; UTC is local minus offset.
        assert_eq!(dt("2013-01-03T19:20+01:00"), dt("2013-01-03T18:20:00Z"));
        assert_eq!(dt("2013-01-03T19:20-05:30"), dt("2013-01-04T00:50:00Z"));
        assert_eq!(
            dt("2013-01-03T19:20+01:00").to_utc().to_rfc3339(),
            "2013-01-03T18:20:00+00:00"
        );
    }

    #[test]
    fn reduced_precision_compares_as_start_of_period() {
        assert_eq!(dt("2013"), dt("2013-01-01T00:00:00Z"));
        assert_eq!(dt("2013-02"), dt("2013-02-01"));
        assert!(dt("2013-02") < dt("2013-02-01T00:00:00.000000000001Z"));
        assert!(dt("2013-01-01T00:00:00.5Z") > dt("2013-01-01T00:00:00.49Z"));
        assert!(dt("2013-01-01T00:00:00.0000000005Z") > dt("2013-01-01T00:00:00.00000000049Z"));
        assert_eq!(
            dt("2013-01-01T00:00:00.0000000005Z"),
            dt("2013-01-01T00:00:00.00000000050Z")
        );
    }

    #[test]
    fn hostile_values_are_refused() {
        for s in [
            "",
            "13",
            "2013-13",
            "2013-00",
            "2013-02-29",
            "2012-02-30",
            "1900-02-29",
            "2013-01-01T24:00Z",
            "2013-01-01T23:60Z",
            "2013-01-01T23:59:60Z",
            "2013-01-01T10:00",
            "2013-01-01T10:00:00",
            "2013-01-01T10:00+25:00",
            "2013-01-01T10:00+0100",
            "2013-01-01T10:00+01:60",
            "2013-01-01T10:00:00.Z",
            "2013-01-01t10:00Z",
            "2013-01-01T10:00z",
            "2013-01-01T10:00ZZ",
            "2013-01-01 10:00Z",
            "+2013-01-01",
            "20130101",
            "2013-1-01",
            "٢٠١٣",
        ] {
            assert!(s.parse::<W3cDateTime>().is_err(), "{s} must be refused");
        }
        assert!(dt("2000-02-29") < dt("2000-03-01"));
    }

    #[test]
    fn fractions_keep_up_to_twenty_eight_digits() {
        let longest = "2013-01-03T09:00:00.1234567890123456789012345678Z";
        assert_eq!(dt(longest).to_string(), longest);
        assert!(dt(longest) > dt("2013-01-03T09:00:00.1234567890123456789012345677Z"));
        assert_eq!(
            dt("2013-01-03T09:00:00.0000000000000000000000000010Z"),
            dt("2013-01-03T09:00:00.000000000000000000000000001Z")
        );
        let e = "2013-01-03T09:00:00.12345678901234567890123456789Z"
            .parse::<W3cDateTime>()
            .unwrap_err();
        assert!(
            e.to_string().contains("more than 28 fraction digits"),
            "{e}"
        );
        // Copy, and small: five to a cache line pair, no heap.
        assert!(std::mem::size_of::<W3cDateTime>() <= 40);
        let a = dt(longest);
        let b = a;
        assert!(a.is_identical(&b));
    }

    #[test]
    fn system_time_is_utc() {
        use std::time::{Duration, SystemTime};
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_357_203_600, 5);
        let w = W3cDateTime::from(t);
        assert_eq!(w.to_string(), "2013-01-03T09:00:00.000000005Z");
        assert!(w.is_recommended_form());
        assert_eq!(
            W3cDateTime::from(SystemTime::UNIX_EPOCH).to_string(),
            "1970-01-01T00:00:00Z"
        );
    }

    #[test]
    fn error_names_the_value_and_the_problem() {
        let e = "2013-02-30".parse::<W3cDateTime>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid W3C datetime \"2013-02-30\": day out of range for the month"
        );
        assert_eq!(e.rule(), Rule::DatetimeSyntax);
    }

    #[test]
    fn chrono_conversions() {
        let c = chrono::DateTime::parse_from_rfc3339("2013-01-03T09:00:00.250+02:00").unwrap();
        let w = W3cDateTime::from(c);
        assert_eq!(w.to_string(), "2013-01-03T09:00:00.25+02:00");
        assert_eq!(w.to_chrono(), c);
        assert_eq!(
            W3cDateTime::from(c.with_timezone(&Utc)).to_string(),
            "2013-01-03T07:00:00.25Z"
        );
        assert_eq!(
            dt("2013-01-03").to_utc().to_rfc3339(),
            "2013-01-03T00:00:00+00:00"
        );
    }
}
