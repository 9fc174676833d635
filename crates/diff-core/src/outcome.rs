//! How an attempt ends: its status, its `error` text and the result rows it stores (runs note
//! §3.3–§3.5). Every way an attempt can end has one constructor, so the texts PipelineWise
//! writes into `dd_run_attempts.error` are decided here and nowhere else.

use chrono::{DateTime, Utc};

use crate::error::Side;
use crate::run::{PreflightStatus, RunStatus};
use crate::verdict::{CheckResult, ResultStatus};

/// A terminating signal an attempt is recorded ERROR for before the process exits by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Signal {
    /// `SIGTERM`.
    Term,
    /// `SIGINT`.
    Int,
    /// `SIGHUP` (a closed terminal or SSH session): handled like `SIGTERM`. Upstream
    /// handles only `SIGTERM` and `SIGINT`, and dies by `SIGHUP` leaving the attempt RUNNING.
    Hup,
}

impl Signal {
    /// `SIGTERM`, `SIGINT` or `SIGHUP`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Term => "SIGTERM",
            Signal::Int => "SIGINT",
            Signal::Hup => "SIGHUP",
        }
    }
}

/// The status of an attempt from its results: ERROR if any result is ERROR, else FAIL if any is
/// FAIL, else PASS (also for no results).
pub fn aggregate_status<'a>(results: impl IntoIterator<Item = &'a CheckResult>) -> RunStatus {
    let mut status = RunStatus::Pass;
    for result in results {
        match result.status {
            ResultStatus::Error => return RunStatus::Error,
            ResultStatus::Fail => status = RunStatus::Fail,
            ResultStatus::Pass => {}
        }
    }
    status
}

/// The `error` text of failed results: each FAIL or ERROR result's own error, or
/// `"<check_type> <STATUS>"`, joined by `"; "`; `None` when none failed.
pub fn results_error(results: &[CheckResult]) -> Option<String> {
    let texts: Vec<String> = results.iter().filter_map(CheckResult::failure_text).collect();
    (!texts.is_empty()).then(|| texts.join("; "))
}

/// An instant as Python's `isoformat()` writes an aware UTC datetime, which is how PipelineWise
/// spells a cutoff in its messages: `2026-07-22T13:00:00+00:00`, with `.ffffff` only when the
/// microseconds are not zero (finer digits are dropped, as Python has none).
pub fn python_isoformat(instant: DateTime<Utc>) -> String {
    let micros = instant.timestamp_subsec_micros();
    let seconds = instant.format("%Y-%m-%dT%H:%M:%S");
    if micros == 0 { format!("{seconds}+00:00") } else { format!("{seconds}.{micros:06}+00:00") }
}

/// How an attempt ends: what `finish` writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// `dd_run_attempts.status`: PASS, FAIL, ERROR or DEFERRED.
    pub status: RunStatus,
    /// `dd_run_attempts.error`; `None` for a PASS.
    pub error: Option<String>,
    /// The `dd_run_results` rows, in declared check order.
    pub results: Vec<CheckResult>,
}

impl Outcome {
    /// An attempt whose checks all ran: the status aggregated from the results (ERROR beats
    /// FAIL), the failed results' texts as its error.
    pub fn from_results(results: Vec<CheckResult>) -> Outcome {
        let status = aggregate_status(&results);
        let error = if status == RunStatus::Pass { None } else { results_error(&results) };
        Outcome { status, error, results }
    }

    /// An attempt that stops as ERROR while keeping the results already known (the metadata
    /// results, when an empty history meets a metadata failure), with their failure texts as
    /// its error.
    pub fn error_with_results(results: Vec<CheckResult>) -> Outcome {
        let error = results_error(&results);
        Outcome { status: RunStatus::Error, error, results }
    }

    /// An attempt whose source preflight did not pass (BLOCKED or ERROR): ERROR, keeping the
    /// metadata results computed before it; the error is the preflight's error, else its
    /// findings joined by `"; "`, else `"Source preflight <STATUS>"`.
    pub fn preflight_stopped(
        preflight_status: PreflightStatus,
        preflight_error: Option<&str>,
        findings: &[String],
        metadata_results: Vec<CheckResult>,
    ) -> Outcome {
        let joined = findings.join("; ");
        let error = match preflight_error {
            Some(error) if !error.is_empty() => error.to_owned(),
            _ if !joined.is_empty() => joined,
            _ => format!("Source preflight {preflight_status}"),
        };
        Outcome { status: RunStatus::Error, error: Some(error), results: metadata_results }
    }

