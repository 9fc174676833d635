//! Attempts: starting them (scheduled, forced, retried, remediated) under the check lock,
//! persisting a resolved historical start, and the reads scheduling needs.
//!
//! Every decision is made by `datadiff-diff-core`'s pure rules ([`decide_start`],
//! [`decide_remediation`]) on rows read under [`AdvisoryLock::Check`]; this module only
//! reads what they need and writes what they decide, each operation in its own transaction
//! (runs note §3.1: T1 start, T3 historical start).

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{
    AttemptFacts, Bounds, CheckId, PreflightId, RevisionHistory, RunId, RunStatus, Skip, StartDecision, StartKind,
    StartRequest, TriggerType, decide_remediation, decide_start,
};
use datadiff_diff_core::definition::StoredDefinition;
use postgres::Transaction;
use uuid::Uuid;

use crate::error::Error;
use crate::lock::AdvisoryLock;
use crate::rows::{self, ATTEMPT_COLUMNS, get, parse};
use crate::store::Store;

/// A `dd_run_attempts` row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The attempt's id.
    pub run_id: RunId,
    /// The definition revision it runs.
    pub check_id: CheckId,
    /// Its cron slot.
    pub scheduled_for: DateTime<Utc>,
    /// Its window (`window_start` NULL while a historical start is unresolved).
    pub bounds: Bounds,
    /// Its number within the slot, shared by every trigger.
    pub attempt: i32,
    /// Why it was started.
    pub trigger: TriggerType,
    /// RUNNING or its outcome.
    pub status: RunStatus,
    /// For a remediation: the root original run.
    pub rerun_of_run_id: Option<RunId>,
    /// For a remediation: the operator's reference.
    pub remediation_reference: Option<String>,
    /// Its preflight record, once written.
    pub preflight_id: Option<PreflightId>,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it finished.
    pub finished_at: Option<DateTime<Utc>>,
    /// Why it did not pass (or was deferred).
    pub error: Option<String>,
}

impl Attempt {
    /// What the pure decisions need to know about it.
    pub fn facts(&self) -> AttemptFacts {
        AttemptFacts {
            run_id: self.run_id,
            attempt: self.attempt,
            trigger: self.trigger,
            status: self.status,
            bounds: self.bounds,
            started_at: self.started_at,
            finished_at: self.finished_at,
            rerun_of_run_id: self.rerun_of_run_id,
        }
    }
}

/// What [`Store::start_attempt`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartOutcome {
    /// A RUNNING attempt was inserted; the caller holds its lease.
    Started(Attempt),
    /// Nothing was written; report SKIPPED with this reason and slot facts.
    Skipped(Skip),
}

/// A failed slot eligible for an automatic retry now (from [`Store::retry_candidates`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryCandidate {
    /// The slot.
    pub scheduled_for: DateTime<Utc>,
    /// The slot's effective attempt (`dd_run_slot_state.run_id`).
    pub run_id: RunId,
    /// Its number.
    pub attempt: i32,
    /// FAIL or ERROR.
    pub status: RunStatus,
    /// Its window.
    pub bounds: Bounds,
    /// The latest start or finish time of any attempt of the slot.
    pub last_activity: DateTime<Utc>,
}

/// A started remediation (from [`Store::start_remediation`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remediation {
    /// The exact revision of the remediated run (current or not): its checks, columns and
    /// statement timeout are the ones to run.
    pub definition: StoredDefinition,
    /// The run given to `rerun`, as it was when the remediation started.
    pub original: Attempt,
    /// The new RUNNING REMEDIATION attempt.
    pub attempt: Attempt,
}

fn slot_attempts(
    tx: &mut Transaction<'_>,
    check_id: CheckId,
    scheduled_for: DateTime<Utc>,
) -> Result<Vec<Attempt>, Error> {
    let rows = tx
        .query(
            &format!(
                "SELECT {ATTEMPT_COLUMNS} FROM public.dd_run_attempts WHERE check_id = $1 AND scheduled_for = $2 \
                 ORDER BY attempt DESC"
            ),
            &[&check_id.get(), &scheduled_for],
        )
        .map_err(Error::query("reading the attempts of a slot"))?;
    rows.iter().map(rows::attempt).collect()
}

