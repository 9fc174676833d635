//! Canonical values: one representation per meaning, so that compatible column types compare
//! equal and the comparison is a plain `==`.
//!
//! Readers decide, per column pair, which variant both sides are converted to (an exact
//! `numeric` against a `double precision` replica column is compared as [`Numeric`] at the
//! exact side's declared scale, a `timestamptz` against a naive `timestamp` as UTC
//! [`Value::Timestamp`], and so on). Once converted, equality is structural.
//!
//! [`Value::canonical_text`] renders a value the way PipelineWise's `canonical_value` does,
//! for result values. Row values are compared, never printed or stored.

use std::fmt;

use crate::error::Error;

/// A canonical value of one field.
///
/// `Null` is distinct from every other value, including the empty string.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits in 64 bits.
    Int(i64),
    /// An exact decimal number, normalised (see [`Numeric`]).
    Numeric(Numeric),
    /// A double-precision number compared by value (see [`Float`]).
    Float(Float),
    /// Text.
    Text(Box<str>),
    /// Bytes (`bytea`).
    Bytes(Box<[u8]>),
    /// An instant, as microseconds since 1970-01-01T00:00:00Z (naive timestamps are UTC).
    Timestamp(i64),
    /// A calendar date, as days since 1970-01-01.
    Date(i32),
    /// A time of day, as microseconds since midnight.
    Time(i64),
    /// A uuid, by its 16 bytes.
    Uuid([u8; 16]),
}

impl Value {
    /// A text value.
    pub fn text(text: impl Into<Box<str>>) -> Value {
        Value::Text(text.into())
    }

    /// A double-precision value compared by value: `-0.0` equals `0.0` and every NaN equals
    /// every other NaN (as PostgreSQL orders and compares them).
    pub fn float(value: f64) -> Value {
        Value::Float(Float::new(value))
    }

    /// A `char(n)` value: trailing blanks are not significant, as in PostgreSQL's `bpchar`.
    pub fn padded_char(text: &str) -> Value {
        Value::Text(text.trim_end_matches(' ').into())
    }

    /// Renders the value the way PipelineWise renders result values (`canonical_value`):
    /// integral numbers without a fraction (`"1.000"` → `"1"`), other numbers normalised
    /// (`"1.50"` → `"1.5"`), instants in ISO 8601 UTC ending `Z`, dates and times in ISO form,
    /// bytes in lowercase hex. `None` for NULL. Booleans render as `true`/`false`; callers that
    /// keep JSON booleans check for [`Value::Bool`] first.
    pub fn canonical_text(&self) -> Option<String> {
        match self {
            Value::Null => None,
            Value::Bool(value) => Some(value.to_string()),
            Value::Int(value) => Some(value.to_string()),
            Value::Numeric(value) => Some(value.to_string()),
            Value::Float(value) => Some(value.canonical_text()),
            Value::Text(value) => Some(value.to_string()),
            Value::Bytes(value) => Some(value.iter().map(|byte| format!("{byte:02x}")).collect()),
            Value::Timestamp(micros) => Some(crate::time::iso_utc(*micros)),
            Value::Date(days) => Some(crate::time::iso_date(*days)),
            Value::Time(micros) => Some(crate::time::iso_time(*micros)),
            Value::Uuid(bytes) => Some(crate::key::Key::Uuid(*bytes).to_string()),
        }
    }
}

/// Values are never printed: a `Debug` of a row must not leak its contents into a log.
impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self {
            Value::Null => return f.write_str("Null"),
            Value::Bool(_) => "Bool",
            Value::Int(_) => "Int",
            Value::Numeric(_) => "Numeric",
            Value::Float(_) => "Float",
            Value::Text(_) => "Text",
            Value::Bytes(_) => "Bytes",
            Value::Timestamp(_) => "Timestamp",
            Value::Date(_) => "Date",
            Value::Time(_) => "Time",
            Value::Uuid(_) => "Uuid",
        };
        write!(f, "{kind}(<redacted>)")
    }
}

/// A double compared by value, stored as canonical bits so that `Eq` and `Hash` hold.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Float(u64);

