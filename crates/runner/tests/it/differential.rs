//! The differential harness, `row_diff`'s part: the audit's cases (`cases.rs`, shared with the
//! audit's tests) run as scheduled checks, once with the `stream` strategy and once with
//! `segments`; both stored answers — the result's counts and the evidence rows — must be the
//! oracle's. `DATADIFF_DIFFERENTIAL_SEED`, `DATADIFF_DIFFERENTIAL_CASES` and
//! `DATADIFF_DIFFERENTIAL_CASE` choose the run, as for the audit's.

use datadiff_diff_core::definition::RowDiffSettings;
use datadiff_diff_core::segment::Strategy;
use datadiff_runner::RowDiffSplit;
use serde_json::{Value as Json, json};

use crate::cases::{Case, Expected, KeyKind, Kind, OracleKey, run_plan};
use crate::context::{Context, counts, result};
use crate::row_diff::{StoredDifference, differences, items_definition};

/// Cases per run in CI (each is two scheduled attempts over two fresh tables).
const CASES: u64 = 20;

/// Text-key cases per run in CI.
const TEXT_CASES: u64 = 12;

/// Composite-key cases per run in CI.
const COMPOSITE_CASES: u64 = 12;

/// Every row sits in the window `[12:00, 13:00)` the context's slot checks.
const UPDATED_AT: (&str, &str, &str) = ("updated_at", "timestamptz", "'2026-07-22 12:30:00+00'");

/// An answer as `row_diff` stores it: the result's counts, the evidence rows.
type Stored = (Json, Vec<StoredDifference>);

/// The oracle's answer as `row_diff` stores it.
fn stored_of(expected: &Expected) -> Stored {
    let counts = json!({
        "rows": (expected.matched + expected.extra + expected.changed).to_string(),
        "missing": expected.missing.to_string(),
        "extra": expected.extra.to_string(),
        "changed": expected.changed.to_string(),
    });
    fn part(key: &OracleKey) -> String {
        match key {
            OracleKey::Int(value) => value.to_string(),
            OracleKey::Text(text) => text.clone(),
            OracleKey::Instant(micros) => crate::cases::instant_report(*micros),
            OracleKey::Day(days) => crate::cases::day_report(*days),
            OracleKey::Pair(..) => unreachable!("a composite key is not a part"),
        }
    }
    // Every key column by name: `{"id": …}`, or `{"id": …, "id2": …}` for a composite key.
    let key = |key: &OracleKey| match key {
        OracleKey::Pair(first, second) => json!({"id": part(first), "id2": part(second)}),
        single => json!({"id": part(single)}),
    };
    let evidence = expected
        .examples
        .iter()
        .enumerate()
        .map(|(index, (kind, id, fields))| {
            let kind = match kind {
                Kind::Missing => "MISSING_IN_TARGET",
                Kind::Extra => "EXTRA_IN_TARGET",
                Kind::Changed => "CHANGED",
            };
            (index as i32 + 1, kind.to_owned(), key(id), fields.clone())
        })
        .collect();
    (counts, evidence)
}

/// One case's attempt with `strategy`: the stored counts and evidence, and the strategy the
/// attempt used.
fn stored(context: &Context, case: &Case, strategy: Strategy) -> Result<(Stored, Option<String>), String> {
    let mut definition = items_definition(context);
    definition.source_table = "cases".into();
    definition.target_table = "cases".into();
    definition.source_key_column = "id".into();
    definition.target_key_column = "id".into();
    let columns: Vec<String> = (0..case.pairs.len()).map(|column| format!("c{column}")).collect();
    definition.source_compare_columns = columns.clone();
    definition.target_compare_columns = columns;
    // A composite key is row_diff's `key_columns`; `key_column` stays its first column.
    let key_columns = case.key.columns();
    if key_columns.len() > 1 {
        definition.extensions.key_columns = key_columns.iter().map(|(name, _, _)| (*name).to_owned()).collect();
    }
    let settings = RowDiffSettings::new(case.max_examples as u32)
        .ok_or("max_examples out of range")?
        .with_empty_string_as_null(case.empty_string_as_null)
        .with_strategy(strategy);
    definition.extensions.row_diff = Some(settings);
    let run_id = context.run(&definition).run_id.ok_or("no attempt")?;
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    if let Some(error) = row_diff.error.as_ref().filter(|_| row_diff.status == "ERROR") {
        return Err(format!("row_diff ERROR: {error}"));
    }
    let used = row_diff.target_value.get("strategy").and_then(Json::as_str).map(str::to_owned);
    Ok(((counts(&row_diff.target_value), differences(context, run_id)), used))
}

