//! The reports of `datadiff report` (SPEC §8): the columns and meaning of the four
//! reporting queries of PipelineWise's backend page (watermarks, daily results, unresolved
//! failures, remediations), in datadiff's own SQL, the `--max-lag` verdict, and the rows of
//! `report metrics` (the watermark report plus each definition's latest attempt and open
//! failures).
//!
//! The one deliberate difference: the watermark lag is computed from the `now` given (the
//! CLI's `--at`, or the current time), not from the server's `CURRENT_TIMESTAMP`, so a
//! replay reports the lag it would have reported then. Rows come in the queries' order;
//! the remediation report, which upstream leaves unordered, is ordered by failure time,
//! name, failed run and remediation attempt.

use std::collections::HashMap;
use std::fmt;

use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use datadiff_diff_core::attempt::{CheckId, ResultStatus, RunId, RunStatus, TriggerType};
use postgres::{GenericClient, IsolationLevel};
use uuid::Uuid;

use crate::error::Error;
use crate::rows::{get, parse};
use crate::store::Store;

/// A current definition's watermark status in the report: its `verified_status`, or
/// `NOT_RUN` before its first evaluated attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatermarkStatus {
    /// Passing windows cover everything observed.
    Contiguous,
    /// Something stops the verified interval short of the furthest observed end.
    Blocked,
    /// No evaluated attempt yet.
    NotRun,
}

impl WatermarkStatus {
    /// `CONTIGUOUS`, `BLOCKED` or `NOT_RUN`.
    pub fn as_str(self) -> &'static str {
        match self {
            WatermarkStatus::Contiguous => "CONTIGUOUS",
            WatermarkStatus::Blocked => "BLOCKED",
            WatermarkStatus::NotRun => "NOT_RUN",
        }
    }
}

impl std::str::FromStr for WatermarkStatus {
    type Err = Error;

    fn from_str(text: &str) -> Result<WatermarkStatus, Error> {
        match text {
            "CONTIGUOUS" => Ok(WatermarkStatus::Contiguous),
            "BLOCKED" => Ok(WatermarkStatus::Blocked),
            "NOT_RUN" => Ok(WatermarkStatus::NotRun),
            _ => Err(Error::UnexpectedValue { column: "dd_watermark_state.verified_status", value: text.to_owned() }),
        }
    }
}

impl fmt::Display for WatermarkStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A row of the watermark report: one per current definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkReportRow {
    /// The revision's id (not a column of upstream's query; for scrapers and `rerun`).
    pub check_id: CheckId,
    /// `full_check_name`.
    pub full_check_name: String,
    /// `revision`.
    pub revision: i32,
    /// `source_database`.
    pub source_database: String,
    /// `source_schema`.
    pub source_schema: String,
    /// `source_table`.
    pub source_table: String,
    /// `target_database`.
    pub target_database: String,
    /// `target_schema`.
    pub target_schema: String,
    /// `target_table`.
    pub target_table: String,
    /// `verified_status`, `NOT_RUN` without a watermark.
    pub verified_status: WatermarkStatus,
    /// `verified_start`.
    pub verified_start: Option<DateTime<Utc>>,
    /// `verified_end`.
    pub verified_end: Option<DateTime<Utc>>,
    /// `furthest_observed_end`.
    pub furthest_observed_end: Option<DateTime<Utc>>,
    /// `verification_lag`: `now - verified_end` (negative when `now` is before it).
    pub verification_lag: Option<TimeDelta>,
    /// `blocking_run_id`.
    pub blocking_run_id: Option<RunId>,
    /// `last_evaluated_run_id`.
    pub last_evaluated_run_id: Option<RunId>,
    /// `watermark_updated_at`.
    pub watermark_updated_at: Option<DateTime<Utc>>,
    /// `reason`.
    pub reason: Option<String>,
    /// The least recent latest start or finish among the slots whose state is PASS: when the
    /// oldest verification still standing was made (`checks.<name>.reverify` keeps it within
    /// its period). `None` without a PASS slot.
    pub oldest_verification: Option<DateTime<Utc>>,
    /// `now - oldest_verification`: the age of the oldest slot not re-verified since.
    pub oldest_verification_age: Option<TimeDelta>,
}

