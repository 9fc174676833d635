//! A fresh backend database with its two roles, per test.

use std::sync::atomic::{AtomicU64, Ordering};

use datadiff_backend_store::{BackendConfig, Catalog, CatalogScope};
use datadiff_testkit::{Cluster, Database, shared_cluster};

static NEXT_ROLE: AtomicU64 = AtomicU64::new(1);

/// A fresh database owned by a fresh DDL role, and a fresh application role with CONNECT.
pub(crate) struct Backend<'c> {
    pub(crate) db: Database<'c>,
    pub(crate) config: BackendConfig,
}

/// On the test binary's shared cluster.
pub(crate) fn backend() -> Backend<'static> {
    backend_on(shared_cluster())
}

/// On the shared cluster, with an application role name that needs quoting.
pub(crate) fn backend_with_app_role(app_prefix: &str) -> Backend<'static> {
    make(shared_cluster(), app_prefix, false)
}

/// On the shared cluster, one role for both purposes.
pub(crate) fn single_role_backend() -> Backend<'static> {
    make(shared_cluster(), "owner", true)
}

/// On `cluster`, one role for both purposes (a client certificate names one role).
pub(crate) fn single_role_backend_on(cluster: &Cluster) -> Backend<'_> {
    make(cluster, "owner", true)
}

pub(crate) fn backend_on(cluster: &Cluster) -> Backend<'_> {
    make(cluster, "app", false)
}

fn make<'c>(cluster: &'c Cluster, app_prefix: &str, single: bool) -> Backend<'c> {
    let n = NEXT_ROLE.fetch_add(1, Ordering::Relaxed);
    let db = cluster.fresh_database().unwrap();
    let ddl = format!("ddl_{}_{n}", std::process::id());
    let ddl_password = format!("ddl-pw-{n}");
    cluster.create_role(&ddl, &ddl_password).unwrap();
    let (user, password) = if single {
        (ddl.clone(), ddl_password.clone())
    } else {
        let app = format!("{app_prefix}_{}_{n}", std::process::id());
        let password = format!("app-pw-{n}");
        cluster.create_role(&app, &password).unwrap();
        (app, password)
    };
    db.make_backend(&ddl, &user).unwrap();
    let config = BackendConfig {
        host: cluster.host().to_owned(),
        port: cluster.port(),
        user,
        password,
        dbname: db.name().to_owned(),
        ddl_user: ddl,
        ddl_password,
        ..BackendConfig::default()
    };
    Backend { db, config }
}

impl Backend<'_> {
    /// A superuser session on the backend database.
    pub(crate) fn superuser(&self) -> postgres::Client {
        self.db.client().unwrap()
    }

    /// The live catalog of `scope`, read as the superuser.
    pub(crate) fn catalog(&self, scope: CatalogScope) -> Catalog {
        Catalog::read(&mut self.superuser(), scope, &self.config.user, &self.config.ddl_user).unwrap()
    }

    /// `alembic_version`'s rows.
    pub(crate) fn alembic_versions(&self) -> Vec<String> {
        self.superuser()
            .query("SELECT version_num::text FROM public.alembic_version ORDER BY 1", &[])
            .unwrap()
            .iter()
            .map(|row| row.get(0))
            .collect()
    }

    /// Whether `public.<name>` exists.
    pub(crate) fn has_relation(&self, name: &str) -> bool {
        self.superuser().query_one("SELECT to_regclass($1) IS NOT NULL", &[&format!("public.{name}")]).unwrap().get(0)
    }

    /// The extension rows (version, name, checksum).
    pub(crate) fn extension_rows(&self) -> Vec<(i32, String, String)> {
        self.superuser()
            .query("SELECT version, name, checksum::text FROM public.datadiff_schema_migrations ORDER BY 1", &[])
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2)))
            .collect()
    }
}

/// Asserts two catalogs are identical, showing every differing line when they are not.
pub(crate) fn assert_same_catalog(expected: &Catalog, actual: &Catalog) {
    if expected.first_difference(actual).is_some() {
        let missing: Vec<&String> = expected.lines().iter().filter(|line| !actual.lines().contains(line)).collect();
        let unexpected: Vec<&String> = actual.lines().iter().filter(|line| !expected.lines().contains(line)).collect();
        panic!("catalogs differ\nmissing:\n{missing:#?}\nunexpected:\n{unexpected:#?}");
    }
}

