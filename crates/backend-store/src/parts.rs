//! A divided `row_diff` window as a queue of parts in the backend (extension 3): the
//! division (`public.datadiff_run_divisions`) and its parts (`public.datadiff_run_parts`),
//! claimed by any process sharing the backend under datadiff's session advisory locks
//! ([`SessionLock`]) — no coordinator.
//!
//! * [`Store::divide`] writes an attempt's division and its parts, once, while the attempt is
//!   RUNNING.
//! * A [`PartSession`] (a backend session of its own, not pooled: session locks belong to a
//!   session) claims the first unfinished part whose lock is free ([`PartSession::claim`]),
//!   writes its outcome with `finished_at` before releasing the lock
//!   ([`PartSession::finish`]), and takes the attempt's owner lock
//!   ([`PartSession::try_own`]).
//! * A finished part is never claimed again. A process that dies holding a part leaves it
//!   unfinished; its session ends, the server releases its lock, and the part is claimable
//!   again: a killed process loses only the part it held.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::RunId;
use postgres::{Client, GenericClient};
use serde_json::Value as Json;

use crate::connection::{Role, connect};
use crate::error::Error;
use crate::lock::SessionLock;
use crate::rows::{get, parse};
use crate::store::Store;

/// How an attempt's window is divided, and what finishing the attempt needs besides its
/// parts (a `datadiff_run_divisions` row).
#[derive(Debug, Clone, PartialEq)]
pub struct Division {
    /// The attempt.
    pub run_id: RunId,
    /// How the first key column is split: `int`, `uuid` or `text`.
    pub split_key: String,
    /// The `row_diff` strategy every part uses: `auto`, `stream` or `segments`.
    pub strategy: String,
    /// The attempt's results computed before `row_diff`, as the runner encodes them.
    pub results: Json,
    /// The aggregate query's failure when `row_diff` ran after it.
    pub error: Option<String>,
    /// The process that divided the window (for observability).
    pub created_by: String,
}

/// One part's key range as stored: the first key column's bounds as text (key values only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartRange {
    /// The part's place in key order, from 0.
    pub index: i32,
    /// The lowest key of the part, included; `None`: from the lowest.
    pub lower: Option<String>,
    /// The key above the part, excluded; `None`: to the highest, with NULL keys.
    pub upper: Option<String>,
}

/// A `datadiff_run_parts` row.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPart {
    /// The part's range.
    pub range: PartRange,
    /// The division's number of parts.
    pub part_count: i32,
    /// When a process last claimed it.
    pub claimed_at: Option<DateTime<Utc>>,
    /// Which process last claimed it.
    pub claimed_by: Option<String>,
    /// When its outcome was written.
    pub finished_at: Option<DateTime<Utc>>,
    /// Its outcome, as the runner encodes it.
    pub outcome: Option<Json>,
}

/// A part claimed by a [`PartSession`]: its lock is held until [`PartSession::finish`] or
/// [`PartSession::release`] (or the session's end).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a claimed part is finished or released"]
pub struct Claim {
    /// The attempt.
    pub run_id: RunId,
    /// The part's range.
    pub range: PartRange,
}

impl Store {
    /// Whether the backend has extension 3's tables (a backend without them compares every
    /// window as one unit).
    pub fn has_run_parts(&self) -> Result<bool, Error> {
        let mut connection = self.connection()?;
        connection
            .query_one("SELECT to_regclass('public.datadiff_run_parts') IS NOT NULL", &[])
            .and_then(|row| row.try_get(0))
            .map_err(Error::query("looking for datadiff_run_parts"))
    }