fn revision_history(tx: &mut Transaction<'_>, check_id: CheckId) -> Result<RevisionHistory, Error> {
    let row = tx
        .query_one(
            "SELECT \
               EXISTS (SELECT 1 FROM public.dd_run_attempts WHERE check_id = $1 \
                       AND trigger_type <> 'REMEDIATION' AND status <> 'DEFERRED') AS has_previous_run, \
               EXISTS (SELECT 1 FROM public.dd_run_attempts WHERE check_id = $1 \
                       AND status = 'RUNNING' AND window_start IS NULL) AS has_pending_historical_run",
            &[&check_id.get()],
        )
        .map_err(Error::query("reading the history of a check"))?;
    Ok(RevisionHistory {
        has_previous_run: get(&row, "has_previous_run")?,
        has_pending_historical_run: get(&row, "has_pending_historical_run")?,
    })
}

struct Insert<'a> {
    check_id: CheckId,
    scheduled_for: DateTime<Utc>,
    attempt: i32,
    trigger: TriggerType,
    bounds: Bounds,
    rerun_of_run_id: Option<RunId>,
    remediation_reference: Option<&'a str>,
    started_at: DateTime<Utc>,
}

fn insert_running(tx: &mut Transaction<'_>, insert: &Insert<'_>) -> Result<Attempt, Error> {
    let row = tx
        .query_one(
            &format!(
                "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, \
                 attempt, trigger_type, status, rerun_of_run_id, remediation_reference, preflight_id, started_at, \
                 finished_at, error) VALUES ($1, $2, $3, $4, $5, $6, $7, 'RUNNING', $8, $9, NULL, $10, NULL, NULL) \
                 RETURNING {ATTEMPT_COLUMNS}"
            ),
            &[
                &Uuid::new_v4(),
                &insert.check_id.get(),
                &insert.scheduled_for,
                &insert.bounds.start,
                &insert.bounds.end,
                &insert.attempt,
                &insert.trigger.as_str(),
                &insert.rerun_of_run_id.map(RunId::get),
                &insert.remediation_reference,
                &insert.started_at,
            ],
        )
        .map_err(Error::query("inserting an attempt"))?;
    rows::attempt(&row)
}

/// A slot's latest attempt activity (any attempt's start or finish) and whether an attempt
/// of it is RUNNING, joined to `dd_run_slot_state s` as `slot_activity`: what retries and
/// re-verifications both wait on.
const SLOT_ACTIVITY: &str = "CROSS JOIN LATERAL ( \
     SELECT max(GREATEST(a.started_at, a.finished_at)) AS last_activity, bool_or(a.status = 'RUNNING') AS running \
       FROM public.dd_run_attempts a \
      WHERE a.check_id = s.check_id AND a.scheduled_for = s.scheduled_for) slot_activity";

