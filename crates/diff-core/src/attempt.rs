//! Pure decisions about attempts: which slots are due, whether and how an attempt may start,
//! when a failed slot may be retried, how a remediation is linked, and when a RUNNING attempt
//! is stale — exactly PipelineWise's rules (runs note §1.3–§2.2, §3.6).
//!
//! The backend store calls these under the check's advisory lock with the rows it just read,
//! and writes what they decide; keeping them here makes every rule testable without a
//! database.
//!
//! What an attempt comes to is pure data here too: [`RunSummary`] (with [`CheckIdentity`],
//! [`SummaryStatus`] and [`PreflightFacts`]) is what the runner produces, the command line
//! prints and the alerts read, and [`IndexWarningIdentity`] names the source table a
//! source-index warning is remembered under.

pub use crate::historical::{HistoricalStart, resolve_historical_start};
pub use crate::horizon::{Horizon, HorizonSource, HorizonSourceError};
pub use crate::index_warning::{IndexWarningId, IndexWarningIdentity};
pub use crate::outcome::{Outcome, Signal, aggregate_status, python_isoformat, results_error};
pub use crate::run::{CheckId, PreflightId, PreflightStatus, RunId, RunStatus, TriggerType, UnknownName};
pub use crate::run_summary::{CheckIdentity, PreflightFacts, RunSummary, SummaryStatus};
pub use crate::verdict::{
    CheckResult, ResultStatus, ResultType, RowDiffCounts, in_declared_order, metric_passes, result_value,
};

use chrono::{DateTime, TimeDelta, Utc};

use crate::duration::Duration;

use crate::schedule::{Schedule, Window};
use crate::time::postgres_first_instant;

/// Catch-up windows per check per invocation, and retries per check per invocation
/// (`MAX_BACKFILL_WINDOWS`).
pub const MAX_CATCH_UP: usize = 24;

/// An attempt's recorded bounds: `[start, end)`, with `start` unresolved (`None`) while a
/// historical first run has not found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The inclusive start, or `None` when unresolved.
    pub start: Option<DateTime<Utc>>,
    /// The exclusive end (a historical run's cutoff).
    pub end: DateTime<Utc>,
}

impl From<Window> for Bounds {
    fn from(window: Window) -> Bounds {
        Bounds { start: Some(window.start), end: window.end }
    }
}

/// What the decisions need to know about one existing attempt of a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptFacts {
    /// The attempt's id.
    pub run_id: RunId,
    /// Its number within the slot (shared by every trigger type).
    pub attempt: i32,
    /// Why it was started.
    pub trigger: TriggerType,
    /// Its status.
    pub status: RunStatus,
    /// Its recorded bounds.
    pub bounds: Bounds,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When it finished, if it did.
    pub finished_at: Option<DateTime<Utc>>,
    /// The root run it remediates, for a remediation.
    pub rerun_of_run_id: Option<RunId>,
}

impl AttemptFacts {
    /// `GREATEST(started_at, finished_at)`: the attempt's latest recorded time.
    pub fn last_activity(&self) -> DateTime<Utc> {
        self.finished_at.map_or(self.started_at, |finished| finished.max(self.started_at))
    }
}

/// The slots due now: `[current]` when the check never ran (`latest` is `None`) or already
/// reached the current slot; otherwise every fire time strictly after `latest` up to and
/// including `current`, oldest first, at most [`MAX_CATCH_UP`] (the newest wait for the next
/// invocation, which continues from the new latest).
///
/// `latest` is the newest `scheduled_for` among the revision's attempts that are not
/// remediations (RUNNING, DEFERRED, ERROR, RETRY and MANUAL attempts all count).
pub fn due_slots(schedule: &Schedule, latest: Option<DateTime<Utc>>, current: DateTime<Utc>) -> Vec<DateTime<Utc>> {
    let Some(latest) = latest.filter(|&latest| latest < current) else {
        return vec![current];
    };
    schedule.fires_after(latest).take_while(|&fire| fire <= current).take(MAX_CATCH_UP).collect()
}

