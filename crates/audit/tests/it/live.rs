//! Live audits (`--live`) of a native logical replica while a writer keeps changing its
//! source: a faithful replica passes every time, with the keys caught in flight counted; a
//! difference planted on the subscriber alone is named by its key every time; with the
//! subscription as the position, the report names the source WAL position parity was proven
//! at, and a paused subscription never passes as proven.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use datadiff_audit::{AuditOptions, AuditReport, Error, Live, Position, PositionError, Reason, Status, audit};
use datadiff_testkit::{Cluster, ClusterOptions, Database, LogicalReplication, SUPERUSER};
use serde_json::{Value as Json, json};

use crate::support::no_env;

const DDL: &str = "CREATE TABLE public.accounts (id bigint PRIMARY KEY, balance bigint NOT NULL, note text)";
/// Rows 1..=20000; the writer updates 1..=10000, inserts from 100001 and deletes what it
/// inserted; rows 15001..=20000 are never touched.
const ROWS: &str = "INSERT INTO public.accounts SELECT g, g * 10, 'row ' || g FROM generate_series(1, 20000) g";

fn url(database: &Database<'_>) -> String {
    database.url(SUPERUSER, database.cluster().superuser_password())
}

fn options(source: &Database<'_>, replica: &Database<'_>, settle: u64, position: Option<Position>) -> AuditOptions {
    let mut options = AuditOptions::new(url(source), url(replica), "public.accounts".parse().unwrap());
    options.live = Some(Live { settle: Duration::from_secs(settle), position });
    options
}

/// Updates 500 rows per statement, inserts 200 and deletes the 200 inserted before, in a
/// loop on the source until `stop` (about 30 rounds a second); counts its statements.
fn writer(source: &Database<'_>, stop: &AtomicBool, statements: &AtomicU64) {
    let mut client = source.client().unwrap();
    let mut round: i64 = 0;
    while !stop.load(Ordering::Relaxed) {
        let from = (round % 20) * 500 + 1;
        client
            .execute(
                "UPDATE public.accounts SET balance = balance + 1, note = 'w' || $2::bigint WHERE id BETWEEN $1 AND $1 + 499",
                &[&from, &round],
            )
            .unwrap();
        let base = 100_000 + (round % 1000) * 200;
        client
            .execute(
                "INSERT INTO public.accounts SELECT g, g, 'new' FROM generate_series($1::bigint + 1, $1::bigint + 200) g \
                 ON CONFLICT (id) DO UPDATE SET balance = excluded.balance + 1",
                &[&base],
            )
            .unwrap();
        let previous = 100_000 + ((round + 999) % 1000) * 200;
        client.execute("DELETE FROM public.accounts WHERE id > $1 AND id <= $1 + 200", &[&previous]).unwrap();
        statements.fetch_add(3, Ordering::Relaxed);
        round += 1;
        // A sustained rate the replica's single apply worker keeps up with (it applies row by
        // row what the source changed 500 rows at a time): the lag stays bounded, as on a
        // healthy replica.
        std::thread::sleep(Duration::from_millis(30));
    }
}

/// The report's examples as (kind, id, fields), sorted by id.
fn named(report: &AuditReport) -> Vec<(String, Json, Json)> {
    let mut named: Vec<(String, Json, Json)> = serde_json::to_value(&report.examples)
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|example| (example["kind"].as_str().unwrap().to_owned(), example["id"].clone(), example["fields"].clone()))
        .collect();
    named.sort_by_key(|(_, id, _)| id.as_i64());
    named
}

/// Whether `a >= b` as WAL positions, asked of `database`.
fn lsn_at_least(database: &Database<'_>, a: &str, b: &str) -> bool {
    database.client().unwrap().query_one("SELECT $1::text::pg_lsn >= $2::text::pg_lsn", &[&a, &b]).unwrap().get(0)
}