impl Store {
    /// Starts an attempt of `scheduled_for` (runs note §1.4–§1.5, §2.1; T1): under
    /// [`AdvisoryLock::Check`], reads the slot's attempts (and, for a fresh slot, whether the
    /// revision has a previous run or a pending historical discovery), decides with
    /// [`decide_start`] and inserts the RUNNING attempt with `started_at = now`.
    ///
    /// `kind` is a due slot (`force` for `--force`) or a retry (`retry_before` = the current
    /// slot). The window is the definition's rolling window of the slot; a first run of a
    /// definition that [starts with a full scan](datadiff_diff_core::definition::CheckDefinition::starts_with_full_scan)
    /// gets an unresolved start instead.
    pub fn start_attempt(
        &self,
        definition: &StoredDefinition,
        scheduled_for: DateTime<Utc>,
        kind: StartKind,
        now: DateTime<Utc>,
    ) -> Result<StartOutcome, Error> {
        let check_id = definition.check_id;
        let window =
            definition.definition.window(scheduled_for).ok_or(Error::WindowOutOfRange { check_id, scheduled_for })?;
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("starting an attempt"))?;
        AdvisoryLock::Check(check_id).acquire(&mut tx)?;
        let attempts = slot_attempts(&mut tx, check_id, scheduled_for)?;
        let facts: Vec<AttemptFacts> = attempts.iter().map(Attempt::facts).collect();
        // The revision's history only matters to a fresh slot (upstream reads it only then).
        let history = match (kind, facts.is_empty()) {
            (StartKind::Scheduled { .. }, true) => revision_history(&mut tx, check_id)?,
            _ => RevisionHistory::default(),
        };
        let request = StartRequest {
            kind,
            scheduled_for,
            slot_attempts: &facts,
            history,
            full_scan_eligible: definition.definition.starts_with_full_scan(),
            window,
        };
        let new = match decide_start(&request) {
            StartDecision::Skip(skip) => return Ok(StartOutcome::Skipped(skip)),
            StartDecision::Start(new) => new,
        };
        let attempt = insert_running(
            &mut tx,
            &Insert {
                check_id,
                scheduled_for,
                attempt: new.attempt,
                trigger: new.trigger,
                bounds: new.bounds,
                rerun_of_run_id: None,
                remediation_reference: None,
                started_at: now,
            },
        )?;
        tx.commit().map_err(Error::query("committing an attempt start"))?;
        Ok(StartOutcome::Started(attempt))
    }

    /// Starts a remediation of `run_id` with `reference` (runs note §2.2): loads the run
    /// ([`Error::UnknownRun`] if none), then under [`AdvisoryLock::Check`] of its revision
    /// re-reads the slot's attempts and decides with [`decide_remediation`]: refusals are
    /// [`Error::Remediation`] with upstream's messages. The new attempt is REMEDIATION, the
    /// slot's highest attempt + 1, linked to the root original, with `started_at = now`.
    /// Returns the exact revision of the run (not necessarily current) with both attempts.
    pub fn start_remediation(&self, run_id: RunId, reference: &str, now: DateTime<Utc>) -> Result<Remediation, Error> {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("starting a remediation"))?;
        let row = tx
            .query_opt("SELECT check_id, scheduled_for FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
            .map_err(Error::query("reading the run to remediate"))?
            .ok_or(Error::UnknownRun(run_id))?;
        let check_id = CheckId::new(get(&row, "check_id")?);
        let scheduled_for: DateTime<Utc> = get(&row, "scheduled_for")?;
        AdvisoryLock::Check(check_id).acquire(&mut tx)?;
        let attempts = slot_attempts(&mut tx, check_id, scheduled_for)?;
        let original =
            attempts.iter().find(|attempt| attempt.run_id == run_id).cloned().ok_or(Error::UnknownRun(run_id))?;
        let facts: Vec<AttemptFacts> = attempts.iter().map(Attempt::facts).collect();
        let new = decide_remediation(&original.facts(), reference, &facts).map_err(Error::Remediation)?;
        let definition_row = tx
            .query_opt(
                &format!("SELECT {} FROM public.dd_check_definitions WHERE check_id = $1", rows::DEFINITION_COLUMNS),
                &[&check_id.get()],
            )
            .map_err(Error::query("reading the definition to remediate"))?
            .ok_or(Error::UnknownCheck(check_id))?;
        let definition = rows::definition(&definition_row)?;
        let attempt = insert_running(
            &mut tx,
            &Insert {
                check_id,
                scheduled_for,
                attempt: new.attempt,
                trigger: TriggerType::Remediation,
                bounds: new.bounds,
                rerun_of_run_id: Some(new.rerun_of_run_id),
                remediation_reference: Some(&new.remediation_reference),
                started_at: now,
            },
        )?;
        tx.commit().map_err(Error::query("committing a remediation start"))?;
        Ok(Remediation { definition, original, attempt })
    }

    /// Records the historical start a RUNNING attempt resolved (runs note §1.5; T3), before
    /// comparing, so it survives a later failure: only an unresolved start of a RUNNING
    /// attempt is set. Otherwise nothing is written and the error says why:
    /// [`Error::LeaseLost`] (no longer RUNNING), [`Error::StartAlreadyResolved`], or
    /// [`Error::UnknownRun`]. The start must be before the attempt's cutoff (the schema's
    /// `window_start < window_end`).
    pub fn resolve_historical_start(&self, run_id: RunId, start: DateTime<Utc>) -> Result<(), Error> {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("recording a historical start"))?;
        let updated = tx
            .execute(
                "UPDATE public.dd_run_attempts SET window_start = $2 \
                 WHERE run_id = $1 AND status = 'RUNNING' AND window_start IS NULL",
                &[&run_id.get(), &start],
            )
            .map_err(Error::query("recording a historical start"))?;
        if updated == 0 {
            let status = tx
                .query_opt("SELECT status FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
                .map_err(Error::query("reading an attempt's status"))?
                .ok_or(Error::UnknownRun(run_id))?;
            let status: RunStatus = parse("dd_run_attempts.status", get(&status, "status")?)?;
            return Err(if status == RunStatus::Running {
                Error::StartAlreadyResolved { run_id }
            } else {
                Error::LeaseLost { run_id, status }
            });
        }
        tx.commit().map_err(Error::query("committing a historical start"))?;
        Ok(())
    }

    /// The failed slots of `check_id` an automatic retry may take now (runs note §2.1):
    /// slot state FAIL or ERROR, slot before `retry_before` (the current slot), no RUNNING
    /// attempt in the slot and every attempt's latest start or finish before `retry_before`
    /// — at most once per cron interval. Least recently attempted first, then by slot; at
    /// most `limit` (upstream: 24). [`Store::start_attempt`] with [`StartKind::Retry`]
    /// re-checks each under the lock.
    pub fn retry_candidates(
        &self,
        check_id: CheckId,
        retry_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<RetryCandidate>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .connection()?
            .query(
                &format!(
                    "SELECT s.scheduled_for, s.run_id, s.attempt, s.status, s.window_start, s.window_end, \
                            slot_activity.last_activity \
                       FROM public.dd_run_slot_state s {SLOT_ACTIVITY} \
                      WHERE s.check_id = $1 AND s.status IN ('FAIL', 'ERROR') AND s.scheduled_for < $2 \
                        AND slot_activity.last_activity < $2 AND NOT slot_activity.running \
                      ORDER BY slot_activity.last_activity, s.scheduled_for \
                      LIMIT $3"
                ),
                &[&check_id.get(), &retry_before, &limit],
            )
            .map_err(Error::query("listing retry candidates"))?;
        rows.iter()
            .map(|row| {
                Ok(RetryCandidate {
                    scheduled_for: get(row, "scheduled_for")?,
                    run_id: RunId::new(get(row, "run_id")?),
                    attempt: get(row, "attempt")?,
                    status: parse("dd_run_slot_state.status", get(row, "status")?)?,
                    bounds: Bounds { start: get(row, "window_start")?, end: get(row, "window_end")? },
                    last_activity: get(row, "last_activity")?,
                })
            })
            .collect()
    }

    /// The verified slots of `check_id` due for re-verification (`checks.<name>.reverify`;
    /// [`is_reverification_due`](datadiff_diff_core::attempt::is_reverification_due) in SQL):
    /// slot state PASS, no RUNNING attempt in the slot, and every attempt's latest start or
    /// finish before `verified_before` (`now` minus the period). Least recently attempted
    /// first, then by slot; at most `limit`. [`Store::start_attempt`] with
    /// [`StartKind::Reverify`] re-checks each under the lock.
    pub fn reverification_candidates(
        &self,
        check_id: CheckId,
        verified_before: DateTime<Utc>,
        limit: usize,
    ) -> Result<Vec<DateTime<Utc>>, Error> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = self
            .connection()?
            .query(
                &format!(
                    "SELECT s.scheduled_for FROM public.dd_run_slot_state s {SLOT_ACTIVITY} \
                      WHERE s.check_id = $1 AND s.status = 'PASS' \
                        AND slot_activity.last_activity < $2 AND NOT slot_activity.running \
                      ORDER BY slot_activity.last_activity, s.scheduled_for \
                      LIMIT $3"
                ),
                &[&check_id.get(), &verified_before, &limit],
            )
            .map_err(Error::query("listing re-verification candidates"))?;
        rows.iter().map(|row| get(row, "scheduled_for")).collect()
    }

    /// The newest `scheduled_for` of the revision's attempts that are not remediations (any
    /// status, DEFERRED and RUNNING included): the input of
    /// [`due_slots`](datadiff_diff_core::attempt::due_slots).
    pub fn latest_scheduled_for(&self, check_id: CheckId) -> Result<Option<DateTime<Utc>>, Error> {
        let row = self
            .connection()?
            .query_one(
                "SELECT max(scheduled_for) AS latest FROM public.dd_run_attempts \
                 WHERE check_id = $1 AND trigger_type <> 'REMEDIATION'",
                &[&check_id.get()],
            )
            .map_err(Error::query("reading the latest slot"))?;
        get(&row, "latest")
    }

    /// One attempt by id.
    pub fn attempt(&self, run_id: RunId) -> Result<Option<Attempt>, Error> {
        let row = self
            .connection()?
            .query_opt(
                &format!("SELECT {ATTEMPT_COLUMNS} FROM public.dd_run_attempts WHERE run_id = $1"),
                &[&run_id.get()],
            )
            .map_err(Error::query("reading an attempt"))?;
        row.as_ref().map(rows::attempt).transpose()
    }

    /// Every attempt of a slot, newest (highest attempt number) first.
    pub fn slot_attempts(&self, check_id: CheckId, scheduled_for: DateTime<Utc>) -> Result<Vec<Attempt>, Error> {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("reading the attempts of a slot"))?;
        let attempts = slot_attempts(&mut tx, check_id, scheduled_for)?;
        tx.commit().map_err(Error::query("reading the attempts of a slot"))?;
        Ok(attempts)
    }
}
