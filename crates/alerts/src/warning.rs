//! Source-index warnings (runs note §5.2, config note §3.6): which summaries raise one, and
//! its layout.
//!
//! # Which warnings are pending
//!
//! A summary observes its source's index when it carries a preflight that looked at it — not
//! a metadata-only record, not a placeholder — its status is not SKIPPED, and its definition
//! revision is current. Observations are grouped by warning id (the tap and the source
//! database, schema, table and timestamp column: targets and revisions share it), and only the
//! **latest** observation of a group counts: a warning is pending when that one is a PASS
//! preflight with `index_warning` set (an unindexed table of 50,000–99,999 rows). A later
//! BLOCKED, indexed, smaller or ERROR observation of the same source cancels it; an ERROR or
//! DEFERRED attempt whose preflight passed with the warning still raises it. "Latest" is the
//! order of the summaries given: pass them in the order the attempts ran.
//!
//! Routing (which tap's channel, which check id the marker names) is the dispatcher's: the
//! latest observation whose tap has alerts enabled.
//!
//! # Layout (upstream's, byte for byte: `format_data_diff_index_warning`)
//!
//! ```text
//! WARNING data-diff payments/public.transfers — approaching source index requirement
//! alert_utc_time    : 2026-07-22 13:05:00
//! tap_id            : payments
//! target_id         : postgres
//! source_table      : payments.public.transfers
//! timestamp_column  : updated_at
//! source_rows       : 75,000
//! index_required_at : 100,000 rows
//! index_status      : No qualifying source index
//! data_diff_status  : Checks can still run
//! ```
//!
//! Next action:
//!
//! ```text
//! - Arrange a usable source index starting with updated_at before the table reaches 100,000 rows.
//! - At 100,000 rows or more, data checks will be blocked until that index exists.
//! ```
//!
//! The source fields and the row count are the latest observation's, the target the routing
//! check's; the limit is the bound the preflight's count used (100,000).

use std::collections::HashMap;

use chrono::{DateTime, Timelike, Utc};
use datadiff_diff_core::attempt::{IndexWarningId, PreflightStatus, RunSummary, SummaryStatus};
use datadiff_preflight::DEFAULT_ROW_LIMIT;

use crate::alert::{Alert, AlertKind, AlertLevel, AlertSubject};
use crate::details::{Details, single_line, thousands, utc};
use crate::failure::check_name;

/// The observations of one source's index in one invocation, keyed by its warning id.
#[derive(Debug, Clone)]
pub struct IndexWarning<'a> {
    /// The warning's identity (`dd_index_warning_state.warning_id`).
    pub warning_id: IndexWarningId,
    /// Every observation, in the order given; the last is the one that counts. Never empty.
    observations: Vec<&'a RunSummary>,
}

/// Whether `summary` observed its source's index (and so may raise or cancel a warning).
fn observes_index(summary: &RunSummary) -> bool {
    let Some(preflight) = &summary.preflight else { return false };
    !preflight.metadata_only
        && !preflight.placeholder
        && summary.status != SummaryStatus::Skipped
        && summary.check.is_current
}

impl<'a> IndexWarning<'a> {
    /// The warnings `summaries` leave pending: one per warning id (in first-seen order) whose
    /// latest observation is a PASS preflight with `index_warning` set.
    pub fn pending(summaries: &'a [RunSummary]) -> Vec<IndexWarning<'a>> {
        let mut groups: Vec<IndexWarning<'a>> = Vec::new();
        let mut index: HashMap<IndexWarningId, usize> = HashMap::new();
        for summary in summaries.iter().filter(|summary| observes_index(summary)) {
            let warning_id = summary.check.index_warning_identity().warning_id();
            match index.get(&warning_id) {
                Some(&at) => groups[at].observations.push(summary),
                None => {
                    index.insert(warning_id, groups.len());
                    groups.push(IndexWarning { warning_id, observations: vec![summary] });
                }
            }
        }
        groups.retain(|group| {
            let latest = group.latest();
            latest.preflight.as_ref().is_some_and(|p| p.status == PreflightStatus::Pass && p.index_warning)
        });
        groups
    }

    /// Every observation of the source in this invocation, in the order given.
    pub fn observations(&self) -> &[&'a RunSummary] {
        &self.observations
    }

    /// The observation that counts: the last.
    pub fn latest(&self) -> &'a RunSummary {
        self.observations[self.observations.len() - 1]
    }