#[test]
fn a_live_audit_passes_a_busy_faithful_replica_and_names_what_is_planted_on_it() {
    let source_cluster = Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap();
    let replica_cluster = Cluster::start().unwrap();
    let (source, replica) = (source_cluster.fresh_database().unwrap(), replica_cluster.fresh_database().unwrap());
    source.client().unwrap().batch_execute(&format!("{DDL}; {ROWS}")).unwrap();
    replica.client().unwrap().batch_execute(DDL).unwrap();
    let replication = LogicalReplication::start(&source, &replica, "live_sub", &["public.accounts"]).unwrap();
    let stop = AtomicBool::new(false);
    let statements = AtomicU64::new(0);

    std::thread::scope(|scope| {
        let writing = scope.spawn(|| writer(&source, &stop, &statements));
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            // A faithful replica: PASS every time, the keys caught in flight counted.
            let mut in_flight = Vec::new();
            for run in 0..3 {
                let before = statements.load(Ordering::Relaxed);
                let report = audit(&options(&source, &replica, 60, None), &no_env(), &mut |_| {}).unwrap();
                assert_eq!((report.status, report.reason), (Status::Pass, Reason::ParityVerified), "run {run}");
                assert_eq!(report.difference_count, 0, "run {run}");
                let live = report.live.as_ref().expect("a live audit reports its recheck");
                assert!(live.tracked && live.position.is_none() && live.proven_at.is_none(), "run {run}");
                assert_eq!(live.persisting, 0, "run {run}");
                let json = serde_json::to_value(&report).unwrap();
                assert_eq!(json["live"]["in_flight"], json!(live.in_flight), "run {run}");
                assert!(report.summary_line().contains(&format!("in_flight={}", live.in_flight)), "run {run}");
                assert!(statements.load(Ordering::Relaxed) > before, "the writer ran during run {run}");
                in_flight.push(live.in_flight);
            }
            assert!(in_flight.iter().any(|&keys| keys > 0), "no key was ever caught in flight: {in_flight:?}");

            // Differences planted on the subscriber alone, on rows the writer never touches,
            // and a row deleted on the replica that the writer keeps updating (native logical
            // replication skips an update of a row it cannot find: it stays lost). A value
            // planted on a row the writer updates is overwritten by its next update: it
            // converges, and the replica really holds the source's row again.
            replica
                .client()
                .unwrap()
                .batch_execute(
                    "DELETE FROM public.accounts WHERE id IN (15001, 42); \
                     UPDATE public.accounts SET note = 'planted' WHERE id = 15002; \
                     UPDATE public.accounts SET note = 'planted' WHERE id = 43; \
                     INSERT INTO public.accounts VALUES (900001, 1, 'extra')",
                )
                .unwrap();
            for run in 0..2 {
                // Every round sees them: the audit waits out the whole settle period.
                let report = audit(&options(&source, &replica, 15, None), &no_env(), &mut |_| {}).unwrap();
                assert_eq!((report.status, report.reason), (Status::Block, Reason::RowDifferences), "run {run}");
                assert_eq!(
                    named(&report),
                    [
                        ("MISSING_IN_REPLICA".to_owned(), json!(42), Json::Null),
                        ("MISSING_IN_REPLICA".to_owned(), json!(15001), Json::Null),
                        ("CHANGED".to_owned(), json!(15002), json!(["note"])),
                        ("EXTRA_IN_REPLICA".to_owned(), json!(900001), Json::Null),
                    ],
                    "run {run}"
                );
                assert_eq!((report.missing, report.changed, report.extra), (2, 1, 1), "run {run}");
                let live = report.live.as_ref().unwrap();
                assert_eq!(live.persisting, 4, "run {run}");
                assert!(live.rounds >= 1, "run {run}");
            }
            let overwritten: i64 = replica
                .client()
                .unwrap()
                .query_one("SELECT count(*) FROM public.accounts WHERE id = 43 AND note = 'planted'", &[])
                .unwrap()
                .get(0);
            assert_eq!(overwritten, 0, "the replication overwrote the value planted on a row the writer updates");

            // With the subscription as the position: parity proven at a source WAL position
            // the replica had applied.
            let position = Some(Position::Subscription("live_sub".to_owned()));
            replica
                .client()
                .unwrap()
                .batch_execute("DELETE FROM public.accounts WHERE id = 900001; UPDATE public.accounts SET note = 'row 15002' WHERE id = 15002; INSERT INTO public.accounts VALUES (15001, 150010, 'row 15001')")
                .unwrap();
            // Row 42 stays lost on the replica until the writer's next insert… it never
            // comes: put it back from the source, under the writer's lock order.
            let row42: (i64, String) = {
                let row = source
                    .client()
                    .unwrap()
                    .query_one("SELECT balance, note FROM public.accounts WHERE id = 42", &[])
                    .unwrap();
                (row.get(0), row.get(1))
            };
            replica
                .client()
                .unwrap()
                .execute("INSERT INTO public.accounts VALUES (42, $1, $2)", &[&row42.0, &row42.1])
                .unwrap();
            for run in 0..2 {
                let before: String =
                    source.client().unwrap().query_one("SELECT pg_current_wal_lsn()::text", &[]).unwrap().get(0);
                let report = audit(&options(&source, &replica, 60, position.clone()), &no_env(), &mut |_| {}).unwrap();
                assert_eq!((report.status, report.difference_count), (Status::Pass, 0), "run {run}: {report:?}");
                let live = report.live.as_ref().unwrap();
                let proven = live.proven_at.as_ref().expect("a reached position is proven");
                let position = live.position.as_ref().unwrap();
                assert!(position.reached, "run {run}");
                assert_eq!((position.kind, position.name.as_str()), ("subscription", "live_sub"));
                assert!(lsn_at_least(&source, &proven.replica_applied, &proven.source_lsn), "run {run}: {proven:?}");
                // The proven position is the source's own, taken during this audit, and the
                // first of the waits.
                assert!(lsn_at_least(&source, &proven.source_lsn, &before), "run {run}: {proven:?} before {before}");
                assert!(lsn_at_least(&source, &position.source_lsn, &proven.source_lsn), "run {run}: {live:?}");
                assert!(report.summary_line().contains(&proven.source_lsn), "{}", report.summary_line());
            }

            // A paused subscription: the writer's keys differ, the position is never reached;
            // no PASS, no proven position.
            replication.pause().unwrap();
            let paused_at = statements.load(Ordering::Relaxed);
            while statements.load(Ordering::Relaxed) < paused_at + 30 {
                std::thread::sleep(Duration::from_millis(20));
            }
            let report = audit(&options(&source, &replica, 3, position.clone()), &no_env(), &mut |_| {}).unwrap();
            assert_eq!((report.status, report.reason), (Status::Block, Reason::RowDifferences));
            let live = report.live.as_ref().unwrap();
            assert!(live.proven_at.is_none(), "{live:?}");
            assert!(!live.position.as_ref().unwrap().reached, "{live:?}");
            assert!(report.difference_count > 0 && live.persisting == report.difference_count);
            assert!(report.summary_line().contains("no position is proven"), "{}", report.summary_line());
            replication.resume().unwrap();

            // A position the replica does not have is an error naming the argument.
            let unknown = Some(Position::Subscription("nope".to_owned()));
            let error = audit(&options(&source, &replica, 1, unknown), &no_env(), &mut |_| {}).unwrap_err();
            assert!(matches!(error, Error::Position(PositionError::UnknownSubscription { .. })), "{error}");
            assert!(error.to_string().starts_with("--position subscription:nope: "), "{error}");
            let missing = Some(Position::Column("_cdc_lsn".to_owned()));
            let error = audit(&options(&source, &replica, 1, missing), &no_env(), &mut |_| {}).unwrap_err();
            assert!(matches!(error, Error::Position(PositionError::ColumnMissing { .. })), "{error}");
            let text = Some(Position::Column("note".to_owned()));
            let error = audit(&options(&source, &replica, 1, text), &no_env(), &mut |_| {}).unwrap_err();
            assert!(error.to_string().contains("column note of public.accounts is text"), "{error}");
        }));
        stop.store(true, Ordering::Relaxed);
        writing.join().unwrap();
        if let Err(panic) = result {
            std::panic::resume_unwind(panic);
        }
    });
}

