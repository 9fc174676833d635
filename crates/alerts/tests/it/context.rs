//! A project-like context for the alert tests: a source, a PipelineWise-shaped replica and a
//! migrated backend, three fresh databases of the shared cluster, with the backend's DDL and
//! application roles; definitions built directly. The runner's integration tests have the
//! same fixtures (`crates/runner/tests/it/context.rs`); these are the parts alerts need.

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, TimeZone, Utc};
use datadiff_access::Environment;
use datadiff_backend_store::{BackendConfig, DefinitionFilter, MigrateOptions, Store, StoredDefinition, SyncScope};
use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::{
    attempt::StartKind,
    definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType},
};
use datadiff_runner::{Clock, Connections, ExecutionOptions};
use datadiff_testkit::{Database, SUPERUSER, shared_cluster};

static NEXT_ROLE: AtomicU64 = AtomicU64::new(1);

/// The source table of the fixtures: mixed-case names, a naive timestamp, `numeric(12,2)`,
/// an index leading with the timestamp. Rows 2–6 are in the window `[12:00, 13:00)` of
/// 2026-07-22; 1 is just before it, 7 exactly at its end, 8 has no timestamp.
pub(crate) const SOURCE_SQL: &str = r#"
CREATE TABLE public."Transfers" (
    "Id" bigint PRIMARY KEY,
    "UpdatedAt" timestamp without time zone,
    "Amount" numeric(12,2),
    "Status" text
);
CREATE INDEX "Transfers_UpdatedAt_idx" ON public."Transfers" ("UpdatedAt");
INSERT INTO public."Transfers" VALUES
    (1, '2026-07-22 11:59:59.999999', 10.00, 'open'),
    (2, '2026-07-22 12:00:00', 12.34, 'paid'),
    (3, '2026-07-22 12:15:00', 0.10, 'paid'),
    (4, '2026-07-22 12:30:00', 99.99, NULL),
    (5, '2026-07-22 12:45:00', 1.50, 'void'),
    (6, '2026-07-22 12:59:59.999999', 7.00, 'open'),
    (7, '2026-07-22 13:00:00', 8.00, 'open'),
    (8, NULL, 1.00, 'open');
"#;

/// The replica as PipelineWise's target-postgres writes it: lower-cased names, `timestamptz`,
/// `numeric(18,4)`, `character varying`, the `_sdc_*` columns (`_sdc_deleted_at` as
/// `varchar`), no primary key; the same rows.
pub(crate) const REPLICA_SQL: &str = r#"
CREATE SCHEMA payments_public;
CREATE TABLE payments_public.transfers (
    id bigint,
    updatedat timestamp with time zone,
    amount numeric(18,4),
    status character varying,
    _sdc_extracted_at timestamp without time zone,
    _sdc_batched_at timestamp without time zone,
    _sdc_deleted_at character varying
);
INSERT INTO payments_public.transfers (id, updatedat, amount, status, _sdc_extracted_at, _sdc_batched_at) VALUES
    (1, '2026-07-22 11:59:59.999999+00', 10.0000, 'open', '2026-07-22 12:05', '2026-07-22 12:06'),
    (2, '2026-07-22 12:00:00+00', 12.3400, 'paid', '2026-07-22 12:05', '2026-07-22 12:06'),
    (3, '2026-07-22 12:15:00+00', 0.1000, 'paid', '2026-07-22 12:20', '2026-07-22 12:21'),
    (4, '2026-07-22 12:30:00+00', 99.9900, NULL, '2026-07-22 12:35', '2026-07-22 12:36'),
    (5, '2026-07-22 12:45:00+00', 1.5000, 'void', '2026-07-22 12:50', '2026-07-22 12:51'),
    (6, '2026-07-22 12:59:59.999999+00', 7.0000, 'open', '2026-07-22 13:01', '2026-07-22 13:02'),
    (7, '2026-07-22 13:00:00+00', 8.0000, 'open', '2026-07-22 13:01', '2026-07-22 13:02'),
    (8, NULL, 1.0000, 'open', '2026-07-22 13:01', '2026-07-22 13:02');
"#;

/// Every upstream check, in this declared order.
pub(crate) const ALL_CHECKS: [CheckType; 8] = [
    CheckType::SchemaCompatibility,
    CheckType::RowCount,
    CheckType::DistinctKeyCount,
    CheckType::NullKeyCount,
    CheckType::DuplicateKeyCount,
    CheckType::MinKey,
    CheckType::MaxKey,
    CheckType::RowChecksum,
];

/// 2026-07-22 `hour`:`minute` UTC.
pub(crate) fn at(hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap()
}

/// The slot of the fixtures' window `[12:00, 13:00)`.
pub(crate) fn slot() -> DateTime<Utc> {
    at(13, 0)
}

