//! Composite keys (`--key a,b`): line-item and link tables, ordered and merged by every key
//! column, their differences named by every key column, whatever the strategy.

use datadiff_audit::{AuditOptions, AuditProgress, AuditReport, Status, audit};
use datadiff_diff_core::segment::Strategy;
use serde_json::json;

use crate::support::{Pair, no_env};

const LINES: &str = "CREATE TABLE public.order_lines (order_id integer, line_no integer, sku text, qty integer, \
                     PRIMARY KEY (order_id, line_no)); \
                     INSERT INTO public.order_lines SELECT o, l, 'sku-' || o || '-' || l, o * l \
                     FROM generate_series(1, 40) o, generate_series(1, 5) l;";

fn run(options: &AuditOptions, strategy: Strategy) -> AuditReport {
    run_levels(options, strategy).0
}

/// The report, and the deepest level hashed (`None`: nothing was hashed).
fn run_levels(options: &AuditOptions, strategy: Strategy) -> (AuditReport, Option<u32>) {
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

/// The report without its times and strategy: what both strategies must agree on.
fn answer(report: &AuditReport) -> serde_json::Value {
    let mut json = serde_json::to_value(report).unwrap();
    for field in ["started_at", "finished_at", "duration_seconds", "strategy", "strategy_reason"] {
        json.as_object_mut().unwrap().remove(field);
    }
    json
}

#[test]
fn equal_line_item_tables_pass_with_either_strategy() {
    let pair = Pair::same(LINES);
    let mut options = pair.options("public.order_lines");
    options.key = "order_id,line_no".into();
    for strategy in [Strategy::Stream, Strategy::Segments, Strategy::Auto] {
        let report = run(&options, strategy);
        assert_eq!((report.status, report.matched, report.source_rows), (Status::Pass, 200, 200), "{strategy:?}");
        assert_eq!(report.key, "order_id,line_no");
        assert_eq!(report.columns, ["sku", "qty"], "the key columns are not compared as values");
    }
    // Segments on the first key column: the overview alone proves them equal.
    let (report, levels) = run_levels(&options, Strategy::Segments);
    assert_eq!((report.strategy, levels), ("segments", Some(0)), "{}", report.strategy_reason);
}

#[test]
fn differences_are_named_by_every_key_column() {
    let pair = Pair::same(LINES);
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            // A lost delete (in the replica only), a changed value, a missing row, and two
            // rows whose key parts are swapped: (3, 4) ↔ (4, 3) hold each other's values.
            "INSERT INTO public.order_lines VALUES (41, 1, 'gone', 1); \
             UPDATE public.order_lines SET qty = -1 WHERE order_id = 7 AND line_no = 2; \
             DELETE FROM public.order_lines WHERE order_id = 9 AND line_no = 5; \
             UPDATE public.order_lines SET sku = CASE order_id WHEN 3 THEN 'sku-4-3' ELSE 'sku-3-4' END \
             WHERE (order_id, line_no) IN ((3, 4), (4, 3));",
        )
        .unwrap();
    let mut options = pair.options("public.order_lines");
    options.key = "order_id,line_no".into();
    let streamed = run(&options, Strategy::Stream);
    let (segmented, levels) = run_levels(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert!(levels >= Some(1), "hashed below the overview: {levels:?}");
    let json: serde_json::Value = serde_json::from_str(&streamed.to_json()).unwrap();
    assert_eq!(json["status"], "BLOCK");
    assert_eq!(
        (json["missing"].as_u64(), json["extra"].as_u64(), json["changed"].as_u64()),
        (Some(1), Some(1), Some(3))
    );
    assert_eq!(
        json["examples"],
        json!([
            {"key": {"line_no": 4, "order_id": 3}, "kind": "CHANGED", "fields": ["sku"]},
            {"key": {"line_no": 3, "order_id": 4}, "kind": "CHANGED", "fields": ["sku"]},
            {"key": {"line_no": 2, "order_id": 7}, "kind": "CHANGED", "fields": ["qty"]},
            {"key": {"line_no": 5, "order_id": 9}, "kind": "MISSING_IN_REPLICA"},
            {"key": {"line_no": 1, "order_id": 41}, "kind": "EXTRA_IN_REPLICA"},
        ])
    );
    assert_eq!(
        (json["key"].as_str(), json["source"]["key"].as_str()),
        (Some("order_id,line_no"), Some("order_id,line_no"))
    );
}

#[test]
fn a_text_and_integer_key_orders_bytewise_and_names_both_columns() {
    // Mixed case and accents: bytewise order differs from a locale's ("B" < "a", "é" > "z").
    let sql = "CREATE TABLE public.links (tag text, item bigint, weight integer, PRIMARY KEY (tag, item)); \
               INSERT INTO public.links SELECT t, i, i FROM unnest(ARRAY['a', 'B', 'z', 'é', 'a-1', 'A']) t, \
               generate_series(1, 3) i;";
    let pair = Pair::same(sql);
    pair.replica
        .client()
        .unwrap()
        .batch_execute("UPDATE public.links SET weight = 0 WHERE tag = 'é' AND item = 2; DELETE FROM public.links WHERE tag = 'B' AND item = 1;")
        .unwrap();
    let mut options = pair.options("public.links");
    options.key = "tag,item".into();
    let streamed = run(&options, Strategy::Stream);
    let (segmented, levels) = run_levels(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    // A text first column is positioned by its bytes: hashed.
    assert_eq!((segmented.strategy, levels.is_some()), ("segments", true), "{}", segmented.strategy_reason);
    let json: serde_json::Value = serde_json::from_str(&streamed.to_json()).unwrap();
    assert_eq!(
        json["examples"],
        json!([
            {"key": {"item": 1, "tag": "B"}, "kind": "MISSING_IN_REPLICA"},
            {"key": {"item": 2, "tag": "é"}, "kind": "CHANGED", "fields": ["weight"]},
        ])
    );
    assert_eq!(streamed.matched, 16);
}

#[test]
fn a_repeated_composite_key_stops_the_audit_naming_it() {
    let sql = "CREATE TABLE public.pairs (a integer, b integer, v text); \
               INSERT INTO public.pairs VALUES (1, 2, 'x'), (2, 1, 'y'), (1, 2, 'x');";
    let pair = Pair::same(sql);
    let mut options = pair.options("public.pairs");
    options.key = "a,b".into();
    for strategy in [Strategy::Stream, Strategy::Segments] {
        options.strategy = strategy;
        let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
        assert!(error.to_string().contains("duplicate key (1, 2)"), "{strategy:?}: {error}");
    }
    // A unique index over more columns than the key does not make the key unique: the
    // overview still looks for duplicates, and the hashes are not trusted.
    let sql = "CREATE TABLE public.wide (a integer, b integer, c integer, v text, UNIQUE (a, b, c)); \
               INSERT INTO public.wide SELECT g, g, 0, 'x' FROM generate_series(1, 50) g; \
               INSERT INTO public.wide VALUES (1, 1, 1, 'x');";
    let pair = Pair::same(sql);
    let mut options = pair.options("public.wide");
    options.key = "a,b".into();
    options.columns = Some(vec!["v".into()]);
    options.strategy = Strategy::Segments;
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("duplicate key (1, 1)"), "{error}");
}

#[test]
fn a_null_key_part_stops_the_audit_naming_its_column() {
    let sql = "CREATE TABLE public.pairs (a integer, b integer, v text); \
               INSERT INTO public.pairs VALUES (1, 2, 'x'), (2, NULL, 'y');";
    let pair = Pair::same(sql);
    let mut options = pair.options("public.pairs");
    options.key = "a,b".into();
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("NULL") && error.to_string().contains('b'), "{error}");
}

