//! Failure alerts (runs note §5.1): FAIL and ERROR summaries grouped per check, one alert per
//! group per invocation, laid out from the group's representative failure exactly as
//! PipelineWise's formatter (`format_data_diff_alert`) lays it out.
//!
//! # Grouping
//!
//! Summaries whose status is FAIL or ERROR — including ERROR summaries of checks that failed
//! before an attempt existed — are grouped per `(target_id, tap_id, check_id)` in the order
//! each group is first seen. The check id is the definition revision's, so two revisions of
//! one table alert separately, and a check is never merged with another tap's or target's.
//! A backlog of 25 failed catch-up windows of one check is one alert.
//!
//! The **representative** is the group's last ERROR, else its last FAIL: an execution error is
//! the more urgent thing to show. A group of more than one failure adds its totals after
//! `alert_utc_time`: `failed_windows` (distinct slots, or distinct bounds for summaries
//! without a slot; left out when no window is known), `failed_attempts`, `failure_statuses`
//! (`ERROR=n, FAIL=m`) and `shown_window: representative failure`, and prefixes the headline
//! with `N failed windows; ` (`N failed attempts; ` when no window is known).
//!
//! # Layout (upstream's, byte for byte)
//!
//! The message is `<STATUS> data-diff <tap_id>/<schema>.<table> — <headline>` (the source
//! schema and table; the full check name when one of the three is empty), where the headline
//! is `source index missing` for an ERROR whose preflight was BLOCKED, `check could not
//! complete` for any other ERROR, `target has N fewer|more row(s)` for a FAIL whose
//! `row_count` failed with a non-zero difference, and `data mismatch` otherwise.
//!
//! The details are `name: value` lines, the name padded to 18 characters, each present only
//! when known: `alert_utc_time` (the invocation's time, to the second), the group totals,
//! `tap_id`, `target_id`, `run_id`, `attempt` (`N (TRIGGER)`), `scheduled_utc`,
//! `source_table` and `target_table` (`database.schema.table`), `timestamp_column` (with
//! `(target: X)` when the target's is spelt differently), `window_start_utc` (`…
//! (inclusive)`, or `unresolved (initial scan)` for a historical first run whose start was not
//! found yet), `window_end_utc` (`… (exclusive)`), `query_seconds` (`source=x.xx,
//! target=y.yy`), `failed_checks` (the FAIL and ERROR results in stored order) and
//! `error_detail`. Times are UTC, as `2026-07-22 13:00:00` (microseconds only when not zero).
//! Every value but the error detail is kept on one line; the error detail keeps its line
//! breaks (as upstream) and is cut after 2,000 characters with a line `[error truncated]`.
//! For a BLOCKED preflight whose error is its findings joined by `; `, only the first finding
//! is shown: the next action already gives the index advice.
//!
//! When `row_count` or `distinct_key_count` results hold two valid counts (non-negative
//! integers, in the forms Python's `Decimal` reads: digit strings of any length, JSON
//! integers), a count table follows after a blank line:
//!
//! ```text
//! Check               Source  Target  Difference
//! row_count             1204    1201          -3
//!
//! Difference = target - source
//! ```
//!
//! **Allow-list.** Only counts are shown: never a min or max key, a checksum, a schema
//! compatibility value or a row value, whatever the results hold.
//!
//! # Next action (upstream's sentences)
//!
//! `- ` lines: what to fix (`Add a usable source index starting with <column>.` for a BLOCKED
//! preflight, `Check replication lag and investigate the mismatch.` for a FAIL, `Resolve the
//! reported error.` otherwise), then how the window gets verified again: automatic retries and
//! `rerun_data_diff_check` for a current definition's attempt, `rerun_data_diff_check` alone
//! for an inactive revision's, the next scheduled run (or running the check again) when no
//! attempt exists.
//!
//! # datadiff's additions (extra lines only)
//!
//! When the attempt's `row_diff` extension found differences, the details end with one more
//! line, `row_diff_counts   : a missing, b extra, c changed` (the words of the `row_diff`
//! result's stored error, `row_diff FAIL: a missing, b extra, c changed`, which
//! `error_detail` shows as part of the attempt's error), and the next action with one
//! more line naming `datadiff report differences --run-id <id>`. An alert of a definition
//! without `row_diff` is exactly upstream's.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Timelike, Utc};
use datadiff_diff_core::{
    attempt::{CheckId, PreflightStatus, ResultStatus, ResultType, RunSummary, SummaryStatus},
    definition::CheckType,
};
use serde_json::Value as Json;

use crate::alert::{Alert, AlertKind, AlertLevel, AlertSubject};
use crate::details::{Details, line, single_line, utc};

/// The longest `error_detail` shown, in characters.
pub const MAX_ERROR_DETAIL_CHARS: usize = 2000;

/// The longest count (in decimal digits) read from a result value; a longer one (only an
/// absurd exponent such as `1e999999` makes one) is not a valid count.
const MAX_COUNT_DIGITS: usize = 4096;

/// The FAIL and ERROR summaries of one check in one invocation: one alert.
#[derive(Debug, Clone)]
pub struct FailureGroup<'a> {
    /// Never empty.
    failures: Vec<&'a RunSummary>,
}

