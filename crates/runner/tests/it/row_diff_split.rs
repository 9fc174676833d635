//! A `row_diff` window divided into key ranges (`run --jobs`, `--row-diff-parts`): the
//! attempt's stored result, evidence rows, slot state and watermark are those of the
//! undivided window, with differences planted on the first and last keys of parts, for
//! integer, text and composite keys and both strategies.

use datadiff_diff_core::definition::RowDiffSettings;
use datadiff_diff_core::segment::Strategy;
use datadiff_runner::{ProgressMeter, RowDiffSplit};
use serde_json::Value as Json;

use crate::context::{Context, ResultRow, Watermark};
use crate::row_diff::{StoredDifference, differences, items_definition};

/// 1,200 rows two seconds apart from 12:00:02 (all in the window `[12:00, 13:00)`), keyed by
/// `k` (bigint), `code` (text, unique, some with multi-byte UTF-8) and `(code, line)`.
const SOURCE: &str = "CREATE TABLE public.items (k bigint PRIMARY KEY, code text UNIQUE NOT NULL, line int NOT NULL, \
                      updated_at timestamptz, amount numeric(12,2), note text);
                      CREATE INDEX items_updated_at_idx ON public.items (updated_at);
                      INSERT INTO public.items SELECT g, 'c-' || lpad(g::text, 5, '0') || \
                      CASE WHEN g % 5 = 0 THEN 'ü' ELSE '' END, g % 4, \
                      timestamptz '2026-07-22 12:00:00+00' + g * interval '2 seconds', g * 1.25, 'note ' || g \
                      FROM generate_series(1, 1200) g;
                      INSERT INTO public.items VALUES (5000, 'zz-before', 0, '2026-07-22 11:00:00+00', 1, 'before');";

/// The replica: the source with differences on the first and last keys of the table, on the
/// quantile bounds of 2, 3, 4 and 8 parts (keys 150, 300, 400, 600, 800, 900: the first key
/// of a part) and beside them (the last key of the part before), plus extra keys below,
/// between and above the source's, and a change outside the window (not compared).
const REPLICA_CHANGES: &str = "DELETE FROM public.items WHERE k IN (1, 300, 600, 900, 1200);
                               UPDATE public.items SET note = 'changed' WHERE k IN (2, 150, 299, 399, 400, 799, 1199);
                               UPDATE public.items SET amount = amount + 1 WHERE k IN (301, 800, 801);
                               UPDATE public.items SET note = 'changed' WHERE k = 5000;
                               INSERT INTO public.items VALUES
                                 (0, 'a', 1, '2026-07-22 12:30:00+00', 0, 'extra'),
                                 (1201, 'c-01200x', 1, '2026-07-22 12:30:00+00', 0, 'extra'),
                                 (99999, 'zzz', 1, '2026-07-22 12:59:59+00', 0, 'extra');";

/// What an attempt stored, timings left out: the results, the evidence, the slot state and
/// the watermark.
type Stored = (
    Vec<(String, String, Json, Json, Option<String>)>,
    Vec<StoredDifference>,
    Option<(String, String)>,
    Option<Watermark>,
);

/// The results without their times, and without the run id their error names (each attempt
/// names its own in the command that lists its rows).
fn without_times(rows: Vec<ResultRow>) -> Vec<(String, String, Json, Json, Option<String>)> {
    let own = |error: Option<String>| {
        error.map(|error| error.split(" (datadiff report").next().unwrap_or_default().to_owned())
    };
    rows.into_iter()
        .map(|row| (row.check_type, row.status, row.source_value, row.target_value, own(row.error)))
        .collect()
}

/// A fresh pair of databases with the planted tables, one attempt of `key` (`k`, `code` or
/// `code,line`) with `strategy`, divided as `split` says: what it stored.
fn attempt(key: &str, strategy: Strategy, split: RowDiffSplit, meter: Option<&ProgressMeter>) -> Stored {
    let context = Context::new(SOURCE, &format!("{SOURCE}\n{REPLICA_CHANGES}"));
    let mut definition = items_definition(&context);
    match key {
        "k" => {}
        "code" => {
            definition.source_key_column = "code".into();
            definition.target_key_column = "code".into();
        }
        _ => definition.extensions.key_columns = vec!["code".into(), "line".into()],
    }
    definition.extensions.row_diff = Some(RowDiffSettings::new(100).unwrap().with_strategy(strategy));
    let summary = match meter {
        None => context.run_split(&definition, split, false),
        Some(meter) => context.run_split_metered(&definition, split, meter.clone()),
    };
    let run_id = summary.run_id.expect("an attempt");
    let slot = context.slot_state(run_id).map(|(status, start, end)| (status, format!("{start:?} {end:?}")));
    (without_times(context.result_rows(run_id)), differences(&context, run_id), slot, context.watermark(&summary))
}