/// A row of the daily report: per definition name and tables, per UTC day of the attempt's
/// finish (or start), counts over terminal attempts of every revision and trigger.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DailyReportRow {
    /// `full_check_name`.
    pub full_check_name: String,
    /// `source_database`.
    pub source_database: String,
    /// `source_schema`.
    pub source_schema: String,
    /// `source_table`.
    pub source_table: String,
    /// `target_database`.
    pub target_database: String,
    /// `target_schema`.
    pub target_schema: String,
    /// `target_table`.
    pub target_table: String,
    /// `check_date`.
    pub check_date: NaiveDate,
    /// `successful_check_results`: PASS result rows.
    pub successful_check_results: i64,
    /// `failed_check_results`: FAIL and ERROR result rows.
    pub failed_check_results: i64,
    /// `run_level_errors`: ERROR attempts without any result row.
    pub run_level_errors: i64,
}

/// A row of the unresolved-failure report: per failed slot of a current definition, one row
/// per FAIL/ERROR result of its effective attempt, or one run-level row without any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureReportRow {
    /// `full_check_name`.
    pub full_check_name: String,
    /// `revision`.
    pub revision: i32,
    /// `source_schema`.
    pub source_schema: String,
    /// `source_table`.
    pub source_table: String,
    /// `scheduled_for`.
    pub scheduled_for: DateTime<Utc>,
    /// `window_start` (NULL while unresolved).
    pub window_start: Option<DateTime<Utc>>,
    /// `window_end`.
    pub window_end: DateTime<Utc>,
    /// `run_id`: the slot's effective attempt.
    pub run_id: RunId,
    /// `attempt`.
    pub attempt: i32,
    /// `trigger_type`.
    pub trigger_type: TriggerType,
    /// `failed_check`: the check type, or `<run-level error>`.
    pub failed_check: String,
    /// `failure_status`: the result's status, else the slot's.
    pub failure_status: ResultStatus,
    /// `error`: the result's error, else the attempt's.
    pub error: Option<String>,
    /// `blocks_watermark`: the slot's run is the watermark's blocker.
    pub blocks_watermark: bool,
    /// `finished_at`.
    pub finished_at: Option<DateTime<Utc>>,
}

/// A row of the remediation report: per failed root run (not itself a remediation), one row
/// per remediation linked to it, or one row without any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemediationReportRow {
    /// `full_check_name`.
    pub full_check_name: String,
    /// `revision`.
    pub revision: i32,
    /// `failed_run_id`.
    pub failed_run_id: RunId,
    /// `failed_status`: FAIL or ERROR.
    pub failed_status: RunStatus,
    /// `window_start` of the failed run.
    pub window_start: Option<DateTime<Utc>>,
    /// `window_end` of the failed run.
    pub window_end: DateTime<Utc>,
    /// `failed_at`: when the failed run finished.
    pub failed_at: Option<DateTime<Utc>>,
    /// `remediation_run_id`.
    pub remediation_run_id: Option<RunId>,
    /// `remediation_attempt`.
    pub remediation_attempt: Option<i32>,
    /// `remediation_status` (RUNNING while in progress).
    pub remediation_status: Option<RunStatus>,
    /// `remediation_reference`.
    pub remediation_reference: Option<String>,
    /// `remediation_finished_at`.
    pub remediation_finished_at: Option<DateTime<Utc>>,
    /// `recovered`: the remediation passed.
    pub recovered: bool,
}

/// The newest attempt of a definition (by start, then attempt number), whatever its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastAttempt {
    /// Its run id.
    pub run_id: RunId,
    /// RUNNING, PASS, FAIL, ERROR or DEFERRED.
    pub status: RunStatus,
    /// Why it was started.
    pub trigger_type: TriggerType,
    /// `started_at`.
    pub started_at: DateTime<Utc>,
    /// `finished_at` (NULL while RUNNING).
    pub finished_at: Option<DateTime<Utc>>,
    /// `now - coalesce(finished_at, started_at)`: how long ago it finished, or started while it
    /// runs (negative when `now` is before it).
    pub age: TimeDelta,
}

