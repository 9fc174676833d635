//! A replica a real dlt pipeline built: dlt 1.31's `sql_database` source reads a source
//! cluster whose tables and columns are CamelCase, as an application names them, and its
//! `postgres` destination loads them into a second cluster's `dlt_app` dataset with dlt's own
//! naming (`customer_orders`, `order_id`) and columns (`_dlt_load_id`, `_dlt_id`). dlt is
//! installed from PyPI into a virtual environment under the target directory, made once and
//! reused; when PyPI (or python3 with venv) is not available the tests print one line saying
//! so and return.
//!
//! dlt maps the types as it does for any `postgres` destination: `text` and `uuid` become
//! `character varying` (a uuid key is compared with the replica's text as the comparison
//! table says), `integer` becomes `bigint`, `numeric(12,2)`, `timestamptz` and `boolean` keep
//! theirs. Its tables have no key constraint (only `_dlt_id` is unique). The audit test
//! asserts that layout first. The audit compares every source column, the scheduled checks
//! every column but the key and the timestamp; dlt's own columns are not the source's and are
//! never compared.
//!
//! Equal tables PASS in `datadiff audit` (`--replica-table` and `--column-map`) and in a
//! scheduled `row_diff` (`replica_table` and `column_map` in `datadiff.yml`), under both
//! strategies; a lost delete (deleted on the source after the load), a changed value and a
//! missing row (changed and deleted on the replica) are named by every key column, the same
//! under both strategies. The operator guide's dlt example is the entry these tests write.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use datadiff_testkit::{Cluster, Database, SUPERUSER, quote_ident};
use serde_json::{Value as Json, json};

use crate::support::{IMPORT_AT, Outcome, PASSWORD_TAG, RUN_AT, datadiff, datadiff_with};

/// What the virtual environment installs from PyPI: dlt 1.x with its `postgres` destination
/// and `sql_database` source, pinned with the drivers they load (SQLAlchemy 2.1 reads the
/// source through psycopg2, named in the source URL).
const REQUIREMENTS: [&str; 3] = ["dlt[postgres,sql-database]==1.31.0", "sqlalchemy==2.1.9", "psycopg2-binary==2.9.13"];

/// The virtual environment, under the target directory (kept between runs).
const VENV: &str = concat!(env!("CARGO_TARGET_TMPDIR"), "/dlt-venv");

/// Written into the environment once the requirements are installed: their list.
const STAMP: &str = "datadiff-requirements.txt";

/// What pip prints when it could not reach the index (as opposed to a package that failed).
const UNREACHABLE: [&str; 9] = [
    "NewConnectionError",
    "connection broken",
    "Could not fetch URL",
    "ProxyError",
    "ConnectTimeoutError",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "Max retries exceeded",
];

/// Serialises the threads of this test process around the environment (the lock file does
/// it between processes) and keeps the answer, so that a second test neither installs nor
/// retries an unreachable PyPI.
static INSTALL: Mutex<Option<Result<PathBuf, String>>> = Mutex::new(None);

/// The Python interpreter holding dlt, or `None` when it cannot be installed here, after the
/// one line saying why (printed past the test harness's capture, straight to the process's
/// stderr, so that `cargo test` shows it).
fn dlt_python_or_skip(test: &str) -> Option<PathBuf> {
    let mut answer = INSTALL.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match answer.get_or_insert_with(install_dlt) {
        Ok(python) => Some(python.clone()),
        Err(why) => {
            let _ = writeln!(std::io::stderr(), "dlt::{test}: skipped: dlt is not available: {why}");
            None
        }
    }
}

