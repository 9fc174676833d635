//! One scheduler tick: PipelineWise's `run_data_diff_checks` over the selected current
//! definitions at a given `now` (runs note §1–§3, SPEC §4); the rules are on [`tick`].

use std::num::NonZeroUsize;
use std::sync::Mutex;

use chrono::{DateTime, Utc};
use datadiff_backend_store::{Attempt, ScheduleOverview, Store, StoredDefinition, SweptRun};
use datadiff_diff_core::{
    attempt::{
        CheckIdentity, Horizon, HorizonSource, MAX_CATCH_UP, Reverify, RunSummary, Signal, StartKind, SummaryStatus,
    },
    schedule::{CheckTickPlan, Schedule, TickFacts, TickStep},
};

use crate::clock::Clock;
use crate::connections::Connections;
use crate::error::{Error, chain};
use crate::execute::{ExecutionOptions, execute};
use crate::in_flight::{InFlight, InFlightAttempt};
use crate::selection::Selection;
use crate::signals::{self, Interruption, Watch};
use crate::workers::Workers;

/// Everything a tick (or a remediation) needs, built once and reused tick after tick: the
/// backend, the connections to sources and targets, and the invocation's options.
///
/// ```no_run
/// use std::num::NonZeroUsize;
///
/// use datadiff_backend_store::PoolOptions;
/// use datadiff_runner::{Clock, Connections, Selection, TickContext, backend_config};
///
/// let project = datadiff_config::load("/srv/pipelinewise", None)?;
/// let jobs = NonZeroUsize::new(4).unwrap();
/// let store = datadiff_backend_store::Store::open_with(
///     backend_config(project.backend.as_ref().ok_or("no backend_db")?),
///     PoolOptions { max_size: 5, ..PoolOptions::default() }, // at least the jobs
/// )?;
/// let context = TickContext::new(store, Connections::from_project(&project))
///     .with_selection(Selection::tap("postgres", "payments"))
///     .with_jobs(jobs)
///     .with_signal_handling(true);
/// # let _ = context;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct TickContext {
    store: Store,
    connections: Connections,
    selection: Selection,
    force: bool,
    jobs: NonZeroUsize,
    options: ExecutionOptions,
    in_flight: InFlight,
    signals: bool,
    reverify: std::collections::BTreeMap<String, Reverify>,
    horizon: std::collections::BTreeMap<String, HorizonSource>,
}

impl TickContext {
    /// A context selecting every current definition, without force, one job, sides
    /// concurrent, the system clock, and no signal handling.
    pub fn new(store: Store, connections: Connections) -> TickContext {
        let in_flight = InFlight::new();
        TickContext {
            store,
            connections,
            selection: Selection::all(),
            force: false,
            jobs: NonZeroUsize::MIN,
            options: ExecutionOptions { in_flight: Some(in_flight.clone()), ..ExecutionOptions::default() },
            in_flight,
            signals: false,
            reverify: std::collections::BTreeMap::new(),
            horizon: std::collections::BTreeMap::new(),
        }
    }

    /// Which current definitions a tick works on (`--all`, `--target/--tap`, `--check`).
    pub fn with_selection(mut self, selection: Selection) -> TickContext {
        self.selection = selection;
        self
    }

    /// `--force`: start every due slot even when it was attempted (MANUAL, reusing the
    /// newest attempt's bounds). Retries are never forced.
    pub fn with_force(mut self, force: bool) -> TickContext {
        self.force = force;
        self
    }

    /// `checks.<name>.reverify` of `datadiff.yml` ([`datadiff_config::Project::reverify`]), by
    /// `full_check_name`: after its due slots, each tick re-attempts a definition's PASS slots
    /// last attempted longer ago than the period, least recently attempted first, at most its
    /// per-tick budget — each PipelineWise's `--force` (MANUAL, the newest attempt's bounds), so
    /// a FAIL invalidates coverage and alerts like any failure.
    pub fn with_reverify(mut self, reverify: std::collections::BTreeMap<String, Reverify>) -> TickContext {
        self.reverify = reverify;
        self
    }

