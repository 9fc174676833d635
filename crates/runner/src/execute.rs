//! Executing one attempt of one definition, from claiming its slot to its coverage
//! transition: the entry points the scheduler, `run`, `rerun` and embedding programs call.

use chrono::{DateTime, Utc};
use datadiff_backend_store::{Attempt, Completion, NewPreflight, StartOutcome, Store, StoredDefinition};
use datadiff_diff_core::attempt::{
    CheckIdentity, Outcome, PreflightStatus, RunSummary, Signal, Skip, SkipReason, StartKind,
};
use datadiff_diff_core::segment::Strategy;
use datadiff_preflight::PreflightRecord;

use crate::attempt::AttemptRun;
use crate::clock::Clock;
use crate::connections::Connections;
use crate::error::Error;
use crate::in_flight::{InFlight, InFlightAttempt};
use crate::progress::ProgressMeter;
use crate::row_diff::RowDiffSplit;

/// How attempts are executed.
#[derive(Debug, Clone)]
pub struct ExecutionOptions {
    /// Run the source's and the target's statements at the same time, one thread per side
    /// (the default: an attempt then takes as long as its slower side, SPEC §11). `false`
    /// runs the source's, then the target's, as PipelineWise does — kept for comparison.
    pub concurrent_sides: bool,
    /// Where recorded times come from (`--at` fixes them).
    pub clock: Clock,
    /// The registry of executing attempts, so that they can be interrupted and recorded from
    /// outside (signals); `None` when nothing will interrupt them.
    pub in_flight: Option<InFlight>,
    /// Counters a progress display reads while attempts execute; `None` (the default) counts
    /// nothing and skips the `row_diff` row estimate.
    pub progress: Option<ProgressMeter>,
    /// How every `row_diff` of these attempts reads its rows, instead of each definition's
    /// `strategy` (`run --strategy`); `None` keeps the definitions'.
    pub row_diff_strategy: Option<Strategy>,
    /// How each `row_diff` window is divided into key ranges (`run --row-diff-parts`, and the
    /// `--jobs` a tick leaves over: see [`crate::tick`]); one unit by default.
    pub row_diff_split: RowDiffSplit,
}

impl Default for ExecutionOptions {
    fn default() -> ExecutionOptions {
        ExecutionOptions {
            concurrent_sides: true,
            clock: Clock::System,
            in_flight: None,
            progress: None,
            row_diff_strategy: None,
            row_diff_split: RowDiffSplit::default(),
        }
    }
}

/// Starts an attempt of `definition`'s slot `scheduled_for` and executes it (runs note §3):
/// the start under the check lock (T1) — which may decide SKIPPED instead — then the
/// comparison and the finish (see the crate docs for the steps).
///
/// Returns the attempt's [`RunSummary`]: PASS, FAIL, ERROR or DEFERRED as stored, or SKIPPED
/// (the slot was attempted or is running, a retry is no longer eligible, the lease was lost,
/// or the route is not PostgreSQL → PostgreSQL). Anything failing on the source or target
/// side is an ERROR attempt, not an `Err`. `Err` is for the backend only
/// ([`Error::Backend`]; upstream then reports the check ERROR without a run, see
/// [`RunSummary::failed_without_run`]) and for an attempt interrupted through
/// [`ExecutionOptions::in_flight`] ([`Error::Interrupted`]).
pub fn execute(
    store: &Store,
    connections: &Connections,
    definition: &StoredDefinition,
    scheduled_for: DateTime<Utc>,
    kind: StartKind,
    options: &ExecutionOptions,
) -> Result<RunSummary, Error> {
    if let Some(reason) = definition.definition.unsupported_route() {
        finished(options);
        return Ok(RunSummary::not_attempted(CheckIdentity::of(definition), scheduled_for, reason));
    }
    // Never a verdict on rows that may not exist yet: a window ending after the real clock
    // (an `--at` a few minutes ahead, a clock skewed between hosts) waits for a later tick.
    let real_now = Clock::System.now();
    if let Some(window) = definition.definition.window(scheduled_for)
        && window.end > real_now
    {
        finished(options);
        let reason = format!(
            "the window [{}, {}) ends after the current time {}: not attempted before it has passed",
            datadiff_diff_core::attempt::python_isoformat(window.start),
            datadiff_diff_core::attempt::python_isoformat(window.end),
            datadiff_diff_core::attempt::python_isoformat(real_now),
        );
        return Ok(RunSummary::not_attempted(CheckIdentity::of(definition), scheduled_for, reason));
    }
    let (owned, now) = (definition.clone(), options.clock.now());
    let started = store
        .bounded("starting an attempt", move |store| store.start_attempt(&owned, scheduled_for, kind, now))
        .map_err(|source| Error::Backend {
            action: format!("starting an attempt of {}", definition.definition.full_check_name),
            source,
        })?;
    match started {
        StartOutcome::Skipped(skip) => {
            let summary = skipped_or_joined(store, connections, definition, scheduled_for, &skip, options);
            finished(options);
            summary
        }
        StartOutcome::Started(attempt) => execute_started(store, connections, definition, attempt, options),
    }
}

