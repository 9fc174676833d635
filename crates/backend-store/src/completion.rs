//! Finishing an attempt (runs note §3.1 T4): the terminal status, its results, `row_diff`
//! evidence and coverage transition in one transaction, guarded by the lease.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use datadiff_diff_core::{
    attempt::{CheckResult, PreflightId, ResultType, RunId, RunStatus},
    merge::DifferenceKind,
};
use datadiff_watermark::Outcome;

use crate::attempt::Attempt;
use crate::coverage;
use crate::error::Error;
use crate::result::Difference;
use crate::rows::{self, ATTEMPT_COLUMNS, get, parse};
use crate::store::Store;

/// What a worker recorded for its attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The attempt (which must still be RUNNING).
    pub run_id: RunId,
    /// PASS, FAIL, ERROR or DEFERRED.
    pub status: RunStatus,
    /// Its preflight, written again alongside the status as upstream does; `None` keeps the
    /// one already linked.
    pub preflight_id: Option<PreflightId>,
    /// The attempt's error text (NULL for PASS).
    pub error: Option<String>,
    /// The results, in the definition's declared check order (none for DEFERRED).
    pub results: Vec<CheckResult>,
    /// `row_diff` differences, in key order per check type; numbered from 1 as stored.
    pub differences: Vec<Difference>,
    /// `finished_at`, also the watermark's `updated_at` and the event's `recorded_at`.
    pub finished_at: DateTime<Utc>,
}

/// What [`Store::finish_attempt`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// The attempt as stored now.
    pub attempt: Attempt,
    /// The watermark state and event written, `None` for DEFERRED.
    pub coverage: Option<Outcome>,
}

fn validate(completion: &Completion) -> Result<(), Error> {
    let run_id = completion.run_id;
    if !matches!(completion.status, RunStatus::Pass | RunStatus::Fail | RunStatus::Error | RunStatus::Deferred) {
        return Err(Error::NotTerminal { run_id, status: completion.status });
    }
    let mut seen = HashSet::with_capacity(completion.results.len());
    for result in &completion.results {
        if !seen.insert(result.check_type) {
            return Err(Error::DuplicateResult { run_id, check_type: result.check_type });
        }
    }
    for difference in &completion.differences {
        if (difference.kind == DifferenceKind::Changed) == difference.fields.is_empty() {
            return Err(Error::InvalidDifference {
                run_id,
                check_type: difference.check_type,
                kind: difference.kind.as_str(),
                fields: difference.fields.len(),
            });
        }
    }
    Ok(())
}