    /// `checks.<name>.horizon` of `datadiff.yml` ([`datadiff_config::Project::horizon`]), by
    /// `full_check_name`: before a definition's first start in a tick, the replica's horizon is
    /// read ([`crate::horizon`]); a slot whose window ends beyond it is SKIPPED (never stored),
    /// with the horizon and the replica's position in its reason, and waits for a later tick.
    pub fn with_horizon(mut self, horizon: std::collections::BTreeMap<String, HorizonSource>) -> TickContext {
        self.horizon = horizon;
        self
    }

    /// `--jobs N`: work on N definitions at a time. The store's pool must hold at least N
    /// connections ([`PoolOptions::max_size`](datadiff_backend_store::PoolOptions)).
    pub fn with_jobs(mut self, jobs: NonZeroUsize) -> TickContext {
        self.jobs = jobs;
        self
    }

    /// The invocation's one time source: `Clock::at(t)` for `--at t` (each tick's `now`
    /// and every recorded time are `t`), [`Clock::System`] otherwise (each tick reads its
    /// `now` once when it begins; a recorded time is the moment it is written).
    pub fn with_clock(mut self, clock: Clock) -> TickContext {
        self.options.clock = clock;
        self
    }

    /// Changes the clock between ticks (a replay stepping through `--at` times: the next
    /// tick runs at the new instant).
    pub fn set_clock(&mut self, clock: Clock) {
        self.options.clock = clock;
    }

    /// Run each attempt's source and target statements at the same time (the default) or
    /// one after the other.
    pub fn with_concurrent_sides(mut self, concurrent: bool) -> TickContext {
        self.options.concurrent_sides = concurrent;
        self
    }

    /// Read every `row_diff` with `strategy`, whatever its definition says (`None`: each
    /// definition's own; see [`datadiff_diff_core::segment::Strategy`]).
    pub fn with_row_diff_strategy(mut self, strategy: Option<datadiff_diff_core::segment::Strategy>) -> TickContext {
        self.options.row_diff_strategy = strategy;
        self
    }

    /// Divide every `row_diff` window into `parts` key ranges (`run --row-diff-parts`; `0`,
    /// the default: as many as the threads the window gets, see [`tick`]). The results are
    /// those of the undivided window.
    pub fn with_row_diff_parts(mut self, parts: usize) -> TickContext {
        self.options.row_diff_split.parts = parts;
        self
    }

    /// Count finished attempts and `row_diff` rows on `meter` while ticks run, for a
    /// progress display (see [`ProgressMeter`](crate::ProgressMeter)).
    pub fn with_progress(mut self, meter: crate::ProgressMeter) -> TickContext {
        self.options.progress = Some(meter);
        self
    }

    /// Handle SIGTERM, SIGINT and SIGHUP during each tick and remediation: in-flight attempts are
    /// recorded ERROR, then the process exits by the signal (see [`crate::signals`]). Off by
    /// default for embedding programs; the `datadiff` command turns it on.
    pub fn with_signal_handling(mut self, signals: bool) -> TickContext {
        self.signals = signals;
        self
    }

    /// The backend.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The connections to sources and targets.
    pub fn connections(&self) -> &Connections {
        &self.connections
    }

    /// The selection.
    pub fn selection(&self) -> &Selection {
        &self.selection
    }

    /// The time source of ticks and recorded times.
    pub fn clock(&self) -> Clock {
        self.options.clock
    }

    /// The attempts executing now, e.g. to interrupt them from elsewhere.
    pub fn in_flight(&self) -> &InFlight {
        &self.in_flight
    }

    pub(crate) fn options(&self) -> &ExecutionOptions {
        &self.options
    }

    pub(crate) fn watch(&self) -> Watch<'_> {
        Watch { store: &self.store, in_flight: &self.in_flight, clock: self.options.clock }
    }

    /// Runs `work` with the signal handling this context asks for.
    pub(crate) fn guarded<T>(&self, interruption: &Interruption, work: impl FnOnce() -> T) -> Result<T, Error> {
        if self.signals { signals::guarded(self.watch(), interruption, work) } else { Ok(work()) }
    }
}

