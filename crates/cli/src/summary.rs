//! How attempts are printed: upstream's run and rerun tables, and one JSON object per
//! [`RunSummary`] shared by `run` and `rerun`.
//!
//! Result values (counts, min/max keys, checksums) are not printed: the tables never had
//! them, and JSON carries each check's type, status and error only.

use datadiff_runner::RunSummary;
use serde_json::json;

use crate::listing::{Cell, Column, Listing, column, field};

/// Upstream's `run_data_diff_checks` table, then the fields JSON adds.
const RUN_COLUMNS: &[Column] = &[
    column("Check", "full_check_name"),
    column("Status", "status"),
    column("Slot status", "slot_status"),
    column("UTC start", "window_start"),
    column("UTC end", "window_end"),
    column("Run ID", "run_id"),
    column("Reason", "reason"),
    field("check_id"),
    field("revision"),
    field("target_id"),
    field("tap_id"),
    field("scheduled_for"),
    field("attempt"),
    field("trigger_type"),
    field("rerun_of_run_id"),
    field("remediation_reference"),
    field("checks"),
];

/// Upstream's `rerun_data_diff_check` table, then the fields JSON adds (the same fields as a
/// run's summary).
const RERUN_COLUMNS: &[Column] = &[
    column("Check", "full_check_name"),
    column("Status", "status"),
    column("Attempt", "attempt"),
    column("UTC start", "window_start"),
    column("UTC end", "window_end"),
    column("Original run ID", "rerun_of_run_id"),
    column("Remediation run ID", "run_id"),
    column("Remediation reference", "remediation_reference"),
    column("Reason", "reason"),
    field("check_id"),
    field("revision"),
    field("target_id"),
    field("tap_id"),
    field("slot_status"),
    field("scheduled_for"),
    field("trigger_type"),
    field("checks"),
];

/// The run table (and JSON rows) of a tick's summaries.
pub(crate) fn run_listing(summaries: &[RunSummary]) -> Listing {
    let mut listing = Listing::new(RUN_COLUMNS);
    for summary in summaries {
        let cells = Cells::of(summary);
        listing.push(vec![
            cells.name,
            cells.status,
            cells.slot_status,
            cells.start,
            cells.end,
            cells.run_id,
            cells.reason,
            cells.check_id,
            cells.revision,
            cells.target_id,
            cells.tap_id,
            cells.scheduled_for,
            cells.attempt,
            cells.trigger,
            cells.original,
            cells.reference,
            cells.checks,
        ]);
    }
    listing
}

/// The rerun table (and JSON rows) of a remediation's summary.
pub(crate) fn rerun_listing(summaries: &[RunSummary]) -> Listing {
    let mut listing = Listing::new(RERUN_COLUMNS);
    for summary in summaries {
        let cells = Cells::of(summary);
        listing.push(vec![
            cells.name,
            cells.status,
            cells.attempt,
            cells.start,
            cells.end,
            cells.original,
            cells.run_id,
            cells.reference,
            cells.reason,
            cells.check_id,
            cells.revision,
            cells.target_id,
            cells.tap_id,
            cells.slot_status,
            cells.scheduled_for,
            cells.trigger,
            cells.checks,
        ]);
    }
    listing
}

/// The slot status: as upstream, the table shows it on SKIPPED rows only (an executed row's
/// slot status is its own status); JSON carries it on every row.
fn slot_status(summary: &RunSummary) -> Cell {
    let value = serde_json::Value::from(summary.slot_status.map(|status| status.as_str()));
    let text = match summary.status {
        datadiff_runner::SummaryStatus::Skipped => summary.slot_status.map_or("", |status| status.as_str()),
        _ => "",
    };
    Cell::with_text(text, value)
}

/// The command that lists a run's `row_diff` differences.
pub(crate) fn differences_command(run_id: datadiff_diff_core::attempt::RunId) -> String {
    format!("datadiff report differences --run-id {run_id}")
}

/// Every cell a summary can show.
struct Cells {
    name: Cell,
    status: Cell,
    slot_status: Cell,
    start: Cell,
    end: Cell,
    run_id: Cell,
    reason: Cell,
    check_id: Cell,
    revision: Cell,
    target_id: Cell,
    tap_id: Cell,
    scheduled_for: Cell,
    attempt: Cell,
    trigger: Cell,
    original: Cell,
    reference: Cell,
    checks: Cell,
}

