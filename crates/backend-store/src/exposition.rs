//! `report metrics` as the Prometheus text exposition format (version 0.0.4): one gauge
//! family per fact, one sample per current definition, labelled `target`, `tap`, `schema` and
//! `table` (the source schema and table: the parts of `full_check_name`):
//!
//! | metric | value |
//! |---|---|
//! | `datadiff_report_timestamp_seconds` | when the report was taken, unix seconds, no labels |
//! | `datadiff_verified_end_timestamp_seconds` | the verified end (absent before the first evaluated attempt) |
//! | `datadiff_verification_lag_seconds` | the report time minus the verified end (absent likewise) |
//! | `datadiff_verified_status{status}` | 1 for the watermark's status, 0 for the others of CONTIGUOUS, BLOCKED, NOT_RUN |
//! | `datadiff_last_attempt_status{status}` | 1 for the newest attempt's status, 0 for the others of RUNNING, PASS, FAIL, ERROR, DEFERRED (all 0 before the first) |
//! | `datadiff_last_attempt_timestamp_seconds` | when the newest attempt finished (started, while it runs) |
//! | `datadiff_last_attempt_age_seconds` | the report time minus that |
//! | `datadiff_open_failures` | slots whose state is FAIL or ERROR (what `report failures` lists) |
//! | `datadiff_replica_applied_lag_seconds` | with `checks.<name>.horizon`: the report time minus the newest known horizon, how far behind the replica had applied when last read (absent before a reading knew one; it keeps growing while the replica is paused) |
//! | `datadiff_replica_horizon_known` | with `checks.<name>.horizon`: 1 when the latest reading knew how far the replica had applied, 0 when it did not (a paused or disabled subscription, a replica still behind, an empty column) |
//! | `datadiff_oldest_verification_age_seconds` | the report time minus the latest attempt of the least recently verified PASS slot: the age of the oldest verification not redone since (`checks.<name>.reverify` keeps it near its period, at most a tick above it once a backlog is worked off; absent without a PASS slot) |
//!
//! Label values are escaped as the format requires (`\\`, `\"`, `\n`); the text is written by
//! [`datadiff_diff_core::exposition`], as `audit --metrics` writes its own.
//!
//! ```no_run
//! use chrono::Utc;
//! use datadiff_backend_store::{BackendConfig, Store, metrics_exposition};
//!
//! let config = BackendConfig {
//!     host: "backend.example.com".into(),
//!     user: "pipelinewise".into(),
//!     password: "secret".into(),
//!     dbname: "pipelinewise".into(),
//!     ddl_user: "pipelinewise_ddl".into(),
//!     ddl_password: "ddl-secret".into(),
//!     ..BackendConfig::default()
//! };
//! let store = Store::open(config)?;
//! let now = Utc::now();
//! print!("{}", metrics_exposition(&store.metrics_report(now)?, now));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::RunStatus;
use datadiff_diff_core::exposition::{Exposition, Labels, seconds, unix_seconds};

use crate::WatermarkStatus;
use crate::report::MetricsRow;