/// What a tick did.
#[derive(Debug, Clone, PartialEq)]
pub struct TickReport {
    /// The `now` the tick ran at: its context's clock, read once when it began (what a
    /// caller prints and gives the alerts).
    pub now: DateTime<Utc>,
    /// One summary per attempt, skip and failed definition: definition order, then
    /// retries, then due slots oldest first — what `run_data_diff_checks` prints and what
    /// alerts read (index warnings, then grouped failure alerts).
    pub summaries: Vec<RunSummary>,
    /// The stale attempts this tick retired (superseded revisions first).
    pub swept: Vec<SweptRun>,
    /// The signal that stopped the tick early, when the process survived it (its previous
    /// disposition did not end it).
    pub interrupted: Option<Signal>,
    /// Why the tick stopped early because the backend went away (its connection closed or
    /// it could not be reached, see `datadiff_backend_store::Error::is_backend_lost`): no
    /// further definition was worked on, since nothing could be recorded. `run` prints it
    /// after the summaries and exits 2 (SPEC §8: a backend problem).
    pub backend_lost: Option<String>,
}

impl TickReport {
    /// Whether any summary is FAIL or ERROR (`run` then exits 1 and alerts).
    pub fn has_failures(&self) -> bool {
        self.summaries.iter().any(|summary| summary.status.is_failure())
    }
}