impl Float {
    /// Canonicalises `-0.0` to `0.0` and every NaN to one NaN.
    pub fn new(value: f64) -> Float {
        if value.is_nan() {
            Float(f64::NAN.to_bits())
        } else if value == 0.0 {
            Float(0.0f64.to_bits())
        } else {
            Float(value.to_bits())
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        f64::from_bits(self.0)
    }

    fn canonical_text(self) -> String {
        let value = self.get();
        if value.is_nan() {
            "NaN".to_owned()
        } else if value.is_infinite() {
            if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
        } else {
            // Rust prints the shortest round-trip digits without an exponent, which is what
            // Python's `Decimal(str(v))` normalised to fixed notation gives.
            Numeric::parse(&format!("{value}"))
                .map(|numeric| numeric.to_string())
                .unwrap_or_else(|_| format!("{value}"))
        }
    }
}

/// An exact decimal number in normal form: no leading zeros in the integer part, no trailing
/// zeros in the fraction, no `-0`. `1.000`, `+1` and `1e0` are all `1`; `1.50` is `1.5`.
///
/// Arbitrary precision (PostgreSQL's `numeric` is not bounded by 128 bits). `NaN`,
/// `Infinity` and `-Infinity` are kept as such.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Numeric(NumericRepr);

#[derive(Clone, PartialEq, Eq, Hash)]
enum NumericRepr {
    Finite {
        negative: bool,
        /// Integer digits, no leading zeros ("" for zero).
        integer: Box<str>,
        /// Fraction digits, no trailing zeros.
        fraction: Box<str>,
    },
    NaN,
    Infinity {
        negative: bool,
    },
}

impl Numeric {
    /// Parses decimal text: an optional sign, digits with an optional fraction, an optional
    /// exponent (`1.5e3`), or `NaN` / `Infinity` / `-Infinity` (any case, as PostgreSQL
    /// accepts them). ASCII digits only.
    pub fn parse(text: &str) -> Result<Numeric, Error> {
        let invalid = || Error::InvalidNumeric;
        let trimmed = text.trim();
        let (negative, unsigned) = match trimmed.as_bytes().first() {
            Some(b'-') => (true, &trimmed[1..]),
            Some(b'+') => (false, &trimmed[1..]),
            _ => (false, trimmed),
        };
        if unsigned.eq_ignore_ascii_case("nan") {
            return Ok(Numeric(NumericRepr::NaN));
        }
        if unsigned.eq_ignore_ascii_case("infinity") || unsigned.eq_ignore_ascii_case("inf") {
            return Ok(Numeric(NumericRepr::Infinity { negative }));
        }
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(at) => {
                let exponent: i64 = unsigned[at + 1..].parse().map_err(|_| invalid())?;
                (&unsigned[..at], exponent)
            }
            None => (unsigned, 0),
        };
        let (integer, fraction) = match mantissa.find('.') {
            Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
            None => (mantissa, ""),
        };
        let all_digits = |part: &str| part.bytes().all(|byte| byte.is_ascii_digit());
        if (integer.is_empty() && fraction.is_empty()) || !all_digits(integer) || !all_digits(fraction) {
            return Err(invalid());
        }
        // Shift the decimal point by the exponent over the concatenated digits.
        let digits: String = [integer, fraction].concat();
        let point = i64::try_from(integer.len()).map_err(|_| invalid())? + exponent;
        if point.unsigned_abs() > 1_000_000 {
            return Err(invalid());
        }
        let (integer, fraction) = if point <= 0 {
            let zeros = "0".repeat(point.unsigned_abs() as usize);
            (String::new(), format!("{zeros}{digits}"))
        } else {
            let point = point as usize;
            if point >= digits.len() {
                (format!("{digits}{}", "0".repeat(point - digits.len())), String::new())
            } else {
                (digits[..point].to_owned(), digits[point..].to_owned())
            }
        };
        Ok(Numeric::finite(negative, &integer, &fraction))
    }

    /// An integer as a numeric.
    pub fn from_i64(value: i64) -> Numeric {
        let digits = value.unsigned_abs().to_string();
        Numeric::finite(value < 0, &digits, "")
    }

    fn finite(negative: bool, integer: &str, fraction: &str) -> Numeric {
        let integer = integer.trim_start_matches('0');
        let fraction = fraction.trim_end_matches('0');
        let zero = integer.is_empty() && fraction.is_empty();
        Numeric(NumericRepr::Finite { negative: negative && !zero, integer: integer.into(), fraction: fraction.into() })
    }

