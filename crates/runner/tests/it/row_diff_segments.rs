//! `row_diff` with the segment strategy: the same backend rows as the stream strategy —
//! counts, differences in key order, the FAIL text — for integer and uuid keys, identical
//! and drifted windows, rows outside the window and soft deletes left out as streams do.

use datadiff_diff_core::{definition::RowDiffSettings, segment::Strategy};
use serde_json::Value as Json;

use datadiff_runner::{ExecutionOptions, InFlight, execute};

use crate::context::{Context, counts, result, scheduled, slot};
use crate::row_diff::{
    StoredDifference, differences, items_definition, lock_replica, wait_for_the_target_stream_to_wait_for_the_lock,
};

/// What one attempt stored: the row_diff result's values and status, the attempt's error,
/// the differences.
fn stored(context: &Context, strategy: Strategy) -> (String, Json, Json, Option<String>, Vec<StoredDifference>) {
    let mut definition = items_definition(context);
    definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(strategy));
    let summary = context.run(&definition);
    let run_id = summary.run_id.unwrap();
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    let error = context
        .attempt_row(run_id)
        .error
        .map(|text| text.split(" (datadiff report").next().unwrap_or_default().to_owned());
    (
        row_diff.status.clone(),
        row_diff.source_value.clone(),
        counts(&row_diff.target_value),
        error,
        differences(context, run_id),
    )
}

/// `public.items` with `rows` keys in the window `[12:00, 13:00)` and a few outside it.
fn items(key: &str, rows: i64) -> String {
    format!(
        "CREATE TABLE public.items (k {key} PRIMARY KEY, updated_at timestamptz, amount numeric(12,2), note text); \
         INSERT INTO public.items SELECT {key_of_g}, '2026-07-22 12:00:00+00'::timestamptz + (g % 3600) * interval '1 second', \
         g / 100.0, 'note ' || g FROM generate_series(1, {rows}) g; \
         INSERT INTO public.items SELECT {key_of_minus_g}, '2026-07-22 11:00:00+00', 0, 'before' FROM generate_series(1, 50) g;",
        key_of_g = key_expression(key, "g"),
        key_of_minus_g = key_expression(key, "-g"),
    )
}

fn key_expression(key: &str, g: &str) -> String {
    match key {
        "uuid" => format!("md5(({g})::text)::uuid"),
        _ => g.to_owned(),
    }
}

fn both_strategies_agree(key: &str, drift: &str) -> (String, Json, Vec<StoredDifference>) {
    let sql = items(key, 20_000);
    let context = Context::new(&sql, &sql);
    context.replica.client().unwrap().batch_execute(drift).unwrap();
    let streamed = stored(&context, Strategy::Stream);
    let segmented = stored(&context, Strategy::Segments);
    assert_eq!(segmented, streamed);
    (segmented.0, segmented.2, segmented.4)
}

#[test]
fn integer_keys_give_the_stream_strategys_rows() {
    let drift = "DELETE FROM public.items WHERE k IN (17, 9001); UPDATE public.items SET note = NULL WHERE k = 12000; \
                 UPDATE public.items SET amount = amount + 1 WHERE k = 12001; \
                 INSERT INTO public.items VALUES (30000, '2026-07-22 12:30:00+00', 1, 'extra'); \
                 UPDATE public.items SET note = 'outside' WHERE k = -3;";
    let (status, target, differences) = both_strategies_agree("bigint", drift);
    assert_eq!(status, "FAIL");
    assert_eq!(target, serde_json::json!({"rows": "19999", "missing": "2", "extra": "1", "changed": "2"}));
    assert_eq!(differences.len(), 5);
}

#[test]
fn uuid_keys_give_the_stream_strategys_rows() {
    let drift = "UPDATE public.items SET note = '' WHERE k = md5('77')::uuid; \
                 DELETE FROM public.items WHERE k = md5('19999')::uuid;";
    let (status, target, differences) = both_strategies_agree("uuid", drift);
    assert_eq!(status, "FAIL");
    assert_eq!(target, serde_json::json!({"rows": "19999", "missing": "1", "extra": "0", "changed": "1"}));
    assert_eq!(differences.len(), 2);
}

