//! The duration grammar of PipelineWise's data-diff timing keys (`window_start`,
//! `window_end`, `statement_timeout`): `1h`, `2min`, `1d6h`, `2w`.
//!
//! A duration is a sequence of `<digits><unit>` tokens with no separators, in any order, each
//! unit at most once: `s` = 1, `min` = 60, `h` = 3,600, `d` = 86,400, `w` = 604,800 seconds.
//! Units are case-sensitive (`1m`, `1H` and `1hour` are invalid); leading zeros are allowed.
//!
//! Window offsets are written with a sign by convention (`window_start: -15h`) and stored as
//! positive magnitudes: [`Duration::parse_window_offset`] strips **every** leading `-` first,
//! so `-15h`, `15h` and `--15h` are equal. `statement_timeout` is parsed with
//! [`Duration::parse`], which strips nothing, so `-5min` is invalid there.
//!
//! # Decisions where upstream is silent
//!
//! * Digits are ASCII only. Upstream's Python `\d` also matches other Unicode decimal digits
//!   (`١h` is one hour there); such text is an invalid duration here.
//! * Upstream's integers are unbounded; ours must fit the backend's `BIGINT` column. A total
//!   above `i64::MAX` seconds is [`DurationError::TooLarge`] (PipelineWise would fail later, when
//!   inserting the definition).
//! * Upstream accepts any length; datadiff refuses what can never run
//!   ([`DurationError::AboveLimit`]):
//!   * `statement_timeout` ([`Duration::parse_statement_timeout`]) is at most
//!     [`Duration::MAX_STATEMENT_TIMEOUT`], 2,147,483 s (24d20h31min23s): PostgreSQL keeps the
//!     setting as a 32-bit number of milliseconds (`max_val` 2147483647 in `pg_settings`) and
//!     refuses more (`30d` is "out of range"), so every attempt of such a definition would
//!     ERROR.
//!   * Window offsets are at most [`Duration::MAX_WINDOW_OFFSET`], 365,000 days (1,000 years
//!     of 365 days). PostgreSQL's timestamps begin in 4714 BC and croner's fire times in
//!     year 1, so every window `[slot - window_start, slot - window_end)` of every slot then
//!     lies inside the range PostgreSQL stores, with room to spare; a longer look-back is
//!     better written as `initial_full_scan`.

use std::fmt;

/// A number of whole seconds parsed from the duration grammar. Never negative.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration {
    seconds: i64,
}

/// Why a text is not a duration. `Display` gives PipelineWise's message; the value shown is
/// the text after any stripped `-`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DurationError {
    /// The text is empty (or held only `-` characters for a window offset).
    #[error("Duration must be a non-empty string such as '1h' or '1d6h'")]
    Empty,
    /// The text does not match the grammar.
    #[error("Invalid duration '{value}'. Supported units are s, min, h, d and w")]
    Invalid {
        /// The text that was parsed.
        value: String,
    },
    /// A unit appears twice (`1h2h`).
    #[error("Duration unit '{unit}' is specified more than once in '{value}'")]
    RepeatedUnit {
        /// The repeated unit.
        unit: String,
        /// The text that was parsed.
        value: String,
    },
    /// The total is zero where a positive duration is needed.
    #[error("Duration '{value}' must be greater than zero")]
    Zero {
        /// The text that was parsed.
        value: String,
    },
    /// The total does not fit a signed 64-bit number of seconds (datadiff only).
    #[error("Duration '{value}' is too large")]
    TooLarge {
        /// The text that was parsed.
        value: String,
    },
    /// The total is longer than its setting allows (datadiff only; see the module docs).
    #[error("Duration '{value}' is longer than {}, {}", limit.maximum().units(), limit.reason())]
    AboveLimit {
        /// The text that was parsed.
        value: String,
        /// Which bound it exceeds.
        limit: DurationLimit,
    },
}

/// The bounds datadiff puts on durations, beyond the grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DurationLimit {
    /// [`Duration::MAX_STATEMENT_TIMEOUT`].
    StatementTimeout,
    /// [`Duration::MAX_WINDOW_OFFSET`].
    WindowOffset,
}

impl DurationLimit {
    /// The longest duration allowed.
    pub fn maximum(self) -> Duration {
        match self {
            DurationLimit::StatementTimeout => Duration::MAX_STATEMENT_TIMEOUT,
            DurationLimit::WindowOffset => Duration::MAX_WINDOW_OFFSET,
        }
    }

