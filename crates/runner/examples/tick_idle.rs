//! A scheduler tick over many current definitions with nothing due, on a throwaway cluster:
//! `cargo run --release -p datadiff-runner --example tick_idle [DEFINITIONS [RUNS]]`.
//!
//! Imports DEFINITIONS hourly definitions (default 1,000) into a migrated backend, runs a
//! first tick at 13:05 that attempts every current slot (each ends ERROR at once: no tap
//! connection is configured, which is all this needs), then RUNS ticks (default 5) at 13:30,
//! when every current slot is attempted and no failed slot is eligible for a retry yet — the
//! everyday idle tick — and prints each one's wall time. SPEC §11: under one second for
//! 1,000 definitions.
//!
//! Not a test: numbers for BENCHMARKS.md.

#![allow(clippy::print_stdout, reason = "a benchmark program prints its figures")]

use std::time::Instant;

use chrono::{TimeZone, Utc};
use datadiff_access::Environment;
use datadiff_backend_store::{BackendConfig, MigrateOptions, SyncScope};
use datadiff_diff_core::definition::{CheckDefinition, CheckType, Extensions, SourceType, TargetType};
use datadiff_runner::{Clock, Connections, SummaryStatus, TickContext, open_backend, tick};
use datadiff_testkit::{Cluster, SUPERUSER};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let count: usize = std::env::args().nth(1).map(|text| text.parse()).transpose()?.unwrap_or(1_000);
    let runs: usize = std::env::args().nth(2).map(|text| text.parse()).transpose()?.unwrap_or(5);
    let cluster = Cluster::start()?;
    let backend = cluster.fresh_database()?;
    let password = cluster.superuser_password().to_owned();
    let config = BackendConfig {
        host: cluster.host().to_owned(),
        port: cluster.port(),
        user: SUPERUSER.to_owned(),
        password: password.clone(),
        dbname: backend.name().to_owned(),
        ddl_user: SUPERUSER.to_owned(),
        ddl_password: password,
        ..BackendConfig::default()
    };
    datadiff_backend_store::migrate_backend(&config, &MigrateOptions::latest())?;
    let store = open_backend(config)?;
    let definitions: Vec<CheckDefinition> = (0..count)
        .map(|n| {
            let table = format!("orders_{n:05}");
            CheckDefinition {
                full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", "public", &table),
                target_id: "postgres".into(),
                tap_id: "payments".into(),
                source_type: SourceType::TapPostgres,
                target_type: TargetType::TargetPostgres,
                source_database: "payments".into(),
                target_database: "warehouse".into(),
                source_schema: "public".into(),
                source_table: table.clone(),
                target_schema: "payments_public".into(),
                target_table: table,
                source_key_column: "id".into(),
                target_key_column: "id".into(),
                source_timestamp_column: "updated_at".into(),
                target_timestamp_column: "updated_at".into(),
                source_compare_columns: vec!["amount".into()],
                target_compare_columns: vec!["amount".into()],
                checks: vec![CheckType::RowCount, CheckType::RowChecksum],
                frequency: "0 * * * *".into(),
                window_start_seconds: 3600,
                window_end_seconds: 0,
                statement_timeout_seconds: 60,
                initial_full_scan: false,
                extensions: Extensions::default(),
            }
        })
        .collect();
    let day = |hour, minute| Utc.with_ymd_and_hms(2026, 7, 22, hour, minute, 0).unwrap();
    store.sync_definitions(&definitions, &SyncScope::all(), day(0, 0))?;
    let mut context = TickContext::new(store, Connections::new(Environment::default()));

    let first = day(13, 5);
    context.set_clock(Clock::at(first));
    let started = Instant::now();
    let report = tick(&context)?;
    println!(
        "first tick at 13:05: {} attempts in {:.3} s (setup, not the figure)",
        report.summaries.iter().filter(|summary| summary.run_id.is_some()).count(),
        started.elapsed().as_secs_f64()
    );

    let idle = day(13, 30);
    context.set_clock(Clock::at(idle));
    let mut seconds = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let report = tick(&context)?;
        seconds.push(started.elapsed().as_secs_f64());
        let skipped = report.summaries.iter().filter(|summary| summary.status == SummaryStatus::Skipped).count();
        if skipped != count || !report.swept.is_empty() {
            return Err(format!("expected {count} SKIPPED summaries and no sweep, got {skipped}").into());
        }
    }
    seconds.sort_by(f64::total_cmp);
    let median = seconds[seconds.len() / 2];
    println!(
        "idle tick over {count} current definitions (nothing due): median {median:.3} s, min {:.3} s, max {:.3} s \
         over {runs} runs",
        seconds[0],
        seconds[seconds.len() - 1]
    );
    Ok(())
}
