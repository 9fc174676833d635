//! ISO 8601 rendering of instants, dates and times, as Python's `isoformat` writes them.

use chrono::{DateTime, Duration, NaiveDate, NaiveTime, SecondsFormat, Utc};

const MICROS_PER_SECOND: i64 = 1_000_000;

/// PostgreSQL's earliest `timestamptz`, `4714-11-24 00:00:00+00 BC` (year -4713 counted
/// astronomically, as chrono counts): an earlier instant cannot be bound.
pub(crate) fn postgres_first_instant() -> DateTime<Utc> {
    NaiveDate::from_ymd_opt(-4713, 11, 24)
        .and_then(|day| day.and_hms_opt(0, 0, 0))
        .map_or(DateTime::<Utc>::MIN_UTC, |first| first.and_utc())
}

/// An instant as `YYYY-MM-DDTHH:MM:SS[.ffffff]Z`; the fraction only when non-zero.
pub(crate) fn iso_utc(micros: i64) -> String {
    match DateTime::<Utc>::from_timestamp_micros(micros) {
        Some(instant) => instant.to_rfc3339_opts(SecondsFormat::AutoSi, true).replace_micros_form(),
        None => format!("{micros}us"),
    }
}

/// A date as `YYYY-MM-DD`.
pub(crate) fn iso_date(days: i32) -> String {
    let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    epoch
        .checked_add_signed(Duration::days(i64::from(days)))
        .map(|date| date.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| format!("{days}d"))
}

/// A time of day as `HH:MM:SS[.ffffff]`.
pub(crate) fn iso_time(micros: i64) -> String {
    let seconds = micros.div_euclid(MICROS_PER_SECOND);
    let fraction = micros.rem_euclid(MICROS_PER_SECOND);
    let time =
        u32::try_from(seconds).ok().and_then(|seconds| NaiveTime::from_num_seconds_from_midnight_opt(seconds, 0));
    match time {
        Some(time) if fraction == 0 => time.format("%H:%M:%S").to_string(),
        Some(time) => format!("{}.{fraction:06}", time.format("%H:%M:%S")),
        // PostgreSQL allows 24:00:00.
        None if seconds == 86_400 && fraction == 0 => "24:00:00".to_owned(),
        None => format!("{micros}us"),
    }
}

/// `SecondsFormat::AutoSi` prints 3, 6 or 9 fraction digits; Python prints 6 or none.
trait MicrosForm {
    fn replace_micros_form(self) -> String;
}

impl MicrosForm for String {
    fn replace_micros_form(self) -> String {
        let Some(dot) = self.find('.') else { return self };
        let Some(zone) = self[dot..].find(['Z', '+', '-']).map(|at| dot + at) else { return self };
        let digits = &self[dot + 1..zone];
        let micros = format!("{:0<6}", digits);
        format!("{}.{}{}", &self[..dot], &micros[..6], &self[zone..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_render_like_python_isoformat_with_z() {
        assert_eq!(iso_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_utc(1_500), "1970-01-01T00:00:00.001500Z");
        assert_eq!(iso_utc(123_456), "1970-01-01T00:00:00.123456Z");
        // Year one is a real boundary (PipelineWise's datetime.min).
        assert_eq!(iso_utc(-62_135_596_800_000_000), "0001-01-01T00:00:00Z");
    }

    #[test]
    fn times_render_with_optional_fraction() {
        assert_eq!(iso_time(0), "00:00:00");
        assert_eq!(iso_time(45_296_000_001), "12:34:56.000001");
        assert_eq!(iso_time(86_400_000_000), "24:00:00");
    }

    #[test]
    fn dates_render_iso() {
        assert_eq!(iso_date(-1), "1969-12-31");
        assert_eq!(iso_date(20_656), "2026-07-22");
    }
}
