//! One started attempt of the aggregate checks, from connecting to finishing: PipelineWise's
//! engine flow (config note §2.5, runs note §3.1) around diff-core's [`AggregatePlan`], which
//! makes every decision that needs no database.
//!
//! The steps, each ending the attempt when it cannot go on:
//!
//! 1. **Route**: the tap's and target's `db_conn`, databases cross-checked.
//! 2. **Sessions**: both sides connected within their deadline, each in a read-only, UTC,
//!    time-limited transaction. A `tap-mysql` source is a MySQL/MariaDB session
//!    ([`MySqlSideSession`]: the engine's statement timeout, `START TRANSACTION READ ONLY`);
//!    both sides are held as [`AnySide`], so the steps below are the same for either kind.
//! 3. **Plan**: both tables' `information_schema.columns` → [`AggregatePlan::new`] (column
//!    resolution, the timestamp gate, `schema_compatibility`, checksum descriptors, SQL).
//! 4. **Preflight** (T2), before any data read: metadata-only for a definition that reads no
//!    data; otherwise the source preflight fingerprinting the plan's `%s` SQL (PostgreSQL:
//!    `pg_index`; MySQL/MariaDB: `information_schema.STATISTICS`, the visibility column probed
//!    once per session, the same verdict), recorded, and a preflight that does not pass ends
//!    the attempt ERROR keeping the metadata results ([`AggregatePlan::preflight_stopped`]).
//! 5. **Historical start** (T3) for an unresolved start: `MIN` before the cutoff on both
//!    sides, the later minimum persisted before comparing; DEFERRED or a one-sided ERROR
//!    otherwise.
//! 6. **Compare**: one aggregate query per side over the same half-open window, each side's
//!    wall time recorded, values decoded in metric order and compared.
//! 7. **`row_diff`** (extension, see [`crate::row_diff`]): both sides of the same window
//!    streamed in key order through the merge; its result joins the others (last) and its
//!    first differences become the attempt's evidence. Planned at step 3 from both
//!    `pg_catalog`s (a MySQL source's types from its `information_schema.COLUMNS`, see
//!    [`crate::row_diff`]); a plan that fails makes only its own result ERROR. When it
//!    is the only data check, step 4 fingerprints its source streaming `SELECT`.
//! 8. **Finish** (T4): status, error, results, evidence and coverage in one transaction.
//!
//! **One deadline.** A server that does not answer a step within the statement timeout plus
//! [`datadiff_access::ANSWER_GRACE`] (its connect timeout while connecting) ends the attempt
//! ERROR at once: a cancel request goes to it, both sessions are given up without waiting for
//! a rollback, and no later step — `row_diff` included — is started, so nothing waits on a
//! server a second time. An attempt against a server that stops answering therefore ends
//! within the statement timeout plus 5 s of the server's last answer, plus the backend's time
//! to record it.
//!
//! Any failure (connection, catalog, statement timeout, missing column, unreadable value) is
//! an ERROR attempt with a one-line reason and no results — except a failed step 6 (the
//! aggregate query or its values: `row_checksum` over more columns than a function takes
//! arguments, a date beyond the timestamp range, `min_key` on a uuid key; not a server that
//! did not answer) when `row_diff` is planned: `row_diff` handles such tables, so it still
//! runs and the attempt ends ERROR (which beats its FAIL) with the failure's text, then
//! `row_diff`'s own failure text, keeping the metadata results, `row_diff`'s result and its
//! differences; when no preflight was recorded yet, a placeholder preflight carrying the same
//! reason is recorded first. A lost lease at any write is a SKIPPED summary (late results
//! discarded). A backend write that got no answer within the store's deadline (its session
//! stuck while the backend still takes connections) records the attempt ERROR with that
//! cause over a fresh connection, as a signal's interruption is recorded. Any other backend
//! failure ends the execution with [`Error::Backend`]: the attempt stays RUNNING until the
//! stale sweep retires it, as upstream's does.

use chrono::{DateTime, Utc};
use datadiff_backend_store::{Attempt, Completion, Difference, NewPreflight, Store, StoredDefinition};
use datadiff_diff_core::{
    Side,
    attempt::{
        CheckIdentity, CheckResult, HistoricalStart, Outcome, PreflightFacts, PreflightId, ResultType, RunStatus,
        RunSummary, SkipReason, SummaryStatus,
    },
    definition::CheckType,
    plan::{AggregatePlan, TableColumns},
};
use datadiff_preflight::{MetadataOnlyScope, PreflightRecord, QueryFingerprint, RowCount, SourceIndex, SourceTable};
use postgres::SimpleQueryMessage;

use crate::connections::{Connections, Route};
use crate::divided::{self, SharedWindow};
use crate::error::Error;
use crate::execute::ExecutionOptions;
use crate::in_flight::{InFlightAttempt, Registration};
use crate::progress;
use crate::row_diff::{self, RowDiffOutcome, RowDiffPlan, SourceCatalog};
use crate::row_diff_error::RowDiffError;
use datadiff_access::{AnySide, MySqlSideSession, SideError, SideErrorKind, SideSession};