/// Which window a failure is about, for counting distinct failed windows.
#[derive(Debug, PartialEq, Eq, Hash)]
enum WindowKey {
    /// The cron slot.
    Slot(DateTime<Utc>),
    /// The bounds of a failure without a slot.
    Bounds(Option<DateTime<Utc>>, DateTime<Utc>),
}

impl<'a> FailureGroup<'a> {
    /// The FAIL and ERROR summaries of `summaries`, grouped per `(target_id, tap_id,
    /// check_id)` in first-seen order; PASS, DEFERRED and SKIPPED summaries are ignored.
    pub fn of(summaries: &'a [RunSummary]) -> Vec<FailureGroup<'a>> {
        let mut groups: Vec<FailureGroup<'a>> = Vec::new();
        let mut index: HashMap<(&'a str, &'a str, CheckId), usize> = HashMap::new();
        for summary in summaries.iter().filter(|summary| summary.status.is_failure()) {
            let check = &summary.check;
            let key = (check.target_id.as_str(), check.tap_id.as_str(), check.check_id);
            match index.get(&key) {
                Some(&at) => groups[at].failures.push(summary),
                None => {
                    index.insert(key, groups.len());
                    groups.push(FailureGroup { failures: vec![summary] });
                }
            }
        }
        groups
    }

    /// The group's failures in the order given.
    pub fn failures(&self) -> &[&'a RunSummary] {
        &self.failures
    }

    /// The failure the alert shows: the last ERROR, else the last FAIL.
    pub fn representative(&self) -> &'a RunSummary {
        let last = |status| self.failures.iter().rposition(|summary| summary.status == status);
        let at = last(SummaryStatus::Error).or_else(|| last(SummaryStatus::Fail)).unwrap_or(self.failures.len() - 1);
        self.failures[at]
    }

    /// Distinct failed windows: by slot, or by bounds for failures without a slot; failures
    /// with neither are not counted.
    pub fn failed_windows(&self) -> usize {
        let windows: HashSet<WindowKey> = self
            .failures
            .iter()
            .filter_map(|summary| match (summary.scheduled_for, summary.bounds) {
                (Some(slot), _) => Some(WindowKey::Slot(slot)),
                (None, Some(bounds)) => Some(WindowKey::Bounds(bounds.start, bounds.end)),
                (None, None) => None,
            })
            .collect();
        windows.len()
    }

    /// The group's alert, composed at `now`.
    pub fn alert(&self, now: DateTime<Utc>) -> Alert {
        let representative = self.representative();
        let totals = (self.failures.len() > 1).then(|| Totals {
            windows: self.failed_windows(),
            attempts: self.failures.len(),
            errors: self.failures.iter().filter(|summary| summary.status == SummaryStatus::Error).count(),
            fails: self.failures.iter().filter(|summary| summary.status == SummaryStatus::Fail).count(),
        });
        compose(representative, totals, now)
    }
}

/// A group's totals (only for groups of more than one failure).
struct Totals {
    windows: usize,
    attempts: usize,
    errors: usize,
    fails: usize,
}

impl Totals {
    /// `N failed windows; ` (or attempts, when no window is known).
    fn headline_prefix(&self) -> String {
        let (count, unit) = if self.windows > 0 { (self.windows, "window") } else { (self.attempts, "attempt") };
        format!("{count} failed {unit}{}; ", if count == 1 { "" } else { "s" })
    }

    fn push(&self, details: &mut Details) {
        if self.windows > 0 {
            details.push("failed_windows", self.windows.to_string());
        }
        details.push("failed_attempts", self.attempts.to_string());
        let statuses: Vec<String> = [("ERROR", self.errors), ("FAIL", self.fails)]
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(status, n)| format!("{status}={n}"))
            .collect();
        details.push("failure_statuses", statuses.join(", "));
        details.push("shown_window", "representative failure");
    }
}

/// A non-negative integer of any size, as its decimal digits without leading zeros.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Count(String);

impl Count {
    /// `digits` (ASCII digits, at least one) without its leading zeros.
    fn of_digits(digits: &str) -> Count {
        let trimmed = digits.trim_start_matches('0');
        Count(if trimmed.is_empty() { "0".to_owned() } else { trimmed.to_owned() })
    }

    fn compare(&self, other: &Count) -> Ordering {
        self.0.len().cmp(&other.0.len()).then_with(|| self.0.cmp(&other.0))
    }

    /// `self - smaller` for `smaller <= self`.
    fn minus(&self, smaller: &Count) -> Count {
        let mut out = Vec::with_capacity(self.0.len());
        let mut borrow = 0u8;
        let mut low = smaller.0.bytes().rev();
        for digit in self.0.bytes().rev() {
            let subtrahend = low.next().map_or(0, |b| b - b'0') + borrow;
            let digit = digit - b'0';
            let (value, next_borrow) =
                if digit >= subtrahend { (digit - subtrahend, 0) } else { (digit + 10 - subtrahend, 1) };
            out.push(b'0' + value);
            borrow = next_borrow;
        }
        out.reverse();
        Count::of_digits(std::str::from_utf8(&out).unwrap_or("0"))
    }
}

/// `target - source`: its sign and magnitude.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Difference {
    sign: Ordering,
    magnitude: Count,
}