/// The Python interpreter of a virtual environment holding [`REQUIREMENTS`], or why there
/// is none here: python3 or its venv module is missing, or PyPI is unreachable. Any other
/// failure of pip fails the test.
fn install_dlt() -> Result<PathBuf, String> {
    let venv = Path::new(VENV);
    let _lock = LockFile::acquire(&venv.with_extension("lock"));
    let python = venv.join("bin/python");
    let wanted = REQUIREMENTS.join("\n");
    if python.exists() && std::fs::read_to_string(venv.join(STAMP)).is_ok_and(|stamp| stamp == wanted) {
        return Ok(python);
    }
    if venv.exists() {
        std::fs::remove_dir_all(venv).unwrap();
    }
    let made = match Command::new("python3").args(["-m", "venv"]).arg(venv).output() {
        Ok(made) => made,
        Err(error) => return Err(format!("python3 cannot be started ({error})")),
    };
    if !made.status.success() {
        return Err(format!("python3 -m venv failed (Debian: apt-get install python3-venv): {}", last_line(&made)));
    }
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--no-input", "--disable-pip-version-check", "--retries", "1", "--timeout", "30"])
        .args(REQUIREMENTS)
        .output()
        .unwrap();
    if !installed.status.success() {
        let text =
            format!("{}{}", String::from_utf8_lossy(&installed.stdout), String::from_utf8_lossy(&installed.stderr));
        if let Some(marker) = UNREACHABLE.iter().find(|marker| text.contains(**marker)) {
            return Err(format!("PyPI is unreachable (pip: {marker}; {})", last_line(&installed)));
        }
        panic!("pip install {} failed:\n{text}", REQUIREMENTS.join(" "));
    }
    std::fs::write(venv.join(STAMP), wanted).unwrap();
    Ok(python)
}

/// The last non-empty line a command printed (stderr first).
fn last_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = |text: &str| text.lines().rfind(|line| !line.trim().is_empty()).map(|line| line.trim().to_owned());
    last(&stderr).or_else(|| last(&stdout)).unwrap_or_else(|| "no output".to_owned())
}

/// A lock file holding its owner's process id, removed on drop; a file whose process is gone
/// (or still empty 30 seconds after it was made) is stale and taken over.
struct LockFile {
    path: PathBuf,
}