/// Why the comparison stopped before producing an outcome of its own.
enum Stop {
    /// A failure that makes the attempt ERROR with this one-line reason.
    Failed(String),
    /// A backend write found the attempt no longer RUNNING.
    LeaseLost(SkipReason),
    /// Another backend failure.
    Backend(Error),
}

impl Stop {
    /// The attempt ERRORs with `reason`'s text as its one-line reason.
    fn failed(reason: impl std::fmt::Display) -> Stop {
        Stop::Failed(reason.to_string())
    }
}

/// Why a backend write did not happen.
enum WriteStop {
    /// The attempt is no longer RUNNING.
    LeaseLost(SkipReason),
    /// Another backend failure.
    Backend(Error),
}

impl WriteStop {
    fn of(action: &str, stored: &StoredDefinition) -> impl FnOnce(datadiff_backend_store::Error) -> WriteStop {
        let action = format!("{action} of {}", stored.definition.full_check_name);
        move |source| match source.lease_lost() {
            Some(reason) => WriteStop::LeaseLost(reason),
            None => WriteStop::Backend(Error::Backend { action, source }),
        }
    }
}

impl From<WriteStop> for Stop {
    fn from(stop: WriteStop) -> Stop {
        match stop {
            WriteStop::LeaseLost(reason) => Stop::LeaseLost(reason),
            WriteStop::Backend(error) => Stop::Backend(error),
        }
    }
}

/// Runs a backend write within the store's client deadline ([`Store::bounded`]: a backend
/// that stops answering ends the execution instead of hanging it), and once more when the
/// connection it ran on died under it (the backend restarted, a proxy dropped it): the pool
/// then opens a new connection, waiting up to its checkout timeout for the backend to come
/// back, so an attempt whose backend returns in that time is recorded as it ended. A write
/// that could not get a connection at all, or got no answer, is not repeated — that wait is
/// already over — and ends the execution with [`Error::Backend`] (the tick then stops, see
/// `TickReport::backend_lost`).
///
/// Repeating a finish whose commit reached the backend before the connection died finds the
/// attempt no longer RUNNING: it is then reported SKIPPED like any lost lease.
fn write_retrying<T: Send + 'static>(
    store: &Store,
    action: &'static str,
    write: impl Fn(&Store) -> Result<T, datadiff_backend_store::Error> + Clone + Send + 'static,
) -> Result<T, datadiff_backend_store::Error> {
    match store.bounded(action, write.clone()) {
        Err(error) if error.is_backend_lost() && !error.is_connection() && !is_no_answer(&error) => {
            tracing::warn!(action, error = %crate::error::chain(&error), "backend connection lost; writing again");
            store.bounded(action, write)
        }
        other => other,
    }
}

fn is_no_answer(error: &datadiff_backend_store::Error) -> bool {
    matches!(error, datadiff_backend_store::Error::NoAnswer { .. })
}

/// Both open sides of an attempt: the source PostgreSQL or MySQL/MariaDB, the target
/// PostgreSQL.
struct Sides {
    source: AnySide,
    target: AnySide,
}

impl Sides {
    /// Rolls both back and closes them, or — once either got no answer — gives both up
    /// without waiting (the attempt's one deadline has passed).
    fn close(self) {
        AnySide::close_both(self.source, self.target);
    }

    /// Whether a server did not answer within its deadline: the attempt waits on no server
    /// again.
    fn deadline_passed(&self) -> bool {
        self.source.is_abandoned() || self.target.is_abandoned()
    }
}

/// Runs `work` on both sides — on two threads when `concurrent`, else source then target —
/// and returns both results, source first (the source's failure first when both fail).
fn on_both<T: Send, E: Send + From<SideError>>(
    concurrent: bool,
    sides: &mut Sides,
    work: impl Fn(&mut AnySide) -> Result<T, E> + Sync,
) -> Result<(T, T), E> {
    if !concurrent {
        let source = work(&mut sides.source)?;
        return Ok((source, work(&mut sides.target)?));
    }
    let (source, target) = std::thread::scope(|scope| {
        let target = scope.spawn(|| work(&mut sides.target));
        let source = work(&mut sides.source);
        let target = target.join().unwrap_or_else(|_| {
            let line = "the target worker thread stopped unexpectedly";
            Err(SideError::new(Side::Target, "worker", SideErrorKind::Server, line).into())
        });
        (source, target)
    });
    Ok((source?, target?))
}

/// The execution of one started attempt.
pub(crate) struct AttemptRun<'a> {
    store: &'a Store,
    stored: &'a StoredDefinition,
    attempt: Attempt,
    options: &'a ExecutionOptions,
    registration: Registration,
    preflight: Option<(PreflightId, PreflightFacts)>,
    differences: Vec<Difference>,
    /// The session holding a divided window's owner lock, kept until the attempt is finished
    /// (see [`crate::divided`]).
    owner: Option<datadiff_backend_store::PartSession>,
}