/// Whether both strategies' answers are the oracle's; `Ok(true)` when the `segments` attempt
/// hashed (rather than streamed the rows it could not hash).
fn check(context: &Context, case: &Case) -> Result<bool, String> {
    let source = case.create_sql(false, &[UPDATED_AT]);
    let replica = case.create_sql(true, &[UPDATED_AT]);
    context.source.client().unwrap().batch_execute(&source).map_err(|error| format!("source: {error}"))?;
    context.replica.client().unwrap().batch_execute(&replica).map_err(|error| format!("replica: {error}"))?;
    let expected = stored_of(&case.expected());
    let mut hashed = false;
    for strategy in [Strategy::Stream, Strategy::Segments] {
        let (answer, used) = stored(context, case, strategy)?;
        if answer != expected {
            return Err(format!("{strategy} disagrees with the oracle:\n {strategy} {answer:?}\n oracle {expected:?}"));
        }
        hashed |= strategy == Strategy::Segments && used.as_deref() == Some("segments");
    }
    Ok(hashed)
}

#[test]
fn row_diff_segments_stream_and_the_oracle_agree_on_random_tables_and_mutations() {
    let (seed, numbers) = run_plan(CASES);
    let context = Context::new("SELECT 1", "SELECT 1");
    for index in numbers {
        let case = crate::cases::case(seed, index);
        // row_diff needs a compare column and rows to stream for its window: every case has
        // both or none (an empty table is a PASS of 0 rows on both).
        if let Err(disagreement) = check(&context, &case) {
            panic!(
                "the differential harness found a disagreement: rerun with DATADIFF_DIFFERENTIAL_SEED={seed:#x} \
                 DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            );
        }
    }
}

/// The same over text keys: bytewise order, keys sharing prefixes longer than eight bytes,
/// keys differing only after byte 8, multi-byte UTF-8 and the empty key, hashed by segments
/// of their text positions.
#[test]
fn row_diff_segments_stream_and_the_oracle_agree_on_text_keys() {
    let (seed, numbers) = run_plan(TEXT_CASES);
    let context = Context::new("SELECT 1", "SELECT 1");
    for index in numbers {
        let case = crate::cases::text_case(seed, index, &KeyKind::SINGLE_TEXT);
        if let Err(disagreement) = check(&context, &case) {
            panic!(
                "the differential harness found a disagreement over a text key: rerun \
                 row_diff_segments_stream_and_the_oracle_agree_on_text_keys with DATADIFF_DIFFERENTIAL_SEED={seed:#x} \
                 DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            );
        }
    }
}

/// The same over composite keys as `key_columns`: `(integer, integer)` (a line item's
/// `(order_id, line_no)`, the replica's first column `bigint`) and `(text, integer)` (a link
/// table's, the replica's `(varchar, bigint)`), with rows lost, deleted, changed, swapped and
/// moved between key parts — `(1, 2)` to `(2, 1)`, or to another second part of the same
/// first part, which only the key's second column tells apart. Segments must hash some of
/// them (on the first column's positions).
#[test]
fn row_diff_segments_stream_and_the_oracle_agree_on_composite_keys() {
    let (seed, numbers) = run_plan(COMPOSITE_CASES);
    let replaying = numbers.len() == 1;
    let context = Context::new("SELECT 1", "SELECT 1");
    let mut hashed = 0;
    for index in numbers {
        let case = crate::cases::composite_case(seed, index);
        match check(&context, &case) {
            Ok(segmented) => hashed += u32::from(segmented),
            Err(disagreement) => panic!(
                "the differential harness found a disagreement over a composite key: rerun \
                 row_diff_segments_stream_and_the_oracle_agree_on_composite_keys with \
                 DATADIFF_DIFFERENTIAL_SEED={seed:#x} DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            ),
        }
    }
    assert!(hashed > 0 || replaying, "no composite case was hashed by segments");
}

/// The same over keys whose bytes share a prefix longer than a segment position, and over
/// uuid keys: both sides position text keys after the prefix they share.
#[test]
fn row_diff_segments_stream_and_the_oracle_agree_on_keys_sharing_a_long_prefix_and_uuids() {
    let (seed, numbers) = run_plan(TEXT_CASES);
    let context = Context::new("SELECT 1", "SELECT 1");
    for index in numbers {
        let case = crate::cases::text_case(seed, index, &KeyKind::SHARED_PREFIX);
        if let Err(disagreement) = check(&context, &case) {
            panic!(
                "the differential harness found a disagreement over keys sharing a long prefix: rerun \
                 row_diff_segments_stream_and_the_oracle_agree_on_keys_sharing_a_long_prefix_and_uuids with \
                 DATADIFF_DIFFERENTIAL_SEED={seed:#x} DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            );
        }
    }
}

/// Split cases per key shape, per run in CI: one (each case stores eight attempts per key
/// shape, a part's connections each, over 7 minutes for three on two cores);
/// `DATADIFF_DIFFERENTIAL_CASES` runs more.
const SPLIT_CASES: u64 = 1;

/// One case's attempt with its window divided as `split` says: the stored counts and
/// evidence (a MANUAL attempt: the slot was attempted before).
fn stored_split(context: &Context, case: &Case, strategy: Strategy, split: RowDiffSplit) -> Result<Stored, String> {
    let mut definition = items_definition(context);
    definition.source_table = "cases".into();
    definition.target_table = "cases".into();
    definition.source_key_column = "id".into();
    definition.target_key_column = "id".into();
    let columns: Vec<String> = (0..case.pairs.len()).map(|column| format!("c{column}")).collect();
    definition.source_compare_columns = columns.clone();
    definition.target_compare_columns = columns;
    let key_columns = case.key.columns();
    if key_columns.len() > 1 {
        definition.extensions.key_columns = key_columns.iter().map(|(name, _, _)| (*name).to_owned()).collect();
    }
    let settings = RowDiffSettings::new(case.max_examples as u32)
        .ok_or("max_examples out of range")?
        .with_empty_string_as_null(case.empty_string_as_null)
        .with_strategy(strategy);
    definition.extensions.row_diff = Some(settings);
    let run_id = context.run_split(&definition, split, true).run_id.ok_or("no attempt")?;
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    if let Some(error) = row_diff.error.as_ref().filter(|_| row_diff.status == "ERROR") {
        return Err(format!("row_diff ERROR: {error}"));
    }
    Ok((counts(&row_diff.target_value), differences(context, run_id)))
}

/// A case divided into 2 and 3 parts and into more parts than rows, on one to three threads,
/// with both strategies: every stored answer is the oracle's (as the undivided window's is,
/// by the tests above).
fn check_split(context: &Context, case: &Case) -> Result<(), String> {
    let source = case.create_sql(false, &[UPDATED_AT]);
    let replica = case.create_sql(true, &[UPDATED_AT]);
    context.source.client().unwrap().batch_execute(&source).map_err(|error| format!("source: {error}"))?;
    context.replica.client().unwrap().batch_execute(&replica).map_err(|error| format!("replica: {error}"))?;
    let expected = stored_of(&case.expected());
    let more_than_rows = case.source.len() + 5;
    for (parts, jobs, strategy) in [
        (2, 1, Strategy::Segments),
        (3, 3, Strategy::Stream),
        (more_than_rows, 2, Strategy::Segments),
        (more_than_rows, 3, Strategy::Stream),
    ] {
        let answer = stored_split(context, case, strategy, RowDiffSplit { parts, jobs })?;
        if answer != expected {
            return Err(format!(
                "{parts} parts on {jobs} threads ({strategy}) disagree with the oracle:\n split  {answer:?}\n oracle {expected:?}"
            ));
        }
    }
    Ok(())
}

/// The divided window (`run --jobs`, `--row-diff-parts`) over every key shape of the
/// harness — integer, text, composite, keys sharing a long prefix and uuids — split on the
/// source's own keys (planted differences on the first and last keys of parts) and into more
/// parts than rows: the stored counts and evidence rows equal the oracle's, as the undivided
/// window's do.
#[test]
fn row_diff_split_windows_and_the_oracle_agree_on_every_key_shape() {
    let (seed, numbers) = run_plan(SPLIT_CASES);
    let context = Context::new("SELECT 1", "SELECT 1");
    for index in numbers {
        let cases = [
            ("integer", crate::cases::case(seed, index)),
            ("text", crate::cases::text_case(seed, index, &KeyKind::SINGLE_TEXT)),
            ("composite", crate::cases::composite_case(seed, index)),
            ("shared prefix or uuid", crate::cases::text_case(seed, index, &KeyKind::SHARED_PREFIX)),
        ];
        for (shape, case) in cases {
            if let Err(disagreement) = check_split(&context, &case) {
                panic!(
                    "the split harness found a disagreement over a {shape} key: rerun \
                     row_diff_split_windows_and_the_oracle_agree_on_every_key_shape with \
                     DATADIFF_DIFFERENTIAL_SEED={seed:#x} DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                    case.plan
                );
            }
        }
    }
}