/// The extension chain's expected catalog, typed by hand.
pub(crate) fn expected_extensions() -> Catalog {
    Catalog::parse(include_str!("fixtures/extensions.txt"))
}

/// Inserts a current check definition with this id (as whoever `client` is).
pub(crate) fn insert_definition(client: &mut impl postgres::GenericClient, check_id: &str) {
    client
        .execute(
            &format!(
                "INSERT INTO public.dd_check_definitions VALUES ('{check_id}', 'postgres/tap/public/t{check_id}', 1, \
                 repeat('a', 64), '{{}}', 'postgres', 'tap', 'postgres', 'postgres', 'src', 'tgt', 'public', 't', \
                 'public', 't', 'id', 'id', 'updated_at', 'updated_at', '[\"row_count\"]', '0 * * * *', 3600, 0, \
                 60, true, now(), NULL)"
            ),
            &[],
        )
        .unwrap();
}

/// Inserts an attempt; `window_start` is an SQL expression (`NULL` or a quoted time).
pub(crate) fn insert_attempt(
    client: &mut impl postgres::GenericClient,
    run_id: &str,
    check_id: &str,
    scheduled_for: &str,
    window_start: &str,
    status: &str,
) {
    client
        .execute(
            &format!(
                "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, \
                 attempt, trigger_type, status, started_at) VALUES ('{run_id}', '{check_id}', '{scheduled_for}', \
                 {window_start}, '{scheduled_for}', 1, 'SCHEDULED', '{status}', now())"
            ),
            &[],
        )
        .unwrap();
}

/// A migrated backend and an opened store, for repository tests.
pub(crate) struct Repo {
    pub(crate) backend: Backend<'static>,
    pub(crate) store: datadiff_backend_store::Store,
}

/// A fresh backend migrated to the latest schema, with its store.
pub(crate) fn repo() -> Repo {
    let backend = backend();
    let store = datadiff_backend_store::Store::open(backend.config.clone()).unwrap();
    store.migrate(&datadiff_backend_store::MigrateOptions::latest()).unwrap();
    Repo { backend, store }
}

impl Repo {
    /// A superuser session, to seed and read rows as a test would by hand.
    pub(crate) fn sql(&self) -> postgres::Client {
        self.backend.superuser()
    }

    /// Imports `definitions` for every tap at `now` and returns the current revisions by name.
    pub(crate) fn import(
        &self,
        definitions: &[datadiff_diff_core::definition::CheckDefinition],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Vec<datadiff_backend_store::StoredDefinition> {
        self.store.sync_definitions(definitions, &datadiff_backend_store::SyncScope::all(), now).unwrap();
        self.store.definitions(&datadiff_backend_store::DefinitionFilter::default()).unwrap()
    }

    /// Imports one definition and returns its current revision.
    pub(crate) fn import_one(
        &self,
        definition: &datadiff_diff_core::definition::CheckDefinition,
        now: chrono::DateTime<chrono::Utc>,
    ) -> datadiff_backend_store::StoredDefinition {
        self.store
            .sync_definitions(std::slice::from_ref(definition), &datadiff_backend_store::SyncScope::all(), now)
            .unwrap();
        let filter = datadiff_backend_store::DefinitionFilter {
            check: Some(definition.full_check_name.clone()),
            ..Default::default()
        };
        self.store.definitions(&filter).unwrap().remove(0)
    }

    /// Counts the rows `sql` returns.
    pub(crate) fn count(&self, sql: &str) -> i64 {
        self.sql().query_one(&format!("SELECT count(*) FROM ({sql}) counted"), &[]).unwrap().get(0)
    }
}

/// 2026-07-22 `hour`:`minute` UTC.
pub(crate) fn at(hour: u32, minute: u32) -> chrono::DateTime<chrono::Utc> {
    use chrono::TimeZone;
    chrono::Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap()
}

/// An hourly PostgreSQL → PostgreSQL definition of `tap`/`table` whose window is the hour
/// before each slot, checking `row_count` with a 60 s statement timeout.
pub(crate) fn table(tap: &str, table: &str) -> datadiff_diff_core::definition::CheckDefinition {
    use datadiff_diff_core::definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType};
    CheckDefinition {
        full_check_name: CheckDefinition::full_check_name_of("postgres", tap, "public", table),
        target_id: "postgres".into(),
        tap_id: tap.into(),
        source_type: SourceType::TapPostgres,
        target_type: TargetType::TargetPostgres,
        source_database: "source".into(),
        target_database: "warehouse".into(),
        source_schema: "public".into(),
        source_table: table.into(),
        target_schema: format!("{tap}_public"),
        target_table: table.into(),
        source_key_column: "id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "updated_at".into(),
        target_timestamp_column: "updated_at".into(),
        source_compare_columns: vec!["status".into()],
        target_compare_columns: vec!["status".into()],
        checks: vec![CheckType::RowCount],
        frequency: "0 * * * *".into(),
        window_start_seconds: 3600,
        window_end_seconds: 0,
        statement_timeout_seconds: 60,
        initial_full_scan: false,
        extensions: Extensions::default(),
    }
}

