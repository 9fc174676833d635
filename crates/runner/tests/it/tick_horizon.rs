//! The lag-aware horizon (`checks.<name>.horizon`) over two throwaway clusters joined by
//! native logical replication, with a writer running throughout: while the subscription is
//! paused, rows written on the source inside a due slot make the check without a horizon FAIL,
//! and the check with one SKIPPED (nothing stored); once replication resumes and catches up,
//! the next tick attempts the slot and it PASSes — the FAIL never happens. Simulated hourly
//! ticks (`--at`), asserted on the backend's attempts.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use chrono::{DateTime, Utc};
use datadiff_access::Environment;
use datadiff_diff_core::attempt::HorizonSource;
use datadiff_diff_core::definition::{CheckDefinition, CheckType};
use datadiff_runner::{Connections, RunSummary, SummaryStatus, TickContext, TickReport};
use datadiff_testkit::{Cluster, ClusterOptions, LogicalReplication};

use crate::context::{Context, at, db_conn, while_a_writer_runs};
use crate::tick::{attempts, tick_at, ticker};

/// A source cluster with `wal_level = logical` and a replica cluster, shared by these tests.
fn clusters() -> &'static (Cluster, Cluster) {
    static CLUSTERS: OnceLock<(Cluster, Cluster)> = OnceLock::new();
    CLUSTERS.get_or_init(|| {
        (Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap(), Cluster::start().unwrap())
    })
}

/// Both sides' tables: `orders` (checked with a horizon), `orders_plain` (the same rows,
/// checked without one) and `noise` (what the writer writes, in the publication too).
const DDL: &str = "
CREATE TABLE public.orders (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, amount numeric(12,2),
                            source_ts_ms bigint NOT NULL);
CREATE INDEX ON public.orders (updated_at);
CREATE TABLE public.orders_plain (LIKE public.orders INCLUDING ALL);
CREATE TABLE public.noise (id bigserial PRIMARY KEY, note text);
";

const TABLES: [&str; 3] = ["public.orders", "public.orders_plain", "public.noise"];

/// Inserts a row updated at `when` into both checked tables (`source_ts_ms` is `when` in epoch
/// milliseconds, as a CDC loader stamps it).
fn write(client: &mut postgres::Client, id: i64, when: DateTime<Utc>) {
    for table in ["orders", "orders_plain"] {
        client
            .execute(
                &format!(
                    "INSERT INTO public.{table} VALUES ($1::bigint, $2, $1::bigint * 1.25, \
                     (extract(epoch FROM $2::timestamptz) * 1000)::bigint)"
                ),
                &[&id, &when],
            )
            .unwrap();
    }
}

/// The check of `table` (`public.<table>` on both sides): row_count over an hourly window
/// ending at the slot.
fn definition(context: &Context, table: &str) -> CheckDefinition {
    CheckDefinition {
        full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", "public", table),
        source_schema: "public".into(),
        source_table: table.into(),
        target_schema: "public".into(),
        target_table: table.into(),
        source_key_column: "id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "updated_at".into(),
        target_timestamp_column: "updated_at".into(),
        source_compare_columns: vec!["amount".into()],
        target_compare_columns: vec!["amount".into()],
        checks: vec![CheckType::RowCount],
        ..context.definition()
    }
}

/// The summary of `table`'s check in `report`.
fn summary<'r>(report: &'r TickReport, table: &str) -> &'r RunSummary {
    let name = format!("postgres/payments/public/{table}");
    let found: Vec<_> = report.summaries.iter().filter(|s| s.check.full_check_name == name).collect();
    assert_eq!(found.len(), 1, "{report:#?}");
    found[0]
}

/// `(slot, status)` of every attempt of `table`'s check.
fn stored(context: &Context, table: &str) -> Vec<(DateTime<Utc>, String)> {
    attempts(context, &format!("postgres/payments/public/{table}"))
        .into_iter()
        .map(|(slot, _, _, status)| (slot, status))
        .collect()
}

/// The stored horizon reading of `orders`: `(horizon, observed_at, applied_up_to, known)`.
type Reading = (String, DateTime<Utc>, Option<DateTime<Utc>>, bool);

