//! Times on the command line: `--at` in, the two printed forms out.
//!
//! * Tables print upstream's form, Python's `isoformat()` of an aware UTC time:
//!   `2026-07-22T13:00:00+00:00` (`.ffffff` only when the microseconds are not zero), and an
//!   empty cell for an unknown time — never `None`.
//! * JSON and CSV print RFC 3339 with `Z` (`2026-07-22T13:00:00Z`, fractional seconds only when
//!   present); an unknown time is JSON `null`, an empty CSV field.
//! * `--at` takes RFC 3339 with `Z` or an offset (`2026-07-22T13:47:00Z`,
//!   `2026-07-22T15:47:00+02:00`); a time without a zone is a usage error (SPEC §4), because
//!   guessing the zone would silently pick other slots. On the commands that record (`run`,
//!   `rerun`, `import_config`) it may lie at most [`MAX_AT_AHEAD`] ahead of this machine's
//!   clock: a later `--at` would record a verdict for a window that has not happened yet.

use chrono::{DateTime, FixedOffset, NaiveDateTime, SecondsFormat, Utc};

/// The table form of a time: upstream's `isoformat()`, or an empty cell.
pub(crate) fn table(instant: Option<DateTime<Utc>>) -> String {
    instant.map(datadiff_diff_core::attempt::python_isoformat).unwrap_or_default()
}

/// The JSON form of a time: an RFC 3339 string with `Z`, or `null`.
pub(crate) fn json(instant: Option<DateTime<Utc>>) -> serde_json::Value {
    match instant {
        Some(instant) => serde_json::Value::String(rfc3339(instant)),
        None => serde_json::Value::Null,
    }
}

/// RFC 3339 with `Z`.
pub(crate) fn rfc3339(instant: DateTime<Utc>) -> String {
    instant.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// How far ahead of the real clock a recording command's `--at` may lie: room for clock
/// skew between hosts, no room for a window that has not happened.
pub(crate) const MAX_AT_AHEAD: chrono::Duration = chrono::Duration::minutes(5);

/// Parses `--at` of a command that records attempts or definitions: [`parse_at`], at most
/// [`MAX_AT_AHEAD`] ahead of the real clock.
pub(crate) fn parse_recording_at(text: &str) -> Result<DateTime<Utc>, String> {
    let at = parse_at(text)?;
    let ahead = at - Utc::now();
    if ahead > MAX_AT_AHEAD {
        return Err(format!(
            "the time is {} ahead of this machine's clock; a command that records may run at most {} min \
             ahead (a window that has not happened yet cannot be verified)",
            span_text(ahead),
            MAX_AT_AHEAD.num_minutes()
        ));
    }
    Ok(at)
}

/// A positive span in whole seconds, in the two largest units that matter: `5 min 59 s`,
/// `2 h 5 min`, `3 d 4 h` (a unit of zero is left out: `6 min`, `1 h`).
fn span_text(span: chrono::Duration) -> String {
    let seconds = span.num_seconds().max(0);
    let (days, hours, minutes, rest) = (seconds / 86_400, seconds / 3_600 % 24, seconds / 60 % 60, seconds % 60);
    let parts: [(i64, &str); 2] = match (days, hours, minutes) {
        (0, 0, _) => [(minutes, "min"), (rest, "s")],
        (0, _, _) => [(hours, "h"), (minutes, "min")],
        _ => [(days, "d"), (hours, "h")],
    };
    let text: Vec<String> =
        parts.iter().filter(|(value, _)| *value > 0).map(|(value, unit)| format!("{value} {unit}")).collect();
    if text.is_empty() { "0 s".to_owned() } else { text.join(" ") }
}

/// Parses `--at` (a clap value parser).
pub(crate) fn parse_at(text: &str) -> Result<DateTime<Utc>, String> {
    let text = text.trim();
    if let Ok(instant) = DateTime::<FixedOffset>::parse_from_rfc3339(text) {
        return Ok(instant.with_timezone(&Utc));
    }
    let naive = ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"]
        .iter()
        .any(|format| NaiveDateTime::parse_from_str(text, format).is_ok());
    if naive {
        Err("the time has no zone: add Z for UTC or an offset such as +02:00 (2026-07-22T13:47:00Z)".to_owned())
    } else {
        Err("not an RFC 3339 time with a zone, such as 2026-07-22T13:47:00Z or 2026-07-22T15:47:00+02:00".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    #[test]
    fn tables_print_upstreams_form_and_json_prints_z() {
        let at = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap();
        assert_eq!(table(Some(at)), "2026-07-22T13:00:00+00:00");
        assert_eq!(table(None), "");
        assert_eq!(json(Some(at)), serde_json::json!("2026-07-22T13:00:00Z"));
        assert_eq!(json(None), serde_json::Value::Null);
        let fine = at + chrono::TimeDelta::microseconds(1_500);
        assert_eq!(table(Some(fine)), "2026-07-22T13:00:00.001500+00:00");
        assert_eq!(rfc3339(fine), "2026-07-22T13:00:00.001500Z");
    }

    #[test]
    fn spans_ahead_are_exact_to_the_unit_shown() {
        let span = |seconds| span_text(chrono::Duration::seconds(seconds));
        assert_eq!(span(5 * 60 + 59), "5 min 59 s");
        assert_eq!(span(6 * 60), "6 min");
        assert_eq!(span(3_600 + 5 * 60 + 7), "1 h 5 min");
        assert_eq!(span(2 * 86_400 + 3 * 3_600), "2 d 3 h");
        assert_eq!(span(42), "42 s");
    }

    #[test]
    fn at_needs_a_zone() {
        let utc = Utc.with_ymd_and_hms(2026, 7, 22, 13, 47, 0).unwrap();
        assert_eq!(parse_at("2026-07-22T13:47:00Z"), Ok(utc));
        assert_eq!(parse_at("2026-07-22T15:47:00+02:00"), Ok(utc));
        assert_eq!(parse_at("2026-07-22T13:47:00.000+00:00"), Ok(utc));
        assert!(parse_at("2026-07-22T13:47:00").unwrap_err().contains("no zone"));
        assert!(parse_at("2026-07-22 13:47:00").unwrap_err().contains("no zone"));
        assert!(parse_at("yesterday").unwrap_err().contains("RFC 3339"));
    }
}