    fn reason(self) -> &'static str {
        match self {
            DurationLimit::StatementTimeout => {
                "the largest statement_timeout PostgreSQL accepts (2147483647 milliseconds)"
            }
            DurationLimit::WindowOffset => {
                "the largest window offset datadiff accepts (1000 years, so that every window lies inside \
                 PostgreSQL's timestamp range)"
            }
        }
    }
}

/// The units in the order a token is tried; `min` before anything that could be its prefix.
const UNITS: [(&str, i64); 5] = [("s", 1), ("min", 60), ("h", 3_600), ("d", 86_400), ("w", 604_800)];

impl Duration {
    /// The longest `statement_timeout`: 2,147,483 s (24d20h31min23s), the whole seconds within
    /// PostgreSQL's limit of 2,147,483,647 milliseconds.
    pub const MAX_STATEMENT_TIMEOUT: Duration = Duration { seconds: 2_147_483 };

    /// The longest window offset (`window_start`, `window_end`): 365,000 days.
    pub const MAX_WINDOW_OFFSET: Duration = Duration { seconds: 365_000 * 86_400 };

    /// A duration of `seconds` (negative values are clamped to zero).
    pub fn from_seconds(seconds: i64) -> Duration {
        Duration { seconds: seconds.max(0) }
    }

    /// The number of seconds.
    pub fn seconds(self) -> i64 {
        self.seconds
    }

    /// Parses a positive duration (`statement_timeout`, and the direct grammar): no sign is
    /// stripped and zero is an error.
    pub fn parse(text: &str) -> Result<Duration, DurationError> {
        let duration = Self::parse_total(text)?;
        if duration.seconds == 0 {
            return Err(DurationError::Zero { value: text.to_owned() });
        }
        Ok(duration)
    }

    /// Parses a `statement_timeout`: [`Duration::parse`], then at most
    /// [`Duration::MAX_STATEMENT_TIMEOUT`].
    pub fn parse_statement_timeout(text: &str) -> Result<Duration, DurationError> {
        Self::parse(text)?.at_most(text, DurationLimit::StatementTimeout)
    }

    /// Parses a window offset: every leading `-` is stripped, then the grammar applies, and the
    /// total is at most [`Duration::MAX_WINDOW_OFFSET`]. Zero is allowed (a `window_end` of
    /// `0s` ends the window at the fire time); callers that need a positive offset
    /// (`window_start`) check [`Duration::is_zero`] and report [`DurationError::Zero`]
    /// themselves, or use [`Duration::parse_positive_window_offset`].
    pub fn parse_window_offset(text: &str) -> Result<Duration, DurationError> {
        let stripped = text.trim_start_matches('-');
        Self::parse_total(stripped)?.at_most(stripped, DurationLimit::WindowOffset)
    }

    /// Parses a window offset that must be positive (`window_start`).
    pub fn parse_positive_window_offset(text: &str) -> Result<Duration, DurationError> {
        let stripped = text.trim_start_matches('-');
        let duration = Self::parse_window_offset(stripped)?;
        if duration.seconds == 0 {
            return Err(DurationError::Zero { value: stripped.to_owned() });
        }
        Ok(duration)
    }

    /// `self`, or [`DurationError::AboveLimit`] when it exceeds `limit`.
    fn at_most(self, text: &str, limit: DurationLimit) -> Result<Duration, DurationError> {
        if self > limit.maximum() {
            return Err(DurationError::AboveLimit { value: text.to_owned(), limit });
        }
        Ok(self)
    }

