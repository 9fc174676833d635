//! `row_diff` from a MariaDB source against its PostgreSQL replica, against the two sides'
//! own streaming floors: `cargo run --release -p datadiff-runner --example mysql_row_diff
//! [ROWS [RUNS]]`.
//!
//! Starts a throwaway MariaDB server and a throwaway PostgreSQL cluster, loads ROWS rows
//! (default 1,000,000) × 6 columns (`bigint` key, `datetime(6)`, `decimal(12,2)`,
//! `varchar`, `int`, `tinyint(1)`) into MariaDB and the same rows as target-postgres writes
//! them (`timestamp`, `numeric`, `character varying`, `bigint`, `boolean`) into PostgreSQL,
//! all in one hourly window. Then, RUNS times (default 3), interleaved after an unmeasured
//! warm-up, it measures:
//!
//! * **MariaDB floor, mysql crate**: `row_diff`'s source `SELECT` (bounds bound, binary
//!   protocol) drained to nowhere by the `mysql` crate's `exec_iter`, in this process;
//! * **MariaDB floor, `mariadb --quick`**: the same `SELECT` (bounds as literals) run by the
//!   `mariadb` command-line client with `--quick`, its output to `/dev/null`;
//! * **PostgreSQL COPY floor**: the replica's `COPY (SELECT …) TO STDOUT (FORMAT binary)`
//!   drained by rust-postgres, in this process;
//! * **both floors concurrently** (mysql crate and COPY on two threads): the floor
//!   `row_diff` is measured against;
//! * **`row_diff` attempt**: a forced `row_diff`-only attempt through
//!   [`datadiff_runner::execute`] (backend, sessions, catalogs, preflight, both streams, the
//!   merge, results and coverage), its counts checked, with this process's peak RSS during
//!   it (`VmHWM`, reset before each attempt).
//!
//! Not a test: numbers for BENCHMARKS.md.

#![allow(clippy::print_stdout, reason = "a benchmark program prints its figures")]

use std::process::{Command, Stdio};
use std::time::Instant;

use chrono::{TimeZone, Utc};
use datadiff_access::Environment;
use datadiff_access::stream::{MySqlEncoder, MySqlKey, MySqlRowQuery};
use datadiff_backend_store::{BackendConfig, DefinitionFilter, MigrateOptions, SyncScope};
use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::{
    attempt::StartKind,
    definition::{CheckDefinition, Extensions, RowDiffSettings, SourceType, TargetType},
};
use datadiff_runner::{Clock, Connections, ExecutionOptions, SummaryStatus, execute, open_backend};
use datadiff_testkit::{Cluster, MARIADB_SUPERUSER, MariaDb, SUPERUSER};
use mysql::prelude::Queryable;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

const START: &str = "2026-07-22 12:00:00";
const END: &str = "2026-07-22 13:00:00";

