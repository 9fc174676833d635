//! An attempt's wall time with the two sides' queries sequential versus concurrent, on a
//! throwaway cluster: `cargo run --release -p datadiff-runner --example attempt_wall_time
//! [ROWS [RUNS]]`.
//!
//! Builds a source table and a PipelineWise-shaped replica (lower-cased names,
//! `timestamptz` against `timestamp`, `numeric(18,4)` against `numeric(12,2)`, `varchar`
//! against `text`, `_sdc_*` columns) of ROWS rows (default 1,000,000), all inside one hourly
//! window, and a migrated backend. Then runs the same attempt — every upstream check, the
//! checksum over four column pairs — RUNS times (default 3) in each mode, alternating, after
//! a warm-up attempt, through [`datadiff_runner::execute`] (forced reruns of one slot), and
//! prints each attempt's wall time (start transaction to finish transaction) with each side's
//! aggregate query time. SPEC §11: with sides concurrent, an attempt takes about as long as
//! its slower side, not the sum.
//!
//! Not a test: numbers for BENCHMARKS.md.

#![allow(clippy::print_stdout, reason = "a benchmark program prints its figures")]

use std::time::{Duration, Instant};

use chrono::{TimeZone, Utc};
use datadiff_access::Environment;
use datadiff_backend_store::{BackendConfig, DefinitionFilter, MigrateOptions, SyncScope};
use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::{
    attempt::StartKind,
    definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType},
};
use datadiff_runner::{Clock, Connections, ExecutionOptions, SummaryStatus, execute, open_backend};
use datadiff_testkit::{Cluster, SUPERUSER};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rows: i64 = std::env::args().nth(1).map(|text| text.parse()).transpose()?.unwrap_or(1_000_000);
    let runs: usize = std::env::args().nth(2).map(|text| text.parse()).transpose()?.unwrap_or(3);
    let cluster = Cluster::start()?;
    let (source, replica, backend) = (cluster.fresh_database()?, cluster.fresh_database()?, cluster.fresh_database()?);
    let started = Instant::now();
    // ROWS rows spread over [12:00, 13:00) of 2026-07-22.
    let step_micros = 3_600_000_000 / rows.max(1);
    source.client()?.batch_execute(&format!(
        "CREATE TABLE public.\"Transfers\" (\"Id\" bigint PRIMARY KEY, \"UpdatedAt\" timestamp, \
           \"Amount\" numeric(12,2), \"Status\" text); \
         INSERT INTO public.\"Transfers\" SELECT g, timestamp '2026-07-22 12:00' + g * interval '{step_micros} microseconds', \
           (g % 100000) / 100.0, 'status-' || (g % 7) FROM generate_series(0, {rows} - 1) g; \
         CREATE INDEX ON public.\"Transfers\" (\"UpdatedAt\");"
    ))?;
    source.client()?.batch_execute("VACUUM ANALYZE public.\"Transfers\"")?;
    replica.client()?.batch_execute(&format!(
        "CREATE SCHEMA payments_public; \
         CREATE TABLE payments_public.transfers (id bigint, updatedat timestamptz, amount numeric(18,4), \
           status varchar, _sdc_extracted_at timestamp, _sdc_batched_at timestamp, _sdc_deleted_at varchar); \
         INSERT INTO payments_public.transfers SELECT g, timestamptz '2026-07-22 12:00+00' + g * interval '{step_micros} microseconds', \
           (g % 100000) / 100.0, 'status-' || (g % 7), now(), now(), NULL FROM generate_series(0, {rows} - 1) g; \
         CREATE INDEX ON payments_public.transfers (updatedat);"
    ))?;
    replica.client()?.batch_execute("VACUUM ANALYZE payments_public.transfers")?;
    eprintln!("built 2 x {rows} rows in {:.1?}", started.elapsed());

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
    let db_conn = |dbname: &str| DbConn {
        host: Some(cluster.host().to_owned()),
        port: Some(cluster.port()),
        user: Some(SUPERUSER.to_owned()),
        password: Some(Secret::new(password.clone())),
        dbname: Some(dbname.to_owned()),
        ..DbConn::default()
    };
    let connections = Connections::new(Environment::default())
        .with_tap("payments", db_conn(source.name()))
        .with_target("postgres", db_conn(replica.name()));
    let definition = CheckDefinition {
        full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", "public", "Transfers"),
        target_id: "postgres".into(),
        tap_id: "payments".into(),
        source_type: SourceType::TapPostgres,
        target_type: TargetType::TargetPostgres,
        source_database: source.name().to_owned(),
        target_database: replica.name().to_owned(),
        source_schema: "public".into(),
        source_table: "Transfers".into(),
        target_schema: "payments_public".into(),
        target_table: "transfers".into(),
        source_key_column: "Id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "UpdatedAt".into(),
        target_timestamp_column: "updatedat".into(),
        source_compare_columns: vec!["Amount".into(), "Status".into()],
        target_compare_columns: vec!["amount".into(), "status".into()],
        checks: CheckType::ALL.to_vec(),
        frequency: "0 * * * *".into(),
        window_start_seconds: 3600,
        window_end_seconds: 0,
        statement_timeout_seconds: 3600,
        initial_full_scan: false,
        extensions: Extensions::default(),
    };
    let now = Utc.with_ymd_and_hms(2026, 7, 22, 13, 5, 0).single().ok_or("time")?;
    store.sync_definitions(std::slice::from_ref(&definition), &SyncScope::all(), now)?;
    let stored = store.definitions(&DefinitionFilter::default())?.remove(0);
    let slot = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).single().ok_or("time")?;

    let attempt =
        |concurrent_sides: bool, kind: StartKind| -> Result<(Duration, f64, f64), Box<dyn std::error::Error>> {
            let options = ExecutionOptions { concurrent_sides, clock: Clock::at(now), ..ExecutionOptions::default() };
            let started = Instant::now();
            let summary = execute(&store, &connections, &stored, slot, kind, &options)?;
            let wall = started.elapsed();
            if summary.status != SummaryStatus::Pass {
                return Err(format!("attempt {}: {:?}", summary.status, summary.reason).into());
            }
            let (source_seconds, target_seconds) = summary.query_seconds().ok_or("no query times")?;
            Ok((wall, source_seconds, target_seconds))
        };
    let (warm, _, _) = attempt(true, StartKind::Scheduled { force: false })?;
    eprintln!("warm-up attempt: {warm:.2?}");

    println!("| sides | attempt wall time (s) | source query (s) | target query (s) |");
    println!("|---|---|---|---|");
    let mut best = [f64::INFINITY; 2];
    for _ in 0..runs {
        for (index, concurrent) in [false, true].into_iter().enumerate() {
            let (wall, source_seconds, target_seconds) = attempt(concurrent, StartKind::Scheduled { force: true })?;
            let mode = if concurrent { "concurrent" } else { "sequential" };
            println!("| {mode} | {:.2} | {source_seconds:.2} | {target_seconds:.2} |", wall.as_secs_f64());
            best[index] = best[index].min(wall.as_secs_f64());
        }
    }
    println!("\nbest of {runs}: sequential {:.2} s, concurrent {:.2} s ({rows} rows per side)", best[0], best[1]);
    Ok(())
}
