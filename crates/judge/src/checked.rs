//! Range checks of the numbers users and servers give, one function per
//! kind of number, so each is checked once, where it enters (a flag, a
//! config file, a server's reply), the same way everywhere. Callers hold a
//! checked value afterwards (a `Duration`, a finite price) and never
//! re-check it.

use std::fmt::Display;
use std::ops::RangeInclusive;
use std::time::Duration;

/// The longest timeout, deadline or wait accepted, seconds (30 days): any
/// longer is a typo, and `Duration` cannot hold every finite number.
pub const MAX_SECONDS: f64 = 30.0 * 86_400.0;
/// The highest price or cost accepted, USD (per million tokens, per call,
/// or per query).
pub const MAX_USD: f64 = 1e6;

/// A number outside its range, naming the field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} must be {range}, got {value}")]
pub struct OutOfRange {
    /// The field, as the user or server wrote it (`dispatch.timeout_secs`).
    pub field: String,
    /// The accepted range, in words.
    pub range: String,
    /// The value given.
    pub value: String,
}

fn out(field: &str, range: impl Display, value: impl Display) -> OutOfRange {
    OutOfRange {
        field: field.to_string(),
        range: range.to_string(),
        value: value.to_string(),
    }
}

/// A duration in seconds: finite, in (0, [`MAX_SECONDS`]].
pub fn seconds(field: &str, secs: f64) -> Result<Duration, OutOfRange> {
    if !(secs.is_finite() && secs > 0.0 && secs <= MAX_SECONDS) {
        return Err(out(field, format!("in (0, {MAX_SECONDS}] seconds"), secs));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| out(field, "a duration", secs))
}

/// An amount of money in USD: finite, in [0, [`MAX_USD`]].
pub fn usd(field: &str, amount: f64) -> Result<f64, OutOfRange> {
    if amount.is_finite() && (0.0..=MAX_USD).contains(&amount) {
        Ok(amount)
    } else {
        Err(out(field, format!("in [0, {MAX_USD}] USD"), amount))
    }
}

/// A number in a closed range (a probability, a weight, a threshold):
/// finite and in `range`.
pub fn within(field: &str, value: f64, range: RangeInclusive<f64>) -> Result<f64, OutOfRange> {
    if value.is_finite() && range.contains(&value) {
        Ok(value)
    } else {
        Err(out(
            field,
            format!("in [{}, {}]", range.start(), range.end()),
            value,
        ))
    }
}

/// A count or limit in a closed range.
pub fn count<T: PartialOrd + Display>(
    field: &str,
    value: T,
    range: RangeInclusive<T>,
) -> Result<T, OutOfRange> {
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(out(
            field,
            format!("in {}..={}", range.start(), range.end()),
            value,
        ))
    }
}

/// A count with a lower bound only.
pub fn at_least<T: PartialOrd + Display>(field: &str, value: T, min: T) -> Result<T, OutOfRange> {
    if value >= min {
        Ok(value)
    } else {
        Err(OutOfRange {
            field: field.to_string(),
            range: format!("at least {min}"),
            value: value.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_refuses_what_it_cannot_hold() {
        assert_eq!(seconds("t", 1.5), Ok(Duration::from_millis(1500)));
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e300, MAX_SECONDS * 2.0] {
            let e = seconds("dispatch.timeout_secs", bad).expect_err("out of range");
            assert!(
                e.to_string()
                    .starts_with("dispatch.timeout_secs must be in (0,"),
                "{e}"
            );
        }
        assert!(seconds("t", MAX_SECONDS).is_ok());
        assert_eq!(usd("price", 0.0), Ok(0.0));
        for bad in [-0.01, f64::NAN, f64::INFINITY, 2e6] {
            assert!(usd("price", bad).is_err(), "{bad}");
        }
        assert!(within("p", 1.0, 0.0..=1.0).is_ok());
        assert!(within("p", f64::NAN, 0.0..=1.0).is_err());
        assert_eq!(
            at_least("limit", 0usize, 1).map_err(|e| e.to_string()),
            Err("limit must be at least 1, got 0".to_string())
        );
        assert_eq!(
            count("rounds", 0usize, 1..=100).map_err(|e| e.to_string()),
            Err("rounds must be in 1..=100, got 0".to_string())
        );
    }
}
