//! What one check's attempt (or its skip) comes to: the record `run_data_diff_checks` prints
//! as a table row and the alerts read (runs note §3.5, §5–§6).
//!
//! One [`RunSummary`] per executed attempt, per skipped start and per check that failed
//! before an attempt could exist. It carries everything a reader needs without going back to
//! the backend: the definition's identity ([`CheckIdentity`]), the statuses, the slot and
//! window, the run's id, number and trigger, the reason, the stored results (so alerts can
//! show `row_count` / `distinct_key_count` values and the query seconds) and the preflight
//! facts warning alerts need ([`PreflightFacts`]).
//!
//! Never a password or a row value: result values are aggregates (counts, min/max keys and
//! checksums, as PipelineWise stores them), and reasons are the stored `error` texts.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};

use crate::attempt::{
    Bounds, CheckId, CheckResult, PreflightStatus, ResultType, RunId, RunStatus, Skip, TriggerType, UnknownName,
};
use crate::definition::{CheckType, SourceType, StoredDefinition};
use crate::index_warning::IndexWarningIdentity;

/// The status column of a summary: an attempt's stored status, or SKIPPED (never stored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SummaryStatus {
    /// Every check passed.
    Pass,
    /// A check found a difference.
    Fail,
    /// The attempt (or the check before any attempt) could not complete.
    Error,
    /// A historical first run found no history on either side yet.
    Deferred,
    /// No attempt ran: the slot was attempted or is running, a retry is no longer eligible,
    /// or the worker lost its lease.
    Skipped,
}

impl SummaryStatus {
    /// `PASS`, `FAIL`, `ERROR`, `DEFERRED` or `SKIPPED`.
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryStatus::Pass => "PASS",
            SummaryStatus::Fail => "FAIL",
            SummaryStatus::Error => "ERROR",
            SummaryStatus::Deferred => "DEFERRED",
            SummaryStatus::Skipped => "SKIPPED",
        }
    }

    /// The summary status of a terminal attempt status; `None` for RUNNING.
    pub fn of_run(status: RunStatus) -> Option<SummaryStatus> {
        match status {
            RunStatus::Pass => Some(SummaryStatus::Pass),
            RunStatus::Fail => Some(SummaryStatus::Fail),
            RunStatus::Error => Some(SummaryStatus::Error),
            RunStatus::Deferred => Some(SummaryStatus::Deferred),
            RunStatus::Running => None,
        }
    }

    /// FAIL or ERROR: the statuses that alert and make `run` exit 1.
    pub fn is_failure(self) -> bool {
        matches!(self, SummaryStatus::Fail | SummaryStatus::Error)
    }
}

impl FromStr for SummaryStatus {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<SummaryStatus, UnknownName> {
        match text {
            "PASS" => Ok(SummaryStatus::Pass),
            "FAIL" => Ok(SummaryStatus::Fail),
            "ERROR" => Ok(SummaryStatus::Error),
            "DEFERRED" => Ok(SummaryStatus::Deferred),
            "SKIPPED" => Ok(SummaryStatus::Skipped),
            _ => Err(UnknownName { vocabulary: "summary status", text: text.to_owned() }),
        }
    }
}

impl fmt::Display for SummaryStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which definition revision a summary is about, with the names alerts print and the fields
/// of the source-index warning identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckIdentity {
    /// The revision's id.
    pub check_id: CheckId,
    /// The revision number.
    pub revision: i32,
    /// Whether it is the current revision (alerts advise differently for inactive ones, and
    /// index warnings ignore them).
    pub is_current: bool,
    /// `target/tap/schema/table`.
    pub full_check_name: String,
    /// The target id.
    pub target_id: String,
    /// The tap id.
    pub tap_id: String,
    /// The tap type.
    pub source_type: SourceType,
    /// The persisted source database.
    pub source_database: String,
    /// The source schema.
    pub source_schema: String,
    /// The source table.
    pub source_table: String,
    /// The source timestamp column, as configured.
    pub source_timestamp_column: String,
    /// The persisted target database.
    pub target_database: String,
    /// The target schema.
    pub target_schema: String,
    /// The target table.
    pub target_table: String,
    /// The target timestamp column, as configured.
    pub target_timestamp_column: String,
}

impl CheckIdentity {
    /// The identity of a stored revision.
    pub fn of(stored: &StoredDefinition) -> CheckIdentity {
        let definition = &stored.definition;
        CheckIdentity {
            check_id: stored.check_id,
            revision: stored.revision,
            is_current: stored.is_current,
            full_check_name: definition.full_check_name.clone(),
            target_id: definition.target_id.clone(),
            tap_id: definition.tap_id.clone(),
            source_type: definition.source_type,
            source_database: definition.source_database.clone(),
            source_schema: definition.source_schema.clone(),
            source_table: definition.source_table.clone(),
            source_timestamp_column: definition.source_timestamp_column.clone(),
            target_database: definition.target_database.clone(),
            target_schema: definition.target_schema.clone(),
            target_table: definition.target_table.clone(),
            target_timestamp_column: definition.target_timestamp_column.clone(),
        }
    }