/// The summary of a start that was skipped — unless the slot's attempt is RUNNING with a
/// divided `row_diff` window another process started: this process then joins it, comparing
/// parts of it, and finishes it when its owner is gone (see [`crate::divided`]), summarised as
/// stored; SKIPPED when the owner finishes it.
pub(crate) fn skipped_or_joined(
    store: &Store,
    connections: &Connections,
    definition: &StoredDefinition,
    scheduled_for: DateTime<Utc>,
    skip: &Skip,
    options: &ExecutionOptions,
) -> Result<RunSummary, Error> {
    if let (SkipReason::AlreadyRunning, Some(run_id), Some(_)) =
        (&skip.reason, skip.run_id, definition.definition.extensions.row_diff)
        && let Some(summary) = crate::attempt::join(store, connections, definition, run_id, options)?
    {
        return Ok(summary);
    }
    Ok(RunSummary::skipped(CheckIdentity::of(definition), scheduled_for, skip))
}

/// Executes an attempt already started as RUNNING (a remediation from
/// [`Store::start_remediation`], whose exact revision is `definition`), exactly as
/// [`execute`] executes the ones it starts.
pub fn execute_started(
    store: &Store,
    connections: &Connections,
    definition: &StoredDefinition,
    attempt: Attempt,
    options: &ExecutionOptions,
) -> Result<RunSummary, Error> {
    let summary = AttemptRun::new(store, definition, attempt, options).run(connections);
    finished(options);
    summary
}

/// Counts an attempt executed to its end on the progress meter, if any.
fn finished(options: &ExecutionOptions) {
    if let Some(progress) = &options.progress {
        progress.attempt_finished();
    }
}

/// Records an interrupted attempt as ERROR (runs note §3.4: `Terminated by SIGTERM before
/// the check completed`), with a placeholder preflight when none was recorded, and its
/// coverage transition. For the attempts [`InFlight::interrupt_all`] stopped. An attempt
/// that already finished (its lease is gone) is left alone: `Ok(false)`.
pub fn record_interrupted(
    store: &Store,
    attempt: InFlightAttempt,
    signal: Signal,
    clock: Clock,
) -> Result<bool, Error> {
    record_stopped(store, attempt, Outcome::signal(signal), "interrupted", clock)
}

/// Records an attempt that could not finish its own way (`outcome`: ERROR with its reason) —
/// interrupted by a signal, or cut off from its backend session — with a placeholder
/// preflight when none was recorded, and its coverage transition; `what` names it in errors.
/// `Ok(false)` when the attempt already finished (its lease is gone).
pub(crate) fn record_stopped(
    store: &Store,
    attempt: InFlightAttempt,
    outcome: Outcome,
    what: &str,
    clock: Clock,
) -> Result<bool, Error> {
    let error = outcome.error.clone().unwrap_or_default();
    let placeholder = PreflightRecord::placeholder(error.clone());
    let preflight = NewPreflight {
        status: PreflightStatus::Error,
        query_fingerprint: placeholder.query_fingerprint.as_str().to_owned(),
        index_metadata: placeholder.index_metadata_json(),
        findings: placeholder.findings_json(),
        error: placeholder.error.clone(),
        table_rows: None,
        row_limit: None,
        has_leading_index: None,
    };
    let backend = |action: &str| {
        let action = format!("{action} of {what} run {}", attempt.run_id);
        move |source| Error::Backend { action, source }
    };
    // An already linked preflight is reused by the store (one per attempt).
    let preflight_id = match store.record_preflight(attempt.run_id, attempt.check_id, &preflight, clock.now()) {
        Ok(id) => id,
        Err(error) if error.lease_lost().is_some() => return Ok(false),
        Err(error) => return Err(backend("recording the preflight")(error)),
    };
    let completion = Completion {
        run_id: attempt.run_id,
        status: outcome.status,
        preflight_id: Some(preflight_id),
        error: Some(error),
        results: Vec::new(),
        differences: Vec::new(),
        finished_at: clock.now(),
    };
    match store.finish_attempt(&completion) {
        Ok(_) => Ok(true),
        Err(error) if error.lease_lost().is_some() => Ok(false),
        Err(error) => Err(backend("finishing")(error)),
    }
}
