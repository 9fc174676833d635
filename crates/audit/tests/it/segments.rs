//! The segment strategy against the stream strategy on real databases: over random tables
//! and drifts (types compared across sides, NULL against '', char padding, numeric scales,
//! time zones), the report is the same, and segments were really hashed.

use std::collections::BTreeMap;

use datadiff_audit::{AuditOptions, AuditProgress, AuditReport, Status, audit};
use datadiff_diff_core::segment::{SearchSettings, Strategy};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

use crate::support::{Pair, no_env};

/// The columns: name, source type, replica type.
const COLUMNS: [(&str, &str, &str); 9] = [
    ("a", "integer", "bigint"),
    ("n", "numeric(12,2)", "numeric(12,2)"),
    ("u", "numeric", "numeric(14,4)"),
    ("t", "text", "varchar(40)"),
    ("c", "char(6)", "varchar(10)"),
    ("ts", "timestamptz", "timestamp"),
    ("b", "boolean", "boolean"),
    ("f", "double precision", "double precision"),
    ("y", "bytea", "bytea"),
];

/// A field's SQL literal for value index `v` (0 is NULL), on the source or the replica: equal
/// indexes are canonically equal values, spelled differently on the replica where its type
/// allows (scale, padding, time zone).
fn literal(column: usize, v: u8, replica: bool) -> String {
    if v == 0 {
        return "NULL".to_owned();
    }
    let v = i64::from(v);
    match (column, replica) {
        (0, _) => (v * 1000 - 2000).to_string(),
        (1, _) => format!("{}.{}5", v, v),
        (2, false) => format!("{v}.5"),
        (2, true) => format!("{v}.5000"),
        (3, _) if v == 1 => "''".to_owned(),
        (3, _) => format!("'text {v}'"),
        (4, false) => format!("'c{v}'"),
        (4, true) => format!("'c{v}  '"),
        (5, false) => format!("'2026-07-0{v} 12:00:00+02'"),
        (5, true) => format!("'2026-07-0{v} 10:00:00'"),
        (6, _) => (v % 2 == 0).to_string(),
        (7, _) if v == 1 => "'-0'".to_owned(),
        (7, _) => format!("{v}.25e-3"),
        (8, _) => format!("'\\x0{v}ff'"),
        _ => unreachable!("nine columns"),
    }
}

type Rows = BTreeMap<i64, Vec<u8>>;

fn create(table: &str, rows: &Rows, replica: bool) -> String {
    let columns: Vec<String> = COLUMNS
        .iter()
        .map(|(name, source, target)| format!("{name} {}", if replica { target } else { source }))
        .collect();
    let mut sql =
        format!("DROP TABLE IF EXISTS {table}; CREATE TABLE {table} (id bigint PRIMARY KEY, {});", columns.join(", "));
    if !rows.is_empty() {
        let values: Vec<String> = rows
            .iter()
            .map(|(key, fields)| {
                let fields: Vec<String> =
                    fields.iter().enumerate().map(|(column, v)| literal(column, *v, replica)).collect();
                format!("({key}, {})", fields.join(", "))
            })
            .collect();
        sql.push_str(&format!("INSERT INTO {table} VALUES {};", values.join(", ")));
    }
    sql
}

/// Runs the audit with `strategy`; also whether it hashed segments, and how many levels.
fn run(options: &AuditOptions, strategy: Strategy) -> (AuditReport, Option<u32>) {
    let mut options = options.clone();
    options.strategy = strategy;
    let mut deepest = None;
    let report = audit(&options, &no_env(), &mut |progress| {
        if let AuditProgress::Hashing { level } = progress {
            deepest = deepest.max(Some(level));
        }
    })
    .unwrap();
    (report, deepest)
}

/// What must be equal between strategies: everything but the times.
fn answer(report: &AuditReport) -> serde_json::Value {
    let mut json = serde_json::to_value(report).unwrap();
    for field in ["started_at", "finished_at", "duration_seconds"] {
        json.as_object_mut().unwrap().remove(field);
    }
    json
}

/// The replica: the source with `edits` applied — (which existing key or a new key, what to
/// do, which column, which value).
fn drifted(source: &Rows, edits: &[(prop::sample::Index, i64, u8, usize, u8)]) -> Rows {
    let mut replica = source.clone();
    let keys: Vec<i64> = source.keys().copied().collect();
    for (index, new_key, action, column, value) in edits {
        let (action, column, value) = (*action, *column, *value);
        let key = if keys.is_empty() || action == 1 { *new_key } else { keys[index.index(keys.len())] };
        match action {
            0 => {
                replica.remove(&key);
            }
            1 => {
                replica.insert(key, vec![value; COLUMNS.len()]);
            }
            _ => {
                if let Some(fields) = replica.get_mut(&key) {
                    fields[column] = value;
                }
            }
        }
    }
    replica
}