impl LockFile {
    fn acquire(path: &Path) -> LockFile {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let started = Instant::now();
        loop {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(path) {
                Ok(mut file) => {
                    write!(file, "{}", std::process::id()).unwrap();
                    return LockFile { path: path.to_owned() };
                }
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(path).unwrap_or_default();
                    let alive =
                        owner.trim().parse::<u32>().is_ok_and(|pid| Path::new(&format!("/proc/{pid}")).exists());
                    // An empty file is one being written: wait for its owner, a while.
                    let age =
                        std::fs::metadata(path).and_then(|meta| meta.modified()).ok().and_then(|at| at.elapsed().ok());
                    let stale =
                        if owner.is_empty() { age.is_some_and(|age| age > Duration::from_secs(30)) } else { !alive };
                    if stale {
                        let _ = std::fs::remove_file(path);
                        continue;
                    }
                    assert!(started.elapsed() < Duration::from_secs(900), "{} held for 15 minutes", path.display());
                    std::thread::sleep(Duration::from_millis(250));
                }
                Err(error) => panic!("creating {}: {error}", path.display()),
            }
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The pipeline the tests run: `sql_database` over the source's tables named in argv[1],
/// into the `postgres` destination's `dlt_app` dataset. Credentials come from the
/// environment, never the command line.
const PIPELINE: &str = r#"import os, sys

import dlt
from dlt.sources.sql_database import sql_database

source = sql_database(credentials=os.environ["DD_SOURCE_URL"], schema="public", table_names=sys.argv[1].split(","))
pipeline = dlt.pipeline(
    pipeline_name="datadiff_e2e",
    destination=dlt.destinations.postgres(credentials=os.environ["DD_REPLICA_URL"]),
    dataset_name="dlt_app",
    pipelines_dir=os.environ["DD_PIPELINES_DIR"],
)
info = pipeline.run(source)
info.raise_on_failed_jobs()
print(info)
"#;

/// A table of the source: its DDL and rows (all in the 13:00 slot's window [12:00, 13:00)),
/// dlt's names for it, and what plants the three differences, with the keys they touch.
struct Table {
    /// The source table (schema `public`).
    name: &'static str,
    /// dlt's name for it (dataset `dlt_app`).
    replica: &'static str,
    /// Its key columns on the source, in key order.
    key: &'static [&'static str],
    /// Source column → dlt's column, for every column lower-casing does not name.
    column_map: &'static [(&'static str, &'static str)],
    /// The timestamp column and the compared columns of the scheduled check (none: audit only).
    scheduled: Option<(&'static str, &'static [&'static str])>,
    sql: &'static str,
    /// Deletes a row on the source after the load: a delete the replica never heard of.
    lost_delete: &'static str,
    /// Changes a value on the replica.
    change: &'static str,
    /// Deletes a row on the replica.
    lose: &'static str,
    /// The keys of the lost delete, the changed row and the missing row, as the audit reports
    /// them, and the changed column.
    keys: [Json; 3],
    changed_column: &'static str,
}

impl Table {
    /// `datadiff audit`'s naming arguments: the replica table and the column map.
    fn audit_naming(&self) -> Vec<String> {
        let mut args = vec!["--replica-table".to_owned(), format!("dlt_app.{}", self.replica)];
        for (source, replica) in self.column_map {
            args.extend(["--column-map".to_owned(), format!("{source}={replica}")]);
        }
        args
    }

    /// The scheduled check's name.
    fn check(&self) -> String {
        format!("warehouse/shop/public/{}", self.name)
    }

    /// Its `datadiff.yml` entry under `checks`: dlt's table and the column map.
    fn check_entry(&self) -> String {
        let map: Vec<String> = self.column_map.iter().map(|(source, replica)| format!("{source}: {replica}")).collect();
        // A composite key is named in full for row_diff; upstream's key_column stays its
        // first part, for upstream's own checks.
        let key_columns = match self.key {
            [_] => String::new(),
            parts => format!("    key_columns: [{}]\n", parts.join(", ")),
        };
        format!(
            "  {}:\n    replica_table: dlt_app.{}\n    column_map: {{{}}}\n{key_columns}    row_diff: {{max_examples: 10}}\n",
            self.check(),
            self.replica,
            map.join(", ")
        )
    }
}

/// The source's tables.
fn tables() -> [Table; 4] {
    [
        Table {
            name: "CustomerOrders",
            replica: "customer_orders",
            key: &["OrderId"],
            column_map: &[("OrderId", "order_id"), ("CustomerName", "customer_name"), ("UpdatedAt", "updated_at")],
            scheduled: Some(("UpdatedAt", &["CustomerName", "Amount"])),
            sql: "CREATE TABLE public.\"CustomerOrders\" (\"OrderId\" bigint PRIMARY KEY, \"CustomerName\" text, \
              \"Amount\" numeric(12,2), \"UpdatedAt\" timestamptz NOT NULL); \
              CREATE INDEX ON public.\"CustomerOrders\" (\"UpdatedAt\"); \
              INSERT INTO public.\"CustomerOrders\" SELECT g, 'Customer ' || g, g * 1.25, \
              timestamptz '2026-07-22 12:00:00+00' + g * interval '1 minute' FROM generate_series(0, 49) g",
            lost_delete: "DELETE FROM public.\"CustomerOrders\" WHERE \"OrderId\" = 3",
            change: "UPDATE dlt_app.customer_orders SET amount = amount + 0.01 WHERE order_id = 7",
            lose: "DELETE FROM dlt_app.customer_orders WHERE order_id = 11",
            keys: [json!({"id": 3}), json!({"id": 7}), json!({"id": 11})],
            changed_column: "Amount",
        },
        Table {
            name: "Customers",
            replica: "customers",
            key: &["CustomerCode"],
            column_map: &[
                ("CustomerCode", "customer_code"),
                ("DisplayName", "display_name"),
                ("CreditLimit", "credit_limit"),
                ("SignedUpAt", "signed_up_at"),
            ],
            scheduled: Some(("SignedUpAt", &["DisplayName", "CreditLimit"])),
            sql: "CREATE TABLE public.\"Customers\" (\"CustomerCode\" text PRIMARY KEY, \"DisplayName\" text, \
              \"CreditLimit\" numeric(12,2), \"SignedUpAt\" timestamptz NOT NULL); \
              CREATE INDEX ON public.\"Customers\" (\"SignedUpAt\"); \
              INSERT INTO public.\"Customers\" SELECT (ARRAY['A', 'b', 'Z', 'é', '_'])[g % 5 + 1] || '-' || \
              lpad(g::text, 4, '0'), 'Name ' || g, g * 10.5, \
              timestamptz '2026-07-22 12:00:00+00' + g * interval '1 minute' FROM generate_series(0, 49) g",
            lost_delete: "DELETE FROM public.\"Customers\" WHERE \"CustomerCode\" = 'é-0003'",
            change: "UPDATE dlt_app.customers SET display_name = 'Renamed' WHERE customer_code = 'Z-0007'",
            lose: "DELETE FROM dlt_app.customers WHERE customer_code = 'b-0011'",
            keys: [json!({"id": "é-0003"}), json!({"id": "Z-0007"}), json!({"id": "b-0011"})],
            changed_column: "DisplayName",
        },
        Table {
            name: "Devices",
            replica: "devices",
            key: &["DeviceId"],
            column_map: &[("DeviceId", "device_id"), ("SeenAt", "seen_at")],
            scheduled: Some(("SeenAt", &["Label", "Active"])),
            sql: "CREATE TABLE public.\"Devices\" (\"DeviceId\" uuid PRIMARY KEY, \"Label\" text, \"Active\" boolean, \
              \"SeenAt\" timestamptz NOT NULL); \
              CREATE INDEX ON public.\"Devices\" (\"SeenAt\"); \
              INSERT INTO public.\"Devices\" SELECT md5('device' || g)::uuid, 'Device ' || g, g % 2 = 0, \
              timestamptz '2026-07-22 12:00:00+00' + g * interval '1 minute' FROM generate_series(0, 49) g",
            lost_delete: "DELETE FROM public.\"Devices\" WHERE \"DeviceId\" = md5('device3')::uuid",
            // dlt stores a uuid as its lowercase hyphenated text.
            change: "UPDATE dlt_app.devices SET active = NOT active WHERE device_id = md5('device7')::uuid::text",
            lose: "DELETE FROM dlt_app.devices WHERE device_id = md5('device11')::uuid::text",
            keys: [
                json!({"id": "2798e7d9-b144-8628-ba5c-b6b12ac04991"}),
                json!({"id": "58b8d6af-e149-594f-9309-83bafa38d5cd"}),
                json!({"id": "0b4fb837-283f-888d-fd20-397d896ba8ce"}),
            ],
            changed_column: "Active",
        },
        Table {
            name: "OrderLines",
            replica: "order_lines",
            key: &["OrderId", "LineNo"],
            column_map: &[("OrderId", "order_id"), ("LineNo", "line_no"), ("PlacedAt", "placed_at")],
            scheduled: Some(("PlacedAt", &["Sku", "Quantity"])),
            sql: "CREATE TABLE public.\"OrderLines\" (\"OrderId\" bigint, \"LineNo\" integer, \"Sku\" text, \
              \"Quantity\" integer, \"PlacedAt\" timestamptz NOT NULL, PRIMARY KEY (\"OrderId\", \"LineNo\")); \
              INSERT INTO public.\"OrderLines\" SELECT o, l, 'SKU-' || o || '-' || l, o + l, \
              timestamptz '2026-07-22 12:00:00+00' + (o * 3 + l) * interval '1 minute' \
              FROM generate_series(0, 19) o, generate_series(1, 3) l",
            lost_delete: "DELETE FROM public.\"OrderLines\" WHERE \"OrderId\" = 3 AND \"LineNo\" = 2",
            change: "UPDATE dlt_app.order_lines SET sku = 'SKU-other' WHERE order_id = 7 AND line_no = 1",
            lose: "DELETE FROM dlt_app.order_lines WHERE order_id = 11 AND line_no = 3",
            keys: [
                json!({"key": {"OrderId": 3, "LineNo": 2}}),
                json!({"key": {"OrderId": 7, "LineNo": 1}}),
                json!({"key": {"OrderId": 11, "LineNo": 3}}),
            ],
            changed_column: "Sku",
        },
    ]
}

/// The role datadiff reads both sides with, and the backend's roles.
const READER: &str = "dlt_reader";

/// The source on one cluster; the dlt-loaded replica and the backend on another; the
/// project directory.
struct World<'c> {
    source: Database<'c>,
    replica: Database<'c>,
    backend: Database<'c>,
    password: String,
    dir: tempfile::TempDir,
}

impl<'c> World<'c> {
    /// The source tables, loaded into the replica by dlt (run by `python`), and the project.
    fn loaded(python: &Path, source_cluster: &'c Cluster, replica_cluster: &'c Cluster) -> World<'c> {
        let password = format!("{PASSWORD_TAG}-dlt");
        for cluster in [source_cluster, replica_cluster] {
            for role in [READER, "dlt_app_role", "dlt_ddl_role"] {
                cluster.create_role(role, &password).unwrap();
            }
        }
        let source = source_cluster.fresh_database().unwrap();
        let replica = replica_cluster.fresh_database().unwrap();
        let backend = replica_cluster.fresh_database().unwrap();
        backend.make_backend("dlt_ddl_role", "dlt_app_role").unwrap();
        let mut client = source.client().unwrap();
        for table in &tables() {
            client.batch_execute(table.sql).unwrap();
        }
        client
            .batch_execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}", quote_ident(READER)))
            .unwrap();
        let world = World { source, replica, backend, password, dir: tempfile::tempdir().unwrap() };
        world.load(python);
        world.replica_sql(&format!(
            "GRANT USAGE ON SCHEMA dlt_app TO {reader}; GRANT SELECT ON ALL TABLES IN SCHEMA dlt_app TO {reader}",
            reader = quote_ident(READER)
        ));
        world.write_project();
        world
    }