    /// The duration in the grammar's units, largest first, weeks left out: `24d20h31min23s`.
    pub fn units(self) -> String {
        if self.seconds == 0 {
            return "0s".to_owned();
        }
        let mut rest = self.seconds;
        let mut text = String::new();
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("min", 60), ("s", 1)] {
            if rest >= size {
                text.push_str(&format!("{}{unit}", rest / size));
                rest %= size;
            }
        }
        text
    }

    /// Whether the duration is zero seconds.
    pub fn is_zero(self) -> bool {
        self.seconds == 0
    }

    /// The grammar without the zero rule.
    fn parse_total(text: &str) -> Result<Duration, DurationError> {
        if text.is_empty() {
            return Err(DurationError::Empty);
        }
        let invalid = || DurationError::Invalid { value: text.to_owned() };
        let too_large = || DurationError::TooLarge { value: text.to_owned() };
        let mut seen: Vec<&str> = Vec::with_capacity(UNITS.len());
        let mut total: i64 = 0;
        let mut rest = text;
        while !rest.is_empty() {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 {
                return Err(invalid());
            }
            let (number, after) = rest.split_at(digits);
            let (unit, multiplier) = UNITS
                .iter()
                .filter(|(unit, _)| after.starts_with(unit))
                .max_by_key(|(unit, _)| unit.len())
                .copied()
                .ok_or_else(invalid)?;
            if seen.contains(&unit) {
                return Err(DurationError::RepeatedUnit { unit: unit.to_owned(), value: text.to_owned() });
            }
            seen.push(unit);
            // Leading zeros are allowed, and a long run of them must not overflow.
            let significant = number.trim_start_matches('0');
            let count: i64 = if significant.is_empty() { 0 } else { significant.parse().map_err(|_| too_large())? };
            let seconds = count.checked_mul(multiplier).ok_or_else(too_large)?;
            total = total.checked_add(seconds).ok_or_else(too_large)?;
            rest = &after[unit.len()..];
        }
        Ok(Duration { seconds: total })
    }
}