/// One row of `dd_watermark_events` ([`Store::watermark_events`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkEventRow {
    /// `check_id`: the revision.
    pub check_id: CheckId,
    /// `evaluated_run_id`: the attempt the event evaluated.
    pub evaluated_run_id: RunId,
    /// `event_type`, as stored.
    pub event_type: String,
    /// `verified_status` after the event, as stored.
    pub verified_status: String,
    /// `verified_end` after the event.
    pub verified_end: Option<DateTime<Utc>>,
    /// `recorded_at`.
    pub recorded_at: DateTime<Utc>,
}

/// A row of `report metrics`: one per current definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsRow {
    /// The definition's watermark, as [`Store::watermark_report`] has it.
    pub watermark: WatermarkReportRow,
    /// `target_id`.
    pub target_id: String,
    /// `tap_id`.
    pub tap_id: String,
    /// The newest attempt of this revision; `None` before its first.
    pub last_attempt: Option<LastAttempt>,
    /// Slots of this revision whose state is FAIL or ERROR: the unresolved failures
    /// `report failures` lists (one slot each).
    pub open_failures: i64,
    /// The check's latest replica horizon reading (`checks.<name>.horizon`), by its
    /// `full_check_name`; `None` without one (or without extension 2).
    pub replica_horizon: Option<crate::ReplicaHorizon>,
}

/// Why a current definition fails `report watermarks --max-lag`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LagProblem {
    /// Its watermark is BLOCKED.
    Blocked,
    /// It has no watermark yet.
    NotRun,
    /// CONTIGUOUS, but its verified end is more than the allowed lag behind `now`.
    Lagging {
        /// `now - verified_end`.
        lag: TimeDelta,
    },
}

impl LagProblem {
    /// `BLOCKED`, `NOT_RUN` or `LAGGING`.
    pub fn as_str(self) -> &'static str {
        match self {
            LagProblem::Blocked => "BLOCKED",
            LagProblem::NotRun => "NOT_RUN",
            LagProblem::Lagging { .. } => "LAGGING",
        }
    }
}

/// A definition failing the lag verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagOffender {
    /// The revision.
    pub check_id: CheckId,
    /// Its name.
    pub full_check_name: String,
    /// Why.
    pub problem: LagProblem,
}

/// The `--max-lag` verdict over the watermark report: the command exits 1 unless it passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LagVerdict {
    /// The allowed lag.
    pub max_lag: TimeDelta,
    /// Current definitions that are BLOCKED, not run, or lag more than `max_lag`, in report
    /// order.
    pub offenders: Vec<LagOffender>,
}

impl LagVerdict {
    /// Judges the rows of [`Store::watermark_report`]: a definition offends when BLOCKED,
    /// NOT_RUN, or CONTIGUOUS with a lag strictly greater than `max_lag`.
    pub fn judge(rows: &[WatermarkReportRow], max_lag: TimeDelta) -> LagVerdict {
        let offenders = rows
            .iter()
            .filter_map(|row| {
                let problem = match row.verified_status {
                    WatermarkStatus::Blocked => LagProblem::Blocked,
                    WatermarkStatus::NotRun => LagProblem::NotRun,
                    WatermarkStatus::Contiguous => match row.verification_lag {
                        Some(lag) if lag > max_lag => LagProblem::Lagging { lag },
                        Some(_) => return None,
                        // CONTIGUOUS always has a verified end (the schema's constraints).
                        None => LagProblem::Blocked,
                    },
                };
                Some(LagOffender { check_id: row.check_id, full_check_name: row.full_check_name.clone(), problem })
            })
            .collect();
        LagVerdict { max_lag, offenders }
    }

    /// Whether every current definition is CONTIGUOUS within the allowed lag.
    pub fn passed(&self) -> bool {
        self.offenders.is_empty()
    }
}

