//! A `tap-mysql` tap's `engine` and TLS keys, from its YAML `db_conn` to the session on a
//! real MariaDB server serving TLS to a reader created `REQUIRE SSL` (so a passing attempt
//! was encrypted): `ssl_ca` verifies the server, a wrong CA is a clear
//! ERROR, a client certificate (`ssl_cert`/`ssl_key`) logs in an account created `REQUIRE
//! X509`, and `engine` picks the statement-timeout form the server receives (read back from
//! its general query log).

use std::sync::OnceLock;

use datadiff_config::DbConn;
use datadiff_diff_core::definition::{CheckDefinition, SourceType};
use datadiff_runner::SummaryStatus;
use datadiff_testkit::{MariaDb, MariaDbDatabase, MariaDbOptions, quote_mysql_literal};
use mysql::prelude::Queryable;

use crate::attempt_mysql::{MARIADB_SQL, REPLICA_SQL};
use crate::context::Context;

const READER_PASSWORD: &str = "tls-reader-pw";

/// This file's server: TLS for 127.0.0.1 with a certificate made by a fresh CA, every
/// statement kept in `mysql.general_log`.
fn server() -> &'static MariaDb {
    static SERVER: OnceLock<MariaDb> = OnceLock::new();
    SERVER.get_or_init(|| {
        let server = MariaDb::start_with(MariaDbOptions::new().tls(&["localhost"], &["127.0.0.1"]))
            .unwrap_or_else(|error| panic!("cannot start a TLS MariaDB server: {error}"));
        server
            .connect(None)
            .unwrap()
            .query_drop("SET GLOBAL log_output = 'TABLE'; SET GLOBAL general_log = 1")
            .unwrap();
        server
    })
}

/// A tap-mysql project whose tap `db_conn` is `{host, port, user, password, dbname}` plus
/// `extra` (flow-mapping entries), loaded as the CLI loads it; returns the tap's `db_conn`.
fn tap_conn(database: &MariaDbDatabase<'_>, user: &str, extra: &str) -> DbConn {
    let dir = tempfile::tempdir().unwrap();
    let server = database.server();
    let files = [
        ("config.yml", "backend_db: {host: localhost, user: app, password: app-pw, dbname: datadiff, ddl_user: owner, ddl_password: owner-pw}\n".to_owned()),
        ("target_postgres.yml", "id: postgres\nname: Warehouse\ntype: target-postgres\ndb_conn: {host: replica, dbname: warehouse}\n".to_owned()),
        (
            "tap_payments.yml",
            format!(
                "id: payments\nname: Shop\ntype: tap-mysql\ntarget: postgres\ndb_conn: {{host: '{}', port: {}, user: {user}, password: {READER_PASSWORD}, dbname: {}{extra}}}\nschemas: []\n",
                server.host(),
                server.port(),
                database.name()
            ),
        ),
    ];
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let project =
        datadiff_config::load(dir.path(), None).unwrap_or_else(|error| panic!("{error}: {:#?}", error.problems()));
    project.tap("payments").and_then(|tap| tap.db_conn.clone()).unwrap()
}

/// A fresh database on this file's server with the tap-mysql fixture table and a SELECT-only
/// reader that must use TLS.
struct TlsSource {
    database: MariaDbDatabase<'static>,
    reader: String,
}

impl TlsSource {
    fn new() -> TlsSource {
        let database = server().fresh_database().unwrap();
        database.client().unwrap().query_drop(MARIADB_SQL).unwrap();
        let reader = format!("tls_reader_{}", database.name());
        database.create_user(&reader, READER_PASSWORD, &["SELECT"]).unwrap();
        server()
            .connect(None)
            .unwrap()
            .query_drop(format!("ALTER USER {}@'%' REQUIRE SSL", quote_mysql_literal(&reader)))
            .unwrap();
        TlsSource { database, reader }
    }

    /// Runs the fixture's definition, on a fresh replica and backend whose replica holds the
    /// same rows, with the tap's `db_conn` read from YAML with `extra`: the attempt's status
    /// and error.
    fn run(&self, extra: &str) -> (SummaryStatus, Option<String>) {
        let mut context = Context::new("", REPLICA_SQL);
        let conn = tap_conn(&self.database, &self.reader, extra);
        context.connections = context.connections.clone().with_tap("payments", conn);
        let summary = context.run(&self.definition(&context));
        let attempt = context.attempt_row(summary.run_id.unwrap());
        (summary.status, attempt.error)
    }

    fn definition(&self, context: &Context) -> CheckDefinition {
        let database = self.database.name().to_owned();
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", &database, "Transfers"),
            source_type: SourceType::TapMysql,
            source_database: database.clone(),
            source_schema: database,
            source_table: "Transfers".into(),
            target_schema: "shop".into(),
            target_table: "transfers".into(),
            source_compare_columns: vec!["Amount".into(), "Status".into(), "Active".into(), "Raw".into()],
            target_compare_columns: vec!["amount".into(), "status".into(), "active".into(), "raw".into()],
            ..context.definition()
        }
    }

    /// The statements the server logged for this reader's sessions that set a variable, in
    /// order.
    fn logged_set_statements(&self) -> Vec<String> {
        let sql = format!(
            "SELECT CONVERT(argument USING utf8mb4) FROM mysql.general_log
              WHERE user_host LIKE CONCAT({}, '[%') AND command_type = 'Query'
                AND argument LIKE 'SET SESSION %' ORDER BY event_time, thread_id",
            quote_mysql_literal(&self.reader)
        );
        server().connect(None).unwrap().query(sql).unwrap()
    }
}