    /// The identity a source-index warning about this table is remembered under.
    pub fn index_warning_identity(&self) -> IndexWarningIdentity<'_> {
        IndexWarningIdentity {
            tap_id: &self.tap_id,
            source_type: self.source_type.as_str(),
            source_database: &self.source_database,
            source_schema: &self.source_schema,
            source_table: &self.source_table,
            source_timestamp_column: &self.source_timestamp_column,
        }
    }
}

/// The facts of an attempt's recorded preflight that alerts need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightFacts {
    /// PASS, BLOCKED or ERROR.
    pub status: PreflightStatus,
    /// An unindexed source of 50,000–99,999 rows: passes now, warn its owners (never stored).
    pub index_warning: bool,
    /// The bounded row count, when one was made.
    pub table_rows: Option<i64>,
    /// The bound of that count (`LIMIT`), when one was made.
    pub row_limit: Option<i64>,
    /// The recorded findings, in order (alerts show the first of a BLOCKED preflight).
    pub findings: Vec<String>,
    /// Whether a usable index leads with the timestamp column, when looked up.
    pub has_leading_index: Option<bool>,
    /// Whether it was the metadata-only record of a definition that reads no data.
    pub metadata_only: bool,
    /// Whether it was the placeholder record of an attempt that failed before any preflight
    /// was decided: it observed nothing about the source index (so, like a metadata-only
    /// record, it neither raises nor cancels an index warning).
    pub placeholder: bool,
}

impl PreflightFacts {
    /// The facts of a recorded preflight. The record's crate (`datadiff-preflight`, whose
    /// `PreflightRecord` converts into these facts) knows how a metadata-only or placeholder
    /// record looks; this is the call site's spelling of that conversion.
    pub fn of(record: impl Into<PreflightFacts>) -> PreflightFacts {
        record.into()
    }
}

/// One line of a run: an attempt, a skip, or a check that failed before an attempt existed.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSummary {
    /// The definition revision.
    pub check: CheckIdentity,
    /// PASS, FAIL, ERROR, DEFERRED or SKIPPED.
    pub status: SummaryStatus,
    /// The slot's status as recorded: the attempt's own status, or for a skip the slot's
    /// newest attempt's (RUNNING while discovery runs; the recorded status after a lost
    /// lease). `None` when unknown.
    pub slot_status: Option<RunStatus>,
    /// The cron slot; `None` for a check that failed before an attempt existed.
    pub scheduled_for: Option<DateTime<Utc>>,
    /// The window as recorded (the start `None` while a historical start is unresolved);
    /// `None` when unknown.
    pub bounds: Option<Bounds>,
    /// The attempt; for a skip, the slot's newest attempt when there is one.
    pub run_id: Option<RunId>,
    /// The attempt number within the slot.
    pub attempt: Option<i32>,
    /// Why the attempt was started.
    pub trigger: Option<TriggerType>,
    /// For a remediation: the root original run.
    pub rerun_of_run_id: Option<RunId>,
    /// For a remediation: the operator's reference.
    pub remediation_reference: Option<String>,
    /// The stored `error` (or the skip's reason); `None` for a PASS.
    pub reason: Option<String>,
    /// The stored results, in declared order (`row_diff` last).
    pub results: Vec<CheckResult>,
    /// The recorded preflight, when one was recorded by this attempt.
    pub preflight: Option<PreflightFacts>,
}

impl RunSummary {
    /// A start that did not happen: SKIPPED with the skip's reason, slot status and what is
    /// known of the slot's newest attempt.
    pub fn skipped(check: CheckIdentity, scheduled_for: DateTime<Utc>, skip: &Skip) -> RunSummary {
        RunSummary {
            check,
            status: SummaryStatus::Skipped,
            slot_status: skip.slot_status,
            scheduled_for: Some(scheduled_for),
            bounds: skip.bounds,
            run_id: skip.run_id,
            attempt: None,
            trigger: None,
            rerun_of_run_id: None,
            remediation_reference: None,
            reason: Some(skip.reason.message()),
            results: Vec::new(),
            preflight: None,
        }
    }

    /// A slot not attempted, for `reason` — a route datadiff does not execute (SPEC §0:
    /// `route not supported by datadiff yet: <src> -> <tgt>`), a window that ends after the
    /// current time: SKIPPED, nothing written.
    pub fn not_attempted(check: CheckIdentity, scheduled_for: DateTime<Utc>, reason: String) -> RunSummary {
        RunSummary {
            status: SummaryStatus::Skipped,
            scheduled_for: Some(scheduled_for),
            ..RunSummary::failed_without_run(check, reason)
        }
    }

    /// A check that failed before or outside any attempt (a backend failure, an
    /// unschedulable definition): ERROR without slot, window or run, as upstream reports it.
    pub fn failed_without_run(check: CheckIdentity, reason: impl Into<String>) -> RunSummary {
        RunSummary {
            check,
            status: SummaryStatus::Error,
            slot_status: None,
            scheduled_for: None,
            bounds: None,
            run_id: None,
            attempt: None,
            trigger: None,
            rerun_of_run_id: None,
            remediation_reference: None,
            reason: Some(reason.into()),
            results: Vec::new(),
            preflight: None,
        }
    }