/// Runs one tick over `context`'s selection at the `now` of the context's clock
/// ([`TickContext::with_clock`]), read once when the tick begins and returned in
/// [`TickReport::now`]. `now` decides the slots, the sweep's and the retries' eligibility;
/// recorded times come from the same clock, so a fixed clock (`--at`) makes a coherent
/// replay and no caller can give a tick a `now` its clock disagrees with.
///
/// `Err` only when the tick cannot begin: the selection or the overview cannot be read, the
/// pool is smaller than the jobs, or the signal handlers cannot be installed. Everything
/// that goes wrong for one definition is in its summaries.
///
/// For each definition, in [`Store::definitions`] order (target, tap, name) — steps 2 to 5 are
/// the pure [`CheckTickPlan`], which this tick executes:
///
/// 1. an unschedulable definition (its cron has no fire time before `now`) is an ERROR
///    summary without slot or window, and the tick goes on; a definition on a route datadiff
///    does not execute yet is SKIPPED with SPEC §0's reason, nothing written;
/// 2. the **stale sweep** of its revision (RUNNING attempts older than 30 min + 4 × its
///    statement timeout become ERROR, with their coverage transitions), before the latest
///    slot is read;
/// 3. the **due slots**, computed before retries run: the current slot (the latest cron fire
///    strictly before `now`), or every slot after the newest attempted one up to it, oldest
///    first, at most 24;
/// 4. **automatic retries** of failed slots of earlier cron intervals (at most 24, each at
///    most once per interval; `StartKind::Retry` with the current slot as `retry_before`);
/// 5. the due slots, each started with `--force` when given (not the retries) — a slot
///    already attempted is SKIPPED, a forced one is a MANUAL attempt reusing the newest
///    attempt's bounds, a revision's first slot may compare all history;
/// 6. with [`TickContext::with_reverify`], the **re-verifications**: PASS slots last attempted
///    longer ago than the period, least recently first, at most the per-tick budget, each a
///    MANUAL attempt reusing the newest attempt's bounds (`StartKind::Reverify`).
///
/// With [`TickContext::with_horizon`], the replica's horizon is read once per definition and
/// tick, before its first start; every start (retry, due slot, re-verification) whose window
/// ends beyond it is SKIPPED with the horizon's reason instead — nothing is written, so the slot
/// stays due. A horizon that cannot be read is the definition's ERROR without a run, and
/// nothing of it is attempted in that tick.
///
/// Before all that the tick retires stale attempts of superseded revisions in the selection
/// (SPEC §4's improvement; upstream never sweeps them).
///
/// **One round trip for idle checks.** SPEC §11 wants a tick over 1,000 current definitions
/// with nothing due under a second, and the per-check path costs a dozen round trips. So the
/// tick first asks [`Store::schedule_overview`] — one query for every definition — which of
/// them have a stale attempt, a retry candidate, or a current slot not attempted yet, and
/// calls the per-check operations only where they can change something. A current slot seen
/// attempted is reported SKIPPED from the overview's newest attempt through diff-core's
/// [`decide_start`](datadiff_diff_core::attempt::decide_start) (the same rule the store applies under the lock), unless `--force` or a
/// sweep changed the picture, in which case the store decides.
///
/// **Failures.** A backend failure while working on one definition is that definition's
/// ERROR summary without a run (upstream's behaviour): the summaries it already produced are
/// kept, its remaining slots wait for the next tick, and the other definitions go on —
/// unless the backend went away (its connection closed, it cannot be reached): then no
/// further definition is worked on, since nothing could be recorded, and the report says
/// why in [`TickReport::backend_lost`]. A backend failure before any per-definition work
/// (reading the selection, the overview) is the tick's `Err`.
///
/// **`--jobs N`.** Definitions are worked on by N threads, each definition wholly by one
/// (its slots stay sequential, two attempts of one definition never overlap); summaries come
/// back in definition order, then slot order, whatever N. With fewer runnable definitions
/// than jobs, the jobs left over take parts of the windows: each `row_diff` window is
/// compared on `N / definitions` threads (at least one), divided into as many key ranges
/// unless [`TickContext::with_row_diff_parts`] says how many (see
/// [`crate::RowDiffSplit`]); results and evidence are those of the undivided window.
///
/// **Signals** (when [`TickContext::with_signal_handling`]): see
/// [`signals`](crate::signals). Once a signal arrived no further attempt starts; the
/// interrupted ones are recorded ERROR.
///
/// **Several processes or hosts** may tick one backend at once: every start goes through the
/// store's check lock and re-decides there, so a slot gets one attempt; the others report
/// SKIPPED (`An attempt for this cron slot is already running`, or `... already attempted`).
/// A running attempt whose `row_diff` window its owner divided is joined instead: this
/// process compares parts of it until none is left, and finishes the attempt when its owner
/// is gone (see `crate::divided`); SKIPPED when the owner finishes it.
pub fn tick(context: &TickContext) -> Result<TickReport, Error> {
    let pool = context.store.pool().max_size();
    if usize::try_from(pool).unwrap_or(usize::MAX) < context.jobs.get() {
        return Err(Error::PoolTooSmall { jobs: context.jobs.get(), pool });
    }
    let now = context.clock().now();
    let interruption = Interruption::default();
    let mut report = context.guarded(&interruption, || run(context, now, &interruption))??;
    report.interrupted = interruption.signal();
    Ok(report)
}

/// What the tick does for one definition.
enum Plan {
    /// Its cron has no current slot: ERROR without a run.
    Unschedulable(String),
    /// Its route is not executed: SKIPPED.
    Unsupported { slot: DateTime<Utc>, reason: String },
    /// Sweep, retries, due slots; `overview` indexes the tick's overview.
    Run { schedule: Box<Schedule>, current: DateTime<Utc>, overview: usize },
}

struct Item<'a> {
    definition: &'a StoredDefinition,
    plan: Plan,
}

/// One definition's part of the tick.
#[derive(Default)]
struct CheckTick {
    summaries: Vec<RunSummary>,
    swept: Vec<SweptRun>,
}

fn backend(action: &str) -> impl FnOnce(datadiff_backend_store::Error) -> Error {
    let action = action.to_owned();
    move |source| Error::Backend { action, source }
}