fn pair() -> Pair {
    Pair::same("SELECT 1")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn segments_report_what_a_full_stream_reports(
        source in btree_map(-3_000i64..3_000, vec(0u8..5, COLUMNS.len()), 0..400),
        edits in vec((any::<prop::sample::Index>(), -3_100i64..3_100, 0u8..3, 0usize..COLUMNS.len(), 0u8..5), 0..30),
        examples in 1i64..25,
        (leaf_rows, first_level_rows, fanout) in (1u64..8, 2u64..40, 2u64..6),
    ) {
        let pair = pair();
        let replica = drifted(&source, &edits);
        pair.source.client().unwrap().batch_execute(&create("public.random", &source, false)).unwrap();
        pair.replica.client().unwrap().batch_execute(&create("public.random", &replica, true)).unwrap();
        let mut options = pair.options("public.random");
        options.allow_empty = true;
        options.max_examples = examples;
        options.segment_settings = SearchSettings { leaf_rows, first_level_rows, max_fanout: fanout, ..SearchSettings::default() };
        let (streamed, none) = run(&options, Strategy::Stream);
        let (segmented, levels) = run(&options, Strategy::Segments);
        prop_assert_eq!(none, None, "the stream strategy hashes nothing");
        prop_assert!(levels.is_some(), "the segment strategy hashed");
        prop_assert_eq!(answer(&segmented), answer(&streamed));
    }
}

#[test]
fn sparse_drift_in_a_larger_table_is_found_through_several_levels() {
    let sql = "CREATE TABLE public.big (id bigint PRIMARY KEY, note text, amount numeric(12,2)); \
               INSERT INTO public.big SELECT g, 'note ' || g, g / 100.0 FROM generate_series(1, 60000) g;";
    let pair = Pair::same(sql);
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "DELETE FROM public.big WHERE id = 17; UPDATE public.big SET note = NULL WHERE id = 30001; \
             UPDATE public.big SET note = '' WHERE id = 30002; INSERT INTO public.big VALUES (70000, 'x', 1);",
        )
        .unwrap();
    let mut options = pair.options("public.big");
    options.columns = Some(vec!["note".into(), "amount".into()]);
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.missing, segmented.changed, segmented.extra, segmented.matched), (1, 2, 1, 59_997));
    assert_eq!(segmented.status, Status::Block);
    assert!(levels >= Some(2), "hashed below the first level: {levels:?}");
}

#[test]
fn identical_tables_need_only_the_overview_and_uuid_keys_are_segmented() {
    let sql = "CREATE TABLE public.ids (id uuid PRIMARY KEY, v integer); \
               INSERT INTO public.ids SELECT md5(g::text)::uuid, g FROM generate_series(1, 5000) g;";
    let pair = Pair::same(sql);
    let options = pair.options("public.ids");
    let (report, levels) = run(&options, Strategy::Segments);
    assert_eq!((report.status, report.matched), (Status::Pass, 5000));
    assert_eq!(levels, Some(0), "the overview alone proved them equal");

    pair.replica.client().unwrap().batch_execute("UPDATE public.ids SET v = -v WHERE v IN (7, 4000)").unwrap();
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.changed, segmented.matched), (2, 4998));
    assert!(levels >= Some(1));
}

#[test]
fn text_keys_and_unhashable_pairs_are_streamed_with_the_same_answer() {
    let sql = "CREATE TABLE public.codes (code text PRIMARY KEY, amount numeric(8,2)); \
               INSERT INTO public.codes SELECT 'k' || g, g FROM generate_series(1, 300) g;";
    let pair = Pair::same(sql);
    pair.replica.client().unwrap().batch_execute("UPDATE public.codes SET amount = 0 WHERE code = 'k7'").unwrap();
    let mut options = pair.options("public.codes");
    options.key = "code".into();
    let (report, levels) = run(&options, Strategy::Segments);
    assert_eq!((report.changed, levels), (1, None), "a text key is streamed");

    let pair = Pair::new(
        "CREATE TABLE public.prices (id bigint PRIMARY KEY, price numeric(8,2)); INSERT INTO public.prices VALUES (1, 1.50);",
        "CREATE TABLE public.prices (id bigint PRIMARY KEY, price double precision); INSERT INTO public.prices VALUES (1, 1.5);",
    );
    let (report, levels) = run(&pair.options("public.prices"), Strategy::Segments);
    assert_eq!((report.status, levels), (Status::Pass, None), "numeric against float is streamed");
}

#[test]
fn duplicate_keys_without_a_unique_index_stop_the_audit_as_a_stream_does() {
    let sql =
        "CREATE TABLE public.dups (id bigint, v text); INSERT INTO public.dups VALUES (1, 'a'), (1, 'a'), (2, 'b');";
    let pair = Pair::same(sql);
    let mut options = pair.options("public.dups");
    options.strategy = Strategy::Segments;
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("duplicate key 1"), "{error}");
}