/// The watermark report's query on `client` (a pooled session or a snapshot).
fn watermark_rows(client: &mut impl GenericClient, now: DateTime<Utc>) -> Result<Vec<WatermarkReportRow>, Error> {
    let rows = client
        .query(
            "SELECT def.check_id, def.full_check_name, def.revision, def.source_database, def.source_schema, \
                    def.source_table, def.target_database, def.target_schema, def.target_table, \
                    coalesce(wm.verified_status, 'NOT_RUN') AS verified_status, \
                    wm.verified_start, wm.verified_end, wm.furthest_observed_end, \
                    round(extract(epoch FROM ($1::timestamptz - wm.verified_end)) * 1000000)::bigint \
                        AS lag_microseconds, \
                    wm.blocking_run_id, wm.last_evaluated_run_id, wm.updated_at, wm.reason, \
                    verification.oldest_verification, \
                    round(extract(epoch FROM ($1::timestamptz - verification.oldest_verification)) * 1000000)::bigint \
                        AS oldest_verification_microseconds \
               FROM public.dd_check_definitions def \
               LEFT OUTER JOIN public.dd_watermark_state wm USING (check_id) \
               LEFT OUTER JOIN LATERAL ( \
                    SELECT min(slot_activity.last_activity) AS oldest_verification \
                      FROM public.dd_run_slot_state slot \
                      CROSS JOIN LATERAL ( \
                           SELECT max(GREATEST(att.started_at, att.finished_at)) AS last_activity \
                             FROM public.dd_run_attempts att \
                            WHERE att.check_id = slot.check_id AND att.scheduled_for = slot.scheduled_for) slot_activity \
                     WHERE slot.check_id = def.check_id AND slot.status = 'PASS') verification ON true \
              WHERE def.is_current \
              ORDER BY def.target_id, def.tap_id, def.source_schema, def.source_table, def.full_check_name",
            &[&now],
        )
        .map_err(Error::query("reading the watermark report"))?;
    rows.iter()
        .map(|row| {
            Ok(WatermarkReportRow {
                check_id: CheckId::new(get(row, "check_id")?),
                full_check_name: get(row, "full_check_name")?,
                revision: get(row, "revision")?,
                source_database: get(row, "source_database")?,
                source_schema: get(row, "source_schema")?,
                source_table: get(row, "source_table")?,
                target_database: get(row, "target_database")?,
                target_schema: get(row, "target_schema")?,
                target_table: get(row, "target_table")?,
                verified_status: get::<String>(row, "verified_status")?.parse()?,
                verified_start: get(row, "verified_start")?,
                verified_end: get(row, "verified_end")?,
                furthest_observed_end: get(row, "furthest_observed_end")?,
                verification_lag: get::<Option<i64>>(row, "lag_microseconds")?.map(TimeDelta::microseconds),
                blocking_run_id: run_id(get(row, "blocking_run_id")?),
                last_evaluated_run_id: run_id(get(row, "last_evaluated_run_id")?),
                watermark_updated_at: get(row, "updated_at")?,
                reason: get(row, "reason")?,
                oldest_verification: get(row, "oldest_verification")?,
                oldest_verification_age: get::<Option<i64>>(row, "oldest_verification_microseconds")?
                    .map(TimeDelta::microseconds),
            })
        })
        .collect()
}

fn run_id(value: Option<Uuid>) -> Option<RunId> {
    value.map(RunId::new)
}

impl Store {
    /// The watermark of every current definition, ordered by target, tap, source schema and
    /// table; the lag is measured from `now`.
    pub fn watermark_report(&self, now: DateTime<Utc>) -> Result<Vec<WatermarkReportRow>, Error> {
        watermark_rows(&mut *self.connection()?, now)
    }