impl<'a> AttemptRun<'a> {
    pub(crate) fn new(
        store: &'a Store,
        stored: &'a StoredDefinition,
        attempt: Attempt,
        options: &'a ExecutionOptions,
    ) -> AttemptRun<'a> {
        let registration = match &options.in_flight {
            Some(in_flight) => {
                in_flight.register(InFlightAttempt { run_id: attempt.run_id, check_id: attempt.check_id })
            }
            None => Registration::none(attempt.run_id),
        };
        AttemptRun::registered(store, stored, attempt, options, registration)
    }

    /// The execution of `attempt`, registered (or not) as `registration` says.
    fn registered(
        store: &'a Store,
        stored: &'a StoredDefinition,
        attempt: Attempt,
        options: &'a ExecutionOptions,
        registration: Registration,
    ) -> AttemptRun<'a> {
        AttemptRun {
            store,
            stored,
            attempt,
            options,
            registration,
            preflight: None,
            differences: Vec::new(),
            owner: None,
        }
    }

    /// The execution of a divided attempt another process started, for a joiner that
    /// finishes it (see [`join`]): not registered in flight (a signal to the joiner does not
    /// end the attempt).
    fn joining(
        store: &'a Store,
        stored: &'a StoredDefinition,
        attempt: Attempt,
        options: &'a ExecutionOptions,
    ) -> AttemptRun<'a> {
        let registration = Registration::none(attempt.run_id);
        AttemptRun::registered(store, stored, attempt, options, registration)
    }

    /// Executes the attempt to its end and summarises it.
    pub(crate) fn run(mut self, connections: &Connections) -> Result<RunSummary, Error> {
        let mut sides = None;
        let compared = self.compare(connections, &mut sides);
        if let Some(sides) = sides {
            sides.close();
        }
        let outcome = match compared {
            Ok(outcome) => outcome,
            Err(Stop::Failed(reason)) => Outcome::failed(reason),
            Err(Stop::LeaseLost(reason)) => return Ok(self.lease_lost(reason)),
            Err(Stop::Backend(error)) => return self.recorded_after_no_answer(error),
        };
        if self.registration.interrupted() {
            return Err(Error::Interrupted { run_id: self.attempt.run_id });
        }
        if self.preflight.is_none() {
            let reason = outcome.error.clone().unwrap_or_default();
            match self.record(&PreflightRecord::placeholder(reason)) {
                Ok(()) => {}
                Err(WriteStop::LeaseLost(reason)) => return Ok(self.lease_lost(reason)),
                Err(WriteStop::Backend(error)) => return self.recorded_after_no_answer(error),
            }
        }
        self.finish(outcome)
    }

    /// Steps 1–7: everything up to the outcome. Open sessions are left in `opened` for the
    /// caller to close whatever happens — unless `row_diff` runs: they are closed before it,
    /// while their servers answer, since it streams on connections of its own (a server that
    /// freezes while it streams then has no session of the attempt left to wait on).
    fn compare(&mut self, connections: &Connections, opened: &mut Option<Sides>) -> Result<Outcome, Stop> {
        let stored: &'a StoredDefinition = self.stored;
        let definition = &stored.definition;
        let concurrent = self.options.concurrent_sides;
        let route = connections.route(definition).map_err(Stop::failed)?;
        let timeout = route.statement_timeout;
        // A tap-mysql source opens its MySQL session; everything else is PostgreSQL.
        let open_source = || match &route.mysql_source {
            Some(mysql) => MySqlSideSession::open(mysql, timeout).map(AnySide::MySql).map_err(String::from),
            None => SideSession::open(&route.source, timeout).map(AnySide::Postgres).map_err(String::from),
        };
        let open_target = || SideSession::open(&route.target, timeout).map(AnySide::Postgres).map_err(String::from);
        let (source, target) = if concurrent {
            std::thread::scope(|scope| {
                let target = scope.spawn(open_target);
                let source = open_source();
                let target = target.join().unwrap_or_else(|_| Err("the target connection thread stopped".to_owned()));
                (source, target)
            })
        } else {
            let source = open_source();
            let target = match &source {
                Ok(_) => open_target(),
                Err(_) => Err(String::new()),
            };
            (source, target)
        };
        let (source, target) = match (source, target) {
            (Ok(source), Ok(target)) => (source, target),
            (Err(reason), _) | (Ok(_), Err(reason)) => return Err(Stop::Failed(reason)),
        };
        self.registration.add_canceller(source.canceller());
        self.registration.add_canceller(target.canceller());
        let sides = opened.insert(Sides { source, target });

        // Step 3: the plan, from both catalogs.
        let (source_columns, target_columns): (TableColumns, TableColumns) =
            on_both(concurrent, sides, |side| match side.side() {
                Side::Source => side.columns(&definition.source_schema, &definition.source_table),
                Side::Target => side.columns(&definition.target_schema, &definition.target_table),
            })
            .map_err(Stop::failed)?;
        let plan = AggregatePlan::new(definition, &source_columns, &target_columns)
            .map_err(|e| Stop::Failed(e.to_string()))?;
        // `run --strategy` overrides each definition's strategy (the answer is the same).
        let row_diff_settings = definition.extensions.row_diff.map(|settings| match self.options.row_diff_strategy {
            Some(strategy) => settings.with_strategy(strategy),
            None => settings,
        });
        let row_diff_plan = match row_diff_settings {
            None => None,
            // A MySQL source: its types are the aggregate plan's; the replica's from pg_catalog.
            Some(settings) if route.mysql_source.is_some() => {
                let Some(target) = sides.target.as_postgres() else {
                    return Err(Stop::Failed("row_diff needs a PostgreSQL target".to_owned()));
                };
                let target_catalog = row_diff::catalog(target, &definition.target_schema, &definition.target_table)
                    .map_err(Stop::failed)?;
                let planned =
                    RowDiffPlan::new(definition, &plan, SourceCatalog::MySql(&source_columns), &target_catalog).map(
                        |planned| planned.with_strategy(settings.strategy()).with_split(self.options.row_diff_split),
                    );
                Some((settings, planned))
            }
            Some(settings) => {
                let (source_catalog, target_catalog) = on_both(concurrent, sides, |side| {
                    let which = side.side();
                    let Some(side) = side.as_postgres() else {
                        return Err(RowDiffError::NotPostgres("side"));
                    };
                    match which {
                        Side::Source => row_diff::catalog(side, &definition.source_schema, &definition.source_table),
                        Side::Target => row_diff::catalog(side, &definition.target_schema, &definition.target_table),
                    }
                })
                .map_err(Stop::failed)?;
                let planned =
                    RowDiffPlan::new(definition, &plan, SourceCatalog::Postgres(&source_catalog), &target_catalog).map(
                        |planned| planned.with_strategy(settings.strategy()).with_split(self.options.row_diff_split),
                    );
                Some((settings, planned))
            }
        };

        // Step 4: the preflight, before any data is read.
        let mut fingerprint_sql = plan.fingerprint_sql().to_owned();
        if !plan.has_metric_checks() {
            match &row_diff_plan {
                // row_diff is the only data check: the preflight fingerprints its stream.
                Some((_, Ok(row_diff))) => fingerprint_sql = row_diff.fingerprint_sql(),
                // It cannot run: ERROR without reading data (a placeholder preflight).
                Some((_, Err(reason))) => return Ok(plan.outcome(vec![row_diff::error_result(reason)])),
                None => return self.metadata_only(&plan),
            }
        }
        let (schema, table, timestamp_column) = (
            definition.source_schema.clone(),
            definition.source_table.clone(),
            plan.columns().source_timestamp().name.clone(),
        );
        let stopped = match &mut sides.source {
            AnySide::Postgres(source) => {
                let record = source
                    .with_client("preflight", move |client| {
                        let table = SourceTable { schema: &schema, table: &table, timestamp_column: &timestamp_column };
                        datadiff_preflight::preflight(client, &table, QueryFingerprint::of_sql(&fingerprint_sql))
                    })
                    .map_err(|error| Stop::Failed(error.into()))?;
                self.recorded(&plan, &record)?
            }
            // MySQL/MariaDB: indexes from information_schema.STATISTICS, the same verdict.
            AnySide::MySql(source) => {
                let indexes = source.indexes(&schema, &table).map_err(String::from);
                let count = |limit| match source.bounded_count(&schema, &table, limit) {
                    Ok(Some(rows)) => RowCount::Counted(rows),
                    Ok(None) => RowCount::Malformed,
                    Err(error) => RowCount::Failed(error.into()),
                };
                let record = datadiff_preflight::preflight_with(
                    &timestamp_column,
                    indexes,
                    count,
                    QueryFingerprint::of_sql(&fingerprint_sql),
                );
                self.recorded(&plan, &record)?
            }
        };
        if let Some(outcome) = stopped {
            return Ok(outcome);
        }
        if self.registration.interrupted() {
            return Err(Stop::Failed("interrupted".to_owned()));
        }
        if plan.metrics().is_empty() && row_diff_plan.is_none() {
            return Ok(plan.outcome(Vec::new()));
        }

        // Step 5: an unresolved historical start.
        let naive = |side: Side| match side {
            Side::Source => plan.columns().source_timestamp().is_naive_timestamp(),
            Side::Target => plan.columns().target_timestamp().is_naive_timestamp(),
        };
        let mut bounds = self.attempt.bounds;
        if bounds.start.is_none() {
            let cutoff = bounds.end;
            let (source_minimum, target_minimum) = on_both(concurrent, sides, |side| {
                let which = side.side();
                side.minimum(plan.minimum_sql(which), cutoff, naive(which))
            })
            .map_err(Stop::failed)?;
            match plan.historical_start(source_minimum, target_minimum, cutoff) {
                HistoricalStart::Stop(outcome) => return Ok(outcome),
                HistoricalStart::Resolved(start) => {
                    let run_id = self.attempt.run_id;
                    write_retrying(self.store, "recording the historical start", move |store| {
                        store.resolve_historical_start(run_id, start)
                    })
                    .map_err(WriteStop::of("recording the historical start", stored))?;
                    bounds.start = Some(start);
                    self.attempt.bounds.start = Some(start);
                }
            }
        }

        // Step 6: one aggregate query per side, the same window bound on both. When it fails
        // and row_diff can run, row_diff still runs (on connections of its own) and the
        // attempt ends ERROR keeping its result and evidence.
        let mut results = Vec::new();
        let mut aggregate_failure = None;
        if !plan.metrics().is_empty() {
            let compared = on_both(concurrent, sides, |side| {
                let which = side.side();
                side.aggregate(plan.metric_sql(which), bounds, naive(which), plan.metrics())
            })
            .map_err(|error| error.to_string())
            .and_then(|((source_row, source_seconds), (target_row, target_seconds))| {
                plan.compare(&source_row, &target_row, source_seconds, target_seconds)
                    .map_err(|error| error.to_string())
            });
            match compared {
                Ok(compared) => results = compared,
                // Not after a server that did not answer: the attempt's one deadline has
                // passed, and row_diff would wait on the same server again.
                Err(reason)
                    if matches!(row_diff_plan, Some((_, Ok(_))))
                        && !self.registration.interrupted()
                        && !sides.deadline_passed() =>
                {
                    aggregate_failure = Some(reason);
                }
                Err(reason) => return Err(Stop::Failed(reason)),
            }
        }

        // Step 7: the row_diff extension joins here.
        if let Some((settings, row_diff_plan)) = &row_diff_plan {
            let Some(start) = bounds.start else {
                return Err(Stop::Failed("row_diff has no window start".to_owned()));
            };
            let max_examples = settings.max_examples() as usize;
            // `auto` streams small windows outright, when their rows were counted.
            let counted = counted_rows(&results);
            // The progress bar takes an estimate where nothing was counted.
            let expected = match (self.options.progress.is_some(), row_diff_plan, sides.source.as_postgres()) {
                (true, Ok(row_diff), Some(source)) => {
                    counted.or_else(|| estimated_rows(source, row_diff, start, bounds.end))
                }
                _ => counted,
            };
            let rows = RowCounts { expected, counted };
            if let Some(sides) = opened.take() {
                sides.close();
            }
            let before = (divided::results_json(&results), aggregate_failure.clone());
            results.push(self.row_diff(row_diff_plan, &route, start, bounds.end, max_examples, rows, before));
        }
        match aggregate_failure {
            None => Ok(plan.outcome(results)),
            Some(reason) => Ok(aggregate_failed(&plan, reason, results)),
        }
    }

    /// A definition that reads no data: the metadata-only preflight and the metadata results.
    fn metadata_only(&mut self, plan: &AggregatePlan) -> Result<Outcome, Stop> {
        let definition = &self.stored.definition;
        let scope = MetadataOnlyScope {
            source_schema: definition.source_schema.clone(),
            source_table: definition.source_table.clone(),
            target_schema: definition.target_schema.clone(),
            target_table: definition.target_table.clone(),
            columns: plan.columns().logical_names(),
        };
        self.record(&PreflightRecord::metadata_only(&scope))?;
        Ok(plan.outcome(Vec::new()))
    }

    /// The `row_diff` step over `[start, end)`: its result, and its differences kept for the
    /// finish (they belong to this same attempt). `before`: the results computed before it
    /// and an aggregate failure, stored with a divided window for whichever process
    /// finishes it.
    #[allow(clippy::too_many_arguments)]
    fn row_diff(
        &mut self,
        plan: &Result<RowDiffPlan, RowDiffError>,
        route: &Route,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
        max_examples: usize,
        rows: RowCounts,
        before: (serde_json::Value, Option<String>),
    ) -> CheckResult {
        self.differences.clear();
        let plan = match plan {
            Ok(plan) => plan,
            Err(reason) => return row_diff::error_result(reason),
        };
        let registration = &self.registration;
        let progress = self.options.progress.as_ref().map(|meter| meter.start_stream(rows.expected));
        let mut shared = SharedWindow::new(self.store, self.attempt.run_id, self.options.clock);
        shared.before = Some(before);
        let found = plan.run(
            route,
            [start, end],
            max_examples,
            rows.counted,
            &|| registration.interrupted(),
            progress,
            Some(&mut shared),
        );
        self.owner = shared.owner.take();
        self.row_diff_result(found)
    }

    /// The `row_diff` result of what it found, its differences kept for the finish.
    fn row_diff_result(&mut self, found: Result<RowDiffOutcome, RowDiffError>) -> CheckResult {
        match found {
            Ok(found) => {
                let mut result = found.result();
                if let Some(error) = &mut result.error {
                    // The command that lists the rows: only here is the run id at hand.
                    error.push_str(&format!(" (datadiff report differences --run-id {})", self.attempt.run_id));
                }
                self.differences = found.differences;
                result
            }
            Err(reason) => row_diff::error_result(&reason),
        }
    }

    /// Records the source preflight and, when it did not pass, the outcome that ends the
    /// attempt (the metadata results kept).
    fn recorded<I: SourceIndex>(
        &mut self,
        plan: &AggregatePlan,
        record: &PreflightRecord<I>,
    ) -> Result<Option<Outcome>, Stop> {
        self.record(record)?;
        if record.passed() {
            return Ok(None);
        }
        Ok(Some(plan.preflight_stopped(record.status, record.error.as_deref(), &record.findings)))
    }

    /// Records `record` as this attempt's preflight (once).
    fn record<I: SourceIndex>(&mut self, record: &PreflightRecord<I>) -> Result<(), WriteStop> {
        let preflight = NewPreflight {
            status: record.status,
            query_fingerprint: record.query_fingerprint.as_str().to_owned(),
            index_metadata: record.index_metadata_json(),
            findings: record.findings_json(),
            error: record.error.clone(),
            table_rows: record.table_rows,
            row_limit: record.row_limit,
            has_leading_index: record.has_leading_index,
        };
        let (run_id, check_id, now) = (self.attempt.run_id, self.attempt.check_id, self.options.clock.now());
        let id = write_retrying(self.store, "recording the preflight", move |store| {
            store.record_preflight(run_id, check_id, &preflight, now)
        })
        .map_err(WriteStop::of("recording the preflight", self.stored))?;
        self.preflight = Some((id, PreflightFacts::of(record)));
        Ok(())
    }

    /// Step 8: the finish transaction, and the summary of what it stored.
    fn finish(mut self, outcome: Outcome) -> Result<RunSummary, Error> {
        let completion = Completion {
            run_id: self.attempt.run_id,
            status: outcome.status,
            preflight_id: self.preflight.as_ref().map(|(id, _)| *id),
            error: outcome.error,
            results: outcome.results.clone(),
            differences: std::mem::take(&mut self.differences),
            finished_at: self.options.clock.now(),
        };
        let finishing = completion.clone();
        match write_retrying(self.store, "finishing the attempt", move |store| store.finish_attempt(&finishing)) {
            Ok(finished) => {
                let stored = finished.attempt;
                Ok(RunSummary {
                    check: CheckIdentity::of(self.stored),
                    status: SummaryStatus::of_run(stored.status).unwrap_or(SummaryStatus::Error),
                    slot_status: Some(stored.status),
                    scheduled_for: Some(stored.scheduled_for),
                    bounds: Some(stored.bounds),
                    run_id: Some(stored.run_id),
                    attempt: Some(stored.attempt),
                    trigger: Some(stored.trigger),
                    rerun_of_run_id: stored.rerun_of_run_id,
                    remediation_reference: stored.remediation_reference,
                    reason: stored.error,
                    results: outcome.results,
                    preflight: self.preflight.map(|(_, facts)| facts),
                })
            }
            Err(error) => match error.lease_lost() {
                Some(reason) => Ok(self.lease_lost(reason)),
                None => {
                    let action = format!("finishing an attempt of {}", self.stored.definition.full_check_name);
                    self.recorded_after_no_answer(Error::Backend { action, source: error })
                }
            },
        }
    }

    /// After a backend operation of this attempt got no answer within the store's deadline
    /// (its session stuck — a frozen server process, a lock that is never released — while
    /// the backend may still take new connections): records the attempt ERROR with that very
    /// cause over a fresh connection ([`Store::reopen`]), as a signal's interruption is
    /// recorded, rather than leaving it RUNNING for the stale sweep's generic lease expiry.
    /// Returns the attempt's summary, or `error` itself for any other failure and when the
    /// backend cannot be reached that way either (the tick then stops: the backend is gone).
    fn recorded_after_no_answer(self, error: Error) -> Result<RunSummary, Error> {
        let Error::Backend { source: cause @ datadiff_backend_store::Error::NoAnswer { .. }, .. } = &error else {
            return Err(error);
        };
        let reason = cause.to_string();
        let attempt = InFlightAttempt { run_id: self.attempt.run_id, check_id: self.attempt.check_id };
        let (outcome, clock) = (Outcome::failed(reason.clone()), self.options.clock);
        let recorded = self.store.reopen().and_then(|fresh| {
            let recorded = fresh.bounded("recording an attempt's cause", move |store| {
                Ok(crate::execute::record_stopped(store, attempt, outcome, "stuck", clock))
            })?;
            Ok((fresh, recorded))
        });
        match recorded {
            Ok((_, Ok(true))) => {
                tracing::warn!(run_id = %attempt.run_id, %reason, "recorded the attempt ERROR over a fresh backend connection");
                Ok(RunSummary {
                    check: CheckIdentity::of(self.stored),
                    status: SummaryStatus::Error,
                    slot_status: Some(RunStatus::Error),
                    scheduled_for: Some(self.attempt.scheduled_for),
                    bounds: Some(self.attempt.bounds),
                    run_id: Some(self.attempt.run_id),
                    attempt: Some(self.attempt.attempt),
                    trigger: Some(self.attempt.trigger),
                    rerun_of_run_id: self.attempt.rerun_of_run_id,
                    remediation_reference: self.attempt.remediation_reference,
                    reason: Some(reason),
                    results: Vec::new(),
                    preflight: self.preflight.map(|(_, facts)| facts),
                })
            }
            // Finished meanwhile (the stuck write may have committed): as stored.
            Ok((fresh, Ok(false))) => match fresh.attempt(attempt.run_id) {
                Ok(Some(stored)) if stored.status != RunStatus::Running => {
                    Ok(crate::tick::summary_of_attempt(CheckIdentity::of(self.stored), &stored))
                }
                _ => Err(error),
            },
            Ok((_, Err(failure))) => {
                tracing::error!(error = %crate::error::chain(&failure), "recording the attempt over a fresh connection failed");
                Err(error)
            }
            Err(failure) => {
                tracing::error!(error = %crate::error::chain(&failure), "no fresh backend connection to record the attempt");
                Err(error)
            }
        }
    }

    /// SKIPPED: the attempt is no longer ours; nothing more is written.
    fn lease_lost(self, reason: SkipReason) -> RunSummary {
        let slot_status = match &reason {
            SkipReason::LeaseLost { status, .. } => Some(*status),
            _ => Some(RunStatus::Running),
        };
        RunSummary {
            check: CheckIdentity::of(self.stored),
            status: SummaryStatus::Skipped,
            slot_status,
            scheduled_for: Some(self.attempt.scheduled_for),
            bounds: Some(self.attempt.bounds),
            run_id: Some(self.attempt.run_id),
            attempt: Some(self.attempt.attempt),
            trigger: Some(self.attempt.trigger),
            rerun_of_run_id: self.attempt.rerun_of_run_id,
            remediation_reference: self.attempt.remediation_reference,
            reason: Some(reason.message()),
            results: Vec::new(),
            preflight: self.preflight.map(|(_, facts)| facts),
        }
    }
}

