//! Re-verified history (`checks.<name>.reverify`): PASS slots verified longer ago than the
//! period are attempted again after the due slots, least recently attempted first, within the
//! per-tick budget, as MANUAL attempts reusing the slot's bounds — asserted on the backend's
//! attempts, slot states, watermark and events, over simulated hourly ticks.

use std::collections::BTreeMap;

use chrono::{DateTime, TimeDelta, Utc};
use datadiff_diff_core::attempt::{Reverify, TriggerType};
use datadiff_diff_core::definition::Duration;
use datadiff_runner::{SummaryStatus, TickContext};

use crate::context::{Context, at, while_a_writer_runs};
use crate::tick::{tick_at, ticker};

/// Every attempt of the check: `(scheduled_for, attempt, trigger, status, window_start,
/// window_end, started_at)`, by slot and attempt.
type AttemptLine = (DateTime<Utc>, i32, String, String, Option<DateTime<Utc>>, DateTime<Utc>, DateTime<Utc>);

fn attempts(context: &Context) -> Vec<AttemptLine> {
    context
        .backend_sql()
        .query(
            "SELECT scheduled_for, attempt, trigger_type, status, window_start, window_end, started_at \
               FROM public.dd_run_attempts ORDER BY scheduled_for, attempt",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3), row.get(4), row.get(5), row.get(6)))
        .collect()
}