impl Difference {
    fn between(source: &Count, target: &Count) -> Difference {
        match target.compare(source) {
            Ordering::Equal => Difference { sign: Ordering::Equal, magnitude: Count("0".to_owned()) },
            Ordering::Greater => Difference { sign: Ordering::Greater, magnitude: target.minus(source) },
            Ordering::Less => Difference { sign: Ordering::Less, magnitude: source.minus(target) },
        }
    }

    fn text(&self) -> String {
        match self.sign {
            Ordering::Less => format!("-{}", self.magnitude.0),
            _ => self.magnitude.0.clone(),
        }
    }
}

/// One line of the count table.
struct CountRow {
    check: CheckType,
    source: Count,
    target: Count,
    difference: Difference,
}

/// ASCII digits, at least one.
fn digits(text: &str) -> Option<&str> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())).then_some(text)
}

/// A string count as Python's `Decimal` reads it — surrounding whitespace and every
/// underscore removed, then a sign, digits with a fraction, an exponent — kept only when it
/// is a finite non-negative integer. (`Decimal` also reads non-ASCII decimal digits; they are
/// not counts here.)
fn decimal_count(text: &str) -> Option<Count> {
    let text: String = text.trim().chars().filter(|&c| c != '_').collect();
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text.as_str()),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = match mantissa.find('.') {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, ""),
    };
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let whole = if whole.is_empty() { "" } else { digits(whole)? };
    let fraction = if fraction.is_empty() { "" } else { digits(fraction)? };
    let exponent: i64 = match exponent {
        None => 0,
        Some(exponent) => {
            let (negative, magnitude) = match exponent.as_bytes().first() {
                Some(b'-') => (true, &exponent[1..]),
                Some(b'+') => (false, &exponent[1..]),
                _ => (false, exponent),
            };
            let magnitude: i64 = digits(magnitude)?.parse().ok()?;
            if negative { -magnitude } else { magnitude }
        }
    };
    let all_digits = format!("{whole}{fraction}");
    let scale = exponent.checked_sub(i64::try_from(fraction.len()).ok()?)?;
    let significant = all_digits.trim_start_matches('0');
    let count = if significant.is_empty() {
        Count("0".to_owned())
    } else if scale >= 0 {
        let zeros = usize::try_from(scale).ok()?;
        if significant.len().saturating_add(zeros) > MAX_COUNT_DIGITS {
            return None;
        }
        Count(format!("{significant}{}", "0".repeat(zeros)))
    } else {
        let cut = usize::try_from(scale.unsigned_abs()).ok()?;
        if cut > significant.len() || !significant[significant.len() - cut..].bytes().all(|b| b == b'0') {
            return None;
        }
        Count::of_digits(&significant[..significant.len() - cut])
    };
    if negative && count.0 != "0" {
        return None;
    }
    Some(count)
}

/// A stored count: a string `Decimal` reads as a non-negative integer, or a non-negative
/// JSON integer; anything else (a fraction, a float, a boolean, a negative number, missing)
/// is not a valid count.
fn count(value: &Json) -> Option<Count> {
    match value {
        Json::String(text) => decimal_count(text),
        Json::Number(number) => number.as_u64().map(|n| Count(n.to_string())),
        _ => None,
    }
}

/// The `row_count` and `distinct_key_count` results that hold two valid counts, in stored
/// order. No other result value ever reaches an alert.
fn count_rows(summary: &RunSummary) -> Vec<CountRow> {
    summary
        .results
        .iter()
        .filter_map(|result| {
            let check = match result.check_type {
                ResultType::Check(check @ (CheckType::RowCount | CheckType::DistinctKeyCount)) => check,
                _ => return None,
            };
            let source = count(&result.source_value)?;
            let target = count(&result.target_value)?;
            let difference = Difference::between(&source, &target);
            Some(CountRow { check, source, target, difference })
        })
        .collect()
}

/// The count table: the header and one line per row, columns two spaces apart (the name
/// left-aligned, the numbers right-aligned), a blank line, the legend.
fn count_table(rows: &[CountRow]) -> String {
    let mut cells: Vec<[String; 4]> = vec![["Check", "Source", "Target", "Difference"].map(str::to_owned)];
    cells.extend(
        rows.iter().map(|row| {
            [row.check.as_str().to_owned(), row.source.0.clone(), row.target.0.clone(), row.difference.text()]
        }),
    );
    let mut widths = [0usize; 4];
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut lines: Vec<String> = cells
        .iter()
        .map(|[check, source, target, difference]| {
            format!(
                "{check:<w0$}  {source:>w1$}  {target:>w2$}  {difference:>w3$}",
                w0 = widths[0],
                w1 = widths[1],
                w2 = widths[2],
                w3 = widths[3]
            )
        })
        .collect();
    lines.push(String::new());
    lines.push("Difference = target - source".to_owned());
    lines.join("\n")
}

fn blocked(summary: &RunSummary) -> bool {
    summary.preflight.as_ref().is_some_and(|preflight| preflight.status == PreflightStatus::Blocked)
}

fn headline(summary: &RunSummary, rows: &[CountRow]) -> String {
    if summary.status == SummaryStatus::Error {
        return if blocked(summary) { "source index missing" } else { "check could not complete" }.to_owned();
    }
    let failed = |check: CheckType| {
        summary
            .results
            .iter()
            .any(|result| result.check_type == ResultType::Check(check) && result.status == ResultStatus::Fail)
    };
    for row in rows {
        if row.check == CheckType::RowCount && failed(CheckType::RowCount) && row.difference.sign != Ordering::Equal {
            let direction = if row.difference.sign == Ordering::Less { "fewer" } else { "more" };
            let magnitude = &row.difference.magnitude.0;
            return format!("target has {magnitude} {direction} {}", if magnitude == "1" { "row" } else { "rows" });
        }
    }
    "data mismatch".to_owned()
}

