//! The MySQL side on real MariaDB servers: the session PipelineWise sets up (UTC, the
//! MariaDB statement timeout, a read-only transaction), the catalog with upstream's type
//! mapping, `MIN`, the aggregate row's canonical values, the preflight facts from
//! `information_schema.STATISTICS`, and the client deadline on a server that stops answering.

use std::time::Duration;

use chrono::{DateTime, Utc};
use datadiff_access::{AnySide, MySqlSideConfig, MySqlSideSession};
use datadiff_diff_core::mysql::{MySqlEngine, MySqlTls};
use datadiff_diff_core::{Side, attempt::Bounds, definition::CheckType, merge::Value, plan::TypeFamily};
use datadiff_testkit::{MariaDb, MariaDbDatabase, shared_mariadb};
use mysql::prelude::Queryable;

type TestResult = Result<(), Box<dyn std::error::Error>>;

const READER: &str = "dd_reader";
const READER_PASSWORD: &str = "reader-pw";

fn config(server: &MariaDb, database: &MariaDbDatabase<'_>, user: &str, password: &str) -> MySqlSideConfig {
    MySqlSideConfig {
        side: Side::Source,
        host: server.host().to_owned(),
        port: server.port(),
        user: user.to_owned(),
        password: Some(password.to_owned()),
        dbname: database.name().to_owned(),
        tls: MySqlTls::Opportunistic,
        engine: None,
        connect_timeout: Duration::from_secs(10),
    }
}

fn instant(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).map(|at| at.with_timezone(&Utc)).unwrap_or_default()
}

/// A fresh database with `shop.orders` filled, and a reader with SELECT only.
fn source() -> Result<(MariaDbDatabase<'static>, MySqlSideConfig), Box<dyn std::error::Error>> {
    let database = shared_mariadb().fresh_database()?;
    let reader = format!("{READER}_{}", database.name());
    database.create_user(&reader, READER_PASSWORD, &["SELECT"])?;
    database.client()?.query_drop(
        "CREATE TABLE orders (
             id bigint NOT NULL PRIMARY KEY, updated_at datetime(6) NULL, active tinyint(1) NULL,
             amount decimal(12, 2) NULL, note varchar(20) NULL, KEY ix_updated (updated_at)
         );
         INSERT INTO orders VALUES
             (1, '2026-07-01 00:00:00', 1, 12.34, 'a'), (2, '2026-07-01 00:30:00.5', 0, NULL, NULL),
             (3, '2026-07-01 01:15:00', NULL, -0.5, 'c'), (4, NULL, 1, 0, 'no time');",
    )?;
    let config = config(shared_mariadb(), &database, &reader, READER_PASSWORD);
    Ok((database, config))
}

#[test]
fn a_mariadb_session_is_read_only_utc_and_time_limited() -> TestResult {
    let (_database, config) = source()?;
    let mut session = MySqlSideSession::open(&config, Duration::from_secs(7))?;
    assert_eq!(session.engine(), MySqlEngine::MariaDb, "detected from {}", session.server_version());
    // The session's settings, read back through the aggregate path (two bound parameters).
    let bounds = Bounds { start: Some(instant("2026-07-01T00:00:00Z")), end: instant("2026-07-02T00:00:00Z") };
    let (values, _) = session.aggregate(
        "SELECT @@session.time_zone, @@session.max_statement_time, CAST(? AS DATETIME) FROM DUAL WHERE ? IS NOT NULL",
        Bounds { start: bounds.start, end: bounds.end },
        &[CheckType::RowCount, CheckType::RowCount, CheckType::RowCount],
    )?;
    assert_eq!(values[0], Value::text("+00:00"));
    assert_eq!(values[1].canonical_text().as_deref(), Some("7"), "max_statement_time in seconds: {:?}", values[1]);
    assert_eq!(values[2].canonical_text().as_deref(), Some("2026-07-01T00:00:00Z"), "bounds bound as naive UTC");
    // A write inside the transaction is refused by the server (the reader's grants aside: the
    // superuser's session is read-only too).
    session.close();
    let database = shared_mariadb().fresh_database()?;
    database.client()?.query_drop("CREATE TABLE t (id int)")?;
    let superuser = config_for_superuser(&database);
    let mut session = MySqlSideSession::open(&superuser, Duration::from_secs(7))?;
    let error =
        session.aggregate("INSERT INTO t SELECT 1 FROM DUAL WHERE ? < ?", bounds, &[CheckType::RowCount]).unwrap_err();
    assert!(error.contains("READ ONLY"), "{error}");
    assert!(error.starts_with("source aggregate query failed: "), "{error}");
    session.close();
    Ok(())
}

