//! The datadiff runner: attempts, `row_diff`, the scheduling tick, retries, remediation and
//! signals — the layer that executes definitions against sources and replicas (reached through
//! `datadiff-access`) and records them in the backend (`datadiff-backend-store`).
//!
//! # Overview
//!
//! Scheduled checks (SPEC §4–§5):
//!
//! * [`execute`] runs one attempt of one definition end to end, exactly as PipelineWise's
//!   data-diff does: it claims the slot through the backend store (or reports SKIPPED),
//!   connects to the source and the target ([`Connections`], from the tap's and target's
//!   `db_conn`), records the source preflight before reading any data, resolves a historical
//!   start, runs one aggregate query per side (concurrently), streams both sides of the
//!   window through the merge core when the definition has the `row_diff` extension (SPEC
//!   §10: the rows that differ, by key and column name), and finishes the attempt with its
//!   results, differences and coverage transition in one transaction. [`execute_started`]
//!   does the same for an attempt already started (a remediation).
//! * [`RunSummary`] is what an attempt (or a skip) comes to — what `run` prints and alerts
//!   read: [`CheckIdentity`], [`SummaryStatus`], slot, window, run, reason, results and
//!   [`PreflightFacts`]. They are pure data of `datadiff-diff-core`, re-exported here.
//! * The `datadiff-alerts` crate, beside this one, turns an invocation's summaries into
//!   source-index warnings and one failure alert per failed check; the runner never calls it
//!   (the CLI, or an embedding program, wires the two: the `datadiff` facade shows how).
//! * [`ExecutionOptions`]: sides concurrent or sequential, the [`Clock`] (`--at`), and an
//!   [`InFlight`] registry through which executing attempts can be interrupted and then
//!   recorded ERROR with [`record_interrupted`].
//! * [`backend_config`] maps a project's `backend_db` onto the store's settings and
//!   [`open_backend`] opens it within its connect timeout.
//!
//! Continuous verification (SPEC §4, runs note §1–§3):
//!
//! * [`tick`] is one `run_data_diff_checks` at a given `now` over a [`TickContext`]'s
//!   [`Selection`]: stale sweeps, due slots (oldest first, at most 24), automatic retries
//!   (once per cron interval, before the due slots), `--force`, the first-run historical
//!   rule, routes datadiff does not run yet SKIPPED — with `--jobs N` workers and one
//!   overview query for idle definitions. It returns a [`TickReport`] of upstream-shaped
//!   summaries (check, status, slot status, bounds, run id, reason); [`tick`] says the
//!   order of work.
//! * [`remediate`] is `rerun_data_diff_check`: a REMEDIATION attempt of a failed run with its
//!   exact revision → [`RemediationReport`].
//! * [`doctor`]: `datadiff doctor`'s checks of a project (backend, grants, sessions, columns,
//!   the servers' plans of every statement, preflights) as typed findings; nothing written.
//! * [`signals`]: with [`TickContext::with_signal_handling`], SIGTERM, SIGINT and SIGHUP record every
//!   in-flight attempt ERROR (`Terminated by SIGTERM before the check completed`) and the
//!   process then exits by the signal.
//!
//! An embedding program verifying continuously, as a cron-driven `run_data_diff_checks`
//! would:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use datadiff_runner::{Connections, Selection, TickContext, backend_config, open_backend, tick};
//!
//! let project = datadiff_config::load("/srv/pipelinewise", None)?;
//! let store = open_backend(backend_config(project.backend.as_ref().ok_or("no backend_db")?))?;
//! let context = TickContext::new(store, Connections::from_project(&project))
//!     .with_selection(Selection::all())
//!     .with_signal_handling(true);
//! loop {
//!     let report = tick(&context)?; // its `now`: the context's clock (the system's), read once
//!     for summary in &report.summaries {
//!         let reason = summary.reason.as_deref().unwrap_or_default();
//!         eprintln!("{} {} {reason}", summary.check.full_check_name, summary.status);
//!     }
//!     std::thread::sleep(Duration::from_secs(60));
//! }
//! # #[allow(unreachable_code)]
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ```no_run
//! use std::path::Path;
//!
//! use chrono::{TimeZone, Utc};
//! use datadiff_backend_store::DefinitionFilter;
//! use datadiff_diff_core::attempt::StartKind;
//! use datadiff_runner::{Clock, Connections, ExecutionOptions, SummaryStatus, backend_config, execute, open_backend};
//!
//! let project = datadiff_config::load("/srv/pipelinewise", None)?;
//! let store = open_backend(backend_config(project.backend.as_ref().ok_or("no backend_db")?))?;
//! store.gate(Path::new("/srv/pipelinewise"))?;
//! let connections = Connections::from_project(&project);
//! let clock = Clock::at(Utc.with_ymd_and_hms(2026, 7, 22, 13, 47, 0).unwrap()); // --at
//! let now = clock.now();
//! let options = ExecutionOptions { clock, ..ExecutionOptions::default() };
//! for definition in store.definitions(&DefinitionFilter::default())? {
//!     let slot = definition.definition.schedule()?.current_slot(now)?;
//!     let summary = execute(&store, &connections, &definition, slot, StartKind::Scheduled { force: false }, &options)?;
//!     let reason = summary.reason.as_deref().unwrap_or_default();
//!     match summary.status {
//!         SummaryStatus::Fail | SummaryStatus::Error => eprintln!("{} failed: {reason}", summary.check.full_check_name),
//!         SummaryStatus::Skipped => eprintln!("{} skipped: {reason}", summary.check.full_check_name),
//!         _ => {}
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it does not do (yet)
//!
//! Only PostgreSQL → PostgreSQL routes are executed (others are SKIPPED). The
//! tick does not loop or sleep: the caller chooses the clock (`--at` fixes it) and when to
//! tick again. Composite keys are not supported. It opens no connection itself: sessions and
//! streams come from `datadiff-access`; the standalone audit is `datadiff-audit`.
//!
//! # Decisions where the sources are silent (scheduling)
//!
//! * **`now` and recorded times.** One time source per tick: the context's [`Clock`]. The
//!   tick reads its `now` from it once, and `now` decides slots, sweep and retry eligibility;
//!   every recorded time comes from the same clock (`Clock::at(t)` for `--at t`, so a replay
//!   is coherent; the system clock otherwise, as upstream records times when written).
//! * **Idle definitions** are answered from one overview query (SPEC §11): a current slot seen
//!   attempted is reported SKIPPED by the same pure rule the store applies under the lock; a
//!   forced tick, a sweep or an unattempted slot goes through the store. Measured: 1,000
//!   current definitions with nothing due tick in about 0.08 s on 2 cores (example
//!   `tick_idle`).
//! * **Superseded revisions' stale attempts** are swept at the start of every tick over the
//!   selection (SPEC §4); unsupported routes are neither swept nor scheduled (PipelineWise,
//!   which runs them, sweeps its own).
//! * **Signals** are handled by a watcher thread woken through a pipe, not in the handler;
//!   it waits up to [`signals::GRACE`] for the invocation to wind down (cancelled statements
//!   return at once) so workers on other threads are recorded too, then re-raises with the
//!   disposition the process had before, so an embedding program's own handler still runs.
//!   One invocation per process may handle signals at a time ([`Error::Signals`]).
//! * **Backend failures** for one definition are its ERROR summary without a run whose
//!   reason is the error chain on one line; a failure before per-definition work (reading the
//!   selection or the overview) is the tick's `Err`, as upstream's traceback.
//! * **`--jobs N`** needs a pool of at least N backend connections
//!   ([`Error::PoolTooSmall`]); summaries keep definition order whatever N.
//!
//! # Decisions where the sources are silent (attempts)
//!
//! * **Failure texts** keep upstream's texts wherever upstream has one (column, type-gate,
//!   checksum, preflight, historical and database cross-check messages). For driver failures
//!   upstream stores `str(exc)`; datadiff stores one line naming the side and the step and
//!   the server's primary message only (`source aggregate query failed: canceling statement
//!   due to statement timeout`), never its DETAIL (which can quote row values).
//! * **Connecting** is bounded as a whole (TCP, TLS, authentication) by the connect timeout,
//!   as libpq's `connect_timeout` is; the two sides connect at the same time when sides are
//!   concurrent (upstream: source, then target). A `db_conn` without `host`, `user` or
//!   `password` falls back as libpq would (local socket, `PGUSER`, `PGPASSWORD` or the
//!   password file). A tap or target missing from the YAML is an ERROR attempt naming it.
//! * **The preflight fingerprint** hashes the source query with upstream's `%s`
//!   placeholders, so it equals PipelineWise's for the same definition.
//! * **Aggregate values** are decoded by result type: a `char(n)` min/max key keeps its
//!   padding (psycopg2 does), `bytea` is lowercase hex (upstream's driver makes it an
//!   unusable `memoryview` text); a type with no canonical form (a json key) is an ERROR
//!   attempt rather than a guess.
//! * **A backend failure** during an attempt (other than a lost lease, which is SKIPPED)
//!   ends the execution with [`Error::Backend`] and leaves the attempt RUNNING for the stale
//!   sweep, as upstream's exception does; [`RunSummary::failed_without_run`] is the summary
//!   upstream then prints. A write that only got no answer (its backend session stuck while
//!   the backend takes new connections) is the exception: the attempt is recorded ERROR with
//!   that cause over a fresh connection, as a signal's interruption is.
//! * **`row_diff`** streams each side on a second connection made from the side's settings
//!   (see the `row_diff` module: its plan, values, evidence and failure texts); with
//!   `row_diff` as the only data check the preflight fingerprints its source streaming
//!   `SELECT` (`%s` for the window bounds), and a `row_diff` that cannot be planned (no
//!   compare columns) ends the attempt ERROR before any data is read.

