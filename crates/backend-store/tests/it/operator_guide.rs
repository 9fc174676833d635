//! `docs/operator-guide.md` executed: its SQL blocks run, in the guide's order, against a
//! throwaway cluster with the placeholder names replaced by unique ones, and what they promise
//! is proved on the rows — the DDL role migrates and owns the schema, the application role
//! reads and writes but never deletes, the source and replica readers cannot write, and the
//! retention procedure removes exactly the superseded history while the coverage, every
//! foreign key and the 003 → 002 guard's verdict stay as they were.
//!
//! Every ```` ```sql ```` block of the guide must be `runnable` with an `id` and a
//! `connect=ROLE@DATABASE`, and every id must be run by a test here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, DurationRound, TimeDelta, Utc};
use datadiff_backend_store::{
    Attempt, BackendConfig, Completion, Difference, Error, MigrateOptions, NewPreflight, Revision, StartOutcome, Store,
    StoredDefinition, SyncScope, Target, migrate_backend,
};
use datadiff_diff_core::{
    attempt::{CheckResult, PreflightStatus, ResultStatus, ResultType, RunId, RunStatus, StartKind},
    merge::DifferenceKind,
};
use datadiff_testkit::{Database, quote_ident, shared_cluster};
use datadiff_watermark::{Slot, recompute};
use postgres::error::SqlState;
use serde_json::json;
use uuid::Uuid;

use crate::support::{insert_definition, table};

const GUIDE: &str = include_str!("../../../../docs/operator-guide.md");

/// The ids each test below runs; together, every runnable block of the guide.
const MAIN_BACKEND: [&str; 3] = ["backend-roles", "backend-database", "backend-public-schema"];
const NOT_OWNED_BACKEND: [&str; 2] = ["backend-roles", "backend-database-not-owned"];
const READERS: [&str; 2] = ["source-reader", "replica-reader"];
const PRUNE: &str = "prune";

/// A runnable SQL block of the guide.
#[derive(Debug, Clone)]
struct Block {
    id: String,
    role: String,
    database: String,
    sql: String,
}

/// Every ```` ```sql ```` block, in the guide's order; panics on a block that is not marked
/// runnable with an id and a connect target.
fn blocks() -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut lines = GUIDE.lines();
    while let Some(line) = lines.next() {
        let Some(info) = line.strip_prefix("```sql") else { continue };
        let words: Vec<&str> = info.split_whitespace().collect();
        assert!(words.first() == Some(&"runnable"), "an SQL block of the guide is not marked runnable: {line}");
        let value = |key: &str| {
            words
                .iter()
                .find_map(|word| word.strip_prefix(key).and_then(|rest| rest.strip_prefix('=')))
                .unwrap_or_else(|| panic!("SQL block without {key}=: {line}"))
                .to_owned()
        };
        let id = value("id");
        let connect = value("connect");
        let (role, database) = connect.split_once('@').unwrap_or_else(|| panic!("connect=ROLE@DATABASE: {line}"));
        let mut sql = String::new();
        for body in lines.by_ref() {
            if body.starts_with("```") {
                break;
            }
            sql.push_str(body);
            sql.push('\n');
        }
        blocks.push(Block { id, role: role.to_owned(), database: database.to_owned(), sql });
    }
    blocks
}

fn block(id: &str) -> Block {
    blocks().into_iter().find(|block| block.id == id).unwrap_or_else(|| panic!("no SQL block {id} in the guide"))
}

/// The guide's placeholder names mapped to this test's unique ones, and the passwords.
struct Names {
    map: BTreeMap<&'static str, String>,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

impl Names {
    fn new() -> Names {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let unique = |name: &str| format!("{name}_{}_{n}", std::process::id());
        let map = [
            "datadiff_backend",
            "datadiff_ddl",
            "datadiff_app",
            "datadiff_source_reader",
            "datadiff_replica_reader",
            "pipelinewise_loader",
        ]
        .into_iter()
        .map(|name| (name, unique(name)))
        .collect();
        Names { map }
    }

    /// Maps `placeholder` (also used for databases created by the test itself).
    fn set(&mut self, placeholder: &'static str, actual: &str) {
        self.map.insert(placeholder, actual.to_owned());
    }

    fn get(&self, placeholder: &str) -> String {
        self.map.get(placeholder).cloned().unwrap_or_else(|| placeholder.to_owned())
    }

    /// The guide's password for a role placeholder.
    fn password(role: &str) -> &'static str {
        match role {
            "datadiff_ddl" => "CHANGE_ME_DDL",
            "datadiff_app" => "CHANGE_ME_APP",
            "datadiff_source_reader" => "CHANGE_ME_SOURCE",
            "datadiff_replica_reader" => "CHANGE_ME_REPLICA",
            other => panic!("no password for {other}"),
        }
    }

