//! Per-check results: the rows of `dd_run_results`, and the rules that decide a metric check's
//! status from the two sides' values (config note §2.1–§2.2, runs note §3.3).
//!
//! Result values are stored as upstream stores them: a metric's value is the canonical text of
//! the aggregate as a JSON **string** (`"4"`, `"2026-07-22T12:00:00Z"`), a boolean stays a JSON
//! boolean, and a NULL aggregate (MIN of an empty window, SUM of nothing) is JSON `null`.
//! PipelineWise writes Python's `None` through psycopg2's `Json`, which stores the JSONB value
//! `null`, not SQL NULL; [`CheckResult`] therefore holds a plain [`serde_json::Value`] and the
//! store writes [`serde_json::Value::Null`] as JSONB `null`.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value as Json, json};

use crate::checksum::UnsupportedComparison;
use crate::run::{RunStatus, UnknownName};
use crate::segment::StrategyUsed;
use crate::summary::Summary;
use crate::{
    check::CheckType,
    value::{Numeric, Value},
};

/// The status of one check's result (`dd_run_results.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultStatus {
    /// The check passed.
    Pass,
    /// The check ran and found a difference.
    Fail,
    /// The check could not be evaluated (an unsupported checksum column).
    Error,
}

impl ResultStatus {
    /// `PASS`, `FAIL` or `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultStatus::Pass => "PASS",
            ResultStatus::Fail => "FAIL",
            ResultStatus::Error => "ERROR",
        }
    }

    /// The run status of the same name.
    pub fn run_status(self) -> RunStatus {
        match self {
            ResultStatus::Pass => RunStatus::Pass,
            ResultStatus::Fail => RunStatus::Fail,
            ResultStatus::Error => RunStatus::Error,
        }
    }

    fn passed(passed: bool) -> ResultStatus {
        if passed { ResultStatus::Pass } else { ResultStatus::Fail }
    }
}

impl FromStr for ResultStatus {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<ResultStatus, UnknownName> {
        match text {
            "PASS" => Ok(ResultStatus::Pass),
            "FAIL" => Ok(ResultStatus::Fail),
            "ERROR" => Ok(ResultStatus::Error),
            _ => Err(UnknownName { vocabulary: "result status", text: text.to_owned() }),
        }
    }
}

impl fmt::Display for ResultStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a result row is about (`dd_run_results.check_type`): one of the eight upstream checks,
/// or datadiff's `row_diff` extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResultType {
    /// An upstream check.
    Check(CheckType),
    /// The `row_diff` extension (SPEC §10).
    RowDiff,
}

impl ResultType {
    /// The stored name: the check's name, or `row_diff`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResultType::Check(check) => check.as_str(),
            ResultType::RowDiff => "row_diff",
        }
    }
}

impl From<CheckType> for ResultType {
    fn from(check: CheckType) -> ResultType {
        ResultType::Check(check)
    }
}

impl FromStr for ResultType {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<ResultType, UnknownName> {
        if text == "row_diff" {
            return Ok(ResultType::RowDiff);
        }
        text.parse::<CheckType>()
            .map(ResultType::Check)
            .map_err(|_| UnknownName { vocabulary: "result check type", text: text.to_owned() })
    }
}

impl fmt::Display for ResultType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One row of `dd_run_results` (less its `run_id`).
#[derive(Debug, Clone, PartialEq)]
pub struct CheckResult {
    /// `check_type`.
    pub check_type: ResultType,
    /// `status`.
    pub status: ResultStatus,
    /// `source_value`: JSON; [`Json::Null`] is stored as JSONB `null`.
    pub source_value: Json,
    /// `target_value`: JSON; [`Json::Null`] is stored as JSONB `null`.
    pub target_value: Json,
    /// `source_query_seconds`: the wall time of the source side's query (shared by every
    /// metric of the attempt); `None` for metadata results.
    pub source_query_seconds: Option<f64>,
    /// `target_query_seconds`.
    pub target_query_seconds: Option<f64>,
    /// `error`: why the check is ERROR, or the findings of a failed `schema_compatibility`.
    pub error: Option<String>,
}