    /// The rows of `report metrics`: [`Store::watermark_report`] at `now`, with each current
    /// definition's target and tap ids, its latest attempt and its open failures, read in one
    /// read-only snapshot; in the watermark report's order.
    pub fn metrics_report(&self, now: DateTime<Utc>) -> Result<Vec<MetricsRow>, Error> {
        let mut connection = self.connection()?;
        let mut transaction = connection
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(Error::query("starting the metrics snapshot"))?;
        let watermarks = watermark_rows(&mut transaction, now)?;
        let activity = transaction
            .query(
                "SELECT def.check_id, def.target_id, def.tap_id, latest.run_id, latest.status, latest.trigger_type, \
                        latest.started_at, latest.finished_at, \
                        round(extract(epoch FROM ($1::timestamptz - coalesce(latest.finished_at, latest.started_at))) \
                            * 1000000)::bigint AS age_microseconds, \
                        (SELECT count(*) FROM public.dd_run_slot_state slot \
                          WHERE slot.check_id = def.check_id AND slot.status = ANY (ARRAY['FAIL', 'ERROR'])) \
                            AS open_failures \
                   FROM public.dd_check_definitions def \
                   LEFT OUTER JOIN LATERAL ( \
                        SELECT att.run_id, att.status, att.trigger_type, att.started_at, att.finished_at \
                          FROM public.dd_run_attempts att \
                         WHERE att.check_id = def.check_id \
                         ORDER BY att.started_at DESC, att.attempt DESC, att.run_id DESC \
                         LIMIT 1) latest ON true \
                  WHERE def.is_current",
                &[&now],
            )
            .map_err(Error::query("reading the metrics report"))?;
        let mut by_check = HashMap::with_capacity(activity.len());
        for row in &activity {
            let last_attempt = match get::<Option<Uuid>>(row, "run_id")? {
                None => None,
                Some(run) => Some(LastAttempt {
                    run_id: RunId::new(run),
                    status: parse("dd_run_attempts.status", get(row, "status")?)?,
                    trigger_type: parse("dd_run_attempts.trigger_type", get(row, "trigger_type")?)?,
                    started_at: get(row, "started_at")?,
                    finished_at: get(row, "finished_at")?,
                    age: TimeDelta::microseconds(get(row, "age_microseconds")?),
                }),
            };
            let entry: (String, String, Option<LastAttempt>, i64) =
                (get(row, "target_id")?, get(row, "tap_id")?, last_attempt, get(row, "open_failures")?);
            by_check.insert(get::<Uuid>(row, "check_id")?, entry);
        }
        let mut horizons = crate::horizon::replica_horizons(&mut transaction)?;
        transaction.commit().map_err(Error::query("ending the metrics snapshot"))?;
        watermarks
            .into_iter()
            .map(|watermark| {
                let Some((target_id, tap_id, last_attempt, open_failures)) = by_check.remove(&watermark.check_id.get())
                else {
                    // The same snapshot answered both queries: a current definition is in both.
                    return Err(Error::UnexpectedValue {
                        column: "dd_check_definitions.check_id",
                        value: watermark.check_id.to_string(),
                    });
                };
                let replica_horizon = horizons.remove(&watermark.full_check_name);
                Ok(MetricsRow { watermark, target_id, tap_id, last_attempt, open_failures, replica_horizon })
            })
            .collect()
    }

    /// Result counts per definition name, tables and UTC day, over every terminal (PASS,
    /// FAIL, ERROR) attempt of every revision and trigger; newest day first, then by name.
    pub fn daily_report(&self) -> Result<Vec<DailyReportRow>, Error> {
        let rows = self
            .connection()?
            .query(
                "WITH terminal AS ( \
                     SELECT att.run_id, att.check_id, att.status AS run_status, \
                            (coalesce(att.finished_at, att.started_at) AT TIME ZONE 'UTC')::date AS check_date \
                       FROM public.dd_run_attempts att \
                      WHERE att.status = ANY (ARRAY['PASS', 'FAIL', 'ERROR'])) \
                 SELECT def.full_check_name, def.source_database, def.source_schema, def.source_table, \
                        def.target_database, def.target_schema, def.target_table, terminal.check_date, \
                        count(res.run_id) FILTER (WHERE res.status = 'PASS') AS passed, \
                        count(res.run_id) FILTER (WHERE res.status = ANY (ARRAY['FAIL', 'ERROR'])) AS failed, \
                        count(*) FILTER (WHERE res.run_id IS NULL AND terminal.run_status = 'ERROR') AS run_errors \
                   FROM terminal \
                   JOIN public.dd_check_definitions def ON def.check_id = terminal.check_id \
                   LEFT OUTER JOIN public.dd_run_results res ON res.run_id = terminal.run_id \
                  GROUP BY def.full_check_name, def.source_database, def.source_schema, def.source_table, \
                           def.target_database, def.target_schema, def.target_table, terminal.check_date \
                  ORDER BY terminal.check_date DESC, def.full_check_name",
                &[],
            )
            .map_err(Error::query("reading the daily report"))?;
        rows.iter()
            .map(|row| {
                Ok(DailyReportRow {
                    full_check_name: get(row, "full_check_name")?,
                    source_database: get(row, "source_database")?,
                    source_schema: get(row, "source_schema")?,
                    source_table: get(row, "source_table")?,
                    target_database: get(row, "target_database")?,
                    target_schema: get(row, "target_schema")?,
                    target_table: get(row, "target_table")?,
                    check_date: get(row, "check_date")?,
                    successful_check_results: get(row, "passed")?,
                    failed_check_results: get(row, "failed")?,
                    run_level_errors: get(row, "run_errors")?,
                })
            })
            .collect()
    }