    /// Runs the dlt pipeline (as the superuser of both clusters) in a directory of its own.
    fn load(&self, python: &Path) {
        let work = self.dir.path().join("dlt");
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(work.join("pipeline.py"), PIPELINE).unwrap();
        let superuser = |database: &Database<'_>| database.url(SUPERUSER, database.cluster().superuser_password());
        let source_url = superuser(&self.source).replacen("postgresql://", "postgresql+psycopg2://", 1);
        let tables: Vec<&str> = tables().iter().map(|table| table.name).collect();
        let output = Command::new(python)
            .arg("pipeline.py")
            .arg(tables.join(","))
            .current_dir(&work)
            .env("DD_SOURCE_URL", source_url)
            .env("DD_REPLICA_URL", superuser(&self.replica))
            .env("DD_PIPELINES_DIR", work.join("pipelines"))
            .env("DLT_DATA_DIR", work.join("data"))
            .env("RUNTIME__DLTHUB_TELEMETRY", "false")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "the dlt pipeline failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }

    fn replica_sql(&self, sql: &str) {
        self.replica.client().unwrap().batch_execute(sql).unwrap();
    }

    /// The tap `shop` (target `warehouse`, schema `dlt_app`) checks each table with
    /// `row_count` and, through `datadiff.yml`, `row_diff` against dlt's names; the line-item
    /// table's `row_diff` on its composite key (`key_columns`), upstream's `key_column` its
    /// first part.
    fn write_project(&self) {
        let (source, replica) = (self.source.cluster(), self.replica.cluster());
        let password = &self.password;
        let config = format!(
            "backend_db:\n  host: {}\n  port: {}\n  user: dlt_app_role\n  password: \"{password}\"\n  dbname: {}\n  \
             ddl_user: dlt_ddl_role\n  ddl_password: \"{password}\"\n",
            replica.host(),
            replica.port(),
            self.backend.name()
        );
        let target = format!(
            "id: warehouse\nname: Warehouse\ntype: target-postgres\ndb_conn:\n  host: {}\n  port: {}\n  \
             user: {READER}\n  password: \"{password}\"\n  dbname: {}\n",
            replica.host(),
            replica.port(),
            self.replica.name()
        );
        let mut entries = String::new();
        let mut checks = String::new();
        for table in &tables() {
            let Some((timestamp, compared)) = table.scheduled else { continue };
            entries.push_str(&format!(
                "      - table_name: {}\n        data_diff:\n          checks: [row_count]\n          \
                 key_column: {}\n          timestamp_column: {timestamp}\n          compare_columns: [{}]\n",
                table.name,
                table.key[0],
                compared.join(", ")
            ));
            checks.push_str(&table.check_entry());
        }
        let tap = format!(
            "id: shop\nname: Shop\ntype: tap-postgres\nowner: e2e\ntarget: warehouse\ndb_conn:\n  host: {}\n  \
             port: {}\n  user: {READER}\n  password: \"{password}\"\n  dbname: {}\n\
             data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-1h\"\n  window_end: \"0s\"\n\
             schemas:\n  - source_schema: public\n    target_schema: dlt_app\n    tables:\n{entries}",
            source.host(),
            source.port(),
            self.source.name()
        );
        let dir = self.dir.path();
        std::fs::write(dir.join("config.yml"), config).unwrap();
        std::fs::write(dir.join("target_warehouse.yml"), target).unwrap();
        std::fs::write(dir.join("tap_shop.yml"), tap).unwrap();
        std::fs::write(dir.join("datadiff.yml"), format!("checks:\n{checks}")).unwrap();
    }

    /// Plants the three differences of every table.
    fn plant(&self) {
        let mut source = self.source.client().unwrap();
        let mut replica = self.replica.client().unwrap();
        for table in &tables() {
            source.batch_execute(table.lost_delete).unwrap();
            replica.batch_execute(table.change).unwrap();
            replica.batch_execute(table.lose).unwrap();
        }
    }

    /// `datadiff <args> --dir <project>`.
    fn run(&self, args: &[&str]) -> Outcome {
        let dir = self.dir.path().display().to_string();
        let mut all = args.to_vec();
        all.extend(["--dir", dir.as_str()]);
        datadiff_with(&all, &[])
    }

    /// `datadiff audit` of `table` as the reader, with `strategy`: its exit code and report.
    fn audit(&self, table: &Table, strategy: &str) -> (i32, Json) {
        let source_table = format!("public.{}", table.name);
        let key = table.key.join(",");
        let mut args = vec![
            "audit".to_owned(),
            "--source".to_owned(),
            self.source.url(READER, &self.password),
            "--replica".to_owned(),
            self.replica.url(READER, &self.password),
            "--table".to_owned(),
            source_table,
            "--key".to_owned(),
            key,
            "--cutover-ready".to_owned(),
            "--strategy".to_owned(),
            strategy.to_owned(),
        ];
        args.extend(table.audit_naming());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let outcome = datadiff(&args);
        assert!(outcome.code == 0 || outcome.code == 1, "{} {strategy}: {outcome:?}", table.name);
        (outcome.code, outcome.json())
    }

    /// `(full_check_name, status)` of the newest attempt's row_diff result of each check.
    fn row_diff_statuses(&self) -> Vec<(String, String)> {
        self.backend
            .client()
            .unwrap()
            .query(
                "SELECT DISTINCT ON (d.full_check_name) d.full_check_name, r.status \
                   FROM public.dd_run_attempts a JOIN public.dd_run_results r ON r.run_id = a.run_id \
                   JOIN public.dd_check_definitions d ON d.check_id = a.check_id \
                  WHERE r.check_type = 'row_diff' ORDER BY d.full_check_name, a.started_at DESC, a.attempt DESC",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }

    /// The newest attempt's row_diff evidence of `table`: `(kind, key, fields)`, sorted by kind.
    fn evidence(&self, table: &Table) -> Vec<(String, Json, Vec<String>)> {
        let mut backend = self.backend.client().unwrap();
        let run_id: String = backend
            .query_one(
                "SELECT a.run_id::text FROM public.dd_run_attempts a \
                   JOIN public.dd_check_definitions d ON d.check_id = a.check_id WHERE d.full_check_name = $1 \
                  ORDER BY a.started_at DESC, a.attempt DESC LIMIT 1",
                &[&table.check()],
            )
            .unwrap()
            .get(0);
        backend
            .query(
                "SELECT kind, key::text, fields FROM public.datadiff_run_differences \
                  WHERE run_id = $1::text::uuid AND check_type = 'row_diff' ORDER BY kind",
                &[&run_id],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), serde_json::from_str(row.get(1)).unwrap(), row.get(2)))
            .collect()
    }
}