    /// Replaces every identifier token equal to a placeholder (whole words only, so
    /// `replicated_payments` is not touched by `payments`).
    fn substitute(&self, sql: &str) -> String {
        let mut out = String::with_capacity(sql.len());
        let mut word = String::new();
        let flush = |word: &mut String, out: &mut String| {
            match self.map.get(word.as_str()) {
                Some(actual) => out.push_str(actual),
                None => out.push_str(word),
            }
            word.clear();
        };
        for c in sql.chars() {
            if c.is_ascii_alphanumeric() || c == '_' {
                word.push(c);
            } else {
                flush(&mut word, &mut out);
                out.push(c);
            }
        }
        flush(&mut word, &mut out);
        out
    }

    /// A session as `role@database` of a block (placeholders).
    fn connect(&self, role: &str, database: &str) -> postgres::Client {
        let cluster = shared_cluster();
        let database = self.get(database);
        if role == "superuser" {
            return cluster.connect(&database).unwrap();
        }
        cluster.config_for(&self.get(role), Names::password(role), &database).connect(postgres::NoTls).unwrap()
    }

    /// Runs the guide's block `id` as written, placeholders replaced, statement by statement
    /// as psql sends it.
    fn run(&self, id: &str) -> Vec<postgres::SimpleQueryMessage> {
        let block = block(id);
        execute(&mut self.connect(&block.role, &block.database), &self.substitute(&block.sql)).unwrap()
    }

    /// The backend settings of `config.yml` for the guide's two roles.
    fn backend_config(&self) -> BackendConfig {
        let cluster = shared_cluster();
        BackendConfig {
            host: cluster.host().to_owned(),
            port: cluster.port(),
            user: self.get("datadiff_app"),
            password: Names::password("datadiff_app").to_owned(),
            dbname: self.get("datadiff_backend"),
            ddl_user: self.get("datadiff_ddl"),
            ddl_password: Names::password("datadiff_ddl").to_owned(),
            ..BackendConfig::default()
        }
    }
}

/// Splits SQL into statements at top-level semicolons, as psql does: not inside quotes,
/// dollar quotes or `--` comments.
fn statements(sql: &str) -> Vec<String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut statements = Vec::new();
    let mut current = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '-' && chars.get(i + 1) == Some(&'-') {
            while i < chars.len() && chars[i] != '\n' {
                current.push(chars[i]);
                i += 1;
            }
            continue;
        }
        if c == '\'' || c == '"' {
            current.push(c);
            i += 1;
            while i < chars.len() {
                current.push(chars[i]);
                i += 1;
                if chars[i - 1] == c {
                    break;
                }
            }
            continue;
        }
        if c == '$' {
            let tag_end = chars[i + 1..].iter().position(|t| !(t.is_ascii_alphanumeric() || *t == '_'));
            if let Some(offset) = tag_end
                && chars[i + 1 + offset] == '$'
            {
                let tag: String = chars[i..i + 2 + offset].iter().collect();
                let rest: String = chars[i + tag.chars().count()..].iter().collect();
                let close = rest.find(&tag).map_or(rest.len(), |position| position + tag.len());
                current.push_str(&tag);
                current.push_str(&rest[..close]);
                i += tag.chars().count() + rest[..close].chars().count();
                continue;
            }
        }
        current.push(c);
        i += 1;
        if c == ';' {
            statements.push(std::mem::take(&mut current));
        }
    }
    if !current.trim().is_empty() {
        statements.push(current);
    }
    statements
}

/// Runs `sql` statement by statement on one session (a `BEGIN` spans the statements that
/// follow it) and returns every message.
fn execute(client: &mut postgres::Client, sql: &str) -> Result<Vec<postgres::SimpleQueryMessage>, postgres::Error> {
    let mut messages = Vec::new();
    for statement in statements(sql) {
        messages.extend(client.simple_query(&statement)?);
    }
    Ok(messages)
}

fn sqlstate(error: &postgres::Error) -> Option<&SqlState> {
    error.code()
}