/// A scheduled start without `--force`.
pub(crate) fn scheduled() -> StartKind {
    StartKind::Scheduled { force: false }
}

/// Three databases and the connections between them.
pub(crate) struct Context {
    pub(crate) source: Database<'static>,
    pub(crate) replica: Database<'static>,
    pub(crate) backend: Database<'static>,
    pub(crate) store: Store,
    pub(crate) connections: Connections,
}

impl Context {
    /// Fresh source, replica and backend databases; the source and replica set up with their
    /// SQL, the backend migrated as its DDL role for its application role.
    pub(crate) fn new(source_sql: &str, replica_sql: &str) -> Context {
        let cluster = shared_cluster();
        let source = cluster.fresh_database().unwrap();
        let replica = cluster.fresh_database().unwrap();
        let backend = cluster.fresh_database().unwrap();
        source.client().unwrap().batch_execute(source_sql).unwrap();
        replica.client().unwrap().batch_execute(replica_sql).unwrap();

        let n = NEXT_ROLE.fetch_add(1, Ordering::Relaxed);
        let (ddl, app) =
            (format!("alerts_ddl_{}_{n}", std::process::id()), format!("alerts_app_{}_{n}", std::process::id()));
        let (ddl_password, app_password) = (format!("ddl-pw-{n}"), format!("app-pw-{n}"));
        cluster.create_role(&ddl, &ddl_password).unwrap();
        cluster.create_role(&app, &app_password).unwrap();
        backend.make_backend(&ddl, &app).unwrap();
        let backend_config = BackendConfig {
            host: cluster.host().to_owned(),
            port: cluster.port(),
            user: app,
            password: app_password,
            dbname: backend.name().to_owned(),
            ddl_user: ddl,
            ddl_password,
            ..BackendConfig::default()
        };
        datadiff_backend_store::migrate_backend(&backend_config, &MigrateOptions::latest()).unwrap();
        let store = datadiff_runner::open_backend(backend_config).unwrap();
        let connections = Connections::new(Environment::default())
            .with_tap("payments", db_conn(&source))
            .with_target("postgres", db_conn(&replica));
        Context { source, replica, backend, store, connections }
    }

    /// The fixtures' definition: every check, compare columns `Amount` and `Status`, an
    /// hourly window ending at the slot, persisted databases of this context.
    pub(crate) fn definition(&self) -> CheckDefinition {
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", "public", "Transfers"),
            target_id: "postgres".into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            target_type: TargetType::TargetPostgres,
            source_database: self.source.name().to_owned(),
            target_database: self.replica.name().to_owned(),
            source_schema: "public".into(),
            source_table: "Transfers".into(),
            target_schema: "payments_public".into(),
            target_table: "transfers".into(),
            source_key_column: "Id".into(),
            target_key_column: "id".into(),
            source_timestamp_column: "UpdatedAt".into(),
            // Resolved case-insensitively to the replica's `updatedat`.
            target_timestamp_column: "UpdatedAt".into(),
            source_compare_columns: vec!["Amount".into(), "Status".into()],
            target_compare_columns: vec!["amount".into(), "status".into()],
            checks: ALL_CHECKS.to_vec(),
            frequency: "0 * * * *".into(),
            window_start_seconds: 3600,
            window_end_seconds: 0,
            statement_timeout_seconds: 60,
            initial_full_scan: false,
            extensions: Extensions::default(),
        }
    }

    /// Imports `definition` (at 00:00) and returns its current revision.
    pub(crate) fn import(&self, definition: &CheckDefinition) -> StoredDefinition {
        self.store.sync_definitions(std::slice::from_ref(definition), &SyncScope::all(), at(0, 0)).unwrap();
        let filter = DefinitionFilter { check: Some(definition.full_check_name.clone()), ..Default::default() };
        self.store.definitions(&filter).unwrap().remove(0)
    }

    /// Options with concurrent sides and the clock fixed at 13:05.
    pub(crate) fn options() -> ExecutionOptions {
        ExecutionOptions { clock: Clock::at(at(13, 5)), ..ExecutionOptions::default() }
    }

    /// A superuser session on the backend.
    pub(crate) fn backend_sql(&self) -> postgres::Client {
        self.backend.client().unwrap()
    }
}

/// A superuser `db_conn` for a database of a throwaway cluster.
pub(crate) fn db_conn(database: &Database<'_>) -> DbConn {
    let cluster = database.cluster();
    DbConn {
        host: Some(cluster.host().to_owned()),
        port: Some(cluster.port()),
        user: Some(SUPERUSER.to_owned()),
        password: Some(Secret::new(cluster.superuser_password())),
        dbname: Some(database.name().to_owned()),
        ..DbConn::default()
    }
}