fn run(context: &TickContext, now: DateTime<Utc>, interruption: &Interruption) -> Result<TickReport, Error> {
    let store = &context.store;
    let filter = context.selection.filter();
    let owned = filter.clone();
    let definitions = store
        .bounded("reading the selected definitions", move |store| store.definitions(&owned))
        .map_err(backend("reading the selected definitions"))?;
    let owned = filter.clone();
    let mut swept = store
        .bounded("sweeping superseded revisions", move |store| store.sweep_superseded(&owned, now))
        .map_err(backend("sweeping stale attempts of superseded revisions"))?;

    let mut runnable: Vec<(&StoredDefinition, DateTime<Utc>)> = Vec::new();
    let items: Vec<Item<'_>> = definitions
        .iter()
        .map(|definition| {
            let schedule = definition.definition.schedule();
            let plan = match schedule.and_then(|schedule| Ok((schedule.current_slot(now)?, schedule))) {
                Err(error) => Plan::Unschedulable(error.to_string()),
                Ok((slot, _)) if definition.definition.unsupported_route().is_some() => {
                    Plan::Unsupported { slot, reason: definition.definition.unsupported_route().unwrap_or_default() }
                }
                Ok((current, schedule)) => {
                    runnable.push((definition, current));
                    Plan::Run { schedule: Box::new(schedule), current, overview: runnable.len() - 1 }
                }
            };
            Item { definition, plan }
        })
        .collect();
    let owned: Vec<(StoredDefinition, DateTime<Utc>)> =
        runnable.iter().map(|(definition, current)| ((*definition).clone(), *current)).collect();
    let overviews = store
        .bounded("reading the schedule overview", move |store| {
            let checks: Vec<_> = owned.iter().map(|(definition, current)| (definition, *current)).collect();
            store.schedule_overview(&checks, now)
        })
        .map_err(backend("reading the schedule overview"))?;

    // `--jobs` left over by the definitions take parts of their windows: with fewer
    // definitions to run than jobs, each `row_diff` window gets `jobs / definitions` threads.
    let mut options = context.options().clone();
    options.row_diff_split.jobs = (context.jobs.get() / runnable.len().max(1)).max(1);
    let options = &options;
    let lost = Mutex::new(None);
    let ticks = Workers::new(context.jobs).map(&items, |item| {
        let mut check = CheckTick::default();
        if interruption.is_set() || lost.lock().map_or(true, |lost| lost.is_some()) {
            return check;
        }
        let identity = || CheckIdentity::of(item.definition);
        match &item.plan {
            Plan::Unschedulable(reason) => check.summaries.push(RunSummary::failed_without_run(identity(), reason)),
            Plan::Unsupported { slot, reason } => {
                check.summaries.push(RunSummary::not_attempted(identity(), *slot, reason.clone()));
            }
            Plan::Run { schedule, current, overview } => match overviews.get(*overview) {
                Some(overview) => {
                    let mut work = CheckWork {
                        context,
                        options,
                        definition: item.definition,
                        now,
                        interruption,
                        lost: &lost,
                        tick: check,
                    };
                    work.run(schedule, *current, overview);
                    check = work.tick;
                }
                None => check
                    .summaries
                    .push(RunSummary::failed_without_run(identity(), "the schedule overview missed this check")),
            },
        }
        check
    });
    let mut summaries = Vec::new();
    for check in ticks {
        summaries.extend(check.summaries);
        swept.extend(check.swept);
    }
    let backend_lost = lost.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    Ok(TickReport { now, summaries, swept, interrupted: None, backend_lost })
}

/// Whether the definition's remaining work goes on.
enum Next {
    Continue,
    Stop,
}

struct CheckWork<'a> {
    context: &'a TickContext,
    /// The context's execution options, with this tick's `row_diff` jobs.
    options: &'a ExecutionOptions,
    definition: &'a StoredDefinition,
    now: DateTime<Utc>,
    interruption: &'a Interruption,
    /// Set when the backend went away: the tick's other workers stop too.
    lost: &'a Mutex<Option<String>>,
    tick: CheckTick,
}