impl Cells {
    fn of(summary: &RunSummary) -> Cells {
        let checks: Vec<serde_json::Value> = summary
            .results
            .iter()
            .map(|result| {
                json!({"check_type": result.check_type.as_str(), "status": result.status.as_str(), "error": result.error})
            })
            .collect();
        Cells {
            name: Cell::string(&summary.check.full_check_name),
            status: Cell::string(summary.status.as_str()),
            slot_status: slot_status(summary),
            start: Cell::time(summary.bounds.and_then(|bounds| bounds.start)),
            end: Cell::time(summary.bounds.map(|bounds| bounds.end)),
            run_id: Cell::text(summary.run_id.map(|id| id.to_string())),
            // A row_diff FAIL's stored reason names its counts and the command that lists the rows.
            reason: Cell::text(summary.reason.clone()),
            check_id: Cell::string(summary.check.check_id.to_string()),
            revision: Cell::int(Some(i64::from(summary.check.revision))),
            target_id: Cell::string(&summary.check.target_id),
            tap_id: Cell::string(&summary.check.tap_id),
            scheduled_for: Cell::time(summary.scheduled_for),
            attempt: Cell::int(summary.attempt.map(i64::from)),
            trigger: Cell::text(summary.trigger.map(|trigger| trigger.as_str())),
            original: Cell::text(summary.rerun_of_run_id.map(|id| id.to_string())),
            reference: Cell::text(summary.remediation_reference.clone()),
            checks: Cell::json(serde_json::Value::Array(checks)),
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use datadiff_diff_core::{
        attempt::{Bounds, CheckId, RunId, RunStatus, TriggerType},
        definition::SourceType,
    };
    use datadiff_runner::{CheckIdentity, SummaryStatus};
    use uuid::Uuid;

    use super::*;

    fn summary(status: SummaryStatus, slot_status: RunStatus) -> RunSummary {
        let check = CheckIdentity {
            check_id: CheckId::new(Uuid::from_u128(1)),
            revision: 1,
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
            target_schema: "payments".into(),
            target_table: "transfers".into(),
            target_timestamp_column: "updated_at".into(),
        };
        let mut summary = RunSummary::failed_without_run(check, "");
        summary.status = status;
        summary.reason = None;
        summary.slot_status = Some(slot_status);
        summary.scheduled_for = Some(Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap());
        summary.run_id = Some(RunId::new(Uuid::from_u128(0x11)));
        summary.attempt = Some(1);
        summary.trigger = Some(TriggerType::Scheduled);
        summary
    }

    /// The texts are what PipelineWise prints for the same summaries (`tabulate`).
    #[test]
    fn the_run_table_is_upstreams_with_the_slot_status_on_skipped_rows_only() {
        let mut executed = summary(SummaryStatus::Pass, RunStatus::Pass);
        executed.bounds = Some(Bounds {
            start: Some(Utc.with_ymd_and_hms(2026, 7, 22, 12, 0, 0).unwrap()),
            end: Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap(),
        });
        let mut skipped = summary(SummaryStatus::Skipped, RunStatus::Pass);
        skipped.reason = Some("This cron slot has already been attempted".into());
        let listing = run_listing(&[executed, skipped]);
        assert_eq!(
            listing.table(),
            "Check                               Status    Slot status    UTC start                  UTC end                    Run ID                                Reason\n\
             ----------------------------------  --------  -------------  -------------------------  -------------------------  ------------------------------------  -----------------------------------------\n\
             postgres/payments/public/transfers  PASS                     2026-07-22T12:00:00+00:00  2026-07-22T13:00:00+00:00  00000000-0000-0000-0000-000000000011\n\
             postgres/payments/public/transfers  SKIPPED   PASS                                                                 00000000-0000-0000-0000-000000000011  This cron slot has already been attempted\n"
        );
        let rows = listing.json_rows();
        assert_eq!(rows[0]["slot_status"], "PASS", "JSON keeps every row's slot status");
        assert_eq!(rows[1]["slot_status"], "PASS");
    }

    #[test]
    fn the_rerun_table_is_upstreams() {
        let mut remediation = summary(SummaryStatus::Fail, RunStatus::Fail);
        remediation.bounds = Some(Bounds {
            start: Some(Utc.with_ymd_and_hms(2026, 7, 22, 12, 0, 0).unwrap()),
            end: Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap(),
        });
        remediation.run_id = Some(RunId::new(Uuid::from_u128(0x12)));
        remediation.rerun_of_run_id = Some(RunId::new(Uuid::from_u128(0x11)));
        remediation.attempt = Some(2);
        remediation.trigger = Some(TriggerType::Remediation);
        remediation.remediation_reference = Some("INC-42".into());
        remediation.reason = Some("row_count FAIL".into());
        assert_eq!(
            rerun_listing(&[remediation]).table(),
            "Check                               Status      Attempt  UTC start                  UTC end                    Original run ID                       Remediation run ID                    Remediation reference    Reason\n\
             ----------------------------------  --------  ---------  -------------------------  -------------------------  ------------------------------------  ------------------------------------  -----------------------  --------------\n\
             postgres/payments/public/transfers  FAIL              2  2026-07-22T12:00:00+00:00  2026-07-22T13:00:00+00:00  00000000-0000-0000-0000-000000000011  00000000-0000-0000-0000-000000000012  INC-42                   row_count FAIL\n"
        );
    }
}