    /// True for a finite value without fraction digits.
    pub fn is_integral(&self) -> bool {
        matches!(&self.0, NumericRepr::Finite { fraction, .. } if fraction.is_empty())
    }
}

impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            NumericRepr::NaN => f.write_str("NaN"),
            NumericRepr::Infinity { negative: true } => f.write_str("-Infinity"),
            NumericRepr::Infinity { negative: false } => f.write_str("Infinity"),
            NumericRepr::Finite { negative, integer, fraction } => {
                if *negative {
                    f.write_str("-")?;
                }
                f.write_str(if integer.is_empty() { "0" } else { integer })?;
                if !fraction.is_empty() {
                    write!(f, ".{fraction}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Numerics may be row values: never shown.
        f.write_str("Numeric(<redacted>)")
    }
}

impl std::str::FromStr for Numeric {
    type Err = Error;

    fn from_str(text: &str) -> Result<Numeric, Error> {
        Numeric::parse(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normal(text: &str) -> String {
        Numeric::parse(text).unwrap().to_string()
    }

    #[test]
    fn numerics_normalise_like_python_canonical_value() {
        assert_eq!(normal("1.000"), "1");
        assert_eq!(normal("1.50"), "1.5");
        assert_eq!(normal("0001.0100"), "1.01");
        assert_eq!(normal("-0.000"), "0");
        assert_eq!(normal("+12"), "12");
        assert_eq!(normal(".5"), "0.5");
        assert_eq!(normal("5."), "5");
        assert_eq!(normal("1e2"), "100");
        assert_eq!(normal("1.5E-3"), "0.0015");
        assert_eq!(normal("-2.50e1"), "-25");
        assert_eq!(normal("NaN"), "NaN");
        assert_eq!(normal("-Infinity"), "-Infinity");
    }

    #[test]
    fn malformed_numerics_are_errors_not_panics() {
        for text in ["", "-", ".", "1.2.3", "abc", "1e", "1e99999999999", "١٢", "1_000"] {
            assert_eq!(Numeric::parse(text), Err(Error::InvalidNumeric), "{text:?} must be rejected");
        }
    }

    #[test]
    fn floats_compare_by_value() {
        assert_eq!(Value::float(-0.0), Value::float(0.0));
        assert_eq!(Value::float(f64::NAN), Value::float(-f64::NAN));
        assert_ne!(Value::float(0.1), Value::float(0.1 + f64::EPSILON));
        assert_eq!(Value::float(1e20).canonical_text().unwrap(), "100000000000000000000");
        assert_eq!(Value::float(0.25).canonical_text().unwrap(), "0.25");
        assert_eq!(Value::float(2.0).canonical_text().unwrap(), "2");
    }

    #[test]
    fn null_is_distinct_from_empty_text_and_char_padding_is_ignored() {
        assert_ne!(Value::Null, Value::text(""));
        assert_eq!(Value::padded_char("ab   "), Value::text("ab"));
        assert_ne!(Value::padded_char(" ab"), Value::text("ab"));
    }

    #[test]
    fn canonical_text_matches_upstream_forms() {
        assert_eq!(Value::Int(4).canonical_text().unwrap(), "4");
        assert_eq!(Value::Timestamp(1_784_721_600_000_000).canonical_text().unwrap(), "2026-07-22T12:00:00Z");
        assert_eq!(Value::Timestamp(1_784_721_600_000_001).canonical_text().unwrap(), "2026-07-22T12:00:00.000001Z");
        assert_eq!(Value::Date(0).canonical_text().unwrap(), "1970-01-01");
        assert_eq!(Value::Time(3_723_000_000).canonical_text().unwrap(), "01:02:03");
        assert_eq!(Value::Bytes(vec![0xde, 0xad, 0x01].into()).canonical_text().unwrap(), "dead01");
        assert_eq!(Value::Null.canonical_text(), None);
    }

    #[test]
    fn debug_never_shows_a_row_value() {
        let shown = format!("{:?}", Value::text("secret-marker"));
        assert!(!shown.contains("secret-marker"), "{shown}");
        let shown = format!("{:?}", Numeric::parse("31337").unwrap());
        assert!(!shown.contains("31337"), "{shown}");
    }
}