impl CheckWork<'_> {
    /// Executes the definition's [`CheckTickPlan`]: the order of work is decided there.
    fn run(&mut self, schedule: &Schedule, current: DateTime<Utc>, overview: &ScheduleOverview) {
        let store = &self.context.store;
        let definition = &self.definition.definition;
        let facts = TickFacts {
            current,
            latest_attempted: overview.latest_scheduled_for,
            has_stale_attempt: overview.has_stale_attempt,
            has_retry_candidate: overview.has_retry_candidate,
            // The overview's newest attempt answers only for the slot it was read for.
            current_slot_newest: (overview.current_slot == current)
                .then(|| overview.current_slot_newest.as_ref().map(Attempt::facts))
                .flatten(),
            force: self.context.force,
            reverify: self.context.reverify.get(&definition.full_check_name).copied(),
            now: self.now,
        };
        let mut plan = CheckTickPlan::new(schedule, facts, |slot| definition.window(slot));
        let mut horizon: Option<Horizon> = None;
        loop {
            match plan.next_step() {
                TickStep::Sweep => {
                    let (definition, now) = (self.definition.clone(), self.now);
                    let swept =
                        store.bounded("sweeping stale attempts", move |store| store.sweep_stale(&definition, now));
                    match swept {
                        Ok(swept) => {
                            plan.swept(!swept.is_empty());
                            self.tick.swept.extend(swept);
                        }
                        Err(error) => return self.failed(&backend("sweeping stale attempts")(error)),
                    }
                }
                TickStep::ListRetries => {
                    let check_id = self.definition.check_id;
                    let listed = store.bounded("listing retry candidates", move |store| {
                        store.retry_candidates(check_id, current, MAX_CATCH_UP)
                    });
                    match listed {
                        Ok(candidates) => {
                            plan.retry_candidates(candidates.iter().map(|candidate| candidate.scheduled_for))
                        }
                        Err(error) => return self.failed(&backend("listing retry candidates")(error)),
                    }
                }
                TickStep::ListReverifications { verified_before, limit } => {
                    let check_id = self.definition.check_id;
                    let listed = store.bounded("listing re-verification candidates", move |store| {
                        store.reverification_candidates(check_id, verified_before, limit)
                    });
                    match listed {
                        Ok(slots) => plan.reverification_candidates(slots),
                        Err(error) => return self.failed(&backend("listing re-verification candidates")(error)),
                    }
                }
                TickStep::Start { slot, kind } => {
                    if let Some(source) = self.context.horizon.get(&definition.full_check_name) {
                        if horizon.is_none() {
                            match self.read_horizon(source) {
                                Some(read) => horizon = Some(read),
                                None => return,
                            }
                        }
                        let refusal = horizon
                            .as_ref()
                            .zip(definition.window(slot))
                            .and_then(|(horizon, window)| horizon.refusal(window.end));
                        if let Some(reason) = refusal {
                            tracing::info!(check = %definition.full_check_name, slot = %slot, %reason, "slot not attempted");
                            let identity = CheckIdentity::of(self.definition);
                            self.tick.summaries.push(RunSummary::not_attempted(identity, slot, reason));
                            continue;
                        }
                    }
                    if let Next::Stop = self.start(slot, kind) {
                        return;
                    }
                }
                TickStep::Skip { slot, skip } => {
                    let context = self.context;
                    let (store, connections) = (&context.store, &context.connections);
                    match crate::execute::skipped_or_joined(
                        store,
                        connections,
                        self.definition,
                        slot,
                        &skip,
                        self.options,
                    ) {
                        Ok(summary) => self.tick.summaries.push(summary),
                        Err(error) => return self.failed(&error),
                    }
                }
                TickStep::Done => return,
            }
        }
    }

    /// Reads the definition's horizon; `None` after a failure, reported as the definition's
    /// ERROR without a run.
    fn read_horizon(&mut self, source: &HorizonSource) -> Option<Horizon> {
        let definition = &self.definition.definition;
        let read = match self.context.connections.route(definition) {
            Ok(route) => crate::horizon::read(&route, definition, source, self.now).map_err(|error| chain(&error)),
            Err(error) => Err(chain(&error)),
        };
        match read {
            Ok(horizon) => {
                tracing::debug!(check = %definition.full_check_name, applied_up_to = ?horizon.applied_up_to, position = %horizon.position, "horizon read");
                // For report metrics' applied lag; the tick goes on without it.
                let (name, setting, now) = (definition.full_check_name.clone(), source.to_string(), self.now);
                let (applied_up_to, position) = (horizon.applied_up_to, horizon.position.clone());
                let recorded = self.context.store.bounded("recording the replica horizon", move |store| {
                    store.record_replica_horizon(&name, &setting, now, applied_up_to, &position)
                });
                if let Err(error) = recorded {
                    tracing::warn!(check = %definition.full_check_name, error = %chain(&error), "the replica horizon was not recorded");
                }
                Some(horizon)
            }
            Err(reason) => {
                tracing::error!(check = %definition.full_check_name, error = %reason, "horizon not read");
                self.tick.summaries.push(RunSummary::failed_without_run(CheckIdentity::of(self.definition), reason));
                None
            }
        }
    }

    /// Starts and executes one attempt (or reports its skip).
    fn start(&mut self, slot: DateTime<Utc>, kind: StartKind) -> Next {
        if self.interruption.is_set() {
            return Next::Stop;
        }
        let context = self.context;
        match execute(&context.store, &context.connections, self.definition, slot, kind, self.options) {
            Ok(summary) => {
                self.tick.summaries.push(summary);
                Next::Continue
            }
            Err(Error::Interrupted { run_id }) => {
                self.tick.summaries.push(interrupted(context, self.definition, run_id, self.interruption.signal()));
                Next::Stop
            }
            Err(error) => {
                self.failed(&error);
                Next::Stop
            }
        }
    }

    /// Upstream's summary of a check whose work failed outside an attempt; a backend that
    /// went away also stops the tick (see [`TickReport::backend_lost`]).
    fn failed(&mut self, error: &Error) {
        tracing::error!(check = %self.definition.definition.full_check_name, error = %chain(error), "check failed");
        self.tick.summaries.push(RunSummary::failed_without_run(CheckIdentity::of(self.definition), chain(error)));
        if error.is_backend_lost()
            && let Ok(mut lost) = self.lost.lock()
        {
            lost.get_or_insert_with(|| chain(error));
        }
    }
}

