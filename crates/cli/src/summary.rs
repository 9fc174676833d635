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
            slot_status: Cell::text(summary.slot_status.map(|status| status.as_str())),
            start: Cell::time(summary.bounds.and_then(|bounds| bounds.start)),
            end: Cell::time(summary.bounds.map(|bounds| bounds.end)),
            run_id: Cell::text(summary.run_id.map(|id| id.to_string())),
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