/// The outcome of an attempt whose aggregate query failed while `row_diff` ran: ERROR (it
/// beats a `row_diff` FAIL), the failure's text then `row_diff`'s failure text when it did
/// not pass (joined by `"; "` as result texts are), the metadata results and `row_diff`'s
/// result kept. The metric checks have no result, as for any failed query.
fn aggregate_failed(plan: &AggregatePlan, reason: String, row_diff: Vec<CheckResult>) -> Outcome {
    let mut error = reason;
    if let Some(texts) = datadiff_diff_core::attempt::results_error(&row_diff) {
        error.push_str("; ");
        error.push_str(&texts);
    }
    let mut results = plan.metadata_results().to_vec();
    results.extend(row_diff);
    Outcome { status: RunStatus::Error, error: Some(error), results }
}

/// The `row_count` source value of an attempt's results, when it has one.
fn counted_rows(results: &[CheckResult]) -> Option<u64> {
    let row_count = results.iter().find(|result| result.check_type == ResultType::Check(CheckType::RowCount))?;
    // Metric values are canonical strings ("20000"), as upstream stores them.
    match &row_count.source_value {
        serde_json::Value::String(text) => text.parse().ok(),
        other => other.as_u64(),
    }
}

/// The source rows of a `row_diff` window, as far as the attempt knows them.
#[derive(Debug, Clone, Copy)]
struct RowCounts {
    /// For a progress display: the count, else an estimate.
    expected: Option<u64>,
    /// The exact `row_count` of this attempt, when it has one.
    counted: Option<u64>,
}