/// `(verified_status, verified_end, event types in order)`.
fn watermark(context: &Context) -> (String, Option<DateTime<Utc>>, Vec<String>) {
    let mut sql = context.backend_sql();
    let state = sql.query_one("SELECT verified_status, verified_end FROM public.dd_watermark_state", &[]).unwrap();
    let events = sql
        .query("SELECT event_type FROM public.dd_watermark_events ORDER BY event_sequence", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    (state.get(0), state.get(1), events)
}

/// A ticker with `reverify` for the fixtures' definition.
fn reverifying(context: &Context, period_hours: i64, per_tick: usize) -> TickContext {
    let name = context.definition().full_check_name;
    let reverify = Reverify { period: Duration::from_seconds(period_hours * 3600), per_tick };
    ticker(context).with_reverify(BTreeMap::from([(name, reverify)]))
}

/// The MANUAL attempts a tick made, as `(slot, status)`.
fn manual(report: &datadiff_runner::TickReport) -> Vec<(DateTime<Utc>, SummaryStatus)> {
    report
        .summaries
        .iter()
        .filter(|summary| summary.trigger == Some(TriggerType::Manual))
        .map(|summary| (summary.scheduled_for.unwrap(), summary.status))
        .collect()
}

/// The issue's case: a row last updated inside an already verified window is deleted on the
/// source and the delete never reaches the replica. Later slots PASS and the watermark says
/// CONTIGUOUS; the re-verification of the old slot, due once the period has passed, FAILs it:
/// the watermark leaves CONTIGUOUS (INVALIDATE, verified end back to the failed window's
/// start), the tick's summary is a FAIL (what `run` exits 1 and alerts on).
#[test]
fn a_lost_delete_inside_a_verified_window_is_found_within_the_period() {
    let context = Context::pipelinewise();
    context.import(&context.definition());
    let period = 6;
    let mut ticker = reverifying(&context, period, 2);
    let verified = tick_at(&mut ticker, at(13, 5));
    assert_eq!(verified.summaries[0].status, SummaryStatus::Pass, "[12:00, 13:00) verified");
    // Row 4 was last updated at 12:30: the source deletes it, the replica never hears of it.
    context.source.client().unwrap().batch_execute(r#"DELETE FROM public."Transfers" WHERE "Id" = 4"#).unwrap();

    let mut found = None;
    for hour in 14..=23 {
        let now = at(hour, 5);
        let report = tick_at(&mut ticker, now);
        let reverified = manual(&report);
        if reverified.is_empty() {
            // Nothing re-verified yet: every slot passes, the watermark claims CONTIGUOUS.
            assert!(report.summaries.iter().all(|summary| summary.status == SummaryStatus::Pass), "{report:#?}");
            assert_eq!(watermark(&context).0, "CONTIGUOUS");
            assert!(now - at(13, 5) <= TimeDelta::hours(period), "no re-verification once the period passed");
            continue;
        }
        assert_eq!(reverified, [(at(13, 0), SummaryStatus::Fail)], "at {now}");
        assert!(report.has_failures(), "a FAIL like any other: run exits 1 and alerts");
        found = Some(now);
        break;
    }
    let found = found.expect("the lost delete was found");
    // Found at the first tick after the period: within the period plus one cron interval.
    assert_eq!(found, at(20, 5));
    assert!(found - at(13, 5) <= TimeDelta::hours(period + 1));

    // The backend: a MANUAL attempt 2 of the 13:00 slot with the slot's own bounds, FAIL; the
    // slot's state is that attempt; the watermark is BLOCKED at the failed window's start.
    let rows = attempts(&context);
    let slot = rows.iter().filter(|row| row.0 == at(13, 0)).cloned().collect::<Vec<_>>();
    assert_eq!(
        slot,
        [
            (at(13, 0), 1, "SCHEDULED".into(), "PASS".into(), Some(at(12, 0)), at(13, 0), at(13, 5)),
            (at(13, 0), 2, "MANUAL".into(), "FAIL".into(), Some(at(12, 0)), at(13, 0), at(20, 5)),
        ]
    );
    let state: (String, i32) = context
        .backend_sql()
        .query_one("SELECT status, attempt FROM public.dd_run_slot_state WHERE scheduled_for = $1", &[&at(13, 0)])
        .map(|row| (row.get(0), row.get(1)))
        .unwrap();
    assert_eq!(state, ("FAIL".to_owned(), 2));
    let (status, verified_end, events) = watermark(&context);
    assert_eq!((status.as_str(), verified_end), ("BLOCKED", Some(at(12, 0))));
    assert_eq!(events.last().map(String::as_str), Some("INVALIDATE"), "{events:?}");
    assert!(events[..events.len() - 1].iter().all(|event| event != "INVALIDATE" && event != "BLOCK"), "{events:?}");
    let row_count: (serde_json::Value, serde_json::Value, String) = context
        .backend_sql()
        .query_one(
            "SELECT r.source_value, r.target_value, r.status FROM public.dd_run_results r \
               JOIN public.dd_run_attempts a USING (run_id) \
              WHERE a.scheduled_for = $1 AND a.attempt = 2 AND r.check_type = 'row_count'",
            &[&at(13, 0)],
        )
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .unwrap();
    assert_eq!(row_count, (serde_json::json!("4"), serde_json::json!("5"), "FAIL".to_owned()));
}

/// Nothing planted: re-verifications PASS and coverage stays CONTIGUOUS; a backlog is worked
/// off at most `per_tick` slots per tick, least recently attempted first; a slot re-verified is
/// not due again before another period; without `reverify` nothing is re-attempted.
#[test]
fn faithful_history_reverifies_within_the_budget_and_keeps_coverage() {
    let context = Context::pipelinewise();
    context.import(&context.definition());
    let mut plain = ticker(&context);
    for hour in 13..=16 {
        tick_at(&mut plain, at(hour, 5));
    }
    // Without reverify, old slots are never looked at again.
    let report = tick_at(&mut plain, at(23, 5));
    assert!(manual(&report).is_empty());
    assert_eq!(attempts(&context).len(), 11, "slots 13:00 to 23:00, one attempt each");
    let before = watermark(&context);
    assert_eq!((before.0.as_str(), before.1), ("CONTIGUOUS", Some(at(23, 0))));

    // With reverify (4 h, 2 per tick) at 23:35: slots 13:00–19:00 were last attempted before
    // 19:35; the two least recently attempted go first.
    let mut ticker = reverifying(&context, 4, 2);
    let report = tick_at(&mut ticker, at(23, 35));
    assert_eq!(manual(&report), [(at(13, 0), SummaryStatus::Pass), (at(14, 0), SummaryStatus::Pass)]);
    let report = tick_at(&mut ticker, at(23, 40));
    assert_eq!(manual(&report), [(at(15, 0), SummaryStatus::Pass), (at(16, 0), SummaryStatus::Pass)]);
    // Slots 17:00–23:00 were caught up at 23:05, and 13:00–16:00 were just re-verified: none
    // is due at 23:45.
    let report = tick_at(&mut ticker, at(23, 45));
    assert!(manual(&report).is_empty(), "{report:#?}");
    // Every MANUAL attempt reused its slot's bounds and passed; the coverage is untouched.
    for row in attempts(&context).iter().filter(|row| row.2 == "MANUAL") {
        assert_eq!((row.1, row.3.as_str(), row.4, row.5), (2, "PASS", Some(row.0 - TimeDelta::hours(1)), row.0));
    }
    let after = watermark(&context);
    assert_eq!((after.0.as_str(), after.1), ("CONTIGUOUS", Some(at(23, 0))));
    assert!(!after.2.contains(&"INVALIDATE".to_owned()) && !after.2.contains(&"BLOCK".to_owned()), "{:?}", after.2);
}

/// The issue's case over native logical replication with a writer running throughout: a
/// delete that never reached the subscriber (the row re-appears there, inside a window already
/// verified) is found by the re-verification within the period, and the watermark leaves
/// CONTIGUOUS; until then every slot passes.
#[test]
fn a_lost_delete_on_a_logical_replica_is_found_within_the_period_while_a_writer_runs() {
    use datadiff_diff_core::definition::{CheckDefinition, CheckType};
    use datadiff_testkit::{Cluster, ClusterOptions, LogicalReplication};

    const DDL: &str = "
        CREATE TABLE public.orders (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, amount numeric(12,2));
        CREATE INDEX ON public.orders (updated_at);
        CREATE TABLE public.noise (id bigserial PRIMARY KEY, note text);
    ";
    let source_cluster: &'static Cluster =
        Box::leak(Box::new(Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap()));
    let replica_cluster: &'static Cluster = Box::leak(Box::new(Cluster::start().unwrap()));
    let context = Context::with_sides_apart(source_cluster, replica_cluster, DDL, DDL);
    let mut source = context.source.client().unwrap();
    // The 13:00 slot's window [12:00, 13:00) holds rows 1-3.
    for (id, minute) in [(1i64, 10), (2, 30), (3, 59)] {
        source
            .execute("INSERT INTO public.orders VALUES ($1::bigint, $2, $1::bigint * 1.25)", &[&id, &at(12, minute)])
            .unwrap();
    }
    let replication = LogicalReplication::start(
        &context.source,
        &context.replica,
        "reverify_sub",
        &["public.orders", "public.noise"],
    )
    .unwrap();
    replication.wait_caught_up().unwrap();
    let definition = CheckDefinition {
        full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", "public", "orders"),
        source_schema: "public".into(),
        source_table: "orders".into(),
        target_schema: "public".into(),
        target_table: "orders".into(),
        source_key_column: "id".into(),
        target_key_column: "id".into(),
        source_timestamp_column: "updated_at".into(),
        target_timestamp_column: "updated_at".into(),
        source_compare_columns: vec!["amount".into()],
        target_compare_columns: vec!["amount".into()],
        checks: vec![CheckType::RowCount],
        ..context.definition()
    };
    context.import(&definition);
    let period = 6;
    let reverify = Reverify { period: Duration::from_seconds(period * 3600), per_tick: 2 };
    let mut ticker = ticker(&context).with_reverify(BTreeMap::from([(definition.full_check_name.clone(), reverify)]));

    while_a_writer_runs(&context.source, || {
        let verified = tick_at(&mut ticker, at(13, 5));
        assert_eq!(verified.summaries[0].status, SummaryStatus::Pass, "[12:00, 13:00) verified: {verified:#?}");
        // Row 2 (12:30) is deleted on the source; replication applies the delete, and the
        // subscriber gets the row back: the replica keeps a row its source deleted.
        source.execute("DELETE FROM public.orders WHERE id = 2", &[]).unwrap();
        replication.wait_caught_up().unwrap();
        context
            .replica
            .client()
            .unwrap()
            .execute("INSERT INTO public.orders VALUES (2, $1, 2.50)", &[&at(12, 30)])
            .unwrap();

        let mut found = None;
        for hour in 14..=23 {
            let now = at(hour, 5);
            let report = tick_at(&mut ticker, now);
            let reverified = manual(&report);
            if reverified.is_empty() {
                assert!(report.summaries.iter().all(|summary| summary.status == SummaryStatus::Pass), "{report:#?}");
                assert_eq!(watermark(&context).0, "CONTIGUOUS");
                continue;
            }
            assert_eq!(reverified, [(at(13, 0), SummaryStatus::Fail)], "at {now}");
            assert!(report.has_failures());
            found = Some(now);
            break;
        }
        assert_eq!(found, Some(at(20, 5)), "found at the first tick after the period");
        let (status, verified_end, events) = watermark(&context);
        assert_eq!((status.as_str(), verified_end), ("BLOCKED", Some(at(12, 0))));
        assert_eq!(events.last().map(String::as_str), Some("INVALIDATE"), "{events:?}");
        let counts: (serde_json::Value, serde_json::Value) = context
            .backend_sql()
            .query_one(
                "SELECT r.source_value, r.target_value FROM public.dd_run_results r \
                   JOIN public.dd_run_attempts a USING (run_id) \
                  WHERE a.scheduled_for = $1 AND a.attempt = 2 AND r.check_type = 'row_count'",
                &[&at(13, 0)],
            )
            .map(|row| (row.get(0), row.get(1)))
            .unwrap();
        assert_eq!(counts, (serde_json::json!("2"), serde_json::json!("3")));
    });
}