/// An attempt that stopped because it was interrupted: recorded ERROR here when a signal
/// did it (the watcher may have missed it), then summarised as stored.
pub(crate) fn interrupted(
    context: &TickContext,
    definition: &StoredDefinition,
    run_id: datadiff_diff_core::attempt::RunId,
    signal: Option<Signal>,
) -> RunSummary {
    let attempt = InFlightAttempt { run_id, check_id: definition.check_id };
    if let Some(signal) = signal {
        signals::record(context.watch(), attempt, signal);
    }
    let identity = CheckIdentity::of(definition);
    match context.store.attempt(run_id) {
        Ok(Some(stored)) if stored.status != datadiff_diff_core::attempt::RunStatus::Running => {
            summary_of_attempt(identity, &stored)
        }
        Ok(_) | Err(_) => RunSummary {
            run_id: Some(run_id),
            ..RunSummary::failed_without_run(identity, format!("run {run_id} was interrupted before it completed"))
        },
    }
}

/// The summary of an attempt as stored (no results: an interrupted attempt has none).
pub(crate) fn summary_of_attempt(check: CheckIdentity, attempt: &Attempt) -> RunSummary {
    RunSummary {
        check,
        status: SummaryStatus::of_run(attempt.status).unwrap_or(SummaryStatus::Error),
        slot_status: Some(attempt.status),
        scheduled_for: Some(attempt.scheduled_for),
        bounds: Some(attempt.bounds),
        run_id: Some(attempt.run_id),
        attempt: Some(attempt.attempt),
        trigger: Some(attempt.trigger),
        rerun_of_run_id: attempt.rerun_of_run_id,
        remediation_reference: attempt.remediation_reference.clone(),
        reason: attempt.error.clone(),
        results: Vec::new(),
        preflight: None,
    }
}