/// `database.schema.table`, leaving out empty parts; `None` when all are empty.
fn qualified(parts: [&str; 3]) -> Option<String> {
    let parts: Vec<&str> = parts.into_iter().filter(|part| !part.is_empty()).collect();
    (!parts.is_empty()).then(|| parts.join("."))
}

/// `tap_id/schema.table`, or the full check name when one of the three is empty; one line.
pub(crate) fn check_name(check: &datadiff_diff_core::attempt::CheckIdentity) -> String {
    if [&check.tap_id, &check.source_schema, &check.source_table].iter().all(|part| !part.is_empty()) {
        single_line(&format!("{}/{}.{}", check.tap_id, check.source_schema, check.source_table))
    } else {
        single_line(&check.full_check_name)
    }
}

/// `source=x.xx, target=y.yy`; a side without a valid time says `not available`; `None` when
/// neither side has one.
fn query_seconds(summary: &RunSummary) -> Option<String> {
    let valid = |seconds: Option<f64>| seconds.filter(|s| s.is_finite() && *s >= 0.0);
    let source = summary.results.iter().find_map(|result| valid(result.source_query_seconds));
    let target = summary.results.iter().find_map(|result| valid(result.target_query_seconds));
    if source.is_none() && target.is_none() {
        return None;
    }
    let side = |name: &str, seconds: Option<f64>| match seconds {
        Some(seconds) => format!("{name}={seconds:.2}"),
        None => format!("{name}=not available"),
    };
    Some(format!("{}, {}", side("source", source), side("target", target)))
}

/// The error shown: the stored error, or only the first finding of a BLOCKED preflight whose
/// error is its findings joined; cut after [`MAX_ERROR_DETAIL_CHARS`] characters with a line
/// `[error truncated]`. `None` without an error.
fn error_detail(summary: &RunSummary) -> Option<String> {
    let reason = summary.reason.as_deref().filter(|reason| !reason.is_empty())?;
    let mut reason = match &summary.preflight {
        Some(preflight)
            if preflight.status == PreflightStatus::Blocked
                && !preflight.findings.is_empty()
                && reason == preflight.findings.join("; ") =>
        {
            preflight.findings[0].clone()
        }
        _ => reason.to_owned(),
    };
    if let Some((cut, _)) = reason.char_indices().nth(MAX_ERROR_DETAIL_CHARS) {
        reason.truncate(cut);
        reason.push_str("\n[error truncated]");
    }
    Some(reason)
}

/// `a missing, b extra, c changed` of a `row_diff` result that found differences.
fn row_diff_counts(summary: &RunSummary) -> Option<String> {
    let result = summary.result(ResultType::RowDiff).filter(|result| result.status == ResultStatus::Fail)?;
    let field = |name: &str| result.target_value.get(name).and_then(count).map(|count| count.0);
    Some(format!("{} missing, {} extra, {} changed", field("missing")?, field("extra")?, field("changed")?))
}

fn next_action(summary: &RunSummary) -> String {
    let check = &summary.check;
    let mut lines = vec![if blocked(summary) {
        format!("Add a usable source index starting with {}.", check.source_timestamp_column)
    } else if summary.status == SummaryStatus::Fail {
        "Check replication lag and investigate the mismatch.".to_owned()
    } else {
        "Resolve the reported error.".to_owned()
    }];
    match (summary.run_id, check.is_current) {
        (None, false) => lines.push("Run the check again after resolving the problem.".to_owned()),
        (None, true) => lines.push("Scheduled runs will attempt this check again.".to_owned()),
        (Some(_), false) => lines.push(
            "This definition is inactive. To verify this window, use `rerun_data_diff_check` with `--run-id` and \
             `--remediation-ref`."
                .to_owned(),
        ),
        (Some(_), true) => {
            lines.push("Failed windows retry automatically on scheduled runs.".to_owned());
            lines.push(
                "To verify sooner, use `rerun_data_diff_check` with `--run-id` and `--remediation-ref`.".to_owned(),
            );
        }
    }
    if let (Some(run_id), Some(_)) = (summary.run_id, row_diff_counts(summary)) {
        lines.push(format!("To list the differing rows' keys, use `datadiff report differences --run-id {run_id}`."));
    }
    lines.iter().map(|line| format!("- {line}")).collect::<Vec<_>>().join("\n")
}