/// How an attempt is being requested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartKind {
    /// A due cron slot; `force` is `--force`.
    Scheduled {
        /// Start even when the slot was already attempted (MANUAL, reusing its bounds).
        force: bool,
    },
    /// An automatic retry of a failed slot, valid only before `retry_before` (the current slot).
    Retry {
        /// The current slot: the slot and all its attempts must be older.
        retry_before: DateTime<Utc>,
    },
    /// A re-verification of a verified slot (`checks.<name>.reverify` in `datadiff.yml`):
    /// PipelineWise's `--force` on an attempted slot — MANUAL, the newest attempt's bounds —
    /// taken only while the slot is still due, i.e. its effective outcome is PASS and none of
    /// its attempts started or finished at or after `verified_before` (see
    /// [`is_reverification_due`]).
    Reverify {
        /// `now` minus the re-verification period.
        verified_before: DateTime<Utc>,
    },
}

/// What the store knows about the whole check revision when a slot has no attempt yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RevisionHistory {
    /// Any attempt of the revision that is neither a remediation nor DEFERRED.
    pub has_previous_run: bool,
    /// Any RUNNING attempt of the revision with an unresolved start (any slot, any trigger).
    pub has_pending_historical_run: bool,
}

/// Everything [`decide_start`] needs.
#[derive(Debug, Clone)]
pub struct StartRequest<'a> {
    /// Scheduled (with or without force) or a retry.
    pub kind: StartKind,
    /// The slot (`scheduled_for`).
    pub scheduled_for: DateTime<Utc>,
    /// The slot's existing attempts, in any order.
    pub slot_attempts: &'a [AttemptFacts],
    /// Facts about the revision, used when the slot has no attempt.
    pub history: RevisionHistory,
    /// `initial_full_scan` and at least one data check: a first run compares all history.
    pub full_scan_eligible: bool,
    /// The slot's rolling window.
    pub window: Window,
}

/// An attempt to insert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NewAttempt {
    /// Its number within the slot.
    pub attempt: i32,
    /// Its trigger.
    pub trigger: TriggerType,
    /// Its bounds (an unresolved start for a historical first run).
    pub bounds: Bounds,
}

/// Why an attempt was not started. Never stored: it is a summary status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkipReason {
    /// The slot has a RUNNING attempt (force does not override this).
    AlreadyRunning,
    /// The slot was attempted and `--force` was not given.
    AlreadyAttempted,
    /// A historical first run of the revision is still looking for its start.
    HistoricalDiscoveryRunning,
    /// A retry found the slot no longer failed, or already attempted in this cron interval.
    RetryNoLongerEligible,
    /// A re-verification found the slot no longer verified (not PASS) or verified since.
    ReverificationNoLongerDue,
    /// The worker's attempt is no longer RUNNING (swept or finished by someone else).
    LeaseLost {
        /// The attempt.
        run_id: RunId,
        /// Its recorded status.
        status: RunStatus,
    },
}

impl SkipReason {
    /// Upstream's reason text.
    pub fn message(&self) -> String {
        match self {
            SkipReason::AlreadyRunning => "An attempt for this cron slot is already running".to_owned(),
            SkipReason::AlreadyAttempted => "This cron slot has already been attempted".to_owned(),
            SkipReason::HistoricalDiscoveryRunning => {
                "Historical baseline discovery is already running for this check".to_owned()
            }
            SkipReason::RetryNoLongerEligible => {
                "This window is no longer eligible for a retry in this cron interval".to_owned()
            }
            SkipReason::ReverificationNoLongerDue => {
                "This window is no longer due for re-verification (not PASS, or attempted since)".to_owned()
            }
            SkipReason::LeaseLost { run_id, status } => format!(
                "Run {run_id} is no longer RUNNING (status: {status}); its lease expired or it was already \
                 completed. Late results were discarded."
            ),
        }
    }
}

/// A start that did not happen, with what is known of the slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    /// Why.
    pub reason: SkipReason,
    /// The slot's newest attempt's status (RUNNING while discovery runs), if any.
    pub slot_status: Option<RunStatus>,
    /// The slot's newest attempt, if any.
    pub run_id: Option<RunId>,
    /// Its bounds, if any.
    pub bounds: Option<Bounds>,
}

