//! One read that tells a scheduler tick, for many checks at once, which of them have work:
//! a stale attempt to sweep, a failed slot to retry, a due slot not attempted yet.
//!
//! A tick over 1,000 current definitions with nothing due must take under a second (SPEC
//! §11); going through the per-check operations costs a dozen round trips per check. With
//! this overview the runner calls [`Store::sweep_stale`], [`Store::retry_candidates`] and
//! [`Store::start_attempt`] only for checks that need them. Skipping them is safe: attempts
//! are never deleted, so a slot seen attempted stays attempted (an unforced start of it can
//! only be SKIPPED), and a check without a stale attempt or a retry candidate now has
//! nothing for the sweep or the retry to do at `now` — what a concurrent worker adds
//! meanwhile is at most as fresh as what the per-check reads would have seen a moment
//! earlier.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, stale_cutoff};
use datadiff_diff_core::definition::StoredDefinition;
use uuid::Uuid;

use crate::attempt::Attempt;
use crate::error::Error;
use crate::rows::{self, ATTEMPT_COLUMNS, get};
use crate::store::Store;

/// What one check has to do now (from [`Store::schedule_overview`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleOverview {
    /// The revision.
    pub check_id: CheckId,
    /// The current slot the caller gave for it.
    pub current_slot: DateTime<Utc>,
    /// [`Store::latest_scheduled_for`]: the newest non-remediation slot attempted.
    pub latest_scheduled_for: Option<DateTime<Utc>>,
    /// Whether [`Store::sweep_stale`] would expire something at `now`.
    pub has_stale_attempt: bool,
    /// Whether [`Store::retry_candidates`] with `retry_before = current_slot` is non-empty.
    pub has_retry_candidate: bool,
    /// The newest attempt of the current slot, if it was attempted.
    pub current_slot_newest: Option<Attempt>,
}

impl Store {
    /// The [`ScheduleOverview`] of each `(definition, current slot)`, in the order given, in
    /// one query; stale means started at or before
    /// [`stale_cutoff`]`(now, statement_timeout_seconds)` of that revision.
    pub fn schedule_overview(
        &self,
        checks: &[(&StoredDefinition, DateTime<Utc>)],
        now: DateTime<Utc>,
    ) -> Result<Vec<ScheduleOverview>, Error> {
        if checks.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<Uuid> = checks.iter().map(|(definition, _)| definition.check_id.get()).collect();
        let slots: Vec<DateTime<Utc>> = checks.iter().map(|(_, slot)| *slot).collect();
        let cutoffs: Vec<DateTime<Utc>> = checks
            .iter()
            .map(|(definition, _)| stale_cutoff(now, definition.definition.statement_timeout_seconds))
            .collect();
        let newest_columns =
            ATTEMPT_COLUMNS.split(", ").map(|column| format!("newest.{column}")).collect::<Vec<_>>().join(", ");
        let rows = self
            .connection()?
            .query(
                &format!(
                    "SELECT request.position, request.current_slot, \
                        (SELECT max(a.scheduled_for) FROM public.dd_run_attempts a \
                          WHERE a.check_id = request.check_id AND a.trigger_type <> 'REMEDIATION') AS latest, \
                        EXISTS (SELECT 1 FROM public.dd_run_attempts a WHERE a.check_id = request.check_id \
                                AND a.status = 'RUNNING' AND a.started_at <= request.cutoff) AS stale, \
                        EXISTS (SELECT 1 FROM public.dd_run_slot_state s \
                                 WHERE s.check_id = request.check_id AND s.status IN ('FAIL', 'ERROR') \
                                   AND s.scheduled_for < request.current_slot \
                                   AND NOT EXISTS (SELECT 1 FROM public.dd_run_attempts a \
                                        WHERE a.check_id = s.check_id AND a.scheduled_for = s.scheduled_for \
                                          AND (a.status = 'RUNNING' \
                                               OR GREATEST(a.started_at, a.finished_at) >= request.current_slot))) \
                            AS retry, \
                        newest.run_id IS NOT NULL AS attempted, {newest_columns} \
                       FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[]) WITH ORDINALITY \
                            AS request(check_id, current_slot, cutoff, position) \
                       LEFT JOIN LATERAL (SELECT {ATTEMPT_COLUMNS} FROM public.dd_run_attempts a \
                            WHERE a.check_id = request.check_id AND a.scheduled_for = request.current_slot \
                            ORDER BY a.attempt DESC LIMIT 1) newest ON TRUE \
                      ORDER BY request.position"
                ),
                &[&ids, &slots, &cutoffs],
            )
            .map_err(Error::query("reading the schedule overview"))?;
        rows.iter()
            .zip(checks)
            .map(|(row, (definition, current_slot))| {
                let attempted: bool = get(row, "attempted")?;
                Ok(ScheduleOverview {
                    check_id: definition.check_id,
                    current_slot: *current_slot,
                    latest_scheduled_for: get(row, "latest")?,
                    has_stale_attempt: get(row, "stale")?,
                    has_retry_candidate: get(row, "retry")?,
                    current_slot_newest: if attempted { Some(rows::attempt(row)?) } else { None },
                })
            })
            .collect()
    }
}