fn reading(context: &Context) -> Reading {
    let row = context
        .backend_sql()
        .query_one(
            "SELECT horizon, observed_at, applied_up_to, known FROM public.datadiff_replica_horizons \
              WHERE full_check_name = 'postgres/payments/public/orders'",
            &[],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

/// What the paused tick left: its SKIPPED reason, the stored reading, and `report metrics`'
/// applied-lag and horizon-known lines for `orders` at that tick.
struct Paused {
    reason: String,
    reading: Reading,
    metrics: Vec<String>,
}

/// The issue's scenario for a horizon read by `horizon` (given the subscription's name).
fn paused_replication_is_skipped_then_verified(subscription: &str, horizon: fn(&str) -> HorizonSource) -> Paused {
    let (source_cluster, replica_cluster) = clusters();
    let context = Context::with_sides_apart(source_cluster, replica_cluster, DDL, DDL);
    let mut source = context.source.client().unwrap();
    // The 13:00 slot's window [12:00, 13:00) holds rows 1-3; row 4 (13:01) is the newest change.
    for (id, minute) in [(1, 10), (2, 30), (3, 59)] {
        write(&mut source, id, at(12, minute));
    }
    write(&mut source, 4, at(13, 1));
    let replication = LogicalReplication::start(&context.source, &context.replica, subscription, &TABLES).unwrap();
    replication.wait_caught_up().unwrap();
    // The horizon is read only from tables in state ready, which follows the copy's end.
    replication.wait_ready().unwrap();
    let (with, without) = (definition(&context, "orders"), definition(&context, "orders_plain"));
    context
        .store
        .sync_definitions(&[with.clone(), without], &datadiff_backend_store::SyncScope::all(), at(0, 0))
        .unwrap();
    // Both sides are read by a role that may only SELECT the tables: no pg_monitor, no
    // pg_read_all_stats, no replication privilege.
    let reader = format!("{subscription}_reader");
    for (cluster, database) in [(source_cluster, &context.source), (replica_cluster, &context.replica)] {
        cluster.create_role(&reader, "reader-pw").unwrap();
        database
            .client()
            .unwrap()
            .batch_execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}"))
            .unwrap();
    }
    let as_reader = |database: &datadiff_testkit::Database<'_>| datadiff_config::DbConn {
        user: Some(reader.clone()),
        password: Some(datadiff_config::Secret::new("reader-pw")),
        ..db_conn(database)
    };
    let connections = Connections::new(Environment::default())
        .with_tap("payments", as_reader(&context.source))
        .with_target("postgres", as_reader(&context.replica));
    let store = datadiff_runner::open_backend(context.backend_config.clone()).unwrap();
    let mut ticker = TickContext::new(store, connections)
        .with_horizon(BTreeMap::from([(with.full_check_name.clone(), horizon(subscription))]));

    while_a_writer_runs(&context.source, || {
        let report = tick_at(&mut ticker, at(13, 5));
        assert_eq!(summary(&report, "orders").status, SummaryStatus::Pass, "{report:#?}");
        assert_eq!(summary(&report, "orders_plain").status, SummaryStatus::Pass, "{report:#?}");

        // Replication pauses; the source goes on: rows in the 14:00 slot's window, and a
        // newer change at 14:01.
        replication.pause().unwrap();
        for (id, minute) in [(5, 10), (6, 20), (7, 30)] {
            write(&mut source, id, at(13, minute));
        }
        write(&mut source, 8, at(14, 1));

        let report = tick_at(&mut ticker, at(14, 5));
        // Without a horizon: the rows in flight are reported as drift.
        let plain = summary(&report, "orders_plain");
        assert_eq!((plain.status, plain.scheduled_for), (SummaryStatus::Fail, Some(at(14, 0))), "{report:#?}");
        // With one: SKIPPED, nothing stored, the reason names the horizon and the position.
        let held = summary(&report, "orders");
        assert_eq!((held.status, held.scheduled_for, held.run_id), (SummaryStatus::Skipped, Some(at(14, 0)), None));
        let reason = held.reason.clone().unwrap_or_default();
        let paused_reading = reading(&context);
        let exposition =
            datadiff_backend_store::metrics_exposition(&context.store.metrics_report(at(14, 5)).unwrap(), at(14, 5));
        let metrics = exposition
            .lines()
            .filter(|line| line.starts_with("datadiff_replica_") && line.contains("table=\"orders\""))
            .map(str::to_owned)
            .collect();
        assert_eq!(stored(&context, "orders"), [(at(13, 0), "PASS".to_owned())], "no attempt row for 14:00");
        assert_eq!(stored(&context, "orders_plain"), [(at(13, 0), "PASS".to_owned()), (at(14, 0), "FAIL".to_owned())]);

        // Replication resumes and catches up: the next tick attempts the slot, which passes.
        replication.resume().unwrap();
        replication.wait_caught_up().unwrap();
        let report = tick_at(&mut ticker, at(14, 10));
        let verified = summary(&report, "orders");
        assert_eq!((verified.status, verified.scheduled_for), (SummaryStatus::Pass, Some(at(14, 0))), "{report:#?}");
        assert_eq!(
            stored(&context, "orders"),
            [(at(13, 0), "PASS".to_owned()), (at(14, 0), "PASS".to_owned())],
            "the FAIL never happened"
        );
        assert!(reading(&context).3, "known again once caught up");
        Paused { reason, reading: paused_reading, metrics }
    })
}