    /// Writes `division` and its `parts` (at least two, in key order) at `now`, in one
    /// transaction, while the attempt is RUNNING ([`Error::LeaseLost`] otherwise). An attempt
    /// is divided once: a second division of it is refused by the primary key.
    pub fn divide(&self, division: &Division, parts: &[PartRange], now: DateTime<Utc>) -> Result<(), Error> {
        let run_id = division.run_id;
        let count = i32::try_from(parts.len()).unwrap_or(i32::MAX);
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("dividing a window"))?;
        let inserted = tx
            .execute(
                "INSERT INTO public.datadiff_run_divisions \
                        (run_id, part_count, split_key, strategy, results, error, created_at, created_by) \
                 SELECT run_id, $2, $3, $4, $5, $6, $7, $8 FROM public.dd_run_attempts \
                  WHERE run_id = $1 AND status = 'RUNNING'",
                &[
                    &run_id.get(),
                    &count,
                    &division.split_key,
                    &division.strategy,
                    &division.results,
                    &division.error,
                    &now,
                    &division.created_by,
                ],
            )
            .map_err(Error::query("dividing a window"))?;
        if inserted == 0 {
            let status = tx
                .query_opt("SELECT status FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
                .map_err(Error::query("reading an attempt's status"))?
                .ok_or(Error::UnknownRun(run_id))?;
            let status = parse("dd_run_attempts.status", get(&status, "status")?)?;
            return Err(Error::LeaseLost { run_id, status });
        }
        let insert = tx
            .prepare(
                "INSERT INTO public.datadiff_run_parts (run_id, part_index, part_count, lower_bound, upper_bound) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .map_err(Error::query("writing the parts of a window"))?;
        for part in parts {
            tx.execute(&insert, &[&run_id.get(), &part.index, &count, &part.lower, &part.upper])
                .map_err(Error::query("writing the parts of a window"))?;
        }
        tx.commit().map_err(Error::query("committing the parts of a window"))
    }

    /// The attempt's division, when its window was divided (`None` too on a backend without
    /// extension 3).
    pub fn division(&self, run_id: RunId) -> Result<Option<Division>, Error> {
        if !self.has_run_parts()? {
            return Ok(None);
        }
        let row = self
            .connection()?
            .query_opt(
                "SELECT split_key, strategy, results, error, created_by FROM public.datadiff_run_divisions \
                  WHERE run_id = $1",
                &[&run_id.get()],
            )
            .map_err(Error::query("reading a division"))?;
        row.map(|row| {
            Ok(Division {
                run_id,
                split_key: get(&row, "split_key")?,
                strategy: get(&row, "strategy")?,
                results: get(&row, "results")?,
                error: get(&row, "error")?,
                created_by: get(&row, "created_by")?,
            })
        })
        .transpose()
    }

    /// The attempt's parts, in key order (none when it was not divided).
    pub fn run_parts(&self, run_id: RunId) -> Result<Vec<RunPart>, Error> {
        read_parts(&mut *self.connection()?, run_id)
    }

    /// A backend session of its own for claiming parts (see [`PartSession`]).
    pub fn part_session(&self, label: &str) -> Result<PartSession, Error> {
        Ok(PartSession {
            client: connect(self.config(), Role::Application)?,
            label: label.to_owned(),
            held: Vec::new(),
        })
    }
}

fn read_parts(client: &mut impl GenericClient, run_id: RunId) -> Result<Vec<RunPart>, Error> {
    let rows = client
        .query(
            "SELECT part_index, part_count, lower_bound, upper_bound, claimed_at, claimed_by, finished_at, outcome \
               FROM public.datadiff_run_parts WHERE run_id = $1 ORDER BY part_index",
            &[&run_id.get()],
        )
        .map_err(Error::query("reading the parts of a window"))?;
    rows.iter()
        .map(|row| {
            Ok(RunPart {
                range: PartRange {
                    index: get(row, "part_index")?,
                    lower: get(row, "lower_bound")?,
                    upper: get(row, "upper_bound")?,
                },
                part_count: get(row, "part_count")?,
                claimed_at: get(row, "claimed_at")?,
                claimed_by: get(row, "claimed_by")?,
                finished_at: get(row, "finished_at")?,
                outcome: get(row, "outcome")?,
            })
        })
        .collect()
}

/// A backend session of its own (application role, not pooled) through which one worker
/// claims parts and finishes them, or owns an attempt. Its session advisory locks
/// ([`SessionLock`]) last until released or until the session ends — with its process, if
/// it is killed.
pub struct PartSession {
    client: Client,
    label: String,
    /// The parts this session holds (`pg_try_advisory_lock` succeeds again for the session
    /// already holding a lock, so the session skips its own).
    held: Vec<(RunId, i32)>,
}

impl std::fmt::Debug for PartSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartSession").field("label", &self.label).finish_non_exhaustive()
    }
}