    /// A historical first run that found no timestamp before its cutoff on either side:
    /// DEFERRED, no results.
    pub fn deferred(cutoff: DateTime<Utc>) -> Outcome {
        Outcome {
            status: RunStatus::Deferred,
            error: Some(format!(
                "Historical comparison is pending: both source and target have no non-NULL timestamp before the \
                 cutoff {}",
                python_isoformat(cutoff)
            )),
            results: Vec::new(),
        }
    }

    /// A historical first run where only one side has a timestamp before the cutoff: ERROR, no
    /// results; `side` is the empty one.
    pub fn one_sided(side: Side, cutoff: DateTime<Utc>) -> Outcome {
        Outcome::failed(format!(
            "Historical comparison cannot start: {side} has no non-NULL timestamp before the cutoff {}",
            python_isoformat(cutoff)
        ))
    }

    /// An attempt that failed outright (connection, configuration mismatch, missing column,
    /// query error, timeout): ERROR with the failure's text, no results.
    pub fn failed(error: impl Into<String>) -> Outcome {
        Outcome { status: RunStatus::Error, error: Some(error.into()), results: Vec::new() }
    }

    /// An attempt interrupted by a terminating signal: ERROR, no results,
    /// `"Terminated by SIGTERM before the check completed"`.
    pub fn signal(signal: Signal) -> Outcome {
        Outcome::failed(format!("Terminated by {} before the check completed", signal.name()))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use proptest::prelude::*;
    use serde_json::Value as Json;

    use super::*;
    use crate::verdict::ResultType;
    use crate::{check::CheckType, value::Value};

    fn result(check: CheckType, status: ResultStatus, error: Option<&str>) -> CheckResult {
        CheckResult {
            check_type: ResultType::Check(check),
            status,
            source_value: Json::Null,
            target_value: Json::Null,
            source_query_seconds: None,
            target_query_seconds: None,
            error: error.map(str::to_owned),
        }
    }

    fn at(hour: u32, micros: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, 0, 0).unwrap() + chrono::Duration::microseconds(i64::from(micros))
    }

    #[test]
    fn error_beats_fail_beats_pass() {
        let pass = result(CheckType::RowCount, ResultStatus::Pass, None);
        let fail = result(CheckType::RowChecksum, ResultStatus::Fail, None);
        let error = result(CheckType::MinKey, ResultStatus::Error, Some("bad"));
        assert_eq!(aggregate_status([&pass]), RunStatus::Pass);
        assert_eq!(aggregate_status([&pass, &fail]), RunStatus::Fail);
        assert_eq!(aggregate_status([&fail, &error, &pass]), RunStatus::Error);
        assert_eq!(aggregate_status([&error, &fail]), RunStatus::Error);
        assert_eq!(aggregate_status(std::iter::empty()), RunStatus::Pass);
    }

    #[test]
    fn pass_has_no_error_and_failures_join_their_texts() {
        let pass = Outcome::from_results(vec![result(CheckType::RowCount, ResultStatus::Pass, None)]);
        assert_eq!((pass.status, pass.error), (RunStatus::Pass, None));

        let outcome = Outcome::from_results(vec![
            result(CheckType::SchemaCompatibility, ResultStatus::Pass, None),
            result(CheckType::RowCount, ResultStatus::Fail, None),
            result(
                CheckType::RowChecksum,
                ResultStatus::Error,
                Some("row_checksum column 'status' needs declared numeric scales"),
            ),
        ]);
        assert_eq!(outcome.status, RunStatus::Error);
        assert_eq!(
            outcome.error.as_deref(),
            Some("row_count FAIL; row_checksum column 'status' needs declared numeric scales")
        );
        assert_eq!(outcome.results.len(), 3, "every result is kept");

        let checksum = Outcome::from_results(vec![CheckResult::metric(
            CheckType::RowChecksum,
            &Value::Int(1),
            &Value::Int(2),
            0.1,
            0.2,
        )]);
        assert_eq!((checksum.status, checksum.error.as_deref()), (RunStatus::Fail, Some("row_checksum FAIL")));
    }

    #[test]
    fn schema_findings_are_the_error_of_a_schema_failure() {
        let outcome = Outcome::error_with_results(vec![result(
            CheckType::SchemaCompatibility,
            ResultStatus::Fail,
            Some("status: source string is not compatible with target missing"),
        )]);
        assert_eq!(outcome.status, RunStatus::Error);
        assert_eq!(outcome.error.as_deref(), Some("status: source string is not compatible with target missing"));
        assert_eq!(outcome.results.len(), 1);
    }