#[test]
fn a_paused_subscription_holds_the_slot_back_until_it_has_applied_it() {
    let paused =
        paused_replication_is_skipped_then_verified("horizon_sub", |name| HorizonSource::Subscription(name.to_owned()));
    assert_eq!(
        paused.reason,
        "replica position unknown (subscription horizon_sub is disabled: nothing is being applied); \
         window ends 2026-07-22T14:00:00+00:00: not attempted before the replica has applied it"
    );
    // The paused reading keeps the newest known horizon (the 13:05 tick's), so the applied lag
    // keeps growing: an hour at 14:05.
    assert_eq!(paused.reading, ("subscription:horizon_sub".to_owned(), at(14, 5), Some(at(13, 5)), false));
    let labels = r#"target="postgres",tap="payments",schema="public",table="orders""#;
    assert_eq!(
        paused.metrics,
        [
            format!("datadiff_replica_applied_lag_seconds{{{labels}}} 3600"),
            format!("datadiff_replica_horizon_known{{{labels}}} 0")
        ]
    );
}

#[test]
fn a_position_column_holds_the_slot_back_until_the_replica_has_applied_it() {
    let paused =
        paused_replication_is_skipped_then_verified("column_sub", |_| HorizonSource::Column("source_ts_ms".into()));
    assert_eq!(
        paused.reason,
        "replica has applied up to 2026-07-22T13:01:00+00:00 (column source_ts_ms of public.orders: newest \
         2026-07-22T13:01:00+00:00); window ends 2026-07-22T14:00:00+00:00: not attempted before the replica has \
         applied it"
    );
    assert_eq!(paused.reading, ("column:source_ts_ms".to_owned(), at(14, 5), Some(at(13, 1)), true));
    let labels = r#"target="postgres",tap="payments",schema="public",table="orders""#;
    assert_eq!(
        paused.metrics,
        [
            format!("datadiff_replica_applied_lag_seconds{{{labels}}} 3840"),
            format!("datadiff_replica_horizon_known{{{labels}}} 1")
        ]
    );
}

/// A horizon that cannot be read is the check's ERROR without a run, naming the setting;
/// nothing is attempted.
#[test]
fn an_unreadable_horizon_is_an_error_and_attempts_nothing() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    context.import(&definition);
    for (horizon, expected) in [
        (
            HorizonSource::Subscription("nope".into()),
            "horizon subscription:nope: the replica's database has no subscription named 'nope'",
        ),
        (
            HorizonSource::Column("missing".into()),
            "horizon column:missing: the replica table payments_public.transfers has no column 'missing'",
        ),
        (
            HorizonSource::Column("amount".into()),
            "horizon column:amount of payments_public.transfers is numeric: it must be timestamp with time zone, \
             timestamp without time zone (read as UTC) or an integer of epoch milliseconds",
        ),
    ] {
        let mut ticker = ticker(&context).with_horizon(BTreeMap::from([(definition.full_check_name.clone(), horizon)]));
        let report = tick_at(&mut ticker, at(13, 5));
        let [only] = report.summaries.as_slice() else { panic!("{report:#?}") };
        assert_eq!((only.status, only.run_id), (SummaryStatus::Error, None));
        assert_eq!(only.reason.as_deref(), Some(expected));
        assert!(attempts(&context, &definition.full_check_name).is_empty());
    }
    // The column horizon of the fixtures' replica: `_sdc_batched_at`, a naive timestamp read as
    // UTC; its newest value (13:02) admits the 13:00 slot.
    let mut ticker = ticker(&context).with_horizon(BTreeMap::from([(
        definition.full_check_name.clone(),
        HorizonSource::Column("_sdc_batched_at".into()),
    )]));
    let report = tick_at(&mut ticker, at(13, 5));
    assert_eq!(report.summaries[0].status, SummaryStatus::Pass, "{report:#?}");
}
