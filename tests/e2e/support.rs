//! The shared fixture: the real `datadiff` binary, a project directory written by the test,
//! and a source, a PipelineWise-style replica and a backend database on the shared
//! throwaway cluster, each reached through its own role with a known password.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use datadiff_testkit::{Database, quote_ident, shared_cluster};
use serde_json::Value as Json;

/// In every compared column of every row: it must never leave the databases.
pub(crate) const MARKER: &str = "zq-ROWVALUE-4d1e";
/// Every password of every role starts with this: it must never be printed or stored.
pub(crate) const PASSWORD_TAG: &str = "Known-Pw-e2e-77";
/// The check every fixture defines.
pub(crate) const CHECK: &str = "postgres/payments/public/transfers";
/// When fixtures import.
pub(crate) const IMPORT_AT: &str = "2026-07-22T12:00:00Z";
/// A run whose current slot is 13:00, window [12:00, 13:00).
pub(crate) const RUN_AT: &str = "2026-07-22T13:05:00Z";
/// Every upstream check.
pub(crate) const ALL_CHECKS: &str = "[schema_compatibility, row_count, distinct_key_count, null_key_count, \
     duplicate_key_count, min_key, max_key, row_checksum]";

static NEXT: AtomicU64 = AtomicU64::new(1);

/// What the binary did.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Outcome {
    /// stdout parsed as JSON.
    pub(crate) fn json(&self) -> Json {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {}\nstderr: {}", self.stdout, self.stderr))
    }

    /// Asserts the exit code, showing both streams when it differs.
    #[track_caller]
    pub(crate) fn expect(&self, code: i32) -> &Outcome {
        assert_eq!(self.code, code, "exit code\nstdout:\n{}\nstderr:\n{}", self.stdout, self.stderr);
        self
    }

    /// Asserts that stderr contains `text`.
    #[track_caller]
    pub(crate) fn stderr_has(&self, text: &str) -> &Outcome {
        assert!(self.stderr.contains(text), "stderr lacks {text:?}:\n{}", self.stderr);
        self
    }

    /// Asserts that stdout contains `text`.
    #[track_caller]
    pub(crate) fn stdout_has(&self, text: &str) -> &Outcome {
        assert!(self.stdout.contains(text), "stdout lacks {text:?}:\n{}", self.stdout);
        self
    }

    /// Asserts the error contract: one `error:` line naming what to fix, no panic, no
    /// backtrace.
    #[track_caller]
    pub(crate) fn one_error_line(&self) -> &Outcome {
        let errors: Vec<&str> = self.stderr.lines().filter(|line| line.starts_with("error:")).collect();
        assert_eq!(errors.len(), 1, "one error line:\n{}", self.stderr);
        assert!(!self.stderr.contains("panicked") && !self.stderr.contains("backtrace"), "{}", self.stderr);
        self
    }
}