/// Waits until `waiters` sessions of this backend wait for the advisory lock keyed by
/// `hashtext(key)` (a guard, not a timing assertion: it fails only after two minutes).
pub(crate) fn wait_for_lock_waiters(client: &mut postgres::Client, key: &str, waiters: i64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let waiting: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_locks l JOIN pg_database db ON db.oid = l.database \
                 WHERE db.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted \
                   AND l.objsubid = 1 AND ((l.classid::bigint << 32) | l.objid::bigint) = hashtext($1)::bigint",
                &[&key],
            )
            .unwrap()
            .get(0);
        if waiting >= waiters {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{waiters} sessions never waited for the lock {key:?}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One attempt as the tests compare it: `(scheduled_for, attempt, trigger_type, status,
/// window_start, window_end)`.
pub(crate) type AttemptRow = (
    chrono::DateTime<chrono::Utc>,
    i32,
    String,
    String,
    Option<chrono::DateTime<chrono::Utc>>,
    chrono::DateTime<chrono::Utc>,
);

impl Repo {
    /// Every attempt of a revision, read with SQL, by slot and attempt number.
    pub(crate) fn attempt_rows(&self, check_id: datadiff_diff_core::attempt::CheckId) -> Vec<AttemptRow> {
        self.sql()
            .query(
                "SELECT scheduled_for, attempt, trigger_type, status, window_start, window_end \
                 FROM public.dd_run_attempts WHERE check_id = $1 ORDER BY scheduled_for, attempt",
                &[&check_id.get()],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5)))
            .collect()
    }

    /// Starts an attempt that must start.
    pub(crate) fn start(
        &self,
        definition: &datadiff_backend_store::StoredDefinition,
        slot: chrono::DateTime<chrono::Utc>,
        kind: datadiff_diff_core::attempt::StartKind,
        now: chrono::DateTime<chrono::Utc>,
    ) -> datadiff_backend_store::Attempt {
        match self.store.start_attempt(definition, slot, kind, now).unwrap() {
            datadiff_backend_store::StartOutcome::Started(attempt) => attempt,
            datadiff_backend_store::StartOutcome::Skipped(skip) => panic!("expected a start, got {skip:?}"),
        }
    }

    /// Starts an attempt that must be skipped.
    pub(crate) fn skip(
        &self,
        definition: &datadiff_backend_store::StoredDefinition,
        slot: chrono::DateTime<chrono::Utc>,
        kind: datadiff_diff_core::attempt::StartKind,
        now: chrono::DateTime<chrono::Utc>,
    ) -> datadiff_diff_core::attempt::Skip {
        match self.store.start_attempt(definition, slot, kind, now).unwrap() {
            datadiff_backend_store::StartOutcome::Skipped(skip) => skip,
            datadiff_backend_store::StartOutcome::Started(attempt) => panic!("expected a skip, got {attempt:?}"),
        }
    }

    /// Finishes a RUNNING attempt with `status`, no results, and an error text unless PASS.
    pub(crate) fn finish(
        &self,
        run_id: datadiff_diff_core::attempt::RunId,
        status: datadiff_diff_core::attempt::RunStatus,
        finished_at: chrono::DateTime<chrono::Utc>,
    ) -> datadiff_backend_store::Finished {
        let error = (status != datadiff_diff_core::attempt::RunStatus::Pass).then(|| format!("test {status}"));
        self.store
            .finish_attempt(&datadiff_backend_store::Completion {
                run_id,
                status,
                preflight_id: None,
                error,
                results: Vec::new(),
                differences: Vec::new(),
                finished_at,
            })
            .unwrap()
    }
}

/// `scheduled` with or without `--force`.
pub(crate) fn scheduled(force: bool) -> datadiff_diff_core::attempt::StartKind {
    datadiff_diff_core::attempt::StartKind::Scheduled { force }
}