fn main() -> Result<()> {
    let rows: i64 = std::env::args().nth(1).map(|text| text.parse()).transpose()?.unwrap_or(1_000_000);
    let runs: usize = std::env::args().nth(2).map(|text| text.parse()).transpose()?.unwrap_or(3);
    let mariadb = MariaDb::start()?;
    let source = mariadb.fresh_database()?;
    let cluster = Cluster::start()?;
    let (replica, backend) = (cluster.fresh_database()?, cluster.fresh_database()?);
    let step = 3_600_000_000 / rows.max(1);

    let loading = Instant::now();
    let mut conn = source.client()?;
    conn.query_drop(
        "CREATE TABLE `Events` (`Id` bigint NOT NULL PRIMARY KEY, `UpdatedAt` datetime(6) NOT NULL, \
           `Amount` decimal(12,2), `Status` varchar(20), `Qty` int, `Flag` tinyint(1), \
           KEY `Events_UpdatedAt` (`UpdatedAt`)) CHARACTER SET utf8mb4",
    )?;
    // In slices, so one statement's undo stays small.
    let slice = 250_000;
    let mut from = 0;
    while from < rows {
        let to = (from + slice).min(rows) - 1;
        conn.query_drop(format!(
            "INSERT INTO `Events` SELECT seq, TIMESTAMP '{START}' + INTERVAL (seq * {step}) MICROSECOND, \
               (seq % 100000) / 100, CONCAT('status-', seq % 7), seq % 1000, seq % 2 FROM seq_{from}_to_{to}"
        ))?;
        from = to + 1;
    }
    conn.query_drop("ANALYZE TABLE `Events`")?;
    replica.client()?.batch_execute(&format!(
        "CREATE SCHEMA shop; \
         CREATE TABLE shop.events (id bigint, updatedat timestamp, amount numeric, status character varying, \
           qty bigint, flag boolean, _sdc_extracted_at timestamp, _sdc_batched_at timestamp, \
           _sdc_deleted_at character varying); \
         INSERT INTO shop.events SELECT g, timestamp '{START}' + g * interval '{step} microseconds', \
           (g % 100000) / 100.0, 'status-' || (g % 7), g % 1000, g % 2 = 1, now(), now(), NULL \
           FROM generate_series(0, {rows} - 1) g; \
         CREATE INDEX ON shop.events (updatedat); CREATE INDEX ON shop.events (id);"
    ))?;
    replica.client()?.batch_execute("VACUUM ANALYZE shop.events")?;
    eprintln!("loaded 2 x {rows} rows in {:.1?}", loading.elapsed());

    let password = cluster.superuser_password().to_owned();
    let config = BackendConfig {
        host: cluster.host().to_owned(),
        port: cluster.port(),
        user: SUPERUSER.to_owned(),
        password: password.clone(),
        dbname: backend.name().to_owned(),
        ddl_user: SUPERUSER.to_owned(),
        ddl_password: password.clone(),
        ..BackendConfig::default()
    };
    datadiff_backend_store::migrate_backend(&config, &MigrateOptions::latest())?;
    let store = open_backend(config)?;
    let tap = DbConn {
        host: Some(mariadb.host().to_owned()),
        port: Some(mariadb.port()),
        user: Some(MARIADB_SUPERUSER.to_owned()),
        password: Some(Secret::new(mariadb.superuser_password())),
        dbname: Some(source.name().to_owned()),
        ..DbConn::default()
    };
    let target = DbConn {
        host: Some(cluster.host().to_owned()),
        port: Some(cluster.port()),
        user: Some(SUPERUSER.to_owned()),
        password: Some(Secret::new(password.clone())),
        dbname: Some(replica.name().to_owned()),
        ..DbConn::default()
    };
    let connections =
        Connections::new(Environment::default()).with_tap("payments", tap).with_target("postgres", target);
    let compared = ["Amount", "Status", "Qty", "Flag"];
    let definition = CheckDefinition {
        full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", source.name(), "Events"),
        target_id: "postgres".into(),
        tap_id: "payments".into(),
        source_type: SourceType::TapMysql,
        target_type: TargetType::TargetPostgres,
        source_database: source.name().to_owned(),
        target_database: replica.name().to_owned(),
        source_schema: source.name().to_owned(),
        source_table: "Events".into(),
        target_schema: "shop".into(),
        target_table: "events".into(),
        source_key_column: "Id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "UpdatedAt".into(),
        target_timestamp_column: "updatedat".into(),
        source_compare_columns: compared.iter().map(|name| name.to_string()).collect(),
        target_compare_columns: compared.iter().map(|name| name.to_lowercase()).collect(),
        checks: Vec::new(),
        frequency: "0 * * * *".into(),
        window_start_seconds: 3600,
        window_end_seconds: 0,
        statement_timeout_seconds: 3600,
        initial_full_scan: false,
        extensions: Extensions {
            row_diff: Some(RowDiffSettings::default()),
            exclude_soft_deleted: false,
            ..Extensions::default()
        },
    };
    let now = Utc.with_ymd_and_hms(2026, 7, 22, 13, 5, 0).single().ok_or("time")?;
    store.sync_definitions(std::slice::from_ref(&definition), &SyncScope::all(), now)?;
    let stored = store.definitions(&DefinitionFilter::default())?.remove(0);
    let slot = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).single().ok_or("time")?;

    // The source SELECT exactly as row_diff runs it (the encoders do not change its text).
    let columns = ["UpdatedAt", "Amount", "Status", "Qty", "Flag"];
    let mysql_select = MySqlRowQuery::for_table(
        source.name(),
        "Events",
        "Id",
        MySqlKey::Int,
        "UpdatedAt",
        columns.iter().map(|name| (name.to_string(), MySqlEncoder::Bytes)).collect(),
    )?;
    let literal_select = mysql_select.sql_with_placeholders("?").replacen('?', &format!("'{START}'"), 1).replacen(
        '?',
        &format!("'{END}'"),
        1,
    );
    let copy = format!(
        "COPY (SELECT \"id\", \"updatedat\", \"amount\", \"status\", \"qty\", \"flag\" FROM \"shop\".\"events\" \
         WHERE \"updatedat\" >= '{START}.000000'::timestamp AND \"updatedat\" < '{END}.000000'::timestamp \
         ORDER BY \"id\") TO STDOUT (FORMAT binary)"
    );
    let mysql_opts = source.opts();
    let pg_config = format!(
        "host={} port={} user={SUPERUSER} password={password} dbname={}",
        cluster.host(),
        cluster.port(),
        replica.name()
    );

    let drain_mysql = || -> Result<u64> {
        let mut conn = mysql::Conn::new(mysql_opts.clone())?;
        conn.query_drop("SET SESSION time_zone = '+00:00'")?;
        let bounds = (START, END);
        let mut count = 0u64;
        for row in conn.exec_iter(mysql_select.select_sql(), bounds)? {
            std::hint::black_box(row?);
            count += 1;
        }
        Ok(count)
    };
    let drain_cli = || -> Result<()> {
        let status = Command::new("mariadb")
            .args(["--quick", "--batch", "--skip-column-names", "--protocol=TCP", "-h", mariadb.host()])
            .args(["-P", &mariadb.port().to_string(), "-u", MARIADB_SUPERUSER, source.name(), "-e", &literal_select])
            .env("MYSQL_PWD", mariadb.superuser_password())
            .stdout(Stdio::null())
            .status()?;
        if !status.success() { Err("mariadb --quick failed".into()) } else { Ok(()) }
    };
    let drain_copy = || -> Result<u64> {
        use std::io::Read as _;
        let mut client = postgres::Client::connect(&pg_config, postgres::NoTls)?;
        let mut reader = client.copy_out(copy.as_str())?;
        let mut buffer = vec![0u8; 1 << 16];
        let mut bytes = 0u64;
        loop {
            let read = reader.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            bytes += read as u64;
        }
        Ok(bytes)
    };
    let attempt = |kind: StartKind| -> Result<()> {
        let options = ExecutionOptions { clock: Clock::at(now), ..ExecutionOptions::default() };
        let summary = execute(&store, &connections, &stored, slot, kind, &options)?;
        if summary.status != SummaryStatus::Pass {
            return Err(format!("attempt {}: {:?}", summary.status, summary.reason).into());
        }
        Ok(())
    };
    let timed = |job: &dyn Fn() -> Result<()>| -> Result<f64> {
        let started = Instant::now();
        job()?;
        Ok(started.elapsed().as_secs_f64())
    };

    // Warm-up: caches on both servers, the row count checked once.
    let counted = drain_mysql()?;
    if counted != rows as u64 {
        return Err(format!("the MariaDB SELECT returned {counted} rows, {rows} expected").into());
    }
    drain_copy()?;
    attempt(StartKind::Scheduled { force: false })?;

    let names = [
        "MariaDB floor: mysql crate exec_iter",
        "MariaDB floor: mariadb --quick > /dev/null",
        "PostgreSQL COPY floor: rust-postgres",
        "both floors concurrently (mysql crate + COPY)",
        "row_diff attempt (MariaDB → PostgreSQL)",
    ];
    let mut figures: Vec<Vec<f64>> = vec![Vec::new(); names.len()];
    let mut peaks: Vec<Option<u64>> = Vec::new();
    for round in 0..runs {
        figures[0].push(timed(&|| drain_mysql().map(drop))?);
        figures[1].push(timed(&drain_cli)?);
        figures[2].push(timed(&|| drain_copy().map(drop))?);
        figures[3].push(timed(&|| {
            std::thread::scope(|scope| {
                let mysql = scope.spawn(|| drain_mysql().map(drop).map_err(|error| error.to_string()));
                let copy = drain_copy().map(drop).map_err(|error| error.to_string());
                let mysql = mysql.join().map_err(|_| "the MariaDB drain panicked".to_owned())?;
                mysql.and(copy).map_err(Into::into)
            })
        })?);
        reset_peak_rss();
        figures[4].push(timed(&|| attempt(StartKind::Scheduled { force: true }))?);
        peaks.push(peak_rss_kib());
        eprintln!("round {}: {:?}", round + 1, figures.iter().map(|column| column[round]).collect::<Vec<_>>());
    }
    let median = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted[sorted.len() / 2]
    };
    let floor = median(&figures[3]);
    println!("| rows | measured | wall (median of {runs}) | min | × concurrent floor |");
    println!("|---:|---|---:|---:|---:|");
    for (name, values) in names.iter().zip(&figures) {
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        println!("| {rows} | {name} | {:.2} s | {min:.2} s | {:.2} |", median(values), median(values) / floor);
    }
    let per_round: Vec<f64> = figures[4].iter().zip(&figures[3]).map(|(diff, floor)| diff / floor).collect();
    println!("\nper-round row_diff / concurrent floor: {per_round:.2?}, median {:.2}", median(&per_round));
    let peak =
        peaks.iter().flatten().max().map_or("unknown".to_owned(), |kib| format!("{:.1} MiB", *kib as f64 / 1024.0));
    println!("peak RSS of this process during a row_diff attempt (max over rounds): {peak}");
    let slower = figures[0].iter().zip(&figures[2]).map(|(a, b)| a.max(*b)).collect::<Vec<_>>();
    println!("row_diff / slower single side (median): {:.2}", median(&figures[4]) / median(&slower));
    Ok(())
}

/// Resets this process's peak resident set size (`VmHWM`), best effort (Linux).
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// This process's peak resident set size since the last reset, in KiB (Linux).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
