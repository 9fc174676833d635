//! The datadiff backend database: PipelineWise-identical migrations, connections, the
//! schema gate, and the typed repositories and reports through which datadiff reads and
//! writes every definition, attempt, result and watermark.
//!
//! # Overview
//!
//! * [`BackendConfig`] — upstream's `backend_db` settings (two roles, `sslmode`, timeouts)
//!   plus datadiff's `sslrootcert` and client certificate (`sslcert`, `sslkey`); `Debug`
//!   redacts passwords. [`SslMode`](datadiff_diff_core::definition::SslMode) has libpq's
//!   meaning, implemented with OpenSSL (see its docs for exactly what each mode checks).
//! * [`Store`] — an opened backend: an r2d2 pool of application-role sessions (UTC,
//!   upstream's `application_name`), a single DDL-role session for migrations,
//!   [`Store::status`], the schema gate [`Store::gate`] and [`Store::migrate`].
//! * [`migrate()`](migrate::migrate) and the pure [`plan`] — PipelineWise's Alembic chain
//!   `001`–`004` reproduced in datadiff's own SQL, recorded in `public.alembic_version`, and
//!   datadiff's extension chain (`datadiff_schema_migrations`, checksummed, creating
//!   `datadiff_run_differences`); all pending steps in one transaction under
//!   `pg_advisory_xact_lock(hashtext('datadiff.migrate'))`. See [`migrate`] for the rules.
//! * [`SchemaStatus`] — the applied upstream revision and extensions; [`SchemaStatus::gate`].
//! * [`Catalog`] — the catalog as comparable facts; the expected PipelineWise 004 catalog
//!   is a hand-typed file, used to adopt a backend PipelineWise created.
//! * [`metrics_exposition`] — `report metrics` as the Prometheus text exposition format, from
//!   [`Store::metrics_report`]'s rows.
//! * [`Error`] — one error type; `Display` starts with "backend" (refusals quote upstream's
//!   messages), never holds a password; predicates [`Error::is_connection`],
//!   [`Error::is_schema`], [`Error::is_config`], [`Error::lease_lost`],
//!   [`Error::is_invalid_rerun`].
//!
//! ## Repositories (methods of [`Store`])
//!
//! Every write the runner makes, each operation one transaction on a pooled application
//! session, with upstream's advisory locks ([`AdvisoryLock`]: the same `hashtext` keys, so
//! PipelineWise and datadiff can work on one backend at once), row locks and lease checks.
//! The decisions themselves are `datadiff-diff-core`'s pure rules ([`decide_start`](datadiff_diff_core::attempt::decide_start),
//! [`decide_remediation`](datadiff_diff_core::attempt::decide_remediation),
//! [`stale_cutoff`](datadiff_diff_core::attempt::stale_cutoff), …) and `datadiff-watermark`'s
//! [`Transition`](datadiff_watermark::Transition); this crate reads what they need and
//! writes what they decide. **Time is always an argument** (`now`, `finished_at`): every
//! recorded time and every eligibility rule follows the caller's clock, so `--at` replays
//! coherently; nothing here reads the current time.
//!
//! | operation | what it does |
//! |---|---|
//! | [`Store::sync_definitions`] | `import_config`'s reconciliation (config note §1.7) under the sync lock → [`SyncReport`] |
//! | [`Store::definitions`], [`Store::definition`], [`Store::list_checks`], [`Store::watermark_state`] | reads of [`StoredDefinition`]s by [`DefinitionFilter`]; [`CheckListing`]s for `list_data_diff_checks` |
//! | [`Store::schedule_overview`] | one query: which checks need a sweep, a retry or a start ([`ScheduleOverview`]) |
//! | [`Store::sweep_stale`], [`Store::sweep_superseded`] | the stale sweep with its coverage transitions ([`SweptRun`]) |
//! | [`Store::latest_scheduled_for`], [`Store::retry_candidates`] | the inputs of [`due_slots`](datadiff_diff_core::attempt::due_slots) and of automatic retries ([`RetryCandidate`]) |
//! | [`Store::reverification_candidates`] | PASS slots due for re-verification (`checks.<name>.reverify`) |
//! | [`Store::start_attempt`] | T1: a scheduled, forced, retry or re-verification attempt under the check lock → [`StartOutcome`] |
//! | [`Store::start_remediation`] | `rerun`: a REMEDIATION attempt of a FAIL/ERROR run, with its exact revision → [`Remediation`] |
//! | [`Store::record_preflight`] | T2: the attempt's [`NewPreflight`], once, only while RUNNING |
//! | [`Store::resolve_historical_start`] | T3: persists a resolved historical start, only while RUNNING and unresolved |
//! | [`Store::finish_attempt`] | T4: status, [`CheckResult`](datadiff_diff_core::attempt::CheckResult)s, `row_diff` [`Difference`]s and coverage in one transaction → [`Finished`] |
//! | [`Store::deliver_index_warning`] | the index-warning marker: lock, check, deliver, remember only if accepted ([`WarningDelivery`]) |
//! | [`Store::attempt`], [`Store::slot_attempts`], [`Store::run_results`], [`Store::run_differences`] | reads of [`Attempt`]s, results and [`StoredDifference`]s |
//! | [`Store::run_evidence`] | one attempt's whole record (attempt, definition name, [`StoredPreflight`], results) in one transaction → [`RunEvidence`] (`report run`) |
//!
//! ## Reports
//!
//! [`Store::watermark_report`] (lag from the given `now`), [`Store::daily_report`],
//! [`Store::failure_report`] and [`Store::remediation_report`] have the columns and meaning
//! of the four reporting queries of PipelineWise's backend page, in datadiff's own SQL;
//! [`LagVerdict::judge`] is `report watermarks --max-lag` (any current definition BLOCKED,
//! not run, or lagging more than the limit fails it).
//!
//! # Example
//!
//! What `import_config` does (migrate), then what every other command does (gate, then
//! work through the pool):
//!
//! ```no_run
//! use std::path::Path;
//!
//! use datadiff_backend_store::{BackendConfig, MigrateOptions, Store};
//! use datadiff_diff_core::definition::SslMode;
//!
//! let config = BackendConfig {
//!     host: "backend.example.com".into(),
//!     user: "pipelinewise".into(),
//!     password: "app-secret".into(),
//!     dbname: "pipelinewise".into(),
//!     ddl_user: "pipelinewise_ddl".into(),
//!     ddl_password: "ddl-secret".into(),
//!     sslmode: Some(SslMode::VerifyFull),
//!     sslrootcert: Some("certs/ca.pem".into()),
//!     ..BackendConfig::default()
//! };
//! let store = Store::open(config)?;
//!
//! // import_config / migrate: bring the schema to 004 + every extension.
//! let report = store.migrate(&MigrateOptions::latest())?;
//! for step in &report.steps {
//!     eprintln!("applied {step}");
//! }
//!
//! // run, list, report, …: refuse an outdated schema, then use the pool.
//! store.gate(Path::new("/srv/pipelinewise"))?;
//! let mut client = store.connection()?;
//! let current: i64 =
//!     client.query_one("SELECT count(*) FROM public.dd_check_definitions WHERE is_current", &[])?.get(0);
//! # let _ = current;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! One check's tick, as the runner does it (the comparison itself elided):
//!
//! ```no_run
//! use chrono::{TimeZone, Utc};
//! use datadiff_backend_store::{BackendConfig, Completion, DefinitionFilter, NewPreflight, StartOutcome, Store};
//! use datadiff_diff_core::attempt::{MAX_CATCH_UP, PreflightStatus, RunStatus, StartKind, due_slots};
//!
//! # fn compare(_: &datadiff_backend_store::Attempt) -> (RunStatus, NewPreflight) {
//! #     let preflight = NewPreflight {
//! #         status: PreflightStatus::Pass,
//! #         query_fingerprint: "0".repeat(64),
//! #         index_metadata: serde_json::json!([]),
//! #         findings: serde_json::json!([]),
//! #         error: None,
//! #         table_rows: None,
//! #         row_limit: None,
//! #         has_leading_index: Some(true),
//! #     };
//! #     (RunStatus::Pass, preflight)
//! # }
//! let store = Store::open(BackendConfig::default())?;
//! let now = Utc.with_ymd_and_hms(2026, 7, 22, 13, 47, 0).unwrap(); // or --at
//! for definition in store.definitions(&DefinitionFilter::default())? {
//!     let schedule = definition.definition.schedule()?;
//!     let current = schedule.current_slot(now)?;
//!     store.sweep_stale(&definition, now)?;
//!     let latest = store.latest_scheduled_for(definition.check_id)?;
//!     let due = due_slots(&schedule, latest, current);
//!     let mut starts = Vec::new();
//!     for candidate in store.retry_candidates(definition.check_id, current, MAX_CATCH_UP)? {
//!         starts.push((candidate.scheduled_for, StartKind::Retry { retry_before: current }));
//!     }
//!     starts.extend(due.into_iter().map(|slot| (slot, StartKind::Scheduled { force: false })));
//!     for (slot, kind) in starts {
//!         let StartOutcome::Started(attempt) = store.start_attempt(&definition, slot, kind, now)? else {
//!             continue; // SKIPPED: report the skip's reason and slot status
//!         };
//!         let (status, preflight) = compare(&attempt);
//!         let preflight_id = store.record_preflight(attempt.run_id, definition.check_id, &preflight, now)?;
//!         let finished = store.finish_attempt(&Completion {
//!             run_id: attempt.run_id,
//!             status,
//!             preflight_id: Some(preflight_id),
//!             error: None,
//!             results: Vec::new(),
//!             differences: Vec::new(),
//!             finished_at: now,
//!         })?;
//!         # let _ = finished;
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Backend prerequisites
//!
//! As upstream's docs say: the database is separate from any replication target;
//! `ddl_user` owns what it creates and so needs `CREATE` in schema `public` — on
//! PostgreSQL 15 and newer make it the database's owner (or `GRANT CREATE ON SCHEMA public`);
//! the DBA grants the application user `CONNECT` on the database. Migrations grant the
//! application role `SELECT, INSERT, UPDATE` on every `dd_*` and `datadiff_*` data table,
//! `USAGE, SELECT` on the schema's sequences, `SELECT` on `alembic_version` and
//! `datadiff_schema_migrations`, and `USAGE` on the schema — never `DELETE`, `TRUNCATE` or
//! DDL.
//!
//! # datadiff's extension tables
//!
//! Extension 1 (`run_differences`) creates `public.datadiff_run_differences`, the
//! `row_diff` evidence of SPEC §10:
//!
//! | column | type | meaning |
//! |---|---|---|
//! | `run_id` | `UUID NOT NULL` | FK `datadiff_run_differences_run_id_fkey` → `dd_run_attempts(run_id) ON DELETE RESTRICT` |
//! | `check_type` | `TEXT NOT NULL` | `row_diff` today; free text, like `dd_run_results.check_type` |
//! | `ordinal` | `INTEGER NOT NULL` | position in key order, **from 1** (`ck_datadiff_run_differences_ordinal`: `> 0`) |
//! | `kind` | `TEXT NOT NULL` | `MISSING_IN_TARGET`, `EXTRA_IN_TARGET` or `CHANGED` (`ck_datadiff_run_differences_kind`) |
//! | `key` | `JSONB NOT NULL` | the row's canonical key; never a non-key value |
//! | `fields` | `TEXT[] NOT NULL` | differing column names: non-empty exactly when `kind = 'CHANGED'`, else `'{}'` (`ck_datadiff_run_differences_fields`) |
//!
//! Primary key `datadiff_run_differences_pkey (run_id, check_type, ordinal)`; table and
//! column comments; the application role may `SELECT, INSERT, UPDATE`. The foreign key
//! points at the attempt rather than at `dd_run_results(run_id, check_type)` so that the
//! runner may write evidence and result in either order within the attempt's transaction.
//! Extension 2 (`replica_horizons`) creates `public.datadiff_replica_horizons`: per check
//! with `checks.<name>.horizon`, the last reading of how far its replica had applied
//! ([`ReplicaHorizon`], written by [`Store::record_replica_horizon`], read by
//! [`Store::metrics_report`] for the applied lag): `full_check_name TEXT` (primary key
//! `datadiff_replica_horizons_pkey`), `horizon TEXT` (the setting), `observed_at TIMESTAMPTZ`,
//! `applied_up_to TIMESTAMPTZ NULL` (the newest known horizon, kept when a reading does not
//! know the position), `known BOOLEAN` (whether the latest reading did), `position TEXT` (what
//! the replica reported). One row per check, overwritten (`INSERT … ON CONFLICT DO UPDATE`):
//! the application role may `SELECT, INSERT, UPDATE`, never delete. A backend without it
//! still ticks: the reading is then not recorded and the metric is absent.
//!
//! Extension 3 (`run_parts`) creates the queue of a divided `row_diff` window ([`Division`],
//! [`RunPart`], [`PartSession`]; see `docs/operator-guide.md`, "Dividing one table's work into
//! key ranges"). `public.datadiff_run_divisions`: one row per divided attempt — `run_id UUID`
//! (primary key `datadiff_run_divisions_pkey`, foreign key to `dd_run_attempts`),
//! `part_count INTEGER` (`> 1`), `split_key TEXT` (`int`, `uuid` or `text`), `strategy TEXT`
//! (the `row_diff` strategy every part uses), `results JSONB` (the attempt's results computed
//! before `row_diff`, for whichever process finishes it), `error TEXT NULL` (an aggregate
//! query's failure), `created_at TIMESTAMPTZ`, `created_by TEXT` (`host:pid`).
//! `public.datadiff_run_parts`: one row per part — `run_id UUID` (foreign key to the
//! division), `part_index INTEGER` (`0 ≤ part_index < part_count`; primary key
//! `datadiff_run_parts_pkey (run_id, part_index)`), `part_count INTEGER`, `lower_bound TEXT
//! NULL` and `upper_bound TEXT NULL` (the first key column's bounds; key values only),
//! `claimed_at TIMESTAMPTZ NULL`, `claimed_by TEXT NULL`, `finished_at TIMESTAMPTZ NULL` and
//! `outcome JSONB NULL`, both set together (`ck_datadiff_run_parts_outcome`): counts,
//! strategy, seconds and the first differences (keys and column names only), or the part's
//! failure. The application role may `SELECT, INSERT, UPDATE` both, never delete. Parts are
//! claimed under datadiff's session advisory locks ([`SessionLock`]).
//!
//! `public.datadiff_schema_migrations (version INTEGER PK > 0, name TEXT, checksum
//! CHAR(64), applied_at TIMESTAMPTZ)` is created by the migrator before the first extension
//! and is readable, not writable, by the application role. The checksum is the hex SHA-256
//! of the migration's SQL file (CRLF read as LF). Names all start with `datadiff_` so no
//! PipelineWise revision can collide with them.
//!
//! # Decisions where the sources are silent
//!
//! * **`application_name`**: upstream's `pipelinewise-data-diff` by default (SPEC §3 takes
//!   session settings from the config note), so monitoring survives a switch of tools; it is
//!   a [`BackendConfig`] field, so a deployment sharing a backend between both tools can
//!   name datadiff's sessions differently ([`APPLICATION_NAME`]). The migration session
//!   sets none, as upstream's.
//! * **`sslmode`**: libpq's meaning for all six modes, including `require` verifying the
//!   chain when `sslrootcert` is given; without `sslrootcert` the verifying modes use
//!   `~/.postgresql/root.crt` when present, else the system trust store (where libpq would
//!   refuse). `prefer` does not retry in plaintext after a failed TLS handshake (libpq does).
//!   A configured client certificate is presented in every mode that encrypts. See
//!   [`BackendConfig::sslmode`].
//! * **Timeouts**: `connect_timeout` (default 10 s) applies to both roles (upstream: the
//!   application role only); `statement_timeout` only to application sessions.
//! * **Schema gate** ([`SchemaStatus::gate`]): an older, newer or unknown version is refused
//!   with SPEC §3's message; a changed, unknown or out-of-order extension migration with its
//!   own error. A PipelineWise backend at 004 without datadiff's extensions reads as
//!   `004 (+ extensions 0)` and passes: every command works there without DDL. Only
//!   recording attempts of a current `row_diff` definition needs an extension table
//!   (`datadiff_run_differences`); [`Store::gate_for_attempts`] (`run`, `rerun`) then
//!   refuses naming those definitions and the one migration to apply, and reads of
//!   differences find none.
//! * **Adoption check**: the catalog comparison runs only when a migration applies
//!   something (a migrate with nothing pending reads two version tables and commits), so an
//!   index a DBA adds later does not block everyday imports.
//!
//! ## Repositories and reports
//!
//! * **Stored definitions** are read back from `canonical_config` (the only place holding
//!   compare columns, `initial_full_scan` and extensions; a missing `initial_full_scan`
//!   reads false). An unreadable one is [`Error::StoredDefinition`].
//! * **Sync**: two incoming definitions with one name are refused before anything is
//!   written (upstream would keep the last); the sync does not migrate (upstream's does:
//!   call [`Store::migrate`] first). `historical_scans_pending` and
//!   [`CheckListing::historical_scan_pending`] count a `row_diff`-only definition as
//!   having a data check, as its first run's window does; a superseded revision is never
//!   pending. Lists are ordered by target, tap, name, revision.
//! * **Metadata-only** (a definition that never advances its watermark) is judged in SQL
//!   from the `checks` column plus a `row_diff` extension in `canonical_config`, so a row
//!   PipelineWise wrote is judged exactly as upstream judges it.
//! * **Preflight of an unknown run** is [`Error::UnknownRun`] (upstream raises its lease
//!   error); a finish with `preflight_id: None` keeps the preflight already linked.
//! * **Results**: a JSON `null` value is stored as JSON `null` (as upstream); an SQL NULL
//!   (which no writer produces) reads back as `null`. [`Store::run_results`] returns the
//!   definition's declared order, then other types (`row_diff`) by name.
//! * **Stale sweep of superseded revisions** (SPEC §4's improvement):
//!   [`Store::sweep_superseded`], each revision with its own budget, in its own transaction;
//!   [`Store::sweep_stale`] alone is upstream's behaviour.
//! * **Schedule overview**: not an upstream operation; it only lets a tick skip reads
//!   whose answers are known (see [`Store::schedule_overview`]), to keep SPEC §11's budget
//!   (1,000 idle definitions in under a second; the per-check path costs ~18 round trips a
//!   check).
//! * **Reports**: the watermark report's lag is measured from the `now` given (`--at`, or
//!   the current time), a replay before the verified end gives a negative lag; it also
//!   carries `check_id`. The remediation report, unordered upstream, is ordered by failure
//!   time, name, failed run and remediation attempt. A lag equal to `--max-lag` passes.
//! * **Index warnings**: the delivery closure runs inside the marker's transaction and
//!   holds one pooled connection meanwhile; it must not itself use the store.
//!
//! # What it does not do
//!
//! It does not parse YAML (the config crate maps `backend_db` and `datadiff.yml` onto
//! [`BackendConfig`]), does not create databases or roles, never migrates on its own (only
//! [`Store::migrate`] does, which `import_config` and `migrate` call), and does not read
//! libpq's environment variables (`PGSSLROOTCERT`, …) or service files. It makes no
//! scheduling or coverage decision of its own (those are the pure crates'), reads no
//! source or target table, sends no alert, reads no clock, and never deletes a row.