fn config_for_superuser(database: &MariaDbDatabase<'_>) -> MySqlSideConfig {
    let server = shared_mariadb();
    config(server, database, datadiff_testkit::MARIADB_SUPERUSER, server.superuser_password())
}

#[test]
fn the_engine_setting_overrides_the_version_string() -> TestResult {
    let (_database, mut config) = source()?;
    // `mysql` on a MariaDB server: the MySQL timeout variable, which MariaDB does not know
    // — the session fails as upstream's would.
    config.engine = Some(MySqlEngine::MySql);
    let error = MySqlSideSession::open(&config, Duration::from_secs(5)).unwrap_err();
    assert!(error.contains("starting the read-only transaction failed"), "{error}");
    assert!(error.contains("max_execution_time"), "{error}");
    config.engine = Some(MySqlEngine::MariaDb);
    let session = MySqlSideSession::open(&config, Duration::from_secs(5))?;
    assert_eq!(session.engine(), MySqlEngine::MariaDb);
    session.close();
    Ok(())
}

#[test]
fn the_catalog_maps_tinyint_one_to_boolean_and_reads_scales() -> TestResult {
    let (database, config) = source()?;
    let mut session = AnySide::MySql(MySqlSideSession::open(&config, Duration::from_secs(30))?);
    let columns = session.columns(database.name(), "orders")?;
    let family = |name: &str| columns.columns().iter().find(|column| column.name == name).map(|column| column.family());
    assert_eq!(family("active"), Some(TypeFamily::Boolean));
    assert_eq!(family("id"), Some(TypeFamily::ExactNumeric));
    assert_eq!(family("updated_at"), Some(TypeFamily::Timestamp));
    let amount = columns.columns().iter().find(|column| column.name == "amount").ok_or("amount")?;
    assert_eq!((amount.numeric_precision, amount.numeric_scale), (Some(12), Some(2)));
    assert_eq!(amount.udt_name.as_deref(), Some("decimal(12,2)"));
    let updated_at = columns.columns().iter().find(|column| column.name == "updated_at").ok_or("updated_at")?;
    assert!(updated_at.is_naive_timestamp());
    assert_eq!(updated_at.datetime_precision, Some(6));
    assert!(session.columns(database.name(), "missing")?.columns().is_empty());
    session.close();
    Ok(())
}

#[test]
fn minimum_and_aggregate_values_are_canonical() -> TestResult {
    let (database, config) = source()?;
    let mut session = MySqlSideSession::open(&config, Duration::from_secs(30))?;
    let table = format!("`{}`.`orders`", database.name());
    let minimum = session.minimum(
        &format!("SELECT MIN(`updated_at`) FROM {table} WHERE `updated_at` < ?"),
        instant("2026-07-02T00:00:00Z"),
    )?;
    assert_eq!(minimum, Some(instant("2026-07-01T00:00:00Z")));
    let none = session.minimum(
        &format!("SELECT MIN(`updated_at`) FROM {table} WHERE `updated_at` < ?"),
        instant("2020-01-01T00:00:00Z"),
    )?;
    assert_eq!(none, None);
    let bounds = Bounds { start: Some(instant("2026-07-01T00:00:00Z")), end: instant("2026-07-01T01:00:00Z") };
    let (values, _) = session.aggregate(
        &format!(
            "SELECT COUNT(*), MIN(`id`), MAX(`updated_at`), SUM(`amount`), MAX(`note`) FROM {table} \
             WHERE `updated_at` >= ? AND `updated_at` < ?"
        ),
        bounds,
        &[CheckType::RowCount, CheckType::MinKey, CheckType::MaxKey, CheckType::RowChecksum, CheckType::MaxKey],
    )?;
    let texts: Vec<Option<String>> = values.iter().map(Value::canonical_text).collect();
    assert_eq!(
        texts,
        [
            Some("2".to_owned()),
            Some("1".to_owned()),
            Some("2026-07-01T00:30:00.500000Z".to_owned()),
            Some("12.34".to_owned()),
            Some("a".to_owned())
        ]
    );
    assert_eq!(values[0], Value::Int(2));
    session.close();
    Ok(())
}

