//! The datadiff backend database: PipelineWise-identical migrations, connections and the
//! schema gate.
//!
//! # Overview
//!
//! * [`BackendConfig`] — upstream's `backend_db` settings (two roles, `sslmode`, timeouts)
//!   plus datadiff's `sslrootcert`; `Debug` redacts passwords. [`SslMode`] has libpq's
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
//! * [`Error`] — one error type; `Display` starts with "backend", never holds a password;
//!   predicates [`Error::is_connection`], [`Error::is_schema`], [`Error::is_config`].
//!
//! # Example
//!
//! What `import_config` does (migrate), then what every other command does (gate, then
//! work through the pool):
//!
//! ```no_run
//! use std::path::Path;
//!
//! use datadiff_backend_store::{BackendConfig, MigrateOptions, SslMode, Store};
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
//!   See [`SslMode`].
//! * **Timeouts**: `connect_timeout` (default 10 s) applies to both roles (upstream: the
//!   application role only); `statement_timeout` only to application sessions.
//! * **Schema gate** ([`SchemaStatus::gate`]): an older, newer or unknown version is refused
//!   with SPEC §3's message; a changed, unknown or out-of-order extension migration with its
//!   own error. A PipelineWise backend at 004 without datadiff's extensions reads as
//!   `004 (+ extensions 0)`.
//! * **Adoption check**: the catalog comparison runs only when a migration applies
//!   something (a migrate with nothing pending reads two version tables and commits), so an
//!   index a DBA adds later does not block everyday imports.
//!
//! # What it does not do
//!
//! It does not parse YAML (the config crate maps `backend_db` and `datadiff.yml` onto
//! [`BackendConfig`]), does not create databases or roles, never migrates on its own (only
//! [`Store::migrate`] does, which `import_config` and `migrate` call), and does not read
//! libpq's environment variables (`PGSSLROOTCERT`, …) or service files.

mod attempt;
mod catalog;
mod completion;
mod config;
mod connection;
mod coverage;
mod definition;
mod error;
mod lock;
pub mod migrate;
mod overview;
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
pub use config::{BackendConfig, DEFAULT_CONNECT_TIMEOUT, DEFAULT_PORT, SslMode};
pub use connection::{APPLICATION_NAME, Role};
pub use definition::{CheckListing, DefinitionFilter, StoredDefinition, SyncReport, SyncScope, TapSelection};
pub use error::Error;
pub use lock::AdvisoryLock;
pub use migrate::{
    EXTENSIONS, ExtensionMigration, MIGRATION_LOCK, MigrateOptions, MigrationReport, Revision, Step, Target, plan,
};
pub use overview::ScheduleOverview;
pub use pool::{ConnectionManager, PoolConnectError};
pub use preflight::{NewPreflight, PreflightStatus};
pub use report::{
    DailyReportRow, FailureReportRow, LagOffender, LagProblem, LagVerdict, RemediationReportRow, WatermarkReportRow,
    WatermarkStatus,
};
pub use result::{Difference, ResultRow, ResultStatus, StoredDifference};
pub use status::{AppliedExtension, SchemaStatus, UpstreamState};
pub use store::{PoolOptions, PooledConnection, Store, migrate_backend};
pub use sweep::SweptRun;
pub use warning::WarningDelivery;