/// Runs the binary with `args` and extra environment variables; libpq's and the log's
/// variables of the test process are removed so that only what a test sets counts.
pub(crate) fn datadiff_with(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_datadiff"));
    command.args(args);
    for name in ["RUST_LOG", "PGPASSWORD", "PGPASSFILE", "PGUSER", "PGHOST", "PGPORT", "PGDATABASE", "PGSSLMODE"] {
        command.env_remove(name);
    }
    command.envs(env.iter().copied());
    let output = command.output().expect("the datadiff binary runs");
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Runs the binary with `args`.
pub(crate) fn datadiff(args: &[&str]) -> Outcome {
    datadiff_with(args, &[])
}

/// A role and its password.
#[derive(Debug, Clone)]
pub(crate) struct Role {
    pub(crate) name: String,
    pub(crate) password: String,
}

/// The project's files, as text a test may change before writing them.
#[derive(Debug, Clone)]
pub(crate) struct Files {
    pub(crate) config: String,
    pub(crate) target: String,
    pub(crate) tap: String,
    pub(crate) datadiff: Option<String>,
    /// Extra files: (name, text).
    pub(crate) extra: Vec<(String, String)>,
}

/// Three databases, three roles and a project directory.
pub(crate) struct Fixture {
    pub(crate) source: Database<'static>,
    pub(crate) replica: Database<'static>,
    pub(crate) backend: Database<'static>,
    pub(crate) reader: Role,
    pub(crate) app: Role,
    pub(crate) ddl: Role,
    pub(crate) dir: tempfile::TempDir,
}

/// 50 rows in the window [12:00, 13:00) of 2026-07-22, a marker in every compared column.
fn rows_sql(table: &str) -> String {
    format!(
        "INSERT INTO {table} (id, updated_at, status, note) \
         SELECT g, timestamptz '2026-07-22 12:00:00+00' + g * interval '1 minute', \
                'paid {MARKER} ' || g, 'note {MARKER} ' || g FROM generate_series(0, 49) g;"
    )
}

impl Fixture {
    /// Fresh databases with equal tables, roles, and the default project written.
    pub(crate) fn new() -> Fixture {
        let cluster = shared_cluster();
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let role =
            |kind: &str| Role { name: format!("e2e_{kind}_{pid}_{n}"), password: format!("{PASSWORD_TAG}-{kind}-{n}") };
        let (reader, app, ddl) = (role("reader"), role("app"), role("ddl"));
        for role in [&reader, &app, &ddl] {
            cluster.create_role(&role.name, &role.password).unwrap();
        }
        let source = cluster.fresh_database().unwrap();
        let replica = cluster.fresh_database().unwrap();
        let backend = cluster.fresh_database().unwrap();
        let reader_ident = quote_ident(&reader.name);
        source
            .client()
            .unwrap()
            .batch_execute(&format!(
                "CREATE TABLE public.transfers (id bigint PRIMARY KEY, updated_at timestamptz, status text, note text);
                 CREATE INDEX transfers_updated_at_idx ON public.transfers (updated_at);
                 {rows}
                 GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader_ident};",
                rows = rows_sql("public.transfers"),
            ))
            .unwrap();
        replica
            .client()
            .unwrap()
            .batch_execute(&format!(
                "CREATE SCHEMA payments;
                 CREATE TABLE payments.transfers (id bigint, updated_at timestamptz, status character varying,
                     note text, _sdc_extracted_at timestamp, _sdc_batched_at timestamp, _sdc_deleted_at character varying);
                 {rows}
                 GRANT USAGE ON SCHEMA payments TO {reader_ident};
                 GRANT SELECT ON ALL TABLES IN SCHEMA payments TO {reader_ident};",
                rows = rows_sql("payments.transfers"),
            ))
            .unwrap();
        backend.make_backend(&ddl.name, &app.name).unwrap();
        let fixture = Fixture { source, replica, backend, reader, app, ddl, dir: tempfile::tempdir().unwrap() };
        fixture.write(&fixture.files());
        fixture
    }

    /// The project directory.
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The project directory as text.
    pub(crate) fn dir_arg(&self) -> String {
        self.path().display().to_string()
    }

    /// The default files: a backend, one target, the tap `payments` with one checked table
    /// (every upstream check, compare columns `status` and `note`, hourly, window [-1h, 0s)).
    pub(crate) fn files(&self) -> Files {
        let cluster = shared_cluster();
        let (host, port) = (cluster.host(), cluster.port());
        let config = format!(
            "backend_db:\n  host: {host}\n  port: {port}\n  user: {}\n  password: \"{}\"\n  dbname: {}\n  \
             ddl_user: {}\n  ddl_password: \"{}\"\n  connect_timeout: 10\n",
            self.app.name,
            self.app.password,
            self.backend.name(),
            self.ddl.name,
            self.ddl.password,
        );
        let target = format!(
            "id: postgres\nname: Warehouse\ntype: target-postgres\ndb_conn:\n  host: {host}\n  port: {port}\n  \
             user: {}\n  password: \"{}\"\n  dbname: {}\n",
            self.reader.name,
            self.reader.password,
            self.replica.name(),
        );
        let tap = format!(
            "id: payments\nname: Payments\ntype: tap-postgres\nowner: e2e\ntarget: postgres\ndb_conn:\n  \
             host: {host}\n  port: {port}\n  user: {}\n  password: \"{}\"\n  dbname: {}\n\
             data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-1h\"\n  window_end: \"0s\"\n\
             schemas:\n  - source_schema: public\n    target_schema: payments\n    tables:\n      \
             - table_name: transfers\n        data_diff:\n          checks: {ALL_CHECKS}\n          \
             key_column: id\n          timestamp_column: updated_at\n          compare_columns: [status, note]\n",
            self.reader.name,
            self.reader.password,
            self.source.name(),
        );
        Files { config, target, tap, datadiff: None, extra: Vec::new() }
    }

    /// Writes `files` into the project directory (removing a `datadiff.yml` they lack).
    pub(crate) fn write(&self, files: &Files) {
        let dir = self.path();
        std::fs::write(dir.join("config.yml"), &files.config).unwrap();
        std::fs::write(dir.join("target_postgres.yml"), &files.target).unwrap();
        std::fs::write(dir.join("tap_payments.yml"), &files.tap).unwrap();
        match &files.datadiff {
            Some(text) => std::fs::write(dir.join("datadiff.yml"), text).unwrap(),
            None => {
                let _ = std::fs::remove_file(dir.join("datadiff.yml"));
            }
        }
        for (name, text) in &files.extra {
            std::fs::write(dir.join(name), text).unwrap();
        }
    }

    /// Runs `datadiff <args> --dir <project>`.
    pub(crate) fn run(&self, args: &[&str]) -> Outcome {
        self.run_with(args, &[])
    }

    /// Runs `datadiff <args> --dir <project>` with extra environment variables.
    pub(crate) fn run_with(&self, args: &[&str], env: &[(&str, &str)]) -> Outcome {
        let dir = self.dir_arg();
        let mut all = args.to_vec();
        all.extend(["--dir", dir.as_str()]);
        datadiff_with(&all, env)
    }

    /// `import_config` at [`IMPORT_AT`], which must succeed.
    pub(crate) fn import(&self) -> Outcome {
        let outcome = self.run(&["import_config", "--at", IMPORT_AT]);
        outcome.expect(0);
        outcome
    }

    /// A superuser session on the backend.
    pub(crate) fn backend_sql(&self) -> postgres::Client {
        self.backend.client().unwrap()
    }

    /// Runs SQL on the replica as the superuser.
    pub(crate) fn replica_sql(&self, sql: &str) {
        self.replica.client().unwrap().batch_execute(sql).unwrap();
    }

    /// `(status, trigger_type, attempt, error)` of every attempt, oldest first.
    pub(crate) fn attempts(&self) -> Vec<(String, String, i32, Option<String>)> {
        self.backend_sql()
            .query(
                "SELECT status, trigger_type, attempt, error FROM public.dd_run_attempts ORDER BY started_at, attempt",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
            .collect()
    }

    /// The run id of the newest attempt.
    pub(crate) fn newest_run_id(&self) -> String {
        self.backend_sql()
            .query_one(
                "SELECT run_id::text FROM public.dd_run_attempts ORDER BY started_at DESC, attempt DESC LIMIT 1",
                &[],
            )
            .unwrap()
            .get(0)
    }

    /// A count read with SQL from the backend.
    pub(crate) fn count(&self, sql: &str) -> i64 {
        self.backend_sql().query_one(sql, &[]).unwrap().get(0)
    }
}

/// A port nothing listens on.
pub(crate) fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A local HTTP server that answers 200 to every request and keeps the bodies.
pub(crate) struct Hook {
    pub(crate) url: String,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl Hook {
    /// Starts it on a free port (its thread ends with the test process).
    pub(crate) fn start() -> Hook {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}/datadiff-hook", listener.local_addr().unwrap().port());
        let bodies = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&bodies);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = Arc::clone(&kept);
                std::thread::spawn(move || serve(stream, &kept));
            }
        });
        Hook { url, bodies }
    }

    /// The bodies received so far.
    pub(crate) fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

/// Serves requests on one connection until the client closes it.
fn serve(stream: TcpStream, kept: &Mutex<Vec<String>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = None;
        let mut chunked = false;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let lower = header.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("content-length:") {
                length = value.trim().parse::<usize>().ok();
            }
            if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
                chunked = true;
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                reader.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; size + 2];
                reader.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                body.extend_from_slice(&chunk[..size]);
            }
        } else if let Some(length) = length {
            body.resize(length, 0);
            reader.read_exact(&mut body).unwrap();
        }
        kept.lock().unwrap().push(String::from_utf8_lossy(&body).into_owned());
        let _ = writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-type: text/plain\r\n\r\nok");
        let _ = writer.flush();
    }
}
