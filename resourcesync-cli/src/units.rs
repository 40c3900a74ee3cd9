//! Values of the command's options that have units: durations and byte counts.

use std::time::Duration;

/// Parses a duration (a `--...-timeout` option's value): a number followed by `ms`, `s` or `m`, or alone (seconds); more
/// than zero.
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
        _ => return Err(format!("unknown unit {unit:?}: use ms, s or m")),
    };
    let number: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 500ms, 30s or 2m"))?;
    Duration::try_from_secs_f64(number * seconds_per_unit)
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
        assert!(duration("0s").is_err());
    }
}
