//! The coverage transition of one evaluated attempt (runs note §4.1), inside the finishing or
//! sweeping transaction: slot-state upsert, watermark state and event.
//!
//! Under [`AdvisoryLock::Coverage`] of the revision it reads the previous watermark row and
//! the slot's row `FOR UPDATE` and whether a later slot exists, lets
//! [`datadiff_watermark::Transition::plan`] choose the method, upserts the slot row (only a
//! greater attempt number replaces it, so out-of-order completions keep the highest
//! attempt), reads the effective slots only when the plan recomputes, and writes the state
//! and event rows [`datadiff_watermark::Evaluation::apply`] returns.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{RunId, RunStatus};
use datadiff_watermark::{FinishedAttempt, Outcome, Transition};
use postgres::Transaction;
use uuid::Uuid;

use crate::attempt::Attempt;
use crate::error::Error;
use crate::lock::AdvisoryLock;
use crate::rows::{self, SLOT_COLUMNS, WATERMARK_COLUMNS, get};

/// Whether a revision reads no table data (no upstream data check and no `row_diff`): such
/// a definition never advances its watermark. The same rule as
/// [`CheckDefinition::has_data_check`](datadiff_diff_core::definition::CheckDefinition::has_data_check),
/// evaluated in SQL so that a row PipelineWise wrote is judged by its `checks` column alone.
const METADATA_ONLY: &str = "SELECT NOT (jsonb_array_length(checks - 'schema_compatibility') > 0 \
     OR coalesce(jsonb_typeof(canonical_config #> '{datadiff,row_diff}') = 'object', FALSE)) AS metadata_only \
     FROM public.dd_check_definitions WHERE check_id = $1";

