//! A project-like context for attempts: a source, a PipelineWise-shaped replica and a
//! migrated backend, three fresh databases of the shared cluster, with the backend's DDL and
//! application roles; definitions built directly (the YAML path is the config crate's).

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, TimeZone, Utc};
use datadiff_access::Environment;
use datadiff_backend_store::{BackendConfig, DefinitionFilter, MigrateOptions, Store, StoredDefinition, SyncScope};
use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::{
    attempt::{RunId, StartKind},
    definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType},
};
use datadiff_runner::{Clock, Connections, ExecutionOptions, ProgressMeter, RowDiffSplit, RunSummary, execute};
use datadiff_testkit::{Cluster, Database, SUPERUSER, shared_cluster};
use serde_json::Value as Json;

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
    /// The backend's settings (application and DDL roles), to open more stores on it.
    pub(crate) backend_config: BackendConfig,
}

impl Context {
    /// Fresh source, replica and backend databases; the source and replica set up with their
    /// SQL, the backend migrated as its DDL role for its application role.
    pub(crate) fn new(source_sql: &str, replica_sql: &str) -> Context {
        Context::with_sides_on(shared_cluster(), source_sql, replica_sql)
    }

    /// [`Context::new`] with the source and the replica on `sides` (a cluster a test may
    /// freeze or stop); the backend stays on the shared cluster.
    pub(crate) fn with_sides_on(sides: &'static Cluster, source_sql: &str, replica_sql: &str) -> Context {
        Context::with_sides_apart(sides, sides, source_sql, replica_sql)
    }

    /// [`Context::new`] with the source on `source_cluster` and the replica on
    /// `replica_cluster` (two clusters joined by native logical replication, say).
    pub(crate) fn with_sides_apart(
        source_cluster: &'static Cluster,
        replica_cluster: &'static Cluster,
        source_sql: &str,
        replica_sql: &str,
    ) -> Context {
        let cluster = shared_cluster();
        let source = source_cluster.fresh_database().unwrap();
        let replica = replica_cluster.fresh_database().unwrap();
        let backend = cluster.fresh_database().unwrap();
        source.client().unwrap().batch_execute(source_sql).unwrap();
        replica.client().unwrap().batch_execute(replica_sql).unwrap();

        let n = NEXT_ROLE.fetch_add(1, Ordering::Relaxed);
        let (ddl, app) =
            (format!("runner_ddl_{}_{n}", std::process::id()), format!("runner_app_{}_{n}", std::process::id()));
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
        let store = datadiff_runner::open_backend(backend_config.clone()).unwrap();
        let connections = Connections::new(Environment::default())
            .with_tap("payments", db_conn(&source))
            .with_target("postgres", db_conn(&replica));
        Context { source, replica, backend, store, connections, backend_config }
    }

