//! Audits of a replica that PostgreSQL's native logical replication keeps (a publication on
//! one throwaway cluster, its subscription on another), for text and uuid keys: a faithful
//! replica passes under both strategies, and differences planted on the subscriber alone (a
//! row the source deleted that the replica kept, a changed value, a missing row) are each
//! named by their key, the same under both strategies.

use datadiff_audit::{AuditOptions, AuditReport, Reason, Status, audit};
use datadiff_diff_core::segment::{SearchSettings, Strategy};
use datadiff_testkit::{Cluster, ClusterOptions, Database, LogicalReplication, SUPERUSER};
use serde_json::{Value as Json, json};

use crate::support::no_env;

/// One keyed table: its DDL (the same on both sides), the source's rows, and the statements
/// that plant the three differences on the replica, with the keys they touch.
struct Case {
    table: &'static str,
    key: &'static str,
    ddl: &'static str,
    rows: &'static str,
    /// A row the replica keeps that the source no longer has (a lost delete).
    extra: (&'static str, Json),
    /// A value changed on the replica.
    changed: (&'static str, Json),
    /// A row the replica lost.
    missing: (&'static str, Json),
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            table: "public.skus",
            key: "code",
            ddl: "CREATE TABLE public.skus (code text PRIMARY KEY, title text, price numeric(10, 2), \
                  updated_at timestamptz NOT NULL)",
            // Mixed case, digits and non-ASCII: byte order differs from most collations'.
            rows: "INSERT INTO public.skus SELECT (ARRAY['A', 'b', 'Z', 'é', '_'])[g % 5 + 1] || lpad(g::text, 5, '0'), \
                   'title ' || g, g / 7.0, '2026-07-22 00:00:00+00'::timestamptz + g * interval '1 minute' \
                   FROM generate_series(1, 3000) g",
            extra: ("INSERT INTO public.skus VALUES ('é99999', 'gone', 1, now())", json!("é99999")),
            changed: ("UPDATE public.skus SET price = -price WHERE code = 'b00001'", json!("b00001")),
            missing: ("DELETE FROM public.skus WHERE code = 'Z00002'", json!("Z00002")),
        },
        Case {
            table: "public.devices",
            key: "id",
            ddl: "CREATE TABLE public.devices (id uuid PRIMARY KEY, label text, seen_at timestamptz NOT NULL)",
            rows: "INSERT INTO public.devices SELECT md5(g::text)::uuid, 'device ' || g, \
                   '2026-07-22 00:00:00+00'::timestamptz + g * interval '1 minute' FROM generate_series(1, 3000) g",
            extra: (
                "INSERT INTO public.devices VALUES ('ffffffff-0000-0000-0000-000000000001', 'gone', now())",
                json!("ffffffff-0000-0000-0000-000000000001"),
            ),
            // md5('1') = c4ca4238a0b923820dcc509a6f75849b.
            changed: (
                "UPDATE public.devices SET label = 'device one' WHERE id = md5('1')::uuid",
                json!("c4ca4238-a0b9-2382-0dcc-509a6f75849b"),
            ),
            // md5('2') = c81e728d9d4c2f636f067f89cc14862c.
            missing: (
                "DELETE FROM public.devices WHERE id = md5('2')::uuid",
                json!("c81e728d-9d4c-2f63-6f06-7f89cc14862c"),
            ),
        },
    ]
}

fn url(database: &Database<'_>) -> String {
    database.url(SUPERUSER, database.cluster().superuser_password())
}

/// The audit of `table` with `strategy`; small segments, so that the search really descends.
fn run(source: &Database<'_>, replica: &Database<'_>, case: &Case, strategy: Strategy) -> AuditReport {
    let mut options = AuditOptions::new(url(source), url(replica), case.table.parse().unwrap());
    options.key = case.key.to_owned();
    options.cutover_ready = true;
    options.strategy = strategy;
    options.segment_settings = SearchSettings {
        leaf_rows: 8,
        first_level_rows: 64,
        max_first_fanout: 16,
        max_fanout: 4,
        ..Default::default()
    };
    audit(&options, &no_env(), &mut |_| {}).unwrap()
}

/// What must agree between strategies: everything but the times and the strategy's name.
fn answer(report: &AuditReport) -> Json {
    let mut json = serde_json::to_value(report).unwrap();
    for field in ["started_at", "finished_at", "duration_seconds", "strategy", "strategy_reason"] {
        json.as_object_mut().unwrap().remove(field);
    }
    json
}

#[test]
fn a_native_logical_replica_passes_and_each_difference_planted_on_it_is_named_by_its_key() {
    let source_cluster = Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap();
    let replica_cluster = Cluster::start().unwrap();
    let (source, replica) = (source_cluster.fresh_database().unwrap(), replica_cluster.fresh_database().unwrap());
    let cases = cases();
    for case in &cases {
        source.client().unwrap().batch_execute(&format!("{}; {}", case.ddl, case.rows)).unwrap();
        replica.client().unwrap().batch_execute(case.ddl).unwrap();
    }
    let tables: Vec<&str> = cases.iter().map(|case| case.table).collect();
    let replication = LogicalReplication::start(&source, &replica, "shop_sub", &tables).unwrap();
    // Changes after the initial copy travel as WAL, not as the copy.
    source.client().unwrap().batch_execute("UPDATE public.skus SET title = title || '!' WHERE price > 100").unwrap();
    replication.wait_caught_up().unwrap();

    for case in &cases {
        for strategy in [Strategy::Segments, Strategy::Stream] {
            let report = run(&source, &replica, case, strategy);
            assert_eq!(
                (report.status, report.reason),
                (Status::Pass, Reason::ParityVerified),
                "{} {strategy:?}",
                case.table
            );
            assert_eq!(
                (report.source_rows, report.replica_rows, report.difference_count),
                (3000, 3000, 0),
                "{}",
                case.table
            );
        }
    }

    // The subscription stops, so nothing it applies can undo what is planted on the replica.
    replication.pause().unwrap();
    for case in &cases {
        let plant = format!("{}; {}; {}", case.extra.0, case.changed.0, case.missing.0);
        replica.client().unwrap().batch_execute(&plant).unwrap();
        let segments = run(&source, &replica, case, Strategy::Segments);
        let stream = run(&source, &replica, case, Strategy::Stream);
        assert_eq!(answer(&segments), answer(&stream), "{}: segments and stream disagree", case.table);
        assert_eq!((segments.status, segments.reason), (Status::Block, Reason::RowDifferences), "{}", case.table);
        assert_eq!((segments.extra, segments.changed, segments.missing), (1, 1, 1), "{}", case.table);
        let mut named: Vec<(String, Json)> = serde_json::to_value(&segments.examples)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|example| (example["kind"].as_str().unwrap().to_owned(), example["id"].clone()))
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            named,
            [
                ("CHANGED".to_owned(), case.changed.1.clone()),
                ("EXTRA_IN_REPLICA".to_owned(), case.extra.1.clone()),
                ("MISSING_IN_REPLICA".to_owned(), case.missing.1.clone()),
            ],
            "{}",
            case.table
        );
    }
}