    #[test]
    fn preflight_error_then_findings_then_status() {
        let schema = vec![result(CheckType::SchemaCompatibility, ResultStatus::Pass, None)];
        let findings = vec!["No usable source index".to_owned(), "Add a source index".to_owned()];
        let with_error =
            Outcome::preflight_stopped(PreflightStatus::Error, Some("count timed out"), &findings, schema.clone());
        assert_eq!(with_error.status, RunStatus::Error);
        assert_eq!(with_error.error.as_deref(), Some("count timed out"));
        assert_eq!(with_error.results, schema, "metadata results are kept");
        let blocked = Outcome::preflight_stopped(PreflightStatus::Blocked, None, &findings, Vec::new());
        assert_eq!(blocked.error.as_deref(), Some("No usable source index; Add a source index"));
        let bare = Outcome::preflight_stopped(PreflightStatus::Blocked, Some(""), &[], Vec::new());
        assert_eq!(bare.error.as_deref(), Some("Source preflight BLOCKED"));
    }

    #[test]
    fn historical_texts_use_python_isoformat_of_the_cutoff() {
        let deferred = Outcome::deferred(at(13, 0));
        assert_eq!(deferred.status, RunStatus::Deferred);
        assert!(deferred.results.is_empty());
        assert_eq!(
            deferred.error.as_deref(),
            Some(
                "Historical comparison is pending: both source and target have no non-NULL timestamp before the \
                 cutoff 2026-07-22T13:00:00+00:00"
            )
        );
        let one_sided = Outcome::one_sided(Side::Target, at(13, 5));
        assert_eq!(one_sided.status, RunStatus::Error);
        assert_eq!(
            one_sided.error.as_deref(),
            Some(
                "Historical comparison cannot start: target has no non-NULL timestamp before the cutoff \
                 2026-07-22T13:00:00.000005+00:00"
            )
        );
    }

    #[test]
    fn isoformat_matches_python() {
        assert_eq!(python_isoformat(at(0, 0)), "2026-07-22T00:00:00+00:00");
        assert_eq!(python_isoformat(at(9, 123_456)), "2026-07-22T09:00:00.123456+00:00");
        let nanos = at(9, 0) + chrono::Duration::nanoseconds(1_500);
        assert_eq!(python_isoformat(nanos), "2026-07-22T09:00:00.000001+00:00");
        let year_one = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(python_isoformat(year_one), "0001-01-01T00:00:00+00:00");
    }

    #[test]
    fn signals_and_failures_are_errors_without_results() {
        let term = Outcome::signal(Signal::Term);
        assert_eq!(term.status, RunStatus::Error);
        assert_eq!(term.error.as_deref(), Some("Terminated by SIGTERM before the check completed"));
        assert!(term.results.is_empty());
        assert_eq!(
            Outcome::signal(Signal::Int).error.as_deref(),
            Some("Terminated by SIGINT before the check completed")
        );
        let failed = Outcome::failed("Column 'id' does not exist in public.payments");
        assert_eq!(
            (failed.status, failed.error.as_deref()),
            (RunStatus::Error, Some("Column 'id' does not exist in public.payments"))
        );
    }

    fn any_status() -> impl Strategy<Value = ResultStatus> {
        prop_oneof![Just(ResultStatus::Pass), Just(ResultStatus::Fail), Just(ResultStatus::Error)]
    }

    proptest! {
        #[test]
        fn aggregation_is_the_worst_status_whatever_the_order(
            statuses in proptest::collection::vec(any_status(), 0..12),
            seed in any::<u64>(),
        ) {
            let results: Vec<CheckResult> = statuses
                .iter()
                .enumerate()
                .map(|(index, status)| result(CheckType::ALL[index % 8], *status, None))
                .collect();
            let expected = if statuses.contains(&ResultStatus::Error) {
                RunStatus::Error
            } else if statuses.contains(&ResultStatus::Fail) {
                RunStatus::Fail
            } else {
                RunStatus::Pass
            };
            let outcome = Outcome::from_results(results.clone());
            prop_assert_eq!(outcome.status, expected);
            prop_assert_eq!(outcome.error.is_none(), expected == RunStatus::Pass);
            let failures = statuses.iter().filter(|status| **status != ResultStatus::Pass).count();
            let parts = outcome.error.as_deref().map_or(0, |error| error.split("; ").count());
            prop_assert_eq!(parts, failures);

            // Any permutation aggregates the same.
            let mut shuffled = results;
            let length = shuffled.len();
            if length > 1 {
                let mut state = seed;
                for index in (1..length).rev() {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                    shuffled.swap(index, (state >> 33) as usize % (index + 1));
                }
            }
            prop_assert_eq!(aggregate_status(&shuffled), expected);
        }
    }
}