fn assert_denied(result: Result<u64, postgres::Error>, what: &str) {
    let error = result.expect_err(what);
    assert_eq!(sqlstate(&error), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{what}: {error}");
}

/// The guide's backend set up with `ids`, migrated as the import would, and its store.
fn migrated_backend(names: &Names) -> Store {
    let report = migrate_backend(&names.backend_config(), &MigrateOptions::latest()).unwrap();
    assert!(!report.steps.is_empty());
    let store = Store::open(names.backend_config()).unwrap();
    store.gate(Path::new("/srv/project")).unwrap();
    store
}

/// What §2 promises about the two roles, read back from the catalog and by trying.
fn assert_role_separation(names: &Names) {
    let ddl = names.get("datadiff_ddl");
    let mut superuser = names.connect("superuser", "datadiff_backend");
    let owners: Vec<String> = superuser
        .query(
            "SELECT DISTINCT tableowner::text FROM pg_tables WHERE schemaname = 'public' \
             AND (tablename LIKE 'dd\\_%' OR tablename LIKE 'datadiff\\_%' OR tablename = 'alembic_version')",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(owners, vec![ddl], "the DDL role owns every table");

    let mut app = names.connect("datadiff_app", "datadiff_backend");
    let check_id = "9d7c0e4a-7a52-4c1e-a3f1-0c6b3a1d2e01";
    insert_definition(&mut app, check_id);
    let read: i64 = app.query_one("SELECT count(*) FROM public.dd_check_definitions", &[]).unwrap().get(0);
    assert_eq!(read, 1, "the application role reads and inserts");
    app.execute("UPDATE public.dd_check_definitions SET is_current = false", &[]).unwrap();
    assert_denied(app.execute("DELETE FROM public.dd_check_definitions", &[]), "the application role deletes");
    assert_denied(app.execute("DELETE FROM public.dd_run_results", &[]), "the application role deletes results");
    assert_denied(app.execute("TRUNCATE public.dd_run_attempts", &[]), "the application role truncates");
    assert_denied(app.execute("CREATE TABLE public.app_table (id int)", &[]), "the application role creates tables");
    assert_denied(app.execute("DROP TABLE public.dd_run_results", &[]), "the application role drops tables");
    let left: i64 = superuser.query_one("SELECT count(*) FROM public.dd_check_definitions", &[]).unwrap().get(0);
    assert_eq!(left, 1);
}

#[test]
fn the_backend_database_owned_by_the_ddl_role_migrates_and_separates_the_roles() {
    let names = Names::new();
    for id in MAIN_BACKEND {
        names.run(id);
    }
    // PostgreSQL 15: no CREATE on public for anyone but the owner, CONNECT only for the two.
    let mut superuser = names.connect("superuser", "datadiff_backend");
    let app = names.get("datadiff_app");
    let row = superuser
        .query_one(
            "SELECT has_schema_privilege($1::text, 'public', 'CREATE'), \
                    has_database_privilege($1::text, current_database(), 'TEMPORARY'), \
                    has_database_privilege('public', current_database(), 'CONNECT')",
            &[&app],
        )
        .unwrap();
    assert_eq!((row.get::<_, bool>(0), row.get::<_, bool>(1), row.get::<_, bool>(2)), (false, false, false));

    let store = migrated_backend(&names);
    let status = store.status().unwrap();
    assert!(status.is_current(), "{status}");
    assert_role_separation(&names);
}

#[test]
fn a_backend_database_owned_by_another_role_migrates_with_the_schema_grants() {
    let mut names = Names::new();
    // The DBA's existing database, owned by the superuser.
    let database = shared_cluster().fresh_database().unwrap();
    names.set("datadiff_backend", database.name());
    for id in NOT_OWNED_BACKEND {
        names.run(id);
    }
    let store = migrated_backend(&names);
    assert!(store.status().unwrap().is_current());
    assert_role_separation(&names);
}

/// A source database with one table and a replica database whose schema a loader owns.
fn source_and_replica(names: &mut Names) -> (Database<'static>, Database<'static>) {
    let cluster = shared_cluster();
    let source = cluster.fresh_database().unwrap();
    let replica = cluster.fresh_database().unwrap();
    names.set("payments", source.name());
    names.set("warehouse", replica.name());
    let loader = names.get("pipelinewise_loader");
    cluster.create_role(&loader, "loader-pw").unwrap();
    source
        .client()
        .unwrap()
        .batch_execute(
            "CREATE TABLE public.transfers (id bigint PRIMARY KEY, updated_at timestamptz, status text); \
             INSERT INTO public.transfers VALUES (1, now(), 'paid')",
        )
        .unwrap();
    replica
        .client()
        .unwrap()
        .batch_execute(&format!(
            "CREATE SCHEMA replicated_payments AUTHORIZATION {loader}; \
             SET ROLE {loader}; \
             CREATE TABLE replicated_payments.transfers (id bigint PRIMARY KEY, updated_at timestamptz, status text); \
             INSERT INTO replicated_payments.transfers VALUES (1, now(), 'paid'); \
             RESET ROLE; \
             CREATE TABLE public.payroll (id bigint)",
            loader = quote_ident(&loader)
        ))
        .unwrap();
    (source, replica)
}

/// The reader reads `table`, and writes nothing even after switching read-only off.
fn assert_reads_but_cannot_write(reader: &mut postgres::Client, table: &str) {
    let rows: i64 = reader.query_one(&format!("SELECT count(*) FROM {table}"), &[]).unwrap().get(0);
    assert_eq!(rows, 1, "{table}");
    let read_only: String = reader.query_one("SHOW default_transaction_read_only", &[]).unwrap().get(0);
    assert_eq!(read_only, "on");
    let insert = format!("INSERT INTO {table} (id) VALUES (2)");
    let error = reader.execute(&insert, &[]).expect_err("a read-only session wrote");
    assert_eq!(sqlstate(&error), Some(&SqlState::READ_ONLY_SQL_TRANSACTION), "{error}");
    // The setting is a belt; the grants are the barrier.
    reader.batch_execute("SET default_transaction_read_only = off").unwrap();
    assert_denied(reader.execute(&insert, &[]), "the reader inserted");
    assert_denied(reader.execute(&format!("DELETE FROM {table}"), &[]), "the reader deleted");
}

#[test]
fn the_source_and_replica_readers_read_and_never_write() {
    let mut names = Names::new();
    let (source, replica) = source_and_replica(&mut names);
    for id in READERS {
        names.run(id);
    }

    let mut source_reader = names.connect("datadiff_source_reader", "payments");
    assert_reads_but_cannot_write(&mut source_reader, "public.transfers");
    // What sessions and the audit read besides the table.
    let mut source_reader = names.connect("datadiff_source_reader", "payments");
    let columns: i64 = source_reader
        .query_one(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = 'public' AND table_name = 'transfers'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(columns, 3);
    source_reader.query_one("SELECT system_identifier FROM pg_control_system()", &[]).unwrap();

    // A table the loader creates after the grants is readable too (default privileges);
    // tables outside the replicated schema are not.
    let loader = quote_ident(&names.get("pipelinewise_loader"));
    replica
        .client()
        .unwrap()
        .batch_execute(&format!(
            "SET ROLE {loader}; CREATE TABLE replicated_payments.refunds (id bigint PRIMARY KEY); \
             INSERT INTO replicated_payments.refunds VALUES (1); RESET ROLE"
        ))
        .unwrap();
    let mut replica_reader = names.connect("datadiff_replica_reader", "warehouse");
    assert_reads_but_cannot_write(&mut replica_reader, "replicated_payments.transfers");
    let mut replica_reader = names.connect("datadiff_replica_reader", "warehouse");
    assert_reads_but_cannot_write(&mut replica_reader, "replicated_payments.refunds");
    let mut replica_reader = names.connect("datadiff_replica_reader", "warehouse");
    let outside = replica_reader.query_one("SELECT count(*) FROM public.payroll", &[]);
    assert_eq!(sqlstate(&outside.expect_err("read outside the schema")), Some(&SqlState::INSUFFICIENT_PRIVILEGE));

    let source_rows: i64 =
        source.client().unwrap().query_one("SELECT count(*) FROM public.transfers", &[]).unwrap().get(0);
    let replica_rows: i64 =
        replica.client().unwrap().query_one("SELECT count(*) FROM replicated_payments.transfers", &[]).unwrap().get(0);
    assert_eq!((source_rows, replica_rows), (1, 1), "nothing was written");
}

// ---- retention ---------------------------------------------------------------------------

/// Seeds history through the store as the runner writes it, at times relative to now so
/// that the guide's cutoff (`now() - interval '180 days'`) runs as written.
struct History<'s> {
    store: &'s Store,
    base: DateTime<Utc>,
}

impl History<'_> {
    /// The slot `hours` after the base (about 400 days ago).
    fn slot(&self, hours: i64) -> DateTime<Utc> {
        self.base + TimeDelta::hours(hours)
    }

    fn start(
        &self,
        definition: &StoredDefinition,
        slot: DateTime<Utc>,
        kind: StartKind,
        now: DateTime<Utc>,
    ) -> Attempt {
        match self.store.start_attempt(definition, slot, kind, now).unwrap() {
            StartOutcome::Started(attempt) => attempt,
            StartOutcome::Skipped(skip) => panic!("expected a start, got {skip:?}"),
        }
    }

    /// Records a preflight and finishes `attempt` with `status`, a `row_count` result (none
    /// for DEFERRED) and, for a FAIL, two `row_diff` differences.
    fn finish(&self, attempt: &Attempt, status: RunStatus, finished_at: DateTime<Utc>) -> Uuid {
        let preflight = NewPreflight {
            status: PreflightStatus::Pass,
            query_fingerprint: format!("{:064x}", attempt.run_id.get().as_u128()),
            index_metadata: json!([]),
            findings: json!([]),
            error: None,
            table_rows: None,
            row_limit: None,
            has_leading_index: Some(true),
        };
        let preflight_id =
            self.store.record_preflight(attempt.run_id, attempt.check_id, &preflight, finished_at).unwrap();
        let result = |status: ResultStatus| CheckResult {
            check_type: "row_count".parse().unwrap(),
            status,
            source_value: json!("4"),
            target_value: json!(if status == ResultStatus::Pass { "4" } else { "3" }),
            source_query_seconds: Some(0.1),
            target_query_seconds: Some(0.1),
            error: (status != ResultStatus::Pass).then(|| "row_count FAIL".to_owned()),
        };
        let (results, differences, error) = match status {
            RunStatus::Pass => (vec![result(ResultStatus::Pass)], vec![], None),
            RunStatus::Fail => (
                vec![result(ResultStatus::Fail)],
                vec![
                    Difference {
                        check_type: ResultType::RowDiff,
                        kind: DifferenceKind::MissingInTarget,
                        key: json!({"id": "7"}),
                        fields: vec![],
                    },
                    Difference {
                        check_type: ResultType::RowDiff,
                        kind: DifferenceKind::Changed,
                        key: json!({"id": "9"}),
                        fields: vec!["status".into()],
                    },
                ],
                Some("row_count FAIL".to_owned()),
            ),
            RunStatus::Error => (vec![], vec![], Some("source aggregate query failed".to_owned())),
            RunStatus::Deferred => (vec![], vec![], Some("Historical comparison is pending".to_owned())),
            RunStatus::Running => panic!("not a terminal status"),
        };
        self.store
            .finish_attempt(&Completion {
                run_id: attempt.run_id,
                status,
                preflight_id: Some(preflight_id),
                error,
                results,
                differences,
                finished_at,
            })
            .unwrap();
        attempt.run_id.get()
    }

    fn run(
        &self,
        definition: &StoredDefinition,
        slot: DateTime<Utc>,
        kind: StartKind,
        status: RunStatus,
        minutes: i64,
    ) -> Uuid {
        let now = slot + TimeDelta::minutes(minutes);
        let attempt = self.start(definition, slot, kind, now);
        self.finish(&attempt, status, now + TimeDelta::minutes(1))
    }

    fn remediate(&self, run_id: Uuid, status: RunStatus, start: Option<DateTime<Utc>>, at: DateTime<Utc>) -> Uuid {
        let remediation = self
            .store
            .start_remediation(datadiff_diff_core::attempt::RunId::new(run_id), "INC-42", at)
            .unwrap()
            .attempt;
        if let Some(start) = start {
            self.store.resolve_historical_start(remediation.run_id, start).unwrap();
        }
        self.finish(&remediation, status, at + TimeDelta::minutes(1))
    }
}

/// Rows of a table as JSON text, in a stable order (for before/after comparisons).
fn dump(client: &mut postgres::Client, table: &str) -> Vec<String> {
    client
        .query(&format!("SELECT row_to_json(t)::text FROM public.{table} t ORDER BY 1"), &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

fn uuids(client: &mut postgres::Client, sql: &str) -> BTreeSet<Uuid> {
    client.query(sql, &[]).unwrap().iter().map(|row| row.get(0)).collect()
}

/// What the prune touches, by attempt: attempts, results, differences, events and preflights.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Evidence {
    attempts: BTreeSet<Uuid>,
    results: BTreeSet<Uuid>,
    differences: BTreeSet<Uuid>,
    events: BTreeSet<Uuid>,
    preflights: BTreeSet<Uuid>,
    preflight_of: BTreeMap<Uuid, Uuid>,
}

impl Evidence {
    fn read(client: &mut postgres::Client) -> Evidence {
        Evidence {
            attempts: uuids(client, "SELECT run_id FROM public.dd_run_attempts"),
            results: uuids(client, "SELECT DISTINCT run_id FROM public.dd_run_results"),
            differences: uuids(client, "SELECT DISTINCT run_id FROM public.datadiff_run_differences"),
            events: uuids(client, "SELECT evaluated_run_id FROM public.dd_watermark_events"),
            preflights: uuids(client, "SELECT preflight_id FROM public.dd_preflight_log"),
            preflight_of: client
                .query("SELECT run_id, preflight_id FROM public.dd_run_attempts WHERE preflight_id IS NOT NULL", &[])
                .unwrap()
                .iter()
                .map(|row| (row.get(0), row.get(1)))
                .collect(),
        }
    }

    /// This evidence without the rows of `pruned` attempts.
    fn without(&self, pruned: &BTreeSet<Uuid>) -> Evidence {
        let keep = |set: &BTreeSet<Uuid>| set.difference(pruned).copied().collect::<BTreeSet<Uuid>>();
        let pruned_preflights: BTreeSet<Uuid> =
            self.preflight_of.iter().filter(|(run, _)| pruned.contains(run)).map(|(_, preflight)| *preflight).collect();
        Evidence {
            attempts: keep(&self.attempts),
            results: keep(&self.results),
            differences: keep(&self.differences),
            events: keep(&self.events),
            preflights: self.preflights.difference(&pruned_preflights).copied().collect(),
            preflight_of: self
                .preflight_of
                .iter()
                .filter(|(run, _)| !pruned.contains(run))
                .map(|(r, p)| (*r, *p))
                .collect(),
        }
    }
}

/// Every single-column foreign key of schema `public` has no orphan.
fn assert_no_orphans(client: &mut postgres::Client) {
    let keys = client
        .query(
            "SELECT c.conname::text, c.conrelid::regclass::text, a.attname::text, c.confrelid::regclass::text, \
                    af.attname::text, cardinality(c.conkey) \
               FROM pg_constraint c \
               JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1] \
               JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = c.confkey[1] \
              WHERE c.contype = 'f' AND c.connamespace = 'public'::regnamespace",
            &[],
        )
        .unwrap();
    assert!(keys.len() >= 15, "only {} foreign keys found", keys.len());
    for key in keys {
        let (name, child, column, parent, parent_column, width): (String, String, String, String, String, i32) =
            (key.get(0), key.get(1), key.get(2), key.get(3), key.get(4), key.get(5));
        assert_eq!(width, 1, "{name} is not a single-column key");
        let orphans: i64 = client
            .query_one(
                &format!(
                    "SELECT count(*) FROM {child} c WHERE c.{column} IS NOT NULL \
                     AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.{parent_column} = c.{column})",
                    column = quote_ident(&column),
                    parent_column = quote_ident(&parent_column),
                ),
                &[],
            )
            .unwrap()
            .get(0);
        assert_eq!(orphans, 0, "{name}: {child}.{column} has orphans");
    }
}

/// `(verified_start, verified_end, furthest_observed_end, verified_status, blocking_run_id,
/// reason)` of a watermark state row.
type StoredCoverage = (Option<DateTime<Utc>>, Option<DateTime<Utc>>, DateTime<Utc>, String, Option<Uuid>, String);

/// Recomputes each definition's coverage from its slot rows (the pure rule) and compares it
/// with the stored watermark state.
fn assert_coverage_recomputes(client: &mut postgres::Client) {
    let states = client
        .query(
            "SELECT check_id, verified_start, verified_end, furthest_observed_end, verified_status, \
                    blocking_run_id, reason FROM public.dd_watermark_state",
            &[],
        )
        .unwrap();
    assert!(!states.is_empty());
    for state in states {
        let check_id: Uuid = state.get(0);
        let slots: Vec<Slot> = client
            .query(
                "SELECT scheduled_for, window_start, window_end, status, run_id, attempt \
                   FROM public.dd_run_slot_state WHERE check_id = $1",
                &[&check_id],
            )
            .unwrap()
            .iter()
            .map(|row| Slot {
                scheduled_for: row.get(0),
                window_start: row.get(1),
                window_end: row.get(2),
                status: row.get::<_, String>(3).parse::<RunStatus>().unwrap(),
                run_id: RunId::new(row.get(4)),
                attempt: row.get(5),
            })
            .collect();
        let coverage = recompute(&slots, false).unwrap();
        let stored: StoredCoverage =
            (state.get(1), state.get(2), state.get(3), state.get(4), state.get(5), state.get(6));
        assert_eq!(
            stored,
            (
                coverage.verified_start(),
                coverage.verified_end(),
                coverage.furthest_observed_end,
                coverage.status.as_str().to_owned(),
                coverage.blocking_run_id.map(RunId::get),
                coverage.reason.clone(),
            ),
            "coverage of {check_id} is not what its slots recompute to"
        );
    }
}

/// The rows the prune must never change, as text.
fn untouchable(client: &mut postgres::Client) -> Vec<Vec<String>> {
    ["dd_check_definitions", "dd_run_slot_state", "dd_watermark_state", "dd_index_warning_state", "alembic_version"]
        .into_iter()
        .map(|table| dump(client, table))
        .collect()
}

#[test]
fn the_retention_procedure_prunes_superseded_history_and_keeps_coverage_keys_and_guard() {
    let names = Names::new();
    for id in MAIN_BACKEND {
        names.run(id);
    }
    let store = migrated_backend(&names);
    let now = Utc::now();
    let history =
        History { store: &store, base: now.duration_trunc(TimeDelta::hours(1)).unwrap() - TimeDelta::days(400) };
    let slot = |hours| history.slot(hours);
    let scheduled = StartKind::Scheduled { force: false };
    let forced = StartKind::Scheduled { force: true };

    let mut full_scan = table("payments", "ledger");
    full_scan.initial_full_scan = true;
    let mut unresolved = table("payments", "refunds");
    unresolved.initial_full_scan = true;
    store
        .sync_definitions(&[table("payments", "transfers"), full_scan, unresolved], &SyncScope::all(), slot(0))
        .unwrap();
    let definitions = store.definitions(&Default::default()).unwrap();
    let named = |table: &str| definitions.iter().find(|d| d.definition.source_table == table).unwrap().clone();
    let (a, b, c) = (named("transfers"), named("ledger"), named("refunds"));

    // A, hourly windows, old history (about 400 days ago).
    history.run(&a, slot(1), scheduled, RunStatus::Pass, 1);
    // s2: a failure remediated — the original stays (rerun_of_run_id of a kept attempt).
    let a2_failed = history.run(&a, slot(2), scheduled, RunStatus::Fail, 1);
    history.remediate(a2_failed, RunStatus::Pass, None, slot(2) + TimeDelta::minutes(20));
    // s3: a failure, a retry that errs, a forced rerun that passes — the first two go.
    let a3_failed = history.run(&a, slot(3), scheduled, RunStatus::Fail, 1);
    let retry = StartKind::Retry { retry_before: slot(4) };
    let a3_retried = history.run(&a, slot(3), retry, RunStatus::Error, 65);
    history.run(&a, slot(3), forced, RunStatus::Pass, 70);
    // s4 fails, s5 passes while s4 blocks (its event names s4's run), then s4 is forced to a
    // pass — s4's first run stays (the blocking run of a kept event).
    let a4_failed = history.run(&a, slot(4), scheduled, RunStatus::Fail, 1);
    history.run(&a, slot(5), scheduled, RunStatus::Pass, 1);
    history.run(&a, slot(4), forced, RunStatus::Pass, 90);
    // s6: a failure and its failed remediation, then a forced pass — both go (the
    // remediation references the original; they leave in one statement).
    let a6_failed = history.run(&a, slot(6), scheduled, RunStatus::Fail, 1);
    let a6_remediation = history.remediate(a6_failed, RunStatus::Fail, None, slot(6) + TimeDelta::minutes(5));
    history.run(&a, slot(6), forced, RunStatus::Pass, 10);
    // Two days ago: a failure forced to a pass — after the cutoff, so it stays.
    let recent = now.duration_trunc(TimeDelta::hours(1)).unwrap() - TimeDelta::days(2);
    let a_recent_failed = history.run(&a, recent, scheduled, RunStatus::Fail, 1);
    history.run(&a, recent, forced, RunStatus::Pass, 5);

    // B, initial full scan: DEFERRED, then a forced run that resolves its start and passes —
    // the DEFERRED attempt stays (the 003 -> 002 guard's row).
    let b_deferred = history.run(&b, slot(1), scheduled, RunStatus::Deferred, 1);
    let b_forced = history.start(&b, slot(1), forced, slot(1) + TimeDelta::minutes(30));
    assert_eq!(b_forced.bounds.start, None);
    store.resolve_historical_start(b_forced.run_id, slot(1) - TimeDelta::days(10)).unwrap();
    history.finish(&b_forced, RunStatus::Pass, slot(1) + TimeDelta::minutes(31));

    // C, initial full scan that errs unresolved; the next slot passes twice while C has no
    // bounds (NULL-bound events); then the remediation resolves the start — the first pass of
    // slot 2 stays (its event has unresolved bounds).
    let c1_error = history.run(&c, slot(1), scheduled, RunStatus::Error, 1);
    let c2_first = history.run(&c, slot(2), scheduled, RunStatus::Pass, 1);
    history.run(&c, slot(2), forced, RunStatus::Pass, 10);
    history.remediate(c1_error, RunStatus::Pass, Some(slot(1) - TimeDelta::days(5)), slot(2) + TimeDelta::minutes(30));

    let mut superuser = names.connect("superuser", "datadiff_backend");
    let before = Evidence::read(&mut superuser);
    let untouched = untouchable(&mut superuser);
    let latest: Vec<_> = [&a, &b, &c].iter().map(|d| store.latest_scheduled_for(d.check_id).unwrap()).collect();
    let pending: Vec<_> =
        store.list_checks(&Default::default()).unwrap().iter().map(|l| l.historical_scan_pending).collect();
    assert_coverage_recomputes(&mut superuser);
    // The scenario exercises each rule: these attempts are superseded in their slot (not its
    // outcome, not its newest attempt), and all but one ended before the cutoff, so only the
    // rule named beside each keeps it.
    for (kept, rule) in [
        (a2_failed, "original of a kept remediation"),
        (a4_failed, "blocking run of a kept event"),
        (a_recent_failed, "ended after the cutoff"),
        (b_deferred, "DEFERRED (the 003 -> 002 guard)"),
        (c1_error, "unresolved start (the 003 -> 002 guard)"),
        (c2_first, "event with unresolved bounds (the 003 -> 002 guard)"),
    ] {
        let row = superuser
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM public.dd_run_slot_state s WHERE s.run_id = a.run_id), \
                        EXISTS (SELECT 1 FROM public.dd_run_attempts n WHERE n.check_id = a.check_id \
                                AND n.scheduled_for = a.scheduled_for AND n.attempt > a.attempt), \
                        a.finished_at < now() - interval '180 days' \
                   FROM public.dd_run_attempts a WHERE a.run_id = $1",
                &[&kept],
            )
            .unwrap();
        let old = kept != a_recent_failed;
        assert_eq!((row.get::<_, bool>(0), row.get::<_, bool>(1), row.get::<_, bool>(2)), (false, true, old), "{rule}");
    }

    // The application role cannot run it; nothing changes.
    let prune = block(PRUNE);
    let mut app = names.connect("datadiff_app", "datadiff_backend");
    let refused = execute(&mut app, &names.substitute(&prune.sql)).expect_err("the application role pruned");
    assert_eq!(sqlstate(&refused), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{refused}");
    assert_eq!(Evidence::read(&mut superuser), before);

    // The dry run (COMMIT replaced by ROLLBACK) reports and deletes nothing.
    assert!(prune.sql.trim_end().ends_with("COMMIT;"));
    let dry_run = format!("{}ROLLBACK;\n", prune.sql.trim_end().strip_suffix("COMMIT;").unwrap());
    let mut ddl = names.connect("datadiff_ddl", "datadiff_backend");
    let counted = pruned_count(&execute(&mut ddl, &names.substitute(&dry_run)).unwrap());
    assert_eq!(counted, 4);
    assert_eq!(Evidence::read(&mut superuser), before);

    // The procedure as written.
    assert_eq!(pruned_count(&names.run(PRUNE)), 4);
    let pruned: BTreeSet<Uuid> = [a3_failed, a3_retried, a6_failed, a6_remediation].into();
    let after = Evidence::read(&mut superuser);
    assert_eq!(after, before.without(&pruned), "exactly the superseded attempts and their rows go");
    assert!(before.differences.contains(&a3_failed) && after.differences.contains(&a4_failed));
    assert_eq!(untouchable(&mut superuser), untouched, "definitions, slots, watermarks and markers are untouched");
    assert_coverage_recomputes(&mut superuser);
    assert_no_orphans(&mut superuser);
    let latest_after: Vec<_> = [&a, &b, &c].iter().map(|d| store.latest_scheduled_for(d.check_id).unwrap()).collect();
    assert_eq!(latest_after, latest, "the observed slots are unchanged");
    let pending_after: Vec<_> =
        store.list_checks(&Default::default()).unwrap().iter().map(|l| l.historical_scan_pending).collect();
    assert_eq!(pending_after, pending);

    // A second run finds nothing more.
    assert_eq!(pruned_count(&names.run(PRUNE)), 0);

    // The 003 -> 002 guard still refuses (and refusing leaves the backend as it was).
    let downgrade =
        migrate_backend(&names.backend_config(), &MigrateOptions::to(Target::Revision(Revision::R002), true));
    assert!(matches!(downgrade, Err(Error::DowngradeRefused { .. })), "{downgrade:?}");
    assert!(store.status().unwrap().is_current());

    // The store carries on: a forced rerun of a pruned slot numbers after its newest attempt,
    // and the coverage still equals its recomputation.
    let rerun = history.start(&a, slot(3), forced, now);
    assert_eq!((rerun.attempt, rerun.trigger), (4, datadiff_diff_core::attempt::TriggerType::Manual));
    history.finish(&rerun, RunStatus::Pass, now);
    assert_coverage_recomputes(&mut superuser);
    assert_no_orphans(&mut superuser);
}

/// The `pruned_attempts` value the procedure's final SELECT returns.
fn pruned_count(messages: &[postgres::SimpleQueryMessage]) -> i64 {
    messages
        .iter()
        .find_map(|message| match message {
            postgres::SimpleQueryMessage::Row(row) if row.columns()[0].name() == "pruned_attempts" => {
                row.get(0).and_then(|text| text.parse().ok())
            }
            _ => None,
        })
        .expect("the procedure reports pruned_attempts")
}

#[test]
fn every_sql_block_of_the_guide_is_runnable_and_run_by_a_test() {
    let blocks = blocks();
    let ids: Vec<&str> = blocks.iter().map(|block| block.id.as_str()).collect();
    let mut run: BTreeSet<&str> = MAIN_BACKEND.into_iter().chain(NOT_OWNED_BACKEND).chain(READERS).collect();
    run.insert(PRUNE);
    assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>(), run, "a runnable block is not run by a test");
    assert_eq!(ids.len(), run.len(), "block ids must be unique");
    // The tests run them in the guide's order.
    let position = |id: &str| ids.iter().position(|candidate| *candidate == id).unwrap();
    for group in [&MAIN_BACKEND[..], &NOT_OWNED_BACKEND[..], &READERS[..]] {
        assert!(group.windows(2).all(|pair| position(pair[0]) < position(pair[1])), "{group:?}");
    }
    assert!(MAIN_BACKEND.iter().chain(&READERS).all(|id| position(id) < position(PRUNE)));
    for block in &blocks {
        let known = ["superuser", "datadiff_ddl", "datadiff_app", "datadiff_source_reader", "datadiff_replica_reader"];
        assert!(known.contains(&block.role.as_str()), "{}: unknown role {}", block.id, block.role);
        assert!(!block.sql.trim().is_empty(), "{} is empty", block.id);
    }
}

#[test]
fn statements_are_split_as_psql_splits_them() {
    let sql =
        "BEGIN;\n-- a comment; not a split\nSELECT 'a;b', \"x;y\";\nDO $tag$ BEGIN PERFORM 1; END $tag$;\nCOMMIT;\n";
    assert_eq!(
        statements(sql),
        vec![
            "BEGIN;".to_owned(),
            "\n-- a comment; not a split\nSELECT 'a;b', \"x;y\";".to_owned(),
            "\nDO $tag$ BEGIN PERFORM 1; END $tag$;".to_owned(),
            "\nCOMMIT;".to_owned(),
        ]
    );
}