/// The exact counts of a `row_diff` comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RowDiffCounts {
    /// Rows in the source window.
    pub source_rows: u64,
    /// Rows in the target window.
    pub target_rows: u64,
    /// Keys in the source only.
    pub missing: u64,
    /// Keys in the target only.
    pub extra: u64,
    /// Keys on both sides with different content.
    pub changed: u64,
}

impl RowDiffCounts {
    /// The counts of a finished merge: source rows are the matched, missing and changed keys;
    /// target rows the matched, extra and changed ones.
    pub fn from_summary<K>(summary: &Summary<K>) -> RowDiffCounts {
        RowDiffCounts {
            source_rows: summary.matched + summary.missing + summary.changed,
            target_rows: summary.matched + summary.extra + summary.changed,
            missing: summary.missing,
            extra: summary.extra,
            changed: summary.changed,
        }
    }

    /// No row is missing, extra or changed.
    pub fn is_equal(&self) -> bool {
        self.missing == 0 && self.extra == 0 && self.changed == 0
    }

    /// The differences in words, as a `row_diff` FAIL's error and its alert say them:
    /// `2 missing, 1 extra, 3 changed` (every count, zeros included, so a reader never has
    /// to guess which one is absent).
    pub fn differences_text(&self) -> String {
        format!("{} missing, {} extra, {} changed", self.missing, self.extra, self.changed)
    }
}

/// A canonical value as a result value: JSON `null` for NULL, a JSON boolean for a boolean
/// (PipelineWise's `canonical_value` leaves `bool` alone), and otherwise the JSON string of
/// [`Value::canonical_text`] (`"4"`, `"1.5"`, `"2026-07-22T12:00:00Z"`, a uuid, hex bytes).
pub fn result_value(value: &Value) -> Json {
    match value {
        Value::Bool(flag) => Json::Bool(*flag),
        other => other.canonical_text().map_or(Json::Null, Json::String),
    }
}

/// Whether a metric check passes on these result values.
///
/// * `null_key_count` and `duplicate_key_count`: both sides must be zero, compared as decimals
///   (`"0"`, `"0.0"` and `"-0"` are zero); a value that is not a decimal (null, a boolean, text)
///   fails.
/// * Every other metric: the canonical values are equal. Two nulls are equal, so `min_key` and
///   `max_key` pass on two empty windows.
pub fn metric_passes(check: CheckType, source: &Json, target: &Json) -> bool {
    match check {
        CheckType::NullKeyCount | CheckType::DuplicateKeyCount => is_zero(source) && is_zero(target),
        _ => source == target,
    }
}

/// Python's `Decimal(str(value)) == 0`, where anything Decimal cannot parse is not zero.
fn is_zero(value: &Json) -> bool {
    let text = match value {
        Json::String(text) => text.clone(),
        Json::Number(number) => number.to_string(),
        _ => return false,
    };
    Numeric::parse(&text).is_ok_and(|number| number == Numeric::from_i64(0))
}

impl CheckResult {
    /// The result of a metric check from each side's aggregate value and query time.
    pub fn metric(
        check: CheckType,
        source: &Value,
        target: &Value,
        source_query_seconds: f64,
        target_query_seconds: f64,
    ) -> CheckResult {
        let source_value = result_value(source);
        let target_value = result_value(target);
        CheckResult {
            check_type: ResultType::Check(check),
            status: ResultStatus::passed(metric_passes(check, &source_value, &target_value)),
            source_value,
            target_value,
            source_query_seconds: Some(source_query_seconds),
            target_query_seconds: Some(target_query_seconds),
            error: None,
        }
    }

    /// The ERROR result of a `row_checksum` whose columns cannot be checksummed: null values,
    /// no query times, the reason as its error. The other metrics still run.
    pub fn rejected_checksum(reason: &UnsupportedComparison) -> CheckResult {
        CheckResult {
            check_type: ResultType::Check(CheckType::RowChecksum),
            status: ResultStatus::Error,
            source_value: Json::Null,
            target_value: Json::Null,
            source_query_seconds: None,
            target_query_seconds: None,
            error: Some(reason.to_string()),
        }
    }