/// An audit report without what two runs of it may differ in: its times and its strategy.
fn answer(report: &Json) -> Json {
    let mut answer = report.clone();
    for field in ["started_at", "finished_at", "duration_seconds", "strategy", "strategy_reason"] {
        answer.as_object_mut().unwrap().remove(field);
    }
    answer
}

/// `{kind, <key>, fields?}` as the audit reports an example.
fn example(kind: &str, key: &Json, fields: Option<&str>) -> Json {
    let mut example = key.clone();
    example["kind"] = json!(kind);
    if let Some(field) = fields {
        example["fields"] = json!([field]);
    }
    example
}

#[test]
fn audit_of_a_dlt_loaded_replica_passes_and_names_planted_differences_by_every_key_column() {
    let Some(python) =
        dlt_python_or_skip("audit_of_a_dlt_loaded_replica_passes_and_names_planted_differences_by_every_key_column")
    else {
        return;
    };
    let (source_cluster, replica_cluster) = (Cluster::start().unwrap(), Cluster::start().unwrap());
    let world = World::loaded(&python, &source_cluster, &replica_cluster);

    // dlt's layout: snake_case names, its own two columns, its types, no key constraint.
    let layout: Vec<String> = world
        .replica
        .client()
        .unwrap()
        .query(
            "SELECT c.table_name || '.' || c.column_name || ' ' || c.data_type FROM information_schema.columns c \
              WHERE c.table_schema = 'dlt_app' AND c.table_name NOT LIKE '\\_dlt%' \
              ORDER BY c.table_name, c.ordinal_position",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    let dlt = ["_dlt_load_id character varying", "_dlt_id character varying"];
    let expected: Vec<String> = [
        ("customer_orders", &["order_id bigint", "customer_name character varying", "amount numeric"][..]),
        ("customer_orders", &["updated_at timestamp with time zone"]),
        ("customer_orders", &dlt),
        ("customers", &["customer_code character varying", "display_name character varying"]),
        ("customers", &["credit_limit numeric", "signed_up_at timestamp with time zone"]),
        ("customers", &dlt),
        ("devices", &["device_id character varying", "label character varying", "active boolean"]),
        ("devices", &["seen_at timestamp with time zone"]),
        ("devices", &dlt),
        ("order_lines", &["order_id bigint", "line_no bigint", "sku character varying", "quantity bigint"]),
        ("order_lines", &["placed_at timestamp with time zone"]),
        ("order_lines", &dlt),
    ]
    .iter()
    .flat_map(|(table, columns)| columns.iter().map(move |column| format!("{table}.{column}")))
    .collect();
    assert_eq!(layout, expected);
    let keys = world
        .replica
        .client()
        .unwrap()
        .query_one(
            "SELECT count(*) FROM pg_constraint WHERE contype = 'p' AND connamespace = 'dlt_app'::regnamespace",
            &[],
        )
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(keys, 0, "dlt creates no primary key");

    for table in &tables() {
        let mut answers = Vec::new();
        for strategy in ["segments", "stream"] {
            let (code, report) = world.audit(table, strategy);
            assert_eq!((code, report["status"].as_str()), (0, Some("PASS")), "{} {strategy}: {report}", table.name);
            assert_eq!(report["replica"]["table"], format!("dlt_app.{}", table.replica));
            assert_eq!(report["strategy"], strategy);
            answers.push(answer(&report));
        }
        assert_eq!(answers[0], answers[1], "{}: segments and stream agree", table.name);
    }

    world.plant();
    for table in &tables() {
        let [lost_delete, changed, missing] = &table.keys;
        let expected = json!([
            example("EXTRA_IN_REPLICA", lost_delete, None),
            example("CHANGED", changed, Some(table.changed_column)),
            example("MISSING_IN_REPLICA", missing, None),
        ]);
        let mut answers = Vec::new();
        for strategy in ["segments", "stream"] {
            let (code, report) = world.audit(table, strategy);
            assert_eq!((code, report["status"].as_str()), (1, Some("BLOCK")), "{} {strategy}: {report}", table.name);
            let counts = [&report["extra"], &report["changed"], &report["missing"]];
            assert_eq!(counts, [&json!(1), &json!(1), &json!(1)], "{} {strategy}", table.name);
            let mut examples = report["examples"].as_array().unwrap().clone();
            let order = |example: &Json| {
                ["EXTRA_IN_REPLICA", "CHANGED", "MISSING_IN_REPLICA"].iter().position(|kind| example["kind"] == *kind)
            };
            examples.sort_by_key(order);
            assert_eq!(Json::Array(examples), expected, "{} {strategy}", table.name);
            answers.push(answer(&report));
        }
        assert_eq!(answers[0], answers[1], "{}: segments and stream agree", table.name);
    }
}

#[test]
fn scheduled_row_diff_against_a_dlt_loaded_replica_passes_and_names_planted_differences_by_key() {
    let Some(python) = dlt_python_or_skip(
        "scheduled_row_diff_against_a_dlt_loaded_replica_passes_and_names_planted_differences_by_key",
    ) else {
        return;
    };
    let (source_cluster, replica_cluster) = (Cluster::start().unwrap(), Cluster::start().unwrap());
    let world = World::loaded(&python, &source_cluster, &replica_cluster);
    let tables = tables();
    let scheduled: Vec<&Table> = tables.iter().filter(|table| table.scheduled.is_some()).collect();
    world.run(&["migrate"]).expect(0);
    // doctor finds dlt's tables and columns by the naming, and scans for a duplicate key on
    // the replica, where dlt made no unique index.
    let doctor = world.run(&["doctor", "--output-format", "json"]).expect(0).json();
    for table in &scheduled {
        let finding = |check: &str| {
            let found = doctor["findings"]
                .as_array()
                .unwrap()
                .iter()
                .find(|finding| finding["scope"] == table.check().as_str() && finding["check"] == check)
                .unwrap_or_else(|| panic!("no {check} finding for {}: {doctor}", table.name));
            (found["status"].as_str().unwrap().to_owned(), found["detail"].as_str().unwrap().to_owned())
        };
        let (status, detail) = finding("columns");
        assert_eq!(status, "OK", "{}: {detail}", table.name);
        assert!(detail.starts_with(&format!("key {} / {}", table.key[0], table.column_map[0].1)), "{detail}");
        let (status, detail) = finding("target key uniqueness");
        assert_eq!(status, "OK", "{}: {detail}", table.name);
        let scanned = match table.key {
            [_] => format!(") of dlt_app.{} (scanned: no unique index covers exactly the key column)", table.replica),
            _ => format!(") of dlt_app.{} (scanned: no unique index covers the key columns)", table.replica),
        };
        assert!(detail.ends_with(&scanned), "{detail}");
    }
    world.run(&["import_config", "--at", IMPORT_AT]).expect(0);

    let mut all_pass: Vec<(String, String)> =
        scheduled.iter().map(|table| (table.check(), "PASS".to_owned())).collect();
    all_pass.sort();
    for strategy in ["segments", "stream"] {
        world.run(&["run", "--all", "--force", "--strategy", strategy, "--at", RUN_AT]).expect(0);
        assert_eq!(world.row_diff_statuses(), all_pass, "{strategy}");
    }

    world.plant();
    let mut found = Vec::new();
    for strategy in ["segments", "stream"] {
        world.run(&["run", "--all", "--force", "--strategy", strategy, "--at", RUN_AT]).expect(1);
        let mut evidence = Vec::new();
        for table in &scheduled {
            let [lost_delete, changed, missing] = &table.keys;
            // Stored keys are text, every key column by its source name.
            let text = |value: &Json| match value {
                Json::String(text) => Json::String(text.clone()),
                other => Json::String(other.to_string()),
            };
            let key = |audit_key: &Json| match &audit_key["key"] {
                Json::Object(parts) => {
                    Json::Object(parts.iter().map(|(name, value)| (name.clone(), text(value))).collect())
                }
                _ => json!({ table.key[0]: text(&audit_key["id"]) }),
            };
            let stored = world.evidence(table);
            assert_eq!(
                stored,
                [
                    ("CHANGED".to_owned(), key(changed), vec![table.changed_column.to_owned()]),
                    ("EXTRA_IN_TARGET".to_owned(), key(lost_delete), Vec::new()),
                    ("MISSING_IN_TARGET".to_owned(), key(missing), Vec::new()),
                ],
                "{} {strategy}",
                table.name
            );
            evidence.push(stored);
        }
        found.push(evidence);
    }
    assert_eq!(found[0], found[1], "segments and stream store the same evidence");
}

#[test]
fn the_operator_guide_shows_the_naming_these_tests_prove() {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operator-guide.md")).unwrap();
    let orders = &tables()[0];
    let entry = format!("```yaml\nchecks:\n{}```", orders.check_entry());
    assert!(guide.contains(&entry), "the operator guide's dlt example is no longer\n{entry}");
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let audit = orders.audit_naming()[..4].join(" ");
    assert!(words(&guide).contains(&format!("`datadiff audit` takes the same names as `{audit} …`")), "{audit}");
}