    /// The fixtures' tables.
    pub(crate) fn pipelinewise() -> Context {
        Context::new(SOURCE_SQL, REPLICA_SQL)
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

    /// Imports `definition` and executes the fixtures' slot.
    pub(crate) fn run(&self, definition: &CheckDefinition) -> RunSummary {
        let stored = self.import(definition);
        execute(&self.store, &self.connections, &stored, slot(), scheduled(), &Context::options()).unwrap()
    }

    /// Imports `definition` and executes the fixtures' slot with its `row_diff` window divided
    /// as `split` says (`force`: a MANUAL attempt of a slot already attempted).
    pub(crate) fn run_split(&self, definition: &CheckDefinition, split: RowDiffSplit, force: bool) -> RunSummary {
        let stored = self.import(definition);
        let options = ExecutionOptions { row_diff_split: split, ..Context::options() };
        execute(&self.store, &self.connections, &stored, slot(), StartKind::Scheduled { force }, &options).unwrap()
    }

    /// [`Context::run_split`] of the fixtures' slot (scheduled) counting on `meter`.
    pub(crate) fn run_split_metered(
        &self,
        definition: &CheckDefinition,
        split: RowDiffSplit,
        meter: ProgressMeter,
    ) -> RunSummary {
        let stored = self.import(definition);
        let options = ExecutionOptions { row_diff_split: split, progress: Some(meter), ..Context::options() };
        execute(&self.store, &self.connections, &stored, slot(), scheduled(), &options).unwrap()
    }

    /// A superuser session on the backend.
    pub(crate) fn backend_sql(&self) -> postgres::Client {
        self.backend.client().unwrap()
    }

    /// The attempt's row, read with SQL.
    pub(crate) fn attempt_row(&self, run_id: RunId) -> AttemptRow {
        let row = self
            .backend_sql()
            .query_one(
                "SELECT status, error, window_start, window_end, attempt, trigger_type, started_at, finished_at, \
                        preflight_id IS NOT NULL FROM public.dd_run_attempts WHERE run_id = $1",
                &[&run_id.get()],
            )
            .unwrap();
        AttemptRow {
            status: row.get(0),
            error: row.get(1),
            window_start: row.get(2),
            window_end: row.get(3),
            attempt: row.get(4),
            trigger: row.get(5),
            started_at: row.get(6),
            finished_at: row.get(7),
            has_preflight: row.get(8),
        }
    }

    /// The attempt's preflight row, read with SQL.
    pub(crate) fn preflight_row(&self, run_id: RunId) -> PreflightRow {
        let row = self
            .backend_sql()
            .query_one(
                "SELECT p.status, p.query_fingerprint::text, p.findings, p.error, p.table_rows, p.row_limit, \
                        p.has_leading_index, p.index_metadata, p.checked_at, p.check_id = a.check_id \
                   FROM public.dd_run_attempts a JOIN public.dd_preflight_log p ON p.preflight_id = a.preflight_id \
                  WHERE a.run_id = $1",
                &[&run_id.get()],
            )
            .unwrap();
        PreflightRow {
            status: row.get(0),
            fingerprint: row.get(1),
            findings: row.get(2),
            error: row.get(3),
            table_rows: row.get(4),
            row_limit: row.get(5),
            has_leading_index: row.get(6),
            index_metadata: row.get(7),
            checked_at: row.get(8),
            same_check: row.get(9),
        }
    }

    /// The attempt's result rows in stored order of check type: `(check_type, status,
    /// source_value, target_value, error, source seconds present, target seconds present)`.
    pub(crate) fn result_rows(&self, run_id: RunId) -> Vec<ResultRow> {
        self.backend_sql()
            .query(
                "SELECT check_type, status, source_value, target_value, error, \
                        source_query_seconds, target_query_seconds \
                   FROM public.dd_run_results WHERE run_id = $1 ORDER BY check_type",
                &[&run_id.get()],
            )
            .unwrap()
            .iter()
            .map(|row| ResultRow {
                check_type: row.get(0),
                status: row.get(1),
                source_value: row.get(2),
                target_value: row.get(3),
                error: row.get(4),
                source_seconds: row.get(5),
                target_seconds: row.get(6),
            })
            .collect()
    }

    /// `(status, window_start, window_end)` of the slot state row, if any.
    pub(crate) fn slot_state(&self, run_id: RunId) -> Option<(String, Option<DateTime<Utc>>, DateTime<Utc>)> {
        self.backend_sql()
            .query_opt(
                "SELECT status, window_start, window_end FROM public.dd_run_slot_state WHERE run_id = $1",
                &[&run_id.get()],
            )
            .unwrap()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
    }

    /// `(verified_status, verified_start, verified_end, event types in order)` of a check.
    pub(crate) fn watermark(&self, summary: &RunSummary) -> Option<Watermark> {
        let mut sql = self.backend_sql();
        let check_id = summary.check.check_id.get();
        let state = sql
            .query_opt(
                "SELECT verified_status, verified_start, verified_end FROM public.dd_watermark_state WHERE check_id = $1",
                &[&check_id],
            )
            .unwrap()?;
        let events = sql
            .query(
                "SELECT event_type FROM public.dd_watermark_events WHERE check_id = $1 ORDER BY recorded_at, event_type",
                &[&check_id],
            )
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect();
        Some((state.get(0), state.get(1), state.get(2), events))
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

/// `(verified_status, verified_start, verified_end, event types)`.
pub(crate) type Watermark = (String, Option<DateTime<Utc>>, Option<DateTime<Utc>>, Vec<String>);

/// `(check_type, status, source_value, target_value)` of a metric result.
pub(crate) type Verdict = (String, String, Json, Json);

/// `dd_run_attempts` as read back.
#[derive(Debug)]
pub(crate) struct AttemptRow {
    pub(crate) status: String,
    pub(crate) error: Option<String>,
    pub(crate) window_start: Option<DateTime<Utc>>,
    pub(crate) window_end: DateTime<Utc>,
    pub(crate) attempt: i32,
    pub(crate) trigger: String,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) finished_at: Option<DateTime<Utc>>,
    pub(crate) has_preflight: bool,
}

/// `dd_preflight_log` as read back.
#[derive(Debug)]
pub(crate) struct PreflightRow {
    pub(crate) status: String,
    pub(crate) fingerprint: String,
    pub(crate) findings: Json,
    pub(crate) error: Option<String>,
    pub(crate) table_rows: Option<i64>,
    pub(crate) row_limit: Option<i64>,
    pub(crate) has_leading_index: Option<bool>,
    pub(crate) index_metadata: Json,
    pub(crate) checked_at: DateTime<Utc>,
    pub(crate) same_check: bool,
}

/// `dd_run_results` as read back.
#[derive(Debug, Clone)]
pub(crate) struct ResultRow {
    pub(crate) check_type: String,
    pub(crate) status: String,
    pub(crate) source_value: Json,
    pub(crate) target_value: Json,
    pub(crate) error: Option<String>,
    pub(crate) source_seconds: Option<f64>,
    pub(crate) target_seconds: Option<f64>,
}

/// The result row of `check_type`.
pub(crate) fn result<'a>(rows: &'a [ResultRow], check_type: &str) -> &'a ResultRow {
    rows.iter().find(|row| row.check_type == check_type).unwrap_or_else(|| panic!("no {check_type} result in {rows:?}"))
}