/// The outcome of [`decide_start`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartDecision {
    /// Insert this attempt as RUNNING.
    Start(NewAttempt),
    /// Do not start; report SKIPPED.
    Skip(Skip),
}

fn newest(attempts: &[AttemptFacts]) -> Option<&AttemptFacts> {
    attempts.iter().max_by_key(|attempt| attempt.attempt)
}

fn skip_with_newest(reason: SkipReason, newest: &AttemptFacts) -> StartDecision {
    StartDecision::Skip(Skip {
        reason,
        slot_status: Some(newest.status),
        run_id: Some(newest.run_id),
        bounds: Some(newest.bounds),
    })
}

/// Decides whether an attempt of a slot may start and with which number, trigger and bounds.
///
/// In order:
/// 1. a RUNNING attempt in the slot → skip, "already running" (even with force, even a retry);
/// 2. a retry must find the slot's effective outcome (newest PASS/FAIL/ERROR attempt; DEFERRED
///    ignored) FAIL or ERROR, the slot older than `retry_before` and every attempt's latest
///    time older too — then RETRY, newest attempt + 1, the newest attempt's bounds;
/// 3. an attempted slot: with force, MANUAL, newest attempt + 1, the newest attempt's bounds
///    (an unresolved start included); without, skip "already attempted" with the newest
///    attempt's status;
/// 4. a fresh slot while a historical first run is still discovering its start → skip (force
///    does not bypass this);
/// 5. a fresh slot: attempt 1, SCHEDULED (MANUAL with force), with an unresolved start and the
///    window's end as cutoff when no earlier run counts and a full scan is configured,
///    otherwise the rolling window.
pub fn decide_start(request: &StartRequest<'_>) -> StartDecision {
    let attempts = request.slot_attempts;
    if let Some(running) = attempts.iter().filter(|a| a.status == RunStatus::Running).max_by_key(|a| a.attempt) {
        return skip_with_newest(SkipReason::AlreadyRunning, running);
    }
    let newest_attempt = newest(attempts);
    match (request.kind, newest_attempt) {
        (StartKind::Retry { retry_before }, newest_attempt) => {
            let Some(newest_attempt) = newest_attempt else {
                return StartDecision::Skip(Skip {
                    reason: SkipReason::RetryNoLongerEligible,
                    slot_status: None,
                    run_id: None,
                    bounds: None,
                });
            };
            let effective = attempts.iter().filter(|a| a.status.is_outcome()).max_by_key(|a| a.attempt);
            let eligible = effective.is_some_and(|effective| effective.status.is_failure())
                && request.scheduled_for < retry_before
                && attempts.iter().all(|attempt| attempt.last_activity() < retry_before);
            if !eligible {
                return skip_with_newest(SkipReason::RetryNoLongerEligible, newest_attempt);
            }
            StartDecision::Start(NewAttempt {
                attempt: newest_attempt.attempt + 1,
                trigger: TriggerType::Retry,
                bounds: newest_attempt.bounds,
            })
        }
        (StartKind::Reverify { .. }, None) => StartDecision::Skip(Skip {
            reason: SkipReason::ReverificationNoLongerDue,
            slot_status: None,
            run_id: None,
            bounds: None,
        }),
        (StartKind::Reverify { verified_before }, Some(newest_attempt)) => {
            if !reverification_due(attempts, verified_before) {
                return skip_with_newest(SkipReason::ReverificationNoLongerDue, newest_attempt);
            }
            // `--force` on an attempted slot, exactly.
            StartDecision::Start(NewAttempt {
                attempt: newest_attempt.attempt + 1,
                trigger: TriggerType::Manual,
                bounds: newest_attempt.bounds,
            })
        }
        (StartKind::Scheduled { force }, Some(newest_attempt)) => {
            if !force {
                return skip_with_newest(SkipReason::AlreadyAttempted, newest_attempt);
            }
            StartDecision::Start(NewAttempt {
                attempt: newest_attempt.attempt + 1,
                trigger: TriggerType::Manual,
                bounds: newest_attempt.bounds,
            })
        }
        (StartKind::Scheduled { force }, None) => {
            if request.history.has_pending_historical_run {
                return StartDecision::Skip(Skip {
                    reason: SkipReason::HistoricalDiscoveryRunning,
                    slot_status: Some(RunStatus::Running),
                    run_id: None,
                    bounds: None,
                });
            }
            let historical = request.full_scan_eligible && !request.history.has_previous_run;
            let bounds =
                if historical { Bounds { start: None, end: request.window.end } } else { Bounds::from(request.window) };
            let trigger = if force { TriggerType::Manual } else { TriggerType::Scheduled };
            StartDecision::Start(NewAttempt { attempt: 1, trigger, bounds })
        }
    }
}

