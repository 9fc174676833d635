//! The stale sweep (runs note §3.6): RUNNING attempts older than their revision's budget are
//! expired to ERROR, each with its coverage transition, before scheduling reads anything.
//!
//! Upstream sweeps only current revisions, so a worker killed while remediating a
//! superseded revision leaves its attempt RUNNING forever (and its slot never retryable).
//! SPEC §4 asks datadiff to retire those too: [`Store::sweep_superseded`].
//!
//! Every cutoff comes from [`stale_cutoff`], which saturates: a revision stored by another
//! tool with a timeout PostgreSQL cannot run (PipelineWise accepts `statement_timeout:
//! 88000w`) gets the lease of PostgreSQL's longest timeout, never an instant the backend
//! rejects, so one such revision cannot fail the sweep — or the tick — for the others.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, STALE_SWEEP_ERROR, stale_cutoff};
use datadiff_diff_core::definition::StoredDefinition;
use datadiff_watermark::Outcome;

use crate::attempt::Attempt;
use crate::coverage;
use crate::definition::DefinitionFilter;
use crate::error::Error;
use crate::rows::{self, ATTEMPT_COLUMNS, get};
use crate::store::Store;

/// An attempt the sweep expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SweptRun {
    /// The attempt as stored now (ERROR, `finished_at` = the sweep's `now`).
    pub attempt: Attempt,
    /// Its coverage transition.
    pub coverage: Option<Outcome>,
}

impl Store {
    /// Expires the revision's stale RUNNING attempts — any slot, any trigger — that started
    /// at or before [`stale_cutoff`]`(now, statement_timeout_seconds)`: status ERROR,
    /// `finished_at = now`, error [`STALE_SWEEP_ERROR`], then a coverage transition per
    /// expired attempt (slot order, recorded at `now`), all in one transaction.
    pub fn sweep_stale(&self, definition: &StoredDefinition, now: DateTime<Utc>) -> Result<Vec<SweptRun>, Error> {
        self.sweep_check(definition.check_id, definition.definition.statement_timeout_seconds, now)
    }

    /// [`Store::sweep_stale`] for every superseded or deactivated revision in `filter`'s
    /// target, tap, check and project taps (its `include_versioned` is ignored) that has a
    /// RUNNING attempt, each with its own statement timeout and in its own transaction.
    pub fn sweep_superseded(&self, filter: &DefinitionFilter, now: DateTime<Utc>) -> Result<Vec<SweptRun>, Error> {
        let (targets, taps) = filter.tap_arrays();
        let rows = self
            .connection()?
            .query(
                &format!(
                    "SELECT d.check_id, d.statement_timeout_seconds FROM public.dd_check_definitions d \
                     WHERE NOT d.is_current AND ($1::text IS NULL OR d.target_id = $1) \
                       AND ($2::text IS NULL OR d.tap_id = $2) \
                       AND ($3::text IS NULL OR d.check_id::text = $3 OR d.full_check_name = $3) \
                       AND {} \
                       AND EXISTS (SELECT 1 FROM public.dd_run_attempts a \
                                   WHERE a.check_id = d.check_id AND a.status = 'RUNNING') \
                     ORDER BY d.full_check_name, d.revision",
                    crate::definition::taps_predicate(4, 5)
                ),
                &[&filter.target, &filter.tap, &filter.check, &targets, &taps],
            )
            .map_err(Error::query("listing superseded revisions with running attempts"))?;
        let mut swept = Vec::new();
        for row in &rows {
            let check_id = CheckId::new(get(row, "check_id")?);
            let timeout: i64 = get(row, "statement_timeout_seconds")?;
            swept.extend(self.sweep_check(check_id, timeout, now)?);
        }
        Ok(swept)
    }

    fn sweep_check(&self, check_id: CheckId, timeout: i64, now: DateTime<Utc>) -> Result<Vec<SweptRun>, Error> {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("sweeping stale attempts"))?;
        let rows = tx
            .query(
                &format!(
                    "UPDATE public.dd_run_attempts SET status = 'ERROR', finished_at = $3, error = $4 \
                     WHERE check_id = $1 AND status = 'RUNNING' AND started_at <= $2 RETURNING {ATTEMPT_COLUMNS}"
                ),
                &[&check_id.get(), &stale_cutoff(now, timeout), &now, &STALE_SWEEP_ERROR],
            )
            .map_err(Error::query("sweeping stale attempts"))?;
        let mut attempts = rows.iter().map(rows::attempt).collect::<Result<Vec<_>, _>>()?;
        attempts.sort_by_key(|attempt| (attempt.scheduled_for, attempt.attempt));
        let mut swept = Vec::with_capacity(attempts.len());
        for attempt in attempts {
            let coverage = coverage::evaluate(&mut tx, &attempt, now)?;
            swept.push(SweptRun { attempt, coverage });
        }
        tx.commit().map_err(Error::query("committing the stale sweep"))?;
        Ok(swept)
    }
}
