//! The body of an alert: aligned `name : value` lines, and the text forms every line uses
//! (UTC times, thousands separators, single-line values).
//!
//! Values are made single-line (`\r` and `\n` shown as `\r` and `\n` escapes) so that a
//! multi-line driver message can neither break the alignment nor forge a line of its own.

use chrono::{DateTime, Timelike, Utc};

/// Names are padded to this width, then `: ` follows (upstream's `f'{name:<18}: {value}'`):
/// the longest upstream name, `index_required_at`, is 17 characters.
pub(crate) const NAME_WIDTH: usize = 18;

/// The detail lines of one alert, in order.
#[derive(Debug, Default)]
pub(crate) struct Details {
    lines: Vec<(&'static str, String)>,
}

impl Details {
    /// Appends `name : value`.
    pub(crate) fn push(&mut self, name: &'static str, value: impl Into<String>) {
        self.lines.push((name, value.into()));
    }

    /// Appends `name : value` when there is a value.
    pub(crate) fn push_some(&mut self, name: &'static str, value: Option<impl Into<String>>) {
        if let Some(value) = value {
            self.push(name, value);
        }
    }

    /// The lines, each `name` padded to [`NAME_WIDTH`], `: `, the single-line value.
    pub(crate) fn render(&self) -> String {
        let lines: Vec<String> = self.lines.iter().map(|(name, value)| line(name, &single_line(value))).collect();
        lines.join("\n")
    }
}

/// One `name: value` line, `name` padded to [`NAME_WIDTH`]; `value` is taken as it is.
pub(crate) fn line(name: &str, value: &str) -> String {
    format!("{name:<NAME_WIDTH$}: {value}")
}

/// A UTC time as alerts print it: `2026-07-22 13:00:00`, with microseconds
/// (`2026-07-22 13:00:00.250000`) only when they are not zero.
pub(crate) fn utc(time: DateTime<Utc>) -> String {
    let micros = time.nanosecond() / 1_000;
    if micros == 0 {
        time.format("%Y-%m-%d %H:%M:%S").to_string()
    } else {
        format!("{}.{micros:06}", time.format("%Y-%m-%d %H:%M:%S"))
    }
}

/// `text` on one line: carriage returns and line feeds become the two-character escapes
/// `\r` and `\n`.
pub(crate) fn single_line(text: &str) -> String {
    text.replace('\r', "\\r").replace('\n', "\\n")
}

/// An integer with `,` between thousands: `99999` → `99,999`.
pub(crate) fn thousands(number: i128) -> String {
    let digits = number.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if number < 0 {
        out.push('-');
    }
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn names_are_aligned_and_values_kept_on_one_line() {
        let mut details = Details::default();
        details.push("tap_id", "payments");
        details.push_some("run_id", None::<String>);
        details.push("error_detail", "first\r\nsecond");
        assert_eq!(details.render(), "tap_id            : payments\nerror_detail      : first\\r\\nsecond");
    }

    #[test]
    fn times_are_utc_with_microseconds_only_when_present() {
        let whole = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap();
        assert_eq!(utc(whole), "2026-07-22 13:00:00");
        let fraction = whole + chrono::Duration::microseconds(250_000);
        assert_eq!(utc(fraction), "2026-07-22 13:00:00.250000");
        let tiny = whole + chrono::Duration::microseconds(7);
        assert_eq!(utc(tiny), "2026-07-22 13:00:00.000007");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(50_000), "50,000");
        assert_eq!(thousands(99_999), "99,999");
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(-1_000), "-1,000");
    }
}