/// The rule of [`is_reverification_due`], on attempts without a RUNNING one.
fn reverification_due(attempts: &[AttemptFacts], verified_before: DateTime<Utc>) -> bool {
    let effective = attempts.iter().filter(|a| a.status.is_outcome()).max_by_key(|a| a.attempt);
    effective.is_some_and(|effective| effective.status == RunStatus::Pass)
        && attempts.iter().all(|attempt| attempt.last_activity() < verified_before)
}

/// Whether a slot is due for re-verification (`checks.<name>.reverify`): it has no RUNNING
/// attempt, its effective outcome (newest PASS, FAIL or ERROR attempt; DEFERRED ignored) is
/// PASS, and none of its attempts started or finished at or after `verified_before` (`now`
/// minus the period): it was last looked at longer ago than the period. A FAIL or ERROR slot is
/// not re-verified: retries and remediation own it. The store lists candidates with the same
/// rule in SQL; [`decide_start`] re-checks it under the lock.
pub fn is_reverification_due(slot_attempts: &[AttemptFacts], verified_before: DateTime<Utc>) -> bool {
    !slot_attempts.iter().any(|attempt| attempt.status == RunStatus::Running)
        && reverification_due(slot_attempts, verified_before)
}

/// How a definition's verified history is re-verified (`checks.<name>.reverify` in
/// `datadiff.yml`): each tick re-attempts, after its due slots, at most `per_tick` slots
/// verified longer ago than `period`, least recently verified first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reverify {
    /// Re-verify a PASS slot last attempted longer ago than this.
    pub period: Duration,
    /// Re-verifications per definition per tick (at least 1).
    pub per_tick: usize,
}

impl Reverify {
    /// Re-verifications per definition per tick unless `reverify_per_tick` says otherwise:
    /// twice the one slot a tick adds, so a backlog shrinks while new slots keep coming.
    pub const DEFAULT_PER_TICK: usize = 2;

    /// The newest last-activity time a slot may have and still be due at `now`.
    pub fn verified_before(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now - TimeDelta::seconds(self.period.seconds())
    }
}

/// Whether a failed slot is a retry candidate in the current cron interval: its effective
/// outcome is FAIL or ERROR, it is older than the current slot, none of its attempts is
/// RUNNING, and none started or finished at or after the current slot ("at most once per
/// cron interval"). The store lists candidates with the same rule in SQL; [`decide_start`]
/// re-checks it under the lock.
pub fn is_retry_candidate(
    scheduled_for: DateTime<Utc>,
    slot_attempts: &[AttemptFacts],
    current_slot: DateTime<Utc>,
) -> bool {
    let request = StartRequest {
        kind: StartKind::Retry { retry_before: current_slot },
        scheduled_for,
        slot_attempts,
        history: RevisionHistory::default(),
        full_scan_eligible: false,
        window: Window { start: scheduled_for, end: scheduled_for },
    };
    matches!(decide_start(&request), StartDecision::Start(_))
}

/// Why a remediation was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RemediationRefusal {
    /// The reference is empty.
    #[error("You must specify the repair or incident reference using --remediation-ref")]
    MissingReference,
    /// Only FAIL and ERROR attempts can be remediated.
    #[error("Only failed or errored runs can be remediated; run '{run_id}' is {status}")]
    NotFailed {
        /// The run.
        run_id: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// The slot has a RUNNING attempt.
    #[error("A data-diff attempt for this window is already running")]
    SlotRunning,
}