#[test]
fn preflight_facts_come_from_statistics_with_ignored_indexes_unusable() -> TestResult {
    let (database, config) = source()?;
    database
        .client()?
        .query_drop("CREATE INDEX ix_ignored ON orders (note) IGNORED; CREATE INDEX ix_prefix ON orders (note(3));")?;
    let mut session = MySqlSideSession::open(&config, Duration::from_secs(30))?;
    let indexes = session.indexes(database.name(), "orders")?;
    let summary: Vec<(&str, bool)> = indexes.iter().map(|index| (index.index_name.as_str(), index.is_usable)).collect();
    // In index-name order (information_schema compares names case-insensitively).
    assert_eq!(summary, [("ix_ignored", false), ("ix_prefix", false), ("ix_updated", true), ("PRIMARY", true)]);
    assert!(indexes[2].leads_with("UPDATED_AT"));
    // Probed once: a second table on the same session reads the remembered column.
    assert!(session.indexes(database.name(), "missing")?.is_empty());
    assert_eq!(session.bounded_count(database.name(), "orders", 100_000)?, Some(4), "NULL timestamps count");
    assert_eq!(session.bounded_count(database.name(), "orders", 2)?, Some(2));
    let error = session.bounded_count(database.name(), "missing", 10).unwrap_err();
    assert!(error.starts_with("bounded source row count failed: "), "{error}");
    session.close();
    Ok(())
}

#[test]
fn a_frozen_server_ends_the_statement_at_its_deadline() -> TestResult {
    let server = MariaDb::start()?;
    let database = server.fresh_database()?;
    database.client()?.query_drop("CREATE TABLE t (id int)")?;
    let config = config(&server, &database, datadiff_testkit::MARIADB_SUPERUSER, server.superuser_password());
    let mut session = MySqlSideSession::open(&config, Duration::from_secs(1))?;
    let pid = server.server_pid().ok_or("no server pid")?;
    let signal = |name: &str| std::process::Command::new("kill").args([name, &pid.to_string()]).status();
    signal("-STOP")?;
    let bounds = Bounds { start: Some(instant("2026-07-01T00:00:00Z")), end: instant("2026-07-02T00:00:00Z") };
    let answered = session.aggregate("SELECT COUNT(*) FROM t WHERE ? < ?", bounds, &[CheckType::RowCount]);
    signal("-CONT")?;
    let error = answered.unwrap_err();
    assert!(error.contains("no answer from the source database within 6 s"), "{error}");
    let again = session.aggregate("SELECT COUNT(*) FROM t WHERE ? < ?", bounds, &[CheckType::RowCount]).unwrap_err();
    assert!(again.contains("abandoned"), "{again}");
    session.close();
    Ok(())
}

/// The session's TLS cipher, read through the aggregate path; empty without TLS.
fn cipher(session: &mut MySqlSideSession) -> Result<String, Box<dyn std::error::Error>> {
    let bounds = Bounds { start: Some(instant("2026-07-01T00:00:00Z")), end: instant("2026-07-02T00:00:00Z") };
    let (values, _) = session.aggregate(
        "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher' AND ? < ?",
        bounds,
        &[CheckType::RowCount],
    )?;
    Ok(values[0].canonical_text().unwrap_or_default())
}