impl fmt::Display for Duration {
    /// The number of seconds followed by `s` (`3600s`), which parses back to the same value.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}s", self.seconds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seconds(text: &str) -> Result<i64, DurationError> {
        Duration::parse(text).map(Duration::seconds)
    }

    #[test]
    fn upstream_accepted_values() {
        assert_eq!(seconds("1s"), Ok(1));
        assert_eq!(seconds("2min"), Ok(120));
        assert_eq!(seconds("1d6h"), Ok(108_000));
        assert_eq!(seconds("2w"), Ok(1_209_600));
    }

    #[test]
    fn tokens_in_any_order_with_leading_zeros() {
        assert_eq!(seconds("6h1d"), Ok(108_000));
        assert_eq!(seconds("1w1d1h1min1s"), Ok(604_800 + 86_400 + 3_600 + 60 + 1));
        assert_eq!(seconds("0005min"), Ok(300));
        assert_eq!(seconds("0000000000000000000000001h"), Ok(3_600));
    }

    #[test]
    fn upstream_rejected_values_with_their_messages() {
        assert_eq!(Duration::parse(""), Err(DurationError::Empty));
        assert_eq!(Duration::parse("1"), Err(DurationError::Invalid { value: "1".into() }));
        assert_eq!(Duration::parse("1hour"), Err(DurationError::Invalid { value: "1hour".into() }));
        assert_eq!(
            Duration::parse("1h2h"),
            Err(DurationError::RepeatedUnit { unit: "h".into(), value: "1h2h".into() })
        );
        assert_eq!(Duration::parse("0s"), Err(DurationError::Zero { value: "0s".into() }));
        assert_eq!(Duration::parse("-1h"), Err(DurationError::Invalid { value: "-1h".into() }));
    }

    #[test]
    fn messages_are_upstreams() {
        assert_eq!(DurationError::Empty.to_string(), "Duration must be a non-empty string such as '1h' or '1d6h'");
        assert_eq!(
            DurationError::Invalid { value: "1m".into() }.to_string(),
            "Invalid duration '1m'. Supported units are s, min, h, d and w"
        );
        assert_eq!(
            DurationError::RepeatedUnit { unit: "h".into(), value: "1h2h".into() }.to_string(),
            "Duration unit 'h' is specified more than once in '1h2h'"
        );
        assert_eq!(DurationError::Zero { value: "0s".into() }.to_string(), "Duration '0s' must be greater than zero");
    }

    #[test]
    fn units_are_case_sensitive_and_unseparated() {
        for text in ["1m", "1H", "1Min", "1 h", "1h 2min", " 1h", "1h,2min", "1.5h", "h", "min", "1mins", "+1h"] {
            assert!(matches!(Duration::parse(text), Err(DurationError::Invalid { .. })), "{text}");
        }
    }

    #[test]
    fn only_ascii_digits() {
        // Arabic-Indic digit one: Python's \d would accept it; we do not.
        assert!(matches!(Duration::parse("\u{0661}h"), Err(DurationError::Invalid { .. })));
    }

    #[test]
    fn window_offsets_strip_every_leading_minus() {
        let fifteen_hours = Ok(Duration::from_seconds(54_000));
        assert_eq!(Duration::parse_window_offset("-15h"), fifteen_hours);
        assert_eq!(Duration::parse_window_offset("15h"), fifteen_hours);
        assert_eq!(Duration::parse_window_offset("--15h"), fifteen_hours);
        assert_eq!(Duration::parse_window_offset("-0s"), Ok(Duration::from_seconds(0)));
        assert_eq!(Duration::parse_window_offset("-"), Err(DurationError::Empty));
        // The message shows the stripped value.
        assert_eq!(Duration::parse_positive_window_offset("-0h"), Err(DurationError::Zero { value: "0h".into() }));
        assert_eq!(Duration::parse_window_offset("-1x"), Err(DurationError::Invalid { value: "1x".into() }));
        // A minus inside the text is not stripped.
        assert!(Duration::parse_window_offset("1h-2min").is_err());
    }

    #[test]
    fn totals_beyond_bigint_are_rejected() {
        assert!(matches!(Duration::parse("99999999999999999999s"), Err(DurationError::TooLarge { .. })));
        assert!(matches!(Duration::parse("9223372036854775807w"), Err(DurationError::TooLarge { .. })));
        assert_eq!(seconds("9223372036854775807s"), Ok(i64::MAX));
    }

    #[test]
    fn statement_timeouts_stop_at_postgresqls_limit() {
        let limit = Duration::MAX_STATEMENT_TIMEOUT;
        assert_eq!(limit.seconds() * 1_000, 2_147_483_000, "whole seconds within INT_MAX milliseconds");
        assert!((limit.seconds() + 1) * 1_000 > i64::from(i32::MAX));
        assert_eq!(Duration::parse_statement_timeout("24d20h31min23s"), Ok(limit));
        assert_eq!(Duration::parse_statement_timeout("5min"), Ok(Duration::from_seconds(300)));
        for text in ["24d20h31min24s", "25d", "30d", "88000w"] {
            assert_eq!(
                Duration::parse_statement_timeout(text),
                Err(DurationError::AboveLimit { value: text.into(), limit: DurationLimit::StatementTimeout }),
                "{text}"
            );
        }
        // The grammar's own errors come first.
        assert_eq!(Duration::parse_statement_timeout("0s"), Err(DurationError::Zero { value: "0s".into() }));
        assert_eq!(
            DurationError::AboveLimit { value: "30d".into(), limit: DurationLimit::StatementTimeout }.to_string(),
            "Duration '30d' is longer than 24d20h31min23s, the largest statement_timeout PostgreSQL accepts \
             (2147483647 milliseconds)"
        );
        // `parse` itself stays unbounded (report durations such as --max-lag).
        assert_eq!(seconds("30d"), Ok(2_592_000));
    }

    #[test]
    fn window_offsets_stop_at_a_thousand_years() {
        let limit = Ok(Duration::MAX_WINDOW_OFFSET);
        assert_eq!(Duration::parse_window_offset("-365000d"), limit);
        assert_eq!(Duration::parse_positive_window_offset("365000d"), limit);
        let above =
            |value: &str| Err(DurationError::AboveLimit { value: value.into(), limit: DurationLimit::WindowOffset });
        assert_eq!(Duration::parse_window_offset("-365000d1s"), above("365000d1s"));
        assert_eq!(Duration::parse_positive_window_offset("--88000w"), above("88000w"));
        assert!(
            above("88000w")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .starts_with("Duration '88000w' is longer than 365000d, the largest window offset datadiff accepts")
        );
    }

    #[test]
    fn units_are_largest_first() {
        assert_eq!(Duration::from_seconds(0).units(), "0s");
        assert_eq!(Duration::from_seconds(3_600).units(), "1h");
        assert_eq!(Duration::from_seconds(90_061).units(), "1d1h1min1s");
        assert_eq!(Duration::MAX_STATEMENT_TIMEOUT.units(), "24d20h31min23s");
        let duration = Duration::from_seconds(1_234_567);
        assert_eq!(Duration::parse(&duration.units()), Ok(duration));
    }

    #[test]
    fn display_round_trips() {
        let duration = Duration::parse("1d6h").unwrap_or(Duration::from_seconds(0));
        assert_eq!(Duration::parse(&duration.to_string()), Ok(duration));
    }
}