/// The Prometheus text exposition format (version 0.0.4) of `report metrics`: `rows` (from
/// [`Store::metrics_report`](crate::Store::metrics_report)) at `now`, one gauge family per fact
/// (see the module docs), every family's `HELP` and `TYPE` lines even without samples.
pub fn metrics_exposition(rows: &[MetricsRow], now: DateTime<Utc>) -> String {
    fn labels(row: &MetricsRow) -> Labels<'_> {
        vec![
            ("target", row.target_id.as_str()),
            ("tap", row.tap_id.as_str()),
            ("schema", row.watermark.source_schema.as_str()),
            ("table", row.watermark.source_table.as_str()),
        ]
    }
    fn with_status<'a>(row: &'a MetricsRow, status: &'static str) -> Labels<'a> {
        let mut pairs = labels(row);
        pairs.push(("status", status));
        pairs
    }
    let mut text = Exposition::new();
    text.gauge(
        "datadiff_report_timestamp_seconds",
        "When this report was taken (--at or now), unix seconds.",
        [(Vec::new(), unix_seconds(now))],
    );
    text.gauge(
        "datadiff_verified_end_timestamp_seconds",
        "End of the verified interval of the check's current definition, unix seconds.",
        rows.iter().filter_map(|row| Some((labels(row), unix_seconds(row.watermark.verified_end?)))),
    );
    text.gauge(
        "datadiff_verification_lag_seconds",
        "Seconds from the verified end to the report time (--at or now).",
        rows.iter().filter_map(|row| Some((labels(row), seconds(row.watermark.verification_lag?)))),
    );
    const VERIFIED: [WatermarkStatus; 3] =
        [WatermarkStatus::Contiguous, WatermarkStatus::Blocked, WatermarkStatus::NotRun];
    text.gauge(
        "datadiff_verified_status",
        "1 for the watermark's verified status (CONTIGUOUS, BLOCKED, NOT_RUN), 0 for the others.",
        rows.iter().flat_map(|row| {
            VERIFIED.iter().map(move |status| {
                (with_status(row, status.as_str()), f64::from(u8::from(row.watermark.verified_status == *status)))
            })
        }),
    );
    const ATTEMPT: [RunStatus; 5] =
        [RunStatus::Running, RunStatus::Pass, RunStatus::Fail, RunStatus::Error, RunStatus::Deferred];
    text.gauge(
        "datadiff_last_attempt_status",
        "1 for the status of the check's newest attempt, 0 for the others (all 0 before the first).",
        rows.iter().flat_map(|row| {
            let current = row.last_attempt.as_ref().map(|attempt| attempt.status);
            ATTEMPT
                .iter()
                .map(move |status| (with_status(row, status.as_str()), f64::from(u8::from(current == Some(*status)))))
        }),
    );
    text.gauge(
        "datadiff_last_attempt_timestamp_seconds",
        "When the check's newest attempt finished (started, while it runs), unix seconds.",
        rows.iter().filter_map(|row| {
            let attempt = row.last_attempt.as_ref()?;
            Some((labels(row), unix_seconds(attempt.finished_at.unwrap_or(attempt.started_at))))
        }),
    );
    text.gauge(
        "datadiff_last_attempt_age_seconds",
        "Seconds from the newest attempt's finish (start, while it runs) to the report time.",
        rows.iter().filter_map(|row| Some((labels(row), seconds(row.last_attempt.as_ref()?.age)))),
    );
    text.gauge(
        "datadiff_open_failures",
        "Slots of the check's current definition whose state is FAIL or ERROR (report failures).",
        rows.iter().map(|row| (labels(row), row.open_failures as f64)),
    );
    text.gauge(
        "datadiff_oldest_verification_age_seconds",
        "Seconds since the least recently verified PASS slot of the check's current definition was last attempted \
         (reverify keeps it near its period).",
        rows.iter().filter_map(|row| Some((labels(row), seconds(row.watermark.oldest_verification_age?)))),
    );
    text.gauge(
        "datadiff_replica_applied_lag_seconds",
        "Seconds from the newest known replica horizon (checks.<name>.horizon) to the report time.",
        rows.iter().filter_map(|row| {
            let horizon = row.replica_horizon.as_ref()?.applied_up_to?;
            Some((labels(row), seconds(now - horizon)))
        }),
    );
    text.gauge(
        "datadiff_replica_horizon_known",
        "1 when the latest horizon reading knew how far the replica had applied, 0 when it did not.",
        rows.iter().filter_map(|row| Some((labels(row), f64::from(u8::from(row.replica_horizon.as_ref()?.known))))),
    );
    text.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LastAttempt, WatermarkReportRow};
    use chrono::TimeDelta;

    #[test]
    fn metrics_render_one_family_per_fact_with_escaped_labels() {
        use chrono::TimeZone;
        use datadiff_diff_core::attempt::{CheckId, RunId, TriggerType};

        let at = |hour, minute| Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap();
        let watermark = WatermarkReportRow {
            check_id: CheckId::new(uuid::Uuid::from_u128(1)),
            full_check_name: "wh/pay/public/we\"ird".into(),
            revision: 3,
            source_database: "pay".into(),
            source_schema: "public".into(),
            source_table: "we\"ird".into(),
            target_database: "wh".into(),
            target_schema: "replicated".into(),
            target_table: "we\"ird".into(),
            verified_status: WatermarkStatus::Blocked,
            verified_start: Some(at(10, 0)),
            verified_end: Some(at(11, 0)),
            furthest_observed_end: Some(at(13, 0)),
            verification_lag: Some(TimeDelta::minutes(150) + TimeDelta::milliseconds(500)),
            blocking_run_id: None,
            last_evaluated_run_id: None,
            watermark_updated_at: None,
            reason: None,
            oldest_verification: None,
            oldest_verification_age: Some(TimeDelta::hours(30)),
        };
        let row = MetricsRow {
            watermark,
            target_id: "wh".into(),
            tap_id: "pay".into(),
            last_attempt: Some(LastAttempt {
                run_id: RunId::new(uuid::Uuid::from_u128(2)),
                status: RunStatus::Running,
                trigger_type: TriggerType::Scheduled,
                started_at: at(13, 1),
                finished_at: None,
                age: TimeDelta::minutes(29),
            }),
            open_failures: 2,
            replica_horizon: Some(crate::ReplicaHorizon {
                horizon: "subscription:pay_sub".into(),
                observed_at: at(13, 25),
                applied_up_to: Some(at(13, 0)),
                known: false,
                position: "subscription pay_sub is disabled: nothing is being applied".into(),
            }),
        };
        let text = metrics_exposition(&[row], at(13, 30));
        let labels = r#"target="wh",tap="pay",schema="public",table="we\"ird""#;
        for line in [
            "# TYPE datadiff_verified_status gauge".to_owned(),
            "datadiff_report_timestamp_seconds 1784727000".to_owned(),
            format!("datadiff_verified_end_timestamp_seconds{{{labels}}} 1784718000"),
            format!("datadiff_verification_lag_seconds{{{labels}}} 9000.5"),
            format!("datadiff_verified_status{{{labels},status=\"BLOCKED\"}} 1"),
            format!("datadiff_verified_status{{{labels},status=\"CONTIGUOUS\"}} 0"),
            format!("datadiff_last_attempt_status{{{labels},status=\"RUNNING\"}} 1"),
            format!("datadiff_last_attempt_status{{{labels},status=\"PASS\"}} 0"),
            format!("datadiff_last_attempt_timestamp_seconds{{{labels}}} 1784725260"),
            format!("datadiff_last_attempt_age_seconds{{{labels}}} 1740"),
            format!("datadiff_open_failures{{{labels}}} 2"),
            format!("datadiff_oldest_verification_age_seconds{{{labels}}} 108000"),
            format!("datadiff_replica_applied_lag_seconds{{{labels}}} 1800"),
            format!("datadiff_replica_horizon_known{{{labels}}} 0"),
        ] {
            assert!(text.lines().any(|candidate| candidate == line), "{line:?} missing from:\n{text}");
        }
        assert_eq!(text.matches("# HELP ").count(), 11);
        assert!(text.ends_with('\n'));
        // Without current checks: the families' HELP and TYPE lines and the report time only.
        let empty = metrics_exposition(&[], at(13, 30));
        let samples: Vec<&str> = empty.lines().filter(|line| !line.starts_with('#')).collect();
        assert_eq!(samples, ["datadiff_report_timestamp_seconds 1784727000"]);
    }

    /// The whole text for a check that never ran: every family in order, its samples in the
    /// statuses' order, byte for byte.
    #[test]
    fn a_check_that_never_ran_is_exposed_byte_for_byte() {
        use chrono::TimeZone;
        use datadiff_diff_core::attempt::CheckId;

        let now = Utc.with_ymd_and_hms(2026, 7, 22, 13, 30, 0).unwrap();
        let row = MetricsRow {
            watermark: WatermarkReportRow {
                check_id: CheckId::new(uuid::Uuid::from_u128(1)),
                full_check_name: "wh/pay/public/t".into(),
                revision: 1,
                source_database: "pay".into(),
                source_schema: "public".into(),
                source_table: "t".into(),
                target_database: "wh".into(),
                target_schema: "pay_public".into(),
                target_table: "t".into(),
                verified_status: WatermarkStatus::NotRun,
                verified_start: None,
                verified_end: None,
                furthest_observed_end: None,
                verification_lag: None,
                blocking_run_id: None,
                last_evaluated_run_id: None,
                watermark_updated_at: None,
                reason: None,
                oldest_verification: None,
                oldest_verification_age: None,
            },
            target_id: "wh".into(),
            tap_id: "pay".into(),
            last_attempt: None,
            open_failures: 0,
            replica_horizon: None,
        };
        let l = r#"target="wh",tap="pay",schema="public",table="t""#;
        let expected = format!(
            "# HELP datadiff_report_timestamp_seconds When this report was taken (--at or now), unix seconds.\n\
             # TYPE datadiff_report_timestamp_seconds gauge\n\
             datadiff_report_timestamp_seconds 1784727000\n\
             # HELP datadiff_verified_end_timestamp_seconds End of the verified interval of the check's current \
             definition, unix seconds.\n\
             # TYPE datadiff_verified_end_timestamp_seconds gauge\n\
             # HELP datadiff_verification_lag_seconds Seconds from the verified end to the report time (--at or now).\n\
             # TYPE datadiff_verification_lag_seconds gauge\n\
             # HELP datadiff_verified_status 1 for the watermark's verified status (CONTIGUOUS, BLOCKED, NOT_RUN), 0 \
             for the others.\n\
             # TYPE datadiff_verified_status gauge\n\
             datadiff_verified_status{{{l},status=\"CONTIGUOUS\"}} 0\n\
             datadiff_verified_status{{{l},status=\"BLOCKED\"}} 0\n\
             datadiff_verified_status{{{l},status=\"NOT_RUN\"}} 1\n\
             # HELP datadiff_last_attempt_status 1 for the status of the check's newest attempt, 0 for the others \
             (all 0 before the first).\n\
             # TYPE datadiff_last_attempt_status gauge\n\
             datadiff_last_attempt_status{{{l},status=\"RUNNING\"}} 0\n\
             datadiff_last_attempt_status{{{l},status=\"PASS\"}} 0\n\
             datadiff_last_attempt_status{{{l},status=\"FAIL\"}} 0\n\
             datadiff_last_attempt_status{{{l},status=\"ERROR\"}} 0\n\
             datadiff_last_attempt_status{{{l},status=\"DEFERRED\"}} 0\n\
             # HELP datadiff_last_attempt_timestamp_seconds When the check's newest attempt finished (started, while \
             it runs), unix seconds.\n\
             # TYPE datadiff_last_attempt_timestamp_seconds gauge\n\
             # HELP datadiff_last_attempt_age_seconds Seconds from the newest attempt's finish (start, while it \
             runs) to the report time.\n\
             # TYPE datadiff_last_attempt_age_seconds gauge\n\
             # HELP datadiff_open_failures Slots of the check's current definition whose state is FAIL or ERROR \
             (report failures).\n\
             # TYPE datadiff_open_failures gauge\n\
             datadiff_open_failures{{{l}}} 0\n\
             # HELP datadiff_oldest_verification_age_seconds Seconds since the least recently verified PASS slot of \
             the check's current definition was last attempted (reverify keeps it near its period).\n\
             # TYPE datadiff_oldest_verification_age_seconds gauge\n\
             # HELP datadiff_replica_applied_lag_seconds Seconds from the newest known replica horizon \
             (checks.<name>.horizon) to the report time.\n\
             # TYPE datadiff_replica_applied_lag_seconds gauge\n\
             # HELP datadiff_replica_horizon_known 1 when the latest horizon reading knew how far the replica had \
             applied, 0 when it did not.\n\
             # TYPE datadiff_replica_horizon_known gauge\n"
        );
        assert_eq!(metrics_exposition(&[row], now), expected);
    }
}