#[test]
fn a_position_column_proves_parity_once_the_replica_has_applied_the_source_position() {
    let cluster = datadiff_testkit::shared_cluster();
    let (source, replica) = (cluster.fresh_database().unwrap(), cluster.fresh_database().unwrap());
    source.client().unwrap().batch_execute(&format!("{DDL}; {ROWS}")).unwrap();
    replica
        .client()
        .unwrap()
        .batch_execute(&format!("{DDL}; {ROWS}; ALTER TABLE public.accounts ADD COLUMN _cdc_lsn bigint DEFAULT 0"))
        .unwrap();
    let position = Some(Position::Column("_cdc_lsn".to_owned()));
    // No row applied at or after the source's position: the data match, nothing is proven.
    let report = audit(&options(&source, &replica, 1, position.clone()), &no_env(), &mut |_| {}).unwrap();
    assert_eq!(report.status, Status::Pass);
    let live = report.live.as_ref().unwrap();
    assert!(live.proven_at.is_none() && !live.position.as_ref().unwrap().reached, "{live:?}");
    // A row the loader applied from far ahead: the position is reached and named.
    replica
        .client()
        .unwrap()
        .batch_execute("UPDATE public.accounts SET _cdc_lsn = 9000000000000 WHERE id = 7")
        .unwrap();
    let report = audit(&options(&source, &replica, 1, position), &no_env(), &mut |_| {}).unwrap();
    assert_eq!(report.status, Status::Pass);
    let proven = report.live.as_ref().unwrap().proven_at.clone().expect("reached");
    assert_eq!(proven.replica_applied, "9000000000000");
}