    /// The `row_diff` result: source `{"rows": "<n>"}`, target `{"rows": "<m>", "missing":
    /// "<a>", "extra": "<b>", "changed": "<c>"}` (counts as strings, like every upstream
    /// metric value); PASS iff nothing is missing, extra or changed. A FAIL's error is
    /// `row_diff FAIL: <a> missing, <b> extra, <c> changed` ([`RowDiffCounts::differences_text`]):
    /// `row_diff` is datadiff's extension, so its text is datadiff's (upstream checks keep
    /// PipelineWise's bare `<check_type> FAIL`). With `strategy`, the target value also says
    /// how the rows were read and why: `"strategy": "stream" | "segments"`,
    /// `"strategy_reason": "<one line>"` (`auto`'s measurements included).
    pub fn row_diff(
        counts: RowDiffCounts,
        source_query_seconds: Option<f64>,
        target_query_seconds: Option<f64>,
        strategy: Option<&StrategyUsed>,
    ) -> CheckResult {
        let mut target_value = json!({
            "rows": counts.target_rows.to_string(),
            "missing": counts.missing.to_string(),
            "extra": counts.extra.to_string(),
            "changed": counts.changed.to_string(),
        });
        if let (Some(strategy), Some(object)) = (strategy, target_value.as_object_mut()) {
            object.insert("strategy".to_owned(), json!(strategy.strategy.as_str()));
            object.insert("strategy_reason".to_owned(), json!(strategy.reason));
        }
        CheckResult {
            check_type: ResultType::RowDiff,
            status: ResultStatus::passed(counts.is_equal()),
            source_value: json!({ "rows": counts.source_rows.to_string() }),
            target_value,
            source_query_seconds,
            target_query_seconds,
            error: (!counts.is_equal()).then(|| format!("row_diff FAIL: {}", counts.differences_text())),
        }
    }

    /// What this result contributes to its attempt's `error`: nothing for a PASS; otherwise its
    /// own error, or `"<check_type> <STATUS>"` (`"row_checksum FAIL"`).
    pub fn failure_text(&self) -> Option<String> {
        match self.status {
            ResultStatus::Pass => None,
            status => Some(self.error.clone().unwrap_or_else(|| format!("{} {status}", self.check_type))),
        }
    }
}