/// Evaluates a terminal attempt: `None` for DEFERRED (no slot, state or event changes).
pub(crate) fn evaluate(
    tx: &mut Transaction<'_>,
    attempt: &Attempt,
    recorded_at: DateTime<Utc>,
) -> Result<Option<Outcome>, Error> {
    let status = match attempt.status {
        RunStatus::Deferred => return Ok(None),
        RunStatus::Running => return Err(Error::NotTerminal { run_id: attempt.run_id, status: attempt.status }),
        outcome => outcome,
    };
    let check_id = attempt.check_id;
    let watermark_error = |source| Error::Watermark { check_id, run_id: attempt.run_id, source };

    AdvisoryLock::Coverage(check_id).acquire(tx)?;
    let metadata_only: bool = {
        let row = tx
            .query_opt(METADATA_ONLY, &[&check_id.get()])
            .map_err(Error::query("reading a definition's checks"))?
            .ok_or(Error::UnknownCheck(check_id))?;
        get(&row, "metadata_only")?
    };
    let previous = tx
        .query_opt(
            &format!("SELECT {WATERMARK_COLUMNS} FROM public.dd_watermark_state WHERE check_id = $1 FOR UPDATE"),
            &[&check_id.get()],
        )
        .map_err(Error::query("locking the watermark"))?
        .as_ref()
        .map(rows::watermark_state)
        .transpose()?;
    let existing_slot = tx
        .query_opt(
            &format!(
                "SELECT {SLOT_COLUMNS} FROM public.dd_run_slot_state WHERE check_id = $1 AND scheduled_for = $2 \
                 FOR UPDATE"
            ),
            &[&check_id.get(), &attempt.scheduled_for],
        )
        .map_err(Error::query("locking the slot state"))?
        .as_ref()
        .map(rows::slot)
        .transpose()?;
    let has_later_slot: bool = {
        let row = tx
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM public.dd_run_slot_state WHERE check_id = $1 AND scheduled_for > $2) \
                 AS later",
                &[&check_id.get(), &attempt.scheduled_for],
            )
            .map_err(Error::query("looking for later slots"))?;
        get(&row, "later")?
    };

    let transition = Transition {
        check_id,
        metadata_only,
        previous,
        existing_slot,
        has_later_slot,
        attempt: FinishedAttempt {
            run_id: attempt.run_id,
            scheduled_for: attempt.scheduled_for,
            attempt: attempt.attempt,
            window_start: attempt.bounds.start,
            window_end: attempt.bounds.end,
            status,
        },
    };
    let Some(evaluation) = transition.plan().map_err(watermark_error)? else { return Ok(None) };

    let slot = evaluation.slot();
    tx.execute(
        "INSERT INTO public.dd_run_slot_state AS s (check_id, scheduled_for, run_id, attempt, window_start, \
         window_end, status) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         ON CONFLICT (check_id, scheduled_for) DO UPDATE SET run_id = EXCLUDED.run_id, attempt = EXCLUDED.attempt, \
         window_start = EXCLUDED.window_start, window_end = EXCLUDED.window_end, status = EXCLUDED.status \
         WHERE s.attempt < EXCLUDED.attempt",
        &[
            &check_id.get(),
            &slot.scheduled_for,
            &slot.run_id.get(),
            &slot.attempt,
            &slot.window_start,
            &slot.window_end,
            &slot.status.as_str(),
        ],
    )
    .map_err(Error::query("writing the slot state"))?;

    let effective_slots = if evaluation.needs_effective_slots() {
        let rows = tx
            .query(
                &format!(
                    "SELECT {SLOT_COLUMNS} FROM public.dd_run_slot_state WHERE check_id = $1 ORDER BY scheduled_for"
                ),
                &[&check_id.get()],
            )
            .map_err(Error::query("reading the effective slots"))?;
        rows.iter().map(rows::slot).collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let outcome = evaluation.apply(&effective_slots, recorded_at, Uuid::new_v4()).map_err(watermark_error)?;

    let state = &outcome.state;
    tx.execute(
        "INSERT INTO public.dd_watermark_state (check_id, verified_start, verified_end, furthest_observed_end, \
         verified_status, blocking_run_id, last_evaluated_run_id, event_type, state_version, updated_at, reason) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         ON CONFLICT (check_id) DO UPDATE SET verified_start = EXCLUDED.verified_start, \
         verified_end = EXCLUDED.verified_end, furthest_observed_end = EXCLUDED.furthest_observed_end, \
         verified_status = EXCLUDED.verified_status, blocking_run_id = EXCLUDED.blocking_run_id, \
         last_evaluated_run_id = EXCLUDED.last_evaluated_run_id, event_type = EXCLUDED.event_type, \
         state_version = EXCLUDED.state_version, updated_at = EXCLUDED.updated_at, reason = EXCLUDED.reason",
        &[
            &state.check_id.get(),
            &state.coverage.verified_start(),
            &state.coverage.verified_end(),
            &state.coverage.furthest_observed_end,
            &state.coverage.status.as_str(),
            &state.coverage.blocking_run_id.map(RunId::get),
            &state.last_evaluated_run_id.get(),
            &state.event_type.as_str(),
            &state.state_version,
            &state.updated_at,
            &state.coverage.reason,
        ],
    )
    .map_err(Error::query("writing the watermark state"))?;

    let event = &outcome.event;
    tx.execute(
        "INSERT INTO public.dd_watermark_events (watermark_event_id, check_id, evaluated_run_id, event_type, \
         verified_start, previous_verified_end, verified_end, furthest_observed_end, verified_status, \
         blocking_run_id, recorded_at, reason) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
        &[
            &event.watermark_event_id,
            &event.check_id.get(),
            &event.evaluated_run_id.get(),
            &event.event_type.as_str(),
            &event.coverage.verified_start(),
            &event.previous_verified_end,
            &event.coverage.verified_end(),
            &event.coverage.furthest_observed_end,
            &event.coverage.status.as_str(),
            &event.coverage.blocking_run_id.map(RunId::get),
            &event.recorded_at,
            &event.coverage.reason,
        ],
    )
    .map_err(Error::query("writing the watermark event"))?;
    Ok(Some(outcome))
}