/// A remediation attempt to insert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewRemediation {
    /// The slot's highest attempt + 1.
    pub attempt: i32,
    /// The bounds to compare.
    pub bounds: Bounds,
    /// The root run: the original's own `rerun_of_run_id` if set, else the original.
    pub rerun_of_run_id: RunId,
    /// The operator's reference, as given.
    pub remediation_reference: String,
}

/// Decides a remediation of `original` (a FAIL or ERROR attempt) with `reference`, given every
/// attempt of its slot (the original included).
///
/// Bounds are the original's; when its start is unresolved, those of the slot's newest attempt
/// that resolved one (a later retry or forced run may have), else the original's unresolved
/// start and cutoff. The link always points at the root original, never at a remediation.
pub fn decide_remediation(
    original: &AttemptFacts,
    reference: &str,
    slot_attempts: &[AttemptFacts],
) -> Result<NewRemediation, RemediationRefusal> {
    if reference.trim().is_empty() {
        return Err(RemediationRefusal::MissingReference);
    }
    if !original.status.is_failure() {
        return Err(RemediationRefusal::NotFailed { run_id: original.run_id, status: original.status });
    }
    if slot_attempts.iter().any(|attempt| attempt.status == RunStatus::Running) {
        return Err(RemediationRefusal::SlotRunning);
    }
    let bounds = if original.bounds.start.is_some() {
        original.bounds
    } else {
        slot_attempts
            .iter()
            .filter(|attempt| attempt.bounds.start.is_some())
            .max_by_key(|attempt| attempt.attempt)
            .map_or(original.bounds, |resolved| resolved.bounds)
    };
    let highest = slot_attempts.iter().map(|attempt| attempt.attempt).max().unwrap_or(original.attempt);
    Ok(NewRemediation {
        attempt: highest.max(original.attempt) + 1,
        bounds,
        rerun_of_run_id: original.rerun_of_run_id.unwrap_or(original.run_id),
        remediation_reference: reference.to_owned(),
    })
}

/// RUNNING attempts that started at or before this instant are stale and are swept to ERROR:
/// `now - (30 min + 4 × statement_timeout_seconds)` (a 60 s budget gives 34 minutes).
///
/// The timeout counts at most [`Duration::MAX_STATEMENT_TIMEOUT`] (no query can be given
/// longer by PostgreSQL), and the cutoff is never earlier than PostgreSQL's first timestamp
/// (4714-11-24 BC), so any stored definition — PipelineWise accepts `statement_timeout:
/// 88000w` — gives an instant the backend can compare with: one definition's arithmetic never
/// fails a sweep or a schedule overview of many.
pub fn stale_cutoff(now: DateTime<Utc>, statement_timeout_seconds: i64) -> DateTime<Utc> {
    let timeout = statement_timeout_seconds.clamp(0, Duration::MAX_STATEMENT_TIMEOUT.seconds());
    let age = TimeDelta::minutes(30) + TimeDelta::seconds(timeout * 4);
    now.checked_sub_signed(age).unwrap_or(DateTime::<Utc>::MIN_UTC).max(postgres_first_instant())
}