mod attempt;
mod backend;
mod clock;
mod connections;
mod divided;
pub mod doctor;
mod error;
mod execute;
pub mod horizon;
mod import;
mod in_flight;
mod key_uniqueness;
mod progress;
mod remediation;
mod row_diff;
mod row_diff_error;
mod selection;
pub mod signals;
mod tick;
mod window_bounds;
mod workers;

pub use backend::{backend_config, open_backend, open_backend_with};
pub use clock::Clock;
pub use connections::{
    Connections, MAX_CONNECT_TIMEOUT, Owner, Route, RouteError, SOURCE_APPLICATION_NAME, TARGET_APPLICATION_NAME,
};
pub use datadiff_diff_core::attempt::{CheckIdentity, PreflightFacts, RunSummary, SummaryStatus};
pub use error::Error;
pub use execute::{ExecutionOptions, execute, execute_started, record_interrupted};
pub use import::{Deactivation, ImportReport, changed_since_import, import_definitions, missing_taps};
pub use in_flight::{InFlight, InFlightAttempt};
pub use progress::{FLUSH_EVERY, ProgressMeter, ProgressSnapshot};
pub use remediation::{RemediationReport, remediate};
pub use row_diff::{RowDiffSplit, row_diff_select};
pub use row_diff_error::RowDiffError;
pub use selection::{Selection, project_taps};
pub use tick::{TickContext, TickReport, tick};