#[test]
fn tls_is_offered_without_verification_and_verified_when_asked() -> TestResult {
    let server = MariaDb::start_with(datadiff_testkit::MariaDbOptions::new().require_tls())?;
    let database = server.fresh_database()?;
    let mut config = config(&server, &database, datadiff_testkit::MARIADB_SUPERUSER, server.superuser_password());
    // Opportunistic: a server that refuses plain TCP is reached encrypted (without it the
    // login would fail as "Access denied").
    let mut session = MySqlSideSession::open(&config, Duration::from_secs(10))?;
    assert!(!cipher(&mut session)?.is_empty(), "TLS in use");
    session.close();
    // Verified against the server's CA: encrypted.
    let ca = server.ca_certificate().ok_or("no CA")?.display().to_string();
    config.tls = MySqlTls::Verified { ca: Some(ca), client_certificate: None };
    let mut session = MySqlSideSession::open(&config, Duration::from_secs(10))?;
    assert!(!cipher(&mut session)?.is_empty(), "TLS in use");
    session.close();
    // Verified against the system's roots (`ssl: true`): the throwaway CA is not among them.
    config.tls = MySqlTls::Verified { ca: None, client_certificate: None };
    let error = MySqlSideSession::open(&config, Duration::from_secs(10)).unwrap_err();
    assert!(error.starts_with("cannot connect to the source database 127.0.0.1:"), "{error}");
    // Without TLS at all on a plain server: a plain connection (the shared server has none).
    let (_plain, plain_config) = source()?;
    let mut session = MySqlSideSession::open(&plain_config, Duration::from_secs(10))?;
    assert_eq!(cipher(&mut session)?, "");
    session.close();
    Ok(())
}

#[test]
fn a_mysql_row_stream_reads_the_window_in_key_order_and_stops_when_dropped() -> TestResult {
    use datadiff_access::stream::{MySqlEncoder, MySqlKey, MySqlRowQuery, RowStream, StreamOptions};
    use datadiff_diff_core::merge::Key;
    let (database, config) = source()?;
    let columns = vec![("updated_at".to_owned(), MySqlEncoder::Timestamp), ("note".to_owned(), MySqlEncoder::Text)];
    let query = MySqlRowQuery::for_table(database.name(), "orders", "id", MySqlKey::Int, "updated_at", columns)?;
    let window = (instant("2026-07-01T00:00:00Z"), instant("2026-07-01T01:00:00Z"));
    let rows: Vec<_> = std::thread::scope(|scope| {
        RowStream::mysql(
            scope,
            config.clone(),
            Duration::from_secs(30),
            query.clone(),
            window,
            StreamOptions::default(),
        )
        .collect::<Result<Vec<_>, _>>()
    })?;
    // Rows 1 and 2 are in [00:00, 01:00); row 2's note is NULL.
    assert_eq!(rows.iter().map(|row| row.key().clone()).collect::<Vec<_>>(), vec![Key::Int(1), Key::Int(2)]);
    let fields: Vec<Option<Vec<u8>>> = rows[1].fields().map(|field| field.map(<[u8]>::to_vec)).collect();
    // 2026-07-01 00:30:00.5 is day 9678 after 2000-01-01.
    let micros: i64 = 9678 * 86_400_000_000 + 1_800_500_000;
    assert_eq!(fields, vec![Some(micros.to_be_bytes().to_vec()), None]);

    // A large window read one row at a time, dropped after three rows: the reader stops and
    // the scope ends; the server runs no query of the reader's afterwards.
    database.client()?.query_drop(
        "CREATE TABLE many (id bigint NOT NULL PRIMARY KEY, ts datetime NOT NULL, note varchar(20));
         INSERT INTO many SELECT seq, '2026-07-01 00:00:00', 'n' FROM seq_1_to_200000;",
    )?;
    let columns = vec![("note".to_owned(), MySqlEncoder::Text)];
    let query = MySqlRowQuery::for_table(database.name(), "many", "id", MySqlKey::Int, "ts", columns)?;
    let options = StreamOptions { batch_rows: 1, queued_batches: 1 };
    let first: Vec<Key> = std::thread::scope(|scope| {
        let stream = RowStream::mysql(scope, config.clone(), Duration::from_secs(30), query, window, options);
        stream.take(3).map(|row| row.map(|row| row.key().clone())).collect::<Result<Vec<_>, _>>()
    })?;
    assert_eq!(first, vec![Key::Int(1), Key::Int(2), Key::Int(3)]);
    let mut admin = database.client()?;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let running: Option<i64> = admin.exec_first(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ? AND INFO LIKE 'SELECT%many%'",
            (&config.user,),
        )?;
        if running == Some(0) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the dropped stream's query still runs");
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}