/// A `row_diff` target value without how its rows were read (`strategy`,
/// `strategy_reason`): the counts, which every strategy must give alike.
pub(crate) fn counts(target_value: &Json) -> Json {
    let mut counts = target_value.clone();
    if let Some(object) = counts.as_object_mut() {
        object.remove("strategy");
        object.remove("strategy_reason");
    }
    counts
}

/// `check_type → (status, source, target)` for metric results whose values are strings.
pub(crate) fn verdicts(rows: &[ResultRow]) -> Vec<Verdict> {
    let mut verdicts: Vec<_> = rows
        .iter()
        .filter(|row| row.check_type != "schema_compatibility" && row.check_type != "row_checksum")
        .map(|row| (row.check_type.clone(), row.status.clone(), row.source_value.clone(), row.target_value.clone()))
        .collect();
    verdicts.sort_by(|a, b| a.0.cmp(&b.0));
    verdicts
}

/// The SHA-256 hex of `text`, computed by PostgreSQL (independently of the code under test).
pub(crate) fn sha256_hex(context: &Context, text: &str) -> String {
    context.backend_sql().query_one("SELECT encode(sha256(convert_to($1, 'UTF8')), 'hex')", &[&text]).unwrap().get(0)
}

/// Waits until a session of `database` named `application_name` waits for a lock (a guard
/// that fails, saying `never`, only after two minutes: not a timing assertion).
pub(crate) fn wait_for_a_lock_wait(database: &Database<'_>, application_name: &str, never: &str) {
    let mut client = database.client().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                   AND application_name = $1 AND wait_event_type = 'Lock'",
                &[&application_name],
            )
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{never}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `body` while a writer inserts into `public.noise` of `source` every few milliseconds
/// (a busy source for replication tests), stopping the writer whatever `body` does; a panic
/// of `body` is the caller's.
pub(crate) fn while_a_writer_runs<R>(source: &Database<'_>, body: impl FnOnce() -> R) -> R {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let mut writer = source.client().unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !stop.load(Ordering::Relaxed) {
                writer.execute("INSERT INTO public.noise (note) VALUES ('busy')", &[]).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
        });
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body));
        stop.store(true, Ordering::Relaxed);
        result.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}
