//! Values of the command's options that have units: durations and byte counts.

use std::time::Duration;

/// The longest duration an option takes: 10 years (315,360,000 s). Durations are
/// added to the clock (hyper's header deadline, the idle and request deadlines), and
/// `Instant + Duration` panics past the clock's range: `--header-timeout
/// 10000000000000000000` made every connection's task panic. No deadline a server or a
/// sync needs comes near the bound.
pub const MAX_DURATION: Duration = Duration::from_secs(315_360_000);

/// Parses a duration (the value of a `--...-timeout` or `--max-request-time` option): a
/// number followed by `ms`, `s`, `m`, `h` or `d`, or alone (seconds); more than zero and at most
/// [`MAX_DURATION`]. Its errors name the bound; clap names the option.
pub fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let seconds_per_unit = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return Err(format!("unknown unit {unit:?}: use ms, s, m, h or d")),
    };
    let number: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 500ms, 30s or 2m"))?;
    let seconds = number * seconds_per_unit;
    // NaN fails both comparisons: refused as not more than zero.
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(format!("{text:?} is not a duration of more than zero"));
    }
    if seconds > MAX_DURATION.as_secs_f64() {
        return Err(format!(
            "{text:?} is longer than the longest duration taken, 10 years ({}s)",
            MAX_DURATION.as_secs()
        ));
    }
    Duration::try_from_secs_f64(seconds)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?} is not a duration of more than zero"))
}

/// Parses a number of bytes: a number alone, or followed by `K`, `M`, `G` or `T`
/// (powers of 1024, `KiB` and the like said too); more than zero.
pub fn bytes(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let at = text
        .find(|c: char| c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(at);
    let shift = match unit.trim_end_matches("iB").trim_end_matches('B') {
        "" => 0,
        "K" | "k" => 10,
        "M" => 20,
        "G" => 30,
        "T" => 40,
        _ => return Err(format!("unknown unit {unit:?}: use K, M, G or T")),
    };
    let number: u64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a size such as 4096, 64M or 2G"))?;
    number
        .checked_mul(1 << shift)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("{text:?} is not a size of more than zero that fits 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_parse_with_their_units_and_refuse_the_rest() {
        assert_eq!(bytes("4096"), Ok(4096));
        assert_eq!(bytes("64M"), Ok(64 << 20));
        assert_eq!(bytes("2GiB"), Ok(2 << 30));
        for bad in ["0", "5X", "lots", "99999999999T"] {
            assert!(bytes(bad).is_err(), "{bad}");
        }
        assert_eq!(duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(duration("2d"), Ok(Duration::from_secs(172_800)));
        assert!(duration("0s").is_err());
        assert!(duration("5y").unwrap_err().contains("unknown unit"));
        assert_eq!(duration("315360000"), Ok(MAX_DURATION));
        // Past the bound (`Instant + Duration` would overflow, and panic, with the
        // largest), and values that are no durations at all.
        for bad in [
            "315360001",
            "10000000000000000000",
            "5256001m",
            "inf",
            "NaN",
            "-5s",
        ] {
            let error = duration(bad).unwrap_err();
            assert!(!error.is_empty(), "{bad}");
        }
        let error = duration("10000000000000000000").unwrap_err();
        assert!(error.contains("315360000"), "{error}");
    }
}