#[test]
fn an_integer_and_text_key_is_segmented_on_its_first_column_with_the_same_answer() {
    // (order_id, code): the second part text, compared bytewise; a replica whose second part
    // is char(n) and whose first is bigint hashes alike.
    let pair = Pair::new(
        "CREATE TABLE public.tags (order_id integer, code text, v integer, PRIMARY KEY (order_id, code)); \
         INSERT INTO public.tags SELECT o, c, o FROM generate_series(1, 3000) o, unnest(ARRAY['a', 'B', 'é']) c;",
        "CREATE TABLE public.tags (order_id bigint, code char(4), v integer, PRIMARY KEY (order_id, code)); \
         INSERT INTO public.tags SELECT o, c, o FROM generate_series(1, 3000) o, unnest(ARRAY['a', 'B', 'é']) c;",
    );
    let mut options = pair.options("public.tags");
    options.key = "order_id,code".into();
    let (report, levels) = run_levels(&options, Strategy::Segments);
    assert_eq!((report.status, report.matched, levels), (Status::Pass, 9000, Some(0)), "{}", report.strategy_reason);

    // Rows moved between key parts: (7, 'a') becomes (7, 'b'); a lost delete of (2999, 'B').
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "UPDATE public.tags SET code = 'b' WHERE order_id = 7 AND code = 'a'; \
             INSERT INTO public.tags VALUES (3001, 'B', 1);",
        )
        .unwrap();
    let streamed = run(&options, Strategy::Stream);
    let (segmented, levels) = run_levels(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert!(levels >= Some(1));
    let json: serde_json::Value = serde_json::from_str(&segmented.to_json()).unwrap();
    assert_eq!(
        json["examples"],
        json!([
            {"key": {"code": "a", "order_id": 7}, "kind": "MISSING_IN_REPLICA"},
            {"key": {"code": "b", "order_id": 7}, "kind": "EXTRA_IN_REPLICA"},
            {"key": {"code": "B", "order_id": 3001}, "kind": "EXTRA_IN_REPLICA"},
        ])
    );
}