/// The alert of `summary`, with its group's totals when the group has more than one failure.
fn compose(summary: &RunSummary, totals: Option<Totals>, now: DateTime<Utc>) -> Alert {
    let check = &summary.check;
    let rows = count_rows(summary);
    let mut headline = headline(summary, &rows);
    if let Some(totals) = &totals {
        headline = format!("{}{headline}", totals.headline_prefix());
    }
    let message = format!("{} data-diff {} — {headline}", summary.status, check_name(check));

    let mut details = Details::default();
    details.push("alert_utc_time", utc(now.with_nanosecond(0).unwrap_or(now)));
    if let Some(totals) = &totals {
        totals.push(&mut details);
    }
    details.push("tap_id", check.tap_id.as_str());
    details.push("target_id", check.target_id.as_str());
    details.push_some("run_id", summary.run_id.map(|id| id.to_string()));
    details.push_some(
        "attempt",
        summary.attempt.map(|attempt| match summary.trigger {
            Some(trigger) => format!("{attempt} ({trigger})"),
            None => attempt.to_string(),
        }),
    );
    details.push_some("scheduled_utc", summary.scheduled_for.map(utc));
    details.push_some("source_table", qualified([&check.source_database, &check.source_schema, &check.source_table]));
    details.push_some("target_table", qualified([&check.target_database, &check.target_schema, &check.target_table]));
    let mut column = check.source_timestamp_column.clone();
    if !column.is_empty()
        && !check.target_timestamp_column.is_empty()
        && check.target_timestamp_column != check.source_timestamp_column
    {
        column = format!("{column} (target: {})", check.target_timestamp_column);
    }
    details.push("timestamp_column", column);
    if let Some(bounds) = summary.bounds {
        details.push(
            "window_start_utc",
            match bounds.start {
                Some(start) => format!("{} (inclusive)", utc(start)),
                None => "unresolved (initial scan)".to_owned(),
            },
        );
        details.push("window_end_utc", format!("{} (exclusive)", utc(bounds.end)));
    }
    details.push_some("query_seconds", query_seconds(summary));
    let failed: Vec<&str> = summary
        .results
        .iter()
        .filter(|result| matches!(result.status, ResultStatus::Fail | ResultStatus::Error))
        .map(|result| result.check_type.as_str())
        .collect();
    if !failed.is_empty() {
        details.push("failed_checks", failed.join(", "));
    }

    let mut body = details.render();
    if let Some(reason) = error_detail(summary) {
        body.push('\n');
        body.push_str(&line("error_detail", &reason));
    }
    if !rows.is_empty() {
        body.push_str("\n\n");
        body.push_str(&count_table(&rows));
    }
    if let Some(counts) = row_diff_counts(summary) {
        body.push_str("\n\n");
        body.push_str(&line("row_diff_counts", &counts));
    }

    let mut subject = AlertSubject::of(check);
    subject.status = Some(summary.status);
    subject.run_id = summary.run_id;
    subject.failed_attempts = Some(totals.as_ref().map_or(1, |totals| totals.attempts));
    Alert {
        kind: AlertKind::Failure,
        level: AlertLevel::Error,
        message,
        details: body,
        next_action: next_action(summary),
        subject,
        created_at: now,
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use datadiff_diff_core::{
        attempt::{Bounds, CheckIdentity, CheckResult, RunId, TriggerType},
        definition::SourceType,
    };
    use serde_json::json;
    use uuid::Uuid;

    use super::*;

    fn at(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap()
    }

    fn identity(check: u128) -> CheckIdentity {
        CheckIdentity {
            check_id: CheckId::new(Uuid::from_u128(check)),
            revision: 2,
            is_current: true,
            full_check_name: "postgres/payments/public/transfers".into(),
            target_id: "postgres".into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            source_database: "payments".into(),
            source_schema: "public".into(),
            source_table: "transfers".into(),
            source_timestamp_column: "updated_at".into(),
            target_database: "warehouse".into(),
            target_schema: "payments_public".into(),
            target_table: "transfers".into(),
            target_timestamp_column: "updated_at".into(),
        }
    }

    fn result(check: CheckType, status: ResultStatus, source: Json, target: Json) -> CheckResult {
        CheckResult {
            check_type: ResultType::Check(check),
            status,
            source_value: source,
            target_value: target,
            source_query_seconds: Some(0.5),
            target_query_seconds: Some(0.25),
            error: None,
        }
    }

    /// A FAIL of the slot ending at `hour`:00 whose results hold values that must never
    /// reach an alert (a key, checksums, a schema description).
    fn fail(hour: u32, run: u128) -> RunSummary {
        let mut summary =
            RunSummary::failed_without_run(identity(7), "row_count FAIL; max_key FAIL; row_checksum FAIL");
        summary.status = SummaryStatus::Fail;
        summary.slot_status = Some(datadiff_diff_core::attempt::RunStatus::Fail);
        summary.scheduled_for = Some(at(hour, 0));
        summary.bounds = Some(Bounds { start: Some(at(hour - 1, 0)), end: at(hour, 0) });
        summary.run_id = Some(RunId::new(Uuid::from_u128(run)));
        summary.attempt = Some(1);
        summary.trigger = Some(TriggerType::Scheduled);
        summary.results = vec![
            CheckResult {
                source_query_seconds: None,
                target_query_seconds: None,
                ..result(
                    CheckType::SchemaCompatibility,
                    ResultStatus::Pass,
                    json!({"amount": "numeric(12,2) schema-secret"}),
                    json!({"amount": "numeric(18,4) schema-secret"}),
                )
            },
            result(CheckType::RowCount, ResultStatus::Fail, json!("1204"), json!("1201")),
            result(CheckType::DistinctKeyCount, ResultStatus::Fail, json!("1204"), json!("1201")),
            result(CheckType::MaxKey, ResultStatus::Fail, json!("zz-secret-key"), json!("zy-secret-key")),
            result(CheckType::RowChecksum, ResultStatus::Fail, json!("181442033815354"), json!("181442033815355")),
        ];
        summary
    }

    fn error(hour: u32, run: u128, reason: &str) -> RunSummary {
        let mut summary = fail(hour, run);
        summary.status = SummaryStatus::Error;
        summary.reason = Some(reason.into());
        summary.results.clear();
        summary
    }

    fn alert_of(summary: RunSummary) -> Alert {
        let summaries = [summary];
        let groups = FailureGroup::of(&summaries);
        assert_eq!(groups.len(), 1);
        groups[0].alert(at(13, 5))
    }

    fn everything(alert: &Alert) -> String {
        format!("{}\n{}\n{}\n{}", alert.message, alert.details, alert.next_action, alert.to_json())
    }

    #[test]
    fn a_failed_check_has_upstreams_layout() {
        let alert = alert_of(fail(13, 0x11));
        assert_eq!(alert.message, "FAIL data-diff payments/public.transfers — target has 3 fewer rows");
        assert_eq!(
            alert.details,
            "alert_utc_time    : 2026-07-22 13:05:00\n\
             tap_id            : payments\n\
             target_id         : postgres\n\
             run_id            : 00000000-0000-0000-0000-000000000011\n\
             attempt           : 1 (SCHEDULED)\n\
             scheduled_utc     : 2026-07-22 13:00:00\n\
             source_table      : payments.public.transfers\n\
             target_table      : warehouse.payments_public.transfers\n\
             timestamp_column  : updated_at\n\
             window_start_utc  : 2026-07-22 12:00:00 (inclusive)\n\
             window_end_utc    : 2026-07-22 13:00:00 (exclusive)\n\
             query_seconds     : source=0.50, target=0.25\n\
             failed_checks     : row_count, distinct_key_count, max_key, row_checksum\n\
             error_detail      : row_count FAIL; max_key FAIL; row_checksum FAIL\n\
             \n\
             Check               Source  Target  Difference\n\
             row_count             1204    1201          -3\n\
             distinct_key_count    1204    1201          -3\n\
             \n\
             Difference = target - source"
        );
        assert_eq!(
            alert.next_action,
            "- Check replication lag and investigate the mismatch.\n\
             - Failed windows retry automatically on scheduled runs.\n\
             - To verify sooner, use `rerun_data_diff_check` with `--run-id` and `--remediation-ref`."
        );
        assert_eq!((alert.kind, alert.level), (AlertKind::Failure, AlertLevel::Error));
        assert_eq!(alert.subject.status, Some(SummaryStatus::Fail));
        assert_eq!(alert.subject.failed_attempts, Some(1));
    }

    #[test]
    fn no_key_checksum_or_schema_value_ever_reaches_an_alert() {
        let mut with_row_diff = fail(13, 0x11);
        with_row_diff.results.push(CheckResult {
            check_type: ResultType::RowDiff,
            status: ResultStatus::Fail,
            source_value: json!({"rows": "1204"}),
            target_value: json!({"rows": "1201", "missing": "3", "extra": "0", "changed": "0"}),
            source_query_seconds: Some(0.5),
            target_query_seconds: Some(0.25),
            error: Some("row value secret-row".into()),
        });
        let text = everything(&alert_of(with_row_diff));
        for secret in ["secret-key", "181442033815354", "181442033815355", "schema-secret", "numeric", "secret-row"] {
            assert!(!text.contains(secret), "{secret} leaked into\n{text}");
        }
        assert!(text.contains("row_diff"), "the failed check is named");
    }

    #[test]
    fn row_differences_are_worded_by_direction_and_number() {
        let headline = |source: &str, target: &str| {
            let mut summary = fail(13, 1);
            summary.results[1] = result(CheckType::RowCount, ResultStatus::Fail, json!(source), json!(target));
            alert_of(summary).message
        };
        assert!(headline("4", "3").ends_with("— target has 1 fewer row"));
        assert!(headline("4", "6").ends_with("— target has 2 more rows"));
        assert!(headline("4", "5").ends_with("— target has 1 more row"));
        assert!(headline("10", "4").ends_with("— target has 6 fewer rows"));
        // No difference (another check failed), or counts that are not valid counts.
        for (source, target) in [("4", "4"), ("-1", "3"), ("4.5", "3"), ("", "3"), ("four", "3")] {
            assert!(headline(source, target).ends_with("— data mismatch"), "{source} {target}");
        }
        let mut boolean = fail(13, 1);
        boolean.results[1] = result(CheckType::RowCount, ResultStatus::Fail, json!(true), json!(3));
        assert!(alert_of(boolean).message.ends_with("— data mismatch"));
        // A passing row_count with different... distinct counts: still a plain mismatch.
        let mut passing = fail(13, 1);
        passing.results[1] = result(CheckType::RowCount, ResultStatus::Pass, json!("4"), json!("3"));
        assert!(alert_of(passing).message.ends_with("— data mismatch"));
    }

    #[test]
    fn invalid_counts_leave_the_count_table() {
        let mut summary = fail(13, 1);
        summary.results[1] = result(CheckType::RowCount, ResultStatus::Fail, json!("-4"), json!("3"));
        summary.results[2] = result(CheckType::DistinctKeyCount, ResultStatus::Fail, json!(12), json!(10));
        let details = alert_of(summary).details;
        assert!(!details.contains("row_count    "), "{details}");
        assert!(
            details.ends_with("distinct_key_count      12      10          -2\n\nDifference = target - source"),
            "{details}"
        );
        let mut none = fail(13, 1);
        none.results.retain(|result| result.check_type == ResultType::Check(CheckType::MaxKey));
        let details = alert_of(none).details;
        assert!(!details.contains("Difference"), "{details}");
    }

    #[test]
    fn a_check_that_failed_before_an_attempt_has_no_run_in_its_json() {
        let alert = alert_of(RunSummary::failed_without_run(identity(7), "backend connection lost"));
        for absent in ["run_id", "attempt", "scheduled_utc", "window_start_utc", "window_end_utc"] {
            assert!(!alert.details.contains(absent), "{absent} in {}", alert.details);
        }
        assert_eq!(alert.to_json()["run_id"], Json::Null);
    }

    #[test]
    fn an_unresolved_start_and_fractional_utc_times_are_shown() {
        let mut summary = fail(13, 1);
        summary.bounds = Some(Bounds { start: None, end: at(13, 0) + chrono::Duration::microseconds(250_000) });
        summary.trigger = Some(TriggerType::Retry);
        summary.attempt = Some(3);
        let details = alert_of(summary).details;
        assert!(details.contains("\nattempt           : 3 (RETRY)\n"), "{details}");
        assert!(details.contains("\nwindow_start_utc  : unresolved (initial scan)\n"), "{details}");
        assert!(details.contains("\nwindow_end_utc    : 2026-07-22 13:00:00.250000 (exclusive)\n"), "{details}");
        // The alert time is shown to the second.
        let summaries = [fail(13, 1)];
        let alert = FailureGroup::of(&summaries)[0].alert(at(13, 5) + chrono::Duration::milliseconds(999));
        assert!(alert.details.starts_with("alert_utc_time    : 2026-07-22 13:05:00\n"), "{}", alert.details);
    }

    #[test]
    fn a_missing_query_time_is_said_to_be_unavailable() {
        let mut summary = fail(13, 1);
        for result in &mut summary.results {
            result.target_query_seconds = None;
        }
        assert!(alert_of(summary).details.contains("\nquery_seconds     : source=0.50, target=not available\n"));
    }

    #[test]
    fn values_stay_on_one_line_but_the_error_keeps_its_lines() {
        let mut multiline = error(13, 2, "first line\nsecond line\r\nthird");
        multiline.check.source_table = "odd\ntable".into();
        let alert = alert_of(multiline);
        assert_eq!(alert.message, "ERROR data-diff payments/public.odd\\ntable — check could not complete");
        assert!(alert.details.ends_with("\nerror_detail      : first line\nsecond line\r\nthird"), "{}", alert.details);
        assert!(alert.details.contains("\nsource_table      : payments.public.odd\\ntable\n"), "{}", alert.details);
    }

    #[test]
    fn a_backlog_of_one_check_is_one_alert_with_totals() {
        let summaries: Vec<RunSummary> = (0..25u32)
            .map(|i| {
                let mut summary = fail(13, u128::from(100 + i));
                summary.scheduled_for = Some(at(0, 0) + chrono::Duration::hours(i64::from(i)));
                summary
            })
            .collect();
        let groups = FailureGroup::of(&summaries);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].failures().len(), 25);
        assert_eq!(groups[0].failed_windows(), 25);
        let alert = groups[0].alert(at(13, 5));
        assert_eq!(
            alert.message,
            "FAIL data-diff payments/public.transfers — 25 failed windows; target has 3 fewer rows"
        );
        assert!(
            alert.details.starts_with(
                "alert_utc_time    : 2026-07-22 13:05:00\n\
                 failed_windows    : 25\n\
                 failed_attempts   : 25\n\
                 failure_statuses  : FAIL=25\n\
                 shown_window      : representative failure\n\
                 tap_id            : payments\n"
            ),
            "{}",
            alert.details
        );
        assert_eq!(alert.subject.failed_attempts, Some(25));
        assert_eq!(alert.subject.run_id, Some(RunId::new(Uuid::from_u128(124))), "the last FAIL is shown");
    }

    #[test]
    fn the_latest_error_is_preferred_over_a_mismatch() {
        let summaries =
            [fail(11, 1), error(12, 2, "first error"), error(13, 3, "second error"), fail(13, 4), fail(12, 5)];
        let groups = FailureGroup::of(&summaries);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].representative().run_id, Some(RunId::new(Uuid::from_u128(3))));
        let alert = groups[0].alert(at(13, 5));
        assert_eq!(
            alert.message,
            "ERROR data-diff payments/public.transfers — 3 failed windows; check could not complete"
        );
        assert!(
            alert.details.contains("\nfailed_attempts   : 5\nfailure_statuses  : ERROR=2, FAIL=3\n"),
            "{}",
            alert.details
        );
        assert!(alert.details.contains("\nerror_detail      : second error"));
    }

    #[test]
    fn windows_are_counted_by_slot_else_by_bounds_and_unknown_ones_are_not() {
        let mut by_bounds = [fail(12, 1), fail(12, 2), fail(13, 3)];
        for summary in &mut by_bounds {
            summary.scheduled_for = None;
        }
        assert_eq!(FailureGroup::of(&by_bounds)[0].failed_windows(), 2);

        let unknown =
            [RunSummary::failed_without_run(identity(7), "a"), RunSummary::failed_without_run(identity(7), "b")];
        let groups = FailureGroup::of(&unknown);
        assert_eq!(groups[0].failed_windows(), 0);
        let alert = groups[0].alert(at(13, 5));
        assert_eq!(
            alert.message,
            "ERROR data-diff payments/public.transfers — 2 failed attempts; check could not complete"
        );
        assert!(!alert.details.contains("failed_windows"));
        assert!(alert.details.contains("\nfailed_attempts   : 2\nfailure_statuses  : ERROR=2\n"));

        let retried = [fail(13, 1), fail(13, 2)];
        let alert = FailureGroup::of(&retried)[0].alert(at(13, 5));
        assert!(alert.message.contains("— 1 failed window; "), "{}", alert.message);
    }

    #[test]
    fn checks_taps_targets_and_revisions_are_never_merged() {
        let mut other_revision = fail(13, 2);
        other_revision.check.check_id = CheckId::new(Uuid::from_u128(8));
        let mut other_tap = fail(13, 3);
        other_tap.check.tap_id = "billing".into();
        let mut other_target = fail(13, 4);
        other_target.check.target_id = "snowflake".into();
        let mut passed = fail(13, 5);
        passed.status = SummaryStatus::Pass;
        let mut deferred = fail(13, 6);
        deferred.status = SummaryStatus::Deferred;
        let mut skipped = fail(13, 7);
        skipped.status = SummaryStatus::Skipped;
        let summaries = [
            other_target.clone(),
            fail(13, 1),
            passed,
            other_revision,
            deferred,
            other_tap,
            skipped,
            fail(14, 9),
            other_target,
        ];
        let groups = FailureGroup::of(&summaries);
        let firsts: Vec<Option<RunId>> = groups.iter().map(|group| group.failures()[0].run_id).collect();
        let run = |n: u128| Some(RunId::new(Uuid::from_u128(n)));
        assert_eq!(firsts, [run(4), run(1), run(2), run(3)], "first-seen order");
        let sizes: Vec<usize> = groups.iter().map(|group| group.failures().len()).collect();
        assert_eq!(sizes, [2, 2, 1, 1]);
        assert!(FailureGroup::of(&summaries[2..3]).is_empty(), "a PASS alerts nobody");
    }

    proptest::proptest! {
        /// Whatever the mix of checks, taps, targets and statuses: every FAIL/ERROR summary
        /// lands in exactly one group, a group holds one check only, groups come in
        /// first-seen order, and the representative is the last ERROR, else the last FAIL.
        #[test]
        fn grouping_partitions_the_failures(picks in proptest::collection::vec((0u8..3, 0u8..2, 0u8..2, 0u8..5), 0..40)) {
            let statuses = [SummaryStatus::Fail, SummaryStatus::Error, SummaryStatus::Pass, SummaryStatus::Deferred, SummaryStatus::Skipped];
            let summaries: Vec<RunSummary> = picks
                .iter()
                .enumerate()
                .map(|(i, &(check, tap, target, status))| {
                    let mut summary = fail(13, i as u128);
                    summary.check.check_id = CheckId::new(Uuid::from_u128(u128::from(check)));
                    summary.check.tap_id = format!("tap{tap}");
                    summary.check.target_id = format!("target{target}");
                    summary.status = statuses[usize::from(status)];
                    summary
                })
                .collect();
            let key = |s: &RunSummary| (s.check.target_id.clone(), s.check.tap_id.clone(), s.check.check_id);
            let groups = FailureGroup::of(&summaries);

            let failures: Vec<&RunSummary> = summaries.iter().filter(|s| s.status.is_failure()).collect();
            let grouped: usize = groups.iter().map(|g| g.failures().len()).sum();
            proptest::prop_assert_eq!(grouped, failures.len());
            let mut firsts = Vec::new();
            for group in &groups {
                let first = key(group.failures()[0]);
                proptest::prop_assert!(group.failures().iter().all(|s| key(s) == first));
                proptest::prop_assert!(!firsts.contains(&first), "one group per check");
                firsts.push(first);
                let members: Vec<&RunSummary> = failures.iter().copied().filter(|s| key(s) == key(group.failures()[0])).collect();
                proptest::prop_assert_eq!(group.failures(), &members[..], "members in the order given");
                let expected = members
                    .iter()
                    .rev()
                    .find(|s| s.status == SummaryStatus::Error)
                    .or_else(|| members.iter().rev().find(|s| s.status == SummaryStatus::Fail))
                    .copied();
                proptest::prop_assert_eq!(Some(group.representative()), expected);
            }
            let mut seen = Vec::new();
            for summary in &failures {
                if !seen.contains(&key(summary)) {
                    seen.push(key(summary));
                }
            }
            proptest::prop_assert_eq!(firsts, seen, "first-seen order");
        }
    }

    #[test]
    fn a_differently_spelt_target_timestamp_column_is_named() {
        let mut summary = fail(13, 1);
        summary.check.target_timestamp_column = "updatedat".into();
        assert!(alert_of(summary).details.contains("\ntimestamp_column  : updated_at (target: updatedat)\n"));
    }
}