    /// The failed slots of current definitions (slot state FAIL or ERROR), one row per
    /// failing result of the slot's effective attempt or one run-level row; most recently
    /// finished first (unfinished first of all), then by name and check type.
    pub fn failure_report(&self) -> Result<Vec<FailureReportRow>, Error> {
        let rows = self
            .connection()?
            .query(
                "SELECT def.full_check_name, def.revision, def.source_schema, def.source_table, \
                        slot.scheduled_for, slot.window_start, slot.window_end, slot.run_id, att.attempt, \
                        att.trigger_type, coalesce(res.check_type, '<run-level error>') AS failed_check, \
                        coalesce(res.status, slot.status) AS failure_status, coalesce(res.error, att.error) AS error, \
                        (wm.blocking_run_id IS NOT NULL AND wm.blocking_run_id = slot.run_id) AS blocks_watermark, \
                        att.finished_at \
                   FROM public.dd_run_slot_state slot \
                   JOIN public.dd_check_definitions def ON def.check_id = slot.check_id AND def.is_current \
                   JOIN public.dd_run_attempts att ON att.run_id = slot.run_id \
                   LEFT OUTER JOIN public.dd_run_results res \
                     ON res.run_id = slot.run_id AND res.status = ANY (ARRAY['FAIL', 'ERROR']) \
                   LEFT OUTER JOIN public.dd_watermark_state wm ON wm.check_id = slot.check_id \
                  WHERE slot.status = ANY (ARRAY['FAIL', 'ERROR']) \
                  ORDER BY att.finished_at DESC NULLS FIRST, def.full_check_name, res.check_type NULLS LAST",
                &[],
            )
            .map_err(Error::query("reading the failure report"))?;
        rows.iter()
            .map(|row| {
                Ok(FailureReportRow {
                    full_check_name: get(row, "full_check_name")?,
                    revision: get(row, "revision")?,
                    source_schema: get(row, "source_schema")?,
                    source_table: get(row, "source_table")?,
                    scheduled_for: get(row, "scheduled_for")?,
                    window_start: get(row, "window_start")?,
                    window_end: get(row, "window_end")?,
                    run_id: RunId::new(get(row, "run_id")?),
                    attempt: get(row, "attempt")?,
                    trigger_type: parse("dd_run_attempts.trigger_type", get(row, "trigger_type")?)?,
                    failed_check: get(row, "failed_check")?,
                    failure_status: parse("dd_run_results.status", get(row, "failure_status")?)?,
                    error: get(row, "error")?,
                    blocks_watermark: get(row, "blocks_watermark")?,
                    finished_at: get(row, "finished_at")?,
                })
            })
            .collect()
    }

    /// Every watermark event (`dd_watermark_events`) of every revision, oldest first: how
    /// each evaluated attempt moved its definition's verified coverage.
    pub fn watermark_events(&self) -> Result<Vec<WatermarkEventRow>, Error> {
        let rows = self
            .connection()?
            .query(
                "SELECT check_id, evaluated_run_id, event_type, verified_status, verified_end, recorded_at \
                   FROM public.dd_watermark_events ORDER BY event_sequence",
                &[],
            )
            .map_err(Error::query("reading the watermark events"))?;
        rows.iter()
            .map(|row| {
                Ok(WatermarkEventRow {
                    check_id: CheckId::new(get(row, "check_id")?),
                    evaluated_run_id: RunId::new(get(row, "evaluated_run_id")?),
                    event_type: get(row, "event_type")?,
                    verified_status: get(row, "verified_status")?,
                    verified_end: get(row, "verified_end")?,
                    recorded_at: get(row, "recorded_at")?,
                })
            })
            .collect()
    }