    /// The warning's alert, composed at `now`, addressed through `routing` (the observation
    /// whose tap and check it is routed by; its target and check id are the ones shown).
    pub fn alert(&self, routing: &RunSummary, now: DateTime<Utc>) -> Alert {
        let latest = self.latest();
        let check = &latest.check;
        let preflight = latest.preflight.as_ref();
        let table_rows = preflight.and_then(|preflight| preflight.table_rows);
        let row_limit =
            thousands(i128::from(preflight.and_then(|preflight| preflight.row_limit).unwrap_or(DEFAULT_ROW_LIMIT)));
        let column = single_line(&check.source_timestamp_column);
        let message = format!("WARNING data-diff {} — approaching source index requirement", check_name(check));

        let mut details = Details::default();
        details.push("alert_utc_time", utc(now.with_nanosecond(0).unwrap_or(now)));
        details.push("tap_id", check.tap_id.as_str());
        details.push("target_id", routing.check.target_id.as_str());
        let source_table: Vec<&str> = [&check.source_database, &check.source_schema, &check.source_table]
            .into_iter()
            .map(String::as_str)
            .filter(|part| !part.is_empty())
            .collect();
        if !source_table.is_empty() {
            details.push("source_table", source_table.join("."));
        }
        details.push("timestamp_column", column.as_str());
        details.push_some("source_rows", table_rows.map(|rows| thousands(i128::from(rows))));
        details.push("index_required_at", format!("{row_limit} rows"));
        details.push("index_status", "No qualifying source index");
        details.push("data_diff_status", "Checks can still run");

        let next_action = format!(
            "- Arrange a usable source index starting with {column} before the table reaches {row_limit} rows.\n\
             - At {row_limit} rows or more, data checks will be blocked until that index exists."
        );

        let mut subject = AlertSubject::of(&routing.check);
        subject.warning_id = Some(self.warning_id);
        Alert {
            kind: AlertKind::IndexWarning,
            level: AlertLevel::Warning,
            message,
            details: details.render(),
            next_action,
            subject,
            created_at: now,
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use datadiff_diff_core::{
        attempt::{Bounds, CheckId, CheckIdentity, PreflightFacts, RunId},
        definition::SourceType,
    };
    use uuid::Uuid;

    use super::*;

    fn at(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap()
    }

    fn identity(check: u128, target: &str) -> CheckIdentity {
        CheckIdentity {
            check_id: CheckId::new(Uuid::from_u128(check)),
            revision: 1,
            is_current: true,
            full_check_name: format!("{target}/payments/public/transfers-v2"),
            target_id: target.into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            source_database: "payments".into(),
            source_schema: "public".into(),
            source_table: "transfers-v2".into(),
            source_timestamp_column: "updated_at".into(),
            target_database: "warehouse".into(),
            target_schema: "payments_public".into(),
            target_table: "transfers_v2".into(),
            target_timestamp_column: "updated_at".into(),
        }
    }

    fn facts(status: PreflightStatus, rows: Option<i64>) -> PreflightFacts {
        PreflightFacts {
            status,
            index_warning: status == PreflightStatus::Pass && rows.is_some_and(|n| (50_000..100_000).contains(&n)),
            table_rows: rows,
            row_limit: Some(100_000),
            findings: Vec::new(),
            has_leading_index: Some(rows.is_none()),
            metadata_only: false,
            placeholder: false,
        }
    }

    /// An attempt of check `check` into `target` whose preflight saw `rows` rows (`None`: an
    /// index).
    fn observed(check: u128, target: &str, status: SummaryStatus, preflight: PreflightFacts) -> RunSummary {
        let mut summary = RunSummary::failed_without_run(identity(check, target), "");
        summary.status = status;
        summary.reason = None;
        summary.scheduled_for = Some(at(13, 0));
        summary.bounds = Some(Bounds { start: Some(at(12, 0)), end: at(13, 0) });
        summary.run_id = Some(RunId::new(Uuid::from_u128(check * 1000)));
        summary.preflight = Some(preflight);
        summary
    }

    fn warns(rows: i64) -> RunSummary {
        observed(1, "postgres", SummaryStatus::Pass, facts(PreflightStatus::Pass, Some(rows)))
    }

    fn pending_checks(summaries: &[RunSummary]) -> Vec<Vec<u128>> {
        IndexWarning::pending(summaries)
            .iter()
            .map(|warning| warning.observations().iter().map(|s| s.check.check_id.get().as_u128()).collect())
            .collect()
    }

    #[test]
    fn the_warning_band_raises_a_warning_and_smaller_indexed_or_blocked_tables_do_not() {
        assert_eq!(pending_checks(&[warns(50_000)]), [[1]]);
        assert_eq!(pending_checks(&[warns(99_999)]), [[1]]);
        assert!(pending_checks(&[warns(49_999)]).is_empty());
        let indexed = observed(1, "postgres", SummaryStatus::Pass, facts(PreflightStatus::Pass, None));
        assert!(pending_checks(&[indexed]).is_empty());
        let blocked = observed(1, "postgres", SummaryStatus::Error, facts(PreflightStatus::Blocked, Some(100_000)));
        assert!(pending_checks(&[blocked]).is_empty());
    }

    #[test]
    fn an_error_or_deferred_attempt_that_passed_its_preflight_still_warns() {
        let error = observed(1, "postgres", SummaryStatus::Error, facts(PreflightStatus::Pass, Some(60_000)));
        let deferred = observed(2, "other", SummaryStatus::Deferred, facts(PreflightStatus::Pass, Some(60_000)));
        assert_eq!(pending_checks(&[error]), [[1]]);
        assert_eq!(pending_checks(&[deferred]), [[2]]);
    }

    #[test]
    fn only_the_latest_observation_counts() {
        let later = |status, preflight| observed(2, "other", status, preflight);
        for cancel in [
            later(SummaryStatus::Error, facts(PreflightStatus::Blocked, Some(100_000))),
            later(SummaryStatus::Pass, facts(PreflightStatus::Pass, None)),
            later(SummaryStatus::Pass, facts(PreflightStatus::Pass, Some(10))),
            later(SummaryStatus::Error, facts(PreflightStatus::Error, None)),
        ] {
            assert!(pending_checks(&[warns(75_000), cancel.clone()]).is_empty(), "{:?}", cancel.preflight);
            // Before the warning, it does not cancel it.
            assert_eq!(pending_checks(&[cancel, warns(75_000)]), [[2, 1]]);
        }
    }

    #[test]
    fn skipped_inactive_metadata_only_and_placeholder_summaries_neither_warn_nor_cancel() {
        let mut skipped = warns(75_000);
        skipped.status = SummaryStatus::Skipped;
        let mut inactive = warns(75_000);
        inactive.check.is_current = false;
        assert!(pending_checks(&[skipped.clone(), inactive.clone()]).is_empty());

        let mut metadata_only = facts(PreflightStatus::Pass, None);
        (metadata_only.metadata_only, metadata_only.has_leading_index) = (true, None);
        let mut placeholder = facts(PreflightStatus::Error, None);
        (placeholder.placeholder, placeholder.has_leading_index) = (true, None);
        let metadata_only = observed(2, "other", SummaryStatus::Pass, metadata_only);
        let placeholder = observed(3, "other", SummaryStatus::Error, placeholder);
        let mut blocked_skip =
            observed(4, "other", SummaryStatus::Skipped, facts(PreflightStatus::Blocked, Some(100_000)));
        blocked_skip.status = SummaryStatus::Skipped;
        let mut blocked_inactive =
            observed(5, "other", SummaryStatus::Error, facts(PreflightStatus::Blocked, Some(100_000)));
        blocked_inactive.check.is_current = false;
        let mut no_preflight = observed(6, "other", SummaryStatus::Error, facts(PreflightStatus::Blocked, None));
        no_preflight.preflight = None;
        assert_eq!(
            pending_checks(&[warns(75_000), metadata_only, placeholder, blocked_skip, blocked_inactive, no_preflight]),
            [[1]]
        );
    }

    #[test]
    fn observations_of_one_source_share_a_warning_whatever_the_target_or_revision() {
        let other_target = observed(2, "snowflake", SummaryStatus::Pass, facts(PreflightStatus::Pass, Some(80_000)));
        let mut other_table = observed(3, "postgres", SummaryStatus::Pass, facts(PreflightStatus::Pass, Some(80_000)));
        other_table.check.source_table = "refunds".into();
        let warnings = [warns(75_000), other_target, other_table, warns(76_000)];
        assert_eq!(pending_checks(&warnings), [vec![1, 2, 1], vec![3]]);
        let pending = IndexWarning::pending(&warnings);
        assert_eq!(pending[0].warning_id.to_string(), "ca948919-a957-5a1d-be15-76d9fb044875");
        assert_eq!(pending[0].latest().preflight.as_ref().unwrap().table_rows, Some(76_000));
    }

    #[test]
    fn the_warning_layout_names_the_table_its_rows_the_limit_and_the_index() {
        for (rows, shown) in [(50_000, "50,000"), (75_000, "75,000"), (99_999, "99,999")] {
            let summaries = [warns(rows)];
            let pending = IndexWarning::pending(&summaries);
            let alert = pending[0].alert(&summaries[0], at(13, 5));
            assert_eq!(
                alert.message,
                "WARNING data-diff payments/public.transfers-v2 — approaching source index requirement"
            );
            assert_eq!(
                alert.details,
                format!(
                    "alert_utc_time    : 2026-07-22 13:05:00\n\
                     tap_id            : payments\n\
                     target_id         : postgres\n\
                     source_table      : payments.public.transfers-v2\n\
                     timestamp_column  : updated_at\n\
                     source_rows       : {shown}\n\
                     index_required_at : 100,000 rows\n\
                     index_status      : No qualifying source index\n\
                     data_diff_status  : Checks can still run"
                )
            );
            assert_eq!(
                alert.next_action,
                "- Arrange a usable source index starting with updated_at before the table reaches 100,000 rows.\n\
                 - At 100,000 rows or more, data checks will be blocked until that index exists."
            );
            assert_eq!((alert.kind, alert.level), (AlertKind::IndexWarning, AlertLevel::Warning));
            assert_eq!(alert.subject.warning_id, Some(pending[0].warning_id));
            assert_eq!(alert.to_json()["warning_id"], "ca948919-a957-5a1d-be15-76d9fb044875");
        }
    }

    #[test]
    fn the_routing_check_gives_the_target_and_check_id() {
        let summaries = [warns(75_000)];
        let pending = IndexWarning::pending(&summaries);
        let routing = observed(9, "snowflake", SummaryStatus::Pass, facts(PreflightStatus::Pass, Some(70_000)));
        let alert = pending[0].alert(&routing, at(13, 5));
        assert!(alert.details.contains("\ntarget_id         : snowflake\n"), "{}", alert.details);
        assert!(alert.details.contains("\nsource_rows       : 75,000\n"), "the latest observation's count");
        assert_eq!(alert.subject.check_id, CheckId::new(Uuid::from_u128(9)));
        assert_eq!(alert.subject.full_check_name, "snowflake/payments/public/transfers-v2");
    }
}