#[test]
fn identical_windows_pass_with_every_row_counted() {
    let (status, target, differences) =
        both_strategies_agree("bigint", "UPDATE public.items SET note = 'x' WHERE k = -1");
    assert_eq!(status, "PASS");
    assert_eq!(target, serde_json::json!({"rows": "20000", "missing": "0", "extra": "0", "changed": "0"}));
    assert!(differences.is_empty());
}

#[test]
fn swapped_notes_and_a_negated_amount_fail_the_window_in_both_strategies() {
    // A segment's digest was a plain sum of linear row hashes, and a numeric's hash ignores
    // its sign: this drift PASSed under segments and advanced the watermark.
    let drift = "UPDATE public.items SET note = CASE k WHEN 1 THEN 'note 2' ELSE 'note 1' END WHERE k IN (1, 2); \
                 UPDATE public.items SET amount = -amount WHERE k = 3;";
    let (status, target, differences) = both_strategies_agree("bigint", drift);
    assert_eq!(status, "FAIL");
    assert_eq!(target, serde_json::json!({"rows": "20000", "missing": "0", "extra": "0", "changed": "3"}));
    let keys: Vec<&Json> = differences.iter().map(|difference| &difference.2["k"]).collect();
    assert_eq!(keys, [&Json::from("1"), &Json::from("2"), &Json::from("3")]);
}

#[test]
fn the_strategy_and_why_are_stored_with_the_result() {
    let sql = items("bigint", 20_000);
    let context = Context::new(&sql, &sql);
    let strategy_of = |strategy: Strategy| {
        let mut definition = items_definition(&context);
        definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(strategy));
        let run_id = context.run(&definition).run_id.unwrap();
        let target = result(&context.result_rows(run_id), "row_diff").target_value.clone();
        (target["strategy"].clone(), target["strategy_reason"].clone())
    };
    assert_eq!(strategy_of(Strategy::Segments), (Json::from("segments"), Json::from("segments requested")));
    assert_eq!(strategy_of(Strategy::Stream), (Json::from("stream"), Json::from("stream requested")));
    // The definition counts its rows first: auto knows the window holds 20,000 rows, and both
    // servers are on this machine.
    let (strategy, reason) = strategy_of(Strategy::Auto);
    assert_eq!(strategy, "stream");
    assert_eq!(
        reason,
        "auto: both links are fast (source on this machine, target on this machine; streams from 400 MB/s)"
    );
}

#[test]
fn an_interruption_cancels_the_hashing_statements() {
    let sql = items(key_type(), 100);
    let context = Context::new(&sql, &sql);
    let mut definition = items_definition(&context);
    definition.checks = vec![datadiff_diff_core::definition::CheckType::SchemaCompatibility];
    // Far longer than the guard below: only a cancel ends the wait in time.
    definition.statement_timeout_seconds = 900;
    definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(Strategy::Segments));
    let stored = context.import(&definition);
    let in_flight = InFlight::new();
    let options = ExecutionOptions { in_flight: Some(in_flight.clone()), ..Context::options() };
    let lock = lock_replica(&context);
    let mut client = context.replica.client().unwrap();
    let waiting = |client: &mut postgres::Client| -> i64 {
        client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0)
    };
    let result = std::thread::scope(|scope| {
        let worker =
            scope.spawn(|| execute(&context.store, &context.connections, &stored, slot(), scheduled(), &options));
        // The target's overview waits for the lock: no stream has started.
        wait_for_the_target_stream_to_wait_for_the_lock(&context);
        in_flight.interrupt_all();
        // Cancelled: nothing waits for the lock any more while it is still held (a guard of
        // two minutes, not a timing assertion).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while waiting(&mut client) > 0 {
            assert!(std::time::Instant::now() < deadline, "the interrupted hashing still waits for the lock");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        worker.join().unwrap()
    });
    assert!(matches!(result, Err(datadiff_runner::Error::Interrupted { .. })), "{result:?}");
    drop(lock);
}

fn key_type() -> &'static str {
    "bigint"
}