    /// The result of `check_type`, when stored.
    pub fn result(&self, check_type: ResultType) -> Option<&CheckResult> {
        self.results.iter().find(|result| result.check_type == check_type)
    }

    /// The source and target values of a count check (`row_count`, `distinct_key_count`,
    /// ...) as integers, when its result holds two integer strings.
    pub fn counts(&self, check: CheckType) -> Option<(i64, i64)> {
        let result = self.result(ResultType::Check(check))?;
        let number = |value: &serde_json::Value| value.as_str()?.parse::<i64>().ok();
        Some((number(&result.source_value)?, number(&result.target_value)?))
    }

    /// Each side's aggregate query time, from the first result that has them.
    pub fn query_seconds(&self) -> Option<(f64, f64)> {
        self.results.iter().find_map(|result| Some((result.source_query_seconds?, result.target_query_seconds?)))
    }

    /// Whether the window start is still unresolved (a historical first run before its
    /// minimum was found): alerts print "unresolved (initial scan)".
    pub fn start_unresolved(&self) -> bool {
        matches!(self.bounds, Some(Bounds { start: None, .. }))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use uuid::Uuid;

    use crate::attempt::{ResultStatus, SkipReason};
    use crate::merge::Value;

    use super::*;

    fn identity() -> CheckIdentity {
        CheckIdentity {
            check_id: CheckId::new(Uuid::from_u128(7)),
            revision: 1,
            is_current: true,
            full_check_name: "postgres/payments/public/transfers".into(),
            target_id: "postgres".into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            source_database: "payments".into(),
            source_schema: "public".into(),
            source_table: "transfers-v2".into(),
            source_timestamp_column: "updated_at".into(),
            target_database: "warehouse".into(),
            target_schema: "payments_public".into(),
            target_table: "transfers".into(),
            target_timestamp_column: "updated_at".into(),
        }
    }

    #[test]
    fn statuses_round_trip_and_only_fail_and_error_are_failures() {
        for status in [
            SummaryStatus::Pass,
            SummaryStatus::Fail,
            SummaryStatus::Error,
            SummaryStatus::Deferred,
            SummaryStatus::Skipped,
        ] {
            assert_eq!(status.as_str().parse::<SummaryStatus>(), Ok(status));
            assert_eq!(status.is_failure(), matches!(status, SummaryStatus::Fail | SummaryStatus::Error));
        }
        assert!("skipped".parse::<SummaryStatus>().is_err());
        assert_eq!(SummaryStatus::of_run(RunStatus::Deferred), Some(SummaryStatus::Deferred));
        assert_eq!(SummaryStatus::of_run(RunStatus::Running), None);
    }

    #[test]
    fn the_index_warning_identity_is_upstreams() {
        // The config note's derived example (§3.6).
        let id = identity().index_warning_identity().warning_id();
        assert_eq!(id.to_string(), "ca948919-a957-5a1d-be15-76d9fb044875");
    }

    #[test]
    fn a_skip_carries_its_reason_and_the_slot_facts() {
        let slot = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap();
        let run_id = RunId::new(Uuid::from_u128(9));
        let skip = Skip {
            reason: SkipReason::AlreadyAttempted,
            slot_status: Some(RunStatus::Deferred),
            run_id: Some(run_id),
            bounds: Some(Bounds { start: None, end: slot }),
        };
        let summary = RunSummary::skipped(identity(), slot, &skip);
        assert_eq!(summary.status, SummaryStatus::Skipped);
        assert_eq!(summary.reason.as_deref(), Some("This cron slot has already been attempted"));
        assert_eq!((summary.slot_status, summary.run_id), (Some(RunStatus::Deferred), Some(run_id)));
        assert!(summary.start_unresolved());
        assert_eq!(summary.query_seconds(), None);
    }

    #[test]
    fn counts_and_query_seconds_come_from_the_results() {
        let mut summary = RunSummary::failed_without_run(identity(), "backend down");
        assert_eq!((summary.scheduled_for, summary.bounds, summary.run_id), (None, None, None));
        summary.results = vec![
            CheckResult::metric(CheckType::MaxKey, &Value::text("z"), &Value::text("y"), 0.5, 0.25),
            CheckResult::metric(CheckType::RowCount, &Value::Int(4), &Value::Int(3), 0.5, 0.25),
        ];
        assert_eq!(summary.counts(CheckType::RowCount), Some((4, 3)));
        assert_eq!(summary.counts(CheckType::MaxKey), None, "not a count");
        assert_eq!(summary.counts(CheckType::DistinctKeyCount), None, "not stored");
        assert_eq!(summary.query_seconds(), Some((0.5, 0.25)));
        assert_eq!(summary.result(ResultType::Check(CheckType::RowCount)).map(|r| r.status), Some(ResultStatus::Fail));
    }
}