mod attempt;
mod catalog;
mod completion;
mod config;
mod connection;
mod coverage;
mod definition;
mod error;
mod evidence;
mod exposition;
mod grants;
mod horizon;
mod lock;
pub mod migrate;
mod overview;
mod parts;
mod pool;
mod preflight;
mod report;
mod result;
mod rows;
mod status;
mod store;
mod sweep;
mod warning;

pub use attempt::{Attempt, Remediation, RetryCandidate, StartOutcome};
pub use catalog::{Catalog, CatalogDifference, CatalogScope};
pub use completion::{Completion, Finished};
pub use config::{BackendConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PORT};
pub use connection::{APPLICATION_NAME, Role};
pub use datadiff_diff_core::definition::StoredDefinition;
pub use definition::{CheckListing, Deactivated, DefinitionFilter, SyncReport, SyncScope, TapSelection};
pub use error::Error;
pub use evidence::{RunEvidence, StoredPreflight};
pub use exposition::metrics_exposition;
pub use grants::GrantGap;
pub use horizon::ReplicaHorizon;
pub use lock::{AdvisoryLock, SessionLock};
pub use migrate::{
    EXTENSIONS, ExtensionMigration, MIGRATION_LOCK, MigrateOptions, MigrationReport, Revision, Step, Target, plan,
};
pub use overview::ScheduleOverview;
pub use parts::{Claim, Division, PartRange, PartSession, RunPart};
pub use pool::{ConnectionManager, PoolConnectError};
pub use preflight::NewPreflight;
pub use report::{
    DailyReportRow, FailureReportRow, LagOffender, LagProblem, LagVerdict, LastAttempt, MetricsRow,
    RemediationReportRow, WatermarkEventRow, WatermarkReportRow, WatermarkStatus,
};
pub use result::{Difference, StoredDifference};
pub use status::{AppliedExtension, SchemaStatus, UpstreamState};
pub use store::{DEFAULT_OPERATION_TIME, PoolOptions, PooledConnection, Store, migrate_backend};
pub use sweep::SweptRun;
pub use warning::WarningDelivery;