fn ca_path() -> String {
    server().ca_certificate().unwrap().display().to_string()
}

#[test]
fn a_tap_with_ssl_ca_verifies_the_server_and_passes() {
    let source = TlsSource::new();
    let (status, error) = source.run(&format!(", ssl_ca: '{}'", ca_path()));
    assert_eq!((status, error), (SummaryStatus::Pass, None));
    // The CA given as PEM text (as upstream accepts it) verifies the same server.
    let pem = std::fs::read_to_string(ca_path()).unwrap().replace('\n', "\\n");
    let (status, error) = source.run(&format!(", ssl: 'true', ssl_ca: \"{pem}\""));
    assert_eq!((status, error), (SummaryStatus::Pass, None));
}

#[test]
fn a_wrong_ca_is_an_error_attempt_naming_the_source() {
    let source = TlsSource::new();
    let dir = tempfile::tempdir().unwrap();
    let wrong = dir.path().join("wrong-ca.pem");
    datadiff_testkit::write_unrelated_ca(&wrong).unwrap();
    let (status, error) = source.run(&format!(", ssl_ca: '{}'", wrong.display()));
    assert_eq!(status, SummaryStatus::Error);
    let error = error.unwrap_or_default();
    let address = format!("{}:{}/{}", server().host(), server().port(), source.database.name());
    assert!(error.starts_with(&format!("cannot connect to the source database {address}: ")), "{error}");
    assert!(error.contains("certificate verify failed"), "{error}");
    assert!(!error.contains(READER_PASSWORD), "{error}");
    // `ssl: true` alone verifies against the system's roots, which do not hold the test CA.
    let (status, error) = source.run(", ssl: true");
    assert_eq!(status, SummaryStatus::Error);
    assert!(error.unwrap_or_default().contains("certificate verify failed"));
}

#[test]
fn a_client_certificate_logs_in_an_account_that_requires_one() {
    let source = TlsSource::new();
    server()
        .connect(None)
        .unwrap()
        .query_drop(format!("ALTER USER {}@'%' REQUIRE X509", quote_mysql_literal(&source.reader)))
        .unwrap();
    let ca = ca_path();
    let (status, error) = source.run(&format!(", ssl_ca: '{ca}'"));
    assert_eq!(status, SummaryStatus::Error);
    assert!(error.unwrap_or_default().contains("Access denied"), "no certificate, no login");

    let dir = tempfile::tempdir().unwrap();
    let files = server().issue_client_certificate(&source.reader, dir.path()).unwrap();
    let (certificate, key) = (files.certificate.display(), files.key.display());
    let (status, error) = source.run(&format!(", ssl_ca: '{ca}', ssl_cert: '{certificate}', ssl_key: '{key}'"));
    assert_eq!((status, error), (SummaryStatus::Pass, None));
    // Both as PEM text, as upstream accepts them too.
    let text = |path: &std::path::Path| std::fs::read_to_string(path).unwrap().replace('\n', "\\n");
    let extra =
        format!(", ssl_ca: '{ca}', ssl_cert: \"{}\", ssl_key: \"{}\"", text(&files.certificate), text(&files.key));
    let (status, error) = source.run(&extra);
    assert_eq!((status, error), (SummaryStatus::Pass, None));
}

#[test]
fn the_engine_setting_decides_the_statement_timeout_the_server_receives() {
    let source = TlsSource::new();
    // The fixture's statement timeout is 60 s: seconds on MariaDB, milliseconds on MySQL.
    let (status, error) = source.run(&format!(", ssl_ca: '{}', engine: mariadb", ca_path()));
    assert_eq!((status, error), (SummaryStatus::Pass, None));
    let logged = source.logged_set_statements();
    assert!(logged.iter().any(|sql| sql == "SET SESSION max_statement_time = 60"), "{logged:#?}");
    assert!(!logged.iter().any(|sql| sql.contains("max_execution_time")), "{logged:#?}");

    // `engine: mysql` overrides the server's version string: MariaDB has no
    // max_execution_time, so the session cannot start and the attempt says why.
    let (status, error) = source.run(&format!(", ssl_ca: '{}', engine: mysql", ca_path()));
    assert_eq!(status, SummaryStatus::Error);
    let error = error.unwrap_or_default();
    assert!(error.contains("max_execution_time"), "{error}");
    let logged = source.logged_set_statements();
    assert!(logged.iter().any(|sql| sql == "SET SESSION max_execution_time = 60000"), "{logged:#?}");
}