impl PartSession {
    /// Claims the attempt's first unfinished part (key order) whose lock no session holds,
    /// while the attempt is RUNNING: takes its [`SessionLock::RunPart`], reads it again under
    /// the lock (a part finished meanwhile is let go), and records `claimed_at = now` and
    /// `claimed_by`. `None` when no part can be claimed now.
    pub fn claim(&mut self, run_id: RunId, now: DateTime<Utc>) -> Result<Option<Claim>, Error> {
        let candidates = self
            .client
            .query(
                "SELECT p.part_index FROM public.datadiff_run_parts p \
                   JOIN public.dd_run_attempts a ON a.run_id = p.run_id AND a.status = 'RUNNING' \
                  WHERE p.run_id = $1 AND p.finished_at IS NULL ORDER BY p.part_index",
                &[&run_id.get()],
            )
            .map_err(Error::query("looking for a part to claim"))?;
        for candidate in candidates {
            let index: i32 = get(&candidate, "part_index")?;
            if self.held.contains(&(run_id, index)) {
                continue;
            }
            let lock = SessionLock::RunPart { run_id, index };
            if !lock.try_acquire(&mut self.client)? {
                continue;
            }
            // Under the lock: finished meanwhile, or the attempt ended, and the part is let go.
            let claimed = self
                .client
                .query_opt(
                    "UPDATE public.datadiff_run_parts p SET claimed_at = $3, claimed_by = $4 \
                      WHERE p.run_id = $1 AND p.part_index = $2 AND p.finished_at IS NULL \
                        AND EXISTS (SELECT 1 FROM public.dd_run_attempts a \
                                     WHERE a.run_id = p.run_id AND a.status = 'RUNNING') \
                     RETURNING lower_bound, upper_bound",
                    &[&run_id.get(), &index, &now, &self.label],
                )
                .map_err(Error::query("claiming a part"))?;
            match claimed {
                Some(row) => {
                    let range = PartRange { index, lower: get(&row, "lower_bound")?, upper: get(&row, "upper_bound")? };
                    self.held.push((run_id, index));
                    return Ok(Some(Claim { run_id, range }));
                }
                None => lock.release(&mut self.client)?,
            }
        }
        Ok(None)
    }

    /// Writes the claimed part's `outcome` with `finished_at = now`, then releases its lock.
    /// A part already finished keeps its first outcome (never redone, never overwritten).
    pub fn finish(&mut self, claim: Claim, outcome: &Json, now: DateTime<Utc>) -> Result<(), Error> {
        self.client
            .execute(
                "UPDATE public.datadiff_run_parts SET finished_at = $3, outcome = $4 \
                  WHERE run_id = $1 AND part_index = $2 AND finished_at IS NULL",
                &[&claim.run_id.get(), &claim.range.index, &now, outcome],
            )
            .map_err(Error::query("finishing a part"))?;
        self.release(claim)
    }

    /// Gives the claimed part back unfinished (its comparison was interrupted): releases its
    /// lock.
    pub fn release(&mut self, claim: Claim) -> Result<(), Error> {
        self.held.retain(|held| *held != (claim.run_id, claim.range.index));
        SessionLock::RunPart { run_id: claim.run_id, index: claim.range.index }.release(&mut self.client)
    }

    /// Takes the attempt's [`SessionLock::RunOwner`] when no session holds it: whether it
    /// did. Held until the session ends.
    pub fn try_own(&mut self, run_id: RunId) -> Result<bool, Error> {
        SessionLock::RunOwner(run_id).try_acquire(&mut self.client)
    }

    /// The attempt's parts, in key order.
    pub fn parts(&mut self, run_id: RunId) -> Result<Vec<RunPart>, Error> {
        read_parts(&mut self.client, run_id)
    }
}