/// The planner's estimate of the rows of the source streaming query, for a progress display
/// (no data read; a failed `EXPLAIN` only costs the estimate).
fn estimated_rows(
    source: &mut SideSession,
    plan: &RowDiffPlan,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Option<u64> {
    let explain = format!("EXPLAIN (FORMAT JSON) {}", plan.source_select_sql(start, end)?);
    let messages = source.with_client("EXPLAIN", move |client| client.simple_query(&explain)).ok()?.ok()?;
    messages.iter().find_map(|message| match message {
        SimpleQueryMessage::Row(row) => row.get(0).and_then(progress::plan_rows),
        _ => None,
    })
}

/// Joins the divided `row_diff` window of `run_id`, a RUNNING attempt of `stored` started by
/// another process (see [`crate::divided`]): plans the same comparison from the stored
/// definition and the attempt's window (its strategy the division's), claims and compares
/// parts on this process's threads, and — when every part is finished and the owner is gone
/// — finishes the attempt itself with the division's stored results, exactly as its owner
/// would. `Ok(None)`: nothing to join (not divided, not RUNNING), or the owner finishes it.
/// A joiner's signal does not end the attempt (it is not in flight here): the process dies
/// like a killed one, losing only the parts it held.
pub(crate) fn join(
    store: &Store,
    connections: &Connections,
    stored: &StoredDefinition,
    run_id: datadiff_diff_core::attempt::RunId,
    options: &ExecutionOptions,
) -> Result<Option<RunSummary>, Error> {
    let backend = |action: &'static str| {
        move |source| Error::Backend { action: format!("{action} of {}", stored.definition.full_check_name), source }
    };
    let Some(division) = store.division(run_id).map_err(backend("reading a divided window"))? else {
        return Ok(None);
    };
    let attempt = store.attempt(run_id).map_err(backend("reading a divided window"))?;
    let Some(attempt) = attempt.filter(|attempt| attempt.status == RunStatus::Running) else {
        return Ok(None);
    };
    let definition = &stored.definition;
    let (Some(start), Some(settings)) = (attempt.bounds.start, definition.extensions.row_diff) else {
        return Ok(None);
    };
    let planned = joined_plan(connections, stored, &division, options);
    let (route, plan, row_diff_plan) = match planned {
        Ok(planned) => planned,
        Err(reason) => {
            tracing::warn!(check = %definition.full_check_name, run_id = %run_id, %reason, "not joining a divided window");
            return Ok(None);
        }
    };
    let Some(key) = datadiff_access::split::SplitKey::parse(&division.split_key) else {
        return Ok(None);
    };
    let parts = store.run_parts(run_id).map_err(backend("reading a divided window"))?;
    let parts = match parts.iter().map(|part| divided::part_of(key, &part.range)).collect::<Result<Vec<_>, _>>() {
        Ok(parts) => parts,
        Err(reason) => {
            tracing::warn!(check = %definition.full_check_name, run_id = %run_id, %reason, "not joining a divided window");
            return Ok(None);
        }
    };
    let Some(before) = divided::results_of(&division.results) else {
        tracing::warn!(check = %definition.full_check_name, run_id = %run_id, "a division's results are unreadable");
        return Ok(None);
    };
    let mut shared = SharedWindow::new(store, run_id, options.clock);
    let max_examples = settings.max_examples() as usize;
    let joined = row_diff_plan.join(
        &route,
        [start, attempt.bounds.end],
        max_examples,
        counted_rows(&before),
        (key, parts),
        &|| false,
        &mut shared,
    );
    let found = match joined {
        Ok(None) => return Ok(None),
        Ok(Some(found)) => Ok(found),
        Err(reason) => match shared.owner {
            // Only the owner's successor words a failure into the attempt.
            Some(_) => Err(reason),
            None => {
                tracing::warn!(check = %definition.full_check_name, run_id = %run_id, %reason, "left a divided window");
                return Ok(None);
            }
        },
    };
    let mut run = AttemptRun::joining(store, stored, attempt, options);
    run.owner = shared.owner.take();
    let mut results = before;
    results.push(run.row_diff_result(found));
    let outcome = match division.error {
        None => plan.outcome(results),
        Some(reason) => aggregate_failed(&plan, reason, results),
    };
    run.finish(outcome).map(Some)
}

