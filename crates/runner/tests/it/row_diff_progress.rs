//! The progress meter a display reads while `row_diff` streams: the expected rows (the exact
//! `row_count` value, else the planner's estimate), the rows streamed, and the attempts done.

use datadiff_diff_core::definition::CheckType;
use datadiff_runner::{ExecutionOptions, InFlight, ProgressMeter, ProgressSnapshot, execute};

use crate::context::{Context, scheduled, slot};
use crate::row_diff::{items_definition, items_sql, lock_replica, wait_for_the_target_stream_to_wait_for_the_lock};

#[test]
fn a_finished_row_diff_counts_its_source_rows_against_the_row_count() {
    // Three source rows in the window [12:00, 13:00), one before it; the replica lacks one.
    let source = items_sql(
        "bigint",
        &[
            ("1", "11:00:00", "1.00", "'before'"),
            ("2", "12:00:00", "2.00", "'a'"),
            ("3", "12:10:00", "3.00", "'b'"),
            ("4", "12:20:00", "4.00", "'c'"),
        ],
    );
    let replica = items_sql("bigint", &[("2", "12:00:00", "2.00", "'a'"), ("3", "12:10:00", "3.00", "'b'")]);
    let context = Context::new(&source, &replica);
    let stored = context.import(&items_definition(&context));
    let meter = ProgressMeter::new();
    let options = ExecutionOptions { progress: Some(meter.clone()), ..Context::options() };
    let summary = execute(&context.store, &context.connections, &stored, slot(), scheduled(), &options).unwrap();
    assert!(summary.run_id.is_some());
    assert_eq!(
        meter.snapshot(),
        ProgressSnapshot {
            attempts_finished: 1,
            rows_streamed: 3,
            rows_expected: 3,
            streams_running: 0,
            streams_hashing: 0,
            parts_total: 0,
            parts_done: 0,
        }
    );
}

#[test]
fn a_running_row_diff_without_a_row_count_expects_the_planners_estimate() {
    // 2,000 rows a second apart from 12:00:01, all in the window, analyzed.
    let sql = "CREATE TABLE public.items (k bigint PRIMARY KEY, updated_at timestamptz, amount numeric(12,2), note text); \
               CREATE INDEX items_updated_at_idx ON public.items (updated_at); \
               INSERT INTO public.items SELECT g, '2026-07-22 12:00:00+00'::timestamptz + g * interval '1 second', g, 'n' \
                 FROM generate_series(1, 2000) AS g; \
               ANALYZE public.items;";
    let context = Context::new(sql, sql);
    let mut definition = items_definition(&context);
    definition.checks = vec![CheckType::SchemaCompatibility];
    let stored = context.import(&definition);
    let meter = ProgressMeter::new();
    let in_flight = InFlight::new();
    let options =
        ExecutionOptions { progress: Some(meter.clone()), in_flight: Some(in_flight.clone()), ..Context::options() };
    let lock = lock_replica(&context);
    let running = std::thread::scope(|scope| {
        let worker =
            scope.spawn(|| execute(&context.store, &context.connections, &stored, slot(), scheduled(), &options));
        wait_for_the_target_stream_to_wait_for_the_lock(&context);
        let running = meter.snapshot();
        in_flight.interrupt_all();
        assert!(worker.join().unwrap().is_err(), "the attempt was interrupted");
        running
    });
    drop(lock);
    // The merge waits for the target's first row: nothing compared yet, the estimate known.
    assert_eq!((running.streams_running, running.rows_streamed, running.attempts_finished), (1, 0, 0));
    assert!((1_000..=4_000).contains(&running.rows_expected), "{running:?}");
    // Over: the expectation is what was streamed, the attempt counted.
    let after = meter.snapshot();
    assert_eq!((after.streams_running, after.attempts_finished), (0, 1));
    assert_eq!(after.rows_expected, after.rows_streamed);
}
