//! Conversions between backend rows and the types of the pure crates.
//!
//! Every read goes through [`get`] (a typed column read that returns an error instead of
//! panicking on a NULL or a type the schema does not promise) and every vocabulary text
//! through [`parse`], so a row written by another tool that breaks an expectation is an
//! [`Error`], never a panic.

use std::str::FromStr;

use datadiff_diff_core::{
    attempt::{Bounds, CheckId, PreflightId, RunId, RunStatus},
    definition::{CheckDefinition, StoredDefinition},
};
use datadiff_watermark::{Coverage, EventType, Slot, VerifiedInterval, VerifiedStatus, WatermarkState};
use postgres::Row;
use postgres::types::FromSql;
use uuid::Uuid;

use crate::attempt::Attempt;
use crate::error::Error;

/// Reads one column by name.
pub(crate) fn get<'a, T: FromSql<'a>>(row: &'a Row, column: &str) -> Result<T, Error> {
    row.try_get(column).map_err(Error::query("reading a backend row"))
}

/// Parses a vocabulary text, naming the column when it is not one of the vocabulary's.
pub(crate) fn parse<T: FromStr>(column: &'static str, text: String) -> Result<T, Error> {
    text.parse().map_err(|_| Error::UnexpectedValue { column, value: text })
}

/// The columns of `dd_run_attempts`, in table order, for [`attempt`].
pub(crate) const ATTEMPT_COLUMNS: &str = "run_id, check_id, scheduled_for, window_start, window_end, attempt, \
     trigger_type, status, rerun_of_run_id, remediation_reference, preflight_id, started_at, finished_at, error";

/// A `dd_run_attempts` row (selected with [`ATTEMPT_COLUMNS`]).
pub(crate) fn attempt(row: &Row) -> Result<Attempt, Error> {
    Ok(Attempt {
        run_id: RunId::new(get(row, "run_id")?),
        check_id: CheckId::new(get(row, "check_id")?),
        scheduled_for: get(row, "scheduled_for")?,
        bounds: Bounds { start: get(row, "window_start")?, end: get(row, "window_end")? },
        attempt: get(row, "attempt")?,
        trigger: parse("dd_run_attempts.trigger_type", get(row, "trigger_type")?)?,
        status: parse::<RunStatus>("dd_run_attempts.status", get(row, "status")?)?,
        rerun_of_run_id: get::<Option<Uuid>>(row, "rerun_of_run_id")?.map(RunId::new),
        remediation_reference: get(row, "remediation_reference")?,
        preflight_id: get::<Option<Uuid>>(row, "preflight_id")?.map(PreflightId::new),
        started_at: get(row, "started_at")?,
        finished_at: get(row, "finished_at")?,
        error: get(row, "error")?,
    })
}

/// The columns of `dd_check_definitions` that [`definition`] reads.
pub(crate) const DEFINITION_COLUMNS: &str =
    "check_id, full_check_name, revision, config_hash, canonical_config, is_current, created_at, superseded_at";

/// A `dd_check_definitions` row (selected with [`DEFINITION_COLUMNS`]); the definition itself
/// is read back from `canonical_config`, the only place holding compare columns,
/// `initial_full_scan` and datadiff's extensions.
pub(crate) fn definition(row: &Row) -> Result<StoredDefinition, Error> {
    let check_id = CheckId::new(get(row, "check_id")?);
    let full_check_name: String = get(row, "full_check_name")?;
    let canonical: serde_json::Value = get(row, "canonical_config")?;
    let definition = CheckDefinition::from_canonical_config(&full_check_name, &canonical)
        .map_err(|source| Error::StoredDefinition { check_id, source })?;
    Ok(StoredDefinition {
        check_id,
        revision: get(row, "revision")?,
        config_hash: get::<String>(row, "config_hash")?.trim_end().to_owned(),
        is_current: get(row, "is_current")?,
        created_at: get(row, "created_at")?,
        superseded_at: get(row, "superseded_at")?,
        definition,
    })
}

/// The columns of `dd_run_slot_state` that [`slot`] reads.
pub(crate) const SLOT_COLUMNS: &str = "scheduled_for, window_start, window_end, status, run_id, attempt";

/// A `dd_run_slot_state` row (selected with [`SLOT_COLUMNS`]).
pub(crate) fn slot(row: &Row) -> Result<Slot, Error> {
    Ok(Slot {
        scheduled_for: get(row, "scheduled_for")?,
        window_start: get(row, "window_start")?,
        window_end: get(row, "window_end")?,
        status: parse::<RunStatus>("dd_run_slot_state.status", get(row, "status")?)?,
        run_id: RunId::new(get(row, "run_id")?),
        attempt: get(row, "attempt")?,
    })
}

/// The columns of `dd_watermark_state` that [`watermark_state`] reads.
pub(crate) const WATERMARK_COLUMNS: &str = "check_id, verified_start, verified_end, furthest_observed_end, \
     verified_status, blocking_run_id, last_evaluated_run_id, event_type, state_version, updated_at, reason";

/// A `dd_watermark_state` row (selected with [`WATERMARK_COLUMNS`]).
pub(crate) fn watermark_state(row: &Row) -> Result<WatermarkState, Error> {
    let verified =
        VerifiedInterval::from_columns(get(row, "verified_start")?, get(row, "verified_end")?).map_err(|_| {
            Error::UnexpectedValue {
                column: "dd_watermark_state.verified_start",
                value: "one verified bound without the other".to_owned(),
            }
        })?;
    Ok(WatermarkState {
        check_id: CheckId::new(get(row, "check_id")?),
        coverage: Coverage {
            verified,
            furthest_observed_end: get(row, "furthest_observed_end")?,
            status: parse::<VerifiedStatus>("dd_watermark_state.verified_status", get(row, "verified_status")?)?,
            blocking_run_id: get::<Option<Uuid>>(row, "blocking_run_id")?.map(RunId::new),
            reason: get(row, "reason")?,
        },
        last_evaluated_run_id: RunId::new(get(row, "last_evaluated_run_id")?),
        event_type: parse::<EventType>("dd_watermark_state.event_type", get(row, "event_type")?)?,
        state_version: get(row, "state_version")?,
        updated_at: get(row, "updated_at")?,
    })
}