    /// Every failed root run (FAIL or ERROR, not itself a remediation) of every revision,
    /// with the remediations linked to it.
    pub fn remediation_report(&self) -> Result<Vec<RemediationReportRow>, Error> {
        let rows = self
            .connection()?
            .query(
                "SELECT def.full_check_name, def.revision, failed.run_id AS failed_run_id, \
                        failed.status AS failed_status, failed.window_start, failed.window_end, \
                        failed.finished_at AS failed_at, fix.run_id AS remediation_run_id, \
                        fix.attempt AS remediation_attempt, fix.status AS remediation_status, \
                        fix.remediation_reference, fix.finished_at AS remediation_finished_at, \
                        (fix.status IS NOT NULL AND fix.status = 'PASS') AS recovered \
                   FROM public.dd_run_attempts failed \
                   JOIN public.dd_check_definitions def ON def.check_id = failed.check_id \
                   LEFT OUTER JOIN public.dd_run_attempts fix ON fix.rerun_of_run_id = failed.run_id \
                  WHERE failed.rerun_of_run_id IS NULL AND failed.status = ANY (ARRAY['FAIL', 'ERROR']) \
                  ORDER BY failed.finished_at NULLS LAST, def.full_check_name, failed.run_id, fix.attempt NULLS FIRST",
                &[],
            )
            .map_err(Error::query("reading the remediation report"))?;
        rows.iter()
            .map(|row| {
                Ok(RemediationReportRow {
                    full_check_name: get(row, "full_check_name")?,
                    revision: get(row, "revision")?,
                    failed_run_id: RunId::new(get(row, "failed_run_id")?),
                    failed_status: parse("dd_run_attempts.status", get(row, "failed_status")?)?,
                    window_start: get(row, "window_start")?,
                    window_end: get(row, "window_end")?,
                    failed_at: get(row, "failed_at")?,
                    remediation_run_id: run_id(get(row, "remediation_run_id")?),
                    remediation_attempt: get(row, "remediation_attempt")?,
                    remediation_status: get::<Option<String>>(row, "remediation_status")?
                        .map(|text| parse("dd_run_attempts.status", text))
                        .transpose()?,
                    remediation_reference: get(row, "remediation_reference")?,
                    remediation_finished_at: get(row, "remediation_finished_at")?,
                    recovered: get(row, "recovered")?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn row(name: &str, status: WatermarkStatus, lag_minutes: Option<i64>) -> WatermarkReportRow {
        let at = Utc.with_ymd_and_hms(2026, 7, 22, 12, 0, 0).unwrap();
        WatermarkReportRow {
            check_id: CheckId::new(Uuid::from_u128(1)),
            full_check_name: name.into(),
            revision: 1,
            source_database: "s".into(),
            source_schema: "public".into(),
            source_table: "t".into(),
            target_database: "t".into(),
            target_schema: "public".into(),
            target_table: "t".into(),
            verified_status: status,
            verified_start: lag_minutes.map(|_| at),
            verified_end: lag_minutes.map(|_| at),
            furthest_observed_end: lag_minutes.map(|_| at),
            verification_lag: lag_minutes.map(TimeDelta::minutes),
            blocking_run_id: None,
            last_evaluated_run_id: None,
            watermark_updated_at: None,
            reason: None,
            oldest_verification: None,
            oldest_verification_age: None,
        }
    }

    #[test]
    fn blocked_not_run_and_lagging_definitions_fail_the_verdict() {
        let rows = [
            row("fresh", WatermarkStatus::Contiguous, Some(60)),
            row("stale", WatermarkStatus::Contiguous, Some(61)),
            row("blocked", WatermarkStatus::Blocked, Some(1)),
            row("new", WatermarkStatus::NotRun, None),
            row("future", WatermarkStatus::Contiguous, Some(-5)),
        ];
        let verdict = LagVerdict::judge(&rows, TimeDelta::minutes(60));
        let offenders: Vec<(&str, LagProblem)> =
            verdict.offenders.iter().map(|offender| (offender.full_check_name.as_str(), offender.problem)).collect();
        assert_eq!(
            offenders,
            vec![
                ("stale", LagProblem::Lagging { lag: TimeDelta::minutes(61) }),
                ("blocked", LagProblem::Blocked),
                ("new", LagProblem::NotRun),
            ]
        );
        assert!(!verdict.passed());
        assert!(LagVerdict::judge(&rows[..1], TimeDelta::minutes(60)).passed(), "a lag equal to the limit passes");
    }

    #[test]
    fn statuses_round_trip_their_text() {
        for status in [WatermarkStatus::Contiguous, WatermarkStatus::Blocked, WatermarkStatus::NotRun] {
            assert_eq!(status.as_str().parse::<WatermarkStatus>().ok(), Some(status));
        }
    }
}