#[test]
fn a_divided_window_stores_the_results_evidence_slot_and_watermark_of_the_undivided_one() {
    for key in ["k", "code", "code,line"] {
        for strategy in [Strategy::Stream, Strategy::Segments] {
            let whole = attempt(key, strategy, RowDiffSplit { parts: 1, jobs: 1 }, None);
            let (results, evidence, slot, watermark) = &whole;
            let row_diff = results.iter().find(|row| row.0 == "row_diff").expect("a row_diff result");
            assert_eq!(row_diff.1, "FAIL", "{key} {strategy}: {row_diff:?}");
            assert_eq!(evidence.len(), 18, "{key} {strategy}: 5 missing, 10 changed, 3 extra: {evidence:?}");
            assert!(slot.is_some() && watermark.is_some(), "{key} {strategy}: {slot:?} {watermark:?}");
            // More parts than rows (every part a connection pair per side) is the
            // differential harness's case, on its small tables.
            for (parts, jobs) in [(2, 2), (8, 3), (64, 4)] {
                let divided = attempt(key, strategy, RowDiffSplit { parts, jobs }, None);
                assert_eq!(divided, whole, "--key {key} --strategy {strategy}: {parts} parts on {jobs} threads");
            }
        }
    }
}

#[test]
fn a_divided_window_counts_its_parts_and_rows_on_the_progress_meter() {
    for strategy in [Strategy::Stream, Strategy::Segments] {
        let meter = ProgressMeter::new();
        attempt("k", strategy, RowDiffSplit { parts: 4, jobs: 2 }, Some(&meter));
        let after = meter.snapshot();
        assert_eq!((after.parts_total, after.parts_done), (4, 4), "{strategy}: {after:?}");
        // Every source row of the window is compared once: streamed or proven by its hashes.
        assert_eq!((after.rows_streamed, after.rows_expected), (1200, 1200), "{strategy}: {after:?}");
        assert_eq!((after.streams_running, after.streams_hashing), (0, 0), "{strategy}: {after:?}");
    }
}

/// The parts of a divided window are a queue in the backend (extension 3): the division and
/// its parts are stored, each part claimed and finished by this process (one `host:pid`) with
/// its outcome; a backend without the part table compares the window as one unit, storing
/// the same result and evidence.
#[test]
fn a_divided_window_is_worked_through_the_backends_part_queue_or_is_one_unit_without_it() {
    let definition = |context: &Context| {
        let mut definition = items_definition(context);
        definition.extensions.row_diff = Some(RowDiffSettings::new(100).unwrap().with_strategy(Strategy::Stream));
        definition
    };
    let stored = |context: &Context, run_id| (without_times(context.result_rows(run_id)), differences(context, run_id));

    let queued = Context::new(SOURCE, &format!("{SOURCE}\n{REPLICA_CHANGES}"));
    let run_id = queued.run_split(&definition(&queued), RowDiffSplit { parts: 4, jobs: 2 }, false).run_id.unwrap();
    let mut backend = queued.backend_sql();
    let division = backend
        .query_one(
            "SELECT part_count, split_key, strategy, created_by FROM public.datadiff_run_divisions WHERE run_id = $1",
            &[&run_id.get()],
        )
        .unwrap();
    let (count, split_key, strategy, created_by): (i32, String, String, String) =
        (division.get(0), division.get(1), division.get(2), division.get(3));
    assert_eq!((count, split_key.as_str(), strategy.as_str()), (4, "int", "stream"));
    assert!(created_by.ends_with(&format!(":{}", std::process::id())), "{created_by}");
    let parts = backend
        .query(
            "SELECT part_index, claimed_by, finished_at IS NOT NULL, (outcome ->> 'matched')::bigint \
                    + (outcome ->> 'missing')::bigint + (outcome ->> 'changed')::bigint \
               FROM public.datadiff_run_parts WHERE run_id = $1 ORDER BY part_index",
            &[&run_id.get()],
        )
        .unwrap();
    assert_eq!(parts.len(), 4);
    let mut source_rows = 0;
    for (index, part) in parts.iter().enumerate() {
        assert_eq!(part.get::<_, i32>(0), index as i32);
        assert_eq!(part.get::<_, Option<String>>(1).as_deref(), Some(created_by.as_str()));
        assert!(part.get::<_, bool>(2), "part {index} finished");
        source_rows += part.get::<_, i64>(3);
    }
    let (results, evidence) = stored(&queued, run_id);
    let row_diff = results.iter().find(|row| row.0 == "row_diff").expect("a row_diff result");
    assert_eq!(row_diff.2["rows"], Json::String(source_rows.to_string()), "the parts' source rows: {row_diff:?}");

    let unit = Context::new(SOURCE, &format!("{SOURCE}\n{REPLICA_CHANGES}"));
    unit.backend_sql()
        .batch_execute(
            "DROP TABLE public.datadiff_run_parts; DROP TABLE public.datadiff_run_divisions; \
             DELETE FROM public.datadiff_schema_migrations WHERE version = 3",
        )
        .unwrap();
    let alone = unit.run_split(&definition(&unit), RowDiffSplit { parts: 4, jobs: 2 }, false).run_id.unwrap();
    assert_eq!(stored(&unit, alone), (results, evidence));
}