/// Why a process does not join a divided window it met.
#[derive(Debug, thiserror::Error)]
enum NotJoined {
    /// The definition's route cannot be resolved.
    #[error(transparent)]
    Route(#[from] crate::connections::RouteError),
    /// A MySQL or MariaDB source (never divided).
    #[error("a MySQL or MariaDB source is never divided")]
    MySqlSource,
    /// A side could not be opened or read.
    #[error(transparent)]
    Side(#[from] SideError),
    /// The aggregate plan failed.
    #[error(transparent)]
    Plan(#[from] datadiff_diff_core::plan::PlanError),
    /// The `row_diff` plan failed.
    #[error(transparent)]
    RowDiff(#[from] RowDiffError),
    /// The division names a strategy this datadiff does not know.
    #[error(transparent)]
    Strategy(#[from] datadiff_diff_core::segment::UnknownStrategy),
}

/// A joiner's plans: the route, the aggregate plan and the `row_diff` plan of `stored`, read
/// from both catalogs as the owner read them, with the division's strategy.
fn joined_plan(
    connections: &Connections,
    stored: &StoredDefinition,
    division: &datadiff_backend_store::Division,
    options: &ExecutionOptions,
) -> Result<(Route, AggregatePlan, RowDiffPlan), NotJoined> {
    let definition = &stored.definition;
    let route = connections.route(definition)?;
    if route.mysql_source.is_some() {
        return Err(NotJoined::MySqlSource);
    }
    let timeout = route.statement_timeout;
    let source = SideSession::open(&route.source, timeout).map(AnySide::Postgres)?;
    let target = SideSession::open(&route.target, timeout).map(AnySide::Postgres)?;
    let mut sides = Sides { source, target };
    let planned = (|| -> Result<(AggregatePlan, RowDiffPlan), NotJoined> {
        let (source_columns, target_columns) = on_both(true, &mut sides, |side| match side.side() {
            Side::Source => side.columns(&definition.source_schema, &definition.source_table),
            Side::Target => side.columns(&definition.target_schema, &definition.target_table),
        })?;
        let plan = AggregatePlan::new(definition, &source_columns, &target_columns)?;
        let (source_catalog, target_catalog) = on_both(true, &mut sides, |side| {
            let which = side.side();
            let Some(side) = side.as_postgres() else {
                return Err(RowDiffError::NotPostgres("side"));
            };
            match which {
                Side::Source => row_diff::catalog(side, &definition.source_schema, &definition.source_table),
                Side::Target => row_diff::catalog(side, &definition.target_schema, &definition.target_table),
            }
        })?;
        let strategy = division.strategy.parse()?;
        let row_diff_plan =
            RowDiffPlan::new(definition, &plan, SourceCatalog::Postgres(&source_catalog), &target_catalog)?
                .with_strategy(strategy)
                .with_split(options.row_diff_split);
        Ok((plan, row_diff_plan))
    })();
    sides.close();
    let (plan, row_diff_plan) = planned?;
    Ok((route, plan, row_diff_plan))
}