/// The error recorded on an attempt the stale sweep expires.
pub const STALE_SWEEP_ERROR: &str = "Scheduler lease expired before the worker completed";

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use uuid::Uuid;

    fn at(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap()
    }

    fn run(n: u128) -> RunId {
        RunId::new(Uuid::from_u128(n))
    }

    fn attempt(n: i32, trigger: TriggerType, status: RunStatus, start: Option<DateTime<Utc>>) -> AttemptFacts {
        AttemptFacts {
            run_id: run(n as u128),
            attempt: n,
            trigger,
            status,
            bounds: Bounds { start, end: at(12, 0) },
            started_at: at(13, 5),
            finished_at: Some(at(13, 6)),
            rerun_of_run_id: None,
        }
    }

    fn window() -> Window {
        Window { start: at(11, 0), end: at(12, 0) }
    }

    fn request(kind: StartKind, attempts: &[AttemptFacts]) -> StartRequest<'_> {
        StartRequest {
            kind,
            scheduled_for: at(13, 0),
            slot_attempts: attempts,
            history: RevisionHistory::default(),
            full_scan_eligible: false,
            window: window(),
        }
    }

    const SCHEDULED: StartKind = StartKind::Scheduled { force: false };
    const FORCED: StartKind = StartKind::Scheduled { force: true };

    #[test]
    fn due_slots_backfill_the_oldest_missing_windows_in_order() {
        let hourly = Schedule::parse("0 * * * *").unwrap();
        // latest 10:00, now 13:15 → current 13:00 → 11, 12, 13.
        let due = due_slots(&hourly, Some(at(10, 0)), at(13, 0));
        assert_eq!(due, vec![at(11, 0), at(12, 0), at(13, 0)]);
    }

    #[test]
    fn a_never_run_or_caught_up_check_is_due_only_its_current_slot() {
        let hourly = Schedule::parse("0 * * * *").unwrap();
        assert_eq!(due_slots(&hourly, None, at(13, 0)), vec![at(13, 0)]);
        assert_eq!(due_slots(&hourly, Some(at(13, 0)), at(13, 0)), vec![at(13, 0)]);
        assert_eq!(due_slots(&hourly, Some(at(14, 0)), at(13, 0)), vec![at(13, 0)]);
    }

    #[test]
    fn catch_up_is_capped_at_the_24_oldest_windows() {
        let every_ten_minutes = Schedule::parse("*/10 * * * *").unwrap();
        let latest = Utc.with_ymd_and_hms(2026, 7, 20, 0, 0, 0).unwrap();
        let due = due_slots(&every_ten_minutes, Some(latest), at(13, 0));
        assert_eq!(due.len(), 24);
        assert_eq!(due[0], latest + TimeDelta::minutes(10));
        assert_eq!(due[23], latest + TimeDelta::minutes(240));
    }

    #[test]
    fn a_fresh_slot_starts_attempt_one_with_the_rolling_window() {
        let decision = decide_start(&request(SCHEDULED, &[]));
        assert_eq!(
            decision,
            StartDecision::Start(NewAttempt {
                attempt: 1,
                trigger: TriggerType::Scheduled,
                bounds: Bounds { start: Some(at(11, 0)), end: at(12, 0) },
            })
        );
        let forced = decide_start(&request(FORCED, &[]));
        assert!(matches!(forced, StartDecision::Start(NewAttempt { attempt: 1, trigger: TriggerType::Manual, .. })));
    }

    #[test]
    fn a_first_full_scan_has_an_unresolved_start_and_the_window_end_as_cutoff() {
        let mut first = request(SCHEDULED, &[]);
        first.full_scan_eligible = true;
        assert_eq!(
            decide_start(&first),
            StartDecision::Start(NewAttempt {
                attempt: 1,
                trigger: TriggerType::Scheduled,
                bounds: Bounds { start: None, end: at(12, 0) },
            })
        );
        // Once a run counts (not a remediation, not DEFERRED), new slots are rolling.
        first.history.has_previous_run = true;
        let StartDecision::Start(later) = decide_start(&first) else { panic!("must start") };
        assert_eq!(later.bounds.start, Some(at(11, 0)));
        // Without the option (the default), never historical.
        let plain = request(SCHEDULED, &[]);
        let StartDecision::Start(plain) = decide_start(&plain) else { panic!("must start") };
        assert_eq!(plain.bounds.start, Some(at(11, 0)));
    }

    #[test]
    fn a_new_slot_waits_while_historical_discovery_runs_even_when_forced() {
        for kind in [SCHEDULED, FORCED] {
            let mut waiting = request(kind, &[]);
            waiting.history.has_pending_historical_run = true;
            assert_eq!(
                decide_start(&waiting),
                StartDecision::Skip(Skip {
                    reason: SkipReason::HistoricalDiscoveryRunning,
                    slot_status: Some(RunStatus::Running),
                    run_id: None,
                    bounds: None,
                })
            );
        }
    }

    #[test]
    fn an_attempted_slot_is_skipped_with_its_newest_status_whatever_it_was() {
        for status in [RunStatus::Pass, RunStatus::Fail, RunStatus::Error, RunStatus::Deferred] {
            let attempts = [attempt(1, TriggerType::Scheduled, status, Some(at(11, 0)))];
            let StartDecision::Skip(skip) = decide_start(&request(SCHEDULED, &attempts)) else {
                panic!("{status} slot must be skipped")
            };
            assert_eq!(skip.reason.message(), "This cron slot has already been attempted");
            assert_eq!(skip.slot_status, Some(status));
        }
    }

    #[test]
    fn a_running_attempt_is_never_restarted_with_or_without_force() {
        let attempts = [attempt(1, TriggerType::Scheduled, RunStatus::Running, Some(at(11, 0)))];
        for kind in [SCHEDULED, FORCED, StartKind::Retry { retry_before: at(14, 0) }] {
            let StartDecision::Skip(skip) = decide_start(&request(kind, &attempts)) else { panic!("must skip") };
            assert_eq!(skip.reason.message(), "An attempt for this cron slot is already running");
            assert_eq!(skip.slot_status, Some(RunStatus::Running));
        }
    }

    #[test]
    fn force_on_an_attempted_slot_reuses_the_newest_bounds_including_an_unresolved_start() {
        let attempts = [
            attempt(1, TriggerType::Scheduled, RunStatus::Error, None),
            attempt(2, TriggerType::Retry, RunStatus::Deferred, None),
        ];
        assert_eq!(
            decide_start(&request(FORCED, &attempts)),
            StartDecision::Start(NewAttempt {
                attempt: 3,
                trigger: TriggerType::Manual,
                bounds: Bounds { start: None, end: at(12, 0) },
            })
        );
    }

    #[test]
    fn a_retry_runs_once_per_interval_with_the_newest_bounds_and_counts_deferred_attempts() {
        let attempts = [
            attempt(1, TriggerType::Scheduled, RunStatus::Fail, Some(at(10, 30))),
            attempt(2, TriggerType::Retry, RunStatus::Deferred, Some(at(10, 30))),
        ];
        let retry = StartRequest {
            scheduled_for: at(12, 0),
            ..request(StartKind::Retry { retry_before: at(14, 0) }, &attempts)
        };
        assert_eq!(
            decide_start(&retry),
            StartDecision::Start(NewAttempt {
                attempt: 3,
                trigger: TriggerType::Retry,
                bounds: Bounds { start: Some(at(10, 30)), end: at(12, 0) },
            })
        );
        // An attempt that finished at or after the current slot: not again in this interval.
        let same_interval = StartRequest {
            scheduled_for: at(12, 0),
            ..request(StartKind::Retry { retry_before: at(13, 6) }, &attempts)
        };
        let StartDecision::Skip(skip) = decide_start(&same_interval) else { panic!("must skip") };
        assert_eq!(skip.reason.message(), "This window is no longer eligible for a retry in this cron interval");
        assert_eq!(skip.slot_status, Some(RunStatus::Deferred));
        assert!(!is_retry_candidate(at(12, 0), &attempts, at(13, 6)));
        assert!(is_retry_candidate(at(12, 0), &attempts, at(14, 0)));
    }

    #[test]
    fn a_retry_needs_a_failed_effective_outcome_older_than_the_current_slot() {
        let repaired = [
            attempt(1, TriggerType::Scheduled, RunStatus::Fail, Some(at(11, 0))),
            attempt(2, TriggerType::Manual, RunStatus::Pass, Some(at(11, 0))),
            attempt(3, TriggerType::Retry, RunStatus::Deferred, Some(at(11, 0))),
        ];
        assert!(!is_retry_candidate(at(12, 0), &repaired, at(15, 0)), "the effective outcome is the PASS");
        let failed = [attempt(1, TriggerType::Scheduled, RunStatus::Error, Some(at(11, 0)))];
        assert!(!is_retry_candidate(at(15, 0), &failed, at(15, 0)), "the current slot's own failure waits");
        assert!(!is_retry_candidate(at(12, 0), &[], at(15, 0)));
    }

    #[test]
    fn remediation_links_the_root_and_takes_the_next_attempt_number() {
        let mut original = attempt(1, TriggerType::Scheduled, RunStatus::Fail, Some(at(11, 0)));
        let mut first_fix = attempt(2, TriggerType::Remediation, RunStatus::Fail, Some(at(11, 0)));
        first_fix.rerun_of_run_id = Some(original.run_id);
        let slot = [original.clone(), first_fix.clone()];
        let second = decide_remediation(&first_fix, "INC-42", &slot).unwrap();
        assert_eq!(
            second,
            NewRemediation {
                attempt: 3,
                bounds: Bounds { start: Some(at(11, 0)), end: at(12, 0) },
                rerun_of_run_id: original.run_id,
                remediation_reference: "INC-42".into(),
            }
        );
        original.trigger = TriggerType::Retry;
        assert_eq!(decide_remediation(&original, "r", &slot).unwrap().rerun_of_run_id, original.run_id);
    }

    #[test]
    fn remediation_of_an_unresolved_error_uses_a_later_resolved_window_if_any() {
        let original = attempt(1, TriggerType::Scheduled, RunStatus::Error, None);
        let mut resolved = attempt(2, TriggerType::Manual, RunStatus::Fail, Some(at(3, 0)));
        resolved.bounds.end = at(12, 0);
        let slot = [original.clone(), resolved];
        let decided = decide_remediation(&original, "fix", &slot).unwrap();
        assert_eq!(decided.bounds, Bounds { start: Some(at(3, 0)), end: at(12, 0) });
        let alone = decide_remediation(&original, "fix", std::slice::from_ref(&original)).unwrap();
        assert_eq!(alone.bounds, Bounds { start: None, end: at(12, 0) }, "still unresolved: rediscover");
    }

    #[test]
    fn remediation_refusals_carry_upstream_messages() {
        let passed = attempt(1, TriggerType::Scheduled, RunStatus::Pass, Some(at(11, 0)));
        let refusal = decide_remediation(&passed, "x", std::slice::from_ref(&passed)).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "Only failed or errored runs can be remediated; run '00000000-0000-0000-0000-000000000001' is PASS"
        );
        let failed = attempt(1, TriggerType::Scheduled, RunStatus::Fail, Some(at(11, 0)));
        assert_eq!(decide_remediation(&failed, " ", &[]).unwrap_err(), RemediationRefusal::MissingReference);
        let running = attempt(2, TriggerType::Retry, RunStatus::Running, Some(at(11, 0)));
        assert_eq!(
            decide_remediation(&failed, "x", &[failed.clone(), running]).unwrap_err().to_string(),
            "A data-diff attempt for this window is already running"
        );
    }

    #[test]
    fn the_stale_age_scales_with_the_query_budget() {
        assert_eq!(stale_cutoff(at(13, 0), 60), at(12, 26), "60 s → 34 minutes");
        assert_eq!(stale_cutoff(at(13, 0), 0), at(12, 30), "no budget → 30 minutes");
        assert_eq!(stale_cutoff(at(13, 0), -5), at(12, 30), "a negative budget counts as none");
    }

    #[test]
    fn the_stale_age_saturates_at_postgresqls_longest_timeout() {
        // 30 minutes + 4 × 2,147,483 s, whatever larger timeout a definition holds.
        let longest = at(13, 0) - TimeDelta::minutes(30) - TimeDelta::seconds(4 * 2_147_483);
        assert_eq!(stale_cutoff(at(13, 0), 2_147_483), longest);
        for timeout in [2_147_484, 88_000 * 604_800, i64::MAX] {
            assert_eq!(stale_cutoff(at(13, 0), timeout), longest, "{timeout}");
        }
        // Near the start of time the cutoff stops at PostgreSQL's first timestamp.
        let first = postgres_first_instant();
        assert_eq!(first.to_rfc3339(), "-4713-11-24T00:00:00+00:00");
        assert_eq!(stale_cutoff(first + TimeDelta::minutes(10), 60), first);
        assert_eq!(stale_cutoff(DateTime::<Utc>::MIN_UTC, i64::MAX), first);
    }

    #[test]
    fn lease_loss_message_names_the_run_and_its_status() {
        let reason = SkipReason::LeaseLost { run_id: run(7), status: RunStatus::Error };
        assert_eq!(
            reason.message(),
            "Run 00000000-0000-0000-0000-000000000007 is no longer RUNNING (status: ERROR); its lease expired or \
             it was already completed. Late results were discarded."
        );
    }
}