impl Store {
    /// Finishes a RUNNING attempt, all in one transaction:
    ///
    /// 1. `UPDATE … WHERE run_id AND status = 'RUNNING'` sets the status, preflight,
    ///    `finished_at` and error; when no row matches the lease is lost
    ///    ([`Error::LeaseLost`], or [`Error::UnknownRun`]) and nothing at all is written;
    /// 2. inserts the results, in the given order;
    /// 3. inserts the `row_diff` differences, `ordinal` from 1 per check type, `fields`
    ///    empty unless CHANGED;
    /// 4. unless DEFERRED, the coverage transition (slot state, watermark state and event,
    ///    recorded at `finished_at`) under [`AdvisoryLock::Coverage`](crate::AdvisoryLock::Coverage).
    ///
    /// Invalid input (a non-terminal status, two results of one type, a difference whose
    /// fields contradict its kind) is refused before anything is written.
    pub fn finish_attempt(&self, completion: &Completion) -> Result<Finished, Error> {
        validate(completion)?;
        let run_id = completion.run_id;
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("finishing an attempt"))?;
        let row = tx
            .query_opt(
                &format!(
                    "UPDATE public.dd_run_attempts SET status = $2, preflight_id = COALESCE($3, preflight_id), \
                     finished_at = $4, error = $5 WHERE run_id = $1 AND status = 'RUNNING' RETURNING {ATTEMPT_COLUMNS}"
                ),
                &[
                    &run_id.get(),
                    &completion.status.as_str(),
                    &completion.preflight_id.map(PreflightId::get),
                    &completion.finished_at,
                    &completion.error,
                ],
            )
            .map_err(Error::query("finishing an attempt"))?;
        let Some(row) = row else {
            let status = tx
                .query_opt("SELECT status FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
                .map_err(Error::query("reading an attempt's status"))?
                .ok_or(Error::UnknownRun(run_id))?;
            let status = parse("dd_run_attempts.status", get(&status, "status")?)?;
            return Err(Error::LeaseLost { run_id, status });
        };
        let attempt = rows::attempt(&row)?;

        if !completion.results.is_empty() {
            let insert = tx
                .prepare(
                    "INSERT INTO public.dd_run_results (run_id, check_type, status, source_value, target_value, \
                     source_query_seconds, target_query_seconds, error) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                )
                .map_err(Error::query("preparing the results"))?;
            for result in &completion.results {
                tx.execute(
                    &insert,
                    &[
                        &run_id.get(),
                        &result.check_type.as_str(),
                        &result.status.as_str(),
                        &result.source_value,
                        &result.target_value,
                        &result.source_query_seconds,
                        &result.target_query_seconds,
                        &result.error,
                    ],
                )
                .map_err(Error::query("inserting a result"))?;
            }
        }

        if !completion.differences.is_empty() {
            let insert = tx
                .prepare(
                    "INSERT INTO public.datadiff_run_differences (run_id, check_type, ordinal, kind, key, fields) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                )
                .map_err(Error::query("preparing the differences"))?;
            let mut ordinals: HashMap<ResultType, i32> = HashMap::new();
            for difference in &completion.differences {
                let ordinal = ordinals.entry(difference.check_type).or_insert(0);
                *ordinal += 1;
                tx.execute(
                    &insert,
                    &[
                        &run_id.get(),
                        &difference.check_type.as_str(),
                        &*ordinal,
                        &difference.kind.as_str(),
                        &difference.key,
                        &difference.fields,
                    ],
                )
                .map_err(Error::query("inserting a difference"))?;
            }
        }

        let coverage = coverage::evaluate(&mut tx, &attempt, completion.finished_at)?;
        tx.commit().map_err(Error::query("committing an attempt's outcome"))?;
        Ok(Finished { attempt, coverage })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use uuid::Uuid;

    use datadiff_diff_core::{attempt::ResultStatus, definition::CheckType};

    use super::*;

    fn completion() -> Completion {
        Completion {
            run_id: RunId::new(Uuid::from_u128(1)),
            status: RunStatus::Fail,
            preflight_id: None,
            error: Some("row_count FAIL".into()),
            results: vec![CheckResult {
                check_type: ResultType::Check(CheckType::RowCount),
                status: ResultStatus::Fail,
                source_value: "4".into(),
                target_value: "3".into(),
                source_query_seconds: Some(0.1),
                target_query_seconds: Some(0.1),
                error: None,
            }],
            differences: vec![Difference {
                check_type: ResultType::RowDiff,
                kind: DifferenceKind::Changed,
                key: serde_json::json!({"id": "1"}),
                fields: vec!["status".into()],
            }],
            finished_at: Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap(),
        }
    }

    #[test]
    fn a_consistent_completion_is_accepted() {
        assert!(validate(&completion()).is_ok());
    }

    #[test]
    fn running_is_not_a_way_to_finish() {
        let running = Completion { status: RunStatus::Running, ..completion() };
        assert!(matches!(validate(&running), Err(Error::NotTerminal { status: RunStatus::Running, .. })));
    }

    #[test]
    fn two_results_of_one_type_are_refused() {
        let mut twice = completion();
        twice.results.push(twice.results[0].clone());
        assert!(
            matches!(validate(&twice), Err(Error::DuplicateResult { check_type, .. }) if check_type == ResultType::Check(CheckType::RowCount))
        );
    }

    #[test]
    fn fields_must_be_present_exactly_for_changed_rows() {
        let mut missing = completion();
        missing.differences[0].kind = DifferenceKind::MissingInTarget;
        assert!(matches!(validate(&missing), Err(Error::InvalidDifference { fields: 1, .. })));
        let mut changed = completion();
        changed.differences[0].fields.clear();
        assert!(matches!(validate(&changed), Err(Error::InvalidDifference { fields: 0, .. })));
    }
}