/// A live recheck reads the differing keys back by their printed form, cast to each side's
/// key type: a `(date, integer)` key against `(timestamp, bigint)`, and a `timestamptz` key
/// against a `timestamp`. A key it failed to find on both sides would agree (absent on both)
/// and count as in flight: every planted difference must persist, named as the scan named it.
#[test]
fn a_live_recheck_reads_date_and_timestamp_keys_back_in_each_sides_type() {
    let pair = crate::support::Pair::new(
        "SET TimeZone = 'America/St_Johns'; \
         CREATE TABLE public.facts (day date, store integer, amount numeric, PRIMARY KEY (day, store)); \
         INSERT INTO public.facts VALUES ('2026-07-20', 1, 1), ('2026-07-20', 2, 2), ('0044-03-15 BC', 1, 3), \
         ('infinity', 1, 4); \
         CREATE TABLE public.events (at timestamptz PRIMARY KEY, note text); \
         INSERT INTO public.events VALUES ('2026-07-01 12:00:00.000001+00', 'a'), ('-infinity', 'b'), \
         ('2026-07-01 12:00:00+00', 'c')",
        "CREATE TABLE public.facts (day timestamp, store bigint, amount numeric, PRIMARY KEY (day, store)); \
         INSERT INTO public.facts VALUES ('2026-07-20', 1, -1), ('2026-07-20', 2, 2), ('0044-03-15 BC', 1, 30), \
         ('infinity', 1, 40); \
         CREATE TABLE public.events (at timestamp PRIMARY KEY, note text); \
         INSERT INTO public.events VALUES ('2026-07-01 12:00:00.000001', 'A'), ('-infinity', 'B'), \
         ('2026-07-01 12:00:00', 'c')",
    );
    for (table, key, expected) in [
        (
            "public.facts",
            "day,store",
            json!([
                {"fields": ["amount"], "key": {"day": "0044-03-15T00:00:00Z BC", "store": 1}, "kind": "CHANGED"},
                {"fields": ["amount"], "key": {"day": "2026-07-20T00:00:00Z", "store": 1}, "kind": "CHANGED"},
                {"fields": ["amount"], "key": {"day": "infinity", "store": 1}, "kind": "CHANGED"},
            ]),
        ),
        (
            "public.events",
            "at",
            json!([
                {"fields": ["note"], "id": "-infinity", "kind": "CHANGED"},
                {"fields": ["note"], "id": "2026-07-01T12:00:00.000001Z", "kind": "CHANGED"},
            ]),
        ),
    ] {
        let mut options = pair.options(table);
        options.cutover_ready = false;
        options.key = key.to_owned();
        options.live = Some(Live { settle: Duration::from_secs(1), position: None });
        let report = serde_json::to_value(audit(&options, &no_env(), &mut |_| {}).unwrap()).unwrap();
        assert_eq!(report["status"], json!("BLOCK"), "{table}: {report}");
        assert_eq!(report["examples"], expected, "{table}");
        let persisting = expected.as_array().unwrap().len();
        assert_eq!(
            (&report["live"]["in_flight"], &report["live"]["persisting"]),
            (&json!(0), &json!(persisting)),
            "{table}"
        );
    }
}