/// `results` in the definition's declared check order (PipelineWise stores and reports them
/// so); results of checks not declared (the `row_diff` extension) follow, in their given
/// order.
pub fn in_declared_order(checks: &[CheckType], mut results: Vec<CheckResult>) -> Vec<CheckResult> {
    let rank = |result: &CheckResult| match result.check_type {
        ResultType::Check(check) => checks.iter().position(|declared| *declared == check).unwrap_or(checks.len()),
        ResultType::RowDiff => checks.len(),
    };
    results.sort_by_key(rank);
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::UnsupportedComparison;
    use crate::family::TypeFamily;

    fn numeric(text: &str) -> Value {
        Value::Numeric(Numeric::parse(text).unwrap())
    }

    #[test]
    fn result_values_are_canonical_strings_null_and_booleans() {
        assert_eq!(result_value(&Value::Int(4)), json!("4"));
        assert_eq!(result_value(&numeric("1.000")), json!("1"));
        assert_eq!(result_value(&numeric("1.50")), json!("1.5"));
        assert_eq!(result_value(&numeric("181442033815354")), json!("181442033815354"));
        assert_eq!(result_value(&Value::Timestamp(1_784_721_600_000_000)), json!("2026-07-22T12:00:00Z"));
        assert_eq!(result_value(&Value::Date(20_656)), json!("2026-07-22"));
        assert_eq!(result_value(&Value::text("abc")), json!("abc"));
        assert_eq!(result_value(&Value::Bytes(vec![0xab, 0x01].into())), json!("ab01"));
        assert_eq!(result_value(&Value::Null), Json::Null);
        assert_eq!(result_value(&Value::Bool(true)), json!(true), "booleans stay booleans");
        assert_eq!(
            result_value(&Value::Uuid(*b"\x12\x34\x56\x78\x9a\xbc\xde\xf0\x12\x34\x56\x78\x9a\xbc\xde\xf0")),
            json!("12345678-9abc-def0-1234-56789abcdef0")
        );
    }

    #[test]
    fn equality_metrics_compare_canonical_values() {
        assert!(metric_passes(CheckType::RowCount, &json!("4"), &json!("4")));
        assert!(!metric_passes(CheckType::RowCount, &json!("4"), &json!("5")));
        assert!(metric_passes(CheckType::MinKey, &Json::Null, &Json::Null), "None == None passes");
        assert!(!metric_passes(CheckType::MaxKey, &json!("1"), &Json::Null));
        assert!(metric_passes(CheckType::RowChecksum, &json!("-12"), &json!("-12")));
        // Canonicalisation happens before the comparison: 1.000 and 1 are one value.
        let source = CheckResult::metric(CheckType::MaxKey, &numeric("1.000"), &Value::Int(1), 0.5, 0.25);
        assert_eq!(source.status, ResultStatus::Pass);
        assert_eq!((source.source_value.clone(), source.target_value.clone()), (json!("1"), json!("1")));
        assert_eq!((source.source_query_seconds, source.target_query_seconds), (Some(0.5), Some(0.25)));
        assert_eq!(source.error, None);
    }

    #[test]
    fn key_integrity_checks_require_zero_on_both_sides() {
        for check in [CheckType::NullKeyCount, CheckType::DuplicateKeyCount] {
            assert!(metric_passes(check, &json!("0"), &json!("0")));
            assert!(metric_passes(check, &json!("0.00"), &json!("-0")), "compared as decimals");
            assert!(!metric_passes(check, &json!("1"), &json!("1")), "equal but not zero fails");
            assert!(!metric_passes(check, &json!("0"), &json!("2")));
            assert!(!metric_passes(check, &json!("3"), &json!("0")));
            assert!(!metric_passes(check, &Json::Null, &json!("0")), "unparsable fails");
            assert!(!metric_passes(check, &json!("zero"), &json!("0")));
            assert!(!metric_passes(check, &json!(false), &json!("0")));
            assert!(!metric_passes(check, &json!("NaN"), &json!("0")));
            assert!(metric_passes(check, &json!(0), &json!("0")), "a JSON number is read as a decimal");
        }
        let result = CheckResult::metric(CheckType::DuplicateKeyCount, &Value::Int(2), &Value::Int(2), 1.0, 1.0);
        assert_eq!(result.status, ResultStatus::Fail);
        assert_eq!(result.failure_text().as_deref(), Some("duplicate_key_count FAIL"));
    }

    #[test]
    fn a_rejected_checksum_is_an_error_without_values() {
        let reason = UnsupportedComparison::Incompatible {
            column: "status".into(),
            source_family: TypeFamily::Missing,
            target_family: TypeFamily::Missing,
        };
        let result = CheckResult::rejected_checksum(&reason);
        assert_eq!(result.check_type.as_str(), "row_checksum");
        assert_eq!(result.status, ResultStatus::Error);
        assert_eq!((result.source_value.clone(), result.target_value.clone()), (Json::Null, Json::Null));
        assert_eq!((result.source_query_seconds, result.target_query_seconds), (None, None));
        let text = "row_checksum column 'status' has incompatible source and target types (missing, missing)";
        assert_eq!(result.error.as_deref(), Some(text));
        assert_eq!(result.failure_text().as_deref(), Some(text), "its own error, not 'row_checksum ERROR'");
    }

    #[test]
    fn row_diff_result_holds_counts_as_strings() {
        let counts = RowDiffCounts { source_rows: 10, target_rows: 9, missing: 2, extra: 1, changed: 3 };
        let result = CheckResult::row_diff(counts, Some(1.5), Some(2.0), None);
        assert_eq!(result.check_type.as_str(), "row_diff");
        assert_eq!(result.status, ResultStatus::Fail);
        assert_eq!(result.source_value, json!({"rows": "10"}));
        assert_eq!(result.target_value, json!({"rows": "9", "missing": "2", "extra": "1", "changed": "3"}));
        let strategy = StrategyUsed::segments("auto: a link is slow");
        let with_strategy = CheckResult::row_diff(counts, None, None, Some(&strategy));
        assert_eq!(
            with_strategy.target_value,
            json!({"rows": "9", "missing": "2", "extra": "1", "changed": "3", "strategy": "segments",
                   "strategy_reason": "auto: a link is slow"})
        );
        assert_eq!(result.error.as_deref(), Some("row_diff FAIL: 2 missing, 1 extra, 3 changed"));
        assert_eq!(result.failure_text().as_deref(), Some("row_diff FAIL: 2 missing, 1 extra, 3 changed"));

        let equal = RowDiffCounts { source_rows: 7, target_rows: 7, ..RowDiffCounts::default() };
        let result = CheckResult::row_diff(equal, None, None, None);
        assert_eq!(result.status, ResultStatus::Pass);
        assert_eq!((result.error.clone(), result.failure_text()), (None, None));
        for difference in [
            RowDiffCounts { missing: 1, ..equal },
            RowDiffCounts { extra: 1, ..equal },
            RowDiffCounts { changed: 1, ..equal },
        ] {
            assert_eq!(CheckResult::row_diff(difference, None, None, None).status, ResultStatus::Fail);
        }
        let only_extra = CheckResult::row_diff(RowDiffCounts { extra: 1, ..equal }, None, None, None);
        assert_eq!(only_extra.error.as_deref(), Some("row_diff FAIL: 0 missing, 1 extra, 0 changed"));
    }

    #[test]
    fn row_diff_counts_come_from_a_merge_summary() {
        use crate::{key::Key, merge::merge, row::ValuesRow};
        let row = |id: i64, status: &str| {
            Ok::<_, std::convert::Infallible>(ValuesRow { key: Key::Int(id), values: vec![Value::text(status)] })
        };
        let source = vec![row(1, "a"), row(2, "b"), row(4, "d")];
        let target = vec![row(1, "a"), row(2, "x"), row(3, "c")];
        let mut summary = Summary::new(5, vec!["status".to_owned()]);
        for change in merge(source, target) {
            summary.record(&change.unwrap());
        }
        let counts = RowDiffCounts::from_summary(&summary);
        assert_eq!(counts, RowDiffCounts { source_rows: 3, target_rows: 3, missing: 1, extra: 1, changed: 1 });
    }

    #[test]
    fn results_follow_the_declared_order_with_row_diff_last() {
        let checks = [CheckType::RowChecksum, CheckType::SchemaCompatibility, CheckType::RowCount];
        let metric = |check| CheckResult::metric(check, &Value::Int(1), &Value::Int(1), 0.0, 0.0);
        let results = vec![
            CheckResult::row_diff(RowDiffCounts::default(), None, None, None),
            metric(CheckType::RowCount),
            metric(CheckType::SchemaCompatibility),
            metric(CheckType::RowChecksum),
        ];
        let names: Vec<_> = in_declared_order(&checks, results).iter().map(|r| r.check_type.as_str()).collect();
        assert_eq!(names, ["row_checksum", "schema_compatibility", "row_count", "row_diff"]);
    }

    #[test]
    fn vocabularies_round_trip() {
        for status in [ResultStatus::Pass, ResultStatus::Fail, ResultStatus::Error] {
            assert_eq!(status.as_str().parse::<ResultStatus>(), Ok(status));
            assert_eq!(status.run_status().as_str(), status.as_str());
        }
        assert!("DEFERRED".parse::<ResultStatus>().is_err());
        for check in CheckType::ALL {
            assert_eq!(check.as_str().parse::<ResultType>(), Ok(ResultType::Check(check)));
        }
        assert_eq!("row_diff".parse::<ResultType>(), Ok(ResultType::RowDiff));
        assert!("ROW_DIFF".parse::<ResultType>().is_err());
    }
}
